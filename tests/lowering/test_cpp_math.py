"""The C++ backend's own exp, log and tanh (vectorisable polynomials in cpp/prelude.py) stay
within a few ulp of the float64 result over dense grids, with IEEE special values; the bounds
are at or near what XLA's float32 functions reach on the same grids (tanh: functx 4.7, XLA 4.4
ulp; exp: functx 1.0, XLA 5.2)."""

import numpy as np
import pytest

import functx
import functx.numpy as fnp

RNG = np.random.default_rng(0)


def _grid(lo, hi, n=400_001):
    return np.concatenate(
        [np.linspace(lo, hi, n, dtype=np.float32), RNG.uniform(lo, hi, n // 4).astype(np.float32)]
    )


CASES = {
    "exp": (fnp.exp, np.exp, _grid(-104, 89), 1.5),
    "log": (
        fnp.log,
        np.log,
        np.concatenate([_grid(1e-6, 10), np.geomspace(1e-44, 3e38, 100_000, dtype=np.float32)]),
        1.5,
    ),
    "tanh": (fnp.tanh, np.tanh, _grid(-12, 12), 5.0),
}


def _ulp_errors(got, ref):
    ok = (np.abs(ref) < 3.4e38) & (np.abs(ref) >= np.finfo(np.float32).tiny)
    with np.errstate(over="ignore"):
        spacing = np.spacing(np.abs(ref[ok]).astype(np.float32)).astype(np.float64)
    return np.abs(got[ok].astype(np.float64) - ref[ok]) / spacing


@pytest.mark.parametrize("name", list(CASES))
def test_max_ulp_error(name):
    f, ref_f, xs, bound = CASES[name]
    got = np.asarray(functx.jit(f, backend="cpu")(xs))
    err = _ulp_errors(got, ref_f(xs.astype(np.float64)))
    assert err.max() <= bound, (name, err.max(), xs[np.argmax(err)])
    assert err.mean() < 0.7, (name, err.mean())


def test_special_values():
    xs = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e30, -3e38, 9.0, 8.999, 1e-40], np.float32)
    with np.errstate(all="ignore"):
        for f, ref_f in [(fnp.exp, np.exp), (fnp.log, np.log), (fnp.tanh, np.tanh)]:
            got = np.asarray(functx.jit(f, backend="cpu")(xs))
            ref = ref_f(xs.astype(np.float64)).astype(np.float32)
            exact = ~np.isfinite(ref) | (ref == 0) | (np.abs(ref) == 1)
            np.testing.assert_array_equal(got[exact], ref[exact])
            signed = exact & ~np.isnan(ref)  # a NaN's sign bit carries no meaning
            np.testing.assert_array_equal(np.signbit(got[signed]), np.signbit(ref[signed]))


def test_tanh_stays_in_range():
    xs = _grid(-20, 20)
    got = np.asarray(functx.jit(fnp.tanh, backend="cpu")(xs))
    assert np.abs(got).max() <= 1.0
    np.testing.assert_array_equal(np.sign(got), np.sign(xs))


def test_float64_transcendentals_are_glibcs_scalar_functions():
    # compiled float64 math calls glibc's scalar functions, as XLA's CPU backend does, never
    # libmvec's vector variants (1-10 ulp away): jit equals Python's ``math`` (glibc's libm) bit
    # for bit. NumPy, the eager path, calls glibc too on AVX2 machines, but its own SIMD log,
    # exp, sin, ... on AVX-512 ones (up to 3 ulp away here): eager and jit agree to 4 ulp.
    import math

    x = np.concatenate([np.linspace(-20, 20, 4001), RNG.uniform(-3, 3, 4000)])
    pos = np.abs(x) + 1e-3
    cases = [
        (fnp.log, math.log, pos),
        (fnp.log1p, math.log1p, pos),
        (fnp.exp, math.exp, x),
        (fnp.expm1, math.expm1, x),
        (fnp.sin, math.sin, x),
        (fnp.cos, math.cos, x),
        (fnp.tan, math.tan, x),
        (fnp.arctan, math.atan, x),
        (fnp.sinh, math.sinh, x),
        (fnp.cbrt, math.cbrt, x),
    ]
    f = functx.jit(lambda *a: [fn(v) for (fn, _, _), v in zip(cases, a)])
    for (fn, libm, v), got in zip(cases, f(*[v for _, _, v in cases])):
        want = np.array([libm(e) for e in v.tolist()])
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=fn.__name__)
        np.testing.assert_array_max_ulp(np.asarray(got), np.asarray(fn(v)), maxulp=4)
    g = functx.jit(lambda a, b: (fnp.power(a, b), fnp.arctan2(a, b)))
    p, t = g(pos, x)
    pairs = list(zip(pos.tolist(), x.tolist()))
    np.testing.assert_array_equal(np.asarray(p), np.array([math.pow(a, b) for a, b in pairs]))
    np.testing.assert_array_equal(np.asarray(t), np.array([math.atan2(a, b) for a, b in pairs]))


def test_eager_math_is_libms_on_every_machine():
    # the rows NumPy computes with SIMD kernels of its own on AVX-512 machines (cbrt(-27.0f) is
    # -2.9999998 there) call libm through the host helper: one value per machine, as on AVX2
    import ctypes
    import ctypes.util

    from functx.lowering.cpp import hostmath

    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    x = RNG.uniform(-0.95, 0.95, 64)
    domains = {"acosh": 1.5 + x * x * 40, "log": 1e-3 + x * x * 9, "exp2": x * 60}
    types = ((np.float32, "f", ctypes.c_float), (np.float64, "", ctypes.c_double))
    for name in [*hostmath.LIBM, *hostmath.LIBM_F64, "atan2"]:
        for dt, suffix, ct in types:
            if name in hostmath.LIBM_F64 and dt == np.float32:
                continue
            v = domains.get(name, x * 3).astype(dt)
            f = getattr(libm, name + suffix)
            f.restype, f.argtypes = ct, [ct] * (2 if name == "atan2" else 1)
            args = (v, v[::-1].copy()) if name == "atan2" else (v,)
            want = np.array([f(*e) for e in zip(*(a.tolist() for a in args))], dt)
            with functx.enable_x64(dt == np.float64):
                got = np.asarray(getattr(functx.lax, name)(*args))
            np.testing.assert_array_equal(got, want, err_msg=f"{name} {dt.__name__}")
    assert np.float32(functx.numpy.cbrt(np.float32(-27.0))) == -3.0


def test_eager_atan2_of_broadcast_operands_is_libms():
    # a broadcast operand (vmap with in_axes None, a scalar) is libm's too, not NumPy's own SIMD
    # arctan2; the helper once read a contiguous copy of ``y`` freed before the call (8 wrong
    # values of these 1200)
    import ctypes
    import ctypes.util

    libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
    f = libm.atan2f
    f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float] * 2
    x = RNG.uniform(-3, 3, (4, 300)).astype(np.float32)
    y = RNG.uniform(-3, 3, 300).astype(np.float32)
    want = np.array([[f(a, b) for a, b in zip(row.tolist(), y.tolist())] for row in x], np.float32)
    got = functx.vmap(functx.lax.atan2, in_axes=(0, None))(x, y)
    np.testing.assert_array_equal(np.asarray(got), want)
    want = np.array([[f(a, 0.7) for a in row.tolist()] for row in x], np.float32)
    np.testing.assert_array_equal(np.asarray(fnp.arctan2(x, np.float32(0.7))), want)
    np.testing.assert_array_equal(np.asarray(fnp.arctan2(x, 0.7)), want)


def test_prelude_sorted_unique_is_numpys_unique():
    """The narrow dtypes' tables are read off sorted unique values (``prelude._sorted_unique``,
    in place of ``np.unique``, whose first call imports ``numpy.ma``): the same values and
    signs of zero as ``np.unique``."""
    from functx.lowering.cpp import prelude

    rng = np.random.default_rng(0)
    for dtype in (np.float64, np.float32):
        for _ in range(20):
            a = rng.choice([-2.5, -0.0, 0.0, 1.0, 3.0, 1e-3, 7.5], size=rng.integers(2, 30))
            a = a.astype(dtype)
            got, want = prelude._sorted_unique(a), np.unique(a)
            np.testing.assert_array_equal(got, want)
            assert np.array_equal(np.signbit(got), np.signbit(want)) and got.dtype == want.dtype
