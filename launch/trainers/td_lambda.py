"""Seed 004's TD(λ) afterstate value by self-play: ``python launch/train.py +exp=td_lambda``.

    python launch/train.py +exp=td_lambda                                  # linear, classic, 15 minutes
    python launch/train.py +exp=td_lambda variant=pyludo algo.value=mlp
    python launch/train.py +exp=td_lambda algo.method=true_online budget.minutes=5
    python launch/train.py resume=outputs/train/<run>                      # continue a stopped or killed run

Reads top to bottom: 1 the run folder: a fresh start saves its overrides, a
resume loads the newest checkpoint that reads back (weights, the exploration
generator, the counters); 2 the value, its learner and ``algo.games`` games of
self-play (`policies.td_lambda`: the features, the chains, the updates); 3
iterations of ``algo.steps_per_iteration`` batched steps, each followed by a
row in ``metrics.jsonl`` and wandb and a progress line; every ``eval.every``
iterations the greedy player meets ``players - 1`` copies of each ``eval.panel``
entry in the evaluator (Wilson 95% intervals); every ``checkpoint.every``
iterations, at the end and on Ctrl-C or SIGTERM an atomic checkpoint; 4 the
final evaluation (``eval.final_games``) of the saved policy and a summary with
the commands that reproduce it.

Run folder (``cfg.run_dir``, `launch.runs`)::

    overrides.txt             the first start's overrides (a resume reuses them)
    checkpoints/iter_000010/  policy/ (a td_value policy folder: ckpt:<run> plays the newest greedily,
                              search:<run> searches on it), learner.json (the exploration generator's
                              state, games started), run_state.json (iteration, env steps, minutes,
                              evaluations, wandb id)
    metrics.jsonl             one row per iteration
    summary.json              the final evaluation and the reproduce commands
    wandb/                    the same rows (offline unless told otherwise)

Resume: checkpoints hold no eligibility traces and no games in flight (their
traces would be the size of the games times the parameters); a resumed run
starts fresh games, dice drawn from the run's seed and the iteration, so a
resume from a checkpoint replays the same way every time. Rows of iterations
after that checkpoint (played before a kill) are dropped and played again.
"""
from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from launch.cli import UserError
from launch.runs import SUMMARY, RunDir, RunState, write_json
from launch.schema import TrainConfig
from launch.trainers import final_evaluation, final_lines

LEARNER = "learner.json"


def train(cfg: TrainConfig) -> None:
    import torch

    from launch import build
    from launch.runs import WandbLogger, budget_spent, stop_on_sigterm
    from ludo_env.engine.layout import compile_rules
    from ludo_env.rules import Rules
    from policies.td_lambda import DEFAULT_ALPHA, SelfPlay, make_learner, make_value

    # Small tensors: a second thread only spins against the other processes (measured 12x slower MLP steps
    # on a loaded 2-core machine).
    torch.set_num_threads(1)
    td = cfg.algo
    seed = cfg.seed if td.seed is None else td.seed
    alpha = DEFAULT_ALPHA[td.value] if td.alpha is None else td.alpha
    rules = Rules.load(build.rules_mapping(cfg))
    tab = compile_rules(rules)
    run = RunDir(cfg.run_dir)

    # 1. the run folder
    value = make_value(td.value, td.hidden, seed)
    if cfg.resume:
        state, checkpoint = resume_point(cfg, run)
        load_checkpoint(value, checkpoint)
        learner_state = json.loads((checkpoint / LEARNER).read_text())
        run.drop_metrics_from(state.iteration + 1)
    else:
        from hydra.core.hydra_config import HydraConfig

        overrides = HydraConfig.get().overrides.task if HydraConfig.initialized() else []
        run.save_overrides([o for o in overrides if not o.startswith("resume=")])
        state, checkpoint, learner_state = RunState(), None, None

    # 2. value, learner, self-play
    learner = make_learner(value, td.method, td.games, rules.players, alpha, td.lam, td.gamma)
    play = SelfPlay(tab, value, learner, td.games, td.epsilon, play_seed(seed, state.iteration), cfg.max_plies)
    if learner_state is not None:
        play.rng.bit_generator.state = learner_state["rng"]
        play.started_games = int(learner_state["games_started"])
    logger = WandbLogger(cfg, run, state)
    print(f"run folder: {run.path}  ({'resumed from ' + checkpoint.name if checkpoint else 'new run'}; "
          f"{td.value} value, {td.method}, lambda {td.lam}, alpha {alpha}, epsilon {td.epsilon}, {td.games} games "
          f"of {rules.name} x {rules.players}; wandb {logger.mode})", flush=True)

    # 3. train
    import signal

    signal.signal(signal.SIGTERM, stop_on_sigterm)  # a scheduler's stop saves a checkpoint, like Ctrl-C
    started = time.perf_counter() - state.elapsed_s
    saved_at = state.iteration if checkpoint is not None else None
    try:
        while not budget_spent(cfg, state):
            t0 = time.perf_counter()
            stats = play.run(td.steps_per_iteration)
            seconds = time.perf_counter() - t0
            state.iteration += 1
            state.env_steps += stats.decisions
            state.elapsed_s = time.perf_counter() - started
            evaluation = None
            if cfg.eval.every and state.iteration % cfg.eval.every == 0:
                evaluation = evaluate(cfg, rules, value, cfg.eval.games, state.iteration)
                state.evaluations.append(evaluation)
            row = progress_row(state, stats, seconds, value, td.epsilon, evaluation)
            run.append_metrics(row)
            logger.log({}, row)
            if cfg.progress:
                print(progress_line(row, state.evaluations), flush=True)
            if state.iteration % cfg.checkpoint.every == 0 or budget_spent(cfg, state):
                checkpoint = save_checkpoint(cfg, run, state, value, play, rules)
                saved_at = state.iteration
    except KeyboardInterrupt:
        print(f"\nstopped at iteration {state.iteration}: saving a checkpoint", flush=True)
        state.elapsed_s = time.perf_counter() - started
        save_checkpoint(cfg, run, state, value, play, rules)
        print(f"resume with: python launch/train.py resume={run.path}", flush=True)
        logger.finish()
        return
    if saved_at != state.iteration or checkpoint is None:
        checkpoint = save_checkpoint(cfg, run, state, value, play, rules)

    # 4. final evaluation of the saved policy, summary
    policy = run.policy_of(checkpoint)
    final = final_evaluation(cfg, rules, policy) if cfg.eval.final_games else None
    summary = write_summary(cfg, run, state, checkpoint, final)
    logger.finish(final, policy)
    print(summary, flush=True)


def play_seed(seed: int, iteration: int) -> int:
    """Dice seed of the games started at `iteration` (0 for a fresh run): a resume draws new, reproducible dice."""
    return int(np.random.SeedSequence([seed, iteration]).generate_state(1, np.uint32)[0])


# ---------------------------------------------------------------- 1. resume
def resume_point(cfg: TrainConfig, run: RunDir) -> tuple[RunState, Path]:
    """The newest checkpoint whose run state, learner state and policy read back; one line if none does."""
    from policies.td_lambda import load_value

    def check(checkpoint: Path, state: RunState) -> None:
        json.loads((checkpoint / LEARNER).read_text())["rng"]
        load_value(run.policy_of(checkpoint))

    return run.resume_point(cfg.resume, check)


def load_checkpoint(value, checkpoint: Path) -> None:
    from policies.checkpoints import POLICY_DIR
    from policies.td_lambda import load_value

    saved = load_value(checkpoint / POLICY_DIR)
    if saved.kind != value.kind or saved.config() != value.config():
        raise UserError(f"resume: the run's value is {saved.config()}, the config asks for {value.config()}: "
                        "keep the run's algo.value and algo.hidden")
    value.load_state_dict(saved.state_dict())


# ---------------------------------------------------------------- 3. evaluate, log, checkpoint
def evaluate(cfg: TrainConfig, rules, value, games: int, iteration: int) -> dict[str, Any]:
    """The greedy player on the current value against the panel (`policies.league.evaluation`)."""
    from policies.league.evaluation import evaluate_panel
    from policies.search import GreedyPlayer

    start = time.perf_counter()
    results = evaluate_panel(GreedyPlayer(value, name=f"td@{iteration}"), cfg.eval.panel, rules, games,
                             cfg.eval.seed)
    return {"iteration": iteration, "final": False, "seconds": round(time.perf_counter() - start, 2),
            "results": [r.to_dict() for r in results]}


def progress_row(state: RunState, stats, seconds: float, value, epsilon: float,
                 evaluation: dict[str, Any] | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "iteration": state.iteration,
        "env_steps": state.env_steps,
        "minutes": round(state.elapsed_s / 60, 3),
        "env_steps_per_s": round(stats.decisions / max(seconds, 1e-9), 1),
        "td_rmse": _finite(stats.td_rmse),
        "games_finished": stats.games_finished,
        "game_length": _finite(stats.game_decisions / stats.games_finished if stats.games_finished else None),
        "truncated": stats.truncated,
        "epsilon": epsilon,
        "weight_norm": weight_norm(value),
    }
    for r in (evaluation or {}).get("results", []):
        row[f"eval/win_rate_vs_{r['opponent']}"] = r["win_rate"]
    return row


def _finite(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 6)


def weight_norm(value) -> float:
    import torch

    return round(float(torch.sqrt(sum((v.double() ** 2).sum() for v in value.state_dict().values()))), 6)


def progress_line(row: dict[str, Any], evaluations: list[dict]) -> str:
    def fmt(x, spec):
        return "-" if x is None else format(x, spec)

    line = (f"it {row['iteration']:4d} | steps {row['env_steps']:>11,} | {row['env_steps_per_s']:,.0f} steps/s | "
            f"{row['minutes']:6.1f} min | td rmse {fmt(row['td_rmse'], '.4f')} | games {row['games_finished']} "
            f"(len {fmt(row['game_length'], '.0f')}) | |w| {row['weight_norm']:.2f}")
    from launch.runs import eval_suffix

    return line + eval_suffix(evaluations)


def save_checkpoint(cfg: TrainConfig, run: RunDir, state: RunState, value, play, rules) -> Path:
    """Policy folder, learner state and run state, renamed into place together (`RunDir.save_checkpoint`)."""
    from launch import build
    from ludo_env.afterstate_features import feature_count
    from policies.checkpoints import write_policy
    from policies.td_lambda import KIND, policy_state

    algo = dataclasses.asdict(cfg.algo)
    model_config, weights = policy_state(value, build.rules_mapping(cfg), {"algo": algo})

    def write_parts(folder: Path) -> None:
        write_policy(run.policy_of(folder), KIND, model_config, weights, obs_dim=feature_count())
        write_json(folder / LEARNER, {"rng": play.rng.bit_generator.state, "games_started": play.started_games})

    return run.save_checkpoint(state.iteration, state, write_parts, cfg.checkpoint.keep)


# ---------------------------------------------------------------- 4. final evaluation, summary
def write_summary(cfg: TrainConfig, run: RunDir, state: RunState, checkpoint: Path,
                  final: dict[str, Any] | None) -> str:
    policy = run.policy_of(checkpoint)
    lines = [
        f"done: {cfg.name}, {state.iteration} iterations, {state.env_steps:,} env steps, "
        f"{state.elapsed_s / 60:.1f} minutes of training",
        f"checkpoint: {checkpoint}",
        f"policy:     {policy}   (play it as ckpt:{policy}; search on it as search:{policy})",
        f"resume:     python launch/train.py resume={run.path}",
    ]
    results, commands = final_lines(cfg, policy, final)
    lines += results
    write_json(run.path / SUMMARY, {
        "name": cfg.name, "iterations": state.iteration, "env_steps": state.env_steps,
        "minutes": state.elapsed_s / 60, "checkpoint": str(checkpoint), "policy": str(policy),
        "final_evaluation": final, "evaluate_commands": commands, "evaluations": state.evaluations,
    })
    return "\n".join(lines)
