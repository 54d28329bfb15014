"""``functx.stages``: the stages of ``jit`` by name (JAX's ``jax.stages``).

``functx.jit(f)`` is a ``Wrapped``; ``.trace(*args)`` gives a ``Traced`` (the Jaxpr),
``.lower(*args)`` (or ``Traced.lower()``) a ``Lowered`` (the program's stages as text),
``Lowered.compile()`` a ``Compiled`` (callable); ``args_info`` holds ``ArgInfo`` leaves. These are
the classes those calls return, so ``isinstance`` works as in JAX.
"""

from __future__ import annotations

from typing import Protocol, Union, runtime_checkable

from functx.jit import ArgInfo, Compiled, Lowered, Traced

# The options a compiler takes (JAX's alias): functx's ``compile(compiler_options=...)`` accepts
# and ignores them.
CompilerOptions = dict[str, Union[str, bool]]  # noqa: UP007 - JAX's alias, spelled as JAX does


@runtime_checkable
class Wrapped(Protocol):
    """A function that traces, lowers and compiles for its arguments: what ``functx.jit``
    returns (JAX's ``jax.stages.Wrapped``, a protocol: any object with ``__call__``, ``trace``
    and ``lower`` is one for ``isinstance``).

    Example:
      >>> import functx
      >>> from functx.stages import Compiled, Lowered, Traced, Wrapped
      >>> f = functx.jit(lambda x: x * 2.0)
      >>> t = f.trace(1.0)
      >>> low = t.lower()
      >>> [isinstance(*p) for p in ((f, Wrapped), (t, Traced), (low, Lowered))]
      [True, True, True]
      >>> isinstance(low.compile(), Compiled), low.compile()(3.0)
      (True, Array(6., dtype=float32, weak_type=True))
    """

    def __call__(self, *args, **kwargs):
        """Run the function, tracing and compiling for these arguments when needed."""
        raise NotImplementedError

    def trace(self, *args, **kwargs) -> Traced:
        """The ``Traced`` stage for these arguments."""
        raise NotImplementedError

    def lower(self, *args, **kwargs) -> Lowered:
        """The ``Lowered`` stage for these arguments (``trace(...).lower()``)."""
        raise NotImplementedError


__all__ = ["ArgInfo", "Compiled", "CompilerOptions", "Lowered", "Traced", "Wrapped"]
