"""A compile-time fix for numba's ``inline="always"``: copy the callee's scope once per inlined copy.

Why. The per-move kernels are inlined into their callers (`ludo_env.engine.jit`), and
compiling one top-level kernel (``play_random``, ``step_batch``, a bot's ``choose_batch``)
took tens of seconds in a fresh process. A profile of ``play_random``'s first call put most
of that in numba's ``InlineWorker.inline_ir``, in ``copy.deepcopy`` of the callee's IR: over
a hundred inlined calls, tens of millions of ``deepcopy`` calls.
numba deep-copies the callee block by block, each with its own memo, and every ``Var``
copies the ``Scope`` it belongs to, which holds every variable of the function. So each
block carries a full copy of the scope, and the work grows with blocks × variables, which
nested inlining makes large. This is numba's known inlining cost (numba/numba#8989;
NVIDIA/numba-cuda#688 proposes related fixes).

What. While ``inline_ir`` copies a callee, all of that copy's blocks share one copy of its
scope, as the blocks of a function that was never inlined share theirs. Everything else
numba does is untouched: the same passes and the same renaming, and the kernels compute
the same (see Safety).
``python benchmarks/compile_time.py`` times first calls with an empty cache both ways, side
by side in fresh processes (its figures: docs/pages/results/, engine speed).

Safety. ``install`` only patches a numba whose internals are the ones read here (checked by
name and signature); on any other version numba is left as it is and compiles at its own
speed. The engine's tests (golden records, the plain-Python reference, the specialised
kernel against the generic one) all run on kernels compiled with it, and
``tests/engine/test_inline_copy.py`` compiles nested inlined functions with and without it
and compares what they compute. The cache folder's digest covers this file, so a change
here never reuses kernels compiled before it.
"""
from __future__ import annotations

import copy
import inspect
import threading

from numba.core import inline_closurecall, ir

_local = threading.local()
_numba_inline_ir = inline_closurecall.InlineWorker.inline_ir
_numba_function_ir_copy = ir.FunctionIR.copy
INSTALLED = False
ENABLED = True  # tests switch it off to compile the same code with numba's own copy


def _inline_ir(self, *args, **kwargs):
    outer = getattr(_local, "scopes", None)
    _local.scopes = {} if ENABLED else None
    try:
        return _numba_inline_ir(self, *args, **kwargs)
    finally:
        _local.scopes = outer


def _function_ir_copy(self):
    # inline_ir copies a callee as FunctionIR.copy() then one deepcopy per block: a new copy starts here.
    if getattr(_local, "scopes", None) is not None:
        _local.scopes = {}
    return _numba_function_ir_copy(self)


def _scope_deepcopy(self, memo):
    shared = getattr(_local, "scopes", None)
    if shared is not None and id(self) in shared:
        memo[id(self)] = shared[id(self)]
        return shared[id(self)]
    out = type(self).__new__(type(self))
    memo[id(self)] = out
    if shared is not None:
        shared[id(self)] = out
    for name, value in self.__dict__.items():
        setattr(out, name, copy.deepcopy(value, memo))
    return out


def _numba_is_as_read() -> bool:
    """The internals patched here are the ones this module was written against."""
    try:
        params = list(inspect.signature(_numba_inline_ir).parameters)
        source = inspect.getsource(_numba_inline_ir)
    except (TypeError, ValueError, OSError):
        return False
    return (params[:6] == ["self", "caller_ir", "block", "i", "callee_ir", "callee_freevars"]
            and "the_ir.copy()" in source and "copy.deepcopy(the_ir.blocks[block_label])" in source
            and "__deepcopy__" not in ir.Scope.__dict__ and set(vars(ir.Scope(None, ir.unknown_loc)))
            == {"parent", "localvars", "loc", "redefined", "var_redefinitions"})


def install() -> bool:
    """Patch numba once, if its internals are as read; returns whether the fix is in place."""
    global INSTALLED
    if not INSTALLED and _numba_is_as_read():
        inline_closurecall.InlineWorker.inline_ir = _inline_ir
        ir.FunctionIR.copy = _function_ir_copy
        ir.Scope.__deepcopy__ = _scope_deepcopy
        INSTALLED = True
    return INSTALLED
