"""Shared helpers for engine tests: build positions by board square, play both engines side by side."""
from __future__ import annotations

import random

from ludo_env.engine import Game
from ludo_env.rules import Rules
from tests.engine.reference import RefGame


def progress_at(rules: Rules, seat: int, square: int) -> int:
    """Progress of a token of `seat` standing on board `square` (the inverse of the board rotation)."""
    return (square - rules.seat_starts[seat]) % rules.track_squares


def play_side_by_side(rules: Rules, seed: int, max_rolls: int = 5000, first_seat: int = 0) -> int:
    """Play one game in the engine and the reference with the same dice and choices.

    Asserts equal state, legal mask and events after every roll and move; returns
    the number of rolls played.
    """
    rnd = random.Random(seed)
    game, ref = Game(rules, first_seat=first_seat), RefGame(rules, first_seat=first_seat)
    rolls = 0
    while not game.over and rolls < max_rolls:
        die = rnd.randint(1, 6)
        rolls += 1
        assert set(game.roll(die)) == ref.roll(die), (seed, rolls)
        assert game.to_dict() == ref.to_dict(), (seed, rolls, "after roll")
        assert game.legal_mask().tolist() == ref.legal(), (seed, rolls)
        if game.awaiting_move:
            token = rnd.choice(game.legal_tokens())
            assert set(game.move(token)) == ref.move(token), (seed, rolls, token)
            assert game.to_dict() == ref.to_dict(), (seed, rolls, "after move")
    assert ref.over == game.over
    return rolls
