"""pyludo rules (seed 002) on hand-built positions, one test per rule of its README.

Board squares are pyludo's player-0 coordinates: seat s enters on 1 + 13*s,
globes (safe, marked @) are 1, 9, 14, 22, 27, 35, 40, 48, stars (marked *)
are 6, 12, 19, 25, 32, 38, 45, 51. Progress = pyludo position - 1, so 56 is
pyludo's goal (99) and 51..55 its end lane 52..56.
"""
from __future__ import annotations

import pytest

from ludo_env.engine import Game
from ludo_env.rules import Rules, RulesError
from tests.engine.conftest import progress_at

B = -1
HOME = 56
R = Rules.load("pyludo")


def at(seat: int, square: int) -> int:
    return progress_at(R, seat, square)


def empty() -> list[list[int]]:
    return [[B] * 4 for _ in range(4)]


def test_always_four_players():
    with pytest.raises(RulesError, match="players=2 is not allowed for variant 'pyludo': choose one of 4"):
        Rules.load("pyludo", players=2)


def test_a_six_is_needed_to_enter_and_gives_no_extra_roll():
    game = Game.from_position(R, empty())
    assert game.roll(4) == ["no_move"] and game.current == 1
    game.roll(6)
    assert game.move(0) == ["entered"]
    assert game.tokens[1][0] == 0 and game.current == 2


def test_landing_on_a_globe_held_by_an_opponent_sends_the_mover_home():
    #  sq:  5 6* 7 8 9@          seat 0 on 5 rolls 4 onto globe 9 held by seat 1: seat 0 goes home
    #       A0        B1
    tokens = empty()
    tokens[0][0], tokens[1][0] = at(0, 5), at(1, 9)
    game = Game.from_position(R, tokens)
    game.roll(4)
    assert game.move(0) == ["sent_back"]
    assert game.tokens[0][0] == B and game.tokens[1][0] == at(1, 9)


def test_a_single_opponent_off_globes_is_sent_home():
    #  sq:  15 16 17            seat 0 on 15 rolls 2 onto seat 1's lone token on 17
    tokens = empty()
    tokens[0][0], tokens[1][0] = at(0, 15), at(1, 17)
    game = Game.from_position(R, tokens)
    game.roll(2)
    assert game.move(0) == ["capture:1"]
    assert game.tokens[1][0] == B and game.tokens[0][0] == at(0, 17)
    assert game.current == 1  # no extra roll for a capture


@pytest.mark.parametrize("second", [(1, 1), (2, 0)], ids=["same-colour", "two-colours"])
def test_two_or_more_opponent_tokens_send_the_mover_home(second):
    #  sq:  15 16 17            17 holds two opponent tokens (one colour or two): the mover goes home
    tokens = empty()
    tokens[0][0], tokens[1][0] = at(0, 15), at(1, 17)
    seat, t = second
    tokens[seat][t] = at(seat, 17)
    game = Game.from_position(R, tokens)
    game.roll(2)
    assert game.move(0) == ["sent_back"]
    assert game.tokens[0][0] == B
    assert game.tokens[1][0] == at(1, 17) and game.tokens[seat][t] == at(seat, 17)


def test_entering_sends_every_opponent_on_the_start_globe_home():
    # seat 0's start globe 1@ holds a seat 1 and a seat 2 token: entering captures both.
    tokens = empty()
    tokens[1][0], tokens[2][0] = at(1, 1), at(2, 1)
    game = Game.from_position(R, tokens)
    game.roll(6)
    assert game.move(0) == ["entered", "capture:2"]
    assert game.tokens[1][0] == B and game.tokens[2][0] == B and game.tokens[0][0] == 0


def test_a_star_jumps_to_the_next_star():
    #  sq:  3 . . 6* . . . . . 12*      seat 0 on 3 rolls 3: lands on star 6, jumps to star 12
    tokens = empty()
    tokens[0][0] = at(0, 3)
    game = Game.from_position(R, tokens)
    game.roll(3)
    assert game.move(0) == ["star"]
    assert game.tokens[0][0] == at(0, 12)


def test_a_lone_opponent_on_the_star_landed_on_is_sent_home_before_the_jump():
    # Seed 002: "landing on a single opponent token sends the opponent token home if it is not on a globe";
    # stars are not globes, so the star landed on captures, and so does the star the jump ends on.
    #  sq:  3 . . 6* ... 12*            seat 1 on 6 and seat 2 on 12: both go home, the mover rests on 12
    tokens = empty()
    tokens[0][0], tokens[1][0], tokens[2][0] = at(0, 3), at(1, 6), at(2, 12)
    game = Game.from_position(R, tokens)
    game.roll(3)
    assert game.move(0) == ["capture:2", "star"]
    assert game.tokens[1][0] == B and game.tokens[2][0] == B
    assert game.tokens[0][0] == at(0, 12)


def test_a_capture_on_the_star_stands_when_the_jump_end_sends_the_mover_home():
    # seat 1 alone on star 6, two seat-2 tokens on star 12: seat 1 goes home, then the mover does too.
    tokens = empty()
    tokens[0][0], tokens[1][0] = at(0, 3), at(1, 6)
    tokens[2][0], tokens[2][1] = at(2, 12), at(2, 12)
    game = Game.from_position(R, tokens)
    game.roll(3)
    assert game.move(0) == ["capture:1", "sent_back", "star"]
    assert game.tokens[1][0] == B and game.tokens[0][0] == B
    assert list(game.tokens[2][:2]) == [at(2, 12), at(2, 12)]


def test_a_lone_opponent_on_the_last_star_is_sent_home_and_the_mover_goes_to_goal():
    tokens = empty()
    tokens[0][0], tokens[1][0] = at(0, 47), at(1, 51)
    game = Game.from_position(R, tokens)
    game.roll(4)
    assert game.move(0) == ["capture:1", "token_home", "star"]
    assert game.tokens[1][0] == B and game.tokens[0][0] == HOME


@pytest.mark.parametrize(
    ("star_capture", "events", "star_6", "star_12"),
    [
        ("both", ["capture:2", "star"], B, B),
        ("landing", ["capture:1", "star"], B, "kept"),
        ("jump_end", ["capture:1", "star"], "kept", B),
    ],
)
def test_star_capture_chooses_which_star_captures(star_capture, events, star_6, star_12):
    rules = Rules.load("pyludo", star_capture=star_capture)
    tokens = empty()
    tokens[0][0], tokens[1][0], tokens[2][0] = at(0, 3), at(1, 6), at(2, 12)
    game = Game.from_position(rules, tokens)
    game.roll(3)
    assert game.move(0) == events
    assert game.tokens[1][0] == (at(1, 6) if star_6 == "kept" else star_6)
    assert game.tokens[2][0] == (at(2, 12) if star_12 == "kept" else star_12)
    assert game.tokens[0][0] == at(0, 12)


def test_with_landing_captures_the_jump_end_is_passed_as_if_empty():
    # Two seat-2 tokens on star 12 would send the mover home under 'both'; under 'landing' it joins them.
    rules = Rules.load("pyludo", star_capture="landing")
    tokens = empty()
    tokens[0][0] = at(0, 3)
    tokens[2][0], tokens[2][1] = at(2, 12), at(2, 12)
    game = Game.from_position(rules, tokens)
    game.roll(3)
    assert game.move(0) == ["star"]
    assert game.tokens[0][0] == at(0, 12)


def test_an_unknown_star_capture_is_refused_in_one_line():
    with pytest.raises(RulesError, match="star_capture='nowhere' is not allowed for variant 'pyludo': choose one of both, landing, jump_end"):
        Rules.load("pyludo", star_capture="nowhere")


def test_two_opponents_on_the_first_star_send_the_mover_home_before_any_jump():
    tokens = empty()
    tokens[0][0], tokens[1][0], tokens[1][1] = at(0, 3), at(1, 6), at(1, 6)
    game = Game.from_position(R, tokens)
    game.roll(3)
    assert game.move(0) == ["sent_back"]
    assert game.tokens[0][0] == B


def test_the_last_star_goes_straight_to_goal():
    #  sq:  47 48@ 49 50 51*  | end lane        seat 0 on 47 rolls 4: star 51 is its last, so goal
    tokens = empty()
    tokens[0][0] = at(0, 47)
    game = Game.from_position(R, tokens)
    game.roll(4)
    assert game.move(0) == ["token_home", "star"]
    assert game.tokens[0][0] == HOME


def test_jumping_onto_the_last_star_does_not_chain_to_goal():
    # seat 0 on 42 rolls 3: star 45 jumps to star 51 and stops there (pyludo jumps only once).
    tokens = empty()
    tokens[0][0] = at(0, 42)
    game = Game.from_position(R, tokens)
    game.roll(3)
    assert game.move(0) == ["star"]
    assert game.tokens[0][0] == at(0, 51) == 50


def test_an_overshoot_bounces_back_from_goal():
    # end lane step 4 (progress 54, pyludo 55) rolls 5: pyludo 60 bounces to 54, progress 53.
    tokens = empty()
    tokens[0][0] = 54
    game = Game.from_position(R, tokens)
    game.roll(5)
    assert game.move(0) == ["bounce"]
    assert game.tokens[0][0] == 53


def test_a_token_in_goal_cannot_move():
    tokens = empty()
    tokens[0] = [HOME, at(0, 20), B, B]
    game = Game.from_position(R, tokens)
    game.roll(3)
    assert game.legal_tokens() == [1]


def test_the_game_ends_at_the_first_winner():
    tokens = empty()
    tokens[0] = [HOME, HOME, HOME, 55]
    tokens[2] = [HOME, HOME, HOME, 50]
    game = Game.from_position(R, tokens)
    game.roll(1)
    assert "game_over" in game.move(3)
    assert game.places == [1, 3, 2, 3]
