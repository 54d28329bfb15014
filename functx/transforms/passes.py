"""Jaxpr -> Jaxpr clean-up passes: dead-code elimination and common-subexpression elimination.

Every primitive but those in ``effectful`` is pure, so an equation none of whose outputs is used
can go, and two equations with the same primitive, inputs and params compute the same values.
``effectful`` (host callbacks that print, say: ``functx/control/callbacks.py`` registers them)
are always kept and never merged.
"""

from __future__ import annotations

import weakref

import numpy as np

from functx import dtypes, primitives as P
from functx.core import ClosedJaxpr, Eqn, Jaxpr, Literal, ShapedArray, Var, effectful_primitives

#: Primitives with a side effect: DCE keeps their equations, CSE never merges two of them (the
#: set ``Eqn.effects`` reads, kept in functx.core).
effectful: set = effectful_primitives


_effects_of: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # ClosedJaxpr -> bool


def _jaxpr_has_effects(j) -> bool:
    if isinstance(j, ClosedJaxpr):
        hit = _effects_of.get(j)
        if hit is None:
            hit = _effects_of[j] = any(has_effects(x) for x in j.jaxpr.eqns)
        return hit
    return isinstance(j, Jaxpr) and any(has_effects(x) for x in j.eqns)


def has_effects(e: Eqn) -> bool:
    """Whether ``e`` is effectful or holds a sub-Jaxpr (a loop body, a branch) with an effect."""
    if e.prim in effectful:
        return True
    for p in e.params.values():
        if isinstance(p, tuple):
            if any(_jaxpr_has_effects(j) for j in p):
                return True
        elif _jaxpr_has_effects(p):
            return True
    return False


def dce_jaxpr(jaxpr: Jaxpr, used_outputs=None) -> Jaxpr:
    """Drop equations whose outputs are unused (and outputs not in ``used_outputs``);
    constvars no equation needs are dropped too (use ``dce_closed`` to keep consts in step)."""
    outvars = (
        jaxpr.outvars
        if used_outputs is None
        else [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
    )
    live = {v.id for v in outvars if type(v) is not Literal}
    eqns = []
    for e in reversed(jaxpr.eqns):
        if any(v.id in live for v in e.outvars) or (effectful and has_effects(e)):
            eqns.append(e)
            live.update(a.id for a in e.invars if type(a) is not Literal)
    eqns.reverse()
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, outvars)


def dce_closed(closed: ClosedJaxpr) -> ClosedJaxpr:
    """DCE, also dropping consts no equation or output uses."""
    j = dce_jaxpr(closed.jaxpr)
    used = {a.id for e in j.eqns for a in e.invars if type(a) is not Literal}
    used |= {v.id for v in j.outvars if type(v) is not Literal}
    keep = [(v, c) for v, c in zip(j.constvars, closed.consts) if v.id in used]
    return ClosedJaxpr(
        Jaxpr([v for v, _ in keep], j.invars, j.eqns, j.outvars), [c for _, c in keep]
    )


def _key(e: Eqn, rename):
    ins = tuple(
        ("lit", repr(a.val), a.aval) if type(a) is Literal else rename.get(a.id, a.id)
        for a in e.invars
    )
    if effectful and has_effects(e):
        return None
    try:
        params = tuple(sorted(e.params.items()))
        hash(params)
    except TypeError:
        return None
    return (e.prim, ins, params)


def cse_jaxpr(jaxpr: Jaxpr) -> Jaxpr:
    """Reuse the outputs of an earlier identical equation."""
    rename: dict[int, object] = {}
    seen: dict = {}
    var_of: dict[int, object] = {}
    eqns = []

    def sub(a):
        return a if type(a) is Literal else var_of.get(a.id, a)

    for e in jaxpr.eqns:
        e = e.replace(invars=[sub(a) for a in e.invars])
        k = _key(e, rename)
        if k is not None and k in seen:
            prev = seen[k]
            for v, pv in zip(e.outvars, prev.outvars):
                var_of[v.id] = pv
                rename[v.id] = pv.id
            continue
        if k is not None:
            seen[k] = e
        eqns.append(e)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, [sub(a) for a in jaxpr.outvars])


def fold_scalar_constants(jaxpr: Jaxpr) -> Jaxpr:
    """Evaluate equations whose inputs are all literals and whose single output is a scalar
    (``mul 1.0 2.0``), replacing their output by a literal."""

    folded: dict[int, Literal] = {}
    eqns = []

    def sub(a):
        return a if type(a) is Literal else folded.get(a.id, a)

    for e in jaxpr.eqns:
        e = e.replace(invars=[sub(a) for a in e.invars])
        if (
            not e.prim.multiple_results
            and e.invars
            and e.outvars[0].aval.shape == ()
            and all(type(a) is Literal for a in e.invars)
            and e.prim.impl is not None
            and not any(isinstance(p, (ClosedJaxpr, Jaxpr)) for p in e.params.values())
        ):
            vals = [np.asarray(a.val, a.aval.dtype) for a in e.invars]
            out = np.asarray(dtypes.call_widened(e.prim.name, e.prim.impl, vals, e.params)).astype(
                e.outvars[0].aval.dtype
            )
            aval = e.outvars[0].aval
            # (the recorded dtype, not the mode's canonical one: a 64-bit constant folded while
            # x64 is off stays 64-bit, as the Jaxpr traced in an x64 block says)
            val = out.item() if aval.weak_type else out[()]
            folded[e.outvars[0].id] = Literal(val, aval)
            continue
        eqns.append(e)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, [sub(a) for a in jaxpr.outvars])


def _is_one(a, ones) -> bool:
    if type(a) is Literal:
        return a.aval.shape == () and a.val == 1 and not isinstance(a.val, bool)
    return a.id in ones


def drop_identities(jaxpr: Jaxpr) -> Jaxpr:
    """Remove equations that return an operand unchanged: ``mul x 1`` (also by a broadcast of 1,
    as the backward pass of a sum makes), ``integer_pow[y=1] x``, and reshapes, converts and
    broadcasts to the operand's own type. Exact (``x * 1 == x`` for every float, NaN and -0.0
    included), and only where the result has exactly the operand's type."""

    ones: set[int] = set()  # variables holding a broadcast of the literal 1
    alias: dict[int, object] = {}
    eqns = []

    def sub(a):
        return a if type(a) is Literal else alias.get(a.id, a)

    for e in jaxpr.eqns:
        e = e.replace(invars=[sub(a) for a in e.invars])
        out = e.outvars[0] if len(e.outvars) == 1 else None
        same = None
        if e.prim is P.mul_p:
            x, y = e.invars
            if _is_one(y, ones):
                same = x
            elif _is_one(x, ones):
                same = y
        elif e.prim is P.integer_pow_p and e.params["y"] == 1:
            same = e.invars[0]
        elif e.prim in (
            P.reshape_p,
            P.convert_element_type_p,
            P.broadcast_in_dim_p,
            P.transpose_p,
        ) and _keeps_layout(e):
            same = e.invars[0]
        if same is not None and type(same) is not Literal and same.aval == out.aval:
            alias[out.id] = same
            continue
        if e.prim is P.broadcast_in_dim_p and _is_one(e.invars[0], ones):
            ones.add(out.id)
        eqns.append(e)
    return Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, [sub(a) for a in jaxpr.outvars])


def _keeps_layout(e) -> bool:
    """A reshape/convert/broadcast/transpose that maps its operand to itself."""

    a = e.invars[0].aval
    if e.prim is P.transpose_p:
        return tuple(e.params["permutation"]) == tuple(range(a.ndim))
    if e.prim is P.broadcast_in_dim_p:
        return tuple(e.params["broadcast_dimensions"]) == tuple(range(a.ndim))
    return True  # reshape/convert: same type <=> identity (checked by the caller)


def simplify(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Constant folding of scalar literals, identity removal, CSE, then DCE."""
    j = cse_jaxpr(drop_identities(fold_scalar_constants(closed.jaxpr)))
    return dce_closed(ClosedJaxpr(j, closed.consts))


def divide_by_reciprocals(closed: ClosedJaxpr) -> ClosedJaxpr:
    """XLA's rewrite of a floating division by a broadcast: ``a / broadcast(b)`` becomes
    ``a * broadcast(1 / b)`` (and ``a / s`` for a scalar ``s`` becomes ``a * (1 / s)``), so one
    reciprocal per element of ``b`` replaces a division per element of ``a``. ``jax.jit``
    computes exactly this on the CPU for float16, float32 and float64 (not bfloat16, which XLA
    computes in float32), so ``functx.jit`` does too: the quotient can differ by an ulp from
    the exact one, as JAX's does. Eager operations divide exactly, as JAX's do. Top level only."""

    jaxpr = closed.jaxpr
    floats = {np.dtype(dtypes.float16), np.dtype(np.float32), np.dtype(np.float64)}
    made_by_broadcast: dict[int, Eqn] = {}
    eqns, changed = [], False
    for e in jaxpr.eqns:
        if e.prim is P.broadcast_in_dim_p and type(e.invars[0]) is not Literal:
            made_by_broadcast[e.outvars[0].id] = e
        if e.prim is not P.div_p or np.dtype(e.outvars[0].aval.dtype) not in floats:
            eqns.append(e)
            continue
        a, b = e.invars
        out = e.outvars[0]
        dt = np.dtype(out.aval.dtype)
        one = Literal(dt.type(1), ShapedArray((), dt))
        if b.aval.shape == () and out.aval.shape != ():
            if type(b) is Literal:
                with np.errstate(divide="ignore"):
                    r = Literal(dt.type(1) / dt.type(b.val), ShapedArray((), dt, b.aval.weak_type))
            else:
                r = Var(b.aval)
                eqns.append(Eqn(P.div_p, [one, b], [r], {}, e.source_info))
        elif (
            type(b) is not Literal
            and b.id in made_by_broadcast
            and made_by_broadcast[b.id].invars[0].aval.size < b.aval.size
        ):
            bc = made_by_broadcast[b.id]
            src = bc.invars[0]
            inv = Var(src.aval)
            r = Var(b.aval)
            eqns.append(Eqn(P.div_p, [one, src], [inv], {}, e.source_info))
            eqns.append(bc.replace(invars=[inv], outvars=[r]))
        else:
            eqns.append(e)
            continue
        eqns.append(Eqn(P.mul_p, [a, r], [out], {}, e.source_info))
        changed = True
    if not changed:
        return closed
    j = cse_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars))
    return dce_closed(ClosedJaxpr(j, closed.consts))


def reshape_unit_reductions(closed: ClosedJaxpr) -> ClosedJaxpr:
    """A reduction over axes of size 1 (``vmap``'s batch of one inside a per-example gradient,
    ``sum(x, axis)`` of a kept dimension) becomes a reshape, so that it fuses into its
    neighbours instead of running as a reduction kernel. A reduction of one element is that
    element; XLA simplifies these the same way, so ``jax.jit``'s sum of a lone -0.0 is -0.0
    (not the +0.0 that adding it to the +0.0 start would give). Top level only."""

    jaxpr = closed.jaxpr
    eqns, changed = [], False
    for e in jaxpr.eqns:
        if e.prim not in _UNIT_REDUCTIONS or not all(
            e.invars[0].aval.shape[a] == 1 for a in e.params["axes"]
        ):
            eqns.append(e)
            continue
        x, out = e.invars[0], e.outvars[0]
        eqns.append(
            Eqn(P.reshape_p, [x], [out], {"new_sizes": tuple(out.aval.shape)}, e.source_info)
        )
        changed = True
    if not changed:
        return closed
    return ClosedJaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars), closed.consts)


_UNIT_REDUCTIONS = (
    P.reduce_sum_p,
    P.reduce_max_p,
    P.reduce_min_p,
    P.reduce_prod_p,
    P.reduce_and_p,
    P.reduce_or_p,
)
