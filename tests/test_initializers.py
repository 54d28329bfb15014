"""``functx.nn.initializers`` against ``jax.nn.initializers``: the same key, shape and dtype give
JAX's bits (every JAX reference from one jax.jit: a single XLA compile), axes, errors, and the
docstrings' examples."""

from __future__ import annotations

import docutil
import jax
import jax.nn.initializers as jinit
import numpy as np
import pytest

import functx
import functx.nn.initializers as finit

F32 = np.float32


def _some(m, key):
    f32 = np.float32
    return [
        m.glorot_uniform()(key, (4, 3), f32),
        m.variance_scaling(0.5, "fan_geo_avg", "normal")(key, (5, 2), f32),
        m.normal(0.3)(key, (3, 2), f32),
        m.uniform(2.0)(key, (7,), f32),
        m.constant(3)(key, (2,), f32),
        m.zeros(key, (2, 3), f32),
        m.ones(key, (3,), np.int32),
        # through erfinv (truncated normal) or a QR
        m.he_normal(in_axis=0, out_axis=(1, 2))(key, (3, 2, 5), f32),
        m.truncated_normal(0.5, lower=-1.0, upper=3.0)(key, (6,), f32),
        m.orthogonal(2.0, 0)(key, (2, 4), f32),
        m.delta_orthogonal()(key, (3, 3, 2, 2), f32),
    ]


def test_initializers_give_jax_bits():
    # one jax.jit for every JAX reference (each JAX random draw compiles otherwise)
    ref = jax.jit(lambda: _some(jinit, jax.random.key(0)))()
    out = _some(finit, functx.random.key(0))
    assert len(out) == len(ref)
    for k, (o, r) in enumerate(zip(out, ref)):
        o, r = np.asarray(o), np.asarray(r)
        assert (o.dtype, o.shape) == (r.dtype, r.shape), k
        if k in (0, 3, 4, 5, 6):
            np.testing.assert_array_equal(o, r)
        else:
            # XLA fuses the normal draw's polynomial with the scaling under jit (1 ulp off JAX's
            # eager bits, which functx's equal: checked below)
            np.testing.assert_allclose(o, r, rtol=2e-6, atol=2e-6)
    eager = jinit.variance_scaling(0.5, "fan_geo_avg", "normal")(jax.random.key(0), (5, 2), F32)
    np.testing.assert_array_equal(out[1], eager)


def test_fans_and_presets_match_jax():
    from jax._src.nn.initializers import _compute_fans

    for shape, axes in [
        ((4, 3), (-2, -1, ())),
        ((3, 3, 2, 4), (-2, -1, ())),
        ((2, 3, 3, 4), (-2, -1, 0)),
        ((3, 2, 5), (0, (1, 2), ())),
        ((6, 2, 2), ((0, 1), -1, ())),
    ]:
        assert finit._fans(shape, *axes) == _compute_fans(shape, *axes)
    key = functx.random.key(3)
    presets = {
        "glorot_uniform": (1.0, "fan_avg", "uniform"),
        "glorot_normal": (1.0, "fan_avg", "truncated_normal"),
        "lecun_uniform": (1.0, "fan_in", "uniform"),
        "lecun_normal": (1.0, "fan_in", "truncated_normal"),
        "he_uniform": (2.0, "fan_in", "uniform"),
        "he_normal": (2.0, "fan_in", "truncated_normal"),
    }
    for name, args in presets.items():
        a = getattr(finit, name)(batch_axis=0)(key, (2, 3, 4))
        b = finit.variance_scaling(*args, batch_axis=0)(key, (2, 3, 4))
        np.testing.assert_array_equal(a, b)
        assert getattr(jinit, name).__name__ == name == getattr(finit, name).__name__
    for alias, name in [("xavier", "glorot"), ("kaiming", "he")]:
        for kind in ("uniform", "normal"):
            assert getattr(finit, f"{alias}_{kind}") is getattr(finit, f"{name}_{kind}")
    for mode in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        w = finit.variance_scaling(3.0, mode, "normal")(key, (40, 60))
        n = {"fan_in": 40, "fan_out": 60, "fan_avg": 50, "fan_geo_avg": (40 * 60) ** 0.5}[mode]
        assert abs(float(w.std()) ** 2 / (3.0 / n) - 1) < 0.1


@pytest.mark.usefixtures("no_x64")
def test_initializers_errors_defaults_jit_and_docstrings():
    key = functx.random.key(1)
    for mod, k in ((finit, key), (jinit, jax.random.key(1))):
        with pytest.raises(ValueError):
            mod.glorot_uniform()(k, (3,))
        with pytest.raises(ValueError):
            mod.variance_scaling(1.0, "fan_bad", "normal")(k, (2, 2))
        with pytest.raises(ValueError):
            mod.orthogonal()(k, (3,))
        with pytest.raises(ValueError):
            mod.delta_orthogonal()(k, (3, 3))
    assert finit.glorot_normal()(key, (2, 2)).dtype == np.float32
    w = functx.jit(lambda k: finit.he_normal()(k, (4, 4)))(key)
    # compiled code evaluates the truncated normal's erfinv with other roundings than NumPy
    np.testing.assert_allclose(w, finit.he_normal()(key, (4, 4)), rtol=5e-6, atol=1e-6)
    assert functx.nn.initializers is finit
    for name in finit.__all__:
        doc = getattr(finit, name).__doc__
        assert "Arguments:" in doc and "Returns:" in doc and "Example:" in doc, name
    # (the public names' examples run in tests/test_docstrings.py; the others here)
    assert docutil.run(finit, optionflags=0).failed == 0


def test_initializer_protocol_like_jax():
    from functx.nn import initializers as fi

    builders = [fi.zeros, fi.ones, fi.glorot_normal(), fi.normal(), fi.orthogonal()]
    assert all(isinstance(b, fi.Initializer) for b in builders)
    assert not isinstance(3, fi.Initializer)
    assert isinstance(jax.nn.initializers.zeros, jax.nn.initializers.Initializer)
    assert not isinstance(3, jax.nn.initializers.Initializer)
