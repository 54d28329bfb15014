"""EM for a discrete hidden Markov model in float64, as HMM tutorials written in JAX do it: the
forward algorithm in log space with lax.scan and logsumexp, and the E-step's expected counts
obtained as gradients of the log-likelihood with respect to the log-parameters (so grad runs
through the scan); the M-step renormalises them. The whole EM iteration is one jitted
lax.fori_loop. Observations sampled with NumPy from a known model; 4 states, 6 symbols."""

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax import grad, jit, lax  # noqa: E402
from jax.scipy.special import logsumexp  # noqa: E402

RTOL, ATOL = 1e-8, 1e-10
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)


def log_likelihood(log_params, obs):
    log_init, log_trans, log_emit = log_params

    def step(log_alpha, o):
        log_alpha = logsumexp(log_alpha[:, None] + log_trans, axis=0) + log_emit[:, o]
        return log_alpha, logsumexp(log_alpha)

    first = log_init + log_emit[:, obs[0]]
    last, _ = lax.scan(step, first, obs[1:])
    return logsumexp(last)


def em_iteration(params, obs):
    logs = tuple(jnp.log(p) for p in params)
    counts = grad(log_likelihood)(logs, obs)  # expected counts: d logZ / d log(parameter)
    init_c, trans_c, emit_c = counts
    return (
        init_c / jnp.sum(init_c),
        trans_c / jnp.sum(trans_c, axis=1, keepdims=True),
        emit_c / jnp.sum(emit_c, axis=1, keepdims=True),
    )


@jit
def fit(params, obs):
    return lax.fori_loop(0, 5, lambda _, p: em_iteration(p, obs), params)


def sample(rng, trans, emit, n):
    states, obs = [0], []
    for _ in range(n):
        obs.append(rng.choice(emit.shape[1], p=emit[states[-1]]))
        states.append(rng.choice(trans.shape[0], p=trans[states[-1]]))
    return np.array(obs)


def main():
    rng = np.random.RandomState(0)
    true_trans = rng.dirichlet(np.ones(4) * 0.5, size=4) * 0.6 + np.eye(4) * 0.4
    true_emit = rng.dirichlet(np.ones(6) * 0.3, size=4)
    obs = sample(rng, true_trans, true_emit, 300)
    params = (
        np.full(4, 0.25),
        rng.dirichlet(np.ones(4), size=4),
        rng.dirichlet(np.ones(6), size=4),
    )
    before = log_likelihood(tuple(jnp.log(p) for p in params), obs)
    fitted = fit(params, obs)
    after = log_likelihood(tuple(jnp.log(p) for p in fitted), obs)
    return {"before": before, "after": after, "params": fitted}
