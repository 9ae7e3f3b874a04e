"""After ``kill -9`` of a training driver nothing it started lives on for more than a few seconds:
before `launch.training.watchdog`, Ray's DashboardAgent and RuntimeEnvAgent were still alive 20 s (and 82 s) later.

Only the driver is killed, as a user's ``kill -9 <pid>`` or the OOM killer would; what is left is looked for in
the driver's own process group (it starts a new session), which every process it started shares."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.launch.configs import script_env, wait_until

ROOT = Path(__file__).resolve().parents[2]


def left_of(group: int) -> list[str]:
    """Live processes (not zombies) of process group `group`, as ``pid name``."""
    rows = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        comm, rest = stat[stat.index("(") + 1: stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        if int(rest[2]) == group and rest[0] != "Z":  # fields: state, ppid, pgrp
            rows.append(f"{name} {comm}")
    return rows


@pytest.fixture
def training_driver(tmp_path):
    """A training driver whose run is under way (Ray, its agents and wandb's service up), started in the test's
    setup, beside the other worker's tests; only the kill and the wait are timed alone (tests/conftest.py)."""
    out = tmp_path / "stdout"  # a file, not a pipe: nobody reads while the test waits its turn
    with out.open("w") as stdout:
        proc = subprocess.Popen([sys.executable, "launch/train.py", "+exp=smoke", "budget.iterations=1000",
                                 "wandb.mode=offline", f"hydra.run.dir={tmp_path / 'run'}"], cwd=ROOT,
                                stdout=stdout, stderr=subprocess.DEVNULL, env=script_env(), start_new_session=True)
    try:
        # Training runs once its first progress line is out: Ray, its agents and wandb's service are all up.
        wait_until(lambda: any(line.startswith("it ") for line in out.read_text().splitlines()), proc, 400,
                   "first iteration", lambda: "the run ended before its first iteration", poll_s=0.1)
        yield proc
    finally:
        for row in left_of(proc.pid):  # a failed test leaves nothing running either
            try:
                os.kill(int(row.split()[0]), signal.SIGKILL)
            except OSError:
                pass
        proc.kill()


@pytest.mark.serial  # times how fast it happens (tests/conftest.py)
def test_nothing_a_killed_driver_started_outlives_it_by_more_than_a_few_seconds(training_driver):
    proc = training_driver
    assert any("raylet" in row for row in left_of(proc.pid)), left_of(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 5
    while left_of(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.25)
    assert left_of(proc.pid) == [], "still alive 5 s after the driver was killed"
