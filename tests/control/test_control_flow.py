"""Control flow: ``cond``, ``switch``, ``scan``, ``map``, ``fori_loop`` (static and traced bounds)
and ``while_loop`` against JAX (jitted, x64) under grad, vmap and their compositions (vmap(grad),
grad(vmap), jacrev, hessian, jvp of while_loop); check_grads in float64; the printed Jaxprs of
their derivatives; the errors users hit; and that every control-flow primitive has a rule in every
transform.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx import lax
from functx.control.associative_scan import associative_scan_p
from functx.control.cond import cond_p
from functx.control.scan import scan_p
from functx.control.while_loop import while_p
from functx.errors import FunctxTypeError, UnsupportedError
from functx.test_util import check_grads
from functx.transforms import jvp as J, transpose as T
from functx.transforms.partial_eval import partial_eval_rules
from functx.transforms.vmap import batching_rules

jax = pytest.importorskip("jax")
jnp = jax.numpy

FX, JX = (lax, fnp), (jax.lax, jnp)


def _close(got, want, tol=1e-9):
    g_leaves, g_tree = jax.tree.flatten(jax.tree.map(np.asarray, got))
    w_leaves, w_tree = jax.tree.flatten(want)
    assert g_tree == w_tree, (g_tree, w_tree)
    for g, w in zip(g_leaves, w_leaves):
        w = np.asarray(w)
        assert g.shape == w.shape, (g.shape, w.shape)
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


# --- the functions, written once for (functx.lax, functx.numpy) and once for (jax.lax, jnp) -----
# Each takes a float64 array x (the differentiated argument) and returns a scalar.
def scan_fn(lx, np_):
    w = np.linspace(0.5, 1.5, 3)  # closed over: becomes a const of the body

    def f(x):
        def body(c, xi):
            h = np_.tanh(c * xi * w + 0.5)
            return h, {"h": h, "sq": h * xi}

        c, ys = lx.scan(body, x[0], x[1:])
        return np_.sum(c) + np_.sum(ys["h"] ** 2) + np_.sum(ys["sq"])

    return f


def scan_reverse_fn(lx, np_):
    def f(x):
        def body(c, xi):
            a, b = c
            return (a * np_.sin(xi), b + a * xi), a * b

        (a, b), ys = lx.scan(body, (x[0], x[0] * 0.5), x[1:], reverse=True)
        return np_.sum(a * b) + np_.sum(ys)

    return f


def scan_length_fn(lx, np_):
    def f(x):  # no xs: a length and an integer carry
        (i, c), ys = lx.scan(
            lambda c, _: ((c[0] + 1, np_.cos(c[1]) * c[1] + c[0]), c[1]), (0, x[0]), None, length=4
        )
        return np_.sum(c) + np_.sum(ys) + i

    return f


def cond_fn(lx, np_):
    k = np.array([1.0, -2.0, 0.5])

    def f(x):
        def true_fun(a, b):
            return {"u": np_.sin(a) * k, "v": b * b}

        def false_fun(a, b):
            return {"u": np_.cos(a) + b, "v": b}

        out = lx.cond(np_.sum(x[0]) > 0, true_fun, false_fun, x[0], x[1])
        return np_.sum(out["u"] * out["v"])

    return f


def switch_fn(lx, np_):
    def f(x):
        i = (np_.sum(x[0] > 0)).astype(np_.int32)  # 0..3: clamped into 0..2
        out = lx.switch(i, [lambda a: np_.sin(a), lambda a: a**3, lambda a: np_.exp(a) * a], x)
        return np_.sum(out)

    return f


def fori_static_fn(lx, np_):
    def f(x):
        return np_.sum(lx.fori_loop(1, 4, lambda i, v: v * np_.cos(v) + i.astype(v.dtype) * 0.1, x))

    return f


def map_fn(lx, np_):
    return lambda x: np_.sum(lx.map(lambda r: np_.sum(np_.sin(r)) * r, x))


def nested_fn(lx, np_):
    def f(x):
        def body(c, xi):
            c = lx.cond(xi[0] > 0, lambda c: c * np_.tanh(xi), lambda c: c + xi, c)
            return c, np_.sum(c)

        c, ys = lx.scan(body, x[0], x[1:])
        return np_.sum(c) + np_.sum(ys * ys)

    return f


CASES = {
    f.__name__: f
    for f in [
        scan_fn,
        scan_reverse_fn,
        scan_length_fn,
        cond_fn,
        switch_fn,
        fori_static_fn,
        map_fn,
        nested_fn,
    ]
}


def _x(seed=0, shape=(4, 3)):
    return np.random.default_rng(seed).uniform(-1.5, 1.5, shape)


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_grad_jacrev_hessian_match_jax(name):
    fx, jx = CASES[name](*FX), CASES[name](*JX)
    for seed in (0, 1):  # (cond/switch take different branches)
        x = _x(seed)
        want_v, want_g = jax.jit(jax.value_and_grad(jx))(x)
        _close(fx(x), want_v)
        _close(functx.grad(fx)(x), want_g)
    x = _x(2)
    vec_f, vec_j = (lambda x: fx(x) * x), (lambda x: jx(x) * x)
    _close(functx.jacrev(vec_f)(x), jax.jit(jax.jacrev(vec_j))(x))
    _close(functx.hessian(fx)(x), jax.jit(jax.hessian(jx))(x), 1e-8)


@pytest.mark.parametrize("name", sorted(CASES))
def test_vmap_compositions_match_jax(name):
    fx, jx = CASES[name](*FX), CASES[name](*JX)
    xs = np.stack([_x(s) for s in range(3)])
    want_v, want_g = jax.jit(jax.vmap(jax.value_and_grad(jx)))(xs)
    _close(functx.vmap(fx)(xs), want_v)
    _close(functx.vmap(functx.grad(fx))(xs), want_g)
    _close(functx.grad(lambda xs: functx.vmap(fx)(xs).sum())(xs), want_g)
    # the batch axis elsewhere
    _close(
        functx.vmap(functx.grad(fx), in_axes=2, out_axes=1)(np.moveaxis(xs, 0, 2)),
        np.moveaxis(want_g, 0, 1),
    )


@pytest.mark.parametrize(
    "name", ["scan_fn", "scan_reverse_fn", "cond_fn", "fori_static_fn", "nested_fn"]
)
def test_check_grads(name):
    check_grads(CASES[name](*FX), (_x(3, (3, 3)),), order=2)


def test_scan_with_batched_consts_only_and_unbatched_carry():
    def f(lx, np_):
        def g(w, c0):
            return lx.scan(lambda c, x: (c + w * x, c * w), c0, np_.arange(4.0))

        return g

    w, c0 = np.linspace(0.1, 0.9, 5), np.array(0.3)
    _close(
        functx.vmap(f(*FX), in_axes=(0, None))(w, c0),
        jax.jit(jax.vmap(f(*JX), in_axes=(0, None)))(w, c0),
    )


def test_scan_zero_length():
    c, ys = lax.scan(lambda c, x: (c + x, c * x), np.float64(1.0), np.zeros((0,)))
    assert float(c) == 1.0 and ys.shape == (0,)
    g = functx.grad(lambda c: lax.scan(lambda c, x: (c * x, c), c, np.zeros(0))[0])(np.float64(2))
    assert float(g) == 1.0


# --- fori_loop with traced bounds and while_loop: forward mode and vmap --------------------------
def fori_traced_fn(lx, np_):
    return lambda x, n: np_.sum(lx.fori_loop(0, n, lambda i, v: v * np_.cos(v) + i, x))


def while_fn(lx, np_):
    def f(x, limit):
        def body(c):
            i, v, s = c
            return i + 1, v * 1.1 + np_.sin(v), s + np_.sum(v)

        return lx.while_loop(lambda c: (c[0] < limit) & (c[2] < 50.0), body, (0, x, 0.0))[1:]

    return f


@pytest.mark.parametrize("make", [fori_traced_fn, while_fn])
def test_dynamic_loops_forward_mode_and_vmap(make):
    fx, jx = make(*FX), make(*JX)
    x, t = _x(4, (3,)), _x(5, (3,))
    for n in (0, 3):
        _close(fx(x, np.int32(n)), jax.jit(jx)(x, np.int32(n)))
        # jvp, with the bound traced (an argument of the jvp'd function)
        _close(
            functx.jvp(fx, (x, np.int32(n)), (t, np.zeros((), jax.dtypes.float0))),
            jax.jit(lambda x, t, n: jax.jvp(jx, (x, n), (t, np.zeros((), jax.dtypes.float0))))(
                x, t, np.int32(n)
            ),
        )
    ns = np.array([0, 1, 4, 2], np.int32)
    xs = np.stack([_x(s, (3,)) for s in range(4)])
    # batched bound (a batched predicate), batched state, both
    _close(
        functx.vmap(fx, in_axes=(None, 0))(x, ns), jax.jit(jax.vmap(jx, in_axes=(None, 0)))(x, ns)
    )
    _close(
        functx.vmap(fx, in_axes=(0, None))(xs, np.int32(3)),
        jax.jit(jax.vmap(jx, in_axes=(0, None)))(xs, np.int32(3)),
    )
    _close(functx.vmap(fx)(xs, ns), jax.jit(jax.vmap(jx))(xs, ns))
    # jacfwd under vmap, jvp under vmap
    _close(
        functx.vmap(functx.jacfwd(fx), in_axes=(None, 0))(x, ns),
        jax.jit(jax.vmap(jax.jacfwd(jx), in_axes=(None, 0)))(x, ns),
    )
    _close(
        functx.vmap(lambda x, t, n: functx.jvp(lambda x: fx(x, n), (x,), (t,)))(xs, xs, ns),
        jax.jit(jax.vmap(lambda x, t, n: jax.jvp(lambda x: jx(x, n), (x,), (t,))))(xs, xs, ns),
    )


def test_fori_loop_bounds_static_vs_traced():
    body = lambda i, v: v * 0.5 + i  # noqa: E731
    static = functx.make_jaxpr(lambda x: lax.fori_loop(0, 5, body, x))(1.0)
    traced = functx.make_jaxpr(lambda x, n: lax.fori_loop(0, n, body, x))(1.0, 5)
    assert [e.prim for e in static.eqns] == [scan_p]
    assert scan_p not in [e.prim for e in traced.eqns] and while_p in [e.prim for e in traced.eqns]
    # static bounds: reverse mode works, as in JAX
    g = functx.grad(lambda x: lax.fori_loop(0, 5, lambda i, v: v * v * 0.5 + i, x))(0.7)
    jg = jax.grad(lambda x: jax.lax.fori_loop(0, 5, lambda i, v: v * v * 0.5 + i, x))(0.7)
    np.testing.assert_allclose(float(g), float(jg), rtol=1e-6)


def test_while_loop_linearize_matches_jax():
    fx, jx = while_fn(*FX), while_fn(*JX)
    x, t = _x(6, (3,)), _x(7, (3,))
    y, f_jvp = functx.linearize(lambda x: fx(x, 3), x)
    jy, j_jvp = jax.linearize(lambda x: jx(x, 3), x)
    _close(y, jy)
    _close(f_jvp(t), j_jvp(t))


WHILE_ERROR = (
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop "
    "with dynamic start/stop values. Try using lax.scan, or using fori_loop with "
    "static start/stop"
)


def _next_line():
    """``file:line`` of the line after the caller's: the user's line an error must name."""
    return f"{__file__}:{inspect.currentframe().f_back.f_lineno + 1}"


def test_reverse_mode_of_while_loop_raises_jax_error():
    x = _x(8, (3,))
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        jax.grad(lambda x: jnp.sum(while_fn(*JX)(x, 3)[0]))(x)

    def f(x):
        return fnp.sum(
            lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))[1]
        )

    src, first = inspect.getsourcelines(f)
    line = f"{__file__}:{first + next(i for i, s in enumerate(src) if 'while_loop' in s)}"
    for grad in (functx.grad, functx.jacrev):
        with pytest.raises(UnsupportedError) as e:
            grad(f)(x)
        assert WHILE_ERROR in str(e.value) and line in str(e.value)
        assert isinstance(e.value, ValueError)  # JAX's class
    with pytest.raises(UnsupportedError, match=WHILE_ERROR):
        functx.grad(lambda x, n: fori_traced_fn(*FX)(x, n))(x, np.int32(3))
    # a while_loop that does not depend on the differentiated value is fine
    g = functx.grad(lambda x: fnp.sum(f(np.ones(3)) * x))(x)
    np.testing.assert_allclose(np.asarray(g), np.full(3, 24.0))


# --- printed Jaxprs of derivatives ---------------------------------------------------------------
def test_scan_gradient_is_a_forward_and_a_reverse_scan():
    x = _x(9, (6, 3))
    closed = functx.make_jaxpr(functx.grad(CASES["scan_fn"](*FX)))(x)
    scans = [e for e in closed.eqns if e.prim is scan_p]
    assert [e.params["reverse"] for e in scans] == [False, True], closed
    # the forward scan stacks the residuals the backward one reads
    assert any(v.aval.shape[:1] == (5,) for v in scans[0].outvars)
    assert all(e.params["length"] == 5 for e in scans)
    # the linear part of linearize is one scan over the tangents
    lin = functx.make_jaxpr(lambda x, t: functx.linearize(CASES["scan_fn"](*FX), x)[1](t))(x, x)
    assert sum(e.prim is scan_p for e in lin.eqns) == 2


def test_cond_gradient_is_conds():
    closed = functx.make_jaxpr(functx.grad(CASES["cond_fn"](*FX)))(_x(0))
    assert sum(e.prim is cond_p for e in closed.eqns) == 2  # primal + residuals, transposed


# --- errors name the function, the types and the user's line -------------------------------------
def _raises(match, fn):
    with pytest.raises(FunctxTypeError, match=match) as e:
        fn()
    return str(e.value)


def test_branches_with_mismatched_output_types():
    x = np.ones(3)

    def vector_branch(x):
        return x

    def scalar_branch(x):
        return x.sum()

    with pytest.raises(FunctxTypeError, match="cond branches must return the same types") as e:
        line = _next_line()
        lax.cond(True, vector_branch, scalar_branch, x)
    msg = str(e.value)
    for part in ("vector_branch", "scalar_branch", "f64[3]", "f64[]", line):
        assert part in msg, (part, msg)
    with pytest.raises(FunctxTypeError, match="switch branches must return the same types") as e:
        line = _next_line()
        lax.switch(1, [vector_branch, lambda x: x.astype(np.int32)], x)
    for part in ("vector_branch", "<lambda>", "f64[3]", "i32[3]", line):
        assert part in str(e.value)
    with pytest.raises(FunctxTypeError, match="same structure"):
        lax.cond(True, lambda x: (x, x), lambda x: [x, x], x)
    # and under a transform (the branches are traced the same way)
    with pytest.raises(FunctxTypeError, match="cond branches must return the same types") as e:
        line = _next_line()
        functx.grad(lambda x: lax.cond(x[0] > 0, vector_branch, scalar_branch, x).sum())(x)
    assert line in str(e.value)


def test_scan_body_whose_carry_type_changes():
    def grows(c, x):
        return fnp.stack([c, c]), None

    def narrows(c, x):
        return c.astype(np.float32), None

    x = np.ones(3)
    with pytest.raises(FunctxTypeError, match="carry input and carry output") as e:
        line = _next_line()
        lax.scan(grows, x, None, length=2)
    for part in ("grows", "f64[3]", "f64[2,3]", line):
        assert part in str(e.value)
    with pytest.raises(FunctxTypeError, match="carry input and carry output") as e:
        line = _next_line()
        functx.vmap(lambda x: lax.scan(narrows, x, None, length=2))(np.ones((2, 3)))
    for part in ("narrows", "f64[3]", "f32[3]", line):
        assert part in str(e.value)
    with pytest.raises(FunctxTypeError, match="fori_loop: body_fun <lambda>") as e:
        line = _next_line()
        lax.fori_loop(0, 3, lambda i, v: v.sum(), x)
    assert "f64[3]" in str(e.value) and "f64[]" in str(e.value) and line in str(e.value)
    with pytest.raises(FunctxTypeError, match="body_fun <lambda> output and input") as e:
        line = _next_line()
        lax.while_loop(lambda c: c.sum() > 0, lambda c: c.sum(), x)
    assert "f64[3]" in str(e.value) and "f64[]" in str(e.value) and line in str(e.value)


def test_non_scalar_predicate():
    x = np.ones(3)
    with pytest.raises(FunctxTypeError, match="cond predicate must be a scalar") as e:
        line = _next_line()
        lax.cond(x > 0, lambda x: x, lambda x: -x, x)
    assert "bool[3]" in str(e.value) and line in str(e.value) and "where" in str(e.value)
    with pytest.raises(FunctxTypeError, match="switch index must be a scalar") as e:
        line = _next_line()
        lax.switch(np.array([0, 1]), [lambda x: x, lambda x: -x], x)
    assert line in str(e.value)
    with pytest.raises(FunctxTypeError, match="cond_fun <lambda> must return a boolean scalar"):
        lax.while_loop(lambda c: c > 0, lambda c: c - 1, x)
    # a per-example scalar predicate under vmap is fine: both branches run and are selected
    out = functx.vmap(lambda x: lax.cond(x > 0, lambda x: x, lambda x: -x, x))(
        np.array([1.0, -2.0])
    )
    np.testing.assert_array_equal(np.asarray(out), [1.0, 2.0])


# --- every control-flow primitive has a rule in every transform ----------------------------------
CONTROL = {"cond": cond_p, "scan": scan_p, "while": while_p, "associative_scan": associative_scan_p}


@pytest.mark.parametrize("name", sorted(CONTROL))
def test_rule_coverage(name):
    p = CONTROL[name]
    assert p in J.jvp_rules, f"{name}: no jvp rule"
    assert p in batching_rules, f"{name}: no batching rule"
    assert p in T.transpose_rules, f"{name}: no transpose rule (or declared error)"
    if name != "associative_scan":  # (its tangent scan is linear as a whole: no split needed)
        assert p in partial_eval_rules, f"{name}: no partial-eval rule"


def test_declared_transpose_errors():
    # while: reverse mode stops with JAX's message
    with pytest.raises(UnsupportedError, match=WHILE_ERROR):
        T.transpose_rules[while_p]([], T.UndefinedPrimal(functx.ShapedArray((), np.float64)))
    # associative_scan: only the affine (tangent) scan is linear
    closed = functx.make_jaxpr(lambda x: lax.associative_scan(lax.add, x))(np.ones(4))
    params = closed.eqns[0].params
    with pytest.raises(UnsupportedError, match="cannot be transposed"):
        T.transpose_rules[associative_scan_p](
            [np.ones(4)], T.UndefinedPrimal(functx.ShapedArray((4,), np.float64)), **params
        )


def test_eager_loops_leave_the_callers_arrays_writeable():
    """An eager control-flow result that is an input passed through must be a copy (the eager
    path freezes the arrays it returns)."""
    for run in (
        lambda x: lax.cond(True, lambda x: x, lambda x: -x, x),
        lambda x: lax.switch(0, [lambda x: x], x),
        lambda x: lax.scan(lambda c, _: (c, None), x, None, length=0),
        lambda x: lax.while_loop(lambda c: False, lambda c: c, x),
        lambda x: lax.fori_loop(0, 0, lambda i, c: c, x),
        lambda x: lax.associative_scan(lax.add, x),
    ):
        x = np.arange(1.0)
        run(x)
        assert x.flags.writeable


def test_bodies_are_not_traced_again_on_identical_calls():
    """As in JAX, while_loop/cond/scan reuse the Jaxpr of a body function they traced before
    for arguments of the same structure and types; new types trace again."""
    traces = []

    def body(c):
        traces.append(c)
        return c + 1

    def cond_fun(c):
        return c < 3

    def step(c, x):
        traces.append(x)
        return c + x, c

    counts = []
    for _ in range(3):
        assert int(lax.while_loop(cond_fun, body, 0)) == 3
        assert float(lax.cond(True, body, body, 1.0)) == 2.0
        lax.scan(step, 0.0, np.arange(3.0, dtype=np.float32))
        counts.append(len(traces))
    assert counts[0] >= 3 and counts[0] == counts[1] == counts[2], counts
    lax.while_loop(cond_fun, body, 0.5)  # a new carry type traces again
    assert len(traces) == counts[0] + 1
