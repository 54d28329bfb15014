"""``cond`` and ``switch``: one ``cond`` equation whose branches are sub-Jaxprs.

All rules of the ``cond`` primitive are here: shape inference, the eager implementation, jvp,
partial evaluation (the tangent half becomes a ``cond`` of its own), transpose, batching (an
unbatched index keeps one ``cond``; a batched one runs every branch and selects) and the lowering
(a loop kernel over the branches' compiled sub-programs).
"""

from __future__ import annotations

import numpy as np

from functx import _refbox, config, dtypes, ops
from functx.control.common import (
    as_ndarrays,
    batch_closed,
    control_primitive,
    fun_name,
    jvp_closed,
    lower_to_loop,
    share_consts,
    trace_pytree,
    transpose_closed,
    types_str,
    zeros_of,
)
from functx.core import ClosedJaxpr, Eqn, Jaxpr, Var, same_type
from functx.errors import FunctxTypeError, FunctxValueError, UnsupportedError
from functx.interpreter import eval_jaxpr
from functx.lowering.rules import lowerings
from functx.source_info import where
from functx.tracing import Tracer, get_aval, trace_flat, tree_flatten, tree_unflatten
from functx.transforms import jvp as J, transpose as T, vmap as V
from functx.transforms.partial_eval import partial_eval_jaxpr, partial_eval_rules

cond_p = control_primitive("cond")


def _cond_eval(index, *operands, branches):
    if index.shape != () or index.dtype not in dtypes.INTEGERS:
        raise FunctxTypeError(
            f"cond: the branch index must be an integer scalar, got {index.str_short()}"
        )
    for b in branches:
        if len(b.in_avals) != len(operands) or not all(
            same_type(a, o) for a, o in zip(b.in_avals, operands)
        ):
            raise FunctxTypeError(
                f"cond: branch takes {types_str(b.in_avals)}, given {types_str(operands)}"
            )
    outs = branches[0].out_avals
    return [
        a.update(weak_type=all(b.out_avals[i].weak_type for b in branches))
        for i, a in enumerate(outs)
    ]


def _cond_impl(index, *operands, branches):
    i = int(np.clip(int(index), 0, len(branches) - 1))
    return as_ndarrays(eval_jaxpr(branches[i].jaxpr, [], *operands), operands)


cond_p.abstract_eval = _cond_eval
cond_p.impl = _cond_impl


def _common_branches(what, funs, operands, labels):
    """Trace each branch on the operands; consts of all branches become shared leading operands.
    ``what`` (cond or switch) and ``labels`` (``true_fun``, ``branch 1``, ...) are for errors."""
    leaves, in_tree = tree_flatten(tuple(operands))
    avals = list(J.arg_avals(what, leaves, operands))
    traced = [trace_pytree(f, avals, in_tree) for f in funs]
    out_tree0 = traced[0][1]
    out_avals0 = traced[0][0].out_avals
    name0 = f"{labels[0]} {fun_name(funs[0])}"
    for f, label, (c, t) in zip(funs[1:], labels[1:], traced[1:]):
        if t != out_tree0:
            raise FunctxTypeError(
                f"{what} branches must return the same structure: {label} {fun_name(f)} returns "
                f"{t} but {name0} returns {out_tree0}{where()}"
            )
        if len(c.out_avals) != len(out_avals0) or not all(
            same_type(a, b) for a, b in zip(c.out_avals, out_avals0)
        ):
            raise FunctxTypeError(
                f"{what} branches must return the same types: {label} {fun_name(f)} returns "
                f"{types_str(c.out_avals)} but {name0} returns {types_str(out_avals0)}{where()}"
            )
    all_consts, const_avals = [], []
    for c, _ in traced:
        all_consts.extend(c.consts)
        const_avals.append([v.aval for v in c.jaxpr.constvars])
    branches = []
    for i, (c, _) in enumerate(traced):
        invars = []
        for j, avs in enumerate(const_avals):
            invars.extend(c.jaxpr.constvars if j == i else [Var(a) for a in avs])
        branches.append(
            ClosedJaxpr(Jaxpr([], invars + c.jaxpr.invars, c.jaxpr.eqns, c.jaxpr.outvars), [])
        )
    return tuple(branches), all_consts, leaves, out_tree0


def _branches_refs(choose, funs, operands, refs):
    """``cond``/``switch`` (``choose(branches, operands)``) of branches that write the
    references ``refs`` (boxes) created outside them: their values are passed in and returned,
    and written back afterwards."""

    def threaded(fun):
        def branch(vals, *ops):
            with _refbox.bound(refs, vals) as finals:
                return fun(*ops), finals()

        return branch

    out, vals = choose([threaded(f) for f in funs], (_refbox.values(refs), *operands))
    _refbox.store(refs, vals)
    return out


def _check_concrete_or_scalar(pred, what):
    a = get_aval(pred)
    if a.shape != ():
        raise FunctxTypeError(
            f"{what} must be a scalar, got {a.str_short()}{where()}; for an "
            "elementwise choice use functx.numpy.where"
        )
    return a


def cond(pred, true_fun, false_fun, *operands):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)`` (``jax.lax.cond``), as one
    ``cond`` equation.

    Both branches are traced; they must return the same structure and types. Under ``vmap`` with a
    batched predicate both branches run and the results are selected.

    Arguments:
      pred: a bool or integer scalar (nonzero is True), concrete or traced.
      true_fun, false_fun: functions of ``*operands`` with outputs of the same structure and types.
      *operands: the branches' arguments (pytrees of arrays).
    Returns:
      The output of the branch taken.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> lax.cond(np.float32(2.0) > 1, lambda x: x * 10, lambda x: x - 1, np.float32(3.0))
      Array(30., dtype=float32)
    """
    if not callable(true_fun) or not callable(false_fun):
        raise FunctxTypeError(
            f"cond: true_fun and false_fun must be callable, got "
            f"{type(true_fun).__name__} and {type(false_fun).__name__}{where()}"
        )
    a = _check_concrete_or_scalar(pred, "cond predicate")
    if a.dtype != dtypes.bool_ and a.dtype not in dtypes.INTEGERS and a.dtype not in dtypes.FLOATS:
        raise FunctxTypeError(
            f"cond predicate must be a boolean or number, got {a.str_short()}{where()}"
        )
    if config.jit_disabled() and not isinstance(pred, Tracer):
        # under disable_jit a concrete predicate picks the branch in Python, as in JAX
        return (true_fun if bool(np.asarray(pred)) else false_fun)(*operands)
    index = ops.convert_element_type(
        ops.ne(pred, ops.full((), 0, a.dtype)) if a.dtype != dtypes.bool_ else pred, dtypes.int32
    )
    traced, refs = _refbox.traced_or_boxes(
        lambda: _common_branches("cond", (false_fun, true_fun), operands, ("false_fun", "true_fun"))
    )
    if refs:  # (a branch wrote Refs created outside it: they join the operands and outputs)
        return _branches_refs(
            lambda fs, ops: cond(pred, fs[1], fs[0], *ops), (false_fun, true_fun), operands, refs
        )
    branches, consts, leaves, out_tree = traced
    outs = cond_p.bind(index, *consts, *leaves, branches=branches)
    return tree_unflatten(out_tree, outs)


def switch(index, branches, *operands):
    """``branches[index](*operands)`` with ``index`` clamped into range (``jax.lax.switch``), as one
    ``cond`` equation.

    Arguments:
      index: an integer scalar, concrete or traced; clamped to ``[0, len(branches) - 1]``.
      branches: a non-empty sequence of functions of ``*operands`` with outputs of the same
        structure
        and types.
      *operands: the branches' arguments (pytrees of arrays).
    Returns:
      The output of the branch taken.
    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> fns = [lambda x: x + 1, lambda x: x * 2, lambda x: -x]
      >>> lax.switch(np.int32(1), fns, np.float32(5.0)), lax.switch(7, fns, np.float32(5.0))
      (Array(10., dtype=float32), Array(-5., dtype=float32))
    """
    a = _check_concrete_or_scalar(index, "switch index")
    if a.dtype not in dtypes.INTEGERS:
        raise FunctxTypeError(
            f"switch index must be an integer scalar, got {a.str_short()}{where()}"
        )
    if not isinstance(branches, (list, tuple)):
        raise FunctxTypeError(
            f"switch: branches must be a sequence of callables, got "
            f"{type(branches).__name__}{where()}"
        )
    branches = tuple(branches)
    if not branches:
        raise FunctxValueError(f"switch needs at least one branch{where()}")
    bad = [i for i, b in enumerate(branches) if not callable(b)]
    if bad:
        raise FunctxTypeError(
            f"switch: branches must be callables; branch {bad[0]} is "
            f"{type(branches[bad[0]]).__name__}{where()}"
        )
    if config.jit_disabled() and not isinstance(index, Tracer):
        # under disable_jit a concrete index picks the branch in Python, as in JAX
        return branches[min(max(int(np.asarray(index)), 0), len(branches) - 1)](*operands)
    idx = ops.convert_element_type(index, dtypes.int32)
    idx = ops.clamp(0, idx, len(branches) - 1)
    traced, refs = _refbox.traced_or_boxes(
        lambda: _common_branches(
            "switch", branches, operands, [f"branch {i}" for i in range(len(branches))]
        )
    )
    if refs:  # (a branch wrote Refs created outside it: they join the operands and outputs)
        return _branches_refs(lambda fs, ops: switch(index, fs, *ops), branches, operands, refs)
    bs, consts, leaves, out_tree = traced
    outs = cond_p.bind(idx, *consts, *leaves, branches=bs)
    return tree_unflatten(out_tree, outs)


def _cond_jvp(primals, tangents, *, branches):
    index, operands = primals[0], primals[1:]
    nz = [not isinstance(t, J.Zero) for t in tangents[1:]]
    out_diff = [J.is_differentiable(a) for a in branches[0].out_avals]
    hoisted = []
    for b in branches:
        j, consts, _ = jvp_closed(b, nz, out_diff)
        hoisted.append((j, consts))
    wrapped, all_consts = share_consts(hoisted)
    ts = [t for t, z in zip(tangents[1:], nz) if z]
    res = cond_p.bind(index, *all_consts, *operands, *ts, branches=tuple(wrapped))
    n = len(out_diff)
    outs, t_it = res[:n], iter(res[n:])
    touts = [
        next(t_it) if d else J.Zero(J.tangent_aval(a))
        for d, a in zip(out_diff, branches[0].out_avals)
    ]
    return outs, touts


J.jvp_rules[cond_p] = _cond_jvp


def _cond_partial_eval(eqn, unknowns):
    if unknowns[0]:
        return None
    branches = eqn.params["branches"]
    ops_uk = unknowns[1:]
    n_out = len(eqn.outvars)
    out_uk = [False] * n_out
    for b in branches:
        pe = partial_eval_jaxpr(b.jaxpr, ops_uk, False)
        out_uk = [a or b_ for a, b_ in zip(out_uk, pe.out_unknowns)]
    pes = [partial_eval_jaxpr(b.jaxpr, ops_uk, out_uk) for b in branches]
    res_avals = [a for pe in pes for a in pe.res_avals]
    offsets = np.cumsum([0] + [len(pe.res_avals) for pe in pes])
    known_branches, unknown_branches = [], []
    for i, pe in enumerate(pes):
        # known branch i: known ops -> known outs + all residual slots (zeros for other branches)
        k = pe.known
        n_known_out = len(k.outvars) - len(pe.res_avals)

        def kfun(*args, k=k, i=i, n_known_out=n_known_out, pe=pe):
            outs = eval_jaxpr(k, [], *args)
            slots = []
            for j, other in enumerate(pes):
                if j == i:
                    slots.extend(outs[n_known_out:])
                else:
                    slots.extend(zeros_of(a) for a in other.res_avals)
            return list(outs[:n_known_out]) + slots, None

        kc, _ = trace_flat(kfun, [v.aval for v in k.invars])
        known_branches.append(kc)
        u = pe.unknown
        pre = [Var(a) for a in res_avals[: offsets[i]]]
        post = [Var(a) for a in res_avals[offsets[i + 1] :]]
        n_res_i = len(pe.res_avals)
        unknown_branches.append(
            ClosedJaxpr(
                Jaxpr([], pre + u.invars[:n_res_i] + post + u.invars[n_res_i:], u.eqns, u.outvars),
                [],
            )
        )
    if any(len(b.consts) for b in known_branches):
        return None  # (the known branches create no array constants in practice)
    res_vars = [Var(a) for a in res_avals]
    index = eqn.invars[0]
    known_ops = [a for a, u in zip(eqn.invars[1:], ops_uk) if not u]
    unknown_ops = [a for a, u in zip(eqn.invars[1:], ops_uk) if u]
    known_outs = [v for v, u in zip(eqn.outvars, out_uk) if not u]
    unknown_outs = [v for v, u in zip(eqn.outvars, out_uk) if u]
    k_eqn = Eqn(
        cond_p,
        [index] + known_ops,
        known_outs + res_vars,
        {"branches": tuple(known_branches)},
        eqn.source_info,
    )
    u_eqn = Eqn(
        cond_p,
        [index] + res_vars + unknown_ops,
        unknown_outs,
        {"branches": tuple(unknown_branches)},
        eqn.source_info,
    )
    return [k_eqn], [u_eqn], out_uk, [index] + res_vars


partial_eval_rules[cond_p] = _cond_partial_eval


def _cond_transpose(cts, index, *operands, branches):
    if T.is_undefined(index):
        raise UnsupportedError(f"cond is not linear in its branch index{where()}")
    lin = [T.is_undefined(x) for x in operands]
    res = [x for x in operands if not T.is_undefined(x)]
    out_avals = branches[0].out_avals
    cts = [zeros_of(a) if isinstance(c, J.Zero) else c for c, a in zip(cts, out_avals)]
    wrapped, all_consts = share_consts([transpose_closed(b, lin, out_avals) for b in branches])
    outs = iter(cond_p.bind(index, *all_consts, *res, *cts, branches=tuple(wrapped)))
    return [None] + [next(outs) if lv else None for lv in lin]


T.transpose_rules[cond_p] = _cond_transpose


def _cond_batch(args, dims, *, branches):
    size = V.axis_size_of(args, dims)
    index, operands = args[0], args[1:]
    idims, odims = dims[0], list(dims[1:])
    n_out = len(branches[0].out_avals)
    if idims is None:
        # An output is batched when it is in any branch; the others stay unbatched.
        out_b = [False] * n_out
        for b in branches:
            out_b = [ob or d is not None for ob, d in zip(out_b, V.batch_jaxpr(b, odims, size)[1])]
        force = [0 if ob else None for ob in out_b]
        hoisted = []
        for b in branches:
            j, consts, _ = batch_closed(b, odims, size, force)
            hoisted.append((j, consts))
        wrapped, all_consts = share_consts(hoisted)
        outs = cond_p.bind(index, *all_consts, *operands, branches=wrapped)
        return outs, force
    # A batched index: run every branch and select per example.
    results = []
    for b in branches:
        j, consts, _ = batch_closed(b, odims, size, [0] * n_out)
        results.append(eval_jaxpr(j.jaxpr, [], *consts, *operands))
    idx = V.bdim_at_front(index, idims, size)
    idx = ops.clamp(0, idx, len(branches) - 1)
    outs = []
    for k in range(n_out):
        shape = get_aval(results[0][k]).shape
        which = ops.broadcast_in_dim(idx, shape, (0,))
        outs.append(
            ops.select_n(which, *[r[k] for r in results]) if len(branches) > 1 else results[0][k]
        )
    return outs, [0] * n_out


V.batching_rules[cond_p] = _cond_batch


def _cond_lowering(g, ins, avals, **params):
    """jit: a ``loop`` kernel that runs the chosen branch's compiled sub-program."""
    return lower_to_loop(g, ins, avals, "cond", **params)


lowerings[cond_p] = _cond_lowering

__all__ = ["cond", "switch", "cond_p"]
