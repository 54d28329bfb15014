"""Flash attention on the CPU: the C++ steps of ``flash_attention`` and ``flash_attention_bwd``
(``functx/transforms/attention.py``: the pass that finds attention in a program; for the CPU,
``lowering/compile.py`` runs it, through ``fuse``, on a program-cache miss, for float32 attention:
``DTYPES``).

The equations lower as on the GPU (``lowering/triton/attention.py``'s rule: a host step) and
``loops._host`` hands the step here, which writes a call of the C++ steps in the program (no
Python step). The steps (``fx_attention.cpp``) are fixed code, a library per padded head
dimension (``cpp/native.py``: built at install time for ``toolchain.ATTENTION_DP``, else in the
cache while the program compiles), which the programs call through pointers ``give`` sets before
their first run: compiled in each program, their templates cost 0.56-0.65 s of gcc CPU, and the
GPT block's empty-cache first call 0.3 s (session 36). Per (batch, head) on one thread (the pairs
shared out over the program's OpenMP threads):

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

import re

import numpy as np

from functx.lowering.cpp import native
from functx.transforms.attention import fuse_attention

#: the operand dtypes the C++ steps take (``jit`` fuses attention on the CPU for these only)
DTYPES = frozenset({np.dtype(np.float32)})


def fuse(closed):
    """``closed`` with its attention chains of ``DTYPES`` as flash steps (``fuse_attention``;
    ``compile.py`` runs it on a program-cache miss, before lowering)."""
    return fuse_attention(closed, DTYPES)


#: the C++ steps: a fixed library (``cpp/native.py``) per padded head dimension ``DP`` (a multiple
#: of 16), ``fx_attention<DP>``, compiled from ``fx_attention.cpp`` with ``-DFX_FA_DP=<DP>``: at
#: install time for ``toolchain.ATTENTION_DP``, else in the cache when a program needs it
SOURCE_FILE = "fx_attention.cpp"


_libraries: dict = {}


def library(dp: int) -> native.Library:
    """The steps' library for the padded head dimension ``dp`` (started: loaded, or being
    built in the cache)."""
    lib = _libraries.get(dp)
    if lib is None:
        lib = _libraries.setdefault(
            dp, native.Library(f"fx_attention{dp}", SOURCE_FILE, [f"-DFX_FA_DP={dp}"], True)
        )
    lib.start()
    return lib


def give(program, source: str) -> None:
    """Give a loaded program the steps of every head dimension its ``source`` calls (before its
    first run: ``runtime.Executable.run``), their libraries built first where they are being
    built."""
    for dp in sorted({int(m) for m in re.findall(r"fx_fa_lib_fwd(\d+)\b", source)}):
        library(dp).give(
            program, {f"fx_fa_lib_fwd{dp}": "fx_fa_fwd_lib", f"fx_fa_lib_bwd{dp}": "fx_fa_bwd_lib"}
        )


# (the steps' signatures, and per head dimension the program's two pointers: weak, one variable
# for every translation unit; give sets them)
_TYPES = """typedef int (*fx_fa_fwd_t)(const float*, const float*, const float*, float*, float*,
                           int64_t, int64_t, int64_t, int64_t, int64_t, const int64_t*,
                           const int64_t*, const int64_t*, float, bool);
typedef int (*fx_fa_bwd_t)(const float*, const float*, const float*, const float*, const float*,
                           const float*, float*, float*, float*, int64_t, int64_t, int64_t,
                           int64_t, int64_t, const int64_t*, const int64_t*, const int64_t*,
                           const int64_t*, float, bool);
"""
_POINTERS = """extern "C" {{
__attribute__((weak)) fx_fa_fwd_t fx_fa_lib_fwd{0} = nullptr;
__attribute__((weak)) fx_fa_bwd_t fx_fa_lib_bwd{0} = nullptr;
}}
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
    dp = -(-D // 16) * 16
    library(dp)  # (loaded, or built in the cache while the program compiles)
    for sub in (_TYPES, _POINTERS.format(dp)):
        if sub not in prog.subs:
            prog.subs.append(sub)
    views = p["views"]
    bufs = [f"(const float*)({n.buf}) + {off}LL" for n, (off, _) in zip(ins, views)]
    strides = [
        f"const int64_t fa_s{i}[4] = {{{', '.join(f'{s}LL' for s in st)}}};"
        for i, (_, st) in enumerate(views)
    ]
    if prim == "flash_attention":
        args = [*bufs[:3], *(f"(float*)({n.buf})" for n in outs)]
        ss = "fa_s0, fa_s1, fa_s2"
        fn = f"fx_fa_lib_fwd{dp}"
    else:  # (o and lse: the forward's outputs, stored whole; do: a view)
        do = f"(const float*)({ins[5].buf}) + {views[3][0]}LL"
        args = [*bufs[:3], f"(const float*)({ins[3].buf})", f"(const float*)({ins[4].buf})", do]
        args += [f"(float*)({n.buf})" for n in outs]
        ss = "fa_s0, fa_s1, fa_s2, fa_s3"
        fn = f"fx_fa_lib_bwd{dp}"
    scale, causal = float(p["scale"]), "true" if p["causal"] else "false"
    prog.body += [
        f"  // kernel {k.index}: {prim} (cpp/attention.py, in place of an fx_host step)",
        "  {",
        *("    " + s for s in strides),
        f"    if (!{fn} || {fn}({', '.join(args)}, {B}LL, {H}LL, {T}LL, {S}LL, {D}LL, {ss}, "
        f"{scale!r}f, {causal})) return 1;  // (a workspace allocation failed)",
        "  }",
    ]
    return True
