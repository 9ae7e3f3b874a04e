"""Reward shaping: what each seat is paid, per move and at the end of a game.

Three kinds (``conf/reward/<kind>.yaml``, schema `RewardConfig`):

``sparse``
    Only the end pays: ``win`` to the winner and ``loss`` (default
    ``-win / (players - 1)``, so the rewards sum to zero) to everyone else. With
    ``rank_based`` the pay falls linearly with the finishing place, from
    ``win`` for first to ``loss`` for last; tied seats share their place's pay.
``seed000_dense``
    Seed 000's shaping on top of the end pay, paid to the mover for each of its
    moves, first match wins: a token reaching home ``token_home``; entering the
    board ``enter``; capturing ``capture``; any other move ``progress`` times the
    token's new progress / home. Seed 000's scale: 100 for a win, -100 a loss.
``potential``
    Potential-based shaping on top of the end pay:
    ``coef * (gamma * phi(s') - phi(s))`` between a seat's consecutive
    decisions, with ``phi`` the seat's progress lead (its pips minus the mean of
    its opponents' pips, over ``tokens * (home + 1)``) and ``phi = 0`` once the
    game is over. The discounted sum over a game is
    ``coef * (gamma**N * 0 - phi(s_0)) = -coef * phi(s_0)`` whatever is played,
    so the optimal policy is unchanged (Ng, Harada and Russell, 1999); set
    ``gamma`` to the learner's discount (`launch/train.py` refuses PPO and DQN
    runs where the two differ).

A truncated game (turn limit) pays no end reward. A seat's shaping accrues
between its decisions and is paid with its next observation or at the end.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import yaml

from ludo_env.engine.jit import kernel
from ludo_env.engine.kernels import token_index
from ludo_env.engine.layout import EV_CAPTURE, EV_ENTERED, EV_TOKEN_HOME, R_HOME, R_PLAYERS, R_TOKENS
from ludo_env.rules import MAX_PLAYERS

REWARD_KINDS = ("sparse", "seed000_dense", "potential")
REWARD_DIR = Path(__file__).resolve().parent.parent / "conf" / "reward"


class RewardConfigError(ValueError):
    pass


@dataclass(frozen=True)
class RewardConfig:
    kind: str = "sparse"
    """sparse | seed000_dense | potential."""
    win: float = 1.0
    """End pay of the winner."""
    loss: float | None = None
    """End pay of every other seat; None: -win / (players - 1), a zero-sum game."""
    rank_based: bool = False
    """Pay by finishing place, linearly from `win` (first) to `loss` (last)."""
    enter: float = 0.5
    """seed000_dense: a token leaves its base."""
    capture: float = 5.0
    """seed000_dense: the move sends opponents back."""
    token_home: float = 100.0
    """seed000_dense: the moved token finishes."""
    progress: float = 0.3
    """seed000_dense: any other move pays this times the token's new progress / home."""
    coef: float = 1.0
    """potential: scale of the shaping term."""
    gamma: float = 0.99
    """potential: discount in gamma * phi(s') - phi(s); match the learner's."""

    CHOICES: ClassVar[dict[str, tuple[str, ...]]] = {"kind": REWARD_KINDS}
    """The reward kinds `__post_init__` takes, which the docs' reference lists."""

    def __post_init__(self):
        if self.kind not in REWARD_KINDS:
            raise RewardConfigError(f"reward kind {self.kind!r} is not allowed: choose one of "
                                    f"{', '.join(self.CHOICES['kind'])}")
        if not 0.0 < self.gamma <= 1.0:
            raise RewardConfigError(f"reward gamma={self.gamma} is not allowed: use 0 < gamma <= 1")

    @classmethod
    def from_mapping(cls, values: dict[str, Any] | None = None, **overrides) -> RewardConfig:
        merged = {**(values or {}), **overrides}
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(merged) - known)
        if unknown:
            raise RewardConfigError(f"unknown reward field {unknown[0]!r}: choose from {', '.join(sorted(known))}")
        return cls(**merged)

    @classmethod
    def load(cls, spec: str | dict[str, Any] | RewardConfig) -> RewardConfig:
        """A config from a preset name (``conf/reward/<name>.yaml``), a mapping of fields, or itself."""
        if isinstance(spec, RewardConfig):
            return spec
        if isinstance(spec, str):
            path = REWARD_DIR / f"{spec}.yaml"
            if not path.is_file():
                raise RewardConfigError(f"unknown reward {spec!r}: choose one of {', '.join(REWARD_KINDS)}")
            return cls.from_mapping(yaml.safe_load(path.read_text()))
        return cls.from_mapping(dict(spec))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def dense(self) -> bool:
        return self.kind == "seed000_dense"

    @property
    def shaped_by_potential(self) -> bool:
        return self.kind == "potential"

    def end_rewards(self, places: np.ndarray, players: int) -> np.ndarray:
        """End pay per seat from finishing places (1 = first; ties share)."""
        loss = -self.win / (players - 1) if self.loss is None else self.loss
        places = np.asarray(places[:players], dtype=np.float64)
        if self.rank_based:
            return self.win + (places - 1) * (loss - self.win) / (players - 1)
        return np.where(places == 1, self.win, loss)

    def dense_weights(self) -> np.ndarray:
        """The seed000_dense weights in the order `move_reward` reads them (all zero for other kinds)."""
        if not self.dense:
            return np.zeros(4)
        return np.array([self.token_home, self.enter, self.capture, self.progress], dtype=np.float64)


@kernel
def move_reward(events, new_progress, home, weights):
    """seed000_dense pay for one move (weights: token_home, enter, capture, progress)."""
    if events & EV_TOKEN_HOME:
        return weights[0]
    if events & EV_ENTERED:
        return weights[1]
    if events & EV_CAPTURE:
        return weights[2]
    return weights[3] * max(new_progress, 0) / home


@kernel
def seat_potential(state, tab, seat):
    """phi: the seat's pips minus its opponents' mean pips, over tokens * (home + 1)."""
    players = tab[R_PLAYERS]
    mine = 0.0
    others = 0.0
    for s in range(players):
        pips = 0
        for t in range(tab[R_TOKENS]):
            p = state[token_index(s, t)]
            if p >= 0:
                pips += p + 1
        if s == seat:
            mine = pips
        else:
            others += pips
    return (mine - others / (players - 1)) / (tab[R_TOKENS] * (tab[R_HOME] + 1))


@kernel
def potentials(states, tab, out):
    """`out[b, s]` = phi of seat s in game b."""
    for b in range(states.shape[0]):
        for s in range(MAX_PLAYERS):
            out[b, s] = seat_potential(states[b], tab, s) if s < tab[R_PLAYERS] else 0.0
