"""The seed bots as numba kernels: one scalar `choose` per decision, dispatched by bot id.

Every bot reads the position through the engine (`move_outcome` for what a
move does, `tactics` for the opponents' next roll), so it plays every variant
by the same rules the engine enforces. Ties between equally good tokens go to
`fast` (the most advanced token), then to the lowest token index.

The bots and what each plays are the entries of `REGISTRY` below (one
`BuiltinBot` each, numbered by its place); `choose` switches on `BOT_ID`, and an
id with no branch there raises instead of playing another bot.

"Loss" below is the progress a token gives up if sent back: its progress minus
the restart point (base, or the start square where tokens start on the board).
"""
from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, replace

from ludo_env.engine.batch import random_legal
from ludo_env.engine.jit import inline_kernel, kernel
from ludo_env.engine.kernels import board_square, landing, move_outcome, progress_on, token_index
from ludo_env.engine.layout import (
    BASE,
    CURRENT,
    DIE,
    EV_CAPTURE,
    EV_ENTERED,
    EV_SENT_BACK,
    R_BONUS_CAPTURE,
    R_HOME,
    R_PLAYERS,
    R_START_IN_BASE,
    R_TOKENS,
    R_TRACK_STEPS,
)
from ludo_env.engine.tactics import DIE_FACES, gap_ahead, hit_chance, is_safe
from ludo_env.rules import MAX_TOKENS


@dataclass(frozen=True)
class BuiltinBot:
    """One built-in bot: its name, what it plays (with its source), and the id `choose` dispatches on."""

    name: str
    description: str
    id: int = -1
    """Its place in `REGISTRY`, given there: never written by hand, never saved (players are saved by name)."""


def _numbered(bots: tuple[BuiltinBot, ...]) -> dict[str, BuiltinBot]:
    """The registry: each bot numbered by its place, so an appended bot keeps every other bot's id."""
    names = [b.name for b in bots]
    bad = [n for n in names if not n.isidentifier() or names.count(n) > 1]
    if bad:
        raise ValueError(f"policies.bots.kernels.REGISTRY: bot names must be distinct Python names, not {bad}")
    return {b.name: replace(b, id=i) for i, b in enumerate(bots)}


REGISTRY: dict[str, BuiltinBot] = _numbered((
    BuiltinBot("random", "uniformly random legal token"),
    BuiltinBot("fast", "most advanced token (seed 003 §8)"),
    BuiltinBot("aggressive", "strike, else chase, else fast (seed 003 §10)"),
    BuiltinBot("defensive", "least risk to the own tokens after the move, else fast (seed 003 §11)"),
    BuiltinBot("hybrid", "highest MoveAdvantage = (future reward - future risk) - (current reward - current "
                         "risk), else fast (seed 003 §12)"),
    BuiltinBot("semi_smart", "first token that can leave the base, else the first that can move (seed 001 §2.1)"),
    BuiltinBot("heuristic000", "capture, then reach home, then land on a safe square, then advance furthest "
                               "(seed 000 HeuristicBot)"),
))  # a new bot goes last: ids are places, so every other bot keeps its id
BOT_NAMES = tuple(REGISTRY)
BOT_ID = namedtuple("BotId", BOT_NAMES)(*(REGISTRY[n].id for n in BOT_NAMES))
"""The ids `choose` switches on, by name (``BOT_ID.fast``): numba reads a tuple as constants, never the dict."""

EXPECTED_BONUS_ROLL = 3.5  # seed 003 §12.2: the mean die of the extra turn a strike earns
TIE = 1e-9


@kernel
def outcome(state, tab, seat, token, die):
    """`move_outcome`, compiled once: inlining it at every call site made the bots take minutes to compile."""
    return move_outcome(state, tab, seat, token, die)


@kernel
def landing_once(state, tab, seat, q):
    """`landing`, compiled once (see `outcome`)."""
    return landing(state, tab, seat, q)


@inline_kernel
def loss_if_sent_back(tab, progress):
    """Progress a token at `progress` gives up when sent back (0 in base, home column or home)."""
    if progress < 0 or progress >= tab[R_TRACK_STEPS]:
        return 0
    return progress + 1 if tab[R_START_IN_BASE] else progress


@inline_kernel
def fastest(state, tab, candidates):
    """Most advanced token among the bit set `candidates` (lowest index on ties), or -1."""
    seat = state[CURRENT]
    best = -1
    best_p = -1000
    for t in range(MAX_TOKENS):
        if (candidates >> t) & 1:
            p = state[token_index(seat, t)]
            if p > best_p:
                best, best_p = t, p
    return best


@inline_kernel
def fast_choice(state, tab, candidates):
    """`fast` over the candidates whose move gains progress (a bounce in the home column does not), else all."""
    seat, die = state[CURRENT], state[DIE]
    gaining = 0
    for t in range(MAX_TOKENS):
        if (candidates >> t) & 1:
            p = state[token_index(seat, t)]
            q, events = outcome(state, tab, seat, t, die)
            if q > p and not events & EV_SENT_BACK:
                gaining |= 1 << t
    return fastest(state, tab, gaining if gaining else candidates)


@inline_kernel
def _legal_bits(mask):
    bits = 0
    for t in range(MAX_TOKENS):
        if mask[t]:
            bits |= 1 << t
    return bits


@inline_kernel
def _lowest(bits):
    for t in range(MAX_TOKENS):
        if (bits >> t) & 1:
            return t
    return -1


@kernel
def _aggressive(state, tab, legal):
    seat, die = state[CURRENT], state[DIE]
    strikers = 0
    chasers = 0
    for t in range(MAX_TOKENS):
        if (legal >> t) & 1:
            _, events = outcome(state, tab, seat, t, die)
            if events & EV_CAPTURE:
                strikers |= 1 << t
            gap = gap_ahead(state, tab, seat, state[token_index(seat, t)])
            if gap > die:
                chasers |= 1 << t
    if strikers:
        return fast_choice(state, tab, strikers)
    if chasers:
        return fast_choice(state, tab, chasers)
    return fast_choice(state, tab, legal)


@kernel
def token_risk(state, tab, seat, progress, joining):
    """Expected progress lost by a token at `progress` to the opponents' next rolls."""
    return loss_if_sent_back(tab, progress) * hit_chance(state, tab, seat, progress, joining)


@kernel
def _move_risk_change(state, tab, seat, t, die):
    """Change in the mover's total expected loss if token t moves (certain loss if the move sends it back)."""
    p = state[token_index(seat, t)]
    q, events = outcome(state, tab, seat, t, die)
    before = token_risk(state, tab, seat, p, 0)
    if events & EV_SENT_BACK:
        return loss_if_sent_back(tab, p) - before
    return token_risk(state, tab, seat, q, 1) - before


@kernel
def loss_on_square(state, tab, seat, square):
    """Total progress the opponents of `seat` would lose if their tokens on `square` were sent back."""
    total = 0
    for other in range(tab[R_PLAYERS]):
        if other == seat:
            continue
        p = progress_on(tab, other, square)
        if p < 0:
            continue
        for t in range(tab[R_TOKENS]):
            if state[token_index(other, t)] == p:
                total += loss_if_sent_back(tab, p)
    return total


@kernel
def strike_reward(state, tab, seat, progress):
    """Expected opponent progress a token at `progress` strikes with its next roll (seed 003 §12.2)."""
    if progress < 0 or progress >= tab[R_TRACK_STEPS]:
        return 0.0
    total = 0.0
    for d in range(1, DIE_FACES + 1):
        q = progress + d
        if q >= tab[R_TRACK_STEPS]:
            break
        final, events = landing_once(state, tab, seat, q)
        if events & EV_CAPTURE:
            total += loss_on_square(state, tab, seat, board_square(tab, seat, final))
    return total / DIE_FACES


@kernel
def move_advantage(state, tab, seat, t, die):
    """Seed 003 §12.4's MoveAdvantage of moving token t (see the package docstring for the readings)."""
    p = state[token_index(seat, t)]
    q, events = outcome(state, tab, seat, t, die)
    current = strike_reward(state, tab, seat, p) - token_risk(state, tab, seat, p, 0)
    if events & EV_SENT_BACK:
        return -loss_if_sent_back(tab, p) - current
    gain = die if events & EV_ENTERED else q - p
    future = float(gain)
    if events & EV_CAPTURE:
        if q >= 0 and q < tab[R_TRACK_STEPS]:
            future += loss_on_square(state, tab, seat, board_square(tab, seat, q))
        if tab[R_BONUS_CAPTURE]:
            future += EXPECTED_BONUS_ROLL
    future += strike_reward(state, tab, seat, q) - token_risk(state, tab, seat, q, 1)
    return future - current


@kernel
def _best_scored(state, tab, legal, hybrid):
    """The legal token with the highest score, `fast` among ties.

    The score is `move_advantage` for hybrid, and minus `_move_risk_change`
    for defensive (least risk wins).
    """
    seat, die = state[CURRENT], state[DIE]
    best_bits = 0
    best = -1e30
    for t in range(MAX_TOKENS):
        if (legal >> t) & 1:
            value = move_advantage(state, tab, seat, t, die) if hybrid else -_move_risk_change(state, tab, seat, t, die)
            if value > best + TIE:
                best, best_bits = value, 1 << t
            elif value >= best - TIE:
                best_bits |= 1 << t
    return fastest(state, tab, best_bits)


@kernel
def _semi_smart(state, tab, legal):
    seat = state[CURRENT]
    for t in range(MAX_TOKENS):
        if (legal >> t) & 1 and state[token_index(seat, t)] == BASE:
            return t
    return _lowest(legal)


@kernel
def _heuristic000(state, tab, legal):
    seat, die = state[CURRENT], state[DIE]
    best, best_score = -1, -1
    for t in range(MAX_TOKENS):
        if (legal >> t) & 1:
            q, events = outcome(state, tab, seat, t, die)
            if events & EV_CAPTURE:
                score = 4000 + q
            elif q == tab[R_HOME]:
                score = 3000
            elif q >= 0 and q < tab[R_TRACK_STEPS] and is_safe(tab, board_square(tab, seat, q)):
                score = 2000 + q
            else:
                score = q + 1  # entering scores 1, below any move along the track
            if score > best_score:
                best, best_score = t, score
    return best


@kernel
def choose(bot_id, state, tab, mask, rng, stream):
    """Token that bot `bot_id` moves in a game waiting on a decision; -1 if nothing is legal."""
    legal = _legal_bits(mask)
    if legal == 0:
        return -1
    if legal & (legal - 1) == 0:
        return _lowest(legal)  # a forced move needs no thought (and draws no random number)
    if bot_id == BOT_ID.random:
        return random_legal(mask, rng, stream)
    if bot_id == BOT_ID.fast:
        return fast_choice(state, tab, legal)
    if bot_id == BOT_ID.aggressive:
        return _aggressive(state, tab, legal)
    if bot_id == BOT_ID.defensive:
        return _best_scored(state, tab, legal, False)
    if bot_id == BOT_ID.hybrid:
        return _best_scored(state, tab, legal, True)
    if bot_id == BOT_ID.semi_smart:
        return _semi_smart(state, tab, legal)
    if bot_id == BOT_ID.heuristic000:
        return _heuristic000(state, tab, legal)
    # An id registered without a branch here (or no bot at all): fail, never play another bot.
    raise ValueError("bot id has no branch in policies.bots.kernels.choose")


@kernel
def choose_batch(bot_id, states, tab, masks, rng, out):
    """`out[b]` = the bot's token for game b (-1 for games with no decision pending)."""
    for b in range(states.shape[0]):
        out[b] = choose(bot_id, states[b], tab, masks[b], rng, b)
