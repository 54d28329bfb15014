"""Flash attention on the GPU: the Triton kernels of ``flash_attention`` and
``flash_attention_bwd`` (``functx/transforms/attention.py``: the pass that finds attention in a
program) and their lowering row.

Each equation becomes a *host step* of the compiled program (``lower_to_loop(..., "host")``, as
FFT and the convolutions are) whose ``torch`` hook launches Triton kernels on the program's
device buffers. It only queues work on the current stream, so the program keeps its CUDA graph
(``graph_safe``). The kernels (the FlashAttention-2 schedule):

* forward, one kernel: a program per block of ``BLOCK_M`` query rows of one (batch, head); it
  walks the key blocks keeping the running row maximum ``m``, the running sum ``l`` of
  ``exp2(s - m)`` and the unnormalised output (rescaled when ``m`` grows: the online softmax),
  and stores ``o = acc / l`` and ``lse = m + log(l)`` (natural log, of the scaled scores). With
  ``causal``, key blocks wholly above the diagonal are never visited;
* backward, two kernels: ``dq`` (a program per block of queries: ``p`` recomputed from ``q``,
  ``k`` and ``lse``; ``ds = p (dp - delta) scale`` with ``dp = do v^T`` and ``delta = rowsum(do
  * o)``, which it also stores; ``dq += ds k``) and ``dk``/``dv`` (a program per block of
  ``BLOCK_N`` keys: ``dv += p^T do``, ``dk += ds^T q``). No ``(T, S)`` array is ever stored.

Products run on the tensor cores: float32 operands in TF32 unless the default matmul
precision says ``"float32"``/``"highest"`` (``functx.default_matmul_precision``, read when the
program is generated, as the ``dot`` kernels do), bfloat16 and float16 operands as they are; the
softmax and the accumulators are float32. Triton's TF32 takes the operands' leading bits where
cuBLAS rounds them to nearest: on the H100 the float32 kernels' results are 1-3e-3 (relative)
from float64, where functx's and JAX's unfused cuBLAS programs agree to 3e-5 with each other.
Operands are read where they are stored (the ``views`` parameter: an offset and the strides of
each operand in its buffer), so the head transposes and the split of a fused ``q k v`` product
around attention cost no copy.
"""

from __future__ import annotations

import numpy as np

from functx import config
from functx.control.common import HostStep, lower_to_loop
from functx.core import ShapedArray
from functx.lowering.rules import lowerings
from functx.lowering.triton import interpreter
from functx.transforms.attention import (
    flash_attention_bwd_p,
    flash_attention_p,
    fuse_attention as fuse_attention,
)

#: block sizes ``(BLOCK_M, BLOCK_N, num_warps, num_stages)`` of the forward and the backward
#: kernels, for float32 and for half-precision operands, by head-dimension bound. The head
#: dimension 64 rows are the fastest of benchmarks/gpu_attention.py's sweep on an H100 (12:10 UTC
#: run: float32 forward 0.172 ms, backward 0.535 ms; bfloat16 0.066 / 0.164 ms at B=8 H=12
#: T=1024, causal); the others are scaled from them, unmeasured
FWD_BLOCKS = {
    "float32": {64: (128, 64, 4, 2), 128: (128, 64, 8, 2), 256: (64, 32, 8, 2)},
    "half": {64: (64, 64, 4, 3), 128: (64, 64, 8, 3), 256: (64, 32, 8, 2)},
}
BWD_BLOCKS = {
    "float32": {64: (64, 64, 4, 2), 128: (64, 64, 8, 2), 256: (32, 32, 8, 1)},
    "half": {64: (64, 64, 4, 3), 128: (64, 64, 8, 2), 256: (32, 32, 8, 1)},
}
_KERNELS: dict = {}  # interpreting? -> {name: @triton.jit kernel} (triton is optional)


def _blocks(table, hd: int, interpret: bool):
    bd = max(16, 1 << (hd - 1).bit_length())
    if interpret:  # (the interpreter runs NumPy on every block: small ones keep it quick)
        return 16, 16, 1, 1, bd
    for bound in sorted(table):
        if bd <= bound:
            return (*table[bound], bd)
    return (*table[max(table)], bd)


# the kernels' helpers (module globals: kernels resolve them by name); the reductions combine with
# these rather than call tl.sum/tl.max, which Triton's interpreter cannot run unless
# TRITON_INTERPRET was set before triton was first imported (as in prelude.py)
_mm = _add = _max = None


def _kernels():
    """The kernels, built on first use in each mode (``triton.jit`` makes interpreter functions
    when ``TRITON_INTERPRET=1`` was set by then; the GPU's never change mode)."""
    global _mm, _add, _max
    interp = config.triton_interpret()
    if interp in _KERNELS:
        return _KERNELS[interp]
    import triton
    import triton.language as tl

    if interp:
        interpreter.index_scalars()  # (loops over ``S`` and ``T``)

    @triton.jit
    def mm(a, b, PREC: tl.constexpr, UP: tl.constexpr):
        # (UP: Triton's interpreter multiplies half-precision blocks wrongly; float32 there)
        if UP:
            return tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
        return tl.dot(a, b, input_precision=PREC)

    @triton.jit
    def add(a, b):
        return a + b

    @triton.jit
    def maximum(a, b):
        return tl.maximum(a, b)

    _mm, _add, _max = mm, add, maximum

    @triton.jit
    def fwd(Q, K, V, O, L, sq_b, sq_h, sq_t, sq_d, sk_b, sk_h, sk_s, sk_d, sv_b, sv_h, sv_s,
            sv_d, H, T, S, qk_scale,
            HD: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr,
            CAUSAL: tl.constexpr, PREC: tl.constexpr, UP: tl.constexpr):  # fmt: skip
        pid = tl.program_id(0)
        bh = tl.program_id(1)
        b = bh // H
        h = bh % H
        rm = pid * BM + tl.arange(0, BM)
        rn = tl.arange(0, BN)
        rd = tl.arange(0, BD)
        dmask = rd < HD
        q = tl.load(
            Q + b * sq_b + h * sq_h + rm[:, None] * sq_t + rd[None, :] * sq_d,
            mask=(rm[:, None] < T) & dmask[None, :],
            other=0.0,
        )
        kp = K + b * sk_b + h * sk_h
        vp = V + b * sv_b + h * sv_h
        m_i = tl.full([BM], float("-inf"), tl.float32)
        l_i = tl.full([BM], 0.0, tl.float32)
        acc = tl.full([BM, BD], 0.0, tl.float32)
        hi = S
        if CAUSAL:
            hi = tl.minimum(S, (pid + 1) * BM)
        for start in range(0, hi, BN):
            cn = start + rn
            k = tl.load(
                kp + cn[None, :] * sk_s + rd[:, None] * sk_d,
                mask=(cn[None, :] < S) & dmask[:, None],
                other=0.0,
            )
            s = _mm(q, k, PREC, UP) * qk_scale
            keep = cn[None, :] < S
            if CAUSAL:
                keep = keep & (cn[None, :] <= rm[:, None])
            s = tl.where(keep, s, float("-inf"))
            m_new = tl.maximum(m_i, tl.reduce(s, 1, _max))
            alpha = tl.math.exp2(m_i - m_new)
            p = tl.math.exp2(s - m_new[:, None])
            l_i = l_i * alpha + tl.reduce(p, 1, _add)
            v = tl.load(
                vp + cn[:, None] * sv_s + rd[None, :] * sv_d,
                mask=(cn[:, None] < S) & dmask[None, :],
                other=0.0,
            )
            acc = acc * alpha[:, None] + _mm(p.to(v.dtype), v, PREC, UP)
            m_i = m_new
        acc = acc / l_i[:, None]
        out = O + bh * T * HD + rm[:, None] * HD + rd[None, :]
        tl.store(out, acc.to(O.dtype.element_ty), mask=(rm[:, None] < T) & dmask[None, :])
        # (m_i and exp2 are in units of log2: the natural log-sum-exp of the scaled scores)
        lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453
        tl.store(L + bh * T + rm, lse, mask=rm < T)

    @triton.jit
    def bwd_dkdv(Q, K, V, DELTA, L, DO, DK, DV, sq_b, sq_h, sq_t, sq_d, sk_b, sk_h, sk_s, sk_d,
                 sv_b, sv_h, sv_s, sv_d, so_b, so_h, so_t, so_d, H, T, S, qk_scale, scale,
                 HD: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr,
                 CAUSAL: tl.constexpr, PREC: tl.constexpr, UP: tl.constexpr):  # fmt: skip
        pid = tl.program_id(0)
        bh = tl.program_id(1)
        b = bh // H
        h = bh % H
        rn = pid * BN + tl.arange(0, BN)
        rm0 = tl.arange(0, BM)
        rd = tl.arange(0, BD)
        dmask = rd < HD
        nmask = (rn[:, None] < S) & dmask[None, :]
        k = tl.load(K + b * sk_b + h * sk_h + rn[:, None] * sk_s + rd[None, :] * sk_d,
                    mask=nmask, other=0.0)  # fmt: skip
        v = tl.load(V + b * sv_b + h * sv_h + rn[:, None] * sv_s + rd[None, :] * sv_d,
                    mask=nmask, other=0.0)  # fmt: skip
        qp = Q + b * sq_b + h * sq_h
        dop = DO + b * so_b + h * so_h
        dk = tl.full([BN, BD], 0.0, tl.float32)
        dv = tl.full([BN, BD], 0.0, tl.float32)
        lo = 0
        if CAUSAL:
            lo = (pid * BN // BM) * BM
        for start in range(lo, T, BM):
            rm = start + rm0
            mmask = (rm[:, None] < T) & dmask[None, :]
            q = tl.load(qp + rm[:, None] * sq_t + rd[None, :] * sq_d, mask=mmask, other=0.0)
            do = tl.load(dop + rm[:, None] * so_t + rd[None, :] * so_d, mask=mmask, other=0.0)
            delta = tl.load(DELTA + bh * T + rm, mask=rm < T, other=0.0)
            lse = tl.load(L + bh * T + rm, mask=rm < T, other=0.0) * 1.4426950408889634
            st = _mm(k, tl.trans(q), PREC, UP) * qk_scale  # (BN, BM): s^T
            pt = tl.math.exp2(st - lse[None, :])
            keep = rm[None, :] < T
            if CAUSAL:
                keep = keep & (rn[:, None] <= rm[None, :])
            pt = tl.where(keep, pt, 0.0)
            dv += _mm(pt.to(do.dtype), do, PREC, UP)
            dpt = _mm(v, tl.trans(do), PREC, UP)
            dst = pt * (dpt - delta[None, :]) * scale
            dk += _mm(dst.to(q.dtype), q, PREC, UP)
        out = bh * S * HD + rn[:, None] * HD + rd[None, :]
        tl.store(DK + out, dk.to(DK.dtype.element_ty), mask=nmask)
        tl.store(DV + out, dv.to(DV.dtype.element_ty), mask=nmask)

    @triton.jit
    def bwd_dq(Q, K, V, O, L, DO, DQ, DELTA, sq_b, sq_h, sq_t, sq_d, sk_b, sk_h, sk_s, sk_d,
               sv_b, sv_h, sv_s, sv_d, so_b, so_h, so_t, so_d, H, T, S, qk_scale, scale,
               HD: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BD: tl.constexpr,
               CAUSAL: tl.constexpr, PREC: tl.constexpr, UP: tl.constexpr):  # fmt: skip
        pid = tl.program_id(0)
        bh = tl.program_id(1)
        b = bh // H
        h = bh % H
        rm = pid * BM + tl.arange(0, BM)
        rn0 = tl.arange(0, BN)
        rd = tl.arange(0, BD)
        dmask = rd < HD
        mmask = (rm[:, None] < T) & dmask[None, :]
        q = tl.load(Q + b * sq_b + h * sq_h + rm[:, None] * sq_t + rd[None, :] * sq_d,
                    mask=mmask, other=0.0)  # fmt: skip
        do = tl.load(DO + b * so_b + h * so_h + rm[:, None] * so_t + rd[None, :] * so_d,
                     mask=mmask, other=0.0)  # fmt: skip
        o = tl.load(O + bh * T * HD + rm[:, None] * HD + rd[None, :], mask=mmask, other=0.0)
        delta = tl.reduce(do.to(tl.float32) * o.to(tl.float32), 1, _add)
        tl.store(DELTA + bh * T + rm, delta, mask=rm < T)  # (for the dk/dv kernel)
        lse = tl.load(L + bh * T + rm, mask=rm < T, other=0.0) * 1.4426950408889634
        kp = K + b * sk_b + h * sk_h
        vp = V + b * sv_b + h * sv_h
        dq = tl.full([BM, BD], 0.0, tl.float32)
        hi = S
        if CAUSAL:
            hi = tl.minimum(S, (pid + 1) * BM)
        for start in range(0, hi, BN):
            cn = start + rn0
            cmask = (cn[:, None] < S) & dmask[None, :]
            k = tl.load(kp + cn[:, None] * sk_s + rd[None, :] * sk_d, mask=cmask, other=0.0)
            v = tl.load(vp + cn[:, None] * sv_s + rd[None, :] * sv_d, mask=cmask, other=0.0)
            s = _mm(q, tl.trans(k), PREC, UP) * qk_scale
            p = tl.math.exp2(s - lse[:, None])
            keep = cn[None, :] < S
            if CAUSAL:
                keep = keep & (cn[None, :] <= rm[:, None])
            p = tl.where(keep, p, 0.0)
            dp = _mm(do, tl.trans(v), PREC, UP)
            ds = p * (dp - delta[:, None]) * scale
            dq += _mm(ds.to(k.dtype), k, PREC, UP)
        tl.store(DQ + bh * T * HD + rm[:, None] * HD + rd[None, :], dq.to(DQ.dtype.element_ty),
                 mask=mmask)  # fmt: skip

    _KERNELS[interp] = dict(fwd=fwd, bwd_dkdv=bwd_dkdv, bwd_dq=bwd_dq)
    return _KERNELS[interp]


class FlashStep(HostStep):
    """The host step of a ``flash_attention`` (``bwd`` False) or ``flash_attention_bwd``
    equation: ``torch`` launches the Triton kernels on the step's flat device tensors;
    ``__call__`` is the NumPy reference (the primitive's eager implementation)."""

    __slots__ = ("bwd", "tf32")
    label = "flash attention"
    graph_safe = True  # (kernel launches on the current stream only)

    def __init__(self, prim, params, in_avals, out_avals, tf32: bool):
        super().__init__(prim, params, in_avals, out_avals)
        self.bwd = prim is flash_attention_bwd_p
        self.tf32 = tf32

    def torch(self, ins, outs):
        """The kernels on the flat tensors ``ins`` into ``outs``."""
        ks = _kernels()
        p = self.params
        views = p["views"]
        q = self.in_avals[0]
        B, H, T, S, hd = p["shape"]
        flat = [s for _, st in views[:3] for s in st]
        # (each operand from its view's offset: a flat tensor's slice is a view, no copy)
        ins = list(ins)
        for i, j in ((0, 0), (1, 1), (2, 2), (5, 3)):
            if i < len(ins) and j < len(views) and views[j][0]:
                ins[i] = ins[i][views[j][0] :]
        interp = config.triton_interpret()
        f32 = np.dtype(q.dtype) == np.float32
        prec = "tf32" if self.tf32 and f32 else "ieee"
        kind = "float32" if f32 else "half"
        scale = float(p["scale"])
        qk_scale = scale * 1.4426950408889634
        if not self.bwd:
            bm, bn, warps, stages, bd = _blocks(FWD_BLOCKS[kind], hd, interp)
            grid = (-(-T // bm), B * H)
            ks["fwd"][grid](
                ins[0], ins[1], ins[2], outs[0], outs[1], *flat, H, T, S, qk_scale,
                HD=hd, BM=bm, BN=bn, BD=bd, CAUSAL=bool(p["causal"]), PREC=prec, UP=interp,
                num_warps=warps, num_stages=stages,
            )  # fmt: skip
            return
        do_st = views[3][1]
        bm, bn, warps, stages, bd = _blocks(BWD_BLOCKS[kind], hd, interp)
        import torch  # (optional dependency: only a Triton program calls this)

        # delta = rowsum(do * o): the dq kernel stores it, the dk/dv kernel reads it
        delta = torch.empty(B * H * T, dtype=torch.float32, device=ins[0].device)
        common = dict(HD=hd, BM=bm, BN=bn, BD=bd, CAUSAL=bool(p["causal"]), PREC=prec, UP=interp,
                      num_warps=warps, num_stages=stages)  # fmt: skip
        ks["bwd_dq"][(-(-T // bm), B * H)](
            *ins[:6], outs[0], delta, *flat, *do_st, H, T, S, qk_scale, scale, **common
        )
        q_, k_, v_, _, lse, do = ins[:6]
        ks["bwd_dkdv"][(-(-S // bn), B * H)](
            q_, k_, v_, delta, lse, do, outs[1], outs[2], *flat, *do_st, H, T, S, qk_scale, scale,
            **common,
        )  # fmt: skip


def _lowering(prim):
    def rule(g, ins, avals, **params):
        in_avals = [ShapedArray(x.shape, x.dtype) for x in ins]
        # the products' precision, as the ``dot`` kernels read it (lowering/triton/dot.py)
        tf32 = config.matmul_precision() != "float32"
        step = FlashStep(prim, params, in_avals, list(avals), tf32)
        return lower_to_loop(
            g, ins, list(avals), "host", callback=step, in_avals=in_avals, n_out=len(avals)
        )

    return rule


lowerings[flash_attention_p] = _lowering(flash_attention_p)
lowerings[flash_attention_bwd_p] = _lowering(flash_attention_bwd_p)

__all__ = ["FWD_BLOCKS", "BWD_BLOCKS", "FlashStep", "fuse_attention"]
