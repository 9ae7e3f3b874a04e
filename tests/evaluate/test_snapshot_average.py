"""`benchmarks/snapshot_average.py`: a run's last snapshots averaged tensor by tensor, then played paired."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from benchmarks.snapshot_average import average_policy, compare, snapshot_folders
from launch.cli import UserError
from ludo_env.core import ACTION_SPACE, observation_space
from policies.checkpoints import load_weights, write_policy
from policies.league.store import LeagueStore
from policies.modules import module_spec

ROOT = Path(__file__).resolve().parents[2]
MODEL_CONFIG = {"obs": "egocentric", "variant": "classic", "players": 4,
                "network": {"kind": "token_set", "token_hidden": [16], "hidden": [16], "head_hidden": [8]}}


def fake_run(tmp_path: Path, seeds: list[int]) -> Path:
    """A run folder whose league holds one DQN snapshot per seed (iterations 10, 20, ...), written as training
    writes them, plus a bot member that must be skipped."""
    run = tmp_path / "run"
    with LeagueStore.open(run / "league.db") as store:
        store.add_member("random", "bot", "random")
        # joined out of order: the folders must come back by iteration
        for i, seed in sorted(enumerate(seeds), key=lambda item: -item[0]):
            torch.manual_seed(seed)
            module = module_spec("dqn", observation_space("egocentric"), ACTION_SPACE, MODEL_CONFIG).build()
            name = f"main@{10 * (i + 1)}"
            write_policy(run / "league" / name, "dqn", MODEL_CONFIG, module.state_dict())
            store.add_member(name, "snapshot", f"ckpt:league/{name}", iteration=10 * (i + 1))
    return run


def test_the_average_is_the_mean_of_every_tensor_of_the_chosen_snapshots(tmp_path):
    run = fake_run(tmp_path, [1, 2, 3])
    folders = snapshot_folders(run)
    assert [f.name for f in folders] == ["main@10", "main@20", "main@30"]
    averaged = average_policy(folders[-2:], tmp_path / "avg")
    mean, parts = load_weights(averaged), [load_weights(f) for f in folders[-2:]]
    assert mean.keys() == parts[0].keys()
    for key, tensor in mean.items():
        torch.testing.assert_close(tensor, (parts[0][key] + parts[1][key]) / 2)
    assert not torch.equal(parts[0][next(iter(mean))], parts[1][next(iter(mean))])


def test_the_command_plays_both_on_the_same_games_and_refuses_a_folder_without_a_league(tmp_path):
    script = [sys.executable, "benchmarks/snapshot_average.py"]
    run = fake_run(tmp_path, [4, 4])  # identical snapshots: the average plays exactly as the last one
    proc = subprocess.run([*script, str(run), "--last", "2", "--games", "40", "--opponents", "random"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = next(line for line in proc.stdout.splitlines() if "vs 3 random" in line)
    assert "averaged - last +0.0% [+0.0%, +0.0%] (40 games" in line
    assert (run / "averaged_last2" / "weights.pt").is_file()
    refused = subprocess.run([*script, str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                             check=False)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [f"error: '{tmp_path}' has no league.db: give a PPO or DQN run folder"]


def test_one_snapshot_is_not_enough(tmp_path):
    with pytest.raises(UserError, match="has 1 snapshot"):
        compare(fake_run(tmp_path, [1]), 5, 10, 0, ["random"])
