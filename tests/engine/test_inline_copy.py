"""`ludo_env.engine.inline_copy`: numba's inlining copies a callee's scope once per copy, and computes the same."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from numba.core import inline_closurecall, ir

from ludo_env.engine import (
    inline_copy,
    jit,  # noqa: F401  (installs the fix, as every kernel module does)
)


def nested_inlined_kernel():
    """A fresh dispatcher each call (no cache), with inlining two levels deep, loops and branches."""

    @njit(inline="always")
    def leaf(x, k):
        total = 0
        for i in range(k):
            if (x + i) % 3 == 0:
                total += i * x
            elif i > 2:
                total -= 1
        return total

    @njit(inline="always")
    def middle(x, k):
        a = leaf(x, k)
        b = leaf(x + 1, k)
        return a + 2 * b if a > b else a - b

    @njit
    def top(xs, k):
        out = np.empty_like(xs)
        for j in range(xs.size):
            out[j] = middle(xs[j], k) - leaf(xs[j], 2)
        return out

    return top


def compile_and_count(monkeypatch, enabled: bool):
    """Run a fresh kernel with the fix on or off; count the scopes numba copies and the calls it inlines."""
    monkeypatch.setattr(inline_copy, "ENABLED", enabled)
    scopes, inlines, depth = [], [], [0]
    deepcopy_scope, inline_ir = ir.Scope.__deepcopy__, inline_closurecall.InlineWorker.inline_ir

    def counting_deepcopy(self, memo):  # a function's scope, not the parent scope it copies along
        depth[0] += 1
        out = deepcopy_scope(self, memo)
        depth[0] -= 1
        if depth[0] == 0 and all(out is not seen for seen in scopes):
            scopes.append(out)
        return out

    def counting_inline_ir(self, *args, **kwargs):
        inlines.append(1)
        return inline_ir(self, *args, **kwargs)

    monkeypatch.setattr(ir.Scope, "__deepcopy__", counting_deepcopy)
    monkeypatch.setattr(inline_closurecall.InlineWorker, "inline_ir", counting_inline_ir)
    kernel = nested_inlined_kernel()
    xs = np.random.default_rng(3).integers(-50, 50, 200)
    result = kernel(xs, 9)
    monkeypatch.undo()
    return result, kernel.py_func(xs, 9), len(scopes), len(inlines)


def test_the_fix_is_installed_on_the_pinned_numba():
    assert inline_copy.INSTALLED, "numba's inlining internals changed: re-read ludo_env/engine/inline_copy.py"
    assert inline_closurecall.InlineWorker.inline_ir is inline_copy._inline_ir


def test_a_kernel_computes_the_same_with_and_without_the_fix_and_copies_one_scope_per_callee_copy(monkeypatch):
    with_fix, python, scopes_with, inlines_with = compile_and_count(monkeypatch, enabled=True)
    without, _, scopes_without, inlines_without = compile_and_count(monkeypatch, enabled=False)
    np.testing.assert_array_equal(with_fix, python)
    np.testing.assert_array_equal(without, python)
    assert inlines_with == inlines_without > 0
    # inline_ir copies the callee twice (a working copy and an untouched one): one scope each.
    assert scopes_with <= 2 * inlines_with < scopes_without


@pytest.mark.parametrize("missing", ["inline_ir", "scope_fields"])
def test_a_numba_with_other_internals_is_left_as_it_is(monkeypatch, missing):
    monkeypatch.delattr(ir.Scope, "__deepcopy__")  # numba as shipped, before install()
    monkeypatch.setattr(inline_copy, "INSTALLED", False)
    assert inline_copy._numba_is_as_read(), "the pinned numba is the one the module reads"
    inline_ir = inline_closurecall.InlineWorker.inline_ir
    if missing == "inline_ir":
        monkeypatch.setattr(inline_copy, "_numba_inline_ir", lambda self, caller_ir, block, i: None)
    else:
        monkeypatch.setattr(ir.Scope, "__init__", lambda self, parent, loc: setattr(self, "parent", parent))
    assert inline_copy._numba_is_as_read() is False
    assert inline_copy.install() is False
    assert inline_closurecall.InlineWorker.inline_ir is inline_ir and "__deepcopy__" not in ir.Scope.__dict__
