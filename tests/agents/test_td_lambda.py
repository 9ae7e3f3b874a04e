"""TD(λ) afterstate values: the updates equal their formulas (seed 004; van Seijen et al. 2016), the MLP's traces
equal per-chain autograd, self-play learns, and a saved value plays through ``ckpt:``."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from ludo_env.afterstate_features import feature_count
from ludo_env.engine import compile_rules
from ludo_env.rules import Rules
from policies.checkpoints import PolicyFileError, write_policy
from policies.search import GreedyPlayer, ValueSource
from policies.td_lambda import (
    KIND,
    MLPTD,
    LinearTD,
    LinearValue,
    MLPValue,
    SelfPlay,
    load_value,
    make_learner,
    make_value,
    policy_state,
)
from policies.tournament import play_tournament
from tests.engine.test_afterstate_features import afterstates

F = feature_count()


@pytest.fixture(autouse=True)
def one_torch_thread():
    """As the trainer runs: on a busy 2-core machine a second torch thread only spins (a 10x slower MLP)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def unit(i: int) -> np.ndarray:
    x = np.zeros(F)
    x[i] = 1.0
    return x


def feed(learner, chain, reward: float = 1.0):
    """One game, one seat: the afterstates of `chain` in turn, then the end with `reward`."""
    for x in chain:
        learner.step(x[None, None], np.zeros((1, 1)), np.array([False]))
    learner.step(np.zeros((1, 1, F)), np.array([[reward]]), np.array([True]))


# ---------------------------------------------------------------- linear, by hand
@pytest.mark.parametrize("true_online", [False, True])
def test_linear_updates_on_a_two_step_chain_match_hand_computation(true_online):
    a, lam = 0.1, 0.5
    # Distinct features: S0 = e0, S1 = e1, then a win. Step 1: delta = 0. Step 2: z = lam e0 + e1, delta = 1.
    learner = LinearTD(LinearValue(), games=1, players=1, alpha=a, lam=lam, true_online=true_online)
    feed(learner, [unit(0), unit(1)])
    np.testing.assert_allclose(learner.value.w[:2], [a * lam, a])
    assert not learner.value.w[2:].any()
    # The same features twice (S0 = S1 = e0): accumulating z = (1 + lam) e0; the dutch trace of true online
    # subtracts a lam (z . x) x = a lam e0.
    learner = LinearTD(LinearValue(), games=1, players=1, alpha=a, lam=lam, true_online=true_online)
    feed(learner, [unit(0), unit(0)])
    expected = a * (1 + lam - a * lam) if true_online else a * (1 + lam)
    assert learner.value.w[0] == pytest.approx(expected)


def true_online_reference(chains, rewards, a, lam, gamma, w):
    """Sutton and Barto's true online TD(λ) (section 12.8), one chain after another, plainly written."""
    for xs, reward in zip(chains, rewards):
        z, v_old = np.zeros(F), 0.0
        for t in range(len(xs)):
            x = xs[t]
            x_next = xs[t + 1] if t + 1 < len(xs) else np.zeros(F)
            r = reward if t + 1 == len(xs) else 0.0
            v, v_next = w @ x, w @ x_next
            delta = r + gamma * v_next - v
            z = gamma * lam * z + (1 - a * gamma * lam * (z @ x)) * x
            w = w + a * (delta + v - v_old) * z - a * (v - v_old) * x
            v_old = v_next
    return w


def test_true_online_equals_its_formula_over_several_games():
    rng = np.random.default_rng(0)
    chains = [rng.random((n, F)) * (rng.random(F) < 0.2) for n in (5, 3, 7)]
    rewards = [1.0, 0.0, 1.0]
    a, lam, gamma = 0.05, 0.8, 0.95
    learner = LinearTD(LinearValue(), games=1, players=1, alpha=a, lam=lam, gamma=gamma, true_online=True)
    learner.value.w = rng.normal(size=F) * 0.1
    expected = true_online_reference(chains, rewards, a, lam, gamma, learner.value.w.copy())
    for chain, reward in zip(chains, rewards):
        feed(learner, chain, reward)
    np.testing.assert_allclose(learner.value.w, expected, rtol=1e-10, atol=1e-12)


def random_batch_steps(games, players, steps, seed):
    """Feature batches ``(B, P, F)``, rewards and ends for a few batched steps (games end at random)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(steps):
        x = (rng.random((games, players, F)) * (rng.random((games, players, F)) < 0.2)).astype(np.float32)
        done = rng.random(games) < 0.25
        reward = np.where(done[:, None], (rng.random((games, players)) < 0.5).astype(float), 0.0)
        out.append((x, reward, done))
    return out


def accumulating_reference(batches, games, players, a, lam, gamma, w):
    """Seed 004's batched TD(λ): per-(game, seat) traces, all chains at the same w, their updates summed."""
    z = np.zeros((games, players, F))
    prev = [None] * games
    for x_next, reward, done in batches:
        dw = np.zeros(F)
        for g in range(games):
            for s in range(players):
                if prev[g] is None:
                    continue
                x = prev[g][s]
                v_next = 0.0 if done[g] else w @ x_next[g, s]
                delta = reward[g, s] + gamma * v_next - w @ x
                z[g, s] = gamma * lam * z[g, s] + x
                dw += a / games * delta * z[g, s]
        w = w + dw
        for g in range(games):
            prev[g] = None if done[g] else x_next[g].astype(np.float64)
            if done[g]:
                z[g] = 0.0
    return w


def test_batched_accumulating_traces_equal_the_per_chain_loop():
    games, players, a, lam, gamma = 3, 2, 0.2, 0.7, 0.9
    batches = random_batch_steps(games, players, 12, seed=1)
    learner = LinearTD(LinearValue(), games, players, a, lam, gamma)
    learner.value.w = np.random.default_rng(2).normal(size=F) * 0.1
    expected = accumulating_reference(batches, games, players, a, lam, gamma, learner.value.w.copy())
    for batch in batches:
        learner.step(*batch)
    np.testing.assert_allclose(learner.value.w, expected, rtol=1e-9, atol=1e-12)


def test_with_lambda_zero_both_methods_are_td0():
    games, players, a, gamma = 4, 3, 0.3, 1.0
    batches = random_batch_steps(games, players, 10, seed=3)
    w0 = np.random.default_rng(4).normal(size=F) * 0.1
    expected = accumulating_reference(batches, games, players, a, 0.0, gamma, w0.copy())
    for true_online in (False, True):
        learner = LinearTD(LinearValue(w0), games, players, a, 0.0, gamma, true_online=true_online)
        for batch in batches:
            learner.step(*batch)
        np.testing.assert_allclose(learner.value.w, expected, rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------- MLP traces
def test_mlp_traces_equal_per_chain_autograd():
    games, players, a, lam, gamma = 3, 2, 0.5, 0.8, 0.95
    batches = random_batch_steps(games, players, 8, seed=5)
    value = MLPValue([8, 5], seed=1)
    reference = MLPValue([8, 5], seed=1)
    learner = MLPTD(value, games, players, a, lam, gamma)
    params = list(reference.net.parameters())
    z = {(g, s): [torch.zeros_like(p, dtype=torch.float64) for p in params] for g in range(games)
         for s in range(players)}
    prev = [None] * games
    for x_next, reward, done in batches:
        learner.step(x_next, reward, done)
        # Reference: each chain's gradient by autograd, its own trace, all at the same weights, summed.
        updates = [torch.zeros_like(p, dtype=torch.float64) for p in params]
        for g in range(games):
            for s in range(players):
                if prev[g] is None:
                    continue
                v = torch.sigmoid(reference.net(torch.from_numpy(prev[g][s])[None]))[0, 0]
                grads = torch.autograd.grad(v, params)
                with torch.no_grad():
                    after = torch.sigmoid(reference.net(torch.from_numpy(x_next[g, s])[None]))
                    v_next = 0.0 if done[g] else float(after)
                delta = reward[g, s] + gamma * v_next - float(v.detach())
                for k, grad in enumerate(grads):
                    z[g, s][k] = gamma * lam * z[g, s][k] + grad.double()
                    updates[k] += a / games * delta * z[g, s][k]
        with torch.no_grad():
            for p, u in zip(params, updates):
                p.add_(u.float())
        for g in range(games):
            prev[g] = None if done[g] else x_next[g]
            if done[g]:
                for s in range(players):
                    z[g, s] = [torch.zeros_like(t) for t in z[g, s]]
    for mine, theirs in zip(value.net.parameters(), params):
        torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=1e-6)


def test_true_online_is_for_the_linear_value_only():
    with pytest.raises(ValueError, match="true_online needs value=linear"):
        make_learner(MLPValue([4]), "true_online", 2, 2, 0.1, 0.5, 1.0)
    with pytest.raises(ValueError, match="method='sarsa' is not allowed"):
        make_learner(LinearValue(), "sarsa", 2, 2, 0.1, 0.5, 1.0)


# ---------------------------------------------------------------- self-play learns
def win_rate_vs_random(value, rules, games: int, seed: int = 7) -> float:
    player = GreedyPlayer(value, name="td")
    result = play_tournament([player] + ["random"] * (rules.players - 1), games, rules, seed, rate=False)
    return next(r for r in result.rows if r.player == "td").win_rate


@pytest.mark.parametrize("variant", ["classic", "pyludo"])
def test_a_short_self_play_run_beats_random_clearly(variant):
    """300k decisions (5-8 s of self-play on a loaded 2-core machine): measured 72-76% against 3 random (25%
    by chance) over seeds 0-2 on both variants."""
    rules = Rules.load(variant)
    tab = compile_rules(rules)
    value = LinearValue()
    assert isinstance(value, ValueSource)
    learner = make_learner(value, "td_lambda", 128, rules.players, 0.05, 0.8, 1.0)
    play = SelfPlay(tab, value, learner, 128, 0.02, seed=0)
    stats = play.run(2400)
    assert stats.decisions == 128 * 2400 and stats.games_finished > 500 and stats.truncated == 0
    assert win_rate_vs_random(value, rules, 600) > 0.55


@pytest.mark.parametrize("kind,method,alpha", [("mlp", "td_lambda", 2.0), ("linear", "true_online", 0.05)])
def test_self_play_learns_for_the_mlp_and_true_online_too(kind, method, alpha):
    """77k decisions: measured 71-76% (mlp, 16 hidden) and 65-70% (true online) against 3 random, seeds 0-2."""
    rules = Rules.load("classic")
    tab = compile_rules(rules)
    value = make_value(kind, [16], seed=0)
    learner = make_learner(value, method, 64, rules.players, alpha, 0.8, 1.0)
    SelfPlay(tab, value, learner, 64, 0.02, seed=0).run(1200)
    assert win_rate_vs_random(value, rules, 600) > 0.5


# ---------------------------------------------------------------- saved values
@pytest.mark.parametrize("kind", ["linear", "mlp"])
def test_a_saved_value_loads_rates_the_same_and_plays_through_ckpt(tmp_path, kind):
    from policies.players import make_player

    rules = Rules.load("classic", players=2)
    tab = compile_rules(rules)
    value = make_value(kind, [8, 8], seed=3)
    if kind == "linear":
        value.w = np.random.default_rng(0).normal(size=F)
    config, weights = policy_state(value, rules.to_dict())
    folder = write_policy(tmp_path / "policy", KIND, config, weights, obs_dim=F)
    loaded = load_value(tmp_path)
    _, _, states = afterstates("classic", 2, seed=1)
    np.testing.assert_allclose(loaded.seat_values(states, tab), value.seat_values(states, tab), rtol=1e-6)
    assert not loaded.seat_values(states, tab)[:, 2:].any()
    player = make_player(f"ckpt:{folder}")
    assert isinstance(player, GreedyPlayer) and player.name == f"ckpt:{folder}"
    result = play_tournament([f"ckpt:{folder}", "random"], 20, rules, 0, rate=False)
    assert result.truncated == 0


def test_a_policy_of_another_kind_or_width_is_refused_in_one_line(tmp_path):
    folder = write_policy(tmp_path / "p", KIND, {"value": "linear", "hidden": []}, {"w": torch.zeros(F + 1)},
                          obs_dim=F + 1)
    with pytest.raises(PolicyFileError, match=f"features now number {F}, the value was trained on {F + 1}"):
        load_value(folder)
    folder = write_policy(tmp_path / "q", "ga_ann", {"value": "linear"}, {"w": torch.zeros(F)}, obs_dim=F)
    with pytest.raises(PolicyFileError, match="is not a TD\\(lambda\\) value"):
        load_value(folder)
