"""``associative_scan`` as a primitive, with its rules in every transform.

``associative_scan(fn, elems, reverse=False, axis=0)`` traces ``fn`` once on single elements (the
scan axis removed) into a *combine* Jaxpr and records one ``associative_scan`` equation, so that a
backend can emit one scan kernel for it.

* Eager: O(log n) vectorised passes (the odd/even ladder below), never a loop over the sequence.
* jvp of a *lane-wise* combine (every output element depends only on the same element of its
  inputs: add, mul, max, logaddexp, the linear recurrence, a Welford merge, ...): the tangent obeys
  an affine recurrence ``dy_i = A_i dy_{i-1} + B_i dx_i`` whose coefficients come from the combine's
  jvp. It is emitted as an associative_scan over affine maps ``(A, b)``; ``A`` is a small per-lane
  matrix whose sparsity is known statically (symbolic zeros), e.g. diagonal for the linear
  recurrence. Its transpose is the same scan run backwards with ``A`` transposed and shifted, so
  the gradient of a lane-wise scan is made of scans of the same length (Mamba's backward pass).
* jvp of any other combine: the jvp of the O(log n) ladder (correct, not a single scan).
* Lowering (``jit``): a lane-wise combine becomes one scan kernel; any other, the ladder.
"""

from __future__ import annotations

import functools

import numpy as np

from functx import ops, primitives as P
from functx.array import Array
from functx.core import ClosedJaxpr, Jaxpr, Primitive, ShapedArray, same_type
from functx.errors import FunctxTypeError, FunctxValueError, UnsupportedError
from functx.interpreter import eval_jaxpr
from functx.lowering.rules import lowerings
from functx.source_info import where
from functx.tracing import get_aval, trace_flat, tree_flatten, tree_unflatten
from functx.transforms import jvp as J, transpose as T, vmap as V

associative_scan_p = Primitive("associative_scan", multiple_results=True, group="scan")
P.registry["associative_scan"] = associative_scan_p


def _elem_aval(a: ShapedArray, axis: int) -> ShapedArray:
    return ShapedArray(a.shape[:axis] + a.shape[axis + 1 :], a.dtype)


def _abstract_eval(*args, combine, num_consts, axis, reverse, affine):
    xs = args[num_consts:]
    if not xs:
        raise FunctxTypeError("associative_scan needs at least one array")
    n = {x.shape[axis] if x.ndim > axis else None for x in xs}
    if None in n or len(n) != 1:
        raise FunctxTypeError(
            f"associative_scan: all elems must share the scan axis {axis}, got "
            + ", ".join(x.str_short() for x in xs)
        )
    want = [_elem_aval(x, axis) for x in xs]
    got = combine.out_avals
    if len(got) != len(want) or not all(same_type(a, b) for a, b in zip(got, want)):
        raise FunctxTypeError(
            "associative_scan: the combine function must return one element of "
            f"the same type: expected {[a.str_short() for a in want]}, got "
            f"{[a.str_short() for a in got]}"
        )
    return [x.update(weak_type=False) for x in xs]


associative_scan_p.abstract_eval = _abstract_eval


# --- the O(log n) ladder -------------------------------------------------------------------------
def _combine_over_axis(combine: ClosedJaxpr, consts, a, b, axis):
    """Apply the element-wise combine to every pair along ``axis`` (a vmap of the combine)."""
    k = len(a)
    fn = _combine_fun(combine, len(consts))
    return V.vmap(fn, in_axes=(None, axis, axis), out_axes=axis)(list(consts), list(a), list(b))[:k]


@functools.lru_cache(maxsize=256)
def _combine_fun_cached(combine, nc):
    def fn(consts, a, b):
        return eval_jaxpr(combine.jaxpr, combine.consts, *consts, *a, *b)

    return fn


def _combine_fun(combine, nc):
    return _combine_fun_cached(combine, nc)


def _slice(x, start, stop, step, axis):
    return ops.slice_in_dim(x, start, stop, step, axis)


def ladder(combine: ClosedJaxpr, consts, xs, axis):
    """Inclusive scan along ``axis`` with O(log n) levels of combines over strided slices."""
    n = get_aval(xs[0]).shape[axis]
    if n < 2:
        return list(xs)
    a = [_slice(x, 0, n - 1, 2, axis) for x in xs]
    b = [_slice(x, 1, n, 2, axis) for x in xs]
    odd = ladder(combine, consts, _combine_over_axis(combine, consts, a, b, axis), axis)
    m = (n - 1) // 2
    if m:
        rest = _combine_over_axis(
            combine,
            consts,
            [_slice(o, 0, m, 1, axis) for o in odd],
            [_slice(x, 2, n, 2, axis) for x in xs],
            axis,
        )
        even = [ops.concatenate([_slice(x, 0, 1, 1, axis), r], axis) for x, r in zip(xs, rest)]
    else:
        even = [_slice(x, 0, 1, 1, axis) for x in xs]
    return [_interleave(e, o, axis) for e, o in zip(even, odd)]


def _interleave(even, odd, axis):
    ea, oa = get_aval(even), get_aval(odd)
    ne, no = ea.shape[axis], oa.shape[axis]
    if no < ne:
        cfg = [(0, 0, 0)] * oa.ndim
        cfg[axis] = (0, ne - no, 0)
        odd = ops.pad(odd, ops.full((), 0, oa.dtype), cfg)
    e = ops.expand_dims(even, (axis + 1,))
    o = ops.expand_dims(odd, (axis + 1,))
    both = ops.concatenate([e, o], axis + 1)
    shape = list(ea.shape)
    shape[axis] = 2 * ne
    flat = ops.reshape(both, tuple(shape))
    return _slice(flat, 0, ne + no, 1, axis)


def _take(x, start, stop, step, axis):
    return x[(slice(None),) * axis + (slice(start, stop, step),)]


def _np_ladder(combine, consts, xs, axis):
    """The ladder on NumPy arrays, writing each level's results into strided views of one output
    (no concatenate/pad copies): the eager implementation."""
    n = xs[0].shape[axis]
    if n < 2:
        return [np.array(x) for x in xs]  # (a copy: the caller's array must stay writeable)

    def apply(a, b):
        wrap = [Array._new(v, ShapedArray(v.shape, v.dtype)) for v in a + b]
        outs = _combine_over_axis(combine, consts, wrap[: len(a)], wrap[len(a) :], axis)
        return [np.asarray(o) for o in outs]

    odd = _np_ladder(
        combine,
        consts,
        apply([_take(x, 0, n - 1, 2, axis) for x in xs], [_take(x, 1, n, 2, axis) for x in xs]),
        axis,
    )
    m = (n - 1) // 2
    rest = (
        apply([_take(o, 0, m, 1, axis) for o in odd], [_take(x, 2, n, 2, axis) for x in xs])
        if m
        else [None] * len(xs)
    )
    outs = []
    for x, o, r in zip(xs, odd, rest):
        out = np.empty(x.shape, x.dtype)
        _take(out, 0, 1, 1, axis)[...] = _take(x, 0, 1, 1, axis)
        _take(out, 1, n, 2, axis)[...] = o
        if r is not None:
            _take(out, 2, n, 2, axis)[...] = r
        outs.append(out)
    return outs


def _impl(*args, combine, num_consts, axis, reverse, affine):
    consts = [
        Array._new(np.asarray(c).view(), ShapedArray(np.shape(c), np.asarray(c).dtype))
        for c in args[:num_consts]
    ]
    xs = [np.flip(x, axis) if reverse else np.asarray(x) for x in args[num_consts:]]
    out = _np_ladder(combine, consts, xs, axis)
    if reverse:
        out = [np.flip(o, axis) for o in out]
    return out


associative_scan_p.impl = _impl


# --- the public function -------------------------------------------------------------------------
def associative_scan(fn, elems, reverse: bool = False, axis: int = 0):
    """Inclusive scan of ``elems`` with an associative combine ``fn``
    (``jax.lax.associative_scan``).

    Arguments:
      fn: an associative function ``fn(a, b)`` of two pytrees of ``elems``' structure, elementwise
        over the scan axis (it is called on slices of many elements at once).
      elems: a pytree of arrays sharing the size of the scan axis.
      reverse: scan from the end (result ``i`` combines elements ``i..n-1``, the later elements on
        the left, as in JAX).
      axis: the scan axis.
    Returns:
      A pytree of ``elems``' structure, shapes and dtypes.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.associative_scan(lambda a, b: a + b, np.float32([1, 2, 3, 4]))
      Array([ 1.,  3.,  6., 10.], dtype=float32)
      >>> lax.associative_scan(lambda a, b: a + b, np.float32([1, 2, 3, 4]), reverse=True)
      Array([10.,  9.,  7.,  4.], dtype=float32)
    """
    if not callable(fn):
        raise FunctxTypeError(
            f"associative_scan: fn must be callable, got {type(fn).__name__}{where()}"
        )
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise FunctxTypeError(f"associative_scan: axis must be an integer, got {axis!r}{where()}")
    if not isinstance(reverse, (bool, np.bool_)):
        raise FunctxTypeError(f"associative_scan: reverse must be a bool, got {reverse!r}{where()}")
    return _associative_scan(fn, elems, bool(reverse), int(axis), None)


def _associative_scan(fn, elems, reverse, axis, affine):
    leaves, tree = tree_flatten(elems)
    if not leaves:
        raise FunctxTypeError(f"associative_scan got no arrays to scan{where()}")
    avals = [get_aval(x) for x in leaves]
    nd = avals[0].ndim
    if not -nd <= axis < max(nd, 1) or nd == 0:
        raise FunctxValueError(
            f"associative_scan: axis {axis} is out of range for {avals[0].str_short()}{where()}"
        )
    axis = axis % nd
    sizes = {a.shape[axis] if a.ndim > axis else None for a in avals}
    if len(sizes) != 1 or None in sizes:
        raise FunctxTypeError(
            "associative_scan: array inputs must all have the same size along "
            "the scan axis, got "
            + ", ".join(a.str_short() for a in avals)
            + f" (axis {axis}){where()}"
        )
    elem_avals = [_elem_aval(a, axis) for a in avals]
    box = {}

    def flat(*xs):
        k = len(elem_avals)
        a = tree_unflatten(tree, list(xs[:k]))
        b = tree_unflatten(tree, list(xs[k:]))
        out = fn(a, b)
        out_leaves, out_tree = tree_flatten(out)
        box["tree"] = out_tree
        return out_leaves, None

    closed, _ = trace_flat(flat, elem_avals + elem_avals)
    if box["tree"] != tree:
        raise FunctxTypeError(
            f"associative_scan: the combine function must return the structure "
            f"of its inputs, {tree}; got {box['tree']}{where()}"
        )
    got = closed.out_avals
    if not all(same_type(g, e) for g, e in zip(got, elem_avals)):
        raise FunctxTypeError(
            "associative_scan: the combine function must return elements of the input types "
            f"{[a.str_short() for a in elem_avals]}, got {[a.str_short() for a in got]}{where()}"
        )
    j = closed.jaxpr
    combine = ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.eqns, j.outvars), [])
    leaves = [
        ops.convert_element_type(x, a.dtype) if get_aval(x).weak_type else x
        for x, a in zip(leaves, avals)
    ]
    outs = associative_scan_p.bind(
        *closed.consts,
        *leaves,
        combine=combine,
        num_consts=len(closed.consts),
        axis=axis,
        reverse=bool(reverse),
        affine=affine,
    )
    return tree_unflatten(tree, outs)


# --- lane-wise combines and the affine tangent recurrence ----------------------------------------
_LANEWISE_GROUPS = {"unary", "binary", "compare", "bitwise", "select", "convert"}


def is_lanewise(combine: ClosedJaxpr, num_consts: int) -> bool:
    """Every output element depends only on the same element of the inputs."""
    avals = combine.in_avals[num_consts:]
    shape = avals[0].shape if avals else ()
    if any(a.shape != shape for a in avals):
        return False
    if any(a.shape not in ((), shape) for a in combine.in_avals[:num_consts]):
        return False
    for e in combine.jaxpr.eqns:
        if e.prim.group in _LANEWISE_GROUPS or e.prim is P.stop_gradient_p:
            continue
        if e.prim is P.broadcast_in_dim_p and e.invars[0].aval.shape == ():
            continue
        return False
    return True


def _closure(pattern, k):
    """Close a k x k sparsity pattern under matrix products."""
    pat = set(pattern)
    while True:
        new = {(m, n) for (m, l1) in pat for (l2, n) in pat if l1 == l2} | pat
        if new == pat:
            return tuple(sorted(pat))
        pat = new


def _affine_combine(k, pattern):
    """((A1, b1), (A2, b2)) -> (A2 A1, A2 b1 + b2) on the entries of ``pattern`` (lane-wise)."""
    idx = {e: i for i, e in enumerate(pattern)}

    def combine(first, second):
        a1, b1 = first
        a2, b2 = second
        prod = []
        for m, n in pattern:
            acc = None
            for l in range(k):
                if (m, l) in idx and (l, n) in idx:
                    t = ops.mul(a2[idx[(m, l)]], a1[idx[(l, n)]])
                    acc = t if acc is None else ops.add(acc, t)
            prod.append(acc if acc is not None else ops.full_like(a1[0], 0))
        b = []
        for m in range(k):
            acc = b2[m]
            for l in range(k):
                if (m, l) in idx:
                    acc = ops.add(acc, ops.mul(a2[idx[(m, l)]], b1[l]))
            b.append(acc)
        return prod, b

    return combine


def _coefficient_pattern(combine, num_consts, elem_avals, lanes):
    """Which entries of A = d combine / d (first argument) can be nonzero (symbolic zeros), among
    the differentiable ``lanes``, in local indices."""
    k = len(elem_avals)
    const_avals = combine.in_avals[:num_consts]
    local = {m: i for i, m in enumerate(lanes)}
    pattern = []

    def probe(*args):
        cs, a, b = args[:num_consts], args[num_consts : num_consts + k], args[num_consts + k :]
        for col in lanes:
            ts = [J.Zero(J.tangent_aval(c)) for c in const_avals]
            ts += [
                ops.full_like(a[m], 1) if m == col else J.Zero(J.tangent_aval(elem_avals[m]))
                for m in range(k)
            ]
            ts += [J.Zero(J.tangent_aval(e)) for e in elem_avals]
            _, touts = J.jvp_eval(combine.jaxpr, [], list(cs) + list(a) + list(b), ts)
            pattern.extend(
                (local[m], local[col])
                for m, t in enumerate(touts)
                if m in local and not isinstance(t, J.Zero)
            )
        return [], None

    trace_flat(probe, list(const_avals) + list(elem_avals) + list(elem_avals))
    return tuple(sorted(set(pattern)))


def _lanewise_jvp(primals, tangents, combine, num_consts, axis, reverse, ys):
    """The tangent of a lane-wise scan as an affine scan over its differentiable (float) lanes;
    integer lanes have zero (float0) tangents."""
    consts, xs = list(primals[:num_consts]), list(primals[num_consts:])
    x_avals = [get_aval(x) for x in xs]
    lanes = [m for m, a in enumerate(x_avals) if J.is_differentiable(a)]
    k = len(lanes)
    n = x_avals[0].shape[axis]
    out = [J.Zero(J.tangent_aval(a)) for a in x_avals]
    dxs = [
        ops.full(x_avals[m].shape, 0, x_avals[m].dtype)
        if isinstance(t, J.Zero)
        else J.instantiate(t)
        for m, t in ((m, tangents[num_consts + m]) for m in lanes)
    ]
    if n < 2 or not k:
        for m, t in zip(lanes, dxs):
            out[m] = t
        return out
    elem_avals = [_elem_aval(a, axis) for a in x_avals]
    pattern = _coefficient_pattern(combine, num_consts, elem_avals, lanes)
    closed_pat = _closure(pattern, k)
    # prev: the prefix before position i; cur: x_i. For a reverse scan "before" is i + 1.
    if reverse:
        prev = [_slice(y, 1, n, 1, axis) for y in ys]
        cur = [_slice(x, 0, n - 1, 1, axis) for x in xs]
        dcur = [_slice(t, 0, n - 1, 1, axis) for t in dxs]
    else:
        prev = [_slice(y, 0, n - 1, 1, axis) for y in ys]
        cur = [_slice(x, 1, n, 1, axis) for x in xs]
        dcur = [_slice(t, 1, n, 1, axis) for t in dxs]

    def coefficients(cs, yp, xc, dxc):
        args = list(cs) + list(yp) + list(xc)
        zeros = [J.Zero(J.tangent_aval(get_aval(v))) for v in args]
        entries = {}
        for j, col in enumerate(lanes):
            ts = list(zeros)
            ts[len(cs) + col] = ops.full_like(yp[col], 1)
            _, touts = J.jvp_eval(combine.jaxpr, [], args, ts)
            for i, m in enumerate(lanes):
                if not isinstance(touts[m], J.Zero):
                    entries[(i, j)] = touts[m]
        ts = list(zeros)
        for m, t in zip(lanes, dxc):
            ts[len(cs) + len(yp) + m] = t
        _, b = J.jvp_eval(combine.jaxpr, [], args, ts)
        zero = ops.full_like(yp[lanes[0]], 0)
        a_list = [entries.get(e, zero) for e in closed_pat]
        b_list = [
            J.instantiate(b[m]) if not isinstance(b[m], J.Zero) else ops.full_like(yp[m], 0)
            for m in lanes
        ]
        return a_list, b_list

    a_mid, b_mid = V.vmap(coefficients, in_axes=(None, axis, axis, axis), out_axes=axis)(
        consts, prev, cur, dcur
    )
    first = [_slice(t, n - 1, n, 1, axis) if reverse else _slice(t, 0, 1, 1, axis) for t in dxs]
    zero_a = [ops.full_like(_slice(dxs[0], 0, 1, 1, axis), 0) for _ in closed_pat]
    if reverse:
        a_all = [ops.concatenate([a, z], axis) for a, z in zip(a_mid, zero_a)]
        b_all = [ops.concatenate([b, f], axis) for b, f in zip(b_mid, first)]
    else:
        a_all = [ops.concatenate([z, a], axis) for a, z in zip(a_mid, zero_a)]
        b_all = [ops.concatenate([f, b], axis) for b, f in zip(b_mid, first)]
    _, h = _associative_scan(
        _affine_combine(k, closed_pat), (a_all, b_all), reverse, axis, (k, closed_pat)
    )
    for m, t in zip(lanes, h):
        out[m] = t
    return out


@functools.lru_cache(maxsize=128)
def _ladder_jaxpr(combine, num_consts, axis, reverse, avals):
    def fun(*args):
        consts, xs = list(args[:num_consts]), list(args[num_consts:])
        if reverse:
            xs = [ops.rev(x, (axis,)) for x in xs]
        out = ladder(combine, consts, xs, axis)
        if reverse:
            out = [ops.rev(o, (axis,)) for o in out]
        return out, None

    closed, _ = trace_flat(fun, list(avals))
    return closed


def _jvp_rule(primals, tangents, *, combine, num_consts, axis, reverse, affine):
    const_tangent = any(not isinstance(t, J.Zero) for t in tangents[:num_consts])
    float_dtypes = {
        get_aval(x).dtype for x in primals[num_consts:] if J.is_differentiable(get_aval(x))
    }
    if const_tangent or len(float_dtypes) > 1 or not is_lanewise(combine, num_consts):
        # The affine tangent recurrence needs a lane-wise combine of one float dtype that does not
        # depend on a differentiated closed-over value; otherwise differentiate the ladder.
        closed = _ladder_jaxpr(
            combine, num_consts, axis, reverse, tuple(get_aval(p) for p in primals)
        )
        return J.jvp_eval(closed.jaxpr, closed.consts, list(primals), list(tangents))
    ys = associative_scan_p.bind(
        *primals, combine=combine, num_consts=num_consts, axis=axis, reverse=reverse, affine=affine
    )
    if all(isinstance(t, J.Zero) for t in tangents):
        return ys, [J.Zero(J.tangent_aval(get_aval(y))) for y in ys]
    return ys, _lanewise_jvp(primals, tangents, combine, num_consts, axis, reverse, ys)


J.jvp_rules[associative_scan_p] = _jvp_rule


def _transpose_rule(cts, *args, combine, num_consts, axis, reverse, affine):
    """Transpose of an affine scan ``h_i = A_i h_{i-1} + b_i`` with respect to ``b``: the same
    recurrence backwards, ``g_j = ct_j + A_{j+1}^T g_{j+1}``."""
    if affine is None:
        raise UnsupportedError(
            f"associative_scan is linear only in the b-part of an affine scan; "
            f"this one cannot be transposed{where()}"
        )
    k, pattern = affine
    npat = len(pattern)
    a_ent = args[num_consts : num_consts + npat]
    b_ent = args[num_consts + npat :]
    if any(T.is_undefined(a) for a in a_ent) or any(T.is_undefined(c) for c in args[:num_consts]):
        raise UnsupportedError(
            f"associative_scan: the coefficients of an affine scan are not linear{where()}"
        )
    ct_a, ct_h = cts[:npat], cts[npat:]
    if any(not isinstance(c, J.Zero) for c in ct_a):
        raise UnsupportedError(f"associative_scan: cotangent of the coefficient products{where()}")
    b_avals = [T._aval(b) for b in b_ent]
    n = b_avals[0].shape[axis]
    idx = {e: i for i, e in enumerate(pattern)}
    g = [J.Zero(a) for a in b_avals]
    # Lanes coupled by A form independent recurrences; one whose cotangents are all zero (e.g. the
    # running product of a linear recurrence, when only h is used) needs no backward scan.
    for lanes in _components(k, pattern):
        if all(isinstance(ct_h[m], J.Zero) for m in lanes):
            continue
        local = {m: i for i, m in enumerate(lanes)}
        t_pattern = tuple(sorted((local[nn], local[m]) for (m, nn) in pattern if m in local))
        a_t = [a_ent[idx[(lanes[m], lanes[nn])]] for (nn, m) in t_pattern]
        zero = [ops.full_like(_slice(a, 0, 1, 1, axis), 0) for a in a_t]
        if reverse:  # forward: h_i = A_i h_{i+1} + b_i; transpose runs i = 0..n-1 with A_{j-1}^T
            shifted = [
                ops.concatenate([z, _slice(a, 0, n - 1, 1, axis)], axis) for a, z in zip(a_t, zero)
            ]
        else:
            shifted = [
                ops.concatenate([_slice(a, 1, n, 1, axis), z], axis) for a, z in zip(a_t, zero)
            ]
        cts_g = [
            ops.full(b_avals[m].shape, 0, b_avals[m].dtype)
            if isinstance(ct_h[m], J.Zero)
            else ct_h[m]
            for m in lanes
        ]
        _, g_lanes = _associative_scan(
            _affine_combine(len(lanes), t_pattern),
            (shifted, cts_g),
            not reverse,
            axis,
            (len(lanes), t_pattern),
        )
        for m, gm in zip(lanes, g_lanes):
            g[m] = gm
    return [None] * (num_consts + npat) + [
        gi if T.is_undefined(b) else None for gi, b in zip(g, b_ent)
    ]


def _components(k, pattern):
    """The lanes 0..k-1 grouped into the connected components of the sparsity pattern."""
    group = list(range(k))
    for m, nn in pattern:
        a, b = group[m], group[nn]
        group = [a if x == b else x for x in group]
    return [[m for m in range(k) if group[m] == c] for c in sorted(set(group))]


T.transpose_rules[associative_scan_p] = _transpose_rule


# --- cumulative reductions as associative scans --------------------------------------------------
def _cum(fn_name, combine):
    def f(x, axis=0, reverse=False):
        nd = get_aval(x).ndim
        if nd == 0:
            raise FunctxTypeError(f"{fn_name} needs an array of rank >= 1{where()}")
        if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
            raise FunctxTypeError(f"{fn_name}: axis must be an integer, got {axis!r}{where()}")
        if not -nd <= axis < nd:
            raise FunctxValueError(
                f"{fn_name}: axis {axis} is out of bounds for an array of rank {nd}{where()}"
            )
        if not isinstance(reverse, (bool, np.bool_)):
            raise FunctxTypeError(f"{fn_name}: reverse must be a bool, got {reverse!r}{where()}")
        return _associative_scan(combine, x, bool(reverse), int(axis) % nd, None)

    f.__name__ = f.__qualname__ = fn_name
    f.__doc__ = _CUM_DOC.format(name=fn_name, what=_CUM_WHAT[fn_name], out=_CUM_OUT[fn_name])
    return f


_CUM_WHAT = {
    "cumsum": "sum",
    "cumprod": "product",
    "cummax": "maximum",
    "cummin": "minimum",
    "cumlogsumexp": "log-sum-exp",
}
_CUM_OUT = {
    "cumsum": "Array([ 1.,  4.,  6., 11.], dtype=float32)",
    "cumprod": "Array([ 1.,  3.,  6., 30.], dtype=float32)",
    "cummax": "Array([1., 3., 3., 5.], dtype=float32)",
    "cummin": "Array([1., 1., 1., 1.], dtype=float32)",
    "cumlogsumexp": "Array([1.       , 3.126928 , 3.4076061, 5.1851826], dtype=float32)",
}
_CUM_DOC = """The cumulative {what} of ``x`` along ``axis`` (``jax.lax.{name}``), as an associative
    scan.

    Arguments:
      x: an array of rank >= 1.
      axis: the axis to accumulate along (negative counts from the end).
      reverse: accumulate from the end (element ``i`` covers ``i..n-1``).
    Returns:
      An array of ``x``'s shape and dtype.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.{name}(np.float32([1, 3, 2, 5]))
      {out}
    """


def _logaddexp(a, b):
    amax = ops.max(a, b)
    delta = ops.sub(a, b)
    nan = ops.ne(delta, delta)
    safe = ops.select(nan, ops.full_like(delta, 0), delta)
    out = ops.add(amax, ops.log1p(ops.exp(ops.neg(ops.abs(safe)))))
    return ops.select(nan, ops.add(a, b), out)


cumsum = _cum("cumsum", ops.add)
cumprod = _cum("cumprod", ops.mul)
cummax = _cum("cummax", ops.max)
cummin = _cum("cummin", ops.min)
cumlogsumexp = _cum("cumlogsumexp", _logaddexp)

__all__ = [
    "associative_scan",
    "associative_scan_p",
    "cumsum",
    "cumprod",
    "cummax",
    "cummin",
    "cumlogsumexp",
    "ladder",
    "is_lanewise",
]


# --- vmap: batch axes become element axes of the combine -----------------------------------------
def _batch_rule(args, dims, *, combine, num_consts, axis, reverse, affine):
    size = V.axis_size_of(args, dims)
    consts, xs = list(args[:num_consts]), list(args[num_consts:])
    cdims = list(dims[:num_consts])
    xs = [V.bdim_at_front(x, d, size) for x, d in zip(xs, dims[num_consts:])]
    k = len(xs)
    batched, _ = V.batch_jaxpr(combine, cdims + [0] * (2 * k), size, force_out_dims=[0] * k)
    j = batched.jaxpr
    new_combine = ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.eqns, j.outvars), [])
    outs = associative_scan_p.bind(
        *batched.consts,
        *consts,
        *xs,
        combine=new_combine,
        num_consts=len(batched.consts) + num_consts,
        axis=axis + 1,
        reverse=reverse,
        affine=affine,
    )
    return outs, [0] * k


V.batching_rules[associative_scan_p] = _batch_rule


# --- jit: one scan kernel for a lane-wise combine, else the ladder --------------------------------
def _lowering(g, ins, avals, *, combine, num_consts, axis, reverse, affine):
    """A lane-wise combine becomes ``ascan`` nodes (one scan kernel, the combine inlined by the
    backend); any other combine is the O(log n) ladder, lowered equation by equation."""
    # imported here, when jit lowers: the loop IR (0.1 s of import), which `import functx`
    # must not (tests/lowering/test_program_cache.py)
    from functx.lowering import lower
    from functx.lowering.loopir import Node

    if not is_lanewise(combine, num_consts):
        closed = _ladder_jaxpr(
            combine, num_consts, axis, reverse, tuple(ShapedArray(n.shape, n.dtype) for n in ins)
        )
        env = {}
        for v, n in zip(closed.jaxpr.invars, ins):
            env[v.id] = n
        for v, c in zip(closed.jaxpr.constvars, closed.consts):
            arr = np.asarray(c)
            n = g.add(Node(tuple(arr.shape), v.aval.dtype, kind="input"))
            n.buf = f"c{len(g.consts)}"
            g.consts.append((n, arr))
            env[v.id] = n
        lower.lower_eqns(g, closed.jaxpr, env)
        return [lower.read(g, env, a) for a in closed.jaxpr.outvars]
    group = {
        "consts": ins[:num_consts],
        "xs": ins[num_consts:],
        "combine": combine,
        "axis": axis,
        "reverse": reverse,
        "outs": [],
    }
    outs = []
    for a in avals:
        n = g.add(Node(a.shape, a.dtype, kind="ascan", inputs=list(ins), params={"group": group}))
        group["outs"].append(n)
        outs.append(n)
    return outs


lowerings[associative_scan_p] = _lowering


# --- reduce_prod's derivative (it needs cumprod) ------------------------------------------------
def _exclusive_cumprod(x, axis, reverse):
    """prod of the elements strictly before each position (after, when reverse)."""
    n = get_aval(x).shape[axis]
    nd = get_aval(x).ndim
    c = cumprod(x, axis, reverse)
    cfg = [(0, 0, 0)] * nd
    cfg[axis] = (0, 1, 0) if reverse else (1, 0, 0)
    padded = ops.pad(c, J._const(x, 1), cfg)
    start = [0] * nd
    start[axis] = 1 if reverse else 0
    limit = list(get_aval(padded).shape)
    limit[axis] = start[axis] + n
    return ops.slice(padded, start, limit)


def _reduce_prod_jvp(primals, tangents, *, axes):
    (x,), (t,) = primals, tangents
    ans = P.reduce_prod_p.bind(x, axes=axes)
    xa = get_aval(x)
    kept = [i for i in range(xa.ndim) if i not in axes]
    perm = kept + list(axes)
    n_red = int(np.prod([xa.shape[i] for i in axes], dtype=np.int64))
    flat_shape = tuple(xa.shape[i] for i in kept) + (n_red,)
    xf = ops.reshape(ops.transpose(x, perm), flat_shape)
    tf = ops.reshape(ops.transpose(t, perm), flat_shape)
    if n_red == 0:
        return ans, J.Zero(J.tangent_aval(get_aval(ans)))
    last = len(flat_shape) - 1
    # d prod / d x_j = prod_{k != j} x_k = (prod before j) * (prod after j): exact with zeros.
    others = ops.mul(_exclusive_cumprod(xf, last, False), _exclusive_cumprod(xf, last, True))
    return ans, ops.reduce_sum(ops.mul(tf, others), (last,))


J.jvp_rules[P.reduce_prod_p] = _reduce_prod_jvp
