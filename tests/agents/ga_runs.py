"""What the GA training tests share: run `launch/train.py` as a user would, and the GA computed in-process."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

from ludo_env.rules import Rules
from policies import evolution as ev
from tests.launch.configs import script_env

ROOT = Path(__file__).resolve().parents[2]
TINY = ["+exp=ga_ann", "algo.population=6", "algo.games=10"]


def train(run_dir: Path, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "launch/train.py", *args, f"hydra.run.dir={run_dir}"], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, env=script_env(), check=False)


def reference_population(population: int, games: int, generations: int, seed: int = 0,
                         max_plies: int = 2000) -> np.ndarray:
    """The population after `generations` generations of +exp=ga_ann's GA, computed here without Ray."""
    spec = ev.FitnessSpec(rules=Rules.load("pyludo").to_dict(), games=games, seed=seed, max_plies=max_plies)
    params = ev.GAParams(population=population)
    rng = np.random.default_rng(seed)
    members = ev.init_population(population, rng)
    for g in range(generations):
        values = ev.fitness(ev.play_fitness(members, np.arange(population), g, spec))
        members = ev.next_generation(members, values, params, rng)
    return members
