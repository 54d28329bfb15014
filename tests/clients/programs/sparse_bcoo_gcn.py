"""A graph convolutional network (Kipf and Welling) on a sparse adjacency matrix with
jax.experimental.sparse, as sparse-JAX examples write it: the normalised adjacency
D^-1/2 (A + I) D^-1/2 built as a BCOO from an edge list (sparse.BCOO((data, indices), shape=...)),
its degree by a BCOO sum, products A @ X through BCOO's matmul, the loss differentiated with
respect to the dense weights and to the sparse values (jax.grad through sparse.bcoo_dot_general
and a sparse.sparsify'd function), sparse.BCOO.fromdense / todense round trips, a transpose,
sparse-sparse elementwise products, and bcoo_reduce_sum; the forward vmapped over feature sets.
10 nodes, 3 features, 2 classes."""

import jax
import jax.numpy as jnp
from jax.experimental import sparse

RTOL, ATOL = 1e-5, 1e-6
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
N, F, H, C = 10, 3, 6, 2
EDGES = jnp.array(
    [[0, 1], [1, 2], [2, 3], [3, 4], [4, 0], [5, 6], [6, 7], [7, 8], [8, 9], [9, 5], [0, 5], [2, 7]]
)


def normalised_adjacency():
    src, dst = EDGES[:, 0], EDGES[:, 1]
    rows = jnp.concatenate([src, dst, jnp.arange(N)])
    cols = jnp.concatenate([dst, src, jnp.arange(N)])
    indices = jnp.stack([rows, cols], axis=1)
    ones = jnp.ones(rows.shape[0])
    adj = sparse.BCOO((ones, indices), shape=(N, N))
    degree = adj.sum(axis=1).todense()
    d = 1.0 / jnp.sqrt(degree)
    return sparse.BCOO((d[rows] * ones * d[cols], indices), shape=(N, N)), degree


def gcn(params, adj, x):
    h = jax.nn.relu(adj @ (x @ params["w1"]))
    return adj @ (h @ params["w2"])


def loss_fn(params, adj, x, labels):
    logp = jax.nn.log_softmax(gcn(params, adj, x))
    return -jnp.mean(logp[jnp.arange(N), labels])


def main():
    k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(9), 4)
    params = {"w1": jax.random.normal(k1, (F, H)) * 0.5, "w2": jax.random.normal(k2, (H, C)) * 0.5}
    x = jax.random.normal(k3, (N, F))
    labels = (jnp.arange(N) >= 5).astype(jnp.int32)
    adj, degree = normalised_adjacency()
    loss, grads = jax.jit(jax.value_and_grad(loss_fn))(params, adj, x, labels)

    def loss_of_values(values):
        a = sparse.BCOO((values, adj.indices), shape=adj.shape)
        return loss_fn(params, a, x, labels)

    grad_values = jax.grad(loss_of_values)(adj.data)
    dense = adj.todense()
    product = sparse.bcoo_dot_general(adj, x, dimension_numbers=(([1], [0]), ([], [])))
    sparsified = sparse.sparsify(lambda a, v: jnp.sin(a) @ v + (a * 2.0).sum(1)[:, None])(adj, x)
    round_trip = sparse.BCOO.fromdense(dense * (dense > 0.3), nse=24)
    hadamard = (adj * round_trip).todense()
    batched = jax.vmap(gcn, in_axes=(None, None, 0))(params, adj, jax.random.normal(k4, (2, N, F)))
    return {
        "degree": degree,
        "loss": loss,
        "grads": grads,
        "grad_values": grad_values,
        "dense": dense,
        "product": product,
        "sparsified": sparsified,
        "nse": jnp.array(round_trip.nse),
        "transpose": adj.T.todense(),
        "hadamard": hadamard,
        "row_sums": sparse.bcoo_reduce_sum(adj, axes=(1,)).todense(),
        "batched": batched,
    }
