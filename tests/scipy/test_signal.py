"""``functx.scipy.signal``'s spectral functions (``detrend``, ``stft``, ``istft``, ``csd``,
``welch``) against ``jax.scipy.signal`` (values, shapes, dtypes, errors) and SciPy in float64;
gradients by ``check_grads``, ``jit`` and ``vmap``. (The convolutions are in tests/test_conv.py.)
"""

from __future__ import annotations

import warnings

import jax
import jax.scipy.signal as jsig
import numpy as np
import pytest
import scipy.signal as ssig
from hypothesis import given, settings, strategies as st

import functx
import functx.scipy.signal as fsig
from functx.errors import FunctxError
from functx.test_util import check_grads

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)

# keyword sets for stft: every boundary, padding, detrending, window kind and sidedness
STFT_KW = [
    dict(nperseg=16),
    dict(nperseg=15, noverlap=3, nfft=20),
    dict(nperseg=8, boundary="even"),
    dict(nperseg=8, boundary="odd", padded=False),
    dict(nperseg=8, boundary="constant", detrend="linear"),
    dict(nperseg=8, boundary=None, return_onesided=False, detrend="constant"),
    dict(window=("tukey", 0.3), nperseg=10, fs=3.0),
    dict(window=np.hanning(12), nperseg=None),
]
# keyword sets for welch and csd
PSD_KW = [
    dict(),
    dict(nperseg=15, noverlap=3, nfft=20, detrend="linear", fs=2.5),
    dict(nperseg=8, average="median"),
    dict(nperseg=8, scaling="spectrum", return_onesided=False),
    dict(nperseg=8, detrend=False, window="boxcar"),
    dict(nperseg=9, window=("kaiser", 4.0), axis=0),
]


ISTFT_KW = [
    dict(nperseg=16),
    dict(nperseg=16, noverlap=4),
    dict(nperseg=16, boundary=False),
    dict(nperseg=8, window="hamming", nfft=12),
    dict(nperseg=8, input_onesided=False),
    dict(nperseg=8, time_axis=0, freq_axis=-1),
]
DETREND_KW = [dict(), dict(bp=[10, 30]), dict(type="constant", axis=0), dict(axis=0, bp=1)]


def _data(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def _same(out, ref, dtype):
    tol = 5e-5 if np.dtype(dtype) in (F32, np.complex64) else 1e-10
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        o, r = np.asarray(o), np.asarray(r)
        assert o.shape == r.shape
        scale = max(1.0, float(np.max(np.abs(r), initial=0)))  # (relative to the largest value)
        np.testing.assert_allclose(o, r, rtol=tol, atol=tol * scale)


def _kw(kw, dtype):
    return {k: v.astype(dtype) if isinstance(v, np.ndarray) else v for k, v in kw.items()}


def _stft_input(kw, dtype):
    """An STFT for ``istft(..., **kw)``, from SciPy in float64, then cast."""
    fwd = {k: v for k, v in kw.items() if k in ("nperseg", "noverlap", "nfft", "window")}
    fwd["boundary"] = "zeros" if kw.get("boundary", True) else None
    fwd["return_onesided"] = kw.get("input_onesided", True)
    z = ssig.stft(_data((2, 50), F64), **fwd)[2]
    if "time_axis" in kw:
        z = z.transpose(2, 0, 1)
    return z.astype(np.complex64 if dtype == F32 else np.complex128)


def _every_call(m, dtype):
    """Every argument set of every spectral function, on one module (functx's or JAX's)."""
    x, y = _data((3, 40), dtype), _data((1, 40), dtype, seed=1)
    out = [m.stft(x, **_kw(kw, dtype)) for kw in STFT_KW]
    for kw in PSD_KW:
        xa, ya = (x.T, y.T) if kw.get("axis") == 0 else (x, y)
        out += [m.welch(xa, **kw), m.csd(xa, ya, **kw)]
    out += [m.istft(_stft_input(kw, dtype), **kw) for kw in ISTFT_KW]
    out += [(m.detrend(x, **kw),) for kw in DETREND_KW]
    out += [(m.detrend(np.arange(120).reshape(3, 40) % 7, **kw),) for kw in DETREND_KW]
    return out


def _jax_only(m, dtype):
    """The cases where JAX is the only reference: the default nperseg (the whole signal; SciPy's
    is 256), the 'hann' window JAX computes itself, and a callable detrend (JAX passes the
    segments with ``axis`` moved last: SciPy's layout differs by version)."""
    x = _data((3, 40), dtype)
    mean_out = lambda d: d - d.mean(axis=0, keepdims=True)  # noqa: E731
    return [
        m.welch(x),
        m.csd(x, x[:1] * 2),
        m.stft(x, nperseg=16),
        m.istft(_stft_input(ISTFT_KW[0], dtype), **ISTFT_KW[0]),
        m.welch(x.T, nperseg=8, axis=0, detrend=mean_out),
        m.stft(x[0], nperseg=8, detrend=lambda d: d - d[..., :1]),
    ]


@pytest.mark.usefixtures("no_x64")
def test_shapes_and_dtypes_match_jax_and_values_where_only_jax_defines_them():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outs = _every_call(fsig, F32)
        refs = jax.eval_shape(lambda: _every_call(jsig, F32))  # (tracing only)
        assert len(outs) == len(refs)
        for o, r in zip(outs, refs):
            got = [(np.shape(a), np.asarray(a).dtype) for a in o]
            assert got == [(a.shape, a.dtype) for a in r]
        refs = jax.jit(lambda: _jax_only(jsig, F32))()  # (one compile)
        for o, r in zip(_jax_only(fsig, F32), refs):
            _same(o, r, F32)


def _scipy_kw(kw):
    return dict(kw, nperseg=kw["nperseg"] or len(kw["window"])) if "nperseg" in kw else kw


@pytest.mark.parametrize("kw", STFT_KW, ids=range(len(STFT_KW)))
def test_stft_matches_scipy(kw):
    for dtype in (F32, F64):
        x = _data((2, 40), dtype)
        ref = ssig.stft(x.astype(F64), **_scipy_kw(kw))
        _same(fsig.stft(x, **_kw(kw, dtype)), ref, dtype)


@pytest.mark.parametrize("kw", PSD_KW, ids=range(len(PSD_KW)))
def test_welch_and_csd_match_scipy(kw):
    full = dict(kw, nperseg=kw.get("nperseg", 40))  # (SciPy's default is 256; JAX's the signal)
    for dtype in (F32, F64):
        x, y = _data((3, 40), dtype), _data((1, 40), dtype, seed=1)
        if kw.get("axis") == 0:
            x, y = x.T, y.T
        _same(fsig.welch(x, **kw), ssig.welch(x.astype(F64), **full), dtype)
        _same(fsig.csd(x, y, **kw), ssig.csd(x.astype(F64), y.astype(F64), **full), dtype)


@pytest.mark.parametrize("kw", ISTFT_KW, ids=range(len(ISTFT_KW)))
def test_istft_matches_scipy_and_inverts_stft(kw):
    z = _stft_input(kw, F64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (SciPy's NOLA warning without the boundary)
        ref = ssig.istft(z, **kw)
    _same(fsig.istft(z, **kw), ref, F64)
    if kw.get("boundary", True):
        x = np.asarray(fsig.istft(z, **kw)[1])
        x = x.T if "time_axis" in kw else x
        np.testing.assert_allclose(x[:, :50], _data((2, 50), F64), atol=1e-12)


@settings(max_examples=6, deadline=None)
@given(
    n=st.integers(9, 30),
    nperseg=st.integers(2, 8),
    overlap=st.floats(0, 0.9),
    batch=st.sampled_from([(), (2,), (1, 2)]),
)
def test_drawn_shapes_match_scipy(n, nperseg, overlap, batch):
    x = _data((*batch, n), F64)
    kw = dict(nperseg=nperseg, noverlap=int(overlap * nperseg))
    _same(fsig.stft(x, **kw), ssig.stft(x, **kw), F64)
    _same(fsig.welch(x, **kw), ssig.welch(x, **kw), F64)
    _same(fsig.csd(x, x[..., ::-1], **kw), ssig.csd(x, x[..., ::-1], **kw), F64)
    z = ssig.stft(x, **kw)[2]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (SciPy's NOLA warning)
        _same(fsig.istft(z, **kw), ssig.istft(z, **kw), F64)


def test_complex_signal_is_two_sided():
    x = _data((2, 30), F64) + 1j * _data((2, 30), F64, 1)
    for fn in ("stft", "welch"):
        with pytest.warns(UserWarning, match="complex"):
            out = getattr(fsig, fn)(x, nperseg=8)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _same(out, getattr(ssig, fn)(x, nperseg=8), F64)


def test_istft_follows_scipy_where_jax_differs():
    """Documented decisions: noverlap=0 means no overlap (JAX reads 0 as the default, half a
    segment), and an odd nperseg with the default nfft inverts (JAX raises a broadcasting
    TypeError): both as in SciPy."""
    x = _data(40, F64)
    for kw in (dict(nperseg=8, noverlap=0, window="boxcar"), dict(nperseg=9)):
        z = ssig.stft(x, **kw)[2]
        _same(fsig.istft(z, **kw), ssig.istft(z, **kw), F64)
        np.testing.assert_allclose(np.asarray(fsig.istft(z, **kw)[1])[:40], x, atol=1e-12)
    z = ssig.stft(x, nperseg=8, noverlap=0, window="boxcar")[2]
    kw = dict(nperseg=8, noverlap=0, window="boxcar")
    assert jax.eval_shape(lambda: jsig.istft(z, **kw))[1].shape == (20,)
    assert fsig.istft(z, **kw)[1].shape == (40,)


@pytest.mark.parametrize("kw", DETREND_KW, ids=range(len(DETREND_KW)))
def test_detrend_matches_scipy(kw):
    x = _data((3, 40), F64)
    for v in (x, x + 1j * x[::-1], x.astype(F32)):
        _same(
            [fsig.detrend(v, **kw)], [ssig.detrend(v.astype(np.result_type(v, F64)), **kw)], v.dtype
        )


@pytest.mark.usefixtures("no_x64")
def test_default_mode_dtypes_and_empty_signals():
    x = _data((2, 30), F32)
    i = np.arange(30, dtype=np.int32)
    calls = [
        lambda m: m.stft(i, nperseg=8),
        lambda m: m.welch(x.astype(F64), nperseg=8),
        lambda m: m.csd(i, x[0], nperseg=8),
        lambda m: m.istft(np.ones((5, 4), np.int32)),
        lambda m: (m.detrend(i),),
        lambda m: m.welch(np.zeros((3, 0), F32)),
        lambda m: m.stft(np.zeros((0, 7), F32)),
        lambda m: m.welch(x, nperseg=1, noverlap=0),
    ]
    for call in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = call(fsig)
            ref = jax.eval_shape(lambda: call(jsig))  # noqa: B023
        assert [(np.shape(a), np.asarray(a).dtype) for a in out] == [
            (a.shape, a.dtype) for a in ref
        ]


BAD = [
    (lambda m, x: m.stft(x, nperseg=8, noverlap=8), "noverlap must be less"),
    (lambda m, x: m.stft(x, nperseg=8, nfft=4), "nfft must be greater"),
    (lambda m, x: m.stft(x, nperseg=0), "positive integer"),
    (lambda m, x: m.stft(x, nperseg=8, boundary="foo"), "Unknown boundary"),
    (lambda m, x: m.welch(x, nperseg=8, scaling="foo"), "Unknown scaling"),
    (lambda m, x: m.welch(x, nperseg=8, average="foo"), "average must be"),
    (lambda m, x: m.welch(x, nperseg=8, window="nonsense"), "nonsense"),
    (lambda m, x: m.welch(x, nperseg=8, detrend=True), "Unsupported detrend"),
    (lambda m, x: m.welch(x, window=np.ones((2, 2))), "1-D"),
    (lambda m, x: m.welch(x, window=np.ones(5), nperseg=4), "different from length"),
    (lambda m, x: m.welch(x, window=np.ones(50)), "longer than input"),
    (lambda m, x: m.welch(x[0, 0]), "out of bounds"),
    (lambda m, x: m.csd(x, x[0], nperseg=8), "same rank"),
    (lambda m, x: m.csd(x, np.ones((3, 30)), nperseg=8), "broadcast"),
    (lambda m, x: m.detrend(x, bp=50), "Breakpoints"),
    (lambda m, x: m.detrend(x, type="foo"), "Trend type"),
    (lambda m, x: m.istft(x[0]), "at least 2d"),
    (lambda m, x: m.istft(x, time_axis=0, freq_axis=-2), "differing"),
    (lambda m, x: m.istft(x, nperseg=8, nfft=4), "must be longer"),
    (lambda m, x: m.istft(x, nperseg=8, nfft=8, noverlap=9), "noverlap"),
    (lambda m, x: m.istft(x, window=np.ones(3)), "length of"),
]


@pytest.mark.parametrize("k", range(len(BAD)))
def test_bad_arguments_raise_functx_errors_like_jax(k):
    call, match = BAD[k]
    x = _data((2, 30), F32)
    with pytest.raises(ValueError):
        jax.eval_shape(lambda: call(jsig, x))  # (tracing only)
    with pytest.raises(ValueError, match=match) as got:
        call(fsig, x)
    assert isinstance(got.value, FunctxError), got.value
    with pytest.raises(NotImplementedError):
        fsig.detrend(x, overwrite_data=True)


def test_gradients_jit_and_vmap():
    x = _data(24, F64)

    def spectra(v):
        return (
            fsig.welch(v, nperseg=8, detrend="linear")[1].sum()
            + fsig.csd(v, v[::-1], nperseg=8, average="median")[1].real.sum()
            + (fsig.stft(v, nperseg=8, boundary="odd")[2] ** 2).real.sum()
            + fsig.istft(fsig.stft(v, nperseg=8)[2], nperseg=8)[1].sum()
            + (fsig.detrend(v, bp=[9]) ** 2).sum()
        )

    check_grads(spectra, (x,), order=1, modes=["rev"])
    np.testing.assert_allclose(functx.jit(spectra)(x), spectra(x), rtol=1e-12)
    xb = _data((3, 24), F64)
    np.testing.assert_allclose(
        functx.vmap(lambda v: fsig.welch(v, nperseg=8)[1])(xb), fsig.welch(xb, nperseg=8)[1]
    )
