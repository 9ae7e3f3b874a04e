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
RLlib's own checkpoints (pickles) are never loaded from a path a user gives:
`find_policy` refuses them in one line (`refuse_rllib_checkpoint`).
Anything missing or damaged raises `PolicyFileError` with one line. Both files are read
only as regular files below a size cap, never through a link and never waiting on a FIFO
(`policies.files.read_regular`): a folder copied from elsewhere is data.
"""
from __future__ import annotations

import io
import json
import os
import pickle
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from policies.files import FileRefused, read_regular
from policies.json_data import read_json

POLICY_FORMAT = "ludo-league-policy/1"
POLICY_JSON = "policy.json"
WEIGHTS = "weights.pt"
POLICY_DIR = "policy"
CHECKPOINTS_DIR = "checkpoints"
CHECKPOINT_PREFIX = "iter_"
POLICY_JSON_MAX_BYTES = 1 << 20
"""The most a ``policy.json`` may have (a few kilobytes are written): a larger one is refused, not read."""
WEIGHTS_MAX_BYTES = 1 << 30
"""The most a ``weights.pt`` may have (this project's networks write a few megabytes at most)."""


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
        # torch.save reports a failed write (a full disk) as a RuntimeError of its zip writer; serialised in
        # memory and written here, it is the OSError that callers treat as a save that could not be written.
        weights = io.BytesIO()
        torch.save({k: v.detach().cpu() for k, v in state_dict.items()}, weights)
        (tmp / WEIGHTS).write_bytes(weights.getbuffer())
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
    if is_rllib_checkpoint(path):
        raise PolicyFileError(refuse_rllib_checkpoint(path))
    raise PolicyFileError(
        f"'{path}' holds no policy: give a run folder, a checkpoint folder or a policy folder ({POLICY_JSON})"
    )


RLLIB_FILES = ("class_and_ctor_args.pkl", "rllib_checkpoint.json")
"""Files of an RLlib checkpoint (a module's or an algorithm's): its state and constructor are pickles."""


def is_rllib_checkpoint(path: Path) -> bool:
    """Whether `path` looks like an RLlib checkpoint, whose state restores only by unpickling."""
    return path.is_dir() and (any((path / name).is_file() for name in RLLIB_FILES) or any(path.glob("*.pkl")))


def refuse_rllib_checkpoint(path: Path) -> str:
    """The one line that refuses the RLlib checkpoint at `path` (never unpickled: a pickle can run any code),
    naming the policy folder to give instead: the training checkpoint's ``policy`` above it, when there is one."""
    policy = next((parent / POLICY_DIR for parent in Path(path).resolve().parents
                   if (parent / POLICY_DIR / POLICY_JSON).is_file()), None)
    instead = (f"give its training checkpoint's policy folder, '{policy}'" if policy is not None else
               "give a training run, checkpoint or policy folder, or save the module as a policy folder in "
               "your own Python (policies.checkpoints.write_policy(dest, kind, model_config, module.state_dict()))")
    return (f"'{path}' is an RLlib checkpoint, which loads only by unpickling (a pickle can run any code): "
            f"refused; {instead}")


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
        meta = read_json(read_regular(folder / POLICY_JSON, POLICY_JSON_MAX_BYTES))
    except FileRefused as err:
        raise PolicyFileError(str(err)) from None
    except (OSError, ValueError) as err:
        raise PolicyFileError(f"'{folder / POLICY_JSON}' is unreadable: {err}") from None
    if not isinstance(meta, dict) or meta.get("format") != POLICY_FORMAT:
        raise PolicyFileError(f"'{folder / POLICY_JSON}' is not a {POLICY_FORMAT} file")
    return meta


def load_weights(folder: Path) -> dict[str, Any]:
    """The tensors of ``weights.pt``, loaded with ``weights_only`` (no code runs); `PolicyFileError` with one
    complete line if the file is missing, empty, not a torch file or holds anything but named tensors."""
    import warnings
    import zipfile

    file = folder / WEIGHTS
    try:
        data = read_regular(file, WEIGHTS_MAX_BYTES)  # the bytes checked are the bytes loaded: no second open
    except FileRefused as err:
        raise PolicyFileError(str(err)) from None
    except OSError as err:
        raise PolicyFileError(f"'{file}' cannot be read ({err.strerror or type(err).__name__})") from None
    size = len(data)
    if size == 0:
        raise PolicyFileError(f"'{file}' is damaged: it is empty (0 bytes); the policy was not saved or copied "
                              "completely")
    if not zipfile.is_zipfile(io.BytesIO(data)):  # what torch.save writes; a truncated one lost its directory
        raise PolicyFileError(f"'{file}' is damaged: not a torch weights file ({size:,} bytes, not the zip archive "
                              "torch.save writes: truncated or another format)")
    try:
        with warnings.catch_warnings():  # torch warns about the pickle protocol of a file it then refuses
            warnings.simplefilter("ignore")
            state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        raise PolicyFileError(f"'{file}' holds more than tensors, refused (weights are read with weights_only, "
                              f"which runs no code: {_weights_only_reason(err)})") from None
    except Exception as err:  # noqa: BLE001  a damaged archive member, a bad record
        raise PolicyFileError(f"'{file}' is damaged: not a torch weights file ({type(err).__name__}: "
                              f"{_first_sentence(err)})") from None
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                              for k, v in state.items()):
        raise PolicyFileError(f"'{file}' is damaged: not a state dict (names to tensors) but a "
                              f"{type(state).__name__}")
    return state


def _first_sentence(err: BaseException) -> str:
    """The first sentence of an error's message on one line, at most 160 characters, cut at a word."""
    text = " ".join(str(err).split())
    sentence = text.split(". ")[0].rstrip(".")
    if len(sentence) > 160:
        sentence = sentence[:160].rsplit(" ", 1)[0] + " ..."
    return sentence or type(err).__name__


def _weights_only_reason(err: BaseException) -> str:
    """torch's reason from its long weights_only refusal (``WeightsUnpickler error: <reason>``)."""
    text = " ".join(str(err).split())
    reason = text.partition("WeightsUnpickler error:")[2] or text.partition("from a trusted source.")[2]
    reason = reason.split(" Check the documentation")[0].strip().rstrip(".")
    return (reason[:160].rsplit(" ", 1)[0] + " ..." if len(reason) > 160 else reason) or _first_sentence(err)
