"""Jaxpr -> Jaxpr passes that ``jit`` applies (``functx/transforms/passes.py``): here the division
by a broadcast, which ``jax.jit`` turns into a multiplication by the reciprocal, so that the
compiled quotients match JAX's to the bit while eager ones stay exact (as JAX's eager ones)."""

from __future__ import annotations

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
