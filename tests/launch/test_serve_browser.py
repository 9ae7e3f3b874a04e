"""launch/serve.py in headless Chromium: games played by clicks, refusals shown, two sessions, a learned opponent,
an agent that fails replaced with the page saying so, the replay viewer.

Chromium and selenium come as for the leaderboard's browser test (its installers are reused); without them
the tests skip. Set ``SERVE_SCREENSHOT=<png path>`` to keep the play page's screenshot (the README's and the
docs' ``docs/pages/images/serve.png`` is made this way).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ludo_env.engine import Game
from ludo_env.rules import Rules
from policies.records import read_records
from tests.browser import browser_or_skip, new_chrome
from tests.league import conftest as league_fixtures

pytestmark = pytest.mark.browser
league_db = league_fixtures.league_db  # the small real league of tests/league, a fixture here too

ROOT = Path(__file__).resolve().parents[2]
FAILING = "py:tests.launch.test_serve_faults:Boom"
WAIT = 60
POLL = 0.02  # seconds between checks of a wait: the default half second would dominate a game of clicks


@pytest.fixture(scope="module")
def browsers():
    browser_or_skip()
    made = []
    yield lambda: made.append(new_chrome("1300,900")) or made[-1]
    for chrome in made:
        chrome.quit()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """launch/serve.py with a tiny learned policy as an agent, on a free port; (address, records folder)."""
    from tests.league.tiny_policy import write_tiny_policy

    base = tmp_path_factory.mktemp("serve")
    policy = write_tiny_policy(base / "policy")  # agent:0, for 4-player classic
    quick = write_tiny_policy(base / "quick", players=2, variant="quick")  # agent:1, for 2-player quick
    # agent:2, FAILING, raises on its first move
    records = base / "records"
    process = subprocess.Popen([sys.executable, "launch/serve.py", "port=0", f"records={records}",
                                f"agents=[ckpt:{policy},ckpt:{quick},{FAILING}]"], cwd=ROOT, text=True, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = process.stdout.readline()
    if not line.startswith("serving http://"):
        process.kill()
        raise AssertionError(f"the server did not start: {line!r} {process.stderr.read()}")
    yield line.split()[1], records
    process.terminate()
    process.wait(timeout=30)


def page_state(driver) -> dict:
    return driver.execute_script(
        "return {turn: document.body.dataset.turn, busy: document.body.dataset.busy || '',"
        " status: document.getElementById('status').textContent, log: +document.getElementById('log').dataset.count}")


def wait_for_person(driver) -> dict:
    """Wait until the page waits on the person (roll, move) or the game is over."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT, poll_frequency=POLL).until(
        lambda d: (s := page_state(d))["turn"] in ("roll", "move", "over") and not s["busy"] and s)


def start_game(driver, url: str, variant: str, players: int, seat: int, opponents: list[str], speed: int) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    driver.get(url)
    WebDriverWait(driver, WAIT, poll_frequency=POLL).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    driver.execute_script(f"document.getElementById('speed').value = {speed};")
    # every move is the Person's click: no forced move played by the page (the setting is on by default)
    driver.execute_script("document.getElementById('autoplay').checked = false;")
    Select(driver.find_element(By.ID, "variant")).select_by_value(variant)
    Select(driver.find_element(By.ID, "players")).select_by_value(str(players))
    Select(driver.find_element(By.ID, "seat")).select_by_value(str(seat))
    for k, opponent in enumerate(opponents):
        Select(driver.find_element(By.ID, f"opponent-{k}")).select_by_value(opponent)
    driver.find_element(By.ID, "start").click()
    WebDriverWait(driver, WAIT, poll_frequency=POLL).until(lambda d: page_state(d)["turn"] != "setup")


def own_tokens(driver, seat: int, legal: bool | None = None):
    from selenium.webdriver.common.by import By

    tokens = driver.find_elements(By.CSS_SELECTOR, f"#board .token[data-seat='{seat}']")
    if legal is None:
        return tokens
    return [t for t in tokens if ("legal" in t.get_attribute("class").split()) == legal]


class Person:
    """Plays one page by clicks: the die, then a highlighted token (the one furthest on, or a seeded choice)."""

    def __init__(self, driver, seat: int, seed: int = 0):
        self.driver, self.seat = driver, seat
        self.rng = np.random.default_rng(seed)
        self.moves: list[tuple[int, int]] = []  # (die, token) of every move clicked
        self.refused_illegal = None  # the message shown for a click on an own token that cannot move

    def act(self) -> bool:
        """One click; False once the game is over."""
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait

        state = wait_for_person(self.driver)
        if state["turn"] == "over":
            return False
        if state["turn"] == "roll":
            self.driver.find_element(By.ID, "die").click()
            WebDriverWait(self.driver, WAIT, poll_frequency=POLL).until(lambda d: page_state(d)["log"] > state["log"]
                                                   or page_state(d)["turn"] == "move")
            return True
        legal = own_tokens(self.driver, self.seat, legal=True)
        assert legal, "the page waits on a move but highlights no token"
        if self.refused_illegal is None:
            illegal = own_tokens(self.driver, self.seat, legal=False)
            if illegal:  # a click on a token that cannot move: refused, said why, and the same move still waits
                illegal[0].click()
                WebDriverWait(self.driver, WAIT, poll_frequency=POLL).until(lambda d: page_state(d)["status"])
                self.refused_illegal = page_state(self.driver)["status"]
                assert page_state(self.driver)["turn"] == "move"
                legal = own_tokens(self.driver, self.seat, legal=True)
        die = int(self.driver.find_element(By.ID, "die-face").get_attribute("data-value"))
        choice = legal[int(self.rng.integers(len(legal)))]
        token = int(choice.get_attribute("data-token"))
        choice.click()
        WebDriverWait(self.driver, WAIT, poll_frequency=POLL).until(lambda d: page_state(d)["log"] > state["log"])
        self.moves.append((die, token))
        return True

    def play_out(self) -> None:
        while self.act():
            pass


def page_log(driver) -> list[tuple[int, int, int]]:
    """(seat, die, token) of every move on the page's move list, oldest first."""
    rows = driver.execute_script(
        "return [...document.querySelectorAll('#log li')].map(li => [li.dataset.seat, li.dataset.die, li.dataset.token])")
    return [(int(s), int(d), int(t)) for s, d, t in reversed(rows) if t != ""]


def saved_record(driver, records: Path) -> Path:
    from selenium.webdriver.common.by import By

    name = driver.find_element(By.CSS_SELECTOR, "#record code").text
    return records / name


def console_errors(driver) -> list:
    # a refused request is a 4xx, which Chromium logs as a failed resource: that is the page working
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE" and "status of 4" not in e["message"]]


@pytest.mark.slow  # 60 s; CI plays whole games in test_serve_layout_browser.py and test_serve_follow_browser.py
def test_a_whole_game_against_three_bots_by_clicks_is_recorded_move_for_move(browsers, server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    url, records = server
    driver = browsers()
    start_game(driver, url, "classic", 4, 0, ["bot:hybrid", "bot:random", "bot:fast"], speed=0)
    person = Person(driver, seat=0)
    person.play_out()

    assert "Finishing order: 1. " in driver.find_element(By.ID, "order").text
    lines = read_records(saved_record(driver, records))
    assert [(r["seat"], r["die"], r["chosen"]) for r in lines] == page_log(driver)
    assert [(r["die"], r["chosen"]) for r in lines if r["player"] == "human"] == person.moves
    assert {r["player"] for r in lines if r["seat"] != 0} == {"hybrid", "random", "fast"}
    assert person.refused_illegal is not None and "cannot move with a" in person.refused_illegal
    assert console_errors(driver) == []

    driver.find_element(By.ID, "again").click()  # play again: a fresh game with the same setup
    WebDriverWait(driver, WAIT, poll_frequency=POLL).until(lambda d: page_state(d)["turn"] == "roll" and page_state(d)["log"] == 0)
    assert not driver.find_element(By.ID, "finish").is_displayed()

    keep = os.environ.get("SERVE_SCREENSHOT")
    if keep:  # the README's picture: a game under way, not the end
        start_game(driver, url, "classic", 4, 0, ["bot:hybrid", "agent:0", "bot:semi_smart"], speed=0)
        player = Person(driver, seat=0, seed=3)
        while len(player.moves) < 14 and player.act():
            pass
        while wait_for_person(driver)["turn"] != "move" or len(own_tokens(driver, 0, legal=True)) < 2:
            assert player.act(), "the game ended before a screenshot was taken"
        shot = Path(keep)
        shot.parent.mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(shot))


def test_clicks_out_of_turn_and_on_other_tokens_are_refused_with_the_reason_shown(browsers, server):
    from selenium.webdriver.support.ui import WebDriverWait

    url, _ = server
    driver = browsers()
    start_game(driver, url, "classic", 2, 1, ["bot:random"], speed=2000)  # red rolls first, slowly
    own_tokens(driver, 1)[0].click()
    WebDriverWait(driver, WAIT, poll_frequency=POLL).until(lambda d: "not your turn" in page_state(d)["status"])
    assert "red (random) is to play" in page_state(driver)["status"]
    driver.execute_script("document.getElementById('speed').value = 0;")
    state = wait_for_person(driver)
    assert state["turn"] == "roll"  # the game went on
    own_tokens(driver, 0)[0].click()  # red's token, not the person's
    WebDriverWait(driver, WAIT, poll_frequency=POLL).until(lambda d: "that is red's token: you play yellow" in page_state(d)["status"])
    own_tokens(driver, 1)[0].click()  # a token before rolling
    WebDriverWait(driver, WAIT, poll_frequency=POLL).until(lambda d: "roll the die first" in page_state(d)["status"])
    assert wait_for_person(driver)["turn"] == "roll"
    assert console_errors(driver) == []


@pytest.mark.slow  # 32 s; two windows of one game are followed in CI (test_serve_persist.py)
def test_two_browser_sessions_play_two_games_at_once(browsers, server):
    url, records = server
    first, second = browsers(), browsers()
    start_game(first, url, "quick", 2, 0, ["bot:random"], speed=0)
    start_game(second, url, "quick", 3, 1, ["bot:fast", "bot:aggressive"], speed=0)
    players = [Person(first, 0, seed=1), Person(second, 1, seed=2)]
    playing = list(players)
    while playing:  # one click each in turn, so the two games interleave on the server
        playing = [p for p in playing if p.act()]
    for person in players:
        lines = read_records(saved_record(person.driver, records))
        assert [(r["seat"], r["die"], r["chosen"]) for r in lines] == page_log(person.driver)
        assert [(r["die"], r["chosen"]) for r in lines if r["player"] == "human"] == person.moves
    assert saved_record(first, records) != saved_record(second, records)
    assert {r["players"] for r in read_records(saved_record(second, records))} == {3}


def test_a_learned_agent_plays_and_the_replay_viewer_shows_the_engines_positions(browsers, server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    url, records = server
    driver = browsers()
    start_game(driver, url, "quick", 2, 0, ["agent:1"], speed=0)
    person = Person(driver, 0, seed=4)
    person.play_out()
    assert any(seat == 1 for seat, _, _ in page_log(driver))
    record = saved_record(driver, records)
    lines = read_records(record)
    rules = Rules.load("quick", players=2)

    driver.find_element(By.LINK_TEXT, "replay it").click()
    WebDriverWait(driver, WAIT, poll_frequency=POLL).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    for k, line in enumerate(lines + [None]):
        shown = driver.execute_script(
            "return [...document.querySelectorAll('#replay-board .token')].map(t => [+t.dataset.seat,"
            " +t.dataset.token, +t.dataset.progress])")
        if line is None:  # the end: the last recorded move played by the engine
            game = Game.from_state(rules, np.array(lines[-1]["state"], dtype=np.int16))
            game.move(lines[-1]["chosen"])
            assert game.over
        else:
            game = Game.from_state(rules, np.array(line["state"], dtype=np.int16))
            assert int(driver.find_element(By.ID, "replay-die").get_attribute("data-value")) == line["die"]
            insight = driver.find_elements(By.CSS_SELECTOR, "#insight tbody tr")
            if line["player"] == "human":
                assert not driver.find_element(By.ID, "insight").is_displayed()
            else:  # the learned agent: a probability per legal token
                assert {int(tr.get_attribute("data-token")) for tr in insight} == {
                    t for t in range(4) if line["legal"][t]}
            chosen = driver.find_elements(By.CSS_SELECTOR, "#replay-board .token.chosen")
            assert [int(c.get_attribute("data-token")) for c in chosen] == [line["chosen"]]
        expected = sorted((s, t, int(p)) for s, row in enumerate(game.tokens) for t, p in enumerate(row))
        assert sorted(tuple(x) for x in shown) == expected, f"step {k}"
        if line is not None:
            driver.find_element(By.ID, "next").click()
            WebDriverWait(driver, WAIT, poll_frequency=POLL).until(
                lambda d, k=k: d.find_element(By.ID, "position").get_attribute("data-index") == str(k + 1))
    # and back: the first step again
    driver.find_element(By.ID, "first").click()
    assert driver.find_element(By.ID, "position").get_attribute("data-index") == "0"
    driver.find_element(By.ID, "next").click()
    driver.find_element(By.ID, "prev").click()
    assert driver.find_element(By.ID, "position").get_attribute("data-index") == "0"
    assert console_errors(driver) == []


def test_the_league_page_is_served_from_the_league(browsers, league_db, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    process = subprocess.Popen([sys.executable, "launch/serve.py", "port=0", f"league={league_db.parent}",
                                f"records={tmp_path / 'records'}"], cwd=ROOT, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        line = process.stdout.readline()
        assert line.startswith("serving http://127.0.0.1:"), process.stderr.read()
        url = line.split()[1]
        driver = browsers()
        driver.get(url)
        WebDriverWait(driver, WAIT, poll_frequency=POLL).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
        labels = driver.execute_script("return [...document.querySelectorAll('#opponent-0 option')].map(o => o.value)")
        assert "league:bot:hybrid-2" in labels
        driver.find_element(By.ID, "league-link").click()
        WebDriverWait(driver, WAIT, poll_frequency=POLL).until(ec.presence_of_element_located((By.CSS_SELECTOR, "#ranking tbody tr")))
        rows = driver.find_elements(By.CSS_SELECTOR, "#ranking tbody tr")
        assert "bot:hybrid-2" in [r.get_attribute("data-member") for r in rows]
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_an_agent_that_fails_is_replaced_by_random_and_the_page_says_so(browsers, server):
    from selenium.webdriver.common.by import By

    url, records = server
    driver = browsers()
    start_game(driver, url, "quick", 2, 0, ["agent:2"], speed=0)
    person = Person(driver, seat=0)
    notices = driver.find_element(By.ID, "notices")
    while not notices.is_displayed():
        assert person.act(), "the game ended before the agent had a move to fail"
    assert notices.text == (f"yellow ({FAILING}) failed: Boom.choose raised ZeroDivisionError: integer division or "
                            "modulo by zero; random plays its seat from now on")
    assert f"yellow: random, for {FAILING}" in driver.find_element(By.ID, "seats").text
    person.play_out()  # the game goes on to its end
    lines = read_records(saved_record(driver, records))
    assert {r["player"] for r in lines if r["seat"] == 1} == {"random"}
    assert notices.is_displayed() and console_errors(driver) == []


def test_the_champion_is_offered_only_for_games_of_its_rule_set(browsers, server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    address, _ = server
    driver = browsers()
    driver.get(address)
    WebDriverWait(driver, WAIT, poll_frequency=POLL).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))

    def offered(variant: str, players: int) -> set[str]:
        Select(driver.find_element(By.ID, "variant")).select_by_value(variant)
        Select(driver.find_element(By.ID, "players")).select_by_value(str(players))
        select = driver.find_element(By.ID, "opponent-0")
        return {option.get_attribute("value") for option in select.find_elements(By.TAG_NAME, "option")}

    assert "champion:classic" in offered("classic", 4)
    assert "champion:classic" not in offered("pyludo", 4)
    assert "champion:pyludo" in offered("pyludo", 4) and "champion:pyludo" not in offered("classic", 4)
    assert "champion:classic" not in offered("classic", 2)  # it was trained for four seats
    assert {"bot:hybrid", "agent:0"} <= offered("pyludo", 4)
    start_game(driver, address, "classic", 4, 0, ["champion:classic", "bot:random", "bot:random"], speed=0)
    assert page_state(driver)["turn"] in ("roll", "move", "opponent")
