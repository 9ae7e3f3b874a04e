"""Security, third round: addresses that cannot be forged, names that cannot be claimed twice or held for good,
player tokens the server issues, and specs that stay on the server.

Reproduced on the old code: from 127.0.0.1, ``X-Forwarded-For`` made each request another address past the
per-address caps; ``Alice``, ``ALICE`` and ``al  ice`` were claimed beside ``alice`` and ``al ice``; a claim made
by starting a game held the name for good, and claims that never played used up ``new_names``; a browser chose
its own player token (``bobBrowser0001``) and another address read its games; ``league.py remove human:Alice``
while her game went on let that game rate her again; the league page carried each member's spec in a ``title``,
and a 422 echoed a member's spec."""
from __future__ import annotations

import json
import sqlite3
import time
import urllib.error
import urllib.request

from launch.web.site import Limits
from policies.league.store import LeagueStore
from tests.launch.test_serve import play_out, start_server, stop_server
from tests.security.helpers import QUICK, Person, bot_league, one_error_line, run_command, site_client

NEW = {**QUICK, "opponents": ["bot:random"]}


def post(url: str, body: dict, headers: dict[str, str]) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


# ------------------------------------------------------------------ 1. addresses
def test_a_local_script_cannot_name_its_own_address_with_proxy_headers(tmp_path):
    """The served site (uvicorn as serve.py runs it): from 127.0.0.1, a proxy header does not make a request
    another address, so the per-address cap holds. uvicorn believed X-Forwarded-For from 127.0.0.1 by default."""
    server, url = start_server(f"records={tmp_path / 'records'}", "games_per_address=1")
    try:
        status, first = post(f"{url}api/games", NEW, {})
        assert status == 200, first
        for header in ({"X-Forwarded-For": "10.0.0.9"}, {"X-Forwarded-For": "10.0.0.10, 10.0.0.11"},
                       {"Forwarded": "for=10.0.0.12"}, {"X-Real-IP": "10.0.0.13"}):
            status, answer = post(f"{url}api/games", NEW, header)
            assert status == 429 and "this address has 1 unfinished games" in answer["error"], (header, answer)
    finally:
        stop_server(server)


def test_behind_a_trusted_proxy_the_right_most_untrusted_address_counts(tmp_path):
    """With ``trusted_proxies``, a request from the proxy counts as the address the proxy saw (the right-most of
    X-Forwarded-For that is not a proxy), never as one a client wrote further left."""
    records = tmp_path / "records"
    from fastapi.testclient import TestClient

    from launch.web.app import create_app
    from launch.web.site import Site

    proxy = TestClient(create_app(Site(records, [], limits=Limits(games_per_address=1),
                                       trusted_proxies=["127.0.0.1", "10.1.0.0/16"])), client=("127.0.0.1", 5000))
    assert proxy.post("/api/games", json=NEW, headers={"X-Forwarded-For": "203.0.113.5"}).status_code == 200
    # the same person, a forged address to the left of what the proxy saw, and through a second trusted proxy
    for forwarded in ("203.0.113.5", "198.51.100.1, 203.0.113.5", "203.0.113.5, 10.1.2.3"):
        again = proxy.post("/api/games", json=NEW, headers={"X-Forwarded-For": forwarded})
        assert again.status_code == 429 and "this address" in again.json()["error"], forwarded
    assert proxy.post("/api/games", json=NEW, headers={"X-Forwarded-For": "203.0.113.6"}).status_code == 200
    # a peer that is no trusted proxy is its own address, whatever it sends
    direct = TestClient(create_app(Site(records, [], limits=Limits(games_per_address=1),
                                        trusted_proxies=["127.0.0.1"])), client=("192.0.2.7", 5000))
    assert direct.post("/api/games", json=NEW, headers={"X-Forwarded-For": "203.0.113.8"}).status_code == 200
    assert direct.post("/api/games", json=NEW, headers={"X-Forwarded-For": "203.0.113.9"}).status_code == 429


def test_trusted_proxies_must_be_addresses_or_networks(tmp_path):
    done = run_command("launch/serve.py", "trusted_proxies=[proxy.example]", f"records={tmp_path / 'records'}")
    line = one_error_line(done)
    assert "trusted_proxies=[proxy.example] is not allowed" in line and "10.0.0.0/8" in line


# ------------------------------------------------------------------ 2. names
def test_names_that_differ_only_in_case_or_runs_of_spaces_are_one_person(tmp_path):
    run = bot_league(tmp_path / "run")
    records = tmp_path / "records"
    alice = Person(site_client(records, run, client="10.0.0.1"), "alice")
    assert alice.lose()["rated"].startswith("rated in the league as human:alice")
    other = site_client(records, run, client="10.0.0.2")
    for name in ("Alice", "ALICE", "aLiCe"):
        answer = Person(other, name).start()
        assert answer.status_code == 403 and "taken" in answer.json()["error"], name
    spaced = Person(site_client(records, run, client="10.0.0.3"), "al ice")
    assert spaced.start().status_code == 200
    answer = Person(other, "AL  ICE").start()
    assert answer.status_code == 403 and "taken" in answer.json()["error"]
    # alice herself, typing her name another way, plays as the one person she is
    alice.name = "ALICE"
    assert alice.lose()["rated"].startswith("rated in the league as human:alice")
    with LeagueStore.open(run / "league.db", create=False, read_only=True) as store:
        assert [m.name for m in store.members(kinds=["human"])] == ["human:alice"]


def test_older_names_are_folded_when_the_league_is_migrated(tmp_path):
    """A schema 3 league's people, written before names were folded, are found under their folded names."""
    run = bot_league(tmp_path / "run")
    with LeagueStore.open(run / "league.db") as store:
        store.add_member("human:Bob  B", kind="human", spec="human")
        store.add_claim("human:Bob  B", "0" * 64, None)
        store.add_member("human:Carol", kind="human", spec="human")
        store.add_member("human:carol", kind="human", spec="human")  # two people before folding: both stay
        store.set_meta("schema_version", "3")
    with LeagueStore.open(run / "league.db", create=False) as store:
        names = {m.name for m in store.members(kinds=["human"])}
        assert names == {"human:bob b", "human:Carol", "human:carol"}
        assert store.claim("human:bob b") is not None and store.get_meta("schema_version") == "4"


def test_a_claim_that_never_played_is_released_and_does_not_use_up_new_names(tmp_path):
    run = bot_league(tmp_path / "run")
    records = tmp_path / "records"
    limits = {"new_names": 2, "games_total": 50}
    # three names claimed by starting games, none played: the hour's two new names are not used up by them
    for k in range(3):
        answer = Person(site_client(records, run, client=f"10.0.1.{k}", **limits), f"squatter {k}").start()
        assert answer.status_code == 200, answer.text
    newcomer = Person(site_client(records, run, client="10.0.2.1", **limits), "newcomer")
    assert newcomer.lose()["rated"].startswith("rated in the league")

    # a name whose only game ended unrated is free again
    unrated = site_client(records, run, client="10.0.3.1", rated_per_address=0)
    done = Person(unrated, "dora").lose()
    assert done["rated"].startswith("not rated"), done["rated"]
    assert Person(site_client(records, run, client="10.0.3.2"), "dora").start().status_code == 200

    # a name whose game was given up (expired for room) is free again
    leaver = site_client(records, run, client="10.0.4.1", games_per_address=1, idle_minutes=0)
    assert Person(leaver, "eve").start().status_code == 200
    assert leaver.post("/api/games", json=NEW).status_code == 200  # eve's idle game makes room
    assert Person(site_client(records, run, client="10.0.4.2"), "eve").start().status_code == 200

    # a claim held a day without a rated game goes
    with sqlite3.connect(run / "league.db") as db:
        db.execute("UPDATE people SET claimed_at = ? WHERE name = 'human:squatter 0'", (time.time() - 25 * 3600,))
    assert Person(site_client(records, run, client="10.0.5.1"), "squatter 0").start().status_code == 200

    # and league.py remove releases a name that never played
    done = run_command("launch/league.py", "remove", "human:Squatter 1", f"league={run / 'league.db'}")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "released: human:squatter 1" in done.stdout
    assert Person(site_client(records, run, client="10.0.5.2"), "squatter 1").start().status_code == 200


def test_one_address_holds_only_a_few_claims_that_never_played(tmp_path):
    run = bot_league(tmp_path / "run")
    site = site_client(tmp_path / "records", run, client="10.0.6.1")
    for k in range(6):
        assert Person(site, f"hoard {k}").start().status_code == 200
    with LeagueStore.open(run / "league.db", create=False, read_only=True) as store:
        assert len(store.unplayed_claims(store.claim("human:hoard 5")["address"])) == 3


# ------------------------------------------------------------------ 2. player tokens
def test_player_tokens_are_issued_by_the_server_and_a_made_up_one_is_refused(tmp_path):
    records = tmp_path / "records"
    bob = site_client(records, client="10.0.0.1")
    chosen = bob.post("/api/games", json={**NEW, "player": "bobBrowser0001"})
    assert chosen.status_code == 403 and "not issued by this server" in chosen.json()["error"]
    first = bob.post("/api/games", json=NEW).json()
    token = first["player_token"]
    assert len(token) >= 54 and token != "bobBrowser0001"
    second = bob.post("/api/games", json={**NEW, "player": token}).json()
    assert "player_token" not in second
    listed = bob.get("/api/saved", params={"player": token}).json()["games"]
    assert {g["id"] for g in listed} == {first["id"], second["id"]}

    thief = site_client(records, client="10.0.0.66")
    for guess in ("bobBrowser0001", token[:-1] + ("A" if token[-1] != "A" else "B"), token[:22] + "0" * 32):
        answer = thief.get("/api/saved", params={"player": guess})
        assert answer.status_code == 403, guess
    again = site_client(records, client="10.0.0.1")  # a restarted server knows the tokens it issued
    assert {g["id"] for g in again.get("/api/saved", params={"player": token}).json()["games"]} == \
        {first["id"], second["id"]}


# ------------------------------------------------------------------ 2. removal while a game goes on
def test_a_person_removed_mid_game_is_not_rated_by_that_game(tmp_path):
    run = bot_league(tmp_path / "run")
    records = tmp_path / "records"
    alice = Person(site_client(records, run, client="10.0.0.1"), "alice")
    assert alice.lose()["rated"].startswith("rated in the league as human:alice")
    started = alice.start()
    assert started.status_code == 200
    view = play_out(alice.client, started.json(), actions=6)
    assert not view["over"]

    done = run_command("launch/league.py", "remove", "human:alice", f"league={run / 'league.db'}")
    assert done.returncode == 0 and "removed: human:alice" in done.stdout, done.stderr[-2000:]
    # the name is free again, and someone else claims it before her game ends
    assert Person(site_client(records, run, client="10.0.0.2"), "alice").start().status_code == 200

    end = play_out(alice.client, view, choose=lambda v: min(o["token"] for o in v["legal"]))
    assert end["rated"].startswith("not rated: the name alice is no longer claimed"), end["rated"]
    with LeagueStore.open(run / "league.db", create=False, read_only=True) as store:
        assert store.member("human:alice") is None and store.site_game(view["id"]) is None


# ------------------------------------------------------------------ 5. specs stay on the server
def test_the_league_page_and_its_errors_name_members_not_specs(tmp_path):
    run = bot_league(tmp_path / "run")
    broken = run / "hidden-folder-7f3a"
    broken.mkdir()
    (broken / "policy.json").write_text('{"not": "a policy"}')  # offered (it looks like a policy), fails to load
    with LeagueStore.open(run / "league.db") as store:
        store.add_member("broken", kind="external", spec=f"ckpt:{broken}")
    site = site_client(tmp_path / "records", run)
    page = site.get("/league").text
    assert "broken" in page and "hidden-folder-7f3a" not in page and "ckpt:" not in page
    assert "league:broken" in {o["id"] for o in site.get("/api/options").json()["opponents"]}
    answer = site.post("/api/games", json={**QUICK, "opponents": ["league:broken"]})
    assert answer.status_code == 422 and "broken" in answer.json()["error"]
    assert "hidden-folder-7f3a" not in answer.text and "ckpt:" not in answer.text
