"""The Triton kernels of small matrices (``functx/lowering/triton/linalg.py``): cholesky, the
triangular solves and the Jacobi eigensolver as the library steps of a Triton program, in
Triton's CPU interpreter on tiny shapes, against JAX and NumPy float64; and the step's choice
between the kernels and ``torch.linalg``."""

from __future__ import annotations

import os

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
# FUNCTX_TEST_TRITON_GPU=1 on a CUDA machine: the kernels compiled for the GPU, else Triton's
# interpreter on the CPU (Triton 3.6's interpreter rejects what the compiled kernels run)
GPU = os.environ.get("FUNCTX_TEST_TRITON_GPU", "0") not in ("", "0") and torch.cuda.is_available()


def _interpret(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0" if GPU else "1")


@pytest.fixture(autouse=True)
def _kernels_on(monkeypatch):
    from functx.lowering.triton import linalg as TL

    monkeypatch.setattr(TL, "ENABLED", set(TL._CHOOSERS))  # (every kernel)


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


def _f64_steps(jnp_, sl, a, b, s):
    """cho_factor's upper factor (read through swapped strides), cho_solve's two solves, eigh
    of the upper triangle."""
    c = sl.cho_factor(a)
    return (c[0], sl.cho_solve(c, b), *jnp_.linalg.eigh(s, UPLO="U"))


def _f32_steps(lax_linalg, a, b, s):
    """the lower factor, LU, a right-side transposed unit-diagonal solve, eigh."""
    kw = dict(left_side=False, lower=False, transpose_a=True, unit_diagonal=True)
    return (
        lax_linalg.cholesky(a),
        *lax_linalg.lu(a)[:2],
        lax_linalg.triangular_solve(a, b, **kw),
        *lax_linalg.eigh(s)[::-1],
    )


def _check_eigh(s, w, v, tol):
    s64 = s.astype(np.float64)
    scale = np.max(np.abs(s64))
    np.testing.assert_allclose(w, np.linalg.eigvalsh(s64), atol=tol * scale, rtol=0)
    assert (np.diff(w, axis=-1) >= 0).all()
    v = v.astype(np.float64)
    np.testing.assert_allclose(s64 @ v, v * w[..., None, :], atol=tol * scale, rtol=0)
    eye = np.broadcast_to(np.eye(s.shape[-1]), v.shape)
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, eye, atol=tol, rtol=0)


def _run(f, args, n_steps):
    exe, steps = _program(f, *args)
    assert len(steps) == n_steps and all(st.gpu_kernel() is not None for st in steps)
    assert exe.graph_safe  # (kernel launches only: the program keeps its CUDA graph)
    if GPU:
        args = [torch.as_tensor(a, device="cuda") for a in args]
    return [t.cpu().numpy() for t in exe(*args)]


def _same(got, want, tol):
    for i, (g, w) in enumerate(zip(got, want)):
        w = np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, i
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, equal_nan=True, err_msg=str(i))


def test_float64_kernels_match_jax(monkeypatch):
    _interpret(monkeypatch)
    a = _spd((2, 4, 4), np.float64)
    b = RNG.standard_normal((2, 4, 2))
    s = _sym([[1.0, 1.0, 2.0], [1e-6, 1.0, 1e6]])  # (degenerate, ill-conditioned)
    got = _run(lambda *x: _f64_steps(fnp, fsl, *x), (a, b, s), 4)
    with jax.default_device(jax.devices("cpu")[0]):  # (JAX's CPU results: LAPACK's pivots)
        want = jax.jit(lambda *x: _f64_steps(jnp, jsl, *x))(a, b, s)
    _same(got[:2], want[:2], 1e-12)
    assert got[2].dtype == want[2].dtype and got[3].dtype == want[3].dtype
    np.testing.assert_allclose(got[2], want[2], rtol=0, atol=1e-9)
    _check_eigh(s, got[2], got[3], 1e-12)


def test_float32_kernels_default_mode(monkeypatch):
    _interpret(monkeypatch)
    with x64_off():
        a = _spd((2, 3, 3), np.float32)
        a[1] = -a[1]  # (not positive definite: NaNs, as JAX gives)
        a[1, :, 0] = 0.0  # (and singular: LU keeps its factors)
        b = RNG.standard_normal((2, 2, 3)).astype(np.float32)
        s = _sym([[-3.0, 1e-3, 10.0], [2.0, 2.0, 2.0]]).astype(np.float32)
        got = _run(lambda *x: _f32_steps(flax.linalg, *x), (a, b, s), 4)
        with jax.default_device(jax.devices("cpu")[0]):
            want = jax.jit(lambda *x: _f32_steps(jll, *x))(a, b, s)
    _same(got[:4], want[:4], 2e-5)
    assert np.isnan(got[0][1][np.tril_indices(3)]).all()
    assert got[4].dtype == want[4].dtype == np.float32
    np.testing.assert_allclose(got[4], want[4], rtol=0, atol=1e-5)
    _check_eigh(s, got[4], got[5], 2e-6)


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
    # larger than MAX_N: torch.linalg into the outputs where CUDA is (graph-safe), else as before
    big = ShapedArray((2, TL.MAX_N + 1, TL.MAX_N + 1), np.float32)
    monkeypatch.setattr(TL, "LIBRARY_RUNNERS", True)
    st = _step(L.cholesky_p, {}, big)
    assert (st.gpu_kernel() is not None) == st.graph_safe == torch.cuda.is_available()
    # a larger solve: the blocked kernels (launches only), or torch.linalg where CUDA is
    tri = dict(left_side=True, lower=True, transpose_a=False, conjugate_a=False,
               unit_diagonal=False)  # fmt: skip
    solve = _step(L.triangular_solve_p, tri, big, ShapedArray(big.shape[:-1] + (3,), np.float32))
    assert solve.graph_safe and not hasattr(solve.gpu_kernel(), "body")
    monkeypatch.setattr(TL, "BLOCKED_SOLVE", False)
    solve = _step(L.triangular_solve_p, tri, big, ShapedArray(big.shape[:-1] + (3,), np.float32))
    assert solve.graph_safe == torch.cuda.is_available()
    # torch.linalg keeps: complex, a larger LU, empty, a subset of eigenvalues, a wide LU
    for st in (
        _step(L.cholesky_p, {}, ShapedArray((2, 3, 3), np.complex64)),
        _step(L.lu_p, {}, big),
        _step(L.cholesky_p, {}, ShapedArray((0, 3, 3), np.float32)),
        _step(L.eigh_p, {**eig, "subset_by_index": (0, 2)}, small),
        _step(L.lu_p, {}, ShapedArray((4, 8, 6), np.float32)),
    ):
        assert st.gpu_kernel() is None and not st.graph_safe
    # CPU tensors outside the interpreter: torch.linalg, no launch
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    x = _spd((2, 3, 3), np.float64)
    st = _step(L.cholesky_p, {}, ShapedArray(x.shape, x.dtype))
    out = torch.zeros(x.size, dtype=torch.float64)
    st.torch([torch.from_numpy(x).reshape(-1)], [out])
    np.testing.assert_allclose(out.reshape(x.shape).numpy(), np.linalg.cholesky(x), rtol=1e-12)


def test_eigh_choice_and_cusolver_on_gpu(monkeypatch):
    """eigh above ``EIGH_JACOBI_MAX_N`` rows calls cuSOLVER where it can be called (any size;
    one batched call), else the Jacobi kernel up to
    ``MAX_N`` (Triton's interpreter) and torch.linalg above; on a GPU, cuSOLVER's results
    against NumPy float64 (batched and one matrix, both triangles)."""
    from functx.lowering.triton import cusolver, linalg as TL

    monkeypatch.setattr(TL, "CUSOLVER_EIGH", True)
    eig = dict(lower=True, sort_eigenvalues=True, subset_by_index=None)
    n_big = TL.EIGH_JACOBI_MAX_N + 1
    jacobi = _step(L.eigh_p, eig, ShapedArray((4, 8, 8), np.float32))
    assert jacobi.gpu_kernel() is not None and not hasattr(jacobi.gpu_kernel(), "body")
    mid = _step(L.eigh_p, eig, ShapedArray((4, n_big, n_big), np.float32))
    big = _step(L.eigh_p, eig, ShapedArray((1, TL.MAX_N + 1, TL.MAX_N + 1), np.float64))
    if cusolver.available():
        assert hasattr(mid.gpu_kernel(), "body") and hasattr(big.gpu_kernel(), "body")
        assert big.graph_safe
    else:  # (no CUDA: the kernel in the interpreter up to MAX_N, torch.linalg above)
        assert mid.gpu_kernel() is not None and not hasattr(mid.gpu_kernel(), "body")
        assert big.gpu_kernel() is None and not big.graph_safe
    if not GPU:
        return
    for shape, lower in (((6, 33, 33), True), ((1, 70, 70), False)):
        s = _sym(RNG.uniform(-3, 3, shape[:-1])).astype(np.float32)
        st = _step(L.eigh_p, {**eig, "lower": lower}, ShapedArray(shape, np.float32))
        x = torch.as_tensor(s, device="cuda")
        half = torch.tril(x) if lower else torch.triu(x)  # (the other triangle: never read)
        outs = [torch.zeros(s.size, device="cuda"), torch.zeros(s.size // shape[-1], device="cuda")]
        assert st.gpu_kernel()([half.reshape(-1)], outs)
        v, w = (o.cpu().numpy().reshape(*shape[:-1], -1) for o in outs)
        _check_eigh(s, w.reshape(shape[:-1]), v.reshape(shape), 2e-5)


def test_large_float32_eigh_runs_torch_in_float64(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")  # (CPU tensors: the torch.linalg step)
    monkeypatch.setattr(L, "EIGH_F64_MIN_N", 3)
    s = _sym([[1.0, 2.0, 1e4]]).astype(np.float32)
    eig = dict(lower=True, sort_eigenvalues=True, subset_by_index=None)
    st = _step(L.eigh_p, eig, ShapedArray(s.shape, s.dtype))
    outs = [torch.zeros(9, dtype=torch.float32), torch.zeros(3, dtype=torch.float32)]
    st.torch([torch.from_numpy(s).reshape(-1)], outs)
    v, w = outs[0].reshape(s.shape).numpy(), outs[1].reshape(1, 3).numpy()
    want = np.linalg.eigvalsh(s.astype(np.float64)).astype(np.float32)
    np.testing.assert_allclose(w, want, rtol=1e-6)
    _check_eigh(s, w, v, 1e-6)


def test_library_runners_match_numpy():
    """The runners of operands larger than the kernels take (``torch.linalg`` into the step's
    output, graph-safe): their calls on CPU tensors against NumPy float64, every
    triangular_solve flag, the other triangle filled with garbage (never read), a matrix that is
    not positive definite (NaNs, as JAX gives)."""
    from functx.lowering.triton import linalg as TL

    a = _spd((2, 5, 5), np.float64)
    a[1, 0, 0] = -1.0
    b = RNG.standard_normal((2, 5, 3))
    want = np.linalg.cholesky(a[:1])
    for upper in (False, True):
        out = torch.zeros(a.size, dtype=torch.float64)
        src = np.tril(a) + np.triu(RNG.standard_normal(a.shape), 1)  # (garbage above)
        src = np.swapaxes(src, -1, -2).copy() if upper else src
        TL._torch_cholesky(a.shape, upper).body([torch.from_numpy(src).reshape(-1)], [out])
        got = out.reshape(a.shape).numpy()
        got = np.swapaxes(got, -1, -2) if upper else got
        np.testing.assert_allclose(np.tril(got[:1]), want, rtol=1e-12, atol=1e-12)
        assert np.isnan(got[1][np.tril_indices(5)]).all()
    t = np.tril(a) + np.triu(RNG.standard_normal((2, 5, 5)) * 1e3, 1)  # (garbage above)
    for ls, lo, tr, un in np.ndindex(2, 2, 2, 2):
        p = dict(left_side=ls, lower=lo, transpose_a=tr, unit_diagonal=un)
        m = t if lo else np.swapaxes(t, -1, -2).copy()
        rhs = b if ls else np.swapaxes(b, -1, -2).copy()
        out = torch.zeros(rhs.size, dtype=torch.float64)
        avs = [ShapedArray(m.shape, m.dtype), ShapedArray(rhs.shape, rhs.dtype)]
        TL._torch_trisolve(*avs, p).body([torch.from_numpy(x).reshape(-1) for x in (m, rhs)],
                                         [out])  # fmt: skip
        op = np.tril(m) if lo else np.triu(m)
        op = op - op * np.eye(5) + np.eye(5) if un else op
        op = np.swapaxes(op, -1, -2) if tr else op
        if ls:
            want = np.linalg.solve(op, rhs)
        else:  # (X op = B)
            want = np.swapaxes(np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(rhs, -1, -2)),
                               -1, -2)  # fmt: skip
        np.testing.assert_allclose(out.reshape(rhs.shape).numpy(), want, rtol=1e-9, atol=1e-9)


def test_triangular_solve_kernel_flags(monkeypatch):
    """The solve kernel (the operator read column by column) on five flag sets (forward and
    backward substitution, left and right, transposed, unit diagonal) with garbage in the other
    triangle, against JAX; the right-hand sides split over two programs a matrix."""
    _interpret(monkeypatch)
    a = np.tril(_spd((2, 5, 5), np.float64)) + np.triu(RNG.standard_normal((2, 5, 5)) * 1e3, 1)
    b = RNG.standard_normal((2, 5, 6))  # (more columns than a program takes: RHS_BLOCK)
    from functx.lowering.triton import linalg as TL

    assert TL.RHS_BLOCK < b.shape[-1]
    # (the kernel's forward and backward substitutions, on the left and on the right)
    flags = [(True, True, False, False), (True, False, False, False), (True, True, True, True),
             (False, True, True, False), (False, False, True, False)]  # fmt: skip

    def solves(tsolve, a, b):
        out = []
        for ls, lo, tr, un in flags:
            m = a if lo else np.swapaxes(a, -1, -2)
            rhs = b if ls else np.swapaxes(b, -1, -2)
            kw = dict(left_side=ls, lower=lo, transpose_a=tr, unit_diagonal=un)
            out.append(tsolve(m, rhs, **kw))
        return out

    got = _run(lambda a, b: solves(flax.linalg.triangular_solve, a, b), (a, b), 5)
    with jax.default_device(jax.devices("cpu")[0]):
        want = jax.jit(lambda a, b: solves(jll.triangular_solve, a, b))(a, b)
    _same(got, want, 1e-9)


def test_blocked_triangular_solve(monkeypatch):
    """The solve of operators larger than ``MAX_N`` (``trinv`` inverts the diagonal blocks,
    ``trisolve_blocks`` substitutes by blocks with ``tl.dot``) on two blocks and one row
    (blocks of 4 rows in the interpreter, which takes dots smaller than a GPU's 16):
    cho_solve's solve and its transposed one (the upper operator solved as the reversed lower
    one), a right-side transposed unit-diagonal solve, garbage in the other triangles, a
    factor of NaNs (a failed Cholesky: all NaN, as JAX's) and a NaN in B (NaNs where
    substitution puts them: not in the rows solved before it), against JAX."""
    from functx.lowering.triton import linalg as TL

    _interpret(monkeypatch)
    bs = 16 if GPU else 4
    for name in ("MAX_N", "SOLVE_BLOCK", "SOLVE_RHS_BLOCK"):
        monkeypatch.setattr(TL, name, bs)
    monkeypatch.setattr(TL, "SOLVE_K", 2 * bs)  # (products of two blocks' columns, masked)
    n = 2 * bs + 1
    low = np.linalg.cholesky(_spd((2, n, n), np.float64))
    low[1] = np.nan
    low = low + np.triu(RNG.standard_normal((2, n, n)) * 1e3, 1)  # (garbage above)
    b = RNG.standard_normal((2, n, 3))
    b[0, 1, 2] = np.nan  # (the right-side solve's rows 0, 1 of that one: NaN, the rest finite)
    kw = dict(left_side=False, lower=False, transpose_a=True, unit_diagonal=True)

    def solves(np_, sl, tsolve, low, b):
        up, bt = np_.swapaxes(low, -1, -2), np_.swapaxes(b, -1, -2)
        return sl.cho_solve((low, True), b), tsolve(up, bt, **kw)

    got = _run(lambda *x: solves(fnp, fsl, flax.linalg.triangular_solve, *x), (low, b), 3)
    with jax.default_device(jax.devices("cpu")[0]):
        want = jax.jit(lambda *x: solves(jnp, jsl, jll.triangular_solve, *x))(low, b)
    assert np.isnan(got[0][1]).all() and np.isfinite(got[0][0][:, :2]).all()
    assert np.isnan(got[1][0, 2]).sum() == 2
    _same(got, want, 1e-10)


def test_lu_kernel_pivots_as_lapack(monkeypatch):
    """The LU kernel (rows kept in place, swaps exchanging positions) against JAX's CPU
    (LAPACK's getrf): ties of magnitude (the first by position), a zero column (the factors
    kept), a column of NaNs (its row kept) and NaNs in a later column; pivots and permutation
    exactly, factors to rounding."""
    _interpret(monkeypatch)
    x = RNG.integers(-2, 3, (4, 6, 6)).astype(np.float64)
    x[1, :, 3] = 0.0
    x[2, :, 0] = np.nan
    x[3] = RNG.standard_normal((6, 6))
    x[3, :, 2] = np.nan
    got = _run(flax.linalg.lu, (x,), 1)
    with jax.default_device(jax.devices("cpu")[0]):
        want = [np.asarray(w) for w in jax.jit(jll.lu)(x)]
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[2], want[2])
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12, equal_nan=True)
