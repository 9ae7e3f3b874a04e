"""launch/serve.py with league=<run> in headless Chromium, on a 1280x900 window and on a 390x844 phone (Chromium's
mobile emulation): games against the league's learned members (main and its snapshot, loaded from the run
folder), the sizes and overlaps of what a person taps, measured from the DOM, and the league page's table,
heatmap, header, cached plotly and in-place refresh.

Set ``SERVE_LAYOUT_SCREENSHOTS=<folder>`` to keep the screenshots (play page mid-game, league page) of each size.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from policies.records import read_records
from tests.browser import browser_or_skip, new_chrome
from tests.launch.test_serve_browser import (
    POLL,
    WAIT,
    Person,
    console_errors,
    page_log,
    page_state,
    saved_record,
    start_game,
    wait_for_person,
)
from tests.launch.test_serve_league import PLAYERS, VARIANT, learned_run

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SIZES = {"desktop": (1280, 900), "phone": (390, 844)}
TAP = 40  # px: the least a finger's target may measure either way on the phone
MEASURE = """
const box = (el) => { const r = el.getBoundingClientRect();
  return {x: r.left, y: r.top, w: r.width, h: r.height, right: r.right, bottom: r.bottom}; };
const owner = (x, y) => { const at = document.elementFromPoint(x, y);
  const el = at && (at.closest('.token') || at.closest('.hit'));
  return el ? [+el.dataset.seat, +el.dataset.token] : null; };
const table = document.getElementById('table');
return {
  vw: window.innerWidth, sw: document.documentElement.scrollWidth,
  board: box(document.getElementById('board')), side: box(table.querySelector('.side')),
  die: box(document.getElementById('die')),
  tokens: [...document.querySelectorAll('#board .token')].map((t) => {
    const c = box(t.querySelector('circle'));
    return {seat: +t.dataset.seat, token: +t.dataset.token, progress: +t.dataset.progress,
            legal: t.classList.contains('legal'), w: c.w, at: owner(c.x + c.w / 2, c.y + c.h / 2)}; }),
  hits: [...document.querySelectorAll('#board .hit')].map((h) => Object.assign(box(h),
    {seat: +h.dataset.seat, token: +h.dataset.token})),
  moves: [...document.querySelectorAll('#moves li')].map(box),
  nav: [...document.querySelectorAll('header nav a')].map(box),
  log: [...document.querySelectorAll('#log li')].map((li) => [+li.dataset.seat, getComputedStyle(li).borderLeftColor,
    parseFloat(getComputedStyle(li).fontSize)]),
  seats: [...document.querySelectorAll('#seats .seat')].map((s) => getComputedStyle(s).borderLeftColor),
};
"""


@pytest.fixture(scope="module")
def league_server(tmp_path_factory):
    """launch/serve.py started from the repository root with league=<a learned run>; (address, records, run)."""
    base = tmp_path_factory.mktemp("layout")
    run = learned_run(base / "run", rated=True)
    records = base / "records"
    process = subprocess.Popen([sys.executable, "launch/serve.py", "port=0", f"league={run}", f"records={records}"],
                               cwd=ROOT, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    line = process.stdout.readline()
    if not line.startswith("serving http://"):
        process.kill()
        raise AssertionError(f"the server did not start: {line!r} {process.stderr.read()}")
    yield line.split()[1], records, run
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture(scope="module", params=list(SIZES))
def driver(request):
    browser_or_skip()
    width, height = SIZES[request.param]
    chrome = new_chrome(f"{width},{height}") if request.param == "desktop" else new_chrome(phone=(width, height))
    chrome.size_name = request.param
    yield chrome
    chrome.quit()


def keep_screenshot(driver, tmp_path: Path, name: str) -> None:
    shot = tmp_path / f"{name}-{driver.size_name}.png"
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 5_000
    keep = os.environ.get("SERVE_LAYOUT_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        (Path(keep) / shot.name).write_bytes(shot.read_bytes())


def check_layout(driver, m: dict) -> None:
    """What a person sees and taps, at either size."""
    phone = driver.size_name == "phone"
    # nothing is wider than the screen: a phone would zoom the page out to fit it (its layout width grows)
    assert m["sw"] <= m["vw"] == SIZES[driver.size_name][0], "the page is wider than the screen"
    board, side = m["board"], m["side"]
    if phone:  # the board fills the phone's width; the panel comes under it
        assert board["w"] >= m["vw"] - 20 and board["right"] <= m["vw"] and board["x"] >= 0
        assert side["y"] >= board["bottom"] and side["right"] <= m["vw"] + 0.5
    else:  # the board at its full size, the panel beside it
        assert board["w"] == pytest.approx(600, abs=1) and side["x"] >= board["right"]
        assert side["right"] <= m["vw"]
    assert abs(board["w"] - board["h"]) < 1
    assert m["die"]["w"] >= TAP and m["die"]["h"] >= TAP
    if phone:
        assert all(a["h"] >= TAP for a in m["nav"]) and len(m["nav"]) == 3
        assert all(li["h"] >= TAP for li in m["moves"])
    # every token shows at least 12 px across, two on one square included, and is its own at its centre
    assert all(t["w"] >= 12 for t in m["tokens"])
    assert all(t["at"] == [t["seat"], t["token"]] for t in m["tokens"]), [t for t in m["tokens"] if t["at"] is None]
    # every move the person can make has a tap target of at least 40 px, over one of the tokens it moves
    legal = [t for t in m["tokens"] if t["legal"]]
    assert legal and m["hits"]
    assert all(h["w"] >= TAP and h["h"] >= TAP for h in m["hits"])
    by_token = {(t["seat"], t["token"]): t for t in legal}
    assert all((h["seat"], h["token"]) in by_token for h in m["hits"])
    assert {t["progress"] for t in legal} == {by_token[(h["seat"], h["token"])]["progress"] for h in m["hits"]}
    # the move log's bars have the seats' colours, not grey, in text a phone can read
    colours = m["seats"]
    assert m["log"] and all(colour == colours[seat] != "rgb(153, 153, 153)" for seat, colour, _ in m["log"])
    assert all(size >= 12 for _, _, size in m["log"])


def wait_for_move(driver, person: Person, moves: int) -> None:
    """Play on until the person has made `moves` moves and the page waits on the next one."""
    while len(person.moves) < moves or wait_for_person(driver)["turn"] != "move":
        assert person.act(), "the game ended first"


def test_the_setup_page_shows_no_empty_board(driver, league_server):
    url, _, _ = league_server
    driver.get(url)
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, WAIT, poll_frequency=POLL).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    shown = driver.execute_script(
        "const t = document.getElementById('table'); return [getComputedStyle(t).display, t.getBoundingClientRect().height,"
        " document.documentElement.scrollWidth <= innerWidth]")
    assert shown == ["none", 0, True]
    ids = driver.execute_script("return [...document.querySelectorAll('#opponent-0 option')].map(o => o.value)")
    assert {"league:main", "league:main@1", "league:random", "league:hybrid"} <= set(ids)


@pytest.mark.parametrize("opponent", ["league:main@1",
                                      pytest.param("league:main", marks=pytest.mark.slow)])  # CI: one whole game per size
def test_a_learned_league_member_plays_a_whole_game_and_the_page_fits(driver, league_server, tmp_path, opponent):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    url, records, run = league_server
    start_game(driver, url, VARIANT, PLAYERS, 0, [opponent], speed=0)
    assert "cannot" not in page_state(driver)["status"]
    person = Person(driver, seat=0, seed=5)
    wait_for_move(driver, person, 6)
    check_layout(driver, driver.execute_script(MEASURE))
    if opponent == "league:main@1":
        keep_screenshot(driver, tmp_path, "play")
    # a tap beside a movable token, inside its target but off its drawn circle, moves it
    # (a point of a target that no token is drawn on: a neighbouring square's token stays its own)
    spot = driver.execute_script("""
      for (const [k, hit] of [...document.querySelectorAll('#board .hit')].entries()) {
        const r = hit.getBoundingClientRect(), cx = r.left + r.width / 2, cy = r.top + r.height / 2;
        for (let a = 0; a < 16; a++) {
          const dx = Math.round(0.4 * r.width * Math.cos(a * Math.PI / 8)), dy = Math.round(0.4 * r.height * Math.sin(a * Math.PI / 8));
          if (document.elementFromPoint(cx + dx, cy + dy) === hit) return [k, dx, dy];
        }
      }
      return null;""")
    assert spot is not None, "no movable token's target can be tapped off its drawn circle"
    hit = driver.find_elements(By.CSS_SELECTOR, "#board .hit")[spot[0]]
    before = page_state(driver)["log"]
    ActionChains(driver).move_to_element_with_offset(hit, spot[1], spot[2]).click().perform()
    from selenium.webdriver.support.ui import WebDriverWait

    WebDriverWait(driver, WAIT, poll_frequency=POLL).until(lambda d: page_state(d)["log"] > before)
    person.play_out()
    assert driver.find_element(By.ID, "notices").is_displayed() is False  # it played every move itself
    lines = read_records(saved_record(driver, records))
    assert [(r["seat"], r["die"], r["chosen"]) for r in lines] == page_log(driver)
    folder = run / "league" / "main@1" if opponent == "league:main@1" else run / "checkpoints" / "iter_000003" / "policy"
    assert {r["player"] for r in lines if r["seat"] == 1} == {f"ckpt:{folder}"}
    m = driver.execute_script("return {vw: innerWidth, sw: document.documentElement.scrollWidth,"
                              " buttons: [...document.querySelectorAll('#finish button')].map(b => b.getBoundingClientRect().height)}")
    assert m["sw"] <= m["vw"] == SIZES[driver.size_name][0]
    if driver.size_name == "phone":
        assert len(m["buttons"]) == 2 and min(m["buttons"]) >= TAP
    assert console_errors(driver) == []


def test_the_replay_page_fits(driver, league_server):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.launch.test_serve import call

    url, _, _ = league_server
    status, view = call(url + "api/games", "POST", {"variant": VARIANT, "players": PLAYERS, "seat": 0,
                                                    "opponents": ["league:main@1"]})
    while status == 200 and not view["over"]:  # a record to replay, whatever ran before
        action = {"opponent": "step", "roll": "roll", "move": "move"}[view["turn"]]
        body = {"token": view["legal"][0]["token"]} if action == "move" else None
        status, view = call(f"{url}api/games/{view['id']}/{action}", "POST", body)
    assert status == 200, view
    driver.get(url + "replay")
    wait = WebDriverWait(driver, WAIT, poll_frequency=POLL)
    wait.until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    driver.find_elements(By.CSS_SELECTOR, "#record-list a")[0].click()
    wait.until(lambda d: d.find_element(By.ID, "position").get_attribute("data-index") == "0")
    driver.find_element(By.ID, "next").click()
    m = driver.execute_script("""
      const box = (el) => el.getBoundingClientRect();
      return {vw: innerWidth, sw: document.documentElement.scrollWidth, board: box(document.getElementById('replay-board')),
              viewer: box(document.getElementById('viewer')),
              controls: [...document.querySelectorAll('.controls button')].map((b) => [box(b).width, box(b).height]),
              links: [...document.querySelectorAll('#record-list a')].map((a) => box(a).height)};""")
    assert m["sw"] <= m["vw"] == SIZES[driver.size_name][0] and m["viewer"]["right"] <= m["vw"] + 0.5
    assert abs(m["board"]["width"] - m["board"]["height"]) < 1
    if driver.size_name == "phone":
        assert m["board"]["width"] >= m["vw"] - 20 and m["board"]["right"] <= m["vw"]
        assert len(m["controls"]) == 4 and all(w >= TAP and h >= TAP for w, h in m["controls"])
        assert min(m["links"]) >= TAP
    else:
        assert m["board"]["width"] == pytest.approx(600, abs=1)


def test_the_league_page_fits_and_refreshes_its_data_in_place(driver, league_server, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    from policies.league.store import LeagueStore

    url, _, run = league_server
    driver.get(url + "league")
    wait = WebDriverWait(driver, WAIT, poll_frequency=POLL)
    for plot_id in ("rating-history", "head-to-head"):
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, f"#{plot_id} .main-svg")))
    m = driver.execute_script("""
      const box = (el) => el.getBoundingClientRect();
      // a text's outline on screen (four corners, rotated as drawn), for the overlap test below
      const texts = (sel) => [...document.querySelectorAll(sel)].map((t) => {
        const b = t.getBBox(), m = t.getScreenCTM();
        return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]].map(
          ([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]); });
      const section = document.getElementById('ranking-box').closest('section');
      return {vw: innerWidth, sw: document.documentElement.scrollWidth,
              section: box(section).right, rankingBox: box(document.getElementById('ranking-box')).right,
              table: box(document.getElementById('ranking')).right,
              nav: [...document.querySelectorAll('nav.site a')].map((a) => [a.textContent, box(a).height]),
              plotly: [...document.scripts].filter((s) => s.src).map((s) => new URL(s.src).pathname),
              size: document.documentElement.outerHTML.length,
              xticks: texts('#head-to-head .xtick text'), yticks: texts('#head-to-head .ytick text'),
              cells: texts('#head-to-head .heatmap-label text'),
              fonts: [...document.querySelectorAll('#ranking td')].map((td) => parseFloat(getComputedStyle(td).fontSize))};
    """)
    assert m["sw"] <= m["vw"] == SIZES[driver.size_name][0], "the league page is wider than the screen"
    assert m["rankingBox"] <= m["section"] and m["table"] <= m["rankingBox"] + 0.5, "the table spills out of its card"
    assert [name for name, _ in m["nav"]] == ["Play", "Replays", "League"]
    assert len(m["plotly"]) == 1 and m["plotly"][0].startswith("/vendor/plotly-") and m["size"] < 300_000
    assert min(m["fonts"]) >= 12

    def overlapping(shapes):
        """Pairs of outlines (convex, four corners each) that overlap by more than a pixel: no axis of either
        separates them (the separating axis test), rotated labels included."""
        def apart(a, b):
            for shape in (a, b):
                for (x1, y1), (x2, y2) in zip(shape, shape[1:] + shape[:1]):
                    nx, ny = y1 - y2, x2 - x1
                    length = (nx * nx + ny * ny) ** 0.5 or 1
                    pa = [(x * nx + y * ny) / length for x, y in a]
                    pb = [(x * nx + y * ny) / length for x, y in b]
                    if max(pa) <= min(pb) + 1 or max(pb) <= min(pa) + 1:
                        return True
            return False

        return [(a, b) for i, a in enumerate(shapes) for b in shapes[i + 1:] if not apart(a, b)]

    assert len(m["xticks"]) == len(m["yticks"]) == 5 and len(m["cells"]) >= 10
    assert overlapping(m["xticks"]) == [] and overlapping(m["yticks"]) == []
    assert overlapping(m["cells"]) == []
    if driver.size_name == "phone":
        assert min(h for _, h in m["nav"]) >= TAP
    keep_screenshot(driver, tmp_path, "league")

    # a member joins while the page is open: the refresh shows it, and the page was not reloaded
    driver.execute_script("window.stayed = 1")
    with LeagueStore.open(run / "league.db", create=False) as store:
        name = f"late-{driver.size_name}"
        store.add_member(name, kind="bot", spec="fast")
    driver.execute_async_script("const done = arguments[0]; window.leagueRefresh().then(() => done(1), (e) => done(String(e)))")
    rows = [r.get_attribute("data-member") for r in driver.find_elements(By.CSS_SELECTOR, "#ranking tbody tr")]
    assert name in rows
    assert driver.execute_script("return [window.stayed, document.body.dataset.refreshed]") == [1, "1"]
    assert driver.find_elements(By.CSS_SELECTOR, "#head-to-head .main-svg")
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
