"""Dense linear algebra (``functx.lax.linalg``, ``functx.numpy.linalg``, ``functx.scipy.linalg``)
against JAX and NumPy: values and dtypes in both x64 modes, hypothesis-drawn batch shapes,
gradients (``check_grads`` in float64), ``vmap`` against a loop, and ``jit`` (C++ library steps)
against eager."""

from __future__ import annotations

import warnings

import docutil
import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functx
import functx.numpy as fnp
import functx.scipy.linalg as fsl
from functx.test_util import check_grads

F32, F64, C64, C128 = np.float32, np.float64, np.complex64, np.complex128


def _rng(seed=0):
    return np.random.default_rng(seed)


def _mat(rng, shape, dt):
    a = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dt)


def _spd(rng, shape, dt):
    """Hermitian positive-definite matrices, well conditioned."""
    a = _mat(rng, shape, dt).astype(np.complex128 if np.dtype(dt).kind == "c" else np.float64)
    n = shape[-1]
    m = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
    return m.astype(dt)


def _tri(rng, shape, dt, lower):
    a = _mat(rng, shape, dt)
    n = shape[-1]
    a = np.tril(a) if lower else np.triu(a)
    return (a + 3 * np.eye(n)).astype(dt)


def _tol(dt):
    return dict(rtol=2e-4, atol=2e-4) if np.dtype(dt) in (F32, C64) else dict(rtol=1e-9, atol=1e-9)


def _close(got, want, dt=None):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, equal_nan=True, **_tol(dt or want.dtype))


# --- the cases: (functx function, JAX function, argument maker, NumPy float64 reference) ----------
def _cho_solve(sl):
    return lambda c, b: sl.cho_solve(sl.cho_factor(c, lower=True), b)


def _up(x):
    """x in float64 or complex128 (the reference's precision)."""
    return np.asarray(x, C128 if np.iscomplexobj(x) else F64)


def _mH(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _sym(a):
    return (_up(a) + _mH(_up(a))) / 2


def _lower_only(a):
    a = _up(a)
    return np.tril(a) + _mH(np.tril(a, -1))


def _solve_vec(a, b):
    return np.linalg.solve(a, b[..., None])[..., 0]


def _unit(a, lower):
    a = _up(a)
    n = a.shape[-1]
    return (np.tril(a, -1) if lower else np.triu(a, 1)) + np.eye(n)


CASES = {
    "jnp.cholesky": (
        fnp.linalg.cholesky,
        jnp.linalg.cholesky,
        lambda rng, b, dt: (_spd(rng, (*b, 3, 3), dt),),
        lambda a: np.linalg.cholesky(_sym(a)),
    ),
    "jnp.cholesky_upper": (
        lambda a: fnp.linalg.cholesky(a, upper=True),
        lambda a: jnp.linalg.cholesky(a, upper=True),
        lambda rng, b, dt: (_spd(rng, (*b, 3, 3), dt),),
        lambda a: _mH(np.linalg.cholesky(_sym(a))),
    ),
    "lax.cholesky_nosym": (
        lambda a: functx.lax.linalg.cholesky(a, symmetrize_input=False),
        lambda a: jax.lax.linalg.cholesky(a, symmetrize_input=False),
        lambda rng, b, dt: (_spd(rng, (*b, 4, 4), dt) + np.triu(np.ones((4, 4)), 1).astype(dt),),
        lambda a: np.linalg.cholesky(_lower_only(a)),
    ),
    "scipy.cholesky": (
        fsl.cholesky,
        jsl.cholesky,
        lambda rng, b, dt: (_spd(rng, (*b, 3, 3), dt),),
        lambda a: _mH(np.linalg.cholesky(_mH(_lower_only(_mH(a))))),
    ),
    "scipy.cho_solve": (
        _cho_solve(fsl),
        _cho_solve(jsl),
        lambda rng, b, dt: (_spd(rng, (*b, 3, 3), dt), _mat(rng, (*b, 3, 2), dt)),
        lambda c, b: np.linalg.solve(_lower_only(c), _up(b)),
    ),
    "scipy.cho_solve_upper_vec": (
        lambda c, b: fsl.cho_solve(fsl.cho_factor(c), b),
        lambda c, b: jsl.cho_solve(jsl.cho_factor(c), b),
        lambda rng, b, dt: (_spd(rng, (3, 3), dt), _mat(rng, (3,), dt)),
        lambda c, b: np.linalg.solve(_mH(_lower_only(_mH(c))), _up(b)),
    ),
    "scipy.solve_triangular": (
        lambda a, b: fsl.solve_triangular(a, b, lower=True),
        lambda a, b: jsl.solve_triangular(a, b, lower=True),
        lambda rng, b, dt: (_tri(rng, (*b, 3, 3), dt, True), _mat(rng, (*b, 3, 2), dt)),
        lambda a, b: np.linalg.solve(np.tril(_up(a)), _up(b)),
    ),
    "scipy.solve_triangular_C": (
        lambda a, b: fsl.solve_triangular(a, b, trans="C", unit_diagonal=True),
        lambda a, b: jsl.solve_triangular(a, b, trans="C", unit_diagonal=True),
        lambda rng, b, dt: (_tri(rng, (*b, 3, 3), dt, False), _mat(rng, (*b, 3, 2), dt)),
        lambda a, b: np.linalg.solve(_mH(_unit(a, False)), _up(b)),
    ),
    "lax.triangular_solve_right": (
        lambda a, b: functx.lax.linalg.triangular_solve(a, b, lower=True, transpose_a=True),
        lambda a, b: jax.lax.linalg.triangular_solve(a, b, lower=True, transpose_a=True),
        lambda rng, b, dt: (_tri(rng, (*b, 3, 3), dt, True), _mat(rng, (*b, 2, 3), dt)),
        lambda a, b: np.swapaxes(
            np.linalg.solve(np.tril(_up(a)), np.swapaxes(_up(b), -1, -2)), -1, -2
        ),
    ),
    "lax.triangular_solve_conj": (
        lambda a, b: functx.lax.linalg.triangular_solve(a, b, left_side=True, conjugate_a=True),
        lambda a, b: jax.lax.linalg.triangular_solve(a, b, left_side=True, conjugate_a=True),
        lambda rng, b, dt: (_tri(rng, (*b, 3, 3), dt, False), _mat(rng, (*b, 3), dt)),
        lambda a, b: _solve_vec(np.conj(np.triu(_up(a))), _up(b)),
    ),
}


def _lu_ref(a):
    import scipy.linalg as sl

    a = _up(a)
    flat = a.reshape((-1, *a.shape[-2:]))
    outs = [sl.lu_factor(m) for m in flat]
    lu = np.stack([o[0] for o in outs]).reshape(a.shape)
    piv = np.stack([o[1] for o in outs]).astype(np.int32).reshape((*a.shape[:-2], -1))
    m = a.shape[-2]
    perm = np.empty((*a.shape[:-2], m), np.int32).reshape((-1, m))
    for i, p in enumerate(piv.reshape((-1, piv.shape[-1]))):
        q = np.arange(m)
        for j, k in enumerate(p):
            q[[j, k]] = q[[k, j]]
        perm[i] = q
    return lu, piv, perm.reshape((*a.shape[:-2], m))


def _scipy_lu_ref(a):
    import scipy.linalg as sl

    return sl.lu(_up(a))


CASES.update(
    {
        "lax.lu": (
            functx.lax.linalg.lu,
            jax.lax.linalg.lu,
            lambda rng, b, dt: (_mat(rng, (*b, 4, 3), dt),),
            _lu_ref,
        ),
        "jnp.solve": (
            fnp.linalg.solve,
            jnp.linalg.solve,
            lambda rng, b, dt: (_mat(rng, (*b, 4, 4), dt), _mat(rng, (*b, 4, 2), dt)),
            lambda a, b: np.linalg.solve(_up(a), _up(b)),
        ),
        "jnp.solve_vec": (
            fnp.linalg.solve,
            jnp.linalg.solve,
            lambda rng, b, dt: (_mat(rng, (*b, 3, 3), dt), _mat(rng, (3,), dt)),
            lambda a, b: np.linalg.solve(_up(a), _up(b)),
        ),
        "jnp.inv": (
            fnp.linalg.inv,
            jnp.linalg.inv,
            lambda rng, b, dt: (_mat(rng, (*b, 4, 4), dt),),
            lambda a: np.linalg.inv(_up(a)),
        ),
        "jnp.det": (
            fnp.linalg.det,
            jnp.linalg.det,
            lambda rng, b, dt: (_mat(rng, (*b, 4, 4), dt),),
            lambda a: np.linalg.det(_up(a)),
        ),
        "jnp.det_2x2": (
            fnp.linalg.det,
            jnp.linalg.det,
            lambda rng, b, dt: (_mat(rng, (*b, 2, 2), dt),),
            lambda a: np.linalg.det(_up(a)),
        ),
        "jnp.slogdet": (
            fnp.linalg.slogdet,
            jnp.linalg.slogdet,
            lambda rng, b, dt: (_mat(rng, (*b, 4, 4), dt),),
            lambda a: tuple(np.linalg.slogdet(_up(a))),
        ),
        "scipy.lu": (
            fsl.lu,
            jsl.lu,
            lambda rng, b, dt: (_mat(rng, (3, 4), dt),),
            _scipy_lu_ref,
        ),
        "scipy.lu_solve_T": (
            lambda a, b: fsl.lu_solve(fsl.lu_factor(a), b, trans=1),
            lambda a, b: jsl.lu_solve(jsl.lu_factor(a), b, trans=1),
            lambda rng, b, dt: (_mat(rng, (*b, 3, 3), dt), _mat(rng, (*b, 3, 2), dt)),
            lambda a, b: np.linalg.solve(np.swapaxes(_up(a), -1, -2), _up(b)),
        ),
        "scipy.solve_pos": (
            lambda a, b: fsl.solve(a, b, assume_a="pos"),
            lambda a, b: jsl.solve(a, b, assume_a="pos"),
            lambda rng, b, dt: (_spd(rng, (*b, 3, 3), dt), _mat(rng, (*b, 3, 2), dt)),
            lambda a, b: np.linalg.solve(_mH(_lower_only(_mH(a))), _up(b)),
        ),
    }
)


def _np_svd_abs(a, full=True):
    u, s, vh = np.linalg.svd(_up(a), full_matrices=full)
    return np.abs(u), s, np.abs(vh)


CASES.update(
    {
        "jnp.eigh": (
            lambda a: (lambda r: (r.eigenvalues, fnp.abs(r.eigenvectors)))(fnp.linalg.eigh(a)),
            lambda a: (lambda r: (r.eigenvalues, jnp.abs(r.eigenvectors)))(jnp.linalg.eigh(a)),
            lambda rng, b, dt: (_mat(rng, (*b, 4, 4), dt),),
            lambda a: (lambda w, v: (w, np.abs(v)))(*np.linalg.eigh(_sym(a))),
        ),
        "jnp.eigvalsh_U": (
            lambda a: fnp.linalg.eigvalsh(a, "U", symmetrize_input=False),
            lambda a: jnp.linalg.eigvalsh(a, "U", symmetrize_input=False),
            lambda rng, b, dt: (_mat(rng, (*b, 3, 3), dt),),
            lambda a: np.linalg.eigvalsh(_up(a), "U"),
        ),
        "lax.eigh_subset": (
            lambda a: functx.lax.linalg.eigh(a, subset_by_index=(1, 3))[1],
            lambda a: jax.lax.linalg.eigh(a, subset_by_index=(1, 3))[1],
            lambda rng, b, dt: (_mat(rng, (*b, 4, 4), dt),),
            lambda a: np.linalg.eigvalsh(_sym(a))[..., 1:3],
        ),
        "jnp.qr_complete": (
            lambda a: tuple(fnp.linalg.qr(a, mode="complete")),
            lambda a: tuple(jnp.linalg.qr(a, mode="complete")),
            lambda rng, b, dt: (_mat(rng, (*b, 4, 3), dt),),
            lambda a: np.linalg.qr(_up(a), mode="complete"),
        ),
        "jnp.qr_wide": (
            lambda a: tuple(fnp.linalg.qr(a)),
            lambda a: tuple(jnp.linalg.qr(a)),
            lambda rng, b, dt: (_mat(rng, (*b, 3, 4), dt),),
            lambda a: np.linalg.qr(_up(a)),
        ),
        "scipy.qr_economic": (
            lambda a: fsl.qr(a, mode="economic"),
            lambda a: jsl.qr(a, mode="economic"),
            lambda rng, b, dt: (_mat(rng, (*b, 4, 3), dt),),
            lambda a: np.linalg.qr(_up(a)),
        ),
        "jnp.svd": (
            lambda a: (lambda u, s, vh: (fnp.abs(u), s, fnp.abs(vh)))(*fnp.linalg.svd(a)),
            lambda a: (lambda u, s, vh: (jnp.abs(u), s, jnp.abs(vh)))(*jnp.linalg.svd(a)),
            lambda rng, b, dt: (_mat(rng, (*b, 4, 3), dt),),
            _np_svd_abs,
        ),
        "scipy.svd_thin_wide": (
            lambda a: (lambda u, s, vh: (fnp.abs(u), s, fnp.abs(vh)))(*fsl.svd(a, False)),
            lambda a: (lambda u, s, vh: (jnp.abs(u), s, jnp.abs(vh)))(*jsl.svd(a, False)),
            lambda rng, b, dt: (_mat(rng, (*b, 3, 4), dt),),
            lambda a: _np_svd_abs(a, False),
        ),
        "jnp.svdvals": (
            fnp.linalg.svdvals,
            jnp.linalg.svdvals,
            lambda rng, b, dt: (_mat(rng, (*b, 3, 4), dt),),
            lambda a: np.linalg.svd(_up(a), compute_uv=False),
        ),
        "jnp.norms_2_nuc": (
            lambda a: tuple(fnp.linalg.norm(a, o, axis=(-2, -1)) for o in (2, -2, "nuc")),
            lambda a: tuple(jnp.linalg.norm(a, o, axis=(-2, -1)) for o in (2, -2, "nuc")),
            lambda rng, b, dt: (_mat(rng, (*b, 3, 4), dt),),
            lambda a: tuple(np.linalg.norm(_up(a), o, axis=(-2, -1)) for o in (2, -2, "nuc")),
        ),
        "jnp.pinv": (
            fnp.linalg.pinv,
            jnp.linalg.pinv,
            lambda rng, b, dt: (_mat(rng, (*b, 4, 3), dt),),
            lambda a: np.linalg.pinv(_up(a)),
        ),
        "jnp.matrix_rank": (
            fnp.linalg.matrix_rank,
            jnp.linalg.matrix_rank,
            lambda rng, b, dt: (_mat(rng, (*b, 4, 1), dt) * _mat(rng, (*b, 1, 3), dt),),
            lambda a: np.linalg.matrix_rank(a),  # (in its own precision)
        ),
        "jnp.matrix_power": (
            lambda a: (fnp.linalg.matrix_power(a, 3), fnp.linalg.matrix_power(a, -2)),
            lambda a: (jnp.linalg.matrix_power(a, 3), jnp.linalg.matrix_power(a, -2)),
            lambda rng, b, dt: ((_mat(rng, (*b, 3, 3), dt) + 3 * np.eye(3)).astype(dt),),
            lambda a: (np.linalg.matrix_power(_up(a), 3), np.linalg.matrix_power(_up(a), -2)),
        ),
        "jnp.lstsq": (
            fnp.linalg.lstsq,
            jnp.linalg.lstsq,
            lambda rng, b, dt: (_mat(rng, (4, 3), dt), _mat(rng, (4, 2), dt)),
            lambda a, b: tuple(np.linalg.lstsq(_up(a), _up(b))),
        ),
        "scipy.expm": (
            fsl.expm,
            jsl.expm,
            lambda rng, b, dt: (
                (_mat(rng, (*b, 3, 3), dt) * np.array([0.05, 1.0, 8.0])).astype(dt),
            ),
            lambda a: np.reshape(
                [__import__("scipy.linalg").linalg.expm(m) for m in _up(a).reshape((-1, 3, 3))],
                a.shape,
            ),
        ),
        "jnp.cond": (
            lambda a: tuple(fnp.linalg.cond(a, p) for p in (None, -2, 1)),
            lambda a: tuple(jnp.linalg.cond(a, p) for p in (None, -2, 1)),
            lambda rng, b, dt: (_mat(rng, (*b, 3, 3), dt),),
            lambda a: tuple(np.linalg.cond(_up(a), p) for p in (None, -2, 1)),
        ),
        "jnp.tensorsolve_inv": (
            lambda a, b: (fnp.linalg.tensorsolve(a, b), fnp.linalg.tensorinv(a, 2)),
            lambda a, b: (jnp.linalg.tensorsolve(a, b), jnp.linalg.tensorinv(a, 2)),
            lambda rng, b, dt: (_mat(rng, (2, 3, 6), dt), _mat(rng, (2, 3), dt)),
            lambda a, b: (np.linalg.tensorsolve(_up(a), _up(b)), np.linalg.tensorinv(_up(a), 2)),
        ),
        "jnp.multi_dot": (
            lambda a, b, c: fnp.linalg.multi_dot([a, b, c]),
            lambda a, b, c: jnp.linalg.multi_dot([a, b, c]),
            lambda rng, b, dt: (_mat(rng, (3,), dt), _mat(rng, (3, 5), dt), _mat(rng, (5, 2), dt)),
            lambda a, b, c: np.linalg.multi_dot([_up(a), _up(b), _up(c)]),
        ),
        "scipy.block_diag": (
            fsl.block_diag,
            jsl.block_diag,
            lambda rng, b, dt: (_mat(rng, (2, 2), dt), _mat(rng, (3,), dt), _mat(rng, (), dt)),
            lambda *a: __import__("scipy.linalg").linalg.block_diag(*map(_up, a)),
        ),
    }
)
DTYPES = [F32, F64, C64, C128]


def _args(name, batch, dt, seed=0):
    return CASES[name][2](_rng(seed), batch, dt)


def _check_case(name, batch, dt):
    """functx's values against the NumPy float64 reference, its shape and dtype against JAX's
    (``jax.eval_shape``: no compile)."""
    fx, jx, _, ref = CASES[name]
    args = _args(name, batch, dt)
    got = fx(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        want = jax.eval_shape(jx, *args)
    got, want, refs = (
        tuple(x) if isinstance(x, (tuple, list)) else (x,) for x in (got, want, ref(*args))
    )
    assert len(got) == len(want) == len(refs), name
    for g, w, r in zip(got, want, refs):
        assert (g.shape, g.dtype) == (w.shape, w.dtype), (name, g.aval, w)
        tol = _tol(g.dtype if g.dtype.kind in "fc" else dt)
        if np.ndim(r) and np.shape(r) != g.shape:  # (NumPy's rank and residuals of lstsq)
            r = np.broadcast_to(r, g.shape)
        np.testing.assert_allclose(np.asarray(g), r, **tol, err_msg=name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_every_case(name):
    # float32 and complex128 for every case; the hypothesis test below draws all four dtypes
    for dt in (F32, C128):
        _check_case(name, (2,), dt)


@settings(max_examples=6, deadline=None)
@given(
    name=st.sampled_from(sorted(CASES)),
    batch=st.lists(st.integers(1, 3), max_size=2).map(tuple),
    dt=st.sampled_from(DTYPES),
)
def test_batch_shapes(name, batch, dt):
    _check_case(name, batch, dt)


def test_default_mode_dtypes(no_x64):
    for name in sorted(CASES)[::3]:
        _check_case(name, (), F64)  # float64 inputs canonicalize to float32
    x = np.array([[4, 2], [2, 5]], np.int32)
    assert fnp.linalg.cholesky(x).dtype == jax.eval_shape(jnp.linalg.cholesky, x).dtype == F32


def test_values_vs_jax():
    """A case against JAX's values (the rest: NumPy's values, JAX's shapes and dtypes)."""
    for name in ("scipy.cho_solve",):
        fx, jx, _, _ = CASES[name]
        args = _args(name, (2,), C128)
        _close(fx(*args), jax.jit(jx)(*args))


JIT_CASES = ("jnp.cholesky", "scipy.lu_solve_T", "jnp.svdvals")


def _cho_loss(x):
    return fsl.cho_solve(fsl.cho_factor(x), x[:, 0]).sum()


def test_jit_matches_eager():
    """One compiled program (C++: library steps between kernels) runs several cases, a matrix
    that is not positive definite, and a gradient, against eager."""
    arglists = [_args(n, (2,), F64) for n in JIT_CASES]
    not_pd = np.stack([np.eye(2), -np.eye(2)])
    spd = _spd(_rng(2), (3, 3), F64)

    def program(arglists, not_pd, spd):
        outs = [CASES[n][0](*a) for n, a in zip(JIT_CASES, arglists)]
        return outs, fnp.linalg.cholesky(not_pd), functx.grad(_cho_loss)(spd)

    got, got_nan, got_grad = functx.jit(program)(arglists, not_pd, spd)
    for n, g, a in zip(JIT_CASES, got, arglists):
        _close(g, CASES[n][0](*a), F64)
    _close(got_nan, fnp.linalg.cholesky(not_pd))
    _close(got_grad, functx.grad(_cho_loss)(spd))
    assert (
        np.isnan(np.asarray(got_nan)[1][np.tril_indices(2)]).all()
        and not np.isnan(np.asarray(got_nan)[0]).any()
    )


def test_vmap_matches_loop():
    for name in ("jnp.cholesky", "scipy.cho_solve", "lax.triangular_solve_right", "jnp.solve"):
        fx = CASES[name][0]
        args = _args(name, (3,), F64)
        if len(args) == 1:
            args = (args[0], np.zeros(3))
            fx = (lambda f: lambda a, _: f(a))(fx)
        want = np.stack([np.asarray(fx(*(a[i] for a in args))) for i in range(3)])
        _close(functx.vmap(fx)(*args), want)
        # one operand unbatched
        want = np.stack([np.asarray(fx(args[0][0], *(a[i] for a in args[1:]))) for i in range(3)])
        got = functx.vmap(fx, in_axes=(None,) + (0,) * (len(args) - 1))(args[0][0], *args[1:])
        _close(got, want)


def test_gradients():
    rng = _rng(1)
    a = _spd(rng, (3, 3), F64)
    check_grads(fnp.linalg.cholesky, (a,), order=2, modes=["fwd", "rev"])
    t = _tri(rng, (3, 3), F64, True)
    b = _mat(rng, (3, 2), F64)
    for kw in (dict(lower=True), dict(lower=True, trans=1), dict(lower=True, unit_diagonal=True)):
        check_grads(lambda a, b: fsl.solve_triangular(a, b, **kw), (t, b), order=2)
    right = dict(lower=True, transpose_a=True)
    check_grads(lambda a, b: functx.lax.linalg.triangular_solve(a, b, **right), (t, b.T), order=1)
    # (cho_factor reads one triangle: a symmetric perturbation, as JAX's rule assumes)
    check_grads(lambda c, b: fsl.cho_solve(fsl.cho_factor(c + c.T), b), (a, b), order=1)
    # complex (JAX's convention for complex inputs: the check covers both parts)
    ac = _spd(rng, (3, 3), C128)
    check_grads(lambda x: fnp.linalg.cholesky(x), (ac,), order=1)
    tc = _tri(rng, (3, 3), C128, True)
    check_grads(lambda a, b: fsl.solve_triangular(a, b, lower=True, trans=2), (tc, b), order=1)


def test_gradients_lu_family():
    rng = _rng(4)
    a = _mat(rng, (4, 4), F64)
    b = _mat(rng, (4, 2), F64)
    check_grads(fnp.linalg.solve, (a, b), order=2, modes=["rev"])
    check_grads(fnp.linalg.inv, (a,), order=1)
    check_grads(fnp.linalg.det, (a,), order=1)
    check_grads(lambda a: fnp.linalg.slogdet(a)[1], (a,), order=1)
    check_grads(lambda a: functx.lax.linalg.lu(a)[0], (_mat(rng, (3, 4), F64),), order=1)
    check_grads(lambda a: functx.lax.linalg.lu(a)[0], (_mat(rng, (4, 3), F64),), order=1)
    check_grads(lambda a, b: fsl.lu_solve(fsl.lu_factor(a), b, trans=2), (a, b), order=1)
    ac = a + 1j * _mat(rng, (4, 4), F64)
    check_grads(fnp.linalg.slogdet, (ac,), order=1)
    check_grads(fnp.linalg.det, (ac,), order=1)


def test_gradients_eigh_qr_svd():
    rng = _rng(5)
    a = _mat(rng, (3, 3), F64)
    lin = functx.lax.linalg
    check_grads(lambda a: lin.eigh(a + a.T), (a,), order=1)
    check_grads(lambda a: fnp.linalg.eigvalsh(a), (a,), order=2, modes=["rev"])
    for shape in ((4, 3), (3, 4)):
        b = _mat(rng, shape, F64)
        check_grads(lambda b: lin.qr(b, full_matrices=False), (b,), order=1)
        check_grads(lambda b: lin.svd(b, full_matrices=False), (b,), order=1)
    check_grads(fnp.linalg.svdvals, (b,), order=2, modes=["rev"])
    check_grads(lambda b: fnp.linalg.norm(b, "nuc"), (b,), order=1)
    check_grads(fnp.linalg.pinv, (b,), order=1)
    check_grads(fsl.expm, (a,), order=1)
    c = a + 1j * _mat(rng, (3, 3), F64)
    check_grads(lambda c: lin.qr(c), (c,), order=1)
    check_grads(fnp.linalg.svdvals, (c,), order=1)
    check_grads(lambda c: fnp.linalg.eigvalsh(c), (c,), order=1)
    with pytest.raises(NotImplementedError):
        functx.jvp(lambda b: lin.svd(b)[0], (b,), (b,))  # (full_matrices of a wide matrix)
    with pytest.raises(NotImplementedError):
        functx.jvp(lambda a: lin.eigh(a, subset_by_index=(0, 1)), (a,), (a,))


def test_lu_edge_cases():
    z = np.zeros((3, 3))
    sign, logdet = fnp.linalg.slogdet(z)
    assert float(sign) == 0 and float(logdet) == -np.inf
    assert float(fnp.linalg.det(z)) == 0.0
    x = np.array([[1.0, 2.0], [2.0, 4.0]])  # singular: LU keeps its factors (JAX's values)
    lu, piv, perm = functx.lax.linalg.lu(x)
    np.testing.assert_array_equal(lu, [[2.0, 4.0], [0.5, 0.0]])
    np.testing.assert_array_equal(piv, [1, 1])
    np.testing.assert_array_equal(perm, [1, 0])
    piv = np.array([[2, 2, 2], [1, 2, 2]], np.int32)  # (JAX's permutations)
    got = functx.lax.linalg.lu_pivots_to_permutation(piv, 4)
    np.testing.assert_array_equal(got, [[2, 0, 1, 3], [1, 2, 0, 3]])
    assert got.dtype == np.int32
    for bad in (np.ones((2, 3)), np.ones(3)):  # (JAX's ValueError)
        for f in (fnp.linalg.inv, fnp.linalg.det, fnp.linalg.slogdet):
            with pytest.raises(ValueError):
                f(bad)
    with pytest.raises(ValueError, match="solve"):
        fnp.linalg.solve(np.eye(3), np.ones((2, 3)))
    with pytest.raises(ValueError, match="assume_a"):
        fsl.solve(np.eye(3), np.ones(3), assume_a="bad")


def test_not_positive_definite_gives_nan():
    both = np.stack([np.eye(2), -np.eye(2)])
    _close(fnp.linalg.cholesky(both), jnp.linalg.cholesky(both))


def test_errors_like_jax():
    lin, jlin = functx.lax.linalg, jax.lax.linalg
    bad = [
        (lambda m: m.cholesky(np.ones((2, 3), F32), symmetrize_input=False), ValueError),
        (lambda m: m.cholesky(np.ones((3,), F32), symmetrize_input=False), TypeError),
        (lambda m: m.cholesky(np.ones((2, 2), np.int32), symmetrize_input=False), TypeError),
        (lambda m: m.triangular_solve(np.eye(3, dtype=F32), np.ones((2, 2), F32)), ValueError),
        (
            lambda m: m.triangular_solve(np.eye(3, dtype=F32), np.ones((3, 3), F64)),
            TypeError,
        ),
    ]
    for f, err in bad:
        with pytest.raises(err):
            f(jlin)
        with pytest.raises(err):
            f(lin)
    with pytest.raises(ValueError, match="trans"):
        fsl.solve_triangular(np.eye(2), np.ones(2), trans=3)
    with pytest.warns(FutureWarning):
        fsl.solve_triangular(np.eye(2) + np.zeros((3, 1, 1)), np.ones((3, 2)))


def test_against_numpy_float64():
    rng = _rng(3)
    a = _spd(rng, (2, 5, 5), F64)
    np.testing.assert_allclose(fnp.linalg.cholesky(a), np.linalg.cholesky(a), rtol=1e-12)


def test_docstring_examples():
    """Every public function's Example runs (in the default mode, as users see it)."""
    mods = (functx.lax.linalg, fnp.linalg, fsl)
    n = failed = 0
    for mod in mods:
        for name in mod.__all__:
            obj = getattr(mod, name)
            if (
                not callable(obj)
                or not getattr(obj, "__doc__", None)
                or "Example" not in obj.__doc__
            ):
                continue
            n += 1
            # (the public examples run in tests/test_docstrings.py; any others here)
            failed += docutil.run(obj, name, globs={"functx": functx, "np": np}).failed
    assert failed == 0 and n >= 7


def test_array_api_forms_cross_diagonal_trace():
    """jnp.linalg's Array API forms of cross/diagonal/trace against JAX's (values, dtypes,
    errors)."""
    rng = _rng(3)
    x = rng.standard_normal((2, 3, 4)).astype(F32)
    a, b = rng.standard_normal((4, 3)).astype(F32), rng.standard_normal((3,)).astype(F32)
    i = np.arange(18, dtype=np.int32).reshape(2, 3, 3)
    pairs = [
        (fnp.linalg.cross(a, b), jnp.linalg.cross(a, b)),
        (fnp.linalg.cross(a.T, a.T, axis=0), jnp.linalg.cross(a.T, a.T, axis=0)),
        (fnp.linalg.diagonal(x, offset=1), jnp.linalg.diagonal(x, offset=1)),
        (fnp.linalg.diagonal(i, offset=-1), jnp.linalg.diagonal(i, offset=-1)),
        (fnp.linalg.trace(x), jnp.linalg.trace(x)),
        (
            fnp.linalg.trace(i, offset=1, dtype=np.float32),
            jnp.linalg.trace(i, offset=1, dtype=np.float32),
        ),
    ]
    for got, want in pairs:
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="3-dimensional vectors"):
        fnp.linalg.cross(np.ones((2, 2)), np.ones((2, 2)))


_M = np.ones((2, 4, 4), np.float32)
_BAD_LINALG_CALLS = [
    lambda la: la.solve(_M, np.ones((2, 4), np.float32)),  # b one rank short
    lambda la: la.solve(_M[0, 0], _M[0, 0]),
    lambda la: la.solve(_M, np.ones((2, 3, 1), np.float32)),
    lambda la: la.inv(_M[:, :3]),
    lambda la: la.slogdet(_M[:, :3]),
    lambda la: la.slogdet(_M, method="svd"),
    lambda la: la.det(_M[:, :3]),
    lambda la: la.eigh(_M, UPLO="X"),
    lambda la: la.qr(_M, mode="thin"),
    lambda la: la.matrix_rank(_M, rtol=0.1, tol=0.1),
    lambda la: la.pinv(_M, rtol=0.1, rcond=0.1),
    lambda la: la.matrix_power(_M[0, 0], 2),
    lambda la: la.matrix_power(_M[:, :3], 2),
    lambda la: la.matrix_power(_M, 1.5),
    lambda la: la.lstsq(_M[0], _M[0, :3]),
    lambda la: la.lstsq(_M, _M),
    lambda la: la.lstsq(_M[0], _M),
]


@pytest.mark.parametrize("i", range(len(_BAD_LINALG_CALLS)))
def test_bad_arguments_raise_functx_errors_of_jax_classes(i):
    """Each bad call raises JAX's builtin class as a FunctxError naming the function and the
    caller's line (they were plain ValueError/TypeError with JAX's wording)."""
    with pytest.raises((TypeError, ValueError)) as theirs:
        _BAD_LINALG_CALLS[i](jnp.linalg)
    with pytest.raises(functx.FunctxError) as ours:
        _BAD_LINALG_CALLS[i](functx.numpy.linalg)
    assert isinstance(ours.value, type(theirs.value)), (ours.value, theirs.value)
    assert "test_linalg.py" in str(ours.value), ours.value
