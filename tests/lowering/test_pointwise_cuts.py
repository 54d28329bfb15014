"""Pointwise C++ kernels whose last-axis index sits in clamps or divisions (concatenate and pad
along the last axis, head transposes) cut the last axis where the clamps change and walk each
piece in runs of the divisor (``functx/lowering/cpp/pointwise.py``, ``_segmented``): the values
are the plain loop's, checked against JAX's ``jit``."""

import numpy as np
import pytest

import functx
import functx.numpy as fnp

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

RNG = np.random.default_rng(0)


def _heads(np_):
    def f(a, b, ct):
        def merge(x):
            return x.transpose(0, 2, 1, 3).reshape(2, 16, 24)

        third = ct.transpose(0, 3, 1, 2).reshape(2, 16, 24)
        return np_.concatenate([merge(a), merge(b) * 2.0, third], -1)

    return f


def test_concat_of_head_transposes_is_cut_into_runs():
    """The GPT block's q/k/v gradient: three head-transposed pieces, one of them transposed."""
    a, b = (RNG.standard_normal((2, 3, 16, 8)).astype(np.float32) for _ in range(2))
    ct = RNG.standard_normal((2, 3, 8, 16)).astype(np.float32)
    jf = functx.jit(_heads(fnp))
    assert "cut at [24, 48], in runs of 8" in jf.lower(a, b, ct).as_text()
    got = jf(a, b, ct)
    want = jax.jit(_heads(jnp))(a, b, ct)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_pad_last_axis_and_cuts_off_the_runs():
    """A pad of the last axis is cut at its edges (runs of 1); a pad of 3 before head-merged
    rows of 8 is not (the cut at 3 is no multiple of 8): that kernel keeps its plain loop."""
    x = RNG.integers(-50, 50, (70, 40)).astype(np.int32)
    a = RNG.standard_normal((2, 3, 16, 8)).astype(np.float32)

    def f(np_):
        def g(x, a):
            merged = a.transpose(0, 2, 1, 3).reshape(2, 16, 24)
            return np_.pad(x, ((0, 0), (3, 5))) + 1, np_.pad(merged, ((0, 0), (0, 0), (3, 0)))

        return g

    jf = functx.jit(f(fnp))
    src = jf.lower(x, a).as_text()
    assert src.count("cut at") == 1 and "cut at [3, 43], in runs of 1" in src
    for got, want in zip(jf(x, a), jax.jit(f(jnp))(x, a)):
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_linear_coefficients_of_index_expressions_agree_with_differentiation():
    # the transpose test (``_transposed_axis``) reads the coefficients term by term: what
    # SymPy's derivative by each loop variable says, or None where that is not an integer
    from test_intexpr import SP, to_sympy  # (SymPy: the reference)

    from functx.lowering.cpp.pointwise import _linear_coefs
    from functx.lowering.intexpr import Int
    from functx.lowering.loopir import FloorDiv, IMax, ModI, sym

    i, j, k, r = sym("i0"), sym("i1"), sym("i2"), sym("r0")
    exprs = [
        Int(5),
        3 * i + 1152 * j - k + 7,
        2 * (i + 3) + 64 * r,
        FloorDiv(j, 4) * 256 + k,
        ModI(i, 6) + 16 * k,
        i * j + k,
        IMax(0, k - 1) + 4 * i,
        FloorDiv(r, 3) + 8 * j,
    ]
    for e in exprs:
        diffs = [to_sympy(e).diff(SP[v.name]) for v in (i, j, k)]
        want = [int(d) for d in diffs] if all(d.is_Integer for d in diffs) else None
        assert _linear_coefs(e, [i, j, k]) == want, e
