"""``functx.experimental.shard_map``: the older home of ``shard_map``
(``jax.experimental.shard_map``), with its positional signature and ``check_rep``."""

from __future__ import annotations

from functx._shard_map import shard_map as _shard_map

__all__ = ["shard_map"]


def shard_map(f, mesh, in_specs, out_specs, check_rep: bool = True):
    """``functx.shard_map`` with JAX 0.10.2's ``jax.experimental.shard_map.shard_map`` signature.

    Arguments:
      f: the per-device function.
      mesh: the ``Mesh``.
      in_specs: a ``PartitionSpec`` per positional argument (a pytree prefix of the arguments).
      out_specs: a ``PartitionSpec`` per output (a pytree prefix of the outputs).
      check_rep: check that outputs are replicated over the mesh axes their spec leaves out.
    Returns:
      A function of the global arrays that returns the global outputs.
    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> from functx.experimental.shard_map import shard_map
      >>> from functx.sharding import PartitionSpec as P
      >>> mesh = functx.make_mesh((1,), ("i",))
      >>> shard_map(lambda x: 2 * x, mesh, in_specs=P("i"), out_specs=P("i"))(jnp.arange(3.0))
      Array([0., 2., 4.], dtype=float32)
    """
    return _shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs, check_vma=check_rep)
