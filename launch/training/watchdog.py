"""Nothing a training driver starts outlives it by more than a few seconds, ``kill -9`` included.

``ray.init()`` starts a local cluster as the driver's children: the GCS, the raylet (both die with the driver)
and, under the raylet, Ray's DashboardAgent and RuntimeEnvAgent, which do not: after a ``kill -9`` of the driver
they keep retrying a GCS that is gone for minutes, holding
memory and CPU a next run needs. ``include_dashboard=False`` does not stop them; Ray starts both agents on
every node.

`start` marks the driver's environment (`MARKER`, which every process it starts inherits, Ray's workers
included) and launches a watchdog: a small Python process, the driver's child, that notes every descendant of
the driver (pid and start time) twice a second while the driver lives. Once it is reparented (the driver is
gone, however it ended) it waits `GRACE_S` for processes that end themselves, then SIGKILLs whatever is left
of what it saw, their children, and every process that carries the driver's mark (one started in the last
half second, whose parent died with the driver, was never seen in the tree), and exits. A pid taken by
another process since is told apart by its start time. It imports nothing but the standard library, so it
costs about 10 MB and no start-up time.
"""
from __future__ import annotations

import os
import subprocess
import sys

POLL_S = 0.5
GRACE_S = 1.0
MARKER = "LUDO_LEAGUE_DRIVER"
"""Environment variable naming the driver (pid and start time) in everything it starts."""

_WATCHDOG = r"""
import os, signal, sys, time

driver, poll, grace, mark = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4].encode()
me = os.getpid()


def table():
    procs = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        procs[int(name)] = (int(fields[1]), fields[19])  # ppid, start time (clock ticks after boot)
    return procs


def below(roots, procs):
    found, frontier = set(), set(roots)
    while frontier:
        frontier = {pid for pid, (ppid, _) in procs.items() if ppid in frontier} - found
        found |= frontier
    return found


def marked(procs):
    found = set()
    for pid in procs:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if mark in f.read().split(b"\0"):
                    found.add(pid)
        except OSError:
            continue
    return found


seen = {}
while os.getppid() == driver:  # reparented once the driver is gone, however it ended
    procs = table()
    for pid in below({driver}, procs) - {me}:
        seen[pid] = procs[pid][1]
    time.sleep(poll)
time.sleep(grace)
for _ in range(5):
    procs = table()
    alive = {pid for pid, start in seen.items() if pid in procs and procs[pid][1] == start}
    targets = (alive | below(alive, procs) | marked(procs)) - {me}
    if not targets:
        break
    for pid in targets:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.2)
"""


_started: dict[int, subprocess.Popen] = {}


def start() -> subprocess.Popen | None:
    """Start the watchdog of this process (module docstring), once; None where there is no /proc to read."""
    if not os.path.isdir("/proc/self"):
        return None
    if os.getpid() not in _started:  # keyed by pid: a forked child watches its own
        os.environ[MARKER] = f"{os.getpid()}-{_start_time(os.getpid())}"
        _started[os.getpid()] = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, str(os.getpid()), str(POLL_S), str(GRACE_S),
             f"{MARKER}={os.environ[MARKER]}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True)
    return _started[os.getpid()]


def _start_time(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[19]
