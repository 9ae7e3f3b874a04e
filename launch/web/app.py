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

Every refusal is a 4xx with one line of JSON, ``{"error": "..."}``; so is a
malformed or unknown request. Nothing answers with a traceback.
"""
from __future__ import annotations

import logging
import os
import secrets
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

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
LEAGUE_REFRESH_SECONDS = 30
log = logging.getLogger("launch.serve")


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
                 replays: list[Path] | None = None):
        from policies.players import bot_names

        self.records = records
        self.league = league  # a launch.leaderboard.Board, or None
        self.replays = list(replays or [])
        self.bots = [Opponent(f"bot:{name}", name, "bot", name) for name in bot_names()]
        self.agents = [Opponent(f"agent:{k}", short_label(spec), "agent", spec) for k, spec in enumerate(agents or [])]
        self._loaded: dict[str, Any] = {}  # spec -> a loaded agent, shared by games (its act behind _load_lock)
        self._load_lock = threading.Lock()
        self.act_lock = threading.Lock()

    def league_members(self) -> list[Opponent]:
        """The league's active members, read afresh: a running training adds them as it goes."""
        if self.league is None:
            return []
        from policies.league.store import LeagueStore

        with LeagueStore.open(self.league.db_path, create=False, read_only=True) as store:
            members = store.members(active_only=True)
        return [Opponent(f"league:{m.name}", f"{m.name} ({m.kind})", "league", m.spec) for m in members]

    def opponents(self) -> list[Opponent]:
        return self.bots + self.agents + self.league_members()

    def opponent(self, opponent_id: Any) -> Opponent:
        if isinstance(opponent_id, str):
            for opponent in self.opponents():
                if opponent.id == opponent_id:
                    return opponent
        raise Refused(422, f"unknown opponent {opponent_id!r}: choose an id from GET /api/options")

    def player(self, opponent: Opponent, seed: int, rules=None):
        """A player for one game (of `rules`): a fresh bot with the game's seed, or the one loaded copy of an
        agent, which must have been trained for those rules."""
        from policies.players import PlayerSpecError, bot_names, check_fits, make_player

        if opponent.spec in bot_names():
            return make_player(opponent.spec, seed=seed)
        with self._load_lock:
            try:
                if opponent.spec not in self._loaded:
                    self._loaded[opponent.spec] = make_player(opponent.spec, seed=seed)
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
                self._loaded[agent.spec] = make_player(agent.spec, seed=0)

    def known_agent(self, spec: str):
        """The loaded player of a spec this server plays (agent or league member), for its move insight."""
        from policies.players import bot_names

        if spec in (o.spec for o in self.agents + self.league_members()) and spec not in bot_names():
            try:
                return self.player(Opponent(spec, spec, "agent", spec), 0)
            except Refused:
                return None
        return None


def variants() -> list[dict[str, Any]]:
    """The rule sets of conf/variant that the classic board draws, with their player counts."""
    from ludo_env.rules import Rules

    out = []
    for path in sorted(VARIANT_DIR.glob("*.yaml")):
        rules = Rules.load(path.stem)
        if classic_geometry(rules):
            out.append({"name": rules.name, "players": list(rules.allowed_players), "tokens": rules.tokens})
    return out


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

    def __init__(self, site: Site, rules, you: int, opponents: dict[int, Opponent], seed: int):
        from ludo_env.engine import Game

        self.id = secrets.token_urlsafe(12)
        self.site, self.rules, self.you, self.seed = site, rules, you, seed
        self.opponents = opponents
        self.players = {seat: site.player(o, seed + 1 + k, rules)
                        for k, (seat, o) in enumerate(sorted(opponents.items()))}
        self.game = Game(rules, seed=seed)
        self.names = [COLOUR_NAMES[c] for c in rules.seat_colours]
        self.labels = ["you" if s == you else opponents[s].label for s in range(rules.players)]
        self.log: list[dict[str, Any]] = []  # every roll: seat, die, token (None: no move), text
        self.decisions: list[tuple[str, np.ndarray, np.ndarray, int]] = []  # spec, state, legal mask, token
        self.started = datetime.now(UTC)
        self.touched = time.monotonic()
        self.record: str | None = None
        self.lock = threading.Lock()

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
        if "seat_finished" in events and not game.over:
            text += f"; {self.names[seat]} has every token home"
        self.log.append({"seat": seat, "die": die, "token": token, "text": f"{self.who(seat)} rolls {die}: {text}"})
        if game.over:
            self.save()

    def roll(self) -> None:
        self._require("roll")
        self._draw_and_roll()

    def _draw_and_roll(self) -> bool:
        from ludo_env.engine import rng as dice

        # the draw Game.roll() would make itself, taken here so that a roll with no move can still be shown
        die = int(dice.die(self.game.rng, 0))
        seat = self.game.current
        events = self.game.roll(die)
        if self.game.awaiting_move:
            return True
        lost = "the third six in a row, the roll is lost" if "forfeit" in events else "no move"
        again = ", rolls again" if "bonus_roll" in events else ""
        self.log.append({"seat": seat, "die": die, "token": None, "text": f"{self.who(seat)} rolls {die}: {lost}{again}"})
        return False

    def move(self, token: Any, seat: int | None = None) -> None:
        if seat is not None and seat != self.you:
            name = self.names[seat] if 0 <= seat < self.rules.players else f"seat {seat}"
            raise Refused(409, f"that is {name}'s token: you play {self.names[self.you]}")
        if self.turn() != "move":
            self._require("move")
        legal = self.game.legal_tokens()
        if not isinstance(token, int) or isinstance(token, bool) or token not in legal:
            allowed = " or ".join(str(t) for t in legal)
            raise Refused(409, f"token {token} cannot move with a {self.game.die}: move token {allowed}")
        self._move(self.you, token, HUMAN)

    def step(self) -> None:
        """One opponent roll, and its move if it has one."""
        turn = self.turn()
        if turn != "opponent":
            raise Refused(409, "the game is over" if turn == "over" else "it is your turn: roll or move, not step")
        seat = self.game.current
        if not self._draw_and_roll():
            return
        game, player = self.game, self.players[seat]
        mask = game.legal_mask()[None].astype(np.int8)
        with self.site.act_lock:  # a loaded agent is shared by games; torch and search keep state
            token = int(player.act(game.state[None].copy(), game.table, mask)[0])
        self._move(seat, token, self.opponents[seat].spec)

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
            "record": self.record, "board": board_geometry(rules),
        }


# ------------------------------------------------------------------ records for the replay viewer
class RecordShelf:
    """The record files the viewer lists: the records folder's, and those given on the command line."""

    def __init__(self, site: Site):
        self.site = site
        self._cache: dict[Path, tuple[tuple[float, int], Any]] = {}
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

    def decisions(self, path: Path):
        """The file's `policies.records.Decisions`, read again only when the file changed; RecordError if bad."""
        from policies.records import load_decisions

        stat = path.stat()
        key = (stat.st_mtime, stat.st_size)
        with self._lock:
            cached = self._cache.get(path)
            if cached is None or cached[0] != key:
                cached = (key, load_decisions([path]))
                self._cache[path] = cached
            return cached[1]

    def listing(self) -> list[dict[str, Any]]:
        from policies.records import RecordError

        out = []
        for key, path in self.files().items():
            try:
                decisions = self.decisions(path)
            except (RecordError, OSError) as err:
                out.append({"file": key, "error": " ".join(str(err).replace(str(path), key).split())})
                continue
            for k, (game, rows) in enumerate(games_of(decisions).items()):
                out.append({"file": key, "game": k, "name": game.partition(":")[2], "decisions": len(rows),
                            "variant": decisions.rules.name, "players": sorted({short_label(str(p)) for p in decisions.players[rows]})})
        return out

    def replay(self, file_key: str, game_index: int) -> dict[str, Any]:
        from ludo_env.engine import Game
        from ludo_env.engine.layout import compile_rules
        from policies.records import RecordError

        path = self.files().get(file_key)
        if path is None:
            raise Refused(404, f"no record file {file_key!r}: choose one from GET /api/records")
        try:
            decisions = self.decisions(path)
        except (RecordError, OSError) as err:
            raise Refused(422, " ".join(str(err).replace(str(path), file_key).split())) from None
        games = list(games_of(decisions).items())
        if not 0 <= game_index < len(games):
            raise Refused(404, f"{file_key} has games 0..{len(games) - 1}, not {game_index}")
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
            steps.append({"seat": game.current, "player": short_label(spec), "die": game.die,
                          "tokens": token_places(rules, game.tokens), "legal": move_options(game, names),
                          "chosen": chosen, "text": describe_move(game, chosen, names),
                          "insight": move_insight(agents[spec], state, tab, decisions.legal[row])})
        game.move(int(decisions.chosen[rows[-1]]))
        return {"file": file_key, "game": game_index, "name": name.partition(":")[2], "variant": rules.name,
                "players": rules.players, "colours": names, "board": board_geometry(rules), "steps": steps,
                "final": token_places(rules, game.tokens)}


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
class NewGame(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    variant: str = "classic"
    players: int = 4
    seat: int = 0
    opponents: list[str]


class Move(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    token: int
    seat: int | None = None
    """The seat of the token clicked, when the page knows it: another seat's token is refused by name."""


def one_line_error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": " ".join(str(message).split())}, status_code=status)


def create_app(site: Site) -> FastAPI:
    from ludo_env.rules import Rules, RulesError

    app = FastAPI(title="ludo-league", docs_url=None, redoc_url=None, openapi_url=None)
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
        for e in err.errors():
            where_ = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "body"
            problems.append(f"{where_}: {e.get('msg', 'invalid')}")
        return one_line_error(422, "malformed request: " + "; ".join(problems))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, err: StarletteHTTPException):
        if err.status_code == 404:
            return one_line_error(404, f"no such page: {request.url.path}")
        if err.status_code == 405:
            return one_line_error(405, f"{request.method} is not allowed on {request.url.path}")
        return one_line_error(err.status_code, str(err.detail))

    @app.exception_handler(Exception)
    async def crashed(request: Request, err: Exception):
        log.exception("%s %s failed", request.method, request.url.path)
        return one_line_error(500, f"the server failed on this request ({type(err).__name__}); see its log")

    def session(game_id: str) -> Session:
        with games_lock:
            found = games.get(game_id)
        if found is None:
            raise Refused(404, f"no game {game_id!r} on this server: start a new game")
        found.touched = time.monotonic()
        return found

    # -------------------------------------------------------------- pages
    @app.get("/", include_in_schema=False)
    def play_page():
        return FileResponse(STATIC / "play.html", headers={"Cache-Control": "no-store"})

    @app.get("/replay", include_in_schema=False)
    def replay_page():
        return FileResponse(STATIC / "replay.html", headers={"Cache-Control": "no-store"})

    @app.get("/league", include_in_schema=False)
    def league_page():
        if site.league is None:
            raise Refused(404, "this server was started without league=<run folder>: no league to show")
        try:
            page = site.league.render(LEAGUE_REFRESH_SECONDS)
        except Exception as err:  # noqa: BLE001 - the database can vanish or stay locked mid-run
            log.error("league render failed: %s", (str(err) or type(err).__name__).splitlines()[0])
            raise Refused(503, "the leaderboard could not be rendered now; try again") from None
        return HTMLResponse(page, headers={"Cache-Control": "no-store"})

    # -------------------------------------------------------------- the API
    @app.get("/api/options")
    def options():
        return {"variants": variants(), "league": site.league is not None,
                "opponents": [{"id": o.id, "label": o.label, "kind": o.kind} for o in site.opponents()]}

    @app.post("/api/games")
    def new_game(body: NewGame):
        try:
            rules = Rules.load(body.variant, players=body.players)
        except RulesError as err:
            raise Refused(422, str(err)) from None
        if body.variant not in {v["name"] for v in variants()}:
            raise Refused(422, f"variant {body.variant!r} is not offered: choose one of "
                               f"{', '.join(v['name'] for v in variants())}")
        if not 0 <= body.seat < rules.players:
            raise Refused(422, f"seat {body.seat} is not a seat of a {rules.players}-player game: "
                               f"choose 0..{rules.players - 1}")
        if len(body.opponents) != rules.players - 1:
            raise Refused(422, f"a {rules.players}-player game needs {rules.players - 1} opponents, "
                               f"got {len(body.opponents)}")
        chosen = [site.opponent(o) for o in body.opponents]
        others = [s for s in range(rules.players) if s != body.seat]
        game = Session(site, rules, body.seat, dict(zip(others, chosen)), secrets.randbelow(10**6))
        with games_lock:
            if len(games) >= MAX_GAMES:
                oldest = min(games.values(), key=lambda g: (not g.game.over, g.touched))
                del games[oldest.id]
            games[game.id] = game
        return game.view()

    @app.get("/api/games/{game_id}")
    def get_game(game_id: str):
        return session(game_id).view()

    @app.post("/api/games/{game_id}/roll")
    def roll(game_id: str):
        game = session(game_id)
        with game.lock:
            game.roll()
            return game.view()

    @app.post("/api/games/{game_id}/move")
    def move(game_id: str, body: Move):
        game = session(game_id)
        with game.lock:
            game.move(body.token, body.seat)
            return game.view()

    @app.post("/api/games/{game_id}/step")
    def step(game_id: str):
        game = session(game_id)
        with game.lock:
            game.step()
            return game.view()

    @app.get("/api/records")
    def records():
        return {"records": shelf.listing()}

    @app.get("/api/replay")
    def replay(file: str, game: int = 0):
        return shelf.replay(file, game)

    return app
