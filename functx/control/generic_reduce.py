"""``functx.lax.reduce``: a reduction with a user-supplied associative (and commutative) combine.

``reduce(operands, init_values, computation, dimensions)`` follows JAX: ``computation`` combines two
tuples of scalars. A computation that is plain addition, multiplication, max, min, and, or on a
single operand with its identity as the initial value becomes ``reduce_sum`` & co. (so it
differentiates, as JAX's does), and so does one that is such an op on each of several operands
separately (a pair of sums, a sum and a max); anything else records one ``reduce`` equation whose
combine is a traced Jaxpr on scalars; it differentiates as JAX's does (``_jvp``: the jvp of a
halving tree of combines, so an argmax written as (value, index) pairs passes the tangent of the
element it selects). Eagerly it runs O(log n) vectorised passes (halving the
reduced axis); ``jit`` lowers it (``_lowering`` below) to one fused loop with the combine inlined,
like the built-in reductions.
"""

from __future__ import annotations

import operator

import numpy as np

from functx import dtypes, ops, primitives as P
from functx.control.common import jvp_closed
from functx.core import ClosedJaxpr, Jaxpr, Primitive, ShapedArray, same_type
from functx.errors import FunctxTypeError, FunctxValueError, UnsupportedError
from functx.interpreter import eval_jaxpr
from functx.lowering.rules import lowerings
from functx.source_info import where
from functx.tracing import get_aval, trace_flat, tree_flatten, tree_unflatten
from functx.transforms import jvp as J, vmap as V

reduce_p = Primitive("reduce", multiple_results=True, group="generic_reduce")
P.registry["reduce"] = reduce_p


def _abstract_eval(*args, computation, dimensions):
    n = len(args) // 2
    operands, inits = args[:n], args[n:]
    for o in operands[1:]:
        if o.shape != operands[0].shape:
            raise FunctxTypeError(
                "reduce: operands must have equal shapes, got "
                + ", ".join(o.str_short() for o in operands)
            )
    for o, i in zip(operands, inits):
        if i.shape != () or i.dtype != o.dtype:
            raise FunctxTypeError(
                f"reduce: init value {i.str_short()} must be a scalar of the "
                f"operand's dtype {o.str_short()}"
            )
    for d in dimensions:
        if not 0 <= d < operands[0].ndim:
            raise FunctxTypeError(
                f"reduce: dimension {d} is out of range for {operands[0].str_short()}"
            )
    shape = tuple(s for i, s in enumerate(operands[0].shape) if i not in dimensions)
    return [ShapedArray(shape, o.dtype) for o in operands]


reduce_p.abstract_eval = _abstract_eval


def _apply(computation, a, b):
    """The combine applied elementwise to arrays (a vmap of the scalar computation)."""
    shape = np.shape(a[0])
    fn = lambda *xs: eval_jaxpr(computation.jaxpr, computation.consts, *xs)  # noqa: E731
    flat_a = [np.reshape(x, (-1,)) for x in a]
    flat_b = [np.reshape(x, (-1,)) for x in b]
    if flat_a[0].size == 0:
        return [np.reshape(x, shape) for x in a]
    out = V.vmap(fn)(*flat_a, *flat_b)
    return [np.reshape(np.asarray(o), shape) for o in out]


def _impl(*args, computation, dimensions):
    n = len(args) // 2
    operands, inits = [np.asarray(a) for a in args[:n]], [np.asarray(a) for a in args[n:]]
    keep = [i for i in range(operands[0].ndim) if i not in dimensions]
    rest = tuple(operands[0].shape[i] for i in keep)
    m = int(np.prod([operands[0].shape[i] for i in dimensions], dtype=np.int64))
    xs = [np.transpose(o, keep + list(dimensions)).reshape(rest + (m,)) for o in operands]
    acc = [np.broadcast_to(i, rest).copy() for i in inits]
    while xs[0].shape[-1] > 1:
        k = xs[0].shape[-1]
        half = k // 2
        lo = [x[..., :half] for x in xs]
        hi = [x[..., half : 2 * half] for x in xs]
        comb = _apply(computation, lo, hi)
        if k % 2:
            comb = [np.concatenate([c, x[..., -1:]], -1) for c, x in zip(comb, xs)]
        xs = comb
    if xs[0].shape[-1] == 1:
        acc = _apply(computation, acc, [x[..., 0] for x in xs])
    return [np.asarray(a).astype(o.dtype) for a, o in zip(acc, operands)]


reduce_p.impl = _impl

_MONOIDS = {
    P.add_p: ("reduce_sum", 0),
    P.mul_p: ("reduce_prod", 1),
    P.max_p: ("reduce_max", None),
    P.min_p: ("reduce_min", None),
    P.and_p: ("reduce_and", None),
    P.or_p: ("reduce_or", None),
}


def _monoid(closed: ClosedJaxpr, init, dtype):
    """The built-in reduction ``closed`` is, if it is one binary op of its two arguments and
    ``init`` is that op's identity."""
    j = closed.jaxpr
    if len(j.eqns) != 1 or len(j.invars) != 2 or closed.consts:
        return None
    e = j.eqns[0]
    if e.prim not in _MONOIDS or [v.id for v in e.invars if hasattr(v, "id")] not in (
        [j.invars[0].id, j.invars[1].id],
        [j.invars[1].id, j.invars[0].id],
    ):
        return None
    if j.outvars[0] is not e.outvars[0]:
        return None
    name, ident = _MONOIDS[e.prim]
    try:
        val = np.asarray(init)
    except Exception:  # noqa: BLE001 - a traced init value
        return None
    if name in ("reduce_max", "reduce_min"):
        if np.dtype(dtype) in dtypes.FLOATS:
            ident = -np.inf if name == "reduce_max" else np.inf
        elif np.dtype(dtype) == dtypes.bool_:
            ident = name == "reduce_min"
        else:
            info = np.iinfo(dtype)
            ident = info.min if name == "reduce_max" else info.max
    elif name == "reduce_and":
        ident = True if np.dtype(dtype) == dtypes.bool_ else -1
    elif name == "reduce_or":
        ident = False if np.dtype(dtype) == dtypes.bool_ else 0
    if val.shape != () or val.astype(dtype) != np.asarray(ident).astype(dtype):
        return None
    return P.registry[name]


def _componentwise_monoids(closed: ClosedJaxpr, inits, avals):
    """For a combine of k operands whose output i is one built-in monoid of its inputs i and
    k + i alone (a pair of sums, a sum and a max, ...), the k built-in reductions; else None.
    Such a reduce is then k independent reductions, which differentiate like JAX's."""
    j = closed.jaxpr
    k = len(avals)
    if closed.consts or len(j.eqns) != k or len(j.outvars) != k:
        return None
    made = {id(v): e for e in j.eqns for v in e.outvars}
    prims = []
    for i, out in enumerate(j.outvars):
        e = made.get(id(out))
        if e is None:
            return None
        one = ClosedJaxpr(Jaxpr([], [j.invars[i], j.invars[k + i]], [e], [out]), [])
        prim = _monoid(one, inits[i], avals[i].dtype)
        if prim is None:
            return None
        prims.append(prim)
    return prims


def reduce(operands, init_values, computation, dimensions):  # noqa: A001
    """Reduce ``operands`` over ``dimensions`` with ``computation`` (``jax.lax.reduce``).

    Arguments:
      operands: an array or a pytree of arrays of one shape.
      init_values: the identity of ``computation``: a scalar, or a pytree of scalars matching
        ``operands``.
      computation: a function ``(acc, x) -> acc`` of two values of the operands' structure
        (a monoid; JAX's recognized ones, such as ``lax.add`` with 0, become reduce_sum etc.).
      dimensions: the axes to reduce.
    Returns:
      An array (or pytree) of the operands' dtypes without the reduced axes.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.reduce(np.float32([[1, 2], [3, 4]]), np.float32(0), lax.add, (0,))
      Array([4., 6.], dtype=float32)
      >>> lax.reduce(np.int32([[1, 5], [7, 2]]), np.int32(0), lambda a, b: lax.max(a, b), (1,))
      Array([5, 7], dtype=int32)
    """
    flat_ops, tree = tree_flatten(operands)
    flat_init, init_tree = tree_flatten(init_values)
    if tree != init_tree:
        raise FunctxTypeError(
            f"reduce: operands and init_values must have the same structure, "
            f"got {tree} and {init_tree}{where()}"
        )
    if not callable(computation):
        raise FunctxTypeError(
            f"reduce: computation must be callable, got {type(computation).__name__}{where()}"
        )
    if not flat_ops:
        raise FunctxTypeError(f"reduce needs at least one operand{where()}")
    nd = get_aval(flat_ops[0]).ndim
    try:
        dims = [operator.index(d) for d in dimensions]
    except TypeError:
        raise FunctxTypeError(
            f"reduce: dimensions must be a sequence of ints, got {dimensions!r}{where()}"
        ) from None
    if any(not -nd <= d < nd for d in dims) or len({d % nd for d in dims}) != len(dims):
        raise FunctxValueError(
            f"reduce: dimensions {tuple(dims)} are out of range or repeated "
            f"for {get_aval(flat_ops[0]).str_short()}{where()}"
        )
    dims = tuple(sorted(d % nd for d in dims))
    avals = [ShapedArray((), get_aval(o).dtype) for o in flat_ops]
    box = {}

    def flat(*xs):
        k = len(avals)
        out = computation(tree_unflatten(tree, list(xs[:k])), tree_unflatten(tree, list(xs[k:])))
        leaves, t = tree_flatten(out)
        box["tree"] = t
        return leaves, None

    closed, _ = trace_flat(flat, avals + avals)
    if box["tree"] != tree or not all(same_type(a, b) for a, b in zip(closed.out_avals, avals)):
        raise FunctxTypeError(
            f"reduce: the computation must return the structure and scalar "
            f"types of its inputs, {[a.str_short() for a in avals]}; got "
            f"{[a.str_short() for a in closed.out_avals]}{where()}"
        )
    if len(flat_ops) == 1:
        prim = _monoid(closed, flat_init[0], avals[0].dtype)
        if prim is not None:
            return tree_unflatten(tree, [prim.bind(flat_ops[0], axes=dims)])
    else:
        prims = _componentwise_monoids(closed, flat_init, avals)
        if prims is not None:
            outs = [p.bind(o, axes=dims) for p, o in zip(prims, flat_ops)]
            return tree_unflatten(tree, outs)
    j = closed.jaxpr
    comp = ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.eqns, j.outvars), [])
    if closed.consts:
        raise FunctxTypeError(f"reduce: the computation must not close over arrays{where()}")
    inits = [ops.convert_element_type(i, a.dtype) for i, a in zip(flat_init, avals)]
    outs = reduce_p.bind(*flat_ops, *inits, computation=comp, dimensions=dims)
    return tree_unflatten(tree, outs)


def _jvp(primals, tangents, *, computation, dimensions):
    """The jvp of a reduce with a general combine (an argmax written as (value, index) pairs
    with a select, a product paired with a sum, ...): the jvp of a tree reduction that halves the
    reduced axis (pairing element i with element i + ceil(k/2), the odd tail paired with the
    init value), as JAX's rule does, so a tie picks the element JAX's derivative picks. Outputs
    that are integers get no tangent; a nonzero tangent of an init value is unsupported."""
    n = len(primals) // 2
    xs, inits = list(primals[:n]), list(primals[n:])
    if any(not isinstance(t, J.Zero) for t in tangents[n:]):
        raise UnsupportedError(
            f"Gradient of general lax.reduce with non-zero tangents for initial values to "
            f"reduction not implemented{where()}"
        )
    avals = [get_aval(x) for x in xs]
    nz = [not isinstance(t, J.Zero) and J.is_differentiable(a) for t, a in zip(tangents, avals)]
    if not any(nz):
        outs = reduce_p.bind(*primals, computation=computation, dimensions=dimensions)
        return outs, [J.Zero(J.tangent_aval(get_aval(o))) for o in outs]
    while True:  # outputs that get a tangent from the combine carry one on the next level
        jaxpr, consts, out_nz = jvp_closed(computation, nz + nz, nz)
        grown = [a or b for a, b in zip(nz, out_nz)]
        if grown == nz:
            break
        nz = grown
    shape = avals[0].shape
    keep = [i for i in range(len(shape)) if i not in dimensions]
    rest = tuple(shape[i] for i in keep)
    m = int(np.prod([shape[i] for i in dimensions], dtype=np.int64))

    def rows(x, dtype):  # the reduced axes first, as one (no reshape for one reduced axis)
        x = J.instantiate(x) if isinstance(x, J.Zero) else x
        x = ops.convert_element_type(x, dtype) if get_aval(x).dtype != dtype else x
        perm = list(dimensions) + keep
        x = ops.transpose(x, perm) if perm != list(range(len(shape))) else x
        return ops.reshape(x, (m, *rest)) if len(dimensions) != 1 else x

    ps = [rows(x, a.dtype) for x, a in zip(xs, avals)]
    ts = [rows(t, a.dtype) for t, a, z in zip(tangents[:n], avals, nz) if z]
    t_inits = [ops.full((), 0, a.dtype) for a, z in zip(avals, nz) if z]
    p_inits = [ops.convert_element_type(i, a.dtype) for i, a in zip(inits, avals)]
    fn = lambda *args: eval_jaxpr(jaxpr.jaxpr, consts, *args)  # noqa: E731
    for _ in range(len(rest) + 1):  # elementwise over every axis: no reshapes to flatten
        fn = V.vmap(fn)
    while m > 1:
        m1 = m // 2 + m % 2
        cfg = [(0, 1, 0)] + [(0, 0, 0)] * len(rest)

        def halves(arrs, fills):
            lo = [ops.slice_in_dim(a, 0, m1, axis=0) for a in arrs]
            hi = [ops.slice_in_dim(a, m1, m, axis=0) for a in arrs]
            if m % 2:
                hi = [ops.pad(h, f, cfg) for h, f in zip(hi, fills)]
            return lo, hi

        (pa, pb), (ta, tb) = halves(ps, p_inits), halves(ts, t_inits)
        if 0 in rest:
            outs = pa + ta
        else:
            outs = fn(*pa, *pb, *ta, *tb)
        ps, ts = list(outs[:n]), list(outs[n:])
        m = m1
    if m == 0:
        outs = [ops.broadcast_in_dim(i, rest, ()) for i in p_inits]
        touts = [J.Zero(J.tangent_aval(ShapedArray(rest, a.dtype))) for a in avals]
        return outs, touts
    outs = [ops.squeeze(p, (0,)) for p in ps]
    it = iter(ts)
    touts = [
        ops.squeeze(next(it), (0,)) if z else J.Zero(J.tangent_aval(ShapedArray(rest, a.dtype)))
        for a, z in zip(avals, nz)
    ]
    return outs, touts


J.jvp_rules[reduce_p] = _jvp


def _batch(args, dims, *, computation, dimensions):
    n = len(args) // 2
    size = V.axis_size_of(args, dims)
    operands = [V.bdim_at_front(a, d, size) for a, d in zip(args[:n], dims[:n])]
    inits = args[n:]
    if any(d is not None for d in dims[n:]):
        raise UnsupportedError(f"vmap of reduce with batched init values{where()}")
    new_dims = tuple(d + 1 for d in dimensions)
    outs = reduce_p.bind(*operands, *inits, computation=computation, dimensions=new_dims)
    return outs, [0] * n


V.batching_rules[reduce_p] = _batch


def _lowering(g, ins, avals, *, computation, dimensions):
    """jit: ``greduce`` nodes, one fused loop per row with the combine inlined by the backend."""
    # imported here, when jit lowers: the loop IR (0.1 s of import), which `import functx`
    # must not (tests/lowering/test_program_cache.py)
    from functx.lowering.loopir import Node

    n = len(ins) // 2
    group = {
        "ops": ins[:n],
        "inits": ins[n:],
        "computation": computation,
        "axes": tuple(dimensions),
        "outs": [],
    }
    outs = []
    for a in avals:
        node = g.add(
            Node(a.shape, a.dtype, kind="greduce", inputs=list(ins), params={"group": group})
        )
        group["outs"].append(node)
        outs.append(node)
    return outs


lowerings[reduce_p] = _lowering

__all__ = ["reduce", "reduce_p"]
