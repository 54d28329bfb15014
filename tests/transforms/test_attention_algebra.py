"""The attention pass's element algebra (``functx/transforms/attention_algebra.py``): random
expressions of the softmax's kinds keep the values that NumPy computes for them (row sums
included), equal expressions have one normal form, and what the algebra cannot hold is refused."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from functx.transforms import attention_algebra as alg

ROW = frozenset(("x", "dp"))
SHAPE = (3, 5)  # (rows, elements of a row)


def _value(e: alg.Expr, env: dict) -> np.ndarray:
    """``e``'s value, its symbols taken from ``env`` and each ``sig`` summed along the rows."""
    total = np.zeros(SHAPE)
    for m, c in e.items():
        term = np.full(SHAPE, float(c))
        for a, p in m:
            term = term * _atom(a, env, float(p))
        total = total + term
    return total


def _atom(a, env, p):
    """The value of the factor ``a ** p`` (of ``exp(p * M)`` for ``a = ("e", M)``)."""
    if a[0] == "s":
        return env[a[1]] ** p
    if a[0] == "e":
        return np.exp(p * _value(alg.Expr({a[1]: Fraction(1)}), env))
    return _value(alg.Expr(dict(a[1])), env).sum(-1, keepdims=True) ** p


def _random_pair(rng, depth):
    """A random expression and its value, built by the same steps in the algebra and NumPy."""
    env = _random_pair.env
    if depth == 0 or rng.random() < 0.2:
        pick = rng.integers(4)
        if pick == 3:
            c = Fraction(int(rng.integers(-4, 5)), int(rng.integers(1, 4)))
            return alg.const(c), np.full(SHAPE, float(c))
        name = ("x", "dp", "m")[pick]
        return alg.sym(name), env[name]
    op = rng.integers(6)
    a, va = _random_pair(rng, depth - 1)
    if op == 4:  # (kept small: exp of a product of values can overflow)
        return alg.exp(a * Fraction(1, 4)), np.exp(va / 4)
    if op == 5:
        s = alg.row_sum(a, ROW)
        if s is None:  # (constant along the row)
            return a, va
        return s, np.broadcast_to(va.sum(-1, keepdims=True), SHAPE)
    b, vb = _random_pair(rng, depth - 1)
    if op == 3:
        try:
            return a / b, va / vb
        except alg.NotLaurent:
            return a - b, va - vb
    return [(a + b, va + vb), (a - b, va - vb), (a * b, va * vb)][op]


@pytest.mark.parametrize("seed", range(40))
def test_random_expressions_keep_numpys_values(seed):
    rng = np.random.default_rng(seed)
    _random_pair.env = {
        "x": rng.uniform(-1, 1, SHAPE),
        "dp": rng.uniform(0.5, 1.5, SHAPE),
        "m": np.broadcast_to(rng.uniform(0.5, 1.5, (SHAPE[0], 1)), SHAPE),
    }
    e, want = _random_pair(rng, 4)
    got = _value(e, _random_pair.env)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_the_softmax_forms_have_one_normal_form():
    x, dp, m = alg.sym("x"), alg.sym("dp"), alg.sym("m")
    s = Fraction(1, 8)
    w = alg.exp(s * x - s * m)  # (shifted by the row maximum, as jax.nn.softmax computes)
    z = alg.row_sum(w, ROW)
    p = w / z
    ref_w = alg.exp(s * x)
    assert p == ref_w / alg.sig(ref_w)  # (the shift cancels)
    assert p == w * (1 / z)
    ds = s * p * (dp - alg.row_sum(dp * p, ROW))
    assert ds == s * p * dp - s * p * alg.sig(dp * ref_w) / alg.sig(ref_w)
    assert ds != s * p * dp
    assert hash(ds) == hash(s * p * dp - s * p * alg.sig(dp * ref_w) / alg.sig(ref_w))
    assert alg.exp(x) * alg.exp(-x) == alg.const(1) and alg.exp(x) ** 2 == alg.exp(2 * x)
    assert (alg.exp(x) / x).number() is None and ((3 * x) / x).number() == 3
    assert alg.row_sum(m * 2, ROW) is None  # (a row constant summed: not a softmax)
    assert alg.row_sum(x, ROW).symbols() == {"x"} and "m" in (m * x).symbols()


def test_what_the_algebra_cannot_hold_is_refused():
    x = alg.sym("x")
    with pytest.raises(alg.NotLaurent):
        alg.const(1) / (x + 1)
    with pytest.raises(alg.NotLaurent):
        x / alg.const(0)
    with pytest.raises(alg.NotLaurent):
        x**0.5
    with pytest.raises(alg.NotLaurent):
        (x + 1) ** (alg._MAX_POWER + 1)  # (not expanded)
    with pytest.raises(TypeError):
        alg.const("1")
    assert x**0 == 1 and (2 * alg.exp(x)) ** -2 * alg.exp(2 * x) == Fraction(1, 4)
    assert (x + 1) ** 2 == x * x + 2 * x + 1 and ((x + 1) ** 2).size() > (x + 1).size()
