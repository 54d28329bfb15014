"""Triton dynamic-update-slice kernels: copy the operand, then write the update at its start."""

from __future__ import annotations

import itertools

from functx import dtypes
from functx.lowering.loopir import Const, Idx, Op, flat_offset, strides_of, sym
from functx.lowering.schedule import Kernel, KernelCtx
from functx.lowering.triton.emit import Emitter, _decompose, _next_pow2


def render(prog, k: Kernel):
    node = k.nodes[0]
    p = node.params
    x, upd, starts = p["operand"], p["update"], p["starts"]
    prog._copy(k, x, node.buf, node.dtype, f"dynamic_update_slice into {x.shape}")
    if upd.size == 0:
        return

    def fn(idx, ctx):
        off = Const(dtypes.int64, 0)
        for s, d, u, v, st in zip(starts, x.shape, upd.shape, idx, strides_of(x.shape)):
            c = Op(
                dtypes.int64,
                "clamp",
                (
                    Op(dtypes.int64, "convert", (s.load((), ctx),)),
                    Const(dtypes.int64, 0),
                    Const(dtypes.int64, d - u),
                ),
            )
            pos = Op(dtypes.int64, "add", (c, Idx(dtypes.int64, v)))
            off = Op(
                dtypes.int64,
                "add",
                (off, Op(dtypes.int64, "mul", (pos, Const(dtypes.int64, st)))),
            )
        return off

    # a flat kernel over the update: its "value" is the destination offset; the store is
    # written by hand below
    n = upd.size
    block = min(_next_pow2(n), prog.blocks.pointwise)
    uvars = [sym(f"i{d}") for d in range(len(upd.shape))]
    em = Emitter(
        "    ",
        itertools.count(),
        {v.name: "f" for v in uvars},
        {frozenset("f"): "mask"},
        {flat_offset(uvars, upd.shape): "flat"} if upd.shape else {},
    )
    ctx = KernelCtx(k)
    off = em(fn(tuple(uvars), ctx))
    val = em(upd.load(tuple(uvars), ctx))
    body = [
        f"    flat = {prog._pid()} * {block} + tl.arange(0, {block})",
        f"    mask = flat < {n}",
    ]
    body += ["    " + s for s in _decompose([v.name for v in uvars], upd.shape, "flat")]
    body += em.lines
    o = off.code if "f" in off.deps else f"{off.code} + flat * 0"
    body.append("    " + prog._store(node.buf, o, val, node.dtype, "mask"))
    name = prog._kname(k, "dus")
    bufs = prog._ordered(em.bufs, [node.buf])
    prog._define(name, bufs, body, f"dynamic_update_slice of {upd.shape} into {x.shape}")
    prog._launch(name, -(-n // block), bufs)
