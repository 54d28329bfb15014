"""Errors name the user's line and say what to do: concretization errors, shape/dtype errors of lax
and numpy ops (traced and eager), leaked tracers."""

from __future__ import annotations

import re

import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx import lax
from functx.errors import ConcretizationError, FunctxError, FunctxTypeError

X3 = np.ones(3, np.float32)
X4 = np.ones(4, np.float32)
S = np.float32(1.0)


def _line(marker: str) -> int:
    """The line of this file that holds ``marker`` (in a trailing comment)."""
    with open(__file__) as f:
        hits = [i for i, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}")]
    assert len(hits) == 1, marker
    return hits[0]


def _at(marker: str) -> str:
    return rf"test_errors\.py:{_line(marker)}\b"


# --- concretization ----------------------------------------------------------------------------
def f_if(x):
    if x > 0:  # L-if
        return x
    return -x


def f_bool(x):
    return bool(x)  # L-bool


def f_int(x):
    return int(x)  # L-int


def f_float(x):
    return float(x)  # L-float


def f_while(x):
    while x < 3:  # L-while
        x = x + 1
    return x


def f_and(x):
    return (x > 0) and (x < 1)  # L-and


def f_assert(x):
    assert x > 0  # L-assert
    return x


CONCRETE = [
    ("if", f_if),
    ("bool", f_bool),
    ("int", f_int),
    ("float", f_float),
    ("while", f_while),
    ("and", f_and),
    ("assert", f_assert),
]


@pytest.mark.parametrize("name,f", CONCRETE, ids=[c[0] for c in CONCRETE])
def test_concretization_error_names_line(name, f):
    with pytest.raises(ConcretizationError) as info:
        functx.make_jaxpr(f)(S)
    msg = str(info.value)
    assert re.search(_at(f"L-{name}"), msg), msg
    assert "traced" in msg and ("f32[]" in msg or "bool[]" in msg)
    assert isinstance(info.value, TypeError)  # like JAX's ConcretizationTypeError


@pytest.mark.parametrize("name,f", CONCRETE, ids=[c[0] for c in CONCRETE])
def test_concretization_error_says_what_to_do(name, f):
    with pytest.raises(ConcretizationError) as info:
        functx.make_jaxpr(f)(S)
    msg = str(info.value)
    assert "functx.lax.cond" in msg and "functx.numpy.where" in msg, msg


def test_concretization_in_a_nested_helper_names_the_helper_line():
    def helper(v):
        return v.item()  # L-item

    with pytest.raises(ConcretizationError, match=_at("L-item")):
        functx.make_jaxpr(lambda x: helper(x) + 1)(S)


def test_concretization_index_and_numpy_conversion():
    with pytest.raises(ConcretizationError, match=_at("L-range")):
        functx.make_jaxpr(lambda n: list(range(n)))(np.int32(3))  # L-range
    with pytest.raises(ConcretizationError, match=_at("L-np")) as info:
        functx.make_jaxpr(lambda x: np.sin(np.asarray(x)))(X3)  # L-np
    assert "functx.numpy" in str(info.value)


@pytest.mark.xfail(
    strict=True,
    reason="numpy/_core.py `_shape` iterates a traced size and fails "
    "with 'iteration over a 0-d array' instead",
)
def test_traced_shape_argument_is_a_concretization_error():
    with pytest.raises(ConcretizationError, match=_at("L-zeros")):
        functx.make_jaxpr(lambda n: fnp.zeros(n))(np.int32(3))  # L-zeros


def test_concrete_values_are_fine_eagerly():
    assert f_if(fnp.asarray(2.0)) is not None
    assert f_int(fnp.asarray(2.5)) == 2
    assert float(f_while(fnp.asarray(0.5))) == 3.5


# --- shape and dtype errors --------------------------------------------------------------------
def test_lax_add_shape_error_traced():
    with pytest.raises(FunctxTypeError) as info:
        functx.make_jaxpr(lambda x, y: lax.add(x, y))(X3, X4)  # L-lax-add
    msg = str(info.value)
    assert msg.startswith("add")
    assert "f32[3]" in msg and "f32[4]" in msg
    assert re.search(_at("L-lax-add"), msg), msg


def test_lax_add_shape_error_eager():
    with pytest.raises(FunctxTypeError) as info:
        lax.add(fnp.asarray(X3), fnp.asarray(X4))  # L-lax-add-eager
    msg = str(info.value)
    assert "add" in msg and "f32[3]" in msg and "f32[4]" in msg
    assert re.search(_at("L-lax-add-eager"), msg), msg


def test_lax_dtype_error():
    with pytest.raises(FunctxTypeError) as info:
        functx.make_jaxpr(lambda x, y: lax.mul(x, y))(X3, X3.astype(np.int32))  # L-lax-mul
    msg = str(info.value)
    assert "mul" in msg and "f32[3]" in msg and "i32[3]" in msg
    assert re.search(_at("L-lax-mul"), msg), msg


def test_numpy_broadcast_error():
    with pytest.raises(FunctxTypeError) as info:
        functx.make_jaxpr(lambda x, y: x + y)(X3, X4)  # L-np-add
    msg = str(info.value)
    assert "add" in msg and "f32[3]" in msg and "f32[4]" in msg
    assert re.search(_at("L-np-add"), msg), msg


@pytest.mark.parametrize(
    "marker,f,args,words",
    [
        ("L-reshape", lambda x: x.reshape(4), (X3,), ["reshape", "f32[3]", "(4,)"]),  # L-reshape
        (
            "L-dot",
            lambda x, y: lax.dot(x, y),  # L-dot
            (X3, X4),
            ["dot_general", "f32[3]", "f32[4]"],
        ),
        (
            "L-sin-int",
            lambda x: lax.sin(x),  # L-sin-int
            (np.ones(3, np.int32),),
            ["sin", "i32[3]"],
        ),
        (
            "L-concat",
            lambda x, y: lax.concatenate([x, y[None]], 0),  # L-concat
            (X3, X4),
            ["concatenate", "f32[3]", "f32[1,4]"],
        ),
        (
            "L-bid",
            lambda x: lax.broadcast_in_dim(x, (4,), (0,)),  # L-bid
            (X3,),
            ["broadcast_in_dim", "f32[3]", "(4,)"],
        ),
        (
            "L-reduce",
            lambda x: lax.reduce_sum(x, (1,)),  # L-reduce
            (X3,),
            ["reduce_sum", "axis 1"],
        ),
    ],
)
def test_op_errors_name_op_shapes_and_line(marker, f, args, words):
    with pytest.raises(FunctxTypeError) as info:
        functx.make_jaxpr(f)(*args)
    msg = str(info.value)
    for w in words:
        assert w in msg, (w, msg)
    assert re.search(_at(marker), msg), msg


def test_error_inside_helper_points_at_the_helper_line():
    def layer(x, w):
        return lax.mul(x, w)  # L-layer

    with pytest.raises(FunctxTypeError, match=_at("L-layer")):
        functx.make_jaxpr(lambda x: layer(x, fnp.ones(4)))(X3)


# --- leaked tracers ----------------------------------------------------------------------------
def test_leaked_tracer_used_in_another_trace():
    leaked = []
    functx.make_jaxpr(lambda x: leaked.append(x) or x)(X3)
    with pytest.raises(FunctxError) as info:
        functx.make_jaxpr(lambda y: y + leaked[0])(X3)  # L-leak
    msg = str(info.value)
    assert "finished trace" in msg and "escaped" in msg
    assert re.search(_at("L-leak"), msg), msg


def test_leaked_tracer_used_eagerly():
    leaked = []
    functx.make_jaxpr(lambda x: leaked.append(x) or x)(X3)
    with pytest.raises(FunctxError, match=r"finished trace.*" + _at("L-leak-eager")):
        fnp.sin(leaked[0])  # L-leak-eager
