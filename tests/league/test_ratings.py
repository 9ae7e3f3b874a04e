"""field_scores: the share of opponents each competitor finished ahead of, per game, and its interval; the league's
ratings (no drift for frozen members, main widened each round) and the shared ranks that show near-equals as tied."""
from __future__ import annotations

import math
import random

import pytest

from policies.league.ratings import (
    LEAGUE_TAU,
    MAIN_DRIFT,
    clearly_ahead,
    field_scores,
    ordinal,
    rate_games,
    shared_ranks,
    start_rating,
)


def test_scores_count_the_opponents_finished_ahead_of_in_each_game():
    games = [(("a", "b", "c", "d"), (1, 2, 3, 4)), (("b", "c", "d", "a"), (1, 2, 3, 4))]
    scores = field_scores(games)
    assert {k: v[2] for k, v in scores.items()} == dict.fromkeys("abcd", 2)
    assert scores["a"][0] == pytest.approx(0.5)  # first (3 of 3), then last (0 of 3)
    assert scores["b"][0] == pytest.approx((2 / 3 + 1) / 2)
    assert scores["d"][0] == pytest.approx((0 + 1 / 3) / 2)
    assert scores["a"][1] == pytest.approx(1.96 * math.sqrt(0.5 / 2))  # sample variance of (1, 0) is 1/2


def test_a_tie_is_not_ahead_and_one_game_has_no_interval():
    scores = field_scores([(("a", "b", "c"), (1, 1, 3))])
    assert scores["a"][0] == scores["b"][0] == pytest.approx(0.5) and scores["c"][0] == 0.0
    assert math.isinf(scores["a"][1])


def test_steady_where_openskill_is_not():
    """The same 400 games in two orders: openskill's mu moves with the order, the field score does not."""
    from policies.league.ratings import rate_games

    strong = [(("s", "x", "y", "z"), (1, 2, 3, 4))] * 200
    weak = [(("s", "x", "y", "z"), (4, 1, 2, 3))] * 200
    early, late = rate_games(strong + weak)["s"][0], rate_games(weak + strong)["s"][0]
    assert late - early > 5  # the recent games decide
    assert field_scores(strong + weak)["s"] == field_scores(weak + strong)["s"]


def test_a_competitor_at_two_seats_counts_once_against_the_others():
    scores = field_scores([(("a", "a", "b", "c"), (1, 4, 2, 3))])
    assert scores["a"][2] == 1 and scores["a"][0] == pytest.approx((1 + 0) / 2)  # its seats: 2 of 2, 0 of 2
    assert scores["b"][0] == pytest.approx(2 / 3)  # ahead of c and of a's last seat


# ---------------------------------------------------------------------------- league ratings and shared ranks
BOTS = {"weak": -1.0, "fair": 0.0, "good": 0.6}
"""Seed bots of a simulated league, by Plackett-Luce log-strength."""


def finishing_order(lineup, strength, rng):
    """One game: a Plackett-Luce draw of the finishing order from the true strengths."""
    left, order = list(lineup), []
    while left:
        member = rng.choices(left, weights=[math.exp(strength[m]) for m in left])[0]
        order.append(member)
        left.remove(member)
    return tuple(lineup), tuple(1 + order.index(m) for m in lineup)


def simulated_league(seed, rate, rounds=15, lineups=4, games=20):
    """A training league in miniature: main learns for 6 rounds, then holds; after each round it is frozen as a
    snapshot that starts from its rating; half the line-ups seat main. Returns the ratings of every member that
    played and the true strengths."""
    rng = random.Random(seed)
    strength = dict(BOTS)
    ratings = {m: start_rating() for m in [*BOTS, "main"]}
    for r in range(1, rounds + 1):
        strength["main"] = 1.5 * min(1.0, r / 6)
        members = list(ratings)
        played = []
        for k in range(lineups):
            others = [m for m in members if m != "main"]
            lineup = ["main", *rng.sample(others, 3)] if k % 2 == 0 else rng.sample(members, 4)
            played += [finishing_order(lineup, strength, rng) for _ in range(games)]
        ratings = rate(played, ratings)
        if r < rounds:
            strength[f"main@{r}"], ratings[f"main@{r}"] = strength["main"], ratings["main"]
    return ratings, strength


def league_rating(games, ratings):
    return rate_games(games, ratings, tau=LEAGUE_TAU, changed={"main": MAIN_DRIFT})


def test_a_learner_among_its_snapshots_is_ranked_by_noise_with_openskills_drift_and_first_with_shared_ranks():
    """An old flaw: main, as good as the best of its snapshots, was placed mid-table. With openskill's
    default tau every rating keeps sigma near 1.6 and mu wanders, so main's place among its near-equal snapshots
    is a draw; in the league's rating (no drift for frozen members, main widened each round) ranked by shared
    ranks, main is first, the member listed first is one of the strongest, and every bot is clearly below."""
    old_places = []
    for seed in range(4):
        old, strength = simulated_league(seed, rate_games)
        old_places.append(1 + sorted(old, key=lambda m: -ordinal(*old[m])).index("main"))
        new, _ = simulated_league(seed, league_rating)
        ranks = shared_ranks(new)
        assert dict(ranks)["main"] == 1
        assert strength[ranks[0][0]] == max(strength.values())
        assert all(dict(ranks)[bot] > 1 for bot in BOTS)
    assert sum(place > 1 for place in old_places) >= 3, old_places  # [10, 9, 8, 2]


def test_frozen_members_keep_every_game_and_a_changed_one_is_widened():
    """Without the per-game drift a frozen member's sigma falls as its games add up; with it, sigma stalls."""
    rng = random.Random(0)
    games = [(("a", "b", "c", "d"), tuple(rng.sample([1, 2, 3, 4], 4))) for _ in range(2000)]
    frozen = [rate_games(games[:n], tau=LEAGUE_TAU)["a"][1] for n in (250, 1000, 2000)]
    drifting = [rate_games(games[:n])["a"][1] for n in (250, 1000, 2000)]
    assert frozen[0] > 1.5 and frozen[1] < 1.1 and frozen[2] < 0.8  # about 1.78, 1.01, 0.77
    assert all(sigma > 1.5 for sigma in drifting)  # about 1.93, 1.60, 1.60
    widened = rate_games([], {"main": (30.0, 1.0), "bot": (20.0, 1.0)}, changed={"main": MAIN_DRIFT})
    assert widened == {"main": (30.0, pytest.approx(math.hypot(1.0, MAIN_DRIFT))), "bot": (20.0, 1.0)}


def test_shared_ranks_tie_overlapping_intervals_and_order_by_rank_then_mu():
    ratings = {"a": (30.0, 1.0), "b": (29.0, 1.0), "c": (25.0, 0.5), "d": (28.0, 8.0), "e": (20.0, 0.5)}
    # c is clearly below a (26.0 to 24.02 < 28.04) and b; e below a, b and c; d's wide interval overlaps all
    assert shared_ranks(ratings) == [("a", 1), ("b", 1), ("d", 1), ("c", 3), ("e", 4)]
    assert clearly_ahead(ratings["a"], ratings["c"]) and not clearly_ahead(ratings["a"], ratings["b"])
