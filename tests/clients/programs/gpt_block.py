"""A functional GPT-2 style transformer block as minimal JAX GPT implementations write it:
pre-LayerNorm, multi-head causal self-attention with a -inf mask and jax.nn.softmax, a GELU MLP,
residual connections; parameters drawn with jax.random.normal * 0.02; two SGD steps of a
next-token regression loss through jit(value_and_grad). Batch 2, 16 tokens, width 32, 4 heads."""

import jax
import jax.numpy as jnp
from jax import jit, random, value_and_grad

RTOL, ATOL = 2e-4, 1e-5
B, T, C, HEADS = 2, 16, 32, 4


def init(key):
    k = random.split(key, 4)
    return {
        "ln1": (jnp.ones(C), jnp.zeros(C)),
        "ln2": (jnp.ones(C), jnp.zeros(C)),
        "qkv": (random.normal(k[0], (C, 3 * C)) * 0.02, jnp.zeros(3 * C)),
        "proj": (random.normal(k[1], (C, C)) * 0.02, jnp.zeros(C)),
        "fc": (random.normal(k[2], (C, 4 * C)) * 0.02, jnp.zeros(4 * C)),
        "fc_out": (random.normal(k[3], (4 * C, C)) * 0.02, jnp.zeros(C)),
    }


def layer_norm(x, params, eps=1e-5):
    g, b = params
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.var(x, axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(var + eps) * g + b


def linear(x, params):
    w, b = params
    return x @ w + b


def attention(x, p):
    q, k, v = jnp.split(linear(x, p["qkv"]), 3, axis=-1)
    heads = lambda t: t.reshape(B, T, HEADS, C // HEADS).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = heads(q), heads(k), heads(v)
    scores = q @ k.transpose(0, 1, 3, 2) / jnp.sqrt(C // HEADS)
    mask = jnp.tril(jnp.ones((T, T), dtype=bool))
    weights = jax.nn.softmax(jnp.where(mask, scores, -jnp.inf), axis=-1)
    out = (weights @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
    return linear(out, p["proj"])


def block(p, x):
    x = x + attention(layer_norm(x, p["ln1"]), p)
    h = jax.nn.gelu(linear(layer_norm(x, p["ln2"]), p["fc"]))
    return x + linear(h, p["fc_out"])


def loss(p, x):
    y = block(p, x)
    return jnp.mean((y[:, :-1] - x[:, 1:]) ** 2)


def main():
    params = init(random.PRNGKey(0))
    x = random.normal(random.PRNGKey(1), (B, T, C))
    step = jit(value_and_grad(loss))
    losses = []
    for _ in range(2):
        value, grads = step(params, x)
        params = jax.tree_util.tree_map(lambda w, g: w - 0.5 * g, params, grads)
        losses.append(value)
    return {"losses": losses, "params": params}
