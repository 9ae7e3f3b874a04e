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
reproduce them. The GA itself
(operators, fitness, seeds) is specified in `policies.evolution`.

Run folder (``cfg.run_dir``)::

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

The fittest-so-far chromosome's fitness is the highest of many noisy
250-game samples, so it overstates its strength (measured: a best sample of
41.4 was a chromosome that wins 31.6% against Semi-Smart, below the network
it started from); hence the selection at the end, and the final evaluation's
games give the unbiased figure.

Stopping: at ``algo.generations`` or ``budget.iterations`` generations (when
set) or after ``budget.minutes`` of evolution over all starts, whichever
comes first. Resume: the run goes on from the population save: generations
after it (played before a kill) are played again, identically, and their
rows in ``metrics.jsonl`` are replaced.
"""
from __future__ import annotations

import math
import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np

from launch.cli import UserError, one_line
from launch.runs import SUMMARY, RunDir, RunState, write_json
from launch.schema import TrainConfig
from launch.trainers import final_evaluation, final_lines

POPULATION = "population.npz"
FITNESS_PLOT = "fitness.png"


def train(cfg: TrainConfig) -> None:
    from launch import build
    from launch.runs import WandbLogger, stop_on_sigterm
    from ludo_env.rules import Rules
    from policies.checkpoints import POLICY_DIR
    from policies.evolution import OBS, FitnessSpec, GAParams, n_weights

    ga = cfg.algo
    if cfg.obs.name != OBS:
        raise UserError(f"obs={cfg.obs.name}: seed 001's network reads {OBS}: give obs={OBS}")
    if not (ga.generations or cfg.budget.iterations or cfg.budget.minutes):
        raise UserError("the GA's budget is unlimited: set algo.generations, budget.iterations or budget.minutes")
    seed = cfg.seed if ga.seed is None else ga.seed
    rules = Rules.load(build.rules_mapping(cfg))
    run = RunDir(cfg.run_dir)
    state_file = run.path / POPULATION

    # 1. the run folder: fresh, or the last population save
    if cfg.resume:
        state = load_state(cfg, state_file)
        if state.population.shape != (ga.population, n_weights()):
            raise UserError(f"resume: the run's population has {state.population.shape[0]} chromosomes, "
                            f"algo.population={ga.population}: keep the run's value")
        run.drop_metrics_from(state.generation)
    else:
        from hydra.core.hydra_config import HydraConfig

        run.save_overrides([o for o in HydraConfig.get().overrides.task if not o.startswith("resume=")])
        state = initial_state(cfg, seed)
    run_state = RunState(iteration=state.generation, elapsed_s=state.elapsed_s, wandb_id=state.wandb_id)
    logger = WandbLogger(cfg, run, run_state)
    state.wandb_id = run_state.wandb_id
    if not cfg.resume:
        state.save(state_file)

    # 2. Ray
    import ray

    ray.init(address=cfg.resources.ray_address, logging_level="ERROR", include_dashboard=False,
             configure_logging=True, log_to_driver=False)
    tasks = ga.tasks or max(1, int(ray.cluster_resources().get("CPU", 1)))
    spec = FitnessSpec(rules=rules.to_dict(), opponent=ga.opponent, games=ga.games, seed=seed,
                       common_dice=ga.common_dice, max_plies=cfg.max_plies)
    params = GAParams(ga.population, ga.crossover_rate, ga.mutation_rate, ga.mutation_sigma, ga.elitism)
    policy = run.path / POLICY_DIR
    print(f"run folder: {run.path}  ({'resumed at generation ' + str(state.generation) if cfg.resume else 'new run'}; "
          f"{ga.population} chromosomes x {ga.games} games vs {rules.players - 1} x {ga.opponent}, {rules.name}; "
          f"{tasks} Ray tasks per generation; wandb {logger.mode})", flush=True)

    # 3. evolve
    signal.signal(signal.SIGTERM, stop_on_sigterm)  # a scheduler's stop saves the population, like Ctrl-C
    started = time.perf_counter() - state.elapsed_s
    try:
        while not budget_spent(cfg, state):
            state, row = generation(state, spec, params, tasks, rules, policy, started)
            run.append_metrics(row)
            logger.log({}, row)
            plot_fitness(state.history, run.path / FITNESS_PLOT)
            if cfg.progress:
                print(progress_line(row), flush=True)
            if state.generation % ga.population_every == 0:
                state.save(state_file)
    except KeyboardInterrupt:
        # `state` is always a whole generation boundary: the one a resume must restart from.
        state.elapsed_s = time.perf_counter() - started
        state.save(state_file)
        print(f"\nstopped at generation {state.generation}: population saved\n"
              f"resume with: python launch/train.py resume={run.path}", flush=True)
        logger.finish()
        ray.shutdown()
        return
    state.save(state_file)
    selection = None
    if ga.select_games and state.best is not None:
        selection = select_winner(state, spec, tasks, ga.select_games, rules, policy)
        if cfg.progress:
            print(f"selection: {selection['winner']} wins with fitness {selection['fitness']:.2f} over "
                  f"{selection['games']} fresh games each ({selection['candidates']} candidates; the best so far "
                  f"scores {selection['best_so_far_fitness']:.2f} there)", flush=True)
    ray.shutdown()

    # 5. evaluate the chosen chromosome, summarise
    final = final_evaluation(cfg, rules, policy) if cfg.eval.final_games and state.best is not None else None
    summary = write_summary(cfg, run, state, policy, final, selection)
    logger.finish(final, policy if state.best is not None else None)
    print(summary, flush=True)


# ---------------------------------------------------------------- 1. the run folder
def load_state(cfg: TrainConfig, state_file: Path):
    from policies.evolution import GAState

    if not state_file.is_file():
        raise UserError(f"resume={cfg.resume}: no {POPULATION} to resume from (not a GA run, or it never started)")
    try:
        return GAState.load(state_file)
    except ValueError as err:
        raise UserError(f"resume={cfg.resume}: {one_line(err)}") from None


def initial_state(cfg: TrainConfig, seed: int):
    """Generation 0: random weights, or the ``algo.init`` network plus noise."""
    from policies.checkpoints import PolicyFileError
    from policies.evolution import HIDDEN, GAState, init_population, read_chromosome

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
def budget_spent(cfg: TrainConfig, state) -> bool:
    limits = [n for n in (cfg.algo.generations, cfg.budget.iterations) if n]
    return bool((limits and state.generation >= min(limits))
                or (cfg.budget.minutes and state.elapsed_s >= cfg.budget.minutes * 60))


def generation(state, spec, params, tasks: int, rules, policy: Path, started: float):
    """Evaluate `state`'s population, keep the fittest so far as the policy, breed: (next state, metrics row)."""
    from policies.evolution import GAState, evaluate_population, fitness, next_generation, write_ann_policy

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
        "minutes": round((time.perf_counter() - started) / 60, 3),
    }
    following = GAState(generation=g + 1, population=children, rng_state=rng.bit_generator.state, history=history,
                        best=best, best_fitness=best_fitness, best_generation=best_generation,
                        elapsed_s=time.perf_counter() - started, wandb_id=state.wandb_id)
    return following, row


SELECTION_GENERATION = 2**31 - 1
"""The generation number whose dice the final selection rolls: no generation of a run reaches it."""


def select_winner(state, spec, tasks: int, games: int, rules, policy: Path) -> dict[str, Any]:
    """Write the fittest of the best-so-far and the final population, all on the same fresh dice, as the policy.

    During the run the policy is the best single 250-game sample, which is the luckiest as much as the best
    (its fitness is the maximum of thousands of noisy draws). Here every candidate plays `games` games on
    common dice never rolled before, and the fittest is kept.
    """
    import dataclasses

    from policies.evolution import evaluate_population, fitness, write_ann_policy

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
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

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
def write_summary(cfg: TrainConfig, run: RunDir, state, policy: Path, final: dict[str, Any] | None,
                  selection: dict[str, Any] | None = None) -> str:
    games = int(state.generation * cfg.algo.population * cfg.algo.games)
    lines = [(f"done: {cfg.name}, {state.generation} generations, {games:,} fitness games, "
              f"{state.elapsed_s / 60:.1f} minutes of evolution")]
    if state.best is not None:
        lines.append(f"best:       fitness {state.best_fitness:.2f} in generation {state.best_generation}")
    if selection:
        lines.append(f"policy is:  {selection['winner']} (fitness {selection['fitness']:.2f} over "
                     f"{selection['games']} fresh games, of {selection['candidates']} candidates)")
        lines.append(f"policy:     {policy}   (play it as ckpt:{run.path})")
    lines += [f"population: {run.path / POPULATION}", f"fitness:    {run.path / FITNESS_PLOT}",
              f"resume:     python launch/train.py resume={run.path}"]
    results, commands = final_lines(cfg, policy, final)
    lines += results
    write_json(run.path / SUMMARY, {
        "name": cfg.name, "generations": state.generation, "fitness_games": games,
        "minutes": state.elapsed_s / 60, "policy": str(policy) if state.best is not None else None,
        "best_fitness": state.best_fitness if math.isfinite(state.best_fitness) else None,
        "best_generation": state.best_generation, "population": str(run.path / POPULATION),
        "fitness_history": {"mean": state.history[:, 0].tolist(), "max": state.history[:, 1].tolist()},
        "selection": selection, "final_evaluation": final, "evaluate_commands": commands,
    })
    return "\n".join(lines)
