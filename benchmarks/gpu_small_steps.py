"""Issue 20's small GPU steps: where a call's host time goes, functx against JAX.

Run from the repository root on a CUDA machine::

    python benchmarks/gpu_small_steps.py [--rounds 5] [--calls 2000] [--skip-steps mlp_sgd]

``--dry`` runs every part at small sizes with Triton's CPU interpreter as the GPU and JAX on the
CPU (to check the script here, the KLS step only; its times mean nothing).

1. **Checks** (before any time): the kernel least squares step (KLS), the MLP SGD step and the
   DP-SGD step of ``benchmarks/workloads.py`` (GPU sizes) against JAX, one call and a six-step
   training loop (``loss, params = step(params, *batch)``); the lone triangular solves and
   Cholesky factorisations of part 5 against JAX and NumPy float64. Each prints PASS or FAIL.
2. **Host costs** of the operations one call makes (torch allocation, a tensor's address and
   device, CUDA's current device and stream, wrapping an output, the fast path's signature walk):
   microseconds per operation, to see which of them a call can afford.
3. **Steps**: per call, medians over ``--rounds`` rounds alternating functx and JAX: the wall
   time of ``--calls`` back-to-back calls ended by one synchronisation, the host time of the
   calls alone, the training loop's wall time (the batch cycling through four copies), and the
   GPU time (torch.profiler's kernel and copy time); beside the policy's choice, functx's
   variants (``TWEAKS``): a CUDA graph forced on, outputs allocated each call (no
   ``runtime.OutputRings``).
4. **Profiles** of the KLS step: cProfile of ``--calls`` calls (top 25 by tottime, microseconds
   per call) and torch.profiler's host-side table (aten operations and CUDA runtime calls).
5. **Lone library steps**: a program whose only step is one graph-safe library step (a 512x512
   triangular solve with 8 and 512 right-hand sides, a 512x512 and a 64x64 Cholesky
   factorisation), functx with the policy's choice, graphs forced on and off, against JAX.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import os
import pstats
import sys
import time

DRY = "--dry" in sys.argv
if DRY:
    os.environ["TRITON_INTERPRET"] = "1"
    os.environ["JAX_PLATFORMS"] = "cpu"
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import workloads as wl  # noqa: E402
from gpu_host_time import _loop, _times  # noqa: E402

STEPS = ("kls_momentum", "mlp_sgd", "dpsgd")
TOL = {"kls_momentum": 1e-5, "mlp_sgd": 2e-3, "dpsgd": 1e-4}  # relative 2-norm against JAX
FAILS: list = []


def say(*a):
    print(*a, flush=True)


def verdict(what: str, err: float, tol: float) -> None:
    ok = bool(err <= tol)
    if not ok:
        FAILS.append(what)
    say(f"{'PASS' if ok else 'FAIL'} {what}: relative difference {err:.2e} (tolerance {tol:.0e})")


def rel(got, want) -> float:
    return max(
        float(np.linalg.norm(np.asarray(g, np.float64) - np.asarray(w, np.float64)))
        / max(float(np.linalg.norm(np.asarray(w, np.float64))), 1e-30)
        for g, w in zip(got, want)
    )


def configs():
    """(name, family, sizes) of the steps: GPU sizes, or small ones with ``--dry``."""
    table = {name: (fam, c) for name, fam, c in wl.workload_list("quick" if DRY else "gpu")}
    if DRY:
        return [("kls_momentum", "kls", dict(n=8))]
    return [(name, *table[name]) for name in STEPS]


def gpu_of(lib):
    import functx

    return functx.devices("gpu")[0] if lib is functx else lib.devices()[0]


def make_step(lib, family, c):
    dev = gpu_of(lib)
    args = lib.tree_util.tree_map(lambda a: lib.device_put(a, dev), wl.inputs(family, c))
    return lib.jit(wl.program(lib, family, c)), args


def sync_of(lib):
    import functx

    def sync(x):
        lib.block_until_ready(x)
        if lib is functx and not DRY:
            import torch

            torch.cuda.synchronize()

    return sync


def exe_of(jf):
    """The TritonExecutable behind a functx.jit function (its only cache entry)."""
    from gpu import triton_exe

    return triton_exe(jf)


# --- 1. checks ----------------------------------------------------------------------------------
def check_step(name, family, c, jax):
    import functx

    fx, fargs = make_step(functx, family, c)
    jf, jargs = make_step(jax, family, c)
    tol = TOL[name]
    verdict(f"{name} one call", rel(fl(fx(*fargs)), jl(jf(*jargs))), tol)
    fp, jp = fargs[0], jargs[0]  # six steps of a training loop: graphs capture and hand out
    for _ in range(6):
        _, fp = fx(fp, *fargs[1:])
        _, jp = jf(jp, *jargs[1:])
    verdict(f"{name} 6-step loop", rel(fl(fp), jl(jp)), 10 * tol)
    return fx, fargs, jf, jargs


def fl(tree):
    import functx

    return functx.tree_util.tree_leaves(tree)


def jl(tree):
    import jax

    return jax.tree_util.tree_leaves(tree)


# --- 2. host costs ------------------------------------------------------------------------------
def per_op(fn, n=20000) -> float:
    """Microseconds per ``fn()`` (median of 5 loops of ``n``)."""
    out = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        out.append((time.perf_counter() - t0) / n)
    return float(np.median(out)) * 1e6


def host_costs(fx, fargs):
    import torch

    import functx
    from functx import config
    from functx.devices.eager import gpu_tree_signature
    from functx.devices.gpu_array import GpuArray

    dev = gpu_of(functx).torch_device
    if not DRY:  # (TF32 against full float32 products: what runtime.matmul switches per call)
        from functx.lowering.triton import runtime

        runtime._bind_fp32_mode()
        fp32 = runtime._fp32_mode[0]()
    t = torch.empty(100, device=dev)
    av = fargs[1].aval
    say("\n## Host costs, us per operation")
    rows = [
        ("torch.empty(100)", lambda: torch.empty(100, device=dev)),
        (
            "torch.empty_strided((100,), (1,))",
            lambda: torch.empty_strided((100,), (1,), device=dev),
        ),
        ("3 views of one torch.empty(300)", lambda: _three_views(torch, dev)),
        ("tensor.data_ptr()", t.data_ptr),
        ("tensor.device", lambda: t.device),
        ("tensor.detach()", t.detach),
        ("tensor.clone() (100 floats)", t.clone),
        ("GpuArray._new", lambda: GpuArray._new(t, av, fargs[1]._device)),
        ("gpu_tree_signature(KLS arguments)", lambda: gpu_tree_signature(fargs)),
        ("config.matmul_precision()", config.matmul_precision),
        ("config.x64_on()", config.x64_on),
    ]
    if not DRY:
        rows += [
            ("torch._C._cuda_getDevice()", torch._C._cuda_getDevice),
            (
                "torch._C._cuda_getCurrentRawStream(0)",
                lambda: torch._C._cuda_getCurrentRawStream(0),
            ),
            ("torch.cuda.current_stream()", torch.cuda.current_stream),
            ("runtime.matmul's precision read", runtime._fp32_mode[0]),
            ("runtime.matmul's precision write", lambda: runtime._fp32_mode[1](fp32)),
        ]
    for what, fn in rows:
        say(f"| {what} | {per_op(fn, 2000 if DRY else 20000):.2f} |")
    # the KLS call by layers: jit's fast path, the executable, the module's launches alone
    exe = exe_of(fx)
    found = gpu_tree_signature(fargs)
    hit = fx._gpu_calls[(found[0], config.x64_on())][0]
    ins = [a._value for a in found[1]]
    consts, outs = exe._consts(dev), exe._outputs(dev)
    layers = [
        ("KLS: jit call", lambda: fx(*fargs)),
        ("KLS: DeviceExecutable.call_arrays", lambda: hit.call_arrays(found[1])),
        ("KLS: TritonExecutable.run_on", lambda: exe.run_on(dev, ins)),
        ("KLS: module.run (outputs given)", lambda: exe.module.run(ins, consts, outs)),
    ]
    sync = sync_of(functx)
    for what, fn in layers:
        sync(fn())
        say(f"| {what} | {per_op(fn, 3 if DRY else 5000):.2f} |")
        sync(fn())


def _three_views(torch, dev):
    b = torch.empty(300, device=dev)
    return b[:100], b[100:200], b[200:]


# --- 3. steps -----------------------------------------------------------------------------------
def gpu_time(step, sync, n=50) -> float:
    """Microseconds of GPU kernel and copy time per ``step()`` (torch.profiler's CUDA time)."""
    if DRY:
        return float("nan")
    import torch
    from torch.profiler import ProfilerActivity, profile

    sync(step())
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            out = step()
        sync(out)
        torch.cuda.synchronize()
    return sum(e.self_device_time_total for e in prof.key_averages()) / n


def _graph_on(exe):
    """A CUDA graph where the policy launches directly (the other way, graphs off the MLP and
    DP-SGD steps, made them 12x slower on the H100: run 1, 00:04 UTC)."""
    if exe.use_graphs:
        return None
    exe.use_graphs = True
    return "graph forced on"


def _no_rings(exe):
    """Outputs allocated each call (as before ``runtime.OutputRings``), where they are reused."""
    if getattr(exe, "_rings", None) is None or exe.use_graphs:
        return None
    exe._rings = None
    return "outputs allocated each call"


#: functx's versions of a step beside the policy's choice: each sets something on the
#: executable of a jit of its own and returns its label (None: not this step's case)
TWEAKS = (_graph_on, _no_rings)


def variants(name, family, c, fx, fargs):
    """functx's versions of a step: the policy's choice, and ``TWEAKS``'."""
    import functx

    out = [(f"functx ({'graph' if exe_of(fx).use_graphs else 'no graph'})", fx, fargs)]
    for tweak in TWEAKS:
        gx, gargs = make_step(functx, family, c)
        gx(*gargs)
        exe = exe_of(gx)
        if exe is exe_of(fx):
            say(f"{name}: a second jit shares the executable: no variants")
            return out
        label = tweak(exe)
        if label is not None:
            out.append((f"functx, {label}", gx, gargs))
    return out


def time_steps(steps, jax, args):
    import functx

    say("\n## Steps (us per call; medians over rounds; functx and JAX alternate)")
    rows = []
    for name, runs, jf, jargs in steps:
        times: dict = {label: [] for label, *_ in runs}
        times["JAX"] = []
        calls = args.calls if name == "kls_momentum" else max(args.calls // 4, 10)
        for _ in range(args.rounds):
            for label, fn, a in [*runs, ("JAX", jf, jargs)]:
                lib = jax if label == "JAX" else functx
                sync = sync_of(lib)
                w, h = _times(lambda fn=fn, a=a: fn(*a), sync, calls)
                lw = _times(_loop(fn, a, lib), sync, calls)[0]
                g = gpu_time(lambda fn=fn, a=a: fn(*a), sync)
                times[label].append((w * 1e6, h * 1e6, lw * 1e6, g))
        jw = np.median(np.array(times["JAX"]), axis=0)
        for label, ts in times.items():
            m = np.median(np.array(ts), axis=0)
            rows.append((name, label, *m, jw[0] / m[0], jw[2] / m[2]))
        say(f"{name}: {len(times['JAX'])} rounds of {calls} calls done")
    say("\n| step | version | wall | host | loop wall | GPU | JAX wall / this | JAX loop / this |")
    say("|---|---|---|---|---|---|---|---|")
    for name, label, w, h, lw, g, r, lr in rows:
        say(f"| {name} | {label} | {w:.1f} | {h:.1f} | {lw:.1f} | {g:.1f} | {r:.2f}x | {lr:.2f}x |")


# --- 4. profiles --------------------------------------------------------------------------------
def profiles(fx, fargs, args):
    import functx

    sync = sync_of(functx)
    for _ in range(50):
        out = fx(*fargs)
    sync(out)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.calls):
        out = fx(*fargs)
    prof.disable()
    sync(out)
    st = pstats.Stats(prof)
    total = st.total_tt / args.calls * 1e6
    say(f"\n## KLS: cProfile of {args.calls} calls ({total:.1f} us a call under the profiler)")
    say("| function | calls a call | tottime us a call | cumtime us a call |")
    say("|---|---|---|---|")
    entries = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:25]
    for (file, line, fn), (_, nc, tt, ct, _) in entries:
        where = f"{os.path.basename(file)}:{line}({fn})" if line else fn
        n = args.calls
        say(f"| {where} | {nc / n:.1f} | {tt / n * 1e6:.2f} | {ct / n * 1e6:.2f} |")
    if DRY:
        return
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        for _ in range(200):
            out = fx(*fargs)
        sync(out)
    say("\n## KLS: torch.profiler of 200 calls (host side: aten operations, CUDA runtime calls)")
    say(
        p.key_averages().table(
            sort_by="self_cpu_time_total", row_limit=20, max_name_column_width=50
        )
    )
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(200):
        out = fx(*fargs)
    end.record()
    torch.cuda.synchronize()
    say(f"KLS: CUDA events, 200 calls back to back: {start.elapsed_time(end) * 5:.1f} us a call")


# --- 5. lone library steps ----------------------------------------------------------------------
def lone_steps(jax):
    """Check the lone library steps' programs (the policy's choice, graphs forced on and off)
    against NumPy float64; returns ``(tag, [(label, functx jit)], JAX jit, functx args, JAX
    args)`` per case."""
    import jax.lax.linalg as jll

    import functx
    import functx.lax as flax

    rng = np.random.default_rng(35)
    n, m = (20, 8) if DRY else (512, 64)  # (the blocked solve at 20 rows and the kernels at 8)
    if DRY:
        from functx.lowering.triton import linalg as tlinalg

        tlinalg.MAX_N, tlinalg.SOLVE_BLOCK = 8, 16
    dev = gpu_of(functx)
    a = rng.standard_normal((n, n)).astype(np.float32)
    spd = (a @ a.T / n + np.eye(n, dtype=np.float32)).astype(np.float32)
    low = np.linalg.cholesky(spd.astype(np.float64)).astype(np.float32)
    kw = dict(left_side=True, lower=True)
    cases = []
    for k in (8, 16 if DRY else 512):
        b = rng.standard_normal((n, k)).astype(np.float32)
        want = np.linalg.solve(low.astype(np.float64), b.astype(np.float64))
        cases.append((f"triangular_solve {n}x{n}, {k} rhs", "triangular_solve", kw, (low, b), want))
    for x in (spd, spd[:m, :m].copy()):
        want = np.linalg.cholesky(x.astype(np.float64))
        cases.append((f"cholesky {len(x)}x{len(x)}", "cholesky", {}, (x,), want))
    out = []
    for tag, prim, kws, ins, want in cases:
        fn = functools.partial(getattr(flax.linalg, prim), **kws)
        jfn = jax.jit(functools.partial(getattr(jll, prim), **kws))
        fins = [functx.device_put(x, dev) for x in ins]
        jins = [jax.device_put(x, gpu_of(jax)) for x in ins]
        verdict(f"{tag}: JAX against NumPy float64", rel([jfn(*jins)], [want]), 1e-3)
        runs = []
        for setting in (None, True, False):
            f = functx.jit(fn)
            got = f(*fins)
            exe = exe_of(f)
            label = f"functx (policy: {'graph' if exe.use_graphs else 'no graph'})"
            if setting is not None:
                if exe.use_graphs == setting:
                    continue
                exe.use_graphs = setting
                label = f"functx, graph forced {'on' if setting else 'off'}"
                got = [f(*fins) for _ in range(3)][-1]  # (the second call captures)
            verdict(f"{tag} {label}", rel([got], [want]), 1e-3)
            runs.append((label, f))
        out.append((tag, runs, jfn, fins, jins))
    return out


def time_lone(cases, jax, args):
    import functx

    say("\n## Lone library steps (us per call; medians over rounds)")
    say("| step | version | wall us | JAX / this |")
    say("|---|---|---|---|")
    calls = 3 if DRY else 500
    for tag, runs, jfn, fins, jins in cases:
        times: dict = {label: [] for label, _ in runs}
        times["JAX"] = []
        for _ in range(args.rounds):
            for label, f in runs:
                times[label].append(_times(lambda f=f: f(*fins), sync_of(functx), calls)[0])
            times["JAX"].append(_times(lambda: jfn(*jins), sync_of(jax), calls)[0])
        jt = float(np.median(times["JAX"]))
        for label, ts in times.items():
            m = float(np.median(ts))
            say(f"| {tag} | {label} | {m * 1e6:.1f} | {jt / m:.2f}x |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--skip-steps", default="", help="comma-separated steps not timed")
    ap.add_argument("--dry", action="store_true", help="the interpreter as the GPU (see above)")
    args = ap.parse_args()
    if DRY:
        args.calls, args.rounds = 3, 1

    import jax

    import functx

    t0 = time.perf_counter()
    say(f"functx {getattr(functx, '__version__', '?')}, JAX {jax.__version__}")
    say("## Checks")
    steps, kls = [], None
    for name, family, c in configs():
        fx, fargs, jf, jargs = check_step(name, family, c, jax)
        if name == "kls_momentum":
            kls = (fx, fargs)
        if name not in args.skip_steps.split(","):
            steps.append((name, variants(name, family, c, fx, fargs), jf, jargs))
    lone = lone_steps(jax)
    say(f"(checks and compiles: {time.perf_counter() - t0:.0f} s)")
    host_costs(*kls)
    time_steps(steps, jax, args)
    profiles(*kls, args)
    time_lone(lone, jax, args)
    say(f"\n{len(FAILS)} checks failed{': ' + ', '.join(FAILS) if FAILS else ''}")
    say(f"(total {time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
