"""A ``py:`` bot that plays like the random bot and tells where it plays: the upkeep tests' league member.

``py:tests.launch.upkeep_bot:Marks`` appends a JSON line to the file ``UPKEEP_BOT_LOG`` names on its first call
in each process and whenever it sleeps or dies: the process's title (Ray names a worker process after its
actor and the method it runs: ``ray::LeagueWorker.play``, ``ray::BatchedLudoEnvRunner...``), pid and niceness.
In the league's worker (a title with `WORKER`) it also, when the environment says so:

``UPKEEP_BOT_SLEEP=<seconds>``
    sleeps that long (logged first, ``"event": "sleeping"``), once, in a rating round that starts after the run's
    league database ``UPKEEP_BOT_DB`` holds ``UPKEEP_BOT_SLEEP_AFTER`` rounds (unset: the first round): a round long enough
    to kill the run in the middle of, after the rounds before it were recorded;
``UPKEEP_BOT_DIE=<n>``
    ends its process at once (``os._exit``, as a crash would) on its first call, the first n times over the run
    (counted in the log, ``"event": "dying"``).
"""
from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import numpy as np

WORKER = "LeagueWorker"


def title() -> str:
    return Path("/proc/self/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()


def log(event: str) -> None:
    file = os.environ.get("UPKEEP_BOT_LOG")
    if file:
        with open(file, "a") as f:
            f.write(json.dumps({"event": event, "title": title(), "pid": os.getpid(),
                                "nice": os.getpriority(os.PRIO_PROCESS, 0), "time": time.time()}) + "\n")


def logged(event: str) -> list[dict]:
    file = os.environ.get("UPKEEP_BOT_LOG")
    if not file or not Path(file).is_file():
        return []
    return [row for row in map(json.loads, Path(file).read_text().splitlines()) if row["event"] == event]


def rounds_recorded() -> int:
    db = sqlite3.connect(f"file:{os.environ['UPKEEP_BOT_DB']}?mode=ro", uri=True)
    try:
        return db.execute("SELECT COUNT(*) FROM rounds").fetchone()[0]
    finally:
        db.close()


class Marks:
    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.called = False
        self.slept = False

    def choose(self, view, die, mask):
        in_worker = WORKER in title()
        if not self.called:
            self.called = True
            log("plays")
            if in_worker and len(logged("dying")) < int(os.environ.get("UPKEEP_BOT_DIE", "0")):
                log("dying")
                os._exit(3)
        after = int(os.environ.get("UPKEEP_BOT_SLEEP_AFTER", "0"))
        if in_worker and not self.slept and float(os.environ.get("UPKEEP_BOT_SLEEP", "0")) and \
                (not after or rounds_recorded() >= after):
            self.slept = True
            log("sleeping")
            time.sleep(float(os.environ["UPKEEP_BOT_SLEEP"]))
        noise = self.rng.random(mask.shape)
        return np.where(mask == 1, noise, -1.0).argmax(axis=1)
