"""Tactical readings of a position, shared by the seed bots and the observation encoders.

All are pure kernels over one state row and the compiled rules; none changes
the state. What a move does is read with `kernels.move_outcome`; these add the
one-roll look at the opponents:

* `hit_chance(state, tab, seat, progress, joining)`: the chance that some
  opponent sends a token of `seat` standing at `progress` back with its next
  roll. Each opponent rolls once; the die faces that let any of its tokens land
  on the square (star jumps and entering included) count for it, and the
  opponents combine as ``1 - prod(1 - p_o)``. A token on a safe square, in its
  home column, in base or home, or protected by the stack rule (pyludo: two
  tokens send an attacker home; blockades: two tokens cannot be landed on) has
  chance 0. Bonus rolls after a six and blockades on the attacker's path are
  not looked at: this is a one-roll estimate, not a full search. Within
  that, it is exact: a test plays every opponent die and token through
  `apply_move` and gets the same chance on classic, ucsd and pyludo positions.
* `gap_ahead` / `gap_behind`: track distance from a token to the nearest
  opponent token in front of it (that it could still reach before its home
  column) or behind it.
* `square_kind`: safe square, star, and opponent start flags of a board square.
"""
from __future__ import annotations

from ludo_env.engine.jit import inline_kernel, kernel
from ludo_env.engine.kernels import board_square, count_on, opponents_on, token_index
from ludo_env.engine.layout import (
    BASE,
    PLACES,
    R_BLOCKADES,
    R_ENTER_CAPTURES,
    R_ENTER_MASK,
    R_LAST_STAR_HOME,
    R_PLAYERS,
    R_SAFE_AT,
    R_SEAT_START,
    R_STACK_MOVER_HOME,
    R_STAR_CAPTURE,
    R_STAR_GAP_AT,
    R_STAR_JUMP,
    R_TOKENS,
    R_TRACK_SQUARES,
    R_TRACK_STEPS,
    STAR_CAPTURE_JUMP_END,
    STAR_CAPTURE_LANDING,
)

DIE_FACES = 6
NO_GAP = 0  # returned by gap_ahead / gap_behind when no opponent is in range


@inline_kernel
def is_safe(tab, square):
    return tab[tab[R_SAFE_AT] + square] != 0


@inline_kernel
def is_star(tab, square):
    return tab[tab[R_STAR_GAP_AT] + square] != 0


@inline_kernel
def is_opponent_start(tab, seat, square):
    for other in range(tab[R_PLAYERS]):
        if other != seat and tab[R_SEAT_START + other] == square:
            return True
    return False


@inline_kernel
def _strikes(state, tab, attacker, p, die, square):
    """True if a track token of `attacker` at progress p, moving `die`, captures a lone token on `square`.

    It strikes where it comes to rest, and with star jumps also on the star it
    lands on and leaves (rule choice 11, `star_capture`). Whether the square
    itself lets a capture happen (safe, stacked) is the caller's to check.
    """
    q = p + die
    steps = tab[R_TRACK_STEPS]
    if q >= steps:
        return False
    first = board_square(tab, attacker, q)
    gap = tab[tab[R_STAR_GAP_AT] + first]
    if gap == 0 or not tab[R_STAR_JUMP]:
        return first == square
    jumps = q + gap < steps
    if not jumps and not tab[R_LAST_STAR_HOME]:
        return first == square
    star_rule = tab[R_STAR_CAPTURE]
    if first == square:
        return star_rule != STAR_CAPTURE_JUMP_END
    if not jumps or star_rule == STAR_CAPTURE_LANDING:
        return False
    # Two or more opponents on the star landed on send the attacker home before it jumps.
    if tab[R_STACK_MOVER_HOME] and opponents_on(state, tab, attacker, first) >= 2:
        return False
    return board_square(tab, attacker, q + gap) == square


@kernel
def hit_chance(state, tab, seat, progress, joining):
    """Chance that a token of `seat` at track `progress` is sent back by the opponents' next rolls.

    `joining` is 1 when the token is not on that square yet (a move being
    considered), so the stack rules count it.
    """
    if progress < 0 or progress >= tab[R_TRACK_STEPS]:
        return 0.0
    square = board_square(tab, seat, progress)
    own = count_on(state, tab, seat, square) + joining
    stacked = own >= 2 and (tab[R_STACK_MOVER_HOME] or tab[R_BLOCKADES])
    # On a safe square a landing never captures (share) or kills the attacker (mover_home).
    landing_captures = not is_safe(tab, square) and not stacked
    # Where entering captures, it does so on a safe start square too, unless a blockade bars the entry.
    entering_captures = landing_captures or (tab[R_ENTER_CAPTURES] != 0 and not (own >= 2 and tab[R_BLOCKADES]))
    survive = 1.0
    for other in range(tab[R_PLAYERS]):
        if other == seat or state[PLACES + other] != 0:
            continue
        faces = 0  # bit d: die d lets `other` hit the square
        enters_here = tab[R_SEAT_START + other] == square
        # Tokens of other colours on the square count for this attacker's stack rule too.
        lands_capture = landing_captures and not (
            tab[R_STACK_MOVER_HOME] and opponents_on(state, tab, other, square) + joining >= 2
        )
        for t in range(tab[R_TOKENS]):
            p = state[token_index(other, t)]
            if p == BASE:
                if enters_here and entering_captures:
                    faces |= tab[R_ENTER_MASK]
            elif p >= 0 and p < tab[R_TRACK_STEPS] and lands_capture:
                for d in range(1, DIE_FACES + 1):
                    if _strikes(state, tab, other, p, d, square):
                        faces |= 1 << d
        n = 0
        for d in range(1, DIE_FACES + 1):
            n += (faces >> d) & 1
        survive *= 1.0 - n / DIE_FACES
    return 1.0 - survive


@inline_kernel
def _track_distance(tab, from_square, to_square):
    n = tab[R_TRACK_SQUARES]
    return (to_square - from_square + n) % n


@kernel
def _nearest_opponent(state, tab, seat, progress, ahead):
    """Steps to the nearest opponent track token ahead of (or behind) a track token, within reach; 0 if none.

    Ahead: the token could still walk there before its home column. Behind: the
    opponent could still walk onto the token before its own home column.
    """
    steps = tab[R_TRACK_STEPS]
    if progress < 0 or progress >= steps:
        return NO_GAP
    here = board_square(tab, seat, progress)
    best = NO_GAP
    for other in range(tab[R_PLAYERS]):
        if other == seat:
            continue
        for t in range(tab[R_TOKENS]):
            p = state[token_index(other, t)]
            if p < 0 or p >= steps:
                continue
            there = board_square(tab, other, p)
            if ahead:
                d = _track_distance(tab, here, there)
                walker = progress
            else:
                d = _track_distance(tab, there, here)
                walker = p
            if d > 0 and walker + d < steps and (best == NO_GAP or d < best):
                best = d
    return best


@kernel
def gap_ahead(state, tab, seat, progress):
    """Steps from a track token of `seat` to the nearest opponent track token it could still reach, or 0."""
    return _nearest_opponent(state, tab, seat, progress, True)


@kernel
def gap_behind(state, tab, seat, progress):
    """Steps back from a track token of `seat` to the nearest opponent track token that could reach it, or 0."""
    return _nearest_opponent(state, tab, seat, progress, False)
