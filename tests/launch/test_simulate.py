"""`launch/simulate.py` as a user runs it: the report, and the specialised kernel giving the same games."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def simulate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "launch/simulate.py", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.mark.slow
def test_the_specialised_kernel_reports_the_same_games():
    reports = []
    for specialised in ("false", "true"):
        proc = simulate("variant=pyludo", "games=300", "seed=3", "max_plies=400", f"specialised={specialised}")
        assert proc.returncode == 0, proc.stderr[-2000:]
        lines = proc.stdout.strip().splitlines()
        assert lines[0] == "pyludo, 4 players, 300 random-move games, seed 3" and lines[-1].endswith("(after compilation)")
        reports.append(lines[:-1])  # all but the speed
    assert reports[0] == reports[1]
    assert sum(line.strip().startswith("seat ") for line in reports[0]) == 4


def test_a_bad_specialised_value_is_one_line():
    proc = simulate("specialised=maybe")
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: specialised='maybe' is not allowed: give true or false"
