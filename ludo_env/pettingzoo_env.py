"""`LudoAEC`: Ludo as a PettingZoo AEC env (optional extra: ``pip install -e .[pettingzoo]``).

Agents ``seat_0`` .. ``seat_{n-1}`` act in turn; ``agent_selection`` is the seat
to move. ``observe(agent)`` gives that seat's view (the Dict of
`ludo_env.core.observation_space`, in the agent's own frame); its
``action_mask`` is all zero unless the agent is to move. Actions are token
indices 0..3 (see `ludo_env.core`). Rewards follow `ludo_env.rewards`: a
seat's shaping is paid when it is next to move, the end pay when the game
ends, after which every agent is terminated (or truncated at the turn limit)
and leaves with ``step(None)``; a step once all have left raises
`gymnasium.error.ResetNeeded` until `reset`. Settings are those of
`ludo_env.config.EnvConfig` as keyword arguments. Version 0.
"""
from __future__ import annotations

import numpy as np
from pettingzoo import AECEnv

from ludo_env.config import EnvConfig
from ludo_env.core import ACTION_SPACE, LudoGames, observation_space, seat_agent, step_after_end
from ludo_env.engine.layout import CURRENT, DIE
from ludo_env.observations import encode
from ludo_env.rules import MAX_TOKENS

ROW = np.zeros(1, dtype=np.int64)


class LudoAEC(AECEnv):
    metadata = {"name": "ludo_v0", "render_modes": ["ansi"], "is_parallelizable": False}

    def __init__(self, render_mode: str | None = None, **settings):
        super().__init__()
        self.config = EnvConfig.from_mapping(settings)
        rules = self.config.build_rules()
        self.games = LudoGames(rules, 1, self.config.obs, self.config.build_reward(),
                               self.config.auto_forced_moves, self.config.max_plies)
        self.players = rules.players
        self.possible_agents = [seat_agent(s) for s in range(self.players)]
        space = observation_space(self.config.obs)
        self.observation_spaces = {a: space for a in self.possible_agents}
        self.action_spaces = {a: ACTION_SPACE for a in self.possible_agents}
        self.render_mode = render_mode
        self._seeds = np.random.default_rng(self.config.seed)
        self._episodes = 0

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self._seeds = np.random.default_rng(seed)
        first = self._episodes % self.players
        self._episodes += 1
        self.games.reset(ROW, int(self._seeds.integers(2**63)), np.array([first]))
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self.infos = {a: {} for a in self.agents}
        self._hand_over()

    def _hand_over(self) -> None:
        """After a move: pay the next mover what it is owed, or close the game for everyone."""
        games = self.games
        over, truncated = bool(games.over(ROW)[0]), bool(games.truncated(ROW)[0])
        if over or truncated:
            final = games.collect_end_rewards(0)
            places = games.places(0).tolist()
            for s, agent in enumerate(self.possible_agents):
                self.rewards[agent] = float(final[s])
                self.terminations[agent] = over
                self.truncations[agent] = truncated
                self.infos[agent] = {"places": places, "forced_moves": int(games.forced_moves[0])}
            self.agent_selection = self.agents[0]
        else:
            mover = seat_agent(int(games.movers(ROW)[0]))
            self.rewards[mover] = float(games.collect_decision_reward(ROW)[0])
            self.infos[mover] = {"forced_moves": int(games.forced_moves[0])}
            self.agent_selection = mover
        self._accumulate_rewards()

    def observe(self, agent: str):
        seat = self.possible_agents.index(agent)
        state = self.games.states[0].copy()
        to_move = state[CURRENT] == seat and not (self.games.over(ROW)[0] or self.games.truncated(ROW)[0])
        if not to_move:
            state[CURRENT], state[DIE] = seat, 0  # the seat's own frame, with no decision pending
        mask = self.games.masks[0].copy() if to_move else np.zeros(MAX_TOKENS, dtype=np.int8)
        return {
            "observations": encode(self.config.obs, state[None], self.games.tab)[0],
            "action_mask": mask,
            "state": self.games.states[0].astype(np.int32),
        }

    def step(self, action):
        if not getattr(self, "agents", None):  # every agent has left the ended game (or none was reset)
            raise step_after_end()
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        for a in self.agents:
            self.rewards[a] = 0.0
        self.games.play(ROW, np.array([int(action)], dtype=np.int64))
        self._hand_over()

    def render(self):
        from ludo_env.engine.game import Game

        return str(Game.from_state(self.games.rules, self.games.states[0]))

    def close(self):
        pass


def env(**settings) -> LudoAEC:
    return LudoAEC(**settings)
