"""launch/serve.py with league=<run>: every league member the opponent list offers plays, learned ones included.

The league here is stored as training stores it (`policies.league.league.League`): ``main``, its snapshot
``main@1`` whose weights are in ``<run>/league/main@1`` under a path relative to the run folder, an external
agent from another run, and the seed bots; main's own policy is the run's newest checkpoint. The server runs
from the repository root, not the run folder, so a path read from the server's own folder would not be found.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from launch.leaderboard import Board
from launch.web.app import create_app
from launch.web.site import Site
from policies.league.league import League, LeagueSettings
from policies.league.store import LeagueStore
from policies.records import read_records
from tests.launch.test_serve import play_out
from tests.league.tiny_policy import write_tiny_policy

PLAYERS, VARIANT = 2, "quick"


def learned_run(run: Path, checkpoint: bool = True, rated: bool = False) -> Path:
    """A run folder as training leaves it: league.db with main, snapshot main@1 (relative path), an external
    member, two bots; with `checkpoint`, main's policy in checkpoints/iter_000003/policy; with `rated` (and
    `checkpoint`), a rating round played by them all, for the league page's head-to-head."""
    tiny = {"players": PLAYERS, "variant": VARIANT}
    other = write_tiny_policy(run.parent / f"{run.name}-other" / "checkpoints" / "iter_000005" / "policy", seed=3, **tiny)
    main = run / "checkpoints" / "iter_000003" / "policy"
    if checkpoint:
        write_tiny_policy(main, seed=2, **tiny)
    with LeagueStore.open(run / "league.db") as store:
        league = League(store, LeagueSettings(players=PLAYERS, bots=("random", "hybrid"), lineups=10), VARIANT)
        league.add_snapshot(1, 100, lambda folder: write_tiny_policy(folder, seed=1, **tiny))
        league.add_external(str(other))
        if rated and checkpoint:
            from ludo_env.rules import Rules
            from policies.saved import load_player

            league.rating_round(Rules.load(VARIANT, players=PLAYERS), seed=0, iteration=3,
                                main_player=load_player(main, "main"), games_per_lineup=4)
    return run


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return learned_run(tmp_path_factory.mktemp("league") / "run")


def league_client(run: Path, records: Path) -> TestClient:
    return TestClient(create_app(Site(records, [], league=Board(str(run), None))))


def test_the_snapshot_is_stored_relative_to_the_run_folder(run):
    with LeagueStore.open(run / "league.db", create=False, read_only=True) as store:
        snapshot = store.member("main@1")
    assert snapshot.kind == "snapshot" and snapshot.spec == "ckpt:league/main@1"
    assert not Path("league/main@1").exists() and Path.cwd() != run  # only the run folder resolves it


GAMES_TO_GET_A_DECISION = 5
"""Games a member may need before one gives it a decision that is not forced: the server's dice can leave seat 1
only forced moves in a quick game."""


def play_until_seat_one_decides(client, opponent: str, records: Path) -> tuple[dict, set[str]]:
    """A whole game against `opponent` at seat 1, again until seat 1 made a recorded decision; the last game's view
    and the players its record names at seat 1."""
    players: set[str] = set()
    for _ in range(GAMES_TO_GET_A_DECISION):
        view = client.post("/api/games", json={"variant": VARIANT, "players": PLAYERS, "seat": 0,
                                               "opponents": [opponent]})
        assert view.status_code == 200, (opponent, view.text)
        view = play_out(client, view.json())
        assert view["notices"] == [], (opponent, view["notices"])  # it played every move itself
        players = {r["player"] for r in read_records(records / view["record"]) if r["seat"] == 1}
        if players:
            break
    return view, players


def test_every_offered_league_member_plays_a_whole_game_and_is_recorded(run, tmp_path):
    client = league_client(run, tmp_path / "records")
    offered = {o["id"]: o for o in client.get("/api/options").json()["opponents"] if o["kind"] == "league"}
    external = next(name for name in offered if name.startswith("league:run-other"))
    assert set(offered) == {"league:main", "league:main@1", "league:random", "league:hybrid", external}
    assert offered["league:main"]["label"] == "main (main, iter_000003)"
    folders = {"league:main": run / "checkpoints" / "iter_000003" / "policy", "league:main@1": run / "league" / "main@1",
               external: run.parent / "run-other" / "checkpoints" / "iter_000005" / "policy",
               "league:random": None, "league:hybrid": None}
    for opponent, folder in folders.items():
        view, players = play_until_seat_one_decides(client, opponent, tmp_path / "records")
        expected = opponent.removeprefix("league:") if folder is None else f"ckpt:{folder}"
        assert players == {expected}, opponent
        if folder is not None:  # the learned member's weights, loaded once and shared
            assert Path(expected.removeprefix("ckpt:")).resolve() == folder.resolve()


def test_a_learned_member_shows_its_move_probabilities_in_the_replay(run, tmp_path):
    client = league_client(run, tmp_path / "records")
    view, _ = play_until_seat_one_decides(client, "league:main@1", tmp_path / "records")
    replay = client.get("/api/replay", params={"file": f"records/{view['record']}", "game": 0}).json()
    steps = [s for s in replay["steps"] if s["seat"] == 1]
    assert steps and all(s["insight"]["kind"] == "probabilities" for s in steps)
    assert {s["player"] for s in steps} == {"ckpt:main@1"}


def test_main_is_offered_only_with_a_policy_and_falls_back_to_best(tmp_path):
    run = learned_run(tmp_path / "run", checkpoint=False)
    client = league_client(run, tmp_path / "records")

    def ids() -> dict[str, str]:
        return {o["id"]: o["label"] for o in client.get("/api/options").json()["opponents"]}

    assert "league:main" not in ids() and "league:main@1" in ids()  # before main's first checkpoint
    refused = client.post("/api/games", json={"variant": VARIANT, "players": PLAYERS, "opponents": ["league:main"]})
    assert refused.status_code == 422 and "unknown opponent 'league:main'" in refused.json()["error"]
    write_tiny_policy(run / "best" / "policy", seed=4, players=PLAYERS, variant=VARIANT)
    assert ids()["league:main"] == "main (main, best)"
    write_tiny_policy(run / "checkpoints" / "iter_000007" / "policy", seed=5, players=PLAYERS, variant=VARIANT)
    (run / "checkpoints" / "iter_000009" / "policy").mkdir(parents=True)  # being written: no weights yet
    assert ids()["league:main"] == "main (main, iter_000007)"
    _, players = play_until_seat_one_decides(client, "league:main", tmp_path / "records")
    assert players == {f"ckpt:{run / 'checkpoints' / 'iter_000007' / 'policy'}"}


def test_a_snapshot_whose_weights_are_gone_is_not_offered(tmp_path):
    import shutil

    run = learned_run(tmp_path / "run")
    shutil.rmtree(run / "league" / "main@1")
    ids = {o["id"] for o in league_client(run, tmp_path / "records").get("/api/options").json()["opponents"]}
    assert "league:main@1" not in ids and "league:main" in ids


def test_a_member_trained_for_other_games_is_refused_in_one_line(run, tmp_path):
    client = league_client(run, tmp_path / "records")
    answer = client.post("/api/games", json={"variant": "classic", "players": 4, "seat": 0,
                                             "opponents": ["league:main@1", "bot:random", "bot:random"]})
    assert answer.status_code == 422
    error = answer.json()["error"]
    assert "cannot play this game" in error and "2-player quick" in error and "\n" not in error


def test_the_league_page_takes_plotly_from_one_cached_file_and_has_the_sites_header(run, tmp_path):
    from launch.web.league import PLOTLY_ROUTE, plotly_file

    client = league_client(run, tmp_path / "records")
    page = client.get("/league")
    assert page.status_code == 200 and page.headers["cache-control"] == "no-store"
    assert len(page.content) < 300_000 and "plotly.js v" not in page.text  # not the 4.8 MB library inlined
    assert page.text.count(f'<script src="{PLOTLY_ROUTE}"></script>') == 1
    assert '<nav class="site">' in page.text and 'href="/replay">Replays</a>' in page.text
    assert '<body data-refresh="30">' in page.text and 'http-equiv="refresh"' not in page.text
    library = client.get(PLOTLY_ROUTE)
    assert library.status_code == 200 and library.content == plotly_file().read_bytes()
    assert "max-age=31536000" in library.headers["cache-control"]
    assert library.headers["content-type"].startswith("text/javascript") and library.headers["etag"]
