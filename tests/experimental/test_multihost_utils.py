"""functx.experimental.multihost_utils in one process against jax.experimental.multihost_utils
(tests/test_distributed.py runs functx over processes)."""

from __future__ import annotations

import numpy as np
import pytest
from jax.experimental import multihost_utils as jmh

import functx.numpy as fnp
from functx.experimental import multihost_utils as mh

TREE = {"a": np.arange(3.0, dtype=np.float32), "b": np.float32(2.0), "c": np.int32([1, 2])}


@pytest.mark.parametrize("tiled", [False, True])
def test_process_allgather_like_jax(tiled):
    ours, theirs = mh.process_allgather(TREE, tiled=tiled), jmh.process_allgather(TREE, tiled=tiled)
    for k in TREE:
        assert isinstance(ours[k], np.ndarray)
        assert ours[k].shape == theirs[k].shape and ours[k].dtype == theirs[k].dtype, k
        np.testing.assert_array_equal(ours[k], theirs[k])
    assert mh.process_allgather(fnp.ones((2, 3)), tiled=False).shape == (1, 2, 3)


def test_broadcast_sync_assert():
    ours, theirs = mh.broadcast_one_to_all(TREE), jmh.broadcast_one_to_all(TREE)
    for k in TREE:
        assert isinstance(ours[k], np.ndarray) and ours[k].dtype == theirs[k].dtype
        np.testing.assert_array_equal(ours[k], theirs[k])
    assert mh.sync_global_devices("step") is None
    mh.assert_equal(TREE, "differ")
