"""A Linear Recurrent Unit layer (Orvieto et al., 2023) as its JAX reference implementation
writes it: a complex diagonal recurrence with eigenvalues exp(-exp(nu) + i exp(theta)) drawn
by the paper's ring initialisation with jax.random, a complex input projection normalised by
gamma, the recurrence run by lax.associative_scan with a complex combine, the real part of a
complex output projection, and the gradient of a regression loss with respect to the real
parameters, under jit. Sequence length 32, 8 channels, 16 states."""

import jax.numpy as jnp
from jax import jit, lax, random, value_and_grad, vmap

RTOL, ATOL = 1e-4, 1e-5
L, H, N = 32, 8, 16


def init(key, r_min=0.4, r_max=0.9, max_phase=6.28):
    k = random.split(key, 7)
    u1, u2 = random.uniform(k[0], (N,)), random.uniform(k[1], (N,))
    nu_log = jnp.log(-0.5 * jnp.log(u1 * (r_max**2 - r_min**2) + r_min**2))
    theta_log = jnp.log(max_phase * u2)
    lam = jnp.exp(-jnp.exp(nu_log) + 1j * jnp.exp(theta_log))
    return {
        "nu_log": nu_log,
        "theta_log": theta_log,
        "gamma_log": jnp.log(jnp.sqrt(1 - jnp.abs(lam) ** 2)),
        "B_re": random.normal(k[2], (N, H)) / jnp.sqrt(2 * H),
        "B_im": random.normal(k[3], (N, H)) / jnp.sqrt(2 * H),
        "C_re": random.normal(k[4], (H, N)) / jnp.sqrt(N),
        "C_im": random.normal(k[5], (H, N)) / jnp.sqrt(N),
        "D": random.normal(k[6], (H,)),
    }


def combine(a, b):
    a_i, bu_i = a
    a_j, bu_j = b
    return a_j * a_i, a_j * bu_i + bu_j


def lru(p, x):
    lam = jnp.exp(-jnp.exp(p["nu_log"]) + 1j * jnp.exp(p["theta_log"]))
    b = (p["B_re"] + 1j * p["B_im"]) * jnp.exp(p["gamma_log"])[:, None]
    c = p["C_re"] + 1j * p["C_im"]
    bu = vmap(lambda u: b @ u)(x)
    _, h = lax.associative_scan(combine, (jnp.broadcast_to(lam, (L, N)), bu))
    return vmap(lambda h_t, x_t: (c @ h_t).real + p["D"] * x_t)(h, x)


def loss(p, x, target):
    return jnp.mean((lru(p, x) - target) ** 2)


def main():
    key = random.PRNGKey(0)
    params = init(key)
    kx, kt = random.split(random.fold_in(key, 1))
    x, target = random.normal(kx, (L, H)), random.normal(kt, (L, H))
    value, grads = jit(value_and_grad(loss))(params, x, target)
    return {"params": params, "y": jit(lru)(params, x), "loss": value, "grads": grads}
