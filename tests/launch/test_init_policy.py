"""``init=<policy>``: main starts from a saved policy's weights, on the learner and on every EnvRunner; a policy that
does not fit the run is refused in one line before Ray starts; a resume ignores it."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import ray
import torch

import launch.training.trainers.rllib as train
from launch.cli import UserError
from launch.training import build
from ludo_env.core import ACTION_SPACE, observation_space
from policies.checkpoints import WEIGHTS, write_policy
from policies.league.pool import MAIN
from policies.modules import module_spec
from tests.launch.configs import flat_weights, script_env, train_config

ROOT = Path(__file__).resolve().parents[2]


def policy_of(cfg, dest: Path, seed: int = 123) -> Path:
    """A policy folder holding main as `cfg` builds it, with weights drawn from `seed`."""
    model_config = build.main_model_config(cfg)
    torch.manual_seed(seed)
    module = module_spec(cfg.algo.name, observation_space(cfg.obs.name), ACTION_SPACE, model_config).build()
    return write_policy(dest, cfg.algo.name, model_config, module.state_dict())


def targets_follow_their_networks(learner) -> bool:
    """Whether every target network of main on `learner` (DQN's; PPO has none) equals the network it follows."""
    module = learner.module[MAIN].unwrapped()
    return all(torch.equal(a, b) for network, target in getattr(module, "get_target_network_pairs", lambda: [])()
               for a, b in zip(network.state_dict().values(), target.state_dict().values()))


@pytest.mark.parametrize("exp", ["smoke", "smoke_dqn"])
def test_main_starts_with_the_policys_weights_on_the_learner_and_every_env_runner(tmp_path, exp):
    base = (f"+exp={exp}", "resources.env_runners=1", "wandb.mode=disabled")
    policy = policy_of(train_config(*base), tmp_path / "init")
    cfg = train_config(*base, f"init={policy}", run_dir=str(tmp_path / "run"))
    evaluator = train.PanelEvaluator(cfg)
    expected = flat_weights(evaluator.weights_of(policy))
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    algo = build.build_algorithm_config(cfg).build_algo()
    try:
        fresh = flat_weights(algo.learner_group.get_weights([MAIN])[MAIN])
        assert any(not np.array_equal(fresh[k], expected[k]) for k in expected)  # the test can tell them apart
        assert train.start_from_policy(algo, cfg, evaluator) == policy
        learner = flat_weights(algo.learner_group.get_weights([MAIN])[MAIN])
        runners = algo.env_runner_group.foreach_env_runner(lambda runner: runner.module[MAIN].get_state(),
                                                           local_env_runner=True)
        assert len(runners) == 2  # the local runner and the remote one
        for copy in (learner, *map(flat_weights, runners)):
            assert expected.keys() <= copy.keys()  # the learner's DQN also holds its target networks
            for key in expected:
                np.testing.assert_array_equal(copy[key], expected[key], err_msg=key)
        assert [r.get() for r in algo.learner_group.foreach_learner(targets_follow_their_networks)] == [True]
    finally:
        algo.stop()
        ray.shutdown()


@pytest.mark.parametrize("run, policy_from, message", [
    ((), ("algo=dqn",), "a dqn policy cannot start main of a ppo run: give a ppo policy, or train with algo=dqn"),
    (("network.hidden=[32]",), (), ("the policy was built with network.hidden=[256,256] and this run gives "
                                    "network.hidden=[32]: add network.hidden=[256,256], or give a policy")),
    (("variant.players=2",), (), ("the policy was built with variant.players=4, players=4 and this run gives "
                                  "variant.players=2, players=2")),
    (("obs=afterstates",), (), "the policy was built with obs=egocentric and this run gives obs=afterstates"),
])
def test_a_policy_that_does_not_fit_the_run_is_one_line(tmp_path, run, policy_from, message):
    policy = policy_of(train_config("+exp=smoke", *policy_from), tmp_path / "init")
    with pytest.raises(UserError) as err:
        train.check(train_config("+exp=smoke", *run, f"init={policy}"))
    assert message in str(err.value) and "\n" not in str(err.value)
    assert str(err.value).startswith(f"init={policy}: ")
    train.check(train_config("+exp=smoke", *policy_from, f"init={policy}"))  # the run it was made for: fine


def test_a_missing_or_damaged_policy_is_one_line_and_a_resume_ignores_init(tmp_path):
    with pytest.raises(UserError, match=r"^init=/nonexistent/policy: '/nonexistent/policy' holds no policy"):
        train.check(train_config("+exp=smoke", "init=/nonexistent/policy"))
    policy = policy_of(train_config("+exp=smoke"), tmp_path / "init")
    (policy / WEIGHTS).write_bytes(b"")
    with pytest.raises(UserError, match="is damaged: it is empty") as err:
        train.check(train_config("+exp=smoke", f"init={policy}"))
    assert "\n" not in str(err.value)
    # the checkpoint's main wins on a resume: init is not even read
    train.check(train_config("+exp=smoke", "init=/nonexistent/policy", f"resume={tmp_path}"))


def test_init_of_a_loop_without_rllib_is_one_line():
    with pytest.raises(ValueError, match=r"^init=x starts an RLlib algorithm's main .*not algo=ga: drop init$"):
        train_config("+exp=ga_ann", "init=x")


def test_the_command_refuses_a_policy_that_does_not_fit_before_a_run_folder_exists(tmp_path):
    policy = policy_of(train_config("+exp=smoke", "algo=dqn"), tmp_path / "init")
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "launch/train.py", "+exp=smoke", f"init={policy}",
                           f"hydra.run.dir={run}"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=script_env(), check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        (f"error: init={policy}: a dqn policy cannot start main of a ppo run: give a ppo policy, or train with "
         "algo=dqn")]
    assert not run.exists()
