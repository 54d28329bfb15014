"""NumPy indexing (``x[idx]``) and JAX's functional updates (``x.at[idx].op(v)``) against JAX.

Covered: ints and negative ints, slices with positive and negative steps (and out-of-range
bounds), None, Ellipsis, boolean masks, integer arrays (adjacent advanced indices keep their
place, separated ones move to the front, as NumPy places them), traced integer indices, and the
``.at`` updates ``set/add/mul/min/max/get`` with out-of-bounds indices (clamped on ``get``, dropped
on updates, as in JAX) and duplicate indices. The reference machinery (``Ref``, one compilation
per group of cases) is shared with test_numpy_vs_jax.py.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp
from test_numpy_vs_jax import (
    BOOL,
    F32,
    F64,
    I32,
    REF,
    _compile,
    arrays,
    assert_matches,
    check_traced,
)

import functx
import functx.numpy as fnp
from functx.errors import FunctxTypeError

SHAPE = (4, 5, 6)
I = lambda *a: np.array(a, np.int32)  # noqa: E731, E741 - index arrays in the tables

# --- x[idx] for a table of indices ---------------------------------------------------------------
GETITEM = {
    "int": 0,
    "neg_int": -1,
    "two_ints": (1, 2),
    "all_ints": (3, -1, 0),
    "int_last": (Ellipsis, 1),
    "slice": slice(1, 3),
    "step": slice(None, None, 2),
    "reverse": slice(None, None, -1),
    "neg_step": slice(4, 0, -2),
    "neg_start_step": slice(-2, None, -3),
    "slice_oob": slice(10, 20),
    "slice_neg_oob": slice(-10, 2),
    "empty_slice": slice(3, 1),
    "slices": (slice(None), slice(1, None, 2), slice(None, 2)),
    "none": None,
    "none_int": (None, 0),
    "none_both": (None, Ellipsis, None),
    "ellipsis": Ellipsis,
    "int_ellipsis": (0, Ellipsis),
    "empty_tuple": (),
    "mixed_basic": (1, None, slice(None), -1),
    "none_middle": (slice(None), None, 2),
    "array": I(0, 2),
    "array_neg": I(-1, 3),
    "array_2d": I([[0, 1], [2, 3]]),
    "arrays_adjacent": (I(0, 1), I(2, 3)),
    "arrays_all": (I(0, 1), I(2, 3), I(5, 0)),
    "array_after_slice": (slice(None), I(0, 2)),
    "arrays_after_slice": (slice(None), I(0, 2), I(1, 1)),
    "arrays_separated": (I(0, 2), slice(None), I(1, 1)),
    "array_int": (I(0, 2), 1),
    "int_slice_array": (1, slice(None), I(0, 2)),
    "int_array_separated": (I(0, 1), 0, I(1, 2)),
    "int_array_adjacent": (slice(None), 1, I(0, 1, 2)),
    "arrays_slice_between": (I(0, 2), slice(1, 3), I(1, 1)),
    "ellipsis_array": (Ellipsis, I(0, 2)),
    "none_array_none": (None, I(0, 2), None),
    "array_none_array": (I(0, 2), None, I(1, 1)),
    "broadcast_arrays": (slice(None), I([[0], [1]]), I(0, 1, 2)),
    "broadcast_separated": (I(0, 2), I([[0], [1]]), slice(None)),
    "array_reverse": (0, I(1, 2), slice(None, None, -1)),
    "array_oob": (I(5, -5, 100),),
    "array_oob_last": (slice(None), slice(None), I(7, -9)),
    "mask": np.array([True, False, True, True]),
    "mask_axis1": (slice(None), np.array([True, False, True, False, True])),
    "mask_2d": np.array([[True, False, True, False, True]] * 4),
    "mask_scalar": (True, 1),
    "np_int": (np.int32(1),),
    "np_int64_slice": (np.int64(2), slice(None)),
    "empty_array": I(),
    "empty_array_slice": (I(), slice(None)),
    "zero_slice": (slice(0, 0),),
    "unit_arrays": (I(0), I(1), I(2)),
}
DTYPES = (F32, I32, BOOL)
for _k, _idx in GETITEM.items():
    for _dt in DTYPES:
        REF.case(
            ("getitem", _dt), [(SHAPE, _dt)], _k, lambda x, idx=_idx: jax.numpy.asarray(x)[idx]
        )


@pytest.mark.parametrize("key", list(GETITEM))
@settings(max_examples=3)
@given(data=st.data())
def test_getitem(key, data):
    idx = GETITEM[key]
    dt = data.draw(st.sampled_from(DTYPES), label="dtype")
    x = data.draw(arrays(dt, SHAPE), label="x")
    fn = lambda a: fnp.asarray(a)[idx]  # noqa: E731
    assert_matches(fn(x), REF(("getitem", dt), key, x), [dt])
    check_traced(fn, x)


SMALL = {
    "0d": ((), [(), None, Ellipsis, (None, Ellipsis)]),
    "empty": (
        (0, 3),
        [
            slice(1, None),
            (slice(None), I(0, 2)),
            (Ellipsis, 1),
            (slice(None), slice(None, None, -1)),
        ],
    ),
}
for _name, (_shape, _idxs) in SMALL.items():
    for _i, _idx in enumerate(_idxs):
        REF.case(
            ("getitem_small", _name),
            [(_shape, F32)],
            _i,
            lambda x, idx=_idx: jax.numpy.asarray(x)[idx],
        )


@pytest.mark.parametrize("name", list(SMALL))
def test_getitem_0d_and_empty(name):
    shape, idxs = SMALL[name]
    x = np.arange(np.prod(shape), dtype=F32).reshape(shape) + 1
    for i, idx in enumerate(idxs):
        fn = lambda a, idx=idx: fnp.asarray(a)[idx]  # noqa: E731
        assert_matches(fn(x), REF(("getitem_small", name), i, x), [F32])
        check_traced(fn, x)


# --- Random mixed indices ------------------------------------------------------------------------
@st.composite
def mixed_indices(draw, shape):
    """An index for ``shape`` mixing ints, slices, integer arrays (sharing a broadcast shape, at
    adjacent or separated positions), None and at most one Ellipsis."""
    bshape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3))
    items = []
    for n in shape:
        kind = draw(st.sampled_from(["int", "slice", "slice", "array", "full"]))
        if kind == "int":
            items.append(draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            bound = st.none() | st.integers(-n - 2, n + 2)
            step = st.none() | st.integers(-3, 3).filter(bool)
            items.append(slice(draw(bound), draw(bound), draw(step)))
        elif kind == "array":
            shp = draw(st.sampled_from([bshape, bshape[1:], ()]))
            items.append(draw(hnp.arrays(np.int32, shp, elements=st.integers(-n, n - 1))))
        else:
            items.append(slice(None))
    if draw(st.booleans()):  # drop a trailing run of full slices, or replace one by Ellipsis
        k = draw(st.integers(0, len(items)))
        items = items[:k] + ([Ellipsis] if draw(st.booleans()) else [])
    for _ in range(draw(st.integers(0, 2))):
        items.insert(draw(st.integers(0, len(items))), None)
    return tuple(items)


@settings(max_examples=25)
@given(data=st.data())
def test_getitem_random_indices(data):
    shape = data.draw(st.sampled_from([(4, 5, 6), (3, 1, 2, 4), (5,)]), label="shape")
    idx = data.draw(mixed_indices(shape), label="idx")
    x = np.arange(np.prod(shape), dtype=F32).reshape(shape)
    want = x[idx]  # NumPy's placement rules, and a cheap second reference
    out = fnp.asarray(x)[idx]
    assert out.shape == want.shape and out.dtype == F32
    np.testing.assert_array_equal(np.asarray(out), want)
    ref = _compile(jax.jit(lambda a: a[idx]).lower(jax.ShapeDtypeStruct(shape, F32)))(x)
    assert_matches(out, ref, [F32])
    check_traced(lambda a: fnp.asarray(a)[idx], x)


# --- Traced (dynamic) integer indices ------------------------------------------------------------
DYNAMIC = {
    "x[i]": lambda m, x, i: x[i],
    "x[:, i]": lambda m, x, i: x[:, i],
    "x[i, ::2, -1]": lambda m, x, i: x[i, ::2, -1],
    "x[..., i]": lambda m, x, i: x[..., i],
    "x[i, j]": lambda m, x, i: x[i, i + 1],
    "x[[i, 0]]": lambda m, x, i: x[m.stack([i, m.asarray(0, m.int32)])],
    "x.at[i].set": lambda m, x, i: x.at[i].set(7),
    "x.at[:, i].add": lambda m, x, i: x.at[:, i].add(m.ones((4, 6), x.dtype)),
    "x.at[i, 1].mul": lambda m, x, i: x.at[i, 1].multiply(3),
}
for _k, _f in DYNAMIC.items():
    REF.case(
        ("dynamic",),
        [(SHAPE, F32), ((), I32)],
        _k,
        lambda x, i, f=_f: f(jax.numpy, jax.numpy.asarray(x), i),
    )


@pytest.mark.parametrize("key", list(DYNAMIC))
@settings(max_examples=6)
@given(data=st.data())
def test_traced_integer_index(key, data):
    """An integer index that is an array (traced under make_jaxpr): negative values wrap, and
    out-of-range ones clamp on retrieval and are dropped on update, as in JAX."""
    x = data.draw(arrays(F32, SHAPE), label="x")
    i = np.int32(data.draw(st.integers(-7, 7), label="i"))
    fn = lambda a, j: DYNAMIC[key](fnp, fnp.asarray(a), fnp.asarray(j))  # noqa: E731
    assert_matches(fn(x, i), REF(("dynamic",), key, x, i), [F32])
    check_traced(fn, x, i)


# --- x.at[idx].op(values) ------------------------------------------------------------------------
AT_INDICES = {
    "int": 0,
    "neg": -1,
    "two_ints": (1, 2),
    "slice": slice(1, 3),
    "step": slice(None, None, 2),
    "reverse": slice(None, None, -1),
    "step_neg": (slice(None), slice(4, None, -3)),
    "col": (slice(None), 2),
    "ellipsis": (Ellipsis, 1),
    "none": (None, 0),
    "array": I(0, 2),
    "dup": I(0, 0, 1, 0),
    "dup_all": I(1, 1, 1),
    "oob": I(-1, 5, -7, 100),
    "pairs_dup": (I(0, 0), I(1, 1)),
    "array_col": (slice(None), I(0, 2)),
    "separated": (I(0, 2), slice(None), I(1, 1)),
    "array_int": (I(0, 3), 1),
    "broadcast": (slice(None), I([[0], [1]]), I(0, 1, 2)),
    "mask": np.array([True, False, True, True]),
    "slices_step": (slice(1, 3), slice(None, None, 3)),
    "slice_oob": (slice(10, 20),),
    "int_slice_int": (0, slice(None), -1),
    "tail": (slice(-3, None), 2, slice(None)),
    "array_none": (I(0, 1), None),
    "oob_pairs": (I(0, 9, -9), I(1, 1, 1)),
}
AT_OPS = ["set", "add", "mul", "min", "max", "get"]
N_VALUES = 160  # enough values for the largest update


def _indexed_shape(idx):
    return jax.eval_shape(lambda a: a[idx], jax.ShapeDtypeStruct(SHAPE, F32)).shape


def _at_case(m, x, v, idx, op, shape):
    ref = m.asarray(x).at[idx]
    if op == "get":
        return ref.get()
    vals = m.reshape(m.asarray(v)[: int(np.prod(shape))], shape)
    if op in ("mul",):
        vals = m.where(vals > 0, 2, -1).astype(vals.dtype)  # keep products small
    return getattr(ref, "multiply" if op == "mul" else op)(vals)


AT_DTYPES = {
    "set": (F32, I32, BOOL),
    "get": (F32, BOOL),
    "add": (F32, I32),
    "mul": (F32, I32),
    "min": (F32, I32),
    "max": (F64, I32),
}
for _k, _idx in AT_INDICES.items():
    _shape = _indexed_shape(_idx)
    for _op in AT_OPS:
        for _dt in AT_DTYPES[_op]:
            REF.case(
                ("at", _dt),
                [(SHAPE, _dt), ((N_VALUES,), _dt)],
                (_k, _op),
                lambda x, v, idx=_idx, op=_op, s=_shape: _at_case(jax.numpy, x, v, idx, op, s),
            )


@pytest.mark.parametrize("key", list(AT_INDICES))
@settings(max_examples=3)
@given(data=st.data())
def test_at(key, data):
    """Every op of ``x.at[idx]`` for one index (drawing a dtype and values per op)."""
    idx, shape = AT_INDICES[key], _indexed_shape(AT_INDICES[key])
    for op in AT_OPS:
        dt = data.draw(st.sampled_from(AT_DTYPES[op]), label=f"{op} dtype")
        x = data.draw(arrays(dt, SHAPE, specials=False), label=f"{op} x")
        v = data.draw(arrays(dt, (N_VALUES,), specials=False), label=f"{op} values")
        if op == "set" and key in ("dup", "dup_all", "pairs_dup"):
            v = np.full_like(v, v[0])  # which duplicate wins a set is unspecified in JAX
        fn = lambda a, b, op=op: _at_case(fnp, a, b, idx, op, shape)  # noqa: E731
        assert_matches(fn(x, v), REF(("at", dt), (key, op), x, v), [dt])
        check_traced(fn, x, v)


AT_SCALARS = {("set", 7), ("add", 2.5), ("add", True), ("mul", -2), ("min", 0), ("max", 1)}
for _k in ("oob", "dup", "broadcast", "slice"):
    for _op, _s in AT_SCALARS:
        REF.case(
            ("at_scalar",),
            [(SHAPE, I32)],
            (_k, _op, _s),
            lambda x, idx=AT_INDICES[_k], op=_op, s=_s: getattr(
                jax.numpy.asarray(x).at[idx], "multiply" if op == "mul" else op
            )(s),
        )


# JAX warns that adding 2.5 to an int32 array will become an error; it still computes it.
@pytest.mark.filterwarnings("ignore:scatter inputs have incompatible types")
@pytest.mark.parametrize("key", ("oob", "dup", "broadcast", "slice"))
def test_at_python_scalar_values(key):
    """Scalar updates broadcast; Python floats convert to the array's dtype (2.5 -> 2 for int32)."""
    x = np.arange(np.prod(SHAPE), dtype=I32).reshape(SHAPE) % 7 - 3
    for op, s in AT_SCALARS:
        fn = lambda a, op=op, s=s: getattr(  # noqa: E731
            fnp.asarray(a).at[AT_INDICES[key]], "multiply" if op == "mul" else op
        )(s)
        assert_matches(fn(x), REF(("at_scalar",), (key, op, s), x), [I32])
        check_traced(fn, x)


def test_at_get_modes():
    x = np.arange(np.prod(SHAPE), dtype=F32).reshape(SHAPE)
    idx = I(0, 9, -9, 3)
    for kw in (
        {},
        {"mode": "clip"},
        {"mode": "fill"},
        {"mode": "fill", "fill_value": -1.0},
        {"mode": "promise_in_bounds"},
    ):
        out = fnp.asarray(x).at[idx].get(**kw)
        want = jax.numpy.asarray(x).at[idx].get(**kw)
        if kw.get("mode") == "promise_in_bounds":  # unspecified out of range: compare in range
            out, want = np.asarray(out)[[0, 3]], np.asarray(want)[[0, 3]]
        assert_matches(out, want, [F32])


def test_index_errors():
    x = fnp.asarray(np.zeros(SHAPE, F32))
    np.testing.assert_array_equal(x[4], x[3])  # JAX 0.10 clamps a static index (issue 18)
    with pytest.raises(IndexError):
        x[0, 0, 0, 0]
    with pytest.raises(IndexError):
        x[..., ...]
    with pytest.raises(FunctxTypeError, match="integers"):
        x[np.array([0.5])]
    with pytest.raises(FunctxTypeError, match="data-dependent"):
        functx.make_jaxpr(lambda a, m: a[m])(np.zeros(3, F32), np.ones(3, bool))
    with pytest.raises(FunctxTypeError, match="static"):
        functx.make_jaxpr(lambda a, i: a[i:])(np.zeros(3, F32), np.int32(1))
