"""First calls on the GPU with and without compiling a program's Triton kernels in parallel before
its first run (issue 20; ``functx/lowering/triton/precompile.py``), against JAX.

Three programs of ``workloads.py``: HMM EM (T=300, 5 EM steps, device loops on), the GPT block
training step (float32, B=8 T=1024 d=768) and the MLP SGD step (784-1024-1024-10, batch 128).
Each (program, variant) runs in a process of its own with an empty functx cache (so an empty
Triton kernel cache) and no JAX compilation cache; the variants are "functx" (precompile on),
"functx old" (``FUNCTX_TRITON_PRECOMPILE=0``: each launch compiles its kernel, one after
another) and "jax", run in turn for each program. A process times its library's import, its
first, second and third calls (each ended by a synchronisation) and the median of 5 more (the
steady state), and saves its first call's outputs. Correctness first: each functx variant
against JAX (relative error in the 2-norm, worst output) and "functx" against "functx old"
(largest absolute difference: the same kernels, so 0 expected); then the table. The functx
processes' compile log (``FUNCTX_LOG_COMPILES=1``) is shown: the precompile's kernel count,
threads and seconds, and the first run's.

    python benchmarks/gpu_first_compile.py [--only hmm_em,gpt_block,mlp_sgd] [--deadline 280]
    python benchmarks/gpu_first_compile.py --quick   # Triton's interpreter: a check of the script
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = {  # name -> (workloads family, sizes, quick sizes, tolerance against JAX)
    "hmm_em": ("hmm", dict(T=300, S=25, M=10, steps=5), dict(T=20, S=5, M=3, steps=1), 1e-3),
    "gpt_block": (
        "gpt",
        dict(B=8, T=1024, d=768, H=12, dtype="float32"),
        dict(B=2, T=16, d=32, H=2, dtype="float32"),
        2e-2,
    ),
    "mlp_sgd": (
        "mlp",
        dict(sizes=(784, 1024, 1024, 10), batch=128),
        dict(sizes=(32, 16, 16, 10), batch=8),
        2e-2,
    ),
}
VARIANTS = {  # shown name -> (library, FUNCTX_TRITON_PRECOMPILE)
    "functx old": ("functx", "0"),
    "functx": ("functx", "1"),
    "jax": ("jax", "1"),
}


def worker(variant: str, name: str, quick: bool, save: str) -> None:
    lib = VARIANTS[variant][0]
    family, c, cq, _ = PROGRAMS[name]
    c = cq if quick else c
    t0 = time.perf_counter()
    if lib == "jax":
        import jax as jx

        fn = jx.jit(workloads.program(jx, family, c))
        dargs = jx.device_put(workloads.inputs(family, c))
    else:
        import torch  # noqa: F401 - (functx's GPU arrays are torch tensors: imported in the time)

        import functx as jx

        fn = jx.jit(workloads.program(jx, family, c))
        dev = jx.devices("gpu")[0]
        dargs = jx.tree_util.tree_map(lambda a: jx.device_put(a, dev), workloads.inputs(family, c))
    jx.block_until_ready(dargs)
    print(json.dumps({"import_and_inputs_s": time.perf_counter() - t0}), flush=True)

    def call():
        out = fn(*dargs)
        jx.block_until_ready(out)
        return out

    for i in range(3):
        t0, p0 = time.perf_counter(), time.process_time()
        out = call()
        print(
            json.dumps(
                {"call": i + 1, "s": time.perf_counter() - t0, "cpu_s": time.process_time() - p0}
            ),
            flush=True,
        )
        if i == 0:
            leaves = jx.tree_util.tree_leaves(out)
            np.savez(save, *[np.asarray(x, np.float64) for x in leaves])
    steady = []
    for _ in range(5):
        t0 = time.perf_counter()
        call()
        steady.append(time.perf_counter() - t0)
    print(json.dumps({"steady_s": statistics.median(steady)}), flush=True)


def _max_rel(got, want) -> float:
    if len(got.files) != len(want.files):
        return float("inf")
    return max(workloads.rel_err(got[k], want[k]) for k in want.files)


def _max_abs(got, want) -> float:
    if len(got.files) != len(want.files):
        return float("inf")
    return max(
        float(np.max(np.abs(got[k] - want[k]), initial=0.0))
        if got[k].shape == want[k].shape
        else float("inf")
        for k in want.files
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default=",".join(PROGRAMS))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--deadline", type=float, default=280.0, help="seconds for everything")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--name", help=argparse.SUPPRESS)
    ap.add_argument("--save", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.name, args.quick, args.save)
        return
    start = time.perf_counter()
    save = tempfile.mkdtemp(prefix="fx_first_compile_")
    names = args.only.split(",")
    results, logs = {}, {}
    print(f"{' '.join(sys.argv)}; load {os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs", flush=True)
    for name in names:
        for variant, (_, pre) in VARIANTS.items():
            left = args.deadline - (time.perf_counter() - start)
            if left < 20:
                print(f"== {variant} {name}: skipped (deadline)", flush=True)
                continue
            env = dict(
                os.environ,
                FUNCTX_CACHE_DIR=tempfile.mkdtemp(prefix="cache_", dir=save),
                FUNCTX_TRITON_PRECOMPILE=pre,
                FUNCTX_LOG_COMPILES="1",
                XLA_PYTHON_CLIENT_PREALLOCATE="false",
                PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
            )
            env.pop("JAX_COMPILATION_CACHE_DIR", None)
            if args.quick:
                env["TRITON_INTERPRET"] = "1"
            out_file = os.path.join(save, f"{variant.replace(' ', '_')}_{name}.npz")
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", variant, "--name", name]
            cmd += ["--save", out_file] + (["--quick"] if args.quick else [])
            t0 = time.perf_counter()
            try:
                p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=left)
                stdout, stderr, rc = p.stdout, p.stderr, p.returncode
            except subprocess.TimeoutExpired as e:
                stdout, stderr, rc = e.stdout or "", e.stderr or "", "timeout"
                stdout = stdout.decode() if isinstance(stdout, bytes) else stdout
                stderr = stderr.decode() if isinstance(stderr, bytes) else stderr
            print(f"== {variant} {name}: {time.perf_counter() - t0:.1f} s, exit {rc}", flush=True)
            recs = [json.loads(x) for x in stdout.splitlines() if x.startswith("{")]
            results[(variant, name)] = (recs, out_file)
            logs[(variant, name)] = [x for x in stderr.splitlines() if "functx:" in x]
            if rc != 0:
                print("  " + "\n  ".join(stderr.strip().splitlines()[-8:]), flush=True)

    print("\ncorrectness (first call; relative error in the 2-norm against JAX, worst output):")
    for name in names:
        tol = PROGRAMS[name][3]
        files = {v: results.get((v, name), (None, None))[1] for v in VARIANTS}
        have = {v: f for v, f in files.items() if f and os.path.exists(f)}
        for v in ("functx old", "functx"):
            if v in have and "jax" in have:
                err = _max_rel(np.load(have[v]), np.load(have["jax"]))
                ok = "ok" if err <= tol else "WRONG"
                print(f"  {name:10s} {v:11s} {err:.1e} {ok} (tolerance {tol:g})")
            else:
                print(f"  {name:10s} {v:11s} no result")
        if "functx" in have and "functx old" in have:
            d = _max_abs(np.load(have["functx"]), np.load(have["functx old"]))
            print(f"  {name:10s} functx vs functx old: largest absolute difference {d:.1e}")

    print("\ncompile log (functx):")
    for (variant, name), lines in logs.items():
        for x in lines:
            print(f"  [{variant} {name}] {x.strip()[:220]}")

    print(
        f"\n{'program':10s} {'variant':11s} {'import s':>8s} {'1st s':>8s} {'1st cpu':>8s} "
        f"{'2nd s':>8s} {'3rd s':>8s} {'steady ms':>10s}"
    )
    for name in names:
        for v in VARIANTS:
            recs = results.get((v, name), ([], None))[0]
            calls = {r["call"]: r for r in recs if "call" in r}
            imp = next((r["import_and_inputs_s"] for r in recs if "import_and_inputs_s" in r), None)
            steady = next((r["steady_s"] for r in recs if "steady_s" in r), None)

            def f(x, scale=1.0, w=8, d=3):
                return f"{x * scale:{w}.{d}f}" if x is not None else f"{'-':>{w}s}"

            c1, c2, c3 = (calls.get(i, {}) for i in (1, 2, 3))
            print(
                f"{name:10s} {v:11s} {f(imp)} {f(c1.get('s'))} {f(c1.get('cpu_s'))} "
                f"{f(c2.get('s'))} {f(c3.get('s'))} {f(steady, 1e3, 10, 2)}"
            )
    print(f"(everything: {time.perf_counter() - start:.0f} s)")


if __name__ == "__main__":
    main()
