"""Matrix products of the CPU benchmark shapes: functx.jit against NumPy's matmul (its own
OpenBLAS) and jax.jit, in one process. functx generates vectorised loops for small products and
calls NumPy's OpenBLAS, on one thread per piece, above that (see ``lowering/cpp/dot.py``).

Shapes: the per-sample-gradient MLP (256-256-256-10, batch 128) forward and backward products,
and one square product above the threshold. Each library's time is the best of 3 alternating
rounds, each the median of ``--reps`` calls; results are checked against NumPy in float64.

``--crossover``: generated code against the BLAS call, both under functx.jit.

``--libs [numpy,openblas32,openblas64,mkl,blis,jax,functx]``: the BLAS libraries' sgemm at the
MLP SGD step's products (784-1024-1024-10, batch 128, ``MLP_GEMMS``), each library in a process
of its own, ``--rounds`` alternating rounds: one thread; the library's own two threads; two
OpenMP threads taking 2 or 8 pieces with the library on one thread (as functx's programs call it). A
small C harness (compiled with gcc here) calls the library's entry point from the installed
package's directory: NumPy's bundled OpenBLAS, the scipy-openblas32 / scipy-openblas64 wheels,
the mkl wheel's ``libmkl_rt`` (``sys.prefix/lib`` or ``FX_MKL_DIR``), the blis wheel's
extension module; ``functx`` is functx's own AVX-512 kernel (``lowering/cpp/gemm.py``, built with
g++ here); ``jax`` times ``jax.jit``'s own product (pinned to one core with ``taskset``, then on
both). Every result is checked against a float64 product first. Libraries not installed are
skipped. The table ends with one core's float32 FMA peak (``fma_peak``: register-only FMA loops,
AVX-512 and AVX2) and each library's one-thread rate as a fraction of it. Figures:
benchmarks/RESULTS.md (session 30, blas20; session 33, mlp20d).

``--step [mlp|gpt|cnn] --reps N [--variants before,fold,fold+join,own]``: a training step of
``workloads.py`` compiled once per setting of ``lowering/cpp/dot.py``'s switches (``FOLD_UPDATES``:
``U + c * (A @ B)`` as one product; ``JOIN_PRODUCTS``: independent consecutive products' pieces in
one loop; ``OWN_GEMM``: float32 pieces through ``cpp/gemm.py``'s AVX-512 kernel), the variants'
calls interleaved in one process so that each sees the same load.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

SHAPES = [  # (name, lhs shape, rhs shape)
    ("x @ w1: (128,256) @ (256,256)", (128, 256), (256, 256)),
    ("h @ w3: (128,256) @ (256,10)", (128, 256), (256, 10)),
    ("d3 @ w3.T: (128,10) @ (10,256)", (128, 10), (10, 256)),
    ("d2 @ w2.T: (128,256) @ (256,256)", (128, 256), (256, 256)),
    ("batched (128,1,256) @ (128,256,1)", (128, 1, 256), (128, 256, 1)),
    ("square (1024,1024) @ (1024,1024)", (1024, 1024), (1024, 1024)),
]


def median_time(fn, reps):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2]


CROSSOVER = [  # (lhs, rhs): square ones, the MLP's, the 3x3 convolution's tap products
    ((16, 16), (16, 16)),
    ((32, 32), (32, 32)),
    ((64, 64), (64, 64)),
    ((128, 10), (10, 256)),
    ((128, 256), (256, 10)),
    ((128, 256), (256, 256)),
    ((256, 64), (64, 64)),
    ((1024, 64), (64, 64)),
    ((2048, 64), (64, 64)),
    ((4096, 64), (64, 64)),
    ((8192, 64), (64, 64)),
    ((16384, 64), (64, 64)),
    ((64, 4096), (4096, 64)),
    ((128, 128), (128, 128)),
    ((256, 256), (256, 256)),
    ((512, 512), (512, 512)),
]


def crossover(reps):
    """Generated code (``fx_gemm``) against the BLAS call (pieces on the OpenMP threads, OpenBLAS
    on one thread) for the same product, both under functx.jit, by forcing
    ``lowering/cpp/dot.py``'s threshold ``_SMALL_GEMM`` each way: best of 3 alternating rounds of
    the median wall and CPU (``process_time``) time of ``reps`` calls."""
    import functx
    from functx.lowering.cpp import dot

    rng = np.random.default_rng(0)
    print(f"{'product (float32)':32s} {'MACs':>6s} {'generated us':>18s} {'BLAS us':>18s}")
    for sa, sb in CROSSOVER:
        a = rng.standard_normal(sa).astype(np.float32)
        b = rng.standard_normal(sb).astype(np.float32)
        fns = {}
        # (two precisions, which the C++ backend ignores, so that the two programs differ for the
        # program cache)
        for name, limit, prec in (("gen", 1 << 62, None), ("blas", 0, "highest")):
            dot._SMALL_GEMM = limit
            f = functx.jit(lambda x, y, p=prec: functx.numpy.matmul(x, y, precision=p))
            f.lower(a, b)  # (the threshold is read when the program is generated)
            functx.block_until_ready(f(a, b))
            fns[name] = f
        best = {}
        for _ in range(3):
            for name, f in fns.items():
                ws, cs = [], []
                for _ in range(reps):
                    t, c = time.perf_counter(), time.process_time()
                    functx.block_until_ready(f(a, b))
                    ws.append(time.perf_counter() - t)
                    cs.append(time.process_time() - c)
                w, c = sorted(ws)[reps // 2], sorted(cs)[reps // 2]
                pw, pc = best.get(name, (w, c))
                best[name] = (min(w, pw), min(c, pc))
        macs = sa[0] * sa[1] * sb[1]
        cells = [f"{w * 1e6:8.0f}/{c * 1e6:8.0f}" for w, c in (best["gen"], best["blas"])]
        name = f"{sa} @ {sb}"
        print(f"{name:32s} 2^{np.log2(macs):4.1f} {cells[0]:>18s} {cells[1]:>18s}")


# --- BLAS libraries compared (``--libs``) -------------------------------------------------------

# The MLP SGD step's products (784-1024-1024-10, batch 128): (name, m, n, k, A transposed,
# B transposed) with C = op(A) op(B) row-major, as the step's program calls them
MLP_GEMMS = [
    ("x @ w0        128x784 @ 784x1024", 128, 1024, 784, False, False),
    ("h0 @ w1       128x1024 @ 1024x1024", 128, 1024, 1024, False, False),
    ("d1 @ w1.T     128x1024 @ (1024x1024).T", 128, 1024, 1024, False, True),
    ("h0.T @ d1     (128x1024).T @ 128x1024", 1024, 1024, 128, True, False),
    ("x.T @ d0      (128x784).T @ 128x1024", 784, 1024, 128, True, False),
]

_HARNESS = r"""
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* kinds: 0 cblas ILP64, 1 cblas LP64, 2 BLIS's typed API */
typedef void (*cb64_t)(int, int, int, int64_t, int64_t, int64_t, float, const float*, int64_t,
                       const float*, int64_t, float, float*, int64_t);
typedef void (*cb32_t)(int, int, int, int, int, int, float, const float*, int, const float*, int,
                       float, float*, int);
typedef void (*blis_t)(int, int, int64_t, int64_t, int64_t, const float*, const float*, int64_t,
                       int64_t, const float*, int64_t, int64_t, const float*, float*, int64_t,
                       int64_t);
static void gemm(int kind, void* fn, int ta, int tb, int64_t m, int64_t n, int64_t k,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                 int64_t ldc) {
  const float one = 1.f, zero = 0.f;
  if (kind == 0)
    ((cb64_t)fn)(101, ta ? 112 : 111, tb ? 112 : 111, m, n, k, 1.f, a, lda, b, ldb, 0.f, c, ldc);
  else if (kind == 1)
    ((cb32_t)fn)(101, ta ? 112 : 111, tb ? 112 : 111, (int)m, (int)n, (int)k, 1.f, a, (int)lda,
                 b, (int)ldb, 0.f, c, (int)ldc);
  else  /* BLIS_TRANSPOSE is 8; row-major: row stride ld, column stride 1 */
    ((blis_t)fn)(ta ? 8 : 0, tb ? 8 : 0, m, n, k, &one, a, lda, 1, b, ldb, 1, &zero, c, ldc, 1);
}
static double clk(clockid_t id) {
  struct timespec t;
  clock_gettime(id, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}
static int cmp(const void* x, const void* y) {
  double a = *(const double*)x, b = *(const double*)y;
  return a < b ? -1 : a > b;
}
/* `reps` products C (m x n) = op(A) op(B); out[0..3]: the fastest and the median wall seconds,
   the fastest and the median process CPU seconds of a call. pieces <= 1: one call (on the
   library's own threads, if it has more than one); else C's longer side cut into `pieces`, taken
   by two OpenMP threads (schedule(dynamic)) each calling the library on one thread, as functx's
   programs do (lowering/cpp/dot.py). */
void fx_bench(int kind, void* fn, int ta, int tb, int64_t m, int64_t n, int64_t k,
              const float* a, const float* b, float* c, int pieces, int reps, double* out) {
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  double* ws = (double*)malloc(sizeof(double) * reps);
  double* cs = (double*)malloc(sizeof(double) * reps);
  for (int r = -2; r < reps; ++r) {
    const double w0 = clk(CLOCK_MONOTONIC), c0 = clk(CLOCK_PROCESS_CPUTIME_ID);
    if (pieces <= 1) {
      gemm(kind, fn, ta, tb, m, n, k, a, lda, b, ldb, c, n);
    } else {
      const int rows = m >= n;
      const int64_t span = rows ? m : n;
      #pragma omp parallel for schedule(dynamic) num_threads(2)
      for (int p = 0; p < pieces; ++p) {
        const int64_t p0 = p * span / pieces, p1 = (p + 1) * span / pieces;
        if (rows)
          gemm(kind, fn, ta, tb, p1 - p0, n, k, a + (ta ? p0 : p0 * k), lda, b, ldb, c + p0 * n,
               n);
        else
          gemm(kind, fn, ta, tb, m, p1 - p0, k, a, lda, b + (tb ? p0 * k : p0), ldb, c + p0, n);
      }
    }
    if (r >= 0) {
      ws[r] = clk(CLOCK_MONOTONIC) - w0;
      cs[r] = clk(CLOCK_PROCESS_CPUTIME_ID) - c0;
    }
  }
  qsort(ws, reps, sizeof(double), cmp);
  qsort(cs, reps, sizeof(double), cmp);
  out[0] = ws[0], out[1] = ws[reps / 2], out[2] = cs[0], out[3] = cs[reps / 2];
  free(ws);
  free(cs);
}
"""


def _find(patterns):
    """The first existing file among glob ``patterns`` (searched in order), or None."""
    import glob

    for p in patterns:
        hits = sorted(glob.glob(p))
        if hits:
            return hits[0]
    return None


def _site_dirs():
    import site
    import sys

    return [*sys.path, *site.getsitepackages()]


def blas_library(name):
    """``(kind, path, gemm symbol, set-threads symbol)`` of an installed library, or None.

    ``numpy``: NumPy's bundled OpenBLAS (ILP64); ``openblas32``: the scipy-openblas32 wheel;
    ``openblas64``: the scipy-openblas64 wheel; ``mkl``: the mkl wheel's ``libmkl_rt`` (LP64);
    ``blis``: the blis wheel's extension module, whose BLIS symbols are exported."""
    import os

    sites = _site_dirs()
    if name == "numpy":
        d = os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs")
        path = _find([os.path.join(d, "*openblas64*.so*")])
        return path and (0, path, "scipy_cblas_sgemm64_", "scipy_openblas_set_num_threads64_")
    if name == "openblas32":
        path = _find([os.path.join(s, "scipy_openblas32", "lib", "*.so") for s in sites])
        return path and (1, path, "scipy_cblas_sgemm", "scipy_openblas_set_num_threads")
    if name == "openblas64":
        path = _find([os.path.join(s, "scipy_openblas64", "lib", "*.so") for s in sites])
        return path and (0, path, "scipy_cblas_sgemm64_", "scipy_openblas_set_num_threads64_")
    if name == "mkl":
        import sys

        dirs = [os.path.join(sys.prefix, "lib"), *os.environ.get("FX_MKL_DIR", "").split(":")]
        path = _find([os.path.join(d, "libmkl_rt.so*") for d in dirs if d])
        return path and (1, path, "cblas_sgemm", "MKL_Set_Num_Threads")
    if name == "blis":
        try:
            import blis.cy
        except ImportError:
            return None
        return (2, blis.cy.__file__, "bli_sgemm", "bli_thread_set_num_threads")
    if name == "functx":
        from functx.lowering.cpp import gemm

        if not gemm.host_has_avx512():
            return None
        return (
            0,
            _build("fx_gemm.cpp", _OWN_GEMM % gemm.SOURCE, "g++", "-O3", "-march=native"),
            "fx_cblas_sgemm",
            "fx_set_threads",
        )
    raise ValueError(name)


# functx's kernel (lowering/cpp/gemm.py) behind the ILP64 cblas signature (beta = 0 only) and a
# thread setter that does nothing (it runs on the calling thread)
_OWN_GEMM = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
%s
extern "C" void fx_cblas_sgemm(int order, int ta, int tb, int64_t m, int64_t n, int64_t k,
                               float alpha, const float* a, int64_t lda, const float* b,
                               int64_t ldb, float beta, float* c, int64_t ldc) {
  if (order != 101 || beta != 0.0f) abort();
  fx_sgemm512(ta == 112, tb == 112, m, n, k, alpha, a, lda, b, ldb, c, ldc, nullptr);
}
extern "C" void fx_set_threads(int) {}
"""

# The float32 FMA peak of one core: 12 independent chains of register-only FMAs (no loads), in
# ZMM (AVX-512) and YMM (AVX2) registers; GFLOP per CPU-second of the calling thread.
_PEAK = r"""
#include <immintrin.h>
#include <time.h>
#define CHAINS 12
#define LOOP(T, SET, FMA, LANES)                                         \
  T acc[CHAINS], x = SET(0.999f), y = SET(1e-4f);                        \
  for (int i = 0; i < CHAINS; ++i) acc[i] = SET((float)i);               \
  struct timespec t0, t1;                                                \
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);                           \
  for (long it = 0; it < iters; ++it) {                                  \
    _Pragma("GCC unroll 12") for (int i = 0; i < CHAINS; ++i)            \
      acc[i] = FMA(acc[i], x, y);                                        \
  }                                                                      \
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);                           \
  for (int i = 0; i < CHAINS; ++i) sink[i] = ((float*)&acc[i])[0];       \
  return 2.0 * LANES * CHAINS * iters /                                  \
         ((t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec)) / 1e9;
float sink[CHAINS];
double fx_peak_avx512(long iters) { LOOP(__m512, _mm512_set1_ps, _mm512_fmadd_ps, 16) }
double fx_peak_avx2(long iters) { LOOP(__m256, _mm256_set1_ps, _mm256_fmadd_ps, 8) }
"""


def _build(name, source, cc, *flags):
    """``source`` compiled into a shared library in a fresh temporary directory: its path."""
    import os
    import subprocess
    import tempfile

    d = tempfile.mkdtemp(prefix="fx_blasbench_")
    src, so = os.path.join(d, name), os.path.join(d, name.rsplit(".", 1)[0] + ".so")
    with open(src, "w") as f:
        f.write(source)
    subprocess.run([cc, *flags, "-shared", "-fPIC", src, "-o", so], check=True)
    return so


def fma_peak(rounds=5):
    """``{"avx512": GFLOP/s, "avx2": GFLOP/s}`` per CPU-second of one thread, the best of
    ``rounds`` (``_PEAK``); without AVX-512 only ``avx2``."""
    import ctypes

    from functx.lowering.cpp import gemm

    h = ctypes.CDLL(_build("peak.c", _PEAK, "gcc", "-O2", "-march=native"))
    out = {}
    for kind in ("avx512", "avx2") if gemm.host_has_avx512() else ("avx2",):
        fn = getattr(h, f"fx_peak_{kind}")
        fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_long]
        out[kind] = max(fn(20_000_000) for _ in range(rounds))
    return out


def _harness():
    import ctypes

    h = ctypes.CDLL(_build("h.c", _HARNESS, "gcc", "-O2", "-fopenmp"))
    h.fx_bench.restype = None
    i64, p = ctypes.c_int64, ctypes.c_void_p
    i = ctypes.c_int
    h.fx_bench.argtypes = [i, p, i, i, i64, i64, i64, p, p, p, i, i, p]
    return h


def _operands(m, n, k, ta, tb):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(np.float32)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(np.float32)
    want = (a.T if ta else a).astype(np.float64) @ (b.T if tb else b).astype(np.float64)
    return a, b, want


def _one_library(name, reps, modes):
    """Runs in its own process: prints one ``RESULT name shape mode gflops`` line per cell."""
    import ctypes

    if name == "jax":
        return _jax_library(reps, modes)
    lib = blas_library(name)
    if not lib:
        print(f"SKIP {name} not installed")
        return
    kind, path, sym, setter = lib
    # (RTLD_GLOBAL only for MKL's runtime, which loads its layers by name: NumPy's OpenBLAS made
    # global lends its internal symbols to SciPy's copy, and LAPACK results in the same process
    # go wrong, e.g. tests/lowering/test_libsteps.py after the harness test; newton19c, session 32)
    dll = ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL if name == "mkl" else ctypes.DEFAULT_MODE)
    fn = ctypes.cast(getattr(dll, sym), ctypes.c_void_p).value
    set_threads = getattr(dll, setter)
    if name == "blis":
        set_threads.argtypes = [ctypes.c_int64]
    print(f"INFO {name}: {_describe(name, dll)}", flush=True)
    h = _harness()
    for label, m, n, k, ta, tb in MLP_GEMMS:
        a, b, want = _operands(m, n, k, ta, tb)
        c = np.empty((m, n), np.float32)
        for mode in [md for md in modes if not (name == "functx" and md == "2own")]:
            threads, pieces = {"1": (1, 1), "2own": (2, 1), "2x2": (1, 2), "2x8": (1, 8)}[mode]
            set_threads(threads)
            c[...] = np.nan
            out = np.zeros(4)
            h.fx_bench(
                kind,
                fn,
                ta,
                tb,
                m,
                n,
                k,
                a.ctypes.data,
                b.ctypes.data,
                c.ctypes.data,
                pieces,
                reps,
                out.ctypes.data,
            )
            err = float(np.abs(c - want).max() / np.abs(want).max())
            assert err < 1e-5, (name, label, mode, err)
            _result(name, label, mode, 2 * m * n * k, out)


def _describe(name, dll):
    """The library's version and the kernels it chose for this processor."""
    import ctypes

    if name == "mkl":
        buf = ctypes.create_string_buffer(256)
        dll.MKL_Get_Version_String(buf, 256)
        return buf.value.decode()
    if name == "functx":
        return "functx's AVX-512 kernel (lowering/cpp/gemm.py)"
    if name == "blis":
        dll.bli_arch_query_id.restype = ctypes.c_int
        dll.bli_arch_string.restype = ctypes.c_char_p
        dll.bli_info_get_version_str.restype = ctypes.c_char_p
        arch = dll.bli_arch_string(dll.bli_arch_query_id()).decode()
        return f"BLIS {dll.bli_info_get_version_str().decode()}, sub-configuration {arch!r}"
    suffix = "64_" if name in ("numpy", "openblas64") else ""
    fn = getattr(dll, f"scipy_openblas_get_config{suffix}")
    fn.restype = ctypes.c_char_p
    return fn().decode()


def _result(name, label, mode, flops, times):
    g = "|".join(f"{flops / t / 1e9:.6g}" for t in times)  # (a slow call of a tiny product: > 0)
    print(f"RESULT {name}|{label}|{mode}|{g}", flush=True)


def _jax_library(reps, modes):
    import os

    import jax
    import jax.numpy as jnp

    for label, m, n, k, ta, tb in MLP_GEMMS:
        a, b, want = _operands(m, n, k, ta, tb)
        f = jax.jit(lambda x, y, ta=ta, tb=tb: (x.T if ta else x) @ (y.T if tb else y))
        ja, jb = jnp.asarray(a), jnp.asarray(b)
        got = np.asarray(f(ja, jb))
        err = float(np.abs(got - want).max() / np.abs(want).max())
        assert err < 1e-5, ("jax", label, err)
        ws, cs = [], []
        for r in range(reps + 2):
            w0, c0 = time.perf_counter(), time.process_time()
            f(ja, jb).block_until_ready()
            if r >= 2:
                ws.append(time.perf_counter() - w0)
                cs.append(time.process_time() - c0)
        ws.sort()
        cs.sort()
        out = [ws[0], ws[reps // 2], cs[0], cs[reps // 2]]
        mode = "1" if len(os.sched_getaffinity(0)) == 1 else "2own"
        _result("jax", label, mode, 2 * m * n * k, out)


# --- the products' code in a whole step, A/B in one process (``--step``) ------------------------

SWITCHES = ("FOLD_UPDATES", "JOIN_PRODUCTS", "OWN_GEMM")  # lowering/cpp/dot.py's
STEP_VARIANTS = {  # name: the switches' values
    "before": (False, False, False),
    "fold": (True, False, False),
    "fold+join": (True, True, False),
    "own": (True, True, True),  # float32 pieces through cpp/gemm.py's kernel
}


def step_ab(family, calls, variants):
    """A training step of ``benchmarks/workloads.py`` (``family``: mlp, gpt, cnn) compiled once
    per variant of ``lowering/cpp/dot.py``'s switches (``STEP_VARIANTS``), the variants' calls
    interleaved one by one in this process, so that each sees the same load; prints the median
    wall and CPU (``process_time``) time per call of each, after checking that every variant
    computes the first one's result. The program cache is bypassed while compiling (it keys on
    the Jaxpr, not on the switches)."""
    import os
    import sys

    import functx
    from functx.lowering import program_cache
    from functx.lowering.cpp import dot, gemm

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import workloads

    name = {"mlp": "mlp_sgd", "gpt": "gpt_block", "cnn": "cnn"}[family]
    c = dict((w[0], w[2]) for w in workloads.workload_list("full"))[name]
    args = functx.tree_util.tree_map(functx.numpy.asarray, workloads.inputs(family, c))
    saved = [getattr(dot, s) for s in SWITCHES], program_cache.key_of
    fns, outs = {}, {}
    try:
        program_cache.key_of = lambda closed: None
        for v in variants:
            for s, on in zip(SWITCHES, STEP_VARIANTS[v]):
                setattr(dot, s, on)
            fns[v] = functx.jit(workloads.program(functx, family, c))
            outs[v] = functx.tree_util.tree_leaves(fns[v](*args))
    finally:
        for s, on in zip(SWITCHES, saved[0]):
            setattr(dot, s, on)
        program_cache.key_of = saved[1]
    if any(STEP_VARIANTS[v][2] for v in variants) and gemm.host_has_avx512():
        gemm.library()  # (built: until then the programs call OpenBLAS)
    ref = [np.asarray(x, np.float64) for x in outs[variants[0]]]
    for v in variants[1:]:
        for r, x in zip(ref, outs[v]):
            err = np.linalg.norm(np.asarray(x, np.float64) - r) / max(np.linalg.norm(r), 1e-30)
            assert err < 1e-5, (v, err)
    times = {v: ([], []) for v in variants}
    for i in range(calls + 2):
        for v in variants[i % len(variants) :] + variants[: i % len(variants)]:
            w0, c0 = time.perf_counter(), time.process_time()
            functx.block_until_ready(fns[v](*args))
            if i >= 2:
                times[v][0].append(time.perf_counter() - w0)
                times[v][1].append(time.process_time() - c0)
    load = os.getloadavg()[0]
    print(f"{name}: {calls} interleaved calls per variant, load average {load:.1f}")
    for v, (ws, cs) in times.items():
        w, cpu = np.median(ws) * 1e3, np.median(cs) * 1e3
        print(f"  {v:10s} wall {w:8.2f} ms (min {min(ws) * 1e3:7.2f})  CPU {cpu:8.2f} ms")


LIBS = ["numpy", "openblas32", "openblas64", "mkl", "blis", "jax", "functx"]
MODES = ["1", "2own", "2x2", "2x8"]


def compare_libraries(libs, reps, rounds):
    """Each library in its own process (``rounds`` alternating rounds, the median GFLOP/s of
    each cell): one thread, the library's two threads, and two OpenMP threads taking 2 or 8
    pieces of the product with the library on one thread. JAX (XLA's own dot) runs in one
    process pinned to one core (``taskset``) and one with both."""
    import os
    import subprocess
    import sys

    peak = fma_peak()
    cells, seen = {}, set()
    env = dict(os.environ, MKL_THREADING_LAYER="GNU", OMP_WAIT_POLICY="PASSIVE")
    for _ in range(rounds):
        for lib in libs:
            cmds = [[sys.executable, __file__, "--one-lib", lib, "--reps", str(reps)]]
            if lib == "jax":
                cmds = [["taskset", "-c", "0", *cmds[0]], cmds[0]]
            for cmd in cmds:
                out = subprocess.run(cmd, env=env, capture_output=True, text=True)
                if out.returncode:
                    print(out.stderr[-2000:])
                    raise SystemExit(f"{lib} failed")
                for line in out.stdout.splitlines():
                    if line.startswith(("SKIP", "INFO")) and line not in seen:
                        seen.add(line)
                        print(line[5:])
                    if line.startswith("RESULT "):
                        name, label, mode, *g = line[7:].split("|")
                        cells.setdefault((name, label, mode), []).append([float(x) for x in g])
    present = [lib for lib in libs if any(k[0] == lib for k in cells)]
    print(
        f"sgemm GFLOP/s, float32, {rounds} alternating rounds of {reps} calls, each library in"
        " its own process; modes: 1 = one thread, 2own = the library's own 2 threads, 2xP ="
        " 2 OpenMP threads taking P pieces (the library on one thread). Each cell:"
        " wall best / CPU median (flops per process CPU-second: the work per core; spinning"
        " threads lower it): the fastest call of all rounds / the median over rounds of each"
        " round's median call"
    )
    for label, *_ in MLP_GEMMS:
        print(f"\n{label}")
        print(f"  {'mode':5s}" + "".join(f"{lib:>13s}" for lib in present))
        for mode in MODES:
            row = []
            for lib in present:
                v = cells.get((lib, label, mode))
                if v:
                    cpu = sorted(x[3] for x in v)[len(v) // 2]
                    row.append(f"{max(x[0] for x in v):6.1f}/{cpu:<6.1f}")
                else:
                    row.append("-")
            if any(c != "-" for c in row):
                print(f"  {mode:5s}" + "".join(f"{c:>13s}" for c in row))
    top = max(peak.values())
    peaks = ", ".join(f"{k} {v:.1f}" for k, v in peak.items())
    print(f"\nFMA peak of one core (register-only FMA loops, GFLOP per CPU-second): {peaks}")
    print("one thread, CPU median: % of that peak per product; the five products' CPU ms")
    for lib in present:
        rates = [cells.get((lib, label, "1")) for label, *_ in MLP_GEMMS]
        if not all(rates):
            continue
        rates = [sorted(x[3] for x in v)[len(v) // 2] for v in rates]
        ms = sum(2 * m * n * k / r / 1e6 for (_, m, n, k, _, _), r in zip(MLP_GEMMS, rates))
        pct = " ".join(f"{100 * r / top:5.1f}" for r in rates)
        print(f"  {lib:10s} {pct}  {ms:6.2f} ms")


def main():
    import functx
    import functx.numpy as fnp

    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument(
        "--crossover", action="store_true", help="generated code against BLAS (wall/CPU us)"
    )
    ap.add_argument(
        "--libs",
        nargs="?",
        const=",".join(LIBS),
        help="compare BLAS libraries' sgemm at the MLP step's shapes (comma-separated names)",
    )
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--step",
        nargs="?",
        const="mlp",
        help="A/B of dot.py's switches in a whole step (workloads.py family: mlp, gpt, cnn)",
    )
    ap.add_argument("--variants", default=",".join(STEP_VARIANTS))
    ap.add_argument("--one-lib", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.step:
        step_ab(args.step, args.reps, args.variants.split(","))
        return
    if args.one_lib:
        _one_library(args.one_lib, args.reps, MODES)
        return
    if args.libs:
        compare_libraries(args.libs.split(","), args.reps, args.rounds)
        return
    if args.crossover:
        crossover(args.reps)
        return
    rng = np.random.default_rng(0)
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        jax = None
    print(
        f"{'product (float32)':38s} {'functx us':>10s} {'numpy us':>10s} {'x numpy':>8s} "
        f"{'jax us':>9s} {'x jax':>7s} {'err':>8s}"
    )
    for name, sa, sb in SHAPES:
        a = rng.standard_normal(sa).astype(np.float32)
        b = rng.standard_normal(sb).astype(np.float32)
        fa, fb = fnp.asarray(a), fnp.asarray(b)
        f = functx.jit(lambda x, y: x @ y)
        want = a.astype(np.float64) @ b.astype(np.float64)
        got = np.asarray(f(fa, fb))
        err = float(np.abs(got - want).max() / np.abs(want).max())
        assert err < 1e-5, (name, err)
        runners = {
            "functx": lambda: functx.block_until_ready(f(fa, fb)),
            "numpy": lambda: np.matmul(a, b),
        }
        if jax is not None:
            ja, jb = jnp.asarray(a), jnp.asarray(b)
            jf = jax.jit(lambda x, y: x @ y)
            jf(ja, jb).block_until_ready()
            runners["jax"] = lambda: jf(ja, jb).block_until_ready()
        best = {}
        for _ in range(3):
            for lib, fn in runners.items():
                t = median_time(fn, args.reps)
                best[lib] = min(best.get(lib, t), t)
        fx, nx, jx = best["functx"], best["numpy"], best.get("jax", float("nan"))
        print(
            f"{name:38s} {fx * 1e6:10.1f} {nx * 1e6:10.1f} {nx / fx:8.2f} {jx * 1e6:9.1f} "
            f"{jx / fx:7.2f} {err:8.1e}"
        )


if __name__ == "__main__":
    main()
