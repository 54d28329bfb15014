"""Triton matrix products: a host call of the runtime's ``matmul`` (cuBLAS through torch)."""

from __future__ import annotations

from functx import config
from functx.lowering.schedule import Kernel


# --- matrix products (host) ----------------------------------------------------------------
def render(prog, k: Kernel):
    node = k.nodes[0]
    p = node.params
    lhs, rhs = p["lhs"], p["rhs"]
    if node.size == 0:
        return
    # the product's own precision=, else the default (see functx.default_matmul_precision)
    tf32 = (p.get("precision") or config.matmul_precision()) != "float32"
    prog.host.append(
        f"    _fx_dot({lhs.buf}, {rhs.buf}, {node.buf}, {p['batch']}, {p['m']}, "
        f"{p['k']}, {p['n']}, {p['lhs_trans']}, {p['rhs_trans']}, {tf32})"
        f"  # kernel {k.index}: dot_general {lhs.shape} x {rhs.shape}"
    )
