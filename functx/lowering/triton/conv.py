"""Convolutions of a Triton program as one cuDNN call each: a Jaxpr -> Jaxpr rewrite that finds
the sums over kernel taps ``functx/_conv.py`` builds and replaces each with a library step.

``lax.conv_general_dilated`` is a composite (``_conv.py``'s docstring): the padded input ``P``
(channels last, ``(N, spatial..., C)``), one strided ``slice`` of ``P`` per kernel tap (its
windows, reshaped to ``(N * out, C)``) and one ``dot_general`` per tap with the tap's ``(C, O)``
kernel, summed. On a GPU that is, per tap, a copy of the windows and a cuBLAS product (on an
H200 the 3x3 convolution of benchmarks/conv.py took 1.29x JAX's time forward, 1.71x for the
gradient, where XLA calls cuDNN). The derivatives are sums of the same shape (the rules of
pad/slice/dot_general transposed), so three sums are recognised, each an ``add`` chain whose
terms all have one form over the taps of one grid (offsets ``base + i * dilation``):

* forward, ``sum_t dot(reshape(slice(P, offset_t)), K_t)``: cuDNN's forward convolution;
* input gradient, ``sum_t pad(reshape(dot(G, K_t^T)), offset_t)``: cuDNN's data gradient, or
  for stride 1 its forward convolution with the taps reversed (the result is the gradient with
  respect to ``P``: zero outside the taps' reach);
* kernel gradient, ``sum_t pad(reshape(dot(G^T, windows_t)^T), slot_t)`` (each tap's ``(C, O)``
  block put in its slot of a ``(T, C, O)`` stack): cuDNN's kernel gradient.

Each becomes a ``pure_callback`` equation whose callback is a ``ConvStep`` (a host step of the
program with a ``torch`` form, as the linear-algebra steps are: ``LibraryStep.torch``), run on the
program's device tensors between launches. The steps take and produce the layouts the program
holds, so no layout conversion runs around cuDNN (the profile of an H200 run had 20 NHWC <-> NCHW
conversion kernels and device copies around the calls, 40% of the 3x3 gradient's GPU time):

* every channels-last buffer is a channels-last torch view (``ConvStep``: torch's own
  ``(N, C, spatial...)`` order over the ``(N, spatial..., C)`` memory), a 1-D convolution a 2-D
  one of height 1 (torch has no channels-last format for 3-D tensors and made NCW copies);
* the kernel operand is written by the program in cuDNN's order, ``(O, T, C)``: the transpose of
  the ``(T, C, O)`` stack ``_conv.py`` cuts the taps from (``_kernel_stack``; one read per
  element), and the "dw" result is read back from it;
* a 1-D convolution's forward calls see it as cuDNN's 2-D one of width 1, its backward calls
  (the strided data gradient, the kernel gradient) of height 1 (``ONE_D_WIDTH``: cuDNN's
  fastest of each on an H200); the kernel gradients ask for deterministic algorithms
  (``DETERMINISTIC``; the others zero a workspace first and were slower for the conv1d);
* padding: when ``P`` is a zero ``pad`` of the input with the same padding on both sides of each
  axis (``'SAME'`` with an odd kernel), the "fwd"/"dw" steps read the input itself and cuDNN pads
  (the pad kernel goes: ``ConvStep.unpad``); when the "dx" result's only use crops it (the
  transpose of that pad), the step computes the cropped window (the input's gradient) instead,
  with uneven padding (a stride-2 'SAME') by copying it out of cuDNN's gradient of ``P`` (one
  copy, no crop kernel), or with ``WINDOW_TAPS`` as the gradient of the window itself, the
  kernel given zero taps around its own (``ConvStep.zero_taps``: cuDNN's padding is symmetric);
* on a GPU the forward convolution, and the stride-1 input gradient as a forward convolution of
  the cotangent with the reversed taps, write the program's buffer themselves
  (``cudnn_convolution.out``; a channels-last forward gives the ``(N, out..., O)`` array the
  program reshapes its sum to, so the program's output is that buffer: no copy kernel); a
  strided input gradient and the kernel gradient come from ``convolution_backward`` and are
  copied in (same layout: one copy; torch's ``cudnn_convolution_transpose.out`` is a copy too).

On an H100 (benchmarks/RESULTS.md, 11:35 UTC) the 3x3 gradient's cuDNN kernels then take about
JAX's time (63 us per call against 66; the reversed-taps forward convolution 17 us against XLA's
data gradient 21), forward / gradient 0.76x / 1.04x JAX's time (NCHW 0.65x / 0.64x), the rest
being the copy-mode CUDA graph's input and output copies.

Float32 convolutions follow the products' precision (TF32 unless ``default_matmul_precision``
says float32, as the ``dot`` kernels do). What the patterns do not cover (grouped or batched
convolutions, which are batched ``dot_general``\\ s; depthwise convolutions, which are
multiply-adds that ``jit`` fuses into one kernel; kernels of more than 64 taps, one gather; sums
inside control flow) keeps its per-tap products. The intermediate values the matched sums read
are then dead and DCE removes them.
"""

from __future__ import annotations

import contextlib
import math
from collections import defaultdict

import numpy as np

from functx import config, dtypes, ops, tracing
from functx.control import callbacks
from functx.core import ClosedJaxpr, Literal, ShapedArray
from functx.source_info import source_info
from functx.transforms import passes

#: whether ``compile_triton`` rewrites the sums (benchmarks/gpu_conv.py turns it off to time the
#: per-tap products)
ENABLED = True
#: whether a channels-last data-gradient step with uneven padding (a stride-2 'SAME') computes
#: the input's gradient itself with zero taps (``ConvStep.zero_taps``) rather than ``P``'s, then
#: copied out (channels-first steps: not, after an H200 run gave a wrong gradient for the NCHW
#: stride-2 geometry row that the CPU's torch computes right; cause not found)
WINDOW_TAPS = False
#: which cuDNN calls see a 1-D convolution as a 2-D one of width 1 (``(N, C, L, 1)``) rather
#: than of height 1 (``(N, C, 1, L)``, torch's own choice for ``conv1d``): "conv" (the forward
#: convolutions: the "fwd" steps and the stride-1 data gradients), "all" or "none". Measured on
#: an H200 (gpu_conv.py, (16, 1024, 256) width 5, 256 -> 256): cuDNN's forward 0.034 ms at
#: width 1 against 0.043 at height 1, its two gradients 0.135 against 0.122
ONE_D_WIDTH = "conv"
#: the steps ("fwd", "dx", "dw") that ask cuDNN for deterministic algorithms (its autotuner then
#: skips the kernel gradients that accumulate with atomics, whose workspace a kernel zeroes
#: first; on an H200 the conv1d gradient took 0.122 ms so against 0.134, the 3x3 forward 0.032
#: against 0.027)
DETERMINISTIC = frozenset({"dw"})

_ADDS = ("add", "add_any")
_FLOATS = frozenset(np.dtype(d) for d in (np.float16, np.float32, np.float64)) | {
    np.dtype(dtypes.bfloat16)
}
_FWD_DN = (((1,), (0,)), ((), ()))  # windows (M, C) x kernel (C, O)
_DX_DN = (((1,), (1,)), ((), ()))  # cotangent (M, O) x kernel (C, O)
_DW_DN = (((0,), (0,)), ((), ()))  # cotangent (M, O) x windows (M, C), or the reverse


class ConvStep:
    """One recognised convolution sum (``kind``: "fwd", "dx" or "dw") as a host step: ``torch``
    computes it with cuDNN on the step's flat tensors; ``__call__`` on NumPy arrays (torch on the
    CPU). ``offsets``: the terms' tap offsets in ``P``'s spatial axes, in the grid's row-major
    order (``_match`` sorts the terms). Prints with its address, as every host step does.

    Layouts (all the program's own buffers, read and written in place as torch views):

    * the image side (the input of "fwd"/"dw", the result of "dx"): ``(N, spatial..., C)``, seen
      by torch as a channels-last ``(N, C, spatial...)`` view; ``io`` says which part of which
      array it is (``P`` itself, or the array ``P`` pads / the window of ``P`` the program keeps:
      ``unpad``), cuDNN padding the rest;
    * the cotangent ``G`` and the "fwd" result: ``(N * out, O)``, channels-last likewise;
    * the kernel operand: ``(O, T, C)`` (torch's ``(O, C, k...)`` channels-last), or for a
      stride-1 "dx" computed as a forward convolution (``flip``), the taps reversed as
      ``(C, T, O)``; the "dw" result is ``(O, T, C)``. ``_emit`` builds and reads these in the
      program, where the transposes join the kernels that stack or use the taps.

    A 1-D convolution is a 2-D one of height 1 (torch keeps 3-D tensors in its contiguous
    format, which made cuDNN calls on NWC buffers copy to NCW and back). On a GPU the forward
    convolutions write into the program's buffer (``cudnn_convolution.out``); the data
    gradient of a strided convolution and the kernel gradient come from
    ``convolution_backward`` and are copied in (one copy of the same layout)."""

    __slots__ = (
        "kind",
        "p_shape",
        "out_sp",
        "strides",
        "offsets",
        "c",
        "o",
        "dtype",
        "tf32",
        "base",
        "dilation",
        "k",
        "need",
        "io",
        "first",
        "window",
        "shaped",
        "zero",
        "whole",
        "__weakref__",
    )

    #: the step only queues work on the current stream (no host reads, no allocation the caching
    #: allocator cannot capture), so the runtime may capture it in a program's CUDA graph
    graph_safe = True

    def __init__(self, kind, p_shape, out_sp, strides, offsets, c, o, dtype, tf32, first=False):
        self.kind, self.p_shape, self.out_sp = kind, tuple(p_shape), tuple(out_sp)
        self.strides, self.offsets = tuple(strides), [tuple(t) for t in offsets]
        self.c, self.o, self.dtype, self.tf32 = c, o, np.dtype(dtype), tf32
        grid = _grid(self.offsets)
        if grid is None or grid[3] != list(range(len(self.offsets))):
            raise ValueError(f"tap offsets {offsets} are not a grid in row-major order")
        self.base, self.dilation, self.k = grid[:3]
        # the part of P the taps read (or, for "dx", write), per spatial axis
        self.need = tuple(
            (n - 1) * s + (k - 1) * d + 1
            for n, s, k, d in zip(self.out_sp, self.strides, self.k, self.dilation)
        )
        # the image side: (its spatial shape, the part read or written: start and length per
        # spatial axis, cuDNN's padding): P itself until ``unpad``
        self.io = (self.p_shape[1:-1], self.base, self.need, (0,) * len(self.k))
        #: whether the image-side operands and the cotangent / result are channels-first
        #: ``(N, C, spatial...)`` arrays (the program's own, before the transposes of
        #: ``dimension_numbers``: ``_match`` folds them), the kernel operand then ``(O, C, T)``
        self.first = first
        #: for "dx": the window of ``P``'s gradient the program keeps, ``(low, size)`` per
        #: spatial axis, when the step writes that window (the crop after it folded: ``_crop``)
        #: but cuDNN's padding cannot stand for ``P``'s (uneven pads); None otherwise
        self.window = None
        #: for a channels-last "fwd": whether the result is ``(N, out..., O)`` (the reshape
        #: after the sum folded: the program's output buffer is then the step's own, no copy
        #: kernel) rather than ``(N * out, O)``
        self.shaped = False
        #: zero taps added before and after the kernel's on each spatial axis (``zero_taps``;
        #: ``k`` counts them), else None
        self.zero = None
        #: whether the kernel operand is built from the ``(T, C, O)`` stack the taps' kernels
        #: are rows of (``_kernel_stack``: one read per element) rather than from the taps
        self.whole = False

    def unpad(self, shape_sp, lo):
        """Use the array that ``P`` zero-pads by ``lo`` (low side, per spatial axis; spatial
        shape ``shape_sp``) as the image side instead of ``P``, cuDNN padding it, when the
        padding the taps reach is the same on both sides of each axis; for "dx", ``lo`` and
        ``shape_sp`` describe the window of ``P`` the program keeps (the gradient of the array
        ``P`` pads). Returns whether it does."""
        start, length, pads = [], [], []
        for b, n, low, size in zip(self.base, self.need, lo, shape_sp):
            a, e = b - low, b - low + n  # (the part read, in the array's coordinates)
            left, right = max(0, -a), max(0, e - size)
            if left != right or min(e, size) <= max(a, 0):
                return False
            start.append(max(a, 0))
            length.append(min(e, size) - max(a, 0))
            pads.append(left)
        self.io = (tuple(shape_sp), tuple(start), tuple(length), tuple(pads))
        return True

    def zero_taps(self):
        """Make a "dx" step that keeps a window of ``P``'s gradient (``window``) compute the
        window itself: the data gradient of the window-shaped input of a convolution whose
        kernel has zero taps around its own and symmetric padding (the window's position in
        ``P`` then in the taps; cuDNN writes the result: no scratch buffer, no copy). With
        window ``[lo, lo + size)`` of ``P``, tap ``j`` at ``base + s i + d j``: ``z`` zero taps in
        front and padding ``p = d z + lo - base`` put window index ``m`` at ``s i + d (j + z) -
        p``; zero taps behind and torch's output padding fill up to ``size``. Not when the
        output padding cannot be cuDNN's (not below the stride) or the taps would more than
        double. Returns whether it does."""
        lo, size = self.window
        zlo, zhi, pads, k2 = [], [], [], []
        for b, s, d, n, k, low, m in zip(
            self.base, self.strides, self.dilation, self.out_sp, self.k, lo, size
        ):
            r0 = m - (n - 1) * s - d * (k - 1) - 1 + 2 * (low - b)
            z = max(0, -((low - b) // d), -(r0 // d))  # (ceilings of (b - low) / d, -r0 / d)
            r = r0 + d * z
            z2, op = divmod(r, d)
            if op >= s:
                return False
            zlo.append(z)
            zhi.append(z2)
            pads.append(d * z + low - b)
            k2.append(z + k + z2)
        if math.prod(k2) > 2 * math.prod(self.k):
            return False
        self.k, self.zero = tuple(k2), (tuple(zlo), tuple(zhi))
        self.io = (tuple(size), (0,) * len(size), tuple(size), tuple(pads))
        self.window = None
        return True

    def flip(self):
        """Whether a "dx" step is a forward convolution of ``G`` with the reversed taps (stride
        1: cuDNN then writes the program's buffer itself)."""
        pads = self.io[3]
        return (
            self.kind == "dx"
            and all(s == 1 for s in self.strides)
            and all(p <= (k - 1) * d for p, k, d in zip(pads, self.k, self.dilation))
        )

    def __repr__(self):
        return f"<cuDNN conv {self.kind} {self.p_shape} taps {self.k} at 0x{id(self):x}>"

    def out_shape(self):
        n, t = self.p_shape[0], len(self.offsets)
        if self.kind == "fwd":
            if self.first:
                return (n, self.o, *self.out_sp)
            return (
                (n, *self.out_sp, self.o) if self.shaped else (n * math.prod(self.out_sp), self.o)
            )
        if self.kind == "dx":
            sp = self.io[0] if self.window is None else self.window[1]
            return (n, self.c, *sp) if self.first else (n, *sp, self.c)
        return (self.o, self.c, t) if self.first else (self.o, t, self.c)

    def kernel_layout(self):
        """The kernel operand's axes, from the ``(T, C, O)`` stack in grid order (the taps
        reversed first when ``flip``): the permutation ``_emit`` applies."""
        if self.flip():
            return (1, 2, 0) if self.first else (1, 0, 2)  # (C, O, T) / (C, T, O)
        return (2, 1, 0) if self.first else (2, 0, 1)  # (O, C, T) / (O, T, C)

    # --- torch -----------------------------------------------------------------------------
    def _image(self, t):
        """The image side (flat ``t``) as torch's ``(N, C, spatial...)`` (a channels-last view
        unless ``first``)."""
        shape, start, length, _ = self.io
        n, c, sp = self.p_shape[0], self.c, 2 if self.first else 1
        x = t.view(n, c, *shape) if self.first else t.view(n, *shape, c)
        for ax, (b, m) in enumerate(zip(start, length)):
            if m != shape[ax]:
                x = x.narrow(ax + sp, b, m)
        return self._nchw(x)

    def _view(self, t, a, b, sp):
        """Flat ``t`` as torch's ``(a, b, sp...)``: ``(a, sp..., b)`` memory, channels-last,
        or when ``first`` ``(a, b, sp...)`` memory."""
        return self._nchw(t.view(a, b, *sp) if self.first else t.view(a, *sp, b))

    def _nchw(self, t):
        if not self.first:
            return _nc(t, self.width())
        return t.unsqueeze(3 if self.width() else 2) if t.dim() == 3 else t

    def _keep_window(self, reach, out):
        """Copy the part of the taps' reach (``io``) inside ``window`` from ``reach`` (``P``'s
        gradient over the reach: torch's ``(N, C, spatial...)`` view, 1-D as 2-D, as
        ``_image`` gives) into ``out`` (the window, flat), zeros elsewhere."""
        _, start, _, _ = self.io
        lo, size = self.window
        dst = self._view(out, self.p_shape[0], self.c, size)
        axes = [2 if self.width() else 3] if len(size) == 1 else range(2, 2 + len(size))
        full = True
        for ax, b, w0, ws in zip(axes, start, lo, size):
            a, e = max(b, w0), min(b + reach.shape[ax], w0 + ws)
            if e <= a:  # (the taps reach none of the window)
                out.zero_()
                return
            full = full and a == w0 and e == w0 + ws
            reach = reach.narrow(ax, a - b, e - a)
            dst = dst.narrow(ax, a - w0, e - a)
        if not full:
            out.zero_()
        dst.copy_(reach)

    def _params(self):
        """(stride, padding, dilation) for torch, 1-D as 2-D."""
        wd = self.width()
        return _lift(self.strides, 1, wd), _lift(self.io[3], 0, wd), _lift(self.dilation, 1, wd)

    def width(self):
        """Whether a 1-D step is cuDNN's 2-D convolution of width 1 (``ONE_D_WIDTH``)."""
        if ONE_D_WIDTH == "all":
            return True
        return ONE_D_WIDTH == "conv" and (self.kind == "fwd" or self.flip())

    def torch(self, ins, outs):
        """The convolution on the flat tensors ``ins`` into ``outs`` (cuDNN on a GPU)."""
        import torch  # (optional dependency: only a Triton program calls this)

        n, k = self.p_shape[0], self.k
        stride, pad, dil = self._params()
        det = self.kind in DETERMINISTIC
        with _conv_flags(torch, ins[0], self.tf32, det):
            if self.kind == "fwd":
                x = self._image(ins[0])
                w = self._view(ins[1], self.o, self.c, k)
                y = self._view(outs[0], n, self.o, self.out_sp)
                _conv_into(torch, y, x, w, stride, pad, dil, self.tf32, det)
                return
            if self.kind == "dx":
                g = self._view(ins[0], n, self.o, self.out_sp)
                shape, start, length, _ = self.io
                if self.flip():  # (cuDNN's forward convolution writes the buffer itself)
                    if self.window is not None:  # (P's gradient in a scratch buffer first)
                        buf = outs[0].new_empty(n * math.prod(shape) * self.c)
                    elif tuple(length) != tuple(shape):  # (the taps reach part of it: zeros)
                        buf = outs[0].zero_()
                    else:
                        buf = outs[0]
                    dx = self._image(buf)
                    w = self._view(ins[1], self.c, self.o, k)
                    pad2 = [(kk - 1) * d - p for kk, d, p in zip(k, self.dilation, self.io[3])]
                    pad2 = _lift(pad2, 0, self.width())
                    _conv_into(torch, dx, g, w, stride, pad2, dil, self.tf32, det)
                    if self.window is not None:
                        self._keep_window(dx, outs[0])
                    return
                # a strided data gradient: cuDNN's, in a tensor of its own (torch has no
                # "out" form of it), copied once into the result or its window
                w = self._view(ins[1], self.o, self.c, k)
                if self.window is None:
                    if tuple(length) != tuple(shape):  # (the taps reach part of it: zeros)
                        outs[0].zero_()
                    dx = self._image(outs[0])
                else:  # (P's shape and layout for torch; cuDNN writes a tensor of its own)
                    dx = self._image(outs[0].new_empty(n * math.prod(shape) * self.c))
                mask = [True, False, False]
                gx = torch.ops.aten.convolution_backward(
                    g, dx, w, None, stride, pad, dil, False, [0] * len(stride), 1, mask
                )[0]
                if self.window is None:
                    dx.copy_(gx)
                else:
                    self._keep_window(gx, outs[0])
                return
            x = self._image(ins[0])
            g = self._view(ins[1], n, self.o, self.out_sp)
            gw = self._view(outs[0], self.o, self.c, k)  # (its shape for torch; then the result)
            mask = [False, True, False]
            res = torch.ops.aten.convolution_backward(
                g, x, gw, None, stride, pad, dil, False, [0] * len(stride), 1, mask
            )[1]
            gw.copy_(res)

    def __call__(self, *vals):
        import torch

        ins = [torch.from_numpy(np.ascontiguousarray(v)).reshape(-1) for v in vals]
        out = torch.empty(math.prod(self.out_shape()), dtype=ins[0].dtype)
        self.torch(ins, [out])
        return [out.numpy().reshape(self.out_shape())]


def _nc(t, width=False):
    """A channels-last tensor ``(A, spatial..., B)`` as torch's ``(A, B, spatial...)`` view; one
    spatial axis gets a unit height first, or with ``width`` a unit width after it (a 2-D
    channels-last view: torch's 3-D tensors have no channels-last format)."""
    if t.dim() == 3:
        t = t.unsqueeze(2 if width else 1)
    return t.movedim(-1, 1)


#: whether ``torch.ops.aten.cudnn_convolution.out`` works here (False after it raised once;
#: ``CUDNN_OUT_ERROR`` then says why, and the steps use torch's convolution and a copy)
_CUDNN_OUT = True
CUDNN_OUT_ERROR = None


def _lift(v, unit, width=False):
    """A 1-D convolution's parameter for its 2-D form (height 1 first, or width 1 last)."""
    if len(v) != 1:
        return tuple(v)
    return (*v, unit) if width else (unit, *v)


def cudnn_format(torch, out, x, w):
    """The memory format in which cuDNN can write the convolution of ``x`` and ``w`` straight
    into ``out`` (channels-last, or torch's contiguous format for a channels-first step): the
    one all three are laid out in, unambiguously for ``out`` (whose format torch's
    ``cudnn_convolution.out`` reads from its strides); else None."""
    cl = torch.channels_last if out.dim() == 4 else torch.channels_last_3d
    is_cl, is_std = out.is_contiguous(memory_format=cl), out.is_contiguous()
    if is_cl == is_std:  # (neither, or both: a format torch would have to guess)
        return None
    fmt = cl if is_cl else torch.contiguous_format
    return fmt if all(t.is_contiguous(memory_format=fmt) for t in (x, w)) else None


def _conv_into(torch, out, x, w, stride, pad, dil, tf32, det=False):
    """``out[...] = conv(x, w)``: on a GPU, cuDNN writes ``out`` itself when the three share a
    memory format (no conversion, no copy: ``cudnn_format``); otherwise torch's convolution and
    one copy."""
    global _CUDNN_OUT, CUDNN_OUT_ERROR
    if _CUDNN_OUT and out.is_cuda and out.dtype != torch.float64:
        if cudnn_format(torch, out, x, w) is not None:
            try:
                torch.ops.aten.cudnn_convolution.out(
                    x, w, pad, stride, dil, 1, True, det, bool(tf32), out=out
                )
                return
            except Exception as e:  # (a torch without it: its own convolution from now on)
                _CUDNN_OUT, CUDNN_OUT_ERROR = False, f"{type(e).__name__}: {e}"
    conv = torch.nn.functional.conv2d if out.dim() == 4 else torch.nn.functional.conv3d
    out.copy_(conv(x, w, stride=stride, padding=pad, dilation=dil))


@contextlib.contextmanager
def _conv_flags(torch, t, tf32, det=False):
    """cuDNN's TF32 switch as the products have it, and its autotuner (as XLA autotunes its
    convolutions), for the call only."""
    if t.device.type != "cuda":
        yield
        return
    c = torch.backends.cudnn
    prev = (c.allow_tf32, c.benchmark, c.deterministic)
    c.allow_tf32, c.benchmark, c.deterministic = bool(tf32), True, det
    try:
        yield
    finally:
        c.allow_tf32, c.benchmark, c.deterministic = prev


def _grid(offsets):
    """``(base, dilation, k, grid_index)`` of tap offsets that fill a grid ``base + i *
    dilation`` (``grid_index[t]``: term ``t``'s row-major place in it), else None."""
    nd = len(offsets[0])
    base, dil, k = [], [], []
    for ax in range(nd):
        vals = sorted({o[ax] for o in offsets})
        d = 0
        for a, b in zip(vals, vals[1:]):
            d = math.gcd(d, b - a)
        d = d or 1
        base.append(vals[0])
        dil.append(d)
        k.append((vals[-1] - vals[0]) // d + 1)
    idx = []
    for o in offsets:
        i = 0
        for ax in range(nd):
            i = i * k[ax] + (o[ax] - base[ax]) // dil[ax]
        idx.append(i)
    if len(set(idx)) != len(offsets) or len(offsets) != math.prod(k):
        return None
    return tuple(base), tuple(dil), tuple(k), idx


# --- finding the sums ----------------------------------------------------------------------------
class _Graph:
    def __init__(self, jaxpr):
        self.prod = {}
        self.uses = defaultdict(list)
        for e in jaxpr.eqns:
            for v in e.outvars:
                self.prod[v.id] = e
            for v in e.invars:
                if type(v) is not Literal:
                    self.uses[v.id].append(e)
        for v in jaxpr.outvars:
            if type(v) is not Literal:
                self.uses[v.id].append(None)

    def eqn(self, v, name):
        """The equation named ``name`` that makes ``v``, else None."""
        if type(v) is Literal:
            return None
        e = self.prod.get(v.id)
        return e if e is not None and e.prim.name == name else None

    def terms(self, e):
        """The operands of the ``add`` chain rooted at ``e`` (inner adds used once, flattened),
        left to right; walked with a stack (a chain may be thousands of adds long)."""
        out, todo = [], list(reversed(e.invars))
        while todo:
            v = todo.pop()
            inner = None if type(v) is Literal else self.prod.get(v.id)
            if inner is not None and inner.prim.name in _ADDS and len(self.uses[v.id]) == 1:
                todo.extend(reversed(inner.invars))
            else:
                out.append(v)
        return out


def _float(*avals):
    dt = np.dtype(avals[0].dtype)
    return dt in _FLOATS and all(np.dtype(a.dtype) == dt for a in avals)


def _dot_ok(e, dn):
    if e is None or e.params.get("dimension_numbers") != dn:
        return False
    pet = e.params.get("preferred_element_type")
    avals = [v.aval for v in e.invars] + [e.outvars[0].aval]
    return (
        all(a.ndim == 2 for a in avals[:2])
        and _float(*avals)
        and (pet is None or np.dtype(pet) == np.dtype(avals[0].dtype))
    )


def _windows(g, v):
    """``v = reshape(slice(P))`` of tap windows: ``(P, slice shape, strides, offset)``."""
    r = g.eqn(v, "reshape")
    if r is None or r.params.get("dimensions") is not None:
        return None
    s = g.eqn(r.invars[0], "slice")
    if s is None or type(s.invars[0]) is Literal:
        return None
    p = s.invars[0]
    shape, out = p.aval.shape, s.outvars[0].aval.shape
    if len(shape) < 3 or len(shape) > 5 or v.aval.shape != (math.prod(out[:-1]), out[-1]):
        return None
    start, strides = s.params["start_indices"], s.params.get("strides") or (1,) * len(shape)
    if start[0] or start[-1] or out[0] != shape[0] or out[-1] != shape[-1]:
        return None
    if strides[0] != 1 or strides[-1] != 1:
        return None
    return p, out, tuple(strides[1:-1]), tuple(start[1:-1])


def _zero_pad(g, v):
    e = g.eqn(v, "pad")
    if e is None or type(e.invars[1]) is not Literal or e.invars[1].val != 0:
        return None
    return e


def _tf32(e):
    return (e.params.get("precision") or config.matmul_precision()) != "float32"


def _fwd(g, v):
    d = g.prod.get(v.id) if type(v) is not Literal else None
    if d is None or d.prim.name != "dot_general" or not _dot_ok(d, _FWD_DN):
        return None
    w = _windows(g, d.invars[0])
    if w is None:
        return None
    p, out, strides, off = w
    key = ("fwd", p.id, out, strides, d.invars[1].aval.shape)
    return key, off, d.invars[1], dict(p=p, out=out, strides=strides, tf32=_tf32(d))


def _dx(g, v):
    pe = _zero_pad(g, v)
    if pe is None:
        return None
    r = g.eqn(pe.invars[0], "reshape")
    if r is None or r.params.get("dimensions") is not None:
        return None
    d = g.eqn(r.invars[0], "dot_general")
    if d is None or not _dot_ok(d, _DX_DN):
        return None
    out = r.outvars[0].aval.shape  # (N, out..., C)
    cfg = pe.params["padding_config"]
    if len(out) < 3 or len(out) > 5 or cfg[0] != (0, 0, 0) or cfg[-1] != (0, 0, 0):
        return None
    if d.outvars[0].aval.shape != (math.prod(out[:-1]), out[-1]):  # (rows -> (N, out...))
        return None
    if any(lo < 0 or hi < 0 for lo, hi, _ in cfg):
        return None
    strides = tuple(i + 1 for _, _, i in cfg[1:-1])
    off = tuple(lo for lo, _, _ in cfg[1:-1])
    ct = d.invars[0]
    if type(ct) is Literal:
        return None
    key = ("dx", ct.id, out, strides, pe.outvars[0].aval.shape, d.invars[1].aval.shape)
    return key, off, d.invars[1], dict(ct=ct, out=out, strides=strides, tf32=_tf32(d))


def _dw(g, v):
    pe = _zero_pad(g, v)
    if pe is None:
        return None
    r = g.eqn(pe.invars[0], "reshape")
    if r is None or len(r.outvars[0].aval.shape) != 3 or r.outvars[0].aval.shape[0] != 1:
        return None
    src = r.invars[0]
    if type(src) is Literal or r.outvars[0].aval.shape[1:] != tuple(src.aval.shape):
        return None
    t = g.eqn(src, "transpose")
    if t is not None:
        if tuple(t.params["permutation"]) != (1, 0):
            return None
        d = g.eqn(t.invars[0], "dot_general")
        if d is None or not _dot_ok(d, _DW_DN):
            return None
        ct, win = d.invars  # (O, C) = G^T windows
    else:
        d = g.eqn(src, "dot_general")
        if d is None or not _dot_ok(d, _DW_DN):
            return None
        win, ct = d.invars  # (C, O) = windows^T G
    w = _windows(g, win)
    cfg = pe.params["padding_config"]
    if w is None or type(ct) is Literal or cfg[1:] != ((0, 0, 0), (0, 0, 0)) or cfg[0][2]:
        return None
    p, out, strides, off = w
    if ct.aval.shape != (win.aval.shape[0], r.outvars[0].aval.shape[2]):
        return None
    key = ("dw", p.id, ct.id, out, strides, pe.outvars[0].aval.shape)
    slot = cfg[0][0]
    return key, off, slot, dict(p=p, ct=ct, out=out, strides=strides, tf32=_tf32(d))


def _source(g, p, step):
    """The input operand of a "fwd"/"dw" step: the array ``P`` zero-pads, when cuDNN's padding
    can stand for the pad (``ConvStep.unpad``: no pad kernel then), else ``P``."""
    pe = _zero_pad(g, p)
    if pe is None or type(pe.invars[0]) is Literal:
        return p
    cfg = pe.params["padding_config"]
    if cfg[0] != (0, 0, 0) or cfg[-1] != (0, 0, 0) or any(i for _, _, i in cfg):
        return p
    x = pe.invars[0]
    return x if step.unpad(x.aval.shape[1:-1], [lo for lo, _, _ in cfg[1:-1]]) else p


def _crop(g, e, step):
    """The equation that keeps a window of a "dx" step's result (the transpose of ``P``'s pad:
    a ``pad`` with no positive padding, or a unit-stride ``slice``) when it is the result's only
    use, else None: the step then gives that window (the gradient of the array ``P`` pads) in
    place of the crop, computed with cuDNN's padding standing for ``P``'s (``ConvStep.unpad``),
    or for uneven padding as ``P``'s gradient copied out (``ConvStep.window``)."""
    v = e.outvars[0]
    us = g.uses[v.id]
    if len(us) != 1 or us[0] is None:
        return None
    u, shape = us[0], v.aval.shape
    if u.prim.name == "pad" and u.invars[0] is v:
        cfg = u.params["padding_config"]
        if any(lo > 0 or hi > 0 or i for lo, hi, i in cfg) or cfg[0][:2] != (0, 0):
            return None
        if cfg[-1][:2] != (0, 0):
            return None
        lo = [-a for a, _, _ in cfg[1:-1]]
    elif u.prim.name == "slice":
        start = u.params["start_indices"]
        st = u.params.get("strides") or (1,) * len(shape)
        if any(s != 1 for s in st) or start[0] or start[-1]:
            return None
        if tuple(u.outvars[0].aval.shape[:: len(shape) - 1]) != shape[:: len(shape) - 1]:
            return None
        lo = list(start[1:-1])
    else:
        return None
    win = u.outvars[0].aval.shape[1:-1]
    if not step.unpad(win, lo):  # (uneven padding: P's gradient, then the window copied out,
        step.window = (tuple(lo), tuple(win))  # or the window itself with zero taps: _match)
    return u


def _channels_first_in(g, v, nd):
    """The channels-first array whose transpose (``dimension_numbers``'s, to channels-last) is
    ``v``, else None."""
    t = g.eqn(v, "transpose")
    if t is None or tuple(t.params["permutation"]) != (0, *range(2, nd + 2), 1):
        return None
    return None if type(t.invars[0]) is Literal else t.invars[0]


def _channels_first_ct(g, ct, n, out_sp, nd):
    """The channels-first cotangent whose transpose, reshaped to ``(N * out, O)``, is ``ct``."""
    r = g.eqn(ct, "reshape")
    if r is None or r.params.get("dimensions") is not None or type(r.invars[0]) is Literal:
        return None
    shape = r.invars[0].aval.shape
    if shape[:-1] != (n, *out_sp):
        return None
    return _channels_first_in(g, r.invars[0], nd)


def _only_use(g, v, name):
    """The equation named ``name`` (a plain ``reshape``, when so named) that is ``v``'s only
    use, else None."""
    us = g.uses[v.id]
    if len(us) != 1 or us[0] is None or us[0].prim.name != name:
        return None
    if name == "reshape" and us[0].params.get("dimensions") is not None:
        return None
    return us[0]


def _channels_first_out(g, v, nd, reshaped=None):
    """The equation that transposes ``v`` (its only use; after its only use, a reshape to
    ``reshaped``, when given) to channels-first, else None."""
    us = g.uses[v.id]
    if len(us) != 1 or us[0] is None:
        return None
    u = us[0]
    if reshaped is not None:
        if u.prim.name != "reshape" or u.params.get("dimensions") is not None:
            return None
        if tuple(u.outvars[0].aval.shape) != tuple(reshaped):
            return None
        return _channels_first_out(g, u.outvars[0], nd)
    if u.prim.name != "transpose":
        return None
    return u if tuple(u.params["permutation"]) == (0, nd + 1, *range(1, nd + 1)) else None


def _match(g, e):
    """A recognised sum at the ``add`` equation ``e``: ``(ConvStep, operand vars, kernel vars
    (for "dw" the slots), the equation whose result the step gives, the equations between)``
    (``e``, or the crop that follows a "dx" sum, or the transpose back to channels-first)."""
    terms = g.terms(e)
    if len(terms) < 2:
        return None
    for form in (_fwd, _dx, _dw):
        found = [form(g, v) for v in terms]
        if any(f is None for f in found) or len({f[0] for f in found}) != 1:
            continue
        info = found[0][3]
        grid = _grid([f[1] for f in found])
        if grid is None:
            return None
        found = [f for _, f in sorted(zip(grid[3], found), key=lambda p: p[0])]  # (grid order)
        offs = [f[1] for f in found]
        kind = found[0][0][0]
        out_sp = info["out"][1:-1]
        c = info["out"][-1]
        if kind == "fwd":
            p = info["p"]
            o = found[0][2].aval.shape[1]
            step = ConvStep(
                kind, p.aval.shape, out_sp, info["strides"], offs, c, o, p.aval.dtype, info["tf32"]
            )
            x = _source(g, p, step)
            n = p.aval.shape[0]
            x_cf = _channels_first_in(g, x, len(out_sp))
            y_cf = _channels_first_out(g, e.outvars[0], len(out_sp), (n, *out_sp, o))
            if x_cf is not None and y_cf is not None:  # (NCHW-like dimension numbers)
                step.first = True
                skip = g.uses[e.outvars[0].id]  # (the reshape between)
                return step, [x_cf], [f[2] for f in found], y_cf, skip
            r = _only_use(g, e.outvars[0], "reshape")
            if r is not None and tuple(r.outvars[0].aval.shape) == (n, *out_sp, o):
                step.shaped = True  # (the step gives the reshaped result: no copy kernel)
                return step, [x], [f[2] for f in found], r, [e]
            return step, [x], [f[2] for f in found], e, []
        if kind == "dx":
            p_shape = e.outvars[0].aval.shape
            o = found[0][2].aval.shape[1]
            step = ConvStep(
                kind, p_shape, out_sp, info["strides"], offs, c, o, e.outvars[0].aval.dtype,
                info["tf32"],
            )  # fmt: skip
            if any(lo + need > size for lo, need, size in zip(step.base, step.need, p_shape[1:-1])):
                return None
            crop = _crop(g, e, step)
            at = crop or e
            nd = len(out_sp)
            ct_cf = _channels_first_ct(g, info["ct"], p_shape[0], out_sp, nd)
            dx_cf = _channels_first_out(g, at.outvars[0], nd)
            if ct_cf is not None and dx_cf is not None:
                step.first = True
                return step, [ct_cf], [f[2] for f in found], dx_cf, [crop] if crop else []
            if step.window is not None and WINDOW_TAPS:  # (channels-last only: below)
                step.zero_taps()
            return step, [info["ct"]], [f[2] for f in found], at, []
        slots = [f[2] for f in found]
        t = e.outvars[0].aval.shape[0]
        if sorted(slots) != list(range(t)):
            return None
        p = info["p"]
        o = e.outvars[0].aval.shape[2]
        step = ConvStep(
            kind, p.aval.shape, out_sp, info["strides"], offs, c, o, p.aval.dtype, info["tf32"]
        )
        x, nd = _source(g, p, step), len(out_sp)
        x_cf = _channels_first_in(g, x, nd)
        ct_cf = _channels_first_ct(g, info["ct"], p.aval.shape[0], out_sp, nd)
        if x_cf is not None and ct_cf is not None:
            step.first = True
            return step, [x_cf, ct_cf], slots, e, []
        return step, [x, info["ct"]], slots, e, []
    return None


def _kernel_stack(g, kernels):
    """The ``(T, C, O)`` array whose rows ``kernels`` (the taps' ``(C, O)`` kernels in the grid's
    order) are, each a ``reshape`` of a unit ``slice`` of it (``_conv.py`` cuts the taps out of
    such a stack), else None: the step's kernel operand is then that array transposed, one read
    per element (the concatenation of the taps read every tap for each element: on an H200 the
    (128, 9, 128) kernel operand of the stride-2 case took 11 us)."""
    whole = None
    for t, k in enumerate(kernels):
        r = g.eqn(k, "reshape")
        if r is None or r.params.get("dimensions") is not None:
            return None
        s = g.eqn(r.invars[0], "slice")
        if s is None or type(s.invars[0]) is Literal:
            return None
        v = s.invars[0]
        whole = v if whole is None else whole
        shape = tuple(v.aval.shape)
        if v.id != whole.id or len(shape) != 3 or shape[0] != len(kernels):
            return None
        if shape[1:] != tuple(k.aval.shape) or tuple(s.params["start_indices"]) != (t, 0, 0):
            return None
        if tuple(s.params["limit_indices"]) != (t + 1, *shape[1:]):
            return None
        if any(x != 1 for x in s.params.get("strides") or ()):
            return None
    return whole


def _emit(step, operands, kernels):
    """The step's equation and the program's side of its layouts (``ConvStep``): the taps'
    ``(C, O)`` kernels stacked in the kernel operand's layout (``ConvStep.kernel_layout``), and
    a "dw" result read back as the ``(T, C, O)`` stack in the slots' order."""
    args = list(operands)
    if step.kind != "dw":
        if step.whole:  # (the taps' own stack: one read per element, no concatenation)
            stack = ops.rev(kernels[0], (0,)) if step.flip() else kernels[0]
        else:
            ks = kernels[::-1] if step.flip() else kernels
            stack = [ops.reshape(k, (1,) + tuple(tracing.get_aval(k).shape)) for k in ks]
            stack = ops.concatenate(stack, 0)  # (T, C, O)
        if step.zero is not None:  # (zero taps around the kernel's: ``zero_taps``)
            zlo, zhi = step.zero
            if step.flip():
                zlo, zhi = zhi, zlo
            k = [kk - a - b for kk, a, b in zip(step.k, zlo, zhi)]
            stack = ops.reshape(stack, (*k, step.c, step.o))
            cfg = [(a, b, 0) for a, b in zip(zlo, zhi)] + [(0, 0, 0)] * 2
            stack = ops.pad(stack, np.zeros((), step.dtype), cfg)
            stack = ops.reshape(stack, (math.prod(step.k), step.c, step.o))
        args.append(ops.transpose(stack, step.kernel_layout()))
    (out,) = callbacks.pure_callback_p.bind(
        *args,
        callback=step,
        result_avals=(ShapedArray(step.out_shape(), step.dtype),),
        vmap_method="sequential",
    )
    if step.kind != "dw":
        return out
    out = ops.transpose(out, (2, 1, 0) if step.first else (1, 2, 0))  # (T, C, O), grid order
    slots = kernels
    if slots == list(range(len(slots))):
        return out
    rows = [None] * len(slots)
    for j, s in enumerate(slots):  # (term j of the grid goes to row s)
        rows[s] = ops.slice(out, (j, 0, 0), (j + 1, step.c, step.o))
    return ops.concatenate(rows, 0)


def recognize_convs(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` with each recognised convolution sum (module docstring) as one library step.

    Arguments:
      closed: a real program (after ``complex_lanes.split_complex``).
    Returns:
      The program, rewritten and simplified if a sum was found, else ``closed`` itself.
    Example:
      >>> f = lambda x, w: functx.lax.conv(x, w, (1, 1), "SAME")
      >>> closed = functx.make_jaxpr(f)(np.ones((1, 2, 5, 5), np.float32), w)
      >>> recognize_convs(closed)  # one pure_callback equation (a ConvStep) for the nine taps
    """
    jaxpr = closed.jaxpr
    if not ENABLED or sum(e.prim.name == "dot_general" for e in jaxpr.eqns) < 2:
        return closed
    g = _Graph(jaxpr)
    found = {}
    for e in jaxpr.eqns:
        if e.prim.name not in _ADDS:
            continue
        v = e.outvars[0]
        us = g.uses[v.id]
        if len(us) == 1 and us[0] is not None and us[0].prim.name in _ADDS:
            continue  # (an inner add of a longer chain)
        m = _match(g, e)
        if m is not None and m[0].kind != "dw":
            whole = _kernel_stack(g, m[2])
            if whole is not None:
                m[0].whole = True
                m = (m[0], m[1], [whole], *m[3:])
        if m is not None:
            found[id(e)] = m
    if not found:
        return closed

    done: set = set()  # (crops whose window a "dx" step computed)

    def step(e, read):
        if id(e) in done:
            return {}
        m = found.get(id(e))
        if m is None:
            return None
        step_, operands, kernels, at, skip = m
        ks = kernels if step_.kind == "dw" else [read(a) for a in kernels]
        done.update(id(u) for u in (at, *skip))
        return {at.outvars[0].id: _emit(step_, [read(a) for a in operands], ks)}

    return _retrace(closed, step)


def _retrace(closed: ClosedJaxpr, step) -> ClosedJaxpr:
    """``closed`` traced again equation by equation (each under its source line), simplified;
    ``step(e, read)`` returns None to bind ``e`` as it is, or the values (variable id -> value)
    it defines in ``e``'s place (none: ``e`` is dropped). Both rewrite passes of convolution sums
    use it (this one and the C++ backend's ``fuse_conv_taps``)."""
    jaxpr = closed.jaxpr

    def flat(*args):
        env = {}
        for v, c in zip(jaxpr.constvars, closed.consts):
            env[v.id] = c
        for v, x in zip(jaxpr.invars, args):
            env[v.id] = x

        def read(a):
            return np.asarray(a.val, a.aval.dtype) if type(a) is Literal else env[a.id]

        for e in jaxpr.eqns:
            ctx = (
                source_info(e.source_info)
                if e.source_info is not None
                else contextlib.nullcontext()
            )
            with ctx:
                defined = step(e, read)
                if defined is not None:
                    env.update(defined)
                    continue
                outs = e.prim.bind(*[read(a) for a in e.invars], **e.params)
            if e.prim.multiple_results:
                for v, o in zip(e.outvars, outs):
                    env[v.id] = o
            else:
                env[e.outvars[0].id] = outs
        return [read(a) for a in jaxpr.outvars], None

    new, _ = tracing.trace_flat(flat, closed.in_avals)
    return passes.simplify(new)


__all__ = ["ENABLED", "ConvStep", "recognize_convs"]
