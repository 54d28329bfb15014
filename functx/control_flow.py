"""Control flow as primitives with sub-Jaxprs: ``cond`` (and ``switch``), ``scan`` (and ``map``,
``fori_loop`` with static bounds), ``while_loop`` (and ``fori_loop`` with traced bounds).

Each primitive has shape inference, an eager implementation, a jvp rule, a partial-evaluation
rule (so the tangent half becomes a primitive of its own) and a transpose rule (for while_loop, the
declared reverse-mode error), all in this file. Batching rules are registered with
``functx.transforms.vmap`` at the end.
"""

from __future__ import annotations

import numpy as np

from functx import dtypes, ops, primitives as P
from functx.core import ClosedJaxpr, Eqn, Jaxpr, Literal, Primitive, ShapedArray, Var, same_type
from functx.errors import FunctxTypeError, FunctxValueError, UnsupportedError
from functx.interpreter import eval_jaxpr
from functx.source_info import where
from functx.tracing import Tracer, get_aval, trace_flat, tree_flatten, tree_unflatten
from functx.transforms import jvp as J, passes, transpose as T
from functx.transforms.partial_eval import partial_eval_jaxpr, partial_eval_rules


def _prim(name):
    p = Primitive(name, multiple_results=True, group="control")
    P.registry[name] = p
    return p


def _fname(f):
    return getattr(f, "__name__", type(f).__name__)


def _hoist(closed: ClosedJaxpr):
    """Consts of a traced function become leading inputs: (ClosedJaxpr without consts, consts)."""
    j = closed.jaxpr
    hoisted = ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.eqns, j.outvars), [])
    return hoisted, list(closed.consts)


def _trace(fun, avals, in_tree, star=True):
    """Trace ``fun`` on pytree arguments with the given leaf avals; returns (closed, out_tree).
    With ``star`` the tree is a tuple of positional arguments, else the single argument."""
    box = {}

    def flat(*xs):
        args = tree_unflatten(in_tree, list(xs))
        out = fun(*args) if star else fun(args)
        leaves, tree = tree_flatten(out)
        box["tree"] = tree
        return leaves, None

    closed, _ = trace_flat(flat, avals)
    return closed, box["tree"]


def _promote_weak(leaves, in_avals, out_avals):
    """JAX's weak-type rule for loop carries: a weakly typed initial value (a Python scalar, say)
    whose loop body returns another dtype of the same shape takes the promoted dtype. Returns
    ``(leaves, avals, changed)``."""
    changed = False
    leaves, in_avals = list(leaves), list(in_avals)
    for i, (a, o) in enumerate(zip(in_avals, out_avals)):
        if a.weak_type and a.shape == o.shape and a.dtype != o.dtype:
            dt = dtypes.result_type((a.dtype, True), (o.dtype, o.weak_type))[0]
            leaves[i] = ops.convert_element_type(leaves[i], dt)
            in_avals[i] = get_aval(leaves[i])
            changed = True
    return leaves, in_avals, changed


def _types(avals):
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def _np(outs, args=()):
    """Outputs of an eager implementation as ndarrays. One that is an input passed through is
    copied: the eager path freezes the arrays it returns, and the caller's must stay writeable."""
    ins = {id(a) for a in args}
    return [np.array(o) if id(o) in ins else np.asarray(o) for o in outs]


def _zeros(aval):
    return ops.full(aval.shape, 0, aval.dtype)


def _jvp_closed(closed: ClosedJaxpr, nonzeros, instantiate):
    """jvp of a consts-free Jaxpr: inputs primals + nonzero tangents, outputs primals + tangents of
    the outputs that are nonzero or instantiated. Returns (jaxpr with hoisted consts, consts,
    out_nz)."""
    in_avals = closed.in_avals
    t_avals = [J.tangent_aval(a) for a, nz in zip(in_avals, nonzeros) if nz]
    box = {}

    def fun(*args):
        ps, ts = list(args[: len(in_avals)]), iter(args[len(in_avals) :])
        tangents = [
            next(ts) if nz else J.Zero(J.tangent_aval(a)) for a, nz in zip(in_avals, nonzeros)
        ]
        outs, touts = J.jvp_eval(closed.jaxpr, closed.consts, ps, tangents)
        out_nz = [
            (not isinstance(t, J.Zero) or inst) and J.is_differentiable(o.aval)
            for t, inst, o in zip(touts, instantiate, closed.jaxpr.outvars)
        ]
        box["nz"] = out_nz
        return outs + [J.instantiate(t) for t, nz in zip(touts, out_nz) if nz], None

    new, _ = trace_flat(fun, list(in_avals) + t_avals)
    hoisted, consts = _hoist(new)
    return hoisted, consts, box["nz"]


def _natural_out_nz(closed, nonzeros):
    return _jvp_closed(closed, nonzeros, [False] * len(closed.out_avals))[2]


def _transpose_closed(closed: ClosedJaxpr, linear_mask, ct_avals):
    """A consts-free Jaxpr mapping (non-linear inputs, output cotangents) to the cotangents of the
    linear inputs (zeros materialised)."""
    in_avals = closed.in_avals
    res_avals = [a for a, lin in zip(in_avals, linear_mask) if not lin]

    def fun(*args):
        res, cts = iter(args[: len(res_avals)]), list(args[len(res_avals) :])
        full = [T.UndefinedPrimal(a) if lin else next(res) for a, lin in zip(in_avals, linear_mask)]
        cts_in = T.backward_pass(closed.jaxpr, closed.consts, full, cts)
        return [J.instantiate(c) for c, lin in zip(cts_in, linear_mask) if lin], None

    new, _ = trace_flat(fun, res_avals + list(ct_avals))
    return _hoist(new)


def _share_consts(hoisted):
    """Branches as (consts-free Jaxpr with leading const inputs, consts): give every branch the
    consts of all branches as leading inputs, so they share one signature."""
    all_consts = [c for _, cs in hoisted for c in cs]
    wrapped = []
    for i, (j, cs) in enumerate(hoisted):
        invars = []
        for k, (_, cs2) in enumerate(hoisted):
            invars.extend(j.jaxpr.invars[: len(cs)] if k == i else [Var(get_aval(x)) for x in cs2])
        wrapped.append(
            ClosedJaxpr(
                Jaxpr([], invars + j.jaxpr.invars[len(cs) :], j.jaxpr.eqns, j.jaxpr.outvars), []
            )
        )
    return tuple(wrapped), all_consts


# =================================================================================================
# cond / switch
# =================================================================================================
cond_p = _prim("cond")


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
                f"cond: branch takes {_types(b.in_avals)}, given {_types(operands)}"
            )
    outs = branches[0].out_avals
    return [
        a.update(weak_type=all(b.out_avals[i].weak_type for b in branches))
        for i, a in enumerate(outs)
    ]


def _cond_impl(index, *operands, branches):
    i = int(np.clip(int(index), 0, len(branches) - 1))
    return _np(eval_jaxpr(branches[i].jaxpr, [], *operands), operands)


cond_p.abstract_eval = _cond_eval
cond_p.impl = _cond_impl


def _common_branches(what, funs, operands, labels):
    """Trace each branch on the operands; consts of all branches become shared leading operands.
    ``what`` (cond or switch) and ``labels`` (``true_fun``, ``branch 1``, ...) are for errors."""
    leaves, in_tree = tree_flatten(tuple(operands))
    avals = list(J.arg_avals(what, leaves, operands))
    traced = [_trace(f, avals, in_tree) for f in funs]
    out_tree0 = traced[0][1]
    out_avals0 = traced[0][0].out_avals
    name0 = f"{labels[0]} {_fname(funs[0])}"
    for f, label, (c, t) in zip(funs[1:], labels[1:], traced[1:]):
        if t != out_tree0:
            raise FunctxTypeError(
                f"{what} branches must return the same structure: {label} {_fname(f)} returns "
                f"{t} but {name0} returns {out_tree0}{where()}"
            )
        if len(c.out_avals) != len(out_avals0) or not all(
            same_type(a, b) for a, b in zip(c.out_avals, out_avals0)
        ):
            raise FunctxTypeError(
                f"{what} branches must return the same types: {label} {_fname(f)} returns "
                f"{_types(c.out_avals)} but {name0} returns {_types(out_avals0)}{where()}"
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


def _check_concrete_or_scalar(pred, what):
    a = get_aval(pred)
    if a.shape != ():
        raise FunctxTypeError(
            f"{what} must be a scalar, got {a.str_short()}{where()}; for an "
            "elementwise choice use functx.numpy.where"
        )
    return a


def cond(pred, true_fun, false_fun, *operands):
    """``true_fun(*operands)`` if ``pred`` else ``false_fun(*operands)``, as one ``cond`` equation.

    Both branches are traced; they must return the same structure and types. Under ``vmap`` with a
    batched predicate both branches run and the results are selected.
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
    index = ops.convert_element_type(
        ops.ne(pred, ops.full((), 0, a.dtype)) if a.dtype != dtypes.bool_ else pred, dtypes.int32
    )
    branches, consts, leaves, out_tree = _common_branches(
        "cond", (false_fun, true_fun), operands, ("false_fun", "true_fun")
    )
    outs = cond_p.bind(index, *consts, *leaves, branches=branches)
    return tree_unflatten(out_tree, outs)


def switch(index, branches, *operands):
    """``branches[clamp(index)](*operands)`` as one ``cond`` equation."""
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
    idx = ops.convert_element_type(index, dtypes.int32)
    idx = ops.clamp(0, idx, len(branches) - 1)
    bs, consts, leaves, out_tree = _common_branches(
        "switch", branches, operands, [f"branch {i}" for i in range(len(branches))]
    )
    outs = cond_p.bind(idx, *consts, *leaves, branches=bs)
    return tree_unflatten(out_tree, outs)


def _cond_jvp(primals, tangents, *, branches):
    index, operands = primals[0], primals[1:]
    nz = [not isinstance(t, J.Zero) for t in tangents[1:]]
    out_diff = [J.is_differentiable(a) for a in branches[0].out_avals]
    hoisted = []
    for b in branches:
        j, consts, _ = _jvp_closed(b, nz, out_diff)
        hoisted.append((j, consts))
    wrapped, all_consts = _share_consts(hoisted)
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
                    slots.extend(_zeros(a) for a in other.res_avals)
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
    cts = [_zeros(a) if isinstance(c, J.Zero) else c for c, a in zip(cts, out_avals)]
    wrapped, all_consts = _share_consts([_transpose_closed(b, lin, out_avals) for b in branches])
    outs = iter(cond_p.bind(index, *all_consts, *res, *cts, branches=tuple(wrapped)))
    return [None] + [next(outs) if lv else None for lv in lin]


T.transpose_rules[cond_p] = _cond_transpose


# =================================================================================================
# scan
# =================================================================================================
scan_p = _prim("scan")


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
        raise FunctxTypeError(f"scan: body takes {_types(body_in)}, given {_types(given)}")
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
        ys.append(_np(y))
    if reverse:
        ys.reverse()
    y_avals = jaxpr.out_avals[num_carry:]
    stacked = [
        np.stack([y[k] for y in ys]) if ys else np.zeros((0,) + a.shape, a.dtype)
        for k, a in enumerate(y_avals)
    ]
    return _np(carry, args) + stacked


scan_p.abstract_eval = _scan_eval
scan_p.impl = _scan_impl


def scan(f, init, xs=None, length=None, reverse=False, unroll=1):
    """``lax.scan``: loop ``carry, y = f(carry, x)`` over the leading axis of ``xs``; returns the
    final carry and the stacked ``y``s. One ``scan`` equation; reverse mode stacks residuals."""
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
        raise FunctxTypeError(
            f"scan got values with different leading axis sizes: {sorted(lengths)}{where()}"
        )
    if not lengths:
        raise FunctxTypeError(f"scan got no values to scan over and `length` not provided{where()}")
    n = lengths.pop()
    c_leaves, c_tree = tree_flatten(init)
    c_avals = [get_aval(c) for c in c_leaves]
    x_avals = [ShapedArray(get_aval(x).shape[1:], get_aval(x).dtype) for x in x_leaves]
    box = {}

    def body(*leaves):
        carry = tree_unflatten(c_tree, list(leaves[: len(c_leaves)]))
        x = tree_unflatten(x_tree, list(leaves[len(c_leaves) :]))
        out = f(carry, x)
        if not isinstance(out, tuple) or len(out) != 2:
            raise FunctxTypeError(
                f"scan body {_fname(f)} must return a pair (carry, y), got "
                f"{type(out).__name__}{where()}"
            )
        new_c, y = out
        nc_leaves, nc_tree = tree_flatten(new_c)
        y_leaves, y_tree = tree_flatten(y)
        box.update(c_tree=nc_tree, y_tree=y_tree, n_y=len(y_leaves))
        return nc_leaves + y_leaves, None

    closed, _ = trace_flat(body, c_avals + x_avals)
    if box["c_tree"] != c_tree:
        raise FunctxTypeError(
            f"scan body {_fname(f)} must return a carry with the structure of "
            f"its input: {c_tree} != {box['c_tree']}{where()}"
        )
    c_leaves, c_avals, changed = _promote_weak(c_leaves, c_avals, closed.out_avals[: len(c_leaves)])
    if changed:
        closed, _ = trace_flat(body, c_avals + x_avals)
    c_out = closed.out_avals[: len(c_leaves)]
    if not all(same_type(a, b) for a, b in zip(c_avals, c_out)):
        raise FunctxTypeError(
            f"scan body function carry input and carry output must have equal types: "
            f"{_fname(f)} takes carry {_types(c_avals)} and returns {_types(c_out)}{where()}"
        )
    body_j, consts = _hoist(closed)
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


def _split3(xs, a, b):
    return list(xs[:a]), list(xs[a : a + b]), list(xs[a + b :])


def _scan_jvp(primals, tangents, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
    nz = [not isinstance(t, J.Zero) for t in tangents]
    c_nz, k_nz, x_nz = _split3(nz, num_consts, num_carry)
    k_diff = [J.is_differentiable(a) for a in jaxpr.in_avals[num_consts : num_consts + num_carry]]
    while True:  # carries with a nonzero tangent: fixpoint
        out_nz = _natural_out_nz(jaxpr, c_nz + k_nz + x_nz)
        new = [(a or b) and d for a, b, d in zip(k_nz, out_nz[:num_carry], k_diff)]
        if new == k_nz:
            break
        k_nz = new
    n_y = len(jaxpr.out_avals) - num_carry
    body, hconsts, out_nz = _jvp_closed(jaxpr, c_nz + k_nz + x_nz, k_nz + [False] * n_y)
    bj = body.jaxpr
    nh = len(hconsts)
    n_in = len(jaxpr.in_avals)
    p_in = bj.invars[nh : nh + n_in]
    t_in = iter(bj.invars[nh + n_in :])
    pc, pk, px = _split3(p_in, num_consts, num_carry)
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
    c, k, x = _split3(primals, num_consts, num_carry)
    tcv, tkv, txv = _split3(tangents, num_consts, num_carry)
    tcv = [t for t, z in zip(tcv, c_nz) if z]
    tkv = [
        J.instantiate(t) if not isinstance(t, J.Zero) else _zeros(J.tangent_aval(get_aval(p)))
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
    c_uk, k_uk, x_uk = _split3(unknowns, nc, nk)
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
    c_in, k_in, x_in = _split3(eqn.invars, nc, nk)
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
    u_c, u_k, u_x = _split3(unk.invars[n_res:], sum(c_uk), sum(k_uk))
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
    c, k, x = _split3(args, num_consts, num_carry)
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
    cts = [_zeros(a) if isinstance(ct, J.Zero) else ct for ct, a in zip(cts, out_avals)]
    ct_k, ct_y = cts[:num_carry], cts[num_carry:]
    body_in = jaxpr.in_avals
    bc, bk, bx = _split3(body_in, num_consts, num_carry)
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
        cc, kk, xx = _split3(cts_in, num_consts, num_carry)
        new_acc = [ops.add(a, ct) for a, ct in zip(acc, [ct for ct in cc if ct is not None])]
        return new_acc + kk + [ct for ct in xx if ct is not None], None

    closed_t, _ = trace_flat(
        body_t, res_c_avals + lin_c_avals + list(bk) + res_x_avals + list(y_avals)
    )
    body_j, hconsts = _hoist(closed_t)
    res_c = [a for a in c if not T.is_undefined(a)]
    res_x = [a for a in x if not T.is_undefined(a)]
    acc0 = [_zeros(a) for a in lin_c_avals]
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


def map(f, xs):  # noqa: A001
    """``lax.map``: ``f`` applied over the leading axis of ``xs`` with a scan."""
    if not callable(f):
        raise FunctxTypeError(f"map: f must be callable, got {type(f).__name__}{where()}")
    _, ys = scan(lambda c, x: (c, f(x)), (), xs)
    return ys


def fori_loop(lower, upper, body_fun, init_val, unroll=1):
    """``lax.fori_loop``: a scan when ``lower`` and ``upper`` are concrete (reverse mode works),
    a while_loop otherwise."""

    def _checked(out, v):
        o_leaves, o_tree = tree_flatten(out)
        v_leaves, v_tree = tree_flatten(v)
        o_avals, v_avals = [get_aval(x) for x in o_leaves], [get_aval(x) for x in v_leaves]
        if o_tree != v_tree:
            raise FunctxTypeError(
                f"fori_loop: body_fun {_fname(body_fun)} must return a value with the structure of "
                f"init_val: takes {v_tree}, returns {o_tree}{where()}"
            )
        if not all(same_type(a, b) for a, b in zip(o_avals, v_avals)):
            raise FunctxTypeError(
                f"fori_loop: body_fun {_fname(body_fun)} output and input must have identical "
                f"types: takes {_types(v_avals)}, returns {_types(o_avals)}{where()}"
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


# =================================================================================================
# while_loop
# =================================================================================================
while_p = _prim("while")


def _while_eval(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    return [a for a in body_jaxpr.out_avals]


def _while_impl(*args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    cc = args[:cond_nconsts]
    bc = args[cond_nconsts : cond_nconsts + body_nconsts]
    carry = list(args[cond_nconsts + body_nconsts :])
    while bool(np.asarray(eval_jaxpr(cond_jaxpr.jaxpr, [], *cc, *carry)[0])):
        carry = eval_jaxpr(body_jaxpr.jaxpr, [], *bc, *carry)
    return _np(carry, args)


while_p.abstract_eval = _while_eval
while_p.impl = _while_impl


def while_loop(cond_fun, body_fun, init_val):
    """``lax.while_loop``: repeat ``val = body_fun(val)`` while ``cond_fun(val)``. Forward mode and
    vmap work; reverse mode raises (use scan or fori_loop with static bounds)."""
    if not callable(cond_fun) or not callable(body_fun):
        raise FunctxTypeError(
            f"while_loop: cond_fun and body_fun must be callable, got "
            f"{type(cond_fun).__name__} and {type(body_fun).__name__}{where()}"
        )
    leaves, tree = tree_flatten(init_val)
    avals = list(J.arg_avals("while_loop (init_val)", leaves, (init_val,)))
    cond_closed, cond_tree = _trace(cond_fun, avals, tree, star=False)
    if (
        len(cond_closed.out_avals) != 1
        or cond_closed.out_avals[0].shape != ()
        or cond_closed.out_avals[0].dtype != dtypes.bool_
    ):
        raise FunctxTypeError(
            f"while_loop: cond_fun {_fname(cond_fun)} must return a boolean "
            f"scalar, but got output type(s) {_types(cond_closed.out_avals)}"
            f"{where()}"
        )
    body_closed, body_tree = _trace(body_fun, avals, tree, star=False)
    if body_tree != tree:
        raise FunctxTypeError(
            f"while_loop: body_fun {_fname(body_fun)} must return a value with "
            f"the structure of init_val: {tree} != {body_tree}{where()}"
        )
    leaves, avals, changed = _promote_weak(leaves, avals, body_closed.out_avals)
    if changed:
        cond_closed, _ = _trace(cond_fun, avals, tree, star=False)
        body_closed, _ = _trace(body_fun, avals, tree, star=False)
    if not all(same_type(a, b) for a, b in zip(avals, body_closed.out_avals)):
        raise FunctxTypeError(
            f"while_loop: body_fun {_fname(body_fun)} output and input must have identical types: "
            f"takes {_types(avals)}, returns {_types(body_closed.out_avals)}{where()}"
        )
    cj, cconsts = _hoist(cond_closed)
    bj, bconsts = _hoist(body_closed)
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


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    nz = [not isinstance(t, J.Zero) for t in tangents]
    cc, bc, k = _split3(primals, cond_nconsts, body_nconsts)
    _, bc_nz, k_nz = _split3(nz, cond_nconsts, body_nconsts)
    k_diff = [J.is_differentiable(a) for a in body_jaxpr.out_avals]
    while True:
        out_nz = _natural_out_nz(body_jaxpr, bc_nz + k_nz)
        new = [(a or b) and d for a, b, d in zip(k_nz, out_nz, k_diff)]
        if new == k_nz:
            break
        k_nz = new
    body, hconsts, _ = _jvp_closed(body_jaxpr, bc_nz + k_nz, k_nz)
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
        J.instantiate(t) if not isinstance(t, J.Zero) else _zeros(J.tangent_aval(get_aval(p)))
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
    cc_uk, bc_uk, k_uk = _split3(unknowns, ncc, nbc)
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
    cc, bc, k = _split3(eqn.invars, ncc, nbc)
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
    raise UnsupportedError(_WHILE_REVERSE_ERROR + where())


T.transpose_rules[while_p] = _while_transpose


__all__ = [
    "cond",
    "switch",
    "scan",
    "map",
    "fori_loop",
    "while_loop",
    "cond_p",
    "scan_p",
    "while_p",
]


# =================================================================================================
# Batching rules (registered with functx.transforms.vmap)
# =================================================================================================
from functx.transforms import vmap as V  # noqa: E402  (vmap imports lax, which imports this file)


def _batch_closed(closed, in_dims, size, force_out_dims=None):
    """batch_jaxpr with its consts hoisted: (consts-free ClosedJaxpr, consts, out_dims)."""
    batched, out_dims = V.batch_jaxpr(closed, in_dims, size, force_out_dims=force_out_dims)
    hoisted, consts = _hoist(batched)
    return hoisted, consts, out_dims


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
            j, consts, _ = _batch_closed(b, odims, size, force)
            hoisted.append((j, consts))
        wrapped, all_consts = _share_consts(hoisted)
        outs = cond_p.bind(index, *all_consts, *operands, branches=wrapped)
        return outs, force
    # A batched index: run every branch and select per example.
    results = []
    for b in branches:
        j, consts, _ = _batch_closed(b, odims, size, [0] * n_out)
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


def _scan_batch(args, dims, *, jaxpr, num_consts, num_carry, length, reverse, unroll):
    size = V.axis_size_of(args, dims)
    c, k, x = _split3(args, num_consts, num_carry)
    cd, kd, xd = _split3(dims, num_consts, num_carry)
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
    body, consts, out_dims = _batch_closed(jaxpr, in_dims, size, force)
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


def _while_batch(args, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
    size = V.axis_size_of(args, dims)
    cc, bc, k = _split3(args, cond_nconsts, body_nconsts)
    ccd, bcd, kd = _split3(dims, cond_nconsts, body_nconsts)
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
    cj, cconsts, pd = _batch_closed(cond_jaxpr, list(ccd) + kdims, size)
    bj, bconsts, _ = _batch_closed(body_jaxpr, list(bcd) + kdims, size, kdims)
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
    acj, acc = _hoist(acj)
    mbj, _ = trace_flat(masked_body, c_avals + b_avals + k_avals)
    mbj, mbc = _hoist(mbj)
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


V.batching_rules[cond_p] = _cond_batch
V.batching_rules[scan_p] = _scan_batch
V.batching_rules[while_p] = _while_batch
