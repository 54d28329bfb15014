"""Device loops on the GPU (``functx/lowering/triton/devloop.py``): functx with device loops on
and off (``FUNCTX_DEVICE_LOOPS=0``) against JAX, correctness first.

Workloads: ``hmm_em`` (``workloads.py``'s, GPU size: 20 EM steps of a 25-state HMM on 3,000
symbols, each step a 2,999-step forward scan and its transposed gradient scan) and ``rnn``
(the value and gradient of ``sum(h_T) + sum_t |h_t|^2`` for ``h_t = tanh(W h_{t-1} + x_t)``,
H=50, T=1000: a forward scan with a matrix-vector product and its reverse gradient scan).

Each variant runs in a process of its own (JAX with ``XLA_PYTHON_CLIENT_PREALLOCATE=false``):
JAX, functx with device loops (the default warps, then each of ``--warps`` for ``hmm_em``) and
functx with host loops. Each process saves its first call's results; the parent compares them
with JAX's (relative error in the 2-norm, worst output) before printing the times: the median of
5 loops of ``n`` calls (CUDA events around functx's calls, the wall clock and
``block_until_ready`` around JAX's: ``workloads._time``).

    python benchmarks/gpu_devloop.py [--budget 1.0] [--warps 1,4] [--quick]

On an H100 (session 35, commit aa5437d, whose default was 1 warp): HMM EM 135 ms with device
loops at 1 warp, 101 ms at 2 (now the default), 105 ms at 4, JAX 917 ms (9.1x at 2 warps); the
RNN 2.38 ms, 12.41 ms with host loops, JAX 32.5 ms. The host-loop HMM EM process had not finished
its calls 124 s after it started (RESULTS.md's last figure for it: 849 ms a call).

``--quick``: small sizes, for Triton's CPU interpreter (``TRITON_INTERPRET=1``) and JAX on the
CPU; a check of this script, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sizes(quick: bool) -> dict:
    return {
        "hmm_em": dict(T=20, S=25, M=10, steps=2) if quick else dict(T=3000, S=25, M=10, steps=20),
        "rnn": dict(H=7, T=10) if quick else dict(H=50, T=1000),
    }


def rnn_program(jx):
    jnp = jx.numpy

    def loss(W, xs, h0):
        def step(h, x):
            h = jnp.tanh(W @ h + x)
            return h, jnp.sum(h * h)

        h, ys = jx.lax.scan(step, h0, xs)
        return jnp.sum(h) + jnp.sum(ys)

    return jx.value_and_grad(loss, argnums=(0, 1, 2))


def program_and_inputs(jx, name: str, c: dict):
    if name == "hmm_em":
        return workloads.program(jx, "hmm", c), workloads.inputs("hmm", c)
    rng = np.random.default_rng(0)
    H, T = c["H"], c["T"]
    W = (0.9 * rng.standard_normal((H, H)) / math.sqrt(H)).astype(np.float32)
    xs = rng.standard_normal((T, H)).astype(np.float32)
    return rnn_program(jx), (W, xs, rng.standard_normal(H).astype(np.float32))


def worker(lib: str, names: list[str], quick: bool, save: str, budget: float) -> None:
    """Run ``names`` with ``lib``; each result goes to ``save/<lib>.jsonl`` as it comes."""
    import torch

    gpu = torch.cuda.is_available()
    if lib == "jax":
        import jax as jx
    else:
        import functx as jx
    for name in names:
        c = sizes(quick)[name]
        fn, args = program_and_inputs(jx, name, c)
        fn = jx.jit(fn, backend="triton") if lib != "jax" else jx.jit(fn)
        if lib == "jax":
            dargs = jx.device_put(args)
        else:
            dargs = jx.device_put(args, jx.devices("gpu")[0])
        rec = {"name": name}
        if lib != "jax":
            src = fn.lower(*dargs).as_text()
            rec["device_loops"] = len(re.findall(r"def \w+_devloop\(", src))
            rec["host_loops"] = len(re.findall(r"\(a host loop: ", src))
        t0 = time.perf_counter()
        out = fn(*dargs)
        jx.block_until_ready(out)
        rec["first_s"] = time.perf_counter() - t0
        leaves = [np.asarray(x, np.float64) for x in jx.tree_util.tree_leaves(out)]
        np.savez(os.path.join(save, f"{lib}_{name}.npz"), *leaves)

        def call():
            return fn(*dargs)

        rec["times"] = workloads._time(call, jx.block_until_ready, budget, gpu, torch, lib)
        with open(os.path.join(save, f"{lib}.jsonl"), "a") as f:
            f.write(json.dumps(rec) + "\n")
        print(f"{lib} {name}: {statistics.median(rec['times']) * 1e3:.2f} ms", flush=True)


def check(save: str, lib: str, name: str) -> float:
    try:
        got = np.load(os.path.join(save, f"{lib}_{name}.npz"))
        want = np.load(os.path.join(save, f"jax_{name}.npz"))
    except OSError:
        return float("nan")
    return max(workloads.rel_err(got[k], want[k]) for k in want.files)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--budget", type=float, default=1.0)
    ap.add_argument("--warps", default="1,4", help="other warps to time hmm_em's device loops at")
    ap.add_argument("--only", default="hmm_em,rnn")
    ap.add_argument("--deadline", type=float, default=230.0, help="seconds for all variants")
    ap.add_argument("--out", default=os.environ.get("OUT"), help="folder for the full logs")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--save", help=argparse.SUPPRESS)
    args = ap.parse_args()
    names = args.only.split(",")
    if args.worker:
        worker(args.worker, names, args.quick, args.save, args.budget)
        return
    save = tempfile.mkdtemp(prefix="fx_devloop_")
    logs = args.out or save
    base = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    base["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, base.get("PYTHONPATH")) if p)
    base.setdefault("FUNCTX_CACHE_DIR", os.path.join(save, "cache"))
    # (tag, shown, environment, workloads); host loops last: a 3,000-step host loop launches its
    # body's kernels 3,000 times (and a CUDA graph of a program captures every launch)
    variants = [("jax", "jax", {}, names), ("functx", "functx", {}, names)]
    variants += [
        (f"functx_w{w}", f"functx {w} warps", {"FUNCTX_DEVLOOP_WARPS": w}, ["hmm_em"])
        for w in args.warps.split(",")
        if w and "hmm_em" in names
    ]
    variants.append(("functx_off", "functx host loops", {"FUNCTX_DEVICE_LOOPS": "0"}, names[::-1]))
    t_start = time.perf_counter()
    for tag, shown, env, todo in variants:
        left = args.deadline - (time.perf_counter() - t_start)
        if left < 10:
            print(f"  {shown}: not run (--deadline)")
            continue
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", tag, "--save", save]
        cmd += ["--only", ",".join(todo), "--budget", str(args.budget)]
        cmd += ["--quick"] if args.quick else []
        t0 = time.perf_counter()
        with open(os.path.join(logs, f"devloop_{tag}.log"), "w") as log:
            try:
                rc = subprocess.run(
                    cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(base, **env), timeout=left
                ).returncode
            except subprocess.TimeoutExpired:
                rc = "stopped at the deadline"
        print(f"  {shown}: {time.perf_counter() - t0:.0f} s, exit {rc}", flush=True)
        if rc:
            with open(os.path.join(logs, f"devloop_{tag}.log")) as log:
                print("    " + log.read()[-800:].replace("\n", "\n    "))
    results = {}
    for tag, shown, _, _ in variants:
        try:
            with open(os.path.join(save, f"{tag}.jsonl")) as f:
                for line in f:
                    rec = json.loads(line)
                    results[(rec["name"], shown)] = (tag, rec)
        except OSError:
            pass
    print(f"(all variants: {time.perf_counter() - t_start:.0f} s; logs in {logs})")
    print("correctness against JAX (relative error in the 2-norm, worst output):")
    for (name, shown), (tag, rec) in sorted(results.items()):
        if tag != "jax":
            err = check(save, tag, name)
            verdict = "ok" if err <= 2e-3 else "WRONG"
            loops = f"{rec['device_loops']} device loops, {rec['host_loops']} host loops"
            print(f"  {name:7s} {shown:18s} {err:.1e} {verdict} ({loops})")
    print(f"{'workload':8s} {'variant':18s} {'ms/call':>9s} {'us/step':>8s} {'first s':>8s} vs JAX")
    for (name, shown), (_, rec) in sorted(results.items()):
        t = statistics.median(rec["times"])
        c = sizes(args.quick)[name]
        steps = c["steps"] * 2 * (c["T"] - 1) if name == "hmm_em" else 2 * c["T"]
        jax_rec = results.get((name, "jax"))
        ratio = statistics.median(jax_rec[1]["times"]) / t if jax_rec else float("nan")
        print(
            f"{name:8s} {shown:18s} {t * 1e3:9.2f} {t / steps * 1e6:8.2f} "
            f"{rec['first_s']:8.1f} {ratio:5.2f}x"
        )


if __name__ == "__main__":
    main()
