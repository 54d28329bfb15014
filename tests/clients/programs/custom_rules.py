"""Custom derivative rules as JAX's custom-derivatives tutorial writes them: a custom_jvp for a
numerically stable log1pexp, a custom_vjp that clips gradients, a custom_jvp with a
non-differentiable argument, and implicit differentiation of a fixed point (Newton's square
root) through custom_vjp around a while_loop. Checked eagerly, under jit and under vmap."""

from functools import partial

import jax.numpy as jnp
from jax import custom_jvp, custom_vjp, grad, jit, lax, vmap

RTOL, ATOL = 1e-5, 1e-6
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)


@custom_jvp
def log1pexp(x):
    return jnp.log(1.0 + jnp.exp(x))


@log1pexp.defjvp
def log1pexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return log1pexp(x), t * (1.0 - 1.0 / (1.0 + jnp.exp(x)))


@custom_vjp
def clip_gradient(lo, hi, x):
    return x


def clip_fwd(lo, hi, x):
    return x, (lo, hi)


def clip_bwd(res, g):
    lo, hi = res
    return None, None, jnp.clip(g, lo, hi)


clip_gradient.defvjp(clip_fwd, clip_bwd)


@partial(custom_jvp, nondiff_argnums=(0,))
def apply_n_times(n, x):
    for _ in range(n):
        x = jnp.sin(x)
    return x


@apply_n_times.defjvp
def apply_n_times_jvp(n, primals, tangents):
    (x,), (t,) = primals, tangents
    y, dy = x, t
    for _ in range(n):
        y, dy = jnp.sin(y), jnp.cos(y) * dy
    return y, dy


@partial(custom_vjp, nondiff_argnums=(0,))
def fixed_point(f, a, x_guess):
    def cond(carry):
        x_prev, x = carry
        return jnp.abs(x_prev - x) > 1e-6

    def body(carry):
        _, x = carry
        return x, f(a, x)

    return lax.while_loop(cond, body, (x_guess, f(a, x_guess)))[1]


def fixed_point_fwd(f, a, x_init):
    x_star = fixed_point(f, a, x_init)
    return x_star, (a, x_star)


def fixed_point_bwd(f, res, x_star_bar):
    a, x_star = res
    # d x*/d a = (df/da) / (1 - df/dx) at the fixed point
    dfdx = grad(f, 1)(a, x_star)
    dfda = grad(f, 0)(a, x_star)
    return dfda * x_star_bar / (1.0 - dfdx), jnp.zeros_like(x_star)


fixed_point.defvjp(fixed_point_fwd, fixed_point_bwd)


def newton_sqrt(a):
    return fixed_point(lambda a, x: 0.5 * (x + a / x), a, a)


def main():
    xs = jnp.array([-3.0, 0.0, 2.0, 50.0, 100.0])
    clipped_loss = lambda x: jnp.sum(clip_gradient(-0.5, 0.5, x) ** 2)  # noqa: E731
    return {
        "log1pexp": log1pexp(xs),
        "log1pexp_grad_at_100": grad(log1pexp)(100.0),
        "log1pexp_grads_jit": jit(vmap(grad(log1pexp)))(xs),
        "clipped_grads": grad(clipped_loss)(jnp.array([0.1, 2.0, -3.0])),
        "apply_n_times": (apply_n_times(3, 0.7), grad(apply_n_times, 1)(3, 0.7)),
        "sqrt": newton_sqrt(2.0),
        "sqrt_grad": grad(newton_sqrt)(2.0),
        "sqrt_grad_jit_vmap": jit(vmap(grad(newton_sqrt)))(jnp.array([1.0, 4.0, 9.0])),
    }
