"""The loop IR: what lowering (``lower.py``) builds and the scheduler and renderers read.

Every Jaxpr variable becomes a *node* (``Node``) that knows how to produce the expression for one
element given its index (a tuple of SymPy integer expressions); a ``Graph`` holds the nodes of one
Jaxpr. Reductions, scans, matrix products and scatters are *realised* nodes that own a buffer; the
scheduler (``schedule.py``) decides which realised nodes share a kernel.

Pad and concatenate read their operand at a *guard clamp* of the index (``guard_clamp``), so
the load stays inside the buffer, and select the element only where the clamp is the identity.
So a value held in registers (``Acc``) may be matched by its index with the guard clamps taken
out (``unclamped``).

Element expressions (``E``) are small trees: Const, Idx (an index expression), Load (a buffer read
at an offset expression), Op (an operation on sub-expressions), Acc (the value of a reduction of the
current kernel row), Sym (a named variable of the generated code: a scan accumulator).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import sympy


# --- index arithmetic ----------------------------------------------------------------------------
class Guard(sympy.Function):
    """``Guard(v, c)``: the index ``c``, a clamp of ``v`` that pad or concatenate read their
    operand at (see ``guard_clamp``). Equal to ``c``; kept apart so that ``unclamped`` can
    recover ``v``. Loads and index values fold it to ``c`` (``folded``)."""

    is_integer = True

    @classmethod
    def eval(cls, v, c):
        if v.is_Number and c.is_Number:
            return c
        return None


def guard_clamp(q, lo=None, hi=None):
    """``q`` clamped to ``[lo, hi]`` (either bound optional) for a guarded read: the caller uses
    the element only where the clamp is the identity (pad and concatenate select it then), so a
    value held in registers for the unclamped index may stand for it (``unclamped``)."""
    q = sympy.sympify(q)
    c = q
    if hi is not None:
        c = sympy.Min(c, hi)
    if lo is not None:
        c = sympy.Max(lo, c)
    return q if c == q else Guard(q, c)


def unclamped(e):
    """``e`` with its guard clamps replaced by the values they clamp."""
    e = sympy.sympify(e)
    if not e.has(Guard):
        return e
    return e.replace(lambda x: isinstance(x, Guard), lambda x: unclamped(x.args[0]))


def folded(e):
    """``e`` with its guard clamps replaced by the clamps themselves (what loads compute)."""
    if isinstance(e, sympy.Basic) and e.has(Guard):
        return e.replace(lambda x: isinstance(x, Guard), lambda x: folded(x.args[1]))
    return e


class FloorDiv(sympy.Function):
    """Integer division of non-negative integers (printed as C ``/``)."""

    is_integer = True

    @classmethod
    def eval(cls, a, b):
        if b == 1:
            return a
        if a.is_Integer and b.is_Integer:
            return sympy.Integer(int(a) // int(b))
        if a == 0:
            return sympy.Integer(0)
        return None


class ModI(sympy.Function):
    """Remainder of non-negative integers (printed as C ``%``)."""

    is_integer = True

    @classmethod
    def eval(cls, a, b):
        if b == 1:
            return sympy.Integer(0)
        if a.is_Integer and b.is_Integer:
            return sympy.Integer(int(a) % int(b))
        return None


def sym(name: str) -> sympy.Symbol:
    return sympy.Symbol(name, integer=True, nonnegative=True)


def strides_of(shape) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return list(reversed(out))


def flat_offset(idx, shape) -> sympy.Expr:
    return sympy.expand(sum((i * s for i, s in zip(idx, strides_of(shape))), sympy.Integer(0)))


# --- element expressions -------------------------------------------------------------------------
@dataclass(frozen=True)
class E:
    dtype: Any


@dataclass(frozen=True)
class Const(E):
    value: Any


@dataclass(frozen=True)
class Idx(E):
    expr: Any  # sympy integer expression

    def __post_init__(self):
        object.__setattr__(self, "expr", folded(self.expr))


@dataclass(frozen=True)
class Load(E):
    buf: str
    offset: Any  # sympy expression, or an E of integer dtype (data-dependent offsets)

    def __post_init__(self):
        object.__setattr__(self, "offset", folded(self.offset))


@dataclass(frozen=True)
class Op(E):
    name: str
    args: tuple


# Op names that cost much more than an add or a multiply (a polynomial, a division, a call)
COSTLY = frozenset(
    {
        "exp",
        "exp2",
        "expm1",
        "log",
        "log1p",
        "tanh",
        "logistic",
        "sin",
        "cos",
        "tan",
        "asin",
        "acos",
        "atan",
        "atan2",
        "sinh",
        "cosh",
        "asinh",
        "acosh",
        "atanh",
        "erf",
        "erf_inv",
        "lgamma",
        "digamma",
        "pow",
    }
)


def subexprs(e):
    """``e`` and the expressions inside it, depth first."""
    yield e
    if isinstance(e, Op):
        for a in e.args:
            if isinstance(a, E):
                yield from subexprs(a)


def costly(e) -> bool:
    return any(isinstance(s, Op) and s.name in COSTLY for s in subexprs(e))


@dataclass(frozen=True)
class Acc(E):
    """The value of a reduction computed earlier in the same kernel row."""

    node: int
    which: int = 0


# --- nodes ---------------------------------------------------------------------------------------
@dataclass(eq=False)
class Node:
    shape: tuple
    dtype: Any
    id: int = -1
    # element expression at ``idx``; None for realised nodes that are read from their buffer
    fn: Callable | None = None
    kind: str = "pointwise"  # pointwise | input | reduce | scan | dot | scatter | custom
    params: dict = field(default_factory=dict)
    inputs: list = field(default_factory=list)  # nodes this node reads (for scheduling)
    buf: str | None = None
    source_info: Any = None

    @property
    def size(self):
        return math.prod(self.shape)

    def load(self, idx, ctx) -> E:
        """The element at ``idx``: inlined (pointwise), or read from the buffer. ``ctx`` is the
        kernel being generated: it memoises loads and turns reads of reductions computed in the
        same kernel row into accumulator references."""
        idx = tuple(sympy.sympify(i) for i in idx)
        hit = ctx.lookup(self, idx)
        if hit is not None:
            return hit
        if self.fn is not None and (self.buf is None or ctx.inlines(self)):
            out = self.fn(idx, ctx)
        else:
            ctx.note_read(self)
            out = Load(self.dtype, self.buf, flat_offset(idx, self.shape))
        ctx.remember(self, idx, out)
        return out


class Graph:
    """The nodes of one Jaxpr (and of the sub-Jaxprs of its control flow)."""

    def __init__(self):
        self.nodes: list[Node] = []
        self.inputs: list[Node] = []
        self.outputs: list[Node] = []
        self.consts: list[tuple[Node, np.ndarray]] = []

    def add(self, node: Node) -> Node:
        node.id = len(self.nodes)
        self.nodes.append(node)
        return node


class _Reads:
    """A context in which every node reads as a load of its own (``n<id>``): what one node's
    expression takes from which, with nothing inlined."""

    def lookup(self, node, idx):
        return Load(node.dtype, f"n{node.id}", flat_offset(idx, node.shape))

    def remember(self, node, idx, e):
        pass

    def can_read_buffer(self, node) -> bool:
        return False  # (a reshape then reads its operand through its index map, as a load)

    def note_read(self, node):
        pass


def reads_in_order(e, ivars, shape) -> bool:
    """Whether ``e``, the element at ``ivars`` of an array of ``shape``, is a load of another
    buffer's element at the same flat position (a reshape, a unit axis added or dropped)."""
    if not isinstance(e, Load) or isinstance(e.offset, E):
        return False
    unit = {v: 0 for v, d in zip(ivars, shape) if d == 1}
    want = flat_offset(ivars, shape).subs(unit)
    return sympy.expand(sympy.sympify(e.offset).subs(unit) - want) == 0


@dataclass(frozen=True)
class Sym(E):
    """A named C variable (a scan accumulator)."""

    name: str
