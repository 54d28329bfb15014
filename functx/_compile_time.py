"""``functx.ensure_compile_time_eval``: operations on concrete values run at once, even while a
transformation (``jit``, ``grad``, ``vmap``, ...) is tracing.

The block pushes a trace (``core.active_trace``) that sorts each primitive call: with no tracer
among its operands it runs eagerly (with no trace active, as outside any transformation), else
it goes to the trace beneath, as without the block.
"""

from __future__ import annotations

import contextlib

from functx import core
from functx.tracing import Tracer


class _CompileTimeEval:
    """The trace of an ``ensure_compile_time_eval`` block."""

    def process_primitive(self, prim, args, params):
        stack = core.trace_state.stack
        at = len(stack) - 1 - stack[::-1].index(self)
        if any(isinstance(a, Tracer) for a in args):
            # the traces beneath handle it (this one steps aside while they do)
            core.trace_state.stack = stack[:at] + stack[at + 1 :]
        else:
            core.trace_state.stack = []
        try:
            return core.bind(prim, args, params)
        finally:
            core.trace_state.stack = stack


@contextlib.contextmanager
def ensure_compile_time_eval():
    """``jax.ensure_compile_time_eval()``: inside the block, an operation whose operands are all
    concrete (arrays, NumPy values, Python scalars) is computed at once, even under ``jit`` or
    another transformation, so its result is a concrete array Python code may branch on;
    operations on traced values are staged as usual.

    Differences from JAX: a ``custom_jvp``/``custom_vjp`` function still traces its body
    abstractly inside the block (JAX calls it on the concrete values).

    Arguments:
      none.
    Returns:
      a context manager.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> @functx.jit
      ... def f(x):
      ...     with functx.ensure_compile_time_eval():
      ...         y = jnp.sin(2.0)  # computed now, not staged
      ...         big = bool(y > 0.5)
      ...     return x * y if big else x
      >>> f(jnp.float32(1.0))
      Array(0.9092974, dtype=float32)
    """
    with core.active_trace(_CompileTimeEval()):
        yield


__all__ = ["ensure_compile_time_eval"]
