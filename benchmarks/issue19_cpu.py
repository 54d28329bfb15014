"""Issue 19's CPU benchmark list in one table: functx (``jit``, C++) against JAX (``jax.jit``),
each library alone in a process of its own per round, float32:

* ``cs``: cholesky + solve (``cho_solve(cho_factor(a), b)``, 8 right-hand sides) and ``eigh``
  of a 512x512 matrix and of a batch of 64 64x64 matrices (``linalg.py``'s cases);
* ``conv3x3``: a 3x3 'SAME' convolution of 8 64x64x64 NHWC images and its gradient, and
  ``conv1d``: Mamba's depthwise causal conv1d of (8, 4096, 1024), width 4, and its gradient
  (``conv.py``'s cases and checks);
* ``fft_conv``: the rfft convolution of length 2^16 (one signal) and its gradient, and the
  gradient of a batch of 8 (``fft_conv.py``'s cases and checks);
* ``sort``/``top_k`` (k = 16) of the rows of a 4096x4096 matrix (``sort_topk.py``'s cases).

Every result is checked first (against NumPy in float64, or exactly for the sorts); then each
case's time per call is the median of ``--reps`` calls after a warm-up (wall and the process's
CPU time, all threads), and the figure is the median over ``--rounds`` rounds, the libraries'
order alternating between rounds. ``--quick`` shrinks every case (a smoke test).

    python benchmarks/issue19_cpu.py [--rounds 3] [--reps 5] [--only-cases cs,sort] [--quick]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import time

import conv as conv_bench  # benchmarks/conv.py
import fft_conv as fft_bench  # benchmarks/fft_conv.py
import linalg as linalg_bench  # benchmarks/linalg.py
import numpy as np

LIBS = ("functx", "jax")


def cases() -> list[str]:
    names = [f"{op} {s}" for op in ("cs", "eigh") for s in ("512x512", "64x64x64")]
    names += [f"{c} {p}" for c in ("conv3x3", "conv1d") for p in ("forward", "gradient")]
    names += ["fft_conv forward B=1", "fft_conv gradient B=1", "fft_conv gradient B=8"]
    return names + ["sort", "top_k"]


def _time(f, reps):
    f()  # warm-up (and the first call's compile)
    out = []
    for _ in range(reps):
        t, c = time.perf_counter(), time.process_time()
        f()
        out.append((time.perf_counter() - t, time.process_time() - c))
    return [statistics.median(v) for v in zip(*out)]


def _linalg(lib, name, quick, reps):
    op, shape = name.split()
    n = 64 if quick else 512
    shape = (n, n) if shape == "512x512" else (8 if quick else 64, 64, 64)
    rng = np.random.default_rng(0)
    a = linalg_bench.spd(shape, np.float32, rng)
    b = rng.standard_normal((*shape[:-1], 8)).astype(np.float32)
    if lib == "functx":
        import functx as jx
    else:
        import jax as jx
    f = jx.jit(linalg_bench.CASES[op][LIBS.index(lib)])
    got = [np.asarray(v, np.float64) for v in jx.tree_util.tree_leaves(f(a, b))]
    a64 = a.astype(np.float64)
    if op == "cs":
        err = np.abs(a64 @ got[0] - b).max() / np.abs(b).max()  # the residual
    else:
        w, v = got
        want = np.linalg.eigvalsh(a64)
        err = max(
            np.abs(w - want).max() / np.abs(want).max(),
            np.abs(a64 @ v - v * w[..., None, :]).max() / np.abs(want).max(),
        )
    assert err < 1e-3, (lib, name, err)
    return _time(lambda: jx.block_until_ready(f(a, b)), reps)


def _conv(lib, name, quick, reps):
    case, part = name.split()
    fwd, grad = _conv_run(lib, case, quick, reps)
    return [statistics.median(v) for v in zip(*(fwd if part == "forward" else grad))]


@functools.lru_cache(maxsize=None)  # (one run gives the forward and the gradient)
def _conv_run(lib, case, quick, reps):
    return conv_bench.run_one(lib, case, 2 if quick else 8, quick, reps)  # (checks first)


def _fft(lib, name, quick, reps):
    _, part, batch = name.split()
    fwd, grad = _fft_run(lib, int(batch[2:]), quick, reps)
    return fwd if part == "forward" else grad


@functools.lru_cache(maxsize=None)
def _fft_run(lib, batch, quick, reps):
    return fft_bench.run_one(lib, batch, 2**12 if quick else 2**16, reps)  # (checks first)


def _sort(lib, name, quick, reps):
    rows = 256 if quick else 4096
    x = np.random.default_rng(0).standard_normal((rows, rows)).astype(np.float32)
    if lib == "functx":
        import functx as jx
    else:
        import jax as jx
    if name == "sort":
        f = jx.jit(lambda v: jx.lax.sort(v))
        assert np.array_equal(np.asarray(f(x)), np.sort(x, axis=-1)), lib
    else:
        f = jx.jit(lambda v: jx.lax.top_k(v, 16))
        vals = np.asarray(f(x)[0])
        assert np.array_equal(vals, -np.sort(-x, axis=-1)[:, :16]), lib
    return _time(lambda: jx.block_until_ready(f(x)), reps)


def _runner(name):
    head = name.split()[0]
    return {"cs": _linalg, "eigh": _linalg, "conv3x3": _conv, "conv1d": _conv}.get(
        head, _fft if head == "fft_conv" else _sort
    )


def worker(lib, names, quick, reps):
    res = {}
    for name in names:
        res[name] = _runner(name)(lib, name, quick, reps)
    print(json.dumps(res))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only-cases", default="", help="comma-separated prefixes of case names")
    ap.add_argument("--worker", choices=LIBS)
    args = ap.parse_args()
    names = cases()
    if args.only_cases:
        names = [c for c in names if any(c.startswith(p) for p in args.only_cases.split(","))]
    if args.worker:
        return worker(args.worker, names, args.quick, args.reps)
    runs = {lib: [] for lib in LIBS}
    loads = []
    for r in range(args.rounds):
        for lib in LIBS if r % 2 == 0 else LIBS[::-1]:
            cmd = [sys.executable, __file__, "--worker", lib, "--reps", str(args.reps)]
            cmd += ["--only-cases", args.only_cases] if args.only_cases else []
            cmd += ["--quick"] if args.quick else []
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            runs[lib].append(json.loads(out.strip().splitlines()[-1]))
            loads.append(os.getloadavg()[0])
    print(f"load average during the run: {min(loads):.1f}-{max(loads):.1f}")
    if any(c.startswith("fft_conv") for c in names):
        print(f"functx's FFT library: {fft_bench.fft_library()}")
    print("| case | functx ms (CPU) | JAX ms (CPU) | functx vs JAX |")
    print("|---|---|---|---|")
    for name in names:
        med = {
            lib: [statistics.median(run[name][i] for run in runs[lib]) for i in (0, 1)]
            for lib in LIBS
        }
        (fw, fc), (jw, jc) = med["functx"], med["jax"]
        cells = f"{1e3 * fw:.2f} ({1e3 * fc:.2f}) | {1e3 * jw:.2f} ({1e3 * jc:.2f})"
        print(f"| {name} | {cells} | {jw / fw:.2f}x |")


if __name__ == "__main__":
    main()
