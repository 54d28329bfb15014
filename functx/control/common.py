"""What the control-flow primitives (``cond``, ``scan``, ``while``) share: tracing a function on
pytree arguments into a consts-free Jaxpr (its consts hoisted to leading inputs), the weak-type
rule for loop carries, and the jvp, transpose and batching of such a Jaxpr that their rules
build on.
"""

from __future__ import annotations

import weakref

import numpy as np

from functx import dtypes, ops, primitives as P
from functx.core import ClosedJaxpr, Jaxpr, Primitive, Var
from functx.tracing import TraceCache, get_aval, trace_flat, tree_flatten, tree_unflatten
from functx.transforms import axis_env, jvp as J, transpose as T, vmap as V


def control_primitive(name):
    """A new multiple-results primitive of group ``control``, registered in the primitive table."""
    p = Primitive(name, multiple_results=True, group="control")
    P.registry[name] = p
    return p


def fun_name(f):
    """A function's name, for error messages."""
    return getattr(f, "__name__", type(f).__name__)


def hoist(closed: ClosedJaxpr):
    """Consts of a traced function become leading inputs: (ClosedJaxpr without consts, consts)."""
    j = closed.jaxpr
    hoisted = ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.eqns, j.outvars), [])
    return hoisted, list(closed.consts)


# One TraceCache per live body function: `while_loop(c, b, x)` called again with arguments of
# the same structure and types reuses the Jaxprs of `c` and `b` instead of tracing them again,
# as JAX does (a body that closed over tracers of an outer trace is never kept).
_body_caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def body_cache(fun):
    """The TraceCache of a body function, or None where it cannot have one."""
    try:
        cache = _body_caches.get(fun)
        if cache is None:
            cache = _body_caches[fun] = TraceCache(maxsize=8)
        return cache
    except TypeError:  # not weakly referenceable (a builtin) or not hashable: no cache
        return None


def trace_pytree(fun, avals, in_tree, star=True):
    """Trace ``fun`` on pytree arguments with the given leaf avals; returns (closed, out_tree).
    With ``star`` the tree is a tuple of positional arguments, else the single argument.
    Traces are cached per function (see ``_body_caches``)."""
    cache = body_cache(fun)
    key = (in_tree, tuple(avals), star, dtypes.default_float(), dtypes.default_int())
    key += axis_env.env_key()  # (a body may read a bound axis's size: lax.axis_size, pmean)
    hit = cache.get(key) if cache is not None else None
    if hit is not None:
        return hit
    box = {}

    def flat(*xs):
        args = tree_unflatten(in_tree, list(xs))
        out = fun(*args) if star else fun(args)
        leaves, tree = tree_flatten(out)
        box["tree"] = tree
        return leaves, None

    closed, _ = trace_flat(flat, avals)
    if cache is not None:
        cache.put(key, (closed, box["tree"]), closed)
    return closed, box["tree"]


def promote_weak(leaves, in_avals, out_avals):
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


def types_str(avals):
    """Avals as ``(f32[3], i32[])``, for error messages."""
    return "(" + ", ".join(a.str_short() for a in avals) + ")"


def as_ndarrays(outs, args=()):
    """Outputs of an eager implementation as ndarrays. One that is an input passed through is
    copied: the eager path freezes the arrays it returns, and the caller's must stay writeable."""
    ins = {id(a) for a in args}
    return [np.array(o) if id(o) in ins else np.asarray(o) for o in outs]


def zeros_of(aval):
    """A zeros array of ``aval``'s shape and dtype."""
    return ops.full(aval.shape, 0, aval.dtype)


def jvp_closed(closed: ClosedJaxpr, nonzeros, instantiate):
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
    hoisted, consts = hoist(new)
    return hoisted, consts, box["nz"]


def natural_out_nz(closed, nonzeros):
    """Which outputs of ``closed`` have a nonzero tangent given the inputs' ``nonzeros``."""
    return jvp_closed(closed, nonzeros, [False] * len(closed.out_avals))[2]


def transpose_closed(closed: ClosedJaxpr, linear_mask, ct_avals):
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
    return hoist(new)


def share_consts(hoisted):
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


def split3(xs, a, b):
    """``xs`` cut into its first ``a``, next ``b`` and remaining items (three lists)."""
    return list(xs[:a]), list(xs[a : a + b]), list(xs[a + b :])


def batch_closed(closed, in_dims, size, force_out_dims=None):
    """batch_jaxpr with its consts hoisted: (consts-free ClosedJaxpr, consts, out_dims)."""
    batched, out_dims = V.batch_jaxpr(closed, in_dims, size, force_out_dims=force_out_dims)
    hoisted, consts = hoist(batched)
    return hoisted, consts, out_dims


# --- jit: a loop over compiled sub-programs -------------------------------------------------------
def lower_to_loop(g, ins, avals, kind, **params):
    """The lowering of ``cond``, ``scan`` and ``while`` (``kind``) to the loop IR: one ``loop`` node
    per output, sharing one group whose sub-Jaxprs the backends' loop kernels compile and run."""
    # imported here, when jit lowers: the loop IR (0.1 s of import), which `import functx`
    # must not (tests/lowering/test_program_cache.py)
    from functx.lowering.loopir import Node

    group = {"type": kind, "ins": list(ins), "outs": [], **params}
    outs = []
    for a in avals:
        n = g.add(Node(a.shape, a.dtype, kind="loop", inputs=list(ins), params={"group": group}))
        group["outs"].append(n)
        outs.append(n)
    if outs:
        outs[0].params["needs_buffer"] = [x for x in ins]
    return outs


class HostStep:
    """A step of a compiled program that runs on the host between kernels: ``__call__`` runs the
    primitive's eager implementation on NumPy copies of the operands. Subclasses (the linear
    algebra library steps, the collectives) add a ``torch`` hook for the Triton runtime. Prints
    with its address (``label`` names the kind), so the disk program cache, which cannot restore
    host steps, never indexes a program with one."""

    __slots__ = ("prim", "params", "in_avals", "out_avals", "__weakref__")
    label = "host step"

    def __init__(self, prim, params, in_avals=(), out_avals=()):
        self.prim = prim
        self.params = dict(params)
        self.in_avals = list(in_avals)
        self.out_avals = list(out_avals)

    def __repr__(self):
        ps = ", ".join(f"{k}={v!r}" for k, v in sorted(self.params.items()))
        return f"<{self.label} {self.prim.name}({ps}) at 0x{id(self):x}>"

    def __call__(self, *vals):
        out = self.prim.impl(*vals, **self.params)
        return list(out) if self.prim.multiple_results else [out]
