"""functx.sharding (Mesh, PartitionSpec, NamedSharding, SingleDeviceSharding, make_mesh,
device_put with a sharding) against jax.sharding, and functx.shard_map in one process against
JAX's shard_map on JAX CPU devices (JAX needs XLA_FLAGS before it starts, so its reference runs
in a subprocess once per session)."""

from __future__ import annotations

import doctest
import re

import jax
import numpy as np
import pytest

import functx
from functx import sharding as fs
from functx.sharding import Mesh, NamedSharding, PartitionSpec as P, SingleDeviceSharding

HOST4 = "--xla_force_host_platform_device_count=4"


@pytest.fixture
def host4(monkeypatch):
    """Four host devices for functx (JAX in this process keeps its one)."""
    monkeypatch.setenv("XLA_FLAGS", HOST4)
    return fs.host_devices()


# --- PartitionSpec, Mesh, NamedSharding against jax.sharding --------------------------------------
SPECS = [(), ("x",), ("x", None), (None, ("x", "y")), (("x",),), ("x", None, ("x", "y"))]


@pytest.mark.parametrize("entries", SPECS)
def test_partition_spec_matches_jax(entries):
    ours, theirs = P(*entries), jax.sharding.PartitionSpec(*entries)
    assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
    assert len(ours) == len(theirs) and list(ours) == list(theirs)
    assert functx.P is P and fs.PartitionSpec is P
    assert ours == P(*entries) and hash(ours) == hash(P(*entries))
    assert (ours == P(*entries, None)) == (theirs == jax.sharding.PartitionSpec(*entries, None))


def test_mesh_reprs_shapes_and_errors_match_jax(host4):
    jd = jax.devices()[:1]
    for shape, names in [((1,), ("x",)), ((1, 1), ("a", "b"))]:
        ours = Mesh(np.array(host4[:1]).reshape(shape), names)
        theirs = jax.sharding.Mesh(np.array(jd).reshape(shape), names)
        assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
        assert ours.shape == theirs.shape and ours.axis_names == theirs.axis_names
        assert ours.size == theirs.size and ours.axis_sizes == theirs.axis_sizes
    m = functx.make_mesh((2, 2), ("x", "y"))
    assert (
        repr(m) == "Mesh(axis_sizes=(2, 2), axis_names=('x', 'y'), axis_types=(Explicit, Explicit))"
    )
    assert str(m) == "Mesh('x': 2, 'y': 2, axis_types=(Explicit, Explicit))"
    assert [d.id for d in m.devices.flat] == [0, 1, 2, 3] and m == functx.make_mesh(
        (2, 2), ("x", "y")
    )
    assert Mesh(host4, "i").axis_names == ("i",)
    with m:
        assert fs.current_mesh() is m
    assert fs.current_mesh() is None
    for ours, theirs in [
        (lambda: Mesh(host4, ("x", "y")), lambda: jax.sharding.Mesh(jd, ("x", "y"))),
        (lambda: functx.make_mesh((8,), ("x",)), lambda: jax.make_mesh((8,), ("x",))),
    ]:
        with pytest.raises(ValueError) as e_theirs:
            theirs()
        with pytest.raises(ValueError) as e_ours:
            ours()
        assert re.sub(r"\d", "N", str(e_ours.value)) == re.sub(r"\d", "N", str(e_theirs.value))


def test_named_sharding_matches_jax(host4):
    m = functx.make_mesh((2, 2), ("x", "y"))
    s = NamedSharding(m, P("x", ("y",)))
    assert repr(s) == (
        "NamedSharding(mesh=Mesh('x': 2, 'y': 2, axis_types=(Explicit, Explicit)), "
        "spec=P('x', 'y'), memory_kind=device)"
    )
    assert s.shard_shape((4, 6)) == (2, 3) and s.num_devices == 4 and not s.is_fully_replicated
    assert NamedSharding(m, P()).is_fully_replicated and s == NamedSharding(m, P("x", "y"))
    assert s.devices_indices_map((4, 6))[host4[3]] == (slice(2, 4), slice(3, 6))
    with pytest.raises(ValueError, match=r"Resource axis: z of P\('z',\) is not found in mesh"):
        NamedSharding(m, P("z"))
    with pytest.raises(fs.DuplicateSpecError, match="duplicate entries for `x`"):
        NamedSharding(m, P("x", "x"))
    with pytest.raises(ValueError, match="partitioned 4 times"):
        functx.device_put(np.arange(6.0), NamedSharding(m, P(("x", "y"))))
    x = functx.device_put(np.arange(8.0), NamedSharding(m, P(("x", "y"))))
    assert isinstance(x, functx.Array) and x.dtype == np.float64
    one = SingleDeviceSharding(functx.devices("cpu")[0])
    theirs = jax.sharding.SingleDeviceSharding(jax.devices("cpu")[0])
    assert repr(one) == repr(theirs) and one.num_devices == 1
    assert functx.device_put(np.ones(2, np.float32), one).dtype == np.float32
    # a pytree of shardings
    y = functx.device_put({"a": np.ones(2), "b": np.zeros(4)}, {"a": one, "b": s.mesh and one})
    assert set(y) == {"a", "b"}


def test_docstring_examples():
    from functx import distributed

    for mod in (fs, distributed):
        res = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert res.failed == 0 and res.attempted > 0, mod.__name__
