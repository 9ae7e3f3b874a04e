"""Seed 001's genetic algorithm over the 60-6-4 sigmoid network: its settings (``conf/algo/ga.yaml``); its
loop is `launch.training.trainers.ga`."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from launch.training.algorithms.base import Algorithm
from launch.training.settings import AT_LEAST_ONE, COEFFICIENT, NON_NEGATIVE, SHARE, CheckedSettings, Range


@dataclass
class GASettings(CheckedSettings):
    """Seed 001's genetic algorithm over the 60-6-4 sigmoid network (policies/evolution.py,
    launch/training/trainers/ga.py)."""

    name: str = "ga"
    """Algorithm; fixed by the file chosen in conf/algo."""
    population: int = 30
    """Chromosomes per generation (seed 001: 30)."""
    generations: int = 0
    """Generations to evaluate; 0: until the budget (budget.minutes, or budget.iterations as generations)."""
    games: int = 250
    """Fitness games per chromosome per generation (seed 001: 250)."""
    crossover_rate: float = 0.85
    """Chance that a pair of parents is crossed (two-point); else the children copy them (seed 001: 0.85)."""
    mutation_rate: float = 0.45
    """Chance that each gene of a child gets Gaussian noise (seed 001: 0.45)."""
    mutation_sigma: float = 2.0
    """Standard deviation of that noise (seed 001: 2.0)."""
    elitism: float = 0.75
    """Share of the population, the fittest, that survives unchanged into the next generation (seed 001: 0.75)."""
    init: str = "random"
    """random (uniform in [-0.77, 0.77]) or a ga_ann policy path (run, policy folder: an imitation-trained
    network) whose chromosome, plus noise, seeds every member ("prior knowledge")."""
    init_sigma: float = 1.0
    """Standard deviation of the noise added to the init chromosome (seed 001: 1)."""
    opponent: str = "semi_smart"
    """Built-in bot in the other seats of every fitness game (seed 001: Semi-Smart)."""
    common_dice: bool = False
    """Every chromosome of a generation rolls the same dice streams (common random numbers); false: each its own."""
    tasks: int = 0
    """Ray tasks per generation, each a chunk of the population; 0: one per CPU Ray has."""
    population_every: int = 5
    """Generations between saves of the whole population and the GA's random state (what a resume restarts from)."""
    select_games: int = 2000
    """At the end, the best chromosome so far and the final population play this many fresh fitness games each,
    and the fittest of those becomes the policy: the best of many 250-game samples is mostly the luckiest.
    0: keep the best single sample (the paper's choice)."""
    seed: int | None = None
    """Seed of the GA's random choices and of the fitness games; None: the run's seed."""

    RANGES: ClassVar[dict[str, Range]] = {
        "population": Range(2), "generations": NON_NEGATIVE, "games": AT_LEAST_ONE, "crossover_rate": SHARE,
        "mutation_rate": SHARE, "mutation_sigma": COEFFICIENT, "init_sigma": COEFFICIENT, "tasks": NON_NEGATIVE,
        "population_every": AT_LEAST_ONE, "select_games": NON_NEGATIVE, "seed": Range(0, null_ok=True),
    }
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"name": ("ga",)}

    def check_more(self, prefix: str) -> None:
        from policies.bots import BOT_NAMES

        Range(0, 1 - 1 / self.population).check(f"{prefix}.elitism", self.elitism)  # at least one child
        if self.opponent not in BOT_NAMES:
            raise ValueError(f"{prefix}.opponent: unknown bot {self.opponent!r}: choose from {', '.join(BOT_NAMES)}")
        if self.init != "random" and not Path(self.init).exists():
            raise ValueError(f"{prefix}.init={self.init!r}: no such path: give random or a ga_ann policy "
                             "(run or policy folder)")


ALGORITHM = Algorithm("ga", GASettings, "launch.training.trainers.ga")
