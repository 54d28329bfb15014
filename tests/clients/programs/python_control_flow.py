"""Python control flow on concrete values under eager transformations, as the JAX autodiff
cookbook shows it: an `if` on the argument of a function differentiated with grad (each branch's
derivative, outside jit), and a `while` loop whose trip count depends on a concrete value."""

import jax.numpy as jnp
from jax import grad

RTOL, ATOL = 1e-6, 1e-7


def piecewise(x):  # the branch is chosen on the concrete value: eager grad, no jit
    if x > 0:
        return x**3
    return -2.0 * x


def halve_until_small(x):  # a loop on a concrete value, differentiated eagerly
    while jnp.abs(x) > 1.0:
        x = x / 2.0
    return jnp.sin(x)


def main():
    return {
        "piecewise_grads": (grad(piecewise)(2.0), grad(piecewise)(-1.0)),
        "loop_grad": grad(halve_until_small)(jnp.float32(5.0)),
        "loop_value": halve_until_small(jnp.float32(-7.0)),
    }
