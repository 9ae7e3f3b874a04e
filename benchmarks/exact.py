"""Exact solutions of reduced Ludo: solve, cache the tables, print positions, time, memory and exact win rates.

    python benchmarks/exact.py --variant classic --tokens 1
    python benchmarks/exact.py --variant classic ucsd pyludo --tokens 1 2 --opponents random hybrid
    python benchmarks/exact.py --variant classic --tokens 3        # refused: the positions and memory it needs

For each rule set and token count (two players; pyludo, a four-player rule set, has its player counts widened to
take two), `policies.exact.solve` solves the game by value iteration to ``--tolerance``, or loads the table from
``--cache`` (keyed by the rules table and the engine's sources; a table that does not match is refused in one line
and solved again; a killed solve resumes from its last saved sweep). Printed per game: the positions (and those
reachable from a start), the seconds to build the successors and to sweep, the sweeps, the peak memory of the
process, and the first player's win probability when both play optimally. Then, per opponent of
``--opponents``: the optimal policy's exact win probability against it as first and second player and over both
seats, and the opponent's exact exploitability (the best response's win probability over both seats, minus 0.5).
``--json`` writes the same figures to a file.

A game too large for ``--max-memory`` GiB (3 tokens each is about 7 billion positions) is refused before anything
is allocated, with the position count and the memory it would need.
"""
from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path

from launch.cli import OneLineParser, UserError, fail, input_errors, write_text
from ludo_env.engine.layout import compile_rules
from ludo_env.rules import Rules, available_variants
from policies import exact
from policies.players import make_player


def game_rules(variant: str, tokens: int) -> Rules:
    """The two-player game of `variant` with `tokens` tokens each (a variant without two players takes them)."""
    base = Rules.load(variant)
    allowed = sorted(set(base.allowed_players) | {exact.SOLVED_PLAYERS})
    return Rules.load(variant, players=exact.SOLVED_PLAYERS, tokens=tokens, allowed_players=allowed)


def peak_memory_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # Linux: KiB


def measure(variant: str, tokens: int, opponents: list[str], tolerance: float, cache: Path | None,
            max_memory: int) -> dict:
    rules = game_rules(variant, tokens)
    tab = compile_rules(rules)
    exact.check_size(tab, max_memory)  # before the opponents load: a size too large is refused first
    players = {name: make_player(name, seed=0, rules=rules) for name in opponents}
    start = time.perf_counter()
    solution = exact.solve(tab, tolerance=tolerance, cache=cache, max_memory=max_memory)
    figures = {
        "variant": variant, "tokens": tokens, "positions": solution.space.positions,
        "reachable": solution.reachable, "build_seconds": round(solution.seconds["build"], 1),
        "solve_seconds": round(solution.seconds["solve"], 1), "loaded": "loaded" in solution.seconds,
        "sweeps": solution.sweeps, "residual": solution.residual, "tolerance": tolerance,
        "optimal_first": solution.win_first(), "opponents": {},
    }
    print(f"{variant}, 2 players x {tokens} token(s): {figures['positions']:,} positions "
          f"({figures['reachable']:,} reachable), build {figures['build_seconds']} s, "
          f"{'loaded from the cache, solved' if figures['loaded'] else 'solved'} in {figures['solve_seconds']} s, "
          f"{solution.sweeps} sweeps, residual {solution.residual:.1e}; "
          f"optimal against optimal: first player wins {solution.win_first():.4%}", flush=True)
    optimal = exact.Policy("exact:optimal", exact.FIXED, solution.policy)
    print("| opponent | optimal as first | optimal as second | optimal, both seats | exploitability, points |")
    print("| --- | --- | --- | --- | --- |")
    for name, player in players.items():
        t0 = time.perf_counter()
        policy = exact.policy_of(player, solution, name)
        against = exact.matchup(solution, optimal, policy)
        gap = exact.exploitability(solution, policy)
        figures["opponents"][name] = {"optimal_first": against.first, "optimal_second": against.second,
                                      "optimal_mean": against.mean, "exploitability": gap,
                                      "seconds": round(time.perf_counter() - t0, 1)}
        print(f"| {name} | {against.first:.2%} | {against.second:.2%} | {against.mean:.2%} | "
              f"{100 * gap:+.2f} |", flush=True)
    figures["seconds"] = round(time.perf_counter() - start, 1)
    figures["peak_memory_gib"] = round(peak_memory_gib(), 2)
    print(f"peak memory {figures['peak_memory_gib']} GiB, {figures['seconds']} s in all", flush=True)
    return figures


def main(argv: list[str]) -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", nargs="+", default=["classic"], help="rule sets (conf/variant)")
    parser.add_argument("--tokens", nargs="+", type=int, default=[1], help="tokens per player: 1 or 2")
    parser.add_argument("--opponents", nargs="*", default=["random", "hybrid"], help="player specs to measure")
    parser.add_argument("--tolerance", type=float, default=exact.DEFAULT_TOLERANCE,
                        help="value iteration stops when a sweep changes no win probability by more")
    parser.add_argument("--cache", default=str(exact.DEFAULT_CACHE), help="folder of solved tables ('off': none)")
    parser.add_argument("--max-memory", type=float, default=exact.DEFAULT_MAX_MEMORY / 2**30,
                        help="GiB a solve may take")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv)
    unknown = [v for v in args.variant if v not in available_variants()]
    if unknown:
        parser.error(f"--variant {unknown[0]} is not a rule set: choose from {', '.join(available_variants())}")
    if not 0 < args.tolerance < 0.5:
        parser.error(f"--tolerance {args.tolerance} is not allowed: give a win probability in (0, 0.5)")
    if not args.max_memory > 0:
        parser.error(f"--max-memory {args.max_memory} is not allowed: give GiB > 0")
    cache = None if args.cache == "off" else Path(args.cache)
    results = []
    try:
        for variant in args.variant:
            for tokens in args.tokens:
                results.append(measure(variant, tokens, args.opponents, args.tolerance, cache,
                                       int(args.max_memory * 2**30)))
    except exact.ExactError as err:
        raise UserError(str(err)) from None
    if args.json:
        write_text(args.json, json.dumps(results, indent=1) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except input_errors() as err:
        fail(err)
