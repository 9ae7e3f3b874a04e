"""Training never waits for the league: panel evaluations and rating rounds play in a worker beside
training, at the EnvRunners' niceness, and arrive late; checkpoints are written in the background from a copy;
a background job that crashes is one warning line, three in a row stop the run after a checkpoint; a run killed
in the middle of a background job resumes; a full disk leaves the previous checkpoint usable.

Each test runs the real script (``+exp=smoke``, its own Ray) with `tests.launch.upkeep_bot.Marks` in the league,
a ``py:`` bot that logs the process it plays in and, in the league's worker, sleeps or dies when told to. With
``league.rated_bots=[random]`` the league is main, random, hybrid and that bot: every line-up of a round seats
it (while ``league.max_snapshots=0`` keeps snapshots out)."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from launch.training.runs import KEY_ENV, RunDir, verify_checkpoint
from policies.league.league import member_policy_folder
from policies.league.store import LeagueStore
from tests.disks import can_mount_a_small_disk
from tests.launch.configs import kill_training_when, metrics, script_env

ROOT = Path(__file__).resolve().parents[2]
BOT = "py:tests.launch.upkeep_bot:Marks"
ARGS = ("+exp=smoke", "wandb.mode=disabled", f"league.external=[{BOT}]", "league.rated_bots=[random]")
GIVEN_AGAIN = f"league.external=[{BOT}]"
"""What a resume of such a run is given again: it takes a py: bot only from its own command line."""
ROUND_GAMES = 2 * 8  # +exp=smoke: line-ups x games per line-up (all finish)


@pytest.fixture
def env(tmp_path, monkeypatch):
    """The bot's log and a signing key of this test's own, in the environment of the runs (and of this test)."""
    monkeypatch.setenv("UPKEEP_BOT_LOG", str(tmp_path / "bot.jsonl"))
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "checkpoint-key"))
    for name in ("UPKEEP_BOT_SLEEP", "UPKEEP_BOT_SLEEP_AFTER", "UPKEEP_BOT_DB", "UPKEEP_BOT_DIE"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def train(run_dir: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "launch/train.py", *args, f"hydra.run.dir={run_dir}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, env=script_env(), stdin=subprocess.DEVNULL,
                          check=False)


def bot_log(event: str = "plays") -> list[dict]:
    file = Path(os.environ["UPKEEP_BOT_LOG"])
    rows = [json.loads(line) for line in file.read_text().splitlines()] if file.is_file() else []
    return [row for row in rows if row["event"] == event]


def in_worker(rows: list[dict]) -> list[dict]:
    return [row for row in rows if "LeagueWorker" in row["title"]]


def said(stderr: str) -> list[str]:
    """The run's own warning and error lines (RLlib's deprecation notices left out)."""
    return [line for line in stderr.splitlines() if line.startswith(("warning: ", "error: "))]


def warnings(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in said(done.stderr) if line.startswith("warning: ")]


def rounds_complete(run: Path) -> list[dict]:
    """The league's rounds, each checked complete: all its games and a rating of every member that played."""
    with LeagueStore.open(run, create=False, read_only=True) as store:
        rounds = store.rounds()
        history = store.rating_history()
        for round_ in rounds:
            games = store.matches(round_["id"])
            assert len(games) == ROUND_GAMES, (round_, len(games))
            rated = {row["member_id"] for row in history if row["round_id"] == round_["id"]}
            assert {member for game in games for member in game.seats} <= rated, round_
    return rounds


def test_rounds_and_evaluations_play_in_a_worker_at_the_env_runners_niceness_and_arrive_late(tmp_path, env):
    run = tmp_path / "run"
    done = train(run, *ARGS, "resources.env_runners=1", "budget.iterations=4")
    assert done.returncode == 0, done.stderr[-3000:]
    assert not warnings(done), warnings(done)

    # The bot sat at training seats in the EnvRunner and played its rounds in the league's worker: another
    # process than the driver's, at the EnvRunner's niceness.
    plays = bot_log()
    driver = next(row for row in plays if "launch/train.py" in row["title"])
    runner = next(row for row in plays if "BatchedLudoEnvRunner" in row["title"])
    worker = in_worker(plays)
    assert worker and all(row["pid"] not in (driver["pid"], runner["pid"]) for row in worker), plays
    assert {row["nice"] for row in worker} == {runner["nice"]}, plays

    # Each evaluation and round of iteration i is taken up at iteration i + 1 (the last one's at once, before the
    # last save): results arrive late, and the league's ratings lag by one round at most.
    rows = metrics(run)
    assert [row["iteration"] for row in rows] == [1, 2, 3, 4]
    assert [row.get("eval/iteration") for row in rows] == [None, 1, 2, 4]
    for row in rows[1:]:
        assert row["eval/env_steps"] == rows[row["eval/iteration"] - 1]["env_steps"]
        assert row["league/main_rank"] >= 1
    summary = json.loads((run / "summary.json").read_text())
    assert [e["iteration"] for e in summary["evaluations"]] == [1, 2, 3, 4]  # none lost, the third too
    assert [(r["label"], r["iteration"]) for r in rounds_complete(run)] == [
        ("training", 1), ("training", 2), ("training", 3), ("training", 4), ("final", 4)]

    with LeagueStore.open(run, create=False, read_only=True) as store:
        # A snapshot frozen from the weights a job played takes their panel with the round.
        for evaluation in summary["evaluations"]:
            snapshot = store.member(f"main@{evaluation['iteration']}")
            assert {k: v["win_rate"] for k, v in snapshot.panel.items()} == \
                {r["opponent"]: r["win_rate"] for r in evaluation["results"]}
        # best/ is the policy its evaluation played, not main as it was when the evaluation arrived.
        best = summary["best"]["iteration"]
        frozen = member_policy_folder(store.member(f"main@{best}"), run)
    kept = torch.load(run / "best" / "policy" / "weights.pt", weights_only=True)
    played = torch.load(frozen / "weights.pt", weights_only=True)
    assert kept.keys() == played.keys() and all(torch.equal(kept[k], played[k]) for k in kept)


def test_a_worker_that_dies_is_named_in_one_warning_line_and_the_next_round_starts_a_new_one(tmp_path, env):
    env.setenv("UPKEEP_BOT_DIE", "1")
    run = tmp_path / "run"
    done = train(run, *ARGS, "league.max_snapshots=0", "budget.iterations=4")
    assert done.returncode == 0, done.stderr[-3000:]
    lines = warnings(done)
    assert len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith("warning: the league's panel evaluation and rating round of iteration 1 failed (")
    assert lines[0].endswith("training goes on, and the next one starts when it is due"), lines[0]
    assert len(bot_log("dying")) == 1 and len({row["pid"] for row in in_worker(bot_log())}) == 2
    assert [(r["label"], r["iteration"]) for r in rounds_complete(run)] == [
        ("training", 2), ("training", 3), ("training", 4), ("final", 4)]


@pytest.mark.slow
def test_three_failures_in_a_row_stop_the_run_after_a_checkpoint_in_one_line(tmp_path, env):
    env.setenv("UPKEEP_BOT_DIE", "99")
    run = tmp_path / "run"
    done = train(run, *ARGS, "league.max_snapshots=0", "budget.iterations=8")
    assert done.returncode == 2, done.stderr[-3000:]
    lines = said(done.stderr)
    assert [line.split(" failed")[0] for line in lines[:2]] == [
        "warning: the league's panel evaluation and rating round of iteration 1",
        "warning: the league's panel evaluation and rating round of iteration 2"], done.stderr[-3000:]
    assert len(lines) == 3 and lines[2].startswith(
        "error: the league's panel evaluation and rating round failed 3 times in a row (the last, of iteration 3: ")
    checkpoint = run / "checkpoints" / "iter_000004"
    assert lines[2].endswith(f"the run stopped at iteration 4 after saving {checkpoint} "
                             f"(resume with: python launch/train.py resume={run} {shlex.quote(GIVEN_AGAIN)})"), lines[2]
    verify_checkpoint(checkpoint)
    assert RunDir(run).read_state(checkpoint).iteration == 4
    assert rounds_complete(run) == []  # every round died with its worker: none is half recorded


@pytest.mark.slow
def test_a_run_killed_in_the_middle_of_a_background_round_resumes_with_every_round_whole(tmp_path, env):
    run = tmp_path / "run"
    env.setenv("UPKEEP_BOT_SLEEP", "120")
    env.setenv("UPKEEP_BOT_SLEEP_AFTER", "1")  # in the second round, once the first is recorded
    env.setenv("UPKEEP_BOT_DB", str(run / "league.db"))
    args = [*ARGS, "league.max_snapshots=0", "budget.iterations=6"]
    kill_training_when(run, args, lambda: bool(in_worker(bot_log("sleeping")))
                       and bool(RunDir(run).checkpoint_dirs()), 400, "round under way in the worker", poll_s=0.05)
    recorded = rounds_complete(run)  # the round the worker was playing is not in it, nor a part of it
    assert [r["iteration"] for r in recorded] == [1]
    newest = RunDir(run).checkpoint_dirs()[-1]
    resumed = RunDir(run).read_state(newest).iteration

    env.delenv("UPKEEP_BOT_SLEEP")
    done = train(run, f"resume={run}", GIVEN_AGAIN)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"resumed from {newest.name}" in done.stdout
    rounds = rounds_complete(run)
    assert rounds[0] == recorded[0]
    assert [r["iteration"] for r in rounds[1:] if r["label"] == "training"] == list(range(resumed + 1, 7))


@pytest.mark.slow
def test_a_stop_while_a_round_plays_beside_training_waits_for_it_and_saves_it_with_the_run(tmp_path, env):
    import signal
    import time

    run = tmp_path / "run"
    env.setenv("UPKEEP_BOT_SLEEP", "10")  # the worker's first round, under way when the scheduler's stop comes
    proc = subprocess.Popen([sys.executable, "launch/train.py", *ARGS, "league.max_snapshots=0", "budget.iterations=50",
                             f"hydra.run.dir={run}"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=script_env())
    try:
        deadline = time.monotonic() + 300
        while not in_worker(bot_log("sleeping")):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()[-3000:]
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=300)
    finally:
        proc.kill()
    assert proc.returncode == 143, err[-3000:]  # 128 + SIGTERM, once the run has saved
    stopped = int(out.split("stopped at iteration ")[1].split(":")[0])
    assert f"resume with: python launch/train.py resume={run}" in out
    checkpoint = RunDir(run).checkpoint_dirs()[-1]
    state = RunDir(run).read_state(checkpoint)
    assert state.iteration == stopped and 1 in [e["iteration"] for e in state.evaluations]  # nothing lost
    assert [r["iteration"] for r in rounds_complete(run)] == [1]
    verify_checkpoint(checkpoint)


def test_a_run_killed_while_a_checkpoint_is_written_in_the_background_resumes_from_the_last_complete_one(
        tmp_path, env):
    run = tmp_path / "run"
    checkpoints = run / "checkpoints"
    # Each checkpoint is held as a temporary folder for a few seconds once written: training goes on meanwhile.
    args = [*ARGS, "league.max_snapshots=0", "eval.every=0", "eval.final_games=0", "budget.iterations=30"]

    def under_way() -> bool:
        partial = [p for p in checkpoints.glob(".tmp-iter_*")] if checkpoints.is_dir() else []
        if not partial or not RunDir(run).checkpoint_dirs() or not (run / "metrics.jsonl").is_file():
            return False
        writing = int(partial[0].name.split("_")[1].split("-")[0])
        return any(row["iteration"] > writing for row in metrics(run))  # trained on while it is written

    kill_training_when(run, args, under_way, 400, "checkpoint written while training goes on", poll_s=0.01,
                       script=("-m", "tests.launch.held_checkpoints"))
    assert list(checkpoints.glob(".tmp-iter_*")), "the kill left no half-written checkpoint"
    complete = RunDir(run).checkpoint_dirs()
    for checkpoint in complete:
        verify_checkpoint(checkpoint)

    last = RunDir(run).read_state(complete[-1]).iteration + 2
    done = train(run, f"resume={run}", GIVEN_AGAIN, f"budget.iterations={last}")
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"resumed from {complete[-1].name}" in done.stdout
    assert not list(checkpoints.glob(".tmp-*"))
    for checkpoint in RunDir(run).checkpoint_dirs():
        verify_checkpoint(checkpoint)
    assert RunDir(run).read_state(RunDir(run).checkpoint_dirs()[-1]).iteration == last


FILL = r"""
set -e
mount -t tmpfs -o size=48m tmpfs "$MNT"
"$PYTHON" launch/train.py "$@" hydra.run.dir="$MNT/run" >"$OUT/stdout" 2>"$OUT/stderr" &
train=$!
while [ ! -d "$MNT/run/checkpoints/iter_000001" ] && kill -0 $train 2>/dev/null; do sleep 0.02; done
size=$(du -sb "$MNT/run/checkpoints/iter_000001" | cut -f1)
free=$(df --output=avail -B1 "$MNT" | tail -1)
head -c $((free - size / 2)) /dev/zero >"$MNT/filler" || true
set +e
wait $train
echo $? >"$OUT/rc"
cp -a "$MNT/run" "$OUT/run"
"""


@pytest.mark.skipif(not can_mount_a_small_disk(), reason="needs user and mount namespaces (unshare) for a small disk")
def test_a_full_disk_while_checkpoints_are_written_leaves_the_previous_one_usable(tmp_path, env):
    # The run folder is a 48 MB disk of its own; once the first checkpoint is in place, a file takes all but half
    # a checkpoint's room, so every later checkpoint meets a full disk.
    mount, out = tmp_path / "disk", tmp_path / "out"
    mount.mkdir()
    out.mkdir()
    args = [*ARGS, "league.max_snapshots=0", "eval.every=0", "eval.final_games=0", "budget.iterations=40"]
    subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "bash", "-c", FILL, "fill", *args], cwd=ROOT,
                   env={**script_env(), "MNT": str(mount), "OUT": str(out), "PYTHON": sys.executable},
                   timeout=600, check=True)
    stderr = (out / "stderr").read_text()
    assert (out / "rc").read_text().strip() == "2", stderr[-3000:]
    lines = said(stderr)
    assert len(lines) == 3, stderr[-3000:]
    run = out / "run"
    complete = RunDir(run).checkpoint_dirs()
    newest = complete[-1].name
    for line in lines[:2]:
        assert line.startswith("warning: the checkpoint of iteration ") and "No space left on device" in line, line
        assert f"; {newest} stays the newest complete checkpoint: training goes on" in line, line
    error = lines[2]
    assert error.startswith("error: the checkpoint failed 3 times in a row (the last, of iteration "), error
    assert "No space left on device" in error and "could not be written" in error, error
    assert error.endswith(f"the newest complete one is {mount / 'run' / 'checkpoints' / newest} "
                          f"(resume with: python launch/train.py resume={mount / 'run'} {shlex.quote(GIVEN_AGAIN)})"), error
    assert not list((run / "checkpoints").glob(".tmp-*")), "a failed checkpoint left its folder behind"

    # The checkpoint before the full disk is whole: signed, and a resume starts from it.
    from launch.training.trainers.rllib import find_resume_point
    from tests.launch.configs import train_config

    for checkpoint in complete:
        verify_checkpoint(checkpoint)
    state, checkpoint = find_resume_point(train_config(*args, f"resume={run}"), RunDir(run))
    assert checkpoint.name == newest and state.iteration == int(newest.rpartition("_")[2])


def test_a_checkpoint_is_written_from_the_copy_taken_between_two_iterations(tmp_path, env):
    """The copy stays as it was while training goes on: RLlib's state holds live containers of the algorithm's
    (its metrics' series), which the next iterations fill while a thread writes the copy."""
    import pickle

    import ray

    from launch.training.trainers.rllib import LeagueSelfPlay, push_weights, write_checkpoint
    from launch.training.watchdog import MARKER
    from policies.league.pool import MAIN
    from tests.launch.configs import train_config

    env.setenv(MARKER, "")  # the watchdog marks this process's environment: not for the tests after this one
    cfg = train_config("+exp=smoke", "wandb.mode=disabled", "eval.every=0", run_dir=str(tmp_path / "run"))
    trainer = LeagueSelfPlay(cfg)
    state, _ = trainer.open(False)
    trainer.start(state)
    try:
        trainer.advance(state)
        copy = trainer.capture(state)
        as_captured = pickle.dumps(copy)
        captured = {k: np.array(v) for k, v in trainer.algo.learner_group.get_weights([MAIN])[MAIN].items()}
        push_weights(trainer.algo, MAIN, {k: v + 1.0 for k, v in captured.items()})  # the live weights move on
        trainer.advance(state)
        trainer.advance(state)
        assert pickle.dumps(copy) == as_captured
        path = write_checkpoint(trainer.algo, trainer.run, trainer.evaluator, cfg, *copy)
    finally:
        trainer.close()
    assert not ray.is_initialized()
    written = torch.load(path / "policy" / "weights.pt", weights_only=True)
    assert written.keys() == captured.keys()
    for key, value in captured.items():
        np.testing.assert_array_equal(written[key].numpy(), value, err_msg=key)
    assert RunDir(cfg.run_dir).read_state(path).iteration == 1
    verify_checkpoint(path)
    shutil.rmtree(tmp_path / "run")
