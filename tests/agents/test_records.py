"""Game records (policies.records): the evaluator records one entry's decisions, exactly as it played them."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ludo_env.engine import compile_rules
from ludo_env.engine.layout import CURRENT, PLY
from ludo_env.rules import Rules
from policies.bots import Bot
from policies.records import RecordError, RecordWriter, load_decisions, read_records
from policies.tournament import TournamentError, play_tournament

ROOT = Path(__file__).resolve().parents[2]
PYLUDO = Rules.load("pyludo")
SEATS = ["hybrid", "random", "random", "random"]


def test_a_recorded_tournament_plays_the_same_games_and_records_every_decision_of_the_entry(tmp_path):
    file = tmp_path / "records.jsonl"
    recorded = play_tournament(SEATS, 12, PYLUDO, seed=3, record=file, record_entry=0, rate=False)
    plain = play_tournament(SEATS, 12, PYLUDO, seed=3, rate=False)  # the fast path
    assert (recorded.path, plain.path) == ("generic", "fast")
    for name in ("seats", "places", "moves", "plies", "finished"):
        np.testing.assert_array_equal(getattr(recorded, name), getattr(plain, name), err_msg=name)

    decisions = load_decisions([file])
    assert decisions.rules == PYLUDO and set(decisions.players) == {"hybrid"}
    lines = read_records(file)
    assert {line["game"] for line in lines} == {f"evaluate:3:{g}" for g in range(12)}
    for line in lines:  # the entry's own seat in that game
        game = int(line["game"].rpartition(":")[2])
        assert line["seat"] == int(np.flatnonzero(recorded.seats[game] == 0)[0])
    plies = [line["state"][PLY] for line in lines]  # PLY: each game's lines in the order played
    games = [line["game"] for line in lines]
    assert all(p1 < p2 for (g1, p1), (g2, p2) in zip(zip(games, plies), zip(games[1:], plies[1:])) if g1 == g2)
    # The recorded tokens are what hybrid plays in those positions.
    again = Bot("hybrid").act(decisions.states, compile_rules(PYLUDO), decisions.legal)
    np.testing.assert_array_equal(again, decisions.chosen)
    assert (decisions.states[:, CURRENT] == [line["seat"] for line in lines]).all()

    # Appending: a second tournament adds its lines after the first's.
    play_tournament(SEATS, 4, PYLUDO, seed=9, record=file, record_entry=0, rate=False)
    assert len(read_records(file)) > len(lines) and read_records(file)[: len(lines)] == lines


def test_recording_refuses_the_fast_path_and_an_entry_that_is_not_there(tmp_path):
    with pytest.raises(TournamentError, match="path='fast' cannot record"):
        play_tournament(SEATS, 4, PYLUDO, record=tmp_path / "r.jsonl", path="fast")
    with pytest.raises(TournamentError, match=r"record_entry=4 is not an entry: choose 0..3"):
        play_tournament(SEATS, 4, PYLUDO, record=tmp_path / "r.jsonl", record_entry=4)


def test_the_evaluator_records_with_record_and_record_player(tmp_path):
    file = tmp_path / "bot.jsonl"
    run = subprocess.run([sys.executable, "launch/evaluate.py", "players=[random,hybrid]", "games=4", "variant=quick",
                          "seed=5", f"record={file}", "record_player=1", "progress=false", f"hydra.run.dir={tmp_path}"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    assert f"records: {file} (decisions of entry 1, hybrid, appended)" in run.stdout
    decisions = load_decisions([file])
    assert decisions.rules == Rules.load("quick", players=2) and set(decisions.players) == {"hybrid"}
    tab = compile_rules(decisions.rules)
    np.testing.assert_array_equal(Bot("hybrid").act(decisions.states, tab, decisions.legal), decisions.chosen)


def test_bad_record_files_are_one_line_with_the_file_and_line(tmp_path):
    good = tmp_path / "good.jsonl"
    play_tournament(SEATS, 1, PYLUDO, seed=1, record=good, rate=False)
    lines = good.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    line = json.loads(lines[1])
    line["chosen"] = next(t for t in range(4) if not line["legal"][t])
    bad.write_text("\n".join([lines[0], json.dumps(line)]) + "\n")
    with pytest.raises(RecordError, match=rf"^{bad}:2: not a ludo-league-record/1 line: chosen=\d is not a legal token$"):
        load_decisions([bad])
    (tmp_path / "junk.jsonl").write_text("{oops\n")
    with pytest.raises(RecordError, match=r"junk.jsonl:1: not a ludo-league-record/1 line"):
        load_decisions([tmp_path / "junk.jsonl"])
    other = tmp_path / "classic.jsonl"
    RecordWriter(other, Rules.load("classic"), "human").write(
        ["g"], np.array([json.loads(lines[0])["state"]]), np.array([json.loads(lines[0])["legal"]]),
        [json.loads(lines[0])["chosen"]])
    with pytest.raises(RecordError, match="the records mix rule sets"):
        load_decisions([good, other])
    with pytest.raises(RecordError, match="cannot be read"):
        load_decisions([tmp_path / "missing.jsonl"])


def test_changed_rules_are_recorded_and_read_back(tmp_path):
    rules = Rules.load("classic", players=2, blockades=True)
    file = tmp_path / "r.jsonl"
    play_tournament(["fast", "hybrid"], 2, rules, seed=0, record=file, record_entry=1, rate=False)
    assert read_records(file)[0]["rules"] == {"blockades": True}
    assert load_decisions([file]).rules == rules
