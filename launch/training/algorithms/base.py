"""What one declaration of a training algorithm holds (`Algorithm`), and for an RLlib one how launch trains it
(`RLlibTraining`). The declarations themselves are the other modules of this package, one file each."""
from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from launch.training.settings import CheckedSettings
from policies.algorithms import ModuleAlgorithm

if TYPE_CHECKING:
    from ray.rllib.algorithms.algorithm_config import AlgorithmConfig

TrainConfig = Any
"""A run's `launch.training.schema.TrainConfig`, named here without importing it: the schema reads this package
(every algorithm's settings class), so an import back would close a cycle."""


@dataclass(frozen=True)
class RLlibTraining:
    """How launch trains one RLlib algorithm; `module` is what its saved module is to the agents layer."""

    module: ModuleAlgorithm
    """The agents' entry (`policies.algorithms.REGISTRY`, same name): RLlib config class, scores, value."""
    experiment: str
    """The ``+exp`` bundle that trains it by default (``conf/exp/<experiment>.yaml``): what benchmarks time."""
    main_heads: Callable[[TrainConfig], dict[str, Any]]
    """model_config keys of main's heads, saved with every checkpoint."""
    snapshot_heads: dict[str, Any]
    """What a snapshot plays differently from main (a DQN snapshot explores at `SNAPSHOT_EPSILON`)."""
    apply: Callable[[AlgorithmConfig, TrainConfig, bool], None]
    """``(config, cfg, batched)``: the algorithm's training settings onto RLlib's config."""
    progress: Callable[[TrainConfig, int, Mapping[str, Any]], dict[str, Any]]
    """``(cfg, env_steps, learner metrics of main)`` -> the algorithm's own progress columns."""
    warmup_steps: Callable[[TrainConfig], int]
    """Env steps sampled before its first update (a replay buffer filling up); 0 for an on-policy one."""
    replays: bool
    """It learns from a replay buffer, so what is kept there (not only what is sampled) bounds its throughput."""
    update_text: Callable[[TrainConfig], str]
    """One phrase saying what one update is (``6 epochs x minibatch 512``), for benchmark tables."""


@dataclass(frozen=True)
class Algorithm:
    """One ``algo.name``: everything the schema, the builder, the command and the benchmarks need of it."""

    name: str
    settings: type[CheckedSettings]
    """Its settings class: it types ``conf/algo/<name>.yaml`` (ConfigStore ``<name>_schema``) and checks itself."""
    trainer: str
    """The module whose ``train(cfg, notes)`` runs it (and whose ``check(cfg)``, if any, checks its inputs
    before a run folder exists); imported only when picked, so a GA run loads no RLlib trainer."""
    rllib: RLlibTraining | None = None
    """How RLlib trains it; None: it runs its own loop on `launch.training.loop`."""

    def trainer_module(self):
        """The `trainer` module, imported now."""
        return importlib.import_module(self.trainer)


RLLIB_TRAINER = "launch.training.trainers.rllib"
"""League self-play with RLlib: the trainer of every RLlib algorithm."""


def learning_rate(cfg: TrainConfig) -> float | list[list[float]]:
    """`algo.lr`, or with `algo.lr_end` its linear schedule (`linear_schedule`)."""
    return linear_schedule(cfg, cfg.algo.lr, cfg.algo.lr_end)


def linear_schedule(cfg: TrainConfig, start: float, end: float | None) -> float | list[list[float]]:
    """`start` throughout when `end` is None, else RLlib's piecewise-linear schedule over sampled env steps:
    `start` at 0, `end` at `schedule_end` (held after). RLlib moves it by the run's env steps, which a checkpoint
    keeps, so a resumed run goes on where it stopped (PPO's entropy schedule needs `resume_schedules` too)."""
    if end is None:
        return start
    return [[0, start], [schedule_end(cfg), end]]


def schedule_end(cfg: TrainConfig) -> int:
    """The env step where a schedule (``algo.lr_end``, ``algo.entropy_coeff_end``) reaches its end value:
    ``algo.schedule_env_steps``, else budget.env_steps."""
    return int(cfg.algo.schedule_env_steps or cfg.budget.env_steps)
