"""Following a game on launch/serve.py's play page, in headless Chromium: a moved token walks its path
square by square, the last move is marked, the die says whose roll it shows, a roll with no move is held up on
the board, a forced move plays itself when the setting says so (and not otherwise), a banner ends the game, and
with `prefers-reduced-motion: reduce` tokens are put in place without steps.

Positions are sampled as drawn: every animation frame, the centre of each token's circle, as a board cell.
Set ``SERVE_FOLLOW_SHOTS=<folder>`` to keep the screenshots (mid-move, the banner).
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.browser import browser_or_skip, new_chrome

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60
POLL = 0.02

# every animation frame: each token's drawn cell (its circle's centre on the 15 x 15 grid), appended when it changes;
# and whether the board's "no move" note is shown, with what the die's caption says then
SAMPLER = """
window.seen = {}; window.notes = [];
const frame = () => {
  const board = document.getElementById('board');
  if (board && !document.getElementById('table').hidden) {
    const b = board.getBoundingClientRect();
    for (const t of board.querySelectorAll('.token')) {
      const r = t.querySelector('circle').getBoundingClientRect();
      const cell = [Math.floor((r.top + r.height / 2 - b.top) / (b.height / 15)),
                    Math.floor((r.left + r.width / 2 - b.left) / (b.width / 15))].join(',');
      const key = t.dataset.seat + ':' + t.dataset.token, list = window.seen[key] || (window.seen[key] = []);
      if (list[list.length - 1] !== cell) list.push(cell);
    }
    const note = document.getElementById('board-note');
    if (!note.hidden && window.notes[window.notes.length - 1] !== note.textContent) window.notes.push(note.textContent,
        document.getElementById('die-owner').textContent);
  }
  requestAnimationFrame(frame);
};
requestAnimationFrame(frame);
"""


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    browser_or_skip()
    records = tmp_path_factory.mktemp("follow") / "records"
    process = subprocess.Popen([sys.executable, "launch/serve.py", "port=0", f"records={records}"], cwd=ROOT, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = process.stdout.readline()
    if not line.startswith("serving http://"):
        process.kill()
        raise AssertionError(f"the server did not start: {line!r} {process.stderr.read()}")
    yield line.split()[1]
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture
def driver():
    chrome = new_chrome("1300,900")
    yield chrome
    chrome.quit()


def wait(driver, condition, timeout=WAIT):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=POLL).until(condition)


def state(driver) -> dict:
    return driver.execute_script("""return {turn: document.body.dataset.turn, busy: document.body.dataset.busy || '',
      log: document.getElementById('log').dataset.count, legal: document.querySelectorAll('#board .token.legal').length,
      follow: window.follow.length}""")


def start(driver, url: str, speed: int, autoplay: bool | None, reduced: bool = False) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    if reduced:
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                               {"features": [{"name": "prefers-reduced-motion", "value": "reduce"}]})
    driver.get(url)
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    driver.execute_script(f"document.getElementById('speed').value = {speed};" + SAMPLER)
    if autoplay is not None:  # the setting is in the game's panel, hidden until the game starts
        driver.execute_script(f"document.getElementById('autoplay').checked = {str(autoplay).lower()};")
    Select(driver.find_element(By.ID, "variant")).select_by_value("quick")
    Select(driver.find_element(By.ID, "players")).select_by_value("2")
    driver.find_element(By.ID, "start").click()
    wait(driver, lambda d: state(d)["turn"] != "setup")


def play_one(driver) -> str:
    """Wait for the person's turn, then roll or move the first highlighted token; the turn acted on."""
    s = wait(driver, lambda d: (s := state(d))["turn"] in ("roll", "move", "over") and not s["busy"] and s)
    if s["turn"] == "roll":
        driver.execute_script("document.getElementById('die').click()")
    elif s["turn"] == "move":
        driver.execute_script("document.querySelector('#board .token.legal').dispatchEvent(new MouseEvent('click'))")
    return s["turn"]


def events(driver, kind: str) -> list[dict]:
    return [e for e in driver.execute_script("return window.follow") if e["kind"] == kind]


def cells(path) -> list[str]:
    return [f"{r},{c}" for r, c in path]


def shot(driver, name: str) -> Path:
    folder = Path(os.environ.get("SERVE_FOLLOW_SHOTS") or "/tmp")
    folder.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(folder / name))
    return folder / name


@pytest.mark.serial  # times how fast it happens (tests/conftest.py)
def test_a_move_walks_its_squares_and_the_board_shows_what_happened(driver, url):
    start(driver, url, speed=400, autoplay=False)
    walked = None
    deadline = time.monotonic() + 150
    shot_taken = False
    while time.monotonic() < deadline:
        moves = [e for e in events(driver, "move") if e["animated"] and len(e["path"]) >= 3]
        if moves and driver.execute_script("return document.body.dataset.busy") == "" and events(driver, "no-move"):
            walked = moves[0]
            break
        if state(driver)["turn"] == "over":
            start(driver, url, speed=400, autoplay=False)
        if not shot_taken and driver.execute_script(
                "const m = window.follow.filter(e => e.kind === 'move').pop();"
                "return !!document.querySelector('#board .token.walking') && m.path.length >= 4"):
            shot(driver, "follow-mid-move.png")
            shot_taken = True
        if state(driver)["turn"] in ("roll", "move") and not state(driver)["busy"]:
            play_one(driver)
        time.sleep(0.03)
    assert walked is not None, "no move of three squares or more, or no roll without a move, in the time given"
    key = f"{walked['seat']}:{walked['token']}"
    seen = driver.execute_script("return window.seen")[key]
    it = iter(seen)
    assert all(cell in it for cell in cells(walked["path"])), (walked["path"], seen)  # every square on the way, in order
    # the roll without a move was held up on the board, the die saying whose roll and that it has no move
    notes = driver.execute_script("return window.notes")
    assert any("no move" in note for note in notes[::2]), notes
    assert any("no legal move" in caption or "roll is lost" in caption for caption in notes[1::2]), notes
    # when the page waits again: the last move's token is marked, and the die names whose roll it shows
    wait(driver, lambda d: (s := state(d))["turn"] in ("roll", "move", "over") and not s["busy"])
    shown = driver.execute_script("""
      const log = document.querySelectorAll('#log li'), top = log[0];
      const marked = [...document.querySelectorAll('#board .token.last-moved')].map(t => [+t.dataset.seat, +t.dataset.token]);
      const last = [...log].find(li => li.dataset.token !== '');
      return {marked: marked, last: last ? [+last.dataset.seat, +last.dataset.token] : null, rings: document.querySelectorAll('#board .last-ring').length,
              top: [top.dataset.seat, top.dataset.die], face: [document.getElementById('die-face').dataset.seat,
              document.getElementById('die-face').dataset.value], owner: document.getElementById('die-owner').textContent,
              turn: document.body.dataset.turn, you: document.querySelector('.seat').textContent}""")
    assert shown["marked"] == [shown["last"]] and shown["rings"] == 1
    if shown["turn"] == "roll":  # your roll to come: the die is blank, in your colour
        assert shown["face"] == ["0", "0"]
    elif shown["turn"] == "move":
        assert shown["face"][0] == "0" and shown["owner"].startswith("You rolled")
    roll = events(driver, "roll")[-1]
    assert roll["seat"] in (0, 1) and 1 <= roll["die"] <= 6
    assert driver.execute_script("return window.follow.filter(e => e.kind === 'auto').length") == 0


def test_forced_moves_play_themselves_and_a_banner_ends_the_game(driver, url):
    start(driver, url, speed=0, autoplay=None)
    assert driver.execute_script("return document.getElementById('autoplay').checked")  # on by default
    clicked_moves = 0
    deadline = time.monotonic() + 240
    while state(driver)["turn"] != "over" and time.monotonic() < deadline:
        s = wait(driver, lambda d: (s := state(d))["turn"] in ("roll", "move", "over") and not s["busy"] and s)
        if s["turn"] == "move":
            assert s["legal"] > 1, "a forced move waited on a click"
            clicked_moves += 1
        play_one(driver)
    assert state(driver)["turn"] == "over"
    autos = events(driver, "auto")
    assert autos, "no forced move in a whole game"
    banner = driver.execute_script("""const b = document.getElementById('banner'), r = b.getBoundingClientRect(),
      board = document.getElementById('board').getBoundingClientRect();
      return {shown: !b.hidden && r.width > 0, title: document.getElementById('banner-title').textContent,
              order: document.getElementById('banner-order').textContent,
              inside: r.left >= board.left && r.right <= board.right && r.top >= board.top && r.bottom <= board.bottom}""")
    assert banner["shown"] and banner["inside"], banner
    assert banner["title"] in ("You win!", "yellow (hybrid) wins") and "Finishing order" in banner["order"]
    time.sleep(0.5)  # the banner's entrance over
    shot(driver, "follow-banner.png")
    # off: a forced move waits on the person, and the setting is remembered
    driver.find_element("id", "autoplay").click()
    assert driver.execute_script("return localStorage.getItem('ludo-autoplay')") == "0"
    driver.find_element("id", "banner-again").click()
    wait(driver, lambda d: state(d)["turn"] in ("roll", "opponent"))
    before = len(events(driver, "auto"))
    while True:
        play_one(driver)
        s = wait(driver, lambda d: (s := state(d))["turn"] in ("roll", "move", "over") and not s["busy"] and s)
        if s["turn"] == "move" and s["legal"] == 1:
            break
        assert s["turn"] != "over"
    time.sleep(1.0)
    assert state(driver)["turn"] == "move" and len(events(driver, "auto")) == before
    driver.refresh()
    wait(driver, lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    assert driver.execute_script("return document.getElementById('autoplay').checked") is False


def test_with_reduced_motion_tokens_move_without_steps(driver, url):
    start(driver, url, speed=400, autoplay=False, reduced=True)
    deadline = time.monotonic() + 150
    moved = None
    while moved is None and time.monotonic() < deadline:
        if state(driver)["turn"] == "over":
            start(driver, url, speed=400, autoplay=False, reduced=True)
        play_one(driver)
        wait(driver, lambda d: (s := state(d))["turn"] in ("roll", "move", "over") and not s["busy"])
        moves = events(driver, "move")
        assert moves == [e for e in moves if not e["animated"]]
        moved = next((e for e in moves if len(e["path"]) >= 3), None)
    assert moved is not None, "no move of three squares or more in the time given"
    # drawn where it stood, then where it landed: none of the squares between
    seen = driver.execute_script("return window.seen")[f"{moved['seat']}:{moved['token']}"]
    start_cell, end_cell = cells([moved["from"]])[0], cells(moved["path"])[-1]
    assert [start_cell, end_cell] in [seen[k:k + 2] for k in range(len(seen) - 1)], (moved, seen)
    assert not set(cells(moved["path"][:-1])) & set(seen[seen.index(start_cell):]), (moved, seen)
