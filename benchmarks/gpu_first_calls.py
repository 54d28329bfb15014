"""The first calls of a program with host loops on the GPU (issue 20): HMM EM (``workloads.py``'s
``hmm_em``: an EM ``fori_loop`` whose body holds a forward ``scan`` and its transposed gradient
scan) with device loops off (``FUNCTX_DEVICE_LOOPS=0``: every loop runs on the host, launching
its body's kernels each iteration) and on (the control), against JAX. Correctness first.

Each (library, device loops, T) runs in a process of its own with an empty functx cache
(Triton compiles every kernel in the first call). A process times its first four calls one by
one (each ended by a synchronisation), then the median of 5 more (the steady state), and
prints after each call: the calls that went through Triton's own dispatch (a compile, or a
launch the direct path did not take) and the Triton kernel variants compiled so far. Its
stderr carries functx's compile log (``FUNCTX_LOG_COMPILES=1``: the first run's time, each CUDA
graph capture's). ``--profile``: one more process (host loops, the first T) whose first and
second calls run under cProfile (top functions by own time).

    python benchmarks/gpu_first_calls.py [--Ts 300,3000] [--steps 5] [--profile] [--quick]
        [--base TREE]

``--base TREE``: the host loops of the functx in ``TREE`` too (another commit's files, e.g.
``git archive <commit> | tar -x -C TREE``), each beside this tree's: before and after.

``--quick``: small sizes for Triton's CPU interpreter (``TRITON_INTERPRET=1``) and JAX on the CPU:
a check of the script, not a measurement.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _triton_counts() -> tuple[int, int]:
    """(calls through Triton's dispatch so far, Triton kernel variants compiled so far) over
    every generated module loaded in this process."""
    from functx.lowering.triton import runtime as rt

    variants = 0
    for name, mod in list(sys.modules.items()):
        if not name.startswith("functx_triton_"):
            continue
        for v in vars(mod).values():
            if isinstance(v, rt.Site):
                caches = getattr(v.kernel, "device_caches", None) or {}
                variants += sum(len(c[0]) for c in caches.values())
    return rt.Site.slow_calls, variants


def worker(lib: str, T: int, steps: int, save: str, profile: bool) -> None:
    """Time the calls of HMM EM at ``T`` with ``lib``; one JSON line per call to stdout."""
    import torch

    c = dict(T=T, S=25, M=10, steps=steps)
    if lib == "jax":
        import jax as jx

        fn = jx.jit(workloads.program(jx, "hmm", c))
        dargs = jx.device_put(workloads.inputs("hmm", c))
    else:
        import functx as jx
        from functx.lowering.triton import runtime as rt

        through = rt.Site.through_triton
        rt.Site.slow_calls = 0

        def counted(self, g0, g1, args):  # (counts the launches Triton's dispatch makes)
            rt.Site.slow_calls += 1
            return through(self, g0, g1, args)

        rt.Site.through_triton = counted
        fn = jx.jit(workloads.program(jx, "hmm", c), backend="triton")
        dargs = jx.device_put(workloads.inputs("hmm", c), jx.devices("gpu")[0])

    def call():
        out = fn(*dargs)
        jx.block_until_ready(out)
        return out

    times = []
    for i in range(4 if not profile else 2):
        prof = cProfile.Profile() if profile else None
        t0, p0 = time.perf_counter(), time.process_time()
        if prof:
            prof.enable()
        out = call()
        if prof:
            prof.disable()
        rec = {"call": i + 1, "s": time.perf_counter() - t0, "cpu_s": time.process_time() - p0}
        if lib != "jax":
            rec["through_triton"], rec["variants"] = _triton_counts()
        times.append(rec["s"])
        print(json.dumps(rec), flush=True)
        if i == 0:
            leaves = [np.asarray(x, np.float64) for x in jx.tree_util.tree_leaves(out)]
            np.savez(save, *leaves)  # (the file the parent named)
        if prof:
            text = io.StringIO()
            pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
            print(f"--- profile of call {i + 1} ---\n{text.getvalue()}", flush=True)
    if profile:
        return
    steady = []
    for _ in range(5):
        t0 = time.perf_counter()
        call()
        steady.append(time.perf_counter() - t0)
    print(json.dumps({"steady_s": statistics.median(steady), "all": steady}), flush=True)
    if torch.cuda.is_available():
        print(json.dumps({"peak_mib": torch.cuda.max_memory_allocated() / 2**20}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--Ts", default="300,3000")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--base", help="a tree of another functx commit: its host loops beside")
    ap.add_argument("--deadline", type=float, default=280.0, help="seconds for everything")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--T", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--save", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.T, args.steps, args.save, args.profile)
        return
    Ts = [10, 20] if args.quick else [int(t) for t in args.Ts.split(",")]
    steps = 1 if args.quick else args.steps
    save = tempfile.mkdtemp(prefix="fx_first_calls_")
    base = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", FUNCTX_LOG_COMPILES="1")
    # (shown, library, device loops, T, profile, functx tree): host loops first (the subject),
    # the --base tree's and JAX beside them
    runs = []
    for T in Ts:
        runs.append(("functx host loops", "functx", "0", T, False, ROOT))
        runs.append(("jax", "jax", "1", T, False, ROOT))
        if args.base:
            runs.append(("functx host loops, base", "functx", "0", T, False, args.base))
    runs += [("functx device loops", "functx", "1", T, False, ROOT) for T in Ts]
    if args.profile:
        runs.append(("functx host loops, profiled", "functx", "0", Ts[0], True, ROOT))
    results: dict = {}
    t_start = time.perf_counter()
    for shown, lib, loops, T, profile, root in runs:
        left = args.deadline - (time.perf_counter() - t_start)
        if left < 10:
            print(f"== {shown} T={T}: not run (--deadline)")
            continue
        env = dict(base, FUNCTX_DEVICE_LOOPS=loops)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)
        env["FUNCTX_CACHE_DIR"] = tempfile.mkdtemp(prefix="cache_", dir=save)  # (empty)
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib, "--T", str(T)]
        cmd += ["--steps", str(steps), "--save", os.path.join(save, f"{shown} {T}.npz")]
        cmd += ["--profile"] if profile else []
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=left)
            out, err, rc = p.stdout, p.stderr, p.returncode
        except subprocess.TimeoutExpired as e:
            out, err, rc = e.stdout or "", e.stderr or "", "stopped at the deadline"
            out, err = [x.decode() if isinstance(x, bytes) else x for x in (out, err)]
        print(f"== {shown} T={T}: {time.perf_counter() - t0:.1f} s, exit {rc}", flush=True)
        recs = []
        for line in out.splitlines():
            print("  " + line)
            if line.startswith("{"):
                recs.append(json.loads(line))
        for line in err.splitlines():
            if line.startswith("functx: first run") or line.startswith("functx: captured"):
                print("  " + line)
        if rc:
            print("  " + err[-1500:].replace("\n", "\n  "))
        if not profile:
            results[(shown, T)] = recs
    print(f"(everything: {time.perf_counter() - t_start:.0f} s)")
    print("correctness against JAX (relative error in the 2-norm, worst output, first call):")
    for shown, T in results:
        if shown != "jax":
            err = _error(save, f"{shown} {T}", f"jax {T}")
            verdict = "not checked" if err is None else "ok" if err <= 2e-3 else "WRONG"
            print(f"  {shown:24s} T={T:<5d} {err or float('nan'):.1e} {verdict}")
    print(
        f"{'variant':24s} {'T':>5s} "
        + " ".join(f"{c:>8s}" for c in ("1st s", "2nd s", "3rd s"))
        + f" {'4th s':>8s} {'steady ms':>10s}"
    )
    for (shown, T), recs in results.items():
        calls = [r["s"] for r in recs if "call" in r]
        steady = [r["steady_s"] for r in recs if "steady_s" in r]
        cells = [f"{t:8.3f}" for t in calls] + ["       -"] * (4 - len(calls))
        st = f"{steady[0] * 1e3:10.2f}" if steady else "         -"
        print(f"{shown:24s} {T:5d} {' '.join(cells)} {st}")


def _error(save: str, got: str, want: str) -> float | None:
    try:
        g, w = (np.load(os.path.join(save, f"{n}.npz")) for n in (got, want))
    except OSError:
        return None  # (one of them did not finish its first call)
    return max(workloads.rel_err(g[k], w[k]) for k in w.files)


if __name__ == "__main__":
    main()
