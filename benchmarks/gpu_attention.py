"""Flash attention on the GPU (issue 20 item 5): functx's ``jit`` with the attention rewrite
(functx/transforms/attention.py, kernels in functx/lowering/triton/attention.py) and without it,
against ``jax.jit``, on one CUDA GPU. Self-contained:
``PYTHONPATH=. python benchmarks/gpu_attention.py`` (``--quick``: one minute; ``--smoke``: tiny
shapes in Triton's interpreter on the CPU, a check of this script; ``--sweep``: block sizes).

Cases: the GPT block SGD step of benchmarks/workloads.py (pre-LN, causal attention written in
plain ``jnp``, GELU MLP) at B=8 T=1024 d=768 H=12 in float32 and bfloat16 and at B=4 T=2048
d=1536 H=24 (float32), and causal attention alone (B=8 H=12 T=1024 hd=64), forward and
``value_and_grad`` of a weighted sum, in float32 and bfloat16.

Each (library, case) runs in its own process, so each peak memory figure is that run's alone:
functx's from torch's allocator (``max_memory_allocated`` above the inputs), JAX's from
``memory_stats()`` (``peak_bytes_in_use`` above the inputs; XLA_PYTHON_CLIENT_PREALLOCATE=false).
1. Correctness first: every output against JAX's (relative L2 error; float32: both sides take
   TF32 products; bfloat16 against JAX's bfloat16 run) and, for functx with the rewrite, the
   number of flash-attention equations in the compiled program (1 forward, 2 with a gradient).
2. Timings: the median of 5 loops of n calls (n from one call's time), CUDA events for functx,
   ``block_until_ready`` for JAX; ms per call. The table: JAX, functx with and without the
   rewrite, the speed-up over JAX, peak memory (MiB).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # (torch shares the GPU)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

CASES = {
    "gpt f32 B8 T1024 d768": ("gpt", dict(B=8, T=1024, d=768, H=12, dtype="float32")),
    "gpt bf16 B8 T1024 d768": ("gpt", dict(B=8, T=1024, d=768, H=12, dtype="bfloat16")),
    "gpt f32 B4 T2048 d1536": ("gpt", dict(B=4, T=2048, d=1536, H=24, dtype="float32")),
    "attn fwd f32": ("fwd", dict(B=8, H=12, T=1024, hd=64, dtype="float32")),
    "attn grad f32": ("grad", dict(B=8, H=12, T=1024, hd=64, dtype="float32")),
    "attn fwd bf16": ("fwd", dict(B=8, H=12, T=1024, hd=64, dtype="bfloat16")),
    "attn grad bf16": ("grad", dict(B=8, H=12, T=1024, hd=64, dtype="bfloat16")),
}
QUICK = ("gpt f32 B8 T1024 d768", "gpt bf16 B8 T1024 d768", "attn grad f32")
SMOKE = {
    "gpt": dict(B=2, T=32, d=32, H=2),
    "fwd": dict(B=1, H=2, T=32, hd=16),
    "grad": dict(B=1, H=2, T=32, hd=16),
}
LIBS = ("jax", "functx", "functx-off")
# block sizes the sweep tries: (BLOCK_M, BLOCK_N, num_warps, num_stages) for head dim <= 64
SWEEP_FWD = [
    (128, 64, 4, 3),
    (128, 64, 8, 3),
    (64, 64, 4, 3),
    (128, 128, 8, 2),
    (128, 32, 4, 4),
    (64, 32, 4, 4),
    (128, 64, 4, 2),
]
SWEEP_BWD = [
    (64, 64, 4, 2),
    (64, 64, 8, 2),
    (64, 64, 4, 3),
    (32, 64, 4, 2),
    (64, 32, 4, 2),
    (128, 64, 8, 2),
    (64, 128, 8, 2),
    (32, 32, 4, 3),
]


def _attention(jx, c):
    jnp = jx.numpy
    T, hd = c["T"], c["hd"]

    def attn(q, k, v):
        s = (q @ k.transpose(0, 1, 3, 2)) * (1.0 / math.sqrt(hd))
        s = jnp.where(jnp.tril(jnp.ones((T, T), bool)), s, -jnp.inf)
        return jx.nn.softmax(s, axis=-1) @ v

    return attn


def program(jx, family, c):
    import workloads

    if family == "gpt":
        return workloads.program(jx, "gpt", c)
    attn = _attention(jx, c)
    if family == "fwd":
        return attn

    def loss(q, k, v, w):
        return (attn(q, k, v).astype(np.float32) * w).sum()

    return jx.value_and_grad(loss, argnums=(0, 1, 2))


def inputs(family, c):
    import workloads

    if family == "gpt":
        return workloads.inputs("gpt", c)
    rng = np.random.default_rng(0)
    shape = (c["B"], c["H"], c["T"], c["hd"])
    qkv = [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]
    w = rng.standard_normal(shape).astype(np.float32)
    return (*qkv, w) if family == "grad" else tuple(qkv)


# --- the worker: one library, one case, in this process ------------------------------------------
REPS = 5  # timing loops per figure (1 under --smoke: the interpreter is slow)


def _time(call, sync, budget=2.0):
    out = call()
    sync(out)
    t0 = time.perf_counter()
    out = call()
    sync(out)
    n = max(1, min(200, int(budget / 5 / max(time.perf_counter() - t0, 1e-6))))
    ts = []
    for _ in range(REPS):
        sync(out)
        t0 = time.perf_counter()
        for _ in range(n):
            out = call()
        sync(out)
        ts.append((time.perf_counter() - t0) / n)
    return statistics.median(ts)


def _profile(jx, fn, dargs, calls=5):
    """torch.profiler's kernel table of ``calls`` calls (CUPTI sees every kernel of the
    process)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):  # (compiled, captured, warm)
        fn(*dargs)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn(*dargs)
        torch.cuda.synchronize()
    return prof.key_averages().table(
        sort_by="cuda_time_total", row_limit=25, max_name_column_width=70
    )


def worker(lib, name, save, sweep, prof=False):
    family, c = CASES[name]
    args = inputs(family, c)
    bf16 = c["dtype"] == "bfloat16"
    rec = {}
    if lib == "jax":
        import jax as jx

        dargs = jx.device_put(args)
        if bf16:
            dargs = jx.tree_util.tree_map(
                lambda a: a.astype(jx.numpy.bfloat16) if a.dtype == np.float32 else a, dargs
            )
        jx.block_until_ready(dargs)
        stats = jx.devices()[0].memory_stats() or {}
        base = stats.get("bytes_in_use", 0)
        fn = jx.jit(program(jx, family, c))

        def sync(out):
            jx.block_until_ready(out)

    else:
        import torch

        import functx as jx
        from functx.transforms import attention

        attention.ENABLED = lib == "functx"
        dev = jx.devices("gpu")[0]
        dargs = jx.tree_util.tree_map(lambda a: jx.device_put(a, dev), args)
        if bf16:
            dargs = jx.tree_util.tree_map(
                lambda a: a.astype(jx.numpy.bfloat16) if a.dtype == np.float32 else a, dargs
            )
        cuda = torch.cuda.is_available()
        if cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        fn = jx.jit(program(jx, family, c))
        low = fn.lower(*dargs)
        rec["flash"] = sum(e.prim.name.startswith("flash") for e in low.jaxpr.jaxpr.eqns)

        def sync(out):
            if cuda:
                torch.cuda.synchronize()
            else:
                jx.block_until_ready(out)

    t0 = time.perf_counter()
    out = fn(*dargs)
    sync(out)
    rec["first_s"] = time.perf_counter() - t0
    leaves = [np.asarray(jx.device_get(o.astype(np.float32)), np.float64) for o in _leaves(jx, out)]
    np.savez(save, *leaves)
    del out
    rec["ms"] = 1e3 * _time(lambda: fn(*dargs), sync)
    if lib == "jax":
        st = jx.devices()[0].memory_stats() or {}
        rec["mib"] = (st.get("peak_bytes_in_use", 0) - base) / 2**20 if st else None
    elif cuda:
        rec["mib"] = (torch.cuda.max_memory_allocated() - base) / 2**20
    if prof and lib != "jax" and cuda and name == "gpt f32 B8 T1024 d768":
        print(f"--- {name}: {lib}, kernels of 5 calls\n{_profile(jx, fn, dargs)}", flush=True)
    if sweep and lib == "functx" and family == "grad" and cuda:
        rec["sweep"] = _sweep(c)
    return rec


def _leaves(jx, out):
    return jx.tree_util.tree_leaves(out)


def _sweep(c):
    """The kernels alone (``FlashStep.torch`` on torch tensors, CUDA events): ms of the forward
    and of the backward, and TFLOP/s (causal: half the products), for each block configuration
    of the head-dimension-64 row of the forward's and the backward's tables."""
    import torch

    import functx.numpy as fnp
    from functx.core import ShapedArray
    from functx.lowering.triton import attention as tattn
    from functx.transforms import attention as A

    B, H, T, hd = c["B"], c["H"], c["T"], c["hd"]
    dt = np.dtype(fnp.bfloat16) if c["dtype"] == "bfloat16" else np.dtype(np.float32)
    tdt = torch.bfloat16 if c["dtype"] == "bfloat16" else torch.float32
    q, k, v, do = (torch.randn(B * H * T * hd, device="cuda", dtype=tdt) for _ in range(4))
    o = torch.empty_like(q)
    lse = torch.empty(B * H * T, device="cuda", dtype=torch.float32)
    grads = [torch.empty_like(q) for _ in range(3)]
    av = ShapedArray((B, H, T, hd), dt)
    canonical = (0, (H * T * hd, T * hd, hd, 1))
    p = {
        "scale": 1 / math.sqrt(hd),
        "causal": True,
        "shape": (B, H, T, T, hd),
        "views": (canonical,) * 3,
    }
    fwd = tattn.FlashStep(A.flash_attention_p, p, [av] * 3, A._fwd_abstract(av, av, av, **p), True)
    pb = {**p, "views": (canonical,) * 4}
    lav = ShapedArray((B, H, T), np.dtype(np.float32))
    bwd = tattn.FlashStep(A.flash_attention_bwd_p, pb, [av, av, av, av, lav, av], [av] * 3, True)
    flops = 4 * B * H * T * T * hd / 2

    def timed(fn, n=20):
        fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(5):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(n):
                fn()
            b.record()
            b.synchronize()
            ts.append(a.elapsed_time(b) / n)
        return statistics.median(ts)

    res = {}
    kind = "float32" if tdt == torch.float32 else "half"
    fwd0, bwd0 = dict(tattn.FWD_BLOCKS[kind]), dict(tattn.BWD_BLOCKS[kind])
    for table, configs, key in (
        (tattn.FWD_BLOCKS[kind], SWEEP_FWD, "fwd"),
        (tattn.BWD_BLOCKS[kind], SWEEP_BWD, "bwd"),
    ):
        for cfg in configs:
            table[64] = cfg
            try:
                if key == "fwd":
                    ms = timed(lambda: fwd.torch([q, k, v], [o, lse]))
                    tf = flops / ms / 1e9
                else:
                    fwd.torch([q, k, v], [o, lse])
                    ms = timed(lambda: bwd.torch([q, k, v, o, lse, do], grads))
                    tf = 2.5 * flops / ms / 1e9
                res[f"{key} {cfg}"] = f"{ms:.3f} ms, {tf:.0f} TFLOP/s"
            except Exception as e:  # (a config that does not fit: shared memory, registers)
                res[f"{key} {cfg}"] = f"{type(e).__name__}: {str(e)[:80]}"
        tattn.FWD_BLOCKS[kind].update(fwd0)
        tattn.BWD_BLOCKS[kind].update(bwd0)
    return res


# --- the parent: one process per (library, case), the checks, the table ------------------------
def _rel(got, want):
    if got.shape != want.shape:
        return float("inf")
    n = np.linalg.norm(want.ravel())
    return float(np.linalg.norm((got - want).ravel()) / n) if n else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="three cases (about a minute)")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes, Triton's interpreter")
    ap.add_argument("--sweep", action="store_true", help="also time block-size configurations")
    ap.add_argument("--only", default="", help="comma-separated case names")
    ap.add_argument("--profile", action="store_true", help="kernel tables of the float32 GPT step")
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.smoke:
        global REPS
        REPS = 1
        os.environ["TRITON_INTERPRET"] = "1"
        for fam, c in CASES.values():
            c.update(SMOKE[fam])
    if a.worker:
        lib, name, save = a.worker
        try:
            rec = worker(lib, name, save, a.sweep, a.profile)
        except Exception as e:
            rec = {"error": f"{type(e).__name__}: {str(e)[:400]}"}
        print("RESULT " + json.dumps(rec), flush=True)
        return
    names = [n for n in CASES if not a.only or n in a.only.split(",")]
    if a.quick:
        names = [n for n in names if n in QUICK]
    try:
        import torch

        dev = torch.cuda.get_device_name() if torch.cuda.is_available() else "no CUDA GPU"
    except ImportError:
        dev = "no torch"
    print(f"# gpu_attention.py on {dev}{' (smoke: interpreter)' if a.smoke else ''}")
    tmp = tempfile.mkdtemp()
    rows = []
    for name in names:
        recs = {}
        for lib in LIBS:
            save = os.path.join(tmp, f"{lib}_{name.replace(' ', '_')}.npz")
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib, name, save]
            cmd += ["--smoke"] * a.smoke + ["--sweep"] * a.sweep + ["--profile"] * a.profile
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
            tables = p.stdout[: p.stdout.find("RESULT ")] if line else ""
            if tables.strip():
                print(tables, flush=True)
            rec = json.loads(line[-1][7:]) if line else {"error": p.stderr[-600:]}
            rec["save"] = save
            recs[lib] = rec
            if "error" in rec:
                print(f"{name} {lib}: {rec['error']}", flush=True)
        want = np.load(recs["jax"]["save"]) if "error" not in recs["jax"] else None
        for lib in LIBS[1:]:
            r = recs[lib]
            if want is not None and "error" not in r:
                got = np.load(r["save"])
                r["err"] = max(_rel(got[k], want[k]) for k in want.files)
        rows.append((name, recs))
        print(json.dumps({"case": name, **recs}), flush=True)
    print()
    head = "| case | JAX ms | functx ms (flash) | functx ms (no flash) | JAX / functx | "
    head += "peak MiB JAX / flash / no flash | rel. err flash / no flash | flash eqns | first s |"
    print(head)
    print("|" + "---|" * 9)

    def f(x, fmt):
        return "-" if x is None else fmt.format(x)

    for name, recs in rows:
        j, on, off = (recs[lib] for lib in LIBS)
        ratio = j.get("ms") / on["ms"] if j.get("ms") and on.get("ms") else None
        mem = "/".join(f(r.get("mib"), "{:.0f}") for r in (j, on, off))
        err = "/".join(f(r.get("err"), "{:.1e}") for r in (on, off))
        first = "/".join(f(r.get("first_s"), "{:.1f}") for r in (j, on, off))
        print(
            f"| {name} | {f(j.get('ms'), '{:.3f}')} | {f(on.get('ms'), '{:.3f}')} | "
            f"{f(off.get('ms'), '{:.3f}')} | {f(ratio, '{:.2f}x')} | {mem} | {err} | "
            f"{on.get('flash', '-')} | {first} |"
        )
    if a.sweep:
        for name, recs in rows:
            if "sweep" in recs["functx"]:
                print(f"\nblock sweep, {name} (the kernels alone):")
                for k, v in recs["functx"]["sweep"].items():
                    print(f"  {k}: {v}")


if __name__ == "__main__":
    main()
