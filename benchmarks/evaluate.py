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

Learned policies (first, on every core, before the pinning): each shipped
policy (`benchmarks/policies/`, `token_set` networks from the default
`+exp=ppo_selfplay` and `+exp=dqn_selfplay` runs, or `--policy name=<folder>`)
against three `random` through `play_tournament(["ckpt:<folder>", "random",
"random", "random"])` with ratings, as `launch/evaluate.py` plays it, at
`--policy-games` (2,000, 10,000 and 50,000) games, `--policy-repeats` times
each, on one thread and on one thread per core (`--policy-threads`; the
evaluator's default, ``threads=0``, is one per core), interleaved. Targets, on
every core: at least 5,000 games/s, and games/s at the largest size within 20%
of the smallest (cost per game flat in the number of games).

    python benchmarks/evaluate.py --policy-games 2000,10000,50000 --policy-repeats 3
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

os.environ["NUMBA_NUM_THREADS"] = "1"

from launch.cli import OneLineParser, fail, input_errors, positive
from ludo_env.engine import compile_rules, new_batch, play_random
from ludo_env.rules import Rules
from policies.champions import SHIPPED_POLICIES
from policies.tournament import available_cores, play_tournament

PLAYERS = ["hybrid", "random", "random", "random"]
TARGET_GAMES_PER_S = 10_000
POLICY_TARGET_GAMES_PER_S = 5_000
POLICY_SCALING_TOLERANCE = 0.20


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


def policy_folders(specs: list[str]) -> dict[str, str]:
    if not specs:
        return {p.name: str(p) for p in sorted(SHIPPED_POLICIES.iterdir()) if p.is_dir()}
    folders = {}
    for spec in specs:
        name, eq, folder = spec.partition("=")
        if not eq or not Path(folder).is_dir():
            raise SystemExit(f"--policy {spec!r} is not NAME=<policy folder>")
        folders[name] = folder
    return folders


def time_policies(args: argparse.Namespace) -> dict:
    """Games/s of each learned policy against 3 random, per tournament size: the scaling rows."""
    from policies.modules import INFERENCE_THREADS
    from policies.players import make_player

    sizes = [int(g) for g in args.policy_games.split(",")]
    cores = available_cores()
    thread_counts = sorted({int(t) or cores for t in args.policy_threads.split(",")})
    rows = {}
    for name, folder in policy_folders(args.policy).items():
        player = make_player(f"ckpt:{folder}")  # loaded once: the rows time play, not loading
        play_tournament([player, "random", "random", "random"], 64, "classic", 0)  # compile
        runs: dict[tuple[int, int], list[float]] = {(t, g): [] for t in thread_counts for g in sizes}
        used: dict[tuple[int, int], int] = {}
        for r in range(args.policy_repeats):
            for games in sizes:
                for threads in thread_counts:
                    start = time.perf_counter()
                    result = play_tournament([player, "random", "random", "random"], games, "classic", 100 + r,
                                             threads=threads)
                    runs[threads, games].append(games / (time.perf_counter() - start))
                    used[threads, games] = result.threads  # fewer for a small tournament (MIN_GAMES_PER_THREAD)
        for threads in thread_counts:
            medians = {g: statistics.median(runs[threads, g]) for g in sizes}
            rows[f"{name}, {threads} thread{'s' * (threads > 1)}"] = {
                "folder": folder,
                "obs": player.obs,
                "threads": threads,
                "games_per_s": medians,
                "runs": {g: runs[threads, g] for g in sizes},
                "threads_used": {g: used[threads, g] for g in sizes},
                "largest_vs_smallest": medians[sizes[-1]] / medians[sizes[0]],
            }
    return {
        "cores": cores,
        "torch_threads_per_forward": INFERENCE_THREADS,
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "sizes": sizes,
        "repeats": args.policy_repeats,
        "rows": rows,
        "target_games_per_s": POLICY_TARGET_GAMES_PER_S,
        "scaling_tolerance": POLICY_SCALING_TOLERANCE,
    }


def print_policies(result: dict) -> None:
    sizes = result["sizes"]
    print(f"\nlearned policy vs 3 random, rated, {result['cores']} cores, torch threads per forward pass "
          f"{result['torch_threads_per_forward']}, medians of {result['repeats']} runs")
    print(f"{'policy':<34}" + "".join(f"{f'{g:,} games':>14}" for g in sizes) + f"{'largest/smallest':>18}")
    for name, row in result["rows"].items():
        cells = "".join(f"{row['games_per_s'][g]:>14,.0f}" for g in sizes)
        print(f"{name + ' (' + str(row['obs']) + ')':<34}{cells}{row['largest_vs_smallest']:>18.2f}")
        fewer = [f"{g:,} games on {n}" for g, n in row["threads_used"].items() if n != row["threads"]]
        if fewer:
            print(f"  played on fewer threads: {', '.join(fewer)} (MIN_GAMES_PER_THREAD)")
        if row["threads"] != result["cores"]:
            continue  # the targets are for every core, as the evaluator plays by default
        best = max(row["games_per_s"].values())
        flat = row["largest_vs_smallest"] >= 1 - result["scaling_tolerance"]
        print(f"  target {result['target_games_per_s']:,} games/s: {'met' if best >= result['target_games_per_s'] else 'NOT met'}"
              f"; flat within {result['scaling_tolerance']:.0%}: {'met' if flat else 'NOT met'}")


def main() -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=positive(int), default=20_000, help="games per timed call")
    parser.add_argument("--repeats", type=positive(int), default=5,
                        help="timed runs per row; medians are reported")
    parser.add_argument("--core", type=int, default=0, help="CPU core to pin to")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--policy", action="append", default=[], metavar="NAME=FOLDER",
                        help="a learned policy to time (default: every folder in benchmarks/policies)")
    parser.add_argument("--policy-games", default="2000,10000,50000", help="tournament sizes for the policy rows")
    parser.add_argument("--policy-repeats", type=positive(int), default=3, help="timed runs per policy row")
    parser.add_argument("--policy-threads", default="1,0",
                        help="tournament threads for the policy rows, comma-separated; 0: one per core")
    parser.add_argument("--no-policies", action="store_true", help="bots and engine only")
    args = parser.parse_args()

    policy_result = None if args.no_policies else time_policies(args)
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
        "policies": policy_result,
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
    if policy_result is not None:
        print_policies(policy_result)


if __name__ == "__main__":
    try:
        main()
    except input_errors() as err:  # a bad variant or player folder (damaged or empty weights): one line
        fail(err)
