"""Seed 001's GA (policies.evolution): the network against a numpy reference, the operators, the fitness games.

The fitness games are checked against the evaluator: a chromosome's games are
``play_tournament([ckpt:<chromosome>, bot, bot, bot], seed=game_seed(...))``,
and their distances against a plain replay through `step_batch`.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ludo_env.engine import compile_rules, legal_masks, new_batch, step_batch
from ludo_env.engine.layout import CURRENT, OVER, PLACES, PLY
from ludo_env.engine.rng import streams
from ludo_env.observations import encode
from ludo_env.rules import Rules
from policies import evolution as ev
from policies.players import make_player
from policies.tournament import BOT_SEED_SALT, play_tournament
from tests.positions import mid_game_positions

PYLUDO = Rules.load("pyludo")


def reference_outputs(chromosome: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Seed 001's network written plainly from the documented layout: sigmoid hidden and output units."""
    w1 = chromosome[:360].reshape(60, 6)
    b1 = chromosome[360:366]
    w2 = chromosome[366:390].reshape(6, 4)
    b2 = chromosome[390:394]
    hidden = 1 / (1 + np.exp(-(x.astype(np.float64) @ w1 + b1)))
    return 1 / (1 + np.exp(-(hidden @ w2 + b2)))


# ------------------------------------------------------------------ the network
def test_a_chromosome_has_the_papers_394_weights_and_packs_back():
    assert ev.n_weights() == 60 * 6 + 6 + 6 * 4 + 4 == 394
    c = np.arange(394, dtype=np.float64)
    w1, b1, w2, b2 = ev.unpack(c)
    assert w1.shape == (60, 6) and w1[2, 3] == 2 * 6 + 3 and b1[0] == 360 and w2[1, 2] == 366 + 4 + 2
    assert b2.tolist() == [390, 391, 392, 393]
    np.testing.assert_array_equal(ev.pack(w1, b1, w2, b2), c)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), scale=st.sampled_from([0.77, 3.0, 30.0]), plies=st.integers(0, 120))
def test_the_forward_pass_equals_numpy_and_the_move_is_the_best_legal_token(seed, scale, plies):
    states, tab, masks = mid_game_positions(games=16, plies=plies, seed=seed)
    chromosome = np.random.default_rng(seed).normal(0, scale, 394)
    x = encode(ev.OBS, states, tab)
    expected = reference_outputs(chromosome, x)
    np.testing.assert_allclose(ev.ann_outputs(chromosome, x), expected, rtol=1e-9, atol=1e-12)
    choices = ev.AnnPlayer("ann", chromosome).act(states, tab, masks)
    assert masks[np.arange(len(choices)), choices].all(), "an illegal token"
    # The highest output among the legal tokens (compared before the output sigmoid, which can saturate).
    w1, b1, w2, b2 = ev.unpack(chromosome)
    logits = 1 / (1 + np.exp(-(x.astype(np.float64) @ w1 + b1))) @ w2 + b2
    best = np.where(masks == 1, logits, -np.inf).max(axis=1)
    np.testing.assert_allclose(logits[np.arange(len(choices)), choices], best, rtol=1e-12)


def test_a_saved_network_plays_as_ckpt_and_bad_folders_are_one_line(tmp_path):
    chromosome = np.random.default_rng(1).uniform(-1, 1, 394)
    ev.write_ann_policy(tmp_path / "run" / "policy", chromosome, PYLUDO, {"source": "test"})
    player = make_player(f"ckpt:{tmp_path / 'run'}")  # a run folder: its policy/
    assert isinstance(player, ev.AnnPlayer) and player.name == f"ckpt:{tmp_path / 'run'}"
    np.testing.assert_array_equal(player.chromosome, chromosome)
    states, tab, masks = mid_game_positions(games=8, plies=30)
    np.testing.assert_array_equal(player.act(states, tab, masks), ev.AnnPlayer("x", chromosome).act(states, tab, masks))

    from policies.checkpoints import PolicyFileError, write_policy

    with pytest.raises(PolicyFileError, match="not a ga_ann network"):
        ev.read_chromosome(write_policy(tmp_path / "other", "td_value", {"obs": ev.OBS}, {}, obs_dim=60))


# ------------------------------------------------------------------ GA operators
def test_two_point_crossover_swaps_exactly_the_middle_genes():
    rng = np.random.default_rng(0)
    a, b = np.zeros(394), np.ones(394)
    for _ in range(200):
        lo, hi = ev.crossover_points(rng, 394)
        assert 1 <= lo < hi <= 393
        c1, c2 = ev.two_point_crossover(a, b, lo, hi)
        np.testing.assert_array_equal(c1, np.r_[a[:lo], b[lo:hi], a[hi:]])
        np.testing.assert_array_equal(c2, np.r_[b[:lo], a[lo:hi], b[hi:]])
    assert (a == 0).all() and (b == 1).all(), "the parents are untouched"


def test_mutation_changes_about_the_rate_of_genes_by_the_sigma():
    rng = np.random.default_rng(0)
    parent = np.zeros(394)
    changed = np.stack([ev.gaussian_mutation(parent, 0.45, 2.0, rng) for _ in range(400)])
    share = (changed != 0).mean()
    assert abs(share - 0.45) < 0.01  # 157,600 genes: the standard error is 0.0013
    assert abs(changed[changed != 0].std() - 2.0) < 0.03
    assert (ev.gaussian_mutation(parent, 0.0, 2.0, rng) == 0).all()


def test_ranked_roulette_prefers_higher_ranks_in_proportion():
    fitness = np.array([5.0, -3.0, 40.0, 7.0])  # ranks 2, 1, 4, 3: the scale of fitness does not matter
    np.testing.assert_allclose(ev.rank_probabilities(fitness), np.array([2, 1, 4, 3]) / 10)
    rng = np.random.default_rng(0)
    firsts = np.array([ev.select_parents(fitness, rng) for _ in range(20_000)])
    assert (firsts[:, 0] != firsts[:, 1]).all(), "a parent never breeds with itself"
    counts = np.bincount(firsts[:, 0], minlength=4) / len(firsts)
    np.testing.assert_allclose(counts, [0.2, 0.1, 0.4, 0.3], atol=0.01)


def test_elitism_keeps_the_best_unchanged_and_breeds_the_rest():
    rng = np.random.default_rng(0)
    population = rng.normal(size=(30, 394))
    fitness = rng.permutation(30).astype(float)
    params = ev.GAParams(population=30, crossover_rate=0.85, mutation_rate=0.45, mutation_sigma=2.0, elitism=0.75)
    following = ev.next_generation(population, fitness, params, rng)
    assert ev.elite_count(30, 0.75) == 22 and following.shape == (30, 394)
    best_first = population[np.argsort(-fitness)]
    np.testing.assert_array_equal(following[:22], best_first[:22])
    for child in following[22:]:
        assert not any(np.array_equal(child, p) for p in population), "an offspring is a plain copy"
    # No crossover, no mutation: the children are copies of parents, mostly of the fitter ones.
    copies = ev.GAParams(population=30, crossover_rate=0.0, mutation_rate=0.0, mutation_sigma=2.0, elitism=0.5)
    children = ev.next_generation(population, fitness, copies, rng)[15:]
    ranks = [int(fitness[np.flatnonzero((population == c).all(axis=1))[0]]) for c in children]
    assert np.mean(ranks) > 14.5  # the mean rank of a uniform draw


def test_initial_population_random_or_around_a_prior():
    rng = np.random.default_rng(0)
    random = ev.init_population(30, rng)
    assert random.shape == (30, 394) and -0.77 <= random.min() and random.max() <= 0.77
    prior = np.full(394, 5.0)
    seeded = ev.init_population(30, rng, prior, init_sigma=1.0)
    assert abs((seeded - 5.0).std() - 1.0) < 0.02 and len({row.tobytes() for row in seeded}) == 30


def test_the_ga_state_round_trips_and_its_generator_continues_where_it_stood(tmp_path):
    rng = np.random.default_rng(7)
    population = ev.init_population(6, rng)
    state = ev.GAState(generation=3, population=population, rng_state=rng.bit_generator.state,
                       history=np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]), best=population[2].copy(),
                       best_fitness=12.5, best_generation=1, elapsed_s=9.0, wandb_id="abc")
    state.save(tmp_path / "population.npz")
    loaded = ev.GAState.load(tmp_path / "population.npz")
    np.testing.assert_array_equal(loaded.population, population)
    np.testing.assert_array_equal(loaded.history, state.history)
    np.testing.assert_array_equal(loaded.best, state.best)
    assert (loaded.generation, loaded.best_fitness, loaded.best_generation, loaded.wandb_id) == (3, 12.5, 1, "abc")
    assert loaded.rng().random(5).tolist() == rng.random(5).tolist()
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(ValueError, match="is missing or damaged"):
        ev.GAState.load(tmp_path / "bad.npz")


# ------------------------------------------------------------------ fitness games
def spec(games: int = 24, **changes) -> ev.FitnessSpec:
    return ev.FitnessSpec(rules=PYLUDO.to_dict(), games=games, seed=5, **changes)


def test_fitness_games_are_the_evaluators_games_with_the_chromosome_in_every_seat(tmp_path):
    population = ev.init_population(3, np.random.default_rng(2))
    stats = ev.play_fitness(population, np.arange(3), 4, spec())
    for i in range(3):
        ev.write_ann_policy(tmp_path / f"p{i}", population[i], PYLUDO)
        result = play_tournament([f"ckpt:{tmp_path / f'p{i}'}"] + ["semi_smart"] * 3, 24, PYLUDO,
                                 seed=ev.game_seed(5, 4, i), rate=False)
        assert result.seat_counts[0].tolist() == [6, 6, 6, 6]
        assert stats[i, 0] == 24 and stats[i, 1] == (result.places[:, 0] == 1).sum()


def test_distances_are_the_mean_squares_covered_at_the_end_of_each_game():
    chromosome = ev.init_population(1, np.random.default_rng(3))[0]
    stats = ev.play_fitness(chromosome[None], np.array([7]), 2, spec(games=8))
    # The same 8 games replayed move by move outside the kernel.
    tab = compile_rules(PYLUDO)
    seed = ev.game_seed(5, 2, 7)
    states, dice = new_batch(tab, 8, seed)
    bots = streams(seed ^ BOT_SEED_SALT, 8)
    ann, semi = ev.AnnPlayer("ann", chromosome), make_player("semi_smart")
    seats = (4 - np.arange(8) % 4) % 4
    masks = np.zeros((8, 4), np.int8)
    legal_masks(states, tab, masks)
    while not ((states[:, OVER] == 1) | (states[:, PLY] >= 10_000)).all():
        choices = np.where(states[:, CURRENT] == seats, ann.act(states, tab, masks),
                           semi.act_streams(states, tab, masks, bots, np.arange(8)))
        step_batch(states, tab, dice, np.where(states[:, OVER] == 1, -1, choices), np.zeros(8, np.int32), masks)

    def covered(seat_tokens):
        return np.where(seat_tokens >= 0, seat_tokens + 1, 0).mean()

    tokens = states[:, :16].reshape(8, 4, 4)
    own = sum(covered(tokens[g, seats[g]]) for g in range(8))
    enemy = sum(np.mean([covered(tokens[g, s]) for s in range(4) if s != seats[g]]) for g in range(8))
    wins = sum(states[g, PLACES + seats[g]] == 1 for g in range(8))
    np.testing.assert_allclose(stats[0], [8, wins, own, enemy])
    expected = (wins + (own - enemy) / 1000) / 8 * 100
    assert ev.fitness(stats)[0] == pytest.approx(expected)


def test_fitness_is_reproducible_and_the_same_in_any_chunks_or_ray_tasks():
    population = ev.init_population(5, np.random.default_rng(4))
    whole = ev.play_fitness(population, np.arange(5), 1, spec())
    np.testing.assert_array_equal(whole, ev.play_fitness(population, np.arange(5), 1, spec()))
    parts = np.concatenate([ev.play_fitness(population[[0, 1]], np.array([0, 1]), 1, spec()),
                            ev.play_fitness(population[[2]], np.array([2]), 1, spec()),
                            ev.play_fitness(population[[3, 4]], np.array([3, 4]), 1, spec())])
    np.testing.assert_array_equal(whole, parts)
    other_generation = ev.play_fitness(population, np.arange(5), 2, spec())
    assert not np.array_equal(whole, other_generation)
    common = ev.play_fitness(np.repeat(population[:1], 2, axis=0), np.arange(2), 1, spec(common_dice=True))
    np.testing.assert_array_equal(common[0], common[1])  # the same dice: the same games

    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        for tasks in (1, 3, 5):
            np.testing.assert_array_equal(ev.evaluate_population(population, 1, spec(), tasks), whole)
    finally:
        ray.shutdown()
