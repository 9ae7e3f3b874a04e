"""Tournament speed: hybrid against three random bots, beside the engine's raw random games, on one pinned core.

    python benchmarks/evaluate.py            # table
    python benchmarks/evaluate.py --json     # machine-readable

What is measured (classic rules, 4 players, `--games` games per timed call)
  engine     `ludo_env.engine.play_random`: uniformly random legal moves, no
             bots, no bookkeeping; the ceiling for any tournament.
  fast       `play_tournament(["hybrid", "random", "random", "random"], rate=False)`:
             the all-bots numba path, seating and per-game results included.
  rated      the same call with openskill ratings and the report (the
             default): what `launch/evaluate.py` spends, less compilation.
  generic    the same games through the Python loop of `step_batch` calls
             (`path="generic"`), the path any non-bot player takes.

Pinning: the process is bound to one core (`--core`, via sched_setaffinity)
and numba to one thread (NUMBA_NUM_THREADS=1, set before numba loads).
Everything is compiled before timing. Each row is timed `--repeats` times,
interleaved, and medians are reported. Target: at least 10,000 games/s for
hybrid against three random bots (the fast row).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ["NUMBA_NUM_THREADS"] = "1"

from ludo_env.engine import compile_rules, new_batch, play_random  # noqa: E402
from ludo_env.rules import Rules  # noqa: E402
from policies.tournament import play_tournament  # noqa: E402

PLAYERS = ["hybrid", "random", "random", "random"]
TARGET_GAMES_PER_S = 10_000


def time_engine(games: int, seed: int) -> float:
    tab = compile_rules(Rules.load("classic"))
    states, rng = new_batch(tab, games, seed)
    start = time.perf_counter()
    play_random(states, tab, rng)
    return games / (time.perf_counter() - start)


def time_tournament(games: int, seed: int, **kwargs) -> float:
    start = time.perf_counter()
    play_tournament(PLAYERS, games, "classic", seed, **kwargs)
    return games / (time.perf_counter() - start)


ROWS = {
    "engine": ("engine: random moves (play_random)", lambda g, s: time_engine(g, s)),
    "fast": ("hybrid vs 3 random, fast path", lambda g, s: time_tournament(g, s, rate=False)),
    "rated": ("  + report and openskill ratings", lambda g, s: time_tournament(g, s)),
    "generic": ("hybrid vs 3 random, generic path", lambda g, s: time_tournament(g, s, rate=False, path="generic")),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20_000, help="games per timed call")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per row; medians are reported")
    parser.add_argument("--core", type=int, default=0, help="CPU core to pin to")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()

    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {args.core})
    for _, run in ROWS.values():
        run(64, 0)  # compile every path before timing anything

    runs: dict[str, list[float]] = {name: [] for name in ROWS}
    for r in range(args.repeats):
        for name, (_, run) in ROWS.items():
            runs[name].append(run(args.games, 1 + r))
    medians = {name: statistics.median(values) for name, values in runs.items()}
    result = {
        "core": args.core,
        "numba_threads": int(os.environ["NUMBA_NUM_THREADS"]),
        "repeats": args.repeats,
        "games": args.games,
        "variant": "classic",
        "players": PLAYERS,
        "games_per_s": medians,
        "runs": runs,
        "fast_vs_engine": medians["fast"] / medians["engine"],
        "target_games_per_s": TARGET_GAMES_PER_S,
        "target_met": medians["fast"] >= TARGET_GAMES_PER_S,
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"one core (#{args.core}), numba threads 1, classic rules, {args.games:,} games per run, "
          f"medians of {args.repeats} runs")
    print(f"{'':<36}{'games/s':>12}")
    for name, (label, _) in ROWS.items():
        print(f"{label:<36}{medians[name]:>12,.0f}")
    verdict = "met" if result["target_met"] else "NOT met"
    print(f"fast path at {result['fast_vs_engine']:.0%} of the engine's random-game speed; "
          f"target {TARGET_GAMES_PER_S:,} games/s: {verdict}")


if __name__ == "__main__":
    main()
