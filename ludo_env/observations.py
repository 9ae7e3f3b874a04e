"""Observation encoders: float32 features of a position, in the mover's frame, batched in numba.

``encode(name, states, tab)`` turns engine state rows ``(B, STATE_LEN)`` into
``(B, obs_dim(name))`` float32 features seen by each game's mover
(``state[CURRENT]``): the mover's tokens come first, opponents follow in turn
order, and track squares are counted from the mover's start square (the one
rotation, `ludo_env.engine.frame.view_from`). The die is the pending roll.
Seats or tokens a variant does not use read as zeros. `feature_names(name)`
names every column.

``egocentric`` (default, 176 floats)
    For each of the mover's 4 tokens, 16 features: status one-hot (base,
    track, home column, finished); progress along its path / home; on a safe
    square; danger now (`tactics.hit_chance`: chance the opponents' next rolls
    send it back); legal with this die; progress after the move / home;
    opponents the move captures / 4; the move ends safe (safe square, home
    column or home); danger after the move; the move sends it back itself
    (pyludo globes and stacks); the move finishes it; steps to the nearest
    opponent ahead / track length (0: none it can still reach); steps to the
    nearest opponent behind that can reach it / track length (0: none).
    For each opponent token (3 seats x 4, in turn order), 8 features: status
    one-hot; track square seen from the mover / track length; its progress
    along its own path / home; it is 1..6 steps behind one of the mover's
    tokens (a threat); one of the mover's tokens is 1..6 steps behind it (a
    target). Then 16 globals: die one-hot (6); finished tokens per seat /
    tokens (4, turn order from the mover); seat still playing (4); sixes in a
    row this turn / 3; progress lead (mover's total progress minus the best
    opponent's, / (tokens x home)).

``seed000_raw62`` (62 floats): seed 000's raw observation, with its meaning
    kept and its bugs fixed. 0-15 token positions seen from the mover (track
    square, or track length + home-column step) / (track length + column),
    0 in base or home; 16-31 home progress (column step / column length, 1 when
    finished); 32-47 in-base flags; 48-51 tokens in base per seat / tokens (the
    seed wrote the finished count here); 52-55 finished tokens per seat /
    tokens; 56-59 the mover's own progress / home; 60 die / 6; 61 the mover's
    absolute seat / 3 (the seed's "current player", the one non-rotated value).

``seed000_enc128`` (128 floats): seed 000's LudoStateEncoder as it was meant.
    0-15 progress of every token along its own path ((progress + 1) / (home +
    1), 0 in base, 1 home); 16-19 each seat's mean progress minus the mover's
    (the seed subtracted a mean from a sum); 20 the mover's finished tokens /
    tokens (game phase); 21-26 die one-hot; 27 the mover's strike chances and
    28-30 each opponent's threats: pairs of (attacker, target) tokens on the
    shared track 1..6 steps apart / 16 (the seed compared normalised positions
    with raw squares, so its counts were almost always 0, and left the mover's
    slot empty); 31-34 for each of the mover's track tokens, 1 - d/3 for the
    nearest safe square d <= 3 squares away (the seed took the first safe
    square in its list, not the nearest, and again compared scales); 35-127
    zero, as in the seed, so seed 000's 128-input network fits unchanged.

``seed001_flags60`` (60 floats): seed 001's table 1, 15 flags for each of the
    mover's tokens, the die deciding what a token *can* do: can kill, can
    reach goal, can enter the safe strip (home column), can land on a star,
    can land on a globe (safe square), can reach a non-danger zone (a track
    square no opponent can hit next roll), can die (the move sends it back, or
    it lands where an opponent can hit it), can leave home base, can land on an
    enemy start, can move; is on an enemy start, is on the safe strip, is in a
    non-danger zone, is on a globe, is on a star.

``afterstates`` (450 floats): for each of the mover's tokens, the
    `ludo_env.afterstate_features` blocks of every seat of the position its
    move leads to, and a legal flag; then the die and the same blocks of the
    position now (`ludo_env.afterstate_observation`, which documents every
    column).

``afterstates_board`` (626 floats): ``afterstates`` and ``egocentric`` side by
    side, so a network sees both what each move leads to (aggregates per seat)
    and where every token stands (each opponent token its own block). Columns
    0-449 are ``afterstates``'; 450-625 are ``egocentric``'s, renamed so that
    the per-token blocks stay blocks: ``own{t}.<f>`` becomes
    ``own{t}.board.<f>``, the opponent blocks keep their names, and the
    globals become ``board.<f>``. The die one-hot and the legal flag appear
    in both halves.

Token layout: `token_layout(name)` says which columns belong to each of the
mover's tokens, to each opponent token and to the global features, for the
encoders built of per-token blocks (`TOKEN_ENCODERS`: egocentric,
seed001_flags60, afterstates and afterstates_board); it reads the blocks off `feature_names` (``own{t}.<feature>``,
``opp{r}.tok{t}.<feature>``), so it cannot drift from the encoder. The
token-set network (`policies.networks`) is built on it.

Registry: every encoder is one `Encoder` entry in `REGISTRY` (name, size,
numba kernel, feature names, token blocks); `ENCODERS`, `OBS_DIMS`,
`TOKEN_ENCODERS` and the numba dispatch in `_encode_batch` are read off it. An
unknown name raises `UnknownEncoderError` naming the registered ones; a
registered encoder without its dispatch branch raises instead of encoding as
another.
"""
from __future__ import annotations

import functools
import re
from collections import namedtuple
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ludo_env.afterstate_observation import SIZE as AFTERSTATES_SIZE
from ludo_env.afterstate_observation import afterstate_names, afterstates_kernel
from ludo_env.engine.frame import view_from
from ludo_env.engine.jit import jit, kernel
from ludo_env.engine.kernels import board_square, legal_mask, move_outcome, token_index
from ludo_env.engine.layout import (
    BASE,
    CURRENT,
    DIE,
    EV_CAPTURE,
    EV_CAPTURED_SHIFT,
    EV_SENT_BACK,
    PLACES,
    R_HOME,
    R_PLAYERS,
    R_SAFE_AT,
    R_TOKENS,
    R_TRACK_SQUARES,
    R_TRACK_STEPS,
    SIXES,
    STATE_LEN,
)
from ludo_env.engine.tactics import gap_ahead, gap_behind, hit_chance, is_opponent_start, is_safe, is_star
from ludo_env.rules import DIE_FACES, MAX_PLAYERS, MAX_TOKENS

OWN_FEATURES, OPP_FEATURES, GLOBAL_FEATURES = 16, 8, 16
EGOCENTRIC_SIZE = MAX_TOKENS * OWN_FEATURES + (MAX_PLAYERS - 1) * MAX_TOKENS * OPP_FEATURES + GLOBAL_FEATURES
STRIKE_RANGE = DIE_FACES  # one roll
# Feature names of per-token blocks (`token_layout`).
_OWN_COLUMN = re.compile(r"own(\d+)\.(.+)")
_OPPONENT_COLUMN = re.compile(r"opp(\d+)\.tok(\d+)\.(.+)")


class UnknownEncoderError(ValueError):
    pass


# ------------------------------------------------------------------ helpers
@kernel
def _status(out, at, view_value, n_sq, home_col):
    """One-hot (base, track, column, finished) of a view entry at out[at:at+4]."""
    if view_value == BASE:
        out[at] = 1.0
    elif view_value >= 0 and view_value < n_sq:
        out[at + 1] = 1.0
    elif view_value >= n_sq and view_value < n_sq + home_col:
        out[at + 2] = 1.0
    elif view_value == n_sq + home_col:
        out[at + 3] = 1.0


@kernel
def _progress_fraction(p, home):
    """Progress along the token's own path / home; 0 in base or unused."""
    return p / home if p > 0 else 0.0


@kernel
def _seat_of_row(state, tab, row):
    return (state[CURRENT] + row) % tab[R_PLAYERS]


@kernel
def _shared_gap(view, tab, row_a, t_a, row_b, t_b):
    """Steps from token (row_a, t_a) forward to (row_b, t_b) when both are on the shared track, else 0."""
    n_sq = tab[R_TRACK_SQUARES]
    a, b = view[row_a, t_a], view[row_b, t_b]
    if a < 0 or a >= n_sq or b < 0 or b >= n_sq:
        return 0
    return (b - a + n_sq) % n_sq


@kernel
def _can_walk(state, tab, row, t, steps_forward):
    """True if token t of the seat in `row` can still walk `steps_forward` squares along the shared track."""
    p = state[token_index(_seat_of_row(state, tab, row), t)]
    return p >= 0 and p + steps_forward < tab[R_TRACK_STEPS]


# --------------------------------------------------------------- egocentric
@kernel
def _egocentric(state, tab, view, mask, out):
    seat, die = state[CURRENT], state[DIE]
    players, tokens = tab[R_PLAYERS], tab[R_TOKENS]
    n_sq, steps, home = tab[R_TRACK_SQUARES], tab[R_TRACK_STEPS], tab[R_HOME]
    home_col = home - steps
    legal_mask(state, tab, mask)
    for t in range(tokens):
        at = t * OWN_FEATURES
        p = state[token_index(seat, t)]
        _status(out, at, view[0, t], n_sq, home_col)
        out[at + 4] = _progress_fraction(p, home)
        if p >= 0 and p < steps:
            out[at + 5] = 1.0 if is_safe(tab, board_square(tab, seat, p)) else 0.0
            out[at + 6] = hit_chance(state, tab, seat, p, 0)
            out[at + 14] = gap_ahead(state, tab, seat, p) / n_sq
            out[at + 15] = gap_behind(state, tab, seat, p) / n_sq
        out[at + 8] = out[at + 4]
        if mask[t]:
            out[at + 7] = 1.0
            q, events = move_outcome(state, tab, seat, t, die)
            out[at + 8] = _progress_fraction(q, home)
            out[at + 9] = ((events >> EV_CAPTURED_SHIFT) & 0xF) / MAX_TOKENS
            if events & EV_SENT_BACK:
                out[at + 12] = 1.0
            else:
                on_track = q >= 0 and q < steps
                out[at + 10] = 1.0 if (not on_track and q >= steps) or (on_track and is_safe(tab, board_square(tab, seat, q))) else 0.0
                out[at + 11] = hit_chance(state, tab, seat, q, 1)
                out[at + 13] = 1.0 if q == home else 0.0
    base = MAX_TOKENS * OWN_FEATURES
    for row in range(1, players):
        for t in range(tokens):
            at = base + ((row - 1) * MAX_TOKENS + t) * OPP_FEATURES
            v = view[row, t]
            _status(out, at, v, n_sq, home_col)
            if v >= 0 and v < n_sq:
                out[at + 4] = v / n_sq
            out[at + 5] = _progress_fraction(state[token_index(_seat_of_row(state, tab, row), t)], home)
            for own in range(tokens):
                d = _shared_gap(view, tab, row, t, 0, own)
                if d >= 1 and d <= STRIKE_RANGE and _can_walk(state, tab, row, t, d):
                    out[at + 6] = 1.0
                d = _shared_gap(view, tab, 0, own, row, t)
                if d >= 1 and d <= STRIKE_RANGE and _can_walk(state, tab, 0, own, d):
                    out[at + 7] = 1.0
    at = base + (MAX_PLAYERS - 1) * MAX_TOKENS * OPP_FEATURES
    if die >= 1:
        out[at + die - 1] = 1.0
    at += DIE_FACES
    best_opponent = -1
    mine = 0
    for row in range(players):
        s = _seat_of_row(state, tab, row)
        done = 0
        total = 0
        for t in range(tokens):
            p = state[token_index(s, t)]
            done += p == home
            total += p if p > 0 else 0
        out[at + row] = done / tokens
        out[at + MAX_PLAYERS + row] = 1.0 if state[PLACES + s] == 0 else 0.0
        if row == 0:
            mine = total
        elif total > best_opponent:
            best_opponent = total
    at += 2 * MAX_PLAYERS
    out[at] = state[SIXES] / 3.0
    out[at + 1] = (mine - best_opponent) / (tokens * home)


# ------------------------------------------------------------ seed 000 raw62
@kernel
def _raw62(state, tab, view, mask, out):
    seat = state[CURRENT]
    players, tokens = tab[R_PLAYERS], tab[R_TOKENS]
    n_sq, steps, home = tab[R_TRACK_SQUARES], tab[R_TRACK_STEPS], tab[R_HOME]
    home_col = home - steps
    for row in range(players):
        in_base = 0
        finished = 0
        for t in range(tokens):
            i = row * MAX_TOKENS + t
            v = view[row, t]
            if v == BASE:
                out[32 + i] = 1.0
                in_base += 1
            elif v == n_sq + home_col:
                out[16 + i] = 1.0
                finished += 1
            else:
                out[i] = v / (n_sq + home_col)
                if v >= n_sq:
                    out[16 + i] = (v - n_sq) / home_col
        out[48 + row] = in_base / tokens
        out[52 + row] = finished / tokens
    for t in range(tokens):
        out[56 + t] = _progress_fraction(state[token_index(seat, t)], home)
    out[60] = state[DIE] / DIE_FACES
    out[61] = seat / (MAX_PLAYERS - 1)


# ---------------------------------------------------------- seed 000 enc128
@kernel
def _enc128(state, tab, view, mask, out):
    seat = state[CURRENT]
    players, tokens = tab[R_PLAYERS], tab[R_TOKENS]
    n_sq, home = tab[R_TRACK_SQUARES], tab[R_HOME]
    for row in range(players):
        s = _seat_of_row(state, tab, row)
        for t in range(tokens):
            p = state[token_index(s, t)]
            out[row * MAX_TOKENS + t] = 0.0 if p == BASE else (p + 1) / (home + 1)
    mine = 0.0
    for t in range(tokens):
        mine += out[t]
    for row in range(players):
        total = 0.0
        for t in range(tokens):
            total += out[row * MAX_TOKENS + t]
        out[16 + row] = (total - mine) / tokens
    done = 0
    for t in range(tokens):
        done += state[token_index(seat, t)] == home
    out[20] = done / tokens
    if state[DIE] >= 1:
        out[21 + state[DIE] - 1] = 1.0
    pairs = MAX_TOKENS * MAX_TOKENS
    for row in range(1, players):
        strikes = 0
        threats = 0
        for t in range(tokens):
            for own in range(tokens):
                d = _shared_gap(view, tab, 0, own, row, t)
                if d >= 1 and d <= STRIKE_RANGE and _can_walk(state, tab, 0, own, d):
                    strikes += 1
                d = _shared_gap(view, tab, row, t, 0, own)
                if d >= 1 and d <= STRIKE_RANGE and _can_walk(state, tab, row, t, d):
                    threats += 1
        out[27] += strikes / pairs
        out[27 + row] = threats / pairs
    for t in range(tokens):
        p = state[token_index(seat, t)]
        if p < 0 or p >= tab[R_TRACK_STEPS]:
            continue
        square = board_square(tab, seat, p)
        nearest = 4
        for d in range(4):
            if tab[tab[R_SAFE_AT] + (square + d) % n_sq] or tab[tab[R_SAFE_AT] + (square - d + n_sq) % n_sq]:
                nearest = d
                break
        if nearest <= 3:
            out[31 + t] = 1.0 - nearest / 3.0


# --------------------------------------------------------- seed 001 flags60
@kernel
def _flags60(state, tab, view, mask, out):
    seat, die = state[CURRENT], state[DIE]
    steps, home = tab[R_TRACK_STEPS], tab[R_HOME]
    legal_mask(state, tab, mask)
    for t in range(tab[R_TOKENS]):
        at = t * 15
        p = state[token_index(seat, t)]
        if mask[t]:
            q, events = move_outcome(state, tab, seat, t, die)
            lands_on_track = q >= 0 and q < steps and not events & EV_SENT_BACK
            square = board_square(tab, seat, q) if lands_on_track else 0
            danger = hit_chance(state, tab, seat, q, 1) if lands_on_track else 0.0
            out[at + 0] = 1.0 if events & EV_CAPTURE else 0.0
            out[at + 1] = 1.0 if q == home else 0.0
            out[at + 2] = 1.0 if p < steps and q >= steps and q < home else 0.0
            out[at + 3] = 1.0 if lands_on_track and is_star(tab, square) else 0.0
            out[at + 4] = 1.0 if lands_on_track and is_safe(tab, square) else 0.0
            out[at + 5] = 1.0 if lands_on_track and danger == 0.0 else 0.0
            out[at + 6] = 1.0 if events & EV_SENT_BACK or danger > 0.0 else 0.0
            out[at + 7] = 1.0 if p == BASE else 0.0
            out[at + 8] = 1.0 if lands_on_track and is_opponent_start(tab, seat, square) else 0.0
            out[at + 9] = 1.0
        if p >= 0 and p < steps:
            square = board_square(tab, seat, p)
            out[at + 10] = 1.0 if is_opponent_start(tab, seat, square) else 0.0
            out[at + 12] = 1.0 if hit_chance(state, tab, seat, p, 0) == 0.0 else 0.0
            out[at + 13] = 1.0 if is_safe(tab, square) else 0.0
            out[at + 14] = 1.0 if is_star(tab, square) else 0.0
        elif p >= steps and p < home:
            out[at + 11] = 1.0


# ------------------------------------------------------ afterstates + board
@kernel
def _afterstates_board(state, tab, view, mask, out):
    afterstates_kernel(state, tab, view, mask, out[:AFTERSTATES_SIZE])
    _egocentric(state, tab, view, mask, out[AFTERSTATES_SIZE:])


# ------------------------------------------------------------ feature names
def _egocentric_names() -> list[str]:
    own = ["in_base", "on_track", "in_column", "finished", "progress", "on_safe", "danger", "legal",
           "progress_after", "captures", "ends_safe", "danger_after", "sent_back", "finishes",
           "gap_ahead", "gap_behind"]
    opp = ["in_base", "on_track", "in_column", "finished", "square", "progress", "threatens", "target"]
    names = [f"own{t}.{f}" for t in range(MAX_TOKENS) for f in own]
    names += [f"opp{r}.tok{t}.{f}" for r in range(1, MAX_PLAYERS) for t in range(MAX_TOKENS) for f in opp]
    names += [f"die_{d}" for d in range(1, DIE_FACES + 1)]
    names += [f"finished_row{r}" for r in range(MAX_PLAYERS)] + [f"playing_row{r}" for r in range(MAX_PLAYERS)]
    return names + ["sixes_in_row", "progress_lead"]


def _afterstates_board_names() -> list[str]:
    def board(name: str) -> str:
        if m := _OWN_COLUMN.fullmatch(name):
            return f"own{m[1]}.board.{m[2]}"
        return name if _OPPONENT_COLUMN.fullmatch(name) else f"board.{name}"

    return afterstate_names() + [board(name) for name in _egocentric_names()]


def _raw62_names() -> list[str]:
    tok = [f"row{r}.tok{t}" for r in range(MAX_PLAYERS) for t in range(MAX_TOKENS)]
    return ([f"{x}.position" for x in tok] + [f"{x}.home_progress" for x in tok] + [f"{x}.in_base" for x in tok]
            + [f"base_count_row{r}" for r in range(MAX_PLAYERS)] + [f"finished_row{r}" for r in range(MAX_PLAYERS)]
            + [f"own{t}.progress" for t in range(MAX_TOKENS)] + ["die", "seat"])


def _enc128_names() -> list[str]:
    names = [f"row{r}.tok{t}.progress" for r in range(MAX_PLAYERS) for t in range(MAX_TOKENS)]
    names += [f"lead_row{r}" for r in range(MAX_PLAYERS)] + ["phase"]
    names += [f"die_{d}" for d in range(1, DIE_FACES + 1)]
    names += ["strikes"] + [f"threats_row{r}" for r in range(1, MAX_PLAYERS)]
    names += [f"own{t}.safe_nearby" for t in range(MAX_TOKENS)]
    return names + [f"unused_{i}" for i in range(len(names), 128)]


def _flags60_names() -> list[str]:
    flags = ["can_kill", "can_goal", "can_enter_strip", "can_star", "can_globe", "can_non_danger", "can_die",
             "can_leave_base", "can_enemy_start", "can_move", "on_enemy_start", "on_strip", "in_non_danger",
             "on_globe", "on_star"]
    return [f"own{t}.{f}" for t in range(MAX_TOKENS) for f in flags]


# ----------------------------------------------------------------- registry
@dataclass(frozen=True)
class Encoder:
    """One observation encoder, declared once: everything else (sizes, names, the numba dispatch) reads it."""

    name: str
    size: int
    """Features per position."""
    kernel: Callable
    """numba kernel ``(state, tab, view, mask, out)`` writing the features of one position into a zeroed `out`."""
    feature_names: tuple[str, ...]
    """One name per column, in order."""
    token_blocks: bool
    """Its features are blocks per token (``own{t}.<f>``, ``opp{r}.tok{t}.<f>``), read by `token_layout`."""

    def __post_init__(self):
        if len(self.feature_names) != self.size or len(set(self.feature_names)) != self.size:
            raise ValueError(f"encoder {self.name!r}: declares {self.size} features but names "
                             f"{len(set(self.feature_names))} distinct ones")


REGISTRY: dict[str, Encoder] = {e.name: e for e in (
    Encoder("egocentric", EGOCENTRIC_SIZE, _egocentric, tuple(_egocentric_names()), token_blocks=True),
    Encoder("seed000_raw62", 62, _raw62, tuple(_raw62_names()), token_blocks=False),
    Encoder("seed000_enc128", 128, _enc128, tuple(_enc128_names()), token_blocks=False),
    Encoder("seed001_flags60", 60, _flags60, tuple(_flags60_names()), token_blocks=True),
    Encoder("afterstates", AFTERSTATES_SIZE, afterstates_kernel, tuple(afterstate_names()), token_blocks=True),
    Encoder("afterstates_board", AFTERSTATES_SIZE + EGOCENTRIC_SIZE, _afterstates_board,
            tuple(_afterstates_board_names()), token_blocks=True),
)}  # a new encoder goes last: ids are places, so every other encoder keeps its id
ENCODERS = tuple(REGISTRY)
OBS_DIMS = {name: e.size for name, e in REGISTRY.items()}
# Encoders whose features are blocks per token. The others have per-token scalars spread over
# the vector (seed000_raw62, seed000_enc128): no block a shared token encoder could read.
TOKEN_ENCODERS = tuple(name for name, e in REGISTRY.items() if e.token_blocks)
if bad := [n for n in ENCODERS if not n.isidentifier()]:
    raise ValueError(f"ludo_env.observations.REGISTRY: encoder names must be Python names, not {bad}")
ENCODER_ID = namedtuple("EncoderId", ENCODERS)(*range(len(ENCODERS)))
"""The ids `_encode_batch` switches on, by name (``ENCODER_ID.egocentric``): each encoder's place in `REGISTRY`,
never written by hand and never saved (a run saves the encoder's name). numba reads a tuple as constants; it
cannot call a kernel picked from a Python dict."""
_ID = ENCODER_ID._asdict()


def encoder(name: str) -> Encoder:
    """The registered encoder `name`; an unknown name raises one line naming the registered ones."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownEncoderError(f"unknown observation encoder {name!r}: choose one of {', '.join(ENCODERS)}") from None


def check_encoder(name: str) -> int:
    """The dispatch id of encoder `name`; raises on an unknown name."""
    encoder(name)
    return _ID[name]


def obs_dim(name: str) -> int:
    return encoder(name).size


def feature_names(name: str) -> list[str]:
    """One readable name per column of encoder `name`, in order."""
    return list(encoder(name).feature_names)


# -------------------------------------------------------------------- batch
@jit
def _encode_batch(encoder_id, states, tab, out):
    view = np.empty((MAX_PLAYERS, MAX_TOKENS), dtype=states.dtype)
    mask = np.empty(MAX_TOKENS, dtype=np.int8)
    out[:, :] = 0.0
    for b in range(states.shape[0]):
        view_from(states[b], tab, states[b, CURRENT], view)
        if encoder_id == ENCODER_ID.egocentric:
            _egocentric(states[b], tab, view, mask, out[b])
        elif encoder_id == ENCODER_ID.seed000_raw62:
            _raw62(states[b], tab, view, mask, out[b])
        elif encoder_id == ENCODER_ID.seed000_enc128:
            _enc128(states[b], tab, view, mask, out[b])
        elif encoder_id == ENCODER_ID.seed001_flags60:
            _flags60(states[b], tab, view, mask, out[b])
        elif encoder_id == ENCODER_ID.afterstates:
            afterstates_kernel(states[b], tab, view, mask, out[b])
        elif encoder_id == ENCODER_ID.afterstates_board:
            _afterstates_board(states[b], tab, view, mask, out[b])
        else:  # registered but not wired in here: fail, never encode as another encoder
            raise ValueError("observation encoder registered without a branch in _encode_batch")


def encode(name: str, states: np.ndarray, tab: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Features of each game's position seen by its mover: float32 ``(B, obs_dim(name))``."""
    spec = encoder(name)
    states = np.ascontiguousarray(states, dtype=np.int16).reshape(-1, STATE_LEN)
    if out is None:
        out = np.empty((states.shape[0], spec.size), dtype=np.float32)
    _encode_batch(_ID[name], states, tab, out)
    return out


# ------------------------------------------------------------------- tokens
@dataclass(frozen=True)
class TokenLayout:
    """Where an encoder's per-token blocks and global features lie (column indices into its features)."""

    own: tuple[tuple[int, ...], ...]
    """Columns of each of the mover's tokens, in token order; every block lists `own_features` in order."""
    own_features: tuple[str, ...]
    """Feature names of one own-token block."""
    opponents: tuple[tuple[int, ...], ...]
    """Columns of each opponent token, seats in turn order then tokens; empty if the encoder has none."""
    opponent_features: tuple[str, ...]
    """Feature names of one opponent-token block."""
    globals: tuple[int, ...]
    """Every other column, in order."""


def token_layout(name: str) -> TokenLayout | None:
    """The per-token layout of encoder `name`, or None if its features are not built of token blocks."""
    return _token_layout(name) if encoder(name).token_blocks else None


@functools.cache
def _token_layout(name: str) -> TokenLayout:
    names = feature_names(name)
    own: dict[int, list[tuple[int, str]]] = {}
    opponents: dict[tuple[int, int], list[tuple[int, str]]] = {}
    global_columns = []
    for column, feature in enumerate(names):
        if m := _OWN_COLUMN.fullmatch(feature):
            own.setdefault(int(m[1]), []).append((column, m[2]))
        elif m := _OPPONENT_COLUMN.fullmatch(feature):
            opponents.setdefault((int(m[1]), int(m[2])), []).append((column, m[3]))
        else:
            global_columns.append(column)
    own_blocks, own_features = _blocks(name, "own", own)
    opponent_blocks, opponent_features = _blocks(name, "opponent", opponents)
    return TokenLayout(own_blocks, own_features, opponent_blocks, opponent_features, tuple(global_columns))


def _blocks(name: str, what: str, blocks: dict) -> tuple[tuple[tuple[int, ...], ...], tuple[str, ...]]:
    """Column blocks in key order and their shared feature names; every block must list the same features."""
    keys = sorted(blocks)
    features = {tuple(f for _, f in blocks[k]) for k in keys}
    if len(features) > 1:
        raise ValueError(f"encoder {name!r}: its {what}-token blocks list different features")
    columns = tuple(tuple(c for c, _ in blocks[k]) for k in keys)
    return columns, (features.pop() if features else ())
