"""Data-parallel training code as multi-device JAX tutorials write it, run on however many
devices there are (one here): the batch reshaped to (jax.local_device_count(), ...), the
parameters replicated by jnp.stack under jax.tree.map, a jax.pmap'd step with axis_name="batch"
averaging gradients and the loss by lax.pmean and counting examples by lax.psum,
lax.axis_index; the same step written with shard_map (jax.shard_map, or
jax.experimental.shard_map on older JAX) under jit over a jax.sharding.Mesh of jax.devices()
with PartitionSpec('data') inputs; a jax.device_put with a NamedSharding; gradient clipping by
a jax.custom_vjp identity whose backward pass clips the cotangent's norm; and
jax.tree.map(lambda x: x[0], ...) to unreplicate. 16 examples, 4 steps."""

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

RTOL, ATOL = 2e-5, 1e-6
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
try:
    from jax import shard_map
except ImportError:  # older JAX
    from jax.experimental.shard_map import shard_map


@jax.custom_vjp
def clip_gradient(x, max_norm):
    return x


def _clip_fwd(x, max_norm):
    return x, max_norm


def _clip_bwd(max_norm, g):
    norm = jnp.linalg.norm(g)
    return g * jnp.minimum(1.0, max_norm / (norm + 1e-12)), None


clip_gradient.defvjp(_clip_fwd, _clip_bwd)


def predict(params, x):
    h = jnp.tanh(x @ params["w1"] + params["b1"])
    h = clip_gradient(h, 0.5)
    return h @ params["w2"] + params["b2"]


def loss_fn(params, x, y):
    return jnp.mean((predict(params, x) - y) ** 2)


@partial(jax.pmap, axis_name="batch")
def pmap_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    grads = lax.pmean(grads, axis_name="batch")
    loss = lax.pmean(loss, axis_name="batch")
    count = lax.psum(x.shape[0], axis_name="batch")
    params = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    return params, loss, count, lax.axis_index("batch")


def main():
    n_dev = jax.local_device_count()
    k1, k2, kx = jax.random.split(jax.random.PRNGKey(21), 3)
    params = {
        "w1": jax.random.normal(k1, (3, 8)) * 0.5,
        "b1": jnp.zeros(8),
        "w2": jax.random.normal(k2, (8, 1)) * 0.5,
        "b2": jnp.zeros(1),
    }
    x = jax.random.normal(kx, (16, 3))
    y = jnp.sin(x.sum(-1, keepdims=True))
    xs = x.reshape(n_dev, -1, 3)
    ys = y.reshape(n_dev, -1, 1)
    replicated = jax.tree.map(lambda p: jnp.stack([p] * n_dev), params)
    losses = []
    for _ in range(4):
        replicated, loss, count, index = pmap_step(replicated, xs, ys)
        losses.append(loss[0])
    pmap_params = jax.tree.map(lambda p: p[0], replicated)

    mesh = Mesh(np.array(jax.devices()), ("data",))

    @jax.jit
    @partial(shard_map, mesh=mesh, in_specs=(P(), P("data"), P("data")), out_specs=(P(), P()))
    def shard_step(params, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        grads = lax.pmean(grads, "data")
        params = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
        return params, lax.pmean(loss, "data")

    x_sharded = jax.device_put(x, NamedSharding(mesh, P("data")))
    sm_params, sm_losses = params, []
    for _ in range(4):
        sm_params, loss = shard_step(sm_params, x_sharded, y)
        sm_losses.append(loss)
    clipped = jax.grad(lambda x: jnp.sum(clip_gradient(x, 1.0) ** 2))(jnp.arange(4.0))
    return {
        "pmap_params": pmap_params,
        "pmap_losses": jnp.stack(losses),
        "count": count,
        "index": index,
        "shard_params": sm_params,
        "shard_losses": jnp.stack(sm_losses),
        "clipped": clipped,
    }
