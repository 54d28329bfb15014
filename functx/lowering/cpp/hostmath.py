"""Host math as XLA's CPU backend computes it, where NumPy computes otherwise: ``rsqrt`` (for the
C++ backend's prelude and the eager path) and libm's ``pow`` per element (the eager path).

**rsqrt.** XLA's CPU backend does not round float32 ``rsqrt`` correctly: it emits the
processor's approximate reciprocal square root and refines it by Newton steps
``h = fma(x g, g, -1)``, ``g = fma(-g/2, h, g)``, choosing by the target's features (XLA's
``xla/codegen/intrinsic/rsqrt.cc`` and the device kind its CPU compiler derives, read for
JAX 0.10.2's XLA and checked against ``jax.jit(lax.rsqrt)`` on an AMD EPYC and an Intel Xeon):

* float32, x86 with AVX: the scalar ``rsqrtss`` (12 bits; XLA calls it per element, also in
  loops it vectorises otherwise), then one Newton step on AMD (XLA recognises AMD by SSE4a:
  AMD's ``rsqrtss`` is more accurate) and two on Intel;
* float64, x86 with AVX-512F: ``rsqrt14`` (14 bits) and two Newton steps;
* otherwise (no AVX; float64 without AVX-512F; not x86): ``1 / sqrt(x)``, two roundings.

Inputs below the smallest normal (zero, subnormals, negatives) and +inf keep the approximation
itself (it gives inf, NaN and 0 there); NaN goes through the steps. The sequence is chosen when
the code is compiled, from the compiler's view of the host (``-march=native`` defines
``__AVX__``, ``__SSE4A__`` and ``__AVX512F__`` where XLA's target features have ``+avx``,
``+sse4a`` and ``+avx512f``), so compiled kernels and the eager helper pick the same one; the
program cache is keyed by the CPU's features already.

**pow.** XLA's CPU backend calls libm's ``powf``/``pow`` for every element; NumPy's ``power``
takes other routes (``sqrt``/``square`` for a repeated exponent of 0.5/2, and SIMD kernels of its
own on AVX-512 machines, a last-bit difference in some values), so the eager float32/float64
``pow`` calls libm through the helper.

**libm.** NumPy calls libm's scalar functions for ``cbrt``, ``tan``, the inverse and hyperbolic
functions, ``exp2``/``expm1``/``log1p``, ``arctan2`` and float64 ``exp``/``log``/
``sin``/``cos`` on machines without AVX-512, but SIMD kernels of its own on AVX-512 machines (an
AMD Zen 4: ``cbrt(-27.0f)`` is ``-2.9999998``, float64 ``log`` one ulp off glibc's in 12 of 8001
values). The eager path calls libm for these (``LIBM``), so it computes the same values on every
x86 machine, as the compiled float64 programs (glibc's scalar functions: cpp/prelude.py) do;
compiled float32 programs call libmvec's variants of these but ``tan``, up to 2 ulp from libm's
in 9-38% of the values (eager float32 ``cbrt``, ``tan``, ``atan`` and ``atan2`` agree with JAX's
bit for bit, compiled ``cbrt``, ``atan`` and ``atan2`` do not).

The eager path (``elementwise``'s rows, through ``elementwise.host_math``) calls a small shared
object compiled through ``functx.lowering.cache`` on first use and cached on disk; where no
compiler works it falls back to NumPy, as before.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from functx.primitives import elementwise

# C++ for namespace fx (the prelude's): fx::rsqrt for float and double (their complex
# counterparts are in the prelude's tail: they need its complex sqrt).
CPP = r"""
// XLA's CPU rsqrt (see functx/lowering/cpp/hostmath.py): the processor's approximation and
// Newton steps where XLA uses them, else 1 / sqrt(x)
#if (defined(__x86_64__) || defined(__i386__)) && defined(__AVX__)
#ifdef __SSE4A__
#define FX_RSQRT_STEPS 1
#else
#define FX_RSQRT_STEPS 2
#endif
#else
#define FX_RSQRT_STEPS 0
#endif
#if (defined(__x86_64__) || defined(__i386__)) && defined(__AVX__) && defined(__AVX512F__)
#define FX_RSQRT64_STEPS 2
#else
#define FX_RSQRT64_STEPS 0
#endif
static inline float rsqrt(float x) {
#if FX_RSQRT_STEPS
  typedef float v4sf __attribute__((vector_size(16)));
  v4sf v = {x, 0.0f, 0.0f, 0.0f};
  float g = __builtin_ia32_rsqrtss(v)[0];
  if (x < __FLT_MIN__ || x == __builtin_huge_valf()) return g;
  for (int s = 0; s < FX_RSQRT_STEPS; ++s) {
    float r2 = x * g, half = g * -0.5f;
    g = __builtin_fmaf(half, __builtin_fmaf(r2, g, -1.0f), g);
  }
  return g;
#else
  return 1.0f / __builtin_sqrtf(x);
#endif
}
static inline double rsqrt(double x) {
#if FX_RSQRT64_STEPS
  typedef double v2df __attribute__((vector_size(16)));
  v2df v = {x, 0.0};
  double g = __builtin_ia32_rsqrt14sd(v, v)[0];
  if (x < __DBL_MIN__ || x == __builtin_huge_val()) return g;
  for (int s = 0; s < FX_RSQRT64_STEPS; ++s) {
    double r2 = x * g, half = g * -0.5;
    g = __builtin_fma(half, __builtin_fma(r2, g, -1.0), g);
  }
  return g;
#else
  return 1.0 / __builtin_sqrt(x);
#endif
}
"""

_EAGER_SRC = (
    "#include <stdint.h>\n#include <math.h>\nnamespace fx {"
    + CPP
    + r"""}
extern "C" void fx_rsqrt_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fx::rsqrt(x[i]);
}
extern "C" void fx_rsqrt_f64(const double* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fx::rsqrt(x[i]);
}
extern "C" void fx_pow_f32(const float* x, const float* p, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = powf(x[i], p[i]);
}
extern "C" void fx_pow_f64(const double* x, const double* p, double* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = pow(x[i], p[i]);
}
extern "C" int fx_rsqrt_steps(int f64) { return f64 ? FX_RSQRT64_STEPS : FX_RSQRT_STEPS; }
"""
)

# the functions NumPy computes with SIMD kernels of its own on AVX-512 machines (and with libm
# elsewhere): functx's name -> libm's (float32 calls the "f" variant); "f64" ones only for float64
LIBM = {
    "exp2": "exp2",
    "expm1": "expm1",
    "log1p": "log1p",
    "cbrt": "cbrt",
    "tan": "tan",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "sinh": "sinh",
    "cosh": "cosh",
    "asinh": "asinh",
    "acosh": "acosh",
    "atanh": "atanh",
}
LIBM_F64 = {"exp": "exp", "log": "log", "sin": "sin", "cos": "cos"}


def _libm_loops():
    unary = "".join(
        f'extern "C" void fx_{fx}_{t}(const {ct}* x, {ct}* y, int64_t n) '
        f"{{ for (int64_t i = 0; i < n; ++i) y[i] = ::{c}{sfx}(x[i]); }}\n"
        for table, types in ((LIBM, ("f32", "f64")), (LIBM_F64, ("f64",)))
        for fx, c in table.items()
        for t in types
        for ct, sfx in [("float", "f") if t == "f32" else ("double", "")]
    )
    return unary + "".join(
        f'extern "C" void fx_atan2_{t}(const {ct}* x, const {ct}* p, {ct}* y, int64_t n) '
        f"{{ for (int64_t i = 0; i < n; ++i) y[i] = ::atan2{sfx}(x[i], p[i]); }}\n"
        for t, ct, sfx in (("f32", "float", "f"), ("f64", "double", ""))
    )


_EAGER_SRC += _libm_loops()

_lib: list = []  # the loaded helper, or None where it could not be built
_lock = threading.Lock()


def _helper():
    if not _lib:
        with _lock:
            if not _lib:
                from functx.lowering import cache  # lazy: cache.py costs ~85 ms of import functx

                try:
                    so, _ = cache.compile_cached(_EAGER_SRC, suffix="-hostmath")
                    lib = ctypes.CDLL(so)
                    p, n = ctypes.c_void_p, ctypes.c_int64
                    for name in ("fx_rsqrt_f32", "fx_rsqrt_f64"):
                        getattr(lib, name).argtypes = [p, p, n]
                        getattr(lib, name).restype = None
                    for fx in (*LIBM, *LIBM_F64):
                        for t in ("f32", "f64") if fx in LIBM else ("f64",):
                            getattr(lib, f"fx_{fx}_{t}").argtypes = [p, p, n]
                            getattr(lib, f"fx_{fx}_{t}").restype = None
                    for name in ("fx_pow_f32", "fx_pow_f64", "fx_atan2_f32", "fx_atan2_f64"):
                        getattr(lib, name).argtypes = [p, p, p, n]
                        getattr(lib, name).restype = None
                    lib.fx_rsqrt_steps.argtypes = [ctypes.c_int]
                    lib.fx_rsqrt_steps.restype = ctypes.c_int
                except (OSError, cache.CompileError):
                    lib = None
                _lib.append(lib)
    return _lib[0]


def rsqrt_steps(dtype=np.float32) -> int | None:
    """The Newton steps of this host's ``rsqrt`` for ``dtype`` (float32: 1 on AMD with AVX, 2 on
    other x86 with AVX; float64: 2 with AVX-512F; 0: ``1 / sqrt(x)``), or None where the helper
    could not be compiled."""
    lib = _helper()
    return None if lib is None else int(lib.fx_rsqrt_steps(int(np.dtype(dtype) == np.float64)))


def _c(x, dt):
    return np.require(np.asarray(x, dt), requirements="C")  # (keeps 0-d arrays 0-d)


def rsqrt(x: np.ndarray) -> np.ndarray:
    """XLA's CPU ``rsqrt`` of a float32 or float64 array (see the module docstring)."""
    dt = np.dtype(x.dtype)
    lib = _helper()
    if lib is None:
        return (dt.type(1) / np.sqrt(x)).astype(dt)
    x = _c(x, dt)
    out = np.empty(x.shape, dt)
    fn = lib.fx_rsqrt_f32 if dt == np.float32 else lib.fx_rsqrt_f64
    fn(x.ctypes.data, out.ctypes.data, x.size)
    return out


def pow_(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """libm's ``powf``/``pow`` of each element (float32/float64 arrays of one shape)."""
    dt = np.dtype(x.dtype)
    lib = _helper()
    if lib is None:
        return np.power(x, y)
    x, y = _c(x, dt), _c(y, dt)
    out = np.empty(x.shape, dt)
    fn = lib.fx_pow_f32 if dt == np.float32 else lib.fx_pow_f64
    fn(x.ctypes.data, y.ctypes.data, out.ctypes.data, x.size)
    return out


def libm(name: str, x: np.ndarray, y: np.ndarray | None = None) -> np.ndarray | None:
    """libm's ``name`` (a key of ``LIBM``/``LIBM_F64``, or "atan2" with ``y``) of each element of
    a float32/float64 array (``y``: of the same shape), or None where the helper could not be
    compiled."""
    dt = np.dtype(x.dtype)
    lib = _helper()
    if lib is None:
        return None
    fn = getattr(lib, f"fx_{name}_{'f32' if dt == np.float32 else 'f64'}")
    # (each operand's contiguous copy held until the call returns: ctypes reads its address)
    args = [_c(a, dt) for a in (x, y) if a is not None]
    out = np.empty(args[0].shape, dt)
    fn(*(a.ctypes.data for a in args), out.ctypes.data, out.size)
    return out


elementwise.host_math["libm"] = libm
elementwise.host_math["rsqrt"] = rsqrt
elementwise.host_math["pow"] = pow_
