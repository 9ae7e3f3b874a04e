"""The leaderboard on a small real league: the ranking, the page's parts, the CLI and its server."""
from __future__ import annotations

import html
import json
import os
import re
import select
import signal
import sqlite3
import subprocess
import sys
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

from launch.leaderboard import read_metrics
from policies.league.leaderboard import COLUMNS, MISSING, PLOT_IDS, ranking, ranking_table, render_html
from policies.league.ratings import clearly_ahead
from policies.league.store import LeagueStore
from tests.league.conftest import ODD_NAME

ROOT = Path(__file__).resolve().parents[2]
PLOTLY_BANNER = "plotly.js v"  # the first line of the bundled library


@pytest.fixture
def store(league_db):
    with LeagueStore.open(league_db, create=False) as opened:
        yield opened


@pytest.fixture
def metrics(league_db):
    return read_metrics(league_db.parent / "metrics.jsonl")


def table_rows(page: str) -> list[str]:
    body = re.search(r'<table id="ranking">.*?<tbody>(.*?)</tbody>', page, re.DOTALL).group(1)
    return re.findall(r"<tr [^>]*>", body)


# ---------------------------------------------------------------------------- ranking
def test_ranking_has_every_member_strongest_first_with_the_columns(store):
    rows = ranking(store)
    members = {m.name: m for m in store.members()}
    assert sorted(r["name"] for r in rows) == sorted(members)
    assert all(tuple(r) == COLUMNS for r in rows)
    # a shared rank: 1 + the members clearly rated above; rows by rank, then mu
    ratings = {r["name"]: (r["mu"], r["sigma"]) for r in rows}
    for r in rows:
        assert r["rank"] == 1 + sum(clearly_ahead(other, ratings[r["name"]]) for other in ratings.values())
    assert [(r["rank"], -r["mu"]) for r in rows] == sorted((r["rank"], -r["mu"]) for r in rows)
    assert rows[0]["rank"] == 1 and rows[0]["mu"] == max(r["mu"] for r in rows)
    for r in rows:
        m = members[r["name"]]
        assert (r["kind"], r["mu"], r["sigma"], r["iteration"], r["active"]) == (
            m.kind, m.mu, m.sigma, m.iteration, m.active)
        assert r["ordinal"] == pytest.approx(m.mu - 3 * m.sigma)
    # hybrid beats random over 72 games by a wide margin, whatever the dice
    order = [r["name"] for r in rows]
    assert order.index("bot:hybrid") < order.index("bot:random")


def test_ranking_counts_games_marks_the_evicted_and_reads_the_panel(store):
    played = Counter(member for match in store.matches() for member in set(match.seats))
    rows = {r["name"]: r for r in ranking(store)}
    for name, row in rows.items():
        assert row["games"] == played[store.member(name).id] > 0
    assert rows["bot:random"]["games"] == sum(played.values()) // 4 == len(store.matches())  # in every game
    for name, row in rows.items():  # per game, the share of the other three seats it finished ahead of
        games = [m for m in store.matches() if store.member(name).id in m.seats]
        scores = [sum(m.places[m.seats.index(store.member(name).id)] < p for p in m.places) / 3 for m in games]
        assert row["ahead_of_field"] == pytest.approx(sum(scores) / len(scores))
    assert [n for n, r in rows.items() if not r["active"]] == [ODD_NAME]
    panel = store.member("bot:hybrid-2").panel["random"]
    assert rows["bot:hybrid-2"]["win_rate_vs_random"] == panel["win_rate"]
    assert rows["bot:hybrid-2"]["iteration"] == 30
    assert all(r["win_rate_vs_random"] is None for n, r in rows.items() if n != "bot:hybrid-2")


def test_members_within_noise_share_a_rank_and_one_that_never_played_has_none(tmp_path):
    """Near-equals are not ordered by luck: the page and the rows say they are tied, and a sharp rating below
    them is not put above because its sigma is small (as ordering by mu - 3 sigma did)."""
    with LeagueStore.open(tmp_path / "league.db") as store:
        ids = {name: store.add_member(name, kind="snapshot", spec="random").id
               for name in ("sharp", "main-like", "close", "weak", "new")}
        round_id = store.add_round("training", "classic", iteration=10)
        store.add_matches(round_id, "classic", [((ids["sharp"], ids["main-like"], ids["close"], ids["weak"]),
                                                 (1, 2, 3, 4))])
        store.set_ratings(round_id, {ids["main-like"]: (33.0, 1.4), ids["close"]: (32.0, 0.6),
                                     ids["sharp"]: (29.6, 0.15), ids["weak"]: (26.0, 0.5), ids["new"]: (40.0, 8.3)})
        rows = ranking(store)
        page = render_html(store, None, "ties")
    assert [(r["name"], r["rank"]) for r in rows] == [("main-like", 1), ("close", 1), ("sharp", 3), ("weak", 4),
                                                      ("new", None)]
    # by ordinal, sharp (29.15) would have led main-like (28.8), whose interval lies wholly above sharp's
    assert rows[2]["ordinal"] > rows[0]["ordinal"]
    cells = re.findall(r'<tr data-member="([^"]*)"[^>]*><td class="num">([^<]*)</td>', page)
    assert cells == [("main-like", "1"), ("close", "1"), ("sharp", "3"), ("weak", "4"), ("new", MISSING)]
    assert "30.26 to 35.74" in page  # main-like's mu with its 95% interval


def test_ranking_of_an_empty_league_is_empty(tmp_path):
    with LeagueStore.open(tmp_path / "league.db") as empty:
        assert ranking(empty) == []
        page = render_html(empty, None, "empty")
    assert table_rows(page) == [] and "No members yet." in page
    for plot_id in PLOT_IDS:
        assert f'id="{plot_id}" class="plot empty"' in page


def test_a_panel_without_a_usable_win_rate_shows_as_missing(tmp_path):
    with LeagueStore.open(tmp_path / "league.db") as league:
        league.add_member("no-games", kind="bot", spec="random",
                          panel={"random": {"win_rate": float("nan"), "ci95": [float("nan")] * 2, "games": 0}})
        league.add_member("no-random", kind="bot", spec="fast", panel={"hybrid": {"win_rate": 0.3}})
        assert [r["win_rate_vs_random"] for r in ranking(league)] == [None, None]
        page = render_html(league, None, "nan")
    table = page[page.index('<table id="ranking">'):page.index("</table>")]
    # per member: rank and ahead of field (no games), win vs random, iteration
    assert "nan" not in table.lower() and table.count(f'<td class="num">{MISSING}</td>') == 8


def test_ranking_table_is_a_wandb_table_of_the_ranking(store):
    table = ranking_table(ranking(store))
    assert list(table.columns) == list(COLUMNS)
    assert [row[1] for row in table.data] == [r["name"] for r in ranking(store)]


# ---------------------------------------------------------------------------- page
def test_the_page_has_one_row_per_member_in_rank_order_and_each_plot(store, metrics):
    page = render_html(store, metrics, "run <x>")
    rows = table_rows(page)
    names = [html.unescape(re.search(r'data-member="([^"]*)"', tr).group(1)) for tr in rows]
    assert names == [r["name"] for r in ranking(store)]
    assert sum('class="evicted"' in tr for tr in rows) == 1
    for plot_id in PLOT_IDS:
        assert page.count(f'id="{plot_id}"') == 1
    assert "<title>run &lt;x&gt;</title>" in page
    assert f"{len(names)} members (4 active)" in page and str(store.path) in page
    assert MISSING in page and "65.0%" in page  # no panel for the bots; hybrid-2's win rate


def test_plotly_is_inlined_once_and_nothing_is_fetched(store, metrics):
    page = render_html(store, metrics, "offline")
    assert page.count(PLOTLY_BANNER) == 1
    assert page.count("Plotly.newPlot(") == len(PLOT_IDS)
    assert not re.search(r"<script[^>]*\ssrc=", page) and not re.search(r"<link[^>]*href=\"?https?:", page)
    assert "http-equiv=\"refresh\"" not in page and "data-refresh" not in page
    live = render_html(store, metrics, "live", refresh_seconds=30)
    # the page refreshes its data in place: no reload
    assert '<body data-refresh="30">' in live and "http-equiv=\"refresh\"" not in live
    for plot_id in PLOT_IDS:  # the figure the refresh hands to Plotly.react, beside each plot
        assert live.count(f'<script type="application/json" data-figure="{plot_id}">') == 1


def test_a_server_page_takes_plotly_from_its_address_and_has_the_sites_header(store, metrics):
    page = render_html(store, metrics, "served", 30, plotly_src="/vendor/plotly-1.min.js", site_nav=True)
    assert PLOTLY_BANNER not in page and len(page) < 200_000
    assert page.count('<script src="/vendor/plotly-1.min.js"></script>') == 1
    assert re.search(r'<nav class="site">.*href="/">Play</a>.*href="/replay">Replays</a>.*href="/league"', page)
    assert '<nav class="site">' not in render_html(store, metrics, "offline")


def test_member_names_are_escaped_everywhere(store, metrics):
    page = render_html(store, metrics, "escape")
    assert ODD_NAME not in page and "<b>ext</b>" not in page
    assert html.escape(ODD_NAME, quote=True) in page  # the table cell and the data-member attribute
    # plotly reads labels as HTML, so the plots get the escaped name too
    assert '"name":"&lt;b&gt;ext&lt;' in page


def test_training_curves_follow_the_eval_rows_or_leave_a_note(store, metrics):
    assert [r["iteration"] for r in metrics] == [1, 10, 20]  # the half-written last line is skipped
    page = render_html(store, metrics, "curves")
    data = re.search(r'Plotly.newPlot\(\s*"training-curves",\s*(\[.*?\]),\s*\{', page, re.DOTALL).group(1)
    traces = json.loads(data)
    assert [t["name"] for t in traces] == ["vs random", "vs hybrid"]
    assert traces[0]["x"] == [40960, 81920] and traces[0]["y"] == [0.31, 0.42]
    for no_eval in (None, [], metrics[:1]):
        page = render_html(store, no_eval, "no curves")
        assert 'id="training-curves" class="plot empty"' in page and "No evaluation rows" in page


def test_rating_history_uses_iterations_and_the_head_to_head_counts_shared_games(store, metrics):
    page = render_html(store, metrics, "history")
    data = re.search(r'Plotly.newPlot\(\s*"rating-history",\s*(\[.*?\]),\s*\{', page, re.DOTALL).group(1)
    traces = {t["name"]: t for t in json.loads(data)}
    assert traces["bot:random"]["x"] == [10, 20, 30] and traces["bot:hybrid-2"]["x"] == [30]
    assert traces["bot:random"]["y"][-1] == pytest.approx(store.member("bot:random").mu)
    assert "training iteration" in page
    data = re.search(r'Plotly.newPlot\(\s*"head-to-head",\s*(\[.*?\]),\s*\{', page, re.DOTALL).group(1)
    heat = json.loads(data)[0]
    i, j = heat["y"].index("bot:hybrid"), heat["x"].index("bot:random")
    ahead, games = map(int, heat["text"][i][j].split("<br>")[1].split("/"))
    assert games == len(store.matches()) and heat["z"][i][j] == pytest.approx(ahead / games)
    assert heat["z"][i][i] is None


def test_rating_history_without_iterations_uses_round_order(tmp_path):
    with LeagueStore.open(tmp_path / "league.db") as league:
        a = league.add_member("a", kind="bot", spec="random")
        for k in range(3):
            round_id = league.add_round("bots", "classic")
            league.set_ratings(round_id, {a.id: (25.0 + k, 8.0)})
        page = render_html(league, None, "rounds")
    data = re.search(r'Plotly.newPlot\(\s*"rating-history",\s*(\[.*?\]),\s*\{', page, re.DOTALL).group(1)
    assert json.loads(data)[0]["x"] == [1, 2, 3] and "rating round" in page


# ---------------------------------------------------------------------------- CLI
def leaderboard(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "launch/leaderboard.py", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, check=False)


def test_the_cli_writes_the_page_beside_the_database(league_db, tmp_path):
    run = leaderboard(f"league={league_db.parent}")
    page = league_db.parent / "leaderboard.html"
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"leaderboard: {page}\n"
    text = page.read_text()
    assert len(table_rows(text)) == 5 and 'class="plot empty"' not in text  # metrics.jsonl found
    out = tmp_path / "sub" / "board.html"
    run = leaderboard(f"league={league_db}", f"out={out}")
    assert run.returncode == 0 and out.is_file() and not list(out.parent.glob(".*.tmp"))


@pytest.mark.parametrize(
    "args,expected",
    [
        (["league={missing}"], "error: {missing}/league.db: no league database there (give a run folder"),
        (["league={missing}/league.db"], "error: {missing}/league.db: no league database there"),
        ([], "error: league= is required"),
        (["league={db}", "colour=red"], "error: argument 'colour=red' is not allowed"),
        (["league={db}", "port=http"], "error: port='http' is not allowed"),
        (["league={notdb}"], "error: {notdb}: not a league database"),
    ],
)
def test_user_errors_are_one_line_on_stderr_and_exit_2(league_db, tmp_path, args, expected):
    missing = tmp_path / "no-such-run"
    missing.mkdir()
    notdb = tmp_path / "notes.db"
    notdb.write_text("not sqlite, just text that is long enough to not be an empty database file\n" * 20)
    fill = {"missing": missing, "db": league_db, "notdb": notdb}
    run = leaderboard(*(a.format(**fill) for a in args))
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and run.stderr.startswith(expected.format(**fill)), run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""


def readline(proc: subprocess.Popen, timeout: float = 60) -> str:
    """The next line the process prints, failing instead of hanging when none comes. Read a byte at a time from the
    pipe: a buffered readline can take the next line too, which select then waits for in vain."""
    line = b""
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        assert ready, f"no output in {timeout} s"
        byte = os.read(proc.stdout.fileno(), 1)
        assert byte, f"the process closed its output after {line!r}"
        line += byte
    return line.decode()


def test_serve_answers_get_and_head_only_on_localhost_and_stops_on_ctrl_c(league_db, tmp_path):
    # a copy, since this test adds a member to show the page follows the database
    db = tmp_path / "league.db"
    with sqlite3.connect(league_db) as src, sqlite3.connect(db) as dst:
        src.backup(dst)
    out = tmp_path / "board.html"
    proc = subprocess.Popen([sys.executable, "launch/leaderboard.py", f"league={db}", f"out={out}",
                             "--serve", "port=0"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert readline(proc) == f"leaderboard: {out}\n"
        line = readline(proc)
        match = re.fullmatch(r"serving (http://127\.0\.0\.1:(\d+)/) \(Ctrl-C stops\)\n", line)
        assert match, line
        url = match.group(1)

        def request(path: str, method: str = "GET") -> tuple[int, bytes, dict]:
            data = b"x" if method == "POST" else None
            req = urllib.request.Request(url + path.lstrip("/"), method=method, data=data)
            try:
                with urllib.request.urlopen(req, timeout=30) as response:
                    return response.status, response.read(), dict(response.headers)
            except urllib.error.HTTPError as err:
                return err.code, err.read(), dict(err.headers)

        status, body, headers = request("/")
        assert status == 200 and headers["Content-Type"].startswith("text/html")
        page = body.decode()
        assert len(table_rows(page)) == 5 and '<body data-refresh="30">' in page
        assert request("/board.html")[0] == 200
        status, body, headers = request("/", "HEAD")
        assert status == 200 and body == b"" and int(headers["Content-Length"]) > 1_000_000
        status, _, headers = request("/", "POST")
        assert status == 405 and headers["Allow"] == "GET, HEAD"
        assert request("/", "DELETE")[0] == 405 and request("/", "BREW")[0] == 405
        assert request("/league.db")[0] == 404 and request("/../league.db")[0] == 404

        # the page follows the database: a member added now is on the next request
        with LeagueStore.open(db, create=False) as live:
            live.add_member("late-joiner", kind="bot", spec="random")
        assert 'data-member="late-joiner"' in request("/")[1].decode()

        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        assert proc.stdout.read() == "stopped\n"
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
