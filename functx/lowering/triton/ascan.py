"""Triton associative-scan kernels: ``tl.associative_scan`` over blocks with a carried prefix."""

from __future__ import annotations

import itertools
import math

from functx.lowering.loopir import flat_offset, sym
from functx.lowering.lower import lanewise_exprs
from functx.lowering.schedule import Kernel, KernelCtx
from functx.lowering.triton.blocks import scan_plan
from functx.lowering.triton.emit import Emitter, V, _decompose


# --- scans ---------------------------------------------------------------------------------
def _pick_last(prog, n: int) -> str:
    """A helper reducing (v_1..v_n, index) tuples to the entry with the largest index."""
    name = f"_fx_last{n}"
    if name not in prog.helpers:
        prog.helpers.add(name)
        a = [f"a{i}" for i in range(n)]
        b = [f"b{i}" for i in range(n)]
        rets = [f"tl.where(t, {y}, {x})" for x, y in zip(a, b)] + ["tl.where(t, ib, ia)"]
        prog.defs.append(
            "\n".join(
                [
                    "@triton.jit",
                    f"def {name}({', '.join(a + ['ia'] + b + ['ib'])}):",
                    "    t = ib > ia",
                    f"    return {', '.join(rets)}",
                ]
            )
            + "\n"
        )
    return name


def _scan_kernel(prog, k: Kernel, xs, consts, outs, axis, reverse, combine, what: str):
    """A scan of ``xs`` along ``axis`` with ``combine(const_syms, acc_syms, cur_syms) -> [E]``
    (lane-wise), chunked along the axis with a carried prefix."""
    shape = xs[0].shape
    n = shape[axis]
    pre, post = shape[:axis], shape[axis + 1 :]
    n_pre, n_post = math.prod(pre), math.prod(post)
    n_lanes = n_pre * n_post
    if n == 0 or n_lanes == 0:
        return
    lb, sb, warps = scan_plan(n, n_lanes, n_post > 1, prog.blocks)
    counter = itertools.count()
    pv = [sym(f"p{i}") for i in range(len(pre))]
    qv = [sym(f"q{i}") for i in range(len(post))]
    j = sym("j")
    full = tuple(pv) + (j,) + tuple(qv)
    lanes_e = tuple(pv) + tuple(qv)
    tags = {v.name: "l" for v in pv + qv} | {"j": "s"}
    masks = {frozenset("l"): "lmask", frozenset("s"): "smask", frozenset("ls"): "mask"}
    nx, nc = len(xs), len(consts)
    m_all = nx + nc

    cname = prog._combine_fn(k, [x.dtype for x in xs], [c.dtype for c in consts], combine)
    last = _pick_last(prog, m_all)

    body = [
        f"    lflat = {prog._pid()} * {lb} + tl.arange(0, {lb})[:, None]",
        f"    lmask = lflat < {n_lanes}",
    ]
    if pre:
        body.append(f"    pflat = lflat // {n_post}")
        body += ["    " + s for s in _decompose([v.name for v in pv], pre, "pflat")]
    if post:
        body.append(f"    qflat = lflat % {n_post}")
        body += ["    " + s for s in _decompose([v.name for v in qv], post, "qflat")]
    all_bufs: dict = {}
    ctx = KernelCtx(k)
    em0 = Emitter("    ", counter, tags, masks)
    cvals = [em0(c.load(lanes_e if c.shape else (), ctx)) for c in consts]
    body += em0.lines
    all_bufs.update(em0.bufs)
    cbs = []
    for i, v in enumerate(cvals):
        body.append(f"    cb{i} = tl.broadcast_to({Emitter.tensor(v)}, [{lb}, {sb}])")
        cbs.append(f"cb{i}")

    def chunk(indent, start, first):
        lines = [
            f"{indent}s = {start} + tl.arange(0, {sb})[None, :]",
            f"{indent}smask = s < {n}",
            f"{indent}mask = lmask & smask",
            f"{indent}j = {n - 1} - s" if reverse else f"{indent}j = s",
        ]
        em = Emitter(indent, counter, tags, masks)
        cur = [em(x.load(full, ctx)) for x in xs]
        lines += em.flush()
        all_bufs.update(em.bufs)
        ys = [f"y{i}" for i in range(m_all)]
        xb = [f"tl.broadcast_to({Emitter.tensor(v)}, [{lb}, {sb}])" for v in cur] + cbs
        if m_all == 1:
            lines.append(f"{indent}y0 = tl.associative_scan({xb[0]}, 1, {cname})")
        else:
            lines.append(
                f"{indent}{', '.join(ys)} = tl.associative_scan(({', '.join(xb)}), 1, {cname})"
            )
        carries = [f"carry{i}" for i in range(m_all)]
        if not first:
            # prefix of the earlier chunks: combine(carry, y) (the carry is the left operand)
            lhs = ", ".join(ys) if m_all > 1 else "y0"
            lines.append(f"{indent}{lhs} = {cname}({', '.join(carries)}, {', '.join(ys)})")
        off = em.index(flat_offset(full, shape))
        for i, o in enumerate(outs):
            if o.buf:
                lines.append(
                    indent
                    + prog._store(
                        o.buf,
                        off.code,
                        V(ys[i], frozenset("ls"), False, o.dtype),
                        o.dtype,
                        "mask",
                    )
                )
        if k.epilogue:  # pointwise nodes at these positions, reading ys (schedule.py)
            # (the chunk's emitter: a load of the scan's own operands is not repeated)
            em.acc.update(
                {(o.id, 0): V(ys[i], frozenset("ls"), False, o.dtype) for i, o in enumerate(outs)}
            )
            ectx = KernelCtx(k, full)
            for e in k.epilogue:
                v = em(e.fn(full, ectx))
                lines += em.flush()
                lines.append(indent + prog._store(e.buf, off.code, v, e.dtype, "mask"))
            all_bufs.update(em.bufs)
        if n > sb:
            lines.append(
                f"{indent}{', '.join(carries)}, _ = tl.reduce(({', '.join(ys)}, "
                f"tl.where(mask, s, -1)), 1, {last}, keep_dims=True)"
            )
        return lines

    body += chunk("    ", "0", True)
    if n > sb:
        body.append(f"    for sstart in range({sb}, {n}, {sb}):")
        body += chunk("        ", "sstart", False)
    name = prog._kname(k, "scan")
    stored = [o.buf for o in outs if o.buf] + [e.buf for e in k.epilogue]
    bufs = prog._ordered(all_bufs, stored)
    prog._define(
        name,
        bufs,
        body,
        f"{what} along axis {axis} of {shape}{' (reverse)' if reverse else ''}; {lb} lanes x {sb}",
    )
    prog._launch(name, -(-n_lanes // lb), bufs, warps)


def render(prog, k: Kernel):
    group = k.nodes[0].params["group"]

    def combine(cs, accs, curs):
        return lanewise_exprs(group["combine"], list(cs) + list(accs) + list(curs))

    _scan_kernel(
        prog,
        k,
        group["xs"],
        group["consts"],
        group["outs"],
        group["axis"],
        group["reverse"],
        combine,
        "associative_scan",
    )
