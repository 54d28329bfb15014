"""``functx.scipy.fft`` (``dct``, ``idct``, ``dctn``, ``idctn``): values against SciPy in float64
(hypothesis-drawn shapes, lengths, axes and norms) and against JAX, shapes and dtypes against JAX in
both x64 modes (``jax.eval_shape``: no XLA compile per case), gradients (check_grads in float64),
jit (C++) and vmap against eager, and JAX's errors."""

from __future__ import annotations

import jax
import jax.scipy.fft as jfft
import numpy as np
import pytest
import scipy.fft as sfft
from hypothesis import given, settings, strategies as st
from x64util import x64_off

import functx
import functx.scipy.fft as ffft
from functx.test_util import check_grads

RNG = np.random.default_rng(0)
ONE_AXIS = ("dct", "idct")
MANY_AXES = ("dctn", "idctn")


@settings(max_examples=12)
@given(
    st.sampled_from(ONE_AXIS),
    st.lists(st.integers(1, 7), min_size=1, max_size=3),
    st.data(),
    st.sampled_from([None, "ortho", "backward"]),
    st.booleans(),
)
def test_one_axis_against_scipy(name, shape, data, norm, cplx):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = data.draw(st.one_of(st.none(), st.integers(1, 9)))
    x = RNG.standard_normal(shape) + (1j * RNG.standard_normal(shape) if cplx else 0)
    got = getattr(ffft, name)(x, n=n, axis=axis, norm=norm)
    want = getattr(sfft, name)(x, type=2, n=n, axis=axis, norm=norm)
    assert np.asarray(got).dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


@settings(max_examples=10)
@given(
    st.sampled_from(MANY_AXES),
    st.lists(st.integers(1, 6), min_size=1, max_size=3),
    st.data(),
    st.sampled_from([None, "ortho"]),
)
def test_many_axes_against_scipy(name, shape, data, norm):
    axes = data.draw(st.one_of(st.none(), st.permutations(range(len(shape)))))
    s = None
    if data.draw(st.booleans()):
        k = len(shape) if axes is None else len(axes)
        s = data.draw(st.lists(st.integers(1, 7), min_size=k, max_size=k))
    x = RNG.standard_normal(shape)
    got = getattr(ffft, name)(x, s=s, axes=axes, norm=norm)
    want = getattr(sfft, name)(x, type=2, s=s, axes=axes, norm=norm)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


_X = RNG.standard_normal((3, 5))
_CASES = [  # (name, c: the input is x + c x[::-1], keywords)
    ("dct", 0.0, {}),
    ("dct", 0.0, {"norm": "ortho", "axis": 0, "n": 4}),
    ("idct", 0.0, {"n": 7}),
    ("idct", 2j, {"norm": "ortho"}),
    ("dctn", 0.0, {"s": (2, 3)}),
    ("idctn", 0.0, {"axes": (1,), "norm": "ortho"}),
    ("dctn", 0.0, {"s": (4, 6), "axes": (0,)}),  # (JAX pairs s and axes up to the shorter)
]


def test_values_against_jax():
    # (one jitted JAX program for all the cases: JAX's eager calls compile each op, ~1 s a case)
    def run(mod, x):
        return [getattr(mod, name)(x + c * x[::-1], **kw) for name, c, kw in _CASES]

    want = jax.jit(lambda x: run(jfft, x))(_X)
    for (name, _, kw), g, w in zip(_CASES, run(ffft, _X), want):
        assert (g.shape, g.dtype) == (w.shape, w.dtype), (name, kw)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-10)


_DTYPES = [np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_, np.complex64]
_DTYPES += [np.complex128]


@pytest.mark.parametrize("x64", [True, False])
def test_dtypes_like_jax(x64):
    for dt in _DTYPES:
        x = np.ones((2, 3), dt)
        for name in ONE_AXIS + MANY_AXES:
            if x64:
                got, want = getattr(ffft, name)(x), jax.eval_shape(getattr(jfft, name), x)
            else:
                with x64_off():
                    got, want = getattr(ffft, name)(x), jax.eval_shape(getattr(jfft, name), x)
            assert (got.shape, got.dtype) == (want.shape, want.dtype), (name, dt, x64)


def test_default_mode_values():
    with x64_off():
        x = _X.astype(np.float32)
        for name in ONE_AXIS:
            got = getattr(ffft, name)(x, norm="ortho")
            want = getattr(sfft, name)(x.astype(np.float64), norm="ortho")
            assert got.dtype == np.float32
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)


def test_gradients():
    x = RNG.standard_normal((2, 5))
    check_grads(lambda v: ffft.dct(v, norm="ortho"), (x,), 1, modes=["fwd", "rev"])
    check_grads(lambda v: ffft.idct(v, n=4, axis=0), (x,), 1, modes=["fwd", "rev"])
    check_grads(lambda v: ffft.dctn(v, s=(3, 4)), (x,), 1, modes=["rev"])
    check_grads(ffft.idctn, (x + 1j * x[::-1],), 1, modes=["rev"])


def test_jit_and_vmap_match_eager():
    x = RNG.standard_normal((4, 6))

    def f(v):
        return ffft.idct(ffft.dct(v, norm="ortho"), n=5) + ffft.dctn(v)[..., :5]

    want = np.asarray(f(x))
    np.testing.assert_allclose(np.asarray(functx.jit(f)(x)), want, rtol=1e-12, atol=1e-12)
    rows = np.stack([np.asarray(f(r)) for r in x])
    np.testing.assert_allclose(np.asarray(functx.vmap(f)(x)), rows, rtol=1e-12, atol=1e-12)


def test_inverse_round_trip():
    x = RNG.standard_normal((3, 4, 5))
    for norm in (None, "ortho"):
        back = ffft.idctn(ffft.dctn(x, norm=norm), norm=norm)
        np.testing.assert_allclose(np.asarray(back), x, atol=1e-12)


def test_not_implemented_like_jax():
    for mod in (ffft, jfft):
        for name in ONE_AXIS + MANY_AXES:
            with pytest.raises(NotImplementedError, match="Only DCT type 2"):
                getattr(mod, name)(_X, type=3)


_BAD_CALLS = [
    lambda m: m.dct(_X, norm="forward"),
    lambda m: m.idctn(_X, norm="xx"),
    lambda m: m.dct([1.0, 2.0]),
    lambda m: m.dct(_X, axis=2),
    lambda m: m.dct(np.float32(1.0)),
    lambda m: m.dct(_X, n=-1),
    lambda m: m.dctn(_X, axes=(0, 0)),
    lambda m: m.dctn(_X, axes=(3,)),
]


@pytest.mark.parametrize("i", range(len(_BAD_CALLS)))
def test_bad_arguments_raise_functx_errors_of_jax_classes(i):
    with pytest.raises((TypeError, ValueError)) as theirs:
        _BAD_CALLS[i](jfft)
    with pytest.raises(functx.FunctxError) as ours:
        _BAD_CALLS[i](ffft)
    assert isinstance(ours.value, type(theirs.value)), (ours.value, theirs.value)


def test_no_points_is_an_error():
    # (JAX fails inside lax.slice with a TypeError, or a ValueError for n < 0; functx says why,
    # as an error of both classes)
    for call in (lambda: ffft.dct(_X, n=0), lambda: ffft.idct(np.ones((3, 0)))):
        with pytest.raises(functx.FunctxArgumentError, match="test_scipy_fft.py"):
            call()


def test_triton_matches_eager(monkeypatch):
    # (the Triton interpreter; the FFT is a library step there too: torch.fft between launches)
    pytest.importorskip("triton")
    from functx.lowering.triton.program import compile_triton

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x = RNG.standard_normal((3, 6)).astype(np.float32)

    def f(v):
        return ffft.dct(v, norm="ortho"), ffft.idctn(v, s=(2, 5))

    with x64_off():
        outs = compile_triton(functx.make_jaxpr(f)(x))(x)
        for o, e in zip(outs, f(x)):
            np.testing.assert_allclose(o.cpu().numpy(), np.asarray(e), rtol=1e-5, atol=1e-5)
