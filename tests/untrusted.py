"""Crafted folders for the "no user-supplied file goes through a pickle" tests: each holds pickles that, once
unpickled, run ``touch <marker>``. A test hands one to a loader and asserts the marker never appears."""
from __future__ import annotations

import json
import os
import pickle
import shlex
from pathlib import Path


class _RunsCode:
    """Unpickling this runs a shell command (what a crafted pickle can do): ``touch <marker>``."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {shlex.quote(self.marker)}",))


def crafted_pickle(marker: Path) -> bytes:
    """A pickle that runs ``touch <marker>`` when loaded (it names ``os.system``, not this module)."""
    return pickle.dumps(_RunsCode(marker))


def crafted_module_folder(dest: Path, marker: Path) -> Path:
    """An "RLlib single-module checkpoint" that holds only a crafted ``class_and_ctor_args.pkl``."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "class_and_ctor_args.pkl").write_bytes(crafted_pickle(marker))
    return dest


def crafted_algorithm_folder(dest: Path, marker: Path) -> Path:
    """An "RLlib algorithm checkpoint": ``rllib_checkpoint.json`` beside crafted state and constructor pickles."""
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "rllib_checkpoint.json").write_text(json.dumps({"type": "Algorithm", "checkpoint_version": "2.1"}))
    for name in ("class_and_ctor_args.pkl", "algorithm_state.pkl"):
        (dest / name).write_bytes(crafted_pickle(marker))
    module = dest / "learner_group" / "learner" / "rl_module" / "main"
    module.mkdir(parents=True)
    for name in ("class_and_ctor_args.pkl", "module_state.pkl"):
        (module / name).write_bytes(crafted_pickle(marker))
    return dest


def crafted_run_folder(dest: Path, marker: Path, overrides: tuple[str, ...] = ("+exp=smoke",)) -> Path:
    """A "training run folder" whose one checkpoint's RLlib state is crafted pickles (what a run folder copied from
    someone else can hold): ``overrides.txt``, ``checkpoints/iter_000001/`` with ``algorithm/`` and a run state."""
    checkpoint = dest / "checkpoints" / "iter_000001"
    crafted_algorithm_folder(checkpoint / "algorithm", marker)
    (checkpoint / "run_state.json").write_text(json.dumps({"iteration": 1, "env_steps": 10}))
    (dest / "overrides.txt").write_text("".join(f"{o}\n" for o in overrides))
    return dest
