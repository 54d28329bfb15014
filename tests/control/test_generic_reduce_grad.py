"""The derivative of ``lax.reduce`` with a general combine (functx/control/generic_reduce.py's
``_jvp``) against JAX: an argmax written as (value, index) pairs with a select (ties included:
JAX's halving tree decides which element a tie passes the tangent of), a combine mixing its
operands, several reduced axes, odd lengths, jit, and the error for a differentiated init.

Under jit the gradient of a tree of select combines compiles slowly today (the C++ lowering
simplifies the fused index expressions of the tree's pads and slices with SymPy: tens of seconds
for a 3x5 argmax), so only one small case is compiled here."""

from __future__ import annotations

import numpy as np
import pytest

import functx
import functx.lax as flax
from functx.test_util import check_grads

jax = pytest.importorskip("jax")
from jax import lax as jlax  # noqa: E402

jax.config.update("jax_enable_x64", True)

X = np.array([[1.0, 3.0, 3.0, 2.0, 3.0], [0.0, 0.0, 0.0, 0.0, 0.0], [5.0, 1.0, 5.0, 1.0, 2.0]])


def _argmax(lax, dims, select_ge=True):
    def comb(a, b):
        pick = a[0] >= b[0] if select_ge else a[0] > b[0]
        return lax.select(pick, a[0], b[0]), lax.select(pick, a[1], b[1])

    def f(x, idx):
        return lax.reduce((x, idx), (-np.inf, np.zeros((), idx.dtype)), comb, dims)

    return f


def _cases(lax):
    iota = np.broadcast_to(np.arange(5.0), X.shape)
    a1, a01, gt = _argmax(lax, (1,)), _argmax(lax, (0, 1)), _argmax(lax, (1,), False)
    return [
        lambda x: (a1(x, iota + 0.0 * x)[0] * np.arange(1.0, 4.0)).sum(),  # ties in rows 0, 1
        lambda x: a01(x, iota * x)[0] + a01(x, iota * x)[1],  # the index operand differentiated
        lambda x: gt(x.T, iota.T * x.T)[0].sum(),  # odd length 3, the last of the ties
        lambda x: lax.reduce((x, x), (0.0, 1.0), lambda a, b: (a[0] * b[1], a[1] + b[0]), (1,))[
            0
        ].sum(),
    ]


def test_grad_of_pair_combines_matches_jax():
    for k, (f, jf) in enumerate(zip(_cases(flax), _cases(jlax))):
        jg = jax.jit(jax.grad(jf))(X)
        np.testing.assert_allclose(functx.grad(f)(X), jg, rtol=1e-13)
        if k == 2:  # one under jit (C++): the others take long to compile (see the note above)
            np.testing.assert_allclose(functx.jit(functx.grad(f))(X), jg, rtol=1e-13)


def test_integer_index_output_gets_no_tangent_and_checks_grads():
    # JAX's rule fails on an index operand without tangent (an int iota); functx gives it none
    idx = np.broadcast_to(np.arange(5, dtype=np.int32), X.shape)
    f = _argmax(flax, (1,))
    (v, i), (tv, ti) = functx.jvp(lambda x: f(x, idx), (X,), (np.ones_like(X),))
    jf = _argmax(jlax, (1,))
    fidx = idx.astype(np.float64)
    (jv, ji), (jtv, _) = jax.jvp(jf, (X, fidx), (np.ones_like(X), np.zeros_like(X)))
    np.testing.assert_array_equal(i, ji)  # the element JAX's tree chooses on ties
    np.testing.assert_array_equal(v, jv)
    np.testing.assert_array_equal(tv, jtv)
    assert ti.dtype == functx.dtypes.float0
    y = np.random.default_rng(0).permutation(15).reshape(3, 5) / 3.0  # distinct: smooth there
    check_grads(lambda x: f(x, idx)[0], (y,), order=1)
    with pytest.raises(NotImplementedError, match="initial values"):
        functx.grad(
            lambda c: flax.reduce((X, X), (c, 0.0), lambda a, b: (a[0] + b[1], a[1]), (1,))[0].sum()
        )(0.0)
