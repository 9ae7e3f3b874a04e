"""The positions one step ahead, for agents that look ahead: afterstates of each move and children of each roll.

A *decision state* waits on the mover's choice (``state[DIE] != 0``). Moving
token t gives its *afterstate* (`expand_moves`): the move applied, nothing
rolled yet, so ``state[DIE] == 0`` and ``state[CURRENT]`` is the seat that rolls
next (the mover again after a bonus). An afterstate is a chance node: each die
face d = 1..6 (probability 1/6) gives a child (`expand_rolls`) that is either a
decision state of the seat to roll, or, when the roll is forfeited or has no
legal move, another between-rolls state (the turn has passed on, or a six with
no move rolls again). Finished games stay as they are.

Both kernels copy and never touch their input; both use the engine's own
`apply_move` and `set_die`, so what they predict is exactly what `step_batch`
would play with that die.
"""
from __future__ import annotations

import numpy as np

from ludo_env.engine.jit import kernel
from ludo_env.engine.kernels import apply_move, legal_mask, set_die
from ludo_env.engine.layout import DIE, OVER, STATE_DTYPE, STATE_LEN
from ludo_env.rules import DIE_FACES, MAX_TOKENS


@kernel
def _copy_row(src, dst):
    for k in range(STATE_LEN):
        dst[k] = src[k]


@kernel
def _expand_moves(states, tab, out, legal, events):
    for b in range(states.shape[0]):
        if states[b, OVER] or states[b, DIE] == 0:
            for t in range(MAX_TOKENS):
                legal[b, t] = 0
                _copy_row(states[b], out[b, t])
                events[b, t] = 0
            continue
        legal_mask(states[b], tab, legal[b])
        for t in range(MAX_TOKENS):
            _copy_row(states[b], out[b, t])
            events[b, t] = apply_move(out[b, t], tab, t) if legal[b, t] else 0


def expand_moves(states: np.ndarray, tab: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(after, legal, events)` for decision states ``(B, STATE_LEN)``.

    ``after[b, t]`` is the afterstate of moving token t in game b (a copy of the
    state where t is not legal, or the game is over or has no die), ``legal[b, t]``
    the legal mask (int8) and ``events[b, t]`` the move's event word.
    """
    states = np.ascontiguousarray(states, dtype=STATE_DTYPE).reshape(-1, STATE_LEN)
    n = states.shape[0]
    after = np.empty((n, MAX_TOKENS, STATE_LEN), dtype=STATE_DTYPE)
    legal = np.empty((n, MAX_TOKENS), dtype=np.int8)
    events = np.empty((n, MAX_TOKENS), dtype=np.int32)
    _expand_moves(states, tab, after, legal, events)
    return after, legal, events


@kernel
def _expand_rolls(states, tab, out, masks, events):
    for b in range(states.shape[0]):
        for d in range(DIE_FACES):
            _copy_row(states[b], out[b, d])
            for t in range(MAX_TOKENS):
                masks[b, d, t] = 0
            events[b, d] = 0
            if states[b, OVER] == 0 and states[b, DIE] == 0:
                events[b, d] = set_die(out[b, d], tab, d + 1, masks[b, d])


def expand_rolls(states: np.ndarray, tab: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`(children, masks, events)` for between-rolls states ``(B, STATE_LEN)``: die face d + 1 at ``[:, d]``.

    ``children[b, d]`` is a decision state (``DIE != 0``, legal tokens in
    ``masks[b, d]``) or a between-rolls state when the roll was forfeited or had
    no legal move (``events`` says which). Over games and states that already
    hold a die are copied unchanged (mask all 0).
    """
    states = np.ascontiguousarray(states, dtype=STATE_DTYPE).reshape(-1, STATE_LEN)
    n = states.shape[0]
    children = np.empty((n, DIE_FACES, STATE_LEN), dtype=STATE_DTYPE)
    masks = np.empty((n, DIE_FACES, MAX_TOKENS), dtype=np.int8)
    events = np.empty((n, DIE_FACES), dtype=np.int32)
    _expand_rolls(states, tab, children, masks, events)
    return children, masks, events
