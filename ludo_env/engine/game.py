"""`Game`: one game with checked moves, for people, tests, records and tools.

It drives the same kernels as the batched fast path, but refuses what the
kernels trust: rolling twice, moving without a roll, an illegal token, playing
on after the end. Each refusal is an `IllegalMoveError` with one line saying
what is wrong and what is allowed.

    game = Game(Rules.load("classic"), seed=7)
    while not game.over:
        game.roll()                      # or game.roll(6) to set the die
        if game.awaiting_move:
            game.move(game.legal_tokens()[0])
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ludo_env.engine import rng as rngmod
from ludo_env.engine.frame import view_from
from ludo_env.engine.kernels import apply_move, init_state, legal_mask, set_die, token_index
from ludo_env.engine.layout import (
    BASE,
    CURRENT,
    DIE,
    N_FINISHED,
    OVER,
    PLACES,
    PLY,
    SIXES,
    STATE_DTYPE,
    STATE_LEN,
    TOKENS,
    UNUSED,
    compile_rules,
    event_names,
)
from ludo_env.rules import DIE_FACES, MAX_PLAYERS, MAX_TOKENS, Rules


class IllegalMoveError(ValueError):
    """A move or roll that the rules or the turn order do not allow."""


class Game:
    """One Ludo game under `rules`; dice from `seed` unless given to `roll`."""

    def __init__(self, rules: Rules, seed: int = 0, first_seat: int = 0) -> None:
        if not 0 <= first_seat < rules.players:
            raise IllegalMoveError(f"first_seat={first_seat} is not a seat: choose 0..{rules.players - 1}")
        self.rules = rules
        self.table = compile_rules(rules)
        self.state = np.zeros(STATE_LEN, dtype=STATE_DTYPE)
        self.rng = rngmod.streams(seed, 1)
        init_state(self.state, self.table, first_seat)
        self._mask = np.zeros(MAX_TOKENS, dtype=np.int8)

    # ---------------------------------------------------------------- positions
    @classmethod
    def from_position(
        cls,
        rules: Rules,
        tokens: Sequence[Sequence[int]],
        current: int = 0,
        sixes: int = 0,
        places: Sequence[int] | None = None,
        seed: int = 0,
    ) -> Game:
        """A game at a hand-built position: `tokens[seat][t]` are progress values (-1 = base)."""
        game = cls(rules, seed=seed)
        if len(tokens) != rules.players or any(len(row) != rules.tokens for row in tokens):
            raise IllegalMoveError(
                f"tokens must be {rules.players} rows of {rules.tokens} progress values, got {tokens!r}"
            )
        if not 0 <= current < rules.players:
            raise IllegalMoveError(f"current={current} is not a seat: choose 0..{rules.players - 1}")
        # Sixes in a row are only counted with bonus rolls on six, and never reach the forfeit count.
        most = (rules.sixes_forfeit - 1 if rules.sixes_forfeit else 10**4) if rules.bonus_roll_on_six else 0
        if not 0 <= sixes <= most:
            raise IllegalMoveError(f"sixes={sixes} is not allowed: use 0..{most}")
        low = BASE if rules.start_in_base else 0
        for seat, row in enumerate(tokens):
            for t, p in enumerate(row):
                if not low <= p <= rules.home:
                    raise IllegalMoveError(
                        f"token {t} of seat {seat} at {p} is off its path: use {low}..{rules.home}"
                    )
                game.state[token_index(seat, t)] = p
        if places is not None:
            game.state[PLACES : PLACES + rules.players] = places
            game.state[N_FINISHED] = sum(1 for p in places if p)
        game.state[CURRENT] = current
        game.state[SIXES] = sixes
        return game

    @classmethod
    def from_dict(cls, rules: Rules, record: dict[str, Any]) -> Game:
        game = cls.from_position(
            rules, record["tokens"], record["current"], record["sixes"], record["places"]
        )
        game.state[DIE] = record["die"]
        game.state[PLY] = record["ply"]
        game.state[OVER] = record["over"]
        return game

    @classmethod
    def from_state(cls, rules: Rules, state: np.ndarray) -> Game:
        """A game holding a copy of an engine state row (for display and checked play)."""
        game = cls(rules)
        game.state[:] = state
        return game

    def to_dict(self) -> dict[str, Any]:
        """The state as plain JSON values (the golden-record format)."""
        return {
            "tokens": self.tokens.tolist(),
            "current": self.current,
            "die": self.die,
            "sixes": int(self.state[SIXES]),
            "places": self.places,
            "ply": int(self.state[PLY]),
            "over": int(self.state[OVER]),
        }

    def copy(self) -> Game:
        other = Game.__new__(Game)
        other.rules, other.table = self.rules, self.table
        other.state, other.rng, other._mask = self.state.copy(), self.rng.copy(), self._mask.copy()
        return other

    # -------------------------------------------------------------------- reads
    @property
    def tokens(self) -> np.ndarray:
        """Progress of each seat's tokens, shape (players, tokens)."""
        block = self.state[TOKENS : TOKENS + MAX_PLAYERS * MAX_TOKENS].reshape(MAX_PLAYERS, MAX_TOKENS)
        return block[: self.rules.players, : self.rules.tokens].copy()

    @property
    def current(self) -> int:
        return int(self.state[CURRENT])

    @property
    def die(self) -> int:
        return int(self.state[DIE])

    @property
    def over(self) -> bool:
        return bool(self.state[OVER])

    @property
    def awaiting_move(self) -> bool:
        return not self.over and self.die != 0

    @property
    def places(self) -> list[int]:
        """Finishing place per seat (1 = winner), 0 while still playing."""
        return self.state[PLACES : PLACES + self.rules.players].tolist()

    @property
    def winner(self) -> int | None:
        return self.places.index(1) if 1 in self.places else None

    def legal_mask(self) -> np.ndarray:
        legal_mask(self.state, self.table, self._mask)
        return self._mask.copy()

    def legal_tokens(self) -> list[int]:
        return [int(t) for t in self.legal_mask().nonzero()[0]]

    def mover_view(self, viewer: int | None = None) -> np.ndarray:
        """Every token as seen by `viewer` (default: the mover); see `frame.view_from`."""
        out = np.empty((MAX_PLAYERS, MAX_TOKENS), dtype=STATE_DTYPE)
        view_from(self.state, self.table, self.current if viewer is None else viewer, out)
        return out

    # ------------------------------------------------------------------ actions
    def roll(self, die: int | None = None) -> list[str]:
        """Roll (or set) the mover's die; returns the events (forfeit, no_move, bonus_roll)."""
        if self.over:
            raise IllegalMoveError("the game is over: no more rolls")
        if self.die:
            raise IllegalMoveError(
                f"seat {self.current} already rolled {self.die}: move one of tokens {self.legal_tokens()}"
            )
        if die is None:
            die = int(rngmod.die(self.rng, 0))
        elif not 1 <= die <= DIE_FACES:
            raise IllegalMoveError(f"die={die} is not a die value: use 1..{DIE_FACES}")
        return event_names(int(set_die(self.state, self.table, die, self._mask)))

    def move(self, token: int) -> list[str]:
        """Move one of the mover's tokens by the rolled die; returns the events."""
        if self.over:
            raise IllegalMoveError("the game is over: no more moves")
        if not self.die:
            raise IllegalMoveError(f"seat {self.current} has not rolled yet: roll first")
        legal = self.legal_tokens()
        if token not in legal:
            raise IllegalMoveError(
                f"seat {self.current} cannot move token {token} with a {self.die}: legal tokens are {legal}"
            )
        return event_names(int(apply_move(self.state, self.table, token)))

    # ------------------------------------------------------------------ display
    def __str__(self) -> str:
        rules = self.rules
        lines = [
            f"{rules.name}, {rules.players} players | seat {self.current} to move"
            + (f", die {self.die}" if self.die else ", no die rolled")
            + (" | game over" if self.over else "")
        ]
        for seat, row in enumerate(self.tokens):
            cells = []
            for p in row:
                if p == BASE:
                    cells.append("base")
                elif p == rules.home:
                    cells.append("home")
                elif p >= rules.track_steps:
                    cells.append(f"column {p - rules.track_steps + 1}")
                elif p != UNUSED:
                    square = (rules.seat_starts[seat] + p) % rules.track_squares
                    mark = "*" if square in rules.safe_squares else ""
                    cells.append(f"sq {square}{mark} (step {p})")
            place = self.places[seat]
            lines.append(f"  seat {seat}: " + ", ".join(cells) + (f"  [place {place}]" if place else ""))
        return "\n".join(lines)
