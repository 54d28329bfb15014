"""A long convolution through the FFT, the core of S4/Hyena-style layers: a causal filter as long
as the sequence, applied by zero-padding to twice the length, jnp.fft.rfft of signal and filter,
a product of spectra and jnp.fft.irfft back, cut to the first L outputs; checked against
jnp.convolve, differentiated with respect to the filter and the signal under jit, and vmapped
over channels. Also a spectral power loss on jnp.fft.fft with norm='ortho'. Length 32, 3
channels."""

import jax.numpy as jnp
from jax import grad, jit, random, vmap

RTOL, ATOL = 2e-4, 2e-5
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
L = 32


def fft_conv(u, k):
    n = 2 * u.shape[-1]
    y = jnp.fft.irfft(jnp.fft.rfft(u, n=n) * jnp.fft.rfft(k, n=n), n=n)
    return y[..., : u.shape[-1]]


def layer_loss(k, u, target):
    return jnp.mean((fft_conv(u, k) - target) ** 2)


def spectral_power(x):
    spec = jnp.fft.fft(x, norm="ortho")
    return jnp.sum(jnp.abs(spec[1 : L // 2]) ** 2)


def main():
    ku, kk, kt = random.split(random.PRNGKey(9), 3)
    u = random.normal(ku, (3, L))
    k = random.normal(kk, (3, L)) * jnp.exp(-0.1 * jnp.arange(L))
    target = random.normal(kt, (3, L))
    dk, du = jit(grad(layer_loss, argnums=(0, 1)))(k, u, target)
    return {
        "conv": fft_conv(u, k),
        "direct": jnp.convolve(u[0], k[0])[:L],
        "dk": dk,
        "du": du,
        "per_channel": vmap(grad(layer_loss), in_axes=(0, 0, 0))(k, u, target),
        "power": spectral_power(u[0]),
        "power_grad": jit(grad(spectral_power))(u[0]),
        "freqs": jnp.fft.rfftfreq(L, 0.5),
    }
