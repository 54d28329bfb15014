"""Triton pointwise kernels: one flat kernel over the output's elements."""

from __future__ import annotations

import numpy as np

from functx.lowering.loopir import reads_in_order, sym
from functx.lowering.schedule import Kernel, KernelCtx, local_sym


# --- kernels -------------------------------------------------------------------------------
def render(prog, k: Kernel):
    src = _same_elements(prog, k)
    if src is not None:  # a copy of another buffer in the same order: that buffer will do
        node = k.nodes[0]
        prog.aliases.add(node.buf)
        prog.host.append(
            f"    {node.buf} = {src}  # kernel {k.index}: {k.shape}, the "
            f"elements of {src} in order (no copy)"
        )
        return
    prog._flat_kernel(
        prog._kname(k, "pointwise"),
        k,
        k.shape,
        [(nd.buf, nd.dtype, nd.fn) for nd in k.nodes],
        f"pointwise {k.shape}",
        [local_sym(nd).name if nd.id in k.local_ids else None for nd in k.nodes],
    )


def _same_elements(prog, k: Kernel) -> str | None:
    """The buffer a pointwise kernel copies element for element (a reshape or an added unit
    axis realised for a matrix product), when its result is a temporary: the program can
    read that buffer instead. Buffers are written once, by the kernel computing them, so
    the source keeps its values."""
    if len(k.nodes) != 1:
        return None
    node = k.nodes[0]
    if node.fn is None or node.buf is None or any(node is o for o in prog.g.outputs):
        return None
    ivars = tuple(sym(f"i{d}") for d in range(len(k.shape)))
    e = node.fn(ivars, KernelCtx(k))
    if not reads_in_order(e, ivars, k.shape) or np.dtype(e.dtype) != np.dtype(node.dtype):
        return None
    src = next((n for n in prog.g.nodes if n.buf == e.buf), None)
    if src is None or src.size != node.size or np.dtype(src.dtype) != np.dtype(node.dtype):
        return None
    return e.buf
