"""A Taylor-series ODE integrator with jax.experimental.jet, the construction of the
"Taylor-mode" neural-ODE papers: the solution's Taylor coefficients y_1..y_k at a point come
from repeated jet calls of the vector field (coefficient recursion), a step sums the series,
a fixed number of steps run in lax.scan under jit; also the k-th derivative of a scalar
function by one jet call with jax.jvp as a check, and jet of a function with a jnp.where
branch. Lotka-Volterra and a damped pendulum, order 4, 20 steps."""

import math

import jax
import jax.numpy as jnp
from jax import lax
from jax.experimental.jet import jet

RTOL, ATOL = 2e-4, 1e-5
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
ORDER = 4


def lotka_volterra(y):
    return jnp.stack([1.1 * y[0] - 0.4 * y[0] * y[1], 0.1 * y[0] * y[1] - 0.4 * y[1]])


def pendulum(y):
    return jnp.stack([y[1], -jnp.sin(y[0]) - 0.2 * y[1]])


def taylor_coeffs(f, y0):
    """Normalised coefficients c_k = y^(k)(0) / k! of y' = f(y), y(0) = y0."""
    y1 = f(y0)
    derivs = [y1]
    for _ in range(ORDER - 1):
        _, series = jet(f, (y0,), (derivs,))
        derivs = [y1] + series
    return [d / math.factorial(k + 1) for k, d in enumerate(derivs)]


def taylor_solve(f, y0, h, steps):
    def step(y, _):
        coeffs = taylor_coeffs(f, y)
        y = y + sum(c * h ** (k + 1) for k, c in enumerate(coeffs))
        return y, y

    return lax.scan(step, y0, None, length=steps)[1]


def main():
    lv = jax.jit(lambda y0: taylor_solve(lotka_volterra, y0, 0.1, 20))(jnp.array([2.0, 1.0]))
    pend = jax.jit(lambda y0: taylor_solve(pendulum, y0, 0.1, 20))(jnp.array([1.0, 0.0]))

    def g(x):
        return jnp.where(x > 0, jnp.exp(-x) * jnp.sin(3 * x), x**2)

    x0 = jnp.array([0.7, -0.4])
    primal, series = jet(g, (x0,), ([jnp.ones(2), jnp.zeros(2), jnp.zeros(2)],))
    second = jax.vmap(jax.grad(jax.grad(lambda x: g(x))))(x0)
    third = jax.vmap(jax.grad(jax.grad(jax.grad(lambda x: g(x)))))(x0)
    return {
        "lotka_volterra": lv,
        "pendulum": pend,
        "jet_primal": primal,
        "jet_series": series,
        "second": second,
        "third": third,
    }
