"""functx.extend.core against jax.extend.core: a user primitive (eager, staged, several results,
its missing rules as JAX reports them), jaxpr_as_fun, check_jaxpr and the Jaxpr pieces."""

from __future__ import annotations

import jax
import jax.extend.core as jcore
import numpy as np
import pytest

import functx
import functx.extend.core as fcore

X = np.arange(3.0, dtype=np.float32)


def _twice(m, core):
    p = core.Primitive("twice")
    p.def_impl(lambda x: x * 2)
    p.def_abstract_eval(lambda x: m.core.ShapedArray(x.shape, x.dtype))
    return p


def _split2(core):
    p = core.Primitive("split2")
    p.multiple_results = True
    p.def_impl(lambda x: [x, -x])
    p.def_abstract_eval(lambda x: [x, x])
    return p


def test_user_primitive_as_jax():
    for m, core in ((functx, fcore), (jax, jcore)):
        twice, split2 = _twice(m, core), _split2(core)
        np.testing.assert_array_equal(np.asarray(twice.bind(X)), 2 * X)
        assert str(m.make_jaxpr(twice.bind)(X)) == (
            "{ lambda ; a:f32[3]. let b:f32[3] = twice a in (b,) }"
        )
        a, b = split2.bind(X)
        np.testing.assert_array_equal(np.asarray(b), -X)
        assert "b:f32[3] c:f32[3] = split2 a" in str(m.make_jaxpr(split2.bind)(X))
        assert str(twice) == "twice"
        for transform in (
            lambda: m.jit(twice.bind)(X),
            lambda: m.grad(lambda x: twice.bind(x).sum())(X),
            lambda: m.vmap(twice.bind)(np.ones((2, 3), np.float32)),
        ):
            with pytest.raises(NotImplementedError, match="twice"):
                transform()


def test_user_primitive_impl_gets_arrays():
    p = fcore.Primitive("bump")
    p.def_impl(lambda x: x.at[0].add(1.0))  # (an Array method: the impl gets functx Arrays)
    p.def_abstract_eval(lambda x: x)
    np.testing.assert_array_equal(np.asarray(p.bind(X)), X + np.float32([1, 0, 0]))


def test_effectful_primitive_is_kept():
    p = fcore.Primitive("noted")
    p.def_impl(lambda x: x)
    p.def_effectful_abstract_eval(lambda x: (x, {"noted"}))
    jaxpr = functx.make_jaxpr(lambda x: (p.bind(x), x + 1.0)[1])(X).jaxpr
    assert [e.primitive.name for e in jaxpr.eqns] == ["noted", "add"]
    assert jaxpr.eqns[0].effects


def test_jaxpr_pieces_and_functions_as_jax():
    for m, core in ((functx, fcore), (jax, jcore)):
        cj = m.make_jaxpr(lambda x: (x * 2.0, x + 1.0))(np.float32(3))
        assert isinstance(cj, core.ClosedJaxpr) and isinstance(cj.jaxpr, core.Jaxpr)
        eqn = cj.jaxpr.eqns[0]
        assert isinstance(eqn, core.JaxprEqn) and str(eqn.primitive) == "mul"
        assert isinstance(eqn.invars[0], core.Var) and isinstance(eqn.invars[1], core.Literal)
        assert eqn.invars[1].val == 2.0
        core.check_jaxpr(cj.jaxpr)
        out = core.jaxpr_as_fun(cj, np.float32(4))()  # (curried, as JAX's)
        assert [float(v) for v in out] == [8.0, 5.0]
        assert [float(v) for v in core.jaxpr_as_fun(cj)(np.float32(1))] == [2.0, 2.0]
    assert issubclass(fcore.JaxprTypeError, TypeError)


def test_missing_names_say_so():
    with pytest.raises(AttributeError, match="not implemented"):
        _ = functx.extend.backend
    with pytest.raises(AttributeError, match="not implemented"):
        _ = fcore.new_jaxpr_eqn
