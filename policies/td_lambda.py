"""TD(λ) afterstate values (seed 004's first agent, from backgammon to Ludo): a linear and an MLP value, learned
online from batched self-play, and the greedy player that moves on them.

Values
    Both rate a between-rolls state (an afterstate, `ludo_env.engine.afterstates`)
    for every seat from its hand-made features (`ludo_env.afterstate_features`:
    ``x = seat_features(states, tab)[:, seat]``, the seat's own point of view).
    One set of weights serves every seat, so a seat's value is the same function
    of the position seen from it. The target is the outcome on
    `policies.search.win_outcome`'s scale: 1 for the seat placed first, 0 for the
    others, so a value estimates the chance that the seat wins.

    `LinearValue`: ``v(x) = w . x``, not squashed, so its gradient is x and true
    online TD(λ) applies exactly. `MLPValue`: ``v(x) = sigmoid(net(x))``, a ReLU
    MLP (``hidden``, e.g. F -> 64 -> 64 -> 1); the sigmoid keeps it a probability.
    Both are `policies.search.ValueSource` s (``seat_values`` and ``outcome``), so
    the greedy, expectimax and MCTS players take them; absent seats rate 0.

Chains (what is learned from what)
    The chain of a game is its sequence of afterstates, one per decision, whoever
    moved: S_0, S_1, ... up to the finished game. Every seat's value is updated on
    every transition S_t -> S_{t+1}: each (game, seat) pair is its own TD(λ) chain
    with its own eligibility trace. In a self-play game the afterstate sequence is
    a Markov chain, so each seat's win chance is a well-defined value of it and
    every transition carries information for every seat; learning a seat only on
    its own afterstates would see 1/players of the data and bootstrap over the
    others' moves without learning from them. The reward is 0 until the game ends
    and then the outcome (1 to the winner, 0 to the others); gamma (1 by default)
    discounts per decision. Games reset as they finish (traces cleared); a game
    still running after ``max_plies`` rolls is dropped without a final update.

Updates (seed 004's batched form)
    Per chain c, with the value's gradient g_t = ∇v(S_t, w_t):

    * TD(λ), accumulating traces (linear and MLP):
      ``z_t = γλ z_{t-1} + g_t``, ``δ_t = R_{t+1} + γ v(S_{t+1}, w_t) - v(S_t, w_t)``,
      ``Δw_c = a δ_t z_t``.
    * true online TD(λ) (linear only; van Seijen, Mahmood, Pilarski, Machado and
      Sutton 2016, Sutton and Barto's algorithm of section 12.8), x_t = g_t:
      ``z_t = γλ z_{t-1} + (1 - a γλ z_{t-1}.x_t) x_t``,
      ``Δw_c = a (δ_t + V_t - V_old) z_t - a (V_t - V_old) x_t``, where
      ``V_t - V_old`` is how much the chain's previous update moved its value of
      S_t: ``Δw_c(t-1) . x_t`` (0 at a chain's start). Seed 004 writes the
      correction as ``(v(S_t, w_t) - g_t . w_t)``, which is identically 0 for a
      linear value; the paper's term is what is implemented. With one chain this
      is exactly the paper's ``V_old = w_{t-1} . x_t``. With many it is each
      chain's own previous update, not the whole batch's: charging every chain
      with the batch's change made each correct for the other B·P - 1 chains'
      updates as if they were its own, and diverged in every run (alpha 0.01 to
      0.05, 64 or 256 games). Since the per-chain step is alpha / games, the
      corrections are small and batched true online TD(λ) learns much like
      accumulating TD(λ) (same win rates in the sweep below).

    All chains of a batch step are evaluated at the same w_t and their updates
    add: ``w_{t+1} = w_t + Σ_c Δw_c`` with the per-chain step ``a = alpha / games``,
    so `alpha` is the step of the mean over games (seed 004: "the update target is
    the average ... across the batch") and does not change with the batch size;
    the seats of a game add up. With λ = 0 both methods are TD(0).

Self-play (`SelfPlay`)
    ``games`` games step together (`ludo_env.engine.batch.step_batch`). Each mover
    expands its moves (`expand_moves`), rates each legal afterstate for itself
    (the outcome where the move ends the game) and takes the best; with
    probability ``epsilon`` a uniformly random legal move instead (the values
    learned are those of this ε-greedy policy: on-policy, no trace cutting).
    New games start with the seats in turn (game k: seat k mod players first).

Defaults (``conf/algo/td_lambda.yaml``), from a short sweep (its table: the seed agents' results page,
``docs/pages/results/``)
    The linear value is flat across step sizes, λ and ε and plateaus near 75% against 3 random after about
    half a million decisions; the MLP (64, 64) goes further. Hence alpha 0.05 (linear) and 2.0 (mlp), λ 0.8,
    ε 0.02 (`DEFAULT_ALPHA`).

Saved agents
    `policy_state` gives what `policies.checkpoints.write_policy` writes (kind
    ``td_value``: ``model_config`` holds the value kind, hidden sizes, rules and the
    feature count); `load_value` reads any policy, checkpoint or run folder back
    as a value, and `load_player` (``ckpt:<path>``) plays it greedily.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ludo_env.afterstate_features import feature_count, seat_features
from ludo_env.engine import rng as rngmod
from ludo_env.engine.afterstates import expand_moves
from ludo_env.engine.batch import reset_batch, step_batch
from ludo_env.engine.layout import CURRENT, OVER, PLACES, PLY, R_PLAYERS, STATE_LEN
from ludo_env.rules import MAX_PLAYERS, MAX_TOKENS
from policies.search import GreedyPlayer, win_outcome

KIND = "td_value"
VALUES = ("linear", "mlp")
METHODS = ("td_lambda", "true_online")
DEFAULT_ALPHA = {"linear": 0.05, "mlp": 2.0}
"""Step sizes of the mean update when ``algo.alpha`` is not given (module docstring, Defaults)."""


# ------------------------------------------------------------------ values
class LinearValue:
    """``v = w . x`` over `seat_features` (module docstring)."""

    kind = "linear"

    def __init__(self, weights: np.ndarray | None = None, name: str = "td_linear"):
        self.w = np.zeros(feature_count()) if weights is None else np.asarray(weights, dtype=np.float64).copy()
        if self.w.shape != (feature_count(),):
            raise ValueError(f"linear weights have {self.w.size} entries, the features {feature_count()}")
        self.name = name

    def values(self, x: np.ndarray) -> np.ndarray:
        """Value of feature rows ``(..., F)``, float32."""
        return (x @ self.w).astype(np.float32)

    def seat_values(self, states: np.ndarray, tab: np.ndarray) -> np.ndarray:
        return self.values(seat_features(states, tab))  # absent seats have all-zero rows: value 0

    def outcome(self, states: np.ndarray, tab: np.ndarray) -> np.ndarray:
        return win_outcome(states, tab)

    def state_dict(self) -> dict[str, Any]:
        import torch

        return {"w": torch.from_numpy(self.w.copy())}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.w = np.asarray(state["w"].numpy(), dtype=np.float64).copy()
        if self.w.shape != (feature_count(),):
            raise ValueError(f"linear weights have {self.w.size} entries, the features {feature_count()}")

    def config(self) -> dict[str, Any]:
        return {"value": self.kind, "hidden": []}


class MLPValue:
    """``v = sigmoid(net(x))``, a ReLU MLP over `seat_features` (module docstring)."""

    kind = "mlp"

    def __init__(self, hidden: tuple[int, ...] | list[int] = (64, 64), seed: int = 0, name: str = "td_mlp"):
        import torch

        self.hidden = [int(h) for h in hidden]
        sizes = [feature_count(), *self.hidden]
        generator = torch.Generator().manual_seed(seed)
        layers: list[torch.nn.Module] = []
        for a, b in zip(sizes[:-1], sizes[1:]):
            layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
        layers.append(torch.nn.Linear(sizes[-1], 1))
        self.net = torch.nn.Sequential(*layers)
        with torch.no_grad():  # the initial weights from `seed`, not from torch's global generator
            for p in self.net.parameters():
                bound = 1.0 / np.sqrt(p.shape[-1] if p.dim() > 1 else max(1, p.shape[0]))
                p.uniform_(-bound, bound, generator=generator)
        self.name = name

    def values(self, x: np.ndarray) -> np.ndarray:
        import torch

        rows = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32).reshape(-1, x.shape[-1]))
        with torch.no_grad():
            out = torch.sigmoid(self.net(rows))
        return out.numpy().reshape(x.shape[:-1])

    def seat_values(self, states: np.ndarray, tab: np.ndarray) -> np.ndarray:
        players = int(tab[R_PLAYERS])
        out = np.zeros((states.shape[0], MAX_PLAYERS), dtype=np.float32)
        out[:, :players] = self.values(seat_features(states, tab)[:, :players])
        return out

    def outcome(self, states: np.ndarray, tab: np.ndarray) -> np.ndarray:
        return win_outcome(states, tab)

    def state_dict(self) -> dict[str, Any]:
        return {f"net.{k}": v for k, v in self.net.state_dict().items()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.net.load_state_dict({k[len("net."):]: v for k, v in state.items()})

    def config(self) -> dict[str, Any]:
        return {"value": self.kind, "hidden": list(self.hidden)}


def make_value(kind: str, hidden: list[int] | tuple[int, ...] = (64, 64), seed: int = 0):
    if kind == "linear":
        return LinearValue()
    if kind == "mlp":
        return MLPValue(hidden, seed)
    raise ValueError(f"value={kind!r} is not allowed: choose {' or '.join(VALUES)}")


# ---------------------------------------------------------------- learners
class LinearTD:
    """TD(λ) or true online TD(λ) on a `LinearValue`, one chain per (game, seat) (module docstring).

    `step(x_next, reward, done)` feeds every game's next afterstate: `x_next`
    ``(B, P, F)`` its features for the P seats in the game (ignored where done),
    `reward` ``(B, P)`` the outcome where `done`, else 0. A game's first
    afterstate only starts its chain.
    """

    def __init__(self, value: LinearValue, games: int, players: int, alpha: float, lam: float, gamma: float = 1.0,
                 true_online: bool = False):
        self.value, self.games, self.players = value, games, players
        self.alpha, self.lam, self.gamma, self.true_online = alpha, lam, gamma, true_online
        self.step_size = alpha / games
        shape = (games, players, feature_count())
        self.z = np.zeros(shape)
        self.x = np.zeros(shape)
        self.own_dw = np.zeros(shape) if true_online else None
        self.started = np.zeros(games, dtype=bool)

    def step(self, x_next: np.ndarray, reward: np.ndarray, done: np.ndarray) -> dict[str, float]:
        w, a, gl = self.value.w, self.step_size, self.gamma * self.lam
        live = self.started
        x = self.x
        v = x @ w
        v_next = np.where(done[:, None], 0.0, x_next @ w)
        delta = np.where(live[:, None], reward + self.gamma * v_next - v, 0.0)
        live3 = live[:, None, None]
        if self.true_online:
            zx = np.einsum("gsf,gsf->gs", self.z, x)
            self.z = np.where(live3, gl * self.z + (1.0 - a * gl * zx)[..., None] * x, 0.0)
            change = np.einsum("gsf,gsf->gs", self.own_dw, x)  # V_t - V_old of this chain's own last update
            self.own_dw = a * ((delta + change)[..., None] * self.z - change[..., None] * x)
            dw = self.own_dw.sum(axis=(0, 1))
        else:
            self.z = np.where(live3, gl * self.z + x, 0.0)
            dw = a * np.einsum("gs,gsf->f", delta, self.z)
        self.value.w = w + dw
        self._advance(x_next, done)
        return {"td_sq": float((delta[live] ** 2).sum()), "chains": int(live.sum()) * self.players}

    def _advance(self, x_next: np.ndarray, done: np.ndarray) -> None:
        self.x = np.where(done[:, None, None], 0.0, x_next)
        self.started = ~done
        self.z[done] = 0.0
        if self.own_dw is not None:
            self.own_dw[done] = 0.0

    def drop(self, games: np.ndarray) -> None:
        """Forget the chains of `games` (truncated: no final update)."""
        self.started[games] = False
        self.z[games] = 0.0
        self.x[games] = 0.0
        if self.own_dw is not None:
            self.own_dw[games] = 0.0


class MLPTD:
    """TD(λ) with accumulating traces over the parameters of an `MLPValue`, one chain per (game, seat).

    Same `step` as `LinearTD`. The per-chain gradients are backpropagated by
    hand for the ReLU MLP in one batched pass, and each layer's gradient is an
    outer product ``d ⊗ h`` (backpropagated error, layer input), so it is added
    to the traces ``(B*P, out, in)`` in place (``addcmul_``) and never stored on
    its own, which is much faster than torch.func's vmap of grad over the chains.
    """

    def __init__(self, value: MLPValue, games: int, players: int, alpha: float, lam: float, gamma: float = 1.0):
        import torch

        self.value, self.games, self.players = value, games, players
        self.alpha, self.lam, self.gamma = alpha, lam, gamma
        self.step_size = alpha / games
        self.layers = [m for m in value.net if isinstance(m, torch.nn.Linear)]
        chains = games * players
        self.z_w = [torch.zeros((chains, *m.weight.shape)) for m in self.layers]
        self.z_b = [torch.zeros((chains, *m.bias.shape)) for m in self.layers]
        self.x = torch.zeros((chains, feature_count()))
        self.started = np.zeros(games, dtype=bool)

    def backward(self, x: Any, scale: Any) -> tuple[Any, list[tuple[Any, Any]]]:
        """Values ``(M,)`` of feature rows ``(M, F)`` and, per layer, ``(d, h)``: the gradient of ``scale * v``
        with respect to its weight is ``d[:, :, None] * h[:, None, :]`` and to its bias ``d``."""
        import torch

        inputs, pre = [], []
        h = x
        with torch.no_grad():
            for i, layer in enumerate(self.layers):
                inputs.append(h)
                a = torch.nn.functional.linear(h, layer.weight, layer.bias)
                pre.append(a)
                h = torch.relu(a) if i < len(self.layers) - 1 else a
            v = torch.sigmoid(h[:, 0])
            d = (v * (1 - v) * scale)[:, None]
            grads = []
            for i in range(len(self.layers) - 1, -1, -1):
                grads.append((d, inputs[i]))
                if i:
                    d = (d @ self.layers[i].weight) * (pre[i - 1] > 0)
        return v, grads[::-1]

    def step(self, x_next: np.ndarray, reward: np.ndarray, done: np.ndarray) -> dict[str, float]:
        import torch

        games, players = self.games, self.players
        live = torch.from_numpy(np.repeat(self.started, players))
        # Chains that have not started get no gradient: their traces stay 0.
        v, grads = self.backward(self.x, live.float())
        x_next_t = torch.from_numpy(np.ascontiguousarray(x_next, dtype=np.float32)).reshape(games * players, -1)
        done_t = torch.from_numpy(np.repeat(done, players))
        with torch.no_grad():
            v_next = torch.where(done_t, 0.0, torch.sigmoid(self.value.net(x_next_t))[:, 0])
            r = torch.from_numpy(np.ascontiguousarray(reward, dtype=np.float32)).reshape(-1)
            delta = torch.where(live, r + self.gamma * v_next - v, 0.0)
            gl, a = self.gamma * self.lam, self.step_size
            ended = torch.from_numpy(np.flatnonzero(np.repeat(done, players)))
            for layer, z_w, z_b, (d, h) in zip(self.layers, self.z_w, self.z_b, grads):
                z_w.mul_(gl).addcmul_(d[:, :, None], h[:, None, :])
                z_b.mul_(gl).add_(d)
                layer.weight.add_((delta @ z_w.view(z_w.shape[0], -1)).view(layer.weight.shape), alpha=a)
                layer.bias.add_(delta @ z_b, alpha=a)
                z_w.index_fill_(0, ended, 0.0)
                z_b.index_fill_(0, ended, 0.0)
        self.x = torch.where(done_t[:, None], 0.0, x_next_t)
        self.started = ~done
        return {"td_sq": float((delta[live] ** 2).sum()), "chains": int(live.sum())}

    def drop(self, games: np.ndarray) -> None:
        """Forget the chains of `games` (truncated: no final update)."""
        import torch

        self.started[games] = False
        chains = torch.from_numpy((np.asarray(games, dtype=np.int64)[:, None] * self.players
                                   + np.arange(self.players)).reshape(-1))
        for z in (*self.z_w, *self.z_b):
            z.index_fill_(0, chains, 0.0)
        self.x.index_fill_(0, chains, 0.0)


def make_learner(value, method: str, games: int, players: int, alpha: float, lam: float, gamma: float):
    """The learner for a value and a method; true online TD(λ) is for the linear value only."""
    if method not in METHODS:
        raise ValueError(f"method={method!r} is not allowed: choose {' or '.join(METHODS)}")
    if isinstance(value, LinearValue):
        return LinearTD(value, games, players, alpha, lam, gamma, true_online=method == "true_online")
    if method == "true_online":
        raise ValueError("method=true_online needs value=linear: use method=td_lambda for the MLP")
    return MLPTD(value, games, players, alpha, lam, gamma)


# ---------------------------------------------------------------- self-play
@dataclass
class PlayStats:
    decisions: int = 0
    games_finished: int = 0
    game_decisions: int = 0
    """Decisions of the finished games (mean game length = game_decisions / games_finished)."""
    truncated: int = 0
    td_sq: float = 0.0
    chains: int = 0

    @property
    def td_rmse(self) -> float:
        return float(np.sqrt(self.td_sq / self.chains)) if self.chains else float("nan")


class SelfPlay:
    """`games` ε-greedy self-play games stepping together, feeding every afterstate to a learner (module docstring)."""

    def __init__(self, tab: np.ndarray, value, learner, games: int, epsilon: float, seed: int,
                 max_plies: int = 2000):
        self.tab, self.value, self.learner = tab, value, learner
        self.games, self.epsilon, self.max_plies = games, epsilon, max_plies
        self.players = int(tab[R_PLAYERS])
        self.rng = np.random.default_rng(seed)
        self.started_games = games
        first = np.arange(games) % self.players
        self.states = np.empty((games, STATE_LEN), dtype=np.int16)
        self.dice = rngmod.streams(seed, games)
        self.masks = np.zeros((games, MAX_TOKENS), dtype=np.int8)
        reset_batch(self.states, tab, self.dice, first.astype(np.int64), self.masks)
        self.game_len = np.zeros(games, dtype=np.int64)
        self._events = np.empty(games, dtype=np.int32)

    def choose(self, states: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """ε-greedy choices ``(B,)``, the chosen afterstates ``(B, L)`` and their features ``(B, P, F)``."""
        n, players = states.shape[0], self.players
        after, legal, _ = expand_moves(states, self.tab)
        rows = np.flatnonzero(legal.reshape(-1))
        flat = after.reshape(n * MAX_TOKENS, STATE_LEN)[rows]
        x = seat_features(flat, self.tab)[:, :players]
        game = rows // MAX_TOKENS
        mover = states[game, CURRENT].astype(np.int64)
        mine = self.value.values(x[np.arange(rows.size), mover])
        over = flat[:, OVER] == 1
        if over.any():  # a winning move is worth its outcome, whatever the value says
            mine = np.where(over, (flat[np.arange(rows.size), PLACES + mover] == 1).astype(np.float32), mine)
        scores = np.full(n * MAX_TOKENS, -np.inf)
        scores[rows] = mine
        choices = scores.reshape(n, MAX_TOKENS).argmax(axis=1)
        if self.epsilon > 0:
            explore = self.rng.random(n) < self.epsilon
            if explore.any():
                noise = np.where(legal[explore] == 1, self.rng.random((int(explore.sum()), MAX_TOKENS)), -1.0)
                choices[explore] = noise.argmax(axis=1)
        where = np.full(n * MAX_TOKENS, -1, dtype=np.int64)
        where[rows] = np.arange(rows.size)
        chosen = where[np.arange(n) * MAX_TOKENS + choices]
        return choices, flat[chosen], x[chosen]

    def run(self, steps: int) -> PlayStats:
        """Play `steps` batched decisions (``steps * games`` env steps), learning after each."""
        stats = PlayStats()
        players = self.players
        for _ in range(steps):
            choices, after, x_next = self.choose(self.states)
            done = after[:, OVER] == 1
            reward = np.zeros((self.games, players))
            if done.any():
                reward[done] = win_outcome(after[done], self.tab)[:, :players]
            info = self.learner.step(x_next, reward, done)
            stats.td_sq += info["td_sq"]
            stats.chains += info["chains"]
            step_batch(self.states, self.tab, self.dice, choices, self._events, self.masks)
            self.game_len += 1
            stats.decisions += self.games
            truncated = (self.states[:, OVER] == 0) & (self.states[:, PLY] >= self.max_plies)
            if truncated.any():
                self.learner.drop(np.flatnonzero(truncated))
                stats.truncated += int(truncated.sum())
            finished = np.flatnonzero(done | truncated)
            if finished.size:
                stats.games_finished += int(done.sum())
                stats.game_decisions += int(self.game_len[done].sum())
                self._restart(finished)
        return stats

    def _restart(self, games: np.ndarray) -> None:
        first = (self.started_games + np.arange(games.size)) % self.players
        self.started_games += games.size
        states, dice = self.states[games], self.dice[games]
        masks = np.empty((games.size, MAX_TOKENS), dtype=np.int8)
        # Game k of the batch rolls its own dice stream k, so the copies are reset and written back.
        reset_batch(states, self.tab, dice, first.astype(np.int64), masks)
        self.states[games], self.dice[games], self.masks[games] = states, dice, masks
        self.game_len[games] = 0


# ---------------------------------------------------------------- saved agents
def policy_state(value, rules: dict[str, Any], extra: dict[str, Any] | None = None) -> tuple[dict, dict]:
    """``(model_config, state_dict)`` for `policies.checkpoints.write_policy` (kind ``td_value``)."""
    config = {**value.config(), "features": feature_count(), "variant": rules, "players": int(rules["players"])}
    return config | (extra or {}), value.state_dict()


def load_value(path: str | Path, name: str | None = None):
    """The value saved at `path` (a policy, checkpoint or run folder); `PolicyFileError` with one line if not one."""
    from policies.checkpoints import PolicyFileError, find_policy, load_weights, read_meta

    folder = find_policy(path)
    meta = read_meta(folder)
    config = meta.get("model_config")
    if meta.get("kind") != KIND or not isinstance(config, dict) or config.get("value") not in VALUES:
        raise PolicyFileError(f"'{folder}' is not a TD(lambda) value (kind {KIND}, model_config.value linear or mlp)")
    if meta.get("obs_dim") != feature_count():
        raise PolicyFileError(f"'{folder}': the afterstate features now number {feature_count()}, the value was "
                              f"trained on {meta.get('obs_dim')}")
    value = make_value(config["value"], config.get("hidden") or [])
    try:
        value.load_state_dict(load_weights(folder))
    except (KeyError, RuntimeError, ValueError) as err:
        raise PolicyFileError(f"'{folder}': weights do not fit a {config['value']} value: "
                              f"{' '.join(str(err).split())[:200]}") from None
    value.name = name or f"td:{folder}"
    return value


def value_source(folder: Path, meta: dict[str, Any], name: str):
    """A ``td_value`` folder as a search value (`policies.saved`); named ``td:<folder>``, as search always named it."""
    return load_value(folder)


def load_player(folder: Path, meta: dict[str, Any], spec: str) -> GreedyPlayer:
    """``ckpt:<path>`` of a ``td_value`` policy: greedy over afterstates on its value."""
    return GreedyPlayer(load_value(folder, name=spec), name=spec)
