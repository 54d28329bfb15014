"""C++ kernel shapes chosen for speed give the values the plain kernels give (issues 19 and 20).

Reductions over leading axes with the last axis kept walk the input row by row, a block of
outputs at a time (``reduce._render_columns``): every reduction kind, NaN and signed zeros,
float32 sums of long columns (a float block sum, the blocks in double), an epilogue (mean);
reduced axes a row stride apart walk one flat row index (an affine row offset: no gathers).
The prelude's branch-free helpers (fx_max/fx_min, fx_idiv/fx_irem, fx_convert float->int) keep
their results on the edge cases, compiled against eager.
"""

from __future__ import annotations

import numpy as np
import pytest
from cpputil import calls

import functx
import functx.numpy as fnp
from functx import lax


def _cols(x, b, i):
    return (
        x.sum((0, 1)),
        x.max(0),
        x.min(0),
        fnp.mean(x, (0, 1)),
        b.any(0),
        b.all(0),
        i.sum(0),
        i.prod(0),
        i.max((0, 1)),
    )


def test_leading_axis_reductions_walk_rows_and_match_eager():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 5, 40)).astype(np.float32)
    x[0, 0, 1] = np.nan  # NaN wins max and min
    x[:, :, 2] = -0.0  # all -0.0: max -0.0, min -0.0
    x[:, :, 3] = -0.0
    x[1, 2, 3] = 0.0  # one +0.0: max +0.0, min -0.0
    b = rng.random((3, 5, 40)) < 0.7
    i = rng.integers(-3, 4, (3, 5, 40)).astype(np.int32)
    exe = functx.jit(_cols).lower(x, b, i).executable
    # (reductions of one shape and axes share a kernel)
    assert exe.source.count("columns at a time") == exe.source.count(": reduce axes") == 2
    got = functx.jit(_cols)(x, b, i)
    want = _cols(fnp.asarray(x), fnp.asarray(b), fnp.asarray(i))
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype
        if g.dtype == np.float32:
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)
            assert np.array_equal(np.signbit(g), np.signbit(w))
        else:
            np.testing.assert_array_equal(g, w)
    mx, mn = np.asarray(got[1]), np.asarray(got[2])
    assert np.isnan(mx[0, 1]) and np.isnan(mn[0, 1])
    assert np.signbit(mx[0, 2]) and not np.signbit(mx[2, 3]) and np.signbit(mn[2, 3])


def _bias_grads(x, w):
    # (the GPT block's bias gradients: a whole (B, T) of rows; a transposed and a sliced
    # operand whose reduced axes do not lie a row apart)
    return (x * w).sum((0, 1)), x.transpose(1, 0, 2).sum((0, 1)) * 2, x[:, 1:].max((0, 1))


def _row_extremes(x, m):
    y = fnp.where(m, x * 2, -fnp.inf)  # (a masked scale, as a softmax's)
    return y.max(-1), (x * 2).min(-1), x - x.max(-1, keepdims=True), fnp.argmax(x, -1)


def test_row_max_min_zero_sign_and_nan_in_one_loop():
    # 37 elements a row: zeros in the vector lanes and in the remainder; which zero wins a tie
    # (max +0, min -0, as JAX whatever the order) is a flag of the reduction's own loop
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((7, 37)).astype(np.float32)
    x[0] = -0.0  # all -0: max -0, min -0
    x[1] = -0.0
    x[1, 33] = 0.0  # one +0 in the remainder: max +0
    x[2] = -np.abs(x[2])
    x[2, 5], x[2, 20] = 0.0, -0.0  # max +0
    x[3] = np.abs(x[3])
    x[3, 0], x[3, 17] = 0.0, -0.0  # min -0
    x[4, :5] = 0.0
    x[4, 36] = np.nan  # NaN wins
    x[5] = 0.0
    x[5, 16] = -0.0  # min -0, max +0
    m = rng.random((7, 37)) < 0.8
    m[:6] = True
    exe = functx.jit(_row_extremes).lower(x, m).executable
    kernels = exe.source[exe.source.index("// kernel 0:") :]
    assert kernels.count("_z |= (") == 3 and "== 0) {" not in kernels
    got = functx.jit(_row_extremes)(x, m)
    jnp, xj = jax.numpy, jax.numpy.asarray(x)
    y = jnp.where(m, xj * 2, -jnp.inf)
    want = (y.max(-1), (xj * 2).min(-1), xj - xj.max(-1, keepdims=True), jnp.argmax(xj, -1))
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
        if g.dtype == np.float32:  # (a NaN's sign is not specified)
            np.testing.assert_array_equal(np.signbit(g) | np.isnan(g), np.signbit(w) | np.isnan(w))


def test_column_rows_as_one_flat_index():
    # reduced axes a row stride apart in every operand read: the row offset is stride * jf
    # (affine; the division and remainder of jf made GCC gather every other row)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 5, 40)).astype(np.float32)
    w = rng.standard_normal((1, 5, 40)).astype(np.float32)
    f = lambda x: _bias_grads(x, 1.5)  # noqa: E731
    src = functx.jit(f).lower(x).executable.source
    assert src.count("columns at a time") == 3
    assert src.count("(jf / ") == 2  # the transposed and the sliced operand keep their axes
    src = functx.jit(_bias_grads).lower(x, w).executable.source  # w broadcast along axis 0
    assert src.count("(jf / ") == 3
    for got, want in (
        (functx.jit(f)(x), f(x.astype(np.float64))),
        (functx.jit(_bias_grads)(x, w), _bias_grads(x.astype(np.float64), w)),
    ):
        for g, v in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), v, rtol=1e-5, atol=1e-5)


def test_long_float32_column_sum_stays_accurate():
    # 3 * 2**16 offset values per column: one float accumulator per column would drift by
    # thousands of ulp; the float blocks summed in double stay within a few
    x = (np.random.default_rng(1).random((3 * 2**16, 16)) + 1000).astype(np.float32)
    got = np.asarray(functx.jit(lambda a: a.sum(0))(x), np.float64)
    want = x.astype(np.float64).sum(0)
    assert np.max(np.abs(got - want) / want) < 4 * np.finfo(np.float32).eps


def _edges(f, i, z):
    return (
        lax.max(f, f[::-1]),
        lax.min(f, f[::-1]),
        lax.convert_element_type(f * 3e9, np.int32),
        lax.convert_element_type(f * 1e20, np.int64),
        lax.convert_element_type(f * 300, np.uint8),
        lax.div(i, z),
        lax.rem(i, z),
    )


def test_branch_free_prelude_helpers_keep_edge_cases():
    f = np.array(
        [np.nan, -0.0, 0.0, 1.5, -1.5, np.inf, -np.inf, 2.0, -0.0, np.nan, 0.7, -3.2],
        np.float32,
    )
    i = np.array([7, -7, 0, 5, -(2**31), -(2**31), 9, -9, 3, 2**31 - 1, 1, -1], np.int32)
    z = np.array([0, 0, 0, -1, -1, 1, 2, -2, 3, 0, -1, 1], np.int32)
    got = functx.jit(_edges)(f, i, z)
    want = _edges(fnp.asarray(f), fnp.asarray(i), fnp.asarray(z))
    for g, w in zip(got, want):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
        if g.dtype == np.float32:
            assert np.array_equal(np.signbit(g), np.signbit(w))


def _transposes(a, b, c):
    return a.T + 1, b.transpose(0, 2, 1) * c, (a.T * 2).astype(np.int32), b.transpose(2, 0, 1)


def test_transpose_copies_are_tiled_and_exact():
    # sizes that are not multiples of the tiles; a broadcast operand; a cast
    rng = np.random.default_rng(3)
    a = rng.standard_normal((130, 150)).astype(np.float32)
    b = rng.standard_normal((3, 40, 150)).astype(np.float32)
    c = rng.standard_normal((150, 1)).astype(np.float32)
    exe = functx.jit(_transposes).lower(a, b, c).executable
    assert exe.source.count("a transpose)") >= 3
    got = functx.jit(_transposes)(a, b, c)
    want = _transposes(a, b, c)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == w.dtype
        np.testing.assert_array_equal(np.asarray(g), w)


def test_reduction_of_a_transposed_operand_keeps_the_row_loop():
    a = np.random.default_rng(4).standard_normal((40, 30)).astype(np.float32)
    f = lambda a: (a.T.sum(0), a.sum(0))  # noqa: E731
    src = functx.jit(f).lower(a).executable.source
    assert src.count("columns at a time") == 1  # (a.sum(0) only)
    got = functx.jit(f)(a)
    np.testing.assert_allclose(np.asarray(got[0]), a.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(got[1]), a.sum(0), rtol=1e-5, atol=1e-5)


def test_products_without_a_blas_run_the_prelude_loops(monkeypatch):
    # a process whose NumPy brings no cblas_sgemm (fx_sgemm null) computes the products through
    # the prelude's fx_gemm_loops: plain and transposed operands, batched, a product folded into
    # an update (U + alpha * product), against NumPy
    from functx.lowering import runtime

    monkeypatch.setattr(runtime, "gemm_pointers", lambda: (0, 0))
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 40, 64)).astype(np.float32)
    b = rng.standard_normal((3, 48, 64)).astype(np.float32)
    w = rng.standard_normal((64, 64)).astype(np.float32)

    def products(a, b, w):
        return (
            a @ b.transpose(0, 2, 1),
            a.transpose(0, 2, 1) @ a,
            a[0] @ b[1].T,
            w - 0.5 * (a[1].T @ a[2]),
        )

    src = functx.jit(products).lower(a, b, w).as_text()
    assert src.count("piece(s) of C's") == 4 and src.count(", nullptr, (float)") == 3
    want = products(*(x.astype(np.float64) for x in (a, b, w)))
    for got, v in zip(functx.jit(products)(a, b, w), want):
        np.testing.assert_allclose(np.asarray(got), v, rtol=2e-5, atol=2e-5)


def test_a_stored_value_read_by_its_kernel_is_computed_once():
    def f(x):  # both outputs in one kernel: the second reads the first at the same index
        y = fnp.exp(x)
        return y, fnp.log1p(y) * 2.0

    x = np.linspace(-1, 1, 64).astype(np.float32)
    lowered = functx.jit(f).lower(x)
    assert lowered.kernel_count() == 1
    assert calls(lowered.as_text(), "exp") == 1  # (it was computed again for the second)
    for a, b in zip(lowered.compile()(x), f(fnp.asarray(x))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
