"""One loader of policy folders: the ``kind`` in ``policy.json`` picks its loaders from `REGISTRY`.

A policy folder (`policies.checkpoints`: ``policy.json`` + ``weights.pt``) is
loaded as a player (``ckpt:<path>``, the league's snapshots), as a value
source (``search:``, ``mcts:``) or as an RLModule (``launch/export.py``). Each
saved kind is one `SavedKind` entry naming the ``module:function`` that does
each of these; a kind without a loader for a use (a GA network has no value)
says so in one line, and an unknown kind raises one line naming the kinds.

The loaders are named, not imported: loading a GA or TD(lambda) player must
not import torch's RLlib side, and the kinds' own modules (search, TD(lambda))
import this one.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policies.checkpoints import POLICY_JSON, PolicyFileError, find_policy, read_meta


@dataclass(frozen=True)
class SavedKind:
    """How a saved kind loads; each loader is ``"module:function"``, None where the kind cannot serve that use."""

    name: str
    player: str
    """``(folder, meta, spec) -> Player`` named `spec`."""
    value: str | None
    """``(folder, meta, name) -> ValueSource`` (`policies.search`): what search and MCTS read."""
    module: str | None
    """``(folder) -> RLModule``, weights loaded, in eval mode: what export traces."""


_MODULE = {"player": "policies.players:module_folder_player", "value": "policies.search:module_value_source",
           "module": "policies.modules:load_policy"}
REGISTRY: dict[str, SavedKind] = {k.name: k for k in (
    SavedKind("ppo", **_MODULE),
    SavedKind("dqn", **_MODULE),
    SavedKind("ga_ann", player="policies.evolution:load_player", value=None, module=None),
    SavedKind("td_value", player="policies.td_lambda:load_player", value="policies.td_lambda:value_source",
              module=None),
)}
SAVED_MODULE_KINDS = tuple(name for name, k in REGISTRY.items() if k.module is not None)
"""Kinds saved as an RLModule's weights (`policies.modules.load_policy` rebuilds them)."""


def saved_kind(folder: Path, meta: dict[str, Any]) -> SavedKind:
    """The registry entry of a folder's kind; `PolicyFileError` with one line naming the kinds if unknown."""
    kind = meta.get("kind")
    if kind not in REGISTRY:
        raise PolicyFileError(f"'{folder / POLICY_JSON}': unknown policy kind {kind!r}: "
                              f"known kinds are {', '.join(REGISTRY)}")
    return REGISTRY[kind]


def open_policy(path: str | Path) -> tuple[Path, dict[str, Any], SavedKind]:
    """The policy folder `path` names (`find_policy`), its ``policy.json`` and its kind's entry."""
    folder = find_policy(path)
    meta = read_meta(folder)
    return folder, meta, saved_kind(folder, meta)


def named(target: str):
    """The object a ``"module:name"`` target names, its module imported now."""
    module_name, _, function = target.partition(":")
    return getattr(importlib.import_module(module_name), function)


def _uses(use: str) -> str:
    return ", ".join(name for name, k in REGISTRY.items() if getattr(k, use) is not None)


def load_player(path: str | Path, spec: str):
    """The `policies.players.Player` of the policy at `path`, named `spec`."""
    folder, meta, kind = open_policy(path)
    return named(kind.player)(folder, meta, spec)


def load_value_source(path: str | Path, name: str | None = None):
    """The `policies.search.ValueSource` saved at `path`: a TD(λ) value, or a PPO / DQN policy's value head."""
    folder, meta, kind = open_policy(path)
    if kind.value is None:
        raise PolicyFileError(f"'{folder}' holds a {kind.name} policy, which has no value to search with: "
                              f"give a policy of kind {_uses('value')}")
    return named(kind.value)(folder, meta, name or str(path))


def load_module(path: str | Path):
    """The RLModule saved at `path`, weights loaded, in eval mode (what export traces)."""
    folder, meta, kind = open_policy(path)
    if kind.module is None:
        raise PolicyFileError(f"'{folder}' holds a {kind.name} policy, not an RLModule: "
                              f"give a policy of kind {_uses('module')}")
    return named(kind.module)(folder)
