"""The seed bots' baseline table: every seed bot against 3 `random` and against 3 `hybrid`.

    python benchmarks/baselines.py                       # classic and pyludo, 10,000 games per row
    python benchmarks/baselines.py --games 2000 --variants classic

Each row is one `launch/evaluate.py` tournament (the same `play_tournament`,
seats rotated, seed 0), run in one process so numba compiles once. Prints a
Markdown table of the bot's win rate with its 95% Wilson interval and mean place.
"""
from __future__ import annotations

import sys

from launch.cli import MAX_GAMES, OneLineParser, UserError, check_integers, fail, input_errors, positive
from ludo_env.rules import Rules
from policies.bots import BOT_NAMES
from policies.tournament import play_tournament


def main(argv: list[str]) -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=positive(int), default=10000, help="games per row (per tournament)")
    parser.add_argument("--variants", default="classic,pyludo", help="variants, comma-separated (conf/variant)")
    parser.add_argument("--seed", type=int, default=0, help="dice seed of every tournament")
    args = parser.parse_args(argv)
    check_integers(vars(args), {"--games": (1, MAX_GAMES)}, prefix="--")
    games, seed = args.games, args.seed
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    if not variants:
        raise UserError("--variants names no variant: give one or more, comma-separated, e.g. classic,pyludo")
    for variant in variants:  # every one loads before the first row is played
        Rules.load(variant, players=4)
    print(f"{games:,} games per row, seed {seed}, seats rotated; win rate [95% Wilson interval], mean place\n")
    print("| variant | bot | vs 3 random | place | vs 3 hybrid | place |")
    print("| --- | --- | --- | --- | --- | --- |")
    for variant in variants:
        for bot in BOT_NAMES:
            cells = []
            for field in ("random", "hybrid"):
                result = play_tournament([bot] + [field] * 3, games, variant, seed, rate=False)
                row = next(r for r in result.rows if r.player == bot) if bot != field else _first_entry(result)
                low, high = row.win_rate_ci95
                cells += [f"{row.win_rate:.1%} [{low:.1%}, {high:.1%}]", f"{row.mean_place:.2f}"]
            print(f"| {variant} | {bot} | " + " | ".join(cells) + " |", flush=True)


def _first_entry(result):
    """A bot against three copies of itself: the pooled row (every entry is the same player)."""
    return result.rows[0]


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except input_errors() as err:
        fail(err)
