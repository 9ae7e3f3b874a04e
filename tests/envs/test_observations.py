"""Encoders: shapes and names, the mover's frame, and hand-built readings of seed features."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ludo_env.engine import compile_rules, new_batch, play_random
from ludo_env.engine.frame import view_from
from ludo_env.engine.layout import CURRENT, OVER, PLACES, TOKENS
from ludo_env.observations import (
    ENCODER_ID,
    ENCODERS,
    OBS_DIMS,
    REGISTRY,
    Encoder,
    UnknownEncoderError,
    _encode_batch,
    encode,
    feature_names,
    obs_dim,
    token_layout,
)
from ludo_env.rules import MAX_PLAYERS, MAX_TOKENS, Rules
from tests.positions import position, square_progress

CLASSIC = Rules.load("classic")
B = -1


def mid_game_states(variant: str, seed: int, plies: int, games: int = 64):
    rules = Rules.load(variant)
    tab = compile_rules(rules)
    states, rng = new_batch(tab, games, seed)
    play_random(states, tab, rng, max_plies=plies)
    return rules, tab, states[states[:, OVER] == 0]


@pytest.mark.parametrize("name", ENCODERS)
def test_shape_names_and_finite_values(name):
    _, tab, states = mid_game_states("classic", 1, 120)
    out = encode(name, states, tab)
    assert out.shape == (len(states), OBS_DIMS[name]) and out.dtype == np.float32
    assert len(feature_names(name)) == OBS_DIMS[name] == len(set(feature_names(name)))
    assert np.isfinite(out).all()


def rotate_seats(states: np.ndarray, players: int, k: int) -> np.ndarray:
    """The same games with every seat renamed s -> s + k (progress is per seat, so tokens just move rows)."""
    out = states.copy()
    for s in range(players):
        to = (s + k) % players
        out[:, TOKENS + 4 * to : TOKENS + 4 * to + 4] = states[:, TOKENS + 4 * s : TOKENS + 4 * s + 4]
        out[:, PLACES + to] = states[:, PLACES + s]
    out[:, CURRENT] = (states[:, CURRENT] + k) % players
    return out


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), plies=st.integers(1, 300), k=st.integers(1, 3), name=st.sampled_from(ENCODERS))
def test_features_depend_only_on_the_position_seen_by_the_mover(seed, plies, k, name):
    rules, tab, states = mid_game_states("classic", seed, plies, games=16)
    a = encode(name, states, tab)
    b = encode(name, rotate_seats(states, rules.players, k), tab)
    if name == "seed000_raw62":  # column 61 is the seed's absolute seat index, the one non-rotated value
        a, b = a[:, :61], b[:, :61]
    np.testing.assert_array_equal(a, b)


def features(name, tokens, die, rules=CLASSIC):
    states, tab, _ = position(rules, tokens, die)
    return dict(zip(feature_names(name), encode(name, states, tab)[0]))


def test_flags60_reads_what_each_token_can_do():
    home = CLASSIC.home
    # Token 0 on square 6 can strike an opponent on 11 with a 5; token 1 reaches home; token 2 enters the column.
    tokens = [[5, home - 5, 48, B], [square_progress(CLASSIC, 1, 11), B, B, B], [B] * 4, [B] * 4]
    f = features("seed001_flags60", tokens, 5)
    assert f["own0.can_kill"] == 1 and f["own0.can_move"] == 1 and f["own0.can_goal"] == 0
    assert f["own1.can_goal"] == 1 and f["own1.on_strip"] == 1
    assert f["own2.can_enter_strip"] == 1
    assert f["own3.can_move"] == 0 and f["own3.can_leave_base"] == 0  # a 5 does not leave the base
    six = features("seed001_flags60", tokens, 6)
    assert six["own3.can_leave_base"] == 1


def test_flags60_danger_and_globes():
    # Token 0 on square 6, an opponent 3 behind on square 3: in danger; + 3 reaches globe 9 (no danger there).
    tokens = [[5, B, B, B], [square_progress(CLASSIC, 1, 3), B, B, B], [B] * 4, [B] * 4]
    f = features("seed001_flags60", tokens, 3)
    assert f["own0.in_non_danger"] == 0 and f["own0.can_globe"] == 1 and f["own0.can_non_danger"] == 1
    assert f["own0.can_die"] == 0
    f2 = features("seed001_flags60", tokens, 2)  # square 8: still 5 in front of the opponent
    assert f2["own0.can_die"] == 1 and f2["own0.can_globe"] == 0


def test_egocentric_danger_is_the_chance_of_a_hit_next_roll():
    one = [[5, B, B, B], [square_progress(CLASSIC, 1, 3), B, B, B], [B] * 4, [B] * 4]
    assert features("egocentric", one, 1)["own0.danger"] == pytest.approx(1 / 6)
    two = [[5, B, B, B], [square_progress(CLASSIC, 1, 3), B, B, B], [square_progress(CLASSIC, 2, 4), B, B, B], [B] * 4]
    assert features("egocentric", two, 1)["own0.danger"] == pytest.approx(1 - (5 / 6) ** 2)
    f = features("egocentric", one, 3)
    assert f["own0.danger_after"] == 0 and f["own0.ends_safe"] == 1 and f["own0.gap_behind"] == pytest.approx(3 / 52)
    assert f["opp1.tok0.threatens"] == 1 and f["die_3"] == 1 and f["own0.legal"] == 1 and f["own1.in_base"] == 1


def test_afterstates_board_is_afterstates_then_egocentric():
    _, tab, states = mid_game_states("pyludo", 5, 100, games=32)
    both = encode("afterstates_board", states, tab)
    np.testing.assert_array_equal(both[:, : OBS_DIMS["afterstates"]], encode("afterstates", states, tab))
    np.testing.assert_array_equal(both[:, OBS_DIMS["afterstates"] :], encode("egocentric", states, tab))
    assert feature_names("afterstates_board")[: OBS_DIMS["afterstates"]] == feature_names("afterstates")


def test_afterstates_board_keeps_every_token_block_of_both_halves():
    layout, afterstates, egocentric = (token_layout(n) for n in ("afterstates_board", "afterstates", "egocentric"))
    assert layout.own_features == afterstates.own_features + tuple(f"board.{f}" for f in egocentric.own_features)
    shift = OBS_DIMS["afterstates"]
    assert layout.opponents == tuple(tuple(c + shift for c in block) for block in egocentric.opponents)
    assert layout.opponent_features == egocentric.opponent_features
    assert len(layout.globals) == len(afterstates.globals) + len(egocentric.globals)


def test_afterstates_board_reads_a_threat_in_both_halves():
    one = [[5, B, B, B], [square_progress(CLASSIC, 1, 3), B, B, B], [B] * 4, [B] * 4]
    f = features("afterstates_board", one, 1)
    assert f["own0.board.danger"] == pytest.approx(1 / 6) and f["opp1.tok0.threatens"] == 1
    assert f["now.row0.threatened"] == pytest.approx(1 / 4) and f["own0.legal"] == 1 == f["own0.board.legal"]
    assert f["board.die_1"] == 1 == f["die1"]


def test_enc128_counts_threats_on_the_real_board():
    # The seed compared normalised positions with squares; here an opponent 3 behind token 0 is one threat pair.
    tokens = [[5, B, B, B], [square_progress(CLASSIC, 1, 3), B, B, B], [B] * 4, [B] * 4]
    f = features("seed000_enc128", tokens, 2)
    assert f["threats_row1"] == pytest.approx(1 / 16) and f["strikes"] == 0
    assert f["own0.safe_nearby"] == 0  # square 6: the nearest safe square (9) is 3 away
    assert f["die_2"] == 1 and all(f[f"unused_{i}"] == 0 for i in range(35, 128))


def test_enc128_safe_proximity_uses_the_nearest_safe_square():
    tokens = [[7, B, B, B], [B] * 4, [B] * 4, [B] * 4]  # square 8: safe square 9 is 1 away
    assert features("seed000_enc128", tokens, 2)["own0.safe_nearby"] == pytest.approx(1 - 1 / 3)


def test_raw62_fixed_slots():
    tokens = [[5, B, B, CLASSIC.home], [B] * 4, [B] * 4, [B] * 4]
    f = features("seed000_raw62", tokens, 2)
    assert f["base_count_row0"] == pytest.approx(2 / 4) and f["finished_row0"] == pytest.approx(1 / 4)
    assert f["row0.tok3.home_progress"] == 1 and f["row0.tok1.in_base"] == 1 and f["die"] == pytest.approx(2 / 6)


def test_unknown_encoder_is_one_line():
    with pytest.raises(UnknownEncoderError, match="choose one of egocentric"):
        encode("pixels", np.zeros((1, 26), np.int16), compile_rules(CLASSIC))


def test_the_unknown_encoder_line_names_every_registered_encoder():
    with pytest.raises(UnknownEncoderError) as error:
        obs_dim("pixels")
    assert "\n" not in str(error.value) and all(name in str(error.value) for name in REGISTRY)


@pytest.mark.parametrize("name", ENCODERS)
def test_encode_runs_the_registered_kernel_of_each_encoder(name):
    """The numba dispatch reaches each entry's own kernel, not another encoder's."""
    _, tab, states = mid_game_states("classic", 3, 80, games=8)
    spec = REGISTRY[name]
    expected = np.zeros((len(states), spec.size), np.float32)
    view = np.empty((MAX_PLAYERS, MAX_TOKENS), np.int16)
    mask = np.empty(MAX_TOKENS, np.int8)
    for b, state in enumerate(states):
        view_from(state, tab, state[CURRENT], view)
        spec.kernel(state, tab, view, mask, expected[b])
    np.testing.assert_array_equal(encode(name, states, tab), expected)


def test_an_entry_whose_names_do_not_match_its_size_is_refused():
    with pytest.raises(ValueError, match="declares 3 features"):
        Encoder("half", 3, REGISTRY["egocentric"].kernel, ("a", "b"), token_blocks=False)


def test_an_encoders_id_is_its_place_in_the_registry_never_written_by_hand():
    assert ENCODER_ID._fields == ENCODERS and list(ENCODER_ID) == list(range(len(ENCODERS)))


def test_a_registered_encoder_without_a_dispatch_branch_raises_instead_of_encoding_as_another():
    _, tab, states = mid_game_states("classic", 3, 10, games=2)
    out = np.empty((len(states), 60), np.float32)
    with pytest.raises(ValueError, match="without a branch"):
        _encode_batch(len(REGISTRY), states, tab, out)
