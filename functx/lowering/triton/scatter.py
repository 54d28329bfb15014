"""Triton scatter kernels: copy the operand, then apply the updates (atomics where they add)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from functx import dtypes
from functx.lowering.intexpr import Int
from functx.lowering.loopir import Op, strides_of, sym
from functx.lowering.schedule import Kernel, KernelCtx
from functx.lowering.triton.emit import _HALF, Emitter, V, _decompose, _is_float, _next_pow2

_ATOMIC_ADD = (
    dtypes.float32,
    dtypes.float64,
    dtypes.int32,
    dtypes.int64,
    dtypes.uint32,
    dtypes.uint64,
)


def render(prog, k: Kernel):
    """Deterministic scatters: the operand is copied, then one program per block of the
    update window walks the updates in order (what the C++ backend does), so duplicate
    indices combine (or, for plain scatter, the last one wins) exactly as on the CPU."""
    node = k.nodes[0]
    p = node.params
    x, ind, upd = p["operand"], p["indices"], p["updates"]
    axes, mode, op = p["axes"], p["mode"], p["op"]
    prog._copy(k, x, node.buf, node.dtype, f"{op} into {x.shape}")
    nb = len(ind.shape) - 1
    bshape = ind.shape[:-1]
    rest_axes = [i for i in range(len(x.shape)) if i not in axes]
    rshape = tuple(x.shape[i] for i in rest_axes)
    n_b, n_r = math.prod(bshape), math.prod(rshape)
    if n_b == 0 or n_r == 0 or x.size == 0:
        return
    if op == "scatter_add" and prog.blocks.atomic_scatter_add and np.dtype(x.dtype) in _ATOMIC_ADD:
        return _scatter_add_atomic(
            prog, k, node, x, ind, upd, axes, mode, bshape, rshape, rest_axes
        )
    qb = min(_next_pow2(n_r), prog.blocks.pointwise)
    bv = [sym(f"b{i}") for i in range(nb)]
    qv = [sym(f"q{i}") for i in range(len(rshape))]
    tags = {v.name: "b" for v in bv} | {v.name: "q" for v in qv}
    masks = {frozenset("b"): None, frozenset("q"): "qmask", frozenset("bq"): "qmask"}
    em = Emitter("        ", itertools.count(), tags, masks)
    u, conds, off = _scatter_target(k, em, x, ind, upd, axes, mode, bv, qv, rest_axes)
    # (a scalar condition selects the block mask: the interpreter mishandles bool & bool
    # of a scalar and a block)
    m = f"tl.where({' & '.join(f'({c})' for c in conds)}, qmask, False)" if conds else "qmask"
    cur = f"tl.load({node.buf} + off, mask={m}, other=0)"
    if np.dtype(x.dtype) in _HALF:
        cur = f"{cur}.to(tl.float32)"
    uu = Emitter.tensor(u)
    fl = _is_float(x.dtype)
    new = {
        "scatter": uu,
        "scatter_add": f"cur + {uu}",
        "scatter_mul": f"cur * {uu}",
        "scatter_min": f"_fx_fmin(cur, {uu})" if fl else f"tl.minimum(cur, {uu})",
        "scatter_max": f"_fx_fmax(cur, {uu})" if fl else f"tl.maximum(cur, {uu})",
    }[op]
    if np.dtype(x.dtype) == dtypes.bool_ and op in ("scatter_add", "scatter_max"):
        new = f"cur | {uu}"
    elif np.dtype(x.dtype) == dtypes.bool_ and op in ("scatter_mul", "scatter_min"):
        new = f"cur & {uu}"
    body = [
        f"    qflat = {prog._pid()} * {qb} + tl.arange(0, {qb})",
        f"    qmask = qflat < {n_r}",
    ]
    body += ["    " + s for s in _decompose([v.name for v in qv], rshape, "qflat")]
    body += [f"    for bflat in range({n_b}):"]
    body += ["        " + s for s in _decompose([v.name for v in bv], bshape, "bflat")]
    body += em.lines
    body += [f"        off = {off} + qflat * 0"]
    if op != "scatter":
        body.append(f"        cur = {cur}")
    body.append(
        "        "
        + prog._store(node.buf, "off", V(new, frozenset("q"), False, x.dtype), x.dtype, m)
    )
    name = prog._kname(k, "scatter")
    bufs = prog._ordered(em.bufs, [node.buf])
    prog._define(name, bufs, body, f"{op} of {upd.shape} into {x.shape} (updates in order)")
    prog._launch(name, -(-n_r // qb), bufs)


def _scatter_target(k, em, x, ind, upd, axes, mode, bv, qv, rest_axes):
    """The update value, the in-bounds conditions (mode "fill"/"drop") and the flat offset
    into ``x`` of a scatter's element (batch ``bv``, window ``qv``)."""
    ctx = KernelCtx(k)
    idx_vals = [
        em(Op(dtypes.int64, "convert", (ind.load(tuple(bv) + (Int(c),), ctx),)))
        for c in range(len(axes))
    ]
    u = em(upd.load(tuple(bv) + tuple(qv), ctx))
    conds, full = [], {}
    for a, iv_ in zip(axes, idx_vals):
        d = x.shape[a]
        if mode == "clip":
            full[a] = f"tl.minimum(tl.maximum({iv_.code}, 0), {d - 1})"
        else:
            conds.append(f"({iv_.code} >= 0) & ({iv_.code} < {d})")
            full[a] = iv_.code
    for a, v in zip(rest_axes, qv):
        full[a] = v.name
    off = " + ".join(
        f"({full[a]}) * {st}" for a, st in zip(range(len(x.shape)), strides_of(x.shape))
    )
    return u, conds, off


def _scatter_add_atomic(prog, k, node, x, ind, upd, axes, mode, bshape, rshape, rest_axes):
    """scatter_add with atomics: blocks of (updates x window) in parallel (the order in
    which duplicates are summed is not fixed, as with JAX on a GPU)."""
    n_b, n_r = math.prod(bshape), math.prod(rshape)
    qb = min(_next_pow2(n_r), 128)
    bb = min(_next_pow2(n_b), max(1, prog.blocks.elems // qb))
    bv = [sym(f"b{i}") for i in range(len(bshape))]
    qv = [sym(f"q{i}") for i in range(len(rshape))]
    tags = {v.name: "b" for v in bv} | {v.name: "q" for v in qv}
    masks = {frozenset("b"): "bmask", frozenset("q"): "qmask", frozenset("bq"): "mask"}
    em = Emitter("    ", itertools.count(), tags, masks)
    u, conds, off = _scatter_target(k, em, x, ind, upd, axes, mode, bv, qv, rest_axes)
    body = [
        f"    bflat = {prog._pid()} * {bb} + tl.arange(0, {bb})[:, None]",
        f"    bmask = bflat < {n_b}",
        f"    qflat = tl.program_id(1) * {qb} + tl.arange(0, {qb})[None, :]",
        f"    qmask = qflat < {n_r}",
        "    mask = bmask & qmask",
    ]
    body += ["    " + st for st in _decompose([v.name for v in bv], bshape, "bflat")]
    body += ["    " + st for st in _decompose([v.name for v in qv], rshape, "qflat")]
    body += em.lines
    m = "mask"
    if conds:
        body.append(f"    ok = tl.where({' & '.join(f'({c})' for c in conds)}, mask, False)")
        m = "ok"
    body.append(
        f"    tl.atomic_add({node.buf} + ({off}) + bflat * 0 + qflat * 0, "
        f"{Emitter.tensor(u)}, mask={m})"
    )
    name = prog._kname(k, "scatter_add")
    bufs = prog._ordered(em.bufs, [node.buf])
    prog._define(name, bufs, body, f"scatter_add of {upd.shape} into {x.shape} (atomics)")
    prog._launch(name, f"{-(-n_b // bb)}, {-(-n_r // qb)}", bufs)
