"""Every env x every encoder x every variant: a few random legal steps each, in the manner of PettingZoo's
`api_test` and pgx's `api_test`. The encoder and variant lists come from their registries, so a new encoder
or variant file is checked here without an edit.

Each step checks: the observation is in the space, the mask is int8 ``(4,)`` (batched for the vector env)
with a legal move for the seat to move, rewards are finite, and a finished game terminates and resets.
"""
from __future__ import annotations

import zlib

import numpy as np
import pytest

from ludo_env.core import seat_agent
from ludo_env.gym_env import LudoEnv
from ludo_env.multi_agent_env import LudoMultiAgentEnv
from ludo_env.observations import ENCODERS, obs_dim
from ludo_env.pettingzoo_env import LudoAEC
from ludo_env.rules import MAX_TOKENS, Rules, available_variants
from ludo_env.vector_env import LudoVectorEnv
from policies.bots import Bot

STEPS = 12
MAX_PLIES = 40  # short games, so the turn limit and the end of a game are reached within the steps


def check_obs(space, obs, obs_name: str) -> None:
    assert space.contains(obs)
    assert obs["observations"].shape == (obs_dim(obs_name),) and obs["observations"].dtype == np.float32
    assert obs["action_mask"].shape == (MAX_TOKENS,) and obs["action_mask"].dtype == np.int8


def legal_choice(rng: np.random.Generator, mask: np.ndarray) -> int:
    assert mask.any(), "the seat to move has a legal token"
    return int(rng.choice(np.flatnonzero(mask)))


def run_gym(variant: str, obs_name: str, rng: np.random.Generator) -> None:
    opponents = [Bot("random", seed=i) for i in range(Rules.load(variant).players - 1)]
    env = LudoEnv(variant=variant, opponents=opponents, obs=obs_name, max_plies=MAX_PLIES)
    obs, info = env.reset(seed=int(rng.integers(1000)))
    for _ in range(STEPS):
        check_obs(env.observation_space, obs, obs_name)
        obs, reward, terminated, truncated, info = env.step(legal_choice(rng, obs["action_mask"]))
        assert np.isfinite(reward)
        if terminated or truncated:
            assert not obs["action_mask"].any()
            obs, info = env.reset()


def run_vector(variant: str, obs_name: str, rng: np.random.Generator) -> None:
    opponents = [Bot("random", seed=i) for i in range(Rules.load(variant).players - 1)]
    envs = LudoVectorEnv(3, variant=variant, opponents=opponents, obs=obs_name, max_plies=MAX_PLIES)
    obs, info = envs.reset(seed=int(rng.integers(1000)))
    for _ in range(STEPS):
        assert envs.observation_space.contains(obs)
        assert obs["action_mask"].shape == (3, MAX_TOKENS) and obs["action_mask"].dtype == np.int8
        actions = np.array([legal_choice(rng, m) for m in obs["action_mask"]])  # same-step autoreset
        obs, rewards, terminated, truncated, info = envs.step(actions)
        assert np.isfinite(rewards).all() and terminated.dtype == bool and truncated.dtype == bool


def run_rllib(variant: str, obs_name: str, rng: np.random.Generator) -> None:
    env = LudoMultiAgentEnv({"variant": variant, "obs": obs_name, "max_plies": MAX_PLIES})
    obs, infos = env.reset(seed=int(rng.integers(1000)))
    for _ in range(STEPS):
        (agent, o), = obs.items()  # one seat decides at a time
        check_obs(env.observation_spaces[agent], o, obs_name)
        obs, rewards, terminateds, truncateds, infos = env.step({agent: legal_choice(rng, o["action_mask"])})
        assert all(np.isfinite(r) for r in rewards.values())
        if terminateds["__all__"] or truncateds["__all__"]:
            assert obs == {} and set(rewards) <= set(env.possible_agents)
            obs, infos = env.reset()


def run_pettingzoo(variant: str, obs_name: str, rng: np.random.Generator) -> None:
    env = LudoAEC(variant=variant, obs=obs_name, max_plies=MAX_PLIES)
    env.reset(seed=int(rng.integers(1000)))
    assert env.possible_agents == [seat_agent(s) for s in range(env.players)]
    for _ in range(STEPS):
        agent = env.agent_selection
        o, reward, termination, truncation, _ = env.last()
        check_obs(env.observation_space(agent), o, obs_name)
        assert np.isfinite(reward)
        if termination or truncation:
            env.step(None)
            if not env.agents:
                env.reset()
            continue
        env.step(legal_choice(rng, o["action_mask"]))


ENVS = {"gym": run_gym, "vector": run_vector, "rllib_multi_agent": run_rllib, "pettingzoo": run_pettingzoo}


@pytest.mark.parametrize("variant", available_variants())
@pytest.mark.parametrize("obs_name", ENCODERS)
@pytest.mark.parametrize("env", ENVS)
def test_env_conformance(env, obs_name, variant):
    ENVS[env](variant, obs_name, np.random.default_rng(zlib.crc32(f"{env}/{obs_name}/{variant}".encode())))
