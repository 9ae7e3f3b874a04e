"""The run loop every trainer shares: ``launch/train.py`` and ``launch.training.trainers.*`` hand a `Trainer` to `run`.

The loop owns the run's lifecycle, written once:

1. the run folder (`launch.training.runs.RunDir`): the trainer opens it (fresh or
   resumed, `Trainer.open`), a fresh start saves its overrides;
2. the trainer's start (`Trainer.start`), wandb (`launch.training.runs.WandbLogger`)
   and the ``run folder:`` line;
3. the steps: until the budget is spent (`Trainer.budget_spent`, by default
   `launch.training.runs.budget_spent`: env steps, iterations, minutes over every
   start), ``advance`` then ``report``; each report is a row in
   ``metrics.jsonl`` and wandb and a progress line; a save every
   ``save_every`` steps (`Trainer.checkpoint`: a trainer may finish it in the
   background, `launch.training.upkeep`) and when the budget is spent;
4. Ctrl-C and SIGTERM (a scheduler's stop) save and say how to resume; a save
   that fails (a full disk) is one line naming the newest complete checkpoint; a
   step whose league write fails (its disk full) stops the run as a failing agent
   does, after a save;
5. after the last step: a save if the last step has none, the trainer's
   ``finish`` (the policy to evaluate), the final evaluation
   (``eval.final_games`` against ``eval.panel``), the summary (lines and
   ``summary.json``, with the commands that replay the final evaluation);
6. the best policy, for a trainer that can write its policy at any step
   (`Trainer.policy_writer`): after each evaluation during training whose
   `launch.training.runs.panel_score` beats the run's best so far, the policy as
   trained then becomes ``<run>/best/`` (`keep_best`; an evaluation taken up
   iterations after it was asked for brings the writer of the policy it played,
   `Report.evaluated`); at the end the last
   and the best-evaluated policy both play the final evaluation, and the
   higher score is the run's best (`settle_best`). Late iterates of DQN swing
   by several points; best/ is what a user plays or exports when it matters.

A trainer supplies only what is its own: its state on disk (``open``,
``save``), its step (``advance``, ``report``) and its summary lines.
"""
from __future__ import annotations

import abc
import shlex
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.core.hydra_config import HydraConfig

from launch.cli import UserError, one_line
from launch.training import build
from launch.training.runs import (
    SCORE_BY,
    SELECTION,
    SUMMARY,
    RunDir,
    RunState,
    StopSignals,
    WandbLogger,
    budget_spent,
    eval_suffix,
    panel_score,
    stopped_status,
    write_json,
)
from ludo_env.rules import Rules
from policies.league.evaluation import evaluate_command, evaluate_panel
from policies.league.store import LeagueWriteFailed
from policies.players import PlayerError, make_player, names_code

if TYPE_CHECKING:
    from launch.training.schema import TrainConfig


@dataclass
class Report:
    """One step's row for ``metrics.jsonl`` and wandb and its progress line (the loop adds the newest
    evaluation); RLlib's raw result and the league's ranking after a rating round go to wandb too."""

    row: dict[str, Any]
    line: str
    raw: dict[str, Any] = field(default_factory=dict)
    ranking: list[dict[str, Any]] | None = None
    """The league's ranking rows (`policies.league.leaderboard.ranking`) after a rating round taken up now."""
    evaluated: list[tuple[dict[str, Any], Callable[[Path], None]]] = field(default_factory=list)
    """Evaluations taken up now, oldest first, that played other weights than the current ones (asked for
    iterations ago, played beside training), each with ``write(folder)``, which writes the policy it played,
    for best/ (`keep_best`). The row carries the newest."""


class Trainer(abc.ABC):
    """What a trainer supplies to `run`; the defaults suit a trainer with checkpoints and a policy folder. The
    abstract methods are what each trainer must write: a subclass missing one cannot be built."""

    unit = "iteration"
    """What one step is called in messages (``stopped at iteration 12``)."""
    saves = "a checkpoint"
    """What a save writes, for the Ctrl-C / SIGTERM message."""
    resumable = True
    saves_first = False
    """A fresh run saves its starting point before the first step (cheap for it), so a kill at once resumes."""

    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg
        self.run = RunDir(cfg.run_dir)
        self.rules = Rules.load(build.rules_mapping(cfg))

    @property
    def save_every(self) -> int:
        """Save after every this many steps (0: only when the budget is spent, on a stop and at the end)."""
        return self.cfg.checkpoint.every

    @abc.abstractmethod
    def open(self, resume: bool) -> tuple[RunState, Path | None]:
        """The state to start from and the save it was read from (None for a fresh run)."""

    @abc.abstractmethod
    def start(self, state: RunState) -> str:
        """Build everything the steps need; returns what the ``run folder:`` line says about the run."""

    def budget_spent(self, state: RunState) -> bool:
        return budget_spent(self.cfg, state)

    @abc.abstractmethod
    def advance(self, state: RunState) -> None:
        """One step of training; it moves `state`'s counters (the loop keeps ``elapsed_s``)."""

    @abc.abstractmethod
    def report(self, state: RunState) -> Report | None:
        """After `advance` and the clock: the step's row, or None when this step logs nothing."""

    @abc.abstractmethod
    def save(self, state: RunState) -> Path:
        """Write the state a resume starts from, atomically; returns what was written, complete (a trainer that
        saves in the background waits for that first)."""

    def checkpoint(self, state: RunState) -> Path:
        """A save every `save_every` steps while training goes on: by default `save`. A trainer may take a
        consistent copy now and write it in the background (returning where it will be): a save that fails
        there must not stop the run, and the next `save` waits for it."""
        return self.save(state)

    def finish(self, state: RunState, saved: Path | None) -> Path | None:
        """After the last save: the policy folder to evaluate and name in the summary (None: there is none)."""
        return self.run.policy_of(saved)

    def final_evaluation(self, state: RunState, policy: Path) -> dict[str, Any]:
        return final_evaluation(self.cfg, self.rules, policy, state.iteration)

    def policy_writer(self) -> Callable[[Path], None] | None:
        """``write(folder)``: save the policy as trained at this moment, for the run's best/ (`keep_best`). None:
        this trainer keeps no best policy (the GA selects its own; imitation has no panel evaluations)."""
        return None

    @abc.abstractmethod
    def summary(self, state: RunState, saved: Path | None, policy: Path | None) -> tuple[list[str], dict[str, Any]]:
        """The summary's lines and ``summary.json``'s fields, the final evaluation's aside."""

    def close(self) -> None:  # noqa: B027  an optional hook: a trainer that holds nothing keeps this one
        """Release what `start` took (Ray); called once, after a stop or after the summary."""


def run(trainer: Trainer, notes: Sequence[str] = ()) -> None:
    """Run `trainer` from its run folder to its summary (module docstring); `notes` (a resume's kept settings,
    `launch.training.runs.keep_run_settings`) are printed once the run has opened, so a refused resume stays one
    line."""
    cfg, run_dir = trainer.cfg, trainer.run
    state, saved = trainer.open(bool(cfg.resume))
    for note in notes:
        print(note, file=sys.stderr, flush=True)
    if not cfg.resume:
        run_dir.save_overrides(task_overrides())
    if run_dir.saved_config() is None:  # a run from before config.yaml keeps, from now on, what it resumed with
        run_dir.save_config(cfg)
    about = trainer.start(state)
    logger = WandbLogger(cfg, run_dir, state)  # a new run's wandb id is in its first save
    if saved is None and trainer.saves_first:
        saved = trainer.save(state)
    print(f"run folder: {run_dir.path}  ({about}; wandb {logger.mode})", flush=True)

    started = time.perf_counter() - state.elapsed_s
    saved_at = state.iteration if saved is not None else None
    with StopSignals() as stops:  # Ctrl-C and a scheduler's stop (SIGTERM) save and say how to resume
        try:
            while not trainer.budget_spent(state):
                trainer.advance(state)
                state.elapsed_s = time.perf_counter() - started
                report = trainer.report(state)
                if report is not None:
                    new_best = keep_best(trainer, state, report.evaluated)
                    run_dir.append_metrics(report.row)
                    logger.log(report.raw, report.row, report.ranking)
                    if cfg.progress:
                        print(report.line + eval_suffix(state.evaluations) + (" | new best" if new_best else ""),
                              flush=True)
                if trainer.budget_spent(state):
                    saved, saved_at = save(trainer, state), state.iteration
                elif trainer.save_every and state.iteration % trainer.save_every == 0:
                    saved, saved_at = save(trainer, state, trainer.checkpoint), state.iteration
                stops.raise_pending()  # a stop signal that library code on the step's path swallowed
        except (UserError, LeagueWriteFailed) as err:  # an agent that fails mid-run (a panel bot of the user's), a
            # league its disk takes no more of: keep what was trained
            state.elapsed_s = time.perf_counter() - started
            saved = None if isinstance(err, SaveFailed) else saved_when_stopping(trainer, state)
            logger.finish()
            trainer.close()
            raise UserError(stopped_after(err, trainer, state, saved)) from None
        except KeyboardInterrupt as stop:
            print(f"\nstopped at {trainer.unit} {state.iteration}: saving {trainer.saves}", flush=True)
            state.elapsed_s = time.perf_counter() - started
            try:
                saved = save(trainer, state)
            except SaveFailed:
                logger.finish()
                trainer.close()
                raise
            if trainer.resumable:
                print(f"resume with: {resume_command(trainer)}", flush=True)
            else:
                print(f"saved: {saved}", flush=True)
            logger.finish()
            trainer.close()
            # saved; the status still says the run was stopped, not done
            raise SystemExit(stopped_status(stop)) from None
    if saved_at != state.iteration or saved is None:
        saved = save(trainer, state)

    policy = trainer.finish(state, saved)
    try:
        final = trainer.final_evaluation(state, policy) if cfg.eval.final_games and policy is not None else None
        best = settle_best(trainer, state, policy, final)
    except (UserError, LeagueWriteFailed) as err:  # a panel bot that fails, a full disk: the last save is the end
        logger.finish()
        trainer.close()
        raise UserError(stopped_after(err, trainer, state, saved)) from None
    lines, fields = trainer.summary(state, saved, policy)
    results, commands = final_lines(cfg, policy, final)
    best_lines, best_fields = best_summary(cfg, run_dir, best, state.iteration)
    write_json(run_dir.path / SUMMARY, {**fields, "final_evaluation": final, "evaluate_commands": commands,
                                        "best": best_fields})
    logger.finish(final, policy, best)
    print("\n".join(lines + results + best_lines), flush=True)
    trainer.close()


class SaveFailed(UserError):
    """A save that could not be written (a full disk): what was saved before it is the run's end."""


def save(trainer: Trainer, state: RunState, write: Callable[[RunState], Path] | None = None) -> Path:
    """`Trainer.save` (or `write`: `Trainer.checkpoint`); a failure to write it (`OSError`: a full disk, a folder
    gone, a league the disk takes no more of) is `SaveFailed`, one line naming the newest complete checkpoint, which
    the failed save leaves as it was."""
    try:
        return (write or trainer.save)(state)
    except OSError as err:
        newest = trainer.run.checkpoint_dirs()
        kept = f"the newest complete one is {newest[-1]}" if newest else "the run has no complete one"
        resume = f" (resume with: {resume_command(trainer)})" if newest and trainer.resumable else ""
        raise SaveFailed(f"{trainer.saves} at {trainer.unit} {state.iteration} could not be written "
                         f"({err.strerror or one_line(err)}{': ' + str(err.filename) if err.filename else ''}); "
                         f"{kept}{resume}") from None


def saved_when_stopping(trainer: Trainer, state: RunState) -> Path | SaveFailed:
    """The save of a run stopped by an error: what was written, or why nothing could be."""
    try:
        return save(trainer, state)
    except SaveFailed as failed:
        return failed


def resume_command(trainer: Trainer) -> str:
    """The command that resumes `trainer`'s run. A resume takes a ``py:`` bot only from its own command line (the
    run folder is files, so data: `launch.train.check_no_code_from_the_run`), so the lists that name one are given
    again."""
    cfg = trainer.cfg
    given = [f"{key}=[{','.join(specs)}]" for key, specs in (("eval.panel", cfg.eval.panel),
                                                             ("league.external", cfg.league.external))
             if any(names_code(spec) for spec in specs)]
    return " ".join(["python launch/train.py", f"resume={trainer.run.path}", *map(shlex.quote, given)])


def stopped_after(err: UserError | LeagueWriteFailed, trainer: Trainer, state: RunState,
                  saved: Path | SaveFailed | None) -> str:
    """The one line of a run stopped mid-way by `err`: what failed, what was saved, how to go on."""
    if isinstance(err, SaveFailed):
        return f"{err}; the run stopped at {trainer.unit} {state.iteration}"
    if isinstance(saved, SaveFailed):
        return f"{err}; the run stopped at {trainer.unit} {state.iteration}, and {saved}"
    line = f"{err}; the run stopped at {trainer.unit} {state.iteration} after saving {saved}"
    if trainer.resumable:
        line += f" (resume with: {resume_command(trainer)})"
    return line


def step_columns(state: RunState, steps_per_s: float) -> dict[str, Any]:
    """The first columns of a row of a trainer that counts env steps."""
    return {"iteration": state.iteration, "env_steps": state.env_steps, "minutes": round(state.elapsed_s / 60, 3),
            "env_steps_per_s": round(steps_per_s, 1)}


def eval_columns(evaluation: dict[str, Any] | None) -> dict[str, float]:
    """``eval/win_rate_vs_<opponent>`` of an evaluation (none without one)."""
    return {f"eval/win_rate_vs_{r['opponent']}": r["win_rate"] for r in (evaluation or {}).get("results", [])}


def task_overrides() -> list[str]:
    """The command line's overrides as Hydra saw them, less ``resume=`` (a resume reuses them)."""
    overrides = HydraConfig.get().overrides.task if HydraConfig.initialized() else []
    return [o for o in overrides if not o.startswith("resume=")]


def checkpoint_summary(cfg: TrainConfig, run_dir: RunDir, state: RunState, checkpoint: Path,
                       plays: str) -> tuple[list[str], dict[str, Any]]:
    """The summary of a trainer with checkpoints: counters, the checkpoint, its policy (`plays` says how to play
    it), the resume command."""
    policy = run_dir.policy_of(checkpoint)
    lines = [
        (f"done: {cfg.name}, {state.iteration} iterations, {state.env_steps:,} env steps, "
         f"{state.elapsed_s / 60:.1f} minutes of training"),
        f"checkpoint: {checkpoint}",
        f"policy:     {policy}   ({plays})",
        f"resume:     python launch/train.py resume={run_dir.path}",
    ]
    fields = {"name": cfg.name, "iterations": state.iteration, "env_steps": state.env_steps,
              "minutes": state.elapsed_s / 60, "checkpoint": str(checkpoint), "policy": str(policy),
              "evaluations": state.evaluations}
    return lines, fields


def final_evaluation(cfg, rules, policy: Path, iteration: int) -> dict[str, Any]:
    """The saved policy, loaded as ``ckpt:`` loads it, against ``cfg.eval.panel``: what the printed commands
    replay exactly. The record has the shape of every other evaluation in ``summary.json``."""
    start = time.perf_counter()
    try:
        results = evaluate_panel(make_player(f"ckpt:{policy}"), cfg.eval.panel, rules, cfg.eval.final_games,
                                 cfg.eval.seed, cfg.eval.threads)
    except PlayerError as err:  # a panel bot of the user's (py:) that raises
        raise UserError(f"eval.panel: {' '.join(str(err).split())}") from None
    return {"iteration": iteration, "final": True, "seconds": round(time.perf_counter() - start, 2),
            "results": [r.to_dict() for r in results]}


def best_record(cfg, iteration: int, env_steps: int, evaluation: dict[str, Any]) -> dict[str, Any]:
    """The selection record of best/: which policy, and the evaluation whose `panel_score` chose it."""
    return {"iteration": iteration, "env_steps": env_steps, "score": panel_score(evaluation), "score_by": SCORE_BY,
            "panel": list(cfg.eval.panel), "evaluation": evaluation}


def keep_best(trainer: Trainer, state: RunState,
              evaluated: Sequence[tuple[dict[str, Any], Callable[[Path], None]]] = ()) -> bool:
    """After a step whose report evaluated the policy: when that evaluation's `panel_score` beats best/'s (or
    best/ is missing, or was chosen on another panel), the policy it played becomes best/: the policy as trained
    now or, for each evaluation of `evaluated` (taken up iterations after it was asked for, `Report.evaluated`),
    the one its writer writes, the weights it played. Returns whether best/ changed."""
    write = trainer.policy_writer()
    if write is None:
        return False
    if not evaluated:
        newest = state.evaluations[-1] if state.evaluations else None
        if newest is None or newest["iteration"] != state.iteration:
            return False
        evaluated = [(newest, write)]
    changed = False
    for evaluation, write_evaluated in evaluated:
        current = trainer.run.best_selection()
        if (current is not None and current["panel"] == list(trainer.cfg.eval.panel)
                and current["score"] >= panel_score(evaluation)):
            continue
        record = best_record(trainer.cfg, evaluation["iteration"], evaluation.get("env_steps", state.env_steps),
                             evaluation)
        trainer.run.save_best(record, write_evaluated)
        changed = True
    return changed


def settle_best(trainer: Trainer, state: RunState, policy: Path | None,
                final: dict[str, Any] | None) -> dict[str, Any] | None:
    """The run's best/ once training is over. The best-evaluated policy was chosen on ``eval.games`` per panel
    entry, so it plays the final evaluation too (``eval.final_games``, the same dice as the last policy's), and
    the higher final `panel_score` of the two is best/. Returns best/'s record, with its ``final_evaluation``;
    None when the trainer keeps no best policy or there was no final evaluation."""
    if trainer.policy_writer() is None or final is None or policy is None:
        return None
    cfg, run_dir = trainer.cfg, trainer.run
    current = run_dir.best_selection()
    last = {**best_record(cfg, state.iteration, state.env_steps, final), "final_evaluation": final}
    if current is not None and current["iteration"] != state.iteration and current["panel"] == list(cfg.eval.panel):
        best_final = final_evaluation(cfg, trainer.rules, run_dir.policy_of(run_dir.best), current["iteration"])
        if panel_score(best_final) > panel_score(final):
            write_json(run_dir.best / SELECTION,
                       {**current, "score": panel_score(best_final), "final_evaluation": best_final})
            return run_dir.best_selection()
        last["challenger"] = {"iteration": current["iteration"], "final_evaluation": best_final}
    run_dir.save_best(last, lambda dest: shutil.copytree(policy, dest))
    return run_dir.best_selection()


def best_summary(cfg, run_dir: RunDir, best: dict[str, Any] | None,
                 last_iteration: int) -> tuple[list[str], dict[str, Any] | None]:
    """The summary lines and ``summary.json`` field of the run's best policy (`settle_best`)."""
    if best is None:
        return [], None
    policy = run_dir.policy_of(run_dir.best)
    results, commands = final_lines(cfg, policy, best["final_evaluation"])
    fields = {**best, "policy": str(policy), "evaluate_commands": commands}
    if best["iteration"] == last_iteration:
        challenger = best.get("challenger")
        why = (f"it scored at least as high as iteration {challenger['iteration']}, the best evaluated during "
               f"training, over the same final games" if challenger else "no evaluation during training scored higher")
        return [f"best:       {policy}   (the last policy: {why})"], fields
    head = (f"best:       {policy}   (iteration {best['iteration']}, {best['env_steps']:,} env steps: a higher "
            f"{SCORE_BY} than the last policy over the same final games)")
    return [head, *results], fields


def final_lines(cfg, policy: Path, final: dict[str, Any] | None) -> tuple[list[str], list[str]]:
    """Summary lines of a final evaluation (win rate, Wilson 95% interval) and the commands that replay it."""
    rules = Rules.load(build.rules_mapping(cfg))
    players = rules.players
    lines, commands = [], []
    for r in (final or {}).get("results", []):
        command = evaluate_command(str(policy), r["opponent"], rules, r["games"], cfg.eval.seed)
        commands.append(command)
        lo, hi = r["ci95"]
        lines.append(f"vs {players - 1} x {r['opponent']}: win rate {100 * r['win_rate']:.1f}% "
                     f"[{100 * lo:.1f}, {100 * hi:.1f}] over {r['games']} games; reproduce with:")
        lines.append(f"  {command}")
    return lines, commands
