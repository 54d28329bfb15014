"""``functx.experimental.pjit``: ``jit`` with shardings for the inputs and outputs
(``jax.experimental.pjit``)."""

from __future__ import annotations

import functools

from functx import sharding, tree_util
from functx.devices import transfer
from functx.jit import jit

__all__ = ["pjit"]

_UNSPECIFIED = object()


def pjit(
    fun,
    in_shardings=_UNSPECIFIED,
    out_shardings=_UNSPECIFIED,
    static_argnums=None,
    static_argnames=None,
    donate_argnums=None,
    donate_argnames=None,
    keep_unused: bool = False,
    device=None,
    backend=None,
    inline: bool = False,
    compiler_options=None,
):
    """``functx.jit(fun)`` with the layouts of its inputs and outputs given
    (``jax.experimental.pjit.pjit``).

    functx arrays are whole on one device, so the values are ``jit(fun)``'s; the shardings are
    checked as JAX checks them (a tree prefix of the positional arguments / the outputs, leaves
    ``Sharding`` objects, ``PartitionSpec`` objects naming axes of the mesh in context, or
    None), on each call.

    Arguments:
      fun: the function.
      in_shardings: the positional arguments' shardings (default: unspecified).
      out_shardings: the outputs' shardings (default: unspecified).
      static_argnums, static_argnames, donate_argnums, donate_argnames, keep_unused, backend,
        inline, compiler_options: as ``functx.jit``'s.
      device: a device the arguments are put on before the call (None: where they are).
    Returns:
      The jitted function.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> from functx.experimental.pjit import pjit
      >>> from functx.sharding import PartitionSpec as P
      >>> with functx.set_mesh(functx.make_mesh((1,), ("x",))):
      ...     pjit(lambda a: a * 2, in_shardings=P("x"), out_shardings=P("x"))(jnp.ones(2))
      Array([2., 2.], dtype=float32)
    """
    jitted = jit(
        fun,
        static_argnums=() if static_argnums is None else static_argnums,
        static_argnames=() if static_argnames is None else static_argnames,
        donate_argnums=donate_argnums,
        donate_argnames=donate_argnames,
        backend=backend,
        keep_unused=keep_unused,
        inline=inline,
        compiler_options=compiler_options,
    )

    @functools.wraps(fun)
    def run(*args, **kwargs):
        if in_shardings is not _UNSPECIFIED:
            sharding.check_layout("pjit in_shardings", args, in_shardings, none_ok=True)
        if device is not None:  # (the array arguments; static ones must stay hashable)
            args = tree_util.tree_map(
                lambda v: transfer.device_put(v, device) if hasattr(v, "shape") else v, args
            )
        out = jitted(*args, **kwargs)
        if out_shardings is not _UNSPECIFIED:
            sharding.check_layout("pjit out_shardings", out, out_shardings, none_ok=True)
        return out

    run.lower = jitted.lower
    return run
