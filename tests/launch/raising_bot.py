"""A ``py:`` bot that plays like the random bot, then raises: a user's bot with a bug that shows only mid-run.

``py:tests.launch.raising_bot:RaisesLater`` raises ZeroDivisionError from its ``RAISING_BOT_CALLS``-th call on
(environment; default 200), counted per instance. ``RAISING_BOT_WHERE`` aims the failure at one place (the
bot's calls run in a thread of their own, so it cannot look at its caller):

``ray_worker``
    only in a Ray worker process: at a training seat of a remote EnvRunner;
``driver``
    only outside Ray workers: the league's rating rounds and panels;
``batch>=N``
    only in calls that ask for N or more games at once (the final evaluation's ``eval.final_games``).
"""
from __future__ import annotations

import os

import numpy as np


class RaisesLater:
    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.calls = 0
        self.fail_at = int(os.environ.get("RAISING_BOT_CALLS", "200"))
        self.where = os.environ.get("RAISING_BOT_WHERE", "")

    def choose(self, view, die, mask):
        if self._aimed_at(len(mask)):
            self.calls += 1
            if self.calls >= self.fail_at:
                raise ZeroDivisionError(f"a bug at call {self.calls}")
        noise = self.rng.random(mask.shape)
        return np.where(mask == 1, noise, -1.0).argmax(axis=1)

    def _aimed_at(self, games: int) -> bool:
        if self.where.startswith("batch>="):
            return games >= int(self.where[len("batch>="):])
        if self.where in ("ray_worker", "driver"):
            return in_ray_worker() == (self.where == "ray_worker")
        return True


def in_ray_worker() -> bool:
    import sys

    if "ray" not in sys.modules:
        return False
    import ray

    return ray.is_initialized() and ray.get_runtime_context().worker.mode == ray.WORKER_MODE
