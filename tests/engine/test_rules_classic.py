"""Classic rules (seed 000, seed 003 §2.1) on hand-built positions.

Board squares follow seed 000: seat s enters on square 1 + 13*s; safe squares
are the starts 1, 14, 27, 40 and the stars 9, 22, 35, 48 (marked * below).
Progress 0..50 is the shared track, 51..55 the home column, 56 home.
"""
from __future__ import annotations

import pytest

from ludo_env.engine import Game, IllegalMoveError
from ludo_env.rules import Rules
from tests.engine.conftest import progress_at

B = -1  # in base
HOME = 56
R = Rules.load("classic")


def at(seat: int, square: int) -> int:
    return progress_at(R, seat, square)


def test_a_six_is_needed_to_leave_base():
    # seat 0: [base base base base]; rolls a 5: nothing can move, seat 1 is next.
    game = Game.from_position(R, [[B] * 4, [B] * 4, [B] * 4, [B] * 4])
    assert game.roll(5) == ["no_move"]
    assert game.current == 1
    # seat 1 rolls a 6: every token may enter, onto its start square 14 (progress 0), and rolls again.
    game.roll(6)
    assert game.legal_tokens() == [0, 1, 2, 3]
    events = game.move(2)
    assert game.tokens[1].tolist() == [B, B, 0, B]
    assert "entered" in events and "bonus_roll" in events
    assert game.current == 1 and game.die == 0


def test_a_six_gives_another_roll():
    #  sq:  5 . . . . . 11        seat 0 token on 5 rolls 6 -> 11, and rolls again
    game = Game.from_position(R, [[at(0, 5), B, B, B], [B] * 4, [B] * 4, [B] * 4])
    game.roll(6)
    assert game.move(0) == ["bonus_roll"]
    assert game.tokens[0][0] == at(0, 11) and game.current == 0


def test_third_six_in_a_row_forfeits_the_roll_without_moving():
    game = Game.from_position(R, [[at(0, 5), B, B, B], [B] * 4, [B] * 4, [B] * 4], sixes=2)
    assert game.roll(6) == ["forfeit"]
    assert game.tokens[0][0] == at(0, 5)
    assert game.current == 1


def test_sixes_count_resets_on_other_rolls():
    game = Game.from_position(R, [[at(0, 5), B, B, B], [B] * 4, [B] * 4, [B] * 4], sixes=2)
    game.roll(3)
    assert game.to_dict()["sixes"] == 0


def test_capture_sends_every_opposing_token_home_and_gives_a_bonus_roll():
    #  sq:  17 18 19 20          seat 0 on 17 rolls 3; seat 1 has two tokens on 20 (not safe)
    #       A0  .  . B1B1
    game = Game.from_position(R, [[at(0, 17), B, B, B], [at(1, 20), at(1, 20), B, B], [B] * 4, [B] * 4])
    game.roll(3)
    events = game.move(0)
    assert "capture:2" in events and "bonus_roll" in events
    assert game.tokens[1].tolist() == [B, B, B, B]
    assert game.tokens[0][0] == at(0, 20) and game.current == 0


def test_safe_star_square_is_shared():
    #  sq:  19 20 21 22*          seat 0 on 19 rolls 3 onto star 22 held by seat 1: both stay
    game = Game.from_position(R, [[at(0, 19), B, B, B], [at(1, 22), B, B, B], [B] * 4, [B] * 4])
    game.roll(3)
    assert game.move(0) == []
    assert game.tokens[0][0] == at(0, 22) and game.tokens[1][0] == at(1, 22)
    assert game.current == 1


def test_start_square_is_safe_when_entering():
    # seat 3 token sits on seat 0's start square 1*; seat 0 enters onto it: no capture.
    game = Game.from_position(R, [[B] * 4, [B] * 4, [B] * 4, [at(3, 1), B, B, B]])
    game.roll(6)
    assert game.move(0) == ["entered", "bonus_roll"]
    assert game.tokens[3][0] == at(3, 1)


def test_turn_into_home_column_before_own_start():
    # seat 1 token on square 12 (progress 50, the last track step) rolls 2 -> home column step 2 (progress 52)
    game = Game.from_position(R, [[B] * 4, [at(1, 12), B, B, B], [B] * 4, [B] * 4], current=1)
    assert game.tokens[1][0] == 50
    game.roll(2)
    game.move(0)
    assert game.tokens[1][0] == 52


def test_home_needs_an_exact_roll():
    # seat 0 token in home column step 4 (progress 54): a 3 would pass home, a 2 lands exactly.
    game = Game.from_position(R, [[54, at(0, 30), B, B], [B] * 4, [B] * 4, [B] * 4])
    game.roll(3)
    assert game.legal_tokens() == [1]
    with pytest.raises(IllegalMoveError, match="cannot move token 0 with a 3: legal tokens are \\[1\\]"):
        game.move(0)
    game = Game.from_position(R, [[54, at(0, 30), B, B], [B] * 4, [B] * 4, [B] * 4])
    game.roll(2)
    assert game.move(0) == ["token_home"]
    assert game.tokens[0][0] == HOME


def test_a_six_with_no_legal_move_still_rolls_again():
    # Three tokens home and one at progress 53: a 6 cannot move, but the six's bonus roll stands.
    game = Game.from_position(R, [[HOME, HOME, HOME, 53], [B] * 4, [B] * 4, [B] * 4])
    assert game.roll(6) == ["bonus_roll", "no_move"]
    assert game.current == 0


def test_first_winner_ends_the_game_and_the_rest_are_placed_by_progress():
    game = Game.from_position(
        R, [[HOME, HOME, HOME, 55], [at(1, 20), B, B, B], [10, 20, B, B], [B] * 4]
    )
    game.roll(1)
    assert "game_over" in game.move(3)
    assert game.over and game.winner == 0
    # pips: seat 1 = 7, seat 2 = 11 + 21 = 32, seat 3 = 0
    assert game.places == [1, 3, 2, 4]
    with pytest.raises(IllegalMoveError, match="the game is over"):
        game.roll(1)


def test_last_standing_plays_on_until_one_seat_is_left():
    rules = Rules.load("classic", end="last_standing")
    game = Game.from_position(rules, [[HOME, HOME, HOME, 55], [B] * 4, [B] * 4, [B] * 4])
    game.roll(1)
    assert "seat_finished" in game.move(3) and not game.over
    assert game.places == [1, 0, 0, 0] and game.current == 1


def test_two_players_sit_opposite():
    rules = Rules.load("classic", players=2)
    assert rules.seat_starts == (1, 27)
    three = Rules.load("classic", players=3)
    assert three.seat_starts == (1, 14, 27)


def test_house_rule_bonus_roll_on_reaching_home():
    rules = Rules.load("classic", bonus_roll_on_home=True)
    game = Game.from_position(rules, [[54, B, B, B], [B] * 4, [B] * 4, [B] * 4])
    game.roll(2)
    assert game.move(0) == ["token_home", "bonus_roll"]
    assert game.current == 0


def test_house_rule_blockade_cannot_be_passed_or_landed_on():
    #  sq:  17 18 19 20          seat 1 holds 19 with two tokens: seat 0 on 17 may move 1, not 2 or 3
    #       A0  . B1B1 .
    rules = Rules.load("classic", blockades=True)
    for die, legal in [(1, [0]), (2, []), (3, [])]:
        game = Game.from_position(rules, [[at(0, 17), B, B, B], [at(1, 19), at(1, 19), B, B], [B] * 4, [B] * 4])
        game.roll(die)
        assert game.legal_tokens() == legal, die
    # without the house rule the same 3 lands on 20 and the pair does not matter
    game = Game.from_position(R, [[at(0, 17), B, B, B], [at(1, 19), at(1, 19), B, B], [B] * 4, [B] * 4])
    game.roll(3)
    assert game.legal_tokens() == [0]


def test_house_rule_blockade_on_start_square_stops_entering():
    rules = Rules.load("classic", blockades=True)
    game = Game.from_position(rules, [[B, B, B, B], [B] * 4, [B] * 4, [at(3, 1), at(3, 1), B, B]])
    assert game.roll(6) == ["bonus_roll", "no_move"]


def test_checked_mode_refuses_out_of_turn_actions():
    game = Game(R)
    with pytest.raises(IllegalMoveError, match="has not rolled yet"):
        game.move(0)
    game.roll(6)
    with pytest.raises(IllegalMoveError, match="already rolled 6"):
        game.roll(2)
    with pytest.raises(IllegalMoveError, match="die=7 is not a die value"):
        Game(R).roll(7)


def test_hand_built_positions_are_checked():
    with pytest.raises(IllegalMoveError, match="token 1 of seat 0 at 60 is off its path: use -1..56"):
        Game.from_position(R, [[0, 60, B, B], [B] * 4, [B] * 4, [B] * 4])
    with pytest.raises(IllegalMoveError, match="current=4 is not a seat: choose 0..3"):
        Game.from_position(R, [[B] * 4] * 4, current=4)
    with pytest.raises(IllegalMoveError, match="sixes=3 is not allowed: use 0..2"):
        Game.from_position(R, [[B] * 4] * 4, sixes=3)
