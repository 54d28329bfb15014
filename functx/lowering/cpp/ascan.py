"""C++ associative-scan kernels: a sequential combine along the scanned axis of each lane."""

from __future__ import annotations

import math

import numpy as np

from functx import dtypes
from functx.errors import UnsupportedError
from functx.lowering.cpp.emit import _PAR, Emitter, _decompose, _store, compute_type, storage_type
from functx.lowering.loopir import Op, Sym, flat_offset, sym
from functx.lowering.lower import lanewise_exprs
from functx.lowering.schedule import Kernel, KernelCtx

# scan outputs of at least this many bytes are written with streaming stores (prelude fx_stream)
_STREAM_MIN = 1 << 24


def render(prog, k: Kernel):
    """A lane-wise associative scan run sequentially along the axis. Lanes before the axis are
    distributed over threads; lanes after it (contiguous in memory) form an inner vector loop
    over blocks, with one accumulator array per element leaf."""
    group = k.nodes[0].params["group"]
    xs, consts, outs = group["xs"], group["consts"], group["outs"]
    axis, reverse = group["axis"], group["reverse"]
    for x in xs:
        if np.dtype(x.dtype) in dtypes.NARROW_FLOATS:
            # (XLA rounds each partial result to the narrow type in its own order)
            raise UnsupportedError(
                f"jit: an associative scan (cumsum, cumprod, ...) of {np.dtype(x.dtype)} is not "
                "supported by the C++ backend (convert to float32 first, or run it outside jit)"
            )
    shape = xs[0].shape
    n = shape[axis]
    pre, post = shape[:axis], shape[axis + 1 :]
    n_pre, n_post = math.prod(pre), math.prod(post)
    if n == 0 or n_pre * n_post == 0:
        return
    block = min(n_post, 256)
    n_blocks = -(-n_post // block)
    pv = [sym(f"p{i}") for i in range(len(pre))]
    qv = [sym(f"q{i}") for i in range(len(post))]
    j = sym("j")
    full = tuple(pv) + (j,) + tuple(qv)
    lanes_e = tuple(pv) + tuple(qv)
    ctx = KernelCtx(k)
    em = Emitter("          ")
    cur = [em(x.load(full, ctx)) for x in xs]
    cvals = [c.load(lanes_e if c.shape else (), ctx) for c in consts]
    accs = [Sym(x.dtype, f"acc{m}[ii]") for m, x in enumerate(xs)]
    curs = [Sym(x.dtype, c) for x, c in zip(xs, cur)]
    raw = lanewise_exprs(group["combine"], cvals + accs + curs)
    # a float32 running sum (cumsum) carries its prefix in double: in float32 each addition
    # rounds, and the prefix stops growing at 2^24 ulp of the first element
    wide = [
        np.dtype(x.dtype) == dtypes.float32
        and isinstance(e, Op)
        and e.name == "add"
        and {id(a) for a in e.args} == {id(accs[m]), id(curs[m])}
        for m, (x, e) in enumerate(zip(xs, raw))
    ]
    new = [None if w else em(e) for w, e in zip(wide, raw)]
    off = em.offset(flat_offset(full, shape))
    first = f"{n - 1}LL" if reverse else "0"
    loop = (
        f"for (int64_t j = {n - 1}LL; j >= 0; --j)"
        if reverse
        else f"for (int64_t j = 0; j < {n}LL; ++j)"
    )
    lines = [
        f"  // kernel {k.index}: associative_scan along axis {axis} of {shape}",
        f"  #pragma omp parallel for schedule(static) if({n_pre * n_post}LL * {n}LL >= {_PAR})",
        f"  for (int64_t task = 0; task < {n_pre * n_blocks}LL; ++task) {{",
        f"    const int64_t pflat = task / {n_blocks}LL;",
        f"    const int64_t q0_ = (task % {n_blocks}LL) * {block}LL;",
        f"    const int64_t len = fx_imin({block}LL, {n_post}LL - q0_);",
    ]
    lines += ["    " + s for s in _decompose([str(v) for v in pv], pre, "pflat")]
    lines += [
        f"    {'double' if w else compute_type(x.dtype)} acc{m}[{block}];"
        for m, (x, w) in enumerate(zip(xs, wide))
    ]
    # Large outputs (rows of whole cache lines) go through a staging row and streaming
    # stores; each stored node's name for this position: its buffer, or its staging row.
    stored = [o for o in outs if o.buf] + [e for e in k.epilogue if e.buf]
    streamed = {
        o.id
        for o in stored
        if o.size * np.dtype(o.dtype).itemsize >= _STREAM_MIN
        and n_post * np.dtype(o.dtype).itemsize % 64 == 0
    }
    lines += [
        f"    {storage_type(o.dtype)} st{o.id}[{block}] __attribute__((aligned(64)));"
        for o in stored
        if o.id in streamed
    ]

    def store(o, val):
        if o.id in streamed:
            return _store(f"st{o.id}", "ii", val, o.dtype)
        return _store(o.buf, off, val, o.dtype)

    lines += [
        f"    {loop} {{",
        "      #pragma omp simd",
        "      for (int64_t ii = 0; ii < len; ++ii) {",
        "        const int64_t qflat = q0_ + ii;",
    ]
    lines += ["        " + s for s in _decompose([str(v) for v in qv], post, "qflat")]
    lines += em.lines
    lines += [
        f"        {'double' if w else compute_type(x.dtype)} nv{m};"
        for m, (x, w) in enumerate(zip(xs, wide))
    ]
    lines += [f"        if (j == {first}) {{"]
    lines += [f"          nv{m} = {c};" for m, c in enumerate(cur)]
    lines += ["        } else {"]
    lines += [
        f"          nv{m} = acc{m}[ii] + (double){c};" if w else f"          nv{m} = {v};"
        for m, (w, c, v) in enumerate(zip(wide, cur, new))
    ]
    lines += ["        }"]
    lines += [f"        acc{m}[ii] = nv{m};" for m in range(len(xs))]
    # (the rounded value is the scan's output, and what the epilogue reads)
    lines += [f"        const float nv{m}f = (float)nv{m};" for m, w in enumerate(wide) if w]
    nv = [f"nv{m}f" if w else f"nv{m}" for m, w in enumerate(wide)]
    lines += ["        " + store(o, nv[m]) for m, o in enumerate(outs) if o.buf]
    if k.epilogue:  # pointwise nodes at this position, reading the new values (schedule.py)
        ep = Emitter("        ", prefix="e")
        ep.acc_names.update({(o.id, 0): nv[m] for m, o in enumerate(outs)})
        ectx = KernelCtx(k, full)
        vals = [ep(e.fn(full, ectx)) for e in k.epilogue]
        lines += ep.lines
        lines += ["        " + store(e, v) for e, v in zip(k.epilogue, vals) if e.buf]
    lines.append("      }")
    if streamed:
        row = em.offset(flat_offset(tuple(pv) + (j,) + (0,) * len(qv), shape))
        lines += [
            f"      fx_stream({o.buf} + {row} + q0_, st{o.id}, len * sizeof(*{o.buf}));"
            for o in stored
            if o.id in streamed
        ]
    lines.append("    }")
    if streamed:
        lines.append("    fx_stream_fence();")
    lines.append("  }")
    prog.body += lines
