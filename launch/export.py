"""Export a saved policy as one TorchScript or ONNX model, usable without this project, Ray or RLlib.

    python launch/export.py ckpt=outputs/train/<run> format=onnx out=agent.onnx
    python launch/export.py ckpt=outputs/train/<run>/checkpoints/iter_200 format=torchscript out=agent.pt
    python launch/export.py ckpt=outputs/train/<run>/best/policy out=agent.onnx   # the run's best-evaluated

Arguments (``conf/export.yaml``, typed by `ExportConfig`): ``ckpt`` is a
training run folder (its newest checkpoint), a checkpoint folder or a policy
folder (``policy.json`` + ``weights.pt``, `policies.checkpoints`); PPO and DQN
policies are both exported, dueling, double-Q and distributional DQN included. ``format`` is
``torchscript`` or ``onnx`` (left out: read from the suffix of ``out``, .onnx
or .pt). ``out`` is the model file; the metadata goes next to it as
``<out>.json``. ``check`` (default 1000) plays that many positions from random
engine games and refuses to write a model whose greedy moves differ from the
policy's on any of them (``check=0`` skips it). ONNX needs the ``export``
extra: ``pip install -e ".[export]"``. A bad argument prints one line to stderr
and exits 2; a failed check exits 1 and writes nothing.

The model
---------
One function of two inputs, batched along the first axis (any batch size ``B``):

===============  =========================  ======================================================
``observations`` float32 ``(B, obs_dim)``   the policy's encoder features of the position, seen
                                            by the player to move (below)
``action_mask``  ``(B, 4)``                 entry t > 0: token t of the player to move may move
                                            with the die; ONNX: int8; TorchScript: int8, bool,
                                            int32, int64 or float32
``scores``       float32 ``(B, 4)``         the output: one score per token, ``-inf`` for every
                                            illegal token; PPO: the policy's logits (softmax over
                                            the legal ones gives its move probabilities); DQN: the
                                            Q-values (dueling: ``V + A - mean(A)``; with
                                            ``num_atoms`` > 1 in the metadata, each is the mean of
                                            the action's return distribution)
===============  =========================  ======================================================

The greedy move, the one the platform plays with this policy (``ckpt:`` players,
evaluation), is ``argmax(scores)``, the lowest index on ties. Action t means
"move my token t by the die"; token indices are the seat's own (0..3, never
rotated). A row whose mask has no legal token scores all ``-inf``; the engine
never asks for a move there (rolls without a legal move pass the turn). ONNX
Runtime and TorchScript both carry ``-inf`` through unchanged, so the output
needs no sentinel value.

The observations
----------------
The model holds only the network: the features are computed by the caller,
exactly as ``ludo_env.observations.encode(encoder, states, tab)`` computes them
(the numba kernels there are the reference). The encoder's name, ``obs_dim``
and the name of every column are in the metadata (``observations``). All
encoders read the position from the mover's point of view
(`ludo_env.engine.frame.view_from`): track squares are counted from the
mover's own start square (0) and the opponents follow in turn order.

For the default encoder, ``egocentric`` (176 floats), the columns are blocks:

* ``16 t .. 16 t + 15``, t = 0..3: the mover's token t: in_base, on_track,
  in_column, finished (one-hot), progress (steps / home), on_safe, danger,
  legal, progress_after, captures, ends_safe, danger_after, sent_back,
  finishes, gap_ahead, gap_behind;
* ``64 + 32 (r - 1) + 8 t .. + 7``, r = 1..3 (the next seats in turn order),
  t = 0..3: opponent token: in_base, on_track, in_column, finished, square
  (seen from the mover / track length), progress, threatens, target;
* ``160 .. 175``: the die one-hot (6), finished tokens per row (4), row still
  playing (4), sixes in a row / 3, progress lead.

Seats and tokens a variant does not use are all zeros. What each feature
measures is in the docstring of `ludo_env.observations`.

The metadata (``<out>.json``)
-----------------------------
``format`` (``ludo-league-export/1``); ``model``: file, format, opset (ONNX),
torch version; ``policy``: the source folder, ``kind`` (ppo or dqn),
``scores`` (logits or q_values), the network; ``rules``: the ``variant``
(name or full mapping of rule fields) and ``players`` the policy was trained
for; ``observations``: ``encoder``, ``obs_dim``, ``feature_names``;
``inputs`` and ``outputs``: name, dtype, shape, meaning; ``actions``: the
meaning of each index; ``greedy``; ``check``: how many positions from random games the greedy
moves were checked on (all agreed) and their seed.
"""
from __future__ import annotations

import io
import json
import logging
import os
import shutil
import sys
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import launch  # noqa: F401  (first: it refuses a Python other than 3.11 in one line)

# isort: split
from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from launch.cli import (
    MAX_GAMES,
    MIN_FREE_BYTES,
    RAY_DEPRECATIONS,
    UserError,
    catch_interrupts,
    check_integers,
    check_output,
    compose,
    emit,
    fail,
    options_help,
    stop_interrupted,
)

EXPORT_FORMAT = "ludo-league-export/1"
FORMATS = ("torchscript", "onnx")
SUFFIX_FORMATS = {".onnx": "onnx", ".pt": "torchscript", ".pts": "torchscript", ".torchscript": "torchscript"}
OBS_INPUT, MASK_INPUT, SCORES_OUTPUT = "observations", "action_mask", "scores"
ACTIONS = 4
ONNX_MASK_DTYPE = "int8"  # the env's own mask dtype (gymnasium's), the smallest ONNX Runtime takes everywhere
TORCHSCRIPT_MASK_DTYPES = ("int8", "bool", "int32", "int64", "float32")


@dataclass
class ExportConfig:
    ckpt: str | None = None
    """A training run folder, a checkpoint folder or a policy folder."""
    format: str | None = None
    """torchscript or onnx; None: from the suffix of `out`."""
    out: str | None = None
    """The model file; the metadata is written to <out>.json."""
    check: int = 1000
    """Engine positions on which the exported model must choose the policy's greedy moves; 0 skips."""
    seed: int = 0
    """Dice of the check's random games."""

    RANGES: ClassVar[dict[str, tuple[int, int]]] = {"check": (0, MAX_GAMES)}
    """What each numeric setting allows (`parse_args` checks it, the reference page shows it)."""
    ALLOWED: ClassVar[dict[str, str]] = {"format": f"{' or '.join(FORMATS)}, or null: from the suffix of out",
                                         "seed": "an integer >= 0"}


ConfigStore.instance().store(name="export_schema", node=ExportConfig)


class ExportCheckError(RuntimeError):
    """The exported model disagrees with the policy; nothing was written."""


def sidecar_path(out: str | Path) -> Path:
    return Path(f"{out}.json")


# ------------------------------------------------------------------ arguments
def _space_needed(ckpt: Path) -> int:
    """Free bytes the export needs beside `out`: the model and its check copy are about the size of the policy's
    weights each, plus the metadata."""
    weights = ckpt.rglob("weights.pt") if ckpt.is_dir() else ()
    return MIN_FREE_BYTES + 2 * max((w.stat().st_size for w in weights), default=0)


def parse_args(argv: list[str]) -> ExportConfig:
    """The config from key=value arguments; every problem a `UserError` of one line, before torch is imported."""
    cfg: ExportConfig = OmegaConf.to_object(compose("export", argv))  # type: ignore[assignment]
    check_integers(cfg, ExportConfig.RANGES)
    if not cfg.ckpt:
        raise UserError("ckpt=<path> is required: a training run folder, a checkpoint folder or a policy folder")
    if not Path(cfg.ckpt).exists():
        raise UserError(f"ckpt '{cfg.ckpt}' does not exist")
    if not cfg.out:
        raise UserError("out=<file> is required: where the model goes, e.g. out=agent.onnx")
    out = Path(cfg.out)
    if out.is_dir():
        raise UserError(f"out '{out}' is a folder: give a file name, e.g. out={out / 'agent.onnx'}")
    check_output(out, "out", min_free=_space_needed(Path(cfg.ckpt)))
    implied = SUFFIX_FORMATS.get(out.suffix.lower())
    if cfg.format is None:
        if implied is None:
            raise UserError(f"format is not set and out '{out}' does not say it: add format=torchscript or format=onnx")
        cfg.format = implied
    if cfg.format not in FORMATS:
        raise UserError(f"format={cfg.format} is not allowed: choose {' or '.join(FORMATS)}")
    if implied is not None and implied != cfg.format:
        raise UserError(f"out '{out}' ends in {out.suffix} but format={cfg.format}: make them agree")
    if cfg.check < 0:
        raise UserError(f"check={cfg.check} is not allowed: give a number of positions >= 0 (0 skips the check)")
    if cfg.format == "onnx":
        missing = [name for name in ("onnx", "onnxscript", "onnxruntime") if not _importable(name)]
        if missing:
            raise UserError(f"format=onnx needs {', '.join(missing)}: pip install -e '.[export]'")
    return cfg


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


# ------------------------------------------------------------------ the graph
def scores_module(module, kind: str):
    """A `torch.nn.Module` mapping (observations, action_mask) to masked action scores: what gets exported.

    It runs the RLModule's own code, so the exported graph is the module's: PPO's
    ``forward_inference`` logits and DQN's ``compute_q_values`` (the values DQN's
    greedy action is the argmax of). The mask is applied again through the one
    masking helper with ``-inf``: PPO masks with a finite number for training's
    sake, and the exported contract is the same ``-inf`` for both kinds.
    """
    import torch
    from ray.rllib.core.columns import Columns

    from policies.algorithms import module_algorithm
    from policies.modules import ACTION_MASK, OBSERVATIONS, mask_illegal

    algorithm = module_algorithm(kind)

    class MaskedScores(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.module = module

        def forward(self, observations, action_mask):
            # Float first: a traced `torch.as_tensor` inside the module would otherwise freeze the
            # example's mask dtype, and float keeps "> 0 is legal" for every dtype a caller sends.
            mask = action_mask.to(torch.float32)
            batch = {Columns.OBS: {OBSERVATIONS: observations, ACTION_MASK: mask}}
            return mask_illegal(algorithm.scores(self.module, batch), mask, float("-inf"))

    return MaskedScores().eval()


def _example_inputs(obs_dim: int):
    """Two rows, different masks: tracing sees a real batch, not a size-1 axis it might specialise."""
    import torch

    observations = torch.zeros((2, obs_dim), dtype=torch.float32)
    mask = torch.tensor([[1, 0, 1, 1], [0, 1, 0, 0]], dtype=torch.int8)
    return observations, mask


def write_torchscript(wrapper, obs_dim: int, path: Path) -> dict[str, Any]:
    import torch

    with warnings.catch_warnings():
        # torch 2.13 marks torch.jit as deprecated and warns about Python values frozen by tracing; the format
        # still loads in libtorch and torch.jit.load, and export_policy's check catches a trace that froze too much.
        warnings.simplefilter("ignore")
        traced = torch.jit.trace(wrapper, _example_inputs(obs_dim))
        # Saved to memory, written by Python: a failed write (a full disk) in torch's C++ writer aborts the
        # process, past every cleanup; here it is an OSError.
        buffer = io.BytesIO()
        torch.jit.save(traced, buffer)
        path.write_bytes(buffer.getvalue())
    return {"format": "torchscript", "torch": torch.__version__}


def write_onnx(wrapper, obs_dim: int, path: Path) -> dict[str, Any]:
    import onnx
    import torch

    batch = torch.export.Dim("batch")
    with warnings.catch_warnings(), _quiet_logs("torch", "onnxscript"):
        warnings.simplefilter("ignore")  # exporter progress notes about dynamic axes and deprecated pytree names
        torch.onnx.export(
            wrapper,
            _example_inputs(obs_dim),
            str(path),
            dynamo=True,  # the torch.export-based exporter; the TorchScript one cannot export dueling DQN's nanmean
            input_names=[OBS_INPUT, MASK_INPUT],
            output_names=[SCORES_OUTPUT],
            dynamic_shapes={"observations": {0: batch}, "action_mask": {0: batch}},
            external_data=False,  # one self-contained file
            verbose=False,
        )
    model = onnx.load(str(path))
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), None)
    return {"format": "onnx", "opset": opset, "torch": torch.__version__}


class _quiet_logs:
    """Raise the given loggers to ERROR for a while (the exporter logs skipped torchvision ops and progress)."""

    def __init__(self, *names: str):
        self.loggers = [logging.getLogger(n) for n in names]

    def __enter__(self):
        self.levels = [lg.level for lg in self.loggers]
        for lg in self.loggers:
            lg.setLevel(logging.ERROR)

    def __exit__(self, *exc):
        for lg, level in zip(self.loggers, self.levels):
            lg.setLevel(level)


# ------------------------------------------------------------------ running an exported model
def load_exported(path: str | Path, fmt: str):
    """A numpy function ``(observations, action_mask) -> scores`` running the exported file as others would."""
    import numpy as np

    if fmt == "onnx":
        import onnxruntime

        session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])

        def run(observations, action_mask):
            feeds = {OBS_INPUT: np.asarray(observations, dtype=np.float32),
                     MASK_INPUT: np.asarray(action_mask).astype(ONNX_MASK_DTYPE)}
            return session.run([SCORES_OUTPUT], feeds)[0]

        return run
    import torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # torch.jit's deprecation, as in write_torchscript
        scripted = torch.jit.load(str(path), map_location="cpu")

    def run_torchscript(observations, action_mask):
        with torch.no_grad():
            return scripted(torch.as_tensor(np.asarray(observations, dtype=np.float32)),
                            torch.as_tensor(np.asarray(action_mask))).numpy()

    return run_torchscript


def random_positions(rules, n: int, seed: int):
    """``(states, tab, masks)``: `n` decisions met in random-move games under `rules`, spread over whole games."""
    import numpy as np

    from ludo_env.engine import compile_rules, legal_masks, new_batch, step_batch

    tab = compile_rules(rules)
    games = max(8, min(512, n // 20))
    rng = np.random.default_rng(seed)
    kept_states, kept_masks, kept = [], [], 0
    round_ = 0
    while kept < n:
        states, dice = new_batch(tab, games, seed + round_, first_seats=np.arange(games) % rules.players)
        masks = np.zeros((games, ACTIONS), dtype=np.int8)
        legal_masks(states, tab, masks)
        events = np.zeros(games, dtype=np.int32)
        # Keep a random third of each step's decisions: positions from every stage of a game, not runs of neighbours.
        while kept < n and masks.any():
            waiting = np.flatnonzero(masks.any(axis=1) & (rng.random(games) < 1 / 3))[: n - kept]
            kept_states.append(states[waiting].copy())
            kept_masks.append(masks[waiting].copy())
            kept += len(waiting)
            noise = rng.random(masks.shape) + masks  # legal tokens score above 1
            step_batch(states, tab, dice, noise.argmax(axis=1).astype(np.int64), events, masks)
        round_ += 1
    return np.concatenate(kept_states), tab, np.concatenate(kept_masks)


def check_export(run, player, rules, n: int, seed: int) -> int:
    """Positions (of `n`) where the exported model's greedy move equals the policy's; raises on any difference."""
    import numpy as np

    from ludo_env.observations import encode

    states, tab, masks = random_positions(rules, n, seed)
    observations = encode(player.obs, states, tab)
    expected = player.act(observations, masks)
    got = np.asarray(run(observations, masks)).argmax(axis=1)
    differ = np.flatnonzero(got != expected)
    if len(differ):
        b = int(differ[0])
        raise ExportCheckError(
            f"the exported model's greedy move differs from the policy's on {len(differ)} of {len(states)} positions "
            f"(first: position {b}, model {int(got[b])}, policy {int(expected[b])}); nothing was written"
        )
    return len(states)


# ------------------------------------------------------------------ the export
def export_policy(ckpt: str | Path, fmt: str, out: str | Path, check: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Write the model to `out` and its metadata to ``<out>.json``; returns the metadata.

    Both files are written in a temporary folder beside `out`, checked, then
    moved into place, so `out` never holds a half-written or unchecked model.
    """
    from ludo_env.observations import feature_names, obs_dim
    from ludo_env.rules import Rules
    from policies.checkpoints import find_policy, read_meta
    from policies.modules import ModulePlayer
    from policies.saved import load_module

    folder = find_policy(ckpt)
    with _quiet_logs(RAY_DEPRECATIONS):  # RLlib's own catalog code uses a constructor it deprecates
        module = load_module(folder)
    meta = read_meta(folder)
    kind, model_config = meta["kind"], meta["model_config"]
    encoder = model_config["obs"]
    dim = obs_dim(encoder)
    wrapper = scores_module(module, kind)

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        model_file = tmp / out.name
        written = (write_onnx if fmt == "onnx" else write_torchscript)(wrapper, dim, model_file)
        checked = 0
        if check:
            rules = Rules.recorded(model_config["variant"], players=int(model_config["players"]))
            checked = check_export(load_exported(model_file, fmt), ModulePlayer(module), rules, check, seed)
        metadata = _metadata(out.name, written, folder, kind, model_config, encoder, dim,
                             feature_names(encoder), fmt, {"positions": checked, "seed": seed})
        (tmp / sidecar_path(out.name).name).write_text(json.dumps(metadata, indent=1) + "\n")
        os.replace(model_file, out)
        os.replace(tmp / sidecar_path(out.name).name, sidecar_path(out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return metadata


def _metadata(file_name, written, folder, kind, model_config, encoder, dim, names, fmt, check) -> dict[str, Any]:
    from policies.algorithms import module_algorithm

    algorithm = module_algorithm(kind)
    mask_dtype = ONNX_MASK_DTYPE if fmt == "onnx" else f"one of {', '.join(TORCHSCRIPT_MASK_DTYPES)}"
    return {
        "format": EXPORT_FORMAT,
        "model": {"file": file_name, **written},
        "policy": {
            "source": str(Path(folder).resolve()),
            "kind": kind,
            "scores": algorithm.scores_name,
            "network": model_config.get("network"),
            **{key: model_config.get(key) for key in algorithm.exported_config},
        },
        "rules": {"variant": model_config.get("variant"), "players": model_config.get("players")},
        "observations": {"encoder": encoder, "obs_dim": dim, "feature_names": names,
                         "frame": "the player to move's point of view (ludo_env.engine.frame.view_from)"},
        "inputs": [
            {"name": OBS_INPUT, "dtype": "float32", "shape": ["batch", dim],
             "meaning": f"ludo_env.observations.encode('{encoder}', states, tab), one row per position"},
            {"name": MASK_INPUT, "dtype": mask_dtype, "shape": ["batch", ACTIONS],
             "meaning": "entry t > 0: token t of the player to move may move with the die"},
        ],
        "outputs": [
            {"name": SCORES_OUTPUT, "dtype": "float32", "shape": ["batch", ACTIONS],
             "meaning": algorithm.scores_meaning + "; -inf for every illegal token"},
        ],
        "actions": [f"move token {t} of the player to move by the die" for t in range(ACTIONS)],
        "greedy": "argmax over scores, the lowest index on ties",
        # Every checked position agreed: a single difference stops the export.
        "check": {**check, "games": "random legal moves, dice from the seed"},
    }


def main(argv: list[str]) -> int:
    if any(arg in ("-h", "--help") for arg in argv):
        try:
            emit(options_help(__doc__, "export", ExportConfig))
        except UserError as err:  # a stdout that cannot take it: one line
            fail(err)
        return 0
    try:
        cfg = parse_args(argv)
        from policies.checkpoints import PolicyFileError

        try:
            metadata = export_policy(cfg.ckpt, cfg.format, cfg.out, cfg.check, cfg.seed)
        except PolicyFileError as err:
            raise UserError(str(err)) from None
    except UserError as err:
        fail(err)
    except ExportCheckError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except OSError as err:  # out's folder cannot be made or written
        fail(UserError(f"cannot write '{cfg.out}': {err.strerror or err}"))
    policy, observations = metadata["policy"], metadata["observations"]
    opset = f", opset {metadata['model']['opset']}" if cfg.format == "onnx" else ""
    print(f"exported {policy['kind'].upper()} policy {policy['source']} "
          f"({observations['encoder']}, {observations['obs_dim']} features) -> {cfg.out} ({cfg.format}{opset})")
    print(f"metadata: {sidecar_path(cfg.out)}")
    if metadata["check"]["positions"]:
        print(f"check: the greedy move agrees with the policy's on all {metadata['check']['positions']:,} "
              "positions from random games")
    return 0


if __name__ == "__main__":
    catch_interrupts()
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:  # the model is moved into place only once checked: nothing half-written is left
        stop_interrupted("export stopped, nothing written")
