"""Hand-built positions for bot, encoder and env tests: tokens by board square, a die, one state row."""
from __future__ import annotations

import numpy as np

from ludo_env.engine import Game, compile_rules
from ludo_env.rules import Rules


def square_progress(rules: Rules, seat: int, square: int) -> int:
    """Progress of a token of `seat` standing on board `square`."""
    return (square - rules.seat_starts[seat]) % rules.track_squares


def position(rules: Rules, tokens, die: int, current: int = 0):
    """(states (1, STATE_LEN), tab, masks (1, 4)) for `tokens[seat][t]` progress values, `current` to move with `die`.

    Fails if the die gives the mover no decision (the engine would pass the turn).
    """
    game = Game.from_position(rules, tokens, current=current)
    game.roll(die)
    assert game.die == die, f"die {die} leaves seat {current} no legal move here"
    return game.state[None].copy(), compile_rules(rules), game.legal_mask()[None].astype(np.int8)
