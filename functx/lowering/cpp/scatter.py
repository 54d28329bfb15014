"""C++ scatter kernels: copy the operand, then apply the updates at their indices."""

from __future__ import annotations

import math

import numpy as np

from functx import dtypes
from functx.lowering.cpp.emit import Emitter, _decompose, _store, compute_type
from functx.lowering.intexpr import Int
from functx.lowering.loopir import Op, strides_of, sym
from functx.lowering.schedule import Kernel, KernelCtx


def render(prog, k: Kernel):
    node = k.nodes[0]
    p = node.params
    x, ind, upd = p["operand"], p["indices"], p["updates"]
    axes, mode, op = p["axes"], p["mode"], p["op"]
    lines = [f"  // kernel {k.index}: {op} into {x.shape}"]
    lines += prog._copy_into(node.buf, x, k, x.shape, node.dtype)
    nb = len(ind.shape) - 1
    bshape = ind.shape[:-1]
    rest_axes = [i for i in range(len(x.shape)) if i not in axes]
    rshape = tuple(x.shape[i] for i in rest_axes)
    if math.prod(bshape) == 0 or math.prod(x.shape) == 0:
        prog.body += lines
        return
    bv = [sym(f"b{i}") for i in range(nb)]
    rv = [sym(f"q{i}") for i in range(len(rshape))]
    # (what depends on the update's position only, its indices and the update's own factors
    # such as a sparse product's stored value, is computed once per position, not per element)
    hoist = Emitter("    ", prefix="h")
    em = Emitter("      ").hoisting(hoist, rv)
    ctx = KernelCtx(k)
    ct = compute_type(x.dtype)
    idx_vals = [
        em(Op(dtypes.int64, "convert", (ind.load(tuple(bv) + (Int(c),), ctx),)))
        for c in range(len(axes))
    ]
    u = em(upd.load(tuple(bv) + tuple(rv), ctx))
    conds, offs = [], []
    full = {}
    for a, iv_ in zip(axes, idx_vals):
        d = x.shape[a]
        if mode == "clip":
            full[a] = f"fx_clamp({iv_}, 0, {d - 1}LL)"
        else:
            conds.append(f"({iv_} >= 0 && {iv_} < {d}LL)")
            full[a] = iv_
    for a, v in zip(rest_axes, rv):
        full[a] = str(v)
    for a, s in zip(range(len(x.shape)), strides_of(x.shape)):
        offs.append(f"({full[a]}) * {s}LL")
    off = " + ".join(offs) if offs else "0"
    tgt = f"{node.buf}[{off}]"
    cur = (
        f"fx_bf16_to_f32({tgt})"
        if np.dtype(x.dtype) == dtypes.bfloat16
        else (f"((float){tgt})" if np.dtype(x.dtype) == dtypes.float16 else tgt)
    )
    if np.dtype(x.dtype) in dtypes.NARROW_INTS:
        cur = f"fx_wrap_{np.dtype(x.dtype).name}({tgt})"
    elif np.dtype(x.dtype) in dtypes.NARROW_FLOATS:
        cur = f"fx_{np.dtype(x.dtype).name}_to_f32({tgt})"
    new = {
        "scatter": u,
        "scatter_add": f"{cur} + {u}",
        "scatter_mul": f"{cur} * {u}",
        "scatter_min": f"fx_min<{ct}>({cur}, {u})",
        "scatter_max": f"fx_max<{ct}>({cur}, {u})",
    }[op]
    stmt = _store(node.buf, off, f"({ct})({new})", x.dtype)
    if conds:
        stmt = f"if ({' && '.join(conds)}) {{ {stmt} }}"
    n_b, n_r = math.prod(bshape), math.prod(rshape)
    lines += [f"  for (int64_t bflat = 0; bflat < {n_b}LL; ++bflat) {{"]
    lines += ["    " + s for s in _decompose([str(v) for v in bv], bshape, "bflat")]
    # (the update's elements at one position go to distinct elements of the operand: its axes
    # that are not scattered; so the loop over them runs in SIMD lanes)
    lines += hoist.lines + ["    #pragma omp simd"]
    lines += [f"    for (int64_t qflat = 0; qflat < {n_r}LL; ++qflat) {{"]
    lines += ["      " + s for s in _decompose([str(v) for v in rv], rshape, "qflat")]
    lines += em.lines + ["      " + stmt, "    }", "  }"]
    prog.body += lines
