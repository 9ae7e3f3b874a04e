"""Write (or serve) the league leaderboard: one HTML page that opens offline.

    python launch/leaderboard.py league=outputs/train/<run>
    python launch/leaderboard.py league=outputs/train/<run>/league.db out=/tmp/board.html
    python launch/leaderboard.py league=outputs/train/<run> serve=true port=8765

Options are Hydra ``key=value`` overrides of ``conf/leaderboard.yaml``, typed by
`LeaderboardConfig` (``--help`` lists them with their defaults):

``league`` (required)
    A run folder (its ``league.db`` is read) or a league database file. The
    run's ``metrics.jsonl``, when the folder holding the database has one,
    gives the training curves.
``out``
    Where the page goes; default ``leaderboard.html`` beside the database. It
    is written to a temporary file and renamed into place, so a browser or a
    copy never sees half a page. Its path is printed.
``serve`` (default false; ``--serve`` is the same as ``serve=true``)
    After writing the page, serve it on http://127.0.0.1:<port>/ (this machine
    only) until Ctrl-C. Every request renders the page afresh from the
    database, and the page fetches itself again every `REFRESH_SECONDS`
    seconds and refreshes its data in place (no reload), so it follows a run
    while it trains. Only GET and HEAD of ``/`` and of
    ``/<name of out>`` are answered; other paths are 404, other methods 405.
``port``
    The port for ``serve`` (default 8765; 0 lets the system pick a free one,
    and the printed URL names it).

The page (`policies.league.leaderboard.render_html`) holds the ranking by
openskill mu, members within noise of each other sharing a rank (`ranked`),
with each member's 95% interval, kind, games, panel win
rate against random bots and status (evicted members stay, greyed), the
rating history over training iterations, the head-to-head matrix, and main's
evaluation win rates over environment steps.

Any user error (a missing or foreign database, an unknown key, a value of the
wrong type, a bad port, an unwritable output) prints one line to stderr and exits with status 2.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import launch  # noqa: F401  (first: it refuses a Python other than 3.11 in one line)

# isort: split
from hydra.core.config_store import ConfigStore

from launch.cli import (
    PORTS,
    UserError,
    catch_interrupts,
    check_output,
    compose_options,
    emit,
    fail,
    options_help,
    parse_port,
    read_jsonl,
    stop_interrupted,
    write_text,
)

HOST = "127.0.0.1"  # the page shows run details: never offered beyond this machine
DEFAULT_PORT = 8765
REFRESH_SECONDS = 30
PAGE_NAME = "leaderboard.html"
METRICS_NAME = "metrics.jsonl"
SERVE_FLAG = "--serve"
"""The flag the command took before its options were Hydra's: the same as ``serve=true``."""


@dataclass
class LeaderboardConfig:
    league: str | None = None
    """A run folder (its league.db is read) or a league database file; required."""
    out: str | None = None
    """Where the page goes; null: leaderboard.html beside the database."""
    serve: bool = False
    """After writing the page, serve it on http://127.0.0.1:<port>/ until Ctrl-C, rendered afresh on every
    request."""
    port: int = DEFAULT_PORT
    """The port for serve; 0 lets the system pick a free one."""

    RANGES: ClassVar[dict[str, tuple[int, int]]] = {"port": PORTS}
    """What `parse_port` allows, which the reference page shows."""


ConfigStore.instance().store(name="leaderboard_schema", node=LeaderboardConfig)


def parse(argv: list[str]) -> LeaderboardConfig:
    """The settings from key=value arguments (``--serve`` is ``serve=true``); every problem a `UserError`."""
    cfg: LeaderboardConfig = compose_options(
        "leaderboard", ["serve=true" if arg == SERVE_FLAG else arg for arg in argv], LeaderboardConfig,
        "leaderboard")
    if not cfg.league:
        raise UserError("league= is required: give a run folder or a league.db file")
    cfg.port = parse_port(cfg.port)
    return cfg


def read_metrics(path: Path, warned: set | None = None) -> list[dict[str, Any]] | None:
    """The run's metrics rows, or None without a metrics file. A line that is not UTF-8 or not a JSON object is
    left out with a one-line warning naming the file and the line (`launch.cli.read_jsonl`); a run being written
    can end in half a line, left out quietly."""
    if not path.is_file():
        return None
    try:
        return read_jsonl(path, "metrics row", warned)
    except OSError as err:
        raise UserError(f"{path}: cannot read the run's metrics ({err.strerror or err})") from None


class Board:
    """One league database and where its page goes; `render` reads the database afresh each time."""

    def __init__(self, league: str, out: str | None):
        from policies.league.store import DB_NAME, LeagueStore, LeagueStoreError

        path = Path(league)
        self.db_path = path / DB_NAME if path.is_dir() else path
        # before the database is opened: a reader of a WAL database leaves its -wal and -shm files
        self.out = check_output(Path(out) if out else self.db_path.parent / PAGE_NAME, "out")
        try:
            # a wrong path fails here, as one line
            LeagueStore.open(self.db_path, create=False, read_only=True).close()
        except LeagueStoreError as err:
            raise UserError(str(err)) from None
        self.metrics_path = self.db_path.parent / METRICS_NAME
        self.warned: set = set()  # metrics lines already warned of: the server renders the page again and again
        run = self.db_path.parent.name if self.db_path.name == DB_NAME else self.db_path.stem
        self.title = f"League leaderboard: {run}"

    def render(self, refresh_seconds: int | None = None, **page: Any) -> str:
        """The page (`policies.league.leaderboard.render_html`, `page` its keyword options) from the database as
        it is now."""
        from policies.league.leaderboard import render_html
        from policies.league.store import LeagueStore

        # a connection per render: the server answers on several threads, and sqlite3 connections stay on one
        with LeagueStore.open(self.db_path, create=False, read_only=True) as store, store.snapshot():
            return render_html(store, read_metrics(self.metrics_path, self.warned), self.title, refresh_seconds,
                               **page)

    def write(self) -> Path:
        page = self.render()
        try:
            write_text(self.out, page)  # a temporary file beside the target, then a rename
        except OSError as err:
            raise UserError(f"out={self.out}: cannot write the page there ({err.strerror or err})") from None
        return self.out


def handler(board: Board) -> type[BaseHTTPRequestHandler]:
    paths = {"/", f"/{board.out.name}"}

    class Handler(BaseHTTPRequestHandler):
        server_version = "ludo-league-leaderboard"

        def _page(self, send_body: bool) -> None:
            if self.path.split("?", 1)[0] not in paths:
                self.send_error(HTTPStatus.NOT_FOUND)
                return
            try:
                body = board.render(REFRESH_SECONDS).encode("utf-8")
            except Exception as err:  # noqa: BLE001  (any render failure: see below)
                # the database can vanish or stay locked mid-run: say so in the log and keep serving
                self.log_error("render failed: %s", (str(err) or type(err).__name__).splitlines()[0])
                self.send_error(HTTPStatus.INTERNAL_SERVER_ERROR, "the leaderboard could not be rendered")
                return
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            if send_body:
                self.wfile.write(body)

        def do_GET(self) -> None:
            self._page(send_body=True)

        def do_HEAD(self) -> None:
            self._page(send_body=False)

        def _refuse(self) -> None:
            self.send_response(HTTPStatus.METHOD_NOT_ALLOWED)
            self.send_header("Allow", "GET, HEAD")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def __getattr__(self, name: str):
            # http.server answers a method it has no do_<METHOD> for with 501; this page is read-only, so 405
            if name.startswith("do_"):
                return self._refuse
            raise AttributeError(name)

    return Handler


def serve(board: Board, port: int) -> None:
    try:
        server = ThreadingHTTPServer((HOST, port), handler(board))
    except OSError as err:
        raise UserError(f"port={port}: cannot serve on {HOST} ({err.strerror})") from None
    server.daemon_threads = True  # an open keep-alive connection must not hold up Ctrl-C
    # Started in the background by a shell (`cmd &`), a process inherits SIGINT ignored; "Ctrl-C stops" must hold.
    catch_interrupts()
    print(f"serving http://{HOST}:{server.server_address[1]}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    print("stopped", flush=True)


def main(argv: list[str]) -> None:
    if any(a in ("-h", "--help") for a in argv):
        emit(options_help(__doc__, "leaderboard", LeaderboardConfig))
        return
    cfg = parse(argv)
    board = Board(cfg.league, cfg.out)
    emit(f"leaderboard: {board.write()}")
    if cfg.serve:
        serve(board, cfg.port)


if __name__ == "__main__":
    catch_interrupts()  # Ctrl-C while the page is rendered or written: one line and 130 (serving, it stops with 0)
    try:
        main(sys.argv[1:])
    except UserError as err:
        fail(err)
    except KeyboardInterrupt:
        stop_interrupted("leaderboard.py stopped; a page not finished is not written")
