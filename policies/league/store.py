"""The league database: members, rated matches and rating history in one SQLite file.

    store = LeagueStore.open("outputs/train/<run>/league.db")
    store.add_member("bot:hybrid", kind="bot", spec="hybrid")
    with store.transaction():
        round_id = store.add_round(iteration=40, env_steps=320_000, variant="classic", label="training")
        store.add_matches(round_id, "classic", [((m1, m2, m3, m4), (2, 1, 4, 3)), ...])
        store.set_ratings(round_id, {m1: (26.1, 7.9), ...}, iteration=40)

Tables (schema version `SCHEMA_VERSION`, kept in ``meta``):

``members``
    One row per agent that ever joined: ``name`` (unique), ``kind`` (main,
    snapshot, bot, external, or human: a person rated from their games on
    the browser site, named ``human:<name>``, whom training never picks, not
    even as an active member), ``spec`` (what `policies.players.make_player`
    plays: a bot name or ``ckpt:<policy folder>``; snapshot weights are files
    written by `policies.checkpoints.write_policy` and read with
    ``weights_only``), the training ``iteration`` and ``env_steps`` it was
    taken at, its current openskill ``mu`` and ``sigma``, its win rate
    against the evaluation panel when known (``panel``, JSON), and
    ``active`` / ``evicted_at``: an evicted snapshot leaves the league but
    keeps its row, its matches and its ratings. ``slot`` is the RLlib module
    slot an active snapshot occupies during training. ``role`` is the learner
    a ``main`` or ``snapshot`` member was (``main``, ``main_exploiter``,
    ``league_exploiter``: `policies.league.roles.ROLES`; a frozen exploiter is a
    snapshot of its role); other kinds have none.
``rounds``
    One rating round: when, at which training iteration, under which rules.
``matches``
    One finished game of a round: ``seats`` (member ids, seat 0 first),
    ``places`` (finishing place of each seat, 1 first) and the variant.
``ratings``
    Every member's ``mu`` and ``sigma`` after each round it played in: the
    rating history.
``people``
    The names people claimed on the browser site (`launch/serve.py`): the
    member name (``human:<name>``, the name folded: `person_name`), the
    SHA-256 of the secret the claiming browser keeps, a hash of the address
    it claimed from, and when. Only a browser holding the secret plays rated
    games under the name. A claim whose person has no rated game yet (no
    member) is unplayed: the site releases it (`release_claim`) when its game
    ends unrated or is given up, or when it is old.
``site_games``
    Every game of the site that was rated, by the site's game id (its
    primary key, so a game is rated once whatever fails after), with the
    person, the hashed address and the round that holds its match: what the
    site's per-name and per-address limits count.

The two site tables are made in place when a database is opened for writing
(older code ignores them, and a reader of an older database finds none).

Durability: WAL journal mode, ``synchronous=FULL`` and one transaction per
change (`transaction` groups several), so a ``kill -9`` at any moment leaves
a database that opens with every committed change in it and nothing half
written. A write the disk has no room for is `LeagueWriteFailed`, one line,
and keeps nothing of its transaction.
"""
from __future__ import annotations

import contextlib
import errno
import json
import math
import sqlite3
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policies.json_data import read_json
from policies.league.ratings import ordinal, start_rating
from policies.league.roles import MAIN, ROLES

SCHEMA_VERSION = 4  # 2: members of kind human; 3: members' role; 4: people's names folded (`person_name`) (older
# databases are migrated when opened for writing, and read as they are by a reader)
MEMBER_KINDS = ("main", "snapshot", "bot", "external", "human")
LEARNER_KINDS = ("main", "snapshot")
"""Kinds of member that have a role: the learner itself and its frozen copies."""
HUMAN_KIND = "human"  # a person rated from their games on the browser site (launch/serve.py); never plays in training
HUMAN_PREFIX = "human:"
"""Every person's member name is ``human:<name>``, and only a person's: the prefix is reserved for kind human."""


def person_name(name: str) -> str:
    """The member name of a person who plays as `name` on the site: ``human:`` and the name folded, its case and its
    runs of spaces made one (``Alice``, ``ALICE`` and ``alice`` are one person, and so are ``al  ice`` and
    ``al ice``), so that one person cannot be claimed and rated twice under names that read alike."""
    return HUMAN_PREFIX + " ".join(name.split()).casefold()

DB_NAME = "league.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS members (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL CHECK (kind IN ('main', 'snapshot', 'bot', 'external', 'human')),
    spec TEXT NOT NULL,
    iteration INTEGER,
    env_steps INTEGER,
    created_at REAL NOT NULL,
    active INTEGER NOT NULL DEFAULT 1,
    evicted_at REAL,
    slot INTEGER,
    mu REAL NOT NULL,
    sigma REAL NOT NULL,
    panel TEXT,
    role TEXT
);
CREATE TABLE IF NOT EXISTS rounds (
    id INTEGER PRIMARY KEY,
    label TEXT NOT NULL,
    iteration INTEGER,
    env_steps INTEGER,
    variant TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS matches (
    id INTEGER PRIMARY KEY,
    round_id INTEGER NOT NULL REFERENCES rounds (id),
    variant TEXT NOT NULL,
    seats TEXT NOT NULL,
    places TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS ratings (
    id INTEGER PRIMARY KEY,
    member_id INTEGER NOT NULL REFERENCES members (id),
    round_id INTEGER REFERENCES rounds (id),
    iteration INTEGER,
    mu REAL NOT NULL,
    sigma REAL NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS matches_round ON matches (round_id);
CREATE INDEX IF NOT EXISTS ratings_member ON ratings (member_id);
CREATE TABLE IF NOT EXISTS people (
    name TEXT PRIMARY KEY,
    token TEXT NOT NULL,
    address TEXT,
    claimed_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS people_claimed ON people (claimed_at);
CREATE TABLE IF NOT EXISTS site_games (
    game TEXT PRIMARY KEY,
    person TEXT NOT NULL,
    address TEXT,
    round_id INTEGER REFERENCES rounds (id),
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS site_games_person ON site_games (person, created_at);
CREATE INDEX IF NOT EXISTS site_games_address ON site_games (address, created_at);
"""


class LeagueStoreError(ValueError):
    """The database cannot be used as a league (not one, a newer schema, a bad member); one line."""


class DamagedMemberError(LeagueStoreError):
    """A member row holding what no round writes (a rating that is not finite, a sigma of 0 or less, text; a
    panel that is not a JSON object); one line naming the member. `damaged` is what of the row can still be
    trusted (id, name, kind), so that the member can be listed as damaged and removed."""

    def __init__(self, path: Path, damaged: DamagedMember):
        self.damaged = damaged
        super().__init__(f"{path}: league member {_shown(damaged.name)} has {damaged.problem}: restore league.db "
                         f"from a copy, or take the member out with league.py remove")


class LeagueWriteFailed(LeagueStoreError, OSError):
    """A write that the league's disk had no room for, or could not take (SQLite's FULL and IOERR); one line naming
    the database. Nothing of its transaction was kept. It is an `OSError` too, with the database as its
    ``filename``, so that a caller that survives a failed file write (a training run's save) treats it as one."""

    def __init__(self, path: Path, err: sqlite3.Error):
        self.message = f"{path}: the league could not be written ({err})"
        super().__init__(self.message)
        self.errno = errno.ENOSPC if err.sqlite_errorcode == sqlite3.SQLITE_FULL else errno.EIO
        self.strerror = str(err)
        self.filename = str(path)

    def __str__(self) -> str:  # OSError's would print "[Errno 28] ..." without the path's context
        return self.message


def write_failed(err: BaseException) -> bool:
    """Whether `err` is SQLite saying the disk took no write: no room (FULL) or an I/O error (IOERR and its
    extended codes), as opposed to a busy database or a bad statement."""
    code = getattr(err, "sqlite_errorcode", None)
    return isinstance(err, sqlite3.OperationalError) and code is not None and \
        code & 0xFF in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR)


@dataclass(frozen=True)
class Member:
    id: int
    name: str
    kind: str
    spec: str
    iteration: int | None
    env_steps: int | None
    created_at: float
    active: bool
    evicted_at: float | None
    slot: int | None
    mu: float
    sigma: float
    panel: dict[str, Any] | None
    role: str | None = None
    """The learner a main or snapshot member was (`policies.league.roles.ROLES`); None for the other kinds."""

    @property
    def ordinal(self) -> float:
        """openskill's conservative rating (`policies.league.ratings.ordinal`)."""
        return ordinal(self.mu, self.sigma)


@dataclass(frozen=True)
class DamagedMember:
    """A member row that cannot be read as a `Member` (`DamagedMemberError`): what of it is still trusted, and
    what is wrong (``problem``: ``mu = inf, not a finite number``). It is never rated, seated or shown with a
    rating; `LeagueStore.members` leaves it out with a warning, `LeagueStore.damaged_members` lists it."""
    id: int
    name: str
    kind: str
    active: bool
    problem: str


@dataclass(frozen=True)
class Match:
    id: int
    round_id: int
    variant: str
    seats: tuple[int, ...]
    places: tuple[int, ...]
    created_at: float


class LeagueStore:
    """One open league database; every write commits before it returns (or with its `transaction`)."""

    def __init__(self, connection: sqlite3.Connection, path: Path):
        self.db = connection
        self.path = path
        self._depth = 0

    @classmethod
    def open(cls, path: str | Path, create: bool = True, read_only: bool = False) -> LeagueStore:
        """The league database at `path` (a file, or a folder holding ``league.db``).

        `create`: make it when missing. `read_only`: a reader (the dashboard) that
        never takes the write lock a training run needs.
        """
        path = Path(path)
        if path.is_dir():
            path = path / DB_NAME
        if not path.exists() and (not create or read_only):
            raise LeagueStoreError(f"{path}: no league database there (give a run folder or a league.db file)")
        if read_only:
            return cls._open_read_only(path)
        if not create:
            _check_is_league(path)  # before anything writes: an empty or foreign file must not become a league
        path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(str(path), timeout=30.0, isolation_level=None)  # autocommit; we BEGIN ourselves
        try:
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            _check_integrity(db, path)
            _migrate(db, path)
            db.execute("PRAGMA foreign_keys=ON")
            store = cls(db, path)
            with store.transaction():
                for statement in _SCHEMA.strip().split(";"):
                    if statement.strip():
                        db.execute(statement)
                version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                if version is None:
                    db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                elif _schema_version(version[0], path) > SCHEMA_VERSION:
                    raise LeagueStoreError(
                        f"{path}: league schema {version[0]} is newer than this code's {SCHEMA_VERSION}"
                    )
        except sqlite3.DatabaseError as err:
            db.close()
            raise LeagueStoreError(f"{path}: not a league database ({err})") from None
        except LeagueStoreError:
            db.close()
            raise
        return store

    @classmethod
    def _open_read_only(cls, path: Path) -> LeagueStore:
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=30.0, isolation_level=None)
            db.row_factory = sqlite3.Row
            version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            _check_integrity(db, path)
        except LeagueStoreError:
            db.close()
            raise
        except sqlite3.DatabaseError as err:
            db.close()
            raise LeagueStoreError(f"{path}: not a league database ({err})") from None
        try:
            too_new = version is None or _schema_version(version[0], path) > SCHEMA_VERSION
        except LeagueStoreError:
            db.close()
            raise
        if too_new:
            db.close()
            raise LeagueStoreError(f"{path}: not a league database of schema {SCHEMA_VERSION}")
        return cls(db, path)

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Reads inside see one consistent state of the database, whatever a writer commits meanwhile."""
        self.db.execute("BEGIN")
        try:
            yield
        finally:
            self.db.execute("COMMIT")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> LeagueStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """All writes inside commit together or not at all; nested uses join the outer one. A write the disk takes
        no more of is `LeagueWriteFailed`."""
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self.db.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
            self.db.execute("COMMIT")
        except BaseException as err:
            # SQLite has already undone a transaction whose write failed for room; a second ROLLBACK would raise
            # "no transaction is active" in place of the reason.
            if self.db.in_transaction:
                with contextlib.suppress(sqlite3.Error):  # the error under way is the one to tell
                    self.db.execute("ROLLBACK")
            if write_failed(err):
                raise LeagueWriteFailed(self.path, err) from None
            raise
        finally:
            self._depth = 0

    # ------------------------------------------------------------------ meta
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return default if row is None else row[0]

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction():
            self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    # ------------------------------------------------------------------ members
    def add_member(self, name: str, kind: str, spec: str, *, iteration: int | None = None,
                   env_steps: int | None = None, mu: float | None = None, sigma: float | None = None,
                   panel: dict[str, Any] | None = None, slot: int | None = None, role: str | None = None) -> Member:
        """A new member with openskill's starting rating unless given; a taken name is an error. A main or
        snapshot member's `role` is main unless given; other kinds have none."""
        if kind not in MEMBER_KINDS:
            raise LeagueStoreError(f"member kind {kind!r} is not allowed: choose {', '.join(MEMBER_KINDS)}")
        if kind in LEARNER_KINDS:
            role = role or MAIN
            if role not in ROLES:
                raise LeagueStoreError(f"member role {role!r} is not allowed: choose {', '.join(ROLES)}")
        elif role is not None:
            raise LeagueStoreError(f"a member of kind {kind} has no role, got {role!r}")
        if (kind == HUMAN_KIND) != name.startswith(HUMAN_PREFIX):
            raise LeagueStoreError(f"member name {name!r} is not allowed for kind {kind}: the {HUMAN_PREFIX!r} prefix "
                                   "is reserved for people (kind human), and a person's name has it")
        if name in self.names():  # a damaged member holds its name too
            raise LeagueStoreError(f"the league already has a member named {name!r}")
        if mu is None or sigma is None:
            mu, sigma = start_rating()
        with self.transaction():
            self.db.execute(
                "INSERT INTO members (name, kind, spec, iteration, env_steps, created_at, slot, mu, sigma, panel,"
                " role) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (name, kind, spec, iteration, env_steps, time.time(), slot, mu, sigma,
                 None if panel is None else json.dumps(panel), role),
            )
        return self.member(name)

    def ensure_member(self, name: str, kind: str, spec: str) -> Member:
        """The member called `name`, added first if it is not there yet; one of another kind is an error (a
        person's games are never credited to an agent that took the name)."""
        member = self.member(name)
        if member is not None and member.kind != kind:
            raise LeagueStoreError(f"league member {name!r} is of kind {member.kind}, not {kind}")
        return member or self.add_member(name, kind, spec)

    def member(self, name_or_id: str | int) -> Member | None:
        """The member of that name or id, None when there is none; a damaged one (`DamagedMember`) is
        `DamagedMemberError`, one line: whoever asks for it by name or id cannot be given its rating."""
        column = "id" if isinstance(name_or_id, int) else "name"
        row = self.db.execute(f"SELECT * FROM members WHERE {column} = ?", (name_or_id,)).fetchone()
        return None if row is None else _member(row, self.path)

    def members(self, active_only: bool = False, kinds: Iterable[str] | None = None) -> list[Member]:
        """Members in the order they joined. `active_only`: those in the league's pool now, which never holds a
        person (kind human): training and the site's opponent list never pick one. A damaged member row is left
        out, with one warning line on stderr naming it (once per process), so one bad row leaves every other
        member to be read, shown and played."""
        rows = self.db.execute("SELECT * FROM members ORDER BY id").fetchall()
        kinds = set(kinds) if kinds is not None else None
        out = []
        for row in rows:
            try:
                member = _member(row, self.path)
            except DamagedMemberError as err:
                _warn_once(f"warning: {self.path}: league member {_shown(err.damaged.name)} has "
                           f"{err.damaged.problem}: it is left out of the league's members (restore league.db from "
                           "a copy, or take it out with league.py remove)")
                continue
            if (not active_only or (member.active and member.kind != HUMAN_KIND)) and \
                    (kinds is None or member.kind in kinds):
                out.append(member)
        return out

    def damaged_members(self) -> list[DamagedMember]:
        """The member rows `members` leaves out, in the order they joined: what a listing shows as damaged and
        what ``league.py remove`` can still take out."""
        rows = self.db.execute("SELECT * FROM members ORDER BY id").fetchall()
        return [damaged for damaged in (_damage(row) for row in rows) if damaged is not None]

    def names(self) -> set[str]:
        """Every member's name, damaged members' too: a name taken by any row, read without its rating."""
        return {row[0] for row in self.db.execute("SELECT name FROM members")}

    def update_member(self, member_id: int, **fields: Any) -> None:
        allowed = {"spec", "iteration", "env_steps", "active", "evicted_at", "slot", "mu", "sigma", "panel"}
        unknown = set(fields) - allowed
        if unknown:
            raise LeagueStoreError(f"cannot update member fields {sorted(unknown)}: allowed {sorted(allowed)}")
        if "panel" in fields and fields["panel"] is not None:
            fields["panel"] = json.dumps(fields["panel"])
        sets = ", ".join(f"{k} = ?" for k in fields)
        with self.transaction():
            self.db.execute(f"UPDATE members SET {sets} WHERE id = ?", (*fields.values(), member_id))

    def evict(self, member_id: int) -> None:
        """Out of the league (and its slot); its row, matches and ratings stay."""
        self.update_member(member_id, active=0, evicted_at=time.time(), slot=None)

    def remove(self, member_id: int) -> bool:
        """A member out of the league: its row deleted when it never played a rated game (a mistaken add), else
        evicted, so the matches and ratings of the others keep it. True when the row was deleted."""
        with self.transaction():
            played = self.db.execute(
                "SELECT 1 FROM ratings WHERE member_id = ? UNION ALL SELECT 1 FROM matches, json_each(matches.seats)"
                " WHERE json_each.value = ? LIMIT 1", (member_id, member_id)).fetchone()
            if played:
                self.evict(member_id)
                return False
            self.db.execute("DELETE FROM members WHERE id = ?", (member_id,))
            return True

    # ------------------------------------------------------------------ the site's people and rated games
    def claim(self, name: str) -> dict[str, Any] | None:
        """The claim on person `name` (``human:<name>``): its token hash, address hash and time; None if none."""
        row = self.db.execute("SELECT * FROM people WHERE name = ?", (name,)).fetchone()
        return None if row is None else dict(row)

    def add_claim(self, name: str, token_hash: str, address: str | None) -> None:
        with self.transaction():
            self.db.execute("INSERT INTO people (name, token, address, claimed_at) VALUES (?, ?, ?, ?)",
                            (name, token_hash, address, time.time()))

    def claims_since(self, since: float) -> int:
        """Names claimed since `since` that have played a rated game (their person is a member): a claim that
        never played is not counted, so claims alone cannot use up the site's new names."""
        return int(self.db.execute(
            "SELECT COUNT(*) FROM people WHERE claimed_at >= ? AND name IN (SELECT name FROM members)",
            (since,)).fetchone()[0])

    def unplayed_claims(self, address: str) -> list[str]:
        """The names claimed from `address` that have not played a rated game yet, oldest first."""
        return [row[0] for row in self.db.execute(
            "SELECT name FROM people WHERE address = ? AND name NOT IN (SELECT name FROM members) "
            "ORDER BY claimed_at", (address,))]

    def release_claim(self, name: str, token_hash: str | None = None) -> bool:
        """The claim on `name` released, when its person never played a rated game (a person who has is taken out
        with `policies.league.league.remove_person`) and, with `token_hash`, when it is still that claim (the name
        may have been released and claimed again since). True when a claim was released."""
        with self.transaction():
            if name in self.names():  # a member, damaged or not: the person played
                return False
            if token_hash is None:
                cursor = self.db.execute("DELETE FROM people WHERE name = ?", (name,))
            else:
                cursor = self.db.execute("DELETE FROM people WHERE name = ? AND token = ?", (name, token_hash))
            return cursor.rowcount > 0

    def release_unplayed_claims(self, before: float) -> int:
        """Every claim made before `before` whose person never played a rated game, released; how many."""
        with self.transaction():
            return self.db.execute("DELETE FROM people WHERE claimed_at < ? AND name NOT IN (SELECT name FROM "
                                   "members)", (before,)).rowcount

    def site_game(self, game: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT * FROM site_games WHERE game = ?", (game,)).fetchone()
        return None if row is None else dict(row)

    def add_site_game(self, game: str, person: str, address: str | None, round_id: int) -> None:
        """The site's game `game` as rated (its match in round `round_id`): a second insert of it fails."""
        with self.transaction():
            self.db.execute("INSERT INTO site_games (game, person, address, round_id, created_at) VALUES "
                            "(?, ?, ?, ?, ?)", (game, person, address, round_id, time.time()))

    def site_games_since(self, since: float, *, person: str | None = None, address: str | None = None) -> int:
        """How many of the site's games were rated since `since`, of `person` or from `address`."""
        column, value = ("person", person) if person is not None else ("address", address)
        return int(self.db.execute(f"SELECT COUNT(*) FROM site_games WHERE {column} = ? AND created_at >= ?",
                                   (value, since)).fetchone()[0])

    # ------------------------------------------------------------------ rounds and matches
    def add_round(self, label: str, variant: str, iteration: int | None = None,
                  env_steps: int | None = None) -> int:
        with self.transaction():
            cur = self.db.execute(
                "INSERT INTO rounds (label, iteration, env_steps, variant, created_at) VALUES (?, ?, ?, ?, ?)",
                (label, iteration, env_steps, variant, time.time()),
            )
        return int(cur.lastrowid)

    def add_matches(self, round_id: int, variant: str,
                    games: Iterable[tuple[Sequence[int], Sequence[int]]]) -> int:
        """Record finished games as (member id per seat, place per seat); returns how many."""
        now = time.time()
        rows = []
        for seats, places in games:
            if len(seats) != len(places) or not all(1 <= int(p) <= len(seats) for p in places):
                raise LeagueStoreError(f"a match needs a place 1..{len(seats)} per seat: got seats {list(seats)}, "
                                       f"places {list(places)} (an unfinished game has no places)")
            rows.append((round_id, variant, json.dumps([int(m) for m in seats]),
                         json.dumps([int(p) for p in places]), now))
        with self.transaction():
            self.db.executemany(
                "INSERT INTO matches (round_id, variant, seats, places, created_at) VALUES (?, ?, ?, ?, ?)", rows
            )
        return len(rows)

    def matches(self, round_id: int | None = None, since_round: int | None = None) -> list[Match]:
        query, args = "SELECT * FROM matches", []
        if round_id is not None:
            query, args = query + " WHERE round_id = ?", [round_id]
        elif since_round is not None:
            query, args = query + " WHERE round_id >= ?", [since_round]
        rows = self.db.execute(query + " ORDER BY id", args).fetchall()
        return [Match(r["id"], r["round_id"], r["variant"], _integers(r, "seats", self.path),
                      _integers(r, "places", self.path), r["created_at"]) for r in rows]

    def rounds(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute("SELECT * FROM rounds ORDER BY id").fetchall()]

    # ------------------------------------------------------------------ ratings
    def set_ratings(self, round_id: int | None, ratings: dict[int, tuple[float, float]],
                    iteration: int | None = None) -> None:
        """New current ratings, and a history row for each."""
        now = time.time()
        with self.transaction():
            for member_id, (mu, sigma) in ratings.items():
                self.db.execute("UPDATE members SET mu = ?, sigma = ? WHERE id = ?", (mu, sigma, member_id))
                self.db.execute(
                    "INSERT INTO ratings (member_id, round_id, iteration, mu, sigma, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?)", (member_id, round_id, iteration, mu, sigma, now),
                )

    def rating_history(self) -> list[dict[str, Any]]:
        """Every rating row with its member's name and kind, oldest first. A row holding a rating no round writes
        is left out with one warning line (once per process), never read as a rating."""
        rows = self.db.execute(
            "SELECT r.member_id, m.name, m.kind, r.round_id, r.iteration, r.mu, r.sigma, r.created_at"
            " FROM ratings r JOIN members m ON m.id = r.member_id ORDER BY r.id"
        ).fetchall()
        out = []
        for row in rows:
            problem = _rating_problem(row["mu"], row["sigma"])
            if problem is not None:
                _warn_once(f"warning: {self.path}: a rating of league member {_shown(row['name'])} in its history "
                           f"has {problem}: it is left out of the history")
                continue
            out.append(dict(row))
        return out


def _migrate(db: sqlite3.Connection, path: Path) -> None:
    """An older database to the current schema in one transaction of its own, before foreign keys are turned on
    (SQLite cannot rebuild a table that others refer to with them on). Schema 1 to 2: the members table rebuilt
    with kind ``human`` allowed by its CHECK (SQLite cannot change a CHECK in place). Schema 2 to 3: a ``role``
    column, ``main`` for main and its snapshots (the only learner there was). Schema 3 to 4: people's names
    folded (`_fold_people`). Rows and ids are kept, so matches
    and ratings still name the same members; the foreign keys are checked before the commit. A new or current
    database is left alone."""
    try:
        version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    except sqlite3.OperationalError:  # no meta table: a new database, made at the current schema
        return
    if version is None or _schema_version(version[0], path) >= SCHEMA_VERSION:
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        version = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if int(version[0]) < SCHEMA_VERSION:  # another process may have migrated it meanwhile
            create = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'members'").fetchone()[0]
            if "'human'" not in create:
                db.execute(create.replace("CREATE TABLE members", "CREATE TABLE members_v2", 1)
                           .replace("'external')", "'external', 'human')", 1))
                db.execute("INSERT INTO members_v2 SELECT * FROM members")
                db.execute("DROP TABLE members")
                db.execute("ALTER TABLE members_v2 RENAME TO members")
            columns = {row[1] for row in db.execute("PRAGMA table_info(members)").fetchall()}
            if "role" not in columns:
                db.execute("ALTER TABLE members ADD COLUMN role TEXT")
                db.execute("UPDATE members SET role = ? WHERE kind IN ('main', 'snapshot')", (MAIN,))
            _fold_people(db)
            if db.execute("PRAGMA foreign_key_check").fetchone() is not None:
                raise LeagueStoreError(f"{path}: the league database cannot be migrated to schema "
                                       f"{SCHEMA_VERSION} (its foreign keys do not hold)")
            db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _fold_people(db: sqlite3.Connection) -> None:
    """Schema 3 to 4: every person's name (members of kind human, claims, rated site games) folded as
    `person_name` folds it, so that a name is found whatever case and spaces it was typed with. Two people whose
    names fold alike both played before names were folded: the first to join takes the folded name, the other
    keeps the name it has (its games and rating stay; ``league.py remove`` takes it by that name)."""
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    names = [row[0] for row in db.execute("SELECT name FROM members WHERE kind = 'human' ORDER BY id")]
    if "people" in tables:
        names += [row[0] for row in db.execute("SELECT name FROM people ORDER BY claimed_at")
                  if row[0] not in names]
    for name in names:
        folded = person_name(name[len(HUMAN_PREFIX):]) if name.startswith(HUMAN_PREFIX) else name
        if folded == name:
            continue
        taken = db.execute("SELECT 1 FROM members WHERE name = ?", (folded,)).fetchone()
        if "people" in tables:
            taken = taken or db.execute("SELECT 1 FROM people WHERE name = ?", (folded,)).fetchone()
        if taken:
            continue
        db.execute("UPDATE members SET name = ? WHERE name = ?", (folded, name))
        if "people" in tables:
            db.execute("UPDATE people SET name = ? WHERE name = ?", (folded, name))
        if "site_games" in tables:
            db.execute("UPDATE site_games SET person = ? WHERE person = ?", (folded, name))


def _check_integrity(db: sqlite3.Connection, path: Path) -> None:
    """A file that opens can still have pages that fail later, mid-round or mid-page: refuse it at the door."""
    try:
        problems = [row[0] for row in db.execute("PRAGMA integrity_check").fetchall()]
    except sqlite3.DatabaseError as err:
        problems = [str(err)]
    if problems != ["ok"]:
        # SQLite lists one problem a line, after a heading: the first problem says enough, on one line
        lines = [line for problem in problems for line in str(problem).splitlines()
                 if line.strip() and not line.startswith("***")] or ["unknown damage"]
        more = f" and {len(lines) - 1} more problems" if len(lines) > 1 else ""
        raise LeagueStoreError(f"{path}: the league database is damaged (integrity_check: {lines[0].strip()[:160]}"
                               f"{more}); restore it from a copy or start a new league")


def _schema_version(value: Any, path: Path) -> int:
    """The ``schema_version`` a database's meta holds, as a number of 1 or more (a newer one than this code's is
    the caller's to refuse); anything else is one line."""
    try:
        version = int(value)
    except (TypeError, ValueError):
        raise LeagueStoreError(f"{path}: not a league database (its schema_version is {_shown(value)}, not a "
                               "number)") from None
    if version < 1:
        raise LeagueStoreError(f"{path}: not a league database (its schema_version is {version}: schemas are "
                               f"numbered 1 to {SCHEMA_VERSION})")
    return version


def _shown(value: Any) -> str:
    return repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."


def _check_is_league(path: Path) -> None:
    """`LeagueStoreError` of one line unless `path` holds a league database (its ``meta`` table): read only, so an
    empty file or another program's database is refused as it is, not turned into an empty league."""
    if path.stat().st_size == 0:
        raise LeagueStoreError(f"{path}: not a league database (an empty file)")
    try:
        db = sqlite3.connect(str(path), timeout=30.0)
        try:
            found = db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
        finally:
            db.close()
    except sqlite3.DatabaseError as err:
        raise LeagueStoreError(f"{path}: not a league database ({err})") from None
    if found is None:
        raise LeagueStoreError(f"{path}: not a league database (it has no league tables)")


def _rating_problem(mu: Any, sigma: Any) -> str | None:
    """What is wrong with a ``mu`` and ``sigma`` read from the database (``mu = inf, not a finite number``), or
    None when they are finite numbers with sigma above 0, as every round writes them."""
    for key, value in (("mu", mu), ("sigma", sigma)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"{key} = {_shown(value)}, not a finite number"
    if sigma <= 0:
        return f"sigma = {float(sigma)!r}, not above 0"
    return None


_WARNED: set[str] = set()
"""Warnings already printed by this process: a site or a training run reads the members again and again."""


def _warn_once(line: str) -> None:
    if line not in _WARNED:
        _WARNED.add(line)
        print(line, file=sys.stderr, flush=True)


def _integers(row: sqlite3.Row, key: str, path: Path) -> tuple[int, ...]:
    """A match's ``seats`` or ``places``: a JSON list of integers; anything else is `LeagueStoreError` of one line."""
    try:
        value = read_json(row[key])
    except (TypeError, ValueError):
        value = None
    if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise LeagueStoreError(f"{path}: match {row['id']} has {key} = {_shown(row[key])}, not a JSON list of "
                               "integers: restore league.db from a copy")
    return tuple(value)


def _panel(value: Any) -> tuple[dict[str, Any] | None, str | None]:
    """A member's ``panel``: the JSON object it holds (None for none), or what is wrong with it."""
    if value is None:
        return None, None
    try:
        panel = read_json(value)
    except (TypeError, ValueError):
        panel = None
    if not isinstance(panel, dict):
        return None, f"panel = {_shown(value)}, not a JSON object"
    return panel, None


def _damage(row: sqlite3.Row) -> DamagedMember | None:
    """The row as a `DamagedMember` when its rating or panel is not what a round writes, else None."""
    problem = _rating_problem(row["mu"], row["sigma"]) or _panel(row["panel"])[1]
    return None if problem is None else DamagedMember(row["id"], row["name"], row["kind"], bool(row["active"]), problem)


def _member(row: sqlite3.Row, path: Path) -> Member:
    damaged = _damage(row)
    if damaged is not None:
        raise DamagedMemberError(path, damaged)
    return Member(
        id=row["id"], name=row["name"], kind=row["kind"], spec=row["spec"], iteration=row["iteration"],
        env_steps=row["env_steps"], created_at=row["created_at"], active=bool(row["active"]),
        evicted_at=row["evicted_at"], slot=row["slot"], mu=float(row["mu"]), sigma=float(row["sigma"]),
        panel=_panel(row["panel"])[0],
        # A reader leaves an older database as it is: before roles, main and its snapshots were main's.
        role=row["role"] if "role" in row.keys() else (MAIN if row["kind"] in LEARNER_KINDS else None),
    )
