"""Engine speed against ludopy, side by side in one run, on one pinned core.

    pip install -e ".[bench]"
    python benchmarks/engine.py            # table
    python benchmarks/engine.py --json     # machine-readable

What is measured
  ours     4-player games with uniformly random legal moves, played to the end by
           the batched numba kernel (`ludo_env.engine.play_random`), `--batch`
           games per call, under the `pyludo` variant: the SDU rule set that
           ludopy also implements (ludopy adds a bonus roll on a six and puts
           its stars elsewhere, so it is the closest variant, not the same one).
           The `classic` variant is timed too, for reference. Two rows each:
           the generic kernel, which reads the rules table at run time, and
           ``specialised=True``, the kernel compiled for that one table (the
           same games; its compilation, paid per table the first time on a
           machine, is done before timing). The ratio is given for both.
  ludopy   the same kind of game with ludopy 1.5.0 from PyPI: `Game()` then
           get_observation / answer_observation with a random movable piece.

Pinning: the process is bound to one core (`--core`, via sched_setaffinity)
and numba to one thread (NUMBA_NUM_THREADS=1, set before numba loads; the
kernels are serial anyway). Compilation happens before any timing. Each side
is timed `--repeats` times, interleaved, and the median is reported; the
ratio is of medians. Memory: tracemalloc's peak while 100,000 concurrent games
are created and stepped once (state rows, dice streams, masks, events).
"""
from __future__ import annotations

import json
import os
import statistics
import sys
import time
import tracemalloc

os.environ["NUMBA_NUM_THREADS"] = "1"

import numpy as np

from launch.cli import OneLineParser, catch_interrupts, positive, stop_interrupted
from ludo_env.engine import compile_rules, legal_masks, new_batch, play_random, step_batch
from ludo_env.rules import Rules


def time_ours(variant: str, batch: int, seed: int, specialised: bool = False) -> tuple[float, float]:
    tab = compile_rules(Rules.load(variant))
    states, rng = new_batch(tab, batch, seed)
    start = time.perf_counter()
    moves = play_random(states, tab, rng, specialised=specialised)
    elapsed = time.perf_counter() - start
    return batch / elapsed, float(moves.sum()) / elapsed


def time_ludopy(games: int, seed: int) -> tuple[float, float]:
    import ludopy

    chooser = np.random.default_rng(seed)
    np.random.seed(seed)  # ludopy rolls its dice from numpy's global generator
    moves = 0
    start = time.perf_counter()
    for _ in range(games):
        game = ludopy.Game()
        winner = False
        while not winner:
            (_, movable, _, _, _, winner), _ = game.get_observation()
            piece = movable[chooser.integers(len(movable))] if len(movable) else -1
            moves += len(movable) > 0
            *_, winner = game.answer_observation(piece)
    elapsed = time.perf_counter() - start
    return games / elapsed, moves / elapsed


def memory_for(games: int) -> dict[str, float]:
    tab = compile_rules(Rules.load("classic"))
    tracemalloc.start()
    states, rng = new_batch(tab, games, seed=0)
    masks = np.zeros((games, 4), dtype=np.int8)
    events = np.zeros(games, dtype=np.int32)
    legal_masks(states, tab, masks)
    choices = np.argmax(masks, axis=1)
    step_batch(states, tab, rng, choices, events, masks)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "games": games,
        "peak_mb": peak / 2**20,
        "bytes_per_game": (states.nbytes + rng.nbytes + masks.nbytes + events.nbytes) / games,
    }


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=positive(int), default=20_000, help="our games per timed call")
    parser.add_argument("--ludopy-games", type=positive(int), default=40, help="ludopy games per timed run")
    parser.add_argument("--repeats", type=positive(int), default=5,
                        help="timed runs per side; medians are reported")
    parser.add_argument("--core", type=int, default=0, help="CPU core to pin to")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.core})
    try:
        import ludopy  # noqa: F401  (only whether it is installed)
    except ImportError:
        sys.exit("ludopy is not installed: run pip install -e '.[bench]'")

    ours = {  # row: (variant, specialised)
        "ours_pyludo": ("pyludo", False),
        "ours_pyludo_specialised": ("pyludo", True),
        "ours_classic": ("classic", False),
        "ours_classic_specialised": ("classic", True),
    }
    # Compile and warm both sides before timing anything.
    for variant, specialised in ours.values():
        time_ours(variant, 100, seed=0, specialised=specialised)
    time_ludopy(2, seed=0)
    memory_for(10)  # compiles step_batch and legal_masks, so compilation stays out of the memory peak

    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in [*ours, "ludopy"]}
    for r in range(args.repeats):
        for name, (variant, specialised) in ours.items():
            runs[name].append(time_ours(variant, args.batch, seed=1 + r, specialised=specialised))
            if name == "ours_pyludo":
                runs["ludopy"].append(time_ludopy(args.ludopy_games, seed=1 + r))

    def med(name: str, k: int) -> float:
        return statistics.median(x[k] for x in runs[name])

    result = {
        "core": args.core,
        "numba_threads": int(os.environ["NUMBA_NUM_THREADS"]),
        "repeats": args.repeats,
        "batch": args.batch,
        "ludopy_games_per_run": args.ludopy_games,
        "rows": {
            name: {"games_per_s": med(name, 0), "moves_per_s": med(name, 1)} for name in runs
        },
        "ratio_games_per_s": med("ours_pyludo", 0) / med("ludopy", 0),
        "ratio_moves_per_s": med("ours_pyludo", 1) / med("ludopy", 1),
        "ratio_games_per_s_specialised": med("ours_pyludo_specialised", 0) / med("ludopy", 0),
        "ratio_moves_per_s_specialised": med("ours_pyludo_specialised", 1) / med("ludopy", 1),
        "memory_100k": memory_for(100_000),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"one core (#{args.core}), numba threads 1, medians of {args.repeats} runs")
    print(f"{'engine':<28}{'games/s':>14}{'moves/s':>16}")
    labels = {
        "ours_pyludo": "ludo-league (pyludo rules)",
        "ours_pyludo_specialised": "  specialised to the table",
        "ours_classic": "ludo-league (classic rules)",
        "ours_classic_specialised": "  specialised to the table",
        "ludopy": "ludopy 1.5.0",
    }
    for name, label in labels.items():
        row = result["rows"][name]
        print(f"{label:<28}{row['games_per_s']:>14,.0f}{row['moves_per_s']:>16,.0f}")
    print(f"ratio, games/s: {result['ratio_games_per_s']:,.0f}x   moves/s: {result['ratio_moves_per_s']:,.0f}x"
          f"   (pyludo, generic kernel)")
    print(f"ratio, games/s: {result['ratio_games_per_s_specialised']:,.0f}x   "
          f"moves/s: {result['ratio_moves_per_s_specialised']:,.0f}x   (pyludo, specialised kernel)")
    mem = result["memory_100k"]
    print(f"100,000 concurrent games: peak {mem['peak_mb']:.1f} MB ({mem['bytes_per_game']:.0f} bytes/game)")


if __name__ == "__main__":
    catch_interrupts()
    try:
        main()
    except KeyboardInterrupt:
        stop_interrupted("benchmark stopped, nothing measured is printed")
