"""Does agent A win more than agent B? Both play the same games, and the difference gets a paired 95% interval.

    python benchmarks/paired.py classic "search:outputs/train/<td run>?depth=2" ckpt:outputs/train/<td run>
    python benchmarks/paired.py pyludo A B --games 5000 --opponent hybrid --seed 1000003
    python benchmarks/paired.py pyludo A B variant.star_capture=jump_end   # any rule, as launch/evaluate.py takes it

A and B each play ``--games`` games against three copies of ``--opponent`` (default
``random``) with the same seed: the same dice streams and the same seating, game
by game (`policies.tournament`). Game g gives A a win w_A(g) in {0, 1} and B a
win w_B(g); the difference of win rates is the mean of d(g) = w_A(g) - w_B(g)
and its 95% interval is mean ± 1.96 sd(d) / sqrt(games). Shared dice make the
two results correlated (a game a strong roll decides goes the same way for
both), so this interval is narrower than the two separate Wilson intervals,
and it is the right one for "is A better than B on these games". Each line
also gives both win rates with their own Wilson intervals and the commands
that replay them.
"""
from __future__ import annotations

import sys

from launch.cli import MAX_GAMES, OneLineParser, benchmark_rules, check_integers, fail, input_errors, positive
from policies.league.evaluation import player_command, variant_label
from policies.tournament import first_entry_wins, paired_difference, wilson_interval


def main(argv: list[str]) -> None:
    parser = OneLineParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant", help="rule set (conf/variant, or a YAML path)")
    parser.add_argument("specs", nargs="+", metavar="spec",
                        help="player specs A and B (anything launch/evaluate.py takes), and any rule changes "
                             "as variant.<rule>=value")
    parser.add_argument("--games", type=positive(int), default=5000, help="games each of A and B plays")
    parser.add_argument("--opponent", default="random", help="the player at the three other seats")
    parser.add_argument("--seed", type=int, default=1000003, help="dice seed: the same games for A and B")
    args = parser.parse_intermixed_args(argv)
    check_integers(vars(args), {"--games": (1, MAX_GAMES)}, prefix="--")
    rules, specs = benchmark_rules(args.variant, args.specs, players=4)
    if len(specs) != 2:
        parser.error(f"give a variant and two player specs, got {len(specs)} spec(s)")
    (a, b), variant = specs, variant_label(rules)
    games, seed, opponent = args.games, args.seed, args.opponent
    wins_a = first_entry_wins(a, opponent, rules, games, seed)
    wins_b = first_entry_wins(b, opponent, rules, games, seed)
    mean, diff_low, diff_high = paired_difference(wins_a, wins_b)
    for label, spec, wins in (("A", a, wins_a), ("B", b, wins_b)):
        low, high = wilson_interval(int(wins.sum()), games)
        print(f"{label}: {spec}: {wins.mean():.1%} [{low:.1%}, {high:.1%}] vs 3 x {opponent}, {variant}, {games} games")
        print(f"   {player_command(spec, opponent, rules, games, seed)}")
    print(f"A - B: {mean:+.1%} [{diff_low:+.1%}, {diff_high:+.1%}] (paired by game; "
          f"games that differ: {int((wins_a != wins_b).sum())})")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except input_errors() as err:
        fail(err)
