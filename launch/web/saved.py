"""Unfinished games kept on disk, so that a game survives a server restart: ``<records>/games.db``.

One row per unfinished game: what started it (variant, players, the person's seat, the opponents' ids, the
seed, the browser's player token and name, the SHA-256 of the name's secret) and its ``events``, every roll and
move in order, with each replacement of a failed agent. Replaying the events through the engine from the seed gives the same position,
the same log and the same decisions to record, without asking any agent again: the dice are the engine's,
drawn from the seed. Written in one transaction per roll, move or opponent turn (WAL, ``synchronous=FULL``), so
a killed server loses at most the request in flight; a finished game's row goes when its record file is written.

Nothing read from this file names a path or a spec: opponents are ids, looked up in the server's own lists
(`Site.opponent`) when the game is restored, and an id no longer offered is played by the random bot.

A game is looked up by its id through the primary key, so an unknown id costs the same whatever the number of
rows; the site caps the rows (`launch.web.site.Limits`). A file that vanishes while the server runs (deleted,
replaced) or can no longer be written is said once in the log and on every game's page, and the games go on in
memory (`problem`); the next write that works clears it.
"""
from __future__ import annotations

import json
import logging
import os
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
    updated REAL NOT NULL,
    address TEXT,
    claim TEXT
);
CREATE INDEX IF NOT EXISTS games_player ON games (player);
CREATE INDEX IF NOT EXISTS games_updated ON games (updated);
CREATE INDEX IF NOT EXISTS games_address ON games (address);
"""
COLUMNS = ("id", "player", "name", "variant", "players", "you", "seed", "opponents", "started", "events", "updated",
           "address", "claim")


class ShelfGone(OSError):
    """games.db is no longer the file this server opened (deleted or replaced while it ran)."""


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
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(games)").fetchall()}
        if columns and "address" not in columns:  # a games.db of a server from before the site's limits
            self.db.execute("ALTER TABLE games ADD COLUMN address TEXT")
        if columns and "claim" not in columns:  # the SHA-256 of the name's secret a game plays under
            self.db.execute("ALTER TABLE games ADD COLUMN claim TEXT")
        for statement in _SCHEMA.strip().split(";"):
            if statement.strip():
                self.db.execute(statement)
        status = os.stat(self.path)
        self._file = (status.st_dev, status.st_ino)
        self.gone = False  # the file vanished: nothing more is written to it
        self.problem: str | None = None
        """Why unfinished games are not kept on disk now (said once in the log), or None."""

    def _check_file(self) -> None:
        """`ShelfGone` when games.db is not the file this connection writes (SQLite would go on writing into a
        deleted file, and the games would be gone at the next start)."""
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            status = None
        if status is None or (status.st_dev, status.st_ino) != self._file:
            self.gone = True
        if self.gone:
            raise ShelfGone(f"{self.path} was deleted or replaced while the server ran")

    def _write(self, statement: str, args: Any) -> None:
        """One write, in its own transaction; a failure is logged once (`problem`) and raised."""
        with self._lock:
            try:
                self._check_file()
                self.db.execute(statement, args)
            except (OSError, sqlite3.Error) as err:
                problem = " ".join(str(err).split()) or type(err).__name__
                if problem != self.problem:
                    log.error("unfinished games cannot be kept in %s now (%s): they go on in memory, and are lost "
                              "if the server stops", self.path, problem)
                self.problem = problem
                raise
            if self.problem is not None:
                log.warning("unfinished games are kept in %s again", self.path)
                self.problem = None

    def put(self, row: dict[str, Any]) -> None:
        """The game's row as it is now, in one transaction."""
        values = {"address": None, "claim": None, **row, "opponents": json.dumps(row["opponents"]),
                  "events": json.dumps(row["events"]), "updated": time.time()}
        self._write(f"INSERT OR REPLACE INTO games ({', '.join(COLUMNS)}) VALUES ({', '.join('?' for _ in COLUMNS)})",
                    [values[c] for c in COLUMNS])

    def drop(self, game_id: str) -> None:
        self._write("DELETE FROM games WHERE id = ?", (game_id,))

    def _read(self, query: str, args: Any = ()) -> list[sqlite3.Row]:
        with self._lock:
            if self.gone:
                return []
            return self.db.execute(query, args).fetchall()

    def rows(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The unfinished games, oldest first (the newest `limit` of them); a row that cannot be read is logged
        and left out."""
        found = self._read("SELECT * FROM (SELECT * FROM games ORDER BY updated DESC LIMIT ?) ORDER BY updated",
                           (-1 if limit is None else limit,))
        return [row for row in map(_parsed, found) if row is not None]

    def row(self, game_id: str) -> dict[str, Any] | None:
        """The unfinished game `game_id`, by its primary key; None when there is none (or it cannot be read)."""
        found = self._read("SELECT * FROM games WHERE id = ?", (game_id,))
        return _parsed(found[0]) if found else None

    def count(self, *, player: str | None = None, address: str | None = None) -> int:
        """Unfinished games kept: all, or those of a browser's `player` token, or from an `address`."""
        where, args = _where(player, address)
        return int(self._read(f"SELECT COUNT(*) FROM games{where}", args)[0][0]) if not self.gone else 0

    def oldest_idle(self, idle_since: float, *, player: str | None = None,
                    address: str | None = None) -> str | None:
        """The id of the game (of `player` or `address`) last played longest ago, if that is before `idle_since`."""
        where, args = _where(player, address)
        found = self._read(f"SELECT id, updated FROM games{where} ORDER BY updated LIMIT 1", args)
        return found[0]["id"] if found and found[0]["updated"] < idle_since else None

    def heaviest(self) -> tuple[str | None, int] | None:
        """The address with the most unfinished games, and how many; of addresses with as many, the one whose
        oldest game was played longest ago. None without games."""
        found = self._read("SELECT address, COUNT(*) AS n, MIN(updated) AS since FROM games GROUP BY address "
                           "ORDER BY n DESC, since LIMIT 1")
        return (found[0]["address"], int(found[0]["n"])) if found else None

    def oldest_of(self, address: str | None) -> str | None:
        """The id of the game from `address` (None: from no address) last played longest ago."""
        found = self._read("SELECT id FROM games WHERE address IS ? ORDER BY updated LIMIT 1", (address,))
        return found[0]["id"] if found else None

    def close(self) -> None:
        self.db.close()


def _where(player: str | None, address: str | None) -> tuple[str, tuple]:
    if player is not None:
        return " WHERE player = ?", (player,)
    if address is not None:
        return " WHERE address = ?", (address,)
    return "", ()


def _parsed(row: sqlite3.Row) -> dict[str, Any] | None:
    try:
        return {**dict(row), "opponents": {int(k): v for k, v in json.loads(row["opponents"]).items()},
                "events": json.loads(row["events"])}
    except (ValueError, TypeError, AttributeError) as err:
        log.error("unfinished game %s cannot be read: %s", row["id"], err)
        return None
