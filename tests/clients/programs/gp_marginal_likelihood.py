"""Gaussian-process regression as GP tutorials write it: an RBF kernel plus noise, the negative
log marginal likelihood from jax.scipy.linalg.cho_factor / cho_solve and jnp.linalg.slogdet
(and the Cholesky log-determinant, to check them against each other), its gradient with respect
to the log hyperparameters under jit, a few steps of gradient descent on them, the posterior mean
and variance, and the likelihood vmapped over a grid of length scales. 30 points in 1-D."""

import jax
import jax.numpy as jnp
from jax import grad, jit, random, value_and_grad, vmap
from jax.scipy.linalg import cho_factor, cho_solve

RTOL, ATOL = 5e-4, 1e-4  # float32 Cholesky of a 30x30 kernel matrix
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)


def rbf(x1, x2, log_ell, log_sf):
    d2 = (x1[:, None] - x2[None, :]) ** 2
    return jnp.exp(2.0 * log_sf) * jnp.exp(-0.5 * d2 / jnp.exp(2.0 * log_ell))


def neg_log_marginal(params, x, y):
    k = rbf(x, x, params["log_ell"], params["log_sf"])
    k = k + (jnp.exp(2.0 * params["log_sn"]) + 1e-5) * jnp.eye(x.shape[0])
    factor = cho_factor(k, lower=True)
    alpha = cho_solve(factor, y)
    _, logdet = jnp.linalg.slogdet(k)
    return 0.5 * y @ alpha + 0.5 * logdet + 0.5 * x.shape[0] * jnp.log(2.0 * jnp.pi)


def cholesky_logdet(params, x):
    k = rbf(x, x, params["log_ell"], params["log_sf"])
    k = k + (jnp.exp(2.0 * params["log_sn"]) + 1e-5) * jnp.eye(x.shape[0])
    c, _ = cho_factor(k, lower=True)
    return 2.0 * jnp.sum(jnp.log(jnp.diag(c)))


def posterior(params, x, y, xs):
    k = rbf(x, x, params["log_ell"], params["log_sf"])
    k = k + (jnp.exp(2.0 * params["log_sn"]) + 1e-5) * jnp.eye(x.shape[0])
    ks = rbf(xs, x, params["log_ell"], params["log_sf"])
    factor = cho_factor(k, lower=True)
    mean = ks @ cho_solve(factor, y)
    var = jnp.exp(2.0 * params["log_sf"]) - jnp.sum(ks * cho_solve(factor, ks.T).T, axis=1)
    return mean, var


def main():
    kx, kn = random.split(random.PRNGKey(3))
    x = jnp.sort(random.uniform(kx, (30,), minval=-3.0, maxval=3.0))
    y = jnp.sin(2.0 * x) + 0.1 * random.normal(kn, (30,))
    params = {"log_ell": jnp.array(0.0), "log_sf": jnp.array(0.0), "log_sn": jnp.array(-1.0)}
    step = jit(value_and_grad(neg_log_marginal))
    history = []
    for _ in range(3):
        value, g = step(params, x, y)
        params = jax.tree_util.tree_map(lambda p, d: p - 0.02 * d, params, g)
        history.append(value)
    grid = jnp.linspace(-1.0, 1.0, 3)

    def at_ell(log_ell):
        return neg_log_marginal(dict(params, log_ell=log_ell), x, y)

    return {
        "history": history,
        "params": params,
        "eager_value": neg_log_marginal(params, x, y),
        "logdets": (
            jnp.linalg.slogdet(rbf(x, x, 0.0, 0.0) + jnp.eye(30)),
            cholesky_logdet(params, x),
        ),
        "posterior": jit(posterior)(params, x, y, jnp.linspace(-3.0, 3.0, 7)),
        "grid": vmap(at_ell)(grid),
        "grid_grads": jit(vmap(grad(at_ell)))(grid),
    }
