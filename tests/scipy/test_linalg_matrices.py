"""``functx.scipy.linalg``'s solve_sylvester, qr_multiply and special matrices (circulant,
companion, convolution_matrix, dft, fiedler, fiedler_companion, hadamard, hankel, helmert,
hilbert, invhilbert, invpascal, leslie, pascal): values against SciPy in float64 (hypothesis-drawn
sizes) and against JAX (one jitted JAX program: its eager calls compile each op), shapes and
dtypes against JAX in both x64 modes (``jax.eval_shape``), batching, gradients (check_grads in
float64) where JAX differentiates, jit (C++) and vmap against eager, and JAX's errors."""

from __future__ import annotations

import jax
import jax.scipy.linalg as jsl
import numpy as np
import pytest
import scipy.linalg as ssl
from hypothesis import given, settings, strategies as st
from x64util import x64_off

import functx
import functx.scipy.linalg as fsl
from functx.test_util import check_grads

RNG = np.random.default_rng(0)
V5 = RNG.standard_normal(5)
V3 = RNG.standard_normal(3)
B23 = RNG.standard_normal((2, 3))


# --- the special matrices ------------------------------------------------------------------------
def _vector_matrices(L, v5, v3, b23):
    """The constructors of vectors, on float and int vectors and batches (broadcast too)."""
    iv = (v5 * 10).astype("int32")
    return {
        "circulant": L.circulant(v5),
        "circulant_int_batch": L.circulant(b23.astype("int32")),
        "companion": L.companion(v5),
        "companion_batch": L.companion(b23),
        "convolution_full": L.convolution_matrix(v3, 4),
        "convolution_same": L.convolution_matrix(v5, 3, mode="same"),
        "convolution_valid_int": L.convolution_matrix(iv, 2, "valid"),
        "convolution_batch": L.convolution_matrix(b23, 5, "same"),
        "fiedler": L.fiedler(v5),
        "fiedler_int_batch": L.fiedler(b23.astype("int32")),
        "fiedler_companion": L.fiedler_companion(v5),
        "fiedler_companion_batch": L.fiedler_companion(b23),
        "hankel": L.hankel(v5),
        "hankel_r": L.hankel(v3, v5),
        "hankel_batch": L.hankel(b23, v5[None, None, :4]),
        "leslie": L.leslie(v3, v3[:2]),
        "leslie_int_batch": L.leslie(iv[:3], b23.astype("int32")[:, :2]),
    }


def _size_matrices(L):
    return {
        "dft": L.dft(5),
        "dft_sqrtn": L.dft(4, "sqrtn"),
        "dft_n_c64": L.dft(3, scale="n", dtype=np.complex64),
        "hadamard": L.hadamard(8),
        "hadamard_f32": L.hadamard(4, np.float32),
        "hadamard_default_float": L.hadamard(2, None),
        "helmert": L.helmert(5),
        "helmert_full": L.helmert(4, full=True),
        "hilbert": L.hilbert(5),
        "invhilbert": L.invhilbert(5),
        "pascal": L.pascal(5),
        "pascal_lower": L.pascal(4, "lower"),
        "pascal_upper": L.pascal(4, kind="upper"),
        "invpascal": L.invpascal(5),
        "invpascal_lower": L.invpascal(4, "lower"),
        "invpascal_upper": L.invpascal(4, kind="upper"),
    }


def _one_each(L, v5, v3):
    """Each constructor once, for the comparison of values (JAX compiles the program: ~0.3 s an
    output on this machine)."""
    return {
        "circulant": L.circulant(v5),
        "companion": L.companion(v5),
        "convolution_matrix": L.convolution_matrix(v3, 4, "same"),
        "fiedler": L.fiedler(v5),
        "fiedler_companion": L.fiedler_companion(v5),
        "hankel": L.hankel(v3, v5),
        "leslie": L.leslie(v3, v3[:2]),
        "dft": L.dft(5, "sqrtn"),
        "hadamard": L.hadamard(4),
        "helmert": L.helmert(4, full=True),
        "hilbert": L.hilbert(4),
        "invhilbert": L.invhilbert(5),
        "pascal": L.pascal(5),
        "invpascal": L.invpascal(5),
    }


def test_values_against_jax():
    got = _one_each(fsl, V5, V3)
    want = jax.jit(lambda *xs: _one_each(jsl, *xs))(V5, V3)
    for k in got:
        g, w = got[k], want[k]
        assert (g.shape, g.dtype) == (w.shape, w.dtype), (k, g.shape, g.dtype, w.shape, w.dtype)
        # (JAX's pascal and invpascal go through gammaln: near, not at, the exact integers functx
        # gives, and pascal is float32 in both modes)
        tol = 1e-5 if "pascal" in k else 1e-12
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol, err_msg=k)


@pytest.mark.parametrize("x64", [True, False])
def test_shapes_and_dtypes_like_jax(x64):
    args = (V5, V3, B23) if x64 else tuple(x.astype(np.float32) for x in (V5, V3, B23))
    with functx.experimental.enable_x64(x64), jax.enable_x64(x64):
        got = {**_vector_matrices(fsl, *args), **_size_matrices(fsl)}
        want = jax.eval_shape(
            lambda *xs: {**_vector_matrices(jsl, *xs), **_size_matrices(jsl)}, *args
        )
    assert got.keys() == want.keys()
    for k, g in got.items():
        assert (g.shape, g.dtype) == (want[k].shape, want[k].dtype), (k, g, want[k])


_SCIPY_VECTOR = {  # name: (functx's call, SciPy's call) on a 1-D float64 vector of 1-8 points
    "circulant": (fsl.circulant, ssl.circulant),
    "companion": (fsl.companion, ssl.companion),
    "fiedler": (fsl.fiedler, ssl.fiedler),
    "fiedler_companion": (fsl.fiedler_companion, ssl.fiedler_companion),
    "hankel": (fsl.hankel, ssl.hankel),
    "hankel_r": (lambda v: fsl.hankel(v, v[::-1] + 1), lambda v: ssl.hankel(v, v[::-1] + 1)),
    "leslie": (lambda v: fsl.leslie(v, v[1:]), lambda v: ssl.leslie(v, v[1:])),
}


@settings(max_examples=12)
@given(
    st.sampled_from(sorted(_SCIPY_VECTOR)),
    st.integers(1, 8),
    st.integers(1, 8),
    st.sampled_from(["full", "same", "valid"]),
)
def test_vector_matrices_against_scipy(name, m, n, mode):
    v = RNG.standard_normal(m) + 2.0  # (a leading coefficient away from 0)
    ours, theirs = _SCIPY_VECTOR[name]
    if m >= 2 or name in ("circulant", "fiedler", "hankel", "hankel_r"):
        want = theirs(v)
        got = np.asarray(ours(v))
        np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-13, atol=1e-13)
    want = ssl.convolution_matrix(v, n, mode)
    np.testing.assert_allclose(np.asarray(fsl.convolution_matrix(v, n, mode)), want, rtol=0)


@settings(max_examples=8)
@given(st.integers(0, 9), st.sampled_from(["lower", "upper", "symmetric"]))
def test_size_matrices_against_scipy(n, kind):
    np.testing.assert_array_equal(np.asarray(fsl.pascal(n, kind)), ssl.pascal(n, kind))
    np.testing.assert_array_equal(np.asarray(fsl.invpascal(n, kind)), ssl.invpascal(n, kind))
    np.testing.assert_allclose(np.asarray(fsl.hilbert(n)), ssl.hilbert(n), rtol=1e-15)
    want = ssl.invhilbert(n, exact=True).astype(np.float64).reshape(n, n)
    np.testing.assert_array_equal(np.asarray(fsl.invhilbert(n)), want)
    if n >= 1:
        np.testing.assert_allclose(np.asarray(fsl.dft(n)), ssl.dft(n), atol=1e-14)
        np.testing.assert_allclose(np.asarray(fsl.helmert(n, True)), ssl.helmert(n, True))
        np.testing.assert_array_equal(np.asarray(fsl.hadamard(1 << n)), ssl.hadamard(1 << n))


_EDGES = [
    lambda L: L.fiedler_companion(np.ones(1)),
    lambda L: L.helmert(1),
    lambda L: L.dft(0),
    lambda L: L.hilbert(0),
    lambda L: L.pascal(-1),
    lambda L: L.invhilbert(-1),
    lambda L: L.circulant(np.ones(0)),
    lambda L: L.circulant(np.float32(2.0)),
    lambda L: L.hankel(np.ones(2), np.ones(0)),
    lambda L: L.fiedler(np.ones((2, 0))),
    lambda L: L.hadamard(2.0),  # (JAX's static n takes an integral float)
]


def test_edge_sizes_like_jax():
    for call in _EDGES:
        got, want = call(fsl), jax.eval_shape(lambda c=call: c(jsl))
        assert (got.shape, got.dtype) == (want.shape, want.dtype), (got, want)
    # (exact integers rounded once: beyond float32's range, infinity)
    assert np.isfinite(np.asarray(fsl.invhilbert(20))).all()
    with x64_off():
        assert np.isinf(np.asarray(fsl.invhilbert(40))).any()


def test_gradients():
    v = np.array([2.0, -1.0, 0.5, 3.0])  # (distinct: |a_i - a_j| is smooth there off the diagonal)
    for f in (
        fsl.circulant,
        fsl.companion,
        fsl.fiedler_companion,
        lambda a: fsl.convolution_matrix(a, 3, "same"),
        lambda a: fsl.hankel(a, a[::-1]),
        lambda a: fsl.leslie(a, a[1:] ** 2),
        lambda a: fsl.fiedler(a) * (1 - np.eye(4)),
    ):
        check_grads(f, (v,), 1, modes=["fwd", "rev"])


def test_jit_and_vmap_match_eager():
    def f(v):
        return fsl.circulant(v) * fsl.hankel(v) + fsl.leslie(v, v[1:]) + fsl.pascal(4)

    want = np.asarray(f(V5[:4]))
    np.testing.assert_allclose(np.asarray(functx.jit(f)(V5[:4])), want, rtol=1e-12)
    b = RNG.standard_normal((3, 4))
    rows = np.stack([np.asarray(f(r)) for r in b])
    np.testing.assert_allclose(np.asarray(functx.vmap(f)(b)), rows, rtol=1e-12)


def test_vmap_equals_batched_call():
    b = RNG.standard_normal((3, 4))
    for f in (fsl.circulant, fsl.companion, fsl.fiedler_companion, fsl.hankel, fsl.fiedler):
        np.testing.assert_allclose(np.asarray(functx.vmap(f)(b)), np.asarray(f(b)), rtol=1e-14)
        np.testing.assert_allclose(np.asarray(f(b))[1], np.asarray(f(b[1])), rtol=1e-14)


# --- solve_sylvester and qr_multiply -------------------------------------------------------------
A3 = RNG.standard_normal((3, 3))
B2 = RNG.standard_normal((2, 2))
C32 = RNG.standard_normal((3, 2))


@pytest.mark.parametrize("method", ["schur", "eigen"])
def test_solve_sylvester_against_scipy(method):
    want = ssl.solve_sylvester(A3, B2, C32)
    got = fsl.solve_sylvester(A3, B2, C32, method=method)
    assert got.dtype == np.float64
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-10)
    ac = A3 + 1j * RNG.standard_normal((3, 3))
    got = fsl.solve_sylvester(ac, B2, C32, method=method)
    np.testing.assert_allclose(np.asarray(got), ssl.solve_sylvester(ac, B2, C32), atol=1e-10)
    ab = RNG.standard_normal((4, 1, 3, 3))  # (batch axes broadcast: [4, 1] with [2])
    cb = RNG.standard_normal((2, 3, 2))
    got = np.asarray(fsl.solve_sylvester(ab, B2, cb, method=method))
    assert got.shape == (4, 2, 3, 2)
    want = ssl.solve_sylvester(ab[3, 0], B2, cb[1])
    np.testing.assert_allclose(got[3, 1], want, rtol=1e-10, atol=1e-10)


def test_solve_sylvester_singular_gives_nans_as_jax():
    # eigenvalues of A and -A sum to 0: all NaN in the singular element of a batch only
    a = np.stack([A3, A3 + 5 * np.eye(3)])

    for L in (fsl, jsl):
        x = np.asarray(L.solve_sylvester(a, -A3, np.ones((3, 3))))
        assert np.isnan(x[0]).all() and np.isfinite(x[1]).all()
    assert np.isnan(np.asarray(fsl.solve_sylvester(A3, B2, C32, tol=1e9))).all()


def test_qr_multiply_against_scipy():
    a = RNG.standard_normal((4, 3))
    cases = [("right", (2, 4)), ("left", (3, 2)), ("right", (4,)), ("left", (3,))]
    for mode, shape in cases:
        c = RNG.standard_normal(shape)
        got, want = fsl.qr_multiply(a, c, mode=mode), ssl.qr_multiply(a, c, mode=mode)
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12)
    ac = a + 1j * RNG.standard_normal((4, 3))
    c = RNG.standard_normal((3, 2))
    got = fsl.qr_multiply(ac, c, mode="left", conjugate=True)[0]
    want = ssl.qr_multiply(ac, c, mode="left", conjugate=True)[0]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def _solvers(L, a3, b2, c32, a43, c24):
    return {
        "sylvester": L.solve_sylvester(a3, b2, c32),
        "sylvester_eigen_int": L.solve_sylvester(a3.astype("int32"), b2, c32, method="eigen"),
        "sylvester_batch": L.solve_sylvester(a3[None], b2, c32),
        "qr_right": L.qr_multiply(a43, c24),
        "qr_left_batch": L.qr_multiply(a43[None], c24[:, :3].T, mode="left"),
        "qr_right_vector_batch": L.qr_multiply(a43[None].repeat(2, 0), c24[0]),
        "qr_complex_c": L.qr_multiply(a43, c24 * 1j, conjugate=True),
    }


@pytest.mark.parametrize("x64", [True, False])
def test_solver_shapes_and_dtypes_like_jax(x64):
    args = (A3, B2, C32, RNG.standard_normal((4, 3)), RNG.standard_normal((2, 4)))
    if not x64:
        args = tuple(x.astype(np.float32) for x in args)
    with functx.experimental.enable_x64(x64), jax.enable_x64(x64):
        got = _solvers(fsl, *args)
        want = jax.eval_shape(lambda *xs: _solvers(jsl, *xs), *args)
    for k in got:
        for g, w in zip(jax.tree_util.tree_leaves(got[k]), jax.tree_util.tree_leaves(want[k])):
            assert (g.shape, g.dtype) == (w.shape, w.dtype), (k, g.shape, g.dtype, w)


def test_solvers_jit_and_vmap_match_eager():
    def f(a, c):
        return fsl.solve_sylvester(a, B2, c) + fsl.qr_multiply(a, c.T @ a, mode="right")[0][:2].T

    want = np.asarray(f(A3, C32))
    np.testing.assert_allclose(np.asarray(functx.jit(f)(A3, C32)), want, rtol=1e-10, atol=1e-12)
    a = RNG.standard_normal((2, 3, 3))
    got = np.asarray(functx.vmap(f, (0, None))(a, C32))
    np.testing.assert_allclose(got[1], np.asarray(f(a[1], C32)), rtol=1e-10, atol=1e-12)


def test_qr_multiply_gradients():
    # (JAX has no derivative of qr_multiply; functx's follows from qr's: checked numerically)
    a, c = RNG.standard_normal((4, 3)), RNG.standard_normal((2, 4))
    check_grads(lambda x: fsl.qr_multiply(x, c)[0], (a,), 1, modes=["fwd", "rev"])
    check_grads(lambda x: fsl.qr_multiply(a, x, mode="left")[0], (c[:, :3].T,), 1)


def test_qr_multiply_pivoting_not_implemented():
    with pytest.raises(NotImplementedError, match="pivoting"):
        fsl.qr_multiply(A3, C32.T, pivoting=True)


_BAD_CALLS = [
    lambda L: L.solve_sylvester(A3, B2, C32.T),
    lambda L: L.solve_sylvester(A3[:2], B2, C32),
    lambda L: L.solve_sylvester(A3, B2, C32, method="qz"),
    lambda L: L.qr_multiply(A3, C32, mode="middle"),
    lambda L: L.qr_multiply(A3, np.ones(4)),
    lambda L: L.qr_multiply(A3, np.ones((4, 2)), mode="left"),
    lambda L: L.circulant([1.0, 2.0]),
    lambda L: L.companion(np.ones(1)),
    lambda L: L.convolution_matrix(V3, 0),
    lambda L: L.convolution_matrix(V3, 2.5),
    lambda L: L.convolution_matrix(V3, 2, "middle"),
    lambda L: L.convolution_matrix(np.ones(0), 2),
    lambda L: L.convolution_matrix(np.float32(1.0), 2),
    lambda L: L.dft(3, "m"),
    lambda L: L.dft(3, dtype=np.float32),
    lambda L: L.fiedler(np.ones(2, bool)),
    lambda L: L.fiedler_companion(np.ones(0)),
    lambda L: L.hadamard(6),
    lambda L: L.hadamard(2, bool),
    lambda L: L.hankel(np.float32(1.0)),
    lambda L: L.hankel(V3, np.float32(1.0)),
    lambda L: L.helmert(0),
    lambda L: L.hilbert(-1),
    lambda L: L.pascal(3, "diagonal"),
    lambda L: L.invpascal(3, "diagonal"),
    lambda L: L.leslie(V3, V3),
    lambda L: L.leslie(V3[:1], np.ones(0)),
]


@pytest.mark.parametrize("i", range(len(_BAD_CALLS)))
def test_bad_arguments_raise_functx_errors_of_jax_classes(i):
    with pytest.raises((TypeError, ValueError)) as theirs:
        _BAD_CALLS[i](jsl)
    with pytest.raises(functx.FunctxError) as ours:
        _BAD_CALLS[i](fsl)
    assert isinstance(ours.value, type(theirs.value)), (ours.value, theirs.value)
    assert "test_linalg_matrices.py" in str(ours.value), ours.value
