"""Spectral quantities of a symmetric matrix with their gradients, in float64: the eigenvalues and
eigenvectors of a parametrised symmetric matrix from jnp.linalg.eigh, a loss on the smallest
eigenvalues (as in spectral clustering and Hessian-conditioning penalties) and on the projection
onto the leading eigenvector (sign-invariant), its gradient under jit, eigvalsh of a batch under
vmap, and the matrix square root V diag(sqrt(w)) V^T and its gradient. 5x5 matrices."""

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax import grad, jit, random, vmap  # noqa: E402

RTOL, ATOL = 1e-8, 1e-10
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)


def sym(p):
    return p @ p.T + 0.5 * jnp.eye(p.shape[0])


def spectral_loss(p, v0):
    w, v = jnp.linalg.eigh(sym(p))
    lead = v[:, -1]
    return jnp.sum(w[:2]) + (lead @ v0) ** 2 - jnp.log(w[-1])


def sqrtm_psd(m):
    w, v = jnp.linalg.eigh(m)
    return (v * jnp.sqrt(w)) @ v.T


def main():
    kp, kv, kb = random.split(random.PRNGKey(21), 3)
    p = random.normal(kp, (5, 5))
    v0 = random.normal(kv, (5,))
    batch = random.normal(kb, (3, 5, 5))
    w, v = jnp.linalg.eigh(sym(p))
    return {
        "eigenvalues": w,
        "abs_vectors": jnp.abs(v),  # (eigenvector signs are a LAPACK convention)
        "loss_grad": jit(grad(spectral_loss))(p, v0),
        "batched_eigvalsh": vmap(lambda q: jnp.linalg.eigvalsh(sym(q)))(batch),
        "sqrtm": sqrtm_psd(sym(p)),
        "sqrtm_grad": grad(lambda q: jnp.sum(sqrtm_psd(sym(q))[0]))(p),
    }
