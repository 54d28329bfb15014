"""The linear recurrence h_t = a_t * h_{t-1} + b_t (a diagonal SSM, Mamba's inner loop) and its
gradient, batch 8, length 4096, width 256, float32, scanned along the length.

Runs in one process: functx eager (``associative_scan``: O(log L) vectorised NumPy passes, and for
the gradient the transposed tangent scan), JAX ``jit(lax.associative_scan)``, JAX ``jit(lax.scan)``
and a NumPy loop over the length (the gradient's loop written by hand). Checks every result against
the NumPy loop, prints the median time per call and the ratio to ``jit(lax.associative_scan)``.
``--quick`` uses smaller sizes and fewer repetitions.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np

import functx
import functx.numpy as fnp
from functx import lax


def combine(first, second):
    a1, b1 = first
    a2, b2 = second
    return a1 * a2, a2 * b1 + b2


# --- functx ---------------------------------------------------------------------------------------
def fx_forward(a, b):
    return lax.associative_scan(combine, (a, b), axis=1)[1]


def fx_loss(a, b, gy):
    return fnp.sum(fx_forward(a, b) * gy)


fx_grad = functx.grad(fx_loss, argnums=(0, 1))


# --- NumPy: a loop over the length -------------------------------------------------------------
def np_forward(a, b):
    h = np.empty_like(b)
    prev = np.zeros_like(b[:, 0])
    for t in range(b.shape[1]):
        prev = a[:, t] * prev + b[:, t]
        h[:, t] = prev
    return h


def np_grad(a, b, gy):
    """d sum(h * gy) / d(a, b): g_t = gy_t + a_{t+1} g_{t+1}; da_t = g_t h_{t-1}; db_t = g_t."""
    h = np_forward(a, b)
    da, db = np.empty_like(a), np.empty_like(b)
    g = np.zeros_like(b[:, 0])
    for t in range(b.shape[1] - 1, -1, -1):
        g = gy[:, t] + (a[:, t + 1] * g if t + 1 < b.shape[1] else 0)
        db[:, t] = g
        da[:, t] = g * h[:, t - 1] if t else 0
    return da, db


# --- JAX ------------------------------------------------------------------------------------------
def jax_functions():
    import jax
    import jax.numpy as jnp

    def assoc_forward(a, b):
        return jax.lax.associative_scan(combine, (a, b), axis=1)[1]

    def scan_forward(a, b):
        def step(h, ab):
            h = ab[0] * h + ab[1]
            return h, h

        _, hs = jax.lax.scan(
            step, jnp.zeros_like(b[:, 0]), (jnp.moveaxis(a, 1, 0), jnp.moveaxis(b, 1, 0))
        )
        return jnp.moveaxis(hs, 0, 1)

    out = {}
    for name, fwd in (
        ("jax jit(associative_scan)", assoc_forward),
        ("jax jit(scan)", scan_forward),
    ):
        grad = jax.grad(lambda a, b, gy, fwd=fwd: jnp.sum(fwd(a, b) * gy), argnums=(0, 1))
        out[name] = (jax.jit(fwd), jax.jit(grad), jax.block_until_ready)
    return out


def timeit(fn, reps):
    fn()  # warm up (JAX compiles, functx traces)
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def check(name, got, want, what):
    got = [np.asarray(g, np.float64) for g in (got if isinstance(got, (tuple, list)) else [got])]
    want = want if isinstance(want, (tuple, list)) else [want]
    for g, w in zip(got, want):
        err = np.abs(g - w).max() / max(1.0, np.abs(w).max())
        assert err < 1e-4, f"{name} {what}: relative error {err:.2e}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="B=2, L=512, D=64, 3 repetitions")
    ap.add_argument("--reps", type=int, default=None)
    args = ap.parse_args()
    B, L, D = (2, 512, 64) if args.quick else (8, 4096, 256)
    reps = args.reps or (3 if args.quick else 5)
    rng = np.random.default_rng(0)
    a = rng.uniform(0.5, 0.999, (B, L, D)).astype(np.float32)
    b = rng.standard_normal((B, L, D)).astype(np.float32)
    gy = rng.standard_normal((B, L, D)).astype(np.float32)

    impls = {"functx eager (associative_scan)": (fx_forward, fx_grad, lambda x: x)}
    try:
        impls.update(jax_functions())
    except ImportError:
        print("(JAX is not installed: no JAX rows)")
    impls["numpy loop"] = (np_forward, np_grad, lambda x: x)

    # The reference: the NumPy loop in float64.
    a64, b64, gy64 = (x.astype(np.float64) for x in (a, b, gy))
    want_h, want_g = np_forward(a64, b64), np_grad(a64, b64, gy64)

    results = {}
    for name, (fwd, grad, block) in impls.items():
        check(name, fwd(a, b), want_h, "forward")
        check(name, grad(a, b, gy), want_g, "gradient")
        results[name] = (
            timeit(lambda: block(fwd(a, b)), reps),
            timeit(lambda: block(grad(a, b, gy)), reps),
        )

    base = results.get("jax jit(associative_scan)")
    print(
        f"linear recurrence h_t = a_t h_(t-1) + b_t: B={B}, L={L}, D={D}, float32, scan over L; "
        f"median of {reps}"
    )
    print(
        f"machine: {platform.machine()} {platform.processor() or ''}, {os.cpu_count()} CPUs, "
        f"numpy {np.__version__}"
    )
    print(
        f"{'implementation':34s} {'forward ms':>11s} {'x jax assoc':>11s} "
        f"{'gradient ms':>12s} {'x jax assoc':>11s} {'grad/fwd':>9s}"
    )
    for name, (tf, tg) in results.items():
        rf = f"{tf / base[0]:10.2f}x" if base else "          -"
        rg = f"{tg / base[1]:10.2f}x" if base else "          -"
        print(f"{name:34s} {tf * 1e3:11.2f} {rf} {tg * 1e3:12.2f} {rg} {tg / tf:8.2f}x")


if __name__ == "__main__":
    main()
