"""What every algorithm's settings are made of: `Range` (the values a numeric setting allows, from
`policies.ranges`, which the league's roles share), `CheckedSettings` (settings that check themselves) and
`RLlibSettings` (the fields every RLlib algorithm shares).

Each algorithm's own settings class lives with its declaration in `launch.training.algorithms`; the config
schema (`launch.training.schema`) reads them from there. The named ranges (`SHARE` and the others of
`policies.ranges`, `LEARNING_RATE` and those below) are shared by those classes and the schema's own checks, so a
bound means the same everywhere.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from policies.ranges import AT_LEAST_ONE, NON_NEGATIVE, SHARE, Range  # noqa: F401 (every algorithm's ranges)

POSITIVE = Range(0, low_open=True)
MAX_ATOMS = 256
LARGEST = 1e6
"""The largest size any reward, coefficient, clip or value bound needs here (rewards are at most 100 a move):
beyond it a setting is a typo (``1e300``) whose overflow would only show as NaN losses mid-run."""
LEARNING_RATE = Range(0, 1, low_open=True)
"""An optimizer's step size, (0, 1]: an Adam step moves every weight by about ``lr``, so above 1 nothing trains."""
COEFFICIENT = Range(0, LARGEST)
"""A loss weight or a noise scale, [0, 1e6]."""
CLIP = Range(0, LARGEST, low_open=True)
"""A clip or a bound that must be positive, (0, 1e6]."""


class CheckedSettings:
    """Settings that check themselves: `RANGES` bounds every numeric field, `CHOICES` every named one; a
    subclass adds what links fields in `check_more`. Every failure is a ValueError of one line naming
    ``<prefix>.<field>``, its value and what is allowed."""

    RANGES: ClassVar[dict[str, Range]] = {}
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {}

    def check(self, prefix: str) -> None:
        for name, allowed in self.RANGES.items():
            allowed.check(f"{prefix}.{name}", getattr(self, name))
        for name, choices in self.CHOICES.items():
            value = getattr(self, name)
            if value not in choices:
                raise ValueError(f"{prefix}.{name}={value!r} is not allowed: choose {' or '.join(choices)}")
        self.check_more(prefix)

    def check_more(self, prefix: str) -> None:
        """Checks across fields; none by default."""


@dataclass
class RLlibSettings(CheckedSettings):
    """What the settings of every RLlib algorithm have; each algorithm's class gives its own defaults."""

    name: str = ""
    """Algorithm; fixed by the file chosen in conf/algo."""
    lr: float = 1e-3
    """Adam learning rate."""
    lr_end: float | None = None
    """Learning rate at the end of the run, reached linearly from `lr` over budget.env_steps (or
    `schedule_env_steps`; RLlib's lr schedule on sampled env steps), then held; None: `lr` throughout."""
    schedule_env_steps: int | None = None
    """The env step where `lr_end` (and PPO's ``entropy_coeff_end``) is reached; None: budget.env_steps. Give it
    for a run that will be resumed with a larger budget.env_steps (a run taken through milestones, as
    ``benchmarks/scaling.py`` does): with None its schedule would stretch to each new budget from where it is."""
    gamma: float = 0.99
    """Discount per decision of the same seat; with reward.kind=potential, reward.gamma must be the same."""
    train_batch_size: int = 8192
    """Per learner update, per learner: env steps (PPO) or transitions drawn from the replay buffer (DQN)."""
    grad_clip: float | None = 0.5
    """Global gradient-norm clip; None: off."""

    RANGES: ClassVar[dict[str, Range]] = {
        "lr": LEARNING_RATE, "lr_end": Range(0, 1, null_ok=True), "gamma": SHARE, "train_batch_size": AT_LEAST_ONE,
        "grad_clip": Range(0, LARGEST, low_open=True, null_ok=True), "schedule_env_steps": Range(1, null_ok=True),
    }
