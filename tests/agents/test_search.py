"""Expectimax over the dice: the batched tree equals a node-by-node recursive reference, and it plays legally."""
from __future__ import annotations

import numpy as np
import pytest

from ludo_env.engine.afterstates import expand_moves, expand_rolls
from ludo_env.engine.layout import CURRENT, DIE, OVER
from ludo_env.rewards import potentials
from ludo_env.rules import DIE_FACES, MAX_PLAYERS, MAX_TOKENS
from policies.search import ExpectimaxPlayer, GreedyPlayer, unique_rows, values_of, win_outcome
from tests.positions import mid_game_positions


class LeadValue:
    """A cheap, tie-free value: each seat's progress lead plus a hash of the whole position."""

    name = "lead"

    def __init__(self):
        self.rows_seen = 0

    def seat_values(self, states, tab):
        self.rows_seen += states.shape[0]
        phi = np.empty((states.shape[0], MAX_PLAYERS))
        potentials(states, tab, phi)
        noise = (states.astype(np.int64) * np.arange(1, states.shape[1] + 1) * 7919).sum(axis=1) % 1000
        return (phi + 1e-5 * noise[:, None] * np.arange(1, MAX_PLAYERS + 1)).astype(np.float32)

    def outcome(self, states, tab):
        return win_outcome(states, tab)


def reference_after(source, row, tab, depth_left, root_seat, opponent):
    """Value vector of one afterstate, expanded node by node (the module docstring's tree, written plainly)."""
    if row[OVER] or depth_left == 0:
        return values_of(source, row[None], tab)[0]
    children, _, _ = expand_rolls(row[None], tab)
    values = []
    for d in range(DIE_FACES):
        child = children[0, d]
        if child[DIE] == 0 or child[OVER]:
            values.append(values_of(source, child[None], tab)[0])
        else:
            values.append(reference_decision(source, child, tab, depth_left, root_seat, opponent))
    return np.mean(np.stack(values), axis=0, dtype=np.float32)


def reference_decision(source, row, tab, depth_left, root_seat, opponent):
    after, legal, _ = expand_moves(row[None], tab)
    mover = int(row[CURRENT])
    if opponent == "uniform" and mover != root_seat:  # the mean over the legal replies
        replies = [reference_after(source, after[0, t], tab, depth_left - 1, root_seat, opponent)
                   for t in range(MAX_TOKENS) if legal[0, t]]
        return np.mean(np.stack(replies), axis=0, dtype=np.float32)
    best, best_score = None, -np.inf
    for t in range(MAX_TOKENS):
        if not legal[0, t]:
            continue
        v = reference_after(source, after[0, t], tab, depth_left - 1, root_seat, opponent)
        score = -v[root_seat] if (opponent == "paranoid" and mover != root_seat) else v[mover]
        if score > best_score:
            best, best_score = v, score
    return best


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("opponent", ["maxn", "paranoid", "uniform"])
def test_batched_tree_equals_the_reference(depth, opponent):
    states, tab, masks = mid_game_positions(games=12, plies=30)
    source = LeadValue()
    player = ExpectimaxPlayer(source, depth=depth, opponent=opponent)
    got = player.move_values(states, tab)
    for b in range(states.shape[0]):
        after, legal, _ = expand_moves(states[b:b + 1], tab)
        me = int(states[b, CURRENT])
        for t in range(MAX_TOKENS):
            if legal[0, t]:
                want = reference_after(source, after[0, t], tab, depth - 1, me, opponent)[me]
                assert got[b, t] == pytest.approx(want, rel=1e-5, abs=1e-6)
            else:
                assert got[b, t] == -np.inf


def test_depth_one_is_greedy():
    states, tab, masks = mid_game_positions(games=40)
    source = LeadValue()
    assert np.array_equal(ExpectimaxPlayer(source, depth=1).act(states, tab, masks),
                          GreedyPlayer(source).act(states, tab, masks))


def test_leaves_are_evaluated_once_each():
    states, tab, masks = mid_game_positions(games=8)
    source = LeadValue()
    player = ExpectimaxPlayer(source, depth=2)
    player.act(states, tab, masks)
    assert source.rows_seen == player.leaves_evaluated  # only unique rows reach the source
    assert 0 < player.leaves_evaluated <= states.shape[0] * MAX_TOKENS * DIE_FACES * MAX_TOKENS


def test_bot_opponent_follows_only_the_bots_reply():
    states, tab, masks = mid_game_positions(games=10)
    chosen = ExpectimaxPlayer(LeadValue(), depth=2, opponent="hybrid").act(states, tab, masks)
    assert np.all(masks[np.arange(len(chosen)), chosen] == 1)
    with pytest.raises(ValueError, match="opponent='nobody' is not allowed"):
        ExpectimaxPlayer(LeadValue(), opponent="nobody")


def test_unique_rows_round_trip():
    rows = np.array([[1, 2], [3, 4], [1, 2], [0, 0]], dtype=np.int16)
    unique, inverse = unique_rows(rows)
    assert unique.shape[0] == 3
    assert np.array_equal(unique[inverse], rows)
