"""launch/serve.py's games that outlive the server, tabs that follow the server, and people rated in the league."""
from __future__ import annotations

import sqlite3

import pytest
from fastapi.testclient import TestClient

from launch.leaderboard import Board
from launch.web.app import create_app
from launch.web.site import Site
from policies.league.store import LeagueStore
from policies.records import read_records
from tests.launch.test_serve import play_out

QUICK = {"variant": "quick", "players": 2, "seat": 0, "opponents": ["bot:random"]}


def position(view) -> tuple:
    return (view["version"], view["turn"], view["current"], view["die"], view["log"],
            [[t["progress"] for t in row] for row in view["tokens"]])


def test_an_unfinished_game_survives_a_server_restart(tmp_path):
    records = tmp_path / "records"
    first = TestClient(create_app(Site(records, [])))
    started = first.post("/api/games", json={**QUICK, "players": 4, "opponents": ["bot:random"] * 3}).json()
    player = started["player_token"]  # the server's token for this browser, which lists its games
    view = play_out(first, started, actions=60)
    assert not view["over"] and view["version"] > 20
    other = first.post("/api/games", json=QUICK).json()  # another browser, with a token of its own

    second = TestClient(create_app(Site(records, [])))  # a new server on the same records folder
    again = second.get(f"/api/games/{view['id']}").json()
    assert position(again) == position(view) and again["seats"] == view["seats"]
    listed = second.get("/api/saved", params={"player": player}).json()["games"]
    assert [g["id"] for g in listed] == [view["id"]] and listed[0]["opponents"] == ["random"] * 3
    assert [g["id"] for g in second.get("/api/saved", params={"player": other["player_token"]}).json()["games"]] \
        == [other["id"]]
    assert second.get("/api/saved", params={"player": "../etc"}).status_code == 422

    done = play_out(second, again)  # played on to its end, and recorded whole
    moves = [(e["seat"], e["die"], e["token"]) for e in done["log"] if e["token"] is not None]
    assert [(r["seat"], r["die"], r["chosen"]) for r in read_records(records / done["record"])] == moves
    assert [g["id"] for g in second.get("/api/saved", params={"player": player}).json()["games"]] == []
    third = TestClient(create_app(Site(records, [])))  # a finished game is no longer kept
    assert third.get(f"/api/games/{view['id']}").status_code == 404
    assert third.get(f"/api/games/{other['id']}").status_code == 200


def test_an_opponent_gone_after_the_restart_is_played_by_random_with_a_notice(tmp_path):
    records = tmp_path / "records"
    first = TestClient(create_app(Site(records, [])))
    view = play_out(first, first.post("/api/games", json=QUICK).json(), actions=10)
    with sqlite3.connect(records / "games.db") as db:  # as if the server now ran without that agent
        db.execute("UPDATE games SET opponents = ?", ('{"1": "agent:3"}',))
    second = TestClient(create_app(Site(records, [])))
    again = second.get(f"/api/games/{view['id']}").json()
    assert [(e["seat"], e["die"], e["token"]) for e in again["log"]] == \
        [(e["seat"], e["die"], e["token"]) for e in view["log"]]  # the same game; its texts name the gone agent
    assert "agent:3" in again["notices"][0] and "random plays its seat" in again["notices"][0]
    assert again["seats"][1]["player"] == "random, for agent:3"
    assert play_out(second, again)["over"]


def test_two_tabs_stay_in_sync(tmp_path):
    app = create_app(Site(tmp_path / "records", []))
    one, two = TestClient(app), TestClient(app)
    view = one.post("/api/games", json={**QUICK, "seat": 1}).json()
    stale = two.get(f"/api/games/{view['id']}").json()
    view = play_out(one, view, actions=1)  # the opponent's turn, played from the first tab
    # The second tab's poll sees a newer version, and its view is the first tab's
    polled = two.get(f"/api/games/{view['id']}/version").json()
    assert polled == {"version": view["version"], "turn": view["turn"]} and polled["version"] > stale["version"]
    assert two.get(f"/api/games/{view['id']}").json() == view
    # A request from a stale tab is refused (409), and the view it then fetches is current
    while view["turn"] != "move":
        view = play_out(one, view, actions=1)
    refused = two.post(f"/api/games/{view['id']}/roll")
    assert refused.status_code == 409
    assert two.get(f"/api/games/{view['id']}").json() == view
    view = play_out(two, view, actions=1)  # played on from the second tab; the first follows
    assert one.get(f"/api/games/{view['id']}/version").json()["version"] == view["version"]


# seed 27: two seats tie on coverage and share second place (rule 7)
@pytest.mark.parametrize(("game_seed", "places"), [(0, [1, 2, 3]), (27, [1, 2, 2])])
def test_a_humans_rating_changes_after_a_recorded_game(tmp_path, monkeypatch, game_seed, places):
    monkeypatch.setattr("launch.web.games.secrets.randbelow", lambda bound: game_seed)  # the site's fresh dice
    run = tmp_path / "run"
    with LeagueStore.open(run / "league.db") as store:
        store.add_member("bot:random", kind="bot", spec="random")
        store.add_member("main-3", kind="snapshot", spec="hybrid", iteration=3)
    client = TestClient(create_app(Site(tmp_path / "records", [], league=Board(str(run), None))))
    for bad in ("", " ann", "a" * 33, "ann;drop", "\u00e9"):
        answer = client.post("/api/games", json={**QUICK, "name": bad})
        assert answer.status_code == 422 and "name" in answer.json()["error"] and "\n" not in answer.text

    view = client.post("/api/games", json={**QUICK, "players": 3, "opponents": ["league:main-3", "bot:random"],
                                           "name": "Ann B."}).json()
    secret = view["name_token"]  # the name's first game claims it; the browser keeps the secret
    done = play_out(client, view)
    assert done["rated"].startswith("rated in the league as human:ann b.")  # names are compared folded
    with LeagueStore.open(run / "league.db", create=False, read_only=True) as store:
        person = store.member("human:ann b.")
        assert person.kind == "human" and (person.mu, person.sigma) != (25.0, 25 / 3)
        [match] = store.matches()
        assert len(match.seats) == 3 and match.seats[0] == person.id and list(match.places) == done["places"]
        assert sorted(match.places) == places
        assert "human:ann b." not in {m.name for m in store.members(active_only=True)}  # never a training opponent
    assert "league:human:ann b." not in {o["id"] for o in client.get("/api/options").json()["opponents"]}
    page = client.get("/league").text
    assert "human:ann b." in page and "kind-human" in page

    # against an opponent that is not a league member, or without a name, a game is not rated
    view = client.post("/api/games", json={**QUICK, "opponents": ["bot:hybrid"], "name": "Ann B.",
                                           "name_token": secret}).json()
    assert "not a league member" in play_out(client, view)["rated"]
    view = client.post("/api/games", json={**QUICK, "opponents": ["bot:random"]}).json()
    assert play_out(client, view)["rated"] == "not rated: you gave no name"
    with LeagueStore.open(run / "league.db", create=False, read_only=True) as store:
        assert len(store.matches()) == 1


def test_two_browser_windows_follow_one_game_and_the_start_page_lists_it(tmp_path):
    """Two windows of one browser (one localStorage): the second finds the game on the start page, resumes it,
    and each follows what the other plays, by its poll, without a reload."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    from tests.browser import browser_or_skip, new_chrome
    from tests.launch.test_serve import start_server, stop_server

    browser_or_skip()
    server, url = start_server(f"records={tmp_path / 'records'}")
    driver = new_chrome("1300,900")
    wait = WebDriverWait(driver, 60, poll_frequency=0.05)
    state = ("return {turn: document.body.dataset.turn, busy: document.body.dataset.busy || '',"
             " version: document.body.dataset.version || ''}")
    try:
        driver.get(url)
        wait.until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
        driver.execute_script("document.getElementById('autoplay').checked = false;"
                              "document.getElementById('speed').value = 0;")
        Select(driver.find_element(By.ID, "variant")).select_by_value("quick")
        Select(driver.find_element(By.ID, "players")).select_by_value("2")
        Select(driver.find_element(By.ID, "opponent-0")).select_by_value("bot:random")
        driver.find_element(By.ID, "start").click()
        wait.until(lambda d: d.execute_script(state)["turn"] in ("roll", "move"))
        game = driver.execute_script("return location.hash").partition("game=")[2]
        first = driver.current_window_handle

        driver.switch_to.new_window("window")
        second = driver.current_window_handle
        driver.get(url)
        wait.until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
        driver.find_element(By.CSS_SELECTOR, f"#saved-list li[data-game='{game}'] a.resume").click()
        wait.until(lambda d: d.execute_script(state)["turn"] in ("roll", "move"))
        start = driver.execute_script(state)["version"]

        for player, follower in ((first, second), (second, first)):
            driver.switch_to.window(player)
            wait.until(lambda d: (s := d.execute_script(state))["turn"] in ("roll", "move") and not s["busy"])
            if driver.execute_script(state)["turn"] == "roll":
                driver.find_element(By.ID, "die").click()
            else:
                driver.find_element(By.CSS_SELECTOR, "#moves li").click()
            wait.until(lambda d, start=start: (s := d.execute_script(state))["version"] != start and not s["busy"])
            played = driver.execute_script(state)
            driver.switch_to.window(follower)  # the other window follows, without a reload
            wait.until(lambda d, played=played: int(d.execute_script(state)["version"] or 0) >= int(played["version"]))
            start = driver.execute_script(state)["version"]
    finally:
        driver.quit()
        stop_server(server)
