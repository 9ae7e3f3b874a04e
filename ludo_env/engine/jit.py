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

Many processes on one cache. Processes that start together on an empty cache (pytest-xdist
workers, Ray's EnvRunners, a cluster's first run) would otherwise compile the same kernels at
once and write the same cache entries. numba writes each file atomically but a kernel's entry
and its callees' entries separately, so a cache filled by racing writers can hold a caller
compiled against one process's callee and an index written by another, and a later process
that loads it crashes (SIGBUS or SIGSEGV, no traceback; numba issues 4807 and 10128). So every
load, compile and save of a cached kernel happens under one file lock on the cache folder
(`compile_lock`): the first process compiles and saves, and the others wait, then load
complete entries. Taken once per outermost compile (callees compile inside it), never while a
kernel runs, and not at all when the cache is off.

Compile time. `ludo_env.engine.inline_copy` removes most of the cost of numba's inlining
at compile time (``benchmarks/compile_time.py`` times first calls with an empty cache).
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import numba
from numba import njit
from numba.core.compiler_lock import global_compiler_lock

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
LOCK_NAME = ".compile.lock"
# First compilations of the inlined kernels take 2.5 times less time with it (its module docstring).
inline_copy.install()

# Off only in `benchmarks/compile_time.py --compare compile_lock`, which times a first start without it.
ONE_WRITER = True
_lock_depth = 0  # nested compiles (a kernel's callees) inside the outermost one, which holds the file lock
_lock_file = None


@contextlib.contextmanager
def compile_lock() -> Iterator[None]:
    """Hold the cache folder's file lock for as long as this process loads, compiles or saves kernels.

    Entered inside numba's own compiler lock (a re-entrant lock that every compile in the process holds), so
    one thread at a time counts the depth here; the outermost entry takes the file lock and the last exit
    gives it back. The lock goes with the process, so a killed process never leaves it held.
    """
    global _lock_depth, _lock_file
    with global_compiler_lock:
        if _lock_depth == 0 and CACHE_DIR is not None:
            CACHE_DIR.mkdir(parents=True, exist_ok=True)
            _lock_file = open(CACHE_DIR / LOCK_NAME, "a")
            try:
                fcntl.flock(_lock_file, fcntl.LOCK_EX)
            except BaseException:  # Ctrl-C while another process compiles
                _lock_file.close()
                _lock_file = None
                raise
        _lock_depth += 1
        try:
            yield
        finally:
            _lock_depth -= 1
            if _lock_depth == 0 and _lock_file is not None:
                _lock_file.close()  # closing the only descriptor releases the lock
                _lock_file = None


def _one_writer(decorator: Callable) -> Callable:
    """`decorator` (an njit), whose dispatchers load, compile and save only under `compile_lock`."""
    if not CACHE:
        return decorator

    def decorate(func):
        dispatcher = decorator(func)
        numba_compile = dispatcher.compile  # what numba calls for every new signature, callers' typing included

        def compile(sig):
            if not ONE_WRITER:
                return numba_compile(sig)
            with compile_lock():
                return numba_compile(sig)

        dispatcher.compile = compile
        return dispatcher

    return decorate


# nogil: a kernel called from Python lets other threads run meanwhile (a tournament's threads play
# their chunks on separate cores, `policies.tournament`); the kernels share no state, so nothing to lock.
kernel = _one_writer(njit(_nrt=False, error_model="numpy", cache=CACHE, nogil=True))
# The kernels on the per-move path are inlined into their callers: measured 27k -> 44k games/s
# (pyludo, random moves, one core), at the price of a longer first compilation.
inline_kernel = _one_writer(njit(_nrt=False, error_model="numpy", inline="always", cache=CACHE, nogil=True))
# Plain numba (reference counting on) for the few functions that allocate.
jit = _one_writer(njit(cache=CACHE, nogil=True))
