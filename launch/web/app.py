"""The FastAPI app behind `launch/serve.py`: games against agents, records, replays and the league page.

The server owns everything that runs: the browser names an opponent by an id
from `Site.opponents` (a seed bot, an agent given on the command line, a league
member) and never sends a player spec, a path or code. Each game is an
engine-checked `ludo_env.engine.Game` on the server, behind its own lock, so
several browsers play at once without touching each other. The person rolls
and moves with ``POST /api/games/<id>/roll`` and ``/move``; the page asks for
the opponents' turns one at a time with ``/step``, at the speed the person
sets. A finished game's decisions, the person's and the agents', with their
dice, are written in the `policies.records` format to ``<records>/<game>.jsonl``
(the person's alone also to ``<records>/human/<game>.jsonl``), each file
written beside its place and renamed into it, so a file is whole or absent.
An unfinished game is kept in ``<records>/games.db`` (`launch.web.saved`) after each roll, move or opponent
turn, and is restored, its events replayed from the seed, when a server starts on that folder; the browser's
player token lists its own (``GET /api/saved``). Every view carries a ``version``, the game's count of events,
which a tab polls (``GET /api/games/<id>/version``) to follow a game played in another. With a league, a
finished game of a named person against league members only is rated there (`Site.rate`).

Every refusal is a 4xx with one line of JSON, ``{"error": "..."}``; so is a
malformed or unknown request. Nothing answers with a traceback.

The browser is not trusted: it names things only by ids from the lists the
server publishes (variants, opponents, games, record files), each looked up in
that list before anything is loaded; an error text repeats at most a short,
escaped prefix of what was sent; a body is at most `MAX_BODY_BYTES`. An agent
that raises, answers a token that cannot move or runs past the move time
limit loses its seat to the random bot for the rest of that game, and the
game's view says so: one bad agent cannot stop a game, nor hold up others.
"""
from __future__ import annotations

import functools
import json
import logging
import os
import re
import secrets
import threading
import time
import traceback
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from ludo_env.engine.layout import CURRENT

from launch.play import (
    COLOUR_NAMES,
    COLUMN_CELLS,
    CORNERS,
    HOME_CELLS,
    TRACK_CELLS,
    classic_geometry,
    describe_move,
    finishing_order,
    token_cell,
    where,
)

STATIC = Path(__file__).resolve().parent / "static"
VARIANT_DIR = Path(__file__).resolve().parents[2] / "conf" / "variant"
HUMAN = "human"  # the recorded player of the person's decisions, as launch/play.py records them
HUMAN_DIR = "human"
MAX_GAMES = 500  # games held in memory; the oldest finished ones go first
LEAGUE_REFRESH_SECONDS = 30  # the league page refreshes its data (not the page) this often


def _plotly_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("plotly")
    except PackageNotFoundError:
        return "unknown"


PLOTLY_ROUTE = f"/vendor/plotly-{_plotly_version()}.min.js"


def plotly_file() -> Path:
    """plotly.js as the installed plotly package ships it (what the standalone page inlines)."""
    import plotly

    return Path(plotly.__file__).resolve().parent / "package_data" / "plotly.min.js"
MAX_BODY_BYTES = 16 * 1024  # a new game's body is under 200 bytes
DEFAULT_MOVE_SECONDS = 10.0
# An agent's first move also compiles its kernels (numba's cache can be cold, torch warms up): it gets longer.
FIRST_MOVE_SECONDS = 120.0
SHOWN_CHARS = 40  # of a client's value in an error text
MAX_ERROR_CHARS = 300
HTTP_METHODS = {"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}
REPLACEMENT = "random"  # the bot that takes a failed agent's seat
HUMAN_MEMBER_PREFIX = "human:"  # a named person's league member: human:<name>
NAME_PATTERN = r"[A-Za-z0-9._-](?:[A-Za-z0-9 ._-]{0,30}[A-Za-z0-9._-])?"  # a person's name for the league
PLAYER_PATTERN = r"^[A-Za-z0-9_-]{8,64}$"  # the browser's player token (localStorage), for its games list
log = logging.getLogger("launch.serve")


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """A client's value for an error text: a short prefix, quoted and escaped to ASCII, so that neither a huge
    input nor a lone surrogate comes back (or into the log) whole."""
    if isinstance(value, str):
        return ascii(value[:limit]) + ("..." if len(value) > limit else "")
    text = ascii(value)  # a number or a JSON list: bounded by MAX_BODY_BYTES
    return text[:limit] + ("..." if len(text) > limit else "")


def one_line(err: BaseException, limit: int = 200) -> str:
    """An exception on one short line, for a game's notice and the log; a `PlayerError` already names what
    raised, anything else is prefixed with its type."""
    from policies.players import PlayerError

    text = " ".join(str(err).split())
    if not isinstance(err, PlayerError):
        text = f"{type(err).__name__}: {text}" if text else type(err).__name__
    return text[:limit] + ("..." if len(text) > limit else "")


class Refused(Exception):
    """A request the server will not carry out; `status` and one line saying why."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


# ------------------------------------------------------------------ opponents
@dataclass(frozen=True)
class Opponent:
    id: str
    """What the browser sends."""
    label: str
    kind: str
    """bot, agent or league."""
    spec: str
    """The `policies.players` spec; never leaves the server."""


def short_label(spec: str) -> str:
    """A spec short enough for a seat label: a path by its last folder, options kept."""
    for prefix in ("ckpt:", "search:", "mcts:"):
        if spec.startswith(prefix):
            path, sep, options = spec[len(prefix):].partition("?")
            return f"{prefix}{Path(path.rstrip('/')).name or path}{sep}{options}"
    return spec


class Site:
    """What the server was started with: opponents, the records folder, the league and extra record files."""

    def __init__(self, records: Path, agents: list[str] | None = None, league=None,
                 replays: list[Path] | None = None, move_seconds: float | None = DEFAULT_MOVE_SECONDS):
        from policies.players import bot_names

        self.records = records
        self.league = league  # a launch.leaderboard.Board, or None
        self.replays = list(replays or [])
        self.move_seconds = move_seconds  # an agent's time for one move; None: no limit
        self.bots = [Opponent(f"bot:{name}", name, "bot", name) for name in bot_names()]
        self.agents = [Opponent(f"agent:{k}", short_label(spec), "agent", spec) for k, spec in enumerate(agents or [])]
        self._loaded: dict[str, Any] = {}  # spec -> a loaded agent, shared by games
        # A loaded agent is asked by one game at a time (torch and search keep state); each has its own lock so
        # that a slow agent holds up only the games it plays in.
        self._agent_locks: dict[str, threading.Lock] = {}
        self._warmed: set[str] = set()  # specs of loaded agents that have made their first move
        self._load_lock = threading.Lock()
        self._league_error: str | None = None
        self._rate_lock = threading.Lock()
        from launch.web.saved import GameShelf

        try:
            self.shelf: GameShelf | None = GameShelf(records)  # unfinished games, kept across restarts
        except Exception as err:  # noqa: BLE001 - an unwritable folder: games are played, not kept
            log.error("unfinished games cannot be kept in %s: %s", records, one_line(err))
            self.shelf = None

    def league_members(self) -> list[Opponent]:
        """The league's active members, read afresh: a running training adds them as it goes. A database that
        cannot be read now (locked, replaced mid-run) offers none, and says so once in the log."""
        if self.league is None:
            return []
        from policies.league.store import LeagueStore

        try:
            with LeagueStore.open(self.league.db_path, create=False, read_only=True) as store:
                members = store.members(active_only=True)
        except Exception as err:  # noqa: BLE001 - the league is another process's file; the site goes on
            problem = one_line(err)
            if problem != self._league_error:
                log.error("league members cannot be read now: %s", problem)
            self._league_error = problem
            return []
        self._league_error = None
        folder = self.league.db_path.parent
        out = []
        for member in members:
            resolved = league_member_spec(member, folder)
            if resolved is None:  # main before its first checkpoint, a snapshot whose folder is gone: not playable
                continue
            spec, note = resolved
            out.append(Opponent(f"league:{member.name}", f"{member.name} ({member.kind}{note})", "league", spec))
        return out

    def rating_members(self, session: Session) -> dict[int, str] | str:
        """The league member name of each opponent seat of a finished game, or why the game is not rated."""
        from policies.players import bot_names

        if self.league is None:
            return "not rated: this server has no league"
        if not session.name:
            return "not rated: you gave no name"
        from policies.league.store import LeagueStore

        with LeagueStore.open(self.league.db_path, create=False, read_only=True) as store:
            members = store.members()
        out = {}
        for seat, opponent in session.opponents.items():
            if session.specs[seat] != opponent.spec:
                return f"not rated: {session.names[seat]}'s agent was replaced by {REPLACEMENT}"
            if opponent.kind == "league":
                name = opponent.id.partition(":")[2]
            elif opponent.kind == "bot":  # a seed bot that is a league member as a bot
                name = next((m.name for m in members if m.kind == "bot" and m.spec == opponent.spec
                             and opponent.spec in bot_names()), None)
            else:
                name = None
            if name is None or not any(m.name == name for m in members):
                return f"not rated: {opponent.label} is not a league member"
            out[seat] = name
        return out

    def rate(self, session: Session) -> str | None:
        """A finished game of a named person against league members, rated in the league: the person is member
        ``human:<name>`` (kind human), the game a match of its own rating round, every seat's openskill rating
        updated from it. What came of it, for the page; None without a league. One short transaction: a training
        run writes to the same database."""
        if self.league is None:
            return None
        from policies.league.ratings import rate_games
        from policies.league.store import LeagueStore

        try:
            seats = self.rating_members(session)
            if isinstance(seats, str):
                return seats
            name = f"{HUMAN_MEMBER_PREFIX}{session.name}"
            with self._rate_lock, LeagueStore.open(self.league.db_path, create=False) as store:
                with store.transaction():
                    person = store.ensure_member(name, kind="human", spec=HUMAN)
                    ids = [person.id if s == session.you else store.member(seats[s]).id
                           for s in range(session.rules.players)]
                    places = [int(p) for p in session.game.places]
                    round_id = store.add_round(label="human", variant=session.rules.name)
                    store.add_matches(round_id, session.rules.name, [(ids, places)])
                    current = {m: (store.member(m).mu, store.member(m).sigma) for m in ids}
                    store.set_ratings(round_id, rate_games([(ids, places)], current))
                    after = store.member(person.id)
            return f"rated in the league as {name}: mu {after.mu:.1f}, sigma {after.sigma:.1f}"
        except Exception as err:  # noqa: BLE001 - the league is another process's file: the game is recorded
            log.error("game %s could not be rated in the league: %s", session.id, one_line(err))
            return "not rated: the league database could not be written now"

    def opponents(self) -> list[Opponent]:
        return self.bots + self.agents + self.league_members()

    def opponent(self, opponent_id: Any) -> Opponent:
        if isinstance(opponent_id, str):
            for opponent in self.opponents():
                if opponent.id == opponent_id:
                    return opponent
        raise Refused(422, f"unknown opponent {shown(opponent_id)}: choose an id from GET /api/options")

    def player(self, opponent: Opponent, seed: int, rules=None):
        """A player for one game (of `rules`): a fresh bot with the game's seed, or the one loaded copy of an
        agent, which must have been trained for those rules."""
        from policies.players import PlayerSpecError, bot_names, check_fits, make_player

        if opponent.spec in bot_names():
            return make_player(opponent.spec, seed=seed)
        with self._load_lock:
            try:
                if opponent.spec not in self._loaded:
                    self._keep(opponent.spec, make_player(opponent.spec, seed=seed))
                if rules is not None:
                    check_fits(self._loaded[opponent.spec], rules)
            except PlayerSpecError as err:
                raise Refused(422, f"opponent {opponent.label!r} cannot play this game: {err}") from None
            return self._loaded[opponent.spec]

    def load_agents(self) -> None:
        """Load every agent given on the command line; `PlayerSpecError` for the first that cannot be."""
        from policies.players import make_player

        for agent in self.agents:
            if agent.spec not in self._loaded:
                self._keep(agent.spec, make_player(agent.spec, seed=0))

    def _keep(self, spec: str, player: Any) -> None:
        if hasattr(player, "time_limit"):
            player.time_limit = None  # a py: bot's own limit; `choose` times every agent alike, first moves longer
        self._loaded[spec] = player
        self._agent_locks[spec] = threading.Lock()

    def _spec_of(self, player: Any) -> str | None:
        """The spec of a loaded agent shared by games; None for a game's own bot."""
        return next((spec for spec, loaded in list(self._loaded.items()) if loaded is player), None)

    def agent_lock(self, player: Any) -> threading.Lock | None:
        spec = self._spec_of(player)
        return None if spec is None else self._agent_locks[spec]

    def choose(self, player: Any, states: np.ndarray, tab: np.ndarray, mask: np.ndarray, who: str) -> int:
        """The player's legal token for the one game in `states`; `PlayerError` (`MoveTimeout` included) or
        whatever the player raised otherwise. A loaded agent has the move time limit; a game's own seed bot,
        the server's code, is not timed."""
        from policies.players import MoveTimeout, call_with_time_limit, check_choices

        spec = self._spec_of(player)
        if spec is None:
            return int(check_choices(player.act(states, tab, mask), mask, who)[0])
        lock = self._agent_locks[spec]
        seconds = self.move_seconds
        if seconds is not None and spec not in self._warmed:
            seconds = max(seconds, FIRST_MOVE_SECONDS)
        # A call that timed out goes on in its abandoned thread and keeps the agent's lock until it returns,
        # which may be never: another game waits for it no longer than one move's time, then fails that move.
        if not lock.acquire(timeout=-1 if seconds is None else seconds):
            raise MoveTimeout(f"{who} is still busy with a move that took longer than {seconds:g} s")

        def act():
            try:
                return player.act(states, tab, mask)
            finally:
                lock.release()  # from the thread that ran the call, whenever it ends

        try:
            choices = call_with_time_limit(act, seconds, who)
        finally:
            self._warmed.add(spec)  # its one long first move is spent, whether it was used well or not
        return int(check_choices(choices, mask, who)[0])

    def known_agent(self, spec: str):
        """The loaded player of a spec this server plays (agent or league member), for its move insight."""
        from policies.players import bot_names

        if spec in (o.spec for o in self.agents + self.league_members()) and spec not in bot_names():
            try:
                return self.player(Opponent(spec, spec, "agent", spec), 0)
            except Refused:
                return None
        return None


def league_member_spec(member, db_folder: Path) -> tuple[str, str] | None:
    """The spec that plays league member `member` from this server, and a note for its label; None when it has
    nothing to play now. Paths are the league's, resolved as the league resolves them
    (`policies.league.league.member_policy_folder`: relative to the database's folder), never from the server's
    working folder; ``main`` is the run's newest checkpoint policy, or its best/ one before any checkpoint."""
    from policies.league.league import member_policy_folder

    spec = member.spec
    if member.kind == "main":
        found = main_policy(db_folder)
        return None if found is None else (f"ckpt:{found[0]}", f", {found[1]}")
    if spec.startswith("ckpt:"):
        folder = member_policy_folder(member, db_folder)
        return (f"ckpt:{folder}", "") if holds_policy(folder) else None
    for prefix in ("search:", "mcts:"):  # a look-ahead player over a policy: its path resolved alike
        if spec.startswith(prefix):
            path, sep, query = spec[len(prefix):].partition("?")
            folder = Path(path) if Path(path).is_absolute() else db_folder / path
            return (f"{prefix}{folder}{sep}{query}", "") if holds_policy(folder) else None
    return spec, ""  # a seed bot's name, or a py: bot


def holds_policy(path: Path) -> bool:
    """Whether `path` is a policy, checkpoint or run folder (`policies.checkpoints.find_policy`'s), looked at
    without loading anything: a request lists the league, and loading waits until a game picks the member."""
    from policies.checkpoints import CHECKPOINTS_DIR, POLICY_DIR, POLICY_JSON

    return ((path / POLICY_JSON).is_file() or (path / POLICY_DIR / POLICY_JSON).is_file()
            or (path / CHECKPOINTS_DIR).is_dir())


def main_policy(run: Path) -> tuple[Path, str] | None:
    """The run's current main as a policy folder, and which it is: the newest checkpoint's policy (as
    `policies.checkpoints.find_policy` of the run folder takes it, the newest whose files are there), else
    best/'s; None when the run has neither yet (a league database outside a run folder has neither)."""
    from launch.training.runs import BEST_DIR
    from policies.checkpoints import CHECKPOINT_PREFIX, CHECKPOINTS_DIR, POLICY_DIR, POLICY_JSON, WEIGHTS

    def whole(policy: Path) -> bool:
        try:
            return (policy / POLICY_JSON).is_file() and (policy / WEIGHTS).stat().st_size > 0
        except OSError:
            return False

    checkpoints = sorted((run / CHECKPOINTS_DIR).glob(f"{CHECKPOINT_PREFIX}*"), reverse=True)
    for checkpoint in checkpoints:
        if whole(checkpoint / POLICY_DIR):
            return checkpoint / POLICY_DIR, checkpoint.name
    best = run / BEST_DIR / POLICY_DIR  # the run's best-evaluated policy
    return (best, "best") if whole(best) else None


@functools.cache
def offered_variants() -> dict[str, tuple[str, dict[str, Any]]]:
    """Name -> (its conf/variant file stem, what GET /api/options says of it) for the rule sets the classic board
    draws: the only variants a game may name, and the only files a game loads."""
    from ludo_env.rules import Rules

    out = {}
    for path in sorted(VARIANT_DIR.glob("*.yaml")):
        rules = Rules.load(path.stem)
        if classic_geometry(rules):
            out[rules.name] = (path.stem, {"name": rules.name, "players": list(rules.allowed_players),
                                           "tokens": rules.tokens})
    return out


def variants() -> list[dict[str, Any]]:
    """The rule sets of conf/variant that the classic board draws, with their player counts."""
    return [info for _, info in offered_variants().values()]


# ------------------------------------------------------------------ what the page draws
def board_geometry(rules) -> dict[str, Any]:
    """The classic board's cells (`launch.play` geometry) for the rules: track, safe squares, columns."""
    starts = list(rules.start_squares)
    track = [{"square": s, "cell": list(cell), "safe": s in rules.safe_squares, "star": s in rules.star_squares,
              "start": starts.index(s) if s in starts else None} for s, cell in sorted(TRACK_CELLS.items())]
    return {"track": track, "columns": [[list(c) for c in cells[:rules.home_column]] for cells in COLUMN_CELLS],
            "home": [list(c) for c in HOME_CELLS], "corners": [list(c) for c in CORNERS],
            "colours": [COLOUR_NAMES[c] for c in rules.seat_colours]}


def token_places(rules, tokens: np.ndarray) -> list[list[dict[str, Any]]]:
    return [[{"token": t, "progress": int(p), "where": where(rules, seat, int(p)),
              "cell": list(token_cell(rules, seat, t, int(p)))} for t, p in enumerate(row)]
            for seat, row in enumerate(tokens)]


def move_options(game, names: list[str]) -> list[dict[str, Any]]:
    """Each legal token with what moving it does, in play.py's words, and tags for the page's colours."""
    rules, seat = game.rules, game.current
    before = game.tokens
    options = []
    for token in game.legal_tokens():
        trial = game.copy()
        trial.move(token)
        after = trial.tokens
        start, end = int(before[seat, token]), int(after[seat, token])
        tags = []
        if start < 0 <= end:
            tags.append("enter")
        if any((after[s] < before[s]).any() for s in range(rules.players) if s != seat):
            tags.append("capture")
        if end == rules.home:
            tags.append("home")
        elif 0 <= end < rules.track_steps and (rules.seat_starts[seat] + end) % rules.track_squares in rules.safe_squares:
            tags.append("safe")
        options.append({"token": token, "text": describe_move(game, token, names), "tags": tags})
    return options


# ------------------------------------------------------------------ one game
class Session:
    """One game of the person against opponents, with every decision kept for its record."""

    def __init__(self, site: Site, rules, you: int, opponents: dict[int, Opponent], seed: int, *,
                 game_id: str | None = None, player: str | None = None, name: str | None = None,
                 started: datetime | None = None):
        from ludo_env.engine import Game

        self.id = game_id or secrets.token_urlsafe(12)
        self.site, self.rules, self.you, self.seed = site, rules, you, seed
        self.player, self.name = player, name  # the browser's token (its games list) and the league name
        self.opponents = opponents
        self.players = {seat: site.player(o, seed + 1 + k, rules)
                        for k, (seat, o) in enumerate(sorted(opponents.items()))}
        self.game = Game(rules, seed=seed)
        self.names = [COLOUR_NAMES[c] for c in rules.seat_colours]
        self.labels = ["you" if s == you else opponents[s].label for s in range(rules.players)]
        self.specs = {seat: o.spec for seat, o in opponents.items()}  # who is recorded: a replacement changes it
        self.notices: list[str] = []  # what the page must tell the person: an agent that failed and was replaced
        self.log: list[dict[str, Any]] = []  # every roll: seat, die, token (None: no move), text
        self.decisions: list[tuple[str, np.ndarray, np.ndarray, int]] = []  # spec, state, legal mask, token
        self.started = started or datetime.now(UTC)
        self.touched = time.monotonic()
        self.record: str | None = None
        self.rated: str | None = None  # what the league made of the finished game, for the page
        # Every roll ["r", die], move ["m", seat, token, spec] and replacement ["x", seat, notice], in order: what
        # games.db keeps; replayed from the seed, they give this game back after a restart. Their count is the
        # view's version, which a second tab compares to follow the game.
        self.events: list[list[Any]] = []
        self.lock = threading.Lock()

    # -------------------------------------------------------------- kept on disk until it ends
    def row(self) -> dict[str, Any]:
        return {"id": self.id, "player": self.player, "name": self.name, "variant": self.rules.name,
                "players": self.rules.players, "you": self.you, "seed": self.seed,
                "opponents": {str(s): o.id for s, o in self.opponents.items()},
                "started": self.started.isoformat(), "events": self.events}

    def persist(self) -> None:
        """The game's row in games.db as it is now (dropped once the game is over and recorded). A disk that
        fails is logged: the game goes on in memory."""
        shelf = self.site.shelf
        if shelf is None:
            return
        try:
            if self.game.over:
                shelf.drop(self.id)
            else:
                shelf.put(self.row())
        except Exception as err:  # noqa: BLE001 - sqlite3 or the disk; the game itself is fine
            log.error("game %s could not be kept in games.db: %s", self.id, one_line(err))

    @classmethod
    def restore(cls, site: Site, row: dict[str, Any]) -> Session:
        """A game from its games.db row, its events replayed through the engine from the seed. An opponent id
        this server no longer offers (an agents= entry gone, a league member evicted) is played by the random
        bot from here on, and the game's notices say so. `ValueError` when the row cannot be replayed."""
        from ludo_env.rules import Rules

        offered = offered_variants()
        if row["variant"] not in offered:
            raise ValueError(f"variant {row['variant']!r} is not offered now")
        rules = Rules.load(offered[row["variant"]][0], players=int(row["players"]))
        opponents, gone = {}, {}
        for seat, opponent_id in sorted(row["opponents"].items()):
            try:
                opponents[seat] = site.opponent(opponent_id)
            except Refused:
                gone[seat] = opponent_id
                opponents[seat] = Opponent(str(opponent_id), str(opponent_id)[:SHOWN_CHARS], "gone", REPLACEMENT)
        session = cls(site, rules, int(row["you"]), opponents, int(row["seed"]), game_id=row["id"],
                      player=row["player"], name=row["name"], started=datetime.fromisoformat(row["started"]))
        for event in row["events"]:
            kind = event[0]
            if kind == "r":
                session._draw_and_roll()
                if session.events[-1] != event:
                    raise ValueError(f"the dice do not replay: {event} became {session.events[-1]}")
            elif kind == "m":
                _, seat, token, spec = event
                if seat != session.game.current or token not in session.game.legal_tokens():
                    raise ValueError(f"move {event} is not legal in the replayed position")
                session._move(seat, token, spec)
            elif kind == "x":
                session._replace(event[1], notice=event[2])
            else:
                raise ValueError(f"unknown event {event!r}")
        for seat, opponent_id in gone.items():
            if session.specs[seat] != REPLACEMENT or seat not in {e[1] for e in row["events"] if e[0] == "x"}:
                session._replace(seat, notice=f"{session.names[seat]} ({opponent_id}) is not offered by this "
                                              f"server since it restarted; {REPLACEMENT} plays its seat from now on")
        return session

    def who(self, seat: int) -> str:
        return f"{self.names[seat]} ({self.labels[seat]})"

    # -------------------------------------------------------------- turns
    def turn(self) -> str:
        if self.game.over:
            return "over"
        if self.game.current != self.you:
            return "opponent"
        return "move" if self.game.awaiting_move else "roll"

    def _move(self, seat: int, token: int, spec: str) -> None:
        game = self.game
        die = game.die
        text = describe_move(game, token, self.names)
        self.decisions.append((spec, game.state.copy(), game.legal_mask(), token))
        events = game.move(token)
        self.events.append(["m", seat, token, spec])
        if "seat_finished" in events and not game.over:
            text += f"; {self.names[seat]} has every token home"
        self.log.append({"seat": seat, "die": die, "token": token, "text": f"{self.who(seat)} rolls {die}: {text}"})
        if game.over:
            self.save()
            self.rated = self.site.rate(self)

    def roll(self) -> None:
        self._require("roll")
        self._draw_and_roll()
        self.persist()

    def _draw_and_roll(self) -> bool:
        from ludo_env.engine import rng as dice

        # the draw Game.roll() would make itself, taken here so that a roll with no move can still be shown
        die = int(dice.die(self.game.rng, 0))
        seat = self.game.current
        events = self.game.roll(die)
        self.events.append(["r", die])
        if self.game.awaiting_move:
            return True
        lost = "the third six in a row, the roll is lost" if "forfeit" in events else "no move"
        again = ", rolls again" if "bonus_roll" in events else ""
        self.log.append({"seat": seat, "die": die, "token": None, "text": f"{self.who(seat)} rolls {die}: {lost}{again}"})
        return False

    def move(self, token: Any, seat: int | None = None) -> None:
        if seat is not None and seat != self.you:
            name = self.names[seat] if 0 <= seat < self.rules.players else f"seat {shown(seat)}"
            raise Refused(409, f"that is {name}'s token: you play {self.names[self.you]}")
        if self.turn() != "move":
            self._require("move")
        legal = self.game.legal_tokens()
        if not isinstance(token, int) or isinstance(token, bool) or token not in legal:
            allowed = " or ".join(str(t) for t in legal)
            raise Refused(409, f"token {shown(token)} cannot move with a {self.game.die}: move token {allowed}")
        self._move(self.you, token, HUMAN)
        self.persist()

    def step(self) -> None:
        """One opponent roll, and its move if it has one."""
        turn = self.turn()
        if turn != "opponent":
            raise Refused(409, "the game is over" if turn == "over" else "it is your turn: roll or move, not step")
        seat = self.game.current
        if not self._draw_and_roll():
            self.persist()
            return
        game = self.game
        mask = game.legal_mask()[None].astype(np.int8)
        states = game.state[None].copy()
        try:
            token = self.site.choose(self.players[seat], states, game.table, mask, self.who(seat))
        except Exception as err:  # noqa: BLE001 - the agent's own code; the die is rolled, the game must go on
            self._replace(seat, err)
            token = int(self.players[seat].act(states, game.table, mask)[0])
        self._move(seat, token, self.specs[seat])
        self.persist()

    def _replace(self, seat: int, err: Exception | None = None, notice: str | None = None) -> None:
        """The random bot takes the seat of an agent that failed (or is gone), for the rest of this game: the
        person's game goes on, and the view's notices say why."""
        from policies.players import make_player

        if notice is None:
            notice = f"{self.who(seat)} failed: {one_line(err)}; {REPLACEMENT} plays its seat from now on"
        log.warning("game %s: %s", self.id, notice)
        self.events.append(["x", seat, notice])
        self.notices.append(notice)
        self.players[seat] = make_player(REPLACEMENT, seed=self.seed + 1 + len(self.names) + seat)
        self.specs[seat] = REPLACEMENT
        self.labels[seat] = f"{REPLACEMENT}, for {self.labels[seat]}"

    def _require(self, action: str) -> None:
        turn = self.turn()
        if turn == action:
            return
        if turn == "over":
            raise Refused(409, f"the game is over: no more {action}s; start a new game")
        if turn == "opponent":
            raise Refused(409, f"it is not your turn: {self.who(self.game.current)} is to play")
        if turn == "roll":
            raise Refused(409, "roll the die first: you have not rolled yet")
        raise Refused(409, f"you rolled {self.game.die}: move one of your highlighted tokens before rolling again")

    # -------------------------------------------------------------- the record
    def save(self) -> None:
        """Every decision in the records format, written to a temporary file and renamed into place."""
        from policies.records import RecordWriter

        stamp = self.started.strftime("%Y%m%dT%H%M%SZ")
        name = f"{stamp}-{self.id[:8]}.jsonl"
        game_id = f"serve:{self.seed}:{self.started.strftime('%Y-%m-%dT%H:%M:%SZ')}"
        targets = [(self.site.records / name, None), (self.site.records / HUMAN_DIR / name, HUMAN)]
        for path, only in targets:
            rows = [d for d in self.decisions if only is None or d[0] == only]
            if not rows:
                continue
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.unlink(missing_ok=True)
            try:
                writers: dict[str, RecordWriter] = {}
                for spec, state, mask, token in rows:
                    writer = writers.setdefault(spec, RecordWriter(tmp, self.rules, spec))
                    writer.write([game_id], state[None], mask[None], [token])
                with open(tmp, "rb+") as f:
                    os.fsync(f.fileno())
                os.replace(tmp, path)
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
        self.record = name
        log.info("saved %s (%d decisions)", self.site.records / name, len(self.decisions))

    # -------------------------------------------------------------- what the page shows
    def view(self) -> dict[str, Any]:
        game, rules = self.game, self.rules
        turn = self.turn()
        return {
            "id": self.id, "variant": rules.name, "players": rules.players, "you": self.you, "seed": self.seed,
            "seats": [{"seat": s, "colour": self.names[s], "player": self.labels[s]} for s in range(rules.players)],
            "current": game.current, "die": game.die, "turn": turn,
            "legal": move_options(game, self.names) if turn == "move" else [],
            "tokens": token_places(rules, game.tokens),
            "log": self.log, "over": game.over, "places": game.places,
            "order": finishing_order(game, [self.who(s) for s in range(rules.players)]) if game.over else None,
            "record": self.record, "board": board_geometry(rules), "notices": self.notices,
            "version": len(self.events), "name": self.name, "rated": self.rated,
        }


# ------------------------------------------------------------------ records for the replay viewer

def players_by_seat(decisions, rows) -> list[str]:
    """The game's players in seat order, each seat by the first player that decided there (a seat handed to
    `random` after its agent failed still shows who sat down)."""
    seats: dict[int, str] = {}
    for seat, player in zip(decisions.states[rows, CURRENT].tolist(), decisions.players[rows]):
        seats.setdefault(int(seat), short_label(str(player)))
    return [seats[seat] for seat in sorted(seats)]


class RecordShelf:
    """The record files the viewer lists: the records folder's, and those given on the command line."""

    def __init__(self, site: Site):
        self.site = site
        self._cache: dict[Path, tuple[tuple[float, int], Any]] = {}  # the Decisions, or the error it gave
        self._lock = threading.Lock()

    def files(self) -> dict[str, Path]:
        """Listing key -> file; a browser names a file only by its key."""
        found = {}
        if self.site.records.is_dir():
            for path in sorted(self.site.records.glob("*.jsonl")):
                found[f"records/{path.name}"] = path
        for k, path in enumerate(self.site.replays):
            found[f"file{k}/{path.name}"] = path
        return found

    def decisions(self, key: str, path: Path):
        """The file's `policies.records.Decisions`, read again only when the file changed. A file that cannot
        be read raises `Refused` (422) naming it by its key, and is logged once per change, not per request."""
        from policies.records import load_decisions

        try:
            stat = path.stat()
        except OSError as err:
            raise Refused(422, f"{key} cannot be read now ({err.strerror})") from None
        version = (stat.st_mtime, stat.st_size)
        with self._lock:
            cached = self._cache.get(path)
            if cached is None or cached[0] != version:
                try:
                    cached = (version, load_decisions([path]))
                except Exception as err:  # noqa: BLE001 - any damage, undecodable bytes too, fails this file alone
                    problem = record_problem(err, path, key)
                    log.error("record file %s skipped: %s", path, problem)
                    cached = (version, Refused(422, f"{key} is damaged: {problem}"))
                self._cache[path] = cached
        if isinstance(cached[1], Refused):
            raise cached[1]
        return cached[1]

    def listing(self) -> list[dict[str, Any]]:
        out = []
        for key, path in self.files().items():
            try:
                decisions = self.decisions(key, path)
            except Refused as err:
                out.append({"file": key, "error": str(err)})
                continue
            for k, (game, rows) in enumerate(games_of(decisions).items()):
                out.append({"file": key, "game": k, "name": game.partition(":")[2], "decisions": len(rows),
                            "variant": decisions.rules.name, "players": players_by_seat(decisions, rows)})
        return out

    def replay(self, file_key: str, game_index: int) -> dict[str, Any]:
        path = self.files().get(file_key)
        if path is None:
            raise Refused(404, f"no record file {shown(file_key)}: choose one from GET /api/records")
        decisions = self.decisions(file_key, path)
        games = list(games_of(decisions).items())
        if not 0 <= game_index < len(games):
            raise Refused(404, f"{file_key} has games 0..{len(games) - 1}, not {shown(game_index)}")
        try:
            return self._replay(file_key, game_index, decisions, games)
        except Refused:
            raise
        except Exception as err:  # noqa: BLE001 - a damaged game fails alone: the file's other games still replay
            log.error("replay of %s game %d failed: %s", path, game_index, one_line(err))
            raise Refused(422, f"{file_key} game {game_index} cannot be replayed: its positions are not "
                               "ones the engine plays") from None

    def _replay(self, file_key: str, game_index: int, decisions, games) -> dict[str, Any]:
        from ludo_env.engine import Game
        from ludo_env.engine.layout import compile_rules

        name, rows = games[game_index]
        rules = decisions.rules
        if not classic_geometry(rules):
            raise Refused(422, f"{file_key} is played on a board of {rules.track_squares} squares with starts "
                               f"{list(rules.start_squares)}: the viewer draws the classic 52-square board only")
        tab = compile_rules(rules)
        names = [COLOUR_NAMES[c] for c in rules.seat_colours]
        steps = []
        game = None
        agents = {spec: self.site.known_agent(spec) for spec in {str(p) for p in decisions.players[rows]}}
        for row in rows:
            state = decisions.states[row]
            game = Game.from_state(rules, state)
            spec = str(decisions.players[row])
            chosen = int(decisions.chosen[row])
            try:
                insight = self.insight(agents[spec], state, tab, decisions.legal[row])
            except TimeoutError:
                agents[spec] = insight = None  # busy past a move's time: asked no more in this replay
            steps.append({"seat": game.current, "player": short_label(spec), "die": game.die,
                          "tokens": token_places(rules, game.tokens), "legal": move_options(game, names),
                          "chosen": chosen, "text": describe_move(game, chosen, names), "insight": insight})
        game.move(int(decisions.chosen[rows[-1]]))
        return {"file": file_key, "game": game_index, "name": name.partition(":")[2], "variant": rules.name,
                "players": rules.players, "colours": names, "board": board_geometry(rules), "steps": steps,
                "final": token_places(rules, game.tokens)}

    def insight(self, player, state: np.ndarray, tab: np.ndarray, legal: np.ndarray) -> dict[str, Any] | None:
        """`move_insight` from a shared agent, taken its lock as a move does; TimeoutError if the agent is busy
        past a move's time (a move of it may hang), None if it fails here: the replay goes on either way."""
        if player is None:
            return None
        lock = self.site.agent_lock(player)
        seconds = self.site.move_seconds
        if lock is not None and not lock.acquire(timeout=-1 if seconds is None else seconds):
            raise TimeoutError
        try:
            return move_insight(player, state, tab, legal)
        except Exception as err:  # noqa: BLE001 - the agent's own code
            log.error("move insight of %s failed: %s", getattr(player, "name", player), one_line(err))
            return None
        finally:
            if lock is not None:
                lock.release()


def record_problem(err: BaseException, path: Path, key: str) -> str:
    """Why a record file cannot be read, on one short line naming it by its key, never its server path."""
    if isinstance(err, UnicodeDecodeError):
        return f"not UTF-8 text (byte {err.start})"
    text = " ".join(str(err).replace(str(path), key).split())
    if not isinstance(err, (OSError, ValueError)):
        text = f"{type(err).__name__}: {text}"
    return text[:MAX_ERROR_CHARS // 2] + ("..." if len(text) > MAX_ERROR_CHARS // 2 else "")


def games_of(decisions) -> dict[str, np.ndarray]:
    """Row indices of each game, in the order the games first appear."""
    games: dict[str, list[int]] = {}
    for row, game in enumerate(decisions.games.tolist()):
        games.setdefault(game, []).append(row)
    return {game: np.array(rows) for game, rows in games.items()}


def move_insight(player, state: np.ndarray, tab: np.ndarray, legal: np.ndarray) -> dict[str, Any] | None:
    """A learned agent's move probabilities (a policy) or move values (a search), where it has them."""
    if player is None:
        return None
    states = np.asarray(state, dtype=np.int16)[None]
    masks = np.asarray(legal, dtype=np.int8)[None]
    if hasattr(player, "move_values"):  # policies.search.ExpectimaxPlayer
        values = player.move_values(states, tab)[0]
        return {"kind": "values", "tokens": [float(v) if masks[0, t] else None for t, v in enumerate(values)]}
    module = getattr(getattr(player, "module", None), "module", None)  # CheckpointPlayer -> ModulePlayer -> RLModule
    obs = getattr(player, "obs", None)
    if module is None or obs is None:
        return None
    import torch
    from ray.rllib.core.columns import Columns

    from ludo_env.observations import encode
    from policies.modules import PPO_ILLEGAL_LOGIT, inference_batch, mask_illegal

    batch = inference_batch(encode(obs, states, tab), masks)
    with torch.no_grad():
        out = module.forward_inference(batch)
    if Columns.ACTION_DIST_INPUTS in out:
        logits = mask_illegal(out[Columns.ACTION_DIST_INPUTS], batch[Columns.OBS]["action_mask"], PPO_ILLEGAL_LOGIT)
        probs = torch.softmax(logits.float(), dim=-1)[0].tolist()
        return {"kind": "probabilities", "tokens": [p if masks[0, t] else None for t, p in enumerate(probs)]}
    if "qf_preds" in out:
        q = out["qf_preds"][0].tolist()
        return {"kind": "values", "tokens": [v if masks[0, t] else None for t, v in enumerate(q)]}
    return None


# ------------------------------------------------------------------ the app
Opponents = Annotated[list[Annotated[str, Field(max_length=100)]], Field(max_length=16)]


class NewGame(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={"examples": [
        {"variant": "quick", "players": 2, "seat": 0, "opponents": ["bot:random"]},
        {"variant": "classic", "players": 4, "seat": 2, "opponents": ["bot:hybrid", "bot:random", "bot:fast"]}]})
    variant: str = Field("classic", max_length=200)
    """A name from GET /api/options' variants."""
    players: int = Field(4, ge=1, le=16)
    seat: int = Field(0, ge=0, le=15)
    opponents: Opponents
    """Ids from GET /api/options' opponents, one per other seat."""
    player: str | None = Field(None, pattern=PLAYER_PATTERN)
    """The browser's own token (kept in its localStorage): GET /api/saved lists its unfinished games."""
    name: str | None = Field(None, max_length=200)
    """The person's name for the league: 1-32 letters, digits, spaces, '.', '_' or '-'."""


class Move(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, json_schema_extra={"examples": [{"token": 0},
                                                                                         {"token": 2, "seat": 0}]})
    token: int = Field(ge=-(2**31), le=2**31)
    seat: int | None = Field(None, ge=-(2**31), le=2**31)
    """The seat of the token clicked, when the page knows it: another seat's token is refused by name."""


class Version(BaseModel):
    version: int
    """How many rolls, moves and replacements the game has had: a view of another version is stale."""
    turn: str


class Saved(BaseModel):
    id: str
    variant: str
    players: int
    you: int
    opponents: list[str]
    moves: int
    started: str


class SavedList(BaseModel):
    games: list[Saved]


class Error(BaseModel):
    """Every refusal: one line saying what is wrong and what is allowed."""
    error: str


WHY = {400: "The body is not JSON that can be read", 404: "No such game, record file or game in it",
       409: "Not allowed now: not your turn, a token that cannot move, the game is over",
       413: f"The body is over {MAX_BODY_BYTES} bytes", 422: "A malformed request, or a value not on the offered lists",
       503: "The league cannot be read now"}


def refusals(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The error answers a route declares, so that its OpenAPI schema names every status it gives."""
    return {code: {"model": Error, "description": WHY[code]} for code in codes}


class OneLineJSON(JSONResponse):
    """JSON in ASCII: a lone surrogate or any other odd character a client sent cannot fail the encoding."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


def one_line_error(status: int, message: str) -> JSONResponse:
    text = " ".join(str(message).split())
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS] + "..."
    return OneLineJSON({"error": text}, status_code=status)


class BodyLimit:
    """ASGI middleware: a request body over `limit` bytes is a 413 with one line of JSON, told by its
    Content-Length before anything is read, or, sent without one, as soon as the bytes received pass the limit."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or ()).get(b"content-length", b"")
        if length and (not length.isdigit() or int(length) > self.limit):
            response = one_line_error(413 if length.isdigit() else 400,
                                      f"the request body is over {self.limit} bytes" if length.isdigit()
                                      else "the Content-Length header is not a number")
            return await response(scope, receive, send)
        received = 0

        async def limited():
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:  # FastAPI passes an HTTPException from reading the body to its handler
                raise StarletteHTTPException(413)
            return message

        return await self.app(scope, limited, send)


def create_app(site: Site) -> FastAPI:
    from ludo_env.rules import Rules, RulesError

    # The schema is not served (the site has no API docs to show); tests take it from app.openapi().
    app = FastAPI(title="ludo-league", docs_url=None, redoc_url=None, openapi_url=None,
                  default_response_class=OneLineJSON)
    app.add_middleware(BodyLimit, limit=MAX_BODY_BYTES)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    games: dict[str, Session] = {}
    games_lock = threading.Lock()
    shelf = RecordShelf(site)

    @app.exception_handler(Refused)
    async def refused(_: Request, err: Refused):
        return one_line_error(err.status, str(err))

    @app.exception_handler(RequestValidationError)
    async def malformed(_: Request, err: RequestValidationError):
        problems = []
        for e in err.errors()[:5]:
            # a location can be a key the client made up: shown cut short, like any other value it sent
            where_ = ".".join(p if isinstance(p, str) and p.isidentifier() and len(p) <= SHOWN_CHARS else shown(p)
                              for p in e.get("loc", ()) if p != "body") or "body"
            problems.append(f"{where_}: {e.get('msg', 'invalid')}")
        return one_line_error(422, "malformed request: " + "; ".join(problems))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, err: StarletteHTTPException):
        if err.status_code == 404:
            return one_line_error(404, f"no such page: {shown(request.url.path)}")
        if err.status_code == 405:
            method = request.method if request.method in HTTP_METHODS else shown(request.method, 10)
            return one_line_error(405, f"{method} is not allowed on {shown(request.url.path)}")
        if err.status_code == 413:
            return one_line_error(413, f"the request body is over {MAX_BODY_BYTES} bytes")
        return one_line_error(err.status_code, str(err.detail))

    @app.exception_handler(Exception)
    async def crashed(request: Request, err: Exception):
        # The frames, not the message: a message can hold what the client sent, whole.
        log.error("%s %s failed (%s):\n%s", request.method, shown(request.url.path), type(err).__name__,
                  "".join(traceback.format_tb(err.__traceback__)).rstrip())
        return one_line_error(500, f"the server failed on this request ({type(err).__name__}); see its log")

    def restore(row: dict[str, Any]) -> Session | None:
        """An unfinished game from games.db into memory, or None (logged) when it cannot be replayed."""
        try:
            game = Session.restore(site, row)
        except Exception as err:  # noqa: BLE001 - a row of another version, an agent that cannot play it now
            log.error("unfinished game %s cannot be restored: %s", row.get("id"), one_line(err))
            return None
        keep(game)
        return game

    def keep(game: Session) -> None:
        with games_lock:
            if len(games) >= MAX_GAMES:  # out of memory only: an unfinished one stays in games.db and comes back
                oldest = min(games.values(), key=lambda g: (not g.game.over, g.touched))
                del games[oldest.id]
            games.setdefault(game.id, game)

    def session(game_id: str) -> Session:
        with games_lock:
            found = games.get(game_id)
        if found is None and site.shelf is not None and len(game_id) <= SHOWN_CHARS:
            # a game held out of memory by MAX_GAMES: back from games.db, looked up by its id alone
            rows = [r for r in site.shelf.rows() if r["id"] == game_id]
            if rows and restore(rows[0]) is not None:
                with games_lock:
                    found = games.get(game_id)
        if found is None:
            raise Refused(404, f"no game {shown(game_id)} on this server: start a new game")
        found.touched = time.monotonic()
        return found

    if site.shelf is not None:  # the unfinished games of the last run, played on from where they were
        restored = [restore(row) for row in site.shelf.rows()[-MAX_GAMES:]]
        if restored:
            log.info("restored %d unfinished games from %s", sum(g is not None for g in restored), site.shelf.path)

    # -------------------------------------------------------------- pages
    @app.get("/", include_in_schema=False)
    def play_page():
        return FileResponse(STATIC / "play.html", headers={"Cache-Control": "no-store"})

    @app.get("/replay", include_in_schema=False)
    def replay_page():
        return FileResponse(STATIC / "replay.html", headers={"Cache-Control": "no-store"})

    @app.get(PLOTLY_ROUTE, include_in_schema=False)
    def plotly_js():
        # the league page's 4.8 MB library, fetched once: its address names plotly's version, so it never changes
        return FileResponse(plotly_file(), media_type="text/javascript",
                            headers={"Cache-Control": "public, max-age=31536000, immutable"})

    @app.get("/league", include_in_schema=False)
    def league_page():
        if site.league is None:
            raise Refused(404, "this server was started without league=<run folder>: no league to show")
        try:
            page = site.league.render(LEAGUE_REFRESH_SECONDS, plotly_src=PLOTLY_ROUTE, site_nav=True)
        except Exception as err:  # noqa: BLE001 - the database can vanish or stay locked mid-run
            log.error("league render failed: %s", (str(err) or type(err).__name__).splitlines()[0])
            raise Refused(503, "the leaderboard could not be rendered now; try again") from None
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    # -------------------------------------------------------------- the API
    @app.get("/api/options")
    def options():
        return {"variants": variants(), "league": site.league is not None,
                "opponents": [{"id": o.id, "label": o.label, "kind": o.kind} for o in site.opponents()]}

    @app.post("/api/games", responses=refusals(400, 413, 422))
    def new_game(body: NewGame):
        offered = offered_variants()
        if body.variant not in offered:  # looked up before anything is loaded: a name is never a path
            raise Refused(422, f"variant {shown(body.variant)} is not offered: choose one of {', '.join(offered)}")
        try:
            rules = Rules.load(offered[body.variant][0], players=body.players)
        except RulesError as err:
            raise Refused(422, str(err)) from None
        if not 0 <= body.seat < rules.players:
            raise Refused(422, f"seat {body.seat} is not a seat of a {rules.players}-player game: "
                               f"choose 0..{rules.players - 1}")
        if len(body.opponents) != rules.players - 1:
            raise Refused(422, f"a {rules.players}-player game needs {rules.players - 1} opponents, "
                               f"got {len(body.opponents)}")
        if body.name is not None and not re.fullmatch(NAME_PATTERN, body.name):
            raise Refused(422, f"name {shown(body.name)} is not allowed: give 1-32 letters, digits, spaces, '.', "
                               "'_' or '-', not starting or ending with a space")
        chosen = [site.opponent(o) for o in body.opponents]
        others = [s for s in range(rules.players) if s != body.seat]
        game = Session(site, rules, body.seat, dict(zip(others, chosen)), secrets.randbelow(10**6),
                       player=body.player, name=body.name)
        keep(game)
        game.persist()
        return game.view()

    @app.get("/api/games/{game_id}/version", response_model=Version, responses=refusals(404, 422))
    def game_version(game_id: str):
        """What a tab polls to follow a game played in another tab: cheap, and the same count as the view's."""
        game = session(game_id)
        with game.lock:
            return {"version": len(game.events), "turn": game.turn()}

    @app.get("/api/saved", response_model=SavedList, responses=refusals(422))
    def saved(player: str = Query(pattern=PLAYER_PATTERN)):
        """The unfinished games started with this browser's player token, newest first."""
        with games_lock:
            mine = [g for g in games.values() if g.player == player and not g.game.over]
        mine.sort(key=lambda g: g.started, reverse=True)
        return {"games": [{"id": g.id, "variant": g.rules.name, "players": g.rules.players, "you": g.you,
                           "opponents": [g.labels[s] for s in range(g.rules.players) if s != g.you],
                           "moves": sum(e[0] == "m" for e in g.events),
                           "started": g.started.strftime("%Y-%m-%d %H:%M UTC")} for g in mine[:50]]}

    @app.get("/api/games/{game_id}", responses=refusals(404, 422))
    def get_game(game_id: str):
        game = session(game_id)
        with game.lock:
            return game.view()

    @app.post("/api/games/{game_id}/roll", responses=refusals(404, 409, 413, 422))
    def roll(game_id: str):
        game = session(game_id)
        with game.lock:
            game.roll()
            return game.view()

    @app.post("/api/games/{game_id}/move", responses=refusals(400, 404, 409, 413, 422))
    def move(game_id: str, body: Move):
        game = session(game_id)
        with game.lock:
            game.move(body.token, body.seat)
            return game.view()

    @app.post("/api/games/{game_id}/step", responses=refusals(404, 409, 413, 422))
    def step(game_id: str):
        game = session(game_id)
        with game.lock:
            game.step()
            return game.view()

    @app.get("/api/records")
    def records():
        return {"records": shelf.listing()}

    @app.get("/api/replay", responses=refusals(404, 422))
    def replay(file: str = Query(max_length=300), game: int = Query(0, ge=0, le=10**6)):
        return shelf.replay(file, game)

    return app
