"""Triton matrix products: a host call of the runtime's ``matmul`` (cuBLAS through torch), or for
the shapes ``gemm.TABLE`` names a Triton GEMM (``gemm.py``) that computes the first later
pointwise kernel reading the product as its epilogue (``_epilogue``), the product then stored only
where something else reads it (``drop_unread_products``); small float matrix-vector products
written as a multiply and a sum before lowering (``matvec_sums``), so that they fuse with their
neighbours as reductions (on an H100 the kernel least squares step went from 6 launches, 3 of
them cuBLAS, and 14.3 us of GPU time to 3 launches and 5.1 us; JAX 5.9)."""

from __future__ import annotations

import dataclasses
import itertools
import math
import re

import numpy as np

from functx import config, lax
from functx.lowering.loopir import Load, flat_offset, sym
from functx.lowering.schedule import Kernel, KernelCtx, NotRowAligned, local_sym
from functx.lowering.triton import gemm, pointwise
from functx.lowering.triton.conv import _retrace
from functx.lowering.triton.emit import Emitter, V, _decompose


# --- matrix products (host) ----------------------------------------------------------------
def render(prog, k: Kernel):
    node = k.nodes[0]
    p = node.params
    lhs, rhs = p["lhs"], p["rhs"]
    if node.size == 0:
        return
    tf32 = _tf32(p)
    chosen = _triton_choice(k)
    if chosen is not None:
        _triton_product(prog, k, *chosen, (lhs.buf, rhs.buf, node.buf))
        return
    prog.host.append(
        f"    _fx_dot({lhs.buf}, {rhs.buf}, {node.buf}, {p['batch']}, {p['m']}, "
        f"{p['k']}, {p['n']}, {p['lhs_trans']}, {p['rhs_trans']}, {tf32})"
        f"  # kernel {k.index}: dot_general {lhs.shape} x {rhs.shape}"
    )


def _tf32(params) -> bool:
    """Whether a product rounds its float32 operands to TF32: its own precision=, else the
    default (see functx.default_matmul_precision)."""
    return (params.get("precision") or config.matmul_precision()) != "float32"


def _triton_choice(k: Kernel):
    """``(gemm.Product, gemm.Config)`` of product kernel ``k`` where it runs as a Triton GEMM
    (``gemm.choose``), else None (cuBLAS, or no elements)."""
    node = k.nodes[0]
    p = node.params
    dt = np.dtype(node.dtype)
    if node.size == 0 or not np.dtype(p["lhs"].dtype) == np.dtype(p["rhs"].dtype) == dt:
        return None
    shape = (p["batch"], p["m"], p["k"], p["n"], p["lhs_trans"], p["rhs_trans"], dt.name)
    prod = gemm.Product(*shape, _tf32(p))
    cfg = gemm.choose(prod)
    return None if cfg is None else (prod, cfg)


#: whether a Triton product computes the pointwise kernel right after it as its epilogue
EPILOGUES = True
#: whether a Triton product also computes a reduction kernel before it that sums its second
#: operand over the contraction (``column_sums_in_product``)
COLUMN_SUMS = True


def _triton_product(prog, k: Kernel, prod, cfg, bufs):
    """Product ``prod`` as Triton kernels (``gemm.kernels``) launched from the host function,
    with the next kernel as its epilogue where ``_epilogue`` finds one."""
    name = prog._kname(k, "gemm")
    ws = f"ws{k.index}"
    n_ws = gemm.workspace_elements(prod, cfg)
    if n_ws:
        prog.host.append(f"    {ws} = torch.empty({n_ws}, dtype=torch.float32, device=dev)")
    sums = column_sums(prog).get(k.index)
    sums = sums and sums.passes[0][0].buf
    epi = _epilogue(prog, k) if prod.dtype == "float32" else None
    if epi is not None and sums is not None and sums in pointwise._reads(epi[0]):
        epi = None  # (it reads the column sums, which this launch writes)
    defs, launches = gemm.kernels(name, prod, cfg, ws, epilogue=epi and epi[1], column_sums=sums)
    if epi is not None:
        pointwise._merged(prog).add(epi[0].index)  # (computed here: its own turn is skipped)
        # (the product's own store goes where nothing else reads it: drop_unread_products)
        prog.__dict__.setdefault("_gemm_stores", []).append((launches[-1][0], bufs[2]))
    prog.defs.extend(defs)
    names = dict(zip(("a", "b", "out", "csum"), (*bufs, sums)), **{ws: ws})
    for kname, (g0, g1), params, warps in launches:
        prog._launch(kname, f"{g0}, {g1}", [names.get(x, x) for x in params], warps)


def _consumer(prog, k: Kernel):
    """The first later pointwise kernel of the product's shape that reads product kernel ``k``'s
    result and nothing the kernels in between write (so it can run in ``k``'s launch), or
    None; only pointwise, reduction and product kernels may lie in between (their results
    are their nodes' buffers)."""
    node, merged, written = k.nodes[0], pointwise._merged(prog), set()
    for k2 in prog.kernels[k.index + 1 :]:
        if k2.kind == "pointwise" and k2.index not in merged:
            reads = pointwise._reads(k2)
            if node.buf in reads:
                ok = tuple(k2.shape) == tuple(node.shape) and not reads & written
                return k2 if ok and pointwise._same_elements(prog, k2) is None else None
        if k2.kind not in ("pointwise", "reduce", "dot"):
            return None
        for group in (k2.nodes, *k2.passes, k2.maps, k2.epilogue):
            written |= {nd.buf for nd in group if nd.buf}
    return None


def _epilogue(prog, k: Kernel):
    """``(consumer, epilogue)``: ``_consumer``'s kernel, when it reads the product only at the
    element it computes (bias and activation, an activation's derivative, the SGD update of a
    weight from its gradient), written as ``gemm.kernels``'s epilogue: the product's value
    comes from the accumulator instead of a load, and one launch (or one part of a shared one)
    and a pass over the product are saved. None where there is no such kernel."""
    node = k.nodes[0]
    nxt = _consumer(prog, k) if EPILOGUES else None
    if nxt is None:
        return None
    # the product read as a local of the consumer: at its own element, else NotRowAligned
    nxt = dataclasses.replace(nxt, local_ids=nxt.local_ids | {node.id})
    shape = tuple(node.shape)
    ivars = [sym(f"i{d}") for d in range(len(shape))]

    def epilogue(flat, mask, value, indent):
        known = {flat_offset(ivars, shape): flat} if shape else {}
        em = Emitter(
            indent, itertools.count(), {v.name: "f" for v in ivars}, {frozenset("f"): mask}, known
        )
        em.syms[local_sym(node).name] = V(value, frozenset("f"), False, node.dtype)
        ctx, stores = KernelCtx(nxt), []
        for (buf, dt, fn), local in zip(pointwise._stores(nxt), pointwise._local_names(nxt)):
            v = em(fn(tuple(ivars), ctx))
            if local is not None:
                em.syms[local] = v
            if buf is not None:
                stores.append((buf, dt, v))
        lines = [indent + s for s in _decompose([v.name for v in ivars], shape, flat)]
        lines += em.lines + [indent + prog._store(b, flat, v, dt, mask) for b, dt, v in stores]
        return lines, prog._ordered(em.bufs, [b for b, _, _ in stores])

    try:
        epilogue("flat", "mask", "acc", "    ")
    except NotRowAligned:
        return None
    return nxt, epilogue


def _reads(k: Kernel) -> set | None:
    """The buffers kernel ``k`` reads, for a pointwise, reduction or product kernel (else
    None: not known here)."""
    if k.kind == "pointwise":
        return pointwise._reads(k)
    if k.kind == "dot":
        return {k.nodes[0].params["lhs"].buf, k.nodes[0].params["rhs"].buf}
    if k.kind != "reduce":
        return None
    rv, full = k.row_vars(), k.full_index()
    ctx = KernelCtx(k, rv)
    try:
        for r in (r for p in k.passes for r in p):
            r.params["operand"].load(full, ctx)
        for m in k.maps:
            m.fn(full, ctx)
        for m in k.epilogue:
            m.fn(rv, ctx)
    except NotRowAligned:
        return None
    return {n.buf for n in ctx.reads}


def _column_sum(k: Kernel):
    """``(buffer, rows, columns)`` where reduction kernel ``k`` does nothing but sum a float32
    buffer of shape (rows, columns...) over its first axis and store the sums, else None."""
    if k.kind != "reduce" or k.maps or k.epilogue or k.axes != (0,) or len(k.shape) < 2:
        return None
    if len(k.passes) != 1 or len(k.passes[0]) != 1:
        return None
    r = k.passes[0][0]
    if r.params["op"] != "reduce_sum" or np.dtype(r.dtype) != np.float32 or not r.buf:
        return None
    full = k.full_index()
    try:
        e = r.params["operand"].load(full, KernelCtx(k, k.row_vars()))
    except NotRowAligned:
        return None
    if not isinstance(e, Load) or np.dtype(e.dtype) != np.float32:
        return None
    if e.offset != flat_offset(full, k.shape):
        return None
    return e.buf, k.shape[0], math.prod(k.shape[1:])


def column_sums(prog) -> dict:
    """``{product kernel index: reduction kernel}``: the reduction kernels of ``prog`` that a
    Triton product computes, found once per program. Such a reduction sums a buffer over its
    first axis (``_column_sum``: a bias gradient) that is the (k, n) second operand of the
    product (a weight gradient ``x^T @ g``); the product's first row of tiles adds up the
    operand it reads anyway (``gemm.kernels``'s ``column_sums``), a launch fewer. The nearest
    such product after the reduction takes it where no kernel in between reads the sums, else
    the nearest one before it. The sums are added in another order than the reduction
    kernel's (a rounding apart)."""
    plan = prog.__dict__.get("_column_sums")
    if plan is not None:
        return plan
    plan = prog.__dict__.setdefault("_column_sums", {})
    for k in prog.kernels if COLUMN_SUMS else ():
        found = _column_sum(k)
        if found is None:
            continue
        out = k.passes[0][0].buf
        later = []
        for k2 in prog.kernels[k.index + 1 :]:
            reads = _reads(k2)
            if reads is None or out in reads:
                break
            later.append(k2)
        earlier = prog.kernels[k.index - 1 :: -1] if k.index else []
        for k2 in later + earlier:
            chosen = _triton_choice(k2) if k2.kind == "dot" else None
            if chosen is not None and k2.index not in plan:
                prod, rhs = chosen[0], k2.nodes[0].params["rhs"].buf
                if (prod.batch, prod.k, prod.n, prod.tb, rhs) == (1, *found[1:], False, found[0]):
                    plan[k2.index] = k
                    break
    return plan


def drop_unread_products(prog) -> None:
    """Drop the store of each product whose epilogue was its only reader: its buffer is named
    by no host line of ``prog`` but its own launch and is no output (the MLP's pre-activations
    and weight gradients are then never written). Called once ``prog``'s host code is final."""
    outs = {n.buf for n in prog.g.outputs}
    for kname, buf in prog.__dict__.get("_gemm_stores", []):
        word = re.compile(rf"\b{buf}\b")
        if buf in outs or sum(bool(word.search(ln)) for ln in prog.host) != 1:
            continue
        head = f"@triton.jit\ndef {kname}("
        for i, d in enumerate(prog.defs):
            if d.startswith(head):
                prog.defs[i] = re.sub(rf"(?m)^.*{gemm.PRODUCT_STORE}\n", "", d)


# --- matrix-vector products as sums ----------------------------------------------------------
#: whether ``compile_triton`` writes small matrix-vector products as multiply-and-sum (below)
MATVEC_SUMS = True
#: ... for products whose operands hold at most this many elements each
MATVEC_MAX_ELEMENTS = 1 << 20


def _is_matvec(e) -> bool:
    """Whether ``dot_general`` equation ``e`` is a small matrix-vector product of float32 or
    float64 operands and result (half precision keeps its product: a float32 accumulation)."""
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    lhs, rhs = (a.aval for a in e.invars)
    dt = np.dtype(e.outvars[0].aval.dtype)
    if dt not in (np.float32, np.float64) or not lhs.dtype == rhs.dtype == dt:
        return False
    m = math.prod(d for i, d in enumerate(lhs.shape) if i not in lc and i not in lb)
    n = math.prod(d for i, d in enumerate(rhs.shape) if i not in rc and i not in rb)
    k = math.prod(lhs.shape[i] for i in lc)  # (1: an outer product, which lower.py multiplies)
    big = max(math.prod(lhs.shape), math.prod(rhs.shape))
    return min(m, n) == 1 and k > 1 and big <= MATVEC_MAX_ELEMENTS


def _as_sum(e, lhs, rhs, squeezed: bool):
    """``dot_general(lhs, rhs)`` of equation ``e`` as ``reduce_sum(lhs' * rhs')``: each operand
    transposed to the order (batch, lhs free, rhs free, contracted) and broadcast over the
    other's free axes; the sum reshaped to the product's shape. Contracted axes of length 1 are
    dropped, and with ``squeezed`` (the product read only without its unit axes) all of them:
    the scheduler fuses a reduction with readers of its own shape (a vector-vector product and
    a full sum over the same vector then reduce in one kernel)."""
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    out = e.outvars[0].aval
    lf = [i for i in range(len(lhs.shape)) if i not in lc and i not in lb]
    rf = [i for i in range(len(rhs.shape)) if i not in rc and i not in rb]
    # the sum's axes: (role, lhs axis or None, rhs axis or None), unit axes left out
    axes = [("b", i, j) for i, j in zip(lb, rb)] + [("l", i, None) for i in lf]
    axes += [("r", None, j) for j in rf] + [("c", i, j) for i, j in zip(lc, rc)]
    axes = [
        t
        for t in axes
        if (lhs.shape[t[1]] if t[1] is not None else rhs.shape[t[2]]) != 1
        or (t[0] != "c" and not squeezed)
    ]
    full = [lhs.shape[i] if i is not None else rhs.shape[j] for _, i, j in axes]

    def operand(x, side):
        own = [(k, t[side]) for k, t in enumerate(axes) if t[side] is not None]
        order = [a for _, a in own]
        x = lax.transpose(x, order + [a for a in range(x.ndim) if a not in order])
        x = lax.reshape(x, [x.shape[k] for k in range(len(own))])  # (unit axes dropped)
        return lax.broadcast_in_dim(x, full, [k for k, _ in own])

    s = lax.mul(operand(lhs, 1), operand(rhs, 2))
    s = lax.reduce_sum(s, tuple(k for k, t in enumerate(axes) if t[0] == "c"))
    return lax.reshape(s, out.shape)


def matvec_sums(closed):
    """``closed`` with each small matrix-vector product (one side's free axes of size 1, see
    ``_is_matvec``) as a multiply and a sum, which the scheduler fuses with the pointwise work
    around it into reduction kernels (where cuBLAS would take a launch of its own per product)."""
    if not MATVEC_SUMS or not any(
        e.prim.name == "dot_general" and _is_matvec(e) for e in closed.jaxpr.eqns
    ):
        return closed

    readers: dict = {}  # variable id -> the equations reading it (None: a program output)
    for e in closed.jaxpr.eqns:
        for a in e.invars:
            readers.setdefault(getattr(a, "id", None), []).append(e)
    for a in closed.jaxpr.outvars:
        readers.setdefault(getattr(a, "id", None), []).append(None)

    def squeezed(e) -> bool:
        """Whether every reader of ``e``'s result only drops, adds or moves its unit axes."""
        full = e.outvars[0].aval.shape
        wide = [a for a, d in enumerate(full) if d != 1]

        def unit_only(r) -> bool:
            if r is None or [d for d in r.outvars[0].aval.shape if d != 1] != [
                full[a] for a in wide
            ]:
                return False
            if r.prim.name == "transpose":  # (the other axes in their order)
                return [a for a in r.params["permutation"] if a in wide] == wide
            return r.prim.name in ("squeeze", "reshape")

        return all(unit_only(r) for r in readers.get(e.outvars[0].id, [None]))

    def step(e, read):
        if e.prim.name != "dot_general" or not _is_matvec(e):
            return None
        return {e.outvars[0].id: _as_sum(e, *[read(a) for a in e.invars], squeezed(e))}

    return _retrace(closed, step)
