"""``functx.scipy.optimize``: JAX's ``jax.scipy.optimize``: ``minimize`` (BFGS and JAX's
experimental L-BFGS) and ``OptimizeResults``.

The whole solver is a ``functx.lax.while_loop`` over BFGS (or L-BFGS) steps, each taking a
strong-Wolfe line search (Nocedal and Wright, *Numerical Optimization*, algorithms 3.5 and 3.6:
bracket by doubling, then zoom by cubic, quadratic or bisection trial steps) that is itself a pair
of nested while loops, so ``minimize`` runs under ``jit`` and ``vmap`` (over ``x0`` or ``args``).
The rules (constants, the first trial step, the order of the bracket updates, the counters and the
status codes) are JAX's, so the iterates and counts are JAX's, with one deliberate difference: see
``minimize``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np

from functx import lax, numpy as jnp
from functx.errors import (
    FunctxIndexError,
    FunctxTypeError,
    FunctxValueError,
    missing_name_hook as _missing_name_hook,
)
from functx.transforms.vjp import value_and_grad


class OptimizeResults(NamedTuple):
    """The result of ``minimize``, as JAX's ``jax.scipy.optimize.OptimizeResults``.

    Fields: ``x`` (the solution), ``success`` (converged and no line search failed), ``status``
    (0 converged, 1 ``maxiter`` reached, 3 a line search's zoom failed, 5 a line search ran out
    of iterations, -1 otherwise), ``fun`` and ``jac`` (the objective and its gradient at ``x``),
    ``hess_inv`` (the inverse-Hessian estimate; None for the L-BFGS method), ``nfev``, ``njev``
    (objective and gradient evaluations) and ``nit`` (iterations).

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.optimize import minimize
      >>> res = minimize(lambda x: jnp.sum((x - 2.0) ** 2), jnp.zeros(2), method="BFGS")
      >>> print(res.x.round(4), bool(res.success), int(res.status))
      [2. 2.] True 0
    """

    x: Any
    success: Any
    status: Any
    fun: Any
    jac: Any
    hess_inv: Any
    nfev: Any
    njev: Any
    nit: Any


def _results(s, status, hess_inv):
    """The ``OptimizeResults`` of a solver's final state ``s`` (each evaluation gives the value
    and the gradient, so ``njev`` is ``nfev``)."""
    return OptimizeResults(
        s.x, s.converged & ~s.failed, status, s.f, s.g, hess_inv, s.nfev, s.nfev, s.k
    )


def _dot(a, b):
    return jnp.matmul(a, b, precision=lax.Precision.HIGHEST)


# --- the strong-Wolfe line search -----------------------------------------------------------------
class _Point(NamedTuple):
    """A trial step ``a`` along the search direction: phi(a) = f(x + a p), phi'(a), and f's
    gradient there (kept only where the step may be the answer)."""

    a: Any
    phi: Any
    dphi: Any


def _pick(flag, new, old):
    """``new`` where the traced boolean ``flag`` holds, else ``old`` (leafwise, for NamedTuples)."""
    return type(old)(*(jnp.where(flag, n, o) for n, o in zip(new, old)))


def _cubic_min(lo, hi, rec):
    """The minimizer of the cubic through ``lo`` (value and slope), ``hi`` and ``rec`` (values)."""
    db, dc = hi.a - lo.a, rec.a - lo.a
    rb = hi.phi - lo.phi - lo.dphi * db
    rc = rec.phi - lo.phi - lo.dphi * dc
    denom = (db * dc) ** 2 * (db - dc)
    c3 = (dc**2 * rb - db**2 * rc) / denom
    c2 = (db**3 * rc - dc**3 * rb) / denom
    return lo.a + (-c2 + jnp.sqrt(c2 * c2 - 3.0 * c3 * lo.dphi)) / (3.0 * c3)


def _quad_min(lo, hi):
    """The minimizer of the parabola through ``lo`` (value and slope) and ``hi`` (value)."""
    db = hi.a - lo.a
    c2 = (hi.phi - lo.phi - lo.dphi * db) / (db * db)
    return lo.a - lo.dphi / (2.0 * c2)


class _Zoom(NamedTuple):
    j: Any
    done: Any
    failed: Any
    lo: _Point
    hi: _Point
    rec: _Point  # the previous end point the cubic interpolates (its slope is unused)
    star: _Point
    g_star: Any
    nfev: Any


def _zoom(phi, wolfe, lo, hi, g0, skip):
    """Algorithm 3.6: shrink the bracket [lo, hi] (either order) that holds a strong-Wolfe step."""
    sufficient, curvature = wolfe
    half = _Point((lo.a + hi.a) / 2.0, (lo.phi + hi.phi) / 2.0, lo.dphi)
    tiny = 1e-10 if jnp.finfo(lo.a.dtype).bits >= 64 else 1e-5
    one = jnp.ones((), lo.a.dtype)
    start = _Zoom(0, False, False, lo, hi, half, _Point(one, lo.phi, lo.dphi), g0, 0)

    def body(s):
        width = s.hi.a - s.lo.a
        # JAX compares the signed width here, so a bracket held high-to-low counts as collapsed
        # (jax-ml/jax#40228); functx compares its length.
        failed = s.failed | (jnp.abs(width) <= tiny)
        left, right = jnp.minimum(s.hi.a, s.lo.a), jnp.maximum(s.hi.a, s.lo.a)
        cubic = _cubic_min(s.lo, s.hi, s.rec)
        quad = _quad_min(s.lo, s.hi)
        use_cubic = (s.j > 0) & (cubic > left + 0.2 * width) & (cubic < right - 0.2 * width)
        use_quad = ~use_cubic & (quad > left + 0.1 * width) & (quad < right - 0.1 * width)
        a = jnp.where(use_cubic, cubic, jnp.where(use_quad, quad, (s.lo.a + s.hi.a) / 2.0))
        new, g = phi(a)
        to_hi = sufficient(new) | (new.phi >= s.lo.phi)
        found = curvature(new) & ~to_hi
        to_lo = ~to_hi & ~found
        flip = to_lo & (new.dphi * width >= 0.0)
        return _Zoom(
            j=s.j + 1,
            done=s.done | found,
            failed=failed | (s.j + 1 >= 30),
            lo=_pick(to_lo, new, s.lo),
            hi=_pick(to_hi, new, _pick(flip, s.lo, s.hi)),
            rec=_pick(to_hi | flip, s.hi, _pick(to_lo, s.lo, s.rec)),
            star=_pick(found, new, s.star),
            g_star=jnp.where(found, g, s.g_star),
            nfev=s.nfev + 1,
        )

    return lax.while_loop(lambda s: ~s.done & ~skip & ~s.failed, body, start)


class _Search(NamedTuple):
    i: Any
    done: Any
    failed: Any
    prev: _Point
    star: _Point
    g_star: Any
    nfev: Any


def _line_search(fun, xk, pk, f0, f_older, g0, maxiter, c1=1e-4, c2=0.9):
    """Algorithm 3.5: a step ``a`` along ``pk`` with f(xk + a pk) <= f0 + c1 a phi'(0) and
    |phi'(a)| <= -c2 phi'(0), the first trial step from the previous decrease ``f_older - f0``
    (1 when ``f_older`` is None). Returns (failed, status, nfev, a, f, g)."""
    dtype = pk.dtype

    def phi(a):
        f, g = value_and_grad(fun)(xk + a.astype(dtype) * pk)
        return _Point(a, f.astype(f0.dtype), jnp.real(_dot(g, pk)).astype(f0.dtype)), g

    d0 = jnp.real(_dot(g0, pk))
    wolfe = (
        lambda p: p.phi > f0 + c1 * p.a * d0,  # sufficient decrease fails
        lambda p: jnp.abs(p.dphi) <= -c2 * d0,  # curvature holds
    )
    if f_older is None:
        first = jnp.ones((), dtype)
    else:
        guess = 1.01 * 2.0 * (f0 - f_older) / d0
        first = jnp.where(guess > 1.0, 1.0, guess).astype(dtype)
    origin = _Point(jnp.zeros((), dtype), f0, d0)

    def body(s):
        new, g = phi(jnp.where(s.i == 1, first, s.prev.a * 2.0))
        up = wolfe[0](new) | ((new.phi >= s.prev.phi) & (s.i > 1))
        accept = wolfe[1](new) & ~up
        down = (new.dphi >= 0.0) & ~up & ~accept
        z = _zoom(phi, wolfe, _pick(up, s.prev, new), _pick(up, new, s.prev), g0, ~(up | down))
        zoomed = up | down
        return _Search(
            i=s.i + 1,
            done=s.done | zoomed | accept,
            failed=s.failed | (zoomed & z.failed),
            prev=new,
            star=_pick(zoomed, z.star, _pick(accept, new, s.star)),
            g_star=jnp.where(zoomed, z.g_star, jnp.where(accept, g, s.g_star)),
            nfev=s.nfev + 1 + z.nfev,
        )

    start = _Search(1, jnp.asarray(False), jnp.asarray(False), origin, origin, g0, 0)
    s = lax.while_loop(lambda s: ~s.done & (s.i <= maxiter) & ~s.failed, body, start)
    status = jnp.where(s.failed, 1, jnp.where(s.i > maxiter, 3, 0))
    a = s.star.a
    if jnp.finfo(dtype).bits != 64:  # as JAX: no step shorter than 1e-8 below 64 bits
        a = jnp.where(jnp.abs(a) < 1e-8, jnp.sign(a) * 1e-8, a)
    return s.failed | ~s.done, status, s.nfev, a, s.star.phi, s.g_star


# --- BFGS -----------------------------------------------------------------------------------------
class _BFGS(NamedTuple):
    k: Any
    converged: Any
    failed: Any
    ls_status: Any
    nfev: Any
    x: Any
    f: Any
    g: Any
    h: Any
    f_prev: Any


def _bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
    """Algorithm 6.1 of Nocedal and Wright, from the identity as inverse Hessian."""
    maxiter = np.size(x0) * 200 if maxiter is None else maxiter
    n = x0.shape[0]
    eye = jnp.eye(n, dtype=x0.dtype)
    f0, g0 = value_and_grad(fun)(x0)

    def small(g):
        return jnp.linalg.norm(g, ord=norm) < gtol

    def body(s):
        p = -_dot(s.h, s.g)
        failed, status, nfev, a, f, g = _line_search(
            fun, s.x, p, s.f, s.f_prev, s.g, line_search_maxiter
        )
        step, dg = a * p, g - s.g
        rho = 1.0 / _dot(dg, step)
        w = eye - rho * jnp.outer(step, dg)
        h = _dot(_dot(w, s.h), w.T) + rho * jnp.outer(step, step)
        return _BFGS(
            k=s.k + 1,
            converged=small(g),
            failed=failed,
            ls_status=status,
            nfev=s.nfev + nfev,
            x=s.x + step,
            f=f,
            g=g,
            h=jnp.where(jnp.isfinite(rho), h, s.h),
            f_prev=s.f,
        )

    start = _BFGS(
        0, small(g0), jnp.asarray(False), 0, 1, x0, f0, g0, eye, f0 + jnp.linalg.norm(g0) / 2
    )
    s = lax.while_loop(lambda s: ~s.converged & ~s.failed & (s.k < maxiter), body, start)
    status = jnp.where(
        s.converged, 0, jnp.where(s.k == maxiter, 1, jnp.where(s.failed, 2 + s.ls_status, -1))
    )
    return _results(s, status, s.h)


# --- L-BFGS ---------------------------------------------------------------------------------------
class _LBFGS(NamedTuple):
    k: Any
    converged: Any
    failed: Any
    status: Any
    nfev: Any
    x: Any
    f: Any
    g: Any
    s: Any  # the last ``maxcor`` steps, oldest first (zeros before there are that many)
    y: Any  # the gradient changes over them
    rho: Any  # 1 / (y . s), zero for the empty slots
    gamma: Any  # the scale of the initial inverse Hessian


def _dot_re(a, b):
    return jnp.real(_dot(jnp.conj(a), b))


def _two_loop(s):
    """-H g by algorithm 7.4 (Nocedal and Wright): H is the inverse-Hessian estimate from the
    stored pairs. Empty slots (rho = 0) leave the vector unchanged, so both loops run over all
    of them."""
    m = s.rho.shape[0]
    dt = s.rho.dtype

    def backward(j, carry):
        q, alpha = carry
        i = m - 1 - j
        a = s.rho[i] * _dot_re(s.s[i], q).astype(dt)
        return q - a * jnp.conj(s.y[i]), alpha.at[i].set(a)

    q, alpha = lax.fori_loop(0, m, backward, (-jnp.conj(s.g), jnp.zeros_like(s.rho)))

    def forward(i, q):
        b = s.rho[i] * jnp.real(_dot(s.y[i], q)).astype(dt)
        return q + (alpha[i] - b) * s.s[i]

    return lax.fori_loop(0, m, forward, s.gamma * q)


def _push(history, new):
    return jnp.roll(history, -1, axis=0).at[-1].set(new)


def _lbfgs(
    fun,
    x0,
    maxiter=None,
    norm=np.inf,
    maxcor=10,
    ftol=2.220446049250313e-09,
    gtol=1e-5,
    maxfun=None,
    maxgrad=None,
    maxls=20,
):
    """Algorithm 7.5 of Nocedal and Wright with JAX's stopping rules (its status codes: 1
    ``maxiter``, 2 ``maxfun``, 3 ``maxgrad``, 4 a decrease below ``ftol``, 5 a failed line
    search), complex ``x`` handled as in Sorber et al. (2012)."""
    n, dt = x0.shape[0], x0.dtype
    if maxiter is None and maxfun is None and maxgrad is None:
        maxiter = 200 * n
    maxiter, maxfun, maxgrad = (np.inf if v is None else v for v in (maxiter, maxfun, maxgrad))
    f0, g0 = value_and_grad(fun)(x0)

    def body(s):
        p = _two_loop(s)
        failed, ls_status, nfev, a, f, g = _line_search(fun, s.x, p, s.f, None, s.g, maxls)
        step, dg = a.astype(p.dtype) * p, g - s.g
        ys = jnp.real(_dot(dg, step))  # (the gradient is conjugated: no conj here)
        status = jnp.where(s.f - f < ftol, 4, 0)
        status = jnp.where(s.nfev >= maxgrad, 3, status)
        status = jnp.where(s.nfev >= maxfun, 2, status)
        status = jnp.where(s.k >= maxiter, 1, status)
        status = jnp.where(failed, 5, status)
        converged = jnp.linalg.norm(g, ord=norm) < gtol
        return _LBFGS(
            k=s.k + 1,
            converged=converged,
            failed=(status > 0) & ~converged,
            status=jnp.where(converged, 0, status),
            nfev=s.nfev + nfev,
            x=(s.x + step).astype(dt),
            f=f.astype(s.f.dtype),
            g=g.astype(dt),
            s=_push(s.s, step),
            y=_push(s.y, dg),
            rho=_push(s.rho, (1.0 / ys).astype(dt)),
            gamma=(ys / _dot_re(dg, dg)).astype(dt),
        )

    zeros = jnp.zeros((maxcor, n), dt)
    start = _LBFGS(
        0,
        jnp.asarray(False),
        jnp.asarray(False),
        0,
        1,
        x0,
        f0,
        g0,
        zeros,
        zeros,
        jnp.zeros((maxcor,), dt),
        jnp.ones((), dt),
    )
    s = lax.while_loop(lambda s: ~s.converged & ~s.failed, body, start)
    return _results(s, s.status, None)


_METHODS: dict[str, Callable[..., OptimizeResults]] = {
    "bfgs": _bfgs,
    "l-bfgs-experimental-do-not-rely-on-this": _lbfgs,
}
_OPTIONS = {
    name: set(inspect.signature(f).parameters) - {"fun", "x0"} for name, f in _METHODS.items()
}


def minimize(
    fun: Callable,
    x0,
    args: tuple = (),
    *,
    method: str,
    tol: float | None = None,
    options: Mapping[str, Any] | None = None,
) -> OptimizeResults:
    """Minimizes a scalar function of a 1-D array, as ``jax.scipy.optimize.minimize``.

    The gradient comes from ``functx.grad``; the solver is a ``functx.lax.while_loop``, so
    ``minimize`` runs under ``jit`` and ``vmap``. As in JAX, it is not differentiable, ``tol``
    is accepted and unused (pass ``options={"gtol": ...}``), and ``x0`` must be 1-D.

    Differences from JAX: JAX's line search marks a zoom as failed whenever its bracket is held
    high end first (it compares the bracket's signed width with its floor, jax-ml/jax#40228), so
    JAX stops with status 3 (L-BFGS: 5) on problems such as the 2-D Rosenbrock function from
    (0, 0), where SciPy converges; functx compares the bracket's length and converges there
    too. Where JAX's zoom never meets such a bracket the iterates and counts are JAX's; in
    float32 up to rounding, which the iterations amplify: XLA's CPU dot products accumulate with
    fused multiply-adds (and under ``jit`` it fuses ``x + a * p`` into one), where functx's eager
    products are NumPy's. On the 3-D Rosenbrock function from (-1, 1.5, 0.5) the first product
    ``H @ g`` of the second iteration differs in its last bit; after 24 iterations functx's
    eager iterate is within 2e-5 of JAX's under ``jax.disable_jit``, both about 3e-4 from
    JAX's jitted one, which then stops with status 3 (the reversed bracket above).

    Arguments:
      fun: the objective, ``fun(x, *args)`` -> a real scalar, differentiable in ``x``.
      x0: the starting point, a 1-D array of ``n`` real floats.
      args: a tuple of further arguments to ``fun``.
      method: ``"BFGS"`` or ``"l-bfgs-experimental-do-not-rely-on-this"`` (any case).
      tol: unused, as in JAX.
      options: BFGS's: ``maxiter`` (default ``200 * n``), ``norm`` (the order of the gradient
        norm tested, default inf), ``gtol`` (stop when that norm falls below it, default 1e-5)
        and ``line_search_maxiter`` (default 10). L-BFGS's: ``maxiter``, ``norm``, ``gtol``,
        ``maxcor`` (pairs kept, default 10), ``ftol`` (stop, status 4, when f decreases by less,
        default 2.2e-9), ``maxfun``, ``maxgrad`` and ``maxls`` (line search steps, default 20).

    Returns:
      an ``OptimizeResults``: ``x``, ``success``, ``status``, ``fun``, ``jac``, ``hess_inv``,
      ``nfev``, ``njev``, ``nit``.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.optimize import minimize
      >>> def rosen(x):
      ...     return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
      >>> res = minimize(rosen, jnp.zeros(2), method="BFGS")
      >>> print(res.x.round(3), bool(res.success))
      [1. 1.] True
    """
    if not isinstance(args, tuple):
        raise FunctxTypeError(
            f"args argument to functx.scipy.optimize.minimize must be a tuple, got {args!r}"
        )
    solver = _METHODS.get(method.lower())
    if solver is None:
        raise FunctxValueError(f"Method {method} not recognized")
    options = dict(options or {})
    unknown = sorted(set(options) - _OPTIONS[method.lower()])
    if unknown:
        raise FunctxTypeError(f"minimize: unknown options for method {method!r}: {unknown}")
    x0 = jnp.asarray(x0)
    if x0.ndim == 0:
        raise FunctxIndexError("minimize: x0 must be a 1-D array, got a scalar")
    if x0.ndim != 1:
        raise FunctxTypeError(f"minimize: x0 must be a 1-D array, got shape {x0.shape}")
    return solver(lambda x: fun(x, *args), x0, **options)


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["OptimizeResults", "minimize"]
