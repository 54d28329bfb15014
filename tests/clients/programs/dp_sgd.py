"""Differentially private SGD, the algorithm of JAX's examples/differentially_private_sgd.py:
per-example gradients with vmap(grad), each clipped to an L2 norm bound across the whole
parameter tree, summed, with Gaussian noise from jax.random added inside the jitted step (a new
key folded in per step). Logistic-regression-sized MLP, synthetic data; 4 steps."""

import jax
import jax.numpy as jnp
import numpy as np
from jax import grad, jit, random, vmap

RTOL, ATOL = 1e-4, 1e-6
L2_CLIP, NOISE_MULTIPLIER, LR, BATCH = 1.0, 1.1, 0.25, 16


def init(key):
    k1, k2 = random.split(key)
    return {
        "w1": random.normal(k1, (8, 16)) * 0.3,
        "b1": jnp.zeros(16),
        "w2": random.normal(k2, (16,)) * 0.3,
    }


def example_loss(params, x, y):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    logit = h @ params["w2"]
    return jnp.logaddexp(0.0, -y * logit)


def clipped(g):
    leaves = jax.tree_util.tree_leaves(g)
    norm = jnp.sqrt(sum(jnp.sum(leaf**2) for leaf in leaves))
    scale = jnp.minimum(1.0, L2_CLIP / (norm + 1e-12))
    return jax.tree_util.tree_map(lambda leaf: leaf * scale, g)


@jit
def private_step(params, x, y, key, step):
    per_example = vmap(grad(example_loss), in_axes=(None, 0, 0))(params, x, y)
    per_example = vmap(clipped)(per_example)
    summed = jax.tree_util.tree_map(lambda g: jnp.sum(g, axis=0), per_example)
    leaves, treedef = jax.tree_util.tree_flatten(summed)
    keys = random.split(random.fold_in(key, step), len(leaves))
    noisy = [
        g + L2_CLIP * NOISE_MULTIPLIER * random.normal(k, g.shape) for g, k in zip(leaves, keys)
    ]
    mean = jax.tree_util.tree_unflatten(treedef, [g / BATCH for g in noisy])
    return jax.tree_util.tree_map(lambda p, g: p - LR * g, params, mean)


def main():
    rng = np.random.RandomState(0)
    x = rng.randn(4 * BATCH, 8).astype(np.float32)
    y = np.sign(x[:, 0] + 0.3 * rng.randn(4 * BATCH)).astype(np.float32)
    key = random.PRNGKey(42)
    params = init(key)
    start = params
    for step in range(4):
        sl = slice(step * BATCH, (step + 1) * BATCH)
        params = private_step(params, x[sl], y[sl], key, step)
    loss = jnp.mean(vmap(example_loss, in_axes=(None, 0, 0))(params, x, y))
    return {"init": start, "params": params, "loss": loss}
