"""Issue 19's "done" list as tests: a researcher's Newton step, Gaussian-process marginal
likelihood, small CNN training step, Mamba block (with its causal depthwise conv1d) and FFT
convolution, each written once against a JAX-like namespace and run with functx and with JAX on
identical inputs under ``jit(vmap(value_and_grad(loss)))`` (per-example or per-problem values and
gradients: jit, grad and vmap in one program), asserting JAX's values, dtypes and tree structure.

Each workload is one compiled program per library (the sizes are small; the time goes to tracing
and compiling), and JAX's reference is compiled at XLA's lowest optimisation level, which halves
its compile time here and changes no value beyond float rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
from x64util import x64_off

import functx

jax = pytest.importorskip("jax")

_F32 = np.float32

# XLA's fast compile: the references are small programs, and their compile time is the test's time.
_XLA_QUICK = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


# ----------------------------------------------------------------------------------------------
# The workloads: each takes the library (``functx`` or ``jax``) and returns the loss, its
# parameters and the batched data; the loss is vmapped over the data's leading axis.


def newton_step(jx):
    """One Newton step of L2-regularised logistic regression (``jnp.linalg.solve`` of the
    Hessian), and the loss at the new point: its gradient differentiates the solve and the
    Hessian (third derivatives). vmap runs one problem per data set."""
    jnp = jx.numpy

    def nll(w, X, y):
        z = X @ w
        return jnp.sum(jnp.logaddexp(0.0, z) - y * z) + 0.5 * jnp.sum(w * w)

    def loss(w, X, y):
        g = jx.grad(nll)(w, X, y)
        H = jx.hessian(nll)(w, X, y)
        return nll(w - jnp.linalg.solve(H, g), X, y)

    rng = np.random.default_rng(0)
    w = 0.1 * rng.standard_normal(4)
    X = rng.standard_normal((3, 12, 4))
    y = (rng.uniform(size=(3, 12)) < 0.5).astype(np.float64)
    return loss, w, (X, y)


def gp_marginal_likelihood(jx):
    """The negative log marginal likelihood of a Gaussian process with an RBF kernel
    (cholesky, cho_solve, slogdet), as a function of its log hyperparameters; vmap over data
    sets."""
    jnp = jx.numpy

    def loss(theta, x, y):
        ell, amp, noise = jnp.exp(theta[0]), jnp.exp(theta[1]), jnp.exp(theta[2])
        d2 = (x[:, None] - x[None, :]) ** 2
        K = amp * jnp.exp(-0.5 * d2 / ell**2) + (noise + 1e-6) * jnp.eye(x.shape[0])
        L = jnp.linalg.cholesky(K)
        alpha = jx.scipy.linalg.cho_solve((L, True), y)
        _, logdet = jnp.linalg.slogdet(K)
        return 0.5 * y @ alpha + 0.5 * logdet + 0.5 * x.shape[0] * jnp.log(2 * jnp.pi)

    rng = np.random.default_rng(1)
    theta = np.array([0.0, 0.1, -2.0])
    x = np.sort(rng.uniform(-2, 2, (3, 10)), axis=1)
    y = np.sin(2 * x) + 0.1 * rng.standard_normal((3, 10))
    return loss, theta, (x, y)


def cnn(jx):
    """A small CNN: 3x3 conv, ReLU, 2x2 max pool and 2x2 average pool (``reduce_window``), a
    dense layer and softmax cross-entropy; vmap gives per-example gradients (a batch of one)."""
    jnp, lax = jx.numpy, jx.lax

    def loss(p, x, y):
        h = lax.conv_general_dilated(
            x, p["conv"], (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
        )
        h = jx.nn.relu(h + p["conv_b"])
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = lax.reduce_window(h, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4.0
        logits = h.reshape(h.shape[0], -1) @ p["w"] + p["b"]
        return -jnp.mean(jnp.sum(jx.nn.one_hot(y, 10) * jx.nn.log_softmax(logits), -1))

    rng = np.random.default_rng(2)
    p = {
        "conv": (rng.standard_normal((3, 3, 1, 4)) / 3).astype(_F32),
        "conv_b": (0.1 * rng.standard_normal(4)).astype(_F32),
        "w": (rng.standard_normal((2 * 2 * 4, 10)) / 4).astype(_F32),
        "b": np.zeros(10, _F32),
    }
    x = rng.standard_normal((4, 1, 8, 8, 1)).astype(_F32)
    y = rng.integers(0, 10, (4, 1)).astype(np.int32)
    return loss, p, (x, y)


def mamba_block(jx):
    """A Mamba block: in-projection, causal depthwise conv1d of width 4
    (``conv_general_dilated`` with ``feature_group_count``), SiLU, input-dependent step sizes,
    the selective scan by ``lax.associative_scan``, the skip term, SiLU gating and the out
    projection; squared-error loss, per-example gradients by vmap."""
    jnp, lax = jx.numpy, jx.lax

    def block(p, x):  # x: (batch, length, d_model)
        xi, z = jnp.split(x @ p["w_in"], 2, axis=-1)
        xi = lax.conv_general_dilated(
            xi,
            p["conv"],
            (1,),
            [(3, 0)],
            dimension_numbers=("NWC", "WIO", "NWC"),
            feature_group_count=xi.shape[-1],
        )
        xi = jx.nn.silu(xi + p["conv_b"])
        delta = jx.nn.softplus(xi @ p["w_dt"] + p["b_dt"])
        b_in, c_out = xi @ p["w_B"], xi @ p["w_C"]
        decay = jnp.exp(delta[..., None] * -jnp.exp(p["A_log"]))
        drive = delta[..., None] * b_in[:, :, None, :] * xi[..., None]

        def compose(first, second):
            return first[0] * second[0], second[0] * first[1] + second[1]

        _, h = lax.associative_scan(compose, (decay, drive), axis=1)
        y = jnp.sum(h * c_out[:, :, None, :], -1) + p["D"] * xi
        return (y * jx.nn.silu(z)) @ p["w_out"]

    def loss(p, x, t):
        return jnp.mean((block(p, x) - t) ** 2)

    rng = np.random.default_rng(3)
    d, di, n, length = 4, 8, 4, 10

    def r(*shape, scale=1.0):
        return (scale * rng.standard_normal(shape)).astype(_F32)

    p = {
        "w_in": r(d, 2 * di, scale=0.5),
        "conv": r(4, 1, di, scale=0.5),
        "conv_b": r(di, scale=0.1),
        "w_dt": r(di, di, scale=0.3),
        "b_dt": r(di, scale=0.1),
        "w_B": r(di, n, scale=0.3),
        "w_C": r(di, n, scale=0.3),
        "A_log": np.log(rng.uniform(0.5, 1.5, (di, n))).astype(_F32),
        "D": r(di),
        "w_out": r(di, d, scale=0.3),
    }
    return loss, p, (r(3, 1, length, d), r(3, 1, length, d))


def fft_conv(jx):
    """A long convolution by FFT (S4/Hyena style): ``irfft(rfft(u) * rfft(k))`` zero-padded to
    twice the length, squared-error loss; gradients with respect to the kernel, per example."""
    jnp = jx.numpy

    def loss(k, u, t):
        n = 2 * u.shape[-1]
        y = jnp.fft.irfft(jnp.fft.rfft(u, n=n) * jnp.fft.rfft(k, n=n), n=n)[: u.shape[-1]]
        return jnp.mean((y - t) ** 2)

    rng = np.random.default_rng(4)
    k = (rng.standard_normal(32) * np.exp(-np.arange(32) / 8)).astype(_F32)
    u = rng.standard_normal((4, 32)).astype(_F32)
    t = rng.standard_normal((4, 32)).astype(_F32)
    return loss, k, (u, t)


def _program(jx, workload):
    loss, params, data = workload(jx)
    per_example = jx.vmap(jx.value_and_grad(loss), in_axes=(None,) + (0,) * len(data))
    return per_example, params, data


def _check(workload, rtol=2e-4, sgd=False):
    """functx's ``jit(vmap(value_and_grad))`` against JAX's on identical inputs: tree structure,
    dtypes and values (``rtol``: the rounding of the inputs' precision, relative to each
    output's largest magnitude)."""
    f_fx, params, data = _program(functx, workload)
    f_jax = _program(jax, workload)[0]
    if sgd:  # a training step: the mean per-example gradient updates the parameters

        def with_update(f, jx):
            def step(p, *d):
                losses, grads = f(p, *d)
                new = jx.tree_util.tree_map(lambda w, g: w - 0.1 * g.mean(0), p, grads)
                return losses, grads, new

            return step

        f_fx, f_jax = with_update(f_fx, functx), with_update(f_jax, jax)
    got = functx.jit(f_fx)(params, *data)
    want = jax.jit(f_jax).lower(params, *data).compile(_XLA_QUICK)(params, *data)
    assert functx.tree_util.tree_structure(got) == functx.tree_util.tree_structure(
        jax.tree_util.tree_map(np.asarray, want)
    )
    for g, w in zip(functx.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
        scale = np.max(np.abs(w)) if w.size else 0.0
        np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol * scale)
    return got


def test_newton_step():
    _check(newton_step, rtol=1e-9)


def test_gp_marginal_likelihood():
    _check(gp_marginal_likelihood, rtol=1e-9)


def test_cnn_training_step():
    _check(cnn, sgd=True)


def test_mamba_block():
    _check(mamba_block)


def test_fft_convolution():
    _check(fft_conv)


def test_fft_convolution_default_mode():
    """JAX's default mode (x64 off): float32 throughout, the same values."""
    with x64_off():
        got = _check(fft_conv)
    assert {np.asarray(a).dtype for a in functx.tree_util.tree_leaves(got)} == {np.dtype(_F32)}
