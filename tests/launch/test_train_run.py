"""`launch/train.py` end to end: the smoke experiment, reproducible evaluation, kill -9 and resume, damaged checkpoints.

Each test starts the real script in a subprocess (its own Ray, wandb offline
or disabled), as a user would.
"""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from policies.league.store import LeagueStore
from tests.launch.configs import kill_training_when, metrics, script_env

ROOT = Path(__file__).resolve().parents[2]


def train(run_dir: Path, *args: str, timeout: int = 400) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "launch/train.py", *args, f"hydra.run.dir={run_dir}"],
        cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=script_env(), check=False,
    )


# Slow: it compiles every kernel the training path needs, from nothing. The claim, processes
# started together on an empty cache share its compiles and none crashes, is held in the fast suite by
# tests/engine/test_cold_cache.py's eight processes.
@pytest.mark.slow
def test_smoke_with_two_env_runners_on_an_empty_numba_cache(tmp_path):
    """The driver and two EnvRunner actors start together on a cold cache (a new user's first run, a cluster's
    first job): they share the compiles through the cache lock (`ludo_env.engine.jit`) and none of them crashes."""
    cache = tmp_path / "numba"
    run_dir = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "launch/train.py", "+exp=smoke", "resources.env_runners=2", "resources.cpus_per_env_runner=0.5",
         f"hydra.run.dir={run_dir}"],
        cwd=ROOT, capture_output=True, text=True, timeout=900, env={**script_env(), "LUDO_NUMBA_CACHE": str(cache)},
        check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["iterations"] == 2 and summary["env_steps"] > 0
    assert any(cache.rglob("*.nbi")), "the run compiled nothing into the empty cache it was given"


def test_smoke_trains_evaluates_checkpoints_logs_offline_and_its_numbers_reproduce(tmp_path):
    run_dir = tmp_path / "run"
    proc = train(run_dir, "+exp=smoke")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["iterations"] == 2 and summary["env_steps"] > 0
    assert [m["iteration"] for m in metrics(run_dir)] == [1, 2]
    policy = Path(summary["policy"])
    assert (policy / "policy.json").is_file() and (policy / "weights.pt").is_file()
    assert (Path(summary["checkpoint"]) / "algorithm" / "rllib_checkpoint.json").is_file()
    assert list((run_dir / "wandb").glob("offline-run-*")), "no offline wandb run"
    assert "it    2 |" in proc.stdout and "reproduce with:" in proc.stdout

    # best/: the best-evaluated policy, settled by the final evaluation and named with its own commands.
    best = summary["best"]
    assert best["policy"] == str(run_dir / "best" / "policy") and f"best:       {best['policy']}" in proc.stdout
    assert best["iteration"] in (1, 2) and len(best["evaluate_commands"]) == 2
    assert [r["games"] for r in best["final_evaluation"]["results"]] == [r["games"] for r in
                                                                         summary["final_evaluation"]["results"]]
    assert (run_dir / "best" / "policy" / "weights.pt").is_file()

    # The league: main, every seed bot and a snapshot per iteration, rated after each iteration and at the end.
    with LeagueStore.open(run_dir, create=False, read_only=True) as store:
        kinds = Counter(m.kind for m in store.members())
        assert kinds == {"main": 1, "bot": 7, "snapshot": 2}
        assert [r["label"] for r in store.rounds()] == ["training", "training", "final"]
        assert len(store.matches()) == 3 * 2 * 8  # rounds x line-ups x games per line-up (all finish)
        main = store.member("main")
        assert main.panel["random"]["win_rate"] == summary["final_evaluation"]["results"][0]["win_rate"]
    # A round is logged with the iteration that takes it up: round 1 with iteration 2, which waits for its own.
    assert [m.get("eval/iteration") for m in metrics(run_dir)] == [None, 2]
    assert "league/main_rank" in metrics(run_dir)[-1]
    page = subprocess.run([sys.executable, "launch/leaderboard.py", f"league={run_dir}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert page.returncode == 0, page.stderr[-2000:]
    assert 'data-member="main@2"' in (run_dir / "leaderboard.html").read_text()

    # The printed evaluate command gives the same games, so the same win rate, from the saved policy.
    final = {r["opponent"]: r for r in summary["final_evaluation"]["results"]}
    command = next(c for c in summary["evaluate_commands"] if ",random," in c)
    out = tmp_path / "eval.json"
    proc = subprocess.run(
        [sys.executable, "launch/evaluate.py", *shlex.split(command)[2:], "progress=false", f"out={out}",
         f"hydra.run.dir={tmp_path / 'evaluate'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(out.read_text())
    learned = next(p for p in report["standings"] if p["player"].startswith("ckpt:"))
    assert learned["win_rate"] == pytest.approx(final["random"]["win_rate"])


def test_smoke_dqn_trains_main_on_column_batches_from_its_replay(tmp_path):
    # The default DQN path end to end: the batched sampler, main's replay and ColumnReplayDQN's updates.
    run_dir = tmp_path / "run"
    proc = train(run_dir, "+exp=smoke_dqn", "algo.lr_end=1e-4", "budget.env_steps=4096")
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["iterations"] == 2 and summary["env_steps"] == 4096
    rows = metrics(run_dir)
    assert all(row["loss"] is not None and row["q_mean"] is not None for row in rows)  # updated every iteration
    assert rows[0]["lr"] > rows[1]["lr"] >= 1e-4  # the decay over budget.env_steps
    assert json.loads((Path(summary["policy"]) / "policy.json").read_text())["kind"] == "dqn"
    assert (run_dir / "best" / "policy" / "weights.pt").is_file()


@pytest.mark.slow
def test_a_distributional_dqn_trains_through_the_column_updates_and_its_policy_plays(tmp_path):
    from ludo_env.observations import encode
    from policies.modules import load_checkpoint_player
    from tests.positions import mid_game_positions

    run_dir = tmp_path / "run"
    proc = train(run_dir, "+exp=smoke_dqn", "algo.num_atoms=11", "budget.env_steps=4096", "eval.final_games=0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = metrics(run_dir)
    assert len(rows) == 2 and all(row["loss"] > 0 and row["q_mean"] is not None for row in rows)  # cross-entropy
    policy = Path(json.loads((run_dir / "summary.json").read_text())["policy"])
    assert json.loads((policy / "policy.json").read_text())["model_config"]["num_atoms"] == 11
    player = load_checkpoint_player(policy)
    states, tab, masks = mid_game_positions(4, games=16, plies=60, seed=5)
    moves = player.act(encode(player.obs, states, tab), masks.astype(np.float32))
    assert (masks[np.arange(len(masks)), moves] == 1).all()


def test_a_run_killed_with_sigkill_resumes_from_its_last_checkpoint(tmp_path):
    run_dir = tmp_path / "run"
    args = ["+exp=smoke", "budget.iterations=5", "eval.every=0", "eval.final_games=0", "wandb.mode=disabled"]
    # Any checkpoint from the second on: `checkpoint.keep` deletes iter_000002 two iterations later, and a smoke
    # iteration can take 0.1 s.
    kill_training_when(run_dir, args, lambda: any(int(p.name.rpartition("_")[2]) >= 2 for p in
                                                  (run_dir / "checkpoints").glob("iter_*")), 400, "checkpoint")
    before = metrics(run_dir)
    saved = sorted(p.name for p in (run_dir / "checkpoints").glob("iter_*"))
    last = int(saved[-1].rpartition("_")[2])
    state_at_kill = json.loads((run_dir / "checkpoints" / saved[-1] / "run_state.json").read_text())
    with LeagueStore.open(run_dir, create=False) as store:  # a kill -9 leaves a database that opens
        snapshots_at_kill = {m.name for m in store.members(kinds=["snapshot"])}
    assert len(snapshots_at_kill) >= last

    # The run as started under an older default learning rate: the resume keeps the run's, and says so.
    first_config = (run_dir / "config.yaml").read_text()
    assert "\n  lr: 0.001\n" in first_config
    (run_dir / "config.yaml").write_text(first_config.replace("\n  lr: 0.001\n", "\n  lr: 0.0004\n"))
    proc = train(run_dir, f"resume={run_dir}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"resumed from iter_{last:06d}" in proc.stdout
    assert ("note: resume keeps this run's settings where today's defaults differ: algo.lr=0.0004 "
            "(default now 0.001)") in proc.stderr
    after = metrics(run_dir)[len(before):]
    assert {m["lr"] for m in before} == {0.001} and {m["lr"] for m in after} == {0.0004}  # and it trains with it
    # It goes on from the checkpoint: only iterations after it are redone, and the counters carry on.
    assert [m["iteration"] for m in after] == list(range(last + 1, 6))
    assert len(before) - last <= 1
    assert after[0]["env_steps"] > state_at_kill["env_steps"]
    final_state = json.loads((run_dir / "checkpoints" / "iter_000005" / "run_state.json").read_text())
    assert final_state["iteration"] == 5 and final_state["last_snapshot"] == 5
    # The league keeps every committed snapshot, including any frozen after the checkpoint the run
    # resumed from (a redone iteration adds a second one, main@3.2); the two newest hold the slots.
    with LeagueStore.open(run_dir, create=False) as store:
        snapshots = store.members(kinds=["snapshot"])
        assert {m.iteration for m in snapshots} == {1, 2, 3, 4, 5}
        assert snapshots_at_kill <= {m.name for m in snapshots}
        active = [m for m in snapshots if m.active]
        assert sorted(m.iteration for m in active) == [4, 5] and {m.slot for m in active} == {0, 1}
        assert all(m.evicted_at is not None for m in snapshots if not m.active)

    # A damaged newest checkpoint: resume falls back to the one before, and says so.
    (run_dir / "checkpoints" / "iter_000005" / "run_state.json").write_text("{not json")
    proc = train(run_dir, f"resume={run_dir}", "budget.iterations=5")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "iter_000005 is damaged" in proc.stderr and "resumed from iter_000004" in proc.stdout

    # Nothing loadable: one line, exit 2.
    for checkpoint in (run_dir / "checkpoints").glob("iter_*"):
        (checkpoint / "run_state.json").write_text("")
    proc = train(run_dir, f"resume={run_dir}")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: resume=") and "no checkpoint loads" in lines[0]


@pytest.mark.slow
def test_a_run_folder_from_the_per_game_sampler_resumes_on_the_batched_one(tmp_path):
    run_dir = tmp_path / "old"
    args = ["+exp=smoke", "budget.iterations=2", "eval.every=0", "eval.final_games=0", "wandb.mode=disabled"]
    proc = train(run_dir, *args, "sampler.name=per_game")
    assert proc.returncode == 0, proc.stderr[-3000:]
    # A run folder written before the batched sampler existed has no sampler override.
    overrides = run_dir / "overrides.txt"
    overrides.write_text("".join(line for line in overrides.read_text().splitlines(keepends=True)
                                 if not line.startswith("sampler.")))
    proc = train(run_dir, f"resume={run_dir}", "budget.iterations=4")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "resumed from iter_000002" in proc.stdout
    rows = metrics(run_dir)
    assert [r["iteration"] for r in rows] == [1, 2, 3, 4]
    assert rows[3]["env_steps"] > rows[1]["env_steps"]
