"""Quick Ludo (seed 000): classic rules and board with two tokens per player."""
from __future__ import annotations

from ludo_env.engine import Game
from ludo_env.engine.layout import STATE_LEN
from ludo_env.rules import Rules

R = Rules.load("quick")
B = -1


def test_two_tokens_each_and_classic_entry():
    game = Game(R)
    assert game.tokens.tolist() == [[B, B]] * 4
    assert game.roll(5) == ["no_move"]
    game.roll(6)
    assert game.legal_tokens() == [0, 1]
    assert game.state.shape == (STATE_LEN,)


def test_both_tokens_home_wins():
    game = Game.from_position(R, [[56, 55], [B, B], [B, B], [B, B]])
    game.roll(1)
    assert "game_over" in game.move(1)
    assert game.winner == 0
