"""Wait until a Ray cluster has N live nodes, then exit; run on a node of that cluster.

    python launch/wait_for_nodes.py address=HEAD_IP:6379 nodes=4 [timeout=300]

The SLURM script (``launch/slurm/train.sbatch``) and ``docker/compose.yaml``
start their Ray nodes in parallel. Training checks the cluster's CPUs and
GPUs once, at start-up (`launch.training.build.check_resources`), so it must not
start while half the nodes are still joining. Exit 0 once every node is up;
otherwise one line and exit 2.

Options are Hydra ``key=value`` overrides of ``conf/wait_for_nodes.yaml``,
typed by `WaitConfig` (``--help`` lists them): ``address`` (required),
``nodes`` (required, the head included) and ``timeout`` (seconds, default 300;
0 asks once).
"""
from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

import launch  # noqa: E402, F401  (first after the script's sys.path: it refuses a Python other than 3.11)

# isort: split
from hydra.core.config_store import ConfigStore  # noqa: E402  (after the version check above)

from launch.cli import (  # noqa: E402  (after the version check above)
    UserError,
    catch_interrupts,
    check_integers,
    compose_options,
    emit,
    fail,
    gcs_answers,
    one_line,
    options_help,
    stop_interrupted,
)
from policies.ranges import Range  # noqa: E402  (after the version check above)

POLL_S = 2.0


@dataclass
class WaitConfig:
    address: str | None = None
    """The Ray head's HOST:PORT (its GCS port, 6379 by default); required."""
    nodes: int | None = None
    """Nodes to wait for, the head included; required."""
    timeout: float = 300.0
    """Seconds before giving up; 0 asks once."""

    RANGES: ClassVar[dict[str, Range]] = {"nodes": Range(1, 1_000_000), "timeout": Range(0)}
    """What each numeric setting allows (`parse` checks it, the reference page shows it)."""
    ALLOWED: ClassVar[dict[str, str]] = {"address": "HOST:PORT (required)"}


ConfigStore.instance().store(name="wait_for_nodes_schema", node=WaitConfig)


def parse(argv: list[str]) -> WaitConfig:
    """The settings from key=value arguments; every problem a `UserError` of one line."""
    cfg: WaitConfig = compose_options("wait_for_nodes", argv, WaitConfig, "wait_for_nodes")
    if not cfg.address:
        raise UserError("address= is required: give the Ray head's HOST:PORT, e.g. address=10.0.0.1:6379")
    if cfg.nodes is None:
        raise UserError("nodes= is required: give how many nodes to wait for, the head included")
    check_integers(cfg, WaitConfig.RANGES)
    if not WaitConfig.RANGES["timeout"].allows(cfg.timeout):
        raise UserError(f"timeout={cfg.timeout:g} is not allowed: give seconds >= 0")
    return cfg


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
    if any(arg in ("-h", "--help") for arg in argv):
        emit(options_help(__doc__, "wait_for_nodes", WaitConfig))
        return
    args = parse(argv)
    os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
    import ray

    deadline = time.monotonic() + args.timeout
    while not gcs_answers(args.address, timeout=POLL_S):  # the head itself may still be starting
        if time.monotonic() >= deadline:
            raise UserError(f"no Ray head answers at {args.address} within {args.timeout:g} s: see its log")
        time.sleep(POLL_S)
    try:
        ray.init(address=args.address, logging_level="ERROR", log_to_driver=False)
    except Exception as err:  # noqa: BLE001  a head that answers but refuses us, e.g. another auth token
        raise UserError(f"cannot join the Ray cluster at {args.address}: {one_line(err)}") from None
    try:
        have = wait(lambda: alive(ray.nodes()), args.nodes, max(0.0, deadline - time.monotonic()))
    finally:
        ray.shutdown()
    print(f"{have} Ray nodes up at {args.address}", flush=True)


if __name__ == "__main__":
    catch_interrupts()
    try:
        main(sys.argv[1:])
    except UserError as err:
        fail(err)
    except KeyboardInterrupt:
        stop_interrupted("stopped waiting for the Ray nodes")
