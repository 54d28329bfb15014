"""functx.numpy fixes found by running JAX's own test files (lax_numpy, lax_numpy_operators,
lax_numpy_reducers; docs/jax_tests.md), each checked against JAX: values, dtypes, errors, and
the jitted (C++) result against the eager one."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from x64util import x64_off

import functx
import functx.numpy as fnp


def _same(got, want, rtol=1e-6, atol=1e-6):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


def test_logaddexp_complex_matches_jax():
    rng = np.random.default_rng(0)
    a = (rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4))).astype(np.complex64)
    b = (5 * rng.normal(size=(4,)) + 3j * rng.normal(size=(4,))).astype(np.complex64)
    a[0, 0] = np.nan
    wants = jax.jit(lambda x, y: (jnp.logaddexp(x, y), jnp.logaddexp2(x, y)))(a, b)
    # one C++ program for both
    gots = functx.jit(lambda x, y: (fnp.logaddexp(x, y), fnp.logaddexp2(x, y)))(a, b)
    for name, got, want in zip(("logaddexp", "logaddexp2"), gots, wants):
        _same(getattr(fnp, name)(a, b), want, rtol=1e-5, atol=1e-6)
        _same(got, want, rtol=1e-5, atol=1e-6)


def test_sum_prod_promote_integers():
    def check():
        for dt in (np.bool_, np.int8, np.uint16):
            x = np.arange(1, 5).astype(dt)
            for name in ("sum", "prod"):
                for promote in (True, False):
                    want = jax.eval_shape(
                        lambda x, n=name, p=promote: getattr(jnp, n)(x, promote_integers=p), x
                    ).dtype
                    assert getattr(fnp, name)(x, promote_integers=promote).dtype == want
        _same(fnp.prod(np.int8([100, 3]), promote_integers=False), np.int8(44))

    check()
    with x64_off():
        check()


def test_take_along_axis_modes_and_wrap_negative_indices():
    x = np.arange(24.0, dtype=np.float32).reshape(2, 3, 4)
    i = np.array([0, -1, 2, 3, 5, -5], np.int8)[None, None].repeat(2, 0).repeat(3, 1)
    cases = [
        dict(),
        dict(mode="clip"),
        dict(mode="clip", wrap_negative_indices=False),
        dict(mode="fill", wrap_negative_indices=False),
        dict(mode="one_hot"),
        dict(mode="one_hot", wrap_negative_indices=False),
    ]
    wants = jax.jit(lambda a, j: [jnp.take_along_axis(a, j, **kw) for kw in cases])(x, i)
    for kw, want in zip(cases, wants):
        _same(fnp.take_along_axis(x, i, **kw), want)
    # one C++ program for every mode
    gots = functx.jit(lambda a, j: [fnp.take_along_axis(a, j, **kw) for kw in cases])(x, i)
    for got, want in zip(gots, wants):
        _same(got, want)
    j = i[..., :4]  # in range: one_hot of bools is NumPy's
    _same(fnp.take_along_axis(x > 3, j, mode="one_hot"), np.take_along_axis(x > 3, j, -1))
    x1 = np.array([10, 20, 30])
    _same(fnp.take_along_axis(x1, np.array([-1, -2])), jnp.take_along_axis(x1, np.array([-1, -2])))
    with pytest.raises(TypeError, match="take_along_axis indices must be of integer type"):
        fnp.take_along_axis(x, x)
    with pytest.raises(ValueError, match="must be 1D if axis=None"):
        fnp.take_along_axis(x, i, axis=None)


def test_ravel_multi_index_ignore_and_dtype():
    idx8, idx16 = np.array([0, 1], np.int8), np.array([1, 0], np.uint16)

    def f(ravel, i8, i16):
        pairs = [(i, o) for i in (i8, i16) for o in (None, np.int32)]
        return [ravel((i, i), (2, 3), mode="ignore", dtype=o) for i, o in pairs]

    gots = functx.jit(lambda a, b: f(fnp.ravel_multi_index, a, b))(idx8, idx16)
    wants = jax.jit(lambda a, b: f(jnp.ravel_multi_index, a, b))(idx8, idx16)
    for got, want in zip(gots, wants):
        _same(got, want)
        assert not got.weak_type
    with pytest.raises(ValueError, match="not large enough"):
        fnp.ravel_multi_index((np.array([0], np.int8),) * 2, (20, 20))


def test_traced_k_of_eye_tri_and_traced_shift_of_roll():
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)

    def f(np_, k, s):
        return (
            np_.eye(4, M=3, k=k),
            np_.tri(4, M=3, k=k),
            np_.roll(x, s, axis=(0, -1)),
            np_.roll(x, s[0]),
        )

    s = np.array([1, -6])
    gots = functx.jit(lambda k, s: f(fnp, k, s))(np.int32(-1), s)
    wants = jax.jit(lambda k, s: f(jnp, k, s))(np.int32(-1), s)
    for got, want in zip(gots, wants):
        _same(got, want)
    _same(fnp.eye(3, k=np.int32(1)), jnp.eye(3, k=np.int32(1)))
    # JAX's tri defaults to float32 also with x64, and an int k beyond int32 overflows without it
    _same(fnp.tri(3, k=2**33), jnp.tri(3, k=2**33))
    with x64_off():
        with pytest.raises(OverflowError):
            fnp.tri(3, k=2**33)


def test_pad_statistic_ramp_odd_and_array_constant_modes():
    x = np.array([[3.0, -2.0, 5.0, 1.0], [0.5, 7.0, -1.0, 2.0]], np.float32)
    cases = [
        ("maximum", {}),
        ("minimum", dict(stat_length=2)),
        ("mean", dict(stat_length=((1, 3), (2, 1)))),
        ("median", {}),
        ("linear_ramp", dict(end_values=(1, -4))),
        ("reflect", dict(reflect_type="odd")),
        ("symmetric", dict(reflect_type="odd")),
        ("constant", dict(constant_values=np.array([3, 5]))),
        ("empty", {}),
    ]
    for mode, kw in cases:
        _same(fnp.pad(x, (2, 3), mode=mode, **kw), jnp.pad(x, (2, 3), mode=mode, **kw))
    xi = x.astype(np.int32)
    _same(fnp.pad(xi, (2, 1), mode="linear_ramp"), jnp.pad(xi, (2, 1), mode="linear_ramp"))
    _same(fnp.pad(xi, 1, mode="median"), jnp.pad(xi, 1, mode="median"))
