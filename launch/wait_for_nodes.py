"""Wait until a Ray cluster has N live nodes, then exit; run on a node of that cluster.

    python launch/wait_for_nodes.py HEAD_IP:6379 4 [--timeout 300]

The SLURM script (``launch/slurm/train.sbatch``) and ``docker/compose.yaml``
start their Ray nodes in parallel. Training checks the cluster's CPUs and
GPUs once, at start-up (`launch.training.build.check_resources`), so it must not
start while half the nodes are still joining. Exit 0 once every node is up;
otherwise one line and exit 2.
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from launch.cli import OneLineParser, UserError, fail, gcs_answers, one_line, positive  # noqa: E402

POLL_S = 2.0


def alive(nodes: Iterable[Mapping]) -> int:
    """Live nodes in ``ray.nodes()``: a node that left stays listed, marked dead."""
    return sum(1 for node in nodes if node.get("Alive"))


def wait(count: Callable[[], int], want: int, timeout: float, sleep: Callable[[float], None] = time.sleep,
         clock: Callable[[], float] = time.monotonic) -> int:
    """Poll `count` until it reaches `want`; the count reached, or `UserError` once `timeout` seconds pass."""
    deadline = clock() + timeout
    while True:
        have = count()
        if have >= want:
            return have
        if clock() >= deadline:
            raise UserError(f"only {have} of {want} Ray nodes joined within {timeout:g} s: "
                            "see the Ray logs of the missing nodes (/tmp/ray/session_latest/logs)")
        sleep(POLL_S)


def main(argv: list[str]) -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("address", help="the head's HOST:PORT")
    parser.add_argument("nodes", type=positive(int), help="nodes to wait for, the head included")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before giving up (0: ask once)")
    args = parser.parse_args(argv)
    if not 0 <= args.timeout < float("inf"):
        raise UserError(f"--timeout {args.timeout:g} is not allowed: give seconds >= 0")
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
    import ray

    deadline = time.monotonic() + args.timeout
    while not gcs_answers(args.address, timeout=POLL_S):  # the head itself may still be starting
        if time.monotonic() >= deadline:
            raise UserError(f"no Ray head answers at {args.address} within {args.timeout:g} s: see its log")
        time.sleep(POLL_S)
    try:
        ray.init(address=args.address, logging_level="ERROR", log_to_driver=False)
    except Exception as err:  # a head that answers but refuses us, e.g. another auth token
        raise UserError(f"cannot join the Ray cluster at {args.address}: {one_line(err)}") from None
    try:
        have = wait(lambda: alive(ray.nodes()), args.nodes, max(0.0, deadline - time.monotonic()))
    finally:
        ray.shutdown()
    print(f"{have} Ray nodes up at {args.address}", flush=True)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except UserError as err:
        fail(err)
