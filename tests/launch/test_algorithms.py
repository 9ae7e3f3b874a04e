"""One entry per RLlib algorithm: the agents' registry, launch's training registry, the settings schemas and the
saved kinds name the same algorithms, each entry is complete, and an unknown name is one line."""
from __future__ import annotations

import pytest

from launch.training import build
from launch.training.schema import ALGO_SCHEMAS, RLLIB_ALGOS, check
from policies.algorithms import REGISTRY, module_algorithm
from policies.saved import REGISTRY as SAVED
from tests.launch.configs import train_config


def test_every_rllib_algorithm_is_declared_once_in_every_registry():
    assert set(REGISTRY) == set(build.RLLIB_TRAINING) == set(RLLIB_ALGOS)
    for name in REGISTRY:
        assert name in ALGO_SCHEMAS, name
        assert SAVED[name].module is not None and SAVED[name].value is not None, name


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_entry_builds_its_module_scores_and_value(name):
    import numpy as np

    from ludo_env.core import ACTION_SPACE, observation_space
    from policies.modules import inference_batch, module_spec

    algorithm = module_algorithm(name)
    cfg = train_config(f"algo={name}")
    module = module_spec(name, observation_space(cfg.obs.name), ACTION_SPACE, build.main_model_config(cfg)).build()
    obs = np.zeros((3, observation_space(cfg.obs.name)["observations"].shape[0]), np.float32)
    batch = inference_batch(obs, np.ones((3, 4), np.int8))
    assert tuple(algorithm.scores(module, batch).shape) == (3, 4)
    assert tuple(algorithm.value(module, batch).shape) == (3,)
    assert algorithm.scores_name and algorithm.scores_meaning
    assert isinstance(algorithm.config_class().model_config, dict)
    assert set(build.rllib_training(name).progress(cfg, 0, {})) <= {"entropy", "epsilon", "q_mean"}


def test_an_unknown_algorithm_is_one_line_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"^unknown RLlib algorithm 'a2c': choose ppo or dqn$"):
        module_algorithm("a2c")
    with pytest.raises(ValueError, match=r"algo.name='a2c' is not an RLlib algorithm here: choose ppo or dqn"):
        build.rllib_training("a2c")
    with pytest.raises(Exception, match="a2c"):
        check(train_config("+exp=smoke", "algo.name=a2c"))
