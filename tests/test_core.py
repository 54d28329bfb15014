"""The IR: printer golden tests (exact strings, and JAX's own printout as a reference where the
equations are the same) and ``typecheck_jaxpr`` on traced and on hand-broken Jaxprs."""

from __future__ import annotations

import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx import core, lax, primitives as P
from functx.core import (
    ClosedJaxpr,
    Eqn,
    Jaxpr,
    Literal,
    ShapedArray,
    Var,
    typecheck_jaxpr,
)
from functx.errors import FunctxTypeError
from functx.interpreter import jaxpr_as_fun

jax = pytest.importorskip("jax")
jjnp = jax.numpy

F32 = np.dtype(np.float32)
X3 = np.ones(3, np.float32)
X23 = np.ones((2, 3), np.float32)
CONST = fnp.asarray(np.arange(3, dtype=np.float32))


def pp(f, *args, **kw):
    return str(functx.make_jaxpr(f, **kw)(*args))


def _norm(s: str) -> str:
    """Layout-insensitive form: one-line and multi-line printouts of one Jaxpr compare equal."""
    return " ".join(s.replace(";", " ").split())


# --- golden strings ----------------------------------------------------------------------------
GOLDEN = [
    (
        "sin_mul",
        lambda x: fnp.sin(x) * 2.0,
        (X3,),
        {},
        "{ lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }",
    ),
    (
        "int_literal",
        lambda x: x + 1,
        (np.ones(3, np.int32),),
        {},
        "{ lambda ; a:i32[3]. let b:i32[3] = add a 1:i32[] in (b,) }",
    ),
    (
        "bool_literal",
        lambda x: (x > 0) | True,
        (X3,),
        {},
        "{ lambda ; a:f32[3]. let b:bool[3] = gt a 0.0:f32[]; c:bool[3] = or b True:bool[] "
        "in (c,) }",
    ),
    (
        "negative_literal",
        lambda x: x * -1.5,
        (X3,),
        {},
        "{ lambda ; a:f32[3]. let b:f32[3] = mul a -1.5:f32[] in (b,) }",
    ),
    (
        "constvar",
        lambda x: x + CONST,
        (X3,),
        {},
        "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = add b a in (c,) }",
    ),
    (
        "two_consts",
        lambda x: x * CONST + CONST * 2.0,
        (X3,),
        {},
        "{ lambda a:f32[3]; b:f32[3]. let\n"
        "    c:f32[3] = mul b a\n"
        "    d:f32[3] = mul a 2.0:f32[]\n"
        "    e:f32[3] = add c d\n"
        "  in (e,) }",
    ),
    (
        "params",
        lambda x: fnp.sum(x, axis=1),
        (X23,),
        {},
        "{ lambda ; a:f32[2,3]. let b:f32[2] = reduce_sum[axes=(1,)] a in (b,) }",
    ),
    (
        "transpose",
        lambda x: x.T,
        (X23,),
        {},
        "{ lambda ; a:f32[2,3]. let b:f32[3,2] = transpose[permutation=(1, 0)] a in (b,) }",
    ),
    (
        "two_outputs",
        lambda x, y: (x + y, x - y),
        (X3, X3),
        {},
        "{ lambda ; a:f32[3] b:f32[3]. let c:f32[3] = add a b; d:f32[3] = sub a b in (c, d) }",
    ),
    (
        "pytree_in_out",
        lambda d: {"a": d["x"] * 2, "b": (d["y"], d["x"])},
        ({"x": X3, "y": np.int32(3)},),
        {},
        "{ lambda ; a:f32[3] b:i32[]. let c:f32[3] = mul a 2.0:f32[] in (c, b, a) }",
    ),
    (
        "static_argnums",
        lambda x, n: x * n,
        (X3, 3),
        {"static_argnums": 1},
        "{ lambda ; a:f32[3]. let b:f32[3] = mul a 3.0:f32[] in (b,) }",
    ),
    (
        "static_argnums_tuple",
        lambda n, x, k: x[:n] + k,
        (2, X3, 1.0),
        {"static_argnums": (0,)},
        "{ lambda ; a:f32[3] b:f32[]. let\n"
        "    c:f32[2] = slice[limit_indices=(2,) start_indices=(0,) strides=None] a\n"
        "    d:f32[2] = add c b\n"
        "  in (d,) }",
    ),
    (
        "no_arguments",
        lambda: fnp.zeros(3) + 1.0,
        (),
        {},
        "{ lambda ; . let\n"
        "    a:f32[3] = broadcast_in_dim[broadcast_dimensions=() shape=(3,)] 0.0:f32[]\n"
        "    b:f32[3] = add a 1.0:f32[]\n"
        "  in (b,) }",
    ),
    ("literal_output", lambda x: 1.0, (X3,), {}, "{ lambda ; a:f32[3]. let  in (1.0:f32[],) }"),
    (
        "softmax_multiline",
        lambda x: fnp.exp(x) / fnp.sum(fnp.exp(x)),
        (X3,),
        {},
        "{ lambda ; a:f32[3]. let\n"
        "    b:f32[3] = exp a\n"
        "    c:f32[3] = exp a\n"
        "    d:f32[] = reduce_sum[axes=(0,)] c\n"
        "    e:f32[3] = div b d\n"
        "  in (e,) }",
    ),
    (
        "matmul_long_params",
        lambda x: x @ x.T,
        (X23,),
        {},
        "{ lambda ; a:f32[2,3]. let\n"
        "    b:f32[3,2] = transpose[permutation=(1, 0)] a\n"
        "    c:f32[2,2] = dot_general[dimension_numbers=(((1,), (0,)), ((), ())) "
        "preferred_element_type=None] a b\n"
        "  in (c,) }",
    ),
]


@pytest.mark.usefixtures("no_x64")  # (JAX's default mode prints these)
@pytest.mark.parametrize("name,f,args,kw,expected", GOLDEN, ids=[g[0] for g in GOLDEN])
def test_printer_golden(name, f, args, kw, expected):
    assert pp(f, *args, **kw) == expected


def _chain(np_):
    def f(x):
        for _ in range(15):
            x = np_.sin(x) * 2.0
        return np_.tanh(x) - np_.exp(x)

    return f


JAX_SAME = [  # functions whose Jaxpr is the same in JAX (same primitives, no extra params)
    ("sin_mul", lambda np_: lambda x: np_.sin(x) * 2.0, X3),
    ("arith", lambda np_: lambda x, y: (x + y, x - y, x * y), (X3, X3)),
    ("compare_or", lambda np_: lambda x: (x > 0) | (x < -1.0), X3),
    ("int_add", lambda np_: lambda x: x + 1, np.ones(3, np.int32)),
    ("transpose", lambda np_: lambda x: x.T, X23),
    ("more_than_26_vars", _chain, X3),
]


@pytest.mark.parametrize("name,make,args", JAX_SAME, ids=[j[0] for j in JAX_SAME])
def test_printer_matches_jax(name, make, args):
    args = args if isinstance(args, tuple) else (args,)
    ours = pp(make(fnp), *args)
    theirs = str(jax.make_jaxpr(make(jjnp))(*args))
    assert _norm(ours) == _norm(theirs)
    if "\n" in ours:  # the multi-line layout is JAX's
        assert ours.splitlines()[0] == theirs.splitlines()[0]
        assert ours.splitlines()[-1] == theirs.splitlines()[-1]
        assert all(line.startswith("    ") for line in ours.splitlines()[1:-1])


def test_variable_names_after_z():
    text = pp(_chain(fnp), X3)
    for name in ("z:f32[3] = sin y", "ba:f32[3] = mul z 2.0:f32[]", "bd:f32[3] = sin bc"):
        assert name in text


def test_empty_body_matches_jax_exactly():
    assert pp(lambda x: x, X3) == str(jax.make_jaxpr(lambda x: x)(X3))


def test_closed_jaxpr_holds_consts_and_runs():
    closed = functx.make_jaxpr(lambda x: x * CONST + 1.0)(X3)
    assert isinstance(closed, ClosedJaxpr)
    assert len(closed.consts) == 1 and closed.consts[0] is CONST
    assert [str(v.aval.str_short()) for v in closed.jaxpr.constvars] == ["f32[3]"]
    (out,) = jaxpr_as_fun(closed)(np.full(3, 2.0, np.float32))
    np.testing.assert_array_equal(np.asarray(out), np.arange(3) * 2.0 + 1.0)
    assert closed.in_avals == [ShapedArray((3,), F32)]
    assert closed.out_avals == [ShapedArray((3,), F32)]


def test_source_info_is_the_user_line():
    closed = functx.make_jaxpr(lambda x: fnp.sin(x) * 2.0)(X3)  # this line
    import inspect

    line = inspect.currentframe().f_lineno - 3
    for e in closed.eqns:
        assert e.source_info.file == __file__
        assert e.source_info.line == line


def test_shaped_array():
    a = ShapedArray((2, 3), F32)
    assert a.ndim == 2 and a.size == 6 and a.str_short() == "f32[2,3]"
    assert a == ShapedArray([2, 3], F32) and hash(a) == hash(ShapedArray((2, 3), F32))
    w = a.update(weak_type=True)
    assert w != a and w.strip_weak() == a
    assert repr(w) == "ShapedArray(float32[2, 3], weak_type=True)"
    assert ShapedArray((), np.dtype(np.bool_)).str_short() == "bool[]"
    assert ShapedArray((0,), F32).size == 0


# --- typecheck ---------------------------------------------------------------------------------
TRACED = [
    (lambda x: fnp.sin(x) * 2.0, (X3,)),
    (lambda x: x + CONST, (X3,)),
    (lambda x: fnp.sum(fnp.exp(x) @ x.T, axis=0), (X23,)),
    (lambda x: lax.cumsum(x[::-1], 0).astype(np.int32) // 2, (X3,)),
    (lambda x: fnp.where(x > 0, x, fnp.zeros_like(x)).reshape(3, 2)[1:], (X23,)),
    (lambda d: (d["a"] * 2, d["b"] + 1), ({"a": X3, "b": np.int8(1)},)),
]


@pytest.mark.parametrize("f,args", TRACED)
def test_typecheck_accepts_traced(f, args):
    closed = functx.make_jaxpr(f)(*args)
    typecheck_jaxpr(closed)
    typecheck_jaxpr(closed.jaxpr)


def _sin_cos():
    """{ lambda ; a:f32[3]. let b = sin a; c = cos b in (c,) }, built by hand."""
    f3 = ShapedArray((3,), F32)
    a, b, c = Var(f3), Var(f3), Var(f3)
    e1 = Eqn(P.sin_p, [a], [b], {})
    e2 = Eqn(P.cos_p, [b], [c], {})
    return a, b, c, e1, e2


def test_typecheck_accepts_hand_built():
    a, b, c, e1, e2 = _sin_cos()
    typecheck_jaxpr(Jaxpr([], [a], [e1, e2], [c]))
    d = Var(ShapedArray((3,), F32))
    e3 = Eqn(P.mul_p, [c, Literal(2.0, ShapedArray((), F32, True))], [d], {})
    typecheck_jaxpr(Jaxpr([], [a], [e1, e2, e3], [d, a]))


def test_typecheck_rejects_use_before_definition():
    a, b, c, e1, e2 = _sin_cos()
    with pytest.raises(FunctxTypeError, match="before it is defined"):
        typecheck_jaxpr(Jaxpr([], [a], [e2, e1], [c]))


def test_typecheck_rejects_undefined_output():
    a, b, c, e1, e2 = _sin_cos()
    with pytest.raises(FunctxTypeError, match="outvars uses"):
        typecheck_jaxpr(Jaxpr([], [a], [e1], [c]))


def test_typecheck_rejects_wrong_output_aval():
    a, b, c, e1, e2 = _sin_cos()
    bad = Var(ShapedArray((4,), F32))
    with pytest.raises(FunctxTypeError, match=r"output is f32\[4\], inference gives f32\[3\]"):
        typecheck_jaxpr(Jaxpr([], [a], [e1, Eqn(P.cos_p, [b], [bad], {})], [bad]))
    bad = Var(ShapedArray((3,), np.dtype(np.float64)))
    with pytest.raises(FunctxTypeError, match="f64"):
        typecheck_jaxpr(Jaxpr([], [a], [e1, Eqn(P.cos_p, [b], [bad], {})], [bad]))


def test_typecheck_rejects_double_definition():
    a, b, c, e1, e2 = _sin_cos()
    with pytest.raises(FunctxTypeError, match="defined twice"):
        typecheck_jaxpr(Jaxpr([], [a], [e1, Eqn(P.cos_p, [a], [b], {})], [b]))
    with pytest.raises(FunctxTypeError, match="defined twice"):
        typecheck_jaxpr(Jaxpr([], [a], [Eqn(P.sin_p, [a], [a], {})], [a]))
    with pytest.raises(FunctxTypeError, match="defined twice"):
        typecheck_jaxpr(Jaxpr([], [a, a], [], [a]))


def test_typecheck_rejects_bad_operands_and_literals():
    f3 = ShapedArray((3,), F32)
    a, b = Var(f3), Var(f3)
    i3 = Var(ShapedArray((3,), np.dtype(np.int32)))
    with pytest.raises(FunctxTypeError, match="dtypes"):  # the primitive's inference rejects it
        typecheck_jaxpr(Jaxpr([], [a, i3], [Eqn(P.add_p, [a, i3], [b], {})], [b]))
    lit = Literal(np.ones(3, np.float32), f3)
    with pytest.raises(FunctxTypeError, match="not a scalar"):
        typecheck_jaxpr(Jaxpr([], [a], [Eqn(P.add_p, [a, lit], [b], {})], [b]))
    with pytest.raises(FunctxTypeError, match="outputs"):
        typecheck_jaxpr(Jaxpr([], [a], [Eqn(P.sin_p, [a], [b, Var(f3)], {})], [b]))


def test_typecheck_rejects_wrong_consts():
    closed = functx.make_jaxpr(lambda x: x + CONST)(X3)
    bad = ClosedJaxpr(closed.jaxpr, [np.zeros(4, np.float32)])
    with pytest.raises(FunctxTypeError, match="const"):
        typecheck_jaxpr(bad)
    bad = ClosedJaxpr(closed.jaxpr, [np.zeros(3, np.float64)])
    with pytest.raises(FunctxTypeError, match="const"):
        typecheck_jaxpr(bad)


def test_hand_broken_jaxprs_name_the_equation():
    closed = functx.make_jaxpr(lambda x: fnp.cos(fnp.sin(x)))(X3)
    jaxpr = closed.jaxpr
    broken = Jaxpr(jaxpr.constvars, jaxpr.invars, jaxpr.eqns[::-1], jaxpr.outvars)
    with pytest.raises(FunctxTypeError, match=r"cos at .*test_core\.py"):
        typecheck_jaxpr(broken)


def test_bind_goes_to_the_innermost_trace_else_the_eager_path():
    """core.bind: an active trace's process_primitive records the call; with none, the eager
    path registered in core.eager_rules["cpu"] runs it."""

    class Recorder:
        def __init__(self):
            self.calls = []

        def process_primitive(self, prim, args, params):
            self.calls.append((prim.name, len(args), params))
            return "staged"

    outer, inner = Recorder(), Recorder()
    assert not core.is_tracing()
    with core.active_trace(outer), core.active_trace(inner):
        assert core.is_tracing()
        assert lax.add(X3, X3) == "staged"
    assert inner.calls == [("add", 2, {})] and outer.calls == []
    assert not core.is_tracing()
    assert core.eager_rules["cpu"] is functx.tracing.eager_bind
    np.testing.assert_array_equal(np.asarray(lax.add(X3, X3)), X3 + X3)


def test_eqn_effects_as_jax():
    """``eqn.effects`` (JAX's): empty for pure equations, the callback's for one that prints,
    and a branch's effects on the ``cond`` holding it."""
    import functx.numpy as jnp

    j = functx.make_jaxpr(lambda x: (functx.debug.print("x {}", x), jnp.sin(x))[1])(1.0)
    assert [bool(e.effects) for e in j.jaxpr.eqns] == [True, False]

    def f(x):
        return functx.lax.cond(x > 0, lambda: (functx.debug.print("a"), x)[1], lambda: x)

    eqns = functx.make_jaxpr(f)(1.0).jaxpr.eqns
    assert eqns[-1].primitive.name == "cond" and eqns[-1].effects
    assert not any(e.effects for e in eqns[:-1])
