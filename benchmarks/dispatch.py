"""Per-call dispatch time of a jitted function, functx against JAX (issue 20, item 3).

Run: ``python benchmarks/dispatch.py [--rounds 5]``. Each library runs alone in its own process
(two libraries' thread pools in one process distort each other), the processes alternate, and
each case reports the median over rounds of the best-of-5 microseconds per call, in wall time
and in CPU time (``time.process_time``: all the process's threads; on a loaded machine the wall
time mostly measures the other processes). The function
is ``x + 1.0`` (one small kernel) on each kind of argument users pass, one update of a dict
of 10 parameters with a batch (a pytree), and the kernel least squares momentum step of
``workloads.py`` (family ``kls``, 100x100) in a loop that feeds its outputs back
(``value, state = step(state, K, y)``, K and y NumPy arrays). Correctness first: each case's
result is compared with NumPy's in the child process (the step's first value with NumPy's
float64 loss).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time, timeit
import numpy as np
lib = sys.argv[1]
if lib == "jax":
    import jax, jax.numpy as jnp
else:
    import functx as jax, functx.numpy as jnp
f = jax.jit(lambda x: x + 1.0)
upd = jax.jit(lambda p, b: {k: w * 0.9 + b.sum() for k, w in p.items()})
one = np.ones(1000, np.float32)
cases = {
    "NumPy float32 scalar": np.float32(2.0),
    "NumPy array (1000,)": one,
    "Python float": 2.0,
    "Array (1000,), committed": jax.device_put(jnp.asarray(one)),
    "Array (1000,), jnp.ones": jnp.ones(1000, jnp.float32),
    "Array 0-d": jnp.asarray(np.float32(2.0)),
}
params = {f"w{i}": jnp.ones((64,), jnp.float32) * i for i in range(10)}
batch = np.arange(32, dtype=np.float32)
out = {}
def us(call, n):  # best of 5, wall and CPU microseconds per call
    return [min(timeit.repeat(call, number=n, repeat=5, timer=t)) / n * 1e6
            for t in (time.perf_counter, time.process_time)]
for name, x in cases.items():
    r = np.asarray(jax.block_until_ready(f(x)))
    np.testing.assert_allclose(r, np.asarray(x, np.float32) + 1.0)
    out[name] = us(lambda: f(x), 2000)
r = upd(params, batch)
np.testing.assert_allclose(np.asarray(r["w3"]), 3 * 0.9 + batch.sum(), rtol=1e-6)
out["dict of 10 parameters + NumPy batch"] = us(lambda: upd(params, batch), 1000)

sys.path.insert(0, "benchmarks")
import workloads  # (the kernel least squares step of benchmarks/workloads.py)

rng = np.random.default_rng(0)
pts = rng.uniform(-1, 1, (100, 2))
K = np.exp(-((pts[:, None] - pts[None]) ** 2).sum(-1) / 0.5).astype(np.float32)
y = np.sin(3 * pts[:, 0]).astype(np.float32)
a0 = (0.1 * rng.standard_normal(100)).astype(np.float32)
step = jax.jit(workloads.program(jax, "kls", dict(n=100)))
value, state = step((a0, np.zeros(100, np.float32)), K, y)
r64 = K.astype(np.float64) @ a0 - y
want = 0.5 * r64 @ r64 + 0.5e-3 * a0 @ (K.astype(np.float64) @ a0)
np.testing.assert_allclose(float(value), want, rtol=1e-4)

def loop():
    global state
    value, state = step(state, K, y)

out["kernel least squares step, outputs fed back"] = us(loop, 1000)
print(json.dumps(out))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--baseline", help="another functx checkout to time too (e.g. an older commit)")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    roots = {"functx": root, "jax": root}
    if args.baseline:
        roots["baseline"] = os.path.abspath(args.baseline)
    times: dict = {lib: [] for lib in roots}
    for _ in range(args.rounds):
        for lib, where in roots.items():
            env = dict(os.environ, PYTHONPATH=where + os.pathsep + os.environ.get("PYTHONPATH", ""))
            res = subprocess.run(
                [sys.executable, "-c", CHILD, "jax" if lib == "jax" else "functx"],
                env=env,
                cwd=where,  # (``python -c`` puts the working directory first on sys.path)
                capture_output=True,
                text=True,
            )
            if res.returncode:
                sys.exit(f"{lib} failed:\n{res.stderr}")
            times[lib].append(json.loads(res.stdout.strip().splitlines()[-1]))
    print(
        f"load average: {os.getloadavg()[0]:.1f}; us per call (wall / CPU), median of "
        f"{args.rounds} rounds"
    )
    base = " | baseline us | baseline / functx" if args.baseline else ""
    print(f"| argument | functx us | JAX us | JAX / functx{base} |")
    print("|---|---|---|---|" + ("---|---|" if args.baseline else ""))
    for case in times["functx"][0]:
        med = {
            lib: [statistics.median(r[case][j] for r in rs) for j in (0, 1)]
            for lib, rs in times.items()
        }

        def cell(lib):
            return f"{med[lib][0]:.1f} / {med[lib][1]:.1f}"

        def ratio(lib):
            return " / ".join(f"{med[lib][j] / med['functx'][j]:.2f}x" for j in (0, 1))

        row = f"| {case} | {cell('functx')} | {cell('jax')} | {ratio('jax')}"
        if args.baseline:
            row += f" | {cell('baseline')} | {ratio('baseline')}"
        print(row + " |")


if __name__ == "__main__":
    main()
