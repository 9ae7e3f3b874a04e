"""Ratings and pairwise records from finished multiplayer games.

A *game* here is ``(competitors, places)``: one competitor key per seat (a
member id, an entry label: anything hashable and distinct within the game)
and the finishing place of each seat, 1 first (ties share a place).

* `rate_games`: openskill's Plackett-Luce model, one update per game in
  order, from the full finishing order, starting from the ratings given
  (openskill's default rating for a competitor not in them).
* `head_to_head`: for each ordered pair (a, b) that met, the games where a
  finished ahead of b and the games both played; ``a`` beat ``b`` in a
  4-player game when it placed better, whoever won the game.
* `field_scores`: for each competitor, the share of its opponents it finished
  ahead of, per game, averaged over its games, with a 95% interval. Unlike
  openskill's ratings, which forget old games at a fixed rate (each update adds
  its ``tau`` to sigma, so sigma stays near 1.6 however many games are played
  and mu wanders by about that much from round to round), it weighs every game
  the same: in a round robin, where everyone meets the same field, it is the
  steadier order.
* `PFSP_WEIGHTINGS`: prioritized fictitious self-play (AlphaStar): weight an
  opponent by f(x), x = the learner's chance to finish ahead of it.
* `shared_ranks`: a ranking that says which competitors are within noise of
  each other: each one's rank is 1 + the number clearly ahead of it
  (`clearly_ahead`: its 95% interval, mu +- 1.96 sigma, wholly above), so
  near-equals share a rank instead of being ordered by luck.

League ratings (`LEAGUE_TAU`, `MAIN_DRIFT`): a league member that is frozen (a
snapshot, a bot, another run's agent) plays the same in every round, so every
one of its games is evidence and its rating must not forget them: openskill's
default ``tau`` adds 25/300 to sigma on every game, which holds sigma near 1.6
whatever the games and lets mu wander by that much, so a league of near-equal
snapshots was ordered by that wander. The league rates with ``tau = 0``
instead, and widens the sigma of the one member that changes, the learner
``main``, by `MAIN_DRIFT` before each round it plays, so its rating follows its
recent games.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence

Game = tuple[Sequence[Hashable], Sequence[int]]

PFSP_WEIGHTINGS: dict[str, Callable[[float], float]] = {
    "squared": lambda x: (1.0 - x) ** 2,  # AlphaStar's f_hard: focus on opponents main loses to
    "linear": lambda x: 1.0 - x,
    "variance": lambda x: x * (1.0 - x),  # opponents of main's level
    "uniform": lambda x: 1.0,
}


LEAGUE_TAU = 0.0
"""openskill's per-game sigma increase in league rounds: none, since frozen members do not change."""
MAIN_DRIFT = 1.0
"""Sigma added (in quadrature) to main's rating before each league round: main trains between rounds. Late in
a run main's mu moves by less than 1 a round; a larger drift would only add noise to its rating, a smaller one
would leave main's rating behind while it is learning fast (docs/pages/concepts/league.md)."""
CLEARLY_AHEAD_Z = 1.96
"""A rating's interval is mu +- this many sigma (95%); one is clearly ahead of another when its interval is
wholly above. Stricter than a test of the difference (1.96 times the sigma of the difference): a league compares
each member with a dozen near-equals, and at that strictness one of them would, by luck, often seem clearly
ahead. (Still transitive, so a shared rank means no member of it is clearly ahead of another.)"""


def start_rating() -> tuple[float, float]:
    """openskill's (mu, sigma) for a competitor that has not played."""
    from openskill.models import PlackettLuce

    start = PlackettLuce().rating()
    return float(start.mu), float(start.sigma)


def ordinal(mu: float, sigma: float) -> float:
    """openskill's conservative rating, mu - 3 sigma (its default `ordinal`)."""
    return mu - 3.0 * sigma


def rate_games(games: Iterable[Game], ratings: Mapping[Hashable, tuple[float, float]] | None = None, *,
               tau: float | None = None, changed: Mapping[Hashable, float] | None = None,
               ) -> dict[Hashable, tuple[float, float]]:
    """(mu, sigma) of every competitor in `ratings` or `games` after rating the games in order.

    `tau`: openskill's per-game sigma increase (None: its default, 25/300). `changed`: competitors that have
    changed since `ratings` were made, each with the sigma to add to its rating (in quadrature) first.
    """
    from openskill.models import PlackettLuce

    model = PlackettLuce() if tau is None else PlackettLuce(tau=tau)
    current = {key: model.rating(mu=mu, sigma=sigma) for key, (mu, sigma) in (ratings or {}).items()}
    for key, drift in (changed or {}).items():
        if key in current:
            current[key] = model.rating(mu=current[key].mu, sigma=math.hypot(current[key].sigma, drift))
    for competitors, places in games:
        teams = [[current.setdefault(key, model.rating())] for key in competitors]
        for key, team in zip(competitors, model.rate(teams, ranks=list(places))):
            current[key] = team[0]
    return {key: (float(r.mu), float(r.sigma)) for key, r in current.items()}


def head_to_head(games: Iterable[Game]) -> dict[tuple[Hashable, Hashable], tuple[int, int]]:
    """``{(a, b): (games a finished ahead of b, games both played)}`` for every ordered pair that met."""
    ahead: dict[tuple[Hashable, Hashable], int] = defaultdict(int)
    met: dict[tuple[Hashable, Hashable], int] = defaultdict(int)
    for competitors, places in games:
        for i, a in enumerate(competitors):
            for j, b in enumerate(competitors):
                if i != j and a != b:
                    met[a, b] += 1
                    ahead[a, b] += int(places[i] < places[j])
    return {pair: (ahead[pair], n) for pair, n in met.items()}


def field_scores(games: Iterable[Game]) -> dict[Hashable, tuple[float, float, int]]:
    """``{competitor: (mean score, half-width of its normal 95% interval, games)}``.

    A game's score is the share of the other competitors' seats the competitor finished ahead of (a tie is not
    ahead), so 1 for a win and 0 for last place; one who held several seats counts once, with its seats'
    mean. Games are independent, so the interval is the mean's.
    """
    scores: dict[Hashable, list[float]] = defaultdict(list)
    for competitors, places in games:
        seat_scores: dict[Hashable, list[float]] = defaultdict(list)
        for i, key in enumerate(competitors):
            others = [places[j] for j, other in enumerate(competitors) if other != key]
            if others:
                seat_scores[key].append(sum(places[i] < p for p in others) / len(others))
        for key, values in seat_scores.items():
            scores[key].append(sum(values) / len(values))
    result = {}
    for key, values in scores.items():
        n = len(values)
        mean = sum(values) / n
        variance = sum((v - mean) ** 2 for v in values) / (n - 1) if n > 1 else math.inf
        result[key] = (mean, 1.96 * math.sqrt(variance / n), n)
    return result


def ahead_rate(record: tuple[int, int] | None, prior_games: float = 2.0) -> float:
    """A pairwise record as a chance, shrunk towards 1/2 by `prior_games` (1/2 when they never met)."""
    ahead, games = record or (0, 0)
    return (ahead + prior_games / 2) / (games + prior_games)


def pfsp_weight(name: str) -> Callable[[float], float]:
    if name not in PFSP_WEIGHTINGS:
        raise ValueError(f"league.pfsp={name!r} is not allowed: choose {', '.join(PFSP_WEIGHTINGS)}")
    return PFSP_WEIGHTINGS[name]


def clearly_ahead(a: tuple[float, float], b: tuple[float, float], z: float = CLEARLY_AHEAD_Z) -> bool:
    """Whether rating `a` = (mu, sigma) has its interval, mu +- `z` sigma, wholly above `b`'s."""
    return a[0] - z * a[1] > b[0] + z * b[1]


def shared_ranks(ratings: Mapping[Hashable, tuple[float, float]]) -> list[tuple[Hashable, int]]:
    """Competitors strongest first, each with its rank: 1 + how many are `clearly_ahead` of it.

    Competitors with the same rank are within noise of each other (being clearly ahead is transitive, so one
    clearly ahead of another has a smaller rank), and every one of rank 1 is best within the intervals. Order:
    by rank, then by mu.
    """
    ranks = {key: 1 + sum(clearly_ahead(other, rating) for other in ratings.values())
             for key, rating in ratings.items()}
    return sorted(ranks.items(), key=lambda item: (item[1], -ratings[item[0]][0]))
