"""Counted twice, lost, or half-written: a game whose end was not kept in games.db was rated again when played
again after a restart; two servers on one records folder both restored and rated the same game; a games.db
deleted while serving lost its games without a word; a games.db row whose name breaks the name rule was restored
and rated under that name."""
from __future__ import annotations

import logging
import sqlite3

from fastapi.testclient import TestClient

from launch.leaderboard import Board
from launch.web.app import create_app
from launch.web.site import Site
from policies.league.store import LeagueStore
from tests.launch.test_serve import play_out, start_server, stop_server
from tests.security.helpers import bot_league, run_command

GAME = {"variant": "quick", "players": 2, "seat": 0, "opponents": ["league:random"], "name": "ann"}


def matches(run) -> int:
    with LeagueStore.open(run / "league.db", create=False, read_only=True) as store:
        return len(store.matches())


def test_a_game_whose_end_was_not_kept_is_rated_once_when_played_again(tmp_path):
    run, records = bot_league(tmp_path / "run"), tmp_path / "records"
    site = Site(records, [], league=Board(str(run), None))
    client = TestClient(create_app(site))
    view = play_out(client, client.post("/api/games", json=GAME).json(), actions=2)
    other_process = sqlite3.connect(records / "games.db", timeout=0, isolation_level=None)
    site.shelf.db.execute("PRAGMA busy_timeout = 20")  # the server waits 20 ms, not 30 s, for games.db
    other_process.execute("BEGIN EXCLUSIVE")  # another process holds games.db: the moves from here are not kept
    try:
        done = play_out(client, view)
    finally:
        other_process.execute("ROLLBACK")
        other_process.close()
    assert done["over"] and done["rated"].startswith("rated in the league") and matches(run) == 1

    again = TestClient(create_app(Site(records, [], league=Board(str(run), None))))  # a restart
    view = again.get(f"/api/games/{done['id']}").json()
    assert not view["over"] and view["version"] < done["version"]  # back from before its end
    replayed = play_out(again, view)
    assert replayed["over"] and "rated once already" in replayed["rated"]
    assert matches(run) == 1


def test_a_second_server_on_the_same_records_folder_refuses_to_start(tmp_path):
    records = tmp_path / "records"
    server, _ = start_server(f"records={records}")
    try:
        second = run_command("launch/serve.py", f"records={records}", "port=0", timeout=120)
        lines = second.stderr.strip().splitlines()
        assert second.returncode == 2 and len(lines) == 1, second.stderr[-2000:]
        assert lines[0].startswith(f"error: records={records}: another serve.py (pid {server.pid})"), lines[0]
        assert "serving" not in second.stdout
    finally:
        stop_server(server)
    third, _ = start_server(f"records={records}")  # the lock goes with the server that held it
    stop_server(third)


def test_a_vanished_games_db_is_logged_once_and_every_page_warns(tmp_path, caplog):
    records = tmp_path / "records"
    client = TestClient(create_app(Site(records, [])))
    view = client.post("/api/games", json={**GAME, "opponents": ["bot:random"], "name": None}).json()
    assert view["warning"] is None
    for name in ("games.db", "games.db-wal", "games.db-shm"):
        (records / name).unlink(missing_ok=True)
    with caplog.at_level(logging.INFO, logger="launch.serve"):
        view = play_out(client, view, actions=6)
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(said) == 1 and "games.db" in said[0] and "in memory" in said[0], said
    assert "cannot keep unfinished games on disk" in view["warning"]
    assert client.get(f"/api/games/{view['id']}").json()["warning"] == view["warning"]  # every view says it
    assert not view["over"] and client.post(f"/api/games/{view['id']}/step").status_code in (200, 409)


def test_a_restored_row_must_follow_the_name_rule(tmp_path, caplog):
    run, records = bot_league(tmp_path / "run"), tmp_path / "records"
    client = TestClient(create_app(Site(records, [], league=Board(str(run), None))))
    view = client.post("/api/games", json={**GAME, "name": None}).json()
    with sqlite3.connect(records / "games.db") as db:
        db.execute("UPDATE games SET name = ?", ("<script>x</script>:main@3 ",))
    with caplog.at_level(logging.INFO, logger="launch.serve"):
        again = TestClient(create_app(Site(records, [], league=Board(str(run), None))))
        assert again.get(f"/api/games/{view['id']}").status_code == 404
    assert any("cannot be restored" in r.getMessage() and "name" in r.getMessage() for r in caplog.records)
    assert matches(run) == 0
