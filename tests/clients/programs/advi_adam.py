"""Automatic differentiation variational inference as in JAX's examples/advi.py: a diagonal
Gaussian approximation to an unnormalised 2-D "banana" density, the ELBO estimated with
reparameterised samples from jax.random inside jit, optimised with the installed JAX's
example_libraries.optimizers.adam. 10 steps."""

import jax.numpy as jnp
from jax import jit, random, value_and_grad
from jax.example_libraries import optimizers
from jax.scipy.stats import norm

RTOL, ATOL = 2e-4, 1e-5


def log_density(z):
    x, y = z[..., 0], z[..., 1]
    return norm.logpdf(x, 0.0, 1.5) + norm.logpdf(y, 0.3 * x**2, 0.5)


def neg_elbo(params, key, n):
    mean, log_std = params
    z = mean + jnp.exp(log_std) * random.normal(key, (n, 2))
    entropy = jnp.sum(log_std + 0.5 * jnp.log(2 * jnp.pi * jnp.e))
    return -(jnp.mean(log_density(z)) + entropy)


def main():
    opt_init, opt_update, get_params = optimizers.adam(0.1)

    @jit
    def step(i, state, key):
        value, g = value_and_grad(neg_elbo)(get_params(state), key, 32)
        return value, opt_update(i, g, state)

    state = opt_init((jnp.array([1.0, -1.0]), jnp.zeros(2)))
    key = random.PRNGKey(3)
    values = []
    for i in range(10):
        key, sub = random.split(key)
        value, state = step(i, state, sub)
        values.append(value)
    return {"values": values, "params": get_params(state), "last_key": key}
