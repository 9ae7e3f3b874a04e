"""search: and mcts: players over real saved PPO / DQN policies: specs, value sources, MCTS, the league."""
from __future__ import annotations

import json

import numpy as np
import pytest

from ludo_env.engine.layout import PLACES
from policies.players import PlayerSpecError, make_player
from policies.saved import load_value_source
from policies.search import ModuleValue
from tests.league.tiny_policy import write_tiny_policy
from tests.positions import mid_game_positions


@pytest.fixture(scope="module")
def ppo_policy(tmp_path_factory):
    return write_tiny_policy(tmp_path_factory.mktemp("ppo") / "policy", seed=3)


@pytest.fixture(scope="module")
def shaped_policy(tmp_path_factory):
    """The same kind of policy, saved as trained with potential shaping (the default exps' reward)."""
    folder = write_tiny_policy(tmp_path_factory.mktemp("shaped") / "policy", seed=3)
    meta = json.loads((folder / "policy.json").read_text())
    meta["model_config"]["reward"] = {"kind": "potential", "coef": 2.0, "gamma": 0.99}
    (folder / "policy.json").write_text(json.dumps(meta))
    return folder


def test_mcts_with_one_simulation_plays_the_policy(ppo_policy):
    states, tab, masks = mid_game_positions(games=24)
    mcts = make_player(f"mcts:{ppo_policy}?sims=1")
    raw = make_player(f"ckpt:{ppo_policy}")
    # One simulation tries the edge of highest prior (every Q starts at the same first-play value).
    assert np.array_equal(mcts.act(states, tab, masks), raw.act(states, tab, masks))


def test_mcts_plays_legal_moves_and_replays_with_its_seed(ppo_policy, shaped_policy):
    states, tab, masks = mid_game_positions(games=16)
    first = make_player(f"mcts:{ppo_policy}?sims=12&c=2", seed=5).act(states, tab, masks)
    again = make_player(f"mcts:{ppo_policy}?sims=12&c=2", seed=5).act(states, tab, masks)
    assert np.array_equal(first, again)
    assert np.all(masks[np.arange(len(first)), first] == 1)
    other = make_player(f"mcts:{ppo_policy}?sims=12&value={shaped_policy}", seed=5)  # another value at the leaves
    assert other.value.reward.shaped_by_potential and not first_player_value_shaped(ppo_policy)
    chosen = other.act(states, tab, masks)
    assert np.all(masks[np.arange(len(chosen)), chosen] == 1)


def first_player_value_shaped(policy) -> bool:
    return make_player(f"mcts:{policy}?sims=1").value.reward.shaped_by_potential


def test_search_over_a_critic_plays_legal_moves(ppo_policy):
    states, tab, masks = mid_game_positions(games=12)
    for spec in (f"search:{ppo_policy}?depth=1", f"search:{ppo_policy}?depth=2&opponent=paranoid"):
        chosen = make_player(spec).act(states, tab, masks)
        assert np.all(masks[np.arange(len(chosen)), chosen] == 1)


def test_module_value_undoes_potential_shaping_and_pays_finished_seats(ppo_policy, shaped_policy):
    from ludo_env.engine.afterstates import expand_moves
    from ludo_env.rewards import potentials

    states, tab, _ = mid_game_positions(games=10)
    after = expand_moves(states, tab)[0][:, 0]
    plain, shaped = load_value_source(ppo_policy), load_value_source(shaped_policy)
    assert isinstance(shaped, ModuleValue)
    phi = np.empty((after.shape[0], 4))
    potentials(after, tab, phi)
    np.testing.assert_allclose(shaped.seat_values(after, tab), plain.seat_values(after, tab) + 2.0 * phi, atol=1e-5)
    finished = after[:1].copy()
    finished[0, PLACES:PLACES + 4] = (2, 0, 0, 0)  # seat 0 came second, the others still play
    assert plain.seat_values(finished, tab)[0, 0] == pytest.approx(-1 / 3)


@pytest.mark.parametrize("spec, message", [
    ("mcts:{p}?sims=0", "sims=0 is not allowed: give a whole number in 1..4096"),
    ("mcts:{p}?c=-1", "c=-1 is not allowed"),
    ("mcts:{p}?depth=2", "unknown option 'depth'"),
    ("search:{p}?depth=7", "depth=7 is not allowed: give a whole number in 1..3"),
    ("search:{p}?opponent=nobody", "opponent='nobody' is not allowed"),
    ("search:{p}?depth=1&opponent=nobody", "opponent='nobody' is not allowed"),
    ("search:/no/such/run?depth=2", "value source '/no/such/run' does not exist"),
    ("mcts:", "names no policy"),
    ("mcts:{p}?value=/no/such/value", "value source '/no/such/value' does not exist"),
])
def test_bad_lookahead_specs_are_one_line(ppo_policy, spec, message):
    with pytest.raises(PlayerSpecError, match=message) as err:
        make_player(spec.format(p=ppo_policy))
    assert "\n" not in str(err.value)


def test_mcts_refuses_a_policy_without_a_critic(tmp_path):

    from ludo_env.core import ACTION_SPACE, observation_space
    from policies.checkpoints import write_policy
    from policies.modules import module_spec

    config = {"obs": "egocentric", "variant": "classic", "players": 4, "network": {"kind": "mlp", "hidden": [8]},
              "dueling": False, "double_q": True}
    module = module_spec("dqn", observation_space("egocentric"), ACTION_SPACE, config).build()
    folder = write_policy(tmp_path / "dqn", "dqn", config, module.state_dict())
    with pytest.raises(PlayerSpecError, match="MCTS needs a PPO policy"):
        make_player(f"mcts:{folder}")
    states, tab, masks = mid_game_positions(games=6)  # but its max-Q is a value to search with
    chosen = make_player(f"search:{folder}?depth=2").act(states, tab, masks)
    assert np.all(masks[np.arange(len(chosen)), chosen] == 1)


def test_policy_opponents_over_a_ppo_policy_weigh_replies_by_its_own_actor(ppo_policy):
    from ludo_env.engine.afterstates import expand_moves
    from ludo_env.engine.layout import CURRENT
    from tests.agents.test_search import reference_after

    states, tab, masks = mid_game_positions(games=3, plies=30)
    player = make_player(f"search:{ppo_policy}?depth=2&opponent=policy")
    source = player.source
    assert player.policy is source and source.has_policy
    got = player.move_values(states, tab)
    for b in range(states.shape[0]):
        after, legal, _ = expand_moves(states[b:b + 1], tab)
        me = int(states[b, CURRENT])
        for t in np.flatnonzero(legal[0]):
            want = reference_after(source, after[0, t], tab, 1, me, "policy", source)[me]
            assert got[b, t] == pytest.approx(want, rel=1e-4, abs=1e-5)
    chosen = player.act(states, tab, masks)
    assert np.all(masks[np.arange(len(chosen)), chosen] == 1)


def test_policy_probabilities_are_the_actors_softmax_over_legal_tokens(ppo_policy):
    states, tab, masks = mid_game_positions(games=40)
    source = load_value_source(ppo_policy)
    shares = source.probabilities(states, tab, masks)
    assert shares.shape == masks.shape and np.allclose(shares.sum(axis=1), 1.0)
    assert np.all(shares[masks == 0] == 0) and np.all(shares[masks == 1] > 0)
    greedy = make_player(f"ckpt:{ppo_policy}").act(states, tab, masks)  # the most likely token is the greedy one
    assert np.array_equal(shares.argmax(axis=1), greedy)


def test_policy_opponents_need_a_ppo_policy(tmp_path):
    from ludo_env.core import ACTION_SPACE, observation_space
    from policies.checkpoints import write_policy
    from policies.modules import module_spec

    config = {"obs": "egocentric", "variant": "classic", "players": 4, "network": {"kind": "mlp", "hidden": [8]},
              "dueling": False, "double_q": True}
    module = module_spec("dqn", observation_space("egocentric"), ACTION_SPACE, config).build()
    folder = write_policy(tmp_path / "dqn", "dqn", config, module.state_dict())
    with pytest.raises(PlayerSpecError, match=r"opponent=policy moves the other seats by a PPO policy's "
                                              r"probabilities, and .* has none \(a dqn policy\)") as err:
        make_player(f"search:{folder}?depth=2&opponent=policy")
    assert "\n" not in str(err.value)


def test_lookahead_players_join_a_league_by_spec(tmp_path, ppo_policy):
    from ludo_env.rules import Rules
    from policies.league.league import League, LeagueSettings
    from policies.league.store import LeagueStore

    league = League(LeagueStore.open(tmp_path / "league.db"), LeagueSettings(players=4, with_main=False), "classic")
    member = league.add_external(f"search:{ppo_policy}?depth=2")
    again = league.add_external(f"search:{ppo_policy.resolve()}?depth=2")
    assert again.id == member.id and member.spec.startswith(f"search:{ppo_policy.resolve()}")
    assert member.name.endswith(":search-depth=2")
    mcts = league.add_external(f"mcts:{ppo_policy}?sims=2")
    states, tab, masks = mid_game_positions(games=4)
    for m in (member, mcts):
        player = league.player(m)
        assert player.name == m.name
        chosen = player.act(states, tab, masks)
        assert np.all(masks[np.arange(len(chosen)), chosen] == 1)
    result = league.rating_round(Rules.load("classic"), seed=1, lineups=[(member.id, mcts.id) +
                                 tuple(m.id for m in league.store.members(kinds=["bot"])[:2])], games_per_lineup=4)
    assert result.games == 4


def test_an_unquoted_search_spec_on_the_command_line_says_to_quote_it():
    import launch.evaluate  # noqa: F401  (registers the evaluate schema)
    from launch.cli import UserError, compose

    with pytest.raises(UserError, match=r"quote a player spec that has \?, & or = in it") as err:
        compose("evaluate", ["players=[search:runs/td?depth=2&opponent=paranoid,random,random,random]"])
    assert "\n" not in str(err.value)
    config = compose("evaluate", ['players=["search:runs/td?depth=2&opponent=paranoid",random,random,random]'])
    assert config.players[0] == "search:runs/td?depth=2&opponent=paranoid"
