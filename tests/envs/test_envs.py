"""The three envs: API checkers, masks, rewards over whole games, forced moves, truncation, bad settings."""
from __future__ import annotations

import numpy as np
import pytest

from ludo_env.config import EnvConfigError
from ludo_env.multi_agent_env import LudoMultiAgentEnv
from ludo_env.rewards import RewardConfig, RewardConfigError
from ludo_env.rules import Rules, RulesError, available_variants


def play_multi_agent(env: LudoMultiAgentEnv, seed: int, pick=lambda mask, rng: rng.choice(np.flatnonzero(mask))):
    """Play one episode with random legal moves; per seat: the list of rewards, and the last infos."""
    rng = np.random.default_rng(seed)
    obs, infos = env.reset(seed=seed)
    rewards: dict[str, list[float]] = {}
    while True:
        assert len(obs) == 1, "only the seat to move observes"
        (agent, o), = obs.items()
        assert env.observation_spaces[agent].contains(o)
        assert o["action_mask"].any()
        obs, rew, term, trunc, infos = env.step({agent: int(pick(o["action_mask"], rng))})
        for a, r in rew.items():
            rewards.setdefault(a, []).append(r)
        if term["__all__"] or trunc["__all__"]:
            return rewards, infos, term, trunc


def test_gymnasium_env_passes_check_env_and_plays_to_the_end():
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env

    import ludo_env.gym_env  # noqa: F401  (registers ludo_env/Ludo-v0)
    from policies.envs import build_opponent

    env = gym.make("ludo_env/Ludo-v0", variant="classic", opponents=["hybrid", "random", "random"],
                   opponent_factory=build_opponent, obs="seed001_flags60")
    check_env(env.unwrapped, skip_render_check=True)
    seats = set()
    for episode in range(4):
        obs, info = env.reset(seed=episode if episode == 0 else None)
        seats.add(info["seat"])
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, info = env.step(int(np.flatnonzero(obs["action_mask"])[0]))
            total += reward
            done = terminated or truncated
            assert not info["illegal_action"]
        assert total in (1.0, -1 / 3) and info["places"][info["seat"]] >= 1
    assert seats == {0, 1, 2, 3}, "the learner's seat rotates"


def test_gymnasium_env_fixed_seat_and_illegal_action_reported():
    from policies.envs import make_env

    env = make_env(variant="ucsd", opponents=["fast"], seat=1)
    obs, info = env.reset(seed=3)
    assert info["seat"] == 1
    illegal = int(np.flatnonzero(obs["action_mask"] == 0)[0]) if not obs["action_mask"].all() else None
    if illegal is not None:
        _, _, _, _, info = env.step(illegal)
        assert info["illegal_action"]


def test_pettingzoo_api_test():
    from pettingzoo.test import api_test

    from ludo_env.pettingzoo_env import LudoAEC

    api_test(LudoAEC(variant="classic", players=4), num_cycles=2000, verbose_progress=False)
    api_test(LudoAEC(variant="classic", players=2, reward="potential"), num_cycles=2000, verbose_progress=False)


@pytest.mark.parametrize("variant,players", [(name, players) for name in available_variants()
                                             for players in Rules.load(name).allowed_players])
def test_multi_agent_episode_ends_with_every_seat_paid(variant, players):
    env = LudoMultiAgentEnv({"variant": variant, "players": players})
    rewards, infos, term, _ = play_multi_agent(env, seed=11)
    assert term["__all__"]
    finals = {a: r[-1] for a, r in rewards.items()}
    assert set(finals) == {f"seat_{s}" for s in range(players)}
    assert sorted(finals.values())[-1] == 1.0 and sum(finals.values()) == pytest.approx(0.0)
    info = next(iter(infos.values()))
    assert info["illegal_actions"] == 0 and sorted(info["places"])[0] == 1


def test_forced_moves_are_played_inside_the_env_and_counted():
    on = LudoMultiAgentEnv({"seed": 1})
    off = LudoMultiAgentEnv({"seed": 1, "auto_forced_moves": False})
    for env in (on, off):
        obs, _ = env.reset(seed=4)
        forced_seen = 0
        while True:
            (agent, o), = obs.items()
            forced_seen += int(o["action_mask"].sum() == 1)
            obs, _, term, trunc, infos = env.step({agent: int(np.flatnonzero(o["action_mask"])[0])})
            if term["__all__"] or trunc["__all__"]:
                break
        if env is on:
            assert forced_seen == 0 and next(iter(infos.values()))["forced_moves"] > 0
        else:
            assert forced_seen > 0 and next(iter(infos.values()))["forced_moves"] == 0


def test_turn_limit_truncates_without_end_pay():
    env = LudoMultiAgentEnv({"max_plies": 30})
    rewards, infos, term, trunc = play_multi_agent(env, seed=2)
    assert trunc["__all__"] and not term["__all__"]
    assert all(r[-1] == 0.0 for r in rewards.values())


def test_illegal_action_is_replaced_and_counted():
    env = LudoMultiAgentEnv({"seed": 0})
    obs, _ = env.reset(seed=0)
    while True:
        (agent, o), = obs.items()
        if not o["action_mask"].all():
            break
        obs, *_ = env.step({agent: 0})
    bad = int(np.flatnonzero(o["action_mask"] == 0)[0])
    obs, _, _, _, infos = env.step({agent: bad})
    assert next(iter(infos.values()))["illegal_actions"] == 1


def test_potential_shaping_telescopes_over_a_whole_game():
    """Per seat: sum_k gamma**k r_k over the rewards after its first decision equals
    gamma**(N-1) * end_pay - coef * phi(first decision), whatever was played: shaping only moves reward in time."""
    from ludo_env.engine import compile_rules
    from ludo_env.rewards import seat_potential

    gamma, coef = 0.9, 2.0
    cfg = RewardConfig(kind="potential", gamma=gamma, coef=coef)
    for seed in range(4):
        env = LudoMultiAgentEnv({"reward": cfg.to_dict()})
        tab = compile_rules(env.games.rules)
        rng = np.random.default_rng(seed)
        obs, _ = env.reset(seed=seed)
        first_phi: dict[str, float] = {}
        after_first: dict[str, list[float]] = {}
        done = False
        while not done:
            (agent, o), = obs.items()
            if agent not in first_phi:
                first_phi[agent] = seat_potential(o["state"].astype(np.int16), tab, int(agent[-1]))
                after_first[agent] = []
            obs, rew, term, trunc, infos = env.step({agent: int(rng.choice(np.flatnonzero(o["action_mask"])))})
            for a, r in rew.items():
                if a in after_first:
                    after_first[a].append(r)
            done = term["__all__"] or trunc["__all__"]
        places = np.array(next(iter(infos.values()))["places"])
        end_pay = cfg.end_rewards(places, env.players)
        for agent, rewards in after_first.items():
            n = len(rewards)
            discounted = sum(r * gamma**k for k, r in enumerate(rewards))
            expected = gamma ** (n - 1) * end_pay[int(agent[-1])] - coef * first_phi[agent]
            assert discounted == pytest.approx(expected, abs=1e-9), (seed, agent)
        assert any(len(set(np.round(r, 9))) > 2 for r in after_first.values()), "shaping pays along the way"


def test_dense_rewards_pay_seed000_events():
    env = LudoMultiAgentEnv({"reward": "seed000_dense"})
    rewards, *_ = play_multi_agent(env, seed=9)
    paid = np.concatenate([np.asarray(r[:-1]) for r in rewards.values()])
    assert paid.max() >= 100.0  # some decision was paid for a token reaching home
    assert (paid > 0).mean() > 0.5


def test_rank_based_end_pay():
    cfg = RewardConfig(rank_based=True, win=1.0, loss=-1.0)
    np.testing.assert_allclose(cfg.end_rewards(np.array([2, 1, 4, 3]), 4), [1 / 3, 1.0, -1.0, -1 / 3])
    np.testing.assert_allclose(RewardConfig().end_rewards(np.array([2, 1, 3, 4]), 4), [-1 / 3, 1.0, -1 / 3, -1 / 3])


@pytest.mark.parametrize(
    "config,error,words",
    [
        ({"variant": "chess"}, RulesError, "unknown variant"),
        ({"players": 5}, RulesError, "players=5"),
        ({"obs": "pixels"}, ValueError, "choose one of egocentric"),
        ({"reward": "shiny"}, RewardConfigError, "choose one of sparse"),
        ({"reward": {"kind": "potential", "gamma": 2}}, RewardConfigError, "gamma"),
        ({"colour": "red"}, EnvConfigError, "unknown env setting 'colour'"),
    ],
)
def test_bad_settings_fail_with_one_line(config, error, words):
    with pytest.raises(error) as err:
        LudoMultiAgentEnv(config)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_vector_env_steps_many_games_with_same_step_autoreset():
    import gymnasium as gym

    import ludo_env.gym_env  # noqa: F401  (registers ludo_env/Ludo-v0)
    from policies.envs import build_opponent

    def run(seed):
        envs = gym.make_vec("ludo_env/Ludo-v0", num_envs=32, vectorization_mode="vector_entry_point",
                            opponents=["hybrid", "random", "random"], opponent_factory=build_opponent)
        obs, info = envs.reset(seed=seed)
        trace, ends, seats = [], [], set()
        for _ in range(60):
            assert envs.observation_space.contains(obs) and obs["action_mask"].any(axis=1).all()
            actions = obs["action_mask"].argmax(axis=1)
            obs, rewards, terminated, truncated, info = envs.step(actions)
            assert not info["illegal_action"].any()
            ended = terminated | truncated
            if ended.any():
                assert info["_final_obs"].tolist() == ended.tolist()
                for b in np.flatnonzero(ended):
                    assert not info["final_obs"][b]["action_mask"].any()  # the ended game has no decision left
                    assert info["places"][b][info["final_seat"][b]] >= 1
                    ends.append(rewards[b])
            seats.update(info["seat"].tolist())
            trace.append(rewards.copy())
        return np.array(trace), ends, seats

    trace, ends, seats = run(5)
    assert len(ends) > 32 and set(np.round(ends, 9)) <= {1.0, round(-1 / 3, 9)}
    assert seats == {0, 1, 2, 3}
    np.testing.assert_array_equal(trace, run(5)[0])  # a seeded reset replays


def test_the_gym_envs_take_players_and_refuse_a_spec_without_a_factory_in_one_line():
    from ludo_env.gym_env import LudoEnv
    from ludo_env.vector_env import LudoVectorEnv
    from policies.bots import Bot

    env = LudoEnv(opponents=[Bot("fast"), Bot("random", seed=2)])  # players need no factory
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    for make in (LudoEnv, lambda **kw: LudoVectorEnv(4, **kw)):
        with pytest.raises(ValueError, match="opponent 'hybrid' is not a player") as err:
            make(opponents=["hybrid"])
        assert "\n" not in str(err.value) and "opponent_factory=policies.envs.build_opponent" in str(err.value)


def play_gym_to_the_end(env, seed: int) -> tuple[list, dict]:
    """One episode with the first legal token each turn: (action, reward, engine row) per step, and the last info."""
    obs, info = env.reset(seed=seed)
    steps, done = [], False
    while not done:
        action = int(np.flatnonzero(obs["action_mask"])[0])
        obs, reward, terminated, truncated, info = env.step(action)
        steps.append((action, reward, obs["state"].tolist()))
        done = terminated or truncated
    return steps, info


def test_gym_make_with_no_arguments_plays_against_the_random_bot():
    """The first line a user tries: no opponents, no factory. The default opponents are the engine's random
    player, which plays the same moves as the agents layer's ``random`` bot, so the two envs replay each other."""
    import gymnasium as gym

    import ludo_env.gym_env  # noqa: F401  (registers ludo_env/Ludo-v0)
    from policies.envs import make_env

    env = gym.make("ludo_env/Ludo-v0")
    steps, info = play_gym_to_the_end(env, seed=11)
    assert steps and steps[-1][1] in (1.0, -1 / 3) and sorted(info["places"]) == [1, 2, 3, 4]
    assert play_gym_to_the_end(make_env(), seed=11) == (steps, info)


def test_gym_make_vec_with_no_arguments_plays_whole_games():
    import gymnasium as gym

    import ludo_env.gym_env  # noqa: F401  (registers ludo_env/Ludo-v0)
    from ludo_env.vector_env import LudoVectorEnv

    envs = gym.make_vec("ludo_env/Ludo-v0", num_envs=8)
    assert isinstance(envs, LudoVectorEnv)
    obs, info = envs.reset(seed=2)
    ended = 0
    for _ in range(400):
        obs, rewards, terminated, truncated, info = envs.step(obs["action_mask"].argmax(axis=1))
        ended += int((terminated | truncated).sum())
    assert ended >= 8


def test_pettingzoo_env_with_no_arguments_plays_the_standard_loop():
    from ludo_env.pettingzoo_env import LudoAEC

    env = LudoAEC()
    env.reset(seed=4)
    rng = np.random.default_rng(4)
    moves = 0
    for _agent in env.agent_iter():
        observation, reward, termination, truncation, info = env.last()
        if termination or truncation:
            action = None
        else:
            action = int(rng.choice(np.flatnonzero(observation["action_mask"])))
            moves += 1
        env.step(action)
    assert moves > 0 and not env.agents
    assert sorted(info["places"]) == [1, 2, 3, 4] and env.possible_agents == [f"seat_{s}" for s in range(4)]


def test_gym_env_opponents_can_be_py_bots():
    from policies.envs import make_env

    env = make_env(variant="classic", opponents=["py:tests.evaluate.example_bot:FurthestBehind"])
    obs, info = env.reset(seed=1)
    done = False
    while not done:
        obs, reward, terminated, truncated, info = env.step(int(np.flatnonzero(obs["action_mask"])[-1]))
        done = terminated or truncated
    assert terminated and reward in (1.0, -1.0) and sorted(info["places"]) == [1, 2]
