"""rollout: players: the rollouts against one-at-a-time replays, the choice on a decisive position, specs."""
from __future__ import annotations

import numpy as np
import pytest

from ludo_env.engine import rng as rngmod
from ludo_env.engine.batch import step_batch
from ludo_env.engine.layout import CURRENT, OVER, PLACES
from ludo_env.rules import MAX_PLAYERS, Rules
from policies.players import PlayerSpecError, make_player
from policies.tournament import play_tournament
from tests.positions import mid_game_positions, position, square_progress


def one_rollout(policy, state: np.ndarray, tab: np.ndarray, token: int, stream: np.uint64) -> int:
    """The seat placed first when `token` is played at `state` and the game is played out by `policy`, one game
    alone on its own dice stream: the reference the batched rollouts must equal."""
    row = state[None].copy()
    dice = np.array([stream], dtype=np.uint64)
    masks = np.zeros((1, 4), dtype=np.int8)
    events = np.zeros(1, dtype=np.int32)
    step_batch(row, tab, dice, np.array([token]), events, masks)
    while not (row[0, PLACES:PLACES + MAX_PLAYERS] == 1).any() and row[0, OVER] == 0:
        step_batch(row, tab, dice, np.asarray(policy.act(row, tab, masks)), events, masks)
    first = np.flatnonzero(row[0, PLACES:PLACES + MAX_PLAYERS] == 1)
    return int(first[0]) if first.size else -1


def test_the_batched_rollouts_equal_each_game_played_out_alone_on_its_paired_dice():
    states, tab, masks = mid_game_positions(games=6, plies=60)
    player = make_player("rollout:hybrid?n=3", seed=4)
    decision, token = np.nonzero(masks)
    wins = player.rollout_wins(states, tab, decision, token)
    # The player's first draw seeds the streams; stream j of a decision is shared by all its tokens.
    streams = rngmod.streams(int(np.random.default_rng(4).integers(2**62)), states.shape[0] * 3).reshape(-1, 3)
    expected = np.array([[one_rollout(player.policy, states[d], tab, t, streams[d, j]) == states[d, CURRENT]
                          for j in range(3)] for d, t in zip(decision, token)], dtype=np.float64)
    assert wins.shape == (decision.size, 3)
    np.testing.assert_array_equal(wins, expected)


@pytest.fixture(scope="module")
def capture_or_not():
    """Two players on classic, each a few squares from the end. Seat 0 rolls a 6: token 2 can capture seat 1's
    last token (sent back to base, it must roll a 6 and go round again), token 3 can only walk on. Not capturing
    leaves seat 1 about 11 steps from winning while seat 0 needs over 60."""
    rules = Rules.load("classic", players=2)
    home = rules.home
    opponent_square = 20  # not a safe square of classic
    tokens = [[home, home, square_progress(rules, 0, opponent_square - 6), 29],
              [home, home, home, square_progress(rules, 1, opponent_square)]]
    states, tab, masks = position(rules, tokens, die=6)
    assert masks[0].tolist() == [0, 0, 1, 1]
    return states, tab, masks


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rollouts_find_the_capture_that_a_random_policy_may_miss(capture_or_not, seed):
    states, tab, masks = capture_or_not
    player = make_player("rollout:random?n=48", seed=seed)
    decision, token = np.nonzero(masks)
    shares = player.rollout_wins(states, tab, decision, token).mean(axis=1)
    assert shares[0] > shares[1] + 0.3  # capturing wins far more often
    assert player.act(states, tab, masks).tolist() == [2]


def test_without_enough_evidence_the_policy_s_own_token_is_played():
    states, tab, masks = mid_game_positions(games=12, plies=50)
    cautious = make_player("rollout:hybrid?n=4&z=1000", seed=9)
    policy = make_player("hybrid")
    # A gain of more than 1000 standard errors needs every paired rollout to gain: never, on these positions.
    assert np.array_equal(cautious.act(states, tab, masks), policy.act(states, tab, masks))


def test_z_0_plays_the_token_with_the_most_wins_and_ties_go_to_the_policy():
    states, tab, masks = mid_game_positions(games=12, plies=50)
    player = make_player("rollout:hybrid?n=6&z=0", seed=2)
    choices = player.act(states, tab, masks)
    again = make_player("rollout:hybrid?n=6&z=0", seed=2)
    own = make_player("hybrid").act(states, tab, masks)
    choosing = np.flatnonzero(masks.sum(axis=1) > 1)
    decision, token = np.nonzero(masks[choosing])
    shares = again.rollout_wins(states[choosing], tab, decision, token).mean(axis=1)
    for d, b in enumerate(choosing):
        best = shares[decision == d].max()
        own_share = shares[(decision == d) & (token == own[b])][0]
        expected = own[b] if own_share == best else token[(decision == d) & (shares == best)][0]
        assert choices[b] == expected
    forced = np.flatnonzero(masks.sum(axis=1) == 1)
    assert np.array_equal(choices[forced], masks[forced].argmax(axis=1))


def test_a_rollout_player_plays_a_tournament_and_replays_it_with_its_seed():
    first = play_tournament(["rollout:hybrid?n=2", "random", "random", "random"], games=4, rules="classic",
                            seed=8, rate=False)
    again = play_tournament(["rollout:hybrid?n=2", "random", "random", "random"], games=4, rules="classic",
                            seed=8, rate=False)
    assert np.array_equal(first.places, again.places)
    assert first.finished.all()


@pytest.mark.parametrize("spec, message", [
    ("rollout:", "names no rollout policy: use rollout:<a bot name, ckpt:<path> or champion:<variant>>?n=16"),
    ("rollout:hybrid?n=1", "n=1 is not allowed: give a whole number in 2..1024"),
    ("rollout:hybrid?n=2000", "n=2000 is not allowed: give a whole number in 2..1024"),
    ("rollout:hybrid?z=-1", "z=-1 is not allowed: give a number >= 0"),
    ("rollout:hybrid?z=inf", "z=inf is not allowed: give a number >= 0"),
    ("rollout:hybrid?sims=3", "unknown option 'sims': use n, z"),
    ("rollout:mcts:/x?sims=2", "the rollout policy 'mcts:/x' is not allowed"),
    ("rollout:rollout:hybrid", "the rollout policy 'rollout:hybrid' is not allowed"),
    ("rollout:py:mybots:Bot", "the rollout policy 'py:mybots:Bot' is not allowed"),
    ("rollout:ckpt:/no/such/policy", "checkpoint '/no/such/policy' does not exist"),
    ("rollout:champion:nope", "there is no champion for 'nope'"),
])
def test_a_bad_rollout_spec_is_one_line(spec, message):
    with pytest.raises(PlayerSpecError) as err:
        make_player(spec)
    text = str(err.value)
    assert text.startswith(f"player '{spec}'") and message in text and "\n" not in text


def test_a_rollout_over_a_champion_is_refused_under_other_rules():
    with pytest.raises(PlayerSpecError, match="was trained for 4-player pyludo, this game is 4-player classic"):
        make_player("rollout:champion:pyludo?n=2", rules=Rules.load("classic"))


def test_a_league_refuses_a_rollout_player_in_one_line():
    from policies.league.league import normalized_external

    with pytest.raises(PlayerSpecError) as err:
        normalized_external("rollout:champion:pyludo?n=4")
    assert str(err.value).startswith("player 'rollout:champion:pyludo?n=4': a rollout: player cannot join a league")
    assert "\n" not in str(err.value)


def test_a_seat_label_names_the_rollout_policy_by_its_last_folder():
    from launch.web.site import short_label

    assert short_label("rollout:ckpt:/runs/ppo/run7?n=16") == "rollout:ckpt:run7?n=16"
    assert short_label("rollout:hybrid") == "rollout:hybrid"
