"""A variational autoencoder as JAX tutorials write it: an MLP encoder giving a mean and a
log-variance, the reparameterisation trick (z = mu + exp(logvar / 2) * eps with eps from
jax.random.normal), a Bernoulli decoder on logits with jax.nn.log_sigmoid, the ELBO with the
closed-form KL, parameters from jax.nn.initializers in a nested dict, jax.value_and_grad with
has_aux=True returning the KL and reconstruction terms, a fresh key per step with
jax.random.fold_in(key, step) and jax.random.split, SGD by jax.tree_util.tree_map; then prior
samples decoded and binarised with jax.random.bernoulli. 8 examples of 12 pixels, latent 2,
2 steps."""

import functools

import jax
import jax.numpy as jnp

RTOL, ATOL = 2e-4, 1e-5
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
D, H, Z = 12, 16, 2


def init_params(key):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    glorot = jax.nn.initializers.glorot_normal()
    return {
        "enc": {"w": glorot(k1, (D, H)), "b": jnp.zeros(H)},
        "mu": {"w": glorot(k2, (H, Z)), "b": jnp.zeros(Z)},
        "logvar": {"w": jax.nn.initializers.normal(0.01)(k3, (H, Z)), "b": jnp.zeros(Z)},
        "dec": {"w": jax.nn.initializers.lecun_normal()(k4, (Z, D)), "b": jnp.zeros(D)},
    }


def dense(p, x):
    return x @ p["w"] + p["b"]


def elbo_terms(params, x, key):
    h = jax.nn.softplus(dense(params["enc"], x))
    mu, logvar = dense(params["mu"], h), dense(params["logvar"], h)
    eps = jax.random.normal(key, mu.shape)
    z = mu + jnp.exp(0.5 * logvar) * eps
    logits = dense(params["dec"], z)
    rec = jnp.sum(x * jax.nn.log_sigmoid(logits) + (1 - x) * jax.nn.log_sigmoid(-logits), axis=-1)
    kl = -0.5 * jnp.sum(1 + logvar - mu**2 - jnp.exp(logvar), axis=-1)
    return rec, kl


def loss_fn(params, x, key):
    rec, kl = elbo_terms(params, x, key)
    return -jnp.mean(rec - kl), {"rec": jnp.mean(rec), "kl": jnp.mean(kl)}


@functools.partial(jax.jit, static_argnums=(3,))
def train_step(params, x, key, lr):
    (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, x, key)
    params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
    return params, loss, aux


def main():
    key = jax.random.PRNGKey(0)
    data_key, init_key, train_key, sample_key = jax.random.split(key, 4)
    x = jax.random.bernoulli(data_key, 0.3, (8, D)).astype(jnp.float32)
    params = init_params(init_key)
    losses, kls = [], []
    for step in range(2):
        step_key = jax.random.fold_in(train_key, step)
        _, noise_key = jax.random.split(step_key)
        params, loss, aux = train_step(params, x, noise_key, 0.1)
        losses.append(loss)
        kls.append(aux["kl"])
    z = jax.random.normal(sample_key, (4, Z))
    probs = jax.nn.sigmoid(dense(params["dec"], z))
    pixels = jax.random.bernoulli(jax.random.fold_in(sample_key, 1), probs)
    return {
        "params": params,
        "losses": jnp.stack(losses),
        "kls": jnp.stack(kls),
        "probs": probs,
        "pixels": pixels,
    }
