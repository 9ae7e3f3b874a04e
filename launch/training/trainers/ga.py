"""Seed 001's GA player: ``python launch/train.py +exp=ga_ann`` evolves the 60-6-4 network against Semi-Smart bots.

    python launch/train.py +exp=ga_ann                                   # 30 minutes, the paper's settings
    python launch/train.py +exp=ga_ann algo.init=outputs/train/<imitate run> algo.generations=200
    python launch/train.py resume=outputs/train/<run>                     # continue a stopped or killed run

Reads top to bottom: 1 the run folder: a fresh start saves its overrides and
its initial population, a resume loads the last population save; 2 Ray (the
fitness games of a generation run as Ray tasks, so ``resources.ray_address``
spreads them over a cluster); 3 one generation after another: the fitness
games (`policies.evolution.evaluate_population`), a progress line, a row in
``metrics.jsonl`` and wandb, ``fitness.png`` redrawn, the fittest chromosome
so far written as the policy, the next population bred; 4 the selection
(`select_winner`): the best chromosome so far and the final population play
``algo.select_games`` fresh games each on common dice, and the fittest
becomes the policy; 5 it plays ``eval.final_games`` games against
``players - 1`` copies of each ``eval.panel`` bot in the evaluator, and a
summary gives win rates with Wilson 95% intervals and the commands that
reproduce them. `launch.training.loop` runs these steps (and saves the population on
Ctrl-C or SIGTERM); this module supplies the GA's parts. The GA itself
(operators, fitness, seeds) is specified in `policies.evolution`.

Run folder (``cfg.run_dir``):

```text
overrides.txt   the first start's overrides (a resume reuses them)
policy/         the fittest chromosome measured so far over the run (seed 001 §3.6: "the best
                chromosome for the entire evolution"), a ga_ann policy folder, replaced atomically
                in the generation a fitter one is measured, and at the end by the selection's
                winner: ckpt:<run> plays it
population.npz  the population of the next generation to evaluate, the GA's random state, the fitness
                history and the best chromosome (`policies.evolution.GAState`), every
                algo.population_every generations, at the end and on Ctrl-C or SIGTERM
metrics.jsonl   one row per generation ("iteration" is the generation)
fitness.png     mean and max fitness per generation
summary.json    the final evaluation and the reproduce commands
wandb/          the same rows (offline unless told otherwise)
```

The fittest-so-far chromosome's fitness is the highest of many noisy
250-game samples, so it overstates its strength (the luckiest sample can be
a chromosome weaker than the network it started from); hence the selection at
the end, and the final evaluation's games give the unbiased figure.

Stopping: at ``algo.generations`` or ``budget.iterations`` generations (when
set) or after ``budget.minutes`` of evolution over all starts, whichever
comes first. Resume: the run goes on from the population save: generations
after it (played before a kill) are played again, identically, and their
rows in ``metrics.jsonl`` are replaced.
"""
from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import ray
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from launch.cli import UserError, one_line
from launch.training import watchdog
from launch.training.loop import Report, Trainer, run
from launch.training.runs import RunState
from launch.training.schema import TrainConfig
from policies.checkpoints import POLICY_DIR, PolicyFileError
from policies.evolution import (
    HIDDEN,
    OBS,
    FitnessSpec,
    GAParams,
    GAState,
    evaluate_population,
    fitness,
    init_population,
    n_weights,
    next_generation,
    read_chromosome,
    write_ann_policy,
)

POPULATION = "population.npz"
FITNESS_PLOT = "fitness.png"


def train(cfg: TrainConfig, notes: Sequence[str] = ()) -> None:
    ga = cfg.algo
    if cfg.obs.name != OBS:
        raise UserError(f"obs={cfg.obs.name}: seed 001's network reads {OBS}: give obs={OBS}")
    if not (ga.generations or cfg.budget.iterations or cfg.budget.minutes):
        raise UserError("the GA's budget is unlimited: set algo.generations, budget.iterations or budget.minutes")
    run(Evolution(cfg), notes)


class Evolution(Trainer):
    """The loop's iteration is the generation; the run state lives in ``population.npz`` (`GAState`)."""

    unit = "generation"
    saves = "the population"
    saves_first = True

    def __init__(self, cfg: TrainConfig):
        super().__init__(cfg)
        self.seed = cfg.seed if cfg.algo.seed is None else cfg.algo.seed
        self.state_file = self.run.path / POPULATION
        self.policy = self.run.path / POLICY_DIR
        self.selection = None

    @property
    def save_every(self) -> int:
        return self.cfg.algo.population_every

    # 1. the run folder: fresh, or the last population save
    def open(self, resume: bool) -> tuple[RunState, Path | None]:
        ga = self.cfg.algo
        if resume:
            self.ga = load_state(self.cfg, self.state_file)
            if self.ga.population.shape != (ga.population, n_weights()):
                raise UserError(f"resume: the run's population has {self.ga.population.shape[0]} chromosomes, "
                                f"algo.population={ga.population}: keep the run's value")
            self.run.drop_metrics_from(self.ga.generation)
        else:
            self.ga = initial_state(self.cfg, self.seed)
        state = RunState(iteration=self.ga.generation, elapsed_s=self.ga.elapsed_s, wandb_id=self.ga.wandb_id)
        return state, self.state_file if resume else None

    # 2. Ray
    def start(self, state: RunState) -> str:
        ga, rules = self.cfg.algo, self.rules
        watchdog.start()  # Ray's agents would outlive a killed driver by minutes
        ray.init(address=self.cfg.resources.ray_address, logging_level="ERROR", include_dashboard=False,
                 configure_logging=True, log_to_driver=False)
        self.tasks = ga.tasks or max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.spec = FitnessSpec(rules=rules.to_dict(), opponent=ga.opponent, games=ga.games, seed=self.seed,
                                common_dice=ga.common_dice, max_plies=self.cfg.max_plies)
        self.params = GAParams(ga.population, ga.crossover_rate, ga.mutation_rate, ga.mutation_sigma, ga.elitism)
        return (f"{'resumed at generation ' + str(self.ga.generation) if self.cfg.resume else 'new run'}; "
                f"{ga.population} chromosomes x {ga.games} games vs {rules.players - 1} x {ga.opponent}, "
                f"{rules.name}; {self.tasks} Ray tasks per generation")

    def budget_spent(self, state: RunState) -> bool:
        limits = [n for n in (self.cfg.algo.generations, self.cfg.budget.iterations) if n]
        return bool((limits and state.iteration >= min(limits))
                    or (self.cfg.budget.minutes and state.elapsed_s >= self.cfg.budget.minutes * 60))

    # 3. evolve
    def advance(self, state: RunState) -> None:
        # `self.ga` is replaced whole: it is always a generation boundary, the one a resume restarts from.
        self.ga, self.row = generation(self.ga, self.spec, self.params, self.tasks, self.rules, self.policy)
        state.iteration = self.ga.generation

    def report(self, state: RunState) -> Report:
        self.row["minutes"] = round(state.elapsed_s / 60, 3)
        plot_fitness(self.ga.history, self.run.path / FITNESS_PLOT)
        return Report(self.row, progress_line(self.row))

    def save(self, state: RunState) -> Path:
        self.ga.elapsed_s, self.ga.wandb_id = state.elapsed_s, state.wandb_id
        self.ga.save(self.state_file)
        return self.state_file

    # 4. the selection, then the loop evaluates the chosen chromosome
    def finish(self, state: RunState, saved: Path | None) -> Path | None:
        ga = self.cfg.algo
        if ga.select_games and self.ga.best is not None:
            self.selection = select_winner(self.ga, self.spec, self.tasks, ga.select_games, self.rules, self.policy)
            if self.cfg.progress:
                s = self.selection
                print(f"selection: {s['winner']} wins with fitness {s['fitness']:.2f} over {s['games']} fresh games "
                      f"each ({s['candidates']} candidates; the best so far scores {s['best_so_far_fitness']:.2f} "
                      "there)", flush=True)
        ray.shutdown()
        return self.policy if self.ga.best is not None else None

    def summary(self, state: RunState, saved: Path | None, policy: Path | None) -> tuple[list[str], dict[str, Any]]:
        return summary(self.cfg, self.run, self.ga, self.policy, self.selection)

    def close(self) -> None:
        ray.shutdown()


# ---------------------------------------------------------------- 1. the run folder
def load_state(cfg: TrainConfig, state_file: Path) -> GAState:
    if not state_file.is_file():
        raise UserError(f"resume={cfg.resume}: no {POPULATION} to resume from (not a GA run, or it never started)")
    try:
        return GAState.load(state_file)
    except ValueError as err:
        raise UserError(f"resume={cfg.resume}: {one_line(err)}") from None


def initial_state(cfg: TrainConfig, seed: int):
    """Generation 0: random weights, or the ``algo.init`` network plus noise."""
    ga = cfg.algo
    prior = None
    if ga.init != "random":
        try:
            prior, hidden = read_chromosome(ga.init)
        except PolicyFileError as err:
            raise UserError(f"algo.init={ga.init}: {one_line(err)}") from None
        if hidden != HIDDEN:
            raise UserError(f"algo.init={ga.init}: a network of {hidden} hidden units; the GA evolves {HIDDEN}")
    rng = np.random.default_rng(seed)
    population = init_population(ga.population, rng, prior, ga.init_sigma)
    return GAState(generation=0, population=population, rng_state=rng.bit_generator.state)


# ---------------------------------------------------------------- 3. one generation
def generation(state: GAState, spec, params, tasks: int, rules, policy: Path) -> tuple[GAState, dict[str, Any]]:
    """Evaluate `state`'s population, keep the fittest so far as the policy, breed: (next state, metrics row
    without its minutes, which the loop's clock gives)."""
    g, population = state.generation, state.population
    start = time.perf_counter()
    stats = evaluate_population(population, g, spec, tasks)
    seconds = time.perf_counter() - start
    values = fitness(stats)
    top = int(np.argmax(values))
    best, best_fitness, best_generation = state.best, state.best_fitness, state.best_generation
    if values[top] > best_fitness:
        best, best_fitness, best_generation = population[top].copy(), float(values[top]), g
        write_ann_policy(policy, best, rules, {"source": "ga", "fitness": best_fitness, "generation": g,
                                               "games": spec.games, "opponent": spec.opponent})
    rng = state.rng()
    children = next_generation(population, values, params, rng)
    history = np.vstack([state.history, [[values.mean(), values.max()]]])
    games = int(stats[:, 0].sum())
    row: dict[str, Any] = {
        "iteration": g,
        "fitness_mean": float(values.mean()),
        "fitness_max": float(values.max()),
        "fitness_min": float(values.min()),
        "fitness_std": float(values.std()),
        "win_rate_mean": float(stats[:, 1].sum() / games),
        "win_rate_fittest": float(stats[top, 1] / stats[top, 0]),
        "best_fitness": best_fitness,
        "best_generation": best_generation,
        "games": (g + 1) * games,
        "games_per_s": round(games / max(seconds, 1e-9), 1),
    }
    following = GAState(generation=g + 1, population=children, rng_state=rng.bit_generator.state, history=history,
                        best=best, best_fitness=best_fitness, best_generation=best_generation,
                        elapsed_s=state.elapsed_s, wandb_id=state.wandb_id)
    return following, row


SELECTION_GENERATION = 2**31 - 1
"""The generation number whose dice the final selection rolls: no generation of a run reaches it."""


def select_winner(state, spec, tasks: int, games: int, rules, policy: Path) -> dict[str, Any]:
    """Write the fittest of the best-so-far and the final population, all on the same fresh dice, as the policy.

    During the run the policy is the best single 250-game sample, which is the luckiest as much as the best
    (its fitness is the maximum of thousands of noisy draws). Here every candidate plays `games` games on
    common dice never rolled before, and the fittest is kept.
    """
    candidates = np.vstack([state.best[None, :], state.population])
    trial = dataclasses.replace(spec, games=games, common_dice=True)
    values = fitness(evaluate_population(candidates, SELECTION_GENERATION, trial, tasks))
    k = int(np.argmax(values))
    write_ann_policy(policy, candidates[k], rules, {
        "source": "ga", "fitness": float(values[k]), "games": games, "opponent": spec.opponent,
        "generation": state.best_generation if k == 0 else state.generation, "selected_from": len(candidates)})
    return {"candidates": len(candidates), "games": games, "fitness": float(values[k]),
            "winner": "the best so far" if k == 0 else f"member {k - 1} of the final population",
            "best_so_far_fitness": float(values[0])}


def progress_line(row: dict[str, Any]) -> str:
    return (f"gen {row['iteration']:4d} | fitness mean {row['fitness_mean']:6.2f} max {row['fitness_max']:6.2f} | "
            f"best {row['best_fitness']:6.2f} (gen {row['best_generation']}) | "
            f"{row['games_per_s']:,.0f} games/s | {row['minutes']:6.1f} min")


def plot_fitness(history: np.ndarray, path: Path) -> None:
    """Mean and max fitness per generation, drawn off-screen (Agg) and renamed into place."""
    fig = Figure(figsize=(7, 4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    generations = np.arange(len(history))
    ax.plot(generations, history[:, 1], label="max", color="tab:red")
    ax.plot(generations, history[:, 0], label="mean", color="tab:blue")
    ax.set_xlabel("generation")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("fitness (seed 001, eq. 2)")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    fig.savefig(tmp, format="png", dpi=100)
    os.replace(tmp, path)


# ---------------------------------------------------------------- 4. evaluate, summarise
def summary(cfg: TrainConfig, run_dir, state: GAState, policy: Path,
            selection: dict[str, Any] | None) -> tuple[list[str], dict[str, Any]]:
    games = int(state.generation * cfg.algo.population * cfg.algo.games)
    lines = [(f"done: {cfg.name}, {state.generation} generations, {games:,} fitness games, "
              f"{state.elapsed_s / 60:.1f} minutes of evolution")]
    if state.best is not None:
        lines.append(f"best:       fitness {state.best_fitness:.2f} in generation {state.best_generation}")
    if selection:
        lines.append(f"policy is:  {selection['winner']} (fitness {selection['fitness']:.2f} over "
                     f"{selection['games']} fresh games, of {selection['candidates']} candidates)")
        lines.append(f"policy:     {policy}   (play it as ckpt:{run_dir.path})")
    lines += [f"population: {run_dir.path / POPULATION}", f"fitness:    {run_dir.path / FITNESS_PLOT}",
              f"resume:     python launch/train.py resume={run_dir.path}"]
    return lines, {
        "name": cfg.name, "generations": state.generation, "fitness_games": games,
        "minutes": state.elapsed_s / 60, "policy": str(policy) if state.best is not None else None,
        "best_fitness": state.best_fitness if math.isfinite(state.best_fitness) else None,
        "best_generation": state.best_generation, "population": str(run_dir.path / POPULATION),
        "fitness_history": {"mean": state.history[:, 0].tolist(), "max": state.history[:, 1].tolist()},
        "selection": selection,
    }
