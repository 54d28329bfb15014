"""``scipy.signal``'s spectral functions under ``jit`` on the CPU: functx against JAX.

``python benchmarks/spectral.py --rounds 3``: each library in its own process per round (rotating
order), ``welch``, ``stft`` and ``istft`` of an (8, 8192) float32 signal with 256-point segments;
every functx result is checked against JAX's first. Prints median wall and CPU (process) times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import numpy as np

CASES = {
    "welch": lambda sig: lambda v: sig.welch(v, nperseg=256)[1],
    "stft": lambda sig: lambda v: sig.stft(v, nperseg=256)[2],
    "istft": lambda sig: lambda z: sig.istft(z, nperseg=256)[1],
}


def _inputs():
    x = np.random.default_rng(0).standard_normal((8, 8192)).astype(np.float32)
    import scipy.signal

    z = scipy.signal.stft(x, nperseg=256)[2].astype(np.complex64)
    return {"welch": x, "stft": x, "istft": z}


def _one(lib, reps):
    if lib == "functx":
        import functx as fx
        import functx.scipy.signal as sig
    else:
        import jax as fx
        import jax.scipy.signal as sig
    args, out = _inputs(), {}
    for name, make in CASES.items():
        f = fx.jit(make(sig))
        result = np.asarray(f(args[name]))
        if lib == "functx":
            import jax
            import jax.scipy.signal as jsig

            want = np.asarray(jax.jit(make(jsig))(args[name]))
            np.testing.assert_allclose(result, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
        walls, cpus = [], []
        for _ in range(reps):
            t0, c0 = time.perf_counter(), time.process_time()
            np.asarray(f(args[name]))
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        out[name] = (statistics.median(walls) * 1e3, statistics.median(cpus) * 1e3)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=41)
    ap.add_argument("--child", default=None)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(_one(a.child, a.reps)))
        return
    libs, runs = ["functx", "jax"], {"functx": [], "jax": []}
    for r in range(a.rounds):
        for lib in libs[r % 2 :] + libs[: r % 2]:
            cmd = [sys.executable, __file__, "--child", lib, "--reps", str(a.reps)]
            line = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            runs[lib].append(json.loads(line.strip().splitlines()[-1]))
    print(
        "| function | functx wall ms | functx CPU ms | JAX wall ms | JAX CPU ms | JAX/functx CPU |"
    )
    print("|---|---|---|---|---|---|")
    for name in CASES:
        med = {
            lib: [statistics.median(r[name][i] for r in runs[lib]) for i in (0, 1)] for lib in libs
        }
        (fw, fc), (jw, jc) = med["functx"], med["jax"]
        print(f"| {name} | {fw:.2f} | {fc:.2f} | {jw:.2f} | {jc:.2f} | {jc / fc:.2f}x |")


if __name__ == "__main__":
    main()
