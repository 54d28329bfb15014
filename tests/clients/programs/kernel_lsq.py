"""Kernel least squares in the style of JAX's examples/kernel_lsq.py: a Gram matrix built with
nested vmap over an RBF kernel, a regularised squared loss minimised by gradient descent with
momentum inside one jitted fori_loop, then predictions at new points. Synthetic 1-D data."""

import jax.numpy as jnp
import numpy as np
from jax import grad, jit, lax, vmap

RTOL, ATOL = 2e-4, 1e-5
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)


def rbf(x, y, lengthscale=0.5):
    return jnp.exp(-jnp.sum((x - y) ** 2) / (2 * lengthscale**2))


def gram(xs, ys):
    return vmap(lambda x: vmap(lambda y: rbf(x, y))(ys))(xs)


def objective(alpha, k, y, reg):
    resid = k @ alpha - y
    return 0.5 * jnp.mean(resid**2) + 0.5 * reg * alpha @ k @ alpha


@jit
def fit(k, y):
    def body(_, carry):
        alpha, velocity = carry
        velocity = 0.9 * velocity - 0.5 * grad(objective)(alpha, k, y, 1e-3)
        return alpha + velocity, velocity

    zero = jnp.zeros_like(y)
    return lax.fori_loop(0, 60, body, (zero, zero))[0]


def main():
    rng = np.random.RandomState(0)
    xs = np.sort(rng.uniform(-2, 2, size=(40, 1)), axis=0).astype(np.float32)
    ys = (np.sin(3 * xs[:, 0]) + 0.1 * rng.randn(40)).astype(np.float32)
    k = gram(xs, xs)
    alpha = fit(k, ys)
    grid = np.linspace(-2, 2, 7, dtype=np.float32)[:, None]
    return {
        "gram_row": k[3],
        "alpha": alpha,
        "predictions": gram(grid, xs) @ alpha,
        "loss": objective(alpha, k, ys, 1e-3),
    }
