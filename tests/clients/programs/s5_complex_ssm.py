"""An S5 layer (Smith et al., 2023) in the style of its JAX reference code: a diagonal complex
state matrix, zero-order-hold discretisation (Lambda_bar = exp(Lambda * step), B_bar =
(Lambda_bar - 1) / Lambda * B) with learned log step sizes, a parallel scan over the sequence,
twice the real part of the complex output projection (conjugate symmetry), vmapped over a batch,
and the gradient of a loss under jit. Batch 3, length 24, 6 channels, 8 states."""

import jax.numpy as jnp
from jax import grad, jit, lax, random, vmap

RTOL, ATOL = 1e-4, 1e-5
BATCH, L, H, P = 3, 24, 6, 8


def init(key):
    k = random.split(key, 5)
    n = jnp.arange(P)
    return {
        "lambda_re": -0.5 * jnp.ones(P),
        "lambda_im": jnp.pi * n,
        "B": random.normal(k[0], (P, H, 2)) / jnp.sqrt(2 * H),
        "C": random.normal(k[1], (H, P, 2)) / jnp.sqrt(2 * P),
        "D": random.normal(k[2], (H,)),
        "log_step": jnp.log(0.001) + random.uniform(k[3], (P,)) * (jnp.log(0.1) - jnp.log(0.001)),
    }


def discretize(p):
    lam = p["lambda_re"] + 1j * p["lambda_im"]
    b = p["B"][..., 0] + 1j * p["B"][..., 1]
    lam_bar = jnp.exp(lam * jnp.exp(p["log_step"]))
    b_bar = ((lam_bar - 1.0) / lam)[:, None] * b
    return lam_bar, b_bar


def apply_ssm(p, u):
    lam_bar, b_bar = discretize(p)
    c = p["C"][..., 0] + 1j * p["C"][..., 1]
    bu = u @ b_bar.T

    def combine(x, y):
        return y[0] * x[0], y[0] * x[1] + y[1]

    _, xs = lax.associative_scan(combine, (jnp.tile(lam_bar, (L, 1)), bu))
    return 2.0 * (xs @ c.T).real + u * p["D"]


def loss(p, u, target):
    return jnp.mean((vmap(apply_ssm, in_axes=(None, 0))(p, u) - target) ** 2)


def main():
    params = init(random.PRNGKey(7))
    ku, kt = random.split(random.PRNGKey(8))
    u, target = random.normal(ku, (BATCH, L, H)), random.normal(kt, (BATCH, L, H))
    g = jit(grad(loss))(params, u, target)
    return {"params": params, "loss": jit(loss)(params, u, target), "grads": g}
