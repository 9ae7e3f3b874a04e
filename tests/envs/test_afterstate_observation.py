"""The ``afterstates`` encoder is the engine's own afterstates read by `seat_features`, in the decider's frame."""
from __future__ import annotations

import numpy as np
import pytest

from ludo_env.afterstate_features import BIAS, SEAT_FEATURE_NAMES, SEAT_FEATURES, seat_features
from ludo_env.afterstate_observation import GLOBALS_AT, POSITION_FEATURES, SIZE, TOKEN_BLOCK
from ludo_env.engine.afterstates import expand_moves
from ludo_env.engine.layout import CURRENT, DIE, OVER
from ludo_env.observations import encode, feature_names, token_layout
from ludo_env.rules import DIE_FACES, MAX_TOKENS, Rules
from tests.positions import position, random_walk

CLASSIC = Rules.load("classic")


def decision_states(variant: str, players: int, seed: int, games: int = 32, plies: int = 90):
    """Decision states met along random games, every 3rd ply."""
    _, tab, walk = random_walk(variant, players, seed, games, plies)
    found = [states[(states[:, OVER] == 0) & (states[:, DIE] > 0)].copy() for ply, states, _, _ in walk if ply % 3 == 0]
    return tab, np.concatenate(found)


def reference(states, tab):
    """The encoder's columns from `expand_moves` and `seat_features` (both tested on their own), in numpy."""
    after, legal, _ = expand_moves(states, tab)
    deciders = states[:, CURRENT]
    rows = np.arange(len(states))
    expected = np.zeros((len(states), SIZE), np.float32)
    for t in range(MAX_TOKENS):
        seen = seat_features(after[:, t], tab)[rows, deciders, :BIAS]  # every seat, the decider's first
        block = slice(t * TOKEN_BLOCK, (t + 1) * TOKEN_BLOCK)
        expected[:, block] = np.where(legal[:, t, None] == 1, np.c_[seen, np.ones(len(states))], 0.0)
    expected[rows, GLOBALS_AT + states[:, DIE] - 1] = 1.0
    expected[:, GLOBALS_AT + DIE_FACES:] = seat_features(states, tab)[rows, deciders, :BIAS]
    return expected


@pytest.mark.parametrize("variant,players", [("classic", 4), ("pyludo", 4), ("quick", 2), ("ucsd", 3)])
def test_the_encoder_equals_the_engines_afterstates_read_by_seat_features(variant, players):
    tab, states = decision_states(variant, players, seed=11)
    assert len(states) > 200
    np.testing.assert_allclose(encode("afterstates", states, tab), reference(states, tab), rtol=0, atol=1e-6)


def test_names_and_token_blocks():
    names = feature_names("afterstates")
    assert len(names) == SIZE == MAX_TOKENS * (POSITION_FEATURES + 1) + DIE_FACES + POSITION_FEATURES
    layout = token_layout("afterstates")
    assert len(layout.own) == MAX_TOKENS and layout.opponents == ()
    assert layout.own_features[:SEAT_FEATURES] == tuple(f"row0.{f}" for f in SEAT_FEATURE_NAMES)
    assert layout.own_features[-1] == "legal" and len(layout.globals) == DIE_FACES + POSITION_FEATURES


def test_a_capture_and_a_bonus_roll_show_in_the_moving_tokens_block():
    """Hand-built: seat 0's token 0 moves 10 -> 16 with a six, onto a lone seat-1 token on an unsafe square."""
    square = (CLASSIC.seat_starts[0] + 16) % CLASSIC.track_squares
    assert square not in CLASSIC.safe_squares
    victim = (square - CLASSIC.seat_starts[1]) % CLASSIC.track_squares
    tokens = [[10, 30, -1, -1], [victim, -1, -1, -1], [-1] * 4, [-1] * 4]
    states, tab, _ = position(CLASSIC, tokens, die=6)
    out = dict(zip(feature_names("afterstates"), encode("afterstates", states, tab)[0]))
    assert out["own0.legal"] == out["own1.legal"] == out["own2.legal"] == 1.0  # a six also enters from base
    assert out["now.row1.in_base"] == 0.75 and out["own0.row1.in_base"] == 1.0  # the capture sends it home
    assert out["own1.row1.in_base"] == 0.75
    assert out["own0.row0.rolls_next"] == 1.0 and out["own0.row0.sixes"] > 0  # the six's bonus roll stays
    assert out["own0.row0.progress"] > out["now.row0.progress"]
    assert out["die6"] == 1.0 and sum(out[f"die{d}"] for d in range(1, 7)) == 1.0
