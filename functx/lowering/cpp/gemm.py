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
- Workspace: one growing buffer per thread (``thread_local``), not freed. Where it cannot be
  allocated the kernel returns 1 without writing C, and the program returns 1 (``CHECK``):
  ``MemoryError`` (it aborted the process before session 36).

The kernel is fixed code, a shared library of its own (``fx_sgemm512.cpp``; gcc takes 0.9 s of
CPU over it, which every program would pay again as a part of its source): ``cpp/native.py``'s
``LIBRARY``, built when functx is installed, else once per cache directory on another thread
(``start_build``: ``dot.fold_product_updates`` starts it as soon as a graph has a float32
product), which a program's first run waits for: a program that took OpenBLAS's sums on its
first calls and the kernel's later gave results that changed in the last bits between calls
(session 35), which JAX's never do. That wait cost an empty cache's first GPT block call about
0.55 s (1.20 -> 1.78 s, idle), which the installed library saves. The programs run their
float32 products with ``fx_gemm_run``'s routine ``fx_own_sgemm``, which calls the library
through the pointer ``give`` sets in each program before its first run (the programs open
no library themselves), and where there is none (not built) copies ``U`` and calls OpenBLAS.
The installed and the cache's library give the same bits (tested).

Used only where ``/proc/cpuinfo`` lists ``avx512f`` (the programs are compiled with
``-march=native``); elsewhere the pieces call OpenBLAS as before."""

from __future__ import annotations

import numpy as np

from functx import dtypes
from functx.lowering import toolchain
from functx.lowering.cpp import lapack, native

NAME = "fx_own_sgemm"  # (fx_gemm_run's routine in the programs: the library, or OpenBLAS)

# The pieces given to this kernel: float32, and at least this many rows, columns and terms (a
# 6 x 64 tile over fewer columns is mostly padding; OpenBLAS keeps the narrow products).
_MIN_M, _MIN_N, _MIN_K = 6, 48, 32
PANEL = 64  # the register tile's columns (FX_GNR): B is packed in panels of this many

#: the library (``cpp/native.py``: built at install time, else in the cache)
LIBRARY = native.Library("fx_sgemm512", "fx_sgemm512.cpp")
SOURCE = LIBRARY.source  # (fx_sgemm512.cpp)


def host_has_avx512() -> bool:
    """Whether this machine's CPU has AVX-512F (Linux's ``/proc/cpuinfo``; False elsewhere)."""
    return " avx512f" in toolchain.cpu_flags()


def start_build() -> None:
    """Load the kernel's library (``LIBRARY.start``: the installed one, else built in the cache
    directory on another thread), once, on an AVX-512 host."""
    if host_has_avx512():
        LIBRARY.start()


def library(wait: bool = True) -> str | None:
    """The path of the kernel's library this process uses (its build started, and with
    ``wait`` finished): the installed one or the cache directory's; None where it has none (not
    an AVX-512 host, or the build failed)."""
    start_build()
    if wait and host_has_avx512():
        LIBRARY.wait()
    return LIBRARY.state.get("path")


def give(program, source: str) -> None:
    """Give a loaded program whose ``source`` calls the kernel its routine (before its first
    run: ``runtime.Executable.run``), the library built first where it is being built."""
    if NAME in source:
        LIBRARY.give(program, {"fx_own_sgemm_fn": "fx_sgemm512"})


# (weak: one variable for every translation unit of a program; ``give`` sets it)
_LOAD = """typedef int (*fx_sgemm512_t)(int, int, int64_t, int64_t, int64_t, float, const float*,
                             int64_t, const float*, int64_t, float*, int64_t, const float*);
extern "C" {
__attribute__((weak)) fx_sgemm512_t fx_own_sgemm_fn = nullptr;
__attribute__((weak)) int fx_own_sgemm_err = 0;
}
// functx's float32 product (cpp/gemm.py) as fx_gemm_run's routine: the library this process
// loaded, which cpp/gemm.py's give gives the program before its first run (the program opens
// none itself), for pieces of at least %d rows, %d columns and %d terms; else fx_gemm_call's
// CBLAS form (U's block copied, OpenBLAS with beta = 1). A piece whose workspace could not be
// allocated sets fx_own_sgemm_err, and the program returns 1 (MemoryError).
struct fx_own_sgemm {
  fx_sgemm_t blas;
  bool operator!() const { return !blas; }
};
static void fx_gemm_call(fx_own_sgemm g, int ta, int tb, int64_t m, int64_t n, int64_t k,
                         float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
                         float* c, int64_t ldc, const float* u) {
  const fx_sgemm512_t f = __atomic_load_n(&fx_own_sgemm_fn, __ATOMIC_ACQUIRE);
  if (f && m >= %d && n >= %d && k >= %d) {
    if (f(ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, u))
      __atomic_store_n(&fx_own_sgemm_err, 1, __ATOMIC_RELAXED);
    return;
  }
  fx_gemm_call(g.blas, ta, tb, m, n, k, alpha, a, lda, b, ldb, c, ldc, u);
}
"""

#: the line after a group's ``fx_gemm_run`` (``cpp/dot.py``): a failed workspace allocation in
#: one of its pieces makes the program return 1 (``MemoryError``)
CHECK = "    if (__atomic_exchange_n(&fx_own_sgemm_err, 0, __ATOMIC_RELAXED)) return 1;"


def routine(prog, blas: str) -> str:
    """The routine ``fx_gemm_run`` takes for a group of float32 products: ``fx_own_sgemm``
    around OpenBLAS's ``blas`` (its ``fx_gemm_call`` added to ``prog`` once; the library's
    build started). ``CHECK`` follows the call."""
    start_build()
    load = _LOAD % ((_MIN_M, _MIN_N, _MIN_K) * 2)
    for sub in (lapack.HELPER, load):
        if sub not in prog.subs:
            prog.subs.append(sub)
    return f"{NAME}{{{blas}}}"


def applies(node) -> bool:
    """Whether ``node``'s pieces go through ``fx_own_sgemm`` (an AVX-512 host where the library
    compiled, float32); each piece then takes the kernel when it has at least ``_MIN_M`` rows,
    ``_MIN_N`` columns and ``_MIN_K`` terms."""
    ok = host_has_avx512() and "error" not in LIBRARY.state
    return ok and np.dtype(node.dtype) == dtypes.float32
