"""``functx.Array``: attributes, operators, indexing, ``.at[]``, NumPy/DLPack interop, methods,
repr, immutability and Python conversions, against NumPy (values) and jax.numpy (dtypes, repr)."""

from __future__ import annotations

import operator
import pickle

import hypothesis.extra.numpy as hnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, strategies as st
from x64util import x64_off

import functx
import functx.numpy as fnp
from functx import dtypes

jax = pytest.importorskip("jax")
jjnp = jax.numpy
torch = pytest.importorskip("torch")

SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)


def f64_arrays(shape=SHAPES):
    return hnp.arrays(np.float64, shape, elements=st.floats(-100, 100))


def test_attributes_vs_numpy():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = fnp.asarray(x)
    assert isinstance(a, functx.Array)
    assert a.shape == x.shape and a.dtype == x.dtype and a.ndim == 3 and a.size == 24
    assert len(a) == 2
    np.testing.assert_array_equal(np.asarray(a.T), x.T)
    np.testing.assert_array_equal(np.asarray(a.mT), np.swapaxes(x, -1, -2))
    assert a.aval == functx.ShapedArray((2, 3, 4), np.dtype(np.float32))
    assert not a.weak_type
    s = fnp.asarray(np.float64(2.5))
    assert s.shape == () and s.ndim == 0 and s.size == 1
    e = fnp.asarray(np.zeros((3, 0)))
    assert e.size == 0 and e.shape == (3, 0)


@given(x=f64_arrays())
def test_transpose_and_reshape_vs_numpy(x):
    a = fnp.asarray(x)
    np.testing.assert_array_equal(np.asarray(a.T), x.T)
    np.testing.assert_array_equal(np.asarray(a.reshape(-1)), x.reshape(-1))
    np.testing.assert_array_equal(np.asarray(a.reshape(x.size, 1)), x.reshape(x.size, 1))
    np.testing.assert_array_equal(np.asarray(a.reshape((1, x.size))), x.reshape((1, x.size)))
    np.testing.assert_array_equal(np.asarray(a.ravel()), x.ravel())
    if x.ndim:
        perm = tuple(reversed(range(x.ndim)))
        np.testing.assert_array_equal(np.asarray(a.transpose(perm)), x.transpose(perm))
        np.testing.assert_array_equal(np.asarray(a.transpose(*perm)), x.transpose(*perm))


BINOPS = [
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.floordiv,
    operator.mod,
    operator.pow,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
    operator.eq,
    operator.ne,
]
INTOPS = [operator.and_, operator.or_, operator.xor]


def _jax_aval(fn, *args):
    """JAX's result dtype and weak flag, by tracing (no compilation)."""
    S = jax.ShapeDtypeStruct
    specs = [
        a if isinstance(a, (int, float)) else S(np.shape(a), np.asarray(a).dtype) for a in args
    ]
    dyn = [i for i, a in enumerate(specs) if isinstance(a, S)]

    def f(*d):
        full = list(specs)
        for i, v in zip(dyn, d):
            full[i] = v
        return fn(*full)

    r = jax.eval_shape(f, *[specs[i] for i in dyn])
    return np.dtype(r.dtype), bool(r.weak_type)


@pytest.mark.parametrize("op", BINOPS, ids=lambda o: o.__name__)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32])
def test_binary_operators_vs_numpy_and_jax(op, dtype):
    rng = np.random.default_rng(0)
    x = (rng.normal(size=(3, 4)) * 4).astype(dtype)
    y = (rng.normal(size=(4,)) * 4).astype(dtype)
    if op in (operator.floordiv, operator.mod, operator.truediv, operator.pow):
        # (integer division by zero differs: NumPy gives 0, XLA and functx -1 for x / 0)
        x, y = np.where(x == 0, 5, x).astype(dtype), np.where(y == 0, 3, y).astype(dtype)
    if op is operator.pow:
        x, y = (np.abs(x) + 1).astype(dtype), (np.abs(y) % 4).astype(dtype)
    a, b = fnp.asarray(x), fnp.asarray(y)
    jdt, _ = _jax_aval(op, x, y)
    for ours in (op(a, b), op(a, y), op(x, b)):  # Array/Array, Array/ndarray, ndarray/Array
        assert isinstance(ours, functx.Array)
        assert ours.dtype == jdt
        with np.errstate(all="ignore"):
            np.testing.assert_allclose(np.asarray(ours), op(x, y), rtol=1e-6)
    # Python scalars on either side are weak: the array's dtype wins, as in JAX
    for scalar in (2, 3.0):
        if op is operator.pow and isinstance(scalar, float) and dtype == np.int32:
            continue
        for ours, args in ((op(a, scalar), (x, scalar)), (op(scalar, a), (scalar, x))):
            jdt, jweak = _jax_aval(op, *args)
            assert ours.dtype == jdt
            if jdt != np.bool_:  # (JAX marks `int_array < 2.0` weakly typed: a bool artifact)
                assert ours.weak_type == jweak
            npargs = [
                np.asarray(v, ours.dtype if ours.dtype != np.bool_ else dtype)
                if isinstance(v, (int, float))
                else v
                for v in args
            ]
            with np.errstate(all="ignore"):
                np.testing.assert_allclose(np.asarray(ours), op(*npargs), rtol=1e-6)


@pytest.mark.parametrize("op", INTOPS, ids=lambda o: o.__name__)
def test_integer_operators_vs_numpy(op):
    x = np.array([[0, 1, 5, -3], [7, 2, -8, 100]], np.int32)
    y = np.array([3, 1, 2, 4], np.int32)
    ours = op(fnp.asarray(x), fnp.asarray(y))
    np.testing.assert_array_equal(np.asarray(ours), op(x, y))
    assert ours.dtype == _jax_aval(op, x, y)[0]
    b = np.array([True, False, True])
    np.testing.assert_array_equal(np.asarray(op(fnp.asarray(b), fnp.asarray(~b))), op(b, ~b))


def test_unary_operators_and_matmul():
    x = np.array([[1.5, -2.0], [0.0, 3.0]])
    a = fnp.asarray(x)
    np.testing.assert_array_equal(np.asarray(-a), -x)
    np.testing.assert_array_equal(np.asarray(+a), +x)
    np.testing.assert_array_equal(np.asarray(abs(a)), abs(x))
    i = np.array([0, 5, -3], np.int32)
    np.testing.assert_array_equal(np.asarray(~fnp.asarray(i)), ~i)
    np.testing.assert_array_equal(np.asarray(~fnp.asarray(i > 0)), ~(i > 0))
    np.testing.assert_allclose(np.asarray(a @ a), x @ x)
    np.testing.assert_allclose(np.asarray(x @ a), x @ x)
    np.testing.assert_allclose(np.asarray(a @ x[0]), x @ x[0])
    q, r = divmod(fnp.asarray(np.array([7, -7], np.int32)), 3)
    np.testing.assert_array_equal(np.asarray(q), [2, -3])
    np.testing.assert_array_equal(np.asarray(r), [1, 2])


def test_comparisons_return_bool_arrays_and_are_unhashable():
    a = fnp.asarray(np.array([1.0, np.nan, 3.0]))
    eq = a == 1.0
    assert isinstance(eq, functx.Array) and eq.dtype == np.bool_
    np.testing.assert_array_equal(np.asarray(eq), [True, False, False])
    np.testing.assert_array_equal(np.asarray(a != a), [False, True, False])
    with pytest.raises(TypeError, match="unhashable"):
        hash(a)


@pytest.mark.parametrize(
    "index",
    [
        0,
        -1,
        1,
        slice(None),
        slice(1, None),
        slice(None, None, -1),
        slice(0, 3, 2),
        (0, 1),
        (slice(None), 1),
        (Ellipsis, 0),
        (None, 0),
        (0, None, slice(None)),
        (1, Ellipsis, None),
        (slice(-2, None), slice(None, 1)),
    ],
)
def test_getitem_basic_vs_numpy(index):
    x = np.arange(24.0).reshape(3, 4, 2)
    ours = fnp.asarray(x)[index]
    np.testing.assert_array_equal(np.asarray(ours), x[index])
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(jjnp.asarray(x)[index]))


def test_getitem_arrays_and_masks_vs_numpy():
    x = np.arange(12.0).reshape(3, 4)
    a = fnp.asarray(x)
    idx = np.array([2, 0, -1])
    np.testing.assert_array_equal(np.asarray(a[idx]), x[idx])
    np.testing.assert_array_equal(np.asarray(a[fnp.asarray(idx)]), x[idx])
    np.testing.assert_array_equal(np.asarray(a[:, idx]), x[:, idx])
    np.testing.assert_array_equal(np.asarray(a[x > 5]), x[x > 5])
    np.testing.assert_array_equal(np.asarray(a[fnp.asarray(np.int32(1))]), x[1])


@pytest.mark.parametrize("method", ["set", "add", "multiply", "min", "max"])
@pytest.mark.parametrize("index", [1, -1, slice(1, 3), (0, 2), np.array([0, 2, 0])])
def test_at_updates_vs_numpy_and_jax(method, index):
    x = np.arange(1.0, 13.0).reshape(4, 3)
    a = fnp.asarray(x)
    vals = np.float64(10.0) if isinstance(index, tuple) else np.full(np.shape(x[index]), 10.0)
    ours = getattr(a.at[index], method)(vals)
    ref = x.copy()
    ufunc = {
        "set": None,
        "add": np.add,
        "multiply": np.multiply,
        "min": np.minimum,
        "max": np.maximum,
    }[method]
    if ufunc is None:
        ref[index] = vals
    else:
        ufunc.at(ref, index, vals)  # repeated indices accumulate
    if method == "set" and isinstance(index, np.ndarray):
        ref[index] = vals  # last write wins in NumPy; JAX does not specify it, values are equal
    np.testing.assert_array_equal(np.asarray(ours), ref)
    if method == "add" or isinstance(index, np.ndarray):
        theirs = getattr(jjnp.asarray(x).at[index], method)(vals)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    np.testing.assert_array_equal(np.asarray(a), x)  # the original is unchanged
    np.testing.assert_array_equal(np.asarray(a.at[index].get()), x[index])


def test_at_out_of_bounds_array_indices_are_dropped_as_in_jax():
    x = np.zeros(4)
    idx = np.array([1, 7, -9, 3])
    ours = fnp.asarray(x).at[idx].add(1.0)
    theirs = jjnp.asarray(x).at[idx].add(1.0)
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    np.testing.assert_array_equal(np.asarray(ours), [0, 1, 0, 1])


def test_array_protocol_is_zero_copy_and_read_only():
    a = fnp.asarray(np.arange(6.0).reshape(2, 3))
    n = np.asarray(a)
    assert np.shares_memory(n, a._value)
    assert n is a._value
    assert not n.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        n[0, 0] = 5.0
    # a dtype request converts (a copy); copy=True always copies
    f32 = np.asarray(a, dtype=np.float32)
    assert f32.dtype == np.float32 and not np.shares_memory(f32, a._value)
    c = np.array(a, copy=True)
    assert not np.shares_memory(c, a._value) and c.flags.writeable
    assert np.asarray(a, dtype=np.float64) is a._value
    assert np.array(a, copy=False) is a._value
    with pytest.raises(ValueError, match="copy"):
        np.array(a, dtype=np.float32, copy=False)
    np.testing.assert_array_equal(c, np.arange(6.0).reshape(2, 3))


def test_construction_copies_the_source():
    src = np.arange(3.0)
    a = fnp.asarray(src)
    src[0] = 100.0
    assert float(a[0]) == 0.0
    assert not np.shares_memory(np.asarray(a), src)
    b = functx.Array([1, 2], dtype=np.int8)
    assert b.dtype == np.int8 and b.tolist() == [1, 2]


def test_dlpack_export_to_numpy_is_zero_copy():
    a = fnp.asarray(np.arange(12, dtype=np.int32).reshape(3, 4))
    n = np.from_dlpack(a)
    np.testing.assert_array_equal(n, np.arange(12).reshape(3, 4))
    assert n.dtype == np.int32
    assert np.shares_memory(n, a._value)
    assert a.__dlpack_device__() == (1, 0)  # kDLCPU


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float64, np.int64, np.int8, np.uint8, np.bool_, np.float16]
)
def test_dlpack_export_to_torch(dtype):
    x = (np.arange(6) % 3).astype(dtype).reshape(2, 3)
    a = fnp.asarray(x)
    t = torch.from_dlpack(a)
    np.testing.assert_array_equal(t.numpy(), x)
    assert t.data_ptr() == a._value.ctypes.data  # zero-copy
    assert tuple(t.shape) == x.shape


@pytest.mark.parametrize(
    "tdtype,ndtype",
    [
        ("float32", np.float32),
        ("float64", np.float64),
        ("int64", np.int64),
        ("int32", np.int32),
        ("uint8", np.uint8),
        ("bool", np.bool_),
        ("float16", np.float16),
        ("bfloat16", ml_dtypes.bfloat16),
    ],
)
def test_dlpack_import_from_torch(tdtype, ndtype):
    t = torch.arange(6).reshape(2, 3).to(getattr(torch, tdtype))
    a = fnp.asarray(t)
    assert isinstance(a, functx.Array)
    assert a.dtype == np.dtype(ndtype) and a.shape == (2, 3)
    np.testing.assert_array_equal(np.asarray(a).astype(np.float64), t.to(torch.float64).numpy())
    t.zero_()  # the functx array holds its own copy
    assert np.asarray(a).astype(np.float64).sum() == sum(range(6)) if tdtype != "bool" else True


def test_dlpack_import_non_contiguous_and_requires_grad():
    t = torch.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(np.asarray(fnp.asarray(t.T)), t.T.numpy())
    np.testing.assert_array_equal(np.asarray(fnp.asarray(t[:, ::2])), t[:, ::2].numpy())
    g = torch.ones(3, requires_grad=True)
    np.testing.assert_array_equal(np.asarray(fnp.asarray(g)), np.ones(3, np.float32))
    # and round-trips back
    np.testing.assert_array_equal(torch.from_dlpack(fnp.asarray(t)).numpy(), t.numpy())


def test_astype_vs_jax():
    x = np.array([-1.7, 0.5, 2.5, 300.0, np.nan])
    a = fnp.asarray(x)
    for dt in [np.float32, np.int32, np.uint8, np.bool_, np.float16, ml_dtypes.bfloat16, np.int8]:
        ours = a.astype(dt)
        theirs = jjnp.asarray(x).astype(dt)
        assert ours.dtype == np.dtype(dt)
        np.testing.assert_array_equal(
            np.asarray(ours).astype(np.float64), np.asarray(theirs).astype(np.float64)
        )


@given(
    x=f64_arrays(hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4)), data=st.data()
)
def test_reduction_methods_vs_numpy(x, data):
    a = fnp.asarray(x)
    axis = data.draw(st.sampled_from([None] + list(range(-x.ndim, x.ndim))))
    keepdims = data.draw(st.booleans())
    for name in ["sum", "mean", "max", "min", "prod", "var", "std"]:
        ours = getattr(a, name)(axis=axis, keepdims=keepdims)
        ref = getattr(x, name)(axis=axis, keepdims=keepdims)
        np.testing.assert_allclose(np.asarray(ours), ref, rtol=1e-9, atol=1e-9, err_msg=name)
    for name in ["argmax", "argmin"]:
        ax = None if axis is None else axis
        np.testing.assert_array_equal(
            np.asarray(getattr(a, name)(axis=ax)), getattr(x, name)(axis=ax), err_msg=name
        )
    np.testing.assert_array_equal(np.asarray(a.any(axis=axis)), (x != 0).any(axis=axis))
    np.testing.assert_array_equal(np.asarray((a > 0).all(axis=axis)), (x > 0).all(axis=axis))
    np.testing.assert_allclose(
        np.asarray(a.cumsum(axis=axis)), x.cumsum(axis=axis), rtol=1e-9, atol=1e-9
    )


def test_other_methods_vs_numpy():
    x = np.array([[1.25, -2.5, 3.75], [0.5, 8.0, -1.0]])
    a = fnp.asarray(x)
    np.testing.assert_array_equal(np.asarray(a.clip(-1, 2)), x.clip(-1, 2))
    np.testing.assert_array_equal(np.asarray(a.round()), np.round(x))
    np.testing.assert_array_equal(np.asarray(a.round(1)), np.round(x, 1))
    np.testing.assert_array_equal(np.asarray(a.flatten()), x.flatten())
    np.testing.assert_array_equal(np.asarray(a[None].squeeze()), x)
    np.testing.assert_array_equal(np.asarray(a[None].squeeze(0)), x)
    np.testing.assert_array_equal(np.asarray(a.swapaxes(0, 1)), x.swapaxes(0, 1))
    np.testing.assert_allclose(np.asarray(a.dot(x.T)), x.dot(x.T))
    np.testing.assert_array_equal(np.asarray(a.cumprod(axis=1)), x.cumprod(axis=1))
    np.testing.assert_array_equal(np.asarray(a.copy()), x)
    np.testing.assert_array_equal(np.asarray(a.conj()), x)
    np.testing.assert_array_equal(np.asarray(a.real), x)
    assert a.tolist() == x.tolist()
    assert a[1, 1].item() == 8.0 and a.item(4) == 8.0
    assert [float(v[0]) for v in a] == [1.25, 0.5]  # iteration yields rows


REPR_CASES = [
    np.array([1.0, 2.0], np.float32),
    np.array(1.5),
    np.array([[1, 2], [3, 4]], np.int8),
    np.array([True, False]),
    np.zeros((0,), np.float32),
    np.zeros((0, 3), np.float32),
    np.zeros((2, 0), np.int32),
    np.arange(3, dtype=np.float16),
    np.arange(3).astype(ml_dtypes.bfloat16),
    np.arange(2000, dtype=np.float32),
    np.array([np.nan, np.inf, -0.0]),
    np.array(7, np.uint32),
]


@pytest.mark.parametrize("x", REPR_CASES, ids=lambda x: f"{x.dtype}{list(x.shape)}")
def test_repr_matches_jax(x):
    assert repr(fnp.asarray(x)) == repr(jjnp.asarray(x))


def test_repr_exact_and_weak_type():
    assert repr(fnp.asarray(np.array([1.0, 2.0], np.float32))) == "Array([1., 2.], dtype=float32)"
    assert repr(fnp.asarray(1.0)) == "Array(1., dtype=float64, weak_type=True)"
    assert repr(fnp.asarray(3)) == "Array(3, dtype=int64, weak_type=True)"
    with x64_off():
        assert repr(fnp.asarray(1.0)) == "Array(1., dtype=float32, weak_type=True)"
        assert repr(fnp.asarray(3)) == "Array(3, dtype=int32, weak_type=True)"
        assert repr(fnp.asarray(np.zeros((0, 3)))) == "Array([], shape=(0, 3), dtype=float32)"
    assert repr(fnp.asarray(np.zeros((0, 3)))) == "Array([], shape=(0, 3), dtype=float64)"
    assert repr(fnp.asarray(np.zeros((0,), np.int8))) == "Array([], shape=(0,), dtype=int8)"
    assert str(fnp.asarray(np.array([1.0, 2.0]))) == "[1. 2.]"
    assert f"{fnp.asarray(np.float64(2.5)):.2f}" == "2.50"


def test_immutability():
    a = fnp.asarray(np.arange(3.0))
    with pytest.raises(TypeError, match=r"immutable.*\.at\[idx\]\.set"):
        a[0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        a._value[0] = 1.0
    with pytest.raises(AttributeError):
        a.shape = (1, 3)
    with pytest.raises(AttributeError):
        a.foo = 1  # __slots__: no instance dict

    def f(x):
        x[0] = 1.0
        return x

    with pytest.raises(TypeError, match="immutable"):
        functx.make_jaxpr(f)(np.zeros(3))


def test_python_conversions():
    assert bool(fnp.asarray(np.array(2.0))) is True
    assert bool(fnp.asarray(np.array([0]))) is False
    assert int(fnp.asarray(np.array(3.7))) == 3
    assert int(fnp.asarray(np.array(-3.7))) == -3
    assert float(fnp.asarray(np.array(2, np.int32))) == 2.0
    assert isinstance(float(fnp.asarray(np.array(2, np.int32))), float)
    assert complex(fnp.asarray(np.array(1.5))) == 1.5 + 0j
    assert list(range(fnp.asarray(np.int32(3)))) == [0, 1, 2]  # __index__
    assert [10, 20, 30][fnp.asarray(np.int64(1))] == 20
    with pytest.raises(TypeError, match="integer"):
        range(fnp.asarray(np.float32(3)))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(fnp.asarray(np.array([1.0, 2.0])))
    with pytest.raises(TypeError):
        int(fnp.asarray(np.array([1.0, 2.0])))
    with pytest.raises(TypeError, match="0-d"):
        len(fnp.asarray(np.float32(1)))
    with pytest.raises(TypeError, match="0-d"):
        iter(fnp.asarray(np.float32(1)))
    # and JAX agrees on each value
    for v in (2.0, 0.0, -3.7):
        assert int(fnp.asarray(v)) == int(jjnp.asarray(v))
        assert bool(fnp.asarray(v)) == bool(jjnp.asarray(v))


def test_pickle_round_trip():
    a = fnp.asarray(np.arange(4, dtype=np.int16))
    b = pickle.loads(pickle.dumps(a))
    assert isinstance(b, functx.Array) and b.dtype == np.int16
    np.testing.assert_array_equal(np.asarray(b), np.asarray(a))


def test_device_put_and_block_until_ready():
    tree = {"a": np.ones(2), "b": [1.0, np.int8(3)]}
    out = functx.device_put(tree)
    assert all(isinstance(v, functx.Array) for v in functx.tree_util.tree_leaves(out))
    assert functx.block_until_ready(out) is out
    assert out["a"].block_until_ready() is out["a"]
    assert out["b"][0].dtype == dtypes.default_float() and out["b"][1].dtype == np.int8


def test_shift_operators_as_jax():
    """``<<`` and ``>>`` on Arrays and tracers are jnp.left_shift/right_shift, as in JAX."""
    import jax.numpy as jjnp

    x, s = np.array([1, 8, -16], np.int32), np.array([1, 2, 3], np.int32)

    def f(ns, a, b):
        return [a << b, a >> 2, 3 << b, a >> b]

    want = f(jjnp, jjnp.asarray(x), jjnp.asarray(s))
    jitted = functx.jit(lambda a, b: f(fnp, a, b))
    for got in (f(fnp, fnp.asarray(x), fnp.asarray(s)), jitted(x, s)):
        for g, w in zip(got, want):
            assert np.asarray(g).dtype == np.asarray(w).dtype
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    with pytest.raises(TypeError):
        fnp.ones(2, np.float32) << 1
