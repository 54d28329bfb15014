"""Data-parallel DP-SGD with ``functx.shard_map``: per-sample gradients, clipping, noise and a
``psum`` of the clipped sum, checked against the single-device step.

Each device of the mesh axis "data" takes its block of the batch, computes the per-sample
gradients of a tanh MLP (``vmap(grad(loss))``), clips each to norm ``clip``, sums them, and the
``psum`` over "data" gives the clipped sum of the whole batch. Gaussian noise of scale
``sigma * clip`` (drawn once per step outside the compiled step and given to every device) is
added and the parameters take an SGD step. The single-device step does the same on the whole batch.

Run it in one process over N host devices (the single-process mode of ``shard_map``)::

    XLA_FLAGS=--xla_force_host_platform_device_count=4 python examples/dp_sgd_data_parallel.py

or with one process per device (gloo on the CPU, NCCL on GPUs)::

    python -m functx.distributed --nproc 4 examples/dp_sgd_data_parallel.py

The same functions take ``jax`` for ``M`` (benchmarks/multi_gpu.py runs both libraries).
"""

from __future__ import annotations

import os
import sys

import numpy as np


def init_params(rng, sizes=(64, 128, 128, 10)):
    """A tanh MLP's weights and biases (float32 NumPy arrays)."""
    params = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        w = (rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32)
        params.append({"w": w, "b": np.zeros(b, np.float32)})
    return params


def make_batch(rng, n, d_in=64, classes=10):
    x = rng.standard_normal((n, d_in)).astype(np.float32)
    y = rng.integers(0, classes, n).astype(np.int32)
    return x, y


def loss(M, params, x, y):
    """Cross-entropy of one example."""
    jnp = M.numpy
    h = x
    for layer in params[:-1]:
        h = jnp.tanh(h @ layer["w"] + layer["b"])
    logits = h @ params[-1]["w"] + params[-1]["b"]
    return M.nn.logsumexp(logits) - logits[y]


def clipped_grad_sum(M, params, x, y, clip, chunk=None):
    """The sum over the examples of each example's gradient clipped to norm ``clip``.

    ``chunk``: add up the sums of blocks of ``chunk`` examples in a ``lax.scan``, so that one
    block's per-example gradients are held at a time (a library that forms them all holds
    batch x parameters floats: 30 GB for 4096 examples of benchmarks/multi_gpu.py's MLP; functx's
    ``jit`` computes the norms and the clipped sum from the layers' factors and needs no chunks).
    """
    n = x.shape[0]
    if chunk is None or n <= chunk:
        return _clipped_block(M, params, x, y, clip)
    if n % chunk:
        raise ValueError(f"clipped_grad_sum: {n} examples are not blocks of chunk={chunk}")
    blocks = (x.reshape(n // chunk, chunk, *x.shape[1:]), y.reshape(n // chunk, chunk))

    def add(total, block):
        s = _clipped_block(M, params, *block, clip)
        return M.tree_util.tree_map(lambda a, b: a + b, total, s), None

    zero = M.tree_util.tree_map(M.numpy.zeros_like, params)
    return M.lax.scan(add, zero, blocks)[0]


def _clipped_block(M, params, x, y, clip):
    jnp = M.numpy
    grads = M.vmap(M.grad(lambda p, a, b: loss(M, p, a, b)), in_axes=(None, 0, 0))(params, x, y)
    leaves = M.tree_util.tree_leaves(grads)
    sq = sum(jnp.sum(g.reshape(g.shape[0], -1) ** 2, axis=1) for g in leaves)
    scale = jnp.minimum(1.0, clip / (jnp.sqrt(sq) + 1e-12))
    return M.tree_util.tree_map(lambda g: jnp.tensordot(scale, g, axes=1), grads)


def draw_noise(M, key, params):
    """Standard normal noise shaped like ``params`` (drawn outside the compiled step and given to
    every device, so every device adds the same noise)."""
    leaves, tree = M.tree_util.tree_flatten(params)
    keys = M.random.split(key, len(leaves))
    noise = [M.random.normal(k, np.shape(p), np.float32) for p, k in zip(leaves, keys)]
    return M.tree_util.tree_unflatten(tree, noise)


def update(M, params, grad_sum, noise, n_total, clip, sigma, lr):
    """SGD on the noised mean: ``params - lr * (sum + sigma * clip * noise) / n_total``."""
    return M.tree_util.tree_map(
        lambda p, g, z: p - lr * (g + sigma * clip * z) / n_total, params, grad_sum, noise
    )


def single_device_step(M, clip=1.0, sigma=0.5, lr=0.1, chunk=None):
    """The step on the whole batch, on one device (``chunk``: ``clipped_grad_sum``'s)."""

    def step(params, x, y, noise):
        s = clipped_grad_sum(M, params, x, y, clip, chunk)
        return update(M, params, s, noise, x.shape[0], clip, sigma, lr)

    return step


def data_parallel_step(M, mesh, clip=1.0, sigma=0.5, lr=0.1, chunk=None):
    """The step with the batch split over the mesh axis "data" (``chunk``: each device's
    ``clipped_grad_sum``'s)."""
    P = M.sharding.PartitionSpec
    n_dev = mesh.shape["data"]

    def body(params, x, y, noise):
        s = M.lax.psum(clipped_grad_sum(M, params, x, y, clip, chunk), "data")
        return update(M, params, s, noise, x.shape[0] * n_dev, clip, sigma, lr)

    # check_vma=False: the gradients of the replicated params are per-device (JAX's varying-axes
    # types would psum them implicitly); the explicit psum above is the data-parallel sum.
    return M.shard_map(
        body,
        mesh=mesh,
        in_specs=(P(), P("data"), P("data"), P()),
        out_specs=P(),
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
    x, y = make_batch(rng, 32 * n)
    noise = draw_noise(functx, functx.random.PRNGKey(0), params)
    step = data_parallel_step(functx, mesh)
    if functx.process_count() == 1:
        step = functx.jit(step)  # (over processes the body is jitted inside shard_map)
    dp = step(params, x, y, noise)
    one = functx.jit(single_device_step(functx))(params, x, y, noise)
    for a, b in zip(functx.tree_util.tree_leaves(dp), functx.tree_util.tree_leaves(one)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    if functx.process_index() == 0:
        print(f"DP-SGD step over {n} devices ({functx.process_count()} processes) matches the")
        print("single-device step")
    if "WORLD_SIZE" in os.environ:
        functx.distributed.shutdown()


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main()
