"""launch/league.py as a user runs it: add a policy, play a rated round, show the standings; one-line errors."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from policies.league.ratings import shared_ranks, start_rating
from policies.league.store import LeagueStore
from tests.league.tiny_policy import write_tiny_policy

ROOT = Path(__file__).resolve().parents[2]
BOTS = ("random", "fast", "hybrid")
ROW = re.compile(r"^\s*(\d+|-)\s+(\S+)\s+(main|snapshot|bot|external)\s+(main|main_exploiter|league_exploiter|-)\s+"
                 r"(-?[\d.]+)\s+(-?[\d.]+)\s+(-?[\d.]+) to (-?[\d.]+)\s+(\S+)"
                 r"\s+(-|[\d.]+% ± [\d.]+ \([\d,]+\))")


def league_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "launch/league.py", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, check=False)


def standings(stdout: str) -> dict[str, dict]:
    """The standings table: member name -> its row (rank, kind, role, mu, sigma, interval, vs random, ahead of
    field), in the table's order; the line under the table says what the rank means."""
    lines = stdout.strip().splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["#", "member"])
    rows = {}
    for line in lines[header + 1:]:
        if line.startswith("# is 1 + the members clearly rated above"):
            break
        match = ROW.match(line)
        assert match, f"not a standings row: {line!r}"
        rank, name, kind, role, mu, sigma, low, high, vs_random, ahead = match.groups()
        rows[name] = {"rank": None if rank == "-" else int(rank), "kind": kind, "role": role, "mu": float(mu),
                      "sigma": float(sigma), "interval": (float(low), float(high)), "vs_random": vs_random,
                      "ahead": ahead}
    return rows


@pytest.fixture(scope="module")
def run_policy(tmp_path_factory) -> Path:
    """A policy in a training run's layout: <tmp>/run/checkpoints/iter_000007/policy."""
    run = tmp_path_factory.mktemp("runs") / "run"
    write_tiny_policy(run / "checkpoints" / "iter_000007" / "policy")
    return run / "checkpoints" / "iter_000007" / "policy"


def test_add_play_and_show_a_league(tmp_path, run_policy):
    db = tmp_path / "league" / "league.db"
    added = league_cli("add", str(run_policy), f"league={db}", "panel_games=12")
    assert added.returncode == 0, added.stderr
    assert f"added run@7 (ckpt:{run_policy.resolve()})" in added.stdout
    assert list(standings(added.stdout)) == ["run@7"] and standings(added.stdout)["run@7"]["ahead"] == "-"
    with LeagueStore.open(db, read_only=True) as store:
        [member] = store.members()
        assert (member.name, member.kind, member.spec) == ("run@7", "external", f"ckpt:{run_policy.resolve()}")
        # evaluated against the panel for the table, with the games asked for
        assert set(member.panel) == {"random", "hybrid"} and member.panel["random"]["games"] == 12
        assert 0.0 <= member.panel["random"]["win_rate"] <= 1.0

    # the same policy again, here as its run folder: nothing changes
    again = league_cli("add", str(run_policy.parents[2]), f"league={db}", "panel_games=12")
    assert again.returncode == 0, again.stderr
    assert "already in the league: run@7" in again.stdout
    with LeagueStore.open(db, read_only=True) as store:
        assert store.members() == [member]

    played = league_cli("play", "games=8", f"bots={','.join(BOTS)}", "players=4", f"league={db.parent}")
    assert played.returncode == 0, played.stderr
    assert "4 members, 1 line-ups x 8 games" in played.stderr and "round 1: 8 rated games" in played.stderr
    after_play = standings(played.stdout)
    assert set(after_play) == {"run@7", *BOTS}

    shown = league_cli("show", f"league={db}")
    assert shown.returncode == 0, shown.stderr
    rows = standings(shown.stdout)
    assert rows == after_play
    assert {name: row["kind"] for name, row in rows.items()} == {"run@7": "external", "random": "bot",
                                                                 "fast": "bot", "hybrid": "bot"}
    with LeagueStore.open(db, read_only=True) as store:  # shared ranks: members within noise of each other tie
        ratings = {m.name: (m.mu, m.sigma) for m in store.members()}
    assert [(name, row["rank"]) for name, row in rows.items()] == shared_ranks(ratings)
    assert all(row["interval"] == pytest.approx((row["mu"] - 1.96 * row["sigma"], row["mu"] + 1.96 * row["sigma"]),
                                                abs=0.06) for row in rows.values())
    mu0, sigma0 = start_rating()
    with LeagueStore.open(db, read_only=True) as store:
        [round_] = store.rounds()
        assert (round_["label"], round_["variant"]) == ("round robin", "classic")
        matches = store.matches(round_["id"])
        assert len(matches) == 8
        ids = {m.name: m.id for m in store.members()}
        assert all(sorted(m.seats) == sorted(ids.values()) for m in matches)
        for name, row in rows.items():
            member = store.member(name)
            assert row["mu"] == pytest.approx(member.mu, abs=0.006)
            assert row["sigma"] == pytest.approx(member.sigma, abs=0.006) and member.sigma < sigma0  # all played
            assert member.mu != pytest.approx(mu0)
            assert member.panel is not None and row["vs_random"].endswith("%")  # the bots got their panel too
            assert row["vs_random"] == f"{100 * member.panel['random']['win_rate']:.1f}%"
            # ahead of field: per game, the share of the other three it finished ahead of, over its 8 games
            scores = [sum(m.places[m.seats.index(member.id)] < p for p in m.places) / 3 for m in matches]
            assert row["ahead"].startswith(f"{100 * sum(scores) / 8:.1f}% ± ") and row["ahead"].endswith(" (8)")
        assert len([h for h in store.rating_history() if h["round_id"] == round_["id"]]) == 4
    # show changed nothing
    with LeagueStore.open(db, read_only=True) as store:
        assert len(store.rounds()) == 1 and len(store.matches()) == 8


def one_line_failure(proc: subprocess.CompletedProcess, *fragments: str) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert proc.stdout == ""
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("args, fragments", [
    ([], ["choose a command: add, play, show or remove"]),
    (["show", "colour=red"], ["unknown option 'colour' for show", "allowed league"]),
])
def test_no_command_or_an_unknown_option_fails_in_one_line(args, fragments):
    one_line_failure(league_cli(*args), *fragments)


def test_a_missing_league_a_path_without_policy_or_an_unknown_bot_fail_in_one_line(tmp_path):
    missing = tmp_path / "missing" / "league.db"
    one_line_failure(league_cli("show", f"league={missing}"), str(missing), "no league database")
    assert not missing.parent.exists()  # show never creates one
    nothing = tmp_path / "no-policy-here"
    nothing.mkdir()
    one_line_failure(league_cli("add", str(nothing), f"league={tmp_path / 'a.db'}"), str(nothing), "holds no policy")
    one_line_failure(league_cli("play", "bots=random,genius", f"league={tmp_path / 'b.db'}"),
                     "unknown bot 'genius'", "heuristic000")


NOT_A_DATABASE = "shopping list\n" * 200


@pytest.mark.parametrize("args, fragments", [
    (["rank"], ["choose a command"]),
    (["play", "bots=random", "speed=9"], ["unknown option 'speed' for play"]),
    (["add"], ["add needs at least one"]),
    (["show", "extra"], ["show takes only key=value options"]),
    (["add", "{tmp}/a", "{tmp}/b", "name=x", "league={tmp}/l.db"], ["name= names a single source"]),
    (["play", "players=5", "league={tmp}/l.db"], ["players=5 is not allowed"]),
    (["play", "players=1", "league={tmp}/l.db"], ["players=1 is not allowed"]),
    (["play", "games=lots", "bots=random", "players=2", "league={tmp}/l.db"], ["games='lots' is not allowed"]),
    (["play", "games=0", "bots=random", "players=2", "league={tmp}/l.db"], ["games=0 is not allowed"]),
    (["play", "games=8", "bots=random", "players=2", "league={tmp}/l.db"], ["at least 2 members, the league has 1"]),
    (["show", "league={tmp}/notes.txt"], ["notes.txt", "not a league database"]),
])
def test_every_user_error_is_one_line(tmp_path, args, fragments):
    """The same errors in-process (main raises the UserError that the script prints as one line, exit 2)."""
    from launch.cli import UserError
    from launch.league import main

    (tmp_path / "notes.txt").write_text(NOT_A_DATABASE)
    args = [a.format(tmp=tmp_path) for a in args]
    with pytest.raises(UserError) as err:
        main(args)
    text = str(err.value)
    assert "\n" not in text and text.strip() == text
    for fragment in fragments:
        assert fragment in text, text
    assert (tmp_path / "notes.txt").read_text() == NOT_A_DATABASE
