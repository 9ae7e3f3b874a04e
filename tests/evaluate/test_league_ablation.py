"""The league ablation's evaluation steps on bots (no training): line-ups, cross-play win rates and ratings,
and its refusals."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.league_ablation import cross_play, line_ups, parse, print_tables
from launch.cli import UserError
from launch.training.runs import exploiters_frozen, trained_so_far
from ludo_env.rules import Rules

ROOT = Path(__file__).resolve().parents[2]


def test_line_ups_seat_every_set_of_four_or_everyone_plus_one():
    assert line_ups(list("abcde")) == [list(c) for c in ("abcd", "abce", "abde", "acde", "bcde")]
    assert line_ups(list("abc")) == [list("abca"), list("abcb"), list("abcc")]


def test_cross_play_finds_the_stronger_arm_with_intervals_and_ratings():
    class Args:
        cross_games, seed = 400, 7

    mains = {"strong_s0": "hybrid", "strong_s1": "heuristic000", "weak_s0": "random", "weak_s1": "fast"}
    arm_of = {label: label.partition("_")[0] for label in mains}
    report = cross_play(mains, arm_of, Rules.load("classic", players=4), Args)
    strong, weak = report["per_arm"]["strong"], report["per_arm"]["weak"]
    assert strong["games"] == weak["games"] == 2 * 400
    assert strong["ci95"][0] > weak["ci95"][1]  # clearly apart
    assert abs(strong["win_rate"] + weak["win_rate"] - 0.5) < 0.02  # every finished game has one winner in 4
    ratings = report["ratings"]
    assert min(ratings["strong_s0"][0], ratings["strong_s1"][0]) > max(ratings["weak_s0"][0], ratings["weak_s1"][0])


def test_fewer_mains_than_seats_rate_each_seat_apart():
    class Args:
        cross_games, seed = 40, 1

    report = cross_play({"a": "hybrid", "b": "random"}, {"a": "x", "b": "y"}, Rules.load("classic", players=4), Args)
    assert {"a#1", "a#2", "a#3", "b#1", "b#2", "b#3"} <= set(report["ratings"])
    assert report["per_main"]["a"]["games"] == 40 * 3 + 40  # three seats in its own line-up, one in the other


@pytest.mark.parametrize("argv, message", [
    (["--arms", "nope"], "--arms: unknown arm 'nope': choose from selfplay, pfsp, alphastar or add one with --arm"),
    (["--arm", "no-equals"], "--arm 'no-equals': give NAME=OVERRIDES"),
    (["--exploit-decisions", "-1"], "--exploit-decisions=-1 is not allowed"),
])
def test_bad_arguments_are_one_line(argv, message):
    with pytest.raises(UserError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(argv)
    done = subprocess.run([sys.executable, "benchmarks/league_ablation.py", *argv], capture_output=True, text=True,
                          cwd=ROOT, check=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_each_main_reports_how_many_of_its_env_steps_were_its_own_decisions(tmp_path, capsys):
    (tmp_path / "metrics.jsonl").write_text(
        '{"iteration": 1, "env_steps": 4096, "main_decisions": 1024.0}\n'
        '{"iteration": 2, "env_steps": 8192, "main_decisions": 2048.0}\n'
        '{"iteration": 2, "eval/win_rate_vs_random": 0.5}\n')  # a row without counters does not hide the last
    assert trained_so_far(tmp_path) == (8192, 2048)

    cell = {"win_rate": 0.5, "ci95": [0.4, 0.6], "games": 100}
    report = {"variant": "classic", "steps": 8192, "seeds": [0], "mains": {
        "pfsp_s0": {"env_steps": 8_000_000, "main_decisions": 5_346_775.0, "exploitability": None,
                    "panel": {bot: cell for bot in ("random", "hybrid", "heuristic000")}},
        "old_s0": {"exploitability": None, "panel": {bot: cell for bot in ("random", "hybrid", "heuristic000")}}}}
    print_tables(report)
    lines = capsys.readouterr().out.splitlines()
    assert "| main | main's decisions | vs 3 random |" in lines[3]
    assert lines[5].startswith("| pfsp_s0 | 5.35M (67% of 8.0M env steps) | 50.0% [40.0%, 60.0%] |")
    assert lines[6].startswith("| old_s0 | not recorded | ")  # a report written before the column
    assert all(line.count("|") == lines[3].count("|") for line in lines[3:7])


def test_each_main_reports_how_often_its_exploiters_were_frozen(tmp_path, capsys):
    (tmp_path / "metrics.jsonl").write_text(
        '{"iteration": 1, "env_steps": 4096, "roles/main_exploiter_0/frozen": 0, '
        '"roles/main_exploiter_0/ahead": 0.4, "roles/league_exploiter_0/frozen": 0}\n'
        '{"iteration": 2, "env_steps": 8192, "roles/main_exploiter_0/frozen": 2, '
        '"roles/main_exploiter_0/ahead": 0.4, "roles/league_exploiter_0/frozen": 0}\n')
    assert exploiters_frozen(tmp_path) == {"main_exploiter_0": 2, "league_exploiter_0": 0}
    (tmp_path / "metrics.jsonl").write_text('{"iteration": 1, "env_steps": 4096, "main_decisions": 4096}\n')
    assert exploiters_frozen(tmp_path) == {}

    cell = {"win_rate": 0.5, "ci95": [0.4, 0.6], "games": 100}
    panel = {bot: cell for bot in ("random", "hybrid", "heuristic000")}
    report = {"variant": "classic", "steps": 8192, "seeds": [0], "mains": {
        "selfplay_s0": {"exploitability": None, "panel": panel, "exploiters_frozen": {}},
        "alphastar_s0": {"exploitability": None, "panel": panel,
                         "exploiters_frozen": {"main_exploiter_0": 2, "league_exploiter_0": 0}}}}
    print_tables(report)
    out = capsys.readouterr().out
    assert "Exploiters frozen into the league: alphastar_s0 main_exploiter_0 2x, league_exploiter_0 0x\n" in out
