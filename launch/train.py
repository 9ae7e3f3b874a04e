"""Train a Ludo agent: PPO or DQN by league self-play with RLlib, or the GA, TD(λ) and imitation trainers.

    python launch/train.py +exp=dqn_selfplay
    python launch/train.py +exp=ppo_selfplay budget.minutes=60 resources.env_runners=2
    python launch/train.py +exp=smoke                      # under a minute, what CI runs
    python launch/train.py resume=outputs/train/<run>      # continue a stopped or killed run

The command composes the config (``conf/config.yaml``, schema `launch.training.schema.TrainConfig`; a resume
keeps the run's own settings), checks it before a run folder exists, and hands it to the trainer of
``algo.name`` that `launch.training.algorithms` declares: `launch.training.trainers.rllib` (league self-play,
steps 2-7 of a run) for the RLlib algorithms, `launch.training.trainers.ga`, ``td_lambda`` and ``imitate`` for
the others; all run on `launch.training.loop`. The run folder is the Hydra output folder; its layout is in `launch.training.runs`. A
final summary names the checkpoints, the leaderboard, the best-evaluated policy (``<run>/best/``,
`launch.training.loop.keep_best`) and the exact commands that reproduce the evaluations.

A user error (unknown experiment, bad value, missing or damaged checkpoint)
prints one line and exits with status 2. An external league member that
raises mid-run (at a training seat, against the panel, in a rating round) is
named in one warning line and dropped from the league for good; training goes
on. A panel bot of the user's that raises stops the run in one line after a
checkpoint.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("RAY_BACKEND_LOG_LEVEL", "fatal")
os.environ.setdefault("RAY_DEDUP_LOGS", "0")

import launch  # noqa: F401  (first: it refuses a Python other than 3.11 in one line)

# isort: split
import hydra
from omegaconf import DictConfig, OmegaConf

from launch.cli import UserError, check_hydra_outputs, compose, fail, one_line
from launch.training import build, loop
from launch.training.algorithms import algorithm
from launch.training.runs import OVERRIDES, RunDir, keep_run_settings, merge_overrides, typed_today
from launch.training.schema import TrainConfig, check
from ludo_env.rules import Rules
from policies.checkpoints import PolicyFileError
from policies.league.league import normalized_external
from policies.players import PlayerSpecError, make_player, stored_spec


@hydra.main(config_path="../conf", config_name="config", version_base=None)
def main(dict_cfg: DictConfig) -> None:
    try:
        train(dict_cfg)
    except UserError as err:
        fail(err)


def train(dict_cfg: DictConfig) -> None:
    # 1. compose: typed by TrainConfig (a resume keeps the run's own settings), then the checks types cannot make
    notes = []
    if dict_cfg.resume:
        overrides = loop.task_overrides()
        notes = keep_run_settings(dict_cfg, RunDir(dict_cfg.resume).saved_config(), overrides,
                                  typed_today(dict_cfg.resume, overrides))
    cfg = checked_config(dict_cfg)
    algorithm(cfg.algo.name).trainer_module().train(cfg, notes)


# ---------------------------------------------------------------- 1. compose, resume
def checked_config(dict_cfg: DictConfig) -> TrainConfig:
    """The typed config after every check that needs neither Ray nor the run folder; `UserError` of one line."""
    try:
        cfg: TrainConfig = OmegaConf.to_object(dict_cfg)  # type: ignore[assignment]
        check(cfg)
        build.check_resources(cfg)  # what Ray could never grant here would make it wait forever
    except Exception as err:  # noqa: BLE001  a value the schema or the checks refuse
        raise UserError(one_line(err)) from None
    check_players(cfg)
    check_inputs = getattr(algorithm(cfg.algo.name).trainer_module(), "check", None)  # a trainer's checks of its own inputs
    if check_inputs is not None:  # (imitation: its record files)
        check_inputs(cfg)
    return cfg


def check_players(cfg: TrainConfig) -> None:
    """Every player the config names (eval.panel, league.external) loads, and a learned one was trained for this
    run's variant and player count: refused here in one line, not after Ray has started."""
    rules = Rules.load(build.rules_mapping(cfg))
    for key, specs in (("eval.panel", cfg.eval.panel), ("league.external", cfg.league.external)):
        for spec in specs:
            try:
                make_player(normalized_external(spec) if key == "league.external" else spec, cfg.seed, rules)
            except (PlayerSpecError, PolicyFileError) as err:
                raise UserError(f"{key}: {one_line(err)}") from None


def preflight(argv: list[str], typed: list[str]) -> None:
    """`checked_config` of the command line before Hydra makes the run folder: a refused run leaves none. `typed`:
    the command line as the user gave it, before a resume merged in the run's own overrides."""
    overrides = [a for a in argv if not a.lstrip("+~").startswith("run_dir=")]
    dict_cfg = compose("config", [*overrides, "run_dir=unchecked"])
    if dict_cfg.resume:
        keep_run_settings(dict_cfg, RunDir(dict_cfg.resume).saved_config(), overrides,
                          typed_today(dict_cfg.resume, overrides))
        check_no_code_from_the_run(dict_cfg, typed)
    checked_config(dict_cfg)


def check_no_code_from_the_run(dict_cfg: DictConfig, typed: list[str]) -> None:
    """On a resume, every ``py:`` spec comes from today's command line: one the run folder supplies (its
    ``overrides.txt`` or ``config.yaml``, which are files, so data) is `UserError` of one line before anything
    imports it, unless the user typed that very spec again."""
    today = " ".join(typed)
    for key in ("eval.panel", "league.external"):
        for spec in OmegaConf.select(dict_cfg, key) or ():
            if isinstance(spec, str) and spec.strip() in today:
                continue
            try:
                stored_spec(spec, f"resume={dict_cfg.resume}: {key} from the run folder")
            except PlayerSpecError as err:
                raise UserError(f"{err}; to play it, give {key} again on this command line") from None


def resume_argv(argv: list[str]) -> list[str]:
    """``resume=<run>`` reuses the run's own overrides (saved at its first start); later ones win."""
    for arg in argv:
        key, eq, value = arg.lstrip("+~").partition("=")
        if key == "resume" and eq and not value.strip():  # else a new run starts, in a new folder
            raise UserError("resume= needs a run folder: resume=outputs/train/<run> (leave resume out to start a "
                            "new run)")
    resume = next((a.partition("=")[2] for a in argv if a.startswith("resume=")), None)
    if not resume or any(a.startswith("-") for a in argv):
        return argv
    saved = RunDir(resume).saved_overrides()
    if saved is None:
        if not Path(resume).is_dir():
            raise UserError(f"resume={resume}: no such run folder")
        raise UserError(f"resume={resume}: not a training run folder (no overrides.txt)")
    # A resume writes where it was pointed: the first start's run_dir= names the folder the run was started in,
    # which a copied run folder is not.
    where = (a.lstrip("+~") for a in argv)
    elsewhere = next((a for a in where if a.partition("=")[0] in WHERE_KEYS
                      and Path(a.partition("=")[2]).resolve() != Path(resume).resolve()), None)
    if elsewhere is not None:
        raise UserError(f"resume={resume}: a resume writes into the run it resumes, and {elsewhere} names another "
                        "folder: drop it (to continue a copy elsewhere, copy the run folder and resume the copy)")
    saved = [o for o in saved if o.lstrip("+~").partition("=")[0] not in WHERE_KEYS]
    return merge_overrides(saved, argv)


WHERE_KEYS = ("run_dir", "hydra.run.dir")
"""Overrides that say where a run writes: a resume writes into the run it resumes."""
HYDRA_OWN = {".hydra", "train.log"}
"""What Hydra writes in a run folder as it starts: all that a start refused after it leaves behind."""


def check_run_folder(cfg) -> None:
    """The folder a run writes into is new, empty, or a training run's own (it holds ``overrides.txt``, as a
    resumed run does): a run never writes among other files (``hydra.run.dir=/etc``). `UserError` of one line."""
    folders = [("hydra.run.dir", cfg.hydra.run.dir)]
    if not OmegaConf.is_interpolation(cfg, "run_dir"):  # run_dir= set by hand names where the run writes too
        folders.append(("run_dir", cfg.run_dir))
    for key, folder in folders:
        folder = Path(folder)
        if not folder.is_dir() or (folder / OVERRIDES).is_file():
            continue
        others = sorted(p.name for p in folder.iterdir() if p.name not in HYDRA_OWN)
        if others:
            raise UserError(f"{key}={folder}: the folder holds other files ({len(others)}, e.g. {others[0]!r}), and "
                            "a run writes only into a new or empty folder, or resumes its own run (resume=<run>)")


if __name__ == "__main__":
    try:
        argv = resume_argv(sys.argv[1:])
        if not any(a.startswith("-") for a in argv):
            # a bad override: one line, not Hydra's page; a run folder that cannot be written: before Hydra makes it
            composed = compose("config", argv, return_hydra_config=True)
            check_hydra_outputs(composed)
            check_run_folder(composed)
            preflight(argv, sys.argv[1:])  # every check that needs no Ray, before a run folder exists
        sys.argv = sys.argv[:1] + argv
        main()
    except UserError as err:
        fail(err)
