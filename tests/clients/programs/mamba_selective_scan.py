"""The selective state-space block of Mamba (Gu and Dao, 2023) as minimal JAX reference
implementations write it, without its causal conv1d: an input projection split into a signal and
a gate, input-dependent step sizes through softplus, A = -exp(A_log), the discretised recurrence
run step by step with lax.scan, a SiLU gate and an output projection; parameters drawn with
jax.random; the loss and its gradient under jit. Length 24, model width 8, inner 16, state 4."""

import jax
import jax.numpy as jnp
from jax import jit, lax, random, value_and_grad

RTOL, ATOL = 2e-4, 1e-5
L, D_MODEL, D_INNER, N, DT_RANK = 24, 8, 16, 4, 2


def init(key):
    k = random.split(key, 5)
    return {
        "in_proj": random.normal(k[0], (D_MODEL, 2 * D_INNER)) * 0.2,
        "x_proj": random.normal(k[1], (D_INNER, DT_RANK + 2 * N)) * 0.2,
        "dt_proj": random.normal(k[2], (DT_RANK, D_INNER)) * 0.5,
        "dt_bias": jnp.full((D_INNER,), -1.0),
        "A_log": jnp.log(jnp.tile(jnp.arange(1, N + 1, dtype=jnp.float32), (D_INNER, 1))),
        "D": jnp.ones(D_INNER),
        "out_proj": random.normal(k[3], (D_INNER, D_MODEL)) * 0.2,
    }


def selective_scan(u, delta, A, B, C, D):
    dA = jnp.exp(delta[:, :, None] * A)  # (L, D_INNER, N)
    dBu = delta[:, :, None] * B[:, None, :] * u[:, :, None]

    def step(state, inputs):
        dA_t, dBu_t, C_t = inputs
        state = dA_t * state + dBu_t
        return state, state @ C_t

    _, ys = lax.scan(step, jnp.zeros((D_INNER, N)), (dA, dBu, C))
    return ys + u * D


def block(p, x):
    xz = x @ p["in_proj"]
    u, gate = xz[:, :D_INNER], xz[:, D_INNER:]
    u = jax.nn.silu(u)
    dbc = u @ p["x_proj"]
    dt, B, C = dbc[:, :DT_RANK], dbc[:, DT_RANK : DT_RANK + N], dbc[:, DT_RANK + N :]
    delta = jax.nn.softplus(dt @ p["dt_proj"] + p["dt_bias"])
    y = selective_scan(u, delta, -jnp.exp(p["A_log"]), B, C, p["D"])
    return (y * jax.nn.silu(gate)) @ p["out_proj"]


def loss(p, x):
    return jnp.mean((block(p, x) - x) ** 2)


def main():
    params = init(random.PRNGKey(1))
    x = random.normal(random.PRNGKey(2), (L, D_MODEL))
    value, grads = jit(value_and_grad(loss))(params, x)
    return {"params": params, "y": jit(block)(params, x), "loss": value, "grads": grads}
