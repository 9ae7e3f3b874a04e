"""AlphaStar's league roles without Ray: seating by role, the freeze-and-reset rule, frozen exploiters as members
with a role, the store's migration to roles, and the config's one-line refusals (``league=alphastar``)."""
from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from launch.cli import UserError
from launch.training import build
from policies.league.league import ExploiterProgress, League, LeagueSettings
from policies.league.pool import MAIN, Matchmaker, SnapshotPool, role_of, snapshot_id
from policies.league.roles import LEAGUE_EXPLOITER, MAIN_EXPLOITER, ExploiterRules
from policies.league.store import SCHEMA_VERSION, LeagueStore
from tests.launch.configs import train_config

MAIN_EXPLOITERS = ("main_exploiter_0", "main_exploiter_1")
LEAGUE_EXPLOITERS = ("league_exploiter_0",)


def roles_matchmaker(**fields) -> Matchmaker:
    settings = dict(snapshots=("snapshot_0", "snapshot_1"), bots=("bot_random", "bot_hybrid"), main_weight=0.5,
                    snapshot_weight=0.3, bot_weight=0.2, seed=3, main_exploiters=MAIN_EXPLOITERS,
                    league_exploiters=LEAGUE_EXPLOITERS, main_exploiter_share=0.3, league_exploiter_share=0.2)
    return Matchmaker(4, **(settings | fields))


def test_exploiters_are_seated_as_their_role_says_over_many_games():
    mm = roles_matchmaker()
    n = 20_000
    learners, league_opponents = Counter(), Counter()
    for key in map(str, range(n)):
        matchup = mm.matchup(key)
        assert matchup == mm.matchup(key) and len(matchup.learner_seats) >= 1
        others = [m for s, m in enumerate(matchup.modules) if s != matchup.learner_seats[0]]
        learners[matchup.learner] += 1
        if matchup.learner in MAIN_EXPLOITERS:
            assert others == [MAIN] * 3  # only the current main
        elif matchup.learner in LEAGUE_EXPLOITERS:
            assert matchup.modules.count(matchup.learner) == 1 and not set(others) & set(MAIN_EXPLOITERS)
            league_opponents.update(others)
        else:
            assert matchup.learner == MAIN and not set(matchup.modules) & {*MAIN_EXPLOITERS, *LEAGUE_EXPLOITERS}
    # each role's share of the games, split evenly among its exploiters
    assert abs(learners[MAIN] / n - 0.5) < 0.015
    assert abs(learners["main_exploiter_0"] / n - 0.15) < 0.01 and abs(learners["main_exploiter_1"] / n - 0.15) < 0.01
    assert abs(learners["league_exploiter_0"] / n - 0.2) < 0.01
    # a league exploiter's opponents are drawn as main's are (PFSP over the members)
    seats = sum(league_opponents.values())
    for module, weight in mm.opponent_weights().items():
        assert abs(league_opponents[module] / seats - weight) < 0.02, module


def test_a_main_exploiter_meets_mains_snapshots_as_set_and_never_a_frozen_exploiter():
    mm = roles_matchmaker(main_snapshots=("snapshot_1",), main_exploiter_snapshot_weight=0.25,
                          league_exploiters=(), league_exploiter_share=0.0)
    seats = Counter()
    for key in map(str, range(4000)):
        matchup = mm.matchup(key)
        if matchup.learner in MAIN_EXPLOITERS:
            seats.update(m for s, m in enumerate(matchup.modules) if s != matchup.learner_seats[0])
    assert set(seats) == {MAIN, "snapshot_1"}  # snapshot_0 holds a frozen exploiter, not main
    assert abs(seats["snapshot_1"] / sum(seats.values()) - 0.25) < 0.03


def test_without_exploiters_the_seats_are_those_drawn_before_roles_existed():
    # The draw of a league without roles consumes the same random numbers as before roles existed.
    import random
    import zlib

    mm = Matchmaker(4, ("snapshot_0",), ("bot_random",), 0.5, 0.3, 0.2, seed=11)
    for key in map(str, range(200)):
        rng = random.Random(zlib.crc32(f"11:{key}".encode()))
        weights = mm.opponent_weights()
        seats = [rng.choices(list(weights), list(weights.values()))[0] for _ in range(4)]
        seats[rng.randrange(4)] = MAIN
        assert mm.matchup(key).modules == tuple(seats) and mm.matchup(key).learner == MAIN


@pytest.mark.parametrize("fields, message", [
    (dict(main_exploiter_share=0.0), "main_exploiter_share=0.0 needs"),
    (dict(main_exploiters=(), league_exploiters=()), "needs main_exploiters"),
    (dict(main_exploiter_share=0.6, league_exploiter_share=0.4), "leave main none"),
])
def test_the_matchmaker_refuses_shares_without_exploiters_or_main(fields, message):
    with pytest.raises(ValueError, match=message):
        roles_matchmaker(**fields)


def test_module_ids_name_their_role():
    pool = SnapshotPool(4, 2, ["random"], main_exploiters=1, league_exploiters=2)
    assert pool.trainable == [MAIN, "main_exploiter_0", "league_exploiter_0", "league_exploiter_1"]
    assert [role_of(m) for m in pool.trainable] == [MAIN, MAIN_EXPLOITER, LEAGUE_EXPLOITER, LEAGUE_EXPLOITER]
    with pytest.raises(ValueError, match="no learner's module id"):
        role_of("snapshot_0")


# ---------------------------------------------------------------- the freeze and reset rule
def test_an_exploiter_is_frozen_when_it_is_ahead_enough_over_enough_games_or_its_budget_is_spent():
    rule = ExploiterRules.of(LeagueSettings(players=4, exploiter_freeze_ahead=0.6, exploiter_min_games=10,
                                            exploiter_step_budget=1000, league_exploiter_reset=0.25))
    progress = ExploiterProgress()
    progress.add(decisions=200, games=9, ahead=27, met=27)  # always ahead, but too few games
    assert rule.freeze_reason("main_exploiter_0", progress) is None
    progress.add(decisions=50, games=1, ahead=0, met=3)
    assert "ahead of its opponents 90% of the time over 10 games" == rule.freeze_reason("main_exploiter_0", progress)
    behind = ExploiterProgress()
    behind.add(decisions=999, games=50, ahead=10, met=150)
    assert rule.freeze_reason("league_exploiter_0", behind) is None
    behind.add(decisions=1, games=0, ahead=0, met=0)
    assert "step budget" in rule.freeze_reason("league_exploiter_0", behind)
    behind.restart(reset=True)
    assert (behind.decisions, behind.games, behind.frozen, behind.resets) == (0, 0, 1, 1)
    # a main exploiter always restarts; a league exploiter with the set chance
    assert rule.resets("main_exploiter_0", draw=0.99)
    assert rule.resets("league_exploiter_0", draw=0.2) and not rule.resets("league_exploiter_0", draw=0.3)
    with pytest.raises(ValueError, match="no exploiter"):
        rule.resets(MAIN, 0.0)


def test_the_sampler_counts_an_exploiters_games_against_its_opponents_seats():
    from launch.training.sampler import ExploiterResults

    results = ExploiterResults()
    results.add_game(np.array([2, 1, 4, 3]), np.array([0]))  # 2nd: ahead of seats 2 and 3
    results.add_game(np.array([1, 0, 0, 0]), np.array([0]))  # the first winner ends (pyludo): ahead of all
    assert (results.games, results.ahead, results.met) == (2, 5, 6)


# ---------------------------------------------------------------- frozen exploiters in the league
def test_a_frozen_exploiter_leaves_the_league_only_for_a_newer_one_of_its_role(tmp_path):
    store = LeagueStore.open(tmp_path / "league.db")
    league = League(store, LeagueSettings(players=4, max_snapshots=3, main_exploiters=1, main_exploiter_share=0.2),
                    "classic")

    def write(folder: Path) -> None:
        folder.mkdir(parents=True)
        (folder / "weights.pt").write_text(folder.name)

    def rate(member, mu: float) -> None:
        store.set_ratings(None, {store.member(member.name).id: (mu, 1.0)})

    first, _ = league.add_snapshot(10, 100, write)
    second, _ = league.add_snapshot(20, 200, write)
    exploiter, _ = league.add_snapshot(25, 250, write, learner="main_exploiter_0")
    rate(first, 30.0), rate(second, 29.0), rate(exploiter, 20.0)  # the exploiter is rated lowest by far
    # main's next snapshots evict main's lowest, never the exploiter
    third, evicted = league.add_snapshot(30, 300, write)
    assert evicted.name == second.name and third.slot == second.slot
    rate(third, 28.0)
    fourth, evicted = league.add_snapshot(40, 400, write)
    assert evicted.name == third.name
    assert {m.name for m in league.slot_members().values()} == {first.name, fourth.name, exploiter.name}
    # the exploiter's next freeze replaces its own role's member, however main's are rated
    rate(first, 10.0)
    newer, evicted = league.add_snapshot(45, 450, write, learner="main_exploiter_0")
    assert evicted.name == exploiter.name and newer.slot == exploiter.slot
    store.close()


def test_a_frozen_exploiter_is_a_snapshot_with_its_role_drawn_at_mains_seats(tmp_path):
    store = LeagueStore.open(tmp_path / "league.db")
    league = League(store, LeagueSettings(players=4, max_snapshots=2, main_exploiters=1, league_exploiters=1,
                                          main_exploiter_share=0.2, league_exploiter_share=0.2,
                                          main_exploiter_snapshot_weight=0.5), "classic")

    def write(folder: Path) -> None:
        folder.mkdir(parents=True)
        (folder / "weights.pt").write_text(folder.name)

    main_snapshot, _ = league.add_snapshot(3, 300, write)
    frozen, _ = league.add_snapshot(4, 400, write, learner="main_exploiter_0")
    assert (frozen.name, frozen.kind, frozen.role, frozen.slot) == ("main_exploiter_0@4", "snapshot", MAIN_EXPLOITER, 1)
    assert main_snapshot.role == MAIN and store.member("main").role == MAIN and store.member("random").role is None
    assert (frozen.mu, frozen.sigma) == (store.member("main").mu, store.member("main").sigma)  # main's, as snapshots
    mm = league.matchmaker(seed=0)
    assert mm.main_snapshots == (snapshot_id(0),) and snapshot_id(1) in mm.opponent_weights()
    # at main's own seats, like any snapshot
    seated = Counter(m for key in map(str, range(3000)) if (matchup := mm.matchup(key)).learner == MAIN
                     for m in matchup.modules)
    assert seated[snapshot_id(1)] > 0
    # a third snapshot, of a role with none active, evicts one of main's
    third, evicted = league.add_snapshot(5, 500, write, learner="league_exploiter_0")
    assert third.role == LEAGUE_EXPLOITER and evicted.name == main_snapshot.name
    assert third.slot == evicted.slot
    # the dashboard shows each member's role
    from policies.league.leaderboard import ranking, render_html

    assert {r["name"]: r["role"] for r in ranking(store)}["main_exploiter_0@4"] == MAIN_EXPLOITER
    page = render_html(store, None, "league")
    assert '<td class="role">main_exploiter</td>' in page and '<td class="role">league_exploiter</td>' in page
    store.close()


def test_a_schema_2_database_is_migrated_to_roles_and_read_as_it_is(tmp_path):
    from policies.league import store as store_module

    path = tmp_path / "league.db"
    with sqlite3.connect(path) as db:  # a league as schema 2 made it: no role column
        db.executescript(store_module._SCHEMA.replace(",\n    role TEXT", ""))
        db.execute("INSERT INTO meta VALUES ('schema_version', '2')")
        for name, kind in (("main", "main"), ("main@10", "snapshot"), ("random", "bot")):
            db.execute("INSERT INTO members (name, kind, spec, created_at, mu, sigma) VALUES (?, ?, 'x', 0, 25, 8)",
                       (name, kind))
    with LeagueStore.open(path, create=False, read_only=True) as reader:  # read as it is, not migrated
        assert reader.get_meta("schema_version") == "2"
        assert [m.role for m in reader.members()] == [MAIN, MAIN, None]
    with LeagueStore.open(path, create=False) as store:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        assert [m.role for m in store.members()] == [MAIN, MAIN, None]
        store.add_member("main_exploiter_0@20", "snapshot", "x", role=MAIN_EXPLOITER)
        assert store.member("main_exploiter_0@20").role == MAIN_EXPLOITER


# ---------------------------------------------------------------- config
def test_alphastar_builds_every_role_as_a_trainable_module_and_pfsp_has_none():
    cfg = train_config("+exp=ppo_selfplay", "league=alphastar")
    algo_config = build.build_algorithm_config(cfg)
    assert algo_config.policies_to_train == [MAIN, "main_exploiter_0", "league_exploiter_0"]
    assert {"main_exploiter_0", "league_exploiter_0"} <= set(algo_config.policies)
    specs = algo_config.rl_module_spec.rl_module_specs
    assert specs["main_exploiter_0"].model_config == specs[MAIN].model_config
    first = algo_config.policy_mapping_fn
    assert (first.main_exploiter_share, first.league_exploiter_share) == (0.2, 0.2)
    default = build.build_algorithm_config(train_config("+exp=ppo_selfplay"))
    assert default.policies_to_train == [MAIN] and default.policy_mapping_fn.main_exploiters == ()


@pytest.mark.parametrize("overrides, message", [
    (["league.main_exploiters=-1"], "league.main_exploiters=-1 is not allowed"),
    (["league.league_exploiters=1000"], "league.league_exploiters=1000 is not allowed"),
    (["league.main_exploiters=60"], "league.main_exploiters=60 is too many for league.main_exploiter_share=0.2"),
    (["league.main_exploiter_share=0.5", "league.league_exploiter_share=0.5"], "leaves main no games"),
    (["league.main_exploiter_share=0"], "league.main_exploiters=1 with league.main_exploiter_share=0"),
    (["league.league_exploiters=0"], "league.league_exploiter_share=0.2 gives games to league_exploiters"),
    (["league.main_exploiter_share=1.5"], "league.main_exploiter_share=1.5 is not allowed"),
    (["league.exploiter_freeze_ahead=0"], "league.exploiter_freeze_ahead=0.0 is not allowed"),
    (["league.league_exploiter_reset=2"], "league.league_exploiter_reset=2.0 is not allowed"),
    (["league.exploiter_reset_to=best"], "league.exploiter_reset_to=best is not known: choose from initial, main"),
    (["league.max_snapshots=0"], "league.max_snapshots=0 has none"),
    (["algo=dqn"], "train with algo=ppo only"),
    (["sampler.name=per_game"], "need sampler.name=batched"),
])
def test_bad_role_settings_are_refused_in_one_line(overrides, message):
    with pytest.raises((UserError, ValueError)) as err:
        train_config("league=alphastar", *overrides)
    text = str(err.value)
    assert message in text and "\n" not in text, text


def test_shared_minibatches_use_every_modules_rows_once_per_epoch():
    from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch

    from launch.training.ppo_learner import SharedMinibatchIterator, SharedMinibatchPPOLearner

    rows = {MAIN: 1000, "main_exploiter_0": 300, "league_exploiter_0": 7}
    batch = MultiAgentBatch({m: SampleBatch({"i": np.arange(n)}) for m, n in rows.items()}, 1307)
    iterator = SharedMinibatchIterator(batch, num_epochs=2, minibatch_size=256, shuffle_batch_per_epoch=True)
    assert iterator.parts == 6  # ceil(1307 / 256)
    seen = Counter()
    for minibatch in iterator:
        assert sum(len(b) for b in minibatch.policy_batches.values()) <= 256 + len(rows)
        for module_id, module_batch in minibatch.policy_batches.items():
            seen.update((module_id, int(i)) for i in module_batch["i"])
    assert seen == Counter({(m, i): 2 for m, n in rows.items() for i in range(n)})  # each row once per epoch
    assert build.build_algorithm_config(train_config("+exp=ppo_selfplay", "league=alphastar")).learner_class \
        is SharedMinibatchPPOLearner
    assert build.build_algorithm_config(train_config("+exp=ppo_selfplay")).learner_class \
        is not SharedMinibatchPPOLearner  # the default league keeps RLlib's minibatches
