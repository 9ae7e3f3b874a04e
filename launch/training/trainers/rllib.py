"""RLlib league self-play (PPO, DQN): the trainer ``launch/train.py`` runs for every RLlib algorithm.

Reads top to bottom: 2 seed, 3 build the RLlib config (`launch.training.build`) and open the league
(``<run>/league.db``, `policies.league.league`), 4 a plain ``algo.train()`` loop, 5 evaluate greedy ``main``
against the ``eval.panel`` in the fast evaluator and play a league rating round, then freeze ``main`` into the
league when the snapshot rule says so and re-weigh the opponents (PFSP), 6 log a line per iteration and
everything to wandb (offline unless told otherwise), 7 checkpoint atomically. The run's lifecycle (run folder,
overrides, budget, saves on Ctrl-C and SIGTERM, logs, summary) is `launch.training.loop`'s; `LeagueSelfPlay`
supplies steps 2-7. Step 1, composing and checking the config, is the command's (`launch/train.py`).

Training never waits for the upkeep of steps 5 and 7 (``upkeep.background``, docs/pages/concepts/upkeep.md): main's weights
are copied once when they are needed (`league_upkeep.FrozenWeights`); a snapshot takes its slot at once; the
panel evaluation and rating round of those weights play in a worker beside training
(`league_upkeep.LeagueWorker`), and their results (the evaluation, new ratings, so a new matchmaker) are taken
up at a later iteration, one job at a time, so the league's ratings lag by one round at most; a checkpoint is
a consistent copy taken between two iterations and written and signed in a thread. A job that fails is one
warning line and training goes on; three failures of a kind in a row stop the run after a checkpoint
(`launch.training.upkeep`).

With exploiters (learners of the roles besides main in `policies.league.roles`; ``league=alphastar``), every
iteration also collects each exploiter's finished games from the runners, and freezes into the league (step 5)
each one whose role's freeze rule fires, restarting it when its role's reset rule says so: from its initial
weights (kept in ``<run>/league/initial/<module>/``) or, with ``league.exploiter_reset_to=main``
(``league=alphastar``'s), as a copy of main, which is also how it starts.

An external league member that raises mid-run (at a training seat, against the panel, in a rating round) is
named in one warning line and dropped from the league for good; training goes on. A panel bot of the user's
that raises stops the run in one line after a checkpoint.
"""
from __future__ import annotations

import dataclasses
import functools
import json
import random
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import ray
import torch
from ray.rllib.core import COMPONENT_LEARNER, COMPONENT_LEARNER_GROUP, COMPONENT_RL_MODULE
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
)

from launch.cli import UserError, one_line
from launch.training import build, loop, watchdog
from launch.training.algorithms import rllib_names, rllib_training
from launch.training.loop import Report, Trainer, checkpoint_summary, eval_columns, step_columns
from launch.training.runs import (
    RunDir,
    RunState,
    checkpoint_key,
    leaves,
    record_ray_session,
    stop_leftovers,
    typed_today,
)
from launch.training.sampler import BatchedLudoEnvRunner
from launch.training.schema import TrainConfig
from launch.training.trainers.league_upkeep import (
    FrozenWeights,
    LeagueJob,
    LeagueOutcome,
    LeagueWorker,
    PanelEvaluator,
    job_members,
    panel_of,
    start_worker,
)
from launch.training.upkeep import BackgroundJob, done_now, frozen_copy
from ludo_env.rules import Rules
from policies.checkpoints import PolicyFileError, find_policy, read_meta
from policies.league import roles
from policies.league.evaluation import override_value
from policies.league.league import SNAPSHOT_DIR, ExploiterProgress, League, MemberFailed
from policies.league.pool import MAIN, SNAPSHOT_PREFIX, snapshot_id
from policies.league.store import DB_NAME, LeagueStore
from policies.players import PlayerSpecError, make_player
from policies.saved import load_module


def train(cfg: TrainConfig, notes: list[str]) -> None:
    """2-7: the run loop (launch.training.loop) with RLlib league self-play as its trainer."""
    loop.run(LeagueSelfPlay(cfg), notes)


class LeagueSelfPlay(Trainer):
    """RLlib's ``algo.train()`` against main, its snapshots and bots; what the loop runs for ppo and dqn."""

    def open(self, resume: bool) -> tuple[RunState, Path | None]:
        state, self.resumed = find_resume_point(self.cfg, self.run)
        stopped = stop_leftovers(self.run)  # a killed driver's Ray agents and wandb service must not compete
        if stopped:
            print(f"note: stopped {len(stopped)} processes a killed earlier start of this run left running "
                  f"(pids {', '.join(map(str, stopped))})", file=sys.stderr, flush=True)
        return state, self.resumed

    def start(self, state: RunState) -> str:
        cfg, run = self.cfg, self.run
        # 2. seed
        seed_everything(cfg.seed)

        # 3. build (the algorithm config is plain data; nothing runs until ray.init)
        self.pool = pool = build.make_pool(cfg)
        state.snapshot_slots = cfg.league.max_snapshots
        try:
            self.league = league = League(LeagueStore.open(run.path / DB_NAME), build.league_settings(cfg),
                                          cfg.variant.name)
        except ValueError as err:  # a damaged database, an external agent that is not there
            raise UserError(one_line(err)) from None
        for slot, member in league.slot_members().items():
            pool.fill(slot, member.iteration or 0)
        for name, dropped in league.dropped().items():
            print(f"note: league member {name} stays out of the league: dropped at iteration "
                  f"{dropped['iteration']} ({dropped['reason']})", file=sys.stderr, flush=True)
        self.evaluator = evaluator = PanelEvaluator(cfg)
        # Bots and externals meet the panel before Ray starts: one that fails there is dropped before it is seated.
        self.warn_dropped(league.fill_panels(lambda member: evaluator.panel(league.player(member, guard=True)),
                                             state.iteration), "against the panel")
        externals = seat_externals(cfg, league)  # every agent that will sit at a seat loads before Ray starts
        algo_config = build.build_algorithm_config(cfg, pool, training_matchmaker(cfg, league), externals)
        watchdog.start()  # Ray's agents would outlive a killed driver by minutes
        ray.init(address=cfg.resources.ray_address, logging_level="ERROR", include_dashboard=False,
                 configure_logging=True, log_to_driver=False)
        record_ray_session(run, ray._private.worker._global_node.get_session_dir_path())  # for stop_leftovers
        build.check_resources(cfg, ray.cluster_resources())  # a joined cluster too small is refused, not waited on
        self.algo = algo = algo_config.build_algo()
        if self.resumed is not None:
            restore(algo, run, self.resumed)
            resume_schedules(algo, state.env_steps)
        else:
            self.init = start_from_policy(algo, cfg, evaluator)
        # The league database is the truth about snapshots (it may be ahead of the checkpoint): load them all.
        for slot, member in league.slot_members().items():
            push_weights(algo, snapshot_id(slot), evaluator.weights_of(league.policy_folder(member)))
        self.exploiters = ExploiterTraining(cfg, run.path / SNAPSHOT_DIR, state)
        self.exploiters.keep_initial_weights(algo, evaluator)
        if self.resumed is None:
            self.exploiters.start(algo)
        self.start_upkeep()
        started = f"new run, main from {self.init}" if self.resumed is None and self.init else "new run"
        return (f"{'resumed from ' + self.resumed.name if self.resumed else started}; "
                f"learner on {'GPU' if build.gpus_per_learner(cfg) else 'CPU'}")

    def start_upkeep(self) -> None:
        """The jobs of steps 5 and 7 (module docstring): in the background, or on the training path."""
        self.background = self.cfg.upkeep.background
        self.league_jobs = BackgroundJob("the league's panel evaluation and rating round", self.league_job_done,
                                         on_failed=self.league_job_failed)
        self.checkpoints = BackgroundJob("the checkpoint", lambda label, path: None,
                                         on_failed=self.checkpoint_failed)
        self.worker = None
        self.outcomes: list[tuple[LeagueOutcome, FrozenWeights]] = []
        self.sent: FrozenWeights | None = None
        """The weights of the league job under way."""
        self.frozen: FrozenWeights | None = None
        if self.background and self.cfg.eval.every:
            self.worker = start_worker(self.cfg, self.league.store.path)  # it starts up while training does

    # 4. train
    def advance(self, state: RunState) -> None:
        steps_before, time_before = state.env_steps, time.perf_counter()
        self.result = self.algo.train()
        state.iteration = int(self.algo.iteration)
        state.env_steps = env_steps_of(self.result)
        self.steps_per_s = (state.env_steps - steps_before) / max(1e-9, time.perf_counter() - time_before)
        self.drop_failed(state)

    def drop_failed(self, state: RunState) -> None:
        """External members that raised at a training seat (`BatchedLudoEnvRunner.take_failures`) leave the
        league: one warning line each, the drop recorded in league.db, and every runner gets a matchmaker
        without them (their games in progress finish with a stand-in)."""
        if self.cfg.sampler.name != "batched":
            return  # externals sit at training seats only in the batched sampler
        reports = self.algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.take_failures() if isinstance(runner, BatchedLudoEnvRunner) else {},
            local_env_runner=True)
        failures = {name: reason for report in reports for name, reason in (report or {}).items()}
        active = {m.name for m in self.league.store.members(active_only=True, kinds=["external"])}
        dropped = []
        for name, reason in failures.items():
            if name in active:
                self.league.drop(name, reason, state.iteration)
                dropped.append(MemberFailed(name, reason))
        if dropped:
            self.warn_dropped(dropped, "at a training seat")
            install_matchmaker(self.algo, training_matchmaker(self.cfg, self.league))

    @staticmethod
    def warn_dropped(dropped: list[MemberFailed], where: str) -> None:
        for failed in dropped:
            print(f"warning: league member {failed.member} failed {where} and is dropped from the league "
                  f"(training goes on): {failed.reason}", file=sys.stderr, flush=True)

    # 5. evaluate: the panel, a league rating round, then snapshot and re-weigh the opponents
    def report(self, state: RunState) -> Report:
        cfg, algo, league = self.cfg, self.algo, self.league
        self.frozen = None
        taken: list[str] = []  # main's snapshots frozen now, from the weights a job of now plays
        self.league_jobs.collect()
        arrived = self.take_up(state, taken)
        snapshot_due = league.snapshot_due(state.iteration, state.last_snapshot)
        # A new snapshot is evaluated too (its panel is in the leaderboard) unless evaluation is off.
        job_due = bool(cfg.eval.every) and (snapshot_due or state.iteration % cfg.eval.every == 0)
        if job_due:
            self.league_jobs.wait()  # the job before first: the league's ratings lag by one round at most
            arrived += self.take_up(state, taken)
        if snapshot_due and state.last_snapshot != state.iteration:  # a round taken up may have frozen main now
            taken.append(self.freeze_main(state))
        if job_due:
            # The round's field is the league before this iteration's snapshots, which take main's rating after it.
            self.start_league_job(state, job_members(league, exclude=taken), tuple(taken))
        if self.budget_spent(state):  # the last iteration: its round is logged with it, before the last save
            self.league_jobs.wait()
        self.league_jobs.collect()  # a job that ran on the training path is done now
        arrived += self.take_up(state, [])
        self.exploiters.collect(algo)
        frozen = self.exploiters.freeze_due(algo, league, self.pool, state, self.evaluator)
        if arrived or taken or frozen:
            install_matchmaker(algo, training_matchmaker(cfg, league))

        # 6. log
        outcome = arrived[-1][0] if arrived else None
        row = progress_row(cfg, self.result, state, self.pool, outcome, self.steps_per_s)
        evaluated = [(done.evaluation, functools.partial(self.write_frozen, sent)) for done, sent in arrived]
        return Report(row, progress_line(row), self.result, ranking=outcome.ranking if outcome else None,
                      evaluated=evaluated)

    def write_frozen(self, weights: FrozenWeights, folder: Path) -> None:
        self.evaluator.write_weights(weights.weights, folder)

    def weights(self, state: RunState) -> FrozenWeights:
        """Main's weights at this iteration, copied off the learner once for everything that reads them."""
        if self.frozen is None or self.frozen.iteration != state.iteration:
            self.frozen = FrozenWeights.of(self.algo, state.iteration)
        return self.frozen

    def start_league_job(self, state: RunState, members: tuple[int, ...], adopt: tuple[str, ...]) -> None:
        """Main as it is now against the panel and in a rating round among `members`: beside training, or now."""
        job = LeagueJob(state.iteration, state.env_steps, members, adopt)
        weights = self.weights(state)
        if self.background:
            if self.worker is None:
                self.worker = start_worker(self.cfg, self.league.store.path)
            future = self.worker.play.remote(weights.ref, job).future()
        else:
            worker = LeagueWorker(self.cfg, self.league, self.evaluator)
            future = done_now(lambda: worker.play(weights.weights, job))
        self.sent = weights
        self.league_jobs.start(f"iteration {state.iteration}", future)

    def league_job_done(self, label: str, outcome: LeagueOutcome) -> None:
        self.outcomes.append((outcome, self.sent))
        self.sent = None

    def league_job_failed(self) -> str:
        """A failed job's worker may be broken or gone: the next job starts a new one."""
        self.sent = None
        if self.worker is not None:
            ray.kill(self.worker)
            self.worker = None
        return ""

    def take_up(self, state: RunState, taken: list[str]) -> list[tuple[LeagueOutcome, FrozenWeights]]:
        """League jobs finished since the last call, on the training path: their evaluations join the run state,
        members dropped in their rounds are named, and a round good enough for the win-rate rule freezes main
        (once; the snapshot's name joins `taken`). Returns them, oldest first, with the weights each played."""
        arrived, self.outcomes = self.outcomes, []
        for outcome, _ in arrived:
            state.evaluations.append(outcome.evaluation)
            self.warn_dropped(outcome.round.dropped, "in a rating round")
            if self.league.snapshot_due(state.iteration, state.last_snapshot, outcome.round):
                # the round rated these very weights when it is of this iteration (a job on the training path)
                taken.append(self.freeze_main(state, outcome.evaluation))
        return arrived

    def freeze_main(self, state: RunState, evaluation: dict[str, Any] | None = None) -> str:
        """Main's weights of now into the league as a snapshot (`take_snapshot`); returns the member's name."""
        module_id = take_snapshot(self.algo, self.league, self.pool, state, self.evaluator, evaluation,
                                  self.weights(state))
        return self.league.slot_members()[int(module_id.removeprefix(SNAPSHOT_PREFIX))].name

    # 7. checkpoint
    def checkpoint(self, state: RunState) -> Path:
        """A consistent copy of the run now; written and signed in a thread while training goes on."""
        self.checkpoints.wait()  # one write at a time
        copy = self.capture(state)
        run = functools.partial(write_checkpoint, self.algo, self.run, self.evaluator, self.cfg, *copy)
        self.checkpoints.start(f"iteration {state.iteration}",
                               self.checkpoints.in_thread(run) if self.background else done_now(run))
        self.checkpoints.collect()
        return self.run.checkpoint_folder(state.iteration)

    def capture(self, state: RunState) -> tuple[RunState, dict[str, Any]]:
        """The run state and RLlib's state as they are between two iterations, copied: what a checkpoint holds."""
        return RunState.from_dict(frozen_copy(state.to_dict())), frozen_copy(self.algo.get_state())

    def checkpoint_failed(self) -> str:
        newest = self.run.checkpoint_dirs()
        return f"{newest[-1].name} stays the newest complete checkpoint" if newest else ""

    def save(self, state: RunState) -> Path:
        """A checkpoint complete when this returns: the jobs under way first (a league job's evaluation joins
        the run state it holds)."""
        self.league_jobs.wait(stopping=True)
        if self.take_up(state, []):
            install_matchmaker(self.algo, training_matchmaker(self.cfg, self.league))
        self.checkpoints.wait(stopping=True)
        return write_checkpoint(self.algo, self.run, self.evaluator, self.cfg, *self.capture(state))

    def final_evaluation(self, state: RunState, policy: Path) -> dict[str, Any]:
        """Greedy main against the panel; main as trained joins the league for good, and a last round rates it."""
        cfg, algo, league, evaluator = self.cfg, self.algo, self.league, self.evaluator
        final = evaluator.run(algo, cfg.eval.final_games, state.iteration, final=True)
        if state.last_snapshot != state.iteration and cfg.league.max_snapshots:
            take_snapshot(algo, league, self.pool, state, evaluator, final)
        league.set_main_panel(panel_of(final), state.iteration, state.env_steps)
        self.rating_round(state, label="final")
        return final

    def rating_round(self, state: RunState, label: str = "training"):
        """A league rating round with main as the evaluator last loaded it, on the training path; an external
        member that fails in it is dropped (one warning line) and the round replayed without it. A league too
        small without it stops the run (after a save)."""
        evaluator = self.evaluator
        try:
            result = self.league.rating_round(
                evaluator.rules, self.cfg.eval.seed + state.iteration, main_player=evaluator.main_player(),
                iteration=state.iteration, env_steps=state.env_steps, label=label, drop_failing=True)
        except MemberFailed as failed:
            raise UserError(str(failed)) from None
        self.warn_dropped(result.dropped, "in a rating round")
        return result

    def policy_writer(self):
        return lambda folder: self.evaluator.write_policy(self.algo, folder)

    def summary(self, state: RunState, saved: Path | None, policy: Path | None) -> tuple[list[str], dict[str, Any]]:
        return write_summary(self.cfg, self.run, state, saved, self.league)

    def close(self) -> None:
        self.checkpoints.close()  # a write under way finishes (its folder is complete or removed)
        ray.shutdown()


# ---------------------------------------------------------------- 1. resume
def find_resume_point(cfg: TrainConfig, run: RunDir) -> tuple[RunState, Path | None]:
    """The run state to start from: fresh, or the newest checkpoint that loads.

    The run folder is the one `cfg.resume` names, never another (a copied run folder's saved ``run_dir=``);
    a checkpoint's pickles are read only once its signature says this user's runs wrote it
    (`launch.training.runs.verify_checkpoint`; ``resume_trust_unsigned=true`` vouches for an unsigned one and signs it).
    """
    if not cfg.resume:
        checkpoint_key()  # the key that signs this run's checkpoints (made on first use): a problem stops it now
        return RunState(), None
    # a resume makes no key: without one, its checkpoints cannot be checked, and the refusal says so
    checkpoint_key(create=cfg.resume_trust_unsigned)
    if Path(cfg.resume).resolve() != run.path.resolve():
        raise UserError(f"resume={cfg.resume}: a resume writes into the run it resumes, and this command would write "
                        f"into {run.path}: drop run_dir= and hydra.run.dir=")
    typed = typed_today(cfg.resume, loop.task_overrides())

    def check(checkpoint: Path, state: RunState) -> None:
        # before Ray starts: a checkpoint from elsewhere is refused, a damaged one falls back to the one before
        run.check_algorithm_state(checkpoint, cfg.resume_trust_unsigned)
        check_same_network(cfg, run.policy_of(checkpoint), typed)
        if state.snapshot_slots is not None and state.snapshot_slots != cfg.league.max_snapshots:
            raise UserError(f"resume: the run has {state.snapshot_slots} snapshot slots, "
                            f"league.max_snapshots={cfg.league.max_snapshots}: keep the run's value")
        exploiters = build.make_pool(cfg).exploiters
        if set(state.exploiters) != set(exploiters):
            counts = " and ".join(f"league.{role.count.key}" for role in roles.learner_roles())
            raise UserError(f"resume: the run trains the exploiters {', '.join(sorted(state.exploiters)) or 'none'} "
                            f"and this config gives {', '.join(exploiters) or 'none'}: keep the run's {counts}")

    return run.resume_point(cfg.resume, check)


NETWORK_SHAPING = ("obs", "network", "variant")  # what main's module and its rules are built from


def check_same_network(cfg: TrainConfig, policy: Path, typed: list[str] | tuple[str, ...] = ()) -> None:
    """A resume rebuilds main as the run built it: the checkpoint's algorithm, encoder, network and rules (its
    policy.json) must be this config's. Otherwise one line naming the overrides that give the run's back (a run
    from before config.yaml, whose defaults have moved, or an override that changes the network); when an
    override `typed` on today's command line (``network=token_set``) made the difference, it names that one."""
    meta = read_meta(policy)
    if meta.get("kind") in rllib_names() and meta["kind"] != cfg.algo.name:
        raise UserError(f"resume: the run trains {meta['kind']} and this config gives algo={cfg.algo.name}: "
                        f"a resumed run keeps its algorithm; drop the algo override or start a new run")
    before, now, differ = model_differences(cfg, meta, NETWORK_SHAPING)
    if differ:
        run_has = [f"{key}={override_value(before[key])}" for key in differ]
        config_gives = [f"{key}={override_value(now[key])}" for key in differ]
        changed_by = [o for o in typed if any(key == o.partition("=")[0].lstrip("+~") or key.startswith(
            o.partition("=")[0].lstrip("+~") + ".") for key in differ)]
        if changed_by:
            typed_here = " ".join(changed_by)
            raise UserError(f"resume: {typed_here} changes the run's main (built with {', '.join(run_has)}): a "
                            f"resumed run keeps its encoder, network and rules; drop {typed_here}, or start a new run")
        raise UserError(f"resume: the run's main was built with {', '.join(run_has)} and this config gives "
                        f"{', '.join(config_gives)}: add {' '.join(run_has)} to resume it")


def model_differences(cfg: TrainConfig, meta: dict[str, Any], keys) -> tuple[dict, dict, list[str]]:
    """Main's model_config as a saved policy recorded it (``meta``, its policy.json) and as `cfg` builds it, as
    leaves (``network.hidden``) of the top-level `keys`, and the leaves both have that differ."""
    built = meta.get("model_config") or {}
    before = leaves({key: built[key] for key in keys if key in built})
    # through JSON, as policy.json was written: tuples become lists
    now = leaves(json.loads(json.dumps({key: value for key, value in build.main_model_config(cfg).items()
                                        if key in keys})))
    return before, now, [key for key, value in before.items() if key in now and now[key] != value]


def resume_schedules(algo, env_steps: int) -> None:
    """Every learner's entropy schedules moved to `env_steps`, where the resumed run is. RLlib rebuilds them at
    their first value and moves them only after an update, so the first update of a resumed run would otherwise
    use the entropy coefficient of step 0 (the learning rate needs nothing: its optimizer's state, restored from
    the checkpoint, holds the rate in force)."""

    def move(learner, _steps=env_steps):
        schedules = getattr(learner, "entropy_coeff_schedulers_per_module", None)  # PPO's learners have them
        if schedules is not None:
            for module_id in learner.module.keys():
                if learner.should_module_be_updated(module_id):
                    schedules[module_id].update(timestep=_steps)

    for call in algo.learner_group.foreach_learner(move):
        if not call.ok:  # a remote learner's error comes back as a value
            raise call.get()


# ---------------------------------------------------------------- 1. init: main starts from a saved policy
INIT_FREE = ("reward", "epsilon", "double_q")
"""model_config keys main's weights do not depend on (what its value head learned to predict, how it explores,
how its targets are formed): an ``init=`` policy may differ in these, and in nothing else."""


def check(cfg: TrainConfig) -> None:
    """The trainer's own inputs, before a run folder exists and before Ray starts (`launch/train.py` calls it):
    ``init=``, and the key that signs the run's checkpoints, when there is one (an empty or damaged key file, or
    one others may read, is refused before Hydra makes the run folder)."""
    checkpoint_key(create=False)
    if not cfg.resume:  # a resume's checkpoint wins over init
        init_policy(cfg)


def restore(algo, run: RunDir, checkpoint: Path) -> None:
    """RLlib's state of `checkpoint`, read from the private copy that was verified before Ray started
    (`launch.training.runs.RunDir.check_algorithm_state`), never from the run folder again. State RLlib cannot
    restore (a checkpoint vouched for with ``resume_trust_unsigned=true`` that is not RLlib's) is one line."""
    copy = run.verified.get(checkpoint)
    if copy is None:
        copy = run.check_algorithm_state(checkpoint)
    try:
        algo.restore_from_path(str(copy))
    except Exception as err:  # noqa: BLE001 - RLlib's own errors, for state that is not what it wrote
        raise UserError(f"resume: {checkpoint} could not be restored ({one_line(err)[:200]}): resume from "
                        "another checkpoint of the run, or start a new run") from None
    finally:
        run.forget_verified()


def init_policy(cfg: TrainConfig) -> Path | None:
    """The policy folder ``init=`` names, once it is known to fit this run's main; None without init. A policy
    that does not load or does not fit is one line."""
    if cfg.init is None:
        return None
    try:
        folder = find_policy(cfg.init)
        meta = read_meta(folder)
        load_module(folder)  # damaged weights are refused now, not after Ray has started
    except PolicyFileError as err:
        raise UserError(f"init={cfg.init}: {one_line(err)}") from None
    if meta.get("kind") != cfg.algo.name:
        raise UserError(f"init={cfg.init}: a {meta.get('kind')} policy cannot start main of a {cfg.algo.name} run: "
                        f"give a {cfg.algo.name} policy, or train with algo={meta.get('kind')}")
    shaping = [key for key in build.main_model_config(cfg) if key not in INIT_FREE]
    before, now, differ = model_differences(cfg, meta, shaping)
    if differ:
        raise UserError(f"init={cfg.init}: the policy was built with "
                        f"{', '.join(f'{key}={override_value(before[key])}' for key in differ)} and this run gives "
                        f"{', '.join(f'{key}={override_value(now[key])}' for key in differ)}: add "
                        f"{' '.join(f'{key}={override_value(before[key])}' for key in differ)}, or give a policy "
                        "of this run's encoder, network and rules")
    return folder


def start_from_policy(algo, cfg: TrainConfig, evaluator: PanelEvaluator) -> Path | None:
    """Main's weights from ``init=`` on the learner and on every EnvRunner, before the first iteration."""
    folder = init_policy(cfg)
    if folder is not None:
        push_weights(algo, MAIN, evaluator.weights_of(folder))
        # A saved policy has no target networks (DQN's): copied from the new weights, not left at the fresh ones
        # that the first update would bootstrap from.
        for synced in algo.learner_group.foreach_learner(sync_target_networks):
            synced.get()  # a remote learner's failure raises here
    return folder


def sync_target_networks(learner) -> None:
    """Main's target networks on `learner`, if its module has any, set equal to the networks they follow."""
    module = learner.module[MAIN].unwrapped()
    for network, target in getattr(module, "get_target_network_pairs", lambda: [])():
        target.load_state_dict(network.state_dict())


# ---------------------------------------------------------------- 2. seed
def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


# ---------------------------------------------------------------- 4. train: budget, snapshots
def env_steps_of(result: dict) -> int:
    steps = result.get(NUM_ENV_STEPS_SAMPLED_LIFETIME)
    if steps is None:
        steps = result.get(ENV_RUNNER_RESULTS, {}).get(NUM_ENV_STEPS_SAMPLED_LIFETIME, 0)
    return int(steps)


def take_snapshot(algo, league, pool, state: RunState, evaluator: PanelEvaluator, evaluation,
                  weights: FrozenWeights | None = None) -> str:
    """Freeze main's current weights into the league: a policy file, a member, a slot on every EnvRunner, all
    from one export of them (`weights`, when the caller has it already)."""
    weights = weights or FrozenWeights.of(algo, state.iteration)
    panel = panel_of(evaluation) if evaluation and evaluation["iteration"] == state.iteration else None
    member, evicted = league.add_snapshot(state.iteration, state.env_steps,
                                          lambda folder: evaluator.write_weights(weights.weights, folder), panel)
    module_id = snapshot_id(member.slot)
    push_weights(algo, module_id, weights)
    pool.fill(member.slot, state.iteration)
    state.last_snapshot = state.iteration
    if evicted is not None:
        print(f"league: {member.name} takes {module_id}, evicting {evicted.name} "
              f"(lowest mu, {evicted.mu:.1f})", flush=True)
    return module_id


class ExploiterTraining:
    """The driver's side of the exploiters (module docstring): their progress (in the run state, so a resume goes
    on counting), their initial weights, and freezing and resetting them by their roles' rules
    (`policies.league.roles.ExploiterRules`)."""

    INITIAL_DIR = "initial"

    def __init__(self, cfg: TrainConfig, league_folder: Path, state: RunState):
        self.cfg = cfg
        self.rules = roles.ExploiterRules.of(build.league_settings(cfg))
        self.modules = build.make_pool(cfg).exploiters
        self.folder = league_folder / self.INITIAL_DIR
        self.state = state
        for module_id in self.modules:
            state.exploiters.setdefault(module_id, dataclasses.asdict(ExploiterProgress()))

    def progress(self, module_id: str) -> ExploiterProgress:
        return ExploiterProgress(**self.state.exploiters[module_id])

    def _store(self, module_id: str, progress: ExploiterProgress) -> None:
        self.state.exploiters[module_id] = dataclasses.asdict(progress)

    def keep_initial_weights(self, algo, evaluator: PanelEvaluator) -> None:
        """Each exploiter's weights as built, kept as a policy folder once per run: what a reset goes back to."""
        if not self.modules:
            return
        weights = algo.learner_group.get_weights(list(self.modules))
        for module_id in self.modules:
            if not (self.folder / module_id / "weights.pt").is_file():
                evaluator.write_weights(weights[module_id], self.folder / module_id)

    def start(self, algo) -> None:
        """A new run's exploiters as their roles say they start: as built, or as copies of main."""
        to_copy = [module_id for module_id in self.modules if self.start_of(module_id) == "main"]
        if to_copy:
            main_weights = algo.learner_group.get_weights([MAIN])[MAIN]
            for module_id in to_copy:
                push_weights(algo, module_id, main_weights)

    def start_of(self, module_id: str) -> str:
        """What exploiter `module_id` starts and restarts from (`policies.league.roles.STARTS`)."""
        start = self.rules.start(module_id)
        if start not in roles.STARTS:
            raise ValueError(f"{module_id} would start from {start!r}: training starts an exploiter from "
                             f"{' or '.join(roles.STARTS)}")
        return start

    def restart(self, algo, evaluator: PanelEvaluator, module_id: str) -> None:
        """Exploiter `module_id` back to where its role starts it, with its optimizer state emptied."""
        if self.start_of(module_id) == "main":
            weights = algo.learner_group.get_weights([MAIN])[MAIN]
        else:
            weights = evaluator.weights_of(self.folder / module_id)
        push_weights(algo, module_id, weights)
        clear_optimizer_state(algo, module_id)

    def collect(self, algo) -> None:
        """Every runner's exploiter results since the last call, added to each exploiter's progress."""
        if not self.modules:
            return
        reports = algo.env_runner_group.foreach_env_runner(
            lambda runner: runner.take_exploiter_results() if isinstance(runner, BatchedLudoEnvRunner) else {},
            local_env_runner=True)
        for report in reports:
            for module_id, results in (report or {}).items():
                progress = self.progress(module_id)
                progress.add(results.decisions, results.games, results.ahead, results.met)
                self._store(module_id, progress)

    def freeze_due(self, algo, league, pool, state: RunState, evaluator: PanelEvaluator) -> list[str]:
        """Freeze each exploiter whose role's freeze rule fires into the league (and reset it when its role's reset
        rule says so); returns the exploiters frozen."""
        frozen = []
        for module_id in self.modules:
            progress = self.progress(module_id)
            reason = self.rules.freeze_reason(module_id, progress)
            if reason is None:
                continue
            weights = algo.learner_group.get_weights([module_id])[module_id]
            member, evicted = league.add_snapshot(
                state.iteration, state.env_steps,
                lambda folder, weights=weights: evaluator.write_weights(weights, folder), learner=module_id)
            push_weights(algo, snapshot_id(member.slot), weights)
            pool.fill(member.slot, state.iteration)
            # The draw depends only on the run's seed, the exploiter and the iteration: a resume redraws the same.
            draw = random.Random(zlib.crc32(f"{self.cfg.seed}:{module_id}:{state.iteration}".encode())).random()
            reset = self.rules.resets(module_id, draw)
            if reset:
                self.restart(algo, evaluator, module_id)
            progress.restart(reset)
            self._store(module_id, progress)
            frozen.append(module_id)
            print(f"league: {module_id} frozen as {member.name} in {snapshot_id(member.slot)} ({reason})"
                  + (f", evicting {evicted.name}" if evicted is not None else "")
                  + (f"; restarted from {roles.STARTS[self.start_of(module_id)]}" if reset else ""), flush=True)
        return frozen


def clear_optimizer_state(algo, module_id: str) -> None:
    """Module `module_id`'s optimizer state (Adam's moments and step count) emptied on every learner: a reset
    exploiter starts as it was built, not with the momentum of the weights it left."""

    def clear(learner, _id=module_id):
        for _, optimizer in learner.get_optimizers_for_module(_id):
            optimizer.state.clear()

    for call in algo.learner_group.foreach_learner(clear):
        if not call.ok:  # a remote learner's error comes back as a value
            raise call.get()


def push_weights(algo, module_id: str, weights) -> None:
    """`weights` (a state dict, or `FrozenWeights`: the remote EnvRunners read its one object in Ray's store)
    into module `module_id` on the learners and on every EnvRunner, now."""
    frozen = weights if isinstance(weights, FrozenWeights) else None
    weights = frozen.weights if frozen else weights
    algo.learner_group.set_weights({module_id: weights})
    shared = frozen.ref if frozen and algo.env_runner_group.num_remote_env_runners() else None

    def load(runner, _weights=None if shared else weights, _shared=shared, _id=module_id):
        state = _weights if _shared is None else ray.get(_shared)
        if isinstance(runner, BatchedLudoEnvRunner):
            runner.set_module_state(_id, state)  # between two steps of a sample playing in the background
        else:
            runner.module[_id].set_state(state)

    # EnvRunners skip weights whose sequence number is not new, so the push is explicit.
    algo.env_runner_group.foreach_env_runner(load, local_env_runner=True)


def seat_externals(cfg: TrainConfig, league) -> dict[str, str]:
    """The league's external members as seat players (member name -> spec), each loaded once here so that one
    that cannot play (a missing file, another variant or player count) stops the run now, in one line."""
    if cfg.sampler.name != "batched":
        return {}
    rules = Rules.load(build.rules_mapping(cfg))
    externals = {}
    for member in league.store.members(active_only=True, kinds=["external"]):
        try:
            spec = league.spec_of(member)  # a py: one only as this run's command line gives it
            make_player(spec, cfg.seed, rules)  # a learned one must have been trained for this run's rules
        except PlayerSpecError as err:
            raise UserError(f"league member {member.name} cannot sit at a training seat: {one_line(err)}") from None
        externals[member.name] = spec
    return externals


def training_matchmaker(cfg: TrainConfig, league):
    """Seats of training games: PFSP over snapshots, bots and, with the batched sampler, external members."""
    return league.matchmaker(cfg.seed, with_externals=cfg.sampler.name == "batched")


def install_matchmaker(algo, matchmaker) -> None:
    """Episodes that start from now on draw their seats from `matchmaker` (ongoing ones keep theirs)."""
    algo.config._is_frozen = False  # RLlib's own add_module edits the frozen config the same way
    algo.config.multi_agent(policy_mapping_fn=matchmaker)
    algo.config.freeze()

    def install(runner, _matchmaker=matchmaker):
        runner.config.multi_agent(policy_mapping_fn=_matchmaker)

    algo.env_runner_group.foreach_env_runner(install, local_env_runner=True)


# ---------------------------------------------------------------- 6. log
def progress_row(cfg: TrainConfig, result: dict, state: RunState, pool, outcome: LeagueOutcome | None,
                 steps_per_s: float) -> dict[str, Any]:
    """The iteration's row; with the `outcome` of a league job taken up now, its evaluation and main's standing
    after its round, and the iteration and env steps they are of (``eval/iteration``, ``eval/env_steps``: earlier
    ones when the job ran beside training)."""
    learner = result.get("learners", {}).get(MAIN, {})
    runners = result.get("env_runners", {})
    row: dict[str, Any] = {
        **step_columns(state, steps_per_s),
        "loss": _number(learner.get("total_loss")),
        "lr": _number(learner.get("default_optimizer_learning_rate")),  # RLlib's key for main's one optimizer
        "pool": len(pool),
        "main_return": _number(runners.get("module_episode_returns_mean", {}).get(MAIN)),
        "episode_len": _number(runners.get("episode_len_mean")),
        # main's own decisions so far: env_steps counts every seat's (benchmarks/exploitability.py budgets by these)
        "main_decisions": _number(runners.get(NUM_MODULE_STEPS_SAMPLED_LIFETIME, {}).get(MAIN)),
    }
    algorithm_columns = rllib_training(cfg.algo.name).progress(cfg, state.env_steps, learner)
    row.update({key: _number(value) for key, value in algorithm_columns.items()})
    if outcome is not None:
        row.update(eval_columns(outcome.evaluation))
        row["eval/iteration"], row["eval/env_steps"] = outcome.iteration, outcome.env_steps
    for module_id, progress in state.exploiters.items():
        progress = ExploiterProgress(**progress)
        row[f"roles/{module_id}/loss"] = _number(result.get("learners", {}).get(module_id, {}).get("total_loss"))
        row[f"roles/{module_id}/return"] = _number(runners.get("module_episode_returns_mean", {}).get(module_id))
        row[f"roles/{module_id}/ahead"] = progress.ahead_rate
        row[f"roles/{module_id}/games"] = progress.games
        row[f"roles/{module_id}/decisions"] = progress.decisions
        row[f"roles/{module_id}/frozen"] = progress.frozen
    if outcome is not None:
        row["league/main_rank"], row["league/members"], row["league/main_mu"], row["league/main_sigma"] = \
            outcome.standing
        if outcome.round.main_vs_league is not None:
            row["league/main_ahead"] = outcome.round.main_vs_league
    return row


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def progress_line(row: dict[str, Any]) -> str:
    def fmt(value, spec):
        return "-" if value is None else format(value, spec)

    explore = (f"eps {fmt(row['epsilon'], '.3f')}" if "epsilon" in row
               else f"entropy {fmt(row.get('entropy'), '.3f')}")
    line = (f"it {row['iteration']:4d} | steps {row['env_steps']:>10,} | {fmt(row['env_steps_per_s'], ',.0f')} "
            f"steps/s | {row['minutes']:6.1f} min | loss {fmt(row['loss'], '.4f')} | {explore} | "
            f"pool {row['pool']}")
    if "league/main_rank" in row:
        line += f" | league {row['league/main_rank']}/{row['league/members']}"
    return line


# ---------------------------------------------------------------- 7. checkpoint, summary
def write_checkpoint(algo, run: RunDir, evaluator: PanelEvaluator, cfg: TrainConfig, state: RunState,
                     algo_state: dict[str, Any]) -> Path:
    """A checkpoint from a copy taken between two iterations (`LeagueSelfPlay.capture`): RLlib's files of
    `algo_state`, main's policy from its weights in it, the run `state`; a thread may write it while training
    goes on, since nothing here reads the live learner's weights."""
    main = algo_state[COMPONENT_LEARNER_GROUP][COMPONENT_LEARNER][COMPONENT_RL_MODULE][MAIN]

    def write_parts(folder: Path) -> None:
        algo.save_to_path(str(run.algorithm_of(folder)), state=algo_state)
        evaluator.write_weights(main, run.policy_of(folder))

    return run.save_checkpoint(state.iteration, state, write_parts, cfg.checkpoint.keep)


def save_checkpoint(algo, run: RunDir, state: RunState, evaluator: PanelEvaluator, cfg: TrainConfig) -> Path:
    """A checkpoint of the run as it is now, written before this returns."""
    return write_checkpoint(algo, run, evaluator, cfg, RunState.from_dict(frozen_copy(state.to_dict())),
                            frozen_copy(algo.get_state()))


def write_summary(cfg: TrainConfig, run: RunDir, state: RunState, checkpoint: Path,
                  league) -> tuple[list[str], dict[str, Any]]:
    lines, fields = checkpoint_summary(cfg, run, state, checkpoint, f"play it as ckpt:{run.policy_of(checkpoint)}")
    lines.append(f"league:     {league.store.path}   (python launch/leaderboard.py league={run.path})")
    budget = cfg.budget
    if budget.env_steps and state.env_steps < budget.env_steps and budget.minutes and \
            state.elapsed_s >= budget.minutes * 60:
        lines.append(f"note:       the {budget.minutes:g}-minute cap stopped the run at {state.env_steps:,} of "
                     f"budget.env_steps={budget.env_steps:,}: a busy machine; its numbers are not a full run's "
                     f"(continue with resume={run.path} budget.minutes=<more>)")
    lines.append(standing_line(league, run.path))
    return lines, fields


def standing_line(league, run_path: Path) -> str:
    """The summary's line on main's place in the league, with the command that shows the whole league."""
    show = f"python launch/league.py show league={run_path}"
    rank, members, main = league.main_standing()
    if rank is None:  # no rating round has seated it: a league without rounds (a best response's externals alone)
        return f"main has played no rated game in the league ({show})"
    # Near-equals share a rank: name them, or a user reads the order among them as real.
    rivals = [m.name for m in league.within_noise(main)]
    more = f" and {len(rivals) - 4} more" if len(rivals) > 4 else ""
    tied = f"; within noise of it: {', '.join(rivals[:4])}{more}" if rivals else ""
    return f"main is {rank} of {members} in the league (mu {main.mu:.1f} ± {1.96 * main.sigma:.1f}{tied}; {show})"
