"""Look-ahead players over a learned value of positions: greedy afterstates and expectimax over the dice.

Seed 004's 2-ply search, adapted to Ludo: one die instead of two, 2 to 4
seats, bonus rolls that give the mover another turn, forfeits and rolls with
no legal move.

Player spec
-----------
``search:<value source>?depth=2&opponent=maxn``

``<value source>``
    a policy folder, checkpoint or run folder (as for ``ckpt:``) of a TD(λ)
    value (`policies.td_lambda`), a PPO policy (its critic) or a DQN policy
    (its max-Q); see `policies.saved.load_value_source`.
``depth`` (default 2, 1..3)
    decisions looked at. 1: move to the afterstate the value rates best
    (`GreedyPlayer`). 2: for each of the mover's moves, each of the six rolls
    of the seat that rolls next, and that seat's reply, then the value. 3: one
    more roll and reply.
``opponent`` (default ``maxn``)
    how the other seats are assumed to choose. ``maxn``: each picks what the
    same value rates best for itself (max^n, the natural multi-player
    expectimax). ``paranoid``: each picks what is worst for the searching seat
    (seed 004's min, which in 4-player Ludo assumes a coalition).
    ``uniform``: each picks any legal move with equal chance (the mean over
    them: exact against random movers). ``policy``: each moves by the
    probabilities of the searched PPO policy's own actor, and the decision is
    worth the expectation under them, ``sum_t pi(t | s) V(after_t)`` (not the
    max^n pick): exact when the other seats are copies of that policy playing
    by its probabilities, as in self-play; needs a PPO policy as the value
    source (its critic values the leaves, its actor moves the others). A seed
    bot name (``hybrid``, ``semi_smart``, ...): each plays as that bot would.
    The searching seat's own bonus-roll turns always maximise its own value.

Depth counts every decision, the searching seat's first move included, so the
other seats' replies first count at ``depth=2``: ``depth=2&opponent=policy``
looks at one reply (the seat that rolls next), ``depth=3`` at two.

The tree
--------
The root is the mover's decision; its children are afterstates
(`ludo_env.engine.afterstates.expand_moves`). Below the last decision level,
or at a finished game, a node is a leaf. Above it an afterstate is a chance
node whose six children (`expand_rolls`, probability 1/6 each) are decisions
of the seat that rolls next, or, when the roll is forfeited or has no move,
positions that already hand the turn on: those are leaves too, so a chain of
no-move rolls cannot grow the tree. The value of a chance node is the mean of
its children; of a decision node, the child its mover picks (above).

Every level is expanded in one numba call for all games of the batch. Leaves
are gathered over every level and every game, only unique rows are
evaluated, in one call of the value source (one forward pass of a network),
and the values are then backed up level by level. At depth 2 a decision has
at most 4 x 6 x 4 = 96 leaves.

Value sources
-------------
A `ValueSource` answers ``seat_values(states, tab) -> (N, 4)`` float32: for each
*between-rolls* state (``state[DIE] == 0``), an estimate of what the game is
worth to each absolute seat (columns of absent seats are ignored), and
``outcome(states, tab)`` the same for finished games, on the same scale, from
the places. Learned actor-critics and Q-networks only value *decision* states
for their mover; `ModuleValue` turns them into seat values (see there).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qsl

import numpy as np

from ludo_env.engine.afterstates import expand_moves, expand_rolls
from ludo_env.engine.layout import CURRENT, DIE, OVER, PLACES, R_PLAYERS, SIXES, STATE_LEN
from ludo_env.rules import DIE_FACES, MAX_PLAYERS, MAX_TOKENS

OPPONENT_MODELS = ("maxn", "paranoid", "uniform", "policy")
MAX_DEPTH = 3


@runtime_checkable
class ValueSource(Protocol):
    """What a position between rolls is worth to each seat (module docstring)."""

    name: str

    def seat_values(self, states: np.ndarray, tab: np.ndarray) -> np.ndarray: ...

    def outcome(self, states: np.ndarray, tab: np.ndarray) -> np.ndarray: ...


@runtime_checkable
class PolicySource(Protocol):
    """How likely a policy plays each legal token: ``probabilities(states, tab, masks) -> (N, 4)`` float, each row
    summing to 1 over the legal tokens of decision states (``state[DIE] != 0``), 0 on illegal ones."""

    name: str

    def probabilities(self, states: np.ndarray, tab: np.ndarray, masks: np.ndarray) -> np.ndarray: ...


def win_outcome(states: np.ndarray, tab: np.ndarray) -> np.ndarray:
    """1 for the seat placed first, 0 for every other seat: the outcome on a win-probability scale."""
    places = states[:, PLACES:PLACES + MAX_PLAYERS]
    out = (places == 1).astype(np.float32)
    out[:, int(tab[R_PLAYERS]):] = 0.0
    return out


def values_of(source: ValueSource, states: np.ndarray, tab: np.ndarray) -> np.ndarray:
    """``(N, 4)`` values of between-rolls `states`: the outcome where the game is over, else the source's."""
    out = np.empty((states.shape[0], MAX_PLAYERS), dtype=np.float32)
    over = states[:, OVER] == 1
    if over.any():
        out[over] = source.outcome(states[over], tab)
    if (~over).any():
        out[~over] = source.seat_values(states[~over], tab)
    return out


def unique_rows(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`(unique, inverse)` of the state rows, ``unique[inverse] == rows``; rows compared as raw bytes (fast)."""
    rows = np.ascontiguousarray(rows)
    keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return rows[first], inverse.ravel()


class GreedyPlayer:
    """Move to the afterstate the value rates best for the mover (one ply, no dice looked at)."""

    thread_safe = True  # afterstates and the value's forward pass: no state between calls

    def __init__(self, source: ValueSource, name: str | None = None):
        self.source = source
        self.name = name or source.name

    def act(self, states: np.ndarray, tab: np.ndarray, masks: np.ndarray) -> np.ndarray:
        after, legal, _ = expand_moves(states, tab)
        n = states.shape[0]
        values = values_of(self.source, after.reshape(n * MAX_TOKENS, STATE_LEN), tab).reshape(n, MAX_TOKENS, -1)
        mover = states[:, CURRENT].astype(np.int64)
        mine = values[np.arange(n), :, mover]  # (n, 4 tokens): each afterstate's value to the mover
        return np.where(legal == 1, mine, -np.inf).argmax(axis=1).astype(np.int64)

    def __repr__(self) -> str:
        return f"GreedyPlayer({self.name!r})"


# ------------------------------------------------------------------ expectimax
class _Leaves:
    """Leaf rows gathered over the whole tree, evaluated once (unique rows only)."""

    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []
        self.count = 0
        self.values: np.ndarray | None = None

    def add(self, rows: np.ndarray) -> np.ndarray:
        """Register `rows`; their indices into the value table."""
        self.parts.append(rows)
        self.count += rows.shape[0]
        return np.arange(self.count - rows.shape[0], self.count)

    def evaluate(self, source: ValueSource, tab: np.ndarray) -> int:
        """Evaluate every registered leaf; returns how many unique rows the source saw."""
        rows = np.concatenate(self.parts) if self.parts else np.empty((0, STATE_LEN), np.int16)
        if rows.shape[0] == 0:
            self.values = np.empty((0, MAX_PLAYERS), np.float32)
            return 0
        unique, inverse = unique_rows(rows)
        self.values = values_of(source, unique, tab)[inverse]
        return unique.shape[0]


@dataclass
class _AfterLevel:
    """Afterstates (one per token of each decision above): leaves, or chance nodes expanded below."""

    leaf: np.ndarray  # (N,) index into the leaf table, -1 where expanded into `chance`
    expanded: np.ndarray  # (M,) rows of this level expanded as chance nodes
    chance: _ChanceLevel | None


@dataclass
class _ChanceLevel:
    """Six roll children of each expanded afterstate: a leaf, or a decision of the seat to roll."""

    leaf: np.ndarray  # (M, 6) index into the leaf table, -1 for decisions
    decision: np.ndarray  # (M, 6) index into `decisions`, -1 for leaves
    decisions: _DecisionLevel


@dataclass
class _DecisionLevel:
    mover: np.ndarray  # (K,) seat to move
    root_seat: np.ndarray  # (K,) the searching seat of the tree the decision is in
    legal: np.ndarray  # (K, 4)
    forced: np.ndarray  # (K,) a bot's choice for opponent decisions, -1: choose by value
    after: _AfterLevel  # K * 4 afterstates, token-major per decision
    weights: np.ndarray | None = None  # (K, 4) the policy's probabilities of the other seats' moves (opponent=policy)


def check_opponent(opponent: str) -> str:
    """`opponent` if it is an opponent model or a seed bot's name, else ValueError with one line."""
    from policies.bots import BOT_NAMES

    if opponent not in OPPONENT_MODELS and opponent not in BOT_NAMES:
        raise ValueError(f"opponent={opponent!r} is not allowed: choose {', '.join(OPPONENT_MODELS)} "
                         f"or a bot ({', '.join(BOT_NAMES)})")
    return opponent


class ExpectimaxPlayer:
    """Depth-limited expectimax over the dice with an opponent model (module docstring).

    With ``opponent="policy"``, `policy` (default: the value source itself, a PPO policy's `ModuleValue`) gives the
    other seats' move probabilities; a source without them is refused in one line."""

    def __init__(self, source: ValueSource, depth: int = 2, opponent: str = "maxn", name: str | None = None,
                 seed: int = 0, policy: PolicySource | None = None):
        if not 1 <= depth <= MAX_DEPTH:
            raise ValueError(f"depth={depth} is not allowed: give 1..{MAX_DEPTH}")
        self.source = source
        self.depth = depth
        self.opponent = opponent
        self.name = name or f"search:{source.name}?depth={depth}&opponent={opponent}"
        self.policy: PolicySource | None = None
        if opponent == "policy":
            self.policy = policy if policy is not None else source  # type: ignore[assignment]
            if not getattr(self.policy, "has_policy", True) or not isinstance(self.policy, PolicySource):
                kind = getattr(self.policy, "kind", None)
                raise ValueError(f"opponent=policy moves the other seats by a PPO policy's probabilities, and "
                                 f"'{source.name}' has none ({f'a {kind} policy' if kind else 'a value only'}): "
                                 "give a PPO policy, or another opponent model")
        self._bot = None
        if check_opponent(opponent) not in OPPONENT_MODELS:
            from policies.bots import Bot

            self._bot = Bot(opponent, seed=seed)
        self.leaves_evaluated = 0  # unique leaf rows valued so far (the cost of the search)

    def act(self, states: np.ndarray, tab: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return self.move_values(states, tab).argmax(axis=1).astype(np.int64)

    def move_values(self, states: np.ndarray, tab: np.ndarray) -> np.ndarray:
        """``(B, 4)``: each move's backed-up value to the mover; -inf for illegal tokens."""
        states = np.ascontiguousarray(states, dtype=np.int16).reshape(-1, STATE_LEN)
        n = states.shape[0]
        me = states[:, CURRENT].astype(np.int64)
        leaves = _Leaves()
        after, legal, _ = expand_moves(states, tab)
        root = _DecisionLevel(mover=me, root_seat=me, legal=legal, forced=np.full(n, -1),
                              after=self._after_level(after.reshape(n * MAX_TOKENS, STATE_LEN),
                                                      np.repeat(me, MAX_TOKENS), legal.ravel() == 1,
                                                      self.depth - 1, tab, leaves))
        self.leaves_evaluated += leaves.evaluate(self.source, tab)
        values = self._after_values(root.after, leaves).reshape(n, MAX_TOKENS, MAX_PLAYERS)
        mine = values[np.arange(n), :, me]
        return np.where(legal == 1, mine, -np.inf)

    # --------------------------------------------------------------- expansion
    def _after_level(self, rows, root_seat, valid, depth_left, tab, leaves) -> _AfterLevel:
        leaf = np.full(rows.shape[0], -1, dtype=np.int64)
        over = rows[:, OVER] == 1
        as_leaf = valid & (over | (depth_left == 0))
        leaf[as_leaf] = leaves.add(rows[as_leaf])
        expand = np.flatnonzero(valid & ~as_leaf)
        chance = None
        if expand.size:
            chance = self._chance_level(rows[expand], root_seat[expand], depth_left, tab, leaves)
        return _AfterLevel(leaf=leaf, expanded=expand, chance=chance)

    def _chance_level(self, rows, root_seat, depth_left, tab, leaves) -> _ChanceLevel:
        m = rows.shape[0]
        children, masks, _ = expand_rolls(rows, tab)
        children = children.reshape(m * DIE_FACES, STATE_LEN)
        masks = masks.reshape(m * DIE_FACES, MAX_TOKENS)
        roots = np.repeat(root_seat, DIE_FACES)
        # A roll that was forfeited or had no move hands the turn on at once: a leaf, not a decision.
        is_decision = (children[:, DIE] != 0) & (children[:, OVER] == 0)
        leaf = np.full(m * DIE_FACES, -1, dtype=np.int64)
        leaf[~is_decision] = leaves.add(children[~is_decision])
        decision = np.full(m * DIE_FACES, -1, dtype=np.int64)
        picked = np.flatnonzero(is_decision)
        decision[picked] = np.arange(picked.size)
        rows_d = children[picked]
        mover = rows_d[:, CURRENT].astype(np.int64)
        root_d = roots[picked]
        forced = np.full(picked.size, -1, dtype=np.int64)
        if self._bot is not None and picked.size:
            theirs = mover != root_d
            if theirs.any():
                forced[theirs] = self._bot.act(rows_d[theirs], tab, masks[picked][theirs])
        after, legal, _ = expand_moves(rows_d, tab)
        weights = None
        if self.policy is not None and picked.size:
            theirs = np.flatnonzero(mover != root_d)
            weights = np.zeros((picked.size, MAX_TOKENS), dtype=np.float64)
            if theirs.size:
                weights[theirs] = self.policy.probabilities(rows_d[theirs], tab, masks[picked][theirs])
        valid = legal.ravel() == 1
        if self._bot is not None:
            # Only the bot's move is followed: the other afterstates are never looked at.
            chosen = np.zeros_like(legal)
            has = forced >= 0
            chosen[np.flatnonzero(has), forced[has]] = 1
            chosen[~has] = legal[~has]
            valid = chosen.ravel() == 1
        decisions = _DecisionLevel(
            mover=mover, root_seat=root_d, legal=legal, forced=forced,
            after=self._after_level(after.reshape(-1, STATE_LEN), np.repeat(root_d, MAX_TOKENS), valid,
                                    depth_left - 1, tab, leaves), weights=weights)
        return _ChanceLevel(leaf=leaf.reshape(m, DIE_FACES), decision=decision.reshape(m, DIE_FACES),
                            decisions=decisions)

    # --------------------------------------------------------------- back-up
    def _after_values(self, level: _AfterLevel, leaves: _Leaves) -> np.ndarray:
        out = np.zeros((level.leaf.shape[0], MAX_PLAYERS), dtype=np.float32)
        is_leaf = level.leaf >= 0
        out[is_leaf] = leaves.values[level.leaf[is_leaf]]
        if level.chance is not None:
            out[level.expanded] = self._chance_values(level.chance, leaves)
        return out

    def _chance_values(self, level: _ChanceLevel, leaves: _Leaves) -> np.ndarray:
        m = level.leaf.shape[0]
        children = np.zeros((m * DIE_FACES, MAX_PLAYERS), dtype=np.float32)
        leaf = level.leaf.ravel()
        is_leaf = leaf >= 0
        children[is_leaf] = leaves.values[leaf[is_leaf]]
        decision = level.decision.ravel()
        is_decision = decision >= 0
        if is_decision.any():
            children[is_decision] = self._decision_values(level.decisions, leaves)[decision[is_decision]]
        return children.reshape(m, DIE_FACES, MAX_PLAYERS).mean(axis=1)

    def _decision_values(self, level: _DecisionLevel, leaves: _Leaves) -> np.ndarray:
        k = level.mover.shape[0]
        children = self._after_values(level.after, leaves).reshape(k, MAX_TOKENS, MAX_PLAYERS)
        rows = np.arange(k)
        own = level.mover == level.root_seat
        # Whose value each decision maximises: its mover's (max^n, and the searching seat's own bonus turns),
        # or, for a paranoid opponent, minus the searching seat's.
        judge = level.mover.copy()
        sign = np.ones(k, dtype=np.float32)
        if self.opponent == "paranoid":
            judge = level.root_seat.copy()
            sign[~own] = -1.0
        scores = children[rows, :, judge] * sign[:, None]
        scores = np.where(level.legal == 1, scores, -np.inf)
        choice = scores.argmax(axis=1)
        forced = level.forced >= 0
        choice[forced] = level.forced[forced]
        out = children[rows, choice]
        if self.opponent == "uniform" and (~own).any():
            legal = level.legal[~own, :, None].astype(np.float32)
            out[~own] = (children[~own] * legal).sum(axis=1) / legal.sum(axis=1)
        if self.opponent == "policy" and (~own).any():
            # The expectation under the policy: illegal tokens have probability 0, so their (zero) children drop out.
            weights = level.weights[~own, :, None]
            out[~own] = (children[~own].astype(np.float64) * weights).sum(axis=1).astype(np.float32)
        return out

    def __repr__(self) -> str:
        return f"ExpectimaxPlayer({self.name!r})"


# ------------------------------------------------------------------ learned modules as value sources
class ModuleValue:
    """Seat values from a PPO critic or a DQN's max-Q, which only value decision states for their mover.

    The value of a between-rolls state s to seat p is taken as the mean, over
    the six dice d, of the module's value of s with p to move and d rolled:
    the critic (PPO) or the best legal Q-value (DQN). Dice with no legal move
    are left out of the mean (the module never learned on them). This treats p
    as if it rolled next, which it does only for one seat: an approximation,
    kept because these modules have no other view of a seat's chances. A seat
    that has finished already gets its place's end pay.

    A PPO policy's actor also gives move probabilities (`probabilities`, the
    `PolicySource` of ``opponent=policy``); ``has_policy`` says whether it has one.

    The value head predicted the training return: the end pay (win ``reward.win``,
    loss ``reward.loss``, from the policy's saved reward config) plus any
    shaping still to come. Potential shaping sums to ``-coef * phi(s)`` from s
    to the end, so ``coef * phi`` is added back to compare positions by
    their end pay alone. Dense (seed000) shaping cannot be undone and is refused.
    """

    def __init__(self, module: Any, kind: str, model_config: dict[str, Any], name: str):
        from ludo_env.rewards import RewardConfig

        self.module = module
        from policies.algorithms import module_algorithm

        self.kind = kind
        self.algorithm = module_algorithm(kind)
        self.name = name
        self.obs = model_config["obs"]
        self.reward = RewardConfig.load(model_config.get("reward") or "sparse")
        if self.reward.dense:
            raise ValueError(f"'{name}' was trained with seed000_dense shaping, which a search cannot undo: "
                             "use a policy trained with sparse or potential rewards")
        self.has_policy = self.algorithm.policy_prior

    def probabilities(self, states: np.ndarray, tab: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The actor's move probabilities at decision `states` (`PolicySource`); only for a PPO policy."""
        if not self.has_policy:
            raise ValueError(f"'{self.name}' is a {self.kind} policy: its scores are no move probabilities")
        return policy_probabilities(self.module, self.obs, states, tab, masks)

    def seat_values(self, states: np.ndarray, tab: np.ndarray) -> np.ndarray:
        from ludo_env.engine.batch import legal_masks
        from ludo_env.observations import encode
        from ludo_env.rewards import potentials

        n = states.shape[0]
        players = int(tab[R_PLAYERS])
        asked = np.repeat(states, players * DIE_FACES, axis=0).reshape(n, players, DIE_FACES, STATE_LEN)
        asked[:, :, :, CURRENT] = np.arange(players)[None, :, None]
        asked[:, :, :, DIE] = np.arange(1, DIE_FACES + 1)[None, None, :]
        asked[:, :, :, SIXES] = 0
        asked = asked.reshape(-1, STATE_LEN)
        masks = np.empty((asked.shape[0], MAX_TOKENS), dtype=np.int8)
        legal_masks(asked, tab, masks)
        raw = self._module_values(encode(self.obs, asked, tab), masks).reshape(n, players, DIE_FACES)
        has_move = masks.any(axis=1).reshape(n, players, DIE_FACES)
        counted = np.where(has_move.any(axis=2, keepdims=True), has_move, True)  # no die moves: all six
        values = (raw * counted).sum(axis=2) / counted.sum(axis=2)
        if self.reward.shaped_by_potential:
            phi = np.empty((n, MAX_PLAYERS), dtype=np.float64)
            potentials(states, tab, phi)
            values = values + self.reward.coef * phi[:, :players]
        out = np.zeros((n, MAX_PLAYERS), dtype=np.float32)
        out[:, :players] = values
        finished = states[:, PLACES:PLACES + players] != 0
        if finished.any():
            pay = self.outcome(states, tab)[:, :players]
            out[:, :players] = np.where(finished, pay, out[:, :players])
        return out

    def outcome(self, states: np.ndarray, tab: np.ndarray) -> np.ndarray:
        players = int(tab[R_PLAYERS])
        out = np.zeros((states.shape[0], MAX_PLAYERS), dtype=np.float32)
        for i, row in enumerate(states):
            places = row[PLACES:PLACES + players]
            # a seat not yet placed (a game cut short) counts as last
            out[i, :players] = self.reward.end_rewards(np.where(places == 0, players, places), players)
        return out

    def _module_values(self, obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        import torch

        from policies.modules import inference_batch

        batch = inference_batch(obs, masks)
        with torch.inference_mode():
            return self.algorithm.value(self.module, batch).numpy().astype(np.float32)


def policy_probabilities(module: Any, obs: str, states: np.ndarray, tab: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """``(N, 4)`` float64: a PPO module's move probabilities at decision `states` (encoded with `obs`), the softmax
    of its logits over the legal tokens of `masks` (0 on the others; each row sums to 1). What MCTS takes as its
    prior and ``opponent=policy`` as the other seats' play."""
    import torch
    from ray.rllib.core.columns import Columns

    from ludo_env.observations import encode
    from policies.modules import inference_batch

    legal = np.asarray(masks).astype(np.float64)
    with torch.inference_mode():
        logits = module.forward_inference(inference_batch(encode(obs, states, tab), legal.astype(np.float32)))[
            Columns.ACTION_DIST_INPUTS]
    logits = np.where(legal > 0, logits.double().numpy(), -np.inf)
    logits -= logits.max(axis=1, keepdims=True)
    weights = np.exp(logits) * legal
    return weights / weights.sum(axis=1, keepdims=True)


def module_value_source(folder: Path, meta: dict[str, Any], name: str) -> ModuleValue:
    """A PPO or DQN policy folder's value head (`policies.saved` loads ``ppo`` and ``dqn`` values with this)."""
    from policies.modules import load_policy

    return ModuleValue(load_policy(folder), meta["kind"], meta["model_config"], name)


# ------------------------------------------------------------------ specs
def split_spec(spec: str, prefix: str) -> tuple[str, dict[str, str]]:
    """``<prefix><path>?k=v&k=v`` -> (path, options); the path may itself contain no '?'. An option given twice
    is a ValueError of one line: which of two values was meant is not for us to guess."""
    body = spec[len(prefix):]
    path, _, query = body.partition("?")
    pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=False) if query else []
    options: dict[str, str] = {}
    for key, value in pairs:
        if key in options:
            raise ValueError(f"player '{spec}': option {key!r} is given twice ({key}={options[key]} and "
                             f"{key}={value}): give it once")
        options[key] = value
    return path, options


def int_option(options: dict[str, str], key: str, default: int, spec: str, low: int, high: int) -> int:
    raw = options.pop(key, None)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = None
    if value is None or not low <= value <= high:
        raise ValueError(f"player '{spec}': {key}={raw} is not allowed: give a whole number in {low}..{high}")
    return value


def non_negative_option(options: dict[str, str], key: str, default: float, spec: str) -> float:
    """Option `key` as a finite number >= 0 (`default` when absent); ValueError with one line otherwise."""
    raw = options.pop(key, None)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value < math.inf:
        raise ValueError(f"player '{spec}': {key}={raw} is not allowed: give a number >= 0")
    return value


def reject_unknown(options: dict[str, str], spec: str, allowed: tuple[str, ...]) -> None:
    if options:
        raise ValueError(f"player '{spec}': unknown option {next(iter(options))!r}: use {', '.join(allowed)}")


@functools.lru_cache(maxsize=16)
def cached_value_source(path: str) -> ValueSource:
    """`policies.saved.load_value_source` once per resolved path: a league or a tournament builds its players
    again and again."""
    from policies.saved import load_value_source  # torch is imported only when a value is loaded

    return load_value_source(path)


def make_search_player(spec: str, seed: int = 0) -> ExpectimaxPlayer | GreedyPlayer:
    """The player of a ``search:`` spec (module docstring); ValueError with one line when it is wrong."""
    path, options = split_spec(spec, "search:")
    if not path:
        raise ValueError(f"player '{spec}' names no value source: use search:<path>?depth=2")
    depth = int_option(options, "depth", 2, spec, 1, MAX_DEPTH)
    opponent = check_opponent(options.pop("opponent", "maxn"))  # checked at depth 1 too, where it plays no part
    reject_unknown(options, spec, ("depth", "opponent"))
    if not Path(path).exists():
        raise ValueError(f"player '{spec}': value source '{path}' does not exist")
    source = cached_value_source(str(Path(path).resolve()))
    if depth == 1:
        return GreedyPlayer(source, name=spec)
    return ExpectimaxPlayer(source, depth=depth, opponent=opponent, name=spec, seed=seed)
