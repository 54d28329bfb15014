// Branch-free float32 exp and log (Cephes polynomials, within a few ulp) that `omp simd` loops
// vectorise (glibc's scalar functions would stop the vectoriser): the C++ programs' (cpp/prelude.py
// writes this file into their prelude) and the flash-attention library's (fx_attention.cpp
// includes it), one text for both. What comes before it declares memcpy, uint32_t and fx::fma.
static inline float fx_bits2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t fx_f2bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float fx_expf(float x) {
  // x is clamped to [-104, 89], so n stays in [-150, 128]: beyond exp's float32 range the two
  // power-of-two factors below underflow to 0 or overflow to inf by themselves
  const float xc = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
  const float n = (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.9875691500E-4f;
  p = fx::fma(p, r, 1.3981999507E-3f);
  p = fx::fma(p, r, 8.3334519073E-3f);
  p = fx::fma(p, r, 4.1665795894E-2f);
  p = fx::fma(p, r, 1.6666665459E-1f);
  p = fx::fma(p, r, 5.0000001201E-1f);
  const float y = p * r * r + r + 1.0f;
  const int32_t ni = (int32_t)n;
  const int32_t n1 = ni >> 1, n2 = ni - n1;  // two factors: each one a normal float
  const float out = y * fx_bits2f((uint32_t)(n1 + 127) << 23)
                      * fx_bits2f((uint32_t)(n2 + 127) << 23);
  return x != x ? x : out;
}
static inline float fx_logf(float x) {
  uint32_t u = fx_f2bits(x);
  const bool sub = x < 1.17549435e-38f;
  u = sub ? fx_f2bits(x * 8388608.0f) : u;  // scale subnormals by 2^23
  int32_t e = (int32_t)((u >> 23) & 0xff) - 126 - (sub ? 23 : 0);
  float m = fx_bits2f((u & 0x807fffffu) | 0x3f000000u);  // in [0.5, 1)
  const bool lo = m < 0.707106781186547524f;
  e = lo ? e - 1 : e;
  float t = lo ? m + m - 1.0f : m - 1.0f;
  const float z = t * t;
  float y = 7.0376836292E-2f;
  y = fx::fma(y, t, -1.1514610310E-1f);
  y = fx::fma(y, t, 1.1676998740E-1f);
  y = fx::fma(y, t, -1.2420140846E-1f);
  y = fx::fma(y, t, 1.4249322787E-1f);
  y = fx::fma(y, t, -1.6668057665E-1f);
  y = fx::fma(y, t, 2.0000714765E-1f);
  y = fx::fma(y, t, -2.4999993993E-1f);
  y = fx::fma(y, t, 3.3333331174E-1f);
  y = y * t * z;
  const float fe = (float)e;
  y += -2.12194440e-4f * fe;
  y += -0.5f * z;
  float out = t + y + 0.693359375f * fe;
  out = x == 0.0f ? -INFINITY : out;
  out = x < 0.0f ? NAN : out;
  out = x == INFINITY ? INFINITY : out;
  return x != x ? x : out;
}
