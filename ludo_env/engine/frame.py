"""The mover's point of view: the one board rotation, and its inverse.

`view_from(state, tab, viewer, out)` writes a ``(4, 4)`` int16 table of every
token as seen by seat `viewer`. Row r holds seat ``(viewer + r) % players``, so
row 0 is the viewer and the rows follow turn order. Each entry is

* ``BASE`` (-1) for a token in its base;
* ``0 .. track_squares-1`` for a token on the shared track: its square counted
  from the viewer's start square, so the viewer's own start square is 0 and its
  own track tokens read exactly their progress;
* ``track_squares + k`` for a token k steps into its owner's home column, and
  ``track_squares + home_column`` for a finished token (columns are private, so
  they need no rotation);
* ``UNUSED`` (-2) for absent seats and tokens.

`unview` turns such a table back into progress values: ``unview(view_from(s,
v), v)`` returns the token block of ``s`` for every viewer v.
"""
from __future__ import annotations

import numpy as np

from ludo_env.engine.jit import kernel
from ludo_env.engine.kernels import token_index
from ludo_env.engine.layout import (
    BASE,
    CURRENT,
    R_PLAYERS,
    R_SEAT_START,
    R_TOKENS,
    R_TRACK_SQUARES,
    R_TRACK_STEPS,
    UNUSED,
)
from ludo_env.rules import MAX_PLAYERS, MAX_TOKENS


@kernel
def rotate(square, from_start, to_start, n_squares):
    """Re-count a track square from the start square `from_start` to the start square `to_start`."""
    return (square + from_start - to_start) % n_squares


@kernel
def view_from(state, tab, viewer, out):
    players = tab[R_PLAYERS]
    n_sq = tab[R_TRACK_SQUARES]
    steps = tab[R_TRACK_STEPS]
    out[:, :] = UNUSED
    for r in range(players):
        seat = (viewer + r) % players
        for t in range(tab[R_TOKENS]):
            p = state[token_index(seat, t)]
            if p == BASE:
                out[r, t] = BASE
            elif p < steps:
                out[r, t] = rotate(p, tab[R_SEAT_START + seat], tab[R_SEAT_START + viewer], n_sq)
            else:
                out[r, t] = n_sq + (p - steps)


@kernel
def unview(view, tab, viewer, tokens_out):
    """Inverse of `view_from`: write progress values into a `(4, 4)` token block."""
    players = tab[R_PLAYERS]
    n_sq = tab[R_TRACK_SQUARES]
    steps = tab[R_TRACK_STEPS]
    tokens_out[:, :] = UNUSED
    for r in range(players):
        seat = (viewer + r) % players
        for t in range(tab[R_TOKENS]):
            v = view[r, t]
            if v == BASE:
                tokens_out[seat, t] = BASE
            elif v < n_sq:
                tokens_out[seat, t] = rotate(v, tab[R_SEAT_START + viewer], tab[R_SEAT_START + seat], n_sq)
            else:
                tokens_out[seat, t] = steps + (v - n_sq)


@kernel
def mover_views(states, tab, out):
    """Batched `view_from` for each game's mover: `out` has shape (B, 4, 4)."""
    for b in range(states.shape[0]):
        view_from(states[b], tab, states[b, CURRENT], out[b])


def mover_view_batch(states: np.ndarray, tab: np.ndarray) -> np.ndarray:
    out = np.empty((states.shape[0], MAX_PLAYERS, MAX_TOKENS), dtype=states.dtype)
    mover_views(states, tab, out)
    return out
