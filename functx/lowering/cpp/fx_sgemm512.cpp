// ---- fx_sgemm512 (cpp/gemm.py): C = alpha op(A) op(B) [+ U], row-major float32 ----
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
enum { FX_GMR = 6, FX_GNR = 64, FX_GKC = 512, FX_GB = 1 << 17 };

// rows x 16 floats (row i at src + i * ld) transposed: column c to dst + c * dstride, the lanes
// of mask m (rows past ``rows`` read as zeros)
static inline void fx_g_tr16(const float* src, int64_t ld, int rows, float* dst, int64_t dstride,
                             __mmask16 m) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i)
    r[i] = i < rows ? _mm512_loadu_ps(src + i * ld) : _mm512_setzero_ps();
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // r[4i + c], lane l: column 4l + c of rows 4i..4i+3
    const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
    const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int c = 0; c < 4; ++c) {
    const __m512 x = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
    const __m512 x2 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
    const __m512 y = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
    const __m512 y2 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
    _mm512_mask_storeu_ps(dst + c * dstride, m, _mm512_shuffle_f32x4(x, y, 0x88));
    _mm512_mask_storeu_ps(dst + (8 + c) * dstride, m, _mm512_shuffle_f32x4(x, y, 0xdd));
    _mm512_mask_storeu_ps(dst + (4 + c) * dstride, m, _mm512_shuffle_f32x4(x2, y2, 0x88));
    _mm512_mask_storeu_ps(dst + (12 + c) * dstride, m, _mm512_shuffle_f32x4(x2, y2, 0xdd));
  }
}

static inline __mmask16 fx_g_mask(int64_t n) {
  return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

// the height of the tile of rows from one ``left`` rows before the end: 6, and the last 7-9 rows
// as two tiles of 3-5 (a tile of 1 or 2 rows is load-bound)
static inline int fx_g_rows(int64_t left) {
  return (int)(left > 9 ? FX_GMR : left > FX_GMR ? left - 4 : left);
}

// op(A)[i0 : i0 + mc, p0 : p0 + kc] of a transposed A (A(i, k) = a[k * lda + i]) as panels of
// fx_g_rows rows R: from ap + ip * kc, [k][r]. (An A stored by rows is not packed: the tiles
// read its rows in place, ``fx_g_tile<R, false>``.)
static void fx_g_pack_at(const float* a, int64_t lda, int64_t i0, int64_t mc, int64_t p0,
                         int64_t kc, float* ap) {
  for (int64_t ip = 0, rows = fx_g_rows(mc); ip < mc; ip += rows, rows = fx_g_rows(mc - ip)) {
    float* d = ap + ip * kc;
    const __mmask16 m = fx_g_mask(rows);
    const float* s = a + p0 * lda + i0 + ip;
    for (int64_t k = 0; k < kc; ++k)
      _mm512_mask_storeu_ps(d + k * rows, m, _mm512_maskz_loadu_ps(m, s + k * lda));
  }
}

// op(B)[p0 : p0 + kc, j0 : j0 + nc] as panels of 64 columns: bp[panel][k][c] (zeros past nc)
static void fx_g_pack_b(const float* b, int64_t ldb, int tb, int64_t p0, int64_t kc, int64_t j0,
                        int64_t nc, float* bp) {
  if (!tb) {  // B(k, j) = b[k * ldb + j], read row after row (a column of lines at a time: 16%
              // of the time of x @ W0's pieces, 4 KiB apart: each row on a page of its own,
              // where no hardware prefetcher follows; so the row 4 ahead is fetched into L1,
              // 2% of the five products from a cold cache, session 34)
    for (int64_t k = 0; k < kc; ++k) {
      const float* s = b + (p0 + k) * ldb + j0;
      if (k + 4 < kc)
        for (int64_t j = 0; j < nc; j += 16)
          _mm_prefetch((const char*)(s + 4 * ldb + j), _MM_HINT_T0);
      for (int64_t j = 0; j < nc; j += 16)
        _mm512_storeu_ps(bp + (j / FX_GNR) * FX_GNR * kc + k * FX_GNR + j % FX_GNR,
                         _mm512_maskz_loadu_ps(fx_g_mask(nc - j), s + j));
      for (int64_t j = (nc + 15) / 16 * 16; j % FX_GNR; j += 16)  // (the last panel's zeros)
        _mm512_storeu_ps(bp + (j / FX_GNR) * FX_GNR * kc + k * FX_GNR + j % FX_GNR,
                         _mm512_setzero_ps());
    }
    return;
  }
  for (int64_t jp = 0; jp < nc; jp += FX_GNR) {
    float* d = bp + jp * kc;
    for (int v = 0; v < 4; ++v) {
      const int64_t cols = nc - jp - 16 * v;  // B(k, j) = b[j * ldb + k]
      const int rows = (int)(cols < 0 ? 0 : cols > 16 ? 16 : cols);
      const float* s = b + (j0 + jp + 16 * v) * ldb + p0;
      int64_t k0 = 0;
      for (; k0 + 16 <= kc; k0 += 16)
        fx_g_tr16(s + k0, ldb, rows, d + k0 * FX_GNR + 16 * v, FX_GNR, (__mmask16)0xffff);
      for (int64_t k = k0; k < kc; ++k)
        for (int c = 0; c < 16; ++c) d[k * FX_GNR + 16 * v + c] = c < rows ? s[c * ldb + k] : 0.0f;
    }
  }
}

// one tile of R rows x nc columns (<= 64): C = alpha * sum (+ add, where given; add has C's rows).
// A's R x kc block: packed (P: ap[k * R + r]) or R rows of A in place (ap[r * lda + k]).
template <int R, bool P>
static inline void fx_g_tile(int64_t kc, const float* __restrict ap, int64_t lda,
                             const float* __restrict bp, float* c, int64_t ldc, const float* add,
                             int64_t nc, float alpha) {
  const float* row[R];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) row[r] = ap + r * lda;
  __m512 acc[R][4];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) acc[r][v] = _mm512_setzero_ps();
#pragma GCC unroll 2
  for (int64_t k = 0; k < kc; ++k) {
    const float* bk = bp + k * FX_GNR;
    const __m512 b0 = _mm512_loadu_ps(bk), b1 = _mm512_loadu_ps(bk + 16);
    const __m512 b2 = _mm512_loadu_ps(bk + 32), b3 = _mm512_loadu_ps(bk + 48);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m512 x = _mm512_set1_ps(P ? ap[k * R + r] : row[r][k]);
      acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(x, b2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(x, b3, acc[r][3]);
    }
  }
  const __m512 va = _mm512_set1_ps(alpha);
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      const __mmask16 m = fx_g_mask(nc - 16 * v);
      const __m512 y = add ? _mm512_fmadd_ps(va, acc[r][v],
                                             _mm512_maskz_loadu_ps(m, add + r * ldc + 16 * v))
                           : _mm512_mul_ps(va, acc[r][v]);
      _mm512_mask_storeu_ps(c + r * ldc + 16 * v, m, y);
    }
}

// lines of a block of rows (``rows`` rows of ``len`` bytes, ``stride`` apart) not yet prefetched
struct fx_g_ahead {
  const char* p;
  int64_t stride, rows, len, r, off;
};

static inline void fx_g_fetch(fx_g_ahead& a, int64_t lines) {
  for (; lines > 0 && a.r < a.rows; --lines) {
    _mm_prefetch(a.p + a.r * a.stride + a.off, _MM_HINT_T1);
    a.off += 64;
    if (a.off >= a.len + 63) a.off = 0, ++a.r;
  }
}

extern "C" {
int64_t fx_sgemm512_calls = 0;  // (tests: the programs did call the library)
int fx_sgemm512_fail_alloc = 0;  // (tests: nonzero, the workspace allocation fails)
}

// Returns 0, or 1 where the workspace could not be allocated (C is then not written).
extern "C" int fx_sgemm512(int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                           const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                           int64_t ldc, const float* u) {
  __atomic_fetch_add(&fx_sgemm512_calls, 1, __ATOMIC_RELAXED);
  const int64_t kblocks = (k + FX_GKC - 1) / FX_GKC, kcb = (k + kblocks - 1) / kblocks;
  int64_t ncb = FX_GB / kcb / FX_GNR * FX_GNR;
  ncb = ncb < FX_GNR ? FX_GNR : ncb;
  const int64_t mcb = 768;
  const int64_t need = ((mcb + FX_GMR) * kcb + (ncb + FX_GNR) * kcb + 15) / 16 * 16;
  static thread_local float* buf = nullptr;
  static thread_local int64_t cap = 0;
  const bool fail = __atomic_load_n(&fx_sgemm512_fail_alloc, __ATOMIC_RELAXED);
  if (cap < need || fail) {
    free(buf);
    buf = fail ? nullptr : (float*)aligned_alloc(64, (size_t)need * sizeof(float));
    cap = buf ? need : 0;
    if (!buf) return 1;
  }
  float* bp = buf;
  float* ap = buf + (ncb + FX_GNR) * kcb;
  // The blocks of B, (pc, jc), in the order they are packed: for A stored by rows, jc outer
  // (A is read in place); for a transposed A, pc and ic outer, so that each block of A is packed
  // once and serves every block of B's columns (jc inner; before, A was packed again for each
  // block of columns).
  const int64_t nj = (n + ncb - 1) / ncb, np = (k + kcb - 1) / kcb, ni = (m + mcb - 1) / mcb;
  const int64_t nblocks = ta ? ni * np * nj : nj * np;
  for (int64_t q = 0; q < nblocks; ++q) {
    const int64_t iq = ta ? q / (np * nj) : 0, pq = ta ? q / nj % np : q % np;
    const int64_t jq = ta ? q % nj : q / np;
    const int64_t jc = jq * ncb, pc = pq * kcb;
    const int64_t nc = n - jc < ncb ? n - jc : ncb, kc = k - pc < kcb ? k - pc : kcb;
    fx_g_pack_b(b, ldb, tb, pc, kc, jc, nc, bp);
    // (the next block of B read into L2 while this one's tiles run)
    const int64_t qn = q + 1 < nblocks ? q + 1 : -1;
    const int64_t pn = qn < 0 ? 0 : (ta ? qn / nj % np : qn % np) * kcb;
    const int64_t jn = qn < 0 ? n : (ta ? qn % nj : qn / np) * ncb;
    const int64_t kn = k - pn < kcb ? k - pn : kcb, nn = n - jn < ncb ? n - jn : ncb;
    fx_g_ahead ahead = {(const char*)(tb ? b + jn * ldb + pn : b + pn * ldb + jn), ldb * 4,
                        jn < n ? (tb ? nn : kn) : 0, (tb ? kn : nn) * 4, 0, 0};
    const int64_t mrows = ta ? (m - iq * mcb < mcb ? m - iq * mcb : mcb) : m;
    const int64_t per_tile = ahead.rows * ((ahead.len + 63) / 64 + 1) /
                             (((mrows + FX_GMR - 1) / FX_GMR) * ((nc + FX_GNR - 1) / FX_GNR)) + 1;
    for (int64_t ic = ta ? iq * mcb : 0; ic < (ta ? iq * mcb + mrows : m); ic += mcb) {
      const int64_t mc = m - ic < mcb ? m - ic : mcb;
      if (ta && jq == 0) fx_g_pack_at(a, lda, ic, mc, pc, kc, ap);
      for (int64_t ip = 0, rows = fx_g_rows(mc); ip < mc; ip += rows, rows = fx_g_rows(mc - ip))
        for (int64_t jp = 0; jp < nc; jp += FX_GNR) {
          fx_g_fetch(ahead, per_tile);
          const int64_t off = (ic + ip) * ldc + jc + jp;
          const float* add = pc ? c + off : u ? u + off : nullptr;
          if (u && !pc && jp + FX_GNR < nc)  // (U's lines of the next tile into L1)
            for (int64_t r = 0; r < rows; ++r)
              for (int64_t l = jp + FX_GNR; l < nc && l < jp + 2 * FX_GNR; l += 16)
                _mm_prefetch((const char*)(u + off - jp + r * ldc + l), _MM_HINT_T0);
          const int64_t w = nc - jp < FX_GNR ? nc - jp : FX_GNR;
          const float *pa = ta ? ap + ip * kc : a + (ic + ip) * lda + pc, *pb = bp + jp * kc;
#define FX_G_TILE(R)                                                                 \
  (ta ? fx_g_tile<R, true>(kc, pa, 0, pb, c + off, ldc, add, w, alpha)               \
      : fx_g_tile<R, false>(kc, pa, lda, pb, c + off, ldc, add, w, alpha))
          switch (rows) {
            case 6: FX_G_TILE(6); break;
            case 5: FX_G_TILE(5); break;
            case 4: FX_G_TILE(4); break;
            case 3: FX_G_TILE(3); break;
            case 2: FX_G_TILE(2); break;
            default: FX_G_TILE(1);
          }
#undef FX_G_TILE
        }
    }
  }
  return 0;
}
#else
#error "fx_sgemm512 needs AVX-512F (cpp/gemm.py: host_has_avx512)"
#endif
