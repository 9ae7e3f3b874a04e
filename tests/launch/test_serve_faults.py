"""launch/serve.py when an agent fails: it raises, answers a token that cannot move, or never answers; and Ctrl-C.

The agents are `py:` bots defined below (`py:tests.launch.test_serve_faults:<Class>`), so that the server's
subprocess imports them as it would a user's module.
"""
from __future__ import annotations

import os
import signal
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from launch.web.app import create_app
from launch.web.site import Site
from policies.records import read_records
from tests.launch.test_serve import call, play_out, start_server

HERE = "py:tests.launch.test_serve_faults"
RELEASE = threading.Event()  # set when a test ends: the abandoned calls of a hanging bot return then
HANGING = threading.Event()  # set by a hanging bot as it starts to hang


def first_legal(mask: np.ndarray) -> np.ndarray:
    return mask.argmax(axis=1)


class Boom:
    def choose(self, view, die, mask):
        return first_legal(mask) + len(die) // 0


class Illegal:
    def choose(self, view, die, mask):
        return np.full(len(die), 7)


class HangsAfterFirst:
    """Plays its first move, then hangs as a bot stuck in a loop would (until the test releases it)."""

    def __init__(self):
        self.calls = 0

    def choose(self, view, die, mask):
        self.calls += 1
        if self.calls > 1:
            HANGING.set()
            RELEASE.wait(600)
        return first_legal(mask)


class Sleeps:
    """Never answers in a server's lifetime; tells the test (a file named by SLEEPS_MARK) that it started."""

    def choose(self, view, die, mask):
        Path(os.environ["SLEEPS_MARK"]).write_text("asked")
        time.sleep(3600)
        return first_legal(mask)


@pytest.fixture(autouse=True)
def release_hanging_bots():
    RELEASE.clear()
    HANGING.clear()
    yield
    RELEASE.set()


def play_in_thread(client: TestClient, view: dict) -> tuple[threading.Thread, dict]:
    """Play `view`'s game out in a thread; the result (the last view or the error) lands in the dict."""
    out: dict = {}

    def run():
        try:
            out["view"] = play_out(client, view)
        except BaseException as err:  # noqa: BLE001 - handed to the test's assertion
            out["error"] = err

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def play_until_seat_moves(client: TestClient, view: dict, seat: int) -> None:
    """Roll, move the first legal token and step until `seat` has moved a token (a roll with no move asks nobody)."""
    while not any(e["seat"] == seat and e["token"] is not None for e in view["log"]) and not view["over"]:
        action = {"opponent": "step", "roll": "roll", "move": "move"}[view["turn"]]
        body = {"token": view["legal"][0]["token"]} if action == "move" else None
        view = client.post(f"/api/games/{view['id']}/{action}", json=body).json()


@pytest.mark.parametrize("bot, words", [
    ("Boom", "failed: Boom.choose raised ZeroDivisionError: integer division or modulo by zero; "),
    ("Illegal", "failed: Illegal.choose chose token 7 in game 0 of the batch, which is not legal there"),
    ("HangsAfterFirst", "failed: yellow (py:tests.launch.test_serve_faults:HangsAfterFirst) took longer than 1 s"),
])
def test_an_agent_that_fails_loses_its_seat_to_random_and_the_game_goes_on(tmp_path, bot, words):
    spec = f"{HERE}:{bot}"
    site = Site(tmp_path, [spec], move_seconds=1)
    site.load_agents()
    client = TestClient(create_app(site))
    view = client.post("/api/games", json={"variant": "quick", "players": 2, "seat": 0,
                                           "opponents": ["agent:0"]}).json()
    thread, out = play_in_thread(client, view)
    thread.join(300)  # the old server hung for good on the hanging bot
    assert not thread.is_alive() and "error" not in out, out
    view = out["view"]
    assert view["over"] and view["record"]
    [notice] = view["notices"]
    assert notice.startswith(f"yellow ({spec}) failed: ") and words in notice, notice
    assert notice.endswith("; random plays its seat from now on")
    assert view["seats"][1]["player"] == f"random, for {spec}"
    players = [r["player"] for r in read_records(tmp_path / view["record"]) if r["seat"] == 1]
    assert players[-1] == "random" and set(players) <= {spec, "random"}
    # its replay is served too, though the hanging bot's abandoned call still holds the agent
    replay = client.get("/api/replay", params={"file": f"records/{view['record']}"})
    assert replay.status_code == 200 and len(replay.json()["steps"]) == len(read_records(tmp_path / view["record"]))
    # another game against the same agent starts and is played too: the failure was that game's alone
    again = client.post("/api/games", json={"variant": "quick", "players": 2, "seat": 1, "opponents": ["agent:0"]})
    assert again.status_code == 200
    client.post(f"/api/games/{again.json()['id']}/step").raise_for_status()


# Not `serial`: a server that waits on the hanging agent takes its 20 s of move time before the other game's first
# move, one that does not takes a fraction of a second, so a busy machine does not blur the difference.
def test_a_hanging_agent_holds_up_neither_other_games_nor_its_own_other_games_for_good(tmp_path):
    site = Site(tmp_path, [f"{HERE}:HangsAfterFirst"], move_seconds=20)
    site.load_agents()
    app = create_app(site)
    new = {"variant": "quick", "players": 2, "seat": 0}
    client = TestClient(app)
    stuck = client.post("/api/games", json={**new, "opponents": ["agent:0"]}).json()
    stuck_thread, _ = play_in_thread(TestClient(app), stuck)
    assert HANGING.wait(120), "the agent never reached its second move"

    # a game against a seed bot plays while the agent hangs (the old global lock held it up): its bot's first
    # move is a few quick requests away, then the whole game
    other = client.post("/api/games", json={**new, "seat": 1, "opponents": ["bot:random"]}).json()
    first = threading.Thread(target=play_until_seat_moves, args=(TestClient(app), other, 0), daemon=True)
    first.start()
    first.join(20)
    assert not first.is_alive(), "a game against a seed bot waited on another game's agent"
    other_thread, other_out = play_in_thread(TestClient(app), client.get(f"/api/games/{other['id']}").json())
    other_thread.join(300)
    assert not other_thread.is_alive() and other_out["view"]["over"], other_out

    # a second game against the hanging agent waits for it at most one move's time, then random plays for it
    same = client.post("/api/games", json={**new, "opponents": ["agent:0"]}).json()
    same_thread, same_out = play_in_thread(TestClient(app), same)
    same_thread.join(300)
    assert not same_thread.is_alive() and same_out["view"]["over"], same_out
    assert "is still busy with a move that took longer than 20 s" in same_out["view"]["notices"][0]
    stuck_thread.join(300)
    assert not stuck_thread.is_alive()


def test_ctrl_c_stops_the_server_while_an_agent_is_in_a_move(tmp_path, monkeypatch):
    mark = tmp_path / "asked"
    monkeypatch.setenv("SLEEPS_MARK", str(mark))
    # the agent's first move: it may take two minutes (it may compile), so it is still in flight at Ctrl-C
    server, url = start_server(f"records={tmp_path / 'records'}", f"agents=[{HERE}:Sleeps]")
    try:
        status, view = call(url + "api/games", "POST", {"variant": "quick", "players": 2, "seat": 1,
                                                        "opponents": ["agent:0"]})
        assert status == 200 and view["turn"] == "opponent"

        def play():  # until the agent has a move to make (a roll without one does not ask it), where it sleeps
            game = view
            try:
                while True:
                    action = {"opponent": "step", "roll": "roll", "move": "move"}[game["turn"]]
                    body = {"token": game["legal"][0]["token"]} if action == "move" else None
                    game = call(f"{url}api/games/{game['id']}/{action}", "POST", body)[1]
            except (urllib.error.URLError, ConnectionError, OSError, ValueError):
                pass  # the server stopped under it, as it should

        threading.Thread(target=play, daemon=True).start()
        deadline = time.monotonic() + 120
        while not mark.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert mark.exists(), "the agent was never asked"
        server.send_signal(signal.SIGINT)
        try:
            out, err = server.communicate(timeout=15)
        except Exception:
            server.kill()
            server.communicate()
            raise
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert server.returncode in (130, 0), (server.returncode, err)
    assert out == "stopped\n", (out, err)
