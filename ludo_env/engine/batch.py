"""Batched kernels: many games per call, each with its own dice stream.

Every game in a batch is always either over or waiting for a decision with its
die rolled: rolls that forfeit or have no legal move are resolved inside the
kernels. `step_batch` applies one token choice per game; `play_random` plays
whole games with uniformly random legal moves (the benchmark and the test
workhorse), with the generic kernel or, `specialised=True`, one compiled for
its rules table (`specialised_play_random`).

Fast-path contract: choices are not validated. A choice that is out of range or
illegal is replaced by the mover's lowest legal token and the game's event word
gets `EV_ILLEGAL_REPLACED`, so a buggy policy is visible but never corrupts a
game. Use `ludo_env.engine.Game` for checked, error-raising play.
"""
from __future__ import annotations

import functools

import numpy as np

from ludo_env.engine import rng as rngmod
from ludo_env.engine.jit import inline_kernel, kernel
from ludo_env.engine.kernels import (
    ILLEGAL,
    apply_move,
    first_legal,
    init_state,
    legal_mask,
    move_target,
    set_die,
)
from ludo_env.engine.layout import (
    CURRENT,
    DIE,
    EV_ILLEGAL_REPLACED,
    OVER,
    PLY,
    R_PLAYERS,
    STATE_DTYPE,
    STATE_LEN,
)
from ludo_env.rules import MAX_TOKENS


@inline_kernel
def roll_until_decision(state, tab, rng, stream, mask):
    """Roll until a decision is pending (its legal tokens in `mask`) or the game ends; OR of the roll events."""
    events = 0
    while state[OVER] == 0 and state[DIE] == 0:
        events |= set_die(state, tab, rngmod.die(rng, stream), mask)
    return events


@kernel
def reset_batch(states, tab, rng, first_seats, masks):
    """Start every game afresh (seat `first_seats[b]` to move), roll its first decision, fill `masks[b]`."""
    for b in range(states.shape[0]):
        init_state(states[b], tab, first_seats[b])
        roll_until_decision(states[b], tab, rng, b, masks[b])


def new_batch(tab: np.ndarray, batch: int, seed: int, first_seats: np.ndarray | int = 0):
    """`(states, rng)` for `batch` new games, each already waiting on its first decision.

    `first_seats` is one seat for all games or one per game. Game b's dice come
    from stream b of `seed`, so it replays the same in any batch size.
    """
    players = int(tab[R_PLAYERS])
    seats = np.broadcast_to(np.asarray(first_seats, dtype=np.int64), (batch,))
    if batch and (seats.min() < 0 or seats.max() >= players):
        raise ValueError(f"first seat {int(seats.max())} is not a seat: choose 0..{players - 1}")
    states = np.empty((batch, STATE_LEN), dtype=STATE_DTYPE)
    rng = rngmod.streams(seed, batch)
    reset_batch(states, tab, rng, np.ascontiguousarray(seats), np.zeros((batch, MAX_TOKENS), dtype=np.int8))
    return states, rng


@inline_kernel
def random_legal(mask, rng, stream):
    """A uniformly random token among those set in `mask` (at least one), drawn from `stream`."""
    n_legal = 0
    for t in range(MAX_TOKENS):
        n_legal += mask[t]
    pick = rngmod.below(rng, stream, n_legal)
    # The pick-th legal token, chosen without a data-dependent branch (they mispredict on random masks).
    chosen = -1
    for t in range(MAX_TOKENS):
        legal = mask[t] != 0
        chosen = t if legal & (pick == 0) else chosen
        pick -= legal
    return chosen


@kernel
def random_choices(masks, rng, out):
    """`out[b]`: a uniformly random token among those set in `masks[b]`, drawn from stream b of `rng`."""
    for b in range(masks.shape[0]):
        out[b] = random_legal(masks[b], rng, b)


class RandomPlayer:
    """A uniformly random legal token per game: the player the envs' default opponents are, so an env needs no
    agents to play. Batched as every player is (``act(states, tab, masks)``); row b of a call draws from stream b
    of `seed`, as `policies.bots.Bot` draws for its ``random`` bot, so both play the same moves."""

    name = "random"

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self._rng = rngmod.streams(seed, 0)

    def act(self, states: np.ndarray, tab: np.ndarray, masks: np.ndarray) -> np.ndarray:
        batch = masks.shape[0]
        self._rng = rngmod.extend_streams(self._rng, self.seed, batch)
        out = np.empty(batch, dtype=np.int64)
        random_choices(np.ascontiguousarray(masks, dtype=np.int8), self._rng, out)
        return out

    def __repr__(self) -> str:
        return f"RandomPlayer(seed={self.seed})"


@kernel
def legal_masks(states, tab, out):
    """`out[b, t]` = 1 if token t is legal in game b (all 0 for finished games)."""
    for b in range(states.shape[0]):
        legal_mask(states[b], tab, out[b])


@kernel
def step_batch(states, tab, rng, choices, events, masks):
    """Apply `choices[b]` in every unfinished game, roll on to its next decision, and fill `masks[b]`."""
    for b in range(states.shape[0]):
        s = states[b]
        if s[OVER]:
            events[b] = 0
            masks[b, :] = 0
            continue
        ev = 0
        t = choices[b]
        if t < 0 or t >= MAX_TOKENS or move_target(s, tab, s[CURRENT], t, s[DIE]) == ILLEGAL:
            t = first_legal(s, tab)
            ev |= EV_ILLEGAL_REPLACED
        ev |= apply_move(s, tab, t)
        ev |= roll_until_decision(s, tab, rng, b, masks[b])
        if s[OVER]:
            masks[b, :] = 0
        events[b] = ev


def play_random(states: np.ndarray, tab: np.ndarray, rng: np.ndarray, max_plies: int = 10_000, *,
                specialised: bool = False) -> np.ndarray:
    """Play every game of the batch to its end with uniformly random legal moves.

    Returns the number of token moves made per game. A game still running after
    `max_plies` rolls is left as it is (``state[OVER] == 0``): truncated.
    `specialised` plays with a kernel compiled for this one rules table
    (`specialised_play_random`): the same games, about a fifth faster, after a
    compilation of its own the first time a machine meets the table.
    """
    moves = np.zeros(states.shape[0], dtype=np.int64)
    mask = np.zeros(MAX_TOKENS, dtype=np.int8)
    if specialised:
        specialised_play_random(tab)(states, rng, max_plies, moves, mask)
    else:
        _play_random(states, tab, rng, max_plies, moves, mask)
    return moves


@inline_kernel
def _play_random_games(states, tab, rng, max_plies, moves, mask):
    for b in range(states.shape[0]):
        s = states[b]
        roll_until_decision(s, tab, rng, b, mask)
        legal_mask(s, tab, mask)  # the decision may have been rolled before this call
        n_moves = 0
        while s[OVER] == 0 and s[PLY] < max_plies:
            apply_move(s, tab, random_legal(mask, rng, b))
            n_moves += 1
            roll_until_decision(s, tab, rng, b, mask)
        moves[b] = n_moves


@kernel
def _play_random(states, tab, rng, max_plies, moves, mask):
    _play_random_games(states, tab, rng, max_plies, moves, mask)


def specialised_play_random(tab: np.ndarray):
    """`_play_random` compiled with this rules table frozen in: ``kernel(states, rng, max_plies, moves, mask)``.

    The generic kernels read every rule from `tab` at run time. Numba bakes an
    array that a function closes over into the machine code as a constant, so
    here LLVM folds each ``tab[R_...]`` read and drops the branches of rules
    that are off: about a fifth faster on random-move games.
    The price is a compilation per table. Numba's on-disk cache
    (`jit`) keys a closure by the values it captures, so that is paid once per
    machine and table, and a cached kernel can only ever be the one for these
    rules.
    """
    return _specialised_play_random(np.ascontiguousarray(tab, dtype=np.int32).tobytes())


@functools.cache
def _specialised_play_random(table: bytes):
    frozen = np.frombuffer(table, dtype=np.int32).copy()

    @kernel
    def play_random_with_frozen_rules(states, rng, max_plies, moves, mask):
        _play_random_games(states, frozen, rng, max_plies, moves, mask)

    return play_random_with_frozen_rules
