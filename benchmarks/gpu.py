"""The GPU check and benchmarks of the Triton backend (issue 7), in one process.

Run from the repository root on a CUDA machine:

    python benchmarks/gpu.py                 # correctness on the real shapes, then timings
    python benchmarks/gpu.py --no-torch      # without torch.compile (its compiles take minutes)
    python benchmarks/gpu.py --only softmax,scan --sweep

For each workload (float32): functx (``functx.jit`` on GPU arrays), ``jax.jit`` and
``torch.compile`` of the same function. Correctness first: functx's outputs against a float64
reference (the functx interpreter, i.e. NumPy, on float64 copies of a slice of the inputs: rows,
batch elements or samples, which the computation treats independently) and against JAX on the
whole outputs, as ``|out - ref| / |ref|`` (norms); outputs are allocated from memory filled with
NaN first, so unwritten elements show. Then timings: the median over 5 repetitions of a loop of
calls ended by one synchronisation (so per-call host overhead counts where it exceeds the GPU
time). GB/s counts each input read once and each output written once; the copy line is
``y.copy_(x)`` of 1 GiB (read + write), the bandwidth ceiling the targets refer to.

Matrix-product precision: the correctness checks run functx and JAX with full float32 products
(``default_matmul_precision("highest")``); the timings use each library's default, which on this
GPU is TF32 for functx and JAX (torch.compile: torch's default, float32). The per-sample-gradient
workload also times both in float32 and compares their TF32 results.

``--sweep`` also times block-size variants of the scan, GELU and the persistent reductions (the
table in ``functx/lowering/triton/blocks.py`` was chosen from such a sweep). Results stream to
stdout as they come and, as JSON lines, to ``$OUT/gpu_results.jsonl`` when ``OUT`` is set.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import os
import statistics
import sys
import time
import traceback

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU with torch
sys.path.insert(0, os.getcwd())

import numpy as np  # noqa: E402
import torch  # noqa: E402

import functx  # noqa: E402
import functx.lax as flax  # noqa: E402
import functx.nn as fnn  # noqa: E402
import functx.numpy as fnp  # noqa: E402

# BENCH_DEVICE=cpu with TRITON_INTERPRET=1 and --tiny: a dry run of this script without a GPU
DEV = os.environ.get("BENCH_DEVICE", "cuda")
CUDA = DEV == "cuda"
RESULTS: list[dict] = []
OUT = os.environ.get("OUT")


def emit(rec: dict):
    RESULTS.append(rec)
    if OUT:
        with open(os.path.join(OUT, "gpu_results.jsonl"), "a") as f:
            f.write(json.dumps(rec) + "\n")


def say(*a):
    print(*a, flush=True)


# --- helpers -------------------------------------------------------------------------------------
def leaves(tree):
    return functx.tree_util.tree_leaves(tree)


def as_torch(x):
    if isinstance(x, torch.Tensor):
        return x
    return torch.from_dlpack(x)  # functx GPU arrays and JAX arrays export DLPack


def fx_args(args):
    """The arguments as functx GPU arrays (when functx has them), else the torch tensors."""
    if hasattr(functx, "device_put"):
        gpu = functx.devices("gpu")[0]
        return tuple(
            functx.tree_util.tree_map(lambda t: functx.device_put(t, gpu), a) for a in args
        )
    return args


def jax_args(args):
    import jax

    return tuple(jax.tree_util.tree_map(lambda t: jax.dlpack.from_dlpack(t), a) for a in args)


def nbytes(tree) -> int:
    return sum(as_torch(t).numel() * as_torch(t).element_size() for t in leaves(tree))


def poison():
    """Fill free memory of torch's caching allocator with NaN, so that outputs allocated next
    start as NaN (an element a kernel forgets to write then shows)."""
    if not CUDA:
        return
    free, _ = torch.cuda.mem_get_info()
    n = int(min(free * 0.6, 24 * 2**30)) // 4
    try:
        t = torch.empty(n, device=DEV)
        t.fill_(float("nan"))
        del t
    except torch.OutOfMemoryError:
        pass


def rel_err(got, want) -> float:
    g = np.asarray(got, np.float64)
    w = np.asarray(want, np.float64)
    if g.shape != w.shape:
        return float("inf")
    if not np.all(np.isfinite(g)):
        return float("nan")
    d = np.linalg.norm((g - w).ravel())
    n = np.linalg.norm(w.ravel())
    return float(d / n) if n else float(d)


def torch_rel_err(got, want) -> float:
    """``|got - want| / |want|`` in float64, over chunks (outputs of several GB: their float64
    copies would not fit beside everything else this process holds)."""
    g, w = as_torch(got), as_torch(want)
    if g.shape != w.shape:
        return float("inf")
    g, w = g.reshape(-1), w.reshape(-1)
    d2 = n2 = 0.0
    for i in range(0, g.numel(), 1 << 26):
        gc, wc = g[i : i + (1 << 26)].double(), w[i : i + (1 << 26)].double()
        if not torch.isfinite(gc).all():
            return float("nan")
        d2 += float(torch.sum((gc - wc) ** 2))
        n2 += float(torch.sum(wc * wc))
    return math.sqrt(d2 / n2) if n2 else math.sqrt(d2)


def sync_torch(_):
    if CUDA:
        torch.cuda.synchronize()


def sync_jax(out):
    import jax

    jax.block_until_ready(out)


def timeit(fn, sync, target_s=0.08, reps=5, warmup=4) -> float:
    """Median seconds per call: ``reps`` loops of ``n`` calls, each loop ended by one sync.
    Four calls warm up: programs with in-place CUDA graphs capture on their third and fourth
    (two instances, since the loop holds the last result), and a capture in the call that
    sets ``n`` would make ``n`` too small for the loops to keep the GPU busy."""
    out = None
    for _ in range(warmup):
        out = fn()
    sync(out)
    t0 = time.perf_counter()
    out = fn()
    sync(out)
    one = max(time.perf_counter() - t0, 1e-6)
    n = max(1, min(2000, int(target_s / one)))
    times = []
    for _ in range(reps):
        sync(out)
        t0 = time.perf_counter()
        for _ in range(n):
            out = fn()
        sync(out)
        times.append((time.perf_counter() - t0) / n)
    return statistics.median(times)


def triton_exe(jf):
    """The TritonExecutable behind a functx.jit function (its first cache entry)."""
    for entry in jf.cache.values():
        e = entry[0]
        while hasattr(e, "exe"):
            e = e.exe
        return e
    return None


# --- the workloads -------------------------------------------------------------------------------
def layer_norm(np_, x, g, b):
    mean = np_.mean(x, axis=-1, keepdims=True)
    var = np_.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / np_.sqrt(var + 1e-5) * g + b


def torch_layer_norm(x, g, b):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * g + b


def linrec_combine(c1, c2):
    a1, b1 = c1
    a2, b2 = c2
    return a1 * a2, a2 * b1 + b2


def linrec_f64(a, b):
    """h_t = a_t h_{t-1} + b_t along axis 1, in float64 (NumPy)."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    h = np.empty_like(b)
    prev = np.zeros_like(b[:, 0])
    for t in range(a.shape[1]):
        prev = a[:, t] * prev + b[:, t]
        h[:, t] = prev
    return h


def linrec_grad_f64(a, b, w):
    """Gradients of sum(h * w) with respect to a and b, in float64."""
    h = linrec_f64(a, b)
    a, w = a.astype(np.float64), w.astype(np.float64)
    lam = np.empty_like(w)
    nxt = np.zeros_like(w[:, 0])
    for t in range(a.shape[1] - 1, -1, -1):
        nxt = w[:, t] + (a[:, t + 1] * nxt if t + 1 < a.shape[1] else 0.0)
        lam[:, t] = nxt
    hprev = np.concatenate([np.zeros_like(h[:, :1]), h[:, :-1]], axis=1)
    return lam * hprev, lam


class Workload:
    """``make()`` -> args (torch CUDA tensors or pytrees of them); ``fx(ns, *args)`` the function
    for functx (``ns`` = (numpy, lax, nn, grad, vmap) of functx) and JAX; ``torch_fn`` the torch
    version (or None); ``ref(args_np_subset)`` float64 reference outputs of ``subset``."""

    def __init__(
        self, name, make, fn, torch_fn, subset, ref_subset, out_subset, tol=1e-5, jax_tol=1e-4
    ):
        self.name, self.make, self.fn, self.torch_fn = name, make, fn, torch_fn
        self.subset, self.ref_subset, self.out_subset = subset, ref_subset, out_subset
        self.tol, self.jax_tol = tol, jax_tol


def _ns(which):
    if which == "fx":
        return functx, fnp, flax, fnn
    import jax
    import jax.numpy as jnp

    return jax, jnp, jax.lax, jax.nn


def rows(k):
    return lambda args: tuple(a[:k] if a.dim() == 2 and a.shape[0] > 8 else a for a in args)


def eager_ref(fn):
    """The functx interpreter (NumPy) on float64 copies."""

    def ref(args64):
        out = fn("fx", *[functx.tree_util.tree_map(fnp.asarray, a) for a in args64])
        return [np.asarray(o) for o in leaves(out)]

    return ref


def workloads(size="full"):
    g = torch.Generator(device=DEV).manual_seed(0)
    R, C = {"tiny": (64, 128), "quick": (4096, 4096)}.get(size, (32768, 4096))
    B, L, D = {"tiny": (2, 64, 16), "quick": (4, 2048, 1024)}.get(size, (16, 8192, 1024))
    NG = 1 << {"tiny": 12, "quick": 24}.get(size, 28)
    BATCH = 8 if size == "tiny" else 1024
    I, H = (32, 64) if size == "tiny" else (784, 1024)

    def randn(*s):
        return torch.randn(*s, device=DEV, generator=g)

    def ln_fn(which, x, gm, bt):
        return layer_norm(_ns(which)[1], x, gm, bt)

    def ln_grad_fn(which, x, gm, bt, dy):
        mod, np_, _, _ = _ns(which)
        return mod.grad(
            lambda x, gm, bt: np_.sum(layer_norm(np_, x, gm, bt) * dy), argnums=(0, 1, 2)
        )(x, gm, bt)

    def torch_ln_grad(x, gm, bt, dy):
        return torch.func.grad(
            lambda x, gm, bt: (torch_layer_norm(x, gm, bt) * dy).sum(), argnums=(0, 1, 2)
        )(x, gm, bt)

    def ln_grad_ref(args):
        x, gm, bt, dy = (torch.as_tensor(a) for a in args)
        x, gm, bt, dy = (t.double().requires_grad_() for t in (x, gm, bt, dy))
        (torch_layer_norm(x, gm, bt) * dy).sum().backward()
        return [x.grad.numpy(), gm.grad.numpy(), bt.grad.numpy()]

    def softmax_fn(which, x):
        return _ns(which)[3].softmax(x, axis=-1)

    def scan_fn(which, a, b):
        lax = _ns(which)[2]
        return lax.associative_scan(linrec_combine, (a, b), axis=1)[1]

    def scan_grad_fn(which, a, b, w):
        mod, np_, lax, _ = _ns(which)
        return mod.grad(
            lambda a, b: np_.sum(lax.associative_scan(linrec_combine, (a, b), axis=1)[1] * w),
            argnums=(0, 1),
        )(a, b)

    def torch_scan(a, b):
        from torch._higher_order_ops.associative_scan import associative_scan

        return associative_scan(linrec_combine, (a, b), dim=1, combine_mode="pointwise")[1]

    def torch_scan_grad(a, b, w):
        return torch.func.grad(lambda a, b: (torch_scan(a, b) * w).sum(), argnums=(0, 1))(a, b)

    def gelu_fn(which, x):
        return _ns(which)[3].gelu(x, approximate=True)

    def amax_lse_fn(which, x):
        _, np_, _, nn = _ns(which)
        return np_.argmax(x, axis=1), nn.logsumexp(x, axis=1)

    def mlp_loss(np_, nn, p, x, y):
        h = np_.tanh(x @ p["w1"] + p["b1"])
        h = np_.tanh(h @ p["w2"] + p["b2"])
        logits = h @ p["w3"] + p["b3"]
        return -np_.sum(y * nn.log_softmax(logits))

    def per_sample_fn(which, p, x, y):
        mod, np_, _, nn = _ns(which)
        return mod.vmap(mod.grad(functools.partial(mlp_loss, np_, nn)), in_axes=(None, 0, 0))(
            p, x, y
        )

    def torch_per_sample(p, x, y):
        def loss(p, x, y):
            h = torch.tanh(x @ p["w1"] + p["b1"])
            h = torch.tanh(h @ p["w2"] + p["b2"])
            logits = h @ p["w3"] + p["b3"]
            return -(y * torch.log_softmax(logits, -1)).sum()

        return torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(p, x, y)

    def mlp_make():
        p = {
            "w1": randn(I, H) * I**-0.5,
            "b1": randn(H) * 0.1,
            "w2": randn(H, H) * H**-0.5,
            "b2": randn(H) * 0.1,
            "w3": randn(H, 10) * H**-0.5,
            "b3": randn(10) * 0.1,
        }
        x = randn(BATCH, I)
        y = torch.nn.functional.one_hot(
            torch.randint(0, 10, (BATCH,), device=DEV, generator=g), 10
        ).float()
        return p, x, y

    out = [
        Workload(
            f"layer norm {R}x{C}",
            lambda: (randn(R, C) * 2 + 0.5, randn(C), randn(C)),
            ln_fn,
            torch_layer_norm,
            rows(256),
            eager_ref(ln_fn),
            lambda outs: [o[:256] for o in outs],
        ),
        Workload(
            f"layer norm grad {R}x{C}",
            lambda: (randn(R, C) * 2 + 0.5, randn(C), randn(C), randn(R, C)),
            ln_grad_fn,
            torch_ln_grad,
            None,
            None,
            None,
            tol=1e-5,
            jax_tol=1e-4,
        ),
        Workload(
            f"softmax {R}x{C}",
            lambda: (randn(R, C) * 3,),
            softmax_fn,
            lambda x: torch.softmax(x, -1),
            rows(256),
            eager_ref(softmax_fn),
            lambda outs: [o[:256] for o in outs],
        ),
        Workload(
            f"scan B={B} L={L} D={D}",
            lambda: (torch.rand(B, L, D, device=DEV, generator=g) * 0.5 + 0.5, randn(B, L, D)),
            scan_fn,
            torch_scan,
            lambda args: tuple(a[:2] for a in args),
            lambda args: [linrec_f64(*args)],
            lambda outs: [o[:2] for o in outs],
        ),
        Workload(
            f"scan grad B={B} L={L} D={D}",
            lambda: (
                torch.rand(B, L, D, device=DEV, generator=g) * 0.5 + 0.5,
                randn(B, L, D),
                randn(B, L, D),
            ),
            scan_grad_fn,
            torch_scan_grad,
            lambda args: tuple(a[:2] for a in args),
            lambda args: list(linrec_grad_f64(*args)),
            lambda outs: [o[:2] for o in outs],
        ),
        Workload(
            f"tanh-GELU 2^{int(math.log2(NG))}",
            lambda: (randn(NG) * 3,),
            gelu_fn,
            lambda x: torch.nn.functional.gelu(x, approximate="tanh"),
            lambda args: (args[0][: 1 << 20],),
            eager_ref(gelu_fn),
            lambda outs: [o[: 1 << 20] for o in outs],
        ),
        Workload(
            f"argmax+logsumexp {R}x{C}",
            lambda: (randn(R, C) * 3,),
            amax_lse_fn,
            lambda x: (x.argmax(1), torch.logsumexp(x, 1)),
            rows(256),
            eager_ref(amax_lse_fn),
            lambda outs: [o[:256] for o in outs],
        ),
        Workload(
            f"per-sample grads MLP {I}-{H}-{H}-10 batch {BATCH}",
            mlp_make,
            per_sample_fn,
            torch_per_sample,
            lambda args: (args[0], args[1][:8], args[2][:8]),
            eager_ref(per_sample_fn),
            lambda outs: [o[:8] for o in outs],
            tol=1e-5,
            jax_tol=1e-4,
        ),
    ]
    # the layer-norm gradient's float64 reference: torch autograd in float64 on 256 rows (the
    # column sums dg and db need every row, so this one compares them on those rows only)
    ln_grad = out[1]
    ln_grad.subset = lambda args: (args[0][:256], args[1], args[2], args[3][:256])
    ln_grad.ref_subset = ln_grad_ref
    ln_grad.recompute_subset = True  # compare with functx run on the same subset
    return out


# --- running one workload ------------------------------------------------------------------------
def run_workload(w: Workload, use_torch: bool, sweep: bool):
    import jax

    say(f"\n=== {w.name}")
    args = w.make()
    sync_torch(None)
    byt_in = nbytes(args)
    rec = {"workload": w.name}
    fx = functx.jit(functools.partial(w.fn, "fx"))
    fargs = fx_args(args)
    # correctness in full float32 (matrix products too: both default to TF32 on this GPU)
    exact = contextlib.ExitStack()
    exact.enter_context(functx.default_matmul_precision("highest"))
    exact.enter_context(jax.default_matmul_precision("highest"))
    t0 = time.perf_counter()
    poison()
    out = leaves(fx(*fargs))
    sync_torch(None)
    rec["fx_first_s"] = time.perf_counter() - t0
    exe = triton_exe(fx)
    rec["kernels"] = exe.kernel_count() if exe else None
    byt = byt_in + nbytes(out)
    rec["bytes"] = byt
    # a second call (direct launches) must agree with the first bit for bit... up to atomics
    poison()
    out2 = leaves(fx(*fargs))
    sync_torch(None)
    rec["launch_modes"] = exe.launch_modes() if exe else None
    rec["repeat_err"] = max(torch_rel_err(a, b) for a, b in zip(out2, out))
    # and two more with both results held (CUDA graph replays, where the program uses them;
    # the in-place kind captures on the second call with the same inputs)
    out3 = leaves(fx(*fargs))
    out4 = leaves(fx(*fargs))
    sync_torch(None)
    rec["graphs"] = (
        (exe.graph_mode if exe.use_graphs and exe.graph_safe else "none") if exe else None
    )
    rec["graph_note"] = exe.graph_note if exe else ""  # a capture that failed
    rec["repeat_err"] = max(
        [rec["repeat_err"]] + [torch_rel_err(a, b) for o in (out3, out4) for a, b in zip(o, out)]
    )
    del out3, out4
    # float64 reference on a slice
    if w.subset is not None:
        sub = w.subset(args)
        sub64 = [
            np.asarray(as_torch(t).double().cpu())
            if isinstance(t, torch.Tensor)
            else functx.tree_util.tree_map(lambda v: v.double().cpu().numpy(), t)
            for t in sub
        ]
        ref = w.ref_subset(sub64)
        if getattr(w, "recompute_subset", False):
            got = [np.asarray(as_torch(o).double().cpu()) for o in leaves(fx(*fx_args(sub)))]
        else:
            got = [
                np.asarray(as_torch(o).double().cpu())
                for o in w.out_subset([as_torch(o) for o in out])
            ]
        errs = []
        for gg, rr in zip(got, ref):
            if np.asarray(rr).dtype.kind in "iu" or gg.dtype.kind in "iu":
                errs.append(
                    float(
                        np.mean(np.asarray(gg).astype(np.int64) != np.asarray(rr).astype(np.int64))
                    )
                )
            else:
                errs.append(rel_err(gg, rr))
        rec["err_f64"] = max(errs)
    # JAX: the same function, on the same data
    jf = jax.jit(functools.partial(w.fn, "jax"))
    jargs = jax_args(args)
    t0 = time.perf_counter()
    jout = jax.tree_util.tree_leaves(jf(*jargs))
    jax.block_until_ready(jout)
    rec["jax_first_s"] = time.perf_counter() - t0
    errs = []
    for a, b in zip(out, jout):
        ta, tb = as_torch(a), as_torch(b)
        if not ta.dtype.is_floating_point:
            errs.append(float((ta.long() != tb.long()).double().mean()))
        else:
            errs.append(torch_rel_err(ta, tb))
    rec["err_jax"] = max(errs)
    del jout
    exact.close()
    ok = (
        rec.get("err_f64", 0) <= w.tol
        and rec["err_jax"] <= w.jax_tol
        and rec["repeat_err"] <= 1e-6
        and not rec["graph_note"]
    )
    rec["ok"] = bool(ok)
    say(
        f"kernels={rec['kernels']} launch={rec['launch_modes']} graphs={rec['graphs']} "
        f"first call {rec['fx_first_s']:.2f}s  err vs f64 {rec.get('err_f64', float('nan')):.2e}  "
        f"vs JAX {rec['err_jax']:.2e}  repeat {rec['repeat_err']:.1e}  {rec['graph_note']}"
        f"{'OK' if ok else 'FAILED'}"
    )
    del out, out2
    # timings
    rec["fx_s"] = timeit(lambda: fx(*fargs), sync_torch)
    rec["jax_s"] = timeit(lambda: jf(*jargs), sync_jax)
    if use_torch and w.torch_fn is not None:
        try:
            tc = torch.compile(w.torch_fn)
            t0 = time.perf_counter()
            tout = tc(*args)
            torch.cuda.synchronize()
            rec["torch_first_s"] = time.perf_counter() - t0
            rec["err_torch"] = max(
                torch_rel_err(a, b)
                if as_torch(a).dtype.is_floating_point
                else float((as_torch(a).long() != as_torch(b).long()).double().mean())
                for a, b in zip(leaves(fx(*fargs)), leaves(tout))
            )
            del tout
            rec["torch_s"] = timeit(lambda: tc(*args), sync_torch)
        except Exception as e:  # noqa: BLE001 - reported in the table
            rec["torch_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    if "per-sample" in w.name:
        # the timings above: both with their default matrix-product precision, TF32 on this GPU;
        # the same in full float32 for both; and the TF32 results against each other
        with jax.default_matmul_precision("highest"):
            jh = jax.jit(functools.partial(w.fn, "jax"))
            rec["jax_highest_s"] = timeit(lambda: jh(*jargs), sync_jax)
        with functx.default_matmul_precision("highest"):
            rec["fx_highest_s"] = timeit(lambda: fx(*fargs), sync_torch)
        rec["err_jax_tf32"] = max(
            torch_rel_err(a, b)
            for a, b in zip(leaves(fx(*fargs)), jax.tree_util.tree_leaves(jf(*jargs)))
        )
        fh, jh_s = rec["fx_highest_s"], rec["jax_highest_s"]
        say(
            f"float32 products: functx {fh * 1e3:.3f} ms, JAX {jh_s * 1e3:.3f} ms "
            f"(x{jh_s / fh:.2f}); TF32 results: functx vs JAX {rec['err_jax_tf32']:.1e}"
        )
    gbs = byt / rec["fx_s"] / 1e9
    rec["fx_gbs"] = gbs
    say(
        f"functx {rec['fx_s'] * 1e3:.3f} ms ({gbs:.0f} GB/s)  jax {rec['jax_s'] * 1e3:.3f} ms "
        f"(x{rec['jax_s'] / rec['fx_s']:.2f})  torch.compile "
        + (
            f"{rec['torch_s'] * 1e3:.3f} ms (x{rec['torch_s'] / rec['fx_s']:.2f})"
            if "torch_s" in rec
            else rec.get("torch_error", "-")
        )
    )
    if sweep:
        rec["sweep"] = run_sweep(w, args)
    emit(rec)
    return rec


def run_sweep(w: Workload, args):
    """Block-size variants of the workload's kernels (compile_triton with explicit Blocks)."""
    from functx.lowering.triton.blocks import Blocks
    from functx.lowering.triton.program import compile_triton
    from functx.transforms import passes

    variants = []
    if w.name.startswith("scan"):
        for lanes, elems in [
            (32, 4096),
            (16, 4096),
            (64, 4096),
            (32, 8192),
            (16, 2048),
            (8, 2048),
            (16, 8192),
        ]:
            variants.append(
                (f"lanes={lanes} elems={elems}", Blocks(strided_scan_lanes=lanes, elems=elems))
            )
    elif w.name.startswith("tanh-GELU"):
        for pw, warps in [(1024, 4), (2048, 4), (2048, 8), (4096, 8), (512, 4)]:
            variants.append(
                (f"block={pw} warps={warps}", Blocks(pointwise=pw, pointwise_warps=warps))
            )
    elif w.name.startswith("per-sample"):
        for pw, warps in [(1024, 4), (2048, 4), (4096, 4), (4096, 8), (8192, 8)]:
            variants.append(
                (f"block={pw} warps={warps}", Blocks(pointwise=pw, pointwise_warps=warps))
            )
    elif w.name.startswith(("layer norm", "softmax", "argmax")):
        for warps in (4, 8, 16):
            variants.append((f"warps={warps}", Blocks(reduce_warps=warps)))
        variants.append(("looped 1024", Blocks(persistent=512, reduce_inner=1024)))
    out = []
    flat = leaves(args)
    closed = passes.simplify(functx.make_jaxpr(functools.partial(w.fn, "fx"))(*args))
    for label, blocks in variants:
        try:
            exe = compile_triton(closed, blocks)
            exe(*flat)
            t = timeit(lambda exe=exe: exe(*flat), sync_torch, reps=3)
            out.append({"variant": label, "ms": t * 1e3})
            say(f"  sweep {label:24s} {t * 1e3:8.3f} ms")
        except Exception as e:  # noqa: BLE001
            say(f"  sweep {label}: {type(e).__name__}: {str(e)[:200]}")
    return out


# --- dispatch and launch overhead ----------------------------------------------------------------
def run_dispatch(use_torch: bool):
    import jax

    say("\n=== dispatch of a jitted scalar x + 1.0")
    rec = {"workload": "dispatch x + 1.0 (scalar)"}
    x = torch.tensor(1.5, device=DEV)
    n_calls = 20000 if CUDA else 200
    f = functx.jit(lambda x: x + 1.0)
    xa = fx_args((x,))[0]
    y = f(xa)
    assert float(as_torch(y).cpu()) == 2.5

    def per_call(fn, n=n_calls, sync=sync_torch):
        fn()
        sync(None)
        best = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(n):
                r = fn()
            sync(r)
            best.append((time.perf_counter() - t0) / n)
        return statistics.median(best)

    def latency(fn, sync, n=n_calls // 10):
        ts = []
        for _ in range(n):
            t0 = time.perf_counter()
            sync(fn())
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts)

    rec["fx_us"] = per_call(lambda: f(xa)) * 1e6
    rec["fx_latency_us"] = latency(lambda: f(xa), sync_torch) * 1e6
    rec["fx_torch_arg_us"] = per_call(lambda: f(x)) * 1e6
    exe = triton_exe(f)
    rec["exe_us"] = per_call(lambda: exe(x)) * 1e6
    rec["launch_modes"] = exe.launch_modes()
    if CUDA:  # what the path is made of, piece by piece (jit's GPU fast path first)
        from functx.devices import eager as placement

        sig = placement.gpu_signature((xa,))
        dexe = f._gpu_calls[sig][0]
        tdev = x.device
        site = exe.sites[0]
        fast = next(iter(site.fast.values()))
        stream = torch._C._cuda_getCurrentRawStream(torch.cuda.current_device())
        y0 = torch.empty((), device=DEV)
        px, py = x.data_ptr(), y0.data_ptr()
        rec["part_signature_us"] = per_call(lambda: placement.gpu_signature((xa,))) * 1e6
        rec["part_call_arrays_us"] = per_call(lambda: dexe.call_arrays((xa,))) * 1e6
        rec["part_run_on_us"] = per_call(lambda: exe.run_on(tdev, [x])) * 1e6
        rec["part_empty_strided_us"] = (
            per_call(lambda: torch.empty_strided((), (), dtype=torch.float32, device=tdev)) * 1e6
        )
        rec["part_run_us"] = per_call(lambda: exe.module.run([x], [], [y0])) * 1e6
        rec["part_site_us"] = per_call(lambda: site(1, 1, x, y0)) * 1e6
        if fast[0]:  # Triton 3.6's C launch function, as the site calls it
            rec["part_launcher_us"] = (
                per_call(
                    lambda: fast[1](
                        1,
                        1,
                        1,
                        stream,
                        fast[2],
                        fast[3],
                        fast[4],
                        None,
                        None,
                        fast[5],
                        None,
                        None,
                        None,
                        px,
                        py,
                    )
                )
                * 1e6
            )
        else:
            rec["part_launcher_us"] = (
                per_call(
                    lambda: fast[1](1, 1, 1, stream, fast[2], fast[5], None, None, None, px, py)
                )
                * 1e6
            )
    if CUDA:
        exe.use_graphs = True
        exe(x)
        exe(x)
        rec["exe_graph_us"] = per_call(lambda: exe(x)) * 1e6
        rec["graph_note"] = exe.graph_note  # a capture that failed (then no graph was timed)
        exe.use_graphs = False
    jf = jax.jit(lambda x: x + 1.0)
    jx = jax.dlpack.from_dlpack(x)
    rec["jax_us"] = (
        per_call(lambda: jf(jx), sync=lambda r: jax.block_until_ready(r) if r is not None else None)
        * 1e6
    )
    rec["jax_latency_us"] = latency(lambda: jf(jx), sync_jax) * 1e6
    if use_torch:
        try:
            tc = torch.compile(lambda x: x + 1.0)
            tc(x)
            rec["torch_us"] = per_call(lambda: tc(x)) * 1e6
            rec["torch_latency_us"] = latency(lambda: tc(x), sync_torch) * 1e6
        except Exception as e:  # noqa: BLE001
            rec["torch_error"] = f"{type(e).__name__}: {str(e)[:160]}"
    say(json.dumps(rec))
    emit(rec)


def run_launch_overhead(size="full"):
    """Host time of a many-kernel program (the per-sample-gradient step on 8 samples, where the
    GPU work is small): launches through Triton's dispatch, direct launches, a CUDA graph."""
    say("\n=== launch overhead of a many-kernel step (per-sample grads, batch 8)")
    g = torch.Generator(device=DEV).manual_seed(1)
    i, h = (32, 64) if size == "tiny" else (784, 1024)
    p = {
        "w1": torch.randn(i, h, device=DEV, generator=g) * i**-0.5,
        "b1": torch.zeros(h, device=DEV),
        "w2": torch.randn(h, h, device=DEV, generator=g) * h**-0.5,
        "b2": torch.zeros(h, device=DEV),
        "w3": torch.randn(h, 10, device=DEV, generator=g) * h**-0.5,
        "b3": torch.zeros(10, device=DEV),
    }
    x = torch.randn(8, i, device=DEV, generator=g)
    y = torch.nn.functional.one_hot(torch.arange(8, device=DEV) % 10, 10).float()

    def loss(p, x, y):
        h = fnp.tanh(x @ p["w1"] + p["b1"])
        h = fnp.tanh(h @ p["w2"] + p["b2"])
        return -fnp.sum(y * fnn.log_softmax(h @ p["w3"] + p["b3"]))

    f = functx.jit(functx.vmap(functx.grad(loss), in_axes=(None, 0, 0)))
    args = fx_args((p, x, y))
    ref = [as_torch(o).clone() for o in leaves(f(*args))]
    exe = triton_exe(f)
    flat = [as_torch(t) for t in leaves((p, x, y))]
    rec = {
        "workload": "launch overhead, per-sample step batch 8",
        "kernels": exe.kernel_count(),
        "launches": exe.n_launches,
        "graphs_by_default": exe.use_graphs,
    }
    rec["jit_default_us"] = timeit(lambda: f(*args), sync_torch) * 1e6
    exe.use_graphs = False
    rec["direct_us"] = timeit(lambda: exe(*flat), sync_torch) * 1e6
    rec["jit_direct_us"] = timeit(lambda: f(*args), sync_torch) * 1e6
    saved = [dict(s.fast) for s in exe.sites]
    os.environ["FUNCTX_TRITON_DIRECT"] = "0"
    for s in exe.sites:
        s.fast.clear()
    rec["through_triton_us"] = timeit(lambda: exe(*flat), sync_torch) * 1e6
    os.environ.pop("FUNCTX_TRITON_DIRECT")
    for s, fast in zip(exe.sites, saved):
        s.fast.update(fast)
    if CUDA:
        exe.use_graphs = True
        exe(*flat)
        outs = exe(*flat)
        rec["graph_err"] = max(torch_rel_err(a, b) for a, b in zip(outs, ref))
        rec["graph_us"] = timeit(lambda: exe(*flat), sync_torch) * 1e6
        rec["graph_note"] = exe.graph_note
        exe.use_graphs = False
    say(json.dumps(rec))
    emit(rec)


def run_copy():
    say("\n=== device copy (bandwidth ceiling)")
    x = torch.randn(1 << (28 if CUDA else 20), device=DEV)
    y = torch.empty_like(x)
    t = timeit(lambda: y.copy_(x), sync_torch)
    rec = {"workload": "copy 1 GiB", "s": t, "gbs": 2 * x.numel() * 4 / t / 1e9}
    say(f"copy: {t * 1e3:.3f} ms, {rec['gbs']:.0f} GB/s (read + write)")
    emit(rec)
    t = timeit(lambda: y.fill_(1.0), sync_torch)  # the ceiling of kernels that mostly write
    wrec = {"workload": "write-only 1 GiB", "s": t, "gbs": x.numel() * 4 / t / 1e9}
    say(f"write-only (fill_): {t * 1e3:.3f} ms, {wrec['gbs']:.0f} GB/s")
    emit(wrec)
    return rec["gbs"]


# --- the table -----------------------------------------------------------------------------------
def table(copy_gbs):
    say(
        "\n| workload (float32) | functx ms | GB/s | % copy | jax ms | x jax | torch.compile ms "
        "| x torch | err vs f64 | err vs JAX | ok |"
    )
    say("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in RESULTS:
        if "fx_s" not in r:
            continue
        ts = r.get("torch_s")
        say(
            f"| {r['workload']} ({r['kernels']} kernels) | {r['fx_s'] * 1e3:.3f} | "
            f"{r['fx_gbs']:.0f} | {100 * r['fx_gbs'] / copy_gbs:.0f}% | {r['jax_s'] * 1e3:.3f} | "
            f"{r['jax_s'] / r['fx_s']:.2f} | "
            + (f"{ts * 1e3:.3f} | {ts / r['fx_s']:.2f} | " if ts else "- | - | ")
            + f"{r.get('err_f64', float('nan')):.1e} | {r['err_jax']:.1e} | "
            f"{'yes' if r['ok'] else 'NO'} |"
        )
    for r in RESULTS:
        if r["workload"].startswith(("dispatch", "launch")):
            say(json.dumps(r))


def main():
    import signal

    def stop(*_):
        raise KeyboardInterrupt("SIGTERM")

    signal.signal(signal.SIGTERM, stop)  # a timeout still prints the table of what ran
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--size", default="full", choices=["full", "quick", "tiny"])
    ap.add_argument("--only", default="")
    opts = ap.parse_args()
    import jax
    import triton

    say(
        f"GPU {torch.cuda.get_device_name() if CUDA else 'none (' + DEV + ')'}, torch "
        f"{torch.__version__}, triton "
        f"{triton.__version__}, jax {jax.__version__} ({jax.devices()[0].platform}), "
        f"python {sys.version.split()[0]}; functx cache {os.environ.get('FUNCTX_CACHE_DIR')}"
    )
    copy_gbs = run_copy()
    only = [s.strip() for s in opts.only.split(",") if s.strip()]
    if not only or "dispatch" in only:
        for fn in (lambda: run_dispatch(not opts.no_torch), lambda: run_launch_overhead(opts.size)):
            try:
                fn()
            except Exception:  # noqa: BLE001
                traceback.print_exc()
    try:
        for w in workloads(opts.size):
            if only and not any(o in w.name for o in only):
                continue
            try:
                run_workload(w, not opts.no_torch, opts.sweep)
            except Exception:  # noqa: BLE001 - one failure must not hide the other workloads
                traceback.print_exc()
                emit({"workload": w.name, "error": traceback.format_exc()[-2000:]})
            if CUDA:
                torch.cuda.empty_cache()
    except KeyboardInterrupt:
        say("\n(stopped)")
    table(copy_gbs)


if __name__ == "__main__":
    main()
