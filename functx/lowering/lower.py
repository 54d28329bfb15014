"""Stage 1 of lowering: Jaxpr -> loop IR (``loopir.py``), through the table ``rules.lowerings``.

``lowerings`` (``rules.py``) maps each primitive to its rule ``rule(g, ins, out_avals, **params)``,
which adds nodes to the graph ``g`` and returns the node (or list of nodes) of the equation's
outputs; this module registers the rules of the first-order primitives. View primitives
(broadcast, reshape, transpose, squeeze, expand_dims, slice, rev, pad, concatenate,
dynamic_slice, gather) never copy: they rewrite the index and read their operand. Elementwise
primitives build expression trees. Reductions, matrix products, scatters and control flow become
realised nodes (see ``loopir.py``).
"""

from __future__ import annotations

import math

import numpy as np

from functx import dtypes, primitives as P
from functx.core import ClosedJaxpr, Jaxpr, Literal
from functx.errors import UnsupportedError
from functx.lowering import intexpr
from functx.lowering.intexpr import Int, ix
from functx.lowering.loopir import (
    Const,
    E,
    FloorDiv,
    Graph,
    Idx,
    Load,
    ModI,
    Node,
    Op,
    _Reads,
    error_context,
    flat_offset,
    guard_clamp,
    reads_in_order,
    strides_of,
    sym,
)
from functx.lowering.rules import lowerings
from functx.source_info import where

# --- lowering a Jaxpr ----------------------------------------------------------------------------


def lower_jaxpr(closed: ClosedJaxpr) -> Graph:
    """The loop IR of ``closed``: a ``Graph`` with an input node per constant and argument and
    the nodes of every equation (``lower_eqns``); ``graph.outputs`` are the outputs' nodes."""
    g = Graph()
    env = {}
    j = closed.jaxpr
    for v, c in zip(j.constvars, closed.consts):
        arr = np.asarray(c)
        n = g.add(Node(tuple(arr.shape), v.aval.dtype, kind="input"))
        n.buf = f"c{len(g.consts)}"
        g.consts.append((n, arr))
        env[v.id] = n
    for i, v in enumerate(j.invars):
        n = g.add(Node(v.aval.shape, v.aval.dtype, kind="input"))
        n.buf = f"in{i}"
        g.inputs.append(n)
        env[v.id] = n
    lower_eqns(g, j, env)
    for a in j.outvars:
        g.outputs.append(read(g, env, a))
    _fold_transposed_products(g)
    return g


def _fold_transposed_products(g: Graph) -> None:
    """A matrix product read only through a transpose (the weight gradient ``x.T @ d`` comes out of
    ``dot_general``'s transpose rule as ``(d.T @ x).T``; a batched one through transposes and
    reshapes, as ``vmap`` of ``jacfwd`` leaves it) computes the transposed product instead,
    ``C.T = B.T @ A.T``, by swapping its operands and their BLAS transpose flags: the view that
    transposes it becomes an in-order view, and no consumer reads the product across its rows.
    A product (any, convolution taps too) that a program output only reshapes becomes that
    output itself: no copy of the product into the output's buffer."""
    consumers: dict[int, list] = {}
    for n in g.nodes:
        for i in n.inputs:
            consumers.setdefault(i.id, []).append(n)
    outputs = {n.id for n in g.outputs}
    for d in list(g.nodes):
        if d.kind != "dot" or d.id in outputs:
            continue
        plain = set(d.params) == _DOT_PARAMS  # (operands swappable: no conv taps)
        chain, cur, found = [], d, False
        while len(consumers.get(cur.id, ())) == 1 and cur.id not in outputs:
            cur = consumers[cur.id][0]
            if not _is_view(cur):
                break
            chain.append(cur)
            moved = any("permutation" in n.params for n in chain)  # (only a transpose moves)
            if plain and moved and (found := _reads_transposed(cur, d)):
                break
        if not found:
            v = chain[-1] if chain else None
            if (
                v is not None
                and v.id in outputs
                and not consumers.get(v.id)
                and _reads_in_order(v, d)
            ):
                d.shape = v.shape  # (an output reshaping the product: the product)
                g.outputs = [d if o is v else o for o in g.outputs]
                _drop(g, {n.id for n in chain})
            continue
        v = chain[-1]
        p = d.params
        p["lhs"], p["rhs"] = p["rhs"], p["lhs"]
        p["lhs_trans"], p["rhs_trans"] = not p["rhs_trans"], not p["lhs_trans"]
        p["m"], p["n"] = p["n"], p["m"]
        d.inputs = [p["lhs"], p["rhs"]]
        d.shape = v.shape
        v.params.pop("permutation", None)
        v.inputs = [d]
        v.fn = lambda idx, ctx, d=d: d.load(idx, ctx)
        _drop(g, {n.id for n in chain[:-1]})


def _drop(g: Graph, dead: set) -> None:
    """Remove the nodes with ids in ``dead`` and number the rest by position again (the loop
    IR's invariant: a node's id is its position, ``loopir.verify``)."""
    g.nodes = [n for n in g.nodes if n.id not in dead]
    for i, n in enumerate(g.nodes):
        n.id = i


def _reads_in_order(v, d) -> bool:
    """Whether the view ``v`` (through its chain of views) holds ``d``'s elements in ``d``'s
    order (a reshape, unit axes added or dropped)."""
    found = _through_views(v)
    if found is None or found[0] is not d or v.size != d.size:
        return False
    ivars = tuple(sym(f"i{a}") for a in range(len(v.shape)))
    unit = {x: 0 for x, s in zip(ivars, v.shape) if s == 1}
    return found[1].subs(unit) == flat_offset(ivars, v.shape).subs(unit)


def _reads_transposed(v, d) -> bool:
    """Whether the view ``v`` (through its chain of views) holds the batched product ``d``
    (``batch`` matrices of ``m x n``) transposed, in its own flat order: its non-unit axes
    group into (batch, n, m) and its element (b, j, i) is ``d``'s (b, i, j)."""
    nb, m, n = d.params["batch"], d.params["m"], d.params["n"]
    if math.prod(v.shape) != nb * m * n:
        return False
    found = _through_views(v)
    if found is None or found[0] is not d:
        return False
    ivars = tuple(sym(f"i{a}") for a in range(len(v.shape)))
    axes = [a for a, s in enumerate(v.shape) if s != 1]
    groups, k = [], 0
    for target in (nb, n, m):  # v's axes in order, grouped into the batch, n and m
        group, size = [], 1
        while size < target and k < len(axes):
            size *= v.shape[axes[k]]
            group.append(axes[k])
            k += 1
        if size != target:
            return False
        groups.append(group)
    b, j, i = (flat_offset([ivars[a] for a in gr], [v.shape[a] for a in gr]) for gr in groups)
    unit = {x: 0 for x, s in zip(ivars, v.shape) if s == 1}
    want = b * m * n + i * n + j
    return found[1].subs(unit) == ix(want).subs(unit)


def inline_jaxpr(g: Graph, closed: ClosedJaxpr, ins: list) -> list:
    """Add ``closed``'s equations to ``g`` on the input nodes ``ins`` and return its outputs'
    nodes: a primitive lowered as the Jaxpr of its implementation (threefry's rounds, XLA's bit
    generators). Its constants must be scalars; they become constant nodes."""
    j = closed.jaxpr
    env = {}
    for v, c in zip(j.constvars, closed.consts):
        val = np.asarray(c, v.aval.dtype)
        assert val.shape == (), "an inlined Jaxpr's constants are scalars"
        env[v.id] = g.add(
            Node((), v.aval.dtype, fn=lambda idx, ctx, v=val[()], d=v.aval.dtype: Const(d, v))
        )
    for v, n in zip(j.invars, ins):
        env[v.id] = n
    lower_eqns(g, j, env)
    return [read(g, env, a) for a in j.outvars]


def _literal_node(g, a: Literal) -> Node:
    val = np.asarray(a.val, a.aval.dtype)[()]
    return g.add(Node((), a.aval.dtype, fn=lambda idx, ctx, v=val, d=a.aval.dtype: Const(d, v)))


def read(g, env, a):
    """The node of atom ``a`` (a Var of ``env``, or a Literal: a new constant node)."""
    return _literal_node(g, a) if type(a) is Literal else env[a.id]


def lower_eqns(g: Graph, j: Jaxpr, env: dict):
    """Add the nodes of ``j``'s equations to ``g``, reading their inputs from ``env`` (Var id ->
    node) and binding their outputs there; each rule (``rules.lowerings``) runs in its equation's
    context: an exception it raises names the primitive and the user's line."""
    for e in j.eqns:
        rule = lowerings.get(e.prim)
        if rule is None:
            raise UnsupportedError(
                f"jit: primitive '{e.prim.name}' has no lowering to compiled "
                f"code{where(e.source_info)}"
            )
        ins = [read(g, env, a) for a in e.invars]
        first = len(g.nodes)
        with error_context(lambda err, e=e: _eqn_context(e)):
            outs = rule(g, ins, [v.aval for v in e.outvars], **e.params)
        outs = outs if isinstance(outs, list) else [outs]
        for n in g.nodes[first:] + outs:  # (the nodes it made, and outputs it passed through)
            if n.source_info is None:
                n.source_info, n.prim = e.source_info, e.prim.name
        for v, n in zip(e.outvars, outs):
            env[v.id] = n


def _eqn_context(e) -> str:
    """What a lowering rule's error gets appended: the primitive and the user's line."""
    line = f" at {e.source_info}" if e.source_info is not None else ""
    return f" (while lowering '{e.prim.name}'{line})"


def _pw(g, shape, dtype, fn, inputs) -> Node:
    return g.add(Node(tuple(shape), dtype, fn=fn, inputs=list(inputs)))


# --- elementwise ---------------------------------------------------------------------------------
def _elementwise(name):
    def rule(g, ins, out_avals, **params):
        aval = out_avals[0]
        shape = aval.shape

        def fn(idx, ctx, ins=ins):
            args = tuple(x.load(idx if x.shape else (), ctx) for x in ins)
            return Op(aval.dtype, name, args + tuple(sorted(params.items())))

        return _pw(g, shape, aval.dtype, fn, ins)

    return rule


for _p in P.registry.values():
    if _p.group in ("unary", "binary", "compare", "bitwise"):
        lowerings[_p] = _elementwise(_p.name)
lowerings[P.stop_gradient_p] = lambda g, ins, avals: ins[0]


def _select_n(g, ins, avals):
    which, cases = ins[0], ins[1:]
    aval = avals[0]

    def fn(idx, ctx):
        w = which.load(idx if which.shape else (), ctx)
        vals = [c.load(idx, ctx) for c in cases]
        if len(vals) == 1:
            return vals[0]
        if which.dtype == dtypes.bool_:
            return Op(aval.dtype, "select", (w, vals[1], vals[0]))
        out = vals[-1]
        for k in range(len(vals) - 2, -1, -1):
            cond = Op(dtypes.bool_, "le", (w, Const(which.dtype, k)))
            out = Op(aval.dtype, "select", (cond, vals[k], out))
        return out

    return _pw(g, aval.shape, aval.dtype, fn, ins)


lowerings[P.select_n_p] = _select_n


def _convert(g, ins, avals, *, new_dtype, weak_type=False):
    x = ins[0]
    if x.dtype == new_dtype:
        return x
    return _pw(
        g, x.shape, new_dtype, lambda idx, ctx: Op(new_dtype, "convert", (x.load(idx, ctx),)), ins
    )


lowerings[P.convert_element_type_p] = _convert


_BITCAST_DTYPES = tuple(
    np.dtype(n)
    for n in "int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64".split()
) + (dtypes.bfloat16,)


def _bitcast(g, ins, avals, *, new_dtype):
    """Same widths: one ``bitcast`` element op. A width change works on the unsigned integers of
    the two widths: a narrower part ``j`` is the wide bits divided by ``2**(j*bits)`` and
    truncated; a wider element is the sum of its parts, part ``j`` times ``2**(j*bits)``."""
    x, out = ins[0], avals[0]
    old, new = np.dtype(x.dtype), np.dtype(out.dtype)
    if old == new:
        return x
    for dt in (old, new):
        if dt not in _BITCAST_DTYPES:
            raise UnsupportedError(
                f"jit: bitcast_convert_type from {old} to {new}: {dt} has no compiled bitcast "
                "(only the 8- to 64-bit integers and float16/bfloat16/float32/float64)"
            )
    ob, nb = old.itemsize * 8, new.itemsize * 8
    uo, un = np.dtype(f"uint{ob}"), np.dtype(f"uint{nb}")

    def cast(e, to):
        return e if np.dtype(e.dtype) == to else Op(to, "bitcast", (e,))

    if ob == nb:
        return _pw(g, out.shape, new, lambda idx, ctx: cast(x.load(idx, ctx), new), ins)
    if ob > nb:

        def narrow(idx, ctx):
            bits = cast(x.load(idx[:-1], ctx), uo)
            j = Idx(dtypes.int64, idx[-1])
            scale = Const(uo, 1)
            for k in range(1, ob // nb):
                hit = Op(dtypes.bool_, "eq", (j, Const(dtypes.int64, k)))
                scale = Op(uo, "select", (hit, Const(uo, 1 << (k * nb)), scale))
            part = Op(un, "convert", (Op(uo, "div", (bits, scale)),))
            return cast(part, new)

        return _pw(g, out.shape, new, narrow, ins)

    def widen(idx, ctx):
        acc = None
        for k in range(nb // ob):
            part = Op(un, "convert", (cast(x.load((*idx, Int(k)), ctx), uo),))
            if k:
                part = Op(un, "mul", (part, Const(un, 1 << (k * ob))))
            acc = part if acc is None else Op(un, "or", (acc, part))
        return cast(acc, new)

    return _pw(g, out.shape, new, widen, ins)


lowerings[P.bitcast_convert_type_p] = _bitcast


def _iota(g, ins, avals, *, dtype, shape, dimension):
    return _pw(
        g,
        shape,
        dtype,
        lambda idx, ctx: Op(dtype, "convert", (Idx(dtypes.int64, idx[dimension]),)),
        [],
    )


lowerings[P.iota_p] = _iota


# --- views ---------------------------------------------------------------------------------------
def _view(g, x, shape, index_map, dtype=None):
    """A node reading ``x`` at ``index_map(idx)`` (no copy)."""
    return _pw(g, shape, dtype or x.dtype, lambda idx, ctx: x.load(index_map(idx), ctx), [x])


def _broadcast_in_dim(g, ins, avals, *, shape, broadcast_dimensions):
    x = ins[0]
    return _view(
        g,
        x,
        shape,
        lambda idx: [
            idx[d] if x.shape[i] != 1 else Int(0) for i, d in enumerate(broadcast_dimensions)
        ],
    )


def _transpose(g, ins, avals, *, permutation):
    x = ins[0]
    inv = np.argsort(permutation)
    node = _view(g, x, avals[0].shape, lambda idx: [idx[inv[i]] for i in range(len(permutation))])
    node.params["permutation"] = tuple(int(p) for p in permutation)  # (read by _blas_operand)
    return node


def _squeeze(g, ins, avals, *, dimensions):
    x = ins[0]

    def m(idx):
        it = iter(idx)
        return [Int(0) if i in dimensions else next(it) for i in range(len(x.shape))]

    return _view(g, x, avals[0].shape, m)


def _expand_dims(g, ins, avals, *, dimensions):
    x = ins[0]
    return _view(
        g, x, avals[0].shape, lambda idx: [v for i, v in enumerate(idx) if i not in dimensions]
    )


def reshape_index(idx, new_shape, old_shape):
    """Index into ``old_shape`` of element ``idx`` of the reshaped array, splitting the shapes into
    groups of dimensions with equal products so that merges and splits stay simple."""
    if math.prod(new_shape) == 0:  # no element is ever read: any index in range will do
        return [Int(0)] * len(old_shape)
    out = []
    i = j = 0
    n, m = len(new_shape), len(old_shape)
    while i < n or j < m:
        gi, gj = [i], [j]
        pi = new_shape[i] if i < n else 1
        pj = old_shape[j] if j < m else 1
        i += 1
        j += 1
        while pi != pj:
            if pi < pj:
                pi *= new_shape[i]
                gi.append(i)
                i += 1
            else:
                pj *= old_shape[j]
                gj.append(j)
                j += 1
        gi = [k for k in gi if k < n]
        gj = [k for k in gj if k < m]
        sub_new = [new_shape[k] for k in gi]
        sub_old = [old_shape[k] for k in gj]
        flat = flat_offset([idx[k] for k in gi], sub_new) if gi else Int(0)
        for k, s in zip(gj, strides_of(sub_old)):
            v = FloorDiv(flat, s)
            out.append(ModI(v, old_shape[k]) if s * old_shape[k] != math.prod(sub_old) else v)
    return out


def _reshape(g, ins, avals, *, new_sizes):
    x = ins[0]
    new_sizes = tuple(new_sizes)

    def fn(idx, ctx):
        if x.buf is not None and ctx.can_read_buffer(x):
            # a realised, contiguous buffer: the flat offset is unchanged
            ctx.note_read(x)
            return Load(x.dtype, x.buf, flat_offset(idx, new_sizes))
        return x.load(reshape_index(idx, new_sizes, x.shape), ctx)

    return _pw(g, new_sizes, x.dtype, fn, [x])


def _rev(g, ins, avals, *, dimensions):
    x = ins[0]
    return _view(
        g,
        x,
        x.shape,
        lambda idx: [x.shape[i] - 1 - v if i in dimensions else v for i, v in enumerate(idx)],
    )


def _slice(g, ins, avals, *, start_indices, limit_indices, strides=None):
    x = ins[0]
    st = strides or (1,) * len(x.shape)
    return _view(
        g, x, avals[0].shape, lambda idx: [s + k * v for s, k, v in zip(start_indices, st, idx)]
    )


def _in_range(idx_e, lo, hi):
    return Op(
        dtypes.bool_,
        "and",
        (
            Op(dtypes.bool_, "ge", (idx_e, Const(dtypes.int64, lo))),
            Op(dtypes.bool_, "lt", (idx_e, Const(dtypes.int64, hi))),
        ),
    )


def _pad(g, ins, avals, *, padding_config):
    x, pv = ins
    shape = avals[0].shape

    def fn(idx, ctx):
        conds, safe = [], []
        for v, d, (lo, hi, it) in zip(idx, x.shape, padding_config):
            rel = v - lo
            if it:
                phase = Idx(dtypes.int64, ModI(rel + (it + 1) * d, it + 1))
                conds.append(Op(dtypes.bool_, "eq", (phase, Const(dtypes.int64, 0))))
                q = FloorDiv(rel + (it + 1) * d, it + 1) - d
                conds.append(_in_range(Idx(dtypes.int64, q), 0, d))
                safe.append(guard_clamp(q, 0, d - 1))
                continue
            # without interior padding the source index leaves [0, d) only on a padded side
            # (negative padding crops): test and clamp just those sides
            q = rel
            if lo > 0:
                conds.append(Op(dtypes.bool_, "ge", (Idx(dtypes.int64, q), Const(dtypes.int64, 0))))
                q = guard_clamp(q, lo=0)
            if hi > 0:
                conds.append(
                    Op(dtypes.bool_, "lt", (Idx(dtypes.int64, rel), Const(dtypes.int64, d)))
                )
                q = guard_clamp(q, hi=d - 1)
            safe.append(q)
        val = x.load(safe, ctx) if x.size else Const(x.dtype, 0)
        if not conds:
            return val
        cond = conds[0]
        for c in conds[1:]:
            cond = Op(dtypes.bool_, "and", (cond, c))
        return Op(x.dtype, "select", (cond, val, pv.load((), ctx)))

    return _pw(g, shape, avals[0].dtype, fn, ins)


def _concatenate(g, ins, avals, *, dimension):
    shape = avals[0].shape

    def fn(idx, ctx):
        offs = np.cumsum([0] + [x.shape[dimension] for x in ins])
        out = None
        for k in range(len(ins) - 1, -1, -1):
            x = ins[k]
            if x.shape[dimension] == 0:
                continue
            sub = list(idx)
            sub[dimension] = guard_clamp(idx[dimension] - int(offs[k]), 0, x.shape[dimension] - 1)
            val = x.load(sub, ctx)
            if out is None:
                out = val
            else:
                cond = Op(
                    dtypes.bool_,
                    "lt",
                    (Idx(dtypes.int64, idx[dimension]), Const(dtypes.int64, int(offs[k + 1]))),
                )
                out = Op(avals[0].dtype, "select", (cond, val, out))
        return out

    return _pw(g, shape, avals[0].dtype, fn, ins)


for _p, _r in [
    (P.broadcast_in_dim_p, _broadcast_in_dim),
    (P.transpose_p, _transpose),
    (P.squeeze_p, _squeeze),
    (P.expand_dims_p, _expand_dims),
    (P.reshape_p, _reshape),
    (P.rev_p, _rev),
    (P.slice_p, _slice),
    (P.pad_p, _pad),
    (P.concatenate_p, _concatenate),
]:
    lowerings[_p] = _r


# --- data-dependent reads: dynamic_slice, gather -------------------------------------------------
def _clamp_e(e, lo, hi):
    return Op(dtypes.int64, "clamp", (e, Const(dtypes.int64, lo), Const(dtypes.int64, hi)))


def _dynamic_slice(g, ins, avals, *, slice_sizes):
    x, starts = ins[0], ins[1:]

    def fn(idx, ctx):
        off = []
        for v, s, d, n in zip(idx, starts, x.shape, slice_sizes):
            st = _clamp_e(Op(dtypes.int64, "convert", (s.load((), ctx),)), 0, d - n)
            off.append(Op(dtypes.int64, "add", (st, Idx(dtypes.int64, v))))
        ctx.note_read(x)
        return Load(x.dtype, x.buf, _offset_e(off, x.shape))

    node = _pw(g, avals[0].shape, x.dtype, fn, ins)
    node.params["needs_buffer"] = [x]
    return node


def _offset_e(idx_es, shape):
    out = Const(dtypes.int64, 0)
    for e, s in zip(idx_es, strides_of(shape)):
        out = Op(dtypes.int64, "add", (out, Op(dtypes.int64, "mul", (e, Const(dtypes.int64, s)))))
    return out


def _gather(g, ins, avals, *, axes, mode, fill_value=None):
    x, ind = ins
    nb = len(ind.shape) - 1
    rest = [i for i in range(len(x.shape)) if i not in axes]

    def fn(idx, ctx):
        bidx, ridx = list(idx[:nb]), list(idx[nb:])
        full: list = [None] * len(x.shape)
        ok = None
        for c, a in enumerate(axes):
            raw = Op(dtypes.int64, "convert", (ind.load(bidx + [Int(c)], ctx),))
            if mode == "clip":
                full[a] = _clamp_e(raw, 0, max(x.shape[a] - 1, 0))
            else:
                inr = _in_range(raw, 0, x.shape[a])
                ok = inr if ok is None else Op(dtypes.bool_, "and", (ok, inr))
                full[a] = _clamp_e(raw, 0, max(x.shape[a] - 1, 0))
        for a, v in zip(rest, ridx):
            full[a] = Idx(dtypes.int64, v)
        ctx.note_read(x)
        val = Load(x.dtype, x.buf, _offset_e(full, x.shape)) if x.size else Const(x.dtype, 0)
        if mode == "fill":
            fv = P.default_fill(np.dtype(x.dtype)) if fill_value is None else fill_value
            fill = Const(x.dtype, np.asarray(fv).astype(x.dtype)[()])
            val = Op(x.dtype, "select", (ok, val, fill))
        return val

    node = _pw(g, avals[0].shape, x.dtype, fn, ins)
    node.params["needs_buffer"] = [x]
    return node


lowerings[P.dynamic_slice_p] = _dynamic_slice
lowerings[P.gather_p] = _gather


# --- realised nodes ------------------------------------------------------------------------------
def _reduce(name):
    def rule(g, ins, avals, *, axes):
        x = ins[0]
        return g.add(
            Node(
                avals[0].shape,
                avals[0].dtype,
                kind="reduce",
                inputs=[x],
                params={"op": name, "axes": tuple(axes), "operand": x},
            )
        )

    return rule


for _name in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod", "reduce_and", "reduce_or"):
    lowerings[P.registry[_name]] = _reduce(_name)


def _argreduce(name):
    def rule(g, ins, avals, *, axes, index_dtype):
        x = ins[0]
        return g.add(
            Node(
                avals[0].shape,
                index_dtype,
                kind="reduce",
                inputs=[x],
                params={"op": name, "axes": tuple(axes), "operand": x},
            )
        )

    return rule


lowerings[P.argmax_p] = _argreduce("argmax")
lowerings[P.argmin_p] = _argreduce("argmin")


def _dot_general(g, ins, avals, *, dimension_numbers, preferred_element_type=None, precision=None):
    lhs, rhs = ins
    (lc, rc), (lb, rb) = dimension_numbers
    out = avals[0]
    if math.prod(lhs.shape[i] for i in lc) == 1:
        # Nothing (or a size-1 axis) to contract: an outer product per batch, i.e. an elementwise
        # multiply of views, which fuses with its producers and consumers.
        lf = [i for i in range(len(lhs.shape)) if i not in lb and i not in lc]
        rf = [i for i in range(len(rhs.shape)) if i not in rb and i not in rc]
        nb = len(lb)

        def fn(idx, ctx):
            li, ri = [Int(0)] * len(lhs.shape), [Int(0)] * len(rhs.shape)
            for k, (a, b) in enumerate(zip(lb, rb)):
                li[a] = ri[b] = idx[k]
            for k, a in enumerate(lf):
                li[a] = idx[nb + k]
            for k, b in enumerate(rf):
                ri[b] = idx[nb + len(lf) + k]
            la, ra = lhs.load(li, ctx), rhs.load(ri, ctx)
            if out.dtype != lhs.dtype:
                la = Op(out.dtype, "convert", (la,))
                ra = Op(out.dtype, "convert", (ra,))
            return Op(out.dtype, "mul", (la, ra))

        return _pw(g, out.shape, out.dtype, fn, ins)
    nb = len(lb)
    lf = [i for i in range(len(lhs.shape)) if i not in lc and i not in lb]
    rf = [i for i in range(len(rhs.shape)) if i not in rc and i not in rb]
    if not lb and len(lc) == 1 and out.dtype == lhs.dtype and _is_identity(g, rhs, rc[0], rf):
        # x @ I (jacfwd pushes the identity's columns through a product): x itself
        wide = next(k for k, a in enumerate(rf) if rhs.shape[a] != 1)
        return _view(
            g,
            lhs,
            out.shape,
            lambda idx: [
                idx[len(lf) + wide] if a == lc[0] else idx[lf.index(a)]
                for a in range(len(lhs.shape))
            ],
        )
    # Pair contracting dimensions in the left operand's axis order.
    order = np.argsort(lc)
    lc_s = [lc[i] for i in order]
    rc_s = [rc[i] for i in order]
    a, ta = _blas_operand(g, lhs, list(lb), lf, lc_s)
    b, tb = _blas_operand(g, rhs, list(rb), rc_s, rf)
    return g.add(
        Node(
            out.shape,
            out.dtype,
            kind="dot",
            inputs=[a, b],
            params={
                "lhs": a,
                "rhs": b,
                "lhs_trans": ta,
                "rhs_trans": tb,
                "batch": math.prod(lhs.shape[i] for i in lb),
                "m": math.prod(lhs.shape[i] for i in lf),
                "k": math.prod(lhs.shape[i] for i in lc),
                "n": math.prod(rhs.shape[i] for i in rf),
                "precision": precision,
            },
        )
    )


def _is_identity(g, x, contract: int, free: list) -> bool:
    """Whether ``x`` is a constant identity matrix between its axis ``contract`` and its one
    free axis longer than 1 (its other free axes of length 1): a program constant read
    directly or through views, up to 4096 elements (checked element by element)."""
    wide = [a for a in free if x.shape[a] != 1]
    if len(wide) != 1 or x.shape[wide[0]] != x.shape[contract] or x.size > 4096:
        return False
    consts = {n.id: arr for n, arr in g.consts}
    ivars = tuple(sym(f"i{d}") for d in range(len(x.shape)))
    src, off = _through_views(x) or (x, flat_offset(ivars, x.shape))
    if src.id not in consts or not off.free_symbols <= set(ivars):
        return False
    if off.has(intexpr.FloorDiv, intexpr.ModI, intexpr.Guard, intexpr.IMax, intexpr.IMin):
        return False  # (affine in the indices: no floor or modulo)
    grid = np.indices(x.shape).reshape(len(x.shape), -1)
    env = {v.name: g for v, g in zip(ivars, grid)}
    flat = intexpr.evaluate(off, env) * np.ones(grid.shape[1], np.int64)
    vals = np.asarray(consts[src.id]).reshape(-1)[flat].reshape(x.shape)
    m = np.moveaxis(vals, (contract, wide[0]), (0, 1)).reshape(x.shape[contract], -1)
    return bool(np.array_equal(m, np.eye(x.shape[contract], dtype=m.dtype)))


_BUFFERED = ("input", "reduce", "dot", "scatter", "dus")


_DOT_PARAMS = {"lhs", "rhs", "lhs_trans", "rhs_trans", "batch", "m", "k", "n", "precision"}


def _same_order_source(x):
    """The node whose elements ``x`` holds in the same order, or None (the overlapped psum's
    operands, functx/control/collectives.py, are reduced from that node)."""
    if x.kind != "pointwise" or x.fn is None or len(x.inputs) != 1:
        return None
    s = x.inputs[0]
    if s.size != x.size or np.dtype(s.dtype) != np.dtype(x.dtype):
        return None
    ivars = tuple(sym(f"i{d}") for d in range(len(x.shape)))
    e = x.fn(ivars, _Reads())
    return (
        s
        if isinstance(e, Load) and e.buf == f"n{s.id}" and reads_in_order(e, ivars, x.shape)
        else None
    )


class _ThroughViews(_Reads):
    """A context that inlines the nodes ``views`` (ids of views: nodes whose element is one
    element of their single input, as transposes, reshapes and unit axes make) and reads every
    other node as a load of its own: a chain of views' element as a load of the node under it."""

    def __init__(self, views):
        self.views = views

    def lookup(self, node, idx):
        return None if node.id in self.views else super().lookup(node, idx)

    def inlines(self, node):
        return True


def _is_view(x) -> bool:
    if x.kind != "pointwise" or x.fn is None or len(x.inputs) != 1 or x.params.get("realize"):
        return False
    ivars = tuple(sym(f"i{d}") for d in range(len(x.shape)))
    e = x.fn(ivars, _Reads())
    return isinstance(e, Load) and e.buf == f"n{x.inputs[0].id}" and not isinstance(e.offset, E)


def _through_views(x):
    """``(source, offset)``: the node under ``x``'s chain of views and the flat offset in it of
    ``x``'s element at ``i0, i1, ...`` (None when ``x`` is no view or the chain is not one
    load)."""
    chain = [x]
    while _is_view(chain[-1]):
        chain.append(chain[-1].inputs[0])
    if len(chain) == 1:
        return None
    ivars = tuple(sym(f"i{d}") for d in range(len(x.shape)))
    e = x.fn(ivars, _ThroughViews({n.id for n in chain[:-1]}))
    src = chain[-1]
    if not isinstance(e, Load) or isinstance(e.offset, E) or e.buf != f"n{src.id}":
        return None
    return src, ix(e.offset)


def _layout(x, batch, first, second):
    """``(source, transposed)`` when the elements of ``x`` (through any chain of views) lie in one
    node's buffer in (batch, first, second) order, or (batch, second, first) when
    ``transposed``; else None. Unit axes do not count."""
    orders = ((False, batch + first + second), (True, batch + second + first))
    found = _through_views(x)
    if found is not None and found[0].size == x.size:
        src, off = found
        ivars = tuple(sym(f"i{d}") for d in range(len(x.shape)))
        unit = {v: 0 for v, d in zip(ivars, x.shape) if d == 1}
        off = off.subs(unit)
        for trans, order in orders:
            want = flat_offset([ivars[a] for a in order], [x.shape[a] for a in order])
            if want.subs(unit) == off:
                return src, trans
    # x's own buffer (stored, if it is a view: its elements in its own order)
    keep = [a for a in range(len(x.shape)) if x.shape[a] != 1]
    return next(((x, t) for t, o in orders if [a for a in o if a in keep] == keep), None)


def _blas_operand(g, x, batch, first, second):
    """An operand laid out as (batch, first, second) -- or (batch, second, first), transposed --
    in a buffer: when ``x``'s elements already lie in one node's buffer in one of these orders,
    through any chain of transposes and reshapes (``x @ w.T`` reads ``w`` in place, and so does
    a product of the transposed gradient of a ``vmap`` of ``jacfwd``), that node (stored, if it
    is pointwise); else a realised copy."""
    found = _layout(x, batch, first, second)
    if found is not None:
        src, trans = found
        if src.kind in _BUFFERED:
            return src, trans
        if src.kind == "pointwise" and src.fn is not None:
            src.params["realize"] = True  # stored once, for the product and any other reader
            return src, trans
    nd = len(x.shape)
    perm = batch + first + second
    shape = tuple(x.shape[i] for i in perm)
    inv = np.argsort(perm)
    node = _view(g, x, shape, lambda idx: [idx[inv[i]] for i in range(nd)])
    node.params["realize"] = True
    return node, False


lowerings[P.dot_general_p] = _dot_general


def _scatter(name):
    def rule(g, ins, avals, *, axes, mode):
        x, ind, upd = ins
        return g.add(
            Node(
                x.shape,
                x.dtype,
                kind="scatter",
                inputs=[x, ind, upd],
                params={
                    "op": name,
                    "axes": axes,
                    "mode": mode,
                    "operand": x,
                    "indices": ind,
                    "updates": upd,
                },
            )
        )

    return rule


for _name in ("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"):
    lowerings[P.registry[_name]] = _scatter(_name)


def _dynamic_update_slice(g, ins, avals):
    x, upd, starts = ins[0], ins[1], ins[2:]
    return g.add(
        Node(
            x.shape,
            x.dtype,
            kind="dus",
            inputs=[x, upd] + list(starts),
            params={"operand": x, "update": upd, "starts": list(starts)},
        )
    )


lowerings[P.dynamic_update_slice_p] = _dynamic_update_slice


def lanewise_expr(e, ins: list):
    """The element expression of one lane-wise equation ``e`` (an elementwise, compare,
    ``select_n`` or ``convert_element_type`` equation; ``broadcast_in_dim`` and
    ``stop_gradient`` pass their operand through) on its operands' element expressions
    ``ins``."""
    out_dt = e.outvars[0].aval.dtype
    name = e.prim.name
    if e.prim.group in ("unary", "binary", "compare", "bitwise"):
        return Op(out_dt, name, tuple(ins) + tuple(sorted(e.params.items())))
    if name == "select_n":
        w, cases = ins[0], ins[1:]
        if len(cases) == 1:
            return cases[0]
        if e.invars[0].aval.dtype == dtypes.bool_:
            return Op(out_dt, "select", (w, cases[1], cases[0]))
        val = cases[-1]
        for k in range(len(cases) - 2, -1, -1):
            val = Op(
                out_dt,
                "select",
                (Op(dtypes.bool_, "le", (w, Const(w.dtype, k))), cases[k], val),
            )
        return val
    if name == "convert_element_type":
        return Op(out_dt, "convert", (ins[0],)) if ins[0].dtype != out_dt else ins[0]
    if name in ("broadcast_in_dim", "stop_gradient"):
        return ins[0]
    raise UnsupportedError(f"jit: '{name}' in a lane-wise scan combine{where(e.source_info)}")


def lanewise_exprs(combine: ClosedJaxpr, inputs: list) -> list:
    """Evaluate a lane-wise combine Jaxpr on scalar element expressions."""
    env = {}
    j = combine.jaxpr
    for v, e in zip(j.invars, inputs):
        env[v.id] = e

    def read(a):
        if type(a) is Literal:
            return Const(a.aval.dtype, np.asarray(a.val, a.aval.dtype)[()])
        return env[a.id]

    for e in j.eqns:
        env[e.outvars[0].id] = lanewise_expr(e, [read(a) for a in e.invars])
    return [read(a) for a in j.outvars]
