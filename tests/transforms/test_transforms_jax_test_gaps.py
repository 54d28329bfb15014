"""Gaps that JAX's own test files found (docs/jax_tests.md), checked against JAX: weak types
through grad/vjp/jacfwd/jacrev, grad of a lax.reduce whose combine is a built-in op on each of
several operands, and the precision of a product kept in the printed pullback."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from x64util import x64_off, x64_on

import functx
import functx.numpy as fnp
from functx import lax as flax

_FUNS = {
    "2x": lambda m: lambda x: 2 * x,
    "f32*x": lambda m: lambda x: m.float32(3.0) * x,
    "sin": lambda m: lambda x: m.sin(x),
    "sum": lambda m: lambda x: (x * 2).sum(),
    "astype": lambda m: lambda x: x.astype(m.float32),
}


def _sig(x):
    return (np.dtype(x.dtype), bool(x.weak_type))


@pytest.mark.parametrize("x64", [True])  # (the suite's mode; the rule does not depend on it)
def test_weak_types_through_grad_jacfwd_jacrev_vjp(x64):
    mode = x64_on if x64 else x64_off
    with mode():
        for name, mk in _FUNS.items():
            for arg in (1.0, np.float32(1.0)):
                for t in ("grad", "jacfwd", "jacrev"):
                    want = getattr(jax, t)(mk(jnp))(arg)
                    got = getattr(functx, t)(mk(fnp))(arg)
                    assert _sig(got) == _sig(want), (name, type(arg), t)
                    np.testing.assert_allclose(got, want)
            # vjp: a weakly typed cotangent gives the primal's weak type (JAX's other choices
            # depend on each transpose rule; docs/jax_tests.md)
            if name in ("2x", "f32*x", "sin"):
                for arg in (1.0, np.float32(1.0)):
                    y, pb = functx.vjp(mk(fnp), arg)
                    jy, jpb = jax.vjp(mk(jnp), arg)
                    assert _sig(pb(y * 0 + 1)[0]) == _sig(jpb(jy * 0 + 1)[0]), (name, "vjp")
        # under jit too, and for an Array argument that is weakly typed
        gj = functx.jit(functx.grad(_FUNS["sin"](fnp)))(fnp.asarray(0.5))
        assert _sig(gj) == _sig(jax.grad(jnp.sin)(jnp.asarray(0.5)))


def _pair_reduces(lib, m):
    lax = lib.lax

    def sums(x):
        a, b = lax.reduce((x, 2 * x), (0.0, 0.0), lambda p, q: (p[0] + q[0], p[1] + q[1]), (0,))
        return (a * b).sum()

    def maxes(x):
        init = (-np.inf, -np.inf)
        a, b = lax.reduce(
            (x, -x), init, lambda p, q: (lax.max(p[0], q[0]), lax.max(p[1], q[1])), (1,)
        )
        return (a + 3 * b).sum()

    def sum_prod(x):
        a, b = lax.reduce((x, x), (0.0, 1.0), lambda p, q: (p[0] + q[0], p[1] * q[1]), (0, 1))
        return a + b

    return [sums, maxes, sum_prod]


def test_grad_of_pair_combine_reduce():
    x = np.arange(1.0, 7.0).reshape(2, 3)
    for f, jf in zip(_pair_reduces(functx, fnp), _pair_reduces(jax, jnp)):
        np.testing.assert_allclose(functx.grad(f)(x), jax.jit(jax.grad(jf))(x), rtol=1e-12)
    # a combine that mixes the operands still records one reduce equation (no derivative)
    mixed = lambda p, q: (flax.max(p[0], q[0]), p[1] + q[0])  # noqa: E731
    jaxpr = functx.make_jaxpr(lambda x: flax.reduce((x, x), (0.0, 0.0), mixed, (0,)))(x)
    assert "reduce[" in str(jaxpr)


def test_pullback_jaxpr_keeps_precision_highest():
    x = np.ones((2, 3), np.float32)
    y = np.ones((3, 2), np.float32)
    dot = lambda a, b: flax.dot(a, b, precision=flax.Precision.HIGHEST)  # noqa: E731
    out, pullback = functx.vjp(dot, x, y)
    text = str(functx.make_jaxpr(pullback)(out))
    assert text.count("precision=(Precision.HIGHEST, Precision.HIGHEST)") == 2, text


def test_promotion_settings_as_jax():
    for ours, theirs, ok, other in [
        (functx.numpy_rank_promotion, jax.numpy_rank_promotion, "allow", "raise"),
        (functx.numpy_dtype_promotion, jax.numpy_dtype_promotion, "standard", "strict"),
    ]:
        with ours(ok):
            assert float((fnp.ones((2, 3)) + fnp.ones(3)).sum()) == 12.0

        @ours(ok)
        def f(x):
            return x + 1

        assert float(f(1.0)) == 2.0
        with pytest.raises(functx.errors.UnsupportedError):
            with ours(other):
                pass
        with pytest.raises(ValueError):
            theirs("bogus")
        with pytest.raises(ValueError):
            ours("bogus")


def test_check_grads_takes_tolerances_by_dtype_and_eqn_primitive():
    from functx.test_util import check_grads

    x = np.linspace(0.5, 1.5, 3).astype(np.float32)
    tol = {np.float32: 5e-2, np.float64: 1e-6}
    check_grads(lambda v: (v * fnp.sin(v)).sum(), (x,), 2, atol=tol, rtol=tol)
    eqn = functx.make_jaxpr(fnp.sin)(x).jaxpr.eqns[0]
    assert eqn.primitive is eqn.prim and eqn.primitive.name == "sin"
