"""lax.reduce (eager, vmap, jit) against JAX; vectorised math in generated code; variance
accuracy."""

import os
import subprocess

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import functx
import functx.numpy as fnp
from functx import lax
from functx.lowering.cpp import dot


def _argmax_pair(a, b):
    (va, ia), (vb, ib) = a, b
    pick = (vb > va) | ((vb == va) & (ib < ia))
    return lax.select(pick, vb, va), lax.select(pick, ib, ia)


def _argmax_pair_jax(a, b):
    import jax.numpy as jnp

    (va, ia), (vb, ib) = a, b
    pick = (vb > va) | ((vb == va) & (ib < ia))
    return jnp.where(pick, vb, va), jnp.where(pick, ib, ia)


@pytest.mark.parametrize("backend", ["eager", "cpp"])
def test_reduce_custom_combine_matches_jax(backend):
    import jax

    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 9)).astype(np.float32)
    idx = np.broadcast_to(np.arange(9, dtype=np.int32), (6, 9))

    def f(x, idx):
        return lax.reduce((x, idx), (-np.inf, np.int32(0)), _argmax_pair, (1,))

    run = functx.jit(f) if backend == "cpp" else f
    got = run(x, idx)
    want = jax.lax.reduce((x, idx), (np.float32(-np.inf), np.int32(0)), _argmax_pair_jax, (1,))
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))
    np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]))


def test_reduce_monoid_is_builtin_and_differentiates():
    import jax

    x = np.random.default_rng(1).standard_normal((4, 5))
    jaxpr = functx.make_jaxpr(lambda x: lax.reduce(x, 0.0, lax.add, (0,)))(x)
    assert [e.prim.name for e in jaxpr.eqns] == ["reduce_sum"]
    g = functx.grad(lambda x: lax.reduce(x, -np.inf, lax.max, (1,)).sum())(x)
    gj = jax.grad(lambda x: jax.lax.reduce(x, -np.inf, jax.lax.max, (1,)).sum())(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(gj))


def test_reduce_custom_combine_under_vmap_and_grad():
    x = np.random.default_rng(2).standard_normal((3, 4, 5)).astype(np.float32)
    idx = np.broadcast_to(np.arange(5, dtype=np.int32), (4, 5))
    f = lambda x: lax.reduce((x, idx), (-np.inf, np.int32(0)), _argmax_pair, (1,))  # noqa: E731
    out = functx.vmap(f)(x)
    np.testing.assert_array_equal(np.asarray(out[1]), x.argmax(-1))
    # differentiable (the value's tangent follows the selected element; the int index has none):
    # the gradient of the row maxima is one-hot at the argmax (JAX 0.10.2's own jvp of a reduce
    # with an integer operand fails on its float0 tangent; tests/control/test_generic_reduce_grad.py
    # compares with JAX where it runs)
    g = functx.grad(lambda x: f(x)[0].sum())(x[0])
    np.testing.assert_array_equal(np.asarray(g), np.eye(5, dtype=np.float32)[x[0].argmax(-1)])


_VECTORISED = {
    "gelu": lambda x: functx.nn.gelu(x),
    "softmax": lambda x: functx.nn.softmax(x),
    "argmax_logsumexp": lambda x: (functx.numpy.argmax(x, axis=-1), functx.nn.logsumexp(x, -1)),
    # complex products (the schoolbook formula: C's complex `*` calls __mulsc3 on a NaN result)
    "complex_product": lambda x: lax.complex(x, -x) * lax.complex(2 * x, x),
}


@pytest.mark.parametrize("name", list(_VECTORISED))
def test_generated_loops_vectorise(name, tmp_path):
    """The inner loops of GELU (tanh), softmax (exp, max and sum reductions) and argmax (the
    extreme value, then the first index holding it) are vectorised: the compiler's own report
    says so (functx's exp/log/tanh are branch-free polynomials)."""
    from functx.lowering import cache

    x = np.ones((64, 1024), np.float32)
    fn = _VECTORISED[name]
    src = functx.jit(fn).lower(x).executable.source
    path = tmp_path / "k.cpp"
    path.write_text(src)
    proc = subprocess.run(
        [
            cache.compiler(),
            *cache.FLAGS,
            "-fopt-info-vec-optimized",
            str(path),
            "-o",
            str(tmp_path / "k.so"),
            *cache.LIBS,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    body_start = src.index('extern "C" int fx_run')
    first_line = src[:body_start].count("\n") + 1
    vectorised = [
        int(m.split(":")[1])
        for m in proc.stderr.splitlines()
        if "loop vectorized" in m and m.startswith(str(path))
    ]
    inner_loops = [
        i + 1
        for i, line in enumerate(src.splitlines())
        if i + 1 > first_line
        and "for (int64_t j0" in line
        or (i + 1 > first_line and "for (int64_t i1" in line)
    ]
    assert inner_loops, src[body_start:]
    # every inner loop is reported vectorised (the report names the loop, its pragma line or
    # one of the index bindings at the top of its body)
    for ln in inner_loops:
        assert set(range(ln - 1, ln + 3)) & set(vectorised), (ln, vectorised, proc.stderr[-2000:])


def test_complex_sums_over_leading_axes_walk_rows():
    """A complex sum over a leading axis (the FFT convolution gradient's sum over the batch of
    spectra) runs as a column reduction, a block of outputs at a time over contiguous rows, and
    gives NumPy's sums."""
    rng = np.random.default_rng(3)
    for dt in (np.complex64, np.complex128):
        z = (rng.standard_normal((8, 300)) + 1j * rng.standard_normal((8, 300))).astype(dt)
        f = functx.jit(lambda z: fnp.sum(z * z, axis=0))
        assert "columns at a time" in f.lower(z).executable.source
        got = np.asarray(f(z))
        assert got.dtype == dt
        want = (z.astype(np.complex128) ** 2).sum(0)
        np.testing.assert_allclose(got, want, rtol=1e-5 if dt == np.complex64 else 1e-12)


def test_variance_of_offset_data_as_accurate_as_jax():
    """Two-pass variance (mean first, then centred squares, fused in one kernel) keeps float32
    data with a large offset accurate."""
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(0)
    x = (1e4 + rng.standard_normal((64, 4096))).astype(np.float32)
    exact = x.astype(np.float64).var(axis=1)
    ours = np.asarray(functx.jit(lambda x: fnp.var(x, axis=1))(x), np.float64)
    theirs = np.asarray(jax.jit(lambda x: jnp.var(x, axis=1))(x), np.float64)
    assert np.abs(ours - exact).max() <= max(np.abs(theirs - exact).max(), 1e-3)


def test_cache_dir_env_is_used(tmp_path, monkeypatch):
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))
    f = functx.jit(lambda x: x * 3.0 + 0.25)
    np.testing.assert_allclose(
        np.asarray(f(np.arange(5, dtype=np.float32))), np.arange(5) * 3.0 + 0.25
    )
    assert any(p.endswith(".so") for p in os.listdir(tmp_path))


def test_parallel_loops_are_decided_when_generated():
    """Loop sizes are static, so whether a loop runs on several threads is decided in the
    generated code: a small program opens no OpenMP region (libgomp's call costs about 0.25 us
    even when its ``if`` clause is false), a large one opens it unconditionally."""

    def program(n):
        src = functx.jit(lambda x: fnp.tanh(x) * 2.0).lower(np.ones(n, np.float32)).as_text()
        return src[src.index('extern "C" int fx_run') :]

    small, large = program(1000), program(1 << 20)
    assert "omp parallel" not in small, small
    pragmas = [ln for ln in large.splitlines() if "omp parallel" in ln]
    assert pragmas and not any("if(" in ln for ln in pragmas), pragmas


def test_narrow_products_keep_infinities_and_nans_in_their_rows():
    """``fx_gemm_narrow`` zero-pads B^T past k and adds the terms of each row of A past its last
    whole vector one by one: an infinity or NaN in one row of A (in that tail or before it) must
    reach that row's outputs as NumPy's do, and no other row's."""
    rng = np.random.default_rng(7)
    a = rng.standard_normal((40, 37)).astype(np.float32)
    b = np.abs(rng.standard_normal((37, 6))).astype(np.float32) + 0.5
    a[3, 36] = np.inf  # in the tail (37 = 2 vectors + 5)
    a[4, 2] = -np.inf
    a[9, 33] = np.nan
    f = functx.jit(lambda a, b: a @ b)
    assert "fx_gemm_narrow<float, 6>" in f.lower(a, b).as_text()
    got = np.asarray(f(a, b))
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
    assert np.isposinf(got[3]).all() and np.isneginf(got[4]).all() and np.isnan(got[9]).all()
    assert np.isfinite(np.delete(got, [3, 4, 9], axis=0)).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_first_index_nan_and_ties_match_jax(op, dtype):
    """The vectorised argmax/argmin: ties give the first index, a NaN wins (the first NaN),
    +0 and -0 tie, rows of infinities."""
    import jax.numpy as jnp

    rng = np.random.default_rng(1)
    x = rng.standard_normal((12, 300)) * 10
    if np.dtype(dtype).kind == "f":
        x[1, 5] = x[1, 9] = np.nan
        x[3, :] = np.inf
        x[4, :] = -np.inf
        x[5, :] = np.nan
        x[6, :] = 0.0
        x[6, 3] = -0.0
    x[2, 7] = x[2, 11] = x[2].max() + 1
    x[7, 20] = x[7, 40] = x[7].min() - 1
    x = x.astype(dtype)
    f = functx.jit(lambda x: getattr(functx.numpy, op)(x, axis=-1))
    np.testing.assert_array_equal(np.asarray(f(x)), np.asarray(getattr(jnp, op)(x, axis=-1)))


def test_two_argmin_passes_in_one_kernel_compile_and_match_jax():
    """A kernel whose second argmin reads the first's index has two index loops: each names
    its hoisted values apart (both were ``hi_0``: a C++ redeclaration; fuzz38's find)."""
    import jax.numpy as jnp

    def f(np_):
        return lambda x: np_.argmin(np_.argmin(x, axis=-1, keepdims=True).astype(x.dtype) * 0.25, 1)

    for shape in [(5, 1), (6, 4, 3)]:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        np.testing.assert_array_equal(np.asarray(functx.jit(f(fnp))(x)), np.asarray(f(jnp)(x)))


@settings(max_examples=12, deadline=None)
@given(
    st.integers(1, 3),
    st.integers(1, 30),
    st.integers(1, 300),
    st.integers(1, 70),
    st.booleans(),
    st.booleans(),
    st.sampled_from([np.float32, np.float64]),
)
@example(2, 13, 300, 37, True, False, np.float32)  # k past one packed block, edge tiles
@example(1, 12, 513, 16, False, True, np.float64)
@example(3, 5, 40, 2, True, True, np.float32)
@example(2, 29, 270, 5, True, True, np.float32)  # few columns, A^T stored: the transposed problem
@example(1, 40, 77, 5, False, False, np.float32)  # few columns: dot products of rows, k's tail
@example(2, 17, 300, 7, False, True, np.float64)
@example(1, 20, 33, 7, False, False, np.float64)
@example(1, 3, 7, 9, False, False, np.float32)  # under 4 rows: the row loops
@example(2, 9, 11, 1, True, True, np.float64)  # one column, A^T stored: rows scaled and added
@example(1, 300, 3500, 1, True, False, np.float32)  # ... cascaded, in blocks over threads
@example(1, 30, 100, 1, False, False, np.float32)  # one column: fx_gemm_narrow, k's tail
def test_generated_matrix_products_match_numpy(bsz, m, k, n, ta, tb, dtype):
    """Products below the BLAS threshold are generated code (the prelude's register-tiled
    ``fx_gemm`` from 4 rows and 2 columns; for fewer columns than a vector holds, vector dot
    products of A's rows, ``fx_gemm_narrow``, or with A stored transposed ``fx_gemm`` on the
    transposed problem; one column with A stored transposed: A's rows scaled and added; row
    loops below): edge tiles (m not a multiple of the tile's rows, n of
    its vectors), k past one packed block (256) or not a whole number of vectors, operands
    stored transposed and batches, against NumPy in float64."""
    rng = np.random.default_rng(bsz * 1000003 + m * 1009 + k * 31 + n)
    a = rng.standard_normal((bsz, k, m) if ta else (bsz, m, k)).astype(dtype)
    b = rng.standard_normal((bsz, n, k) if tb else (bsz, k, n)).astype(dtype)
    dn = (((1 if ta else 2,), (2 if tb else 1,)), ((0,), (0,)))
    f = functx.jit(lambda a, b: lax.dot_general(a, b, dn))
    with pytest.MonkeyPatch.context() as mp:  # (from 2^15 multiply-adds: BLAS, not tested here)
        mp.setattr(dot, "_SMALL_GEMM", 1 << 62)
        src = f.lower(a, b).as_text()
        got = np.asarray(f(a, b))
    lanes = 64 // np.dtype(dtype).itemsize
    narrow = 2 <= n < lanes and m > n
    column = n == 1 and m > 1 and not (dtype == np.float32 and k > 128)  # (not cascaded)
    calls = "fx_gemm_narrow<float" in src or "fx_gemm_narrow<double" in src
    assert calls == ((narrow or column) and not ta), src[-3000:]
    assert ("fx_gemm<" in src) == (m >= 4 and n >= 2 and not narrow or narrow and ta), src[-3000:]
    assert ("xt = x[t];" in src) == (n == 1 and ta), src[-3000:]
    a64 = a.astype(np.float64)
    b64 = b.astype(np.float64)
    want = np.matmul(np.swapaxes(a64, 1, 2) if ta else a64, np.swapaxes(b64, 1, 2) if tb else b64)
    assert got.shape == want.shape and got.dtype == dtype
    tol = (1e-5 if dtype == np.float32 else 1e-13) * np.sqrt(k)
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * max(1.0, np.abs(want).max()))


def _linear(c1, c2):
    a1, b1 = c1
    a2, b2 = c2
    return a1 * a2, a2 * b1 + b2


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_scan_outputs_are_written_with_streaming_stores(dtype):
    """Scan outputs of at least cpp.ascan._STREAM_MIN bytes, whose rows of lanes are whole cache
    lines, are staged a row at a time and written with streaming stores (the prelude's
    ``fx_stream``): the linear-recurrence gradient's forward states and both gradients, against a
    float64 recurrence by hand. A smaller problem keeps plain stores."""
    from functx.lowering.cpp import ascan

    rows = ascan._STREAM_MIN // (np.dtype(dtype).itemsize * 1024 * 2)  # each output: _STREAM_MIN
    rng = np.random.default_rng(3)
    a = rng.uniform(0.5, 1.0, (2, rows, 1024)).astype(dtype)
    b = rng.standard_normal((2, rows, 1024)).astype(dtype)
    w = rng.standard_normal((2, rows, 1024)).astype(dtype)

    def loss(a, b, w):
        return fnp.sum(lax.associative_scan(_linear, (a, b), axis=1)[1] * w)

    f = functx.jit(functx.grad(loss, argnums=(0, 1)))
    src = f.lower(a, b, w).as_text()
    assert src.count("      fx_stream(") == 3, src[-4000:]  # the states, then both gradients
    small = f.lower(a[:, :8], b[:, :8], w[:, :8]).as_text()
    assert "      fx_stream(" not in small
    ga, gb = (np.asarray(g) for g in f(a, b, w))
    a64, b64, w64 = (x.astype(np.float64) for x in (a, b, w))
    h = np.empty_like(a64)
    h[:, 0] = b64[:, 0]
    for t in range(1, rows):
        h[:, t] = a64[:, t] * h[:, t - 1] + b64[:, t]
    lam = np.empty_like(a64)
    lam[:, -1] = w64[:, -1]
    for t in range(rows - 2, -1, -1):
        lam[:, t] = w64[:, t] + a64[:, t + 1] * lam[:, t + 1]
    want_ga = np.zeros_like(a64)
    want_ga[:, 1:] = lam[:, 1:] * h[:, :-1]
    tol = 1e-4 if dtype == np.float32 else 1e-10
    for got, want in ((ga, want_ga), (gb, lam)):
        scale = np.abs(want).max()
        np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale)
