"""``functx.lax.associative_scan``: values against ``jax.lax.associative_scan`` for a family of
combine functions (commutative and not, lane-wise and not, pytrees), every axis and direction, empty
and single-element scans; vmap against ``jax.vmap``; derivatives with ``check_grads`` (float64, both
modes, order 2); and the shape of the gradient Jaxpr (scans, not an O(log n) ladder of slices).
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import given, strategies as st

import functx
import functx.numpy as fnp
from functx import lax
from functx.control import associative_scan as AS
from functx.core import ClosedJaxpr, Jaxpr
from functx.errors import FunctxTypeError, FunctxValueError
from functx.test_util import check_grads

jax = pytest.importorskip("jax")
jnp = jax.numpy


# --- the combine functions, written once for functx and once for JAX ---------------------------
def _linrec(np_):
    # h_i = a_i h_{i-1} + b_i as the composition of affine maps.
    return lambda p, q: (p[0] * q[0], q[0] * p[1] + q[1])


def _welford(np_):
    def merge(a, b):
        na, ma, sa = a
        nb, mb, sb = b
        n = na + nb
        d = mb - ma
        return n, ma + d * nb / n, sa + sb + d * d * na * nb / n

    return merge


def _pytree(np_):
    return lambda a, b: {"sum": a["sum"] + b["sum"], "max": np_.maximum(a["max"], b["max"])}


# name -> (combine(np_module), elems(rng, shape), matrix?) ; matrix elems have two trailing 2x2
# dimensions that the scan axis must not touch.
COMBINES = {
    "add": (lambda np_: np_.add, lambda rng, s: rng.standard_normal(s), False),
    "mul": (lambda np_: np_.multiply, lambda rng, s: rng.uniform(0.5, 1.5, s), False),
    "max": (lambda np_: np_.maximum, lambda rng, s: rng.standard_normal(s), False),
    "min": (lambda np_: np_.minimum, lambda rng, s: rng.standard_normal(s), False),
    "logaddexp": (lambda np_: np_.logaddexp, lambda rng, s: rng.standard_normal(s), False),
    "linrec": (_linrec, lambda rng, s: (rng.uniform(-1, 1, s), rng.standard_normal(s)), False),
    "matmul": (
        lambda np_: lambda x, y: x @ y,
        lambda rng, s: rng.standard_normal(s + (2, 2)) * 0.7,
        True,
    ),
    "welford": (_welford, lambda rng, s: (np.ones(s), rng.standard_normal(s), np.zeros(s)), False),
    "pytree": (
        _pytree,
        lambda rng, s: {"sum": rng.standard_normal(s), "max": rng.standard_normal(s)},
        False,
    ),
}


def _assert_tree_close(got, want, tol=1e-10):
    g_leaves, g_tree = jax.tree.flatten(jax.tree.map(np.asarray, got))
    w_leaves, w_tree = jax.tree.flatten(want)
    assert g_tree == w_tree
    for g, w in zip(g_leaves, w_leaves):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, np.asarray(w), rtol=tol, atol=tol)


def _both(name, elems, **kw):
    make = COMBINES[name][0]
    got = lax.associative_scan(make(fnp), elems, **kw)
    if kw.get("reverse") and kw.get("axis", 0) < 0:  # (JAX's reverse needs a non-negative axis)
        ndim = np.ndim(jax.tree.leaves(elems)[0])
        kw = dict(kw, axis=kw["axis"] % ndim)
    want = jax.jit(lambda e: jax.lax.associative_scan(make(jnp), e, **kw))(elems)
    return got, want


# --- values --------------------------------------------------------------------------------------
@given(
    name=st.sampled_from(sorted(COMBINES)),
    n=st.integers(0, 9),
    extra=st.lists(st.integers(1, 3), max_size=2),
    pos=st.integers(0, 2),
    negative=st.booleans(),
    reverse=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_matches_jax(name, n, extra, pos, negative, reverse, seed):
    rng = np.random.default_rng(seed)
    pos = min(pos, len(extra))
    shape = tuple(extra[:pos]) + (n,) + tuple(extra[pos:])
    elems = COMBINES[name][1](rng, shape)
    ndim = len(shape) + (2 if COMBINES[name][2] else 0)
    axis = pos - ndim if negative else pos
    got, want = _both(name, elems, reverse=reverse, axis=axis)
    _assert_tree_close(got, want)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("n", [0, 1, 2, 3, 7, 8, 33])
def test_matrix_product_operand_order(n, reverse):
    """Non-commutative: result i is x_0 @ ... @ x_i; reversed, x_{n-1} @ ... @ x_i (JAX's order,
    which test_matches_jax also checks)."""
    rng = np.random.default_rng(n)
    m = rng.standard_normal((n, 2, 2)) * 0.7
    got = np.asarray(lax.associative_scan(lambda x, y: x @ y, m, reverse=reverse))
    ref = np.empty_like(m)
    for i in range(n):
        idx = range(n - 1, i - 1, -1) if reverse else range(i + 1)
        acc = np.eye(2)
        for j in idx:
            acc = acc @ m[j]
        ref[i] = acc
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n", [0, 1])
def test_length_zero_and_one(n):
    x = np.arange(3.0 * n).reshape(n, 3)
    for reverse in (False, True):
        out = lax.associative_scan(lambda a, b: a + b, x, reverse=reverse)
        assert out.shape == (n, 3)
        np.testing.assert_array_equal(np.asarray(out), x)
        a, b = lax.associative_scan(_linrec(fnp), (x, x), reverse=reverse, axis=0)
        assert a.shape == b.shape == (n, 3)
    g = functx.grad(lambda x: lax.associative_scan(lax.mul, x).sum())(x)
    np.testing.assert_array_equal(np.asarray(g), np.ones((n, 3)))


def test_integer_and_float32_dtypes():
    x = np.arange(10, dtype=np.int32)
    out = lax.associative_scan(lax.add, x)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(np.asarray(out), np.cumsum(x))
    f = np.linspace(0, 1, 9, dtype=np.float32)
    out = lax.associative_scan(lax.max, f[::-1], reverse=True)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(np.asarray(out), np.maximum.accumulate(f)[::-1])


@pytest.mark.parametrize("n", [1, 7])
def test_eager_scan_does_not_touch_its_input(n):
    x = np.arange(float(n))
    for reverse in (False, True):
        lax.associative_scan(lax.add, x, reverse=reverse)
        assert x.flags.writeable  # the eager ladder views the input; it must not freeze it
    np.testing.assert_array_equal(x, np.arange(float(n)))


def test_cumulative_helpers():
    rng = np.random.default_rng(0)
    x = rng.permutation(np.linspace(-2, 2, 60))[:30].reshape(5, 6)  # distinct: no max/min ties
    refs = [
        (AS.cumsum, np.add),
        (AS.cumprod, np.multiply),
        (AS.cummax, np.maximum),
        (AS.cummin, np.minimum),
        (AS.cumlogsumexp, np.logaddexp),
    ]
    for fx, ufunc in refs:
        for axis in (0, 1, -1):
            for reverse in (False, True):
                want = (
                    np.flip(ufunc.accumulate(np.flip(x, axis), axis), axis)
                    if reverse
                    else ufunc.accumulate(x, axis)
                )
                np.testing.assert_allclose(
                    np.asarray(fx(x, axis=axis, reverse=reverse)), want, rtol=1e-12
                )
        check_grads(lambda x, fx=fx: fx(x, axis=1, reverse=True), (x,), order=1)


def test_combine_closing_over_a_value():
    """``a + b + w a b`` (multiplication conjugated by x -> 1 + w x: associative) closes over w.
    Differentiating w takes the ladder; differentiating only x, the affine tangent scan."""
    rng = np.random.default_rng(1)
    ws, x = rng.uniform(0.5, 1.0, (3, 4)), rng.standard_normal((7, 4)) * 0.3

    def make(lax_, np_):
        return lambda w, x: np_.sum(
            np_.sin(lax_.associative_scan(lambda a, b: a + b + w * a * b, x))
        )

    f, g = make(lax, fnp), make(jax.lax, jnp)
    np.testing.assert_allclose(float(f(ws[0], x)), float(jax.jit(g)(ws[0], x)), rtol=1e-12)
    want = jax.jit(jax.vmap(jax.grad(g, argnums=(0, 1)), in_axes=(0, None)))(ws, x)
    _assert_tree_close(functx.grad(f, argnums=(0, 1))(ws[0], x), jax.tree.map(lambda w: w[0], want))
    _assert_tree_close(functx.grad(f, argnums=1)(ws[0], x), want[1][0])
    # batched closed-over value
    _assert_tree_close(functx.vmap(functx.grad(f, argnums=(0, 1)), in_axes=(0, None))(ws, x), want)
    _assert_tree_close(functx.vmap(functx.grad(f, argnums=1), in_axes=(0, None))(ws, x), want[1])
    check_grads(f, (ws[0], x), order=2)


def _welford_int_counts(np_):
    def merge(a, b):
        na, ma, sa = a
        nb, mb, sb = b
        n = na + nb
        d = mb - ma
        naf, nbf, nf = (c.astype(ma.dtype) for c in (na, nb, n))
        return n, ma + d * nbf / nf, sa + sb + d * d * naf * nbf / nf

    return merge


def test_integer_lanes_are_not_differentiated():
    """Welford with int32 counts: the count lane has a float0 tangent; the others are scanned."""
    x = np.random.default_rng(4).standard_normal((7, 3))
    cnt = np.ones((7, 3), np.int32)

    def loss(lax_, np_):
        def f(x):
            n, mean, m2 = lax_.associative_scan(
                _welford_int_counts(np_), (cnt, x, x * x), reverse=True
            )
            return np_.sum(mean**2) + np_.sum(m2 / n.astype(x.dtype))

        return f

    fx, jx = loss(lax, fnp), loss(jax.lax, jnp)
    np.testing.assert_allclose(float(fx(x)), float(jax.jit(jx)(x)), rtol=1e-12)
    np.testing.assert_allclose(
        np.asarray(functx.grad(fx)(x)), jax.jit(jax.grad(jx))(x), rtol=1e-10, atol=1e-12
    )
    check_grads(fx, (x,), order=2)
    closed = functx.make_jaxpr(functx.grad(fx))(x)
    assert any(e.params["affine"] for e in _scan_eqns(closed.jaxpr))  # still the affine scan


def test_mixed_float_dtypes_fall_back_to_the_ladder():
    a, b = np.linspace(0.1, 0.9, 9), np.linspace(-1, 1, 9).astype(np.float32)

    def loss(lax_, np_):
        def f(a, b):  # a float64 running product and a float32 recurrence
            out = lax_.associative_scan(
                lambda p, q: (p[0] * q[0], q[0].astype(np.float32) * p[1] + q[1]), (a, b)
            )
            return np_.sum(out[0]) + np_.sum(out[1]).astype(np.float64)

        return f

    got = functx.grad(loss(lax, fnp), argnums=(0, 1))(a, b)
    want = jax.jit(jax.grad(loss(jax.lax, jnp), argnums=(0, 1)))(a, b)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-5)


# --- errors --------------------------------------------------------------------------------------
def _next_line():
    """``file:line`` of the line after the caller's: the user's line an error must name."""
    return f"{__file__}:{inspect.currentframe().f_back.f_lineno + 1}"


def test_errors_name_the_types_and_line():
    x = np.ones((4, 3))
    with pytest.raises(FunctxTypeError, match="same size along the scan axis") as e:
        line = _next_line()
        lax.associative_scan(lambda a, b: (a[0] + b[0], a[1] + b[1]), (x, np.ones((5, 3))))
    assert "f64[4,3]" in str(e.value) and "f64[5,3]" in str(e.value) and line in str(e.value)
    with pytest.raises(FunctxTypeError, match="return elements of the input types") as e:
        line = _next_line()
        lax.associative_scan(lambda a, b: (a + b).astype(np.float32), x)
    assert "f64[3]" in str(e.value) and "f32[3]" in str(e.value) and line in str(e.value)
    with pytest.raises(FunctxTypeError, match="structure"):
        lax.associative_scan(lambda a, b: (a["u"], b["v"]), {"u": x, "v": x})
    with pytest.raises(FunctxValueError, match="axis 2 is out of range"):  # JAX: ValueError
        lax.associative_scan(lax.add, x, axis=2)


# --- vmap ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("in_axes", [0, 1, 2, -1, (0, None), (None, 1)])
@pytest.mark.parametrize("axis,reverse", [(0, False), (1, True), (-1, True)])
def test_vmap_matches_jax(in_axes, axis, reverse):
    rng = np.random.default_rng(2)
    a, b = rng.uniform(-1, 1, (3, 5, 4)), rng.standard_normal((3, 5, 4))
    if in_axes == (0, None):  # b is shared by the 3 examples
        b = b[0]
    if in_axes == (None, 1):  # a is shared by the 5 examples
        a = a[:, 0]

    def run(lax_, np_, vmap):
        def f(a, b):
            return lax_.associative_scan(
                _linrec(np_), (a, b), axis=axis % 2 if lax_ is jax.lax else axis, reverse=reverse
            )

        return vmap(f, in_axes=in_axes if isinstance(in_axes, tuple) else (in_axes, in_axes))(a, b)

    _assert_tree_close(
        run(lax, fnp, functx.vmap), run(jax.lax, jnp, lambda *a, **k: jax.jit(jax.vmap(*a, **k)))
    )


@pytest.mark.parametrize("name", ["logaddexp", "linrec", "matmul", "welford", "pytree"])
def test_vmap_of_grad_and_grad_of_vmap(name):
    make, gen, _ = COMBINES[name]
    rng = np.random.default_rng(3)
    elems = gen(rng, (3, 5))

    def loss(lax_, np_):
        def f(e):
            out = lax_.associative_scan(make(np_), e, axis=0 if name == "matmul" else -1)
            return sum(np_.sum(np_.sin(leaf)) for leaf in jax.tree.leaves(out))

        return f

    fx, jx = loss(lax, fnp), loss(jax.lax, jnp)
    want = jax.jit(jax.vmap(jax.grad(jx)))(elems)  # = the gradient of the sum over examples
    _assert_tree_close(functx.vmap(functx.grad(fx))(elems), want, 1e-9)
    _assert_tree_close(functx.grad(lambda e: functx.vmap(fx)(e).sum())(elems), want, 1e-9)


# --- derivatives ---------------------------------------------------------------------------------
_GRAD_CASES = [
    ("add", 0, False),
    ("mul", 1, True),
    ("max", 0, False),
    ("min", -1, True),
    ("logaddexp", 1, False),
    ("linrec", 0, True),
    ("linrec", -1, False),
    ("matmul", 0, False),
    ("matmul", 0, True),
    ("welford", 0, False),
    ("pytree", 1, True),
]


@pytest.mark.parametrize("name,axis,reverse", _GRAD_CASES)
@pytest.mark.parametrize("n", [1, 2, 5])
def test_check_grads(name, axis, reverse, n):
    make, gen, _ = COMBINES[name]
    rng = np.random.default_rng(n)
    shape = (n, 3) if axis == 0 else (3, n)
    if name in ("max", "min"):  # distinct values: no ties, where max/min are not differentiable
        elems = rng.permutation(np.linspace(-2, 2, 2 * n * 3))[: n * 3].reshape(shape)
    else:
        elems = gen(rng, shape)
    leaves, tree = jax.tree.flatten(elems)

    def f(*leaves):
        out = lax.associative_scan(
            make(fnp), jax.tree.unflatten(tree, list(leaves)), axis=axis, reverse=reverse
        )
        return [fnp.sin(o) for o in jax.tree.leaves(out)]

    if name == "welford":  # counts are not differentiated
        counts, rest = leaves[0], leaves[1:]
        check_grads(lambda *r: f(counts, *r), rest, order=2)
    else:
        check_grads(f, leaves, order=2)


def test_lanewise_classification():
    def combine_of(fn, avals):
        return AS.associative_scan_p, functx.make_jaxpr(lambda x: lax.associative_scan(fn, x))(
            avals
        ).eqns[0].params

    for name in ("add", "mul", "max", "min", "logaddexp", "linrec", "welford", "pytree"):
        make, gen, _ = COMBINES[name]
        _, params = combine_of(make(fnp), gen(np.random.default_rng(0), (4, 3)))
        assert AS.is_lanewise(params["combine"], params["num_consts"]), name
    _, params = combine_of(lambda x, y: x @ y, np.ones((4, 2, 2)))
    assert not AS.is_lanewise(params["combine"], params["num_consts"])


# --- the gradient Jaxpr is made of scans ---------------------------------------------------------
def _count(jaxpr, counts=None):
    """Equation counts by primitive name, nested Jaxprs included."""
    counts = {} if counts is None else counts
    for e in jaxpr.eqns:
        counts[e.prim.name] = counts.get(e.prim.name, 0) + 1
        for p in e.params.values():
            if isinstance(p, (ClosedJaxpr, Jaxpr)):
                _count(p.jaxpr if isinstance(p, ClosedJaxpr) else p, counts)
    return counts


def _scan_eqns(jaxpr):
    return [e for e in jaxpr.eqns if e.prim is AS.associative_scan_p]


@pytest.mark.parametrize("name", ["add", "mul", "max", "logaddexp", "linrec", "welford"])
def test_gradient_jaxpr_has_scans_not_a_ladder(name):
    make, gen, _ = COMBINES[name]

    def grad_jaxpr(n):
        elems = gen(np.random.default_rng(0), (n, 4))

        def loss(e):
            return sum(
                fnp.sum(fnp.sin(o)) for o in jax.tree.leaves(lax.associative_scan(make(fnp), e))
            )

        return functx.make_jaxpr(functx.grad(loss))(elems)

    small, large = grad_jaxpr(64), grad_jaxpr(1024)
    c_small, c_large = _count(small.jaxpr), _count(large.jaxpr)
    assert c_small == c_large, "the gradient Jaxpr grows with the sequence length"
    assert len(small.eqns) == len(large.eqns)
    assert c_small["associative_scan"] >= 2
    assert len(_scan_eqns(small.jaxpr)) >= 2
    # The O(log n) ladder takes >= 4 strided slices per level and elems leaf (>= 24 k for n = 64);
    # the affine tangent scan only shifts its k x k coefficients by one, with unit strides.
    k = len(jax.tree.leaves(gen(np.random.default_rng(0), (1,))))
    assert c_small.get("slice", 0) < 4 * k * 6, c_small
    assert all(
        e.params.get("strides") in (None, (1,) * len(e.params["start_indices"]))
        for e in large.eqns
        if e.prim.name == "slice"
    )


@pytest.mark.parametrize("reverse", [False, True])
def test_gradient_of_linear_recurrence_runs_the_scan_backwards(reverse):
    n = 256
    rng = np.random.default_rng(0)
    a, b = rng.uniform(-1, 1, (n, 3)), rng.standard_normal((n, 3))

    def loss(a, b):
        return fnp.sum(lax.associative_scan(_linrec(fnp), (a, b), reverse=reverse)[1] ** 2)

    closed = functx.make_jaxpr(functx.grad(loss, argnums=(0, 1)))(a, b)
    scans = _scan_eqns(closed.jaxpr)
    forward = [e for e in scans if e.params["affine"] is None]
    backward = [e for e in scans if e.params["affine"] is not None]
    assert len(forward) == 1 and forward[0].params["reverse"] == reverse
    assert len(backward) == 1 and backward[0].params["reverse"] == (not reverse)
    # The tangent recurrence is diagonal (lanes independent); the running product's cotangent is
    # zero (only h is used), so only h's lane is scanned backwards.
    assert backward[0].params["affine"] == (1, ((0, 0),))

    def loss_both(a, b):
        outs = lax.associative_scan(_linrec(fnp), (a, b), reverse=reverse)
        return fnp.sum(outs[0] ** 2) + fnp.sum(outs[1] ** 2)

    both = functx.make_jaxpr(functx.grad(loss_both))(a, b)
    assert [e.params["affine"] for e in _scan_eqns(both.jaxpr)][1:] == [(1, ((0, 0),))] * 2
    for e in scans:
        assert all(v.aval.shape[0] == n for v in e.outvars)
    # and it is the right gradient: the float64 loop and its hand-written backward pass
    order = range(n - 1, -1, -1) if reverse else range(n)
    h, prev = np.zeros_like(b), np.zeros(3)
    for i in order:
        h[i] = prev = a[i] * prev + b[i]
    g, nxt, ga, gb = np.zeros(3), np.zeros(3), np.zeros_like(a), np.zeros_like(b)
    for pos, i in enumerate(reversed(list(order))):  # g_i = dL/dh_i = 2 h_i + a_next g_next
        g = 2 * h[i] + nxt
        gb[i] = g
        before = list(order)[len(order) - pos - 2] if pos < n - 1 else None
        ga[i] = g * (h[before] if before is not None else 0.0)
        nxt = a[i] * g
    fa, fb = functx.grad(loss, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(np.asarray(fa), ga, rtol=1e-9)
    np.testing.assert_allclose(np.asarray(fb), gb, rtol=1e-9)


def test_jvp_jaxpr_is_one_affine_scan():
    x = np.random.default_rng(0).standard_normal((128, 3))
    closed = functx.make_jaxpr(
        lambda x, t: functx.jvp(lambda x: lax.associative_scan(fnp.logaddexp, x), (x,), (t,))
    )(x, x)
    scans = _scan_eqns(closed.jaxpr)
    assert len(scans) == 2 and scans[1].params["affine"] == (1, ((0, 0),))
