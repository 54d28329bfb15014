"""``functx.experimental.ode``: JAX's ``jax.experimental.ode.odeint``, an adaptive Dormand-Prince
(4th/5th order Runge-Kutta) solver with dense output, differentiated by the adjoint method.

The state (any pytree) is flattened to one vector. For each requested time a ``while_loop`` takes
steps until it passes that time: a step whose error estimate (RMS of the error over
``atol + rtol * |y|``) is at most 1 is accepted, and the next step size follows the error
(Hairer, Norsett and Wanner's controller, JAX's constants); the value at the requested time is the
quartic through the last accepted step (Shampine's midpoint formula). A ``scan`` over the
requested times carries the solver state. Reverse mode is a ``custom_vjp`` whose backward pass
integrates the adjoint system backwards between consecutive times (Chen et al. 2018, appendix C),
with the same tolerances, so it gives derivatives in ``y0``, ``t`` and ``*args``.
"""

from __future__ import annotations

import operator

import numpy as np

from functx import lax, numpy as jnp
from functx.control.custom_derivatives import custom_vjp
from functx.custom_derivatives import closure_convert
from functx.errors import FunctxTypeError, missing_name_hook as _missing_name_hook
from functx.flatten_util import ravel_pytree
from functx.transforms.vjp import vjp
from functx.transforms.vmap import vmap
from functx.tree_util import tree_leaves, tree_map

# The Dormand-Prince tableau: stage times, stage weights, the 5th-order solution's weights (the
# FSAL property: the 7th stage is f at the new point) and the error estimate's. JAX (as the first
# torchdiffeq did) takes two thirds of the difference from the embedded 4th-order solution as the
# error; functx does too, so that its steps are JAX's.
_NODES = np.array([1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0, 1.0])
_STAGES = [
    [1 / 5],
    [3 / 40, 9 / 40],
    [44 / 45, -56 / 15, 32 / 9],
    [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729],
    [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656],
    [35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84],
]
_SOLUTION = np.array([35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0.0])
_FOURTH = np.array(
    [5179 / 57600, 0.0, 7571 / 16695, 393 / 640, -92097 / 339200, 187 / 2100, 1 / 40]
)
_ERROR = (2.0 / 3.0) * (_SOLUTION - _FOURTH)
# Shampine's weights for the solution at the step's midpoint (dense output)
_MIDPOINT = 0.5 * np.array(
    [
        6025192743 / 30085553152,
        0.0,
        51252292925 / 65400821598,
        -2691868925 / 45128329728,
        187940372067 / 1594534317056,
        -1776094331 / 19743644256,
        11237099 / 235043384,
    ]
)


def _combine(weights, k):
    """sum_i weights[i] * k[i] over the stages ``k`` (a list), skipping zero weights: pointwise
    arithmetic that fuses with its neighbours under ``jit`` (a matrix product would not)."""
    terms = [float(w) * ki for w, ki in zip(weights, k) if w != 0.0]
    out = terms[0]
    for term in terms[1:]:
        out = out + term
    return out


def _step(f, y, fy, t, h):
    """One Dormand-Prince step of size ``h`` from (t, y), f(y, t) = fy: the new point, f there,
    the error estimate and the stages."""
    hy = h.astype(y.dtype)
    k = [fy]
    for c, row in zip(_NODES, _STAGES):
        k.append(f(y + hy * _combine(row, k), t + h * c))
    return y + hy * _combine(_SOLUTION, k), k[-1], hy * _combine(_ERROR, k), k


def _quartic(y0, y1, k, h):
    """The coefficients (highest power first) of the quartic in s in [0, 1] through y0, the
    midpoint estimate and y1 with the slopes k[0] and k[-1] at the ends."""
    h = h.astype(y0.dtype)
    mid = y0 + h * _combine(_MIDPOINT, k)
    d0, d1 = h * k[0], h * k[-1]
    return jnp.stack(
        [
            -2.0 * d0 + 2.0 * d1 - 8.0 * y0 - 8.0 * y1 + 16.0 * mid,
            5.0 * d0 - 3.0 * d1 + 18.0 * y0 + 14.0 * y1 - 32.0 * mid,
            -4.0 * d0 + d1 - 11.0 * y0 - 5.0 * y1 + 16.0 * mid,
            d0,
            y0,
        ]
    )


def _first_step(f, t0, y0, f0, rtol, atol, order=4):
    """Hairer, Norsett and Wanner's starting step size (Solving ODEs I, II.4)."""
    scale = (atol + jnp.abs(y0) * rtol).astype(y0.dtype)
    d0, d1 = jnp.linalg.norm(y0 / scale), jnp.linalg.norm(f0 / scale)
    h0 = jnp.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
    f1 = f(y0 + h0.astype(y0.dtype) * f0, t0 + h0)
    d2 = jnp.linalg.norm((f1 - f0) / scale) / h0
    h1 = jnp.where(
        (d1 <= 1e-15) & (d2 <= 1e-15),
        jnp.maximum(1e-6, h0 * 1e-3),
        (0.01 / jnp.maximum(d1, d2)) ** (1.0 / (order + 1.0)),
    )
    return jnp.minimum(100.0 * h0, h1)


def _error_ratio(err, rtol, atol, y0, y1):
    tol = atol + rtol * jnp.maximum(jnp.abs(y0), jnp.abs(y1))
    ratio = err / tol.astype(err.dtype)
    return jnp.sqrt(jnp.mean(jnp.real(ratio * jnp.conj(ratio))))


def _next_step(h, ratio, safety=0.9, grow=10.0, shrink=0.2, order=5.0):
    """The step after one of size ``h`` with error ratio ``ratio``: at most ``grow`` times
    larger, and after a rejected step (ratio > 1) at least ``shrink`` times as large."""
    floor = jnp.where(ratio < 1, 1.0, shrink)
    factor = jnp.minimum(grow, jnp.maximum(ratio ** (-1.0 / order) * safety, floor))
    return jnp.where(ratio == 0, h * grow, h * factor)


def _solve(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    """The flat solution at each of ``ts`` (rows), ``func(y, t, *args)`` on flat ``y``."""

    def f(y, t):
        return func(y, t, *args)

    def to_time(carry, target):
        def going(s):
            n, _, _, t, h, _, _ = s
            return (t < target) & (n < mxstep) & (h > 0)

        def advance(s):
            n, y, fy, t, h, t_prev, coeffs = s
            y1, f1, err, k = _step(f, y, fy, t, h)
            ratio = _error_ratio(err, rtol, atol, y, y1)
            h1 = jnp.clip(_next_step(h, ratio), min=0.0, max=hmax)
            ok = ratio <= 1.0
            moved = (y1, f1, t + h, h1, t, _quartic(y, y1, k, h))
            stayed = (y, fy, t, h1, t_prev, coeffs)
            return (n + 1, *(jnp.where(ok, a, b) for a, b in zip(moved, stayed)))

        _, *carry = lax.while_loop(going, advance, (0, *carry))
        _, _, t, _, t_prev, coeffs = carry
        s = (target - t_prev) / (t - t_prev)
        return tuple(carry), jnp.polyval(coeffs, s.astype(coeffs.dtype))

    f0 = f(y0, ts[0])
    h = jnp.clip(_first_step(f, ts[0], y0, f0, rtol, atol), min=0.0, max=hmax)
    start = (y0, f0, ts[0], h, ts[0], jnp.stack([y0] * 5))
    _, ys = lax.scan(to_time, start, ts[1:])
    return jnp.concatenate([y0[None], ys])


_solve = custom_vjp(_solve, nondiff_argnums=(0, 1, 2, 3, 4))


def _solve_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
    ys = _solve(func, rtol, atol, mxstep, hmax, y0, ts, *args)
    return ys, (ys, ts, args)


def _solve_bwd(func, rtol, atol, mxstep, hmax, res, g):
    """The adjoint pass: between consecutive times, integrate backwards (in -t) the state, its
    adjoint a = dL/dy, the time adjoint and the parameters' adjoint; the cotangent of each
    requested output joins a at its time, and dL/dt_i = f(y_i, t_i) . g_i."""
    ys, ts, args = res

    def augmented(state, minus_t, *args):
        y, a, *_ = state
        dy, pull = vjp(func, y, -minus_t, *args)
        return (-dy, *pull(a))

    def back(carry, i):
        a, t0_bar, args_bar = carry
        t_bar = jnp.real(jnp.dot(func(ys[i], ts[i], *args), g[i]))
        t0_bar = t0_bar - t_bar
        _, a, t0_bar, args_bar = odeint(
            augmented,
            (ys[i], a, t0_bar, args_bar),
            jnp.stack([-ts[i], -ts[i - 1]]),
            *args,
            rtol=rtol,
            atol=atol,
            mxstep=mxstep,
            hmax=hmax,
        )
        a, t0_bar, args_bar = tree_map(operator.itemgetter(1), (a, t0_bar, args_bar))
        return (a + g[i - 1], t0_bar, args_bar), t_bar

    start = (g[-1], jnp.zeros((), ts.dtype), tree_map(jnp.zeros_like, args))
    (a, t0_bar, args_bar), t_bars = lax.scan(back, start, jnp.arange(len(ts) - 1, 0, -1))
    return (a, jnp.concatenate([t0_bar[None], t_bars[::-1]]), *args_bar)


_solve.defvjp(_solve_fwd, _solve_bwd)


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=np.inf, hmax=np.inf):
    """Solves dy/dt = func(y, t, *args) from y(t[0]) = y0 with an adaptive Dormand-Prince
    method, as ``jax.experimental.ode.odeint``.

    Differentiable in reverse mode (the adjoint method: ``grad`` integrates an augmented system
    backwards, with the same tolerances) with respect to ``y0``, ``t`` and ``*args``; values
    that ``func`` closes over are differentiated too (they are converted to arguments). Runs
    under ``jit`` and ``vmap``. Forward mode (``jvp``) is not defined, as in JAX.

    Arguments:
      func: the derivative, ``func(y, t, *args)`` -> a pytree of ``y0``'s structure.
      y0: the initial state, an array or a pytree of arrays.
      t: the times (a 1-D float array, strictly increasing, ``t[0]`` the initial time).
      *args: further arguments to ``func``: arrays, scalars or pytrees of them.
      rtol, atol: the relative and absolute local error tolerances (default 1.4e-8 each).
      mxstep: the most steps, accepted or rejected, between two requested times (default
        unlimited); when they run out, the solution there is extrapolated from the last step.
      hmax: the largest step (default unlimited).

    Returns:
      the solution at each time in ``t``: ``y0``'s structure, each leaf with a leading axis of
      ``len(t)``.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.ode import odeint
      >>> ys = odeint(lambda y, t, k: -k * y, jnp.array([1.0, 2.0]), jnp.array([0.0, 1.0]), 0.5)
      >>> print(ys.round(4))
      [[1.     2.    ]
       [0.6065 1.2131]]
    """
    for leaf in tree_leaves(args):
        if not (hasattr(leaf, "dtype") or isinstance(leaf, (bool, int, float, complex))):
            raise FunctxTypeError(
                f"The contents of odeint *args must be arrays or scalars, but got {leaf}."
            )
    t = jnp.asarray(t)
    if not jnp.issubdtype(t.dtype, jnp.floating):
        raise FunctxTypeError(f"t must be an array of floats, but got {t}.")
    converted, consts = closure_convert(func, y0, t[0], *args)
    flat0, unravel = ravel_pytree(y0)

    def flat_func(y, t, *args):
        return ravel_pytree(converted(unravel(y), t, *args))[0]

    ys = _solve(flat_func, rtol, atol, mxstep, hmax, flat0, t, *args, *consts)
    return vmap(unravel)(ys)


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["odeint"]
