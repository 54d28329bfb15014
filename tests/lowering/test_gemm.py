"""``functx/lowering/cpp/gemm.py``: functx's AVX-512 float32 product in the BLAS pieces of
``cpp/dot.py``, against NumPy in float64 at every edge of its blocking (rows past a 6-row tile,
columns past a 64-column panel, terms past a 16-term transpose, several contraction blocks,
several column and row blocks), both layouts of each operand, batches and added buffers."""

import ctypes
import os
import shutil

import numpy as np
import pytest

import functx
from functx.lowering import cache, toolchain
from functx.lowering.cpp import dot, gemm, native

# (lhs shape, rhs shape, lhs transposed, rhs transposed): products of 2^15 multiply-adds or more
_CASES = [
    ((127, 77), (77, 200), False, False),  # 127 rows: 20 tiles of 6, one of 3 and one of 4
    ((77, 127), (77, 200), True, False),
    ((64, 600), (130, 600), False, True),  # 600 terms: two blocks of 300, not multiples of 16
    ((600, 64), (130, 600), True, True),
    ((40, 300), (300, 1100), False, False),  # columns past one packed block of B (384 at 300)
    ((800, 40), (800, 70), True, False),  # 800 rows: two row blocks (768), 70 columns
]


_OWN = pytest.mark.skipif(
    not gemm.host_has_avx512() or dot.blas_threads() is None, reason="AVX-512 and OpenBLAS"
)


def _library_calls(path):
    return ctypes.c_int64.in_dll(ctypes.CDLL(path), "fx_sgemm512_calls").value


def _own_runs(src):
    return src.count(f"fx_gemm_run({gemm.NAME}{{")


def _products(*ops):
    out = []
    for (a, b), (_, _, ta, tb) in zip(zip(ops[0::2], ops[1::2]), _CASES):
        out.append((a.T if ta else a) @ (b.T if tb else b))
    return out


def _updates(w, x, d, u, a, b):
    # an SGD step (rows of C cut) and an added buffer with columns of C cut, alpha = -0.5
    return w - 0.1 * (x.T @ d), u - 0.5 * (a @ b), functx.numpy.matmul(a[None], b[None] * 2)


@_OWN
def test_own_gemm_matches_float64():
    rng = np.random.default_rng(0)
    ops = []
    for sa, sb, _, _ in _CASES:
        ops += [rng.standard_normal(s).astype(np.float32) for s in (sa, sb)]
    upd = [rng.standard_normal(s).astype(np.float32) for s in [(256, 192), (128, 256)]]
    upd += [rng.standard_normal(s).astype(np.float32) for s in [(128, 192), (64, 1000)]]
    upd += [rng.standard_normal(s).astype(np.float32) for s in [(64, 96), (96, 1000)]]
    kept = [a.copy() for a in upd]
    f = functx.jit(lambda *a: (_products(*a[:12]), _updates(*a[12:])))
    src = f.lower(*ops, *upd).as_text()
    assert _own_runs(src) >= 1 and "fx_gemm_run(fx_sgemm," not in src
    before = _library_calls(gemm.library())  # (built: the program runs the kernel, not OpenBLAS)
    got = f(*ops, *upd)
    assert _library_calls(gemm.library()) >= before + len(_CASES) + 3  # (a piece or more each)
    wide = [a.astype(np.float64) for a in ops + upd]
    want = _products(*wide[:12]), _updates(*wide[12:])
    absw = _products(*map(np.abs, wide[:12]))
    for r, w, s in zip([*got[0], *got[1]], [*want[0], *want[1]], [*absw, None, None, None]):
        scale = np.abs(w).max() if s is None else s  # (|A| |B|: the bound of a float32 sum)
        assert r.dtype == np.float32 and r.shape == w.shape
        assert np.all(np.abs(np.asarray(r, np.float64) - w) <= 2e-6 * scale)
    for a, k in zip(upd, kept):
        np.testing.assert_array_equal(a, k)


@_OWN
def test_own_gemm_where_it_applies(monkeypatch):
    """Float32 products run through ``fx_own_sgemm``, whose pieces of enough columns and terms
    call the kernel (narrow ones OpenBLAS); float64 and ``dot.OWN_GEMM = False`` keep
    OpenBLAS's routine."""
    from functx.lowering import program_cache

    monkeypatch.setattr(program_cache, "key_of", lambda closed: None)  # (keyed on the Jaxpr)
    a = np.ones((128, 784), np.float32)
    narrow = functx.jit(lambda a, c: a @ c)
    c = np.ones((784, 10), np.float32)
    assert _own_runs(narrow.lower(a, c).as_text()) == 1
    before = _library_calls(gemm.library())
    np.testing.assert_array_equal(np.asarray(narrow(a, c)), np.full((128, 10), 784.0))
    assert _library_calls(gemm.library()) == before  # (10 columns: OpenBLAS)
    wide = lambda a, b: (a @ b, a.astype(np.float64) @ b.astype(np.float64))  # noqa: E731
    assert _own_runs(functx.jit(wide).lower(a, a.T.copy()).as_text()) == 1
    monkeypatch.setattr(dot, "OWN_GEMM", False)
    assert _own_runs(functx.jit(wide).lower(a, a.T.copy()).as_text()) == 0


def _sgd_step():
    rng = np.random.default_rng(1)
    w, x, d = (rng.standard_normal(s).astype(np.float32) for s in [(96, 200), (64, 96), (64, 200)])
    return functx.jit(lambda w, x, d: w - 0.1 * (x.T @ d)), (w, x, d)


@_OWN
def test_own_gemm_only_through_the_routine_it_is_given(monkeypatch):
    """A program opens no library itself: it calls the kernel only through the routine
    ``gemm.give`` sets before its first run (the library this process loaded after its
    checks), and without it ``fx_own_sgemm`` copies ``U`` and calls OpenBLAS: the same values
    (float64 reference), the library's counter unchanged."""
    from functx.lowering import program_cache

    monkeypatch.setattr(program_cache, "key_of", lambda closed: None)  # (keyed on the Jaxpr)
    f, (w, x, d) = _sgd_step()
    src = f.lower(w, x, d).as_text()
    assert _own_runs(src) == 1 and "dlopen" not in src.split("struct fx_own_sgemm")[1][:1200]
    before = _library_calls(gemm.library())
    monkeypatch.setattr(gemm, "give", lambda program, source: None)
    want = w - 0.1 * (x.T.astype(np.float64) @ d)
    np.testing.assert_allclose(np.asarray(f(w, x, d)), want, rtol=1e-5, atol=1e-5)
    assert _library_calls(gemm.library()) == before


def _first_calls(f, args, n=4):
    first = np.asarray(f(*args))
    for _ in range(n - 1):
        np.testing.assert_array_equal(np.asarray(f(*args)), first)
    return first


def _fresh_library(monkeypatch, prebuilt_path):
    """``gemm.LIBRARY`` as a process starts with it, installed at ``prebuilt_path``."""
    lib = native.Library("fx_sgemm512", "fx_sgemm512.cpp")
    lib.prebuilt_path = str(prebuilt_path)
    monkeypatch.setattr(gemm, "LIBRARY", lib)
    return lib


@_OWN
def test_a_programs_first_call_waits_for_the_library(monkeypatch, tmp_path):
    """A program's first run waits for the kernel's library where its build is running (none
    installed with functx: built in the cache): its first call's products are the library's,
    and every later call gives the same bits (with OpenBLAS on the first calls and the kernel
    later, the MLP step's results changed in the last bits from its 14th call on)."""
    from functx.lowering import program_cache

    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))  # (an empty cache: a build to wait for)
    lib = _fresh_library(monkeypatch, tmp_path / "none" / "fx_sgemm512.so")
    monkeypatch.setattr(program_cache, "key_of", lambda closed: None)  # (keyed on the Jaxpr)
    f, args = _sgd_step()
    first = _first_calls(f, args)
    assert "lib" in lib.state and "thread" in lib.state, lib.state.get("error")
    assert gemm.library(wait=False).startswith(str(tmp_path))
    assert _library_calls(gemm.library(wait=False)) == 4
    np.testing.assert_allclose(first, _sgd_want(*args), rtol=1e-5, atol=1e-5)


def _sgd_want(w, x, d):
    return w - 0.1 * (x.T.astype(np.float64) @ d)


@_OWN
def test_the_library_built_at_install_is_used_and_gives_the_same_bits(monkeypatch, tmp_path):
    """Where functx was installed with the library built for this machine (``setup.py``), a
    process loads it at once, builds nothing and waits for nothing; a program's results have
    the bits they have with the library built in the cache (the library here: the install
    step's build, ``toolchain.build_library``, where this process uses the cache's)."""
    from functx.lowering import program_cache

    f, args = _sgd_step()
    built = _first_calls(f, args)  # (this process's library: the cache's or the installed one)
    used = gemm.library()
    so = str(tmp_path / "pkg" / "fx_sgemm512.so")
    if used == gemm.LIBRARY.prebuilt_path:  # (an install's: copied, with its record)
        os.makedirs(os.path.dirname(so))
        for ext in (".so", ".json"):
            shutil.copyfile(used[:-3] + ext, so[:-3] + ext)
    else:  # (the cache's: the install step builds another, 0.9 s of gcc CPU)
        src = os.path.join(native._HERE, "fx_sgemm512.cpp")
        assert toolchain.build_library(src, so) is None
    monkeypatch.setattr(program_cache, "key_of", lambda closed: None)  # (keyed on the Jaxpr)
    lib = _fresh_library(monkeypatch, so)
    monkeypatch.setattr(lib, "compile", None)  # (nothing is compiled for it)
    f, args = _sgd_step()
    f.lower(*args)
    assert lib.state.keys() == {"lib", "path"} and gemm.library() == so
    np.testing.assert_array_equal(_first_calls(f, args), built)
    assert _library_calls(so) == 4


@_OWN
def test_a_failed_workspace_allocation_is_a_memory_error(monkeypatch):
    """Where the kernel cannot allocate its workspace it writes nothing and returns 1 (it used
    to abort the process), and a program calling it returns 1: ``MemoryError``; the next call
    after memory comes back gives the usual result (a test switch in the library makes the
    allocation fail)."""
    from functx.lowering import program_cache

    monkeypatch.setattr(program_cache, "key_of", lambda closed: None)  # (keyed on the Jaxpr)
    f, args = _sgd_step()
    first = _first_calls(f, args, 1)
    lib = ctypes.CDLL(gemm.library())
    fail = ctypes.c_int.in_dll(lib, "fx_sgemm512_fail_alloc")
    fn = lib.fx_sgemm512
    P, I = ctypes.c_void_p, ctypes.c_int64
    fn.argtypes = [ctypes.c_int, ctypes.c_int, I, I, I, ctypes.c_float, P, I, P, I, P, I, P]
    a = np.ones((64, 64), np.float32)
    c = np.full((64, 64), np.nan, np.float32)
    fail.value = 1
    try:
        assert fn(0, 0, 64, 64, 64, 1.0, a.ctypes.data, 64, a.ctypes.data, 64, c.ctypes.data, 64,
                  None) == 1  # fmt: skip
        assert np.isnan(c).all()
        with pytest.raises(MemoryError):
            f(*args)
    finally:
        fail.value = 0
    assert fn(0, 0, 64, 64, 64, 1.0, a.ctypes.data, 64, a.ctypes.data, 64, c.ctypes.data, 64,
              None) == 0  # fmt: skip
    np.testing.assert_array_equal(c, a @ a)
    np.testing.assert_array_equal(np.asarray(f(*args)), first)


def test_own_gemm_library_builds_beside_the_programs(monkeypatch, tmp_path):
    """Where none was installed, the kernel's library is compiled once, on a thread of its own
    (``cache.background_thread``) whose compilers keep the usual priority: the first run of a
    program using it waits for it, so it does not yield the cores to the program's
    compilers."""
    started = []
    lib = _fresh_library(monkeypatch, tmp_path / "none.so")  # (this process's stays as it is)
    monkeypatch.setattr(gemm, "host_has_avx512", lambda: True)

    def thread(fn, yield_cpu=True):
        started.append((fn, yield_cpu))
        return "thread"

    monkeypatch.setattr(cache, "background_thread", thread)
    gemm.start_build()
    gemm.start_build()
    assert started == [(lib.compile, False)] and lib.state["thread"] == "thread"


@pytest.mark.skipif(not gemm.host_has_avx512(), reason="AVX-512")
@pytest.mark.parametrize("tb", [0, 1])
def test_own_gemm_transposed_a_every_block(tb):
    """A transposed A is packed once per block of rows and terms and serves every block of B's
    columns (the library called directly: two row blocks of 768, two blocks of 300 terms, two
    of 384 columns, with an added buffer), against NumPy in float64; the result's bits do not
    depend on the order of the blocks (the same product cut in two pieces of columns)."""
    f = ctypes.CDLL(gemm.library()).fx_sgemm512
    P, I = ctypes.c_void_p, ctypes.c_int64
    f.argtypes = [ctypes.c_int, ctypes.c_int, I, I, I, ctypes.c_float, P, I, P, I, P, I, P]
    m, n, k = 800, 700, 600
    rng = np.random.default_rng(1)
    a = rng.standard_normal((k, m)).astype(np.float32)  # op(A) = a.T
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    u = rng.standard_normal((m, n)).astype(np.float32)
    c = np.full((m, n), np.nan, np.float32)
    ldb = k if tb else n
    f(1, tb, m, n, k, -0.5, a.ctypes.data, m, b.ctypes.data, ldb, c.ctypes.data, n, u.ctypes.data)
    bb = (b.T if tb else b).astype(np.float64)
    want = u + -0.5 * (a.T.astype(np.float64) @ bb)
    bound = 0.5 * (np.abs(a.T).astype(np.float64) @ np.abs(bb))
    assert np.all(np.abs(c - want) <= 2e-6 * bound + 1e-6 * np.abs(u))
    halves = np.full((m, n), np.nan, np.float32)
    for j0, j1 in ((0, 320), (320, n)):  # (B's columns from j0: the row or the column offset)
        off = j0 * k if tb else j0
        f(1, tb, m, j1 - j0, k, -0.5, a.ctypes.data, m, b.ctypes.data + 4 * off, ldb,
          halves.ctypes.data + 4 * j0, n, u.ctypes.data + 4 * j0)  # fmt: skip
    np.testing.assert_array_equal(halves, c)
