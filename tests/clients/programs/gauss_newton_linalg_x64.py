"""A small second-order least-squares solver in float64, as scientific JAX code writes one: a
nonlinear curve fit (a sum of two damped exponentials) whose residual Jacobian comes from
jax.jacfwd; Gauss-Newton steps solved three ways that must agree (a thin jnp.linalg.qr then
jax.scipy.linalg.solve_triangular; the normal equations by jnp.linalg.cholesky and two
triangular solves; jnp.linalg.lstsq); Levenberg-Marquardt damping with the trust-region
update written with jnp.where, iterated in lax.while_loop under jit; then parameter
uncertainties from the inverse Gauss-Newton Hessian by jnp.linalg.eigh (condition number,
eigenvalues) and jnp.linalg.svd of the Jacobian (singular values, numerical rank via
matrix_rank), jnp.linalg.pinv, and the gradient of the final cost with respect to the data
(implicit in the unrolled solver). 30 points, 4 parameters."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax.scipy.linalg import cho_solve, solve_triangular  # noqa: E402

RTOL, ATOL = 1e-7, 1e-9
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
T = jnp.linspace(0.0, 4.0, 30)


def model(theta, t):
    a1, k1, a2, k2 = theta
    return a1 * jnp.exp(-k1 * t) + a2 * jnp.exp(-k2 * t)


def residuals(theta, y):
    return model(theta, T) - y


def gn_step_qr(theta, y):
    r, J = residuals(theta, y), jax.jacfwd(residuals)(theta, y)
    q, rr = jnp.linalg.qr(J)
    return -solve_triangular(rr, q.T @ r, lower=False)


def gn_step_cholesky(theta, y, damping=0.0):
    r, J = residuals(theta, y), jax.jacfwd(residuals)(theta, y)
    A = J.T @ J + damping * jnp.diag(jnp.diag(J.T @ J))
    L = jnp.linalg.cholesky(A)
    z = solve_triangular(L, -J.T @ r, lower=True)
    return solve_triangular(L.T, z, lower=False), cho_solve((L, True), -J.T @ r)


def gn_step_lstsq(theta, y):
    r, J = residuals(theta, y), jax.jacfwd(residuals)(theta, y)
    return jnp.linalg.lstsq(J, -r)[0]


def cost(theta, y):
    return 0.5 * jnp.sum(residuals(theta, y) ** 2)


def lm_update(state, y):
    theta, lam, it, _, c = state
    step = gn_step_cholesky(theta, y, lam)[0]
    new = theta + step
    c_new = cost(new, y)
    better = c_new < c
    theta = jnp.where(better, new, theta)
    lam = jnp.where(better, lam / 3.0, lam * 2.0)
    return theta, lam, it + 1, c, jnp.minimum(c, c_new)


@jax.jit
def levenberg_marquardt(theta, y):
    def cond(state):
        _, _, it, c_old, c = state
        return (it < 25) & (jnp.abs(c_old - c) > 1e-12 * (1 + c))

    state = (theta, 1e-2, 0, jnp.inf, cost(theta, y))
    return lax.while_loop(cond, lambda s: lm_update(s, y), state)


def lm_fixed_steps(theta, y):  # a fixed trip count, so reverse mode runs through it
    state = (theta, 1e-2, 0, jnp.inf, cost(theta, y))
    return lax.fori_loop(0, 6, lambda i, s: lm_update(s, y), state)


def main():
    true = jnp.array([2.0, 1.5, 0.7, 0.2])
    noise = 0.01 * jax.random.normal(jax.random.PRNGKey(1), T.shape)
    y = model(true, T) + noise
    theta0 = jnp.array([1.5, 1.0, 1.0, 0.1])
    steps = (gn_step_qr(theta0, y), *gn_step_cholesky(theta0, y), gn_step_lstsq(theta0, y))
    theta, lam, iters, _, final_cost = levenberg_marquardt(theta0, y)
    J = jax.jacfwd(residuals)(theta, y)
    H = J.T @ J
    evals, evecs = jnp.linalg.eigh(H)
    sigma2 = 2 * final_cost / (T.size - theta.size)
    cov = sigma2 * (evecs / evals) @ evecs.T
    s = jnp.linalg.svd(J, compute_uv=False)
    data_grad = jax.grad(lambda y: cost(lm_fixed_steps(theta0, y)[0], y))(y)
    return {
        "steps": steps,
        "theta": theta,
        "lam": lam,
        "iters": iters,
        "cost": final_cost,
        "eigvals": evals,
        "cond": evals[-1] / evals[0],
        "stderr": jnp.sqrt(jnp.diag(cov)),
        "cov_vs_inv": jnp.max(jnp.abs(cov - sigma2 * jnp.linalg.inv(H))),
        "singular": s,
        "rank": jnp.linalg.matrix_rank(J),
        "pinv_step": -jnp.linalg.pinv(J) @ residuals(theta0, y),
        "data_grad": data_grad,
    }
