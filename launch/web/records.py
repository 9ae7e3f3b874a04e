"""The replay viewer: its page, the record files it lists (``GET /api/records``: the records folder's and those
given on the command line), and a game of one replayed through the engine, each move with its options and, from an
agent this server plays, its move probabilities or values (``GET /api/replay``)."""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import APIRouter, Query
from fastapi.responses import FileResponse

from launch.play import COLOUR_NAMES, classic_geometry, describe_move
from launch.web.common import MAX_ERROR_CHARS, STATIC, Refused, log, one_line, refusals, shown
from launch.web.games import board_geometry, move_options, token_places
from launch.web.site import Site, short_label
from ludo_env.engine.layout import CURRENT


def players_by_seat(decisions, rows) -> list[str]:
    """The game's players in seat order, each seat by the first player that decided there (a seat handed to
    `random` after its agent failed still shows who sat down)."""
    seats: dict[int, str] = {}
    for seat, player in zip(decisions.states[rows, CURRENT].tolist(), decisions.players[rows]):
        seats.setdefault(int(seat), short_label(str(player)))
    return [seats[seat] for seat in sorted(seats)]


MAX_RECORD_MB = 64
"""The largest record file the viewer reads; a site game's record is tens of KB, an evaluation's few MB."""


class NoRecordFile(Exception):
    """Nothing the viewer reads is at a path: missing, a link (to anything, or dangling), a FIFO, a device, a
    folder. Every one gets the same answer, so that no answer tells whether a path exists or what it is."""


def open_record(path: Path) -> tuple[int, os.stat_result]:
    """A read-only descriptor of the regular file at `path` and its fstat (`policies.files.open_regular`: no link
    followed, no wait on a FIFO); `NoRecordFile` for anything else, whatever it is."""
    from policies.files import FileRefused, open_regular

    try:
        fd = open_regular(path)
    except (OSError, FileRefused):
        raise NoRecordFile from None
    return fd, os.fstat(fd)


def read_at_most(fd: int, size: int) -> bytes:
    """The file's bytes up to `size` (its size when opened), from the descriptor: what was checked is what is read."""
    with os.fdopen(fd, "rb", closefd=False) as f:
        return f.read(size)


class RecordShelf:
    """The record files the viewer lists: the records folder's, and those given on the command line. Each is
    opened without following links and without blocking, checked to be a regular file under `MAX_RECORD_MB`
    by its fstat, and only then read, from that descriptor."""

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
        """The file's `policies.records.Decisions`, read again only when the file changed. `NoRecordFile` when
        no regular file is there (`open_record`); a file that is too large or cannot be read raises `Refused`
        (422) naming it by its key, and is logged once per change, not per request."""
        from policies.records import load_decisions

        fd, status = open_record(path)
        try:
            version = (status.st_dev, status.st_ino, status.st_mtime_ns, status.st_size)
            with self._lock:
                cached = self._cache.get(path)
                if cached is None or cached[0] != version:
                    if status.st_size > MAX_RECORD_MB * 1024 * 1024:  # refused by its size: nothing is read
                        cached = (version, Refused(422, f"{key} is {status.st_size / 2**20:.0f} MB, over the "
                                                        f"{MAX_RECORD_MB} MB the viewer reads"))
                    else:
                        try:
                            cached = (version, load_decisions([path], [read_at_most(fd, status.st_size)]))
                        except Exception as err:  # noqa: BLE001 - any damage fails this file alone
                            problem = record_problem(err, path, key)
                            log.error("record file %s skipped: %s", path, problem)
                            cached = (version, Refused(422, f"{key} is damaged: {problem}"))
                    self._cache[path] = cached
        finally:
            os.close(fd)
        if isinstance(cached[1], Refused):
            raise cached[1]
        return cached[1]

    def listing(self) -> list[dict[str, Any]]:
        out = []
        files = self.files()
        listed = set(files.values())
        with self._lock:  # files rotated away or removed are forgotten
            self._cache = {path: cached for path, cached in self._cache.items() if path in listed}
        for key, path in files.items():
            try:
                decisions = self.decisions(key, path)
            except NoRecordFile:
                continue  # listed as a missing file is: not at all
            except Refused as err:
                out.append({"file": key, "error": str(err)})
                continue
            for k, (game, rows) in enumerate(games_of(decisions).items()):
                out.append({"file": key, "game": k, "name": game.partition(":")[2], "decisions": len(rows),
                            "variant": decisions.rules.name, "players": players_by_seat(decisions, rows)})
        return out

    def replay(self, file_key: str, game_index: int) -> dict[str, Any]:
        missing = Refused(404, f"no record file {shown(file_key)}: choose one from GET /api/records")
        path = self.files().get(file_key)
        if path is None:
            raise missing
        try:
            decisions = self.decisions(file_key, path)
        except NoRecordFile:
            raise missing from None
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


def routes(site: Site) -> APIRouter:
    """The replay viewer's page and API, over the site's record files."""
    router = APIRouter()
    shelf = RecordShelf(site)

    @router.get("/replay", include_in_schema=False)
    def replay_page():
        return FileResponse(STATIC / "replay.html", headers={"Cache-Control": "no-store"})

    @router.get("/api/records")
    def records():
        return {"records": shelf.listing()}

    @router.get("/api/replay", responses=refusals(404, 422))
    def replay(file: str = Query(max_length=300), game: int = Query(0, ge=0, le=10**6)):
        return shelf.replay(file, game)

    return router
