"""custom_jvp and custom_vjp: the user's rule is used (not autodiff of the function), against
``jax.custom_jvp`` / ``jax.custom_vjp`` with the same rules and finite differences; nondiff_argnums,
pytree residuals, symbolic zeros, closures, stop_gradient inside rules, higher order, vmap, the
printed equations, and the errors (naming the function and the user's line)."""

from __future__ import annotations

import inspect
from functools import partial

import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx import lax
from functx.control.custom_derivatives import SymbolicZero
from functx.errors import FunctxTypeError, FunctxValueError, UnsupportedError
from functx.test_util import check_grads

jax = pytest.importorskip("jax")
jnp = jax.numpy

F64 = np.float64


def _close(a, b, **kw):
    for x, y in zip(jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-12, atol=1e-14, **kw)


# --- custom_jvp -----------------------------------------------------------------------------------
def _make_scaled_sin(cj, m):
    """sin(x) * y whose rule deliberately doubles the x-derivative (so it is not autodiff's)."""

    @cj
    def f(x, y):
        return m.sin(x) * y

    @f.defjvp
    def f_jvp(primals, tangents):
        x, y = primals
        tx, ty = tangents
        return f(x, y), m.cos(x) * y * tx * 2.0 + m.sin(x) * ty

    return f


f_fx = _make_scaled_sin(functx.custom_jvp, fnp)
f_jx = _make_scaled_sin(jax.custom_jvp, jnp)


def test_custom_jvp_rule_is_used_and_matches_jax():
    x, y = F64(0.7), F64(-1.3)
    np.testing.assert_allclose(f_fx(x, y), np.sin(x) * y)
    _close(functx.grad(f_fx, (0, 1))(x, y), jax.grad(f_jx, (0, 1))(x, y))
    assert np.isclose(float(functx.grad(f_fx)(x, y)), 2 * np.cos(x) * y)
    _close(functx.jvp(f_fx, (x, y), (F64(1), F64(2))), jax.jvp(f_jx, (x, y), (F64(1), F64(2))))
    # higher order differentiates the rule
    _close(functx.grad(functx.grad(f_fx))(x, y), jax.jit(jax.grad(jax.grad(f_jx)))(x, y))
    _close(
        functx.hessian(lambda v: f_fx(v[0], v[1]))(np.array([x, y])),
        jax.jit(jax.hessian(lambda v: f_jx(v[0], v[1])))(np.array([x, y])),
    )
    # Jacobians
    xs = np.linspace(-1, 1, 4)
    _close(functx.jacfwd(f_fx)(xs, y), jax.jit(jax.jacfwd(f_jx))(xs, y))
    _close(functx.jacrev(f_fx)(xs, y), jax.jit(jax.jacrev(f_jx))(xs, y))


def test_custom_jvp_under_vmap():
    from functx.transforms.vmap import vmap

    xs, ys = np.linspace(-1, 1, 4), np.linspace(1, 2, 4)
    _close(vmap(functx.grad(f_fx))(xs, ys), jax.jit(jax.vmap(jax.grad(f_jx)))(xs, ys))


def test_custom_jvp_jaxprs():
    x = np.float32(1)
    text = str(functx.make_jaxpr(f_fx)(x, x))
    assert "custom_jvp_call[" in text and "name=f" in text and "sin" in text
    # the gradient Jaxpr holds the rule's equations, not the call
    assert str(functx.make_jaxpr(functx.grad(f_fx))(x, x)) == (
        "{ lambda ; a:f32[] b:f32[]. let\n    c:f32[] = cos a\n    d:f32[] = mul c b\n"
        "    e:f32[] = mul d 2.0:f32[]\n  in (e,) }"
    )


def test_custom_jvp_nondiff_argnums():
    @partial(functx.custom_jvp, nondiff_argnums=(0,))
    def app(fn, x):
        return fn(x)

    @app.defjvp
    def app_jvp(fn, primals, tangents):
        (x,), (t,) = primals, tangents
        return app(fn, x), t * 3.0

    @partial(jax.custom_jvp, nondiff_argnums=(0,))
    def japp(fn, x):
        return fn(x)

    japp.defjvp(lambda fn, p, t: (japp(fn, p[0]), t[0] * 3.0))
    x = F64(0.5)
    assert float(functx.grad(lambda v: app(fnp.sin, v))(x)) == 3.0
    _close(
        functx.grad(lambda v: app(fnp.sin, v) * v)(x), jax.grad(lambda v: japp(jnp.sin, v) * v)(x)
    )

    # a static int argument
    @partial(functx.custom_jvp, nondiff_argnums=(1,))
    def power(x, n):
        return x**n

    power.defjvp(lambda n, p, t: (power(p[0], n), n * p[0] ** (n - 1) * t[0]))
    check_grads(lambda v: power(v, 3), (np.array([0.5, -1.5]),), order=2)


def test_custom_jvp_defjvps_and_symbolic_zeros():
    @functx.custom_jvp
    def f(x, y):
        return x * y

    f.defjvps(lambda t, ans, x, y: t * y * 10.0, None)
    assert float(functx.grad(f, 0)(F64(2.0), F64(3.0))) == 30.0
    assert float(functx.grad(f, 1)(F64(2.0), F64(3.0))) == 0.0

    seen = []

    @functx.custom_jvp
    def g(x, y):
        return x + y

    @partial(g.defjvp, symbolic_zeros=True)
    def g_jvp(primals, tangents):
        seen.append([isinstance(t, SymbolicZero) for t in tangents])
        tx, ty = tangents
        if isinstance(tx, SymbolicZero):
            return g(*primals), ty
        return g(*primals), tx if isinstance(ty, SymbolicZero) else tx + ty

    assert float(functx.grad(g)(F64(1.0), F64(2.0))) == 1.0
    assert seen[-1] == [False, True]  # y carries no tangent: the rule sees a symbolic zero
    assert float(functx.grad(lambda y: g(F64(1.0), y) * y)(F64(2.0))) == 5.0
    assert seen[-1] == [True, False]


def test_custom_jvp_pytrees_kwargs_and_stop_gradient_in_rule():
    @functx.custom_jvp
    def f(d, scale=2.0):
        return {"out": fnp.sum(d["a"] * d["b"]) * scale}

    @f.defjvp
    def f_jvp(primals, tangents):
        (d, scale), (t, _) = primals, tangents
        out = f(d, scale)
        # the rule treats b as a constant and stops the gradient through its own coefficient
        return out, {"out": fnp.sum(t["a"] * lax.stop_gradient(d["b"])) * scale}

    d = {"a": np.array([1.0, 2.0]), "b": np.array([3.0, 4.0])}
    g = functx.grad(lambda d: f(d, scale=2.0)["out"])(d)
    np.testing.assert_allclose(g["a"], [6.0, 8.0])
    np.testing.assert_allclose(g["b"], [0.0, 0.0])
    # second order through the stop_gradient is zero in b
    h = functx.grad(lambda b: functx.grad(lambda d: f(d)["out"])({"a": d["a"], "b": b})["a"].sum())(
        d["b"]
    )
    np.testing.assert_allclose(h, [0.0, 0.0])


def test_custom_jvp_integer_inputs_and_outputs():
    @functx.custom_jvp
    def f(x, n):
        return x**n, fnp.argmax(x)

    @f.defjvp
    def f_jvp(primals, tangents):
        (x, n), (tx, tn) = primals, tangents
        assert tn.dtype == jax.dtypes.float0  # integer inputs get float0 tangents, as in JAX
        return f(x, n), (n * x ** (n - 1) * tx, fnp.zeros((), np.int32))

    x = np.array([1.0, 3.0])
    g = functx.grad(lambda v: fnp.sum(f(v, 2)[0]) + f(v, 2)[1])(x)
    np.testing.assert_allclose(g, 2 * x)


def test_custom_jvp_closure_over_an_array():
    w = fnp.asarray(np.array([1.0, 2.0, 3.0]))

    @functx.custom_jvp
    def h(x):
        return x * w

    h.defjvp(lambda p, t: (h(p[0]), t[0] * w * 10.0))
    np.testing.assert_allclose(functx.grad(lambda x: fnp.sum(h(x)))(np.ones(3)), [10, 20, 30])


def test_custom_jvp_a_numerically_stable_function():
    # log1pexp with a stable rule: the plain autodiff of log1p(exp(x)) gives NaN at x = 1000
    @functx.custom_jvp
    def softplus(x):
        return fnp.where(x > 30, x, fnp.log1p(fnp.exp(fnp.minimum(x, 30))))

    softplus.defjvp(lambda p, t: (softplus(p[0]), t[0] * functx.nn.sigmoid(p[0])))
    x = np.array([-1000.0, 0.0, 1000.0])
    np.testing.assert_allclose(functx.grad(lambda v: fnp.sum(softplus(v)))(x), [0.0, 0.5, 1.0])
    check_grads(softplus, (np.array([-2.0, 0.3, 4.0]),), order=2)


# --- custom_vjp -----------------------------------------------------------------------------------
def _make_clip_gradient(cv, m):
    @partial(cv, nondiff_argnums=(1,))
    def clip_gradient(x, c):
        return x

    def fwd(x, c):
        return x, None

    def bwd(c, res, g):
        return (m.clip(g, -c, c),)

    clip_gradient.defvjp(fwd, bwd)
    return clip_gradient


clip_fx = _make_clip_gradient(functx.custom_vjp, fnp)
clip_jx = _make_clip_gradient(jax.custom_vjp, jnp)


def test_custom_vjp_clip_gradient_matches_jax():
    x, w = np.array([0.5, -1.0, 2.0]), np.array([1.0, 3.0, -0.25])
    g = functx.grad(lambda v: fnp.sum(clip_fx(v, 0.5) * w))(x)
    _close(g, jax.grad(lambda v: jnp.sum(clip_jx(v, 0.5) * w))(x))
    np.testing.assert_allclose(g, [0.5, 0.5, -0.25])
    np.testing.assert_allclose(clip_fx(x, 0.5), x)


def _make_residual_fn(cv, m):
    """f(x, d) = sin(x) * d['a'] + d['b'], with residuals a dict holding a tuple and None."""

    @cv
    def f(x, d):
        return m.sin(x) * d["a"] + d["b"]

    def fwd(x, d):
        return f(x, d), {"cos": m.cos(x), "parts": (d["a"], None), "sin": m.sin(x)}

    def bwd(res, ct):
        return ct * res["cos"] * res["parts"][0], {"a": ct * res["sin"], "b": ct}

    f.defvjp(fwd, bwd)
    return f


res_fx = _make_residual_fn(functx.custom_vjp, fnp)
res_jx = _make_residual_fn(jax.custom_vjp, jnp)


def test_custom_vjp_pytree_residuals_and_arguments():
    x = np.array([0.3, -0.4])
    d = {"a": np.array([2.0, 3.0]), "b": np.array([1.0, 1.0])}
    g = functx.grad(lambda x, d: fnp.sum(res_fx(x, d) ** 2), (0, 1))(x, d)
    _close(g, jax.grad(lambda x, d: jnp.sum(res_jx(x, d) ** 2), (0, 1))(x, d))
    out, f_vjp = functx.vjp(res_fx, x, d)
    jout, j_vjp = jax.vjp(res_jx, x, d)
    _close(out, jout)
    ct = np.array([1.0, -2.0])
    _close(f_vjp(ct), j_vjp(ct))
    check_grads(
        lambda x, a, b: res_fx(x, {"a": a, "b": b}), (x, d["a"], d["b"]), order=1, modes=("rev",)
    )


def test_custom_vjp_grad_of_grad_differentiates_bwd():
    x = F64(0.8)
    d = {"a": F64(2.0), "b": F64(1.0)}
    gg = functx.grad(lambda v: functx.grad(res_fx)(v, d))(x)
    jgg = jax.grad(lambda v: jax.grad(res_jx)(v, d))(x)
    np.testing.assert_allclose(gg, jgg, rtol=1e-12)
    np.testing.assert_allclose(gg, -np.sin(x) * 2.0, rtol=1e-12)
    check_grads(lambda v: functx.grad(res_fx)(v, d), (x,), order=1, modes=("rev",))


def test_custom_vjp_bwd_returning_none_and_integer_args():
    @functx.custom_vjp
    def f(x, y, n):
        return x * y * n

    f.defvjp(lambda x, y, n: (f(x, y, n), (x, y, n)), lambda r, g: (g * r[1] * r[2], None, None))
    gx, gy = functx.grad(f, (0, 1))(F64(2.0), F64(3.0), 4)
    assert float(gx) == 12.0 and float(gy) == 0.0


def test_custom_vjp_stop_gradient_in_fwd_and_under_vmap():
    from functx.transforms.vmap import vmap

    @functx.custom_vjp
    def f(x):
        return fnp.sin(x)

    f.defvjp(lambda x: (f(x), lax.stop_gradient(fnp.cos(x))), lambda c, g: (g * c,))
    xs = np.linspace(-1, 1, 5)
    np.testing.assert_allclose(vmap(functx.grad(f))(xs), np.cos(xs))
    np.testing.assert_allclose(functx.jacrev(f)(xs), np.diag(np.cos(xs)), atol=1e-15)
    # the residual was stop_gradient'ed: the second derivative through bwd is cos * 0
    assert float(functx.grad(functx.grad(f))(F64(0.3))) == 0.0


def test_custom_vjp_jaxpr_and_redefinition():
    @functx.custom_vjp
    def f(x):
        return x * 2.0

    f.defvjp(lambda x: (f(x), None), lambda r, g: (g * 10.0,))
    x = np.float32(1)
    assert "custom_vjp_call[" in str(functx.make_jaxpr(f)(x))
    want = "{ lambda ; a:f32[]. let  in (10.0:f32[],) }"
    assert str(functx.make_jaxpr(functx.grad(f))(x)) == want
    assert float(functx.grad(f)(x)) == 10.0
    f.defvjp(lambda x: (f(x), None), lambda r, g: (g * 20.0,))  # a new rule takes effect
    assert float(functx.grad(f)(x)) == 20.0


# --- errors ---------------------------------------------------------------------------------------
def _check_error(exc, match, fn, line=None):
    """``fn`` (a lambda calling the user's code) raises ``exc`` naming ``line`` (by default the
    lambda's own line)."""
    line = fn.__code__.co_firstlineno if line is None else line
    with pytest.raises(exc, match=match) as e:
        fn()
    msg = str(e.value)
    assert f"test_custom_derivatives.py:{line}" in msg, msg
    return msg


def _two_arg_vjp(bwd):
    @functx.custom_vjp
    def mulxy(x, y):
        return x * y

    mulxy.defvjp(lambda x, y: (x * y, (x, y)), bwd)
    return mulxy


def test_custom_vjp_bwd_with_the_wrong_count_or_structure():
    f = _two_arg_vjp(lambda r, g: (g * r[1],))
    msg = _check_error(
        FunctxTypeError,
        r"Custom VJP bwd rule must produce an output with the same container \(pytree\) "
        r"structure as the args tuple of the primal function, and in particular must produce a "
        r"tuple of length equal to the number of arguments",
        lambda: functx.grad(f)(F64(1.0), F64(2.0)),
    )
    f = _two_arg_vjp(lambda r, g: g * r[1])
    _check_error(
        FunctxTypeError,
        "Custom VJP bwd rule must produce an output with the same container",
        lambda: functx.grad(f)(F64(1.0), F64(2.0)),
    )
    f = _two_arg_vjp(lambda r, g: (g * r[1], (g, g)))
    _check_error(
        FunctxTypeError,
        r"Custom VJP bwd rule must produce .*\(output 1: .*, argument 1: .*\)",
        lambda: functx.grad(f)(F64(1.0), F64(2.0)),
    )
    f = _two_arg_vjp(lambda r, g: (g * r[1], fnp.ones(3)))
    _check_error(
        FunctxValueError,
        r"Custom VJP bwd rule must produce an output with the same type as the args tuple of the "
        r"primal function, but at output\[1\] the bwd rule produced an output of type f64\[3\] "
        r"corresponding "
        r"to an input of type f64\[\]",
        lambda: functx.grad(f)(F64(1.0), F64(2.0)),
    )
    del msg


def test_custom_vjp_fwd_errors():
    @functx.custom_vjp
    def f(x):
        return x * 2

    f.defvjp(lambda x: x * 2, lambda r, g: (g,))
    _check_error(
        FunctxTypeError,
        "Custom VJP fwd rule <lambda> for function f must produce a pair .* instead of a pair",
        lambda: functx.grad(f)(F64(1.0)),
    )
    f.defvjp(lambda x: ((x, x), None), lambda r, g: (g,))
    _check_error(
        FunctxTypeError,
        "Custom VJP fwd rule <lambda> for function f must produce a pair .* container/pytree",
        lambda: functx.grad(f)(F64(1.0)),
    )

    @functx.custom_vjp
    def undefined(x):
        return x

    with pytest.raises(AttributeError, match="No VJP defined for custom_vjp function undefined"):
        undefined(1.0)


def test_jvp_of_a_custom_vjp_function():
    f = _two_arg_vjp(lambda r, g: (g * r[1], g * r[0]))
    msg = _check_error(
        UnsupportedError,
        r"can't apply forward-mode autodiff \(jvp\) to a "
        r"custom_vjp function \(mulxy\)",
        lambda: functx.jvp(f, (F64(1.0), F64(2.0)), (F64(1.0), F64(0.0))),
    )
    with pytest.raises(UnsupportedError, match="custom_vjp function"):
        functx.jacfwd(f)(np.ones(2), F64(2.0))
    del msg


def test_custom_jvp_rule_errors():
    @functx.custom_jvp
    def f(x):
        return fnp.sin(x)

    f.defjvp(lambda p, t: f(p[0]))
    _check_error(
        FunctxTypeError,
        "Custom JVP rule <lambda> for function f must produce a pair",
        lambda: functx.grad(f)(F64(1.0)),
    )
    f.defjvp(lambda p, t: (f(p[0]), (t[0], t[0])))
    _check_error(
        FunctxTypeError,
        "Custom JVP rule <lambda> for function f must produce primal and tangent outputs with "
        "equal container",
        lambda: functx.grad(f)(F64(1.0)),
    )
    f.defjvp(lambda p, t: (f(p[0]), fnp.ones(3)))
    _check_error(
        FunctxTypeError,
        r"Custom JVP rule must produce primal and tangent outputs with corresponding shapes and "
        r"dtypes. Expected f64\[\] \(tangent type of f64\[\]\) but got f64\[3\]",
        lambda: functx.grad(f)(F64(1.0)),
    )
    f.defjvp(lambda p, t: (f(p[0]), t[0].astype(np.float32)))
    _check_error(
        FunctxTypeError,
        r"Custom JVP rule must produce primal and tangent outputs with corresponding shapes and "
        r"dtypes. Expected f64\[\] \(tangent type of f64\[\]\) but got f32\[\]",
        lambda: functx.grad(f)(F64(1.0)),
    )
    f.defjvp(lambda p, t: (f(p[0]), 0.0))  # a Python scalar takes the output's dtype
    assert float(functx.grad(f)(F64(1.0))) == 0.0

    @functx.custom_jvp
    def undefined(x):
        return x

    with pytest.raises(AttributeError, match="No JVP defined for custom_jvp function undefined"):
        undefined(1.0)


def test_differentiating_a_closed_over_value_is_an_error():
    def outer(s):
        @functx.custom_jvp
        def f(x):
            return x * s

        f.defjvp(lambda p, t: (f(p[0]), t[0] * s))
        return f(F64(2.0))  # the error names this line, where f is called

    _check_error(
        UnsupportedError,
        "custom_jvp function f closes over a value that is being differentiated",
        lambda: functx.grad(outer)(F64(1.0)),
        inspect.getsourcelines(outer)[1] + 6,
    )


def test_custom_jvp_applied_to_tangents_transposes_like_jax():
    # (a jvp rule that calls the function on the tangents makes a custom_jvp_call on linear
    # inputs: reverse mode transposes its traced function; JAX's custom_api_test
    # test_linear_in_scan and test_custom_jvp_transpose_vjp3)
    import jax

    import functx

    def build(lib):
        @lib.custom_jvp
        def f(x):
            return -x * 2.0

        @f.defjvp
        def f_jvp(primals, tangents):
            return f(primals[0]), f(tangents[0])

        def in_scan(x):
            return lib.lax.scan(lambda c, _: (f(c), None), x, None, length=2)[0]

        return f, in_scan

    (ff, fscan), (jf, jscan) = build(functx), build(jax)
    for fx, jx in ((fscan, jscan), (lambda x: ff(ff(x)) * 3.0, lambda x: jf(jf(x)) * 3.0)):
        assert float(functx.grad(fx)(1.5)) == float(jax.grad(jx)(1.5))
        assert float(functx.jit(functx.grad(fx))(1.5)) == float(jax.grad(jx)(1.5))
    _, vjp = functx.vjp(ff, 1.0)
    _, jvjp = jax.vjp(jf, 1.0)
    assert float(vjp(2.0)[0]) == float(jvjp(2.0)[0])
    assert float(functx.linear_transpose(ff, 1.0)(2.0)[0]) == -4.0
