"""functx.numpy regressions from issue 16: wrong answers (var/std with ddof >= n, take's modes,
sinc's derivatives at 0) and invalid arguments that were read as something else or escaped as
non-functx exceptions. Each compares with JAX (x64) and NumPy float64."""

import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, strategies as st

import functx
import functx.numpy as fnp
from functx.errors import (
    FunctxError,
    FunctxIndexError,
    FunctxOverflowError,
    FunctxTypeError,
    FunctxValueError,
    UnsupportedError,
)

F64 = np.float64
_THIS_FILE = __file__


# --- 1. var/std with no degrees of freedom left --------------------------------------------------
@pytest.mark.parametrize("fn", ["var", "std"])
@pytest.mark.parametrize("ddof", [0, 1, 3, 4, 5, 9])
def test_var_std_ddof_at_least_count_is_nan(fn, ddof):
    x = np.arange(4, dtype=F64) ** 2
    got = np.asarray(getattr(fnp, fn)(x, ddof=ddof))
    want = np.asarray(getattr(jnp, fn)(x, ddof=ddof))
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
    if ddof >= 4:
        assert np.isnan(got), got


@pytest.mark.parametrize("ddof", [1, 2, 3, 4])
def test_var_ddof_with_where_and_axis(ddof):
    x = np.arange(12, dtype=F64).reshape(3, 4) ** 1.5
    mask = x > 3
    got = np.asarray(fnp.var(x, axis=1, ddof=ddof, where=mask))
    want = np.asarray(jnp.var(x, axis=1, ddof=ddof, where=mask))
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
    got = np.asarray(fnp.std(x, axis=0, ddof=ddof, keepdims=True))
    want = np.asarray(jnp.std(x, axis=0, ddof=ddof, keepdims=True))
    np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)


# --- 2. take / take_along_axis modes -------------------------------------------------------------
_IDX = np.array([-7, -5, -4, -1, 0, 2, 3, 4, 9], np.int32)


@pytest.mark.parametrize("mode", [None, "fill", "clip", "wrap"])
@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_take_modes_match_jax(mode, dtype):
    x = (np.arange(4) * 3 + 1).astype(dtype)
    got = np.asarray(fnp.take(x, _IDX, mode=mode))
    want = np.asarray(jnp.take(x, _IDX, mode=mode))
    np.testing.assert_array_equal(got, want)
    if mode in ("clip", "wrap"):
        np.testing.assert_array_equal(got, np.take(x, _IDX, mode=mode))  # NumPy agrees


def test_take_clip_negative_index_is_first_element():
    x = np.arange(4.0)
    assert float(fnp.take(x, np.array([-1]), mode="clip")[0]) == 0.0


def test_take_fill_value_and_axis():
    x = np.arange(12.0).reshape(3, 4)
    for kw in ({"mode": "fill", "fill_value": -9.0}, {"mode": "clip"}, {"mode": "wrap"}):
        got = np.asarray(fnp.take(x, _IDX, axis=1, **kw))
        want = np.asarray(jnp.take(x, _IDX, axis=1, **kw))
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("mode", [None, "fill", "clip", "promise_in_bounds"])
def test_take_along_axis_modes_match_jax(mode):
    x = np.arange(12.0).reshape(3, 4)
    idx = np.array([[-1, 0, 5], [3, -4, -5], [2, 1, 7]], np.int32)
    got = np.asarray(fnp.take_along_axis(x, idx, axis=1, mode=mode))
    want = np.asarray(jnp.take_along_axis(x, idx, axis=1, mode=mode))
    if mode == "promise_in_bounds":  # out of range (negatives too) is unspecified in JAX
        keep = (idx >= 0) & (idx < 4)
        got, want = got[keep], want[keep]
    np.testing.assert_array_equal(got, want)


def test_take_bad_modes():
    x = np.arange(4.0)
    for mode in ("zz", "promise_in_bounds", 3):
        with pytest.raises(FunctxValueError, match="take"):
            fnp.take(x, np.array([0]), mode=mode)
    with pytest.raises(FunctxValueError, match="take_along_axis"):
        fnp.take_along_axis(x, np.array([0]), 0, mode="wrap")
    with pytest.raises(FunctxTypeError, match="integers"):
        fnp.take(x, np.array([0.5]))
    with pytest.raises(FunctxIndexError, match="empty"):
        fnp.take(np.zeros((0,)), np.array([0]), mode="clip")


def test_take_clip_under_jit_and_grad():
    x = np.arange(4.0)
    f = functx.jit(lambda v, i: fnp.take(v, i, mode="clip"))
    np.testing.assert_array_equal(np.asarray(f(x, _IDX)), np.take(x, _IDX, mode="clip"))
    g = functx.grad(lambda v: fnp.sum(fnp.take(v, _IDX, mode="clip") ** 2))(x)
    gj = jax.grad(lambda v: jnp.sum(jnp.take(v, _IDX, mode="clip") ** 2))(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(gj))


# --- 3. sinc's derivatives -----------------------------------------------------------------------
def _derivs(grad, f, x0, n=3):
    out = []
    for _ in range(n + 1):
        out.append(float(f(np.float64(x0))))
        f = grad(f)
    return out


@pytest.mark.parametrize("x0", [0.0, 0.05, 0.2, 0.3183, 0.5, 1.0, -1.7, 3.25])
def test_sinc_derivatives_match_jax(x0):
    got = _derivs(functx.grad, fnp.sinc, x0)
    want = _derivs(jax.grad, jnp.sinc, x0)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)


def test_sinc_second_derivative_at_zero():
    d2 = functx.grad(functx.grad(fnp.sinc))(np.float64(0.0))
    np.testing.assert_allclose(float(d2), -(np.pi**2) / 3, rtol=1e-12)
    d4 = functx.grad(functx.grad(functx.grad(functx.grad(fnp.sinc))))(np.float64(0.0))
    np.testing.assert_allclose(float(d4), np.pi**4 / 5, rtol=1e-12)


@given(st.floats(-4, 4))
def test_sinc_values_and_derivatives_vs_finite_differences(x0):
    np.testing.assert_allclose(float(fnp.sinc(np.float64(x0))), np.sinc(x0), atol=1e-15)
    f1 = functx.grad(fnp.sinc)
    f2 = functx.grad(f1)
    h = 1e-5
    fd1 = (np.sinc(x0 + h) - np.sinc(x0 - h)) / (2 * h)
    fd2 = (float(f1(np.float64(x0 + h))) - float(f1(np.float64(x0 - h)))) / (2 * h)
    fd3 = (float(f2(np.float64(x0 + h))) - float(f2(np.float64(x0 - h)))) / (2 * h)
    np.testing.assert_allclose(float(f1(np.float64(x0))), fd1, atol=1e-8)
    np.testing.assert_allclose(float(f2(np.float64(x0))), fd2, atol=1e-7)
    np.testing.assert_allclose(float(functx.grad(f2)(np.float64(x0))), fd3, atol=1e-6)


def test_sinc_float32_accuracy():
    xs = np.linspace(-3, 3, 4001)
    got = np.asarray(fnp.sinc(xs.astype(np.float32)))
    np.testing.assert_allclose(got, np.sinc(xs), atol=3e-7)


# --- 4 and 5. invalid arguments are rejected with functx errors naming the op and the line -------
x4 = np.arange(4.0)
x23 = np.arange(6.0).reshape(2, 3)

REJECTED = {
    "repeat_float": (lambda: fnp.repeat(x4, 1.5), FunctxTypeError, "repeat"),
    "repeat_negative": (lambda: fnp.repeat(x4, -1), FunctxValueError, "repeat"),
    "repeat_wrong_length": (lambda: fnp.repeat(x4, [1, 2]), FunctxValueError, "repeat"),
    "pad_negative": (lambda: fnp.pad(x4, -1), FunctxValueError, "pad"),
    "pad_negative_pair": (lambda: fnp.pad(x23, ((0, 1), (-2, 0))), FunctxValueError, "pad"),
    "pad_wrong_length": (lambda: fnp.pad(x4, (1, 2, 3)), FunctxValueError, "pad"),
    "pad_wrong_pairs": (lambda: fnp.pad(x23, [[1, 2, 3]]), FunctxValueError, "pad"),
    "pad_float": (lambda: fnp.pad(x4, 1.5), FunctxTypeError, "pad"),
    "pad_none": (lambda: fnp.pad(x4, None), FunctxTypeError, "pad"),
    # (JAX raises NotImplementedError for an unknown pad mode)
    "pad_bad_mode": (lambda: fnp.pad(x4, 1, mode="zz"), UnsupportedError, "pad"),
    "pad_empty_wrap": (lambda: fnp.pad(np.zeros((0, 2)), 1, mode="wrap"), FunctxValueError, "pad"),
    "meshgrid_indexing": (
        lambda: fnp.meshgrid(x4, x4, indexing="zz"),
        FunctxValueError,
        "meshgrid",
    ),
    "array_split_negative": (lambda: fnp.array_split(x4, -1), FunctxValueError, "array_split"),
    "array_split_zero": (lambda: fnp.array_split(x4, 0), FunctxValueError, "array_split"),
    "split_float": (lambda: fnp.split(x4, 1.5), FunctxTypeError, "split"),
    "bool_mask_short": (
        lambda: fnp.asarray(x4)[np.array([True, False])],
        FunctxIndexError,
        "boolean index",
    ),
    "bool_mask_axis1": (
        lambda: fnp.asarray(x23)[:, np.array([True, False])],
        FunctxIndexError,
        "boolean index",
    ),
    "bool_mask_2d": (
        lambda: fnp.asarray(x23)[np.ones((3, 2), bool)],
        FunctxIndexError,
        "boolean index",
    ),
    "bool_mask_list": (
        lambda: fnp.asarray(x4)[[True, False, True]],
        FunctxIndexError,
        "boolean index",
    ),
    "bool_mask_at_set": (
        lambda: fnp.asarray(x4).at[np.array([True, False])].set(1.0),
        FunctxIndexError,
        "boolean index",
    ),
    "argmax_tuple_axis": (lambda: fnp.argmax(x23, axis=(0, 1)), FunctxTypeError, "argmax"),
    "sum_float_axis": (lambda: fnp.sum(x23, axis=1.0), FunctxTypeError, "sum"),
    "sum_str_axis": (lambda: fnp.sum(x23, axis="0"), FunctxTypeError, "sum"),
    "sum_repeated_axis": (lambda: fnp.sum(x23, axis=(0, -2)), FunctxValueError, "sum"),
    "mean_axis_out_of_range": (lambda: fnp.mean(x23, axis=2), FunctxValueError, "mean"),
    "arange_zero_step": (lambda: fnp.arange(0, 5, 0), FunctxValueError, "arange"),
    "arange_nan": (lambda: fnp.arange(0, np.nan), FunctxValueError, "arange"),
    "arange_str": (lambda: fnp.arange("5"), FunctxTypeError, "arange"),
    "eye_negative": (lambda: fnp.eye(-2), FunctxValueError, "eye"),
    "eye_huge": (lambda: fnp.eye(2**70), FunctxOverflowError, "eye"),
    "eye_float": (lambda: fnp.eye(2.5), FunctxTypeError, "eye"),
    "tri_negative": (lambda: fnp.tri(3, -1), FunctxValueError, "tri"),
    "zeros_huge": (lambda: fnp.zeros((2**62,)), FunctxOverflowError, "zeros"),
    "zeros_negative": (lambda: fnp.zeros((2, -1)), FunctxValueError, "zeros"),
    "ones_float_shape": (lambda: fnp.ones(2.0), FunctxTypeError, "ones"),
    "full_nested_shape": (lambda: fnp.full([[2]], 1.0), FunctxTypeError, "full"),
    "zeros_bad_dtype": (lambda: fnp.zeros(3, dtype="not-a-dtype"), FunctxTypeError, "zeros"),
    "linspace_negative_num": (lambda: fnp.linspace(0, 1, -1), FunctxValueError, "linspace"),
    "linspace_float_num": (lambda: fnp.linspace(0, 1, 2.5), FunctxTypeError, "linspace"),
    "tile_negative": (lambda: fnp.tile(x4, -1), FunctxValueError, "tile"),
    "reshape_negative": (lambda: fnp.reshape(x4, (-2, -2)), FunctxValueError, "reshape"),
    "broadcast_to_negative": (
        lambda: fnp.broadcast_to(x4, (-1, 4)),
        FunctxValueError,
        "broadcast_to",
    ),
    "var_str_ddof": (lambda: fnp.var(x4, ddof="1"), FunctxTypeError, "var"),
}


@pytest.mark.parametrize("name", list(REJECTED))
def test_invalid_argument_is_a_clear_functx_error(name):
    fn, cls, what = REJECTED[name]
    with pytest.raises(cls, match=what) as ei:
        fn()
    assert isinstance(ei.value, FunctxError)
    # the message names the user's line (here: the lambda in this file)
    assert _THIS_FILE in str(ei.value), str(ei.value)


def test_axis_errors_are_value_errors_like_jax_and_keep_type_error():
    with pytest.raises(ValueError):
        jnp.sum(x23, axis=2)
    with pytest.raises(ValueError) as ei:
        fnp.sum(x23, axis=2)
    assert isinstance(ei.value, (FunctxTypeError, IndexError))


def test_valid_calls_still_match_jax():
    cases = [
        lambda m: m.pad(x23, ((1, 2), (0, 1))),
        lambda m: m.pad(x23, (1, 2)),
        lambda m: m.pad(x23, [1]),
        lambda m: m.pad(x23, 2, mode="reflect"),
        lambda m: m.repeat(x4, np.array([1, 2, 0, 1])),
        lambda m: m.repeat(x23, 2, axis=1),
        lambda m: m.array_split(x4, 3)[1],
        lambda m: m.split(x4, [1, 3])[1],
        lambda m: m.arange(0.0, 1.0, 0.25),
        lambda m: m.eye(3, 4, k=1),
        lambda m: m.tri(3, 4, -1),
        lambda m: m.meshgrid(x4, x4[:2], indexing="ij")[1],
        lambda m: m.tile(x4, (2, 1)),
        lambda m: m.asarray(x23)[np.array([True, False])],
        lambda m: m.asarray(x23)[..., np.array([True, False, True])],
        lambda m: m.argmax(x23, axis=np.int64(1)),
        lambda m: m.sum(x23, axis=[0, 1]),
    ]
    for c in cases:
        np.testing.assert_allclose(
            np.asarray(c(fnp)), np.asarray(c(jnp)), rtol=1e-6, err_msg=inspect.getsource(c)
        )


def test_numpy_integer_arrays_as_shapes_reps_and_axes_are_accepted_like_jax():
    # the shared validators first took only tuples and lists: reshape(x, np.array([3, 2])) and
    # tile(x, np.array([1, 2])) were rejected as "must be an integer"
    cases = [
        lambda m: m.reshape(x23, np.array([3, 2])),
        lambda m: m.asarray(x23).reshape(np.array([6])),
        lambda m: m.tile(x23, np.array([1, 2])),
        lambda m: m.transpose(x23, np.array([1, 0])),
        lambda m: m.sum(x23, axis=np.array([0])),
        lambda m: m.flip(x23, axis=np.array([1])),
        lambda m: m.roll(x23, np.array([1, 2]), axis=np.array([0, 1])),
        # shift and axis broadcast against each other (NumPy's rule): were rejected, and before
        # that the shifts after the first were dropped (roll(x, (1, 1), axis=-1) rolled by 1)
        lambda m: m.roll(x23, (1, 1), axis=-1),
        lambda m: m.roll(x23, (1, -3), axis=(1,)),
        lambda m: m.roll(x23, 1, axis=(0, 1)),
    ]
    for c in cases:
        got, want = np.asarray(c(fnp)), np.asarray(c(jnp))
        assert got.shape == want.shape, inspect.getsource(c)
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=inspect.getsource(c))


def test_sinc_var_under_jit():
    xs = np.linspace(-3, 3, 101)
    np.testing.assert_allclose(np.asarray(functx.jit(fnp.sinc)(xs)), np.sinc(xs), atol=1e-15)
    d2 = functx.jit(functx.grad(functx.grad(fnp.sinc)))(np.float64(0.0))
    np.testing.assert_allclose(float(d2), -(np.pi**2) / 3, rtol=1e-12)
    assert np.isnan(float(functx.jit(lambda v: fnp.var(v, ddof=5))(np.arange(4.0))))


@pytest.mark.parametrize(
    "a, b",
    [
        (1.0, 1.0),
        (-3.0, -3.0),
        (1.0, 2.0),
        (0.0, -30.0),
        (-np.inf, 1.0),
        (2.0, -np.inf),
        (np.inf, np.inf),
        (np.nan, 1.0),
    ],
)
def test_logaddexp_value_and_gradient_match_jax(a, b):
    """At a tie each operand's derivative is 1/2 (it was (0, 1)); a -inf operand gives a finite
    gradient; softplus and log_sigmoid, built on it, inherit the fix."""
    a, b = np.float64(a), np.float64(b)
    np.testing.assert_allclose(
        np.asarray(fnp.logaddexp(a, b)), np.asarray(jnp.logaddexp(a, b)), rtol=1e-15
    )
    got = functx.grad(fnp.logaddexp, argnums=(0, 1))(a, b)
    want = jax.grad(jnp.logaddexp, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(
        np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-12
    )
