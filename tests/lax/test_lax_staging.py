"""functx/lax/_staging.py (``with_sharding_constraint``, ``pcast``, ``composite``,
``shape_as_value``, ``dce_sink``, ``dtype``, the type aliases) against JAX."""

from __future__ import annotations

import typing

import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx import lax
from functx.sharding import AxisType, NamedSharding, PartitionSpec as P, SingleDeviceSharding

X = np.arange(8.0, dtype=np.float32).reshape(4, 2)


def _meshes():
    """(functx mesh, JAX mesh) pairs of one device, Auto and Explicit."""
    return {
        t: (functx.make_mesh((1,), ("x",), (getattr(AxisType, t),)),
            jax.make_mesh((1,), ("x",), axis_types=(getattr(jax.sharding.AxisType, t),)))
        for t in ("Auto", "Explicit")
    }  # fmt: skip


MESHES = _meshes()


def _both(make):
    """``make(m, mesh)`` run with functx and with JAX: (functx's result or exception class,
    JAX's)."""
    out = []
    for m, mesh in ((functx, MESHES["Auto"][0]), (jax, MESHES["Auto"][1])):
        try:
            out.append(make(m, mesh))
        except Exception as e:  # noqa: BLE001 (the class is compared)
            out.append(e)
    return out


def _ns(m, mesh, *spec):
    return m.sharding.NamedSharding(mesh, m.P(*spec))


def _wsc(m, x, s):
    return m.lax.with_sharding_constraint(x, s)


CASES = {
    "named": lambda m, mesh: _wsc(m, X, _ns(m, mesh, "x")),
    "tree": lambda m, mesh: _wsc(
        m, {"a": X, "b": X}, {"a": _ns(m, mesh), "b": _ns(m, mesh, None, "x")}
    ),
    "rank": lambda m, mesh: _wsc(m, X, _ns(m, mesh, "x", None, None)),
    "none": lambda m, mesh: _wsc(m, X, None),
    "str": lambda m, mesh: _wsc(m, X, "x"),
    "prefix": lambda m, mesh: _wsc(m, {"a": X}, [_ns(m, mesh)]),
    "spec no mesh": lambda m, mesh: _wsc(m, X, m.P("x")),
    "jit": lambda m, mesh: m.jit(lambda v: _wsc(m, v, _ns(m, mesh, "x")) * 2)(X),
}


@pytest.mark.parametrize("case", CASES)
def test_with_sharding_constraint_like_jax(case):
    ours, theirs = _both(CASES[case])
    if isinstance(theirs, Exception):
        assert isinstance(ours, type(theirs)), (ours, theirs)
        assert isinstance(ours, functx.FunctxError)
    else:
        assert not isinstance(ours, Exception), ours
        for a, b in zip(functx.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_with_sharding_constraint_explicit_axes_and_mesh_context():
    fm, jm = MESHES["Explicit"]
    with pytest.raises(ValueError, match="Explicit"):
        lax.with_sharding_constraint(X, NamedSharding(fm, P("x")))
    with pytest.raises(ValueError):
        jax.lax.with_sharding_constraint(X, jax.sharding.NamedSharding(jm, jax.P("x")))
    with functx.set_mesh(MESHES["Auto"][0]):
        assert lax.with_sharding_constraint(X, P("x")).shape == X.shape
        with pytest.raises(ValueError):
            lax.with_sharding_constraint(X, P("y"))
    out = lax.with_sharding_constraint(X, SingleDeviceSharding(functx.devices()[0]))
    np.testing.assert_array_equal(np.asarray(out), X)


def test_with_sharding_constraint_transforms():
    s = NamedSharding(MESHES["Auto"][0], P("x"))
    f = lambda v: (lax.with_sharding_constraint(v, s) ** 2).sum()  # noqa: E731
    np.testing.assert_allclose(np.asarray(functx.grad(f)(X)), 2 * X)
    v = functx.vmap(lambda r: lax.with_sharding_constraint(r, s))(X)
    np.testing.assert_array_equal(np.asarray(v), X)
    assert "with_sharding" not in str(functx.make_jaxpr(f)(X))


def test_pcast():
    f = functx.vmap(lambda v: lax.pcast(v, "i", to="varying") * 2, axis_name="i")
    np.testing.assert_array_equal(np.asarray(f(X)), 2 * X)
    mesh = functx.make_mesh((1,), ("i",))
    g = functx.shard_map(
        lambda v: lax.pcast(v, ("i",), to="reduced"), mesh=mesh, in_specs=P("i"), out_specs=P("i")
    )
    np.testing.assert_array_equal(np.asarray(g(X)), X)
    assert lax.pcast(X, (), to="varying") is X
    with pytest.raises(ValueError):  # outside shard_map, as JAX
        lax.pcast(X, "i", to="varying")
    with pytest.raises(ValueError):
        jax.lax.pcast(X, "i", to="varying")
    with pytest.raises(TypeError):
        lax.pcast(X, {"i"}, to="varying")
    with pytest.raises(ValueError):
        functx.vmap(lambda v: lax.pcast(v, "i", to="sideways"), axis_name="i")(X)
    with pytest.raises(NameError):
        functx.vmap(lambda v: lax.pcast(v, ("i", "j"), to="varying"), axis_name="i")(X)


def test_composite():
    def tangent(x, *, scale=1.0):
        return scale * fnp.sin(x) / fnp.cos(x)

    ours = lax.composite(tangent, name="my.tangent")
    theirs = jax.lax.composite(
        lambda x, *, scale=1.0: scale * jjnp.sin(x) / jjnp.cos(x), name="my.tangent"
    )
    x = np.float32([0.1, 0.7])
    np.testing.assert_allclose(
        np.asarray(ours(x, scale=2.0)), np.asarray(theirs(x, scale=2.0)), rtol=1e-6
    )
    # functx differentiates the decomposition (JAX's composite has no JVP rule: a decision)
    with pytest.raises(ValueError, match="composite"):
        jax.grad(lambda v: theirs(v).sum())(x)
    np.testing.assert_allclose(
        np.asarray(functx.jit(functx.grad(lambda v: ours(v).sum()))(x)),
        np.asarray(jax.grad(lambda v: (jjnp.sin(v) / jjnp.cos(v)).sum())(x)),
        rtol=1e-5,
    )
    assert ours.__name__ == "tangent"
    with pytest.raises(functx.errors.UnexpectedTracerError):
        functx.jit(lambda s: ours(x, scale=s))(2.0)


@pytest.mark.parametrize("shape", [(2, 3), (), (5,), (2**31, 2)])
def test_shape_as_value(shape):
    ours, theirs = lax.shape_as_value(shape), jax.lax.shape_as_value(shape)
    assert isinstance(ours, functx.Array) == isinstance(theirs, jax.Array)
    assert isinstance(ours, np.ndarray) == isinstance(theirs, np.ndarray)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


def test_dce_sink():
    assert lax.dce_sink({"a": X}) is None and jax.lax.dce_sink({"a": X}) is None
    assert functx.jit(lambda v: (lax.dce_sink(v), v + 1)[1])(X).shape == X.shape


@pytest.mark.parametrize(
    "value",
    [1.0, 1, True, 1j, np.float64, np.int8(1), "float16", np.dtype("int64"), np.ones(2), float],
)
@pytest.mark.parametrize("x64", [False, True])
def test_dtype(value, x64):
    with functx.enable_x64(x64), jax.enable_x64(x64):
        assert lax.dtype(value) == jax.lax.dtype(value)
    assert lax.dtype(fnp.ones(2, fnp.int16)) == np.int16


def test_dtype_errors():
    with pytest.raises(ValueError):
        lax.dtype(None)
    with pytest.raises(TypeError):
        lax.dtype("not a dtype")
    with pytest.raises(TypeError):
        lax.dtype(object())


def test_type_aliases():
    assert typing.get_origin(lax.PrecisionLike) is typing.Union
    assert lax.DotAlgorithmPreset in typing.get_args(lax.PrecisionLike)
    assert typing.get_args(lax.ConvGeneralDilatedDimensionNumbers)[1] is lax.ConvDimensionNumbers
    assert typing.get_origin(lax.DotDimensionNumbers) is tuple
    assert len(typing.get_args(jax.lax.PrecisionLike)) == len(typing.get_args(lax.PrecisionLike))


def test_bitcast_convert_type_p():
    assert lax.bitcast_convert_type_p is functx.primitives.registry["bitcast_convert_type"]
    out = lax.bitcast_convert_type_p.bind(fnp.ones(2, np.float32), new_dtype=np.dtype(np.int32))
    np.testing.assert_array_equal(
        np.asarray(out), np.asarray(jax.lax.bitcast_convert_type(np.ones(2, np.float32), np.int32))
    )
