"""``functx.image`` against JAX's ``jax.image``: every method and string alias, up- and
downsampling with and without antialiasing, 1-D to 3-D, integer/bool/narrow/complex inputs and
both x64 modes (values and dtypes); nearest's indices over many sizes; an independent NumPy
float64 reference (area downsampling is a block mean, linear upsampling is ``np.interp``);
derivatives in the image, the scale and the translation (check_grads), jit and vmap; the errors."""

from __future__ import annotations

import itertools
import math

import jax
import jax.image as jimage
import ml_dtypes
import numpy as np
import pytest
from errutil import raises_as_jax
from x64util import x64_off

import functx
import functx.image as fimage
import functx.numpy as jnp
from functx.test_util import check_grads

RNG = np.random.default_rng(0)
METHODS = ["nearest", "linear", "cubic", "cubic-pytorch", "lanczos3", "lanczos5", "area"]
ALIASES = ["bilinear", "trilinear", "triangle", "bicubic", "tricubic", "bicubic-pytorch"]


def _close(got, want, what=""):
    """Equal dtypes and shapes, and values to the dtype's precision (relative to the largest)."""
    assert (got.dtype, got.shape) == (want.dtype, want.shape), what
    tol = {np.dtype(np.float64): 1e-12, np.dtype(np.float16): 2e-3}.get(got.dtype, 2e-6)
    if got.dtype == ml_dtypes.bfloat16:
        tol = 1e-2
    got, want = np.asarray(got, np.complex128), np.asarray(want, np.complex128)
    atol = tol * max(1.0, np.abs(want).max(initial=0.0))
    np.testing.assert_allclose(got, want, rtol=tol, atol=atol, err_msg=what)


# --- an independent float64 reference: the weight of input pixel i in output pixel j -------------
def _kernel(method, d):
    if method == "linear":
        return max(0.0, 1.0 - d)
    if method in ("cubic", "cubic-pytorch"):
        a = -0.5 if method == "cubic" else -0.75
        if d < 1:
            return (a + 2) * d**3 - (a + 3) * d**2 + 1
        return a * d**3 - 5 * a * d**2 + 8 * a * d - 4 * a if d < 2 else 0.0
    r = {"lanczos3": 3, "lanczos5": 5}[method]
    if d == 0:
        return 1.0
    return (
        r * math.sin(math.pi * d) * math.sin(math.pi * d / r) / (math.pi * d) ** 2 if d < r else 0.0
    )


def _reference_weights(m, n, scale, shift, method, antialias):
    w = np.zeros((m, n))
    edge = method == "cubic-pytorch" and not antialias
    method = "cubic" if method == "cubic-pytorch" and antialias else method
    for j in range(n):
        c = (j + 0.5 - shift) / scale  # output centre, in input coordinates
        if method == "area":
            lo, hi = (j - shift) / scale, (j + 1 - shift) / scale
            for i in range(m):
                w[i, j] = max(0.0, min(hi, i + 1) - max(lo, i))
        else:
            stretch = max(1 / scale, 1.0) if antialias else 1.0
            pad = 2 if edge else 0
            for i in range(-pad, m + pad):
                w[min(max(i, 0), m - 1), j] += _kernel(method, abs(c - (i + 0.5)) / stretch)
        if abs(w[:, j].sum()) > 1e-4:
            w[:, j] /= w[:, j].sum()
        if not edge and not 0 <= c <= m:
            w[:, j] = 0
    return w


@pytest.mark.parametrize("method", METHODS[1:])
def test_against_a_numpy_float64_reference(method):
    """Sizes up and down (odd factors, large factors), with and without antialiasing, against
    the weights computed pixel by pixel in float64 (an image per axis: both axes resampled)."""
    for (m, n), (p, q), aa in itertools.product([(9, 4), (5, 13)], [(7, 2), (3, 3)], [True, False]):
        x = RNG.standard_normal((m, p))
        want = _reference_weights(m, n, n / m, 0.0, method, aa).T @ x
        want = want @ _reference_weights(p, q, q / p, 0.0, method, aa)
        got = fimage.resize(x, (n, q), method, aa)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=f"{m, n, p, q, aa}")
    for scale, shift, aa in [(1.7, 0.4, True), (0.45, -1.3, True), (0.6, 2.5, False)]:
        x = RNG.standard_normal(8)
        want = _reference_weights(8, 6, scale, shift, method, aa).T @ x
        got = fimage.scale_and_translate(x, (6,), (0,), [scale], [shift], method, aa)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12, err_msg=f"{scale, shift}")


def test_area_and_linear_against_numpy():
    x = RNG.standard_normal((12, 9))
    # area downsampling by whole factors: the mean of each block
    blocks = x.reshape(4, 3, 3, 3).mean(axis=(1, 3))
    np.testing.assert_allclose(fimage.resize(x, (4, 3), "area"), blocks, rtol=1e-12)
    # linear upsampling: interpolation between pixel centres, the edges held
    centres = (np.arange(20) + 0.5) * 9 / 20 - 0.5
    want = np.stack([np.interp(centres, np.arange(9), row) for row in x])
    np.testing.assert_allclose(fimage.resize(x, (12, 20), "linear"), want, rtol=1e-12)


# --- against JAX: one compiled JAX function per test (XLA's compiles dominate the time) ----------
RESIZES = [((9,), (4,), m, True) for m in METHODS[1:]] + [
    ((9,), (4,), "linear", False),
    ((9,), (4,), "cubic-pytorch", False),
    ((9,), (4,), "lanczos3", False),
    ((7,), (15,), "cubic", True),
    ((7,), (15,), "lanczos5", True),
    ((7,), (15,), "area", True),
    ((2, 5, 8, 3), (2, 3, 11, 3), "lanczos3", True),
]


@pytest.mark.parametrize("x64", [False, True])
def test_resize_against_jax(x64):
    cases = RESIZES if not x64 else RESIZES[:3]
    xs = [RNG.standard_normal(shape) for shape, *_ in cases]
    with x64_off() if not x64 else np.errstate():
        want = jax.jit(lambda xs: [jimage.resize(x, *c[1:]) for x, c in zip(xs, cases)])(xs)
        for x, c, w in zip(xs, cases, want):
            _close(fimage.resize(x, *c[1:]), w, str(c))


def test_aliases_and_enum_members():
    x = RNG.standard_normal(5).astype(np.float32)
    for name in ALIASES:
        method = jimage.ResizeMethod.from_string(name)
        assert fimage.ResizeMethod.from_string(name).name == method.name
        _close(
            fimage.resize(x, (7,), name), fimage.resize(x, (7,), fimage.ResizeMethod[method.name])
        )
    for member in fimage.ResizeMethod:
        assert member.value == jimage.ResizeMethod[member.name].value
    assert [m.name for m in fimage.ResizeMethod] == [m.name for m in jimage.ResizeMethod]
    _close(fimage.resize(x, (3,), fimage.ResizeMethod.CUBIC), fimage.resize(x, (3,), "cubic"))


DTYPES = [np.uint8, np.int32, np.bool_, np.float16, ml_dtypes.bfloat16, np.float32, np.float64,
          np.complex64]  # fmt: skip


def test_dtypes_as_jax():
    """Every input dtype's values and output dtype, x64 off (one compiled JAX function)."""
    xs = [(RNG.standard_normal(6) * 5).astype(dtype) for dtype in DTYPES]
    cases = [(x, n, m) for x in xs for n, m in [(9, "nearest"), (9, "linear"), (4, "cubic")]]
    with x64_off():
        want = jax.jit(lambda xs: [jimage.resize(x, (n,), m) for x, (_, n, m) in zip(xs, cases)])(
            [c[0] for c in cases]
        )
        for (x, n, m), w in zip(cases, want):
            got = fimage.resize(x, (n,), m)
            assert not got.weak_type
            _close(got, w, f"{x.dtype} {m}")


def test_dtypes_with_x64_and_weak_types():
    """The output dtypes with x64 on, and of Python scalars and integer images in
    scale_and_translate, by JAX's shape evaluation (no compile)."""
    x = RNG.standard_normal((4, 6)) * 5
    for dtype in DTYPES + [np.int64]:
        xd = x.astype(dtype)
        for method in ["nearest", "linear"]:
            want = jax.eval_shape(lambda x, m=method: jimage.resize(x, (7, 3), m), xd)
            got = fimage.resize(xd, (7, 3), method)
            assert (got.dtype, got.shape, got.weak_type) == (want.dtype, want.shape, False)
        s, t = np.array([2.0], np.float32), np.array([0.5], np.float32)
        want = jax.eval_shape(
            lambda x: jimage.scale_and_translate(x, (4, 9), (1,), s, t, "cubic"), xd
        )
        got = fimage.scale_and_translate(xd, (4, 9), (1,), s, t, "cubic")
        assert (got.dtype, got.shape) == (want.dtype, want.shape), dtype
    for x64 in [False, True]:
        with x64_off() if not x64 else np.errstate():
            want = jax.eval_shape(lambda x: jimage.resize(x, (), "linear"), 3.0)
            got = fimage.resize(3.0, (), "linear")
            assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type)


def test_nearest_indices_over_many_sizes():
    """Nearest's indices are computed in float32 as JAX computes them: every size pair."""
    sizes = [1, 3, 7, 10, 31, 64]
    pairs = list(itertools.product(sizes, sizes))
    x = np.arange(64, dtype=np.int32)
    want = jax.jit(lambda x: [jimage.resize(x[:m], (n,), "nearest") for m, n in pairs])(x)
    for (m, n), w in zip(pairs, want):
        np.testing.assert_array_equal(fimage.resize(x[:m], (n,), "nearest"), w, f"{m}->{n}")


@pytest.mark.parametrize("x64", [False, True])
def test_scale_and_translate_against_jax(x64):
    cases = [("linear", True), ("cubic", True), ("lanczos5", True), ("area", True),
             ("cubic-pytorch", False), ("lanczos3", False)]  # fmt: skip
    x = RNG.standard_normal((3, 8, 6))

    def run(image, m, s, t):
        return [m.scale_and_translate(x, (3, 7, 6), (-2,), s, t, *c) for c in cases]

    with x64_off() if not x64 else np.errstate():
        jitted = jax.jit(lambda s, t: run(x, jimage, s, t))
        for s, t in [(1.5, 0.3), (0.45, -1.3), (0.9, 2.5)]:
            s, t = np.array([s]), np.array([t])
            for c, got, want in zip(cases, run(x, fimage, s, t), jitted(s, t)):
                _close(got, want, f"{s} {t} {c}")


def test_grads_jit_vmap():
    x = RNG.standard_normal((5, 4))
    for method in ["linear", "area"]:
        check_grads(lambda x, m=method: fimage.resize(x, (3, 7), m), (x,), order=1)
    # in the scale and translation too (points off the kernels' kinks)
    s, t = np.array([1.37, 0.71]), np.array([0.13, -0.29])
    for method in ["linear", "cubic"]:
        check_grads(
            lambda s, t, m=method: fimage.scale_and_translate(x, (6, 3), (0, 1), s, t, m),
            (s, t),
            order=1,
        )
    batch = RNG.standard_normal((2, 5, 4))
    got = functx.vmap(lambda b: fimage.resize(b, (3, 7), "lanczos3"))(batch)
    np.testing.assert_allclose(got, fimage.resize(batch, (2, 3, 7), "lanczos3"), rtol=1e-12)

    def both(x, ts):
        shifted = functx.vmap(
            lambda t: fimage.scale_and_translate(x, (6, 3), (0, 1), s, t, "cubic")
        )
        return fimage.resize(x, (3, 7), "cubic"), shifted(ts)

    ts = np.stack([t, -t])
    resized, shifted = functx.jit(both)(x, ts)
    np.testing.assert_allclose(resized, fimage.resize(x, (3, 7), "cubic"), rtol=1e-12)
    for t, got in zip(ts, shifted):
        want = fimage.scale_and_translate(x, (6, 3), (0, 1), s, t, "cubic")
        np.testing.assert_allclose(got, want, rtol=1e-12)


A = np.ones((2, 3), np.float32)
S, T = np.array([1.5]), np.array([0.0])
BAD = {
    "shape length": (lambda m: m.resize(A, (3,), "linear"), ValueError),
    "unknown method": (lambda m: m.resize(A, (3, 3), "foo"), ValueError),
    "float size": (lambda m: m.resize(A, (3.0, 3), "linear"), TypeError),
    "empty axis": (lambda m: m.resize(np.ones((0, 3)), (3, 3), "linear"), ZeroDivisionError),
    "nearest in scale_and_translate": (
        lambda m: m.scale_and_translate(A, (3, 3), (0,), S, T, "nearest"),
        ValueError,
    ),
    "spatial dim out of range": (
        lambda m: m.scale_and_translate(A, (2, 4), (2,), S, T, "linear"),
        ValueError,
    ),
    "scale_and_translate shape length": (
        lambda m: m.scale_and_translate(A, (2,), (0,), S, T, "linear"),
        ValueError,
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_errors_as_jax(case):
    call, cls = BAD[case]
    raises_as_jax(call, jimage, fimage, cls)


def test_errors_where_functx_differs():
    """Documented decisions: a negative size, a non-spatial axis whose size changes, scale and
    translation of the wrong length, and a method of the wrong type are errors."""
    with pytest.raises(functx.errors.FunctxValueError, match="negative"):
        fimage.resize(A, (-3, 3), "linear")
    with pytest.raises(functx.errors.FunctxValueError, match="not in spatial_dims"):
        fimage.scale_and_translate(A, (3, 4), (1,), S, T, "linear")
    with pytest.raises(functx.errors.FunctxValueError, match="one entry per spatial dim"):
        fimage.scale_and_translate(A, (2, 4), (1,), np.ones(2), T, "linear")
    with pytest.raises(functx.errors.FunctxTypeError, match="ResizeMethod"):
        fimage.resize(A, (3, 3), 1)
    with pytest.raises(functx.errors.FunctxZeroDivisionError):
        fimage.resize(np.ones((0, 3)), (3, 3), "nearest")
    assert jnp.asarray(fimage.resize(A, (0, 3), "cubic")).shape == (0, 3)
