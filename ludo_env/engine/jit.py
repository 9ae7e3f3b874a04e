"""The one compile setting every engine kernel uses.

`kernel` is numba's ``njit`` with the runtime's reference counting switched off
(``_nrt=False``). The kernels only read and write arrays they are given, never
allocate, and with reference counting on, every array handed between kernels
costs atomic increments and decrements: measured at 23 ns against 5 ns for one
legal-move check, and half the engine's time. Kernels that must allocate are
plain ``njit`` wrappers around these. ``error_model="numpy"`` drops Python's
zero-division checks from the integer arithmetic.

No ``cache=True``: numba's on-disk cache does not notice when a kernel in
another file changes, so a cached batch kernel would keep running the old
rules (this happened: a fixed ranking bug lived on in `batch.py`'s cache).
Compiling costs a few seconds per process; wrong rules cost far more.
"""
from __future__ import annotations

from numba import njit

kernel = njit(_nrt=False, error_model="numpy")
# The kernels on the per-move path are inlined into their callers: measured 27k -> 44k games/s
# (pyludo, random moves, one core), at the price of a longer first compilation.
inline_kernel = njit(_nrt=False, error_model="numpy", inline="always")
