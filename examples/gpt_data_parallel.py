"""Data-parallel training of a GPT block with ``functx.shard_map``: each device takes its block of
the batch, computes the loss gradient, and ``pmean`` over the mesh axis "data" averages the
gradients before the SGD step; checked against the single-device step on the whole batch.

The model: token embedding, one pre-norm transformer block (causal multi-head attention and a
GELU MLP) and a language-model head; the loss is the next-token cross-entropy.

Run it in one process over N host devices (the single-process mode of ``shard_map``)::

    XLA_FLAGS=--xla_force_host_platform_device_count=4 python examples/gpt_data_parallel.py

or with one process per device (gloo on the CPU, NCCL on GPUs)::

    python -m functx.distributed --nproc 4 examples/gpt_data_parallel.py

The same functions take ``jax`` for ``M`` (benchmarks/multi_gpu.py runs both libraries).
"""

from __future__ import annotations

import os
import sys

import numpy as np


def init_params(rng, vocab=64, d=32, heads=4, t=16):
    """The GPT block's parameters (float32 NumPy arrays); ``heads`` and ``t`` are recorded."""

    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)

    def zeros(n):
        return np.zeros(n, np.float32)

    del heads, t
    return {
        "embed": w(vocab, d),
        "ln1": {"g": np.ones(d, np.float32), "b": zeros(d)},
        "qkv": w(d, 3 * d),
        "proj": w(d, d),
        "ln2": {"g": np.ones(d, np.float32), "b": zeros(d)},
        "fc1": w(d, 4 * d),
        "fc2": w(4 * d, d),
        "head": w(d, vocab),
    }


def make_batch(rng, n, vocab=64, t=16):
    tokens = rng.integers(0, vocab, (n, t + 1)).astype(np.int32)
    return tokens[:, :-1], tokens[:, 1:]


def layer_norm(M, x, p):
    jnp = M.numpy
    mu = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / jnp.sqrt(var + 1e-5) * p["g"] + p["b"]


def block(M, params, h, heads):
    jnp = M.numpy
    b, t, d = h.shape
    q, k, v = jnp.split(layer_norm(M, h, params["ln1"]) @ params["qkv"], 3, axis=-1)

    def split_heads(z):
        return z.reshape(b, t, heads, d // heads).transpose(0, 2, 1, 3)

    q, k, v = split_heads(q), split_heads(k), split_heads(v)
    scores = q @ k.transpose(0, 1, 3, 2) / np.float32(np.sqrt(d // heads))
    causal = np.tril(np.ones((t, t), bool))
    scores = jnp.where(causal, scores, np.float32(-1e9))
    att = M.nn.softmax(scores, axis=-1) @ v
    h = h + att.transpose(0, 2, 1, 3).reshape(b, t, d) @ params["proj"]
    m = M.nn.gelu(layer_norm(M, h, params["ln2"]) @ params["fc1"]) @ params["fc2"]
    return h + m


def loss(M, params, tokens, targets, heads=4):
    """Mean next-token cross-entropy of a batch."""
    jnp = M.numpy
    h = params["embed"][tokens]
    logits = block(M, params, h, heads) @ params["head"]
    logp = M.nn.log_softmax(logits, axis=-1)
    picked = jnp.take_along_axis(logp, targets[..., None], axis=-1)
    return -jnp.mean(picked)


def sgd(M, params, grads, lr):
    return M.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)


def single_device_step(M, lr=0.1, heads=4):
    """One SGD step on the whole batch: (new params, loss)."""

    def step(params, tokens, targets):
        value, grads = M.value_and_grad(lambda p: loss(M, p, tokens, targets, heads))(params)
        return sgd(M, params, grads, lr), value

    return step


def data_parallel_step(M, mesh, lr=0.1, heads=4):
    """The step with the batch split over the mesh axis "data": local gradients, ``pmean``."""
    P = M.sharding.PartitionSpec

    def body(params, tokens, targets):
        value, grads = M.value_and_grad(lambda p: loss(M, p, tokens, targets, heads))(params)
        grads = M.lax.pmean(grads, "data")
        return sgd(M, params, grads, lr), M.lax.pmean(value, "data")

    # check_vma=False: the gradients of the replicated params are per-device (JAX's varying-axes
    # types would psum them implicitly); the explicit pmean above is the data-parallel mean.
    return M.shard_map(
        body,
        mesh=mesh,
        in_specs=(P(), P("data"), P("data")),
        out_specs=(P(), P()),
        check_vma=False,
    )


def main():
    import functx

    if "WORLD_SIZE" in os.environ:
        functx.distributed.initialize()
    devices = functx.sharding.mesh_devices()
    n = len(devices)
    mesh = functx.sharding.Mesh(np.array(devices), ("data",))
    rng = np.random.default_rng(0)
    params = init_params(rng)
    tokens, targets = make_batch(rng, 4 * n)
    step = data_parallel_step(functx, mesh)
    if functx.process_count() == 1:
        step = functx.jit(step)  # (over processes the body is jitted inside shard_map)
    # (float32 products in full precision: a GPU's default TF32 products round differently in
    # the two reduction orders, by more than this check's tolerance)
    with functx.default_matmul_precision("highest"):
        dp = step(params, tokens, targets)
        one = functx.jit(single_device_step(functx))(params, tokens, targets)
    for a, b in zip(functx.tree_util.tree_leaves(dp), functx.tree_util.tree_leaves(one)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=2e-5, atol=2e-6)
    if functx.process_index() == 0:
        print(f"GPT block step over {n} devices ({functx.process_count()} processes) matches the")
        print(f"single-device step (loss {float(np.asarray(one[1])):.4f})")
    if "WORLD_SIZE" in os.environ:
        functx.distributed.shutdown()


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main()
