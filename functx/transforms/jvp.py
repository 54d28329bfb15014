"""jvp: forward-mode differentiation as a Jaxpr -> Jaxpr rewrite.

``jvp_jaxpr`` walks the equations of a Jaxpr and, per primitive, calls a rule that emits the primal
equation and the tangent equations through ordinary ``functx.lax`` calls. Tangents that are known to
be zero stay symbolic (``Zero``) and cost nothing. Rules are grouped by primitive class; tangent
equations are linear in the tangents (with coefficients computed from primals only), which is what
``linearize`` and ``transpose`` rely on.
"""

from __future__ import annotations

import weakref
from typing import NamedTuple

import numpy as np
import optree

from functx import _refbox, config, dtypes, ops, primitives as P
from functx.array import Array, is_python_scalar
from functx.core import ClosedJaxpr, Jaxpr, Literal, ShapedArray
from functx.errors import (
    ConcretizationError,
    FunctxArgumentError,
    FunctxTypeError,
    NonConcreteBooleanIndexError,
    UnsupportedError,
)
from functx.interpreter import eval_jaxpr
from functx.primitives import elementwise as E
from functx.source_info import source_info, where
from functx.tracing import (
    PYTREE_NAMESPACE,
    Tracer,
    get_aval,
    known_values,
    trace_flat,
    tree_flatten,
    tree_unflatten,
)
from functx.transforms import passes

# --- symbolic zeros ------------------------------------------------------------------------------


class Zero:
    """A tangent (or cotangent) known to be zero; never materialised unless it must be
    (``jax.custom_derivatives.SymbolicZero``: a ``custom_jvp`` rule set with
    ``defjvp(rule, symbolic_zeros=True)`` receives one for each input that has no tangent).

    Example:
      >>> import functx
      >>> from functx.custom_derivatives import SymbolicZero
      >>> @functx.custom_jvp
      ... def f(x, y):
      ...     return x * y
      >>> def f_jvp(primals, tangents):
      ...     (x, y), (tx, ty) = primals, tangents
      ...     print(isinstance(tx, SymbolicZero), isinstance(ty, SymbolicZero))
      ...     t = 0.0 if isinstance(tx, SymbolicZero) else tx * y
      ...     return x * y, t if isinstance(ty, SymbolicZero) else t + x * ty
      >>> _ = f.defjvp(f_jvp, symbolic_zeros=True)
      >>> functx.grad(f)(2.0, 3.0)
      False True
      Array(3., dtype=float32, weak_type=True)
    """

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"Zero({self.aval.str_short()})"


def is_differentiable(aval) -> bool:
    """Floating and complex values carry tangents (of their own dtype)."""
    return aval.dtype in dtypes.FLOATS or aval.dtype in dtypes.COMPLEX


def tangent_aval(aval: ShapedArray) -> ShapedArray:
    """Float and complex inputs have tangents of their own dtype; integer and bool ones have
    float0 tangents."""
    if is_differentiable(aval):
        return ShapedArray(aval.shape, aval.dtype)
    return ShapedArray(aval.shape, dtypes.float0)


def zeros_like_aval(aval: ShapedArray):
    if aval.dtype == dtypes.float0:
        return np.zeros(aval.shape, dtypes.float0)
    return ops.full(aval.shape, 0, aval.dtype)


def instantiate(t, aval=None):
    """Materialise a symbolic zero."""
    if isinstance(t, Zero):
        return zeros_like_aval(t.aval)
    return t


def zeros_if_needed(ts, avals):
    return [instantiate(t) if not isinstance(t, Zero) else t for t, a in zip(ts, avals)]


def as_arrays(xs) -> list:
    """Eagerly computed results as functx Arrays: a Jaxpr output may be a literal, or an input
    (a NumPy array of the user's) passed through. float0 zeros and tracers stay as they are."""
    return [
        x
        if isinstance(x, (Array, Tracer))
        or (isinstance(x, np.ndarray) and x.dtype == dtypes.float0)
        else Array.from_value(x)
        for x in xs
    ]


def add_tangents(a, b):
    if isinstance(a, Zero):
        return b
    if isinstance(b, Zero):
        return a
    return ops.add(a, b)


# --- the rewrite ---------------------------------------------------------------------------------
jvp_rules: dict = {}
# Primitives whose outputs never carry a tangent (integer/bool results, piecewise-constant ones).
nondifferentiable: set = set()


def jvp_eval(jaxpr: Jaxpr, consts, primals, tangents):
    """Evaluate ``jaxpr`` on primals and (possibly Zero) tangents, emitting both through bind."""
    penv, tenv = {}, {}
    for v, c in zip(jaxpr.constvars, consts):
        penv[v.id] = c
    for v, x, t in zip(jaxpr.invars, primals, tangents):
        penv[v.id] = x
        tenv[v.id] = t if is_differentiable(v.aval) else Zero(tangent_aval(v.aval))

    def read_p(a):
        return a.val if type(a) is Literal else penv[a.id]

    def read_t(a):
        if type(a) is Literal:
            return Zero(tangent_aval(a.aval))
        t = tenv.get(a.id)
        return Zero(tangent_aval(a.aval)) if t is None else t

    for eqn in jaxpr.eqns:
        ps = [read_p(a) for a in eqn.invars]
        ts = [read_t(a) for a in eqn.invars]
        with source_info(eqn.source_info):
            if all(isinstance(t, Zero) for t in ts) or eqn.prim in nondifferentiable:
                outs = eqn.prim.bind(*ps, **eqn.params)
                outs = outs if eqn.prim.multiple_results else [outs]
                touts = [Zero(tangent_aval(v.aval)) for v in eqn.outvars]
            else:
                rule = jvp_rules.get(eqn.prim)
                if rule is None:
                    raise UnsupportedError(
                        f"Differentiation rule for '{eqn.prim.name}' not implemented "
                        f"(jvp){where(eqn.source_info)}"
                    )
                outs, touts = rule(ps, ts, **eqn.params)
                if not eqn.prim.multiple_results:
                    outs, touts = [outs], [touts]
        for v, o, t in zip(eqn.outvars, outs, touts):
            penv[v.id] = o
            if not isinstance(t, Zero) and is_differentiable(v.aval):
                tenv[v.id] = t
    return [read_p(a) for a in jaxpr.outvars], [read_t(a) for a in jaxpr.outvars]


def jvp_jaxpr(closed: ClosedJaxpr, nonzeros: list[bool]) -> tuple[ClosedJaxpr, list[bool]]:
    """The Jaxpr of ``(primals, nonzero tangents) -> (primal outs, nonzero tangent outs)``."""
    in_avals = closed.in_avals
    t_avals = [tangent_aval(a) for a, nz in zip(in_avals, nonzeros) if nz]
    out_nz = []

    def fun(*args):
        primals, ts = list(args[: len(in_avals)]), iter(args[len(in_avals) :])
        tangents = [next(ts) if nz else Zero(tangent_aval(a)) for a, nz in zip(in_avals, nonzeros)]
        outs, touts = jvp_eval(closed.jaxpr, closed.consts, primals, tangents)
        out_nz[:] = [not isinstance(t, Zero) for t in touts]
        return outs + [t for t in touts if not isinstance(t, Zero)], None

    new, _ = trace_flat(fun, list(in_avals) + t_avals)
    return new, out_nz


# --- rule helpers --------------------------------------------------------------------------------
def _bcast(t, shape):
    """A tangent of a rank-0 operand of an elementwise op broadcast to the output shape."""
    if isinstance(t, Zero):
        return Zero(ShapedArray(shape, t.aval.dtype))
    a = get_aval(t)
    if a.shape == tuple(shape):
        return t
    return ops.broadcast_in_dim(t, shape, ())


def _const(x, v):
    """A scalar constant of x's dtype (weak when x is weak)."""
    a = get_aval(x)
    if a.weak_type:
        return float(v)
    return Array.from_value(np.asarray(v, a.dtype))


def _scale(t, coef, shape):
    """t * coef with a symbolic zero passing through."""
    if isinstance(t, Zero):
        return Zero(ShapedArray(shape, t.aval.dtype))
    return ops.mul(_bcast(t, shape) if get_aval(coef).shape == () else t, coef)


def defjvp_linear(prim):
    """The tangent of a linear primitive is the primitive applied to the tangents."""

    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        avals = [get_aval(p) for p in primals]
        ts = [
            instantiate(t) if not isinstance(t, Zero) else _zero_for(a)
            for t, a in zip(tangents, avals)
        ]
        return ans, prim.bind(*ts, **params)

    jvp_rules[prim] = rule


def _zero_for(aval):
    return ops.full(aval.shape, 0, aval.dtype)


# --- elementwise: one rule for every row of the table -------------------------------------------
class RowOps:
    """What a row's derivative function receives as ``ops``: the op builders of ``functx.ops``,
    plus ``shape_of`` and ``dtype_of`` (which accept Python scalars, the values of literals)."""

    def __getattr__(self, name):
        return getattr(ops, name)

    @staticmethod
    def shape_of(x):
        return get_aval(x).shape

    @staticmethod
    def dtype_of(x):
        return get_aval(x).dtype


_row_ops = RowOps()


def _linear_tangent(primals, tangents, signs, shape):
    out = Zero(ShapedArray(shape, get_aval(primals[0]).dtype))
    for t, s in zip(tangents, signs):
        if not isinstance(t, Zero) and s < 0:
            t = ops.neg(t)
        out = add_tangents(out, _bcast(t, shape))
    return out


def elementwise_rule(row: E.Elementwise):
    """The jvp rule of one elementwise row, from its ``jvp`` field."""
    prim = P.registry[row.name]
    d = row.jvp
    if isinstance(d, E.Unsupported):

        def unsupported(primals, tangents, **params):
            raise UnsupportedError(
                f"Differentiation rule for '{row.name}' not implemented: {d.reason}{where()}"
            )

        return unsupported
    if isinstance(d, E.Linear):

        def linear(primals, tangents, **params):
            ans = prim.bind(*primals, **params)
            return ans, _linear_tangent(primals, tangents, d.signs, get_aval(ans).shape)

        return linear
    if row.arity == 1:

        def unary(primals, tangents, **params):
            (x,), (t,) = primals, tangents
            ans = prim.bind(x, **params)
            return ans, _scale(t, d(_row_ops, x, ans, **params), get_aval(ans).shape)

        return unary
    dx, dy = d

    def binary(primals, tangents, **params):
        (x, y), (tx, ty) = primals, tangents
        ans = prim.bind(x, y, **params)
        shape = get_aval(ans).shape
        out = Zero(ShapedArray(shape, get_aval(ans).dtype))
        if not isinstance(tx, Zero):
            out = add_tangents(out, _scale(tx, dx(_row_ops, x, y, ans), shape))
        if not isinstance(ty, Zero):
            out = add_tangents(out, _scale(ty, dy(_row_ops, x, y, ans), shape))
        return ans, out

    return binary


for _row in E.ROWS:
    if _row.jvp == E.NONDIFF:
        nondifferentiable.add(P.registry[_row.name])
    elif _row.jvp == E.APPLY:
        defjvp_linear(P.registry[_row.name])
    elif _row.jvp is not None:  # (a row without a derivative: jvp names it when it is needed)
        jvp_rules[P.registry[_row.name]] = elementwise_rule(_row)

for _p in (
    P.stop_gradient_p,
    P.iota_p,
    P.argmax_p,
    P.argmin_p,
    P.reduce_and_p,
    P.reduce_or_p,
    P.bitcast_convert_type_p,  # a zero tangent, as JAX's
):
    nondifferentiable.add(_p)


def _abs_jvp(primals, tangents):
    """|x|: the row's rule for real operands; for complex ones JAX's
    ``real(t * conj(x) / |x|)``, with |x| = 0 replaced by 1 (a zero tangent at 0)."""
    (x,), (t,) = primals, tangents
    if get_aval(x).dtype not in dtypes.COMPLEX:
        return _abs_real_jvp(primals, tangents)
    ans = ops.abs(x)
    if isinstance(t, Zero):
        return ans, Zero(tangent_aval(get_aval(ans)))
    dt = get_aval(x).dtype
    safe = ops.select(ops.eq(ans, 0), ops.full_like(ans, 1), ans)
    coef = ops.div(ops.conj(x), ops.convert_element_type(safe, dt))
    return ans, ops.real(ops.mul(_bcast(t, get_aval(ans).shape), coef))


_abs_real_jvp = jvp_rules[P.abs_p]
jvp_rules[P.abs_p] = _abs_jvp


# --- select, convert -----------------------------------------------------------------------------
def _select_n_jvp(primals, tangents):
    which, *cases = primals
    ans = ops.select_n(which, *cases)
    tcases = tangents[1:]
    if all(isinstance(t, Zero) for t in tcases):
        return ans, Zero(tangent_aval(get_aval(ans)))
    ts = [
        instantiate(t) if not isinstance(t, Zero) else _zero_for(get_aval(c))
        for t, c in zip(tcases, cases)
    ]
    return ans, ops.select_n(which, *ts)


jvp_rules[P.select_n_p] = _select_n_jvp


def _convert_jvp(primals, tangents, *, new_dtype, weak_type=False):
    (x,), (t,) = primals, tangents
    ans = P.convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type)
    if not dtypes.is_inexact(new_dtype) or isinstance(t, Zero):
        return ans, Zero(tangent_aval(get_aval(ans)))
    return ans, P.convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type)


jvp_rules[P.convert_element_type_p] = _convert_jvp

# --- linear structural primitives ----------------------------------------------------------------
#: the structural primitives that are linear in their one array operand (jet's rules use it too)
LINEAR_STRUCTURAL = (
    P.broadcast_in_dim_p,
    P.reshape_p,
    P.transpose_p,
    P.squeeze_p,
    P.expand_dims_p,
    P.rev_p,
    P.slice_p,
    P.reduce_sum_p,
)
for _p in LINEAR_STRUCTURAL:
    defjvp_linear(_p)


def _concatenate_jvp(primals, tangents, *, dimension):
    ans = ops.concatenate(primals, dimension)
    ts = [_zero_for(get_aval(p)) if isinstance(t, Zero) else t for p, t in zip(primals, tangents)]
    return ans, ops.concatenate(ts, dimension)


jvp_rules[P.concatenate_p] = _concatenate_jvp


def _pad_jvp(primals, tangents, *, padding_config):
    (x, pv), (tx, tpv) = primals, tangents
    ans = P.pad_p.bind(x, pv, padding_config=padding_config)
    tx = _zero_for(get_aval(x)) if isinstance(tx, Zero) else tx
    tpv = _zero_for(get_aval(pv)) if isinstance(tpv, Zero) else tpv
    return ans, P.pad_p.bind(tx, tpv, padding_config=padding_config)


jvp_rules[P.pad_p] = _pad_jvp


def _index_linear_jvp(prim, n_linear):
    """Primitives linear in their first ``n_linear`` operands (the rest are integer indices)."""

    def rule(primals, tangents, **params):
        ans = prim.bind(*primals, **params)
        lin = [
            (_zero_for(get_aval(p)) if isinstance(t, Zero) else t)
            for p, t in zip(primals[:n_linear], tangents[:n_linear])
        ]
        return ans, prim.bind(*lin, *primals[n_linear:], **params)

    jvp_rules[prim] = rule


_index_linear_jvp(P.dynamic_slice_p, 1)


def _dus_jvp(primals, tangents):
    x, upd, *idx = primals
    tx, tu = tangents[0], tangents[1]
    ans = P.dynamic_update_slice_p.bind(x, upd, *idx)
    tx = _zero_for(get_aval(x)) if isinstance(tx, Zero) else tx
    tu = _zero_for(get_aval(upd)) if isinstance(tu, Zero) else tu
    return ans, P.dynamic_update_slice_p.bind(tx, tu, *idx)


jvp_rules[P.dynamic_update_slice_p] = _dus_jvp


def _gather_jvp(primals, tangents, **params):
    x, idx = primals
    ans = P.gather_p.bind(x, idx, **params)
    t = tangents[0]
    if isinstance(t, Zero):
        return ans, Zero(tangent_aval(get_aval(ans)))
    if params["mode"] == "fill":
        params = dict(params, fill_value=0)
    return ans, P.gather_p.bind(t, idx, **params)


jvp_rules[P.gather_p] = _gather_jvp


def _scatter_linear_jvp(prim):
    def rule(primals, tangents, **params):
        x, idx, upd = primals
        ans = prim.bind(x, idx, upd, **params)
        tx, tu = tangents[0], tangents[2]
        tx = _zero_for(get_aval(x)) if isinstance(tx, Zero) else tx
        tu = _zero_for(get_aval(upd)) if isinstance(tu, Zero) else tu
        return ans, prim.bind(tx, idx, tu, **params)

    jvp_rules[prim] = rule


_scatter_linear_jvp(P.scatter_add_p)


def scatter_winners(shape, idx, upd_aval, *, axes, mode):
    """Which updates of a ``scatter`` (replacing) land, of several written to one place: each
    update's batch position gets an id (from 1), the ids are scattered into zeros of ``shape``
    with the same indices and read back; an update landed where it reads its own id. Returns
    ``(landed, mine)``: the scattered ids (0 where nothing was written) and a boolean array of
    the updates' shape. The value and its derivative then agree whichever update a backend
    keeps (JAX's scatter jvp does the same)."""
    nid = get_aval(idx).ndim - 1
    n = int(np.prod(upd_aval.shape[:nid], dtype=np.int64))
    ids = ops.add(
        ops.reshape(ops.iota(dtypes.int32, n), upd_aval.shape[:nid]),
        ops.full((), 1, dtypes.int32),
    )
    ids = ops.broadcast_in_dim(ids, upd_aval.shape, tuple(range(nid)))
    landed = P.scatter_p.bind(ops.full(shape, 0, dtypes.int32), idx, ids, axes=axes, mode=mode)
    gmode = "clip" if mode == "clip" else "fill"
    back = P.gather_p.bind(
        landed, idx, axes=axes, mode=gmode, fill_value=None if gmode == "clip" else 0
    )
    return landed, ops.eq(back, ids)


def _scatter_jvp(primals, tangents, *, axes, mode):
    # Only the update that lands carries its tangent; the operand's tangent survives where
    # nothing was written. The tangent is then a scatter_add (linear, transposed by a gather).
    x, idx, u = primals
    tx, tu = tangents[0], tangents[2]
    ans = P.scatter_p.bind(x, idx, u, axes=axes, mode=mode)
    xa = get_aval(x)
    if isinstance(tx, Zero) and isinstance(tu, Zero):
        return ans, Zero(tangent_aval(get_aval(ans)))
    landed, mine = scatter_winners(xa.shape, idx, get_aval(u), axes=axes, mode=mode)
    out = Zero(tangent_aval(get_aval(ans)))
    if not isinstance(tx, Zero):
        untouched = ops.eq(landed, ops.full_like(landed, 0))
        out = add_tangents(out, ops.select(untouched, tx, ops.full_like(tx, 0)))
    if not isinstance(tu, Zero):
        kept = ops.select(mine, tu, ops.full_like(tu, 0))
        ta = get_aval(tu)
        out = add_tangents(
            out,
            P.scatter_add_p.bind(ops.full(xa.shape, 0, ta.dtype), idx, kept, axes=axes, mode=mode),
        )
    return ans, out


jvp_rules[P.scatter_p] = _scatter_jvp


def _scatter_mul_jvp(primals, tangents, *, axes, mode):
    # out = x * M with M = scatter_mul(1, idx, u). For each update d/du_k = out / u_k at its target
    # (exact when updates are nonzero; JAX's rule has the same restriction to unique, nonzero ones).
    x, idx, u = primals
    tx, tu = tangents[0], tangents[2]
    ans = P.scatter_mul_p.bind(x, idx, u, axes=axes, mode=mode)
    m = P.scatter_mul_p.bind(ops.full_like(x, 1), idx, u, axes=axes, mode=mode)
    out = Zero(tangent_aval(get_aval(ans)))
    if not isinstance(tx, Zero):
        out = add_tangents(out, ops.mul(tx, m))
    if not isinstance(tu, Zero):
        gmode = "clip" if mode == "clip" else "fill"
        at = P.gather_p.bind(
            ans, idx, axes=axes, mode=gmode, fill_value=None if gmode == "clip" else 0
        )
        coef = ops.div(at, u)
        out = add_tangents(
            out,
            P.scatter_add_p.bind(ops.full_like(x, 0), idx, ops.mul(tu, coef), axes=axes, mode=mode),
        )
    return ans, out


jvp_rules[P.scatter_mul_p] = _scatter_mul_jvp


def _scatter_minmax_jvp(prim):
    def rule(primals, tangents, *, axes, mode):
        x, idx, u = primals
        tx, tu = tangents[0], tangents[2]
        ans = prim.bind(x, idx, u, axes=axes, mode=mode)
        gmode = "clip" if mode == "clip" else "fill"
        at = P.gather_p.bind(
            ans, idx, axes=axes, mode=gmode, fill_value=None if gmode == "clip" else 0
        )
        from_x = ops.convert_element_type(ops.eq(x, ans), get_aval(x).dtype)
        from_u = ops.convert_element_type(ops.eq(u, at), get_aval(x).dtype)
        counts = ops.add(
            from_x, P.scatter_add_p.bind(ops.full_like(x, 0), idx, from_u, axes=axes, mode=mode)
        )
        tx = _zero_for(get_aval(x)) if isinstance(tx, Zero) else tx
        tu = _zero_for(get_aval(u)) if isinstance(tu, Zero) else tu
        num = ops.add(
            ops.mul(tx, from_x),
            P.scatter_add_p.bind(
                ops.full_like(x, 0), idx, ops.mul(tu, from_u), axes=axes, mode=mode
            ),
        )
        return ans, ops.div(num, counts)

    jvp_rules[prim] = rule


_scatter_minmax_jvp(P.scatter_min_p)
_scatter_minmax_jvp(P.scatter_max_p)


# --- reductions ----------------------------------------------------------------------------------
def _keepdims_shape(shape, axes):
    return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _expand_back(y, shape, axes):
    """Broadcast a reduction's result back over the reduced axes."""
    kept = [i for i in range(len(shape)) if i not in axes]
    return ops.broadcast_in_dim(y, shape, tuple(kept))


def _reduce_minmax_jvp(prim):
    def rule(primals, tangents, *, axes):
        (x,), (t,) = primals, tangents
        ans = prim.bind(x, axes=axes)
        shape = get_aval(x).shape
        loc = ops.convert_element_type(ops.eq(x, _expand_back(ans, shape, axes)), get_aval(x).dtype)
        counts = ops.reduce_sum(loc, axes)
        return ans, ops.div(ops.reduce_sum(ops.mul(t, loc), axes), counts)

    jvp_rules[prim] = rule


_reduce_minmax_jvp(P.reduce_max_p)
_reduce_minmax_jvp(P.reduce_min_p)


# reduce_prod's rule uses cumprod, an associative scan: it lives in
# functx/control/associative_scan.py.


# --- contraction ---------------------------------------------------------------------------------
def _dot_general_jvp(primals, tangents, **params):
    (lhs, rhs), (tl, tr) = primals, tangents
    ans = P.dot_general_p.bind(lhs, rhs, **params)
    out = Zero(tangent_aval(get_aval(ans)))
    if not isinstance(tl, Zero):
        out = add_tangents(out, P.dot_general_p.bind(tl, rhs, **params))
    if not isinstance(tr, Zero):
        out = add_tangents(out, P.dot_general_p.bind(lhs, tr, **params))
    return ans, out


jvp_rules[P.dot_general_p] = _dot_general_jvp


# --- the public API ------------------------------------------------------------------------------
def fun_name(fun) -> str:
    """``name (defined at file:line)``: how errors name the user's function."""
    name = getattr(fun, "__name__", type(fun).__name__)
    code = getattr(fun, "__code__", None)
    return f"{name} (defined at {code.co_filename}:{code.co_firstlineno})" if code else name


def check_callable(what, fun):
    """``fun`` must be callable (JAX: 'Expected a callable value')."""
    if not callable(fun):
        raise FunctxTypeError(
            f"{what}: expected a callable value, got {fun!r:.80} of type "
            f"{type(fun).__name__}{where()}"
        )


class ArgnumsError(FunctxTypeError, ValueError):
    """An argnums out of range for the call: JAX raises TypeError (grad) or ValueError (jacfwd,
    jacrev, negative argnums); this is both."""


def check_argnums(what, argnums, name="argnums"):
    """``argnums``: an int or a non-empty sequence of distinct ints (the range is checked at call
    time, when the number of arguments is known)."""

    def bad():
        return FunctxTypeError(
            f"{what}: {name} must be an int or a sequence of ints, got {argnums!r}{where()}"
        )

    if isinstance(argnums, (bool, np.bool_)):
        raise bad()
    if isinstance(argnums, (int, np.integer)):
        return
    if isinstance(argnums, (str, bytes)) or not hasattr(argnums, "__iter__"):
        raise bad()
    try:
        nums = tuple(argnums)
    except TypeError:  # a 0-d array
        raise bad() from None
    if not nums or any(
        isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)) for a in nums
    ):
        raise bad()
    if len(set(int(a) for a in nums)) != len(nums):
        raise ArgnumsError(f"{what}: {name} {nums} repeats an argument{where()}")


def bad_argument(what, args, kwargs=None):
    """The FunctxTypeError for the first leaf of ``(args, kwargs)`` that is not an array (an
    unregistered class, a string, ...): it names the argument, the leaf's type and what to do.
    None when every leaf is fine."""
    paths, leaves, _ = optree.tree_flatten_with_path(
        (tuple(args), dict(kwargs or {})), none_is_leaf=False, namespace=PYTREE_NAMESPACE
    )
    for path, leaf in zip(paths, leaves):
        try:
            get_aval(leaf)
        except (TypeError, ValueError, AttributeError):
            kind = "argument" if path[0] == 0 else "keyword argument"
            sub = "".join(f"[{k!r}]" for k in path[2:])
            cls = type(leaf)
            err = FunctxTypeError(
                f"{what}: {kind} {path[1]!r}{sub}: '{str(leaf):.60}' of type {cls} is not a valid "
                f"JAX type (functx takes arrays, Python scalars and pytrees of them); pass arrays, "
                f"or register the "
                f"class as a pytree node with functx.tree_util.register_pytree_node (or "
                f"register_dataclass){where()}"
            )
            err.bad_argument = True
            return err
    return None


def arg_avals(what, leaves, args, kwargs=None):
    """The avals of ``leaves`` (the flattened ``(args, kwargs)``); a leaf that is not an array
    raises ``bad_argument``'s error (``what`` may be a function giving the name, called only
    then)."""
    try:
        return tuple(get_aval(x) for x in leaves)
    except (TypeError, ValueError, AttributeError) as e:
        err = bad_argument(what() if callable(what) else what, args, kwargs)
        if err is None:
            raise
        raise err from e


def _check_tangent(p, t, path):
    """The tangent ``t`` for primal ``p``, checked (shape, dtype) and with a Python scalar tangent
    converted to the primal's dtype."""
    pa = get_aval(p)
    if isinstance(t, np.ndarray) and t.dtype == dtypes.float0:
        ta = ShapedArray(t.shape, dtypes.float0)
    else:
        ta = get_aval(t)
    if pa.shape != ta.shape:
        raise FunctxArgumentError(
            f"jvp of {path}: jvp called with different primal and tangent shapes (they must "
            f"have equal shapes); got primal {pa.str_short()} and tangent {ta.str_short()}"
            f"{where()}"
        )
    if not is_differentiable(pa):
        if ta.dtype != dtypes.float0:
            raise FunctxTypeError(
                f"jvp of {path}: primal and tangent arguments to jax.jvp do not match: dtypes "
                f"must be equal, or for an integer or bool primal the tangent dtype must be "
                f"float0; got primal {pa.str_short()} and "
                f"tangent {ta.str_short()} (use np.zeros(shape, functx.dtypes.float0)){where()}"
            )
        return t
    if is_python_scalar(t) and not isinstance(t, bool):
        return Array.from_value(np.asarray(t, pa.dtype))
    if ta.dtype != pa.dtype:
        raise FunctxTypeError(
            f"jvp of {path}: primal and tangent arguments to jax.jvp do not match: dtypes must "
            f"be equal; got primal {pa.str_short()} and tangent {ta.str_short()}{where()}"
        )
    return t


# --- tracing user functions (pytrees, has_aux), with a cache ------------------------------------
class Traced(NamedTuple):
    closed: ClosedJaxpr  # flat args -> flat outputs + flat aux
    in_tree: object
    out_tree: object
    aux_tree: object
    n_out: int


_trace_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def trace_user_fun(fun, args: tuple, has_aux: bool = False, kwargs=None):
    """Trace ``fun(*args)`` into a ClosedJaxpr over the flat leaves of ``args``.

    Returns ``(traced, leaves)``. With ``has_aux`` the function returns ``(out, aux)`` and the
    aux leaves follow the outputs. Traces are cached per function, tree structure and avals."""
    leaves, in_tree = tree_flatten((tuple(args), dict(kwargs or {})))
    avals = arg_avals(lambda: fun_name(fun), leaves, args, kwargs)
    key = (in_tree, avals, has_aux, config.x64_on())  # (the mode decides the constants' dtypes)
    try:
        per_fun = _trace_cache.setdefault(fun, {})
    except TypeError:
        per_fun = {}
    hit = per_fun.get(key)
    if hit is not None and hit is not _NEEDS_VALUES:
        return hit, leaves
    info = {}

    def flat(*xs):
        a, kw = tree_unflatten(in_tree, list(xs))
        out = fun(*a, **kw)
        aux_leaves, aux_tree = [], None
        if has_aux:
            if not isinstance(out, tuple) or len(out) != 2:
                raise FunctxTypeError(
                    f"{fun_name(fun)} has has_aux=True, so it must return a pair, a two-element "
                    f"tuple (output, aux); it returned {type(out).__name__}{where()}"
                )
            out, aux = out
            aux_leaves, aux_tree = tree_flatten(aux)
        out_leaves, out_tree = tree_flatten(out)
        info.update(out_tree=out_tree, aux_tree=aux_tree, n_out=len(out_leaves))
        return out_leaves + aux_leaves, None

    # First abstractly (the trace is cached for every value of these types); if the function
    # needs a concrete value (Python control flow on an argument, ``int(x)``), again on tracers
    # that carry the arguments' values, as JAX's eager transforms do: that trace is specialised
    # to the values and never cached, and the key is marked so the next call skips the first try.
    values = None
    if hit is _NEEDS_VALUES:
        values = known_values(leaves)
    if values is None:
        try:
            closed, _ = trace_flat(flat, avals)
        except (ConcretizationError, NonConcreteBooleanIndexError):
            values = known_values(leaves)
            if values is None:
                raise
            _remember(per_fun, key, _NEEDS_VALUES)
    if values is not None:
        closed, _ = trace_flat(flat, avals, values)
        return Traced(closed, in_tree, info["out_tree"], info["aux_tree"], info["n_out"]), leaves
    traced = Traced(closed, in_tree, info["out_tree"], info["aux_tree"], info["n_out"])
    # (no tracers of an outer trace, no values read from a Ref made outside: functx/_refbox.py)
    if not any(hasattr(c, "builder") for c in closed.consts) and not _refbox.reads(closed):
        _remember(per_fun, key, traced)
    return traced, leaves


_NEEDS_VALUES = object()  # a cache entry: this function needs concrete values for these types


def _remember(per_fun, key, entry):
    if len(per_fun) > 64:
        per_fun.pop(next(iter(per_fun)))
    per_fun[key] = entry


_jvp_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def clear_caches():
    """Forget the cached traces and jvp Jaxprs (a custom derivative rule was (re)defined, and the
    Jaxprs traced before hold the old one)."""
    _trace_cache.clear()
    _jvp_cache.clear()


def cached_jvp_jaxpr(closed: ClosedJaxpr, nonzeros: tuple):
    per = _jvp_cache.setdefault(closed, {})
    if nonzeros not in per:
        j, out_nz = jvp_jaxpr(closed, list(nonzeros))
        per[nonzeros] = (passes.simplify(j), out_nz)
    return per[nonzeros]


def _weak_as_primal(t, aval):
    """JAX's output tangent is weakly typed where its primal output is (the tangent aval of a
    weak primal is weak); the Jaxpr's tangents keep their own types (linearize and vjp read
    them)."""
    if not aval.weak_type or get_aval(t).weak_type or get_aval(t).dtype == dtypes.float0:
        return t
    return ops.convert_element_type(t, get_aval(t).dtype, weak_type=True)


def jvp(fun, primals, tangents, has_aux=False):
    """Forward-mode derivative: ``(fun(*primals), J(fun)(primals) @ tangents)``.

    Arguments:
      fun: a function of pytrees of arrays.
      primals, tangents: tuples (or lists) of the same structure.
    Returns:
      ``(primals_out, tangents_out)`` (and ``aux`` with has_aux).

    Differences from JAX: outside ``jit`` and ``vmap``, a function that reads a concrete value (``if
    x > 0``, ``int(x)``) is traced abstractly, then again on tracers carrying the values: its Python
    body runs twice on the first call (mind side effects such as printing).

    Example:
      >>> import functx
      >>> functx.jvp(functx.numpy.sin, (0.0,), (1.0,))
      (Array(0., dtype=float32, weak_type=True), Array(1., dtype=float32, weak_type=True))
    """
    check_callable("jvp", fun)
    fname = fun_name(fun)
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise FunctxTypeError(
            f"jvp of {fname}: primal and tangent arguments to jax.jvp must be tuples or lists; "
            f"found {type(primals).__name__} and {type(tangents).__name__}{where()}"
        )
    p_leaves, p_tree = tree_flatten(primals)  # (as given: a tuple and a list differ, as in JAX)
    t_leaves, t_tree = tree_flatten(tangents)
    if p_tree != t_tree:
        raise FunctxTypeError(
            f"jvp of {fname}: primal and tangent arguments to jax.jvp must have the same "
            f"tree structure; got {p_tree} and {t_tree}{where()}"
        )
    arg_avals(f"jvp of {fname}", p_leaves, primals)
    t_leaves = [
        _check_tangent(p, t, f"{fname}, leaf {i}")
        for i, (p, t) in enumerate(zip(p_leaves, t_leaves))
    ]
    traced, leaves = trace_user_fun(fun, tuple(primals), has_aux)
    closed = traced.closed
    nonzeros = [is_differentiable(get_aval(x)) for x in leaves]
    jaxpr, out_nz = cached_jvp_jaxpr(closed, tuple(nonzeros))
    t_in = [t for t, nz in zip(t_leaves, nonzeros) if nz]
    res = as_arrays(eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *leaves, *t_in))
    n_all = len(closed.out_avals)
    outs, touts_nz = res[:n_all], iter(res[n_all:])
    touts = [
        _weak_as_primal(next(touts_nz) if nz else zeros_like_aval(tangent_aval(a)), a)
        for nz, a in zip(out_nz, closed.out_avals)
    ]
    n = traced.n_out
    out = (tree_unflatten(traced.out_tree, outs[:n]), tree_unflatten(traced.out_tree, touts[:n]))
    return out + (tree_unflatten(traced.aux_tree, outs[n:]),) if has_aux else out
