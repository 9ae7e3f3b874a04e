"""PPO (clipped surrogate, GAE) with the masked actor-critic of `policies.modules`: its settings
(``conf/algo/ppo.yaml``) and how RLlib trains it."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ray.rllib.algorithms.ppo.ppo import LEARNER_RESULTS_CURR_ENTROPY_COEFF_KEY

from launch.training.algorithms.base import (
    RLLIB_TRAINER,
    Algorithm,
    RLlibTraining,
    TrainConfig,
    learning_rate,
    linear_schedule,
)
from launch.training.ppo_learner import SharedMinibatchPPOLearner
from launch.training.settings import AT_LEAST_ONE, CLIP, COEFFICIENT, LARGEST, SHARE, Range, RLlibSettings
from policies.algorithms import module_algorithm
from policies.league.roles import learner_roles

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig


@dataclass
class PPOSettings(RLlibSettings):
    name: str = "ppo"
    gae_lambda: float = 0.95
    """GAE lambda."""
    minibatch_size: int = 512
    """SGD minibatch."""
    num_epochs: int = 6
    """Passes over each train batch."""
    clip_param: float = 0.2
    """PPO ratio clip."""
    vf_loss_coeff: float = 0.5
    """Weight of the value loss."""
    vf_clip_param: float = 10.0
    """Value-function clip (in reward units)."""
    entropy_coeff: float = 0.01
    """Entropy bonus."""
    entropy_coeff_end: float | None = None
    """Entropy bonus at the end of the run, reached linearly from `entropy_coeff` over budget.env_steps (or
    `schedule_env_steps`; RLlib's own entropy schedule on sampled env steps), then held; None: constant."""
    kl_coeff: float = 0.0
    """KL penalty (0: clip only)."""
    vf_share_layers: bool = False
    """One trunk for policy and value."""

    RANGES: ClassVar[dict[str, Range]] = {
        **RLlibSettings.RANGES, "gae_lambda": SHARE,
        "minibatch_size": AT_LEAST_ONE, "num_epochs": AT_LEAST_ONE, "clip_param": Range(0, 10, low_open=True),
        "vf_loss_coeff": COEFFICIENT, "vf_clip_param": CLIP, "entropy_coeff": COEFFICIENT, "kl_coeff": COEFFICIENT,
        "entropy_coeff_end": Range(0, LARGEST, null_ok=True),
    }
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"name": ("ppo",)}

    def check_more(self, prefix: str) -> None:
        # RLlib refuses this only once the algorithm is built, after Ray has started
        if self.minibatch_size > self.train_batch_size:
            raise ValueError(f"{prefix}.minibatch_size={self.minibatch_size} is not allowed: give a number in "
                             f"[1, {prefix}.train_batch_size={self.train_batch_size}]")


def main_heads(cfg: TrainConfig) -> dict[str, Any]:
    return {"vf_share_layers": cfg.algo.vf_share_layers}


def apply(config: AlgorithmConfig, cfg: TrainConfig, batched: bool) -> None:
    algo = cfg.algo
    config.training(
        lr=learning_rate(cfg),
        gamma=algo.gamma,
        lambda_=algo.gae_lambda,
        train_batch_size_per_learner=algo.train_batch_size,
        minibatch_size=algo.minibatch_size,
        num_epochs=algo.num_epochs,
        clip_param=algo.clip_param,
        vf_loss_coeff=algo.vf_loss_coeff,
        vf_clip_param=algo.vf_clip_param,
        entropy_coeff=linear_schedule(cfg, algo.entropy_coeff, algo.entropy_coeff_end),
        use_kl_loss=algo.kl_coeff > 0,
        kl_coeff=algo.kl_coeff,
        grad_clip=algo.grad_clip,
    )
    if any(getattr(cfg.league, role.count.key) for role in learner_roles()):
        # Several trained modules of unequal batches: each minibatch takes the same share of each (ppo_learner.py).
        config.learners(learner_class=SharedMinibatchPPOLearner)


def progress(cfg: TrainConfig, env_steps: int, learner: Mapping[str, Any]) -> dict[str, Any]:
    # The entropy coefficient in force after the update: its schedule's value at this step.
    return {"entropy": learner.get("entropy"), "entropy_coeff": learner.get(LEARNER_RESULTS_CURR_ENTROPY_COEFF_KEY)}


ALGORITHM = Algorithm("ppo", PPOSettings, RLLIB_TRAINER, RLlibTraining(
    module=module_algorithm("ppo"), experiment="ppo_selfplay", main_heads=main_heads, snapshot_heads={},
    apply=apply, progress=progress, warmup_steps=lambda cfg: 0, replays=False,
    update_text=lambda cfg: f"{cfg.algo.num_epochs} epochs x minibatch {cfg.algo.minibatch_size}"))
