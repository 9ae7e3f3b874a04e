"""launch/serve.py's API with untrusted input: only ids from the published lists reach anything, error texts never
repeat file contents or much of what was sent, odd or huge input is a 4xx, and a damaged record fails alone."""
from __future__ import annotations

import json
import logging

import pytest
from fastapi.testclient import TestClient

from launch.web.app import create_app
from launch.web.common import MAX_BODY_BYTES, shown
from launch.web.site import Site
from tests.launch.test_serve import play_out

SECRET_KEY, SECRET_VALUE = "api_key", "hunter2-secret-value"
TWO = {"players": 2, "seat": 0, "opponents": ["bot:random"]}


@pytest.fixture
def site(tmp_path):
    records = tmp_path / "records"
    (records / "human").mkdir(parents=True)
    return Site(records, [])


@pytest.fixture
def client(site):
    return TestClient(create_app(site), raise_server_exceptions=False)


def post_json(client, path: str, body) -> object:
    """`body` as JSON text, sent as it is (a lone surrogate stays one)."""
    return client.post(path, content=json.dumps(body).encode(), headers={"Content-Type": "application/json"})


def test_a_variant_is_a_name_from_the_list_never_a_path_that_reaches_the_loader(client, tmp_path):
    secret = tmp_path / "secret.yaml"
    secret.write_text(f"{SECRET_KEY}: {SECRET_VALUE}\nplayers: 2\n")
    depth = "../" * 8
    for variant in (str(secret), f"{depth}{tmp_path.relative_to('/')}/secret", str(tmp_path / "missing.yaml"),
                    f"{depth}{tmp_path.relative_to('/')}/missing", "classic.yaml", "../variant/classic"):
        answer = client.post("/api/games", json={**TWO, "variant": variant})
        assert answer.status_code == 422, (variant, answer.text)
        error = answer.json()["error"]
        assert SECRET_KEY not in error and SECRET_VALUE not in error, error
        # the words depend on the name sent alone: whether such a file exists cannot be told
        assert error == f"variant {shown(variant)} is not offered: choose one of classic, pyludo, quick, ucsd"
    assert client.post("/api/games", json={**TWO, "variant": "quick"}).status_code == 200


@pytest.mark.parametrize("method, path, body, params", [
    ("GET", "/api/games/{long}", None, None),
    ("POST", "/api/games/{long}/roll", None, None),
    ("POST", "/api/games/{long}/step", None, None),
    ("POST", "/api/games/{long}/move", {"token": 0}, None),
    ("POST", "/api/games", {**TWO, "variant": "{long}"}, None),
    ("POST", "/api/games", {**TWO, "opponents": ["{long}"]}, None),
    ("POST", "/api/games", {**TWO, "{long}": 1}, None),
    ("GET", "/api/replay", None, {"file": "{long}"}),
    ("GET", "/{long}", None, None),
])
def test_error_texts_repeat_at_most_a_short_escaped_prefix_of_what_was_sent(client, method, path, body, params):
    long = "x" * 50 + "<script>" + "y" * 5_000  # at the body limit's scale: longer ones are refused before
    fill = lambda v: json.loads(json.dumps(v).replace("{long}", long))  # noqa: E731  (one line, read once)
    answer = client.request(method, path.replace("{long}", long), content=None if body is None else
                            json.dumps(fill(body)).encode(), params=None if params is None else fill(params),
                            headers={"Content-Type": "application/json"})
    assert 400 <= answer.status_code < 500, answer.text
    error = answer.json()["error"]
    assert len(answer.text) < 400 and "<script>" not in error and "y" * 20 not in error, error


@pytest.mark.parametrize("method, path, body", [
    ("POST", "/api/games", {**TWO, "variant": "\ud800"}),
    ("POST", "/api/games", {**TWO, "opponents": ["bot:\ud800"]}),
    ("POST", "/api/games", {**TWO, "\ud800": 1}),
    ("POST", "/api/games/{game}/move", {"token": 0, "\udcff": 1}),
    ("GET", "/api/games/\ud800", None),
    ("GET", "/api/replay?file=%ED%A0%80", None),
    ("GET", "/api/replay?file=\udcff", None),
])
def test_a_lone_surrogate_is_a_4xx_not_a_500(client, method, path, body):
    game = client.post("/api/games", json=TWO).json()["id"]
    path = path.replace("{game}", game)
    if body is None:
        answer = client.request(method, path.encode("utf-8", "surrogatepass").decode("latin-1"))
    else:
        answer = post_json(client, path, body)
    assert 400 <= answer.status_code < 500, answer.text
    assert answer.json()["error"] and answer.text.isascii()


def test_a_huge_body_is_refused_before_it_is_read_and_not_logged(client, caplog):
    caplog.set_level(logging.DEBUG)
    huge = json.dumps({**TWO, "variant": "v" * 10_000_000}).encode()
    answer = client.post("/api/games", content=huge, headers={"Content-Type": "application/json"})
    assert answer.status_code == 413 and answer.json() == {"error": f"the request body is over {MAX_BODY_BYTES} bytes"}

    def chunks():  # no Content-Length: counted as it arrives
        for _ in range(1_000):
            yield b"v" * 10_000

    answer = client.post("/api/games", content=chunks(), headers={"Content-Type": "application/json"})
    assert answer.status_code == 413, answer.text
    assert all(len(r.getMessage()) < 1_000 for r in caplog.records)
    assert client.post("/api/games", json=TWO).status_code == 200  # the server goes on


def test_a_damaged_record_is_named_and_skipped_and_the_others_are_served(client, site):
    view = play_out(client, client.post("/api/games", json={**TWO, "variant": "quick"}).json())
    good = f"records/{view['record']}"
    (site.records / "a-latin1.jsonl").write_bytes(b'{"format": "caf\xe9"}\n')
    (site.records / "b-not-json.jsonl").write_text("{" + "z" * 5_000 + "\n")
    line = json.loads((site.records / view["record"]).read_text().splitlines()[0])
    (site.records / "c-odd-rules.jsonl").write_text(json.dumps({**line, "rules": 5}) + "\n")  # not a RecordError
    answer = client.get("/api/records")
    assert answer.status_code == 200, answer.text
    listing = {r["file"]: r for r in answer.json()["records"]}
    assert listing[good]["decisions"] > 0
    assert "not UTF-8" in listing["records/a-latin1.jsonl"]["error"]
    assert "records/b-not-json.jsonl" in listing["records/b-not-json.jsonl"]["error"]
    assert listing["records/c-odd-rules.jsonl"]["error"].startswith("records/c-odd-rules.jsonl is damaged: ")
    for r in listing.values():
        assert str(site.records) not in json.dumps(r) and "z" * 50 not in json.dumps(r)
    bad = client.get("/api/replay", params={"file": "records/a-latin1.jsonl"})
    assert bad.status_code == 422 and bad.json()["error"].startswith("records/a-latin1.jsonl is damaged: ")
    assert "not UTF-8" in bad.json()["error"]
    assert client.get("/api/replay", params={"file": good}).status_code == 200


def test_an_unreadable_league_offers_no_members_and_the_site_goes_on(tmp_path, caplog):
    from launch.leaderboard import Board
    from policies.league.store import LeagueStore

    run = tmp_path / "run"
    with LeagueStore.open(run / "league.db") as store:
        store.add_member("bot:fast", kind="bot", spec="fast")
    site = Site(tmp_path / "records", [], league=Board(str(run), None))
    client = TestClient(create_app(site), raise_server_exceptions=False)
    assert "league:bot:fast" in {o["id"] for o in client.get("/api/options").json()["opponents"]}
    (run / "league.db").write_bytes(b"not a database" * 100)
    options = client.get("/api/options")
    assert options.status_code == 200 and not [o for o in options.json()["opponents"] if o["kind"] == "league"]
    assert client.post("/api/games", json={**TWO, "opponents": ["bot:random"]}).status_code == 200
    assert client.get("/league").status_code in (200, 503)
