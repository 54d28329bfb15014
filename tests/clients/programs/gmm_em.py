"""Expectation-maximisation for a Gaussian mixture as machine-learning course code writes it in
JAX: full-covariance component log-densities from jax.scipy.stats.multivariate_normal.logpdf
vmapped over components, responsibilities by jax.nn.softmax over log-weights plus
log-densities, the log-likelihood by jax.scipy.special.logsumexp, the M-step's weighted means
and covariances by jnp.einsum (plus a small ridge), the EM iterations in lax.fori_loop under
jit, then the posterior over components of new points, and the log-likelihood's gradient
with respect to the means. 2-D data of 60 points from three clusters, 3 components, 8 steps."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.scipy.special import logsumexp
from jax.scipy.stats import multivariate_normal

RTOL, ATOL = 5e-4, 5e-5  # float32 EM: each step's rounding feeds the next
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
K, N, D = 3, 60, 2


def log_joint(params, x):
    logw, means, covs = params
    logpdf = jax.vmap(multivariate_normal.logpdf, in_axes=(None, 0, 0), out_axes=1)
    return jax.nn.log_softmax(logw) + logpdf(x, means, covs)  # (N, K)


def log_likelihood(params, x):
    return jnp.sum(logsumexp(log_joint(params, x), axis=1))


def em_step(params, x):
    logw, means, covs = params
    lj = log_joint(params, x)
    resp = jax.nn.softmax(lj, axis=1)
    nk = resp.sum(axis=0)
    means = (resp.T @ x) / nk[:, None]
    diff = x[None] - means[:, None]  # (K, N, D)
    covs = jnp.einsum("nk,kni,knj->kij", resp, diff, diff) / nk[:, None, None]
    covs = covs + 1e-3 * jnp.eye(D)
    return jnp.log(nk / x.shape[0]), means, covs


@jax.jit
def fit(params, x):
    def body(i, carry):
        params, trace = carry
        params = em_step(params, x)
        return params, trace.at[i].set(log_likelihood(params, x))

    return lax.fori_loop(0, 8, body, (params, jnp.zeros(8)))


def main():
    kc, kx, ki = jax.random.split(jax.random.PRNGKey(3), 3)
    centres = jnp.array([[-2.0, 0.0], [2.0, 1.0], [0.0, -2.5]])
    labels = jax.random.randint(kc, (N,), 0, K)
    x = centres[labels] + 0.6 * jax.random.normal(kx, (N, D))
    init_means = x[jax.random.choice(ki, N, (K,), replace=False)]
    params = (jnp.zeros(K), init_means, jnp.tile(jnp.eye(D), (K, 1, 1)))
    params, trace = fit(params, x)
    queries = jnp.array([[-2.0, 0.5], [1.5, 1.0], [0.0, 0.0]])
    posterior = jax.nn.softmax(log_joint(params, queries), axis=-1)
    assignment = jnp.argmax(posterior, axis=-1)
    grad_means = jax.grad(lambda m: log_likelihood((params[0], m, params[2]), x))(params[1])
    return {
        "params": params,
        "trace": trace,
        "posterior": posterior,
        "assignment": assignment,
        "grad_means": grad_means,
    }
