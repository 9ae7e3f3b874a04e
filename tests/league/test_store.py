"""The league database: round trips, one-line refusals, read-only readers, transactions, and kill -9."""
from __future__ import annotations

import errno
import hashlib
import os
import random
import select
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from policies.league.ratings import ordinal, start_rating
from policies.league.store import SCHEMA_VERSION, LeagueStore, LeagueStoreError, LeagueWriteFailed
from tests.league.full_disk import no_room_left

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path):
    with LeagueStore.open(tmp_path / "league.db") as opened:
        yield opened


def four_bots(store: LeagueStore) -> list[int]:
    return [store.add_member(name, "bot", name).id for name in ("random", "fast", "hybrid", "defensive")]


def one_line_error(err: pytest.ExceptionInfo, *fragments: str) -> str:
    text = str(err.value)
    assert "\n" not in text and text.strip() == text, text
    for fragment in fragments:
        assert fragment in text, text
    return text


def fingerprint(path: Path) -> tuple[int, int, str]:
    stat = path.stat()
    return stat.st_mtime_ns, stat.st_size, hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------- round trips
def test_members_round_trip_with_every_field_and_survive_reopening(tmp_path):
    path = tmp_path / "league.db"
    with LeagueStore.open(path) as store:
        bot = store.add_member("random", "bot", "random")
        snap = store.add_member("main@10", "snapshot", "ckpt:league/main@10", iteration=10, env_steps=40_960,
                                mu=27.5, sigma=6.25, panel={"random": {"win_rate": 0.4, "games": 50}}, slot=3)
        store.add_member("ext", "external", "ckpt:/somewhere/policy")
        assert (bot.mu, bot.sigma) == pytest.approx(start_rating())
        assert bot.active and bot.slot is None and bot.panel is None and bot.evicted_at is None
        assert bot.iteration is None and bot.env_steps is None
        assert snap.ordinal == pytest.approx(ordinal(27.5, 6.25)) == pytest.approx(27.5 - 18.75)
        assert abs(snap.created_at - time.time()) < 60
    with LeagueStore.open(path, create=False) as store:
        again = store.member("main@10")
        assert again == snap and store.member(snap.id) == snap
        assert (again.kind, again.spec, again.iteration, again.env_steps, again.slot) == (
            "snapshot", "ckpt:league/main@10", 10, 40_960, 3)
        assert again.panel == {"random": {"win_rate": 0.4, "games": 50}}
        assert store.member("nobody") is None and store.member(999) is None
        assert [m.name for m in store.members()] == ["random", "main@10", "ext"]  # the order they joined
        assert [m.name for m in store.members(kinds=["external", "bot"])] == ["random", "ext"]
        assert store.ensure_member("random", "bot", "random") == bot  # there already: nothing added
        assert len(store.members()) == 3
        store.update_member(snap.id, panel={"hybrid": {"win_rate": 0.1}}, iteration=11)
        assert store.member(snap.id).panel == {"hybrid": {"win_rate": 0.1}} and store.member(snap.id).iteration == 11


def test_rounds_matches_and_ratings_round_trip(tmp_path):
    path = tmp_path / "league.db"
    with LeagueStore.open(path) as store:
        a, b, c, d = four_bots(store)
        first = store.add_round("training", "classic", iteration=40, env_steps=320_000)
        assert store.add_matches(first, "classic", [((a, b, c, d), (2, 1, 4, 3)), ((d, c, b, a), (1, 2, 3, 4))]) == 2
        store.set_ratings(first, {a: (24.0, 8.0), b: (26.0, 7.5)}, iteration=40)
        second = store.add_round("round robin", "quick")
        store.add_matches(second, "quick", [((c, a), (1, 2))])
        store.set_ratings(second, {a: (23.0, 7.0)})
    with LeagueStore.open(path, create=False) as store:
        rounds = store.rounds()
        assert [r["id"] for r in rounds] == [first, second] and second > first
        assert {k: rounds[0][k] for k in ("label", "iteration", "env_steps", "variant")} == {
            "label": "training", "iteration": 40, "env_steps": 320_000, "variant": "classic"}
        assert (rounds[1]["label"], rounds[1]["iteration"], rounds[1]["variant"]) == ("round robin", None, "quick")
        matches = store.matches()
        assert [(m.round_id, m.variant, m.seats, m.places) for m in matches] == [
            (first, "classic", (a, b, c, d), (2, 1, 4, 3)),
            (first, "classic", (d, c, b, a), (1, 2, 3, 4)),
            (second, "quick", (c, a), (1, 2)),
        ]
        assert store.matches(round_id=first) == matches[:2]
        assert store.matches(round_id=second) == store.matches(since_round=second) == matches[2:]
        assert store.matches(since_round=first) == matches
        # current ratings are the last ones set; members that were not rated keep the start
        assert (store.member(a).mu, store.member(a).sigma) == (23.0, 7.0)
        assert (store.member(b).mu, store.member(b).sigma) == (26.0, 7.5)
        assert (store.member(c).mu, store.member(c).sigma) == pytest.approx(start_rating())
        history = store.rating_history()
        assert [(h["name"], h["kind"], h["round_id"], h["iteration"], h["mu"], h["sigma"]) for h in history] == [
            ("random", "bot", first, 40, 24.0, 8.0),
            ("fast", "bot", first, 40, 26.0, 7.5),
            ("random", "bot", second, None, 23.0, 7.0),
        ]


def test_meta_round_trips_and_the_schema_version_is_recorded(store):
    assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
    assert store.get_meta("missing") is None and store.get_meta("missing", "x") == "x"
    store.set_meta("run", "ppo-1")
    store.set_meta("run", "ppo-2")
    assert store.get_meta("run") == "ppo-2"


def test_open_takes_a_folder_holding_league_db_and_makes_missing_parents(tmp_path):
    with LeagueStore.open(tmp_path / "deep" / "run" / "league.db") as store:
        store.add_member("random", "bot", "random")
    with LeagueStore.open(tmp_path / "deep" / "run", create=False) as store:
        assert store.path == tmp_path / "deep" / "run" / "league.db"
        assert [m.name for m in store.members()] == ["random"]
    with LeagueStore.open(tmp_path / "deep" / "run", read_only=True) as reader:
        assert [m.name for m in reader.members()] == ["random"]


# ---------------------------------------------------------------------------- refusals
def test_a_taken_name_or_an_unknown_kind_is_refused_in_one_line_and_adds_nothing(store):
    store.add_member("random", "bot", "random")
    with pytest.raises(LeagueStoreError) as err:
        store.add_member("random", "external", "ckpt:/x")
    one_line_error(err, "'random'", "already")
    with pytest.raises(LeagueStoreError) as err:
        store.add_member("coach", "teacher", "random")
    one_line_error(err, "'teacher'", "main, snapshot, bot, external")
    assert [(m.name, m.kind) for m in store.members()] == [("random", "bot")]
    with pytest.raises(LeagueStoreError) as err:
        store.update_member(store.member("random").id, name="renamed")
    one_line_error(err, "name")
    assert store.member("random") is not None


@pytest.mark.parametrize("places", [(0, 1, 2, 3), (1, 2, 3, 5), (1, 2, 3), (1, 2, 3, 4, 1), (1, 2, -1, 3)])
def test_add_matches_refuses_places_outside_one_to_n_and_records_none_of_the_batch(store, places):
    ids = four_bots(store)
    round_id = store.add_round("training", "classic")
    with pytest.raises(LeagueStoreError) as err:
        store.add_matches(round_id, "classic", [(ids, (1, 2, 3, 4)), (ids, places)])
    one_line_error(err, "1..4")
    assert store.matches() == []  # the good game before the bad one is not recorded either
    assert store.add_matches(round_id, "classic", [(ids, (1, 1, 3, 4))]) == 1  # a tie is a finished game


def test_evict_keeps_the_row_its_matches_and_ratings_but_clears_active_and_slot(store):
    a, b, c, _ = four_bots(store)
    snap = store.add_member("main@10", "snapshot", "ckpt:league/main@10", iteration=10, slot=2)
    round_id = store.add_round("training", "classic", iteration=10)
    store.add_matches(round_id, "classic", [((snap.id, a, b, c), (1, 2, 3, 4))])
    store.set_ratings(round_id, {snap.id: (30.0, 5.0), a: (20.0, 6.0)})
    before = time.time()
    store.evict(snap.id)
    evicted = store.member("main@10")
    assert not evicted.active and evicted.slot is None and before <= evicted.evicted_at <= time.time()
    assert (evicted.mu, evicted.sigma, evicted.iteration, evicted.spec) == (30.0, 5.0, 10, "ckpt:league/main@10")
    assert "main@10" not in {m.name for m in store.members(active_only=True)}
    assert "main@10" in {m.name for m in store.members()}
    assert store.matches(round_id)[0].seats == (snap.id, a, b, c)
    assert [h["mu"] for h in store.rating_history() if h["name"] == "main@10"] == [30.0]
    with pytest.raises(LeagueStoreError):  # the name stays taken
        store.add_member("main@10", "snapshot", "ckpt:league/other")


def test_a_newer_schema_is_refused_by_writers_and_readers(tmp_path):
    path = tmp_path / "league.db"
    with LeagueStore.open(path) as store:
        store.add_member("random", "bot", "random")
        store.set_meta("schema_version", str(SCHEMA_VERSION + 1))
    before = fingerprint(path)
    with pytest.raises(LeagueStoreError) as err:
        LeagueStore.open(path)
    one_line_error(err, "newer", str(SCHEMA_VERSION + 1))
    with pytest.raises(LeagueStoreError) as err:
        LeagueStore.open(path, read_only=True)
    one_line_error(err, str(path))
    with sqlite3.connect(path) as db:  # the refusal changed nothing
        assert db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0] == str(
            SCHEMA_VERSION + 1)
        assert db.execute("SELECT name FROM members").fetchall() == [("random",)]
    assert fingerprint(path)[1:] == before[1:]


def test_a_missing_file_fails_in_one_line_without_creating_it(tmp_path):
    missing = tmp_path / "nowhere" / "league.db"
    for kwargs in ({"create": False}, {"read_only": True}):
        with pytest.raises(LeagueStoreError) as err:
            LeagueStore.open(missing, **kwargs)
        one_line_error(err, str(missing), "no league database")
    assert not missing.parent.exists()


NOT_A_DATABASE = b"PK\x03\x04 a zip archive, not a database " * 200


# (An empty file is an empty SQLite database: a writer makes it a league, as it does a new file.)
@pytest.mark.parametrize("content, kwargs", [
    (NOT_A_DATABASE, {}), (NOT_A_DATABASE, {"create": False}), (NOT_A_DATABASE, {"read_only": True}),
    (b"", {"read_only": True}),
])
def test_a_file_that_is_no_league_database_fails_in_one_line_and_is_left_alone(tmp_path, content, kwargs):
    path = tmp_path / "notes.db"
    path.write_bytes(content)
    with pytest.raises(LeagueStoreError) as err:
        LeagueStore.open(path, **kwargs)
    one_line_error(err, str(path), "not a league database")
    assert path.read_bytes() == content


def test_another_programs_sqlite_database_is_not_a_league_to_a_reader(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE things (x)")
    with pytest.raises(LeagueStoreError) as err:
        LeagueStore.open(path, read_only=True)
    one_line_error(err, str(path))


# ---------------------------------------------------------------------------- readers
def test_a_read_only_store_never_writes_the_database(tmp_path):
    path = tmp_path / "league.db"
    with LeagueStore.open(path) as store:
        ids = four_bots(store)
        round_id = store.add_round("training", "classic")
        store.add_matches(round_id, "classic", [(ids, (1, 2, 3, 4))])
    before = fingerprint(path)
    time.sleep(0.01)  # a write now would give a different mtime
    with LeagueStore.open(path, read_only=True) as reader:
        assert [m.name for m in reader.members()] == ["random", "fast", "hybrid", "defensive"]
        assert len(reader.matches()) == 1 and reader.get_meta("schema_version") == str(SCHEMA_VERSION)
        writes = [
            lambda: reader.add_member("new", "bot", "random"),
            lambda: reader.set_meta("k", "v"),
            lambda: reader.add_round("training", "classic"),
            lambda: reader.set_ratings(None, {ids[0]: (1.0, 1.0)}),
            lambda: reader.evict(ids[0]),
            lambda: reader.db.execute("DELETE FROM matches"),
        ]
        for write in writes:
            with pytest.raises(sqlite3.OperationalError, match="readonly"):
                write()
        assert len(reader.members()) == 4 and len(reader.matches()) == 1 and reader.member("random").active
    assert fingerprint(path) == before
    wal = path.with_name(path.name + "-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # nothing went to the journal either
    with LeagueStore.open(path, create=False) as store:
        assert store.get_meta("k") is None and store.member("new") is None


@pytest.mark.serial  # times how fast it happens (tests/conftest.py)
def test_a_reader_does_not_block_the_writer_and_its_snapshot_is_consistent(tmp_path):
    path = tmp_path / "league.db"
    with LeagueStore.open(path) as writer:
        writer.add_member("random", "bot", "random")
        with LeagueStore.open(path, read_only=True) as reader:
            assert len(reader.members()) == 1
            with reader.snapshot():
                assert len(reader.members()) == 1
                started = time.perf_counter()
                writer.add_member("hybrid", "bot", "hybrid")  # commits while the reader reads
                assert time.perf_counter() - started < 5  # no wait for a lock the reader holds
                assert len(reader.members()) == 1  # the reader's view is the one it began with
                assert reader.member("hybrid") is None
            assert [m.name for m in reader.members()] == ["random", "hybrid"]  # after it: the new state


# ---------------------------------------------------------------------------- transactions
def test_an_exception_inside_a_transaction_rolls_back_everything_in_it(store):
    a, b, c, d = four_bots(store)
    with pytest.raises(RuntimeError, match="midway"), store.transaction():
        store.add_member("main@10", "snapshot", "ckpt:league/main@10", slot=0)
        round_id = store.add_round("training", "classic", iteration=10)
        store.add_matches(round_id, "classic", [((a, b, c, d), (1, 2, 3, 4))])
        store.set_ratings(round_id, {a: (30.0, 2.0)})
        store.evict(b)
        store.set_meta("last", "10")
        raise RuntimeError("killed midway")
    assert store.member("main@10") is None and store.rounds() == [] and store.matches() == []
    assert store.rating_history() == [] and store.member(a).mu == pytest.approx(start_rating()[0])
    assert store.member(b).active and store.get_meta("last") is None
    # the store is usable afterwards, and a later transaction commits
    with store.transaction():
        round_id = store.add_round("training", "classic", iteration=20)
        store.add_matches(round_id, "classic", [((a, b, c, d), (4, 3, 2, 1))])
    assert [r["iteration"] for r in store.rounds()] == [20] and len(store.matches()) == 1


def test_a_write_the_disk_has_no_room_for_is_one_line_and_leaves_the_league_as_it_was(tmp_path):
    path = tmp_path / "league.db"
    with LeagueStore.open(path) as store:
        a, b, c, d = four_bots(store)
        no_room_left(store)
        games = [((a, b, c, d), (1, 2, 3, 4))] * 5_000  # more than the free room of the pages there are
        with pytest.raises(LeagueWriteFailed) as failed, store.transaction():
            round_id = store.add_round("training", "classic", iteration=10)
            store.add_matches(round_id, "classic", games)
        line = one_line_error(failed, str(path), "could not be written", "database or disk is full")
        # Callers that keep a run going treat it as any failed write of a file: an OSError with the path.
        assert isinstance(failed.value, OSError) and isinstance(failed.value, LeagueStoreError)
        assert failed.value.errno == errno.ENOSPC and failed.value.filename == str(path), line
        # SQLite undid the transaction when the write failed: the rollback after it must not hide the failure.
        assert not store.db.in_transaction and store.rounds() == [] and store.matches() == []
        lone = store.add_round("training", "classic", iteration=15)  # one row: its table's page has room
        with pytest.raises(LeagueWriteFailed):  # a write that is its own transaction fails the same way
            store.add_matches(lone, "classic", games)
        assert store.matches() == []
        store.db.execute("PRAGMA max_page_count = 1073741823")  # room again: the same connection writes on
        with store.transaction():
            store.add_matches(store.add_round("training", "classic", iteration=20), "classic", games[:3])
    with LeagueStore.open(path, create=False) as again:
        assert [r["iteration"] for r in again.rounds()] == [15, 20] and len(again.matches()) == 3
        assert [m.name for m in again.members()] == ["random", "fast", "hybrid", "defensive"]


def test_a_keyboard_interrupt_rolls_back_too(store):
    with pytest.raises(KeyboardInterrupt), store.transaction():
        store.add_member("random", "bot", "random")
        raise KeyboardInterrupt
    assert store.members() == []


def test_nested_transactions_join_the_outer_one(tmp_path):
    path = tmp_path / "league.db"
    with LeagueStore.open(path) as store, LeagueStore.open(path, read_only=True) as other:
        with store.transaction():
            with store.transaction():
                store.add_member("random", "bot", "random")
                with store.transaction():
                    store.add_member("hybrid", "bot", "hybrid")
            # the inner blocks are over, yet another connection sees nothing until the outer one ends
            assert other.members() == []
            assert [m.name for m in store.members()] == ["random", "hybrid"]  # the writer sees its own writes
        assert [m.name for m in other.members()] == ["random", "hybrid"]

        # an error that leaves an inner block and then the outer one undoes both
        with pytest.raises(ValueError, match="inner"), store.transaction():
            store.add_member("fast", "bot", "fast")
            with store.transaction():
                store.add_member("defensive", "bot", "defensive")
                raise ValueError("inner failure")
        assert [m.name for m in store.members()] == ["random", "hybrid"] == [m.name for m in other.members()]

        # a write method called inside a transaction (add_member has its own) does not commit early
        with pytest.raises(RuntimeError), store.transaction():
            store.add_member("aggressive", "bot", "aggressive")
            assert other.member("aggressive") is None
            raise RuntimeError
        assert store.member("aggressive") is None


# ---------------------------------------------------------------------------- kill -9
GAMES_PER_ROUND = 25
MEMBERS = 4
WRITER = """
import sys
from policies.league.store import LeagueStore

path, games, members = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
store = LeagueStore.open(path)
ids = [store.ensure_member(f"bot{i}", "bot", "random").id for i in range(members)]
print("ready", flush=True)
k = 0
while True:
    k += 1
    with store.transaction():
        round_id = store.add_round("kill", "classic", iteration=k)
        for g in range(games):  # one statement per game: a kill can land between any two of them
            store.add_matches(round_id, "classic", [(ids, [(g + s) % len(ids) + 1 for s in range(len(ids))])])
        store.set_ratings(round_id, {m: (25.0 + k, 8.0) for m in ids}, iteration=k)
    print(f"committed {round_id}", flush=True)
"""


def start_writer(tmp_path: Path, db: Path) -> subprocess.Popen:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, str(script), str(db), str(GAMES_PER_ROUND), str(MEMBERS)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def read_until(proc: subprocess.Popen, enough, timeout: float = 20.0) -> bytes:
    """The writer's stdout until `enough(lines)`; raw reads, so nothing waits in a buffer."""
    fd, data, deadline = proc.stdout.fileno(), b"", time.monotonic() + timeout
    while not enough(data.decode().splitlines()):
        left = deadline - time.monotonic()
        assert left > 0 and proc.poll() is None, f"the writer stopped or stalled: {proc.stderr.read1(4000)!r}"
        if select.select([fd], [], [], left)[0]:
            chunk = os.read(fd, 65536)
            assert chunk, f"the writer closed its output: {proc.stderr.read1(4000)!r}"
            data += chunk
    return data


def commits(lines: list[str]) -> int:
    return sum(line.startswith("committed ") for line in lines)


def kill_and_collect(proc: subprocess.Popen, seen: bytes) -> list[int]:
    """SIGKILL now; every round the writer said it committed, including lines still in the pipe."""
    proc.send_signal(signal.SIGKILL)
    rest, _ = proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL
    lines = (seen + rest).decode().splitlines()
    return [int(line.split()[1]) for line in lines if line.startswith("committed ")]


def check_after_kill(db: Path, committed: list[int]) -> int:
    """The database after a kill: intact, every reported commit there, no round half written."""
    with LeagueStore.open(db, create=False) as store:
        assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        ids = [m.id for m in store.members()]
        assert len(ids) == MEMBERS
        present = [r["id"] for r in store.rounds()]
        assert set(committed) <= set(present)
        # at most the round in flight committed without its line being written out yet
        assert set(present) - set(committed) <= {max(committed, default=0) + 1}
        assert present == list(range(1, len(present) + 1))
        for round_id in present:
            matches = store.matches(round_id)
            assert len(matches) == GAMES_PER_ROUND, f"round {round_id} has {len(matches)} of its games"
            assert all(sorted(m.places) == [1, 2, 3, 4] and sorted(m.seats) == sorted(ids) for m in matches)
        history = store.rating_history()
        per_round = {}
        for row in history:
            per_round.setdefault(row["round_id"], []).append(row)
        assert sorted(per_round) == present
        for round_id, rows in per_round.items():
            assert len(rows) == MEMBERS and {r["member_id"] for r in rows} == set(ids)
            iteration = next(r["iteration"] for r in store.rounds() if r["id"] == round_id)
            assert all(r["mu"] == 25.0 + iteration and r["iteration"] == iteration for r in rows)
        if present:  # the members' current ratings are those of the last round that committed
            assert {m.mu for m in store.members()} == {25.0 + len(present)}
        assert len(store.matches()) == GAMES_PER_ROUND * len(present)
    return len(present)


def test_kill_9_right_after_commits_leaves_every_committed_round_and_no_half_round(tmp_path):
    rounds_checked = 0
    for trial in range(3):
        db = tmp_path / f"kill-{trial}" / "league.db"
        proc = start_writer(tmp_path, db)
        try:
            # kill the moment a commit shows up: the writer is then inside its next transaction
            seen = read_until(proc, lambda lines, need=3 + trial: commits(lines) >= need)
            committed = kill_and_collect(proc, seen)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert len(committed) >= 3 + trial
        rounds_checked += check_after_kill(db, committed)
        # the database goes on: a new writer adds to it after the crash
        with LeagueStore.open(db, create=False) as store:
            ids = [m.id for m in store.members()]
            round_id = store.add_round("after", "classic")
            store.add_matches(round_id, "classic", [(ids, (1, 2, 3, 4))])
            assert store.matches(round_id)[0].seats == tuple(ids)
    assert rounds_checked >= 12


def test_kill_9_at_random_moments_leaves_a_consistent_database(tmp_path):
    rng = random.Random()
    for trial in range(3):
        db = tmp_path / f"random-{trial}" / "league.db"
        proc = start_writer(tmp_path, db)
        try:
            seen = read_until(proc, lambda lines: "ready" in lines)
            time.sleep(rng.uniform(0.0, 0.3))
            committed = kill_and_collect(proc, seen)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        check_after_kill(db, committed)
        # a reader that opens the crashed database (the dashboard) reads it the same way
        with LeagueStore.open(db, read_only=True) as reader:
            assert {r["id"] for r in reader.rounds()} >= set(committed)


def test_a_schema_1_database_is_migrated_keeping_its_rows_and_takes_people(tmp_path):
    import sqlite3

    from policies.league import store as store_module

    path = tmp_path / "league.db"
    with sqlite3.connect(path) as db:  # a league as schema 1 made it: no kind human in the members' CHECK
        db.executescript(store_module._SCHEMA.replace(", 'human'))", "))"))
        db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        db.execute("INSERT INTO members (name, kind, spec, created_at, mu, sigma) VALUES ('random', 'bot', 'random', 0, 25, 8)")
        db.execute("INSERT INTO rounds (label, variant, created_at) VALUES ('training', 'classic', 0)")
        db.execute("INSERT INTO ratings (member_id, round_id, mu, sigma, created_at) VALUES (1, 1, 25, 8, 0)")
    with LeagueStore.open(path, create=False, read_only=True) as reader:  # read as it is, not migrated
        assert [m.name for m in reader.members()] == ["random"] and reader.get_meta("schema_version") == "1"
    with LeagueStore.open(path, create=False) as store:
        assert store.get_meta("schema_version") == str(SCHEMA_VERSION)
        person = store.add_member("human:ann", kind="human", spec="human")
        assert [m.name for m in store.members()] == ["random", "human:ann"]
        assert [m.name for m in store.members(active_only=True)] == ["random"]  # a person is never in the pool
        assert [h["name"] for h in store.rating_history()] == ["random"]
        assert store.db.execute("PRAGMA foreign_key_check").fetchall() == []
        with pytest.raises(sqlite3.IntegrityError):  # foreign keys hold again after the rebuild
            store.db.execute("INSERT INTO ratings (member_id, round_id, mu, sigma, created_at) VALUES (99, 1, 1, 1, 0)")
        assert person.kind == "human"
