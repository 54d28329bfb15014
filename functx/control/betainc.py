"""``lax.betainc``: the regularized incomplete beta function ``I_x(a, b)``.

A composite, as JAX lowers it: the continued fraction of I_x(a, b) (or of 1 - I_{1-x}(b, a) where
that one converges faster) evaluated by the modified Lentz method in a ``while_loop`` that stops
when every element has converged (or after 200 terms), so every backend that runs loops runs it.
Its derivative is JAX's rule, a ``custom_jvp``: in ``x`` the beta density; in ``a`` or ``b`` JAX
raises ValueError, and so does functx (only where those operands really carry a tangent: the
rule sees symbolic zeros).
"""

from __future__ import annotations

import numpy as np

from functx import dtypes, ops
from functx.array import is_python_scalar
from functx.control.custom_derivatives import custom_jvp
from functx.control.while_loop import while_loop
from functx.errors import FunctxTypeError
from functx.tracing import get_aval
from functx.transforms.jvp import Zero

_STEPS = 100  # pairs of continued-fraction terms (JAX runs up to 200 terms)
_TINY = 1e-30  # Lentz's guard against a zero denominator


def _c(v, like):
    return ops.full_like(like, v)


def _lbeta(a, b):
    return ops.sub(ops.add(ops.lgamma(a), ops.lgamma(b)), ops.lgamma(ops.add(a, b)))


def _guard(v):
    return ops.select(ops.lt(ops.abs(v), _TINY), _c(_TINY, v), v)


def _impl(a, b, x):
    dt = get_aval(x).dtype
    one = _c(1.0, x)
    rapid = ops.lt(x, ops.div(ops.add(a, 1.0), ops.add(ops.add(a, b), 2.0)))
    a2, b2 = ops.select(rapid, a, b), ops.select(rapid, b, a)
    x2 = ops.select(rapid, x, ops.sub(one, x))
    log_front = ops.sub(
        ops.add(ops.mul(a2, ops.log(x2)), ops.mul(b2, ops.log1p(ops.neg(x2)))), _lbeta(a2, b2)
    )
    front = ops.div(ops.exp(log_front), a2)
    ab = ops.add(a2, b2)

    eps = float(np.finfo(dt).eps)
    rank = len(get_aval(x).shape)

    def step(c, d, h, num):
        d = ops.div(one, _guard(ops.add(one, ops.mul(num, d))))
        c = _guard(ops.add(one, ops.div(num, c)))
        return c, d, ops.mul(h, ops.mul(c, d))

    def body(state):
        m, c, d, h, _ = state
        mm = ops.broadcast_in_dim(ops.convert_element_type(m, dt), get_aval(x).shape, ())
        two_m = ops.add(a2, ops.mul(mm, 2.0))  # a + 2m
        odd = ops.neg(
            ops.div(
                ops.mul(ops.mul(ops.add(a2, mm), ops.add(ab, mm)), x2),
                ops.mul(two_m, ops.add(two_m, 1.0)),
            )
        )
        c, d, h = step(c, d, h, odd)
        m1 = ops.add(mm, 1.0)
        even = ops.div(
            ops.mul(ops.mul(m1, ops.sub(b2, m1)), x2),
            ops.mul(ops.add(two_m, 1.0), ops.add(two_m, 2.0)),
        )
        c, d, h = step(c, d, h, even)
        done = ops.le(ops.abs(ops.sub(ops.mul(c, d), 1.0)), eps)
        return ops.add(m, 1), c, d, h, ops.reduce_and(done, tuple(range(rank)))

    def cond(state):
        return ops.bitwise_and(ops.lt(state[0], _STEPS), ops.bitwise_not(state[4]))

    init = (np.int32(0), one, _c(0.0, x), one, np.bool_(False))
    _, _, _, h, _ = while_loop(cond, body, init)
    r = ops.div(front, h)
    r = ops.select(rapid, r, ops.sub(one, r))
    bad = ops.bitwise_or(
        ops.bitwise_or(ops.le(a, 0.0), ops.le(b, 0.0)),
        ops.bitwise_or(ops.lt(x, 0.0), ops.gt(x, 1.0)),
    )
    bad = ops.bitwise_or(bad, ops.ne(ops.add(ops.add(a, b), x), ops.add(ops.add(a, b), x)))
    return ops.select(bad, _c(np.nan, x), r)


@custom_jvp
def _betainc(a, b, x):
    return _impl(a, b, x)


def _betainc_jvp(primals, tangents):
    a, b, x = primals
    ta, tb, tx = tangents
    if not isinstance(ta, Zero) or not isinstance(tb, Zero):
        raise ValueError("Betainc gradient with respect to a and b not supported.")
    out = _betainc(a, b, x)
    if isinstance(tx, Zero):
        return out, Zero(tx.aval)
    dens = ops.exp(
        ops.sub(
            ops.add(
                ops.mul(ops.sub(b, 1.0), ops.log1p(ops.neg(x))),
                ops.mul(ops.sub(a, 1.0), ops.log(x)),
            ),
            _lbeta(a, b),
        )
    )
    return out, ops.mul(dens, tx)


_betainc.defjvp(_betainc_jvp, symbolic_zeros=True)


def betainc(a, b, x):
    """The regularized incomplete beta function ``I_x(a, b)`` (JAX's ``jax.lax.betainc``).

    Arguments:
      a, b: the (positive) shape parameters.
      x: the upper limit of the integral, in ``[0, 1]``. The three share one float dtype and one
        shape (a rank-0 operand broadcasts); NaN outside the domain.
    Returns:
      An array of that shape and dtype.

    Example:
      >>> import numpy as np
      >>> from functx import lax
      >>> print(lax.betainc(np.float32(2.0), np.float32(3.0), np.float32([0.2, 0.5])))
      [0.1808 0.6875]
    """
    arrays = [v for v in (a, b, x) if not is_python_scalar(v)]
    dt = get_aval(arrays[0]).dtype if arrays else dtypes.default_float()
    args = [np.asarray(v, dt) if is_python_scalar(v) else v for v in (a, b, x)]
    avals = [get_aval(v) for v in args]
    if len({v.dtype for v in avals}) != 1:
        got = ", ".join(str(v.dtype) for v in avals)
        raise FunctxTypeError(f"lax.betainc requires arguments to have the same dtypes, got {got}")
    if dt not in dtypes.FLOATS:
        raise FunctxTypeError(
            f"betainc does not accept dtype {dt}: it needs a floating-point dtype"
        )
    shape = max((v.shape for v in avals), key=len)
    for v in avals:
        if v.shape not in ((), shape):
            raise FunctxTypeError(f"betainc got incompatible shapes {[w.shape for w in avals]}")
    args = [
        v if w.shape == shape else ops.broadcast_in_dim(v, shape, ()) for v, w in zip(args, avals)
    ]
    low = dt in (dtypes.float16, dtypes.bfloat16)
    if low:
        args = [ops.convert_element_type(v, dtypes.float32) for v in args]
    out = _betainc(*args)
    return ops.convert_element_type(out, dt) if low else out
