"""The RLlib algorithms whose policies the agents layer plays, searches with and exports: one entry each.

Every place that reads a saved PPO or DQN module asks its entry here, never ``kind == "ppo" ... else``:
the module's default model_config, its action scores (what a greedy player and an exported model
return), its value (what ``search:`` and ``mcts:`` read) and whether its policy can serve as a prior.
The entry's name is ``algo.name`` in the training config and the ``kind`` in ``policy.json``.
How `launch` trains each one is declared once in `launch.training.algorithms` (settings, RLlib config, trainer),
whose RLlib entries point at these; this layer cannot import that one, so a test checks that both, and
`policies.saved.REGISTRY`, name the same algorithms.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from ray.rllib.algorithms.algorithm_config import AlgorithmConfig
from ray.rllib.algorithms.dqn import DQNConfig
from ray.rllib.algorithms.dqn.default_dqn_rl_module import QF_PREDS
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.columns import Columns


def _logits(module, batch: dict) -> torch.Tensor:
    return module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]


def _q_values(module, batch: dict) -> torch.Tensor:
    return module.compute_q_values(batch)[QF_PREDS]


def _critic(module, batch: dict) -> torch.Tensor:
    return module.compute_values(batch)


def _best_q(module, batch: dict) -> torch.Tensor:
    best = _q_values(module, batch).max(dim=-1).values
    return torch.where(torch.isfinite(best), best, torch.zeros_like(best))  # no legal token: no value


@dataclass(frozen=True)
class ModuleAlgorithm:
    """One RLlib algorithm as the agents layer sees its saved module."""

    name: str
    config_class: type[AlgorithmConfig]
    """Its RLlib config: the module's default model_config comes from it."""
    module_class: str
    """``"module:class"`` of the masked RLModule that plays, trains and is saved as this kind (named, not
    imported: `policies.modules` reads this registry)."""
    catalog_class: str
    """``"module:class"`` of its RLlib catalog: what builds the network of `policies.networks` into it."""
    scores: Callable[[Any, dict], torch.Tensor]
    """``(module, batch) -> (B, 4)`` action scores, higher is better (illegal tokens not masked yet)."""
    scores_name: str
    """What the scores are, for an exported model's metadata: ``logits`` or ``q_values``."""
    scores_meaning: str
    value: Callable[[Any, dict], torch.Tensor]
    """``(module, batch) -> (B,)`` the position's value for the player to move."""
    policy_prior: bool
    """Its scores are a policy's logits, so MCTS can use them as its prior."""
    exported_config: tuple[str, ...] = field(default=())
    """model_config keys an exported model's metadata repeats (a DQN's ``dueling`` and ``num_atoms``)."""


REGISTRY: dict[str, ModuleAlgorithm] = {a.name: a for a in (
    ModuleAlgorithm("ppo", PPOConfig, "policies.modules:MaskedPPOTorchRLModule", "policies.modules:MaskedPPOCatalog",
                    _logits, "logits", "PPO logits", _critic, policy_prior=True),
    ModuleAlgorithm("dqn", DQNConfig, "policies.modules:MaskedDQNTorchRLModule", "policies.modules:MaskedDQNCatalog",
                    _q_values, "q_values", "DQN Q-values", _best_q, policy_prior=False,
                    exported_config=("dueling", "num_atoms")),
)}


def module_algorithm(name: str) -> ModuleAlgorithm:
    """The entry of an RLlib algorithm or saved module kind; one line naming the known ones if there is none."""
    if name not in REGISTRY:
        raise ValueError(f"unknown RLlib algorithm {name!r}: choose {' or '.join(REGISTRY)}")
    return REGISTRY[name]
