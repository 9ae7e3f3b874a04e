"""Tracebacks and unclear ends of the commands: Ctrl-C during ``league.py add`` said nothing was recorded and left
the member in the league; a league.db whose schema_version is not a number, and a damaged league.db, gave a
traceback or several lines; ``--help`` and ``show`` with stdout on /dev/full gave a traceback."""
from __future__ import annotations

import random
import signal
import sqlite3
import subprocess
import sys

import pytest

from policies.league.store import LeagueStore
from tests.security.helpers import ROOT, bot_league, one_error_line, ratings, run_command


def test_ctrl_c_during_league_add_leaves_the_league_as_it_was(tmp_path):
    from tests.league.tiny_policy import write_tiny_policy

    policy = write_tiny_policy(tmp_path / "p4" / "policy", seed=1, players=2, variant="quick")
    run = bot_league(tmp_path / "run")
    proc = subprocess.Popen([sys.executable, "launch/league.py", "add", str(policy), f"league={run / 'league.db'}",
                             "players=2", "variant=quick", "panel_games=1000000"], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline()
        assert line.startswith("added "), line + proc.stderr.read()
        proc.send_signal(signal.SIGINT)  # while its panel games are played
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130 and err.strip().splitlines()[-1].startswith("interrupted: "), err[-2000:]
    assert set(ratings(run)) == {"random", "hybrid"}  # as it was


@pytest.mark.parametrize("command", [["launch/serve.py", "port=0", "league={db}", "records={tmp}/records"],
                                     ["launch/leaderboard.py", "league={db}", "out={tmp}/board.html"],
                                     ["launch/league.py", "show", "league={db}"]], ids=["serve", "leaderboard", "show"])
def test_a_schema_version_that_is_no_number_is_one_line(tmp_path, command):
    run = bot_league(tmp_path / "run")
    with sqlite3.connect(run / "league.db") as db:
        db.execute("UPDATE meta SET value = 'abc' WHERE key = 'schema_version'")
    args = [a.format(db=run / "league.db", tmp=tmp_path) for a in command]
    line = one_error_line(run_command(*args, timeout=120))
    assert "schema_version is 'abc', not a number" in line


def damaged_league(path):
    """A league database damaged so that SQLite's integrity_check lists many problems, one a line, while it still
    opens: bytes overwritten at random places (seeded) until one such damage turns up."""
    with LeagueStore.open(path) as store:
        for k in range(300):
            store.add_member(f"bot-{k}", kind="bot", spec="random")
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    clean = path.read_bytes()
    rng = random.Random(0)
    for _ in range(2000):
        data = bytearray(clean)
        start = rng.randrange(4096, len(data) - 40)
        data[start:start + rng.randrange(1, 30)] = bytes([rng.randrange(256)]) * rng.randrange(1, 30)
        path.write_bytes(bytes(data))
        try:
            with sqlite3.connect(path) as db:
                problems = db.execute("PRAGMA integrity_check").fetchall()
                db.execute("SELECT value FROM meta").fetchall()
        except sqlite3.DatabaseError:
            continue
        if problems != [("ok",)] and "\n" in problems[0][0]:
            return path
    raise AssertionError("no damage found that integrity_check reports on several lines")


def test_a_damaged_league_db_is_one_line(tmp_path):
    db = damaged_league(tmp_path / "league.db")
    line = one_error_line(run_command("launch/league.py", "show", f"league={db}", timeout=120))
    assert "the league database is damaged (integrity_check: " in line and "more problems" in line


@pytest.mark.parametrize("command", [["launch/serve.py", "--help"], ["launch/leaderboard.py", "--help"],
                                     ["launch/league.py", "show", "league={db}"]],
                         ids=["serve --help", "leaderboard --help", "league show"])
def test_stdout_on_dev_full_is_one_line(tmp_path, command):
    run = bot_league(tmp_path / "run")
    args = [a.format(db=run / "league.db") for a in command]
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, *args], cwd=ROOT, stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=120, stdin=subprocess.DEVNULL, check=False)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert lines[0] == "error: cannot write to stdout (No space left on device)"
