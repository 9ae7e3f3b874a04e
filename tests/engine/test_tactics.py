"""`move_outcome` is pure and is what `apply_move` does; `hit_chance` equals brute force through the engine."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ludo_env.engine import compile_rules, new_batch, play_random
from ludo_env.engine.kernels import apply_move, count_on, legal_mask, move_outcome, opponents_on, token_index
from ludo_env.engine.layout import CURRENT, DIE, OVER, PLACES, SIXES
from ludo_env.engine.tactics import hit_chance
from ludo_env.rules import Rules


def live_positions(variant: str, seed: int, plies: int, **overrides):
    rules = Rules.load(variant, **overrides)
    tab = compile_rules(rules)
    states, rng = new_batch(tab, 24, seed)
    play_random(states, tab, rng, max_plies=plies)
    return rules, tab, states[states[:, OVER] == 0]


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 10_000), plies=st.integers(1, 400), variant=st.sampled_from(["classic", "pyludo", "ucsd"]))
def test_move_outcome_is_pure_and_predicts_apply_move(seed, plies, variant):
    rules, tab, states = live_positions(variant, seed, plies)
    mask = np.zeros(4, dtype=np.int8)
    for state in states:
        legal_mask(state, tab, mask)
        seat, die = int(state[CURRENT]), int(state[DIE])
        for t in np.flatnonzero(mask):
            before = state.copy()
            q, events = move_outcome(state, tab, seat, t, die)
            np.testing.assert_array_equal(state, before)
            moved = state.copy()
            applied = apply_move(moved, tab, t)
            assert moved[token_index(seat, t)] == q
            assert applied & events == events  # apply_move adds home, bonus and turn events on top


def brute_force_hit_chance(state, tab, rules, seat, t):
    """Play every opponent's every die and token through the engine: chance token t of `seat` is sent back."""
    survive = 1.0
    mask = np.zeros(4, dtype=np.int8)
    for other in range(rules.players):
        if other == seat or state[PLACES + other]:
            continue
        hitting_faces = 0
        for die in range(1, 7):
            trial = state.copy()
            trial[CURRENT], trial[DIE], trial[SIXES] = other, die, 0
            legal_mask(trial, tab, mask)
            for token in np.flatnonzero(mask):
                after = trial.copy()
                apply_move(after, tab, token)
                if after[token_index(seat, t)] != state[token_index(seat, t)]:
                    hitting_faces += 1
                    break
        survive *= 1 - hitting_faces / 6
    return 1 - survive


def assert_hit_chance_is_brute_force(rules, tab, states):
    for state in states:
        for seat in range(rules.players):
            for t in range(rules.tokens):
                p = int(state[token_index(seat, t)])
                assert hit_chance(state, tab, seat, p, 0) == pytest.approx(
                    brute_force_hit_chance(state, tab, rules, seat, t)
                ), (state.tolist(), seat, t)


@pytest.mark.parametrize("variant", ["classic", "ucsd", "pyludo"])
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), plies=st.integers(20, 400))
def test_hit_chance_equals_brute_force(variant, seed, plies):
    assert_hit_chance_is_brute_force(*live_positions(variant, seed, plies))


@pytest.mark.parametrize("star_capture", ["landing", "jump_end"])
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10_000), plies=st.integers(20, 400))
def test_hit_chance_equals_brute_force_for_every_star_capture_rule(star_capture, seed, plies):
    assert_hit_chance_is_brute_force(*live_positions("pyludo", seed, plies, star_capture=star_capture))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), plies=st.integers(1, 400),
       setup=st.sampled_from([("classic", 4), ("classic", 3), ("classic", 2), ("pyludo", 4), ("ucsd", 2), ("quick", 2)]))
def test_square_counts_equal_a_count_over_board_squares(seed, plies, setup):
    """`count_on` and `opponents_on` (read from the square-major table) against the board geometry of `Rules`."""
    variant, players = setup
    rules, tab, states = live_positions(variant, seed, plies, players=players)
    for state in states:
        squares = [
            [(rules.seat_starts[s] + p) % rules.track_squares
             for p in (int(state[token_index(s, t)]) for t in range(rules.tokens)) if 0 <= p < rules.track_steps]
            for s in range(rules.players)
        ]
        for square in range(rules.track_squares):
            for seat in range(rules.players):
                assert count_on(state, tab, seat, square) == squares[seat].count(square)
                others = sum(squares[o].count(square) for o in range(rules.players) if o != seat)
                assert opponents_on(state, tab, seat, square) == others
