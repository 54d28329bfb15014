"""A message-passing graph network in the style of jraph, written with jax.ops segment sums: edge
messages from sender features through an MLP, aggregated at receivers with segment_sum (and
segment_max for a max-aggregation head), degree normalisation by a segment_sum of ones, node
updates, and a graph-level readout per graph of a batch of two graphs (segment_sum over
node-to-graph ids); node-classification loss and its gradient under jit, and the model vmapped
over several feature sets sharing one graph. 7 nodes, 10 edges."""

import jax
import jax.numpy as jnp
from jax import grad, jit, random, vmap
from jax.nn import log_softmax, relu

RTOL, ATOL = 1e-5, 1e-6
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
SENDERS = jnp.array([0, 1, 2, 2, 3, 4, 4, 5, 6, 6])
RECEIVERS = jnp.array([1, 2, 0, 3, 2, 5, 6, 6, 4, 5])
GRAPH_OF_NODE = jnp.array([0, 0, 0, 0, 1, 1, 1])
N_NODES, F, H, C = 7, 3, 5, 2


def init(key):
    k = random.split(key, 3)
    return {
        "msg": random.normal(k[0], (F, H)) * 0.5,
        "upd": random.normal(k[1], (F + 2 * H, H)) * 0.5,
        "out": random.normal(k[2], (H, C)) * 0.5,
    }


def network(params, nodes):
    messages = relu(nodes[SENDERS] @ params["msg"])
    summed = jax.ops.segment_sum(messages, RECEIVERS, num_segments=N_NODES)
    degree = jax.ops.segment_sum(jnp.ones_like(RECEIVERS), RECEIVERS, num_segments=N_NODES)
    mean = summed / jnp.maximum(degree, 1)[:, None]
    peak = jax.ops.segment_max(messages, RECEIVERS, num_segments=N_NODES)
    peak = jnp.where(jnp.isfinite(peak), peak, 0.0)
    h = relu(jnp.concatenate([nodes, mean, peak], axis=1) @ params["upd"])
    readout = jax.ops.segment_sum(h, GRAPH_OF_NODE, num_segments=2, indices_are_sorted=True)
    return h @ params["out"], readout


def loss(params, nodes, labels):
    logits, readout = network(params, nodes)
    logp = log_softmax(logits)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, None], axis=1)) + 1e-2 * jnp.sum(
        readout**2
    )


def main():
    kp, kn, kl = random.split(random.PRNGKey(8), 3)
    params = init(kp)
    nodes = random.normal(kn, (3, N_NODES, F))
    labels = random.randint(kl, (N_NODES,), 0, C)
    step = jit(grad(loss))
    return {
        "logits_readout": network(params, nodes[0]),
        "grad": step(params, nodes[0], labels),
        "vmapped": vmap(network, in_axes=(None, 0))(params, nodes),
        "segment_min": jax.ops.segment_min(nodes[0], RECEIVERS[:N_NODES], num_segments=N_NODES),
        "degree": jax.ops.segment_sum(jnp.ones_like(RECEIVERS), RECEIVERS, num_segments=N_NODES),
    }
