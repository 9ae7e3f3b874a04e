"""Games against agents: a new game, its view, the person's roll and move, the opponents' turns (``step``),
the version a second tab polls, and a browser's unfinished games (``GET /api/saved``). Each game is a
`Session`: an engine-checked `ludo_env.engine.Game` behind its own lock, kept in games.db until it ends, then
recorded and, against league members, rated in the league.

Rated play cannot be gamed by a visitor (`launch.web.site.Limits` holds the numbers):

* a name is claimed by its first game (with a league): the server answers that game with a secret
  (``name_token``), which the browser keeps and sends with every later game under the name; a game under a
  claimed name without it is refused (403). Only the secret's SHA-256 is stored (the league's ``people``).
  Names are compared folded (`policies.league.store.person_name`: ``Alice`` is ``alice``). A game is rated only
  while the claim it started under still holds the name (`league.py remove` or a release ends it); a claim that
  never played is released when its game ends unrated or is given up, after a day, or past an address's share;
* the browser's player token, which lists its unfinished games, is issued by the server (`issue_player`), never
  chosen by the browser; an address is the connection's, unless it is a trusted proxy (`client_address`);
* a game is rated only while its name and its address are under their rated games per hour; past a limit it is
  played and recorded, not rated, and its end says so; new names past the hourly cap are refused (429);
* a game is rated once: its id is the key of the league's ``site_games``, written in the rating's transaction,
  so a game played again after a failure (its final move not kept in games.db) is not rated twice;
* unfinished games are capped per browser, per address and in total; a new game past a cap expires the oldest
  idle one under it, or is refused (429).
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import ipaddress
import os
import re
import secrets
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict, Field

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
from launch.web.common import SHOWN_CHARS, Refused, log, one_line, refusals, shown
from launch.web.site import Opponent, Site

VARIANT_DIR = Path(__file__).resolve().parents[2] / "conf" / "variant"
HUMAN = "human"  # the recorded player of the person's decisions, as launch/play.py records them
HUMAN_DIR = "human"
MAX_GAMES = 500  # games held in memory; the oldest finished ones go first
REPLACEMENT = "random"  # the bot that takes a failed agent's seat
NAME_PATTERN = r"[A-Za-z0-9._-](?:[A-Za-z0-9 ._-]{0,30}[A-Za-z0-9._-])?"  # a person's name for the league
PLAYER_PATTERN = r"^[A-Za-z0-9_-]{8,64}$"  # the browser's player token (localStorage), for its games list
PLAYER_RANDOM_CHARS = 22  # secrets.token_urlsafe(16): 128 random bits, then the server's MAC of them
PLAYER_MAC_CHARS = 32
NAME_TOKEN_PATTERN = r"^[A-Za-z0-9_-]{16,100}$"  # the secret of a claimed name (the browser's localStorage)
HOUR = 3600.0
RATED = "rated in the league as "
RECORD_LATER = ("this game's record cannot be written now (the records folder is full or cannot be written): the "
                "game is kept, and its record is written when it can be")
RATING_LATER = ("not rated yet: the league cannot be written now; this game is kept and is rated when the league "
                "is back")
UNPLAYED_CLAIM_SECONDS = 24 * HOUR
"""A claimed name that has played no rated game this long after its claim is released: a claim alone holds a name
for a day at most."""
UNPLAYED_CLAIMS_PER_ADDRESS = 3
"""Claims one address may hold that have played no rated game yet; a new one past it releases that address's
oldest, so claims that never play cannot pile up."""


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def address_hash(address: str | None) -> str | None:
    """What the league and games.db keep of a browser's address: enough to count its games, not the address."""
    return None if address is None else hashlib.sha256(f"ludo-league-address:{address}".encode()).hexdigest()[:32]


def issue_player(site: Site) -> str:
    """A new player token for a browser: 128 random bits and the server's MAC of them (`Site.player_key`), so that
    the server knows its own tokens again, after a restart too, without keeping a list of them."""
    random_part = secrets.token_urlsafe(16)
    return random_part + _player_mac(site, random_part)


def known_player(site: Site, token: str) -> bool:
    """Whether `token` is a player token this server issued (`issue_player`); a browser cannot choose its own."""
    if len(token) != PLAYER_RANDOM_CHARS + PLAYER_MAC_CHARS:
        return False
    return hmac.compare_digest(_player_mac(site, token[:PLAYER_RANDOM_CHARS]), token[PLAYER_RANDOM_CHARS:])


def _player_mac(site: Site, random_part: str) -> str:
    return hmac.new(site.player_key, random_part.encode(), hashlib.sha256).hexdigest()[:PLAYER_MAC_CHARS]


def checked_player(site: Site, token: str | None) -> str | None:
    """A player token a request brought, when this server issued it; `Refused` 403 otherwise, so that no browser
    reads or adds to another's games list under a token it made up or guessed."""
    if token is not None and not known_player(site, token):
        raise Refused(403, f"the player token {shown(token)} was not issued by this server: send none, and keep the "
                           "player_token a new game answers")
    return token


def client_address(site: Site, request: Request) -> str | None:
    """The address a request came from, for the site's limits: the connection's peer, and only when that peer is
    one of the site's trusted proxies (`Site.trusted_proxies`), the right-most address of X-Forwarded-For that is
    not a trusted proxy itself (what the nearest proxy saw; what a client wrote further left is not believed). No
    other header (Forwarded, X-Real-IP) is read. None when the server knows no peer (an in-process client)."""
    peer = request.client.host if request.client else None
    if peer is None or not site.trusted_proxies or not _trusted(site, peer):
        return peer
    hops = [hop.strip() for value in request.headers.getlist("x-forwarded-for") for hop in value.split(",")]
    address = peer
    for hop in reversed(hops):
        try:
            ipaddress.ip_address(hop)
        except ValueError:  # a proxy's header that cannot be read: the last address that could be
            break
        address = hop
        if not _trusted(site, hop):
            break
    return address


def _trusted(site: Site, address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(ip in network for network in site.trusted_proxies if network.version == ip.version)


def check_row_names(row: dict[str, Any]) -> None:
    """A games.db row's name and player token follow the rules a new game's do: `ValueError` otherwise."""
    name, player = row.get("name"), row.get("player")
    if name is not None and not (isinstance(name, str) and re.fullmatch(NAME_PATTERN, name)):
        raise ValueError(f"its name {shown(name)} is not allowed (1-32 letters, digits, spaces, '.', '_' or '-')")
    if player is not None and not (isinstance(player, str) and re.fullmatch(PLAYER_PATTERN, player)):
        raise ValueError(f"its player token {shown(player)} is not allowed")


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


# ------------------------------------------------------------------ the records' quota
RECORD_NAME = re.compile(r"\d{8}T\d{6}Z-[A-Za-z0-9_-]{8}\.jsonl")  # what `Session.save` names a game's record
_rotating = threading.Lock()


def rotate_records(records: Path, kept: int, megabytes: int, newest: str) -> list[str]:
    """The finished games' records within `kept` files and `megabytes` (their human/ copies counted): the
    oldest by name (the game's start) go, each with its human/ copy, never `newest`, the one just written. Only
    names `Session.save` gives are counted or removed: anything else in the folder is not the site's. The names
    removed."""
    sizes: dict[str, int] = {}
    with _rotating:
        for folder in (records, records / HUMAN_DIR):
            if not folder.is_dir():
                continue
            with os.scandir(folder) as entries:
                for entry in entries:
                    if RECORD_NAME.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                        sizes[entry.name] = sizes.get(entry.name, 0) + entry.stat(follow_symlinks=False).st_size
        total, limit = sum(sizes.values()), megabytes * 1024 * 1024
        removed = []
        for name in sorted(sizes):
            if len(sizes) - len(removed) <= kept and total <= limit:
                break
            if name == newest:
                continue
            for folder in (records, records / HUMAN_DIR):
                (folder / name).unlink(missing_ok=True)
            total -= sizes[name]
            removed.append(name)
    if removed:
        log.info("removed the %d oldest records from %s: the folder keeps at most %d records and %d MB",
                 len(removed), records, kept, megabytes)
    return removed


# ------------------------------------------------------------------ one game
class Session:
    """One game of the person against opponents, with every decision kept for its record."""

    def __init__(self, site: Site, rules, you: int, opponents: dict[int, Opponent], seed: int, *,
                 game_id: str | None = None, player: str | None = None, name: str | None = None,
                 started: datetime | None = None, address: str | None = None, claim: str | None = None):
        from ludo_env.engine import Game

        self.id = game_id or secrets.token_urlsafe(12)
        self.site, self.rules, self.you, self.seed = site, rules, you, seed
        self.player, self.name = player, name  # the browser's token (its games list) and the league name
        self.address = address  # the hashed address that started it (`address_hash`), for the site's limits
        # The SHA-256 of the name's secret this game was started with: rated only while that claim holds the name
        self.claim = claim
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
        self.expired = False  # gave way to a new game (a cap): never written to games.db again
        self.record_failed = False  # over, and its record file could not be written yet (`write_record`)
        self.rating_pending = False  # over, and the league could not be written to rate it yet (`rate`)
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
                "started": self.started.isoformat(), "events": self.events, "address": self.address,
                "claim": self.claim}

    def persist(self) -> None:
        """The game's row in games.db as it is now (dropped once the game is over, recorded and rated or not for
        good; kept, whole, while either `waits`). A disk that fails is logged: the game goes on in memory."""
        shelf = self.site.shelf
        if shelf is None or self.expired:
            return
        try:
            if self.game.over and not self.waits:
                shelf.drop(self.id)
            else:
                shelf.put(self.row())
        except Exception:  # noqa: BLE001 - sqlite3 or the disk, said once by the shelf; the game itself is fine
            pass

    @classmethod
    def restore(cls, site: Site, row: dict[str, Any]) -> Session:
        """A game from its games.db row, its events replayed through the engine from the seed. An opponent id
        this server no longer offers (an agents= entry gone, a league member evicted) is played by the random
        bot from here on, and the game's notices say so. `ValueError` when the row cannot be replayed."""
        from ludo_env.rules import Rules

        check_row_names(row)  # a row is data: the rules a new game's name and token follow hold on every restore
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
                      player=row["player"], name=row["name"], started=datetime.fromisoformat(row["started"]),
                      address=row.get("address"), claim=row.get("claim"))
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
            self.write_record()
            self.settle_rating()

    @property
    def waits(self) -> bool:
        """Over, with its record or its rating still to do: kept in games.db and tried again (`GameTable.retry`)."""
        return self.game.over and (self.record_failed or self.rating_pending)

    def write_record(self) -> None:
        """`save`; a records folder that takes no file now (a full disk) is logged, the page says so, and the game
        stays whole in games.db until a later try writes it (`waits`), after a restart too."""
        from policies.records import RecordError

        try:
            self.save()
        except (OSError, RecordError) as err:  # RecordError: RecordWriter's word for a write the disk refused
            if not self.record_failed:
                log.error("game %s: its record cannot be written now (%s); the game is kept in games.db and "
                          "recorded later", self.id, one_line(err))
                self.notices.append(RECORD_LATER)
            self.record_failed = True
            return
        self.record_failed = False
        if RECORD_LATER in self.notices:
            self.notices.remove(RECORD_LATER)

    def settle_rating(self) -> None:
        """`rate`; then a claim that never played is released, unless the rating is pending (it needs the
        claim when the league is back)."""
        self.rated = self.rate()
        if self.rating_pending:
            return
        if self.rated is not None and not self.rated.startswith(RATED):
            release_claim(self.site, self.name, self.claim)  # a claim that never played holds no name

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
        try:
            rotate_records(self.site.records, self.site.limits.records_kept, self.site.limits.records_mb, name)
        except OSError as err:  # the record is written; the quota is kept at the next game's end
            log.error("old records could not be removed from %s: %s", self.site.records, one_line(err))

    # -------------------------------------------------------------- its rating in the league
    def rating_members(self) -> dict[int, str] | str:
        """The league member name of each opponent seat of this finished game, or why it is not rated."""
        from policies.players import bot_names

        if self.site.league is None:
            return "not rated: this server has no league"
        if not self.name:
            return "not rated: you gave no name"
        from policies.league.store import LeagueStore

        with LeagueStore.open(self.site.league.db_path, create=False, read_only=True) as store:
            members = store.members()
        out = {}
        for seat, opponent in self.opponents.items():
            if self.specs[seat] != opponent.spec:
                return f"not rated: {self.names[seat]}'s agent was replaced by {REPLACEMENT}"
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

    def rate(self) -> str | None:
        """A finished game of a named person against league members, rated in the league: the person is member
        ``human:<name>`` (kind human), the game a match of its own rating round, every seat's openskill rating
        updated from it. What came of it, for the page; None without a league. One short transaction, which also
        checks the site's limits and keys the game by its id (module docstring): a training run writes to the same
        database, and another server may rate there too."""
        if self.site.league is None:
            return None
        from policies.league.league import HUMAN_ROUND, rate_round
        from policies.league.store import HUMAN_KIND, DamagedMemberError, LeagueStore, person_name

        limits = self.site.limits
        was_pending, self.rating_pending = self.rating_pending, False
        try:
            seats = self.rating_members()
            if isinstance(seats, str):
                return seats
            name = person_name(self.name)
            with self.site.rating_lock, LeagueStore.open(self.site.league.db_path, create=False) as store:
                with store.transaction():
                    if store.site_game(self.id) is not None:
                        return "rated once already: a game counts once in the league"
                    claim = store.claim(name)
                    if claim is None or self.claim is None or not secrets.compare_digest(claim["token"], self.claim):
                        # removed from the league, or released, while this game went on: the person's rating is
                        # not made again without a claim, nor given to whoever claimed the name since
                        return (f"not rated: the name {self.name} is no longer claimed by the browser that started "
                                "this game (it was removed from the league or released); start a new game to "
                                "claim a name")
                    person = store.member(name)
                    if person is not None and person.kind != HUMAN_KIND:
                        return f"not rated: league member {name} is an agent's name, not a person's"
                    since = time.time() - HOUR
                    if store.site_games_since(since, person=name) >= limits.rated_per_name:
                        return (f"not rated: {self.name} has had {limits.rated_per_name} rated games in the last "
                                "hour, the most a name may have")
                    if self.address is not None and \
                            store.site_games_since(since, address=self.address) >= limits.rated_per_address:
                        return (f"not rated: this address has had {limits.rated_per_address} rated games in the "
                                "last hour, the most one address may have")
                    person = store.ensure_member(name, kind=HUMAN_KIND, spec=HUMAN)
                    ids = [person.id if s == self.you else store.member(seats[s]).id
                           for s in range(self.rules.players)]
                    places = [int(p) for p in self.game.places]
                    round_id = store.add_round(label=HUMAN_ROUND, variant=self.rules.name)
                    store.add_matches(round_id, self.rules.name, [(ids, places)])
                    current = {m: (store.member(m).mu, store.member(m).sigma) for m in ids}
                    store.set_ratings(round_id, rate_round([(ids, places)], current, HUMAN_ROUND))
                    store.add_site_game(self.id, name, self.address, round_id)
                    after = store.member(person.id)
            return f"{RATED}{name}: mu {after.mu:.1f}, sigma {after.sigma:.1f}"
        except DamagedMemberError as err:  # a row no retry mends: this game alone is not rated
            log.error("game %s is not rated: %s", self.id, one_line(err))
            return (f"not rated: league member {err.damaged.name}'s rating in the league database is damaged (the "
                    "server's log says how)")
        except Exception as err:  # noqa: BLE001 - the league is another process's file: gone, full, locked, replaced
            # The rating waits, kept with the game in games.db, and is tried again until the league takes it
            # (`GameTable.retry`); the page is told so without the server's path or the error's name.
            if not was_pending:
                log.error("game %s could not be rated in the league now, and is kept to be rated later: %s",
                          self.id, one_line(err))
            self.rating_pending = True
            return RATING_LATER

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
            "warning": self.site.storage_warning(),
        }


# ------------------------------------------------------------------ the API's bodies
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
    """The browser's player token, as a new game's ``player_token`` gave it (kept in its localStorage): GET
    /api/saved lists its unfinished games. Without one, the game answers a new one; a token the server did not
    issue is refused (403)."""
    name: str | None = Field(None, max_length=200)
    """The person's name for the league: 1-32 letters, digits, spaces, '.', '_' or '-'."""
    name_token: str | None = Field(None, pattern=NAME_TOKEN_PATTERN)
    """The secret the server gave the browser that claimed the name (its first game's ``name_token``): needed for
    every later game under the name, with a league."""


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


# ------------------------------------------------------------------ the games in memory, and the API over them
class GameTable:
    """The games in memory, by id, at most `MAX_GAMES`: an unfinished one dropped from memory, or not loaded
    yet, comes back from games.db when it is asked for."""

    def __init__(self, site: Site):
        self.site = site
        self._games: dict[str, Session] = {}
        self._lock = threading.Lock()
        self._retrying = threading.Lock()

    def restore_unfinished(self) -> None:
        """The unfinished games of the last run, played on from where they were."""
        if self.site.shelf is None:
            return
        rows = self.site.shelf.rows(limit=MAX_GAMES)
        if rows:
            log.info("restoring %d unfinished games from %s", len(rows), self.site.shelf.path)
        restored = [self.restore(row) for row in rows]
        if restored:
            log.info("restored %d unfinished games from %s", sum(g is not None for g in restored),
                     self.site.shelf.path)

    def restore(self, row: dict[str, Any]) -> Session | None:
        """An unfinished game from games.db into memory, or None (logged) when it cannot be replayed."""
        try:
            game = Session.restore(self.site, row)
        except Exception as err:  # noqa: BLE001 - a row of another version, an agent that cannot play it now
            log.error("unfinished game %s cannot be restored: %s", row.get("id"), one_line(err))
            return None
        self.keep(game)
        if game.game.over:
            game.persist()  # a game kept for its record or rating: settled in its replay, its row goes
        return game

    def keep(self, game: Session) -> None:
        with self._lock:
            # out of memory only: an unfinished one stays in games.db and comes back
            if len(self._games) >= MAX_GAMES:
                oldest = min(self._games.values(), key=lambda g: (not g.game.over or g.waits, g.touched))
                del self._games[oldest.id]
            self._games.setdefault(game.id, game)

    def session(self, game_id: str) -> Session:
        with self._lock:
            found = self._games.get(game_id)
        if found is None and self.site.shelf is not None and len(game_id) <= SHOWN_CHARS:
            # a game held out of memory by MAX_GAMES: back from games.db, looked up by its primary key
            row = self.site.shelf.row(game_id)
            if row is not None and self.restore(row) is not None:
                with self._lock:
                    found = self._games.get(game_id)
        if found is None:
            raise Refused(404, f"no game {shown(game_id)} on this server: start a new game")
        found.touched = time.monotonic()
        return found

    def forget(self, game_id: str) -> None:
        with self._lock:
            gone = self._games.pop(game_id, None)
        if gone is not None:
            gone.expired = True  # a request still playing it must not write its row back

    def _release_claim_of(self, game_id: str) -> None:
        """A game given up for room: its claim on a name, if the name never played, is released with it."""
        with self._lock:
            game = self._games.get(game_id)
        row = self.site.shelf.row(game_id) if game is None and self.site.shelf is not None else None
        if game is not None:
            release_claim(self.site, game.name, game.claim)
        elif row is not None:
            release_claim(self.site, row.get("name"), row.get("claim"))

    def retry(self) -> None:
        """Finished games still waiting for their record file or their rating (`Session.waits`) try again, the
        oldest first: each new game and each start of the server tries, so that a records disk with room again,
        or a league that is back, settles them. One thread tries at a time; a try that fails again ends the
        round (the disk or the league is still not back)."""
        if not self._retrying.acquire(blocking=False):
            return
        try:
            with self._lock:
                waiting = sorted((g for g in self._games.values() if g.waits and not g.expired),
                                 key=lambda g: g.started)
            for game in waiting:
                with game.lock:
                    if not game.waits:
                        continue
                    if game.record_failed:
                        game.write_record()
                    if game.rating_pending:
                        game.settle_rating()
                        if not game.rating_pending:
                            log.info("game %s, kept for later, is settled: %s", game.id, game.rated)
                    game.persist()
                    if game.waits:
                        return
        finally:
            self._retrying.release()

    def unfinished(self, *, player: str | None = None, address: str | None = None) -> list[Session]:
        """The unfinished games in memory, of `player` or from `address` (all without either)."""
        with self._lock:
            return [g for g in self._games.values() if not g.game.over
                    and (player is None or g.player == player) and (address is None or g.address == address)]

    def make_room(self, player: str | None, address: str | None) -> None:
        """Room for one more unfinished game of this browser (`player`, else its address), from this address, and
        on this server (`launch.web.site.Limits`): past a cap, the oldest game under it that no one has played for
        ``idle_minutes`` is expired, else `Refused` 429. Past the server's cap, the address with the most
        unfinished games gives way first, its oldest game, while it has more than this address (`_give_way`): a
        fair share per address, so that a few busy addresses cannot lock everyone else out, and an address
        with no game can always start one."""
        limits, shelf = self.site.limits, self.site.shelf
        idle_since = time.time() - 60 * limits.idle_minutes
        browser = {"player": player} if player is not None else {"address": address}
        caps = [(browser, limits.games_per_browser, "this browser"),
                ({"address": address}, limits.games_per_address, "this address"), ({}, limits.games_total, "this server")]
        for scope, cap, whose in caps:
            if "address" in scope and scope["address"] is None:
                continue
            while self._count(scope) >= cap:
                heavier = self._give_way(address) if not scope else None
                oldest = heavier or self._oldest_idle(scope, idle_since)
                if oldest is None:
                    raise Refused(429, f"{whose} has {cap} unfinished games, the most it may keep, and none has "
                                       f"been idle for {limits.idle_minutes} minutes: finish or leave one first")
                if heavier is not None:
                    log.info("unfinished game %s gave way: this server is at its cap of %d, and the address that "
                             "started it has the most unfinished games", oldest, cap)
                else:
                    log.info("unfinished game %s expired: idle for over %d minutes, and %s is at its cap of %d",
                             oldest, limits.idle_minutes, whose, cap)
                self._release_claim_of(oldest)
                if shelf is not None:
                    try:
                        shelf.drop(oldest)
                    except Exception:  # noqa: BLE001 - said once by the shelf; memory is what counts then
                        pass
                self.forget(oldest)

    def _count(self, where: dict[str, str]) -> int:
        shelf = self.site.shelf
        if shelf is not None and shelf.problem is None and not shelf.gone:
            return shelf.count(**where)
        return len(self.unfinished(**where))  # games.db cannot be trusted now: the games in memory

    def _give_way(self, address: str | None) -> str | None:
        """The game that gives way to a new one from `address` on a full server: the oldest of the address with
        the most unfinished games, when that address has more than `address` has; else None."""
        if address is None:
            return None
        shelf = self.site.shelf
        if shelf is not None and shelf.problem is None and not shelf.gone:
            heaviest = shelf.heaviest()
            if heaviest is None or heaviest[0] == address or heaviest[1] <= shelf.count(address=address):
                return None
            return shelf.oldest_of(heaviest[0])
        games = self.unfinished()  # games.db cannot be trusted now: the games in memory
        counts: dict[str | None, int] = {}
        for game in games:
            counts[game.address] = counts.get(game.address, 0) + 1
        if not counts:
            return None
        most = max(counts.values())
        heavy = min((g for g in games if counts[g.address] == most), key=lambda g: g.touched)
        if heavy.address == address or most <= counts.get(address, 0):
            return None
        return heavy.id

    def _oldest_idle(self, where: dict[str, str], idle_since: float) -> str | None:
        shelf = self.site.shelf
        if shelf is not None and shelf.problem is None and not shelf.gone:
            return shelf.oldest_idle(idle_since, **where)
        idle = time.monotonic() - (time.time() - idle_since)
        games = sorted(self.unfinished(**where), key=lambda g: g.touched)
        return games[0].id if games and games[0].touched < idle else None

    def unfinished_of(self, player: str) -> list[Session]:
        """The unfinished games started with a browser's player token, newest first."""
        with self._lock:
            mine = [g for g in self._games.values() if g.player == player and not g.game.over]
        mine.sort(key=lambda g: g.started, reverse=True)
        return mine


def claim_name(site: Site, name: str, secret: str | None, address: str | None) -> tuple[str | None, str | None]:
    """With a league, the person's right to play under `name` (folded: `policies.league.store.person_name`): its
    first game claims it (the new secret is returned, to give the browser once), a later one must bring the secret
    (`Refused` 403 otherwise); the second value is the SHA-256 of the secret the game plays under. Past the site's
    new names per hour (names that have played), a new name is `Refused` 429; a claim that never played is released
    after `UNPLAYED_CLAIM_SECONDS`, and an address holds at most `UNPLAYED_CLAIMS_PER_ADDRESS` of them. Without a
    league a name rates nothing and claims nothing: (None, None)."""
    if site.league is None:
        return None, None
    from policies.league.store import HUMAN_KIND, LeagueStore, person_name

    member_name = person_name(name)
    try:
        with site.rating_lock, LeagueStore.open(site.league.db_path, create=False) as store:
            with store.transaction():
                store.release_unplayed_claims(time.time() - UNPLAYED_CLAIM_SECONDS)
                claim = store.claim(member_name)
                if claim is not None:
                    if secret is None or not secrets.compare_digest(secret_hash(secret), claim["token"]):
                        raise Refused(403, f"the name {shown(name)} is taken: it plays rated games only from the "
                                           "browser that claimed it; play under another name, or without one")
                    return None, claim["token"]
                member = store.member(member_name)
                if member is not None and member.kind != HUMAN_KIND:
                    raise Refused(403, f"the name {shown(name)} is a league agent's: play under another name")
                cap = site.limits.new_names
                if store.claims_since(time.time() - HOUR) >= cap:
                    raise Refused(429, f"{cap} new names played rated games on this site in the last hour, the "
                                       "most it allows: play under a name you have, or without one, or try later")
                if address is not None:
                    unplayed = store.unplayed_claims(address)
                    for oldest in unplayed[:max(0, len(unplayed) - UNPLAYED_CLAIMS_PER_ADDRESS + 1)]:
                        store.release_claim(oldest)
                        log.info("claim on %s released: its address claimed %d names that have not played",
                                 oldest, UNPLAYED_CLAIMS_PER_ADDRESS)
                secret = secrets.token_urlsafe(24)
                store.add_claim(member_name, secret_hash(secret), address)
                return secret, secret_hash(secret)
    except Refused:
        raise
    except Exception as err:  # noqa: BLE001 - the league is another process's file (locked, replaced)
        log.error("name %s could not be claimed in the league: %s", shown(name), one_line(err))
        raise Refused(503, "the league cannot be written now, so a name cannot be claimed: try again, or play "
                           "without a name") from None


def release_claim(site: Site, name: str | None, claim: str | None) -> None:
    """The claim a game was started under, released when its person never played a rated game: its game ended
    unrated or was given up (expired), so the name is free again. The league failing is logged: the claim then
    goes after `UNPLAYED_CLAIM_SECONDS`."""
    if site.league is None or name is None or claim is None:
        return
    from policies.league.store import LeagueStore, person_name

    try:
        with site.rating_lock, LeagueStore.open(site.league.db_path, create=False) as store:
            store.release_claim(person_name(name), claim)
    except Exception as err:  # noqa: BLE001 - the league is another process's file; the game is done either way
        log.error("the claim on name %s could not be released: %s", shown(name), one_line(err))


def routes(site: Site) -> APIRouter:
    """The game API, over the site's games: those restored from games.db and those started from here on."""
    from ludo_env.rules import Rules, RulesError

    router = APIRouter()
    games = GameTable(site)
    games.restore_unfinished()
    games.retry()  # games kept for a record or a rating that a restore's replay could not settle either
    new_game_lock = threading.Lock()

    @router.get("/api/options")
    def options():
        return {"variants": variants(), "league": site.league is not None,
                "opponents": [{"id": o.id, "label": o.label, "kind": o.kind,
                               **({"variant": o.plays[0], "players": o.plays[1]} if o.plays else {})}
                              for o in site.opponents()]}

    @router.post("/api/games", responses=refusals(400, 403, 413, 422, 429, 503))
    def new_game(body: NewGame, request: Request):
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
        player = checked_player(site, body.player)
        address = address_hash(client_address(site, request))
        games.retry()  # finished games waiting for a record or a rating: the disk or the league may be back
        with new_game_lock:  # the caps and the claim are checked and taken by one request at a time
            games.make_room(player, address)
            token, claim = claim_name(site, body.name, body.name_token, address) if body.name is not None \
                else (None, None)
            issued = issue_player(site) if player is None else None
            game = Session(site, rules, body.seat, dict(zip(others, chosen)), secrets.randbelow(10**6),
                           player=player or issued, name=body.name, address=address, claim=claim)
            games.keep(game)
            game.persist()
        view = game.view()
        if token is not None:
            view["name_token"] = token  # said once: the browser keeps it for every later game under the name
        if issued is not None:
            view["player_token"] = issued  # said once: the browser keeps it and lists its games with it
        return view

    @router.get("/api/games/{game_id}/version", response_model=Version, responses=refusals(404, 422))
    def game_version(game_id: str):
        """What a tab polls to follow a game played in another tab: cheap, and the same count as the view's."""
        game = games.session(game_id)
        with game.lock:
            return {"version": len(game.events), "turn": game.turn()}

    @router.get("/api/saved", response_model=SavedList, responses=refusals(403, 422))
    def saved(player: str = Query(pattern=PLAYER_PATTERN)):
        """The unfinished games started with this browser's player token (one the server issued), newest first."""
        checked_player(site, player)
        return {"games": [{"id": g.id, "variant": g.rules.name, "players": g.rules.players, "you": g.you,
                           "opponents": [g.labels[s] for s in range(g.rules.players) if s != g.you],
                           "moves": sum(e[0] == "m" for e in g.events),
                           "started": g.started.strftime("%Y-%m-%d %H:%M UTC")}
                          for g in games.unfinished_of(player)[:50]]}

    @router.get("/api/games/{game_id}", responses=refusals(404, 422))
    def get_game(game_id: str):
        game = games.session(game_id)
        with game.lock:
            return game.view()

    @router.post("/api/games/{game_id}/roll", responses=refusals(404, 409, 413, 422))
    def roll(game_id: str):
        game = games.session(game_id)
        with game.lock:
            game.roll()
            return game.view()

    @router.post("/api/games/{game_id}/move", responses=refusals(400, 404, 409, 413, 422))
    def move(game_id: str, body: Move):
        game = games.session(game_id)
        with game.lock:
            game.move(body.token, body.seat)
            return game.view()

    @router.post("/api/games/{game_id}/step", responses=refusals(404, 409, 413, 422))
    def step(game_id: str):
        game = games.session(game_id)
        with game.lock:
            game.step()
            return game.view()

    return router
