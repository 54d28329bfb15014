"""Where the GPU time of issue 20's small training steps goes, functx against JAX, and how fast
each of their matrix products runs as cuBLAS and as the Triton GEMM of
``functx/lowering/triton/gemm.py``.

Run from the repository root on a CUDA machine::

    python benchmarks/gpu_step_kernels.py [--workloads mlp_sgd,cnn] [--sweep] [--ab]

For each step of ``benchmarks/workloads.py`` (GPU sizes) it checks functx against JAX first (the
largest relative 2-norm difference of the loss and new parameters, and PASS/FAIL at ``--tol``),
then prints for each library: wall us per step (median of ``--rounds`` alternating rounds of
back-to-back calls), GPU us per call and launches per step (torch.profiler: CUPTI sees JAX's
kernels too) and a table of the kernels (name, launches per step, us per step).

``--ab``: functx with consecutive independent launches apart, as main built them before session
38 (``AB``'s switches set while compiling), and joined in one launch (``triton/combine.py``)
where the parts have the same warps (the default) or any, in the same process, alternating with
JAX; each version's results are also compared with the first version's (largest difference
relative to the largest element, per output) and checked to give the same bits over
``--repeat`` calls. (Session 37's A/B, its GEMM column sums and spread rows, is in
RESULTS.md.)
``--ab-gemm``: session 36's A/B: products on cuBLAS (``gemm.TRITON_GEMM = False``), Triton GEMMs
without epilogues (``dot.EPILOGUES = False``) and with them.

``--sweep --ab --pick``: the sweep first, then the A/B with ``gemm.TABLE`` replaced by the
sweep's winners (each product that a Triton configuration ran at least 5% faster than cuBLAS).

``--sweep``: every matrix product of the steps' generated programs (their ``_fx_dot`` lines),
timed as cuBLAS (``runtime.matmul``, TF32 as the program does) and as Triton GEMMs of the
configurations ``candidates`` lists and of ``gemm.TABLE``'s choice (with TF32 operands rounded,
and truncated), each checked against the float64 product first (errors relative to its largest
element, ``--gemm-tol``); each call is
timed inside a CUDA graph of 20 calls (as the steps replay theirs). The Triton kernels compile in
``--jobs`` processes first. It prints, per product, cuBLAS's time and the best configurations.

``--dry``: Triton's CPU interpreter as the GPU at small sizes (the checks and the sweep's code
paths only; JAX's side is its CPU; no timing is meaningful).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # (torch shares the GPU)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import workloads as wl  # noqa: E402

from functx.lowering.triton import combine, dot, gemm  # noqa: E402

# --ab: each version's switches while compiling (the first is main before session 38)
AB = [
    ("functx launches apart", {(combine, "COMBINE"): False}),
    ("functx one launch, same warps", {}),
    ("functx one launch, any warps", {(combine, "SAME_WARPS"): False}),
]
AB_GEMM = [
    ("functx cuBLAS", {(gemm, "TRITON_GEMM"): False}),
    ("functx Triton GEMM, no epilogues", {(dot, "EPILOGUES"): False}),
    ("functx Triton GEMM", {}),
]

DRY_SIZES = {
    "mlp_sgd": ("mlp", dict(sizes=(64, 48, 40, 10), batch=24)),
    "cnn": ("cnn", dict(B=4, c=(4, 8))),
    "kls_momentum": ("kls", dict(n=16)),
    "hmm_em": ("hmm", dict(T=12, S=3, M=2, steps=2)),
}


# --- the steps ---------------------------------------------------------------------------------
def _steps(args):
    if args.dry:
        return {name: DRY_SIZES[name] for name in args.workloads.split(",")}
    table = {name: (fam, c) for name, fam, c in wl.workload_list("gpu")}
    return {name: table[name] for name in args.workloads.split(",")}


def _build(jx, fam, c, dev):
    fn = jx.jit(wl.program(jx, fam, c))
    dargs = jx.tree_util.tree_map(lambda a: jx.device_put(a, dev), wl.inputs(fam, c))
    return fn, dargs


def _flat(jx, out):
    return [np.asarray(x, np.float64) for x in jx.tree_util.tree_leaves(out)]


def _rel(got, want) -> float:
    return max(
        float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30)) for g, w in zip(got, want)
    )


def _wall(step, sync, calls) -> float:
    """Seconds per call of back-to-back ``step()`` calls ended by one synchronisation."""
    for _ in range(10):
        out = step()
    sync(out)
    t0 = time.perf_counter()
    for _ in range(calls):
        out = step()
    sync(out)
    return (time.perf_counter() - t0) / calls


def _kernels(step, sync, n=20):
    """``(GPU us per call, launches per call, [(name, launches, us) per call])`` of ``step()``
    from torch.profiler's device events."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    sync(step())
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            out = step()
        sync(out)
        torch.cuda.synchronize()
    rows = [
        (e.key, e.count / n, e.self_device_time_total / n)
        for e in prof.key_averages()
        if getattr(e, "device_type", None) == DeviceType.CUDA and e.self_device_time_total > 0
    ]
    rows.sort(key=lambda r: -r[2])
    return sum(r[2] for r in rows), sum(r[1] for r in rows), rows


def _launches_of(fx, fargs) -> int:
    text = fx.lower(*fargs).as_text()
    run = text.split("\ndef run(")[1] if "\ndef run(" in text else text
    return sum(bool(re.match(r"    (_L\d+|_fx_\w+)\(", ln)) for ln in run.splitlines())


def steps(args):
    import jax

    import functx

    fdev = functx.devices("gpu")[0]
    jdev = jax.devices("cpu" if args.dry else "gpu")[0]
    # (label, {(module, name): value} set while compiling)
    versions = AB if args.ab else AB_GEMM if args.ab_gemm else [("functx", {})]
    summary = []
    for name, (fam, c) in _steps(args).items():
        jf, jargs = _build(jax, fam, c, jdev)
        want = _flat(jax, jf(*jargs))
        runs, first = [], None
        for label, switches in versions:
            saved = {k: getattr(*k) for k in switches}
            try:
                for (mod, attr), v in switches.items():
                    setattr(mod, attr, v)
                fx, fargs = _build(functx, fam, c, fdev)
                got = _flat(functx, fx(*fargs))
                n = _launches_of(fx, fargs)
            finally:
                for (mod, attr), v in saved.items():
                    setattr(mod, attr, v)
            err = _rel(got, want)
            ok = "PASS" if err <= args.tol else "FAIL"
            first = got if first is None else first
            apart = max(
                float(np.abs(g - f).max() / max(np.abs(f).max(), 1e-30)) for g, f in zip(got, first)
            )
            same = sum(
                all(np.array_equal(a, b) for a, b in zip(_flat(functx, fx(*fargs)), got))
                for _ in range(args.repeat)
            )
            print(
                f"{name} {label}: {n} launches; vs JAX {err:.2e} {ok}; vs {versions[0][0]} "
                f"{apart:.1e} (of the largest element); same bits {same}/{args.repeat} calls",
                flush=True,
            )
            runs.append((label, fx, fargs, functx.block_until_ready))
        if args.dry:
            continue
        runs.append(("JAX", jf, jargs, jax.block_until_ready))
        walls = {label: [] for label, *_ in runs}
        for _ in range(args.rounds):
            for label, fn, a, sync in runs:
                walls[label].append(_wall(lambda fn=fn, a=a: fn(*a), sync, args.calls))
        for label, fn, a, sync in runs:
            gpu, launches, rows = _kernels(lambda fn=fn, a=a: fn(*a), sync)
            wall = float(np.median(walls[label])) * 1e6
            summary.append((name, label, wall, gpu, launches))
            head = f"\n### {name} {label}: wall {wall:.1f} us, GPU {gpu:.1f} us"
            print(f"{head}, {launches:.0f} kernels per step")
            print("| kernel | per step | us per step |\n|---|---|---|")
            for key, count, us in rows[: args.rows]:
                print(f"| {key[:70]} | {count:g} | {us:.2f} |")
    if summary:
        print("\n| step | version | wall us | GPU us | kernels | vs JAX (wall) |")
        print("|---|---|---|---|---|---|")
        jwall = {name: w for name, label, w, *_ in summary if label == "JAX"}
        for name, label, wall, gpu, launches in summary:
            print(
                f"| {name} | {label} | {wall:.1f} | {gpu:.1f} | {launches:.0f} "
                f"| {jwall[name] / wall:.2f}x |"
            )


# --- the product sweep ---------------------------------------------------------------------------
_B = "(True|False)"
_DOT = re.compile(rf"_fx_dot\(\w+, \w+, \w+, (\d+), (\d+), (\d+), (\d+), {_B}, {_B}, {_B}\)")


def products(args) -> list:
    """The distinct products (``gemm.Product``) of the steps' generated programs."""
    import functx

    dev = functx.devices("gpu")[0]
    found: dict = {}
    saved, gemm.TRITON_GEMM = gemm.TRITON_GEMM, False
    try:
        for fam, c in _steps(args).values():
            fx, fargs = _build(functx, fam, c, dev)
            for m in _DOT.finditer(fx.lower(*fargs).as_text()):
                b, mm, k, n = (int(x) for x in m.groups()[:4])
                ta, tb, tf32 = (x == "True" for x in m.groups()[4:])
                found[gemm.Product(b, mm, k, n, ta, tb, "float32", tf32)] = None
    finally:
        gemm.TRITON_GEMM = saved
    return list(found)


def _p2(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


def candidates(p) -> list:
    """Configurations worth timing for ``p``: tiles no larger than the product (16 at least),
    contraction slices that bring the programs near one or two per SM of an H100 (132), shared
    memory of the pipeline within 160 KiB."""
    out = []
    for bm in (16, 32, 64, 128):
        for bn in (16, 32, 64, 128):
            if bm > max(16, _p2(p.m)) or bn > max(16, _p2(p.n)):
                continue
            tiles = p.batch * -(-p.m // bm) * -(-p.n // bn)
            for bk in (16, 32, 64, 128):
                if bk > max(16, _p2(p.k)) or (bk == 16 and p.k > 64) or (bk == 128 and p.k < 4096):
                    continue
                splits = {1}
                for want in (33, 66, 132, 264):
                    s = max(1, min(want // max(tiles, 1), p.k // (2 * bk)))
                    splits.add(1 << (s.bit_length() - 1))
                for split in sorted(splits):
                    progs = tiles * split
                    if progs < 8 or progs > 4096:
                        continue
                    warps = 8 if bm * bn >= 128 * 64 else (2 if bm * bn <= 32 * 32 else 4)
                    stages = 4 if bk <= 32 else 3
                    if stages * (bm + bn) * bk * 4 > 160 << 10:
                        continue
                    out.append(gemm.Config(bm, bn, bk, split, warps, stages))
    return out


def _module(path_dir, p, cfg, rounded=True):
    """The compiled-kernel module of ``(p, cfg)`` (written once, named by its source's hash),
    TF32 operands rounded or (``rounded`` False) truncated by the tensor cores."""
    defs, launches = gemm.kernels("kg", p, cfg, round_tf32=rounded)
    src = "import triton\nimport triton.language as tl\n\n\n" + "\n\n".join(defs)
    path = os.path.join(path_dir, "g" + hashlib.sha1(src.encode()).hexdigest()[:16] + ".py")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(src)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, launches


def _operands(p, dev, seed=0):
    import torch

    g = torch.Generator(device="cpu").manual_seed(seed)
    a = torch.randn(p.batch * p.m * p.k, generator=g).to(dev)
    b = torch.randn(p.batch * p.k * p.n, generator=g).to(dev)
    return a, b


def _triton_call(mod, launches, p, cfg, dev):
    """``call(a, b, out)``: the product's launches on flat tensors (a workspace of its own)."""
    import torch

    ws = torch.empty(max(1, gemm.workspace_elements(p, cfg)), dtype=torch.float32, device=dev)
    kern = [(getattr(mod, name), grid, params, w) for name, grid, params, w in launches]

    def call(a, b, out):
        bufs = {"a": a, "b": b, "out": out, "ws": ws}
        for k, grid, params, w in kern:
            k[grid](*[bufs[x] for x in params], num_warps=w)

    return call


def _cublas_call(p):
    from functx.lowering.triton import runtime

    def call(a, b, out):
        A = a.view(p.batch, p.k, p.m).transpose(1, 2) if p.ta else a.view(p.batch, p.m, p.k)
        B = b.view(p.batch, p.n, p.k).transpose(1, 2) if p.tb else b.view(p.batch, p.k, p.n)
        runtime.matmul(A, B, out.view(p.batch, p.m, p.n), p.tf32)

    return call


def _compile_some(job):
    """A worker: compile (launch once) each ``(product, config)`` of ``job`` into Triton's cache."""
    path_dir, triples, dry = job
    if dry:
        os.environ["TRITON_INTERPRET"] = "1"
    import torch

    dev = "cpu" if dry else "cuda"
    done = 0
    for p, cfg, rounded in triples:
        try:
            mod, launches = _module(path_dir, p, cfg, rounded)
            a, b = _operands(p, dev)
            out = torch.empty(p.batch * p.m * p.n, device=dev)
            _triton_call(mod, launches, p, cfg, dev)(a, b, out)
            done += 1
        except Exception as e:  # (reported; the main process skips what failed to compile)
            print(f"compile {p} {cfg}: {type(e).__name__}: {str(e)[:200]}", flush=True)
    if not dry:
        torch.cuda.synchronize()
    return done


def _graph_time(call, a, b, out, reps=20, rounds=7) -> float:
    """Microseconds per ``call(a, b, out)``, replayed inside a CUDA graph of ``reps`` calls
    (median of ``rounds`` replays)."""
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            call(a, b, out)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(reps):
            call(a, b, out)
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0.record()
        graph.replay()
        t1.record()
        t1.synchronize()
        times.append(t0.elapsed_time(t1) * 1e3 / reps)
    return float(np.median(times))


def sweep(args):
    import multiprocessing

    import torch

    prods = products(args)
    table = {p: gemm.choose(p) for p in prods}
    # (product, configuration, TF32 rounded): every candidate, and the table's both ways
    triples = [(p, cfg, True) for p in prods for cfg in candidates(p)]
    if args.dry:
        triples = [(p, cs[0], True) for p in prods for cs in [candidates(p)] if cs]
    triples += [(p, table[p], r) for p in prods if table[p] is not None for r in (True, False)]
    triples = list(dict.fromkeys(triples))
    print(f"\n## sweep: {len(prods)} products, {len(triples)} Triton kernels", flush=True)
    path_dir = tempfile.mkdtemp(prefix="fx_gemm_sweep_")
    t0 = time.perf_counter()
    jobs = [(path_dir, triples[i :: args.jobs], args.dry) for i in range(args.jobs)]
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        compiled = sum(pool.map(_compile_some, jobs))
    print(f"compiled {compiled} in {time.perf_counter() - t0:.1f} s", flush=True)
    dev = "cpu" if args.dry else "cuda"
    deadline = time.perf_counter() + args.sweep_seconds
    rows = []
    for p in prods:
        a, b = _operands(p, dev, seed=1)
        plain = gemm.reference(dataclasses.replace(p, tf32=False), a.cpu().numpy(), b.cpu().numpy())
        scale = float(np.abs(plain).max())

        def error(out):
            return float(np.abs(out.cpu().numpy().reshape(plain.shape) - plain).max()) / scale

        out = torch.empty(p.batch * p.m * p.n, device=dev)
        cub = _cublas_call(p)
        cub(a, b, out)
        cub_err = error(out)
        cub_us = float("nan") if args.dry else _graph_time(cub, a, b, out)
        timed, bad, mine = [], 0, {}
        for q, cfg, rounded in triples:
            if q != p or (time.perf_counter() > deadline and cfg != table[p]):
                continue
            mod, launches = _module(path_dir, p, cfg, rounded)
            call = _triton_call(mod, launches, p, cfg, dev)
            out.fill_(float("nan"))
            call(a, b, out)
            err = error(out)
            if not err <= args.gemm_tol:
                bad += 1
                print(f"FAIL {p} {cfg} rounded={rounded}: relative error {err:.1e}", flush=True)
                continue
            us = float("nan") if args.dry else _graph_time(call, a, b, out)
            if cfg == table[p]:
                mine[rounded] = (us, err)
            if rounded:
                timed.append((us, cfg, err))
        timed.sort(key=lambda t: t[0])
        rows.append((p, cub_us, cub_err, timed, mine))
        best = ", ".join(f"{cfg} {us:.2f}" for us, cfg, _ in timed[:4])
        mine_s = ", ".join(
            f"{'rounded' if r else 'truncated'} {u:.2f}" for r, (u, _) in mine.items()
        )
        print(
            f"{p.batch}x({p.m},{p.k})x({p.k},{p.n}) ta={p.ta:d} tb={p.tb:d}: "
            f"cuBLAS {cub_us:.2f} us; table {table[p]}: {mine_s}; "
            f"best of {len(timed)} ({bad} failed): {best}",
            flush=True,
        )
    print(
        "\n| product (batch, m, k, n, ta, tb) | cuBLAS us (error) | table's configuration "
        "| us (error) | truncated TF32 us (error) | best | us |"
    )
    print("|---|---|---|---|---|---|---|")
    picks = {}
    for p, cub_us, cub_err, timed, mine in rows:
        r, t = mine.get(True, (np.nan, np.nan)), mine.get(False, (np.nan, np.nan))
        us, cfg, _ = timed[0] if timed else (np.nan, None, None)
        print(
            f"| {p.batch}, {p.m}, {p.k}, {p.n}, {p.ta:d}, {p.tb:d} | {cub_us:.2f} ({cub_err:.1e}) "
            f"| {table[p]} | {r[0]:.2f} ({r[1]:.1e}) | {t[0]:.2f} ({t[1]:.1e}) | {cfg} | {us:.2f} |"
        )
        if timed and (args.dry or us * 1.05 < cub_us):
            picks[p] = cfg
    return picks


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workloads", default="mlp_sgd,cnn")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--rows", type=int, default=16)
    ap.add_argument("--tol", type=float, default=2e-2)
    ap.add_argument("--ab", action="store_true", help="launches apart, and joined (AB)")
    ap.add_argument("--ab-gemm", action="store_true", help="cuBLAS, GEMMs, GEMMs + epilogues")
    ap.add_argument("--repeat", type=int, default=50, help="calls checked for the same bits")
    ap.add_argument("--no-steps", action="store_true", help="the sweep only")
    ap.add_argument(
        "--pick", action="store_true", help="with --sweep --ab: the A/B uses the sweep's winners"
    )
    ap.add_argument("--sweep", action="store_true", help="time every product's configurations")
    ap.add_argument("--sweep-seconds", type=float, default=90.0)
    ap.add_argument("--gemm-tol", type=float, default=5e-3, help="TF32 products' max error")
    ap.add_argument("--jobs", type=int, default=max(1, min(14, (os.cpu_count() or 2) - 2)))
    ap.add_argument("--dry", action="store_true", help="Triton's interpreter, small sizes")
    args = ap.parse_args()
    if args.dry:
        os.environ["TRITON_INTERPRET"] = "1"
        args.jobs = min(args.jobs, 2)
    if args.sweep:
        picks = sweep(args)
        if args.ab and args.pick:  # (the A/B then runs the sweep's winners, shape by shape)
            gemm.TABLE[:] = [(lambda p, q=q: p == q, cfg) for q, cfg in picks.items()]
            print(f"\nTABLE for --ab: {len(picks)} products on Triton GEMMs", flush=True)
    if not args.no_steps:
        steps(args)


if __name__ == "__main__":
    main()
