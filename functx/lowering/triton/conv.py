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

* forward, ``sum_t dot(reshape(slice(P, offset_t)), K_t)``: ``torch.nn.functional.convNd``;
* input gradient, ``sum_t pad(reshape(dot(G, K_t^T)), offset_t)``: ``torch.nn.grad.convNd_input``
  (the result is the gradient with respect to ``P``: zero outside the taps' reach);
* kernel gradient, ``sum_t pad(reshape(dot(G^T, windows_t)^T), slot_t)`` (each tap's ``(C, O)``
  block put in its slot of a ``(T, C, O)`` stack): ``torch.nn.grad.convNd_weight``.

Each becomes a ``pure_callback`` equation whose callback is a ``ConvStep`` (a host step of the
program with a ``torch`` form, as the linear-algebra steps are: ``LibraryStep.torch``), run on the
program's device tensors between launches; channels-last buffers go to cuDNN as channels-last
(``NHWC``) tensors, without copies. When ``P`` is a zero ``pad`` of the input with the same
padding on both sides of each axis (``'SAME'`` with an odd kernel), the step reads the input
itself and cuDNN pads (the pad kernel then goes: ``ConvStep.unpad``). Float32 convolutions
follow the products' precision (TF32 unless ``default_matmul_precision`` says float32, as the
``dot`` kernels do). What the patterns do not cover (grouped or batched convolutions, which
are batched ``dot_general``\\ s; depthwise convolutions, which are multiply-adds; kernels of
more than 64 taps, one gather; sums inside control flow) keeps its per-tap products. The
intermediate values the matched sums read are then dead and DCE removes them.
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
    CPU). ``offsets``: each term's tap offset in ``P``'s spatial axes; ``slots``: for "dw", the
    term's slot in the ``(T, C, O)`` stack. Prints with its address, as every host step does."""

    __slots__ = (
        "kind",
        "p_shape",
        "out_sp",
        "strides",
        "offsets",
        "slots",
        "c",
        "o",
        "dtype",
        "tf32",
        "base",
        "dilation",
        "k",
        "grid_index",
        "need",
        "order",
        "src",
        "_index",
        "__weakref__",
    )

    #: the step only queues work on the current stream (no host reads, no allocation the caching
    #: allocator cannot capture; its index tensors are made on the first, uncaptured call), so
    #: the runtime may capture it in a program's CUDA graph
    graph_safe = True

    def __init__(self, kind, p_shape, out_sp, strides, offsets, slots, c, o, dtype, tf32):
        self.kind, self.p_shape, self.out_sp = kind, tuple(p_shape), tuple(out_sp)
        self.strides, self.offsets, self.slots = tuple(strides), list(offsets), slots
        self.c, self.o, self.dtype, self.tf32 = c, o, np.dtype(dtype), tf32
        grid = _grid(self.offsets)
        self.base, self.dilation, self.k, self.grid_index = grid
        # the part of P the taps read, per spatial axis
        self.need = tuple(
            (n - 1) * s + (k - 1) * d + 1
            for n, s, k, d in zip(self.out_sp, self.strides, self.k, self.dilation)
        )
        # the rows of the (T, C, O) operand ("fwd", "dx") or of the result ("dw") in the order
        # of the other side (grid order, or for "dw" slot order); None: the same order
        if kind == "dw":
            order = [0] * len(slots)
            for t, s in enumerate(slots):
                order[s] = self.grid_index[t]
        else:
            order = [0] * len(self.grid_index)
            for t, j in enumerate(self.grid_index):
                order[j] = t
        self.order = None if order == list(range(len(order))) else order
        self._index = {}  # the order as an index tensor, by device (made once)
        # the input operand ("fwd", "dw"): (its shape, the read part's start and length per
        # spatial axis, cuDNN's padding): P itself, or the array P pads (``unpad``)
        self.src = (self.p_shape, self.base, self.need, (0,) * len(self.k))

    def unpad(self, x_shape, lo):
        """Read the array ``x`` that ``P`` zero-pads by ``lo`` (low side, per spatial axis)
        instead of ``P``, cuDNN padding it, when the padding the taps reach is the same on both
        sides; returns whether it does."""
        start, length, pads = [], [], []
        for b, n, low, size in zip(self.base, self.need, lo, x_shape[1:-1]):
            a, e = b - low, b - low + n  # (the part read, in x's coordinates)
            left, right = max(0, -a), max(0, e - size)
            if left != right or min(e, size) <= max(a, 0):
                return False
            start.append(max(a, 0))
            length.append(min(e, size) - max(a, 0))
            pads.append(left)
        self.src = (tuple(x_shape), tuple(start), tuple(length), tuple(pads))
        return True

    def _input(self, t):
        """The input operand as torch's ``(N, C, spatial...)`` (a channels-last view)."""
        shape, start, length, _ = self.src
        x = t.view(shape)
        for ax, (b, n) in enumerate(zip(start, length)):
            x = x.narrow(ax + 1, b, n)
        return x.movedim(-1, 1)

    def __repr__(self):
        return f"<cuDNN conv {self.kind} {self.p_shape} taps {self.k} at 0x{id(self):x}>"

    def out_shape(self):
        n = self.p_shape[0]
        if self.kind == "fwd":
            return (n * math.prod(self.out_sp), self.o)
        if self.kind == "dx":
            return self.p_shape
        return (len(self.offsets), self.c, self.o)

    # --- torch -----------------------------------------------------------------------------
    def _crop(self, p):
        """The part of ``p`` (``(N, spatial..., C)``) the taps read."""
        for ax, (b, n) in enumerate(zip(self.base, self.need)):
            p = p.narrow(ax + 1, b, n)
        return p

    def _reorder(self, torch, t):
        """``t``'s rows in ``order`` (no copy when the order is the identity)."""
        if self.order is None:
            return t
        idx = self._index.get(t.device)
        if idx is None:
            idx = self._index[t.device] = torch.tensor(self.order, device=t.device)
        return torch.index_select(t, 0, idx)

    def _grid_kernel(self, torch, w):
        """The ``(T, C, O)`` taps as torch's ``(O, C, k...)`` kernel."""
        nd = len(self.k)
        g = self._reorder(torch, w).reshape(*self.k, self.c, self.o)
        return _channels_last(torch, g.permute(nd + 1, nd, *range(nd)))

    def torch(self, ins, outs):
        """The convolution on the flat tensors ``ins`` into ``outs`` (cuDNN on a GPU)."""
        import torch  # (optional dependency: only a Triton program calls this)

        nd = len(self.k)
        n = self.p_shape[0]
        kw = dict(stride=self.strides, dilation=self.dilation, padding=self.src[3])
        with _conv_flags(torch, ins[0], self.tf32):
            if self.kind == "fwd":
                x = self._input(ins[0])
                w = self._grid_kernel(torch, ins[1].view(-1, self.c, self.o))
                y = _CONV[nd](torch)(x, w, **kw)
                outs[0].view(n, *self.out_sp, self.o).copy_(y.movedim(1, -1))
                return
            ct = ins[0] if self.kind == "dx" else ins[1]  # (dx: G, kernels; dw: P, G)
            g = ct.view(n, *self.out_sp, self.o).movedim(-1, 1)
            if self.kind == "dx":
                w = self._grid_kernel(torch, ins[1].view(-1, self.c, self.o))
                size = (n, self.c, *self.need)
                gx = _GRAD_INPUT[nd](torch)(size, w, g, **kw)
                o = outs[0].view(self.p_shape)
                if self.need != self.p_shape[1:-1]:  # (the taps reach all of P: no zeros)
                    o.zero_()
                self._crop(o).copy_(gx.movedim(1, -1))
                return
            x = self._input(ins[0])
            gw = _GRAD_WEIGHT[nd](torch)(x, (self.o, self.c, *self.k), g, **kw)
            gw = gw.permute(*range(2, nd + 2), 1, 0).reshape(-1, self.c, self.o)
            outs[0].view(-1, self.c, self.o).copy_(self._reorder(torch, gw))

    def __call__(self, *vals):
        import torch

        ins = [torch.from_numpy(np.ascontiguousarray(v)).reshape(-1) for v in vals]
        out = torch.empty(math.prod(self.out_shape()), dtype=ins[0].dtype)
        self.torch(ins, [out])
        return [out.numpy().reshape(self.out_shape())]


def _channels_last(torch, t):
    if t.dim() == 4:
        return t.contiguous(memory_format=torch.channels_last)
    if t.dim() == 5:
        return t.contiguous(memory_format=torch.channels_last_3d)
    return t.contiguous()


@contextlib.contextmanager
def _conv_flags(torch, t, tf32):
    """cuDNN's TF32 switch as the products have it, and its autotuner (as XLA autotunes its
    convolutions), for the call only."""
    if t.device.type != "cuda":
        yield
        return
    c = torch.backends.cudnn
    prev = (c.allow_tf32, c.benchmark)
    c.allow_tf32, c.benchmark = bool(tf32), True
    try:
        yield
    finally:
        c.allow_tf32, c.benchmark = prev


def _nn(name):
    return lambda torch: getattr(torch.nn.functional, name)


def _grad(name):
    return lambda torch: getattr(torch.nn.grad, name)


_CONV = {1: _nn("conv1d"), 2: _nn("conv2d"), 3: _nn("conv3d")}
_GRAD_INPUT = {1: _grad("conv1d_input"), 2: _grad("conv2d_input"), 3: _grad("conv3d_input")}
_GRAD_WEIGHT = {1: _grad("conv1d_weight"), 2: _grad("conv2d_weight"), 3: _grad("conv3d_weight")}


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
        """The operands of the ``add`` chain rooted at ``e`` (inner adds used once, flattened)."""
        out = []
        for v in e.invars:
            inner = None if type(v) is Literal else self.prod.get(v.id)
            if inner is not None and inner.prim.name in _ADDS and len(self.uses[v.id]) == 1:
                out += self.terms(inner)
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
    return x if step.unpad(x.aval.shape, [lo for lo, _, _ in cfg[1:-1]]) else p


def _match(g, e):
    """A recognised sum at the ``add`` equation ``e``: ``(ConvStep, operand vars, extra)``."""
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
        n, c = info["out"][0], info["out"][-1]
        if kind == "fwd":
            p = info["p"]
            o = found[0][2].aval.shape[1]
            step = ConvStep(
                kind, p.aval.shape, out_sp, info["strides"], offs, None, c, o,
                p.aval.dtype, info["tf32"],
            )  # fmt: skip
            return step, [_source(g, p, step)], [f[2] for f in found]
        if kind == "dx":
            p_shape = e.outvars[0].aval.shape
            o = found[0][2].aval.shape[1]
            step = ConvStep(
                kind, p_shape, out_sp, info["strides"], offs, None, c, o,
                e.outvars[0].aval.dtype, info["tf32"],
            )  # fmt: skip
            if any(lo + need > size for lo, need, size in zip(step.base, step.need, p_shape[1:-1])):
                return None
            return step, [info["ct"]], [f[2] for f in found]
        slots = [f[2] for f in found]
        t = e.outvars[0].aval.shape[0]
        if sorted(slots) != list(range(t)):
            return None
        p = info["p"]
        o = e.outvars[0].aval.shape[2]
        step = ConvStep(
            kind, p.aval.shape, out_sp, info["strides"], offs, slots, c, o,
            p.aval.dtype, info["tf32"],
        )  # fmt: skip
        del n
        return step, [_source(g, p, step), info["ct"]], []
    return None


def _emit(step, operands, kernels):
    """The step's equation: the kernels (``(C, O)`` each) stacked to ``(T, C, O)`` first."""
    args = list(operands)
    if kernels:
        stack = [ops.reshape(k, (1,) + tuple(tracing.get_aval(k).shape)) for k in kernels]
        args.append(ops.concatenate(stack, 0))
    (out,) = callbacks.pure_callback_p.bind(
        *args,
        callback=step,
        result_avals=(ShapedArray(step.out_shape(), step.dtype),),
        vmap_method="sequential",
    )
    return out


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
        if m is not None:
            found[id(e)] = m
    if not found:
        return closed

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
                m = found.get(id(e))
                if m is not None:
                    step, operands, kernels = m
                    env[e.outvars[0].id] = _emit(
                        step, [read(a) for a in operands], [read(a) for a in kernels]
                    )
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
