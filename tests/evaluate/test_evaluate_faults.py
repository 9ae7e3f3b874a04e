"""Faults met inside a tournament: a `py:` bot that hangs or prints, and games played in slices (so
Ctrl-C is seen) being the same games as in one call. The bots below are loaded as ``py:`` players by name."""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from launch.simulate import play_in_slices
from ludo_env.engine import compile_rules, new_batch, play_random
from ludo_env.rules import Rules
from policies import tournament
from policies.players import MoveTimeout, PythonPlayer, make_player
from policies.tournament import play_tournament
from tests.launch.test_faults_io import command, one_line_failure

HERE = "tests.evaluate.test_evaluate_faults"


class Sleepy:
    """Writes the file named by $SLEEPY_MARK at its first call (if set), then sleeps far past any limit."""

    def choose(self, view, die, mask):
        mark = os.environ.get("SLEEPY_MARK")
        if mark:
            Path(mark).write_text("asked")
        time.sleep(600)
        return mask.argmax(axis=1)


class Chatty:
    """Prints at import of nothing, at construction and at every call: none of it may reach stdout."""

    def __init__(self):
        print("chatty bot: hello from the constructor")

    def choose(self, view, die, mask):
        print("chatty bot: thinking")
        return mask.argmax(axis=1)


@pytest.mark.serial  # times how fast it happens (tests/conftest.py)
def test_a_bot_slower_than_its_move_time_limit_stops_the_tournament_with_one_line_naming_it():
    start = time.perf_counter()
    with pytest.raises(MoveTimeout, match=r"Sleepy.choose \(py:tests.evaluate.test_evaluate_faults:Sleepy\) took "
                                          r"longer than 0.5 s"):
        play_tournament([f"py:{HERE}:Sleepy", "random"], 2, "classic", move_time_limit=0.5)
    assert time.perf_counter() - start < 20


def test_the_default_limit_is_per_call_and_none_means_no_limit():
    player = make_player(f"py:{HERE}:Chatty")
    assert isinstance(player, PythonPlayer) and player.time_limit == 30.0
    assert make_player(f"py:{HERE}:Chatty", move_time_limit=None).time_limit is None


def test_evaluate_refuses_a_sleeping_bot_in_one_line_and_leaves_no_run_folder(tmp_path):
    proc = command("evaluate.py", f"players=[py:{HERE}:Sleepy,random]", "games=2", "progress=false",
                   "move_time_limit=1", f"hydra.run.dir={tmp_path / 'run'}", timeout=240)
    one_line_failure(proc, "Sleepy.choose", "took longer than 1 s", "move_time_limit=")
    assert proc.stdout == ""
    assert list(tmp_path.iterdir()) == []  # no run folder with its evaluate.log


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "abc"])
def test_a_bad_move_time_limit_is_one_line(tmp_path, value):
    proc = command("evaluate.py", f"move_time_limit={value}", cwd=tmp_path)
    one_line_failure(proc, "move_time_limit")
    assert list(tmp_path.iterdir()) == []


def test_what_a_bot_prints_goes_to_stderr_and_stdout_holds_the_table_alone(tmp_path):
    proc = command("evaluate.py", f"players=[py:{HERE}:Chatty,random]", "games=4", "progress=false",
                   f"hydra.run.dir={tmp_path / 'run'}", timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "chatty bot" not in proc.stdout
    assert "chatty bot: hello from the constructor" in proc.stderr and "chatty bot: thinking" in proc.stderr
    assert proc.stdout.splitlines()[0].startswith("classic, 2 players, 4 games")


def test_the_fast_path_in_slices_plays_the_same_games(monkeypatch):
    players = ["hybrid", "random", "fast", "aggressive"]
    whole = play_tournament(players, 64, "classic", seed=5, threads=1)
    monkeypatch.setattr(tournament, "FAST_SLICE", 3)
    sliced = play_tournament(players, 64, "classic", seed=5, threads=1)
    assert whole.path == sliced.path == "fast"
    for key in ("places", "moves", "plies", "finished"):
        assert np.array_equal(getattr(whole, key), getattr(sliced, key)), key


def test_simulate_in_slices_plays_the_same_games_as_one_call():
    tab = compile_rules(Rules.load("classic"))
    states, rng = new_batch(tab, 50, 11)
    moves = play_random(states, tab, rng, 10_000)
    sliced_states, sliced_rng = new_batch(tab, 50, 11)
    sliced_moves = play_in_slices(sliced_states, tab, sliced_rng, 10_000, False, size=7)
    assert np.array_equal(states, sliced_states) and np.array_equal(moves, sliced_moves)
    assert np.array_equal(rng, sliced_rng)
