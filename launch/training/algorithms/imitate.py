"""Supervised learning of seed 001's network from game records: its settings (``conf/algo/imitate.yaml``);
its loop is `launch.training.trainers.imitate`."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from launch.training.algorithms.base import Algorithm
from launch.training.settings import AT_LEAST_ONE, SHARE, CheckedSettings, Range


@dataclass
class ImitateSettings(CheckedSettings):
    """Supervised learning of seed 001's 60-6-4 sigmoid network from game records
    (launch/training/trainers/imitate.py)."""

    name: str = "imitate"
    """Algorithm; fixed by the file chosen in conf/algo."""
    records: list[str] = field(default_factory=list)
    """JSONL record files (policies.records): launch/play.py record=, launch/evaluate.py record=."""
    lr: float = 0.7
    """Learning rate of full-batch gradient descent (seed 001 with FANN: 0.7)."""
    epochs: int = 20_000
    """Most full-batch epochs."""
    target_mse: float = 0.01
    """Stop once the training MSE is below this (seed 001: 0.01)."""
    validation: float = 0.2
    """Share of the recorded games held out for validation (whole games)."""
    skip_forced: bool = False
    """Leave out decisions with a single legal token."""
    log_every: int = 500
    """Epochs between metric rows."""
    seed: int | None = None
    """Seed of the initial weights and of the validation split; None: the run's seed."""

    RANGES: ClassVar[dict[str, Range]] = {
        # full-batch gradient descent on a sigmoid net (FANN's 0.7), not Adam: steps above 1 can still train
        "lr": Range(0, 100, low_open=True), "epochs": AT_LEAST_ONE, "target_mse": SHARE,
        "validation": Range(0, 0.9),
        "log_every": AT_LEAST_ONE, "seed": Range(0, null_ok=True),
    }
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"name": ("imitate",)}

    def check_more(self, prefix: str) -> None:
        if not self.records:
            raise ValueError(f"{prefix}.records is empty: give record files, e.g. {prefix}.records=[records.jsonl]")
        for file in self.records:
            if not Path(file).is_file():
                raise ValueError(f"{prefix}.records: no such file {file!r}")


ALGORITHM = Algorithm("imitate", ImitateSettings, "launch.training.trainers.imitate")
