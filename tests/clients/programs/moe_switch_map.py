"""A mixture-of-experts layer as routing research code writes it in JAX: a softmax router with
top-1 (jnp.argmax) and top-2 (lax.top_k) gating, experts of different kinds selected per token
by lax.switch on the expert index (vmapped over tokens, so the switch becomes a select), the
same layer computed densely by lax.map over the experts' stacked parameters with a one-hot
combine, a capacity-limited dispatch with jnp.cumsum positions and a jnp.where drop mask, the
load-balancing auxiliary loss of the Switch Transformer, jax.value_and_grad(has_aux=True) under
jit, and a custom_vjp straight-through estimator for the hard gate. 12 tokens, width 8,
3 experts."""

import functools

import jax
import jax.numpy as jnp
from jax import lax

RTOL, ATOL = 2e-4, 2e-5
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
T, D, E, CAP = 12, 8, 3, 5


def init(key):
    ks = jax.random.split(key, 3)
    return {
        "router": jax.random.normal(ks[0], (D, E)) * 0.3,
        "w_in": jax.random.normal(ks[1], (E, D, 2 * D)) * (1 / jnp.sqrt(D)),
        "w_out": jax.random.normal(ks[2], (E, 2 * D, D)) * (1 / jnp.sqrt(2 * D)),
    }


def expert_fns(params):
    def make(i, act):
        return lambda x: act(x @ params["w_in"][i]) @ params["w_out"][i]

    return [make(0, jax.nn.relu), make(1, jnp.tanh), make(2, jax.nn.silu)]


@jax.custom_vjp
def straight_through(hard, soft):
    return hard


def st_fwd(hard, soft):
    return hard, None


def st_bwd(_, g):
    return jnp.zeros_like(g), g


straight_through.defvjp(st_fwd, st_bwd)


def moe_switch(params, x):
    probs = jax.nn.softmax(x @ params["router"], axis=-1)
    expert = jnp.argmax(probs, axis=-1)
    gate = straight_through(jnp.ones(T), jnp.take_along_axis(probs, expert[:, None], 1)[:, 0])
    out = jax.vmap(lambda i, tok: lax.switch(i, expert_fns(params), tok))(expert, x)
    return out * gate[:, None], probs, expert


def moe_dense_top2(params, x):
    probs = jax.nn.softmax(x @ params["router"], axis=-1)
    weights, idx = lax.top_k(probs, 2)
    weights = weights / weights.sum(-1, keepdims=True)
    combine = jnp.sum(jax.nn.one_hot(idx, E) * weights[..., None], axis=1)  # (T, E)
    acts = (jax.nn.relu, jnp.tanh, jax.nn.silu)

    def run_expert(args):
        w_in, w_out, i = args
        h = x @ w_in
        h = lax.switch(i, [lambda h: act(h) for act in acts], h)
        return h @ w_out

    outs = lax.map(run_expert, (params["w_in"], params["w_out"], jnp.arange(E)))  # (E, T, D)
    return jnp.einsum("te,etd->td", combine, outs)


def capacity_dispatch(expert):
    onehot = jax.nn.one_hot(expert, E, dtype=jnp.int32)
    position = jnp.cumsum(onehot, axis=0) * onehot - 1
    kept = (position < CAP) & (onehot > 0)
    return jnp.where(kept, position, -1), kept.any(-1)


def loss_fn(params, x, y):
    out, probs, expert = moe_switch(params, x)
    frac_tokens = jnp.mean(jax.nn.one_hot(expert, E), axis=0)
    frac_probs = jnp.mean(probs, axis=0)
    aux = E * jnp.sum(frac_tokens * frac_probs)
    mse = jnp.mean((out + moe_dense_top2(params, x) - y) ** 2)
    return mse + 0.01 * aux, {"mse": mse, "aux": aux, "expert": expert}


@functools.partial(jax.jit, static_argnames="lr")
def step(params, x, y, lr):
    (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, x, y)
    return jax.tree.map(lambda p, g: p - lr * g, params, grads), loss, aux


def main():
    kp, kx, ky = jax.random.split(jax.random.PRNGKey(12), 3)
    params = init(kp)
    x = jax.random.normal(kx, (T, D))
    y = jax.random.normal(ky, (T, D))
    history = []
    for _ in range(2):
        params, loss, aux = step(params, x, y, lr=0.1)
        history.append((loss, aux))
    out, probs, expert = moe_switch(params, x)
    slots, kept = capacity_dispatch(expert)
    return {
        "history": history,
        "params": params,
        "switch_out": out,
        "dense_out": moe_dense_top2(params, x),
        "slots": slots,
        "kept": kept,
    }
