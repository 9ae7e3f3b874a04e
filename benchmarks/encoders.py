"""What each observation encoder costs per position, side by side on the same positions.

    python benchmarks/encoders.py [--variant classic] [--positions 4096] [--batch 256] [--repeats 15] [--seed 5]

The positions are decisions met in random-move games (`launch.export.random_positions`), encoded in
batches of ``--batch`` rows as the sampler encodes them (`ludo_env.observations.encode` into a reused
array, one thread). Each encoder is compiled first, then timed over the whole set ``--repeats`` times, the
encoders taking turns, so a busy spell of the machine hits them all; it prints the median microseconds
per position and the ratio to `egocentric`, the default.
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np

from launch.cli import OneLineParser, UserError, check_integers, fail, positive
from launch.export import random_positions
from ludo_env.observations import ENCODERS, encode, obs_dim
from ludo_env.rules import Rules

BASELINE = "egocentric"


def one_pass(name: str, batches: list[np.ndarray], tab: np.ndarray) -> float:
    out = np.empty((len(batches[0]), obs_dim(name)), dtype=np.float32)
    start = time.perf_counter()
    for states in batches:
        encode(name, states, tab, out[: len(states)])
    return time.perf_counter() - start


def main(argv: list[str]) -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", default="classic", help="rule set (conf/variant, or a YAML path)")
    parser.add_argument("--positions", type=positive(int), default=4096, help="positions to encode")
    parser.add_argument("--batch", type=positive(int), default=256, help="rows encoded per call")
    parser.add_argument("--repeats", type=positive(int), default=15, help="timed passes over every position")
    parser.add_argument("--seed", type=int, default=5, help="dice of the random-move games")
    args = parser.parse_args(argv)
    check_integers(vars(args), prefix="--")
    try:
        rules = Rules.load(args.variant)
    except ValueError as err:
        raise UserError(str(err)) from None
    positions, batch, repeats, seed = args.positions, args.batch, args.repeats, args.seed
    states, tab, _ = random_positions(rules, positions, seed)
    batches = [states[i : i + batch] for i in range(0, len(states), batch)]
    times: dict[str, list[float]] = {name: [] for name in ENCODERS}
    for name in ENCODERS:
        one_pass(name, batches[:1], tab)  # compile (or load from the numba cache) before timing
    for _ in range(repeats):
        for name in ENCODERS:
            times[name].append(one_pass(name, batches, tab))
    base = statistics.median(times[BASELINE])
    print(f"{args.variant}: {len(states):,} positions in batches of {batch}, median of {repeats} passes")
    for name in ENCODERS:
        median = statistics.median(times[name])
        print(f"  {name:<16} {obs_dim(name):>4} floats  {1e6 * median / len(states):6.2f} us/position  "
              f"{median / base:5.2f}x {BASELINE}")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except UserError as err:
        fail(err)
