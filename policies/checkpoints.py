"""A trained policy on disk without pickles: ``policy.json`` plus ``weights.pt``, loaded with ``weights_only``.

Training writes one into every checkpoint (``<checkpoint>/policy``). It holds:

* ``policy.json``: ``format`` (`POLICY_FORMAT`), ``kind`` (a kind of
  `policies.saved.REGISTRY`: ``ppo`` or ``dqn``, an RLModule; ``ga_ann``, ``td_value``),
  ``model_config`` (the encoder name ``obs``, the rules ``variant``, ``players``,
  the ``network``, the ``reward`` its value head learned, the algorithm's head
  settings) and ``obs_dim``;
* ``weights.pt``: the module's ``state_dict`` (tensors only), read back with
  ``torch.load(weights_only=True)``, so loading runs no code from the file.

`find_policy` accepts that folder, a training checkpoint that contains one, or
a training run folder (its newest checkpoint). This module is the file format
only; `policies.saved` loads a folder by its kind (players, values, modules);
RLlib's own single-module checkpoints (which are pickles) are handled by
`policies.modules`.
Anything missing or damaged raises `PolicyFileError` with one line.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

POLICY_FORMAT = "ludo-league-policy/1"
POLICY_JSON = "policy.json"
WEIGHTS = "weights.pt"
POLICY_DIR = "policy"
CHECKPOINTS_DIR = "checkpoints"
CHECKPOINT_PREFIX = "iter_"


class PolicyFileError(ValueError):
    """A policy folder that cannot be loaded; one line for the user."""


def write_policy(dest: str | Path, kind: str, model_config: dict[str, Any], state_dict: dict[str, Any],
                 obs_dim: int | None = None) -> Path:
    """Write a policy folder at `dest` atomically (a temporary sibling, then one rename).

    `obs_dim` defaults to the width of the encoder ``model_config["obs"]``; give it for inputs that are not
    one of `ludo_env.observations.ENCODERS` (a value function's afterstate features).
    """
    from ludo_env.observations import obs_dim as encoder_dim

    if obs_dim is None:
        obs_dim = encoder_dim(model_config["obs"])
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        meta = {"format": POLICY_FORMAT, "kind": kind, "model_config": _plain(model_config),
                "obs_dim": int(obs_dim)}
        (tmp / POLICY_JSON).write_text(json.dumps(meta, indent=1) + "\n")
        torch.save({k: v.detach().cpu() for k, v in state_dict.items()}, tmp / WEIGHTS)
        if dest.exists():
            shutil.rmtree(dest)
        os.rename(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def find_policy(path: str | Path) -> Path:
    """The policy folder that `path` names: itself, ``<path>/policy``, or the newest checkpoint's of a run folder."""
    path = Path(path)
    if (path / POLICY_JSON).is_file():
        return path
    if (path / POLICY_DIR / POLICY_JSON).is_file():
        return path / POLICY_DIR
    if (path / CHECKPOINTS_DIR).is_dir():
        checkpoints = sorted(p for p in (path / CHECKPOINTS_DIR).glob(f"{CHECKPOINT_PREFIX}*")
                             if (p / POLICY_DIR / POLICY_JSON).is_file())
        if not checkpoints:
            raise PolicyFileError(f"run folder '{path}' has no complete checkpoint yet")
        return _newest_that_loads(path, checkpoints)
    raise PolicyFileError(
        f"'{path}' holds no policy: give a run folder, a checkpoint folder or a policy folder ({POLICY_JSON})"
    )


_warned: set[str] = set()


def _newest_that_loads(run: Path, checkpoints: list[Path]) -> Path:
    """The policy of the newest checkpoint whose policy.json and weights read back; each damaged newer one is a
    warning (once per process), as a resumed run falls back past a damaged checkpoint."""
    import sys

    damaged = []
    for checkpoint in reversed(checkpoints):
        folder = checkpoint / POLICY_DIR
        try:
            read_meta(folder)
            load_weights(folder)
        except PolicyFileError as err:
            damaged.append(f"{checkpoint.name} is damaged ({err})")
            continue
        for problem in damaged:
            warning = f"warning: run folder '{run}': {problem}; using the older {checkpoint.name}"
            if warning not in _warned:
                _warned.add(warning)
                print(warning, file=sys.stderr)
        return folder
    raise PolicyFileError(f"run folder '{run}': no checkpoint's policy loads: {damaged[0]}")


def read_meta(folder: Path) -> dict[str, Any]:
    """``policy.json`` of a policy folder, checked for the format; `PolicyFileError` if unreadable."""
    try:
        meta = json.loads((folder / POLICY_JSON).read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise PolicyFileError(f"'{folder / POLICY_JSON}' is unreadable: {err}") from None
    if not isinstance(meta, dict) or meta.get("format") != POLICY_FORMAT:
        raise PolicyFileError(f"'{folder / POLICY_JSON}' is not a {POLICY_FORMAT} file")
    return meta


def load_weights(folder: Path) -> dict[str, Any]:
    """The tensors of ``weights.pt``, loaded with ``weights_only`` (no code runs); `PolicyFileError` if damaged."""
    try:
        return torch.load(folder / WEIGHTS, map_location="cpu", weights_only=True)
    except Exception as err:
        raise PolicyFileError(f"'{folder / WEIGHTS}' is damaged: {' '.join(str(err).split())[:200]}") from None
