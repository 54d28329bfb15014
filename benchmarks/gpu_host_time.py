"""Where a small GPU training step's per-call host time goes: functx against JAX.

Run from the repository root on a CUDA machine::

    python benchmarks/gpu_host_time.py [--workloads dpsgd,mlp_sgd] [--calls 300] [--rows 30]

For each workload of ``benchmarks/workloads.py`` (GPU sizes) it checks functx's step against
JAX's (largest relative 2-norm difference of the loss and new parameters), then prints per call:
the wall time of back-to-back calls ended by one synchronisation (what a training loop sees),
the host time of the calls alone (the loop without the final synchronisation, after a drained
queue: what the Python side costs), and for functx a cProfile table of those calls.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import workloads as wl  # noqa: E402


def _step(jx, family, c):
    args = wl.inputs(family, c)
    dev = jx.devices("gpu")[0]
    dargs = jx.tree_util.tree_map(lambda a: jx.device_put(a, dev), args)
    fn = jx.jit(wl.program(jx, family, c))
    return fn, dargs


def _times(fn, dargs, sync, calls):
    for _ in range(20):
        out = fn(*dargs)
    sync(out)
    walls, hosts = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            out = fn(*dargs)
        t1 = time.perf_counter()
        sync(out)
        t2 = time.perf_counter()
        hosts.append((t1 - t0) / calls)
        walls.append((t2 - t0) / calls)
    return float(np.median(walls)), float(np.median(hosts))


def _kernel_tables(name, runs, args):
    import torch
    from torch.profiler import ProfilerActivity, profile

    for label, fn, a, lib in runs:
        lib.block_until_ready(fn(*a))
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                out = fn(*a)
            lib.block_until_ready(out)
            torch.cuda.synchronize()
        print(f"\n{name} {label}: GPU kernels of 10 steps")
        print(
            prof.key_averages().table(
                sort_by="self_cuda_time_total", row_limit=args.rows, max_name_column_width=60
            )
        )
    exe = runs[0][1].lower(*runs[0][2]).compile()
    inner = exe._exe
    text = getattr(getattr(inner, "inner", inner), "kernels_text", None)
    print(text if text else "(no kernel summary)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default="dpsgd,mlp_sgd")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--rows", type=int, default=30)
    ap.add_argument("--kernels", action="store_true", help="torch.profiler kernel tables too")
    args = ap.parse_args()

    import jax

    import functx

    table = {name: (fam, c) for name, fam, c in wl.workload_list("gpu")}
    rows = []
    for name in args.workloads.split(","):
        fam, c = table[name]
        fx, fargs = _step(functx, fam, c)
        jf, jargs = _step(jax, fam, c)
        got = [np.asarray(x, np.float64) for x in functx.tree_util.tree_leaves(fx(*fargs))]
        want = [np.asarray(x, np.float64) for x in jax.tree_util.tree_leaves(jf(*jargs))]
        err = max(
            float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30)) for g, w in zip(got, want)
        )
        print(f"{name}: functx vs JAX relative difference {err:.2e}", flush=True)
        fw, fh = _times(fx, fargs, functx.block_until_ready, args.calls)
        jw, jh = _times(jf, jargs, jax.block_until_ready, args.calls)
        rows.append((name, fw, fh, jw, jh))
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(args.calls):
            out = fx(*fargs)
        prof.disable()
        functx.block_until_ready(out)
        print(f"\n{name}: functx cProfile of {args.calls} calls (tottime)")
        pstats.Stats(prof).sort_stats("tottime").print_stats(args.rows)
        if args.kernels:
            _kernel_tables(name, (("functx", fx, fargs, functx), ("jax", jf, jargs, jax)), args)
    print("\n| workload | functx wall us | functx host us | JAX wall us | JAX host us |")
    print("|---|---|---|---|---|")
    for name, fw, fh, jw, jh in rows:
        print(f"| {name} | {fw * 1e6:.1f} | {fh * 1e6:.1f} | {jw * 1e6:.1f} | {jh * 1e6:.1f} |")


if __name__ == "__main__":
    main()
