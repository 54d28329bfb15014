"""A whole training run inside one lax.scan, the pattern of JAX training-loop tutorials: a small
regression MLP, the PRNG key carried and split every step, a random minibatch drawn with
jax.random.choice (without replacement), dropout from jax.random.bernoulli, Adam written out by
hand in the carry; the run vmapped over two seeds and jitted. 64 points, 8 steps, batch 8."""

import jax
import jax.numpy as jnp
from jax import jit, lax, random, vmap

RTOL, ATOL = 5e-5, 1e-6
# (JAX alone: x moved by one ulp moves b1 by 5e-5 relative, Adam dividing by sqrt(v); the
# H100's exp/tanh, a few ulp from XLA's CPU ones, gave b1 1e-4 off: benchmarks/gpu_clients.py)
GPU_RTOL = 5e-4
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)


def dataset(key):
    kx, kn = random.split(key)
    x = random.uniform(kx, (64, 1), minval=-2.0, maxval=2.0)
    return x, jnp.sin(2.0 * x) + 0.05 * random.normal(kn, (64, 1))


def init(key):
    k1, k2 = random.split(key)
    return {
        "w1": random.normal(k1, (1, 16)),
        "b1": jnp.zeros(16),
        "w2": random.normal(k2, (16, 1)) * 0.25,
        "b2": jnp.zeros(1),
    }


def loss(params, x, y, key):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    keep = random.bernoulli(key, 0.9, h.shape)
    h = jnp.where(keep, h / 0.9, 0.0)
    return jnp.mean((h @ params["w2"] + params["b2"] - y) ** 2)


def train(seed, x, y, steps=8, lr=0.05):
    key = random.PRNGKey(seed)
    key, sub = random.split(key)
    params = init(sub)
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)

    def step(carry, t):
        params, m, v, key = carry
        key, kb, kd = random.split(key, 3)
        idx = random.choice(kb, x.shape[0], (8,), replace=False)
        value, g = jax.value_and_grad(loss)(params, x[idx], y[idx], kd)
        m = jax.tree_util.tree_map(lambda a, b: 0.9 * a + 0.1 * b, m, g)
        v = jax.tree_util.tree_map(lambda a, b: 0.999 * a + 0.001 * b * b, v, g)
        c1, c2 = 1.0 - 0.9 ** (t + 1.0), 1.0 - 0.999 ** (t + 1.0)
        params = jax.tree_util.tree_map(
            lambda p, a, b: p - lr * (a / c1) / (jnp.sqrt(b / c2) + 1e-8), params, m, v
        )
        return (params, m, v, key), value

    (params, _, _, key), losses = lax.scan(
        step, (params, zeros, zeros, key), jnp.arange(steps, dtype=jnp.float32)
    )
    return params, losses, key


def main():
    x, y = dataset(random.PRNGKey(0))
    params, losses, keys = jit(vmap(train, in_axes=(0, None, None)))(jnp.arange(2), x, y)
    return {"params": params, "losses": losses, "keys": keys}
