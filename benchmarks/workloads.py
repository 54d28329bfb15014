"""Real workloads (issue 20's suite): training steps and whole loops, functx against JAX (and
torch.compile where a torch version is short: the MLP, the GPT block, the CNN).

Workloads (float32 unless named; ``--quick`` shrinks them, ``--gpu`` grows them):

* ``mlp_sgd``: an SGD step of a tanh MLP 784-1024-1024-10, batch 128, softmax cross-entropy;
* ``kls_momentum``: one momentum step of kernel least squares, a 100x100 RBF kernel;
* ``hmm_em``: ``jit(fori_loop(grad(lax.scan)))``: 20 EM steps of a 25-state, 10-symbol HMM on
  3,000 symbols, the expected counts as the gradient of the scaled forward algorithm's
  log-likelihood with respect to the log parameters;
* ``mamba_block``: forward and backward of a Mamba block (in-projection, causal depthwise
  conv1d of width 4, selective scan by ``associative_scan``, gating, out-projection), batch 4,
  length 256, d_model 64, d_inner 128, state 16;
* ``gpt_block``: an SGD step of a pre-LN transformer block (causal attention, GELU MLP),
  B=4 T=256 d=384 with 6 heads (on the GPU: B=8 T=1024 d=768 and B=4 T=2048 d=1536, each in
  float32 and bfloat16);
* ``dpsgd``: a DP-SGD step: per-example gradients (``vmap(grad)``) of a tanh MLP 256-256-256-10,
  batch 128, each clipped to norm 1, summed, Gaussian noise added (drawn outside, an input);
* ``cnn``: an SGD step of a small CNN on 28x28x1 images, batch 32: 3x3 conv 16, ReLU, 2x2 max
  pool (``reduce_window``), 3x3 conv 32, ReLU, 2x2 average pool, dense 10;
* regression guards from the earlier kernel benchmarks: ``ln_grad`` (``jit_cpu.py``'s layer
  norm gradient, 4096x1024), ``fft_conv_grad`` (``fft_conv.py``: its convolution and inputs,
  batch 8, length 2^16) and ``conv3x3_grad`` (``conv.py``: its inputs, (2,64,64,64)).

Method. Each library runs alone in a process of its own (``--worker``), the libraries' order
rotating between rounds: on the CPU a process per library, workload and round; on the GPU a
process per library and round running all the selected workloads. Round 0 starts with an empty
``FUNCTX_CACHE_DIR`` (and an empty ``TORCHINDUCTOR_CACHE_DIR``), shared by the round's
workloads: the first functx workload also builds the prelude's precompiled header and the call
extension, which the later ones find. Later rounds reuse the caches, so their first calls are
warm-cache first calls (JAX keeps no persistent cache by default: its first call compiles every
round). Python's bytecode is written for functx before the first round (``write_bytecode``), as
an installed package has it, and as JAX, NumPy and SymPy have theirs. Round 0
also saves each result, and the parent compares functx's and torch's with JAX's (the same inputs;
for a training step the loss and the parameter updates ``new - old``; relative error in the
2-norm) before any time is reported; a bfloat16 step is checked against JAX's float32 run of the
same size instead (the loss and the new parameters, each library's error beside JAX's own
bfloat16 error). Per call: the median over calls in a process (at least 3,
about ``--budget`` seconds), then the median over rounds. Peak memory on the CPU: the growth of
the process's peak resident set during the workload (``VmHWM`` of /proc/self/status, reset
through /proc/self/clear_refs before each workload, minus the resident set before it). On the
GPU: ``torch.cuda.max_memory_allocated`` (functx's GPU arrays and torch) after a reset, and JAX's
``peak_bytes_in_use`` (which cannot be reset: shown only when it rose during the workload).
GPU times: functx and torch, CUDA events on torch's current stream around ``n`` back-to-back
calls; JAX (its own streams), the wall clock around ``n`` calls ended by ``block_until_ready``.

The torch peer on the GPU multiplies float32 matrices in TF32
(``torch.set_float32_matmul_precision("high")``), as JAX's default precision and functx's do
there. torch's own default is full float32 products: its float32 GPT step took 10.9 ms on an
H100 (12:23), about what the step's 425 GFLOP of products need at float32's rate (6.3 ms at the
H100's 67 TFLOP/s peak), against 3.75 ms in issue 20's own measurement; in TF32 it took 3.26 ms
on an H200 (14:03, one round). The worker reports how many graphs torch.compile made and its
graph breaks and recompilations (one graph per workload and none of either, on the H200 and on
the CPU here), printed under the table.

Every worker runs with ``OMP_WAIT_POLICY=PASSIVE`` unless it is set: functx sets it for its own
OpenMP threads, and torch's threads spin otherwise (on this loaded 2-core machine a
torch.compile step took 2 s instead of 4 ms). The workers find functx in this checkout.

    python benchmarks/workloads.py [--quick] [--only mlp_sgd,gpt_block] [--rounds 3]
        [--libs functx,jax,torch] [--gpu] [--deadline SECONDS] [--cache-dir DIR]

``--deadline`` starts no process after that many seconds (and stops one running 30 s past it),
then prints what it has; ``--cache-dir`` keeps the compiled-program caches between runs (a
second run's round 0 is then warm, and says so).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import conv as conv_bench  # benchmarks/conv.py: the 3x3 convolution's inputs
import fft_conv as fft_bench  # benchmarks/fft_conv.py: the FFT convolution and its inputs
import numpy as np

LR = 0.1
TORCH_FAMILIES = ("mlp", "gpt", "cnn")


# ------------------------------------------------------------------------------------------------
# The workloads: (name, family, configuration) for each mode.


def workload_list(mode: str) -> list[tuple[str, str, dict]]:
    quick = mode == "quick"
    gpu = mode == "gpu"
    mlp = (
        dict(sizes=(784, 256, 256, 10), batch=32)
        if quick
        else dict(sizes=(784, 1024, 1024, 10), batch=128)
    )
    hmm = dict(T=300 if quick else 3000, S=25, M=10, steps=20)
    if quick:
        mamba = dict(B=2, L=64, d=16, di=32, N=8)
    elif gpu:
        mamba = dict(B=8, L=1024, d=256, di=512, N=16)
    else:
        mamba = dict(B=4, L=256, d=64, di=128, N=16)
    dp = (
        dict(sizes=(256, 64, 64, 10), batch=16)
        if quick
        else dict(sizes=(256, 256, 256, 10), batch=128)
    )
    cnn = dict(B=8, c=(4, 8)) if quick else dict(B=128 if gpu else 32, c=(16, 32))
    if quick:
        guards = [
            ("ln_grad", "ln_grad", dict(shape=(512, 256))),
            ("fft_conv_grad", "fft_conv_grad", dict(batch=2, n=2**10)),
            ("conv3x3_grad", "conv3x3_grad", dict(n=1)),
        ]
    else:
        guards = [
            ("ln_grad", "ln_grad", dict(shape=(8192, 4096) if gpu else (4096, 1024))),
            ("fft_conv_grad", "fft_conv_grad", dict(batch=8, n=2**16)),
            ("conv3x3_grad", "conv3x3_grad", dict(n=8 if gpu else 2)),
        ]
    if quick:
        gpts = [("gpt_block", "gpt", dict(B=2, T=64, d=64, H=2, dtype="float32"))]
    elif gpu:
        gpts = [
            ("gpt_block", "gpt", dict(B=8, T=1024, d=768, H=12, dtype="float32")),
            ("gpt_block_bf16", "gpt", dict(B=8, T=1024, d=768, H=12, dtype="bfloat16")),
            ("gpt_block_big", "gpt", dict(B=4, T=2048, d=1536, H=24, dtype="float32")),
            ("gpt_block_big_bf16", "gpt", dict(B=4, T=2048, d=1536, H=24, dtype="bfloat16")),
        ]
    else:
        gpts = [("gpt_block", "gpt", dict(B=4, T=256, d=384, H=6, dtype="float32"))]
    if quick:
        newton, gp = dict(P=2, n=64, d=8), dict(P=2, n=32, dim=3)
    else:
        newton = dict(P=16, n=1024, d=64)
        gp = dict(P=16, n=512 if gpu else 256, dim=3)
    return [
        ("mlp_sgd", "mlp", mlp),
        ("kls_momentum", "kls", dict(n=100)),
        ("newton", "newton", newton),
        ("gp_nll", "gp", gp),
        ("hmm_em", "hmm", hmm),
        ("mamba_block", "mamba", mamba),
        *gpts,
        ("dpsgd", "dpsgd", dp),
        ("cnn", "cnn", cnn),
        *guards,
    ]


def describe(family: str, c: dict) -> str:
    if family in ("mlp", "dpsgd"):
        return f"{'-'.join(map(str, c['sizes']))} B={c['batch']}"
    if family == "kls":
        return f"{c['n']}x{c['n']}"
    if family == "hmm":
        return f"{c['steps']} steps T={c['T']} S={c['S']}"
    if family == "mamba":
        return f"B={c['B']} L={c['L']} d={c['d']} di={c['di']} N={c['N']}"
    if family == "gpt":
        return f"B={c['B']} T={c['T']} d={c['d']} {c['dtype']}"
    if family == "cnn":
        return f"B={c['B']} 28x28 c={c['c']}"
    if family == "newton":
        return f"{c['P']} problems n={c['n']} d={c['d']}"
    if family == "gp":
        return f"{c['P']} data sets n={c['n']} dim={c['dim']}"
    if family == "ln_grad":
        return "x".join(map(str, c["shape"]))
    if family == "fft_conv_grad":
        return f"B={c['batch']} n=2^{int(math.log2(c['n']))}"
    return f"({c['n']},64,64,64)"


# ------------------------------------------------------------------------------------------------
# Inputs (NumPy, the same in every process) and whether the result is a training step's
# ``(loss, new parameters)`` (checked as the loss and the updates ``new - old``).


def _normal(rng, shape, scale=1.0):
    return (scale * rng.standard_normal(shape)).astype(np.float32)


def _mlp_params(rng, sizes):
    return {
        f"{k}{i}": (_normal(rng, (m, n), 1 / math.sqrt(m)) if k == "w" else np.zeros(n, np.float32))
        for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:]))
        for k in ("w", "b")
    }


def inputs(family: str, c: dict):
    rng = np.random.default_rng(0)
    if family in ("mlp", "dpsgd"):
        p = _mlp_params(rng, c["sizes"])
        x = _normal(rng, (c["batch"], c["sizes"][0]))
        y = rng.integers(0, c["sizes"][-1], c["batch"]).astype(np.int32)
        if family == "mlp":
            return (p, x, y)
        noise = {k: _normal(rng, v.shape) for k, v in p.items()}
        return (p, x, y, noise)
    if family == "kls":
        n = c["n"]
        pts = rng.uniform(-1, 1, (n, 2))
        d2 = ((pts[:, None] - pts[None]) ** 2).sum(-1)
        K = np.exp(-d2 / 0.5).astype(np.float32)
        y = np.sin(3 * pts[:, 0]).astype(np.float32)
        return ((_normal(rng, n, 0.1), np.zeros(n, np.float32)), K, y)
    if family == "hmm":
        S, M = c["S"], c["M"]

        def logp(shape):
            p = rng.uniform(0.5, 1.5, shape)
            return np.log(p / p.sum(-1, keepdims=True)).astype(np.float32)

        obs = rng.integers(0, M, c["T"]).astype(np.int32)
        return ((logp((S, S)), logp((S, M)), logp(S)), obs)
    if family == "mamba":
        d, di, N = c["d"], c["di"], c["N"]
        p = {
            "w_in": _normal(rng, (d, 2 * di), 1 / math.sqrt(d)),
            "conv": _normal(rng, (4, 1, di), 0.5),
            "conv_b": _normal(rng, di, 0.1),
            "w_dt": _normal(rng, (di, di), 1 / math.sqrt(di)),
            "b_dt": _normal(rng, di, 0.1),
            "w_B": _normal(rng, (di, N), 1 / math.sqrt(di)),
            "w_C": _normal(rng, (di, N), 1 / math.sqrt(di)),
            "A_log": np.log(rng.uniform(0.5, 4.0, (di, N))).astype(np.float32),
            "D": _normal(rng, di),
            "w_out": _normal(rng, (di, d), 1 / math.sqrt(di)),
        }
        return (p, _normal(rng, (c["B"], c["L"], d)), _normal(rng, (c["B"], c["L"], d)))
    if family == "gpt":
        d = c["d"]
        p = {
            "ln1_g": np.ones(d, np.float32),
            "ln1_b": np.zeros(d, np.float32),
            "w_qkv": _normal(rng, (d, 3 * d), 1 / math.sqrt(d)),
            "b_qkv": np.zeros(3 * d, np.float32),
            "w_o": _normal(rng, (d, d), 1 / math.sqrt(d)),
            "b_o": np.zeros(d, np.float32),
            "ln2_g": np.ones(d, np.float32),
            "ln2_b": np.zeros(d, np.float32),
            "w_1": _normal(rng, (d, 4 * d), 1 / math.sqrt(d)),
            "b_1": np.zeros(4 * d, np.float32),
            "w_2": _normal(rng, (4 * d, d), 1 / math.sqrt(4 * d)),
            "b_2": np.zeros(d, np.float32),
        }
        shape = (c["B"], c["T"], d)
        return (p, _normal(rng, shape), _normal(rng, shape))
    if family == "cnn":
        c1, c2 = c["c"]
        p = {
            "k1": _normal(rng, (3, 3, 1, c1), 1 / 3),
            "b1": np.zeros(c1, np.float32),
            "k2": _normal(rng, (3, 3, c1, c2), 1 / math.sqrt(9 * c1)),
            "b2": np.zeros(c2, np.float32),
            "w": _normal(rng, (7 * 7 * c2, 10), 1 / math.sqrt(49 * c2)),
            "b": np.zeros(10, np.float32),
        }
        x = _normal(rng, (c["B"], 28, 28, 1))
        return (p, x, rng.integers(0, 10, c["B"]).astype(np.int32))
    if family == "newton":
        w = _normal(rng, c["d"], 0.1)
        X = _normal(rng, (c["P"], c["n"], c["d"]), 1 / math.sqrt(c["d"]))
        y = (rng.uniform(size=(c["P"], c["n"])) < 0.5).astype(np.float32)
        return (w, X, y)
    if family == "gp":
        X = rng.uniform(-2, 2, (c["P"], c["n"], c["dim"])).astype(np.float32)
        y = np.sin(2 * X[..., 0]) * np.cos(X[..., 1]) + 0.1 * rng.standard_normal(X.shape[:2])
        return (np.log(np.array([0.8, 1.0, 0.3], np.float32)), X, y.astype(np.float32))
    if family == "ln_grad":  # the weights make the gradient nonzero (that of the plain sum is 0)
        return (_normal(rng, c["shape"]), _normal(rng, c["shape"][-1]))
    if family == "fft_conv_grad":
        return fft_bench.inputs(c["batch"], c["n"])
    x, w = conv_bench.inputs("conv3x3", c["n"], False)
    g = np.random.default_rng(1).standard_normal(x.shape).astype(np.float32)
    return (x, w, g)


def is_step(family: str) -> bool:
    return family in ("mlp", "kls", "gpt", "dpsgd", "cnn")


# ------------------------------------------------------------------------------------------------
# The programs, written once for functx and JAX (``jx`` is either module).


def _sgd(jx, p, g, lr=LR):
    return jx.tree_util.tree_map(lambda a, b: a - lr * b, p, g)


def _mlp_logits(jx, p, x):
    n = len(p) // 2
    h = x
    for i in range(n):
        h = h @ p[f"w{i}"] + p[f"b{i}"]
        if i < n - 1:
            h = jx.numpy.tanh(h)
    return h


def _xent(jx, logits, y):
    lp = jx.nn.log_softmax(logits)
    return -jx.numpy.mean(jx.numpy.take_along_axis(lp, y[:, None], axis=1))


def _layer_norm(jx, x, g, b):
    jnp = jx.numpy
    mu = jnp.mean(x, -1, keepdims=True)
    var = jnp.mean((x - mu) ** 2, -1, keepdims=True)
    return (x - mu) * jx.lax.rsqrt(var + 1e-5) * g + b


def program(jx, family: str, c: dict):
    """The function to ``jit``; its arguments are ``inputs(family, c)``."""
    jnp, lax = jx.numpy, jx.lax
    if family == "mlp":

        def loss(p, x, y):
            return _xent(jx, _mlp_logits(jx, p, x), y)

        def step(p, x, y):
            v, g = jx.value_and_grad(loss)(p, x, y)
            return v, _sgd(jx, p, g)

        return step
    if family == "kls":

        def loss(a, K, y):
            r = K @ a - y
            return 0.5 * jnp.sum(r * r) + 0.5e-3 * a @ (K @ a)

        def step(state, K, y):
            a, v = state
            value, g = jx.value_and_grad(loss)(a, K, y)
            v = 0.9 * v + g
            return value, (a - 1e-3 * v, v)

        return step
    if family == "hmm":

        def loglik(logA, logB, logpi, obs):
            emit = jx.nn.one_hot(obs, logB.shape[1], dtype=logB.dtype) @ jnp.exp(logB).T
            A = jnp.exp(logA)
            a0 = jnp.exp(logpi) * emit[0]
            c0 = jnp.sum(a0)

            def forward(carry, e):
                alpha, ll = carry
                alpha = (alpha @ A) * e
                s = jnp.sum(alpha)
                return (alpha / s, ll + jnp.log(s)), None

            (_, ll), _ = lax.scan(forward, (a0 / c0, jnp.log(c0)), emit[1:])
            return ll

        counts = jx.grad(loglik, argnums=(0, 1, 2))

        def em(params, obs):
            def body(i, prm):
                cA, cB, cpi = counts(*prm, obs)
                return (
                    jnp.log(cA / jnp.sum(cA, -1, keepdims=True)),
                    jnp.log(cB / jnp.sum(cB, -1, keepdims=True)),
                    jnp.log(cpi / jnp.sum(cpi)),
                )

            return lax.fori_loop(0, c["steps"], body, params)

        return em
    if family == "mamba":

        def block(p, x):
            xi, z = jnp.split(x @ p["w_in"], 2, axis=-1)
            xi = lax.conv_general_dilated(
                xi,
                p["conv"],
                (1,),
                [(3, 0)],
                dimension_numbers=("NWC", "WIO", "NWC"),
                feature_group_count=xi.shape[-1],
            )
            xi = jx.nn.silu(xi + p["conv_b"])
            delta = jx.nn.softplus(xi @ p["w_dt"] + p["b_dt"])
            b_in, c_out = xi @ p["w_B"], xi @ p["w_C"]
            decay = jnp.exp(delta[..., None] * -jnp.exp(p["A_log"]))
            drive = delta[..., None] * b_in[:, :, None, :] * xi[..., None]

            def compose(first, second):
                return first[0] * second[0], second[0] * first[1] + second[1]

            _, h = lax.associative_scan(compose, (decay, drive), axis=1)
            y = jnp.sum(h * c_out[:, :, None, :], -1) + p["D"] * xi
            return (y * jx.nn.silu(z)) @ p["w_out"]

        return jx.value_and_grad(lambda p, x, t: jnp.mean((block(p, x) - t) ** 2))
    if family == "gpt":
        H = c["H"]

        def block(p, x):
            B, T, d = x.shape
            hd = d // H
            q, k, v = jnp.split(
                _layer_norm(jx, x, p["ln1_g"], p["ln1_b"]) @ p["w_qkv"] + p["b_qkv"], 3, -1
            )
            q, k, v = (a.reshape(B, T, H, hd).transpose(0, 2, 1, 3) for a in (q, k, v))
            s = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(hd))
            s = jnp.where(jnp.tril(jnp.ones((T, T), bool)), s, -jnp.inf)
            o = (jx.nn.softmax(s, axis=-1) @ v).transpose(0, 2, 1, 3).reshape(B, T, d)
            x = x + o @ p["w_o"] + p["b_o"]
            h = _layer_norm(jx, x, p["ln2_g"], p["ln2_b"])
            return x + jx.nn.gelu(h @ p["w_1"] + p["b_1"]) @ p["w_2"] + p["b_2"]

        def step(p, x, t):
            v, g = jx.value_and_grad(lambda p: jnp.mean((block(p, x) - t) ** 2))(p)
            return v, _sgd(jx, p, g)

        return step
    if family == "dpsgd":

        def loss(p, x, y):
            return _xent(jx, _mlp_logits(jx, p, x[None]), y[None])

        def step(p, x, y, noise):
            per = jx.vmap(jx.grad(loss), in_axes=(None, 0, 0))(p, x, y)
            sq = sum(
                jnp.sum(g.reshape(g.shape[0], -1) ** 2, 1) for g in jx.tree_util.tree_leaves(per)
            )
            scale = jnp.minimum(1.0, 1.0 / jnp.sqrt(sq + 1e-12))
            noisy = jx.tree_util.tree_map(
                lambda g, n: (jnp.tensordot(scale, g, 1) + 1.1 * n) / x.shape[0], per, noise
            )
            return _xent(jx, _mlp_logits(jx, p, x), y), _sgd(jx, p, noisy)

        return step
    if family == "cnn":
        dn = ("NHWC", "HWIO", "NHWC")

        def logits(p, x):
            h = lax.conv_general_dilated(x, p["k1"], (1, 1), "SAME", dimension_numbers=dn)
            h = jx.nn.relu(h + p["b1"])
            h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
            h = lax.conv_general_dilated(h, p["k2"], (1, 1), "SAME", dimension_numbers=dn)
            h = jx.nn.relu(h + p["b2"])
            h = lax.reduce_window(h, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") * 0.25
            return h.reshape(h.shape[0], -1) @ p["w"] + p["b"]

        def step(p, x, y):
            v, g = jx.value_and_grad(lambda p: _xent(jx, logits(p, x), y))(p)
            return v, _sgd(jx, p, g)

        return step
    if family == "newton":  # issue 19's Newton step: the loss after one Newton step, per problem

        def nll(w, X, y):
            z = X @ w
            return jnp.sum(jnp.logaddexp(0.0, z) - y * z) + 0.5 * jnp.sum(w * w)

        def newton_loss(w, X, y):
            g = jx.grad(nll)(w, X, y)
            H = jx.hessian(nll)(w, X, y)
            return nll(w - jnp.linalg.solve(H, g), X, y)

        return jx.vmap(jx.value_and_grad(newton_loss), in_axes=(None, 0, 0))
    if family == "gp":  # issue 19's GP marginal likelihood (cholesky, cho_solve), per data set

        def gp_nll(logp, X, y):
            ell, sf, sn = jnp.exp(logp)
            d2 = jnp.sum((X[:, None, :] - X[None, :, :]) ** 2, -1)
            K = sf**2 * jnp.exp(-0.5 * d2 / ell**2) + (sn**2 + 1e-4) * jnp.eye(X.shape[0])
            L = jnp.linalg.cholesky(K)
            alpha = jx.scipy.linalg.cho_solve((L, True), y)
            n = X.shape[0]
            return 0.5 * y @ alpha + jnp.sum(jnp.log(jnp.diag(L))) + 0.5 * n * math.log(2 * math.pi)

        return jx.vmap(jx.value_and_grad(gp_nll), in_axes=(None, 0, 0))
    if family == "ln_grad":
        return jx.grad(lambda x, w: (_layer_norm(jx, x, 1.0, 0.0) * w).sum())
    if family == "fft_conv_grad":

        def f(x, k, g):
            return jnp.sum(fft_bench.conv(jnp, jnp.fft, x, k, x.shape[-1]) * g)

        return jx.grad(f, argnums=(0, 1))

    def conv_loss(x, w, g):
        y = lax.conv_general_dilated(
            x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        return jnp.sum(y * g)

    return jx.grad(conv_loss, argnums=(0, 1))


def torch_program(torch, family: str, c: dict):
    """torch.compile of the loss (forward; AOTAutograd compiles its backward), the gradient by
    ``torch.autograd.grad``, the update with one ``_foreach`` call. Returns ``step(p, *batch)``
    giving ``[loss, *new parameters in sorted key order]``, the flattening of JAX's result."""
    F = torch.nn.functional  # noqa: N806

    if family == "mlp":

        def loss(p, x, y):
            n = len(p) // 2
            h = x
            for i in range(n):
                h = h @ p[f"w{i}"] + p[f"b{i}"]
                if i < n - 1:
                    h = torch.tanh(h)
            return F.cross_entropy(h, y.long())

    elif family == "gpt":
        H = c["H"]

        def loss(p, x, t):
            B, T, d = x.shape
            hd = d // H
            h = F.layer_norm(x, (d,), p["ln1_g"], p["ln1_b"], 1e-5)
            q, k, v = (h @ p["w_qkv"] + p["b_qkv"]).split(d, -1)
            q, k, v = (a.reshape(B, T, H, hd).transpose(1, 2) for a in (q, k, v))
            s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            s = s.masked_fill(~mask, float("-inf"))
            o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, d)
            x = x + o @ p["w_o"] + p["b_o"]
            h = F.layer_norm(x, (d,), p["ln2_g"], p["ln2_b"], 1e-5)
            x = x + F.gelu(h @ p["w_1"] + p["b_1"], approximate="tanh") @ p["w_2"] + p["b_2"]
            return ((x - t) ** 2).mean()

    elif family == "cnn":

        def loss(p, x, y):
            h = F.conv2d(x.permute(0, 3, 1, 2), p["k1"].permute(3, 2, 0, 1), p["b1"], padding=1)
            h = F.max_pool2d(torch.relu(h), 2)
            h = F.conv2d(h, p["k2"].permute(3, 2, 0, 1), p["b2"], padding=1)
            h = F.avg_pool2d(torch.relu(h), 2).permute(0, 2, 3, 1)
            return F.cross_entropy(h.reshape(h.shape[0], -1) @ p["w"] + p["b"], y.long())

    else:
        raise KeyError(family)
    compiled = torch.compile(loss)

    def step(p, *batch):
        names = sorted(p)
        ps = [p[k].detach().requires_grad_() for k in names]
        value = compiled(dict(zip(names, ps)), *batch)
        grads = torch.autograd.grad(value, ps)
        with torch.no_grad():
            new = torch._foreach_add(ps, grads, alpha=-LR)
        return [value.detach(), *new]

    return step


# ------------------------------------------------------------------------------------------------
# The worker: one library, all the selected workloads, in this process.


def _status() -> dict:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(("VmHWM", "VmRSS")):
                k, v = line.split(":")
                out[k] = int(v.split()[0]) * 1024
    return out


def _reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def worker(lib: str, names: list[str], mode: str, save_dir: str | None, budget: float):
    gpu = mode == "gpu"
    todo = [w for w in workload_list(mode) if w[0] in names]
    torch = None
    if lib == "torch" or (gpu and lib == "functx"):  # functx's GPU arrays are torch tensors
        import torch

        if not gpu:
            torch.set_num_threads(os.cpu_count())
        elif lib == "torch":  # TF32 float32 products, as JAX's and functx's default precision
            torch.set_float32_matmul_precision("high")
    if lib == "functx":
        import functx as jx
    elif lib == "jax":
        import jax as jx
    else:
        jx = None
    for name, family, c in todo:
        rec = {}
        try:
            rec = run_workload(
                lib,
                jx,
                torch,
                family,
                c,
                gpu,
                save_dir and os.path.join(save_dir, f"{lib}_{name}.npz"),
                budget,
            )
        except Exception as e:  # report it and go on with the next workload
            rec = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
        print("RESULT " + json.dumps({"name": name, **rec}), flush=True)


def run_workload(lib, jx, torch, family, c, gpu, save_path, budget):
    args = inputs(family, c)
    bf16 = c.get("dtype") == "bfloat16"
    if lib == "torch":
        if family not in TORCH_FAMILIES:
            return {"skip": True}
        dev = "cuda" if gpu else "cpu"

        def conv(a):
            t = torch.from_numpy(np.ascontiguousarray(a)).to(dev)
            return t.to(torch.bfloat16) if bf16 and t.is_floating_point() else t

        dargs = tuple(
            {k: conv(v) for k, v in a.items()} if isinstance(a, dict) else conv(a) for a in args
        )
        fn = torch_program(torch, family, c)

        def call():
            return fn(*dargs)

        def sync(_):
            if gpu:
                torch.cuda.synchronize()

        def flat(out):
            return [o.detach().float().cpu().numpy().astype(np.float64) for o in out]

        def flat_params(p):
            return flat([p[k] for k in sorted(p)])

    else:
        tm = jx.tree_util.tree_map
        if gpu:
            if lib == "functx":
                dev = jx.devices("gpu")[0]
                dargs = tm(lambda a: jx.device_put(a, dev), args)
            else:
                dargs = jx.device_put(args)
        else:  # the library's arrays: the timed calls do not convert NumPy inputs
            dargs = tm(jx.numpy.asarray, args)
        if bf16:
            dargs = tm(lambda a: a.astype(jx.numpy.bfloat16) if a.dtype == np.float32 else a, dargs)
        fn = jx.jit(program(jx, family, c))

        def call():
            return fn(*dargs)

        def sync(out):
            jx.block_until_ready(out)

        def flat(out):
            leaves = jx.tree_util.tree_leaves(out)
            return [np.asarray(o.astype(np.float32) if bf16 else o, np.float64) for o in leaves]

        def flat_params(p):
            return flat(p)

    rec = {}
    if gpu and lib == "jax":
        jstats = jx.devices()[0].memory_stats() or {}
    elif gpu:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        peak_ok = _reset_peak()
        base = _status()["VmRSS"]
    t0 = time.perf_counter()
    out = call()
    sync(out)
    rec["first_s"] = time.perf_counter() - t0
    if save_path:  # the check: the result, or a training step's loss and updates
        leaves = flat(out)
        np.savez(save_path.replace(".npz", "_raw.npz"), *leaves)
        if is_step(family):
            leaves = [leaves[0]] + [n - o for n, o in zip(leaves[1:], flat_params(dargs[0]))]
        np.savez(save_path, *leaves)
    del out
    rec["times"] = _time(call, sync, budget, gpu, torch, lib)
    if gpu and lib == "jax":
        after = jx.devices()[0].memory_stats() or {}
        rose = after.get("peak_bytes_in_use", 0) > jstats.get("peak_bytes_in_use", 0)
        rec["mem"] = after["peak_bytes_in_use"] - jstats.get("bytes_in_use", 0) if rose else None
    elif gpu:
        rec["mem"] = torch.cuda.max_memory_allocated() - base
    else:
        rec["mem"] = _status()["VmHWM"] - base if peak_ok else None
    if lib == "torch":
        rec["compiled"] = _dynamo_stats()
    return rec


def _dynamo_stats() -> str:
    """torch.compile's graphs, graph breaks and recompilations so far in this process."""
    try:
        from torch._dynamo.utils import counters
    except ImportError:
        return "no dynamo counters"
    graphs = counters["stats"].get("unique_graphs", 0)
    breaks = sum(counters["graph_break"].values())
    recompiles = sum(counters["recompiles"].values()) if "recompiles" in counters else 0
    return f"{graphs} graph(s), {breaks} graph break(s), {recompiles} recompilation(s) so far"


def _time(call, sync, budget, gpu, torch, lib):
    """Seconds per call: on the CPU each call timed alone (ended by its sync), until ``budget``
    seconds and at least 3 calls; on the GPU, 5 loops of ``n`` calls (``n`` from one call)."""
    out = call()
    sync(out)
    if not gpu:
        ts, spent = [], 0.0
        while len(ts) < 3 or (spent < budget and len(ts) < 100):
            t0 = time.perf_counter()
            out = call()
            sync(out)
            ts.append(time.perf_counter() - t0)
            spent += ts[-1]
        return ts
    t0 = time.perf_counter()
    out = call()
    sync(out)
    n = max(1, min(200, int(budget / 5 / max(time.perf_counter() - t0, 1e-6))))
    ts = []
    for _ in range(5):
        if lib == "jax":
            sync(out)
            t0 = time.perf_counter()
            for _ in range(n):
                out = call()
            sync(out)
            ts.append((time.perf_counter() - t0) / n)
        else:
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(n):
                out = call()
            end.record()
            end.synchronize()
            ts.append(start.elapsed_time(end) / 1e3 / n)
    return ts


# ------------------------------------------------------------------------------------------------
# The parent: rounds of worker processes, the check, the table.


def rel_err(got, want) -> float:
    if got.shape != want.shape:
        return float("inf")
    if not np.all(np.isfinite(got)):
        return float("nan")
    n = np.linalg.norm(want.ravel())
    d = np.linalg.norm((got - want).ravel())
    return float(d / n) if n else float(d)


def check(save_dir, lib, name, tol, ref="jax_{name}"):
    """The worst relative error of ``lib``'s outputs against ``ref`` (a saved result's name)."""
    try:
        got = np.load(os.path.join(save_dir, f"{lib}_{name}.npz"))
        want = np.load(os.path.join(save_dir, ref.format(name=name) + ".npz"))
    except OSError:
        return None, "no result"
    if len(got.files) != len(want.files):
        return None, f"{len(got.files)} outputs, JAX {len(want.files)}"
    err = max(rel_err(got[k], want[k]) for k in want.files)
    return err, "ok" if err <= tol else "WRONG"


def bf16_check(save_dir, libs, name, family, c, mode, names, errors):
    """A bfloat16 step against JAX's float32 run of the same workload: the loss and the new
    parameters themselves (their updates are below bfloat16's resolution), each library's
    error beside JAX's own bfloat16 error; within 1.5x JAX's, or 2e-2, is ok."""
    twin = [
        n for n, f, c2 in workload_list(mode) if f == family and c2 == {**c, "dtype": "float32"}
    ]
    if not twin or twin[0] not in names:
        print(f"  {name:15s} (no float32 run of the same size selected: not checked)")
        return
    ref = f"jax_{twin[0]}_raw"
    jerr, _ = check(save_dir, "jax", f"{name}_raw", 0, ref)
    tol = max(2e-2, 1.5 * jerr) if jerr is not None else 2e-2
    for lib in libs:
        if (lib, name) in errors:
            print(f"  {name:15s} {lib:7s} ERROR {errors[(lib, name)]}")
            continue
        err, verdict = check(save_dir, lib, f"{name}_raw", tol, ref)
        shown = "—" if err is None else f"{err:.1e}"
        print(f"  {name:15s} {lib:7s} {shown:>8s} {verdict} (vs JAX float32; tolerance {tol:.2g})")


def _load() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return f"load average {os.getloadavg()}"


def _versions(libs) -> str:
    parts = []
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        rev = subprocess.run(
            ["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        )
        parts.append(f"functx {rev.stdout.strip()}")
    except OSError:
        pass
    code = "import importlib.metadata as m; print(*(m.version(p) for p in %r))"
    pkgs = ["jax", "jaxlib"] + (["torch"] if "torch" in libs else [])
    out = subprocess.run([sys.executable, "-c", code % (pkgs,)], capture_output=True, text=True)
    parts += [f"{p} {v}" for p, v in zip(pkgs, out.stdout.split())]
    return ", ".join(parts)


def _fmt_t(s):
    if s is None:
        return "—"
    return f"{s * 1e3:.3f}" if s < 0.01 else f"{s * 1e3:.1f}" if s < 1 else f"{s * 1e3:.0f}"


def _fmt_mem(b):
    return "—" if b is None else f"{b / 2**20:.0f}"


def write_bytecode(env, root):
    """Compile functx's modules to Python bytecode in ``root``'s checkout (``__pycache__``) and
    let the processes run with ``env`` read and write it, as for an installed package: JAX,
    NumPy and SymPy come with compiled modules, and a pip-installed functx too, but with
    PYTHONDONTWRITEBYTECODE set (as on our development machines) a checkout recompiles its
    modules in every process, about 0.1 s of CPU in a first call (the lowering's modules are
    imported then) and 1-2 s more of ``import functx`` on the loaded 2-core machine."""
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd = [sys.executable, "-m", "compileall", "-q", os.path.join(root, "functx")]
    subprocess.run(cmd, env=env, check=True, capture_output=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    ap.add_argument("--gpu", action="store_true", help="on a CUDA GPU, GPU sizes")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--libs", default="functx,jax,torch")
    ap.add_argument("--rounds", type=int, default=None, help="3 (--quick: 2)")
    ap.add_argument(
        "--budget", type=float, default=None, help="seconds of timed calls per workload"
    )
    ap.add_argument(
        "--deadline", type=float, default=None, help="seconds: start no process after this"
    )
    ap.add_argument(
        "--cache-dir", help="keep functx's and inductor's caches here (default: a fresh one)"
    )
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--save", help=argparse.SUPPRESS)
    args = ap.parse_args()
    mode = "gpu" if args.gpu else "quick" if args.quick else "cpu"
    todo = workload_list(mode)
    all_names = [w[0] for w in todo]
    names = [n for n in args.only.split(",") if n] or all_names
    unknown = set(names) - set(all_names)
    if unknown:
        ap.error(f"unknown workloads {sorted(unknown)}; choose from {all_names}")
    budget = args.budget or (0.3 if args.quick else 1.0)
    rounds = args.rounds or (2 if args.quick else 3)
    if args.worker:
        worker(args.worker, names, mode, args.save, budget)
        return
    libs = [lib for lib in args.libs.split(",") if lib]
    if "torch" in libs:
        try:
            import importlib.util

            if importlib.util.find_spec("torch") is None:
                libs.remove("torch")
        except ImportError:
            libs.remove("torch")
    tmp = tempfile.mkdtemp(prefix="fx_workloads_")
    save_dir = os.path.join(tmp, "results")
    os.makedirs(save_dir)
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    if "functx" in libs:
        write_bytecode(env, root)
    caches = args.cache_dir or tmp
    warm_start = bool(args.cache_dir and os.path.isdir(caches) and os.listdir(caches))
    env["FUNCTX_CACHE_DIR"] = os.path.join(caches, "functx_cache")
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(caches, "inductor_cache")
    # functx sets OMP_WAIT_POLICY=PASSIVE for its OpenMP threads; torch's spin otherwise, which on
    # a loaded 2-core machine made a torch.compile step 500 times slower
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if not args.gpu:
        env["JAX_PLATFORMS"] = "cpu"
    flags = (" --quick" if args.quick else "") + (" --gpu" if args.gpu else "")
    print(f"benchmarks/workloads.py{flags}: {_versions(libs)}")
    if args.gpu and "torch" in libs:
        print("torch: float32 products in TF32 (set_float32_matmul_precision('high'), as JAX)")
    # CPU: a process per library, workload and round (the peak resident set is per process);
    # GPU: a process per library and round (the device's counters reset; process starts cost)
    groups = [names] if args.gpu else [[n] for n in names]
    per = "library" if args.gpu else "library and workload"
    print(f"{platform.machine()}, {os.cpu_count()} cores; {rounds} rounds, a process per {per}")
    print(f"start: {_load()}", flush=True)
    if warm_start:
        print(f"--cache-dir {caches} is not empty: round 0's first calls are warm too")
    table = {lib: {n: {"times": [], "first": [], "mem": []} for n in names} for lib in libs}
    errors = {}
    notes = []
    t_start = time.perf_counter()
    for r in range(rounds):
        order = libs[r % len(libs) :] + libs[: r % len(libs)]
        for group, lib in ((g, lib) for g in groups for lib in order):
            if lib == "torch" and not any(f in TORCH_FAMILIES for n, f, _ in todo if n in group):
                continue
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib]
            cmd += ["--only", ",".join(group)]
            cmd += (
                ["--budget", str(budget)]
                + (["--quick"] if args.quick else [])
                + (["--gpu"] if args.gpu else [])
            )
            if r == 0:
                cmd += ["--save", save_dir]
            t0 = time.perf_counter()
            left = args.deadline - (t0 - t_start) if args.deadline else None
            if left is not None and left <= 0:
                errors[(lib, f"round {r}")] = "not run (--deadline)"
                continue
            try:
                proc = subprocess.run(
                    cmd, capture_output=True, text=True, env=env, timeout=left and left + 30
                )
            except subprocess.TimeoutExpired:
                errors[(lib, ",".join(group))] = f"round {r}: stopped at the deadline"
                continue
            seen = set()
            for line in proc.stdout.splitlines():
                if not line.startswith("RESULT "):
                    continue
                rec = json.loads(line[7:])
                n = rec["name"]
                seen.add(n)
                if "error" in rec:
                    errors[(lib, n)] = rec["error"]
                elif not rec.get("skip"):
                    if "compiled" in rec and r == 0:
                        notes.append(f"torch.compile after {n}: {rec['compiled']}")
                    cell = table[lib][n]
                    cell["times"].append(statistics.median(rec["times"]))
                    cell["first"].append(rec["first_s"])
                    cell["mem"].append(rec["mem"])
            for n in set(group) - seen:
                errors.setdefault(
                    (lib, n), f"worker exited {proc.returncode}: {proc.stderr.strip()[-300:]}"
                )
            took = time.perf_counter() - t0
            print(f"  round {r} {lib} {','.join(group)}: {took:.0f} s", flush=True)
        if r == 0:
            print(
                "\ncorrectness against JAX (round 0; relative error in the 2-norm, worst output):"
            )
            for name, family, c in workload_list(mode):
                if name not in names:
                    continue
                if c.get("dtype") == "bfloat16":
                    bf16_check(save_dir, libs, name, family, c, mode, names, errors)
                    continue
                tol = 2e-2 if args.gpu else 2e-3
                for lib in libs:
                    if lib == "jax" or (lib == "torch" and family not in TORCH_FAMILIES):
                        continue
                    if (lib, name) in errors:
                        print(f"  {name:15s} {lib:7s} ERROR {errors[(lib, name)]}")
                        continue
                    err, verdict = check(save_dir, lib, name, tol)
                    shown = "—" if err is None else f"{err:.1e}"
                    print(f"  {name:15s} {lib:7s} {shown:>8s} {verdict} (tolerance {tol:g})")
            print(flush=True)
    print(f"end: {_load()}; {time.perf_counter() - t_start:.0f} s in all\n")

    def med(lib, n, key):
        vals = [v for v in table[lib][n][key] if v is not None] if lib in table else []
        return statistics.median(vals) if vals else None

    mem_how = "peak GPU bytes allocated" if args.gpu else "peak RSS growth (VmHWM)"
    has_torch = "torch" in libs
    head = "| workload | size | functx ms | JAX ms |" + (" torch.compile ms |" if has_torch else "")
    head += " functx vs JAX |" + (" vs torch |" if has_torch else "")
    head += f" MiB {mem_how}: functx / JAX" + (" / torch |" if has_torch else " |")
    head += " first call s: functx empty / warm cache, JAX" + (
        ", torch empty |" if has_torch else " |"
    )
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for name, family, c in workload_list(mode):
        if name not in names:
            continue
        f, j = med("functx", name, "times"), med("jax", name, "times")
        t = med("torch", name, "times") if has_torch else None
        row = f"| {name} | {describe(family, c)} | {_fmt_t(f)} | {_fmt_t(j)} |"
        if has_torch:
            row += f" {_fmt_t(t)} |"
        row += f" {j / f:.2f}x |" if f and j else " — |"
        if has_torch:
            row += f" {t / f:.2f}x |" if f and t else " — |"
        mems = [
            _fmt_mem(med(lib, name, "mem"))
            for lib in ("functx", "jax", "torch")[: 3 if has_torch else 2]
        ]
        row += " " + " / ".join(mems) + " |"
        firsts = table["functx"][name]["first"] if "functx" in table else []
        fe = f"{firsts[0]:.1f}" if firsts else "—"
        fw = f"{statistics.median(firsts[1:]):.1f}" if len(firsts) > 1 else "—"
        jf = table["jax"][name]["first"] if "jax" in table else []
        row += f" {fe} / {fw}, {statistics.median(jf):.1f}" if jf else f" {fe} / {fw}, —"
        if has_torch:
            tf = table["torch"][name]["first"]
            row += f", {tf[0]:.1f} |" if tf else ", — |"
        else:
            row += " |"
        print(row)
    print(
        "\nfunctx vs X: X's time / functx's time (above 1: functx faster); medians over rounds of "
        "each process's median per call."
    )
    for note in notes:
        print(note)
    for (lib, n), e in sorted(errors.items()):
        print(f"error: {lib} {n}: {e}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
