"""GPU convolutions: functx's ``jit`` (the Triton backend, convolution sums as cuDNN steps:
functx/lowering/triton/conv.py) against ``jax.jit``, forward and gradient, float32, on one CUDA
GPU. Self-contained: ``python benchmarks/gpu_conv.py`` (``--reps``, ``--inner``, ``--complex``).

1. Correctness first: functx's forward, input gradient and kernel gradient against JAX's (relative
   error below 1e-2: both take TF32 inputs by default), and the number of cuDNN steps in the
   gradient program (2: the input and the kernel gradients; the forward program has 1).
2. Timings: each sample is ``--inner`` back-to-back calls then the library's synchronisation,
   divided by ``--inner``; the figure is the median of ``--reps`` samples. functx is timed twice:
   with the cuDNN steps and with them off (``conv.ENABLED = False``: one cuBLAS product per
   kernel tap, the earlier path), so the table shows what the steps change. functx's CUDA-event
   time of one call (torch's stream, which its kernels and steps use) is printed beside it.

``--profile`` prints torch.profiler tables (kernels and host time) of the first case's gradient
(functx with and without the steps, and JAX). ``--smoke`` runs the same code on the CPU in
Triton's interpreter with tiny shapes (no timings worth reading; a check of this script).
``--complex`` also checks complex sorts and complex linear algebra on the GPU (Triton: sorts by
two real keys, ``torch.linalg`` on complex tensors) against JAX.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # (torch shares the GPU)

import numpy as np  # noqa: E402

CASES = {
    # the 3x3 convolution: NHWC (8, 64, 64, 64), 64 -> 64, 'SAME'
    "conv3x3 (8,64,64,64)": dict(x=(8, 64, 64, 64), w=(3, 3, 64, 64), strides=(1, 1), pad="SAME"),
    # a CNN's later layer: more channels, stride 2
    "conv3x3/2 (32,32,32,128)": dict(
        x=(32, 32, 32, 128), w=(3, 3, 128, 128), strides=(2, 2), pad="SAME"
    ),
    # a 1-D convolution (a temporal conv): NWC (16, 1024, 256), width 5
    "conv1d w5 (16,1024,256)": dict(x=(16, 1024, 256), w=(5, 256, 256), strides=(1,), pad="SAME"),
}


def _dn(nd):
    return {1: ("NWC", "WIO", "NWC"), 2: ("NHWC", "HWIO", "NHWC")}[nd]


def _fns(jx, spec):
    nd = len(spec["strides"])

    def conv(x, w):
        return jx.lax.conv_general_dilated(
            x, w, spec["strides"], spec["pad"], dimension_numbers=_dn(nd)
        )

    fwd = jx.jit(conv)
    grad = jx.jit(jx.grad(lambda x, w, g: (conv(x, w) * g).sum(), (0, 1)))
    return fwd, grad


def _median_time(call, sync, reps, inner):
    call()
    sync()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            out = call()
        sync(out)
        ts.append((time.perf_counter() - t) / inner)
    return statistics.median(ts)


def _event_time(torch, call, reps):
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        call()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / 1e3)
    return statistics.median(ts)


def _rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def _steps(functx, spec, x, w, g):
    """The cuDNN steps of the gradient program (its Jaxpr after the Triton rewrite)."""
    from functx.lowering.triton import conv as tconv
    from functx.transforms import passes

    def grad(x, w, g):
        def conv(x, w):
            return functx.lax.conv_general_dilated(
                x, w, spec["strides"], spec["pad"], dimension_numbers=_dn(len(spec["strides"]))
            )

        return functx.grad(lambda x, w: (conv(x, w) * g).sum(), (0, 1))(x, w)

    closed = passes.simplify(functx.make_jaxpr(grad)(x, w, g))
    return str(tconv.recognize_convs(closed)).count("cuDNN conv")


def run_case(name, spec, reps, inner):
    import jax
    import torch

    import functx
    from functx.lowering.triton import conv as tconv

    rng = np.random.default_rng(0)
    x = rng.standard_normal(spec["x"]).astype(np.float32)
    w = (rng.standard_normal(spec["w"]) / np.sqrt(np.prod(spec["w"][:-1]))).astype(np.float32)
    jf, jg = _fns(jax, spec)
    y = np.asarray(jf(x, w))
    g = rng.standard_normal(y.shape).astype(np.float32)
    jx_args = [jax.device_put(a) for a in (x, w, g)]
    dev = functx.devices("gpu")[0]
    fx_args = [functx.device_put(a, dev) for a in (x, w, g)]

    def jsync(out=None):
        jax.block_until_ready(out if out is not None else jx_args)

    def fsync(out=None):
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    rows = []
    want = [y, *(np.asarray(a) for a in jg(*jx_args))]
    for enabled in (True, False):
        tconv.ENABLED = enabled
        ff, fg = _fns(functx, spec)  # (new jit objects: compiled with this setting)
        got = [np.asarray(ff(*fx_args[:2])), *(np.asarray(a) for a in fg(*fx_args))]
        errs = [_rel(a, b) for a, b in zip(got, want)]
        assert max(errs) < 1e-2, (name, enabled, errs)
        steps = _steps(functx, spec, x, w, g)
        tf = _median_time(lambda: ff(*fx_args[:2]), fsync, reps, inner)
        tg = _median_time(lambda: fg(*fx_args), fsync, reps, inner)
        ef = eg = float("nan")
        if torch.cuda.is_available():
            ef = _event_time(torch, lambda: ff(*fx_args[:2]), reps)
            eg = _event_time(torch, lambda: fg(*fx_args), reps)
        label = "functx (cuDNN steps)" if enabled else "functx (per-tap products)"
        rows.append((label, tf, tg, ef, eg, errs, steps))
    tconv.ENABLED = True
    tf = _median_time(lambda: jf(*jx_args[:2]), jsync, reps, inner)
    tg = _median_time(lambda: jg(*jx_args), jsync, reps, inner)
    rows.append(("JAX", tf, tg, None, None, None, None))
    return rows


def profile_case(name, spec, calls=5):
    """torch.profiler tables (device kernels and host time) of ``calls`` calls of functx's
    gradient, with the cuDNN steps and without, and of JAX's (CUPTI sees every kernel of the
    process)."""
    import jax
    import torch
    from torch.profiler import ProfilerActivity, profile

    import functx
    from functx.lowering.triton import conv as tconv

    rng = np.random.default_rng(0)
    x = rng.standard_normal(spec["x"]).astype(np.float32)
    w = (rng.standard_normal(spec["w"]) / np.sqrt(np.prod(spec["w"][:-1]))).astype(np.float32)
    jf, jg = _fns(jax, spec)
    g = rng.standard_normal(np.shape(jf(x, w))).astype(np.float32)
    dev = functx.devices("gpu")[0]
    fx_args = [functx.device_put(a, dev) for a in (x, w, g)]
    jx_args = [jax.device_put(a) for a in (x, w, g)]
    runs = []
    for enabled in (True, False):
        tconv.ENABLED = enabled
        _, fg = _fns(functx, spec)
        runs.append((f"functx gradient, cuDNN steps {'on' if enabled else 'off'}", fg, fx_args))
    tconv.ENABLED = True
    runs.append(("JAX gradient", jg, jx_args))
    for label, fn, args in runs:
        for _ in range(3):  # (compiled, captured, warm)
            jax.block_until_ready(fn(*args)) if label.startswith("JAX") else fn(*args)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                out = fn(*args)
            jax.block_until_ready(out) if label.startswith("JAX") else torch.cuda.synchronize()
        print(f"--- {name}: {label}, {calls} calls")
        print(
            prof.key_averages().table(
                sort_by="cuda_time_total", row_limit=14, max_name_column_width=60
            )
        )


def check_complex():
    """Complex sorts and linear algebra on the GPU against JAX."""
    import jax
    import jax.numpy as jnp

    import functx
    import functx.numpy as fnp

    jax.config.update("jax_enable_x64", True)
    functx.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(1)
    z = (rng.integers(-3, 4, (64, 300)) + 1j * rng.standard_normal((64, 300))).astype(np.complex64)
    z[0, :5] = np.nan
    z[1, :5] = complex(1.0, np.nan)
    a = rng.standard_normal((4, 16, 16)) + 1j * rng.standard_normal((4, 16, 16))
    a = (a @ np.conj(np.swapaxes(a, -1, -2)) + 16 * np.eye(16)).astype(np.complex128)
    b = (rng.standard_normal((4, 16, 3)) + 1j).astype(np.complex128)

    def f(ns, z, a, b):
        lin = ns.linalg
        return [
            ns.sort(z),
            ns.argsort(z[:, :40]),
            lin.cholesky(a),
            lin.solve(a, b),
            lin.inv(a),
            lin.slogdet(a)[1],
            lin.eigvalsh(a),
            lin.svd(b, compute_uv=False),
            ns.abs(lin.qr(b)[1]),
        ]

    dev = functx.devices("gpu")[0]
    args = [functx.device_put(v, dev) for v in (z, a, b)]
    got = functx.jit(lambda z, a, b: f(fnp, z, a, b))(*args)
    want = jax.jit(lambda z, a, b: f(jnp, z, a, b))(z, a, b)
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, i
        if i < 2:  # sorts: bit for bit
            np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8), str(i))
        else:
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-9, err_msg=str(i))
    print("complex sort / argsort / cholesky / solve / inv / slogdet / eigvalsh / svd / qr on "
          "the GPU: equal to JAX (sorts bit for bit, linear algebra to 1e-9)")  # fmt: skip


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--inner", type=int, default=10)
    ap.add_argument("--complex", action="store_true", help="also check complex steps")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes, Triton's interpreter")
    ap.add_argument("--profile", action="store_true", help="torch.profiler tables of one case")
    args = ap.parse_args()
    if args.smoke:
        os.environ["TRITON_INTERPRET"] = "1"
        for spec in CASES.values():
            spec["x"] = (2, *(5,) * (len(spec["x"]) - 2), 3)
            spec["w"] = (*spec["w"][:-2], 3, 4)
        args.reps, args.inner = 1, 1
    import torch

    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no GPU (smoke)"
    print(f"GPU convolutions, float32: {gpu}; median of {args.reps} "
          f"samples of {args.inner} back-to-back calls (ms per call)")  # fmt: skip
    for name, spec in CASES.items():
        rows = run_case(name, spec, args.reps, args.inner)
        name = name if not args.smoke else f"{name} (smoke: {spec['x']})"
        jf, jg = rows[-1][1], rows[-1][2]
        print(f"{name}: kernel {spec['w']}, strides {spec['strides']}, {spec['pad']}")
        for label, tf, tg, ef, eg, errs, steps in rows:
            line = (
                f"  {label:26s} forward {tf * 1e3:8.3f} ({tf / jf:5.2f}x JAX)"
                f"  gradient {tg * 1e3:8.3f} ({tg / jg:5.2f}x JAX)"
            )
            if ef is not None:
                line += f"  events {ef * 1e3:.3f}/{eg * 1e3:.3f}  steps {steps}"
                line += f"  max rel err {max(errs):.1e}"
            print(line)
    if args.profile:
        name = next(iter(CASES))
        profile_case(name, CASES[name])
    if args.complex:
        check_complex()


if __name__ == "__main__":
    main()
