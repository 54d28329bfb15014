"""A neural ODE fitted to a spiral as in the JAX neural-ODE examples: a tanh MLP vector field
f(y, t, params) integrated with jax.experimental.ode.odeint (adaptive Dormand-Prince, adjoint
gradients), a mean-squared trajectory loss, jax.grad through odeint with respect to the MLP
parameters (a pytree) and the initial state in one jax.value_and_grad(argnums=(0, 1)), an SGD
step under jax.jit, and the trained field's trajectory. 2-D state, 8 time points."""

import jax
import jax.numpy as jnp
from jax.experimental.ode import odeint

RTOL, ATOL = 1e-3, 1e-4  # adaptive steps: the error control accepts steps from rounded estimates
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
TS = jnp.linspace(0.0, 1.5, 8)


def true_field(y, t):
    a = jnp.array([[-0.1, 2.0], [-2.0, -0.1]])
    return (y**3) @ a


def mlp_field(y, t, params):
    h = jnp.tanh(y @ params[0][0] + params[0][1] + t)
    return h @ params[1][0] + params[1][1]


def init(key, width=16):
    k1, k2 = jax.random.split(key)
    return [
        (0.5 * jax.random.normal(k1, (2, width)), jnp.zeros(width)),
        (0.5 * jax.random.normal(k2, (width, 2)), jnp.zeros(2)),
    ]


def loss(params, y0, target):
    pred = odeint(mlp_field, y0, TS, params, rtol=1e-5, atol=1e-5)
    return jnp.mean((pred - target) ** 2)


@jax.jit
def step(params, y0, target):
    value, (grads, dy0) = jax.value_and_grad(loss, argnums=(0, 1))(params, y0, target)
    return jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads), value, dy0


def main():
    y0 = jnp.array([2.0, 0.0])
    target = odeint(true_field, y0, TS, rtol=1e-6, atol=1e-6)
    params = init(jax.random.PRNGKey(3))
    params, value, dy0 = step(params, y0, target)
    return {
        "target": target,
        "value": value,
        "params": params,
        "dy0": dy0,
        "fit": odeint(mlp_field, y0, TS, params),
    }
