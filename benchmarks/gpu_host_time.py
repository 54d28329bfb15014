"""Where a small GPU training step's per-call host time goes: functx against JAX.

Run from the repository root on a CUDA machine::

    python benchmarks/gpu_host_time.py [--workloads dpsgd,mlp_sgd] [--calls 300] [--rows 30]

For each workload of ``benchmarks/workloads.py`` (GPU sizes) it checks functx's step against
JAX's (largest relative 2-norm difference of the loss and new parameters), then prints per call:
the wall time of back-to-back calls ended by one synchronisation (the same arguments each call),
the host time of the calls alone (the loop without the final synchronisation, after a drained
queue: what the Python side costs), the GPU time per call (kernels and copies, torch.profiler),
the same for a training loop (``loss, params = step(params, *batch)``, the batch cycling through
four copies), how many arguments functx's CUDA graphs copied in at the loop's last step, and for
functx a cProfile table of the calls.

``--stages`` shows where each microsecond of the host path goes, in fresh processes: each
process (``--procs`` per tree, the trees alternating: this one and ``--base DIR``, another
checkout such as main's) checks functx against JAX and the launch plans against the module's
host code (bit for bit, with the same arguments and through a training loop whose arguments
change address), then times, functx and JAX alternating: the per-call wall and host time, the
same with Python's garbage collector off, the training loop, and each stage of the path alone
(the jit dispatch's signature walk and lookup, ``call_arrays``, ``run_on``, the output rings,
the capture check ``run_on`` makes (and torch.cuda's wrapper of it),
the module's host code, the launch plan, each launch site, each compiled kernel's bare
launcher, a ``torch.empty``). Each process also records what could make processes differ:
the CPU it ran on (start and end), that CPU's clock, the load, a fixed pure-Python workload's
time (``calib``: the host's speed for this process), and the garbage collections during the
timed calls. The summary gives per tree the median, best and worst over processes, the ratio
to JAX in each process and to JAX's best per-call time in the whole run.

``--ab`` compares versions of functx's code generation in one process instead (``VARIANTS``:
module switches set while a variant's step is compiled), alternating them over ``--rounds``
rounds beside JAX: launches per step, wall / host / GPU time per call and the training loop's
wall time, medians over the rounds.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.environ.get("FUNCTX_BENCH_ROOT") or HERE  # (the functx measured: --stages' --base)
sys.path.insert(0, os.path.join(HERE, "benchmarks"))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import workloads as wl  # noqa: E402

LOOPS = ("mlp_sgd", "dpsgd", "cnn", "kls_momentum")  # steps returning (loss, new first argument)


def _step(jx, family, c):
    args = wl.inputs(family, c)
    try:
        dev = jx.devices("gpu")[0]
    except RuntimeError:  # (JAX without a GPU: --sizes quick, a dry run on the CPU)
        dev = jx.devices()[0]
    dargs = jx.tree_util.tree_map(lambda a: jx.device_put(a, dev), args)
    fn = jx.jit(wl.program(jx, family, c))
    return fn, dargs


def _times(step, sync, calls):
    """Seconds per call of ``step()`` run back to back (median of 5 loops of ``calls``): the wall
    time ended by one synchronisation, and the host time of the calls alone."""
    for _ in range(min(20, calls)):
        out = step()
    sync(out)
    walls, hosts = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            out = step()
        t1 = time.perf_counter()
        sync(out)
        t2 = time.perf_counter()
        hosts.append((t1 - t0) / calls)
        walls.append((t2 - t0) / calls)
    return float(np.median(walls)), float(np.median(hosts))


def _loop(fn, dargs, jx):
    """A training loop's step: ``loss, params = step(params, *batch)``, the batch cycling through
    four copies (new addresses, as a data loader gives); ``step()`` returns the new parameters."""
    batches = [dargs[1:]] + [jx.tree_util.tree_map(lambda a: a + 0, dargs[1:]) for _ in range(3)]
    state = {"p": dargs[0], "i": 0}

    def step():
        loss, state["p"] = fn(state["p"], *batches[state["i"] % 4])
        state["i"] += 1
        return state["p"]

    return step


def _gpu_time(step, sync, n=20) -> float:
    """Seconds of GPU kernel and copy time per call of ``step()`` (torch.profiler's CUDA time)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    sync(step())
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            out = step()
        sync(out)
        torch.cuda.synchronize()
    return sum(e.self_device_time_total for e in prof.key_averages()) / 1e6 / n


def _host_profile(what, fx, fargs, args):
    """Print a cProfile table (tottime) of ``args.calls`` calls of functx's ``fx(*fargs)``."""
    import functx

    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.calls):
        out = fx(*fargs)
    prof.disable()
    functx.block_until_ready(out)
    print(f"\n{what}: functx cProfile of {args.calls} calls (tottime)")
    pstats.Stats(prof).sort_stats("tottime").print_stats(args.rows)


def _copy_graphs():
    import gc

    return [o for o in gc.get_objects() if type(o).__name__ == "CopyGraphs"]


# --ab: the versions compared, as (label, module switches set while compiling, CUDA graphs forced
# on, calls through jit's keyed path). "base": the code generation before issue 20's session-33
# changes, and the keyed path that calls with pytree arguments took before (gpu_tree_signature).
BASE = {
    "dot.MATVEC_SUMS": False,
    "blocks.strided_min_rows": 1 << 30,
    "program.SCRATCH_MAX_BYTES": 0,
}
VARIANTS = (
    ("base", BASE, False, True),
    ("new, keyed path", {}, False, True),
    ("new, launches apart", {"combine.COMBINE": False}, False, False),  # (before session 38)
    ("new", {}, False, False),
    ("new+graphs", {}, True, False),
)


class _NoFastPath(dict):
    """A jitted function's GPU fast-path records that never hold one: every call takes the
    keyed path (its cost as before gpu_tree_signature, plus that walk's few microseconds)."""

    def __setitem__(self, key, value):
        pass


def _switched(settings):
    """A context manager setting ``settings`` ({"module.NAME": value} under
    functx.lowering.triton; "blocks.x": a field of program.DEFAULT_BLOCKS) and restoring them."""
    import contextlib
    import dataclasses

    from functx.lowering.triton import combine, dot, program

    modules = {"combine": combine, "dot": dot, "program": program}

    @contextlib.contextmanager
    def cm():
        saved_blocks, saved = program.DEFAULT_BLOCKS, []
        fields = {k.split(".", 1)[1]: v for k, v in settings.items() if k.startswith("blocks.")}
        if fields:
            program.DEFAULT_BLOCKS = dataclasses.replace(saved_blocks, **fields)
        for k, v in settings.items():
            mod, name = k.split(".", 1)
            if mod in modules:
                saved.append((modules[mod], name, getattr(modules[mod], name)))
                setattr(modules[mod], name, v)
        try:
            yield
        finally:
            program.DEFAULT_BLOCKS = saved_blocks
            for mod, name, v in saved:
                setattr(mod, name, v)

    return cm()


def _ab(name, fam, c, args, jx_step):
    """One workload's A/B rows: ``(label, launches, wall, host, GPU, loop wall)`` per variant
    and JAX (seconds; medians over ``args.rounds`` alternating rounds)."""
    from gpu import triton_exe

    import functx

    jf, jargs = jx_step
    want = [np.asarray(x, np.float64) for x in _jax().tree_util.tree_leaves(jf(*jargs))]
    runs = []
    for label, settings, graphs, keyed in VARIANTS:
        fx, fargs = _step(functx, fam, c)
        if keyed:
            fx._gpu_calls = _NoFastPath()
        with _switched(settings):
            got = functx.tree_util.tree_leaves(fx(*fargs))
        exe = triton_exe(fx)
        if graphs:
            if exe.use_graphs:
                continue  # (the same as the variant without the flag)
            exe.use_graphs = True
        got = [np.asarray(x, np.float64) for x in got]
        err = max(
            float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30)) for g, w in zip(got, want)
        )
        n = exe.n_launches
        print(f"{name} {label}: {n} launches, relative difference to JAX {err:.2e}", flush=True)
        runs.append((label, n, fx, fargs))
    lib = functx
    times = {label: [] for label, *_ in runs}
    times["JAX"] = []
    for _ in range(args.rounds):
        for label, _, fx, fargs in runs:
            w, h = _times(lambda: fx(*fargs), lib.block_until_ready, args.calls)
            g = _gpu_time(lambda: fx(*fargs), lib.block_until_ready)
            lw = _times(_loop(fx, fargs, lib), lib.block_until_ready, args.calls)[0]
            times[label].append((w, h, g, lw))
        jax = _jax()
        w, h = _times(lambda: jf(*jargs), jax.block_until_ready, args.calls)
        g = _gpu_time(lambda: jf(*jargs), jax.block_until_ready)
        lw = _times(_loop(jf, jargs, jax), jax.block_until_ready, args.calls)[0]
        times["JAX"].append((w, h, g, lw))
    for label, _, fx, fargs in runs[-1:]:  # (where the host time goes, the newest version)
        _host_profile(f"{name} {label}", fx, fargs, args)
        if args.kernels:
            _kernel_tables(name, ((label, fx, fargs, lib), ("JAX", jf, jargs, _jax())), args)
    launches = {label: n for label, n, *_ in runs}
    return [
        (name, label, launches.get(label, "-"), *np.median(np.array(ts), axis=0))
        for label, ts in times.items()
    ]


def _jax():
    import jax

    return jax


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


# --- --stages: the host path, stage by stage, in fresh processes --------------------------------
def _us(f, n: int, sync=None, reps: int = 5) -> tuple[float, float]:
    """Median over ``reps`` loops of ``n`` calls of ``f()``: wall and CPU microseconds per call
    (``sync(last result)`` ends each loop, where given)."""
    walls, cpus = [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(n):
            out = f()
        if sync is not None:
            sync(out)
        walls.append((time.perf_counter() - t0) / n * 1e6)
        cpus.append((time.process_time() - c0) / n * 1e6)
    return float(np.median(walls)), float(np.median(cpus))


def _calibrate() -> float:
    """Microseconds of a fixed pure-Python workload (best of 5): the host's speed now."""
    d = {i: i for i in range(64)}

    def work():
        acc = 0
        for i in range(2000):
            acc += d[i & 63] * i
        return acc

    best = []
    for _ in range(5):
        t0 = time.perf_counter()
        work()
        best.append(time.perf_counter() - t0)
    return min(best) * 1e6


def _machine() -> dict:
    """Where this process runs: its CPU (from /proc), that CPU's clock, affinity, load."""
    info = {"load": os.getloadavg()[0], "cpus": len(os.sched_getaffinity(0))}
    try:
        with open("/proc/self/stat") as f:
            info["cpu"] = int(f.read().rsplit(")", 1)[1].split()[36])
        with open("/proc/cpuinfo") as f:
            blocks = f.read().split("\n\n")
        for b in blocks:
            if f"processor\t: {info['cpu']}\n" in b + "\n":
                info["mhz"] = float(b.split("cpu MHz")[1].split(":")[1].split()[0])
    except (OSError, IndexError, ValueError):
        pass
    return info


class _GcWatch:
    """Garbage collections (count, milliseconds) while it is on."""

    def __init__(self):
        import gc

        self.gc, self.n, self.ms, self.t = gc, 0, 0.0, 0.0

    def __call__(self, phase, info):
        if phase == "start":
            self.t = time.perf_counter()
        else:
            self.n += 1
            self.ms += (time.perf_counter() - self.t) * 1e3

    def __enter__(self):
        self.gc.callbacks.append(self)
        return self

    def __exit__(self, *a):
        self.gc.callbacks.remove(self)


def _leaves64(lib, out):
    return [np.asarray(x, np.float64) for x in lib.tree_util.tree_leaves(out)]


def _plan_checks(fx, fargs, exe, rt, steps=20) -> str:
    """The launch plan against the module's host code, bit for bit: the same arguments, and 20
    steps of a training loop (arguments at new addresses each step, the batch cycling)."""
    import functx

    if getattr(exe, "_plans", None) is None:
        return "no plan (host code beyond launches)" if hasattr(rt, "LaunchPlan") else "-"
    if exe.use_graphs:
        return "no plan (CUDA graphs)"
    res = []
    for on in (False, True):
        rt.LAUNCH_PLANS = on
        outs = [_leaves64(functx, fx(*fargs)) for _ in range(3)]
        step = _loop(fx, fargs, functx)
        for _ in range(steps):
            p = step()
        res.append((outs[-1], _leaves64(functx, p)))
    rt.LAUNCH_PLANS = True
    planned = [type(v).__name__ for v in exe._plans.values()]
    same = all(
        all(np.array_equal(a, b, equal_nan=True) for a, b in zip(x, y))
        for x, y in zip(res[0], res[1])
    )
    return f"plans {planned}: {'identical' if same else 'DIFFERENT'} to the module's"


def _stages(fx, fargs, exe, n) -> dict:
    """Microseconds (wall, CPU) per call of each stage of functx's host path alone."""
    import functx
    from functx import config as fconfig
    from functx.devices.eager import gpu_tree_signature
    from functx.lowering.triton import runtime as rt

    found = gpu_tree_signature(fargs)
    hit = fx._gpu_calls.get((found[0], fconfig.jit_key_flags())) if found else None
    out = {}
    sync = functx.block_until_ready
    out["call"] = _us(lambda: fx(*fargs), n, sync)
    if hit is None:
        return out
    leaves = found[1]
    dx = hit[0]
    out["signature walk"] = _us(lambda: gpu_tree_signature(fargs), n)
    key = (found[0], fconfig.jit_key_flags())
    out["lookup"] = _us(lambda: fx._gpu_calls.get((key[0], fconfig.jit_key_flags())), n)
    out["call_arrays"] = _us(lambda: dx.call_arrays(leaves), n, sync)
    tdev, vals = dx._tdev, [a._value for a in leaves]
    out["run_on"] = _us(lambda: exe.run_on(tdev, vals), n, sync)
    if exe.use_graphs:
        return out
    rings = exe._rings
    if rings is not None:
        out["rings.take"] = _us(rings.take, n)
    import torch

    out["capture check (run_on's)"] = _us(rt._capturing, n)
    out["capture check (torch.cuda's)"] = _us(torch.cuda.is_current_stream_capturing, n)
    consts = exe._consts(tdev)
    outs = exe._outputs(tdev)
    out["module run"] = _us(lambda: exe.module.run(vals, consts, outs), n, sync)
    plan = next(iter((getattr(exe, "_plans", None) or {}).values()), None)
    if type(plan).__name__ == "LaunchPlan":
        out["plan"] = _us(lambda: plan(vals, outs, rt._cuda[1](plan.index)), n, sync)
        for i, (launch, pick) in enumerate(plan.launches):
            ptrs = pick([t.data_ptr() for t in vals] + [t.data_ptr() for t in outs] + plan.fixed)
            out[f"bare launcher {i}"] = _us(lambda: launch(*ptrs), n, sync)
    for i, (site, g0, g1, bufs) in enumerate(_site_launches(exe, vals, consts, outs)):
        out[f"site {i} ({site.name})"] = _us(lambda: site(g0, g1, *bufs), n, sync)
    out["torch.empty(100)"] = _us(lambda: torch.empty(100, device=tdev), n)
    return out


def _site_launches(exe, ins, consts, outs) -> list:
    """``(site, grid0, grid1, buffers)`` of each launch of one run of the module's host code."""
    from functx.lowering.triton import runtime as rt

    return rt.run_recorded(exe.module, ins, consts, outs)


def _child(args):
    """One process of --stages: a JSON line per workload."""
    import gc
    import json

    import jax

    import functx
    from functx.lowering.triton import runtime as rt

    sizes = "quick" if args.sizes == "tiny" else args.sizes
    table = {name: (fam, c) for name, fam, c in wl.workload_list(sizes)}
    if args.sizes == "tiny":  # (a dry run of this script in Triton's interpreter)
        table = {k: (f, dict(c, n=8) if f == "kls" else c) for k, (f, c) in table.items()}
    for name in args.workloads.split(","):
        fam, c = table[name]
        rec = {"tree": args.tree, "workload": name, "pid": os.getpid(), **_machine()}
        rec["functx"] = os.path.dirname(os.path.dirname(os.path.abspath(functx.__file__)))
        rec["calib_us"] = _calibrate()
        fx, fargs = _step(functx, fam, c)
        jf, jargs = _step(jax, fam, c)
        got, want = _leaves64(functx, fx(*fargs)), _leaves64(jax, jf(*jargs))
        rec["err"] = max(
            float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30)) for g, w in zip(got, want)
        )
        from gpu import triton_exe

        exe = triton_exe(fx)
        rec["launches"] = exe.n_launches
        rec["graphs"] = bool(exe.use_graphs)
        rec["plan_check"] = _plan_checks(fx, fargs, exe, rt, 3 if args.sizes == "tiny" else 20)
        n = args.calls
        plans = getattr(exe, "_plans", None) is not None and not exe.use_graphs
        libs = [("fx", fx, fargs, functx, True), ("jax", jf, jargs, jax, None)]
        if plans:  # (the plans' own effect, in this process: functx without them)
            libs.insert(1, ("fx_noplan", fx, fargs, functx, False))
        times = {lib[0]: [] for lib in libs}
        gcw = _GcWatch()
        for r in range(args.rounds):  # the libraries alternating, in another order each round
            for lib, f, a, m, on in libs[r % len(libs) :] + libs[: r % len(libs)]:
                if on is not None and hasattr(rt, "LAUNCH_PLANS"):
                    rt.LAUNCH_PLANS = on
                with gcw:
                    w, h = _times(lambda: f(*a), m.block_until_ready, n)
                    lw = _times(_loop(f, a, m), m.block_until_ready, n)[0]
                gc.disable()
                try:
                    w_off = _times(lambda: f(*a), m.block_until_ready, n)[0]
                finally:
                    gc.enable()
                times[lib].append((w * 1e6, h * 1e6, lw * 1e6, w_off * 1e6))
        if hasattr(rt, "LAUNCH_PLANS"):
            rt.LAUNCH_PLANS = True
        for lib, ts in times.items():
            rec[lib] = dict(zip(("wall", "host", "loop", "wall_gc_off"), np.median(ts, 0)))
        rec["gc"] = {"collections": gcw.n, "ms": round(gcw.ms, 2)}
        rec["stages"] = (
            _stages(fx, fargs, exe, n) if name in args.stage_workloads.split(",") else {}
        )
        rec["calib_us_end"] = _calibrate()
        rec["cpu_end"] = _machine().get("cpu")
        print("STAGES " + json.dumps(rec), flush=True)


def _parent(args):
    """Run --stages' processes, trees alternating, and summarise them."""
    import json
    import subprocess

    trees = [("this", HERE)] + ([("base", os.path.abspath(args.base))] if args.base else [])
    recs = []
    for r in range(args.procs):
        for label, tree in trees if r % 2 == 0 else trees[::-1]:
            cmd = [sys.executable, os.path.abspath(__file__), "--child", "--tree", label]
            cmd += ["--workloads", args.workloads, "--calls", str(args.calls)]
            cmd += ["--rounds", str(args.rounds), "--sizes", args.sizes]
            cmd += ["--stage-workloads", args.stage_workloads if label == "this" else ""]
            cmd += ["--pin", str(args.pin)]
            path = os.pathsep.join([tree] + [p for p in [os.environ.get("PYTHONPATH")] if p])
            env = dict(os.environ, PYTHONPATH=path)  # (the tree first, then what was there)
            env["FUNCTX_BENCH_ROOT"] = tree
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tree)
            lines = [ln[7:] for ln in p.stdout.splitlines() if ln.startswith("STAGES ")]
            if p.returncode or not lines:
                print(f"process {label} round {r} failed ({p.returncode}):\n{p.stderr[-3000:]}")
            recs += [json.loads(ln) for ln in lines]
    _summary(recs)


def _summary(recs):
    print(
        "\n| workload | tree | pid | cpu start-end | MHz | load | calib us start/end "
        "| functx wall / host / loop / GC off | JAX wall / host / loop / GC off "
        "| functx/JAX | GC: collections, ms in timed calls "
        "| functx without launch plans, same process: wall / host / loop / GC off | check |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in recs:
        fx, jx = r["fx"], r["jax"]
        print(
            f"| {r['workload']} | {r['tree']} | {r['pid']} | {r.get('cpu')}-{r.get('cpu_end')} "
            f"| {r.get('mhz', 0):.0f} | {r['load']:.1f} "
            f"| {r['calib_us']:.0f}/{r['calib_us_end']:.0f} "
            f"| {fx['wall']:.1f} / {fx['host']:.1f} / {fx['loop']:.1f} / {fx['wall_gc_off']:.1f} "
            f"| {jx['wall']:.1f} / {jx['host']:.1f} / {jx['loop']:.1f} / {jx['wall_gc_off']:.1f} "
            f"| {fx['wall'] / jx['wall']:.2f} | {r['gc']['collections']}, {r['gc']['ms']} "
            + (
                f"| {r['fx_noplan']['wall']:.1f} / {r['fx_noplan']['host']:.1f} / "
                f"{r['fx_noplan']['loop']:.1f} / {r['fx_noplan']['wall_gc_off']:.1f} "
                if "fx_noplan" in r
                else "| - "
            )
            + f"| err {r['err']:.1e}; {r['launches']} launches; {r['plan_check']}; "
            f"functx of {r['functx']} |"
        )
    print(
        "\n| workload | tree | processes | functx wall us: median (best-worst) "
        "| JAX wall us: median (best-worst) | functx/JAX per process: median (range) "
        "| functx median / JAX's best in the run |"
    )
    print("|---|---|---|---|---|---|---|")
    notes = []
    for name in dict.fromkeys(r["workload"] for r in recs):
        rows = [r for r in recs if r["workload"] == name]
        jbest = min(r["jax"]["wall"] for r in rows)
        for tree in dict.fromkeys(r["tree"] for r in rows):
            rs = [r for r in rows if r["tree"] == tree]
            fw = [r["fx"]["wall"] for r in rs]
            jw = [r["jax"]["wall"] for r in rs]
            q = [a / b for a, b in zip(fw, jw)]
            print(
                f"| {name} | {tree} | {len(rs)} "
                f"| {np.median(fw):.1f} ({min(fw):.1f}-{max(fw):.1f}) "
                f"| {np.median(jw):.1f} ({min(jw):.1f}-{max(jw):.1f}) "
                f"| {np.median(q):.2f} ({min(q):.2f}-{max(q):.2f}) | {np.median(fw) / jbest:.2f} |"
            )
            nop = [r["fx_noplan"]["wall"] / r["fx"]["wall"] for r in rs if "fx_noplan" in r]
            if nop:
                notes.append(
                    f"{name}, {tree}: functx's wall without launch plans / with them, in the "
                    f"same process: median {np.median(nop):.2f}, "
                    f"range {min(nop):.2f}-{max(nop):.2f}"
                )
    print("\n".join([""] + notes))
    for r in recs:
        if r["stages"]:
            print(
                f"\n{r['workload']} ({r['tree']}, pid {r['pid']}): host path by stage, "
                "us per call (wall / CPU), each stage alone"
            )
            for k, (w, c) in r["stages"].items():
                print(f"  {k:<40} {w:8.2f} / {c:8.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default="dpsgd,mlp_sgd")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--rows", type=int, default=30)
    ap.add_argument("--kernels", action="store_true", help="torch.profiler kernel tables too")
    ap.add_argument("--ab", action="store_true", help="compare VARIANTS (see the docstring)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of --ab")
    ap.add_argument("--stages", action="store_true", help="the host path by stage (docstring)")
    ap.add_argument("--base", default="", help="--stages: another tree to alternate with")
    ap.add_argument("--procs", type=int, default=3, help="--stages: processes per tree")
    ap.add_argument("--stage-workloads", default="kls_momentum", help="--stages: staged ones")
    ap.add_argument("--sizes", default="gpu", help="workloads.py's sizes (tiny: a dry run)")
    ap.add_argument("--pin", type=int, default=-1, help="--stages: run each process on this CPU")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tree", default="this", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        if args.pin >= 0:  # (every process on one CPU: is the spread between them placement?)
            os.sched_setaffinity(0, {args.pin})
        return _child(args)
    if args.stages:
        return _parent(args)

    import jax

    import functx

    table = {name: (fam, c) for name, fam, c in wl.workload_list("gpu")}
    if args.ab:
        rows = []
        for name in args.workloads.split(","):
            fam, c = table[name]
            rows += _ab(name, fam, c, args, _step(jax, fam, c))
        print("\n| workload | version | launches | wall us | host us | GPU us | loop wall us |")
        print("|---|---|---|---|---|---|---|")
        for name, label, n, w, h, g, lw in rows:
            print(
                f"| {name} | {label} | {n} | {w * 1e6:.1f} | {h * 1e6:.1f} | {g * 1e6:.1f} "
                f"| {lw * 1e6:.1f} |"
            )
        return
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
        fw, fh = _times(lambda: fx(*fargs), functx.block_until_ready, args.calls)
        jw, jh = _times(lambda: jf(*jargs), jax.block_until_ready, args.calls)
        fsync, jsync = functx.block_until_ready, jax.block_until_ready
        fg = _gpu_time(lambda: fx(*fargs), fsync)
        jg = _gpu_time(lambda: jf(*jargs), jsync)
        fl = jl = flg = jlg = 0.0
        copied = "-"
        if name in LOOPS:
            before = {id(g): getattr(g, "calls", 0) for g in _copy_graphs()}
            floop = _loop(fx, fargs, functx)
            fl = _times(floop, fsync, args.calls)[0]
            flg = _gpu_time(floop, fsync)
            used = [g for g in _copy_graphs() if getattr(g, "calls", 0) != before.get(id(g), 0)]
            copied = ",".join(f"{g.copied}/{len(g.static_in)}" for g in used) or "?"
            jloop = _loop(jf, jargs, jax)
            jl = _times(jloop, jsync, args.calls)[0]
            jlg = _gpu_time(jloop, jsync)
        rows.append((name, fw, fh, fg, jw, jh, jg, fl, flg, jl, jlg, copied))
        _host_profile(name, fx, fargs, args)
        if args.kernels:
            _kernel_tables(name, (("functx", fx, fargs, functx), ("jax", jf, jargs, jax)), args)
    print(
        "\n| workload | functx wall / host / GPU us | JAX wall / host / GPU us "
        "| training loop functx wall / GPU us | JAX wall / GPU us | arguments copied in |"
    )
    print("|---|---|---|---|---|---|")
    us = 1e6
    for name, fw, fh, fg, jw, jh, jg, fl, flg, jl, jlg, copied in rows:
        print(
            f"| {name} | {fw * us:.1f} / {fh * us:.1f} / {fg * us:.1f} "
            f"| {jw * us:.1f} / {jh * us:.1f} / {jg * us:.1f} "
            f"| {fl * us:.1f} / {flg * us:.1f} | {jl * us:.1f} / {jlg * us:.1f} | {copied} |"
        )


if __name__ == "__main__":
    main()
