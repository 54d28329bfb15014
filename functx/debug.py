"""``functx.debug``: printing and callbacks on runtime values, inside ``jit``, ``vmap``, ``grad``
and control flow (JAX's ``jax.debug``).

Each call records a ``debug_callback`` equation (``functx/control/callbacks.py``): eagerly it
runs at once; under ``jit`` the compiled program calls it as a host step, in program order, with
the values the program computed; under ``vmap`` it runs once per example; under ``grad`` it
prints the forward pass's values once.
"""

from __future__ import annotations

import builtins
import string

from functx.control.callbacks import debug_callback
from functx.errors import FunctxValueError


def callback(callback, *args, ordered=False, partitioned=False, **kwargs):
    """Call ``callback(*args, **kwargs)`` on the runtime values of ``args`` (JAX's
    ``jax.debug.callback``), for its side effects; its result is ignored.

    Arguments:
      callback: a Python function; it receives functx Arrays in the pytrees of ``args``.
      *args, **kwargs: pytrees of arrays (traced or concrete).
      ordered: accepted for JAX's signature; functx runs callbacks in program order always.
      partitioned: accepted for JAX's signature (one device).
    Returns:
      None.
    Example:
      >>> def f(x):
      ...     functx.debug.callback(lambda v: print("got", v), x * 2)
      ...     return x + 1
      >>> _ = functx.jit(f)(np.float32(1.5))
      got 3.0
    """
    debug_callback(callback, *args, ordered=ordered, partitioned=partitioned, **kwargs)


def _check_format(fmt, args, kwargs):
    """The format string's fields must name the arguments given (JAX raises ValueError)."""
    if not isinstance(fmt, str):
        raise FunctxValueError(f"debug.print: fmt must be a str, got {type(fmt).__name__}")
    for _, field, _, _ in string.Formatter().parse(fmt):
        if field is None:
            continue
        name = field.split(".")[0].split("[")[0]
        if name == "" or name.isdigit():
            continue
        if name not in kwargs:
            raise FunctxValueError(f"debug.print: no keyword argument {name!r} for {fmt!r}")


def print(fmt: str, *args, ordered: bool = False, **kwargs) -> None:  # noqa: A001
    """Print ``fmt.format(*args, **kwargs)`` with the runtime values of the arrays (JAX's
    ``jax.debug.print``): from compiled code under ``jit``, once per example under ``vmap``,
    the forward values under ``grad``, every iteration inside ``scan``/``while_loop``.

    Arguments:
      fmt: a ``str.format`` format string.
      *args, **kwargs: pytrees of arrays (or anything else) to format.
      ordered: accepted for JAX's signature; functx prints in program order always.
    Returns:
      None.
    Example:
      >>> @functx.jit
      ... def f(x):
      ...     functx.debug.print("x = {}", x)
      ...     return x * 2
      >>> _ = f(np.arange(3.0, dtype=np.float32))
      x = [0. 1. 2.]
    """
    _check_format(fmt, args, kwargs)

    def debug_print(*a, **kw):
        builtins.print(fmt.format(*a, **kw))

    debug_callback(debug_print, *args, ordered=ordered, **kwargs)


__all__ = ["callback", "print"]
