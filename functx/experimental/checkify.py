"""``functx.experimental.checkify``: runtime checks as values (JAX's
``jax.experimental.checkify``).

``check(pred, msg, ...)`` records a ``check`` equation (``functx/control/check.py``): eagerly it
raises at once; under ``jit`` alone it cannot run (JAX's ValueError). ``checkify(f)`` traces ``f``
to a Jaxpr and runs the transform below, which walks the equations and threads an *error value*
through them: one slot per check site (a failure flag and the payload: the format arguments of
a user check, the bad index of an out-of-bounds access), in program order, the sub-Jaxprs of
``cond``, ``scan``, ``while`` and ``checkpoint`` included (their slots travel through the
branches, the loop carries and the checkpointed body). Each ``check`` equation becomes updates
of its slot (a slot keeps its first failure); the automatic checks are added after the
primitives they watch. The result is an ordinary function of arrays, so ``jit``, ``vmap`` and
``grad`` apply to it (and to ``f`` before it), and the compiled kernels of either backend only
compute flags and payloads.

``Error.get()`` reports the failed site first in program order. The automatic checks, by
error set:

* ``nan_checks``: a NaN in the floating output of acos, acosh, add, asin, asinh, atan2, atan,
  atanh, bessel_i0e, bessel_i1e, cbrt, cos, cosh, custom_linear_solve, digamma, div,
  dot_general, erf, erf_inv, erfc, exp, expm1, fft, igamma, igamma_grad_a, igammac,
  integer_pow, lgamma, log, log1p, logistic, mul, pad, pow, psum, reduce, reduce_prod,
  reduce_sum, rem, rng_uniform, rsqrt, sin, sinh, sqrt, sub, tan, tanh (JAX's list, where
  functx has the primitive: its cumulative reductions are ``associative_scan`` equations and
  its convolutions are composites, so their NaNs are reported by the primitives inside);
* ``div_checks``: a zero divisor of ``div`` (integer or floating, as JAX);
* ``index_checks``: an out-of-bounds index of ``gather``, ``dynamic_slice`` and
  ``dynamic_update_slice`` (scatters are not checked).

Differences from JAX: each check site has its own slot, and the earliest site in program order
that failed is reported (JAX shares one slot among the sites of one kind and payload type, so in
a loop it may report the one that failed first in time, and across kinds a later site, as a
user check over an earlier NaN). Checks inside ``custom_jvp`` and
``custom_vjp`` functions are not functionalized (their automatic checks are not added, and a
user check there raises under ``jit``). An out-of-bounds index that is a Python int is clamped
when tracing (no gather is made), so it is not reported; the operand shape an out-of-bounds
message names is that of the gather functx makes (``x[i, 1:]`` slices before it gathers, so it
names the sliced shape). A check in a ``scan`` body under ``grad`` is reported (JAX 0.10.2
loses it). As in JAX, a ``while_loop`` with a check whose predicate ``vmap`` batches is refused
(ValueError): the body runs for every example while any goes on.
"""

from __future__ import annotations

import functools
from contextlib import nullcontext

import numpy as np

from functx import lax, numpy as jnp, tree_util
from functx.array import ArrayMethods
from functx.control.check import (
    DivisionByZeroError as DivisionByZeroError,
    FailedCheckError as FailedCheckError,
    JaxException as JaxException,
    NaNError as NaNError,
    OOBError as OOBError,
    Site,
    check_p,
)
from functx.control.common import hoist, trace_pytree
from functx.control.remat import checkpoint_p
from functx.core import Literal, ShapedArray
from functx.errors import (
    CheckifyRuntimeError as JaxRuntimeError,
    FunctxTypeError,
    missing_name_hook as _missing_name_hook,
)
from functx.source_info import current, source_info
from functx.tracing import get_aval, trace_flat, tree_flatten

ErrorCategory = type[JaxException]  # (JAX's alias: the class of an error kind)

user_checks = frozenset({FailedCheckError})
nan_checks = frozenset({NaNError})
index_checks = frozenset({OOBError})
div_checks = frozenset({DivisionByZeroError})
float_checks = nan_checks | div_checks
automatic_checks = float_checks | index_checks
all_checks = automatic_checks | user_checks


# --- the error value ------------------------------------------------------------------------------
class Error:
    """The error value ``checkify`` returns: for each check site, whether it failed and its
    payload (a pytree, so it crosses ``jit`` and ``vmap``; under ``vmap`` each flag is batched).

    Example:
      >>> import numpy as np
      >>> from functx.experimental import checkify
      >>> def f(x):
      ...     checkify.check(x > 0, "x must be positive, got {}", x)
      ...     return x
      >>> err, _ = checkify.checkify(f)(np.float32(-1.0))
      >>> print(err.get())
      x must be positive, got -1.0 (`check` failed)
    """

    __slots__ = ("_sites", "_failed", "_payload")

    def __init__(self, sites, failed, payload):
        self._sites, self._failed, self._payload = tuple(sites), tuple(failed), tuple(payload)

    def get(self) -> str | None:
        """The message of the error (one line per failing example of a batched error, as
        "at mapped index i: ..."), or None if no check failed.

        Arguments:
          (none)
        Returns:
          a str or None.
        Example:
          >>> from functx.experimental import checkify
          >>> print(checkify.init_error.get())
          None
        """
        exc = self.get_exception()
        return None if exc is None else str(exc)

    def get_exception(self) -> JaxException | None:
        """The error as an exception object (an instance of its ErrorCategory), or None.

        Arguments:
          (none)
        Returns:
          a ``JaxException`` (a ``_Batched`` one for a batched error) or None.
        Example:
          >>> from functx.experimental import checkify
          >>> print(checkify.init_error.get_exception())
          None
        """
        failed = [np.asarray(f) for f in self._failed]
        payload = [[np.asarray(p) for p in ps] for ps in self._payload]
        if not failed or not failed[0].shape:
            return _first(self._sites, failed, payload, ())
        found = {}
        for idx in np.ndindex(*failed[0].shape):
            exc = _first(self._sites, failed, payload, idx)
            if exc is not None:
                found[idx] = exc
        return _Batched(found) if found else None

    def throw(self):
        """Raise ``checkify.JaxRuntimeError`` if a check failed (``check_error(self)``).

        Arguments:
          (none)
        Returns:
          None.
        Example:
          >>> from functx.experimental import checkify
          >>> checkify.init_error.throw()
        """
        check_error(self)

    def __str__(self):
        return f"Error({self.get()})"

    __repr__ = __str__


def _first(sites, failed, payload, idx):
    """The exception of the earliest failed site at batch index ``idx``, or None."""
    for site, f, ps in zip(sites, failed, payload):
        if f[idx]:
            return site.exception([p[idx] for p in ps])
    return None


class _Batched(JaxException):
    """The errors of the failing examples of a batched Error."""

    def __init__(self, found):
        super().__init__(next(iter(found.values())).where)
        self.found = found

    def __str__(self):
        return "\n".join(
            f"at mapped index {', '.join(map(str, i))}: {e}" for i, e in self.found.items()
        )


tree_util.register_pytree_node(
    Error,
    lambda e: ([*e._failed, *(p for ps in e._payload for p in ps)], e._sites),
    lambda sites, leaves: _unflatten(sites, list(leaves)),
)


def _unflatten(sites, leaves):
    n = len(sites)
    it = iter(leaves[n:])
    return Error(sites, leaves[:n], [[next(it) for _ in s.avals] for s in sites])


init_error = Error((), (), ())


# --- the public checks ----------------------------------------------------------------------------
def _is_scalar_pred(pred) -> bool:
    """JAX's rule: a Python bool or a bool array (functx's, not NumPy's) of shape ()."""
    if isinstance(pred, bool):
        return True
    return isinstance(pred, ArrayMethods) and pred.shape == () and pred.dtype == np.bool_


def check(pred, msg: str, *fmt_args, debug: bool = False, **fmt_kwargs) -> None:
    """Check that ``pred`` holds: if not, raise (eagerly) or, under ``checkify``, record the error
    ``msg.format(*fmt_args, **fmt_kwargs)`` with the runtime values (JAX's
    ``checkify.check``). Under ``jit`` without ``checkify`` it raises JAX's ValueError.

    Arguments:
      pred: a Python bool or a bool array of shape () (not a NumPy one, as in JAX).
      msg: a ``str.format`` string.
      *fmt_args, **fmt_kwargs: pytrees of arrays (functx or NumPy arrays; not scalars, as in
        JAX) to format into ``msg``.
      debug: a ``debug_check`` (dropped outside ``checkify``).
    Returns:
      None.
    Example:
      >>> import numpy as np
      >>> from functx.experimental import checkify
      >>> import functx.numpy as jnp
      >>> checkify.check(jnp.float32(2.0) > 0, "never printed")
    """
    if not _is_scalar_pred(pred):
        raise FunctxTypeError(f"check takes a scalar pred as argument, got {pred}")
    leaves, tree = tree_flatten((fmt_args, fmt_kwargs))
    for x in leaves:
        if not isinstance(x, (ArrayMethods, np.ndarray)):  # (JAX's rule: no scalars)
            raise FunctxTypeError(
                "Formatting arguments to checkify.check need to be PyTrees of arrays, but got "
                f"{x!r} of type {type(x)}."
            )
    avals = [get_aval(x) for x in leaves]
    site = Site(FailedCheckError, (msg, tree), avals, current())
    check_p.bind(jnp.logical_not(pred), *leaves, site=site, debug=debug)


def debug_check(pred, msg: str, *fmt_args, **fmt_kwargs) -> None:
    """A ``check`` that only ``checkify`` runs: dropped eagerly and under ``jit`` alone (JAX's
    ``checkify.debug_check``).

    Arguments:
      pred, msg, *fmt_args, **fmt_kwargs: as ``check``'s.
    Returns:
      None.
    Example:
      >>> import numpy as np
      >>> from functx.experimental import checkify
      >>> checkify.debug_check(False, "dropped outside checkify")
      >>> f = checkify.checkify(lambda x: checkify.debug_check(x > 0, "x={}", x))
      >>> print(f(np.float32(-1.0))[0].get())
      x=-1.0 (`check` failed)
    """
    check(pred, msg, *fmt_args, debug=True, **fmt_kwargs)


def check_error(error: Error) -> None:
    """Raise ``checkify.JaxRuntimeError`` if ``error`` holds a failure; under ``checkify`` the
    error joins the new function's error instead (JAX's ``checkify.check_error``). A batched
    error reports its last failing example.

    Arguments:
      error: an ``Error`` (from ``checkify``).
    Returns:
      None.
    Example:
      >>> import numpy as np
      >>> from functx.experimental import checkify
      >>> err, _ = checkify.checkify(lambda x: x)(np.float32(1.0))
      >>> checkify.check_error(err)
    """
    if not isinstance(error, Error):
        raise FunctxTypeError(f"check_error takes an Error, got {type(error).__name__}")
    failed, payload = list(error._failed), [list(ps) for ps in error._payload]
    if failed and jnp.ndim(failed[0]):  # batched: the last example where any site failed
        flat = [jnp.ravel(f) for f in failed]
        anyf = functools.reduce(jnp.logical_or, flat)
        k = flat[0].shape[0] - 1 - jnp.argmax(anyf[::-1])
        failed = [f[k] for f in flat]
        payload = [
            [jnp.reshape(p, (-1, *a.shape))[k] for p, a in zip(ps, s.avals)]
            for ps, s in zip(payload, error._sites)
        ]
    for site, f, ps in zip(error._sites, failed, payload):
        check_p.bind(f, *ps, site=site, debug=False)


# --- the automatic checks: (error kind, applies to the equation?, static description, test) -----
_NAN_PRIMS = frozenset(
    "acos acosh add asin asinh atan2 atan atanh bessel_i0e bessel_i1e cbrt cos cosh "
    "custom_linear_solve digamma div dot_general erf erf_inv erfc exp expm1 fft igamma "
    "igamma_grad_a igammac integer_pow lgamma log log1p logistic mul pad pow psum reduce "
    "reduce_prod reduce_sum rem rng_uniform rsqrt sin sinh sqrt sub tan tanh".split()
)


def _inexact(aval) -> bool:
    return np.issubdtype(aval.dtype, np.inexact)


def _has_nan(o):
    """Whether ``o`` holds a NaN. For real floats: whether its maximum is NaN (functx's max
    propagates NaN on every backend), a reduction the kernels vectorize better than an OR of
    flags (at 10^6 elements about 0.7 ms against 14 ms on the C++ backend)."""
    if np.issubdtype(o.dtype, np.floating):
        return jnp.isnan(lax.reduce_max(o, tuple(range(o.ndim))))
    return jnp.any(jnp.isnan(o))


def _nan_test(e, ins, outs):
    return functools.reduce(jnp.logical_or, [_has_nan(o) for o in outs if _inexact(o)]), []


def _div_test(e, ins, outs):
    return jnp.any(ins[1] == 0), []


def _oob(starts, extents, axes, shape):
    """(any out of bounds, [index, axis, size] of the first): ``starts`` (..., k) along ``axes``,
    each window ``extents`` long."""
    ext = np.asarray(extents, np.int32)
    dims = np.asarray([shape[a] for a in axes], np.int32)
    starts = jnp.asarray(starts, np.int32)
    bad = (starts < 0) | (starts + ext > dims)
    flat = jnp.argmax(jnp.ravel(bad))
    k = len(axes)
    axis = jnp.asarray(np.asarray(axes, np.int32))[flat % k]
    size = jnp.asarray(np.asarray(shape, np.int32).reshape(-1) if shape else np.zeros(1, np.int32))
    payload = jnp.stack([jnp.ravel(starts)[flat], axis, size[axis]])
    return jnp.any(bad), [payload]


def _gather_test(e, ins, outs):
    axes = e.params["axes"]
    return _oob(ins[1], [1] * len(axes), axes, ins[0].shape)


def _dynamic_slice_test(e, ins, outs):
    op = ins[0]
    return _oob(jnp.stack(ins[1:]), e.params["slice_sizes"], range(op.ndim), op.shape)


def _dus_test(e, ins, outs):
    op, upd = ins[0], ins[1]
    return _oob(jnp.stack(ins[2:]), upd.shape, range(op.ndim), op.shape)


_OOB_AVALS = (ShapedArray((3,), np.dtype(np.int32)),)
_INDEXED = {"gather": _gather_test, "dynamic_slice": _dynamic_slice_test}
_INDEXED["dynamic_update_slice"] = _dus_test


def _auto_checks(e):
    """The automatic checks of equation ``e``: (kind, static, payload avals, test) in order."""
    name = e.prim.name
    rules = []
    if name == "div":
        rules.append((DivisionByZeroError, (), (), _div_test))
    if name in _NAN_PRIMS and any(_inexact(v.aval) for v in e.outvars):
        rules.append((NaNError, (name,), (), _nan_test))
    if name in _INDEXED and e.invars[0].aval.ndim:
        rules.append((OOBError, (name, e.invars[0].aval.shape), _OOB_AVALS, _INDEXED[name]))
    return rules


# --- the transform --------------------------------------------------------------------------------
_SUBJAXPRS = {
    "cond": lambda p: p["branches"],
    "scan": lambda p: (p["jaxpr"],),
    "while": lambda p: (p["cond_jaxpr"], p["body_jaxpr"]),
    "checkpoint": lambda p: (p["jaxpr"],),
}


class _Ctx:
    """The check sites of a Jaxpr (found once, before the walk, since loop carries need the whole
    error value): ``sites`` in program order; ``of[id(eqn)]`` the (site index, test) pairs of an
    equation; ``live`` the ids of the (sub-)Jaxprs holding a site."""

    def __init__(self, jaxpr, errors):
        self.errors, self.sites, self.of, self.live, self.keep = errors, [], {}, set(), []
        self.seen: dict[int, bool] = {}
        self._collect(jaxpr)

    def _add(self, e, kind, static, avals, test):
        if kind not in self.errors:
            return
        self.of.setdefault(id(e), []).append((len(self.sites), test))
        self.sites.append(Site(kind, static, avals, e.source_info))

    def _collect(self, jaxpr) -> bool:
        """Find the sites of ``jaxpr`` (once: a body traced once and used by two loops has one
        set of sites, which both update)."""
        if id(jaxpr) in self.seen:
            return self.seen[id(jaxpr)]
        self.keep.append(jaxpr)
        found = False
        for e in jaxpr.eqns:
            if e.prim is check_p:
                site = e.params["site"]
                if site.kind in self.errors:
                    self.of[id(e)] = [(len(self.sites), None)]
                    self.sites.append(site)
            for rule in _auto_checks(e):
                self._add(e, *rule)
            subs = _SUBJAXPRS.get(e.prim.name)
            if subs is not None:
                inner = [self._collect(c.jaxpr) for c in subs(e.params)]
                if any(inner):
                    self.live.add(id(e))
            found = found or id(e) in self.of or id(e) in self.live
        if found:
            self.live.add(id(jaxpr))
        self.seen[id(jaxpr)] = found
        return found

    def init(self):
        return [
            (jnp.zeros((), bool), [jnp.zeros(a.shape, a.dtype) for a in s.avals])
            for s in self.sites
        ]


def _record(state, k, failed, payload):
    """Slot ``k`` after a check: it keeps its first failure."""
    old, old_p = state[k]
    take = jnp.logical_and(failed, jnp.logical_not(old))
    new_p = [
        lax.select(take, lax.convert_element_type(p, o.dtype), o) for p, o in zip(payload, old_p)
    ]
    state = list(state)
    state[k] = (jnp.logical_or(old, failed), new_p)
    return state


def _run(ctx, jaxpr, consts, args, state):
    """Evaluate ``jaxpr`` on ``args`` with the error value ``state``: (outputs, state)."""
    env = {v.id: x for v, x in zip((*jaxpr.constvars, *jaxpr.invars), (*consts, *args))}

    def read(a):
        return a.val if type(a) is Literal else env[a.id]

    for e in jaxpr.eqns:
        ins = [read(a) for a in e.invars]
        with source_info(e.source_info) if e.source_info is not None else nullcontext():
            if id(e) in ctx.live:
                outs, state = _CONTROL[e.prim.name](ctx, e, ins, state)
            elif e.prim is check_p:
                outs = []
                for k, _ in ctx.of.get(id(e), ()):
                    state = _record(state, k, ins[0], ins[1:])
            else:
                outs = e.prim.bind(*ins, **e.params)
                outs = list(outs) if e.prim.multiple_results else [outs]
                for k, test in ctx.of.get(id(e), ()):
                    state = _record(state, k, *test(e, ins, outs))
        for v, o in zip(e.outvars, outs):
            env[v.id] = o
    return [read(a) for a in jaxpr.outvars], state


def _cond_rule(ctx, e, ins, state):
    def branch(b):
        return lambda st, ops: _run(ctx, b.jaxpr, b.consts, ops, st)[::-1]

    state, outs = lax.switch(ins[0], [branch(b) for b in e.params["branches"]], state, ins[1:])
    return list(outs), state


def _scan_rule(ctx, e, ins, state):
    p = e.params
    j, nc, nk = p["jaxpr"], p["num_consts"], p["num_carry"]
    consts, carry, xs = ins[:nc], ins[nc : nc + nk], ins[nc + nk :]

    def body(c, x):
        outs, st = _run(ctx, j.jaxpr, j.consts, [*consts, *c[1], *x], c[0])
        return (st, outs[:nk]), outs[nk:]

    (state, carry), ys = lax.scan(
        body, (state, carry), xs, length=p["length"], reverse=p["reverse"], unroll=p["unroll"]
    )
    return [*carry, *ys], state


def _while_rule(ctx, e, ins, state):
    """JAX's order: the condition is checked on the initial value and after each body."""
    p = e.params
    cj, bj, cn, bn = p["cond_jaxpr"], p["body_jaxpr"], p["cond_nconsts"], p["body_nconsts"]
    cconsts, bconsts, init = ins[:cn], ins[cn : cn + bn], ins[cn + bn :]

    def cond_of(st, c):
        outs, st = _run(ctx, cj.jaxpr, cj.consts, [*cconsts, *c], st)
        return outs[0], st

    def body(sc):
        outs, st = _run(ctx, bj.jaxpr, bj.consts, [*bconsts, *sc[1]], sc[0])
        return cond_of(st, outs)[1], outs

    state = cond_of(state, init)[1]
    state, outs = lax.while_loop(lambda sc: cond_of(*sc)[0], body, (state, list(init)))
    return list(outs), state


def _checkpoint_rule(ctx, e, ins, state):
    """The checked body, itself under ``checkpoint`` with the equation's parameters."""
    j = e.params["jaxpr"]
    params = {k: v for k, v in e.params.items() if k != "jaxpr"}
    flat, tree = tree_flatten((state, ins))

    def body(*xs):
        st, args = tree_util.tree_unflatten(tree, list(xs))
        outs, st = _run(ctx, j.jaxpr, j.consts, args, st)
        st_leaves, st_tree = tree_flatten(st)
        return [*st_leaves, *outs], st_tree

    traced, st_tree = trace_flat(body, [get_aval(x) for x in flat])
    hoisted, consts = hoist(traced)
    res = checkpoint_p.bind(*consts, *flat, jaxpr=hoisted, **params)
    n = st_tree.num_leaves
    return list(res[n:]), tree_util.tree_unflatten(st_tree, list(res[:n]))


_CONTROL = {
    "cond": _cond_rule,
    "scan": _scan_rule,
    "while": _while_rule,
    "checkpoint": _checkpoint_rule,
}


def checkify(f, errors=user_checks):
    """Functionalize the checks of ``f``: the new function returns ``(error, out)`` instead of
    raising, so it runs under ``jit``, ``vmap`` and ``grad`` (JAX's ``checkify.checkify``).

    Arguments:
      f: a function of pytrees of arrays, which may call ``check``.
      errors: the set of error kinds to check: ``user_checks`` (the default), ``nan_checks``,
        ``div_checks``, ``index_checks``, ``float_checks``, ``automatic_checks``,
        ``all_checks``, or a union of them.
    Returns:
      a function with ``f``'s arguments returning ``(Error, f's output)``.
    Example:
      >>> import numpy as np
      >>> import functx, functx.numpy as jnp
      >>> from functx.experimental import checkify
      >>> f = checkify.checkify(jnp.log, errors=checkify.nan_checks)
      >>> err, y = functx.jit(f)(np.float32(-1.0))
      >>> print(err.get())
      nan generated by primitive: log.
    """
    errors = frozenset(errors)
    bad = [c for c in errors if not (isinstance(c, type) and issubclass(c, JaxException))]
    if bad:
        raise FunctxTypeError(f"checkify: errors must be a set of error categories, got {bad}")

    def star(args_kwargs):
        return f(*args_kwargs[0], **args_kwargs[1])

    @functools.wraps(f)
    def checked(*args, **kwargs):
        leaves, in_tree = tree_flatten(((args, kwargs),))
        closed, out_tree = trace_pytree(star, [get_aval(x) for x in leaves], in_tree)
        ctx = _Ctx(closed.jaxpr, errors)
        outs, state = _run(ctx, closed.jaxpr, closed.consts, leaves, ctx.init())
        err = Error(ctx.sites, [s[0] for s in state], [s[1] for s in state])
        return err, tree_util.tree_unflatten(out_tree, outs)

    return checked


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
    "Error",
    "ErrorCategory",
    "JaxRuntimeError",
    "all_checks",
    "automatic_checks",
    "check",
    "check_error",
    "checkify",
    "debug_check",
    "div_checks",
    "float_checks",
    "index_checks",
    "init_error",
    "nan_checks",
    "user_checks",
]
