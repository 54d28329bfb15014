"""A Mamba-style block with its causal depthwise conv1d, as compact JAX ports write it: an input
projection into a signal and a gate, a causal depthwise convolution of width 4 along time
(lax.conv_general_dilated with feature_group_count = channels and left padding), SiLU,
input-dependent decays, and the diagonal linear recurrence h_t = a_t * h_{t-1} + b_t solved in
parallel by lax.associative_scan over (a, b) pairs; the loss of the block vmapped over a batch
of sequences, and its gradient under jit. Length 16, width 4, inner 8, state 2."""

import jax.numpy as jnp
from jax import grad, jit, lax, random, vmap
from jax.nn import silu, softplus

RTOL, ATOL = 2e-4, 2e-5
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
L, D, E, N, K = 16, 4, 8, 2, 4


def init(key):
    k = random.split(key, 5)
    return {
        "w_in": random.normal(k[0], (D, 2 * E)) * 0.4,
        "conv": random.normal(k[1], (K, 1, E)) * 0.4,  # (width, in per group, channels): WIO
        "w_dt": random.normal(k[2], (E, E)) * 0.3,
        "w_bc": random.normal(k[3], (E, 2 * N)) * 0.3,
        "a_log": jnp.zeros((E, N)),
        "w_out": random.normal(k[4], (E, D)) * 0.4,
    }


def causal_conv(x, w):  # x: (L, E), w: (K, 1, E)
    y = lax.conv_general_dilated(
        x[None],
        w,
        window_strides=(1,),
        padding=[(K - 1, 0)],
        dimension_numbers=("NWC", "WIO", "NWC"),
        feature_group_count=E,
    )
    return y[0]


def linear_recurrence(a, b):
    def combine(left, right):
        a_l, b_l = left
        a_r, b_r = right
        return a_r * a_l, a_r * b_l + b_r

    return lax.associative_scan(combine, (a, b), axis=0)[1]


def block(params, x):  # x: (L, D)
    u, gate = jnp.split(x @ params["w_in"], 2, axis=-1)
    u = silu(causal_conv(u, params["conv"]))
    dt = softplus(u @ params["w_dt"])  # (L, E)
    bc = u @ params["w_bc"]
    b_t, c_t = bc[:, :N], bc[:, N:]
    a = jnp.exp(dt[:, :, None] * -jnp.exp(params["a_log"]))  # (L, E, N)
    b = dt[:, :, None] * b_t[:, None, :] * u[:, :, None]
    h = linear_recurrence(a, b)
    y = jnp.einsum("len,ln->le", h, c_t) * silu(gate)
    return x + y @ params["w_out"]


def loss(params, xs):
    return jnp.mean(vmap(block, in_axes=(None, 0))(params, xs) ** 2)


def main():
    kp, kx = random.split(random.PRNGKey(5))
    params = init(kp)
    xs = random.normal(kx, (3, L, D))
    g = jit(grad(loss))(params, xs)
    return {
        "out": block(params, xs[0]),
        "grad": g,
    }
