"""Triton pointwise kernels: one flat kernel over the output's elements.

Two things a pointwise kernel may become instead of a kernel of its own:

* nothing, when it copies another buffer's elements in the same order (a reshape or a unit axis
  realised for a matrix product): its buffer names the source (``_same_elements``; the index
  arithmetic is simplified with the loop's bounds first, ``schedule.in_order``);
* a part of one launch: consecutive pointwise kernels that do not read one another's results
  (a training step's parameter updates, one per parameter shape) run as one kernel whose
  programs each compute one block of one of them (``_horizontal``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from functx.lowering.loopir import flat_offset, sym
from functx.lowering.schedule import Kernel, KernelCtx, in_order, local_sym
from functx.lowering.triton.emit import Emitter, _decompose, _next_pow2

# A horizontal launch takes at most this many kernels (its programs pick their part through a
# chain of comparisons).
MAX_PARTS = 16


# --- kernels -------------------------------------------------------------------------------
def render(prog, k: Kernel):
    if k.index in _merged(prog):
        return  # (computed by an earlier kernel's launch: _horizontal)
    src = _same_elements(prog, k)
    if src is not None:  # a copy of another buffer in the same order: that buffer will do
        node = k.nodes[0]
        prog.aliases.add(node.buf)
        prog.host.append(
            f"    {node.buf} = {src}  # kernel {k.index}: {k.shape}, the "
            f"elements of {src} in order (no copy)"
        )
        return
    parts = _horizontal(prog, k)
    if len(parts) > 1:
        _render_parts(prog, parts)
        return
    prog._flat_kernel(
        prog._kname(k, "pointwise"),
        k,
        k.shape,
        _stores(k),
        f"pointwise {k.shape}",
        _local_names(k),
    )


def _stores(k: Kernel):
    return [(nd.buf, nd.dtype, nd.fn) for nd in k.nodes]


def _local_names(k: Kernel):
    return [local_sym(nd).name if nd.id in k.local_ids else None for nd in k.nodes]


# --- copies in order -----------------------------------------------------------------------
def _same_elements(prog, k: Kernel) -> str | None:
    """The buffer a pointwise kernel copies element for element (a reshape or an added unit
    axis realised for a matrix product), when its result is a temporary: the program can
    read that buffer instead. Buffers are written once, by the kernel computing them, so
    the source keeps its values."""
    if len(k.nodes) != 1:
        return None
    node = k.nodes[0]
    if node.fn is None or node.buf is None or any(node is o for o in prog.g.outputs):
        return None
    ivars = tuple(sym(f"i{d}") for d in range(len(k.shape)))
    e = node.fn(ivars, KernelCtx(k))
    if not in_order(e, ivars, k.shape) or np.dtype(e.dtype) != np.dtype(node.dtype):
        return None
    src = next((n for n in prog.g.nodes if n.buf == e.buf), None)
    if src is None or src.size != node.size or np.dtype(src.dtype) != np.dtype(node.dtype):
        return None
    return e.buf


# --- several kernels in one launch -----------------------------------------------------------
def _merged(prog) -> set:
    """The indices of the kernels of ``prog`` that an earlier kernel's launch computes."""
    return prog.__dict__.setdefault("_pointwise_merged", set())


def _reads(k: Kernel) -> set:
    """The buffers kernel ``k``'s expressions read."""
    ctx = KernelCtx(k)
    ivars = tuple(sym(f"i{d}") for d in range(len(k.shape)))
    for nd in k.nodes:
        nd.fn(ivars, ctx)
    return {n.buf for n in ctx.reads}


def _horizontal(prog, k: Kernel) -> list:
    """``k`` and the pointwise kernels right after it that can share its launch: each reads
    nothing the ones before it in the group write (their results are not there yet when the
    launch runs), has elements and is no copy in order; at most ``MAX_PARTS`` of them."""
    parts = [k]
    written = {nd.buf for nd in k.nodes if nd.buf}
    if math.prod(k.shape) == 0:
        return parts
    for k2 in prog.kernels[k.index + 1 :]:
        if k2.index in _merged(prog):
            continue  # (computed by an earlier launch: a product's epilogue, triton/dot.py)
        if (
            len(parts) >= MAX_PARTS
            or k2.kind != "pointwise"
            or math.prod(k2.shape) == 0
            or _same_elements(prog, k2) is not None
            or _reads(k2) & written
        ):
            break
        parts.append(k2)
        written |= {nd.buf for nd in k2.nodes if nd.buf}
    return parts


def _render_parts(prog, parts: list) -> None:
    """One launch computing the pointwise kernels ``parts``: its programs are the concatenated
    grids of the parts, and each program computes one block of its part."""
    first = parts[0]
    counter = itertools.count()
    pid = "tl.program_id(0).to(tl.int64)" if prog.big else "tl.program_id(0)"
    body = [f"    pid = {pid}"]
    bufs: list = []
    start, warps, shapes = 0, 1, []
    for p, k in enumerate(parts):
        n = math.prod(k.shape)
        block = min(_next_pow2(n), prog.blocks.pointwise)
        grid = -(-n // block)
        warps = max(warps, min(prog.blocks.pointwise_warps, block // 128))
        shapes.append(k.shape)
        flat, mask = f"flat{p}", f"mask{p}"
        ivars = [sym(f"i{d}") for d in range(len(k.shape))]
        names = {v.name: f"h{p}_{v.name}" for v in ivars}
        known = {flat_offset(ivars, k.shape): flat} if k.shape else {}
        ind = " " * 8
        em = Emitter(
            ind, counter, {v.name: "f" for v in ivars}, {frozenset("f"): mask}, known, names
        )
        stores = _stores(k)
        em.keep_in_cache = prog._reused_inputs(n, stores)
        ctx = KernelCtx(k)
        values = []
        for (buf, dt, fn), local in zip(stores, _local_names(k)):
            v = em(fn(tuple(ivars), ctx))
            if local is not None:
                em.syms[local] = v
            if buf is not None:
                values.append((buf, dt, v))
        hint = ', eviction_policy="evict_first"' if em.kept else ""
        cond = "if" if p == 0 else "elif"
        body.append(f"    {cond} pid < {start + grid}:  # kernel {k.index}: pointwise {k.shape}")
        body += [
            f"{ind}{flat} = ({pid_minus(start)}) * {block} + tl.arange(0, {block})",
            f"{ind}{mask} = {flat} < {n}",
        ]
        body += [ind + s for s in _decompose([names[v.name] for v in ivars], k.shape, flat)]
        body += em.lines
        body += [ind + prog._store(buf, flat, v, dt, mask, hint) for buf, dt, v in values]
        bufs = prog._ordered(bufs, em.bufs, [b for b, _, _ in values])
        start += grid
    name = prog._kname(first, "pointwise")
    prog._define(name, bufs, body, f"pointwise, {len(parts)} kernels in one launch: {shapes}")
    prog._launch(name, start, bufs, max(1, warps))
    _merged(prog).update(k.index for k in parts[1:])


def pid_minus(start: int) -> str:
    return "pid" if start == 0 else f"pid - {start}"
