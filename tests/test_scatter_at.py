"""Scatter gradients and the ``.at[]`` API against JAX.

Of several updates ``set`` writes to one place only the one that lands (the last, as JAX on
CPU) gets a cotangent: the point ``scatter`` primitive's jvp and transpose tag the updates with
ids (``functx.transforms.jvp.scatter_winners``), so ``x.at[idx].set``, ``lax.scatter`` and
``linear_transpose`` agree with ``jax.grad``, eagerly, under ``vmap`` and compiled. Then the
keywords of ``.at[]`` (``mode`` out of bounds, ``fill_value``, the promises) and ``apply``,
``subtract``, ``divide``, ``power``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from x64util import x64_off

import functx
import functx.lax as flax
import functx.numpy as fnp
from functx.test_util import check_grads

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

IDX = np.array([0, 2, 0, 0, 1, 7, -1])  # repeated, out of bounds (7) and negative (-1)
W = np.array([1.0, 2.0, 3.0, 5.0])
X = np.array([1.0, 2.0, 3.0, 4.0])
V = np.array([10.0, 0.5, 30.0, 0.25, 50.0, 60.0, 3.5])


def _loss(np_, op, mode=None):
    def f(x, v):
        return (getattr(x.at[IDX], op)(v, mode=mode) * np_.asarray(W, x.dtype)).sum()

    return f


def _close(a, b, tol=1e-6):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def _grads(mod, np_, op, mode, dtype):
    x, v = np_.asarray(X, dtype), np_.asarray(V, dtype)
    return mod.grad(_loss(np_, op, mode), (0, 1))(x, v)


GRAD_CASES = [("set", None), ("add", None), ("min", None), ("max", None), ("set", "clip")]
# (not max with mode="clip": JAX 0.10 gives inf for an update clamped onto a place it wins;
# functx gives the finite cotangent)


def test_grad_with_repeated_indices_matches_jax():
    def all_grads(mod, np_, dtype):
        return [_grads(mod, np_, op, mode, dtype) for op, mode in GRAD_CASES]

    for dtype in (np.float64, np.float32):
        want = jax.jit(lambda: all_grads(jax, jnp, dtype))()
        for got, w in zip(all_grads(functx, fnp, dtype), want):
            for g, w1 in zip(got, w):
                _close(g, w1)
    # smooth in both arguments: finite differences agree
    check_grads(_loss(fnp, "set"), (X, V), order=1, modes=["rev"])


def test_grad_default_mode_and_mul_with_unique_indices(no_x64):
    want = jax.jit(lambda: [_grads(jax, jnp, op, None, np.float32) for op in ("set", "max")])()
    for op, w in zip(("set", "max"), want):
        for g, w1 in zip(_grads(functx, fnp, op, None, np.float32), w):
            _close(g, w1)
    u = np.array([2, 0, 3])

    def mul(np_):
        return lambda x, v: (x.at[u].mul(v, unique_indices=True) * np_.asarray(W, x.dtype)).sum()

    args = (X.astype(np.float32), V[:3].astype(np.float32))
    want = jax.jit(jax.grad(mul(jnp), (0, 1)))(*args)
    for g, w in zip(functx.grad(mul(fnp), (0, 1))(*args), want):
        _close(g, w)


def test_lax_scatter_and_linear_transpose_give_the_landing_update_the_cotangent():
    dn = dict(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
    i = IDX[:5, None]

    def f(mod, np_):
        d = mod.lax.ScatterDimensionNumbers(**dn)
        return lambda x, v: (mod.lax.scatter(x, i, v, d) * np_.asarray(W)).sum()

    want = jax.jit(
        lambda: (
            jax.grad(f(jax, jnp), (0, 1))(X, V[:5]),
            jax.grad(lambda v: (jnp.zeros(4).at[IDX].set(v) * W).sum())(V),
        )
    )()
    for g, w in zip(functx.grad(f(functx, fnp), (0, 1))(X, V[:5]), want[0]):
        _close(g, w)
    # JAX transposes only unique_indices=True scatters; functx gives jax.grad's cotangent
    (t,) = functx.linear_transpose(lambda v: fnp.zeros(4).at[IDX].set(v), V)(W)
    _close(t, want[1])


def test_vmap_and_jit_of_the_gradient():
    xs, vs = np.stack([X, X[::-1]]), np.stack([V, V[::-1]])
    want = jax.jit(jax.vmap(jax.grad(_loss(jnp, "set"), (0, 1))))(xs, vs)
    for g, w in zip(functx.vmap(functx.grad(_loss(fnp, "set"), (0, 1)))(xs, vs), want):
        _close(g, w)
    for g, w in zip(functx.jit(functx.grad(_loss(fnp, "set"), (0, 1)))(X, V), want):
        _close(g, w[0])


def test_jit_with_a_numpy_int64_index_in_the_default_mode(no_x64):
    # the index constant is int32 in the default mode: its buffer must be too
    f = lambda v: fnp.zeros(4, np.float32).at[IDX].set(v)  # noqa: E731
    v = V.astype(np.float32)
    _close(functx.jit(f)(v), jnp.zeros(4, np.float32).at[IDX].set(v))


def test_triton_interpreter_gradient_of_set(monkeypatch):
    pytest.importorskip("triton")
    from functx.lowering.triton.program import compile_triton

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    g = functx.grad(lambda v: (fnp.zeros(4).at[IDX].set(v) * W).sum())
    (out,) = compile_triton(functx.make_jaxpr(g)(V))(V)
    _close(
        out.cpu().numpy(), jax.jit(jax.grad(lambda v: (jnp.zeros(4).at[IDX].set(v) * W).sum()))(V)
    )


MODES = [None, "clip", "fill", "drop", "promise_in_bounds"]


def _mode_cases(np_, a, m):
    i = np_.array([1, 7, -1, -9])
    return (
        a.at[i].get(mode=m),
        a.at[7].get(mode=m),
        a.at[-9].get(mode=m, indices_are_sorted=True, unique_indices=True),
        a.at[i].set(9.0, mode=m),
        a.at[7].set(9.0, mode=m),
        a.at[-9].add(1.0, mode=m, unique_indices=True),
        a.at[i].mul(2.0, mode=m),
        a.at[1:9].max(2.5, mode=m),
        a.at[i].apply(lambda t: t * 2 + 1, mode=m),
    )


@pytest.mark.parametrize("x64", [True, False])
def test_modes_out_of_bounds_match_jax(x64):
    def run():
        want = jax.jit(lambda a: [_mode_cases(jnp, a, m) for m in MODES])(jnp.arange(5.0))
        for m, w in zip(MODES, want):
            for g, w1 in zip(_mode_cases(fnp, fnp.arange(5.0), m), w):
                _close(g, w1)
        for dt in ("float32", "int32"):
            _close(
                fnp.arange(5, dtype=dt).at[fnp.array([1, 7])].get(mode="fill", fill_value=-3),
                jnp.arange(5, dtype=dt).at[jnp.array([1, 7])].get(mode="fill", fill_value=-3),
            )
        _close(
            fnp.arange(5).at[fnp.array([1, 7])].get(mode="fill"),
            jnp.arange(5).at[jnp.array([1, 7])].get(mode="fill"),
        )

    if x64:
        run()
    else:
        with x64_off():
            run()


def test_apply_subtract_divide_power_match_jax():
    i = np.array([1, 1, 2])
    for a_f, a_j in ((fnp.arange(5.0), jnp.arange(5.0)), (fnp.arange(5), jnp.arange(5))):
        cases = [
            lambda a, np_: a.at[i].apply(lambda t: t * 2 + 1),
            lambda a, np_: a.at[i].subtract(2),
            lambda a, np_: a.at[1].divide(2),
            lambda a, np_: a.at[i].power(2),
            lambda a, np_: a.at[np_.array([[0, 1], [1, 2]])].set(3),
        ]
        want = jax.jit(lambda a: [c(a, jnp) for c in cases])(a_j)
        for c, w in zip(cases, want):
            _close(c(a_f, fnp), w)
    # apply under vmap
    f = lambda a: a.at[i].apply(jnp.exp2 if isinstance(a, jax.Array) else fnp.exp2)  # noqa: E731
    _close(functx.vmap(f)(fnp.ones((2, 4))), jax.vmap(f)(jnp.ones((2, 4))))
    with pytest.raises(NotImplementedError):
        functx.grad(lambda a: a.at[1].apply(fnp.sin).sum())(fnp.arange(3.0))


def test_keyword_errors_match_jax():
    a, b = fnp.arange(3.0), jnp.arange(3.0)
    for x in (a, b):
        with pytest.raises(TypeError, match="unexpected keyword argument 'fill_value'"):
            x.at[1].set(2.0, fill_value=3)
        with pytest.raises(ValueError, match='Unknown gather mode "bogus"'):
            x.at[1].set(2.0, mode="bogus")
    got = a.at[fnp.array([5])].get(mode=flax.GatherScatterMode.FILL_OR_DROP)
    _close(got, b.at[jnp.array([5])].get(mode=jax.lax.GatherScatterMode.FILL_OR_DROP))


@settings(max_examples=5, deadline=None)
@given(st.lists(st.integers(-7, 6), min_size=1, max_size=6), st.sampled_from(["set", "add"]))
def test_hypothesis_index_lists_grad_matches_jax(idx, op):
    i, x, v = np.array(idx), np.arange(5.0), np.arange(1.0, len(idx) + 1)

    def f(np_):
        return lambda x, v: (getattr(x.at[i], op)(v) * np_.arange(1.0, 6.0)).sum()

    want = jax.jit(jax.grad(f(jnp), (0, 1)))(x, v)
    for g, w in zip(functx.grad(f(fnp), (0, 1))(x, v), want):
        _close(g, w)
