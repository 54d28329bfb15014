"""``scan`` (and ``map``): one ``scan`` equation whose body is a sub-Jaxpr.

All rules of the ``scan`` primitive are here: shape inference, the eager implementation, jvp,
partial evaluation (known and unknown halves, residuals stacked per iteration), transpose (the
same scan run backwards), batching and the lowering (a loop kernel over the body's compiled
sub-program).
"""

from __future__ import annotations

import numpy as np

from functx import _refbox, config, dtypes, ops
from functx.control.common import (
    as_ndarrays,
    batch_closed,
    body_cache,
    control_primitive,
    fun_name,
    hoist,
    jvp_closed,
    lower_to_loop,
    natural_out_nz,
    promote_weak,
    split3,
    types_str,
    zeros_of,
)
from functx.core import ClosedJaxpr, Eqn, Jaxpr, Literal, ShapedArray, Var, same_type
from functx.errors import FunctxArgumentError, FunctxTypeError, FunctxValueError
from functx.interpreter import eval_jaxpr
from functx.lowering.rules import lowerings
from functx.source_info import where
from functx.tracing import get_aval, trace_flat, tree_flatten, tree_unflatten
from functx.transforms import axis_env, jvp as J, transpose as T, vmap as V
from functx.transforms.partial_eval import partial_eval_jaxpr, partial_eval_rules

scan_p = control_primitive("scan")


def _scan_eval(*args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts, carry, xs = (
        args[:num_consts],
        args[num_consts : num_consts + num_carry],
        args[num_consts + num_carry :],
    )
    body_in = jaxpr.in_avals
    for x in xs:
        if x.ndim == 0 or x.shape[0] != length:
            raise FunctxTypeError(
                f"scan: xs leaves must have leading axis {length}, got {x.str_short()}"
            )
    x_avals = [ShapedArray(x.shape[1:], x.dtype, x.weak_type) for x in xs]
    given = list(consts) + list(carry) + x_avals
    if len(given) != len(body_in) or not all(same_type(a, b) for a, b in zip(given, body_in)):
        raise FunctxTypeError(f"scan: body takes {types_str(body_in)}, given {types_str(given)}")
    outs = jaxpr.out_avals
    carry_out, ys = outs[:num_carry], outs[num_carry:]
    return list(carry_out) + [ShapedArray((length,) + y.shape, y.dtype, y.weak_type) for y in ys]


def _scan_impl(*args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    consts = list(args[:num_consts])
    carry = list(args[num_consts : num_consts + num_carry])
    xs = args[num_consts + num_carry :]
    ys = []
    for i in range(length - 1, -1, -1) if reverse else range(length):
        out = eval_jaxpr(jaxpr.jaxpr, [], *consts, *carry, *[x[i] for x in xs])
        carry, y = out[:num_carry], out[num_carry:]
        ys.append(as_ndarrays(y))
    if reverse:
        ys.reverse()
    y_avals = jaxpr.out_avals[num_carry:]
    stacked = [
        np.stack([y[k] for y in ys]) if ys else np.zeros((0,) + a.shape, a.dtype)
        for k, a in enumerate(y_avals)
    ]
    return as_ndarrays(carry, args) + stacked


scan_p.abstract_eval = _scan_eval
scan_p.impl = _scan_impl


def _python_scan(f, init, x_leaves, x_tree, n, reverse):
    """``scan`` under ``disable_jit``: a Python loop calling ``f`` on each slice, the ``y``s
    stacked at the end, as JAX runs it."""
    if n == 0:
        raise FunctxValueError(
            "zero-length scan is not supported in disable_jit() mode because the output type is "
            f"unknown.{where()}"
        )
    carry, ys = init, []
    for i in reversed(range(n)) if reverse else range(n):
        x = tree_unflatten(x_tree, [ops.index_in_dim(v, i, 0, keepdims=False) for v in x_leaves])
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys.reverse()
    y_leaves = [tree_flatten(y)[0] for y in ys]
    y_tree = tree_flatten(ys[0])[1]
    stacked = [
        ops.concatenate([ops.expand_dims(row[j], (0,)) for row in y_leaves], 0)
        for j in range(len(y_leaves[0]))
    ]
    return carry, tree_unflatten(y_tree, stacked)


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """Loop ``carry, y = f(carry, x)`` over the leading axis of ``xs`` (``jax.lax.scan``), as one
    ``scan`` equation (reverse mode stacks the residuals).

    Arguments:
      f: a function ``(carry, x) -> (carry, y)``; the carry keeps its structure and types.
      init: the initial carry (a pytree of arrays).
      xs: a pytree of arrays scanned over their leading axis, or None (then ``length`` is needed).
      length: the number of iterations (checked against ``xs``' leading axis).
      reverse: run from the last element to the first (the ``y`` values keep their positions).
      unroll: iterations per loop step in the compiled program (a positive int or True for all);
        it does not change results.
    Returns:
      ``(final_carry, ys)``: ``ys`` stacks the ``y`` values along a new leading axis.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.scan(lambda c, x: (c + x, c * x), np.float32(0.0), np.float32([1, 2, 3]))
      (Array(6., dtype=float32), Array([0., 2., 9.], dtype=float32))
    """
    if not callable(f):
        raise FunctxTypeError(f"scan: f must be callable, got {type(f).__name__}{where()}")
    if length is not None:
        if isinstance(length, (bool, np.bool_)) or not isinstance(length, (int, np.integer)):
            raise FunctxTypeError(
                f"scan: length must be a non-negative int, got {length!r}{where()}"
            )
        if length < 0:
            raise FunctxValueError(f"scan: length must be non-negative, got {length}{where()}")
    if not isinstance(reverse, (bool, np.bool_)):
        raise FunctxTypeError(f"scan: reverse must be a bool, got {reverse!r}{where()}")
    if not isinstance(unroll, (int, np.integer)):
        raise FunctxTypeError(f"scan: unroll must be an int or a bool, got {unroll!r}{where()}")
    if not isinstance(unroll, (bool, np.bool_)) and unroll < 0:
        raise FunctxValueError(f"scan: unroll must be >= 0, got {unroll}{where()}")
    x_leaves, x_tree = tree_flatten(xs)
    J.arg_avals("scan (xs)", x_leaves, (xs,))
    lengths = {get_aval(x).shape[0] for x in x_leaves if get_aval(x).ndim}
    if any(get_aval(x).ndim == 0 for x in x_leaves):
        raise FunctxTypeError(f"scan got an xs leaf with no leading axis to scan over{where()}")
    if length is not None:
        lengths.add(int(length))
    if len(lengths) > 1:
        raise FunctxArgumentError(
            f"scan got values with different leading axis sizes: {sorted(lengths)}{where()}"
        )
    if not lengths:
        raise FunctxTypeError(f"scan got no values to scan over and `length` not provided{where()}")
    n = lengths.pop()
    if config.jit_disabled():
        return _python_scan(f, init, x_leaves, x_tree, n, reverse)
    c_leaves, c_tree = tree_flatten(init)
    _refbox.no_refs_returned(c_leaves)
    c_avals = [get_aval(c) for c in c_leaves]
    x_avals = [ShapedArray(get_aval(x).shape[1:], get_aval(x).dtype) for x in x_leaves]
    box = {}

    def body(*leaves):
        carry = tree_unflatten(c_tree, list(leaves[: len(c_leaves)]))
        x = tree_unflatten(x_tree, list(leaves[len(c_leaves) :]))
        out = f(carry, x)
        if not isinstance(out, tuple) or len(out) != 2:
            raise FunctxTypeError(
                f"scan body {fun_name(f)} must return a pair (carry, y), got "
                f"{type(out).__name__}{where()}"
            )
        new_c, y = out
        nc_leaves, nc_tree = tree_flatten(new_c)
        y_leaves, y_tree = tree_flatten(y)
        box.update(c_tree=nc_tree, y_tree=y_tree, n_y=len(y_leaves))
        return nc_leaves + y_leaves, None

    def trace_body(c_avals):
        cache = body_cache(f)
        key = ("scan", c_tree, x_tree, tuple(c_avals), tuple(x_avals), dtypes.default_float())
        key += axis_env.env_key()  # (the body may read a bound axis's size)
        hit = cache.get(key) if cache is not None else None
        if hit is not None:
            box.update(hit[1])
            return hit[0]
        closed, _ = trace_flat(body, c_avals + x_avals)
        if cache is not None:
            cache.put(key, (closed, dict(box)), closed)
        return closed

    closed, refs = _refbox.traced_or_boxes(lambda: trace_body(c_avals))
    if refs:  # (the body wrote Refs created outside it: they join the carry)
        return _scan_refs(f, init, xs, length, reverse, unroll, refs)
    if box["c_tree"] != c_tree:
        raise FunctxTypeError(
            f"scan body {fun_name(f)} must return a carry with the structure of "
            f"its input: {c_tree} != {box['c_tree']}{where()}"
        )
    c_leaves, c_avals, changed = promote_weak(c_leaves, c_avals, closed.out_avals[: len(c_leaves)])
    if changed:
        closed = trace_body(c_avals)
    c_out = closed.out_avals[: len(c_leaves)]
    if not all(same_type(a, b) for a, b in zip(c_avals, c_out)):
        raise FunctxTypeError(
            f"scan body function carry input and carry output must have equal types: "
            f"{fun_name(f)} takes carry {types_str(c_avals)} and returns "
            f"{types_str(c_out)}{where()}"
        )
    body_j, consts = hoist(closed)
    outs = scan_p.bind(
        *consts,
        *c_leaves,
        *x_leaves,
        jaxpr=body_j,
        num_consts=len(consts),
        num_carry=len(c_leaves),
        length=n,
        reverse=bool(reverse),
        unroll=unroll,
    )
    carry = tree_unflatten(c_tree, outs[: len(c_leaves)])
    ys = tree_unflatten(box["y_tree"], outs[len(c_leaves) :])
    return carry, ys


def _scan_refs(f, init, xs, length, reverse, unroll, refs):
    """``scan`` of a body that writes the references ``refs`` (boxes) created outside it: their
    values are carried, and written back after the loop."""

    def body(carry, x):
        c, vals = carry
        with _refbox.bound(refs, vals) as finals:
            c, y = f(c, x)
            return (c, finals()), y

    (c, vals), ys = scan(body, (init, _refbox.values(refs)), xs, length, reverse, unroll)
    _refbox.store(refs, vals)
    return c, ys


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
    nz = [not isinstance(t, J.Zero) for t in tangents]
    c_nz, k_nz, x_nz = split3(nz, num_consts, num_carry)
    k_diff = [J.is_differentiable(a) for a in jaxpr.in_avals[num_consts : num_consts + num_carry]]
    while True:  # carries with a nonzero tangent: fixpoint
        out_nz = natural_out_nz(jaxpr, c_nz + k_nz + x_nz)
        new = [(a or b) and d for a, b, d in zip(k_nz, out_nz[:num_carry], k_diff)]
        if new == k_nz:
            break
        k_nz = new
    n_y = len(jaxpr.out_avals) - num_carry
    body, hconsts, out_nz = jvp_closed(jaxpr, c_nz + k_nz + x_nz, k_nz + [False] * n_y)
    bj = body.jaxpr
    nh = len(hconsts)
    n_in = len(jaxpr.in_avals)
    p_in = bj.invars[nh : nh + n_in]
    t_in = iter(bj.invars[nh + n_in :])
    pc, pk, px = split3(p_in, num_consts, num_carry)
    tc = [next(t_in) for z in c_nz if z]
    tk = [next(t_in) for z in k_nz if z]
    tx = [next(t_in) for z in x_nz if z]
    n_out = len(jaxpr.out_avals)
    p_out = bj.outvars[:n_out]
    t_out = iter(bj.outvars[n_out:])
    t_all = [next(t_out) if z else None for z in out_nz]
    tk_out = [t for t in t_all[:num_carry] if t is not None]
    ty_out = [t for t in t_all[num_carry:] if t is not None]
    new_body = ClosedJaxpr(
        Jaxpr(
            [],
            bj.invars[:nh] + pc + tc + pk + tk + px + tx,
            bj.eqns,
            p_out[:num_carry] + tk_out + p_out[num_carry:] + ty_out,
        ),
        [],
    )
    c, k, x = split3(primals, num_consts, num_carry)
    tcv, tkv, txv = split3(tangents, num_consts, num_carry)
    tcv = [t for t, z in zip(tcv, c_nz) if z]
    tkv = [
        J.instantiate(t) if not isinstance(t, J.Zero) else zeros_of(J.tangent_aval(get_aval(p)))
        for t, p, z in zip(tkv, k, k_nz)
        if z
    ]
    txv = [t for t, z in zip(txv, x_nz) if z]
    outs = scan_p.bind(
        *hconsts,
        *c,
        *tcv,
        *k,
        *tkv,
        *x,
        *txv,
        jaxpr=new_body,
        num_consts=nh + len(c) + len(tcv),
        num_carry=len(k) + len(tkv),
        length=length,
        reverse=reverse,
        unroll=unroll,
    )
    kk = outs[:num_carry]
    tk_o = iter(outs[num_carry : num_carry + len(tkv)])
    rest = outs[num_carry + len(tkv) :]
    ys, ty_o = rest[:n_y], iter(rest[n_y:])
    out_avals = _scan_eval(
        *[get_aval(p) for p in primals],
        jaxpr=jaxpr,
        num_consts=num_consts,
        num_carry=num_carry,
        length=length,
        reverse=reverse,
        unroll=unroll,
    )
    touts = [
        next(tk_o) if z else J.Zero(J.tangent_aval(a)) for z, a in zip(k_nz, out_avals[:num_carry])
    ]
    touts += [
        next(ty_o) if z else J.Zero(J.tangent_aval(a))
        for z, a in zip(out_nz[num_carry:], out_avals[num_carry:])
    ]
    return list(kk) + list(ys), touts


J.jvp_rules[scan_p] = _scan_jvp


def _scan_partial_eval(eqn, unknowns):
    p = eqn.params
    nc, nk = p["num_consts"], p["num_carry"]
    body = p["jaxpr"].jaxpr
    c_uk, k_uk, x_uk = split3(unknowns, nc, nk)
    n_y = len(body.outvars) - nk
    while True:
        pe = partial_eval_jaxpr(body, c_uk + k_uk + x_uk, k_uk + [False] * n_y)
        new = [a or b for a, b in zip(k_uk, pe.out_unknowns[:nk])]
        if new == k_uk:
            break
        k_uk = new
    out_uk = pe.out_unknowns
    known, unk = pe.known, pe.unknown
    n_res = len(pe.res_avals)
    n_known_out = len(known.outvars) - n_res
    res_vars = known.outvars[n_known_out:]
    # Residuals that are known body consts are loop-invariant: pass them straight through.
    const_pos = {v.id: i for i, (v, u) in enumerate(zip(body.invars[:nc], c_uk)) if not u}
    xs_pos = {v.id: i for i, (v, u) in enumerate(zip(body.invars[nc + nk :], x_uk)) if not u}
    inv = [i for i, r in enumerate(res_vars) if type(r) is Var and r.id in const_pos]
    fwd = [i for i, r in enumerate(res_vars) if type(r) is Var and r.id in xs_pos]
    stk = [i for i in range(n_res) if i not in inv and i not in fwd]
    known_body = ClosedJaxpr(
        Jaxpr(
            [], known.invars, known.eqns, known.outvars[:n_known_out] + [res_vars[i] for i in stk]
        ),
        [],
    )
    if known.constvars:
        return None
    c_in, k_in, x_in = split3(eqn.invars, nc, nk)
    kc = [a for a, u in zip(c_in, c_uk) if not u]
    kk = [a for a, u in zip(k_in, k_uk) if not u]
    kx = [a for a, u in zip(x_in, x_uk) if not u]
    k_outs_carry = [v for v, u in zip(eqn.outvars[:nk], out_uk[:nk]) if not u]
    k_outs_y = [v for v, u in zip(eqn.outvars[nk:], out_uk[nk:]) if not u]
    length = p["length"]
    stacked = [
        Var(ShapedArray((length,) + pe.res_avals[i].shape, pe.res_avals[i].dtype)) for i in stk
    ]
    k_eqn = Eqn(
        scan_p,
        kc + kk + kx,
        k_outs_carry + k_outs_y + stacked,
        dict(p, jaxpr=known_body, num_consts=len(kc), num_carry=len(kk)),
        eqn.source_info,
    )
    # unknown body: residuals + unknown inputs, reordered into consts / carry / xs.
    u_res = unk.invars[:n_res]
    u_c, u_k, u_x = split3(unk.invars[n_res:], sum(c_uk), sum(k_uk))
    u_body = ClosedJaxpr(
        Jaxpr(
            [],
            [u_res[i] for i in inv] + u_c + u_k + [u_res[i] for i in stk + fwd] + u_x,
            unk.eqns,
            unk.outvars,
        ),
        [],
    )
    inv_outer = [c_in[const_pos[res_vars[i].id]] for i in inv]
    fwd_outer = [x_in[xs_pos[res_vars[i].id]] for i in fwd]
    uc = [a for a, u in zip(c_in, c_uk) if u]
    uk = [a for a, u in zip(k_in, k_uk) if u]
    ux = [a for a, u in zip(x_in, x_uk) if u]
    u_outs = [v for v, u in zip(eqn.outvars, out_uk) if u]
    u_eqn = Eqn(
        scan_p,
        inv_outer + uc + uk + stacked + fwd_outer + ux,
        u_outs,
        dict(p, jaxpr=u_body, num_consts=len(inv_outer) + len(uc), num_carry=len(uk)),
        eqn.source_info,
    )
    residual_vars = [a for a in u_eqn.invars if type(a) is not Literal]
    return [k_eqn], [u_eqn], out_uk, residual_vars


partial_eval_rules[scan_p] = _scan_partial_eval


def _scan_transpose(cts, *args, jaxpr, num_consts, num_carry, length, reverse, unroll):
    c, k, x = split3(args, num_consts, num_carry)
    # Every carry of a linear scan is linear; a carry whose initial value is known (the zeros a
    # jvp instantiates) gets its cotangent computed and dropped.
    c_lin = [T.is_undefined(a) for a in c]
    x_lin = [T.is_undefined(a) for a in x]
    out_avals = _scan_eval(
        *[T._aval(a) for a in args],
        jaxpr=jaxpr,
        num_consts=num_consts,
        num_carry=num_carry,
        length=length,
        reverse=reverse,
        unroll=unroll,
    )
    cts = [zeros_of(a) if isinstance(ct, J.Zero) else ct for ct, a in zip(cts, out_avals)]
    ct_k, ct_y = cts[:num_carry], cts[num_carry:]
    body_in = jaxpr.in_avals
    bc, bk, bx = split3(body_in, num_consts, num_carry)
    lin_mask = c_lin + [True] * num_carry + x_lin
    res_c_avals = [a for a, lv in zip(bc, c_lin) if not lv]
    res_x_avals = [a for a, lv in zip(bx, x_lin) if not lv]
    lin_c_avals = [a for a, lv in zip(bc, c_lin) if lv]
    y_avals = jaxpr.out_avals[num_carry:]

    def body_t(*args_t):
        it = iter(args_t)
        rc = [next(it) for _ in res_c_avals]
        acc = [next(it) for _ in lin_c_avals]
        ck = [next(it) for _ in bk]
        rx = [next(it) for _ in res_x_avals]
        cy = [next(it) for _ in y_avals]
        rc_it, rx_it = iter(rc), iter(rx)
        full = (
            [T.UndefinedPrimal(a) if lv else next(rc_it) for a, lv in zip(bc, c_lin)]
            + [T.UndefinedPrimal(a) for a in bk]
            + [T.UndefinedPrimal(a) if lv else next(rx_it) for a, lv in zip(bx, x_lin)]
        )
        cts_in = T.backward_pass(jaxpr.jaxpr, [], full, ck + cy)
        cts_in = [J.instantiate(ct) if lv else None for ct, lv in zip(cts_in, lin_mask)]
        cc, kk, xx = split3(cts_in, num_consts, num_carry)
        new_acc = [ops.add(a, ct) for a, ct in zip(acc, [ct for ct in cc if ct is not None])]
        return new_acc + kk + [ct for ct in xx if ct is not None], None

    closed_t, _ = trace_flat(
        body_t, res_c_avals + lin_c_avals + list(bk) + res_x_avals + list(y_avals)
    )
    body_j, hconsts = hoist(closed_t)
    res_c = [a for a in c if not T.is_undefined(a)]
    res_x = [a for a in x if not T.is_undefined(a)]
    acc0 = [zeros_of(a) for a in lin_c_avals]
    outs = scan_p.bind(
        *hconsts,
        *res_c,
        *acc0,
        *ct_k,
        *res_x,
        *ct_y,
        jaxpr=body_j,
        num_consts=len(hconsts) + len(res_c),
        num_carry=len(acc0) + num_carry,
        length=length,
        reverse=not reverse,
        unroll=unroll,
    )
    acc = iter(outs[: len(acc0)])
    ck_in = outs[len(acc0) : len(acc0) + num_carry]
    cx = iter(outs[len(acc0) + num_carry :])
    return (
        [next(acc) if lv else None for lv in c_lin]
        + [ct if T.is_undefined(a) else None for ct, a in zip(ck_in, k)]
        + [next(cx) if lv else None for lv in x_lin]
    )


T.transpose_rules[scan_p] = _scan_transpose


def map(f, xs, *, batch_size=None):  # noqa: A001
    """``f`` applied to each slice of ``xs`` along its leading axis (``jax.lax.map``), by a
    ``scan``; with ``batch_size``, each step of the scan applies ``vmap(f)`` to ``batch_size``
    slices, and the leftover slices go through one more ``vmap(f)``.

    Arguments:
      f: a function of one slice (a pytree of ``xs``' structure).
      xs: a pytree of arrays sharing their leading axis.
      batch_size: None (one slice per step), or how many slices each step maps in parallel.
    Returns:
      The outputs of ``f`` stacked along a new leading axis.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.map(lambda r: r.sum(), np.float32([[1, 2], [3, 4]]))
      Array([3., 7.], dtype=float32)
      >>> lax.map(lambda r: r * 2, np.arange(5, dtype=np.float32), batch_size=2)
      Array([0., 2., 4., 6., 8.], dtype=float32)
    """
    if not callable(f):
        raise FunctxTypeError(f"map: f must be callable, got {type(f).__name__}{where()}")
    if batch_size is None:
        _, ys = scan(lambda c, x: (c, f(x)), (), xs)
        return ys
    leaves, tree = tree_flatten(xs)
    if not leaves:
        _, ys = scan(lambda c, x: (c, f(x)), (), xs)
        return ys
    n = get_aval(leaves[0]).shape[0]
    num_batches, rest = divmod(n, batch_size) if batch_size else (0, n)
    cut = num_batches * batch_size
    batched = V.vmap(f)
    parts = []
    if num_batches:
        steps = [
            ops.reshape(
                ops.slice_in_dim(x, 0, cut), (num_batches, batch_size, *get_aval(x).shape[1:])
            )
            for x in leaves
        ]
        _, ys = scan(lambda c, x: (c, batched(x)), (), tree_unflatten(tree, steps))
        y_leaves, y_tree = tree_flatten(ys)
        parts.append([ops.reshape(y, (cut, *get_aval(y).shape[2:])) for y in y_leaves])
    if rest:
        rem = [ops.slice_in_dim(x, cut, n) for x in leaves]
        y_leaves, y_tree = tree_flatten(batched(tree_unflatten(tree, rem)))
        parts.append(y_leaves)
    if len(parts) == 1:
        return tree_unflatten(y_tree, parts[0])
    return tree_unflatten(y_tree, [ops.concatenate([a, b], 0) for a, b in zip(*parts)])


def _scan_batch(args, dims, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
    size = V.axis_size_of(args, dims)
    c, k, x = split3(args, num_consts, num_carry)
    cd, kd, xd = split3(dims, num_consts, num_carry)
    k_b = [d is not None for d in kd]
    x_in = [None if d is None else 0 for d in xd]
    n_y = len(jaxpr.out_avals) - num_carry
    while True:
        in_dims = list(cd) + [0 if b else None for b in k_b] + x_in
        _, out_dims = V.batch_jaxpr(jaxpr, in_dims, size)
        new = [b or (d is not None) for b, d in zip(k_b, out_dims[:num_carry])]
        if new == k_b:
            break
        k_b = new
    in_dims = list(cd) + [0 if b else None for b in k_b] + x_in
    force = [0 if b else None for b in k_b] + [None] * n_y
    body, consts, out_dims = batch_closed(jaxpr, in_dims, size, force)
    k2 = [V.bdim_at_front(v, d, size) if b else v for v, d, b in zip(k, kd, k_b)]
    x2 = [v if d is None else V.moveaxis(v, d, 1) for v, d in zip(x, xd)]
    outs = scan_p.bind(
        *consts,
        *c,
        *k2,
        *x2,
        jaxpr=body,
        num_consts=len(consts) + num_consts,
        num_carry=num_carry,
        length=length,
        reverse=reverse,
        unroll=unroll,
    )
    y_dims = [None if d is None else d + 1 for d in out_dims[num_carry:]]
    return outs, [0 if b else None for b in k_b] + y_dims


V.batching_rules[scan_p] = _scan_batch


def _scan_lowering(g, ins, avals, **params):
    """jit: a ``loop`` kernel that runs the body's compiled sub-program per iteration."""
    return lower_to_loop(g, ins, avals, "scan", **params)


lowerings[scan_p] = _scan_lowering

__all__ = ["scan", "map", "scan_p"]
