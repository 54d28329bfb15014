"""The iterative solvers of ``functx.scipy.optimize`` and ``functx.experimental.ode`` under ``jit``
against JAX's, on the CPU, float64: BFGS and L-BFGS on an L2-regularized logistic regression,
``odeint`` on a damped pendulum chain, and the adjoint gradient of an ``odeint`` loss.

Each library runs in its own process per round (rounds rotate the order); the driver checks
functx's results against JAX's first (solutions, iteration counts), then prints the medians of
wall and CPU time (``time.process_time``, all threads) per call, and JAX time / functx time.

    python benchmarks/scipy_solvers.py [--rounds 3] [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N, D, CHAIN = 2000, 20, 8
TS = np.linspace(0.0, 10.0, 21)


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, D))
    y = (x @ rng.standard_normal(D) + 0.5 * rng.standard_normal(N) > 0).astype(np.float64)
    return x, y


def _workloads(lib):
    """name -> (jitted function, arguments, summary of its output) for one library."""
    if lib == "jax":
        import jax
        import jax.numpy as jnp
        from jax.experimental.ode import odeint
        from jax.scipy.optimize import minimize

        jax.config.update("jax_enable_x64", True)
        block = jax.block_until_ready
    else:
        sys.path.insert(0, ROOT)
        import functx as jax
        import functx.numpy as jnp
        from functx.experimental.ode import odeint
        from functx.scipy.optimize import minimize

        jax.config.update("jax_enable_x64", True)
        block = jax.block_until_ready

    x, y = _data()

    def nll(w, x, y):
        z = x @ w
        return jnp.mean(jnp.logaddexp(0.0, z) - y * z) + 1e-3 * w @ w

    def fit(method):
        return jax.jit(lambda x, y: minimize(nll, jnp.zeros(D), (x, y), method=method))

    def chain(s, t, k):  # CHAIN damped pendulums, each pulled by its neighbours
        q, p = s[:CHAIN], s[CHAIN:]
        pull = jnp.concatenate([q[1:] - q[:-1], jnp.zeros(1)]) - jnp.concatenate(
            [jnp.zeros(1), q[1:] - q[:-1]]
        )
        return jnp.concatenate([p, -k * jnp.sin(q) + 0.5 * pull - 0.1 * p])

    s0 = np.concatenate([np.linspace(0.1, 1.0, CHAIN), np.zeros(CHAIN)])
    solve = jax.jit(lambda s0, k: odeint(chain, s0, jnp.asarray(TS), k, rtol=1e-8, atol=1e-8))
    grad = jax.jit(
        jax.grad(lambda s0, k: jnp.sum(odeint(chain, s0, jnp.asarray(TS), k)[-1] ** 2), (0, 1))
    )
    return {
        "BFGS logistic regression": (
            fit("BFGS"),
            (x, y),
            lambda r: {"x": np.asarray(r.x).tolist(), "nit": int(r.nit)},
        ),
        "L-BFGS logistic regression": (
            fit("l-bfgs-experimental-do-not-rely-on-this"),
            (x, y),
            lambda r: {"x": np.asarray(r.x).tolist(), "nit": int(r.nit)},
        ),
        "odeint pendulum chain": (solve, (s0, 2.0), lambda r: {"y": np.asarray(r[-1]).tolist()}),
        "odeint adjoint gradient": (
            grad,
            (s0, 2.0),
            lambda r: {"y": np.concatenate([np.asarray(r[0]), [float(r[1])]]).tolist()},
        ),
    }, block


def _child(lib, reps):
    out = {}
    workloads, block = _workloads(lib)
    for name, (fn, args, summary) in workloads.items():
        t = time.perf_counter()
        result = block(fn(*args))
        first = time.perf_counter() - t
        walls, cpus = [], []
        for _ in range(reps):
            t, c = time.perf_counter(), time.process_time()
            block(fn(*args))
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
        out[name] = {
            "first": first,
            "wall": statistics.median(walls),
            "cpu": statistics.median(cpus),
            "summary": summary(result),
        }
    print(json.dumps(out))


def _check(name, got, want):
    for key, w in want.items():
        g = got[key]
        if key == "nit":
            assert g == w, f"{name}: functx took {g} iterations, JAX {w}"
        else:
            np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8, err_msg=name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--child")
    a = ap.parse_args()
    if a.child:
        return _child(a.child, a.reps)
    libs, runs = ["functx", "jax"], {"functx": [], "jax": []}
    for r in range(a.rounds):
        for lib in libs[r % 2 :] + libs[: r % 2]:
            cmd = [sys.executable, __file__, "--child", lib, "--reps", str(a.reps)]
            proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
            runs[lib].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    print("| workload | functx ms (CPU ms) | JAX ms (CPU ms) | functx vs JAX | first call s |")
    print("|---|---|---|---|---|")
    for name in runs["jax"][0]:
        _check(name, runs["functx"][0][name]["summary"], runs["jax"][0][name]["summary"])
        med = {
            lib: {
                k: statistics.median(run[name][k] for run in runs[lib])
                for k in ("wall", "cpu", "first")
            }
            for lib in libs
        }
        f, j = med["functx"], med["jax"]
        print(
            f"| {name} | {1e3 * f['wall']:.2f} ({1e3 * f['cpu']:.2f}) | "
            f"{1e3 * j['wall']:.2f} ({1e3 * j['cpu']:.2f}) | {j['wall'] / f['wall']:.2f}x | "
            f"{f['first']:.1f} / {j['first']:.1f} |"
        )


if __name__ == "__main__":
    main()
