"""Second-order code from curvature research: Hessian-vector products by forward-over-reverse
(jax.jvp of jax.grad), per-example HVPs and per-example gradient norms with jax.vmap over the
batch, a Gauss-Newton-vector product from jax.linearize and jax.vjp, the full jax.hessian of a
small softmax-regression loss on a flattened parameter vector (jax.flatten_util.ravel_pytree)
and one damped Newton step with jnp.linalg.solve, and the Hessian's top eigenvalue by a power
iteration in lax.fori_loop on HVPs. 16 examples, 4 features, 3 classes."""

import jax
import jax.numpy as jnp
from jax import lax
from jax.flatten_util import ravel_pytree

RTOL, ATOL = 5e-4, 1e-5  # float32 second derivatives and a linear solve
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)


def logits_fn(params, x):
    return jnp.tanh(x @ params["w1"]) @ params["w2"] + params["b"]


def example_loss(params, x, y):
    return -jax.nn.log_softmax(logits_fn(params, x))[y]


def batch_loss(params, xs, ys):
    return jnp.mean(jax.vmap(example_loss, in_axes=(None, 0, 0))(params, xs, ys))


def hvp(f, params, v, *args):
    return jax.jvp(lambda p: jax.grad(f)(p, *args), (params,), (v,))[1]


def main():
    kx, ky, k1, k2, kv = jax.random.split(jax.random.PRNGKey(13), 5)
    xs = jax.random.normal(kx, (16, 4))
    ys = jax.random.randint(ky, (16,), 0, 3)
    params = {
        "w1": 0.5 * jax.random.normal(k1, (4, 3)),
        "w2": 0.5 * jax.random.normal(k2, (3, 3)),
        "b": jnp.zeros(3),
    }
    v = jax.tree_util.tree_map(jnp.ones_like, params)
    batch_hvp = jax.jit(lambda p, v: hvp(batch_loss, p, v, xs, ys))(params, v)
    per_example_hvp = jax.vmap(lambda x, y: hvp(example_loss, params, v, x, y))(xs, ys)
    per_example_grads = jax.vmap(jax.grad(example_loss), in_axes=(None, 0, 0))(params, xs, ys)
    grad_norms = jnp.sqrt(
        sum(jnp.sum(g.reshape(16, -1) ** 2, axis=1) for g in jax.tree.leaves(per_example_grads))
    )

    # Gauss-Newton: J^T H_out J v with J the logits' Jacobian
    out, jvp_fn = jax.linearize(lambda p: logits_fn(p, xs), params)
    _, vjp_fn = jax.vjp(lambda p: logits_fn(p, xs), params)
    probs = jax.nn.softmax(out)
    jv = jvp_fn(v)
    hjv = probs * jv - probs * jnp.sum(probs * jv, axis=-1, keepdims=True)
    (gnvp,) = vjp_fn(hjv / xs.shape[0])

    flat, unravel = ravel_pytree(params)

    def flat_loss(theta):
        return batch_loss(unravel(theta), xs, ys)

    hess = jax.hessian(flat_loss)(flat)
    g = jax.grad(flat_loss)(flat)
    newton = flat - jnp.linalg.solve(hess + 0.1 * jnp.eye(flat.size), g)

    def power(_, u):
        w = jax.jvp(jax.grad(flat_loss), (flat,), (u,))[1]
        return w / jnp.linalg.norm(w)

    u = lax.fori_loop(0, 20, power, jax.random.normal(kv, flat.shape))
    top = u @ jax.jvp(jax.grad(flat_loss), (flat,), (u,))[1]
    return {
        "batch_hvp": batch_hvp,
        "per_example_hvp": per_example_hvp,
        "grad_norms": grad_norms,
        "gnvp": gnvp,
        "hessian": hess,
        "newton": unravel(newton),
        "loss_after": flat_loss(newton),
        "top_eig": top,
    }
