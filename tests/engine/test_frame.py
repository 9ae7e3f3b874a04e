"""The mover's point of view: one rotation, checked by hand and both ways."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ludo_env.engine import Game, compile_rules, mover_view_batch, new_batch, play_random, unview, view_from
from ludo_env.engine.layout import CURRENT, TOKENS, UNUSED
from ludo_env.rules import Rules

B = -1
R = Rules.load("classic")


def test_own_start_square_is_step_zero_and_opponents_are_rotated():
    # seat 1's token on its start square 14 (progress 0); seat 0's token on square 5 (progress 4).
    game = Game.from_position(R, [[4, B, B, B], [0, B, B, B], [B] * 4, [56, 51, B, B]], current=1)
    view = game.mover_view()  # seen by seat 1
    assert view[0, 0] == 0  # its own start square is step 0
    assert view[3, 0] == (5 - 14) % 52 == 43  # row 3 is seat 0 (turn order 1, 2, 3, 0)
    assert view[2].tolist() == [52 + 5, 52 + 0, B, B]  # seat 3: home, home column step 0
    from_seat2 = game.mover_view(viewer=2)
    assert from_seat2[3, 0] == (14 - 27) % 52 == 39  # seat 1's start square, counted from seat 2's start


def test_view_of_own_tokens_is_their_progress():
    game = Game.from_position(R, [[0, 10, 50, B], [B] * 4, [B] * 4, [B] * 4])
    assert game.mover_view()[0].tolist() == [0, 10, 50, B]


def test_absent_seats_and_tokens_are_marked_unused():
    rules = Rules.load("quick", players=2)
    view = Game(rules).mover_view()
    assert view[:2, 2:].tolist() == [[UNUSED] * 2] * 2 and (view[2:] == UNUSED).all()


@settings(max_examples=30, deadline=None)
@given(
    name=st.sampled_from(["classic", "pyludo", "ucsd", "quick"]),
    players=st.integers(2, 4),
    seed=st.integers(0, 10_000),
    plies=st.integers(1, 400),
)
def test_rotating_to_any_seat_and_back_is_the_identity(name, players, seed, plies):
    rules = Rules.load(name) if name == "pyludo" else Rules.load(name, players=players)
    tab = compile_rules(rules)
    states, rng = new_batch(tab, 8, seed)
    play_random(states, tab, rng, plies)
    view = np.empty((4, 4), dtype=states.dtype)
    back = np.empty((4, 4), dtype=states.dtype)
    for state in states:
        tokens = state[TOKENS : TOKENS + 16].reshape(4, 4)
        for viewer in range(rules.players):
            view_from(state, tab, viewer, view)
            unview(view, tab, viewer, back)
            np.testing.assert_array_equal(back, tokens)
    batch_views = mover_view_batch(states, tab)
    for b, state in enumerate(states):
        view_from(state, tab, state[CURRENT], view)
        np.testing.assert_array_equal(batch_views[b], view)
