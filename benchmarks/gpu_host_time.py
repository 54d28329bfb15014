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
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import workloads as wl  # noqa: E402

LOOPS = ("mlp_sgd", "dpsgd", "cnn", "kls_momentum")  # steps returning (loss, new first argument)


def _step(jx, family, c):
    args = wl.inputs(family, c)
    dev = jx.devices("gpu")[0]
    dargs = jx.tree_util.tree_map(lambda a: jx.device_put(a, dev), args)
    fn = jx.jit(wl.program(jx, family, c))
    return fn, dargs


def _times(step, sync, calls):
    """Seconds per call of ``step()`` run back to back (median of 5 loops of ``calls``): the wall
    time ended by one synchronisation, and the host time of the calls alone."""
    for _ in range(20):
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

    from functx.lowering.triton import dot, program

    modules = {"dot": dot, "program": program}

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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default="dpsgd,mlp_sgd")
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--rows", type=int, default=30)
    ap.add_argument("--kernels", action="store_true", help="torch.profiler kernel tables too")
    ap.add_argument("--ab", action="store_true", help="compare VARIANTS (see the docstring)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds of --ab")
    args = ap.parse_args()

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
