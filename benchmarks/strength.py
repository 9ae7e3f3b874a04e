"""The strength table of learned and search agents: each against 3 `random` and 3 `hybrid`, per variant.

    python benchmarks/strength.py pyludo "search:outputs/train/<td run>?depth=2" ckpt:outputs/train/<td run>
    python benchmarks/strength.py classic ckpt:outputs/train/<ga run> --games 2000 --opponents random,semi_smart

Arguments: the variant, then player specs (anything `launch/evaluate.py`
takes) and any rule changes (``variant.star_capture=jump_end``), and the
options ``--games`` (default 2000; a multiple of 4 seats everyone equally),
``--opponents`` (default ``random,hybrid``), ``--seed`` (default 1000003, the
training runs' evaluation seed), ``--json <file>`` to append every cell as a
JSON line. Each cell is one `play_tournament` of the
agent against three copies of the opponent, printed with its 95% Wilson
interval, the seconds it took, and the `launch/evaluate.py` command that
replays exactly the same games. Rows print as they finish, so a long search
agent shows progress.
"""
from __future__ import annotations

import json
import sys
import time

from launch.cli import MAX_GAMES, OneLineParser, benchmark_rules, check_integers, fail, input_errors, positive
from policies.league.evaluation import player_command, variant_label
from policies.players import make_player
from policies.tournament import play_tournament


def main(argv: list[str]) -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant", help="rule set (conf/variant, or a YAML path)")
    parser.add_argument("specs", nargs="+", metavar="spec",
                        help="player specs (anything launch/evaluate.py takes), and any rule changes as "
                             "variant.<rule>=value")
    parser.add_argument("--games", type=positive(int), default=2000, help="games per cell")
    parser.add_argument("--opponents", default="random,hybrid", help="opponents, comma-separated")
    parser.add_argument("--seed", type=int, default=1000003, help="dice seed of every cell")
    parser.add_argument("--json", metavar="FILE", help="append every cell to this file as a JSON line")
    args = parser.parse_intermixed_args(argv)
    check_integers(vars(args), {"--games": (1, MAX_GAMES)}, prefix="--")
    rules, specs = benchmark_rules(args.variant, args.specs, players=4)
    if not specs:
        parser.error("give a variant and at least one player spec (the arguments were all rule changes)")
    variant = variant_label(rules)
    games, seed = args.games, args.seed
    opponents = args.opponents.split(",")
    for spec in [*specs, *opponents]:  # every spec refused before the first game, not after the rows before it
        make_player(spec, seed, rules)
    print("| variant | agent | opponents | win rate [95% CI] | mean place | games | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- |", flush=True)
    for spec in specs:
        for opponent in opponents:
            start = time.perf_counter()
            result = play_tournament([spec] + [opponent] * 3, games, rules, seed, rate=False)
            seconds = time.perf_counter() - start
            row = result.rows[0] if result.rows[0].player == spec else next(r for r in result.rows
                                                                             if r.player == spec)
            low, high = row.win_rate_ci95
            command = player_command(spec, opponent, rules, games, seed)
            print(f"| {variant} | `{spec}` | 3 x {opponent} | {row.win_rate:.1%} [{low:.1%}, {high:.1%}] | "
                  f"{row.mean_place:.2f} | {games} | {seconds:.0f} |", flush=True)
            print(f"|  | `{command}` |  |  |  |  |  |", flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps({"variant": variant, "agent": spec, "opponent": opponent, "games": games,
                                        "seed": seed, "win_rate": row.win_rate, "ci95": [low, high],
                                        "mean_place": row.mean_place, "seconds": seconds,
                                        "command": command}) + "\n")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except input_errors() as err:
        fail(err)
