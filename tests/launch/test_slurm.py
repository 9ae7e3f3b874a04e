"""SLURM: the sbatch script, run against stand-ins for srun, scontrol and python; the submitit launcher
config; and the node wait both use. No SLURM, no Ray."""
from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from launch.cli import UserError, compose
from launch.training import build
from launch.wait_for_nodes import alive, wait
from tests.launch.configs import train_config

ROOT = Path(__file__).resolve().parents[2]
SBATCH = ROOT / "launch" / "slurm" / "train.sbatch"

# Each stand-in appends the command it was given to $LOG, one line each.
FAKES = {
    "srun": 'echo "srun $*" >> "$LOG"',
    "scontrol": '[ "$1 $2" = "show hostnames" ] && printf "%s\\n" $FAKE_NODES',
    "hostname": 'echo "10.9.8.7 fe80::1"',
    "python": """
echo "python $* | auth=$RAY_AUTH_MODE token=${#RAY_AUTH_TOKEN}" >> "$LOG"
if [ "$1" = launch/train.py ]; then
    if [ -n "$FAKE_TRAIN_WAITS" ]; then
        trap 'echo "train saved" >> "$LOG"; kill $sleeper; exit 0' TERM
        echo "train started" >> "$LOG"
        sleep 60 & sleeper=$!
        wait $sleeper
    fi
    exit "${FAKE_TRAIN_RC:-0}"
fi
""",
}


def sbatch_defaults() -> dict[str, str]:
    return dict(re.findall(r"^#SBATCH --([\w-]+)=(\S+)$", SBATCH.read_text(), re.M))


@pytest.fixture
def job(tmp_path):
    """Runs the script as SLURM would on node n1 of n1..n3; returns (start, log lines)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in FAKES.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)
    log = tmp_path / "log"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "LOG": str(log), "FAKE_NODES": "n1 n2 n3",
           "SLURM_SUBMIT_DIR": str(ROOT), "SLURMD_NODENAME": "n1", "SLURM_JOB_NODELIST": "n[1-3]",
           "SLURM_CPUS_PER_TASK": "24", "SLURM_GPUS_PER_TASK": "1"}
    for key in ("RAY_AUTH_TOKEN", "RAY_PORT", "RAY_HEAD_IP", "LUDO_RESOURCES"):
        env.pop(key, None)

    def start(*args: str, **extra: str) -> subprocess.Popen:
        return subprocess.Popen(["bash", str(SBATCH), *args], env={**env, **extra}, cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def lines() -> list[str]:
        return log.read_text().splitlines() if log.exists() else []

    return start, lines


def test_the_script_is_valid_bash_and_names_files_that_exist():
    subprocess.run(["bash", "-n", str(SBATCH)], check=True)
    text = SBATCH.read_text()
    named = set(re.findall(r"\b(launch/[\w/]+\.py)\b", text))
    assert {"launch/train.py", "launch/wait_for_nodes.py"} <= named
    assert all((ROOT / path).is_file() for path in named)
    default = re.search(r"LUDO_RESOURCES:-(\w+)", text).group(1)
    assert (ROOT / "conf" / "resources" / f"{default}.yaml").is_file()


def test_a_head_then_a_worker_per_other_node_then_training_joined_to_the_head(job):
    start, lines = job
    proc = start("+exp=smoke", "seed=3")
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    log = lines()
    step = "srun --nodes=1 --ntasks=1 --cpus-per-task=24 --gpus-per-task=1"
    auth = "| auth=token token=64"  # one token for every node and the driver
    node = "--num-cpus=24 --num-gpus=1 --block"
    train = ("python launch/train.py +exp=smoke seed=3 resources=cluster_gpu "
             "resources.ray_address=10.9.8.7:6379")
    assert sorted(log) == sorted([
        f"{step} -w n1 ray start --head --node-ip-address=10.9.8.7 --port=6379 {node}",
        f"{step} -w n2 ray start --address=10.9.8.7:6379 {node}",
        f"{step} -w n3 ray start --address=10.9.8.7:6379 {node}",
        f"python launch/wait_for_nodes.py address=10.9.8.7:6379 nodes=1 timeout=300 {auth}",
        f"python launch/wait_for_nodes.py address=10.9.8.7:6379 nodes=3 timeout=300 {auth}",
        f"{train} {auth}",
    ])
    # In this order (the srun lines run in the background, so their place in the log varies):
    python = [line.split(" |")[0] for line in log if line.startswith("python ")]
    assert python == ["python launch/wait_for_nodes.py address=10.9.8.7:6379 nodes=1 timeout=300",
                      "python launch/wait_for_nodes.py address=10.9.8.7:6379 nodes=3 timeout=300", train]


def test_the_training_command_composes_and_fits_the_default_allocation(job):
    start, lines = job
    start("+exp=dqn_selfplay").communicate(timeout=60)
    command = shlex.split(next(line for line in lines() if line.startswith("python launch/train.py")))
    overrides = command[2:command.index("|")]
    cfg = train_config(*overrides)
    assert cfg.resources.ray_address == "10.9.8.7:6379"
    sbatch = sbatch_defaults()
    nodes = int(sbatch["nodes"])
    granted = {"CPU": nodes * float(sbatch["cpus-per-task"]), "GPU": nodes * float(sbatch["gpus-per-task"])}
    build.check_resources(cfg, granted)  # what Ray reports once every node has joined


def test_training_exit_status_is_the_job_status(job):
    start, _ = job
    proc = start("+exp=smoke", FAKE_TRAIN_RC="3")
    proc.communicate(timeout=60)
    assert proc.returncode == 3


def test_the_time_limit_signal_reaches_training_so_it_checkpoints(job):
    assert sbatch_defaults()["signal"].startswith("B:TERM@")  # sent to this script, before Ray is stopped
    start, lines = job
    proc = start("+exp=smoke", FAKE_TRAIN_WAITS="1")
    deadline = time.monotonic() + 30
    while "train started" not in lines():
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr.read() if proc.poll() else ""
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == 0 and lines()[-1] == "train saved"


def test_outside_the_repository_it_stops_with_one_line(job, tmp_path):
    start, lines = job
    proc = start("+exp=smoke", SLURM_SUBMIT_DIR=str(tmp_path))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and err.count("\n") == 1
    assert err.startswith("error: submit from the ludo-league repository root")
    assert lines() == []  # nothing started


# ---------------------------------------------------------------- hydra/launcher=slurm (submitit)
@pytest.fixture
def submitit():
    return pytest.importorskip("hydra_plugins.hydra_submitit_launcher",
                               reason='the submitit launcher is not installed: pip install -e ".[slurm]"')


@pytest.mark.parametrize("launcher", ["slurm", "submitit_slurm"])
def test_the_launcher_configs_compose(submitit, launcher):
    cfg = compose("config", [f"hydra/launcher={launcher}", "+exp=dqn_selfplay", "run_dir=/tmp/unused"],
                  return_hydra_config=True)
    assert cfg.hydra.launcher._target_.endswith("hydra_submitit_launcher.submitit_launcher.SlurmLauncher")


def test_the_slurm_launcher_renders_a_request_that_fits_workstation(submitit, tmp_path, monkeypatch):
    import submitit as submitit_lib
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf

    (tmp_path / "srun").write_text("#!/bin/sh\n")  # submitit checks that it is on a SLURM machine
    (tmp_path / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    overrides = ["hydra/launcher=slurm", "+exp=dqn_selfplay", "resources=workstation", "run_dir=/tmp/unused",
                 f"hydra.sweep.dir={tmp_path}/sweep"]
    cfg = compose("config", overrides, return_hydra_config=True)
    params = OmegaConf.to_container(cfg.hydra.launcher, resolve=False)
    # the plugin's own translation (SlurmLauncher.launch) into a submitit executor
    folder, timeouts = params.pop("submitit_folder"), params.pop("max_num_timeout")
    params.pop("_target_")
    params["name"] = "train"
    base = set(OmegaConf.structured(BaseQueueConf).keys())
    folder = folder.replace("${hydra.sweep.dir}", str(tmp_path))
    executor = submitit_lib.AutoExecutor(cluster="slurm", folder=folder, slurm_max_num_timeout=timeouts)
    executor.update_parameters(**{k if k in base else f"slurm_{k}": v for k, v in params.items()})
    text = executor._executor._make_submission_file_text("python launch/train.py", "uid")
    request = dict(re.findall(r"^#SBATCH --([\w-]+)=(\S+)$", text, re.M))
    assert request["nodes"] == "1" and request["time"] == "60" and request["mem"] == "32GB"
    run = OmegaConf.to_object(compose("config", ["+exp=dqn_selfplay", "resources=workstation", "run_dir=/x"]))
    granted = {"CPU": float(request["cpus-per-task"]), "GPU": float(request["gpus-per-node"])}
    build.check_resources(run, granted)  # the local Ray of each job has room for the runners


# ---------------------------------------------------------------- launch/wait_for_nodes.py
def test_only_live_nodes_count():
    assert alive([{"Alive": True}, {"Alive": False}, {"Alive": True}, {}]) == 2


def test_waiting_returns_once_every_node_is_up():
    counts = iter([1, 1, 2, 3])
    slept = []
    assert wait(lambda: next(counts), 3, timeout=60, sleep=slept.append, clock=lambda: 0.0) == 3
    assert len(slept) == 3


def test_waiting_too_long_is_one_line():
    clock = iter([0.0, 10.0, 20.0, 31.0])
    with pytest.raises(UserError) as err:
        wait(lambda: 2, 4, timeout=30, sleep=lambda s: None, clock=lambda: next(clock))
    assert str(err.value).startswith("only 2 of 4 Ray nodes joined within 30 s")
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("argv, message", [
    (["address=127.0.0.1:1", "nodes=0"], "error: nodes=0 is not allowed: give an integer in [1, 1000000]"),
    (["address=127.0.0.1:1", "nodes=two"], "error: nodes='two' is not allowed: give an integer"),
    (["address=127.0.0.1:1"], "error: nodes= is required"),
    (["nodes=2"], "error: address= is required"),
    (["address=127.0.0.1:1", "nodes=2", "timeout=-5"], "error: timeout=-5 is not allowed: give seconds >= 0"),
    (["address=127.0.0.1:1", "nodes=2", "tiemout=5"], "error: argument 'tiemout=5' is not allowed: unknown option"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, message):
    proc = subprocess.run([sys.executable, "launch/wait_for_nodes.py", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=180, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), proc.stderr


def test_no_head_to_join_is_one_line_and_exit_2_at_once():
    proc = subprocess.run([sys.executable, "launch/wait_for_nodes.py", "address=127.0.0.1:1", "nodes=2", "timeout=0"],
                          cwd=ROOT, capture_output=True, text=True, timeout=180, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == ["error: no Ray head answers at 127.0.0.1:1 within 0 s: see its log"], proc.stderr
