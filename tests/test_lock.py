"""``requirements.lock`` agrees with pyproject.toml, and this environment was installed from it.

The lock is what both set-up commands of the README install with (``pip install -c requirements.lock ...``);
``.ci/lock.py`` writes it. A dependency changed in pyproject.toml without locking again, a locked version that a
bound in pyproject.toml refuses, or an environment that pip filled with other versions fails here.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = "ludo-league"
# The platform the lock is made for (.ci/lock.py): markers in pyproject.toml are read as there.
LOCK_ENVIRONMENT = {**default_environment(), "sys_platform": "linux", "platform_system": "Linux",
                    "platform_machine": "x86_64", "python_version": "3.11", "implementation_name": "cpython"}


def lock_tool():
    spec = importlib.util.spec_from_file_location("ci_lock", ROOT / ".ci" / "lock.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def locked_versions() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9._-]+)==([^\s;]+)\s*$", line)
        if match:
            pins[canonicalize_name(match[1])] = Version(match[2])
    return pins


def asked_for() -> list[tuple[str, Requirement]]:
    """Every requirement of pyproject.toml that applies on the lock's platform, with where it is asked for."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    tables = {"dependencies": project["dependencies"],
              **{f"extra {name}": reqs for name, reqs in project["optional-dependencies"].items()}}
    out = []
    for where, reqs in tables.items():
        for text in reqs:
            req = Requirement(text)
            if canonicalize_name(req.name) == PROJECT:  # one extra naming another
                continue
            if req.marker is None or req.marker.evaluate(LOCK_ENVIRONMENT):
                out.append((where, req))
    return out


def test_the_lock_was_written_from_this_pyproject():
    tool = lock_tool()
    lines = (ROOT / "requirements.lock").read_text().splitlines()
    written = [line.removeprefix(tool.DIGEST_PREFIX) for line in lines if line.startswith(tool.DIGEST_PREFIX)]
    assert written == [tool.dependency_digest(ROOT / "pyproject.toml")], (
        "pyproject.toml's dependencies changed since the lock was written: run `python .ci/lock.py`")


def test_every_requirement_of_pyproject_is_locked_at_a_version_it_allows():
    pins = locked_versions()
    problems = []
    for where, req in asked_for():
        name = canonicalize_name(req.name)
        if name not in pins:
            problems.append(f"{req} ({where}) is not in the lock")
        elif not req.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{req} ({where}) does not allow the locked {name}=={pins[name]}")
    assert problems == []


def test_the_major_versions_the_code_depends_on_are_bounded_above():
    bounded = {canonicalize_name(req.name): req.specifier for _, req in asked_for()}
    for name in ("pytest", "schemathesis", "numpy", "numba", "torch", "ray"):
        assert any(spec.operator in ("<", "<=", "==", "~=") for spec in bounded[name]), f"{name} has no upper bound"


def test_this_environment_holds_the_locked_versions():
    """CI and both README commands install with the lock: an installed package at another version means not."""
    installed = {canonicalize_name(dist.metadata["Name"]): Version(dist.version)
                 for dist in importlib.metadata.distributions() if dist.metadata["Name"]}
    differ = [f"{name} {installed[name]} installed, {pin} locked" for name, pin in locked_versions().items()
              if name in installed and installed[name].public != pin.public]
    assert differ == []


def test_the_lock_refuses_other_platforms_by_a_constraint_no_release_can_meet():
    tool = lock_tool()
    guard = Requirement(tool.PLATFORM_GUARD.split("#")[0])
    assert canonicalize_name(guard.name) == PROJECT and tool.PLATFORM_GUARD in (ROOT / "requirements.lock").read_text()
    assert not guard.marker.evaluate(LOCK_ENVIRONMENT)
    for elsewhere in ({"sys_platform": "darwin", "platform_machine": "arm64"},
                      {"sys_platform": "linux", "platform_machine": "aarch64"},
                      {"sys_platform": "win32", "platform_machine": "AMD64"}):
        assert guard.marker.evaluate({**LOCK_ENVIRONMENT, **elsewhere})
    own = Version(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])
    assert not guard.specifier.contains(own)


def other_python() -> str | None:
    """A working Python 3.10, 3.12 or 3.13: on the PATH, or installed beside this one (as pyenv keeps them)."""
    names = ("python3.12", "python3.13", "python3.10")
    candidates = [shutil.which(name) for name in names]
    candidates += [str(p) for name in names for p in sorted(Path(sys.base_prefix).parent.glob(f"*/bin/{name}"))]
    for candidate in filter(None, candidates):
        probe = subprocess.run([candidate, "-c", "import sys, venv; print(sys.version_info[1])"],
                               capture_output=True, text=True, check=False)
        if probe.returncode == 0 and probe.stdout.strip() != "11":
            return candidate
    return None


@pytest.mark.slow
def test_another_python_is_refused_by_the_install_in_one_line(tmp_path):
    python = other_python()
    if python is None:
        pytest.skip("no Python other than 3.11 here to try the lock with")
    venv = tmp_path / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True, capture_output=True)
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--dry-run", "-c",
                           "requirements.lock", "-e", "."], cwd=ROOT, capture_output=True, text=True, timeout=600,
                           check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("ERROR")]
    assert proc.returncode != 0
    assert len(errors) == 1 and "requires a different Python" in errors[0] and "<3.12,>=3.11" in errors[0], errors
