"""Triton matrix products for the shapes where cuBLAS leaves the H100 idle: small training-step
products (a batch of 128 rows against a 1024-wide layer) whose output has too few 128x128 tiles
to fill 132 SMs, which cuBLAS runs as a split-K GEMM plus a separate reduction kernel.

``kernels(p, cfg)`` writes one product as Triton source: a tiled ``tl.dot`` loop over the
contraction with the operands read in their stored layouts (a transposed operand is a stride, never
a copy), TF32 or half-precision inputs and float32 accumulation. With ``cfg.split`` > 1 the
contraction is cut into that many slices, each program storing a float32 partial tile, and a
second kernel adds the partials in a fixed order (every call gives the same bits, unlike atomics).

``choose(p)`` picks the configuration from ``TABLE``, rules by shape class measured on an H100
(``benchmarks/gpu_step_kernels.py --sweep``); None keeps the product on cuBLAS (every shape the
table does not name: the GPT block's products, float64, integers, full-precision float32). The
configuration is a constant of the generated source, so there is no tuning on a user's call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: whether ``dot.render`` may emit Triton products (False: cuBLAS for every product)
TRITON_GEMM = True
#: whether TF32 products round their operands to TF32 first (else the tensor cores truncate)
ROUND_TF32 = True


@dataclass(frozen=True)
class Product:
    """``out[b] = op(a[b]) @ op(b[b])`` on flat buffers: ``a`` holds (m, k) or, with ``ta``, (k,
    m) per batch; ``b`` holds (k, n) or, with ``tb``, (n, k); ``out`` is (batch, m, n)."""

    batch: int
    m: int
    k: int
    n: int
    ta: bool
    tb: bool
    dtype: str  # the operands' and result's dtype name: "float32", "bfloat16", "float16"
    tf32: bool  # float32 inputs rounded to TF32 (the default matmul precision)


@dataclass(frozen=True)
class Config:
    bm: int  # rows of the output tile
    bn: int  # columns of the output tile
    bk: int  # contraction elements per step
    split: int = 1  # slices of the contraction (partials added by a second kernel)
    warps: int = 4
    stages: int = 3  # software pipelining depth of the contraction loop

    def __str__(self):
        return f"{self.bm}x{self.bn}x{self.bk}/s{self.split}/w{self.warps}/p{self.stages}"


# the comment marking the line that stores the product (``dot.drop_unread_products``)
PRODUCT_STORE = "# the product"

_DTYPES = {"float32": "tl.float32", "bfloat16": "tl.bfloat16", "float16": "tl.float16"}

# Shape classes of single (unbatched) TF32 products -> configuration, first match wins:
# (predicate on a Product, Config). Each is the fastest of 7 to 88 configurations for the products
# of issue 20's MLP, CNN and DP-SGD steps on an H100 80GB, TF32 operands rounded (session 36,
# run 2 of ``benchmarks/gpu_step_kernels.py --sweep``: us per product in a CUDA graph, against
# cuBLAS's; the epilogue these products may take is not in these figures). Shapes no rule names
# stay on cuBLAS: the GPT block's products (up to 2x slower here), batched ones, other dtypes.
TABLE: list = [
    # a contraction of at most 16 (a 3x3 one-channel convolution's taps, a 10-class gradient):
    # (100352, 9) x (9, 16) 4.37 us against cuBLAS's 13.48, (128, 10) x (10, 1568) b^T 2.10
    # against 7.34; not (8192, 16) x (16, 512) b^T (Mamba: 8.23 against 7.92)
    (lambda p: p.k <= 16 and 4096 <= p.m * p.n <= 1 << 21, Config(32, 16, 16, 1, 2, 4)),
    # a tiny output over a long contraction (a convolution's weight gradient over every pixel of
    # the batch): (9, 100352) x (100352, 16) a^T in 256 slices, 6.55 against 19.04
    (lambda p: p.m * p.n <= 4096 and p.k >= 16384, Config(16, 16, 32, 256, 2, 4)),
    # a narrow output (a 10-class layer) over a contraction of 512 to 4096, in 16 slices:
    # (128, 1024) x (1024, 10) 4.05 against 7.22, (128, 1568) x (1568, 10) 4.22 against 7.61
    (lambda p: p.n <= 16 and 512 <= p.k <= 4096 and p.m <= 1024, Config(16, 16, 32, 16, 2, 4)),
    # ... over a short contraction, and products of at most 256 in every axis: (1024, 128) x
    # (128, 10) a^T 2.36 against 4.24, (128, 256) x (256, 256) 2.94 against 5.28, b^T 2.67
    # against 5.24, (256, 128) x (128, 256) a^T 2.73 against 4.09
    (
        lambda p: (p.n <= 16 and p.k <= 256 and p.m <= 4096) or max(p.m, p.n, p.k) <= 256,
        Config(16, 16, 32, 1, 2, 4),
    ),
    # a weight gradient over a batch of at most 256 rows, a^T b: (1024, 128) x (128, 1024) 6.27
    # against 5.80, (784, 128) x (128, 1024) 6.40 against 5.52: slower alone, but the weight's
    # SGD update becomes its epilogue (dot.py), where cuBLAS needs a pass over the gradient
    (
        lambda p: p.ta and not p.tb and p.k <= 256 and 256 < min(p.m, p.n) <= max(p.m, p.n) <= 2048,
        Config(128, 32, 32, 1, 4, 4),
    ),
    # a batch of at most 256 rows times a weight, a b^T (an input gradient): (128, 1024) x
    # (1024, 1024) 7.45 against 8.08
    (
        lambda p: p.tb and not p.ta and p.m <= 256 and 256 < min(p.n, p.k) <= max(p.n, p.k) <= 2048,
        Config(64, 64, 64, 4, 4, 3),
    ),
    # ... a b (a forward layer): (128, 784) x (784, 1024) 7.79 against 8.40; (128, 1024) x
    # (1024, 1024) 8.02 against 8.36
    (
        lambda p: (
            not p.ta and not p.tb and p.m <= 256 and 256 < min(p.n, p.k) and p.k * p.n < 1 << 20
        ),
        Config(32, 32, 32, 2, 2, 4),
    ),
    (
        lambda p: (
            not p.ta and not p.tb and p.m <= 256 and 256 < min(p.n, p.k) <= max(p.n, p.k) <= 2048
        ),
        Config(32, 128, 64, 4, 4, 3),
    ),
]


def choose(p: Product) -> Config | None:
    """The Triton configuration for product ``p``, or None to keep it on cuBLAS."""
    if not TRITON_GEMM or p.dtype != "float32" or not p.tf32 or p.batch != 1:
        return None  # (the table's classes are measured for these only)
    if min(p.m, p.n, p.k) < 1:
        return None
    for rule, cfg in TABLE:
        if rule(p):
            return cfg
    return None


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def kernels(
    name: str,
    p: Product,
    cfg: Config,
    ws: str = "ws",
    round_tf32: bool | None = None,
    epilogue=None,
    column_sums: str | None = None,
):
    """Triton source for product ``p`` with configuration ``cfg``.

    Returns ``(defs, launches)``: the ``@triton.jit`` definitions (strings) and the launches in
    order, each ``(kernel name, (grid0, grid1), buffer names, warps)``. The product kernel takes
    ``(a, b, out)``, or ``(a, b, ws)`` with a split contraction, ``ws`` then being a float32
    workspace of ``split * batch * m * n`` elements that ``name + "_fold"`` ``(ws, out)`` adds up.

    ``epilogue(flat, mask, value, indent) -> (lines, buffers)``: code run where the product is
    stored (in the fold with a split contraction) on the elements at flat offsets ``flat`` of the
    output, under ``mask``, the product's float32 values being ``value``; the buffers it reads
    or writes are added to that kernel's parameters (a pointwise consumer: ``dot.py``).

    ``column_sums``: a buffer that the programs of the first row of tiles (first slice) also
    fill with the sums of ``b`` over the contraction, ``b`` being (k, n) (a bias gradient beside
    a weight gradient: one reduction kernel fewer, ``dot.py``); the kernel takes it last.
    """
    bm, bn, bk, split = cfg.bm, cfg.bn, cfg.bk, cfg.split
    m, n, k = p.m, p.n, p.k
    tm, tn = _cdiv(m, bm), _cdiv(n, bn)
    chunk = _cdiv(_cdiv(k, split), bk) * bk  # contraction elements per slice (whole steps)
    split = _cdiv(k, chunk)  # (no empty slice)
    sam, sak = (1, m) if p.ta else (k, 1)  # strides of a's (row, contraction) axes
    sbk, sbn = (1, k) if p.tb else (n, 1)
    prec = '"tf32"' if p.dtype == "float32" and p.tf32 else '"ieee"'
    out_t = _DTYPES[p.dtype]

    def axis(v, start, size, block):
        """One tile axis's offsets and, past the edge, the same clamped into range (rows past
        the edge read valid rows; their results are never stored)."""
        clamp = f" % {size}" if size % block else ""
        return [f"    {v} = {start} * {block} + tl.arange(0, {block})", f"    {v}c = {v}{clamp}"]

    body = ["    pid = tl.program_id(0)", "    z = tl.program_id(1)"]
    body += [f"    pm = pid // {tn}", f"    pn = pid % {tn}"]
    if split > 1:
        body += [f"    bz = z // {split}", f"    ks = z % {split}"]
    else:
        body += ["    bz = z", "    ks = 0"]
    body += axis("rm", "pm", m, bm) + axis("rn", "pn", n, bn)
    body += [
        f"    rk = tl.arange(0, {bk})",
        f"    pa = a + bz * {m * k} + rmc[:, None] * {sam} + rk[None, :] * {sak}",
        f"    pb = b + bz * {k * n} + rk[:, None] * {sbk} + rnc[None, :] * {sbn}",
        f"    acc = tl.full([{bm}, {bn}], 0.0, tl.float32)",
        f"    k0 = ks * {chunk}",
        f"    k1 = tl.minimum(k0 + {chunk}, {k})",
        f"    for kk in tl.range(k0, k1, {bk}, num_stages={cfg.stages}):",
    ]
    if k % bk or chunk % bk:
        body += [
            f"        km = (kk + rk) < {k}",
            f"        x = tl.load(pa + kk * {sak}, mask=km[None, :], other=0.0)",
            f"        y = tl.load(pb + kk * {sbk}, mask=km[:, None], other=0.0)",
        ]
    else:
        body += [
            f"        x = tl.load(pa + kk * {sak})",
            f"        y = tl.load(pb + kk * {sbk})",
        ]
    if p.dtype == "float32" and p.tf32 and (ROUND_TF32 if round_tf32 is None else round_tf32):
        # operands rounded to TF32's 10 mantissa bits, to nearest (ties away from zero, as
        # cuBLAS's TF32 kernels do): the tensor cores drop the low bits, a bias that made the
        # MLP step's results 10x further from JAX's (1.5e-3 against 1.5e-4, H100)
        # (a NaN stays itself: adding to its bits could carry into the sign)
        body += [
            f"        {v} = tl.where({v} == {v}, (({v}.to(tl.int32, bitcast=True) + 4096) "
            f"& -8192).to(tl.float32, bitcast=True), {v})"
            for v in ("x", "y")
        ]
    body.append(f"        acc = tl.dot(x, y, acc, input_precision={prec})")
    cs = [] if column_sums is None else ["csum"]
    if cs:  # (after the product's loop, from L2: the loop's pipeline stays as it is)
        assert not p.tb and p.batch == 1
        ck = min(1 << (k - 1).bit_length(), max(16, 4096 // bn))
        body += [
            f"    if (pid < {tn}) & (z == 0):  # the column sums of b ({bn} columns each)",
            f"        cs = tl.full([{bn}], 0.0, tl.float32)",
            f"        for kc in range(0, {k}, {ck}):",
            f"            rc = kc + tl.arange(0, {ck})",
            f"            col = tl.load(b + rc[:, None] * {n} + rnc[None, :], "
            f"mask=rc[:, None] < {k}, other=0.0)",
            f"            cs += tl.reduce(col, 0, {name}_add)",
            f"        tl.store(csum + rn, cs, mask=rn < {n})",
        ]
    what = (
        f"{'batched ' if p.batch > 1 else ''}product ({m}, {k}) x ({k}, {n})"
        f"{' a^T' if p.ta else ''}{' b^T' if p.tb else ''}: tiles {cfg}"
        f"{', with column sums of b' if cs else ''}"
    )
    at = f"rm[:, None] * {n} + rn[None, :]"
    tile_mask = f"(rm[:, None] < {m}) & (rn[None, :] < {n})"
    more: list = []  # the epilogue's buffers
    add = f"@triton.jit\ndef {name}_add(u, w):\n    return u + w\n"  # (tl.reduce's: sums)
    if split == 1:
        value = "acc" if p.dtype == "float32" else f"acc.to({out_t})"
        body += [f"    flat = bz * {m * n} + {at}", f"    mask = {tile_mask}"]
        body.append(f"    tl.store(out + flat, {value}, mask=mask)  {PRODUCT_STORE}")
        if epilogue is not None:
            lines, more = epilogue("flat", "mask", "acc", "    ")
            body += lines
        params = ["a", "b", "out", *more, *cs]
        defs = [_define(name, params, body, what + (", with an epilogue" if more else ""))]
        return [add] * bool(cs) + defs, [(name, (tm * tn, p.batch * split), params, cfg.warps)]
    body.append(f"    tl.store({ws} + z * {m * n} + {at}, acc, mask={tile_mask})")
    # the fold: a block of (slices, elements) summed over the slices by one tl.reduce, whose tree
    # is fixed by the compiled kernel (the same bits every call); the epilogue follows it
    total, sp2 = p.batch * m * n, 1 << (split - 1).bit_length()
    fb = max(16, min(1 << (total - 1).bit_length(), 4096 // sp2))
    fold = [
        f"    flat = tl.program_id(0) * {fb} + tl.arange(0, {fb})",
        f"    mask = flat < {total}",
        f"    s = tl.arange(0, {sp2})[:, None]",
        f"    at = ((flat // {m * n}) * {split})[None, :] * {m * n} + s * {m * n}",
        f"    parts = tl.load({ws} + at + (flat % {m * n})[None, :], "
        f"mask=mask[None, :] & (s < {split}), other=0.0)",
        f"    v = tl.reduce(parts, 0, {name}_add)",
    ]
    value = "v" if p.dtype == "float32" else f"v.to({out_t})"
    fold.append(f"    tl.store(out + flat, {value}, mask=mask)  {PRODUCT_STORE}")
    if epilogue is not None:
        lines, more = epilogue("flat", "mask", "v", "    ")
        fold += lines
    defs = [
        add,
        _define(name, ["a", "b", ws, *cs], body, what + f", {split} partials"),
        _define(
            name + "_fold",
            [ws, "out", *more],
            fold,
            f"adds the {split} partials" + (", with an epilogue" if more else ""),
        ),
    ]
    launches = [
        (name, (tm * tn, p.batch * split), ["a", "b", ws, *cs], cfg.warps),
        (name + "_fold", (_cdiv(total, fb), 1), [ws, "out", *more], 4),
    ]
    return defs, launches


def workspace_elements(p: Product, cfg: Config) -> int:
    """Float32 elements of the partials workspace of ``p`` under ``cfg`` (0: no split)."""
    chunk = _cdiv(_cdiv(p.k, cfg.split), cfg.bk) * cfg.bk
    split = _cdiv(p.k, chunk)
    return 0 if split == 1 else split * p.batch * p.m * p.n


def _define(name, params, body, comment):
    return (
        "\n".join(["@triton.jit", f"def {name}({', '.join(params)}):", f"    # {comment}"] + body)
        + "\n"
    )


def tf32(x: np.ndarray) -> np.ndarray:
    """Float32 ``x`` rounded to TF32 (10 mantissa bits; to nearest, ties away from zero)."""
    x = np.asarray(x, np.float32)
    bits = (x.view(np.uint32).astype(np.uint64) + 4096) & 0xFFFFE000
    return np.where(np.isnan(x), x, bits.astype(np.uint32).view(np.float32))


def reference(p: Product, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NumPy float64 result of ``p`` on flat operands ``a`` and ``b`` (for checks), the
    operands rounded to TF32 first where ``p`` is a TF32 product (``ROUND_TF32``)."""
    if p.dtype == "float32" and p.tf32 and ROUND_TF32:
        a, b = tf32(a), tf32(b)
    a = np.asarray(a, np.float64).reshape(p.batch, *((p.k, p.m) if p.ta else (p.m, p.k)))
    b = np.asarray(b, np.float64).reshape(p.batch, *((p.n, p.k) if p.tb else (p.k, p.n)))
    if p.ta:
        a = a.transpose(0, 2, 1)
    if p.tb:
        b = b.transpose(0, 2, 1)
    return a @ b
