"""`benchmarks/move_gaps.py`: the gains of the other legal tokens over a policy's own, by paired rollouts."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from benchmarks.move_gaps import gaps, positions
from ludo_env.engine.layout import OVER, compile_rules
from ludo_env.rules import Rules
from policies.players import make_player

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = [sys.executable, "benchmarks/move_gaps.py"]


def test_positions_are_the_policy_s_own_games_at_each_ply_with_a_choice():
    tab = compile_rules(Rules.load("classic"))
    policy = make_player("hybrid")
    taken = positions(policy, tab, games=12, plies=[0, 40], seed=3)
    assert [ply for ply, _, _ in taken] == [0, 40]
    for _, states, masks in taken:
        assert (states[:, OVER] == 0).all() and (masks.sum(axis=1) > 1).all()


def test_the_gains_are_the_other_tokens_paired_with_the_policy_s_own():
    tab = compile_rules(Rules.load("classic"))
    player = make_player("rollout:hybrid?n=4", seed=2)
    ((_, states, masks),) = positions(player.policy, tab, games=12, plies=[40], seed=3)
    found = gaps(player, states, masks, tab)
    assert found["decisions"] == states.shape[0]
    assert found["alternatives"] == int(masks.sum()) - states.shape[0]  # every legal token but the policy's own
    assert len(found["gain"]) == len(found["standard_error"]) == found["alternatives"]
    assert found["rollouts"] == int(masks.sum()) * 4
    # a gain of paired wins and losses lies in -1..1, and its standard error follows its spread
    assert all(-1 <= g <= 1 for g in found["gain"])
    np.testing.assert_allclose(found["standard_error"], np.asarray(found["paired_spread"]) / 2)


def test_the_command_prints_the_table_and_writes_every_gap(tmp_path):
    out = tmp_path / "gaps.json"
    proc = subprocess.run([*SCRIPT, "hybrid", "--variant", "pyludo", "--games", "8", "--plies", "20,60",
                           "--rollouts", "4", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| ")]
    assert [r.split(" | ")[0] for r in rows[2:]] == ["| 20", "| 60", "| all"]
    report = json.loads(out.read_text())
    assert report["variant"] == "pyludo" and report["rollouts_per_token"] == 4 and report["plies"] == [20, 60]
    by_ply = report["by_ply"]
    assert report["all"]["alternatives"] == sum(len(by_ply[p]["gain"]) for p in ("20", "60"))


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    for args, message in [
        (["hybrid", "--plies", "x"], "error: --plies 'x' is not allowed: give plies >= 0, e.g. 30,90,150"),
        (["hybrid", "--rollouts", "1"], "error: --rollouts 1 is not allowed: give a number in 2..1024"),
        (["nobot"], "error: player 'rollout:nobot?n=256': the rollout policy 'nobot' is not allowed"),
        (["champion:pyludo", "--variant", "classic"],
         "error: champion:pyludo was trained for pyludo: drop --variant classic or give --variant pyludo"),
    ]:
        proc = subprocess.run([*SCRIPT, *args], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
        assert proc.returncode == 2, args
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(message), lines


def test_a_variant_the_policy_file_names_by_path_is_refused_not_read(tmp_path):
    from tests.league.tiny_policy import write_tiny_policy

    folder = write_tiny_policy(tmp_path / "policy")
    meta = json.loads((folder / "policy.json").read_text())
    meta["model_config"]["variant"] = str(ROOT / "conf" / "variant" / "classic.yaml")  # a path, not a name
    (folder / "policy.json").write_text(json.dumps(meta))
    proc = subprocess.run([*SCRIPT, f"ckpt:{folder}", "--games", "2", "--rollouts", "2"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: unknown variant '"), lines
