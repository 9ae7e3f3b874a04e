"""DQN (double, dueling, n-step, prioritized replay; optionally distributional or with advantage learning):
its settings (``conf/algo/dqn.yaml``) and how RLlib trains it."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from launch.training.algorithms.base import (
    RLLIB_TRAINER,
    Algorithm,
    RLlibTraining,
    TrainConfig,
    learning_rate,
)
from launch.training.dqn_learner import ADVANTAGE_LEARNING, AdvantageLearningDQNLearner
from launch.training.replay_buffer import ColumnReplayDQN
from launch.training.settings import (
    AT_LEAST_ONE,
    LARGEST,
    MAX_ATOMS,
    NON_NEGATIVE,
    SHARE,
    Range,
    RLlibSettings,
)
from policies.algorithms import module_algorithm

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

SNAPSHOT_EPSILON = 0.02
"""A DQN snapshot's exploration: a little noise keeps a frozen opponent from repeating itself."""


@dataclass
class DQNSettings(RLlibSettings):
    name: str = "dqn"
    lr: float = 5e-4
    train_batch_size: int = 256
    grad_clip: float | None = 10.0
    double_q: bool = True
    """Double Q-learning targets (seed 000)."""
    dueling: bool = True
    """Dueling value/advantage heads."""
    num_atoms: int = 1
    """Atoms of a distributional Q head (C51, Bellemare et al. 2017): each action's return is a categorical
    distribution on `num_atoms` evenly spaced values from `v_min` to `v_max`, trained by cross-entropy to the
    projected n-step target; 1: Q-values are expectations trained by `td_error_loss`. At most 256: RLlib's
    projection holds a batch x atoms x atoms one-hot. Off by default: on classic it learned far slower than
    expected Q-values (docs/pages/results/)."""
    v_min: float = -2.0
    """Lowest return the distributional head can represent (num_atoms > 1). With the potential reward a return
    is the end pay (win 1, loss -1/3 at 4 players) minus the seat's progress lead (within [-1, 1])."""
    v_max: float = 2.0
    """Highest return the distributional head can represent (num_atoms > 1)."""
    n_step: int = 3
    """n-step returns."""
    advantage_learning: float = 0.97
    """alpha of the advantage-learning operator (Bellemare et al. 2016; launch/training/dqn_learner.py): the target of
    Q(s, a) loses alpha * (max_b Q'(s, b) - Q'(s, a)), which widens the gaps between actions by 1 / (1 - alpha)
    and keeps the greedy policy; 0: RLlib's own loss. On by default because Ludo's greedy token is decided by
    small gaps between Q-values; why 0.97: docs/pages/concepts/training.md, "Defaults and why"."""
    target_network_update_freq: int = 4000
    """Sampled env steps between target-network updates (seed 000: a target network). RLlib checks it after each
    update against the env steps sampled so far, which the batched sampler advances once per sample (16 decisions
    for each of ``sampler.games`` games): at the defaults that is a sync every 8 updates; a sync every 64 updates
    did not train a stronger policy (docs/pages/results/)."""
    tau: float = 1.0
    """Target update mix; 1.0 copies."""
    replay: str = "prioritized"
    """prioritized or uniform episode replay."""
    buffer_capacity: int = 200_000
    """Replay capacity in env steps."""
    prioritized_alpha: float = 0.6
    """Priority exponent."""
    prioritized_beta: float = 0.4
    """Importance-sampling exponent."""
    epsilon_start: float = 1.0
    """Exploration at the first step."""
    epsilon_end: float = 0.05
    """Exploration after `epsilon_steps`."""
    epsilon_steps: int = 300_000
    """Env steps of the linear epsilon decay (seed 000: epsilon decay)."""
    learning_starts: int = 10_000
    """Env steps sampled before the first update."""
    training_intensity: float | None = 0.5
    """Replayed / sampled env steps (RLlib computes it from rollout_fragment_length); None: one update per sample."""
    rollout_fragment_length: int = 200
    """Env steps per game per sample call as RLlib assumes it; DQN samples whole games, so keep it near the
    mean game length in env steps (classic, 4 players: about 200-230) or training_intensity is off by that ratio."""
    td_error_loss: str = "huber"
    """huber or mse."""
    store_buffer_in_checkpoints: bool = False
    """Save the replay buffer with each checkpoint (large); off: a resumed run refills it."""
    steps_per_iteration: int = 16384
    """Env steps sampled per training iteration (RLlib's min_sample_timesteps_per_iteration): about PPO's batch,
    so eval.every, league.snapshot_every and checkpoint.every (counted in iterations) mean the same for both."""

    RANGES: ClassVar[dict[str, Range]] = {
        **RLlibSettings.RANGES,
        "n_step": AT_LEAST_ONE, "num_atoms": Range(1, MAX_ATOMS), "v_min": Range(-LARGEST, LARGEST),
        "v_max": Range(-LARGEST, LARGEST),
        "advantage_learning": Range(0, 1, high_open=True),
        "target_network_update_freq": AT_LEAST_ONE, "tau": Range(0, 1, low_open=True),
        "buffer_capacity": AT_LEAST_ONE, "prioritized_alpha": Range(0, 10), "prioritized_beta": SHARE,
        "epsilon_start": SHARE, "epsilon_end": SHARE, "epsilon_steps": AT_LEAST_ONE,
        "learning_starts": NON_NEGATIVE, "training_intensity": Range(0, 10_000, low_open=True, null_ok=True),
        "rollout_fragment_length": AT_LEAST_ONE, "steps_per_iteration": AT_LEAST_ONE,
    }
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "name": ("dqn",), "replay": ("prioritized", "uniform"), "td_error_loss": ("huber", "mse"),
    }

    def check_more(self, prefix: str) -> None:
        if self.train_batch_size > self.buffer_capacity:  # a batch is drawn from the buffer
            raise ValueError(f"{prefix}.train_batch_size={self.train_batch_size} is not allowed: give a number in "
                             f"[1, {prefix}.buffer_capacity={self.buffer_capacity}]")
        if self.num_atoms > 1 and not self.v_min < self.v_max:
            raise ValueError(f"{prefix}.v_min={self.v_min:g} and {prefix}.v_max={self.v_max:g} are not allowed: "
                             f"a distributional head (num_atoms={self.num_atoms}) needs v_min < v_max")


def main_heads(cfg: TrainConfig) -> dict[str, Any]:
    algo = cfg.algo
    return {"double_q": algo.double_q, "dueling": algo.dueling, "epsilon": epsilon_schedule(cfg),
            "num_atoms": algo.num_atoms, "v_min": algo.v_min, "v_max": algo.v_max}


def epsilon_schedule(cfg: TrainConfig) -> list[tuple[int, float]]:
    algo = cfg.algo
    return [(0, float(algo.epsilon_start)), (int(algo.epsilon_steps), float(algo.epsilon_end))]


def epsilon_at(cfg: TrainConfig, env_steps: int) -> float:
    algo = cfg.algo
    frac = min(1.0, env_steps / max(1, algo.epsilon_steps))
    return algo.epsilon_start + frac * (algo.epsilon_end - algo.epsilon_start)


def apply(config: AlgorithmConfig, cfg: TrainConfig, batched: bool) -> None:
    algo = cfg.algo
    if batched:
        # Episodes are per main seat (single-agent chunks, continued across samples), so fragments are
        # safe and nothing sampled is dropped: every decision of main reaches the replay buffer. Sixteen
        # decisions per game and call: a call costs a fixed round trip of shipping and Ray transfer whatever
        # its size, and smaller calls make the runner wait on it (docs/pages/results/, the training profiles).
        config.env_runners(batch_mode="truncate_episodes",
                           rollout_fragment_length=max(algo.rollout_fragment_length, 16 * cfg.sampler.games))
        # Its updates take the replay's numpy columns as they are, not episodes through the learner
        # connectors, which cost four times the update itself (launch/training/replay_buffer.py).
        config.algo_class = ColumnReplayDQN
    else:
        # Per-game MultiAgentEpisodes crash on fragments with turn-based agents (shared/notes).
        config.env_runners(batch_mode="complete_episodes", rollout_fragment_length=algo.rollout_fragment_length)
    config.training(
        lr=learning_rate(cfg),
        gamma=algo.gamma,
        train_batch_size_per_learner=algo.train_batch_size,
        double_q=algo.double_q,
        dueling=algo.dueling,
        num_atoms=algo.num_atoms,
        v_min=algo.v_min,
        v_max=algo.v_max,
        n_step=algo.n_step,
        target_network_update_freq=algo.target_network_update_freq,
        tau=algo.tau,
        replay_buffer_config=replay_buffer_config(cfg, multi_agent=not batched),
        epsilon=epsilon_schedule(cfg),
        num_steps_sampled_before_learning_starts=algo.learning_starts,
        training_intensity=algo.training_intensity,
        td_error_loss_fn=algo.td_error_loss,
        grad_clip=algo.grad_clip,
        store_buffer_in_checkpoints=algo.store_buffer_in_checkpoints,
    )
    if algo.advantage_learning > 0:
        config.learners(learner_class=AdvantageLearningDQNLearner,
                        learner_config_dict={ADVANTAGE_LEARNING: algo.advantage_learning})
    config.reporting(min_sample_timesteps_per_iteration=algo.steps_per_iteration)


def progress(cfg: TrainConfig, env_steps: int, learner: Mapping[str, Any]) -> dict[str, Any]:
    return {"epsilon": epsilon_at(cfg, env_steps), "q_mean": learner.get("qf_mean")}


# By import path: RLlib recognises episode buffers by "EpisodeReplayBuffer" in the type's string.
MAIN_BUFFER = "launch.training.replay_buffer.MainEpisodeReplayBuffer"


def replay_buffer_config(cfg: TrainConfig, multi_agent: bool = True) -> dict[str, Any]:
    """The replay buffer: single-agent episodes (main's seats) from the batched sampler, multi-agent games from
    the per-game one."""
    algo = cfg.algo
    if algo.replay == "prioritized":
        # A custom buffer config replaces RLlib's defaults, so alpha and beta must be given.
        kind = "MultiAgentPrioritizedEpisodeReplayBuffer" if multi_agent else MAIN_BUFFER
        return {"type": kind, "capacity": algo.buffer_capacity,
                "alpha": algo.prioritized_alpha, "beta": algo.prioritized_beta}
    if algo.replay == "uniform":
        if multi_agent:
            return {"type": "MultiAgentEpisodeReplayBuffer", "capacity": algo.buffer_capacity}
        return {"type": MAIN_BUFFER, "capacity": algo.buffer_capacity, "alpha": 0.0, "beta": 0.0}
    raise ValueError(f"algo.replay={algo.replay!r} is not allowed: choose prioritized or uniform")


ALGORITHM = Algorithm("dqn", DQNSettings, RLLIB_TRAINER, RLlibTraining(
    module=module_algorithm("dqn"), experiment="dqn_selfplay", main_heads=main_heads,
    snapshot_heads={"epsilon": [(0, SNAPSHOT_EPSILON)]}, apply=apply, progress=progress,
    warmup_steps=lambda cfg: int(cfg.algo.learning_starts), replays=True,
    update_text=lambda cfg: f"batch {cfg.algo.train_batch_size} drawn from the replay"))
