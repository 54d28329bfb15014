"""A diagonal linear RNN (the LRU/S5 recurrence h_t = a_t * h_{t-1} + b_t with input-dependent
gates) computed in parallel with jax.lax.associative_scan over (a, b) pairs, as parallel-scan
papers write it; checked against the sequential lax.scan, run in reverse=True for a
bidirectional layer, on a 2-D tuple of leaves along axis=1, differentiated under jit with
respect to the gate parameters, vmapped over a batch, and a cumulative max by associative_scan
with jnp.maximum. Length 24, width 6, batch 3."""

import jax
import jax.numpy as jnp
from jax import lax

RTOL, ATOL = 2e-4, 1e-5
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
L, D = 24, 6


def combine(left, right):
    a_l, b_l = left
    a_r, b_r = right
    return a_r * a_l, a_r * b_l + b_r


def gates(params, x):
    a = jax.nn.sigmoid(x @ params["wa"] + params["ba"])
    b = (1 - a) * (x @ params["wb"])
    return a, b


def parallel_rnn(params, x, reverse=False):
    a, b = gates(params, x)
    _, h = lax.associative_scan(combine, (a, b), reverse=reverse)
    return h


def sequential_rnn(params, x):
    a, b = gates(params, x)

    def step(h, ab):
        h = ab[0] * h + ab[1]
        return h, h

    return lax.scan(step, jnp.zeros(D), (a, b))[1]


def bidirectional(params, x):
    return jnp.concatenate([parallel_rnn(params, x), parallel_rnn(params, x, reverse=True)], -1)


def loss(params, xs, ys):
    hs = jax.vmap(bidirectional, in_axes=(None, 0))(params, xs)
    return jnp.mean((hs[..., :D] + hs[..., D:] - ys) ** 2), hs


def main():
    k = jax.random.split(jax.random.PRNGKey(17), 5)
    params = {
        "wa": 0.3 * jax.random.normal(k[0], (D, D)),
        "ba": jnp.full(D, 1.0),
        "wb": 0.3 * jax.random.normal(k[1], (D, D)),
    }
    xs = jax.random.normal(k[2], (3 * L, D)).reshape(3, L, D)
    ys = jnp.cumsum(xs, axis=1) * 0.1
    (value, hs), grads = jax.jit(jax.value_and_grad(loss, has_aux=True))(params, xs, ys)
    a, b = gates(params, xs)
    _, h_axis1 = lax.associative_scan(combine, (a, b), axis=1)
    return {
        "parallel": parallel_rnn(params, xs[0]),
        "sequential": sequential_rnn(params, xs[0]),
        "bidirectional": hs,
        "axis1": h_axis1,
        "loss": value,
        "grads": grads,
        "running_max": lax.associative_scan(jnp.maximum, xs[0, :, 0]),
        "int_cumsum": lax.associative_scan(jnp.add, jnp.arange(10, dtype=jnp.int32)),
    }
