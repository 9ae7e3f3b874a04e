"""Security 4: unfinished games grew without bound (1,500 POST /api/games in 26 s were all kept), and a lookup of a
made-up game id read every row of games.db (0.4-4.4 s per 404 at 20,000 rows). Now unfinished games are capped
per browser, per address and in total, the oldest idle one makes room, a request past a cap is a 429, and a
lookup goes through the primary key."""
from __future__ import annotations

import json
import sqlite3
import time

from launch.web.saved import GameShelf
from tests.security.helpers import player_token, site_client

NEW = {"variant": "quick", "players": 2, "seat": 0, "opponents": ["bot:random"]}


def test_unfinished_games_are_capped_per_browser_and_in_total_with_a_clear_429(tmp_path):
    records = tmp_path / "records"
    site = site_client(records, games_per_browser=3, games_total=5, idle_minutes=60)
    one = player_token(records)  # a browser's token, as the server issues it
    mine = [site.post("/api/games", json={**NEW, "player": one}) for _ in range(4)]
    assert [a.status_code for a in mine] == [200, 200, 200, 429]
    assert "this browser has 3 unfinished games" in mine[-1].json()["error"]
    others = [site.post("/api/games", json={**NEW, "player": player_token(records)}) for _ in range(3)]
    assert [a.status_code for a in others] == [200, 200, 429]
    assert "this server has 5 unfinished games" in others[-1].json()["error"]
    with sqlite3.connect(records / "games.db") as db:
        assert db.execute("SELECT COUNT(*) FROM games").fetchone()[0] == 5


def test_past_a_cap_the_oldest_idle_game_makes_room(tmp_path):
    records = tmp_path / "records"
    site = site_client(records, games_per_browser=2, idle_minutes=1)
    one = player_token(records)
    first, second = (site.post("/api/games", json={**NEW, "player": one}).json() for _ in range(2))
    with sqlite3.connect(records / "games.db") as db:  # the first was last played two minutes ago
        db.execute("UPDATE games SET updated = ? WHERE id = ?", (time.time() - 120, first["id"]))
    third = site.post("/api/games", json={**NEW, "player": one})
    assert third.status_code == 200
    assert site.get(f"/api/games/{first['id']}").status_code == 404  # expired
    assert site.get(f"/api/games/{second['id']}").status_code == 200


def lookup_steps(records, game_id: str) -> int:
    """SQLite virtual-machine steps that ``GET /api/games/<game_id>`` makes games.db take (a progress handler
    called every 100): the work a 404 does, counted, not timed."""
    from fastapi.testclient import TestClient

    from launch.web.app import create_app
    from launch.web.site import Site

    site = Site(records, [])
    client = TestClient(create_app(site))  # restores what it can of the rows first
    steps = 0

    def count():
        nonlocal steps
        steps += 1
        return 0

    site.shelf.db.set_progress_handler(count, 100)
    assert client.get(f"/api/games/{game_id}").status_code == 404
    return steps


def test_a_lookup_by_id_costs_the_same_at_20000_rows_as_at_10(tmp_path):
    def fill(folder, rows: int):
        shelf = GameShelf(folder)
        events = json.dumps([["r", 3]] * 40)
        shelf.db.executemany("INSERT INTO games (id, player, name, variant, players, you, seed, opponents, started,"
                             " events, updated) VALUES (?, NULL, NULL, 'retired', 2, 0, 1, '{}', '2026-01-01', ?, ?)",
                             [(f"game-{k:08d}", events, float(k)) for k in range(rows)])
        shelf.close()
        return folder

    small, large = fill(tmp_path / "small", 10), fill(tmp_path / "large", 20_000)
    made_up = "no-such-game-at-all"
    assert lookup_steps(large, made_up) == lookup_steps(small, made_up)
