"""Batched kernels: replay, batch independence, the fast-path contract, and agreement with `Game`."""
from __future__ import annotations

import numpy as np
import pytest

from ludo_env.engine import Game, compile_rules, legal_masks, new_batch, play_random, step_batch
from ludo_env.engine.layout import CURRENT, DIE, EV_ILLEGAL_REPLACED, OVER, PLY, STATE_LEN
from ludo_env.rules import Rules

R = Rules.load("classic")
TAB = compile_rules(R)


def test_games_replay_exactly_and_do_not_depend_on_batch_size():
    small, rng_small = new_batch(TAB, 10, seed=42)
    big, rng_big = new_batch(TAB, 200, seed=42)
    play_random(small, TAB, rng_small)
    play_random(big, TAB, rng_big)
    np.testing.assert_array_equal(small, big[:10])
    again, rng_again = new_batch(TAB, 10, seed=42)
    play_random(again, TAB, rng_again)
    np.testing.assert_array_equal(again, small)
    other, rng_other = new_batch(TAB, 10, seed=43)
    play_random(other, TAB, rng_other)
    assert not np.array_equal(other, small)


def test_new_batch_waits_on_a_decision():
    states, _ = new_batch(TAB, 100, seed=0, first_seats=np.arange(100) % 4)
    assert states.shape == (100, STATE_LEN) and states.dtype == np.int16
    assert (states[:, DIE] > 0).all() and (states[:, OVER] == 0).all()
    with pytest.raises(ValueError, match="first seat 4 is not a seat: choose 0..3"):
        new_batch(TAB, 2, seed=0, first_seats=4)


def test_illegal_choices_are_replaced_by_the_lowest_legal_token_and_flagged():
    states, rng = new_batch(TAB, 64, seed=5)
    masks = np.zeros((64, 4), dtype=np.int8)
    legal_masks(states, TAB, masks)
    choices = np.where(masks.any(axis=1), 9, 0).astype(np.int64)  # 9 is never a token
    expected = states.copy()
    events = np.zeros(64, dtype=np.int32)
    step_batch(states, TAB, rng, choices, events, masks)
    assert ((events & EV_ILLEGAL_REPLACED) != 0).all()
    for b in range(64):
        game = Game(R)
        game.state[:] = expected[b]
        game.move(game.legal_tokens()[0])
        # The batch then rolled on, but rolls never move tokens: positions must match the checked move.
        assert game.state[0:16].tolist() == states[b][0:16].tolist()
    assert (states[:, PLY] > expected[:, PLY]).all()


def test_step_batch_plays_the_same_game_as_the_checked_game():
    # Stream 0 of a seed is the stream `Game(seed=...)` rolls from, so the two replay each other.
    for seed in range(5):
        states, rng = new_batch(TAB, 1, seed=seed)
        game = Game(R, seed=seed)
        game.roll()
        while not game.awaiting_move and not game.over:
            game.roll()
        masks = np.zeros((1, 4), dtype=np.int8)
        events = np.zeros(1, dtype=np.int32)
        while not game.over:
            np.testing.assert_array_equal(game.state, states[0])
            token = max(game.legal_tokens())  # a deterministic, non-trivial policy
            game.move(token)
            while not game.over and not game.awaiting_move:
                game.roll()
            step_batch(states, TAB, rng, np.array([token]), events, masks)
        np.testing.assert_array_equal(game.state, states[0])


def test_play_random_truncates_at_max_plies():
    states, rng = new_batch(TAB, 20, seed=1)
    moves = play_random(states, TAB, rng, max_plies=30)
    # Play stops at the first decision after the 30th roll: no game of 20 finishes that fast.
    assert (states[:, OVER] == 0).all() and (states[:, PLY] >= 30).all()
    assert (moves > 0).all() and (moves <= 30).all()


def test_finished_games_are_left_alone():
    states, rng = new_batch(TAB, 4, seed=3)
    play_random(states, TAB, rng)
    before = states.copy()
    masks = np.ones((4, 4), dtype=np.int8)
    events = np.ones(4, dtype=np.int32)
    step_batch(states, TAB, rng, np.zeros(4, dtype=np.int64), events, masks)
    np.testing.assert_array_equal(states, before)
    assert not events.any() and not masks.any()
    assert set(states[:, CURRENT]) <= {0, 1, 2, 3}


def test_batch_games_place_the_losers_by_progress():
    # The batch path must rank exactly as the rules say: winner first, then by squares covered.
    from ludo_env.engine.layout import PLACES, TOKENS

    states, rng = new_batch(TAB, 300, seed=11)
    play_random(states, TAB, rng)
    for state in states:
        tokens = state[TOKENS : TOKENS + 16].reshape(4, 4)
        pips = [sum(int(p) + 1 for p in row if p >= 0) for row in tokens]
        places = state[PLACES : PLACES + 4].tolist()
        winner = places.index(1)
        for seat in range(4):
            if seat != winner:
                ahead = sum(1 for o in range(4) if o != winner and pips[o] > pips[seat])
                assert places[seat] == 2 + ahead


@pytest.mark.parametrize("variant, overrides", [
    ("pyludo", {}),
    ("classic", {"players": 2, "blockades": True}),  # a second table, other rules on and off
])
def test_the_specialised_kernel_plays_the_same_games_as_the_generic_one(variant, overrides):
    # Compiled for one table, the kernel must still be the rules' kernel: the same states, moves and dice used,
    # truncation included. Two tables with different rules on and off, so each gets its own compiled code.
    tab = compile_rules(Rules.load(variant, **overrides))
    for max_plies in (10_000, 60):
        generic, rng_generic = new_batch(tab, 300, seed=11)
        specialised, rng_specialised = new_batch(tab, 300, seed=11)
        moves_generic = play_random(generic, tab, rng_generic, max_plies)
        moves_specialised = play_random(specialised, tab, rng_specialised, max_plies, specialised=True)
        np.testing.assert_array_equal(specialised, generic)
        np.testing.assert_array_equal(moves_specialised, moves_generic)
        np.testing.assert_array_equal(rng_specialised, rng_generic)
        assert generic[:, OVER].all() == (max_plies == 10_000)  # 60 rolls truncate every game
