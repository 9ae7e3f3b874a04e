"""Play Ludo in the terminal against bots, your own bots or trained agents.

    python launch/play.py opponents='[ckpt:outputs/train/<run>,hybrid,hybrid]' variant=classic
    python launch/play.py opponents='[hybrid]' variant=quick seat=1 seed=7
    python launch/play.py opponents='[py:mybots:FurthestBehind,random,random]' variant.blockades=true delay=0.5

Arguments (``conf/play.yaml``, typed by `PlayConfig`):

* ``opponents``: one player spec per opponent, as anywhere in the platform
  (`policies.players.make_player`): a bot name, ``py:package.module:Class`` or
  ``ckpt:<run | checkpoint | policy folder>``. There are ``1 + len(opponents)``
  players.
* ``variant``: a rule set from ``conf/variant``; ``variant.<field>=value``
  changes one rule (``variant.players`` follows from ``opponents``).
* ``seat`` (default 0): your seat; the opponents take the other seats in the
  order given. Seat 0 rolls first. Seats sit on colours as the rules say
  (two players: red and yellow, opposite each other).
* ``seed`` (default: a fresh one, printed): the dice and the bots'
  randomness; the same seed and the same moves replay the same game.
* ``delay`` (default 0): seconds to pause after each opponent move.
* ``auto_forced`` (default true): when only one of your tokens can move, it
  moves at once (and says so).
* ``record`` (default ``outputs/play/records.jsonl``): every move of yours,
  forced ones too, is appended to this JSONL record file as it is made
  (`policies.records`: the position, the die, the legal tokens, your choice),
  the data ``python launch/train.py +exp=imitate`` learns from (seed 001
  trained its network on a person's games). ``record=null`` records nothing.

How it plays
------------
The game is the engine's checked `ludo_env.engine.Game` under
``Rules.load(variant, players=1 + len(opponents), **overrides)``, the rules the
evaluator and training use. Every roll is drawn for you. Each move is printed
as it happens, e.g. ``green (hybrid) rolls 6: token 0 base -> square 14``.
When it is your move you see the board, the die and each legal token with
what moving it does (``token 2: square 14 -> 19, captures green``); type the
token number and Enter. Anything else re-prompts; ``q`` (or end of input)
quits. Ctrl-C stops at once with one line and exit status 130. At the end the
finishing order is shown and the exit status is 0.

The board
---------
Squares are the board's 0..51 (colour c enters on square 1 + 13c, the seats'
coordinates of ludo_env/rules.py). On the classic 52-square board a 15 x 15 picture
is drawn: ``R2`` is red's token 2, ``R01`` red's tokens 0 and 1 on one square,
``R:3`` three red tokens, ``RG`` tokens of two colours; ``*`` a safe square,
``+`` a star, ``r`` .. ``b`` each colour's home column; tokens in base sit in
their colour's corner and finished tokens in the middle. Below it every
token's place is listed in words (the only view for other board shapes).
Colours are ANSI escape codes when the output is a terminal and ``NO_COLOR``
is not set (https://no-color.org); otherwise the text is plain.

A bad argument (unknown key or rule, a bad player spec, a seat that does not
exist) prints one line to stderr and exits 2.
"""
from __future__ import annotations

import logging
import os
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import launch  # noqa: F401  (first: it refuses a Python other than 3.11 in one line)

# isort: split
from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

from launch.cli import (
    RAY_DEPRECATIONS,
    UserError,
    catch_interrupts,
    check_integers,
    check_known_keys,
    check_output,
    check_seconds,
    check_variant_overrides,
    compose,
    emit,
    fail,
    options_help,
    stop_interrupted,
)
from policies.ranges import Range

# numba's coloured error messages start colorama, which writes a colour reset to a terminal at exit: with
# NO_COLOR, or after the game's last line, that is output nobody asked for. Read when numba is imported.
os.environ.setdefault("NUMBA_DISABLE_ERROR_MESSAGE_HIGHLIGHTING", "1")

COLOUR_NAMES = ("red", "green", "yellow", "blue")
COLOUR_CODES = ("\x1b[1;31m", "\x1b[1;32m", "\x1b[1;33m", "\x1b[1;34m")
DIM, BOLD, RESET = "\x1b[2m", "\x1b[1m", "\x1b[0m"


@dataclass
class PlayConfig:
    opponents: list[str] = field(default_factory=lambda: ["hybrid", "hybrid", "hybrid"])
    """One player spec per opponent."""
    variant: dict[str, Any] = field(default_factory=dict)
    """Rule fields, filled from conf/variant/<name>.yaml by the `variant` group."""
    seat: int = 0
    """Your seat, 0 .. players - 1; seat 0 rolls first."""
    seed: int | None = None
    """Dice and bot randomness; None draws a fresh seed."""
    delay: float = 0.0
    """Seconds to pause after each opponent move."""
    auto_forced: bool = True
    """Play your only legal move without asking."""
    record: str | None = "outputs/play/records.jsonl"
    """JSONL record file your moves are appended to (policies.records); None records nothing."""

    RANGES: ClassVar[dict[str, Range]] = {"delay": Range(0)}
    """What each numeric setting allows (`parse_args` checks it, the reference page shows it)."""
    ALLOWED: ClassVar[dict[str, str]] = {
        "opponents": "player specs: bot names, `py:package.module:Class` or `ckpt:<path>`; at least one",
        "seat": "an integer in [0, len(opponents)]", "seed": "an integer >= 0, or null"}


ConfigStore.instance().store(name="play_schema", node=PlayConfig)


class Quit(Exception):
    """The person asked to stop (q, or the end of input)."""


# ------------------------------------------------------------------ arguments
def parse_args(argv: list[str]) -> PlayConfig:
    """The config from key=value arguments; every problem a `UserError` of one line."""
    check_variant_overrides(argv, players_from="1 + the number of opponents")
    composed = compose("play", argv)
    check_known_keys(OmegaConf.to_container(composed), PlayConfig)  # +foo=1 is refused, not ignored
    cfg: PlayConfig = OmegaConf.to_object(composed)  # type: ignore[assignment]
    check_integers(cfg)
    if not cfg.opponents:
        raise UserError("opponents=[] is not allowed: list at least one player spec, e.g. opponents=[hybrid]")
    delay = PlayConfig.RANGES["delay"]  # nan and inf too: time.sleep would fail mid-game
    check_seconds("delay", cfg.delay, positive=delay.low_open, none_ok=delay.null_ok)
    if cfg.seed is not None and cfg.seed < 0:
        raise UserError(f"seed={cfg.seed} is not allowed: give an integer >= 0")
    players = 1 + len(cfg.opponents)
    if not 0 <= cfg.seat < players:
        raise UserError(f"seat={cfg.seat} is not a seat of a {players}-player game: choose 0..{players - 1}")
    if cfg.record:
        check_output(cfg.record, "record")  # before the first move, not at it
    return cfg


# ------------------------------------------------------------------ colours
class Paint:
    """ANSI colours, or none at all."""

    def __init__(self, on: bool):
        self.on = on

    def colour(self, text: str, colour: int | None) -> str:
        if not self.on or colour is None:
            return text
        return f"{COLOUR_CODES[colour]}{text}{RESET}"

    def dim(self, text: str) -> str:
        return f"{DIM}{text}{RESET}" if self.on else text

    def bold(self, text: str) -> str:
        return f"{BOLD}{text}{RESET}" if self.on else text


def colour_wanted(stream) -> bool:
    """Colour for a terminal unless NO_COLOR is set to anything non-empty (no-color.org)."""
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("NO_COLOR")


# ------------------------------------------------------------------ the classic board picture
def _track_cells() -> dict[int, tuple[int, int]]:
    """Board square -> (row, column) on the 15 x 15 grid, clockwise from red's start square 1 at (6, 1)."""
    path = [(6, c) for c in range(1, 6)]  # squares 1-5: red's arm, towards the middle
    path += [(r, 6) for r in range(5, -1, -1)]  # 6-11: up green's arm
    path += [(0, 7)]  # 12: the end of green's arm (green turns into its column here)
    path += [(r, 8) for r in range(6)]  # 13-18 (green starts on 14)
    path += [(6, c) for c in range(9, 15)]  # 19-24: yellow's arm
    path += [(7, 14)]  # 25
    path += [(8, c) for c in range(14, 8, -1)]  # 26-31 (yellow starts on 27)
    path += [(r, 8) for r in range(9, 15)]  # 32-37: blue's arm
    path += [(14, 7)]  # 38
    path += [(r, 6) for r in range(14, 8, -1)]  # 39-44 (blue starts on 40)
    path += [(8, c) for c in range(5, -1, -1)]  # 45-50: back along red's arm
    path += [(7, 0), (6, 0)]  # 51 (red turns into its column), 0
    return {(1 + i) % 52: cell for i, cell in enumerate(path)}


TRACK_CELLS = _track_cells()
COLUMN_CELLS = (  # each colour's home column, from the track inwards
    [(7, c) for c in range(1, 6)],
    [(r, 7) for r in range(1, 6)],
    [(7, c) for c in range(13, 8, -1)],
    [(r, 7) for r in range(13, 8, -1)],
)
HOME_CELLS = ((7, 6), (6, 7), (7, 8), (8, 7))  # where finished tokens are counted, next to the middle
CORNERS = ((0, 0), (0, 9), (9, 9), (9, 0))  # top-left cell of each colour's 6 x 6 base


def classic_geometry(rules) -> bool:
    """True if the rules use the board the picture draws: 52 squares, starts 1, 14, 27, 40, columns of at most 5."""
    return (rules.track_squares == 52 and tuple(rules.start_squares) == (1, 14, 27, 40)
            and rules.home_column <= 5)


def _cell_text(tokens: list[tuple[int, int]]) -> tuple[str, int | None]:
    """Three characters for the (colour, token) pairs on one cell, and the colour to paint them."""
    colours = sorted({c for c, _ in tokens})
    if len(colours) > 1:
        return "".join(COLOUR_NAMES[c][0].upper() for c in colours)[:3].ljust(3), None
    letter = COLOUR_NAMES[colours[0]][0].upper()
    if len(tokens) == 1:
        return f"{letter}{tokens[0][1]} ", colours[0]
    if len(tokens) == 2:
        return f"{letter}{''.join(str(t) for _, t in sorted(tokens))}", colours[0]
    return f"{letter}:{len(tokens)}", colours[0]


def token_cell(rules, seat: int, token: int, progress: int) -> tuple[int, int]:
    """The (row, column) of the classic 15 x 15 grid a token at `progress` stands on (launch/serve.py draws it too)."""
    colour = rules.seat_colours[seat]
    if progress < 0:
        r0, c0 = CORNERS[colour]
        return (r0 + 2 + token // 2, c0 + 2 + token % 2)  # its slot in the base
    if progress == rules.home:
        return HOME_CELLS[colour]
    if progress >= rules.track_steps:
        return COLUMN_CELLS[colour][progress - rules.track_steps]
    return TRACK_CELLS[(rules.seat_starts[seat] + progress) % rules.track_squares]


def board_picture(game, labels: dict[int, tuple[str, str]], paint: Paint) -> list[str]:
    """The 15 x 15 board with every token, as lines; `labels` maps colour -> (name line, player line)."""
    rules = game.rules
    grid: list[list[str]] = [["   "] * 15 for _ in range(15)]
    for square, (r, c) in TRACK_CELLS.items():
        mark = " * " if square in rules.safe_squares else " + " if square in rules.star_squares else " . "
        owner = rules.start_squares.index(square) if square in rules.start_squares else None
        grid[r][c] = paint.colour(mark, owner) if owner in labels else paint.dim(mark)
    for colour, (r0, c0) in enumerate(CORNERS):
        if colour not in labels:
            continue
        for k, (r, c) in enumerate(COLUMN_CELLS[colour]):
            if k < rules.home_column:
                grid[r][c] = paint.colour(f" {COLOUR_NAMES[colour][0]} ", colour)
        for row, text in ((r0, labels[colour][0]), (r0 + 5, labels[colour][1])):
            text = text[:18].center(18)
            for k in range(6):
                grid[row][c0 + k] = paint.colour(text[3 * k: 3 * k + 3], colour)

    on_cell: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for seat, row in enumerate(game.tokens):
        for t, p in enumerate(row):
            on_cell.setdefault(token_cell(rules, seat, t, int(p)), []).append((rules.seat_colours[seat], t))
    for (r, c), tokens in on_cell.items():
        if (r, c) in HOME_CELLS:
            colour = tokens[0][0]
            text, paint_as = f"{COLOUR_NAMES[colour][0].upper()}:{len(tokens)}", colour
        else:
            text, paint_as = _cell_text(tokens)
        grid[r][c] = paint.colour(text, paint_as) if paint_as is not None else paint.bold(text)
    return ["  " + "".join(row) for row in grid]


# ------------------------------------------------------------------ words
def where(rules, seat: int, progress: int) -> str:
    """A token's place in words: base, square n (board coordinates), home column k, home."""
    if progress < 0:
        return "base"
    if progress == rules.home:
        return "home"
    if progress >= rules.track_steps:
        return f"home column {progress - rules.track_steps + 1}"
    return f"square {(rules.seat_starts[seat] + progress) % rules.track_squares}"


def describe_move(game, token: int, names: list[str]) -> str:
    """What moving `token` does, read by playing it on a copy: 'token 2: square 14 -> 19, captures green'."""
    rules, seat = game.rules, game.current
    before = game.tokens
    trial = game.copy()
    events = trial.move(token)
    after = trial.tokens
    start, end = where(rules, seat, int(before[seat, token])), where(rules, seat, int(after[seat, token]))
    if start.startswith("square ") and end.startswith("square "):
        end = end[len("square "):]  # "square 14 -> 19"
    notes = [f"token {token}: {start} -> {end}"]
    captured = [names[s] for s in range(rules.players) if s != seat and (after[s] < before[s]).any()]
    if captured:
        notes.append("captures " + " and ".join(captured))
    if "sent_back" in events:
        notes.append("and is sent back")
    if "star" in events:
        notes.append("jumps a star")
    if "bounce" in events:
        notes.append("bounces back")
    if "bonus_roll" in events and not trial.over:
        notes.append("rolls again")
    return ", ".join(notes)


def finishing_order(game, names: list[str]) -> str:
    places = game.places
    order = sorted(range(len(places)), key=lambda s: (places[s] == 0, places[s], s))
    return ", ".join(f"{places[s] or '-'}. {names[s]}" for s in order)


# ------------------------------------------------------------------ the game
class Table:
    """One game between the person and the opponents, printed to `out`, answers read with `ask`."""

    def __init__(self, cfg: PlayConfig, rules, opponents: dict[int, Any], seed: int,
                 ask: Callable[[str], str] = input, out=sys.stdout, paint: Paint | None = None):
        from ludo_env.engine import Game

        self.cfg, self.rules, self.opponents, self.seed = cfg, rules, opponents, seed
        self.game = Game(rules, seed=seed)
        self.ask, self.out = ask, out
        self.paint = paint or Paint(colour_wanted(out))
        self.you = cfg.seat
        colours = rules.seat_colours
        self.names = [COLOUR_NAMES[colours[s]] for s in range(rules.players)]
        self.players = {s: "you" if s == self.you else _short(opponents[s].name) for s in range(rules.players)}
        self.labels = {colours[s]: (self.names[s], self.players[s]) for s in range(rules.players)}
        self.recorder = None
        if cfg.record:
            from datetime import UTC, datetime

            from policies.records import RecordWriter

            self.recorder = RecordWriter(cfg.record, rules, "human")
            self.game_id = f"play:{seed}:{datetime.now(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}"

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def who(self, seat: int) -> str:
        name = f"{self.names[seat]} ({self.players[seat]})"
        return self.paint.colour(name, self.rules.seat_colours[seat])

    def play(self) -> None:
        import numpy as np

        from ludo_env.engine import rng as dice

        game = self.game
        opponents = ", ".join(self.who(s) for s in range(self.rules.players) if s != self.you)
        self.say(f"{self.rules.name} Ludo, {self.rules.players} players, seed {self.seed} "
                 f"(replay with seed={self.seed}). You are {self.who(self.you)}; against {opponents}.")
        self.say("Type the number of the token to move and Enter; q quits.")
        if self.recorder is not None:
            self.say(f"Your moves are appended to {self.recorder.path} (record=null turns this off).")
        while not game.over:
            seat = game.current
            die = int(dice.die(game.rng, 0))  # the draw Game.roll() makes itself, taken here to show it
            events = game.roll(die)
            if not game.awaiting_move:
                lost = "the third six in a row, the roll is lost" if "forfeit" in events else "no move"
                again = ", rolls again" if "bonus_roll" in events else ""
                self.say(f"{self.who(seat)} rolls {die}: {lost}{again}")
                continue
            legal = game.legal_tokens()
            if seat == self.you:
                if len(legal) == 1 and self.cfg.auto_forced:
                    token = legal[0]
                    self.say(f"{self.who(seat)} rolls {die}: {describe_move(game, token, self.names)} (your only move)")
                else:
                    token = self.choose(die, legal)
                    self.say(f"{self.who(seat)} rolls {die}: {describe_move(game, token, self.names)}")
                if self.recorder is not None:
                    self.recorder.write([self.game_id], game.state[None], game.legal_mask()[None], [token])
            else:
                mask = game.legal_mask()[None].astype(np.int8)
                token = int(self.opponents[seat].act(game.state[None].copy(), game.table, mask)[0])
                self.say(f"{self.who(seat)} rolls {die}: {describe_move(game, token, self.names)}")
            events = game.move(token)
            if "seat_finished" in events and not game.over:
                self.say(f"{self.who(seat)} has every token home")
            if seat != self.you and self.cfg.delay:
                time.sleep(self.cfg.delay)
        self.show_board()
        self.say(f"Game over. Finishing order: {finishing_order(game, [self.who(s) for s in range(self.rules.players)])}")

    def show_board(self) -> None:
        self.say()
        if classic_geometry(self.rules):
            for line in board_picture(self.game, self.labels, self.paint):
                self.say(line)
        tokens = self.game.tokens
        width = max(len(f"{self.names[s]} ({self.players[s]})") for s in range(self.rules.players))
        for seat in range(self.rules.players):
            places = " | ".join(f"{t} {where(self.rules, seat, int(p))}" for t, p in enumerate(tokens[seat]))
            place = self.game.places[seat]
            name = f"{self.names[seat]} ({self.players[seat]})"
            padded = self.paint.colour(name, self.rules.seat_colours[seat]) + " " * (width - len(name))
            self.say(f"  {padded}  {places}" + (f"   [place {place}]" if place else ""))

    def choose(self, die: int, legal: list[int]) -> int:
        """Show the board and the moves, then read a legal token; anything else asks again."""
        self.show_board()
        self.say(f"You rolled {self.paint.bold(str(die))}. Your moves:")
        for token in legal:
            self.say(f"  {describe_move(self.game, token, self.names)}")
        choices = "/".join(str(t) for t in legal)
        while True:
            try:
                answer = self.ask(f"Move which token? [{choices}] ").strip().lower()
            except EOFError:
                raise Quit("no more input") from None
            if answer in ("q", "quit", "exit"):
                raise Quit("you quit")
            if answer.isdigit() and int(answer) in legal:
                return int(answer)
            self.say(f"'{answer}' is not one of your moves: type {' or '.join(str(t) for t in legal)} (q quits)")


def _short(spec: str) -> str:
    """A player spec short enough for the board: a checkpoint by its folder's name."""
    if spec.startswith("ckpt:"):
        path = spec[len("ckpt:"):].rstrip("/")
        return "ckpt:" + (os.path.basename(path) or path)
    if spec.startswith("py:"):
        return spec.rpartition(":")[2]
    return spec


def make_table(cfg: PlayConfig) -> Table:
    from ludo_env.rules import Rules, RulesError
    from policies.players import PlayerSpecError, make_player

    seed = cfg.seed if cfg.seed is not None else secrets.randbelow(10**6)
    # Loading a ckpt: opponent, RLlib warns that its own catalog code uses a constructor it deprecates.
    logging.getLogger(RAY_DEPRECATIONS).setLevel(logging.ERROR)
    try:
        rules = Rules.load(dict(cfg.variant), players=1 + len(cfg.opponents))
        others = [s for s in range(rules.players) if s != cfg.seat]
        # Each opponent draws its own randomness from the game's seed, so a seed replays the whole game.
        opponents = {s: make_player(spec, seed=seed + 1 + i, rules=rules)
                     for i, (s, spec) in enumerate(zip(others, cfg.opponents))}
    except (RulesError, PlayerSpecError) as err:
        raise UserError(str(err)) from None
    return Table(cfg, rules, opponents, seed)


def main(argv: list[str]) -> int:
    if any(arg in ("-h", "--help") for arg in argv):
        try:
            emit(options_help(__doc__, "play", PlayConfig))
        except UserError as err:  # a stdout that cannot take it: one line
            fail(err)
        return 0
    from policies.players import PlayerError
    from policies.records import RecordError

    try:
        table = make_table(parse_args(argv))
        try:
            table.play()
        except RecordError as err:  # the record file, writable at the start, failed mid-game (a full disk)
            raise UserError(f"{err}; the game is abandoned") from None
    except UserError as err:
        fail(err)
    except PlayerError as err:  # an opponent's own code answered wrongly
        fail(err)

    except Quit as why:
        print(f"{why}: game abandoned", file=sys.stderr)
        return 0
    return 0


if __name__ == "__main__":
    catch_interrupts()  # Ctrl-C must stop even a game started in the background by a shell (`cmd &`)
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        stop_interrupted("game abandoned")
