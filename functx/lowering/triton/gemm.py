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


_DTYPES = {"float32": "tl.float32", "bfloat16": "tl.bfloat16", "float16": "tl.float16"}

# Shape classes -> configuration, first match wins: (predicate on a Product, Config). Measured on
# an H100 80GB (see the module docstring); shapes matching no rule stay on cuBLAS.
TABLE: list = []


def choose(p: Product) -> Config | None:
    """The Triton configuration for product ``p``, or None to keep it on cuBLAS."""
    if not TRITON_GEMM or p.dtype not in _DTYPES or (p.dtype == "float32" and not p.tf32):
        return None
    if min(p.m, p.n, p.k) < 1:
        return None
    for rule, cfg in TABLE:
        if rule(p):
            return cfg
    return None


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def kernels(name: str, p: Product, cfg: Config, ws: str = "ws"):
    """Triton source for product ``p`` with configuration ``cfg``.

    Returns ``(defs, launches)``: the ``@triton.jit`` definitions (strings) and the launches in
    order, each ``(kernel name, (grid0, grid1), buffer names, warps)``. The product kernel takes
    ``(a, b, out)``, or ``(a, b, ws)`` with a split contraction, ``ws`` then being a float32
    workspace of ``split * batch * m * n`` elements that ``name + "_fold"`` ``(ws, out)`` adds up.
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
    body.append(f"        acc = tl.dot(x, y, acc, input_precision={prec})")
    mask = f"(rm[:, None] < {m}) & (rn[None, :] < {n})"
    at = f"rm[:, None] * {n} + rn[None, :]"
    what = (
        f"{'batched ' if p.batch > 1 else ''}product ({m}, {k}) x ({k}, {n})"
        f"{' a^T' if p.ta else ''}{' b^T' if p.tb else ''}: tiles {cfg}"
    )
    if split == 1:
        value = "acc" if p.dtype == "float32" else f"acc.to({out_t})"
        body.append(f"    tl.store(out + bz * {m * n} + {at}, {value}, mask={mask})")
        defs = [_define(name, ["a", "b", "out"], body, what)]
        return defs, [(name, (tm * tn, p.batch * split), ["a", "b", "out"], cfg.warps)]
    body.append(f"    tl.store({ws} + z * {m * n} + {at}, acc, mask={mask})")
    total = p.batch * m * n
    fb = min(1024, 1 << max(4, (total - 1).bit_length()))
    fold = [
        f"    i = tl.program_id(0) * {fb} + tl.arange(0, {fb})",
        f"    mask = i < {total}",
        f"    bz = i // {m * n}",
        f"    at = (bz * {split}) * {m * n} + i % {m * n}",
        f"    s = tl.load({ws} + at, mask=mask, other=0.0)",
    ]
    fold += [
        f"    s = s + tl.load({ws} + at + {j * m * n}, mask=mask, other=0.0)"
        for j in range(1, split)
    ]
    value = "s" if p.dtype == "float32" else f"s.to({out_t})"
    fold.append(f"    tl.store(out + i, {value}, mask=mask)")
    defs = [
        _define(name, ["a", "b", ws], body, what + f", {split} partials"),
        _define(name + "_fold", [ws, "out"], fold, f"adds the {split} partials in order"),
    ]
    launches = [
        (name, (tm * tn, p.batch * split), ["a", "b", ws], cfg.warps),
        (name + "_fold", (_cdiv(total, fb), 1), [ws, "out"], 4),
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


def reference(p: Product, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """NumPy float64 result of ``p`` on flat operands ``a`` and ``b`` (for checks)."""
    a = np.asarray(a, np.float64).reshape(p.batch, *((p.k, p.m) if p.ta else (p.m, p.k)))
    b = np.asarray(b, np.float64).reshape(p.batch, *((p.n, p.k) if p.tb else (p.k, p.n)))
    if p.ta:
        a = a.transpose(0, 2, 1)
    if p.tb:
        b = b.transpose(0, 2, 1)
    return a @ b
