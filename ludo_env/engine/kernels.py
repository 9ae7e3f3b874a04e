"""Numba kernels over one game's state row (see `layout` for the arrays).

A turn is: `set_die` records a roll (forfeits and rolls with no legal move are
resolved there and pass the turn on); `legal_mask` lists the movable tokens;
`apply_move` moves one token, resolves landing, captures, stars and finishing,
and hands the turn on or grants a bonus roll. The game is over when
``state[OVER]`` is 1. These kernels trust their input: `Game` checks moves and
raises readable errors, and the batch kernels repair illegal choices.
"""
from __future__ import annotations

from ludo_env.engine.jit import inline_kernel, kernel
from ludo_env.engine.layout import (
    BASE,
    CURRENT,
    DIE,
    EV_BONUS,
    EV_BOUNCE,
    EV_CAPTURE,
    EV_CAPTURED_SHIFT,
    EV_ENTERED,
    EV_FORFEIT,
    EV_GAME_OVER,
    EV_NO_MOVE,
    EV_SEAT_FINISHED,
    EV_SENT_BACK,
    EV_STAR,
    EV_STAR_CAPTURED_SHIFT,
    EV_TOKEN_HOME,
    N_FINISHED,
    NOWHERE,
    OVER,
    OVERSHOOT_BOUNCE,
    OVERSHOOT_EXACT,
    PLACES,
    PLY,
    PLY_MAX,
    R_BLOCKADES,
    R_BONUS_CAPTURE,
    R_BONUS_HOME,
    R_BONUS_SIX,
    R_END_FIRST_WINNER,
    R_ENTER_CAPTURES,
    R_ENTER_MASK,
    R_HOME,
    R_LAST_STAR_HOME,
    R_ON_SQUARE_AT,
    R_OVERSHOOT,
    R_PLAYERS,
    R_SAFE_AT,
    R_SAFE_MOVER_HOME,
    R_SIXES_FORFEIT,
    R_SQUARE_OF_AT,
    R_STACK_MOVER_HOME,
    R_STAR_CAPTURE,
    R_STAR_GAP_AT,
    R_STAR_JUMP,
    R_START_IN_BASE,
    R_TOKENS,
    R_TRACK_SQUARES,
    R_TRACK_STEPS,
    SIXES,
    STAR_CAPTURE_JUMP_END,
    STAR_CAPTURE_LANDING,
    TOKENS,
    UNUSED,
)
from ludo_env.rules import MAX_PLAYERS, MAX_TOKENS

ILLEGAL = -100  # target of a move that is not allowed


@inline_kernel
def token_index(seat, token):
    return TOKENS + MAX_TOKENS * seat + token


@inline_kernel
def board_square(tab, seat, progress):
    """Board square of a token of `seat` at `progress` on the shared track."""
    return tab[tab[R_SQUARE_OF_AT] + seat * tab[R_TRACK_SQUARES] + progress]


@inline_kernel
def _restart_progress(tab):
    return BASE if tab[R_START_IN_BASE] else 0


@inline_kernel
def progress_on(tab, seat, square):
    """Progress at which a token of `seat` stands on a board square, or -1 if its path has no such track step."""
    p = tab[tab[R_ON_SQUARE_AT] + square * MAX_PLAYERS + seat]
    return p if p != NOWHERE else -1


@inline_kernel
def _count_at(state, tab, row, seat):
    """Number of `seat`'s tokens at progress `tab[row + seat]` (`NOWHERE` matches none)."""
    p = tab[row + seat]
    first = token_index(seat, 0)
    count = 0
    # Over all four slots: absent tokens hold UNUSED, which equals no progress, and the fixed bound unrolls.
    for t in range(MAX_TOKENS):
        count += state[first + t] == p
    return count


@inline_kernel
def count_on(state, tab, seat, square):
    """Number of `seat`'s tokens on a board square."""
    return _count_at(state, tab, tab[R_ON_SQUARE_AT] + square * MAX_PLAYERS, seat)


@inline_kernel
def opponents_on(state, tab, seat, square):
    """Number of tokens of seats other than `seat` on a board square."""
    # Every move asks this of the square it lands on. Counting every seat and masking the mover's own
    # count, with the seats' progress on the square adjacent in the table, has no branch to mispredict, and
    # runs in less than half the time of a branch per seat (docs/pages/results/, engine speed).
    row = tab[R_ON_SQUARE_AT] + square * MAX_PLAYERS
    count = 0
    for other in range(MAX_PLAYERS):
        count += _count_at(state, tab, row, other) * (other != seat)
    return count


@inline_kernel
def _blockade_on(state, tab, seat, square):
    """True if another colour has two or more tokens on `square` (rule choice 9: safe squares too)."""
    for other in range(tab[R_PLAYERS]):
        if other != seat and count_on(state, tab, other, square) >= 2:
            return True
    return False


@inline_kernel
def move_target(state, tab, seat, token, die):
    """Progress a token would walk to with `die` (before stars and captures), or ILLEGAL."""
    if token >= tab[R_TOKENS]:
        return ILLEGAL
    p = state[token_index(seat, token)]
    home = tab[R_HOME]
    if p == home:
        return ILLEGAL
    if p == BASE:
        if (tab[R_ENTER_MASK] >> die) & 1 == 0:
            return ILLEGAL
        if tab[R_BLOCKADES] and _blockade_on(state, tab, seat, board_square(tab, seat, 0)):
            return ILLEGAL
        return 0
    q = p + die
    if tab[R_BLOCKADES]:
        last_on_track = min(q, tab[R_TRACK_STEPS] - 1)
        for k in range(p + 1, last_on_track + 1):
            if _blockade_on(state, tab, seat, board_square(tab, seat, k)):
                return ILLEGAL
    if q > home:
        overshoot = tab[R_OVERSHOOT]
        if overshoot == OVERSHOOT_EXACT:
            return ILLEGAL
        if overshoot == OVERSHOOT_BOUNCE:
            return 2 * home - q
        return home
    return q


@inline_kernel
def legal_mask(state, tab, out):
    """Fill `out[0:4]` with 1 for each token the mover may move with the pending die; return the count."""
    if tab[R_BLOCKADES]:
        return _legal_mask_walking(state, tab, out)
    # Without blockades a move's legality depends only on the token's own progress. Written without
    # branches: a branch per token on random positions mispredicts often, and this test ran several times
    # slower with `move_target` than as flags (docs/pages/results/, engine speed).
    seat = state[CURRENT]
    die = state[DIE]
    live = (die > 0) & (state[OVER] == 0)
    home = tab[R_HOME]
    enters = ((tab[R_ENTER_MASK] >> die) & 1) != 0
    may_overshoot = tab[R_OVERSHOOT] != OVERSHOOT_EXACT
    first = token_index(seat, 0)
    n = 0
    for t in range(MAX_TOKENS):
        p = state[first + t]
        on_path = (p >= BASE) & (p != home)  # absent tokens hold UNUSED, below BASE
        ok = live & on_path & ((p != BASE) | enters) & ((p == BASE) | may_overshoot | (p + die <= home))
        out[t] = ok
        n += ok
    return n


@inline_kernel
def _legal_mask_walking(state, tab, out):
    """`legal_mask` by walking every move with `move_target`: needed when blockades can stop a move."""
    seat = state[CURRENT]
    die = state[DIE]
    live = die > 0 and state[OVER] == 0
    n = 0
    for t in range(MAX_TOKENS):
        ok = live and move_target(state, tab, seat, t, die) != ILLEGAL
        out[t] = ok
        n += ok
    return n


@inline_kernel
def _send_back_opponents(state, tab, seat, square):
    """Return every opponent token on `square` to its restart point; the number sent back."""
    restart = _restart_progress(tab)
    sent = 0
    for other in range(tab[R_PLAYERS]):
        if other == seat:
            continue
        p = progress_on(tab, other, square)
        if p < 0:
            continue
        for t in range(tab[R_TOKENS]):
            i = token_index(other, t)
            if state[i] == p:
                state[i] = restart
                sent += 1
    return sent


@inline_kernel
def _with_captures(events, on_star, at_rest):
    """Add the capture bits: `on_star` opponents sent back from the star left, `at_rest` where the token stops."""
    total = on_star + at_rest
    if total == 0:
        return events
    return events | EV_CAPTURE | (total << EV_CAPTURED_SHIFT) | (on_star << EV_STAR_CAPTURED_SHIFT)


@inline_kernel
def landing(state, tab, seat, q):
    """Where a token of `seat` walking to track progress `q` comes to rest, and what happens there.

    Pure: returns ``(progress, events)`` without touching the state. The events
    count the opponents a capture would send back (those on the star the token
    left in their own bits, see `EV_STAR_CAPTURED_SHIFT`); a token sent back by
    the square (pyludo globes and stacks) rests at its restart point.
    """
    events = 0
    on_star = 0
    jumped = False
    star_rule = tab[R_STAR_CAPTURE]
    while True:
        square = board_square(tab, seat, q)
        n_opp = opponents_on(state, tab, seat, square)
        safe = tab[tab[R_SAFE_AT] + square] != 0
        # Rule choice 12: with star_capture 'landing' the square a jump ends on is passed as if empty.
        judged = not jumped or star_rule != STAR_CAPTURE_LANDING
        if judged and n_opp > 0 and safe and tab[R_SAFE_MOVER_HOME]:
            return _restart_progress(tab), _with_captures(events | EV_SENT_BACK, on_star, 0)
        if judged and n_opp > 1 and not safe and tab[R_STACK_MOVER_HOME]:
            return _restart_progress(tab), _with_captures(events | EV_SENT_BACK, on_star, 0)
        star_gap = tab[tab[R_STAR_GAP_AT] + square]
        if star_gap > 0 and tab[R_STAR_JUMP] and not jumped:
            q_next = q + star_gap
            jumps = q_next < tab[R_TRACK_STEPS]
            if jumps or tab[R_LAST_STAR_HOME]:
                # Rule choice 11: a lone opponent on the star landed on is sent back before the jump
                # (seed 002), unless star_capture is 'jump_end'.
                if n_opp > 0 and not safe and star_rule != STAR_CAPTURE_JUMP_END:
                    on_star = n_opp
                events |= EV_STAR
                if not jumps:
                    return tab[R_HOME], _with_captures(events, on_star, 0)
                q = q_next
                jumped = True
                continue
        at_rest = n_opp if judged and n_opp > 0 and not safe else 0
        return q, _with_captures(events, on_star, at_rest)


@inline_kernel
def move_outcome(state, tab, seat, token, die):
    """Where a legal move of `token` with `die` ends, and its landing events, without moving it.

    Returns ``(progress, events)``; the events are those of `landing` plus
    ``EV_ENTERED`` and ``EV_BOUNCE``. Bots and observation encoders read moves
    through this function, so they see exactly what `apply_move` will do.
    """
    p = state[token_index(seat, token)]
    if p == BASE:
        if tab[R_ENTER_CAPTURES]:
            sent = opponents_on(state, tab, seat, board_square(tab, seat, 0))
            if sent:
                return 0, EV_ENTERED | EV_CAPTURE | (sent << EV_CAPTURED_SHIFT)
            return 0, EV_ENTERED
        # Rule choice 2: entering stops on the start square (rule choice 5: safe in classic).
        q, events = landing(state, tab, seat, 0)
        return q, events | EV_ENTERED
    q = move_target(state, tab, seat, token, die)
    if q < tab[R_TRACK_STEPS]:
        return landing(state, tab, seat, q)
    home = tab[R_HOME]
    return q, (EV_BOUNCE if p + die > home and q < home else 0)


@kernel
def _seat_pips(state, tab, seat):
    """Squares covered by a seat's tokens: 0 in base, progress + 1 elsewhere; ranks unfinished seats."""
    total = 0
    for t in range(tab[R_TOKENS]):
        p = state[token_index(seat, t)]
        if p >= 0:
            total += p + 1
    return total


@kernel
def _finish_game(state, tab):
    """Mark the game over and place the seats still playing, best progress first (ties share: rule choice 7)."""
    players = tab[R_PLAYERS]
    done = state[N_FINISHED]
    for seat in range(players):
        if state[PLACES + seat] != 0:
            continue
        mine = _seat_pips(state, tab, seat)
        ahead = 0
        for other in range(players):
            # Seats placed earlier in this loop are still "playing": their place is above `done`.
            still_playing = state[PLACES + other] == 0 or state[PLACES + other] > done
            if still_playing and _seat_pips(state, tab, other) > mine:
                ahead += 1
        state[PLACES + seat] = done + 1 + ahead
    state[OVER] = 1
    state[DIE] = 0


@inline_kernel
def pass_turn(state, tab):
    """Hand the turn to the next seat still playing."""
    players = tab[R_PLAYERS]
    seat = state[CURRENT]
    for _ in range(players):
        # Not `% players`: an integer division costs ~30 cycles and this runs after almost every roll.
        seat = seat + 1 if seat + 1 < players else 0
        if state[PLACES + seat] == 0:
            break
    state[CURRENT] = seat
    state[DIE] = 0
    state[SIXES] = 0


@inline_kernel
def _roll_again_or_pass(state, tab, bonus, events):
    """End a roll: the mover rolls again if it earned a bonus, else the next seat is up."""
    if bonus:
        state[DIE] = 0
        return events | EV_BONUS
    pass_turn(state, tab)
    return events


@inline_kernel
def set_die(state, tab, die, mask):
    """Record a roll for the mover and fill `mask` with its legal tokens; return events.

    A decision is pending iff ``state[DIE] != 0`` afterwards; otherwise the roll
    was forfeited or had no legal move, and the turn has moved on (or, for a six
    with no legal move, the mover rolls again).
    """
    if state[PLY] < PLY_MAX:
        state[PLY] += 1
    if tab[R_BONUS_SIX]:
        state[SIXES] = state[SIXES] + 1 if die == 6 else 0
        forfeit = tab[R_SIXES_FORFEIT]
        if forfeit > 0 and state[SIXES] >= forfeit:
            # Rule choice 3: only this roll is forfeited; earlier moves of the turn stand.
            pass_turn(state, tab)
            return EV_FORFEIT
    state[DIE] = die
    if legal_mask(state, tab, mask) > 0:
        return 0
    # Rule choice 4: a six with no legal move still earns its bonus roll.
    return _roll_again_or_pass(state, tab, die == 6 and tab[R_BONUS_SIX], EV_NO_MOVE)


@inline_kernel
def apply_move(state, tab, token):
    """Move `token` of the mover by the pending die (which must be legal); return events."""
    seat = state[CURRENT]
    die = state[DIE]
    i = token_index(seat, token)
    home = tab[R_HOME]
    q, events = move_outcome(state, tab, seat, token, die)
    on_star = (events >> EV_STAR_CAPTURED_SHIFT) & 0xF
    if on_star:
        star_progress = 0 if state[i] == BASE else move_target(state, tab, seat, token, die)
        _send_back_opponents(state, tab, seat, board_square(tab, seat, star_progress))
    state[i] = q
    if ((events >> EV_CAPTURED_SHIFT) & 0xF) > on_star:
        _send_back_opponents(state, tab, seat, board_square(tab, seat, q))
    if state[i] == home:
        events |= EV_TOKEN_HOME
        all_home = True
        for t in range(tab[R_TOKENS]):
            if state[token_index(seat, t)] != home:
                all_home = False
        if all_home:
            state[N_FINISHED] += 1
            state[PLACES + seat] = state[N_FINISHED]
            events |= EV_SEAT_FINISHED
            if tab[R_END_FIRST_WINNER] or state[N_FINISHED] >= tab[R_PLAYERS] - 1:
                _finish_game(state, tab)
                return events | EV_GAME_OVER
            # Rule choice 6: bringing the last token home ends the turn, whatever the die.
            pass_turn(state, tab)
            return events
    # Rule choices 2 and 6: entering keeps the six's bonus, and two reasons for a bonus give one roll.
    bonus = (
        (die == 6 and tab[R_BONUS_SIX])
        or ((events & EV_CAPTURE) != 0 and tab[R_BONUS_CAPTURE])
        or ((events & EV_TOKEN_HOME) != 0 and tab[R_BONUS_HOME])
    )
    return _roll_again_or_pass(state, tab, bonus, events)


@kernel
def init_state(state, tab, first_seat):
    """Overwrite `state` with a new game, `first_seat` to move and no die rolled."""
    restart = _restart_progress(tab)
    for k in range(state.shape[0]):
        state[k] = 0
    for seat in range(MAX_PLAYERS):
        for t in range(MAX_TOKENS):
            used = seat < tab[R_PLAYERS] and t < tab[R_TOKENS]
            state[token_index(seat, t)] = restart if used else UNUSED
    state[CURRENT] = first_seat


@kernel
def first_legal(state, tab):
    """Lowest movable token for the pending die, or -1."""
    seat = state[CURRENT]
    for t in range(tab[R_TOKENS]):
        if move_target(state, tab, seat, t, state[DIE]) != ILLEGAL:
            return t
    return -1
