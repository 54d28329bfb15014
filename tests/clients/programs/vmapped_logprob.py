"""Bayesian logistic regression as in JAX's "vmapped log-probs" notebook: a log joint written for
one parameter vector with jax.scipy.stats.norm.logpdf, batched with vmap, then a mean-field
Gaussian variational posterior fitted by stochastic gradient ascent on the ELBO with
reparameterised jax.random.normal samples, all inside jit. Synthetic data; 8 steps."""

import jax.numpy as jnp
import jax.scipy.stats as stats
from jax import grad, jit, random, vmap

RTOL, ATOL = 2e-4, 1e-5
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
D, N, SAMPLES = 4, 40, 16


def log_joint(beta, x, y):
    prior = jnp.sum(stats.norm.logpdf(beta, 0.0, 1.0))
    logits = x @ beta
    likelihood = jnp.sum(-jnp.log1p(jnp.exp(-jnp.where(y, logits, -logits))))
    return prior + likelihood


def elbo(params, key, x, y):
    mean, log_std = params
    eps = random.normal(key, (SAMPLES, D))
    betas = mean + jnp.exp(log_std) * eps
    log_p = vmap(log_joint, in_axes=(0, None, None))(betas, x, y)
    return jnp.mean(log_p) + jnp.sum(log_std)


@jit
def ascent_step(params, key, x, y):
    g = grad(elbo)(params, key, x, y)
    return tuple(p + 0.02 * gp for p, gp in zip(params, g))


def main():
    key = random.PRNGKey(10)
    k_beta, k_x, k_noise, key = random.split(key, 4)
    true_beta = random.normal(k_beta, (D,))
    x = random.normal(k_x, (N, D))
    y = (x @ true_beta + 0.3 * random.normal(k_noise, (N,))) > 0
    batch = random.normal(key, (5, D))
    params = (jnp.zeros(D), jnp.full(D, -1.0))
    for i in range(8):
        params = ascent_step(params, random.fold_in(key, i), x, y)
    return {
        "y": y,
        "batched_log_joint": vmap(log_joint, in_axes=(0, None, None))(batch, x, y),
        "params": params,
        "elbo": elbo(params, key, x, y),
    }
