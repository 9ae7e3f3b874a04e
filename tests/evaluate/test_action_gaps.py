"""`benchmarks/action_gaps.py`: the gaps between a DQN policy's two best legal Q-values, and its refusals."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

from benchmarks.action_gaps import positions, top_two_gaps
from ludo_env.core import ACTION_SPACE, observation_space
from ludo_env.observations import encode
from ludo_env.rules import Rules
from policies.checkpoints import write_policy
from policies.modules import inference_batch, load_checkpoint_player, module_spec

ROOT = Path(__file__).resolve().parents[2]
NETWORK = {"kind": "token_set", "token_hidden": [16], "hidden": [16], "head_hidden": [8]}


def saved(tmp_path: Path, kind: str) -> Path:
    model_config = {"obs": "egocentric", "variant": "classic", "players": 4, "network": NETWORK}
    torch.manual_seed(3)
    module = module_spec(kind, observation_space("egocentric"), ACTION_SPACE, model_config).build()
    return write_policy(tmp_path / kind, kind, model_config, module.state_dict())


def test_the_gaps_are_between_the_best_two_legal_q_values_of_decisions_with_a_choice(tmp_path):
    folder = saved(tmp_path, "dqn")
    gaps = top_two_gaps(str(folder), games=32, plies=30, seed=5)
    states, tab, masks = positions(Rules.load("classic", players=4), 32, 30, 5)
    assert len(gaps) == len(masks) > 0 and (masks.sum(axis=1) >= 2).all()
    module = load_checkpoint_player(folder).module
    with torch.no_grad():
        q = module.compute_q_values(inference_batch(encode("egocentric", states, tab), masks.astype(np.float32)))
    q = q["qf_preds"].numpy()
    for row, gap in enumerate(gaps):
        legal = np.sort(q[row][masks[row] > 0])
        assert gap == legal[-1] - legal[-2] >= 0


def test_the_command_prints_a_row_per_ply_count_and_refuses_a_ppo_policy(tmp_path):
    script = [sys.executable, "benchmarks/action_gaps.py"]
    proc = subprocess.run([*script, f"ckpt:{saved(tmp_path, 'dqn')}", "games=16", "plies=10,40"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith(f"| {tmp_path}")]
    assert [row.split(" | ")[1] for row in rows] == ["10", "40"]
    refused = subprocess.run([*script, str(saved(tmp_path, "ppo"))], cwd=ROOT, capture_output=True, text=True,
                             timeout=300, check=False)
    assert refused.returncode != 0 and refused.stderr.strip().endswith("is no DQN policy: action gaps are gaps "
                                                                       "between Q-values")
