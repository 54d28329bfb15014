"""C++ generic reductions: a user combine function applied along the reduced axes."""

from __future__ import annotations

import math

from functx.lowering.cpp.emit import _PAR, Emitter, _decompose, _ic, _store, compute_type
from functx.lowering.cpp.reduce import _inner_loops
from functx.lowering.loopir import Sym, flat_offset, sym
from functx.lowering.lower import lanewise_exprs
from functx.lowering.schedule import Kernel, KernelCtx


def render(prog, k: Kernel):
    """functx.lax.reduce with a custom combine: rows in parallel, the combine inlined."""
    group = k.nodes[0].params["group"]
    ops, inits, outs, axes = group["ops"], group["inits"], group["outs"], group["axes"]
    shape = ops[0].shape
    rows = tuple(d for i, d in enumerate(shape) if i not in axes)
    inner = tuple(shape[i] for i in axes)
    n_rows = math.prod(rows)
    if n_rows == 0:
        return
    rv = [sym(f"r{i}") for i in range(len(rows))]
    iv = [sym(f"j{i}") for i in range(len(inner))]
    it_r, it_i = iter(rv), iter(iv)
    full = tuple(next(it_i) if i in axes else next(it_r) for i in range(len(shape)))
    ctx = KernelCtx(k)
    em0 = Emitter("    ")
    init_vals = [em0(i.load((), ctx)) for i in inits]
    em = Emitter("      " + "  " * max(len(inner) - 1, 0))
    cur = [em(o.load(full, ctx)) for o in ops]
    accs = [Sym(o.dtype, f"acc{m}") for m, o in enumerate(ops)]
    curs = [Sym(o.dtype, c) for o, c in zip(ops, cur)]
    new = [em(e) for e in lanewise_exprs(group["computation"], accs + curs)]
    body = em.lines + [
        f"{em.indent}{compute_type(o.dtype)} nv{m} = {v};" for m, (o, v) in enumerate(zip(ops, new))
    ]
    body += [f"{em.indent}acc{m} = nv{m};" for m in range(len(ops))]
    lines = [
        f"  // kernel {k.index}: reduce (custom combine) over axes {axes} of {shape}",
        f"  #pragma omp parallel for schedule(static) if({n_rows}LL * "
        f"{max(math.prod(inner), 1)}LL >= {_PAR} && {n_rows}LL > 1)",
        f"  for (int64_t row = 0; row < {n_rows}LL; ++row) {{",
    ]
    lines += ["    " + s for s in _decompose([str(v) for v in rv], rows, "row")]
    lines += em0.lines
    lines += [
        f"    {compute_type(o.dtype)} acc{m} = {v};" for m, (o, v) in enumerate(zip(ops, init_vals))
    ]
    lines += _inner_loops(prog, iv, inner, body)
    off = _ic(flat_offset(rv, rows)) if rows else "0"
    lines += ["    " + _store(o.buf, off, f"acc{m}", o.dtype) for m, o in enumerate(outs) if o.buf]
    lines.append("  }")
    prog.body += lines
