"""``functx.experimental.jet`` against JAX's ``jax.experimental.jet`` (values, dtypes, weak types,
orders 1-4, both x64 modes, ``factorial_scaled``), against closed forms in float64, against nested
``jax.jvp`` where JAX's jet has no rule (control flow, custom_jvp), the series rules against the
composite rule, jit / vmap / grad of jet, and JAX's errors."""

from __future__ import annotations

import math

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from errutil import raises_as_jax
from jax.experimental import jet as jjet
from x64util import x64_off

import functx
import functx.lax as flax
import functx.numpy as fjnp
from functx.experimental import jet as fjet
from functx.test_util import check_grads

W = np.random.default_rng(1).normal(size=(3, 4))


def _mlp(np_):
    return lambda x: np_.tanh(np_.tanh(x @ W) @ W.T + 0.5).sum()


# name: (function of a numpy-like module, order): each primitive has a series rule or takes the
# composite one; the orders 1-4 are spread over the functions to keep the tests cheap.
FUNS = {
    "exp": (lambda np_: np_.exp, 4),
    "log": (lambda np_: lambda x: np_.log(x * x + 1.0), 3),
    "sin_cos": (lambda np_: lambda x: np_.sin(x) * np_.cos(2.0 * x), 2),
    "tanh": (lambda np_: np_.tanh, 1),
    "pow_div": (lambda np_: lambda x: x**3 / (x * x + 2.0) - x**2, 4),
    "sqrt_logistic": (
        lambda np_: lambda x: np_.sqrt(x * x + 1.0) + jax_or_fx(np_).nn.sigmoid(x),
        2,
    ),
    "hyperbolic_log1p": (
        lambda np_: lambda x: np_.sinh(x) * np_.cosh(x) - np_.expm1(x) + np_.log1p(x * x),
        4,
    ),
    "reductions": (lambda np_: lambda x: np_.stack([np_.sum(np_.sin(x)), np_.max(x * x)]), 3),
    "reshape_ops": (
        lambda np_: lambda x: np_.concatenate([x[::-1], x.reshape(3, 1)[:, 0] * x]),
        1,
    ),
    "mlp": (_mlp, 3),
    "indexing": (
        lambda np_: (
            lambda x: np_.concatenate(
                [
                    np_.where(x > 0, np_.exp(x), x * x)[np.array([2, 0, 1])],
                    np_.pad(x, (1, 2)),
                    jax_or_fx(np_).lax.dynamic_slice(x, (1,), (2,)),
                ]
            )
        ),
        2,
    ),
}


def jax_or_fx(np_):
    return jax if np_ is jjnp else functx


def _series(rng, shape, order, dtype=np.float64):
    x = rng.normal(size=shape).astype(dtype)
    return x, [rng.normal(size=shape).astype(dtype) for _ in range(order)]


def _close(got, want, rtol=1e-9, atol=1e-10, weak=True):
    g_leaves, w_leaves = functx.tree_util.tree_leaves(got), jax.tree.leaves(want)
    assert functx.tree_util.tree_structure(got).num_leaves == len(w_leaves)
    for g, w in zip(g_leaves, w_leaves):
        if not hasattr(w, "dtype"):  # JAX returns a constant output as it is (a Python float)
            np.testing.assert_allclose(g, w)
            continue
        assert (g.dtype, g.shape) == (w.dtype, w.shape), (g, w)
        if weak:
            assert g.weak_type == w.weak_type, (g, w)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", sorted(FUNS))
def test_values_against_jax_orders_1_to_4(name, rng):
    f, order = FUNS[name]
    x, s = _series(rng, (3,), order)
    _close(fjet.jet(f(fjnp), (x,), (s,)), jjet.jet(f(jjnp), (x,), (s,)))


@pytest.mark.parametrize("name", sorted(FUNS))
def test_series_rules_match_the_composite_rule(name, rng):
    f, order = FUNS[name][0](fjnp), FUNS[name][1]
    x, s = _series(rng, (3,), order)
    by_rules = fjet.jet(f, (x,), (s,))
    _close(by_rules, fjet._jet(f, (x,), (s,), composite_only=True), rtol=1e-10)


def test_closed_forms_in_float64():
    x0 = 0.7
    out, series = fjet.jet(fjnp.exp, (x0,), ((1.0, 0.0, 0.0, 0.0),))
    np.testing.assert_allclose([out, *series], [math.exp(x0)] * 5, rtol=1e-14)
    # x(t) = t + t^2/2! + t^3/3! + t^4/4!: exp(x(t))'s derivatives at 0 are the Bell numbers
    _, series = fjet.jet(fjnp.exp, (0.0,), ((1.0, 1.0, 1.0, 1.0),))
    np.testing.assert_allclose(series, [1, 2, 5, 15], rtol=1e-14)
    _, series = fjet.jet(fjnp.sin, (x0,), ((1.0, 0.0, 0.0, 0.0),))
    s, c = math.sin(x0), math.cos(x0)
    np.testing.assert_allclose(series, [c, -s, -c, s], rtol=1e-14)
    _, series = fjet.jet(lambda x: x**3 - 2 * x, (2.0,), ((1.0, 0.0, 0.0, 0.0),))
    np.testing.assert_allclose(series, [10, 12, 6, 0], rtol=1e-14, atol=0)
    # at x0 = 0 (where the x^n recurrence of JAX's rule divides by zero)
    _, series = fjet.jet(lambda x: x**3, (0.0,), ((1.0, 0.0, 0.0),))
    np.testing.assert_allclose(series, [0, 0, 6], atol=0)


def test_first_terms_are_the_directional_derivatives_finite_differences():
    f = FUNS["mlp"][0](fjnp)
    x, (v,) = _series(np.random.default_rng(2), (3,), 1)
    _, (d1, d2) = fjet.jet(f, (x,), ((v, np.zeros(3)),))
    h = 1e-4
    fd1 = (f(x + h * v) - f(x - h * v)) / (2 * h)
    fd2 = (f(x + h * v) - 2 * f(x) + f(x - h * v)) / h**2
    np.testing.assert_allclose(d1, fd1, rtol=1e-6)
    np.testing.assert_allclose(d2, fd2, rtol=1e-5)


def _scan_loop(c, xs):
    outs = []
    for y in xs:
        outs.append(c)
        c = c * y + jjnp.sin(c)
    return jjnp.stack(outs)


def _tanh_loop(x):
    c = x
    for _ in range(3):
        c = jjnp.tanh(c) * x
    return c


@functx.custom_vjp
def _sin_vjp(x):
    return fjnp.sin(x)


_sin_vjp.defvjp(lambda x: (fjnp.sin(x), x), lambda x, g: (g * fjnp.cos(x),))

# name: (a functx function, the same function without control flow or custom_jvp for JAX's jet)
CONTROL = {
    "custom_vjp": (lambda x: _sin_vjp(x) * x, lambda x: jjnp.sin(x) * x),
    "cond": (lambda x: flax.cond(x.sum() > 0, fjnp.sin, fjnp.cos, x), None),
    "scan": (lambda x: flax.scan(lambda c, y: (c * y + fjnp.sin(c), c), x[0], x)[1], None),
    "while_loop": (
        lambda x: flax.while_loop(
            lambda c: c[0] < 3, lambda c: (c[0] + 1, fjnp.tanh(c[1]) * x), (0, x)
        )[1],
        _tanh_loop,
    ),
    "relu_softplus": (
        lambda x: functx.nn.relu(x) + functx.nn.softplus(x),
        lambda x: jjnp.where(x > 0, x, 0.0) + jjnp.log1p(jjnp.exp(x)),
    ),
}


@pytest.mark.parametrize("name", sorted(CONTROL))
def test_control_flow_and_custom_jvp(name, rng):
    # JAX's jet has no rule for cond, scan and while, and fails on custom_jvp (relu, softplus)
    # and custom_vjp functions: the reference is JAX's jet of the function written without them
    x, s = _series(rng, (3,), 3)
    x = x + 0.1 * np.sign(x)  # (away from relu's kink)
    f, g = CONTROL[name]
    if name == "cond":
        g = jjnp.sin if x.sum() > 0 else jjnp.cos
    elif name == "scan":
        g = lambda x: _scan_loop(x[0], x)  # noqa: E731
    _close(fjet.jet(f, (x,), (s,)), jjet.jet(g, (x,), (s,)))


def test_pytree_outputs_two_arguments_and_factorial_scaled(rng):
    def f(np_):
        return lambda x, y: {"a": x * y, "b": (np_.exp(x) @ y, 3.0)}

    (x, sx), (y, sy) = _series(rng, (2,), 2), _series(rng, (2,), 2)
    for scaled in (True, False):
        got = fjet.jet(f(fjnp), (x, y), (sx, sy), factorial_scaled=scaled)
        _close(got, jjet.jet(f(jjnp), (x, y), (sx, sy), factorial_scaled=scaled))


def test_float32_weak_types_and_integer_inputs_x64_off():
    with x64_off():
        x = np.float32([0.5, -1.0])
        s = (np.float32([1.0, 2.0]), np.float32([0.5, 0.5]))
        _close(fjet.jet(fjnp.tanh, (x,), (s,)), jjet.jet(jjnp.tanh, (x,), (s,)), 1e-6, 1e-6)
        # Python scalars: weakly typed results, series included
        got = fjet.jet(lambda x: fjnp.sin(x) * x, (1.0,), ((1.0, 0.5),))
        _close(got, jjet.jet(lambda x: jjnp.sin(x) * x, (1.0,), ((1.0, 0.5),)), 1e-6, 1e-6)
        # an integer primal's series flows through its conversion to float (as in JAX)
        # (JAX's series are not weakly typed there: they come from the strongly typed k! scaling)
        got = fjet.jet(lambda i: i * 2.5, (np.int32(2),), ((1.0, 3.0),))
        want = jjet.jet(lambda i: i * 2.5, (np.int32(2),), ((1.0, 3.0),))
        _close(got, want, 1e-6, 1e-6, weak=False)
        # a constant output: zero series (JAX returns the Python float as it is)
        out, series = fjet.jet(lambda x: (x, 3.0), (1.0,), ((1.0, 0.5),))
        assert float(out[1]) == 3.0 and [float(t) for t in series[1]] == [0.0, 0.0]
        # an integer result: series of zeros of its dtype (JAX has no jet rule for argmax)
        _, series = fjet.jet(lambda x: fjnp.argmax(x), (x,), ((x,),))
        assert series[0].dtype == np.int32 and int(series[0]) == 0


def test_order_zero(rng):
    x, _ = _series(rng, (2,), 0)
    _close(fjet.jet(fjnp.sin, (x,), ((),)), jjet.jet(jjnp.sin, (x,), ((),)))


def test_jit_vmap_and_grad_of_jet(rng):
    # (eager jet is checked against JAX above: compiled and batched jet against eager jet)
    def g(x, s):
        return fjet.jet(lambda x: fjnp.sin(x) * x, (x,), ((s, s),))

    x, s = rng.normal(size=(2, 3)), rng.normal(size=(2, 3))
    _close(functx.jit(g)(x[0], s[0]), g(x[0], s[0]), rtol=1e-14)
    rows = [g(x[i], s[i]) for i in range(2)]
    _close(
        functx.vmap(g)(x, s), jax.tree.map(lambda *r: np.stack(r), *rows), rtol=1e-14, weak=False
    )
    check_grads(lambda x: g(x, s[0])[1][1], (x[0],), order=1, modes=("rev",))


def test_series_rules_are_used():
    # the composite rule's nested jvps grow as 2^K: the series rules give a smaller Jaxpr
    f = FUNS["mlp"][0](fjnp)
    x = np.ones(3)

    def size(jet, **kw):
        jaxpr = functx.make_jaxpr(lambda x, s: jet(f, (x,), ((s,) * 4,), **kw))(x, x)
        return len(jaxpr.jaxpr.eqns)

    assert 2 * size(fjet.jet) < size(fjet._jet, composite_only=True)


def test_errors_as_jax():
    def call(f, primals, series):
        return lambda m: m.jet(f(m), primals, series)

    sin = lambda m: fjnp.sin if m is fjet else jjnp.sin  # noqa: E731
    lengths = call(lambda m: lambda x, y: x * y, (1.0, 2.0), ((1.0,), (1.0, 2.0)))
    raises_as_jax(lengths, jjet, fjet, ValueError)
    raises_as_jax(call(sin, ({"a": 1.0},), (({"a": 1.0},),)), jjet, fjet, ValueError)
    raises_as_jax(call(sin, (1.0,), (([1.0, 2.0],),)), jjet, fjet, ValueError)  # a term pytree
    raises_as_jax(call(sin, (np.ones(3),), ((np.ones(2),),)), jjet, fjet, TypeError)
    raises_as_jax(call(sin, 1.0, ((1.0,),)), jjet, fjet, TypeError)
    raises_as_jax(call(sin, (1.0,), (1.0,)), jjet, fjet, TypeError)
    with pytest.raises(TypeError, match="term 0 for argument 0 has shape") as info:
        fjet.jet(fjnp.sin, (np.ones(3),), ((np.ones(2),),))
    assert "test_jet.py" in str(info.value)  # the user's line


def test_unchecked_inputs_that_jax_accepts_are_refused():
    # (documented: JAX broadcasts a scalar term through elementwise functions only, and unpacks
    # an array given as the primals)
    x = np.array([0.3, -0.7, 1.2], np.float32)
    jax_out = jjet.jet(jjnp.sin, (x,), ((1.0, 0.0),))[1][0]
    assert jax_out.shape == x.shape
    with pytest.raises(TypeError, match="term 0 for argument 0 has shape"):
        fjet.jet(fjnp.sin, (x,), ((1.0, 0.0),))
    assert jjet.jet(jjnp.sin, x, ((1.0,),))[0].shape == ()
    with pytest.raises(TypeError, match="must be tuples or lists"):
        fjet.jet(fjnp.sin, x, ((1.0,),))


def test_namespace():
    assert functx.experimental.jet is fjet and fjet.__all__ == ["jet"]
