"""Player specs: bot names, bring-your-own-bot classes, checkpoints, and one-line errors that list what is allowed."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from ludo_env.engine import compile_rules, legal_masks, mover_view_batch, new_batch, step_batch
from ludo_env.engine.layout import OVER
from ludo_env.rules import Rules
from policies.bots import BOT_NAMES
from policies.players import (
    BotPlayer,
    PlayerError,
    PlayerSpecError,
    PythonPlayer,
    check_choices,
    make_player,
)

EXAMPLE = "py:tests.evaluate.example_bot"
TAB = compile_rules(Rules.load("classic"))


def decisions(n: int = 64, seed: int = 3, moves: int = 40):
    """Mid-game positions waiting on a decision: `moves` moves of the highest legal token into each game."""
    states, rng = new_batch(TAB, n, seed, first_seats=np.arange(n) % 4)
    masks = np.zeros((n, 4), dtype=np.int8)
    legal_masks(states, TAB, masks)
    for _ in range(moves):
        step_batch(states, TAB, rng, 3 - np.argmax(masks[:, ::-1], axis=1), np.zeros(n, dtype=np.int32), masks)
    assert not states[:, OVER].any()
    return states, masks


def one_line(err: pytest.ExceptionInfo) -> str:
    message = str(err.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("spec", ["bogus", "", "Hybrid", "py:", "py:nocolon", "ckpt:"])
def test_bad_specs_say_what_is_allowed_in_one_line(spec):
    with pytest.raises(PlayerSpecError) as err:
        make_player(spec)
    message = one_line(err)
    if spec in ("bogus", "", "Hybrid", "py:nocolon"):
        for allowed in (*BOT_NAMES, "py:package.module:ClassName", "ckpt:<path>"):
            assert allowed in message


def test_python_spec_errors_name_the_problem():
    cases = {
        "py:no_such_module_xyz:Bot": "cannot import module 'no_such_module_xyz'",
        f"{EXAMPLE}:Missing": "has no class 'Missing'",
        f"{EXAMPLE}:NoChoose": "has no method choose(view, die, mask)",
    }
    for spec, expected in cases.items():
        with pytest.raises(PlayerSpecError) as err:
            make_player(spec)
        assert expected in one_line(err)


def test_bot_names_make_bot_players():
    for name in BOT_NAMES:
        player = make_player(name, seed=1)
        assert isinstance(player, BotPlayer) and player.name == name


def test_furthest_behind_loads_and_moves_the_least_advanced_legal_token():
    player = make_player(f"{EXAMPLE}:FurthestBehind")
    assert isinstance(player, PythonPlayer)
    states, masks = decisions()
    choices = player.act(states, TAB, masks)
    assert choices.dtype == np.int64 and choices.shape == (len(states),)
    own = mover_view_batch(states, TAB)[:, 0, :]
    for b, token in enumerate(choices):
        assert masks[b, token] == 1
        assert own[b, token] == min(own[b, t] for t in range(4) if masks[b, t])


def test_a_seed_reaches_a_constructor_that_takes_one():
    player = make_player(f"{EXAMPLE}:Seeded", seed=11)
    assert player.bot.seed == 11


def test_illegal_or_misshapen_answers_stop_with_one_line_naming_the_class():
    states, masks = decisions()
    assert (masks[:, 0] == 0).any()  # some game where token 0 cannot move
    with pytest.raises(PlayerError) as err:
        make_player(f"{EXAMPLE}:AlwaysZero").act(states, TAB, masks)
    assert one_line(err).startswith("AlwaysZero.choose chose token 0 in game")
    with pytest.raises(PlayerError) as err:
        make_player(f"{EXAMPLE}:WrongShape").act(states, TAB, masks)
    assert one_line(err).startswith("WrongShape.choose returned shape (64, 1) for 64 games")


def test_check_choices_accepts_legal_integers_only():
    masks = np.array([[1, 0, 0, 1], [0, 1, 0, 0]], dtype=np.int8)
    np.testing.assert_array_equal(check_choices([3, 1], masks, "p"), [3, 1])
    for bad in ([1, 1], [3, 4], [3, -1], [3.5, 1], [[3, 1]]):
        with pytest.raises(PlayerError):
            check_choices(bad, masks, "p")


def test_checkpoints_need_an_existing_path(tmp_path):
    with pytest.raises(PlayerSpecError) as err:
        make_player(f"ckpt:{tmp_path / 'nothing'}")
    assert "does not exist" in one_line(err)


def test_checkpoints_without_the_training_extra_say_so(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "policies.modules", None)  # as if torch/ray were not installed
    with pytest.raises(PlayerSpecError) as err:
        make_player(f"ckpt:{tmp_path}")
    assert "checkpoints need torch and ray[rllib]" in one_line(err)
