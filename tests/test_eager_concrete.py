"""Eager transforms see concrete values (issue 18, item 6): outside ``jit`` and ``vmap``, ``grad``,
``value_and_grad``, ``vjp``, ``jvp``, ``linearize``, ``jacfwd``, ``jacrev`` and ``hessian`` run the
function on tracers that carry their values, so Python ``if``/``while``/``int()``/``.item()``/list
indexing work as in JAX; under ``jit``, ``vmap`` and inside control-flow bodies the
ConcretizationError stays. Every case is checked against the installed JAX."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx.errors import ConcretizationError


def relu_sq(np_):
    def f(x):
        if x > 0:
            return x**2
        return -x

    return f


def doubling(np_):
    def f(x):
        while x < 10:
            x = x * 2
        return x

    return f


def int_scale(np_):
    return lambda x: x * int(x)


def item_scale(np_):
    return lambda x: x * x.item()


TABLE = [1.0, 2.0, 3.0]
F = np.float32


def list_index(np_):
    return lambda x, i: x * TABLE[i]


def vector_branch(np_):
    def f(x):
        if (x > 0).all():
            return (x**3).sum()
        return x.sum()

    return f


def range_sum(np_):
    return lambda x: sum(x for _ in range(int(x)))


def cond_then_if(m):
    def f(x):
        y = m.lax.cond(x > 0, lambda v: v * 2, lambda v: v, x)
        return y * (1 if y > 1 else 2)

    return f


def loop_then_if(m):
    def f(x):
        y = m.lax.fori_loop(0, 3, lambda i, c: c * 2, x)
        return y if y > 5 else -y

    return f


def _same(ours, theirs):
    ol, tl = jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(theirs)
    assert len(ol) == len(tl)
    for o, t in zip(ol, tl):
        np.testing.assert_allclose(np.asarray(o), np.asarray(t), rtol=1e-6)
        assert np.asarray(o).dtype == np.asarray(t).dtype


CASES = [
    ("grad_if_pos", lambda m: m.grad(relu_sq(m)), (F(2.0),)),
    ("grad_if_neg", lambda m: m.grad(relu_sq(m)), (F(-2.0),)),
    ("value_and_grad", lambda m: m.value_and_grad(relu_sq(m)), (F(3.0),)),
    ("grad_grad", lambda m: m.grad(m.grad(relu_sq(m))), (F(2.0),)),
    ("jacfwd_jacrev", lambda m: m.jacfwd(m.jacrev(relu_sq(m))), (F(-2.0),)),
    ("grad_while", lambda m: m.grad(doubling(m)), (F(1.5),)),
    ("grad_int", lambda m: m.grad(int_scale(m)), (F(2.5),)),
    ("grad_item", lambda m: m.grad(item_scale(m)), (F(2.0),)),
    ("grad_range", lambda m: m.grad(range_sum(m)), (F(3.0),)),
    ("jvp", lambda m: lambda x: m.jvp(relu_sq(m), (x,), (F(1.0),)), (F(2.0),)),
    ("vjp", lambda m: lambda x: m.vjp(relu_sq(m), x)[1](F(1.0)), (F(2.0),)),
    ("linearize", lambda m: lambda x: m.linearize(relu_sq(m), x)[1](F(1.0)), (F(-2.0),)),
    ("jacrev_vector", lambda m: m.jacrev(vector_branch(m)), (-np.ones(2, np.float32),)),
    ("cond_then_if", lambda m: m.grad(cond_then_if(m)), (F(1.0),)),
    ("loop_then_if", lambda m: m.grad(loop_then_if(m)), (F(1.0),)),
    ("bool_mask", lambda m: m.grad(lambda x: x[x > 0].sum()), (np.array([1, -1, 2], F),)),
    (
        "list_index",
        lambda m: m.grad(list_index(m), allow_int=True),
        (F(2.0), np.int32(1)),
    ),
]


@pytest.mark.parametrize("name,make,args", CASES, ids=[c[0] for c in CASES])
def test_python_control_flow_on_eager_tracers_matches_jax(name, make, args):
    theirs = make(jax)(*args)
    ours = make(functx)(*args)
    _same(ours, theirs)


def test_hessian_of_python_control_flow():
    # (JAX's eager hessian compiles every operation: ~8 s; these are its results)
    assert float(functx.hessian(relu_sq(fnp))(F(2.0))) == 2.0
    assert float(functx.hessian(relu_sq(fnp))(F(-2.0))) == 0.0
    h = functx.hessian(vector_branch(fnp))(np.ones(2, np.float32))
    np.testing.assert_array_equal(h, np.diag([6.0, 6.0]).astype(np.float32))
    assert h.dtype == np.float32
    np.testing.assert_array_equal(functx.hessian(vector_branch(fnp))(-np.ones(2, F)), 0)


def test_traces_are_specialised_to_values_and_not_reused():
    f = functx.grad(relu_sq(fnp))
    # the same types with other values take the other branch each time
    assert [float(f(F(v))) for v in (2.0, -2.0, 3.0, -1.0)] == [4.0, -1.0, 6.0, -1.0]


RAISES = [
    ("vmap_grad", lambda m: m.vmap(m.grad(relu_sq(m))), (np.ones(3, np.float32),)),
    ("jit_grad", lambda m: m.jit(m.grad(relu_sq(m))), (F(2.0),)),
    ("grad_jit", lambda m: m.grad(m.jit(relu_sq(m))), (F(2.0),)),
    ("float", lambda m: m.grad(lambda x: x * float(x)), (F(2.0),)),  # JAX raises too
    ("complex", lambda m: m.grad(lambda x: x * complex(x).real), (F(2.0),)),
    ("tolist", lambda m: m.grad(lambda x: x * x.tolist()), (F(2.0),)),
    (
        "cond_body",
        lambda m: m.grad(lambda x: m.lax.cond(True, relu_sq(m), lambda y: y, x)),
        (F(1.0),),
    ),
    (
        "scan_body",
        lambda m: m.grad(
            lambda x: m.lax.scan(lambda c, _: (relu_sq(m)(c), None), x, None, length=2)[0]
        ),
        (F(1.0),),
    ),
]


@pytest.mark.parametrize("name,make,args", RAISES, ids=[c[0] for c in RAISES])
def test_concretization_error_stays_where_jax_raises(name, make, args):
    with pytest.raises(jax.errors.ConcretizationTypeError):
        make(jax)(*args)
    with pytest.raises(ConcretizationError):
        make(functx)(*args)


def test_numpy_conversion_and_nonscalar_bool_as_jax():
    with pytest.raises(ConcretizationError):
        functx.grad(lambda x: x * np.asarray(x))(2.0)
    x = np.ones(2, np.float32)
    with pytest.raises(ValueError, match="ambiguous"):
        jax.grad(lambda v: v.sum() if v > 0 else 0.0)(jnp.asarray(x))
    with pytest.raises(ValueError, match="ambiguous"):
        functx.grad(lambda v: v.sum() if v > 0 else 0.0)(x)


def test_float_index_of_a_valued_tracer_is_a_type_error():
    with pytest.raises(TypeError):
        jax.grad(lambda x: x * TABLE[x])(1.0)
    with pytest.raises(TypeError):
        functx.grad(lambda x: x * TABLE[x])(1.0)


def test_tracers_are_instances_of_array_under_every_transform():
    seen = []

    def make():  # a new function each time: no transform reuses another's cached trace
        def f(x):
            seen.append((isinstance(x, functx.Array), type(x) is functx.Array))
            return (x * 2.0).sum()

        return f

    x = np.ones(2, np.float32)
    functx.make_jaxpr(functx.jit(make()))(x)  # (traced, not compiled)
    functx.vmap(make())(x)
    functx.grad(make())(x)
    functx.jvp(make(), (x,), (x,))
    functx.make_jaxpr(make())(x)
    assert seen == [(True, False)] * 5
    assert isinstance(fnp.ones(2), functx.Array) and not isinstance(x, functx.Array)
    assert not isinstance(1.0, functx.Array)
    # subclasses keep the plain check
    assert not isinstance(functx.make_jaxpr, functx.Array)
