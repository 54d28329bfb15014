"""More gaps found by JAX's own test files (issue 18, session 30): jvp's weakly typed tangents,
and the causes listed in docs/jax_tests.md; checked against JAX 0.10.2 computed here (values,
dtypes, weak types, error classes)."""

import jax
import jax.numpy as jnp_ref
import numpy as np
import pytest
from x64util import x64_off

import functx
import functx.numpy as jnp


def _sig(tree):
    return [
        (np.dtype(x.dtype), bool(getattr(x, "weak_type", False)))
        for x in jax.tree_util.tree_leaves(tree)
    ]


# --- jvp: a weakly typed primal output has a weakly typed tangent, as in JAX --------------------
def _jvp_cases(F):  # F: the mode's default float type (a tangent must match its primal)
    return [
        (lambda m: m.sin, (0.5,), (1.0,)),
        (lambda m: m.sin, (0.5,), (F(1.0),)),
        (lambda m: m.sin, (F(0.5),), (1.0,)),
        (lambda m: lambda x: x * x, (0.5,), (F(1.0),)),
        (lambda m: lambda x: m.sum(x), (0.5,), (F(1.0),)),
        (lambda m: lambda x: x.astype(m.float32), (0.5,), (1.0,)),
        (lambda m: lambda x, y: x * y, (0.5, 2.0), (F(1.0), F(1.0))),
        (lambda m: lambda x: (2 * x, m.ones(2) * x), (0.5,), (1.0,)),
        (lambda m: lambda x: m.float32(3.0) * x, (0.5,), (1.0,)),
    ]


@pytest.mark.parametrize("x64", [False, True])
def test_jvp_tangent_weak_type_as_jax(x64):
    ctx = x64_off() if not x64 else functx.experimental.enable_x64()
    F = np.float64 if x64 else np.float32
    with ctx:
        for i, (mk, p, t) in enumerate(_jvp_cases(F)):
            want = jax.jvp(mk(jnp_ref), p, t)
            got = functx.jvp(mk(jnp), p, t)
            assert _sig(got) == _sig(want), i
            for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
        # traced (under jit) the tangent is weak too
        got = functx.eval_shape(lambda x: functx.jvp(jnp.sin, (x,), (F(1),)), 0.5)
        want = jax.eval_shape(lambda x: jax.jvp(jnp_ref.sin, (x,), (F(1),)), 0.5)
        assert _sig(got) == _sig(want)
        # a tangent of another dtype: JAX's TypeError
        for lib, m in ((jax, jnp_ref), (functx, jnp)):
            with pytest.raises(TypeError):
                lib.jvp(m.sin, (F(0.5),), (np.float16(1),))
