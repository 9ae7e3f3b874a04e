"""`LudoEnv`: single-agent Ludo for gymnasium, registered as ``ludo_env/Ludo-v0``.

Import this module (it registers the id), then ``gymnasium.make("ludo_env/Ludo-v0")`` plays classic Ludo against
three random opponents; with other opponents:

```python
from policies.envs import build_opponent
env = gymnasium.make("ludo_env/Ludo-v0", variant="classic", opponents=["hybrid", "random", "random"],
                     opponent_factory=build_opponent, obs="egocentric", reward="sparse")
```

or build it with `policies.envs.make_env` (the same keywords; it passes `build_opponent`).

The learner plays one seat; the other seats are played by `opponents`, in
turn order after the learner: objects with ``act(states, tab, masks)``, or
specs that ``opponent_factory(spec, seed, rules)`` turns into such players
(with `policies.envs.build_opponent`: seed bot names, ``py:package.module:Class``
bots, ``ckpt:<path>`` policies, each learned one checked against the rules). The env layer does not import the agents
layer, so the caller passes the factory in; without one, ``"random"`` is the engine's
`ludo_env.engine.batch.RandomPlayer` (the default, the same moves as the ``random`` bot's). ``len(opponents) + 1``
is the number of players.
``seat`` fixes the learner's seat; by default it rotates from episode to
episode (seat 0 always rolls first), so the learner sees every seat.

Spaces: observation is a Dict of ``observations`` (float32, the ``obs``
encoder, learner's frame), ``action_mask`` (int8, 4) and ``state`` (int32
engine row); the action is the token 0..3 to move (encoding and mask
convention in `ludo_env.core`). An illegal action is replaced by the lowest
legal token and reported as ``info["illegal_action"]``.

Rewards: ``reward`` is a kind name or a mapping of `ludo_env.rewards.RewardConfig`
fields; shaping between the learner's decisions is paid on its next step, the
end pay when the game ends (``terminated``). The turn limit ``max_plies``
truncates; a step after either raises `gymnasium.error.ResetNeeded` until `reset` (the end is paid once).
``info`` holds ``forced_moves`` (decisions with one legal token, any seat's, the env played by itself this
game), ``seat`` and, at the end, ``places``.
Other keyword arguments are rule overrides (``bonus_roll_on_six=False``).
Version 0.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from ludo_env.config import EnvConfig
from ludo_env.core import ACTION_SPACE, LudoGames, observation_space, step_after_end
from ludo_env.engine.batch import RandomPlayer
from ludo_env.engine.layout import EV_ILLEGAL_REPLACED
from ludo_env.rules import MAX_TOKENS

ROW = np.zeros(1, dtype=np.int64)


OpponentFactory = Callable[[Any, int, Any], Any]
"""``(spec, seed, rules) -> player`` with ``act(states, tab, masks)``; it also gets the players passed in, so it
can check a learned one fits `rules` (`policies.envs.build_opponent` does both)."""


def make_opponent(spec: Any, seed: int, factory: OpponentFactory | None, rules):
    """A batched player: what `factory` makes of `spec`; without a factory, `spec` itself if it has `act`, or the
    engine's `RandomPlayer` for ``"random"`` (the default opponents, so the env plays with no agents layer)."""
    if factory is not None:
        return factory(spec, seed, rules)
    if hasattr(spec, "act"):
        return spec
    if isinstance(spec, str) and spec == RandomPlayer.name:
        return RandomPlayer(seed)
    raise ValueError(f"opponent {spec!r} is not a player (no act method): without opponent_factory the env "
                     f"plays '{RandomPlayer.name}' or players; pass opponent_factory=policies.envs.build_opponent "
                     "to build bots, py:, ckpt: and other specs")


def make_opponents(specs: Sequence[Any], seed: int, factory: OpponentFactory | None, rules) -> list:
    """One player per opponent spec; a seeded reset rebuilds them so their own randomness replays too."""
    return [make_opponent(spec, seed * len(specs) + i + 1, factory, rules) for i, spec in enumerate(specs)]


def single_agent_settings(variant, opponents, obs, reward, seat, auto_forced_moves, max_plies, rule_overrides):
    """The `EnvConfig` and `Rules` of a learner against `opponents`, the learner's seat checked."""
    settings = {"variant": variant, "players": len(opponents) + 1, "rules": rule_overrides, "obs": obs,
                "reward": reward, "auto_forced_moves": auto_forced_moves}
    if max_plies is not None:
        settings["max_plies"] = max_plies
    config = EnvConfig.from_mapping(settings)
    rules = config.build_rules()
    if seat is not None and not 0 <= seat < rules.players:
        raise ValueError(f"seat={seat} is not a seat: choose 0..{rules.players - 1}")
    return config, rules


class LudoEnv(gym.Env):
    metadata = {"render_modes": ["ansi"], "version": 0}

    def __init__(
        self,
        variant: str = "classic",
        opponents: Sequence[Any] = ("random", "random", "random"),
        opponent_factory: OpponentFactory | None = None,
        obs: str = "egocentric",
        reward: Any = "sparse",
        seat: int | None = None,
        auto_forced_moves: bool = True,
        max_plies: int | None = None,
        render_mode: str | None = None,
        **rule_overrides,
    ):
        opponents = list(opponents)
        self.config, rules = single_agent_settings(variant, opponents, obs, reward, seat, auto_forced_moves,
                                                   max_plies, rule_overrides)
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode={render_mode!r} is not supported: use 'ansi' or None")
        self.render_mode = render_mode
        self.games = LudoGames(rules, 1, obs, self.config.build_reward(), auto_forced_moves, self.config.max_plies)
        self.players = rules.players
        self.fixed_seat = seat
        self._opponent_specs = opponents
        self._opponent_factory = opponent_factory
        self.opponents = make_opponents(opponents, 0, opponent_factory, rules)
        self.observation_space = observation_space(obs)
        self.action_space = ACTION_SPACE
        self.seat = 0 if seat is None else seat
        self._episodes = 0
        self._ended = True  # no game yet: step() needs reset() first

    def _opponent_of(self, seat: int):
        return self.opponents[(seat - self.seat) % self.players - 1]

    def _play_opponents(self) -> None:
        """Opponents move until the learner faces a decision or the game stops."""
        games = self.games
        while not (games.over(ROW)[0] or games.truncated(ROW)[0]):
            mover = int(games.movers(ROW)[0])
            if mover == self.seat:
                return
            choice = self._opponent_of(mover).act(games.states[ROW], games.tab, games.masks[ROW])
            games.play(ROW, np.asarray(choice, dtype=np.int64).reshape(1))

    def _observation(self) -> dict[str, np.ndarray]:
        obs = {k: v[0] for k, v in self.games.observe(ROW).items()}
        if self.games.over(ROW)[0] or self.games.truncated(ROW)[0]:
            obs["action_mask"] = np.zeros(MAX_TOKENS, dtype=np.int8)
        return obs

    def _info(self) -> dict:
        info = {"seat": self.seat, "forced_moves": int(self.games.forced_moves[0])}
        if self.games.over(ROW)[0]:
            info["places"] = self.games.places(0).tolist()
        return info

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if seed is not None:
            # A seeded reset replays exactly: seat rotation and the opponents' own randomness restart too.
            self._episodes = 0
            self.opponents = make_opponents(self._opponent_specs, seed, self._opponent_factory, self.games.rules)
        while True:
            self.seat = self.fixed_seat if self.fixed_seat is not None else self._episodes % self.players
            self._episodes += 1
            self.games.reset(ROW, int(self.np_random.integers(2**63)), np.zeros(1, dtype=np.int64))
            self._play_opponents()
            if not (self.games.over(ROW)[0] or self.games.truncated(ROW)[0]):
                break  # (a game the learner never gets to play is drawn again)
        self.games.collect_decision_reward(ROW)
        self._ended = False
        return self._observation(), self._info()

    def step(self, action):
        if self._ended:
            raise step_after_end()
        self.games.play(ROW, np.array([int(action)], dtype=np.int64))
        illegal = bool(self.games.events[0] & EV_ILLEGAL_REPLACED)
        self._play_opponents()
        terminated, truncated = bool(self.games.over(ROW)[0]), bool(self.games.truncated(ROW)[0])
        if terminated or truncated:
            self._ended = True
            reward = self.games.collect_end_rewards(0)[self.seat]
        else:
            reward = self.games.collect_decision_reward(ROW)[0]
        info = self._info()
        info["illegal_action"] = illegal
        return self._observation(), float(reward), terminated, truncated, info

    def render(self):
        from ludo_env.engine.game import Game

        return str(Game.from_state(self.games.rules, self.games.states[0]))


def register() -> None:
    if "ludo_env/Ludo-v0" not in gym.registry:
        gym.register(id="ludo_env/Ludo-v0", entry_point="ludo_env.gym_env:LudoEnv",
                     vector_entry_point="ludo_env.vector_env:LudoVectorEnv")

register()
