"""Game records: one JSON line per decision of one player, the data imitation learning reads (seed 001 §2).

Seed 001 trained its network to copy a person: 363 decisions from five games
against three random players. Here `launch/play.py` records the person's
decisions (``record=<file>``, on by default) and `launch/evaluate.py` records
the decisions of any one entry of a tournament (``record=<file>
record_player=<entry index>``; `policies.tournament.play_tournament`), so a
built-in bot can stand in for the person where there is none.
``python launch/train.py +exp=imitate 'algo.records=[<file>, ...]'`` learns
from them (`launch.training.trainers.imitate`).

Line format ``ludo-league-record/1``: one JSON object per decision, with

==========  ==================================================================
format      ``"ludo-league-record/1"``
variant     the rule set's name (``conf/variant``)
players     seats in the game
rules       the rule fields that differ from ``Rules.load(variant,
            players=players)``: ``{}`` unless rules were overridden
game        the game's id: ``"evaluate:<seed>:<game index>"`` (the
            tournament's game, replayable), ``"play:<seed>:<start time>"``
player      the recorded player's spec; ``"human"`` at launch/play.py
seat        the recorded seat (absolute, as ``state[CURRENT]``)
state       the engine row before the move, its die rolled: int16 x 26 as a
            list (`ludo_env.engine.layout`)
die         the die to move by (``state[DIE]``)
legal       the legal tokens, four 0/1
chosen      the token moved (legal)
==========  ==================================================================

Every decision of the recorded seat is a line, forced ones (a single legal
token) included. Files are only appended to, so one file gathers many
sessions, and a game's lines stay in the order they were played.
`load_decisions` reads any number of files, checks every line and raises
`RecordError` naming the file and line of the first bad one.
"""
from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ludo_env.engine.layout import CURRENT, DIE, STATE_DTYPE, STATE_LEN
from ludo_env.rules import MAX_TOKENS, Rules, RulesError
from policies.json_data import read_json

RECORD_FORMAT = "ludo-league-record/1"
FIELDS = ("format", "variant", "players", "rules", "game", "player", "seat", "state", "die", "legal", "chosen")


class RecordError(ValueError):
    """A record file that cannot be read; one line naming the file and line."""


def rule_changes(rules: Rules) -> dict[str, Any]:
    """The fields of `rules` that differ from its named variant's (all of them for a variant not in conf/)."""
    try:
        named = Rules.named(rules.name, players=rules.players).to_dict()
    except RulesError:
        return rules.to_dict()
    return {k: v for k, v in rules.to_dict().items() if named[k] != v}


class RecordWriter:
    """Appends one player's decisions in one rule set to a JSONL file (its folder created on the first write)."""

    def __init__(self, path: str | Path, rules: Rules, player: str):
        self.path = Path(path)
        self.common = {"format": RECORD_FORMAT, "variant": rules.name, "players": rules.players,
                       "rules": rule_changes(rules)}
        self.player = player
        self.count = 0

    def write(self, games: Sequence[str], states: np.ndarray, masks: np.ndarray, chosen: np.ndarray) -> None:
        """One line per row: game ids, engine rows waiting on the recorded seat's move, legal masks, choices."""
        lines = []
        for game, state, mask, token in zip(games, np.asarray(states).tolist(), np.asarray(masks).tolist(),
                                            np.asarray(chosen).tolist()):
            lines.append(json.dumps({**self.common, "game": game, "player": self.player, "seat": state[CURRENT],
                                     "state": state, "die": state[DIE], "legal": mask, "chosen": token}) + "\n")
        if not lines:
            return
        existed = self.path.exists()
        try:
            self._append(lines, existed)
        except OSError as err:
            raise RecordError(f"record file '{self.path}' cannot be written: {err.strerror or err}") from None
        self.count += len(lines)

    def _append(self, lines: list[str], existed: bool) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab", buffering=0) as f:  # unbuffered: nothing left to flush after a failure
            start = f.seek(0, os.SEEK_END)
            data = memoryview("".join(lines).encode())
            try:
                while data:
                    data = data[f.write(data):]
            except BaseException:
                # a full disk: no half line for a reader to choke on, no empty file this write created
                f.truncate(start)
                if not existed and start == 0:
                    self.path.unlink(missing_ok=True)
                raise


@dataclass
class Decisions:
    """Recorded decisions as arrays, one row each, in file and line order."""

    rules: Rules
    states: np.ndarray
    """(N, STATE_LEN) int16 engine rows."""
    legal: np.ndarray
    """(N, 4) int8 legal masks."""
    chosen: np.ndarray
    """(N,) int64 tokens moved."""
    games: np.ndarray
    """(N,) str: ``<file>:<game id>``, the unit a validation split keeps whole."""
    players: np.ndarray
    """(N,) str: the recorded player's spec."""

    def __len__(self) -> int:
        return len(self.chosen)

    def subset(self, rows: np.ndarray) -> Decisions:
        return dataclasses.replace(self, states=self.states[rows], legal=self.legal[rows], chosen=self.chosen[rows],
                                   games=self.games[rows], players=self.players[rows])


def read_records(path: str | Path, data: bytes | None = None) -> list[dict[str, Any]]:
    """The checked lines of one record file; `data`: its bytes, read already by a caller that opens files its own
    way (the site's, which follows no link), `path` then only names it."""
    path = Path(path)
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as err:
            raise RecordError(f"record file '{path}' cannot be read: {err.strerror or err}") from None
    records = []
    # Line by line, so damaged bytes (a torn copy, a binary file given by mistake) are named by their line.
    for number, raw in enumerate(data.splitlines(), 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise RecordError(f"{path}:{number}: not a {RECORD_FORMAT} line: byte {err.start + 1} is not "
                              "UTF-8 text (a damaged or binary file)") from None
        if line.strip():
            try:
                records.append(_checked(read_json(line)))
            except (ValueError, TypeError, KeyError) as err:
                raise RecordError(f"{path}:{number}: not a {RECORD_FORMAT} line: {' '.join(str(err).split())}") from None
    return records


def _checked(record: Any) -> dict[str, Any]:
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        raise ValueError(f"format is not {RECORD_FORMAT!r}")
    missing = [f for f in FIELDS if f not in record]
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    state, legal, chosen = record["state"], record["legal"], record["chosen"]
    if not (isinstance(state, list) and len(state) == STATE_LEN and all(isinstance(v, int) for v in state)):
        raise ValueError(f"state is not {STATE_LEN} integers")
    if not (isinstance(legal, list) and len(legal) == MAX_TOKENS and set(legal) <= {0, 1} and any(legal)):
        raise ValueError("legal is not four 0/1 with at least one 1")
    if not (isinstance(chosen, int) and 0 <= chosen < MAX_TOKENS and legal[chosen]):
        raise ValueError(f"chosen={chosen!r} is not a legal token")
    if not isinstance(record["variant"], str):
        raise ValueError("variant is not a variant's name")
    if not isinstance(record["rules"], dict):
        raise ValueError("rules is not a mapping of rule fields")
    if isinstance(record["players"], bool) or not isinstance(record["players"], int):
        raise ValueError("players is not an integer")
    if state[CURRENT] != record["seat"] or state[DIE] != record["die"]:
        raise ValueError("seat or die disagrees with the state")
    return record


def load_decisions(paths: Sequence[str | Path], contents: Sequence[bytes] | None = None) -> Decisions:
    """Every decision of the record files `paths`, which must share one rule set; `contents`: their bytes, read
    already (`read_records`)."""
    rows: list[dict[str, Any]] = []
    games: list[str] = []
    rule_sets: dict[str, Rules] = {}
    for k, path in enumerate(paths):
        records = read_records(path, None if contents is None else contents[k])
        for number, record in enumerate(records, 1):
            key = json.dumps([record["variant"], record["players"], record["rules"]], sort_keys=True)
            if key not in rule_sets:
                if "players" in record["rules"] and "name" not in record["rules"]:
                    raise RecordError(f"{path}: rules of record {number}: players is given twice, in rules and "
                                      "beside them: a record gives its player count once, in its players field")
                try:
                    changes = record["rules"]  # every field, with its name, for rules that are no file in conf/
                    # A record is data: its variant is a name of conf/variant (or the rules come whole, as a
                    # mapping), never a path to read.
                    rule_sets[key] = (Rules.load(changes) if "name" in changes else
                                      Rules.named(record["variant"], players=record["players"], **changes))
                except RulesError as err:
                    raise RecordError(f"{path}: rules of record {number}: {err}") from None
            games.append(f"{path}:{record['game']}")
        rows += records
    if not rows:
        raise RecordError(f"no decisions in {', '.join(str(p) for p in paths)}")
    if len(rule_sets) > 1:
        names = sorted({f"{r.name} ({r.players} players{', changed' if rule_changes(r) else ''})"
                        for r in rule_sets.values()})
        raise RecordError(f"the records mix rule sets ({', '.join(names)}): give files of one rule set")
    return Decisions(
        rules=next(iter(rule_sets.values())),
        states=np.array([r["state"] for r in rows], dtype=STATE_DTYPE),
        legal=np.array([r["legal"] for r in rows], dtype=np.int8),
        chosen=np.array([r["chosen"] for r in rows], dtype=np.int64),
        games=np.array(games),
        players=np.array([r["player"] for r in rows]),
    )
