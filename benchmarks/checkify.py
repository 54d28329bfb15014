"""``checkify`` under ``jit`` on the CPU: what the checks cost, functx against JAX. Each library
runs in its own process per round (rounds alternate the order); every program's value and
error message are checked first (against NumPy float64, and a planted failure must be
reported); medians of wall and CPU (``time.process_time``: all threads) milliseconds.

    PYTHONPATH=. python benchmarks/checkify.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

N = 1_000_000
CASES = (  # name: what
    ("chain (10^6), no checkify", "plain"),
    ("chain (10^6), float_checks", "float"),
    ("chain (10^6), user check + float_checks", "user"),
    ("scan of 1000 steps with a user check", "scan"),
)


def _programs(lib):
    if lib == "functx":
        import functx as jx
        import functx.numpy as jnp
        from functx.experimental import checkify as ck
    else:
        import jax as jx
        import jax.numpy as jnp
        from jax.experimental import checkify as ck

    def chain(x):
        return jnp.sum(jnp.log(x) * jnp.sin(x) + jnp.sqrt(x))

    def user(x):
        ck.check(jnp.min(x) > 0, "x has a non-positive element: min {}", jnp.min(x))
        return chain(x)

    def scan(x):
        def step(c, y):
            ck.check(y > 0, "step {} has y={}", c, y)
            return c + 1, jnp.sqrt(y) * 2

        return jx.lax.scan(step, 0, x)[1].sum()

    def checked(f, errors):
        g = jx.jit(ck.checkify(f, errors=errors))
        return lambda x: g(x)

    return (
        jx,
        jnp,
        {
            "plain": lambda: jx.jit(chain),
            "float": lambda: checked(chain, ck.float_checks),
            "user": lambda: checked(user, ck.float_checks | ck.user_checks),
            "scan": lambda: checked(scan, ck.user_checks),
        },
    )


def _inputs(what, rng):
    n = 1000 if what == "scan" else N
    return rng.uniform(0.5, 2.0, n).astype(np.float32)


def _reference(what, x):
    x = x.astype(np.float64)
    if what == "scan":
        return np.sum(np.sqrt(x) * 2)
    return np.sum(np.log(x) * np.sin(x) + np.sqrt(x))


def worker(lib, reps):
    jx, jnp, progs = _programs(lib)
    out = {}
    rng = np.random.default_rng(0)
    for name, what in CASES:
        f = progs[what]()
        x = _inputs(what, rng)
        res = f(jnp.asarray(x))
        err, val = (None, res) if what == "plain" else res
        want = _reference(what, x)
        assert abs(float(val) - want) <= 1e-4 * abs(want), (lib, name, float(val), want)
        if err is not None:
            assert err.get() is None, (lib, name, err.get())
            bad = x.copy()
            bad[len(bad) // 2] = -1.0
            msg = f(jnp.asarray(bad))[0].get()
            assert msg is not None and ("nan" in msg or "non-positive" in msg or "y=-1.0" in msg)
        xs = jnp.asarray(x)
        for _ in range(3):
            jx.block_until_ready(f(xs))
        walls, cpus = [], []
        for _ in range(reps):
            w, c = time.perf_counter(), time.process_time()
            jx.block_until_ready(f(xs))
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
    for name, _ in CASES:
        med = {
            lib: [statistics.median(r[name][i] for r in res[lib]) for i in (0, 1)] for lib in res
        }
        (fw, fc), (jw, jc) = med["functx"], med["jax"]
        ratio = f"{jw / fw:.2f}x ({jc / fc:.2f}x)"
        print(f"| {name} | {fw:.2f} ({fc:.2f}) | {jw:.2f} ({jc:.2f}) | {ratio} |")


if __name__ == "__main__":
    main()
