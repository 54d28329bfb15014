"""Compile time of programs built from many pads and strided slices (issue 19).

The gradient of an overlapping strided window (``lax.reduce_window``: a pad and one strided slice
per window tap, the forward recomputed inside the backward kernel) clamps its loads with nested
max/min of index expressions. SymPy's own ``Max``/``Min`` searched the pairwise relations of
their arguments on each of them (about 48 s to lower a (5, 6) max pool's gradient, 106 s for a
two-axis argmax ``lax.reduce``); ``intexpr.IMax``/``IMin`` decide by interval arithmetic on the
index bounds (``intexpr.index_bounds``) instead. Here: their algebra against Python's, and the
lowering of those gradients within a loose time bound (it takes about a second now), one of them
compiled and run against JAX.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

import functx
import functx.lax as lax
import functx.numpy as fnp
from functx.lowering import loopir, lower, schedule
from functx.lowering.cpp import program as cpp_program
from functx.lowering.intexpr import FloorDiv, IMax, IMin, ModI, index_bounds
from functx.lowering.loopir import guard_clamp, sym

I, J = sym("i0"), sym("i1")


def test_index_max_min_simplify_what_the_bounds_prove():
    assert IMax(0, I) == I and IMin(0, I) == 0  # loop variables are non-negative
    assert IMax(I + 1, I) == I + 1 and IMin(I + 1, I) == I
    assert IMax(2 * I, I) == 2 * I and IMax(3, 5, 4) == 5 and IMin(3, 5) == 3
    assert IMin(IMin(I, 3), 2) == IMin(I, 2)  # flattened, numbers folded
    assert IMax(I, J) == IMax(J, I) and isinstance(IMax(I, J), IMax)
    assert isinstance(IMin(4, I - 1), IMin)  # undecided: kept
    assert IMax(I, J).subs(J, I) == I  # rebuilt through IMax on substitution
    assert guard_clamp(I + 2, lo=0) == I + 2  # no clamp needed: no guard
    assert isinstance(guard_clamp(I - 1, 0, 4), loopir.Guard)


def test_index_bounds_hold_and_max_min_agree_with_python():
    exprs = [
        I - 3,
        2 * I - J + 1,
        IMin(4, I - 1),
        IMax(0, IMin(4, 2 * I - 1)),
        ModI(3 * I + J, 4) - 2,
        FloorDiv(I + 5, 3) - J,
    ]
    for e in exprs:
        lo, hi = index_bounds(e)
        for a, b in itertools.product(range(7), range(5)):
            v = int(e.xreplace({I: a, J: b}))
            assert lo <= v <= hi, (e, a, b)
    for e, f in itertools.product(exprs, repeat=2):
        for ours, theirs in ((IMax(e, f), max), (IMin(e, f), min)):
            for a, b in ((0, 0), (1, 3), (2, 0), (3, 1), (5, 2), (6, 4)):
                s = {I: a, J: b}
                assert int(ours.xreplace(s)) == theirs(int(e.xreplace(s)), int(f.xreplace(s)))


def _pool_grad(u):
    return (lax.reduce_window(u, -fnp.inf, lax.max, (3, 3), (2, 2), "SAME") ** 2).sum()


def _argmax_pairs(x):
    def comb(a, b):
        pick = a[0] >= b[0]
        return lax.select(pick, a[0], b[0]), lax.select(pick, a[1], b[1])

    iota = np.broadcast_to(np.arange(5.0), x.shape)
    r = lax.reduce((x, iota * x), (-np.inf, 0.0), comb, (0, 1))
    return r[0] + r[1]


@pytest.mark.parametrize(
    "f, arg",
    [
        (_pool_grad, np.arange(30, dtype=np.float32).reshape(5, 6) * 0.37 % 3.1),
        (_argmax_pairs, np.array([[1.0, 3.0, 3.0, 2.0, 3.0], [0.0, 5.0, 1.0, 5.0, 2.0]])),
    ],
    ids=["strided_max_pool", "two_axis_argmax"],
)
def test_gradient_of_strided_windows_lowers_quickly(f, arg):
    # lowering and rendering only (no gcc): ~1 s each now, 48 s and 106 s before
    closed = functx.make_jaxpr(functx.grad(f))(arg)
    t0 = time.perf_counter()
    g = lower.lower_jaxpr(closed)
    kernels = schedule.schedule(g)
    src = cpp_program.CppProgram(g, kernels).sources()
    assert time.perf_counter() - t0 < 10.0
    assert len(kernels) == 1 and "".join(src).count("\n") < 5000


def test_strided_max_pool_gradient_under_jit_matches_jax():
    jax = pytest.importorskip("jax")
    jnp, jlax = jax.numpy, jax.lax
    x = np.arange(30, dtype=np.float32).reshape(5, 6) * 0.37 % 3.1
    want = jax.grad(
        lambda u: (jlax.reduce_window(u, -jnp.inf, jlax.max, (3, 3), (2, 2), "SAME") ** 2).sum()
    )(x)
    got = functx.jit(functx.grad(_pool_grad))(x)
    assert got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-6)
