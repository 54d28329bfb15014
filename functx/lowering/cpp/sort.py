"""C++ sort kernels (``sort`` and ``top_k``, ``functx/control/sort.py``): per row, the operands'
elements are loaded into scratch arrays, an index array is sorted by a stable bottom-up merge sort
(insertion-sorted runs of 16, then merges) with the comparator inlined, and the first ``k``
elements of each output are written in the sorted order. Rows run in parallel (OpenMP); the
generated code uses no C++ library header (the prelude keeps to C headers)."""

from __future__ import annotations

import math

import numpy as np

from functx import dtypes
from functx.lowering.cpp.emit import _PAR, Emitter, _decompose, _ic, _store, compute_type
from functx.lowering.loopir import flat_offset, sym
from functx.lowering.schedule import Kernel, KernelCtx

RUN = 16  # insertion-sorted run length before merging
SELECT_MAX = 64  # top_k of at most this many: one selection pass instead of a sort


def _lt_asc(dt, a, b):
    """C++ ``a < b`` in JAX's sort order for a key of dtype ``dt`` (NaNs last, -0.0 == 0.0)."""
    dt = np.dtype(dt)
    if dt in dtypes.COMPLEX:
        return None
    if dt in dtypes.FLOATS:
        return f"(({a}) < ({b}) || (({b}) != ({b}) && ({a}) == ({a})))"
    return f"(({a}) < ({b}))"


def _key_parts(dt, v):
    """The scalar keys of a value: complex -> real and imaginary parts."""
    if np.dtype(dt) in dtypes.COMPLEX:
        part = dtypes.REAL_OF[np.dtype(dt)]
        return [(part, f"__real__ ({v})"), (part, f"__imag__ ({v})")]
    return [(dt, v)]


def _comparator(group, vals):
    """Lines of the body of ``lt(ia, ib)``: is element ``ia`` of the row before ``ib``?"""
    lines = []
    if group["mode"] == "topk":
        v = vals[0]
        dt = np.dtype(group["ops"][0].dtype)
        if dt in dtypes.FLOATS:
            bits, mask = (
                ("int64_t", "0x7FFFFFFFFFFFFFFFLL")
                if dt == dtypes.float64
                else ("int32_t", "0x7FFFFFFF")
            )
            ct = compute_type(dt)
            lines += [
                f"{ct} xa = {v}[ia], xb = {v}[ib]; {bits} ka, kb;",
                "__builtin_memcpy(&ka, &xa, sizeof ka); __builtin_memcpy(&kb, &xb, sizeof kb);",
                f"if (ka < 0) ka ^= {mask}; if (kb < 0) kb ^= {mask};",
                "if (ka != kb) return ka > kb;",
            ]
        else:
            lines.append(f"if ({v}[ia] != {v}[ib]) return {v}[ia] > {v}[ib];")
        lines.append("return ia < ib;")
        return lines
    for m in range(group["num_keys"]):
        dt = group["ops"][m].dtype
        for j, (pdt, ex) in enumerate(_key_parts(dt, f"{vals[m]}[ia]")):
            ey = _key_parts(dt, f"{vals[m]}[ib]")[j][1]
            lines.append(f"if ({_lt_asc(pdt, ex, ey)}) return true;")
            lines.append(f"if ({_lt_asc(pdt, ey, ex)}) return false;")
    lines.append("return false;")
    return lines


def _packed_key(group, n, v):
    """Statements setting ``ia_[j0]`` to a packed (key, index) integer whose unsigned order is
    the sort's order, for one key of at most 32 bits (else None)."""
    ops = group["ops"]
    dt = np.dtype(ops[0].dtype)
    if group["num_keys"] != 1 or n >= 2**31 or dt in dtypes.COMPLEX or dt.itemsize > 4:
        return None
    topk = group["mode"] == "topk"
    x = f"{v}[j0]"
    if dt in dtypes.FLOATS:
        lines = [f"float xf = (float)({x}); uint32_t u;"]
        if not topk:  # JAX's sort: -0.0 is 0.0, every NaN the positive quiet NaN
            lines.append('xf = xf == 0.0f ? 0.0f : xf; if (xf != xf) xf = __builtin_nanf("");')
        lines += [
            "__builtin_memcpy(&u, &xf, 4);",
            "u ^= (u >> 31) ? 0xFFFFFFFFu : 0x80000000u;",
        ]
    elif dt == dtypes.bool_ or dt.kind == "u":
        lines = [f"uint32_t u = (uint32_t)({x});"]
    else:
        lines = [f"uint32_t u = (uint32_t)(int32_t)({x}) ^ 0x80000000u;"]
    if topk:  # descending keys, ascending indices
        lines.append("u = ~u;")
    lines.append("ia_[j0] = (int64_t)(((uint64_t)u << 32) | (uint64_t)j0);")
    return lines


def render(prog, k: Kernel):
    group = k.nodes[0].params["group"]
    ops, outs, dim, kk = group["ops"], group["outs"], group["dimension"], group["k"]
    shape = ops[0].shape
    n = shape[dim]
    rows = tuple(d for i, d in enumerate(shape) if i != dim)
    out_shape = outs[0].shape
    n_rows = math.prod(rows)
    if n_rows == 0 or kk == 0:
        return
    rv = [sym(f"r{i}") for i in range(len(rows))]
    jv = sym("j0")
    full = tuple(rv[:dim]) + (jv,) + tuple(rv[dim:])
    ctx = KernelCtx(k)
    em = Emitter("      ")
    vals = [f"sv{m}" for m in range(len(ops))]
    loads = [em(o.load(full, ctx)) for o in ops]
    cts = [compute_type(o.dtype) for o in ops]
    ind = "    "
    lines = [
        f"  // kernel {k.index}: {group['mode']} sort along axis {dim} of {shape}"
        f" (keys: {group['num_keys']}, keep {kk})",
        f"  #pragma omp parallel for schedule(static) if({n_rows}LL * {max(n, 1)}LL >= {_PAR}"
        f" && {n_rows}LL > 1)",
        f"  for (int64_t row = 0; row < {n_rows}LL; ++row) {{",
    ]
    lines += [ind + s for s in _decompose([str(v) for v in rv], rows, "row")]
    scratch = " + ".join(
        [f"{n}ULL * sizeof({ct})" for ct in cts] + [f"{2 * n}ULL * sizeof(int64_t)"]
    )
    lines += [
        f"{ind}char* fx_scratch = (char*)malloc({scratch});",
        f"{ind}char* fx_p = fx_scratch;",
    ]
    for v, ct in zip(vals, cts):
        lines.append(f"{ind}{ct}* {v} = ({ct}*)fx_p; fx_p += {n}ULL * sizeof({ct});")
    lines += [
        f"{ind}int64_t* ia_ = (int64_t*)fx_p;",
        f"{ind}int64_t* ib_ = ia_ + {n}LL;",
        f"{ind}for (int64_t j0 = 0; j0 < {n}LL; ++j0) {{",
    ]
    lines += em.lines
    lines += [f"      {v}[j0] = {x};" for v, x in zip(vals, loads)]
    packed = _packed_key(group, n, vals[0])
    if packed is None:
        lines += ["      ia_[j0] = j0;", "    }"]
        lines.append(f"{ind}auto lt = [&](int64_t ia, int64_t ib) -> bool {{")
        lines += ["      " + s for s in _comparator(group, vals)]
        lines.append(f"{ind}}};")
        src, index = "i", "ia_[j0]"
    else:
        # one key of at most 32 bits: (order-preserving key << 32 | index) as one integer, so
        # the comparator is a plain comparison and ties fall to the index (stable)
        lines += ["      " + s for s in packed] + ["      ib_[j0] = ia_[j0];", "    }"]
        lines.append(
            f"{ind}auto lt = [](int64_t a, int64_t b) -> bool "
            "{ return (uint64_t)a < (uint64_t)b; };"
        )
        src, index = "ib_[i]", "(ia_[j0] & 0xFFFFFFFFLL)"
    if group["mode"] == "topk" and kk <= SELECT_MAX and kk < n:
        # top_k of a few: keep the best k (in order) while scanning the row once; most elements
        # lose against the k-th best at once
        lines += [
            f"{ind}int64_t cnt = 0;",
            f"{ind}for (int64_t i = 0; i < {n}LL; ++i) {{",
            f"      const int64_t x = {src};",
            f"      if (cnt == {kk}LL && !lt(x, ia_[{kk - 1}LL])) continue;",
            f"      int64_t j = cnt < {kk}LL ? cnt++ : {kk - 1}LL;",
            "      while (j > 0 && lt(x, ia_[j - 1])) { ia_[j] = ia_[j - 1]; --j; }",
            "      ia_[j] = x;",
            "    }",
        ]
    else:
        lines += _merge_sort(ind, n)
    out_full = tuple(rv[:dim]) + (jv,) + tuple(rv[dim:])
    off = _ic(flat_offset(out_full, out_shape))
    body = []
    for m, o in enumerate(outs):
        if not o.buf:
            continue
        if group["index"] and m == len(outs) - 1:
            val = f"({compute_type(o.dtype)}){index}"
        else:
            val = f"{vals[m]}[{index}]"
        body.append("      " + _store(o.buf, off, val, o.dtype))
    lines += [f"{ind}for (int64_t j0 = 0; j0 < {kk}LL; ++j0) {{"] + body + ["    }"]
    lines += [f"{ind}free(fx_scratch);", "  }"]
    prog.body += lines


def _merge_sort(ind, n):
    """A stable bottom-up merge sort of the index array ``ia_`` (scratch ``ib_``) by ``lt``."""
    return [
        f"{ind}for (int64_t s = 0; s < {n}LL; s += {RUN}) {{",
        f"      int64_t e = s + {RUN} < {n}LL ? s + {RUN} : {n}LL;",
        "      for (int64_t i = s + 1; i < e; ++i) {",
        "        int64_t x = ia_[i], j = i;",
        "        while (j > s && lt(x, ia_[j - 1])) { ia_[j] = ia_[j - 1]; --j; }",
        "        ia_[j] = x;",
        "      }",
        "    }",
        f"{ind}for (int64_t w = {RUN}; w < {n}LL; w *= 2) {{",
        f"      for (int64_t lo = 0; lo < {n}LL; lo += 2 * w) {{",
        f"        int64_t mid = lo + w < {n}LL ? lo + w : {n}LL;",
        f"        int64_t hi = lo + 2 * w < {n}LL ? lo + 2 * w : {n}LL;",
        "        int64_t p = lo, q = mid, o = lo;",
        "        while (p < mid && q < hi) ib_[o++] = lt(ia_[q], ia_[p]) ? ia_[q++] : ia_[p++];",
        "        while (p < mid) ib_[o++] = ia_[p++];",
        "        while (q < hi) ib_[o++] = ia_[q++];",
        "      }",
        "      int64_t* t_ = ia_; ia_ = ib_; ib_ = t_;",
        "    }",
    ]
