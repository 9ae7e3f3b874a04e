"""The batched sampler (`launch.training.sampler.BatchedLudoEnvRunner`): what it records replays through the engine,
no illegal move reaches the engine, seats follow the matchmaker, and non-RLlib agents sit at seats."""
from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace

import numpy as np
import pytest

from launch.training import build
from launch.training.sampler import BatchedLudoEnvRunner
from ludo_env.engine.kernels import apply_move, legal_mask
from ludo_env.engine.layout import CURRENT, OVER, PLACES, PLY, TOKENS
from ludo_env.observations import encode
from ludo_env.rewards import RewardConfig
from ludo_env.rules import MAX_PLAYERS, MAX_TOKENS
from policies.league.pool import MAIN, Matchmaker
from tests.launch.configs import train_config

POSITIONS = slice(TOKENS, TOKENS + MAX_PLAYERS * MAX_TOKENS)
EVERY_SEAT_MAIN = ("league.main_weight=1", "league.snapshot_weight=0", "league.bot_weight=0")


def runner_for(*overrides: str, matchmaker: Matchmaker | None = None, externals=None) -> BatchedLudoEnvRunner:
    cfg = train_config("+exp=smoke", "sampler.games=24", *overrides)
    pool = build.make_pool(cfg)
    config = build.build_algorithm_config(cfg, pool, matchmaker or build.first_matchmaker(cfg, pool), externals)
    return BatchedLudoEnvRunner(config=config)


def decisions_by_game(episodes) -> dict[str, list[tuple[int, dict, int, float, bool]]]:
    """Every recorded decision, (seat, observation, action, reward, chain ended here) per game, in game order."""
    games = defaultdict(list)
    for episode in episodes:
        n = len(episode)
        observations = episode.get_observations(slice(0, n))
        actions, rewards = episode.get_actions(slice(0, n)), episode.get_rewards(slice(0, n))
        seat = int(episode.agent_id.rpartition("_")[2])
        for t in range(n):
            obs = {k: v[t] for k, v in observations.items()}
            games[episode.multi_agent_episode_id].append(
                (seat, obs, int(actions[t]), float(rewards[t]), episode.is_terminated and t == n - 1))
    for decisions in games.values():
        decisions.sort(key=lambda d: int(d[1]["state"][PLY]))
    return games


@pytest.fixture(scope="module")
def every_seat_main():
    """main at every seat, no forced moves played inside: every decision of every game is recorded."""
    runner = runner_for(*EVERY_SEAT_MAIN, "auto_forced_moves=false", "reward=sparse")
    episodes = runner.sample(num_timesteps=24 * 400) + runner.sample(num_timesteps=24 * 200)
    return runner, episodes


def test_recorded_transitions_replay_through_the_engine(every_seat_main):
    runner, episodes = every_seat_main
    tab, games = runner.games.tab, decisions_by_game(episodes)
    reward = RewardConfig.load("sparse")
    finished = 0
    for key, decisions in games.items():
        last_of_seat = {seat: i for i, (seat, *_) in enumerate(decisions)}
        # A running game's newest decision per seat waits for its reward in the runner: replay whole games only.
        whole = all(decisions[i][4] for i in last_of_seat.values())
        for i, (seat, obs, action, paid, _ended) in enumerate(decisions):
            state = obs["state"].astype(np.int16)
            assert state[CURRENT] == seat
            mask = np.zeros(MAX_TOKENS, dtype=np.int8)
            legal_mask(state, tab, mask)
            np.testing.assert_array_equal(obs["action_mask"], mask)
            np.testing.assert_array_equal(obs["observations"], encode(runner.games.obs_name, state[None], tab)[0])
            assert mask[action] == 1, f"{key}: illegal action {action} recorded"
            after = state.copy()
            apply_move(after, tab, action)
            if whole and i + 1 < len(decisions):  # the move leads to the next position (no-move rolls move nothing)
                np.testing.assert_array_equal(after[POSITIONS], decisions[i + 1][1]["state"][POSITIONS])
            if last_of_seat[seat] != i:
                assert paid == 0.0  # sparse: nothing is paid before the end
        seat, obs, action, _, _ = decisions[-1]
        if whole:  # the game's last move ends it; each seat's last reward is its end pay
            finished += 1
            after = obs["state"].astype(np.int16).copy()
            apply_move(after, tab, action)
            assert after[OVER] == 1
            pay = reward.end_rewards(after[PLACES: PLACES + runner.players], runner.players)
            for s, i in last_of_seat.items():
                assert decisions[i][4] and decisions[i][3] == pytest.approx(pay[s])
    assert finished >= 10


def test_chunks_continue_where_the_last_sample_stopped(every_seat_main):
    _, episodes = every_seat_main
    chunks = defaultdict(list)
    for episode in episodes:
        chunks[episode.id_].append(episode)
    continued = [parts for parts in chunks.values() if len(parts) > 1]
    assert continued
    for first, second in continued:
        assert second.t_started == first.t_started + len(first)
        assert not first.is_done
        bootstrap = first.get_observations(-1)
        np.testing.assert_array_equal(bootstrap["state"], second.get_observations(0)["state"])


def test_no_illegal_move_reaches_the_engine(every_seat_main):
    runner, _ = every_seat_main
    assert runner.illegal_moves == 0


def test_seats_are_drawn_by_the_matchmaker():
    matchmaker = Matchmaker(4, bots=("bot_random", "bot_hybrid"), main_weight=0.4, bot_weight=0.6, seed=3)
    runner = runner_for(matchmaker=matchmaker)
    seen = defaultdict(int)
    for _ in range(6):
        runner.sample(num_timesteps=24 * 40)
        for b in range(runner.batch):
            modules = matchmaker.matchup(runner._game_key[b]).modules
            assert tuple(runner._agents[a] for a in runner._seat_agent[b, : runner.players]) == modules
            chains = runner._chain[b, : runner.players] >= 0
            assert tuple(np.flatnonzero(chains)) == matchmaker.matchup(runner._game_key[b]).learner_seats
    for key in range(runner._games_started):
        for module in matchmaker.matchup(f"w0g{key}").modules:
            seen[module] += 1
    total = sum(seen.values())
    # One seat per game is main; the other three follow the weights.
    expected_main = (1 + 3 * matchmaker.opponent_weights()[MAIN]) / 4
    assert seen[MAIN] / total == pytest.approx(expected_main, abs=0.08)


def test_a_non_rllib_player_sits_at_a_training_seat():
    spec = "py:tests.evaluate.example_bot:FurthestBehind"
    matchmaker = Matchmaker(4, main_weight=0.0, externals=(spec,), external_weight=1.0, seed=1)
    runner = runner_for(matchmaker=matchmaker, externals={spec: spec})
    episodes = runner.sample(num_timesteps=24 * 60)
    assert episodes and all(e.module_id == MAIN for e in episodes)
    assert runner.moves_by_agent[spec] > 0


def test_an_unknown_seat_agent_fails_in_one_line():
    matchmaker = Matchmaker(4, main_weight=0.0, externals=("nobody",), external_weight=1.0)
    runner = runner_for(matchmaker=matchmaker)
    with pytest.raises(ValueError, match="the matchmaker drew 'nobody'"):
        runner.sample(num_timesteps=24)


def test_another_runs_policy_sits_at_a_training_seat(tmp_path):
    from tests.league.tiny_policy import write_tiny_policy

    spec = f"ckpt:{write_tiny_policy(tmp_path / 'other')}"
    matchmaker = Matchmaker(4, main_weight=0.0, externals=("other",), external_weight=1.0, seed=2)
    runner = runner_for(matchmaker=matchmaker, externals={"other": spec})
    runner.sample(num_timesteps=24 * 30)
    assert runner.moves_by_agent["other"] > 0 and runner.illegal_moves == 0


class _League:
    """What `launch.training.trainers.rllib.seat_externals` reads of a league: its active external members."""

    def __init__(self, **specs):
        self.store = self
        self._members = [SimpleNamespace(name=name, spec=spec) for name, spec in specs.items()]

    def members(self, active_only=False, kinds=None):
        return self._members

    def spec_of(self, member):
        from policies.players import stored_spec

        return stored_spec(member.spec, f"league member {member.name}")


@pytest.mark.parametrize("players, spec, message", [
    (2, "TINY", "was trained for 4-player classic, this game is 2-player classic"),
    (4, "ckpt:/nonexistent/policy", "cannot sit at a training seat: player 'ckpt:/nonexistent/policy'"),
])
def test_an_agent_that_cannot_sit_is_refused_before_ray_starts(tmp_path, players, spec, message):
    import ray

    from launch.cli import UserError
    from launch.training.trainers.rllib import seat_externals
    from tests.league.tiny_policy import write_tiny_policy

    if spec == "TINY":
        spec = f"ckpt:{write_tiny_policy(tmp_path / 'four', players=4)}"
    cfg = train_config("+exp=smoke", f"variant.players={players}")
    with pytest.raises(UserError) as err:
        seat_externals(cfg, _League(other=spec))
    assert message in str(err.value) and "\n" not in str(err.value)
    assert not ray.is_initialized()


def test_each_learner_records_its_own_games_and_exploiters_report_theirs():
    # league=alphastar: main, a main exploiter and a league exploiter learn; each game records only its learner.
    runner = runner_for("league=alphastar", "league.main_exploiter_share=0.3", "league.league_exploiter_share=0.3")
    matchmaker = runner.config.policy_mapping_fn
    episodes = runner.sample(num_timesteps=24 * 300)
    learners = defaultdict(set)
    for episode in episodes:
        learners[episode.multi_agent_episode_id].add(episode.module_id)
    assert {m for modules in learners.values() for m in modules} == {MAIN, "main_exploiter_0", "league_exploiter_0"}
    for key, modules in learners.items():
        matchup = matchmaker.matchup(key)
        assert modules == {matchup.learner}
        seats = {int(e.agent_id.rpartition("_")[2]) for e in episodes if e.multi_agent_episode_id == key}
        assert seats <= set(matchup.learner_seats)
    results = runner.take_exploiter_results()
    assert set(results) == {"main_exploiter_0", "league_exploiter_0"}
    recorded = defaultdict(int)
    for episode in episodes:
        recorded[episode.module_id] += len(episode)
    for module_id, result in results.items():
        assert result.decisions >= recorded[module_id] > 0  # a chain's newest decision waits for the next sample
        assert result.games > 0 and 0 <= result.ahead <= result.met == 3 * result.games
    assert runner.take_exploiter_results() == {}
    assert runner.illegal_moves == 0
