"""launch/serve.py without a browser: the API through FastAPI's TestClient, and the command's start-up and restart."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from launch.cli import UserError
from launch.serve import HOST, bind, parse
from launch.web.app import create_app
from launch.web.site import Site
from ludo_env.engine import Game
from policies.records import load_decisions, read_records

ROOT = Path(__file__).resolve().parents[2]
BOTS = ["bot:hybrid", "bot:random", "bot:fast"]


@pytest.fixture
def client(tmp_path):
    return TestClient(create_app(Site(tmp_path / "records", [])))


def play_out(client, view, choose=lambda v: v["legal"][0]["token"], actions: int | None = None) -> dict:
    """Play a game through the API to its end, or for `actions` rolls, moves and opponent turns: the person's
    moves from `choose`."""
    taken = 0
    while not view["over"] and (actions is None or taken < actions):
        taken += 1
        game = view["id"]
        if view["turn"] == "opponent":
            answer = client.post(f"/api/games/{game}/step")
        elif view["turn"] == "roll":
            answer = client.post(f"/api/games/{game}/roll")
        else:
            answer = client.post(f"/api/games/{game}/move", json={"token": choose(view)})
        assert answer.status_code == 200, answer.text
        view = answer.json()
    return view


def test_a_finished_game_is_recorded_move_for_move_and_replays_as_the_engine_plays_it(client, tmp_path):
    view = client.post("/api/games", json={"variant": "quick", "players": 4, "seat": 2, "opponents": BOTS}).json()
    assert view["turn"] == "opponent" and view["you"] == 2
    rng = np.random.default_rng(0)
    view = play_out(client, view, lambda v: int(rng.choice([o["token"] for o in v["legal"]])))
    assert view["record"] and view["order"].count(".") == 4

    moves = [(e["seat"], e["die"], e["token"]) for e in view["log"] if e["token"] is not None]
    lines = read_records(tmp_path / "records" / view["record"])
    assert [(r["seat"], r["die"], r["chosen"]) for r in lines] == moves
    assert {r["player"] for r in lines if r["seat"] == 2} == {"human"}
    # The dice are the server's: a bot that never got a decision (a quick game can end first) has no line.
    bots = {r["player"] for r in lines if r["seat"] != 2}
    assert bots and bots <= {"hybrid", "random", "fast"}
    human = read_records(tmp_path / "records" / "human" / view["record"])
    assert human == [r for r in lines if r["player"] == "human"]
    decisions = load_decisions([tmp_path / "records" / view["record"]])  # what +exp=imitate reads
    assert decisions.rules.name == "quick" and len(decisions) == len(moves)
    assert not list((tmp_path / "records").glob(".*.tmp"))

    listing = client.get("/api/records").json()["records"]
    assert [(r["file"], r["game"], r["decisions"]) for r in listing] == [(f"records/{view['record']}", 0, len(moves))]
    by_seat = {r["seat"]: r["player"] for r in lines}  # listed by seat, not alphabetically
    assert listing[0]["players"] == [by_seat[seat] for seat in sorted(by_seat)]
    replay = client.get("/api/replay", params={"file": f"records/{view['record']}", "game": 0}).json()
    assert len(replay["steps"]) == len(lines)
    for step, line in zip(replay["steps"], lines):
        game = Game.from_state(decisions.rules, np.array(line["state"], dtype=np.int16))
        assert [[t["progress"] for t in row] for row in step["tokens"]] == game.tokens.tolist()
        assert (step["seat"], step["die"], step["chosen"]) == (line["seat"], line["die"], line["chosen"])
    last = Game.from_state(decisions.rules, np.array(lines[-1]["state"], dtype=np.int16))
    last.move(lines[-1]["chosen"])
    assert [[t["progress"] for t in row] for row in replay["final"]] == last.tokens.tolist() and last.over


def test_refusals_are_4xx_with_one_line_of_json_and_the_game_goes_on(client):
    view = client.post("/api/games", json={"variant": "classic", "players": 2, "seat": 1,
                                           "opponents": ["bot:random"]}).json()
    game = view["id"]
    cases = [  # (method, path, body, status, words in the message)
        ("post", f"/api/games/{game}/move", {"token": 0}, 409, "not your turn"),
        ("post", f"/api/games/{game}/roll", None, 409, "not your turn"),
        ("post", "/api/games/nope/roll", None, 404, "no game 'nope'"),
        ("post", "/api/games", {"opponents": ["py:os:system"]}, 422, "needs 3 opponents"),
        ("post", "/api/games", {"players": 2, "opponents": ["py:os:system"]}, 422, "unknown opponent 'py:os:system'"),
        ("post", "/api/games", {"players": 2, "opponents": ["ckpt:/etc"]}, 422, "unknown opponent"),
        ("post", "/api/games", {"variant": "nope", "opponents": BOTS}, 422, "nope"),
        ("post", "/api/games", {"players": 2, "seat": 5, "opponents": BOTS[:1]}, 422, "seat 5"),
        ("post", "/api/games", {"opponents": BOTS, "extra": 1}, 422, "malformed request: extra"),
        ("post", "/api/games", {"players": "four", "opponents": BOTS}, 422, "malformed request: players"),
        ("post", f"/api/games/{game}/move", {"token": "1"}, 422, "malformed request: token"),
        ("get", "/api/replay", None, 422, "malformed request: query.file"),
        ("get", "/api/replay?file=../../etc/passwd", None, 404, "no record file"),
        ("get", "/nowhere", None, 404, "no such page: '/nowhere'"),
        ("delete", "/api/options", None, 405, "DELETE is not allowed"),
        ("get", "/league", None, 404, "without league="),
    ]
    for method, path, body, status, words in cases:
        answer = client.request(method.upper(), path, json=body)
        assert answer.status_code == status, (path, answer.text)
        assert answer.headers["content-type"] == "application/json"
        assert "\n" not in answer.text and words in answer.json()["error"], (path, answer.text)
    malformed = client.post("/api/games", content=b"{not json", headers={"Content-Type": "application/json"})
    assert malformed.status_code == 422 and "malformed request" in malformed.json()["error"]

    # the game goes on: the opponent plays, then it is the person's roll
    while view["turn"] == "opponent":
        view = client.post(f"/api/games/{game}/step").json()
    assert view["turn"] == "roll"
    assert "roll the die first" in client.post(f"/api/games/{game}/move", json={"token": 0}).json()["error"]
    while view["turn"] != "move":  # roll until there is a move, letting the opponent play between
        view = client.post(f"/api/games/{game}/{'roll' if view['turn'] == 'roll' else 'step'}").json()
    legal = [o["token"] for o in view["legal"]]
    illegal = next((t for t in range(4) if t not in legal), None)
    if illegal is not None:
        answer = client.post(f"/api/games/{game}/move", json={"token": illegal})
        assert answer.status_code == 409 and f"token {illegal} cannot move" in answer.json()["error"]
    answer = client.post(f"/api/games/{game}/move", json={"token": legal[0], "seat": 0})
    assert answer.status_code == 409 and "that is red's token: you play yellow" in answer.json()["error"]
    assert client.post(f"/api/games/{game}/move", json={"token": legal[0], "seat": 1}).status_code == 200


def test_two_games_at_once_do_not_touch_each_other(client):
    body = {"variant": "quick", "players": 2, "seat": 0, "opponents": ["bot:random"]}
    first, second = client.post("/api/games", json=body).json(), client.post("/api/games", json=body).json()
    assert first["id"] != second["id"]
    untouched = client.get(f"/api/games/{second['id']}").json()
    client.post(f"/api/games/{first['id']}/roll")
    rolled = client.get(f"/api/games/{first['id']}").json()
    # The roll shows in the first game: logged when it had no move, or a move awaited (a six enters in quick).
    assert len(rolled["log"]) >= 1 or (rolled["turn"] == "move" and rolled["legal"])
    assert client.get(f"/api/games/{second['id']}").json() == untouched


def test_options_offer_ids_and_never_specs(tmp_path, tiny_policy):
    spec = f"ckpt:{tiny_policy}"
    site = Site(tmp_path, [spec])
    options = TestClient(create_app(site)).get("/api/options").json()
    assert {"bot:random", "bot:hybrid", "agent:0"} <= {o["id"] for o in options["opponents"]}
    assert str(tiny_policy) not in json.dumps(options)
    assert {v["name"] for v in options["variants"]} == {"classic", "pyludo", "quick", "ucsd"}


def test_a_learned_agent_plays_and_its_replay_shows_its_move_probabilities(tmp_path, tiny_policy):
    site = Site(tmp_path, [f"ckpt:{tiny_policy}"])
    site.load_agents()
    client = TestClient(create_app(site))
    view = client.post("/api/games", json={"variant": "classic", "players": 4, "seat": 0,
                                           "opponents": ["agent:0", "bot:random", "bot:random"]}).json()
    view = play_out(client, view)
    assert any(e["seat"] == 1 and e["token"] is not None for e in view["log"])
    replay = client.get("/api/replay", params={"file": f"records/{view['record']}", "game": 0}).json()
    agent_steps = [s for s in replay["steps"] if s["seat"] == 1]
    assert agent_steps and all(s["insight"]["kind"] == "probabilities" for s in agent_steps)
    for step in agent_steps:
        probs = step["insight"]["tokens"]
        legal = {o["token"] for o in step["legal"]}
        assert {t for t, p in enumerate(probs) if p is not None} == legal
        assert sum(p for p in probs if p is not None) == pytest.approx(1, abs=1e-5)
        assert step["chosen"] == max(legal, key=lambda t: probs[t])  # greedy play: its most probable move
    assert all(s["insight"] is None for s in replay["steps"] if s["seat"] != 1)


def test_a_rollout_agent_over_a_policy_plays_a_site_game_under_a_short_label(tmp_path, tiny_policy):
    spec = f"rollout:ckpt:{tiny_policy}?n=2&z=0"
    site = Site(tmp_path, [spec])
    site.load_agents()
    client = TestClient(create_app(site))
    [agent] = [o for o in client.get("/api/options").json()["opponents"] if o["id"] == "agent:0"]
    assert agent["label"] == "rollout:ckpt:policy?n=2&z=0" and str(tiny_policy) not in agent["label"]
    view = client.post("/api/games", json={"variant": "classic", "players": 4, "seat": 0,
                                           "opponents": ["agent:0", "bot:random", "bot:random"]}).json()
    view = play_out(client, view)
    assert view["over"] and view["record"] and not view["notices"]  # never replaced: every answer was legal
    assert any(e["seat"] == 1 and e["token"] is not None for e in view["log"])
    assert view["seats"][1]["player"] == agent["label"]


def test_an_evaluate_record_of_a_search_agent_replays_with_its_move_values(tmp_path, tiny_policy):
    from policies.tournament import play_tournament

    spec = f"search:{tiny_policy}?depth=2"
    record = tmp_path / "evaluate.jsonl"  # what launch/evaluate.py record= writes: one entry's decisions
    play_tournament([spec, "random", "random", "random"], games=1, rules="classic", seed=1, rate=False,
                    record=record, record_entry=0)
    site = Site(tmp_path / "records", [spec], replays=[record])
    site.load_agents()
    client = TestClient(create_app(site))
    [listed] = client.get("/api/records").json()["records"]
    assert listed["file"] == "file0/evaluate.jsonl" and listed["players"] == ["search:policy?depth=2"]
    replay = client.get("/api/replay", params={"file": listed["file"], "game": 0}).json()
    lines = read_records(record)
    assert len(replay["steps"]) == len(lines)
    for step, line in zip(replay["steps"], lines):
        values = step["insight"]["tokens"]
        assert step["insight"]["kind"] == "values"
        assert [v is not None for v in values] == [bool(x) for x in line["legal"]]
        assert line["chosen"] == max((t for t in range(4) if line["legal"][t]), key=lambda t: values[t])


@pytest.fixture(scope="module")
def tiny_policy(tmp_path_factory):
    from tests.league.tiny_policy import write_tiny_policy

    return write_tiny_policy(tmp_path_factory.mktemp("agent") / "policy")


# ------------------------------------------------------------------ the command
def test_arguments():
    args = parse(["agents=[ckpt:a,search:b?depth=2&opponent=maxn]", "port=0", "replays=[x.jsonl]"])
    assert args["agents"] == ["ckpt:a", "search:b?depth=2&opponent=maxn"] and args["host"] == HOST == "127.0.0.1"
    assert args["move_seconds"] == 10
    assert parse(["move_seconds=2.5"])["move_seconds"] == 2.5
    assert parse(["move_seconds=0"])["move_seconds"] is None and parse(["move_seconds=none"])["move_seconds"] is None
    for bad, words in ((["colour=red"], "not allowed"), (["port=80000"], "0..65535"), (["port=x"], "integer"),
                       (["agents=[a,"], "[a,b]"), (["league="], "needs a value"),
                       (["move_seconds=-1"], "move_seconds=-1 is not allowed: give a number of seconds above 0"),
                       (["move_seconds=nan"], "not allowed"), (["move_seconds=soon"], "not allowed")):
        with pytest.raises(UserError, match=words.replace("[", r"\[").replace(".", r"\.")):
            parse(bad)


def test_the_server_binds_this_machine_only_unless_told():
    sock = bind(HOST, 0)
    try:
        assert sock.getsockname()[0] == "127.0.0.1"
        with pytest.raises(UserError, match=r"port=\d+: cannot serve on 127\.0\.0\.1"):
            bind(HOST, sock.getsockname()[1])
    finally:
        sock.close()


def start_server(*args: str) -> tuple[subprocess.Popen, str]:
    server = subprocess.Popen([sys.executable, "launch/serve.py", "port=0", *args], cwd=ROOT, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = server.stdout.readline()
    if not line.startswith("serving http://"):
        server.kill()
        raise AssertionError(f"no address: {line!r} {server.stderr.read()}")
    return server, line.split()[1]


def stop_server(server: subprocess.Popen) -> None:
    server.send_signal(signal.SIGINT)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def call(url: str, method: str = "GET", body: dict | None = None) -> tuple[int, dict]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_records_survive_a_restart_and_bad_requests_get_json(tmp_path):
    records = tmp_path / "records"
    server, url = start_server(f"records={records}")
    try:
        assert url.startswith("http://127.0.0.1:")
        status, view = call(url + "api/games", "POST", {"variant": "quick", "players": 2, "seat": 0,
                                                        "opponents": ["bot:random"]})
        assert status == 200
        while not view["over"]:
            action = {"opponent": "step", "roll": "roll", "move": "move"}[view["turn"]]
            body = {"token": view["legal"][0]["token"]} if action == "move" else None
            status, view = call(f"{url}api/games/{view['id']}/{action}", "POST", body)
            assert status == 200, view
        status, error = call(url + "api/games", "POST", {"opponents": "nope"})
        assert status == 422 and "malformed request" in error["error"]
    finally:
        stop_server(server)
    saved = records / view["record"]
    lines = saved.read_text()
    server, url = start_server(f"records={records}")
    try:
        status, listing = call(url + "api/records")
        assert status == 200 and [r["file"] for r in listing["records"]] == [f"records/{view['record']}"]
        status, replay = call(f"{url}api/replay?file=records/{view['record']}&game=0")
        assert status == 200 and len(replay["steps"]) == len(lines.splitlines())
    finally:
        stop_server(server)
    assert saved.read_text() == lines


@pytest.mark.parametrize("args, words", [
    (["agents=[nobody]"], "unknown player 'nobody'"),
    (["agents=[hybrid]"], "seed bots are offered already"),
    (["league=."], "no league database"),
    (["replays=[missing.jsonl]"], "no such record file"),
    (["port=-1"], "port=-1 is not allowed"),
])
def test_bad_input_is_one_line_and_exit_2(args, words):
    run = subprocess.run([sys.executable, "launch/serve.py", *args], check=False, cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and words in run.stderr, run.stderr


def test_a_port_in_use_is_one_line_and_exit_2():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        run = subprocess.run([sys.executable, "launch/serve.py", f"port={port}"], check=False, cwd=ROOT,
                             capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert run.returncode == 2 and run.stderr.strip() == (f"error: port={port}: cannot serve on 127.0.0.1 "
                                                         "(Address already in use)")


def test_the_league_is_followed_as_it_grows(tmp_path):
    from launch.leaderboard import Board
    from policies.league.store import LeagueStore

    run = tmp_path / "run"
    with LeagueStore.open(run / "league.db") as store:
        store.add_member("bot:fast", kind="bot", spec="fast")
    client = TestClient(create_app(Site(tmp_path / "records", [], league=Board(str(run), None))))
    ids = {o["id"] for o in client.get("/api/options").json()["opponents"]}
    assert "league:bot:fast" in ids and "league:main-7" not in ids
    assert "bot:fast" in client.get("/league").text

    with LeagueStore.open(run / "league.db") as store:  # training adds a member while the server runs
        store.add_member("main-7", kind="snapshot", spec="hybrid", iteration=7)
    options = client.get("/api/options").json()
    assert {"id": "league:main-7", "label": "main-7 (snapshot)", "kind": "league"} in options["opponents"]
    assert "main-7" in client.get("/league").text
    view = client.post("/api/games", json={"players": 2, "opponents": ["league:main-7"]}).json()
    assert view["seats"][1]["player"] == "main-7 (snapshot)"
    view = play_out(client, view)
    assert {r["player"] for r in read_records(tmp_path / "records" / view["record"]) if r["seat"] == 1} == {"hybrid"}
