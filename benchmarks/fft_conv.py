"""An FFT convolution (S4/Hyena's long convolution) of length 2^16 and its gradient, float32:
``y = irfft(rfft(x, 2n) * rfft(k, 2n), 2n)[..., :n]`` for ``x`` of shape (batch, n) and a kernel
``k`` of shape (n,), and ``grad`` of ``sum(y * g)`` with respect to ``x`` and ``k``.

functx (``jit``: the C++ program with the transforms as library steps, pocketfft through SciPy)
and JAX (``jax.jit``: XLA's CPU FFT, ducc) each run in a process of their own (``--only``), so
neither's threads or allocator affect the other; NumPy (``numpy.fft``) and SciPy (``scipy.fft``)
eagerly in this process. Every result is checked against NumPy in float64. Prints the median wall
time per call (after warm-up) and the ratio to JAX. ``--quick`` uses length 2^12 and fewer
repetitions.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np


def conv(m, fft, x, k, n):
    spec = fft.rfft(x, n=2 * n) * fft.rfft(k, n=2 * n)
    return fft.irfft(spec, n=2 * n)[..., :n]


def inputs(batch, n):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, n)).astype(np.float32)
    k = (rng.standard_normal(n) * np.exp(-np.arange(n) / (n / 8))).astype(np.float32)
    g = rng.standard_normal((batch, n)).astype(np.float32)
    return x, k, g


def reference(x, k, g, n):
    """Float64 NumPy: the convolution and the gradients (correlations with g)."""
    x, k, g = (a.astype(np.float64) for a in (x, k, g))
    y = conv(np, np.fft, x, k, n)
    # d/dx sum(y g) = correlation of g with k; d/dk = correlation of g with x, summed over batch
    m = 2 * n
    gf = np.fft.rfft(g, n=m)
    dx = np.fft.irfft(gf * np.conj(np.fft.rfft(k, n=m)), n=m)[..., :n]
    dk = np.fft.irfft(gf * np.conj(np.fft.rfft(x, n=m)), n=m)[..., :n].sum(0)
    return y, dx, dk


def timed(f, reps):
    """Median (wall seconds, CPU seconds of the process) per call, after warm-up."""
    f()  # warm-up (compiles)
    f()
    ts = []
    for _ in range(reps):
        t, c = time.perf_counter(), time.process_time()
        f()
        ts.append((time.perf_counter() - t, time.process_time() - c))
    return [statistics.median(v) for v in zip(*ts)]


def fft_library() -> str:
    """The library behind functx's transforms here: ducc0 where it is installed, else SciPy's
    pocketfft (``functx/control/fft.py``'s ``_entry_points``)."""
    from functx.control import fft

    mod = fft._entry_points()
    return "scipy.fft or numpy.fft (no entry points)" if mod is None else mod.__name__


def run_one(lib, batch, n, reps):
    """Times (forward, gradient) for ``lib`` in this process, each (wall, CPU); checks against
    float64 NumPy first."""
    x, k, g = inputs(batch, n)
    y_ref, dx_ref, dk_ref = reference(x, k, g, n)
    if lib in ("functx", "jax"):
        if lib == "functx":
            import functx as jx
            import functx.numpy as jnp
        else:
            import jax as jx
            import jax.numpy as jnp

        fwd = jx.jit(lambda x, k: conv(jnp, jnp.fft, x, k, n))
        grad = jx.jit(jx.grad(lambda x, k, g: jnp.sum(conv(jnp, jnp.fft, x, k, n) * g), (0, 1)))

        def block(r):
            return [np.asarray(a) for a in (r if isinstance(r, tuple) else (r,))]

        f_fwd = lambda: block(fwd(x, k))  # noqa: E731
        f_grad = lambda: block(grad(x, k, g))  # noqa: E731
    else:
        import scipy.fft

        mod = np.fft if lib == "numpy" else scipy.fft
        m = 2 * n

        def f_fwd():
            return [conv(np, mod, x, k, n)]

        def f_grad():
            gf = mod.rfft(g, n=m)
            dx = mod.irfft(gf * np.conj(mod.rfft(k, n=m)), n=m)[..., :n]
            dk = mod.irfft(gf * np.conj(mod.rfft(x, n=m)), n=m)[..., :n].sum(0)
            return [dx, dk]

    y = f_fwd()[0]
    dx, dk = f_grad()
    for got, want in ((y, y_ref), (dx, dx_ref), (dk, dk_ref)):
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err < 1e-4, (lib, err)
    return timed(f_fwd, reps), timed(f_grad, reps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--only", choices=("functx", "jax", "numpy", "scipy"))
    ap.add_argument("--batch", type=int, nargs="*", default=[1, 8])
    args = ap.parse_args()
    n = 2**12 if args.quick else 2**16
    reps = args.reps or (5 if args.quick else 21)
    if args.only:
        print(json.dumps({b: run_one(args.only, b, n, reps) for b in args.batch}))
        return
    print(
        f"FFT convolution, length {n} (transforms of {2 * n}), float32; {platform.machine()}, "
        f"{os.cpu_count()} cores; median of {reps}; functx's FFT: {fft_library()}"
    )
    results = {}
    for lib in ("functx", "jax", "numpy", "scipy"):
        cmd = [sys.executable, __file__, "--only", lib, "--reps", str(reps), "--batch"]
        cmd += [str(b) for b in args.batch] + (["--quick"] if args.quick else [])
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        results[lib] = json.loads(out.strip().splitlines()[-1])
    for b in args.batch:
        (jf, _), (jg, _) = results["jax"][str(b)]
        print(f"batch {b}:")
        for lib in ("functx", "jax", "numpy", "scipy"):
            (f, _), (g, _) = results[lib][str(b)]
            print(
                f"  {lib:7s} forward {f * 1e3:8.3f} ms ({f / jf:5.2f}x JAX)   "
                f"gradient {g * 1e3:8.3f} ms ({g / jg:5.2f}x JAX)"
            )


if __name__ == "__main__":
    main()
