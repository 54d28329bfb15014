"""GPU convolutions: functx's ``jit`` (the Triton backend; convolution sums as cuDNN steps on the
program's own channels-last buffers: functx/lowering/triton/conv.py) against ``jax.jit``, forward
and gradient, float32, on one CUDA GPU. Self-contained:
``PYTHONPATH=. python benchmarks/gpu_conv.py [--quick] [--profile] [--per-tap] [--complex]``
(variants below).

1. Correctness first.
   * Geometry: small convolutions of every shape the steps take (1-, 2- and 3-D; 'SAME',
     'VALID', uneven and explicit padding; strides; kernel dilation; NCHW and NHWC dimension
     numbers; float32 and float64) through functx's jit against JAX: forward, input gradient,
     kernel gradient, and the number of cuDNN steps in the gradient program. On a GPU these
     take the paths the CPU tests cannot (cuDNN writing the program's buffers itself).
   * The timed cases below, their three results against JAX's (relative error below 1e-2:
     both take TF32 inputs by default).
   * The CNN SGD step of benchmarks/workloads.py (B=128): the loss and the parameter updates.
2. Timings: each sample is ``--inner`` back-to-back calls then the library's synchronisation,
   divided by ``--inner``; the figure is the median of ``--reps`` samples. Beside functx and
   JAX, torch's own cuDNN calls on channels-last tensors (``F.conv2d`` and
   ``convolution_backward``; 1-D as 2-D of height 1; the depthwise one with ``groups=C``): the
   library's floor, and for the depthwise conv1d the measured alternative to functx's kernel.
   ``--per-tap`` also times functx with the steps off (one cuBLAS product per tap).

The depthwise causal conv1d (Mamba's, issue 19's benchmark: (8, 4096, 1024), width 4) is not a
cuDNN step in functx: ``_conv.py`` builds it as multiply-adds of shifted slices that ``jit``
fuses into one Triton kernel (forward), and for the gradient one multi-output column reduction
(the kernel gradient) and one kernel (the input gradient); the torch column says whether cuDNN's
depthwise kernels would be faster. Measured on an H100 (benchmarks/RESULTS.md, 11:35 UTC): the
fused kernels take 0.342 / 0.706 ms (forward / gradient), cuDNN's 0.165 / 1.218, JAX's 2.689 /
3.891; so the fused kernels stay (the gradient is where the time is).

Variants (each checked against JAX first): ``--window-taps`` also times functx with
``conv.WINDOW_TAPS`` (a strided data gradient with uneven padding computed by cuDNN with zero
taps around the kernel, no copy) where a case has such a gradient, and checks the geometry rows
it changes; ``--one-d-width`` with ``conv.ONE_D_WIDTH`` "all" and "none" (1-D as 2-D of
width 1 or height 1 for every cuDNN call; the default: width 1 for the forward convolutions);
``--deterministic`` with ``conv.DETERMINISTIC`` empty and for every step (cuDNN's
deterministic algorithms; the default: for the kernel gradients, whose nondeterministic
algorithms zero a workspace first);
``--graph-modes`` with each CUDA-graph mode forced (copy, in place, none); ``--alternatives``
times other cuDNN forms at the torch level (stride 2: the data gradient of ``x`` with zero taps
against ``P``'s with the window copied out, the forward and kernel gradient with zero taps
against the pad kernel; 1-D: height 1 against width 1, the forward as 5 shifted products).

``--profile`` prints torch.profiler tables (device kernels, per call) of functx's and JAX's
forward and gradient of the stride-2 and conv1d cases (of those ``--only`` selects), and how
functx's programs run (kernels, host steps, graph mode).
``--smoke`` runs the same code on the CPU in Triton's interpreter with tiny shapes (no timings
worth reading; a check of this script). ``--complex`` also checks complex sorts and complex
linear algebra on the GPU against JAX.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # (torch shares the GPU)

import numpy as np  # noqa: E402

CASES = {
    # the 3x3 convolution: NHWC (8, 64, 64, 64), 64 -> 64, 'SAME'
    "conv3x3 (8,64,64,64)": dict(x=(8, 64, 64, 64), w=(3, 3, 64, 64), strides=(1, 1), pad="SAME"),
    # the same through lax.conv's default NCHW / OIHW dimension numbers
    "conv3x3 NCHW (8,64,64,64)": dict(
        x=(8, 64, 64, 64), w=(64, 64, 3, 3), strides=(1, 1), pad="SAME", dims="NCHW"
    ),
    # a CNN's later layer: more channels, stride 2
    "conv3x3/2 (32,32,32,128)": dict(
        x=(32, 32, 32, 128), w=(3, 3, 128, 128), strides=(2, 2), pad="SAME"
    ),
    # a 1-D convolution (a temporal conv): NWC (16, 1024, 256), width 5
    "conv1d w5 (16,1024,256)": dict(x=(16, 1024, 256), w=(5, 256, 256), strides=(1,), pad="SAME"),
    # Mamba's causal depthwise conv1d (issue 19's benchmark): (8, 4096, 1024), width 4
    "depthwise causal w4 (8,4096,1024)": dict(
        x=(8, 4096, 1024), w=(4, 1, 1024), strides=(1,), pad=[(3, 0)], groups=1024
    ),
}

# small convolutions for the geometry check: (x, w, strides, padding, rhs_dilation, dims, dtype)
GEOMETRY = [
    ((2, 9, 10, 3), (3, 3, 3, 4), (1, 1), "SAME", (1, 1), "NHWC", np.float32),
    ((2, 9, 10, 3), (3, 3, 3, 4), (2, 2), "SAME", (1, 1), "NHWC", np.float32),
    ((2, 9, 10, 3), (2, 3, 3, 4), (1, 2), "VALID", (2, 1), "NHWC", np.float32),
    ((2, 9, 10, 3), (4, 4, 3, 4), (1, 1), "SAME", (1, 1), "NHWC", np.float32),  # (uneven pads)
    ((2, 3, 9, 10), (4, 3, 3, 3), (1, 1), [(2, 2), (1, 1)], (1, 1), "NCHW", np.float32),
    ((2, 17, 5), (5, 5, 6), (1,), "SAME", (1,), "NWC", np.float32),
    ((2, 17, 5), (3, 5, 6), (2,), [(1, 1)], (1,), "NWC", np.float32),
    ((2, 17, 5), (3, 5, 6), (1,), "SAME", (3,), "NWC", np.float32),
    ((2, 17, 5), (4, 5, 6), (1,), [(3, 0)], (1,), "NWC", np.float32),  # (causal: keeps P)
    ((2, 11, 5), (2, 5, 6), (3,), [(1, 1)], (1,), "NWC", np.float32),  # (taps miss x's end)
    ((2, 5, 17), (6, 5, 3), (1,), "SAME", (2,), "NCW", np.float32),
    ((2, 3, 9, 10), (4, 3, 3, 3), (2, 2), "SAME", (1, 1), "NCHW", np.float32),
    ((2, 5, 6, 7, 3), (3, 3, 3, 3, 2), (1, 1, 1), "SAME", (1, 1, 1), "NDHWC", np.float32),
    ((2, 9, 10, 3), (3, 3, 3, 4), (1, 1), "SAME", (1, 1), "NHWC", np.float64),
]


def _dn(spec_x):
    if spec_x[1] == "C":  # (NCHW-like)
        sp = spec_x[2:]
        return (spec_x, "OI" + sp, spec_x)
    sp = spec_x[1:-1]
    return (spec_x, sp + "IO", spec_x)


def _case_dn(spec):
    return spec.get("dims") or {1: "NWC", 2: "NHWC"}[len(spec["strides"])]


def _conv(jx, spec, dn):
    def conv(x, w):
        return jx.lax.conv_general_dilated(
            x,
            w,
            spec["strides"],
            spec["pad"],
            rhs_dilation=spec.get("dil"),
            dimension_numbers=_dn(dn),
            feature_group_count=spec.get("groups", 1),
        )

    return conv


def _fns(jx, spec, dn=None):
    conv = _conv(jx, spec, dn or _case_dn(spec))
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


def _rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def _steps(functx, spec, x, w, g, dn):
    """The cuDNN steps of the gradient program (its Jaxpr after the Triton rewrite)."""
    from functx.lowering.triton import conv as tconv
    from functx.transforms import passes

    conv = _conv(functx, spec, dn)

    def grad(x, w, g):
        return functx.grad(lambda x, w: (conv(x, w) * g).sum(), (0, 1))(x, w)

    closed = passes.simplify(functx.make_jaxpr(grad)(x, w, g))
    eqns = tconv.recognize_convs(closed).jaxpr.eqns
    steps = [e.params.get("callback") for e in eqns if e.prim.name == "pure_callback"]
    return [s for s in steps if isinstance(s, tconv.ConvStep)]


def _inputs(spec, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(spec["x"]).astype(dtype)
    fan = np.prod(spec["w"][:-1]) if len(spec["w"]) else 1
    w = (rng.standard_normal(spec["w"]) / np.sqrt(fan)).astype(dtype)
    return rng, x, w


def check_geometry(window_taps=False):
    """Every geometry of GEOMETRY through functx's jit on the GPU against JAX; with
    ``window_taps``, again with ``conv.WINDOW_TAPS`` on for the rows whose data gradient keeps
    a window of ``P``'s (uneven padding)."""
    import jax

    import functx
    from functx.lowering.triton import conv as tconv

    jax.config.update("jax_enable_x64", True)
    functx.config.update("jax_enable_x64", True)
    dev = functx.devices("gpu")[0]
    worst = 0.0
    for xs, ws, st, pad, dil, dims, dt in GEOMETRY:
        spec = dict(x=xs, w=ws, strides=st, pad=pad, dil=dil)
        rng, x, w = _inputs(spec, dt, 3)
        jf, jg = _fns(jax, spec, dims)
        y = np.asarray(jf(x, w))
        g = rng.standard_normal(y.shape).astype(dt)
        want = [y, *(np.asarray(a) for a in jg(x, w, g))]
        steps = _steps(functx, spec, x, w, g, dims)
        settings = [False]
        if window_taps and any(s.window is not None for s in steps):
            tconv.WINDOW_TAPS = True
            if any(s.zero for s in _steps(functx, spec, x, w, g, dims)):
                settings.append(True)  # (a row the zero taps change)
            tconv.WINDOW_TAPS = False
        for taps in settings:
            tconv.WINDOW_TAPS = taps
            ff, fg = _fns(functx, spec, dims)
            args = [functx.device_put(a, dev) for a in (x, w, g)]
            got = [np.asarray(ff(*args[:2])), *(np.asarray(a) for a in fg(*args))]
            errs = [_rel(a, b) for a, b in zip(got, want)]
            dts = {np.asarray(a).dtype for a in got} | {np.asarray(a).dtype for a in want}
            steps = _steps(functx, spec, x, w, g, dims)
            tconv.WINDOW_TAPS = False
            tol = 1e-2 if dt == np.float32 else 1e-9
            ok = max(errs) < tol and len(dts) == 1 and len(steps) == 2
            if taps:
                ok = ok and any(s.zero for s in steps)
            worst = max(worst, max(errs) if dt == np.float32 else 0.0)
            print(
                f"  {dims} x{xs} w{ws} strides {st} pad {pad} dil {dil} {np.dtype(dt).name}"
                f"{' (zero taps)' if taps else ''}: max rel err {max(errs):.1e}, cuDNN steps "
                f"{len(steps)} {'ok' if ok else 'WRONG'}"
            )
            assert ok, (xs, ws, st, pad, dil, dims, taps, errs, dts, len(steps))
    jax.config.update("jax_enable_x64", False)
    functx.config.update("jax_enable_x64", False)
    return worst


def _gpu():
    import torch

    return torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1"


def torch_times(torch, spec, x, w, g, reps, inner):
    """torch's cuDNN on channels-last tensors (1-D as 2-D of height 1; an NCHW case in torch's
    contiguous format): forward, and both gradients through ``convolution_backward``, ms per
    call; None without a GPU."""
    if not _gpu():
        return None
    nd = len(spec["strides"])
    groups = spec.get("groups", 1)
    dev = torch.device("cuda")

    def nc(a):  # (N, sp..., C) -> channels-last (N, C, [1,] sp...)
        t = torch.from_numpy(a).to(dev)
        if nd == 1:
            t = t.unsqueeze(1)
        return t.movedim(-1, 1)

    if spec.get("dims", "N").startswith("NC"):  # (channels-first: torch's contiguous format)
        xt, wt, gt = (torch.from_numpy(a).to(dev) for a in (x, w, g))
        k_sp = spec["w"][2:]
    else:
        xt, gt = nc(x), nc(g)
        wt = torch.from_numpy(w).to(dev)  # (k..., I, O) -> (O, I, [1,] k...)
        if nd == 1:
            wt = wt.unsqueeze(0)
        wt = wt.permute(-1, -2, *range(wt.dim() - 2))
        wt = wt.contiguous(memory_format=torch.channels_last)
        k_sp = spec["w"][:nd]
    pads = spec["pad"]
    if pads == "SAME":
        pads = [((k - 1) // 2, k // 2) for k in k_sp]
    lo = [p[0] for p in pads]
    hi = [p[1] for p in pads]
    if lo != hi:  # (causal: pad the left by hand, as a user of torch would)
        xt = torch.nn.functional.pad(xt, [a for lh in zip(lo[::-1], [0] * nd) for a in lh])
        xt = xt.contiguous(memory_format=torch.channels_last)
        lo = [0] * nd
    stride, padding = tuple(spec["strides"]), tuple(lo)
    if nd == 1:
        stride, padding = (1, *stride), (0, *padding)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = True

    def fwd():
        return torch.nn.functional.conv2d(xt, wt, None, stride, padding, 1, groups)

    def bwd():
        return torch.ops.aten.convolution_backward(
            gt, xt, wt, None, stride, padding, (1, 1), False, (0, 0), groups, (True, True, False)
        )

    def sync(out=None):
        torch.cuda.synchronize()

    return _median_time(fwd, sync, reps, inner), _median_time(bwd, sync, reps, inner)


# --- a direct Triton kernel for the causal depthwise conv1d (the measured alternative) ----------
_DW_KERNELS = None


def _depthwise_kernels():
    """Three ``@triton.jit`` kernels for the causal depthwise conv1d of NWC ``x`` (N, L, C) with
    taps ``w`` (K, C): the forward ``y[n, l] = sum_t w[t] * x[n, l - K + 1 + t]``, the input
    gradient ``dx[n, l] = sum_t w[t] * g[n, l + K - 1 - t]`` and per-split partial sums of the
    kernel gradient ``dw[t] = sum_{n, l} g[n, l] * x[n, l - K + 1 + t]``: one pass each, the
    taps in registers, blocks of ``BL`` positions by ``BC`` channels (channels contiguous)."""
    global _DW_KERNELS
    if _DW_KERNELS is not None:
        return _DW_KERNELS
    import triton
    import triton.language as tl

    @triton.jit
    def fwd(x, w, y, L, C, K: tl.constexpr, BL: tl.constexpr, BC: tl.constexpr, REV: tl.constexpr):
        pid_l, pid_c, n = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        ls = pid_l * BL + tl.arange(0, BL)[:, None]
        cs = pid_c * BC + tl.arange(0, BC)[None, :]
        cm = cs < C
        base = n * L * C
        acc = tl.zeros([BL, BC], dtype=tl.float32)
        for t in tl.static_range(K):
            wt = tl.load(w + t * C + cs, mask=cm, other=0.0)
            if REV:  # (the input gradient: later positions, taps reversed)
                src = ls + (K - 1 - t)
                m = (src < L) & cm
            else:
                src = ls - (K - 1) + t
                m = (src >= 0) & (src < L) & cm
            acc += wt * tl.load(x + base + src * C + cs, mask=m, other=0.0)
        tl.store(y + base + ls * C + cs, acc, mask=(ls < L) & cm)

    @triton.jit
    def wgrad(x, g, part, N, L, C, ROWS, K: tl.constexpr, BL: tl.constexpr, BC: tl.constexpr):
        # (up to 4 taps: one accumulator each, the cotangent read once per block of rows)
        pid_c, sp = tl.program_id(0), tl.program_id(1)
        cs = pid_c * BC + tl.arange(0, BC)[None, :]
        cm = cs < C
        r0 = sp * ROWS
        a0 = tl.zeros([BL, BC], dtype=tl.float32)
        a1 = tl.zeros([BL, BC], dtype=tl.float32)
        a2 = tl.zeros([BL, BC], dtype=tl.float32)
        a3 = tl.zeros([BL, BC], dtype=tl.float32)
        for r in range(r0, r0 + ROWS, BL):
            rows = r + tl.arange(0, BL)[:, None]  # (flat n * L + l)
            ok = (rows < N * L) & cm
            ls = rows % L
            gv = tl.load(g + rows * C + cs, mask=ok, other=0.0)
            for t in tl.static_range(K):
                m = ok & (ls - (K - 1) + t >= 0)
                xv = tl.load(x + (rows - (K - 1) + t) * C + cs, mask=m, other=0.0)
                if t == 0:
                    a0 += gv * xv
                elif t == 1:
                    a1 += gv * xv
                elif t == 2:
                    a2 += gv * xv
                else:
                    a3 += gv * xv
        out = part + sp * K * C + cs
        tl.store(out, tl.sum(a0, 0)[None, :], mask=cm)
        if K > 1:
            tl.store(out + C, tl.sum(a1, 0)[None, :], mask=cm)
        if K > 2:
            tl.store(out + 2 * C, tl.sum(a2, 0)[None, :], mask=cm)
        if K > 3:
            tl.store(out + 3 * C, tl.sum(a3, 0)[None, :], mask=cm)

    _DW_KERNELS = (fwd, wgrad)
    return _DW_KERNELS


def triton_depthwise(torch, x, w, g, splits=128, BL=32, BC=128):
    """The forward and the gradient of the causal depthwise conv1d with the direct kernels
    (torch tensors: x (N, L, C), taps (K, 1, C), cotangent g): ``(fwd(), grad())`` callables."""
    import triton

    fwd, wgrad = _depthwise_kernels()
    n, length, c = x.shape
    k = w.shape[0]
    assert k <= 4, k
    wk = w.reshape(k, c).contiguous()
    grid = (triton.cdiv(length, BL), triton.cdiv(c, BC), n)
    rows = triton.cdiv(triton.cdiv(n * length, splits), BL) * BL
    nsplit = triton.cdiv(n * length, rows)
    part = torch.empty((nsplit, k, c), dtype=x.dtype, device=x.device)

    def forward():
        y = torch.empty_like(x)
        fwd[grid](x, wk, y, length, c, K=k, BL=BL, BC=BC, REV=False)
        return y

    def gradient():
        dx = torch.empty_like(x)
        fwd[grid](g, wk, dx, length, c, K=k, BL=BL, BC=BC, REV=True)
        wgrad[(triton.cdiv(c, BC), nsplit)](x, g, part, n, length, c, rows, K=k, BL=BL, BC=BC)
        return dx, part.sum(0).reshape(k, 1, c)

    return forward, gradient


def run_case(
    name, spec, reps, inner, per_tap, window_taps=False, one_d_width=False, deterministic=False
):
    import jax
    import torch

    import functx
    from functx.lowering.triton import conv as tconv

    rng, x, w = _inputs(spec)
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
    dn = _case_dn(spec)
    want = [y, *(np.asarray(a) for a in jg(*jx_args))]
    settings = [("functx", {})]
    if window_taps and any(s.window is not None for s in _steps(functx, spec, x, w, g, dn)):
        settings.append(("functx (zero taps)", dict(WINDOW_TAPS=True)))
    if one_d_width and len(spec["strides"]) == 1 and not spec.get("groups"):
        settings.append(("functx (1-D all width 1)", dict(ONE_D_WIDTH="all")))
        settings.append(("functx (1-D all height 1)", dict(ONE_D_WIDTH="none")))
    if deterministic:
        settings.append(("functx (no determinism)", dict(DETERMINISTIC=frozenset())))
        every = frozenset({"fwd", "dx", "dw"})
        settings.append(("functx (all deterministic)", dict(DETERMINISTIC=every)))
    if per_tap:
        settings.append(("functx (per-tap products)", dict(ENABLED=False)))
    knobs = ("ENABLED", "WINDOW_TAPS", "ONE_D_WIDTH", "DETERMINISTIC")
    default = {k: getattr(tconv, k) for k in knobs}
    for label, knobs in settings:
        for k, v in {**default, **knobs}.items():
            setattr(tconv, k, v)
        t0 = time.perf_counter()
        ff, fg = _fns(functx, spec)  # (new jit objects: compiled with this setting)
        got = [np.asarray(ff(*fx_args[:2])), *(np.asarray(a) for a in fg(*fx_args))]
        first = time.perf_counter() - t0
        errs = [_rel(a, b) for a, b in zip(got, want)]
        assert max(errs) < 1e-2, (name, label, errs)
        steps = len(_steps(functx, spec, x, w, g, dn))
        tf = _median_time(lambda: ff(*fx_args[:2]), fsync, reps, inner)
        tg = _median_time(lambda: fg(*fx_args), fsync, reps, inner)
        rows.append((label, tf, tg, f"steps {steps}, first call {first:.1f}s, err {max(errs):.0e}"))
    for k, v in default.items():
        setattr(tconv, k, v)
    tf = _median_time(lambda: jf(*jx_args[:2]), jsync, reps, inner)
    tg = _median_time(lambda: jg(*jx_args), jsync, reps, inner)
    rows.append(("JAX", tf, tg, ""))
    tt = torch_times(torch, spec, x, w, g, reps, inner)
    if tt is not None:
        rows.append(("torch cuDNN channels-last", *tt, "(fwd; both gradients)"))
    if spec.get("groups") and spec["pad"] == [(spec["w"][0] - 1, 0)]:  # (causal depthwise)
        dev_t = "cuda" if _gpu() else "cpu"
        xt, wt, gt = (torch.from_numpy(a).to(dev_t) for a in (x, w, g))
        tf_fn, tg_fn = triton_depthwise(torch, xt, wt, gt)
        got = [tf_fn().cpu().numpy(), *(a.cpu().numpy() for a in tg_fn())]
        errs = [_rel(a, b) for a, b in zip(got, want)]
        assert max(errs) < 1e-4, ("direct Triton depthwise", errs)
        t1 = _median_time(tf_fn, fsync, reps, inner)
        t2 = _median_time(tg_fn, fsync, reps, inner)
        rows.append(("direct Triton kernels", t1, t2, f"(this script's; err {max(errs):.0e})"))
    return rows


def run_cnn(reps, inner, smoke, profile=False):
    """The CNN SGD step of benchmarks/workloads.py: functx against JAX (loss and updates)."""
    import jax
    import torch

    import functx

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import workloads

    c = dict(B=8, c=(4, 8)) if smoke else dict(B=128, c=(16, 32))
    p, x, y = workloads.inputs("cnn", c)
    jstep = jax.jit(workloads.program(jax, "cnn", c))
    t0 = time.perf_counter()
    fstep = functx.jit(workloads.program(functx, "cnn", c))
    dev = functx.devices("gpu")[0]
    fargs = (functx.device_put(p, dev), functx.device_put(x, dev), functx.device_put(y, dev))
    fl, fp = fstep(*fargs)
    first = time.perf_counter() - t0
    jl, jp = jstep(p, x, y)
    err = max(
        _rel(float(fl), float(jl)),
        max(
            _rel(np.asarray(fp[k]) - p[k], np.asarray(jp[k]) - p[k])
            for k in p
            if np.abs(np.asarray(jp[k]) - p[k]).max() > 0
        ),
    )
    assert err < 2e-2, err

    def fsync(out=None):
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    def jsync(out=None):
        jax.block_until_ready(out)

    tf = _median_time(lambda: fstep(*fargs), fsync, reps, inner)
    jargs = jax.device_put((p, x, y))
    tj = _median_time(lambda: jstep(*jargs), jsync, reps, inner)
    if profile:
        _profile_table("CNN SGD step: functx", lambda: fstep(*fargs), fsync)
        _profile_table("CNN SGD step: JAX", lambda: jstep(*jargs), jsync)
    return tf, tj, first, err


def _profile_table(label, call, sync, calls=5):
    """torch.profiler's table of the device kernels of ``calls`` calls (after 3 warm ones)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(3):
        out = call()
    sync(out)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            out = call()
        sync(out)
        torch.cuda.synchronize()
    print(f"--- {label}, {calls} calls")
    table = prof.key_averages().table(
        sort_by="cuda_time_total", row_limit=14, max_name_column_width=70
    )
    print(table)


def _exes(jitted):
    """The Triton executables behind a functx ``jit`` function (its compiled entries)."""
    found = []
    for entry in list(jitted.cache.values()):
        obj = entry[0]
        for _ in range(4):  # (DeviceExecutable -> JitExecutable -> TritonExecutable)
            if hasattr(obj, "graph_safe"):
                break
            obj = getattr(obj, "exe", None) or getattr(obj, "inner", None)
        if obj is not None and hasattr(obj, "graph_safe"):
            found.append(obj)
    return found


def graph_info(jitted):
    """How a jitted function's Triton program runs: its kernels, host steps and CUDA graphs."""
    infos = []
    for exe in _exes(jitted):
        states = [st if isinstance(st, str) else type(st).__name__ for st in exe._graphs.values()]
        infos.append(
            f"{len(exe.sites)} kernels + {len(exe.host_calls)} host steps "
            f"({', '.join(type(c[0]).__name__ for c in exe.host_calls)}), graphs "
            f"{exe.use_graphs}, mode {exe.graph_mode}, states {states}"
            + (f", note {exe.graph_note}" if exe.graph_note else "")
        )
    return "; ".join(infos) or "no Triton program"


def profile_case(name, spec, calls=5):
    """torch.profiler tables (device kernels) of ``calls`` calls of functx's forward and
    gradient and of JAX's (CUPTI sees every kernel of the process), and how functx's programs
    run (kernels, host steps, graphs)."""
    import jax

    import functx

    rng, x, w = _inputs(spec)
    jf, jg = _fns(jax, spec)
    g = rng.standard_normal(np.shape(jf(x, w))).astype(np.float32)
    dev = functx.devices("gpu")[0]
    fx_args = [functx.device_put(a, dev) for a in (x, w, g)]
    jx_args = [jax.device_put(a) for a in (x, w, g)]
    ff, fg = _fns(functx, spec)

    def fsync(out=None):
        import torch

        torch.cuda.synchronize()

    def jsync(out=None):
        jax.block_until_ready(out)

    for what, f, j, n in (("forward", ff, jf, 2), ("gradient", fg, jg, 3)):
        _profile_table(f"{name}: functx {what}", lambda: f(*fx_args[:n]), fsync, calls)
        print(f"  functx {what} program: {graph_info(f)}")
        _profile_table(f"{name}: JAX {what}", lambda: j(*jx_args[:n]), jsync, calls)


def graph_modes(name, spec, reps, inner):
    """functx's forward and gradient with each CUDA-graph mode forced (copy: the arguments
    copied into the graph's buffers; in place: the graph reads them where they lie; none:
    direct launches), ms per call: ``{mode: (forward, gradient)}``."""
    import torch

    import functx

    rng, x, w = _inputs(spec)
    dev = functx.devices("gpu")[0]
    ff, fg = _fns(functx, spec)
    fx_args = [functx.device_put(a, dev) for a in (x, w)]
    g = rng.standard_normal(np.shape(ff(*fx_args))).astype(np.float32)
    fx_args.append(functx.device_put(g, dev))

    def fsync(out=None):
        torch.cuda.synchronize()

    times = {}
    for mode in ("copy", "in place", "none"):
        row = []
        for f, n in ((ff, 2), (fg, 3)):
            for exe in _exes(f):
                exe.use_graphs = mode != "none"
                exe.graph_mode = mode if mode != "none" else exe.graph_mode
                exe._graphs = {}
            row.append(_median_time(lambda: f(*fx_args[:n]), fsync, reps, inner))
        times[mode] = tuple(row)
    return times


def torch_alternatives(torch, name, spec, reps, inner):
    """Other ways cuDNN could compute a case's steps, timed at the torch level on channels-last
    tensors (each checked against the first form of its row): ``[(label, ms)]``. Stride 2 with
    uneven 'SAME' padding (low 0, high 1): the data gradient of the padded input ``P`` with the
    window copied out (the step's form) against the data gradient of ``x`` itself with one zero
    tap in front of each axis and symmetric padding 1 (cuDNN writes ``x``'s shape: no scratch,
    no copy, 16/9 of the taps); the same trick for the forward and the kernel gradient against
    the pad kernel. A 1-D convolution: height 1 ``(N, C, 1, L)`` against width 1 ``(N, C, L,
    1)``, and the forward as 5 accumulated products of shifted rows."""
    F = torch.nn.functional
    dev = torch.device("cuda" if _gpu() else "cpu")
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = True
    rng, x, w = _inputs(spec)
    nd = len(spec["strides"])
    cl = torch.channels_last

    def sync(out=None):
        torch.cuda.synchronize()

    def t(fn):
        return _median_time(fn, sync, reps, inner) * 1e3

    def close(a, b):
        a, b = a.double(), b.double()
        return float((a - b).abs().max() / b.abs().max().clamp_min(1e-30))

    rows = []
    if nd == 2 and spec["strides"] == (2, 2) and spec["pad"] == "SAME":
        xt = torch.from_numpy(x).to(dev).permute(0, 3, 1, 2)  # (channels-last view)
        wt = torch.from_numpy(w).to(dev).permute(3, 2, 0, 1).contiguous(memory_format=cl)
        n, c, h, wd = xt.shape
        if h % 2 or wd % 2 or wt.shape[-1] != 3:
            return rows
        w4 = F.pad(wt, (1, 0, 1, 0)).contiguous(memory_format=cl)  # (a zero tap in front)
        g = F.conv2d(F.pad(xt, (0, 1, 0, 1)), wt, None, 2)
        g = torch.randn_like(g).contiguous(memory_format=cl)

        def dx_window():
            p = torch.empty((n, c, h + 1, wd + 1), device=dev).contiguous(memory_format=cl)
            gx = torch.ops.aten.convolution_backward(
                g, p, wt, None, (2, 2), (0, 0), (1, 1), False, (0, 0), 1, (True, False, False)
            )[0]
            out = torch.empty_like(xt).contiguous(memory_format=cl)
            out.copy_(gx[:, :, :h, :wd])
            return out

        def dx_taps():
            return torch.ops.aten.convolution_backward(
                g, xt, w4, None, (2, 2), (1, 1), (1, 1), False, (0, 0), 1, (True, False, False)
            )[0]

        def fwd_pad():
            p = F.pad(xt, (0, 1, 0, 1)).contiguous(memory_format=cl)
            return F.conv2d(p, wt, None, 2)

        def fwd_taps():
            return F.conv2d(xt, w4, None, 2, 1)

        def dw_pad():
            p = F.pad(xt, (0, 1, 0, 1)).contiguous(memory_format=cl)
            return torch.ops.aten.convolution_backward(
                g, p, wt, None, (2, 2), (0, 0), (1, 1), False, (0, 0), 1, (False, True, False)
            )[1]

        def dw_taps():
            return torch.ops.aten.convolution_backward(
                g, xt, w4, None, (2, 2), (1, 1), (1, 1), False, (0, 0), 1, (False, True, False)
            )[1][:, :, 1:, 1:]

        for label, a, b in (
            ("data gradient: P's, window copied / zero taps, x's", dx_window, dx_taps),
            ("forward: pad kernel + conv / zero taps on x", fwd_pad, fwd_taps),
            ("kernel gradient: pad kernel + wgrad / zero taps on x", dw_pad, dw_taps),
        ):
            err = close(b(), a())
            rows.append((f"{label} (err {err:.0e})", t(a), t(b)))
    if nd == 1:
        xt = torch.from_numpy(x).to(dev)  # (N, L, C)
        wt = torch.from_numpy(w).to(dev)  # (K, C, O)
        k = wt.shape[0]
        if spec["pad"] != "SAME" or k % 2 == 0 or spec.get("groups"):
            return rows
        pad = (k - 1) // 2
        x_h = xt.unsqueeze(1).permute(0, 3, 1, 2)  # (N, C, 1, L) channels-last
        x_w = xt.unsqueeze(2).permute(0, 3, 1, 2)  # (N, C, L, 1) channels-last
        w_h = wt.permute(2, 1, 0).unsqueeze(2).contiguous(memory_format=cl)  # (O, C, 1, K)
        w_w = wt.permute(2, 1, 0).unsqueeze(3).contiguous(memory_format=cl)  # (O, C, K, 1)
        g_h = F.conv2d(x_h, w_h, None, 1, (0, pad))
        g_h = torch.randn_like(g_h).contiguous(memory_format=cl)
        g_w = g_h.permute(0, 1, 3, 2)
        both = (True, True, False)

        def f_h():
            return F.conv2d(x_h, w_h, None, 1, (0, pad))

        def f_w():
            return F.conv2d(x_w, w_w, None, 1, (pad, 0)).permute(0, 1, 3, 2)

        def b_h():
            return torch.ops.aten.convolution_backward(
                g_h, x_h, w_h, None, (1, 1), (0, pad), (1, 1), False, (0, 0), 1, both
            )[0]

        def b_w():
            return torch.ops.aten.convolution_backward(
                g_w, x_w, w_w, None, (1, 1), (pad, 0), (1, 1), False, (0, 0), 1, both
            )[0].permute(0, 1, 3, 2)

        n, length, c = xt.shape
        xp = F.pad(xt, (0, 0, pad, pad))  # (N, L + K - 1, C)

        xp_flat = xp.reshape(-1, c)
        rows_out = xp_flat.shape[0] - (k - 1)

        def f_mm():  # (rows of P: the K - 1 rows past each sequence's end are discarded)
            acc = xp_flat[:rows_out] @ wt[0]
            for j in range(1, k):
                acc.addmm_(xp_flat[j : j + rows_out], wt[j])
            full = torch.cat([acc, acc.new_zeros(k - 1, acc.shape[1])])
            return full.view(n, length + k - 1, -1)[:, :length]

        def f_h_nlc():
            return f_h().permute(0, 2, 3, 1).reshape(n, length, -1)

        for label, a, b in (
            ("forward: height 1 / width 1", f_h, f_w),
            ("both gradients: height 1 / width 1", b_h, b_w),
            ("forward: height 1 / 5 shifted products", f_h_nlc, f_mm),
        ):
            err = close(b(), a())
            rows.append((f"{label} (err {err:.0e})", t(a), t(b)))
    return rows


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
    ap.add_argument("--quick", action="store_true", help="5 samples of 5 calls, no CNN step")
    # (--only cnn: the CNN step alone)
    ap.add_argument("--complex", action="store_true", help="also check complex steps")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes, Triton's interpreter")
    ap.add_argument("--profile", action="store_true", help="kernel tables of two gradients")
    ap.add_argument("--per-tap", action="store_true", help="also time the per-tap products")
    ap.add_argument(
        "--window-taps", action="store_true", help="also time conv.WINDOW_TAPS (uneven pads)"
    )
    ap.add_argument(
        "--one-d-width", action="store_true", help="also time other conv.ONE_D_WIDTH values"
    )
    ap.add_argument("--deterministic", action="store_true", help="also time conv.DETERMINISTIC")
    ap.add_argument(
        "--graph-modes", action="store_true", help="time functx with each CUDA-graph mode forced"
    )
    ap.add_argument(
        "--alternatives", action="store_true", help="time other cuDNN forms at the torch level"
    )
    ap.add_argument("--only", default="", help="comma-separated case-name prefixes")
    args = ap.parse_args()
    if args.quick:
        args.reps, args.inner = 5, 5
    if args.smoke:
        os.environ["TRITON_INTERPRET"] = "1"
        for spec in CASES.values():
            groups = spec.get("groups")
            c = 4 if groups else 3
            spec["x"] = (2, *(7,) * (len(spec["x"]) - 2), c)
            spec["w"] = (*spec["w"][:-2], 1, c) if groups else (*spec["w"][:-2], 3, 4)
            if spec.get("dims", "N").startswith("NC"):
                spec["x"], spec["w"] = (2, 3, 7, 7), (4, 3, 3, 3)
            if groups:
                spec["groups"] = c
        args.reps, args.inner = 1, 1
    import torch

    gpu = torch.cuda.get_device_name(0) if _gpu() else "no GPU (smoke)"
    print(f"GPU convolutions, float32: {gpu}; torch {torch.__version__}")
    t0 = time.perf_counter()
    print("geometry against JAX (forward, input and kernel gradients; 2 cuDNN steps each):")
    check_geometry(args.window_taps)
    print(f"  all equal to JAX within tolerance ({time.perf_counter() - t0:.0f}s)")
    from functx.lowering.triton import conv as tconv

    if tconv.CUDNN_OUT_ERROR:  # (the steps fell back to torch's convolution and a copy)
        print(f"  NOTE: cudnn_convolution.out failed: {tconv.CUDNN_OUT_ERROR}")
    print(f"median of {args.reps} samples of {args.inner} back-to-back calls, ms per call; "
          "ratio = time / JAX's time (below 1: faster than JAX)")  # fmt: skip
    only = [s for s in args.only.split(",") if s]
    for name, spec in CASES.items():
        if only and not any(name.startswith(s) for s in only):
            continue
        rows = run_case(
            name,
            spec,
            args.reps,
            args.inner,
            args.per_tap,
            args.window_taps,
            args.one_d_width,
            args.deterministic,
        )
        name = name if not args.smoke else f"{name} (smoke: {spec['x']})"
        jf, jg = next((r[1], r[2]) for r in rows if r[0] == "JAX")
        print(f"{name}: kernel {spec['w']}, strides {spec['strides']}, {spec['pad']}")
        for label, tf, tg, note in rows:
            print(
                f"  {label:26s} forward {tf * 1e3:8.3f} ({tf / jf:5.2f}x)"
                f"  gradient {tg * 1e3:8.3f} ({tg / jg:5.2f}x)  {note}"
            )
        if args.graph_modes and _gpu():
            for mode, (tf, tg) in graph_modes(name, spec, args.reps, args.inner).items():
                label = f"functx, graphs {mode}"
                print(
                    f"  {label:26s} forward {tf * 1e3:8.3f} ({tf / jf:5.2f}x)"
                    f"  gradient {tg * 1e3:8.3f} ({tg / jg:5.2f}x)"
                )
        if args.alternatives and _gpu():
            for label, ta, tb in torch_alternatives(torch, name, spec, args.reps, args.inner):
                print(f"  torch: {label}: {ta:.3f} / {tb:.3f} ms")
    if args.smoke:  # (Triton's interpreter takes minutes per step of the CNN)
        print("CNN SGD step: not run with --smoke")
    elif not args.quick and (not only or "cnn" in only):
        tf, tj, first, err = run_cnn(args.reps, args.inner, args.smoke, args.profile)
        print(
            f"CNN SGD step (benchmarks/workloads.py, B={8 if args.smoke else 128}): functx "
            f"{tf * 1e3:.3f} ms, JAX {tj * 1e3:.3f} ms ({tf / tj:.2f}x JAX's time); functx first "
            f"call {first:.1f}s; loss and updates within {err:.0e} of JAX's"
        )
    if args.profile and _gpu():
        for name in ("conv3x3/2 (32,32,32,128)", "conv1d w5 (16,1024,256)"):
            if not only or any(name.startswith(s) for s in only):
                profile_case(name, CASES[name])
    if args.complex:
        check_complex()


if __name__ == "__main__":
    main()
