"""Unfinished games kept on disk, so that a game survives a server restart: ``<records>/games.db``.

One row per unfinished game: what started it (variant, players, the person's seat, the opponents' ids, the
seed, the browser's player token and name) and its ``events``, every roll and move in order, with each
replacement of a failed agent. Replaying the events through the engine from the seed gives the same position,
the same log and the same decisions to record, without asking any agent again: the dice are the engine's,
drawn from the seed. Written in one transaction per roll, move or opponent turn (WAL, ``synchronous=FULL``), so
a killed server loses at most the request in flight; a finished game's row goes when its record file is written.

Nothing read from this file names a path or a spec: opponents are ids, looked up in the server's own lists
(`Site.opponent`) when the game is restored, and an id no longer offered is played by the random bot.
"""
from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

DB_NAME = "games.db"
log = logging.getLogger("launch.serve")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS games (
    id TEXT PRIMARY KEY,
    player TEXT,
    name TEXT,
    variant TEXT NOT NULL,
    players INTEGER NOT NULL,
    you INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    opponents TEXT NOT NULL,
    started TEXT NOT NULL,
    events TEXT NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS games_player ON games (player);
"""


class GameShelf:
    """The unfinished games of one records folder; one connection, used under a lock by every request thread."""

    def __init__(self, records: Path):
        self.path = records / DB_NAME
        self._lock = threading.Lock()
        records.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None, check_same_thread=False)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        for statement in _SCHEMA.strip().split(";"):
            if statement.strip():
                self.db.execute(statement)

    def put(self, row: dict[str, Any]) -> None:
        """The game's row as it is now, in one transaction."""
        values = {**row, "opponents": json.dumps(row["opponents"]), "events": json.dumps(row["events"]),
                  "updated": time.time()}
        columns = ("id", "player", "name", "variant", "players", "you", "seed", "opponents", "started", "events",
                   "updated")
        with self._lock:
            self.db.execute(f"INSERT OR REPLACE INTO games ({', '.join(columns)}) VALUES "
                            f"({', '.join('?' for _ in columns)})", [values[c] for c in columns])

    def drop(self, game_id: str) -> None:
        with self._lock:
            self.db.execute("DELETE FROM games WHERE id = ?", (game_id,))

    def rows(self) -> list[dict[str, Any]]:
        """Every unfinished game, oldest first; a row that cannot be read is logged and left out."""
        with self._lock:
            found = self.db.execute("SELECT * FROM games ORDER BY updated").fetchall()
        out = []
        for row in found:
            try:
                out.append({**dict(row), "opponents": {int(k): v for k, v in json.loads(row["opponents"]).items()},
                            "events": json.loads(row["events"])})
            except (ValueError, TypeError, AttributeError) as err:
                log.error("unfinished game %s cannot be read: %s", row["id"], err)
        return out

    def close(self) -> None:
        self.db.close()
