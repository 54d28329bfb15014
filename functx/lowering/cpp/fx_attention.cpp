// ---- flash attention (cpp/attention.py): its forward and backward steps for one padded head
// dimension FX_FA_DP (a multiple of 16), a fixed library (cpp/native.py) built for each (setup.py
// at install time, else functx at run time, with -DFX_FA_DP=<DP>) ----
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
namespace fx {
static inline float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
}
#include "fx_mathf.h"  // (the programs' exp and log: cpp/prelude.py holds the same file)
typedef float fx_fav __attribute__((vector_size(64), may_alias, aligned(4)));
// c[i][:] (+)= sum_k a[i * ai + k * ak] * b[k][:] for R rows i, k < kn; the rows of b and c are
// NV vectors of 16 floats, packed
template <int NV, int R>
static inline void fx_fa_tile(int kn, const float* a, int64_t ai, int64_t ak, const float* b,
                              float* c, bool add) {
  fx_fav acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v)
      acc[r][v] = add ? *(const fx_fav*)(c + (int64_t)r * NV * 16 + v * 16) : fx_fav{};
  for (int k = 0; k < kn; ++k) {
    const fx_fav* bk = (const fx_fav*)(b + (int64_t)k * NV * 16);
    fx_fav bv[NV];
    for (int v = 0; v < NV; ++v) {
      bv[v] = bk[v];
      __asm__("" : "+v"(bv[v]));  // (in a register: each row's FMAs would load it again)
    }
    for (int r = 0; r < R; ++r) {
      const float s = a[r * ai + k * ak];
      for (int v = 0; v < NV; ++v) acc[r][v] += s * bv[v];
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) *(fx_fav*)(c + (int64_t)r * NV * 16 + v * 16) = acc[r][v];
}
// the same for the m rows (a multiple of 4) of c: tiles of as many rows as the registers hold
// (R accumulators and the row of b: 28 vector registers of AVX-512's 32), then of 4, 2 or 1
template <int NV>
static void fx_fa_mm(int m, int kn, const float* a, int64_t ai, int64_t ak, const float* b,
                     float* c, bool add) {
  constexpr int R = 28 / NV - 1 > 6 ? 6 : (28 / NV - 1 < 1 ? 1 : 28 / NV - 1);
  int i = 0;
  for (; i + R <= m; i += R) fx_fa_tile<NV, R>(kn, a + i * ai, ai, ak, b, c + i * NV * 16, add);
  for (; i + 4 <= m && R > 4; i += 4)
    fx_fa_tile<NV, 4>(kn, a + i * ai, ai, ak, b, c + i * NV * 16, add);
  for (; i < m; ++i) fx_fa_tile<NV, 1>(kn, a + i * ai, ai, ak, b, c + i * NV * 16, add);
}
// rows x DP block of x (strides st, t and d) from row t0, zero-padded to 64 rows and DP columns
template <int DP>
static void fx_fa_rows(const float* x, int64_t st, int64_t sd, int64_t t0, int64_t n, int64_t d,
                       float* out) {
  for (int64_t r = 0; r < 64; ++r) {
    const float* row = x + (t0 + r) * st;
    float* o = out + r * DP;
    int64_t j = 0;
    if (t0 + r < n && sd == 1)
      for (; j < d; ++j) o[j] = row[j];
    else if (t0 + r < n)
      for (; j < d; ++j) o[j] = row[j * sd];
    for (; j < DP; ++j) o[j] = 0.0f;
  }
}
// the same rows transposed: DP x 64
template <int DP>
static void fx_fa_cols(const float* x, int64_t st, int64_t sd, int64_t t0, int64_t n, int64_t d,
                       float* out) {
  for (int64_t r = 0; r < 64; ++r) {  // (rows read in order: by columns, each read missed L1)
    const float* row = x + (t0 + r) * st;
    const bool in = t0 + r < n;
    for (int64_t j = 0; j < DP; ++j) out[j * 64 + r] = (in && j < d) ? row[j * sd] : 0.0f;
  }
}
// the scaled score block (64 x 64) of query rows t0.. and keys s0..: masked ones -inf
static inline void fx_fa_mask(float* s, float scale, int64_t t0, int64_t s0, int64_t T,
                              int64_t S, bool causal) {
  for (int64_t r = 0; r < 64; ++r) {
    const int64_t hi = causal ? (t0 + r + 1 < S ? t0 + r + 1 : S) : S;  // keys < hi kept
    const bool row = t0 + r < T;
    #pragma omp simd
    for (int64_t c = 0; c < 64; ++c)
      s[r * 64 + c] = (row && s0 + c < hi) ? s[r * 64 + c] * scale : -__builtin_huge_valf();
  }
}
template <int DP>
static int fx_fa_fwd(const float* q, const float* k, const float* v, float* o, float* lse,
                      int64_t B, int64_t H, int64_t T, int64_t S, int64_t D, const int64_t* sq,
                      const int64_t* sk, const int64_t* sv, float scale, bool causal) {
  const int64_t nt = (T + 63) / 64, ns = (S + 63) / 64, SP = ns * 64;
  constexpr int NV = DP / 16;
  int failed = 0;
  #pragma omp parallel if (B * H > 1)
  {
    float* w = (float*)aligned_alloc(64, (size_t)(2 * SP * DP + 2 * 64 * DP + 64 * 64 + 128)
                                             * sizeof(float));
    if (!w) {  // (no workspace: this thread skips its rows, the program returns 1)
      #pragma omp atomic write
      failed = 1;
    }
    float* kt = w;                 // key blocks transposed: ns x (DP x 64)
    float* vr = kt + SP * DP;      // values: SP x DP
    float* qb = vr + SP * DP;      // query block: 64 x DP
    float* ob = qb + 64 * DP;      // output block: 64 x DP
    float* sb = ob + 64 * DP;      // scores: 64 x 64
    float* mrow = sb + 64 * 64;    // running maximum and sum
    float* lrow = mrow + 64;
    #pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < B * H; ++bh) {
      if (!w) continue;
      const int64_t b = bh / H, h = bh % H;
      const float* qh = q + b * sq[0] + h * sq[1];
      const float* kh = k + b * sk[0] + h * sk[1];
      const float* vh = v + b * sv[0] + h * sv[1];
      for (int64_t j = 0; j < ns; ++j) {
        fx_fa_cols<DP>(kh, sk[2], sk[3], j * 64, S, D, kt + j * DP * 64);
        fx_fa_rows<DP>(vh, sv[2], sv[3], j * 64, S, D, vr + j * 64 * DP);
      }
      for (int64_t i = 0; i < nt; ++i) {
        const int64_t t0 = i * 64;
        fx_fa_rows<DP>(qh, sq[2], sq[3], t0, T, D, qb);
        for (int r = 0; r < 64; ++r) mrow[r] = -__builtin_huge_valf(), lrow[r] = 0.0f;
        for (int64_t x = 0; x < 64 * DP; ++x) ob[x] = 0.0f;
        const int64_t hi = causal ? ((t0 + 64 < S ? t0 + 64 : S) + 63) / 64 : ns;
        for (int64_t j = 0; j < hi; ++j) {
          fx_fa_mm<4>(64, DP, qb, DP, 1, kt + j * DP * 64, sb, false);
          fx_fa_mask(sb, scale, t0, j * 64, T, S, causal);
          for (int r = 0; r < 64; ++r) {
            float* s = sb + r * 64;
            float mx = mrow[r];
            #pragma omp simd reduction(max : mx)
            for (int c = 0; c < 64; ++c) mx = s[c] > mx ? s[c] : mx;
            if (mx == -__builtin_huge_valf()) {  // (a row with every key masked so far)
              for (int c = 0; c < 64; ++c) s[c] = 0.0f;
              continue;
            }
            const float alpha = fx_expf(mrow[r] - mx);
            float sum = 0.0f;
            #pragma omp simd reduction(+ : sum)
            for (int c = 0; c < 64; ++c) {
              s[c] = fx_expf(s[c] - mx);
              sum += s[c];
            }
            lrow[r] = lrow[r] * alpha + sum;
            mrow[r] = mx;
            if (alpha != 1.0f)
              for (int x = 0; x < DP; ++x) ob[r * DP + x] *= alpha;
          }
          fx_fa_mm<NV>(64, 64, sb, 64, 1, vr + j * 64 * DP, ob, true);
        }
        const int64_t rows = T - t0 < 64 ? T - t0 : 64;
        for (int64_t r = 0; r < rows; ++r) {
          const float inv = 1.0f / lrow[r];
          float* out = o + (bh * T + t0 + r) * D;
          for (int64_t x = 0; x < D; ++x) out[x] = ob[r * DP + x] * inv;
          lse[bh * T + t0 + r] = mrow[r] + fx_logf(lrow[r]);
        }
      }
    }
    free(w);
  }
  return failed;
}
template <int DP>
static int fx_fa_bwd(const float* q, const float* k, const float* v, const float* o,
                      const float* lse, const float* dout, float* dq, float* dk, float* dv,
                      int64_t B, int64_t H, int64_t T, int64_t S, int64_t D, const int64_t* sq,
                      const int64_t* sk, const int64_t* sv, const int64_t* so, float scale,
                      bool causal) {
  const int64_t nt = (T + 63) / 64, ns = (S + 63) / 64, SP = ns * 64;
  constexpr int NV = DP / 16;
  int failed = 0;
  #pragma omp parallel if (B * H > 1)
  {
    float* w = (float*)aligned_alloc(64, (size_t)(5 * SP * DP + 3 * 64 * DP + 2 * 64 * 64 + 128)
                                             * sizeof(float));
    if (!w) {  // (no workspace: this thread skips its rows, the program returns 1)
      #pragma omp atomic write
      failed = 1;
    }
    float* kt = w;                 // key blocks transposed: ns x (DP x 64)
    float* vt = kt + SP * DP;      // value blocks transposed
    float* kr = vt + SP * DP;      // keys: SP x DP
    float* dkb = kr + SP * DP;     // dk, dv accumulators: SP x DP
    float* dvb = dkb + SP * DP;
    float* qb = dvb + SP * DP;     // query, output-gradient and dq blocks: 64 x DP
    float* db = qb + 64 * DP;
    float* dqb = db + 64 * DP;
    float* pb = dqb + 64 * DP;     // p and dp / ds: 64 x 64
    float* gb = pb + 64 * 64;
    float* lrow = gb + 64 * 64;    // lse and delta of the row block
    float* drow = lrow + 64;
    #pragma omp for schedule(dynamic)
    for (int64_t bh = 0; bh < B * H; ++bh) {
      if (!w) continue;
      const int64_t b = bh / H, h = bh % H;
      const float* qh = q + b * sq[0] + h * sq[1];
      const float* kh = k + b * sk[0] + h * sk[1];
      const float* vh = v + b * sv[0] + h * sv[1];
      const float* doh = dout + b * so[0] + h * so[1];
      for (int64_t j = 0; j < ns; ++j) {
        fx_fa_cols<DP>(kh, sk[2], sk[3], j * 64, S, D, kt + j * DP * 64);
        fx_fa_cols<DP>(vh, sv[2], sv[3], j * 64, S, D, vt + j * DP * 64);
        fx_fa_rows<DP>(kh, sk[2], sk[3], j * 64, S, D, kr + j * 64 * DP);
      }
      for (int64_t x = 0; x < 2 * SP * DP; ++x) dkb[x] = 0.0f;
      for (int64_t i = 0; i < nt; ++i) {
        const int64_t t0 = i * 64, rows = T - t0 < 64 ? T - t0 : 64;
        fx_fa_rows<DP>(qh, sq[2], sq[3], t0, T, D, qb);
        fx_fa_rows<DP>(doh, so[2], so[3], t0, T, D, db);
        for (int64_t x = 0; x < 64 * DP; ++x) dqb[x] = 0.0f;
        for (int64_t r = 0; r < 64; ++r) {
          float d = 0.0f;
          if (r < rows) {
            const float* orow = o + (bh * T + t0 + r) * D;
            for (int64_t x = 0; x < D; ++x) d += db[r * DP + x] * orow[x];
          }
          drow[r] = d;
          lrow[r] = r < rows ? lse[bh * T + t0 + r] : 0.0f;
        }
        const int64_t hi = causal ? ((t0 + 64 < S ? t0 + 64 : S) + 63) / 64 : ns;
        for (int64_t j = 0; j < hi; ++j) {
          fx_fa_mm<4>(64, DP, qb, DP, 1, kt + j * DP * 64, pb, false);
          fx_fa_mask(pb, scale, t0, j * 64, T, S, causal);
          fx_fa_mm<4>(64, DP, db, DP, 1, vt + j * DP * 64, gb, false);
          for (int r = 0; r < 64; ++r) {
            float* p = pb + r * 64;
            float* g = gb + r * 64;
            const float l = lrow[r], d = drow[r];
            #pragma omp simd
            for (int c = 0; c < 64; ++c) {
              p[c] = fx_expf(p[c] - l);
              g[c] = p[c] * (g[c] - d) * scale;
            }
          }
          fx_fa_mm<NV>(64, 64, pb, 1, 64, db, dvb + j * 64 * DP, true);
          fx_fa_mm<NV>(64, 64, gb, 1, 64, qb, dkb + j * 64 * DP, true);
          fx_fa_mm<NV>(64, 64, gb, 64, 1, kr + j * 64 * DP, dqb, true);
        }
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t x = 0; x < D; ++x) dq[(bh * T + t0 + r) * D + x] = dqb[r * DP + x];
      }
      for (int64_t r = 0; r < S; ++r)
        for (int64_t x = 0; x < D; ++x) {
          dk[(bh * S + r) * D + x] = dkb[r * DP + x];
          dv[(bh * S + r) * D + x] = dvb[r * DP + x];
        }
    }
    free(w);
  }
  return failed;
}

#ifndef FX_FA_DP
#error "compile with -DFX_FA_DP=<the padded head dimension>"
#endif
extern "C" int fx_fa_fwd_lib(const float* q, const float* k, const float* v, float* o, float* lse,
                             int64_t B, int64_t H, int64_t T, int64_t S, int64_t D,
                             const int64_t* sq, const int64_t* sk, const int64_t* sv, float scale,
                             bool causal) {
  return fx_fa_fwd<FX_FA_DP>(q, k, v, o, lse, B, H, T, S, D, sq, sk, sv, scale, causal);
}
extern "C" int fx_fa_bwd_lib(const float* q, const float* k, const float* v, const float* o,
                             const float* lse, const float* dout, float* dq, float* dk, float* dv,
                             int64_t B, int64_t H, int64_t T, int64_t S, int64_t D,
                             const int64_t* sq, const int64_t* sk, const int64_t* sv,
                             const int64_t* so, float scale, bool causal) {
  return fx_fa_bwd<FX_FA_DP>(q, k, v, o, lse, dout, dq, dk, dv, B, H, T, S, D, sq, sk, sv, so,
                             scale, causal);
}
