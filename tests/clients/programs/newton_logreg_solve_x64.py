"""Newton's method for L2-regularised logistic regression in float64, the textbook way: the
Hessian from jax.hessian, the Newton system solved with jnp.linalg.solve, the whole step jitted;
then the hyperparameter gradient of the validation loss at the (approximate) optimum, where
jit(grad(...)) differentiates through the unrolled Newton steps and their solves; and one Newton
step vmapped over a batch of regularisation strengths. 40 training points in 5 dimensions."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax import grad, hessian, jit, random, vmap  # noqa: E402

RTOL, ATOL = 1e-8, 1e-11
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
N, D = 40, 5


def data(key):
    kx, kw, kn = random.split(key, 3)
    x = random.normal(kx, (N, D))
    w_true = random.normal(kw, (D,))
    y = (x @ w_true + 0.5 * random.normal(kn, (N,)) > 0).astype(jnp.float64)
    return x, y


def loss(w, x, y, log_lam):
    logits = x @ w
    nll = jnp.mean(jnp.logaddexp(0.0, logits) - y * logits)
    return nll + 0.5 * jnp.exp(log_lam) * jnp.sum(w**2)


def newton_step(w, x, y, log_lam):
    g = grad(loss)(w, x, y, log_lam)
    h = hessian(loss)(w, x, y, log_lam)
    return w - jnp.linalg.solve(h, g)


def fit(log_lam, x, y, steps=3):
    w = jnp.zeros(D)
    for _ in range(steps):
        w = newton_step(w, x, y, log_lam)
    return w


def validation_loss(log_lam, x, y, xv, yv):
    return loss(fit(log_lam, x, y), xv, yv, -jnp.inf)


def main():
    x, y = data(random.PRNGKey(0))
    xv, yv = data(random.PRNGKey(1))
    log_lam = jnp.log(0.1)
    step = jit(newton_step)
    w, path = jnp.zeros(D), []
    for _ in range(4):
        w = step(w, x, y, log_lam)
        path.append(w)
    hyper = jit(grad(validation_loss))(log_lam, x, y, xv, yv)
    lams = jnp.log(jnp.array([0.01, 0.1, 1.0]))
    batched = vmap(newton_step, in_axes=(None, None, None, 0))(jnp.zeros(D), x, y, lams)
    return {
        "path": path,
        "grad_at_opt": grad(loss)(w, x, y, log_lam),
        "hypergradient": hyper,
        "vmapped_steps": batched,
    }
