"""Seed 004's TD(lambda) afterstate value by batched self-play: its settings (``conf/algo/td_lambda.yaml``);
its loop is `launch.training.trainers.td_lambda`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from launch.training.algorithms.base import Algorithm
from launch.training.settings import AT_LEAST_ONE, SHARE, CheckedSettings, Range


@dataclass
class TDLambdaSettings(CheckedSettings):
    """Seed 004's TD(lambda) afterstate value, learned by batched self-play (policies/td_lambda.py,
    launch/training/trainers/td_lambda.py)."""

    name: str = "td_lambda"
    """Algorithm; fixed by the file chosen in conf/algo."""
    value: str = "linear"
    """linear (w . features) or mlp (sigmoid of a ReLU MLP over the same features)."""
    method: str = "td_lambda"
    """td_lambda (accumulating traces) or true_online (true online TD(lambda); linear only)."""
    lam: float = 0.8
    """Trace decay lambda in [0, 1] (0: TD(0))."""
    alpha: float | None = None
    """Step size of the mean update over games; None: 0.05 for linear, 2.0 for mlp."""
    gamma: float = 1.0
    """Discount per decision (any seat's) in the afterstate chain."""
    epsilon: float = 0.02
    """Chance of a uniformly random legal move instead of the greedy one."""
    games: int = 256
    """Self-play games stepped together (each batched step is this many env steps)."""
    hidden: list[int] = field(default_factory=lambda: [64, 64])
    """Hidden layer sizes of the mlp value."""
    steps_per_iteration: int = 200
    """Batched steps per iteration (metrics row, checkpoint and evaluation cadence)."""
    seed: int | None = None
    """Seed of the self-play dice, the exploration and the mlp's initial weights; None: the run's seed."""

    RANGES: ClassVar[dict[str, Range]] = {
        "lam": SHARE, "alpha": Range(0, 1000, low_open=True, null_ok=True), "gamma": SHARE, "epsilon": SHARE,
        "games": AT_LEAST_ONE, "steps_per_iteration": AT_LEAST_ONE, "seed": Range(0, null_ok=True),
    }
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "name": ("td_lambda",), "value": ("linear", "mlp"), "method": ("td_lambda", "true_online"),
    }

    def check_more(self, prefix: str) -> None:
        if self.method == "true_online" and self.value != "linear":
            raise ValueError(f"{prefix}.method=true_online needs {prefix}.value=linear: "
                             f"use {prefix}.method=td_lambda for the mlp")
        for size in self.hidden:
            AT_LEAST_ONE.check(f"{prefix}.hidden", size)


ALGORITHM = Algorithm("td_lambda", TDLambdaSettings, "launch.training.trainers.td_lambda")
