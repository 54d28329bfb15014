"""eval_jaxpr: the eager path.

Each equation is re-bound: on concrete arrays that runs the primitive's NumPy implementation;
under an active trace it re-records the equation, which is how a transformed function inlines its
Jaxpr into an outer trace.
"""

from __future__ import annotations

import numpy as np

from functx import config, core, dtypes
from functx.core import ClosedJaxpr, Jaxpr, Literal
from functx.source_info import source_info


def eval_jaxpr(jaxpr: Jaxpr, consts, *args) -> list:
    """Evaluate ``jaxpr`` on ``args``: each equation binds its primitive, so outside a trace this
    runs eagerly and under a trace it inlines the equations into the active trace.

    Arguments:
      jaxpr: the Jaxpr to run.
      consts: values for its constvars.
      *args: values for its invars (arrays, scalars or tracers).

    Returns:
      The list of output values.

    Example:
      >>> import numpy as np, functx
      >>> closed = functx.make_jaxpr(lambda x: x * 2.0)(np.float32(3.0))
      >>> [float(v) for v in eval_jaxpr(closed.jaxpr, closed.consts, np.float32(3.0))]
      [6.0]
    """
    if len(args) != len(jaxpr.invars):
        raise TypeError(
            f"eval_jaxpr: the Jaxpr takes {len(jaxpr.invars)} arguments, got {len(args)}"
        )
    env = {}
    for v, x in zip(jaxpr.constvars, consts):
        env[v.id] = x
    for v, x in zip(jaxpr.invars, args):
        env[v.id] = x

    def read(a):
        return a.val if type(a) is Literal else env[a.id]

    # A Jaxpr with 64-bit values while x64 is off was traced partly in an x64 block (functx.random's
    # exact samplers): its equations are bound again in x64 mode, so that the constants a re-trace
    # captures keep their 64-bit dtypes, and its literals are read as NumPy values of their
    # recorded dtypes, so that the 32-bit ones (weak Python scalars included) stay 32-bit there.
    if dtypes.x64_enabled() or not _has_64_bit(jaxpr):
        _run(jaxpr, env, read)
        return [read(a) for a in jaxpr.outvars]

    def read_typed(a):
        return np.asarray(a.val, a.aval.dtype) if type(a) is Literal else env[a.id]

    with config.enable_x64(True):
        _run(jaxpr, env, read_typed)
    return [read_typed(a) for a in jaxpr.outvars]


_WIDE = frozenset(np.dtype(t) for t in ("float64", "int64", "uint64", "complex128"))


def _has_64_bit(jaxpr: Jaxpr) -> bool:
    """Whether any value of ``jaxpr`` is 64-bit (a scan of its avals: cheaper than the binds)."""
    for vs in (jaxpr.invars, jaxpr.constvars, *(e.outvars for e in jaxpr.eqns)):
        for v in vs:
            if getattr(getattr(v, "aval", None), "dtype", None) in _WIDE:
                return True
    return False


def _run(jaxpr: Jaxpr, env: dict, read) -> None:
    # (the equations' lines: for errors raised while staging, and for the eager path's NaN/inf
    # checks, which name the user's line)
    staging = core.is_tracing() or config.debug_checks_active
    for eqn in jaxpr.eqns:
        invals = [read(a) for a in eqn.invars]
        if staging and eqn.source_info is not None:
            with source_info(eqn.source_info):
                outs = eqn.prim.bind(*invals, **eqn.params)
        else:
            outs = eqn.prim.bind(*invals, **eqn.params)
        if eqn.prim.multiple_results:
            for v, o in zip(eqn.outvars, outs):
                env[v.id] = o
        else:
            env[eqn.outvars[0].id] = outs


def jaxpr_as_fun(closed: ClosedJaxpr):
    """A Python function that evaluates ``closed`` (eagerly, or inlined under a trace)."""

    def fun(*args):
        return eval_jaxpr(closed.jaxpr, closed.consts, *args)

    return fun
