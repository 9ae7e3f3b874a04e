"""Hand-made features of a position between rolls, seen from every seat: the input of afterstate value functions.

``seat_features(states, tab) -> (N, 4, F)`` float32, ``F = feature_count() =
4 * SEAT_FEATURES + 1`` (89). ``out[n, v]`` describes state n from absolute
seat v's point of view: seat v's block first, then the other seats in turn
order (row r is seat ``(v + r) % players``, the one rotation of
`ludo_env.engine.frame.view_from`), then a constant 1 (the bias). Rows of seats
a variant does not have, and every entry of ``out[n, v]`` for an absent seat v,
are 0, so a value function with weights ``w`` rates any seat of any position
as ``out[n, v] @ w`` and one weight vector serves every seat. It is meant for
*between-rolls* states (``state[DIE] == 0``: afterstates, see
`ludo_env.engine.afterstates`); a decision state is read the same way (its die
is ignored). `feature_names()` names the columns ``row{r}.<feature>``, ``bias``.

Per seat block (``SEAT_FEATURES`` = 22; T = tokens per seat, H = home, the
progress of a finished token, S = the track steps before the home column;
*covered* squares of a token are progress + 1, 0 in base, the engine's ranking
measure; a *track* token stands on the shared track, 0 <= progress < S):

====  ===============  ===========================================================
 0    in_base          tokens in base / T
 1    on_track         track tokens / T
 2    in_column        tokens in the home column / T
 3    finished         finished tokens / T
 4    progress         covered squares of all tokens / (T (H + 1))
 5    progress_sq      sum over tokens of (covered / (H + 1))^2, / T: advanced
                       tokens weigh more (a linear value cannot square)
 6    on_safe          track tokens on a safe square / T
 7    stacked          track tokens sharing their square with another own token
                       / T (pyludo: safe from single attackers; blockades)
 8    danger           sum of `tactics.hit_chance` over track tokens / T: tokens
                       the other seats' next rolls are expected to send back
 9    expected_loss    sum of hit_chance x covered / (H + 1), / T: progress
                       those rolls are expected to cost
10    threatened       track tokens whose nearest opponent behind that can still
                       reach them (`tactics.gap_behind`) is 1..6 squares back / T
11    chased           ... 7..12 squares back (two rolls away) / T
12    targets          track tokens with an opponent token 1..6 squares ahead that
                       they can still reach (`tactics.gap_ahead`) / T
13-16 track_q0..q3     track tokens in each quarter of the track (progress x 4 // S)
                       / T
17    lead             progress (4) minus the best other seat's progress (4), in
                       [-1, 1] (the race; a linear value cannot take a max)
18    rolls_next       1 if this seat rolls next (``state[CURRENT]``, game not over)
19    sixes            sixes rolled in a row / 3, for the seat rolling next: a bonus
                       roll after a six is pending (0 elsewhere; a bonus from a
                       capture is just rolls_next)
20    seat_done        1 if the seat has brought every token home (placed; only
                       seen under ``end: last_standing``)
21    in_game          1 for a seat in the game (rows of absent seats stay 0)
====  ===============  ===========================================================

Every block entry depends on the position and the seat only, never on the
viewer: a block is computed once per seat and copied into each viewer's rows,
so seat values of the same position cost one pass over its tokens. Bonus
rolls: whose roll comes next and the sixes counter are the whole of what the
state knows about them, and all a value needs (the state is Markov).

Variants: every rule the engine knows is read from the compiled table (start in
base or not, home column length 0 in ``ucsd``, 2 tokens in ``quick``, 2-4
players, stars and stacks in ``pyludo`` through `tactics.hit_chance`).
"""
from __future__ import annotations

import numpy as np

from ludo_env.engine.jit import kernel
from ludo_env.engine.kernels import board_square, count_on, token_index
from ludo_env.engine.layout import (
    BASE,
    CURRENT,
    OVER,
    PLACES,
    R_HOME,
    R_PLAYERS,
    R_TOKENS,
    R_TRACK_STEPS,
    SIXES,
    STATE_DTYPE,
    STATE_LEN,
)
from ludo_env.engine.tactics import gap_ahead, gap_behind, hit_chance, is_safe
from ludo_env.rules import DIE_FACES, MAX_PLAYERS

SEAT_FEATURE_NAMES = (
    "in_base", "on_track", "in_column", "finished", "progress", "progress_sq", "on_safe", "stacked", "danger",
    "expected_loss", "threatened", "chased", "targets", "track_q0", "track_q1", "track_q2", "track_q3", "lead",
    "rolls_next", "sixes", "seat_done", "in_game",
)
SEAT_FEATURES = len(SEAT_FEATURE_NAMES)
(F_BASE, F_TRACK, F_COLUMN, F_FINISHED, F_PROGRESS, F_PROGRESS_SQ, F_SAFE, F_STACKED, F_DANGER, F_LOSS,
 F_THREATENED, F_CHASED, F_TARGETS, F_Q0, _, _, _, F_LEAD, F_ROLLS_NEXT, F_SIXES, F_SEAT_DONE,
 F_IN_GAME) = range(SEAT_FEATURES)
TRACK_BINS = 4
SIXES_SCALE = 3.0  # classic forfeits on the third six, so at most 2 are ever pending
N_FEATURES = MAX_PLAYERS * SEAT_FEATURES + 1
BIAS = N_FEATURES - 1


def feature_count() -> int:
    return N_FEATURES


def feature_names() -> list[str]:
    """One name per column of `seat_features`, in order."""
    return [f"row{r}.{name}" for r in range(MAX_PLAYERS) for name in SEAT_FEATURE_NAMES] + ["bias"]


@kernel
def _seat_block(state, tab, seat, out):
    """The seat's block (module docstring) into `out[:SEAT_FEATURES]`, all but `lead`."""
    tokens, steps, home = tab[R_TOKENS], tab[R_TRACK_STEPS], tab[R_HOME]
    for k in range(SEAT_FEATURES):
        out[k] = 0.0
    inv_t = 1.0 / tokens
    scale = 1.0 / (home + 1)
    for t in range(tokens):
        p = state[token_index(seat, t)]
        covered = (p + 1) * scale if p >= 0 else 0.0
        out[F_PROGRESS] += covered * inv_t
        out[F_PROGRESS_SQ] += covered * covered * inv_t
        if p == BASE:
            out[F_BASE] += inv_t
        elif p >= home:
            out[F_FINISHED] += inv_t
        elif p >= steps:
            out[F_COLUMN] += inv_t
        elif p >= 0:
            out[F_TRACK] += inv_t
            out[F_Q0 + p * TRACK_BINS // steps] += inv_t
            square = board_square(tab, seat, p)
            if is_safe(tab, square):
                out[F_SAFE] += inv_t
            if count_on(state, tab, seat, square) >= 2:
                out[F_STACKED] += inv_t
            chance = hit_chance(state, tab, seat, p, 0)
            out[F_DANGER] += chance * inv_t
            out[F_LOSS] += chance * covered * inv_t
            behind = gap_behind(state, tab, seat, p)
            if behind > 0 and behind <= DIE_FACES:
                out[F_THREATENED] += inv_t
            elif behind > DIE_FACES and behind <= 2 * DIE_FACES:
                out[F_CHASED] += inv_t
            ahead = gap_ahead(state, tab, seat, p)
            if ahead > 0 and ahead <= DIE_FACES:
                out[F_TARGETS] += inv_t
    if state[OVER] == 0 and state[CURRENT] == seat:
        out[F_ROLLS_NEXT] = 1.0
        out[F_SIXES] = state[SIXES] / SIXES_SCALE
    if state[PLACES + seat] != 0:
        out[F_SEAT_DONE] = 1.0
    out[F_IN_GAME] = 1.0


@kernel
def seat_blocks(state, tab, blocks):
    """Every seat's block of one position (`lead` included) into ``blocks[seat, :SEAT_FEATURES]``."""
    players = tab[R_PLAYERS]
    for seat in range(players):
        _seat_block(state, tab, seat, blocks[seat])
    for seat in range(players):
        best = -1.0
        for other in range(players):
            if other != seat and blocks[other, F_PROGRESS] > best:
                best = blocks[other, F_PROGRESS]
        blocks[seat, F_LEAD] = blocks[seat, F_PROGRESS] - best


@kernel
def _seat_features(states, tab, blocks, out):
    players = tab[R_PLAYERS]
    for n in range(states.shape[0]):
        seat_blocks(states[n], tab, blocks)
        for viewer in range(MAX_PLAYERS):
            for k in range(out.shape[2]):
                out[n, viewer, k] = 0.0
            if viewer >= players:
                continue
            for r in range(players):
                seat = (viewer + r) % players
                for k in range(SEAT_FEATURES):
                    out[n, viewer, r * SEAT_FEATURES + k] = blocks[seat, k]
            out[n, viewer, BIAS] = 1.0


def seat_features(states: np.ndarray, tab: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``(N, 4, F)`` float32 features of each state from each absolute seat's point of view (module docstring)."""
    states = np.ascontiguousarray(states, dtype=STATE_DTYPE).reshape(-1, STATE_LEN)
    if out is None:
        out = np.empty((states.shape[0], MAX_PLAYERS, N_FEATURES), dtype=np.float32)
    _seat_features(states, tab, np.zeros((MAX_PLAYERS, SEAT_FEATURES), dtype=np.float32), out)
    return out
