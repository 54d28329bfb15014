"""Temporaries of compiled loop bodies come from the C++ programs' block caches (a per-thread
cache of small blocks, a pool of large ones): results equal eager ones, also from threads that
end (their cached blocks are freed then) and from OpenMP-parallel kernels."""

import threading

import numpy as np

import functx
import functx.numpy as jnp
from functx import lax


def _hmm_like(A, e, x0):
    # a scan whose body allocates small temporaries (a product, a sum) every iteration
    def body(carry, ei):
        a, ll = carry
        a = (a @ A) * ei
        s = jnp.sum(a)
        return (a / s, ll + jnp.log(s)), s

    (a, ll), ss = lax.scan(body, (x0, jnp.float32(0.0)), e)
    return a, ll, ss


def _inputs():
    rng = np.random.default_rng(0)
    A = rng.uniform(0.5, 1.5, (7, 7)).astype(np.float32)
    A /= A.sum(-1, keepdims=True)
    e = rng.uniform(0.1, 1.0, (40, 7)).astype(np.float32)
    x0 = np.full(7, 1 / 7, np.float32)
    return A, e, x0


def test_scan_body_temporaries_and_gradient_match_eager():
    A, e, x0 = _inputs()

    def loss(A, e, x0):
        a, ll, ss = _hmm_like(A, e, x0)
        return ll + jnp.sum(a) + jnp.sum(ss)

    f = lambda A, e, x0: functx.value_and_grad(loss, argnums=(0, 1))(A, e, x0)  # noqa: E731
    want = f(A, e, x0)
    jf = functx.jit(f)
    for _ in range(3):  # repeated calls reuse cached blocks
        got = jf(A, e, x0)
        for g, w in zip(functx.tree_util.tree_leaves(got), functx.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=1e-6)


def test_fori_loop_from_threads_that_end():
    A, e, x0 = _inputs()

    def run(A, x0):
        # large (>= 64 KiB) and small temporaries per iteration
        big = jnp.broadcast_to(x0[:, None], (7, 4096)) * 2.0

        def body(i, c):
            x, acc = c
            x = jnp.tanh(x @ A)
            return x, acc + jnp.sum(big * x[:, None], axis=0)

        return lax.fori_loop(0, 5, body, (x0, jnp.zeros(4096, jnp.float32)))

    want = run(A, x0)
    jf = functx.jit(run)
    out = {}

    def worker(k):
        out[k] = [jf(A, x0) for _ in range(2)]

    for rnd in range(2):  # threads that end, then new ones
        ts = [threading.Thread(target=worker, args=(4 * rnd + k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    assert len(out) == 8
    for res in out.values():
        for got in res:
            for g, w in zip(got, want):
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-5, atol=1e-5)


def test_transposed_products_fold_into_the_product():
    # the weight gradient x.T @ d comes out of dot_general's transpose as (d.T @ x).T: computed
    # as one product in the consumer's layout; a product also read directly is left alone.
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 5)).astype(np.float32)
    w = rng.standard_normal((5, 4)).astype(np.float32)
    b = rng.standard_normal((4, 3)).astype(np.float32)

    def f(w, x, b):
        def loss(w):
            return jnp.sum(jnp.tanh(x @ w) @ b)

        g = functx.grad(loss)(w)
        y = x @ w
        return w - 0.1 * g, (b.T @ w.T).T, y, y.T

    graph = functx.jit(f).lower(w, x, b).as_text()
    assert "m=5 k=6 n=4" in graph  # the weight gradient, (5, 4) directly
    want = f(w, x, b)
    got = functx.jit(f)(w, x, b)
    for g, v in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(v), rtol=1e-5, atol=1e-5)
