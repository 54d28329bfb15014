"""A small classifier built with the installed JAX's own jax.example_libraries.stax and trained
with its optimizers.momentum, as JAX's examples/mnist_classifier.py does: random.PRNGKey
initialisation (glorot-normal weights from jax.nn.initializers), log-softmax cross-entropy,
a jitted update through get_params/opt_update. Synthetic data; 5 steps."""

import jax.numpy as jnp
import numpy as np
from jax import grad, jit, random
from jax.example_libraries import optimizers, stax

RTOL, ATOL = 1e-4, 1e-6

init_fn, apply_fn = stax.serial(stax.Dense(32), stax.Relu, stax.Dense(10), stax.LogSoftmax)


def loss(params, batch):
    x, onehot = batch
    return -jnp.mean(jnp.sum(apply_fn(params, x) * onehot, axis=1))


def main():
    data_rng = np.random.RandomState(1)
    x = data_rng.randn(64, 20).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[data_rng.randint(0, 10, size=64)]
    opt_init, opt_update, get_params = optimizers.momentum(0.05, mass=0.9)

    @jit
    def update(i, state, batch):
        return opt_update(i, grad(loss)(get_params(state), batch), state)

    out_shape, params = init_fn(random.PRNGKey(0), (-1, 20))
    first = params[0][0]
    state = opt_init(params)
    for i in range(5):
        state = update(i, state, (x, y))
    final = get_params(state)
    return {"out_shape": out_shape, "init_w0": first, "params": final, "loss": loss(final, (x, y))}
