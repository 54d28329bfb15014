"""The JAX autodiff cookbook's logistic-regression walk-through: data drawn with jax.random,
grad with respect to several arguments, value_and_grad, jacfwd and jacrev of a vector function,
hessian, Hessian-vector products, vjp/jvp and per-example Jacobians with vmap (the cookbook's
`if` on a concrete value under eager grad is python_control_flow.py)."""

import jax.numpy as jnp
from jax import grad, hessian, jacfwd, jacrev, jvp, random, value_and_grad, vjp, vmap

RTOL, ATOL = 1e-4, 1e-6  # float32 second derivatives: other rounding orders than XLA's
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)


def sigmoid(x):
    return 0.5 * (jnp.tanh(x / 2) + 1)


def predict(W, b, inputs):
    return sigmoid(jnp.dot(inputs, W) + b)


def main():
    key = random.PRNGKey(0)
    k_in, k_w, k_b = random.split(key, 3)
    inputs = random.normal(k_in, (6, 3))
    targets = jnp.array([True, True, False, True, False, True])
    W, b = random.normal(k_w, (3,)), random.normal(k_b, ())

    def loss(W, b):
        preds = predict(W, b, inputs)
        label_probs = preds * targets + (1 - preds) * (1 - targets)
        return -jnp.sum(jnp.log(label_probs))

    value, (gW, gb) = value_and_grad(loss, (0, 1))(W, b)
    f = lambda W: predict(W, b, inputs)  # noqa: E731
    v = jnp.array([0.3, -0.2, 0.1])
    _, pullback = vjp(f, W)

    return {
        "inputs": inputs,
        "loss": value,
        "grads": (gW, gb),
        "grad_b_only": grad(loss, 1)(W, b),
        "jacfwd": jacfwd(f)(W),
        "jacrev": jacrev(f)(W),
        "hessian": hessian(lambda W: loss(W, b))(W),
        "hvp": jvp(grad(lambda W: loss(W, b)), (W,), (v,))[1],
        "jvp": jvp(f, (W,), (v,)),
        "vjp": pullback(jnp.ones(6)),
        "per_example_jac": vmap(jacrev(lambda x: predict(W, b, x)))(inputs),
    }
