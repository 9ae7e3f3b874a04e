"""field_scores: the share of opponents each competitor finished ahead of, per game, and its interval."""
from __future__ import annotations

import math

import pytest

from policies.league.ratings import field_scores


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
