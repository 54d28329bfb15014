"""The loop IR: what lowering (``lower.py``) builds and the scheduler and renderers read.

Every Jaxpr variable becomes a *node* (``Node``) that knows how to produce the expression for one
element given its index (a tuple of integer expressions, ``intexpr.py``); a ``Graph`` holds the
nodes of one Jaxpr. Reductions, scans, matrix products and scatters are *realised* nodes that own a
buffer; the scheduler (``schedule.py``) decides which realised nodes share a kernel.

Pad and concatenate read their operand at a *guard clamp* of the index (``guard_clamp``), so
the load stays inside the buffer, and select the element only where the clamp is the identity.
So a value held in registers (``Acc``) may be matched by its index with the guard clamps taken
out (``unclamped``).

Element expressions (``E``) are small trees: Const, Idx (an index expression), Load (a buffer read
at an offset expression), Op (an operation on sub-expressions), Acc (the value of a reduction of the
current kernel row), Sym (a named variable of the generated code: a scan accumulator).
"""

from __future__ import annotations

import contextlib
import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from functx import dtypes
from functx.lowering.intexpr import (
    FloorDiv,
    Guard,
    IMax,
    IMin,
    IntExpr,
    ModI,
    Sym as _Sym,
    add,
    ix,
    map_nodes,
)
from functx.primitives.elementwise import ROWS


# --- index arithmetic (``intexpr.py``: the expressions; here what the loop IR builds of them) ----
def guard_clamp(q, lo=None, hi=None):
    """``q`` clamped to ``[lo, hi]`` (either bound optional) for a guarded read: the caller uses
    the element only where the clamp is the identity (pad and concatenate select it then), so a
    value held in registers for the unclamped index may stand for it (``unclamped``)."""
    q = ix(q)
    c = q
    if hi is not None:
        c = IMin(c, hi)
    if lo is not None:
        c = IMax(lo, c)
    return q if c == q else Guard(q, c)


def unclamped(e):
    """``e`` with its guard clamps replaced by the values they clamp."""
    return map_nodes(ix(e), Guard, lambda x: unclamped(x.args[0]))


def folded(e):
    """``e`` with its guard clamps replaced by the clamps themselves (what loads compute)."""
    return map_nodes(e, Guard, lambda x: folded(x.args[1]))


def sym(name: str) -> _Sym:
    """The non-negative integer symbol ``name`` (a loop variable)."""
    return _Sym(name)


def strides_of(shape) -> list[int]:
    out, acc = [], 1
    for d in reversed(shape):
        out.append(acc)
        acc *= d
    return list(reversed(out))


def flat_offset(idx, shape) -> IntExpr:
    """The row-major flat offset of the element at ``idx`` of an array of ``shape``. Memoised:
    the lowering asks for a few dozen distinct offsets about a thousand times (the GPT block:
    66 of 916)."""
    key = (tuple(idx), tuple(shape))
    try:
        return _offset_cache[key]
    except KeyError:
        pass
    except TypeError:  # (an index that is not hashable: not memoised)
        key = None
    out = add(*(ix(i) * s for i, s in zip(idx, strides_of(shape))))
    if key is not None:
        if len(_offset_cache) > 100_000:
            _offset_cache.clear()
        _offset_cache[key] = out
    return out


_offset_cache: dict = {}


# --- element expressions -------------------------------------------------------------------------
@dataclass(frozen=True)
class E:
    dtype: Any


@dataclass(frozen=True)
class Const(E):
    value: Any


@dataclass(frozen=True)
class Idx(E):
    expr: Any  # integer index expression (IntExpr)

    def __post_init__(self):
        object.__setattr__(self, "expr", folded(self.expr))


@dataclass(frozen=True)
class Load(E):
    buf: str
    offset: Any  # IntExpr, or an E of integer dtype (data-dependent offsets)

    def __post_init__(self):
        object.__setattr__(self, "offset", folded(self.offset))


@dataclass(frozen=True)
class Op(E):
    name: str
    args: tuple


#: Op names that cost much more than an add or a multiply (a polynomial, a division, a call): the
#: elementwise rows marked ``costly`` (``functx.primitives.elementwise``).
COSTLY = frozenset(row.name for row in ROWS if row.costly)


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
    kind: str = "pointwise"  # one of NODE_KINDS
    params: dict = field(default_factory=dict)
    inputs: list = field(default_factory=list)  # nodes this node reads (for scheduling)
    buf: str | None = None
    source_info: Any = None  # of the equation it computes (errors name the user's line)
    prim: str | None = None  # the name of that equation's primitive

    @property
    def size(self):
        return math.prod(self.shape)

    def load(self, idx, ctx) -> E:
        """The element at ``idx``: inlined (pointwise), or read from the buffer. ``ctx`` is the
        kernel being generated: it memoises loads and turns reads of reductions computed in the
        same kernel row into accumulator references."""
        idx = tuple(ix(i) for i in idx)
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
        # nodes (their Python ``id``: node ids change when a pass removes nodes) no pass may
        # merge with another that computes the same (the forward pass a ``checkpoint``
        # recomputes: JAX's ``prevent_cse``)
        self.distinct: set[int] = set()

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
    return ix(e.offset).subs(unit) == want


@dataclass(frozen=True)
class Sym(E):
    """A named C variable (a scan accumulator)."""

    name: str


# --- printing ------------------------------------------------------------------------------------
# the kinds of node lowering makes (``lower.py`` and the control-flow lowerings)
NODE_KINDS = (
    "input",
    "pointwise",
    "reduce",
    "dot",
    "scatter",
    "dus",
    "ascan",
    "greduce",
    "loop",
    "sort",
)


def loop_vars(n: int) -> tuple:
    """The index symbols ``i0, i1, ...`` a node's element expression is printed and checked at."""
    return tuple(sym(f"i{d}") for d in range(n))


def pp_index(e) -> str:
    """An index expression as text: as SymPy wrote it, with ``//`` and ``%`` for FloorDiv and ModI
    and ``guard(v, c)`` for a guard clamp."""
    e = ix(e)
    if isinstance(e, FloorDiv):
        return f"({pp_index(e.args[0])} // {pp_index(e.args[1])})"
    if isinstance(e, ModI):
        return f"({pp_index(e.args[0])} % {pp_index(e.args[1])})"
    if isinstance(e, Guard):
        return f"guard({pp_index(e.args[0])}, {pp_index(e.args[1])})"
    if e.has(FloorDiv, ModI, Guard):
        parts = [pp_index(a) for a in e.args]
        if e.is_Add:
            return " + ".join(parts)
        if e.is_Mul:
            return "*".join(f"({p})" if " " in p and not p.startswith("(") else p for p in parts)
        return f"{type(e).__name__}({', '.join(parts)})"
    return str(e)


def _buf_name(buf) -> str:
    """``n<id>`` (a read of node ``id``, as ``_Reads`` writes it) prints as ``t<id>``, the name of
    node ``id``'s buffer; a buffer not assigned yet (a read of a realised node at lowering time,
    before the scheduler names its buffer) as ``?``."""
    if buf is None:
        return "?"
    return "t" + buf[1:] if buf.startswith("n") and buf[1:].isdigit() else buf


def _buf_node(buf) -> int | None:
    """The node id a buffer name ``n<id>`` or ``t<id>`` stands for, else None."""
    if isinstance(buf, str) and buf[:1] in ("n", "t") and buf[1:].isdigit():
        return int(buf[1:])
    return None


def pp_expr(e) -> str:
    """An element expression (``E`` tree) as text: ``add(t0[16*i0 + i1], 2.0)``."""
    if isinstance(e, Const):
        return str(e.value)
    if isinstance(e, Idx):
        return f"idx({pp_index(e.expr)})"
    if isinstance(e, Load):
        off = pp_expr(e.offset) if isinstance(e.offset, E) else pp_index(e.offset)
        return f"{_buf_name(e.buf)}[{off}]"
    if isinstance(e, Op):
        args = []
        for a in e.args:
            if isinstance(a, E):
                args.append(pp_expr(a))
            elif isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], str):
                args.append(f"{a[0]}={a[1]!r}")
            else:
                args.append(repr(a))
        return f"{e.name}({', '.join(args)})"
    if isinstance(e, Acc):
        return f"acc(t{e.node}" + (f", {e.which})" if e.which else ")")
    if isinstance(e, Sym):
        return f"${e.name}"
    return repr(e)


def _type(n: Node) -> str:
    return f"{dtypes.short_name(np.dtype(n.dtype))}[{','.join(str(d) for d in n.shape)}]"


def _pp_param(v) -> str:
    if isinstance(v, Node):
        return f"t{v.id}"
    if isinstance(v, list):
        return "[" + ", ".join(_pp_param(x) for x in v) + "]"
    if isinstance(v, tuple):
        return "(" + ", ".join(_pp_param(x) for x in v) + ("," if len(v) == 1 else "") + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_pp_param(x)}" for k, x in v.items()) + "}"
    if hasattr(v, "jaxpr") and hasattr(v, "consts"):  # a ClosedJaxpr: its size, not its text
        return f"<jaxpr: {len(v.jaxpr.eqns)} eqns>"
    if isinstance(v, IntExpr):
        return pp_index(v)
    if isinstance(v, np.ndarray):
        return f"<array {v.dtype}{list(v.shape)}>"
    return repr(v)


def pp_node(n: Node) -> str:
    """One node as a line: ``t3:f32[8,16] = pointwise(t0) [i0, i1] -> exp(t0[16*i0 + i1])``."""
    head = f"t{n.id}:{_type(n)} = {n.kind}"
    if n.kind == "input":
        return f"{head} {n.buf}"
    args = f"({', '.join(f't{x.id}' for x in n.inputs)})"
    params = {k: v for k, v in n.params.items() if k not in ("group",)}
    group = n.params.get("group")
    text = head + args
    if params:
        text += " " + " ".join(f"{k}={_pp_param(v)}" for k, v in params.items())
    if group is not None:
        text += " group=" + _pp_param({k: v for k, v in group.items() if k not in ("ins",)})
    if n.fn is not None:
        ivars = loop_vars(len(n.shape))
        try:
            e = pp_expr(n.fn(ivars, _Reads()))
        except Exception as err:  # (the verifier reports it; the printer shows what it can)
            e = f"<{type(err).__name__}: {err}>"
        text += f" [{', '.join(map(str, ivars))}] -> {e}"
    return text


def pp_graph(graph: Graph, kernels=None) -> str:
    """The loop IR of ``graph`` as text: a line per node (its type, kind, inputs, parameters and,
    for a node with an element expression, that expression at the index ``i0, i1, ...`` with
    every other node read as ``t<id>[offset]``), the inputs, constants and outputs, and, given
    the scheduler's ``kernels``, the kernel each node belongs to and a line per kernel.

    Example:
      >>> g = lower.lower_jaxpr(functx.make_jaxpr(lambda x: functx.numpy.exp(x) * 2.0)(x))
      >>> print(pp_graph(g))
      t0:f32[3] = input in0
      t1:f32[3] = pointwise(t0) [i0] -> exp(t0[i0])
      t2:f32[] = pointwise() [] -> 2.0
      t3:f32[3] = pointwise(t1, t2) [i0] -> mul(t1[i0], t2[0])
      outputs: t3
    """
    where: dict = {}
    for k in kernels or ():
        members = list(k.nodes)
        for p in getattr(k, "passes", ()):
            members += p
        members += list(getattr(k, "maps", ())) + list(getattr(k, "epilogue", ()))
        for n in members:
            where.setdefault(n.id, k.index)
    lines = []
    for n in graph.nodes:
        line = pp_node(n)
        if n.id in where:
            line += f"  # kernel {where[n.id]}"
        lines.append(line)
    if graph.consts:
        lines.append("consts: " + ", ".join(f"t{n.id}" for n, _ in graph.consts))
    lines.append("outputs: " + ", ".join(f"t{n.id}" for n in graph.outputs))
    for k in kernels or ():
        parts = [f"kernel {k.index}: {k.kind} {tuple(k.shape)}"]
        if getattr(k, "axes", ()):
            parts.append(f"axes={tuple(k.axes)}")
        for name in ("passes", "maps", "epilogue"):
            v = getattr(k, name, ())
            if v:
                parts.append(f"{name}={_pp_param(v)}")
        parts.append(f"nodes={_pp_param(list(k.nodes))}")
        lines.append(" ".join(parts))
    return "\n".join(lines)


# --- verifying -----------------------------------------------------------------------------------
class LoopIRError(AssertionError):
    """The loop IR breaks one of its invariants (a bug in a lowering rule or in the scheduler)."""


def fail(n: Node | None, msg: str):
    where = f"node t{n.id} ({n.kind} {_type(n)})" if n is not None else "graph"
    info = f" [from {n.source_info}]" if n is not None and n.source_info is not None else ""
    raise LoopIRError(f"loop IR: {where}: {msg}{info}")


def _nodes_in(v, out: list):
    """The nodes inside a parameter value (lists, tuples, dicts; not inside Jaxprs)."""
    if isinstance(v, Node):
        out.append(v)
    elif isinstance(v, (list, tuple)):
        for x in v:
            _nodes_in(x, out)
    elif isinstance(v, dict):
        for x in v.values():
            _nodes_in(x, out)
    return out


def verify_expr(e, n: Node, graph: Graph, allowed: set, accs=frozenset()) -> None:
    """Check the element expression ``e`` of node ``n``: every part an ``E`` with a valid dtype,
    index expressions in the symbols ``allowed`` only, loads of ``n<id>`` reading nodes of the
    graph with their dtype, accumulators only of the nodes ``accs`` (a kernel's reductions)."""

    def index(x, what):
        x = ix(x)
        extra = {s for s in x.free_symbols if s not in allowed}
        if extra:
            fail(
                n,
                f"{what} {pp_index(x)} uses {', '.join(sorted(map(str, extra)))}, not a loop "
                f"symbol of the node ({', '.join(sorted(map(str, allowed))) or 'none'})",
            )

    seen: set = set()  # expressions are DAGs (a value read by several ops): visit each once

    def walk(x):
        if id(x) in seen:
            return
        seen.add(id(x))
        if not isinstance(x, E):
            fail(n, f"element expression part {x!r} is not an E")
        try:
            np.dtype(x.dtype)
        except TypeError:
            fail(n, f"{pp_expr(x)} has no valid dtype ({x.dtype!r})")
        if isinstance(x, Idx):
            index(x.expr, "index value")
        elif isinstance(x, Load):
            if isinstance(x.offset, E):
                walk(x.offset)
            else:
                index(x.offset, f"offset of {x.buf}")
            i = _buf_node(x.buf)
            if i is not None:
                if i >= len(graph.nodes):
                    fail(n, f"reads t{i}, which is not in the graph")
                src = graph.nodes[i]
                if np.dtype(src.dtype) != np.dtype(x.dtype):
                    fail(n, f"reads t{i} ({_type(src)}) as {np.dtype(x.dtype)}")
        elif isinstance(x, Op):
            for a in x.args:
                if isinstance(a, E):
                    walk(a)
        elif isinstance(x, Acc):
            if x.node not in accs:
                fail(n, f"{pp_expr(x)}: an accumulator of a node this kernel does not reduce")
            if x.which not in (0, 1):
                fail(n, f"{pp_expr(x)}: accumulator part {x.which} (0 or 1)")

    walk(e)


def verify(graph: Graph, kernels=None) -> None:
    """Check the loop IR's invariants; raise ``LoopIRError`` naming the node on the first break.

    Every node is in the graph once, at its id, with a shape of non-negative integers, a valid
    dtype and a known kind; its inputs (and the nodes its parameters name, bar the sibling
    outputs of its group) are defined before it; inputs and constants are ``input`` nodes with a
    buffer; outputs are nodes of the graph; reductions and updates have the shape their operands
    give; a node's element expression (read at ``i0, i1, ...`` with every other node as a load)
    has the node's dtype and uses only those symbols, and holds no accumulator. Given the
    scheduler's ``kernels`` (see ``schedule.verify`` for the expressions inside kernels): each
    kernel's nodes are in the graph and every realised node is computed by exactly one kernel.
    """
    ids = {}
    for i, n in enumerate(graph.nodes):
        if not isinstance(n, Node):
            fail(None, f"entry {i} is not a Node: {n!r}")
        if n.id != i:
            fail(n, f"is at position {i} of the graph")
        if id(n) in ids:
            fail(n, "appears twice in the graph")
        ids[id(n)] = i

    def member(x, n, what):
        if not isinstance(x, Node) or ids.get(id(x)) != x.id:
            fail(n, f"{what} {x!r} is not a node of this graph")

    for n in graph.nodes:
        if not isinstance(n.shape, tuple) or not all(
            isinstance(d, (int, np.integer)) and d >= 0 for d in n.shape
        ):
            fail(n, f"shape {n.shape!r} is not a tuple of non-negative integers")
        try:
            np.dtype(n.dtype)
        except TypeError:
            fail(n, f"dtype {n.dtype!r} is not a dtype")
        if n.kind not in NODE_KINDS:
            fail(n, f"kind {n.kind!r} is none of {', '.join(NODE_KINDS)}")
        for x in n.inputs:
            member(x, n, "input")
            if x.id >= n.id:
                fail(n, f"input t{x.id} is defined after it")
        group = n.params.get("group")
        siblings = {id(o) for o in group.get("outs", ())} if isinstance(group, dict) else set()
        if group is not None and id(n) not in siblings:
            fail(n, "is not among its group's outputs")
        for x in _nodes_in(n.params, []):
            member(x, n, "parameter node")
            if x.id >= n.id and id(x) not in siblings:
                fail(n, f"parameter node t{x.id} is defined after it")
        if n.kind == "input":
            if n.buf is None or n.fn is not None:
                fail(n, "an input needs a buffer and no element expression")
        if n.kind == "reduce":
            op, axes = n.params.get("operand"), n.params.get("axes")
            if not isinstance(op, Node) or axes is None:
                fail(n, "a reduction needs 'operand' and 'axes'")
            kept = tuple(d for i, d in enumerate(op.shape) if i not in axes)
            if kept != tuple(n.shape):
                fail(n, f"reduces t{op.id} {list(op.shape)} over {tuple(axes)} to {kept}")
        if n.kind in ("scatter", "dus"):
            op = n.params.get("operand")
            if not isinstance(op, Node) or tuple(op.shape) != tuple(n.shape):
                fail(n, "an update has its operand's shape")
        if n.fn is not None:
            ivars = loop_vars(len(n.shape))
            try:
                e = n.fn(ivars, _Reads())
            except LoopIRError:
                raise
            except Exception as err:
                fail(n, f"its element expression fails: {type(err).__name__}: {err}")
            if not isinstance(e, E):
                fail(n, f"its element expression is {e!r}, not an E")
            if np.dtype(e.dtype) != np.dtype(n.dtype):
                fail(n, f"its element expression has dtype {np.dtype(e.dtype)}")
            verify_expr(e, n, graph, set(ivars))
    for what, nodes in (
        ("input", graph.inputs),
        ("constant", [c for c, _ in graph.consts]),
    ):
        for x in nodes:
            member(x, None, what)
            if x.kind != "input":
                fail(x, f"a graph {what} is not an input node")
    for x in graph.outputs:
        member(x, None, "output")
    if kernels is None:
        return
    computed: dict = {}
    for k in kernels:
        members = list(k.nodes) + [r for p in getattr(k, "passes", ()) for r in p]
        for x in members + list(getattr(k, "maps", ())) + list(getattr(k, "epilogue", ())):
            member(x, None, f"node of kernel {k.index}")
        for x in members:
            if x.kind not in ("input", "pointwise"):
                if x.id in computed and computed[x.id] != k.index:
                    fail(x, f"is computed by kernels {computed[x.id]} and {k.index}")
                computed[x.id] = k.index
    for n in graph.nodes:
        if n.kind not in ("input", "pointwise") and n.id not in computed:
            fail(n, "is a realised node no kernel computes")


# --- errors in the user's terms ------------------------------------------------------------------
def with_context(err: Exception, context: str) -> Exception:
    """``err`` with ``context`` appended to its message: a new exception of the same class (so
    ``except`` clauses and tests see what was raised), its attributes and traceback copied. An
    exception that already carries a context (raised inside a nested lowering: the innermost
    equation is the one to name) or whose class cannot be built from a message is ``err``."""
    if getattr(err, "_functx_context", False) or not context:
        return err
    try:
        new = type(err)(f"{err}{context}")
    except Exception:
        return err
    new.__dict__.update(err.__dict__)
    new._functx_context = True
    return new.with_traceback(err.__traceback__)


@contextlib.contextmanager
def error_context(context):
    """Re-raise an exception of the block with ``context(err)`` appended (``with_context``), as
    Pallas's lowering wraps each rule in its equation's source context."""
    try:
        yield
    except Exception as err:
        new = with_context(err, context(err))
        if new is err:
            raise
        raise new from err


def culprit(roots, err: Exception) -> Node | None:
    """The node, among ``roots`` and the nodes they read, whose own element expression holds an
    operation named in ``err``'s message (a renderer's "no C++ for elementwise op 'erfc'"),
    else the first of them with a source line: the equation to name in a renderer's error."""
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", str(err)))
    seen: dict = {}
    stack = list(roots)
    while stack:
        n = stack.pop()
        if n.id not in seen:
            seen[n.id] = n
            stack.extend(n.inputs)
    nodes = [seen[i] for i in sorted(seen)]
    for n in nodes:
        if n.fn is None or n.prim is None:
            continue
        try:
            e = n.fn(loop_vars(len(n.shape)), _Reads())
        except Exception:
            continue
        if any(isinstance(x, Op) and x.name in words for x in subexprs(e)):
            return n
    return next((n for n in nodes if n.source_info is not None), None)


def node_context(n: Node | None, what: str) -> str:
    """`` (what, from 'prim' at file:line (fn))`` for the node an error is about."""
    if n is None:
        return f" ({what})"
    prim = f" from '{n.prim}'" if n.prim else ""
    line = f" at {n.source_info}" if n.source_info is not None else ""
    return f" ({what}{prim}{line})"
