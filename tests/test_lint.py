"""``ruff check`` passes on the whole tree, with the rules chosen in pyproject.toml's ``[tool.ruff.lint]``.

A finding is fixed rather than silenced; a ``# noqa`` names its rule and gives its reason on its line.
ruff is pinned in the ``test`` extra and in ``requirements.lock``, so the findings do not move with a release.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(importlib.util.find_spec("ruff") is None,
                    reason="ruff is not installed: it comes with the test extra (pip install -e '.[test]')")
def test_ruff_check_passes():
    # `python -m ruff` finds the ruff of this environment, even in a virtual environment that is not on PATH.
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                             str(ROOT)], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, f"ruff check found:\n{result.stdout}{result.stderr}"
