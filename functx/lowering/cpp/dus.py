"""C++ dynamic-update-slice kernels: copy the operand, then write the update at its start."""

from __future__ import annotations

import math

from functx import dtypes
from functx.lowering.cpp.emit import Emitter, _decompose, _store
from functx.lowering.loopir import Const, Op, strides_of, sym
from functx.lowering.schedule import Kernel, KernelCtx


def render(prog, k: Kernel):
    node = k.nodes[0]
    p = node.params
    x, upd, starts = p["operand"], p["update"], p["starts"]
    lines = [f"  // kernel {k.index}: dynamic_update_slice into {x.shape}"]
    lines += prog._copy_into(node.buf, x, k, x.shape, node.dtype)
    n = math.prod(upd.shape)
    if n == 0:
        prog.body += lines
        return
    em = Emitter("    ")
    ctx = KernelCtx(k)
    st = [
        em(
            Op(
                dtypes.int64,
                "clamp",
                (
                    Op(dtypes.int64, "convert", (s.load((), ctx),)),
                    Const(dtypes.int64, 0),
                    Const(dtypes.int64, d - u),
                ),
            )
        )
        for s, d, u in zip(starts, x.shape, upd.shape)
    ]
    uv = [sym(f"u{i}") for i in range(len(upd.shape))]
    em2 = Emitter("    ")
    em2.counter = em.counter + 1000  # distinct temporaries from the start-index block
    val = em2(upd.load(tuple(uv), ctx))
    off = (
        " + ".join(f"({s} + {v}) * {stv}LL" for s, v, stv in zip(st, uv, strides_of(x.shape)))
        or "0"
    )
    lines += ["  {"] + em.lines
    lines += [f"  for (int64_t uflat = 0; uflat < {n}LL; ++uflat) {{"]
    lines += ["    " + s for s in _decompose([str(v) for v in uv], upd.shape, "uflat")]
    lines += em2.lines + ["    " + _store(node.buf, off, val, node.dtype), "  }", "  }"]
    prog.body += lines
