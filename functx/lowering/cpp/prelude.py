"""The C++ prelude every generated translation unit starts with: the C headers, a small ``fx``
namespace, and the helpers the kernels call (max/min with NaN, integer division, exp, log and
tanh that vectorise, the buffer pool). Kept apart from ``program.py`` (which needs SymPy) so that
its precompiled header can be built while SymPy is imported (``cache.PreludeBuild``).

The elementwise rows (``functx.primitives.elementwise``) whose C++ spelling is a libm function
``fx::<name>`` that the list below does not wrap get their ``FX_MATH1``/``FX_MATH2`` line
generated (``_row_math``): a new op with a C equivalent needs no edit here.
"""

import re
from pathlib import Path

import numpy as np

from functx import dtypes
from functx.lowering.cpp.hostmath import CPP as _RSQRT
from functx.primitives.elementwise import ROWS

#: the float32 exp and log (shared with the flash-attention library)
_MATHF = Path(__file__).with_name("fx_mathf.h").read_text()

_PRELUDE_HEAD = r"""
// C headers only: libstdc++'s C++ headers take longer to parse than most programs take to compile.
// _GLIBCXX_INCLUDE_NEXT_C_HEADERS makes libstdc++'s <math.h> and friends hand over to glibc's
// directly. glibc declares its vectorised math (libmvec: expf, sinf, logf, ...) only under
// __FAST_MATH__; defining the macro around <math.h> lets `omp simd` loops call them without
// enabling any fast-math transformation (results stay within a few ulp of the scalar functions).
#define _GLIBCXX_INCLUDE_NEXT_C_HEADERS 1
#define __FAST_MATH__ 1
#include <math.h>
#undef __FAST_MATH__
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#undef _GLIBCXX_INCLUDE_NEXT_C_HEADERS
#include <pthread.h>

// The little of the C++ library the generated code uses, in namespace fx.
namespace fx {
template <class A, class B> constexpr bool is_same = false;
template <class A> constexpr bool is_same<A, A> = true;
template <class T> constexpr bool is_float = is_same<T, float> || is_same<T, double>;
// complex64/complex128: GCC's complex types (C99 _Complex; NumPy's layout, two parts in a row).
// Their arithmetic is C99's (Annex G: an infinite product or quotient is not NaN), as XLA's.
typedef __complex__ float c64;
typedef __complex__ double c128;
template <class T> constexpr bool is_complex = is_same<T, c64> || is_same<T, c128>;
template <class T> constexpr bool is_integral =
    !is_float<T> && !is_same<T, _Float16> && !is_complex<T>;
template <class T> constexpr bool is_signed = !is_integral<T> || (T)-1 < (T)0;
template <class T> struct limits {  // integers and bool
  static constexpr T lowest() { return is_signed<T> ? (T)((T)1 << (sizeof(T) * 8 - 1)) : (T)0; }
  static constexpr T max() { return (T)~lowest(); } };
template <> struct limits<bool> {
  static constexpr bool lowest() { return false; }
  static constexpr bool max() { return true; } };
template <> struct limits<float> {
  static constexpr float lowest() { return -__FLT_MAX__; }
  static constexpr float max() { return __FLT_MAX__; }
  static constexpr float infinity() { return __builtin_huge_valf(); }
  static constexpr float quiet_NaN() { return __builtin_nanf(""); } };
template <> struct limits<double> {
  static constexpr double lowest() { return -__DBL_MAX__; }
  static constexpr double max() { return __DBL_MAX__; }
  static constexpr double infinity() { return __builtin_huge_val(); }
  static constexpr double quiet_NaN() { return __builtin_nan(""); } };
#define FX_MATH1(name) \
  static inline float name(float x) { return ::name##f(x); } \
  static inline double name(double x) { return ::name(x); }
#define FX_MATH2(name) \
  static inline float name(float x, float y) { return ::name##f(x, y); } \
  static inline double name(double x, double y) { return ::name(x, y); }
// The double transcendental functions call glibc's scalar functions, as NumPy and XLA's CPU
// backend do: declared again under another name without libmvec's simd attribute, so that a
// vectorised loop cannot swap in libmvec's variants (1-10 ulp away; random samplers would lose
// JAX's bits). float keeps libmvec, except tanf (Cauchy samples).
#define FX_LIBM1(name) \
  extern "C" double fx_libm_##name(double) __asm__(#name); \
  static inline float name(float x) { return ::name##f(x); } \
  static inline double name(double x) { return fx_libm_##name(x); }
#define FX_LIBM2(name) \
  extern "C" double fx_libm_##name(double, double) __asm__(#name); \
  static inline float name(float x, float y) { return ::name##f(x, y); } \
  static inline double name(double x, double y) { return fx_libm_##name(x, y); }
FX_LIBM1(exp) FX_LIBM1(exp2) FX_LIBM1(expm1) FX_LIBM1(log) FX_LIBM1(log1p) FX_MATH1(sqrt)
FX_LIBM1(cbrt) FX_LIBM1(sin) FX_LIBM1(cos) FX_LIBM1(asin) FX_LIBM1(acos)
FX_LIBM1(atan) FX_LIBM1(sinh) FX_LIBM1(cosh) FX_LIBM1(tanh) FX_LIBM1(asinh) FX_LIBM1(acosh)
FX_LIBM1(atanh) FX_LIBM1(erf) FX_LIBM1(erfc) FX_LIBM1(lgamma) FX_MATH1(floor) FX_MATH1(ceil)
FX_MATH1(fabs) FX_MATH1(nearbyint) FX_MATH1(round)
extern "C" float fx_libm_tanf(float) __asm__("tanf");
extern "C" double fx_libm_tan(double) __asm__("tan");
static inline float tan(float x) { return fx_libm_tanf(x); }
static inline double tan(double x) { return fx_libm_tan(x); }
"""
# (here: the FX_MATH lines of the rows not wrapped above, see _row_math)
_PRELUDE_TAIL = (
    r"""
FX_MATH2(fmod) FX_LIBM2(atan2) FX_MATH2(nextafter) FX_MATH2(copysign)
// pow: glibc's scalar powf/pow for every element, as XLA's CPU calls them (libmvec's powf
// variant, which a vectorised loop would call, rounds about 5% of values otherwise)
extern "C" float fx_libm_powf(float, float) __asm__("powf");
extern "C" double fx_libm_pow(double, double) __asm__("pow");
static inline float pow(float x, float y) { return fx_libm_powf(x, y); }
static inline double pow(double x, double y) { return fx_libm_pow(x, y); }
#undef FX_MATH1
#undef FX_MATH2
#undef FX_LIBM1
#undef FX_LIBM2
// The complex functions (GCC's builtins: inline code or libm's c* functions).
#define FX_CMATH1(name) \
  static inline c64 name(c64 x) { return __builtin_c##name##f(x); } \
  static inline c128 name(c128 x) { return __builtin_c##name(x); }
FX_CMATH1(exp) FX_CMATH1(log) FX_CMATH1(sqrt) FX_CMATH1(sin) FX_CMATH1(cos) FX_CMATH1(tan)
FX_CMATH1(asin) FX_CMATH1(acos) FX_CMATH1(atan) FX_CMATH1(sinh) FX_CMATH1(cosh) FX_CMATH1(tanh)
FX_CMATH1(asinh) FX_CMATH1(acosh) FX_CMATH1(atanh)
#undef FX_CMATH1
static inline c64 rsqrt(c64 x) { return 1.0f / sqrt(x); }
static inline c128 rsqrt(c128 x) { return 1.0 / sqrt(x); }
static inline c64 pow(c64 x, c64 y) { return __builtin_cpowf(x, y); }
static inline c128 pow(c128 x, c128 y) { return __builtin_cpow(x, y); }
static inline c64 exp2(c64 x) { return exp(x * 0.693147180559945309f); }
static inline c128 exp2(c128 x) { return exp(x * 0.693147180559945309); }
static inline c64 expm1(c64 x) { return exp(x) - 1.0f; }
static inline c128 expm1(c128 x) { return exp(x) - 1.0; }
static inline c64 log1p(c64 x) { return log(x + 1.0f); }
static inline c128 log1p(c128 x) { return log(x + 1.0); }
static inline float fabs(c64 x) { return __builtin_cabsf(x); }
static inline double fabs(c128 x) { return __builtin_cabs(x); }
static inline float real(c64 x) { return __real__ x; }
static inline double real(c128 x) { return __real__ x; }
static inline float imag(c64 x) { return __imag__ x; }
static inline double imag(c128 x) { return __imag__ x; }
static inline c64 conj(c64 x) { return ~x; }
static inline c128 conj(c128 x) { return ~x; }
static inline c64 conj(float x) { return (c64)x; }
static inline c128 conj(double x) { return (c128)x; }
static inline c64 complex(float re, float im) { c64 z; __real__ z = re; __imag__ z = im; return z; }
static inline c128 complex(double re, double im) {
  c128 z; __real__ z = re; __imag__ z = im; return z; }
static inline c64 cmul(c64 x, c64 y) {  // (the schoolbook product: elementwise.py's _cpp_mul)
  return complex(real(x) * real(y) - imag(x) * imag(y), real(x) * imag(y) + imag(x) * real(y)); }
static inline c128 cmul(c128 x, c128 y) {
  return complex(real(x) * real(y) - imag(x) * imag(y), real(x) * imag(y) + imag(x) * real(y)); }
static inline float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
static inline double fma(double a, double b, double c) { return __builtin_fma(a, b, c); }
template <class T> static inline void swap(T& a, T& b) { T t = a; a = b; b = t; }
}  // namespace fx

// ILP64 CBLAS: enums are int, sizes are int64_t.
typedef void (*fx_sgemm_t)(int, int, int, int64_t, int64_t, int64_t, float,
                           const float*, int64_t, const float*, int64_t, float, float*, int64_t);
typedef void (*fx_dgemm_t)(int, int, int, int64_t, int64_t, int64_t, double,
                           const double*, int64_t, const double*, int64_t, double, double*,
                           int64_t);

static inline float fx_bf16_to_f32(uint16_t h) {
  uint32_t u = ((uint32_t)h) << 16; float f; memcpy(&f, &u, 4); return f; }
static inline uint16_t fx_f32_to_bf16(float f) {
  uint32_t u; memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u); return (uint16_t)(u >> 16); }

// max/min propagate NaN and order -0.0 below +0.0, like XLA's; selects only, so loops vectorise
// (for two zeros, a + b is +0.0 unless both are -0.0, and -(-a - b) is -0.0 unless both are +0.0).
// Complex operands order lexicographically (real parts, then imaginary), as JAX lowers them:
// a where it orders after (before) b, else b, so a NaN part gives b.
template <class T> static inline T fx_cpick(T a, T b, bool greater) {
  const auto ra = __real__ a, rb = __real__ b, ia = __imag__ a, ib = __imag__ b;
  const bool pick = ra == rb ? (greater ? ia > ib : ia < ib) : (greater ? ra > rb : ra < rb);
  return pick ? a : b; }
template <class T> static inline T fx_max(T a, T b) {
  if constexpr (fx::is_complex<T>) { return fx_cpick(a, b, true); } else {
  T m = a > b ? a : b;
  m = a != a ? a : m;  // (two selects: gcc 12 if-converts a chain of these)
  if constexpr (fx::is_float<T>) { return ((a == 0) & (b == 0)) ? a + b : m; }
  else { return m; } } }
template <class T> static inline T fx_min(T a, T b) {
  if constexpr (fx::is_complex<T>) { return fx_cpick(a, b, false); } else {
  T m = a < b ? a : b;
  m = a != a ? a : m;  // (two selects: gcc 12 if-converts a chain of these)
  if constexpr (fx::is_float<T>) { return ((a == 0) & (b == 0)) ? -(-a - b) : m; }
  else { return m; } } }
// (integer division and remainder: the special divisors as selects, the division itself by 1
// for them, so that a loop of them has no branch)
template <class T> static inline T fx_idiv(T a, T b) {
  const bool z = b == 0, m1 = fx::is_signed<T> && b == (T)-1;
  const T q = (T)(a / ((z || m1) ? (T)1 : b));
  return z ? (fx::is_signed<T> ? (T)-1 : fx::limits<T>::max()) : (m1 ? (T)(0 - a) : q); }
template <class T> static inline T fx_irem(T a, T b) {
  const bool z = b == 0, m1 = fx::is_signed<T> && b == (T)-1;
  const T r = (T)(a % ((z || m1) ? (T)1 : b));
  return z ? a : (m1 ? (T)0 : r); }
template <class T> static inline T fx_ipow_int(T a, T b) {
  if (b < 0) { if (a == 1) return 1; if (a == (T)-1) return (b % 2 == 0) ? 1 : (T)-1; return 0; }
  T r = 1; while (b) { if (b & 1) r *= a; a *= a; b >>= 1; } return r; }
template <class T> static inline T fx_sign(T a) {
  if constexpr (fx::is_complex<T>) {
    const auto m = fx::fabs(a); return m == 0 ? a * 0 : a / m; }
  else if constexpr (fx::is_float<T>) {
    return a != a ? a : (a > 0 ? (T)1 : (a < 0 ? (T)-1 : a)); }
  else if constexpr (fx::is_signed<T>) { return (T)((a > 0) - (a < 0)); }
  else { return (T)(a > 0); } }
"""
    + _MATHF
    + r"""// tanh as a*P(a^2)/Q(a^2), a rational approximation fitted for functx (least squares with
// Lawson weights on [0, 9], then checked in float32 with fused multiply-adds: max 5 ulp, mean 0.8
// ulp; XLA's own float32 tanh is max 4.5 ulp on the same grid). One division, no exp, no branch.
// From a = 9 on the float32 result is exactly 1; NaN propagates through the polynomials.
static inline float fx_tanhf(float x) {
  const float a = fx::fabs(x);
  const float z = a * a;
  float p = -8.4891045e-14f;
  p = fx::fma(p, z, 5.278103e-11f);
  p = fx::fma(p, z, -2.022555e-08f);
  p = fx::fma(p, z, 1.1154389e-05f);
  p = fx::fma(p, z, 0.003103964f);
  p = fx::fma(p, z, 0.13084017f);
  p = fx::fma(p, z, 1.0f);
  float q = 0.00025461565f;
  q = fx::fma(q, z, 0.024495209f);
  q = fx::fma(q, z, 0.46417344f);
  q = fx::fma(q, z, 1.0f);
  const float r = (a * p) / q;
  return fx::copysign(a >= 9.0f || r > 1.0f ? 1.0f : r, x);
}
template <class T> static inline T fx_exp(T x) {
  if constexpr (fx::is_same<T, float>) { return fx_expf(x); } else { return fx::exp(x); } }
template <class T> static inline T fx_log(T x) {
  if constexpr (fx::is_same<T, float>) { return fx_logf(x); } else { return fx::log(x); } }
template <class T> static inline T fx_tanh(T x) {
  if constexpr (fx::is_same<T, float>) { return fx_tanhf(x); }
  else { return fx::tanh(x); } }
template <class T> static inline T fx_logistic(T x) {
  if constexpr (fx::is_complex<T>) { return (T)1 / ((T)1 + fx::exp(-x)); }
  else {
    T e = fx_exp<T>(-fx::fabs(x)); return x >= 0 ? (T)1 / ((T)1 + e) : e / ((T)1 + e); } }
template <class To, class From> static inline To fx_convert(From x) {
  if constexpr (fx::is_same<To, bool>) { return x != (From)0; }
  else if constexpr (fx::is_complex<From> && !fx::is_complex<To>) {  // the real part, as XLA
    return fx_convert<To, decltype(fx::real(x))>(fx::real(x)); }
  else if constexpr (fx::is_float<From> && fx::is_integral<To>) {
    // NaN gives 0, out-of-range values saturate: selects (a loop of them vectorises), the
    // conversion itself of an in-range value only
    const From lo = (From)fx::limits<To>::lowest(), hi = (From)fx::limits<To>::max();
    From c = x <= lo ? (From)0 : x;
    c = x >= hi ? (From)0 : c;
    c = x != x ? (From)0 : c;
    To t = (To)c;
    t = x <= lo ? fx::limits<To>::lowest() : t;
    return x >= hi ? fx::limits<To>::max() : t; }
  else { return (To)x; } }
// memcpy, on every thread for copies of 4 MiB and more (a program output that is one of its
// inputs, loop carries): one core alone reaches about half the memory bandwidth
static void fx_copy(void* dst, const void* src, size_t n) {
  if (n < ((size_t)1 << 22)) { memcpy(dst, src, n); return; }
  const size_t chunk = (size_t)1 << 18;
  const int64_t m = (int64_t)((n + chunk - 1) / chunk);
  #pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < m; ++i) {
    const size_t lo = (size_t)i * chunk;
    memcpy((char*)dst + lo, (const char*)src + lo, lo + chunk <= n ? chunk : n - lo);
  }
}
// Non-temporal stores of n bytes from a staging buffer (64-byte aligned) to dst: what a scan
// kernel writes of a large output, one row of lanes at a time. Lines written this way skip the
// read for ownership and do not evict what the scan reads (on the 2026-11-25 machine the
// linear-recurrence gradient took 17% less time). Whole 64-byte lines go through the widest
// streaming store the target has; a misaligned destination, and a tail, are copied.
static inline void fx_stream(void* dst, const void* src, size_t n) {
  size_t done = 0;
#if defined(__SSE2__)
  if (((uintptr_t)dst & 63) == 0) {
    for (; done + 64 <= n; done += 64) {
      char* d = (char*)dst + done;
      const char* q = (const char*)src + done;
#if defined(__AVX512F__)
      typedef long long V __attribute__((vector_size(64)));
      __builtin_ia32_movntdq512((V*)d, *(const V*)q);
#elif defined(__AVX__)
      typedef long long V __attribute__((vector_size(32)));
      __builtin_ia32_movntdq256((V*)d, *(const V*)q);
      __builtin_ia32_movntdq256((V*)(d + 32), *(const V*)(q + 32));
#else
      typedef long long V __attribute__((vector_size(16)));
      for (int h = 0; h < 64; h += 16) __builtin_ia32_movntdq((V*)(d + h), *(const V*)(q + h));
#endif
    }
  }
#endif
  if (done < n) memcpy((char*)dst + done, (const char*)src + done, n - done);
}
// After a task's streaming stores: they are weakly ordered, so fence them before the threads meet.
static inline void fx_stream_fence(void) {
#if defined(__SSE2__)
  __builtin_ia32_sfence();
#endif
}
// Matrix products of up to 2^24 multiply-adds (larger ones call BLAS). C is cut into tiles of
// MR rows by NV vectors; a tile's accumulators stay in registers while t runs over a block of KC
// columns of A, which meets a copy of B's block packed into NV-vector rows (zero past n). Each
// element still sums its products in order of t, so results do not depend on the blocking.
template <class T> struct fx_vec {
  typedef T v __attribute__((vector_size(64)));
  typedef T u __attribute__((vector_size(64), aligned(sizeof(T)), may_alias));
};
// (not inlined: it keeps the -O3 of the program, while fx_gemm below, packing and threads, is
// compiled at -O2: half of the compile time of a program's products, about 10% of their speed)
// Element j of C's row r is c[r][j * c_j] (c_j > 1: C stored transposed, see fx_gemm).
template <class T, int MR, int NV>
__attribute__((noinline)) static void fx_gemm_tile(int64_t kc, const T* const* a, int64_t a_t,
                                                   const T* bp, T* const* c, int64_t c_j,
                                                   int64_t w, bool add) {
  typedef typename fx_vec<T>::v V;
  typedef typename fx_vec<T>::u U;
  const int L = 64 / sizeof(T);
  T buf[MR * NV * L] __attribute__((aligned(64)));
  V acc[MR * NV];
  const bool whole = w == NV * L && c_j == 1;
  if (!add) {
#pragma GCC unroll 64
    for (int r = 0; r < MR * NV; ++r) acc[r] = V{};
  } else if (whole) {
#pragma GCC unroll 64
    for (int r = 0; r < MR * NV; ++r) acc[r] = *(const U*)(c[r / NV] + r % NV * L);
  } else {
    for (int r = 0; r < MR; ++r)
      for (int64_t j = 0; j < NV * L; ++j) buf[r * NV * L + j] = j < w ? c[r][j * c_j] : (T)0;
#pragma GCC unroll 64
    for (int r = 0; r < MR * NV; ++r) acc[r] = *(const V*)(buf + r * L);
  }
  for (int64_t t = 0; t < kc; ++t) {
    V b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) b[v] = *(const V*)(bp + (t * NV + v) * L);
#pragma GCC unroll 64
    for (int r = 0; r < MR; ++r) {
      const T x = a[r][t * a_t];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r * NV + v] += x * b[v];
    }
  }
  if (whole) {
#pragma GCC unroll 64
    for (int r = 0; r < MR * NV; ++r) *(U*)(c[r / NV] + r % NV * L) = acc[r];
  } else {
#pragma GCC unroll 64
    for (int r = 0; r < MR * NV; ++r) *(V*)(buf + r * L) = acc[r];
    for (int r = 0; r < MR; ++r)
      for (int64_t j = 0; j < w; ++j) c[r][j * c_j] = buf[r * NV * L + j];
  }
}
#pragma GCC push_options
#pragma GCC optimize("O2")  // see fx_gemm_tile
// C[b] (m x n) = A[b] @ B[b]: A(i, t) at A[b*m*k + i*a_i + t*a_t], B(t, j) at
// B[b*k*n + t*b_t + j*b_j], C(i, j) at C[b*m*n + i*c_i + j*c_j] (c_j is 1, or C is stored
// transposed with c_j < 64 / sizeof(T): a product with few columns computes C^T = B^T A^T, whose
// rows fill the vectors). Tasks are (batch, column panel, row chunk); each packs its panel.
// The caller (cpp.py, _dot) ensures bsz, m, k and n are positive.
// Rows past m in the last tile repeat row m-1 and are not stored. One tile shape per machine,
// so that a program instantiates fx_gemm once per element type (each costs gcc about 0.1 s):
// 12 rows by 2 vectors with AVX-512's 32 registers, 4 rows by 1 vector (two AVX registers each)
// without.
#ifdef __AVX512F__
enum { FX_GEMM_MR = 12, FX_GEMM_NV = 2 };
#else
enum { FX_GEMM_MR = 4, FX_GEMM_NV = 1 };
#endif
template <class T>
static void fx_gemm(int64_t bsz, int64_t m, int64_t k, int64_t n, const T* A, int64_t a_i,
                    int64_t a_t, const T* B, int64_t b_t, int64_t b_j, T* C, int64_t c_i,
                    int64_t c_j, bool par) {
  const int MR = FX_GEMM_MR, NV = FX_GEMM_NV, L = 64 / sizeof(T), NR = NV * L, KC = 256;
  const int64_t panels = (n + NR - 1) / NR, tiles = (m + MR - 1) / MR;
  // about 8 tasks in all (rows split further when there are few panels), at most one per tile
  const int64_t want = (8 + bsz * panels - 1) / (bsz * panels);
  const int64_t chunks = want < 1 ? 1 : (want < tiles ? want : tiles);
  const int64_t per = (tiles + chunks - 1) / chunks;
  #pragma omp parallel for collapse(3) schedule(static) if(par)
  for (int64_t b = 0; b < bsz; ++b)
  for (int64_t p = 0; p < panels; ++p)
  for (int64_t q = 0; q < chunks; ++q) {
    T bp[KC * NR] __attribute__((aligned(64)));
    T junk[NR * L] __attribute__((aligned(64)));  // (c_j < L)
    const int64_t j0 = p * NR, w = n - j0 < NR ? n - j0 : NR;
    const T* Ab = A + b * m * k;
    const T* Bb = B + b * k * n;
    T* Cb = C + b * m * n;
    for (int64_t t0 = 0; t0 < k; t0 += KC) {
      const int64_t kc = k - t0 < KC ? k - t0 : KC;
      for (int64_t t = 0; t < kc; ++t) {
        for (int64_t j = 0; j < w; ++j) bp[t * NR + j] = Bb[(t0 + t) * b_t + (j0 + j) * b_j];
        for (int64_t j = w; j < NR; ++j) bp[t * NR + j] = (T)0;
      }
      for (int64_t tile = q * per; tile < tiles && tile < (q + 1) * per; ++tile) {
        const T* ar[MR];
        T* cr[MR];
        for (int r = 0; r < MR; ++r) {
          const int64_t i = tile * MR + r < m ? tile * MR + r : m - 1;
          ar[r] = Ab + i * a_i + t0 * a_t;
          cr[r] = Cb + i * c_i + j0 * c_j;
        }
        for (int r = 0; r < MR; ++r)  // the repeated rows compute into a scratch row
          if (tile * MR + r >= m) cr[r] = junk;
        fx_gemm_tile<T, MR, NV>(kc, ar, a_t, bp, cr, c_j, w, t0 > 0);
      }
    }
  }
}
#pragma GCC pop_options
static inline int64_t fx_imin(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t fx_imax(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t fx_clamp(int64_t v, int64_t lo, int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v); }
// Temporaries are kept for the next use instead of going back to malloc. Loop bodies
// (scan/fori_loop/while_loop steps called thousands of times a call) allocate the same few
// small temporaries every iteration, and malloc/free of them, with glibc's consolidation of
// freed chunks, cost more than a small body's arithmetic; medium and large blocks come back
// from glibc as fresh pages, each a page fault and a zeroing.
// * Blocks under 64 KiB: a cache per thread (no lock) of up to 32 blocks, 512 KiB in all,
//   matched by exact size, most recently freed first; a thread's blocks are freed when it ends.
// * Blocks of 64 KiB and more: one pool per program (a lock) of up to 64 blocks and 1 GiB.
#define FX_TC_MAX 32
#define FX_TC_SMALL ((size_t)1 << 16)
static __thread void* fx_tc_ptr[FX_TC_MAX];
static __thread size_t fx_tc_len[FX_TC_MAX];
static __thread int fx_tc_n = 0;
static __thread size_t fx_tc_bytes = 0;
static __thread int fx_tc_keyed = 0;
static pthread_key_t fx_tc_key;
static pthread_once_t fx_tc_once = PTHREAD_ONCE_INIT;
static void fx_tc_release(void*) {
  for (int i = 0; i < fx_tc_n; ++i) free(fx_tc_ptr[i]);
  fx_tc_n = 0;
  fx_tc_bytes = 0;
}
static void fx_tc_init(void) { pthread_key_create(&fx_tc_key, fx_tc_release); }
static pthread_mutex_t fx_pool_mu = PTHREAD_MUTEX_INITIALIZER;
static void* fx_pool_ptr[64];
static size_t fx_pool_len[64];
static int fx_pool_n = 0;
static size_t fx_pool_bytes = 0;
static void* fx_alloc(size_t n) {
  if (n < FX_TC_SMALL) {
    for (int i = fx_tc_n - 1; i >= 0; --i) {
      if (fx_tc_len[i] == n) {
        void* p = fx_tc_ptr[i];
        fx_tc_bytes -= n;
        --fx_tc_n;
        fx_tc_ptr[i] = fx_tc_ptr[fx_tc_n];
        fx_tc_len[i] = fx_tc_len[fx_tc_n];
        return p;
      }
    }
  } else {
    pthread_mutex_lock(&fx_pool_mu);
    for (int i = fx_pool_n - 1; i >= 0; --i) {
      if (fx_pool_len[i] == n) {
        void* p = fx_pool_ptr[i];
        fx_pool_bytes -= n;
        --fx_pool_n;
        fx_pool_ptr[i] = fx_pool_ptr[fx_pool_n];
        fx_pool_len[i] = fx_pool_len[fx_pool_n];
        pthread_mutex_unlock(&fx_pool_mu);
        return p;
      }
    }
    pthread_mutex_unlock(&fx_pool_mu);
  }
  void* p = nullptr;
  if (posix_memalign(&p, 64, n ? n : 64)) return nullptr;
  return p;
}
static void fx_free(void* p, size_t n) {
  if (p == nullptr) return;
  if (n < FX_TC_SMALL) {
    if (fx_tc_n < FX_TC_MAX && fx_tc_bytes + n <= ((size_t)1 << 19)) {
      if (!fx_tc_keyed) {  // a thread's first cached block: free the cache when it ends
        pthread_once(&fx_tc_once, fx_tc_init);
        pthread_setspecific(fx_tc_key, (void*)1);
        fx_tc_keyed = 1;
      }
      fx_tc_ptr[fx_tc_n] = p;
      fx_tc_len[fx_tc_n] = n;
      fx_tc_bytes += n;
      ++fx_tc_n;
      return;
    }
  } else {
    pthread_mutex_lock(&fx_pool_mu);
    if (fx_pool_n < 64 && fx_pool_bytes + n <= ((size_t)1 << 30)) {
      fx_pool_ptr[fx_pool_n] = p;
      fx_pool_len[fx_pool_n] = n;
      fx_pool_bytes += n;
      ++fx_pool_n;
      pthread_mutex_unlock(&fx_pool_mu);
      return;
    }
    pthread_mutex_unlock(&fx_pool_mu);
  }
  free(p);
}
// Products with fewer columns than a vector holds (1 <= N < 64 / sizeof(T)) and rows of A
// contiguous: each element is the dot product of a row of A with a column of B. B^T is packed (N
// rows of k, zero past k to whole vectors); a row of A meets its N columns in N vector
// accumulators, added across lanes at the end. So a sum runs as L interleaved partial sums (t
// mod L; the terms past the last whole vector added after them) rather than in order of t. N
// is a template parameter so that the accumulators stay in registers (a program instantiates
// it for the widths it uses). One thread: these products
// are small (up to 2^24 multiply-adds, 0.4 ms) and an OpenMP region would add a fifth to the
// compile time this kernel costs a program (about 0.04 s with one, 0.02 s without).
template <class T> static inline T fx_hsum(typename fx_vec<T>::v v) {
  if constexpr (sizeof(T) == 4) {
    typedef int32_t I __attribute__((vector_size(64)));
    v += __builtin_shuffle(v, (I){8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7});
    v += __builtin_shuffle(v, (I){4, 5, 6, 7, 0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15});
    v += __builtin_shuffle(v, (I){2, 3, 0, 1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
    v += __builtin_shuffle(v, (I){1, 0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  } else {
    typedef int64_t I __attribute__((vector_size(64)));
    v += __builtin_shuffle(v, (I){4, 5, 6, 7, 0, 1, 2, 3});
    v += __builtin_shuffle(v, (I){2, 3, 0, 1, 4, 5, 6, 7});
    v += __builtin_shuffle(v, (I){1, 0, 2, 3, 4, 5, 6, 7});
  }
  return v[0];
}
template <class T, int N>
__attribute__((noinline)) static void fx_gemm_narrow_rows(int64_t rows, int64_t k, int64_t kp,
                                                          const T* a, int64_t a_i, const T* bt,
                                                          T* c, int64_t c_i) {
  typedef typename fx_vec<T>::v V;
  typedef typename fx_vec<T>::u U;
  const int L = 64 / sizeof(T);
  const int64_t kv = k / L * L;
  for (int64_t i = 0; i < rows; ++i) {
    const T* ar = a + i * a_i;
    V acc[N];
#pragma GCC unroll 16
    for (int j = 0; j < N; ++j) acc[j] = V{};
    for (int64_t t = 0; t < kv; t += L) {
      const V x = *(const U*)(ar + t);
#pragma GCC unroll 16
      for (int j = 0; j < N; ++j) acc[j] += x * *(const V*)(bt + j * kp + t);
    }
    // the row's last partial vector one element at a time (a vector load of a copy written by
    // scalar stores misses store forwarding: it doubled the time of a 100x100 matrix-vector
    // product)
#pragma GCC unroll 16
    for (int j = 0; j < N; ++j) {
      T s = fx_hsum<T>(acc[j]);
      for (int64_t t = kv; t < k; ++t) s += ar[t] * bt[j * kp + t];
      c[i * c_i + j] = s;
    }
  }
}
#pragma GCC push_options
#pragma GCC optimize("O2")  // see fx_gemm_tile
// C[b] (m x N) = A[b] @ B[b], A(i, t) at A[b*m*k + i*a_i + t], B(t, j) at B[b*k*N + t*b_t +
// j*b_j], C(i, j) at C[b*m*N + i*c_i + j]. Returns 1 if the packed B^T cannot be allocated.
template <class T, int N>
static int fx_gemm_narrow(int64_t bsz, int64_t m, int64_t k, const T* A, int64_t a_i,
                          const T* B, int64_t b_t, int64_t b_j, T* C, int64_t c_i) {
  const int L = 64 / sizeof(T);
  const int64_t kp = (k + L - 1) / L * L;
  T* bt = (T*)fx_alloc((size_t)(bsz * N * kp) * sizeof(T));
  if (!bt) return 1;
  for (int64_t b = 0; b < bsz; ++b)
    for (int j = 0; j < N; ++j)
      for (int64_t t = 0; t < kp; ++t)
        bt[(b * N + j) * kp + t] = t < k ? B[b * k * N + t * b_t + j * b_j] : (T)0;
  for (int64_t b = 0; b < bsz; ++b)
    fx_gemm_narrow_rows<T, N>(m, k, kp, A + b * m * k, a_i, bt + b * N * kp, C + b * m * N, c_i);
  fx_free(bt, (size_t)(bsz * N * kp) * sizeof(T));
  return 0;
}
#pragma GCC pop_options
// A float product C = alpha op(A) op(B) (+ U) over bsz row-major matrices (cpp/dot.py's
// _blas_call), op transposing when ta/tb; u: C's initial value (BLAS's beta = 1), or null.
// Each matrix is cut into `pieces` pieces along C's longer side (rows when m >= n, else columns).
template <class T> struct fx_gemm_job {
  const T* a; const T* b; T* c; const T* u;
  T alpha; int64_t bsz, m, n, k; int ta, tb; int64_t pieces;
};
// NumPy's OpenBLAS's thread count (openblas_set/get_num_threads), null where it cannot be set.
typedef void (*fx_blas_nt_set_t)(int);
typedef int (*fx_blas_nt_get_t)(void);
struct fx_blas_threads { fx_blas_nt_set_t set; fx_blas_nt_get_t get; };
// One block of C = alpha op(A) op(B) (+ U), through a CBLAS routine: U's block copied into C's,
// then beta = 1. (A routine of another type G gets its own overload, found by argument-dependent
// lookup where fx_gemm_run is instantiated: e.g. one that reads U itself.)
template <class T, class G>
static inline void fx_gemm_call(G gemm, int ta, int tb, int64_t m, int64_t n, int64_t k,
                                T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T* c,
                                int64_t ldc, const T* u) {
  if (u)
    for (int64_t i = 0; i < m; ++i) memcpy(c + i * ldc, u + i * ldc, (size_t)n * sizeof(T));
  gemm(101, ta ? 112 : 111, tb ? 112 : 111, m, n, k, alpha, a, lda, b, ldb, (T)(u != nullptr), c,
       ldc);
}
// Piece q (matrix q / pieces) of job j.
template <class T, class G>
static void fx_gemm_piece(G gemm, const fx_gemm_job<T>& j, int64_t q) {
  const int64_t b = q / j.pieces, p = q % j.pieces;
  const bool rows = j.m >= j.n;
  const int64_t span = rows ? j.m : j.n;
  const int64_t p0 = p * span / j.pieces, p1 = (p + 1) * span / j.pieces;
  const T* a = j.a + b * j.m * j.k;
  const T* bm = j.b + b * j.k * j.n;
  T* c = j.c + b * j.m * j.n;
  int64_t m = j.m, n = j.n;
  if (rows) { a += j.ta ? p0 : p0 * j.k; c += p0 * j.n; m = p1 - p0; }
  else { bm += j.tb ? p0 * j.k : p0; c += p0; n = p1 - p0; }
  fx_gemm_call(gemm, j.ta, j.tb, m, n, j.k, j.alpha, a, j.ta ? j.m : j.k, bm, j.tb ? j.k : j.n, c,
               j.n, j.u ? j.u + (c - j.c) : (const T*)nullptr);
}
// Without a BLAS (gemm null): loops, each sum in order along k. Cold and at -O1, since it rarely
// runs (vectorised, these loops cost the compiler more than the rest of fx_gemm_run; at -O3 with
// cold, 13 ms of the 63 that the GPT block's main unit spent on its first product, session 38).
template <class T>
__attribute__((cold, optimize("O1"))) static void fx_gemm_loops(const fx_gemm_job<T>* jobs,
                                                                 int njobs) {
  for (int i = 0; i < njobs; ++i) {
    const fx_gemm_job<T> j = jobs[i];
    #pragma omp parallel for collapse(2)
    for (int64_t q = 0; q < j.bsz; ++q)
      for (int64_t r = 0; r < j.m; ++r)
        for (int64_t c = 0; c < j.n; ++c) {
          T s = 0;
          for (int64_t t = 0; t < j.k; ++t)
            s += j.a[q * j.m * j.k + (j.ta ? t * j.m + r : r * j.k + t)] *
                 j.b[q * j.k * j.n + (j.tb ? c * j.k + t : t * j.n + c)];
          const int64_t at = q * j.m * j.n + r * j.n + c;
          j.c[at] = j.u ? j.u[at] + j.alpha * s : s;
        }
  }
}
// Runs the jobs' pieces on the program's OpenMP threads (schedule(dynamic): a descheduled
// thread holds up one piece) with OpenBLAS on one thread, its count restored after; where the
// count cannot be set, one after the other on OpenBLAS's threads. One copy per element type
// serves every product of a unit (inline, the GPT block step's 16 products cost 0.35 s of gcc
// CPU, half of its main unit).
template <class T, class G>
static void fx_gemm_run(G gemm, fx_blas_threads nt, const fx_gemm_job<T>* jobs, int njobs) {
  if (!gemm) return fx_gemm_loops(jobs, njobs);
  int64_t total = 0;
  for (int i = 0; i < njobs; ++i) total += jobs[i].bsz * jobs[i].pieces;
  const bool cut = nt.set && nt.get;
  const int prev = cut ? nt.get() : 1;
  if (prev != 1) nt.set(1);
  #pragma omp parallel for schedule(dynamic) if(cut && total >= 2)
  for (int64_t qq = 0; qq < total; ++qq) {
    int i = 0;
    int64_t q = qq;
    for (; q >= jobs[i].bsz * jobs[i].pieces; ++i) q -= jobs[i].bsz * jobs[i].pieces;
    fx_gemm_piece(gemm, jobs[i], q);
  }
  if (prev != 1) nt.set(prev);
}
"""
)

# The special functions of functx.lax (erf_inv, digamma, the incomplete gamma family, polygamma,
# zeta, the scaled Bessel functions): the algorithms of functx/primitives/special.py, computed in
# double (a float result is rounded once), so compiled and eager results agree to a few ulp.
_SPECIAL = r"""
namespace fx_sp {
static const double eps = 2.220446049250313e-16;
static const double inf = __builtin_huge_val(), nan = __builtin_nan("");
static inline bool isint(double x) { return x == ::floor(x); }
static double digamma(double x) {
  if (x != x || x == -inf) return nan;
  if (x == inf) return inf;
  if (x <= 0 && isint(x)) return nan;
  double r = 0;
  if (x < 0) { r = -M_PI / ::tan(M_PI * (x - ::round(x))); x = 1 - x; }
  while (x < 10) { r -= 1 / x; x += 1; }
  double z = 1 / (x * x);
  double tail = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132
                - z * (691.0 / 32760 - z / 12))))));
  return r + ::log(x) - 0.5 / x - tail; }
static const double zeta_a[12] = {12.0, -720.0, 30240.0, -1209600.0, 47900160.0,
  -1892437580.3183791606, 74724249600.0, -2950130727918.164224, 116467828143500.67249,
  -4597978722407472.6105, 181521054019435467.73, -7166165256175667011.3};
static double zeta(double x, double q) {
  if (x == 1) return inf;
  if (x != x || q != q || x == inf || q == inf) return nan;
  if (q <= 0 && (q == -inf || isint(q)))
    return (x >= 0 && isint(x) && ::fmod(x, 2.0) == 0) ? inf : nan;
  if (x < 1 || (q < 0 && !isint(x))) return nan;
  if (q > 1e8) return (1 / (x - 1) + 1 / (2 * q)) * ::pow(q, 1 - x);
  double s = ::pow(q, -x), a = q, b = 0; int i = 0;
  while (i < 9 || a <= 9) {
    ++i; a += 1; b = ::pow(a, -x); s += b;
    if (::fabs(b / s) < eps) return s; }
  double w = a; s += b * w / (x - 1) - 0.5 * b; a = 1; double k = 0;
  for (i = 0; i < 12; ++i) {
    a *= x + k; b /= w; double t = a * b / zeta_a[i]; s += t;
    if (::fabs(t / s) < eps) break;
    k += 1; a *= x + k; b /= w; k += 1; }
  return s; }
static double polygamma(double m, double x) {
  if (m != m || x != x || !(m >= 0 && m < inf) || !isint(m)) return nan;
  if (m == 0) return digamma(x);
  return (::fmod(m, 2.0) == 1 ? 1.0 : -1.0) * ::exp(::lgamma(m + 1)) * zeta(m + 1, x); }
static void series(double a, double x, double* ans_, double* dans_) {
  double r = a, c = 1, ans = 1, dc = 0, dans = 0;
  for (int n = 0; n < 2000; ++n) {
    r += 1; dc = dc * x / r - c * x / (r * r); c *= x / r; ans += c; dans += dc;
    if (c <= ans * eps && ::fabs(dc) <= ::fabs(dans) * eps) break; }
  *ans_ = ans; *dans_ = dans; }
static void cfrac(double a, double x, double* ans_, double* dans_) {
  double y = 1 - a, z = x + 2 - a, c = 0;
  double pkm2 = 1, qkm2 = x, pkm1 = x + 1, qkm1 = z * x;
  double dpkm2 = 0, dqkm2 = 0, dpkm1 = 0, dqkm1 = -x;
  double ans = pkm1 / qkm1, dans = (dpkm1 - ans * dqkm1) / qkm1;
  for (int n = 0; n < 2000; ++n) {
    c += 1; y += 1; z += 2;
    double yc = y * c, pk = pkm1 * z - pkm2 * yc, qk = qkm1 * z - qkm2 * yc;
    double dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c;
    double dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c;
    bool done = false;
    if (qk != 0) {
      double r = pk / qk, dr = (dpk - r * dqk) / qk;
      double t = r != 0 ? ::fabs((ans - r) / r) : 0, dt = dr != 0 ? ::fabs((dans - dr) / dr) : 0;
      ans = r; dans = dr; done = t <= eps && dt <= eps; }
    pkm2 = pkm1; pkm1 = pk; qkm2 = qkm1; qkm1 = qk;
    dpkm2 = dpkm1; dpkm1 = dpk; dqkm2 = dqkm1; dqkm1 = dqk;
    if (::fabs(pk) > 4503599627370496.0) {
      const double s = 1 / 4503599627370496.0;
      pkm2 *= s; pkm1 *= s; qkm2 *= s; qkm1 *= s; dpkm2 *= s; dpkm1 *= s; dqkm2 *= s; dqkm1 *= s; }
    if (done) break; }
  *ans_ = ans; *dans_ = dans; }
// kind: 0 igamma, 1 igammac, 2 igamma_grad_a, 3 random_gamma_grad (JAX's domain rules)
static double igamma(double a, double x, int kind) {
  if (a != a || x != x || x < 0 || a < 0) return nan;
  bool cf;
  if (kind >= 2) {
    if (a == 0 || x == inf) return nan;
    if (x == 0) return 0;
    cf = x > 1 && x > a;
  } else if (x == 0) { return a == 0 ? nan : (double)kind;
  } else if (x == inf) { return 1.0 - kind;
  } else if (kind == 0) { cf = x >= 1 && x > a;
  } else { if (a == 0) return 0; cf = !(x < 1 || x < a); }
  double lx = ::log(x), ax = a * lx - x - (a != 0 ? ::lgamma(a) : inf), ans, dans;
  if (kind == 3) {
    if (cf) { cfrac(a, x, &ans, &dans); return x * (dans + ans * (lx - digamma(a))); }
    series(a, x, &ans, &dans); return -x / a * (dans + ans * (lx - digamma(a + 1))); }
  double e = ax < -709.782712893384 ? 0.0 : ::exp(ax);
  if (cf) {
    cfrac(a, x, &ans, &dans);
    if (kind == 2) return -e * (dans + ans * (lx - digamma(a)));
    double q = ans * e; return kind == 0 ? 1 - q : q; }
  if (a == 0) return nan;
  series(a, x, &ans, &dans);
  if (kind == 2) return e / a * (dans + ans * (lx - digamma(a + 1)));
  double p = ans * e / a; return kind == 0 ? p : 1 - p; }
static double bessel_ie(int nu, double x) {
  double ax = ::fabs(x), out;
  if (x != x) return nan;
  if (ax == inf) return 0;
  if (ax <= 20) {
    double q = x * x / 4, t = 1, s = 1;
    for (int k = 1;; ++k) { t *= q / (k * (k + nu)); s += t; if (t <= s * eps * 0.5) break; }
    out = s * ::exp(-ax) * (nu ? ax / 2 : 1.0);
  } else {
    double mu = 4.0 * nu * nu, s = 1, t = 1;
    for (int k = 1; k < 60; ++k) {
      double nt = t * ((2.0 * k - 1) * (2.0 * k - 1) - mu) / (8.0 * k * ax);
      if (::fabs(nt) >= ::fabs(t)) break;
      t = nt; s += t;
      if (::fabs(t) <= ::fabs(s) * eps * 0.5) break; }
    out = s / ::sqrt(2 * M_PI * ax); }
  return nu && x < 0 ? -out : out; }
static double erf_inv(double x) {
  if (x != x || ::fabs(x) > 1) return nan;
  if (::fabs(x) == 1) return ::copysign(inf, x);
  if (x == 0) return x;
  double w = -::log((1 - x) * (1 + x)), p;
  if (w < 5) {
    w -= 2.5; p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w; p = -3.5233877e-06 + p * w; p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w; p = -0.00125372503 + p * w; p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w; p = 1.50140941 + p * w;
  } else {
    w = ::sqrt(w) - 3; p = -0.000200214257;
    p = 0.000100950558 + p * w; p = 0.00134934322 + p * w; p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w; p = -0.0076224613 + p * w; p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w; p = 2.83297682 + p * w; }
  double ax = ::fabs(x), y = ::fabs(p * x), k = 2 / ::sqrt(M_PI);
  for (int n = 0; n < 50; ++n) {
    double f = ax < 0.5 ? ::erf(y) - ax : (1 - ax) - ::erfc(y), d = k * ::exp(-y * y);
    if (d == 0) break;
    double step = f / d; step /= 1 + y * step; y -= step;
    if (::fabs(step) <= y * eps) break; }
  return ::copysign(y, x); }
template <class U> static inline U rp_bits(U b, int nbits, int E, int M, int e, int m) {
  const U one = 1;
  if (m < M) {
    const U last = one << (M - m), bias = (last >> 1) - 1;
    b = (U)((b + ((b & last) >> (M - m)) + bias) & ~(last - 1)); }
  if (e < E) {
    const U sign = one << (nbits - 1), exp_mask = ((one << E) - 1) << M;
    const U ebias = (one << (E - 1)) - 1, rbias = (one << (e - 1)) - 1, xe = b & exp_mask;
    if (xe > ((ebias + rbias) << M)) b = (b & sign) | exp_mask;
    else if (xe <= ((ebias - rbias) << M)) b = b & sign; }
  return b; }
static inline float reduce_precision(float x, int e, int m) {
  if (x != x) return x;
  uint32_t b; memcpy(&b, &x, 4); b = rp_bits<uint32_t>(b, 32, 8, 23, e, m); memcpy(&x, &b, 4);
  return x; }
static inline double reduce_precision(double x, int e, int m) {
  if (x != x) return x;
  uint64_t b; memcpy(&b, &x, 8); b = rp_bits<uint64_t>(b, 64, 11, 52, e, m); memcpy(&x, &b, 8);
  return x; }
}  // namespace fx_sp
"""


def _row_math() -> str:
    """``FX_MATH1(name)``/``FX_MATH2(name)`` lines for the rows spelled ``fx::<name>`` that the
    prelude does not wrap yet."""
    head = _PRELUDE_HEAD + _RSQRT + _PRELUDE_TAIL
    listed = set(re.findall(r"FX_(?:MATH|LIBM)[12]\((\w+)\)", head))
    listed |= set(re.findall(r"static inline double (\w+)\(double x\)", head))
    lines = [
        f"FX_MATH{row.arity}({row.cpp[4:]})"
        for row in ROWS
        if isinstance(row.cpp, str)
        and re.fullmatch(r"fx::\w+", row.cpp)
        and row.cpp[4:] not in listed
    ]
    return "".join(line + "\n" for line in lines)


def narrow_name(dt) -> str:
    """The C++ suffix of a narrow dtype's helpers (``fx_f32_to_<suffix>``)."""
    return np.dtype(dt).name


def _f32_literal(v) -> str:
    v = float(v)
    if v != v:
        return '__builtin_nanf("")'
    if v in (float("inf"), float("-inf")):
        return ("-" if v < 0 else "") + "__builtin_huge_valf()"
    return f"{v!r}f"


def _sorted_unique(a):
    """``np.unique(a)`` of a 1-D float array without NaN, without ``np.unique``: its first call
    imports ``numpy.ma`` (13 ms of the first compile, where the prelude is made)."""
    a = np.sort(a)
    return a[np.concatenate(([True], a[1:] != a[:-1]))]


def _narrow_float_helpers(dt) -> str:
    """Decode and encode (round to nearest even, as ``ml_dtypes`` and XLA convert) of a float8
    or float4 dtype, stored as one byte: a 256-entry table of values, and a binary search over
    the rounding boundaries (the midpoints between neighbouring values and the overflow
    thresholds) with the code each open interval and each boundary takes, all read off
    ``ml_dtypes``' own conversion so that the compiled code gives its bits."""
    name = narrow_name(dt)
    with np.errstate(all="ignore"):
        values = np.arange(256, dtype=np.uint8).view(dt).astype(np.float64)
        finite = _sorted_unique(values[np.isfinite(values)])
        mids = (finite[1:] + finite[:-1]) / 2
        # the overflow thresholds: half an ulp beyond the extremes (where ml_dtypes' result
        # changes; found by asking it)
        top, bottom = finite[-1], finite[0]
        ulp_top = finite[-1] - finite[-2]
        bounds = list(mids) + [0.0]
        if top > 0:
            bounds.append(top + ulp_top / 2)
        if bottom < 0:
            bounds.append(bottom - (finite[1] - finite[0]) / 2)
        bounds = _sorted_unique(np.asarray(bounds, np.float32))
        codes = lambda v: np.asarray(v, np.float32).astype(dt).view(np.uint8).tolist()  # noqa: E731
        enc = lambda v: codes([v])[0]  # noqa: E731
        ties = codes(bounds)
        inside = [enc(np.nextafter(bounds[0], np.float32(-np.inf)))]
        inside += codes(np.nextafter(bounds, np.float32(np.inf)))
    n = len(bounds)
    table = ", ".join(map(_f32_literal, values.tolist()))
    limits = ", ".join(map(_f32_literal, bounds.tolist()))
    return (
        f"static const float fx_dec_{name}[256] = {{{table}}};\n"
        f"static const float fx_bnd_{name}[{n}] = {{{limits}}};\n"
        f"static const uint8_t fx_tie_{name}[{n}] = {{{', '.join(map(str, ties))}}};\n"
        f"static const uint8_t fx_in_{name}[{n + 1}] = {{{', '.join(map(str, inside))}}};\n"
        f"static inline float fx_{name}_to_f32(uint8_t c) {{ return fx_dec_{name}[c]; }}\n"
        f"static inline uint8_t fx_f32_to_{name}(float x) {{\n"
        f"  if (x != x) return {enc(np.nan)};\n"
        f"  if (x == 0) return __builtin_signbit(x) ? {enc(-0.0)} : {enc(0.0)};\n"
        f"  int lo = 0, hi = {n};\n"
        f"  while (lo < hi) {{ int mid = (lo + hi) >> 1;"
        f" if (fx_bnd_{name}[mid] < x) lo = mid + 1; else hi = mid; }}\n"
        f"  return (lo < {n} && fx_bnd_{name}[lo] == x)"
        f" ? fx_tie_{name}[lo] : fx_in_{name}[lo]; }}\n"
    )


def _narrow_helpers() -> str:
    """The narrow dtypes' helpers: float8/float4 conversions (above); int2/int4/uint2/uint4 are
    stored in a byte's low bits and computed in int8_t/uint8_t, wrapped after each operation
    (``fx_wrap_<name>``, also the load: ml_dtypes reads only the low bits)."""
    out = ["\n// Narrow dtypes (ml_dtypes' one-byte layouts): see prelude.py's _narrow_helpers.\n"]
    for dt in dtypes.NARROW_INTS:
        bits, name = dtypes.iinfo(dt).bits, narrow_name(dt)
        mask, sign = (1 << bits) - 1, 1 << (bits - 1)
        if dt in dtypes.SIGNED:
            out.append(
                f"static inline int8_t fx_wrap_{name}(int v) "
                f"{{ return (int8_t)(((v & {mask}) ^ {sign}) - {sign}); }}\n"
            )
        else:
            out.append(
                f"static inline uint8_t fx_wrap_{name}(int v) {{ return (uint8_t)(v & {mask}); }}\n"
            )
    out.extend(_narrow_float_helpers(dt) for dt in dtypes.NARROW_FLOATS)
    return "".join(out)


PRELUDE = (
    _PRELUDE_HEAD + _RSQRT[1:] + _row_math() + _PRELUDE_TAIL[1:] + _SPECIAL[1:] + _narrow_helpers()
)  # (each opens with a newline)
