"""The numba kernels agree with the plain-Python reference move for move."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ludo_env.rules import Rules
from tests.engine.conftest import play_side_by_side

CONFIGS = [
    ("classic", {}),
    ("classic", {"players": 2}),
    ("classic", {"players": 3}),
    ("classic", {"bonus_roll_on_home": True, "blockades": True}),
    ("classic", {"end": "last_standing"}),
    ("pyludo", {}),
    ("pyludo", {"star_capture": "landing"}),
    ("pyludo", {"star_capture": "jump_end"}),
    ("ucsd", {}),
    ("ucsd", {"players": 2}),
    ("quick", {}),
    ("quick", {"players": 3, "blockades": True}),
]


@settings(max_examples=40, deadline=None)
@given(config=st.sampled_from(CONFIGS), seed=st.integers(0, 2**32 - 1), first=st.integers(0, 3))
def test_engine_matches_reference(config, seed, first):
    name, overrides = config
    rules = Rules.load(name, **overrides)
    play_side_by_side(rules, seed, first_seat=first % rules.players)


def test_every_config_finishes_against_reference():
    for name, overrides in CONFIGS:
        rules = Rules.load(name, **overrides)
        for seed in range(3):
            play_side_by_side(rules, seed)
