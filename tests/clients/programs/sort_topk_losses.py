"""Order-statistic losses of robust and ranking objectives: a trimmed mean-squared error that
drops the largest residuals (jnp.sort), a top-k hinge loss (lax.top_k, its indices used to
gather), a pinball loss at the batch's 0.9 quantile (jnp.quantile) and a median-centred
absolute deviation (jnp.median), with argsort ranks; gradients under jit and per-row losses
under vmap. 4 rows of 12 scores."""

import jax.numpy as jnp
from jax import grad, jit, lax, random, vmap

RTOL, ATOL = 1e-5, 1e-6
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)


def trimmed_mse(pred, y, keep=9):
    r = jnp.sort((pred - y) ** 2)
    return jnp.mean(r[:keep])


def topk_hinge(scores, labels, k=3):
    vals, idx = lax.top_k(scores, k)
    hit = jnp.take(labels, idx)
    return jnp.sum(jnp.maximum(0.0, 1.0 - vals * (2.0 * hit - 1.0)))


def quantile_pinball(pred, y, q=0.9):
    r = y - pred
    level = jnp.quantile(r, q)
    return jnp.mean(jnp.maximum(q * (r - level), (q - 1.0) * (r - level))) + level**2


def mad(x):
    return jnp.median(jnp.abs(x - jnp.median(x)))


def total(pred, y, labels):
    return (
        trimmed_mse(pred, y)
        + 0.1 * topk_hinge(pred, labels)
        + quantile_pinball(pred, y)
        + mad(pred)
    )


def main():
    kp, ky, kl = random.split(random.PRNGKey(4), 3)
    pred = random.normal(kp, (4, 12))
    y = random.normal(ky, (4, 12))
    labels = random.bernoulli(kl, 0.4, (4, 12)).astype(jnp.float32)
    per_row = vmap(total)(pred, y, labels)
    return {
        "per_row": per_row,
        "grads": jit(vmap(grad(total)))(pred, y, labels),
        "ranks": jnp.argsort(jnp.argsort(-pred, axis=1), axis=1),
        "sorted_desc": jnp.sort(pred, axis=1, descending=True),
        "top3": lax.top_k(pred, 3),
        "quantiles": jnp.quantile(pred, jnp.array([0.1, 0.5, 0.9]), axis=1),
        "percentile": jnp.percentile(y, 25.0),
        "median": jnp.median(pred, axis=0),
    }
