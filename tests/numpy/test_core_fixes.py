"""Wrong answers and missing errors of functx.numpy's core functions, fixed: each checked
against JAX (values, dtypes in both x64 modes, error classes)."""

import jax.numpy as jjnp
import numpy as np
import pytest

import functx.numpy as fjnp


def _same(f, *args, **kw):
    """f(jnp, ...) gives the same values and dtype in functx and JAX."""
    got, want = f(fjnp, *args, **kw), f(jjnp, *args, **kw)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6, atol=1e-6)


def _raises_like(f):
    """f(jnp) raises in both libraries, functx's error an instance of JAX's class."""
    with pytest.raises(Exception) as want:
        f(jjnp)
    with pytest.raises(type(want.value)):
        f(fjnp)


C = np.array([1 + 2j, 3j, -1.5 + 0.5j], np.complex64)
C2 = np.array([[1j, 1.0, 2 - 1j], [0.5, -1j, 3.0]], np.complex64)


def _dot_cases(m):
    return [
        m.vdot(C, np.array([1, 1j, 2], np.complex64)),
        m.vdot(C, np.array([1.0, 2.0, 3.0], np.float32)),
        m.vdot(np.array([1.0, 2.0, 3.0], np.float32), C),
        m.vecdot(C2, C2),
        m.vecdot(C2, np.ones(3, np.float32)),
        m.vecdot(C2, C2[:, :1], axis=0),
        m.linalg.vecdot(C2, C2),
    ]


def _stat_cases(m):
    return [
        m.var(C),
        m.std(C),
        m.var(C2, axis=1, ddof=1),
        m.std(C2, axis=0, keepdims=True),
        m.var(C2, where=np.array([[True, False, True], [True, True, False]])),
        m.var(C2, dtype=np.complex64),
        m.std(C2, axis=1, mean=m.mean(C2, axis=1, keepdims=True)),
        m.var(np.array([1.0, 2.0, 4.0], np.float32), mean=2.0),
        m.var(np.array([1, 2, 4]), correction=1),
    ]


def _default_mode_cases(m):
    # Only these change dtype with the x64 mode (integer input, a Python scalar mean).
    return [m.var(np.array([1, 2, 4]), correction=1), m.std(C, mean=0.5)]


def _check(cases):
    for got, want in zip(cases(fjnp), cases(jjnp), strict=True):
        assert got.dtype == want.dtype, (got.dtype, want.dtype)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-6)


def test_conjugating_dots_and_complex_var_std():
    _check(_dot_cases)
    _check(_stat_cases)


def test_complex_var_std_default_mode(no_x64):
    _check(_default_mode_cases)


X = np.arange(6.0, dtype=np.float32).reshape(2, 3)
OUT_CALLS = {
    "sum": lambda m: m.sum(X, out=X),
    "prod": lambda m: m.prod(X, out=X),
    "max": lambda m: m.max(X, out=X),
    "min": lambda m: m.min(X, out=X),
    "amax": lambda m: m.amax(X, out=X),
    "any": lambda m: m.any(X, out=X),
    "all": lambda m: m.all(X, out=X),
    "mean": lambda m: m.mean(X, out=X),
    "var": lambda m: m.var(X, out=X),
    "std": lambda m: m.std(X, out=X),
    "argmax": lambda m: m.argmax(X, out=X),
    "argmin": lambda m: m.argmin(X, 0, X),
    "cumsum": lambda m: m.cumsum(X, out=X),
    "cumprod": lambda m: m.cumprod(X, out=X),
    "ptp": lambda m: m.ptp(X, out=X),
    "round": lambda m: m.round(X, 0, X),
    "around": lambda m: m.around(X, out=X),
    "trace": lambda m: m.trace(X, out=X),
    "isposinf": lambda m: m.isposinf(X, out=X),
    "isneginf": lambda m: m.isneginf(X, out=X),
    "stack": lambda m: m.stack([X], out=X),
    "take": lambda m: m.take(X, np.array([0]), out=X),
    "outer": lambda m: m.outer(X, X, out=X),
    "bitwise_and": lambda m: m.bitwise_and(1, 3, out=X),
    "bitwise_xor": lambda m: m.bitwise_xor(1, 3, where=True),
}


UFUNCS = ["add", "subtract", "multiply", "negative", "maximum", "minimum", "logaddexp"]
UFUNCS += ["logaddexp2", "logical_and", "logical_or", "logical_xor"]


def test_out_raises_not_implemented():
    for call in OUT_CALLS.values():
        with pytest.raises(
            NotImplementedError, match="'out' argument to jnp[.]|(out|where) argument of <jnp.ufunc"
        ):
            call(fjnp)
        with pytest.raises(NotImplementedError):
            call(jjnp)
    for name in UFUNCS:
        for kw in ({"out": X}, {"where": X > 1}):
            args = (X,) if name == "negative" else (X, X)
            with pytest.raises(NotImplementedError):
                getattr(jjnp, name)(*args, **kw)
            with pytest.raises(NotImplementedError, match=f"argument of <jnp.ufunc '{name}'>"):
                getattr(fjnp, name)(*args, **kw)
    _same(lambda m: m.add(X, 1.0, out=None, where=None))
    _same(lambda m: m.negative(X, out=None))
    # out=None is accepted (positionally too, in JAX's argument order).
    _same(lambda m: m.take(X, np.array([2, 0]), None, None, "clip"))
    _same(lambda m: m.stack([X, X], 1, None, np.int32))
    _same(lambda m: m.trace(X, 0, 0, 1, None, None))


ERROR_CALLS = [
    lambda m: m.max(X, where=X > 1),
    lambda m: m.min(X, axis=0, where=X > 1),
    lambda m: m.cumulative_sum(X),
    lambda m: m.cumulative_prod(X),
    lambda m: m.cumulative_sum(np.float32(1.0)),
    lambda m: m.diag(np.ones((2, 2, 2))),
    lambda m: m.diag(np.float32(1.0)),
    lambda m: m.pad(np.arange(4.0), 1, stat_length=1),
    lambda m: m.pad(np.arange(4.0), 1, mode="edge", constant_values=1),
    lambda m: m.pad(np.arange(4.0), 1, mode="wrap", reflect_type="even"),
    lambda m: m.signbit(C),
    lambda m: m.signbit(1j),
    lambda m: m.var(C, dtype=np.float32),
    lambda m: m.var(X, ddof=1, correction=1),
    lambda m: m.size(X, axis=(0, 0)),
    lambda m: m.size(X, axis=2),
    lambda m: m.split(np.arange(6), [-2]),
    lambda m: m.split(np.arange(6), [4, 2]),
    lambda m: m.split(np.arange(6), [2, 10]),
    lambda m: m.split(np.arange(6), 0),
    lambda m: m.array_split(np.arange(6), 0),
    lambda m: m.array_split(np.arange(6), [1, -2]),
    lambda m: m.hsplit(np.arange(6), [-2]),
]


@pytest.mark.parametrize("i", range(len(ERROR_CALLS)))
def test_error_classes_match_jax(i):
    _raises_like(ERROR_CALLS[i])


def test_accepted_like_jax():
    _same(lambda m: m.max(X, where=X > 1, initial=0.0))
    _same(lambda m: m.min(X, axis=1, where=X > 1, initial=10.0))
    _same(lambda m: m.pad(np.arange(4.0), 1, constant_values=7.0))
    _same(lambda m: m.pad(np.arange(4.0), 2, mode="reflect", reflect_type="even"))
    _same(lambda m: m.signbit(np.array([-1.0, -0.0, 0.0, 2.0], np.float32)))
    for axis in (None, 1, -1, (0, 1), (1,), (), [0]):
        assert fjnp.size(X, axis=axis) == jjnp.size(X, axis=axis)
    assert fjnp.size(3.0) == jjnp.size(3.0) == 1
    for idx in ([2, 6], [0, 0], [1, 3, 3], np.array([2, 4])):
        got, want = fjnp.split(np.arange(6), idx), jjnp.split(np.arange(6), idx)
        assert [g.tolist() for g in got] == [w.tolist() for w in want]


@pytest.mark.parametrize(
    "name",
    [
        "nansum",
        "nanprod",
        "nanmean",
        "nanmax",
        "nanmin",
        "nanvar",
        "nanstd",
        "nanargmax",
        "nanargmin",
        "nancumsum",
        "nancumprod",
    ],
)
def test_nan_functions_refuse_out_as_jax(name):
    x = np.array([1.0, np.nan, 2.0])
    with pytest.raises(NotImplementedError):
        getattr(jjnp, name)(x, out=np.ones(3))
    with pytest.raises(NotImplementedError):
        getattr(fjnp, name)(x, out=np.ones(3))


def test_index_constants_go_with_a_gpu_array(interpreted_gpu):
    """The index arrays that diagonal / trace / repeat / pad / delete build from static sizes go
    with the operand's device: on a GPU array (Triton's interpreter) they raised a DeviceError
    against host arrays. Results stay on the GPU, with the CPU's values."""
    import functx

    m = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    cases = [
        lambda a: fjnp.diagonal(a, 1),
        fjnp.trace,
        lambda a: fjnp.repeat(a, np.array([1, 0, 2]), axis=0),
        lambda a: fjnp.pad(a, ((1, 2), (0, 1)), mode="reflect"),
        lambda a: fjnp.delete(a, [0, 2], axis=1),
    ]
    on_gpu = functx.device_put(m, interpreted_gpu)
    for f in cases:
        got = f(on_gpu)
        assert got.device == interpreted_gpu
        np.testing.assert_array_equal(np.asarray(got), np.asarray(f(m)))


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc"])
def test_rounding_of_integers_and_bools_is_an_array_as_jax(name):
    """floor, ceil and trunc return integer and bool operands unchanged, as Arrays of JAX's
    dtype and weak type (a Python int gave the int back); floats are rounded, complex refused."""
    for x in (
        3,
        True,
        np.int8(-2),
        np.array([1, 2], np.uint8),
        np.array([-1.5, 2.5], np.float32),
        -2.5,  # (a Python float: trunc raised)
        np.float16(2.5),
    ):
        got, want = getattr(fjnp, name)(x), getattr(jjnp, name)(x)
        assert isinstance(got, fjnp.ndarray), (x, got)
        assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type), (x, got, want)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    with pytest.raises(TypeError):
        getattr(fjnp, name)(np.array([1j]))


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
def test_like_constructors_keep_the_inputs_weak_type_as_jax(name):
    """``*_like(a)`` without a dtype is weakly typed exactly where ``a`` is (dup38's find:
    ``zeros_like(3.0)`` was strong float32), so it does not promote a bfloat16 operand."""
    extra = (2,) if name == "full_like" else ()
    for a in [3.0, 3, np.float32(3), 2.0 * np.ones(2, np.float32)]:
        for kw in [{}, {"dtype": "float32"}]:
            ours = getattr(fjnp, name)(a, *extra, **kw)
            theirs = getattr(jjnp, name)(a, *extra, **kw)
            assert (ours.dtype, ours.weak_type) == (theirs.dtype, theirs.weak_type), (a, kw)
    x = fjnp.ones(3, "bfloat16")
    assert (getattr(fjnp, name)(3.0, *extra) + x).dtype == fjnp.bfloat16
    assert getattr(fjnp, name)(fjnp.asarray(3.0), *extra).weak_type


@pytest.mark.parametrize(
    "name", ["quantile", "percentile", "nanquantile", "nanpercentile", "median", "nanmedian"]
)
@pytest.mark.parametrize("kw", [{"out": X}, {"overwrite_input": True}])
def test_quantiles_out_and_overwrite_input_raise_value_error_as_jax(name, kw):
    """dup38's find: these raised NotImplementedError where JAX raises ValueError."""
    args = () if "median" in name else (0.5,)
    with pytest.raises(ValueError):
        getattr(jjnp, name)(X, *args, **kw)
    with pytest.raises(ValueError, match=f"jnp.{name} does not support"):
        getattr(fjnp, name)(X, *args, **kw)
