"""Triton matrix products (``lowering/triton/gemm.py``): the generated GEMM and its split
contraction against NumPy float64, in every operand layout, with edge tiles and batches; a jitted
program whose products the table sends to Triton against JAX; what stays on cuBLAS. Triton's CPU
interpreter stands in for the GPU (``TRITON_INTERPRET=1``, set per test);
``FUNCTX_TEST_TRITON_GPU=1`` runs them on a CUDA GPU. TF32 products round their operands to TF32
(``gemm.ROUND_TF32``) in both, so both are held to the float64 product of the rounded operands."""

from __future__ import annotations

import importlib.util
import itertools
import os
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
jax = pytest.importorskip("jax")

import functx  # noqa: E402
from functx.lowering.triton import dot, gemm  # noqa: E402
from functx.lowering.triton.gemm import Config, Product  # noqa: E402

ON_GPU = os.environ.get("FUNCTX_TEST_TRITON_GPU", "0") not in ("", "0")
DEV = "cuda" if ON_GPU else "cpu"
TOL = 1e-5  # relative error of a float32 accumulation, against the float64 product
TF32_TOL = 5e-3  # ... of a TF32 product, against full float32 (JAX on the CPU)


@pytest.fixture(autouse=True)
def interpreter(triton_gpu):
    """Every test on Triton's interpreter, or on a CUDA GPU with FUNCTX_TEST_TRITON_GPU=1."""
    return triton_gpu


def _run(tmp_path, p: Product, cfg: Config, a, b, sums=None):
    """``gemm.kernels`` of ``(p, cfg)`` run on flat float32 (or bfloat16) tensors (``sums``:
    a float32 tensor of ``p.n`` elements for the column sums of ``b``)."""
    defs, launches = gemm.kernels("kg", p, cfg, column_sums=None if sums is None else "csum")
    path = tmp_path / f"g{abs(hash((p, cfg)))}.py"
    path.write_text("import triton\nimport triton.language as tl\n\n\n" + "\n\n".join(defs))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    tdt = torch.float32 if p.dtype == "float32" else getattr(torch, p.dtype)
    bufs = {
        "a": torch.from_numpy(a).to(DEV, tdt),
        "b": torch.from_numpy(b).to(DEV, tdt),
        "out": torch.full((p.batch * p.m * p.n,), float("nan"), dtype=tdt, device=DEV),
        "ws": torch.full((max(1, gemm.workspace_elements(p, cfg)),), float("nan"), device=DEV),
        "csum": sums,
    }
    for name, grid, params, warps in launches:
        getattr(mod, name)[grid](*[bufs[x] for x in params], num_warps=warps)
    return bufs["out"].float().cpu().numpy(), launches


RNG = np.random.default_rng(11)
# (batch, m, k, n, config): edge tiles in every axis, a split whose last slice is short, a
# contraction shorter than one step
SHAPES = [
    (1, 40, 50, 24, Config(16, 16, 16)),
    (2, 33, 70, 20, Config(16, 32, 16, split=3)),
    (1, 32, 64, 32, Config(32, 16, 32, split=2)),
    (1, 20, 9, 17, Config(16, 16, 16)),
]


@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
@pytest.mark.parametrize("case", range(len(SHAPES)))
def test_gemm_matches_numpy_float64(tmp_path, case, ta, tb):
    bz, m, k, n, cfg = SHAPES[case]
    p = Product(bz, m, k, n, ta, tb, "float32", True)
    a = RNG.standard_normal(bz * m * k).astype(np.float32)
    b = RNG.standard_normal(bz * k * n).astype(np.float32)
    got, launches = _run(tmp_path, p, cfg, a, b)
    want = gemm.reference(p, a, b)
    err = np.abs(got.reshape(want.shape) - want).max() / np.abs(want).max()
    assert err <= TOL, err
    split = gemm.workspace_elements(p, cfg) // max(1, bz * m * n)
    assert len(launches) == (2 if split > 1 else 1)
    assert launches[0][1][1] == bz * max(split, 1)


@pytest.mark.parametrize("case", [0, 1, 3])
def test_column_sums_of_b_beside_the_product(tmp_path, case):
    """With ``column_sums`` the product also stores b's sums over the contraction, in full
    float32 (not TF32: the operand as loaded, before its rounding), edge columns masked, with or
    without a split contraction; the product itself is unchanged."""
    _, m, k, n, cfg = SHAPES[case]
    p = Product(1, m, k, n, True, False, "float32", True)
    a = RNG.standard_normal(m * k).astype(np.float32)
    b = (RNG.standard_normal(k * n) * (1 + 2.0**-20)).astype(np.float32)  # (low bits set)
    sums = torch.full((n + 3,), float("nan"), device=DEV)
    got, _ = _run(tmp_path, p, cfg, a, b, sums)
    want = gemm.reference(p, a, b)
    assert np.abs(got.reshape(want.shape) - want).max() <= TOL * np.abs(want).max()
    col = b.astype(np.float64).reshape(k, n).sum(0)
    s = sums.cpu().numpy()
    assert np.abs(s[:n] - col).max() <= 1e-6 * np.abs(b).max() * k and np.isnan(s[n:]).all()


@pytest.mark.parametrize("rounded", [True, False])
def test_tf32_products_round_their_operands_to_nearest(tmp_path, monkeypatch, rounded):
    """With ``ROUND_TF32`` the result is the float64 product of the operands rounded to TF32
    (ties away from zero) up to float32 accumulation, and not that of the unrounded operands;
    NaN and infinities pass through. Without it: full float32 on the interpreter, operands
    truncated to TF32 on a GPU's tensor cores."""
    monkeypatch.setattr(gemm, "ROUND_TF32", rounded)
    p = Product(1, 16, 64, 16, False, False, "float32", True)
    a = (1 + RNG.integers(0, 1 << 13, 16 * 64) * 2.0**-23).astype(np.float32)  # low bits set
    a[5] = np.nan
    a[64 * 3 + 2] = np.inf
    b = RNG.standard_normal(64 * 16).astype(np.float32)
    got, _ = _run(tmp_path, p, Config(16, 16, 32), a, b)
    want = gemm.reference(p, a, b).reshape(-1)
    if ON_GPU and not rounded:
        cut = lambda x: (x.view(np.int32) & -8192).view(np.float32)  # noqa: E731
        want = (cut(a).astype(np.float64).reshape(16, 64) @ cut(b).reshape(64, 16)).reshape(-1)
    assert np.isnan(got[:16]).all() and np.isinf(got[48:64]).all()
    fine = np.isfinite(want)
    assert np.abs(got[fine] - want[fine]).max() <= TOL * np.abs(want[fine]).max()
    plain = (a.astype(np.float64).reshape(16, 64) @ b.reshape(64, 16)).reshape(-1)
    apart = np.abs(want[fine] - plain[fine]).max() / np.abs(plain[fine]).max()
    assert (apart > 1e-4) == (rounded or ON_GPU)


@pytest.mark.skipif(not ON_GPU, reason="the interpreter's bfloat16 tl.dot is wrong (Triton 3.9)")
def test_gemm_bfloat16_accumulates_in_float32(tmp_path):
    p = Product(1, 24, 300, 20, False, True, "bfloat16", True)
    cfg = Config(16, 16, 32, split=2)
    bf16 = lambda x: torch.from_numpy(x).to(torch.bfloat16).float().numpy()  # noqa: E731
    a = bf16(RNG.standard_normal(24 * 300).astype(np.float32))
    b = bf16(RNG.standard_normal(300 * 20).astype(np.float32))
    got, _ = _run(tmp_path, p, cfg, a, b)
    want = gemm.reference(p, a, b).reshape(-1)
    # one rounding to bfloat16 of a float32 sum (a bfloat16 accumulation would be ~100x worse)
    np.testing.assert_allclose(got, want, rtol=2**-8, atol=2**-8 * np.abs(want).max() / 50)


def test_choose_keeps_cublas_where_no_rule_says_otherwise(monkeypatch):
    p = Product(1, 128, 1024, 1024, False, False, "float32", True)
    monkeypatch.setattr(gemm, "TABLE", [(lambda q: q.m <= 128, Config(32, 64, 64))])
    assert gemm.choose(p) == Config(32, 64, 64)
    assert gemm.choose(Product(1, 4096, 1024, 1024, False, False, "float32", True)) is None
    for other in (
        Product(1, 128, 1024, 1024, False, False, "float32", False),  # full float32
        Product(1, 128, 1024, 1024, False, False, "float64", True),
        Product(1, 128, 1024, 1024, False, False, "int32", True),
    ):
        assert gemm.choose(other) is None
    monkeypatch.setattr(gemm, "TRITON_GEMM", False)
    assert gemm.choose(p) is None


def test_table_takes_the_small_steps_products_and_leaves_the_gpt_blocks_to_cublas():
    """The measured classes: every product of the MLP step (784-1024-1024-10, batch 128) is a
    Triton GEMM; the GPT block's (B*T = 8192 rows, d = 768), batched and bfloat16 ones are not."""
    P = lambda m, k, n, ta=False, tb=False, dt="float32", b=1: Product(b, m, k, n, ta, tb, dt, True)  # noqa: E731
    mlp = [P(128, 784, 1024), P(128, 1024, 1024), P(128, 1024, 10), P(1024, 128, 10, ta=True)]
    mlp += [P(128, 10, 1024, tb=True), P(1024, 128, 1024, ta=True), P(128, 1024, 1024, tb=True)]
    assert all(gemm.choose(p) is not None for p in mlp + [P(784, 128, 1024, ta=True)])
    gpt = [P(8192, 768, 2304), P(8192, 768, 768), P(8192, 3072, 768), P(768, 8192, 3072, ta=True)]
    gpt += [P(8192, 768, 3072, tb=True), P(128, 1024, 1024, dt="bfloat16")]
    gpt += [P(128, 1024, 1024, b=16), P(128, 1024, 1024, dt="float64")]
    assert all(gemm.choose(p) is None for p in gpt)


def _lowered_and_run(f, args):
    dargs = functx.device_put(args, functx.devices("gpu")[0])
    lowered = functx.jit(f, backend="triton").lower(*dargs)
    return lowered.as_text(), functx.tree_util.tree_leaves(functx.jit(f, backend="triton")(*dargs))


def _launches(text) -> int:
    return len(re.findall(r"(?m)^    _L\d+\(", text.split("\ndef run(")[1]))


def _close_to_jax(got, want):
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == np.asarray(w).dtype and np.shape(g) == np.shape(w)
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        assert np.abs(g - w).max() <= TF32_TOL * np.abs(w).max()


@pytest.mark.parametrize("split", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_jitted_training_step_on_triton_products_matches_jax(monkeypatch, split):
    """An MLP's SGD step with every product a Triton GEMM: the program launches ``_gemm``
    kernels (and their folds) and no cuBLAS call; the bias and tanh after each forward product,
    tanh's derivative after the backward ones and the weights' updates are the products'
    epilogues (in the fold with a split contraction), which give the values of separate kernels
    (the same bits on the interpreter; on an H100 the update ``p - 0.1 * g`` in a split's fold
    and in its own kernel rounded differently, 77 of 240 elements apart by at most 6e-8 in values
    up to 0.6: a fused multiply-add in one of them, by my reading); results match JAX."""
    monkeypatch.setattr(gemm, "TABLE", [(lambda q: True, Config(16, 16, 16, split=split))])
    rng = np.random.default_rng(3)
    w1, w2 = rng.standard_normal((20, 24)) / 5, rng.standard_normal((24, 10)) / 5
    x, b1 = rng.standard_normal((18, 20)), rng.standard_normal(24)
    args = [v.astype(np.float32) for v in (w1, w2, b1, x)]

    def loss(w1, w2, b1, x, np_):
        return np_.sum(np_.tanh(np_.tanh(x @ w1 + b1) @ w2) ** 2)

    def step(w1, w2, b1, x):  # (the loss and the SGD-updated parameters)
        v, g = functx.value_and_grad(lambda *p: loss(*p, x, functx.numpy), (0, 1, 2))(w1, w2, b1)
        return v, [p - 0.1 * d for p, d in zip((w1, w2, b1), g)]

    text, got = _lowered_and_run(step, args)  # (TF32: rounded operands, float32 sums)
    run = text.split("\ndef run(")[1]
    assert "_fx_dot(" not in run
    assert _launches(text) >= 5
    assert ("_fold" in text) == (split > 1)
    # the forward products' bias and tanh, the backward ones' tanh derivative and the weights'
    # updates: epilogues; the products only they read are never stored
    assert text.count(", with an epilogue") >= 4
    assert text.count(gemm.PRODUCT_STORE) < len(re.findall(r"(?m)^def k\d+_gemm\(", text))
    # b1's gradient, the batch sum of the pre-activation's gradient, is computed by w1's
    # gradient product x^T @ d from the d it reads (no reduction kernel of its own)
    assert text.count("with column sums of b") == 1
    monkeypatch.setattr(dot, "EPILOGUES", False)
    monkeypatch.setattr(dot, "COLUMN_SUMS", False)
    functx.clear_caches()
    text_apart, apart = _lowered_and_run(step, args)
    assert "with an epilogue" not in text_apart and "column sums" not in text_apart
    reductions = [len(re.findall(r"(?m)^def k\d+_reduce\(", t)) for t in (text, text_apart)]
    assert reductions[1] == reductions[0] + 1 and _launches(text_apart) > _launches(text)
    for g, a in zip(got, apart):  # (a rounding apart at most, at the inputs' scale: docstring)
        g, a = np.asarray(g, np.float64), np.asarray(a, np.float64)
        assert np.abs(g - a).max() <= 2.5e-7 * max(np.abs(a).max(), 1.0)
    jgrad = jax.value_and_grad(lambda *p: loss(*p[:3], p[3], jax.numpy), (0, 1, 2))
    v, g = jgrad(*args)
    _close_to_jax(got, [v] + [p - 0.1 * d for p, d in zip(args, g)])


def test_a_consumer_reading_other_elements_of_the_product_stays_apart(monkeypatch):
    """A pointwise kernel after a product that reads it at another element (a flip) is no
    epilogue; one reading it only at its own element and other buffers anywhere is."""
    monkeypatch.setattr(gemm, "TABLE", [(lambda q: True, Config(16, 16, 16))])
    rng = np.random.default_rng(4)
    a, b = (rng.standard_normal(s).astype(np.float32) for s in ((20, 12), (12, 18)))
    for f, fused in (
        (lambda a, b: (a @ b) * a[::-1, :1], True),
        (lambda a, b: (a @ b) * (a @ b)[::-1], False),
    ):
        text, got = _lowered_and_run(f, (a, b))
        assert ("with an epilogue" in text) == fused
        _close_to_jax(got, [jax.jit(f)(a, b)])


def test_column_sums_join_the_product_that_reads_their_operand(monkeypatch):
    """A sum of a product's second operand over the contraction (a bias gradient beside the
    weight gradient ``x^T @ g``) is computed by the product's launch, also where the scheduler
    puts the sum after it; a sum with more work (a scaled ``g``), or of another operand, keeps
    its reduction kernel. Values as without it and close to JAX."""
    monkeypatch.setattr(gemm, "TABLE", [(lambda q: True, Config(16, 16, 16))])
    rng = np.random.default_rng(5)
    x, g = (rng.standard_normal(s).astype(np.float32) for s in ((20, 12), (20, 18)))
    for f, joined in (
        (lambda x, g: (x.T @ g, g.sum(0)), True),
        (lambda x, g: (x.T @ g, g * g.sum(0)), False),
        (lambda x, g: (x.T @ (g * g.sum(0)), g.sum(0)), False),
    ):
        text, got = _lowered_and_run(f, (x, g))
        assert ("with column sums of b" in text) == joined
        assert ("_reduce(" in text) != joined
        monkeypatch.setattr(dot, "COLUMN_SUMS", False)
        functx.clear_caches()
        text_apart, apart = _lowered_and_run(f, (x, g))
        monkeypatch.setattr(dot, "COLUMN_SUMS", True)
        assert "column sums" not in text_apart
        for a, b in zip(got, apart):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-5)
        _close_to_jax(got, jax.jit(f)(x, g))
