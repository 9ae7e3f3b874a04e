"""The one compile setting every engine kernel uses, and the on-disk cache of compiled kernels.

`kernel` is numba's ``njit`` with the runtime's reference counting switched off
(``_nrt=False``). The kernels only read and write arrays they are given, never
allocate, and with reference counting on, every array handed between kernels
costs atomic increments and decrements, several times the cost of a legal-move
check and about half the engine's time. Kernels that must allocate are
plain `jit` wrappers around these. ``error_model="numpy"`` drops Python's
zero-division checks from the integer arithmetic.

Cache. Compiling every kernel costs a fresh process tens of seconds (each Ray worker,
each test run, each command). Numba's on-disk cache would save that, but it
only notices a change in the file of the function it compiled, not in a kernel
it calls from another file: a cached batch kernel once kept running an old
ranking rule. So the cache lives in a folder named after a digest of every
source file numba reads (all of ``ludo_env`` and ``policies/bots``, and any
other file of ``policies`` that mentions numba) and numba's version: any edit
anywhere gives a new, empty folder, and stale code can never be loaded.
``LUDO_NUMBA_CACHE`` moves the folders (default ``~/.cache/ludo-league/numba``);
``LUDO_NUMBA_CACHE=off`` compiles in memory only.

Compile time. `ludo_env.engine.inline_copy` removes most of the cost of numba's inlining
at compile time (``benchmarks/compile_time.py`` measures it).
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numba
from numba import njit

from ludo_env.engine import inline_copy

CACHE_ENV = "LUDO_NUMBA_CACHE"


def _compiled_sources(root: Path) -> list[Path]:
    """All of ``ludo_env`` (kernels and the constants they freeze in), all of ``policies/bots``, and every
    other file of ``policies`` that compiles numba code."""
    files = set((root / "ludo_env").rglob("*.py")) | set((root / "policies" / "bots").rglob("*.py"))
    for path in (root / "policies").rglob("*.py"):
        text = path.read_text(errors="replace")
        if "engine.jit" in text or "numba" in text:
            files.add(path)
    return sorted(files)


def source_digest() -> str:
    """A digest of every source file numba compiles or reads constants from, and of numba itself."""
    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256(numba.__version__.encode())
    for path in _compiled_sources(root):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _cache_dir() -> Path | None:
    setting = os.environ.get(CACHE_ENV, "")
    if setting.lower() == "off":
        return None
    base = Path(setting) if setting else Path.home() / ".cache" / "ludo-league" / "numba"
    return base / source_digest()


CACHE_DIR = _cache_dir()
if CACHE_DIR is not None:
    # Read by numba when each decorator below is applied, so it is set before any of them.
    numba.config.CACHE_DIR = str(CACHE_DIR)
CACHE = CACHE_DIR is not None
# First compilations of the inlined kernels take 2.5 times less time with it (its module docstring).
inline_copy.install()

# nogil: a kernel called from Python lets other threads run meanwhile (a tournament's threads play
# their chunks on separate cores, `policies.tournament`); the kernels share no state, so nothing to lock.
kernel = njit(_nrt=False, error_model="numpy", cache=CACHE, nogil=True)
# The kernels on the per-move path are inlined into their callers: much faster games, at the price of a
# longer first compilation.
inline_kernel = njit(_nrt=False, error_model="numpy", inline="always", cache=CACHE, nogil=True)
# Plain numba (reference counting on) for the few functions that allocate.
jit = njit(cache=CACHE, nogil=True)
