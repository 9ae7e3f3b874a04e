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
the commands that reproduce it. `launch.training.loop` runs these steps; this module
supplies the TD(λ) parts.

Run folder (``cfg.run_dir``, `launch.training.runs`):

```text
overrides.txt             the first start's overrides (a resume reuses them)
checkpoints/iter_000010/  policy/ (a td_value policy folder: ckpt:<run> plays the newest greedily,
                          search:<run> searches on it), learner.json (the exploration generator's
                          state, games started), run_state.json (iteration, env steps, minutes,
                          evaluations, wandb id)
best/                     the best-evaluated value (policy/, selection.json; `launch.training.loop.keep_best`)
metrics.jsonl             one row per iteration
summary.json              the final evaluations (last and best) and the reproduce commands
wandb/                    the same rows (offline unless told otherwise)
```

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from launch.cli import UserError
from launch.training import build
from launch.training.loop import Report, Trainer, checkpoint_summary, eval_columns, run, step_columns
from launch.training.runs import RunDir, RunState, write_json
from launch.training.schema import TrainConfig
from ludo_env.afterstate_features import feature_count
from ludo_env.engine.layout import compile_rules
from policies.checkpoints import POLICY_DIR, write_policy
from policies.league.evaluation import evaluate_panel
from policies.search import GreedyPlayer
from policies.td_lambda import (
    DEFAULT_ALPHA,
    KIND,
    SelfPlay,
    load_value,
    make_learner,
    make_value,
    policy_state,
)

LEARNER = "learner.json"


def train(cfg: TrainConfig, notes: Sequence[str] = ()) -> None:
    # Small tensors: a second thread only spins against the other processes, which makes MLP steps many times
    # slower on a loaded machine.
    torch.set_num_threads(1)
    run(TDLambda(cfg), notes)


class TDLambda(Trainer):
    def __init__(self, cfg: TrainConfig):
        super().__init__(cfg)
        td = cfg.algo
        self.seed = cfg.seed if td.seed is None else td.seed
        self.alpha = DEFAULT_ALPHA[td.value] if td.alpha is None else td.alpha
        self.value = make_value(td.value, td.hidden, self.seed)
        self.learner_state = self.resumed = self.stats = None

    # 1. the run folder
    def open(self, resume: bool) -> tuple[RunState, Path | None]:
        if not resume:
            return RunState(), None
        state, checkpoint = resume_point(self.cfg, self.run)
        load_checkpoint(self.value, checkpoint)
        self.learner_state = json.loads((checkpoint / LEARNER).read_text())
        self.run.drop_metrics_from(state.iteration + 1)
        self.resumed = checkpoint
        return state, checkpoint

    # 2. value, learner, self-play
    def start(self, state: RunState) -> str:
        td, rules = self.cfg.algo, self.rules
        learner = make_learner(self.value, td.method, td.games, rules.players, self.alpha, td.lam, td.gamma)
        self.play = SelfPlay(compile_rules(rules), self.value, learner, td.games, td.epsilon,
                             play_seed(self.seed, state.iteration), self.cfg.max_plies)
        if self.learner_state is not None:
            self.play.rng.bit_generator.state = self.learner_state["rng"]
            self.play.started_games = int(self.learner_state["games_started"])
        return (f"{'resumed from ' + self.resumed.name if self.resumed else 'new run'}; {td.value} value, "
                f"{td.method}, lambda {td.lam}, alpha {self.alpha}, epsilon {td.epsilon}, {td.games} games of "
                f"{rules.name} x {rules.players}")

    # 3. train
    def advance(self, state: RunState) -> None:
        t0 = time.perf_counter()
        self.stats = self.play.run(self.cfg.algo.steps_per_iteration)
        self.seconds = time.perf_counter() - t0
        state.iteration += 1
        state.env_steps += self.stats.decisions

    def report(self, state: RunState) -> Report:
        cfg = self.cfg
        evaluation = None
        if cfg.eval.every and state.iteration % cfg.eval.every == 0:
            evaluation = evaluate(cfg, self.rules, self.value, cfg.eval.games, state.iteration)
            state.evaluations.append(evaluation)
        row = progress_row(state, self.stats, self.seconds, self.value, cfg.algo.epsilon, evaluation)
        return Report(row, progress_line(row))

    def save(self, state: RunState) -> Path:
        return save_checkpoint(self.cfg, self.run, state, self.value, self.play)

    def policy_writer(self):
        return lambda folder: write_value_policy(self.cfg, self.value, folder)

    # 4. summary (the loop evaluates the saved policy)
    def summary(self, state: RunState, saved: Path | None, policy: Path | None) -> tuple[list[str], dict[str, Any]]:
        return checkpoint_summary(self.cfg, self.run, state, saved,
                                  f"play it as ckpt:{policy}; search on it as search:{policy}")


def play_seed(seed: int, iteration: int) -> int:
    """Dice seed of the games started at `iteration` (0 for a fresh run): a resume draws new, reproducible dice."""
    return int(np.random.SeedSequence([seed, iteration]).generate_state(1, np.uint32)[0])


# ---------------------------------------------------------------- 1. resume
def resume_point(cfg: TrainConfig, run: RunDir) -> tuple[RunState, Path]:
    """The newest checkpoint whose run state, learner state and policy read back; one line if none does."""
    def check(checkpoint: Path, state: RunState) -> None:
        json.loads((checkpoint / LEARNER).read_text())["rng"]
        load_value(run.policy_of(checkpoint))

    return run.resume_point(cfg.resume, check)


def load_checkpoint(value, checkpoint: Path) -> None:
    saved = load_value(checkpoint / POLICY_DIR)
    if saved.kind != value.kind or saved.config() != value.config():
        raise UserError(f"resume: the run's value is {saved.config()}, the config asks for {value.config()}: "
                        "keep the run's algo.value and algo.hidden")
    value.load_state_dict(saved.state_dict())


# ---------------------------------------------------------------- 3. evaluate, log, checkpoint
def evaluate(cfg: TrainConfig, rules, value, games: int, iteration: int) -> dict[str, Any]:
    """The greedy player on the current value against the panel (`policies.league.evaluation`)."""
    start = time.perf_counter()
    results = evaluate_panel(GreedyPlayer(value, name=f"td@{iteration}"), cfg.eval.panel, rules, games,
                             cfg.eval.seed, cfg.eval.threads)
    return {"iteration": iteration, "final": False, "seconds": round(time.perf_counter() - start, 2),
            "results": [r.to_dict() for r in results]}


def progress_row(state: RunState, stats, seconds: float, value, epsilon: float,
                 evaluation: dict[str, Any] | None) -> dict[str, Any]:
    row: dict[str, Any] = {
        **step_columns(state, stats.decisions / max(seconds, 1e-9)),
        "td_rmse": _finite(stats.td_rmse),
        "games_finished": stats.games_finished,
        "game_length": _finite(stats.game_decisions / stats.games_finished if stats.games_finished else None),
        "truncated": stats.truncated,
        "epsilon": epsilon,
        "weight_norm": weight_norm(value),
    }
    return {**row, **eval_columns(evaluation)}


def _finite(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 6)


def weight_norm(value) -> float:
    return round(float(torch.sqrt(sum((v.double() ** 2).sum() for v in value.state_dict().values()))), 6)


def progress_line(row: dict[str, Any]) -> str:
    def fmt(x, spec):
        return "-" if x is None else format(x, spec)

    return (f"it {row['iteration']:4d} | steps {row['env_steps']:>11,} | {row['env_steps_per_s']:,.0f} steps/s | "
            f"{row['minutes']:6.1f} min | td rmse {fmt(row['td_rmse'], '.4f')} | games {row['games_finished']} "
            f"(len {fmt(row['game_length'], '.0f')}) | |w| {row['weight_norm']:.2f}")


def write_value_policy(cfg: TrainConfig, value, folder: Path) -> None:
    """The value as it is now, as a td_value policy folder (with the run's algo settings)."""
    model_config, weights = policy_state(value, build.rules_mapping(cfg), {"algo": dataclasses.asdict(cfg.algo)})
    write_policy(folder, KIND, model_config, weights, obs_dim=feature_count())


def save_checkpoint(cfg: TrainConfig, run_dir: RunDir, state: RunState, value, play) -> Path:
    """Policy folder, learner state and run state, renamed into place together (`RunDir.save_checkpoint`)."""
    def write_parts(folder: Path) -> None:
        write_value_policy(cfg, value, run_dir.policy_of(folder))
        write_json(folder / LEARNER, {"rng": play.rng.bit_generator.state, "games_started": play.started_games})

    return run_dir.save_checkpoint(state.iteration, state, write_parts, cfg.checkpoint.keep)
