"""``functx.custom_batching``: JAX's ``jax.custom_batching``: functions with their own ``vmap``
rule (``custom_vmap``) and ``sequential_vmap``.

A ``custom_vmap`` call is one equation of the primitive ``custom_vmap_call``, holding the traced
function (run eagerly, under ``jit`` inlined, differentiated through) and the user's rule,
which ``vmap`` calls instead of batching the function. Its derivative is the function's own:
``vmap`` of a derivative batches the differentiated function, not the rule (JAX batches it with
the rule's derivative).
"""

from __future__ import annotations

import functools
import inspect

from functx import primitives as P
from functx.control.custom_derivatives import _eval_call, _inline_call
from functx.control.scan import map as _lax_map
from functx.core import ClosedJaxpr, Jaxpr, Primitive
from functx.errors import FunctxTypeError, FunctxValueError, UnsupportedError, missing_name_hook
from functx.lowering.rules import lowerings
from functx.source_info import where
from functx.tracing import get_aval, trace_flat, tree_flatten, tree_unflatten
from functx.transforms import jvp as J, vmap as V
from functx.tree_util import tree_map

custom_vmap_call_p = Primitive("custom_vmap_call", multiple_results=True, group="custom")
P.registry["custom_vmap_call"] = custom_vmap_call_p
custom_vmap_call_p.abstract_eval = lambda *avals, call_jaxpr, **_: list(call_jaxpr.out_avals)
custom_vmap_call_p.impl = _eval_call


def _jvp(primals, tangents, *, call_jaxpr, **_):
    return J.jvp_eval(call_jaxpr.jaxpr, call_jaxpr.consts, list(primals), list(tangents))


def _batch(args, dims, *, call_jaxpr, rule, num_consts, in_tree, out_tree, name):
    if any(d is not None for d in dims[:num_consts]):
        raise UnsupportedError(
            f"custom_vmap function {name} closes over a value that vmap batches{where()}; pass "
            "that value to the function as an argument instead"
        )
    size = V.axis_size_of(args, dims)
    xs = [V.moveaxis(x, d, 0) if d not in (None, 0) else x for x, d in zip(args, dims)]
    xs, xdims = xs[num_consts:], dims[num_consts:]
    in_batched = tree_unflatten(in_tree, [d is not None for d in xdims])
    res = rule(size, list(in_batched), *tree_unflatten(in_tree, xs))
    rule_name = getattr(rule, "__name__", "<unnamed rule>")
    if not isinstance(res, (tuple, list)) or len(res) != 2:
        raise FunctxTypeError(
            f"custom vmap rule ({rule_name}) must return a pair (batched output, output batching "
            f"specification), got {type(res).__name__}{where()}"
        )
    out, out_batched = res
    outs, tree1 = tree_flatten(out)
    flags, tree2 = tree_flatten(out_batched)
    if tree1 != tree2:
        raise FunctxValueError(
            f"structure of output value and output batching specification returned by custom "
            f"vmap rule ({rule_name}) do not match.\nOutput values: {tree1}\nBatching spec: "
            f"{tree2}{where()}"
        )
    if tree1 != out_tree:
        raise FunctxValueError(
            f"structure of output returned by custom vmap rule ({rule_name}) does not match "
            f"that of original custom-vmapped function.\nOriginal output: {out_tree}\nRule "
            f"output: {tree1}{where()}"
        )
    for o, b, a in zip(outs, flags, call_jaxpr.out_avals):
        want = (size, *a.shape) if b else a.shape
        if get_aval(o).shape != tuple(want):
            raise FunctxValueError(
                f"custom vmap rule ({rule_name}) returned an output of shape "
                f"{get_aval(o).str_short()} where {'batched' if b else 'unbatched'} shape "
                f"{tuple(want)} was expected{where()}"
            )
    return outs, [0 if b else None for b in flags]


J.jvp_rules[custom_vmap_call_p] = _jvp
V.batching_rules[custom_vmap_call_p] = _batch
lowerings[custom_vmap_call_p] = _inline_call


class custom_vmap:
    """A function with its own ``vmap`` rule (JAX's ``jax.custom_batching.custom_vmap``).

    Arguments:
      fun: the function (of positional arguments; keyword ones are bound to positions).
    Returns:
      the wrapped function; ``def_vmap(rule)`` sets the rule,
      ``rule(axis_size, in_batched, *args) -> (out, out_batched)``: ``in_batched`` holds one
      pytree of bools per argument (batched arguments have the batch axis first), and
      ``out_batched`` says which leaves of ``out`` carry it.

    Differences from JAX: the derivative is the function's own, so ``vmap`` of a ``jvp`` batches the
    differentiated function rather than JAX's derivative of the rule, and ``grad`` works (JAX
    0.10.2's fails); closed-over values that ``vmap`` batches raise UnsupportedError (JAX asserts).

    Example:
      >>> import functx, functx.numpy as jnp
      >>> from functx.custom_batching import custom_vmap
      >>> @custom_vmap
      ... def f(x):
      ...     return jnp.sin(x)
      >>> @f.def_vmap
      ... def rule(axis_size, in_batched, xs):
      ...     return jnp.cos(xs), in_batched[0]
      >>> f(jnp.float32(0.0)), functx.vmap(f)(jnp.zeros(2))
      (Array(0., dtype=float32), Array([1., 1.], dtype=float32))
    """

    def __init__(self, fun):
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.vmap_rule = None

    def def_vmap(self, vmap_rule):
        """Set the vmap rule (see the class); returns ``vmap_rule``."""
        self.vmap_rule = vmap_rule
        return vmap_rule

    def __call__(self, *args, **kwargs):
        name = getattr(self.fun, "__name__", type(self.fun).__name__)
        if kwargs:
            try:
                ba = inspect.signature(self.fun).bind(*args, **kwargs)
                ba.apply_defaults()
            except TypeError as e:
                raise FunctxTypeError(
                    f"The input arguments to the custom_vmap-decorated function {name} could "
                    f"not be resolved to positional-only arguments. Binding failed with the "
                    f"error:\n{e}"
                ) from e
            if ba.kwargs:
                raise FunctxTypeError(
                    f"The input arguments to the custom_vmap-decorated function {name} could "
                    f"not be resolved to positional-only arguments{where()}"
                )
            args = ba.args
        if not self.vmap_rule:
            raise AttributeError(
                f"No batching rule defined for custom_vmap function {name} using def_vmap."
            )
        leaves, in_tree = tree_flatten(tuple(args))
        fun = self.fun

        def flat(*xs):
            out_leaves, out_tree = tree_flatten(fun(*tree_unflatten(in_tree, list(xs))))
            return out_leaves, out_tree

        closed, out_tree = trace_flat(flat, [get_aval(x) for x in leaves])
        j = closed.jaxpr
        call = ClosedJaxpr(Jaxpr([], j.constvars + j.invars, j.eqns, j.outvars), [])
        consts = closed.consts
        outs = custom_vmap_call_p.bind(
            *consts,
            *leaves,
            call_jaxpr=call,
            rule=self.vmap_rule,
            num_consts=len(consts),
            in_tree=in_tree,
            out_tree=out_tree,
            name=name,
        )
        return tree_unflatten(out_tree, outs)


def sequential_vmap(f):
    """``f`` whose ``vmap`` runs the examples one after another with ``lax.map`` (JAX's
    ``jax.custom_batching.sequential_vmap``); unbatched arguments are shared by every step.

    Arguments:
      f: the function.
    Returns:
      a ``custom_vmap`` of ``f``.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> from functx.custom_batching import sequential_vmap
      >>> g = sequential_vmap(lambda x, y: x * y)
      >>> functx.vmap(g, in_axes=(0, None))(jnp.arange(3.0), jnp.float32(2))
      Array([0., 2., 4.], dtype=float32)
    """
    f = custom_vmap(f)

    @f.def_vmap
    def rule(axis_size, in_batched, *args):
        del axis_size
        flags, _ = tree_flatten(in_batched)
        leaves, tree = tree_flatten(list(args))
        mapped = [x for x, b in zip(leaves, flags) if b]

        def one(ms):
            it = iter(ms)
            full = [next(it) if b else x for x, b in zip(leaves, flags)]
            return f(*tree_unflatten(tree, full))

        out = _lax_map(one, mapped)
        return out, tree_map(lambda _: True, out)

    return f


__getattr__ = missing_name_hook(__name__)

__all__ = ["custom_vmap", "custom_vmap_call_p", "sequential_vmap"]
