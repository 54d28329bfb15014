"""Convolutions under ``jit``, forward and gradient, float32, functx against JAX (and
torch.compile with ``--torch``):

* ``conv3x3``: a 3x3 'SAME' convolution, NHWC input (N, 64, 64, 64), HWIO kernel (3, 3, 64, 64)
  (N = 8 by default, ``--n``: 8 x 64 x 64 x 64 float32 is 8 MiB, its im2col matrix 72 MiB);
* ``conv1d``: Mamba's depthwise causal conv1d: input (8, 4096, 1024) in NWC, kernel (4, 1, 1024)
  in WIO, ``feature_group_count=1024``, padding (3, 0).

The gradient is ``grad`` of ``sum(conv(x, w) * g)`` with respect to ``x`` and ``w``. Each library
runs in a process of its own (``--only``), the libraries alternate over ``--rounds`` rounds and
the figure is the median of all timed calls; every result is checked against a float64 NumPy
reference. ``--quick`` uses N = 2 and a (2, 1024, 256) conv1d.

``--gpu`` (a CUDA machine): functx's ``jit`` on GPU arrays (the Triton backend), ``jax.jit`` on
JAX's default (GPU) device and torch (eager cuDNN, or torch.compile with ``--torch``); each call
ends with the library's synchronisation instead of a copy to the host, and the products run at
each library's default precision (TF32 for functx and JAX), so the check against the float64
reference is loosened to 1e-2.

Figures (2026-11-26, this 2-core x86_64 machine under heavy load from other processes, load
average ~11, so noisy; ``--rounds 2 --reps 3``, medians, ms per call):

    conv3x3 (8, 64, 64, 64)  functx forward   540 (2.33x JAX)  gradient 4564 (2.78x JAX)
                             JAX    forward   232              gradient 1641
    conv1d (8, 4096, 1024)   functx forward   165 (0.01x JAX)  gradient 7985 (0.21x JAX)
                             JAX    forward 21567              gradient 38933

The 3x3 convolution's nine products are OpenBLAS calls (NumPy's), and on the loaded machine
OpenBLAS's threads cost more than they give: with ``OPENBLAS_NUM_THREADS=1`` (which JAX does not
read) the same run gave functx forward 296 ms (0.99x JAX's 298) and gradient 698 ms (0.30x
JAX's 2317). The conv1d gradient is bounded
by the weight gradient's sum over the batch and length axes (a reduction over leading axes,
which the C++ reduce kernel walks with a large stride: ``a.sum((0, 1))`` of (8, 4096, 1024)
takes 1.3 s under jit against NumPy's 48 ms).

Session 28, after the products moved to OpenBLAS on one thread with the pieces on the
program's OpenMP threads (``functx/lowering/cpp/dot.py``): ``--quick --rounds 3`` at load
average 10-12 gave conv3x3 (2, 64, 64, 64) forward 59.5 ms (1.85x JAX's 32.1), gradient
116.0 ms (0.74x JAX's 156.0); conv1d (2, 1024, 256) forward 0.42 ms, gradient 4.9 ms (JAX 166
and 249). Before the change, the same command at load 2-4 gave forward 99.3 ms (6.56x JAX's
15.1) and gradient 949 ms (12.5x JAX's 76). Run from the repository root with
``PYTHONPATH=.`` (the ``--only`` subprocesses import functx from there).

Session 30 (functx at f1baa76, load average 10.0-10.4): ``--quick --rounds 3 --case conv3x3``
gave forward 71.1 ms (1.30x JAX's 54.8), gradient 171.7 ms (0.69x JAX's 248.2); the 3x3 case's
CPU time per call and the designs measured again are in functx/_conv.py's docstring.

Session 31, with the CPU forward, the input gradient's and the kernel gradient's sums as
``conv_taps`` steps (register tiles reading the padded input and the cotangent in place:
``functx/lowering/cpp/conv.py``); ``--case conv3x3 --per-tap --rounds 3 --reps 7`` (N = 8, load
average 10-13; wall ms, CPU ms of all the process's threads in brackets):

    functx       forward 143.4 (34.2)  gradient  348.9 ( 79.6)   CPU 0.85x / 0.27x JAX's
    functx_taps  forward 243.3 (58.4)  gradient  506.2 (122.2)   (the per-tap products)
    JAX          forward 176.7 (40.2)  gradient 1272.8 (293.4)

(Earlier runs: the forward step alone, forward CPU 36.0 against JAX's 39.2, 0.92x; with the
input gradient's step, 35.4 against 40.2, 0.88x, gradient 0.34x.)
The wall times under that load mostly say how much of the two cores each process got; the CPU
times are the comparison (``--per-tap`` runs functx without the step as ``functx_taps``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

CASES = {
    "conv3x3": dict(dn=("NHWC", "HWIO", "NHWC"), pad="SAME", groups=1),
    "conv1d": dict(dn=("NWC", "WIO", "NWC"), pad=[(3, 0)], groups=None),
}


def shapes(case, n, quick):
    if case == "conv3x3":
        return (n, 64, 64, 64), (3, 3, 64, 64)
    b, length, c = (2, 1024, 256) if quick else (8, 4096, 1024)
    return (b, length, c), (4, 1, c)


def inputs(case, n, quick):
    rng = np.random.default_rng(0)
    xs, ws = shapes(case, n, quick)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) / np.sqrt(np.prod(ws[:-1]))).astype(np.float32)
    return x, w


def reference(case, x, w, g):
    """float64: the output and both gradients, by sums over the kernel taps."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    if case == "conv3x3":
        xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
        h, wd = x.shape[1:3]
        y = sum(xp[:, i : i + h, j : j + wd] @ w[i, j] for i in range(3) for j in range(3))
        return y
    xp = np.pad(x, ((0, 0), (3, 0), (0, 0)))
    length = x.shape[1]
    return sum(xp[:, t : t + length] * w[t, 0] for t in range(4))


def timed(f, reps):
    """Per call: (wall seconds, CPU seconds of the process: all its threads)."""
    ts = []
    for _ in range(reps):
        t, c = time.perf_counter(), time.process_time()
        f()
        ts.append((time.perf_counter() - t, time.process_time() - c))
    return ts


def run_one(lib, case, n, quick, reps, gpu=False, compile_torch=True):
    x, w = inputs(case, n, quick)
    spec = CASES[case]
    groups = spec["groups"] or x.shape[-1]
    g = np.random.default_rng(1).standard_normal(reference(case, x[:1], w, None).shape[1:])
    g = np.broadcast_to(g, (x.shape[0], *g.shape)).astype(np.float32)
    if lib == "torch":
        import torch
        import torch.nn.functional as F  # noqa: N812

        torch.set_num_threads(os.cpu_count())
        dev = "cuda" if gpu else "cpu"

        def tconv(x, w):
            if case == "conv3x3":
                out = F.conv2d(x.permute(0, 3, 1, 2), w.permute(3, 2, 0, 1), padding=1)
                return out.permute(0, 2, 3, 1)
            xt = F.pad(x.permute(0, 2, 1), (3, 0))
            return F.conv1d(xt, w.permute(2, 1, 0), groups=groups).permute(0, 2, 1)

        fwd_c = torch.compile(tconv) if compile_torch or not gpu else tconv
        tx, tw, tg = (torch.from_numpy(np.ascontiguousarray(a)).to(dev) for a in (x, w, g))

        def grad_fn(x, w, g):
            x, w = x.detach().requires_grad_(), w.detach().requires_grad_()
            (tconv(x, w) * g).sum().backward()
            return x.grad, w.grad

        grad_c = torch.compile(grad_fn) if compile_torch or not gpu else grad_fn

        def f_fwd(host=True):
            y = fwd_c(tx, tw).detach()
            if not host:
                torch.cuda.synchronize()
                return None
            return [y.cpu().numpy()]

        def f_grad(host=True):
            gs = grad_c(tx, tw, tg)
            if not host:
                torch.cuda.synchronize()
                return None
            return [a.cpu().numpy() for a in gs]
    else:
        if lib in ("functx", "functx_taps"):
            import functx as jx
            from functx.lowering.cpp import conv as cpp_conv

            cpp_conv.ENABLED = lib == "functx"  # functx_taps: the per-tap products
        else:
            import jax as jx

        def conv(x, w):
            return jx.lax.conv_general_dilated(
                x,
                w,
                (1,) * (x.ndim - 2),
                spec["pad"],
                dimension_numbers=spec["dn"],
                feature_group_count=groups,
            )

        fwd = jx.jit(conv)
        grad = jx.jit(jx.grad(lambda x, w, g: (conv(x, w) * g).sum(), (0, 1)))
        if gpu and lib == "functx":
            dev = jx.devices("gpu")[0]
            xd, wd, gd = (jx.device_put(a, dev) for a in (x, w, g))
        elif gpu:
            xd, wd, gd = (jx.device_put(a) for a in (x, w, g))
        else:
            xd, wd, gd = x, w, g

        def f_fwd(host=True):
            y = fwd(xd, wd)
            if not host:
                jx.block_until_ready(y)
                return None
            return [np.asarray(y)]

        def f_grad(host=True):
            gs = grad(xd, wd, gd)
            if not host:
                jx.block_until_ready(gs)
                return None
            return [np.asarray(a) for a in gs]

    y = f_fwd()[0]
    want = reference(case, x, w, g)
    err = np.abs(y - want).max() / np.abs(want).max()
    assert err < (1e-2 if gpu else 1e-4), (lib, case, err)
    dx, dw = f_grad()
    assert dx.shape == x.shape and dw.shape == w.shape
    host = not gpu
    f_fwd(host), f_grad(host)  # warm
    return timed(lambda: f_fwd(host), reps), timed(lambda: f_grad(host), reps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--n", type=int, default=None, help="batch of the 3x3 convolution")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--torch", action="store_true", help="also torch.compile")
    ap.add_argument("--case", choices=tuple(CASES), nargs="*", default=list(CASES))
    ap.add_argument(
        "--per-tap",
        action="store_true",
        help="also functx without the CPU convolution step (functx_taps: per-tap products)",
    )
    ap.add_argument("--only", choices=("functx", "functx_taps", "jax", "torch"))
    ap.add_argument("--gpu", action="store_true", help="on a CUDA GPU (functx: Triton)")
    args = ap.parse_args()
    n = args.n or (2 if args.quick else 8)
    reps = args.reps or (3 if args.quick else 5)
    if args.only:
        out = {
            c: run_one(args.only, c, n, args.quick, reps, args.gpu, args.torch) for c in args.case
        }
        print(json.dumps(out))
        return
    libs = ["functx"] + (["functx_taps"] if args.per_tap else []) + ["jax"]
    libs += ["torch"] if args.torch or args.gpu else []
    print(
        f"convolutions, float32, N={n}{' (quick)' if args.quick else ''}"
        f"{' on the GPU' if args.gpu else ''}; {platform.machine()}, "
        f"{os.cpu_count()} cores; {args.rounds} alternating rounds x {reps} calls, medians"
    )
    times = {lib: {c: ([], []) for c in args.case} for lib in libs}
    for _ in range(args.rounds):
        for lib in libs:
            cmd = [sys.executable, __file__, "--only", lib, "--n", str(n), "--reps", str(reps)]
            cmd += ["--case", *args.case] + (["--quick"] if args.quick else [])
            cmd += (["--gpu"] if args.gpu else []) + (["--torch"] if args.torch else [])
            out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
            for c, (f, g) in json.loads(out.strip().splitlines()[-1]).items():
                times[lib][c][0].extend(f)
                times[lib][c][1].extend(g)
    print("ms per call, wall (CPU time of all the process's threads)")
    for c in args.case:

        def med(lib, i):
            ts = times[lib][c][i]
            return statistics.median(t[0] for t in ts), statistics.median(t[1] for t in ts)

        (jf, jfc), (jg, jgc) = med("jax", 0), med("jax", 1)
        print(f"{c}: {shapes(c, n, args.quick)}")
        for lib in libs:
            (f, fc), (g, gc) = med(lib, 0), med(lib, 1)
            print(
                f"  {lib:11s} forward {f * 1e3:8.2f} ({fc * 1e3:8.2f}) ms ({f / jf:5.2f}x JAX, CPU"
                f" {fc / jfc:5.2f}x)   gradient {g * 1e3:8.2f} ({gc * 1e3:8.2f}) ms ({g / jg:5.2f}x"
                f" JAX, CPU {gc / jgc:5.2f}x)"
            )


if __name__ == "__main__":
    main()
