"""The league's upkeep beside RLlib training: panel evaluations and rating rounds of frozen copies of main.

`launch.training.trainers.rllib` asks for a `LeagueJob` whenever main is to be evaluated against the panel
and rated in the league (every ``eval.every`` iterations and at each snapshot). A `LeagueWorker` plays it from
the weights main had then, a copy exported once (`FrozenWeights`): greedy main against ``eval.panel``
(`PanelEvaluator`), then a league rating round (`policies.league.league.League.rating_round`) among the
members that were active when the job was asked for. It records the round, main's panel and the panel and
rating of a snapshot frozen from the same weights in one transaction of the league database, so a round is
recorded whole or not at all, and returns a `LeagueOutcome`: the evaluation, the round, main's standing and
the league's ranking for the log, all read off the training path.

With ``upkeep.background=true`` (the default) the worker is a Ray actor (`start_worker`) on the driver's node,
where the run folder is, and at Ray's worker niceness, the EnvRunners' own: it takes the CPU the learner
leaves, as they do. Its results are taken up iterations later; the matchmaker then uses the new ratings. With
``upkeep.background=false`` the same worker runs in the driver and the job is waited for, as before.
"""
from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from launch.cli import one_line
from launch.training import build
from launch.training.schema import TrainConfig
from launch.training.upkeep import Stop, frozen_copy
from ludo_env.core import ACTION_SPACE, observation_space
from ludo_env.rules import Rules
from policies.checkpoints import write_policy
from policies.league.evaluation import evaluate_panel, learned_player, panel_record
from policies.league.league import MAIN_MEMBER, League, MemberFailed, RoundResult
from policies.league.pool import MAIN
from policies.league.store import LeagueStore
from policies.modules import module_spec
from policies.players import PlayerError
from policies.saved import load_module


class PanelEvaluator:
    """Greedy main against the panel, on a CPU copy of main loaded with the learner's weights or a frozen copy
    of them."""

    def __init__(self, cfg: TrainConfig):
        self.cfg = cfg
        self.kind = cfg.algo.name
        self.model_config = build.main_model_config(cfg)
        self.rules = Rules.load(build.rules_mapping(cfg))
        self.module = module_spec(self.kind, observation_space(cfg.obs.name), ACTION_SPACE,
                                  self.model_config).build()

    def load(self, weights) -> None:
        """Main's weights (`RLModule.get_state`'s form) into the copy the evaluations and rounds play."""
        self.module.set_state(weights)
        self.module.eval()

    def load_main(self, algo) -> None:
        self.load(algo.learner_group.get_weights([MAIN])[MAIN])

    def run(self, algo, games: int, iteration: int, final: bool = False) -> dict[str, Any]:
        self.load_main(algo)
        return self.evaluate(games, iteration, final)

    def evaluate(self, games: int, iteration: int, final: bool = False) -> dict[str, Any]:
        """The copy as last loaded against the panel, as a run's evaluation record."""
        start = time.perf_counter()
        player = learned_player(self.module, f"main@{iteration}")
        results = self.against_panel(player, games)
        return {"iteration": iteration, "final": final, "seconds": round(time.perf_counter() - start, 2),
                "results": [r.to_dict() for r in results]}

    def main_player(self):
        """Greedy main as last loaded, under the league's name for it."""
        return learned_player(self.module, MAIN_MEMBER)

    def panel(self, player) -> dict[str, Any]:
        """Any player against the panel, as a league member's panel record."""
        return panel_record(self.against_panel(player, self.cfg.eval.games))

    def against_panel(self, player, games: int):
        from launch.cli import UserError

        try:
            return evaluate_panel(player, self.cfg.eval.panel, self.rules, games, self.cfg.eval.seed,
                                  self.cfg.eval.threads)
        except PlayerError as err:  # a panel bot of the user's (py:) that raises: one line (the loop saves first)
            raise UserError(f"eval.panel: {one_line(err)}") from None

    def weights_of(self, policy_folder: Path):
        """A saved policy's weights in the form `RLModule.set_state` takes."""
        return load_module(policy_folder).get_state()

    def write_policy(self, algo, dest: Path) -> None:
        self.write_weights(algo.learner_group.get_weights([MAIN])[MAIN], dest)

    def write_weights(self, weights, dest: Path) -> None:
        """A learner's weights (main's or an exploiter's: main's spec) as a policy folder. `RLModule.get_state`
        is its ``state_dict`` as numpy arrays, so they are written as they are, through no module: a
        checkpoint's thread writes its copy while the driver writes another."""
        write_policy(dest, self.kind, self.model_config,
                     {key: torch.from_numpy(np.array(value)) for key, value in weights.items()})


def panel_of(evaluation: dict) -> dict[str, Any]:
    return panel_record(evaluation["results"])


class FrozenWeights:
    """A learner module's weights at one iteration, exported once: copied off the learner (`frozen_copy`) and,
    when something in another process reads them (the EnvRunners' snapshot slot, the league's worker), put
    into Ray's object store once, where all of them read the same object."""

    def __init__(self, weights, iteration: int):
        self.weights = weights
        self.iteration = iteration
        self._ref = None

    @classmethod
    def of(cls, algo, iteration: int, module_id: str = MAIN) -> FrozenWeights:
        return cls(frozen_copy(algo.learner_group.get_weights([module_id])[module_id]), iteration)

    @property
    def ref(self):
        if self._ref is None:
            import ray

            self._ref = ray.put(self.weights)
        return self._ref


@dataclass(frozen=True)
class LeagueJob:
    """What a `LeagueWorker` plays: main as it was at `iteration` against the panel and in a rating round."""

    iteration: int
    env_steps: int
    members: tuple[int, ...]
    """The active members (ids) when the job was asked for: the round's field (a snapshot frozen since is not in
    it, as it was not when rounds ran before the snapshot)."""
    adopt: tuple[str, ...] = ()
    """Snapshots frozen from these same weights: they take main's panel, and main's rating after the round."""
    label: str = "training"


@dataclass
class LeagueOutcome:
    """A played `LeagueJob`: the evaluation record, the round, and what the log shows of the league after it."""

    iteration: int
    env_steps: int
    evaluation: dict[str, Any]
    round: RoundResult
    standing: tuple[int, int, float, float]
    """Main's shared rank, the members ranked, main's mu and sigma (`League.main_standing`)."""
    ranking: list[dict[str, Any]] = field(default_factory=list)
    """The league's ranking rows (`policies.league.leaderboard.ranking`), for wandb."""


class LeagueWorker:
    """Plays `LeagueJob`s (module docstring): in a Ray actor of its own (`start_worker`), or in the driver on the
    driver's league and evaluator."""

    def __init__(self, cfg: TrainConfig, league: League | Path, evaluator: PanelEvaluator | None = None):
        """`league`: the driver's own, or the path of its database (a worker of its own opens it)."""
        self.cfg = cfg
        self.evaluator = evaluator or PanelEvaluator(cfg)
        self.league = league if isinstance(league, League) else \
            League(LeagueStore.open(league, create=False), build.league_settings(cfg), cfg.variant.name)
        self.log_ranking = cfg.wandb.mode != "disabled"

    def play(self, weights, job: LeagueJob) -> LeagueOutcome | Stop:
        """The job's evaluation, then its round, recorded together; a `Stop` for what another try would repeat."""
        from launch.cli import UserError

        self.evaluator.load(weights)
        try:
            evaluation = self.evaluate(job)
            result = self.rating_round(job, evaluation)
        except UserError as err:  # a panel bot of the user's that raises
            return Stop(str(err))
        except MemberFailed as failed:  # the league too small without a member that failed
            return Stop(str(failed))
        evaluation["env_steps"] = job.env_steps
        standing, ranking = standings(self.league, self.log_ranking)
        return LeagueOutcome(job.iteration, job.env_steps, evaluation, result, standing, ranking)

    def evaluate(self, job: LeagueJob) -> dict[str, Any]:
        return self.evaluator.evaluate(self.cfg.eval.games, job.iteration)

    def rating_round(self, job: LeagueJob, evaluation: dict[str, Any]) -> RoundResult:
        store = self.league.store
        panel = panel_of(evaluation)

        def record(ratings: dict[int, tuple[float, float]]) -> None:
            main = store.member(MAIN_MEMBER)
            store.update_member(main.id, panel=panel, iteration=job.iteration, env_steps=job.env_steps)
            mu, sigma = ratings.get(main.id, (main.mu, main.sigma))
            for name in job.adopt:  # a snapshot of main is main at that moment: rated as main is after the round
                snapshot = store.member(name)
                if snapshot is not None:
                    store.update_member(snapshot.id, panel=panel, mu=mu, sigma=sigma)

        return self.league.rating_round(
            self.evaluator.rules, self.cfg.eval.seed + job.iteration, main_player=self.evaluator.main_player(),
            iteration=job.iteration, env_steps=job.env_steps, label=job.label, drop_failing=True,
            members=job.members, record_with=record)


def standings(league: League, with_ranking: bool) -> tuple[tuple[int, int, float, float], list[dict[str, Any]]]:
    """Main's standing and (`with_ranking`) the ranking rows, read from the league database."""
    from policies.league.leaderboard import ranking

    rank, members, main = league.main_standing()
    return (rank, members, main.mu, main.sigma), (ranking(league.store) if with_ranking else [])


def start_worker(cfg: TrainConfig, db: Path):
    """A `LeagueWorker` as a Ray actor on this (the driver's) node: it opens the run's league database `db`, which
    is on this machine's disk. It asks for no CPU, so it never keeps an EnvRunner from starting, and runs at
    the niceness Ray gives its workers, the EnvRunners' own."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    worker = ray.remote(LeagueWorker).options(
        num_cpus=0, max_restarts=0, max_concurrency=1,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=here, soft=False))
    return worker.remote(cfg, Path(db).resolve())


def job_members(league: League, exclude: Sequence[str] = ()) -> tuple[int, ...]:
    """The round's field as of now: the active members, less `exclude` (names)."""
    return tuple(m.id for m in league.store.members(active_only=True) if m.name not in exclude)
