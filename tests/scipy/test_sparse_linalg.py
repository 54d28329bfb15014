"""``functx.scipy.sparse.linalg``'s ``cg``, ``bicgstab`` and ``gmres`` against JAX and NumPy:
values and dtypes in both x64 modes (JAX's iterates, so truncated runs agree too), matrices,
functions and pytrees as operators and right-hand sides, preconditioners and starting guesses,
derivatives (implicit, through ``custom_linear_solve``) against finite differences and JAX's,
jit, vmap, and JAX's errors for bad arguments."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import jax.scipy.sparse.linalg as jsl
import numpy as np
import pytest
import scipy.sparse.linalg as ssl
from errutil import raises_as_jax
from x64util import x64_off

import functx
import functx.numpy as fjnp
import functx.scipy.sparse.linalg as fsl
from functx.test_util import check_grads

RNG = np.random.RandomState(0)
N = 5
_G = RNG.randn(N, N)
SPD = _G @ _G.T + N * np.eye(N)
NONSYM = _G + N * np.eye(N)
B = RNG.randn(N)
X0 = RNG.randn(N)
JACOBI = np.diag(1.0 / np.diag(NONSYM))


def _scipy(name, a, b, tol=1e-5, **kw):
    """SciPy's solver with JAX's tolerance rule (``rtol`` and ``atol``, no legacy mode)."""
    return getattr(ssl, name)(a, b, rtol=tol, atol=kw.pop("atol", 0.0), **kw)[0]


# (name, matrix, keyword arguments): SciPy's iterates are JAX's (its docstrings say so) and
# functx's; truncated runs compare the iterations themselves
CASES = [
    ("cg", SPD, {"maxiter": 2, "x0": X0}),
    ("cg", SPD, {"maxiter": 3, "M": np.diag(1.0 / np.diag(SPD))}),
    ("cg", SPD, {"tol": 1e-1}),
    ("cg", SPD, {}),
    ("bicgstab", NONSYM, {"maxiter": 2, "x0": X0}),
    ("bicgstab", NONSYM, {"maxiter": 3, "M": JACOBI}),
    ("bicgstab", NONSYM, {"tol": 0.0, "atol": 0.5}),
    ("bicgstab", NONSYM, {}),
    ("gmres", NONSYM, {"maxiter": 1, "restart": 2, "x0": X0}),
    ("gmres", NONSYM, {"maxiter": 2, "restart": 2, "M": JACOBI}),
    ("gmres", NONSYM, {"maxiter": 1, "restart": 3, "solve_method": "incremental"}),
    ("gmres", NONSYM, {"maxiter": 2, "restart": 2, "solve_method": "incremental", "M": JACOBI}),
    ("gmres", NONSYM, {}),
    ("gmres", NONSYM, {"solve_method": "incremental"}),
]
IDS = [f"{name}-{'-'.join(kw)}" for name, _, kw in CASES]


@pytest.mark.parametrize("name, a, kw", CASES, ids=IDS)
def test_iterates_match_scipy(name, a, kw):
    x, info = getattr(fsl, name)(a, B, **kw)
    assert x.dtype == np.float64 and x.shape == (N,)
    ref_kw = {k: v for k, v in kw.items() if k != "solve_method"}
    np.testing.assert_allclose(x, _scipy(name, a, B, **ref_kw), rtol=1e-10, atol=1e-12)
    if "maxiter" not in kw and "atol" not in kw and kw.get("tol", 1e-5) < 1e-3:
        np.testing.assert_allclose(x, np.linalg.solve(a, B), rtol=1e-4, atol=1e-5)
    if name == "gmres":  # JAX's 0 of the default integer type (-1 for a NaN solution)
        assert int(info) == 0 and info.dtype == fjnp.asarray(0).dtype
    else:
        assert info is None


@pytest.mark.parametrize("name, a, kw", CASES[::2], ids=IDS[::2])
def test_float32(name, a, kw):
    with x64_off():
        f32 = {k: v.astype(np.float32) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        x, _ = getattr(fsl, name)(a.astype(np.float32), B.astype(np.float32), **f32)
        assert x.dtype == np.float32
        ref_kw = {k: v for k, v in kw.items() if k != "solve_method"}
        np.testing.assert_allclose(x, _scipy(name, a, B, **ref_kw), rtol=1e-4, atol=1e-5)


def _block_operator(np_, a):
    """A function on ``{"u": (2,), "v": (3,)}``: ``a`` applied to the concatenated vector."""

    def apply(x):
        y = a @ np_.concatenate([x["u"], x["v"]])
        return {"u": y[:2], "v": y[2:]}

    return apply


@pytest.mark.parametrize("name, a", [("cg", SPD), ("bicgstab", NONSYM), ("gmres", NONSYM)])
def test_function_operator_on_a_pytree_against_jax(name, a):
    """A function operator and preconditioner on a dict right-hand side with a starting guess:
    JAX's values (one compiled JAX call per solver: JAX's solvers take seconds to compile)."""
    b = {"u": B[:2], "v": B[2:]}
    x0 = {"u": X0[:2], "v": X0[2:]}
    precond = lambda x: {k: 0.2 * v for k, v in x.items()}  # noqa: E731

    def run(mod, np_):
        return lambda b_, x0_: getattr(mod, name)(_block_operator(np_, a), b_, x0=x0_, M=precond)

    x, info = run(fsl, fjnp)(b, x0)
    xj, infoj = jax.jit(run(jsl, jjnp))(b, x0)
    assert set(x) == {"u", "v"}
    for k in x:
        assert x[k].dtype == xj[k].dtype and x[k].shape == xj[k].shape
        np.testing.assert_allclose(x[k], xj[k], rtol=1e-10, atol=1e-12)
    assert (info is None) == (infoj is None)
    if info is not None:
        assert int(info) == int(infoj) and info.dtype == infoj.dtype
    want = np.linalg.solve(a, B)
    np.testing.assert_allclose(np.concatenate([x["u"], x["v"]]), want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", ["cg", "bicgstab", "gmres"])
def test_complex(name):
    h = SPD + 1j * (_G - _G.T)  # Hermitian positive definite
    b = B + 1j * X0
    x, _ = getattr(fsl, name)(h, b, tol=1e-12)
    assert x.dtype == np.complex128
    np.testing.assert_allclose(x, np.linalg.solve(h, b), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize(
    "name, a, kw",
    [
        ("cg", SPD, {}),
        ("bicgstab", NONSYM, {}),
        ("gmres", NONSYM, {}),
    ],
)
def test_grads(name, a, kw):
    """Implicit derivatives in the matrix and the right-hand side against finite differences."""

    def solve(a_, b_):
        return getattr(fsl, name)(a_, b_, tol=1e-13, **kw)[0]

    check_grads(solve, (a, B), order=1, modes=("fwd", "rev"), atol=1e-5, rtol=1e-5)


def test_jit():
    """Compiled (one solver only: each takes seconds to compile) as eager."""
    solve = lambda b_: fsl.gmres(NONSYM, b_, tol=1e-10, restart=2)  # noqa: E731
    (got, info), (want, info_eager) = functx.jit(solve)(B), solve(B)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    assert int(info) == int(info_eager) == 0


def test_gmres_info_flags_nan():
    x, info = fsl.gmres(NONSYM, B, x0=np.where(np.arange(N) == 1, np.nan, X0), maxiter=2)
    assert int(info) == -1 and np.isnan(np.asarray(x)).any()


def test_vmap():
    """vmap over right-hand sides gives each one's solution (the converged members wait for
    the slowest)."""

    def solve_all(b_):
        return (
            fsl.cg(SPD, b_, tol=1e-10)[0],
            fsl.bicgstab(NONSYM, b_, tol=1e-10)[0],
            fsl.gmres(NONSYM, b_, tol=1e-10, restart=2)[0],
        )

    bs = np.stack([B, X0, 1e-3 * B + X0])
    for got, a in zip(functx.vmap(solve_all)(bs), (SPD, NONSYM, NONSYM)):
        np.testing.assert_allclose(got, np.linalg.solve(a, bs.T).T, rtol=1e-8, atol=1e-10)
    # a batch of matrices, and the gradient through the batch
    mats = np.stack([SPD, SPD + np.eye(N), 2 * SPD])
    solve = lambda a_, b_: fsl.cg(a_, b_, tol=1e-12)[0]  # noqa: E731
    got = functx.vmap(solve)(mats, bs)
    np.testing.assert_allclose(got, np.linalg.solve(mats, bs[..., None])[..., 0], rtol=1e-9)
    g = functx.grad(lambda m_: functx.vmap(solve)(m_, bs).sum())(mats)
    inv = np.linalg.inv(mats)  # d(1 . A^-1 b)/dA = -(A^-T 1) (A^-1 b)^T
    want = -np.einsum("bi,bj->bij", inv.transpose(0, 2, 1).sum(-1), got)
    np.testing.assert_allclose(g, want, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize(
    "call, cls",
    [
        (lambda m: m.cg(np.ones((2, 3)), np.ones(2)), ValueError),
        (lambda m: m.gmres(np.ones(3), np.ones(3)), ValueError),
        (lambda m: m.bicgstab("matrix", np.ones(2)), TypeError),
        (lambda m: m.cg(np.eye(2), np.ones(2), x0=np.ones(3)), ValueError),
        (lambda m: m.bicgstab(np.eye(2), np.ones(2), x0=(np.ones(2),)), ValueError),
        (lambda m: m.gmres(np.eye(2), np.ones(2), x0=[np.ones(2)]), ValueError),
        (lambda m: m.gmres(np.eye(2), np.ones(2), solve_method="qr"), ValueError),
        (lambda m: m.cg(np.eye(2), np.arange(2)), TypeError),  # integer b: JAX's loop-type error
    ],
)
def test_errors_as_jax(call, cls):
    raises_as_jax(call, jsl, fsl, cls)


def test_package_imports_as_in_jax():
    import functx.scipy.sparse as fsparse

    assert fsparse.linalg is fsl and functx.scipy.sparse is fsparse
    with pytest.raises(AttributeError):
        _ = fsparse.no_such_name
