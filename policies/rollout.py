"""Monte Carlo rollouts: each legal move scored by games that a policy plays out from it to the end.

Player spec
-----------
``rollout:<player spec>?n=16&z=2``

``<player spec>``
    the rollout policy, which plays every seat of every rollout: a built-in bot
    (``rollout:hybrid``), a saved agent (``rollout:ckpt:<path>``) or a shipped
    champion (``rollout:champion:pyludo``). A learned policy is played as
    ``ckpt:`` plays it, greedily, so a rollout's only chance is its dice.
``n`` (default 16, 2..1024)
    rollouts per legal token.
``z`` (default 2, a number >= 0)
    how sure the rollouts must be before another token replaces the rollout
    policy's own: its gain, in standard errors (below). ``z=0`` plays the token
    with the most wins, however slim its lead.

What it plays
-------------
At a decision with two or more legal tokens, each token is played and the
game is then played out `n` times to its end by the rollout policy at every
seat. A rollout ends when a seat is placed first (the win it counts; later
places do not matter to it) or at `MAX_ROLLOUT_PLIES`. A decision with one
legal token is played at once.

The rollouts of the tokens of one decision share their dice: rollout j of
every token draws from the same dice stream (common random numbers), so each
token's rollouts are paired with those of the policy's own token. A token's
gain is the mean of its paired differences (won minus won), its standard error
their spread over sqrt(n). The player plays the token with the largest gain
among those more than `z` standard errors above 0, and the policy's own token
when there is none: with few rollouts most differences are dice, and a player
that followed them would trade its policy's moves for noise.

Cost: every decision with a choice plays ``legal tokens x n`` games out, all
decisions of a call and all their rollouts stepped together, so each ply of
the rollouts is one forward pass of the policy over every live rollout.

This is the policy improvement of a rollout (Tesauro and Galperin's "on-line
policy improvement" for backgammon): with the same policy at every seat the
rollouts estimate each move's worth under the policy itself, and playing the
best of them is one step of policy iteration.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ludo_env.engine import rng as rngmod
from ludo_env.engine.batch import step_batch
from ludo_env.engine.layout import CURRENT, OVER, PLACES, PLY, STATE_DTYPE, STATE_LEN
from ludo_env.rules import MAX_PLAYERS, MAX_TOKENS
from policies.bots import BOT_NAMES
from policies.champions import CHAMPION_PREFIX
from policies.search import int_option, non_negative_option, reject_unknown, split_spec

ROLLOUT_PREFIX = "rollout:"
MAX_ROLLOUTS = 1024
MAX_ROLLOUT_PLIES = 10_000
"""A rollout that no seat has won by this ply counts as lost for the mover (the tournament's own cap)."""
ROLLOUT_POLICIES = "a bot name, ckpt:<path> or champion:<variant>"


class RolloutPlayer:
    """Plays the policy's token unless the rollouts show another to win more by over `z` standard errors
    (module docstring)."""

    def __init__(self, policy: Any, n: int = 16, z: float = 2.0, name: str = "rollout", seed: int = 0):
        self.policy = policy
        self.n = n
        self.z = z
        self.name = name
        self.trained_for = getattr(policy, "trained_for", None)
        self.rng = np.random.default_rng(seed)

    def act(self, states: np.ndarray, tab: np.ndarray, masks: np.ndarray) -> np.ndarray:
        states = np.ascontiguousarray(states, dtype=STATE_DTYPE).reshape(-1, STATE_LEN)
        masks = np.ascontiguousarray(masks, dtype=np.int8)
        choices = np.asarray(self.policy.act(states, tab, masks), dtype=np.int64)
        choosing = np.flatnonzero(masks.sum(axis=1) > 1)
        if choosing.size == 0:
            return choices
        decision, token, _, gain = self.paired_gains(states[choosing], tab, masks[choosing], choices[choosing])
        mean = gain.mean(axis=1)
        spread = gain.std(axis=1, ddof=1) / np.sqrt(self.n)
        # A candidate replaces the policy's choice only when its gain is more than z standard errors above 0.
        score = np.where(mean > self.z * spread + 1e-12, mean, 0.0)
        best = np.full((choosing.size, MAX_TOKENS), -np.inf)
        best[decision, token] = score
        best[np.arange(choosing.size), choices[choosing]] = 0.0
        beaten = best.max(axis=1) > 0.0
        choices[choosing[beaten]] = best[beaten].argmax(axis=1)
        return choices

    def paired_gains(self, states: np.ndarray, tab: np.ndarray, masks: np.ndarray,
                     own_tokens: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(decision, token, wins, gain)``, one row per legal token of each decision: its rollouts' wins
        ``(candidates, n)`` and their gain over those of the decision's `own_tokens`, rollout j against rollout j
        (the same dice)."""
        decision, token = np.nonzero(masks)
        wins = self.rollout_wins(states, tab, decision, token)
        own = np.flatnonzero(token == own_tokens[decision])  # one candidate per decision
        return decision, token, wins, wins - wins[own][decision]

    def rollout_wins(self, states: np.ndarray, tab: np.ndarray, decision: np.ndarray, token: np.ndarray) -> np.ndarray:
        """``(candidates, n)``: 1 where rollout j of candidate (`decision[i]`, `token[i]`) was won by the mover."""
        n = self.n
        rows = np.repeat(states[decision], n, axis=0)
        first = np.repeat(token, n).astype(np.int64)
        # Common random numbers: rollout j of every token of a decision uses that decision's stream j.
        streams = rngmod.streams(int(self.rng.integers(2**62)), states.shape[0] * n).reshape(states.shape[0], n)
        dice = streams[decision].reshape(-1).copy()
        masks = np.zeros((rows.shape[0], MAX_TOKENS), dtype=np.int8)
        step_batch(rows, tab, dice, first, np.empty(rows.shape[0], dtype=np.int32), masks)
        winners = self.play_out(rows, tab, dice, masks)
        movers = np.repeat(states[decision, CURRENT], n)
        return (winners == movers).reshape(-1, n).astype(np.float64)

    def play_out(self, states: np.ndarray, tab: np.ndarray, dice: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The seat placed first in each game, every seat moved by the policy; -1 where none is by the ply cap."""
        winners = np.full(states.shape[0], -1, dtype=np.int64)
        ids = np.arange(states.shape[0])
        events = np.empty(states.shape[0], dtype=np.int32)
        while ids.size:
            first = states[:, PLACES:PLACES + MAX_PLAYERS] == 1
            won = first.any(axis=1)
            winners[ids[won]] = first[won].argmax(axis=1)
            live = ~won & (states[:, OVER] == 0) & (states[:, PLY] < MAX_ROLLOUT_PLIES)
            if not live.all():
                ids, states, dice, masks = ids[live], states[live], dice[live], masks[live]
                if ids.size == 0:
                    break
            choices = np.asarray(self.policy.act(states, tab, masks), dtype=np.int64)
            step_batch(states, tab, dice, choices, events[:ids.size], masks)
        return winners

    def __repr__(self) -> str:
        return f"RolloutPlayer({self.name!r})"


def make_rollout_player(spec: str, seed: int, make_player: Callable[..., Any]) -> RolloutPlayer:
    """The player of a ``rollout:`` spec (module docstring), its rollout policy built by `make_player`
    (`policies.players.make_player`, which calls this); ValueError with one line when it is wrong."""
    inner, options = split_spec(spec, ROLLOUT_PREFIX)
    if not inner:
        raise ValueError(f"player '{spec}' names no rollout policy: use rollout:<{ROLLOUT_POLICIES}>?n=16")
    if not (inner in BOT_NAMES or inner.startswith(("ckpt:", CHAMPION_PREFIX))):
        raise ValueError(f"player '{spec}': the rollout policy '{inner}' is not allowed: give {ROLLOUT_POLICIES}")
    n = int_option(options, "n", 16, spec, 2, MAX_ROLLOUTS)
    z = non_negative_option(options, "z", 2.0, spec)
    reject_unknown(options, spec, ("n", "z"))
    return RolloutPlayer(make_player(inner, seed=seed), n=n, z=z, name=spec, seed=seed)
