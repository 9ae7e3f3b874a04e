"""Scale by override: every conf/resources option builds with every experiment, and requests Ray could
never grant stop at start-up in one line instead of waiting forever. No Ray starts here."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import ray

from launch.cli import UserError, compose
from launch.training import build
from tests.launch.configs import train_config

ROOT = Path(__file__).resolve().parents[2]
RESOURCES = sorted(p.stem for p in (ROOT / "conf" / "resources").glob("*.yaml"))
EXPERIMENTS = ["dqn_selfplay", "ppo_selfplay"]


config = train_config


@pytest.fixture
def no_gpu_here(monkeypatch):
    """This machine as a GPU-less laptop with 2 cores on which a fresh local Ray would start."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(build, "local_cpus", lambda: 2.0)
    monkeypatch.setattr(build, "ray_to_join", lambda address: address)
    monkeypatch.setattr(build, "gcs_answers", lambda address: True)


def test_the_profiles_are_the_ones_documented_and_laptop_is_the_default():
    assert RESOURCES == ["cluster_gpu", "laptop", "workstation"]
    choices = compose("config", ["run_dir=/x"], return_hydra_config=True).hydra.runtime.choices
    assert choices.resources == "laptop"
    for name in RESOURCES:  # each file says what it is for and how to use it
        assert (ROOT / "conf" / "resources" / f"{name}.yaml").read_text().startswith("# ")


@pytest.mark.parametrize("resources", RESOURCES)
@pytest.mark.parametrize("exp", EXPERIMENTS)
def test_every_profile_composes_with_every_experiment_and_builds_without_ray(exp, resources):
    cfg = config(f"+exp={exp}", f"resources={resources}")
    res = cfg.resources
    algo_config = build.build_algorithm_config(cfg)
    assert not ray.is_initialized()
    assert algo_config.num_env_runners == res.env_runners
    if cfg.sampler.name == "batched":  # one env copy for RLlib's spaces; the runner plays sampler.games games
        assert algo_config.num_envs_per_env_runner == 1
        assert algo_config.env_config["batch_games"] == cfg.sampler.games
    else:
        assert algo_config.num_envs_per_env_runner == res.envs_per_runner
    assert algo_config.num_cpus_per_env_runner == res.cpus_per_env_runner
    assert algo_config.num_learners == res.learners
    assert algo_config.num_gpus_per_learner == build.gpus_per_learner(cfg)


def test_the_profiles_grow_from_laptop_to_a_gpu_cluster():
    laptop, workstation, cluster = (config(f"resources={r}").resources for r in ("laptop", "workstation",
                                                                                 "cluster_gpu"))
    assert laptop.env_runners < workstation.env_runners < cluster.env_runners
    assert laptop.learners == workstation.learners == 0 and cluster.learners >= 1
    assert laptop.gpus_per_learner == workstation.gpus_per_learner == "auto"
    assert float(cluster.gpus_per_learner) >= 1


def test_laptop_fits_a_two_core_machine_without_a_gpu(no_gpu_here):
    build.check_resources(config())  # before ray.init
    build.check_resources(config(), {"CPU": 2.0, "memory": 1e10})  # after, with what Ray reports
    assert build.gpus_per_learner(config()) == 0.0


@pytest.mark.parametrize("overrides, message", [
    (["resources=cluster_gpu"],
     ("resources.learners=1 x resources.gpus_per_learner=1 needs 1 GPU, but this machine, where a local Ray "
      "would start, has 0")),
    (["resources=cluster_gpu", "resources.gpus_per_learner=auto"],  # now a CPU learner, and 32 runners
     ("resources.env_runners=32 x resources.cpus_per_env_runner=1 + resources.learners=1 on CPU needs 33 "
      "CPUs, but this machine, where a local Ray would start, has 2")),
    (["resources=workstation"], "resources.env_runners=6 x resources.cpus_per_env_runner=1 needs 6 CPUs"),
    (["resources.gpus_per_learner=1"],
     "puts the driver's learner on a GPU, but torch sees none on this machine"),
    (["resources.gpus_per_learner=1", "resources.ray_address=10.0.0.1:6379"],
     "torch sees none on this machine"),
])
def test_what_this_machine_cannot_give_fails_before_ray_starts_in_one_line(no_gpu_here, overrides, message):
    with pytest.raises(UserError) as err:
        build.check_resources(config(*overrides))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_fractional_runners_fit_where_whole_ones_do_not(no_gpu_here):
    build.check_resources(config("resources=workstation", "resources.cpus_per_env_runner=0.3"))  # 1.8 of 2
    build.check_resources(config("resources.env_runners=20", "resources.cpus_per_env_runner=0.1"))  # 2.0 of 2
    with pytest.raises(UserError, match="needs 2.1 CPUs"):
        build.check_resources(config("resources.env_runners=21", "resources.cpus_per_env_runner=0.1"))


def test_joining_a_cluster_defers_the_check_until_connected(no_gpu_here):
    cfg = config("resources=cluster_gpu", "resources.ray_address=10.0.0.1:6379")
    build.check_resources(cfg)  # nothing is known about the cluster before ray.init
    build.check_resources(cfg, {"CPU": 64.0, "GPU": 2.0})
    with pytest.raises(UserError) as err:
        build.check_resources(cfg, {"CPU": 64.0})
    assert str(err.value).startswith("resources.learners=1 x resources.gpus_per_learner=1 needs 1 GPU, but "
                                     "the Ray cluster has 0 and Ray would wait for it forever")
    short = r"^resources.env_runners=32 .* needs 32 CPUs, but the Ray cluster has 16 "
    with pytest.raises(UserError, match=short):
        build.check_resources(cfg, {"CPU": 16.0, "GPU": 1.0})
    two = config("resources=cluster_gpu", "resources.learners=2")
    with pytest.raises(UserError, match="needs 2 GPU, but the Ray cluster has 1"):
        build.check_resources(two, {"CPU": 64.0, "GPU": 1.0})


def test_a_learner_with_a_gpu_takes_no_cpu_and_one_without_takes_one():
    cfg = config("resources=cluster_gpu", "resources.ray_address=10.0.0.1:6379")
    build.check_resources(cfg, {"CPU": 32.0, "GPU": 1.0})
    cpu_learner = config("resources=cluster_gpu", "resources.ray_address=10.0.0.1:6379",
                         "resources.gpus_per_learner=0")
    with pytest.raises(UserError, match="needs 33 CPUs"):
        build.check_resources(cpu_learner, {"CPU": 32.0, "GPU": 1.0})


def test_ray_address_is_resolved_as_ray_resolves_it(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert build.ray_to_join("10.0.0.1:6379") == "10.0.0.1:6379"
    assert build.ray_to_join("ray://head:10001") == "ray://head:10001"
    with pytest.raises(UserError) as err:
        build.ray_to_join("head-without-port")
    assert str(err.value) == ("resources.ray_address='head-without-port' is not a Ray address: give "
                              "HOST:PORT, auto or null")
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.2:6379")  # what ray.init(address=None) joins
    assert build.ray_to_join(None) == "10.0.0.2:6379"


def test_a_head_that_does_not_answer_is_one_line_not_minutes_of_retries(no_gpu_here, monkeypatch):
    monkeypatch.setattr(build, "gcs_answers", lambda address: False)
    with pytest.raises(UserError) as err:
        build.check_resources(config("resources=cluster_gpu", "resources.ray_address=10.0.0.1:6379"))
    assert str(err.value) == ("no Ray head answers at 10.0.0.1:6379 (resources.ray_address=10.0.0.1:6379): "
                              "start it, or check the address and the firewall")


def test_knocking_tells_a_listening_port_from_a_closed_one():
    import socket

    from launch.cli import gcs_answers

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert gcs_answers(f"127.0.0.1:{port}", timeout=2)
    assert not gcs_answers(f"127.0.0.1:{port}", timeout=2)  # closed now
    assert not gcs_answers("no-port-here", timeout=2)


def test_a_negative_cpu_share_is_one_line():
    with pytest.raises(ValueError, match="resources.cpus_per_env_runner=-1.0 is not allowed"):
        config("resources.cpus_per_env_runner=-1")


def test_train_refuses_cluster_gpu_on_a_machine_without_a_gpu_in_one_line(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: cluster_gpu may be granted here")
    args = ["resources=cluster_gpu", f"hydra.run.dir={tmp_path}", "wandb.mode=disabled"]
    proc = subprocess.run([sys.executable, "launch/train.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=180, env={**os.environ, "RAY_ADDRESS": ""}, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs 1 GPU" in lines[0], proc.stderr
