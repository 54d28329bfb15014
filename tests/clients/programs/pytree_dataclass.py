"""jax.tree_util-heavy model code: a frozen dataclass registered with
jax.tree_util.register_pytree_node_class (parameters as children, the activation name as static
aux data), a register_dataclass-style container via jax.tree_util.register_pytree_node,
jax.tree.map over nested dicts of such modules, parameter counts with jax.tree.reduce, weight
decay masks from jax.tree.flatten_with_path / jax.tree_util.keystr on the key paths,
jax.tree_util.tree_map_with_path, jax.tree.transpose of per-step gradient lists, and a jitted
update whose static module structure hashes through the tree definition. 3 steps."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
from jax.tree_util import register_pytree_node, register_pytree_node_class

RTOL, ATOL = 2e-4, 1e-6
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)


@register_pytree_node_class
@dataclasses.dataclass(frozen=True)
class Dense:
    w: jnp.ndarray
    b: jnp.ndarray
    act: str = "tanh"

    def __call__(self, x):
        y = x @ self.w + self.b
        return getattr(jnp, self.act)(y) if self.act != "none" else y

    def tree_flatten(self):
        return (self.w, self.b), self.act

    @classmethod
    def tree_unflatten(cls, act, children):
        return cls(*children, act=act)


class State:
    def __init__(self, step, params):
        self.step, self.params = step, params


register_pytree_node(State, lambda s: ((s.step, s.params), None), lambda _, c: State(*c))


def init(key):
    k1, k2, k3 = jax.random.split(key, 3)
    return {
        "encoder": {"l0": Dense(jax.random.normal(k1, (3, 5)) * 0.5, jnp.zeros(5))},
        "decoder": [
            Dense(jax.random.normal(k2, (5, 4)) * 0.5, jnp.zeros(4), "sin"),
            Dense(jax.random.normal(k3, (4, 2)) * 0.5, jnp.zeros(2), "none"),
        ],
    }


def apply(params, x):
    x = params["encoder"]["l0"](x)
    for layer in params["decoder"]:
        x = layer(x)
    return x


def loss(params, x, y):
    return jnp.mean((apply(params, x) - y) ** 2)


def decay_mask(params):
    return jax.tree_util.tree_map_with_path(
        lambda path, _: jax.tree_util.keystr(path).endswith(".w"), params
    )


@functools.partial(jax.jit, donate_argnums=())
def update(state, x, y):
    g = jax.grad(loss)(state.params, x, y)
    mask = decay_mask(state.params)
    new = jax.tree.map(
        lambda p, d, m: p - 0.1 * (d + jnp.where(m, 1e-2 * p, 0.0)), state.params, g, mask
    )
    return State(state.step + 1, new), g


def main():
    kx, kp = jax.random.split(jax.random.PRNGKey(21))
    x = jax.random.normal(kx, (10, 3))
    y = jnp.stack([jnp.sin(x[:, 0]), x[:, 1] * x[:, 2]], axis=1)
    state = State(jnp.array(0), init(kp))
    grads = []
    for _ in range(3):
        state, g = update(state, x, y)
        grads.append(g)
    leaves_with_paths, treedef = jax.tree.flatten_with_path(state.params)
    names = [jax.tree_util.keystr(p) for p, _ in leaves_with_paths]
    count = jax.tree.reduce(lambda a, b: a + b, jax.tree.map(lambda a: a.size, state.params))
    stacked = jax.tree.transpose(jax.tree.structure([0, 0, 0]), jax.tree.structure(grads[0]), grads)
    norms = jax.tree.map(lambda *gs: jnp.stack([jnp.linalg.norm(g) for g in gs]), *grads)
    return {
        "step": state.step,
        "leaves": [leaf for _, leaf in leaves_with_paths],
        "n_names": jnp.array(len(names)),
        "name_hash": jnp.array(sum(len(n) * (i + 1) for i, n in enumerate(names))),
        "n_leaves": jnp.array(treedef.num_leaves),
        "count": jnp.array(count),
        "acts": jnp.array([layer.act == "sin" for layer in state.params["decoder"]]),
        "stacked_first": jax.tree.leaves(stacked)[0],
        "norms": jax.tree.leaves(norms),
        "mask": jax.tree.leaves(decay_mask(state.params)),
        "loss": loss(state.params, x, y),
    }
