"""The "bring your own bot" example of `policies.players`, loaded in tests as py:tests.evaluate.example_bot:FurthestBehind."""
import numpy as np


class FurthestBehind:
    """Move the legal token with the least progress; a token in base is furthest behind."""

    def choose(self, view, die, mask):
        mine = view[:, 0, :].astype(np.int64)  # row 0: the mover's own tokens, in its own frame
        return np.where(mask == 1, mine, 1_000).argmin(axis=1)


class Seeded:
    """Takes a seed, picks a random legal token: checks that `seed` reaches the constructor."""

    def __init__(self, seed):
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def choose(self, view, die, mask):
        scores = self.rng.random(mask.shape) + mask  # legal tokens score above 1, illegal below
        return scores.argmax(axis=1)


class AlwaysZero:
    """Ignores the mask: its first illegal answer must stop the tournament with one line."""

    def choose(self, view, die, mask):
        return np.zeros(len(die), dtype=np.int64)


class WrongShape:
    def choose(self, view, die, mask):
        return np.zeros((len(die), 1), dtype=np.int64)


class NoChoose:
    pass


class ExitsOnFirstMove:
    """Calls sys.exit(0) from choose: the program must refuse it in one line, not end quietly with status 0."""

    def choose(self, view, die, mask):
        raise SystemExit(0)


class ExitsWhenBuilt:
    def __init__(self):
        raise SystemExit(0)

    def choose(self, view, die, mask):
        return mask.argmax(axis=1)
