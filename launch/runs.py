"""A training run's folder: atomic checkpoints, the run state that resumes them, and the saved overrides;
and the pieces every trainer's loop shares (SIGTERM save, budget, wandb, progress suffix), so no trainer
imports the ``launch/train.py`` script.

Layout of ``<run_dir>`` (the Hydra output folder)::

    overrides.txt            the command-line overrides of the first start (a resume reuses them)
    config.yaml              the whole config of the first start (a resume keeps its settings: `keep_run_settings`)
    checkpoints/iter_000010/ one checkpoint: algorithm/ (RLlib), policy/ (policies.checkpoints),
                             run_state.json (iteration, env steps, minutes, evaluations)
    best/                    the best-evaluated policy so far: policy/ and selection.json (which
                             evaluation chose it, `panel_score`); not rolled back on a resume
    metrics.jsonl            one line per iteration
    league.db                the league (policies.league.store): members, matches, rating history
    league/<snapshot>/       each snapshot's weights (policies.checkpoints policy folder)
    leaderboard.html         the dashboard (python launch/leaderboard.py league=<run_dir>)
    summary.json             the final results
    wandb/                   the wandb run

A checkpoint is written into a hidden temporary folder and renamed into
place, so ``iter_*`` folders are always complete; a run killed while saving
leaves only a temporary folder, which the next save removes. The league
database commits each change as it happens and is not rolled back on a
resume: snapshots frozen after the last checkpoint stay in the league.
"""
from __future__ import annotations

import json
import os
import secrets
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import OmegaConf

from launch.cli import CONF_DIR, write_text
from policies.checkpoints import CHECKPOINT_PREFIX, CHECKPOINTS_DIR, POLICY_DIR

if TYPE_CHECKING:
    from launch.schema import TrainConfig

RUN_STATE = "run_state.json"
ALGORITHM_DIR = "algorithm"
OVERRIDES = "overrides.txt"
CONFIG = "config.yaml"
# Sections a resume takes from today's command line and machine, never from the first start: where the run
# lives, the machine's resources, how it is tracked and printed.
MACHINE_SECTIONS = ("resume", "run_dir", "resources", "wandb", "progress")
METRICS = "metrics.jsonl"
SUMMARY = "summary.json"
BEST_DIR = "best"
SELECTION = "selection.json"
SCORE_BY = "mean win rate over eval.panel"


@dataclass
class RunState:
    """Counters the loop keeps across a resume."""

    iteration: int = 0
    env_steps: int = 0
    elapsed_s: float = 0.0
    """Training seconds so far, over every start of the run."""
    snapshot_slots: int | None = None
    """league.max_snapshots of the run: the snapshot modules its algorithm checkpoints hold."""
    last_snapshot: int | None = None
    """Iteration of main's newest snapshot."""
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    wandb_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunState:
        return cls(**data)


class RunDir:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.checkpoints = self.path / CHECKPOINTS_DIR

    def checkpoint_dirs(self) -> list[Path]:
        """Complete checkpoints, oldest first."""
        if not self.checkpoints.is_dir():
            return []
        return sorted(p for p in self.checkpoints.glob(f"{CHECKPOINT_PREFIX}*") if p.is_dir())

    def save_checkpoint(self, iteration: int, run_state: RunState, write_parts, keep: int) -> Path:
        """Write a checkpoint: ``write_parts(folder)`` fills algorithm/ and policy/, then the run state, then a rename."""
        self.checkpoints.mkdir(parents=True, exist_ok=True)
        for stale in self.checkpoints.glob(".tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        final = self.checkpoints / f"{CHECKPOINT_PREFIX}{iteration:06d}"
        tmp = self.checkpoints / f".tmp-{final.name}-{os.getpid()}"
        write_parts(tmp)
        write_json(tmp / RUN_STATE, run_state.to_dict())
        if final.exists():  # the same iteration saved twice (a resume that stopped at once)
            shutil.rmtree(final)
        os.rename(tmp, final)
        _fsync_dir(self.checkpoints)
        for old in self.checkpoint_dirs()[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
        return final

    def resume_point(self, resume: str, check) -> tuple[RunState, Path]:
        """The newest checkpoint whose run state reads back and that ``check(checkpoint, state)`` accepts.

        A checkpoint that fails (any exception but `launch.cli.UserError`, which means the user must change
        something) is skipped with a warning naming what is wrong; none left is one line for the user.
        """
        import sys

        from launch.cli import UserError, one_line

        if not self.path.is_dir():
            raise UserError(f"resume={resume}: no such run folder")
        checkpoints = self.checkpoint_dirs()
        if not checkpoints:
            raise UserError(f"resume={resume}: the run has no checkpoint to resume from")
        problems = []
        for checkpoint in reversed(checkpoints):
            try:
                state = self.read_state(checkpoint)
                check(checkpoint, state)
            except UserError:
                raise
            except Exception as err:  # any unreadable part: fall back to the one before
                problems.append(f"{checkpoint.name} is damaged ({one_line(err)})")
                continue
            for problem in problems:
                print(f"warning: {problem}; resuming from the older {checkpoint.name}", file=sys.stderr)
            return state, checkpoint
        raise UserError(f"resume={resume}: no checkpoint loads: {'; '.join(problems)}")

    @staticmethod
    def read_state(checkpoint: Path) -> RunState:
        return RunState.from_dict(json.loads((checkpoint / RUN_STATE).read_text()))

    def save_overrides(self, overrides: list[str]) -> None:
        write_text(self.path / OVERRIDES, "".join(f"{o}\n" for o in overrides))

    def saved_overrides(self) -> list[str] | None:
        file = self.path / OVERRIDES
        return file.read_text().splitlines() if file.is_file() else None

    def save_config(self, cfg: TrainConfig) -> None:
        write_text(self.path / CONFIG, OmegaConf.to_yaml(OmegaConf.structured(cfg)))

    def saved_config(self) -> dict[str, Any] | None:
        """The first start's whole config, None for a run started before runs saved it."""
        file = self.path / CONFIG
        return OmegaConf.to_container(OmegaConf.load(file)) if file.is_file() else None  # type: ignore[return-value]

    def append_metrics(self, row: dict[str, Any]) -> None:
        with open(self.path / METRICS, "a") as f:
            f.write(json.dumps(row) + "\n")

    def drop_metrics_from(self, iteration: int) -> None:
        """Drop the metrics rows of `iteration` and later: a resumed run plays those iterations again."""
        file = self.path / METRICS
        if file.is_file():
            rows = [line for line in file.read_text().splitlines() if line.strip()]
            kept = [line for line in rows if json.loads(line)["iteration"] < iteration]
            if len(kept) < len(rows):
                write_text(file, "".join(f"{line}\n" for line in kept))

    def check_algorithm_state(self, checkpoint: Path) -> None:
        """Every pickle of the checkpoint's RLlib state reads back (a truncated or overwritten
        ``module_state.pkl`` or ``algorithm_state.pkl``); `ValueError` naming the first that does not."""
        import pickle

        folder = self.algorithm_of(checkpoint)
        if not (folder / "rllib_checkpoint.json").is_file():
            raise ValueError("its algorithm/ folder is incomplete")
        for file in sorted(folder.rglob("*.pkl")):
            try:
                with open(file, "rb") as f:
                    pickle.load(f)
            except Exception as err:  # any way a pickle fails: truncated, garbage, a class that is gone
                raise ValueError(f"{file.relative_to(checkpoint)} does not load: "
                                 f"{type(err).__name__}: {str(err)[:80]}") from None

    def policy_of(self, checkpoint: Path) -> Path:
        return checkpoint / POLICY_DIR

    @property
    def best(self) -> Path:
        return self.path / BEST_DIR

    def best_selection(self) -> dict[str, Any] | None:
        """The record of the policy in best/ (iteration, env steps, score, the evaluation that chose it), or None
        when the run has none yet. A kill between the two renames of `save_best` leaves no best/ but the previous
        one under ``.best-old-*``: it is put back first."""
        if not self.best.is_dir():
            for old in sorted(self.path.glob(".best-old-*")):
                if (old / SELECTION).is_file() and self.policy_of(old).is_dir():
                    os.rename(old, self.best)
                    break
        try:
            return json.loads((self.best / SELECTION).read_text())
        except (OSError, ValueError):
            return None

    def save_best(self, selection: dict[str, Any], write_policy) -> Path:
        """Make ``write_policy(folder)``'s policy, with its `selection` record, the run's best/: both go into a
        temporary folder that replaces best/ by two renames (`best_selection` repairs a kill between them)."""
        self.best_selection()
        for stale in [*self.path.glob(".best-tmp-*"), *self.path.glob(".best-old-*")]:
            shutil.rmtree(stale, ignore_errors=True)
        tmp, old = self.path / f".best-tmp-{os.getpid()}", self.path / f".best-old-{os.getpid()}"
        write_policy(self.policy_of(tmp))
        write_json(tmp / SELECTION, selection)
        if self.best.exists():
            os.rename(self.best, old)
        os.rename(tmp, self.best)
        _fsync_dir(self.path)
        shutil.rmtree(old, ignore_errors=True)
        return self.best

    def algorithm_of(self, checkpoint: Path) -> Path:
        return checkpoint / ALGORITHM_DIR


RAY_SESSION = "ray_session.json"
"""The local Ray cluster a driver of this run started: its session folder, and the driver's pid and start tick."""


def _proc_start(pid: int) -> int | None:
    """A process's start time in clock ticks since boot (Linux /proc), or None when it is gone: with the pid, it
    names one process, never a later one that reused the pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[19])


def _processes() -> list[tuple[int, int]]:
    """(pid, parent pid) of every process this user can see."""
    found = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if entry.isdigit():
            try:
                found.append((int(entry), int(Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[1])))
            except (OSError, ValueError, IndexError):
                continue
    return found


def _holds_open(pid: int, folders: list[str]) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if any(target.startswith(folder) for folder in folders):
            return True
    return False


def record_ray_session(run: RunDir, session_dir: str) -> None:
    """Remember the local Ray cluster this driver started (a joined cluster is not the run's to clean up)."""
    me = os.getpid()
    started_here = any(ppid == me and Path(f"/proc/{pid}/comm").read_text().strip() == "gcs_server"
                       for pid, ppid in _processes() if Path(f"/proc/{pid}/comm").exists())
    if started_here:
        write_json(run.path / RAY_SESSION, {"session_dir": session_dir, "driver_pid": me,
                                            "driver_start": _proc_start(me)})


def stop_leftovers(run: RunDir) -> list[int]:
    """SIGKILL what a killed earlier driver of this run left running: processes that hold files of its Ray
    session open (Ray's DashboardAgent and RuntimeEnvAgent outlive a ``kill -9`` of the driver by half a minute
    and more, retrying a GCS that died with it) or of the run's wandb folder (wandb's service). Nothing when that
    driver still runs. Defunct (zombie) workers are not processes to stop: their parent reaps them. Returns the
    pids stopped."""
    import signal

    try:
        session = json.loads((run.path / RAY_SESSION).read_text())
    except (OSError, ValueError):
        return []
    if session.get("driver_start") is not None and _proc_start(session["driver_pid"]) == session["driver_start"]:
        return []  # that driver is alive: its processes are its own
    folders = [session["session_dir"].rstrip("/") + "/", str((run.path / "wandb").resolve()) + "/"]
    me, stopped = os.getpid(), []
    for pid, _ in _processes():
        if pid != me and _holds_open(pid, folders):
            try:
                os.kill(pid, signal.SIGKILL)
                stopped.append(pid)
            except OSError:
                continue
    (run.path / RAY_SESSION).unlink(missing_ok=True)
    return stopped


def write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=1) + "\n")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def merge_overrides(saved: list[str], new: list[str]) -> list[str]:
    """The first start's overrides, each replaced by a new one for the same key; new keys appended."""
    def key(override: str) -> str:
        return override.partition("=")[0].lstrip("+~")

    new_keys = {key(o) for o in new}
    return [o for o in saved if key(o) not in new_keys] + list(new)


def leaves(node: Any, prefix: str = "", sep: str = ".") -> dict[str, Any]:
    """``{"algo.lr": 0.0005, ...}``: every leaf of nested dicts by its joined key (a list is one leaf)."""
    if not isinstance(node, dict):
        return {prefix: node}
    found: dict[str, Any] = {}
    for key, value in node.items():
        found.update(leaves(value, f"{prefix}{sep}{key}" if prefix else str(key), sep))
    return found


def keep_run_settings(dict_cfg, saved: dict[str, Any] | None, overrides: list[str]) -> list[str]:
    """On a resume, give back the run's own value of every setting whose default changed since its first start.

    A resumed run continues the training it started: a setting that differs from the run's `saved` config
    (`RunDir.saved_config`) takes the run's value unless an override (the first start's or this command
    line's) names it or a section above it; an override that picks a config group's file (``algo=dqn``,
    ``+exp=...``) names no value, so the file's changed defaults are given back too. `MACHINE_SECTIONS` always
    follow today. Returns the notes to print:
    the settings given back, those added since (today's default: the run never had them) and those gone.
    """
    if saved is None:
        return ["note: this run was started before runs saved their config.yaml: it resumes with today's defaults "
                "(saved now, so later resumes keep them)"]
    keys = {o.partition("=")[0].lstrip("+~").partition("@")[0] for o in overrides}
    asked = {k for k in keys if not (CONF_DIR / k.replace(".", "/")).is_dir()}

    def followed_today(key: str) -> bool:
        parts = key.split(".")
        return parts[0] in MACHINE_SECTIONS or any(".".join(parts[:i]) in asked for i in range(1, len(parts) + 1))

    now = leaves(OmegaConf.to_container(dict_cfg, resolve=True))
    before = leaves(saved)
    kept = {k: v for k, v in before.items() if k in now and now[k] != v and not followed_today(k)}
    for key, value in kept.items():
        OmegaConf.update(dict_cfg, key, value, merge=False)
    notes = []
    if kept:
        notes.append("note: resume keeps this run's settings where today's defaults differ: "
                     + ", ".join(f"{k}={v!r} (default now {now[k]!r})" for k, v in kept.items()))
    added = [f"{k}={now[k]!r}" for k in now if k not in before and not followed_today(k)]
    if added:
        notes.append(f"note: settings added since this run started take today's defaults: {', '.join(added)}")
    gone = [k for k in before if k not in now and not followed_today(k)]
    if gone:
        notes.append(f"note: settings this run had no longer exist: {', '.join(gone)}")
    return notes


# ---------------------------------------------------------------- pieces every trainer's loop shares
def stop_on_sigterm(signum, frame) -> None:
    """SIGTERM handler: a scheduler's stop takes the Ctrl-C path, which saves before exiting."""
    raise KeyboardInterrupt


def budget_spent(cfg: TrainConfig, state: RunState) -> bool:
    budget = cfg.budget
    return bool(
        (budget.minutes and state.elapsed_s >= budget.minutes * 60)
        or (budget.env_steps and state.env_steps >= budget.env_steps)
        or (budget.iterations and state.iteration >= budget.iterations)
    )


def panel_score(evaluation: dict[str, Any]) -> float:
    """What ranks a run's evaluations for its best policy (`SCORE_BY`): the mean win rate over the panel."""
    results = evaluation["results"]
    return sum(r["win_rate"] for r in results) / len(results)


def eval_suffix(evaluations: list[dict]) -> str:
    """`` | eval@N vs random 71.2% [67.1,75.0], ...``: the newest evaluation, for a progress line."""
    if not evaluations:
        return ""
    last = evaluations[-1]
    parts = [f"{r['opponent']} {100 * r['win_rate']:.1f}% [{100 * r['ci95'][0]:.1f},{100 * r['ci95'][1]:.1f}]"
             for r in last["results"]]
    return f" | eval@{last['iteration']} vs " + ", ".join(parts)


class WandbLogger:
    """wandb run in ``<run_dir>/wandb``: the config, every metric per iteration, the final policy as an artifact."""

    def __init__(self, cfg: TrainConfig, run: RunDir, state: RunState):
        self.mode = cfg.wandb.mode
        self.run = None
        if self.mode == "disabled":
            return
        import wandb

        if state.wandb_id is None:  # kept in the run state, so a resumed run continues the same wandb run
            state.wandb_id = secrets.token_hex(4)
        self.run = wandb.init(
            project=cfg.wandb.project, entity=cfg.wandb.entity, group=cfg.wandb.group, tags=list(cfg.wandb.tags),
            name=f"{cfg.name}-{run.path.name}", mode=self.mode, dir=str(run.path), id=state.wandb_id,
            resume="allow", config=OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True),
            settings=wandb.Settings(console="off", quiet=True),
        )
        self.log_checkpoint = cfg.wandb.log_checkpoint

    def log(self, result: dict, row: dict[str, Any], league=None) -> None:
        """One iteration's metrics; with `league` (a rating round was played) its ranking table too."""
        if self.run is None:
            return
        metrics = {f"rllib/{k}": v for k, v in flatten(result).items()}
        metrics.update({f"progress/{k}": v for k, v in row.items() if v is not None and "/" not in k})
        metrics.update({k: v for k, v in row.items() if "/" in k and v is not None})
        if league is not None:
            from policies.league.leaderboard import ranking_table

            metrics["league/ranking"] = ranking_table(league.store)
        self.run.log(metrics, step=row["iteration"])

    def finish(self, final: dict | None = None, policy: Path | None = None, best: dict | None = None) -> None:
        if self.run is None:
            return
        import wandb

        for prefix, evaluation in (("final", final), ("best", (best or {}).get("final_evaluation"))):
            for r in (evaluation or {}).get("results", []):
                self.run.summary[f"{prefix}/win_rate_vs_{r['opponent']}"] = r["win_rate"]
                self.run.summary[f"{prefix}/ci95_vs_{r['opponent']}"] = list(r["ci95"])
        if best is not None:
            self.run.summary["best/iteration"] = best["iteration"]
        if policy is not None and self.log_checkpoint:
            artifact = wandb.Artifact(f"{self.run.name}-policy".replace("/", "-"), type="model")
            artifact.add_dir(str(policy))
            self.run.log_artifact(artifact)
        self.run.finish()


def flatten(tree: dict) -> dict[str, float]:
    """The numbers of a nested result dict under ``a/b/c`` keys."""
    out: dict[str, float] = {}
    for name, value in leaves(tree, sep="/").items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = value
        elif hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
            out[name] = value.item()
    return out
