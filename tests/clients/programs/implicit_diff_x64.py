"""Implicit differentiation as the JAX documentation teaches it, in float64: a fixed-point /
root solver wrapped in lax.custom_root (Newton's method on a scalar-per-coordinate equation, its
tangent solve given by lax.custom_linear_solve inside), and a linear solve by conjugate gradients
wrapped in lax.custom_linear_solve with a symmetric matvec; gradients of losses through both under
jit, checked against the closed forms, and the root finder vmapped over parameter sets."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax import grad, jit, lax, vmap  # noqa: E402

RTOL, ATOL = 1e-9, 1e-12
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
A = jnp.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.2], [0.5, 0.2, 2.0]])


def newton_solve(f, x0):
    def body(_, x):
        return x - f(x) / jax.jacobian(f)(x).diagonal()

    return lax.fori_loop(0, 20, body, x0)


def tangent_solve(g, y):
    return lax.custom_linear_solve(g, y, lambda h, r: r / h(jnp.ones_like(r)), symmetric=True)


def cube_root(theta):
    # the root of x**3 + x - theta = 0, coordinate by coordinate
    def f(x):
        return x**3 + x - theta

    return lax.custom_root(f, jnp.ones_like(theta), newton_solve, tangent_solve)


def cg(matvec, b, iters=12):
    def body(_, state):
        x, r, p = state
        ap = matvec(p)
        alpha = (r @ r) / (p @ ap)
        x, r_new = x + alpha * p, r - alpha * ap
        return x, r_new, r_new + (r_new @ r_new) / (r @ r) * p

    return lax.fori_loop(0, iters, body, (jnp.zeros_like(b), b, b))[0]


def linear_solve(scale, b):
    def matvec(v):
        return scale * (A @ v)

    return lax.custom_linear_solve(matvec, b, lambda mv, rhs: cg(mv, rhs), symmetric=True)


def main():
    theta = jnp.array([0.5, 2.0, 10.0])
    root_loss = lambda t: jnp.sum(cube_root(t) ** 2)  # noqa: E731
    x = cube_root(theta)
    b = jnp.array([1.0, -2.0, 0.5])
    solve_loss = lambda s, b: jnp.sum(linear_solve(s, b) ** 2)  # noqa: E731
    return {
        "root": x,
        "root_grad": jit(grad(root_loss))(theta),
        "closed_form_root_grad": 2.0 * x / (3.0 * x**2 + 1.0),
        "roots_vmapped": vmap(cube_root)(jnp.stack([theta, 2.0 * theta])),
        "solve": linear_solve(2.0, b),
        "solve_grads": jit(grad(solve_loss, argnums=(0, 1)))(2.0, b),
        "exact": jnp.linalg.solve(2.0 * A, b),
    }
