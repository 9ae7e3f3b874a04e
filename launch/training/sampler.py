"""`BatchedLudoEnvRunner`: one RLlib EnvRunner (a Ray actor) that owns B games in the numba engine.

The per-game path (`ludo_env.multi_agent_env.LudoMultiAgentEnv`, ``sampler: per_game``) has RLlib step
N one-game envs and build a `MultiAgentEpisode` one dict at a time. This runner
(``sampler: batched``, the default) plays a `ludo_env.core.LudoGames` of ``sampler.games`` rows
and, at each step, answers every game waiting on a decision with one forward pass per seat agent:
``main`` (exploring, recorded) for all games where a main seat is to move, each exploiter
(``league=alphastar``: trained like main) for its seats, each snapshot slot for its games, each bot
(numba) for its games. Nothing runs per game in Python while games are
under way; per game Python runs only when a game starts (its seats are drawn) or ends.

What the learner gets
  One `SingleAgentEpisode` per (game, learner seat): the learner's observations, actions, rewards and,
  for PPO, its action logits and log-probabilities. A game's learner is the matchup's ``learner``:
  ``main``, or in an exploiter's game that exploiter; only the learner's seats are recorded, so each
  role's training data is its own share of the games (``league.*_exploiter_share``), and main at the
  other seats of an exploiter's game plays as an opponent. Each carries ``agent_id`` ``seat_<s>``,
  ``module_id`` (the learner's) and the game's id as ``multi_agent_episode_id``, which is how RLlib's
  multi-agent learner connectors key and route single-agent data, so the learner, the module
  set and the checkpoints are those of the per-game path. A seat's reward is what
  `LudoGames.collect_decision_reward` owes it at its next decision (shaping) or
  `LudoGames.collect_end_rewards` at the end: exactly what `LudoMultiAgentEnv` pays. Episodes are
  built in bulk from numpy arrays at the end of `sample`: a chain still running is shipped up to
  its newest decision (its observation is the bootstrap state) and continued by the next call as a
  chunk with the same id and ``t_started``, as RLlib's own runners cut episodes.

Seats
  Every game's seats come from ``config.policy_mapping_fn`` (a `policies.league.pool.Matchmaker`):
  its ``matchup(key)`` for a per-runner game key. `launch.training.trainers.rllib.install_matchmaker` replaces it on
  every runner, and a game started after that draws from the new one. Agents at seats: ``main``,
  the modules of the runner's `MultiRLModule` (snapshot slots, `BotRLModule` bots, whose numba bot
  is called directly), and the league's external members, which are no RLModule (other runs'
  policies, TD(lambda) values, search players, GA networks, ``py:`` bots): the env config's
  ``seat_players`` (member name -> player spec) are built here as `policies.players` players.
  One that raises (a ``py:`` bot's bug, an illegal answer) fails alone: the random bot takes its seats on
  this runner from that move on, and `take_failures` hands its name and what it raised to the driver,
  which drops it from the league (`launch.training.trainers.rllib.LeagueSelfPlay.drop_failed`) and installs a matchmaker
  without it. Training goes on.

Why a custom EnvRunner (``benchmarks/train_throughput.py`` measures it against the per-game path) rather than a
``VECTOR_ENTRY_POINT`` vector env behind `SingleAgentEnvRunner`: because that runner is single-agent (one module, every sub-env stepped
by it at every step), so snapshots and bots would have to live inside the env, outside RLlib's
weight sync, and every main seat of a game would need its own sub-env.
"""
from __future__ import annotations

import math
import threading
from collections import defaultdict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from ray.rllib.core.columns import Columns
from ray.rllib.env.multi_agent_env_runner import MultiAgentEnvRunner
from ray.rllib.env.single_agent_episode import SingleAgentEpisode
from ray.rllib.env.utils.infinite_lookback_buffer import InfiniteLookbackBuffer
from ray.rllib.utils.metrics import (
    EPISODE_LEN_MAX,
    EPISODE_LEN_MEAN,
    EPISODE_LEN_MIN,
    EPISODE_MODULE_RETURN_MEAN,
    EPISODE_RETURN_MAX,
    EPISODE_RETURN_MEAN,
    EPISODE_RETURN_MIN,
    NUM_AGENT_STEPS_SAMPLED,
    NUM_AGENT_STEPS_SAMPLED_LIFETIME,
    NUM_ENV_STEPS_SAMPLED,
    NUM_ENV_STEPS_SAMPLED_LIFETIME,
    NUM_EPISODES,
    NUM_EPISODES_LIFETIME,
    NUM_MODULE_STEPS_SAMPLED,
    NUM_MODULE_STEPS_SAMPLED_LIFETIME,
    SAMPLE_TIMER,
)

from ludo_env.config import EnvConfig
from ludo_env.core import ACTION_SPACE, LudoGames, observation_space, seat_agent
from ludo_env.engine.layout import CURRENT
from ludo_env.rules import MAX_PLAYERS
from policies.league.league import failure_line
from policies.league.pool import MAIN
from policies.modules import ACTION_MASK, OBSERVATIONS, STATE, BotRLModule, inference_batch
from policies.players import BotPlayer, make_player

DEFAULT_GAMES = 256
"""Games per EnvRunner when the env config names none (`launch.training.schema.SamplerConfig.games` does)."""

NO_RECORD = -1


class BatchedLudoEnvRunner(MultiAgentEnvRunner):
    """See the module docstring. Built by RLlib from ``config.env_runners(env_runner_cls=...)``."""

    def __init__(self, config, **kwargs):
        # RLlib's own runner builds the module set, the connectors and the spaces from one env copy
        # (num_envs_per_env_runner=1); the games themselves live in `self.games`.
        super().__init__(config=config, **kwargs)
        env_config = EnvConfig.from_mapping(dict(self.config.env_config))
        self.batch = int(self.config.env_config.get("batch_games", DEFAULT_GAMES))
        rules = env_config.build_rules()
        self.players = rules.players
        self.games = LudoGames(rules, self.batch, env_config.obs, env_config.build_reward(),
                               env_config.auto_forced_moves, env_config.max_plies)
        self._seeds = np.random.default_rng([int(env_config.seed), int(self.worker_index or 0)])
        self._space = observation_space(env_config.obs)
        self._seat_players = seat_players(self.config.env_config.get("seat_players", {}), env_config.seed)
        self._stand_in = BotPlayer("random", env_config.seed)
        self._failures: dict[str, str] = {}
        """Seat players that raised and are not yet reported (`take_failures`): member name -> what it raised."""
        self._exploiter_results: dict[str, ExploiterResults] = {}
        """Exploiters' finished games not yet reported (`take_exploiter_results`), by module id."""
        self._games_started = 0
        # Per game and seat: the agent index (the trainable modules first, main at 0) and, for the learner's
        # seats, the chain and its newest record.
        self._trainable = tuple(trainable_modules(self.config))
        self._agents: list[str] = list(self._trainable)
        self._game_learner = [MAIN] * self.batch
        self._seat_agent = np.zeros((self.batch, MAX_PLAYERS), dtype=np.int64)
        self._chain = np.full((self.batch, MAX_PLAYERS), NO_RECORD, dtype=np.int64)
        self._last_record = np.full((self.batch, MAX_PLAYERS), NO_RECORD, dtype=np.int64)
        self._game_key = [""] * self.batch
        self._game_return = np.zeros(self.batch)
        self._game_decisions = np.zeros(self.batch, dtype=np.int64)
        self._records = _Records(self._space)
        self._chains = _Chains()
        self._started = False
        self.illegal_moves = 0
        """Choices the engine had to replace (never, with masked modules and checked players)."""
        self.moves_by_agent: dict[str, int] = defaultdict(int)
        self._steps_in_call = 0
        # Prefetch: a remote runner plays its next sample while the learner trains on this one.
        self._prefetch = bool(self.config.env_config.get("prefetch", False)) and bool(self.worker_index)
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ludo-sampler")
        self._pending: Future | None = None
        self._weights_lock = threading.Lock()

    # ------------------------------------------------------------------ seats
    def _agent_index(self, name: str) -> int:
        try:
            return self._agents.index(name)
        except ValueError:
            if name not in self.module and name not in self._seat_players:
                raise ValueError(f"the matchmaker drew '{name}', which this EnvRunner does not have: "
                                 f"modules {', '.join(self.module.keys())}; players "
                                 f"{', '.join(self._seat_players) or 'none'}") from None
            self._agents.append(name)
            return len(self._agents) - 1

    def _start_games(self, rows: np.ndarray) -> None:
        matchmaker = self.config.policy_mapping_fn
        seats = np.zeros(rows.size, dtype=np.int64)
        for i, b in enumerate(rows):
            key = f"w{self.worker_index or 0}g{self._games_started}"
            self._games_started += 1
            matchup = matchmaker.matchup(key)
            self._game_key[b] = key
            self._game_learner[b] = matchup.learner
            self._seat_agent[b] = 0
            self._chain[b] = NO_RECORD
            for seat, name in enumerate(matchup.modules):
                self._seat_agent[b, seat] = self._agent_index(name)
                if name == matchup.learner:
                    self._chain[b, seat] = self._chains.open(key, seat, name)
            seats[i] = self._games_started % self.players  # the first mover rotates, as in LudoMultiAgentEnv
        self._last_record[rows] = NO_RECORD
        self._game_return[rows] = 0.0
        self._game_decisions[rows] = 0
        self.games.reset(rows, int(self._seeds.integers(2**63)), seats)

    # ------------------------------------------------------------------ sampling
    def sample(self, *, num_timesteps: int | None = None, num_episodes: int | None = None, explore: bool | None = None,
               random_actions: bool = False, force_reset: bool = False) -> list[SingleAgentEpisode]:
        """At least `num_timesteps` env steps (decisions of any seat) over the B games; main's chunks.

        With prefetch, what this returns was played while the learner trained on the previous sample (by the
        weights before that update), and the next sample starts now, in the background."""
        if num_episodes is not None:
            raise ValueError("BatchedLudoEnvRunner samples env steps, not whole episodes: leave num_episodes unset")
        explore = self.config.explore if explore is None else explore
        if num_timesteps is None:
            num_timesteps = self.config.get_rollout_fragment_length(self.worker_index) * self.config.num_envs_per_env_runner
        with self.metrics.log_time(SAMPLE_TIMER):
            if force_reset and self._pending is not None:
                self._pending.result()
                self._pending = None
            if self._pending is None:
                sampled = self._collect(num_timesteps, explore, force_reset)
            else:
                sampled = self._pending.result()
            if self._prefetch:
                self._pending = self._background.submit(self._collect, num_timesteps, explore, False)
        return self._publish(sampled)

    def _collect(self, num_timesteps: int, explore: bool, force_reset: bool) -> _Sampled:
        """Play until `num_timesteps` decisions are taken; touches no metrics (it may run in the background)."""
        with self._weights_lock:
            if force_reset or not self._started:
                self._start_games(np.arange(self.batch))
                self._started = True
        sampled = _Sampled(seat_steps=np.zeros(MAX_PLAYERS, dtype=np.int64))
        self._steps_in_call = 0
        # Two decisions per game at least: a chain's newest decision waits for its reward, so one would ship nothing.
        while sampled.steps < max(num_timesteps, 2 * self.batch):
            with self._weights_lock:  # weights and the matchmaker change between steps, never during one
                sampled.steps += self._step(explore, sampled)
            self._steps_in_call = sampled.steps
        sampled.episodes = self._ship()
        return sampled

    def _publish(self, sampled: _Sampled) -> list[SingleAgentEpisode]:
        self._log_steps(sampled)
        for length, learner_return, learner in sampled.ended_games:
            self._log_episode(length, learner_return, learner)
        return sampled.episodes

    # ------------------------------------------------------------------ weights, seen from RLlib and the league
    def set_state(self, state) -> None:
        with self._weights_lock:
            super().set_state(state)

    def set_module_state(self, module_id: str, state) -> None:
        """One module's weights (a league snapshot slot), between two steps of a sample in progress."""
        with self._weights_lock:
            self.module[module_id].set_state(state)

    def take_exploiter_results(self) -> dict[str, ExploiterResults]:
        """Each exploiter's finished games since the last call (module id -> `ExploiterResults`): what its freeze
        rule reads (`policies.league.roles.ExploiterRules`)."""
        with self._weights_lock:  # a prefetching sample may be adding to them
            results, self._exploiter_results = self._exploiter_results, {}
        return results

    def take_failures(self) -> dict[str, str]:
        """Seat players (league members) that raised since the last call: name -> what they raised."""
        with self._weights_lock:  # a prefetching sample may be adding one
            failures, self._failures = self._failures, {}
        return failures

    def stop(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
        self._background.shutdown(wait=True, cancel_futures=True)
        super().stop()

    def _step(self, explore: bool, sampled: _Sampled) -> int:
        """Every game takes one decision: one batched answer per agent. Returns the decisions taken."""
        games, everyone = self.games, np.arange(self.batch)
        movers = games.states[:, CURRENT].astype(np.int64)
        paid = games.collect_decision_reward(everyone)
        agents = self._seat_agent[everyone, movers]
        choices = np.zeros(self.batch, dtype=np.int64)
        for agent in np.unique(agents):
            rows = np.flatnonzero(agents == agent)
            if agent < len(self._trainable):
                choices[rows] = self._learner_decisions(self._agents[agent], rows, movers[rows], paid[rows],
                                                        explore, sampled)
            else:
                choices[rows] = self._opponent_decisions(self._agents[agent], rows, explore)
            self.moves_by_agent[self._agents[agent]] += rows.size
        sampled.seat_steps += np.bincount(movers, minlength=MAX_PLAYERS)
        self._game_decisions += 1
        self.illegal_moves += games.play(everyone, choices)
        ended = np.flatnonzero(games.over(everyone) | games.truncated(everyone))
        if ended.size:
            sampled.ended_games += self._end_games(ended)
            self._start_games(ended)
        return self.batch

    def _learner_decisions(self, name: str, rows, seats, paid, explore: bool, sampled: _Sampled) -> np.ndarray:
        """A trainable module's decisions; those at its own games' learner seats are recorded (in an exploiter's
        game, main's seats play unrecorded, as an opponent)."""
        obs = self.games.observe(rows)
        batch = inference_batch(obs[OBSERVATIONS], obs[ACTION_MASK], obs[STATE])
        module = self.module[name]
        with torch.no_grad():
            if explore:
                out = module.forward_exploration(batch, t=self._lifetime_steps())
            else:
                out = module.forward_inference(batch)
        actions, logits, logp = _actions_of(out, explore)
        recorded = np.flatnonzero(self._chain[rows, seats] != NO_RECORD)
        if recorded.size == 0:
            return actions
        rows, seats, paid = rows[recorded], seats[recorded], paid[recorded]
        last = self._last_record[rows, seats]
        owed = last != NO_RECORD
        self._records.reward[last[owed]] += paid[owed]
        self._game_return[rows] += paid
        sampled.module_steps[name] += rows.size
        if name != MAIN:
            self._exploiter_results.setdefault(name, ExploiterResults()).decisions += rows.size
        index = self._records.add(self._chain[rows, seats], {k: v[recorded] for k, v in obs.items()},
                                  actions[recorded], None if logits is None else logits[recorded],
                                  None if logp is None else logp[recorded])
        self._last_record[rows, seats] = index
        return actions

    def _opponent_decisions(self, name: str, rows: np.ndarray, explore: bool) -> np.ndarray:
        games = self.games
        player = self._seat_players.get(name)
        module = self.module[name] if player is None else None
        if isinstance(module, BotRLModule):
            player = module.bot
        if player is not None:
            try:
                return np.asarray(player.act(games.states[rows], games.tab, games.masks[rows]), dtype=np.int64)
            except Exception as err:
                if name not in self._seat_players:  # a built-in bot's failure is a bug here, not an agent's
                    raise
                self._failures[name] = failure_line(err)
                # Its games in progress and any the old matchmaker still seats it in go on with a stand-in.
                self._seat_players[name] = self._stand_in
                return np.asarray(self._stand_in.act(games.states[rows], games.tab, games.masks[rows]),
                                  dtype=np.int64)
        obs = games.observe(rows)
        batch = inference_batch(obs[OBSERVATIONS], obs[ACTION_MASK])
        with torch.no_grad():
            out = (module.forward_exploration(batch, t=self._lifetime_steps()) if explore
                   else module.forward_inference(batch))
        return _actions_of(out, explore)[0]

    def _end_games(self, rows: np.ndarray) -> list[tuple[int, float, str]]:
        """Pay every learner seat its end reward and close its chain; (decisions, the learner's return, the
        learner) of each game. An exploiter's finished game goes to its results."""
        games, ended = self.games, []
        for b in rows:
            final = games.collect_end_rewards(int(b))
            terminated = bool(games.over(slice(b, b + 1))[0])
            learner_seats = np.flatnonzero(self._chain[b, : self.players] != NO_RECORD)
            for seat in learner_seats:
                last = self._last_record[b, seat]
                chain = self._chain[b, seat]
                if last == NO_RECORD:  # the learner never had a decision at this seat
                    self._chains.forget(int(chain))
                    continue
                self._records.reward[last] += final[seat]
                self._game_return[b] += final[seat]
                self._chains.close(chain, terminated)
            learner = self._game_learner[b]
            if learner != MAIN:
                results = self._exploiter_results.setdefault(learner, ExploiterResults())
                if terminated:
                    results.add_game(games.places(int(b)), learner_seats)
            ended.append((int(self._game_decisions[b]), float(self._game_return[b]), learner))
            self._chain[b] = NO_RECORD
        return ended

    def _ship(self) -> list[SingleAgentEpisode]:
        """Episodes (chunks) of every chain with shipped-ready records; keeps each running chain's newest record."""
        records, chains = self._records, self._chains
        order = np.argsort(records.chain[: records.size], kind="stable")
        chain_ids, starts = np.unique(records.chain[order], return_index=True)
        bounds = np.append(starts, order.size)
        episodes, kept = [], []
        for i, chain in enumerate(chain_ids):
            idx = order[bounds[i]: bounds[i + 1]]
            done = chains.done.get(int(chain))
            if done is None:  # running: ship all but the newest, whose observation bootstraps the chunk
                kept.append(idx[-1])
                if idx.size > 1:
                    episodes.append(self._episode(int(chain), idx[:-1], observations=idx, terminated=False,
                                                  truncated=False))
            else:
                episodes.append(self._episode(int(chain), idx, observations=np.append(idx, idx[-1]),
                                              terminated=done, truncated=not done))
                chains.forget(int(chain))
        remap = records.compact(np.asarray(kept, dtype=np.int64))
        live = self._last_record != NO_RECORD
        self._last_record[live] = remap[self._last_record[live]]
        return episodes

    def _episode(self, chain: int, idx: np.ndarray, observations: np.ndarray, terminated: bool,
                 truncated: bool) -> SingleAgentEpisode:
        records, chains = self._records, self._chains
        key, seat, module_id = chains.owner[chain]
        n = idx.size
        extra = {}
        if records.logits is not None:
            extra = {Columns.ACTION_DIST_INPUTS: InfiniteLookbackBuffer(records.logits[idx]),
                     Columns.ACTION_LOGP: InfiniteLookbackBuffer(records.logp[idx])}
        episode = SingleAgentEpisode(
            id_=f"{key}s{seat}",
            observations=InfiniteLookbackBuffer({k: v[observations] for k, v in records.obs.items()}),
            observation_space=self._space,
            infos=InfiniteLookbackBuffer([{}] * (n + 1)),
            actions=InfiniteLookbackBuffer(records.action[idx]),
            action_space=ACTION_SPACE,
            rewards=InfiniteLookbackBuffer(records.reward[idx].astype(np.float32)),
            extra_model_outputs=extra,
            terminated=terminated,
            truncated=truncated,
            t_started=chains.shipped[chain],
            len_lookback_buffer=0,
            agent_id=seat_agent(seat),
            module_id=module_id,
            multi_agent_episode_id=key,
        )
        chains.shipped[chain] += n
        return episode

    # ------------------------------------------------------------------ metrics
    def _log_steps(self, sampled: _Sampled) -> None:
        self.metrics.log_value(NUM_ENV_STEPS_SAMPLED, sampled.steps, reduce="sum")
        self.metrics.log_value(NUM_ENV_STEPS_SAMPLED_LIFETIME, sampled.steps, reduce="lifetime_sum",
                               with_throughput=True)
        for seat in range(self.players):
            agent = seat_agent(seat)
            self.metrics.log_value((NUM_AGENT_STEPS_SAMPLED, agent), int(sampled.seat_steps[seat]), reduce="sum")
            self.metrics.log_value((NUM_AGENT_STEPS_SAMPLED_LIFETIME, agent), int(sampled.seat_steps[seat]),
                                   reduce="lifetime_sum")
        for module_id in self._trainable:
            steps = sampled.module_steps[module_id]
            self.metrics.log_value((NUM_MODULE_STEPS_SAMPLED, module_id), steps, reduce="sum")
            self.metrics.log_value((NUM_MODULE_STEPS_SAMPLED_LIFETIME, module_id), steps, reduce="lifetime_sum")

    def _log_episode(self, length: int, learner_return: float, learner: str) -> None:
        """A game's length and its learner's return; the overall return figures are main's games' alone."""
        self.metrics.log_value(NUM_EPISODES, 1, reduce="sum")
        self.metrics.log_value(NUM_EPISODES_LIFETIME, 1, reduce="lifetime_sum")
        window = max(1, math.ceil(self.config.metrics_num_episodes_for_smoothing
                                  / (self.config.num_env_runners or 1)))
        self.metrics.log_dict({EPISODE_MODULE_RETURN_MEAN: {learner: learner_return}}, window=window)
        self.metrics.log_dict({EPISODE_LEN_MEAN: length}, window=window)
        self.metrics.log_dict({EPISODE_LEN_MIN: length}, reduce="min", window=window)
        self.metrics.log_dict({EPISODE_LEN_MAX: length}, reduce="max", window=window)
        if learner == MAIN:
            self.metrics.log_dict({EPISODE_RETURN_MEAN: learner_return}, window=window)
            self.metrics.log_dict({EPISODE_RETURN_MIN: learner_return}, reduce="min", window=window)
            self.metrics.log_dict({EPISODE_RETURN_MAX: learner_return}, reduce="max", window=window)

    def _lifetime_steps(self) -> int:
        """The run's env steps so far, the clock of DQN's epsilon schedule: the count the algorithm last synced
        plus this call's steps times the number of runners, as RLlib's own runners estimate it."""
        return int(self.num_env_steps_sampled_lifetime) + self._steps_in_call * (self.config.num_env_runners or 1)


@dataclass
class _Sampled:
    """What one sample played: the learners' episodes (chunks), decisions per seat and per learner, and the games
    that ended (decisions, the learner's return, the learner)."""

    seat_steps: np.ndarray
    steps: int = 0
    module_steps: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    ended_games: list[tuple[int, float, str]] = field(default_factory=list)
    episodes: list[SingleAgentEpisode] = field(default_factory=list)


@dataclass
class ExploiterResults:
    """An exploiter's own decisions, and how its finished games went: of the opponent seats it met, how many it
    finished ahead of (a seat still without a place counts as behind)."""

    decisions: int = 0
    games: int = 0
    ahead: int = 0
    met: int = 0

    def add_game(self, places: np.ndarray, learner_seats: np.ndarray) -> None:
        self.games += 1
        mine = {int(s) for s in learner_seats}
        for seat in mine:
            for other in range(places.size):
                if other not in mine:
                    self.met += 1
                    self.ahead += int(places[seat] != 0 and (places[other] == 0 or places[seat] < places[other]))

    def merge(self, other: ExploiterResults) -> None:
        self.decisions += other.decisions
        self.games += other.games
        self.ahead += other.ahead
        self.met += other.met


def trainable_modules(config) -> list[str]:
    """The modules the learner trains (``policies_to_train``, main first): their seats are recorded."""
    trainable = config.policies_to_train
    if trainable is None or callable(trainable):
        raise ValueError("BatchedLudoEnvRunner needs policies_to_train as a list of module ids (build.py sets it)")
    return [MAIN, *(m for m in trainable if m != MAIN)]


def seat_players(specs: dict[str, str], seed: int = 0) -> dict[str, Any]:
    """League members that are no RLModule, as `policies.players` players by member name."""
    return {name: make_player(spec, seed) for name, spec in specs.items()}


def _actions_of(out: dict, explore: bool) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(actions, logits, log-probabilities) from a masked module's forward output; PPO samples (or takes the
    argmax when not exploring) from its logits, DQN's exploration already chose."""
    if Columns.ACTIONS in out:
        actions = out[Columns.ACTIONS]
        return (actions.numpy() if isinstance(actions, torch.Tensor) else np.asarray(actions)).astype(np.int64), \
            None, None
    logits = out[Columns.ACTION_DIST_INPUTS]
    if explore:
        actions = torch.distributions.Categorical(logits=logits).sample()
    else:
        actions = logits.argmax(dim=-1)
    logp = torch.log_softmax(logits, dim=-1).gather(-1, actions[:, None])[:, 0]
    return actions.numpy().astype(np.int64), logits.numpy(), logp.numpy()


class _Records:
    """The learners' decisions not yet shipped, as growing numpy columns (one row per decision). A module that acts
    through logits (PPO) also has its logits and log-probabilities kept; one that outputs actions (DQN) not."""

    def __init__(self, space, capacity: int = 16384):
        self._space = space
        self._with_logits: bool | None = None  # known at the first decision
        self.size = 0
        self._allocate(capacity)

    def _allocate(self, capacity: int) -> None:
        def grow(old, shape, dtype):
            new = np.zeros((capacity, *shape), dtype=dtype)
            if old is not None:
                new[: self.size] = old[: self.size]
            return new

        had = getattr(self, "chain", None) is not None
        self.obs = {k: grow(self.obs[k] if had else None, s.shape, s.dtype) for k, s in self._space.spaces.items()}
        self.chain = grow(self.chain if had else None, (), np.int64)
        self.action = grow(self.action if had else None, (), np.int64)
        self.reward = grow(self.reward if had else None, (), np.float64)
        self.logits = grow(self.logits if had else None, (ACTION_SPACE.n,), np.float32) if self._with_logits else None
        self.logp = grow(self.logp if had else None, (), np.float32) if self._with_logits else None
        self.capacity = capacity

    def add(self, chains, obs, actions, logits, logp) -> np.ndarray:
        n = chains.size
        if self._with_logits is None:
            self._with_logits = logits is not None
            self._allocate(self.capacity)
        if self.size + n > self.capacity:
            self._allocate(max(2 * self.capacity, self.size + n))
        at = slice(self.size, self.size + n)
        for k in self.obs:
            self.obs[k][at] = obs[k]
        self.chain[at] = chains
        self.action[at] = actions
        self.reward[at] = 0.0
        if self.logits is not None:
            self.logits[at] = logits
            self.logp[at] = logp
        self.size += n
        return np.arange(at.start, at.stop)

    def compact(self, keep: np.ndarray) -> np.ndarray:
        """Keep only rows `keep` (moved to the front, in order); returns old index -> new index."""
        remap = np.full(max(self.size, 1), NO_RECORD, dtype=np.int64)
        remap[keep] = np.arange(keep.size)
        columns = [*self.obs.values(), self.chain, self.action, self.reward]
        if self.logits is not None:
            columns += [self.logits, self.logp]
        for column in columns:
            column[: keep.size] = column[keep]
        self.size = keep.size
        return remap


class _Chains:
    """A learner's seat in one game: the game's key, the seat, the module, how many steps were shipped, and how
    it ended."""

    def __init__(self):
        self.owner: dict[int, tuple[str, int, str]] = {}
        self.shipped: dict[int, int] = {}
        self.done: dict[int, bool] = {}
        """Ended chains: True terminated, False truncated (the turn limit)."""
        self._next = 0

    def open(self, key: str, seat: int, module_id: str) -> int:
        chain = self._next
        self._next += 1
        self.owner[chain], self.shipped[chain] = (key, seat, module_id), 0
        return chain

    def close(self, chain: int, terminated: bool) -> None:
        self.done[int(chain)] = terminated

    def forget(self, chain: int) -> None:
        self.owner.pop(chain, None)
        self.shipped.pop(chain, None)
        self.done.pop(chain, None)
