"""Explicit random streams for the kernels: no global RNG state anywhere.

Each game owns one uint64 word of generator state (a SplitMix64 counter), so a
game's dice depend only on its own seed, never on the batch it runs in or on
the order games are stepped. SplitMix64 passes BigCrush and needs one word;
`below(n)` turns the top 32 bits into an exactly uniform integer in 0..n-1 by
Lemire's multiply-shift with rejection: no division on the common path, and no
value favoured even by the 2**-30 a plain multiply-shift or modulo would give.
"""
from __future__ import annotations

import numpy as np
from numba import uint64

from ludo_env.engine.jit import jit, kernel

GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_LOW32 = np.uint64(0xFFFFFFFF)
_TWO32 = np.uint64(1 << 32)


@kernel
def _mix(z):
    z = (z ^ (z >> uint64(30))) * _M1
    z = (z ^ (z >> uint64(27))) * _M2
    return z ^ (z >> uint64(31))


@kernel
def next_u64(rng, i):
    """Advance stream `i` of the uint64 array `rng` and return 64 random bits."""
    rng[i] += GOLDEN_GAMMA
    return _mix(rng[i])


@kernel
def below(rng, i, n):
    """A uniform integer in 0..n-1 (1 <= n < 2**32) from stream `i`."""
    bound = np.uint64(n)
    m = (next_u64(rng, i) >> np.uint64(32)) * bound
    if (m & _LOW32) < bound:
        # Rare slow path: reject the few low words that would over-represent some values.
        threshold = (_TWO32 - bound) % bound
        while (m & _LOW32) < threshold:
            m = (next_u64(rng, i) >> np.uint64(32)) * bound
    return np.int64(m >> np.uint64(32))


@kernel
def die(rng, i):
    """A fair die roll in 1..6 from stream `i`."""
    return below(rng, i, 6) + 1


def streams(seed: int, batch: int) -> np.ndarray:
    """`batch` independent generator states derived from one integer seed.

    Stream b of seed s is the same whatever the batch size, so game b replays
    identically in a batch of 10 or of 100,000.
    """
    if seed < 0:
        raise ValueError(f"seed={seed} is not allowed: use a non-negative integer")
    base = np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
    with np.errstate(over="ignore"):
        index = np.arange(batch, dtype=np.uint64)
        return _seed_mix(base * np.uint64(0x2545F4914F6CDD1D) + index * GOLDEN_GAMMA)


def extend_streams(rng: np.ndarray, seed: int, batch: int) -> np.ndarray:
    """`rng` with at least `batch` streams: those already advanced are kept and fresh streams of `seed` follow
    them, so a player asked for a larger batch keeps replaying its earlier rows."""
    if rng.shape[0] >= batch:
        return rng
    return np.concatenate([rng, streams(seed, batch)[rng.shape[0]:]])


@jit
def _seed_mix(words):
    out = np.empty_like(words)
    for i in range(words.shape[0]):
        out[i] = _mix(words[i] + GOLDEN_GAMMA)
    return out
