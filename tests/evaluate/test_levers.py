"""benchmarks/levers.py: the rule for the default, equal env steps, a row measured and kept, a search lever over the
reference, its refusals, and (slow) a training lever trained in segments."""
from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.levers import (
    LEVERS,
    SHIPPED_REFERENCES,
    check_equal_steps,
    lever_milestone,
    lever_run,
    parse,
    shipped_reference,
    train_lever,
    verdict,
)
from launch.cli import UserError
from launch.training.runs import RUN_STATE, RunState, trained_env_steps
from tests.league.tiny_policy import write_tiny_policy

ROOT = Path(__file__).resolve().parents[2]


def cell(rate: float, low: float, high: float) -> dict:
    return {"win_rate": rate, "ci95": [low, high]}


def panel(*differences: tuple[float, float]) -> dict:
    return {bot: {"difference": {"mean": (lo + hi) / 2, "ci95": [lo, hi]}}
            for bot, (lo, hi) in zip(("random", "hybrid", "heuristic000"), differences)}


def test_the_rule_for_the_default():
    level = panel((-0.01, 0.02), (-0.02, 0.01), (-0.005, 0.03))
    assert verdict(cell(0.27, 0.261, 0.279), level).startswith("joins the default")
    assert verdict(cell(0.26, 0.249, 0.269), level) == \
        "stays out: not ahead of parity beyond the interval in the cross-play"
    worse = panel((-0.01, 0.02), (-0.03, -0.001), (-0.005, 0.03))
    assert verdict(cell(0.30, 0.29, 0.31), worse) == \
        "stays out: worse against hybrid beyond the paired interval"


def test_equal_env_steps_are_checked_when_both_mains_record_them():
    assert check_equal_steps(8_000_000, 8_016_384, 0.01) is None
    assert check_equal_steps(None, 4_000_000, 0.01) is None and check_equal_steps(8_000_000, None, 0.01) is None
    refused = check_equal_steps(8_000_000, 4_000_000, 0.01)
    assert refused.startswith("the candidate trained 4,000,000 env steps and the reference 8,000,000")


def test_each_rule_set_and_seed_trains_a_lever_in_its_own_run_folder(tmp_path):
    folders = {lever_run(tmp_path, "width2x", variant, seed) for variant in ("pyludo", "classic") for seed in (0, 1)}
    assert len(folders) == 4 and all(folder.parent == tmp_path / "runs" for folder in folders)


def checkpoint(folder: Path, env_steps: int, seed: int) -> Path:
    """A checkpoint-shaped folder (policy/ and the run state), as a scaling milestone is kept."""
    write_tiny_policy(folder / "policy", seed=seed)
    (folder / RUN_STATE).write_text(json.dumps(RunState(iteration=3, env_steps=env_steps).to_dict()))
    return folder


def test_a_lever_row_keeps_its_policy_when_its_run_is_resumed_to_more_env_steps(tmp_path):
    out = tmp_path / "levers"
    run = lever_run(out, "width2x", "pyludo", 0)
    args = SimpleNamespace(out=out, variant="pyludo", train_seed=0, overrides=[], tolerance=0.01)
    checkpoint(run / "checkpoints" / "iter_000489", 8_011_776, seed=1)
    at_8m = train_lever("width2x", LEVERS["width2x"], 8_011_776, args)  # at those steps already: kept, not trained
    assert at_8m == lever_milestone(out, "width2x", "pyludo", 0, 8_011_776) and trained_env_steps(at_8m) == 8_011_776
    weights = (at_8m / "policy" / "weights.pt").read_bytes()

    checkpoint(run / "checkpoints" / "iter_001954", 32_014_336, seed=2)  # the run resumed for a 32M row
    assert trained_env_steps(run) == 32_014_336
    at_32m = train_lever("width2x", LEVERS["width2x"], 32_014_336, args)
    assert at_32m != at_8m and trained_env_steps(at_32m) == 32_014_336
    again = train_lever("width2x", LEVERS["width2x"], 8_011_776, args)
    assert again == at_8m and (again / "policy" / "weights.pt").read_bytes() == weights

    # a run past the steps whose checkpoint there is gone and whose policy there was not kept
    shutil.rmtree(at_8m)
    shutil.rmtree(run / "checkpoints" / "iter_000489")
    refusal = ("has no checkpoint within --tolerance 0.01 of 8,011,776 env steps (the first one past them is at "
               "32,014,336), and its policy there was not kept")
    with pytest.raises(UserError, match=re.escape(refusal)):
        train_lever("width2x", LEVERS["width2x"], 8_011_776, args)


def bench(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "benchmarks/levers.py", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, env=env, check=False)


def one_line(done: subprocess.CompletedProcess, words: str) -> None:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-2000:]
    assert words in lines[0], lines[0]


def test_a_row_is_measured_kept_and_not_played_twice(tmp_path):
    reference = checkpoint(tmp_path / "reference", 1000, seed=1)
    candidate = checkpoint(tmp_path / "candidate", 1005, seed=2)
    out = tmp_path / "levers"
    args = ["--variant", "classic", "--reference", str(reference), "--candidate", str(candidate), "--label", "mine",
            "--games", "12", "--cross-games", "16", "--out", str(out)]
    done = bench(*args)
    assert done.returncode == 0, done.stderr[-2000:]
    row = json.loads((out / "levers.json").read_text())["rows"]["mine"]
    assert row["candidate"] == f"ckpt:{candidate}" and row["reference"] == f"ckpt:{reference}"
    assert (row["candidate_env_steps"], row["reference_env_steps"]) == (1005, 1000)
    assert row["cross_play"]["games"] == 16 and set(row["panel"]) == {"random", "hybrid", "heuristic000"}
    for bot in row["panel"].values():
        assert bot["candidate"]["games"] == bot["reference"]["games"] == 12
        low, high = bot["difference"]["ci95"]
        assert low <= bot["difference"]["mean"] <= high
    assert row["verdict"].startswith(("joins the default", "stays out"))
    assert "| mine | 1,005 |" in done.stdout

    again = bench(*args)
    assert again.returncode == 0 and "measured before with these settings" in again.stdout
    assert "games against" not in again.stdout

    longer = checkpoint(tmp_path / "longer", 2000, seed=3)
    one_line(bench(*args[:4], "--candidate", str(longer), *args[6:]),
             "the candidate trained 2,000 env steps and the reference 1,000: levers are compared at equal env steps")


def test_a_search_lever_plays_over_the_reference_main_itself(tmp_path):
    reference = checkpoint(tmp_path / "reference", 1000, seed=1)
    done = bench("--variant", "classic", "--reference", str(reference), "--lever", "expectimax_policy_d1",
                 "--games", "4", "--cross-games", "4", "--out", str(tmp_path / "levers"))
    assert done.returncode == 0, done.stderr[-2000:]
    row = json.loads((tmp_path / "levers" / "levers.json").read_text())["rows"]["expectimax_policy_d1"]
    assert row["candidate"] == f"search:{reference}?depth=2&opponent=policy"
    assert row["candidate_env_steps"] == row["reference_env_steps"] == 1000  # the same main, by construction
    assert row["seconds_per_cross_play_game"] > 0


@pytest.mark.parametrize("args,words", [
    (["--variant", "quick"], "no default main is shipped for --variant quick (there are: classic, pyludo)"),
    (["--reference", "x"], "give --lever NAME (--list shows them) or --candidate with --label"),
    (["--reference", "x", "--lever", "width2x"], "--lever width2x is a training lever: add --train"),
    (["--reference", "x", "--lever", "mcts16", "--train"], "--lever mcts16 searches over the reference main"),
    (["--reference", "x", "--candidate", "y"], "--candidate needs --label NAME"),
    (["--reference", "x", "--lever", "width2x", "--train", "--candidate", "y"], "--train makes the candidate"),
    (["--reference", "x", "--lever", "nosuch"], "argument --lever: invalid choice: 'nosuch'"),
    (["--reference", "x", "--lever", "mcts16", "--tolerance", "2"], "--tolerance 2.0 is not allowed"),
])
def test_bad_arguments_are_one_line(tmp_path, args, words):
    one_line(bench(*args, "--out", str(tmp_path / "levers")), words)
    assert not (tmp_path / "levers").exists()


@pytest.mark.parametrize("variant", sorted(SHIPPED_REFERENCES))
def test_the_shipped_default_main_of_each_rule_set_is_the_reference_without_reference(variant):
    from benchmarks.scaling import EXPERIMENT
    from policies.players import make_player
    from tests.launch.configs import train_config

    folder = shipped_reference(variant)
    assert parse(["--variant", variant, "--lever", "mcts16"]).reference == str(folder)
    assert trained_env_steps(folder) == 8_011_776  # the scaling run's 8M milestone, as its run state records
    player = make_player(f"ckpt:{folder}")
    assert player.trained_for == (variant, 4)
    default = train_config(EXPERIMENT, f"variant={variant}")  # trained with today's defaults, nothing else
    saved = json.loads((folder / "policy" / "policy.json").read_text())["model_config"]
    assert saved["obs"] == default.obs.name and saved["network"] == dataclasses.asdict(default.network)


def test_a_training_lever_without_recorded_steps_to_train_to_is_one_line(tmp_path):
    reference = write_tiny_policy(tmp_path / "bare")  # a policy folder that records no env steps
    one_line(bench("--variant", "classic", "--reference", str(reference), "--lever", "width2x", "--train",
                   "--out", str(tmp_path / "levers")), "records no env steps: give --steps")


def test_the_list_names_every_lever_and_how_it_is_made():
    done = bench("--list")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == list(LEVERS)
    assert any("network=token_set_2x" in line for line in lines)
    assert any("search:{reference}?depth=2&opponent=policy" in line for line in lines)


def as_number(value):
    """A number as a float (``1e-4`` and ``0.0001`` are the same), anything else as text."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return str(value)


@pytest.mark.parametrize("name", [name for name, lever in LEVERS.items() if lever.search is None])
def test_every_training_lever_composes_into_a_checked_training_config(name):
    from benchmarks.scaling import EXPERIMENT
    from tests.launch.configs import train_config

    lever = LEVERS[name]
    overrides = [*lever.overrides, *(o for _, later in lever.later for o in later)]
    assert overrides, f"{name}: a training lever with nothing to change"
    cfg = train_config(EXPERIMENT, "variant=pyludo", *overrides)
    for override in overrides:
        key, value = override.split("=", 1)
        if "." in key and not value.startswith("["):  # a field; a bare key picks a group's preset
            node = cfg
            for part in key.split("."):
                node = getattr(node, part)
            assert as_number(node) == as_number(value), f"{name}: {override} did not reach the config ({node!r})"


@pytest.mark.slow
def test_a_training_lever_trains_its_main_in_segments_to_the_steps_and_resumes(tmp_path):
    from tests.launch.configs import metrics

    reference = write_tiny_policy(tmp_path / "bare")
    out = tmp_path / "levers"
    tiny = ["algo.minibatch_size=256", "sampler.games=32", "eval.every=0", "eval.final_games=20",
            "resources.env_runners=0", "wandb.mode=disabled"]
    args = ["--variant", "classic", "--reference", str(reference), "--lever", "batch_growth", "--train",
            "--steps", "100000", "--games", "4", "--cross-games", "4", "--out", str(out), *tiny]
    env = {**os.environ, "LUDO_LEAGUE_CHECKPOINT_KEY": str(tmp_path / "key"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "benchmarks/levers.py", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=1800, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    run = lever_run(out, "batch_growth", "classic", 0)
    kept = lever_milestone(out, "batch_growth", "classic", 0, 100000)
    assert f"ckpt:{kept}" in json.loads((out / "levers.json").read_text())["rows"]["batch_growth"]["candidate"]
    steps = [row["env_steps"] for row in metrics(run)]
    per_iteration = [b - a for a, b in zip([0, *steps], steps)]
    # the default batch up to half the steps, then the lever's, on a resume of the same run
    assert set(per_iteration[:per_iteration.index(65536)]) == {16384} and per_iteration[-1] == 65536
    assert steps[per_iteration.index(65536) - 1] >= 50000
    assert trained_env_steps(kept) == trained_env_steps(run) >= 100000
    assert "env steps not recorded for both mains" in done.stdout
    again = subprocess.run([sys.executable, "benchmarks/levers.py", *args], cwd=ROOT, capture_output=True,
                           text=True, timeout=600, env=env, check=False)
    assert again.returncode == 0 and "training to" not in again.stdout  # kept, not trained again
