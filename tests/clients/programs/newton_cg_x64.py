"""Newton's method with Hessian-vector products, in float64, the way the JAX autodiff cookbook
builds it: the first line turns on jax_enable_x64, Hessian-vector products come from
jvp-of-grad (forward-over-reverse), each Newton system is solved by conjugate gradients inside a
lax.while_loop, and the whole Newton step is jitted. The extended Rosenbrock function in 6-D."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax import grad, jit, jvp, lax  # noqa: E402

RTOL, ATOL = 1e-7, 1e-10  # float64; CG inside Newton amplifies last-bit differences
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def hvp(f, x, v):
    return jvp(grad(f), (x,), (v,))[1]


def conjugate_gradient(matvec, b, iters=50, tol=1e-12):
    def cond(state):
        i, _, r, _, rs = state
        return (i < iters) & (rs > tol)

    def body(state):
        i, x, r, p, rs = state
        ap = matvec(p)
        step = rs / (p @ ap)
        x, r = x + step * p, r - step * ap
        rs_new = r @ r
        return i + 1, x, r, r + (rs_new / rs) * p, rs_new

    x0 = jnp.zeros_like(b)
    state = lax.while_loop(cond, body, (0, x0, b, b, b @ b))
    return state[1], state[0]


@jit
def newton_step(x):
    g = grad(rosenbrock)(x)
    direction, cg_iters = conjugate_gradient(lambda v: hvp(rosenbrock, x, v), -g)
    return x + direction, cg_iters


def main():
    x = jnp.array([-1.2, 1.0, -0.5, 0.8, 1.3, 0.6])
    path, iters = [x], []
    for _ in range(6):
        x, n = newton_step(x)
        path.append(x)
        iters.append(n)
    return {
        "path": path,
        "cg_iterations": iters,
        "value": rosenbrock(x),
        "grad": grad(rosenbrock)(x),
    }
