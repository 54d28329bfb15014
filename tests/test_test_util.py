"""``functx.test_util.check_grads``: it passes on correct derivatives and fails (AssertionError) on
wrong ones: a wrong first derivative, a wrong second derivative only, a vjp that is not the
transpose of the jvp; pytrees, Python scalars, integer arguments and float32 are handled."""

from __future__ import annotations

import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx import lax
from functx.test_util import check_grads, check_jvp, check_vjp, numerical_jvp


def _custom_jvp(primal, deriv):
    """A function with the primal ``primal`` and the (possibly wrong) derivative ``deriv``."""

    @functx.custom_jvp
    def f(x):
        return primal(x)

    f.defjvp(lambda p, t: (f(p[0]), t[0] * deriv(p[0])))
    return f


X = np.array([0.3, -1.2, 2.0])


def test_passes_on_correct_derivatives():
    check_grads(fnp.sin, (X,), order=3)
    check_grads(_custom_jvp(fnp.sin, fnp.cos), (X,), order=2)
    check_grads(
        lambda d: {"y": fnp.sum(d["a"] ** 2) * d["b"]}, ({"a": X, "b": np.float64(2.0)},), order=2
    )


def test_fails_on_a_wrong_first_derivative():
    bad = _custom_jvp(fnp.sin, lambda x: fnp.cos(x) * 1.01)
    for modes in [("fwd",), ("rev",)]:
        with pytest.raises(AssertionError, match="finite differences"):
            check_grads(bad, (X,), order=1, modes=modes)


def test_fails_on_a_wrong_second_derivative_only():
    # the rule's derivative is right in value but not differentiable the right way
    bad = _custom_jvp(fnp.sin, lambda x: lax.stop_gradient(fnp.cos(x)))
    check_grads(bad, (X,), order=1)
    for modes in [("fwd",), ("rev",)]:
        with pytest.raises(AssertionError):
            check_grads(bad, (X,), order=2, modes=modes)


def test_fails_when_vjp_is_not_the_transpose_of_jvp():
    @functx.custom_vjp
    def f(x):
        return fnp.sin(x)

    f.defvjp(lambda x: (f(x), fnp.cos(x)), lambda c, g: (g * c * 1.01,))
    with pytest.raises(AssertionError, match="vjp"):
        check_vjp(f, (X,), check_transpose=False)


def test_python_scalars_integers_and_float32():
    check_grads(lambda x: x * 3.0 + fnp.sin(x), (0.5,), order=2)  # a weakly typed float32
    check_grads(lambda x, n: x**n, (X, 3), order=2)  # an integer argument is data
    check_grads(lambda x, i: x * i, (X, np.arange(3)), order=2)
    check_grads(fnp.tanh, (X.astype(np.float32),), order=2)
    # a float32 output of a float64 function is checked with float32's tolerance
    check_grads(lambda x: x.astype(np.float32) ** 2, (X,), order=1)


def test_numerical_jvp_and_explicit_tolerances():
    num = numerical_jvp(lambda x: x**3, (X,), (np.ones(3),))
    np.testing.assert_allclose(num[0], 3 * X**2, rtol=1e-7)
    bad = _custom_jvp(fnp.exp, lambda x: fnp.exp(x) * 1.001)
    check_jvp(bad, (X,), atol=1e-2, rtol=1e-2)  # loose enough
    with pytest.raises(AssertionError):
        check_jvp(bad, (X,))
