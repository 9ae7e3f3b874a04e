"""`MainEpisodeReplayBuffer`: DQN's prioritized replay of main's transitions as flat numpy columns.

RLlib's `PrioritizedEpisodeReplayBuffer` keeps whole episodes and builds each sampled transition in
Python: a segment-tree walk, lookback-buffer reads through ``tree`` maps and a `SingleAgentEpisode`
per item, which made sampling a batch cost more than the learner's update on it (the training profiles in
``docs/pages/results/``). Here every stored step is one row of preallocated arrays (a ring of
``capacity`` rows); a batch is drawn with one vectorised weighted draw and its n-step returns summed
from consecutive rows, and it goes to the learner as those columns (`ColumnReplayDQN`, below).

What is sampled is what RLlib's buffer samples (Schaul et al. 2016, as RLlib implements it):
transition ``(o_t, a_t, sum_k gamma^k r_(t+k), o_(t+n'), terminated)`` with ``n' = min(n_step, steps
left in the chunk)``, drawn with probability ``p_t^alpha / sum p^alpha``, importance weight
``(N P(t))^-beta / max_t (N P(t))^-beta``; new rows get the highest priority seen, and
`update_priorities` sets ``p = |td error|`` for the last batch. ``alpha=0`` is uniform replay. A
transition's n-step window stays inside the chunk it arrived in (`launch.training.sampler` ships chunks of
about ``sampler.games``-th of an iteration's steps per game and seat); at a chunk's end it bootstraps
from the chunk's last observation, which is the true next observation of that seat.

The buffer lives in the driver; with ``algo.store_buffer_in_checkpoints`` its arrays go into checkpoints.

`ColumnReplayDQN` hands the learner that batch as columns. RLlib's DQN step asks the buffer for
episodes, one 1-step `SingleAgentEpisode` per transition, and its learner connectors read them back
into columns item by item: most of the time of an update went there, not into the forward and backward
passes (the training profiles in ``docs/pages/results/``). The learner takes a
`MultiAgentBatch` of numpy columns as it is (it only moves them to its device), so that is what
`ColumnReplayDQN` gives it; everything else in its step is RLlib's DQN step, in the same order.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from ray.rllib.algorithms.dqn.dqn import DQN, calculate_rr_weights
from ray.rllib.core import ALL_MODULES
from ray.rllib.core.columns import Columns
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from ray.rllib.execution.rollout_ops import synchronous_parallel_sample
from ray.rllib.policy.sample_batch import MultiAgentBatch, SampleBatch
from ray.rllib.utils.metrics import (
    ENV_RUNNER_RESULTS,
    ENV_RUNNER_SAMPLING_TIMER,
    LEARNER_RESULTS,
    LEARNER_UPDATE_TIMER,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    REPLAY_BUFFER_ADD_DATA_TIMER,
    REPLAY_BUFFER_RESULTS,
    REPLAY_BUFFER_SAMPLE_TIMER,
    REPLAY_BUFFER_UPDATE_PRIOS_TIMER,
    SYNCH_WORKER_WEIGHTS_TIMER,
    TD_ERROR_KEY,
    TIMERS,
)
from ray.rllib.utils.numpy import convert_to_numpy
from ray.rllib.utils.replay_buffers.prioritized_episode_buffer import PrioritizedEpisodeReplayBuffer

from policies.league.pool import MAIN

MIN_PRIORITY = 1e-6


class MainEpisodeReplayBuffer(PrioritizedEpisodeReplayBuffer):
    """See the module docstring. Built by RLlib from ``replay_buffer_config`` (``type`` is this class's path)."""

    def __init__(self, capacity: int = 10000, *, alpha: float = 1.0, beta: float = 0.4, seed: int | None = None,
                 **kwargs):
        # The parent builds its metrics logger; its segment trees stay small and unused.
        super().__init__(capacity=1, alpha=alpha, **{k: v for k, v in kwargs.items() if k != "capacity"})
        self.capacity = int(capacity)
        self._alpha = float(alpha)
        self.rng = np.random.default_rng(seed)
        self._columns: dict[str, Any] | None = None
        self._size = 0
        self._next = 0
        self._added = 0
        self._priority = np.zeros(self.capacity)
        self._max_priority = 1.0
        self._last_rows = np.zeros(0, dtype=np.int64)
        self._observation_space = self._action_space = None

    # ------------------------------------------------------------------ adding
    def _allocate(self, episode: SingleAgentEpisode) -> None:
        first = episode.get_observations(0)
        cap = self.capacity
        self._columns = {
            "obs": {k: np.zeros((cap, *np.shape(v)), dtype=np.asarray(v).dtype) for k, v in first.items()},
            "next_obs": {k: np.zeros((cap, *np.shape(v)), dtype=np.asarray(v).dtype) for k, v in first.items()},
            "action": np.zeros(cap, dtype=np.int64),
            "reward": np.zeros(cap, dtype=np.float64),
            "left": np.zeros(cap, dtype=np.int64),  # steps from this row to its chunk's end (1 = the last)
            "terminated": np.zeros(cap, dtype=bool),  # the chunk ends the episode
            "truncated": np.zeros(cap, dtype=bool),
        }
        self._observation_space, self._action_space = episode.observation_space, episode.action_space

    def add(self, episodes) -> None:
        episodes = [episodes] if isinstance(episodes, SingleAgentEpisode) else list(episodes)
        added = 0
        for episode in episodes:
            n = len(episode)
            if n == 0:
                continue
            if self._columns is None:
                self._allocate(episode)
            rows = (self._next + np.arange(n)) % self.capacity
            observations = episode.get_observations(slice(0, n + 1))
            cols = self._columns
            for k, v in observations.items():
                cols["obs"][k][rows] = v[:n]
                cols["next_obs"][k][rows] = v[1:]
            cols["action"][rows] = episode.get_actions(slice(0, n))
            cols["reward"][rows] = episode.get_rewards(slice(0, n))
            cols["left"][rows] = np.arange(n, 0, -1)
            cols["terminated"][rows] = episode.is_terminated
            cols["truncated"][rows] = episode.is_truncated
            self._priority[rows] = self._max_priority
            self._next = (self._next + n) % self.capacity
            self._size = min(self.capacity, self._size + n)
            added += n
        self._added += added
        self._update_add_metrics(
            num_episodes_added=len(episodes), num_env_steps_added=added, num_episodes_evicted=0,
            num_env_steps_evicted=0, agent_to_num_episodes_added={}, agent_to_num_steps_added={},
            agent_to_num_episodes_evicted={}, agent_to_num_steps_evicted={},
            module_to_num_steps_added={MAIN: added}, module_to_num_episodes_added={MAIN: len(episodes)},
            module_to_num_episodes_evicted={}, module_to_num_steps_evicted={})

    # ------------------------------------------------------------------ sampling
    def sample_columns(self, batch: int, n_step: int = 1, beta: float = 0.0, gamma: float = 0.99
                       ) -> dict[str, Any]:
        """`batch` transitions drawn by priority, as the columns DQN's loss reads: ``obs`` and ``new_obs``
        (dicts of arrays), ``actions``, ``rewards`` (n-step returns), ``terminateds``, ``truncateds``,
        ``weights`` (importance) and ``n_step``, one row per transition in the order `update_priorities`
        expects."""
        if isinstance(n_step, tuple):
            raise ValueError("MainEpisodeReplayBuffer takes a fixed n_step, not a range")
        n_step = int(n_step)
        rows, weights = self._draw(batch, beta)
        cols = self._columns
        steps = np.minimum(cols["left"][rows], n_step)  # n-step windows end with their chunk
        offsets = np.arange(n_step)
        window = (rows[:, None] + offsets[None, :]) % self.capacity
        inside = offsets[None, :] < steps[:, None]
        returns = (cols["reward"][window] * inside * gamma ** offsets[None, :]).sum(axis=1)
        last = (rows + steps - 1) % self.capacity
        ends_chunk = steps == cols["left"][rows]
        self._last_rows = rows
        self.sampled_timesteps += batch
        self._update_sample_metrics(
            num_env_steps_sampled=batch, num_episodes_per_sample=batch, num_env_steps_per_sample=batch,
            sampled_n_step=float(steps.mean()), num_resamples=0, agent_to_num_steps_sampled={},
            agent_to_num_episodes_per_sample={}, agent_to_num_steps_per_sample={}, agent_to_sampled_n_step={},
            agent_to_num_resamples={}, module_to_num_steps_sampled={MAIN: batch},
            module_to_num_episodes_per_sample={MAIN: batch}, module_to_num_steps_per_sample={MAIN: batch},
            module_to_sampled_n_step={MAIN: float(steps.mean())}, module_to_num_resamples={MAIN: 0})
        return {
            Columns.OBS: {k: v[rows] for k, v in cols["obs"].items()},
            Columns.NEXT_OBS: {k: v[last] for k, v in cols["next_obs"].items()},
            Columns.ACTIONS: cols["action"][rows],
            Columns.REWARDS: returns.astype(np.float32),
            Columns.TERMINATEDS: ends_chunk & cols["terminated"][rows],
            Columns.TRUNCATEDS: ends_chunk & cols["truncated"][rows],
            "weights": weights,
            "n_step": steps,
        }

    def sample_batch(self, batch: int, n_step: int = 1, beta: float = 0.0, gamma: float = 0.99) -> MultiAgentBatch:
        """`sample_columns` as main's train batch, which a Learner takes as it is (`ColumnReplayDQN`)."""
        columns = self.sample_columns(batch, n_step, beta, gamma)
        return MultiAgentBatch({MAIN: SampleBatch(columns)}, env_steps=batch)

    def sample(self, num_items: int | None = None, *, batch_size_B: int | None = None, n_step: int | None = None,
               beta: float | None = 0.0, gamma: float = 0.99, **kwargs) -> list[SingleAgentEpisode]:
        """RLlib's episode-buffer contract: `sample_columns` as one 1-step episode per transition, for RLlib's own
        DQN training step and its learner connectors (`ColumnReplayDQN` skips both)."""
        batch = int(num_items or batch_size_B or self.batch_size_B)
        columns = self.sample_columns(batch, int(n_step or 1), float(beta or 0.0), gamma)
        obs, next_obs = columns[Columns.OBS], columns[Columns.NEXT_OBS]
        return [
            SingleAgentEpisode(
                id_=f"replay{i}",
                observations=InfiniteLookbackBuffer({k: np.stack([obs[k][i], next_obs[k][i]]) for k in obs}),
                observation_space=self._observation_space,
                infos=InfiniteLookbackBuffer([{}, {}]),
                actions=InfiniteLookbackBuffer(columns[Columns.ACTIONS][i:i + 1]),
                action_space=self._action_space,
                rewards=InfiniteLookbackBuffer(columns[Columns.REWARDS][i:i + 1]),
                extra_model_outputs={"weights": InfiniteLookbackBuffer(columns["weights"][i:i + 1]),
                                     "n_step": InfiniteLookbackBuffer(columns["n_step"][i:i + 1])},
                terminated=bool(columns[Columns.TERMINATEDS][i]),
                truncated=bool(columns[Columns.TRUNCATEDS][i]),
                len_lookback_buffer=0,
                # Each its own key: the learner's batch then keeps this order, which update_priorities needs.
                agent_id="main", module_id=MAIN, multi_agent_episode_id=str(i),
            )
            for i in range(batch)
        ]

    def _draw(self, batch: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
        """Rows drawn by priority^alpha (with replacement, as RLlib's buffer), and their importance weights."""
        if self._size == 0:
            raise ValueError("MainEpisodeReplayBuffer is empty: add episodes before sampling")
        scaled = self._priority[: self._size] ** self._alpha
        probabilities = scaled / scaled.sum()
        rows = self.rng.choice(self._size, size=batch, p=probabilities)
        weights = (self._size * probabilities[rows]) ** -beta
        weights /= (self._size * probabilities.min()) ** -beta
        return rows.astype(np.int64), weights.astype(np.float32)

    def update_priorities(self, priorities, module_id=None) -> None:
        priorities = np.maximum(np.abs(np.asarray(priorities, dtype=np.float64)), MIN_PRIORITY)
        if priorities.shape != self._last_rows.shape:
            raise ValueError(f"update_priorities got {priorities.size} priorities for the last batch of "
                             f"{self._last_rows.size} transitions")
        self._priority[self._last_rows] = priorities
        self._max_priority = max(self._max_priority, float(priorities.max()))

    # ------------------------------------------------------------------ counts, checkpoints
    def __len__(self) -> int:
        return self._size

    def get_num_timesteps(self, module_id=None) -> int:
        return self._size

    def get_added_timesteps(self, module_id=None) -> int:
        return self._added

    _SCALARS = ("_size", "_next", "_added", "_max_priority")

    def get_state(self) -> dict[str, Any]:
        return {"columns": self._columns, "priority": self._priority,
                **{key: getattr(self, key) for key in self._SCALARS},
                "spaces": (self._observation_space, self._action_space)}

    def set_state(self, state) -> None:
        self._columns, self._priority = state["columns"], state["priority"]
        for key in self._SCALARS:
            setattr(self, key, state[key])
        self._observation_space, self._action_space = state["spaces"]


class ColumnReplayDQN(DQN):
    """RLlib's DQN whose updates take `MainEpisodeReplayBuffer.sample_batch` directly (module docstring).

    Each step: sample from the EnvRunners into the buffer (`calculate_rr_weights` times, as RLlib does),
    then, once ``num_steps_sampled_before_learning_starts`` env steps are in, that many updates on drawn
    batches, each followed by its priorities, then the new weights to the EnvRunners. Timers and metrics
    keep RLlib's keys, so `launch.training.trainers.rllib` and the benchmark read them unchanged. Another buffer falls
    back
    to RLlib's own step.
    """

    def training_step(self) -> None:
        buffer = self.local_replay_buffer
        if not isinstance(buffer, MainEpisodeReplayBuffer):
            return super().training_step()
        config = self.config
        samples, updates = calculate_rr_weights(config)
        for _ in range(samples):
            with self.metrics.log_time((TIMERS, ENV_RUNNER_SAMPLING_TIMER)):
                episodes, runner_metrics = synchronous_parallel_sample(
                    worker_set=self.env_runner_group, concat=True, sample_timeout_s=config.sample_timeout_s,
                    _uses_new_env_runners=True, _return_metrics=True)
            self.metrics.aggregate(runner_metrics, key=ENV_RUNNER_RESULTS)
            with self.metrics.log_time((TIMERS, REPLAY_BUFFER_ADD_DATA_TIMER)):
                buffer.add(episodes)
        sampled = self.metrics.peek((ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME), default=0)
        if sampled < config.num_steps_sampled_before_learning_starts:
            return None
        results = []
        for _ in range(updates):
            with self.metrics.log_time((TIMERS, REPLAY_BUFFER_SAMPLE_TIMER)):
                batch = buffer.sample_batch(config.total_train_batch_size, n_step=config.n_step,
                                            beta=config.replay_buffer_config.get("beta") or 0.0, gamma=config.gamma)
                self.metrics.aggregate([buffer.get_metrics()], key=REPLAY_BUFFER_RESULTS)
            with self.metrics.log_time((TIMERS, LEARNER_UPDATE_TIMER)):
                results = self.learner_group.update(batch=batch, timesteps={
                    NUM_ENV_STEPS_SAMPLED_LIFETIME: sampled,
                    NUM_AGENT_STEPS_SAMPLED_LIFETIME: self.metrics.peek(
                        (ENV_RUNNER_RESULTS, NUM_AGENT_STEPS_SAMPLED_LIFETIME), default={}),
                })
                # The TD errors are the new priorities, not metrics: each learner logs a series of arrays.
                td_errors = [np.ravel(part) for result in results if TD_ERROR_KEY in result.get(MAIN, {})
                             for part in convert_to_numpy(result[MAIN].pop(TD_ERROR_KEY).peek())]
                self.metrics.aggregate(results, key=LEARNER_RESULTS)
            with self.metrics.log_time((TIMERS, REPLAY_BUFFER_UPDATE_PRIOS_TIMER)):
                if td_errors:
                    buffer.update_priorities(np.concatenate(td_errors), MAIN)
        if not results:
            return None
        with self.metrics.log_time((TIMERS, SYNCH_WORKER_WEIGHTS_TIMER)):
            self.env_runner_group.sync_weights(from_worker_or_learner_group=self.learner_group,
                                               policies=set(results[0]) - {ALL_MODULES}, global_vars=None,
                                               inference_only=True)
        return None
