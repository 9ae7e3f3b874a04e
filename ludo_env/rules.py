"""Ludo rule sets as data: the frozen, validated `Rules` object.

Every rule the engine knows is a field here, so a new variant is a YAML file in
``conf/variant/``, not code. `Rules.load("classic", players=2)` reads
``conf/variant/classic.yaml``, applies the overrides and validates the result;
a bad value raises `RulesError` with one line naming the field and what is
allowed.

Board geometry (shared by every shipped variant)
------------------------------------------------
The shared track has ``track_squares`` (52) squares numbered 0..51 in the order
tokens move. The numbering is seed 000's and pyludo's: colour 0 enters on square
1 and the colours' start squares are 1, 14, 27 and 40. A token's position is its
*progress* along its own path:

* ``BASE`` (-1): in its base, not yet entered (only if ``start_in_base``);
* ``0 .. track_steps-1``: on the shared track; progress 0 is the owner's start
  square, so board square = (start square + progress) mod track_squares;
* ``track_steps .. track_steps+home_column-1``: in its own home column, where
  no other colour can reach it;
* ``home = track_steps + home_column``: finished.

Seats and colours: seat ``s`` plays colour ``s``, except that with two players
and ``two_player_opposite`` the seats take colours 0 and 2 (opposite corners).

Choices where the seeds are silent
----------------------------------
Each is a field (or the default of one), so a variant can choose otherwise.
The kernels cite these numbers where they implement them.

1. Path length: 51 track squares (start square included), then the 5-square
   home column: 56 steps to home, as on the physical board, in ludopy and in
   pyludo. Seed 000's code numbers "0–51 track, 52–56 home, 57 finished", a
   57-step path that laps onto its own start square; we follow the board.
2. Entering puts the token on its start square and stops there; a six used
   to enter still gives its bonus roll.
3. The third six in a row forfeits that roll only; moves made with the first
   two stand. The count resets on any other roll, including a bonus roll
   from a capture.
4. A six with no legal move still gives the bonus roll.
5. Classic start squares are safe, so entering never captures there.
6. Bonus rolls do not stack: a six that also captures gives one more roll.
   Bringing the last token home ends the turn.
7. The game ends at the first player home (seeds 000 and 003). The others are
   placed by squares covered (progress + 1 per token, 0 in base); equal
   coverage shares a place (1, 2, 2, 4).
8. Two players sit on colours 0 and 2; three players on 0, 1, 2.
9. Blockades (house rule): two or more tokens of one colour on any shared
   square, safe squares included; other colours can neither land on nor pass
   it, nor enter onto it; own tokens pass freely.
10. `ucsd`: a full lap, 52 pips ("52 needed for each pawn"); a struck token
    returns to its start square; a strike gives an extra roll (§2.1 rule 9,
    and the 3.5 × InsKill term of the hybrid formula); several opponents on
    the square are all struck; the 8 safe squares hold.
11. `pyludo` stars, as seed 002 states them (``star_capture: both``): stars
    are not globes, so a token landing on a star that holds one opponent
    sends it home, then jumps to the next star, where a lone opponent is sent
    home too; from the last star it goes to goal. Two or more opponents on
    the star landed on send the mover home before any jump; two or more where
    the jump ends send it home after it, and a capture on the first star
    stands. A jump onto the last star stops there (one jump per move).
    Overshoot bounces back from the goal inside the end lane. Version: the
    README of rasmushaugaard/pyludo at 12 commits, the one seed 002 copies.
    That repository itself was not at hand; the `move_token` of two public
    copies of pyludo's `LudoState` does the same (kill on the
    star, jump, kill at the end). A later fork of pyludo captures only where
    the jump ends; ``star_capture: jump_end`` keeps that rule (results
    measured under it name it), and ``landing`` captures only on the star
    landed on.
12. With ``star_capture: landing`` the square a jump ends on is passed as if
    empty: nothing is captured there and no stack rule applies.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

import yaml

VARIANT_DIR = Path(__file__).resolve().parent.parent / "conf" / "variant"

MAX_PLAYERS = 4
MAX_TOKENS = 4
DIE_FACES = 6
MAX_SIXES_FORFEIT = 100
"""The largest `Rules.sixes_forfeit`: that many sixes in a row never comes (odds 6**-100), and the engine counts
them in an int16 state column, so a larger count would only overflow."""

SAFE_RULES = ("share", "mover_home")
STACK_RULES = ("capture_all", "mover_home")
OVERSHOOT_RULES = ("exact", "bounce", "finish")
END_RULES = ("first_winner", "last_standing")
STAR_CAPTURE_RULES = ("both", "landing", "jump_end")


class RulesError(ValueError):
    """A rule set or an override is invalid; the message is one line for the user."""


@dataclass(frozen=True)
class Rules:
    """One Ludo rule set. Field docs are the reference for ``conf/variant/*.yaml``."""

    name: str = "classic"
    """Variant name, for logs and records."""
    players: int = 4
    """Number of seats in the game."""
    allowed_players: tuple[int, ...] = (2, 3, 4)
    """Player counts this variant supports (pyludo: only 4)."""
    tokens: int = 4
    """Tokens per player, 1..4."""
    track_squares: int = 52
    """Squares on the shared track."""
    start_squares: tuple[int, ...] = (1, 14, 27, 40)
    """Board square where each of the four colours enters the track."""
    track_steps: int = 51
    """Shared-track squares a token walks, its start square included, before its home column."""
    home_column: int = 5
    """Squares in a colour's private home column; 0 means the token is home once it leaves the track."""
    safe_squares: tuple[int, ...] = (1, 9, 14, 22, 27, 35, 40, 48)
    """Board squares where no capture happens (start and star squares in classic, globes in pyludo)."""
    safe_square_rule: str = "share"
    """Landing on a safe square held by an opponent: 'share' (both stay) or 'mover_home' (pyludo globes)."""
    stack_rule: str = "capture_all"
    """Landing on 2+ opponent tokens off safe squares: 'capture_all' or 'mover_home' (pyludo)."""
    start_in_base: bool = True
    """Tokens start in a base and need an entering roll; False: they start, and restart, on their start square."""
    enter_rolls: tuple[int, ...] = (6,)
    """Die values that move a token from base onto its start square."""
    enter_captures: bool = False
    """Entering captures every opponent token on the start square, safe or not (pyludo)."""
    bonus_roll_on_six: bool = True
    """A six gives the mover another roll."""
    sixes_forfeit: int = 3
    """With bonus rolls on six, the n-th six in a row forfeits that roll without moving: 0 = never, else 2..100."""
    bonus_roll_on_capture: bool = True
    """Capturing gives another roll."""
    bonus_roll_on_home: bool = False
    """House rule: bringing a token home gives another roll."""
    blockades: bool = False
    """House rule: two or more same-colour tokens on a track square cannot be landed on or passed by other colours."""
    overshoot: str = "exact"
    """A roll past home: 'exact' (illegal), 'bounce' (back from home, pyludo) or 'finish' (home anyway, ucsd)."""
    star_squares: tuple[int, ...] = ()
    """Board squares that are stars."""
    star_jump: bool = False
    """Landing on a star jumps to the next star on the mover's path (captures: `star_capture`)."""
    star_capture: str = "both"
    """With star jumps, which squares capture a lone opponent: 'both' (the star landed on, then where the jump ends:
    seed 002), 'landing' (the star landed on only) or 'jump_end' (where the jump ends only: a later pyludo fork)."""
    last_star_to_home: bool = True
    """With star jumps: from the last star before the home column the token goes straight home."""
    two_player_opposite: bool = True
    """With two players the seats take opposite colours (0 and 2)."""
    end: str = "first_winner"
    """'first_winner' ends at the first player home (others placed by progress) or 'last_standing' plays on."""

    def __post_init__(self) -> None:
        for name in ("allowed_players", "start_squares", "safe_squares", "enter_rolls", "star_squares"):
            value = getattr(self, name)
            if isinstance(value, (list, tuple)):
                object.__setattr__(self, name, tuple(value))
        self._validate()

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, variant: str | Path | Mapping[str, Any] = "classic", **overrides: Any) -> Rules:
        """Rules from a variant name in conf/variant, a YAML path, or a mapping, plus overrides."""
        if isinstance(variant, Mapping):
            data = dict(variant)
        else:
            path = Path(variant)
            if path.suffix not in (".yaml", ".yml"):
                path = VARIANT_DIR / f"{variant}.yaml"
                if not path.is_file():
                    raise RulesError(
                        f"unknown variant '{variant}': choose one of {', '.join(available_variants())}"
                    )
            elif not path.is_file():
                raise RulesError(f"variant file '{variant}' does not exist")
            data = yaml.safe_load(path.read_text()) or {}
            if not isinstance(data, dict):
                raise RulesError(f"variant file '{path}' must hold a mapping of rule fields")
        data.update(overrides)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise RulesError(
                f"unknown rule field '{unknown[0]}': allowed fields are {', '.join(sorted(known))}"
            )
        for f in fields(cls):
            if f.name in data:
                data[f.name] = _coerce(f.name, f.type, data[f.name])
        return cls(**data)

    @classmethod
    def named(cls, name: Any, **overrides: Any) -> Rules:
        """Rules of a variant *name* from conf/variant, plus overrides: what a file or a request names is data,
        never a path, so anything but one of `available_variants` is refused (unlike `load`, which also reads the
        YAML file a user gives on the command line)."""
        known = available_variants()
        if not isinstance(name, str) or name not in known:
            shown = repr(name) if len(repr(name)) <= 40 else repr(name)[:40] + "..."
            raise RulesError(f"unknown variant {shown}: a variant is named by one of {', '.join(known)}")
        return cls.load(name, **overrides)

    @classmethod
    def recorded(cls, variant: Any, **overrides: Any) -> Rules:
        """Rules a saved file records: its rule fields (a mapping, what training saves in ``policy.json``), or a
        variant name (older files), never a path (`named`)."""
        if isinstance(variant, Mapping):
            return cls.load(variant, **overrides)
        return cls.named(variant, **overrides)

    def replace(self, **changes: Any) -> Rules:
        """A validated copy with some fields changed."""
        return Rules.load(dataclasses.asdict(self), **changes)

    def to_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}

    # ---------------------------------------------------------------- geometry
    @property
    def home(self) -> int:
        """Progress value of a finished token."""
        return self.track_steps + self.home_column

    @property
    def seat_colours(self) -> tuple[int, ...]:  # rule choice 8
        if self.players == 2 and self.two_player_opposite:
            return (0, 2)
        return tuple(range(self.players))

    @property
    def seat_starts(self) -> tuple[int, ...]:
        """Board square of each seat's start square."""
        return tuple(self.start_squares[c] for c in self.seat_colours)

    # -------------------------------------------------------------- validation
    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {
        "safe_square_rule": SAFE_RULES, "stack_rule": STACK_RULES, "overshoot": OVERSHOOT_RULES, "end": END_RULES,
        "star_capture": STAR_CAPTURE_RULES}
    """The named rules and their choices: `_validate` refuses any other, the docs' reference lists them."""
    ALLOWED: ClassVar[dict[str, str]] = {
        "allowed_players": "use player counts from 2, 3, 4", "players": "one of allowed_players",
        "tokens": f"choose 1..{MAX_TOKENS}", "track_squares": "use a multiple of 4 between 8 and 200",
        "start_squares": "one square in 0..track_squares - 1 for each of the 4 colours, all different",
        "track_steps": "1..track_squares (the track length)", "home_column": "choose 0..20",
        "safe_squares": "squares in 0..track_squares - 1, none a star square",
        "star_squares": "squares in 0..track_squares - 1, none a safe square; at least two with star_jump",
        "enter_rolls": f"give at least one die value in 1..{DIE_FACES}",
        "sixes_forfeit": f"use 0 (never) or a count in 2..{MAX_SIXES_FORFEIT}"}
    """What the other checked rules take: `_validate` says the same when it refuses one."""

    def _validate(self) -> None:
        def bad(field_name: str, value: Any, allowed: str) -> None:
            raise RulesError(f"{field_name}={value!r} is not allowed for variant '{self.name}': {allowed}")

        if not self.allowed_players or any(p not in (2, 3, 4) for p in self.allowed_players):
            bad("allowed_players", list(self.allowed_players), self.ALLOWED["allowed_players"])
        if self.players not in self.allowed_players:
            bad("players", self.players, f"choose one of {', '.join(map(str, self.allowed_players))}")
        if not 1 <= self.tokens <= MAX_TOKENS:
            bad("tokens", self.tokens, self.ALLOWED["tokens"])
        if not 8 <= self.track_squares <= 200 or self.track_squares % MAX_PLAYERS:
            bad("track_squares", self.track_squares, self.ALLOWED["track_squares"])
        if len(self.start_squares) != MAX_PLAYERS:
            bad("start_squares", list(self.start_squares), "give one start square for each of the 4 colours")
        if len(set(self.start_squares)) != MAX_PLAYERS:
            bad("start_squares", list(self.start_squares), "the 4 start squares must differ")
        if not 1 <= self.track_steps <= self.track_squares:
            bad("track_steps", self.track_steps, f"choose 1..{self.track_squares} (the track length)")
        if not 0 <= self.home_column <= 20:
            bad("home_column", self.home_column, self.ALLOWED["home_column"])
        for name in ("start_squares", "safe_squares", "star_squares"):
            for square in getattr(self, name):
                if not 0 <= square < self.track_squares:
                    raise RulesError(
                        f"{name}: square {square} is off the board: squares are 0..{self.track_squares - 1}"
                    )
        for field_name, choices in self.CHOICES.items():
            if getattr(self, field_name) not in choices:
                bad(field_name, getattr(self, field_name), f"choose one of {', '.join(choices)}")
        if self.start_in_base and (
            not self.enter_rolls or any(not 1 <= r <= DIE_FACES for r in self.enter_rolls)
        ):
            bad("enter_rolls", list(self.enter_rolls), self.ALLOWED["enter_rolls"])
        if not (self.sixes_forfeit == 0 or 2 <= self.sixes_forfeit <= MAX_SIXES_FORFEIT):
            bad("sixes_forfeit", self.sixes_forfeit, self.ALLOWED["sixes_forfeit"])
        if self.overshoot == "bounce" and self.home_column < DIE_FACES - 1:
            # A bounce must stay inside the home column, or it would need track rules on the way back.
            bad("overshoot", self.overshoot, f"'bounce' needs home_column >= {DIE_FACES - 1}")
        if self.star_jump and len(self.star_squares) < 2:
            bad("star_jump", self.star_jump, "star jumps need at least two star_squares")
        if set(self.star_squares) & set(self.safe_squares):
            bad("star_squares", list(self.star_squares), "a square cannot be both a star and a safe square")
        if self.blockades and self.star_jump:
            bad("blockades", self.blockades, "blockades cannot be combined with star jumps")


def _coerce(name: str, annotation: Any, value: Any) -> Any:
    """Turn a YAML or command-line value into the field's type, or say what was expected."""
    kind = str(annotation)
    if kind.startswith("tuple"):
        if isinstance(value, int) and not isinstance(value, bool):
            value = [value]
        if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise RulesError(f"{name}={value!r} is not allowed: give a list of integers")
        return tuple(value)
    if kind == "bool":
        if not isinstance(value, bool):
            raise RulesError(f"{name}={value!r} is not allowed: give true or false")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise RulesError(f"{name}={value!r} is not allowed: give an integer")
        return value
    if not isinstance(value, str):
        raise RulesError(f"{name}={value!r} is not allowed: give a string")
    return value


def available_variants() -> list[str]:
    return sorted(p.stem for p in VARIANT_DIR.glob("*.yaml"))


# Field docs, read from the source, for `describe()`, the docs and the commands' --help; keeping them as attribute
# docstrings keeps one place for each field's meaning.
def field_docs(cls: type | None = None) -> dict[str, str]:
    """The docstring under each field of the dataclass `cls` (default `Rules`) and of the dataclasses it inherits
    from, read from their source; a class made at run time (no source) adds none."""
    import ast
    import inspect
    import textwrap

    docs: dict[str, str] = {}
    for klass in reversed((cls or Rules).__mro__):
        if klass is object:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body  # type: ignore[attr-defined]
        for node, nxt in zip(body, body[1:]):
            if isinstance(node, ast.AnnAssign) and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant):
                if "ClassVar" in ast.unparse(node.annotation):  # a declaration of the class, not a field
                    continue
                docs[node.target.id] = str(nxt.value.value)  # type: ignore[union-attr]
    return docs

