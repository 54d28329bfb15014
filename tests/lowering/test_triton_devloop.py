"""Device loops (``functx/lowering/triton/devloop.py``): scans and while loops whose body is
small run as one Triton kernel with the loop inside. Each program runs in Triton's interpreter
(a CUDA GPU with ``FUNCTX_TEST_TRITON_GPU=1``) and is checked against JAX, against functx's eager
interpreter and against the same program with host loops (``FUNCTX_DEVICE_LOOPS=0``); the
generated source shows which loops became device loops and why the others did not. Sizes are
odd (25, 7, 5) so that every value has padded lanes."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
jax = pytest.importorskip("jax")

import functx  # noqa: E402
import functx.numpy as fnp  # noqa: E402
from functx import lax  # noqa: E402
from functx.errors import FunctxValueError  # noqa: E402
from functx.lowering.triton import devloop  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import workloads  # noqa: E402

ON_GPU = os.environ.get("FUNCTX_TEST_TRITON_GPU", "0") not in ("", "0")


@pytest.fixture
def gpu(triton_gpu):
    """Triton's interpreter as the GPU (a CUDA GPU with FUNCTX_TEST_TRITON_GPU=1)."""
    return triton_gpu


def _run(f, args, dev, loops=True):
    """``jit(f)`` on the GPU: (its generated source, its results as NumPy arrays). Products
    outside device loops in float32 (cuBLAS takes TF32 inputs by default on a GPU, as JAX's
    products do; a device loop's products are float32 multiply-adds)."""
    env = {"FUNCTX_DEVICE_LOOPS": "1" if loops else "0"}
    with mock.patch.dict(os.environ, env), functx.default_matmul_precision("highest"):
        jf = functx.jit(f, backend="triton")
        gargs = functx.device_put(args, dev)
        src = jf.lower(*gargs).as_text()
        out = jf(*gargs)
    return src, [np.asarray(x) for x in functx.tree_util.tree_leaves(out)]


def _device_loops(src: str) -> int:
    return len(re.findall(r"def \w+_devloop\(", src))


def _check(f, jf, args, dev, n_loops, rtol=2e-5, atol=1e-6, host=False):
    """``f`` with device loops against JAX (``jf``), the eager interpreter and (``host``) the
    same program with host loops."""
    src, got = _run(f, args, dev)
    assert _device_loops(src) == n_loops, src
    with jax.default_matmul_precision("highest"):
        refs = [jax.tree_util.tree_leaves(jf(*args)), functx.tree_util.tree_leaves(f(*args))]
    if host:
        refs.append(_run(f, args, dev, loops=False)[1])
    for ref in refs:
        assert len(ref) == len(got)
        for g, r in zip(got, ref):
            r = np.asarray(r)
            assert g.shape == r.shape and g.dtype == r.dtype
            np.testing.assert_allclose(g, r, rtol=rtol, atol=atol)
    return src


def _hmm(jx):
    """The scaled forward algorithm's log-likelihood of an HMM and its gradient with respect to
    the log parameters (``workloads.py``'s EM step without its normalisation)."""
    jnp = jx.numpy

    def loglik(logA, logB, logpi, obs):
        emit = jx.nn.one_hot(obs, logB.shape[1], dtype=logB.dtype) @ jnp.exp(logB).T
        A = jnp.exp(logA)
        a0 = jnp.exp(logpi) * emit[0]

        def forward(carry, e):
            alpha, ll = carry
            alpha = (alpha @ A) * e
            s = jnp.sum(alpha)
            return (alpha / s, ll + jnp.log(s)), None

        (_, ll), _ = jx.lax.scan(forward, (a0 / jnp.sum(a0), jnp.log(jnp.sum(a0))), emit[1:])
        return ll

    return jx.value_and_grad(loglik, argnums=(0, 1, 2))


def test_hmm_loglik_and_its_gradient(gpu):
    """The forward scan and its transposed gradient scan: one device loop each; the 7-state
    carry (a 7x7 matrix in the gradient) is padded to 8 (25 states, as the workload, on a GPU:
    Triton's interpreter runs a ``tl.reduce`` an element pair at a time)."""
    S = 25 if ON_GPU else 7
    (logA, logB, logpi), obs = workloads.inputs("hmm", dict(T=9, S=S, M=5))
    _check(_hmm(functx), jax.jit(_hmm(jax)), (logA, logB, logpi, obs), gpu, 2, rtol=1e-4)


def _rnn(jx):
    jnp = jx.numpy

    def loss(W, xs, h0):
        def step(h, x):
            h = jnp.tanh(W @ h + x)
            return h, jnp.sum(h * h)

        h, ys = jx.lax.scan(step, h0, xs)
        return jnp.sum(h) + jnp.sum(ys)

    return jx.value_and_grad(loss, argnums=(0, 1, 2))


def test_linear_rnn_scan_and_gradient(gpu):
    """``tanh(W h + x)`` with a 25x25 ``W`` (padded to 32): the forward scan and the reverse
    gradient scan (whose carries are the matrix's cotangent and the state's)."""
    rng = np.random.default_rng(1)
    W = (rng.standard_normal((25, 25)) / 6).astype(np.float32)
    xs = rng.standard_normal((4, 25)).astype(np.float32)
    h0 = rng.standard_normal(25).astype(np.float32)
    _check(_rnn(functx), jax.jit(_rnn(jax)), (W, xs, h0), gpu, 2)


def _mixed(jx, reverse, argmax=False):
    """A scan with carries of three shapes and dtypes (float32 (3, 5), int32 (), bool (3,)),
    broadcasts, iota, max/min/prod reductions, a transposed product, selects and conversions;
    with ``argmax``, an equation no device-loop rule covers."""
    jnp = jx.numpy

    def f(m, k, flag, xs, M):
        def step(c, x):
            m, k, flag = c
            m = 0.5 * m + x[None, :] * jnp.where(flag, 1.0, -1.0)[:, None]
            if argmax:
                k = k + jnp.argmax(x).astype(jnp.int32)
            flag = jnp.logical_not(flag)
            i = jx.lax.broadcasted_iota(jnp.int32, (3, 5), 1).astype(jnp.float32)
            y = (
                jnp.max(m, axis=0)
                - jnp.min(m.T + i.T, axis=1)
                + jnp.mean(i, 0) * jnp.prod(x * 0.5 + 1)
            )
            z = (m.T @ M).T  # (5, 3) x (3, 3): a transposed operand and result
            return (m + 0.1 * z, k + 1, flag), (y, k.astype(jnp.float32))

        return jx.lax.scan(step, (m, k, flag), xs, reverse=reverse)

    return f


def _mixed_args():
    rng = np.random.default_rng(2)
    return (
        rng.standard_normal((3, 5)).astype(np.float32),
        np.int32(4),
        np.array([True, False, True]),
        rng.standard_normal((6, 5)).astype(np.float32),
        (rng.standard_normal((3, 3)) / 3).astype(np.float32),
    )


@pytest.mark.parametrize("reverse", [False, True])
def test_carries_of_several_shapes_and_dtypes(gpu, reverse):
    f, jf = _mixed(functx, reverse), jax.jit(_mixed(jax, reverse))
    src = _check(f, jf, _mixed_args(), gpu, 1, host=True)
    assert "host loop" not in src


def test_an_unsupported_equation_keeps_the_host_loop(gpu):
    """A body with an equation no rule covers (``argmax``) keeps the host loop, and the source
    says why; the values are right either way."""
    f, jf = _mixed(functx, False, argmax=True), jax.jit(_mixed(jax, False, argmax=True))
    src = _check(f, jf, _mixed_args(), gpu, 0)
    assert "(a host loop: no device-loop rule for 'argmax')" in src


def test_a_large_carry_keeps_its_host_loop(gpu, monkeypatch):
    """A value over ``MAX_ELEMENTS`` padded elements (here 64) keeps the host loop."""

    def f(h, xs):
        return lax.scan(lambda h, x: (h * 0.5 + x, fnp.sum(h)), h, xs)

    monkeypatch.setattr(devloop, "MAX_ELEMENTS", 64)
    n = devloop.MAX_ELEMENTS + 1
    args = (np.ones(n, np.float32), np.ones((3, n), np.float32))
    src, got = _run(f, args, gpu)
    assert _device_loops(src) == 0
    assert f"padded elements > {devloop.MAX_ELEMENTS}" in src
    np.testing.assert_allclose(got[0], np.asarray(f(*args)[0]), rtol=1e-6)


def test_device_loops_off(gpu):
    """``FUNCTX_DEVICE_LOOPS=0``: host loops, which say so."""

    def f(h, xs):
        return lax.scan(lambda h, x: (h * 0.5 + x, fnp.sum(h)), h, xs)

    args = (np.ones(7, np.float32), np.ones((3, 7), np.float32))
    src, _ = _run(f, args, gpu, loops=False)
    assert _device_loops(src) == 0 and "device loops are off" in src


def _newton(jx):
    """Newton's square root of a vector to a tolerance (a ``while_loop`` with a condition on the
    carries: a reduction and a count), then a ``fori_loop`` with a traced trip count."""
    jnp = jx.numpy

    def f(s, n):
        def cond(c):
            x, k = c
            return (jnp.max(jnp.abs(x * x - s)) > 1e-5) & (k < 40)

        def body(c):
            x, k = c
            return 0.5 * (x + s / x), k + 1

        x, k = jx.lax.while_loop(cond, body, (s + 1.0, jnp.int32(0)))
        y = jx.lax.fori_loop(0, n, lambda i, y: y * 0.5 + x * i.astype(jnp.float32), x)
        return x, k, y

    return f


def test_while_loops(gpu):
    """While loops (a data-dependent trip count, the condition never read on the host) and a
    fori_loop with a traced bound: one device loop each."""
    s = np.random.default_rng(3).uniform(0.5, 4.0, 25).astype(np.float32)
    src = _check(_newton(functx), jax.jit(_newton(jax)), (s, np.int32(5)), gpu, 2)
    assert "while_loop as one device loop" in src


def test_batched_products_under_vmap(gpu):
    """``vmap`` of the RNN's forward scan over weights and states: products with a batch axis
    (``dot_general`` batch dimensions) in the device loop."""

    def make(jx):
        def run(W, xs, h0):
            step = lambda h, x: (jx.numpy.tanh(W @ h + x), jx.numpy.sum(h))  # noqa: E731
            return jx.lax.scan(step, h0, xs)

        return jx.vmap(run, in_axes=(0, None, 0))

    rng = np.random.default_rng(4)
    W = (rng.standard_normal((3, 7, 7)) / 3).astype(np.float32)
    xs = rng.standard_normal((5, 7)).astype(np.float32)
    h0 = rng.standard_normal((3, 7)).astype(np.float32)
    src = _check(make(functx), jax.jit(make(jax)), (W, xs, h0), gpu, 1)
    assert "host loop" not in src


def test_devloop_warps(gpu, monkeypatch):
    """``FUNCTX_DEVLOOP_WARPS`` sets the kernel's warps; a value that is no power of two up to
    32 is a ``FunctxValueError`` naming the variable."""

    def f(h, xs):
        return lax.scan(lambda h, x: (h * 0.5 + x, fnp.sum(h)), h, xs)

    args = functx.device_put((np.ones(7, np.float32), np.ones((3, 7), np.float32)), gpu)
    monkeypatch.setenv("FUNCTX_DEVLOOP_WARPS", "8")
    assert re.search(r"_fx_site\(\w+_devloop, 8\)", functx.jit(f).lower(*args).as_text())
    monkeypatch.setenv("FUNCTX_DEVLOOP_WARPS", "3")
    with pytest.raises(FunctxValueError, match="FUNCTX_DEVLOOP_WARPS"):
        functx.jit(f).lower(*args).as_text()


def _signs(jx):
    """Row and column max/min of steps holding NaN, infinities and zeros of both signs, and
    integer carries through div/rem (which truncate toward zero) and max/min/prod."""
    jnp = jx.numpy

    def f(c, k, xs, ks):
        def step(carry, x):
            c, k = carry
            xf, xi = x
            out = (jnp.max(xf, axis=1), jnp.min(xf, axis=0), jnp.max(xf), jnp.min(xf))
            q = jx.lax.div(xi, jnp.int32(-3)) + jx.lax.rem(xi, jnp.int32(4))
            k = k + jnp.max(xi) - jnp.min(xi) + jnp.prod(xi % 3 + 1).astype(jnp.int32)
            return (c + jnp.sum(out[0]), k), (*out, q)

        return jx.lax.scan(step, (c, k), (xs, ks))

    return f


def test_zero_signs_nans_and_integers(gpu):
    """Device-loop reductions keep JAX's NaN and zero-sign rules (max(-0, +0) = +0, min = -0)
    in lanes and padding alike; integer carries match (checked bit for bit against JAX and the
    eager interpreter: the sign of a NaN aside)."""
    z, n, i = 0.0, np.nan, np.inf
    xs = np.array(
        [
            [[z, -z, -1.0], [-z, z, -2.0], [-z, -z, -3.0]],
            [[n, 1.0, 2.0], [1.0, i, -i], [-z, -z, -z]],
            [[z, z, z], [-i, -i, -i], [n, -z, z]],
        ],
        np.float32,
    )
    ks = np.random.default_rng(5).integers(-20, 20, (3, 5)).astype(np.int32)
    args = (np.float32(0), np.int32(1), xs, ks)
    src, got = _run(_signs(functx), args, gpu)
    assert _device_loops(src) == 1, src
    for ref in (jax.jit(_signs(jax))(*args), _signs(functx)(*args)):
        ref = [np.asarray(r) for r in jax.tree_util.tree_leaves(ref)]
        for g, r in zip(got, ref):
            assert g.dtype == r.dtype and g.shape == r.shape
            np.testing.assert_array_equal(g, r)
            if r.dtype.kind == "f":
                real = ~np.isnan(r)
                np.testing.assert_array_equal(np.signbit(g)[real], np.signbit(r)[real])
