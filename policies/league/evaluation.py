"""How strong is main: greedy main against ``players - 1`` copies of each panel opponent, in the fast evaluator.

Games are played by `policies.tournament.play_tournament` (seats rotate, dice
from the seed), main answering for all of its games at once with one batched
torch forward pass per ply. The same seed, games and players give the same
games as ``launch/evaluate.py``, so `evaluate_command` reproduces a result
from a saved policy exactly.

The strength of a main between runs (`measure_strength`, what ``benchmarks/scaling.py`` and
``benchmarks/levers.py`` report): one against ``players - 1`` copies of each bot of `STRENGTH_PANEL`, and one
against ``players - 1`` copies of a reference main (the cross-play, where parity is ``1 / players``), game by game,
so that two mains measured on the same seed can be compared game for game
(`policies.tournament.paired_difference`).
"""
from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ludo_env.rules import Rules, available_variants
from policies.players import CheckpointPlayer
from policies.tournament import first_entry_wins, play_tournament, wilson_interval

STRENGTH_PANEL = ("random", "hybrid", "heuristic000")
"""The bots a main's strength is read against between runs (`measure_strength`)."""
CROSS_PLAY = "cross_play"
"""`measure_strength`'s key of the games against the reference main."""


@dataclass(frozen=True)
class PanelResult:
    opponent: str
    games: int
    win_rate: float
    ci95: tuple[float, float]
    mean_place: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def learned_player(module, label: str) -> CheckpointPlayer:
    """A `Player` for an RLModule in memory (greedy, batched)."""
    from policies.modules import ModulePlayer

    return CheckpointPlayer(label, ModulePlayer(module))


def evaluate_panel(player, panel: Sequence[str], rules: Rules, games: int, seed: int,
                   threads: int = 1) -> list[PanelResult]:
    """`player` against ``players - 1`` copies of each panel entry, `games` games each (`threads`: as
    `play_tournament` takes it; the results do not depend on it)."""
    results = []
    for opponent in panel:
        seats = [player] + [opponent] * (rules.players - 1)
        result = play_tournament(seats, games, rules, seed, rate=False, threads=threads)
        row = next(r for r in result.rows if r.player == player.name)
        results.append(PanelResult(opponent, games, row.win_rate, tuple(row.win_rate_ci95), row.mean_place))
    return results


def measure_strength(spec: str, rules: Rules, games: int, seed: int, reference: str | None = None,
                     cross_games: int = 0, panel: Sequence[str] = STRENGTH_PANEL, threads: int = 0,
                     progress=None) -> dict[str, np.ndarray]:
    """Per game, 1.0 where `spec` finished first: against ``players - 1`` copies of each bot of `panel` (`games`
    each) and, with a `reference`, against ``players - 1`` copies of it (`cross_games`, key `CROSS_PLAY`); seats
    rotate and the dice come from `seed`, so every main measured with the same arguments plays the same games.
    `threads`: as `play_tournament` takes it (0: one per core; a search player plays on one). `progress(what)` is
    called before each set of games."""
    wins = {}
    for bot in panel:
        if progress is not None:
            progress(f"{games:,} games against {rules.players - 1} x {bot}")
        wins[bot] = first_entry_wins(spec, bot, rules, games, seed, threads)
    if reference is not None and cross_games:
        if progress is not None:
            progress(f"{cross_games:,} games against {rules.players - 1} x {reference}")
        wins[CROSS_PLAY] = first_entry_wins(spec, reference, rules, cross_games, seed, threads)
    return wins


def win_record(wins: np.ndarray) -> dict[str, Any]:
    """Per-game wins as a record: wins, games, win rate and its 95% Wilson interval."""
    won, games = int(np.asarray(wins).sum()), int(len(wins))
    return {"wins": won, "games": games, "win_rate": won / games if games else float("nan"),
            "ci95": list(wilson_interval(won, games))}


def panel_record(results: Sequence[PanelResult | dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Panel results (or their dicts) as a league member's record: opponent -> win rate, interval, games."""
    rows = [r.to_dict() if isinstance(r, PanelResult) else r for r in results]
    return {r["opponent"]: {"win_rate": r["win_rate"], "ci95": list(r["ci95"]), "games": r["games"]} for r in rows}


def evaluate_command(policy_path: str, opponent: str, rules: Rules, games: int, seed: int) -> str:
    """The shell command that replays one panel evaluation from a saved policy."""
    return player_command(f"ckpt:{policy_path}", opponent, rules, games, seed)


def player_command(spec: str, opponent: str, rules: Rules, games: int, seed: int) -> str:
    """The shell command that replays `spec` against ``rules.players - 1`` copies of `opponent` in `rules`."""
    shown = f'"{spec}"' if any(c in spec for c in "?&=") else spec  # Hydra parses ?, & and = only quoted
    seats = ",".join([shown] + [opponent] * (rules.players - 1))
    return shlex.join(["python", "launch/evaluate.py", f"players=[{seats}]", f"games={games}",
                       f"seed={seed}", *variant_arguments(rules)])


def variant_arguments(rules: Rules) -> list[str]:
    """``variant=<name>``, then ``variant.<field>=value`` for every rule of `rules` that differs from the named
    variant's (the player count comes from the seats): what `launch/evaluate.py` needs to play these rules. Rules
    whose name is no variant in conf/variant (loaded from a file) are written as changes to ``classic``."""
    base = rules.name if rules.name in available_variants() else "classic"
    named = Rules.load(base, players=rules.players).to_dict()
    ours = rules.to_dict()
    return [f"variant={base}"] + [f"variant.{key}={override_value(value)}" for key, value in ours.items()
                                  if key != "players" and override_value(named[key]) != override_value(value)]


def variant_label(rules: Rules) -> str:
    """The variant's name and its changed rules, for a table: ``pyludo star_capture=jump_end``."""
    return " ".join(arg.removeprefix("variant=").removeprefix("variant.") for arg in variant_arguments(rules))


def override_value(value: Any) -> str:
    """`value` as the right-hand side of a Hydra override (``key=<this>``)."""
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(override_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return str(value).lower()
    if value is None:
        return "null"
    return str(value)
