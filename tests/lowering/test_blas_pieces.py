"""BLAS-sized products under C++ ``jit`` run as pieces on the program's OpenMP threads with
OpenBLAS on one thread (``functx/lowering/cpp/dot.py``): every split (rows of C, columns of C),
both operand layouts and batches give NumPy's product, and OpenBLAS's thread count is restored."""

import numpy as np
import pytest

import functx
from functx.lowering.cpp import dot

pytestmark = pytest.mark.skipif(dot.blas_threads() is None, reason="no OpenBLAS thread control")


def _products(a, b, c, d, e, f, g):
    return (
        a @ b,  # rows of C cut: (1024, 256) @ (256, 128)
        c @ d,  # columns of C cut: (64, 512) @ (512, 1024)
        functx.numpy.matmul(e, f),  # batched (3, 256, 256) @ (3, 256, 128)
        a.T @ a[:, :128],  # A read transposed: (256, 1024) @ (1024, 128)
        c @ g.T,  # B read transposed: (64, 512) @ (512, 1024)
        a.astype(np.float64) @ b.astype(np.float64),  # dgemm
    )


def test_blas_pieces_match_numpy():
    rng = np.random.default_rng(0)
    shapes = [(1024, 256), (256, 128), (64, 512), (512, 1024), (3, 256, 256), (3, 256, 128)]
    shapes.append((1024, 512))
    args = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    before = _openblas_threads()
    f = functx.jit(_products)
    src = f.lower(*args).as_text()
    assert src.count("fx_bset(1)") == 6 and "schedule(dynamic)" in src
    got = f(*args)
    assert _openblas_threads() == before
    want = _products(*(a.astype(np.float64) for a in args))
    for k, (r, w) in enumerate(zip(got, want)):
        dt = np.float64 if k == len(want) - 1 else np.float32
        assert r.dtype == dt and r.shape == w.shape
        tol = 1e-4 if dt == np.float32 else 1e-12
        np.testing.assert_allclose(np.asarray(r), w, rtol=tol, atol=tol * np.abs(w).max())


def _openblas_threads():
    import ctypes

    path, _, get = dot.blas_threads()
    fn = getattr(ctypes.CDLL(path), get)
    fn.restype = ctypes.c_int
    return fn()


def test_blas_pieces_span_at_least_256():
    """The MLP step's 128x784 @ 784x1024 is cut into 4 column pieces of 256, not 16 of 64: each
    piece repacks all of A (``dot._BLAS_PIECE_SPAN``)."""
    a = np.ones((128, 784), np.float32)
    b = np.ones((784, 1024), np.float32)
    src = functx.jit(lambda x, y: x @ y).lower(a, b).as_text()
    assert "q < 4LL" in src and "p * 1024LL / 4LL" in src


def test_matmul_cpu_library_harness(monkeypatch, capsys):
    """``benchmarks/matmul_cpu.py --libs``'s C harness calls NumPy's OpenBLAS through its cblas
    entry point uncut and cut into pieces, both operand layouts, and checks each product against
    float64 (its assertion) before reporting GFLOP/s."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parents[2] / "benchmarks" / "matmul_cpu.py"
    spec = importlib.util.spec_from_file_location("matmul_cpu_bench", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    shapes = [("nn", 48, 96, 40, False, False), ("tt", 96, 48, 40, True, True)]
    monkeypatch.setattr(bench, "MLP_GEMMS", shapes)
    before = _openblas_threads()
    try:
        bench._one_library("numpy", 1, ["1", "2x2", "2x8"])
    finally:  # (the harness leaves NumPy's OpenBLAS on one thread)
        import ctypes

        path, set_, _ = dot.blas_threads()
        getattr(ctypes.CDLL(path), set_)(before)
    assert _openblas_threads() == before
    out = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("RESULT ")]
    assert len(out) == 6 and all(float(ln.split("|")[3]) > 0 for ln in out)
