"""functx.experimental.mesh_utils against jax.experimental.mesh_utils (one CPU device here; four
host devices through XLA_FLAGS for functx)."""

from __future__ import annotations

import numpy as np
import pytest
from jax.experimental import mesh_utils as jmu

import functx
from functx.experimental import mesh_utils
from functx.sharding import Mesh, host_devices


@pytest.mark.parametrize("shape", [(1,), (1, 1), (1, 1, 1)])
def test_create_device_mesh_like_jax(shape):
    ours, theirs = mesh_utils.create_device_mesh(shape), jmu.create_device_mesh(shape)
    assert ours.shape == theirs.shape and ours.dtype == object
    assert [d.id for d in ours.flat] == [d.id for d in theirs.flat]
    assert Mesh(ours, tuple("abc"[: len(shape)])).size == 1


def test_create_device_mesh_errors_and_host_devices(monkeypatch):
    with pytest.raises(ValueError):
        mesh_utils.create_device_mesh((2,))
    with pytest.raises(ValueError):
        jmu.create_device_mesh((2,))
    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
    m = mesh_utils.create_device_mesh((2, 2))
    assert [d.id for d in m.flat] == [d.id for d in host_devices()] == [0, 1, 2, 3]
    custom = mesh_utils.create_device_mesh((4,), devices=host_devices()[::-1])
    assert [d.id for d in custom] == [3, 2, 1, 0]


def test_create_hybrid_device_mesh():
    m = mesh_utils.create_hybrid_device_mesh((1, 1), (1, 1))
    assert m.shape == (1, 1) and m[0, 0] is functx.devices()[0]
    with pytest.raises(ValueError):
        mesh_utils.create_hybrid_device_mesh((1,), (2,))
    with pytest.raises(ValueError):
        mesh_utils.create_hybrid_device_mesh((1,), (1, 1))
    assert mesh_utils.device_kind_handler_dict == {}
    assert isinstance(m, np.ndarray)
