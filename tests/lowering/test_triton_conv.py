"""Convolutions in a Triton program as cuDNN steps (``lowering/triton/conv.py``): the forward sum
over kernel taps, the input gradient and the kernel gradient are each recognised and computed by
``torch.nn.functional.convNd`` / ``torch.nn.grad.convNd_input`` / ``convNd_weight``. Triton runs
in its CPU interpreter on CPU tensors (torch's CPU convolutions stand in for cuDNN); values
against the eager path and JAX; the GPU timings are benchmarks/gpu_conv.py's."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from x64util import x64_off

import functx
import functx.lax as flax
import functx.numpy as fnp

pytest.importorskip("torch")
pytest.importorskip("triton")
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

RNG = np.random.default_rng(7)


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _conv_and_grads(lax, np_, grad, x, w, g, kw):
    def f(x, w):
        return lax.conv_general_dilated(x, w, **kw)

    dx, dw = grad(lambda x, w: np_.sum(f(x, w) * g), (0, 1))(x, w)
    return f(x, w), dx, dw


def _check(xs, ws, kw, dt, tol, steps=3):
    from functx.lowering.triton.conv import ConvStep
    from functx.lowering.triton.program import compile_triton
    from functx.transforms import passes

    x, w = RNG.standard_normal(xs).astype(dt), RNG.standard_normal(ws).astype(dt)
    y = flax.conv_general_dilated(x, w, **kw)
    g = RNG.standard_normal(y.shape).astype(dt)

    def fx(x, w, g):
        return _conv_and_grads(flax, fnp, functx.grad, x, w, g, kw)

    exe = compile_triton(passes.simplify(functx.make_jaxpr(fx)(x, w, g)))
    got = [t.numpy() for t in exe(x, w, g)]
    eager = fx(x, w, g)
    want = jax.jit(lambda x, w, g: _conv_and_grads(jax.lax, jnp, jax.grad, x, w, g, kw))(x, w, g)
    for what, a, e, j in zip(("conv", "dx", "dw"), got, eager, want):
        assert a.dtype == np.asarray(e).dtype == np.asarray(j).dtype, what
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol, err_msg=what)
        np.testing.assert_allclose(a, j, rtol=tol, atol=tol, err_msg=what)
    found = [c[0] for c in exe.host_calls if isinstance(c[0], ConvStep)]
    assert len(found) == steps, len(found)
    return found


def test_conv2d_forward_and_gradients_as_cudnn_steps():
    kw = dict(window_strides=(1, 1), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    found = _check((2, 5, 6, 3), (3, 3, 3, 4), kw, np.float64, 1e-12)
    # 'SAME': every step works on x's own buffers, cuDNN pads: the forward and kernel-gradient
    # steps read x, the data-gradient step writes x's gradient (a forward convolution of the
    # cotangent with the reversed taps), no pad or crop kernel around them
    got = sorted((s.kind, s.io[0], s.io[3], s.flip(), s.first) for s in found)
    # the forward step gives the (N, H, W, O) result itself (the reshape after the sum folded:
    # no copy kernel into the program's output)
    assert [s.shaped for s in found if s.kind == "fwd"] == [True]
    # the kernel operands are the taps' own (T, C, O) stack transposed (one read per element)
    assert [s.whole for s in found if s.kind != "dw"] == [True, True]
    assert got == [
        ("dw", (5, 6), (1, 1), False, False),
        ("dx", (5, 6), (1, 1), True, False),
        ("fwd", (5, 6), (1, 1), False, False),
    ]


def test_strided_dilated_convs_default_mode():
    with x64_off():
        kw = dict(
            window_strides=(2, 1),
            padding="VALID",
            rhs_dilation=(1, 2),
            dimension_numbers=("NCHW", "OIHW", "NCHW"),
        )
        found = _check((2, 3, 7, 6), (4, 3, 2, 2), kw, np.float32, 1e-4)
        assert [s.flip() for s in found if s.kind == "dx"] == [False]  # (strided: dgrad)
        # NCHW: the steps read and write the channels-first arrays (no transposes around them)
        assert all(s.first for s in found)
        kw1 = dict(window_strides=(2,), padding=[(2, 1)], dimension_numbers=("NWC", "WIO", "NWC"))
        found = _check((2, 9, 3), (3, 3, 2), kw1, np.float32, 1e-4)
        # uneven padding: the data gradient is P's, the window of x copied out in the step
        assert [s.window for s in found if s.kind == "dx"] == [((2,), (9,))]
        # a grouped convolution (batched products) keeps its per-tap products
        kwg = dict(kw1, feature_group_count=3)
        _check((1, 6, 3), (2, 1, 3), kwg, np.float32, 1e-4, steps=0)


def test_uneven_padding_data_gradient_by_zero_taps(monkeypatch):
    # conv.WINDOW_TAPS: a data gradient whose crop keeps a window of P's gradient (uneven
    # padding) computes the window itself, with zero taps around the kernel's and symmetric
    # padding: a stride-2 'SAME' 3x3 on an even image (pads (0, 1)) is a 4x4 kernel with one
    # zero tap in front per axis and padding 1; a stride-1 'SAME' width 4 (pads (1, 2)) reverses
    # the taps (a forward convolution of the cotangent), the zero tap then behind
    from functx.lowering.triton import conv

    monkeypatch.setattr(conv, "WINDOW_TAPS", True)
    kw = dict(window_strides=(2, 2), padding="SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    (dx,) = [s for s in _check((2, 6, 8, 3), (3, 3, 3, 4), kw, np.float64, 1e-12) if s.kind == "dx"]
    assert (dx.k, dx.zero, dx.window, dx.io, dx.flip()) == (
        (4, 4), ((1, 1), (0, 0)), None, ((6, 8), (0, 0), (6, 8), (1, 1)), False
    )  # fmt: skip
    kw = dict(window_strides=(1,), padding="SAME", dimension_numbers=("NWC", "WIO", "NWC"))
    (dx,) = [s for s in _check((2, 9, 3), (4, 3, 2), kw, np.float64, 1e-12) if s.kind == "dx"]
    assert (dx.k, dx.zero, dx.io[3], dx.flip()) == ((5,), ((1,), (0,)), (2,), True)


def test_conv1d_as_2d_and_uneven_padding():
    # 1-D: torch sees a channels-last 2-D convolution of height 1. 'SAME' width 5 folds the pad
    # and the crop; an uneven padding cannot be cuDNN's (one number per side), so the
    # steps keep P (tested above); dilation 2 with 'SAME' reverses the taps with padding
    # (k - 1) * d - 2 = 2
    kw = dict(window_strides=(1,), padding="SAME", dimension_numbers=("NWC", "WIO", "NWC"))
    found = _check((2, 11, 3), (5, 3, 4), kw, np.float64, 1e-12)
    assert sorted((s.kind, s.io[0]) for s in found) == [
        ("dw", (11,)),
        ("dx", (11,)),
        ("fwd", (11,)),
    ]
    kwd = dict(kw, rhs_dilation=(2,), dimension_numbers=("NCW", "OIW", "NCW"))
    found = _check((1, 3, 10), (2, 3, 3), kwd, np.float64, 1e-12)
    assert {s.kind: (s.io[3], s.first) for s in found}["dx"] == ((2,), True)


def test_conv_step_layouts():
    # the step itself (NumPy in, torch on the CPU): a 2x2 kernel with dilation (1, 2) and
    # strides (1, 2) over P (2, 5, 7, 3), against sums over the taps; the kernel operand is
    # (O, T, C), the kernel gradient (O, T, C)
    from functx.lowering.triton.conv import ConvStep

    p = RNG.standard_normal((2, 5, 7, 3))
    offs = [(0, 0), (0, 2), (1, 0), (1, 2)]
    out_sp, st = (4, 2), (1, 2)

    def window(o):
        return p[
            :, o[0] : o[0] + out_sp[0] * st[0] : st[0], o[1] : o[1] + out_sp[1] * st[1] : st[1]
        ]

    wins = [window(o).reshape(-1, 3) for o in offs]
    w = RNG.standard_normal((4, 3, 5))
    g = RNG.standard_normal((2 * 4 * 2, 5))
    fwd = ConvStep("fwd", p.shape, out_sp, st, offs, 3, 5, p.dtype, False)
    got = fwd(p, w.transpose(2, 0, 1))[0]
    np.testing.assert_allclose(got, sum(a @ k for a, k in zip(wins, w)), atol=1e-12)
    dw = ConvStep("dw", p.shape, out_sp, st, offs, 3, 5, p.dtype, False)
    want = np.stack([a.T @ g for a in wins])
    np.testing.assert_allclose(dw(p, g)[0].transpose(1, 2, 0), want, atol=1e-12)
    with pytest.raises(ValueError, match="not a grid"):
        ConvStep("fwd", p.shape, out_sp, st, offs[::-1], 3, 5, p.dtype, False)


def test_cudnn_format_of_the_steps_views():
    # the format in which cuDNN may write a step's output itself (torch reads it from strides)
    import torch

    from functx.lowering.triton.conv import ConvStep, cudnn_format

    cl, std = torch.channels_last, torch.contiguous_format
    flat = torch.empty(2 * 5 * 6 * 3)
    for first, fmt in ((False, cl), (True, std)):
        step = ConvStep("fwd", (2, 5, 6, 3), (5, 6), (1, 1), [(0, 0), (0, 1)], 3, 3, "f4", 0)
        step.first = first
        img = step._view(flat, 2, 3, (5, 6))
        w = step._view(torch.empty(3 * 3 * 2), 3, 3, (1, 2))
        assert cudnn_format(torch, img, img, w) == fmt
        one_d = step._view(flat, 2, 3, (30,))  # (a 1-D forward convolution: width 1)
        assert one_d.shape == (2, 3, 30, 1) and cudnn_format(torch, one_d, one_d, one_d) == fmt
        step.kind = "dw"  # (a kernel gradient: height 1, conv.ONE_D_WIDTH)
        assert step._view(flat, 2, 3, (30,)).shape == (2, 3, 1, 30)
    nchw = torch.empty(2, 3, 5, 6)
    assert cudnn_format(torch, nchw, nchw.to(memory_format=cl), nchw) is None  # (mixed)
    assert cudnn_format(torch, torch.empty(2, 1, 5, 6), nchw, nchw) is None  # (C = 1: either)


def test_long_sum_of_products_is_no_conv():
    # a sum of 1,500 products is walked without recursion (no RecursionError) and left alone
    from functx.lowering.triton.conv import recognize_convs

    xs = [np.ones((2, 2), np.float32)] * 1500
    closed = functx.make_jaxpr(lambda *xs: sum(x @ x for x in xs))(*xs)
    assert recognize_convs(closed) is closed
