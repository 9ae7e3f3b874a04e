"""Tournaments: fair seating, replay from the seed, fast path == generic path, statistics and ratings."""
from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest

from ludo_env.engine import compile_rules, legal_masks, new_batch, step_batch
from ludo_env.engine.layout import OVER, PLACES, PLY
from ludo_env.rules import Rules, RulesError
from policies import tournament
from policies.bots import Bot
from policies.players import PlayerError, make_player
from policies.tournament import (
    TournamentError,
    available_cores,
    entry_labels,
    play_tournament,
    seating,
    wilson_interval,
)

EXAMPLE = "py:tests.evaluate.example_bot"
HYBRID_3_RANDOM = ["hybrid", "random", "random", "random"]


def same_games(a, b) -> None:
    for name in ("seats", "places", "moves", "plies", "finished"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.entry_ratings == b.entry_ratings


def report(result) -> dict:
    out = json.loads(result.to_json())
    del out["timing"], out["path"]
    return out


# ------------------------------------------------------------------ seating
@pytest.mark.parametrize("n", [2, 3, 4])
def test_every_block_of_n_games_seats_every_entry_in_every_seat_once(n):
    seats = seating(n, 5 * math.factorial(n))
    for block in seats.reshape(-1, n, n):
        for seat in range(n):
            assert sorted(block[:, seat]) == list(range(n))  # seat 0 moves first: everyone once per block
    orders = {tuple(row) for row in seats[: math.factorial(n)]}
    assert orders == set(itertools.permutations(range(n)))  # and every seating order, every n! games


def test_seating_continues_across_chunks():
    np.testing.assert_array_equal(seating(4, 30)[17:], seating(4, 13, first_game=17))


# -------------------------------------------------------------- statistics
def test_wilson_interval_known_values():
    # Newcombe (1998), Statistics in Medicine 17:857, table I, method 3 (score interval without correction).
    for (wins, n), (low, high) in {
        (81, 263): (0.2553, 0.3662),
        (15, 148): (0.0624, 0.1605),
        (0, 20): (0.0000, 0.1611),
        (1, 29): (0.0061, 0.1718),
    }.items():
        got = wilson_interval(wins, n)
        assert got == pytest.approx((low, high), abs=5e-5), (wins, n)
    assert all(math.isnan(x) for x in wilson_interval(0, 0))


def test_entry_labels_split_repeated_specs():
    assert entry_labels(HYBRID_3_RANDOM) == ["hybrid", "random#1", "random#2", "random#3"]
    assert entry_labels(["fast", "hybrid"]) == ["fast", "hybrid"]


# ------------------------------------------------------------------ replay
@pytest.mark.parametrize(
    "players,variant",
    [
        (HYBRID_3_RANDOM, "classic"),
        (["fast", "aggressive", "defensive"], "classic"),
        (["semi_smart", "heuristic000", "random", "hybrid"], "pyludo"),
        (["random", "hybrid"], "ucsd"),
    ],
)
def test_fast_and_generic_paths_play_identical_games(players, variant):
    fast = play_tournament(players, 96, variant, seed=7, path="fast", chunk=40)
    generic = play_tournament(players, 96, variant, seed=7, path="generic", chunk=96)
    assert (fast.path, generic.path) == ("fast", "generic")
    same_games(fast, generic)
    assert report(fast) == report(generic)


def test_results_replay_from_the_seed_in_any_chunking():
    first = play_tournament(HYBRID_3_RANDOM, 60, "classic", seed=3, chunk=60)
    again = play_tournament(HYBRID_3_RANDOM, 60, "classic", seed=3, chunk=7)
    same_games(first, again)
    assert report(first) == report(again)
    prefix = play_tournament(HYBRID_3_RANDOM, 25, "classic", seed=3)  # game g depends on g, not on the total
    np.testing.assert_array_equal(prefix.places, first.places[:25])
    other = play_tournament(HYBRID_3_RANDOM, 60, "classic", seed=4)
    assert not np.array_equal(other.places, first.places)


def test_game_g_rolls_the_dice_of_game_g_of_new_batch():
    # `fast` draws no random numbers, so four of them replay by hand from new_batch's dice alone.
    tab = compile_rules(Rules.load("classic"))
    states, rng = new_batch(tab, 12, seed=5)
    masks = np.zeros((12, 4), dtype=np.int8)
    legal_masks(states, tab, masks)
    bot = Bot("fast")
    while not states[:, OVER].all():
        step_batch(states, tab, rng, bot.act(states, tab, masks), np.zeros(12, dtype=np.int32), masks)
    result = play_tournament(["fast"] * 4, 12, "classic", seed=5)
    np.testing.assert_array_equal(result.plies, states[:, PLY])
    seat_of_entry = np.argsort(result.seats, axis=1)
    np.testing.assert_array_equal(result.places, np.take_along_axis(states[:, PLACES : PLACES + 4], seat_of_entry, 1))


def test_python_players_play_through_the_generic_path():
    result = play_tournament([f"{EXAMPLE}:FurthestBehind", "fast"], 40, "classic", seed=1)
    assert result.path == "generic" and result.finished.all()
    assert sum(row.wins for row in result.rows) == 40
    again = play_tournament([make_player(f"{EXAMPLE}:FurthestBehind"), "fast"], 40, "classic", seed=1)
    same_games(result, again)  # a Player object plays like its spec
    with pytest.raises(PlayerError, match="^AlwaysZero.choose chose token 0"):
        play_tournament([f"{EXAMPLE}:AlwaysZero", "fast"], 8, "classic", seed=1)


# ------------------------------------------------------- report and ratings
def test_a_stronger_player_wins_more_than_its_share_and_rates_higher():
    result = play_tournament(["fast", "random", "random", "random"], 2_000, "classic", seed=0)
    rows = {row.player: row for row in result.rows}
    fast, random = rows["fast"], rows["random"]
    assert (fast.games, random.games, random.entries) == (2_000, 6_000, 3)
    assert fast.wins + random.wins == 2_000
    assert fast.win_rate_ci95[0] > 0.25 > random.win_rate_ci95[1]
    assert fast.ordinal > random.ordinal and fast.mean_place < random.mean_place
    assert result.rows[0].player == "fast"  # strongest first
    entries = json.loads(result.to_json())["entries"]
    assert [e["label"] for e in entries] == ["fast", "random#1", "random#2", "random#3"]
    assert all(e["games_per_seat"] == [500] * 4 and e["moved_first"] == 500 for e in entries)
    assert random.mu == pytest.approx(np.mean([e["mu"] for e in entries[1:]]))


def test_table_and_json_describe_the_same_tournament():
    result = play_tournament(HYBRID_3_RANDOM, 30, "classic", seed=2)
    text = result.table()
    assert "hybrid" in text and "random" in text and "95% CI" in text
    assert "30 games is not a multiple of 4" in text  # unbalanced seating is reported
    out = json.loads(result.to_json())
    assert out["games"] == 30 and out["finished"] + out["truncated"] == 30
    assert out["game_length"]["mean_moves"] == pytest.approx(result.moves.mean())
    assert {row["player"] for row in out["standings"]} == {"hybrid", "random"}


def test_runaway_games_are_truncated_counted_and_left_out():
    result = play_tournament(HYBRID_3_RANDOM, 8, "classic", seed=0, max_plies=20)
    assert result.truncated == 8 and not result.finished.any()
    assert (result.places == 0).all()
    assert all(row.games == 0 and math.isnan(row.win_rate) for row in result.rows)
    out = json.loads(result.to_json())  # NaN is written as null, keeping the JSON valid
    assert out["truncated"] == 8 and out["standings"][0]["win_rate"] is None


def test_player_count_comes_from_the_list_and_bad_arguments_are_one_line():
    assert play_tournament(["fast", "random"], 4, Rules.load("classic"), seed=0).rules.players == 2
    with pytest.raises(RulesError, match="players=5 is not allowed for variant 'classic'"):
        play_tournament(["fast"] * 5, 4, "classic")
    for kwargs in ({"games": 0}, {"seed": -1}, {"max_plies": 0}, {"chunk": 0}, {"path": "warp"}):
        with pytest.raises(TournamentError):
            play_tournament(**{"players": ["fast", "random"], "games": 4, **kwargs})
    with pytest.raises(TournamentError, match="needs every player to be a built-in bot"):
        play_tournament([f"{EXAMPLE}:FurthestBehind", "fast"], 4, path="fast")


@pytest.fixture(scope="module")
def learned_spec(tmp_path_factory):
    from tests.league.tiny_policy import write_tiny_policy

    return f"ckpt:{write_tiny_policy(tmp_path_factory.mktemp('policy') / 'tiny')}"


def test_a_tournament_of_2n_games_starts_with_the_n_games_of_one_of_n(learned_spec):
    players = [learned_spec, "random", "hybrid", "random"]
    short = play_tournament(players, 48, "classic", seed=11, rate=False)
    long = play_tournament(players, 96, "classic", seed=11, rate=False)
    for name in ("seats", "places", "moves", "plies", "finished"):
        np.testing.assert_array_equal(getattr(long, name)[:48], getattr(short, name), err_msg=name)


@pytest.mark.parametrize("players", [["learned", "random", "hybrid", "random"], HYBRID_3_RANDOM])
def test_threads_play_the_same_games_as_one_thread(players, learned_spec, monkeypatch):
    """Chunks played in threads at once (the generic path with a learned player, the fast path with bots)
    give the same games, ratings and report as one thread, in any chunking."""
    players = [learned_spec if p == "learned" else p for p in players]
    monkeypatch.setattr(tournament, "MIN_GAMES_PER_THREAD", 10)  # threads even for this short tournament
    one = play_tournament(players, 120, "classic", seed=13, chunk=50)
    for threads, chunk in ((2, 50), (3, 17), (2, 8192)):
        many = play_tournament(players, 120, "classic", seed=13, chunk=chunk, threads=threads)
        assert many.threads == threads
        same_games(one, many)
        out = report(many)
        assert out == report(one)


def test_a_small_tournament_plays_on_as_many_threads_as_it_has_games_for():
    games = 3 * tournament.MIN_GAMES_PER_THREAD - 1
    assert play_tournament(["fast", "random"], games, threads=4).threads == 2
    assert play_tournament(["fast", "random"], tournament.MIN_GAMES_PER_THREAD - 1, threads=4).threads == 1


def test_a_player_that_is_not_thread_safe_plays_on_one_thread(learned_spec, monkeypatch):
    monkeypatch.setattr(tournament, "MIN_GAMES_PER_THREAD", 10)
    players = [f"{EXAMPLE}:FurthestBehind", learned_spec, "random", "random"]
    result = play_tournament(players, 40, "classic", seed=1, threads=2)
    assert result.threads == 1 and result.finished.all()
    assert json.loads(result.to_json())["timing"]["threads"] == 1
    same_games(result, play_tournament(players, 40, "classic", seed=1))
    with pytest.raises(TournamentError, match="threads=-1 is not allowed"):
        play_tournament(["fast", "random"], 4, threads=-1)
    assert play_tournament(["fast", "random"], 4 * tournament.MIN_GAMES_PER_THREAD, threads=0).threads == min(
        4, available_cores())


def test_an_illegal_answer_in_a_thread_stops_the_tournament_with_its_line(learned_spec, monkeypatch):
    monkeypatch.setattr(tournament, "MIN_GAMES_PER_THREAD", 10)
    class Illegal:
        name = "illegal"
        thread_safe = True

        def act(self, states, tab, masks):
            return np.full(len(states), 7)

    with pytest.raises(PlayerError, match="illegal"):
        play_tournament([Illegal(), learned_spec, "random", "random"], 200, "classic", seed=2, chunk=10, threads=2)


def middle_games(games: int, seed: int, plies: int):
    """Classic games played by random moves into the middle game, where several tokens are out: live ones."""
    tab = compile_rules(Rules.load("classic"))
    states, dice = new_batch(tab, games, seed)
    masks = np.zeros((games, 4), dtype=np.int8)
    legal_masks(states, tab, masks)
    moves = np.random.default_rng(seed)
    for _ in range(plies):
        choices = np.array([moves.choice(np.flatnonzero(m)) if m.any() else 0 for m in masks])
        step_batch(states, tab, dice, choices, np.zeros(games, dtype=np.int32), masks)
    live = (states[:, OVER] == 0) & (masks.sum(axis=1) > 0)
    return tab, states[live], masks[live]


def test_a_learned_player_chooses_the_same_move_in_a_batch_as_alone(learned_spec):
    player = make_player(learned_spec)
    tab, states, masks = middle_games(200, 3, 60)
    together = player.act(states, tab, masks)
    alone = np.concatenate([player.act(states[b:b + 1], tab, masks[b:b + 1]) for b in range(len(states))])
    np.testing.assert_array_equal(together, alone)


def test_a_learned_player_asks_its_network_only_where_there_is_a_choice(learned_spec):
    player = make_player(learned_spec)
    tab, states, masks = middle_games(300, 5, 80)
    forced = masks.sum(axis=1) == 1
    assert forced.any() and (~forced).any()

    asked: list[int] = []
    network_act = player.module.act
    player.module.act = lambda obs, m, states=None: asked.append(len(m)) or network_act(obs, m, states)
    choices = player.act(states, tab, masks)
    player.module.act = network_act
    assert asked == [int((~forced).sum())]
    np.testing.assert_array_equal(choices[forced], masks[forced].argmax(axis=1))
    # On the rows with a choice, the network's greedy answer, exactly as when it saw every row.
    from ludo_env.observations import encode

    everything = network_act(encode(player.obs, states, tab), masks)
    np.testing.assert_array_equal(choices[~forced], everything[~forced])
