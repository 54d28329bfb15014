"""``scipy.fft``'s DCT under ``jit`` on the CPU: functx against JAX, each library in its own process
per round (rounds alternate the order), values checked against SciPy first; medians of wall and
CPU (``time.process_time``: all threads) milliseconds.

    PYTHONPATH=. python benchmarks/dct.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

CASES = {  # name: (shape, what)
    "dct ortho (256, 1024)": ((256, 1024), "dct"),
    "idct (256, 1024)": ((256, 1024), "idct"),
    "dctn (256, 256)": ((256, 256), "dctn"),
    "grad of sum(dctn^2) (256, 256)": ((256, 256), "grad"),
}


def _functions(lib):
    if lib == "functx":
        import functx as jx
        import functx.numpy as jnp
        import functx.scipy.fft as sfft
    else:
        import jax as jx
        import jax.numpy as jnp
        import jax.scipy.fft as sfft
    return jx, {
        "dct": lambda x: sfft.dct(x, norm="ortho"),
        "idct": sfft.idct,
        "dctn": sfft.dctn,
        "grad": jx.grad(lambda x: jnp.sum(sfft.dctn(x) ** 2)),
    }


def _reference(what, x):
    import scipy.fft

    x = x.astype(np.float64)
    if what == "dct":
        return scipy.fft.dct(x, norm="ortho")
    if what == "idct":
        return scipy.fft.idct(x)
    if what == "dctn":
        return scipy.fft.dctn(x)
    # d/dx sum((M x M^T)^2) = 2 M^T (M x M^T) M, M the DCT matrix of a square x
    m = scipy.fft.dct(np.eye(x.shape[0]), axis=0)
    return 2 * m.T @ (m @ x @ m.T) @ m


def worker(lib, reps):
    jx, fns = _functions(lib)
    out = {}
    rng = np.random.default_rng(0)
    for name, (shape, what) in CASES.items():
        x = rng.standard_normal(shape).astype(np.float32)
        f = jx.jit(fns[what])
        got = np.asarray(f(x))
        want = _reference(what, x)
        err = np.abs(got - want).max() / max(1.0, np.abs(want).max())
        assert err < 1e-4, (lib, name, err)
        for _ in range(3):
            jx.block_until_ready(f(x))
        walls, cpus = [], []
        for _ in range(reps):
            w, c = time.perf_counter(), time.process_time()
            jx.block_until_ready(f(x))
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
        out[name] = (1e3 * statistics.median(walls), 1e3 * statistics.median(cpus))
    print(json.dumps(out))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--worker", choices=["functx", "jax"])
    a = p.parse_args()
    if a.worker:
        return worker(a.worker, a.reps)
    res = {"functx": [], "jax": []}
    for r in range(a.rounds):
        for lib in ("functx", "jax") if r % 2 == 0 else ("jax", "functx"):
            cmd = [sys.executable, __file__, "--worker", lib, "--reps", str(a.reps)]
            line = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            res[lib].append(json.loads(line.strip().splitlines()[-1]))
    print("| case | functx ms (CPU) | JAX ms (CPU) | functx vs JAX: wall (CPU) |")
    print("|---|---|---|---|")
    for name in CASES:
        med = {
            lib: [statistics.median(r[name][i] for r in res[lib]) for i in (0, 1)] for lib in res
        }
        (fw, fc), (jw, jc) = med["functx"], med["jax"]
        ratio = f"{jw / fw:.2f}x ({jc / fc:.2f}x)"
        print(f"| {name} | {fw:.2f} ({fc:.2f}) | {jw:.2f} ({jc:.2f}) | {ratio} |")


if __name__ == "__main__":
    main()
