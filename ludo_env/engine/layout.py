"""Array layouts shared by the kernels: the game state and the compiled rule table.

Game state: one int16 row of `STATE_LEN` per game, a batch is ``(B, STATE_LEN)``.

====================  ======================================================
``TOKENS`` .. +16     progress of seat s, token t at ``TOKENS + 4*s + t``:
                      ``BASE`` (-1), 0..track_steps-1 on the shared track,
                      then the home column, then ``home`` (finished).
                      Slots of absent seats or tokens hold ``UNUSED`` (-2).
``CURRENT``           seat to move.
``DIE``               die rolled for the pending decision, 0 if none yet.
``SIXES``             sixes rolled in a row in the current turn.
``PLACES`` .. +4      finishing place of each seat, 0 while still playing
                      (ties share a place when `first_winner` ends a game).
``N_FINISHED``        seats that have brought every token home.
``PLY``               die rolls so far (saturates at 32767).
``OVER``              1 once the game has ended.
====================  ======================================================

Compiled rules: one int32 vector (`compile_rules`) so the numba kernels take a
single array argument and specialise once for every variant. The header holds
the scalar rules (``R_*`` offsets); then lookup sections per board square (safe flag, distance
to the next star), per seat (progress to board square) and per square again (each seat's
progress there, side by side), so the hot loops index instead of dividing or branching.
"""
from __future__ import annotations

import numpy as np

from ludo_env.rules import MAX_PLAYERS, MAX_TOKENS, OVERSHOOT_RULES, STAR_CAPTURE_RULES, Rules

# ----------------------------------------------------------------- state row
BASE = -1
UNUSED = -2

TOKENS = 0
CURRENT = TOKENS + MAX_PLAYERS * MAX_TOKENS
DIE = CURRENT + 1
SIXES = DIE + 1
PLACES = SIXES + 1
N_FINISHED = PLACES + MAX_PLAYERS
PLY = N_FINISHED + 1
OVER = PLY + 1
STATE_LEN = OVER + 1
STATE_DTYPE = np.int16
PLY_MAX = np.iinfo(STATE_DTYPE).max

# ---------------------------------------------------------- compiled rules
R_PLAYERS = 0
R_TOKENS = 1
R_TRACK_SQUARES = 2
R_TRACK_STEPS = 3
R_HOME = 4
R_START_IN_BASE = 5
R_ENTER_MASK = 6  # bit d set: die value d enters a token
R_ENTER_CAPTURES = 7
R_BONUS_SIX = 8
R_SIXES_FORFEIT = 9
R_BONUS_CAPTURE = 10
R_BONUS_HOME = 11
R_SAFE_MOVER_HOME = 12
R_STACK_MOVER_HOME = 13
R_OVERSHOOT = 14  # index into rules.OVERSHOOT_RULES
R_BLOCKADES = 15
R_STAR_JUMP = 16
R_LAST_STAR_HOME = 17
R_END_FIRST_WINNER = 18
R_STAR_CAPTURE = 19  # index into rules.STAR_CAPTURE_RULES
R_SEAT_START = 20  # 4 entries: board square of each seat's start
R_HEADER = R_SEAT_START + MAX_PLAYERS
# Then three sections of track_squares entries each (offsets from `tab[R_*_AT]`):
R_SAFE_AT = R_HEADER  # holds the offset of: 1 if the board square is safe
R_STAR_GAP_AT = R_HEADER + 1  # offset of: distance from the board square to the next star, 0 if no star
R_SQUARE_OF_AT = R_HEADER + 2  # offset of: board square of seat s at track progress p, at [s * track_squares + p]
# offset of: progress of seat s on board square q (the inverse), at [q * MAX_PLAYERS + s], and `NOWHERE` where
# seat s has no track step on square q or is absent: the four seats' entries for a square are adjacent, and
# comparing a token with `NOWHERE` is false, so counting the tokens on a square needs no branch.
R_ON_SQUARE_AT = R_HEADER + 3
R_TABLES = R_HEADER + 4
NOWHERE = -100  # below every progress a token can hold

OVERSHOOT_EXACT, OVERSHOOT_BOUNCE, OVERSHOOT_FINISH = (OVERSHOOT_RULES.index(k) for k in ("exact", "bounce", "finish"))
STAR_CAPTURE_BOTH, STAR_CAPTURE_LANDING, STAR_CAPTURE_JUMP_END = (
    STAR_CAPTURE_RULES.index(k) for k in ("both", "landing", "jump_end")
)

# Event bits returned by the move kernels (int32).
EV_ENTERED = 1 << 0  # a token left its base
EV_CAPTURE = 1 << 1  # one or more opponent tokens were sent back
EV_TOKEN_HOME = 1 << 2  # the moved token finished
EV_SENT_BACK = 1 << 3  # the mover's own token was sent back (pyludo globes and stacks)
EV_STAR = 1 << 4  # the token jumped from a star
EV_BOUNCE = 1 << 5  # the token bounced back from home
EV_BONUS = 1 << 6  # the mover rolls again
EV_SEAT_FINISHED = 1 << 7  # the mover brought its last token home
EV_GAME_OVER = 1 << 8
EV_FORFEIT = 1 << 9  # a roll was forfeited (too many sixes in a row)
EV_NO_MOVE = 1 << 10  # a roll had no legal move
EV_ILLEGAL_REPLACED = 1 << 11  # fast path: an illegal choice was replaced by the lowest legal token
EV_CAPTURED_SHIFT = 16  # bits 16..19: number of opponent tokens captured
EV_STAR_CAPTURED_SHIFT = 20  # bits 20..23: how many of those were on the star the token landed on and left

EVENT_NAMES = {
    EV_ENTERED: "entered",
    EV_CAPTURE: "capture",
    EV_TOKEN_HOME: "token_home",
    EV_SENT_BACK: "sent_back",
    EV_STAR: "star",
    EV_BOUNCE: "bounce",
    EV_BONUS: "bonus_roll",
    EV_SEAT_FINISHED: "seat_finished",
    EV_GAME_OVER: "game_over",
    EV_FORFEIT: "forfeit",
    EV_NO_MOVE: "no_move",
    EV_ILLEGAL_REPLACED: "illegal_replaced",
}


def event_names(events: int) -> list[str]:
    """Readable names of the bits set in an event word, captures counted."""
    names = [name for bit, name in EVENT_NAMES.items() if events & bit]
    captured = (events >> EV_CAPTURED_SHIFT) & 0xF
    if captured:
        names[names.index("capture")] = f"capture:{captured}"
    return names


def compile_rules(rules: Rules) -> np.ndarray:
    """The int32 table the kernels read; built once per `Rules`."""
    n_sq = rules.track_squares
    table = np.zeros(R_TABLES + (2 + 2 * MAX_PLAYERS) * n_sq, dtype=np.int32)
    safe_at, star_at = R_TABLES, R_TABLES + n_sq
    square_at, on_square_at = R_TABLES + 2 * n_sq, R_TABLES + (2 + MAX_PLAYERS) * n_sq
    table[R_SAFE_AT], table[R_STAR_GAP_AT] = safe_at, star_at
    table[R_SQUARE_OF_AT], table[R_ON_SQUARE_AT] = square_at, on_square_at
    table[on_square_at : on_square_at + MAX_PLAYERS * n_sq] = NOWHERE
    table[R_PLAYERS] = rules.players
    table[R_TOKENS] = rules.tokens
    table[R_TRACK_SQUARES] = n_sq
    table[R_TRACK_STEPS] = rules.track_steps
    table[R_HOME] = rules.home
    table[R_START_IN_BASE] = rules.start_in_base
    table[R_ENTER_MASK] = sum(1 << d for d in set(rules.enter_rolls))
    table[R_ENTER_CAPTURES] = rules.enter_captures
    table[R_BONUS_SIX] = rules.bonus_roll_on_six
    table[R_SIXES_FORFEIT] = rules.sixes_forfeit if rules.bonus_roll_on_six else 0
    table[R_BONUS_CAPTURE] = rules.bonus_roll_on_capture
    table[R_BONUS_HOME] = rules.bonus_roll_on_home
    table[R_SAFE_MOVER_HOME] = rules.safe_square_rule == "mover_home"
    table[R_STACK_MOVER_HOME] = rules.stack_rule == "mover_home"
    table[R_OVERSHOOT] = OVERSHOOT_RULES.index(rules.overshoot)
    table[R_BLOCKADES] = rules.blockades
    table[R_STAR_JUMP] = rules.star_jump
    table[R_LAST_STAR_HOME] = rules.last_star_to_home
    table[R_STAR_CAPTURE] = STAR_CAPTURE_RULES.index(rules.star_capture)
    table[R_END_FIRST_WINNER] = rules.end == "first_winner"
    for seat, start in enumerate(rules.seat_starts):
        table[R_SEAT_START + seat] = start
        table[square_at + seat * n_sq : square_at + (seat + 1) * n_sq] = (start + np.arange(n_sq)) % n_sq
        progress = (np.arange(n_sq) - start) % n_sq
        on_track = np.where(progress < rules.track_steps, progress, NOWHERE)
        table[on_square_at + seat : on_square_at + MAX_PLAYERS * n_sq : MAX_PLAYERS] = on_track
    for square in rules.safe_squares:
        table[safe_at + square] = 1
    stars = sorted(rules.star_squares)
    for i, square in enumerate(stars):
        table[star_at + square] = (stars[(i + 1) % len(stars)] - square) % n_sq or n_sq
    return table

