"""Regenerate the golden game records in tests/engine/golden/ (run from the repo root).

    python -m tests.engine.make_golden

Each file is one game: a header line, then JSON lines of {"before", "die", "legal",
"action", "after", "events"} for every roll, written by the checked `Game` with
dice and choices from fixed seeds. "legal" is the mask after the roll (all
zero when the roll forfeited or had no move, and "action" is then null). `test_golden.py` replays every
record through the numba engine and the plain-Python reference. Regenerate
only when a rule change is intended, and review the diff.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

from ludo_env.engine import Game
from ludo_env.rules import Rules

GOLDEN_DIR = Path(__file__).parent / "golden"

# (file stem, variant, overrides, game seed)
GAMES = [
    ("classic-4p", "classic", {}, 1),
    ("classic-3p", "classic", {"players": 3}, 2),
    ("classic-2p", "classic", {"players": 2}, 3),
    ("classic-house-rules", "classic", {"blockades": True, "bonus_roll_on_home": True, "end": "last_standing"}, 4),
    ("pyludo-4p", "pyludo", {}, 5),
    ("ucsd-4p", "ucsd", {}, 6),
    ("ucsd-2p", "ucsd", {"players": 2}, 7),
    ("quick-4p", "quick", {}, 8),
]


def record_game(rules: Rules, seed: int) -> list[dict]:
    game = Game(rules)
    dice, chooser = random.Random(seed), random.Random(seed + 1_000_003)
    lines = []
    while not game.over:
        before = game.to_dict()
        die = dice.randint(1, 6)
        events = game.roll(die)
        legal = game.legal_mask().tolist()
        action = None
        if game.awaiting_move:
            action = chooser.choice(game.legal_tokens())
            events += game.move(action)
        lines.append(
            {"before": before, "die": die, "legal": legal, "action": action, "after": game.to_dict(), "events": sorted(events)}
        )
    return lines


def main() -> None:
    GOLDEN_DIR.mkdir(exist_ok=True)
    for stem, variant, overrides, seed in GAMES:
        rules = Rules.load(variant, **overrides)
        header = {"variant": variant, "overrides": overrides, "seed": seed}
        lines = record_game(rules, seed)
        path = GOLDEN_DIR / f"{stem}.jsonl"
        with path.open("w") as f:
            f.write(json.dumps(header) + "\n")
            for line in lines:
                f.write(json.dumps(line, separators=(",", ":")) + "\n")
        print(f"{path}: {len(lines)} rolls")


if __name__ == "__main__":
    main()
