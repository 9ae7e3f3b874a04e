"""Play Ludo in the browser against any agent, replay recorded games, and see the league: one local site.

    python launch/serve.py
    python launch/serve.py agents='[ckpt:outputs/train/<run>,search:outputs/train/<run>?depth=2]' port=8000
    python launch/serve.py league=outputs/train/<run> replays='[outputs/play/records.jsonl]'

Then open the printed address (http://127.0.0.1:8000/ by default).

Options are Hydra ``key=value`` overrides of ``conf/serve.yaml``, typed by
`ServeConfig` (``--help`` lists them with their defaults). A list is ``[a,b]``;
``agents=ckpt:a,search:b?depth=2`` (bare, or a spec holding ``?``, ``&`` or
``=``) is taken as that list too.

``agents``
    Player specs the server loads and offers as opponents, beside the seed
    bots (`policies.players`: ``ckpt:<path>``, ``search:<path>?depth=2``,
    ``mcts:<path>?sims=64``, ``py:package.module:Class``), as a list
    ``[a,b]``. Each is loaded once at start-up; a bad one stops the server.
``league``
    A league run folder (its ``league.db``) or database: its active members
    are offered as opponents, read afresh on each request so a running
    training's new members appear. A learned member plays from the league's
    own files, its paths taken relative to the database's folder as the
    league takes them (a snapshot's weights in ``<run>/league/<name>/``);
    ``main`` is the run's newest checkpoint's policy (``best/`` before the
    first), and is not offered while the run has neither; a member whose
    weights are gone is not offered. ``/league`` serves its leaderboard
    (`policies.league.leaderboard`), rendered from a read-only connection on
    every request, under the site's header; the page refreshes its data in
    place every 30 s, and plotly.js comes once, as a cached file. A game
    that a person played under a name (the play page's name field: 1-32
    letters, digits, spaces, ``.``, ``_`` or ``-``; the name's first game
    claims it for that browser, below) against league members
    only (a seed bot counts when the league has it as a bot member) is rated
    when it ends, within the limits below: the person is member ``human:<name>``, of kind ``human``,
    ranked with the agents and never picked by training; a game against any
    other opponent, or one whose agent was replaced, is not rated, and the
    game's end says so. Rating a first person migrates a schema 1 league.db
    to schema 2 (kind human allowed).
``records`` (default ``outputs/serve/records``)
    Every finished game is written here as ``<time>-<id>.jsonl`` in the
    `policies.records` format: every decision, the person's (player
    ``human``) and the agents' (their spec), with the position and die. The
    person's decisions alone also go to ``human/<time>-<id>.jsonl``, what
    ``python launch/train.py +exp=imitate variant=<the games' variant>
    'algo.records=[<files>]'`` learns from. Files are written whole and renamed into place.
    Unfinished games are kept in ``games.db`` there (SQLite: the seed,
    rules, seats, opponents' ids and every roll and move so far, one
    transaction per action) and come back, replayed from the seed, when the
    server starts again; an opponent no longer offered then is played by the
    ``random`` bot, and the game says so. The start page lists the
    unfinished games of the browser that started them (a token in its
    localStorage) with a link to resume each.
``replays``
    More record files for the replay viewer (``launch/play.py`` or
    ``launch/evaluate.py record=`` output), as a list ``[a,b]``.
``move_seconds`` (default 10)
    How long an agent may take for one move (its first move, which may
    compile, up to 120 s). An agent that raises, answers a token that cannot
    move or runs out of time loses its seat in that game to the ``random``
    bot, and the page says so; the game goes on. ``0`` or ``null`` (``none``): no limit.
``host`` (default 127.0.0.1, this machine only) and ``port`` (default 8000;
    0 picks a free one, and the printed address names it).
``trusted_proxies`` (default none)
    The reverse proxies in front of the site, as a list of IP addresses or
    networks (``[127.0.0.1]``, ``[10.0.0.0/8,::1]``). An address is what
    the limits below count, so it is the connection's own unless it comes
    from one of these: then it is the right-most address of the request's
    X-Forwarded-For that is not a trusted proxy. Without it every proxy
    header (X-Forwarded-For, Forwarded, X-Real-IP) is ignored, so no client
    can name its own address (docs/pages/how-to/play.md: behind a proxy).

What any visitor can store or rate is bounded (whole numbers; docs/pages/concepts/security.md says what is protected and
why):

``rated_per_name`` (default 20) and ``rated_per_address`` (default 60)
    Rated games one name, and one address (the browser's IP address), may
    have in an hour; a game past either is played and recorded, not rated,
    and its end says so. Counted in the league, so they hold across restarts.
``new_names`` (default 30)
    Names that may be claimed in an hour. With a league, a name is claimed by
    its first game: the server gives that browser a secret (kept in its
    localStorage) that every later game under the name must bring, so no one
    else plays rated games as that person. A new name past the cap is refused
    (429).
``games_per_browser`` (default 10), ``games_per_address`` (default 100) and ``games_total`` (default 2000)
    Unfinished games kept (games.db) for one browser (its player token, or its
    address), one address and the whole server. A new game past a cap
    expires the oldest unfinished game under it that no one has played for
    ``idle_minutes`` (default 60), or is refused with 429. Past
    ``games_total``, the address with the most unfinished games gives way
    first (its oldest game) while it has more than the new game's address: a
    fair share per address, so an address with no game can always start one.
``records_kept`` (default 5000) and ``records_mb`` (default 500)
    Finished games' record files kept in ``records`` (their ``human/`` copies
    counted in the megabytes): as each new one is written, the oldest go,
    with their ``human/`` copies, until both hold. Only files the site names
    ``<time>-<id>.jsonl`` are counted or removed.

One server at a time serves a records folder: it holds an exclusive lock on
the folder itself while it runs (``<records>/serve.lock`` names its pid), and
a second one on the same folder stops at once in one line, even when
``serve.lock`` was deleted (two would both restore the same games and rate
them twice). A rated game is
keyed by its id in the league, so a game played again after a failure is rated
once. When games.db vanishes or cannot be written while the server runs, the
log says so once and every game's page warns that its game is kept in memory
only.

Every open tab of a game follows the server: after any refused request it
takes the game's view again, and while idle it polls the game's version
(``GET /api/games/<id>/version``, its count of rolls and moves) every 1.5 s.

Pages: ``/`` plays, ``/replay`` steps through any listed record with the
board, die, move and, for a learned agent this server loaded, its move
probabilities or values; ``/league`` is the leaderboard. The browser sends
only ids from the server's lists, never a spec or a path.

A bad argument (an unknown key, a value of the wrong type), an unknown opponent spec, a league folder that is not one, a
records folder another server holds or a port in use prints one line to stderr
and exits 2. Ctrl-C (or SIGTERM) stops the server within a few seconds, even
with a move in progress: it prints ``stopped`` and exits 130 (143 for
SIGTERM); before it serves (while it loads agents or restores games), Ctrl-C
stops it in one line with 130.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import os
import signal
import socket
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import launch  # noqa: F401  (first: it refuses a Python other than 3.11 in one line)

# isort: split
from hydra.core.config_store import ConfigStore

from launch.cli import (
    PORTS,
    UserError,
    catch_interrupts,
    compose_options,
    emit,
    fail,
    options_help,
    parse_port,
    stop_interrupted,
)
from launch.web.site import DEFAULT_MOVE_SECONDS, Limits

HOST = "127.0.0.1"
STOP_SECONDS = 3  # for requests in flight after Ctrl-C; a move stuck in an agent is not waited for
MAX_LIMIT = 1_000_000
MAX_MOVE_SECONDS = 86400
LOCK_NAME = "serve.lock"
UNLIMITED_FROM_ZERO = ("rated_per_name", "rated_per_address", "new_names", "idle_minutes")
"""Limits that may be 0 (no rated games, no new names, expire at once); the caps on unfinished games must let a
game be played."""

os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")  # as launch/play.py, for the same reason


@dataclass
class ServeConfig:
    agents: list[str] = field(default_factory=list)
    """Player specs loaded at start-up and offered as opponents beside the seed bots: ckpt:<path>,
    search:<path>?depth=2, mcts:<path>?sims=64, rollout:<player spec>?n=16, py:package.module:Class."""
    league: str | None = None
    """A league run folder (its league.db) or database: its active members are offered, /league shows its
    leaderboard, and a person's games against its members are rated."""
    records: str = "outputs/serve/records"
    """Folder of every finished game's record, of the person's own decisions (human/) and of the unfinished games
    (games.db); one server at a time holds it (serve.lock)."""
    replays: list[str] = field(default_factory=list)
    """More record files for the replay viewer (launch/play.py or launch/evaluate.py record= output)."""
    move_seconds: float | None = DEFAULT_MOVE_SECONDS
    """Seconds an agent may take for one move (its first, which may compile, up to 120); 0 or null: no limit.
    An agent that fails or runs out of time loses its seat to the random bot."""
    host: str = HOST
    """The address to serve on; the default serves this machine only."""
    port: int = 8000
    """The port; 0 picks a free one (the printed address names it)."""
    trusted_proxies: list[str] = field(default_factory=list)
    """IP addresses or networks of the reverse proxies in front of the site: only from these is X-Forwarded-For
    believed (its right-most untrusted address); none: every proxy header is ignored."""
    rated_per_name: int = Limits.rated_per_name
    """Rated games one name may have in an hour; a game past it is played and recorded, not rated (0: none)."""
    rated_per_address: int = Limits.rated_per_address
    """Rated games one address (the browser's IP address) may have in an hour, whatever names it plays under."""
    new_names: int = Limits.new_names
    """Names that may be claimed in an hour (a name is claimed by its first game); a new name past it is
    refused (429)."""
    games_per_browser: int = Limits.games_per_browser
    """Unfinished games kept for one browser (its player token, or its address)."""
    games_per_address: int = Limits.games_per_address
    """Unfinished games kept for one address."""
    games_total: int = Limits.games_total
    """Unfinished games kept for the whole server."""
    idle_minutes: int = Limits.idle_minutes
    """A new game past a cap expires the oldest unfinished game under it that no one has played for this long,
    or is refused (429)."""
    records_kept: int = Limits.records_kept
    """Finished games' record files kept in records/; past it the oldest go, with their human/ copies."""
    records_mb: int = Limits.records_mb
    """Megabytes the finished games' record files (human/ included) may take; past it the oldest go."""

    RANGES: ClassVar[dict[str, tuple[int, int]]] = {
        "port": PORTS, **{key: (0 if key in UNLIMITED_FROM_ZERO else 1, MAX_LIMIT) for key in Limits.names()}}
    """What each numeric setting allows (`parse` checks these, the reference page shows them)."""
    ALLOWED: ClassVar[dict[str, str]] = {
        "move_seconds": f"seconds in (0, {MAX_MOVE_SECONDS}], or 0 or null: no limit",
        "trusted_proxies": "IP addresses or networks, as [127.0.0.1] or [10.0.0.0/8,::1]"}


ConfigStore.instance().store(name="serve_schema", node=ServeConfig)


def parse(argv: list[str]) -> dict[str, Any]:
    """The settings from key=value arguments, each checked: a `UserError` of one line otherwise. ``move_seconds``
    0 is None (no limit)."""
    cfg: ServeConfig = compose_options("serve", argv, ServeConfig, "serve")
    cfg.port = parse_port(cfg.port)
    cfg.move_seconds = check_move_seconds(cfg.move_seconds)
    for key in Limits.names():
        check_limit(key, getattr(cfg, key))
    cfg.trusted_proxies = check_trusted_proxies(cfg.trusted_proxies)
    return dataclasses.asdict(cfg)


def check_trusted_proxies(values: list[str]) -> list[str]:
    """``trusted_proxies``: each an IP address or network (``10.0.0.0/8``), as `ipaddress` writes it."""
    import ipaddress

    out = []
    for value in values:
        try:
            out.append(str(ipaddress.ip_network(str(value).strip(), strict=False)))
        except ValueError:
            raise UserError(f"trusted_proxies=[{str(value)[:60]}] is not allowed: give IP addresses or networks of "
                            "the proxies in front of the site, as [127.0.0.1] or [10.0.0.0/8,::1]") from None
    return out


def check_limit(key: str, value: int) -> int:
    """A limit of `Limits`: a whole number in its range (`UNLIMITED_FROM_ZERO` from 0, the others from 1)."""
    low, high = ServeConfig.RANGES[key]
    if not low <= value <= high:
        raise UserError(f"{key}={value} is not allowed: give a whole number in {low}..{MAX_LIMIT}")
    return value


def check_move_seconds(seconds: float | None) -> float | None:
    """``move_seconds``: a positive number of seconds, or 0/null for no limit (None)."""
    if seconds is None or seconds == 0:
        return None
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_MOVE_SECONDS):
        raise UserError(f"move_seconds={seconds:g} is not allowed: give a number of seconds above 0 and at most "
                        f"{MAX_MOVE_SECONDS}, or 0 or null for no limit")
    return seconds


def build_site(args: dict[str, Any]):
    """The site's opponents, records folder and league, every one checked now."""
    from launch.leaderboard import Board
    from launch.web.site import Site
    from policies.players import PlayerSpecError, bot_names

    # Loading a ckpt: agent, RLlib warns that its own catalog code uses a constructor it deprecates.
    logging.getLogger("ray._common.deprecation").setLevel(logging.ERROR)
    for spec in args["agents"]:
        if spec.startswith(("bot:", "league:")) or spec in bot_names():
            raise UserError(f"agents=[{spec}]: the seed bots are offered already; agents take "
                            "ckpt:, search:, mcts: or py: specs")
    league = Board(args["league"], None) if args["league"] else None  # a folder that is no league: UserError
    replays = []
    for name in args["replays"]:
        path = Path(name)
        if not path.is_file():
            raise UserError(f"replays=[{name}]: no such record file")
        replays.append(path.resolve())
    records = Path(args["records"])
    try:
        records.mkdir(parents=True, exist_ok=True)
        (records / "human").mkdir(exist_ok=True)
    except OSError as err:
        raise UserError(f"records={records}: cannot make the folder ({err.strerror})") from None
    if not os.access(records, os.W_OK):
        raise UserError(f"records={records}: the folder is not writable")
    hold_records_lock(records)
    limits = Limits(**{key: args[key] for key in Limits.names()})
    site = Site(records.resolve(), args["agents"], league, replays, move_seconds=args.get("move_seconds"),
                limits=limits, trusted_proxies=args.get("trusted_proxies"))
    try:
        site.load_agents()  # now: a bad spec is a start-up error, not a failed game later
    except PlayerSpecError as err:
        raise UserError(str(err)) from None
    return site


_LOCK_FILES: list[int] = []  # open for the process's life: the lock goes with the process, however it ends


def hold_records_lock(records: Path) -> None:
    """Hold the records folder for this process: an exclusive flock on the folder itself, through a descriptor
    open for the process's life (the system releases it when the process ends, even killed). The lock is on the
    folder, not on a file's name, so deleting ``serve.lock`` lets no second server in; the file only tells a
    second server the holder's pid. Held by another server: one line."""
    import fcntl

    try:
        folder = os.open(records, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise UserError(f"records={records}: cannot open the folder ({err.strerror})") from None
    try:
        fcntl.flock(folder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(folder)
        try:
            holder = (records / LOCK_NAME).read_text()[:20].strip()
        except (OSError, UnicodeDecodeError):
            holder = ""
        raise UserError(f"records={records}: another serve.py{f' (pid {holder})' if holder.isdigit() else ''} is "
                        "serving this folder; two would restore the same games and rate them twice: stop it, or "
                        "give another records=") from None
    _LOCK_FILES.append(folder)
    try:  # who holds it, for the next server's message; the lock itself does not need the file
        fd = os.open(records / LOCK_NAME, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w") as handle:
            handle.write(f"{os.getpid()}\n")
    except OSError:
        pass  # a link or a read-only file in its place: the lock holds all the same


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, made here so that a port in use is one line, not uvicorn's log and exit 1."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as err:
        raise UserError(f"host={host}: not an address of this machine ({err.strerror})") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as err:
        sock.close()
        raise UserError(f"port={port}: cannot serve on {host} ({err.strerror})") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def warm_up() -> None:
    """Compile the engine's kernels (or load them from numba's cache) before the first click waits on it."""
    import numpy as np

    from ludo_env.engine import Game
    from ludo_env.rules import Rules
    from policies.players import make_player

    game = Game(Rules.load("classic"), seed=0)
    bot = make_player("random")
    for _ in range(100):
        if game.over:
            break
        game.roll()
        if game.awaiting_move:
            game.move(int(bot.act(game.state[None].copy(), game.table, game.legal_mask()[None].astype(np.int8))[0]))


def main(argv: list[str]) -> None:
    if any(a in ("-h", "--help") for a in argv):
        emit(options_help(__doc__, "serve", ServeConfig))
        return
    args = parse(argv)
    site = build_site(args)
    sock = bind(args["host"], args["port"])
    import uvicorn

    from launch.web.app import create_app, one_line_h11_protocol

    logging.basicConfig(level=logging.INFO, format="%(message)s")  # restoring games is said as it happens
    app = create_app(site)  # restores the unfinished games of games.db
    warm_up()
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    emit(f"serving http://{shown}:{port}/ (Ctrl-C stops); records go to {site.records}")
    # uvicorn's own proxy headers are off: it would believe X-Forwarded-For from 127.0.0.1 (its default), so
    # any local script could be any number of addresses; the site reads them itself, from trusted_proxies only.
    config = uvicorn.Config(app, log_level="warning", access_log=False, http=one_line_h11_protocol(),
                            proxy_headers=False, forwarded_allow_ips="")
    server = uvicorn.Server(config)
    code = serve_until_stopped(server, sock)
    # The real stdout: a py: bot's call still in flight has sys.stdout pointed at stderr (policies.players).
    print("stopped", file=sys.__stdout__, flush=True)
    sys.stderr.flush()
    # Not sys.exit: the threads of requests in flight cannot be stopped, and a move stuck in an agent's code
    # would keep the process alive. Every finished game's record is already renamed into place.
    os._exit(code)


def serve_until_stopped(server, sock: socket.socket) -> int:
    """Serve in a thread until Ctrl-C or SIGTERM, then give requests in flight `STOP_SECONDS`; the exit status.

    uvicorn in the main thread would catch the signals itself and then, on its way out, wait for every request
    thread, an agent stuck in a move's included, so that Ctrl-C did not stop it; in another thread it leaves
    signals alone, and this thread keeps them."""
    got: list[int] = []
    stop = threading.Event()

    def on_signal(signum, _frame):
        got.append(signum)
        stop.set()

    # Started in the background by a shell (`cmd &`), a process inherits SIGINT ignored; Ctrl-C must still stop.
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="uvicorn", daemon=True)
    thread.start()
    while thread.is_alive() and not stop.wait(0.5):
        pass
    if not got:
        print("error: the server stopped by itself; see the lines above", file=sys.stderr, flush=True)
        return 1
    server.should_exit = True
    thread.join(STOP_SECONDS)
    return 128 + got[0]


if __name__ == "__main__":
    catch_interrupts()  # Ctrl-C before serving (loading agents, restoring games): one line, not a traceback
    try:
        main(sys.argv[1:])
    except UserError as err:
        fail(err)
    except KeyboardInterrupt:
        stop_interrupted("serve.py stopped before it served; unfinished games stay in games.db")
