"""A tanh MLP classifier trained with plain SGD, the kind of program JAX's
examples/mnist_classifier_fromscratch.py is: parameters from NumPy's RandomState (float64 arrays,
which JAX computes with in float32), log-softmax through logsumexp, a jitted update.
Synthetic 64-pixel "images" in place of MNIST; 6 steps."""

import jax.numpy as jnp
import numpy as np
import numpy.random as npr
from jax import grad, jit
from jax.scipy.special import logsumexp

RTOL, ATOL = 1e-4, 1e-6
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
SIZES = (64, 48, 32, 10)
LEARNING_RATE = 0.2


def make_params(scale, sizes, rng):
    return [
        (scale * rng.randn(n_in, n_out), scale * rng.randn(n_out))
        for n_in, n_out in zip(sizes[:-1], sizes[1:])
    ]


def log_probs(params, x):
    for w, b in params[:-1]:
        x = jnp.tanh(x @ w + b)
    w, b = params[-1]
    logits = x @ w + b
    return logits - logsumexp(logits, axis=1, keepdims=True)


def nll(params, batch):
    x, onehot = batch
    return -jnp.mean(jnp.sum(log_probs(params, x) * onehot, axis=1))


def accuracy(params, batch):
    x, onehot = batch
    return jnp.mean(jnp.argmax(log_probs(params, x), axis=1) == jnp.argmax(onehot, axis=1))


@jit
def sgd_step(params, batch):
    g = grad(nll)(params, batch)
    return [(w - LEARNING_RATE * gw, b - LEARNING_RATE * gb) for (w, b), (gw, gb) in zip(params, g)]


def main():
    rng = npr.RandomState(0)
    params = make_params(0.1, SIZES, rng)
    images = rng.rand(96, SIZES[0]).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.randint(0, 10, size=96)]
    losses = []
    for step in range(6):
        sl = slice(32 * (step % 3), 32 * (step % 3 + 1))
        params = sgd_step(params, (images[sl], labels[sl]))
        losses.append(nll(params, (images, labels)))
    return {"params": params, "losses": losses, "accuracy": accuracy(params, (images, labels))}
