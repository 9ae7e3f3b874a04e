"""Suite-wide hooks: tests marked ``serial`` run alone when the suite runs on several pytest-xdist workers.

The README's test command runs two workers (``-n 2 --dist loadfile``: a file's tests stay on one worker, so a
module's fixtures are built once). A few tests time something that must happen fast (Ctrl-C stops a command
within 3 s, a killed run leaves no process after 5 s); a training on the other worker's cores would slow them.
So every test holds a shared lock from its first fixture to its last teardown, and a ``serial`` test holds it
alone. Both first pass a turnstile, which a waiting serial test holds, so the other worker cannot keep the
shared lock forever. Without xdist nothing is locked.
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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    folder = _lock_folder(item.config)
    if folder is None:
        return (yield)
    mode = fcntl.LOCK_EX if item.get_closest_marker("serial") else fcntl.LOCK_SH
    with open(folder / "turnstile", "a") as turnstile, open(folder / "running", "a") as running:
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        fcntl.flock(running, mode)
        fcntl.flock(turnstile, fcntl.LOCK_UN)
        try:
            return (yield)
        finally:
            fcntl.flock(running, fcntl.LOCK_UN)
