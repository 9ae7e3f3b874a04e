"""Every PPO and DQN setting (and the sampler, budget, eval and run ints) has a range: a value outside it stops
`launch/train.py` in one line that names the key, the value and what is allowed, before anything starts.

Composed as the script composes (`launch.cli.compose`, then `launch.training.schema.check`); no Ray."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from launch.training.algorithms import REGISTRY as ALGORITHMS
from launch.training.algorithms import rllib_names
from launch.training.settings import CheckedSettings
from tests.launch.configs import train_config

ROOT = Path(__file__).resolve().parents[2]
PPO, DQN = "+exp=ppo_selfplay", "+exp=dqn_selfplay"

BAD = [
    (PPO, "algo.lr=0", "give a number in (0, 1]"),
    (PPO, "algo.lr=-1", "give a number in (0, 1]"),
    (PPO, "algo.lr=inf", "give a number in (0, 1]"),
    (PPO, "algo.gamma=5", "give a number in [0, 1]"),
    (PPO, "algo.gamma=-0.1", "give a number in [0, 1]"),
    (PPO, "algo.gae_lambda=1.5", "give a number in [0, 1]"),
    (PPO, "algo.train_batch_size=0", "give a number >= 1"),
    (PPO, "algo.minibatch_size=0", "give a number >= 1"),
    (PPO, "algo.minibatch_size=100000", "give a number in [1, algo.train_batch_size="),
    (PPO, "algo.num_epochs=0", "give a number >= 1"),
    (PPO, "algo.clip_param=0", "give a number in (0, 10]"),
    (PPO, "algo.vf_loss_coeff=-1", "give a number in [0, 1000000]"),
    (PPO, "algo.vf_clip_param=0", "give a number in (0, 1000000]"),
    (PPO, "algo.entropy_coeff=-0.01", "give a number in [0, 1000000]"),
    (PPO, "algo.kl_coeff=-1", "give a number in [0, 1000000]"),
    (PPO, "algo.grad_clip=0", "give a number in (0, 1000000] or null"),
    (DQN, "algo.lr=-1", "give a number in (0, 1]"),
    (DQN, "algo.gamma=1.5", "give a number in [0, 1]"),
    (DQN, "algo.train_batch_size=0", "give a number >= 1"),
    (DQN, "algo.train_batch_size=300000", "give a number in [1, algo.buffer_capacity="),
    (DQN, "algo.n_step=0", "give a number >= 1"),
    (DQN, "algo.num_atoms=0", "give a number in [1, 256]"),
    (DQN, "algo.num_atoms=1000", "give a number in [1, 256]"),
    (DQN, "algo.v_min=-inf", "give a number in [-1000000, 1000000]"),
    (DQN, "algo.advantage_learning=1", "give a number in [0, 1)"),
    (DQN, "algo.advantage_learning=-0.1", "give a number in [0, 1)"),
    (DQN, "algo.target_network_update_freq=0", "give a number >= 1"),
    (DQN, "algo.tau=0", "give a number in (0, 1]"),
    (DQN, "algo.tau=2", "give a number in (0, 1]"),
    (DQN, "algo.buffer_capacity=0", "give a number >= 1"),
    (DQN, "algo.prioritized_alpha=-1", "give a number in [0, 10]"),
    (DQN, "algo.prioritized_beta=2", "give a number in [0, 1]"),
    (DQN, "algo.epsilon_start=1.5", "give a number in [0, 1]"),
    (DQN, "algo.epsilon_end=-0.1", "give a number in [0, 1]"),
    (DQN, "algo.epsilon_steps=0", "give a number >= 1"),
    (DQN, "algo.learning_starts=-1", "give a number >= 0"),
    (DQN, "algo.training_intensity=0", "give a number in (0, 10000] or null"),
    (DQN, "algo.rollout_fragment_length=0", "give a number >= 1"),
    (DQN, "algo.grad_clip=-1", "give a number in (0, 1000000] or null"),
    (DQN, "algo.steps_per_iteration=0", "give a number >= 1"),
    (DQN, "algo.replay=fifo", "choose prioritized or uniform"),
    (DQN, "algo.td_error_loss=l1", "choose huber or mse"),
    (PPO, "sampler.games=0", "give a number in [1, 65536]"),
    (PPO, "budget.iterations=-1", "give a number >= 0"),
    (DQN, "budget.env_steps=-5", "give a number >= 0"),
    (PPO, "eval.every=-1", "give a number >= 0"),
    (PPO, "eval.games=0", "give a number in [1, 10000000]"),
    (DQN, "eval.final_games=-1", "give a number in [0, 10000000]"),
    (PPO, "eval.seed=-1", "give a number >= 0"),
    (DQN, "seed=-1", "give a number >= 0"),
    (PPO, "max_plies=0", "give a number in [1, 2147483647]"),
]


@pytest.mark.parametrize("exp,override,allowed", BAD, ids=[f"{e[5:8]}:{o}" for e, o, _ in BAD])
def test_a_setting_out_of_range_is_one_line_naming_key_value_and_range(exp, override, allowed):
    key, _, value = override.partition("=")
    with pytest.raises(ValueError) as err:
        train_config(exp, override)
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"{key}=") and f"{value}" in text.partition(" ")[0], text
    assert f"is not allowed: {allowed}" in text, text


@pytest.mark.parametrize("algo", list(ALGORITHMS))
def test_every_numeric_and_named_setting_of_an_algorithm_has_a_range_or_choices(algo):
    schema = ALGORITHMS[algo].settings
    assert issubclass(schema, CheckedSettings)
    types = typing.get_type_hints(schema)
    linked = {"elitism", "hidden"}  # ranges that depend on another field, checked in `check_more`
    for f in dataclasses.fields(schema):
        kind = types[f.name]
        args = set(typing.get_args(kind)) - {type(None)} or {kind}
        if args & {int, float} and f.name not in linked:
            assert f.name in schema.RANGES, f"{algo}: algo.{f.name} has no range"
        elif args == {str} and algo in rllib_names():
            assert f.name in schema.CHOICES, f"{algo}: algo.{f.name} has no choices"


def test_a_distributional_head_needs_v_min_below_v_max():
    with pytest.raises(ValueError, match=r"^algo.v_min=2 and algo.v_max=2 are not allowed: a distributional head "
                                         r"\(num_atoms=51\) needs v_min < v_max$"):
        train_config(DQN, "algo.num_atoms=51", "algo.v_min=2")
    assert train_config(DQN, "algo.v_min=2").algo.num_atoms == 1  # unused without atoms


@pytest.mark.parametrize("exp", [PPO, DQN])
def test_potential_shaping_at_another_discount_than_the_learners_is_refused(exp):
    with pytest.raises(ValueError, match=r"^reward.gamma=0.99 is not allowed with algo.gamma=0.997: .*"
                                         r"set reward.gamma=0.997$"):
        train_config(exp, "algo.gamma=0.997")
    assert train_config(exp, "algo.gamma=0.997", "reward.gamma=0.997").reward.gamma == 0.997


def test_the_defaults_of_every_experiment_pass():
    for exp in ("ppo_selfplay", "dqn_selfplay", "smoke", "td_lambda", "ga_ann"):
        train_config(f"+exp={exp}")


def test_train_refuses_out_of_range_settings_in_one_line_exit_2():
    proc = subprocess.run([sys.executable, "launch/train.py", "algo.gamma=5", "algo.lr=-1"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: algo.lr=-1.0 is not allowed: give a "
                                                                    "number in (0, 1]"), proc.stderr
