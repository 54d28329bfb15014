"""LAPACK called from the compiled C++ program: the library steps of ``cholesky``,
``triangular_solve``, ``lu``, ``eigh``, ``qr`` and ``svd`` (``functx/control/linalg.py``) as
direct calls of OpenBLAS's ``?potrf``, ``?trsm``, ``?getrf``, ``?syevd``/``?heevd``,
``?geqrf`` + ``?orgqr``/``?ungqr`` and ``?gesdd``, made by the program between kernels, with no
Python step. The library is SciPy's OpenBLAS (LP64), the one JAX's CPU kernels call through
``scipy.linalg.cython_lapack``, or, without SciPy, NumPy's (ILP64): NumPy's float32 routines
and its ``getrf`` measured 1.5-2x slower than SciPy's here.

Why: the Python host step (``fx_host``) copied every operand and result, converted row-major
buffers to Fortran order, looped over a batch in Python (one SciPy call per matrix) and, for
eigh/qr/svd, ran NumPy's gufuncs on NumPy's OpenBLAS. Figures (2-core test machine under load,
one BLAS thread, CPU time per call against JAX 0.10.2's in the same process): float64
cholesky + two triangular solves 512x512 went from 10.2 ms (JAX 3.8) to 4.9 ms (JAX 3.7: the
rest is the two 512x512 transposes of ``cho_factor(lower=False)``, C++ kernels that XLA folds
into its custom call's layout); 64 64x64 matrices from 4.1 to 1.9 ms (JAX 1.4); lu 512x512
5.4 ms (JAX 5.3), 64x(64x64) 1.9 ms (JAX 2.6); ``benchmarks/linalg.py`` has the table. How each
step lays out its buffers:

* ``cholesky``: a row-major matrix is the transpose of the column-major one LAPACK reads, so
  ``potrf`` with ``uplo='U'`` on a copy of the operand factors it in place and leaves the lower
  factor ``L`` in row-major order (``L L^H = A``); the other triangle is zeroed. A matrix that
  is not positive definite gives NaNs, as the host step and JAX's CPU lowering. The upper
  factor of a real operand (``scipy.linalg.cho_factor``'s default, lowered as
  ``control/linalg._UpperCholeskyStep`` on the operand itself rather than on a transposed copy)
  is ``uplo='L'`` on the same copy: LAPACK's column-major ``L`` is the row-major ``U``. That
  removed the two 512x512 transposes of cholesky + solve (float64, one BLAS thread, CPU ms,
  loaded machine, alternating processes: 2.9-4.0 against 3.8-6.9 before; JAX 5.2-5.6 in the
  same runs; a batch of 64 64x64 matrices 1.7-2.9 against 2.7-4.2, JAX 2.3-4.6);
* ``triangular_solve``: ``op(A) X = B`` on row-major buffers is ``X^T op(A)^T = B^T`` on the
  column-major views, one ``trsm`` per matrix on a copy of ``B`` (side and triangle swapped;
  ``op`` kept). A complex ``conj(A) X = B`` (conjugate without transpose) keeps the host step;
* ``lu``: ``getrf`` needs the matrix itself, so it factors a transposed copy (32x32 tiles) and
  transposes the factors back (O(n^2) against the O(n^3) factorization); the 1-based pivots
  become JAX's 0-based ``int32`` pivots and the permutation they make;
* ``eigh``: ``syevd``/``heevd`` on a copy, reading the triangle of the column-major view that
  is the operand's ``lower`` (or upper) one; the eigenvectors come back as rows and are
  transposed (conjugated for complex: the view holds the conjugate matrix). Before, the host
  step ran NumPy's gufunc, whose float32 LAPACK (NumPy's own OpenBLAS) took 1.8x JAX's time
  at 512x512 (44 against 25 CPU ms); now 0.93x; float64 0.97x;
* ``qr``: ``geqrf`` on a transposed copy, ``R`` read off, then ``orgqr``/``ungqr`` for ``Q``
  (float32 512x512: 2.1x JAX's time before, 0.95x now);
* ``svd``: ``gesdd`` of the column-major view (the operand's transpose ``X^T = U' S V'^H``):
  ``V'^H`` read in row-major order is the operand's ``U`` and ``U'`` its ``V^H``, so LAPACK
  writes them straight into the outputs (float32 512x512: 2.1x JAX's time before, 0.96x
  now). A ``subset_by_index`` other than everything keeps the host step.

A batch of matrices large enough (``PARALLEL_MIN_MICROS``) is shared out over the program's
OpenMP threads, each thread with workspaces of its own: a batch of 64 float32 64x64 eighs ran
on one core before, level with JAX on the idle 2-core machine (13.7-14.2 ms), and takes 7.8-9.6
ms shared out. Each matrix's LAPACK call is the same one-thread call as before, so the results
keep their bits.

``render(prog, k, group)`` emits the step and returns True, or returns False (the caller then
emits the host step) for another primitive, a dtype LAPACK lacks, an empty operand, or when no
library with the entry points is found. The library is named by its path (stable on a machine,
so the program's source, and its compiled-object cache entry, are too) and its entry points are
looked up once per process with ``dlopen(RTLD_NOLOAD)``/``dlsym``.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import math
import os

import numpy as np

# LAPACK's type letter and the real type of its elements, by dtype
_LETTER = {
    np.dtype(np.float32): ("s", "float", 1),
    np.dtype(np.float64): ("d", "double", 1),
    np.dtype(np.complex64): ("c", "float", 2),
    np.dtype(np.complex128): ("z", "double", 2),
}

HELPER = r"""#include <dlfcn.h>
// a LAPACK/BLAS entry point of the library at `lib` (already loaded by NumPy or SciPy), or null
static void* fx_lapack_fn(const char* lib, const char* name) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  if (!h) h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  return h ? dlsym(h, name) : nullptr;
}
"""

# the entry points' C types, by the library's integer type (``{i}``)
TYPES = r"""typedef void (*fx_potrf{b}_t)(const char*, const {i}*, void*, const {i}*, {i}*, size_t);
typedef void (*fx_getrf{b}_t)(const {i}*, const {i}*, void*, const {i}*, {i}*, {i}*);
typedef void (*fx_trsm{b}_t)(const char*, const char*, const char*, const char*, const {i}*,
                          const {i}*, const void*, const void*, const {i}*, void*, const {i}*,
                          size_t, size_t, size_t, size_t);
typedef void (*fx_geqrf{b}_t)(const {i}*, const {i}*, void*, const {i}*, void*, void*,
                           const {i}*, {i}*);
typedef void (*fx_orgqr{b}_t)(const {i}*, const {i}*, const {i}*, void*, const {i}*,
                           const void*, void*, const {i}*, {i}*);
typedef void (*fx_gesdd{b}_t)(const char*, const {i}*, const {i}*, void*, const {i}*, void*,
                           void*, const {i}*, void*, const {i}*, void*, const {i}*, {i}*, {i}*,
                           size_t);
typedef void (*fx_cgesdd{b}_t)(const char*, const {i}*, const {i}*, void*, const {i}*, void*,
                            void*, const {i}*, void*, const {i}*, void*, const {i}*, void*,
                            {i}*, {i}*, size_t);
typedef void (*fx_syevd{b}_t)(const char*, const char*, const {i}*, void*, const {i}*, void*,
                           void*, const {i}*, {i}*, const {i}*, {i}*, size_t, size_t);
typedef void (*fx_heevd{b}_t)(const char*, const char*, const {i}*, void*, const {i}*, void*,
                           void*, const {i}*, void*, const {i}*, {i}*, const {i}*, {i}*,
                           size_t, size_t);
"""

_ENTRIES = [f"{t}{f}" for t in "sdcz" for f in ("potrf", "trsm", "getrf")]
_ENTRIES += ["ssyevd", "dsyevd", "cheevd", "zheevd", "sorgqr", "dorgqr", "cungqr", "zungqr"]
_ENTRIES += [f"{t}{f}" for t in "sdcz" for f in ("geqrf", "gesdd")]


@functools.lru_cache(maxsize=None)
def library() -> tuple[str, str, str, int] | None:
    """``(path, prefix, suffix, integer bits)`` of the OpenBLAS whose LAPACK the programs call:
    SciPy's (LP64; the one JAX's CPU kernels call, through ``scipy.linalg.cython_lapack``) if
    installed, else NumPy's (ILP64). SciPy's ``getrf`` measured 1.5-2x faster than NumPy's on
    the test machine (a 512x512 matrix: 6.6 against 12.3 ms, one thread). None if neither
    exports every entry point used here."""
    site = os.path.dirname(os.path.dirname(np.__file__))
    for folder, pattern, prefix, suffix, bits in (
        ("scipy.libs", "*openblas*.so*", "scipy_", "_", 32),
        ("numpy.libs", "*openblas64*.so*", "scipy_", "_64_", 64),
    ):
        for path in sorted(glob.glob(os.path.join(site, folder, pattern))):
            if "openblas64" in os.path.basename(path) and bits == 32:
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            if all(hasattr(lib, f"{prefix}{e}{suffix}") for e in _ENTRIES):
                return os.path.realpath(path), prefix, suffix, bits
    return None


def _fn(prog, lib, letter, name):
    """The C++ line that looks the entry point ``name`` up once, as ``fx_<letter><name>``."""
    path, prefix, suffix, bits = lib
    if HELPER not in prog.subs:
        prog.subs.append(HELPER)
    types = TYPES.format(b=bits, i=f"int{bits}_t")
    if types not in prog.subs:
        prog.subs.append(types)
    ctype = f"fx_{name}{bits}_t"
    return (
        f"static const {ctype} fx_{letter}{name} = "
        f'({ctype})fx_lapack_fn("{path}", "{prefix}{letter}{name}{suffix}");'
    )


def render(prog, k, group) -> bool:
    """Emit the library step ``group`` (a ``LibraryStep``'s host group) as LAPACK calls."""
    step = group["callback"]
    prim = getattr(getattr(step, "prim", None), "name", None)
    emit = _RENDER.get(prim)
    if emit is None:
        return False
    ins = group["ins"]
    outs = group["outs"][: group["n_out"]]
    if any(np.dtype(n.dtype) not in _LETTER for n in ins):
        return False
    if any(math.prod(n.shape) == 0 for n in list(ins) + list(outs)):
        return False
    lib = library()
    if lib is None:
        return False
    params = dict(step.params, upper=True) if getattr(step, "upper", False) else step.params
    parts = emit(prog, lib, params, ins, outs)
    if parts is None:
        return False
    pre, body, sizes = parts
    nb = _batch(ins[0].shape)
    alloc, free = _scratch(sizes)
    micros = _micros(prim, ins)
    par = nb >= 2 and micros >= PARALLEL_MIN_MICROS and micros >= nb * MATRIX_MIN_MICROS
    # ("fx_host" below keeps this kernel in the main translation unit, beside fx_lapack_fn)
    prog.body += [f"  // kernel {k.index}: LAPACK {prim} (in place of an fx_host step)", "  {"]
    lines = [*pre, *_one_thread(prog, lib, "fx_lprev = "), "if (fx_lprev != 1) fx_lset(1);"]
    loop = [f"for (int64_t b = 0; b < {nb}LL; ++b) {{", *("  " + ln for ln in body), "}"]
    if par:  # (each thread its own workspaces)
        loop = ["#pragma omp for schedule(dynamic)", *loop]
        loop = ["#pragma omp parallel", "{", *("  " + ln for ln in [*alloc, *loop, *free]), "}"]
    else:
        loop = [*alloc, *loop, *free]
    lines += [*loop, "if (fx_lprev != 1) fx_lset(fx_lprev);"]
    prog.body += ["    " + ln for ln in lines] + ["  }"]
    return True


# A batch of matrices is shared out over the program's OpenMP threads (a matrix at a time, each
# call with the library on one thread) from this many microseconds of one thread's work in all
# (``_micros``): the threads cost 10-30 us of CPU a step, each matrix's bits stay the same.
PARALLEL_MIN_MICROS = 100

# ... and of at least this many a matrix: short calls from two threads at once cost CPU without
# saving time (the cause not found; a lock in OpenBLAS is one guess). Idle, 64 64x64 cho_solves
# (13 us a matrix) took 0.80-0.99 ms on two threads, 1.25-1.59 ms of CPU, against 0.94 ms on
# one; 64 64x64 eighs (220 us a matrix) 7.8-8.0 ms against 14.0.
MATRIX_MIN_MICROS = 50

# A matrix's float32 work per microsecond of one thread, in units of ``m n min(m, n)`` of its
# operand (``n^2 k`` for a triangular solve of k right-hand sides): batches of 64x64 matrices,
# one thread of the Zen 4 test machine (a 64x64 eigh: 220 us; a cholesky: 13 us; a solve of 8
# right-hand sides: 2.3 us, of 64: 10 us)
_UNITS_PER_MICRO = {
    "cholesky": 20_000,
    "triangular_solve": 14_000,
    "lu": 16_000,
    "qr": 4_000,
    "eigh": 1_200,
    "svd": 1_800,
}


def _micros(prim, ins):
    """One thread's estimated time for a batch, in microseconds (double precision twice
    float32's, complex twice that again)."""
    if prim == "triangular_solve":
        a, b = ins
        units = a.shape[-1] * b.shape[-2] * b.shape[-1]
    else:
        m, n = ins[0].shape[-2:]
        units = m * n * min(m, n)
    scale = np.dtype(ins[0].dtype).itemsize / 4
    return _batch(ins[0].shape) * units * scale / _UNITS_PER_MICRO[prim]


def _one_thread(prog, lib, prev):
    """The lines that look up the library's thread-count entry points and declare ``prev`` its
    count (1 without them). The caller sets it to one thread around its calls: idle after a
    call, OpenBLAS's own threads spin (yielding) for their next task against the program's
    OpenMP threads. In the Newton step (``benchmarks/workloads.py``, 16 problems of 64x64: its
    two batched 64x64 ``trsm`` steps were the only ones big enough for OpenBLAS's threads) that
    spinning was 35% of the process's CPU time and the waits for a descheduled worker 22%
    more. A large batch's matrices are shared out over the OpenMP threads (``render``), each
    call on one library thread: OpenBLAS (0.3.7 on) may be called from several threads at once,
    as the program's products do (``prelude``'s ``fx_gemm_run``)."""
    path, prefix = lib[0], lib[1]
    suffix = "64_" if lib[3] == 64 else ""
    if HELPER not in prog.subs:
        prog.subs.append(HELPER)
    if _THREADS not in prog.subs:
        prog.subs.append(_THREADS)
    return [
        f"static const fx_lnt_set_t fx_lset = (fx_lnt_set_t)fx_lapack_fn("
        f'"{path}", "{prefix}openblas_set_num_threads{suffix}");',
        f"static const fx_lnt_get_t fx_lget = (fx_lnt_get_t)fx_lapack_fn("
        f'"{path}", "{prefix}openblas_get_num_threads{suffix}");',
        f"const int {prev}(fx_lset && fx_lget) ? fx_lget() : 1;",
    ]


_THREADS = "typedef void (*fx_lnt_set_t)(int);\ntypedef int (*fx_lnt_get_t)(void);\n"


def _batch(shape):
    return math.prod(shape[:-2])


def _cholesky(prog, lib, params, ins, outs):
    it = f"int{lib[3]}_t"
    (x,), (o,) = ins, outs
    letter, rt, w = _LETTER[np.dtype(x.dtype)]
    n = x.shape[-1]
    # the lower factor: 'U' of the column-major view (the transpose), the upper triangle zeroed;
    # the upper factor of a real operand (``upper``, ``control/linalg._UpperCholeskyStep``):
    # 'L' of the view, the lower triangle zeroed
    upper = params.get("upper", False)
    zero = (
        f"    for (int64_t j = 0; j < i; ++j) m[i * {n}LL + j] = 0;"
        if upper
        else f"    for (int64_t j = (i + 1) * {w}LL; j < {n * w}LL; ++j) m[i * {n * w}LL + j] = 0;"
    )
    pre = [_fn(prog, lib, letter, "potrf"), f"if (!fx_{letter}potrf) return 1;"]
    body = [
        f"{rt}* m = ({rt}*)({o.buf}) + b * {n * n * w}LL;",
        f"memcpy(m, ({rt}*)({x.buf}) + b * {n * n * w}LL, {n * n * w}ULL * sizeof({rt}));",
        f"const {it} n = {n}; {it} info = 0;",
        f'fx_{letter}potrf("{"L" if upper else "U"}", &n, m, &n, &info, 1);',
        "if (info != 0) {",
        f"  for (int64_t i = 0; i < {n * n * w}LL; ++i) m[i] = NAN;",
        "} else {",
        f"  for (int64_t i = 0; i < {n}LL; ++i)",
        zero,
        "}",
    ]
    return pre, body, ()


def _trisolve(prog, lib, params, ins, outs):
    it = f"int{lib[3]}_t"
    (a, b), (o,) = ins, outs
    letter, rt, w = _LETTER[np.dtype(a.dtype)]
    if np.dtype(b.dtype) != np.dtype(a.dtype) or a.shape[:-2] != b.shape[:-2]:
        return None
    cplx = w == 2
    if params["transpose_a"]:
        trans = "C" if cplx and params["conjugate_a"] else "T"
    elif params["conjugate_a"] and cplx:
        return None  # conj(A) X = B: no such BLAS op (the host step does it)
    else:
        trans = "N"
    side = "R" if params["left_side"] else "L"  # (swapped: the column-major view is B^T)
    uplo = "U" if params["lower"] else "L"
    diag = "U" if params["unit_diagonal"] else "N"
    n = a.shape[-1]
    rows, cols = b.shape[-2:]
    one = "1.0" if not cplx else "1.0, 0.0"
    pre = [
        _fn(prog, lib, letter, "trsm"),
        f"if (!fx_{letter}trsm) return 1;",
        f"const {rt} one[{w}] = {{{one}}};",
        f"const {it} m = {cols}, n = {rows}, lda = {n}, ldb = {cols};",
    ]
    body = [
        f"{rt}* x = ({rt}*)({o.buf}) + b * {rows * cols * w}LL;",
        f"memcpy(x, ({rt}*)({b.buf}) + b * {rows * cols * w}LL,"
        f" {rows * cols * w}ULL * sizeof({rt}));",
        f'fx_{letter}trsm("{side}", "{uplo}", "{trans}", "{diag}", &m, &n, one,',
        f"  ({rt}*)({a.buf}) + b * {n * n * w}LL, &lda, x, &ldb, 1, 1, 1, 1);",
    ]
    return pre, body, ()


def _lu(prog, lib, params, ins, outs):
    it = f"int{lib[3]}_t"
    (x,), (o, piv, perm) = ins, outs
    letter, rt, w = _LETTER[np.dtype(x.dtype)]
    m, n = x.shape[-2:]
    kk = min(m, n)
    pre = [_fn(prog, lib, letter, "getrf"), f"if (!fx_{letter}getrf) return 1;"]
    sizes = [("t", rt, f"{m * n * w}ULL"), ("ip", it, f"{kk}ULL")]
    body = [
        f"const {rt}* src = (const {rt}*)({x.buf}) + b * {m * n * w}LL;",
        f"{rt}* dst = ({rt}*)({o.buf}) + b * {m * n * w}LL;",
        f"int32_t* pv = (int32_t*)({piv.buf}) + b * {kk}LL;",
        f"int32_t* pm = (int32_t*)({perm.buf}) + b * {m}LL;",
        *_tiled(m, n, w, f"t[(j * {m}LL + i) * {w} + c] = src[(i * {n}LL + j) * {w} + c];"),
        f"const {it} mm = {m}, nn = {n}; {it} info = 0;",
        f"fx_{letter}getrf(&mm, &nn, t, &mm, ip, &info);",
        *_tiled(
            m,
            n,
            w,
            f"dst[(i * {n}LL + j) * {w} + c] = "
            f"info < 0 ? ({rt})NAN : t[(j * {m}LL + i) * {w} + c];",
        ),
        f"for (int64_t i = 0; i < {m}LL; ++i) pm[i] = (int32_t)i;",
        f"for (int64_t i = 0; i < {kk}LL; ++i) {{",
        "  int32_t p = (int32_t)(ip[i] - 1); pv[i] = p;",
        "  int32_t s = pm[i]; pm[i] = pm[p]; pm[p] = s;",
        "}",
    ]
    return pre, body, sizes


def _tiled(m, n, w, stmt):
    """Loops running ``stmt`` over ``i < m``, ``j < n`` and the ``w`` parts of an element, in
    32x32 tiles (a transpose: both buffers' cache lines reused)."""
    return [
        f"for (int64_t i0 = 0; i0 < {m}LL; i0 += 32)",
        f"  for (int64_t j0 = 0; j0 < {n}LL; j0 += 32)",
        f"    for (int64_t i = i0; i < (i0 + 32 < {m}LL ? i0 + 32 : {m}LL); ++i)",
        f"      for (int64_t j = j0; j < (j0 + 32 < {n}LL ? j0 + 32 : {n}LL); ++j)",
        f"        for (int64_t c = 0; c < {w}; ++c) {stmt}",
    ]


def _scratch(sizes):
    """The lines allocating (zeroed) and freeing the workspaces ``(name, type, elements)`` that
    the matrices of a batch, or of a thread's share of it, use one after another."""
    alloc = [f"{ty}* {buf} = ({ty}*)calloc({size}, sizeof({ty}));" for buf, ty, size in sizes]
    return alloc, [f"free({buf});" for buf, _, _ in sizes]


def _eigh(prog, lib, params, ins, outs):
    (x,), (v, ev) = ins, outs
    it = f"int{lib[3]}_t"
    letter, rt, w = _LETTER[np.dtype(x.dtype)]
    n = x.shape[-1]
    lo, hi = params["subset_by_index"] or (0, n)
    d = hi - lo
    # the column-major view of a row-major matrix is its transpose: its upper triangle is the
    # lower one of the matrix; for a complex matrix it holds the conjugate Hermitian matrix
    # (same eigenvalues, conjugate eigenvectors). LAPACK's minimal workspaces for jobz='V'.
    uplo = "U" if params["lower"] else "L"
    sizes = [("t", rt, f"{n * n * w}ULL"), ("wv", rt, f"{n}ULL")]
    if w == 1:
        name = "syevd"
        sizes += [("work", rt, f"{1 + 6 * n + 2 * n * n}ULL"), ("iwork", it, f"{3 + 5 * n}ULL")]
        call = "t, &n, wv, work, &lwork, iwork, &liwork, &info, 1, 1"
        lwork = 1 + 6 * n + 2 * n * n
    else:
        name = "heevd"
        sizes += [
            ("work", rt, f"{2 * (2 * n + n * n)}ULL"),
            ("rwork", rt, f"{1 + 5 * n + 2 * n * n}ULL"),
            ("iwork", it, f"{3 + 5 * n}ULL"),
        ]
        call = "t, &n, wv, work, &lwork, rwork, &lrwork, iwork, &liwork, &info, 1, 1"
        lwork = 2 * n + n * n
    pre = [
        _fn(prog, lib, letter, name),
        f"if (!fx_{letter}{name}) return 1;",
        f"const {it} n = {n}, lwork = {lwork}, liwork = {3 + 5 * n};",
        f"const {it} lrwork = {1 + 5 * n + 2 * n * n}; (void)lrwork;",
    ]
    src = f"t[(({lo}LL + j) * {n}LL + i) * {w} + c]"
    body = [
        f"memcpy(t, ({rt}*)({x.buf}) + b * {n * n * w}LL, {n * n * w}ULL * sizeof({rt}));",
        f"{it} info = 0;",
        f'fx_{letter}{name}("V", "{uplo}", &n, {call});',
        f"{rt}* dst = ({rt}*)({v.buf}) + b * {n * d * w}LL;",
        f"{rt}* ew = ({rt}*)({ev.buf}) + b * {d}LL;",
        *_tiled(
            n,
            d,
            w,
            f"dst[(i * {d}LL + j) * {w} + c] = info != 0 ? ({rt})NAN : (c ? -{src} : {src});",
        ),
        f"for (int64_t j = 0; j < {d}LL; ++j) ew[j] = info != 0 ? ({rt})NAN : wv[{lo}LL + j];",
    ]
    return pre, body, sizes


def _qr(prog, lib, params, ins, outs):
    (x,), (q, r) = ins, outs
    it = f"int{lib[3]}_t"
    letter, rt, w = _LETTER[np.dtype(x.dtype)]
    m, n = x.shape[-2:]
    k = min(m, n)
    kq = m if params["full_matrices"] else k  # Q is m x kq, R kq x n
    cols = max(n, kq)
    org = "ungqr" if w == 2 else "orgqr"
    # (the orgqr entry's C type serves ungqr: the same arguments)
    get_org = _fn(prog, lib, letter, "orgqr").replace(
        f'"{lib[1]}{letter}orgqr{lib[2]}"', f'"{lib[1]}{letter}{org}{lib[2]}"'
    )
    pre = [
        _fn(prog, lib, letter, "geqrf"),
        get_org,
        f"if (!fx_{letter}geqrf || !fx_{letter}orgqr) return 1;",
        f"const {it} m = {m}, n = {n}, k = {k}, kq = {kq}, neg = -1;",
        f"{rt} q1[2] = {{0, 0}}, q2[2] = {{0, 0}};",  # (workspace queries)
        f"{it} qinfo = 0;",
        f"fx_{letter}geqrf(&m, &n, nullptr, &m, nullptr, q1, &neg, &qinfo);",
        f"fx_{letter}orgqr(&m, &kq, &k, nullptr, &m, nullptr, q2, &neg, &qinfo);",
        f"{it} lwork = ({it})q1[0] > ({it})q2[0] ? ({it})q1[0] : ({it})q2[0];",
        "if (lwork < 1) lwork = 1;",
    ]
    sizes = [
        ("t", rt, f"{m * cols * w}ULL"),
        ("tau", rt, f"{max(k, 1) * w}ULL"),
        ("work", rt, f"(size_t)lwork * {w}"),
    ]
    body = [
        f"{it} info = 0;",
        f"const {rt}* src = (const {rt}*)({x.buf}) + b * {m * n * w}LL;",
        f"{rt}* qd = ({rt}*)({q.buf}) + b * {m * kq * w}LL;",
        f"{rt}* rd = ({rt}*)({r.buf}) + b * {kq * n * w}LL;",
        *_tiled(m, n, w, f"t[(j * {m}LL + i) * {w} + c] = src[(i * {n}LL + j) * {w} + c];"),
        f"fx_{letter}geqrf(&m, &n, t, &m, tau, work, &lwork, &info);",
        *_tiled(
            kq,
            n,
            w,
            f"rd[(i * {n}LL + j) * {w} + c] = i <= j ? t[(j * {m}LL + i) * {w} + c] : 0;",
        ),
        f"fx_{letter}orgqr(&m, &kq, &k, t, &m, tau, work, &lwork, &info);",
        *_tiled(m, kq, w, f"qd[(i * {kq}LL + j) * {w} + c] = t[(j * {m}LL + i) * {w} + c];"),
    ]
    return pre, body, sizes


def _svd(prog, lib, params, ins, outs):
    x = ins[0]
    it = f"int{lib[3]}_t"
    letter, rt, w = _LETTER[np.dtype(x.dtype)]
    m, n = x.shape[-2:]
    kk = min(m, n)
    full, uv = params["full_matrices"], params["compute_uv"]
    sub = params["subset_by_index"]
    if sub is not None and tuple(sub) != (0, kk):
        return None
    # the column-major view of the row-major m x n matrix is its n x m transpose X^T = U' S V'^H;
    # then X = (V'^H)^T S (U')^T: LAPACK's V'^H read in row-major order is X's U, and its U' is
    # X's V^H, with no transpose (complex too), so they are written into the outputs directly
    jobz = ("A" if full else "S") if uv else "N"
    ucols = n if full else kk  # U' is n x ucols (ldu n): X's V^H, ucols x n
    vrows = m if full else kk  # V'^H is vrows x m (ldvt vrows): X's U, m x vrows
    s_out = outs[0]
    vh, u = (outs[2].buf, outs[1].buf) if uv else ("nullptr", "nullptr")
    name = "gesdd"
    ctype = "fx_cgesdd{b}_t" if w == 2 else "fx_gesdd{b}_t"
    get = _fn(prog, lib, letter, name).replace(f"fx_gesdd{lib[3]}_t", ctype.format(b=lib[3]))
    rw = "rwork, " if w == 2 else ""
    nrw = max(5 * kk * kk + 7 * kk, 2 * max(m, n) * kk + 2 * kk * kk + kk) if w == 2 else 1
    pre = [
        get,
        f"if (!fx_{letter}gesdd) return 1;",
        f"const {it} m = {n}, n = {m}, ldu = {n}, ldvt = {max(vrows, 1)};",
        f"{it} qinfo = 0, neg = -1, qiwork = 0;",
        f"{rt} q[2] = {{0, 0}}, qrwork = 0; (void)qrwork;",
        f'fx_{letter}gesdd("{jobz}", &m, &n, nullptr, &m, nullptr, nullptr, &ldu, nullptr, '
        f"&ldvt, q, &neg, {'&qrwork, ' if w == 2 else ''}&qiwork, &qinfo, 1);",
        f"{it} lwork = ({it})q[0] > 1 ? ({it})q[0] : 1;",
    ]
    sizes = [
        ("t", rt, f"{m * n * w}ULL"),
        ("iwork", it, f"{8 * kk}ULL"),
        ("rwork", rt, f"{nrw}ULL"),
        ("work", rt, f"(size_t)lwork * {w}"),
    ]
    body = [
        "(void)rwork;",
        f"{it} info = 0;",
        f"memcpy(t, ({rt}*)({x.buf}) + b * {m * n * w}LL, {m * n * w}ULL * sizeof({rt}));",
        f"{rt}* sd = ({rt}*)({s_out.buf}) + b * {kk}LL;",
        f"{rt}* ud = {'nullptr' if not uv else f'({rt}*)({vh}) + b * {ucols * n * w}LL'};",
        f"{rt}* vd = {'nullptr' if not uv else f'({rt}*)({u}) + b * {m * vrows * w}LL'};",
        f'fx_{letter}gesdd("{jobz}", &m, &n, t, &m, sd, ud, &ldu, vd, &ldvt, work, &lwork, '
        f"{rw}iwork, &info, 1);",
        "if (info != 0) {",
        f"  for (int64_t i = 0; i < {kk}LL; ++i) sd[i] = NAN;",
    ]
    if uv:
        body += [
            f"  for (int64_t i = 0; i < {ucols * n * w}LL; ++i) ud[i] = NAN;",
            f"  for (int64_t i = 0; i < {m * vrows * w}LL; ++i) vd[i] = NAN;",
        ]
    body.append("}")
    return pre, body, sizes


_RENDER = {
    "svd": _svd,
    "cholesky": _cholesky,
    "triangular_solve": _trisolve,
    "lu": _lu,
    "eigh": _eigh,
    "qr": _qr,
}
