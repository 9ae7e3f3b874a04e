"""Run folders from before the training modules moved to launch/training/ still load: their checkpoints name
training classes by the modules they sat in then (``launch.sampler``, ``launch.dqn_learner``, ``launch.replay``:
RLlib pickles the EnvRunner and learner classes in ``class_and_ctor_args.pkl`` and keeps the replay buffer's class
path in its config). `launch.MOVED` imports each old name as the moved module itself.

A resume of a whole run folder made before the move was run by hand when the modules moved (a 13 MB folder is no
fixture to keep); these tests pin what such a resume needs: the old names unpickle to the very classes of today.
"""
from __future__ import annotations

import importlib
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import launch

ROOT = Path(__file__).resolve().parents[2]


def old_pickle(module: str, name: str) -> bytes:
    """A protocol-0 pickle of the class `module`.`name`, as a checkpoint written before the move names it."""
    return f"c{module}\n{name}\n.".encode()


@pytest.mark.parametrize("old, new, name", [
    ("launch.sampler", "launch.training.sampler", "BatchedLudoEnvRunner"),
    ("launch.dqn_learner", "launch.training.dqn_learner", "AdvantageLearningDQNLearner"),
    ("launch.replay", "launch.training.replay_buffer", "MainEpisodeReplayBuffer"),
    ("launch.replay", "launch.training.replay_buffer", "ColumnReplayDQN"),
])
def test_a_class_pickled_under_its_old_module_loads_as_todays(old, new, name):
    assert pickle.loads(old_pickle(old, name)) is getattr(importlib.import_module(new), name)


def test_every_old_name_is_the_moved_module_itself():
    for old, new in launch.MOVED.items():
        assert importlib.import_module(old) is importlib.import_module(new)
        assert importlib.import_module(new).__spec__.name == new
    # a submodule of a moved package is not loaded a second time under its old name
    assert importlib.import_module("launch.trainers.td_lambda") is importlib.import_module(
        "launch.training.trainers.td_lambda")


def test_an_old_name_imports_in_a_fresh_interpreter():
    """As a Ray worker or a resume unpickles it: nothing imported first but what pickle imports."""
    code = "import pickle; print(pickle.loads(b'claunch.replay\\nMainEpisodeReplayBuffer\\n.').__module__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "launch.training.replay_buffer"


BEFORE_THE_MOVE = "a40efcd"
"""The last commit with the training modules in launch/ (they moved to launch/training/ after it)."""


@pytest.mark.slow
@pytest.mark.parametrize("exp, more", [("smoke", ["budget.iterations=4"]),
                                       ("smoke_dqn", ["budget.iterations=4", "budget.env_steps=16384"])])
def test_a_run_folder_trained_before_the_move_resumes(exp, more, tmp_path):
    """Trains a smoke run with the code of `BEFORE_THE_MOVE` (checked out from git: a run folder is too large a
    fixture to keep), then resumes it with today's code: its pickles name launch.sampler, launch.dqn_learner and
    launch.replay."""
    old_code = tmp_path / "code"
    archive = subprocess.run(["git", "archive", BEFORE_THE_MOVE], cwd=ROOT, capture_output=True, check=False)
    if archive.returncode != 0:
        pytest.skip(f"no commit {BEFORE_THE_MOVE} in this checkout")
    old_code.mkdir()
    subprocess.run(["tar", "-x", "-C", str(old_code)], input=archive.stdout, check=True)
    from launch.training.runs import KEY_ENV
    from tests.launch.configs import script_env

    run = tmp_path / "run"
    env = {**script_env(), KEY_ENV: str(tmp_path / "key"), "PYTHONPATH": str(old_code)}
    args = [f"+exp={exp}", "budget.iterations=2", "eval.every=0", "eval.final_games=0", "wandb.mode=disabled"]
    if exp == "smoke_dqn":
        args.append("budget.env_steps=4096")
    done = subprocess.run([sys.executable, "launch/train.py", *args, f"hydra.run.dir={run}"], cwd=old_code,
                          capture_output=True, text=True, timeout=600, env=env, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    pickles = b"".join(p.read_bytes() for p in (run / "checkpoints" / "iter_000002").rglob("class_and_ctor_args.pkl"))
    assert b"launch.sampler" in pickles  # the old module names, as a run folder from before the move has them
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "launch/train.py", f"resume={run}", *more], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env=env, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resumed from iter_000002" in done.stdout
    assert (run / "checkpoints" / "iter_000004").is_dir()
