"""The champions: the strongest shipped policy of each rule set, played by name as ``champion:<variant>``.

    python launch/evaluate.py 'players=[champion:classic,hybrid,hybrid,hybrid]'
    python launch/serve.py 'agents=[champion:classic]'

`CHAMPIONS` is the one registry: a rule set (a variant's name) to its policy folder under ``benchmarks/policies/``
(``policy.json`` + ``weights.pt``, as training saves it). Each champion's figures, its training command and its
cost in env steps and wall time are in ``benchmarks/policies/README.md``. A champion is an ordinary policy: it plays
the variant and player count it was trained for, and anywhere else it is refused in one line, as any policy is
(`policies.players.check_fits`). Replacing a champion is replacing its folder's two files, or pointing its entry at
another folder.

A ``champion:`` spec goes wherever a player spec goes (`policies.players.make_player`: ``launch/evaluate.py``,
``launch/play.py``, ``launch/serve.py``'s agents, league externals); the site offers each champion for games of its
rule set. ``champion:<name>`` for a rule set with no champion is refused in one line that lists those there are.
"""
from __future__ import annotations

from pathlib import Path

CHAMPION_PREFIX = "champion:"
SHIPPED_POLICIES = Path(__file__).resolve().parents[1] / "benchmarks" / "policies"
"""Where the shipped policies live (a git checkout's ``benchmarks/policies/``)."""

CHAMPIONS: dict[str, str] = {
    # 32M env steps of +exp=ppo_selfplay obs=afterstates_board (benchmarks/levers.py; +exp=ppo_long in one run):
    # each beats its rule set's 64M default main (ppo_classic, ppo_pyludo) in the cross-play
    "classic": "ppo_classic_board",
    "pyludo": "ppo_pyludo_board",
}
"""Rule set -> the champion's folder, relative to `SHIPPED_POLICIES`."""


class ChampionError(ValueError):
    """A ``champion:`` spec that names no champion, or one whose folder is not in this install; one line."""


def champion_specs() -> list[str]:
    """``champion:<variant>`` of every registered champion."""
    return [f"{CHAMPION_PREFIX}{variant}" for variant in CHAMPIONS]


def champion_folder(spec: str) -> Path:
    """The policy folder of ``champion:<variant>`` (or of the bare variant name); `ChampionError` of one line when
    there is no such champion or its folder is missing."""
    variant = spec.removeprefix(CHAMPION_PREFIX).strip()
    if variant not in CHAMPIONS:
        raise ChampionError(f"there is no champion for '{variant}': the champions are "
                            f"{', '.join(champion_specs()) or 'none'}")
    folder = SHIPPED_POLICIES / CHAMPIONS[variant]
    if not folder.is_dir():
        raise ChampionError(f"the champion of {variant} should be at '{folder}', which this install does not have "
                            "(the shipped policies come with a git checkout of the project)")
    return folder


def shipped_champions() -> dict[str, Path]:
    """Variant -> policy folder of each registered champion whose folder is in this install."""
    return {variant: SHIPPED_POLICIES / folder for variant, folder in CHAMPIONS.items()
            if (SHIPPED_POLICIES / folder).is_dir()}
