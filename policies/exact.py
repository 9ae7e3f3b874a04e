"""Exact solutions of reduced Ludo: two players, one or two tokens each, by value iteration.

The solver enumerates every position of a small game, builds each position's successors with the engine's
own kernels (`ludo_env.engine.kernels.set_die` and `apply_move`), so its rules are the engine's, and
computes by value iteration:

* the value of every position under minimax-optimal play (the win probability of seat 0; the mover's is
  that or one minus it) and the optimal policy (`solve`);
* the exact best response to any fixed opponent, a seed bot, a ``py:`` bot or a learned policy, whose move
  is asked once at every reachable decision through the `policies.players` interface (`best_response`);
* the exact win probability of any two policies against each other (`evaluate_pair`).

Positions
---------
A position is what the engine row holds that matters before a roll: each seat's token progress, the seat
to move, and the sixes rolled in a row this turn (only with a forfeit count). A pending bonus roll needs no
flag of its own: the engine grants it by leaving the same seat to move with no die, and the sixes count
carries over. Tokens of one seat are interchangeable, so a position stores each seat's progress values
sorted (a multiset); a row's token slots are the sorted values, slots past `tokens` hold ``UNUSED``, as the
engine's own rows do for a game of fewer tokens (the ``tokens`` rule field, 1..4). A decision is a
position and a die whose legal moves lead to two or more different positions.

Positions are indexed as ``((seat * S + sixes) * M + m0) * M + m1``: ``S`` sixes counts (the forfeit count,
else 1), ``M`` multisets of ``tokens`` progress values per seat (``C(P + tokens - 1, tokens)`` for ``P``
progress values: base, the track, the home column and home). With 2 tokens on the classic board that is
2 x 3 x 1,711^2 = 17.6 million positions; with 3 tokens it is 7 billion, refused (`check_size`).

Players
-------
``exact:optimal`` plays the optimal policy, ``exact:best_response?to=<player spec>`` the best response to
that player; both solve (or load from the cache, `DEFAULT_CACHE`) the game they are asked to play, and
refuse in one line a game the solver does not cover (`check_game`). A fixed opponent is asked on the sorted
rows the solver uses: a player whose choice depends on which slot holds a token, beyond the tokens'
progress, is evaluated as it plays on sorted rows. ``random`` is taken as exactly uniform over the legal
tokens, not as one draw per decision; any other player is taken as deterministic (asked once per decision).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ludo_env.engine.jit import jit, kernel
from ludo_env.engine.kernels import apply_move, set_die
from ludo_env.engine.layout import (
    CURRENT,
    DIE,
    OVER,
    PLACES,
    R_BONUS_SIX,
    R_HOME,
    R_PLAYERS,
    R_SIXES_FORFEIT,
    R_START_IN_BASE,
    R_TOKENS,
    SIXES,
    STATE_DTYPE,
    STATE_LEN,
    TOKENS,
    UNUSED,
)
from ludo_env.rules import DIE_FACES, MAX_TOKENS

PREFIX = "exact:"
SOLVED_PLAYERS = 2
SOLVED_TOKENS = (1, 2)
DEFAULT_TOLERANCE = 1e-10
"""Value iteration stops when a whole sweep changes no value by more than this (win probability)."""
DEFAULT_MAX_MEMORY = 8 * 2**30
"""Bytes a solve may take before it is refused (`check_size`)."""
DEFAULT_CACHE = Path(os.environ.get("LUDO_EXACT_CACHE", Path.home() / ".cache" / "ludo-league" / "exact"))
CHECKPOINT_SECONDS = 20.0
"""A running solve saves its values at most this often, so a killed one resumes from its last saved sweep."""

# Successor codes besides a position index.
NONE = -3  # no move in this slot (illegal, or the slot of a roll that needs no decision)
WIN0 = -1  # the move ends the game, seat 0 first
WIN1 = -2  # the move ends the game, seat 1 first

# How a seat chooses in a sweep.
OPTIMISE, FIXED, UNIFORM = 0, 1, 2


class ExactError(ValueError):
    """A game the solver does not cover, a table that does not fit, a bad spec; one line for the user."""


# ------------------------------------------------------------------ the space
@dataclass(frozen=True)
class Space:
    """The positions of one game (module docstring: Positions)."""

    tab: np.ndarray
    tokens: int
    low: int  # progress of code 0: BASE (-1) when tokens start in a base, else 0
    values: int  # P, progress values per token
    sixes: int  # S
    multisets: int  # M
    combos: np.ndarray  # (M, tokens) int16: the sorted progress values of each multiset index

    @property
    def positions(self) -> int:
        return SOLVED_PLAYERS * self.sixes * self.multisets**2

    @property
    def half(self) -> int:
        """Index of the first position with seat 1 to move."""
        return self.sixes * self.multisets**2

    def initial(self, first_seat: int = 0) -> int:
        """Index of the start of a game: every token at its restart point, `first_seat` to move."""
        return first_seat * self.half  # code 0 is base (or the start square), sixes 0


def _sizes(tab: np.ndarray) -> tuple[int, int, int, int, int]:
    tokens = int(tab[R_TOKENS])
    low = -1 if tab[R_START_IN_BASE] else 0
    values = int(tab[R_HOME]) - low + 1
    forfeit = int(tab[R_SIXES_FORFEIT]) if tab[R_BONUS_SIX] else 0
    sixes = forfeit if forfeit > 0 else 1
    multisets = math.comb(values + tokens - 1, tokens)
    return tokens, low, values, sixes, multisets


def bytes_needed(tab: np.ndarray) -> tuple[int, int]:
    """(positions, bytes) a solve of this game takes: values, successors, two policies and flags."""
    tokens, _, _, sixes, multisets = _sizes(tab)
    positions = SOLVED_PLAYERS * sixes * multisets**2
    per_position = 8 + DIE_FACES * tokens * 4 + 2 * DIE_FACES + 1
    return positions, positions * per_position


def check_game(tab: np.ndarray) -> None:
    """`ExactError` (one line) unless the solver covers this game: 2 players with 1 or 2 tokens each. A larger
    game is refused with the positions it has and the memory a solve would need."""
    players, tokens = int(tab[R_PLAYERS]), int(tab[R_TOKENS])
    covered = (f"exact play is solved for {SOLVED_PLAYERS} players with "
               f"{' or '.join(map(str, SOLVED_TOKENS))} tokens each (variant.tokens=1 or 2, two players)")
    if players != SOLVED_PLAYERS:
        raise ExactError(f"this game has {players} players with {tokens} tokens each; {covered}")
    if tokens not in SOLVED_TOKENS:
        positions, needed = bytes_needed(tab)
        raise ExactError(f"{tokens} tokens each is {positions:,} positions and needs {needed / 2**30:,.1f} GiB; "
                         f"{covered}")


def check_size(tab: np.ndarray, max_memory: int = DEFAULT_MAX_MEMORY) -> None:
    """`ExactError` with the position count and the memory it would need, before anything is allocated."""
    positions, needed = bytes_needed(tab)
    if needed > max_memory:
        raise ExactError(
            f"{int(tab[R_TOKENS])} tokens each is {positions:,} positions and needs {needed / 2**30:,.1f} GiB, "
            f"over the limit of {max_memory / 2**30:,.1f} GiB: solve fewer tokens, or raise the limit"
        )


def make_space(tab: np.ndarray) -> Space:
    tokens, low, values, sixes, multisets = _sizes(tab)
    combos = np.zeros((multisets, tokens), dtype=np.int16)
    _fill_combos(combos, tokens, values, low)
    return Space(np.ascontiguousarray(tab, dtype=np.int32), tokens, low, values, sixes, multisets, combos)


def _fill_combos(combos: np.ndarray, tokens: int, values: int, low: int) -> None:
    """Row `multiset_index(codes)` of `combos` = the sorted progress values; checks the numbering."""
    import itertools

    for codes in itertools.combinations_with_replacement(range(values), tokens):
        combos[_multiset_index_py(codes)] = np.asarray(codes) + low


def _multiset_index_py(codes) -> int:
    return sum(math.comb(k + i, i + 1) for i, k in enumerate(codes))


# ------------------------------------------------------------------ kernels
@kernel
def _multiset_index(state, seat, tokens, low):
    """Index of the sorted progress codes of `seat`'s tokens (combinatorial number system)."""
    a = state[TOKENS + MAX_TOKENS * seat] - low
    if tokens == 1:
        return a
    b = state[TOKENS + MAX_TOKENS * seat + 1] - low
    if a > b:
        a, b = b, a
    return a + (b + 1) * b // 2


@kernel
def _encode(state, tokens, low, sixes, multisets):
    """Position index of an engine row waiting for a roll."""
    six = state[SIXES] if sixes > 1 else 0
    m0 = _multiset_index(state, 0, tokens, low)
    m1 = _multiset_index(state, 1, tokens, low)
    return ((state[CURRENT] * sixes + six) * multisets + m0) * multisets + m1


@kernel
def _decode(index, state, combos, tokens, sixes, multisets):
    """Fill the engine row of position `index` (no die rolled, game running)."""
    for k in range(STATE_LEN):
        state[k] = 0
    for k in range(TOKENS, TOKENS + 4 * MAX_TOKENS):
        state[k] = UNUSED
    m1 = index % multisets
    rest = index // multisets
    m0 = rest % multisets
    rest = rest // multisets
    state[SIXES] = rest % sixes
    state[CURRENT] = rest // sixes
    for t in range(tokens):
        state[TOKENS + t] = combos[m0, t]
        state[TOKENS + MAX_TOKENS + t] = combos[m1, t]


@kernel
def _all_home(state, seat, tokens, home):
    for t in range(tokens):
        if state[TOKENS + MAX_TOKENS * seat + t] != home:
            return False
    return True


@jit
def _build(tab, combos, tokens, low, sixes, multisets, succ, value):
    """Successors of every position: ``succ[s, d - 1, t]`` after die d and a move of slot t (`NONE`, `WIN0`,
    `WIN1` or a position); a roll that needs no move has its successor in slot 0 only. Terminal positions (a
    seat with every token home) get no successors and their value."""
    home = tab[R_HOME]
    state = np.zeros(STATE_LEN, dtype=np.int16)
    rolled = np.zeros(STATE_LEN, dtype=np.int16)
    moved = np.zeros(STATE_LEN, dtype=np.int16)
    mask = np.zeros(MAX_TOKENS, dtype=np.int8)
    n = succ.shape[0]
    for s in range(n):
        _decode(s, state, combos, tokens, sixes, multisets)
        for d in range(DIE_FACES):
            for t in range(tokens):
                succ[s, d, t] = NONE
        if _all_home(state, 0, tokens, home):
            value[s] = 1.0
            continue
        if _all_home(state, 1, tokens, home):
            value[s] = 0.0
            continue
        for d in range(DIE_FACES):
            for k in range(STATE_LEN):
                rolled[k] = state[k]
            for t in range(MAX_TOKENS):
                mask[t] = 0
            set_die(rolled, tab, d + 1, mask)
            if rolled[DIE] == 0:
                succ[s, d, 0] = _encode(rolled, tokens, low, sixes, multisets)
                continue
            for t in range(tokens):
                if mask[t] == 0:
                    continue
                for k in range(STATE_LEN):
                    moved[k] = rolled[k]
                apply_move(moved, tab, t)
                if moved[OVER]:
                    succ[s, d, t] = WIN0 if moved[PLACES] == 1 else WIN1
                else:
                    succ[s, d, t] = _encode(moved, tokens, low, sixes, multisets)


@kernel
def _of(x, value):
    if x == WIN0:
        return 1.0
    if x == WIN1:
        return 0.0
    return value[x]


@kernel
def _roll_value(succ, value, choice, s, d, how, maximise):
    """Value of position `s` after die d (0-based) when the mover chooses `how` (OPTIMISE, FIXED, UNIFORM)."""
    count = 0
    last = NONE
    for t in range(succ.shape[2]):
        if succ[s, d, t] != NONE:
            count += 1
            last = succ[s, d, t]
    if count == 1:
        return _of(last, value)
    if how == FIXED:
        c = choice[s, d]
        if c >= 0:
            return _of(succ[s, d, c], value)
    best = -1.0 if maximise else 2.0
    total = 0.0
    for t in range(succ.shape[2]):
        x = succ[s, d, t]
        if x == NONE:
            continue
        v = _of(x, value)
        total += v
        if (maximise and v > best) or (not maximise and v < best):
            best = v
    if how == UNIFORM:
        return total / count
    return best  # OPTIMISE, or FIXED where every move leads to one position


@kernel
def _position_value(succ, value, choice, s, how0, how1, half):
    """The mean over the dice of position `s`'s roll values; -1 for a terminal position."""
    if succ[s, 0, 0] == NONE and (succ.shape[2] == 1 or succ[s, 0, 1] == NONE):
        return -1.0
    seat0 = s < half
    how = how0 if seat0 else how1
    total = 0.0
    for d in range(DIE_FACES):
        total += _roll_value(succ, value, choice, s, d, how, seat0)
    return total / DIE_FACES


@kernel
def _residual(succ, value, choice, how0, how1, half):
    """The Bellman residual: the largest change one update of every position would make."""
    worst = 0.0
    for s in range(succ.shape[0]):
        new = _position_value(succ, value, choice, s, how0, how1, half)
        if new >= 0.0 and abs(new - value[s]) > worst:
            worst = abs(new - value[s])
    return worst


@kernel
def _cyclic_blocks(succ, blocks, out):
    """`out[b]` = 1 where a roll or a move leads from block b back into block b (`_sweep`)."""
    for s in range(succ.shape[0]):
        b = s % blocks
        for d in range(DIE_FACES):
            for t in range(succ.shape[2]):
                x = succ[s, d, t]
                if x >= 0 and x % blocks == b:
                    out[b] = 1


@kernel
def _sweep(succ, value, choice, how0, how1, half, sixes, blocks, cyclic, inner_tolerance):
    """One block Gauss-Seidel sweep; the largest change of a value.

    A block is every position with the same tokens (both seats to move, every sixes count): rolls with no
    move, forfeits and bonus rolls with no move cycle inside a block (a start with every token in base waits
    for a six there), so each block is swept until it settles before the next, instead of once per sweep.
    Blocks go from the most advanced tokens down: a move leads to a block already updated in this sweep.
    A block with no way back into itself (`_cyclic_blocks`) settles in one pass.
    """
    worst = 0.0
    for b in range(blocks - 1, -1, -1):
        for _ in range(10_000):
            inner = 0.0
            for k in range(2 * sixes - 1, -1, -1):
                s = k * blocks + b
                new = _position_value(succ, value, choice, s, how0, how1, half)
                if new < 0.0:
                    continue
                change = abs(new - value[s])
                value[s] = new
                inner = max(inner, change)
                worst = max(worst, change)
            if inner <= inner_tolerance or not cyclic[b]:
                break
    return worst


@kernel
def _distinct(succ, s, d):
    """Number of different successors of position `s` after die d (0-based)."""
    a = succ[s, d, 0]
    if succ.shape[2] == 1:
        return 0 if a == NONE else 1
    b = succ[s, d, 1]
    if a == NONE or b == NONE:
        return 0 if a == NONE and b == NONE else 1
    return 1 if a == b else 2


@kernel
def _greedy(succ, value, half, out):
    """The optimal slot at every decision (seat 0 maximises, seat 1 minimises; lowest slot on ties), -1
    elsewhere."""
    for s in range(succ.shape[0]):
        maximise = s < half
        for d in range(DIE_FACES):
            out[s, d] = -1
            if _distinct(succ, s, d) < 2:
                continue
            best = -1.0 if maximise else 2.0
            for t in range(succ.shape[2]):
                x = succ[s, d, t]
                if x == NONE:
                    continue
                v = _of(x, value)
                if (maximise and v > best) or (not maximise and v < best):
                    best = v
                    out[s, d] = t


@jit
def _reach(succ, roots, reached):
    """Mark every position reachable from `roots` under any moves; the count."""
    stack = np.empty(succ.shape[0], dtype=np.int64)
    top = 0
    count = 0
    for r in roots:
        if not reached[r]:
            reached[r] = 1
            stack[top] = r
            top += 1
            count += 1
    while top > 0:
        top -= 1
        s = stack[top]
        for d in range(DIE_FACES):
            for t in range(succ.shape[2]):
                x = succ[s, d, t]
                if x >= 0 and not reached[x]:
                    reached[x] = 1
                    stack[top] = x
                    top += 1
                    count += 1
    return count


@kernel
def _decisions(succ, reached, seat_lo, seat_hi, out):
    """Fill `out` with ``s * 6 + d`` of every reachable decision among positions seat_lo..seat_hi-1; the count."""
    n = 0
    for s in range(seat_lo, seat_hi):
        if not reached[s]:
            continue
        for d in range(DIE_FACES):
            if _distinct(succ, s, d) >= 2:
                if out.shape[0] > 0:
                    out[n] = s * DIE_FACES + d
                n += 1
    return n


@kernel
def _decision_rows(tab, combos, tokens, sixes, multisets, keys, rows, masks):
    """The engine rows (die rolled, legal tokens in `masks`) of decisions ``s * 6 + d``."""
    for i in range(keys.shape[0]):
        s = keys[i] // DIE_FACES
        d = keys[i] % DIE_FACES
        _decode(s, rows[i], combos, tokens, sixes, multisets)
        for t in range(MAX_TOKENS):
            masks[i, t] = 0
        set_die(rows[i], tab, d + 1, masks[i])


@kernel
def _encode_decisions(rows, tokens, low, sixes, multisets, out):
    """Position index, before the roll, of rows waiting on a decision. The roll has already counted a six in
    the row's sixes; any other die reset them, and then every count before it leads to the same moves."""
    for i in range(rows.shape[0]):
        row = rows[i]
        counted = row[SIXES]
        row[SIXES] = counted - 1 if row[DIE] == 6 and counted > 0 else 0
        out[i] = _encode(row, tokens, low, sixes, multisets)
        row[SIXES] = counted


# ------------------------------------------------------------------ tables on disk
def engine_digest() -> str:
    """A digest of the engine's sources and this solver: a table solved by other code is not reused."""
    from ludo_env import engine

    digest = hashlib.sha256()
    for path in sorted(Path(engine.__file__).resolve().parent.glob("*.py")) + [Path(__file__).resolve()]:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def table_key(tab: np.ndarray, tolerance: float) -> dict[str, Any]:
    """What a cached table must match: the rules table the engine compiled, the engine, the tolerance."""
    rules = hashlib.sha256(np.ascontiguousarray(tab, dtype=np.int32).tobytes()).hexdigest()[:16]
    return {"rules": rules, "engine": engine_digest(), "tolerance": float(tolerance)}


def cache_path(tab: np.ndarray, cache: Path) -> Path:
    tokens = int(tab[R_TOKENS])
    rules = hashlib.sha256(np.ascontiguousarray(tab, dtype=np.int32).tobytes()).hexdigest()[:12]
    return Path(cache) / f"{SOLVED_PLAYERS}p{tokens}t-{rules}.npz"


def _save(path: Path, key: dict[str, Any], **arrays: np.ndarray) -> None:
    """Write an npz atomically: a temporary file in the same folder, then a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, key=np.array(json.dumps(key, sort_keys=True)), **arrays)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _load(path: Path, key: dict[str, Any], what: str, say: Callable[[str], None]) -> dict[str, np.ndarray] | None:
    """The arrays of a saved table if it matches `key`; None (and one line said) if it is missing, damaged or
    was solved for other rules, another engine or another tolerance."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            stored = json.loads(str(data["key"]))
            if stored != key:
                differs = ", ".join(k for k in key if stored.get(k) != key[k]) if isinstance(stored, dict) else "key"
                say(f"{what} {path} was solved for another {differs} than this game: refused, solving again")
                return None
            return {k: data[k] for k in data.files if k != "key"}
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as err:
        say(f"{what} {path} cannot be read ({type(err).__name__}): refused, solving again")
        return None


# ------------------------------------------------------------------ solving
@dataclass
class Solution:
    """A solved game: the space, successors, minimax values and optimal policy."""

    space: Space
    succ: np.ndarray  # (N, 6, tokens) int32
    value: np.ndarray  # (N,) float64: seat 0's win probability under optimal play
    policy: np.ndarray  # (N, 6) int8: the optimal slot at each decision, -1 elsewhere
    reached: np.ndarray  # (N,) uint8: reachable from a start
    reachable: int
    sweeps: int
    residual: float
    seconds: dict[str, float]
    tolerance: float

    def win_first(self) -> float:
        """The first player's win probability when both play optimally."""
        return float(self.value[self.space.initial(0)])


def _value_iteration(succ: np.ndarray, value: np.ndarray, choice: np.ndarray, how: tuple[int, int], space: Space,
                     tolerance: float, start_sweep: int = 0, save: Callable[[int], None] | None = None,
                     max_sweeps: int | None = None) -> tuple[int, float, bool]:
    """Sweep until no value changes by more than `tolerance`: (sweeps, last change, converged)."""
    sweep, change = start_sweep, math.inf
    half, sixes, blocks = space.half, space.sixes, space.multisets**2
    cyclic = np.zeros(blocks, dtype=np.uint8)
    _cyclic_blocks(succ, blocks, cyclic)
    saved_at = time.monotonic()
    while change > tolerance:
        if max_sweeps is not None and sweep >= max_sweeps:
            return sweep, change, False
        change = _sweep(succ, value, choice, how[0], how[1], half, sixes, blocks, cyclic, tolerance / 100)
        sweep += 1
        if save is not None and time.monotonic() - saved_at > CHECKPOINT_SECONDS:
            save(sweep)
            saved_at = time.monotonic()
    return sweep, change, True


def build(space: Space) -> tuple[np.ndarray, np.ndarray]:
    """(successors, initial values) of every position, from the engine's kernels."""
    succ = np.empty((space.positions, DIE_FACES, space.tokens), dtype=np.int32)
    value = np.full(space.positions, 0.5)
    _build(space.tab, space.combos, space.tokens, space.low, space.sixes, space.multisets, succ, value)
    return succ, value


def solve(tab: np.ndarray, tolerance: float = DEFAULT_TOLERANCE, cache: Path | None = DEFAULT_CACHE,
          max_memory: int = DEFAULT_MAX_MEMORY, say: Callable[[str], None] | None = None,
          max_sweeps: int | None = None) -> Solution:
    """Solve the game of rules table `tab` (`ludo_env.engine.layout.compile_rules`), or load it from `cache`.

    Refused before any allocation when the game is not covered or too large (`check_game`, `check_size`).
    While sweeping, the values are saved to ``<table>.partial.npz`` every `CHECKPOINT_SECONDS`; a solve that
    finds a matching partial file resumes from its sweep. `max_sweeps` stops early (the partial file stays),
    as a killed solve would.
    """
    say = say or (lambda line: print(line, file=sys.stderr))
    tab = np.ascontiguousarray(tab, dtype=np.int32)
    check_game(tab)
    check_size(tab, max_memory)
    if not tolerance > 0:
        raise ExactError(f"tolerance={tolerance!r} is not allowed: give a positive win probability")
    space = make_space(tab)
    key = table_key(tab, tolerance)
    path = cache_path(tab, cache) if cache is not None else None
    partial = path.with_suffix(".partial.npz") if path is not None else None
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    succ, value = build(space)
    seconds["build"] = time.perf_counter() - t0
    reached = np.zeros(space.positions, dtype=np.uint8)
    reachable = int(_reach(succ, np.array([space.initial(0), space.initial(1)], dtype=np.int64), reached))
    stored = _load(path, key, "cached table", say) if path is not None else None
    if stored is not None and stored["value"].shape == value.shape:
        value = stored["value"]
        sweeps, residual = int(stored["sweeps"]), float(stored["residual"])
        seconds["solve"] = float(stored["solve_seconds"])
        seconds["loaded"] = 1.0
    else:
        start = 0
        resumed = _load(partial, key, "partial table", say) if partial is not None else None
        if resumed is not None and resumed["value"].shape == value.shape:
            value, start = resumed["value"].copy(), int(resumed["sweeps"])
            say(f"resuming the solve from sweep {start} ({partial})")

        def save(sweep: int) -> None:
            if partial is not None:
                _save(partial, key, value=value, sweeps=np.array(sweep))

        no_choice = np.full((1, DIE_FACES), -1, dtype=np.int8)
        t0 = time.perf_counter()
        sweeps, _, converged = _value_iteration(succ, value, no_choice, (OPTIMISE, OPTIMISE), space,
                                                tolerance, start, save, max_sweeps)
        seconds["solve"] = time.perf_counter() - t0
        if not converged:
            save(sweeps)
            raise ExactError(f"stopped after sweep {sweeps} before reaching the tolerance; solve again to resume")
        residual = float(_residual(succ, value, no_choice, OPTIMISE, OPTIMISE, space.half))
        if path is not None:
            _save(path, key, value=value, sweeps=np.array(sweeps), residual=np.array(residual),
                  solve_seconds=np.array(seconds["solve"]))
            with contextlib.suppress(OSError):
                partial.unlink()
    policy = np.empty((space.positions, DIE_FACES), dtype=np.int8)
    _greedy(succ, value, space.half, policy)
    return Solution(space, succ, value, policy, reached, reachable, sweeps, residual, seconds, tolerance)


# ------------------------------------------------------------------ fixed policies
@dataclass
class Policy:
    """How one player moves at every decision: `choice` (N, 6) slots (FIXED), or uniform over the legal
    tokens (UNIFORM, ``choice`` unused)."""

    name: str
    how: int
    choice: np.ndarray


QUERY_BATCH = 16_384


def policy_of(player: Any, solution: Solution, name: str | None = None) -> Policy:
    """A player's move at every reachable decision of the solved game, asked in batches through its `act`
    (`policies.players.Player`) on the engine rows of those decisions. ``random`` is uniform (module
    docstring)."""
    name = name or getattr(player, "name", type(player).__name__)
    if name == "random":
        return Policy(name, UNIFORM, np.full((1, DIE_FACES), -1, dtype=np.int8))
    if isinstance(player, ExactPlayer):
        return Policy(name, FIXED, player.table(solution.space.tab).choice)
    space, succ = solution.space, solution.succ
    choice = np.full((space.positions, DIE_FACES), -1, dtype=np.int8)
    count = int(_decisions(succ, solution.reached, 0, space.positions, np.empty(0, dtype=np.int64)))
    keys = np.empty(count, dtype=np.int64)
    _decisions(succ, solution.reached, 0, space.positions, keys)
    for lo in range(0, count, QUERY_BATCH):
        batch = keys[lo:lo + QUERY_BATCH]
        rows = np.empty((batch.size, STATE_LEN), dtype=STATE_DTYPE)
        masks = np.empty((batch.size, MAX_TOKENS), dtype=np.int8)
        _decision_rows(space.tab, space.combos, space.tokens, space.sixes, space.multisets, batch, rows, masks)
        picked = np.asarray(player.act(rows, space.tab, masks), dtype=np.int64)
        if picked.shape != batch.shape or np.any(masks[np.arange(batch.size), np.clip(picked, 0, 3)] != 1):
            raise ExactError(f"player '{name}' did not answer one legal token per decision")
        choice.reshape(-1)[batch] = picked
    return Policy(name, FIXED, choice)


def _joint(space: Space, seat0: Policy | None, seat1: Policy | None) -> tuple[np.ndarray, tuple[int, int]]:
    """One choice table for a sweep: seat 0's rows from `seat0`, seat 1's from `seat1` (None: optimise)."""
    how = tuple(OPTIMISE if p is None else p.how for p in (seat0, seat1))
    fixed = [p for p in (seat0, seat1) if p is not None and p.how == FIXED]
    if not fixed:
        return np.full((1, DIE_FACES), -1, dtype=np.int8), how
    if len(fixed) == 1:
        return fixed[0].choice, how
    return np.concatenate([seat0.choice[:space.half], seat1.choice[space.half:]]), how


def evaluate(solution: Solution, seat0: Policy | None, seat1: Policy | None,
             tolerance: float | None = None) -> tuple[float, np.ndarray, int]:
    """Seat 0's win probability from the start (seat 0 first), with `seat0` and `seat1` playing (None: that seat
    plays its best response): (probability, values of every position, sweeps)."""
    space = solution.space
    choice, how = _joint(space, seat0, seat1)
    value = solution.value.copy()  # a good start: the optimal values
    sweeps, _, _ = _value_iteration(solution.succ, value, choice, how, space,
                                    tolerance or solution.tolerance)
    return float(value[space.initial(0)]), value, sweeps


@dataclass
class Matchup:
    """Exact win probabilities of `a` against `b`, as first and as second player."""

    a: str
    b: str
    first: float
    second: float

    @property
    def mean(self) -> float:
        """Over seats taken in turn, as a tournament seats two players."""
        return (self.first + self.second) / 2


def matchup(solution: Solution, a: Policy | None, b: Policy | None) -> Matchup:
    """`a` against `b` (None: the best response to the other, or the optimal policy against None)."""
    first, _, _ = evaluate(solution, a, b)
    second, _, _ = evaluate(solution, b, a)
    return Matchup(a.name if a else "best response", b.name if b else "best response", first, 1 - second)


def exploitability(solution: Solution, policy: Policy) -> float:
    """The exact best response's win probability against `policy`, seats taken in turn, minus parity (0.5)."""
    return matchup(solution, None, policy).mean - 0.5


# ------------------------------------------------------------------ players
_TABLES: dict[tuple[bytes, str], Any] = {}


class ExactPlayer:
    """``exact:optimal`` or ``exact:best_response?to=<spec>`` (module docstring)."""

    thread_safe = False  # solves on its first call

    def __init__(self, spec: str, opponent: str | None, make_player: Callable[..., Any], seed: int) -> None:
        self.name = spec
        self.opponent = opponent
        self._make_player = make_player
        self._seed = seed

    def fits(self, rules: Any) -> None:
        """`ExactError` (one line) unless this player can play a game of `rules`."""
        from ludo_env.engine.layout import compile_rules

        tab = compile_rules(rules)
        try:
            check_game(tab)
            check_size(tab)
        except ExactError as err:
            raise ExactError(f"player '{self.name}': {err}") from None

    def table(self, tab: np.ndarray) -> Policy:
        key = (np.ascontiguousarray(tab, dtype=np.int32).tobytes(), self.name)
        if key not in _TABLES:
            solution = _solution(tab, DEFAULT_CACHE)
            if self.opponent is None:
                _TABLES[key] = Policy(self.name, FIXED, solution.policy)
            else:
                opponent = policy_of(self._make_player(self.opponent, seed=self._seed), solution, self.opponent)
                space = solution.space
                policy = np.empty((space.positions, DIE_FACES), dtype=np.int8)
                at_seat1 = np.empty_like(policy)
                _, value, _ = evaluate(solution, None, opponent)  # this player at seat 0
                _greedy(solution.succ, value, space.half, policy)
                _, value, _ = evaluate(solution, opponent, None)  # this player at seat 1
                _greedy(solution.succ, value, space.half, at_seat1)
                policy[space.half:] = at_seat1[space.half:]
                _TABLES[key] = Policy(self.name, FIXED, policy)
        return _TABLES[key]

    def act(self, states: np.ndarray, tab: np.ndarray, masks: np.ndarray) -> np.ndarray:
        tab = np.ascontiguousarray(tab, dtype=np.int32)
        check_game(tab)
        policy = self.table(tab)
        tokens, low, _, sixes, multisets = _sizes(tab)
        index = np.empty(states.shape[0], dtype=np.int64)
        _encode_decisions(np.array(states, dtype=STATE_DTYPE), tokens, low, sixes, multisets, index)
        picked = policy.choice[index, states[:, DIE].astype(np.int64) - 1].astype(np.int64)
        # The table's slots are the mover's tokens sorted by progress; map them back to the row's slots.
        seat = states[:, CURRENT].astype(np.int64)
        mine = states[np.arange(states.shape[0])[:, None], TOKENS + MAX_TOKENS * seat[:, None] + np.arange(tokens)]
        order = np.argsort(mine, axis=1, kind="stable")
        out = np.where(picked >= 0, order[np.arange(states.shape[0]), np.clip(picked, 0, None)], masks.argmax(axis=1))
        return out.astype(np.int64)

    def __repr__(self) -> str:
        return f"ExactPlayer({self.name!r})"


_SOLUTIONS: dict[bytes, Solution] = {}


def _solution(tab: np.ndarray, cache: Path | None) -> Solution:
    key = np.ascontiguousarray(tab, dtype=np.int32).tobytes()
    if key not in _SOLUTIONS:
        _SOLUTIONS[key] = solve(tab, cache=cache)
    return _SOLUTIONS[key]


def make_exact_player(spec: str, seed: int, make_player: Callable[..., Any]) -> ExactPlayer:
    """The player of an ``exact:`` spec; `ExactError` (one line) for a bad one."""
    body = spec[len(PREFIX):]
    what, _, query = body.partition("?")
    allowed = "use exact:optimal or exact:best_response?to=<player spec>"
    if what == "optimal":
        if query:
            raise ExactError(f"player '{spec}': exact:optimal takes no options: {allowed}")
        return ExactPlayer(spec, None, make_player, seed)
    if what == "best_response":
        name, eq, opponent = query.partition("=")
        if name != "to" or not eq or not opponent:
            raise ExactError(f"player '{spec}' names no opponent: {allowed}")
        if opponent.startswith(PREFIX) and opponent.partition("?")[0] != "exact:optimal":
            raise ExactError(f"player '{spec}': a best response to a best response is not offered: {allowed}")
        make_player(opponent, seed=seed)  # a bad opponent spec is refused now, not at the first move
        return ExactPlayer(spec, opponent, make_player, seed)
    raise ExactError(f"unknown exact player '{spec}': {allowed}")
