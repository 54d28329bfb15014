"""functx.experimental.shard_alike against jax.experimental.shard_alike."""

from __future__ import annotations

import numpy as np
import pytest
from jax.experimental.shard_alike import shard_alike as jshard_alike

import functx
from functx.experimental.shard_alike import shard_alike


def test_shard_alike_like_jax():
    x, y = np.ones(3, np.float32), np.zeros(3, np.int32)
    ours, theirs = shard_alike(x, y), jshard_alike(x, y)
    for a, b in zip(ours, theirs):
        assert isinstance(a, functx.Array) and a.dtype == b.dtype
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    for bad in [(x, np.ones(4)), ({"a": x}, x), (np.ones(3), 1.0)]:
        with pytest.raises(ValueError):
            jshard_alike(*bad)
        with pytest.raises(ValueError):
            shard_alike(*bad)
    g = functx.grad(lambda v: sum(t.sum() for t in shard_alike(v, 2 * v)))(x)
    np.testing.assert_array_equal(np.asarray(g), np.full(3, 3.0))
