"""The C++ backend's convolution forward: a Jaxpr -> Jaxpr rewrite (``fuse_conv_taps``, run by
``jit`` on the final Jaxpr of a CPU program) that finds the sums over kernel taps
``functx/_conv.py`` builds and replaces each with one ``conv_taps`` equation, which lowers to one
``dot`` kernel of many products (``cpp/dot.py``'s ``_conv_taps``).

The forward of ``lax.conv_general_dilated`` is ``sum_t dot(reshape(slice(P, offset_t)), K_t)``:
``P`` the padded channels-last input ``(N, spatial..., C)``, one strided ``slice`` per tap (its
windows, ``(N * out, C)``) and the tap's ``(C, O)`` kernel. As plain products each tap's windows
are copied first (a slice feeding a product is stored), nine ``(N * out, O)`` products are
written and a kernel sums them. With stride 1 the windows of tap ``t`` are, on the grid of
``P``'s rows (``(N * prod(spatial), C)``, row-major), the rows ``q + r_t`` for the output at grid
row ``q``, ``r_t`` the tap's offset flattened: so the step computes the sum on ``P``'s grid,
block by block of rows, one BLAS call per tap reading ``P`` in place (``lda = C``) and
accumulating into a cache-sized block of the result (``beta = 1`` after the first tap), and
copies the block's rows that are outputs (the others, at most ``k - 1`` a line, are the grid's
border) to the result. No window copy, no per-tap result, no sum kernel; the gradient's sums
(the transposes, which ``jit(grad)`` builds) keep their products.

The step is taken for float32/float64 sums of at least ``_MIN_TAPS`` taps of stride 1 whose
products are BLAS-sized (``_MIN_CHANNELS`` input and output channels or more), the terms matched
by ``lowering/triton/conv.py``'s pattern (``_fwd``: the same sums it hands to cuDNN on a GPU).
Figures are in ``benchmarks/conv.py`` and ``functx/_conv.py``'s docstring.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from functx import ops, tracing
from functx.core import ClosedJaxpr, Literal, Primitive, ShapedArray
from functx.lowering.rules import lowerings
from functx.lowering.triton.conv import _ADDS, _fwd, _Graph, _grid
from functx.source_info import source_info
from functx.transforms import passes

#: whether ``jit`` rewrites the sums on the CPU (benchmarks/conv.py turns it off to time the
#: per-tap products)
ENABLED = True

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


def _lower(g, ins, avals, *, taps, out_sp):
    from functx.lowering.loopir import Node  # lazy: SymPy only when jit lowers

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


def _match(g, e):
    """``(P, kernel vars in grid order, tap offsets, out_sp)`` of a forward sum at ``e``."""
    terms = g.terms(e)
    if len(terms) < _MIN_TAPS:
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
            ctx = source_info(e.source_info) if e.source_info is not None else None
            with ctx or contextlib.nullcontext():
                m = found.get(id(e))
                if m is not None:
                    p, kernels, taps, out_sp = m
                    ks = [ops.reshape(read(k), (1, *k.aval.shape)) for k in kernels]
                    env[e.outvars[0].id] = conv_taps_p.bind(
                        read(p), ops.concatenate(ks, 0), taps=taps, out_sp=out_sp
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


__all__ = ["ENABLED", "conv_taps_p", "fuse_conv_taps"]
