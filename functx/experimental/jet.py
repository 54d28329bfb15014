"""``functx.experimental.jet``: Taylor-mode automatic differentiation (JAX's
``jax.experimental.jet``).

``jet(f, (x0,), ((x1, ..., xK),))`` pushes a truncated Taylor polynomial through ``f``: the input
curve is ``x(t) = x0 + x1 t + x2 t^2/2! + ... + xK t^K/K!`` (each series term is a derivative of
the curve at ``t = 0``, not a Taylor coefficient), and the result is ``f(x0)`` and the derivatives
``d^k/dt^k f(x(t))`` at ``t = 0`` for ``k = 1..K``.

How: the function is traced to a Jaxpr, and ``jet_eval`` walks its equations carrying, for every
value, its normalised Taylor coefficients ``c_1..c_K`` (``x(t) = c_0 + sum c_k t^k``; the public
function divides by ``k!`` on the way in and multiplies on the way out). Each primitive has a
propagation rule (``taylor_rules``):

- linear primitives (add, reshape, reduce_sum, gather, ...) apply their own jvp rule to each
  coefficient;
- products (mul, dot_general) are Cauchy products; div, exp, expm1, log, log1p, sqrt, sin/cos,
  sinh/cosh, tanh, logistic and integer_pow use the recurrences of the equations they satisfy
  (``y' = y x'`` for exp, ``y^2 = x`` for sqrt, ...): O(K^2) operations, as in JAX;
- a custom_vjp function is expanded (forward mode cannot use its rule);
- every other primitive with a jvp rule (control flow, reduce_max, erf, custom_jvp, ...) takes the
  composite rule: the coefficients of ``prim(x(t))`` are the derivatives in ``t`` at 0, by ``K``
  nested ``jvp`` in a scalar ``t`` (exact, at a cost that grows as ``2^K``).

The result is a Jaxpr like any other, cached per function, input types and order, so ``jit``,
``vmap`` and ``grad`` of ``jet`` work.
"""

from __future__ import annotations

import math
import weakref

from functx import dtypes, ops, primitives as P
from functx.control.custom_derivatives import custom_vjp_call_p
from functx.core import Literal, ShapedArray
from functx.errors import (
    FunctxArgumentError,
    FunctxTypeError,
    FunctxValueError,
    missing_name_hook as _missing_name_hook,
)
from functx.interpreter import eval_jaxpr
from functx.primitives import elementwise as E
from functx.source_info import source_info, where
from functx.tracing import get_aval, trace_flat, tree_flatten, tree_unflatten
from functx.transforms import passes
from functx.transforms.jvp import (
    LINEAR_STRUCTURAL,
    Zero,
    arg_avals,
    as_arrays,
    check_callable,
    fun_name,
    is_differentiable,
    jvp,
    jvp_rules,
    nondifferentiable,
    tangent_aval,
    trace_user_fun,
)

# A series is None (all coefficients zero) or a list of K arrays c_1..c_K; inside a rule a single
# coefficient may be None (zero) too.


# --- coefficient arithmetic ----------------------------------------------------------------------
def _add(a, b):
    if a is None:
        return b
    return a if b is None else ops.add(a, b)


def _scaled(x, c):
    return None if x is None else (x if c == 1 else ops.mul(x, float(c)))


def _cauchy(a, b, k, mul, lo=0, hi=None):
    """``sum_{j=lo}^{hi} mul(a[j], b[k-j])`` over the nonzero pairs (None when there are none)."""
    out = None
    for j in range(lo, k + 1 if hi is None else hi + 1):
        if a[j] is not None and b[k - j] is not None:
            out = _add(out, mul(a[j], b[k - j]))
    return out


def _t_deriv(x):
    """The coefficients of ``t x'(t)``: ``j x_j`` (the recurrences below are its products)."""
    return [None] + [_scaled(c, j) for j, c in enumerate(x[1:], 1)]


def _weighted(tdx, y, k, hi=None):
    """``(1/k) sum_{j=1}^{hi} j x_j y_{k-j}`` (``hi`` = k by default), from ``tdx = _t_deriv(x)``:
    the k-th coefficient of ``y`` where ``t y' = y t x'`` (the exp family)."""
    return _scaled(_cauchy(tdx, y, k, ops.mul, lo=1, hi=hi), 1.0 / k)


def _less(a, s):
    """``a - s`` with None for a zero ``a`` or ``s``."""
    return a if s is None else (ops.neg(s) if a is None else ops.sub(a, s))


def _less_over(a, s, b):
    """``(a - s) / b`` with None for a zero ``a`` or ``s``."""
    num = _less(a, s)
    return None if num is None else ops.div(num, b)


# --- the rules (coefficients c_0..c_K as lists; c_0 the primal) ----------------------------------
taylor_rules: dict = {}


def _linear_rule(prim):
    """A linear primitive: its jvp rule maps each coefficient (integer operands stay primal)."""
    rule = jvp_rules[prim]

    def linear(xs, order, **params):
        primals = [x[0] for x in xs]
        out = prim.bind(*primals, **params)
        outs = out if prim.multiple_results else [out]
        terms = []
        for k in range(1, order + 1):
            ts = [
                Zero(tangent_aval(get_aval(p))) if x[k] is None else x[k]
                for p, x in zip(primals, xs)
            ]
            _, t = rule(primals, ts, **params)
            terms.append(t if prim.multiple_results else [t])
        return [
            [o] + [None if isinstance(ts[i], Zero) else ts[i] for ts in terms]
            for i, o in enumerate(outs)
        ]

    return linear


def _bilinear_rule(prim):
    """mul, dot_general: the Cauchy product of the two series."""

    def bilinear(xs, order, **params):
        a, b = xs

        def mul(u, v):
            return prim.bind(u, v, **params)

        return [[_cauchy(a, b, k, mul) for k in range(order + 1)]]

    return bilinear


def _div_rule(xs, order):
    """q = a / b, from a = q b: ``q_k = (a_k - sum_{j=1}^k b_j q_{k-j}) / b_0``."""
    a, b = xs
    q = [ops.div(a[0], b[0])]
    for k in range(1, order + 1):
        q.append(_less_over(a[k], _cauchy(b, q, k, ops.mul, lo=1), b[0]))
    return [q]


def _ode_rule(y0, z):
    """y = f(x) where ``y' = z x'`` and ``z``'s k-th coefficient ``z(y, k)`` depends on
    ``y_0..y_k`` only: ``y_k = (1/k) sum_{j=1}^k j x_j z_{k-j}``."""

    def rule(xs, order):
        (x,) = xs
        tdx, y = _t_deriv(x), [y0(x[0])]
        zs = [z(y, 0)]
        for k in range(1, order + 1):
            y.append(_weighted(tdx, zs, k))
            zs.append(z(y, k))
        return [y]

    return rule


def _one_less_square(y, k):  # 1 - y^2 (tanh)
    return _less(1.0 if k == 0 else None, _cauchy(y, y, k, ops.mul))


def _log_rule(shift):
    """y = log(u), u = x (log) or 1 + x (log1p), from ``u y' = x'``:
    ``y_k = (x_k - (1/k) sum_{j<k} j y_j u_{k-j}) / u_0``."""

    def rule(xs, order):
        (x,) = xs
        u = [ops.add(x[0], 1.0) if shift else x[0]] + x[1:]
        y, tdy = [(ops.log1p if shift else ops.log)(x[0])], [None]
        for k in range(1, order + 1):
            y.append(_less_over(x[k], _weighted(tdy, u, k, hi=k - 1), u[0]))
            tdy.append(_scaled(y[k], k))
        return [y]

    return rule


def _sqrt_rule(xs, order):
    """y = sqrt x, from y^2 = x: ``y_k = (x_k - sum_{0<j<k} y_j y_{k-j}) / (2 y_0)``."""
    (x,) = xs
    y = [ops.sqrt(x[0])]
    for k in range(1, order + 1):
        y.append(_less_over(x[k], _cauchy(y, y, k, ops.mul, lo=1, hi=k - 1), ops.mul(y[0], 2.0)))
    return [y]


def _pair_rule(f, g, sign, which):
    """sin/cos (sign -1) and sinh/cosh (sign +1) together: ``f' = g x'``, ``g' = sign f x'``."""

    def rule(xs, order):
        (x,) = xs
        tdx, fs, gs = _t_deriv(x), [f(x[0])], [g(x[0])]
        for k in range(1, order + 1):
            fs.append(_weighted(tdx, gs, k))
            gk = _weighted(tdx, fs, k)
            gs.append(gk if sign > 0 or gk is None else ops.neg(gk))
        return [(fs, gs)[which]]

    return rule


def _series_mul(a, b, order):
    return [_cauchy(a, b, k, ops.mul) for k in range(order + 1)]


def _integer_pow_rule(xs, order, *, y):
    """x**n for n >= 1 by repeated squaring of the series (exact at x0 = 0, unlike the ODE
    recurrence); other exponents take the composite rule."""
    if y < 1:
        return _composite_rule(P.integer_pow_p)(xs, order, y=y)
    (x,) = xs
    result, base, n = None, x, y
    while n:
        if n & 1:
            result = base if result is None else _series_mul(result, base, order)
        n >>= 1
        if n:
            base = _series_mul(base, base, order)
    return [result]


def _composite_rule(prim):
    """Any primitive with a jvp rule: the coefficients of ``prim(x(t))`` are its derivatives in a
    scalar ``t`` at 0 (K nested jvps) over ``k!``."""

    def composite(xs, order, **params):
        def fn(*args):
            out = prim.bind(*args, **params)
            return list(out) if prim.multiple_results else [out]

        return taylor_composite(fn, xs, order)

    return composite


def taylor_composite(fn, xs, order):
    """The Taylor coefficients (``[c_0..c_K]`` per output; c_0 the value) of ``fn(*x(t))`` where
    ``x_i(t) = sum_k xs[i][k] t^k``: derivatives in ``t`` by ``order`` nested jvps."""
    moving = [i for i, x in enumerate(xs) if any(c is not None for c in x[1:])]
    t_dtype, _ = dtypes.result_type(*[(get_aval(xs[i][0]).dtype, False) for i in moving])
    t0, one = ops.full((), 0, t_dtype), ops.full((), 1, t_dtype)

    def curve(t):
        args = [x[0] for x in xs]
        for i in moving:
            dt = get_aval(xs[i][0]).dtype
            ti = ops.convert_element_type(t, dt)
            acc = None
            for c in reversed(xs[i][1:]):  # Horner: c_1 t + c_2 t^2 + ... = t (c_1 + t (c_2 + ...))
                acc = _add(c, None if acc is None else ops.mul(ti, acc))
            args[i] = ops.add(args[i], ops.mul(ti, acc))
        return [fn(*args)]

    def up(g):  # [d^0, .., d^k] -> [d^0, .., d^k, d^(k+1)]
        def h(t):
            vals, tans = jvp(g, (t,), (one,))
            return vals + [tans[-1]]

        return h

    g = curve
    for _ in range(order):
        g = up(g)
    ds = g(t0)
    outs = []
    for i, v in enumerate(ds[0]):
        if not is_differentiable(get_aval(v)):
            outs.append([v] + [None] * order)
        else:
            outs.append(
                [v] + [_scaled(ds[k][i], 1.0 / math.factorial(k)) for k in range(1, order + 1)]
            )
    return outs


def _custom_vjp_rule(xs, order, *, call_jaxpr, **_):
    """A custom_vjp function (forward mode cannot use its rule): its primal function, as JAX's jet
    means to do."""
    outs, series = jet_eval(
        call_jaxpr.jaxpr, call_jaxpr.consts, [x[0] for x in xs], [x[1:] for x in xs], order
    )
    return [[o] + (s or [None] * order) for o, s in zip(outs, series)]


# Linear primitives: the elementwise rows whose derivative is linear, and the structural ones.
_LINEAR = [P.registry[r.name] for r in E.ROWS if isinstance(r.jvp, E.Linear) or r.jvp == E.APPLY]
_LINEAR += [
    *LINEAR_STRUCTURAL,
    P.concatenate_p,
    P.pad_p,
    P.select_n_p,
    P.convert_element_type_p,
    P.dynamic_slice_p,
    P.dynamic_update_slice_p,
    P.gather_p,
]
for _p in _LINEAR:
    taylor_rules[_p] = _linear_rule(_p)
for _p in (P.mul_p, P.dot_general_p):
    taylor_rules[_p] = _bilinear_rule(_p)
taylor_rules[P.div_p] = _div_rule
# y' = z x', by z's coefficients
taylor_rules[P.exp_p] = _ode_rule(ops.exp, lambda y, k: y[k])
taylor_rules[P.expm1_p] = _ode_rule(ops.expm1, lambda y, k: ops.add(y[0], 1.0) if k == 0 else y[k])
taylor_rules[P.tanh_p] = _ode_rule(ops.tanh, _one_less_square)
taylor_rules[P.logistic_p] = _ode_rule(
    ops.logistic, lambda y, k: _less(y[k], _cauchy(y, y, k, ops.mul))
)
taylor_rules[P.log_p] = _log_rule(shift=False)
taylor_rules[P.log1p_p] = _log_rule(shift=True)
taylor_rules[P.sqrt_p] = _sqrt_rule
for _i, _p in enumerate((P.sin_p, P.cos_p)):
    taylor_rules[_p] = _pair_rule(ops.sin, ops.cos, -1, _i)
for _i, _p in enumerate((P.sinh_p, P.cosh_p)):
    taylor_rules[_p] = _pair_rule(ops.sinh, ops.cosh, 1, _i)
taylor_rules[P.integer_pow_p] = _integer_pow_rule
taylor_rules[custom_vjp_call_p] = _custom_vjp_rule


# --- the interpreter -----------------------------------------------------------------------------
def _fit(c, aval):
    """A coefficient with its value's shape and dtype (a rank-0 operand's terms are broadcast)."""
    a = get_aval(c)
    if a.dtype != aval.dtype:
        c = ops.convert_element_type(c, aval.dtype)
    if a.shape != aval.shape:
        c = ops.broadcast_in_dim(c, aval.shape, ())
    return c


def jet_eval(jaxpr, consts, primals, series, order, composite_only=False):
    """Evaluate ``jaxpr`` on primals and their series (None or K normalised coefficients each),
    emitting the equations through bind. Returns (outputs, output series)."""
    penv = {v.id: c for v, c in zip(jaxpr.constvars, consts)}
    senv = {}
    for v, x, s in zip(jaxpr.invars, primals, series):
        penv[v.id] = x
        if s is not None:
            senv[v.id] = s

    def read(a):
        if type(a) is Literal:
            return [a.val] + [None] * order
        return [penv[a.id]] + (senv.get(a.id) or [None] * order)

    for eqn in jaxpr.eqns:
        xs = [read(a) for a in eqn.invars]
        # An integer or boolean value carries its series only into a conversion to floating point
        # (``x * 2.0`` of an integer x); anywhere else it is piecewise constant.
        if eqn.prim is not P.convert_element_type_p:
            xs = [x if is_differentiable(get_aval(x[0])) else x[:1] + [None] * order for x in xs]
        with source_info(eqn.source_info):
            if eqn.prim in nondifferentiable or all(c is None for x in xs for c in x[1:]):
                out = eqn.prim.bind(*[x[0] for x in xs], **eqn.params)
                outs = [[o] + [None] * order for o in (out if eqn.prim.multiple_results else [out])]
            else:
                rule = None if composite_only else taylor_rules.get(eqn.prim)
                if rule is None:
                    rule = _composite_rule(eqn.prim)
                outs = rule(xs, order, **eqn.params)
        for v, cs in zip(eqn.outvars, outs):
            penv[v.id] = cs[0]
            if is_differentiable(v.aval) and any(c is not None for c in cs[1:]):
                senv[v.id] = [
                    ops.full(v.aval.shape, 0, v.aval.dtype) if c is None else _fit(c, v.aval)
                    for c in cs[1:]
                ]
    outs = [read(a) for a in jaxpr.outvars]
    return [o[0] for o in outs], [None if all(c is None for c in o[1:]) else o[1:] for o in outs]


_jet_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def jet_jaxpr(closed, order: int, factorial_scaled: bool, composite_only=False):
    """The Jaxpr of ``(primals, the series of each primal) -> (outputs, the series of each
    output)``, each series ``order`` flat arrays (derivatives when ``factorial_scaled``, else
    Taylor coefficients); cached per ``closed``."""
    per = _jet_cache.setdefault(closed, {})
    key = (order, factorial_scaled, composite_only)
    if key in per:
        return per[key]
    in_avals = closed.in_avals
    s_avals = [ShapedArray(a.shape, _series_dtype(a)) for a in in_avals]

    def fun(*args):
        primals, rest = list(args[: len(in_avals)]), iter(args[len(in_avals) :])
        series = [
            _rescale([next(rest) for _ in range(order)], factorial_scaled, divide=True)
            for _ in in_avals
        ]
        outs, out_series = jet_eval(
            closed.jaxpr, closed.consts, primals, series, order, composite_only
        )
        flat = [
            _out_term(c, get_aval(o))
            for o, s in zip(outs, out_series)
            for c in (_rescale(s, factorial_scaled, divide=False) or [None] * order)
        ]
        return outs + flat, None

    j, _ = trace_flat(fun, list(in_avals) + [a for a in s_avals for _ in range(order)])
    per[key] = passes.simplify(j)
    return per[key]


def _out_term(c, aval):
    """An output term: zeros for a zero term, weakly typed where its primal is (as JAX's)."""
    if c is None:
        c = ops.full(aval.shape, 0, aval.dtype)
    if aval.weak_type and not get_aval(c).weak_type:
        return ops.convert_element_type(c, aval.dtype, weak_type=True)
    return c


def _series_dtype(aval):
    """Series terms have the primal's dtype; an integer or boolean primal's series is floating
    (JAX divides them by k!, which makes them floats)."""
    return aval.dtype if is_differentiable(aval) else dtypes.default_float()


def _rescale(s, factorial_scaled, divide):
    if s is None or not factorial_scaled:
        return s
    return [
        _scaled(c, (1.0 / math.factorial(k)) if divide else math.factorial(k))
        for k, c in enumerate(s, 1)
    ]


# --- the public function -------------------------------------------------------------------------
def _check_inputs(fname, primals, series):
    """JAX's checks, as functx errors: returns (order, series as lists of terms)."""
    if not isinstance(primals, (tuple, list)) or not isinstance(series, (tuple, list)):
        raise FunctxTypeError(
            f"jet of {fname}: primals and series must be tuples or lists (one entry per "
            f"positional argument of the function); got {type(primals).__name__} and "
            f"{type(series).__name__}{where()}"
        )
    if len(primals) != len(series):
        raise FunctxTypeError(
            f"jet of {fname}: got {len(primals)} primals but {len(series)} series; give one "
            f"series (a tuple of terms) per primal{where()}"
        )
    terms = []
    for i, s in enumerate(series):
        if not hasattr(s, "__len__") or isinstance(s, (str, bytes)):
            raise FunctxTypeError(
                f"jet of {fname}: the series of argument {i} must be a tuple or list of terms "
                f"(x1, ..., xK), got {type(s).__name__}{where()}"
            )
        terms.append(list(s))
    orders = {len(t) for t in terms}
    if len(orders) != 1:
        raise FunctxValueError(
            f"jet of {fname}: jet terms have inconsistent lengths for different arguments "
            f"(lengths {[len(t) for t in terms]}){where()}"
        )
    for i, (x, ts) in enumerate(zip(primals, terms)):
        if len(tree_flatten(x)[0]) != 1 or tree_flatten(x)[0][0] is not x:
            raise FunctxValueError(
                f"jet of {fname}: primal value at position {i} is not an array (jet takes one "
                f"array per argument, not a pytree){where()}"
            )
        for j, t in enumerate(ts):
            if len(tree_flatten(t)[0]) != 1 or tree_flatten(t)[0][0] is not t:
                raise FunctxValueError(
                    f"jet of {fname}: term {j} for argument {i} is not an array{where()}"
                )
    return orders.pop(), terms


def jet(fun, primals, series, factorial_scaled=True, **_):
    """Taylor-mode automatic differentiation: pushes a truncated Taylor series through ``fun``.

    With the input curve ``x(t) = x0 + x1 t + x2 t^2/2! + ... + xK t^K/K!`` per argument (the
    terms ``xk`` are the curve's derivatives at ``t = 0``), the result is ``fun(x0)`` and the
    derivatives ``d^k/dt^k fun(x(t))`` at ``t = 0``, ``k = 1..K``: with ``series = ((v, 0, ..,
    0),)`` these are the directional derivatives of order 1..K along ``v``.

    Arguments:
      fun: the function; its arguments are arrays (or scalars), its result a pytree of them.
      primals: a tuple or list with one array per positional argument of ``fun``.
      series: a tuple or list with one sequence of K terms per argument, each term of its
        primal's shape (all of the same length K, the order).
      factorial_scaled: True (the default): the terms in and out are derivatives, as above;
        False: they are Taylor coefficients (``x(t) = x0 + x1 t + x2 t^2 + ...``).
      **_: ignored (as in JAX).

    Returns:
      ``(primals_out, series_out)``: ``fun(*primals)``, and for each output leaf the list of its
      K terms, in ``fun``'s output structure.

    Differences from JAX: primitives without a series rule of their own (``erf``, ``atan2``,
    ``reduce_max``, ..., and control flow such as ``cond``, ``scan`` and ``while_loop``, on which
    JAX's jet raises) take an exact composite rule (nested ``jvp``, whose cost grows as 2^K);
    ``custom_jvp`` rules are used and ``custom_vjp`` functions are expanded (JAX raises on both).
    Series terms are cast to their primal's dtype, and an output's series is weakly typed where the
    output is. An integer or boolean primal's series reaches the result only through conversions to
    floating point (as in JAX's ``x * 2.0``); elsewhere integers are constants (JAX raises on most
    such uses). A constant output is an Array (JAX returns it as it is). Each term must have its
    primal's shape, and ``primals`` and ``series`` must be tuples or lists: JAX does not check
    them, so it broadcasts a scalar term through elementwise functions (and fails in reductions
    and products) and unpacks an array given as ``primals``.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.jet import jet
      >>> y0, (y1, y2, y3) = jet(jnp.exp, (0.0,), ((1.0, 0.0, 0.0),))
      >>> print(y0, y1, y2, y3)
      1.0 1.0 1.0 1.0
      >>> y0, (y1, y2) = jet(lambda x: x ** 3, (2.0,), ((1.0, 0.0),))
      >>> print(y0, y1, y2)
      8.0 12.0 12.0
    """
    return _jet(fun, primals, series, factorial_scaled)


def _jet(fun, primals, series, factorial_scaled=True, composite_only=False):
    """``jet``; with ``composite_only`` every primitive takes the composite rule (the tests
    compare the two)."""
    check_callable("jet", fun)
    fname = fun_name(fun)
    order, terms = _check_inputs(fname, primals, series)
    leaves = list(primals)
    in_avals = arg_avals(f"jet of {fname}", leaves, tuple(primals))
    checked = []
    for i, (a, ts) in enumerate(zip(in_avals, terms)):
        for j, t in enumerate(ts):
            try:
                ta = get_aval(t)
            except (TypeError, ValueError, AttributeError):
                raise FunctxTypeError(
                    f"jet of {fname}: term {j} for argument {i}, {str(t):.60} of type "
                    f"{type(t).__name__}, is not an array{where()}"
                ) from None
            if ta.shape != a.shape:
                raise FunctxArgumentError(
                    f"jet of {fname}: term {j} for argument {i} has shape {ta.shape}, but its "
                    f"primal has shape {a.shape}; each term must have its primal's shape{where()}"
                )
            checked.append(ops.convert_element_type(t, _series_dtype(a)))
    traced, _ = trace_user_fun(fun, tuple(primals))
    j = jet_jaxpr(traced.closed, order, bool(factorial_scaled), composite_only)
    res = as_arrays(eval_jaxpr(j.jaxpr, j.consts, *leaves, *checked))
    n = traced.n_out
    outs, flat = res[:n], res[n:]
    out_series = [flat[i * order : (i + 1) * order] for i in range(n)]
    return tree_unflatten(traced.out_tree, outs), tree_unflatten(traced.out_tree, out_series)


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["jet"]
