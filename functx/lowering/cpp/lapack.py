"""LAPACK called from the compiled C++ program: the library steps of ``cholesky``,
``triangular_solve`` and ``lu`` (``functx/control/linalg.py``) as direct calls of NumPy's own
OpenBLAS (the ILP64 ``scipy_?potrf_64_``, ``scipy_?trsm_64_`` and ``scipy_?getrf_64_`` that
NumPy's ``numpy.linalg`` uses), made by the program between kernels, with no Python step.

Why: the Python host step (``fx_host``) copied every operand and result, converted row-major
buffers to Fortran order, and looped over a batch in Python (one SciPy call per matrix): on the
2-core test machine a 512x512 float64 cholesky + two triangular solves took 10.2 ms against JAX's
3.5 ms, a batch of 64 64x64 matrices 4.8 ms against 1.7 ms. Here no buffer is transposed:

* ``cholesky``: a row-major matrix is the transpose of the column-major one LAPACK reads, so
  ``potrf`` with ``uplo='U'`` on a copy of the operand factors it in place and leaves the lower
  factor ``L`` in row-major order (``L L^H = A``); the other triangle is zeroed. A matrix that
  is not positive definite gives NaNs, as the host step and JAX's CPU lowering;
* ``triangular_solve``: ``op(A) X = B`` on row-major buffers is ``X^T op(A)^T = B^T`` on the
  column-major views, one ``trsm`` per matrix on a copy of ``B`` (side and triangle swapped;
  ``op`` kept). A complex ``conj(A) X = B`` (conjugate without transpose) keeps the host step;
* ``lu``: ``getrf`` needs the matrix itself, so it factors a transposed copy and transposes the
  factors back (O(n^2) against the O(n^3) factorization); the 1-based pivots become JAX's
  0-based ``int32`` pivots and the permutation they make.

``render(prog, k, group)`` emits the step and returns True, or returns False (the caller then
emits the host step) for another primitive, a dtype LAPACK lacks, an empty operand, or when
NumPy's BLAS library or its symbols are not found. The library is found by its path (stable on
a machine, so the program's source, and its compiled-object cache entry, are too) and its entry
points are looked up once per process with ``dlopen(RTLD_NOLOAD)``/``dlsym``.
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
// a LAPACK/BLAS entry point of the library at `lib` (already loaded by NumPy), or null
static void* fx_lapack_fn(const char* lib, const char* name) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
  if (!h) h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  return h ? dlsym(h, name) : nullptr;
}
typedef void (*fx_potrf_t)(const char*, const int64_t*, void*, const int64_t*, int64_t*, size_t);
typedef void (*fx_getrf_t)(const int64_t*, const int64_t*, void*, const int64_t*, int64_t*,
                           int64_t*);
typedef void (*fx_trsm_t)(const char*, const char*, const char*, const char*, const int64_t*,
                          const int64_t*, const void*, const void*, const int64_t*, void*,
                          const int64_t*, size_t, size_t, size_t, size_t);
"""


@functools.lru_cache(maxsize=None)
def library() -> str | None:
    """The path of NumPy's ILP64 OpenBLAS if it exports the LAPACK entry points used here."""
    root = os.path.dirname(np.__file__)
    paths = glob.glob(os.path.join(root, "..", "numpy.libs", "*openblas64*.so*"))
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        names = [f"scipy_{t}{f}_64_" for t in "sdcz" for f in ("potrf", "trsm", "getrf")]
        if all(hasattr(lib, n) for n in names):
            return os.path.realpath(path)
    return None


def _fn(prog, lib, letter, name, ctype):
    """A C++ expression: the entry point ``name`` of type ``ctype``, looked up once."""
    if HELPER not in prog.subs:
        prog.subs.append(HELPER)
    return (
        f"static const {ctype} fx_{letter}{name} = "
        f'({ctype})fx_lapack_fn("{lib}", "scipy_{letter}{name}_64_");'
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
    lines = emit(prog, lib, step.params, ins, outs)
    if lines is None:
        return False
    # ("fx_host" below keeps this kernel in the main translation unit, beside fx_lapack_fn)
    prog.body += [f"  // kernel {k.index}: LAPACK {prim} (in place of an fx_host step)", "  {"]
    prog.body += ["    " + ln for ln in lines] + ["  }"]
    return True


def _batch(shape):
    return math.prod(shape[:-2])


def _cholesky(prog, lib, params, ins, outs):
    (x,), (o,) = ins, outs
    letter, rt, w = _LETTER[np.dtype(x.dtype)]
    n = x.shape[-1]
    nb = _batch(x.shape)
    return [
        _fn(prog, lib, letter, "potrf", "fx_potrf_t"),
        f"if (!fx_{letter}potrf) return 1;",
        f"memcpy((void*)({o.buf}), (const void*)({x.buf}), {nb * n * n * w}ULL * sizeof({rt}));",
        f"for (int64_t b = 0; b < {nb}LL; ++b) {{",
        f"  {rt}* m = ({rt}*)({o.buf}) + b * {n * n * w}LL;",
        f"  const int64_t n = {n}LL; int64_t info = 0;",
        f'  fx_{letter}potrf("U", &n, m, &n, &info, 1);',
        "  if (info != 0) {",
        f"    for (int64_t i = 0; i < {n * n * w}LL; ++i) m[i] = NAN;",
        "  } else {",
        f"    for (int64_t i = 0; i < {n}LL; ++i)",
        f"      for (int64_t j = (i + 1) * {w}LL; j < {n * w}LL; ++j) m[i * {n * w}LL + j] = 0;",
        "  }",
        "}",
    ]


def _trisolve(prog, lib, params, ins, outs):
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
    nb = _batch(b.shape)
    one = "1.0" if not cplx else "1.0, 0.0"
    return [
        _fn(prog, lib, letter, "trsm", "fx_trsm_t"),
        f"if (!fx_{letter}trsm) return 1;",
        f"memcpy((void*)({o.buf}), (const void*)({b.buf}),"
        f" {nb * rows * cols * w}ULL * sizeof({rt}));",
        f"const {rt} one[{w}] = {{{one}}};",
        f"const int64_t m = {cols}LL, n = {rows}LL, lda = {n}LL, ldb = {cols}LL;",
        f"for (int64_t b = 0; b < {nb}LL; ++b)",
        f'  fx_{letter}trsm("{side}", "{uplo}", "{trans}", "{diag}", &m, &n, one,',
        f"    ({rt}*)({a.buf}) + b * {n * n * w}LL, &lda,",
        f"    ({rt}*)({o.buf}) + b * {rows * cols * w}LL, &ldb, 1, 1, 1, 1);",
    ]


def _lu(prog, lib, params, ins, outs):
    (x,), (o, piv, perm) = ins, outs
    letter, rt, w = _LETTER[np.dtype(x.dtype)]
    m, n = x.shape[-2:]
    kk = min(m, n)
    nb = _batch(x.shape)
    return [
        _fn(prog, lib, letter, "getrf", "fx_getrf_t"),
        f"if (!fx_{letter}getrf) return 1;",
        f"{rt}* t = ({rt}*)malloc({m * n * w}ULL * sizeof({rt}));",
        f"int64_t* ip = (int64_t*)malloc({kk}ULL * sizeof(int64_t));",
        f"for (int64_t b = 0; b < {nb}LL; ++b) {{",
        f"  const {rt}* src = (const {rt}*)({x.buf}) + b * {m * n * w}LL;",
        f"  {rt}* dst = ({rt}*)({o.buf}) + b * {m * n * w}LL;",
        f"  int32_t* pv = (int32_t*)({piv.buf}) + b * {kk}LL;",
        f"  int32_t* pm = (int32_t*)({perm.buf}) + b * {m}LL;",
        f"  for (int64_t i = 0; i < {m}LL; ++i)",
        f"    for (int64_t j = 0; j < {n}LL; ++j)",
        f"      for (int64_t c = 0; c < {w}; ++c) t[(j * {m}LL + i) * {w} + c] = "
        f"src[(i * {n}LL + j) * {w} + c];",
        f"  const int64_t mm = {m}LL, nn = {n}LL; int64_t info = 0;",
        f"  fx_{letter}getrf(&mm, &nn, t, &mm, ip, &info);",
        f"  for (int64_t i = 0; i < {m}LL; ++i)",
        f"    for (int64_t j = 0; j < {n}LL; ++j)",
        f"      for (int64_t c = 0; c < {w}; ++c) dst[(i * {n}LL + j) * {w} + c] = "
        f"info < 0 ? ({rt})NAN : t[(j * {m}LL + i) * {w} + c];",
        f"  for (int64_t i = 0; i < {m}LL; ++i) pm[i] = (int32_t)i;",
        f"  for (int64_t i = 0; i < {kk}LL; ++i) {{",
        "    int32_t p = (int32_t)(ip[i] - 1); pv[i] = p;",
        "    int32_t s = pm[i]; pm[i] = pm[p]; pm[p] = s;",
        "  }",
        "}",
        "free(t); free(ip);",
    ]


_RENDER = {"cholesky": _cholesky, "triangular_solve": _trisolve, "lu": _lu}
