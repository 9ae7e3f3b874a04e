"""Afterstate features: the numba kernel equals a plain-Python reading of its docstring, and it is the same
position seen from whichever seat (rotation invariance)."""
from __future__ import annotations

import numpy as np
import pytest

from ludo_env.afterstate_features import (
    SEAT_FEATURE_NAMES,
    SEAT_FEATURES,
    feature_count,
    feature_names,
    seat_features,
)
from ludo_env.engine.kernels import token_index
from ludo_env.engine.layout import CURRENT, OVER, PLACES, SIXES, TOKENS
from ludo_env.engine.tactics import gap_ahead, gap_behind, hit_chance
from ludo_env.rules import MAX_PLAYERS, MAX_TOKENS
from tests.positions import random_walk


def afterstates(variant: str, players: int, seed: int, games: int = 24, plies: int = 60):
    """Between-rolls states: the afterstates of every legal move at random points of random games."""
    rules, tab, walk = random_walk(variant, players, seed, games, plies)
    found = [after[legal == 1] for ply, _, after, legal in walk if ply % 6 == 5]
    return rules, tab, np.concatenate(found)


def reference_block(state, rules, tab, seat):
    """One seat's block, read off the module docstring with plain Python (tactics for the one-roll readings)."""
    T, H, S = rules.tokens, rules.home, rules.track_steps
    f = dict.fromkeys(SEAT_FEATURE_NAMES, 0.0)
    progress = [int(state[token_index(seat, t)]) for t in range(T)]
    for p in progress:
        covered = (p + 1) / (H + 1) if p >= 0 else 0.0
        f["progress"] += covered / T
        f["progress_sq"] += covered ** 2 / T
        if p == -1:
            f["in_base"] += 1 / T
        elif p == H:
            f["finished"] += 1 / T
        elif p >= S:
            f["in_column"] += 1 / T
        else:
            f["on_track"] += 1 / T
            f[f"track_q{p * 4 // S}"] += 1 / T
            if (rules.seat_starts[seat] + p) % rules.track_squares in rules.safe_squares:
                f["on_safe"] += 1 / T
            if progress.count(p) >= 2:
                f["stacked"] += 1 / T
            chance = hit_chance(state, tab, seat, p, 0)
            f["danger"] += chance / T
            f["expected_loss"] += chance * covered / T
            behind, ahead = gap_behind(state, tab, seat, p), gap_ahead(state, tab, seat, p)
            f["threatened"] += (1 <= behind <= 6) / T
            f["chased"] += (7 <= behind <= 12) / T
            f["targets"] += (1 <= ahead <= 6) / T
    rolls = state[OVER] == 0 and state[CURRENT] == seat
    f["rolls_next"] = float(rolls)
    f["sixes"] = state[SIXES] / 3 if rolls else 0.0
    f["seat_done"] = float(state[PLACES + seat] != 0)
    f["in_game"] = 1.0
    return f


def reference(state, rules, tab):
    """``(4, F)``: the features of one state from each absolute seat."""
    n = rules.players
    blocks = [reference_block(state, rules, tab, s) for s in range(n)]
    for s in range(n):
        blocks[s]["lead"] = blocks[s]["progress"] - max(blocks[o]["progress"] for o in range(n) if o != s)
    out = np.zeros((MAX_PLAYERS, feature_count()))
    for viewer in range(n):
        for r in range(n):
            block = blocks[(viewer + r) % n]
            out[viewer, r * SEAT_FEATURES:(r + 1) * SEAT_FEATURES] = [block[k] for k in SEAT_FEATURE_NAMES]
        out[viewer, -1] = 1.0
    return out


@pytest.mark.parametrize("variant,players", [("classic", 4), ("classic", 2), ("pyludo", 4), ("quick", 3),
                                             ("ucsd", 4), ("ucsd", 2)])
def test_features_equal_the_plain_python_reference(variant, players):
    rules, tab, states = afterstates(variant, players, seed=players)
    got = seat_features(states, tab)
    assert got.shape == (len(states), MAX_PLAYERS, feature_count()) and got.dtype == np.float32
    for state, features in zip(states[:150], got[:150]):
        np.testing.assert_allclose(features, reference(state, rules, tab), atol=1e-6)
    # Every feature moves somewhere in these games, except those a variant cannot show.
    present = got[:, :players].reshape(-1, feature_count())
    varying = {name for name, col in zip(feature_names(), present.T) if col.min() != col.max()}
    assert {"row0.progress", "row0.danger", "row0.lead", f"row{players - 1}.rolls_next"} <= varying


def rotate(state, players: int, k: int):
    """The same position with every seat's tokens, turn and place moved k seats on."""
    out = state.copy()
    for seat in range(players):
        to = (seat + k) % players
        out[TOKENS + MAX_TOKENS * to:TOKENS + MAX_TOKENS * (to + 1)] = state[TOKENS + MAX_TOKENS * seat:
                                                                           TOKENS + MAX_TOKENS * (seat + 1)]
        out[PLACES + to] = state[PLACES + seat]
    out[CURRENT] = (state[CURRENT] + k) % players
    return out


@pytest.mark.parametrize("variant,players", [("classic", 4), ("classic", 2), ("pyludo", 4)])
def test_a_seat_sees_the_same_features_wherever_it_sits(variant, players):
    """Seat v of a position and seat v + k of the position rotated by k seats read identically (the board is
    symmetric under those rotations for 2 and 4 players)."""
    _, tab, states = afterstates(variant, players, seed=5)
    base = seat_features(states, tab)
    for k in range(1, players):
        turned = seat_features(np.stack([rotate(s, players, k) for s in states]), tab)
        for v in range(players):
            np.testing.assert_array_equal(turned[:, (v + k) % players], base[:, v])


def test_absent_seats_are_zero_and_names_match():
    _, tab, states = afterstates("classic", 2, seed=1, games=4, plies=12)
    got = seat_features(states, tab)
    assert not got[:, 2:].any() and not got[:, :2, 2 * SEAT_FEATURES:4 * SEAT_FEATURES].any()
    assert (got[:, :2, -1] == 1).all()
    names = feature_names()
    assert len(names) == feature_count() == 4 * SEAT_FEATURES + 1 and len(set(names)) == len(names)
