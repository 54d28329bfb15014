"""XLA's CPU float32 ``rsqrt``, for the C++ backend (its prelude) and the eager path.

XLA's CPU backend does not round float32 ``rsqrt`` correctly: it emits the processor's
approximate reciprocal square root (``rsqrtss``, 12 bits) and refines it by Newton steps
``h = fma(x g, g, -1)``, ``g = fma(-g/2, h, g)``, choosing by the target's features (XLA's
``xla/codegen/intrinsic/rsqrt.cc`` and the device kind its CPU compiler derives, read for
JAX 0.10.2's XLA and checked against ``jax.jit(lax.rsqrt)`` here):

* x86 with AVX, AMD (XLA recognises AMD by SSE4a): one Newton step (AMD's ``rsqrtss`` is more
  accurate than Intel's);
* x86 with AVX, Intel (no SSE4a): two Newton steps;
* without AVX (or not x86): ``1 / sqrt(x)``, two roundings.

Inputs below the smallest normal (zero, subnormals, negatives) and +inf keep the approximation
itself (``rsqrtss`` gives inf, NaN and 0 there); NaN goes through the steps. XLA calls the
scalar ``rsqrtss`` per element, also in loops it vectorises otherwise, and so does this.
float64 ``rsqrt`` is ``1 / sqrt(x)`` everywhere.

The sequence is chosen when the code is compiled, from the compiler's view of the host
(``-march=native`` defines ``__AVX__`` and ``__SSE4A__`` where XLA's target features have
``+avx`` and ``+sse4a``), so compiled kernels and the eager helper below pick the same one; the
program cache is keyed by the CPU's features already. The eager path (``elementwise``'s rsqrt
row for float32, and float16/bfloat16 computed in float32) calls a small shared object compiled
through ``functx.lowering.cache`` on first use and cached on disk; where no compiler works it
falls back to ``1 / sqrt(x)`` (NumPy's), as before.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from functx.primitives import elementwise

# C++ for namespace fx (the prelude's): fx::rsqrt for float, double, and their complex types'
# counterparts are in the prelude's tail (they need its complex sqrt).
CPP = r"""
// XLA's CPU rsqrt (see functx/lowering/cpp/xla_rsqrt.py): float32 by rsqrtss and Newton steps
#if (defined(__x86_64__) || defined(__i386__)) && defined(__AVX__)
#ifdef __SSE4A__
#define FX_RSQRT_STEPS 1
#else
#define FX_RSQRT_STEPS 2
#endif
#else
#define FX_RSQRT_STEPS 0
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
static inline double rsqrt(double x) { return 1.0 / __builtin_sqrt(x); }
"""

_EAGER_SRC = (
    "#include <stdint.h>\nnamespace fx {"
    + CPP
    + r"""}
extern "C" void fx_rsqrt_f32(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fx::rsqrt(x[i]);
}
extern "C" int fx_rsqrt_f32_steps(void) { return FX_RSQRT_STEPS; }
"""
)

_lib: list = []  # the loaded helper, or None where it could not be built
_lock = threading.Lock()


def _helper():
    if not _lib:
        with _lock:
            if not _lib:
                from functx.lowering import cache  # lazy: cache.py costs ~85 ms of import functx

                try:
                    so, _ = cache.compile_cached(_EAGER_SRC, suffix="-rsqrt")
                    lib = ctypes.CDLL(so)
                    lib.fx_rsqrt_f32.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
                    lib.fx_rsqrt_f32.restype = None
                    lib.fx_rsqrt_f32_steps.restype = ctypes.c_int
                except (OSError, cache.CompileError):
                    lib = None
                _lib.append(lib)
    return _lib[0]


def steps() -> int | None:
    """The Newton steps of this host's float32 rsqrt (1: AMD with AVX, 2: other x86 with AVX,
    0: ``1 / sqrt(x)``), or None where the helper could not be compiled."""
    lib = _helper()
    return None if lib is None else int(lib.fx_rsqrt_f32_steps())


def rsqrt_f32(x: np.ndarray) -> np.ndarray:
    """XLA's CPU float32 ``rsqrt`` of a float32 array (see the module docstring)."""
    lib = _helper()
    x = np.asarray(x, np.float32)
    if lib is None:
        return (np.float32(1) / np.sqrt(x)).astype(np.float32)
    x = np.require(x, requirements="C")  # (keeps 0-d arrays 0-d)
    out = np.empty(x.shape, np.float32)
    lib.fx_rsqrt_f32(x.ctypes.data, out.ctypes.data, x.size)
    return out


elementwise.host_math["rsqrt_f32"] = rsqrt_f32
