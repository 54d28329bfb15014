"""``while_loop`` (and ``fori_loop``): one ``while`` equation with a cond and a body sub-Jaxpr.

All rules of the ``while`` primitive are here: shape inference, the eager implementation, jvp,
partial evaluation, the transpose rule (reverse mode raises JAX's error), batching (a batched
predicate loops while any example's holds) and the lowering (a loop kernel over the compiled cond
and body). ``fori_loop`` with static bounds is a ``scan``
(reverse mode works), with traced bounds a ``while_loop``.
"""

from __future__ import annotations

import numpy as np

from functx import _refbox, config, dtypes, ops
from functx.control.check import BATCHED_WHILE_ERROR, contains_check
from functx.control.common import (
    as_ndarrays,
    batch_closed,
    control_primitive,
    fun_name,
    hoist,
    jvp_closed,
    lower_to_loop,
    natural_out_nz,
    promote_weak,
    split3,
    trace_pytree,
    types_str,
    zeros_of,
)
from functx.control.scan import scan
from functx.core import ClosedJaxpr, Eqn, Jaxpr, Literal, Var, same_type
from functx.errors import (
    ConcretizationError,
    FunctxTypeError,
    FunctxValueError,
    UnsupportedValueError,
)
from functx.interpreter import eval_jaxpr
from functx.lowering.rules import lowerings
from functx.source_info import where
from functx.tracing import Tracer, get_aval, trace_flat, tree_flatten, tree_unflatten
from functx.transforms import jvp as J, passes, transpose as T, vmap as V
from functx.transforms.partial_eval import partial_eval_jaxpr, partial_eval_rules


def fori_loop(lower, upper, body_fun, init_val, unroll=1):
    """``val = body_fun(i, val)`` for ``i`` in ``[lower, upper)`` (``jax.lax.fori_loop``): a scan
    when
    ``lower`` and ``upper`` are concrete (reverse mode works), a while_loop otherwise.

    Arguments:
      lower, upper: integer scalars, the loop bounds (``upper`` excluded).
      body_fun: a function ``(i, val) -> val`` keeping ``val``'s structure and types.
      init_val: the initial value (a pytree of arrays).
      unroll: iterations per loop step in the compiled program (concrete bounds only); it does not
        change results.
    Returns:
      The final ``val``.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.fori_loop(0, 4, lambda i, v: v + i, np.int32(10))
      Array(16, dtype=int32)
    """

    def _checked(out, v):
        o_leaves, o_tree = tree_flatten(out)
        v_leaves, v_tree = tree_flatten(v)
        _refbox.no_refs_returned(o_leaves)
        o_avals, v_avals = [get_aval(x) for x in o_leaves], [get_aval(x) for x in v_leaves]
        if o_tree != v_tree:
            raise FunctxTypeError(
                f"fori_loop: body_fun {fun_name(body_fun)} must return a value with the structure "
                f"of init_val: takes {v_tree}, returns {o_tree}{where()}"
            )
        if not all(same_type(a, b) for a, b in zip(o_avals, v_avals)):
            raise FunctxTypeError(
                f"fori_loop: body_fun {fun_name(body_fun)} output and input must have identical "
                f"types: takes {types_str(v_avals)}, returns {types_str(o_avals)}{where()}"
            )
        return out

    if not callable(body_fun):
        raise FunctxTypeError(
            f"fori_loop: body_fun must be callable, got {type(body_fun).__name__}{where()}"
        )
    for name, b in (("lower", lower), ("upper", upper)):
        ok = isinstance(b, (int, np.integer)) and not isinstance(b, (bool, np.bool_))
        if not ok and not isinstance(b, (str, bytes)) and hasattr(b, "dtype"):
            ok = np.shape(b) == () and get_aval(b).dtype in dtypes.INTEGERS
        if not ok:
            raise FunctxTypeError(
                f"fori_loop: {name} must be an integer scalar, got {b!r:.60}{where()}"
            )
    concrete = not isinstance(lower, Tracer) and not isinstance(upper, Tracer)
    if concrete:
        lo, hi = int(lower), int(upper)
        dt = get_aval(lower).dtype if not isinstance(lower, int) else dtypes.int32

        def body(carry, _):
            i, v = carry
            return (ops.add(i, ops.full((), 1, dt)), _checked(body_fun(i, v), v)), None

        (_, out), _ = scan(body, (ops.full((), lo, dt), init_val), None, length=max(hi - lo, 0))
        return out

    def cond_fn(c):
        return ops.lt(c[0], c[1])

    def body_fn(c):
        i, u, v = c
        return ops.add(i, ops.full((), 1, get_aval(i).dtype)), u, _checked(body_fun(i, v), v)

    lo_a, hi_a = get_aval(lower), get_aval(upper)
    dt = dtypes.result_type((lo_a.dtype, lo_a.weak_type), (hi_a.dtype, hi_a.weak_type))[0]
    lo = ops.convert_element_type(lower, dt)
    hi = ops.convert_element_type(upper, dt)
    return while_loop(cond_fn, body_fn, (lo, hi, init_val))[2]


while_p = control_primitive("while")


def _while_eval(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    return [a for a in body_jaxpr.out_avals]


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc = args[:cond_nconsts]
    bc = args[cond_nconsts : cond_nconsts + body_nconsts]
    carry = list(args[cond_nconsts + body_nconsts :])
    while bool(np.asarray(eval_jaxpr(cond_jaxpr.jaxpr, [], *cc, *carry)[0])):
        carry = eval_jaxpr(body_jaxpr.jaxpr, [], *bc, *carry)
    return as_ndarrays(carry, args)


while_p.abstract_eval = _while_eval
while_p.impl = _while_impl


def while_loop(cond_fun, body_fun, init_val):
    """Repeat ``val = body_fun(val)`` while ``cond_fun(val)`` (``jax.lax.while_loop``). Forward mode
    and vmap work; reverse mode raises, as in JAX (use scan or fori_loop with static bounds).

    Arguments:
      cond_fun: a function of ``val`` returning a bool scalar.
      body_fun: a function ``val -> val`` keeping ``val``'s structure and types.
      init_val: the initial value (a pytree of arrays).
    Returns:
      The first ``val`` for which ``cond_fun`` is False.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.while_loop(lambda v: v < 100, lambda v: v * 3, np.int32(1))
      Array(243, dtype=int32)
    """
    if not callable(cond_fun) or not callable(body_fun):
        raise FunctxTypeError(
            f"while_loop: cond_fun and body_fun must be callable, got "
            f"{type(cond_fun).__name__} and {type(body_fun).__name__}{where()}"
        )
    if config.jit_disabled():
        # under disable_jit the loop runs in Python, as in JAX; a traced condition falls back
        try:
            val = init_val
            while cond_fun(val):
                val = body_fun(val)
            return val
        except ConcretizationError:
            pass
    leaves, tree = tree_flatten(init_val)
    _refbox.no_refs_returned(leaves)
    avals = list(J.arg_avals("while_loop (init_val)", leaves, (init_val,)))
    traced, refs = _refbox.traced_or_boxes(
        lambda: (
            trace_pytree(cond_fun, avals, tree, star=False),
            trace_pytree(body_fun, avals, tree, star=False),
        )
    )
    if refs:  # (a function wrote Refs created outside it: they join the carry)
        return _while_refs(cond_fun, body_fun, init_val, refs)
    (cond_closed, cond_tree), (body_closed, body_tree) = traced
    if (
        len(cond_closed.out_avals) != 1
        or cond_closed.out_avals[0].shape != ()
        or cond_closed.out_avals[0].dtype != dtypes.bool_
    ):
        raise FunctxTypeError(
            f"while_loop: cond_fun {fun_name(cond_fun)} must return a boolean "
            f"scalar, but got output type(s) {types_str(cond_closed.out_avals)}"
            f"{where()}"
        )
    if body_tree != tree:
        raise FunctxTypeError(
            f"while_loop: body_fun {fun_name(body_fun)} must return a value with "
            f"the structure of init_val: {tree} != {body_tree}{where()}"
        )
    leaves, avals, changed = promote_weak(leaves, avals, body_closed.out_avals)
    if changed:
        cond_closed, _ = trace_pytree(cond_fun, avals, tree, star=False)
        body_closed, _ = trace_pytree(body_fun, avals, tree, star=False)
    if not all(same_type(a, b) for a, b in zip(avals, body_closed.out_avals)):
        raise FunctxTypeError(
            f"while_loop: body_fun {fun_name(body_fun)} output and input must have identical "
            f"types: takes {types_str(avals)}, returns {types_str(body_closed.out_avals)}{where()}"
        )
    cj, cconsts = hoist(cond_closed)
    bj, bconsts = hoist(body_closed)
    outs = while_p.bind(
        *cconsts,
        *bconsts,
        *leaves,
        cond_jaxpr=cj,
        body_jaxpr=bj,
        cond_nconsts=len(cconsts),
        body_nconsts=len(bconsts),
    )
    return tree_unflatten(tree, outs)


def _while_refs(cond_fun, body_fun, init_val, refs):
    """``while_loop`` of functions that write the references ``refs`` (boxes) created outside
    them: their values are carried, and written back after the loop."""

    def cond(carry):
        with _refbox.bound(refs, carry[1]):
            return cond_fun(carry[0])

    def body(carry):
        with _refbox.bound(refs, carry[1]) as finals:
            return body_fun(carry[0]), finals()

    val, vals = while_loop(cond, body, (init_val, _refbox.values(refs)))
    _refbox.store(refs, vals)
    return val


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nz = [not isinstance(t, J.Zero) for t in tangents]
    cc, bc, k = split3(primals, cond_nconsts, body_nconsts)
    _, bc_nz, k_nz = split3(nz, cond_nconsts, body_nconsts)
    k_diff = [J.is_differentiable(a) for a in body_jaxpr.out_avals]
    while True:
        out_nz = natural_out_nz(body_jaxpr, bc_nz + k_nz)
        new = [(a or b) and d for a, b, d in zip(k_nz, out_nz, k_diff)]
        if new == k_nz:
            break
        k_nz = new
    body, hconsts, _ = jvp_closed(body_jaxpr, bc_nz + k_nz, k_nz)
    bj = body.jaxpr
    nh = len(hconsts)
    n_in = len(body_jaxpr.in_avals)
    p_in = bj.invars[nh : nh + n_in]
    t_in = iter(bj.invars[nh + n_in :])
    pbc, pk = p_in[:body_nconsts], p_in[body_nconsts:]
    tbc = [next(t_in) for z in bc_nz if z]
    tk = [next(t_in) for z in k_nz if z]
    new_body = ClosedJaxpr(Jaxpr([], bj.invars[:nh] + pbc + tbc + pk + tk, bj.eqns, bj.outvars), [])
    # cond ignores the tangent carries
    cjj = cond_jaxpr.jaxpr
    t_dummy = [Var(J.tangent_aval(a)) for a, z in zip(body_jaxpr.out_avals, k_nz) if z]
    new_cond = ClosedJaxpr(Jaxpr([], cjj.invars + t_dummy, cjj.eqns, cjj.outvars), [])
    tbcv = [t for t, z in zip(tangents[cond_nconsts : cond_nconsts + body_nconsts], bc_nz) if z]
    tkv = [
        J.instantiate(t) if not isinstance(t, J.Zero) else zeros_of(J.tangent_aval(get_aval(p)))
        for t, p, z in zip(tangents[cond_nconsts + body_nconsts :], k, k_nz)
        if z
    ]
    outs = while_p.bind(
        *cc,
        *hconsts,
        *bc,
        *tbcv,
        *k,
        *tkv,
        cond_jaxpr=new_cond,
        body_jaxpr=new_body,
        cond_nconsts=cond_nconsts,
        body_nconsts=nh + len(bc) + len(tbcv),
    )
    n = len(k)
    t_it = iter(outs[n:])
    touts = [
        next(t_it) if z else J.Zero(J.tangent_aval(a)) for z, a in zip(k_nz, body_jaxpr.out_avals)
    ]
    return outs[:n], touts


J.jvp_rules[while_p] = _while_jvp


_WHILE_REVERSE_ERROR = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with dynamic "
    "start/stop values. Try using lax.scan, or using fori_loop with static start/stop."
)


def _while_partial_eval(eqn, unknowns):
    """As JAX: a while over the known carries computes the known outputs; the unknown outputs come
    from the whole loop run again (recomputing the known part). The unknown loop is not linear, so
    linearize and jvp work while reverse mode stops at its transpose rule."""
    p = eqn.params
    ncc, nbc = p["cond_nconsts"], p["body_nconsts"]
    cc_uk, bc_uk, k_uk = split3(unknowns, ncc, nbc)
    body = p["body_jaxpr"].jaxpr
    while True:
        pe = partial_eval_jaxpr(body, bc_uk + k_uk, k_uk)
        new = [a or b for a, b in zip(k_uk, pe.out_unknowns)]
        if new == k_uk:
            break
        k_uk = new
    cond_pe = partial_eval_jaxpr(p["cond_jaxpr"].jaxpr, cc_uk + k_uk, False)
    if cond_pe.out_unknowns[0] or all(k_uk):
        return None
    n_known = len(k_uk) - sum(k_uk)
    known_body = passes.dce_jaxpr(
        Jaxpr([], pe.known.invars, pe.known.eqns, pe.known.outvars[:n_known])
    )
    known_cond = passes.dce_jaxpr(
        Jaxpr([], cond_pe.known.invars, cond_pe.known.eqns, cond_pe.known.outvars[:1])
    )
    cc, bc, k = split3(eqn.invars, ncc, nbc)
    known_in = (
        [a for a, u in zip(cc, cc_uk) if not u],
        [a for a, u in zip(bc, bc_uk) if not u],
        [a for a, u in zip(k, k_uk) if not u],
    )
    k_eqn = Eqn(
        while_p,
        known_in[0] + known_in[1] + known_in[2],
        [v for v, u in zip(eqn.outvars, k_uk) if not u],
        dict(
            p,
            cond_jaxpr=ClosedJaxpr(known_cond, []),
            body_jaxpr=ClosedJaxpr(known_body, []),
            cond_nconsts=len(known_in[0]),
            body_nconsts=len(known_in[1]),
        ),
        eqn.source_info,
    )
    u_eqn = eqn.replace(outvars=[v if u else Var(v.aval) for v, u in zip(eqn.outvars, k_uk)])
    residuals = [a for a, u in zip(eqn.invars, unknowns) if not u and type(a) is not Literal]
    return [k_eqn], [u_eqn], k_uk, residuals


partial_eval_rules[while_p] = _while_partial_eval


def _while_transpose(cts, *args, **params):
    raise UnsupportedValueError(_WHILE_REVERSE_ERROR + where())


T.transpose_rules[while_p] = _while_transpose


def _while_batch(args, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    size = V.axis_size_of(args, dims)
    cc, bc, k = split3(args, cond_nconsts, body_nconsts)
    ccd, bcd, kd = split3(dims, cond_nconsts, body_nconsts)
    k_b = [d is not None for d in kd]
    while True:
        _, out_dims = V.batch_jaxpr(body_jaxpr, list(bcd) + [0 if b else None for b in k_b], size)
        new = [b or (d is not None) for b, d in zip(k_b, out_dims)]
        if new == k_b:
            break
        k_b = new
    _, pred_dims = V.batch_jaxpr(cond_jaxpr, list(ccd) + [0 if b else None for b in k_b], size)
    if pred_dims[0] is not None:
        k_b = [True] * len(k)  # a batched predicate: every example carries its own state
    kdims = [0 if b else None for b in k_b]
    cj, cconsts, pd = batch_closed(cond_jaxpr, list(ccd) + kdims, size)
    bj, bconsts, _ = batch_closed(body_jaxpr, list(bcd) + kdims, size, kdims)
    k2 = [V.bdim_at_front(v, d, size) if b else v for v, d, b in zip(k, kd, k_b)]
    if pd[0] is None:
        outs = while_p.bind(
            *cconsts,
            *cc,
            *bconsts,
            *bc,
            *k2,
            cond_jaxpr=cj,
            body_jaxpr=bj,
            cond_nconsts=len(cconsts) + len(cc),
            body_nconsts=len(bconsts) + len(bc),
        )
        return outs, kdims
    # Loop while any example's predicate holds; examples that are done keep their state.
    if contains_check(body_jaxpr) or contains_check(cond_jaxpr):  # (JAX refuses it too)
        raise FunctxValueError(BATCHED_WHILE_ERROR)
    n_cc, n_bc = len(cconsts) + len(cc), len(bconsts) + len(bc)
    k_avals = [get_aval(v) for v in k2]

    def any_cond(*a):
        p = eval_jaxpr(cj.jaxpr, [], *a)[0]
        return [ops.reduce_or(p, (0,))], None

    def masked_body(*a):
        ccs, bcs, carry = a[:n_cc], a[n_cc : n_cc + n_bc], a[n_cc + n_bc :]
        p = eval_jaxpr(cj.jaxpr, [], *ccs, *carry)[0]
        new = eval_jaxpr(bj.jaxpr, [], *bcs, *carry)
        out = []
        for old, nv in zip(carry, new):
            which = ops.broadcast_in_dim(p, get_aval(nv).shape, (0,))
            out.append(ops.select(which, nv, old))
        return out, None

    c_avals = [get_aval(v) for v in list(cconsts) + list(cc)]
    b_avals = [get_aval(v) for v in list(bconsts) + list(bc)]
    acj, _ = trace_flat(any_cond, c_avals + k_avals)
    acj, acc = hoist(acj)
    mbj, _ = trace_flat(masked_body, c_avals + b_avals + k_avals)
    mbj, mbc = hoist(mbj)
    outs = while_p.bind(
        *acc,
        *cconsts,
        *cc,
        *mbc,
        *cconsts,
        *cc,
        *bconsts,
        *bc,
        *k2,
        cond_jaxpr=acj,
        body_jaxpr=mbj,
        cond_nconsts=len(acc) + n_cc,
        body_nconsts=len(mbc) + n_cc + n_bc,
    )
    return outs, [0] * len(k2)


V.batching_rules[while_p] = _while_batch


def _while_lowering(g, ins, avals, **params):
    """jit: a ``loop`` kernel that runs the compiled cond and body while cond holds."""
    return lower_to_loop(g, ins, avals, "while", **params)


lowerings[while_p] = _while_lowering

__all__ = ["fori_loop", "while_loop", "while_p"]
