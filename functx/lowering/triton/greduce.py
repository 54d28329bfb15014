"""Triton generic reductions: a user combine function applied along the reduced axes."""

from __future__ import annotations

import itertools
import math

from functx.lowering.loopir import sym
from functx.lowering.lower import lanewise_exprs
from functx.lowering.schedule import Kernel, KernelCtx
from functx.lowering.triton.emit import Emitter, V, _decompose, _next_pow2


def render(prog, k: Kernel):
    """functx.lax.reduce with a custom combine: ``tl.reduce`` over chunks with the combine
    emitted as a function (XLA's reduce assumes a commutative, associative combine whose
    init value is an identity, so masked lanes hold the init value)."""
    group = k.nodes[0].params["group"]
    ops, inits, outs, axes = group["ops"], group["inits"], group["outs"], group["axes"]
    shape = ops[0].shape
    rows = tuple(d for i, d in enumerate(shape) if i not in axes)
    inner = tuple(shape[i] for i in axes)
    n_rows, n_inner = math.prod(rows), math.prod(inner)
    if n_rows == 0:
        return
    n = len(ops)
    cname = prog._combine_fn(
        k,
        [o.dtype for o in ops],
        [],
        lambda cs, a, b: lanewise_exprs(group["computation"], a + b),
    )
    ib = min(_next_pow2(max(n_inner, 1)), prog.blocks.reduce_inner)
    rb = min(_next_pow2(n_rows), max(1, prog.blocks.elems // ib))
    rv = [sym(f"r{i}") for i in range(len(rows))]
    iv = [sym(f"j{i}") for i in range(len(inner))]
    it_r, it_i = iter(rv), iter(iv)
    full = tuple(next(it_i) if i in axes else next(it_r) for i in range(len(shape)))
    counter = itertools.count()
    tags = {v.name: "r" for v in rv} | {v.name: "j" for v in iv}
    masks = {frozenset("r"): "rmask", frozenset("j"): "jmask", frozenset("rj"): "mask"}
    ctx = KernelCtx(k)
    em0 = Emitter("    ", counter, tags, masks)
    init_v = [em0(i.load((), ctx)) for i in inits]
    body = [
        f"    rflat = {prog._pid()} * {rb} + tl.arange(0, {rb})[:, None]",
        f"    rmask = rflat < {n_rows}",
    ]
    body += ["    " + s for s in _decompose([v.name for v in rv], rows, "rflat")]
    body += em0.lines
    accs = [f"acc{m}" for m in range(n)]
    for a, v in zip(accs, init_v):
        body.append(f"    {a} = tl.broadcast_to({Emitter.tensor(v)}, [{rb}, 1])")
    bufs_read = dict(em0.bufs)

    def chunk(indent, start):
        em = Emitter(indent, counter, tags, masks)
        cur = [em(o.load(full, ctx)) for o in ops]
        lines = [
            f"{indent}jflat = {start} + tl.arange(0, {ib})[None, :]",
            f"{indent}jmask = jflat < {n_inner}",
            f"{indent}mask = rmask & jmask",
        ]
        lines += [indent + s for s in _decompose([v.name for v in iv], inner, "jflat")]
        lines += em.lines
        cs = [f"g{m}_{next(counter)}" for m in range(n)]
        for c, v, iv_ in zip(cs, cur, init_v):
            lines.append(
                f"{indent}{c} = tl.where(mask, {Emitter.tensor(v)}, {Emitter.tensor(iv_)})"
            )
        rs = [c + "r" for c in cs]
        if n == 1:
            lines += [
                f"{indent}{rs[0]} = tl.reduce({cs[0]}, 1, {cname}, keep_dims=True)",
                f"{indent}acc0 = {cname}(acc0, {rs[0]})",
            ]
        else:
            lines += [
                f"{indent}{', '.join(rs)} = tl.reduce(({', '.join(cs)}), 1, {cname}, "
                "keep_dims=True)",
                f"{indent}{', '.join(accs)} = {cname}({', '.join(accs + rs)})",
            ]
        bufs_read.update(em.bufs)
        return lines

    if n_inner > 0:
        if n_inner <= ib:
            body += chunk("    ", "0")
        else:
            body += [f"    for jstart in range(0, {n_inner}, {ib}):"]
            body += chunk("        ", "jstart")
    for a, o in zip(accs, outs):
        if o.buf:
            body.append(
                "    "
                + prog._store(
                    o.buf, "rflat", V(a, frozenset("r"), False, o.dtype), o.dtype, "rmask"
                )
            )
    name = prog._kname(k, "greduce")
    bufs = prog._ordered(bufs_read, [o.buf for o in outs if o.buf])
    prog._define(name, bufs, body, f"reduce (custom combine) over axes {axes} of {shape}")
    prog._launch(name, -(-n_rows // rb), bufs)
