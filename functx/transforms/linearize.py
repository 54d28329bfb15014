"""linearize: jvp followed by partial evaluation into a primal Jaxpr and a linear Jaxpr.

The jvp Jaxpr computes primals and tangents together. Partial evaluation splits its equations: those
that depend only on primals form the *primal* Jaxpr, which also returns the residuals (the primal
values the tangent equations read); those that depend on tangents form the *linear* Jaxpr, a linear
function of the tangents given the residuals. ``transpose`` turns the linear Jaxpr into the backward
pass.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from functx import dtypes
from functx.core import ClosedJaxpr, Jaxpr, ShapedArray
from functx.errors import FunctxArgumentError, FunctxTypeError
from functx.interpreter import eval_jaxpr
from functx.source_info import where
from functx.tracing import get_aval, tree_flatten, tree_unflatten
from functx.transforms import passes
from functx.transforms.jvp import (
    Zero,
    as_arrays,
    cached_jvp_jaxpr,
    is_differentiable,
    tangent_aval,
    trace_user_fun,
    zeros_like_aval,
)
from functx.transforms.partial_eval import partial_eval_jaxpr
from functx.tree_util import Partial


# --- partial evaluation --------------------------------------------------------------------------
class Linearized(NamedTuple):
    primal: ClosedJaxpr  # primals -> primal outputs + residuals
    linear: Jaxpr  # residuals + nonzero tangents -> nonzero tangent outputs
    n_res: int
    out_nz: list


def partial_eval_jvp(jvp_closed: ClosedJaxpr, n_primals: int, n_primal_outs: int) -> Linearized:
    """Split a jvp Jaxpr (primals + tangents -> primal outs + tangent outs) in two: the tangents
    are the unknowns (see ``partial_eval.partial_eval_jaxpr``)."""
    j = jvp_closed.jaxpr
    n_t = len(j.invars) - n_primals
    n_tout = len(j.outvars) - n_primal_outs
    pe = partial_eval_jaxpr(
        j, [False] * n_primals + [True] * n_t, [False] * n_primal_outs + [True] * n_tout
    )
    if any(pe.out_unknowns[:n_primal_outs]):
        raise FunctxTypeError(
            "linearize: a primal output depends on a tangent; a custom_jvp "
            "rule must compute its primal output from primals only"
        )
    primal_closed = passes.dce_closed(ClosedJaxpr(pe.known, jvp_closed.consts))
    return Linearized(primal_closed, passes.dce_jaxpr(pe.unknown), len(pe.res_avals), None)


def linearize_jaxpr(closed: ClosedJaxpr, nonzeros: tuple, n_out: int):
    """jvp + partial eval of ``closed`` with tangents for the inputs marked in ``nonzeros``."""
    jvp_closed, out_nz = cached_jvp_jaxpr(closed, nonzeros)
    n_primal_outs = len(closed.out_avals)
    lin = partial_eval_jvp(jvp_closed, len(closed.in_avals), n_primal_outs)
    return lin._replace(out_nz=out_nz)


def linearize(fun, *primals, has_aux=False):
    """Evaluate ``fun`` and its linear map (jvp) at ``primals`` (``jax.linearize``); the returned
    function evaluates the jvp without recomputing the primal.

    Arguments:
      fun: a function of pytrees of float arrays.
      *primals: the point to linearize at, one value per positional argument of ``fun``.
      has_aux: ``fun`` returns ``(out, aux)``; ``aux`` is returned as is, not linearized.
    Returns:
      ``(fun(*primals), f_jvp)`` (``(out, f_jvp, aux)`` with ``has_aux``); ``f_jvp(*tangents)``
      takes one tangent per primal and returns the output tangent.

    Differences from JAX: outside ``jit`` and ``vmap``, a function that reads a concrete value (``if
    x > 0``, ``int(x)``) is traced abstractly, then again on tracers carrying the values: its Python
    body runs twice on the first call (mind side effects such as printing).

    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> y, f_jvp = functx.linearize(jnp.sin, jnp.float32(0.0))
      >>> y, f_jvp(jnp.float32(2.0))
      (Array(0., dtype=float32), Array(2., dtype=float32))
    """
    if not callable(fun):
        raise FunctxTypeError(
            f"linearize: expected a callable value, got {type(fun).__name__}{where()}"
        )
    traced, leaves = trace_user_fun(fun, primals, has_aux)
    nonzeros = tuple(is_differentiable(get_aval(x)) for x in leaves)
    lin = linearize_jaxpr(traced.closed, nonzeros, traced.n_out)
    res = as_arrays(eval_jaxpr(lin.primal.jaxpr, lin.primal.consts, *leaves))
    n_out = len(traced.closed.out_avals)
    outs, residuals = res[:n_out], res[n_out:]
    n = traced.n_out  # (the aux outputs follow; their tangents are not returned)
    out_avals = traced.closed.out_avals[:n]
    # the linear map: a pytree (``tree_util.Partial``) whose leaves are the residuals, so it may
    # be returned from and passed to transformed functions, as JAX's; ``f_jvp.func.args[0]`` is
    # its linear Jaxpr (residuals and tangents in, output tangents out)
    linear = _LinearMap(
        lin.linear, traced.in_tree, traced.out_tree, nonzeros, lin.out_nz[:n], out_avals
    )
    out = (tree_unflatten(traced.out_tree, outs[:n]), Partial(linear, list(residuals)))
    return out + (tree_unflatten(traced.aux_tree, outs[n:]),) if has_aux else out


class _LinearMap:
    """The function of ``linearize``'s result: ``(residuals, *tangents) -> output tangent``.
    ``args`` holds what it computes with (the linear Jaxpr first), as JAX's partial does."""

    def __init__(self, *args):
        self.args = args

    def __call__(self, residuals, *tangents):
        jaxpr, in_tree, out_tree, nonzeros, out_nz, out_avals = self.args
        t_leaves, t_tree = tree_flatten((tuple(tangents), {}))
        if t_tree != in_tree:
            raise FunctxTypeError(
                f"linearize: tangents must have the structure of the primals, "
                f"{in_tree}; got {t_tree}{where()}"
            )
        _check_tangents(t_leaves, nonzeros, jaxpr.invars[len(residuals) :])
        ts = [t for t, nz in zip(t_leaves, nonzeros) if nz]
        t_out = iter(as_arrays(eval_jaxpr(jaxpr, [], *residuals, *ts)))
        touts = [
            next(t_out) if nz else zeros_like_aval(tangent_aval(a))
            for nz, a in zip(out_nz, out_avals)
        ]
        return tree_unflatten(out_tree, touts)


def _check_tangents(t_leaves, nonzeros, t_vars):
    """JAX's ValueError for tangents whose types do not fit the primals: a float primal's
    tangent has its shape and dtype (a Python float stands for any float dtype), an integer or
    bool primal's is float0."""
    t_vars = iter(t_vars)
    for i, (t, nz) in enumerate(zip(t_leaves, nonzeros)):
        if isinstance(t, np.ndarray) and t.dtype == dtypes.float0:
            ta = ShapedArray(t.shape, dtypes.float0)
        else:
            ta = get_aval(t)
        if nz:
            want = next(t_vars).aval
            ok = ta.shape == want.shape and (
                ta.dtype == want.dtype or (isinstance(t, float) and want.dtype in dtypes.FLOATS)
            )
        else:
            ok = ta.dtype == dtypes.float0
        if not ok:
            raise FunctxArgumentError(  # (a ValueError, as JAX's)
                f"linearized function called on tangent values inconsistent with the original "
                f"primal values: tangent {i} is {ta.str_short()}, expected "
                f"{want.str_short() if nz else 'float0 (the primal is an integer or bool)'}"
                f"{where()}"
            )


__all__ = [
    "partial_eval_jvp",
    "linearize_jaxpr",
    "linearize",
    "Linearized",
    "Zero",
]
