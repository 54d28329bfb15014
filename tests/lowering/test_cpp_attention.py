"""The C++ flash-attention steps (``functx/lowering/cpp/attention.py``): a CPU program's float32
attention (forward and gradient) becomes ``flash_attention``/``flash_attention_bwd`` steps
(fused by ``compile.py`` on a program-cache miss) whose results equal the primitives' NumPy
references (the eager interpreter on the fused Jaxpr) and JAX's unfused program; programs the
pass must not take are left as they are."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx.interpreter import eval_jaxpr
from functx.lowering.cpp import attention as cpp_attention, prelude

jax = pytest.importorskip("jax")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import workloads  # noqa: E402

# (B, H, T, D, causal): T not a multiple of 64 (a partial last block of rows and keys), several
# heads, D = 64 and odd D (padded to 16 in the kernels), with and without the causal mask; D = 130
# (padded to 144: a library no install builds, toolchain.ATTENTION_DP, built at run time)
CASES = [(2, 3, 70, 64, True), (1, 2, 70, 13, False), (1, 2, 130, 16, True), (1, 1, 20, 130, True)]


def _attn(jx, T, D, causal):
    jnp = jx.numpy

    def attn(q, k, v):
        s = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(D))
        if causal:
            s = jnp.where(jnp.tril(jnp.ones((T, T), bool)), s, -jnp.inf)
        return jx.nn.softmax(s, axis=-1) @ v

    return attn


def _loss(jx):
    """The three cases in one program (one compile): a nonlinear reader of each output, so the
    gradient needs ``o`` and a ``do`` that depends on it."""
    fs = [_attn(jx, T, D, c) for _, _, T, D, c in CASES]

    def loss(*qkv):
        outs = [f(*qkv[3 * i : 3 * i + 3]) for i, f in enumerate(fs)]
        return sum(jx.numpy.sum(jx.numpy.sin(o)) for o in outs)

    return jx.value_and_grad(loss, tuple(range(3 * len(CASES))))


def _args(dtype=np.float32):
    rng = np.random.default_rng(0)
    return [
        rng.standard_normal((B, H, T, D)).astype(dtype) for B, H, T, D, _ in CASES for _ in range(3)
    ]


def test_forward_and_gradient_equal_the_references_and_jax():
    args = _args()
    lowered = functx.jit(_loss(functx)).lower(*args)
    src = lowered.executable.source
    assert len(re.findall(r"fx_fa_lib_fwd\d+\(", src)) == len(CASES)  # (the library's steps)
    assert len(re.findall(r"fx_fa_lib_bwd\d+\(", src)) == len(CASES)
    assert "fx_host(" not in src  # (no Python step)
    got = lowered.compile()(*args)
    # the eager interpreter on the fused Jaxpr: the primitives' NumPy references
    fused = cpp_attention.fuse(lowered.jaxpr)
    assert sum(e.prim.name.startswith("flash") for e in fused.jaxpr.eqns) == 2 * len(CASES)
    ref = eval_jaxpr(fused.jaxpr, fused.consts, *args)
    with jax.default_matmul_precision("highest"):
        want = jax.jit(_loss(jax))(*args)
    got, want = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got) == len(want) == len(ref) == 1 + 3 * len(CASES)
    for g, r, w in zip(got, ref, want):
        scale = np.abs(np.asarray(w)).max()
        np.testing.assert_allclose(np.asarray(g), np.asarray(r), rtol=1e-5, atol=1e-5 * scale)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-5 * scale)


def test_the_gpt_block_step_runs_the_steps_and_equals_jax():
    c = dict(B=2, T=70, d=64, H=2, dtype="float32")
    args = workloads.inputs("gpt", c)
    lowered = functx.jit(workloads.program(functx, "gpt", c)).lower(*args)
    src = lowered.executable.source
    assert "fx_fa_lib_fwd32(" in src and "fx_fa_lib_bwd32(" in src  # (head dimension 32)
    got = jax.tree_util.tree_leaves(lowered.compile()(*args))
    with jax.default_matmul_precision("highest"):
        want = jax.tree_util.tree_leaves(jax.jit(workloads.program(jax, "gpt", c))(*args))
    for g, w, p in zip(got, want, [None] + jax.tree_util.tree_leaves(args[0])):
        # (the loss; then the updated parameters: compared as their updates)
        g, w = (np.asarray(g), np.asarray(w)) if p is None else (g - p, w - p)
        scale = np.abs(w).max()
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-4 * scale)


def _leaky(jx):  # p is returned too: the pass must leave the program as it is
    jnp = jx.numpy

    def f(q, k, v):
        s = q @ k.transpose(0, 1, 3, 2) * 0.5
        p = jx.nn.softmax(jnp.where(jnp.tril(jnp.ones((8, 8), bool)), s, -jnp.inf), axis=-1)
        return p @ v, p

    return f


def test_a_program_that_returns_p_is_unchanged():
    args = _args()[:3]
    args = [a[:, :, :8, :4] for a in args]
    closed = functx.make_jaxpr(_leaky(functx))(*args)
    assert cpp_attention.fuse(closed) is closed
    lowered = functx.jit(_leaky(functx)).lower(*args)
    assert "fx_fa_" not in lowered.executable.source
    got = lowered.compile()(*args)
    want = jax.jit(_leaky(jax))(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_half_precision_attention_is_not_fused_on_the_cpu():
    # (the C++ steps are float32 only; the Triton pass takes bfloat16 and float16)
    args = [a[:, :, :8, :4].astype(functx.numpy.bfloat16) for a in _args()[:3]]
    f = _attn(functx, 8, 4, True)
    closed = functx.make_jaxpr(functx.grad(lambda *a: fnp.sum(f(*a).astype(np.float32))))(*args)
    assert cpp_attention.fuse(closed) is closed
    assert cpp_attention.fuse_attention(closed) is not closed  # (the GPU's pass would fuse it)


@pytest.mark.slow  # (2 s: one C++ compile of the flash steps)
def test_a_nan_query_row_matches_jax_where_finite():
    """A NaN in one query row (docs/differences.md, "NaN in fused attention's gradient"): the
    output's NaN entries are JAX's and every entry finite in both agrees, but the fused gradient
    spreads the row's NaN to ``dk``/``dv`` per 64-key block it visits (causal: the blocks at or
    below the diagonal), where JAX's unfused products spread it over other entries."""
    B, H, T, D = 1, 1, 70, 13
    rng = np.random.default_rng(1)
    args = [rng.standard_normal((B, H, T, D)).astype(np.float32) for _ in range(3)]
    args[0][0, 0, 3, 0] = np.nan
    got = functx.jit(_loss_one(functx, T, D))(*args)
    with jax.default_matmul_precision("highest"):
        want = jax.jit(_loss_one(jax, T, D))(*args)
    (go, gg), (wo, wg) = got, want
    np.testing.assert_array_equal(np.isnan(np.asarray(go)), np.isnan(np.asarray(wo)))
    for name, g, w in zip("qkv", gg, wg):
        g, w = np.asarray(g), np.asarray(w)
        both = np.isfinite(g) & np.isfinite(w)
        np.testing.assert_allclose(g[both], w[both], rtol=1e-5, atol=1e-5)
        if name == "q":  # dq: NaN in the NaN row only, as JAX
            np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
        else:  # the documented difference: whole key blocks
            assert np.isnan(g[0, 0, :64]).all() and not np.isnan(g[0, 0, 64:]).any()


def _loss_one(jx, T, D):
    f = _attn(jx, T, D, True)
    return jx.value_and_grad(lambda q, k, v: jx.numpy.sin(f(q, k, v)).sum(), (0, 1, 2))


def test_the_library_computes_exp_and_log_as_the_programs_do():
    """``fx_attention.cpp`` includes ``fx_mathf.h``, the float32 ``exp`` and ``log`` the programs'
    prelude is written with: the library's source (what it is built from, and what its record's
    digest covers: ``toolchain.source_text``) holds that text in the include's place."""
    mathf = Path(cpp_attention.__file__).with_name("fx_mathf.h").read_text()
    source = cpp_attention.native.Library("fx_attention16", cpp_attention.SOURCE_FILE).source
    assert mathf in source and mathf in prelude.PRELUDE and '#include "' not in source
