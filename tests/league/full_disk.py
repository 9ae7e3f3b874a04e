"""A league database the disk has no more room for, made with SQLite's own limit: no privileges, no mocks."""
from __future__ import annotations

from policies.league.store import LeagueStore


def no_room_left(store: LeagueStore) -> None:
    """The database grows no further: its next new page fails with SQLITE_FULL, what a full disk gives."""
    pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    store.db.execute(f"PRAGMA max_page_count = {pages}")
