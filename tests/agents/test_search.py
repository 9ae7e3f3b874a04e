"""Expectimax over the dice: the batched tree equals a node-by-node recursive reference, and it plays legally; the
policy opponent model's expectation equals a hand computation on a hand-built position."""
from __future__ import annotations

import numpy as np
import pytest

from ludo_env.engine.afterstates import expand_moves, expand_rolls
from ludo_env.engine.kernels import token_index
from ludo_env.engine.layout import CURRENT, DIE, OVER
from ludo_env.rewards import potentials
from ludo_env.rules import DIE_FACES, MAX_PLAYERS, MAX_TOKENS, Rules
from policies.search import ExpectimaxPlayer, GreedyPlayer, unique_rows, values_of, win_outcome
from tests.positions import mid_game_positions, position


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


class TiltedPolicy:
    """A cheap stand-in for a policy's move probabilities: legal tokens weighted 1 + token + (a hash of the
    position) mod 3, so that the replies of a decision get unequal, position-dependent shares."""

    name = "tilted"

    def probabilities(self, states, tab, masks):
        tilt = (states.astype(np.int64) * np.arange(1, states.shape[1] + 1)).sum(axis=1) % 3
        weights = (1.0 + np.arange(MAX_TOKENS)[None, :] + tilt[:, None]) * (masks == 1)
        return weights / weights.sum(axis=1, keepdims=True)


def reference_after(source, row, tab, depth_left, root_seat, opponent, policy=None):
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
            values.append(reference_decision(source, child, tab, depth_left, root_seat, opponent, policy))
    return np.mean(np.stack(values), axis=0, dtype=np.float32)


def reference_decision(source, row, tab, depth_left, root_seat, opponent, policy=None):
    after, legal, _ = expand_moves(row[None], tab)
    mover = int(row[CURRENT])
    if opponent == "uniform" and mover != root_seat:  # the mean over the legal replies
        replies = [reference_after(source, after[0, t], tab, depth_left - 1, root_seat, opponent)
                   for t in range(MAX_TOKENS) if legal[0, t]]
        return np.mean(np.stack(replies), axis=0, dtype=np.float32)
    if opponent == "policy" and mover != root_seat:  # each reply weighted by the policy's probability of it
        shares = policy.probabilities(row[None], tab, legal.astype(np.int8))[0]
        total = np.zeros(MAX_PLAYERS, dtype=np.float64)
        for t in range(MAX_TOKENS):
            if legal[0, t]:
                total += shares[t] * reference_after(source, after[0, t], tab, depth_left - 1, root_seat, opponent,
                                                     policy)
        return total.astype(np.float32)
    best, best_score = None, -np.inf
    for t in range(MAX_TOKENS):
        if not legal[0, t]:
            continue
        v = reference_after(source, after[0, t], tab, depth_left - 1, root_seat, opponent, policy)
        score = -v[root_seat] if (opponent == "paranoid" and mover != root_seat) else v[mover]
        if score > best_score:
            best, best_score = v, score
    return best


@pytest.mark.parametrize("depth", [1, 2])
@pytest.mark.parametrize("opponent", ["maxn", "paranoid", "uniform", "policy"])
def test_batched_tree_equals_the_reference(depth, opponent):
    states, tab, masks = mid_game_positions(games=12, plies=30)
    source = LeadValue()
    policy = TiltedPolicy() if opponent == "policy" else None
    player = ExpectimaxPlayer(source, depth=depth, opponent=opponent, policy=policy)
    got = player.move_values(states, tab)
    for b in range(states.shape[0]):
        after, legal, _ = expand_moves(states[b:b + 1], tab)
        me = int(states[b, CURRENT])
        for t in range(MAX_TOKENS):
            if legal[0, t]:
                want = reference_after(source, after[0, t], tab, depth - 1, me, opponent, policy)[me]
                assert got[b, t] == pytest.approx(want, rel=1e-5, abs=1e-6)
            else:
                assert got[b, t] == -np.inf


def test_policy_opponents_at_depth_three_equal_the_reference():
    states, tab, masks = mid_game_positions(games=3, plies=30)
    source, policy = LeadValue(), TiltedPolicy()
    got = ExpectimaxPlayer(source, depth=3, opponent="policy", policy=policy).move_values(states, tab)
    for b in range(states.shape[0]):
        after, legal, _ = expand_moves(states[b:b + 1], tab)
        me = int(states[b, CURRENT])
        for t in np.flatnonzero(legal[0]):
            want = reference_after(source, after[0, t], tab, 2, me, "policy", policy)[me]
            assert got[b, t] == pytest.approx(want, rel=1e-5, abs=1e-6)


class OpponentTokens:
    """A hand-made value of a 2-player classic position, linear in token progress: to seat 0, 0.001 and 0.003 per
    step of its tokens 0 and 1, minus 0.01 and 0.02 per step of seat 1's tokens 0 and 1; to seat 1, the negative
    of seat 1's part (it gains from its own steps)."""

    name = "opponent tokens"

    def seat_values(self, states, tab):
        mine = states[:, [token_index(0, 0), token_index(0, 1)]].astype(np.float64)
        theirs = states[:, [token_index(1, 0), token_index(1, 1)]].astype(np.float64)
        out = np.zeros((states.shape[0], MAX_PLAYERS), dtype=np.float32)
        out[:, 0] = mine @ [0.001, 0.003] - theirs @ [0.01, 0.02]
        out[:, 1] = theirs @ [0.01, 0.02]
        return out

    def outcome(self, states, tab):
        return win_outcome(states, tab)


class ThreeToOne:
    """Plays token 0 three times as often as token 1 when both are legal."""

    name = "three to one"

    def probabilities(self, states, tab, masks):
        weights = np.array([0.75, 0.25, 0.0, 0.0]) * (masks == 1)
        return weights / weights.sum(axis=1, keepdims=True)


def test_policy_opponent_is_the_expectation_under_the_policy_by_hand():
    # 2-player classic: seat 0 (to move, die 2) has tokens at progress 0 and 10, two in base; seat 1 has tokens at
    # progress 3 and 40 (board squares 30 and 15, no square of seat 0's within 6 of them) and two home. Whichever
    # token seat 0 moves, seat 1 rolls next, and every die d lets it move either token d steps without a capture.
    rules = Rules.load("classic", players=2)
    states, tab, masks = position(rules, [[0, 10, -1, -1], [3, 40, rules.home, rules.home]], die=2)
    assert masks[0].tolist() == [1, 1, 0, 0]
    # Before seat 1's reply, seat 0's value is 0.001 * 2 + 0.003 * 10 - (0.01 * 3 + 0.02 * 40) = -0.798 after moving
    # token 0, and -0.794 after moving token 1. A reply of d steps costs seat 0 0.01 d (seat 1's token 0) or
    # 0.02 d (its token 1), and the mean die is 3.5.
    after_move = np.array([-0.798, -0.794])
    expected = {
        "policy": after_move - 3.5 * (0.75 * 0.01 + 0.25 * 0.02),  # the expectation under 3:1
        "maxn": after_move - 3.5 * 0.02,  # seat 1 gains most by moving its token 1
        "uniform": after_move - 3.5 * (0.01 + 0.02) / 2,
    }
    for opponent, want in expected.items():
        player = ExpectimaxPlayer(OpponentTokens(), depth=2, opponent=opponent,
                                  policy=ThreeToOne() if opponent == "policy" else None)
        got = player.move_values(states, tab)[0]
        assert got[:2] == pytest.approx(want, abs=1e-6), opponent
        assert got[2:].tolist() == [-np.inf, -np.inf]
    assert expected["policy"].tolist() == pytest.approx([-0.84175, -0.83775])
    chosen = ExpectimaxPlayer(OpponentTokens(), depth=2, opponent="policy", policy=ThreeToOne()).act(states, tab, masks)
    assert chosen.tolist() == [1]


def test_policy_opponent_needs_move_probabilities():
    with pytest.raises(ValueError, match="opponent=policy moves the other seats by a PPO policy's probabilities, and "
                                         "'lead' has none \\(a value only\\)"):
        ExpectimaxPlayer(LeadValue(), depth=2, opponent="policy")


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
