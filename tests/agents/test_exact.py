"""The exact solver of reduced Ludo (`policies.exact`): checked against values solved by hand, an exact linear
solve, and the engine's own Monte-Carlo play of the same policies through the tournament code.

Most tests use a short board (16 squares, 2 tokens each, captures possible) whose 216,600 positions solve in
about a second once the kernels are compiled.
"""
from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from ludo_env.engine.layout import compile_rules
from ludo_env.rules import Rules
from policies import exact
from policies.players import PlayerSpecError, make_player
from policies.tournament import play_tournament, wilson_interval

ROOT = Path(__file__).resolve().parents[2]


def short_board(tokens: int = 2, **changes) -> Rules:
    """Classic rules on a 16-square board: starts 0 and 8 for the two seats, 15 track steps, 2 home squares."""
    fields = {"players": 2, "tokens": tokens, "track_squares": 16, "start_squares": [0, 4, 8, 12], "track_steps": 15,
              "home_column": 2, "safe_squares": [0, 8]}
    fields.update(changes)
    return Rules.load("classic", **fields)


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    """Players solve into a folder of this test, never the user's cache."""
    monkeypatch.setattr(exact, "DEFAULT_CACHE", tmp_path / "cache")


@pytest.fixture(scope="module")
def short_solution() -> exact.Solution:
    return exact.solve(compile_rules(short_board()), cache=None)


def test_a_case_solved_by_hand():
    """One token each on a one-step track: a six enters (and rolls again), then a 1 reaches home (exact
    overshoot); a six with no legal move rolls again, any other roll passes. With x(a, b) the mover's win
    probability, mover at a, opponent at b (B: base, 0: start square):
    x(0,0) = 1/6 + x(0,0)/6 + 4/6 (1 - x(0,0))                  -> 5/9
    x(0,B) = 1/6 + x(0,B)/6 + 4/6 (1 - x(B,0)),
    x(B,0) = x(0,0)/6 + 5/6 (1 - x(0,B))                        -> x(0,B) = 7/9, x(B,0) = 5/18
    x(B,B) = x(0,B)/6 + 5/6 (1 - x(B,B))                        -> 52/99 for the first player."""
    rules = Rules.load("classic", players=2, tokens=1, track_squares=8, start_squares=[0, 2, 4, 6],
                       track_steps=1, home_column=0, safe_squares=[], sixes_forfeit=0)
    solution = exact.solve(compile_rules(rules), cache=None)
    space = solution.space
    assert space.positions == 2 * 1 * 3 * 3  # seats x sixes counts x (base, start, home) per seat

    def mover_wins(mover: int, other: int, seat: int = 0) -> float:
        codes = (mover, other) if seat == 0 else (other, mover)
        index = (seat * space.multisets + codes[0] + 1) * space.multisets + codes[1] + 1
        value = solution.value[index]
        return value if seat == 0 else 1 - value

    for seat in (0, 1):
        assert mover_wins(-1, -1, seat) == pytest.approx(float(Fraction(52, 99)), abs=1e-9)
        assert mover_wins(0, 0, seat) == pytest.approx(5 / 9, abs=1e-9)
        assert mover_wins(0, -1, seat) == pytest.approx(7 / 9, abs=1e-9)
        assert mover_wins(-1, 0, seat) == pytest.approx(5 / 18, abs=1e-9)
    assert solution.win_first() == pytest.approx(52 / 99, abs=1e-9)


def test_value_iteration_reaches_its_tolerance_and_the_exact_solution():
    """With one token each every move is forced, so the values solve a linear system: value iteration must
    stop with a Bellman residual within its tolerance, and agree with a direct sparse solve of that system."""
    from scipy.sparse import csr_matrix, identity
    from scipy.sparse.linalg import spsolve

    tolerance = 1e-10
    solution = exact.solve(compile_rules(Rules.load("classic", players=2, tokens=1)), tolerance=tolerance,
                           cache=None)
    assert solution.residual <= tolerance
    succ = solution.succ[:, :, 0]
    n = succ.shape[0]
    live = succ[:, 0] != exact.NONE
    rows, cols, data = [], [], []
    rhs = np.zeros(n)
    for d in range(6):
        nxt = succ[:, d]
        inside = live & (nxt >= 0)
        rows.append(np.flatnonzero(inside))
        cols.append(nxt[inside])
        data.append(np.full(int(inside.sum()), 1 / 6))
        rhs += np.where(live & (nxt == exact.WIN0), 1 / 6, 0.0)
    rhs = np.where(live, rhs, solution.value)  # terminal positions keep their value
    step = csr_matrix((np.concatenate(data), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    direct = spsolve((identity(n, format="csr") - step).tocsc(), rhs)
    reached = solution.reached.astype(bool)
    assert np.abs(direct - solution.value)[reached].max() < 1e-8
    # A loose tolerance stops earlier, and its own residual still meets it.
    loose = exact.solve(compile_rules(Rules.load("classic", players=2, tokens=1)), tolerance=1e-3, cache=None)
    assert loose.sweeps < solution.sweeps and loose.residual <= 1e-3


def test_optimal_play_is_a_minimax_fixed_point(short_solution):
    """The optimal policy's exact value against itself is the solved value, and no fixed opponent does better
    against it than the minimax value allows (the best response to the optimal policy gains nothing)."""
    optimal = exact.Policy("optimal", exact.FIXED, short_solution.policy)
    first, _, _ = exact.evaluate(short_solution, optimal, optimal)
    assert first == pytest.approx(short_solution.win_first(), abs=1e-8)
    assert exact.exploitability(short_solution, optimal) == pytest.approx(0.0, abs=1e-8)
    random = exact.Policy("random", exact.UNIFORM, short_solution.policy[:1])
    assert exact.exploitability(short_solution, random) > 0.05


@pytest.mark.parametrize("entry, opponent, games", [
    ("exact:optimal", "random", 4000),
    ("exact:best_response?to=hybrid", "hybrid", 4000),
])
def test_exact_win_rates_match_the_engines_play(short_solution, entry, opponent, games):
    """The exact win probability of a pair, seats taken in turn, lies in the 99.9% interval of the same pair
    played by the tournament code on the engine's dice."""
    rules = short_board()
    tab = compile_rules(rules)
    a = make_player(entry, seed=0, rules=rules)
    b = make_player(opponent, seed=0, rules=rules)
    policy_a = exact.policy_of(a, short_solution, entry)
    policy_b = exact.policy_of(b, short_solution, opponent)
    expected = exact.matchup(short_solution, policy_a, policy_b).mean
    result = play_tournament([entry, opponent], games, rules, seed=3, rate=False)
    wins = int((result.places[:, 0] == 1).sum())
    low, high = wilson_interval(wins, games, confidence=0.999)
    assert low <= expected <= high, (entry, opponent, wins / games, expected)
    assert a.table(tab) is not None


def test_a_best_response_beats_what_the_optimal_policy_gets(short_solution):
    """Against a fixed, weaker opponent the exact best response wins at least as often as the optimal policy."""
    hybrid = exact.policy_of(make_player("hybrid"), short_solution, "hybrid")
    optimal = exact.Policy("optimal", exact.FIXED, short_solution.policy)
    best = exact.matchup(short_solution, None, hybrid).mean
    assert best >= exact.matchup(short_solution, optimal, hybrid).mean - 1e-9
    assert best > 0.5


def test_the_player_maps_sorted_slots_back_to_the_rows_slots(short_solution):
    """A row whose tokens are stored out of order gets the same move as the sorted row, in its own slots."""
    rules = short_board()
    tab = compile_rules(rules)
    player = make_player("exact:optimal", rules=rules)
    keys = np.empty(64, dtype=np.int64)
    found = exact._decisions(short_solution.succ, short_solution.reached, 0, short_solution.space.half,
                             np.empty(0, dtype=np.int64))
    every = np.empty(found, dtype=np.int64)
    exact._decisions(short_solution.succ, short_solution.reached, 0, short_solution.space.half, every)
    keys[:] = every[:: max(1, found // 64)][:64]
    rows = np.empty((keys.size, exact.STATE_LEN), dtype=exact.STATE_DTYPE)
    masks = np.empty((keys.size, 4), dtype=np.int8)
    space = short_solution.space
    exact._decision_rows(space.tab, space.combos, space.tokens, space.sixes, space.multisets, keys, rows, masks)
    sorted_choice = player.act(rows, tab, masks)
    swapped = rows.copy()
    swapped[:, [0, 1]] = rows[:, [1, 0]]  # seat 0 (the mover here) stores its tokens the other way round
    swapped_masks = masks.copy()
    swapped_masks[:, [0, 1]] = masks[:, [1, 0]]
    assert np.array_equal(player.act(swapped, tab, swapped_masks), 1 - sorted_choice)


def test_games_it_does_not_solve_are_refused_in_one_line():
    with pytest.raises(PlayerSpecError, match="exact play is solved for 2 players") as err:
        make_player("exact:optimal", rules=Rules.load("classic", players=4))
    assert "\n" not in str(err.value)
    with pytest.raises(PlayerSpecError, match="names no opponent"):
        make_player("exact:best_response?to=")
    with pytest.raises(PlayerSpecError, match="unknown player 'nobody'"):
        make_player("exact:best_response?to=nobody")
    with pytest.raises(PlayerSpecError, match="unknown exact player"):
        make_player("exact:perfect")


def test_a_size_too_large_is_refused_before_any_allocation():
    """Three tokens each: the message gives the position count and the memory it would need."""
    tab = compile_rules(Rules.load("classic", players=2, tokens=3))
    with pytest.raises(exact.ExactError, match=r"7,026,[0-9,]+ positions and needs [0-9,.]+ GiB") as err:
        exact.solve(tab, cache=None)
    assert "\n" not in str(err.value)
    # A limit below what two tokens need refuses them the same way.
    with pytest.raises(exact.ExactError, match=r"17,565,126 positions and needs [0-9,.]+ GiB, over the limit"):
        exact.solve(compile_rules(Rules.load("classic", players=2, tokens=2)), cache=None, max_memory=2**30)


def test_a_cached_table_is_reused_and_a_foreign_one_refused(tmp_path):
    tab = compile_rules(short_board(tokens=1))
    said: list[str] = []
    first = exact.solve(tab, cache=tmp_path, say=said.append)
    path = exact.cache_path(tab, tmp_path)
    assert path.is_file() and "loaded" not in first.seconds
    again = exact.solve(tab, cache=tmp_path, say=said.append)
    assert "loaded" in again.seconds and np.array_equal(again.value, first.value) and not said
    # The same file, as another engine version would have written it.
    with np.load(path) as data:
        arrays = {k: data[k] for k in data.files if k != "key"}
    key = exact.table_key(tab, exact.DEFAULT_TOLERANCE) | {"engine": "0000000000000000"}
    exact._save(path, key, **arrays)
    third = exact.solve(tab, cache=tmp_path, say=said.append)
    assert len(said) == 1 and "another engine" in said[0] and "solving again" in said[0]
    assert "loaded" not in third.seconds and np.allclose(third.value, first.value, atol=1e-9)


def test_a_stopped_solve_resumes_from_its_last_saved_sweep(tmp_path):
    tab = compile_rules(short_board())
    with pytest.raises(exact.ExactError, match="stopped after sweep 2"):
        exact.solve(tab, cache=tmp_path, max_sweeps=2)
    said: list[str] = []
    resumed = exact.solve(tab, cache=tmp_path, say=said.append)
    assert said == [f"resuming the solve from sweep 2 ({exact.cache_path(tab, tmp_path).with_suffix('.partial.npz')})"]
    fresh = exact.solve(tab, cache=None)
    assert resumed.sweeps > 2
    assert np.abs(resumed.value - fresh.value)[fresh.reached.astype(bool)].max() < 1e-8


def test_evaluate_refuses_an_unsolved_game_in_one_line():
    done = subprocess.run([sys.executable, "launch/evaluate.py", "players=[exact:optimal,random]", "games=2",
                           "variant=classic"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "exact play is solved for 2 players with 1 or 2 tokens" in lines[0]


def test_the_benchmark_refuses_three_tokens_before_solving():
    done = subprocess.run([sys.executable, "benchmarks/exact.py", "--variant", "classic", "--tokens", "3",
                           "--cache", "off"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "7,026,050,400 positions and needs 608.5 GiB" in lines[0], done.stderr


def test_the_seats_are_mirror_images_on_a_symmetric_board(short_solution):
    """The short board looks the same from both seats (starts and safe squares half a lap apart), so seat 1 to
    move at (a, b) wins exactly as often as seat 0 to move at (b, a): the successors of each seat are built alike."""
    space = short_solution.space
    m = space.multisets
    value = short_solution.value.reshape(2, space.sixes, m, m)
    live = short_solution.succ[:, 0, 0].reshape(2, space.sixes, m, m) != exact.NONE
    mirrored = 1 - value[0].transpose(0, 2, 1)
    assert np.abs(value[1] - mirrored)[live[1]].max() < 1e-8
