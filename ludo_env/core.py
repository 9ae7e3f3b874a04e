"""`LudoGames`: a batch of games with observations, rewards and forced moves, shared by every env.

The RLlib, gymnasium and PettingZoo envs are thin views over this class; the
numba engine does the per-game work. One decision is one token choice by the
seat to move (``state[CURRENT]``).

Action encoding (every env, every module): action ``t`` in ``0..3`` moves token
``t`` of the mover by the pending die. ``action_mask[t]`` is 1.0 when that move
is legal; at least one entry is 1 whenever an observation is given (rolls with
no legal move are played by the engine). Variants with fewer than 4 tokens never
set the mask for the missing ones.

Observation of the seat to move (`observation_space`): a Dict of
``observations`` (float32, the configured encoder, mover's frame),
``action_mask`` (int8, 4: gymnasium's mask dtype) and ``state`` (int32, the raw engine row, absolute
seats; it lets scripted bots run as RLModules and is not meant as a network
input).

Forced moves: with ``auto_forced_moves`` a decision with exactly one legal
token is played at once (rolls with no legal move never reach a seat), and
``forced_moves[b]`` counts them. A turn limit (``max_plies`` die rolls)
truncates runaway games.
"""
from __future__ import annotations

import gymnasium as gym
import numpy as np

from ludo_env.engine import compile_rules, new_batch
from ludo_env.engine.batch import roll_until_decision
from ludo_env.engine.jit import kernel
from ludo_env.engine.kernels import ILLEGAL, apply_move, first_legal, init_state, move_target, token_index
from ludo_env.engine.layout import CURRENT, DIE, EV_ILLEGAL_REPLACED, OVER, PLACES, PLY, R_HOME, STATE_LEN
from ludo_env.engine.rng import streams
from ludo_env.observations import encode, obs_dim
from ludo_env.rewards import RewardConfig, move_reward, potentials
from ludo_env.rules import MAX_PLAYERS, MAX_TOKENS, Rules

DEFAULT_MAX_PLIES = 2000  # about 3x the longest of 20,000 random classic games (740 rolls)


def observation_space(obs: str) -> gym.spaces.Dict:
    return gym.spaces.Dict(
        {
            "observations": gym.spaces.Box(-np.inf, np.inf, (obs_dim(obs),), np.float32),
            "action_mask": gym.spaces.Box(0, 1, (MAX_TOKENS,), np.int8),
            "state": gym.spaces.Box(-2, np.iinfo(np.int16).max, (STATE_LEN,), np.int32),
        }
    )


ACTION_SPACE = gym.spaces.Discrete(MAX_TOKENS)


def step_after_end() -> gym.error.ResetNeeded:
    """The error every env raises on a step after its game ended: stepping on would pay the end reward again."""
    return gym.error.ResetNeeded("step() after the game ended (terminated or truncated): call reset() first")


def seat_agent(seat: int) -> str:
    """The agent id of a seat in the multi-agent envs (RLlib's and PettingZoo's): ``seat_<n>``."""
    return f"seat_{seat}"


@kernel
def _count(mask):
    n = 0
    for t in range(MAX_TOKENS):
        n += mask[t]
    return n


@kernel
def _play(state, tab, rng, stream, token, mask, weights, pending):
    """One move by the mover (an illegal token is replaced by the lowest legal one); roll to the next decision."""
    seat = state[CURRENT]
    events = 0
    if token < 0 or token >= MAX_TOKENS or move_target(state, tab, seat, token, state[DIE]) == ILLEGAL:
        token = first_legal(state, tab)
        events |= EV_ILLEGAL_REPLACED
    moved = apply_move(state, tab, token)
    pending[seat] += move_reward(moved, state[token_index(seat, token)], tab[R_HOME], weights)
    events |= moved | roll_until_decision(state, tab, rng, stream, mask)
    return events


@kernel
def advance(states, tab, rng, rows, choices, masks, weights, auto_forced, max_plies, pending, forced, events):
    """Play `choices[i]` in game `rows[i]`, then any forced moves; stop at a real decision, the end, or the turn limit."""
    for i in range(rows.shape[0]):
        b = rows[i]
        s = states[b]
        ev = _play(s, tab, rng, b, choices[i], masks[b], weights, pending[b])
        while auto_forced and s[OVER] == 0 and s[PLY] < max_plies and _count(masks[b]) == 1:
            ev |= _play(s, tab, rng, b, first_legal(s, tab), masks[b], weights, pending[b])
            forced[b] += 1
        events[b] = ev


@kernel
def _restart(states, tab, rng, rows, first_seats, masks, weights, auto_forced, max_plies, pending, forced):
    for i in range(rows.shape[0]):
        b = rows[i]
        init_state(states[b], tab, first_seats[i])
        roll_until_decision(states[b], tab, rng, b, masks[b])
        while auto_forced and states[b, OVER] == 0 and _count(masks[b]) == 1:
            _play(states[b], tab, rng, b, first_legal(states[b], tab), masks[b], weights, pending[b])
            forced[b] += 1


class LudoGames:
    """`batch` games under one rule set, observation encoder and reward; see the module docstring."""

    def __init__(
        self,
        rules: Rules,
        batch: int = 1,
        obs: str = "egocentric",
        reward: RewardConfig | None = None,
        auto_forced_moves: bool = True,
        max_plies: int = DEFAULT_MAX_PLIES,
    ):
        obs_dim(obs)  # fails early, one line, on an unknown encoder
        if max_plies < 1:
            raise ValueError(f"max_plies={max_plies} is not allowed: use a positive number of die rolls")
        self.rules = rules
        self.tab = compile_rules(rules)
        self.players = rules.players
        self.batch = batch
        self.obs_name = obs
        self.reward = reward or RewardConfig()
        self.auto_forced_moves = auto_forced_moves
        self.max_plies = max_plies
        self._weights = self.reward.dense_weights()
        self.states, self.rng = new_batch(self.tab, batch, 0)
        self.masks = np.zeros((batch, MAX_TOKENS), dtype=np.int8)
        self.events = np.zeros(batch, dtype=np.int32)
        self.pending = np.zeros((batch, MAX_PLAYERS))  # shaping earned since each seat's last decision
        self.last_phi = np.zeros((batch, MAX_PLAYERS))
        self.decided = np.zeros((batch, MAX_PLAYERS), dtype=bool)  # seat has been given a decision
        self.forced_moves = np.zeros(batch, dtype=np.int64)

    # ------------------------------------------------------------ lifecycle
    def reset(self, rows: np.ndarray, seed: int, first_seats: np.ndarray | None = None) -> None:
        """Start new games in `rows`; game `rows[i]` rolls dice from stream i of `seed`."""
        rows = np.asarray(rows, dtype=np.int64)
        self.rng[rows] = streams(seed, len(rows))
        seats = np.zeros(len(rows), dtype=np.int64) if first_seats is None else np.asarray(first_seats, dtype=np.int64)
        self.pending[rows] = 0.0
        self.decided[rows] = False
        self.forced_moves[rows] = 0
        _restart(self.states, self.tab, self.rng, rows, seats, self.masks, self._weights,
                 self.auto_forced_moves, self.max_plies, self.pending, self.forced_moves)

    def play(self, rows: np.ndarray, choices: np.ndarray) -> np.ndarray:
        """Apply one choice per row (then forced moves); returns how many choices were illegal (and replaced)."""
        rows = np.asarray(rows, dtype=np.int64)
        advance(self.states, self.tab, self.rng, rows, np.asarray(choices, dtype=np.int64), self.masks,
                self._weights, self.auto_forced_moves, self.max_plies, self.pending, self.forced_moves, self.events)
        return int(np.count_nonzero(self.events[rows] & EV_ILLEGAL_REPLACED))

    # --------------------------------------------------------------- reading
    def over(self, rows=slice(None)) -> np.ndarray:
        return self.states[rows, OVER] != 0

    def truncated(self, rows=slice(None)) -> np.ndarray:
        return (self.states[rows, OVER] == 0) & (self.states[rows, PLY] >= self.max_plies)

    def movers(self, rows=slice(None)) -> np.ndarray:
        return self.states[rows, CURRENT].astype(np.int64)

    def places(self, row: int) -> np.ndarray:
        return self.states[row, PLACES : PLACES + self.players].copy()

    def observe(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """Observation Dicts (batched) of the movers of `rows`."""
        states = self.states[rows]
        return {
            "observations": encode(self.obs_name, states, self.tab),
            "action_mask": self.masks[rows].copy(),
            "state": states.astype(np.int32),
        }

    def collect_decision_reward(self, rows: np.ndarray) -> np.ndarray:
        """Reward owed to each row's mover now that it faces a decision; marks the decision."""
        rows = np.asarray(rows, dtype=np.int64)
        seats = self.movers(rows)
        paid = self.pending[rows, seats].copy()
        if self.reward.shaped_by_potential:
            # Only the rows asked about, and only for this reward: this runs on every env step.
            every_seat = np.zeros((rows.size, MAX_PLAYERS))
            potentials(self.states[rows], self.tab, every_seat)
            phi = every_seat[np.arange(rows.size), seats]
            was = self.decided[rows, seats]
            paid += np.where(was, self.reward.coef * (self.reward.gamma * phi - self.last_phi[rows, seats]), 0.0)
            self.last_phi[rows, seats] = phi
        self.pending[rows, seats] = 0.0
        self.decided[rows, seats] = True
        return paid

    def collect_end_rewards(self, row: int) -> np.ndarray:
        """Every seat's final reward: pending shaping, closing potential term (phi = 0), and the end pay."""
        paid = self.pending[row, : self.players].copy()
        if self.reward.shaped_by_potential:
            paid -= np.where(self.decided[row, : self.players], self.reward.coef * self.last_phi[row, : self.players], 0.0)
        if self.states[row, OVER]:
            paid += self.reward.end_rewards(self.places(row), self.players)
        self.pending[row] = 0.0
        return paid

