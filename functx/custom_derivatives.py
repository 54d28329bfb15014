"""``functx.custom_derivatives``: JAX's ``jax.custom_derivatives`` module: the custom
derivative decorators, their primitives, ``closure_convert`` and ``custom_gradient``.

``closure_convert`` traces a function once and hoists the traced values it closes over
(tracers of an outer transformation) into explicit arguments, so they can be passed through a
``custom_vjp``'s residuals. ``custom_gradient`` builds on it: the backward function the user
returns is closure-converted at the forward pass, and its hoisted values become the residuals.
"""

from __future__ import annotations

import functools

from functx.control.custom_derivatives import (
    SymbolicZero as SymbolicZero,
    custom_jvp as custom_jvp,
    custom_jvp_call_p as custom_jvp_call_p,
    custom_vjp as custom_vjp,
    custom_vjp_call_p as custom_vjp_call_p,
)
from functx.errors import FunctxTypeError, missing_name_hook
from functx.interpreter import eval_jaxpr
from functx.source_info import where
from functx.tracing import Tracer, get_aval, trace_flat, tree_flatten, tree_unflatten


def _convert(fun, in_tree, in_avals, what):
    """(converted_fun, hoisted): ``fun`` traced at ``in_avals``; the tracers it closes over are
    hoisted into trailing arguments, concrete constants stay inside."""

    def flat(*xs):
        out = fun(*tree_unflatten(in_tree, list(xs)))
        leaves, out_tree = tree_flatten(out)
        return leaves, out_tree

    closed, out_tree = trace_flat(flat, in_avals)
    consts = list(closed.consts)
    hoist = [isinstance(c, Tracer) for c in consts]
    hoisted = [c for c, h in zip(consts, hoist) if h]
    jaxpr = closed.jaxpr

    def converted_fun(*args_and_consts):
        n = len(args_and_consts) - len(hoisted)
        args, given = args_and_consts[:n], iter(args_and_consts[n:])
        leaves, tree = tree_flatten(tuple(args))
        if tree != in_tree:
            raise FunctxTypeError(
                f"The inputs to the closure produced by {what} must have the same Pytree "
                f"structure as the example arguments passed when {what} was called. Expected "
                f"{in_tree}, but got {tree}{where()}"
            )
        full = [next(given) if h else c for c, h in zip(consts, hoist)]
        return tree_unflatten(out_tree, eval_jaxpr(jaxpr, full, *leaves))

    return converted_fun, hoisted


def closure_convert(fun, *example_args):
    """Closure-convert ``fun`` (JAX's ``jax.closure_convert``): trace it at the example
    arguments' shapes and dtypes, and hoist the traced values it closes over (values being
    differentiated, say) into explicit trailing arguments.

    Arguments:
      fun: the function to convert.
      *example_args: arguments of the shapes and dtypes it will be called with.
    Returns:
      ``(converted_fun, hoisted)``: ``converted_fun(*args, *hoisted)`` computes ``fun(*args)``;
      ``hoisted`` lists the closed-over traced values (empty outside a transformation).
    Example:
      >>> import functx
      >>> g, consts = functx.closure_convert(lambda x: x * 3.0, 1.0)
      >>> g(2.0, *consts), consts
      (Array(6., dtype=float32, weak_type=True), [])
    """
    leaves, in_tree = tree_flatten(example_args)
    return _convert(fun, in_tree, [get_aval(x) for x in leaves], "closure_convert")


def custom_gradient(fun):
    """Define a function and its gradient together (JAX's ``jax.custom_gradient``): ``fun``
    returns ``(value, vjp_fn)``, where ``vjp_fn(ct)`` gives one cotangent per argument and may
    close over values of the forward pass.

    Arguments:
      fun: ``fun(*args) -> (output, vjp_fn)``.
    Returns:
      a function of the same arguments returning ``output``, differentiated through ``vjp_fn``.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> @functx.custom_gradient
      ... def f(x):
      ...     y = jnp.sin(x)
      ...     return y, lambda g: (g * 2.0 * y,)
      >>> functx.grad(f)(0.5)
      Array(0.9588511, dtype=float32, weak_type=True)
    """

    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        if kwargs:
            raise FunctxTypeError(
                f"custom_gradient function {getattr(fun, '__name__', fun)} takes positional "
                f"arguments only{where()}"
            )
        box = []

        def primal(*xs):
            return fun(*xs)[0]

        def fwd(*xs):
            out, rule = fun(*xs)
            leaves, tree = tree_flatten(out)
            ct_avals = [get_aval(x) for x in leaves]
            ct_tree = tree_flatten((tree_unflatten(tree, leaves),))[1]
            conv, hoisted = _convert(rule, ct_tree, ct_avals, "custom_gradient")
            box[:] = [conv]
            return out, hoisted

        def bwd(hoisted, ct):
            cts = box[0](ct, *hoisted)
            if isinstance(cts, list):
                return tuple(cts)
            return cts if isinstance(cts, tuple) else (cts,)  # (one argument: a bare value)

        f = custom_vjp(primal)
        f.fwd, f.bwd = fwd, bwd  # a fresh function per call: no traced rule is stale
        return f(*args)

    return wrapped


__getattr__ = missing_name_hook(__name__)

__all__ = [
    "SymbolicZero",
    "closure_convert",
    "custom_gradient",
    "custom_jvp",
    "custom_jvp_call_p",
    "custom_vjp",
    "custom_vjp_call_p",
]
