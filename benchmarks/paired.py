"""Does agent A win more than agent B? Both play the same games, and the difference gets a paired 95% interval.

    python benchmarks/paired.py classic "search:outputs/train/<td run>?depth=2" ckpt:outputs/train/<td run>
    python benchmarks/paired.py pyludo A B games=5000 opponent=hybrid seed=1000003

A and B each play `games` games against three copies of `opponent` (default
`random`) with the same seed: the same dice streams and the same seating, game
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

import math
import sys

import numpy as np

from launch.cli import UserError, fail, split_options
from policies.league.evaluation import player_command
from policies.tournament import play_tournament, wilson_interval

OPTIONS = {"games": 5000, "opponent": "random", "seed": 1000003}
USAGE = "python benchmarks/paired.py <variant> <spec A> <spec B> [games=N] [opponent=bot] [seed=N]"


def wins_of_first_entry(spec: str, opponent: str, variant: str, games: int, seed: int) -> np.ndarray:
    """Per game, 1 if entry 0 (`spec`) finished first."""
    result = play_tournament([spec] + [opponent] * 3, games, variant, seed, rate=False)
    return (result.places[:, 0] == 1).astype(np.float64)


def main(argv: list[str]) -> None:
    options, positional = split_options(argv, OPTIONS, USAGE)
    if len(positional) != 3:
        raise UserError(f"give a variant and two player specs, got {len(positional)} arguments (usage: {USAGE})")
    variant, a, b = positional
    games, seed, opponent = options["games"], options["seed"], options["opponent"]
    wins_a = wins_of_first_entry(a, opponent, variant, games, seed)
    wins_b = wins_of_first_entry(b, opponent, variant, games, seed)
    d = wins_a - wins_b
    half = 1.96 * d.std(ddof=1) / math.sqrt(games)
    for label, spec, wins in (("A", a, wins_a), ("B", b, wins_b)):
        low, high = wilson_interval(int(wins.sum()), games)
        print(f"{label}: {spec}: {wins.mean():.1%} [{low:.1%}, {high:.1%}] vs 3 x {opponent}, {variant}, {games} games")
        print(f"   {player_command(spec, opponent, variant, 4, games, seed)}")
    print(f"A - B: {d.mean():+.1%} [{d.mean() - half:+.1%}, {d.mean() + half:+.1%}] (paired by game; "
          f"games that differ: {int((d != 0).sum())})")


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except UserError as err:
        fail(err)
