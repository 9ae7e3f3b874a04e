"""Suite-wide hooks: tests marked ``serial`` time their call with no other test beside it when the suite runs on
several pytest-xdist workers.

The README's test command runs two workers (``-n 2 --dist loadfile``: a file's tests stay on one worker, so a
module's fixtures are built once). A few tests time something that must happen fast (Ctrl-C stops a command
within 3 s, a killed run leaves no process after 5 s); a training on the other worker's cores would slow them.
So every test holds a shared lock from its first fixture to its last teardown, and a ``serial`` test swaps it for
the lock alone for its call: its fixtures (a trained run, kernels compiled before the clock starts) are built
beside the other worker's tests, which then wait only for what is timed. Every take passes a turnstile first,
which a waiting serial test holds, so the other worker cannot keep the shared lock forever. Without xdist nothing
is locked.
"""
from __future__ import annotations

import fcntl
import tempfile
from pathlib import Path

import pytest


def _lock_folder(config: pytest.Config) -> Path | None:
    """A folder the workers of this run share, or None when the suite runs in one process."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None:
        return None
    folder = Path(tempfile.gettempdir()) / f"ludo-league-tests-{workerinput['testrunuid']}"
    folder.mkdir(exist_ok=True)
    return folder


_HELD = pytest.StashKey[tuple]()


def _take(turnstile, running, mode: int) -> None:
    fcntl.flock(turnstile, fcntl.LOCK_EX)
    fcntl.flock(running, mode)
    fcntl.flock(turnstile, fcntl.LOCK_UN)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    folder = _lock_folder(item.config)
    if folder is None:
        return (yield)
    with open(folder / "turnstile", "a") as turnstile, open(folder / "running", "a") as running:
        _take(turnstile, running, fcntl.LOCK_SH)
        item.stash[_HELD] = (turnstile, running)
        try:
            return (yield)
        finally:
            del item.stash[_HELD]
            fcntl.flock(running, fcntl.LOCK_UN)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    held = item.stash.get(_HELD, None)
    if held is None or item.get_closest_marker("serial") is None:
        return (yield)
    turnstile, running = held
    fcntl.flock(running, fcntl.LOCK_UN)  # a shared lock is not made exclusive in place: two such swaps would deadlock
    _take(turnstile, running, fcntl.LOCK_EX)
    try:
        return (yield)
    finally:
        fcntl.flock(running, fcntl.LOCK_UN)
        _take(turnstile, running, fcntl.LOCK_SH)
