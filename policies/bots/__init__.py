"""The seed bots: numba, batched, and the same code wherever they play.

`Bot(name, seed).act(states, tab, masks)` picks one token per game for a batch
of engine states (absolute seats, the mover is ``state[CURRENT]``). The
evaluator's fast path calls `kernels.choose` inside its own kernels, the
gymnasium env calls `act` for its opponent seats, and `policies.modules`
wraps `act` as a fixed RLModule, so every bot plays identically in all three.
The rules of each bot and how its seed formulas were read are in
`policies.bots.kernels`.
"""
from __future__ import annotations

import numpy as np

from ludo_env.engine.rng import extend_streams, streams
from policies.bots.kernels import BOT_NAMES, REGISTRY, BuiltinBot, choose, choose_batch  # noqa: F401  (re-exported)


class UnknownBotError(ValueError):
    pass


def builtin_bot(name: str) -> BuiltinBot:
    """The registered bot `name`; an unknown name raises one line naming the registered ones."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownBotError(f"unknown bot {name!r}: choose one of {', '.join(BOT_NAMES)}") from None


def bot_id(name: str) -> int:
    return builtin_bot(name).id


class Bot:
    """A seed bot playing a batch of games; `seed` drives only the random bot's choices."""

    def __init__(self, name: str, seed: int = 0):
        self.name = name
        self.id = bot_id(name)
        self.seed = seed
        self._rng = streams(seed, 0)

    def act(self, states: np.ndarray, tab: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """Token choices (int64, -1 where no move is legal) for `states` (B, STATE_LEN) and `masks` (B, 4)."""
        batch = states.shape[0]
        self._rng = extend_streams(self._rng, self.seed, batch)
        out = np.empty(batch, dtype=np.int64)
        choose_batch(self.id, states, tab, np.ascontiguousarray(masks, dtype=np.int8), self._rng, out)
        return out

    def __repr__(self) -> str:
        return f"Bot({self.name!r}, seed={self.seed})"
