"""Seed 003 §2.2's simplified rules (`ucsd`) on hand-built positions.

Tokens start on their start square (progress 0) and return there when struck;
a token is home once its progress reaches 52 (a full lap, "52 needed for each
pawn"), on any roll that reaches or passes it. No extra roll on a six; a strike
still gives one (§2.1 rule 9). Safe squares as classic (marked *).
"""
from __future__ import annotations

from ludo_env.engine import Game
from ludo_env.rules import Rules
from tests.engine.conftest import progress_at

R = Rules.load("ucsd")
HOME = 52


def at(seat: int, square: int) -> int:
    return progress_at(R, seat, square)


def test_tokens_start_on_the_board_and_any_roll_moves():
    game = Game(R)
    assert game.tokens.tolist() == [[0] * 4] * 4
    game.roll(2)
    assert game.legal_tokens() == [0, 1, 2, 3]


def test_no_extra_roll_on_a_six():
    game = Game(R)
    game.roll(6)
    assert game.move(0) == []
    assert game.current == 1


def test_any_roll_reaching_or_passing_the_home_stretch_finishes():
    for start, die in [(49, 3), (50, 6), (51, 1)]:
        game = Game.from_position(R, [[start, 0, 0, 0], [0] * 4, [0] * 4, [0] * 4])
        game.roll(die)
        assert game.move(0) == ["token_home"], (start, die)
        assert game.tokens[0][0] == HOME


def test_a_strike_returns_the_token_to_its_start_square_and_gives_an_extra_roll():
    #  sq:  17 18 19 20         seat 0 on 17 rolls 3 onto seat 1's token on 20
    game = Game.from_position(R, [[at(0, 17), 0, 0, 0], [at(1, 20), 0, 0, 0], [0] * 4, [0] * 4])
    game.roll(3)
    assert game.move(0) == ["capture:1", "bonus_roll"]
    assert game.tokens[1][0] == 0 and game.current == 0


def test_safe_squares_cannot_be_struck():
    game = Game.from_position(R, [[at(0, 19), 0, 0, 0], [at(1, 22), 0, 0, 0], [0] * 4, [0] * 4])
    game.roll(3)
    assert game.move(0) == []
    assert game.tokens[1][0] == at(1, 22)
