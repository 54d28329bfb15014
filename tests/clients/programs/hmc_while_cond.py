"""Hamiltonian Monte Carlo as NumPyro-free research code writes it: leapfrog integration in
lax.fori_loop, a Metropolis accept/reject with lax.cond on a jax.random.uniform draw, the key
carried and split inside lax.scan over iterations, and a NUTS-like trajectory that doubles
with lax.while_loop until a U-turn or a maximum depth; the target is a correlated 2-D Gaussian
plus a banana term; chains vmapped over keys. 20 iterations, 3 chains."""

import jax
import jax.numpy as jnp
from jax import lax

RTOL, ATOL = 2e-4, 2e-5
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
PREC = jnp.array([[2.0, -0.8], [-0.8, 1.0]])


def logp(x):
    banana = 0.1 * (x[1] - x[0] ** 2) ** 2
    return -0.5 * x @ PREC @ x - banana


def leapfrog(x, p, eps, n):
    g = jax.grad(logp)

    def body(_, state):
        x, p = state
        p = p + 0.5 * eps * g(x)
        x = x + eps * p
        p = p + 0.5 * eps * g(x)
        return x, p

    return lax.fori_loop(0, n, body, (x, p))


def u_turn_length(x, p, eps, max_depth=5):
    """Doubles the trajectory until (x_end - x0) . p_end < 0, as NUTS's stopping rule."""

    def cond(state):
        depth, _, xe, pe = state
        return (depth < max_depth) & (jnp.dot(xe - x, pe) >= 0)

    def body(state):
        depth, n, xe, pe = state
        xe, pe = leapfrog(xe, pe, eps, n)
        return depth + 1, 2 * n, xe, pe

    depth, n, _, _ = lax.while_loop(cond, body, (0, 1, x, p))
    return depth, n


def hmc_step(carry, _):
    key, x = carry
    key, kp, ku = jax.random.split(key, 3)
    p = jax.random.normal(kp, x.shape)
    depth, _ = u_turn_length(x, p, 0.1)
    xn, pn = leapfrog(x, p, 0.1, 8)
    log_ratio = logp(xn) - 0.5 * pn @ pn - (logp(x) - 0.5 * p @ p)
    accept = jnp.log(jax.random.uniform(ku)) < log_ratio
    x = lax.cond(accept, lambda: xn, lambda: x)
    return (key, x), (x, accept, depth, jnp.minimum(1.0, jnp.exp(log_ratio)))


@jax.jit
def run_chain(key, x0):
    (key, x), trace = lax.scan(hmc_step, (key, x0), None, length=20)
    return key, trace


def main():
    keys = jax.random.split(jax.random.PRNGKey(11), 3)
    last_keys, (xs, accepted, depths, probs) = jax.vmap(run_chain, in_axes=(0, None))(
        keys, jnp.array([1.0, -1.0])
    )
    return {
        "last_keys": last_keys,
        "samples": xs,
        "accepted": accepted,
        "depths": depths,
        "accept_prob": probs,
        "mean": jnp.mean(xs, axis=(0, 1)),
    }
