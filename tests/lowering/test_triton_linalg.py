"""The Triton kernels of small matrices (``functx/lowering/triton/linalg.py``): cholesky, the
triangular solves and the Jacobi eigensolver as the library steps of a Triton program, in
Triton's CPU interpreter on tiny shapes, against JAX and NumPy float64; and the step's choice
between the kernels and ``torch.linalg``."""

from __future__ import annotations

import jax
import jax.lax.linalg as jll
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np
import pytest
from x64util import x64_off

import functx
import functx.lax as flax
import functx.numpy as fnp
import functx.scipy.linalg as fsl
from functx.control import linalg as L
from functx.core import ShapedArray

pytest.importorskip("triton")
torch = pytest.importorskip("torch")
RNG = np.random.default_rng(19)


def _spd(shape, dt):
    a = RNG.standard_normal(shape)
    return (a @ np.swapaxes(a, -1, -2) / shape[-1] + np.eye(shape[-1])).astype(dt)


def _sym(w):
    """Symmetric matrices with the eigenvalues ``w`` (rows of a batch)."""
    w = np.asarray(w, np.float64)
    q, _ = np.linalg.qr(RNG.standard_normal((*w.shape, w.shape[-1])))
    m = (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)
    return (m + np.swapaxes(m, -1, -2)) / 2


def _program(f, *args):
    from functx.lowering.triton.program import compile_triton
    from functx.transforms import passes

    exe = compile_triton(passes.simplify(functx.make_jaxpr(f)(*args)))
    steps = [c[0] for c in exe.host_calls]
    return exe, steps


def _steps_fn(a, b, s):
    kw = dict(left_side=False, lower=False, transpose_a=True, unit_diagonal=True)
    return (
        flax.linalg.cholesky(a),
        fsl.cho_solve(fsl.cho_factor(a), b),  # (the upper factor: read through swapped strides)
        flax.linalg.triangular_solve(a, np.swapaxes(b, -1, -2), **kw),
        *fnp.linalg.eigh(s, UPLO="U"),
    )


def _jax_fn(a, b, s):
    kw = dict(left_side=False, lower=False, transpose_a=True, unit_diagonal=True)
    return (
        jll.cholesky(a),
        jsl.cho_solve(jsl.cho_factor(a), b),
        jll.triangular_solve(a, jnp.swapaxes(b, -1, -2), **kw),
        *jnp.linalg.eigh(s, UPLO="U"),
    )


def _check_eigh(s, w, v, tol):
    s64 = s.astype(np.float64)
    scale = np.max(np.abs(s64))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(s64), atol=tol * scale, rtol=0)
    assert (np.diff(w, axis=-1) >= 0).all()
    v = v.astype(np.float64)
    np.testing.assert_allclose(s64 @ v, v * w[..., None, :], atol=tol * scale, rtol=0)
    n = s.shape[-1]
    eye = np.broadcast_to(np.eye(n), v.shape)
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, eye, atol=tol, rtol=0)


@pytest.mark.parametrize("dt", [np.float64, np.float32])
def test_kernels_in_a_triton_program_match_jax(dt, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    if dt == np.float32:  # (float64 with x64 on, the suite's mode; float32 in the default one)
        with x64_off():
            _program_vs_jax(dt)
    else:
        _program_vs_jax(dt)


def _program_vs_jax(dt):
    tol = 1e-12 if dt == np.float64 else 2e-5
    a = _spd((2, 5, 5), dt)
    a[1] = -a[1]  # (not positive definite: NaNs, as JAX gives)
    b = RNG.standard_normal((2, 5, 2)).astype(dt)
    # degenerate and ill-conditioned spectra
    s = _sym([[1.0, 1.0, 2.0], [1e-6, 1.0, 1e6] if dt == np.float64 else [-3.0, 1e-3, 10.0]])
    s = s.astype(dt)
    exe, steps = _program(_steps_fn, a, b, s)
    assert len(steps) == 6 and all(st.gpu_kernel() is not None for st in steps)
    assert exe.graph_safe  # (kernel launches only: the program keeps its CUDA graph)
    got = [t.numpy() for t in exe(a, b, s)]
    want = [np.asarray(x) for x in jax.jit(_jax_fn)(a, b, s)]
    for i, (g, w) in enumerate(zip(got[:3], want[:3])):
        assert g.dtype == w.dtype and g.shape == w.shape, i
        np.testing.assert_allclose(g, w, rtol=tol * 10, atol=tol * 10, equal_nan=True)
    assert np.isnan(got[0][1][np.tril_indices(5)]).all()
    w, v = got[3], got[4]
    assert w.dtype == want[3].dtype and v.dtype == want[4].dtype
    np.testing.assert_allclose(w, want[3], atol=tol * 1e6 * (dt == np.float64) + tol * 10)
    _check_eigh(s, w, v, tol * 10)


def _step(prim, params, *avals):
    outs = prim.abstract_eval(*avals, **params)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    return L.LibraryStep(prim, params, list(avals), list(outs))


def test_step_choice(monkeypatch):
    from functx.lowering.triton import linalg as TL

    eig = dict(lower=True, sort_eigenvalues=True, subset_by_index=None)
    small = ShapedArray((4, 8, 8), np.float32)
    assert _step(L.eigh_p, eig, small).gpu_kernel() is not None
    assert _step(L.cholesky_p, {}, small).graph_safe
    # torch.linalg keeps: complex, larger than MAX_N, empty, a subset of eigenvalues, lu
    big = ShapedArray((2, TL.MAX_N + 1, TL.MAX_N + 1), np.float32)
    for st in (
        _step(L.cholesky_p, {}, ShapedArray((2, 3, 3), np.complex64)),
        _step(L.cholesky_p, {}, big),
        _step(L.cholesky_p, {}, ShapedArray((0, 3, 3), np.float32)),
        _step(L.eigh_p, {**eig, "subset_by_index": (0, 2)}, small),
        _step(L.lu_p, {}, small),
    ):
        assert st.gpu_kernel() is None and not st.graph_safe
    # CPU tensors outside the interpreter: torch.linalg, no launch
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    x = _spd((2, 3, 3), np.float64)
    st = _step(L.cholesky_p, {}, ShapedArray(x.shape, x.dtype))
    out = torch.zeros(x.size, dtype=torch.float64)
    st.torch([torch.from_numpy(x).reshape(-1)], [out])
    np.testing.assert_allclose(out.reshape(x.shape).numpy(), np.linalg.cholesky(x), rtol=1e-12)
