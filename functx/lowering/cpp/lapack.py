"""LAPACK called from the compiled C++ program: the library steps of ``cholesky``,
``triangular_solve`` and ``lu`` (``functx/control/linalg.py``) as direct calls of OpenBLAS's
``?potrf``, ``?trsm`` and ``?getrf``, made by the program between kernels, with no Python step.
The library is SciPy's OpenBLAS (LP64), the one JAX's CPU kernels call through
``scipy.linalg.cython_lapack``, or, without SciPy, NumPy's (ILP64).

Why: the Python host step (``fx_host``) copied every operand and result, converted row-major
buffers to Fortran order, and looped over a batch in Python (one SciPy call per matrix). On the
2-core test machine (float64, one BLAS thread, CPU time per call, JAX 0.10.2 beside it): a
512x512 cholesky + two triangular solves went from 10.2 ms (JAX 3.5 ms) to 5.7 ms (JAX 5.1 ms:
the rest is the two 512x512 transposes of ``cho_factor(lower=False)``); a batch of 64 64x64
matrices from 4.8 to 2.7 ms (JAX 3.3 ms); lu 512x512 5.8 ms (JAX 6.7 ms). Here no buffer is
transposed except around ``getrf``:

* ``cholesky``: a row-major matrix is the transpose of the column-major one LAPACK reads, so
  ``potrf`` with ``uplo='U'`` on a copy of the operand factors it in place and leaves the lower
  factor ``L`` in row-major order (``L L^H = A``); the other triangle is zeroed. A matrix that
  is not positive definite gives NaNs, as the host step and JAX's CPU lowering;
* ``triangular_solve``: ``op(A) X = B`` on row-major buffers is ``X^T op(A)^T = B^T`` on the
  column-major views, one ``trsm`` per matrix on a copy of ``B`` (side and triangle swapped;
  ``op`` kept). A complex ``conj(A) X = B`` (conjugate without transpose) keeps the host step;
* ``lu``: ``getrf`` needs the matrix itself, so it factors a transposed copy (32x32 tiles) and
  transposes the factors back (O(n^2) against the O(n^3) factorization); the 1-based pivots
  become JAX's 0-based ``int32`` pivots and the permutation they make.

``eigh``, ``qr`` and ``svd`` keep the host step (NumPy's gufuncs): their O(n^3) work dwarfs its
copies, and they measured at JAX's speed.

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
"""

_ENTRIES = [f"{t}{f}" for t in "sdcz" for f in ("potrf", "trsm", "getrf")]


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
    it = f"int{lib[3]}_t"
    (x,), (o,) = ins, outs
    letter, rt, w = _LETTER[np.dtype(x.dtype)]
    n = x.shape[-1]
    nb = _batch(x.shape)
    return [
        _fn(prog, lib, letter, "potrf"),
        f"if (!fx_{letter}potrf) return 1;",
        f"memcpy((void*)({o.buf}), (const void*)({x.buf}), {nb * n * n * w}ULL * sizeof({rt}));",
        f"for (int64_t b = 0; b < {nb}LL; ++b) {{",
        f"  {rt}* m = ({rt}*)({o.buf}) + b * {n * n * w}LL;",
        f"  const {it} n = {n}; {it} info = 0;",
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
    nb = _batch(b.shape)
    one = "1.0" if not cplx else "1.0, 0.0"
    return [
        _fn(prog, lib, letter, "trsm"),
        f"if (!fx_{letter}trsm) return 1;",
        f"memcpy((void*)({o.buf}), (const void*)({b.buf}),"
        f" {nb * rows * cols * w}ULL * sizeof({rt}));",
        f"const {rt} one[{w}] = {{{one}}};",
        f"const {it} m = {cols}, n = {rows}, lda = {n}, ldb = {cols};",
        f"for (int64_t b = 0; b < {nb}LL; ++b)",
        f'  fx_{letter}trsm("{side}", "{uplo}", "{trans}", "{diag}", &m, &n, one,',
        f"    ({rt}*)({a.buf}) + b * {n * n * w}LL, &lda,",
        f"    ({rt}*)({o.buf}) + b * {rows * cols * w}LL, &ldb, 1, 1, 1, 1);",
    ]


def _lu(prog, lib, params, ins, outs):
    it = f"int{lib[3]}_t"
    (x,), (o, piv, perm) = ins, outs
    letter, rt, w = _LETTER[np.dtype(x.dtype)]
    m, n = x.shape[-2:]
    kk = min(m, n)
    nb = _batch(x.shape)
    return [
        _fn(prog, lib, letter, "getrf"),
        f"if (!fx_{letter}getrf) return 1;",
        f"{rt}* t = ({rt}*)malloc({m * n * w}ULL * sizeof({rt}));",
        f"{it}* ip = ({it}*)malloc({kk}ULL * sizeof({it}));",
        f"for (int64_t b = 0; b < {nb}LL; ++b) {{",
        f"  const {rt}* src = (const {rt}*)({x.buf}) + b * {m * n * w}LL;",
        f"  {rt}* dst = ({rt}*)({o.buf}) + b * {m * n * w}LL;",
        f"  int32_t* pv = (int32_t*)({piv.buf}) + b * {kk}LL;",
        f"  int32_t* pm = (int32_t*)({perm.buf}) + b * {m}LL;",
        *_tiled(m, n, w, f"t[(j * {m}LL + i) * {w} + c] = src[(i * {n}LL + j) * {w} + c];"),
        f"  const {it} mm = {m}, nn = {n}; {it} info = 0;",
        f"  fx_{letter}getrf(&mm, &nn, t, &mm, ip, &info);",
        *_tiled(
            m,
            n,
            w,
            f"dst[(i * {n}LL + j) * {w} + c] = "
            f"info < 0 ? ({rt})NAN : t[(j * {m}LL + i) * {w} + c];",
        ),
        f"  for (int64_t i = 0; i < {m}LL; ++i) pm[i] = (int32_t)i;",
        f"  for (int64_t i = 0; i < {kk}LL; ++i) {{",
        "    int32_t p = (int32_t)(ip[i] - 1); pv[i] = p;",
        "    int32_t s = pm[i]; pm[i] = pm[p]; pm[p] = s;",
        "  }",
        "}",
        "free(t); free(ip);",
    ]


def _tiled(m, n, w, stmt):
    """Loops running ``stmt`` over ``i < m``, ``j < n`` and the ``w`` parts of an element, in
    32x32 tiles (a transpose: both buffers' cache lines reused)."""
    return [
        f"  for (int64_t i0 = 0; i0 < {m}LL; i0 += 32)",
        f"    for (int64_t j0 = 0; j0 < {n}LL; j0 += 32)",
        f"      for (int64_t i = i0; i < (i0 + 32 < {m}LL ? i0 + 32 : {m}LL); ++i)",
        f"        for (int64_t j = j0; j < (j0 + 32 < {n}LL ? j0 + 32 : {n}LL); ++j)",
        f"          for (int64_t c = 0; c < {w}; ++c) {stmt}",
    ]


_RENDER = {"cholesky": _cholesky, "triangular_solve": _trisolve, "lu": _lu}
