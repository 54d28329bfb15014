"""The CPU workloads of the jit: functx.jit vs jax.jit vs torch.compile, in one process.

Each workload is checked for correctness first (functx against JAX), then timed: the median of
``--reps`` calls after warm-up. Prints time, effective GB/s (bytes that must move: inputs read once,
outputs written once) and the ratio of each peer's time to functx's (>1 means functx is faster).

    python benchmarks/jit_cpu.py [--quick] [--only NAME]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import functx
import functx.numpy as fnp
from functx import lax as flax, nn as fnn


def median_time(fn, reps, warmup=2):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _jax():
    try:
        import jax
        import jax.numpy as jnp

        return jax, jnp
    except ImportError:
        return None, None


def _torch():
    try:
        import torch

        return torch
    except ImportError:
        return None


# --- workloads: (name, make(np_module-like namespace) -> fn, inputs, bytes moved) ----------------
def layer_norm(m):
    def f(x):
        mu = m.mean(x, axis=-1, keepdims=True)
        var = m.mean((x - mu) ** 2, axis=-1, keepdims=True)
        return (x - mu) / m.sqrt(var + 1e-5)

    return f


def workloads(quick):
    rng = np.random.default_rng(0)
    r, c = (1024, 1024) if quick else (4096, 1024)
    x = rng.standard_normal((r, c)).astype(np.float32)
    n_gelu = 1 << (20 if quick else 24)
    g = rng.standard_normal(n_gelu).astype(np.float32)
    b_, l_, d_ = (4, 1024, 128) if quick else (8, 4096, 256)
    a = rng.uniform(0.5, 1.0, (b_, l_, d_)).astype(np.float32)
    bb = rng.standard_normal((b_, l_, d_)).astype(np.float32)
    nb = x.nbytes
    return [
        ("scale (x * 2.0, the bandwidth bound)", "copy", (x,), 2 * nb),
        ("layer_norm", "ln", (x,), 2 * nb),
        ("layer_norm_grad", "ln_grad", (x,), 2 * nb),
        ("softmax", "softmax", (x,), 2 * nb),
        ("add a + b (the scan's bytes: its bound)", "add", (a, bb), 3 * a.nbytes),
        ("linear_recurrence_scan", "scan", (a, bb), 3 * a.nbytes),
        ("linear_recurrence_scan_grad", "scan_grad", (a, bb), 5 * a.nbytes),
        ("gelu_tanh", "gelu", (g,), 2 * g.nbytes),
        ("argmax_logsumexp", "argmax_lse", (x,), nb),
    ]


def _lin(a, b):
    return (a[0] * b[0], b[0] * a[1] + b[1])


def make_functx(kind):
    if kind == "copy":
        return functx.jit(lambda x: x * 2.0)
    if kind == "add":
        return functx.jit(lambda a, b: a + b)
    if kind == "ln":
        return functx.jit(layer_norm(fnp))
    if kind == "ln_grad":
        return functx.jit(functx.grad(lambda x: layer_norm(fnp)(x).sum()))
    if kind == "softmax":
        return functx.jit(lambda x: fnn.softmax(x, axis=-1))
    if kind == "scan":
        return functx.jit(lambda a, b: flax.associative_scan(_lin, (a, b), axis=1)[1])
    if kind == "scan_grad":
        return functx.jit(
            functx.grad(
                lambda a, b: flax.associative_scan(_lin, (a, b), axis=1)[1].sum(), argnums=(0, 1)
            )
        )
    if kind == "gelu":
        return functx.jit(lambda x: fnn.gelu(x, approximate=True))
    if kind == "argmax_lse":
        return functx.jit(lambda x: (fnp.argmax(x, axis=-1), fnn.logsumexp(x, axis=-1)))
    raise KeyError(kind)


def make_jax(kind):
    jax, jnp = _jax()
    if jax is None:
        return None
    if kind == "copy":
        return jax.jit(lambda x: x * 2.0)
    if kind == "add":
        return jax.jit(lambda a, b: a + b)
    if kind == "ln":
        return jax.jit(layer_norm(jnp))
    if kind == "ln_grad":
        return jax.jit(jax.grad(lambda x: layer_norm(jnp)(x).sum()))
    if kind == "softmax":
        return jax.jit(lambda x: jax.nn.softmax(x, axis=-1))
    if kind == "scan":
        return jax.jit(lambda a, b: jax.lax.associative_scan(_lin, (a, b), axis=1)[1])
    if kind == "scan_grad":
        return jax.jit(
            jax.grad(
                lambda a, b: jax.lax.associative_scan(_lin, (a, b), axis=1)[1].sum(), argnums=(0, 1)
            )
        )
    if kind == "gelu":
        return jax.jit(lambda x: jax.nn.gelu(x, approximate=True))
    if kind == "argmax_lse":
        return jax.jit(lambda x: (jnp.argmax(x, axis=-1), jax.nn.logsumexp(x, axis=-1)))
    raise KeyError(kind)


def make_torch(kind):
    torch = _torch()
    if torch is None:
        return None
    if kind == "copy":
        f = lambda x: x * 2.0  # noqa: E731
    elif kind == "add":
        f = lambda a, b: a + b  # noqa: E731
    elif kind == "ln":
        f = lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:], eps=1e-5)  # noqa: E731
    elif kind == "ln_grad":
        f = torch.func.grad(  # noqa: E731
            lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:], eps=1e-5).sum()
        )
    elif kind == "softmax":
        f = lambda x: torch.softmax(x, dim=-1)  # noqa: E731
    elif kind == "gelu":
        f = lambda x: torch.nn.functional.gelu(x, approximate="tanh")  # noqa: E731
    elif kind == "argmax_lse":
        f = lambda x: (torch.argmax(x, dim=-1), torch.logsumexp(x, dim=-1))  # noqa: E731
    else:
        return None  # no CPU scan in TorchInductor; gradients are measured against JAX only
    return torch.compile(f)


def run(kind, fn, args, lib):
    if lib == "functx":
        fargs = [fnp.asarray(a) for a in args]  # like jnp.asarray for JAX below
        return lambda: functx.block_until_ready(fn(*fargs))
    if lib == "jax":
        import jax

        jargs = [jax.numpy.asarray(a) for a in args]
        return lambda: jax.block_until_ready(fn(*jargs))
    import torch

    targs = [torch.from_numpy(a) for a in args]
    return lambda: fn(*targs)


def check(kind, f_out, j_out):
    import jax

    fl = jax.tree_util.tree_leaves(f_out)
    jl = jax.tree_util.tree_leaves(j_out)
    for a, b in zip(fl, jl):
        a, b = np.asarray(a), np.asarray(b)
        if a.dtype.kind in "iu":
            assert (a == b).mean() > 0.999, f"{kind}: integer outputs differ"
        else:
            np.testing.assert_allclose(a, b, rtol=2e-3, atol=2e-3, err_msg=kind)


def dispatch(reps):
    """Microseconds per call: the best of 5 alternating rounds (each the median of many calls),
    so that a burst of load on the machine hits both libraries alike."""
    f = functx.jit(lambda x: x + 1.0)
    x = fnp.asarray(np.float32(1.0))
    fns = {"functx": lambda: f(x)}
    jax, jnp = _jax()
    if jax is not None:
        jf = jax.jit(lambda x: x + 1.0)
        jx = jnp.asarray(np.float32(1.0))
        fns["jax"] = lambda: jf(jx)
    best = {}
    for _ in range(5):
        for name, fn in fns.items():
            t = median_time(fn, reps * 50) * 1e6
            best[name] = min(best.get(name, t), t)
    return best


_FIRST_CALL = r"""
import time, sys
t0 = time.perf_counter()
import numpy as np
sys.path.insert(0, {{bench!r}})
import per_sample_grads as P
{setup}
rng = np.random.default_rng(0)
params = P.init(rng)
xs = rng.standard_normal((P.BATCH, P.SIZES[0])).astype(np.float32)
ys = rng.integers(0, P.SIZES[-1], P.BATCH).astype(np.int32)
t1 = time.perf_counter()
{run}
print(t1 - t0, time.perf_counter() - t1)
"""
FIRST_CALL = _FIRST_CALL.format(
    setup="import functx, functx.numpy as fnp\nfrom functx import nn as fnn",
    run="f = functx.jit(functx.vmap(functx.grad(P.make_loss(fnp, fnn)), in_axes=(None, 0, 0)))\n"
    "functx.block_until_ready(f(params, xs, ys))",
)
FIRST_CALL_JAX = _FIRST_CALL.format(
    setup="import jax, jax.numpy as jnp",
    run="f = jax.jit(jax.vmap(jax.grad(P.make_loss(jnp, jax.nn)), in_axes=(None, 0, 0)))\n"
    "jax.block_until_ready(f(params, xs, ys))",
)


def first_call(n: int = 5):
    """(seconds importing, seconds from building the jitted function to its first result) in a
    fresh process: functx with an empty cache, functx again (warm cache), JAX; of ``n``
    alternating runs, the one with the median total for each."""
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    from workloads import write_bytecode  # (functx's bytecode, as an installed package has it)

    write_bytecode(env, root)

    def child(code):
        out = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        ).stdout.split()
        return float(out[-2]), float(out[-1])

    # alternating, so that a slow stretch of this shared machine slows both libraries
    runs: dict = {}
    for _ in range(n):
        with tempfile.TemporaryDirectory() as d:
            env["FUNCTX_CACHE_DIR"] = d
            runs.setdefault("functx empty cache", []).append(child(FIRST_CALL.format(bench=here)))
            runs.setdefault("functx warm cache", []).append(child(FIRST_CALL.format(bench=here)))
        env.pop("FUNCTX_CACHE_DIR")
        try:
            runs.setdefault("jax", []).append(child(FIRST_CALL_JAX.format(bench=here)))
        except subprocess.CalledProcessError:
            pass
    # the run with the median total, per library
    return {k: sorted(v, key=sum)[len(v) // 2] for k, v in runs.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--only", default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--first-runs", type=int, default=7)
    args = ap.parse_args()
    reps = args.reps or (3 if args.quick else 10)
    rows = []
    for name, kind, inputs, nbytes in workloads(args.quick):
        if args.only and not any(o and o in name for o in args.only.split(",")):
            continue
        times = {}
        f = make_functx(kind)
        fout = f(*inputs)
        jf = make_jax(kind)
        if jf is not None:
            import jax

            check(name, fout, jf(*[jax.numpy.asarray(a) for a in inputs]))
        runners = {"functx": run(kind, f, inputs, "functx")}
        if jf is not None:
            runners["jax"] = run(kind, jf, inputs, "jax")
        tf = make_torch(kind)
        if tf is not None:
            runners["torch.compile"] = run(kind, tf, inputs, "torch")
        # alternating rounds, the best median of each: a burst of load on a shared machine then
        # slows one round of every library rather than all of one library's runs
        for _ in range(args.rounds):
            for lib, fn in runners.items():
                t = median_time(fn, reps)
                times[lib] = min(times.get(lib, t), t)
        rows.append((name, nbytes, times))
    print(
        f"{'workload':30s} {'functx ms':>10s} {'GB/s':>7s} {'jax ms':>9s} {'x jax':>7s} "
        f"{'torch ms':>9s} {'x torch':>8s}"
    )
    for name, nbytes, t in rows:
        fx = t["functx"]
        jx = t.get("jax")
        tx = t.get("torch.compile")
        print(
            f"{name:30s} {fx * 1e3:10.3f} {nbytes / fx / 1e9:7.1f} "
            f"{(jx or float('nan')) * 1e3:9.3f} {(jx / fx if jx else float('nan')):7.2f} "
            f"{(tx or float('nan')) * 1e3:9.3f} {(tx / fx if tx else float('nan')):8.2f}"
        )
    if not args.only or "dispatch" in args.only:
        d = dispatch(reps)
        print(
            "dispatch of jit(x + 1.0) on a scalar, us: "
            + ", ".join(f"{k} {v:.1f}" for k, v in d.items())
        )
    if not args.only or "first" in args.only:
        fc = first_call(args.first_runs)
        print(
            f"first per-sample-gradient result in a fresh process, median of {args.first_runs} "
            "alternating runs, s (imports + first call): "
            + ", ".join(f"{k} {a:.2f} + {b:.3f}" for k, (a, b) in fc.items())
        )


if __name__ == "__main__":
    main()
