"""What the security sweep's tests share: a league with bots as members, a site over it, and a game played to its
end through the API."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from fastapi.testclient import TestClient

from launch.leaderboard import Board
from launch.web.app import create_app
from launch.web.site import Site
from policies.league.store import LeagueStore
from tests.launch.test_serve import play_out

ROOT = Path(__file__).resolve().parents[2]
QUICK = {"variant": "quick", "players": 2, "seat": 0}


def bot_league(run: Path) -> Path:
    """A league database whose members are the seed bots random and hybrid."""
    with LeagueStore.open(run / "league.db") as store:
        store.add_member("random", kind="bot", spec="random")
        store.add_member("hybrid", kind="bot", spec="hybrid")
    return run


def site_client(records: Path, run: Path | None = None, client: str = "10.0.0.1", **limits) -> TestClient:
    """A TestClient of a site over `records` (and the league of `run`), its requests from address `client`."""
    league = Board(str(run), None) if run is not None else None
    options = {}
    if limits:
        from launch.web.site import Limits

        options["limits"] = Limits(**limits)
    return TestClient(create_app(Site(records, [], league=league, **options)), client=(client, 5000))


def player_token(records: Path) -> str:
    """A new player token as the site over `records` issues it (with the key it keeps there), for a test that
    needs a browser's token without starting a game to get one."""
    from types import SimpleNamespace

    from launch.web.games import issue_player
    from launch.web.site import player_key

    return issue_player(SimpleNamespace(player_key=player_key(records)))


def ratings(run: Path) -> dict[str, tuple[float, float]]:
    with LeagueStore.open(run / "league.db", create=False, read_only=True) as store:
        return {m.name: (m.mu, m.sigma) for m in store.members()}


class Person:
    """A browser that plays as `name` against league:random, keeping the name's secret as the page does."""

    def __init__(self, client: TestClient, name: str | None):
        self.client, self.name, self.secret = client, name, None

    def start(self):
        body = {**QUICK, "opponents": ["league:random"]}
        if self.name is not None:
            body["name"] = self.name
        if self.secret is not None:
            body["name_token"] = self.secret
        answer = self.client.post("/api/games", json=body)
        if answer.status_code == 200 and "name_token" in answer.json():
            self.secret = answer.json()["name_token"]
        return answer

    def lose(self) -> dict:
        """A game played to its end, always moving the lowest token (as one losing on purpose): its last view."""
        answer = self.start()
        assert answer.status_code == 200, answer.text
        return play_out(self.client, answer.json(), choose=lambda v: min(o["token"] for o in v["legal"]))


def run_command(*args: str, env: dict | None = None, timeout: int = 300, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                          check=False, **kwargs)


def one_error_line(done: subprocess.CompletedProcess, status: int = 2) -> str:
    """The command's one stderr line (``error: ...``), after checking it exited with `status` and said no more."""
    lines = done.stderr.strip().splitlines()
    assert done.returncode == status, (done.returncode, done.stderr[-3000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr[-3000:]
    return lines[0]
