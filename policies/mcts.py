"""Monte Carlo tree search over the dice: a PPO policy as the prior, its critic at the leaves (seed 004's last agent).

Player spec
-----------
``mcts:<path>?sims=64&c=1.25&value=<path>``

``<path>``
    a PPO policy (policy folder, checkpoint or run folder, as for ``ckpt:``).
``value`` (default: the policy's own critic)
    another value source for the leaves, any that ``search:`` takes (a
    TD(λ) value is 20-50x cheaper per position than a critic asked for every
    seat and die).
``sims`` (default 64, 1..4096)
    simulations per decision.
``c`` (default 1.25)
    the exploration constant of PUCT.

The tree
--------
Two kinds of node, as in `policies.search`:

decision node
    a seat to move with its die rolled. Its edges are the legal tokens, each
    with the policy's probability as its prior P. A simulation takes the edge
    with the highest ``Q + c * P * sqrt(N) / (1 + n)`` where N counts the
    node's visits, n the edge's, and Q is the mean value *to the mover* of
    what was found below the edge (max^n: every seat maximises its own value;
    an edge not yet tried has the node's own value to the mover, "first-play
    urgency" at the parent's estimate).
chance node
    a position between rolls: an afterstate, or a roll that was forfeited or
    had no move. Its six children are the die faces. A simulation takes the
    face visited least so far (ties broken by the player's seeded generator),
    so the faces are visited in equal shares and the node's mean is an
    unbiased estimate over the die without sampling noise piling up.

A simulation walks from the root until it reaches a chance node never
evaluated, a finished game (its exact outcome), or a node whose value would
need an evaluation. New chance nodes are valued by the critic for every seat
(`policies.search.ModuleValue`), and the decisions among their six children
get the policy's priors in the same step; the value vector is then added
along the path. The simulations of every game in the batch run in lockstep,
so each step is one critic call and one policy call for all games. After
`sims` simulations the root plays its most visited legal token (ties: higher
Q).
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ludo_env.engine.afterstates import expand_moves, expand_rolls
from ludo_env.engine.layout import CURRENT, DIE, OVER, STATE_LEN
from ludo_env.rules import DIE_FACES, MAX_PLAYERS, MAX_TOKENS
from policies.search import (
    ModuleValue,
    ValueSource,
    cached_value_source,
    int_option,
    non_negative_option,
    policy_probabilities,
    reject_unknown,
    split_spec,
    values_of,
)

MAX_SIMS = 4096


class _Chance:
    """A position between rolls."""

    __slots__ = ("state", "value", "visits", "face_visits", "children", "value_sum")

    def __init__(self, state: np.ndarray):
        self.state = state
        self.value: np.ndarray | None = None  # the critic's (or the outcome's) vector, once evaluated
        self.visits = 0
        self.face_visits = np.zeros(DIE_FACES, dtype=np.int64)
        self.children: list[Any] | None = None  # per face: _Decision or _Chance
        self.value_sum = np.zeros(MAX_PLAYERS, dtype=np.float64)


class _Decision:
    """A seat to move with its die rolled."""

    __slots__ = ("state", "mover", "legal", "prior", "visits", "edge_visits", "edge_sum", "children", "estimate",
                 "after")

    def __init__(self, state: np.ndarray, legal: np.ndarray):
        self.state = state
        self.mover = int(state[CURRENT])
        self.legal = legal.astype(bool)
        self.prior: np.ndarray | None = None
        self.visits = 0
        self.edge_visits = np.zeros(MAX_TOKENS, dtype=np.int64)
        self.edge_sum = np.zeros((MAX_TOKENS, MAX_PLAYERS), dtype=np.float64)
        self.children: list[_Chance | None] = [None] * MAX_TOKENS
        self.estimate: np.ndarray | None = None  # value vector of the chance node above: first-play urgency
        self.after: np.ndarray | None = None  # (4, STATE_LEN) afterstates, expanded when the first edge is tried


class MCTSPlayer:
    """MCTS with chance nodes over a PPO policy and critic (module docstring)."""

    def __init__(self, policy: Any, obs: str, value: ValueSource, sims: int = 64, c: float = 1.25,
                 name: str = "mcts", seed: int = 0):
        self.policy = policy
        self.obs = obs  # the policy's observation encoder
        self.value = value
        self.sims = sims
        self.c = c
        self.name = name
        self.rng = np.random.default_rng(seed)

    def act(self, states: np.ndarray, tab: np.ndarray, masks: np.ndarray) -> np.ndarray:
        states = np.ascontiguousarray(states, dtype=np.int16).reshape(-1, STATE_LEN)
        roots = [_Decision(states[b], masks[b]) for b in range(states.shape[0])]
        self._set_priors(roots, tab)
        start = values_of(self.value, self._pre_roll(states), tab)
        for root, estimate in zip(roots, start):
            root.estimate = estimate
        for _ in range(self.sims):
            self._simulate(roots, tab)
        choices = np.empty(len(roots), dtype=np.int64)
        for b, root in enumerate(roots):
            q = np.where(root.edge_visits > 0, root.edge_sum[:, root.mover] / np.maximum(root.edge_visits, 1), -np.inf)
            order = np.lexsort((q, root.edge_visits))  # most visits, then higher Q
            choices[b] = next(t for t in order[::-1] if root.legal[t])
        return choices

    @staticmethod
    def _pre_roll(states: np.ndarray) -> np.ndarray:
        """The decision states with their die taken back: the between-rolls state the critic values."""
        rows = states.copy()
        rows[:, DIE] = 0
        return rows

    # --------------------------------------------------------------- one simulation for every game
    def _simulate(self, roots: list[_Decision], tab: np.ndarray) -> None:
        paths: list[list[tuple[Any, int]]] = []
        frontier: list[_Chance] = []
        ends: list[Any] = []  # per game: the chance node to evaluate, or the value vector found
        for root in roots:
            path: list[tuple[Any, int]] = []
            node: Any = root
            while True:
                if isinstance(node, _Decision):
                    t = self._select(node)
                    if node.children[t] is None:
                        if node.after is None:
                            node.after = expand_moves(node.state[None], tab)[0][0]
                        node.children[t] = _Chance(node.after[t])
                    path.append((node, t))
                    node = node.children[t]
                    continue
                if node.value is None:
                    frontier.append(node)
                    ends.append(node)
                    break
                if node.state[OVER] or node.children is None:
                    ends.append(node.value)
                    break
                face = self._pick_face(node)
                path.append((node, face))
                node = node.children[face]
            paths.append(path)
        if frontier:
            self._evaluate(frontier, tab)
        for path, end in zip(paths, ends):
            value = end.value if isinstance(end, _Chance) else end
            if isinstance(end, _Chance):
                end.visits += 1
                end.value_sum += value
            for node, edge in path:
                node.visits += 1
                if isinstance(node, _Decision):
                    node.edge_visits[edge] += 1
                    node.edge_sum[edge] += value
                else:
                    node.face_visits[edge] += 1
                    node.value_sum += value

    def _select(self, node: _Decision) -> int:
        n = node.edge_visits
        own = node.mover
        fpu = node.estimate[own] if node.estimate is not None else 0.0
        q = np.where(n > 0, node.edge_sum[:, own] / np.maximum(n, 1), fpu)
        score = q + self.c * node.prior * math.sqrt(max(node.visits, 1)) / (1 + n)
        return int(np.where(node.legal, score, -np.inf).argmax())

    def _pick_face(self, node: _Chance) -> int:
        least = np.flatnonzero(node.face_visits == node.face_visits.min())
        return int(least[self.rng.integers(least.size)]) if least.size > 1 else int(least[0])

    # --------------------------------------------------------------- evaluation, batched over games
    def _evaluate(self, nodes: list[_Chance], tab: np.ndarray) -> None:
        # The same position can be reached by two games: evaluate each object once.
        unique = list({id(n): n for n in nodes}.values())
        rows = np.stack([n.state for n in unique])
        values = values_of(self.value, rows, tab)
        children, masks, _ = expand_rolls(rows, tab)
        decisions: list[_Decision] = []
        for i, node in enumerate(unique):
            node.value = values[i]
            if node.state[OVER]:
                continue
            node.children = []
            for face in range(DIE_FACES):
                child = children[i, face]
                if child[DIE] != 0 and not child[OVER]:
                    decision = _Decision(child, masks[i, face])
                    decision.estimate = values[i]
                    decisions.append(decision)
                    node.children.append(decision)
                else:
                    node.children.append(_Chance(child))
        if decisions:
            self._set_priors(decisions, tab)

    def _set_priors(self, nodes: list[_Decision], tab: np.ndarray) -> None:
        rows = np.stack([n.state for n in nodes])
        masks = np.stack([n.legal for n in nodes]).astype(np.int8)
        priors = policy_probabilities(self.policy, self.obs, rows, tab, masks)
        for node, prior in zip(nodes, priors):
            node.prior = prior

    def __repr__(self) -> str:
        return f"MCTSPlayer({self.name!r})"


def make_mcts_player(spec: str, seed: int = 0) -> MCTSPlayer:
    """The player of an ``mcts:`` spec (module docstring); ValueError with one line when it is wrong."""
    path, options = split_spec(spec, "mcts:")
    if not path:
        raise ValueError(f"player '{spec}' names no policy: use mcts:<path>?sims=64")
    sims = int_option(options, "sims", 64, spec, 1, MAX_SIMS)
    c = non_negative_option(options, "c", 1.25, spec)
    value_path = options.pop("value", None)
    reject_unknown(options, spec, ("sims", "c", "value"))
    if not Path(path).exists():
        raise ValueError(f"player '{spec}': policy '{path}' does not exist")
    critic = cached_value_source(str(Path(path).resolve()))
    if not (isinstance(critic, ModuleValue) and critic.algorithm.policy_prior):
        from policies.checkpoints import PolicyFileError, find_policy, read_meta

        kind = read_meta(find_policy(path)).get("kind")
        raise PolicyFileError(f"'{path}' holds a {kind} policy: MCTS needs a PPO policy "
                              "(its policy is the prior, its critic the value)")
    value: ValueSource = critic
    if value_path is not None:
        if not Path(value_path).exists():
            raise ValueError(f"player '{spec}': value source '{value_path}' does not exist")
        value = cached_value_source(str(Path(value_path).resolve()))
    return MCTSPlayer(critic.module, critic.obs, value, sims=sims, c=c, name=spec, seed=seed)
