"""Taylor-mode ``jet`` of an MLP under jit: functx's series rules, functx's composite rule (nested
jvp for every primitive) and JAX's ``jax.experimental.jet``, at orders K.

    python benchmarks/jet_taylor.py                  # driver: each library in its own process
                                                     # (functx's with an empty compile cache),
                                                     # rounds in rotating order, medians
    python benchmarks/jet_taylor.py functx 4         # one process: prints first call s, ms, cpu ms
    python benchmarks/jet_taylor.py jax-eager 4      # (functx-eager, jax-eager: without jit)

Each process prints its first call's time, the median step time and the series it computed; the
driver puts each library's series beside JAX's (the last column: their largest relative
difference)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

N, REPS = 256, 30


def _data(order):
    rng = np.random.default_rng(0)
    w1 = (rng.normal(size=(N, N)) / np.sqrt(N)).astype(np.float32)
    w2 = (rng.normal(size=(N, N)) / np.sqrt(N)).astype(np.float32)
    x = rng.normal(size=N).astype(np.float32)
    series = [rng.normal(size=N).astype(np.float32) for _ in range(order)]
    return w1, w2, x, series


def run(lib, order):
    w1, w2, x, series = _data(order)
    eager = lib.endswith("-eager")
    lib = lib.removesuffix("-eager")
    if lib == "jax":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        import jax
        import jax.numpy as jnp
        from jax.experimental.jet import jet

        jit, composite = jax.jit, False
    else:
        import functx
        import functx.numpy as jnp
        from functx.experimental.jet import _jet as jet

        jit, composite = functx.jit, lib == "functx-composite"

    def f(v):
        return jnp.sum(jnp.tanh(w2 @ jnp.tanh(w1 @ v + 0.5)) * jnp.exp(-v))

    kw = {"composite_only": True} if composite else {}
    step = lambda x, *s: jet(f, (x,), (list(s),), **kw)  # noqa: E731
    step = step if eager else jit(step)
    t = time.perf_counter()
    out = step(x, *series)
    np.asarray(out[1][-1])
    first = time.perf_counter() - t
    walls, cpus = [], []
    for _ in range(REPS):
        t, c = time.perf_counter(), time.process_time()
        np.asarray(step(x, *series)[1][-1])
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    check = [float(out[0])] + [float(t) for t in out[1]]
    print(
        f"{first:.3f} {1e3 * statistics.median(walls):.3f} {1e3 * statistics.median(cpus):.3f} "
        + " ".join(f"{c:.6e}" for c in check)
    )


def drive(orders=(2, 4, 6), rounds=3):
    libs = ["functx", "functx-composite", "jax"]
    res = {}
    for r in range(rounds):
        for order in orders:
            for lib in libs[r % 3 :] + libs[: r % 3]:
                cmd = [sys.executable, __file__, lib, str(order)]
                with tempfile.TemporaryDirectory() as cache:  # (first calls with an empty cache)
                    env = dict(os.environ, FUNCTX_CACHE_DIR=cache)
                    line = subprocess.run(
                        cmd, capture_output=True, text=True, check=True, env=env
                    ).stdout
                res.setdefault((lib, order), []).append([float(v) for v in line.split()])
    print(
        "| K | library | first call s | ms (wall) | ms (CPU) | vs JAX (wall) | rel. diff vs JAX |"
    )
    print("|---|---|---|---|---|---|---|")
    for order in orders:
        ref = res[("jax", order)]
        jax_ms = statistics.median(v[1] for v in ref)
        for lib in libs:
            if (lib, order) not in res:
                continue
            runs = res[(lib, order)]
            med = [statistics.median(v[i] for v in runs) for i in range(3)]
            got, want = np.array(runs[0][3:]), np.array(ref[0][3:])
            diff = np.max(np.abs(got - want) / np.maximum(np.abs(want), 1e-3))
            print(
                f"| {order} | {lib} | {med[0]:.2f} | {med[1]:.3f} | {med[2]:.3f} | "
                f"{jax_ms / med[1]:.2f}x | {diff:.1e} |"
            )


if __name__ == "__main__":
    if len(sys.argv) == 3:
        run(sys.argv[1], int(sys.argv[2]))
    else:
        drive()
