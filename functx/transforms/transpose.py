"""transpose: reverse mode over a linear Jaxpr.

``backward_pass`` walks the equations of a linear Jaxpr (the output of ``linearize``) backwards and,
per linear primitive, calls a transpose rule that maps the cotangent of the outputs to cotangents of
the linear inputs. Cotangents of a variable used several times are accumulated; cotangents that are
known to be zero stay symbolic.
"""

from __future__ import annotations

import numpy as np

from functx import ops, primitives as P
from functx.core import Jaxpr, Literal, ShapedArray
from functx.errors import FunctxTypeError, FunctxValueError, UnsupportedError
from functx.source_info import source_info, where
from functx.tracing import get_aval, trace_flat, tree_flatten, tree_unflatten
from functx.transforms.jvp import Zero, scatter_winners


class UndefinedPrimal:
    """Stands for a linear input of an equation in a transpose rule."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"UndefinedPrimal({self.aval.str_short()})"


def is_undefined(x) -> bool:
    return isinstance(x, UndefinedPrimal)


transpose_rules: dict = {}


def backward_pass(jaxpr: Jaxpr, consts, args, cts_out):
    """Cotangents of the linear inputs of ``jaxpr``.

    ``args`` holds a value for each non-linear input and an ``UndefinedPrimal`` for each linear one;
    ``cts_out`` one cotangent (or Zero) per output. Equations that do not touch a linear input are
    evaluated forward first; the rest are transposed in reverse order.
    """
    env, linear = {}, set()
    for v, c in zip(jaxpr.constvars, consts):
        env[v.id] = c
    for v, a in zip(jaxpr.invars, args):
        if is_undefined(a):
            linear.add(v.id)
        else:
            env[v.id] = a

    def read(a):
        return a.val if type(a) is Literal else env[a.id]

    lin_eqns = []
    for eqn in jaxpr.eqns:
        if any(type(a) is not Literal and a.id in linear for a in eqn.invars):
            lin_eqns.append(eqn)
            for v in eqn.outvars:
                linear.add(v.id)
        else:
            with source_info(eqn.source_info):
                outs = eqn.prim.bind(*[read(a) for a in eqn.invars], **eqn.params)
            outs = outs if eqn.prim.multiple_results else [outs]
            for v, o in zip(eqn.outvars, outs):
                env[v.id] = o

    ct_env: dict = {}

    def add_ct(v, ct):
        if type(v) is Literal or isinstance(ct, Zero) or ct is None or v.id not in linear:
            return
        prev = ct_env.get(v.id)
        ct_env[v.id] = ct if prev is None else ops.add(prev, ct)

    for v, ct in zip(jaxpr.outvars, cts_out):
        add_ct(v, ct)

    for eqn in reversed(lin_eqns):
        cts = [ct_env.pop(v.id, None) for v in eqn.outvars]
        if all(c is None for c in cts):
            continue
        cts = [Zero(v.aval) if c is None else c for v, c in zip(eqn.outvars, cts)]
        invals = [
            UndefinedPrimal(a.aval) if type(a) is not Literal and a.id in linear else read(a)
            for a in eqn.invars
        ]
        rule = transpose_rules.get(eqn.prim)
        if rule is None:
            raise UnsupportedError(
                f"Transpose rule (for reverse-mode differentiation) for "
                f"'{eqn.prim.name}' not implemented{where(eqn.source_info)}"
            )
        with source_info(eqn.source_info):
            cts_in = rule(cts if eqn.prim.multiple_results else cts[0], *invals, **eqn.params)
        for a, ct in zip(eqn.invars, cts_in):
            add_ct(a, ct)

    out = []
    for v, a in zip(jaxpr.invars, args):
        if is_undefined(a):
            ct = ct_env.get(v.id)
            out.append(Zero(v.aval) if ct is None else ct)
        else:
            out.append(None)
    return out


# --- helpers -------------------------------------------------------------------------------------
def _aval(x):
    return x.aval if is_undefined(x) else get_aval(x)


def unbroadcast(ct, aval: ShapedArray):
    """Sum a cotangent down to a rank-0 operand that an elementwise op broadcast."""
    if isinstance(ct, Zero):
        return Zero(aval)
    cta = get_aval(ct)
    if cta.shape != aval.shape:
        ct = ops.reduce_sum(ct, tuple(range(cta.ndim)))
    if get_aval(ct).dtype != aval.dtype:
        ct = ops.convert_element_type(ct, aval.dtype)
    return ct


def _zeros(aval):
    return ops.full(aval.shape, 0, aval.dtype)


def _inst(ct, aval):
    return _zeros(aval) if isinstance(ct, Zero) else ct


# --- elementwise ---------------------------------------------------------------------------------
def _add_t(ct, x, y):
    return [
        unbroadcast(ct, _aval(x)) if is_undefined(x) else None,
        unbroadcast(ct, _aval(y)) if is_undefined(y) else None,
    ]


def _sub_t(ct, x, y):
    neg = ct if isinstance(ct, Zero) else ops.neg(ct)
    return [
        unbroadcast(ct, _aval(x)) if is_undefined(x) else None,
        unbroadcast(neg, _aval(y)) if is_undefined(y) else None,
    ]


def _mul_t(ct, x, y):
    if is_undefined(x) and is_undefined(y):
        raise UnsupportedError(f"mul of two linear values is not linear{where()}")
    if isinstance(ct, Zero):
        return [
            Zero(_aval(x)) if is_undefined(x) else None,
            Zero(_aval(y)) if is_undefined(y) else None,
        ]
    if is_undefined(x):
        return [unbroadcast(ops.mul(ct, y), x.aval), None]
    return [None, unbroadcast(ops.mul(x, ct), y.aval)]


def _div_t(ct, x, y):
    if is_undefined(y):
        raise UnsupportedError(f"div is not linear in its denominator{where()}")
    if isinstance(ct, Zero):
        return [Zero(x.aval), None]
    return [unbroadcast(ops.div(ct, y), x.aval), None]


transpose_rules[P.add_p] = _add_t
transpose_rules[P.sub_p] = _sub_t
transpose_rules[P.mul_p] = _mul_t
transpose_rules[P.div_p] = _div_t
transpose_rules[P.neg_p] = lambda ct, x: [ct if isinstance(ct, Zero) else ops.neg(ct)]


# Complex parts. JAX transposes them as R-linear maps without conjugating (its convention for
# complex reverse mode): real^T(t) = t + 0j, imag^T(t) = -t * 1j, complex^T(t) = (re t, -im t).
def _real_t(ct, x):
    if isinstance(ct, Zero):
        return [Zero(x.aval)]
    return [ops.complex(ct, ops.full_like(ct, 0))]


def _imag_t(ct, x):
    if isinstance(ct, Zero):
        return [Zero(x.aval)]
    return [ops.complex(ops.full_like(ct, 0), ops.neg(ct))]


def _conj_t(ct, x):
    if isinstance(ct, Zero):
        return [Zero(x.aval)]
    return [ops.conj(ct) if x.aval.dtype == get_aval(ct).dtype else ops.real(ct)]


def _complex_t(ct, x, y):
    if isinstance(ct, Zero):
        return [
            Zero(_aval(x)) if is_undefined(x) else None,
            Zero(_aval(y)) if is_undefined(y) else None,
        ]
    return [
        unbroadcast(ops.real(ct), x.aval) if is_undefined(x) else None,
        unbroadcast(ops.neg(ops.imag(ct)), y.aval) if is_undefined(y) else None,
    ]


transpose_rules[P.real_p] = _real_t
transpose_rules[P.imag_p] = _imag_t
transpose_rules[P.conj_p] = _conj_t
transpose_rules[P.complex_p] = _complex_t


def _reduce_precision_t(ct, x, *, exponent_bits, mantissa_bits):
    if isinstance(ct, Zero):
        return [Zero(x.aval)]
    return [ops.reduce_precision(ct, exponent_bits, mantissa_bits)]


transpose_rules[P.reduce_precision_p] = _reduce_precision_t


def _convert_t(ct, x, *, new_dtype, weak_type=False):
    if isinstance(ct, Zero):
        return [Zero(x.aval)]
    return [ops.convert_element_type(ct, x.aval.dtype, x.aval.weak_type)]


transpose_rules[P.convert_element_type_p] = _convert_t


def _select_n_t(ct, which, *cases):
    if is_undefined(which):
        raise UnsupportedError(f"select_n is not linear in its predicate{where()}")
    out = [None]
    for i, c in enumerate(cases):
        if not is_undefined(c):
            out.append(None)
        elif isinstance(ct, Zero):
            out.append(Zero(c.aval))
        else:
            z = _zeros(get_aval(ct))
            branches = [z] * len(cases)
            branches[i] = ct
            out.append(ops.select_n(which, *branches))
    return out


transpose_rules[P.select_n_p] = _select_n_t


# --- structural ----------------------------------------------------------------------------------
def _structural(fn):
    """Rules for single-operand linear ops: ``fn(ct, aval, **params) -> operand cotangent``."""

    def rule(ct, x, **params):
        if isinstance(ct, Zero):
            return [Zero(x.aval)]
        return [fn(ct, x.aval, **params)]

    return rule


def _reduce_sum_t(ct, aval, *, axes):
    kept = tuple(i for i in range(aval.ndim) if i not in axes)
    return ops.broadcast_in_dim(ct, aval.shape, kept)


def _broadcast_in_dim_t(ct, aval, *, shape, broadcast_dimensions):
    new_axes = tuple(i for i in range(len(shape)) if i not in broadcast_dimensions)
    stretched = tuple(
        d for i, d in enumerate(broadcast_dimensions) if aval.shape[i] == 1 and shape[d] != 1
    )
    out = ops.reduce_sum(ct, tuple(sorted(new_axes + stretched))) if new_axes or stretched else ct
    return ops.reshape(out, aval.shape)


def _slice_t(ct, aval, *, start_indices, limit_indices, strides=None):
    strides = strides or (1,) * aval.ndim
    cfg = []
    for d, s, st, n in zip(aval.shape, start_indices, strides, get_aval(ct).shape):
        last = s + (n - 1) * st + 1 if n else s
        cfg.append((s, d - last, st - 1) if n else (s, d - s, 0))
    if any(n == 0 for n in get_aval(ct).shape):
        return _zeros(aval)
    return ops.pad(ct, ops.full((), 0, aval.dtype), cfg)


def _pad_t(ct, x, pv, *, padding_config):
    if isinstance(ct, Zero):
        return [
            Zero(_aval(x)) if is_undefined(x) else None,
            Zero(_aval(pv)) if is_undefined(pv) else None,
        ]
    xa = _aval(x)
    # Undo the low/high padding (negative padding slices), then take every (interior+1)-th element.
    unpadded = ops.pad(
        ct, ops.full((), 0, xa.dtype), [(-lo, -hi, 0) for lo, hi, _ in padding_config]
    )
    ua = get_aval(unpadded)
    t_x = ops.slice(unpadded, (0,) * xa.ndim, ua.shape, [i + 1 for _, _, i in padding_config])
    t_pv = None
    if is_undefined(pv):
        total = ops.reduce_sum(ct, tuple(range(get_aval(ct).ndim)))
        t_pv = ops.sub(total, ops.reduce_sum(t_x, tuple(range(xa.ndim))))
    return [t_x if is_undefined(x) else None, t_pv]


def _concatenate_t(ct, *xs, dimension):
    out, start = [], 0
    for x in xs:
        n = _aval(x).shape[dimension]
        if is_undefined(x):
            if isinstance(ct, Zero):
                out.append(Zero(x.aval))
            else:
                out.append(ops.slice_in_dim(ct, start, start + n, 1, dimension))
        else:
            out.append(None)
        start += n
    return out


transpose_rules[P.reduce_sum_p] = _structural(_reduce_sum_t)
transpose_rules[P.broadcast_in_dim_p] = _structural(_broadcast_in_dim_t)
transpose_rules[P.reshape_p] = _structural(
    lambda ct, aval, *, new_sizes: ops.reshape(ct, aval.shape)
)
transpose_rules[P.transpose_p] = _structural(
    lambda ct, aval, *, permutation: ops.transpose(ct, tuple(np.argsort(permutation)))
)
transpose_rules[P.squeeze_p] = _structural(
    lambda ct, aval, *, dimensions: ops.reshape(ct, aval.shape)
)
transpose_rules[P.expand_dims_p] = _structural(
    lambda ct, aval, *, dimensions: ops.reshape(ct, aval.shape)
)
transpose_rules[P.rev_p] = _structural(lambda ct, aval, *, dimensions: ops.rev(ct, dimensions))
transpose_rules[P.slice_p] = _structural(_slice_t)
transpose_rules[P.pad_p] = _pad_t
transpose_rules[P.concatenate_p] = _concatenate_t


# --- indexing ------------------------------------------------------------------------------------
def _dynamic_slice_t(ct, x, *idx, slice_sizes):
    if isinstance(ct, Zero):
        return [Zero(x.aval)] + [None] * len(idx)
    return [P.dynamic_update_slice_p.bind(_zeros(x.aval), ct, *idx)] + [None] * len(idx)


def _dus_t(ct, x, upd, *idx):
    ua = _aval(upd)
    if isinstance(ct, Zero):
        return [
            Zero(_aval(x)) if is_undefined(x) else None,
            Zero(ua) if is_undefined(upd) else None,
        ] + [None] * len(idx)
    # (the primitives themselves: lax's wrappers also wrap negative starts, the primitives only
    # clamp, and the rules must index exactly as the equation they transpose)
    t_x = P.dynamic_update_slice_p.bind(ct, _zeros(ua), *idx) if is_undefined(x) else None
    t_u = P.dynamic_slice_p.bind(ct, *idx, slice_sizes=ua.shape) if is_undefined(upd) else None
    return [t_x, t_u] + [None] * len(idx)


def _gather_t(ct, x, idx, *, axes, mode, fill_value=None):
    if isinstance(ct, Zero):
        return [Zero(x.aval), None]
    smode = "clip" if mode == "clip" else "drop"
    return [P.scatter_add_p.bind(_zeros(x.aval), idx, ct, axes=axes, mode=smode), None]


def _gather_back(ct, idx, axes, mode):
    gmode = "clip" if mode == "clip" else "fill"
    return P.gather_p.bind(
        ct, idx, axes=axes, mode=gmode, fill_value=None if gmode == "clip" else 0
    )


def _scatter_add_t(ct, x, idx, upd, *, axes, mode):
    if isinstance(ct, Zero):
        return [
            Zero(_aval(x)) if is_undefined(x) else None,
            None,
            Zero(_aval(upd)) if is_undefined(upd) else None,
        ]
    return [
        ct if is_undefined(x) else None,
        None,
        _gather_back(ct, idx, axes, mode) if is_undefined(upd) else None,
    ]


def _scatter_t(ct, x, idx, upd, *, axes, mode):
    ua = _aval(upd)
    if isinstance(ct, Zero):
        return [
            Zero(_aval(x)) if is_undefined(x) else None,
            None,
            Zero(ua) if is_undefined(upd) else None,
        ]
    t_x = P.scatter_p.bind(ct, idx, _zeros(ua), axes=axes, mode=mode) if is_undefined(x) else None
    t_u = None
    if is_undefined(upd):  # only the update that lands (of several at one place) gets ct
        _, mine = scatter_winners(_aval(x).shape, idx, ua, axes=axes, mode=mode)
        t_u = ops.select(mine, _gather_back(ct, idx, axes, mode), _zeros(ua))
    return [t_x, None, t_u]


transpose_rules[P.dynamic_slice_p] = _dynamic_slice_t
transpose_rules[P.dynamic_update_slice_p] = _dus_t
transpose_rules[P.gather_p] = _gather_t
transpose_rules[P.scatter_add_p] = _scatter_add_t
transpose_rules[P.scatter_p] = _scatter_t


# --- contraction ---------------------------------------------------------------------------------
def _dot_transpose_operand(ct, other, operand_aval, dn, operand_is_lhs, precision=None):
    """Cotangent of one dot_general operand: contract ct's axes that belong to the other operand's
    free dimensions with those dimensions, then permute into the operand's axis order."""
    (lc, rc), (lb, rb) = dn
    oa = get_aval(other)
    if operand_is_lhs:
        mine_c, other_c, mine_b, other_b = lc, rc, lb, rb
    else:
        mine_c, other_c, mine_b, other_b = rc, lc, rb, lb
    nb = len(lb)
    mine_free = [i for i in range(operand_aval.ndim) if i not in mine_c and i not in mine_b]
    other_free = [i for i in range(oa.ndim) if i not in other_c and i not in other_b]
    # ct layout: [batch, lhs_free, rhs_free]
    if operand_is_lhs:
        ct_other_free = list(range(nb + len(mine_free), nb + len(mine_free) + len(other_free)))
    else:
        ct_other_free = list(range(nb, nb + len(other_free)))
    dims = ((tuple(ct_other_free), tuple(other_free)), (tuple(range(nb)), tuple(other_b)))
    if oa.dtype != get_aval(ct).dtype:  # preferred_element_type: ct has the product's dtype
        other = ops.convert_element_type(other, get_aval(ct).dtype)
    out = ops.dot_general(ct, other, dims, precision=precision)
    # out layout: [batch, my free dims, my contracting dims ordered as the other's sorted ones]
    order = list(mine_b) + mine_free + [mine_c[i] for i in np.argsort(other_c)]
    out = ops.transpose(out, tuple(np.argsort(order)))
    if get_aval(out).dtype != operand_aval.dtype:
        out = ops.convert_element_type(out, operand_aval.dtype)
    return out


def _dot_general_t(ct, lhs, rhs, *, dimension_numbers, preferred_element_type=None, precision=None):
    if is_undefined(lhs) and is_undefined(rhs):
        raise UnsupportedError(f"dot_general of two linear values is not linear{where()}")
    if isinstance(ct, Zero):
        return [
            Zero(_aval(lhs)) if is_undefined(lhs) else None,
            Zero(_aval(rhs)) if is_undefined(rhs) else None,
        ]
    if is_undefined(lhs):
        return [_dot_transpose_operand(ct, rhs, lhs.aval, dimension_numbers, True, precision), None]
    return [None, _dot_transpose_operand(ct, lhs, rhs.aval, dimension_numbers, False, precision)]


transpose_rules[P.dot_general_p] = _dot_general_t

# Linear primitives (those a jvp rule may apply to a tangent) must have a transpose rule; the
# coverage test checks this set against ``transpose_rules``.
LINEAR_PRIMITIVES = frozenset(transpose_rules)

__all__ = [
    "backward_pass",
    "transpose_rules",
    "UndefinedPrimal",
    "LINEAR_PRIMITIVES",
    "unbroadcast",
]


# --- linear_transpose ----------------------------------------------------------------------------
def linear_transpose(fun, *primals, reduce_axes=()):
    """The transpose of a linear function, as ``jax.linear_transpose``.

    ``fun`` is traced once on the types of ``primals`` (arrays or ``ShapeDtypeStruct``; only shapes
    and dtypes matter) and its Jaxpr is transposed, so that ``transposed(ct)`` computes
    ``A^T ct`` where ``fun(x) = A x``. A function that is not linear in its inputs fails with an
    error naming the non-linear operation.

    Arguments:
      fun: a function linear in all its (pytree) arguments, returning a pytree of arrays.
      *primals: example arguments (or ``ShapeDtypeStruct``) giving their pytree structure, shapes
        and dtypes.
      reduce_axes: accepted for JAX's signature; must be empty (as in JAX 0.10).
    Returns:
      ``transposed(out_cotangent)`` taking a pytree shaped like ``fun``'s output and returning a
      tuple with one cotangent pytree per primal.
    Example:
      >>> import functx, numpy as np
      >>> f = lambda x: 2.0 * x[::-1]
      >>> t = functx.linear_transpose(f, np.zeros(3, np.float32))
      >>> print(t(np.array([1.0, 2.0, 3.0], np.float32))[0])
      [6. 4. 2.]
    """
    if reduce_axes:
        raise FunctxValueError(f"linear_transpose: reduce_axes is not supported{where()}")
    leaves, in_tree = tree_flatten(tuple(primals))
    in_avals = [get_aval(x) for x in leaves]
    for a in in_avals:
        if not np.issubdtype(a.dtype, np.inexact):
            raise FunctxTypeError(
                f"linear_transpose only supports float or complex inputs, got {a.str_short()}"
                f"{where()}"
            )
    box = {}

    def flat(*xs):
        out = fun(*tree_unflatten(in_tree, list(xs)))
        out_leaves, box["tree"] = tree_flatten(out)
        return out_leaves, None

    closed, _ = trace_flat(flat, in_avals)
    out_tree, out_avals = box["tree"], closed.out_avals

    def transposed(out_cotangent):
        ct_leaves, ct_tree = tree_flatten(out_cotangent)
        if ct_tree != out_tree or any(
            tuple(np.shape(c)) != a.shape for c, a in zip(ct_leaves, out_avals)
        ):
            raise FunctxTypeError(
                f"linear_transpose: cotangent must have the structure and shapes of the "
                f"function's output {out_tree} {[a.str_short() for a in out_avals]}, got "
                f"{ct_tree}{where()}"
            )
        cts = [ops.convert_element_type(c, a.dtype) for c, a in zip(ct_leaves, out_avals)]
        args = [UndefinedPrimal(a) for a in in_avals]
        outs = backward_pass(closed.jaxpr, closed.consts, args, cts)
        outs = [_zeros(a) if isinstance(o, Zero) else o for o, a in zip(outs, in_avals)]
        return tuple(tree_unflatten(in_tree, outs))

    return transposed
