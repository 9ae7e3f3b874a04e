"""launch/play.py: a whole game through a pseudo-terminal, Ctrl-C, one-line errors, the move words and the board.

The pexpect games play against the `random` bots in `quick` Ludo (two tokens
each) with `auto_forced=false`, so every decision of the person is a prompt:
about 30 prompts and a few seconds once the engine's kernels are cached.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from launch.play import COLUMN_CELLS, CORNERS, TRACK_CELLS, Paint, board_picture, describe_move
from ludo_env.engine import Game
from ludo_env.rules import Rules

pexpect = pytest.importorskip("pexpect", reason="the test extra: pip install -e '.[test]'")

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
PROMPT = r"Move which token\? \[([0-9/]+)\] "
GAME = ["opponents=[random,random,random]", "variant=quick", "seed=11", "seat=1", "auto_forced=false", "record=null"]
FIRST_PROMPT_S = 180  # a cold numba cache compiles the engine and the bots first
PROMPT_S = 30


def spawn(args: list[str], colour: bool):
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    if not colour:
        env["NO_COLOR"] = "1"
    return pexpect.spawn(sys.executable, ["launch/play.py", *args], cwd=str(ROOT), env=env, encoding="utf-8",
                         timeout=PROMPT_S, dimensions=(60, 120))


def test_a_whole_game_through_a_pseudo_terminal_ends_with_the_finishing_order_and_is_recorded(tmp_path):
    records = tmp_path / "me.jsonl"
    child = spawn([*GAME, f"record={records}"], colour=True)
    child.expect(PROMPT, timeout=FIRST_PROMPT_S)
    assert f"Your moves are appended to {records}" in ANSI.sub("", child.before)
    choices = child.match.group(1)
    assert re.search(rf"\r\n  token {choices.split('/')[0]}: \S", ANSI.sub("", child.before)), "the moves are listed"
    for bad in ("x", "9"):  # not a number, then not a legal token: both ask again, same moves
        child.sendline(bad)
        child.expect(rf"'{bad}' is not one of your moves: type ")
        child.expect(PROMPT)
        assert child.match.group(1) == choices
    prompts = 0
    typed = []
    while True:
        first = child.match.group(1).split("/")[0]
        if prompts:  # (the first prompt's moves were checked above, before the bad keys)
            assert re.search(rf"\r\n  token {first}: \S", ANSI.sub("", child.before)), "the moves are listed"
        child.sendline(first)
        prompts += 1
        typed.append((int(first), [int(t) for t in child.match.group(1).split("/")]))
        # The next line reports the move just typed, then the game goes on to the next prompt or the end.
        child.expect(r"green \(you\)\x1b\[0m rolls \d: token (\d)")
        assert child.match.group(1) == first
        if child.expect([PROMPT, r"Game over\. Finishing order: ([^\r\n]*)\r\n"]) == 1:
            break
    order = ANSI.sub("", child.match.group(1))
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert prompts >= 5
    places = re.findall(r"(\d)\. (\w+) \((\w+)\)", order)
    assert sorted(colour for _, colour, _ in places) == ["blue", "green", "red", "yellow"]
    assert [who for _, colour, who in places if colour == "green"] == ["you"]
    assert places[0][0] == "1"  # someone won
    transcript = child.before + order
    assert "Traceback" not in transcript

    # Every move of the person is a record line: the position, the legal tokens offered, the token typed.
    from policies.records import load_decisions, read_records

    lines = read_records(records)
    assert [(line["chosen"], [t for t in range(4) if line["legal"][t]]) for line in lines] == typed
    assert {(line["player"], line["seat"], line["variant"], line["players"]) for line in lines} == {("human", 1, "quick", 4)}
    assert len({line["game"] for line in lines}) == 1 and lines[0]["game"].startswith("play:11:")
    assert len(load_decisions([records])) == prompts


def test_ctrl_c_mid_game_exits_at_once_with_one_line():
    child = spawn(GAME, colour=False)
    child.expect(PROMPT, timeout=FIRST_PROMPT_S)
    child.sendline(child.match.group(1).split("/")[0])
    child.expect(PROMPT)
    seen = child.before
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    rest = child.before
    assert child.exitstatus == 130
    assert "interrupted: game abandoned" in rest and "Traceback" not in rest
    assert "\x1b[" not in seen + rest  # NO_COLOR: plain text
    assert "red (random)" in seen and "green (you)" in seen


@pytest.mark.parametrize(
    "args,expected",
    [
        (["opponents=[hybrid,nobody]"], "error: unknown player 'nobody': use a bot name"),
        (["opponents=[]"], "error: opponents=[] is not allowed"),
        (["opponents=[hybrid]", "seat=2"], "error: seat=2 is not a seat of a 2-player game: choose 0..1"),
        (["opponents=[random,random,random,random]"], "error: players=5 is not allowed for variant 'classic'"),
        (["variant.players=2"], "error: variant.players is not set by hand"),
        (["variant.blokades=true"], "error: unknown rule field 'blokades'"),
        (["delay=-1"], "error: delay=-1.0 is not allowed"),
        (["sead=3"], "error: Could not override 'sead'"),
    ],
)
def test_user_errors_are_one_line_on_stderr_and_exit_2(args, expected):
    run = subprocess.run([sys.executable, "launch/play.py", *args], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and run.stderr.startswith(expected), run.stderr
    assert run.stdout == ""


def test_q_quits_and_end_of_input_quits():
    for keys in ("q\n", ""):
        run = subprocess.run([sys.executable, "launch/play.py", *GAME], cwd=ROOT, capture_output=True, text=True,
                             timeout=120, check=False, input=keys)
        assert run.returncode == 0, run.stderr
        assert run.stderr.strip().endswith("game abandoned") and "Traceback" not in run.stderr
        assert "Move which token?" in run.stdout and "Finishing order" not in run.stdout


# ------------------------------------------------------------------ words and board, without a terminal
def test_a_move_is_described_with_its_squares_capture_and_bonus_roll():
    rules = Rules.load("classic", players=4)
    names = ["red", "green", "yellow", "blue"]
    # Red's token 0 on square 17 (progress 16); green's token 2 on square 20 (progress 6); red to move with a 3.
    game = Game.from_position(rules, [[16, -1, -1, -1], [-1, -1, 6, -1], [-1] * 4, [-1] * 4], current=0)
    game.roll(3)
    before = game.state.copy()
    assert describe_move(game, 0, names) == "token 0: square 17 -> 20, captures green, rolls again"
    assert (game.state == before).all()  # the move was tried on a copy
    entering = Game.from_position(rules, [[-1] * 4, [10, -1, -1, -1], [-1] * 4, [-1] * 4], current=0)
    entering.roll(6)
    assert describe_move(entering, 3, names) == "token 3: base -> square 1, rolls again"
    finishing = Game.from_position(rules, [[54, -1, -1, -1], [-1] * 4, [-1] * 4, [-1] * 4], current=0)
    finishing.roll(2)
    assert describe_move(finishing, 0, names) == "token 0: home column 4 -> home"


def test_the_board_track_is_one_closed_loop_joined_to_each_colours_start_corner_and_column():
    assert len(set(TRACK_CELLS.values())) == 52
    for square in range(52):
        (r0, c0), (r1, c1) = TRACK_CELLS[square], TRACK_CELLS[(square + 1) % 52]
        # Neighbours, diagonal ones included: the track cuts each inner corner of the cross, as on a real board.
        assert max(abs(r0 - r1), abs(c0 - c1)) == 1, f"squares {square} and {square + 1} are not neighbours"
    for colour in range(4):
        start, last = 1 + 13 * colour, (13 * colour - 1) % 52
        r, c = TRACK_CELLS[start]
        corner_r, corner_c = CORNERS[colour]
        assert corner_r <= r < corner_r + 6 or corner_c <= c < corner_c + 6  # the start square borders its base
        (lr, lc), (cr, cc) = TRACK_CELLS[last], COLUMN_CELLS[colour][0]
        assert abs(lr - cr) + abs(lc - cc) == 1  # the column leaves the track where the colour turns in


def test_the_board_shows_every_token_once_where_it_stands():
    rules = Rules.load("classic", players=2)  # seats on red and yellow
    game = Game.from_position(rules, [[-1, 5, 52, 56], [0, 0, -1, 30]], current=0)
    labels = {0: ("red", "you"), 2: ("yellow", "hybrid")}
    lines = [line[2:] for line in board_picture(game, labels, Paint(False))]
    cell = {(r, c): lines[r][3 * c: 3 * c + 3] for r in range(15) for c in range(15)}
    assert cell[TRACK_CELLS[1 + 5]] == "R1 "  # red's start is square 1
    assert cell[COLUMN_CELLS[0][52 - 51]] == "R2 "  # progress 52: the second step of red's column
    assert cell[TRACK_CELLS[27]] == "Y01"  # both yellow tokens on its start square
    assert cell[TRACK_CELLS[(27 + 30) % 52]] == "Y3 "
    assert cell[(7, 6)] == "R:1"  # one red token home
    assert sum(text.strip() == "R0" for text in cell.values()) == 1  # red's token 0 waits in its base
    assert sum(text.strip() == "Y2" for text in cell.values()) == 1
