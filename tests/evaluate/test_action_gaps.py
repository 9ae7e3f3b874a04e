"""`benchmarks/action_gaps.py`: the gaps between a DQN policy's two best legal Q-values, and its refusals."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

from benchmarks.action_gaps import top_two_gaps
from launch.export import random_positions
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
    gaps = top_two_gaps(str(folder), positions=300, seed=5)
    states, tab, masks = random_positions(Rules.load("classic", players=4), 300, 5)
    choice = masks.sum(axis=1) >= 2
    states, masks = states[choice], masks[choice]
    assert len(gaps) == len(masks) > 100
    module = load_checkpoint_player(folder).module
    with torch.no_grad():
        q = module.compute_q_values(inference_batch(encode("egocentric", states, tab), masks.astype(np.float32)))
    q = q["qf_preds"].numpy()
    for row, gap in enumerate(gaps):
        legal = np.sort(q[row][masks[row] > 0])
        assert gap == legal[-1] - legal[-2] >= 0


def test_the_command_prints_a_row_per_policy_and_refuses_a_ppo_policy(tmp_path):
    script = [sys.executable, "benchmarks/action_gaps.py"]
    policy = saved(tmp_path, "dqn")
    proc = subprocess.run([*script, f"ckpt:{policy}", str(policy), "--positions", "200"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line for line in proc.stdout.splitlines() if line.startswith(f"| {tmp_path}")]
    assert len(rows) == 2 and rows[0] == rows[1]  # the same positions for every policy
    quantiles = [float(q) for q in rows[0].split(" | ")[2].rstrip(" |").split(" / ")]
    assert len(quantiles) == 4 and quantiles == sorted(quantiles) and quantiles[0] >= 0
    refused = subprocess.run([*script, str(saved(tmp_path, "ppo"))], cwd=ROOT, capture_output=True, text=True,
                             timeout=300, check=False)
    assert refused.returncode != 0 and refused.stderr.strip().endswith("is no DQN policy: action gaps are gaps "
                                                                       "between Q-values")
