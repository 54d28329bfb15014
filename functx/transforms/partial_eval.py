"""Partial evaluation: split a Jaxpr into the part computable from *known* inputs and the rest.

``partial_eval_jaxpr(jaxpr, in_unknowns, instantiate)`` returns a known Jaxpr (known inputs ->
known outputs + residuals) and an unknown Jaxpr (residuals + unknown inputs -> unknown outputs).
An equation is unknown when any input is; primitives with sub-Jaxprs (cond, scan, while) have rules
in ``partial_eval_rules`` that split the equation itself, so that e.g. the tangent half of a jvp'd
scan becomes a scan of its own. ``linearize`` uses this with the tangents as the unknowns.
"""

from __future__ import annotations

from typing import NamedTuple

from functx import primitives as P
from functx.core import Eqn, Jaxpr, Literal, Var


class PartialEval(NamedTuple):
    known: Jaxpr  # known invars -> known outvars + residuals (constvars kept)
    unknown: Jaxpr  # residuals + unknown invars -> unknown outvars
    out_unknowns: list
    res_avals: list


# rule(eqn, unknowns) -> (known_eqns, unknown_eqns, out_unknowns, residual_vars), or None to treat
# the whole equation as unknown. ``residual_vars`` are known Vars (outputs of known_eqns or inputs
# of ``eqn``) that ``unknown_eqns`` read.
partial_eval_rules: dict = {}

_RECOMPUTE = {P.iota_p, P.broadcast_in_dim_p}


def partial_eval_jaxpr(jaxpr: Jaxpr, in_unknowns, instantiate=False) -> PartialEval:
    """Split ``jaxpr``; ``instantiate`` (a bool or one per output) forces outputs to be unknown
    (a known value becomes a residual the unknown Jaxpr returns)."""
    unknown = {v.id for v, u in zip(jaxpr.invars, in_unknowns) if u}
    known_eqns, unk_eqns = [], []
    producer = {}
    forced_res = []
    for e in jaxpr.eqns:
        unk = [type(a) is not Literal and a.id in unknown for a in e.invars]
        if not any(unk):
            known_eqns.append(e)
            for v in e.outvars:
                producer[v.id] = e
            continue
        rule = partial_eval_rules.get(e.prim)
        split = rule(e, unk) if rule is not None else None
        if split is None:
            unk_eqns.append(e)
            unknown.update(v.id for v in e.outvars)
            continue
        k_eqns, u_eqns, out_unk, res_vars = split
        known_eqns.extend(k_eqns)
        for ke in k_eqns:
            for v in ke.outvars:
                producer[v.id] = ke
        unk_eqns.extend(u_eqns)
        forced_res.extend(res_vars)
        for v, u in zip(e.outvars, out_unk):
            if u:
                unknown.add(v.id)

    n_out = len(jaxpr.outvars)
    inst = [instantiate] * n_out if isinstance(instantiate, bool) else list(instantiate)
    out_unknowns = [
        (type(v) is not Literal and v.id in unknown) or bool(i) for v, i in zip(jaxpr.outvars, inst)
    ]

    residuals, res_ids, copied, copied_ids = [], set(), [], set()

    def need(a):
        if type(a) is Literal or a.id in unknown or a.id in res_ids or a.id in copied_ids:
            return
        e = producer.get(a.id)
        if e is not None and e.prim in _RECOMPUTE and all(type(x) is Literal for x in e.invars):
            copied.append(e)
            copied_ids.update(v.id for v in e.outvars)
            return
        res_ids.add(a.id)
        residuals.append(a)

    for a in forced_res:
        need(a)
    for e in unk_eqns:
        for a in e.invars:
            need(a)
    for v, u in zip(jaxpr.outvars, out_unknowns):
        if u:
            need(v)

    known_outs = [v for v, u in zip(jaxpr.outvars, out_unknowns) if not u]
    known = Jaxpr(
        jaxpr.constvars,
        [v for v, u in zip(jaxpr.invars, in_unknowns) if not u],
        known_eqns,
        known_outs + residuals,
    )
    unk = Jaxpr(
        [],
        residuals + [v for v, u in zip(jaxpr.invars, in_unknowns) if u],
        copied + unk_eqns,
        [v for v, u in zip(jaxpr.outvars, out_unknowns) if u],
    )
    return PartialEval(known, unk, out_unknowns, [v.aval for v in residuals])


def new_vars(avals):
    return [Var(a) for a in avals]


def make_eqn(prim, invars, outvars, params, source_info):
    return Eqn(prim, invars, outvars, params, source_info)
