"""benchmarks/scaling.py: env steps as people write them, its refusals, the milestone bookkeeping on a hand-built run
folder, and (slow) a miniature run trained, stopped, resumed, measured and reported end to end."""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from benchmarks.scaling import RESULTS, Run, env_steps, load_results, only_driver, steps_label, table, train
from launch.cli import UserError
from launch.training.runs import RUN_STATE, RunState, trained_env_steps
from ludo_env.rules import Rules
from policies.league.evaluation import CROSS_PLAY, measure_strength, win_record
from policies.tournament import play_tournament
from tests.league.tiny_policy import write_tiny_policy

ROOT = Path(__file__).resolve().parents[2]


def test_env_steps_are_read_as_people_write_them_and_named_back():
    assert [env_steps(t) for t in ("8M", "500k", "2e6", "8000000", "2.5M", "64m")] == \
        [8_000_000, 500_000, 2_000_000, 8_000_000, 2_500_000, 64_000_000]
    for text in ("0", "1.5", "x", "-3", "nan", "inf", "0.5k5"):
        with pytest.raises(argparse.ArgumentTypeError):
            env_steps(text)
    assert [steps_label(n) for n in (64_000_000, 500_000, 2_500_000, 4096, 102_400)] == \
        ["64M", "500k", "2.5M", "4096", "102.4k"]


def bench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "benchmarks/scaling.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL, check=False)


def one_line(done: subprocess.CompletedProcess, words: str) -> None:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-2000:]
    assert words in lines[0], lines[0]


@pytest.mark.parametrize("args,words", [
    (["--reference", "3M"], "--reference 3M is not one of --milestones (2M, 4M, 8M, 16M, 32M, 64M)"),
    (["--second-seeds-at", "5M"], "--second-seeds-at 5M is not one of --milestones"),
    (["--seeds", "1"], "seed 1 is in --seeds and --second-seeds: give each seed once"),
    (["variant=classic"], "variant= is the benchmark's to set"),
    (["budget.minutes=60"], "budget.minutes= is the benchmark's to set"),
    (["--milestones", "0"], "argument --milestones: 0 is not allowed"),
    (["--only", "everything"], "argument --only: invalid choice"),
])
def test_bad_arguments_are_one_line(tmp_path, args, words):
    one_line(bench(*args, "--out", str(tmp_path / "out")), words)
    assert not (tmp_path / "out").exists()  # refused before anything is written


def test_without_second_seeds_their_milestones_are_not_asked_for():
    from benchmarks.scaling import parse

    args = parse(["--milestones", "1M", "2M", "--reference", "2M", "--second-seeds", "resources.env_runners=2"])
    assert (args.milestones, args.second_seeds, args.overrides) == ([1_000_000, 2_000_000], [],
                                                                    ["resources.env_runners=2"])
    with pytest.raises(UserError, match="--second-seeds-at 8M is not one of --milestones"):
        parse(["--milestones", "1M", "2M", "--reference", "2M"])


def test_a_second_driver_on_the_same_folder_and_a_foreign_results_file_are_one_line(tmp_path):
    with only_driver(tmp_path):
        one_line(bench("--only", "report", "--out", str(tmp_path)), "another benchmark driver is working in it")
    (tmp_path / RESULTS).write_text('{"rows": []}')
    one_line(bench("--only", "report", "--out", str(tmp_path)), "not a ludo-league-scaling/1 results file")
    (tmp_path / RESULTS).write_bytes(b"\xff")
    one_line(bench("--only", "report", "--out", str(tmp_path)), "cannot read it")


def test_measure_strength_plays_the_same_games_as_the_tournament_and_pairs_them():
    rules = Rules.load("classic", players=4)
    wins = measure_strength("hybrid", rules, 400, 7, reference="random", cross_games=400, threads=1)
    assert set(wins) == {"random", "hybrid", "heuristic000", CROSS_PLAY}
    assert np.array_equal(wins[CROSS_PLAY], wins["random"])  # the cross-play is 1 against 3 copies of the reference
    result = play_tournament(["hybrid", "random", "random", "random"], 400, rules, 7, rate=False)
    hybrid = next(r for r in result.rows if r.player == "hybrid")
    assert win_record(wins["random"])["wins"] == hybrid.wins and result.truncated == 0
    again = measure_strength("hybrid", rules, 400, 7, panel=("random",), threads=2)
    assert np.array_equal(again["random"], wins["random"])  # the same dice, whatever the threads
    record = win_record(wins["hybrid"])
    assert record["games"] == 400 and record["ci95"][0] < record["win_rate"] < record["ci95"][1]


# ---------------------------------------------------------------- milestones on a hand-built run folder
def fake_run(run: Path, env_steps_at: list[int]) -> None:
    """A run folder as training leaves it: a checkpoint (policy/ and run state) per entry, and metrics rows."""
    for k, steps in enumerate(env_steps_at, 1):
        checkpoint = run / "checkpoints" / f"iter_{k:06d}"
        write_tiny_policy(checkpoint / "policy", seed=k, variant="pyludo")
        state = RunState(iteration=k, env_steps=steps, elapsed_s=10.0 * k)
        (checkpoint / RUN_STATE).write_text(json.dumps(state.to_dict()))
    (run / "metrics.jsonl").write_text("".join(json.dumps({"iteration": k, "env_steps": s, "main_decisions": s // 4})
                                               + "\n" for k, s in enumerate(env_steps_at, 1)))


def test_a_segment_that_ended_before_its_milestone_was_kept_is_kept_without_training(tmp_path):
    results = load_results(tmp_path)
    run = Run(tmp_path, "pyludo", 0, [2048], results)
    fake_run(run.folder, [1024, 2048])
    run.record["pending"] = {"milestone": 2048, "from_env_steps": 1024, "from_training_s": 10.0, "wall_s": 30.0}
    assert train(run, 2048, results, argparse.Namespace(overrides=[]))
    kept = run.kept(2048)
    assert kept["env_steps"] == 2048 and kept["main_decisions"] == 512 and "pending" not in run.record
    assert kept["segment"] == {"from_env_steps": 1024, "env_steps": 1024, "wall_s": 30.0, "training_s": 10.0,
                               "env_steps_per_s": 102.4}
    folder = run.milestone_folder(2048)
    assert sorted(p.name for p in folder.iterdir()) == ["policy", RUN_STATE]
    assert trained_env_steps(folder) == 2048  # what levers.py reads to compare mains at equal env steps
    assert json.loads((tmp_path / RESULTS).read_text())["runs"]["pyludo_s0"]["milestones"]["2048"]["env_steps"] == 2048


def test_the_table_gives_training_time_always_and_wall_time_only_where_every_start_recorded_it():
    def kept(env_steps, training_s, wall_s):
        return {"env_steps": env_steps, "segment": {"from_env_steps": 0, "env_steps": env_steps, "wall_s": wall_s,
                                                    "training_s": training_s, "env_steps_per_s": env_steps / training_s}}

    results = {"runs": {"pyludo_s0": {"variant": "pyludo", "seed": 0, "milestones": {
        "2000000": kept(2_000_000, 240.0, 300.0),
        "4000000": kept(2_000_000, 240.0, 0.0)}}}}  # its driver was killed: the start's wall time never written
    text = table(results)
    assert "| 2.00M env steps, 4 min training, 5 min wall | 8,333 |" in text
    assert "| 2.00M env steps, 4 min training, wall not recorded in full (a driver was killed) | 8,333 |" in text
    assert text.rstrip().endswith("seed 0: 2.00M env steps in 8 min training, wall not recorded in full "
                                  "(a driver was killed)")


def test_a_milestone_the_run_passed_without_keeping_it_is_left_out(tmp_path, capsys):
    results = load_results(tmp_path)
    run = Run(tmp_path, "pyludo", 0, [1024, 4096], results)
    fake_run(run.folder, [4096])
    assert not train(run, 1024, results, argparse.Namespace(overrides=[]))
    assert "the run is at 4,096 env steps, past 1024, and its policy there was not kept" in capsys.readouterr().out
    assert run.kept(1024) is None and not run.milestone_folder(1024).exists()


# ---------------------------------------------------------------- a miniature run, end to end
TINY = ["algo.train_batch_size=512", "algo.minibatch_size=256", "sampler.games=32", "eval.every=0",
        "eval.final_games=20", "resources.env_runners=0", "wandb.mode=disabled"]


@pytest.mark.slow
def test_a_miniature_run_trains_stops_resumes_measures_and_reports(tmp_path):
    out = tmp_path / "scaling"
    args = ["benchmarks/scaling.py", "--variants", "pyludo", "--milestones", "1024", "2048", "40960",
            "--reference", "2048", "--second-seeds-at", "2048", "--games", "20", "--cross-games", "20",
            "--out", str(out), *TINY]
    env = {**os.environ, "LUDO_LEAGUE_CHECKPOINT_KEY": str(tmp_path / "key")}
    driver = subprocess.Popen([sys.executable, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env)
    log = out / "logs" / "pyludo_s0.log"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:  # stop it once the last segment has trained a few iterations
        text = log.read_text() if log.is_file() else ""
        if "budget.env_steps=40960" in text and text.rpartition("budget.env_steps=40960")[2].count("\nit ") >= 3:
            break
        assert driver.poll() is None, driver.communicate()
        time.sleep(0.5)
    driver.send_signal(signal.SIGINT)
    stdout, stderr = driver.communicate(timeout=300)
    assert driver.returncode == 130, stderr[-3000:]
    assert "run the same command again to go on" in stderr
    results = json.loads((out / RESULTS).read_text())
    pending = results["runs"]["pyludo_s0"]["pending"]
    assert pending["milestone"] == 40960 and pending["wall_s"] > 0
    assert "stopped at iteration" in log.read_text()  # the training saved before it stopped

    done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=900, env=env,
                          check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((out / RESULTS).read_text())
    milestones = results["runs"]["pyludo_s0"]["milestones"]
    assert sorted(milestones, key=int) == ["1024", "2048", "40960"] and "pending" not in results["runs"]["pyludo_s0"]
    assert list(results["runs"]["pyludo_s1"]["milestones"]) == ["2048"]
    last = milestones["40960"]
    assert last["env_steps"] >= 40960 and last["segment"]["wall_s"] > pending["wall_s"]  # both starts counted
    # started once, resumed for 2048, for 40960 and after the stop
    assert log.read_text().count(f"$ python launch/train.py resume={out / 'runs' / 'pyludo_s0'} ") == 3
    for record in (*milestones.values(), results["runs"]["pyludo_s1"]["milestones"]["2048"]):
        assert set(record["panel"]) == {"random", "hybrid", "heuristic000"}
        assert record["panel"]["hybrid"]["games"] == 20 and record[CROSS_PLAY]["games"] == 20
        assert record[CROSS_PLAY]["settings"]["reference"] == "2048"
    assert (out / "milestones" / "pyludo_s0" / "40960" / "policy" / "weights.pt").is_file()
    table = (out / "scaling.md").read_text()
    assert "| 40,960 (40960) | 0 |" in table and "vs 2048 (itself)" in table
    assert (out / "scaling.png").stat().st_size > 10_000

    again = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env,
                           check=False)
    assert again.returncode == 0 and "training" not in again.stdout and "games against" not in again.stdout
    assert json.loads((out / RESULTS).read_text())["runs"] == results["runs"]  # nothing played twice

    more = subprocess.run([sys.executable, *args[:-len(TINY)], "--games", "24", "--only", "measure"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, env=env, check=False)
    assert more.returncode == 0, more.stderr[-3000:]
    assert "training" not in more.stdout and "24 games against 3 x hybrid" in more.stdout
    assert "games against 3 x ckpt:" not in more.stdout  # the cross-play's settings did not change
    remeasured = json.loads((out / RESULTS).read_text())["runs"]["pyludo_s0"]["milestones"]["1024"]
    assert remeasured["panel"]["hybrid"]["games"] == 24 and remeasured[CROSS_PLAY] == milestones["1024"][CROSS_PLAY]
