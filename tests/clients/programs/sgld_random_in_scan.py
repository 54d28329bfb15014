"""Stochastic gradient Langevin dynamics on a 2-D Gaussian-mixture log-density, the pattern of
JAX sampling tutorials: the PRNG key travels in a lax.scan carry, is split at every step, and
jax.random.normal noise is drawn inside the jitted loop; a second chain family runs vmapped over
split keys. 50 steps, 4 chains."""

import jax.numpy as jnp
from jax import grad, jit, lax, random, vmap
from jax.scipy.special import logsumexp

RTOL, ATOL = 2e-4, 1e-5
MEANS = jnp.array([[-1.5, 0.0], [1.5, 0.5]])


def log_density(x):
    return logsumexp(-0.5 * jnp.sum((x - MEANS) ** 2, axis=1)) - jnp.log(2.0)


def chain(key, x0, step_size=0.05, steps=50):
    def step(carry, _):
        key, x = carry
        key, sub = random.split(key)
        noise = random.normal(sub, x.shape)
        x = x + 0.5 * step_size * grad(log_density)(x) + jnp.sqrt(step_size) * noise
        return (key, x), x

    (key, x), xs = lax.scan(step, (key, x0), None, length=steps)
    return key, xs


def main():
    key = random.PRNGKey(2024)
    last_key, xs = jit(chain)(key, jnp.zeros(2))
    keys = random.split(random.fold_in(key, 7), 4)
    chain_keys, many = jit(vmap(chain, in_axes=(0, None)))(keys, jnp.array([0.5, -0.5]))
    return {
        "last_key": last_key,
        "samples": xs,
        "keys": keys,
        "chain_keys": chain_keys,
        "many": many,
    }
