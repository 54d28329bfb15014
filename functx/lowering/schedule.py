"""Stage 2 of lowering: decide which nodes own a buffer and group the work into kernels.

Pointwise nodes are inlined into whoever reads them (recomputed, never stored) unless they are
outputs, something must index them with data-dependent offsets, they are costly and read many
times each through a broadcast (``_stored_for_reuse``), or (C++) they are costly and would be
evaluated at two places, by two kernels or at two indices (``_stored_once``). Every other node
(reductions, scans, matrix products, scatters) owns a buffer. Kernels:

* ``pointwise``: one loop nest over a shape, storing one or more realised pointwise nodes. A
  node cut from a long chain (``MAX_INLINE_DEPTH``), or a costly one computed once, is a
  *local* of its kernel: computed once per element into a variable (C++ ``const float v12 =
  ...;``, Triton ``v12 = ...``) that the kernel's later nodes read at the same index
  (``Sym("l<id>")``), and stored only when a reader in another kernel needs it.
* ``reduce``: rows (the kept axes, run in parallel) x inner (the reduced axes). Reductions over the
  same operand shape and axes share the kernel in *passes*; a reduction whose operand reads an
  earlier reduction of the same row (softmax's sum reads its max) goes into a later pass; pointwise
  nodes over the whole operand shape (softmax's output) or over the row shape (logsumexp) that read
  the row's reductions become the kernel's map/epilogue phases. So softmax and layer norm are one
  kernel, with each row held in cache between passes.
* ``ascan`` (a lane-wise ``associative_scan``): one kernel per scan; pointwise nodes over the
  scan's shape that read its outputs only at the position being computed (the gradient of a
  linear recurrence: ``g_a[t] = lambda[t] * h[t - 1]``) join it as its epilogue, evaluated at
  each position as the scan reaches it. An output read by nothing else is then never stored.
* ``greduce``, ``loop`` (scan, while_loop, cond), ``dot``, ``scatter``, ``dus``: one kernel each.

The kernel kinds are the keys of each backend's ``KERNEL_KINDS`` (``cpp/program.py``,
``triton/program.py``). ``verify`` checks a scheduled graph (``loopir.verify`` plus the
expressions each kernel builds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from functx.lowering import loopir
from functx.lowering.intexpr import Int, IntExpr, add, add_args, ix
from functx.lowering.loopir import Acc, FloorDiv, Graph, Load, ModI, Node, Sym, sym, unclamped


class NotRowAligned(Exception):
    """A read of a reduction of the same kernel at another row: the node cannot join."""


class KernelCtx:
    """The context a node's element expression is built in (no global state)."""

    def __init__(self, kernel=None, row_vars=()):
        self.kernel = kernel
        self.row_vars = tuple(row_vars)
        self.memo: dict = {}
        self.reads: set = set()
        self.accs: set = set()

    def lookup(self, node, idx):
        k = self.kernel
        if k is not None and node.id in k.local_ids:
            # a local of this kernel: its variable at the kernel's own index, else not here
            if not k.at_loop_index(idx):
                raise NotRowAligned(node)
            return local_sym(node)
        if k is not None and k.kind in ("reduce", "ascan") and node.id in k.reduction_ids:
            # a guarded read (pad, concatenate) of the current element is the current element
            if tuple(idx) != self.row_vars and tuple(unclamped(i) for i in idx) != self.row_vars:
                raise NotRowAligned(node)
            self.accs.add(node.id)
            return Acc(node.dtype, node.id)
        return self.memo.get((node.id, idx))

    def remember(self, node, idx, e):
        self.memo[(node.id, idx)] = e

    def can_read_buffer(self, node) -> bool:
        """False for nodes this kernel computes itself (they are not stored yet)."""
        k = self.kernel
        return k is None or (node.id not in k.reduction_ids and node.id not in k.inline_ids)

    def note_read(self, node):
        if not self.can_read_buffer(node):
            raise NotRowAligned(node)
        self.reads.add(node)

    def inlines(self, node) -> bool:
        return self.kernel is not None and node.id in self.kernel.inline_ids


def local_sym(node) -> Sym:
    """How a kernel's later nodes read ``node``, a local of the kernel (see ``Kernel.local_ids``):
    the variable ``l<id>`` the renderers bind to its value."""
    return Sym(node.dtype, f"l{node.id}")


@dataclass(eq=False)
class Kernel:
    kind: str
    index: int
    shape: tuple = ()  # pointwise: the loop shape; reduce: the operand shape
    axes: tuple = ()  # reduce: the reduced axes
    nodes: list = field(default_factory=list)  # pointwise: stored nodes; others: [node]
    passes: list = field(default_factory=list)  # reduce: lists of reduction nodes
    maps: list = field(default_factory=list)  # reduce: pointwise nodes over the operand shape
    # reduce: pointwise nodes over the row shape; ascan: over the scan's shape, per position
    epilogue: list = field(default_factory=list)
    # reduce: its reductions; ascan: its outputs (read in the kernel as the current value)
    reduction_ids: set = field(default_factory=set)
    inline_ids: set = field(default_factory=set)
    # pointwise: nodes cut from long chains (MAX_INLINE_DEPTH), computed once per element into a
    # variable that the kernel's later nodes read (``local_sym``); stored (``buf``) only when
    # another kernel reads them too
    local_ids: set = field(default_factory=set)
    ops: int = 0  # about how many element values its expressions build (``built``)
    built: set = field(default_factory=set)  # the (node id, index) pairs they build

    @property
    def row_shape(self):
        return tuple(d for i, d in enumerate(self.shape) if i not in self.axes)

    @property
    def inner_shape(self):
        return tuple(self.shape[i] for i in self.axes)

    def row_vars(self):
        return tuple(sym(f"r{i}") for i in range(len(self.row_shape)))

    def at_loop_index(self, idx) -> bool:
        """pointwise: whether ``idx`` is the element the loop is at (``i0, i1, ...``; any index
        along an axis of size 1)."""
        if len(idx) != len(self.shape):
            return False
        for d, (v, n) in enumerate(zip(idx, self.shape)):
            if n != 1 and v != sym(f"i{d}"):
                return False
        return True

    def inner_vars(self):
        return tuple(sym(f"j{i}") for i in range(len(self.axes)))

    def scan_index(self):
        """ascan: the element being computed, ``(p0, ..., j, q0, ...)`` with ``j`` along the axis
        (the names both backends' scan loops use)."""
        axis = self.nodes[0].params["group"]["axis"]
        return (
            tuple(sym(f"p{i}") for i in range(axis))
            + (sym("j"),)
            + tuple(sym(f"q{i}") for i in range(len(self.shape) - axis - 1))
        )

    def full_index(self):
        rv, iv = iter(self.row_vars()), iter(self.inner_vars())
        return tuple(next(iv) if i in self.axes else next(rv) for i in range(len(self.shape)))


def _trial(kernel, node, idx, kernel_of):
    """Build ``node``'s expression inside ``kernel``; returns (ok, passes needed). When it fits,
    the element values it builds that the kernel did not build yet count in ``kernel.ops``."""
    row = {"reduce": kernel.row_vars, "ascan": kernel.scan_index}.get(kernel.kind)
    ctx = KernelCtx(kernel, row() if row else ())
    try:
        if node.kind == "reduce":
            node.params["operand"].load(idx, ctx)
        else:
            node.fn(idx, ctx)
    except NotRowAligned:
        return False, 0
    for r in ctx.reads:
        if r.kind == "input":
            continue
        k = kernel_of.get(r.id)
        if k is None or k >= kernel.index:
            return False, 0
    fresh = ctx.memo.keys() - kernel.built
    kernel.ops += len(fresh)
    kernel.built |= fresh
    return True, ctx.accs


# A pointwise node computing a transcendental function is stored rather than inlined when its
# readers evaluate it at least REUSE times per element and at least REUSE_MIN times in all
# (Triton: a kernel more is a launch) or REUSE_MIN_CPP times (C++: a kernel more is a loop).
REUSE = 8
REUSE_MIN = 1 << 20
REUSE_MIN_CPP = 1 << 12

# How many times a kernel that is not an inlined pointwise node evaluates the (inlined)
# expression of its input ``n``: a reduction once per element of its operand, a scatter its
# indices and updates once per update (a sparse product scatters one per stored entry and output
# column); any other once per element of its own.
_EVALUATIONS = {
    "reduce": lambda r, n: r.params["operand"].size,
    "scatter": lambda r, n: r.size if n is r.params["operand"] else r.params["updates"].size,
}


def _reductions_read(n, realise) -> list:
    """The reductions ``n``'s inlined expression reads (a reduction kernel computes such a node
    once per row, or as its map)."""
    todo, seen, out = [n], set(), []
    while todo:
        x = todo.pop()
        for i in x.inputs:
            if i.id in seen:
                continue
            seen.add(i.id)
            if i.kind == "reduce":
                out.append(i)
            if i.kind == "pointwise" and i.id not in realise:
                todo.append(i)
    return out


def _reads_reduction(n, realise) -> bool:
    return bool(_reductions_read(n, realise))


class _Stored(KernelCtx):
    """Builds an expression as kernels will: nodes with a buffer are loads."""

    def __init__(self, buffered: set):
        super().__init__()
        self.buffered = buffered

    def lookup(self, node, idx):
        if node.id in self.buffered:
            return Load(node.dtype, f"t{node.id}", 0)
        return super().lookup(node, idx)


# An expression reading this many buffers (a sum of several products' outputs) is worth storing
# when its readers would evaluate it REUSE times per element or more, as a costly one is.
LOADS_WORTH_STORING = 4
# An expression reading this many buffers is stored when read WIDE_REUSE times per element.
WIDE_LOADS = 8
WIDE_REUSE = 4
# The two rules above (and the shared one) store only nodes of at least this many elements: a
# smaller one costs less to evaluate again than its own kernel.
SHARED_MIN = 1 << 12


def _dag(e):
    """``e`` and the expressions inside it, each shared one once (element expressions are DAGs:
    walked as trees, a chain of threefry rounds is exponential)."""
    seen, todo = set(), [e]
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        yield x
        if isinstance(x, loopir.Op):
            todo.extend(a for a in x.args if isinstance(a, loopir.E))


def _loads(e) -> int:
    """How many loads ``e`` makes, counted as a tree (a shared subexpression once per use) but
    computed once per shared subexpression."""
    memo: dict = {}
    todo = [(e, False)]
    while todo:
        x, ready = todo.pop()
        if id(x) in memo:
            continue
        args = [a for a in x.args if isinstance(a, loopir.E)] if isinstance(x, loopir.Op) else []
        if ready or not args:
            memo[id(x)] = 1 if isinstance(x, Load) else sum(memo[id(a)] for a in args)
        else:
            todo.append((x, True))
            todo.extend((a, False) for a in args if id(a) not in memo)
    return memo[id(e)]


def _costly(e) -> bool:
    return any(isinstance(s, loopir.Op) and s.name in loopir.COSTLY for s in _dag(e))


def _stored_for_reuse(g: Graph, realise: set, least: int = REUSE_MIN) -> set:
    """Costly pointwise nodes read many times each: per-sample gradients' outer products read
    each row's activation derivative once per output column, so inlined, the tanh behind it
    would run once per gradient element. Decided from the last node back, so that of a chain
    only the node the broadcast reads is stored."""
    readers: dict[int, list] = {}
    for n in g.nodes:
        for i in n.inputs:
            readers.setdefault(i.id, []).append(n)
    evals: dict[int, int] = {}  # node id -> how many times its readers evaluate it
    stored = set()
    for n in reversed(g.nodes):
        count = 0  # (every reader's evaluations add up: each one evaluates n again)
        for r in readers.get(n.id, ()):
            if r.kind == "pointwise" and r.id not in realise and r.id not in stored:
                count += evals[r.id]
            else:
                rule = _EVALUATIONS.get(r.kind)
                count += rule(r, n) if rule else r.size
        evals[n.id] = count
        # read by a reduction and by a stored node or another kernel (a bias gradient's reduction
        # and the weight gradient's product reading the same cotangent): stored once rather
        # than evaluated by both, whatever the size
        rs = readers.get(n.id, ())
        shared = (
            count >= 2 * n.size
            and n.size >= SHARED_MIN
            and any(r.kind == "reduce" for r in rs)
            and any(  # (a reader of n's own shape joins the reduction's kernel: softmax's output)
                r.kind != "reduce"
                and (r.kind != "pointwise" or r.id in realise | stored)
                and (r.kind != "pointwise" or r.shape != n.shape)
                for r in rs
            )
        )
        # (and a sum of many buffers, a convolution's taps, read WIDE_REUSE times per element:
        # by a pooling window's elements)
        many = count >= max(REUSE * n.size, least)
        wide = count >= WIDE_REUSE * n.size and n.size >= SHARED_MIN
        if n.kind != "pointwise" or n.fn is None or n.id in realise or not (many or shared or wide):
            continue
        e = n.fn(tuple(sym(f"i{d}") for d in range(len(n.shape))), _Stored(realise | stored))
        loads = _loads(e)
        worth = (
            (_costly(e) or loads >= LOADS_WORTH_STORING) if many or shared else loads >= WIDE_LOADS
        )
        if worth and not _reads_reduction(n, realise):
            stored.add(n.id)
            evals[n.id] = n.size
    return stored


# --- costly values computed once ------------------------------------------------------------
class _Direct(KernelCtx):
    """Records where one node's expression reads the nodes it reads directly (``at``: node id
    -> the indices), each read a placeholder load: nothing is inlined."""

    def __init__(self):
        super().__init__()
        self.at: dict[int, set] = {}

    def lookup(self, node, idx):
        self.at.setdefault(node.id, set()).add(idx)
        return Load(node.dtype, f"d{node.id}", loopir.flat_offset(idx, node.shape))


def _reduction_loop(r):
    """The loop of reduction ``r``'s kernel, shared by the reductions of its operand's shape and
    axes and by its map (``_row_cache`` keeps costly values for its later phases), and the
    operand's index there."""
    x, axes = r.params["operand"], r.params["axes"]
    return ("reduce", x.shape, axes), Kernel("reduce", -1, shape=x.shape, axes=axes).full_index()


def _stored_once(g: Graph, realise: set) -> set:
    """Pointwise nodes with a costly operation in their inlined expression (``loopir.COSTLY``:
    a transcendental function) that the kernels would evaluate at more than one *site*; stored,
    so that each is computed once per element. A site is a root that inlines the node (a
    realised node: a stored pointwise node, a reduction's operand, another kind of kernel) and
    the index it evaluates the node at: a value read by two roots, or by one at two indices (a
    slice, a concatenation, a shifted neighbour), is evaluated at each, together with
    everything costly it inlines in turn. A chain of Runge-Kutta stages, each reading all the
    earlier ones through slices of the state, called ``sin`` 592 times in the C++ of a jitted
    ``odeint`` for the Jaxpr's 8; BFGS's objective evaluated its ``exp`` once for the value and
    once for the gradient. Cheap nodes (a negation, a product) are still inlined and recomputed.
    A stored node is a local of its kernel (see ``_depth_cuts``): read there at its own index, it
    is a variable, and it has a buffer only if other kernels read it.

    Decided from the last node back, the sites of a node being the union over its readers of
    where each reads it (a realised reader at its own loop index, an inlined one from each of
    its own sites), so that of a chain the last costly node is stored and the earlier ones it
    inlines are evaluated at its site only. A reduction's map (a node of its operand's shape
    that reads it) is at the reduction's site (``_reduction_loop``): softmax's ``exp``, in its
    sum and in its output, is one site (one kernel, whose row cache keeps it).
    A node stored because it inlined a costly node that was stored as well is inlined again
    (only cheap operations are left in it)."""
    readers: dict[int, list] = {}
    for n in g.nodes:
        for i in n.inputs:
            readers.setdefault(i.id, []).append(n)
    inline = [n for n in g.nodes if n.kind == "pointwise" and n.fn is not None]
    own, direct = {}, {}  # node id -> a costly op of its own; -> where it reads what
    for n in inline:  # (at its own loop index)
        ctx = _Direct()
        own[n.id] = _costly(n.fn(loopir.loop_vars(len(n.shape)), ctx))
        direct[n.id] = ctx.at

    def costly_with(stored: set) -> dict:
        out = {}
        for n in inline:  # (program order: inputs first)
            out[n.id] = own[n.id] or any(
                out.get(i.id) for i in n.inputs if i.id not in stored and i.id not in realise
            )
        return out

    costly = costly_with(set())
    sites: dict[int, set] = {}  # node id -> (root id, index) pairs; index None: all of it
    reads: dict[int, list] = {}  # an inlined reader -> (root id, where it reads what) per site
    stored: set = set()

    def read_at(r, n) -> set:
        """The sites of ``n`` that come from its reader ``r``."""
        if r.kind == "pointwise" and r.fn is not None and r.id not in realise | stored:
            if r.id not in reads:  # (an inlined reader: from each of its own sites)
                reads[r.id] = []
                for root, idx in sites[r.id]:
                    if idx is None:
                        reads[r.id].append((root, {i.id: {None} for i in r.inputs}))
                        continue
                    ctx = _Direct()
                    r.fn(idx, ctx)
                    reads[r.id].append((root, ctx.at))
            return {(root, at) for root, ats in reads[r.id] for at in ats.get(n.id, ())}
        if r.kind == "pointwise" and r.fn is not None:
            loop, rename = r.id, {}
            for red in _reductions_read(r, realise | stored):
                if red.params["operand"].shape == r.shape and red.params["axes"]:
                    # (r reads a reduction of an operand of its shape: it is that kernel's map)
                    loop, full = _reduction_loop(red)
                    rename = dict(zip(loopir.loop_vars(len(r.shape)), full))
                    break
            return {
                (loop, tuple(ix(i).xreplace(rename) for i in at))
                for at in direct[r.id].get(n.id, ())
            }
        if r.kind == "reduce" and r.params["operand"] is n:
            return {_reduction_loop(r)}
        return {(r.id, None)}

    for n in reversed(inline):
        if n.id in realise:
            continue
        sites[n.id] = set().union(*(read_at(r, n) for r in readers.get(n.id, ())))
        if len(sites[n.id]) > 1 and costly[n.id]:
            stored.add(n.id)
    final = costly_with(stored)
    return {i for i in stored if final[i]}


# A chain of pointwise nodes inlined into one another is cut (the node at this depth is stored
# and ends its kernel) so that element expressions, their index expressions and the recursion
# that builds and prints them stay bounded whatever the length of the program.
MAX_INLINE_DEPTH = 48
# A kernel storing more nodes than this is closed (the next one starts a new kernel): a C++ loop
# storing thousands of arrays takes the compiler minutes (2,000 outputs: over a minute).
MAX_KERNEL_STORES = 64
# A pointwise kernel is closed once its element expressions hold about this many values (locals
# of cut chains make long loop bodies; gcc's time per loop grows faster than its length).
MAX_KERNEL_OPS = 1024


def _depth_cuts(g: Graph) -> set:
    """Pointwise nodes to store so that no inlined chain is deeper than MAX_INLINE_DEPTH."""
    depth: dict[int, int] = {}
    cuts = set()
    for n in g.nodes:  # (in program order: inputs first)
        if n.kind != "pointwise" or n.fn is None:
            depth[n.id] = 0
            continue
        d = 1 + max((depth.get(i.id, 0) for i in n.inputs), default=0)
        if d >= MAX_INLINE_DEPTH:
            cuts.add(n.id)
        # (a stored node that is not a cut may still be inlined by readers in its own kernel)
        depth[n.id] = 0 if n.id in cuts else d
    return cuts


# ``common_values``: on since its three faults were fixed (ml_dtypes' int4 and uint4 keyed alike,
# a key reused through a freed expression's id, a checkpoint's recomputed forward pass merged:
# tests/lowering/test_triton_small_steps.py, tests/test_remat.py); it saves the DP-SGD step's
# second forward pass (39 -> 29 launches at the GPU sizes)
COMMON_VALUES = True


def schedule(g: Graph, costly_once: bool = False) -> list[Kernel]:
    """The kernels computing ``g`` (see the module's docstring). ``costly_once``: a costly value
    that kernels would evaluate at more than one site is stored (``_stored_once``); the C++
    backend asks for it, where a kernel more costs a loop, and Triton does not, where it costs
    a launch."""
    if COMMON_VALUES:
        common_values(g)  # (first: what is computed twice is read, not scheduled)
    consumers: dict[int, int] = {}
    for n in g.nodes:
        for i in n.inputs:
            consumers[i.id] = consumers.get(i.id, 0) + 1
    realise = {n.id for n in g.outputs}
    for n in g.nodes:
        if n.kind not in ("pointwise", "input"):
            realise.add(n.id)
        for x in n.params.get("needs_buffer", ()):
            realise.add(x.id)
        if n.params.get("realize"):
            realise.add(n.id)
    # the locals of pointwise kernels: cut chains, and costly values computed once
    cuts = _depth_cuts(g)  # (first: _stored_for_reuse builds expressions too)
    kept = realise & cuts  # (cuts stored whatever reads them)
    realise |= cuts
    realise |= _stored_for_reuse(g, realise, REUSE_MIN_CPP if costly_once else REUSE_MIN)
    if costly_once:
        once = _stored_once(g, realise)
        cuts |= once
        realise |= once
    outputs = {n.id for n in g.outputs}
    for n in g.nodes:
        if n.kind == "ascan" and not consumers.get(n.id) and n.id not in outputs:
            continue  # an unused result of a scan: not stored
        if n.id in realise and n.kind != "input" and n.buf is None:
            n.buf = f"t{n.id}"

    kernels: list[Kernel] = []
    kernel_of: dict[int, int] = {}

    def new(kind, **kw):
        k = Kernel(kind, len(kernels), **kw)
        kernels.append(k)
        return k

    for n in g.nodes:
        if n.id not in realise or n.kind == "input":
            continue
        if n.kind == "reduce":
            x = n.params["operand"]
            axes = n.params["axes"]
            joined = False
            for k in reversed(kernels):
                if (
                    k.kind == "reduce"
                    and k.shape == x.shape
                    and k.axes == axes
                    and not k.maps
                    and not k.epilogue
                ):
                    ok, accs = _trial(k, n, k.full_index(), kernel_of)
                    if ok:
                        p = 1 + max(
                            (i for i, ps in enumerate(k.passes) for r in ps if r.id in accs),
                            default=-1,
                        )
                        while len(k.passes) <= p:
                            k.passes.append([])
                        k.passes[p].append(n)
                        k.reduction_ids.add(n.id)
                        kernel_of[n.id] = k.index
                        joined = True
                    break
            if not joined:
                k = new("reduce", shape=x.shape, axes=axes, passes=[[n]])
                k.reduction_ids.add(n.id)
                kernel_of[n.id] = k.index
            continue
        if n.kind == "pointwise":
            placed = False
            for k in kernels[-1:]:
                if (
                    len(k.nodes) + len(k.maps) + len(k.epilogue) >= MAX_KERNEL_STORES
                    or k.ops >= MAX_KERNEL_OPS
                ):
                    break
                if n.id in cuts and k.kind != "pointwise":
                    break  # (a cut is a local of a pointwise kernel only)
                if k.kind == "reduce" and n.shape == k.shape and k.row_shape != k.shape:
                    ok, _ = _trial(k, n, k.full_index(), kernel_of)
                    if ok:
                        k.maps.append(n)
                        k.inline_ids.add(n.id)
                        placed = True
                elif k.kind == "reduce" and n.shape == k.row_shape:
                    ok, _ = _trial(k, n, k.row_vars(), kernel_of)
                    if ok:
                        k.epilogue.append(n)
                        k.inline_ids.add(n.id)
                        placed = True
                elif k.kind == "ascan" and n.shape == k.shape:
                    ok, accs = _trial(k, n, k.scan_index(), kernel_of)
                    if ok and accs:
                        k.epilogue.append(n)
                        k.inline_ids.add(n.id)
                        placed = True
                elif k.kind == "pointwise" and k.shape == n.shape:
                    ok, _ = _trial(
                        k, n, tuple(sym(f"i{d}") for d in range(len(n.shape))), kernel_of
                    )
                    if ok:
                        k.nodes.append(n)
                        k.inline_ids.add(n.id)
                        placed = True
            if not placed:
                k = new("pointwise", shape=n.shape, nodes=[n])
                k.inline_ids.add(n.id)
                k.ops = MAX_INLINE_DEPTH  # (about: its chain is at most this deep)
            if n.id in cuts:
                # its readers in this kernel read its variable rather than inline it again
                k.local_ids.add(n.id)
            kernel_of[n.id] = k.index
            continue
        if n.kind in ("ascan", "loop", "greduce", "sort"):
            group = n.params["group"]
            if group["outs"][0].id in kernel_of:
                kernel_of[n.id] = kernel_of[group["outs"][0].id]
                continue
            k = new(n.kind, shape=n.shape, nodes=list(group["outs"]))
            if n.kind == "ascan":
                k.reduction_ids |= {o.id for o in group["outs"]}
            kernel_of[n.id] = k.index
            continue
        k = new(n.kind, shape=n.shape, nodes=[n])
        kernel_of[n.id] = k.index
    _drop_scan_buffers(g, kernels, realise, outputs)
    _drop_local_buffers(g, kernels, kernel_of, realise, cuts - kept)
    return kernels


def _drop_local_buffers(g: Graph, kernels, kernel_of, realise, cuts):
    """A cut node (a local of its kernel) that no other kernel reads is never stored: its readers
    in its own kernel read its variable. ``cuts``: the cut nodes realised for no other reason."""
    if not cuts:
        return
    by_id = {n.id: n for n in g.nodes}
    keep = set()
    for n in g.nodes:
        if n.id not in realise or n.kind == "input":
            continue
        home = kernel_of.get(n.id)
        todo, seen = list(n.inputs), set()
        while todo:  # the realised nodes n's expression reads (through inlined pointwise nodes)
            x = todo.pop()
            if x.id in seen:
                continue
            seen.add(x.id)
            if x.id in cuts and (home is None or kernel_of.get(x.id) != home):
                keep.add(x.id)
            if x.kind == "pointwise" and x.id not in realise:
                todo.extend(x.inputs)
    for i in cuts - keep:
        by_id[i].buf = None


def _drop_scan_buffers(g: Graph, kernels, realise, outputs):
    """A scan output that is not a program output and that only its own kernel's epilogue
    reads is never stored (the epilogue reads it from registers)."""
    fused = {
        o.id: k
        for k in kernels
        if k.kind == "ascan" and k.epilogue
        for o in k.nodes
        if o.id not in outputs and o.buf
    }
    if not fused:
        return
    by_id = {n.id: n for n in g.nodes}
    keep = set()
    for n in g.nodes:
        if n.id not in realise or n.kind == "input":
            continue
        todo, seen = list(n.inputs), set()
        while todo:  # the realised nodes n's expression reads (through inlined pointwise nodes)
            x = todo.pop()
            if x.id in seen:
                continue
            seen.add(x.id)
            if x.id in fused and n.id not in fused[x.id].inline_ids:
                keep.add(x.id)
            if x.kind == "pointwise" and x.id not in realise:
                todo.extend(x.inputs)
    for i in fused.keys() - keep:
        by_id[i].buf = None


def _syms(e) -> set:
    """The names of the variables (``Sym``) expression ``e`` reads (each shared part once)."""
    out, todo, seen = set(), [e], set()
    while todo:
        x = todo.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, Sym):
            out.add(x.name)
        elif isinstance(x, loopir.Op):
            todo.extend(a for a in x.args if isinstance(a, loopir.E))
        elif isinstance(x, Load) and isinstance(x.offset, loopir.E):
            todo.append(x.offset)
    return out


def in_order(e, ivars, shape) -> bool:
    """Whether ``e``, the element at ``ivars`` of an array of ``shape``, loads another buffer's
    element at the same flat position. The offset is simplified with the loop's bounds first:
    ``i // c`` is 0 and ``i % c`` is ``i`` where ``i < c``, and ``k*(a % c) + k*c*(a // c)`` is
    ``k*a`` (how a reshape through a unit axis, or through split axes, indexes its operand)."""
    if not isinstance(e, Load) or isinstance(e.offset, loopir.E):
        return False
    ext = {v: n for v, n in zip(ivars, shape)}
    unit = {v: 0 for v, n in ext.items() if n == 1}
    off = _simplify(ix(e.offset).subs(unit), ext)
    want = loopir.flat_offset(ivars, shape).subs(unit)
    return off == want


def _bounds(e, ext) -> tuple:
    """An interval holding every value of the index expression ``e`` when each loop variable
    ``v`` lies in ``[0, ext[v])`` (``(-inf, inf)`` where not known)."""
    inf = math.inf
    if e.is_Integer:
        return (int(e), int(e))
    if e.is_Symbol:
        return (0, ext[e] - 1) if e in ext else (-inf, inf)
    if e.is_Add or e.is_Mul:
        out = (0, 0) if e.is_Add else (1, 1)
        for a in e.args:
            lo, hi = _bounds(a, ext)
            if e.is_Add:
                out = (out[0] + lo, out[1] + hi)
            else:
                ps = [0 if 0 in (x, y) else x * y for x in out for y in (lo, hi)]
                out = (min(ps), max(ps))
        return out
    if isinstance(e, (FloorDiv, ModI)) and e.args[1].is_Integer and int(e.args[1]) > 0:
        c = int(e.args[1])
        lo, hi = _bounds(e.args[0], ext)
        if isinstance(e, ModI):
            return (lo, hi) if 0 <= lo and hi < c else (0, c - 1)
        return (lo // c if lo != -inf else lo, hi // c if hi != inf else hi)
    return (-inf, inf)


def _simplify(e, ext):
    """``e`` with the divisions and remainders its bounds decide folded (see ``in_order``)."""
    if not isinstance(e, IntExpr) or e.is_Atom:
        return e
    args = [_simplify(a, ext) for a in e.args]
    if isinstance(e, (FloorDiv, ModI)):
        a, c = args
        if c.is_Integer and int(c) > 0:
            lo, hi = _bounds(a, ext)
            if 0 <= lo and hi < int(c):
                return Int(0) if isinstance(e, FloorDiv) else a
            if isinstance(e, FloorDiv) and isinstance(a, FloorDiv) and a.args[1].is_Integer:
                return FloorDiv(a.args[0], a.args[1] * c)  # (a // b) // c = a // (b c)
        return e.func(a, c)
    e = e.func(*args)
    if e.is_Add:
        return _merge_div_mod(e)
    return e


def _merge_div_mod(e):
    """``k*(a % c) + k*c*(a // c) + ...`` as ``k*a + ...``, as often as it applies."""
    terms = [t.as_coeff_Mul() for t in add_args(e)]
    changed = True
    while changed:
        changed = False
        for i, (k, core) in enumerate(terms):
            if not isinstance(core, ModI) or not core.args[1].is_Integer:
                continue
            a, c = core.args
            div = (
                FloorDiv(a.args[0], a.args[1] * c)
                if isinstance(a, FloorDiv) and a.args[1].is_Integer
                else FloorDiv(a, c)
            )
            j = next((j for j, t in enumerate(terms) if t == (k * c, div)), None)
            if j is None:
                continue
            terms = [t for n, t in enumerate(terms) if n not in (i, j)] + [(k, a)]
            changed = True
            break
    return add(*(k * core for k, core in terms))


# --- values computed twice ------------------------------------------------------------------
class _Own(KernelCtx):
    """Every node read as a load of its own (``o<n>``, the node ``self.read[o<n>]``): one
    node's expression in terms of the nodes it reads."""

    def __init__(self):
        super().__init__()
        self.read: dict = {}

    def lookup(self, node, idx):
        name = f"o{id(node)}"
        self.read[name] = node
        return Load(node.dtype, name, loopir.flat_offset(idx, node.shape))


# the primitives whose nodes may hold another node's elements in the same order
_LAYOUT_PRIMS = frozenset(
    {"reshape", "squeeze", "expand_dims", "broadcast_in_dim", "transpose", "copy", "copy_p"}
)


def _squeezed(shape) -> tuple:
    return tuple(d for d in shape if d != 1)


def _unit_map(shape) -> dict:
    """The loop variables of ``shape`` renamed to those of its squeezed shape (``u0, u1, ...``),
    the ones along unit axes to 0."""
    out, k = {}, 0
    for d, n in enumerate(shape):
        if n == 1:
            out[sym(f"i{d}")] = Int(0)
        else:
            out[sym(f"i{d}")] = sym(f"u{k}")
            k += 1
    return out


def common_values(g: Graph) -> int:
    """Make each node that computes what an earlier node computes an in-order view of that node,
    and point matrix products at the nodes their operands repeat; returns how many nodes it
    rewrote. Two nodes compute the same when their shapes agree but for unit axes and they
    apply the same operation (a pointwise expression, a matrix product, a reduction) to the same
    values at the same positions. A per-example gradient (``vmap(grad)``) computes the forward
    pass with a unit batch axis, and a step reporting its loss computes it again without: the
    second one becomes reads of the first.

    Values are compared through representatives: a node holding another one's elements in the
    same order (a reshape, a unit axis added) stands for it. Only nodes whose kind, dtype,
    squeezed shape and operands' representatives agree build their expressions to compare."""
    rep: dict[int, Node] = {}  # id(node) -> the node it repeats
    first: dict = {}  # signature -> the first node with it (its key is built when needed)
    seen: dict = {}  # (signature, key) -> the node that computed it first
    keys: dict[int, object] = {}
    rewritten, redirected = 0, False

    def r(x):
        return rep.get(id(x), x)

    for n in g.nodes:
        if n.kind == "dot" and n.params.keys() <= _PLAIN_DOT:  # (not a convolution's taps)
            for side in ("lhs", "rhs"):
                x = n.params[side]
                y = r(x)
                if y is not x and (y.kind in _BUFFERS or (y.kind == "pointwise" and y.fn)):
                    if y.kind == "pointwise":
                        y.params["realize"] = True
                    n.params[side] = y
                    n.inputs = [y if i is x else i for i in n.inputs]
                    redirected = True
        if (
            n.kind not in ("pointwise", "dot", "reduce")
            or (n.kind == "pointwise" and (not n.fn or not n.inputs))
            or id(n) in g.distinct
        ):
            continue  # (a constant or an index costs nothing to compute again)
        if n.kind == "pointwise" and n.prim in _LAYOUT_PRIMS and len(n.inputs) == 1:
            src = n.inputs[0]
            if src.size == n.size and np.dtype(src.dtype) == np.dtype(n.dtype):
                ivars, ctx = loopir.loop_vars(len(n.shape)), _Own()
                try:
                    e = n.fn(ivars, ctx)
                except Exception:  # (an expression only a kernel can build: not a view)
                    e = None
                if isinstance(e, Load) and ctx.read.get(e.buf) is src:
                    if in_order(e, ivars, n.shape):
                        rep[id(n)] = r(src)
                        continue
        # (scalar constants read are compared by value, in the keys)
        ins = tuple(id(r(i)) for i in n.inputs if not _scalar_const(i))
        sig = (n.kind, _dt(n.dtype), _squeezed(n.shape), ins)
        m = first.setdefault(sig, n)
        if m is n:
            continue
        if id(m) not in keys and (k := _value_key(m, r, keys)) is not None:
            seen.setdefault((sig, k), m)
        key = _value_key(n, r, keys)
        if key is None:
            continue
        m = seen.setdefault((sig, key), n)
        if m is n:
            continue
        _make_view(n, m)
        rep[id(n)] = r(m)
        rewritten += 1
    if rewritten or redirected:
        read_by_dots = {
            id(x) for d in g.nodes if d.kind == "dot" for x in (d.params["lhs"], d.params["rhs"])
        }
        for n in g.nodes:
            if id(n) in rep and n.params.get("realize") and id(n) not in read_by_dots:
                del n.params["realize"]  # (its product reads the node it repeats)
    return rewritten


_BUFFERS = ("input", "reduce", "dot", "scatter", "dus")
# the parameters of a plain matrix product (``lower.py``); a product with others (the C++
# convolution's ``conv_taps``) reads its operands through them and keeps them
_PLAIN_DOT = {"lhs", "rhs", "lhs_trans", "rhs_trans", "batch", "m", "k", "n", "precision"}


def _value_key(n, r, keys):
    """A key equal for two nodes exactly when they compute the same values (see
    ``common_values``); None when there is none (accumulators, unknown parameters)."""
    if id(n) in keys:
        return keys[id(n)]
    umap = _unit_map(n.shape)
    memo: dict = {}
    ctx = _Own()

    def index(x):
        return ix(x).subs(umap) if umap else ix(x)

    def ek(e):
        hit = memo.get(id(e))
        if hit is not None and hit[0] is e:  # (the expression kept alive: its id is not reused)
            return hit[1]
        if isinstance(e, loopir.Const):
            v = np.asarray(e.value)
            out = ("C", _dt(e.dtype), _dt(v.dtype), v.tobytes())
        elif isinstance(e, loopir.Idx):
            out = ("I", _dt(e.dtype), index(e.expr))
        elif isinstance(e, Load):
            src = ctx.read.get(e.buf)
            if src is None:
                raise _NoKey  # (a load the node's expression makes itself)
            if _scalar_const(src):
                out = ("K", ek(src.fn((Int(0),) * len(src.shape), ctx)))
            else:
                off = ek(e.offset) if isinstance(e.offset, loopir.E) else index(e.offset)
                out = ("L", _dt(e.dtype), id(r(src)), off)
        elif isinstance(e, loopir.Op):
            args = tuple(ek(a) if isinstance(a, loopir.E) else _param(a) for a in e.args)
            out = ("O", _dt(e.dtype), e.name, args)
        else:
            raise _NoKey
        memo[id(e)] = (e, out)
        return out

    try:
        if n.kind == "pointwise":
            key = ("p", ek(n.fn(loopir.loop_vars(len(n.shape)), ctx)))
        elif n.kind == "dot":
            ps = n.params
            key = ("d", id(r(ps["lhs"])), id(r(ps["rhs"]))) + tuple(
                (k, _param(v)) for k, v in sorted(ps.items()) if k not in ("lhs", "rhs")
            )
        else:
            ps, x = n.params, n.params["operand"]
            kept = [a for a in range(len(x.shape)) if x.shape[a] != 1]
            axes = tuple(kept.index(a) for a in ps["axes"] if a in kept)
            key = ("r", id(r(x)), axes, _squeezed(x.shape)) + tuple(
                (k, _param(v)) for k, v in sorted(ps.items()) if k not in ("operand", "axes")
            )
        hash(key)
    except Exception:  # (_NoKey, unhashable parameters, an expression only a kernel builds)
        key = None
    key = None if key is None else (_dt(n.dtype), _squeezed(n.shape), key)
    keys[id(n)] = key
    return key


def _dt(d) -> str:
    """A dtype in a key: by name, since ml_dtypes' types share their ``str`` (int4 and uint4
    are both ``<V1``)."""
    return np.dtype(d).name


def _scalar_const(x) -> bool:
    return x.kind == "pointwise" and x.fn is not None and not x.inputs and x.size == 1


class _NoKey(Exception):
    pass


def _param(v):
    """A parameter as part of a key (values that are no plain data: no key; floats by their
    bits, so that -0.0 and 0.0 differ)."""
    if isinstance(v, np.generic):
        return (_dt(v.dtype), v.tobytes())
    if isinstance(v, float):
        return ("float", v.hex())
    if isinstance(v, (int, str, bool, type(None))):
        return (type(v).__name__, v)
    if isinstance(v, tuple):
        return tuple(_param(a) for a in v)
    if isinstance(v, np.dtype):
        return _dt(v)
    raise _NoKey


def _make_view(n, m):
    """Turn ``n`` into a read of ``m`` (same squeezed shape) at the same position."""
    n_axes = [d for d, k in enumerate(n.shape) if k != 1]
    m_axes = [d for d, k in enumerate(m.shape) if k != 1]
    where = dict(zip(m_axes, n_axes))
    nd = len(m.shape)

    def fn(idx, ctx):
        return m.load([idx[where[d]] if d in where else Int(0) for d in range(nd)], ctx)

    keep = {"realize": True} if n.params.get("realize") else {}
    n.kind, n.fn, n.inputs, n.params = "pointwise", fn, [m], keep


def describe(kernels) -> str:
    """A one-line-per-kernel summary (used by ``lower(...).as_text()`` and the fusion tests)."""
    lines = []
    for k in kernels:
        if k.kind == "reduce":
            ops = [[r.params["op"] for r in p] for p in k.passes]
            lines.append(
                f"kernel {k.index}: reduce over axes {k.axes} of {k.shape}: passes {ops}"
                f", {len(k.maps)} map, {len(k.epilogue)} epilogue"
            )
        elif k.kind == "ascan":
            outs = ", ".join(f"t{n.id}" + ("" if n.buf else " (not stored)") for n in k.nodes)
            ep = "; epilogue -> " + ", ".join(f"t{n.id}" for n in k.epilogue) if k.epilogue else ""
            lines.append(f"kernel {k.index}: ascan {k.shape} -> {outs}{ep}")
        else:
            lines.append(
                f"kernel {k.index}: {k.kind} {k.shape} -> "
                + ", ".join(f"t{n.id}" + ("" if n.buf else " (not stored)") for n in k.nodes)
            )
    return "\n".join(lines)


def verify(graph: Graph, kernels) -> None:
    """Check a scheduled graph: ``loopir.verify(graph, kernels)``, then the element expressions
    each kernel builds, in the kernel's context as the renderers build them: stored pointwise
    nodes at the kernel's loop index; a reduction's operands (each pass may read the
    accumulators of earlier passes only), map phase (at the full index) and epilogue (at the
    row index); a scan's epilogue at the scanned position. Indices use only the kernel's loop
    symbols; accumulators name the kernel's own reductions. Raises ``loopir.LoopIRError``."""
    loopir.verify(graph, kernels)

    def check(node, e, allowed, accs=frozenset()):
        if np.dtype(e.dtype) != np.dtype(node.dtype):
            loopir.fail(node, f"in kernel {k.index}: its expression has dtype {e.dtype}")
        loopir.verify_expr(e, node, graph, set(allowed), frozenset(accs))

    for k in kernels:
        if k.kind == "pointwise":
            ivars = loopir.loop_vars(len(k.shape))
            ctx = KernelCtx(k)
            bound: set = set()
            for n in k.nodes:
                if n.fn is None:
                    loopir.fail(n, f"stored by pointwise kernel {k.index} without an expression")
                if n.buf is None and n.id not in k.local_ids:
                    loopir.fail(n, f"in pointwise kernel {k.index} with no buffer")
                e = n.fn(ivars, ctx)
                check(n, e, ivars)
                for name in _syms(e) - bound:
                    loopir.fail(n, f"reads {name}, not a local computed before it")
                if n.id in k.local_ids:
                    bound.add(local_sym(n).name)
        elif k.kind == "reduce":
            rv, full = k.row_vars(), k.full_index()
            ctx = KernelCtx(k, rv)
            done: set = set()
            for p in k.passes:
                for r in p:
                    if r.id not in k.reduction_ids:
                        loopir.fail(r, f"in a pass of kernel {k.index} but not its reductions")
                    op = r.params["operand"]
                    check(op, op.load(full, KernelCtx(k, rv)), full, done)
                done |= {r.id for r in p}
            for m in k.maps:
                check(m, m.fn(full, ctx), full, k.reduction_ids)
            for m in k.epilogue:
                check(m, m.fn(rv, ctx), rv, k.reduction_ids)
        elif k.kind == "ascan":
            full = k.scan_index()
            for m in k.epilogue:
                check(m, m.fn(full, KernelCtx(k, full)), full, k.reduction_ids)


__all__ = [
    "schedule",
    "Kernel",
    "KernelCtx",
    "NotRowAligned",
    "local_sym",
    "describe",
    "verify",
]
