"""What the server was started with (`Site`): the records folder, the league, and the opponents it offers (seed
bots, the champion of each rule set for games of that rule set, agents given on the command line, league members,
each resolved to what plays it by `league_member_spec`), every loaded agent shared by the games it plays in and
timed on each move."""
from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import stat
import threading
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from launch.web.common import Refused, log, one_line, shown
from launch.web.saved import GameShelf

DEFAULT_MOVE_SECONDS = 10.0
PLAYER_KEY = "player.key"
PLAYER_KEY_BYTES = 32
# An agent's first move also compiles its kernels (numba's cache can be cold, torch warms up): it gets longer.
FIRST_MOVE_SECONDS = 120.0


@dataclass(frozen=True)
class Limits:
    """What any visitor can store or rate (`launch/serve.py` settings of the same names). Rated games and new names
    count over the last hour, in the league (so they hold across restarts, and for every server rating there);
    unfinished games are the rows of games.db."""

    rated_per_name: int = 20
    """Rated games a name may have in an hour; a game past it is played and recorded, not rated."""
    rated_per_address: int = 60
    """Rated games an address (the browser's IP address) may have in an hour, whatever names it plays under."""
    new_names: int = 30
    """Names the site lets be claimed in an hour; a new name past it is refused (429) until the hour has passed."""
    games_per_browser: int = 10
    """Unfinished games of one browser (its player token, or its address when it sends none)."""
    games_per_address: int = 100
    """Unfinished games started from one address."""
    games_total: int = 2000
    """Unfinished games of the whole server."""
    idle_minutes: int = 60
    """A new game beyond a cap expires the oldest unfinished game under that cap when no one has played it for
    this long; otherwise it is refused (429)."""
    records_kept: int = 5000
    """Finished games' record files kept in the records folder; past it, or past `records_mb`, the oldest go
    (with their human/ copy) as each new one is written."""
    records_mb: int = 500
    """Megabytes the finished games' record files (human/ copies included) may take; the oldest go first."""

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


@dataclass(frozen=True)
class Opponent:
    id: str
    """What the browser sends."""
    label: str
    kind: str
    """bot, agent or league."""
    spec: str
    """The `policies.players` spec; never leaves the server."""
    plays: tuple[str, int] | None = None
    """(variant, player count) of the only games it is offered for (a champion's); None: any game."""


def short_label(spec: str) -> str:
    """A spec short enough for a seat label: a path by its last folder, options kept."""
    from policies.rollout import ROLLOUT_PREFIX

    if spec.startswith(ROLLOUT_PREFIX):  # rollouts over a policy: that policy's label inside
        inner, sep, options = spec[len(ROLLOUT_PREFIX):].partition("?")
        return f"{ROLLOUT_PREFIX}{short_label(inner)}{sep}{options}"
    for prefix in ("ckpt:", "search:", "mcts:"):
        if spec.startswith(prefix):
            path, sep, options = spec[len(prefix):].partition("?")
            return f"{prefix}{Path(path.rstrip('/')).name or path}{sep}{options}"
    return spec


class Site:
    """What the server was started with: opponents, the records folder, the league and extra record files."""

    def __init__(self, records: Path, agents: list[str] | None = None, league=None,
                 replays: list[Path] | None = None, move_seconds: float | None = DEFAULT_MOVE_SECONDS,
                 limits: Limits | None = None, trusted_proxies: list[str] | None = None):
        from policies.players import bot_names

        self.records = records
        self.limits = limits or Limits()
        # The proxies whose X-Forwarded-For is believed (`launch.web.games.client_address`); none unless named.
        self.trusted_proxies = [ipaddress.ip_network(p, strict=False) for p in trusted_proxies or []]
        self.league = league  # a launch.leaderboard.Board, or None
        self.replays = list(replays or [])
        self.move_seconds = move_seconds  # an agent's time for one move; None: no limit
        self.bots = [Opponent(f"bot:{name}", name, "bot", name) for name in bot_names()]
        self.champions = [Opponent(spec, f"champion ({variant})", "champion", spec, plays)
                          for spec, variant, plays in shipped_champions()]
        self.agents = [Opponent(f"agent:{k}", short_label(spec), "agent", spec) for k, spec in enumerate(agents or [])]
        self._loaded: dict[str, Any] = {}  # spec -> a loaded agent, shared by games
        # A loaded agent is asked by one game at a time (torch and search keep state); each has its own lock so
        # that a slow agent holds up only the games it plays in.
        self._agent_locks: dict[str, threading.Lock] = {}
        self._warmed: set[str] = set()  # specs of loaded agents that have made their first move
        self._load_lock = threading.Lock()
        self._league_error: str | None = None
        self.rating_lock = threading.Lock()  # one league rating at a time from this server's games
        try:
            self.shelf: GameShelf | None = GameShelf(records)  # unfinished games, kept across restarts
        except Exception as err:  # noqa: BLE001 - an unwritable folder: games are played, not kept
            log.error("unfinished games cannot be kept in %s: %s", records, one_line(err))
            self.shelf = None
        self.player_key = player_key(records)  # after the shelf, which makes the folder

    def storage_warning(self) -> str | None:
        """What every game's page says while unfinished games cannot be kept on disk (games.db gone or
        unwritable), or None."""
        if self.shelf is None:
            return ("this server cannot keep unfinished games on disk: a game not finished before the server "
                    "stops is lost")
        if self.shelf.problem is not None:
            return ("this server cannot keep unfinished games on disk now (games.db failed; see the server's log): "
                    "a game not finished before the server stops is lost")
        return None

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

    def opponents(self) -> list[Opponent]:
        return self.bots + self.champions + self.agents + self.league_members()

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
        # What the browser is told names the opponent by its label, never by its spec (a path, a module): the
        # spec and the loader's own words go to the server's log.
        with self._load_lock:
            try:
                if opponent.spec not in self._loaded:
                    self._keep(opponent.spec, make_player(opponent.spec, seed=seed))
            except PlayerSpecError as err:
                log.error("opponent %s cannot be loaded: %s", opponent.label, one_line(err))
                raise Refused(422, f"opponent {opponent.label!r} cannot be loaded on this server now (its log says "
                                   "why): choose another") from None
            loaded = self._loaded[opponent.spec]
            if rules is not None:
                try:
                    check_fits(loaded, rules)
                except PlayerSpecError:
                    variant, players = loaded.trained_for
                    raise Refused(422, f"opponent {opponent.label!r} cannot play this game: it was trained for "
                                       f"{players}-player {variant}, this game is {rules.players}-player "
                                       f"{rules.name}") from None
            return loaded

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

        if spec in (o.spec for o in self.agents + self.champions + self.league_members()) and spec not in bot_names():
            try:
                return self.player(Opponent(spec, spec, "agent", spec), 0)
            except Refused:
                return None
        return None


def player_key(records: Path) -> bytes:
    """The server's key for the player tokens it issues (`launch.web.games.issue_player`), kept in
    ``<records>/player.key`` (made once, whole, readable by this user alone) so that a browser's token holds across
    restarts. A key file that is no regular file of its size is not used; a folder where none can be kept gives a
    key for this run only (logged): browsers then get new tokens after a restart."""
    path = records / PLAYER_KEY
    if not os.path.lexists(path):
        tmp = records / f".{PLAYER_KEY}.{os.getpid()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as handle:
                handle.write(secrets.token_bytes(PLAYER_KEY_BYTES))
                handle.flush()
                os.fsync(handle.fileno())
            os.link(tmp, path)  # whole or absent, and never over a key another process made first
        except FileExistsError:
            pass
        except OSError as err:
            log.error("%s cannot be made (%s): player tokens hold until the server stops", path, err.strerror)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            regular = stat.S_ISREG(os.fstat(handle.fileno()).st_mode)
            key = handle.read(PLAYER_KEY_BYTES + 1) if regular else b""
    except OSError as err:
        log.error("%s cannot be read (%s): player tokens hold until the server stops", path, err.strerror)
        return secrets.token_bytes(PLAYER_KEY_BYTES)
    if len(key) != PLAYER_KEY_BYTES:
        log.error("%s is not a file of %d bytes: player tokens hold until the server stops", path, PLAYER_KEY_BYTES)
        return secrets.token_bytes(PLAYER_KEY_BYTES)
    return key


def shipped_champions() -> list[tuple[str, str, tuple[str, int]]]:
    """(spec, variant, (variant, players) it plays) of each champion in this install (`policies.champions`)."""
    from policies.champions import CHAMPION_PREFIX
    from policies.champions import shipped_champions as folders
    from policies.players import trained_for

    found = []
    for variant, folder in folders().items():
        fits = trained_for(folder)
        if fits is not None and fits[0] is not None and fits[1] is not None:
            found.append((f"{CHAMPION_PREFIX}{variant}", variant, (fits[0], fits[1])))
    return found


def league_member_spec(member, db_folder: Path) -> tuple[str, str] | None:
    """The spec that plays league member `member` from this server, and a note for its label; None when it has
    nothing to play now. Paths are the league's, resolved as the league resolves them
    (`policies.league.league.member_policy_folder`: relative to the database's folder), never from the server's
    working folder; ``main`` is the run's newest checkpoint policy, or its best/ one before any checkpoint. A
    ``py:`` spec is code, which a database never names for the site: such a member is not offered."""
    from policies.league.league import member_policy_folder
    from policies.players import PlayerSpecError, stored_spec

    try:
        spec = stored_spec(member.spec, f"league member {member.name}")
    except PlayerSpecError:
        return None
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
    return spec, ""  # a seed bot's name (another spec fails in one line when a game picks it)


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

