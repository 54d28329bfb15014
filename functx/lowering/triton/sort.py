"""Triton sort kernels (``sort`` and ``top_k``, ``functx/control/sort.py``) by ranking: one
program per row; each element's output position is the number of elements of its row that come
before it (in the comparator's order, ties by index, so the sort is stable), counted over blocks of
the row; the element is then stored at that position. This takes O(n^2 / lanes) steps per row: it
is exact for every comparator (several keys, JAX's NaN and signed-zero rules, top_k's total order)
and fine for the short rows of selection and quantiles; long rows would want a library sort
(torch.sort between launches), which this backend does not have yet. The operands are read from
their buffers (the lowering asks for them: ``needs_buffer``)."""

from __future__ import annotations

import math

import numpy as np

from functx import dtypes
from functx.errors import UnsupportedError
from functx.lowering.schedule import Kernel
from functx.lowering.triton.emit import _next_pow2

BLOCK = 64  # lanes of a row compared at once, in each direction


def _key(dt, v, mode):
    """(the comparable key expression, its kind) of a loaded value ``v``."""
    dt = np.dtype(dt)
    if dt in dtypes.COMPLEX:
        raise UnsupportedError("jit (Triton): sort of complex values is not supported")
    if dt == dtypes.bool_:
        return f"{v}.to(tl.int32)", "int"
    if dt in dtypes.FLOATS:
        if dt in (dtypes.float16, dtypes.bfloat16):
            v = f"{v}.to(tl.float32)"
        if mode == "topk":
            it, mask = (
                ("tl.int64", "0x7FFFFFFFFFFFFFFF")
                if dt == dtypes.float64
                else ("tl.int32", "0x7FFFFFFF")
            )
            b = f"{v}.to({it}, bitcast=True)"
            return f"tl.where({b} < 0, {b} ^ {mask}, {b})", "int"
        return v, "float"
    return v, "int"


def _before(kind, xj, xi, mode):
    """(``j`` strictly before ``i``, ``j`` tied with ``i``) for one key."""
    if mode == "topk":
        return f"({xj} > {xi})", f"({xj} == {xi})"
    if kind == "float":
        lt = f"(({xj} < {xi}) | (({xi} != {xi}) & ({xj} == {xj})))"
        eq = f"(({xj} == {xi}) | (({xj} != {xj}) & ({xi} != {xi})))"
        return lt, eq
    return f"({xj} < {xi})", f"({xj} == {xi})"


def render(prog, k: Kernel):
    group = k.nodes[0].params["group"]
    ops, outs, dim, kk, mode = (
        group["ops"],
        group["outs"],
        group["dimension"],
        group["k"],
        group["mode"],
    )
    shape = ops[0].shape
    n = shape[dim]
    outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1 :])
    n_rows = outer * inner
    if n_rows == 0 or kk == 0:
        return
    if any(np.dtype(o.dtype) in dtypes.COMPLEX for o in list(ops) + list(outs)):
        raise UnsupportedError("jit (Triton): sort of complex values is not supported")
    nkeys = group["num_keys"]
    b = min(_next_pow2(n), BLOCK)
    body = [
        f"    row = {prog._pid()}",
        f"    base = (row // {inner}) * {n * inner} + row % {inner}",
        f"    obase = (row // {inner}) * {kk * inner} + row % {inner}",
        f"    for s in range(0, {n}, {b}):",
        f"        ii = s + tl.arange(0, {b})",
        f"        im = ii < {n}",
    ]
    for m, o in enumerate(ops):
        body.append(f"        xi{m} = tl.load({o.buf} + base + ii * {inner}, mask=im)")
    body += [
        f"        rank = tl.full([{b}], 0, tl.int32)",
        f"        for t in range(0, {n}, {b}):",
        f"            jj = t + tl.arange(0, {b})",
        f"            jm = jj < {n}",
    ]
    acc = "(jj[None, :] < ii[:, None])"
    terms = []
    for m in range(nkeys):
        o = ops[m]
        body.append(f"            xj{m} = tl.load({o.buf} + base + jj * {inner}, mask=jm)")
        ki, kind = _key(o.dtype, f"xi{m}", mode)
        kj, _ = _key(o.dtype, f"xj{m}", mode)
        body.append(f"            ki{m} = ({ki})[:, None]")
        body.append(f"            kj{m} = ({kj})[None, :]")
        terms.append(_before(kind, f"kj{m}", f"ki{m}", mode))
    for lt, eq in reversed(terms):
        acc = f"({lt} | ({eq} & {acc}))"
    body += [
        f"            before = {acc} & jm[None, :]",
        "            rank += tl.reduce(before.to(tl.int32), 1, _fx_add)",
        f"        keep = im & (rank < {kk})",
        f"        dst = obase + rank * {inner}",
    ]
    for m, o in enumerate(outs):
        if not o.buf:
            continue
        if group["index"] and m == len(outs) - 1:
            val = f"ii.to({_tl_int(o.dtype)})"
        else:
            val = f"xi{m}"
        body.append(f"        tl.store({o.buf} + dst, {val}, mask=keep)")
    name = prog._kname(k, "sort")
    bufs = prog._ordered([o.buf for o in ops], [o.buf for o in outs if o.buf])
    prog._define(name, bufs, body, f"{mode} sort along axis {dim} of {shape} (keep {kk})")
    prog._launch(name, n_rows, bufs)


def _tl_int(dt):
    return {4: "tl.int32", 8: "tl.int64"}[np.dtype(dt).itemsize]
