"""`EnvConfig`: the settings every env takes, validated with one-line errors.

Shared by the RLlib, gymnasium and PettingZoo envs so a key means the same
everywhere. Rules come from ``variant`` plus ``rules`` overrides (and
``players`` when given); see `ludo_env.rules.Rules`.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ludo_env.core import DEFAULT_MAX_PLIES
from ludo_env.observations import obs_dim
from ludo_env.rewards import RewardConfig
from ludo_env.rules import Rules, RulesError


class EnvConfigError(ValueError):
    pass


@dataclass(frozen=True)
class EnvConfig:
    variant: str = "classic"
    """Rule set name (conf/variant) or path to a variant YAML."""
    players: int | None = None
    """Seats; None keeps the variant's default."""
    rules: dict = field(default_factory=dict)
    """Extra rule overrides, e.g. {"bonus_roll_on_six": False}."""
    obs: str = "egocentric"
    """Observation encoder (conf/obs): a name of `ludo_env.observations.ENCODERS`."""
    reward: Any = "sparse"
    """Reward kind name, or a mapping of RewardConfig fields (conf/reward)."""
    auto_forced_moves: bool = True
    """Play decisions with a single legal token inside the env."""
    max_plies: int = DEFAULT_MAX_PLIES
    """Turn limit in die rolls; a longer game is truncated."""
    seed: int | None = None
    """Seed of the episode seeds; None draws one from the OS."""

    @classmethod
    def from_mapping(cls, values: dict | None) -> EnvConfig:
        values = dict(values or {})
        known = {f.name for f in fields(cls)}
        # RLlib adds its own keys (worker_index, num_workers, vector_index, remote) to env configs.
        # The batched EnvRunner (launch.training.sampler) owns its games and seats: these keys are its own.
        ignored = {"worker_index", "num_workers", "vector_index", "remote", "batch_games", "prefetch", "seat_players"}
        unknown = sorted(set(values) - known - ignored)
        if unknown:
            raise EnvConfigError(f"unknown env setting {unknown[0]!r}: choose from {', '.join(sorted(known))}")
        return cls(**{k: v for k, v in values.items() if k in known})

    def build_rules(self) -> Rules:
        overrides = dict(self.rules or {})
        if self.players is not None:
            overrides["players"] = int(self.players)
        return Rules.load(self.variant, **overrides)

    def build_reward(self) -> RewardConfig:
        return RewardConfig.load(self.reward)

    def check(self) -> None:
        obs_dim(self.obs)
        self.build_rules()
        self.build_reward()


__all__ = ["EnvConfig", "EnvConfigError", "RulesError"]
