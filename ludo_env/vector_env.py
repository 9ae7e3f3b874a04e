"""`LudoVectorEnv`: many single-agent games stepped together, the numba engine doing the batch work.

``gymnasium.make_vec("ludo_env/Ludo-v0", num_envs=256)`` (after ``import ludo_env.gym_env``) plays against three
random opponents; with other opponents:

```python
import gymnasium, ludo_env.gym_env
from policies.envs import build_opponent
envs = gymnasium.make_vec("ludo_env/Ludo-v0", num_envs=256, vectorization_mode="vector_entry_point",
                          opponents=["hybrid", "random", "random"], opponent_factory=build_opponent)
```

(or `policies.envs.make_vector_env(num_envs=256, opponents=[...])`).

The same game as `ludo_env.gym_env.LudoEnv` (same settings, spaces per game,
rewards, seat rotation and illegal-action rule), for ``num_envs`` games at
once: one call encodes every observation, plays every learner move, and asks
each opponent for its moves in all the games where it is to move, one batch
per opponent. Observations are the Dict space batched (leading axis
``num_envs``); actions are one token per game.

Autoreset is gymnasium's ``SAME_STEP``: a game that ends is restarted within
the same `step`; the returned observation is the new game's first, the
ending one is in ``info["final_obs"]`` (where ``info["_final_obs"]``) and its
places in ``info["places"]``. ``reset(seed=...)`` takes one int for the batch or, as
gymnasium's vector API does, a list of one seed (or None) per game: each game then draws its dice, for this
episode and the ones after, from its own seed. ``info`` always holds per-game ``seat``,
``forced_moves`` and ``illegal_action`` arrays. Version 0.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ludo_env.core import ACTION_SPACE, LudoGames, observation_space
from ludo_env.engine.layout import EV_ILLEGAL_REPLACED
from ludo_env.gym_env import OpponentFactory, make_opponents, single_agent_settings


class LudoVectorEnv(VectorEnv):
    metadata = {"render_modes": [], "autoreset_mode": AutoresetMode.SAME_STEP, "version": 0}

    def __init__(
        self,
        num_envs: int = 16,
        variant: str = "classic",
        opponents: Sequence[Any] = ("random", "random", "random"),
        opponent_factory: OpponentFactory | None = None,
        obs: str = "egocentric",
        reward: Any = "sparse",
        seat: int | None = None,
        auto_forced_moves: bool = True,
        max_plies: int | None = None,
        **rule_overrides,
    ):
        if num_envs < 1:
            raise ValueError(f"num_envs={num_envs} is not allowed: use 1 or more games")
        opponents = list(opponents)
        self.config, rules = single_agent_settings(variant, opponents, obs, reward, seat, auto_forced_moves,
                                                   max_plies, rule_overrides)
        self.num_envs = num_envs
        self.players = rules.players
        self.games = LudoGames(rules, num_envs, obs, self.config.build_reward(), auto_forced_moves,
                               self.config.max_plies)
        self.fixed_seat = seat
        self._opponent_specs = opponents
        self._opponent_factory = opponent_factory
        self.opponents = make_opponents(opponents, 0, opponent_factory, rules)
        self.single_observation_space = observation_space(obs)
        self.single_action_space = ACTION_SPACE
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.seats = np.zeros(num_envs, dtype=np.int64)
        self._episodes = np.zeros(num_envs, dtype=np.int64)
        self._seeds = np.random.default_rng()
        self._game_seeds: list[np.random.Generator] | None = None  # one per game after reset(seed=[...])

    # ------------------------------------------------------------------ games
    def _start(self, rows: np.ndarray) -> None:
        """New games in `rows`, played up to the learner's first decision (a game it never reaches is redrawn)."""
        started = rows
        while rows.size:
            self.seats[rows] = self.fixed_seat if self.fixed_seat is not None else self._episodes[rows] % self.players
            self._episodes[rows] += 1
            if self._game_seeds is None:
                self.games.reset(rows, int(self._seeds.integers(2**63)), np.zeros(rows.size, dtype=np.int64))
            else:  # each game's dice from its own seed, as gymnasium's per-env seeds mean
                for row in rows:
                    self.games.reset(row[None], int(self._game_seeds[row].integers(2**63)), np.zeros(1, np.int64))
            self._play_opponents()
            rows = rows[self._stopped(rows)]
        self.games.collect_decision_reward(started)

    def _stopped(self, rows) -> np.ndarray:
        return self.games.over(rows) | self.games.truncated(rows)

    def _play_opponents(self) -> None:
        """Every opponent moves, batched over the games where it is up, until each game waits on the learner."""
        games = self.games
        everyone = np.arange(self.num_envs)
        while True:
            movers = games.movers()
            waiting = ~self._stopped(everyone) & (movers != self.seats)
            if not waiting.any():
                return
            opponent = (movers - self.seats) % self.players - 1
            for k, player in enumerate(self.opponents):
                rows = np.flatnonzero(waiting & (opponent == k))
                if rows.size:
                    games.play(rows, player.act(games.states[rows], games.tab, games.masks[rows]))

    # -------------------------------------------------------------- gymnasium
    def reset(self, *, seed: int | Sequence[int | None] | None = None, options: dict | None = None):
        """`seed`: one int for the whole batch, or (gymnasium's vector API) a list of one seed or None per game."""
        if isinstance(seed, (list, tuple, np.ndarray)):
            self._seed_games(list(seed))
        elif seed is not None:
            self._seeds = np.random.default_rng(seed)
            self._game_seeds = None
            self._episodes[:] = 0
            self.opponents = make_opponents(self._opponent_specs, seed, self._opponent_factory, self.games.rules)
        self._start(np.arange(self.num_envs))
        return self._observe(), self._info(np.zeros(self.num_envs, dtype=bool))

    def _seed_games(self, seeds: list) -> None:
        if len(seeds) != self.num_envs:
            raise ValueError(f"reset(seed=[...]) got {len(seeds)} seeds for {self.num_envs} games: "
                             "give one int (or None) per game, or a single int")
        if not all(s is None or (isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 0)
                   for s in seeds):
            raise ValueError(f"reset(seed=[...]) takes ints >= 0 or None, one per game; got {seeds!r}")
        # None entries draw fresh entropy, as one unseeded game would.
        self._game_seeds = [np.random.default_rng(None if s is None else int(s)) for s in seeds]
        self._episodes[:] = 0
        if all(s is not None for s in seeds):
            # The opponents play every game in one batch, so their own randomness follows the whole list.
            opponent_seed = int(np.random.SeedSequence([int(s) for s in seeds]).generate_state(1)[0])
            self.opponents = make_opponents(self._opponent_specs, opponent_seed, self._opponent_factory,
                                            self.games.rules)

    def step(self, actions):
        games = self.games
        everyone = np.arange(self.num_envs)
        games.play(everyone, np.asarray(actions, dtype=np.int64).reshape(self.num_envs))
        illegal = (games.events & EV_ILLEGAL_REPLACED) != 0
        self._play_opponents()
        terminated, truncated = games.over(everyone), games.truncated(everyone)
        ended = terminated | truncated
        rewards = np.zeros(self.num_envs)
        playing = np.flatnonzero(~ended)
        rewards[playing] = games.collect_decision_reward(playing)
        places = np.zeros((self.num_envs, self.players), dtype=np.int64)
        for b in np.flatnonzero(ended):
            rewards[b] = games.collect_end_rewards(b)[self.seats[b]]
            places[b] = games.places(b)
        final_obs = self._observe() if ended.any() else None
        info = self._info(illegal)
        if ended.any():
            info["final_obs"] = np.array([{k: v[b] for k, v in final_obs.items()} if ended[b] else None
                                          for b in everyone], dtype=object)
            info["_final_obs"] = ended
            info["places"], info["_places"] = places, ended
            info["final_seat"] = self.seats.copy()
            self._start(np.flatnonzero(ended))
            info["seat"] = self.seats.copy()
        return self._observe(), rewards, terminated, truncated, info

    def _observe(self) -> dict[str, np.ndarray]:
        obs = self.games.observe(np.arange(self.num_envs))
        obs["action_mask"][self._stopped(np.arange(self.num_envs))] = 0
        return obs

    def _info(self, illegal: np.ndarray) -> dict[str, np.ndarray]:
        return {"seat": self.seats.copy(), "forced_moves": self.games.forced_moves.copy(), "illegal_action": illegal}


__all__ = ["LudoVectorEnv"]
