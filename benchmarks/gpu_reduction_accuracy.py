"""Accuracy, then speed, of the Triton backend's float32 reductions (issue 16), in one process.

Run from the repository root on a CUDA machine:

    python benchmarks/gpu_reduction_accuracy.py
    BENCH_DEVICE=cpu TRITON_INTERPRET=1 python benchmarks/gpu_reduction_accuracy.py --tiny

Correctness first, each against float64 (NumPy on a float64 copy of the same float32 data): a
sum of 2**27 ones (exact: 134217728), the variance of data offset by 1e6 (2**24 elements), long
row sums (chunks of a looped reduction add in float64), and layer norm on data offset by 100,
with torch's float32 result beside functx's for scale. Each line prints functx's relative error
and torch's and says ok when functx's is at most 4x torch's (or a few float32 rounding units).
Then a short timing table (median of 5 loops of calls ended by one synchronisation) of sum, var,
layer norm and softmax at large sizes, functx against torch eager, with GB/s (each input read
once, each output written once). Exit status 1 when a correctness line fails.

(The dry run's accuracy lines mean little: Triton's interpreter folds ``tl.reduce`` sequentially
in float32, where a GPU reduces a block as a tree, so the variance of offset data fails there.)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.getcwd())

import numpy as np  # noqa: E402
import torch  # noqa: E402

import functx  # noqa: E402
import functx.nn as fnn  # noqa: E402
import functx.numpy as fnp  # noqa: E402

DEV = os.environ.get("BENCH_DEVICE", "cuda")
CUDA = DEV == "cuda"
EPS32 = float(np.finfo(np.float32).eps)


def to_fx(t: torch.Tensor):
    """A torch tensor as a functx GPU array (functx.device_put), else the tensor itself."""
    if hasattr(functx, "device_put") and hasattr(functx, "devices"):
        try:
            return functx.device_put(t, functx.devices("gpu")[0])
        except Exception:  # no GPU device in a dry run: functx takes the tensor as it is
            return t
    return t


def to_np(x) -> np.ndarray:
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().double().numpy()
    try:
        return np.asarray(torch.from_dlpack(x).cpu().double())
    except Exception:
        return np.asarray(x, np.float64)


def sync():
    if CUDA:
        torch.cuda.synchronize()


def timeit(fn, reps=5, target_s=0.08) -> float:
    for _ in range(3):
        fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    n = max(1, min(1000, int(target_s / max(time.perf_counter() - t0, 1e-6))))
    times = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        times.append((time.perf_counter() - t0) / n)
    return statistics.median(times)


def rel(got, want) -> float:
    g, w = np.asarray(got, np.float64).ravel(), np.asarray(want, np.float64).ravel()
    n = np.linalg.norm(w)
    return float(np.linalg.norm(g - w) / n) if n else float(np.linalg.norm(g - w))


def layer_norm(m, x):
    mu = m.mean(x, axis=-1, keepdims=True)
    var = m.mean((x - mu) ** 2, axis=-1, keepdims=True)
    return (x - mu) / m.sqrt(var + 1e-5)


def torch_layer_norm(x):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / torch.sqrt(var + 1e-5)


def correctness(tiny: bool) -> bool:
    ok_all = True
    n_ones = 2**14 if tiny else 2**27
    n_var = 2**12 if tiny else 2**24
    rows, cols = (4, 2**12) if tiny else (64, 2**20)
    ln_shape = (8, 256) if tiny else (4096, 1024)
    g = torch.Generator(device=DEV).manual_seed(0)

    def line(name, f_fx, f_torch, x: torch.Tensor, f_ref, floor_ulps=4.0):
        nonlocal ok_all
        got = to_np(functx.jit(f_fx)(to_fx(x)))
        theirs = to_np(f_torch(x))
        want = f_ref(x.detach().cpu().double().numpy())
        e_fx, e_t = rel(got, want), rel(theirs, want)
        ok = e_fx <= 4 * e_t + floor_ulps * EPS32
        ok_all &= ok
        print(
            f"{name:44s} functx {e_fx:9.2e}  torch {e_t:9.2e}  {'ok' if ok else 'FAIL'}", flush=True
        )

    print(f"# correctness on {DEV}: relative error against float64", flush=True)
    line(
        f"sum of {n_ones} ones",
        fnp.sum,
        torch.sum,
        torch.ones(n_ones, device=DEV),
        lambda a: a.sum(),
        floor_ulps=0.0,
    )
    x = (1e6 + torch.sin(torch.arange(n_var, device=DEV, dtype=torch.float64))).float()
    # (the float32 mean is rounded to ~0.06 near 1e6: the variance carries that squared)
    line(
        f"var of 1e6 + sin(arange({n_var}))",
        fnp.var,
        lambda t: torch.var(t, unbiased=False),
        x,
        lambda a: a.var(),
        floor_ulps=2e5,
    )
    x = torch.rand(rows, cols, device=DEV, generator=g) + 1e3
    line(
        f"row sums of {rows}x{cols} (values 1e3..1e3+1)",
        lambda a: fnp.sum(a, axis=1),
        lambda t: t.sum(1),
        x,
        lambda a: a.sum(1),
    )
    line(
        f"column sums of {cols}x{rows}",
        lambda a: fnp.sum(a, axis=0),
        lambda t: t.sum(0),
        x.T.contiguous(),
        lambda a: a.sum(0),
    )
    x = torch.randn(*ln_shape, device=DEV, generator=g) + 100
    line(
        f"layer norm of {ln_shape} offset by 100",
        lambda a: layer_norm(fnp, a),
        torch_layer_norm,
        x,
        lambda a: layer_norm(np, a),
        floor_ulps=64.0,
    )
    w = torch.randn(*ln_shape, device=DEV, generator=g)
    wn = w.double().cpu().numpy()

    def ln_grad_ref(a):
        # d/dx sum(w * layer_norm(x)), in float64: n = x - mean, s = 1/sqrt(var + eps)
        d = a.shape[-1]
        n = a - a.mean(-1, keepdims=True)
        s = 1 / np.sqrt((n * n).mean(-1, keepdims=True) + 1e-5)
        y = n * s
        return s * (wn - wn.mean(-1, keepdims=True) - y * (wn * y).sum(-1, keepdims=True) / d)

    def torch_ln_grad(t):
        t = t.clone().requires_grad_(True)
        (torch_layer_norm(t) * w).sum().backward()
        return t.grad

    line(
        f"layer-norm gradient of {ln_shape} offset by 100",
        functx.grad(lambda a: (layer_norm(fnp, a) * to_fx(w)).sum()),
        torch_ln_grad,
        x,
        ln_grad_ref,
        floor_ulps=64.0,
    )
    return ok_all


def timings(tiny: bool):
    g = torch.Generator(device=DEV).manual_seed(0)
    n = 2**12 if tiny else 2**28
    r, c = (8, 256) if tiny else (8192, 4096)
    big = torch.randn(n, device=DEV, generator=g)
    rows = torch.randn(r, c, device=DEV, generator=g)
    work = [
        (f"sum of {n}", fnp.sum, torch.sum, big, big.nbytes),
        (f"var of {n}", fnp.var, lambda t: torch.var(t, unbiased=False), big, big.nbytes),
        (f"row sums {r}x{c}", lambda a: fnp.sum(a, axis=1), lambda t: t.sum(1), rows, rows.nbytes),
        (
            f"layer norm {r}x{c}",
            lambda a: layer_norm(fnp, a),
            torch_layer_norm,
            rows,
            2 * rows.nbytes,
        ),
        (
            f"softmax {r}x{c}",
            lambda a: fnn.softmax(a, axis=-1),
            lambda t: torch.softmax(t, -1),
            rows,
            2 * rows.nbytes,
        ),
    ]
    print(f"# timings on {DEV} (ms, GB/s)", flush=True)
    print(f"{'workload':28s} {'functx':>9s} {'GB/s':>7s} {'torch':>9s} {'GB/s':>7s}", flush=True)
    for name, f_fx, f_torch, x, nb in work:
        jf, xf = functx.jit(f_fx), to_fx(x)
        t_fx = timeit(lambda jf=jf, xf=xf: jf(xf))
        t_t = timeit(lambda f_torch=f_torch, x=x: f_torch(x))
        print(
            f"{name:28s} {t_fx * 1e3:9.3f} {nb / t_fx / 1e9:7.1f} {t_t * 1e3:9.3f} "
            f"{nb / t_t / 1e9:7.1f}",
            flush=True,
        )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tiny", action="store_true", help="small sizes (a dry run without a GPU)")
    ap.add_argument("--no-timings", action="store_true")
    args = ap.parse_args()
    ok = correctness(args.tiny)
    if not args.no_timings:
        timings(args.tiny)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
