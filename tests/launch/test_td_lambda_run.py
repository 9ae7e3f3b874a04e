"""``python launch/train.py +exp=td_lambda`` end to end: checkpoints, kill -9 and resume, the summary, the saved
agent playing through ``ckpt:``, and bad settings refused in one line."""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from policies.checkpoints import find_policy
from tests.launch.configs import kill_training_when, metrics, script_env, train_config

ROOT = Path(__file__).resolve().parents[2]
TINY = ["+exp=td_lambda", "algo.games=32", "algo.steps_per_iteration=50", "eval.every=2", "eval.games=20",
        "eval.final_games=40", "checkpoint.every=1", "wandb.mode=offline"]



def test_a_killed_run_resumes_and_its_agent_plays_through_ckpt(tmp_path):
    run_dir = tmp_path / "run"
    kill_training_when(run_dir, [*TINY, "budget.iterations=200"],
                       lambda: (run_dir / "checkpoints" / "iter_000002").is_dir(), 120, "checkpoint")
    assert (run_dir / "overrides.txt").read_text().splitlines()[0] == "+exp=td_lambda"
    last = max(int(p.name.rpartition("_")[2]) for p in (run_dir / "checkpoints").glob("iter_*"))
    at_kill = json.loads((run_dir / "checkpoints" / f"iter_{last:06d}" / "run_state.json").read_text())

    end = last + 2
    proc = subprocess.run([sys.executable, "launch/train.py", f"resume={run_dir}", f"budget.iterations={end}",
                           f"hydra.run.dir={run_dir}"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=script_env(), check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert f"resumed from iter_{last:06d}" in proc.stdout and "reproduce with:" in proc.stdout
    rows = metrics(run_dir)
    # Rows after the checkpoint (played before the kill) were dropped and played again: each iteration once.
    assert [r["iteration"] for r in rows] == list(range(1, end + 1))
    assert rows[last]["env_steps"] == at_kill["env_steps"] + 32 * 50
    assert all(r["env_steps_per_s"] > 0 for r in rows) and "eval/win_rate_vs_random" in rows[1]
    assert list((run_dir / "wandb").glob("offline-run-*")), "no offline wandb run"

    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["iterations"] == end and summary["env_steps"] == end * 32 * 50
    policy = Path(summary["policy"])
    assert find_policy(run_dir) == policy == run_dir / "checkpoints" / f"iter_{end:06d}" / "policy"
    assert summary["final_evaluation"]["iteration"] == end  # the learning-curve script places it by iteration
    final = {r["opponent"]: r for r in summary["final_evaluation"]["results"]}
    assert set(final) == {"random", "hybrid"} and all(r["games"] == 40 for r in final.values())
    best = summary["best"]  # evaluated every 2 iterations, settled against the last policy over the final games
    assert best["iteration"] in {e["iteration"] for e in summary["evaluations"]} | {end}
    assert best["score"] == pytest.approx(sum(r["win_rate"] for r in best["final_evaluation"]["results"]) / 2)

    # ckpt:<run> plays, in the evaluator and as a player; the printed command names the same games.
    from ludo_env.rules import Rules
    from policies.players import make_player
    from policies.search import GreedyPlayer
    from policies.tournament import play_tournament

    assert isinstance(make_player(f"ckpt:{run_dir}"), GreedyPlayer)
    assert isinstance(make_player(f"ckpt:{best['policy']}"), GreedyPlayer)
    command = next(c for c in summary["evaluate_commands"] if ",random," in c)
    args = dict(a.split("=", 1) for a in shlex.split(command)[2:])
    players = args["players"].strip("[]").split(",")
    assert players[0] == f"ckpt:{policy}"
    result = play_tournament(players, int(args["games"]), Rules.load(args["variant"]), int(args["seed"]), rate=False)
    ours = next(r for r in result.rows if r.player == players[0])
    assert ours.win_rate == pytest.approx(final["random"]["win_rate"])


def test_bad_settings_are_refused_in_one_line(tmp_path):
    proc = subprocess.run([sys.executable, "launch/train.py", "+exp=td_lambda", "algo.value=mlp",
                           "algo.method=true_online", f"hydra.run.dir={tmp_path / 'run'}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, env=script_env(), check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines == ["error: algo.method=true_online needs algo.value=linear: use algo.method=td_lambda for the mlp"]
    for override, message in [("algo.lam=1.5", "algo.lam=1.5 is not allowed"),
                              ("algo.alpha=-1", "algo.alpha=-1.0 is not allowed"),
                              ("algo.value=tabular", "algo.value='tabular' is not allowed: choose linear or mlp"),
                              ("algo.method=sarsa", "algo.method='sarsa' is not allowed"),
                              ("algo.games=0", "algo.games=0 is not allowed"),
                              ("algo.epsilon=2", "algo.epsilon=2.0 is not allowed")]:
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            train_config("+exp=td_lambda", override)
    cfg = train_config("+exp=td_lambda", "variant=pyludo", "algo.value=mlp", "algo.hidden=[32]")
    assert cfg.algo.hidden == [32] and cfg.algo.alpha is None and cfg.budget.minutes == 15
