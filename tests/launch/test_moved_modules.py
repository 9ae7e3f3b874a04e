"""Run folders from before issue 30 still load: their checkpoints name training classes by the modules they sat in
then (``launch.sampler``, ``launch.dqn_learner``, ``launch.replay``: RLlib pickles the EnvRunner and learner classes
in ``class_and_ctor_args.pkl`` and keeps the replay buffer's class path in its config). `launch.MOVED` imports each
old name as the moved module itself.

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
