"""A league role added with one entry in the role table (`policies.league.roles.ROLES`), the way
``tests/launch/test_algorithms.py`` adds an algorithm: with no other edit, the schema takes its settings and refuses
bad ones in one line, the docs describe them, the matchmaker seats its learners by its share and its own
opponents, the builder and the sampler train them as main is trained, and in a real RLlib algorithm its learners
are frozen into the league, restarted and evicted by its rules.

The fake role brings rules of its own (`BotsOnly`, `OldestOfItsRole`) beside the table's (`AheadOrBudget`,
`Restart`), so each behaviour below can only come from its entry."""
from __future__ import annotations

import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from launch.training import build, schema
from launch.training.sampler import BatchedLudoEnvRunner
from policies.league import roles
from policies.league.league import League, LeagueSettings
from policies.league.pool import MAIN
from policies.league.roles import (
    EXPLOITER_FREEZE,
    EXPLOITER_START,
    ROLES,
    AheadOrBudget,
    Restart,
    Role,
    Setting,
    role_named,
)
from policies.league.store import LeagueStore
from policies.ranges import AT_LEAST_ONE, SHARE, Range
from tests.launch.configs import flat_weights, train_config

ROOT = Path(__file__).resolve().parents[2]
FAKE_NAME = "fake_exploiter"
FAKES = ("fake_exploiter_0", "fake_exploiter_1")
ON = ("league.fake_exploiters=2", "league.fake_exploiter_share=0.25")


@dataclass(frozen=True)
class BotsOnly:
    """Every seat a bot of the league's, uniformly (main when it has none)."""

    @property
    def settings(self) -> tuple[Setting, ...]:
        return ()

    def seats(self, matchmaker, rng) -> list[str]:
        return [rng.choice(matchmaker.bots) if matchmaker.bots else MAIN for _ in range(matchmaker.players)]


@dataclass(frozen=True)
class OldestOfItsRole:
    """The oldest active snapshot of the new member's role, else the oldest of all, however they are rated."""

    def evicts(self, role: str, members):
        members = list(members)
        return min([m for m in members if m.role == role] or members, key=lambda m: (m.iteration or 0, m.id))


FAKE = Role(
    FAKE_NAME,
    count=Setting("fake_exploiters", 0, Range(0, 4), "Fake exploiters: learners that play the league's bots only."),
    share=Setting("fake_exploiter_share", 0.0, SHARE, "Share of the training games that are fake exploiters'."),
    opponents=BotsOnly(),
    freeze=AheadOrBudget(EXPLOITER_FREEZE.ahead, EXPLOITER_FREEZE.min_games,
                         Setting("fake_exploiter_step_budget", 500, AT_LEAST_ONE,
                                 "Freeze a fake exploiter after this many of its own decisions.")),
    reset=Restart(EXPLOITER_START, chance=Setting("fake_exploiter_reset", 0.5, SHARE,
                                                  "Chance that a fake exploiter restarts when frozen.")),
    eviction=OldestOfItsRole(),
)


@pytest.fixture
def fake_role():
    """The fake declared the way a real role is: its entry in the table (and the schema registered again, as
    Hydra's config store is built at import)."""
    ROLES[FAKE_NAME] = FAKE
    try:
        roles.check_table()
        schema.register()
        yield FAKE
    finally:
        del ROLES[FAKE_NAME]
        schema.register()


# ---------------------------------------------------------------- its settings
def test_a_fake_roles_settings_are_in_the_schema_the_league_and_the_docs(fake_role):
    cfg = train_config("+exp=ppo_selfplay", *ON, "league.fake_exploiter_step_budget=40")
    assert (cfg.league.fake_exploiters, cfg.league.fake_exploiter_share) == (2, 0.25)
    settings = build.league_settings(cfg)
    assert settings.fake_exploiters == 2 and settings.fake_exploiter_step_budget == 40
    assert settings.fake_exploiter_reset == 0.5  # its default
    assert train_config("+exp=ppo_selfplay").league.fake_exploiters == 0  # off unless a league choice turns it on
    # the docs' reference of train.py: its keys, what they allow and what they mean
    sys.path.insert(0, str(ROOT / "docs" / "hooks"))
    try:
        import reference
    finally:
        sys.path.remove(str(ROOT / "docs" / "hooks"))
    rows = reference.fields_table(schema.LeagueConfig, {}, "league.")
    row = next(r for r in rows if "`league.fake_exploiter_step_budget`" in r)
    assert "a number >= 1" in row and "Freeze a fake exploiter after this many of its own decisions." in row


def test_a_fake_role_is_listed_on_the_docs_pages_that_list_the_roles(fake_role, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "docs" / "hooks"))
    import listings

    assert listings.render("{{ registry:roles }}") == ", ".join(f"`{name}`" for name in ROLES)
    assert listings.render("{{ registry:roles }}").endswith("`fake_exploiter`")


@pytest.mark.parametrize("overrides, message", [
    (["league.fake_exploiters=5"], "league.fake_exploiters=5 is not allowed: give a number in [0, 4]"),
    (["league.fake_exploiter_share=0.3"],
     "league.fake_exploiter_share=0.3 gives games to fake_exploiters and needs league.fake_exploiters >= 1"),
    (["league.fake_exploiters=1"], "league.fake_exploiters=1 with league.fake_exploiter_share=0.0 needs a share"),
    ([*ON, "league.fake_exploiter_reset=1.5"],
     "league.fake_exploiter_reset=1.5 is not allowed: give a number in [0, 1]"),
    ([*ON, "league.fake_exploiter_step_budget=0"], "league.fake_exploiter_step_budget=0 is not allowed"),
    (["league=alphastar", *ON[:1], "league.fake_exploiter_share=0.6"], "{shares} = 1 leaves main no games"),
    ([*ON, "algo=dqn"], "exploiters ({counts}) train with algo=ppo only"),
    ([*ON, "sampler.games=4"], "league.fake_exploiters=2 is too many for league.fake_exploiter_share=0.25"),
])
def test_a_fake_roles_bad_settings_are_refused_in_one_line(fake_role, overrides, message):
    learners = [role for role in ROLES.values() if role.count is not None]  # the table's, the fake's included
    message = message.format(shares=" + ".join(f"league.{role.share.key}" for role in learners),
                             counts=", ".join(f"league.{role.count.key}" for role in learners))
    with pytest.raises(ValueError) as err:
        train_config(*overrides)
    text = str(err.value)
    assert message in text and "\n" not in text, text


def test_an_unknown_role_or_role_setting_fails_in_one_line(fake_role):
    assert list(ROLES)[-1] == FAKE_NAME
    known = ", ".join(ROLES)
    with pytest.raises(ValueError, match=rf"^unknown league role 'fake': choose {re.escape(known)}$"):
        role_named("fake")
    ids = ", ".join(name if role.count is None else f"{name}_<i>" for name, role in ROLES.items())
    with pytest.raises(ValueError, match=rf"^'fake_exploiter_x' is no learner's module id: {re.escape(ids)}$"):
        roles.role_of("fake_exploiter_x")
    with pytest.raises(TypeError, match="unexpected keyword argument 'fake_exploiterz'"):
        LeagueSettings(players=4, fake_exploiterz=1)


# ---------------------------------------------------------------- seated
def test_a_fake_roles_learners_are_seated_by_its_share_against_its_own_opponents(fake_role, tmp_path):
    cfg = train_config("+exp=ppo_selfplay", *ON)
    mm = build.first_matchmaker(cfg, build.make_pool(cfg))
    league = League(LeagueStore.open(tmp_path / "league.db"), build.league_settings(cfg), "classic")
    assert league.matchmaker(cfg.seed).fake_exploiters == mm.fake_exploiters == FAKES
    n = 8000
    learners = Counter()
    for key in map(str, range(n)):
        matchup = mm.matchup(key)
        learners[matchup.learner] += 1
        others = [m for s, m in enumerate(matchup.modules) if s != matchup.learner_seats[0]]
        if matchup.learner in FAKES:
            assert set(others) <= {"bot_random", "bot_hybrid"}  # its own opponents: the bots alone
        else:
            assert matchup.learner == MAIN and not set(matchup.modules) & set(FAKES)
    assert abs(learners[MAIN] / n - 0.75) < 0.02
    for fake in FAKES:  # the role's share, split evenly among its learners
        assert abs(learners[fake] / n - 0.125) < 0.015, fake
    league.store.close()


# ---------------------------------------------------------------- trained
def test_a_fake_roles_learners_are_built_trained_and_recorded_as_mains_are(fake_role):
    from launch.training.ppo_learner import SharedMinibatchPPOLearner

    cfg = train_config("+exp=smoke", "sampler.games=24", *ON)
    config = build.build_algorithm_config(cfg)
    assert config.policies_to_train == [MAIN, *FAKES]
    specs = config.rl_module_spec.rl_module_specs
    assert all(specs[fake].model_config == specs[MAIN].model_config for fake in FAKES)
    assert config.learner_class is SharedMinibatchPPOLearner
    # The sampler records each game's learner alone, and reports the fake learners' games to their freeze rule.
    runner = BatchedLudoEnvRunner(config=config)
    episodes = runner.sample(num_timesteps=24 * 300)
    recorded = Counter(episode.module_id for episode in episodes)
    assert set(recorded) == {MAIN, *FAKES}
    for episode in episodes:
        assert episode.module_id == config.policy_mapping_fn.matchup(episode.multi_agent_episode_id).learner
    results = runner.take_exploiter_results()
    assert set(results) == set(FAKES)
    assert all(r.decisions > 0 and 0 <= r.ahead <= r.met == 3 * r.games for r in results.values())
    assert sum(r.games for r in results.values()) > 0


# ---------------------------------------------------------------- frozen, reset and evicted, in a real algorithm
def _same(a, b) -> bool:
    a, b = flat_weights(a), flat_weights(b)
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_a_fake_roles_learners_are_frozen_reset_and_evicted_by_its_rules(fake_role, tmp_path, capsys):
    import ray

    import launch.training.trainers.rllib as rllib
    from launch.training.runs import RunState

    # Games enough that each fake learner has some from the first sample on (a smoke game lasts many samples).
    cfg = train_config("+exp=smoke", "sampler.games=48", "league.fake_exploiters=2", "league.fake_exploiter_share=0.5",
                       "league.fake_exploiter_step_budget=1", "league.fake_exploiter_reset=1",
                       "league.exploiter_reset_to=initial", "wandb.mode=disabled", run_dir=str(tmp_path))
    pool = build.make_pool(cfg)
    league = League(LeagueStore.open(tmp_path), build.league_settings(cfg), cfg.variant.name)
    store = league.store
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    algo = None
    try:
        algo = build.build_algorithm_config(cfg, pool, league.matchmaker(cfg.seed)).build_algo()
        evaluator = rllib.PanelEvaluator(cfg)
        state = RunState()
        exploiters = rllib.ExploiterTraining(cfg, tmp_path / "league", state)
        assert exploiters.modules == FAKES
        exploiters.keep_initial_weights(algo, evaluator)
        initial = {fake: evaluator.weights_of(tmp_path / "league" / "initial" / fake) for fake in FAKES}
        # Both slots hold main's snapshots, the older one rated higher: the fake role's rule evicts by age.
        rllib.take_snapshot(algo, league, pool, RunState(iteration=1), evaluator, None)
        rllib.take_snapshot(algo, league, pool, RunState(iteration=2), evaluator, None)
        store.set_ratings(None, {store.member("main@1").id: (40.0, 1.0), store.member("main@2").id: (20.0, 1.0)})
        result = algo.train()  # every learner trains on its own games: each fake moves from its initial weights
        assert all(result["learners"][fake]["total_loss"] is not None for fake in FAKES)
        trained = algo.learner_group.get_weights(list(FAKES))
        assert not any(_same(trained[fake], initial[fake]) for fake in FAKES)

        state.iteration, state.env_steps = 3, 1000
        exploiters.collect(algo)  # their own decisions since the start: the step budget of 1 is spent
        frozen = exploiters.freeze_due(algo, league, pool, state, evaluator)
        restarted = algo.learner_group.get_weights(list(FAKES))
        on_runner = algo.env_runner.module["fake_exploiter_1"].get_state()
    finally:
        if algo is not None:
            algo.stop()
        ray.shutdown()
    assert frozen == list(FAKES)
    log = capsys.readouterr().out
    assert "league: fake_exploiter_0 frozen as fake_exploiter_0@3 in snapshot_0 (its step budget spent" in log
    assert ", evicting main@1; restarted from its initial weights" in log
    # The first freeze evicted the oldest snapshot (main@1, the better rated); the second the oldest of its role.
    members = {m.name: m for m in league.slot_members().values()}
    assert set(members) == {"fake_exploiter_1@3", "main@2"}
    assert members["fake_exploiter_1@3"].role == FAKE_NAME and members["fake_exploiter_1@3"].kind == "snapshot"
    assert store.member("fake_exploiter_0@3").role == FAKE_NAME and not store.member("fake_exploiter_0@3").active
    # Frozen with the weights it trained to, then restarted (chance 1) from its initial weights, everywhere.
    assert _same(evaluator.weights_of(league.policy_folder(members["fake_exploiter_1@3"])), trained["fake_exploiter_1"])
    assert all(_same(restarted[fake], initial[fake]) for fake in FAKES)
    assert _same(on_runner, initial["fake_exploiter_1"])
    for fake in FAKES:
        progress = exploiters.progress(fake)
        assert (progress.frozen, progress.resets, progress.decisions) == (1, 1, 0)
    store.close()
