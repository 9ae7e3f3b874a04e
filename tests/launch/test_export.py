"""launch/export.py: exported TorchScript and ONNX models choose the RLModule's greedy moves on 10,000 engine positions.

The policies are real: freshly built PPO and DQN (dueling and plain Q heads)
modules with the mlp and token_set (mean and attention pooling) networks, saved with `write_policy` and read back the way
``ckpt:`` players read them. The positions come from random-move games played
with the engine's batch API, in 4-player and 2-player classic (absent seats are
all-zero blocks, which the token-set network pools around).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from launch.export import export_policy, sidecar_path
from ludo_env.engine import compile_rules, legal_masks, new_batch, step_batch
from ludo_env.observations import encode, feature_names
from ludo_env.rules import Rules

# torch 2.13 deprecates torch.jit; TorchScript files are still what libtorch loads, so the export keeps the format.
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.load` is deprecated:DeprecationWarning")
ROOT = Path(__file__).resolve().parents[2]
try:
    import onnxruntime
except ImportError:  # TorchScript needs nothing beyond torch; ONNX needs the export extra (in the test extra too)
    onnxruntime = None
needs_onnx = pytest.mark.skipif(onnxruntime is None, reason="ONNX needs the export extra: pip install -e '.[export]'")
POSITIONS = {4: 7_500, 2: 2_500}  # players -> positions; 10,000 in all
SMALL_MLP = {"kind": "mlp", "hidden": [64, 64]}
SMALL_TOKEN_SET = {"kind": "token_set", "token_hidden": [32], "hidden": [32], "head_hidden": [16]}
POLICIES = {
    "ppo-mlp": ("ppo", SMALL_MLP),
    "ppo-token_set": ("ppo", SMALL_TOKEN_SET),
    "dqn-mlp": ("dqn", SMALL_MLP),
    "dqn-token_set-attention-plain": ("dqn", {**SMALL_TOKEN_SET, "pooling": "attention", "attention_heads": 2}),
    "dqn-token_set-c51": ("dqn", SMALL_TOKEN_SET),
    "dqn-mlp-c51-plain": ("dqn", SMALL_MLP),
}
DUELING = {"dqn-mlp", "dqn-token_set-c51"}  # the other DQN is a plain Q head
ATOMS = {"dqn-token_set-c51": 11, "dqn-mlp-c51-plain": 51}  # distributional; its scores are the expected Q-values


def random_game_positions(players: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """`(observations, masks)` of `n` decisions drawn from every move of random-move classic games."""
    tab = compile_rules(Rules.load("classic", players=players))
    games = 160
    states, dice = new_batch(tab, games, seed, first_seats=np.arange(games) % players)
    masks = np.zeros((games, 4), dtype=np.int8)
    legal_masks(states, tab, masks)
    events = np.zeros(games, dtype=np.int32)
    walker = np.random.default_rng(seed)
    seen_states, seen_masks = [], []
    while masks.any():
        waiting = masks.any(axis=1)
        seen_states.append(states[waiting].copy())
        seen_masks.append(masks[waiting].copy())
        choice = (walker.random(masks.shape) + masks).argmax(axis=1)  # a uniformly random legal token
        step_batch(states, tab, dice, choice, events, masks)
    all_states, all_masks = np.concatenate(seen_states), np.concatenate(seen_masks)
    assert len(all_states) >= n, "play more games"
    pick = walker.choice(len(all_states), size=n, replace=False)
    return encode("egocentric", all_states[pick], tab), all_masks[pick]


@pytest.fixture(scope="module")
def positions():
    parts = [random_game_positions(players, n, seed=players) for players, n in POSITIONS.items()]
    observations, masks = (np.concatenate(column) for column in zip(*parts))
    assert len(observations) == 10_000
    # The positions are real decisions of every kind, not one repeated opening.
    assert (masks.sum(axis=1) == 1).any() and (masks.sum(axis=1) == 4).any()
    assert len(np.unique(observations, axis=0)) > 9_000
    return observations, masks


@pytest.fixture(scope="module")
def policies(tmp_path_factory):
    from ludo_env.core import ACTION_SPACE, observation_space
    from policies.checkpoints import write_policy
    from policies.modules import module_spec

    root = tmp_path_factory.mktemp("policies")
    folders = {}
    for i, (name, (kind, network)) in enumerate(POLICIES.items()):
        model_config = {"obs": "egocentric", "variant": "classic", "players": 4, "network": network}
        if kind == "dqn":
            model_config |= {"dueling": name in DUELING, "double_q": True, "num_atoms": ATOMS.get(name, 1),
                             "v_min": -2.0, "v_max": 2.0}
        torch.manual_seed(i)
        module = module_spec(kind, observation_space("egocentric"), ACTION_SPACE, model_config).build()
        folders[name] = write_policy(root / name, kind, model_config, module.state_dict())
    return folders


def module_outputs(folder: Path, observations: np.ndarray, masks: np.ndarray):
    """The saved policy as the platform plays it: (greedy moves of its `ModulePlayer`, its raw action scores)."""
    from ray.rllib.algorithms.dqn.default_dqn_rl_module import QF_PREDS
    from ray.rllib.core.columns import Columns

    from policies.modules import ACTION_MASK, OBSERVATIONS, load_checkpoint_player

    player = load_checkpoint_player(folder)
    batch = {Columns.OBS: {OBSERVATIONS: torch.as_tensor(observations),
                           ACTION_MASK: torch.as_tensor(masks, dtype=torch.float32)}}
    with torch.no_grad():
        if json.loads((folder / "policy.json").read_text())["kind"] == "ppo":
            scores = player.module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
        else:
            scores = player.module.compute_q_values(batch)[QF_PREDS]
    return player.act(observations, masks), scores.numpy()


def run_onnx(path: Path, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(["scores"], {"observations": observations, "action_mask": masks.astype(np.int8)})[0]


def run_torchscript(path: Path, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    model = torch.jit.load(str(path))
    with torch.no_grad():
        return model(torch.as_tensor(observations), torch.as_tensor(masks)).numpy()


RUNNERS = {"onnx": (run_onnx, "onnx"), "torchscript": (run_torchscript, "pt")}


@pytest.mark.parametrize("fmt", [pytest.param("onnx", marks=needs_onnx), "torchscript"])
@pytest.mark.parametrize("name", POLICIES)
def test_exported_greedy_moves_equal_the_rlmodules_on_10000_engine_positions(policies, positions, tmp_path, name, fmt):
    observations, masks = positions
    run, suffix = RUNNERS[fmt]
    out = tmp_path / f"agent.{suffix}"
    export_policy(policies[name], fmt, out, check=0)  # check=0: this test is the check

    scores = run(out, observations, masks)
    expected_moves, module_scores = module_outputs(policies[name], observations, masks)

    assert scores.dtype == np.float32 and scores.shape == (10_000, 4)
    np.testing.assert_array_equal(scores.argmax(axis=1), expected_moves)
    legal = masks > 0
    assert np.isneginf(scores[~legal]).all() and np.isfinite(scores[legal]).all()
    np.testing.assert_allclose(scores[legal], module_scores[legal], rtol=1e-5, atol=1e-5)


def test_the_torchscript_model_takes_any_mask_dtype(policies, positions, tmp_path):
    observations, masks = (a[:500] for a in positions)
    out = tmp_path / "agent.pt"
    export_policy(policies["ppo-token_set"], "torchscript", out, check=0)
    reference = run_torchscript(out, observations, masks)
    for dtype in (np.bool_, np.int32, np.int64, np.float32):
        np.testing.assert_array_equal(run_torchscript(out, observations, masks.astype(dtype)), reference)


@needs_onnx
def test_the_metadata_describes_the_model_inputs_and_outputs(policies, tmp_path):
    out = tmp_path / "agent.onnx"
    export_policy(policies["dqn-mlp"], "onnx", out, check=200, seed=5)
    meta = json.loads(sidecar_path(out).read_text())
    assert sidecar_path(out) == tmp_path / "agent.onnx.json"
    assert meta["model"]["file"] == "agent.onnx" and meta["model"]["format"] == "onnx" and meta["model"]["opset"]
    assert meta["policy"]["kind"] == "dqn" and meta["policy"]["scores"] == "q_values" and meta["policy"]["dueling"]
    assert meta["policy"]["num_atoms"] == 1
    assert meta["rules"] == {"variant": "classic", "players": 4}
    assert meta["observations"]["encoder"] == "egocentric" and meta["observations"]["obs_dim"] == 176
    assert meta["observations"]["feature_names"] == feature_names("egocentric")
    assert meta["check"]["positions"] == 200 and meta["check"]["seed"] == 5
    session = onnxruntime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    declared = {i["name"]: i for i in meta["inputs"] + meta["outputs"]}
    for arg, onnx_type in ((session.get_inputs()[0], "tensor(float)"), (session.get_inputs()[1], "tensor(int8)"),
                           (session.get_outputs()[0], "tensor(float)")):
        assert arg.name in declared and arg.type == onnx_type
        assert f"tensor({declared[arg.name]['dtype']})".replace("float32", "float") == onnx_type
        assert arg.shape[1] == declared[arg.name]["shape"][1] and isinstance(arg.shape[0], str)  # any batch size
    assert len(meta["actions"]) == 4 and "argmax" in meta["greedy"]


def export_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "launch/export.py", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False)


def test_the_command_writes_the_model_and_checks_it(policies, tmp_path):
    run = export_cli(f"ckpt={policies['ppo-mlp']}", f"out={tmp_path / 'agent.pt'}", "check=300")
    assert run.returncode == 0, run.stderr
    assert f"-> {tmp_path / 'agent.pt'} (torchscript)" in run.stdout
    assert "agrees with the policy's on all 300 positions" in run.stdout
    assert (tmp_path / "agent.pt").is_file() and (tmp_path / "agent.pt.json").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary folder left


def test_a_policy_as_training_saves_it_exports_and_checks_under_its_recorded_rules(tmp_path):
    # Training records the variant as its rule fields (a mapping), not a name: the check plays those rules.
    shipped = ROOT / "benchmarks" / "policies" / "default_pyludo_8M" / "policy"
    assert isinstance(json.loads((shipped / "policy.json").read_text())["model_config"]["variant"], dict)
    run = export_cli(f"ckpt={shipped}", f"out={tmp_path / 'agent.pt'}", "check=100")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "agrees with the policy's on all 100 positions" in run.stdout


@pytest.mark.parametrize(
    "args,expected",
    [
        (["out=x.onnx"], "error: ckpt=<path> is required"),
        (["ckpt=/no/such/run", "out=x.onnx"], "error: ckpt '/no/such/run' does not exist"),
        (["ckpt=tests", "out=x.onnx"], "error: 'tests' holds no policy: give a run folder"),
        (["ckpt=tests"], "error: out=<file> is required"),
        (["ckpt=tests", "out=x.bin"], "error: format is not set and out 'x.bin' does not say it"),
        (["ckpt=tests", "out=x.pt", "format=savedmodel"], "error: format=savedmodel is not allowed: choose"),
        (["ckpt=tests", "out=x.onnx", "format=torchscript"], "error: out 'x.onnx' ends in .onnx but format="),
        (["ckpt=tests", "out=tests", "format=onnx"], "error: out 'tests' is a folder"),
        (["ckpt=tests", "out=x.onnx", "chek=10"], "error: Could not override 'chek'"),
    ],
)
def test_user_errors_are_one_line_on_stderr_and_exit_2(args, expected):
    run = export_cli(*args)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and run.stderr.startswith(expected), run.stderr
    assert run.stdout == ""
