"""A game's end is paid once: a step after it raises `ResetNeeded` in every env until reset; the vector env
autoresets and pays each game's end once; per-game seed lists for the vector env."""
from __future__ import annotations

import numpy as np
import pytest
from gymnasium.error import ResetNeeded

from ludo_env.multi_agent_env import LudoMultiAgentEnv
from policies.envs import make_env, make_vector_env


def first_legal(mask) -> int:
    return int(np.flatnonzero(mask)[0])


def test_gym_env_refuses_a_step_after_the_end_and_before_reset():
    env = make_env(variant="quick", opponents=["random"])
    with pytest.raises(ResetNeeded, match="call reset"):
        env.step(0)
    obs, _ = env.reset(seed=1)
    total, done = 0.0, False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(first_legal(obs["action_mask"]))
        total += reward
        done = terminated or truncated
    assert total in (1.0, -1.0)
    for _ in range(3):  # before the fix each of these paid the end reward again
        with pytest.raises(ResetNeeded) as err:
            env.step(0)
        assert "\n" not in str(err.value)
    obs, _ = env.reset()
    env.step(first_legal(obs["action_mask"]))  # a new game steps again


def test_multi_agent_env_refuses_a_step_after_the_end():
    env = LudoMultiAgentEnv({"variant": "quick", "players": 2})
    obs, _ = env.reset(seed=1)
    while True:
        (agent, o), = obs.items()
        obs, rewards, term, trunc, _ = env.step({agent: first_legal(o["action_mask"])})
        if term["__all__"] or trunc["__all__"]:
            break
    assert sorted(rewards.values()) == [-1.0, 1.0]
    with pytest.raises(ResetNeeded, match="call reset"):
        env.step({agent: 0})
    env.reset()


def test_pettingzoo_env_refuses_a_step_once_every_agent_left():
    pytest.importorskip("pettingzoo")
    from ludo_env.pettingzoo_env import LudoAEC

    env = LudoAEC(variant="quick", players=2)
    env.reset(seed=1)
    paid = {a: 0.0 for a in env.possible_agents}
    for _agent in env.agent_iter(10_000):
        o, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else first_legal(o["action_mask"]))
        for a, r in env.rewards.items():
            paid[a] += r
    assert env.agents == [] and sorted(paid.values()) == [-1.0, 1.0]
    with pytest.raises(ResetNeeded, match="call reset"):
        env.step(None)


def test_vector_env_autoreset_pays_each_end_once():
    envs = make_vector_env(num_envs=8, variant="quick", opponents=["random"], reward="sparse")
    obs, _ = envs.reset(seed=2)
    ends = 0
    for _ in range(150):
        obs, rewards, terminated, truncated, _ = envs.step(obs["action_mask"].argmax(axis=1))
        ended = terminated | truncated
        assert np.all(rewards[~ended] == 0), "sparse reward: nothing is paid outside a game's last step"
        assert set(rewards[terminated].tolist()) <= {1.0, -1.0}
        ends += int(terminated.sum())
    assert ends > 8


def test_vector_env_takes_one_seed_per_game():
    envs = make_vector_env(num_envs=3, variant="quick", opponents=["random"], seat=0)
    obs, _ = envs.reset(seed=[7, 7, 8])
    first = obs["state"].copy()
    # games seeded alike start alike; the same list replays the same games
    np.testing.assert_array_equal(first[0], first[1])
    np.testing.assert_array_equal(envs.reset(seed=[7, 7, 8])[0]["state"], first)
    envs.reset(seed=[None, 1, None])  # None: that game unseeded, as gymnasium allows
    with pytest.raises(ValueError, match="got 2 seeds for 3 games") as err:
        envs.reset(seed=[1, 2])
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="ints >= 0 or None"):
        envs.reset(seed=[1, "x", 3])
