"""Complex sorts and complex linear algebra in a Triton program (``lowering/complex_lanes.py``):
a complex ``sort`` key becomes two real keys (real part, then imaginary part: JAX's order), and a
complex linear-algebra equation becomes its library step on the real lanes
(``LibraryStep.torch``: ``torch.linalg`` on complex tensors). Triton runs in its CPU interpreter
on CPU tensors; sorts are compared with ``jax.jit`` bit for bit, linear algebra with the eager
path (LAPACK) and JAX."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from x64util import x64_off

import functx
import functx.lax as flax
import functx.numpy as fnp
import functx.scipy.linalg as fsl
from functx.errors import UnsupportedError

pytest.importorskip("torch")
pytest.importorskip("triton")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

RNG = np.random.default_rng(19)


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _triton(f, *args):
    """``f`` compiled for Triton, run on ``args``: its outputs as NumPy arrays."""
    from functx.lowering.triton.program import compile_triton
    from functx.transforms import passes

    exe = compile_triton(passes.simplify(functx.make_jaxpr(f)(*args)))
    return [np.asarray(t.numpy()) for t in exe(*args)], exe


def _awkward(shape, dt, rng=RNG):
    """Complex values with ties in the real part, NaNs in either part (of either sign), signed
    zeros and infinities."""
    re = rng.integers(-2, 3, shape).astype(np.float64)
    z = (re + 1j * rng.integers(-1, 2, shape)).astype(dt)
    specials = [
        complex(np.nan, 1.0),
        complex(1.0, np.nan),
        complex(np.nan, np.nan),
        complex(-np.nan, 2.0),
        complex(-0.0, 0.0),
        complex(0.0, -0.0),
        complex(np.inf, -1.0),
        complex(-np.inf, np.nan),
        complex(1.0, -np.inf),
    ]
    flat = z.reshape(-1)
    flat[rng.choice(flat.size, len(specials), replace=False)] = np.array(specials, dt)
    return z


def _sorts(ns, z, y, long):
    lax = ns.lax
    return [
        ns.np.sort(z),  # short rows: the ranking kernel
        ns.np.argsort(z, axis=0),
        ns.np.sort(z, descending=True),
        *lax.sort((z, y), num_keys=1),  # a complex key and a real operand
        *lax.sort((y, z), num_keys=2),  # a real key, then a complex one
        ns.np.sort(long),  # a long row: torch.sort of the two real keys
        ns.np.argsort(long),
    ]


FXN = type("NS", (), {"np": fnp, "lax": flax})
JXN = type("NS", (), {"np": jnp, "lax": jax.lax})


def _same_bits(got, want):
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g.dtype == w.dtype and g.shape == w.shape, i
        np.testing.assert_array_equal(
            np.ascontiguousarray(g).view(np.uint8), np.ascontiguousarray(w).view(np.uint8), str(i)
        )


def test_complex_sort_matches_jax_bit_for_bit():
    from functx.lowering.triton import sort as tsort

    z = _awkward((3, 7), np.complex128)
    y = RNG.integers(0, 2, (3, 7)).astype(np.int32)
    long = _awkward((tsort.TORCH_ROW_MIN + 5,), np.complex128)
    got, exe = _triton(lambda z, y, v: _sorts(FXN, z, y, v), z, y, long)
    _same_bits(got, jax.jit(lambda z, y, v: _sorts(JXN, z, y, v))(z, y, long))
    assert exe.source.count("_fx_host(") == 2  # the two long-row sorts


def test_complex_sort_default_mode():
    from functx.lowering.triton import sort as tsort

    with x64_off():
        z = _awkward((2, 6), np.complex64)
        long = _awkward((tsort.TORCH_ROW_MIN,), np.complex64)

        def f(ns, z, v):
            return [ns.np.sort(z, axis=0), ns.np.argsort(v), ns.lax.sort(v)]

        got, _ = _triton(lambda z, v: f(FXN, z, v), z, long)
        _same_bits(got, jax.jit(lambda z, v: f(JXN, z, v))(z, long))


def _hpd(shape, dt, rng=RNG):
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) / n + 2 * np.eye(n)).astype(dt)


def _linalg(ns, a, b, w):
    np_, sl = ns.np, ns.sl
    lin = np_.linalg
    sign, logdet = lin.slogdet(a)
    q, r = lin.qr(w)
    u, s, vh = lin.svd(w, full_matrices=False)
    ev, v = lin.eigh(a)
    lu, piv = sl.lu_factor(a)
    return {
        "cholesky": lin.cholesky(a),
        "solve_triangular": sl.solve_triangular(a, b, lower=True, trans=2),
        "solve_triangular_right": sl.solve_triangular(a, b, lower=False, unit_diagonal=True),
        "solve": lin.solve(a, b),
        "inv": lin.inv(a),
        "det": lin.det(a),
        "sign": sign,
        "logdet": logdet,
        "cho_solve": sl.cho_solve(sl.cho_factor(a), b),
        "qr_rebuilt": q @ r,
        "r_abs": np_.abs(r),
        "svdvals": s,
        "svd_rebuilt": (u * s[..., None, :]) @ vh,
        "eigvalsh": ev,
        "eigh_residual": a @ v - v * ev[..., None, :],
        "lu": lu,
        "lu_pivots": piv,
    }


FXL = type("NS", (), {"np": fnp, "sl": fsl})
JXL = type("NS", (), {"np": jnp, "sl": jax.scipy.linalg})


def _operands(dt):
    a, b = _hpd((2, 4, 4), dt), (RNG.standard_normal((2, 4, 3)) + 1j).astype(dt)
    w = (RNG.standard_normal((2, 3, 5)) + 1j * RNG.standard_normal((2, 3, 5))).astype(dt)
    return a, b, w


def _close(got, want, keys, tol):
    for k, g, e in zip(keys, got, want):
        e = np.asarray(e)
        assert g.dtype == e.dtype and g.shape == e.shape, k
        np.testing.assert_allclose(g, e, rtol=tol, atol=tol, err_msg=k)


def test_complex_linalg_on_triton():
    """Every step against the eager path (LAPACK; tests/numpy's linalg tests hold it to JAX)."""
    a, b, w = _operands(np.complex128)
    want = _linalg(FXL, a, b, w)
    got, exe = _triton(lambda a, b, w: list(_linalg(FXL, a, b, w).values()), a, b, w)
    _close(got, want.values(), list(want), 1e-10)
    assert "_fx_host(" in exe.source


def _few(ns, a, b):
    lin = ns.np.linalg
    return {
        "cholesky": lin.cholesky(a),
        "solve": lin.solve(a, b),
        "slogdet": lin.slogdet(a)[1],
        "eigvalsh": lin.eigvalsh(a),
        "svdvals": lin.svd(b, compute_uv=False),
    }


def test_complex_linalg_on_triton_default_mode():
    with x64_off():
        a, b, _ = _operands(np.complex64)
        got, _ = _triton(lambda a, b: list(_few(FXL, a, b).values()), a, b)
        want = jax.jit(lambda a, b: _few(JXL, a, b))(a, b)
        keys = list(_few(FXL, a, b))
        _close(got, [want[k] for k in keys], keys, 2e-4)


def test_complex_eig_still_refused():
    z = (RNG.standard_normal((3, 3)) + 0j).astype(np.complex64)
    with pytest.raises(UnsupportedError, match="eig"):
        _triton(lambda z: list(fnp.linalg.eig(z)), z)


def test_complex_gradients_on_triton():
    # grad through the complex steps' jvp rules (triangular solves, sorts with an iota operand)
    a = _hpd((3, 3), np.complex128)

    def f(a):
        chol = fnp.sum(fnp.abs(fnp.linalg.cholesky(a)) ** 2)
        srt = fnp.real(fnp.sum(fnp.sort(a.reshape(-1)) * fnp.arange(9)))
        return chol + fnp.real(fnp.sum(fnp.linalg.solve(a, a[0]))) + fnp.linalg.slogdet(a)[1] + srt

    (got,), _ = _triton(functx.grad(f), a)  # (against eager; eager's gradients against JAX:
    np.testing.assert_allclose(got, np.asarray(functx.grad(f)(a)), rtol=1e-10, atol=1e-10)
    # tests/numpy's linalg and sort tests)
