"""The C++ backend's convolution sums: a Jaxpr -> Jaxpr rewrite (``fuse_conv_taps``, run by
``jit`` on the final Jaxpr of a CPU program) that finds the sums over kernel taps
``functx/_conv.py`` builds (the forward's, the input and the kernel gradients') and replaces each
with one ``conv_taps`` (or ``conv_taps_dw``) equation, which lowers to one ``dot`` kernel
(``cpp/dot.py``'s ``_conv_taps``, ``_conv_taps_dw``).

The forward of ``lax.conv_general_dilated`` is ``sum_t dot(reshape(slice(P, offset_t)), K_t)``:
``P`` the padded channels-last input ``(N, spatial..., C)``, one strided ``slice`` per tap (its
windows, ``(N * out, C)``) and the tap's ``(C, O)`` kernel. As plain products each tap's windows
are copied first (a slice feeding a product is stored), nine ``(N * out, O)`` products are
written and a kernel sums them. With stride 1 the windows of tap ``t`` are, on the grid of
``P``'s rows (``(N * prod(spatial), C)``, row-major), the rows ``q + r_t`` for the output at grid
row ``q``, ``r_t`` the tap's offset flattened: so the step reads ``P`` in place, with no window
copy, no per-tap result and no sum kernel, in one of two forms (``cpp/dot.py``):

* float32 with a multiple of 16 output channels, on a machine with AVX2 and FMA: register tiles
  of 6 outputs (along a line of the last spatial axis) x 16 channels, 6 accumulators of 16
  lanes with AVX-512 (12 of 8 with AVX2), each summing ``T * C`` broadcasts of ``P``'s
  elements times a row of the kernel (repacked per call into 16-channel panels,
  ``(O / 16, T, C, 16)``), its results stored once, the lines taken by the OpenMP threads;
* otherwise, blocks of ``P``'s grid rows, one BLAS call per tap on ``P``'s rows in place
  (``lda = C``) accumulating into a cache-sized block (``beta = 1`` after the first tap), whose
  output rows are then copied to the result (the others, at most ``k - 1`` a line, are the
  grid's border).

The input gradient's sum, ``sum_t pad(reshape(G @ K_t^T), a_t)`` (the transpose of the
forward's, matched by ``lowering/triton/conv.py``'s ``_dx``), is with stride 1 the same kind of
sum: ``dP[p] = sum_t Gp[p + max(a) - a_t] @ K_t^T`` over the cotangent ``G`` zero-padded by
``max(a)`` below, so it becomes a step too (``_dx_step``). Where a crop alone reads ``dP`` (the
transpose of the forward's padding), the step computes only the rows the crop keeps, over ``G``
padded by ``max(a)`` minus the crop's low cut: for a 3x3 'SAME' convolution of 64x64 images,
64x64 outputs from a 66x66 ``Gp`` instead of 66x66 from a 68x68 one and a crop. The kernel
gradient's sum, ``sum_t pad(reshape(windows_t^T G), slot_t)`` (``_dw``), becomes a
``conv_taps_dw`` step for float32 with 16k output channels: ``dW[t] = sum_m P[q(m) + r_t]^T
G[m]``, ``P`` and ``G`` read in place (``G`` as the step's operand before the reshapes to
rows, so a program's input is not copied; as plain products, each tap's windows were copied and
OpenBLAS packed both operands of its long product again), register tiles of 6 input x 16
output channels accumulated over a few lines of outputs at a time, in 8 fixed chunks of lines
summed in order (the result does not depend on the thread count). Measured on the
2-core AMD EPYC (AVX2) test machine at load average 10-12, CPU ms per call of the 3x3 'SAME'
convolution (8, 64, 64, 64) x (3, 3, 64, 64) (medians, alternating calls in one process; JAX
in the same process): per-tap products 57-72, the BLAS blocks 40-46, the register tiles 29-37,
JAX 34-42; the CNN step of benchmarks/workloads.py 12.0-13.1 -> 10.4 (9.4-9.6 with the input
gradient's step, against 12.6 without either); ``grad`` of ``sum(conv(x, w) ** 2)`` 167-210 ->
118-162 (JAX 286-344); ``grad`` of ``sum(conv(x, w) * g)`` (the input and kernel gradients)
110-125 with the input gradient's step, 76-80 with the kernel gradient's too (per-tap 119-136,
JAX 275-309); the CNN step 11.7-11.8 -> 8.3-8.5 with all three.

The step is taken for float32/float64 sums of at least ``_MIN_TAPS`` taps of stride 1 whose
products are BLAS-sized (``_MIN_CHANNELS`` input and output channels or more), the terms matched
by ``lowering/triton/conv.py``'s pattern (``_fwd``: the same sums it hands to cuDNN on a GPU).
More figures are in ``benchmarks/conv.py`` and ``functx/_conv.py``'s docstring.
"""

from __future__ import annotations

import math

import numpy as np

from functx import ops, tracing
from functx.core import ClosedJaxpr, Literal, Primitive, ShapedArray
from functx.lowering.rules import lowerings
from functx.lowering.triton.conv import _ADDS, _dw, _dx, _fwd, _Graph, _grid, _retrace

#: whether ``jit`` rewrites the sums on the CPU (benchmarks/conv.py turns it off to time the
#: per-tap products)
ENABLED = True
#: whether the kernel gradient's sums are steps too
DW = True

_MIN_TAPS = 2
_MIN_CHANNELS = 8
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))

# (internal: not in ``primitives.registry``, whose every primitive has jvp, transpose and vmap
# rules; it appears only in jit's final Jaxpr for the CPU, after autodiff and batching)
conv_taps_p = Primitive("conv_taps", group="conv")


def _abstract(p, k, *, taps, out_sp):
    return ShapedArray((p.shape[0] * math.prod(out_sp), k.shape[-1]), p.dtype)


def _impl(p, k, *, taps, out_sp):
    """The reference: the sum over taps of the windows ``P[:, t : t + out, :]`` times ``K[t]``."""
    c = p.shape[-1]
    y = None
    for i, t in enumerate(taps):
        win = p[(slice(None), *(slice(a, a + m) for a, m in zip(t, out_sp)), slice(None))]
        term = win.reshape(-1, c) @ k[i]
        y = term if y is None else y + term
    return y.astype(p.dtype)


conv_taps_p.abstract_eval = _abstract
conv_taps_p.impl = _impl

# the kernel gradient: (P, G) -> (T, C, O), tap t's block sum_m windows_t[m]^T G[m]
conv_taps_dw_p = Primitive("conv_taps_dw", group="conv")


def _dw_abstract(p, g, *, taps, out_sp):
    return ShapedArray((len(taps), p.shape[-1], g.shape[-1]), p.dtype)


def _dw_impl(p, g, *, taps, out_sp):
    """The reference: per tap, the windows ``P[:, t : t + out, :]`` transposed times ``G`` (its
    rows: ``G`` of any shape ending in the output channels, row-major)."""
    c = p.shape[-1]
    g = g.reshape(-1, g.shape[-1])
    blocks = []
    for t in taps:
        win = p[(slice(None), *(slice(a, a + m) for a, m in zip(t, out_sp)), slice(None))]
        blocks.append(win.reshape(-1, c).T @ g)
    return np.stack(blocks).astype(p.dtype)


conv_taps_dw_p.abstract_eval = _dw_abstract
conv_taps_dw_p.impl = _dw_impl


def _lower(g, ins, avals, *, taps, out_sp):
    from functx.lowering.loopir import Node  # lazy: the loop IR only when jit lowers

    p, k = ins
    sp = p.shape[1:-1]
    rows = [math.prod(sp[d + 1 :]) for d in range(len(sp))]
    geometry = {
        "n": p.shape[0],
        "c": p.shape[-1],
        "o": k.shape[-1],
        "grid": math.prod(sp),  # rows of P per image
        "rows": tuple(rows),  # rows of P per step of each spatial axis
        "out_sp": tuple(out_sp),
        "offsets": tuple(sum(a * r for a, r in zip(t, rows)) for t in taps),
    }
    return g.add(
        Node(
            avals[0].shape,
            avals[0].dtype,
            kind="dot",
            inputs=[p, k],
            params={"conv_taps": geometry, "lhs": p, "rhs": k, "needs_buffer": (p, k)},
        )
    )


lowerings[conv_taps_p] = _lower


def _lower_dw(g, ins, avals, *, taps, out_sp):
    node = _lower(g, ins, avals, taps=taps, out_sp=out_sp)  # (the same geometry; O from G)
    node.params["conv_taps_dw"] = node.params.pop("conv_taps")
    return node


lowerings[conv_taps_dw_p] = _lower_dw


# the most terms a recognised sum has (``_conv.py``: more taps than 64 are one gather)
_MAX_TAPS = 64


def _terms(g, e):
    """The operands of the ``add`` chain rooted at ``e`` (inner adds used once, flattened, as
    ``_Graph.terms``), walked without recursion; None beyond ``_MAX_TAPS`` of them."""
    out, todo = [], list(reversed(e.invars))
    while todo:
        v = todo.pop()
        inner = None if type(v) is Literal else g.prod.get(v.id)
        if inner is not None and inner.prim.name in _ADDS and len(g.uses[v.id]) == 1:
            todo += reversed(inner.invars)
        else:
            out.append(v)
            if len(out) > _MAX_TAPS:
                return None
    return out


def _match(g, e):
    """``(P, kernel vars in grid order, tap offsets, out_sp)`` of a forward sum at ``e``."""
    terms = _terms(g, e)
    if terms is None or len(terms) < _MIN_TAPS:
        return None
    found = [_fwd(g, v) for v in terms]
    if any(f is None for f in found) or len({f[0] for f in found}) != 1:
        return None
    info = found[0][3]
    p = info["p"]
    if any(s != 1 for s in info["strides"]) or np.dtype(p.aval.dtype) not in _FLOATS:
        return None
    c, o = p.aval.shape[-1], found[0][2].aval.shape[1]
    if c < _MIN_CHANNELS or o < _MIN_CHANNELS or type(p) is Literal:
        return None
    grid = _grid([f[1] for f in found])
    if grid is None:
        return None
    found = [f for _, f in sorted(zip(grid[3], found), key=lambda q: q[0])]
    return p, [f[2] for f in found], tuple(f[1] for f in found), tuple(info["out"][1:-1])


def _match_dx(g, e):
    """``(G, kernel vars, tap offsets a_t, out_sp, P's shape)`` of an input-gradient sum at
    ``e``: ``sum_t pad(reshape(G @ K_t^T), a_t)`` with stride 1."""
    terms = _terms(g, e)
    if terms is None or len(terms) < _MIN_TAPS:
        return None
    found = [_dx(g, v) for v in terms]
    if any(f is None for f in found) or len({f[0] for f in found}) != 1:
        return None
    info = found[0][3]
    p_shape = tuple(e.outvars[0].aval.shape)
    c, o = found[0][2].aval.shape
    if any(s != 1 for s in info["strides"]) or np.dtype(e.outvars[0].aval.dtype) not in _FLOATS:
        return None
    if c < _MIN_CHANNELS or o < _MIN_CHANNELS or _grid([f[1] for f in found]) is None:
        return None
    return info["ct"], [f[2] for f in found], [f[1] for f in found], info["out"][1:-1], p_shape


def _dx_step(gv, kernels, offs, out_sp, p_shape, cut):
    """The input gradient ``dP[p] = sum_t G[p - a_t] K_t^T`` as a forward sum over ``G``
    zero-padded (taps ``max(a) - a_t``, kernels ``K_t^T``), for the ``p`` of ``P``'s grid that
    the crop after it keeps: ``cut`` holds the (low, high) counts cut from each spatial axis.
    The window of ``dP`` from ``lo`` is the sum at ``q = p - lo`` over ``G`` padded by
    ``max(a) - lo`` below."""
    n, psp, c = p_shape[0], p_shape[1:-1], p_shape[-1]
    o = tracing.get_aval(gv).shape[-1]
    top = [max(a[d] for a in offs) for d in range(len(psp))]
    low = [min(a[d] for a in offs) for d in range(len(psp))]
    keep = [ps - lo - hi for ps, (lo, hi) in zip(psp, cut)]
    cfg = [(0, 0, 0)]
    cfg += [(t - lo, r - b - m + lo, 0) for t, b, m, r, (lo, _) in zip(top, low, out_sp, keep, cut)]
    gp = ops.pad(
        ops.reshape(gv, (n, *out_sp, o)),
        np.zeros((), tracing.get_aval(gv).dtype)[()],
        cfg + [(0, 0, 0)],
    )
    ks = [ops.reshape(ops.transpose(k, (1, 0)), (1, o, c)) for k in kernels]
    taps = tuple(tuple(t - x for t, x in zip(top, a)) for a in offs)
    y = conv_taps_p.bind(gp, ops.concatenate(ks, 0), taps=taps, out_sp=tuple(keep))
    return ops.reshape(y, (n, *keep, c))


def _crop(g, e):
    """``(the equation, (low, high) cut per spatial axis)`` of the crop that alone reads the
    input-gradient sum at ``e`` (the transpose of the forward's padding: a ``pad`` by amounts of
    at most 0 on the spatial axes), else None."""
    us = g.uses[e.outvars[0].id]
    if len(us) != 1 or us[0] is None or us[0].prim.name != "pad":
        return None
    cfg = us[0].params["padding_config"]
    if us[0].invars[0] is not e.outvars[0] or any(i != 0 for _, _, i in cfg):
        return None
    if tuple(cfg[0][:2]) != (0, 0) or tuple(cfg[-1][:2]) != (0, 0):
        return None
    if any(lo > 0 or hi > 0 for lo, hi, _ in cfg[1:-1]):
        return None
    return us[0], tuple((-lo, -hi) for lo, hi, _ in cfg[1:-1])


def _unreshaped(g, v):
    """``v`` itself, or the operand of the chain of plain reshapes that makes it (a row-major
    reshape does not move elements: a step reads that buffer in place, not a copy)."""
    e = g.eqn(v, "reshape")
    while e is not None and e.params.get("dimensions") is None:
        v = e.invars[0]
        e = g.eqn(v, "reshape")
    return v


def _match_dw(g, e):
    """``(P, G, tap offsets in slot order, out_sp)`` of a kernel-gradient sum at ``e``:
    ``sum_t pad(reshape(windows_t^T G), slot_t)``, stride 1, float32, ``O`` a multiple of 16."""
    terms = _terms(g, e)
    if terms is None or len(terms) < _MIN_TAPS:
        return None
    found = [_dw(g, v) for v in terms]
    if any(f is None for f in found) or len({f[0] for f in found}) != 1:
        return None
    info = found[0][3]
    p, ct = info["p"], info["ct"]
    t, c, o = e.outvars[0].aval.shape
    if any(s != 1 for s in info["strides"]) or np.dtype(p.aval.dtype) != _FLOATS[0]:
        return None
    if c < _MIN_CHANNELS or o % 16 or sorted(f[2] for f in found) != list(range(t)):
        return None
    if type(p) is Literal or _grid([f[1] for f in found]) is None:
        return None
    offs = [None] * t
    for f in found:
        offs[f[2]] = f[1]
    return p, ct, tuple(offs), tuple(info["out"][1:-1])


def fuse_conv_taps(closed: ClosedJaxpr) -> ClosedJaxpr:
    """``closed`` with each forward convolution sum (module docstring) as one ``conv_taps``
    equation.

    Arguments:
      closed: a CPU program's final Jaxpr.
    Returns:
      The program, rewritten and simplified if a sum was found, else ``closed`` itself.
    Example:
      >>> f = lambda x, w: functx.lax.conv(x, w, (1, 1), "SAME")
      >>> fuse_conv_taps(functx.make_jaxpr(f)(x, w))  # one conv_taps equation for the nine taps
    """
    jaxpr = closed.jaxpr
    if not ENABLED or sum(e.prim.name == "dot_general" for e in jaxpr.eqns) < _MIN_TAPS:
        return closed
    g = _Graph(jaxpr)
    found = {}
    for e in jaxpr.eqns:
        if e.prim.name not in _ADDS:
            continue
        us = g.uses[e.outvars[0].id]
        if len(us) == 1 and us[0] is not None and us[0].prim.name in _ADDS:
            continue  # (an inner add of a longer chain)
        m = _match(g, e)
        if m is not None:
            found[id(e)] = ("fwd", m)
            continue
        m = _match_dx(g, e)
        if m is not None:
            crop = _crop(g, e)
            found[id(e)] = ("dx", (*m, crop))
            if crop is not None:
                found[id(crop[0])] = ("cropped", None)  # (the step defines its output)
            continue
        m = _match_dw(g, e) if DW else None
        if m is not None:
            found[id(e)] = ("dw", m)
    if not found:
        return closed

    def step(e, read):
        kind, m = found.get(id(e), (None, None))
        if kind is None:
            return None
        if kind == "cropped":
            return {}
        if kind == "dw":
            p, ct, taps, out_sp = m
            ct = read(_unreshaped(g, ct))
            return {e.outvars[0].id: conv_taps_dw_p.bind(read(p), ct, taps=taps, out_sp=out_sp)}
        if kind == "dx":
            gv, kernels, offs, out_sp, p_shape, crop = m
            ks = [read(k) for k in kernels]
            cut = crop[1] if crop else ((0, 0),) * (len(p_shape) - 2)
            out = (crop[0] if crop else e).outvars[0]
            return {out.id: _dx_step(read(gv), ks, offs, out_sp, p_shape, cut)}
        p, kernels, taps, out_sp = m
        ks = [ops.reshape(read(k), (1, *k.aval.shape)) for k in kernels]
        out = conv_taps_p.bind(read(p), ops.concatenate(ks, 0), taps=taps, out_sp=out_sp)
        return {e.outvars[0].id: out}

    return _retrace(closed, step)


__all__ = ["DW", "ENABLED", "conv_taps_dw_p", "conv_taps_p", "fuse_conv_taps"]
