"""Hand-built positions for bot, encoder and env tests: tokens by board square, a die, one state row."""
from __future__ import annotations

import numpy as np

from ludo_env.engine import Game, compile_rules
from ludo_env.rules import Rules


def random_walk(variant: str, players: int, seed: int, games: int, plies: int):
    """`(rules, tab, walk)`: `walk` yields ``(ply, states, after, legal)`` before each of `plies` random moves in
    `games` games (seats taking turns to start), ``after, legal`` being `expand_moves` of ``states``."""
    from ludo_env.engine import new_batch, step_batch
    from ludo_env.engine.afterstates import expand_moves

    rules = Rules.load(variant, players=players)
    tab = compile_rules(rules)

    def walk():
        states, rng = new_batch(tab, games, seed, first_seats=np.arange(games) % players)
        masks = np.zeros((games, 4), dtype=np.int8)
        events = np.zeros(games, dtype=np.int32)
        chooser = np.random.default_rng(seed)
        for ply in range(plies):
            after, legal, _ = expand_moves(states, tab)
            yield ply, states, after, legal
            choices = np.where(legal == 1, chooser.random(legal.shape), -1).argmax(axis=1)
            step_batch(states, tab, rng, choices, events, masks)

    return rules, tab, walk()


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


def mid_game_positions(players: int = 4, games: int = 48, plies: int = 40, seed: int = 3):
    """`(states, tab, masks)`: classic positions after `plies` random moves (`random_walk`), only those waiting on a
    decision."""
    _, tab, walk = random_walk("classic", players, seed, games, plies + 1)
    for ply, states, _, legal in walk:  # noqa: B007  states and legal are read after the break
        if ply == plies:  # stop before the walk plays on
            break
    waiting = legal.any(axis=1)
    return states[waiting].copy(), tab, legal[waiting].astype(np.int8)
