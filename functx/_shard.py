"""``functx.Shard``: one piece of an array on one device, the items of ``Array.addressable_shards``
(JAX's ``jax.Shard``). functx arrays live on one device, so an array has one shard: the whole
array, replica 0."""

from __future__ import annotations


class Shard:
    """A piece of an array on one device (``jax.Shard``): ``device``, ``index`` (the tuple of
    slices it covers in the whole array), ``replica_id`` and ``data`` (the piece as an array,
    None for a device of another process).

    ``Shard(device, sharding, global_shape, data=None)``: ``index`` is what
    ``sharding.devices_indices_map(global_shape)`` gives ``device`` (the whole array when
    ``sharding`` is None). functx arrays live on one device: ``x.addressable_shards`` is one
    shard holding all of ``x``.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> x = jnp.arange(4.0)
      >>> [s] = x.addressable_shards
      >>> s.index, s.replica_id, s.data is x, isinstance(s, functx.Shard)
      ((slice(None, None, None),), 0, True, True)
    """

    __slots__ = ("device", "index", "replica_id", "data")

    def __init__(self, device, sharding, global_shape, data=None):
        self.device = device
        if sharding is None:
            self.index = (slice(None),) * len(global_shape)
        else:
            self.index = sharding.devices_indices_map(tuple(global_shape))[device]
        self.replica_id = 0
        self.data = data

    def __repr__(self):
        return (
            f"Shard(device={self.device!r}, index={self.index}, replica_id={self.replica_id}, "
            f"data={self.data})"
        )
