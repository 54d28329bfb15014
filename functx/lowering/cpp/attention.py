"""Flash attention on the CPU: the C++ steps of ``flash_attention`` and ``flash_attention_bwd``
(``functx/transforms/attention.py``: the pass that finds attention in a program; for the CPU,
``lowering/compile.py`` runs it, through ``fuse``, on a program-cache miss, for float32 attention:
``DTYPES``).

The equations lower as on the GPU (``lowering/triton/attention.py``'s rule: a host step) and
``loops._host`` hands the step here, which writes it as C++ in the program (no Python step). Per
(batch, head) on one thread (the pairs shared out over the program's OpenMP threads):

* the operands are copied once, from their views (the pass's offsets and strides: the head
  transposes and the split of a fused ``q k v`` product cost no other copy), into blocks with
  the head dimension padded to a multiple of 16 and the keys to a multiple of 64 (zeros);
* forward: per block of 64 query rows, the key blocks of 64 at or below the diagonal only
  (``causal``) or all of them: the score block ``q k^T``, the online softmax (running row
  maximum and sum, the output block rescaled when the maximum grows), ``o += p v``; then ``o /
  l`` and ``lse = m + log(l)`` (natural log of the scaled scores, as the Triton forward);
* backward, in one pass over the same blocks: ``p = exp(scale s - lse)``, ``dp = do v^T``,
  ``ds = scale p (dp - rowsum(do * o))``, ``dq += ds k`` (per row block), ``dk += ds^T q`` and
  ``dv += p^T do`` (whole-head accumulators of the task's own: no two threads write one).

The products are register tiles of GCC vector types (4 rows x 64 columns of accumulators on a
64-wide block, as ``cpp/gemm.py``'s kernel but without its packing: every block here is already
packed and in L1/L2). The sums run in a fixed order: results do not depend on the threads.
Figures (session 35, the 2-core Zen 4 under load 6-9, CPU ms per call, medians of alternating
processes): causal attention B=4 H=6 T=256 D=64 alone, forward 4.0-4.3 against 7.9 for the plain
program (products, mask and softmax kernels), forward and gradient 12.4-12.8 against 17.8-18.8;
the GPT block step of ``benchmarks/workloads.py`` 129-132 against 136-139, its wall at real-time
priority 66.2-68.7 ms against 69.9-73.0 (JAX 109.7-111.8). Before the 6-row tiles with ``b`` in
registers and the row-order packs, the forward took 5.1 ms and forward and gradient 15.3.

``render`` returns False for anything it does not take (the caller then emits the host step,
which runs the primitive's NumPy reference), but ``jit`` only fuses what it takes (``DTYPES``).
"""

from __future__ import annotations

import numpy as np

from functx.transforms.attention import fuse_attention

#: the operand dtypes the C++ steps take (``jit`` fuses attention on the CPU for these only)
DTYPES = frozenset({np.dtype(np.float32)})


def fuse(closed):
    """``closed`` with its attention chains of ``DTYPES`` as flash steps (``fuse_attention``;
    ``compile.py`` runs it on a program-cache miss, before lowering)."""
    return fuse_attention(closed, DTYPES)


KERNELS = r"""// ---- flash attention (cpp/attention.py) ----
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
"""


def render(prog, k, group) -> bool:
    """Emit the ``flash_attention`` or ``flash_attention_bwd`` host step ``group`` as a call of
    this module's kernels; False for any other step or an operand dtype not in ``DTYPES``."""
    step = group["callback"]
    prim = getattr(getattr(step, "prim", None), "name", None)
    if prim not in ("flash_attention", "flash_attention_bwd"):
        return False
    ins, outs = group["ins"], group["outs"][: group["n_out"]]
    if any(np.dtype(n.dtype) not in DTYPES for n in (*ins, *outs)):
        return False
    p = step.params
    B, H, T, S, D = (int(x) for x in p["shape"])
    if min(B, H, T, S, D) == 0:
        return False
    if KERNELS not in prog.subs:
        prog.subs.append(KERNELS)
    dp = -(-D // 16) * 16
    views = p["views"]
    bufs = [f"(const float*)({n.buf}) + {off}LL" for n, (off, _) in zip(ins, views)]
    strides = [
        f"const int64_t fa_s{i}[4] = {{{', '.join(f'{s}LL' for s in st)}}};"
        for i, (_, st) in enumerate(views)
    ]
    if prim == "flash_attention":
        args = [*bufs[:3], *(f"(float*)({n.buf})" for n in outs)]
        ss = "fa_s0, fa_s1, fa_s2"
        fn = "fx_fa_fwd"
    else:  # (o and lse: the forward's outputs, stored whole; do: a view)
        do = f"(const float*)({ins[5].buf}) + {views[3][0]}LL"
        args = [*bufs[:3], f"(const float*)({ins[3].buf})", f"(const float*)({ins[4].buf})", do]
        args += [f"(float*)({n.buf})" for n in outs]
        ss = "fa_s0, fa_s1, fa_s2, fa_s3"
        fn = "fx_fa_bwd"
    scale, causal = float(p["scale"]), "true" if p["causal"] else "false"
    prog.body += [
        f"  // kernel {k.index}: {prim} (cpp/attention.py, in place of an fx_host step)",
        "  {",
        *("    " + s for s in strides),
        f"    if ({fn}<{dp}>({', '.join(args)}, {B}LL, {H}LL, {T}LL, {S}LL, {D}LL, {ss}, "
        f"{scale!r}f, {causal})) return 1;  // (a workspace allocation failed)",
        "  }",
    ]
    return True
