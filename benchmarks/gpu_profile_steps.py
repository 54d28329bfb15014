"""Where a training step's time goes on one GPU: the single-device GPT block step and DP-SGD
step of ``examples/`` (benchmarks/multi_gpu.py's sizes), functx against JAX, with torch.profiler
tables of the device kernels (CUPTI sees every kernel of the process, JAX's too).

Run from the repository root on a CUDA machine::

    python benchmarks/gpu_profile_steps.py [--workloads gpt,dpsgd] [--rows 25]

It checks functx's new parameters against JAX's first (largest |difference| / max |reference|),
then prints each library's ms per step (median of 5 loops of 10 steps) and the kernel tables.
"""

from __future__ import annotations

import argparse
import os
import sys

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # (torch shares the GPU)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, ROOT)

import multi_gpu as mg  # noqa: E402
import numpy as np  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default="gpt,dpsgd")
    ap.add_argument("--rows", type=int, default=25)
    ap.add_argument("--size", default="full", choices=sorted(mg.SIZES))
    args = ap.parse_args()

    import jax
    import torch
    from torch.profiler import ProfilerActivity, profile

    import functx

    dev = functx.devices("gpu")[0]
    for workload in args.workloads.split(","):
        fx_mesh = functx.sharding.Mesh(np.array(functx.devices()[:1]), ("data",))
        jx_mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("data",))
        _, fx_one, (params, batch) = mg.steps(functx, fx_mesh, workload, args.size)
        _, jx_one, _ = mg.steps(jax, jx_mesh, workload, args.size)
        fx_args = functx.device_put((params, *batch), dev)
        jx_args = jax.device_put((params, *batch))
        f, g = functx.jit(fx_one), jax.jit(jx_one)
        out_f, out_g = f(*fx_args), g(*jx_args)
        err = mg.max_rel(
            jax.tree_util.tree_leaves(mg.first_params(out_f, workload)),
            jax.tree_util.tree_leaves(mg.first_params(out_g, workload)),
        )
        print(f"\n## {workload}: functx vs JAX new parameters, max rel difference {err:.1e}")
        for label, fn, a, sync in (
            ("functx", f, fx_args, functx.block_until_ready),
            ("jax", g, jx_args, jax.block_until_ready),
        ):
            t = mg.timeit(lambda fn=fn, a=a: fn(*a), sync, 10)
            print(f"{label}: {t * 1e3:.3f} ms/step")
        for label, fn, a, sync in (
            ("functx", f, fx_args, functx.block_until_ready),
            ("jax", g, jx_args, jax.block_until_ready),
        ):
            sync(fn(*a))
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
                for _ in range(5):
                    out = fn(*a)
                sync(out)
                torch.cuda.synchronize()
            print(f"\n### {workload} {label}: 5 steps")
            print(
                prof.key_averages().table(
                    sort_by="self_cuda_time_total", row_limit=args.rows, max_name_column_width=70
                )
            )


if __name__ == "__main__":
    main()
