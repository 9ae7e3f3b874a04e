"""A league of external members only (``league.main_weight=0 league.snapshot_weight=0 league.bot_weight=0
league.external_weight=1``): accepted as config, it seats the externals at every opponent seat of every training
game through the batched sampler, and what cannot work is refused in one line before Ray starts."""
from __future__ import annotations

from collections import Counter

import pytest

from launch.training import build
from launch.training.sampler import BatchedLudoEnvRunner
from launch.training.trainers.rllib import seat_externals, training_matchmaker
from policies.league.league import League
from policies.league.pool import MAIN, Matchmaker
from policies.league.store import LeagueStore
from tests.launch.configs import train_config
from tests.league.tiny_policy import write_tiny_policy

ONLY_EXTERNALS = ("league.main_weight=0", "league.snapshot_weight=0", "league.bot_weight=0",
                  "league.external_weight=1")


def test_only_external_members_sit_at_every_opponent_seat_of_every_training_game(tmp_path):
    policy = write_tiny_policy(tmp_path / "other")
    cfg = train_config("+exp=smoke", "sampler.games=24", *ONLY_EXTERNALS, f"league.external=[{policy}]",
                       run_dir=str(tmp_path / "run"))
    league = League(LeagueStore.open(tmp_path / "run" / "league.db"), build.league_settings(cfg), cfg.variant.name)
    try:
        externals = seat_externals(cfg, league)  # what the trainer seats: the one external, loaded
        (name,) = externals
        matchmaker = training_matchmaker(cfg, league)
        assert {m: w for m, w in matchmaker.opponent_weights().items() if w} == {name: 1.0}
        for key in range(200):
            assert Counter(matchmaker.matchup(str(key)).modules) == {MAIN: 1, name: cfg.variant.players - 1}

        config = build.build_algorithm_config(cfg, build.make_pool(cfg), matchmaker, externals)
        runner = BatchedLudoEnvRunner(config=config)
        episodes = runner.sample(num_timesteps=24 * 40)
        assert episodes and all(e.module_id == MAIN for e in episodes)
        # nobody else moved (not main's own share, not the league's bots); the external answered its seats
        assert set(runner.moves_by_agent) == {MAIN, name} and runner.illegal_moves == 0
        assert runner.moves_by_agent[name] > 0
        for b in range(runner.batch):  # every game under way: one main seat, the external at all the others
            seats = [runner._agents[a] for a in runner._seat_agent[b, : runner.players]]
            assert Counter(seats) == {MAIN: 1, name: runner.players - 1}
    finally:
        league.store.close()


@pytest.mark.parametrize("overrides, message", [
    (("league.external_weight=0",), ("league weights are all 0: give main_weight, snapshot_weight, bot_weight or, "
                                     "with league.external, external_weight a share > 0")),
    ((), "league.external_weight=1 is the only share > 0 and league.external is empty: name the external members"),
    (("league.external=[EXTERNAL]", "sampler.name=per_game"),
     "external members sit at training seats only with sampler.name=batched"),
])
def test_a_league_with_nobody_to_seat_is_one_line(tmp_path, overrides, message):
    policy = write_tiny_policy(tmp_path / "other")
    overrides = tuple(o.replace("EXTERNAL", str(policy)) for o in overrides)
    with pytest.raises(ValueError) as err:
        train_config("+exp=smoke", *ONLY_EXTERNALS, *overrides)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_when_every_external_has_been_dropped_main_plays_the_seats():
    # The share of externals is all there is and the league has dropped them (they raised mid-run).
    matchmaker = Matchmaker(4, bots=("bot_random",), main_weight=0, snapshot_weight=0, bot_weight=0,
                            external_weight=1)
    assert matchmaker.opponent_weights() == {MAIN: 1.0}
    assert matchmaker.matchup("any").modules == (MAIN,) * 4
