"""Caps that locked honest people out, the records folder, and games or ratings lost to a failing disk:

* 20 addresses filled the server's unfinished games, and every newcomer got 429 for an hour, after a restart too;
* finished games' records had no bound;
* in the records folder, a link to /etc/shadow and a dangling one answered differently (whether a path exists), a
  FIFO hung ``/api/records`` (and with enough requests, every worker), a 2 GiB sparse file was read whole;
* a rating whose league.db was gone or full was lost, and the browser saw the server's path and an exception name;
* a full records disk at the final move answered 500 and left games.db at an earlier state;
* deleting ``serve.lock`` let a second server serve the same folder.
"""
from __future__ import annotations

import json
import os
import sqlite3
import threading
from datetime import datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from launch.leaderboard import Board
from launch.web.app import create_app
from launch.web.site import Limits, Site
from policies.league.store import LeagueStore
from tests.disks import can_mount_a_small_disk, run_on_a_small_disk
from tests.launch.test_serve import play_out, start_server, stop_server
from tests.security.helpers import ROOT, Person, bot_league, one_error_line, run_command

QUICK = {"variant": "quick", "players": 2, "seat": 0, "opponents": ["bot:random"]}


def clients(site: Site, *addresses: str) -> dict[str, TestClient]:
    """One app over `site`, and a client of it from each address."""
    app = create_app(site)
    return {address: TestClient(app, client=(address, 5000)) for address in addresses}


def status(client: TestClient, game_id: str) -> int:
    return client.get(f"/api/games/{game_id}").status_code


# ------------------------------------------------------------------ a fair share of the unfinished games
def test_a_newcomer_can_start_a_game_on_a_full_server_and_the_heaviest_address_gives_way(tmp_path):
    records = tmp_path / "records"
    limits = Limits(games_total=6, games_per_address=100, games_per_browser=100, idle_minutes=60)
    by = clients(Site(records, [], limits=limits), "10.0.0.1", "10.0.0.2", "10.0.0.3")
    heavy = [by["10.0.0.1"].post("/api/games", json=QUICK).json()["id"] for _ in range(4)]
    light = [by["10.0.0.2"].post("/api/games", json=QUICK).json()["id"] for _ in range(2)]

    newcomer = by["10.0.0.3"].post("/api/games", json=QUICK)
    assert newcomer.status_code == 200, newcomer.text
    assert status(by["10.0.0.1"], heavy[0]) == 404  # the heaviest address's oldest game gave way
    assert all(status(by["10.0.0.1"], g) == 200 for g in heavy[1:])
    assert all(status(by["10.0.0.2"], g) == 200 for g in light)  # a lighter address keeps every game

    # After a restart the share is taken from games.db: another newcomer gets in the same way.
    by = clients(Site(records, [], limits=limits), "10.0.0.1", "10.0.0.2", "10.0.0.4")
    assert by["10.0.0.4"].post("/api/games", json=QUICK).status_code == 200
    assert status(by["10.0.0.1"], heavy[1]) == 404
    assert all(status(by["10.0.0.2"], g) == 200 for g in light)
    # Now every address has at most two: none of the full server's games gives way to one that has as many.
    for address in ("10.0.0.1", "10.0.0.2"):
        refused = by[address].post("/api/games", json=QUICK)
        assert refused.status_code == 429 and "this server has 6 unfinished games" in refused.json()["error"]
    with sqlite3.connect(records / "games.db") as db:
        assert db.execute("SELECT COUNT(*) FROM games").fetchone()[0] == 6


# ------------------------------------------------------------------ the records' quota
def test_finished_records_keep_to_their_quota_and_the_oldest_go_first(tmp_path):
    records = tmp_path / "records"
    (records / "human").mkdir(parents=True)
    old = ["20200101T000000Z-oldgame1.jsonl", "20200102T000000Z-oldgame2.jsonl"]
    for name in old:  # two old records of 500 KB each, with their human/ copies of 100 KB: over a MB
        (records / name).write_bytes(b"x" * 500_000)
        (records / "human" / name).write_bytes(b"x" * 100_000)
    (records / "notes.jsonl").write_bytes(b"x" * 2_000_000)  # not a name the site gives: not the site's to remove
    client = clients(Site(records, [], limits=Limits(records_kept=3, records_mb=1)), "10.0.0.1")["10.0.0.1"]

    first = play_out(client, client.post("/api/games", json=QUICK).json())
    assert first["over"] and (records / first["record"]).is_file()
    # Over a megabyte: the oldest goes, with its human/ copy, and only it.
    assert not (records / old[0]).exists() and not (records / "human" / old[0]).exists()
    assert (records / old[1]).exists() and (records / "notes.jsonl").exists()

    later = [play_out(client, client.post("/api/games", json=QUICK).json())["record"] for _ in range(3)]
    kept = sorted(p.name for p in records.glob("2*.jsonl"))
    assert kept == sorted([first["record"], *later])[-3:]  # three records at most, the newest
    assert sorted(p.name for p in (records / "human").glob("2*.jsonl")) == kept
    assert (records / "notes.jsonl").exists()


# ------------------------------------------------------------------ the records folder is read without surprises
@pytest.fixture
def viewer(tmp_path):
    records = tmp_path / "records"
    client = TestClient(create_app(Site(records, [])))
    real = play_out(client, client.post("/api/games", json=QUICK).json())["record"]
    return client, records, real


def test_a_link_to_a_secret_a_dangling_link_and_a_missing_file_get_the_same_answer(viewer, tmp_path):
    client, records, real = viewer
    (records / "shadow.jsonl").symlink_to("/etc/shadow")
    (records / "passwd.jsonl").symlink_to("/etc/passwd")
    (records / "dangling.jsonl").symlink_to(tmp_path / "no-such-file")
    (records / "folder.jsonl").mkdir()
    (records / "linked-record.jsonl").symlink_to(records / real)  # even a link to a real record is not followed

    listed = client.get("/api/records").json()["records"]
    assert {entry["file"] for entry in listed} == {f"records/{real}"}, listed
    answers = set()
    for name in ("shadow", "passwd", "dangling", "folder", "linked-record", "missing"):
        answer = client.get("/api/replay", params={"file": f"records/{name}.jsonl"})
        assert answer.status_code == 404, answer.text
        answers.add(answer.json()["error"].replace(name, "<name>"))
    assert len(answers) == 1, answers
    assert client.get("/api/replay", params={"file": f"records/{real}"}).status_code == 200


def test_a_fifo_in_the_records_folder_never_blocks_a_request(viewer):
    client, records, real = viewer
    fifo = records / "pipe.jsonl"
    os.mkfifo(fifo)
    answers: list = []
    asked = threading.Thread(target=lambda: answers.extend([client.get("/api/records"), client.get(
        "/api/replay", params={"file": "records/pipe.jsonl"})]), daemon=True)
    asked.start()
    asked.join(120)  # a request that blocks on the FIFO never ends: not a measure of speed
    try:
        assert not asked.is_alive(), "a request blocked on a FIFO in the records folder"
    finally:
        if asked.is_alive():  # let the old code's blocked read end
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    listing, replay = answers
    assert {entry["file"] for entry in listing.json()["records"]} == {f"records/{real}"}
    assert replay.status_code == 404


def bytes_read() -> int:
    """Bytes this process has read through read() and its kin so far (Linux's /proc/self/io ``rchar``)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="counts bytes read through Linux's /proc/self/io")
def test_a_2_gib_sparse_record_is_refused_by_its_size_without_being_read(viewer):
    client, records, real = viewer
    with open(records / "huge.jsonl", "wb") as f:
        f.truncate(2 * 1024**3)
    before = bytes_read()
    listed = {entry["file"]: entry for entry in client.get("/api/records").json()["records"]}
    replay = client.get("/api/replay", params={"file": "records/huge.jsonl"})
    assert bytes_read() - before < 64 * 1024**2  # not read: a read of it alone would be 2 GiB
    assert "over the 64 MB the viewer reads" in listed["records/huge.jsonl"]["error"], listed
    assert replay.status_code == 422 and "over the 64 MB" in replay.json()["error"]
    assert "game" in listed[f"records/{real}"]


# ------------------------------------------------------------------ a rating kept while the league is away
def league_files(run: Path) -> list[Path]:
    return [run / f"league.db{suffix}" for suffix in ("", "-wal", "-shm")]


def site_games(run: Path) -> list[str]:
    with LeagueStore.open(run / "league.db", create=False, read_only=True) as store:
        return [row[0] for row in store.db.execute("SELECT game FROM site_games").fetchall()]


@pytest.mark.parametrize("restart", [False, True], ids=["while-serving", "after-a-restart"])
def test_a_rating_the_gone_league_cannot_take_is_kept_and_made_once_it_is_back(tmp_path, restart):
    run, records = bot_league(tmp_path / "run"), tmp_path / "records"
    client = clients(Site(records, [], league=Board(str(run), None)), "10.0.0.1")["10.0.0.1"]
    ann = Person(client, "ann")
    view = play_out(client, ann.start().json(), actions=2)
    aside = tmp_path / "aside"
    aside.mkdir()
    for path in league_files(run):  # the league's disk is unmounted, its file deleted: league.db is gone
        if path.exists():
            path.rename(aside / path.name)

    done = play_out(client, view)
    assert done["over"] and done["rated"].startswith("not rated yet"), done["rated"]
    assert "kept" in done["rated"] and str(tmp_path) not in done["rated"] and "Error" not in done["rated"]
    with sqlite3.connect(records / "games.db") as db:  # the game is kept whole, to be rated later
        assert db.execute("SELECT id FROM games").fetchall() == [(done["id"],)]

    for path in aside.iterdir():
        path.rename(run / path.name)
    if restart:
        client = clients(Site(records, [], league=Board(str(run), None)), "10.0.0.1")["10.0.0.1"]
    else:
        assert client.post("/api/games", json=QUICK).status_code == 200  # any new game tries again
    assert site_games(run) == [done["id"]]
    assert client.get(f"/api/games/{done['id']}").json()["rated"].startswith("rated in the league as human:ann")
    client.post("/api/games", json=QUICK)  # and once only
    assert site_games(run) == [done["id"]]
    with sqlite3.connect(records / "games.db") as db:
        assert done["id"] not in {row[0] for row in db.execute("SELECT id FROM games")}


FULL_LEAGUE_DISK = r"""
import os, sys
from pathlib import Path
sys.path.insert(0, os.environ["ROOT"])
from fastapi.testclient import TestClient
from launch.leaderboard import Board
from launch.web.app import create_app
from launch.web.site import Site
from policies.league.store import LeagueStore
from tests.launch.test_serve import play_out
from tests.security.helpers import Person, bot_league

disk, records = Path(os.environ["DISK"]), Path(os.environ["RECORDS"])
run = bot_league(disk / "run")
client = TestClient(create_app(Site(records, [], league=Board(str(run), None))), client=("10.0.0.1", 5000))
view = play_out(client, Person(client, "ann").start().json(), actions=2)
with open(disk / "filler", "wb", buffering=0) as filler:  # the league's disk fills up before the game ends
    try:
        while True:
            filler.write(b"x" * 4096)
    except OSError:
        pass
done = play_out(client, view)
assert done["over"] and done["rated"].startswith("not rated yet"), done["rated"]
assert str(disk) not in done["rated"] and "Error" not in done["rated"], done["rated"]
(disk / "filler").unlink()
assert client.post("/api/games", json={"variant": "quick", "players": 2, "seat": 0,
                                       "opponents": ["bot:random"]}).status_code == 200
with LeagueStore.open(run / "league.db", create=False, read_only=True) as store:
    games = [row[0] for row in store.db.execute("SELECT game FROM site_games")]
assert games == [done["id"]], games
print("ok")
"""


@pytest.mark.skipif(not can_mount_a_small_disk(), reason="needs user and mount namespaces (unshare) for a small disk")
def test_a_rating_the_full_league_disk_cannot_take_is_kept_and_made_once_there_is_room(tmp_path):
    done = run_on_a_small_disk(tmp_path / "disk", 2, FULL_LEAGUE_DISK, cwd=ROOT, timeout=600,
                               env={"RECORDS": str(tmp_path / "records"), "ROOT": str(ROOT)})
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


# ------------------------------------------------------------------ a record the disk cannot take now
def record_name(records: Path, game_id: str) -> str:
    """The name `Session.save` will give the game's record: its start and id, as games.db keeps them."""
    with sqlite3.connect(records / "games.db") as db:
        started = db.execute("SELECT started FROM games WHERE id = ?", (game_id,)).fetchone()[0]
    return f"{datetime.fromisoformat(started).strftime('%Y%m%dT%H%M%SZ')}-{game_id[:8]}.jsonl"


@pytest.mark.parametrize("restart", [False, True], ids=["while-serving", "after-a-restart"])
def test_a_record_that_cannot_be_written_at_the_final_move_is_kept_whole_and_written_later(tmp_path, restart):
    records = tmp_path / "records"
    client = clients(Site(records, []), "10.0.0.1")["10.0.0.1"]
    view = client.post("/api/games", json=QUICK).json()
    name = record_name(records, view["id"])
    (records / name / "taken").mkdir(parents=True)  # the record's place takes no file: its write fails (OSError)

    done = play_out(client, view)  # every answer 200, the final move's too
    assert done["over"] and done["record"] is None
    assert any("record cannot be written now" in notice for notice in done["notices"]), done["notices"]
    with sqlite3.connect(records / "games.db") as db:  # the whole game, final move included
        events = db.execute("SELECT events FROM games WHERE id = ?", (done["id"],)).fetchone()
    assert events is not None and len(json.loads(events[0])) == done["version"]

    (records / name / "taken").rmdir()
    (records / name).rmdir()
    if restart:
        client = clients(Site(records, []), "10.0.0.1")["10.0.0.1"]
    else:
        assert client.post("/api/games", json=QUICK).status_code == 200  # any new game tries again
    again = client.get(f"/api/games/{done['id']}").json()
    assert again["record"] == name and again["over"] and (records / name).is_file()
    assert (records / "human" / name).is_file()
    assert not any("record cannot be written now" in notice for notice in again["notices"])
    with sqlite3.connect(records / "games.db") as db:
        assert db.execute("SELECT COUNT(*) FROM games WHERE id = ?", (done["id"],)).fetchone()[0] == 0


FULL_RECORDS_DISK = r"""
import os, sqlite3, sys
from pathlib import Path
sys.path.insert(0, os.environ["ROOT"])
from fastapi.testclient import TestClient
from launch.web.app import create_app
from launch.web.site import Site
from tests.launch.test_serve import play_out

records = Path(os.environ["DISK"]) / "records"
client = TestClient(create_app(Site(records, [])), client=("10.0.0.1", 5000))
quick = {"variant": "quick", "players": 2, "seat": 0, "opponents": ["bot:random"]}
view = play_out(client, client.post("/api/games", json=quick).json(), actions=2)
with open(records.parent / "filler", "wb", buffering=0) as filler:  # the records disk fills up
    try:
        while True:
            filler.write(b"x" * 4096)
    except OSError:
        pass
done = play_out(client, view)  # every answer 200, the final move's too
assert done["over"] and done["record"] is None, done
assert any("record cannot be written now" in notice for notice in done["notices"]), done["notices"]
(records.parent / "filler").unlink()
assert client.post("/api/games", json=quick).status_code == 200  # any new game tries again
again = client.get(f"/api/games/{done['id']}").json()
assert again["record"] and (records / again["record"]).is_file() and (records / "human" / again["record"]).is_file()
with sqlite3.connect(records / "games.db") as db:
    assert db.execute("SELECT COUNT(*) FROM games WHERE id = ?", (done["id"],)).fetchone()[0] == 0
print("ok")
"""


@pytest.mark.skipif(not can_mount_a_small_disk(), reason="needs user and mount namespaces (unshare) for a small disk")
def test_a_full_records_disk_at_the_final_move_is_no_500_and_the_record_is_written_once_there_is_room(tmp_path):
    done = run_on_a_small_disk(tmp_path / "disk", 2, FULL_RECORDS_DISK, cwd=ROOT, timeout=600,
                               env={"ROOT": str(ROOT)})
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


# ------------------------------------------------------------------ one server per folder, its lock file or not
def test_a_deleted_serve_lock_lets_no_second_server_serve_the_folder(tmp_path):
    records = tmp_path / "records"
    server, _ = start_server(f"records={records}")
    try:
        (records / "serve.lock").unlink()
        second = run_command("launch/serve.py", f"records={records}", "port=0", timeout=120)
        line = one_error_line(second)
        assert line.startswith(f"error: records={records}: another serve.py is serving this folder"), line
        assert "serving http" not in second.stdout
    finally:
        stop_server(server)
    third, _ = start_server(f"records={records}")  # the lock goes with the server that held it
    stop_server(third)
