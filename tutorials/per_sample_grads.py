# %% [markdown]
# # Per-sample gradients with `vmap(grad(loss))`
#
# One line gives the gradient of the loss of *each example* with respect to the parameters:
# `functx.vmap(functx.grad(loss), in_axes=(None, 0, 0))(params, xs, ys)`. Both transforms rewrite
# the Jaxpr, so the batched gradient is one Jaxpr with no per-example loop, and the weights are not
# copied per example. We check it against JAX and against an explicit loop.

# %%
import numpy as np

import functx
import functx.numpy as jnp
from functx import nn


def init_mlp(rng, sizes):
    return {
        f"layer{i}": {
            "w": (rng.standard_normal((m, n)) / np.sqrt(m)).astype(np.float32),
            "b": np.zeros(n, np.float32),
        }
        for i, (m, n) in enumerate(zip(sizes[:-1], sizes[1:]))
    }


def mlp(params, x):
    n = len(params)
    for i in range(n):
        layer = params[f"layer{i}"]
        x = x @ layer["w"] + layer["b"]
        if i < n - 1:
            x = jnp.tanh(x)
    return x


def loss(params, x, y):
    """Cross-entropy of one example (x: features, y: integer label)."""
    logits = mlp(params, x)
    return -jnp.sum(nn.one_hot(y, logits.shape[-1]) * nn.log_softmax(logits))


rng = np.random.default_rng(0)
params = init_mlp(rng, [8, 16, 16, 4])
xs = rng.standard_normal((32, 8)).astype(np.float32)
ys = rng.integers(0, 4, 32).astype(np.int32)

per_sample_grads = functx.vmap(functx.grad(loss), in_axes=(None, 0, 0))
grads = per_sample_grads(params, xs, ys)
print({k: {n: v.shape for n, v in layer.items()} for k, layer in grads.items()})

# %% [markdown]
# The batched gradient Jaxpr: the weights `w` enter unbatched (no broadcast of a weight matrix to
# the batch size), and every `dot_general` handles the whole batch at once.

# %%
jaxpr = functx.make_jaxpr(per_sample_grads)(params, xs, ys)
print(jaxpr)
prims = [e.prim.name for e in jaxpr.eqns]
print("equations:", len(prims), " dot_general:", prims.count("dot_general"))
assert "scan" not in prims and "while" not in prims  # no per-sample loop
for e in jaxpr.eqns:  # no materialised batch copy of a weight matrix
    if e.prim.name == "broadcast_in_dim":
        assert e.outvars[0].aval.shape[1:] not in [(8, 16), (16, 16), (16, 4)], e

# %% [markdown]
# ## Check against an explicit loop and against JAX

# %%
loop = [functx.grad(loss)(params, xs[i], ys[i]) for i in range(len(xs))]
for name in params:
    for p in ("w", "b"):
        stacked = np.stack([np.asarray(g[name][p]) for g in loop])
        np.testing.assert_allclose(np.asarray(grads[name][p]), stacked, rtol=1e-5, atol=1e-6)
print("matches the per-example loop")

try:
    import jax
    import jax.numpy as jjnp

    def jloss(params, x, y):
        h = x
        n = len(params)
        for i in range(n):
            layer = params[f"layer{i}"]
            h = h @ layer["w"] + layer["b"]
            if i < n - 1:
                h = jjnp.tanh(h)
        return -jjnp.sum(jax.nn.one_hot(y, h.shape[-1]) * jax.nn.log_softmax(h))

    jgrads = jax.vmap(jax.grad(jloss), in_axes=(None, 0, 0))(params, xs, ys)
    for name in params:
        for p in ("w", "b"):
            np.testing.assert_allclose(
                np.asarray(grads[name][p]), np.asarray(jgrads[name][p]), rtol=2e-5, atol=2e-6
            )
    print("matches jax.vmap(jax.grad(loss))")
except ImportError:
    print("JAX is not installed: skipped the comparison with JAX")

# %% [markdown]
# ## A linear model
#
# For least squares, the per-example gradient has a closed form: `(x . w - y) * x`.


# %%
def lsq(w, x, y):
    return 0.5 * (jnp.dot(x, w) - y) ** 2


w = rng.standard_normal(8).astype(np.float32)
yl = rng.standard_normal(32).astype(np.float32)
g = functx.vmap(functx.grad(lsq), in_axes=(None, 0, 0))(w, xs, yl)
np.testing.assert_allclose(np.asarray(g), (xs @ w - yl)[:, None] * xs, rtol=1e-4, atol=1e-5)
print("linear model: per-example gradients match the closed form")
print(functx.make_jaxpr(functx.vmap(functx.grad(lsq), in_axes=(None, 0, 0)))(w, xs, yl))
