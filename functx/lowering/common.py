"""What the C++ and Triton renderers share, written once: printing index expressions
(``IndexPrinter``, which each backend specialises with its integer literals, division and
max/min), the multi-index of a flat offset (``decompose``), the sub-program of a control-flow
body (``sub_program``) and the context a renderer's error gets (``render_context``)."""

from __future__ import annotations

import math

from functx.errors import UnsupportedError
from functx.lowering.intexpr import IMax, IMin, ix
from functx.lowering.loopir import (
    FloorDiv,
    Graph,
    Guard,
    ModI,
    Node,
    culprit,
    error_context,
    node_context,
    strides_of,
)
from functx.lowering.lower import lower_jaxpr
from functx.lowering.schedule import schedule


class IndexPrinter:
    """Print index expressions (``intexpr``: non-negative integers) as integer arithmetic of a
    target language: sums, products, floor division and remainder (``FloorDiv``, ``ModI``), guard
    clamps (the clamp), max and min. A backend sets ``div`` and ``what`` and overrides
    ``integer``, ``symbol``, ``extremum`` and ``lookup`` where its spelling differs."""

    div = "/"  # the integer division operator
    what = "jit"  # the prefix of the error for an expression it cannot print

    def lookup(self, e) -> str | None:
        """A name already holding ``e``, or None."""
        return None

    def integer(self, v: int) -> str:
        return str(v)

    def symbol(self, name: str) -> str:
        return name

    def extremum(self, is_max: bool, args: list) -> str:
        raise NotImplementedError

    def __call__(self, e) -> str:
        e = ix(e)
        hit = self.lookup(e)
        if hit is not None:
            return hit
        if e.is_Integer:
            return self.integer(int(e))
        if e.is_Symbol:
            return self.symbol(e.name)
        if isinstance(e, Guard):
            return self(e.args[1])
        if isinstance(e, FloorDiv):
            return f"({self(e.args[0])} {self.div} {self(e.args[1])})"
        if isinstance(e, ModI):
            return f"({self(e.args[0])} % {self(e.args[1])})"
        if e.is_Add:
            return "(" + " + ".join(self(a) for a in e.args) + ")"
        if e.is_Mul:
            return "(" + " * ".join(self(a) for a in e.args) + ")"
        if isinstance(e, (IMax, IMin)):
            return self.extremum(isinstance(e, IMax), [self(a) for a in e.args])
        raise UnsupportedError(f"{self.what}: cannot print index expression {e}")


def decompose(shape, flat: str, div: str, integer) -> list[str]:
    """The multi-index of the flat offset ``flat`` in ``shape``: one expression per axis
    (``(flat / stride) % size``, each part left out where it is the identity)."""
    out = []
    total = math.prod(shape)
    for s, d in zip(strides_of(shape), shape):
        expr = flat
        if s != 1:
            expr = f"({expr} {div} {integer(s)})"
        if s * d != total:
            expr = f"({expr} % {integer(d)})"
        out.append(expr)
    return out


def sub_program(closed, costly_once: bool = False):
    """A control-flow body (a ClosedJaxpr) lowered and scheduled: ``(graph, kernels)``
    (``costly_once``: see ``schedule``)."""
    g = lower_jaxpr(closed)
    return g, schedule(g, costly_once)


def adopt_consts(g: Graph, consts) -> list[str]:
    """Input nodes of ``g`` for a sub-program's constants ``consts`` ((node, array) pairs): the
    parent passes them on, so they become the parent's constants. Returns their buffer names."""
    names = []
    for n, arr in consts:
        pn = g.add(Node(n.shape, n.dtype, kind="input"))
        pn.buf = f"c{len(g.consts)}"
        g.consts.append((pn, arr))
        names.append(pn.buf)
    return names


def kernel_roots(k) -> list:
    """The nodes a kernel computes or stores (its nodes, passes, map and epilogue)."""
    return (
        list(k.nodes)
        + [r for p in getattr(k, "passes", ()) for r in p]
        + list(getattr(k, "maps", ()))
        + list(getattr(k, "epilogue", ()))
    )


def render_context(k, backend: str):
    """The ``error_context`` a renderer of kernel ``k`` runs in: its error names the kernel, the
    primitive whose operation failed (``loopir.culprit``) and that equation's user line."""
    return error_context(
        lambda err: node_context(
            culprit(kernel_roots(k), err), f"while rendering {backend} kernel {k.index} ({k.kind})"
        )
    )


def render_kernel(kinds: dict, backend: str, prog, k) -> None:
    """Render kernel ``k`` into ``prog`` with the backend's function for its kind (``kinds``,
    the backend's ``KERNEL_KINDS``), in ``render_context``; a kind the backend lacks is an
    ``UnsupportedError`` naming it."""
    render = kinds.get(k.kind)
    if render is None:
        raise UnsupportedError(f"jit: no {backend} renderer for kernel kind {k.kind!r}")
    with render_context(k, backend):
        render(prog, k)


__all__ = [
    "render_kernel",
    "IndexPrinter",
    "decompose",
    "sub_program",
    "adopt_consts",
    "kernel_roots",
    "render_context",
]
