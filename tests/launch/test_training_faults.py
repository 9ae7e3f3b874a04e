"""Training settings and inputs that cannot work are refused in one line before Ray starts and before a run
folder exists: numbers out of any sane range (``algo.lr=1e300``, NaN, infinity) in every float
setting, an empty ``eval.panel``, an empty external spec, a record file that is not UTF-8.

The settings are composed as the script composes them (`tests.launch.configs.train_config`); the rest runs the
real script in a subprocess."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from launch.training.algorithms import REGISTRY as ALGORITHMS
from launch.training.schema import TrainConfig
from ludo_env.rules import Rules
from policies.tournament import play_tournament
from tests.launch.configs import script_env, train_config

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = {"ppo": "+exp=ppo_selfplay", "dqn": "+exp=dqn_selfplay", "ga": "+exp=ga_ann", "td_lambda": "+exp=td_lambda"}


def float_keys(schema: type, prefix: str) -> list[str]:
    """Every float setting (optional ones too) under `schema`, as override keys."""
    types, keys = typing.get_type_hints(schema), []
    for f in dataclasses.fields(schema):
        kind = types[f.name]
        if dataclasses.is_dataclass(kind):
            keys += float_keys(kind, f"{prefix}{f.name}.")
        elif float in (set(typing.get_args(kind)) | {kind}):
            keys.append(prefix + f.name)
    return keys


SETTINGS = [("ppo", key) for key in float_keys(TrainConfig, "") if not key.startswith("algo.")]
SETTINGS += [(algo, key) for algo in EXPERIMENT for key in float_keys(ALGORITHMS[algo].settings, "algo.")]
SETTINGS += [("ppo", "resources.gpus_per_learner")]  # a string that is read as a number


@pytest.mark.parametrize("algo,key", SETTINGS, ids=[f"{a}:{k}" for a, k in SETTINGS])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e300", "-1e300"])
def test_every_float_setting_refuses_non_finite_and_absurd_numbers_in_one_line(algo, key, value):
    # lr_end needs budget.env_steps to be checked at all
    extra = ["budget.env_steps=1000"] if key == "algo.lr_end" else []
    with pytest.raises(ValueError) as err:
        train_config(EXPERIMENT[algo], f"{key}={value}", *extra)
    text = str(err.value)
    assert "\n" not in text and "not allowed" in text, text
    assert text.startswith((f"{key}=", f"reward {key.partition('.')[2]}=")), text  # reward.gamma: RewardConfig's


def test_train_refuses_a_learning_rate_of_1e300_before_ray_and_leaves_no_run_folder(tmp_path):
    run_dir = tmp_path / "run"
    done = train(run_dir, "+exp=smoke", "algo.lr=1e300")
    assert_one_line(done, "error: algo.lr=1e+300 is not allowed: give a number in (0, 1]")
    assert not run_dir.exists()


def test_an_empty_panel_is_refused_before_ray(tmp_path):
    with pytest.raises(ValueError, match=r"^eval.panel=\[\] is not allowed: give at least one opponent"):
        train_config("+exp=smoke", "eval.panel=[]")
    run_dir = tmp_path / "run"
    done = train(run_dir, "+exp=smoke", "eval.panel=[]")
    assert_one_line(done, "error: eval.panel=[] is not allowed: give at least one opponent, e.g. eval.panel=[random]")
    assert not run_dir.exists()


@pytest.mark.parametrize("spec", ['""', "' '"])
def test_an_empty_external_spec_says_so_and_what_is_allowed(tmp_path, spec):
    run_dir = tmp_path / "run"
    done = train(run_dir, "+exp=smoke", f"league.external=[{spec}]")
    assert_one_line(done, "error: league.external: an empty spec")
    assert "names no agent: give a run, checkpoint or policy folder (ckpt:<path>)" in done.stderr
    assert "py:package.module:ClassName" in done.stderr and "holds no policy" not in done.stderr
    assert not run_dir.exists()


def test_a_record_file_with_bytes_that_are_not_utf8_is_named_in_one_line_and_leaves_no_run_folder(tmp_path):
    records = tmp_path / "hybrid.jsonl"
    play_tournament(["hybrid", "random", "random", "random"], 2, Rules.load("pyludo"), seed=0, record=records,
                    rate=False)
    lines = records.read_bytes().splitlines(keepends=True)
    records.write_bytes(b"".join(lines[:3]) + b"\xff\xfe\x00 torn\n" + b"".join(lines[3:]))
    run_dir = tmp_path / "run"
    done = train(run_dir, "+exp=imitate", f"algo.records=[{records}]")
    assert_one_line(done, f"error: algo.records: {records}:4: not a ludo-league-record/1 line: byte 1 is not UTF-8")
    assert not run_dir.exists(), "a refused imitation run leaves no run folder"


def train(run_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "launch/train.py", *args, f"hydra.run.dir={run_dir}",
                           "wandb.mode=disabled"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=script_env(), check=False)


def assert_one_line(done: subprocess.CompletedProcess, start: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(start), done.stderr[-3000:]
    assert "Traceback" not in done.stdout + done.stderr
