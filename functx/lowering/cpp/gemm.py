"""functx's own float32 matrix product for AVX-512 CPUs (``fx_sgemm512``), called by the BLAS
pieces of ``cpp/dot.py`` in place of OpenBLAS's ``cblas_sgemm``.

Why: on the Zen 4 test machine (AVX-512, two FMA pipes of 256 bits: 32 float32 FLOP a cycle,
117 GFLOP/s per CPU-second on one core, the register-only FMA loops of ``benchmarks/matmul_cpu.py
--libs``) NumPy's OpenBLAS 0.3.31 runs its SkylakeX kernels at 67-79% of that peak on the MLP SGD
step's products (784-1024-1024-10, batch 128), XLA at 72-84%; this kernel at 79-90%: 12.5 CPU ms
for the five products, against 14.0 and 13.4 (one thread each; benchmarks/RESULTS.md, session
33, mlp20d), and 80-93% (12.0-12.6 ms) since session 34 (A read in place, the prefetches
below). Its register tile alone, on panels in L2, runs at 95-98% of the peak; the rest is
packing (B's from memory above all), the edges and, in a folded update, U's and C's traffic.

How (the classic blocked scheme, sized for Zen 4's 32 KiB L1 and 1 MiB L2 per core):
- ``op(B)`` is packed a block of ``kc`` rows by ``nc`` columns at a time into panels of 64
  columns (``kc x 64``, row after row). ``kc``: the contraction cut into equal blocks of at most
  ``FX_GKC`` (512); ``nc``: so that the packed B block stays under 512 KiB (in L2).
- A register tile of 6 rows x 64 columns (24 ZMM accumulators) sums ``kc`` rank-1 updates: per
  step, four loads of B's panel row, six broadcasts from A, 24 FMAs. A's 6 x ``kc`` block (12
  KiB at most) stays in L1 while the tile walks the B block's panels.
- An A stored by rows is read in place: six rows, each walked in order, are six streams the
  prefetchers follow. Packing it (16 x 16 register transposes into 6-row panels) was repeated
  by every piece of C's columns (``dot._job``) and cost 2.5% of the five products (13.70 ->
  13.36 CPU ms, one thread, load 11; session 34). A transposed A (a weight gradient's
  ``x.T``: six floats in a row per term, one cache line per term, which would not stay in L1
  for ``kc`` = 512) is packed into panels of 6 rows (``kc x 6``) with masked copies, once per
  block of rows and terms: B's blocks of columns are walked inside that block (they were
  outside, and each packed A again: the GPT block step's weight gradients, one thread, load 11,
  15.10 -> 14.51 CPU ms for ``dW_2``, 3.45 -> 3.36 for ``dW_o``; session 35). A
  transposed B is packed through 16 x 16 register transposes (strided scalar copies cost 10%
  on ``d @ W.T``).
- The result is written once per ``kc`` block, ``C = alpha * sum`` or, with ``U``,
  ``C = U + alpha * sum`` (one rounding, as OpenBLAS's ``beta = 1`` into a copy of ``U``, the
  fold of ``dot.fold_product_updates``; the copy itself is gone). Rows and columns past the
  edge are masked; the last tile of fewer rows is a smaller instance of the same template.
  While a tile runs, the next tile's lines of ``U`` are fetched into L1 (a weight read from
  memory at the end of each tile: MLP step 13.94 -> 13.69 CPU ms, session 34); fetching C's
  lines for writing as well did not measure.
- Software prefetches, none of which changes a result: the next block of B into L2 while the
  tiles run; while B stored by rows is packed, the row 4 ahead into L1 (each row of a weight
  1024 columns wide is on a page of its own, where no hardware prefetcher follows).
- Every sum runs in the order of the terms within a ``kc`` block, blocks in order: results
  do not depend on the pieces, the threads or these layouts (the MLP and GPT steps gave the
  same bits before and after session 34's changes).
- Workspace: one growing buffer per thread (``thread_local``), not freed.

The kernel is a shared library of its own, compiled once per cache directory (gcc takes 0.7 s
of CPU over it, which every program would pay again as a part of its source), on another thread
(``start_build``: ``dot.fold_product_updates`` starts it as soon as a graph has a float32
product). The programs run their float32 products with ``fx_gemm_run``'s routine
``fx_own_sgemm``, whose ``fx_gemm_call`` finds the library among those this process has loaded
and, where it is not there (its build failed), copies ``U`` and calls OpenBLAS. A program's
first run waits for the build (``wait``), which runs at the usual priority beside the program's
own compilers: a program that took OpenBLAS's sums on its first calls and the kernel's later
gave results that changed in the last bits between calls (session 35), which JAX's never do.
The wait cost an empty cache's first GPT block call about 0.55 s (1.20 -> 1.78 s, idle); the library
is built once per cache directory.

Used only where ``/proc/cpuinfo`` lists ``avx512f`` (the programs are compiled with
``-march=native``); elsewhere the pieces call OpenBLAS as before."""

from __future__ import annotations

import ctypes
import functools
import os
import threading
import warnings

import numpy as np

from functx import dtypes
from functx.errors import CacheWarning
from functx.lowering import cache
from functx.lowering.cpp import lapack

NAME = "fx_own_sgemm"  # (fx_gemm_run's routine in the programs: the library, or OpenBLAS)

# The pieces given to this kernel: float32, and at least this many rows, columns and terms (a
# 6 x 64 tile over fewer columns is mostly padding; OpenBLAS keeps the narrow products).
_MIN_M, _MIN_N, _MIN_K = 6, 48, 32
PANEL = 64  # the register tile's columns (FX_GNR): B is packed in panels of this many

SOURCE = r"""
// ---- fx_sgemm512 (cpp/gemm.py): C = alpha op(A) op(B) [+ U], row-major float32 ----
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
enum { FX_GMR = 6, FX_GNR = 64, FX_GKC = 512, FX_GB = 1 << 17 };

// rows x 16 floats (row i at src + i * ld) transposed: column c to dst + c * dstride, the lanes
// of mask m (rows past ``rows`` read as zeros)
static inline void fx_g_tr16(const float* src, int64_t ld, int rows, float* dst, int64_t dstride,
                             __mmask16 m) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i)
    r[i] = i < rows ? _mm512_loadu_ps(src + i * ld) : _mm512_setzero_ps();
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // r[4i + c], lane l: column 4l + c of rows 4i..4i+3
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int c = 0; c < 4; ++c) {
    const __m512 x = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
    const __m512 x2 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
    const __m512 y = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
    const __m512 y2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
    _mm512_mask_storeu_ps(dst + c * dstride, m, _mm512_shuffle_f32x4(x, y, 0x88));
    _mm512_mask_storeu_ps(dst + (8 + c) * dstride, m, _mm512_shuffle_f32x4(x, y, 0xdd));
    _mm512_mask_storeu_ps(dst + (4 + c) * dstride, m, _mm512_shuffle_f32x4(x2, y2, 0x88));
    _mm512_mask_storeu_ps(dst + (12 + c) * dstride, m, _mm512_shuffle_f32x4(x2, y2, 0xdd));
  }
}

static inline __mmask16 fx_g_mask(int64_t n) {
  return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

// the height of the tile of rows from one ``left`` rows before the end: 6, and the last 7-9 rows
// as two tiles of 3-5 (a tile of 1 or 2 rows is load-bound)
static inline int fx_g_rows(int64_t left) {
  return (int)(left > 9 ? FX_GMR : left > FX_GMR ? left - 4 : left);
}

// op(A)[i0 : i0 + mc, p0 : p0 + kc] of a transposed A (A(i, k) = a[k * lda + i]) as panels of
// fx_g_rows rows R: from ap + ip * kc, [k][r]. (An A stored by rows is not packed: the tiles
// read its rows in place, ``fx_g_tile<R, false>``.)
static void fx_g_pack_at(const float* a, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
                         int64_t kc, float* ap) {
  for (int64_t ip = 0, rows = fx_g_rows(mc); ip < mc; ip += rows, rows = fx_g_rows(mc - ip)) {
    float* d = ap + ip * kc;
    const __mmask16 m = fx_g_mask(rows);
    const float* s = a + p0 * lda + i0 + ip;
    for (int64_t k = 0; k < kc; ++k)
      _mm512_mask_storeu_ps(d + k * rows, m, _mm512_maskz_loadu_ps(m, s + k * lda));
  }
}

// op(B)[p0 : p0 + kc, j0 : j0 + nc] as panels of 64 columns: bp[panel][k][c] (zeros past nc)
static void fx_g_pack_b(const float* b, int64_t ldb, int tb, int64_t p0, int64_t kc, int64_t j0,
                        int64_t nc, float* bp) {
  if (!tb) {  // B(k, j) = b[k * ldb + j], read row after row (a column of lines at a time: 16%
              // of the time of x @ W0's pieces, 4 KiB apart: each row on a page of its own,
              // where no hardware prefetcher follows; so the row 4 ahead is fetched into L1,
              // 2% of the five products from a cold cache, session 34)
    for (int64_t k = 0; k < kc; ++k) {
      const float* s = b + (p0 + k) * ldb + j0;
      if (k + 4 < kc)
        for (int64_t j = 0; j < nc; j += 16)
          _mm_prefetch((const char*)(s + 4 * ldb + j), _MM_HINT_T0);
      for (int64_t j = 0; j < nc; j += 16)
        _mm512_storeu_ps(bp + (j / FX_GNR) * FX_GNR * kc + k * FX_GNR + j % FX_GNR,
                         _mm512_maskz_loadu_ps(fx_g_mask(nc - j), s + j));
      for (int64_t j = (nc + 15) / 16 * 16; j % FX_GNR; j += 16)  // (the last panel's zeros)
        _mm512_storeu_ps(bp + (j / FX_GNR) * FX_GNR * kc + k * FX_GNR + j % FX_GNR,
                         _mm512_setzero_ps());
    }
    return;
  }
  for (int64_t jp = 0; jp < nc; jp += FX_GNR) {
    float* d = bp + jp * kc;
    for (int v = 0; v < 4; ++v) {
      const int64_t cols = nc - jp - 16 * v;  // B(k, j) = b[j * ldb + k]
      const int rows = (int)(cols < 0 ? 0 : cols > 16 ? 16 : cols);
      const float* s = b + (j0 + jp + 16 * v) * ldb + p0;
      int64_t k0 = 0;
      for (; k0 + 16 <= kc; k0 += 16)
        fx_g_tr16(s + k0, ldb, rows, d + k0 * FX_GNR + 16 * v, FX_GNR, (__mmask16)0xffff);
      for (int64_t k = k0; k < kc; ++k)
        for (int c = 0; c < 16; ++c) d[k * FX_GNR + 16 * v + c] = c < rows ? s[c * ldb + k] : 0.0f;
    }
  }
}

// one tile of R rows x nc columns (<= 64): C = alpha * sum (+ add, where given; add has C's rows).
// A's R x kc block: packed (P: ap[k * R + r]) or R rows of A in place (ap[r * lda + k]).
template <int R, bool P>
static inline void fx_g_tile(int64_t kc, const float* __restrict ap, int64_t lda,
                             const float* __restrict bp, float* c, int64_t ldc, const float* add,
                             int64_t nc, float alpha) {
  const float* row[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) row[r] = ap + r * lda;
  __m512 acc[R][4];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const float* bk = bp + k * FX_GNR;
    const __m512 b0 = _mm512_loadu_ps(bk), b1 = _mm512_loadu_ps(bk + 16);
    const __m512 b2 = _mm512_loadu_ps(bk + 32), b3 = _mm512_loadu_ps(bk + 48);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(P ? ap[k * R + r] : row[r][k]);
      acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(x, b2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(x, b3, acc[r][3]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha);
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      const __mmask16 m = fx_g_mask(nc - 16 * v);
      const __m512 y = add ? _mm512_fmadd_ps(va, acc[r][v],
                                             _mm512_maskz_loadu_ps(m, add + r * ldc + 16 * v))
                           : _mm512_mul_ps(va, acc[r][v]);
      _mm512_mask_storeu_ps(c + r * ldc + 16 * v, m, y);
    }
}

// lines of a block of rows (``rows`` rows of ``len`` bytes, ``stride`` apart) not yet prefetched
struct fx_g_ahead {
  const char* p;
  int64_t stride, rows, len, r, off;
};

static inline void fx_g_fetch(fx_g_ahead& a, int64_t lines) {
  for (; lines > 0 && a.r < a.rows; --lines) {
    _mm_prefetch(a.p + a.r * a.stride + a.off, _MM_HINT_T1);
    a.off += 64;
    if (a.off >= a.len + 63) a.off = 0, ++a.r;
  }
}

extern "C" {
int64_t fx_sgemm512_calls = 0;  // (tests: the programs did call the library)
}

extern "C" void fx_sgemm512(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                        const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                        int64_t ldc, const float* u) {
  __atomic_fetch_add(&fx_sgemm512_calls, 1, __ATOMIC_RELAXED);
  const int64_t kblocks = (k + FX_GKC - 1) / FX_GKC, kcb = (k + kblocks - 1) / kblocks;
  int64_t ncb = FX_GB / kcb / FX_GNR * FX_GNR;
  ncb = ncb < FX_GNR ? FX_GNR : ncb;
  const int64_t mcb = 768;
  const int64_t need = ((mcb + FX_GMR) * kcb + (ncb + FX_GNR) * kcb + 15) / 16 * 16;
  static thread_local float* buf = nullptr;
  static thread_local int64_t cap = 0;
  if (cap < need) {
    free(buf);
    buf = (float*)aligned_alloc(64, (size_t)need * sizeof(float));
    cap = buf ? need : 0;
    if (!buf) abort();
  }
  float* bp = buf;
  float* ap = buf + (ncb + FX_GNR) * kcb;
  // The blocks of B, (pc, jc), in the order they are packed: for A stored by rows, jc outer
  // (A is read in place); for a transposed A, pc and ic outer, so that each block of A is packed
  // once and serves every block of B's columns (jc inner; before, A was packed again for each
  // block of columns).
  const int64_t nj = (n + ncb - 1) / ncb, np = (k + kcb - 1) / kcb, ni = (m + mcb - 1) / mcb;
  const int64_t nblocks = ta ? ni * np * nj : nj * np;
  for (int64_t q = 0; q < nblocks; ++q) {
    const int64_t iq = ta ? q / (np * nj) : 0, pq = ta ? q / nj % np : q % np;
    const int64_t jq = ta ? q % nj : q / np;
    const int64_t jc = jq * ncb, pc = pq * kcb;
    const int64_t nc = n - jc < ncb ? n - jc : ncb, kc = k - pc < kcb ? k - pc : kcb;
    fx_g_pack_b(b, ldb, tb, pc, kc, jc, nc, bp);
    // (the next block of B read into L2 while this one's tiles run)
    const int64_t qn = q + 1 < nblocks ? q + 1 : -1;
    const int64_t pn = qn < 0 ? 0 : (ta ? qn / nj % np : qn % np) * kcb;
    const int64_t jn = qn < 0 ? n : (ta ? qn % nj : qn / np) * ncb;
    const int64_t kn = k - pn < kcb ? k - pn : kcb, nn = n - jn < ncb ? n - jn : ncb;
    fx_g_ahead ahead = {(const char*)(tb ? b + jn * ldb + pn : b + pn * ldb + jn), ldb * 4,
                        jn < n ? (tb ? nn : kn) : 0, (tb ? kn : nn) * 4, 0, 0};
    const int64_t mrows = ta ? (m - iq * mcb < mcb ? m - iq * mcb : mcb) : m;
    const int64_t per_tile = ahead.rows * ((ahead.len + 63) / 64 + 1) /
                             (((mrows + FX_GMR - 1) / FX_GMR) * ((nc + FX_GNR - 1) / FX_GNR)) + 1;
    for (int64_t ic = ta ? iq * mcb : 0; ic < (ta ? iq * mcb + mrows : m); ic += mcb) {
      const int64_t mc = m - ic < mcb ? m - ic : mcb;
      if (ta && jq == 0) fx_g_pack_at(a, lda, ic, mc, pc, kc, ap);
      for (int64_t ip = 0, rows = fx_g_rows(mc); ip < mc; ip += rows, rows = fx_g_rows(mc - ip))
        for (int64_t jp = 0; jp < nc; jp += FX_GNR) {
          fx_g_fetch(ahead, per_tile);
          const int64_t off = (ic + ip) * ldc + jc + jp;
          const float* add = pc ? c + off : u ? u + off : nullptr;
          if (u && !pc && jp + FX_GNR < nc)  // (U's lines of the next tile into L1)
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t l = jp + FX_GNR; l < nc && l < jp + 2 * FX_GNR; l += 16)
                _mm_prefetch((const char*)(u + off - jp + r * ldc + l), _MM_HINT_T0);
          const int64_t w = nc - jp < FX_GNR ? nc - jp : FX_GNR;
          const float *pa = ta ? ap + ip * kc : a + (ic + ip) * lda + pc, *pb = bp + jp * kc;
#define FX_G_TILE(R)                                                                 \
  (ta ? fx_g_tile<R, true>(kc, pa, 0, pb, c + off, ldc, add, w, alpha)               \
      : fx_g_tile<R, false>(kc, pa, lda, pb, c + off, ldc, add, w, alpha))
          switch (rows) {
            case 6: FX_G_TILE(6); break;
            case 5: FX_G_TILE(5); break;
            case 4: FX_G_TILE(4); break;
            case 3: FX_G_TILE(3); break;
            case 2: FX_G_TILE(2); break;
            default: FX_G_TILE(1);
          }
#undef FX_G_TILE
        }
    }
  }
}
#else
#error "fx_sgemm512 needs AVX-512F (cpp/gemm.py: host_has_avx512)"
#endif
"""


@functools.lru_cache(maxsize=None)
def host_has_avx512() -> bool:
    """Whether this machine's CPU has AVX-512F (Linux's ``/proc/cpuinfo``; False elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(ln.startswith("flags") and " avx512f" in ln for ln in f)
    except OSError:
        return False


_build: dict = {}
_lock = threading.Lock()


def start_build() -> None:
    """Compile the kernel's library into the cache directory on another thread, once."""
    with _lock:
        if "thread" not in _build and host_has_avx512():
            # (at the usual priority: the first run of a program using it waits for it)
            _build["thread"] = cache.background_thread(_compile, yield_cpu=False)


def _compile() -> None:
    try:
        path, _ = cache.compile_cached(SOURCE, suffix="-fxgemm")
        # loaded here, after the cache's checks (a file of this user, unchanged since it was
        # written): the programs only look the library up among those this process has loaded
        if cache.valid_digest(path) is None:
            raise OSError(f"{path} does not match its digest")
        _build["lib"] = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    except Exception as e:  # noqa: BLE001 - reported once; the programs keep OpenBLAS
        _build["error"] = e
        warnings.warn(
            f"functx: the AVX-512 product kernel (lowering/cpp/gemm.py) did not compile ({e});"
            " float32 products use OpenBLAS",
            CacheWarning,
            stacklevel=1,
        )


def wait() -> None:
    """Wait for the kernel's library where its build is still running: a program's first run
    does (``runtime.Executable.run``), so that every call of a program takes its products from
    the same routine. Until the library is loaded the products go to OpenBLAS, whose sums differ
    in the last bits: the MLP step's results changed from its 14th call on (6e-7 relative, one
    process, the same inputs; session 35). The build gets the usual priority first."""
    thread = _build.get("thread")
    if isinstance(thread, threading.Thread) and thread.is_alive():
        cache.foreground_done()
        thread.join()


def library(wait: bool = True) -> str:
    """The path the kernel's library has in the cache directory (the build started; with
    ``wait``, finished)."""
    start_build()
    if wait:
        _build["thread"].join()
    return os.path.join(cache.cache_dir(), cache.key_of(SOURCE) + "-fxgemm.so")


_LOAD = """typedef void (*fx_sgemm512_t)(int, int, int64_t, int64_t, int64_t, float, const float*,
                              int64_t, const float*, int64_t, float*, int64_t, const float*);
// functx's float32 product (cpp/gemm.py) as fx_gemm_run's routine: its library once it is in the
// cache directory (looked for again until then), for pieces of at least %d rows, %d columns and
// %d terms; else fx_gemm_call's CBLAS form (U's block copied, OpenBLAS with beta = 1)
struct fx_own_sgemm {
  fx_sgemm_t blas;
  bool operator!() const { return !blas; }
};
static void fx_gemm_call(fx_own_sgemm g, int ta, int tb, int64_t m, int64_t n, int64_t k,
                         float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                         float* c, int64_t ldc, const float* u) {
  static fx_sgemm512_t lib = nullptr;
  fx_sgemm512_t f = __atomic_load_n(&lib, __ATOMIC_ACQUIRE);
  if (!f) {  // (loaded by cpp/gemm.py once checked in the cache: never opened from disk here)
    void* h = dlopen("%s", RTLD_NOW | RTLD_NOLOAD);
    f = h ? (fx_sgemm512_t)dlsym(h, "fx_sgemm512") : nullptr;
    if (f) __atomic_store_n(&lib, f, __ATOMIC_RELEASE);
  }
  if (f && m >= %d && n >= %d && k >= %d)
    return f(ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, u);
  fx_gemm_call(g.blas, ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, u);
}
"""


def routine(prog, blas: str) -> str:
    """The routine ``fx_gemm_run`` takes for a group of float32 products: ``fx_own_sgemm``
    around OpenBLAS's ``blas`` (its ``fx_gemm_call`` added to ``prog`` once; the library's
    build started)."""
    load = _LOAD % (_MIN_M, _MIN_N, _MIN_K, library(wait=False), _MIN_M, _MIN_N, _MIN_K)
    for sub in (lapack.HELPER, load):
        if sub not in prog.subs:
            prog.subs.append(sub)
    return f"{NAME}{{{blas}}}"


def applies(node) -> bool:
    """Whether ``node``'s pieces go through ``fx_own_sgemm`` (an AVX-512 host where the library
    compiled, float32); each piece then takes the kernel when it has at least ``_MIN_M`` rows,
    ``_MIN_N`` columns and ``_MIN_K`` terms."""
    return host_has_avx512() and "error" not in _build and np.dtype(node.dtype) == dtypes.float32
