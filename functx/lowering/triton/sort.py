"""Triton sort kernels (``sort`` and ``top_k``, ``functx/control/sort.py``).

Rows of at least ``TORCH_ROW_MIN`` elements sort in a library step between launches
(``SortStep``): ``torch.sort`` (stable; a radix or merge sort on a GPU) of order-preserving
integer keys, so JAX's order holds whatever torch does with floats: for ``sort``, -0.0 is
made +0.0 and every NaN the positive quiet NaN before the bits are mapped to integers (ties then
keep their input order); for ``top_k``, the bits in the total order (NaN > +inf > ... > +0.0 >
-0.0 > ... > -NaN), sorted descending, stably, so equal elements keep index order. Several keys
sort as successive stable sorts from the last key to the first; every operand is then gathered
(as raw bits) with the permutation. On the H200 a 4096x4096 sort took 61.6 ms in the kernel
below against 0.56 ms in ``torch.sort`` (top_k: 54.2 against 0.34 ms for ``torch.topk``); through
this step: sort 0.95 ms (JAX 1.14), argsort 1.20 ms (JAX 2.02), top_k(16) 0.68 ms (JAX 1.40).

Shorter rows sort in one kernel by ranking, one program per row; each element's output
position is the number of elements of its row that come before it (in the comparator's order,
ties by index, so the sort is stable), counted over blocks of the row; the element is then
stored at that position. This takes O(n^2 / lanes) steps per row, exact for every comparator
(several keys, JAX's NaN and signed-zero rules, top_k's total order), and needs no host step, so
the program stays eligible for CUDA-graph replay (a program with a host step is not). The
operands are read from their buffers (the lowering asks for them: ``needs_buffer``)."""

from __future__ import annotations

import math

import numpy as np

from functx import dtypes
from functx.control import sort as S
from functx.core import ShapedArray
from functx.errors import UnsupportedError
from functx.lowering.schedule import Kernel
from functx.lowering.triton import loops
from functx.lowering.triton.emit import _next_pow2

BLOCK = 64  # lanes of a row compared at once, in each direction

# rows at least this long sort through torch.sort (``SortStep``) rather than the ranking kernel:
# on the H200, 4096 rows of 128 took 0.071 ms in the kernel against 0.279 ms through torch.sort,
# rows of 256 0.277 against 0.179 ms (benchmarks/gpu_libsteps.py)
TORCH_ROW_MIN = 256


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
    if n >= TORCH_ROW_MIN:
        _torch_step(prog, k, group)
        return
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


def _torch_step(prog, k: Kernel, group):
    """The sort as a host step of the Triton program: ``SortStep.torch`` on its buffers."""
    ops, outs = list(group["ops"]), list(group["outs"])
    present = [bool(o.buf) for o in outs]
    step = SortStep(
        group["dimension"],
        group["num_keys"],
        group["mode"],
        group["k"],
        group["index"],
        [(o.shape, np.dtype(o.dtype)) for o in ops],
        [(o.shape, np.dtype(o.dtype)) for o in outs],
        present,
    )
    kept = [o for o, p in zip(outs, present) if p]
    host = {
        "callback": step,
        "in_avals": [ShapedArray(o.shape, o.dtype) for o in ops],
        "ins": ops,
        "outs": kept,
        "n_out": len(kept),
    }
    loops.LOOP_KINDS["host"](prog, k, host)


def _int_of(torch, itemsize):
    return {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[itemsize]


def _order_key(torch, x, dt, mode):
    """Integer keys of the tensor ``x`` (of dtype ``dt``) in the sort's order (see above)."""
    if dt == dtypes.bool_:
        return x.view(torch.uint8).to(torch.int32)
    if dt in dtypes.FLOATS:
        if dt in (dtypes.float16, dtypes.bfloat16):
            x = x.float()  # (exact; NaN signs kept)
        if mode == "asc":
            x = torch.where(torch.isnan(x), torch.full_like(x, float("nan")).abs(), x + 0.0)
        ity = torch.int64 if x.dtype == torch.float64 else torch.int32
        b = x.view(ity)
        return torch.where(b < 0, b ^ torch.iinfo(ity).max, b)
    if dt.kind == "u":
        if dt.itemsize == 1:
            return x.view(torch.uint8).to(torch.int32)
        if dt.itemsize == 8:
            return x.view(torch.int64) ^ torch.iinfo(torch.int64).min
        wide = torch.int32 if dt.itemsize == 2 else torch.int64
        return x.view(_int_of(torch, dt.itemsize)).to(wide) & ((1 << (8 * dt.itemsize)) - 1)
    return x


class SortStep:
    """A long-row ``sort``/``top_k`` of a Triton program: ``torch`` sorts the step's tensors on
    their device (see the module docstring); ``__call__`` is the eager implementation on NumPy
    arrays. Prints with its address, as the other host steps do (the disk program cache skips
    programs with host steps)."""

    graph_safe = True  # (``torch`` queues sorts and gathers on the current stream only)
    __slots__ = (
        "dimension",
        "num_keys",
        "mode",
        "k",
        "index",
        "in_specs",
        "out_specs",
        "present",
        "__weakref__",
    )

    def __init__(self, dimension, num_keys, mode, k, index, in_specs, out_specs, present):
        self.dimension, self.num_keys, self.mode = dimension, num_keys, mode
        self.k, self.index = k, index
        self.in_specs, self.out_specs, self.present = in_specs, out_specs, present

    def __repr__(self):
        return f"<torch {self.mode} sort dim {self.dimension} keep {self.k} at 0x{id(self):x}>"

    def __call__(self, *vals):
        if self.mode == "topk":
            res = S.top_k_p.impl(vals[0], k=self.k, axis=self.dimension)
        else:
            res = S.sort_p.impl(
                *vals, dimension=self.dimension, is_stable=True, num_keys=self.num_keys
            )
        return [r for r, p in zip(res, self.present) if p]

    def torch(self, ins, outs):
        """Sort the flat tensors ``ins`` into ``outs`` (only the outputs the program uses)."""
        import torch  # (optional dependency: only a Triton program calls this)

        shape = self.in_specs[0][0]
        d = self.dimension
        outer, n, inner = math.prod(shape[:d]), shape[d], math.prod(shape[d + 1 :])
        rows = [t.reshape(outer, n, inner) for t in ins]
        dts = [dt for _, dt in self.in_specs]
        if self.mode == "topk":
            key = _order_key(torch, rows[0], dts[0], "topk")
            perm = torch.sort(key, dim=1, descending=True, stable=True).indices[:, : self.k]
        else:
            perm = None
            for x, dt in reversed(list(zip(rows, dts))[: self.num_keys]):
                key = _order_key(torch, x, dt, "asc")
                if perm is not None:
                    key = torch.gather(key, 1, perm)
                step = torch.sort(key, dim=1, stable=True).indices
                perm = step if perm is None else torch.gather(perm, 1, step)
        sources = [rows[0], perm] if self.mode == "topk" else rows
        kept = [s for s, p in zip(sources, self.present) if p]
        specs = [s for s, p in zip(self.out_specs, self.present) if p]
        for o, src, (_, dt) in zip(outs, kept, specs):
            if src is perm:
                o.copy_(perm.reshape(-1).to(o.dtype))
                continue
            bits = _int_of(torch, dt.itemsize)
            got = torch.gather(src.view(bits), 1, perm)  # (the elements' own bits)
            o.view(bits).copy_(got.reshape(-1))
