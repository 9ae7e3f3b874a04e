"""Golden game records replay identically in the numba engine and the plain-Python reference."""
from __future__ import annotations

import json

import pytest

from ludo_env.engine import Game
from ludo_env.rules import Rules, available_variants
from tests.engine.make_golden import GAMES, GOLDEN_DIR
from tests.engine.reference import RefGame


def load(stem: str) -> tuple[Rules, list[dict]]:
    lines = (GOLDEN_DIR / f"{stem}.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    return Rules.load(header["variant"], **header["overrides"]), [json.loads(x) for x in lines[1:]]


@pytest.mark.parametrize("stem", [g[0] for g in GAMES])
def test_golden_record_replays(stem):
    rules, records = load(stem)
    assert records and records[-1]["after"]["over"] == 1
    previous = None
    for i, rec in enumerate(records):
        if previous is not None:
            assert rec["before"] == previous, f"{stem}:{i} records do not chain"
        for engine in (Game.from_dict(rules, rec["before"]), RefGame.from_dict(rules, rec["before"])):
            events = set(engine.roll(rec["die"]))
            legal = engine.legal_mask().tolist() if isinstance(engine, Game) else engine.legal()
            assert legal == rec["legal"], f"{stem}:{i} {type(engine).__name__} legal mask"
            if rec["action"] is not None:
                events |= set(engine.move(rec["action"]))
            assert engine.to_dict() == rec["after"], f"{stem}:{i} {type(engine).__name__} state"
            assert events == set(rec["events"]), f"{stem}:{i} {type(engine).__name__} events"
        previous = rec["after"]


def test_every_variant_has_a_golden_record():
    variants = {g[1] for g in GAMES}
    assert variants == set(available_variants())


def test_the_generator_reproduces_the_checked_in_records():
    from tests.engine.make_golden import record_game

    for stem, _variant, _overrides, seed in GAMES:
        rules, records = load(stem)
        assert record_game(rules, seed) == records, f"{stem}: run python -m tests.engine.make_golden"


def test_golden_games_exercise_every_rule_event():
    seen = set()
    for stem, *_ in GAMES:
        for rec in load(stem)[1]:
            seen |= {e.split(":")[0] for e in rec["events"]}
    expected = {"entered", "capture", "token_home", "sent_back", "star", "bounce", "bonus_roll"}
    expected |= {"seat_finished", "game_over", "forfeit", "no_move"}
    assert expected <= seen
