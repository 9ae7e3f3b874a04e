"""``python -m tests.launch.held_checkpoints <overrides>``: `launch/train.py` with every checkpoint held, fully
written but not yet renamed into place, for `HOLD_S` seconds. A checkpoint written in the background is then
still a temporary folder while training goes on, however fast the disk, so a test can kill a run at that moment
every time rather than when a race happens to fall its way."""
from __future__ import annotations

import runpy
import sys
import time
from pathlib import Path

from launch.training import runs

HOLD_S = 6.0
"""Longer than a smoke iteration on a busy 2-core machine, so the next iteration's metrics land meanwhile."""

written = runs._fsync_tree


def written_then_held(folder: Path) -> None:
    written(folder)
    time.sleep(HOLD_S)


if __name__ == "__main__":
    runs._fsync_tree = written_then_held
    script = Path(__file__).resolve().parents[2] / "launch" / "train.py"
    sys.argv = [str(script), *sys.argv[1:]]
    runpy.run_path(str(script), run_name="__main__")
