"""Compiled float reductions keep their accuracy whatever their length (issue 16).

The C++ backend sums float32 rows in blocks (SIMD lanes within a block, the blocks' sums in
double), and float32 cumulative sums carry their prefix in double; the Triton backend adds its
chunks' tree sums in float64. Each result is compared with float64 (NumPy) and must be within a
small factor of JAX's float32 error (and of eager functx's): with one float32 accumulator per
SIMD lane, a sum of 2**29 ones was 2**27 and the variance of data offset by 1e6 was off by 3000x.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import example, given, strategies as st

import functx
import functx.lax as flax
import functx.nn as fnn
import functx.numpy as fnp
from functx.errors import FunctxOverflowError

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

F32 = np.float32
EPS = float(np.finfo(F32).eps)


def _err(got, want):
    return float(np.max(np.abs(np.asarray(got, np.float64) - want)))


def _check(fx_fn, jax_fn, x, floor):
    """functx.jit's float32 error against float64 is at most 4x the larger of JAX's and eager
    functx's, or ``floor`` (a few rounding units of the result)."""
    want = np.asarray(jax_fn(x.astype(np.float64)), np.float64)
    got = np.asarray(functx.jit(fx_fn)(x))
    assert got.dtype == F32
    ref_err = max(_err(jax.jit(jax_fn)(x), want), _err(fx_fn(x), want))
    assert _err(got, want) <= 4 * ref_err + floor, (_err(got, want), ref_err, floor)


def _ulps(v):
    return 4 * float(np.max(np.spacing(np.abs(np.asarray(v, F32)))))


# --- C++: sums, means, variances, logsumexp, dot-like sums -----------------------------------
def test_sum_of_2_29_ones_is_exact():
    """A broadcast scalar: the kernel reads one element 2**29 times (no 2 GiB buffer)."""
    n = 2**29
    got = functx.jit(lambda a: fnp.sum(fnp.broadcast_to(a, (n,))))(np.ones((), F32))
    assert float(got) == n
    assert float(jax.jit(lambda a: jnp.sum(jnp.broadcast_to(a, (n,))))(np.ones((), F32))) == n


def test_variance_of_data_offset_by_1e6_matches_jax():
    """The issue's case: 1796 (or worse) before, 0.502 in float64; JAX's float32 mean is one ulp
    off, and its variance carries that ulp squared, as ours does."""
    x = (1e6 + np.sin(np.arange(100000))).astype(F32)
    true = x.astype(np.float64).var()
    got = float(functx.jit(fnp.var)(x))
    theirs = float(jax.jit(jnp.var)(x))
    assert abs(got - true) <= 1.5 * abs(theirs - true) + 1e-3, (got, theirs, true)
    m = float(functx.jit(fnp.mean)(x))
    assert abs(m - x.astype(np.float64).mean()) <= float(np.spacing(F32(1e6)))


def test_long_rows_and_columns_and_several_reduced_axes():
    rng = np.random.default_rng(0)
    x = (rng.random((3, 70000)) + 1e3).astype(F32)
    _check(lambda a: fnp.sum(a, axis=1), lambda a: jnp.sum(a, axis=1), x, _ulps(3e3 * 7e4))
    _check(lambda a: fnp.mean(a, axis=1), lambda a: jnp.mean(a, axis=1), x, _ulps(1e3))
    y = (rng.random((40, 300, 7)) + 100).astype(F32)
    for ax in [(0, 1), (1, 2), (0, 2), None, 0]:
        _check(
            lambda a: fnp.sum(a, axis=ax),
            lambda a: jnp.sum(a, axis=ax),
            y,
            _ulps(np.abs(y.astype(np.float64)).sum(axis=ax)),
        )


# (a few lengths, so that the examples share compiled programs)
@given(
    st.sampled_from([1, 129, 4097, 100_000]),
    st.integers(0, 2**32 - 1),
    st.sampled_from([0.0, 1.0, 100.0, 1e4, 1e6]),
    st.sampled_from(["sum", "mean", "var", "lse", "dot", "softmax_sum"]),
)
@example(100_000, 0, 1e6, "var")
@example(100_000, 1, 1e4, "sum")
@example(100_000, 2, 100.0, "dot")
@example(100_000, 3, 1e6, "mean")
@example(100_000, 4, 1e4, "lse")
def test_float32_reductions_error_does_not_grow_with_length(n, seed, offset, kind):
    rng = np.random.default_rng(seed)
    x = (offset + rng.standard_normal(n)).astype(F32)
    w = rng.standard_normal(n).astype(F32)
    fns = {
        "sum": (fnp.sum, jnp.sum),
        "mean": (fnp.mean, jnp.mean),
        "var": (fnp.var, jnp.var),
        "lse": (fnn.logsumexp, jax.nn.logsumexp),
        "dot": (lambda a: fnp.sum(a * w), lambda a: jnp.sum(a * w.astype(a.dtype))),
        # softmax of centred data: its sum of exponentials, then the normalised values
        "softmax_sum": (lambda a: fnn.softmax(a - offset), lambda a: jax.nn.softmax(a - offset)),
    }
    fx_fn, jax_fn = fns[kind]
    xd = x.astype(np.float64)
    floor = {
        "sum": _ulps(np.abs(xd).sum()),
        "mean": _ulps(np.abs(xd).mean()),
        # the float32 mean is rounded to its ulp u; the variance carries u**2
        "var": float(np.spacing(F32(abs(xd.mean())))) ** 2 * 4 + _ulps(xd.var()),
        "lse": _ulps(offset + np.log(n) + 5),
        "dot": _ulps(np.abs(xd * w).sum()),
        "softmax_sum": 64 * EPS,
    }[kind]
    _check(fx_fn, jax_fn, x, floor)


def test_long_vector_dot_products():
    """jnp.dot of two float32 vectors of 2**22 (a generated dot product: BLAS from 2**24 on):
    20x JAX's error with one float accumulator per lane. (NumPy's sdot, eager functx's, is
    about as poor, so JAX alone sets the bound.)"""
    rng = np.random.default_rng(0)
    x, y = (rng.random((2, 2**22)) + 1).astype(F32)
    want = x.astype(np.float64) @ y.astype(np.float64)
    got = float(functx.jit(fnp.dot)(x, y))
    theirs = float(jax.jit(jnp.dot)(x, y))
    assert abs(got - want) <= 4 * abs(theirs - want) + _ulps(want), (got, theirs, want)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_sums_accumulate_in_float32(dtype):
    """2**15 ones: accumulated in the half type, bfloat16 would stop at 256 and float16 at 2048."""
    x = np.ones(2**15, jnp.dtype(dtype))
    got = functx.jit(fnp.sum)(x)
    assert np.dtype(got.dtype) == np.dtype(x.dtype)
    assert float(np.asarray(got, np.float32)) == 2**15


def test_cumulative_sum_does_not_saturate():
    """jnp.cumsum of 2**24 + 2**16 float32 ones: JAX's ends at the length (a tree scan); a
    float32 running sum stops at 2**24."""
    n = 2**24 + 2**16
    got = np.asarray(functx.jit(fnp.cumsum)(np.ones(n, F32)))
    assert got[-1] == n and got[2**24 + 1] == 2**24 + 2
    rng = np.random.default_rng(0)
    y = (rng.random((5, 3000, 3)) + 10).astype(F32)
    for axis in (0, 1, 2):
        for rev in (False, True):

            def f(a, axis=axis, rev=rev):
                return flax.cumsum(a, axis=axis, reverse=rev) * 2.0

            want = 2.0 * np.asarray(flax.cumsum(y.astype(np.float64), axis=axis, reverse=rev))
            got = np.asarray(functx.jit(f)(y), np.float64)
            np.testing.assert_allclose(got, want, rtol=2 * EPS)


# --- the layer-norm gradient (issue 16, second item) -------------------------------------------
def _layer_norm(m):
    def f(x):
        mu = m.mean(x, axis=-1, keepdims=True)
        var = m.mean((x - mu) ** 2, axis=-1, keepdims=True)
        return (x - mu) / m.sqrt(var + 1e-5)

    return f


def test_layer_norm_gradient_on_offset_data_as_accurate_as_jax():
    """Rows of 1024 offset by 100: the gradient subtracts row means of O(1) terms, so the row
    sums' rounding shows; summed in 8 SIMD lanes of 128 values each it was 1.9x JAX's error, in
    blocks of 128 (16 values a lane) with the blocks' sums in double it is below JAX's."""
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((1024, 1024)) + 100).astype(F32)
    w = rng.standard_normal((1024, 1024)).astype(F32)

    def loss(m, w):
        return lambda x: (_layer_norm(m)(x) * w).sum()

    ref = np.asarray(jax.jit(jax.grad(loss(jnp, w.astype(np.float64))))(x.astype(np.float64)))
    theirs = np.asarray(jax.jit(jax.grad(loss(jnp, w)))(x), np.float64)
    ours = np.asarray(functx.jit(functx.grad(loss(fnp, w)))(x), np.float64)

    def rel(g):
        return np.linalg.norm(g - ref) / np.linalg.norm(ref)

    assert rel(ours) <= 1.1 * rel(theirs), (rel(ours), rel(theirs))
    assert np.abs(ours - theirs).max() <= 2e-5 * np.abs(ref).max()


# --- argmax past 2**31 (issue 16) -------------------------------------------------------------
_R, _C, _AT = 2**15 + 1, 2**16, 12345  # 2**31 + 2**16 elements, the maximum at 2**31 + _AT


def _big(a):
    """An int8 array of 2**31 + 2**16 elements, one 1 at index 2**31 + _AT: computed from
    iotas inside the kernel (no buffer)."""
    r = flax.broadcasted_iota(np.int32, (_R, _C), 0)
    q = flax.broadcasted_iota(np.int32, (_R, _C), 1)
    return (((r == _R - 1) & (q == _AT)).astype(np.int8) + a).reshape(-1)


def test_argmax_past_2_31_with_int64_indices():
    got = functx.jit(lambda a: flax.argmax(_big(a), 0, np.int64))(np.int8(0))
    assert np.dtype(got.dtype) == np.int64 and int(got) == 2**31 + _AT


@pytest.mark.usefixtures("no_x64")
def test_argmax_whose_index_does_not_fit_int32_raises():
    """jnp.argmax's int32 result cannot hold the index: an error naming argmax and the size,
    not a negative index."""
    with pytest.raises(FunctxOverflowError, match=r"argmax.*2147549184 elements.*int32"):
        functx.jit(lambda a: fnp.argmax(_big(a)))(np.int8(0))
    with pytest.raises(FunctxOverflowError, match="argmin"):
        functx.jit(lambda a: fnp.argmin(_big(a)))(np.int8(0))


# --- Triton (in its CPU interpreter): float64 accumulators across chunks ----------------------
def _triton(fn, x, blocks):
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from functx.lowering.triton.program import compile_triton
    from functx.transforms import passes

    exe = compile_triton(passes.simplify(functx.make_jaxpr(fn)(x)), blocks)
    return exe, [np.asarray(t.detach().cpu().numpy()) for t in exe(x)]


@pytest.mark.parametrize("split", [False, True], ids=["looped", "split"])
def test_triton_sums_compensate_across_chunks(monkeypatch, split):
    """A row whose first chunk holds 1e8 and whose last holds -1e8, with 24 chunks summing to 4
    between: plain float32 chunk-by-chunk accumulation rounds each 1e8 + 4 (spacing 8) to even
    and loses all of the 96; the compensated running sum (and float64 partials when the row is
    split) keeps it exact (each chunk's own tree sum is exact here)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    from functx.lowering.triton.blocks import Blocks

    blocks = Blocks(
        pointwise=64,
        reduce_inner=16,
        scan=16,
        elems=256,
        persistent=16,
        min_programs=4 if split else 1,
    )
    row = np.full(26 * 16, 0.25, F32)
    row[:16], row[-16:] = 0, 0
    row[0], row[-16] = 1e8, -1e8
    x = row[None]
    exe, (got,) = _triton(lambda a: fnp.sum(a, axis=1), x, blocks)
    assert ("_reduce_part(" in exe.source) == split
    assert re.search(r"\ba\d+_c = tl.where\(.*\(a\d+_t - a\d+\) - a\d+_y", exe.source)
    np.testing.assert_array_equal(got, np.array([96], F32))


def test_triton_welford_accumulates_in_float64(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    from functx.lowering.triton.blocks import Blocks

    blocks = Blocks(pointwise=64, reduce_inner=16, scan=16, elems=256, persistent=16)
    rng = np.random.default_rng(0)
    x = (1e6 + rng.standard_normal((2, 800))).astype(F32)
    exe, (got,) = _triton(lambda a: fnp.var(a, axis=1), x, blocks)
    assert "Welford" in exe.source
    # the running mean of the shifted values and the second moment: float64 across chunks
    assert re.search(r"\bw\d+ = tl.full\(\[\d+, 1\], 0, tl.float64\)", exe.source)
    assert re.search(r"\ba\d+ = tl.full\(\[\d+, 1\], 0, tl.float64\)", exe.source)
    want = x.astype(np.float64).var(axis=1)
    theirs = np.asarray(jax.jit(lambda a: jnp.var(a, axis=1))(x), np.float64)
    assert np.abs(got - want).max() <= 4 * np.abs(theirs - want).max() + 4e-3
