#!/usr/bin/env python3
"""Write ``requirements.lock``: every package version, for every extra, that the project is tested with.

    python .ci/lock.py            # after any change to pyproject.toml's dependencies, then run the tests

The lock is ``uv pip compile`` output (plain pip constraints) for CPython 3.11 on Linux x86-64, read by both
set-up commands of the README as ``pip install -c requirements.lock ...``. Three lines are added on top:
- a digest of pyproject.toml's dependency tables, which ``tests/test_lock.py`` recomputes, so a change to
  pyproject.toml that was not locked again fails the tests;
- a constraint that no version of this project can meet on any other operating system or processor, so pip
  refuses the install there, naming the platform the lock is for (another Python is refused by
  ``requires-python``).
uv comes from PyPI into a throwaway folder, at the version pinned below.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
UV = "uv==0.13.9"
PYTHON_VERSION = "3.11"
PLATFORM = "x86_64-manylinux_2_28"
DIGEST_PREFIX = "# pyproject.toml dependencies digest: "
PLATFORM_GUARD = ('ludo-league==0+lock.for.linux.x86.64 ; sys_platform != "linux" or platform_machine != "x86_64"'
                  "  # this lock is for CPython 3.11 on Linux x86-64 only")


def dependency_digest(pyproject: Path) -> str:
    """A digest of what pyproject.toml asks for: requires-python, the dependencies and every extra."""
    project = tomllib.loads(pyproject.read_text())["project"]
    asked = {"requires-python": project["requires-python"], "dependencies": project["dependencies"],
             "optional-dependencies": project.get("optional-dependencies", {})}
    return hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()[:16]


def compile_lock() -> str:
    with tempfile.TemporaryDirectory(prefix="ludo-lock-") as tools:
        subprocess.run([sys.executable, "-m", "venv", tools], check=True)
        subprocess.run([f"{tools}/bin/pip", "install", "-q", UV], check=True)
        out = subprocess.run(
            [f"{tools}/bin/uv", "pip", "compile", "pyproject.toml", "--all-extras", "--quiet", "--no-header",
             "--python-version", PYTHON_VERSION, "--python-platform", PLATFORM],
            cwd=ROOT, check=True, capture_output=True, text=True)
    return out.stdout


def main() -> None:
    header = [
        "# The tested versions of every package for every extra, CPython 3.11 on Linux x86-64:",
        "# pip constraints written by `python .ci/lock.py` (uv pip compile). Install with",
        '#   pip install -c requirements.lock -e ".[test]"',
        DIGEST_PREFIX + dependency_digest(ROOT / "pyproject.toml"),
        PLATFORM_GUARD,
    ]
    tmp = LOCK.with_suffix(".tmp")
    tmp.write_text("\n".join(header) + "\n" + compile_lock())
    tmp.replace(LOCK)
    print(f"wrote {LOCK.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
