"""Each seed bot's defining choice on a hand-built classic position, and batch-level invariants."""
from __future__ import annotations

import numpy as np
import pytest

from ludo_env.engine import compile_rules, legal_masks, new_batch, play_random
from ludo_env.engine.layout import OVER
from ludo_env.engine.rng import streams
from ludo_env.rules import Rules, available_variants
from policies.bots import BOT_NAMES, REGISTRY, Bot, UnknownBotError, builtin_bot, choose_batch
from policies.bots.kernels import BOT_ID, BuiltinBot, _numbered
from tests.positions import position, square_progress

CLASSIC = Rules.load("classic")
B = -1  # in base


def pick(name, tokens, die, rules=CLASSIC):
    states, tab, masks = position(rules, tokens, die)
    return int(Bot(name).act(states, tab, masks)[0])


def opp(seat, square):
    return square_progress(CLASSIC, seat, square)


# Seat 0 starts on square 1, so its progress p stands on square p + 1. Safe squares: 1 9 14 22 27 35 40 48.
QUIET = [[5, 20, B, B], [B] * 4, [B] * 4, [B] * 4]


def test_fast_moves_the_most_advanced_token():
    assert pick("fast", QUIET, 3) == 1


def test_fast_skips_a_token_that_would_only_bounce():
    rules = Rules.load("pyludo")  # bounce overshoot: home is 56, a token at 55 rolling 4 ends at 53
    tokens = [[10, rules.home - 1, B, B], [B] * 4, [B] * 4, [B] * 4]
    assert pick("fast", tokens, 4, rules) == 0


def test_aggressive_strikes_before_anything_else():
    tokens = [[5, 20, B, B], [opp(1, 11), B, B, B], [B] * 4, [B] * 4]  # token 0 + 5 lands on square 11
    assert pick("fast", tokens, 5) == 1
    assert pick("aggressive", tokens, 5) == 0


def test_aggressive_chases_when_it_cannot_strike():
    tokens = [[5, 20, B, B], [opp(1, 16), B, B, B], [B] * 4, [B] * 4]  # 10 squares ahead of token 0
    assert pick("aggressive", tokens, 3) == 0
    assert pick("fast", tokens, 3) == 1


def test_defensive_takes_the_threatened_token_to_safety():
    # Token 0 on square 6 has an opponent 3 behind it; + 3 reaches safe square 9.
    tokens = [[5, 20, B, B], [opp(1, 3), B, B, B], [B] * 4, [B] * 4]
    assert pick("defensive", tokens, 3) == 0
    assert pick("fast", tokens, 3) == 1


def test_defensive_falls_back_to_fast_without_risk():
    assert pick("defensive", QUIET, 2) == 1


def test_hybrid_does_not_step_in_front_of_an_opponent():
    # Token 1 + 4 would land on square 25, two squares ahead of an opponent on 23; token 0 + 4 is quiet.
    tokens = [[5, 20, B, B], [opp(1, 23), B, B, B], [B] * 4, [B] * 4]
    assert pick("fast", tokens, 4) == 1
    assert pick("hybrid", tokens, 4) == 0


def test_hybrid_strikes_an_advanced_opponent():
    tokens = [[5, 20, B, B], [opp(1, 11), B, B, B], [B] * 4, [B] * 4]
    assert pick("hybrid", tokens, 5) == 0


def test_hybrid_prefers_fast_on_a_quiet_board():
    assert pick("hybrid", QUIET, 2) == 1


def test_semi_smart_leaves_base_first_then_moves_the_first_token():
    tokens = [[10, B, B, 30], [B] * 4, [B] * 4, [B] * 4]
    assert pick("semi_smart", tokens, 6) == 1
    assert pick("semi_smart", tokens, 3) == 0


def test_heuristic000_priorities_capture_home_safe_advance():
    home = CLASSIC.home
    capture_and_home = [[5, home - 5, 20, B], [opp(1, 11), B, B, B], [B] * 4, [B] * 4]
    assert pick("heuristic000", capture_and_home, 5) == 0  # capture beats reaching home
    home_and_safe = [[3, home - 5, 20, B], [B] * 4, [B] * 4, [B] * 4]
    assert pick("heuristic000", home_and_safe, 5) == 1  # home beats safe square 9 (token 0)
    safe_and_far = [[3, 30, 20, B], [B] * 4, [B] * 4, [B] * 4]
    assert pick("heuristic000", safe_and_far, 5) == 0  # safe square 9 beats advancing token 1 to 35+1
    plain = [[2, 30, 20, B], [B] * 4, [B] * 4, [B] * 4]
    assert pick("heuristic000", plain, 2) == 1  # nothing special: advance furthest


def test_random_bot_is_uniform_over_legal_tokens():
    tokens = [[5, 20, 30, B], [B] * 4, [B] * 4, [B] * 4]
    states, tab, masks = position(CLASSIC, tokens, 3)
    bot = Bot("random", seed=7)
    picks = np.concatenate([bot.act(np.repeat(states, 3000, 0), tab, np.repeat(masks, 3000, 0)) for _ in range(2)])
    counts = np.bincount(picks, minlength=4)
    assert counts[3] == 0
    assert np.all(np.abs(counts[:3] / picks.size - 1 / 3) < 0.02)


@pytest.mark.parametrize("variant", available_variants())
@pytest.mark.parametrize("name", BOT_NAMES)
def test_every_bot_picks_a_legal_token_in_reachable_positions(variant, name):
    rules = Rules.load(variant)
    tab = compile_rules(rules)
    states, rng = new_batch(tab, 300, seed=5)
    play_random(states, tab, rng, max_plies=60)  # stop mid-game, decisions pending
    live = states[states[:, OVER] == 0]
    masks = np.zeros((len(live), 4), dtype=np.int8)
    legal_masks(live, tab, masks)
    choices = Bot(name, seed=1).act(live, tab, masks)
    has_move = masks.any(axis=1)
    assert np.all(masks[has_move, choices[has_move]] == 1)
    assert np.all(choices[~has_move] == -1)


def test_unknown_bot_is_one_line_listing_the_bots():
    with pytest.raises(UnknownBotError) as err:
        Bot("smart")
    assert "\n" not in str(err.value) and "hybrid" in str(err.value)
    assert all(name in str(err.value) for name in REGISTRY)


def test_an_id_without_a_branch_in_choose_raises_instead_of_playing_another_bot():
    states, tab, masks = position(CLASSIC, QUIET, 3)
    out = np.empty(1, dtype=np.int64)
    with pytest.raises(ValueError, match="no branch"):
        choose_batch(len(REGISTRY), states, tab, masks, streams(0, 1), out)


def test_registered_ids_are_distinct_and_dense():
    assert sorted(b.id for b in REGISTRY.values()) == list(range(len(REGISTRY)))
    assert [builtin_bot(name).id for name in BOT_NAMES] == [REGISTRY[name].id for name in BOT_NAMES]


def test_a_bots_id_is_its_place_in_the_registry_never_written_by_hand():
    assert [REGISTRY[name].id for name in BOT_NAMES] == list(BOT_ID) == list(range(len(BOT_NAMES)))
    assert BOT_ID._fields == BOT_NAMES
    numbered = _numbered((BuiltinBot("a", "first"), BuiltinBot("b", "second")))
    assert (numbered["a"].id, numbered["b"].id) == (0, 1)
    with pytest.raises(ValueError, match=r"distinct Python names, not \['a', 'a'\]"):
        _numbered((BuiltinBot("a", "first"), BuiltinBot("a", "again")))
    with pytest.raises(ValueError, match=r"distinct Python names, not \['semi-smart'\]"):
        _numbered((BuiltinBot("semi-smart", "a name numba cannot read as BOT_ID.<name>"),))
