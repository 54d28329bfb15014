"""The flash-attention rewrite (``functx/transforms/attention.py``) and its Triton kernels
(``functx/lowering/triton/attention.py``): ``jit`` on a GPU placement replaces attention written
in plain ``jnp`` (forward and gradient) by two fused equations; the results equal the unfused
program's and JAX's (kernels run in Triton's interpreter, tiny shapes); programs that need the
scores, or whose mask or scale is not the recognised one, are left as they are."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import numpy as np
import pytest
from x64util import x64_off

import functx
import functx.numpy as fnp
from functx.interpreter import eval_jaxpr
from functx.transforms import attention, outer_products, passes
from functx.transforms.attention import fuse_attention

jax = pytest.importorskip("jax")
# FUNCTX_TEST_TRITON_GPU=1: the kernel tests run on a CUDA GPU instead of Triton's interpreter
ON_GPU = os.environ.get("FUNCTX_TEST_TRITON_GPU", "0") not in ("", "0")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import workloads  # noqa: E402


def _attn(jx, T, hd, causal=True, mask=None):
    jnp = jx.numpy

    def attn(q, k, v):
        s = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(hd))
        if causal:
            keep = jnp.tril(jnp.ones((T, T), bool)) if mask is None else mask(jnp)
            s = jnp.where(keep, s, -jnp.inf)
        return jx.nn.softmax(s, axis=-1) @ v

    return attn


def _loss(jx, attn):
    # (a nonlinear reader of o: the gradient needs o and a do that depends on it)
    return jx.value_and_grad(lambda q, k, v: jx.numpy.sum(jx.numpy.sin(attn(q, k, v))), (0, 1, 2))


def _final(f, *args):
    """jit's final Jaxpr before the rewrite (passes.simplify + the outer-product pass)."""
    closed = functx.make_jaxpr(f)(*args)
    return outer_products.factor_outer_products(passes.simplify(closed))


def _flash(closed):
    return [e for e in closed.jaxpr.eqns if e.prim.name.startswith("flash")]


def _qkv(shape, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(dtype) for _ in range(3)]


def test_the_gpt_block_step_is_rewritten_reading_q_k_v_where_they_are_stored():
    c = dict(B=2, T=8, d=32, H=2, dtype="float32")
    closed = _final(workloads.program(functx, "gpt", c), *workloads.inputs("gpt", c))
    fused = fuse_attention(closed)
    text = str(fused)
    print(text)  # (the rewritten Jaxpr: two flash equations, no (B, H, T, T) value)
    fwd, bwd = _flash(fused)
    assert fwd.prim.name == "flash_attention" and bwd.prim.name == "flash_attention_bwd"
    assert fwd.params["scale"] == 0.25 and fwd.params["causal"]
    # q, k, v: slices of the fused (B, T, 3d) product, heads split and transposed (views
    # into it: offsets 0, d, 2d; strides along b, h, t, d); do: the (B, T, d) cotangent
    assert fwd.params["shape"] == (2, 2, 8, 8, 16)
    fused_qkv = (8 * 96, 16, 96, 1)
    assert fwd.params["views"] == ((0, fused_qkv), (32, fused_qkv), (64, fused_qkv))
    assert bwd.params["views"] == (*fwd.params["views"], (0, (8 * 32, 16, 32, 1)))
    assert [a.aval.shape for a in fwd.invars] == [(2, 8, 96)] * 3
    assert "f32[2,2,8,8]" in str(closed) and "f32[2,2,8,8]" not in text
    assert len(fused.jaxpr.eqns) < len(closed.jaxpr.eqns)


def test_the_rewritten_program_computes_the_same_values_eagerly(causal=True):
    # (the primitives' NumPy references, which compute in float32 as the kernels do)
    T, hd = 6, 4
    q, k, v = _qkv((2, 2, T, hd))
    f = _loss(functx, _attn(functx, T, hd, causal))
    closed = _final(f, q, k, v)
    fused = fuse_attention(closed)
    assert [e.params["causal"] for e in _flash(fused)] == [causal, causal]
    got = eval_jaxpr(fused.jaxpr, fused.consts, q, k, v)
    with jax.default_matmul_precision("highest"):  # (float32 products on a GPU too)
        want = jax.jit(_loss(jax, _attn(jax, T, hd, causal)))(q, k, v)
    for g, w in zip(got, jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=2e-6)


def _nn_style(jx, T, hd):
    """Attention as nn.dot_product_attention computes it, with (B, T, N, H) operands: logits
    from operands widened to float32, a finite mask fill, probabilities cast back."""
    jnp = jx.numpy

    def f(q, k, v):
        wide = [jnp.astype(a, np.float32) for a in (q, k)]
        logits = jnp.einsum("btnh,bsnh->bnts", *wide) * np.float32(1 / math.sqrt(hd))
        keep = jnp.tril(jnp.ones((T, T), bool))
        logits = jnp.where(keep, logits, np.float32(-0.7 * np.finfo(np.float32).max))
        probs = jnp.astype(jx.nn.softmax(logits, axis=-1), k.dtype)
        return jnp.einsum("bnts,bsnh->btnh", probs, v)

    return f


def test_the_nn_style_form_in_bfloat16():
    T, hd = 6, 4
    q, k, v = (a.astype(fnp.bfloat16) for a in _qkv((2, T, 2, hd)))
    f = functx.grad(
        lambda *a: fnp.sum(_nn_style(functx, T, hd)(*a).astype(np.float32) ** 2), (0, 1, 2)
    )
    closed = _final(f, q, k, v)
    fused = fuse_attention(closed)
    assert [e.params["views"][0] for e in _flash(fused)] == [(0, (48, 4, 8, 1))] * 2
    got = eval_jaxpr(fused.jaxpr, fused.consts, q, k, v)
    want = eval_jaxpr(closed.jaxpr, closed.consts, q, k, v)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype == fnp.bfloat16
        np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(w, np.float32), atol=0.06)


def test_the_backward_reference_is_the_derivative_of_the_forward():
    # (finite differences in float64 of <o, do> against flash_attention_bwd's reference)
    rng = np.random.default_rng(1)
    q, k, v, do = (rng.standard_normal((1, 2, 5, 3)) for _ in range(4))
    views = ((0, (30, 15, 3, 1)),) * 3
    p = {"scale": 0.7, "causal": True, "shape": (1, 2, 5, 5, 3), "views": views}
    o, lse = attention._fwd_impl(q, k, v, **p)
    grads = attention._bwd_impl(q, k, v, o, lse, do, **{**p, "views": views + views[:1]})
    d = rng.standard_normal(q.shape)
    for i, g in enumerate(grads):
        args = [q, k, v]
        hi = [a + 1e-6 * d if j == i else a for j, a in enumerate(args)]
        lo = [a - 1e-6 * d if j == i else a for j, a in enumerate(args)]
        fd = (
            np.sum(attention._fwd_impl(*hi, **p)[0] * do)
            - np.sum(attention._fwd_impl(*lo, **p)[0] * do)
        ) / 2e-6
        np.testing.assert_allclose(np.sum(g * d), fd, rtol=1e-6)


def _leaky(jx, T, hd):  # p is also returned
    jnp = jx.numpy

    def f(q, k, v):
        s = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(hd))
        p = jx.nn.softmax(jnp.where(jnp.tril(jnp.ones((T, T), bool)), s, -jnp.inf), axis=-1)
        return p @ v, p

    return f


def _scores_read(jx, T, hd):  # s is read by something else
    jnp = jx.numpy

    def f(q, k, v):
        s = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(hd))
        return jx.nn.softmax(s, axis=-1) @ v + jnp.sum(s)

    return f


def _traced_scale(jx, T, hd):
    def f(q, k, v, c):
        return jx.nn.softmax((q @ k.transpose(0, 1, 3, 2)) * c, axis=-1) @ v

    return f


@pytest.mark.parametrize(
    "make",
    [
        _leaky,
        _scores_read,
        _traced_scale,
        lambda jx, T, hd: _attn(jx, T, hd, mask=lambda jnp: jnp.triu(jnp.ones((T, T), bool))),
        lambda jx, T, hd: _attn(jx, T, hd, mask=lambda jnp: jnp.tril(jnp.ones((T, T), bool), 1)),
    ],
    ids=["p-returned", "s-read", "traced-scale", "triu-mask", "shifted-tril"],
)
def test_it_leaves_the_program_unchanged_when_it_is_not_exactly_attention(make):
    T, hd = 4, 2
    q, k, v = _qkv((1, 1, T, hd))
    args = (q, k, v, np.float32(0.5)) if make is _traced_scale else (q, k, v)
    f = make(functx, T, hd)
    for g in (
        f,
        functx.grad(lambda *a: sum(fnp.sum(x**2) for x in functx.tree_util.tree_leaves(f(*a)))),
    ):
        closed = _final(g, *args)
        assert fuse_attention(closed) is closed


@pytest.fixture
def gpu(triton_gpu, monkeypatch):
    """A GPU: Triton's interpreter's stand-in, or with FUNCTX_TEST_TRITON_GPU=1 a CUDA GPU (the
    kernels then compiled for it), with the attention pass on."""
    monkeypatch.setattr(attention, "ENABLED", True)
    return triton_gpu


def _step_run(prim, params, arrays, out_avals):
    """The host step's kernels (``FlashStep.torch``) on CPU tensors in Triton's interpreter (on
    CUDA tensors with FUNCTX_TEST_TRITON_GPU=1)."""
    import torch

    from functx.core import ShapedArray
    from functx.lowering.triton.attention import FlashStep

    avals = [ShapedArray(a.shape, a.dtype) for a in arrays]
    step = FlashStep(prim, params, avals, out_avals, tf32=False)
    dev = "cuda" if ON_GPU else "cpu"

    def tensor(a):
        a = np.ascontiguousarray(a).reshape(-1)
        if a.dtype == np.dtype(fnp.bfloat16):
            return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).to(dev)
        return torch.from_numpy(a).to(dev)

    outs = [
        torch.empty(math.prod(a.shape), dtype=tensor(np.zeros(1, a.dtype)).dtype, device=dev)
        for a in out_avals
    ]
    step.torch([tensor(a) for a in arrays], outs)
    return [
        o.float().cpu().numpy().reshape(a.shape).astype(np.float64) for o, a in zip(outs, out_avals)
    ]


@pytest.mark.parametrize(
    "T, hd, causal, dtype, tol",
    [
        (24, 24, False, np.float32, 2e-5),
        (16, 32, True, "bfloat16", 2e-2),
        (16, 16, True, np.float16, 3e-3),
    ],
)
def test_the_kernels_equal_the_references(gpu, T, hd, causal, dtype, tol):
    # (q: the middle third of a fused (B, T, 3 hd) array, as the GPT block stores it; the
    # rest canonical (B, H, T, hd) arrays)
    dt = np.dtype(fnp.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    rng = np.random.default_rng(T)
    q = rng.standard_normal((1, T, 3 * hd)).astype(dt)
    k, v, do = (rng.standard_normal((1, 1, T, hd)).astype(dt) for _ in range(3))
    canonical = (0, (T * hd, T * hd, hd, 1))
    views = ((hd, (3 * T * hd, hd, 3 * hd, 1)), canonical, canonical)
    p = {"scale": 1 / math.sqrt(hd), "causal": causal, "shape": (1, 1, T, T, hd), "views": views}
    want_o, want_lse = attention._fwd_impl(*(a.astype(np.float32) for a in (q, k, v)), **p)
    o, lse = _step_run(
        attention.flash_attention_p, p, [q, k, v], attention._fwd_abstract(q, k, v, **p)
    )
    np.testing.assert_allclose(o, want_o, rtol=tol, atol=tol)
    np.testing.assert_allclose(lse, want_lse, rtol=1e-5, atol=1e-5)
    pb = {**p, "views": (*views, canonical)}
    args = [q, k, v, o.astype(dt), lse.astype(np.float32), do]
    f32 = [a.astype(np.float32) for a in args]
    want = attention._bwd_impl(*f32, **pb)
    avals = attention._bwd_abstract(*args, **pb)
    got = _step_run(attention.flash_attention_bwd_p, pb, args, avals)
    for g, w in zip(got, want):
        scale = max(1.0, float(np.abs(w).max()))
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * scale)


def test_jit_on_a_gpu_runs_the_kernels_and_equals_the_unfused_program_and_jax(gpu):
    T, hd = 16, 16
    q, k, v = _qkv((1, 1, T, hd), seed=3)
    f = _loss(functx, _attn(functx, T, hd))
    on_gpu = [functx.device_put(a, gpu) for a in (q, k, v)]
    with x64_off(), functx.default_matmul_precision("highest"):
        low = functx.jit(f).lower(*on_gpu)
        text = low.as_text()
        assert [e.prim.name for e in _flash(low.jaxpr)] == [
            "flash_attention",
            "flash_attention_bwd",
        ]
        out = functx.tree_util.tree_leaves(low.compile()(*on_gpu))
        got = [np.asarray(functx.device_get(o)) for o in out]
        attention.ENABLED = False
        try:
            plain = functx.jit(f).lower(*on_gpu).jaxpr
        finally:
            attention.ENABLED = True
        unfused = eval_jaxpr(plain.jaxpr, plain.consts, q, k, v)
        with jax.default_matmul_precision("highest"):
            want = jax.jit(_loss(jax, _attn(jax, T, hd)))(q, k, v)
    assert "flash attention" in text and got[0].dtype == np.float32
    for g, u, w in zip(got, unfused, jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(g, np.asarray(u), rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(g, np.asarray(w), rtol=2e-5, atol=2e-5)
