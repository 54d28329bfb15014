"""C++ pointwise kernels: one loop nest over the output, tiled and parallel when large. A local
of the kernel (``Kernel.local_ids``) is the temporary its expression ends in, which the
kernel's later nodes read (``Emitter.syms``); it is stored only if it has a buffer."""

from __future__ import annotations

import math

from functx.lowering.cpp.emit import _PAR, Emitter, _decompose, _store
from functx.lowering.loopir import flat_offset, sym
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
    stores = []
    for node in k.nodes:
        val = em(node.fn(tuple(ivars), ctx))
        if node.id in k.local_ids:  # (a variable the kernel's later nodes read)
            em.syms[local_sym(node).name] = val
        if node.buf is not None:
            stores.append(_store(node.buf, em.offset(flat_offset(ivars, shape)), val, node.dtype))
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
