"""``checkpoint`` (``remat``): the ``checkpoint`` primitive, holding a Jaxpr, with all its rules.

A call of a checkpointed function records one ``checkpoint`` equation holding the traced function
(consts hoisted to leading operands). Evaluating it (eagerly, or inlined under ``jit``) runs the
Jaxpr. What changes is reverse mode:

* **jvp** gives a ``checkpoint`` of the jvp'd Jaxpr (primals and tangents together);
* **partial evaluation** (what ``linearize``, ``vjp`` and ``grad`` do to the jvp) splits that Jaxpr
  into its known (primal) and unknown (tangent) halves, then keeps as residuals only the values
  the *policy* allows (``policy(prim, *input_avals, **params)`` is asked about the equation that
  made each one) plus the checkpoint's own inputs; every other value the tangent half reads is
  *recomputed* there, from the saved ones (effects, a ``debug.print`` say, run again there, as
  in JAX). The known half becomes one ``checkpoint`` equation
  returning the saved residuals, the unknown half another (``differentiated=True``) holding the
  recomputation and the linear equations;
* **transpose** of that unknown half is traced into one more ``checkpoint`` equation: the
  recomputation, then the transposed linear equations. Since a ``checkpoint`` equation holds its
  own Jaxpr, ``jit``'s CSE never merges the recomputation with the forward pass, so the compiled
  backward pass recomputes instead of keeping the forward values alive;
* **vmap** batches the Jaxpr.

``checkpoint_name(x, name)`` is the identity primitive ``name`` that policies such as
``save_only_these_names`` look for.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from functx.control.common import batch_closed, hoist
from functx.core import ClosedJaxpr, Eqn, Jaxpr, Literal, Primitive, Var
from functx.errors import FunctxTypeError
from functx.interpreter import eval_jaxpr
from functx.lowering.rules import lowerings
from functx.primitives import registry
from functx.source_info import where
from functx.tracing import get_aval, trace_flat, tree_flatten, tree_unflatten
from functx.transforms import jvp as J, passes, transpose as T, vmap as V
from functx.transforms.partial_eval import partial_eval_jaxpr, partial_eval_rules

checkpoint_p = Primitive("checkpoint", multiple_results=True, group="control")
registry["checkpoint"] = checkpoint_p


def _abstract_eval(*avals, jaxpr, **_):
    return list(jaxpr.out_avals)


def _impl(*args, jaxpr, **_):
    return eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *args)


checkpoint_p.abstract_eval = _abstract_eval
checkpoint_p.impl = _impl


def _bind(closed: ClosedJaxpr, args, **params):
    """Bind ``checkpoint`` on a traced ClosedJaxpr (its consts become leading operands)."""
    hoisted, consts = hoist(closed)
    return checkpoint_p.bind(*consts, *args, jaxpr=hoisted, **params)


# --- jvp -----------------------------------------------------------------------------------------
def _jvp(primals, tangents, *, jaxpr, **params):
    nonzeros = [not isinstance(t, J.Zero) for t in tangents]
    jvp_closed, out_nz = J.jvp_jaxpr(jaxpr, nonzeros)
    ts = [t for t in tangents if not isinstance(t, J.Zero)]
    outs = _bind(jvp_closed, list(primals) + ts, **params)
    n = len(jaxpr.out_avals)
    it = iter(outs[n:])
    touts = [
        next(it) if nz else J.Zero(J.tangent_aval(a)) for nz, a in zip(out_nz, jaxpr.out_avals)
    ]
    return outs[:n], touts


J.jvp_rules[checkpoint_p] = _jvp


# --- partial evaluation: save what the policy allows, recompute the rest -------------------------
class RecomputeType:
    """What a policy returns for a value to recompute (``Recompute``; or False)."""

    def __repr__(self):
        return "Recompute"


class SaveableType:
    """What a policy returns for a value to save (``Saveable``; or True)."""

    def __repr__(self):
        return "Saveable"


Recompute = RecomputeType()
Saveable = SaveableType()


class Offloadable(NamedTuple):
    """A remat policy's answer that saves a value in another memory, ``src`` -> ``dst``
    (``jax.ad_checkpoint.Offloadable``).

    functx has one memory per device, so an offloadable value is saved where it is.

    Differences from JAX: the value is saved in place (one memory per device).

    Example:
      >>> import functx.ad_checkpoint
      >>> functx.ad_checkpoint.Offloadable("device", "pinned_host")
      Offloadable(src='device', dst='pinned_host')
    """

    src: str
    dst: str


def _saveable(policy, eqn) -> bool:
    if policy is None:
        return False
    case = policy(eqn.prim, *[a.aval for a in eqn.invars], **eqn.params)
    if isinstance(case, (bool, np.bool_)):
        return bool(case)
    if isinstance(case, (SaveableType, Offloadable)):
        return True
    if isinstance(case, RecomputeType):
        return False
    raise FunctxTypeError(
        "Value returned by a remat policy should be a bool or `ad_checkpoint.Recompute`, "
        f"`ad_checkpoint.Saveable` or `ad_checkpoint.Offloadable(...)`. Got {case} of type "
        f"{type(case)}."
    )


def _partial_eval(eqn, unknowns):
    p = eqn.params
    policy = p["policy"]
    inner = p["jaxpr"].jaxpr  # consts-free
    pe = partial_eval_jaxpr(inner, unknowns, instantiate=False)
    known, unk = pe.known, pe.unknown
    n_res = len(pe.res_avals)
    n_kout = len(known.outvars) - n_res
    residuals = known.outvars[n_kout:]
    known_in = {v.id for v, u in zip(inner.invars, unknowns) if not u}
    # Walk the known equations backwards from what the unknown half reads: a value made by an
    # equation the policy allows is saved; any other equation is redone in the unknown half,
    # and what it reads is needed in turn (back to the saved values and the known inputs).
    need = {r.id for r in residuals if r.id not in known_in}
    saved_at, redo = {}, []
    for pos in range(len(known.eqns) - 1, -1, -1):
        e = known.eqns[pos]
        outs = [v for v in e.outvars if v.id in need]
        effect = passes.has_effects(e)  # (replayed by the recomputation, as in JAX)
        if not outs and not effect:
            continue
        if not effect and _saveable(policy, e):
            for v in outs:
                saved_at[v.id] = (pos, v)
            continue
        redo.append(e)
        need.update(a.id for a in e.invars if type(a) is not Literal and a.id not in known_in)
    redo.reverse()
    saved = [v for _, v in sorted(saved_at.values(), key=lambda t: (t[0], t[1].id))]
    unk_eqns = redo + unk.eqns
    free = set()
    for e in unk_eqns:
        free.update(a.id for a in e.invars if type(a) is not Literal)
    free.update(v.id for v in unk.outvars if type(v) is not Literal)
    ins_known = [(i, v) for i, (v, u) in enumerate(zip(inner.invars, unknowns)) if not u]
    used_known = [(i, v) for i, v in ins_known if v.id in free]
    unk_invars = [v for v, u in zip(inner.invars, unknowns) if u]
    unk_jaxpr = Jaxpr(
        [], saved + [v for _, v in used_known] + unk_invars, unk_eqns, list(unk.outvars)
    )
    known_jaxpr = passes.dce_jaxpr(
        Jaxpr([], known.invars, known.eqns, known.outvars[:n_kout] + saved)
    )
    out_unk = pe.out_unknowns
    saved_outer = [Var(r.aval) for r in saved]
    k_outs = [v for v, u in zip(eqn.outvars, out_unk) if not u] + saved_outer
    k_ins = [a for a, u in zip(eqn.invars, unknowns) if not u]
    k_eqn = Eqn(
        checkpoint_p, k_ins, k_outs, dict(p, jaxpr=ClosedJaxpr(known_jaxpr, [])), eqn.source_info
    )
    u_ins = saved_outer + [eqn.invars[i] for i, _ in used_known]
    u_ins += [a for a, u in zip(eqn.invars, unknowns) if u]
    u_eqn = Eqn(
        checkpoint_p,
        u_ins,
        [v for v, u in zip(eqn.outvars, out_unk) if u],
        dict(p, jaxpr=ClosedJaxpr(unk_jaxpr, []), differentiated=True),
        eqn.source_info,
    )
    res_vars = saved_outer + [eqn.invars[i] for i, _ in used_known if type(eqn.invars[i]) is Var]
    return [k_eqn], [u_eqn], list(out_unk), res_vars


partial_eval_rules[checkpoint_p] = _partial_eval


# --- transpose: the recomputation and the backward pass, as one more checkpoint ------------------
def _transpose(cts, *args, jaxpr, **params):
    linear = [T.is_undefined(a) for a in args]
    res = [a for a, lin in zip(args, linear) if not lin]
    nz = [not isinstance(c, J.Zero) for c in cts]
    res_avals = [get_aval(r) for r in res]
    ct_avals = [a for a, z in zip(jaxpr.out_avals, nz) if z]

    def backward(*xs):
        r, c = iter(xs[: len(res)]), iter(xs[len(res) :])
        vals = [T.UndefinedPrimal(a.aval) if lin else next(r) for a, lin in zip(args, linear)]
        cts_in = [next(c) if z else J.Zero(a) for z, a in zip(nz, jaxpr.out_avals)]
        outs = T.backward_pass(jaxpr.jaxpr, jaxpr.consts, vals, cts_in)
        return [J.instantiate(o) for o, lin in zip(outs, linear) if lin], None

    closed, _ = trace_flat(backward, res_avals + ct_avals)
    got = iter(
        _bind(
            closed,
            res + [c for c in cts if not isinstance(c, J.Zero)],
            **dict(params, differentiated=True),
        )
    )
    return [next(got) if lin else None for lin in linear]


T.transpose_rules[checkpoint_p] = _transpose


# --- vmap ----------------------------------------------------------------------------------------
def _batch(args, dims, *, jaxpr, **params):
    size = V.axis_size_of(args, dims)
    body, consts, out_dims = batch_closed(jaxpr, list(dims), size)
    outs = checkpoint_p.bind(*consts, *args, jaxpr=body, **params)
    return outs, list(out_dims)


V.batching_rules[checkpoint_p] = _batch


# --- jit: the Jaxpr is inlined -------------------------------------------------------------------
def _lowering(g, ins, avals, *, jaxpr, **params):
    # imported here, when jit lowers: the loop IR (0.1 s of import), which `import functx` must not
    from functx.lowering import lower

    env = {v.id: n for v, n in zip(jaxpr.jaxpr.invars, ins)}
    start = len(g.nodes)
    lower.lower_eqns(g, jaxpr.jaxpr, env)
    if params.get("differentiated") and params.get("prevent_cse", True):
        g.distinct.update(id(n) for n in g.nodes[start:])  # (recomputed: not read from before)
    return [lower.read(g, env, a) for a in jaxpr.jaxpr.outvars]


lowerings[checkpoint_p] = _lowering


# --- checkpoint_name -----------------------------------------------------------------------------
name_p = Primitive("name", group="other")
registry["name"] = name_p
name_p.abstract_eval = lambda aval, *, name: aval
name_p.impl = lambda x, *, name: x
J.jvp_rules[name_p] = lambda primals, tangents, *, name: (
    name_p.bind(primals[0], name=name),
    tangents[0],
)
T.transpose_rules[name_p] = lambda ct, x, *, name: [ct]
V.batching_rules[name_p] = lambda args, dims, *, name: (name_p.bind(args[0], name=name), dims[0])
lowerings[name_p] = lambda g, ins, avals, *, name: ins[0]


# --- the public functions ------------------------------------------------------------------------
def checkpoint(fun, *, prevent_cse: bool = True, policy=None, static_argnums=()):
    """Make ``fun`` recompute its intermediate values in the backward pass instead of keeping
    them (JAX's ``jax.checkpoint``, also ``jax.remat``).

    Arguments:
      fun: the function; its arguments and result are pytrees of arrays.
      prevent_cse: accepted for JAX's signature; the recomputation is always kept apart from
        the forward pass (it lives in its own ``checkpoint`` equation).
      policy: which intermediates may be saved, ``policy(prim, *avals, **params) -> bool``
        (``functx.checkpoint_policies``); None saves none: only the inputs are kept.
      static_argnums: positions of arguments that are Python values, not arrays.
    Returns:
      a function with ``fun``'s signature and values.

    Differences from JAX: ``prevent_cse=`` is accepted (the recomputation always lives in its own
    equation); ``Offloadable`` values are saved in place (one memory per device); functx's jvp rules
    may save other residuals than JAX's.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> f = functx.checkpoint(lambda x: functx.numpy.sin(functx.numpy.sin(x)))
      >>> print(round(float(functx.grad(f)(np.float32(1.0))), 4))
      0.36
    """
    if not callable(fun):
        raise FunctxTypeError(
            f"checkpoint: expected a callable value, got {type(fun).__name__}{where()}"
        )
    static = (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        pos = {i % len(args) for i in static} if args else set()
        dyn = [a for i, a in enumerate(args) if i not in pos]
        leaves, in_tree = tree_flatten((dyn, kwargs))
        box = {}

        def flat(*xs):
            d, kw = tree_unflatten(in_tree, list(xs))
            it = iter(d)
            full = [args[i] if i in pos else next(it) for i in range(len(args))]
            out_leaves, box["tree"] = tree_flatten(fun(*full, **kw))
            return out_leaves, None

        closed, _ = trace_flat(flat, [get_aval(x) for x in leaves])
        outs = _bind(
            closed, leaves, prevent_cse=bool(prevent_cse), differentiated=False, policy=policy
        )
        return tree_unflatten(box["tree"], outs)

    return wrapped


remat = checkpoint


def checkpoint_name(x, name):
    """Name the values of ``x`` (a pytree) for checkpoint policies such as
    ``save_only_these_names`` (JAX's ``jax.ad_checkpoint.checkpoint_name``); the identity.

    Arguments:
      x: a pytree of arrays.
      name: a str.
    Returns:
      ``x``'s values, each marked with ``name``.
    Example:
      >>> import numpy as np
      >>> import functx.ad_checkpoint
      >>> print(functx.ad_checkpoint.checkpoint_name(np.float32(2.0), "a"))
      2.0
    """
    leaves, tree = tree_flatten(x)
    return tree_unflatten(tree, [name_p.bind(v, name=name) for v in leaves])


__all__ = [
    "Offloadable",
    "Recompute",
    "Saveable",
    "checkpoint",
    "checkpoint_name",
    "checkpoint_p",
    "name_p",
    "remat",
]
