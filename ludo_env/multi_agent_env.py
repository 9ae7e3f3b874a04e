"""`LudoMultiAgentEnv`: Ludo for 2-4 seats as an RLlib `MultiAgentEnv` (version 0).

Agents are ``seat_0`` .. ``seat_{n-1}``; seat 0 is the rules' first colour.
Only the seat to move gets an observation (a Dict of ``observations``,
``action_mask`` and ``state``; the action encoding and the mask convention are
in `ludo_env.core`). A seat's shaping reward (see `ludo_env.rewards`) arrives
with its next observation; when the game ends every seat that has played gets
its final reward and ``terminateds["__all__"]`` is True. A game past the turn
limit ends with ``truncateds["__all__"]`` instead, and no end pay. A step after either raises
`gymnasium.error.ResetNeeded` until `reset`.

Config (`ludo_env.config.EnvConfig`): ``variant``, ``players``, ``rules``,
``obs``, ``reward``, ``auto_forced_moves`` (default True: decisions with a single
legal token are played inside the env and counted in
``infos[seat]["forced_moves"]``), ``max_plies``, ``seed``. The seat that moves
first rotates from episode to episode. An illegal action is replaced by the
lowest legal token and counted in ``infos[seat]["illegal_actions"]``; with the
masked modules of `policies.modules` it never happens.

Many games per EnvRunner: set ``num_envs_per_env_runner`` (RLlib vectorises
multi-agent envs); each game steps through the numba engine.
"""
from __future__ import annotations

import numpy as np
from ray.rllib.env.multi_agent_env import MultiAgentEnv

from ludo_env.config import EnvConfig
from ludo_env.core import ACTION_SPACE, LudoGames, observation_space, seat_agent, step_after_end

VERSION = 0
ROW = np.zeros(1, dtype=np.int64)


class LudoMultiAgentEnv(MultiAgentEnv):
    metadata = {"render_modes": ["ansi"], "version": VERSION}

    def __init__(self, config: dict | None = None):
        super().__init__()
        self.config = EnvConfig.from_mapping(dict(config or {}))
        rules = self.config.build_rules()
        self.games = LudoGames(rules, 1, self.config.obs, self.config.build_reward(),
                               self.config.auto_forced_moves, self.config.max_plies)
        self.players = rules.players
        self.possible_agents = [seat_agent(s) for s in range(self.players)]
        self.agents = list(self.possible_agents)
        space = observation_space(self.config.obs)
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.action_spaces = {a: ACTION_SPACE for a in self.possible_agents}
        self._seeds = np.random.default_rng(self.config.seed)
        self._episodes = 0
        self._illegal = 0
        self._ended = True  # no game yet: step() needs reset() first

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._seeds = np.random.default_rng(seed)
        first = self._episodes % self.players
        self._episodes += 1
        self._illegal = 0
        self.games.reset(ROW, int(self._seeds.integers(2**63)), np.array([first]))
        self._ended = False
        return self._decision(), self._infos()

    def _mover(self) -> str:
        return seat_agent(int(self.games.movers(ROW)[0]))

    def _decision(self) -> dict:
        self.games.collect_decision_reward(ROW)  # a seat's first decision has nothing owed
        return {self._mover(): {k: v[0] for k, v in self.games.observe(ROW).items()}}

    def _infos(self, extra: dict | None = None) -> dict:
        info = {"forced_moves": int(self.games.forced_moves[0]), "illegal_actions": self._illegal}
        return {self._mover(): {**info, **(extra or {})}}

    def step(self, action_dict: dict):
        if self._ended:
            raise step_after_end()
        mover = self._mover()
        self._illegal += self.games.play(ROW, np.array([int(action_dict[mover])]))
        over, truncated = bool(self.games.over(ROW)[0]), bool(self.games.truncated(ROW)[0])
        if not (over or truncated):
            seat = int(self.games.movers(ROW)[0])
            paid = self.games.collect_decision_reward(ROW)[0]
            obs = {seat_agent(seat): {k: v[0] for k, v in self.games.observe(ROW).items()}}
            return obs, {seat_agent(seat): float(paid)}, {"__all__": False}, {"__all__": False}, self._infos()
        self._ended = True
        played = [s for s in range(self.players) if self.games.decided[0, s]]
        final = self.games.collect_end_rewards(0)
        rewards = {seat_agent(s): float(final[s]) for s in played}
        done = {seat_agent(s): True for s in played}
        places = self.games.places(0).tolist()
        info = {"forced_moves": int(self.games.forced_moves[0]), "illegal_actions": self._illegal, "places": places}
        infos = {seat_agent(s): dict(info) for s in played}
        terminateds = {**(done if over else {}), "__all__": over}
        truncateds = {**(done if truncated else {}), "__all__": truncated}
        return {}, rewards, terminateds, truncateds, infos

    def render(self) -> str:
        from ludo_env.engine.game import Game

        return str(Game.from_state(self.games.rules, self.games.states[0]))
