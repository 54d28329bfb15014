"""``functx.nn`` against ``jax.nn``: activations (elementwise, on inputs with infinities and NaNs),
softmax/log_softmax/logsumexp/standardize over axes with masks, and one_hot; each also traced
with ``functx.make_jaxpr``. The comparison machinery (``Ref``: one JAX compilation per group of
cases; dtype and tolerance rules) is that of tests/numpy/test_numpy_vs_jax.py, loaded by path.
"""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys

import jax.nn as jnn
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import functx
import functx.nn as fnn
from functx.errors import FunctxTypeError


def _helpers():
    name = "test_numpy_vs_jax"
    if name not in sys.modules:  # run on its own: load it by path (pytest normally has it)
        path = os.path.join(os.path.dirname(__file__), "numpy", "test_numpy_vs_jax.py")
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


H = _helpers()
BF16, F16, F32, F64, I8, I32, U8, I64 = H.BF16, H.F16, H.F32, H.F64, H.I8, H.I32, H.U8, H.I64
REF, arrays, assert_matches, check_traced = H.REF, H.arrays, H.assert_matches, H.check_traced
N, SHAPES, _pad = H.N, H.SHAPES, H._pad

# --- Elementwise activations ---------------------------------------------------------------------
ACTIVATIONS = {
    "relu": lambda m, x: m.relu(x),
    "relu6": lambda m, x: m.relu6(x),
    "sigmoid": lambda m, x: m.sigmoid(x),
    "log_sigmoid": lambda m, x: m.log_sigmoid(x),
    "silu": lambda m, x: m.silu(x),
    "swish": lambda m, x: m.swish(x),
    "softplus": lambda m, x: m.softplus(x),
    "elu": lambda m, x: m.elu(x),
    "elu_alpha": lambda m, x: m.elu(x, alpha=0.5),
    "leaky_relu": lambda m, x: m.leaky_relu(x),
    "leaky_relu_slope": lambda m, x: m.leaky_relu(x, negative_slope=0.2),
    "gelu": lambda m, x: m.gelu(x),
    "gelu_tanh": lambda m, x: m.gelu(x, approximate=True),
    "gelu_exact": lambda m, x: m.gelu(x, approximate=False),
}
ACT_DTYPES = (F32, F64, F16, BF16, I32)
for _k, _f in ACTIVATIONS.items():
    for _dt in ACT_DTYPES:
        REF.case(("nn_act", _dt), [((N,), _dt)], _k, lambda x, f=_f: f(jnn, x))


@pytest.mark.parametrize("name", list(ACTIVATIONS))
@settings(max_examples=10)
@given(data=st.data())
def test_activation(name, data):
    dts = [d for d in ACT_DTYPES if REF.accepts(("nn_act", d), name)]
    dt = data.draw(st.sampled_from(dts), label="dtype")
    x = data.draw(arrays(dt, data.draw(SHAPES, label="shape")), label="x")
    fn = lambda a: ACTIVATIONS[name](fnn, a)  # noqa: E731
    ref = np.asarray(REF(("nn_act", dt), name, _pad(x)))[: x.size].reshape(x.shape)
    assert_matches(fn(x), ref, [dt])
    check_traced(fn, x)


def test_integer_inputs_get_jax_dtypes():
    """Integer inputs: JAX's sigmoid/silu reject them; gelu/softplus compute in float32; elu,
    relu6 and leaky_relu mix them with a Python float (the default float: float64 with x64 on,
    as the suite runs)."""
    x = np.arange(-3, 4, dtype=I32)
    for name in ("sigmoid", "silu"):
        with pytest.raises(TypeError):
            getattr(jnn, name)(x)
        with pytest.raises(TypeError):
            getattr(fnn, name)(x)
    for name in ("gelu", "softplus", "elu", "relu6", "leaky_relu"):
        out, want = getattr(fnn, name)(x), getattr(jnn, name)(x)
        assert out.dtype == want.dtype, name
        np.testing.assert_allclose(np.asarray(out), np.asarray(want), rtol=1e-6, atol=1e-6)
    assert fnn.relu(x).dtype == I32


# --- Normalizations over axes --------------------------------------------------------------------
AXIS_FNS = {
    "softmax": lambda m, x, ax, w: m.softmax(x, axis=ax, where=w),
    "log_softmax": lambda m, x, ax, w: m.log_softmax(x, axis=ax, where=w),
    "logsumexp": lambda m, x, ax, w: m.logsumexp(x, axis=ax, where=w),
    "logsumexp_keepdims": lambda m, x, ax, w: m.logsumexp(x, axis=ax, keepdims=True, where=w),
    "logsumexp_b": lambda m, x, ax, w: m.logsumexp(x, axis=ax, b=x[..., :1] + 0.5),
    "logsumexp_sign": lambda m, x, ax, w: m.logsumexp(x, axis=ax, b=x * 0.5 - 1, return_sign=True),
    "standardize": lambda m, x, ax, w: m.standardize(x, axis=ax, where=w),
    "standardize_stats": lambda m, x, ax, w: m.standardize(
        x, axis=ax, mean=0.5, variance=x[..., :1] * x[..., :1] + 1, epsilon=1e-3
    ),
}
# shape: (axes, dtypes)
NORM_SHAPES = {
    (2, 3, 4): ((-1, 0, (0, 2), None), (F32, F64, BF16)),
    (3, 0): ((-1, 0), (F32,)),
    (5,): ((0, None), (F32,)),
    (): (((), None), (F32,)),
}
# The variance's E[x^2] - E[x]^2 cancels: a few ulps of the sums become large relative errors.
NORM_RTOL = {("standardize", F32): 2e-3, ("standardize", BF16): 1e-1, ("standardize", F64): 1e-9}

for _shape, (_axes, _dts) in NORM_SHAPES.items():
    for _dt in _dts:
        for _k, _f in AXIS_FNS.items():
            for _ax in _axes:
                for _masked in (False, True):
                    REF.case(
                        ("nn_norm", _shape, _dt),
                        [(_shape, _dt), (_shape, np.bool_)],
                        (_k, _ax, _masked),
                        lambda x, w, f=_f, ax=_ax, mk=_masked: f(jnn, x, ax, w if mk else None),
                    )


@pytest.mark.parametrize("name", list(AXIS_FNS))
@settings(max_examples=10)
@given(data=st.data())
def test_normalization(name, data):
    shape = data.draw(st.sampled_from(list(NORM_SHAPES)), label="shape")
    axes, dts = NORM_SHAPES[shape]
    dt = data.draw(st.sampled_from(dts), label="dtype")
    axis = data.draw(st.sampled_from(axes), label="axis")
    masked = data.draw(st.booleans(), label="masked")
    x = data.draw(arrays(dt, shape, lo=-5, hi=5, specials=dt != F64), label="x")
    w = data.draw(hnp.arrays(np.bool_, shape), label="where")
    group, key = ("nn_norm", shape, dt), (name, axis, masked)
    fn = lambda a, m: AXIS_FNS[name](
        fnn,
        functx.numpy.asarray(a),
        axis,  # noqa: E731
        m if masked else None,
    )
    if not REF.accepts(group, key):
        with pytest.raises((FunctxTypeError, ValueError, TypeError, IndexError)):
            fn(x, w)
        return
    rtol = NORM_RTOL.get((name.split("_")[0], dt))
    assert_matches(fn(x, w), REF(group, key, x, w), [dt], rtol=rtol)
    check_traced(fn, x, w)


def test_softmax_extremes():
    """Infinities: -inf entries get probability 0, an all -inf row is NaN, as in JAX."""
    x = np.array([[-np.inf, 0.0, 1.0], [np.inf, 0.0, 1.0], [-np.inf] * 3, [1e30, 1e30, -1e30]], F32)
    for name in ("softmax", "log_softmax", "logsumexp"):
        assert_matches(getattr(fnn, name)(x, axis=-1), getattr(jnn, name)(x, axis=-1), [F32])


# --- one_hot -------------------------------------------------------------------------------------
ONE_HOT = {
    "default": lambda m, x: m.one_hot(x, 4),
    "axis0": lambda m, x: m.one_hot(x, 4, axis=0),
    "axis1": lambda m, x: m.one_hot(x, 3, axis=1),
    "int_dtype": lambda m, x: m.one_hot(x, 5, dtype=np.int32),
    "bool_dtype": lambda m, x: m.one_hot(x, 2, dtype=np.bool_),
    "bf16": lambda m, x: m.one_hot(x, 4, dtype=BF16),
    "one": lambda m, x: m.one_hot(x, 1),
    "zero_classes": lambda m, x: m.one_hot(x, 0),
    "neg_axis": lambda m, x: m.one_hot(x, 6, axis=-2),
}
ONE_HOT_DTYPES = (I32, I8, U8, I64)
for _k, _f in ONE_HOT.items():
    for _dt in ONE_HOT_DTYPES:
        REF.case(("one_hot", _dt), [((2, 3), _dt)], _k, lambda x, f=_f: f(jnn, x))


@pytest.mark.parametrize("name", list(ONE_HOT))
@settings(max_examples=5)
@given(data=st.data())
def test_one_hot(name, data):
    """Out-of-range and negative labels give all-zero rows; the default dtype is float32
    (functx's default float; JAX with x64 on gives float64)."""
    dt = data.draw(st.sampled_from(ONE_HOT_DTYPES), label="dtype")
    x = data.draw(arrays(dt, (2, 3), lo=-2, hi=7), label="labels")
    fn = lambda a: ONE_HOT[name](fnn, a)  # noqa: E731
    # The labels' dtype does not ask for a float64 result: no input dtypes for functx_dtype.
    assert_matches(fn(x), REF(("one_hot", dt), name, x), [])
    check_traced(fn, x)


def test_one_hot_scalar_and_errors():
    assert_matches(fnn.one_hot(np.int32(2), 4), jnn.one_hot(np.int32(2), 4), [I32])
    with pytest.raises(FunctxTypeError, match="num_classes"):
        fnn.one_hot(np.arange(3), 2.5)
    with pytest.raises(FunctxTypeError, match="axis"):
        fnn.one_hot(np.arange(3), 3, axis=2)
    with pytest.raises(FunctxTypeError, match="axis"):
        fnn.softmax(np.ones((2, 3), F32), axis=2)


def test_activation_docstrings_name_each_argument_once():
    """``_activation`` completes a docstring with every argument of the signature, in its order,
    and refuses a meaning missing or for no argument."""
    for fn in (fnn.relu6, fnn.elu, fnn.softmax, fnn.logsumexp, fnn.one_hot):
        args = fn.__doc__.split("Arguments:")[1].split("Returns:")[0]
        named = [line.split(":")[0].strip() for line in args.splitlines() if ": " in line[:30]]
        assert named == list(inspect.signature(fn).parameters), fn.__name__
    doc = fnn._activation("np.float32([1.0])", "[1.]", b="a bias.")(lambda x, b: x).__doc__
    assert "x: the input (integers are converted to float).\n      b: a bias." in doc
    with pytest.raises(TypeError, match=r"no meaning for \['b'\]"):
        fnn._activation("np.float32([1.0])", "[1.]")(lambda x, b: x)
    with pytest.raises(TypeError, match=r"meanings of \['c'\]"):
        fnn._activation("np.float32([1.0])", "[1.]", c="a bias.")(lambda x: x)
