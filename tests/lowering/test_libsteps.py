"""The library steps' fast paths: LAPACK called from the C++ program (``lowering/cpp/lapack.py``:
cholesky, triangular_solve, lu), ``torch.linalg`` for the linear-algebra steps of a Triton
program (``LibraryStep.torch``) and ``torch.sort`` for long rows of ``sort``/``top_k`` on Triton
(``lowering/triton/sort.py``'s ``SortStep``). Each against the eager implementation (LAPACK
through NumPy/SciPy, NumPy's sorts), which the linalg and sort tests compare with JAX; Triton
runs in its CPU interpreter on CPU tensors."""

from __future__ import annotations

import os

import numpy as np
import pytest

import functx
import functx.lax as flax
import functx.numpy as fnp
import functx.scipy.linalg as fsl
from functx.control import linalg as L
from functx.core import ShapedArray

RNG = np.random.default_rng(0)
TOL = {
    np.dtype(np.float32): 2e-4,
    np.dtype(np.complex64): 2e-4,
    np.dtype(np.float64): 1e-11,
    np.dtype(np.complex128): 1e-11,
}


def _spd(shape, dt):
    a = RNG.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        a = a + 1j * RNG.standard_normal(shape)
    n = shape[-1]
    return (a @ np.conj(np.swapaxes(a, -1, -2)) / n + 2 * np.eye(n)).astype(dt)


def _close(got, want, dt, what):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, what
    tol = TOL.get(np.dtype(want.dtype), 0)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True, err_msg=what)


# the triangular_solve flags: (left_side, lower, transpose_a, conjugate_a, unit_diagonal), every
# combination of the first four (the unit diagonal on half of them)
_TRI = [
    (ls, lo, tr, cj, ls != lo)
    for ls in (True, False)
    for lo in (True, False)
    for tr, cj in ((False, False), (True, False), (True, True), (False, True))
]


def _steps(a, b, w, tri):
    """cholesky, triangular solves, LU (square, tall, wide), cho_solve, eigh, qr, svd."""
    outs = [L.cholesky(a)]
    for ls, lo, tr, cj, un in tri:
        rhs = b if ls else L._T(b)
        outs.append(
            L.triangular_solve(
                a,
                rhs,
                left_side=ls,
                lower=lo,
                transpose_a=tr,
                conjugate_a=cj,
                unit_diagonal=un,
            )
        )
    outs += list(L.lu(a)) + list(L.lu(w)) + list(L.lu(L._T(w)))
    outs.append(fsl.cho_solve(fsl.cho_factor(a), b))
    v, ev = L.eigh_p.bind(a, lower=True, sort_eigenvalues=True, subset_by_index=(1, 4))
    outs += [ev, L.matmul(a, v) - v * ev[..., None, :].astype(v.dtype)]  # (vectors: up to phase)
    outs += [*L.qr_p.bind(w, full_matrices=False), *L.qr_p.bind(L._T(w), full_matrices=True)]
    svd = dict(full_matrices=False, compute_uv=True, subset_by_index=None)
    s, u, vh = L.svd_p.bind(w, **svd)  # (vectors: up to phase)
    outs += [s, L.matmul(u * s[..., None, :].astype(u.dtype), vh)]
    outs.append(L.svd_p.bind(L._T(w), **{**svd, "full_matrices": True})[0])
    outs.append(L.svd_p.bind(w, **{**svd, "compute_uv": False})[0])
    return outs


@pytest.mark.parametrize("dt", [np.float64, np.complex64])  # (float32: the next test)
def test_cpp_calls_lapack_itself(dt):
    a, b = _spd((2, 5, 5), dt), RNG.standard_normal((2, 5, 3)).astype(dt)
    w = RNG.standard_normal((2, 4, 6)).astype(dt)
    # the flag combinations split between the two dtypes (one program each: compile time)
    odd = np.dtype(dt).kind == "c"
    tri = [t for i, t in enumerate(_TRI) if (i + i // 4) % 2 == odd]
    f = functx.jit(lambda a, b, w: _steps(a, b, w, tri))
    got, want = f(a, b, w), _steps(a, b, w, tri)
    for i, (g, e) in enumerate(zip(got, want)):
        _close(g, e, dt, f"output {i}")
    text = f.lower(a, b, w).compile().as_text()
    assert all(
        f"LAPACK {p}" in text for p in ("cholesky", "triangular_solve", "lu", "eigh", "qr", "svd")
    )
    # only a complex conj(A) X = B (no such BLAS op) keeps its host step
    n_host = text.count(": host step ")
    assert n_host == (2 if np.dtype(dt).kind == "c" else 0), n_host


def test_cpp_lapack_batches_on_threads_keep_their_bits(monkeypatch):
    """Every LAPACK step's batch shared out over the OpenMP threads (threshold lowered), each
    thread with workspaces of its own, gives the bits of the one-thread program (float32: the
    steps' code is the same for every dtype but the entry points')."""
    dt = np.float32
    a, b = _spd((7, 6, 6), dt), RNG.standard_normal((7, 6, 3)).astype(dt)
    w = RNG.standard_normal((7, 5, 6)).astype(dt)
    tri = _TRI[:1] + _TRI[5:6]
    from functx.lowering import program_cache
    from functx.lowering.cpp import lapack

    monkeypatch.setattr(program_cache, "key_of", lambda closed: None)  # (keyed on the Jaxpr)
    res = []
    for limit in (lapack.PARALLEL_MIN_MICROS, 0):  # (as it is: one thread for these batches)
        monkeypatch.setattr(lapack, "PARALLEL_MIN_MICROS", limit)
        monkeypatch.setattr(lapack, "MATRIX_MIN_MICROS", limit)
        before = _openblas_threads()
        f = functx.jit(lambda a, b, w: _steps(a, b, w, tri))
        res.append((f.lower(a, b, w).as_text(), [np.asarray(o) for o in f(a, b, w)]))
        assert _openblas_threads() == before  # (the library's thread count given back)
    (text0, serial), (text1, shared) = res
    assert "#pragma omp for" not in text0
    assert text1.count("#pragma omp for schedule(dynamic)") == text1.count(": LAPACK ") >= 9
    for i, (x, y) in enumerate(zip(shared, serial)):
        np.testing.assert_array_equal(x, y, err_msg=f"output {i}")


def _openblas_threads():
    import ctypes

    from functx.lowering.cpp import lapack

    path, prefix, _, bits = lapack.library()
    suffix = "64_" if bits == 64 else ""
    return getattr(ctypes.CDLL(path), f"{prefix}openblas_get_num_threads{suffix}")()


def test_cpp_lapack_edge_cases(no_x64):
    f = functx.jit(lambda x: (fnp.linalg.cholesky(x), L.lu(x)[0]))
    bad = -np.eye(3, dtype=np.float32)[None].repeat(2, 0)
    bad[1] = np.eye(3)
    # each step runs with OpenBLAS on one thread (its idle threads spin against the program's
    # OpenMP threads) and gives the library its thread count back
    assert f.lower(bad).as_text().count("if (fx_lprev != 1) fx_lset(1);") == 2
    before = _openblas_threads()
    chol, lu = f(bad)
    assert _openblas_threads() == before
    assert np.isnan(np.asarray(chol)[0][np.tril_indices(3)]).all()
    np.testing.assert_array_equal(np.asarray(chol)[1], np.eye(3, dtype=np.float32))
    assert np.asarray(lu).dtype == np.float32
    # a singular matrix keeps its factors; an empty one takes the host step
    sing = np.zeros((2, 3, 3), np.float32)
    _close(f(sing)[1], L.lu(sing)[0], np.float32, "singular lu")
    empty = np.zeros((0, 3, 3), np.float32)
    assert np.asarray(f(empty)[0]).shape == (0, 3, 3)


# --- torch.linalg (the Triton runtime's form of the library steps) ------------------------------
torch = pytest.importorskip("torch")


def _step(prim, params, *args):
    in_avals = [ShapedArray(np.shape(x), np.asarray(x).dtype) for x in args]
    outs = prim.abstract_eval(*in_avals, **params)
    outs = outs if isinstance(outs, (list, tuple)) else [outs]
    return L.LibraryStep(prim, params, in_avals, [ShapedArray(o.shape, o.dtype) for o in outs])


def _run_torch(step, args, lanes=False):
    """``step.torch`` on flat CPU tensors (complex ones as interleaved lanes if ``lanes``)."""

    def flat(x):
        t = torch.from_numpy(np.ascontiguousarray(x)).reshape(-1)
        return torch.view_as_real(t).reshape(-1) if lanes and t.is_complex() else t

    outs = []
    for a in step.out_avals:
        t = torch.zeros(a.shape, dtype=getattr(torch, np.dtype(a.dtype).name)).reshape(-1)
        outs.append(torch.view_as_real(t).reshape(-1) if lanes and t.is_complex() else t)
    step.torch([flat(x) for x in args], outs)
    res = []
    for o, a in zip(outs, step.out_avals):
        if np.dtype(a.dtype).kind == "c" and not o.is_complex():
            o = torch.view_as_complex(o.reshape(-1, 2))
        res.append(o.reshape(a.shape).numpy())
    return res


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64, np.complex128])
def test_torch_linalg_steps_match_lapack(dt):
    dt = np.dtype(dt)
    lanes = dt.kind == "c" and dt == np.complex64  # (one complex dtype as lanes)
    a, b = _spd((2, 4, 4), dt), RNG.standard_normal((2, 4, 3)).astype(dt)
    w = RNG.standard_normal((2, 3, 5)).astype(dt)
    cases = [(L.cholesky_p, {}, (a,))]
    for ls, lo, tr, cj, un in _TRI[::2]:
        p = dict(left_side=ls, lower=lo, transpose_a=tr, conjugate_a=cj, unit_diagonal=un)
        cases.append((L.triangular_solve_p, p, (a, b if ls else np.swapaxes(b, -1, -2).copy())))
    cases += [(L.lu_p, {}, (x,)) for x in (a, w, np.swapaxes(w, -1, -2).copy())]
    cases += [(L.qr_p, {"full_matrices": fm}, (w,)) for fm in (True, False)]
    svd = dict(full_matrices=False, compute_uv=True, subset_by_index=None)
    cases += [(L.svd_p, svd, (w,)), (L.svd_p, {**svd, "compute_uv": False}, (w,))]
    cases.append(
        (L.lu_pivots_to_permutation_p, {"permutation_size": 5}, (np.array([[2, 3]], np.int32),))
    )
    cases.append((L.cholesky_p, {}, (np.zeros((0, 2, 2), dt),)))
    for prim, params, args in cases:
        step = _step(prim, params, *args)
        got, want = _run_torch(step, args, lanes), step(*args)
        for i, (g, e) in enumerate(zip(got, want)):
            what = f"{prim.name} {params} output {i}"
            if prim is L.qr_p or (prim is L.svd_p and i > 0):  # (signs: up to a unit phase)
                _close(np.abs(g), np.abs(np.asarray(e, g.dtype)), dt, what)
            else:
                _close(g, np.asarray(e, g.dtype), dt, what)
    # eigh: the eigenvalues (ascending) and A V = V diag(w)
    for lower, sub in ((True, None), (False, (1, 3))):
        p = dict(lower=lower, sort_eigenvalues=True, subset_by_index=sub)
        step = _step(L.eigh_p, p, a)
        (v, ev), (_, ew) = _run_torch(step, (a,), lanes), step(a)
        _close(ev, ew, dt, "eigh eigenvalues")
        _close(a @ v, v * ev[..., None, :].astype(dt), dt, "eigh eigenvectors")
    # a matrix that is not positive definite gives NaNs
    (c,) = _run_torch(_step(L.cholesky_p, {}, a), (-a,))
    assert np.isnan(c).all()


def test_triton_program_runs_linalg_on_the_device(monkeypatch):
    """A Triton program's linear-algebra steps run on the device's tensors (the small-matrix
    kernels of lowering/triton/linalg.py here), never through NumPy copies."""
    pytest.importorskip("triton")
    import torch

    from functx.lowering.triton.program import compile_triton
    from functx.transforms import passes

    gpu = os.environ.get("FUNCTX_TEST_TRITON_GPU", "0") not in ("", "0")
    gpu = gpu and torch.cuda.is_available()
    monkeypatch.setenv("TRITON_INTERPRET", "0" if gpu else "1")
    a, b = _spd((2, 4, 4), np.float64), RNG.standard_normal((2, 4, 2))
    calls = []
    real = L.LibraryStep.__call__
    monkeypatch.setattr(L.LibraryStep, "__call__", lambda s, *v: calls.append(s) or real(s, *v))

    def f(a, b):
        return fsl.cho_solve(fsl.cho_factor(a), b), fnp.linalg.solve(a, b), fnp.linalg.eigvalsh(a)

    exe = compile_triton(passes.simplify(functx.make_jaxpr(f)(a, b)))
    args = [torch.as_tensor(x, device="cuda") for x in (a, b)] if gpu else (a, b)
    got = [t.cpu().numpy() for t in exe(*args)]
    for i, (g, e) in enumerate(zip(got, f(a, b))):
        _close(g, np.asarray(e), np.float64, f"output {i}")
    assert "_fx_host(" in exe.source and not calls  # (torch, not the NumPy copies)


# --- torch.sort for long rows on Triton ----------------------------------------------------------
def _sort_cases(x, ints, u64, flags):
    return [
        flax.sort(x),
        flax.sort(x.T, dimension=0),
        fnp.argsort(x),
        *flax.top_k(x, 7),
        *flax.top_k(x.astype(np.float64), 150),
        *flax.top_k(x.astype(np.float16), 5),
        *flax.sort((ints[0], ints[1], x), num_keys=2),
        flax.sort(u64),
        flax.sort(flags),
        *flax.sort_key_val(x[:, :20], ints[1][:, :20]),  # (short rows: the ranking kernel)
    ]


def test_triton_sorts_long_rows_with_torch(monkeypatch):
    pytest.importorskip("triton")
    from functx.lowering.triton import sort as tsort
    from functx.lowering.triton.program import compile_triton
    from functx.transforms import passes

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    n = tsort.TORCH_ROW_MIN + 72
    x = RNG.standard_normal((3, n)).astype(np.float32)
    x[0, :10], x[0, 10:20] = np.nan, -np.float32(np.nan)
    x[1, :50], x[1, 50:100] = 0.0, -0.0
    x[2, 5:9], x[2, 9:12] = np.inf, -np.inf
    ints = (
        RNG.integers(0, 3, (3, n)).astype(np.uint32),
        RNG.integers(-2, 2, (3, n)).astype(np.int8),
    )
    u64 = (RNG.integers(0, 2**62, (2, n)).astype(np.uint64) * 3).astype(np.uint64)
    flags = RNG.integers(0, 2, (2, n)).astype(bool)
    args = (x, ints, u64, flags)
    exe = compile_triton(passes.simplify(functx.make_jaxpr(_sort_cases)(*args)))
    leaves = functx.tree_util.tree_leaves(args)
    got = [t.numpy() for t in exe(*leaves)]
    want = [np.asarray(w) for w in _sort_cases(*args)]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):  # bit for bit (signed zeros, NaNs, ties)
        assert g.dtype == w.dtype and g.shape == w.shape, i
        np.testing.assert_array_equal(g.view(np.uint8), np.ascontiguousarray(w).view(np.uint8))
    assert exe.source.count("_fx_host(") == 9  # every long-row sort; the short one is a kernel
    # the step's NumPy form (for a runtime without the torch method) gives the same
    step = next(c[0] for c in exe.host_calls if isinstance(c[0], tsort.SortStep))
    np.testing.assert_array_equal(step(x)[0], want[0])
