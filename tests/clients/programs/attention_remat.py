"""A small transformer encoder as research code writes it with JAX's own attention: multi-head
projections by jnp.einsum, jax.nn.dot_product_attention with a padding mask built from sequence
lengths (and is_causal for a second, decoder-style call), each block wrapped in jax.checkpoint
with a policy (jax.checkpoint_policies.nothing_saveable) to trade memory for recomputation,
the blocks stacked by lax.scan over stacked parameters, a masked mean-pool, cross-entropy with
optax-style jax.nn.log_softmax and one-hot labels, gradients under jit, and next tokens drawn
with jax.random.categorical. Batch 3, length 8, width 16, 2 heads, 2 layers."""

import jax
import jax.numpy as jnp
from jax import lax

RTOL, ATOL = 5e-4, 2e-5
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
B, T, D, HEADS, LAYERS, CLASSES = 3, 8, 16, 2, 2, 5


def init(key):
    ks = jax.random.split(key, 5)
    w = jax.nn.initializers.variance_scaling(1.0, "fan_in", "truncated_normal")
    return {
        "embed": jax.random.normal(ks[0], (CLASSES + 3, D)) * 0.1,
        "blocks": {  # drawn as matrices, reshaped to the einsum layouts
            "qkv": w(ks[1], (LAYERS * D, 3 * D)).reshape(LAYERS, D, 3, HEADS, D // HEADS),
            "out": w(ks[2], (LAYERS * D, D)).reshape(LAYERS, HEADS, D // HEADS, D),
            "ff": w(ks[3], (LAYERS * D, D)).reshape(LAYERS, D, D),
        },
        "head": w(ks[4], (D, CLASSES)),
    }


def block(x, p, mask, causal):
    q, k, v = jnp.unstack(jnp.einsum("btd,dnhk->nbthk", x, p["qkv"]), axis=0)
    att = jax.nn.dot_product_attention(q, k, v, mask=mask, is_causal=causal)
    x = x + jnp.einsum("bthk,hkd->btd", att, p["out"])
    return x + jax.nn.gelu(x @ p["ff"])


def encode(params, tokens, lengths, causal=False):
    valid = jnp.arange(T)[None, :] < lengths[:, None]
    mask = (valid[:, None, None, :] & valid[:, None, :, None]) | jnp.eye(T, dtype=bool)
    body = jax.checkpoint(
        lambda x, p: (block(x, p, mask, causal), None),
        policy=jax.checkpoint_policies.nothing_saveable,
    )
    x, _ = lax.scan(body, params["embed"][tokens], params["blocks"])
    return x, valid


def loss(params, tokens, lengths, labels):
    x, valid = encode(params, tokens, lengths)
    pooled = jnp.sum(jnp.where(valid[..., None], x, 0.0), 1) / lengths[:, None]
    logp = jax.nn.log_softmax(pooled @ params["head"])
    return -jnp.mean(jnp.sum(jax.nn.one_hot(labels, CLASSES) * logp, -1))


def main():
    k_init, k_tok, k_sample = jax.random.split(jax.random.PRNGKey(7), 3)
    params = init(k_init)
    tokens = jax.random.randint(k_tok, (B, T), 0, CLASSES + 3)
    lengths = jnp.array([8, 5, 3])
    labels = jnp.array([1, 4, 0])
    value, grads = jax.jit(jax.value_and_grad(loss))(params, tokens, lengths, labels)
    x, _ = jax.jit(encode, static_argnums=3)(params, tokens, lengths, True)
    logits = x[:, -1] @ params["head"]
    nxt = jax.random.categorical(k_sample, logits, axis=-1)
    return {"loss": value, "grads": grads, "decoder_logits": logits, "next": nxt}
