"""Jaxpr -> Jaxpr passes that ``jit`` applies (``functx/transforms/passes.py``): here the division
by a broadcast, which ``jax.jit`` turns into a multiplication by the reciprocal, so that the
compiled quotients match JAX's to the bit while eager ones stay exact (as JAX's eager ones)."""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx.transforms import passes

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

RNG = np.random.default_rng(0)


def _prims(closed):
    return [e.prim.name for e in closed.jaxpr.eqns]


def test_division_by_a_broadcast_becomes_a_product_with_the_reciprocal():
    x = np.ones((4, 3), np.float32)
    s = np.ones((4, 1), np.float32)
    j = passes.divide_by_reciprocals(functx.make_jaxpr(lambda x, s: x / s)(x, s))
    assert _prims(j) == ["div", "broadcast_in_dim", "mul"], str(j)
    assert j.jaxpr.eqns[0].outvars[0].aval.shape == (4, 1)  # one reciprocal per row
    j = passes.divide_by_reciprocals(functx.make_jaxpr(lambda x: x / 3.0)(x))
    assert _prims(j) == ["mul"] and "0.33333334" in str(j), str(j)
    j = passes.divide_by_reciprocals(functx.make_jaxpr(lambda x, s: x / s)(x, np.float32(2)))
    assert _prims(j) == ["div", "mul"], str(j)
    # left alone: a full divisor, a transposed one, integers, bfloat16, a scalar quotient
    for f, args in [
        (lambda x, y: x / y, (x, x)),
        (lambda x, y: x / y.T, (x, x.T.copy())),
        (lambda x, s: x // s, (x.astype(np.int32), s.astype(np.int32))),
        (lambda x, s: x / s, (x.astype(ml_dtypes.bfloat16), s.astype(ml_dtypes.bfloat16))),
        (lambda a, b: a / b, (np.float32(3), np.float32(7))),
    ]:
        closed = functx.make_jaxpr(f)(*args)
        assert passes.divide_by_reciprocals(closed) is closed


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, ml_dtypes.bfloat16])
def test_jit_divides_as_jax_jit_does(dtype):
    x = RNG.standard_normal((64, 96)).astype(dtype)
    s = RNG.uniform(0.5, 3.0, (64, 1)).astype(dtype)
    row = RNG.uniform(0.5, 3.0, (96,)).astype(dtype)
    fns = [
        lambda x, s, r: x / s,
        lambda x, s, r: x / r,
        lambda x, s, r: x / 1.7,
        lambda x, s, r: fnp.exp(x) / fnp.sum(fnp.exp(x), axis=1, keepdims=True),
    ]
    jfns = [
        lambda x, s, r: x / s,
        lambda x, s, r: x / r,
        lambda x, s, r: x / 1.7,
        lambda x, s, r: jnp.exp(x) / jnp.sum(jnp.exp(x), axis=1, keepdims=True),
    ]
    for i, (f, jf) in enumerate(zip(fns[:3], jfns[:3])):  # (conftest: JAX in x64 mode)
        got = np.asarray(functx.jit(f)(x, s, row))
        want = np.asarray(jax.jit(jf)(x, s, row))
        np.testing.assert_array_equal(got, want, err_msg=f"case {i}")
    # the softmax pattern: the compiled quotient is exactly e * (1 / sum)
    e = np.asarray(functx.jit(lambda x: fnp.exp(x))(x))
    tot = np.asarray(functx.jit(lambda x: fnp.sum(fnp.exp(x), axis=1, keepdims=True))(x))
    got = np.asarray(functx.jit(fns[3])(x, s, row))
    if dtype not in (np.float32, np.float64):  # (halves: the fused sum rounds differently)
        return
    np.testing.assert_array_equal(got, e * (np.asarray(1, dtype) / tot))


def test_reductions_over_unit_axes_become_reshapes_with_the_reductions_values():
    """jit turns a reduction over axes of size 1 (a vmapped per-example gradient's batch of one)
    into a reshape that fuses, as XLA does: values and signs of zeros as ``jax.jit`` gives them
    (a lone -0.0 summed stays -0.0), for every reduction kind and dtype."""
    x = np.array([[[-0.0, 1.5, np.nan]], [[2.0, -3.0, np.inf]]], np.float32)
    xi = np.array([[[0, 1, -7]], [[2, -3, 5]]], np.int32)
    b = np.array([[[True, False, True]]])

    def f(ns, x, xi, b):  # (ns: functx.numpy or jax.numpy)
        return (
            ns.sum(x, axis=1),
            ns.max(x, axis=1),
            ns.min(x, axis=(1,)),
            ns.prod(x, axis=1),
            ns.sum(xi, axis=1),
            ns.all(b, axis=(0, 1)),
            ns.any(b, axis=0),
            ns.sum(x.astype(ns.complex64), axis=1),
            ns.sum(x, axis=(1, 2)),  # not all of size 1: stays a reduction
        )

    fx = functools.partial(f, fnp)
    j = passes.reshape_unit_reductions(functx.make_jaxpr(fx)(x, xi, b))
    assert [p for p in _prims(j) if p.startswith("reduce")] == ["reduce_sum"], str(j)
    assert passes.reshape_unit_reductions(j) is j
    got = functx.jit(fx)(x, xi, b)
    want = jax.jit(functools.partial(f, jnp))(x, xi, b)
    eager = fx(x, xi, b)  # (eagerly too: a reduction of one element is that element)
    for i, (g, w) in enumerate(zip([*got, *eager], [*want, *want])):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, i
        np.testing.assert_array_equal(g, w, err_msg=f"output {i}")
        np.testing.assert_array_equal(np.signbit(g.real), np.signbit(w.real), err_msg=f"{i}")
