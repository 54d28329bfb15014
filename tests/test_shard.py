"""functx.Shard and Array.addressable_shards / global_shards against JAX's on one device."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import functx


@pytest.mark.parametrize("shape", [(), (4,), (2, 3)])
def test_addressable_shards_as_jax(shape):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    ours, theirs = functx.numpy.asarray(x), jax.numpy.asarray(x)
    for attr in ("addressable_shards", "global_shards"):
        [a], [b] = getattr(ours, attr), getattr(theirs, attr)
        assert isinstance(a, functx.Shard)
        assert (a.index, a.replica_id) == (b.index, b.replica_id)
        assert a.device == ours.device and a.data is ours
        np.testing.assert_array_equal(np.asarray(a.data), np.asarray(b.data))
    assert repr(ours.addressable_shards[0]) == repr(theirs.addressable_shards[0])


def test_shard_from_a_sharding():
    dev = functx.numpy.ones(2).device  # (functx.devices() would import torch: seconds)
    s = functx.Shard(dev, functx.sharding.SingleDeviceSharding(dev), (2, 5))
    assert s.index == (slice(None), slice(None)) and s.data is None and s.device is dev
