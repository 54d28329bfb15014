"""The complex-numbers section of JAX's autodiff cookbook: grad of a real-valued function of a
complex input (JAX returns the conjugate of the Wirtinger gradient convention it documents),
grad(holomorphic=True) of an analytic function, jacfwd/jacrev of a holomorphic vector function,
vjp with a complex cotangent, and the same under jit and vmap."""

import jax.numpy as jnp
from jax import grad, jacfwd, jacrev, jit, vjp, vmap

RTOL, ATOL = 1e-5, 1e-6
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)


def real_valued(z):
    return jnp.abs(z) ** 2 + jnp.real(z * jnp.conj(z) ** 2)


def holomorphic(z):
    return jnp.sin(z) ** 2 + z * jnp.exp(z)


def vector(z):
    return jnp.stack([z[0] * z[1], jnp.exp(z[0]), z[1] ** 3])


def main():
    z = jnp.array(1.0 + 2.0j, dtype=jnp.complex64)
    zs = jnp.array([0.5 - 1.0j, -1.5 + 0.25j], dtype=jnp.complex64)
    out, pullback = vjp(vector, zs)
    return {
        "one_j_times_x": 1j * jnp.arange(3.0),
        "grad_real_valued": grad(real_valued)(z),
        "grad_holomorphic": grad(holomorphic, holomorphic=True)(z),
        "jit_vmap_grad": jit(vmap(grad(holomorphic, holomorphic=True)))(zs),
        "jacfwd": jacfwd(vector, holomorphic=True)(zs),
        "jacrev": jacrev(vector, holomorphic=True)(zs),
        "vjp": (out, pullback(jnp.array([1.0 + 1.0j, 2.0, -1.0j], dtype=jnp.complex64))),
    }
