"""DQN's replay of main's chunks (`launch.training.replay_buffer.MainEpisodeReplayBuffer`): n-step returns, ends,
priorities."""
from __future__ import annotations

import numpy as np
import pytest
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer

from launch.training.replay_buffer import MainEpisodeReplayBuffer
from ludo_env.core import ACTION_SPACE, observation_space
from policies.league.pool import MAIN

SPACE = observation_space("egocentric")


def chunk(first: int, n: int, terminated: bool, name: str) -> SingleAgentEpisode:
    """A chunk whose observation t carries `first + t` in its first feature, reward `first + t` at step t."""
    obs = {k: np.zeros((n + 1, *s.shape), dtype=s.dtype) for k, s in SPACE.spaces.items()}
    obs["observations"][:, 0] = first + np.arange(n + 1)
    return SingleAgentEpisode(
        id_=name, observations=InfiniteLookbackBuffer(obs), observation_space=SPACE,
        infos=InfiniteLookbackBuffer([{}] * (n + 1)), actions=InfiniteLookbackBuffer(np.arange(n) % 4),
        action_space=ACTION_SPACE, rewards=InfiniteLookbackBuffer((first + np.arange(n)).astype(np.float32)),
        terminated=terminated, len_lookback_buffer=0, agent_id="seat_0", module_id=MAIN, multi_agent_episode_id=name)


def feature(episode: SingleAgentEpisode, t: int) -> int:
    return int(episode.get_observations(t)["observations"][0])


def test_n_step_returns_stop_at_the_chunk_end_and_carry_its_ending():
    buffer = MainEpisodeReplayBuffer(capacity=100, alpha=0.0, seed=0)
    buffer.add([chunk(0, 5, False, "a"), chunk(100, 3, True, "b")])
    gamma = 0.5
    for sampled in buffer.sample(num_items=200, n_step=3, gamma=gamma, beta=0.0):
        t0 = feature(sampled, 0)
        first = 0 if t0 < 100 else 100
        length, terminated = (5, False) if first == 0 else (3, True)
        t = t0 - first
        steps = min(3, length - t)
        assert int(sampled.get_extra_model_outputs("n_step", 0)) == steps
        assert feature(sampled, 1) == first + t + steps  # bootstraps from the observation n' steps on
        expected = sum(gamma ** k * (first + t + k) for k in range(steps))
        assert float(sampled.get_rewards(0)) == pytest.approx(expected)
        assert sampled.is_terminated == (terminated and t + steps == length)
        assert int(sampled.get_actions(0)) == t % 4
        assert sampled.module_id == MAIN and sampled.get_extra_model_outputs("weights", 0) == pytest.approx(1.0)


def test_priorities_steer_the_draw_and_weights_correct_for_it():
    buffer = MainEpisodeReplayBuffer(capacity=100, alpha=1.0, seed=1)
    buffer.add(chunk(0, 10, False, "a"))
    first = buffer.sample(num_items=10, n_step=1, beta=1.0)
    rows = buffer._last_rows.copy()
    buffer.update_priorities(np.where(rows == rows[0], 100.0, 1e-9))
    drawn = [feature(e, 0) for e in buffer.sample(num_items=200, n_step=1, beta=1.0)]
    assert drawn.count(int(rows[0])) > 190
    weights = [float(e.get_extra_model_outputs("weights", 0)) for e in buffer.sample(num_items=50, n_step=1, beta=1.0)]
    assert max(weights) <= 1.0 and min(weights) < 1.0  # the likeliest transition weighs least
    assert len(first) == 10


def test_the_ring_overwrites_the_oldest_steps():
    buffer = MainEpisodeReplayBuffer(capacity=8, alpha=0.0, seed=2)
    buffer.add(chunk(0, 6, False, "a"))
    buffer.add(chunk(100, 6, True, "b"))
    assert len(buffer) == 8 and buffer.get_added_timesteps() == 12
    seen = {feature(e, 0) for e in buffer.sample(num_items=400, n_step=1)}
    assert seen == {4, 5, 100, 101, 102, 103, 104, 105}


def test_a_state_round_trip_keeps_the_buffer():
    buffer = MainEpisodeReplayBuffer(capacity=20, alpha=0.6, seed=3)
    buffer.add(chunk(0, 7, True, "a"))
    copy = MainEpisodeReplayBuffer(capacity=20, alpha=0.6, seed=3)
    copy.set_state(buffer.get_state())
    a, b = buffer.sample(num_items=30, n_step=2), copy.sample(num_items=30, n_step=2)
    assert [feature(e, 0) for e in a] == [feature(e, 0) for e in b]


def test_column_replay_gives_the_learner_the_batch_its_connectors_make_of_the_episodes(tmp_path):
    # ColumnReplayDQN hands the learner numpy columns instead of one episode per transition through RLlib's
    # learner connectors: for the same draw, the learner must end up with the same tensors either way.
    import ray
    import tree
    from ray.rllib.core.learner.training_data import TrainingData

    from launch.training import build
    from launch.training.replay_buffer import ColumnReplayDQN
    from tests.launch.configs import train_config

    cfg = train_config("+exp=smoke_dqn", "resources.env_runners=0",
                       "wandb.mode=disabled", run_dir=str(tmp_path))
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    algo = build.build_algorithm_config(cfg, build.make_pool(cfg)).build_algo()
    try:
        assert type(algo) is ColumnReplayDQN
        result = algo.train()  # samples into the buffer and updates on column batches
        assert result["learners"][MAIN]["num_module_steps_trained"] > 0
        buffer, learner = algo.local_replay_buffer, algo.learner_group._learner
        draw = buffer.rng.bit_generator.state
        episodes = buffer.sample(64, n_step=3, beta=0.4, gamma=0.99)
        buffer.rng.bit_generator.state = draw
        columns = buffer.sample_batch(64, n_step=3, beta=0.4, gamma=0.99)
        via_connectors = learner._make_batch_if_necessary(TrainingData(episodes=episodes))[MAIN]
        direct = learner._make_batch_if_necessary(TrainingData(batch=columns))[MAIN]
        read_by_the_loss = ["obs", "new_obs", "actions", "rewards", "terminateds", "weights", "n_step"]
        for key in read_by_the_loss:
            expected, got = via_connectors[key], direct[key]
            tree.assert_same_structure(expected, got)
            for e, g in zip(tree.flatten(expected), tree.flatten(got)):
                assert e.dtype == g.dtype and e.shape == g.shape, key
                np.testing.assert_array_equal(g.cpu().numpy(), e.cpu().numpy(), err_msg=key)
    finally:
        algo.stop()
        ray.shutdown()
