"""`launch/train.py league=alphastar` end to end: main and its exploiters train in one run, exploiters are frozen into
the league with their role and reset, the run checkpoints and resumes, and a SIGKILL loses nothing committed.

Each test starts the real script in a subprocess (its own Ray), as a user would.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from policies.league.store import LeagueStore
from tests.launch.configs import kill_training_when, metrics, script_env

ROOT = Path(__file__).resolve().parents[2]
EXPLOITERS = ("main_exploiter_0", "league_exploiter_0")
# The smoke run with both exploiters; a step budget of one decision freezes each one every iteration it plays.
ALPHASTAR_SMOKE = ["+exp=smoke", "league=alphastar", "league.main_exploiter_share=0.3",
                   "league.league_exploiter_share=0.3", "league.exploiter_step_budget=1", "league.max_snapshots=3",
                   "wandb.mode=disabled"]


def train(run_dir: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "launch/train.py", *args, f"hydra.run.dir={run_dir}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, env=script_env(), check=False)


def weights(policy: Path) -> dict[str, torch.Tensor]:
    return torch.load(policy / "weights.pt", weights_only=True)


def same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def close_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.allclose(a[k], b[k], rtol=0, atol=1e-6) for k in a)


@pytest.mark.slow
def test_alphastar_trains_every_role_freezes_and_resets_exploiters_and_resumes(tmp_path):
    run_dir = tmp_path / "run"
    proc = train(run_dir, *ALPHASTAR_SMOKE, "budget.iterations=3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = metrics(run_dir)
    assert [r["iteration"] for r in rows] == [1, 2, 3]
    for module_id in EXPLOITERS:  # every role trained (a loss each iteration it had data) and is reported
        assert any(r[f"roles/{module_id}/loss"] is not None for r in rows), module_id
        assert rows[-1][f"roles/{module_id}/frozen"] >= 1, module_id
    # Frozen into the league as snapshots with their role; the main exploiter was reset each time.
    assert "league: main_exploiter_0 frozen as main_exploiter_0@" in proc.stdout
    assert "; restarted from a copy of main" in proc.stdout
    with LeagueStore.open(run_dir, create=False, read_only=True) as store:
        roles = {m.name: m.role for m in store.members(kinds=["snapshot"])}
        frozen = [m for m in store.members(kinds=["snapshot"]) if m.role == "main_exploiter"]
        assert frozen and {"main", "league_exploiter"} <= set(roles.values())
        assert all(m.name.startswith("main_exploiter_0@") for m in frozen)
    initial = weights(run_dir / "league" / "initial" / "main_exploiter_0")
    assert any(not same_weights(initial, weights(run_dir / "league" / m.name)) for m in frozen)  # it trained
    state = json.loads((run_dir / "checkpoints" / "iter_000003" / "run_state.json").read_text())
    assert set(state["exploiters"]) == set(EXPLOITERS)
    # `league.py show` prints each member's role.
    show = subprocess.run([sys.executable, "launch/league.py", "show", f"league={run_dir}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)
    assert show.returncode == 0, show.stderr
    assert any(frozen[0].name in line and " main_exploiter " in line for line in show.stdout.splitlines())

    # Resume: every module comes back from the checkpoint and the exploiters' counts go on.
    proc = train(run_dir, f"resume={run_dir}", "budget.iterations=4")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "resumed from iter_000003" in proc.stdout
    assert [r["iteration"] for r in metrics(run_dir)] == [1, 2, 3, 4]
    after = json.loads((run_dir / "checkpoints" / "iter_000004" / "run_state.json").read_text())
    for module_id in EXPLOITERS:
        assert after["exploiters"][module_id]["frozen"] >= state["exploiters"][module_id]["frozen"]

    # A resume that changes the roles is refused in one line before Ray starts.
    proc = train(run_dir, f"resume={run_dir}", "league.main_exploiters=2", "budget.iterations=5")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "keep the run's league.main_exploiters" in lines[0], proc.stderr


@pytest.mark.parametrize("reset_to", ["main", pytest.param("initial", marks=pytest.mark.slow)])
def test_an_exploiter_starts_and_restarts_from_what_exploiter_reset_to_names(tmp_path, reset_to):
    # At a learning rate of 1e-12 (0 is refused) Adam moves a weight by about 1e-12 a step, so a frozen exploiter
    # is, to 1e-6, what it last started or restarted from, while modules built apart differ by far more.
    run_dir = tmp_path / "run"
    proc = train(run_dir, *ALPHASTAR_SMOKE, "algo.lr=1e-12", f"league.exploiter_reset_to={reset_to}",
                 "budget.iterations=2", "eval.every=0", "eval.final_games=0")
    assert proc.returncode == 0, proc.stderr[-3000:]
    main = weights(run_dir / "checkpoints" / "iter_000002" / "policy")
    with LeagueStore.open(run_dir, create=False, read_only=True) as store:
        frozen = [m for m in store.members(kinds=["snapshot"]) if m.role != "main"]
    assert {m.role for m in frozen} == {"main_exploiter", "league_exploiter"}
    for member in frozen:
        exploiter = weights(run_dir / "league" / member.name)
        initial = weights(run_dir / "league" / "initial" / member.name.partition("@")[0])
        assert not close_weights(initial, main)  # built apart from main: the two cases differ
        assert close_weights(exploiter, main if reset_to == "main" else initial), member.name


@pytest.mark.slow
def test_an_alphastar_run_killed_with_sigkill_resumes_with_nothing_committed_lost(tmp_path):
    run_dir = tmp_path / "run"
    args = [*ALPHASTAR_SMOKE, "budget.iterations=5", "eval.every=0", "eval.final_games=0"]
    kill_training_when(run_dir, args, lambda: any(int(p.name.rpartition("_")[2]) >= 2 for p in
                                                  (run_dir / "checkpoints").glob("iter_*")), 600, "checkpoint")
    saved = sorted(p.name for p in (run_dir / "checkpoints").glob("iter_*"))
    last = int(saved[-1].rpartition("_")[2])
    state_at_kill = json.loads((run_dir / "checkpoints" / saved[-1] / "run_state.json").read_text())
    with LeagueStore.open(run_dir, create=False) as store:  # a kill -9 leaves a database that opens
        members_at_kill = {m.name: m.role for m in store.members(kinds=["snapshot"])}
    assert "main_exploiter" in members_at_kill.values()

    proc = train(run_dir, f"resume={run_dir}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"resumed from iter_{last:06d}" in proc.stdout
    final_state = json.loads((run_dir / "checkpoints" / "iter_000005" / "run_state.json").read_text())
    assert final_state["iteration"] == 5 and final_state["env_steps"] > state_at_kill["env_steps"]
    for module_id in EXPLOITERS:  # the counts carry on from the checkpoint
        assert final_state["exploiters"][module_id]["frozen"] >= state_at_kill["exploiters"][module_id]["frozen"]
    with LeagueStore.open(run_dir, create=False) as store:
        members = {m.name: m.role for m in store.members(kinds=["snapshot"])}
        # every member committed before the kill is still there, with its role, and its weights load
        assert members_at_kill.items() <= members.items()
        for member in store.members(kinds=["snapshot"]):
            assert (run_dir / member.spec.removeprefix("ckpt:") / "weights.pt").is_file()
