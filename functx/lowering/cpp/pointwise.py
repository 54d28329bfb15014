"""C++ pointwise kernels: one loop nest over the output, tiled and parallel when large. A local
of the kernel (``Kernel.local_ids``) is the temporary its expression ends in, which the
kernel's later nodes read (``Emitter.syms``); it is stored only if it has a buffer."""

from __future__ import annotations

import math

import sympy

from functx.lowering.cpp.emit import _PAR, Emitter, _decompose, _store
from functx.lowering.loopir import E, Load, flat_offset, subexprs, sym
from functx.lowering.schedule import Kernel, KernelCtx, local_sym

_PAR_ITEMS = 64  # a pointwise loop is split into at least this many parallel items...


_TILE = 4096  # ...of at least this many elements


# --- kernels -------------------------------------------------------------------------------
def render(prog, k: Kernel):
    shape = k.shape
    n = math.prod(shape)
    if n == 0:
        return
    nd = len(shape)
    ivars = [sym(f"i{d}") for d in range(nd)]
    lines = [f"  // kernel {k.index}: pointwise {shape}"]
    if nd == 0:
        em = Emitter("    ")
        ctx = KernelCtx(k)
        stores = []
        for node in k.nodes:
            val = em(node.fn((), ctx))
            if node.id in k.local_ids:
                em.syms[local_sym(node).name] = val
            if node.buf is not None:
                stores.append(_store(node.buf, "0", val, node.dtype))
        lines += ["  {"] + em.lines + ["    " + s for s in stores] + ["  }"]
        prog.body += lines
        return
    outer = shape[:-1]
    n_outer = math.prod(outer)
    last = shape[-1]
    hoist = Emitter("    ", prefix="h")
    em = Emitter("      ").hoisting(hoist, [ivars[-1]])
    ctx = KernelCtx(k)
    stores, vals = [], []
    for node in k.nodes:
        e = node.fn(tuple(ivars), ctx)
        vals.append(e)
        val = em(e)
        if node.id in k.local_ids:  # (a variable the kernel's later nodes read)
            em.syms[local_sym(node).name] = val
        if node.buf is not None:
            stores.append(_store(node.buf, em.offset(flat_offset(ivars, shape)), val, node.dtype))
    cut = _transposed_axis(k, shape, ivars, vals)
    if cut is not None:
        lines += _tiled(k, shape, ivars, cut, hoist, em, stores)
        prog.body += lines
        return
    # too few outer rows to share among threads: split the last axis into tiles too
    tiles = 1
    if n_outer < _PAR_ITEMS and last >= 2 * _TILE:
        tiles = min(-(-_PAR_ITEMS // n_outer), last // _TILE)
    tile = -(-last // tiles)
    tile = -(-tile // 64) * 64
    tiles = -(-last // tile)
    par = f"#pragma omp parallel for schedule(static) if({n_outer}LL * {last}LL >= {_PAR})"
    lines.append(f"  {par}")
    lines.append(f"  for (int64_t o = 0; o < {n_outer * tiles}LL; ++o) {{")
    iv = ivars[-1]
    if tiles == 1:
        lines += ["    " + s for s in _decompose([str(v) for v in ivars[:-1]], outer, "o")]
        lo, hi = "0", f"{last}LL"
    else:
        lines.append(f"    const int64_t ob = o / {tiles}LL;")
        lines += ["    " + s for s in _decompose([str(v) for v in ivars[:-1]], outer, "ob")]
        lines.append(f"    const int64_t lo = (o % {tiles}LL) * {tile}LL;")
        lines.append(f"    const int64_t hi = fx_imin(lo + {tile}LL, {last}LL);")
        lo, hi = "lo", "hi"
    lines += hoist.lines
    lines.append("    #pragma omp simd")
    lines.append(f"    for (int64_t {iv} = {lo}; {iv} < {hi}; ++{iv}) {{")
    lines += em.lines + ["      " + s for s in stores]
    lines += ["    }", "  }"]
    prog.body += lines


_TILE_LAST = 16  # a transposing loop nest takes tiles of this many elements of the last axis...
_TILE_AXIS = 64  # ...by this many along the axis its loads walk contiguously
_TILE_MIN = 1 << 14  # (and only when it has at least this many elements)


def _transposed_axis(k: Kernel, shape, ivars, vals):
    """The axis ``d`` (not the last) along which a load of the kernel is contiguous while it
    strides along the last axis (a transpose copy): the loop nest is then tiled over ``d`` and
    the last axis (``_tiled``), so that the lines it reads are used whole before they leave
    the cache. None when no load is like that."""
    nd = len(shape)
    if nd < 2 or math.prod(shape) < _TILE_MIN or shape[-1] < _TILE_LAST:
        return None
    seen: set = set()
    for e in vals:
        for x in subexprs(e):
            if not isinstance(x, Load) or id(x) in seen or isinstance(x.offset, E):
                continue
            seen.add(id(x))
            try:
                off = sympy.sympify(x.offset)
                coef = [off.diff(v) for v in ivars]
            except (TypeError, ValueError, AttributeError):
                continue
            if not all(c.is_Integer for c in coef) or abs(int(coef[-1])) in (0, 1):
                continue
            for d in range(nd - 1):
                if int(coef[d]) == 1 and shape[d] >= _TILE_LAST:
                    return d
    return None


def _tiled(k: Kernel, shape, ivars, d, hoist, em, stores):
    """The loop nest of a transposing pointwise kernel: tiles of _TILE_AXIS along axis ``d`` by
    _TILE_LAST along the last axis, in parallel; within a tile the loop over ``d`` outside and
    the vectorised loop over the last axis inside (the values and their order are the plain
    loop's: each element is computed once, by the same expression)."""
    nd = len(shape)
    other = [a for a in range(nd - 1) if a != d]
    n_other = math.prod(shape[a] for a in other)
    td = -(-shape[d] // _TILE_AXIS)
    tl = -(-shape[-1] // _TILE_LAST)
    n = math.prod(shape)
    vd, vl = ivars[d], ivars[-1]
    lines = [
        f"  // (tiled {_TILE_AXIS}x{_TILE_LAST} over axes {d} and {nd - 1}: a transpose)",
        f"  #pragma omp parallel for schedule(static) if({n}LL >= {_PAR})",
        f"  for (int64_t o = 0; o < {n_other * td * tl}LL; ++o) {{",
        f"    const int64_t t = o % {td * tl}LL;",
        f"    const int64_t d0 = (t / {tl}LL) * {_TILE_AXIS}LL;",
        f"    const int64_t d1 = fx_imin(d0 + {_TILE_AXIS}LL, {shape[d]}LL);",
        f"    const int64_t l0 = (t % {tl}LL) * {_TILE_LAST}LL;",
        f"    const int64_t l1 = fx_imin(l0 + {_TILE_LAST}LL, {shape[-1]}LL);",
    ]
    if other:
        lines.append(f"    const int64_t ot = o / {td * tl}LL;")
        lines += [
            "    " + s
            for s in _decompose([str(ivars[a]) for a in other], [shape[a] for a in other], "ot")
        ]
    lines.append(f"    for (int64_t {vd} = d0; {vd} < d1; ++{vd}) {{")
    lines += ["  " + ln for ln in hoist.lines]
    lines.append("      #pragma omp simd")
    lines.append(f"      for (int64_t {vl} = l0; {vl} < l1; ++{vl}) {{")
    lines += ["  " + ln for ln in em.lines] + ["        " + s for s in stores]
    lines += ["      }", "    }", "  }"]
    return lines
