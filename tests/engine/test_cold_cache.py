"""Many processes starting at once on an empty numba cache: none crashes, and each kernel is compiled by one of them.

`ludo_env.engine.jit` loads, compiles and saves every cached kernel under one file lock on the cache folder, so
processes that start together (pytest-xdist workers, Ray's EnvRunners) never write or read half-made entries.
"""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ludo_env.engine import jit

ROOT = Path(__file__).resolve().parents[2]

# What a worker, an EnvRunner or a command does first: the engine's kernels and a bot's, on one rule set.
ENGINE_AND_BOTS = """
import numpy as np
from ludo_env.engine import compile_rules, legal_masks, new_batch, play_random, step_batch
from ludo_env.rules import Rules
from policies.bots import Bot

tab = compile_rules(Rules.load("pyludo"))
states, rng = new_batch(tab, 8, seed=0)
play_random(states, tab, rng, 60)
states, rng = new_batch(tab, 8, seed=1)
masks, events = np.zeros((8, 4), dtype=np.int8), np.zeros(8, dtype=np.int32)
legal_masks(states, tab, masks)
step_batch(states, tab, rng, np.argmax(masks, axis=1), events, masks)
legal_masks(states, tab, masks)
print("moved", int(Bot("hybrid").act(states, tab, masks)[0] >= 0))
"""

SMALL_KERNEL = """
from ludo_env.engine.rng import streams
print("streams", streams(7, 3).shape[0])
"""


def start(code: str, cache: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, jit.CACHE_ENV: str(cache)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def cache_folder(cache: Path) -> Path:
    return cache / jit.source_digest()


def blocked_on(lock_path: Path) -> bool:
    """Whether some process waits for the flock on `lock_path` (Linux lists waiters in /proc/locks with '->')."""
    inode = lock_path.stat().st_ino
    return any(line.split()[1] == "->" and line.split()[6].endswith(f":{inode}")
               for line in Path("/proc/locks").read_text().splitlines() if len(line.split()) > 6)


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="reads Linux's /proc/locks")
def test_a_process_waits_for_the_cache_lock_before_it_loads_or_compiles_a_kernel(tmp_path):
    folder = cache_folder(tmp_path)
    folder.mkdir(parents=True)
    lock_path = folder / jit.LOCK_NAME
    with open(lock_path, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        proc = start(SMALL_KERNEL, tmp_path)
        deadline = time.monotonic() + 300
        while not blocked_on(lock_path) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        waiting = blocked_on(lock_path)
        assert waiting and proc.poll() is None, "the process compiled without waiting for the cache lock"
        assert not any(folder.rglob("*.nbi")), "a kernel was saved while another process held the lock"
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert out.split() == ["streams", "3"]
    assert any(folder.rglob("*.nbi"))


def stress(cache_root: Path, processes: int, rounds: int) -> list[str]:
    """`rounds` times: `processes` processes at once on a new, empty cache, then as many again on the full one.
    Returns one line per process that did not finish cleanly."""
    failures = []
    for round_ in range(rounds):
        cache = cache_root / f"round{round_}"
        for phase in ("empty", "filled"):
            procs = [start(ENGINE_AND_BOTS, cache) for _ in range(processes)]
            for i, proc in enumerate(procs):
                out, err = proc.communicate(timeout=1800)
                if proc.returncode != 0 or out.split() != ["moved", "1"]:
                    tail = err.strip().splitlines()[-1:] if err.strip() else ["(no output)"]
                    failures.append(f"round {round_} {phase} cache, process {i}: rc {proc.returncode}: {tail[0]}")
    return failures


def test_eight_processes_start_together_on_an_empty_cache_without_a_crash(tmp_path):
    assert stress(tmp_path, processes=8, rounds=1) == []


@pytest.mark.slow
def test_eight_processes_start_together_on_an_empty_cache_five_rounds_without_a_crash(tmp_path):
    assert stress(tmp_path, processes=8, rounds=5) == []
