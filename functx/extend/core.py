"""``functx.extend.core``: user primitives and the pieces of a Jaxpr (JAX's
``jax.extend.core``).

A ``Primitive`` made here runs eagerly through its ``def_impl`` function and is staged by every
trace (``make_jaxpr``, ``jit``, ``grad``, ``vmap``) through its ``def_abstract_eval`` function.
functx has no ``jax.interpreters`` through which to give it a derivative, batching or lowering
rule, so ``grad``, ``vmap`` and a ``jit`` that compiles it raise ``NotImplementedError`` naming
the primitive, as JAX does for a primitive without those rules.
"""

from __future__ import annotations

import functools

from functx import core as _core
from functx.array import Array
from functx.core import ClosedJaxpr, Eqn as JaxprEqn, Jaxpr, Literal, Var
from functx.errors import (
    InconclusiveDimensionOperation,
    JaxprTypeError,
    missing_name_hook as _missing_name_hook,
)
from functx.interpreter import eval_jaxpr

__all__ = [
    "ClosedJaxpr",
    "InconclusiveDimensionOperation",
    "Jaxpr",
    "JaxprEqn",
    "JaxprTypeError",
    "Literal",
    "Primitive",
    "Var",
    "check_jaxpr",
    "jaxpr_as_fun",
]


class Primitive(_core.Primitive):
    """A primitive operation of the user's (``jax.extend.core.Primitive``): ``def_impl`` gives
    what it computes on arrays, ``def_abstract_eval`` the shapes and dtypes of its results
    (``functx.core.ShapedArray``s) from its operands', and ``bind(*args, **params)`` applies it:
    at once outside any trace, else as an equation of the Jaxpr being traced.

    Arguments:
      name: the primitive's name, as Jaxprs print it.

    Differences from JAX: there is no ``jax.interpreters`` to register a derivative, batching
    or lowering rule in, so ``grad``, ``vmap`` and ``jit`` (whose compiler needs a lowering) of
    it raise ``NotImplementedError`` naming it.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> from functx.extend.core import Primitive
      >>> twice_p = Primitive("twice")
      >>> twice_p.def_impl(lambda x: x * 2)
      <function <lambda> at ...>
      >>> twice_p.def_abstract_eval(lambda x: functx.core.ShapedArray(x.shape, x.dtype))
      <function <lambda> at ...>
      >>> twice_p.bind(jnp.arange(3.0))
      Array([0., 2., 4.], dtype=float32)
      >>> print(functx.make_jaxpr(twice_p.bind)(jnp.arange(3.0)))
      { lambda ; a:f32[3]. let b:f32[3] = twice a in (b,) }
    """

    def __init__(self, name: str):
        super().__init__(name)  # (``p.multiple_results = True`` for several results, as in JAX)

    def def_impl(self, impl):
        """Give the function that computes the primitive: ``impl(*arrays, **params)``, called
        with functx Arrays, returns an array (a list of them with ``multiple_results``).

        Arguments:
          impl: the function.
        Returns:
          ``impl`` (so that this is usable as a decorator).
        Example:
          >>> from functx.extend.core import Primitive
          >>> p = Primitive("neg")
          >>> _ = p.def_impl(lambda x: -x)
          >>> p.impl(2.0)
          Array(-2., dtype=float32, weak_type=True)
        """

        def run(*values, **params):
            return impl(*[Array.from_value(v) for v in values], **params)

        self.impl = run
        return impl

    def def_abstract_eval(self, abstract_eval):
        """Give the function of the operands' ``ShapedArray``s (and the parameters) that returns
        the result's ``ShapedArray`` (a list with ``multiple_results``).

        Arguments:
          abstract_eval: the function.
        Returns:
          ``abstract_eval``.
        Example:
          >>> import functx
          >>> from functx.extend.core import Primitive
          >>> p = Primitive("first_row")
          >>> _ = p.def_abstract_eval(lambda x: functx.core.ShapedArray(x.shape[1:], x.dtype))
          >>> p.abstract_eval(functx.core.ShapedArray((2, 3), "float32"))
          ShapedArray(float32[3])
        """
        self.abstract_eval = abstract_eval
        return abstract_eval

    def def_effectful_abstract_eval(self, effectful_abstract_eval):
        """Give an abstract evaluation that also returns the primitive's effects, as
        ``(result ShapedArray, effects)``; a primitive with effects is never dropped as unused
        (``eqn.effects`` names it).

        Arguments:
          effectful_abstract_eval: the function, returning ``(aval, effects)``.
        Returns:
          ``effectful_abstract_eval``.
        Example:
          >>> import functx
          >>> from functx.extend.core import Primitive
          >>> p = Primitive("log_it")
          >>> _ = p.def_effectful_abstract_eval(lambda x: (x, {"io"}))
          >>> p.abstract_eval(functx.core.ShapedArray((2,), "float32"))
          ShapedArray(float32[2])
        """

        def abstract_eval(*avals, **params):
            aval, effects = effectful_abstract_eval(*avals, **params)
            if effects:
                _core.effectful_primitives.add(self)
            return aval

        self.abstract_eval = abstract_eval
        return effectful_abstract_eval

    def __str__(self):
        return self.name


def check_jaxpr(jaxpr) -> None:
    """Check a Jaxpr's types (``jax.extend.core.check_jaxpr``): each variable defined once
    before its use, each equation's output types those its primitive infers.

    Arguments:
      jaxpr: a ``Jaxpr`` (or a ``ClosedJaxpr``).
    Returns:
      None; ``JaxprTypeError`` (a TypeError) names the first problem.
    Example:
      >>> import functx
      >>> from functx.extend.core import check_jaxpr
      >>> check_jaxpr(functx.make_jaxpr(lambda x: x * 2.0)(1.0).jaxpr)
    """
    _core.typecheck_jaxpr(jaxpr)


def jaxpr_as_fun(closed_jaxpr, *args):
    """The function a ``ClosedJaxpr`` computes (``jax.extend.core.jaxpr_as_fun``), returning
    the list of its outputs; arguments given here are bound first (JAX's curried form:
    ``jaxpr_as_fun(cj, x)()`` is ``jaxpr_as_fun(cj)(x)``). Eager on arrays; staged into an
    enclosing trace.

    Arguments:
      closed_jaxpr: a ``ClosedJaxpr``.
      *args: leading inputs to bind (optional).
    Returns:
      the function of the remaining inputs.
    Example:
      >>> import functx
      >>> from functx.extend.core import jaxpr_as_fun
      >>> cj = functx.make_jaxpr(lambda x: (x + 1.0, x * 2.0))(1.0)
      >>> jaxpr_as_fun(cj)(3.0)
      [Array(4., dtype=float32, weak_type=True), Array(6., dtype=float32, weak_type=True)]
    """

    def fun(*inputs):
        return list(eval_jaxpr(closed_jaxpr.jaxpr, closed_jaxpr.consts, *inputs))

    return functools.partial(fun, *args)


__getattr__ = _missing_name_hook(__name__)
