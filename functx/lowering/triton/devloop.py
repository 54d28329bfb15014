"""Device loops: a ``scan`` or ``while_loop`` whose body is small runs as ONE Triton kernel
launch, the loop inside.

``loops.py`` runs a loop on the host, launching the body's kernels every iteration (about 7 us a
step on an H100, whatever the body does; a ``while_loop`` also reads its condition back to the
host). When every value of the body is small (``MAX_ELEMENTS``) and every equation has a rule in
``RULES`` (below), ``render`` writes the whole loop as one kernel of one program instead::

    h0 = tl.load(<carry init> + off0)           # the carries, the constants: loaded once
    for it in range(length):
        i = it  (or length - 1 - it: reverse)
        x0 = tl.load(<xs> + i * size + off1)     # this step's slice of each xs
        ...                                       # the body's equations, on register tensors
        tl.store(<ys> + i * size + off1, y0)     # this step's slice of each ys
        h0 = <new carry>                          # carries stay in registers
    tl.store(<carry out> + off0, h0)

A ``while_loop`` (a ``fori_loop`` with traced bounds is one) is ``while go:`` around the
condition's equations and the body's, keeping the body's carries where the condition held
(``go`` is the condition: the trip that finds it false computes one body whose results are
dropped, and nothing is read back to the host).

Values are Triton register tensors of the value's shape with every axis padded to a power of
two; a padded lane holds anything (``exp`` of a padding zero is 1, a division by one is NaN) and
is kept out of everything that mixes lanes: a reduction reads the operation's identity there, a
product's sum over a contracted axis reads zero, and loads and stores are masked. View rules that
move lanes (transpose, broadcast, inserting or dropping unit axes) move the padding with them.

Rules, by primitive (``RULES``; the lane-wise groups through ``lowering/lower.py``'s
``lanewise_expr`` and the element spellings of ``emit.py``, the same as every other kernel's):

* elementwise, compare, bitwise, ``select_n``, ``convert_element_type``, ``stop_gradient``;
* ``broadcast_in_dim``; ``reshape``/``expand_dims``/``squeeze`` that only insert or drop unit
  axes (the padded layout is unchanged); ``transpose`` (``tl.permute``); ``iota``;
* ``reduce_sum``/``reduce_max``/``reduce_min``/``reduce_prod`` over any axes (``tl.reduce`` with
  the prelude's combines, which keep JAX's NaN rules for max/min; a plain tree sum, no Kahan
  compensation);
* ``dot_general`` of small operands as a broadcast multiply and a sum over the contracted axes:
  float32 products are float32 multiply-adds (no TF32: a tensor-core ``tl.dot`` needs 16x16
  tiles and a layout change per step, and these products are vector-matrix ones), so they are
  more precise than the TF32 products functx and JAX use for larger float32 matrices by default.

Anything else keeps the host loop: a body with another primitive, a value (or a product's
broadcast operand) over ``MAX_ELEMENTS`` padded elements, half-precision values, closed-over
constants. ``render`` then returns the reason, which ``loops.py`` writes next to the host loop in
the generated source (a documented rule, visible in ``as_text()``). ``FUNCTX_DEVICE_LOOPS=0`` turns
device loops off (host loops everywhere), for comparisons (``functx.config.device_loops``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from functx import config, dtypes
from functx.core import Literal
from functx.lowering.loopir import Const, Sym
from functx.lowering.lower import lanewise_expr
from functx.lowering.triton.emit import (
    _HALF,
    Emitter,
    V,
    _literal,
    _next_pow2,
    identity_literal,
    tl_dtype,
)

#: the most elements, every axis padded to a power of two, of any value of a device loop's body
#: (a product's broadcast operands included): the program keeps them all in registers
MAX_ELEMENTS = 4096
#: warps of the one program, by its largest value (``FUNCTX_DEVLOOP_WARPS`` overrides): a step is
#: a chain of dependent reductions, where more warps hold fewer elements each but exchange partial
#: sums through shared memory. HMM EM on an H100 (``benchmarks/gpu_devloop.py``, values of at most
#: 1024 padded elements): 135 ms with 1 warp, 101 ms with 2, 105 ms with 4
WARPS = ((2048, 2), (MAX_ELEMENTS, 4))


class Decline(Exception):
    """Why a loop keeps its host loop (an equation or a value no rule covers)."""


def _pshape(shape) -> list[int]:
    return [_next_pow2(d) for d in shape]


def _expand(code: str, rank: int, at) -> str:
    """``code`` (a tensor of ``len(at)`` axes) with unit axes inserted so that its axes land at
    positions ``at`` of ``rank`` axes."""
    if len(at) == rank:
        return code
    return f"{code}[{', '.join(':' if d in at else 'None' for d in range(rank))}]"


class Body:
    """The kernel under construction: the lines before the loop (``pre``) and inside it
    (``lines``), the values of the body's variables (``env``: variable id -> (code, shape,
    dtype)), and offsets and masks per shape, built once before the loop."""

    def __init__(self):
        self.counter = itertools.count()
        self.pre: list[str] = []
        self.lines: list[str] = []
        self.em = Emitter("        ", self.counter, {}, {})
        self.em.lines = self.lines  # (the emitter's temporaries land in order with ours)
        self.env: dict = {}
        self.invariant: set = set()  # the variables computed before the loop
        self.before: dict = {}  # code -> its name, of the values named before the loop
        self.by_shape: dict = {}
        self.largest = 1

    def name(self, code: str, where=None) -> str:
        n = f"w{next(self.counter)}"
        if where is None:
            self.em.lines.append(f"{self.em.indent}{n} = {code}")
        elif code in self.before:  # (a mask or an offset built already)
            return self.before[code]
        else:
            where.append(f"    {n} = {code}")
            self.before[code] = n
        return n

    def hoist(self, before: bool) -> None:
        """Emit the next equation before the loop (its operands are loop invariants) or in it."""
        self.em.lines, self.em.indent = (self.pre, "    ") if before else (self.lines, "        ")

    def check(self, shape) -> list[int]:
        p = _pshape(shape)
        n = math.prod(p)
        if n > MAX_ELEMENTS:
            raise Decline(f"a value of shape {tuple(shape)} ({n} padded elements > {MAX_ELEMENTS})")
        self.largest = max(self.largest, n)
        return p

    def layout(self, shape) -> tuple[str, str | None]:
        """The flat offsets (row-major) and the mask (None: no padding) of ``shape``."""
        shape = tuple(shape)
        if shape not in self.by_shape:
            p, rank = self.check(shape), len(shape)
            stride = [math.prod(shape[d + 1 :]) for d in range(rank)]
            ar = [_expand(f"tl.arange(0, {p[d]})", rank, [d]) for d in range(rank)]
            off = " + ".join(f"{a} * {s}" for a, s in zip(ar, stride))
            pads = [f"({a} < {d})" for a, d, q in zip(ar, shape, p) if d != q]
            mask = self.name(" & ".join(pads), self.pre) if pads else None
            self.by_shape[shape] = (self.name(off, self.pre) if rank else "0", mask)
        return self.by_shape[shape]

    def axis_mask(self, pshape, axes, sizes) -> str | None:
        """A mask over a tensor of ``pshape`` true where each axis of ``axes`` is below its size
        in ``sizes`` (None: no padding along them)."""
        rank = len(pshape)
        pads = [
            f"({_expand(f'tl.arange(0, {pshape[a]})', rank, [a])} < {n})"
            for a, n in zip(axes, sizes)
            if n != pshape[a]
        ]
        return self.name(" & ".join(pads), self.pre) if pads else None

    # --- values ------------------------------------------------------------------------------
    def read(self, a):
        """(code, shape, dtype) of an equation operand (a literal: a Python literal, shape ())."""
        if type(a) is Literal:
            return (_literal(a.val, a.aval.dtype), (), a.aval.dtype)
        return self.env[a.id]

    def tensor(self, a) -> str:
        """Operand ``a`` as a tensor of its padded shape and dtype (literals become full ones)."""
        code, shape, dt = self.read(a)
        if type(a) is Literal:
            return f"tl.full({_pshape(shape)}, {code}, {tl_dtype(dt)})"
        return code

    def _at(self, buf: str, base: str, shape) -> tuple[str, str | None]:
        """The pointers of a value of ``shape`` at element ``base`` of ``buf``, and its mask."""
        off, mask = self.layout(shape)
        return (f"{buf} + {base} + {off}" if base != "0" else f"{buf} + {off}"), mask

    def load(self, buf: str, base: str, shape, where) -> str:
        ptr, mask = self._at(buf, base, shape)
        m = f", mask={mask}, other=0" if mask else ""
        return self.name(f"tl.load({ptr}{m})", where)

    def store(self, buf: str, base: str, a, shape) -> None:
        ptr, mask = self._at(buf, base, shape)
        m = f", mask={mask}" if mask else ""
        self.lines.append(f"        tl.store({ptr}, {self.tensor(a)}{m})")


# --- the rules: (body, equation) -> the code of the result (a tensor of its padded shape) ------
def _lanewise(b: Body, e) -> str:
    ins = []
    for a in e.invars:
        code, _, dt = b.read(a)
        if type(a) is Literal:
            ins.append(Const(dt, np.asarray(a.val, dt)[()]))
        else:
            b.em.syms[code] = V(code, frozenset(), False, dt)
            ins.append(Sym(dt, code))
    return Emitter.tensor(b.em(lanewise_expr(e, ins)))


def _broadcast(b: Body, e) -> str:
    x = e.invars[0]
    code, shape, dt = b.read(x)
    out = list(e.params["shape"])
    p = b.check(out)
    if type(x) is Literal:
        return f"tl.full({p}, {code}, {tl_dtype(dt)})"
    if not shape:
        return f"tl.broadcast_to({code}, {p})"
    code = _expand(code, len(out), list(e.params["broadcast_dimensions"]))
    return (
        code if _pshape(shape) == p and len(shape) == len(out) else f"tl.broadcast_to({code}, {p})"
    )


def _reshape(b: Body, e) -> str:
    """Reshapes that insert or drop unit axes only (the padded layout is the same)."""
    code, shape, dt = b.read(e.invars[0])
    out = e.outvars[0].aval.shape
    if [d for d in shape if d != 1] != [d for d in out if d != 1]:
        raise Decline(f"a reshape {tuple(shape)} -> {tuple(out)} that moves elements")
    if type(e.invars[0]) is Literal or not shape:
        x = b.tensor(e.invars[0])
        return f"tl.broadcast_to({x}, {_pshape(out)})" if out else x
    if not out:  # (one element: a reduction with no combine step; booleans through int32)
        if np.dtype(dt) == dtypes.bool_:
            return f"(tl.reduce({code}.to(tl.int32), None, _fx_add) != 0)"
        return f"tl.reduce({code}, None, _fx_add)"
    return f"tl.reshape({code}, {_pshape(out)})"


def _transpose(b: Body, e) -> str:
    perm = tuple(e.params["permutation"])
    code = b.tensor(e.invars[0])
    return code if perm == tuple(range(len(perm))) else f"tl.permute({code}, {perm})"


def _iota(b: Body, e) -> str:
    shape, dim, dt = e.params["shape"], e.params["dimension"], e.params["dtype"]
    p = b.check(shape)
    code = _expand(f"tl.arange(0, {p[dim]})", len(shape), [dim])
    if len(shape) > 1:
        code = f"tl.broadcast_to({code}, {p})"
    return f"{code}.to({tl_dtype(dt)})"


_COMBINE = {  # reduction -> (its prelude combine for floats, for integers), identity's name
    "reduce_sum": ("_fx_add", "_fx_add", "reduce_sum"),
    "reduce_prod": ("_fx_mul", "_fx_mul", "reduce_prod"),
    "reduce_max": ("_fx_fmax", "_fx_imax", "reduce_max"),
    "reduce_min": ("_fx_fmin", "_fx_imin", "reduce_min"),
}


def _reduce(b: Body, e) -> str:
    x = e.invars[0]
    code, shape, dt = b.read(x)
    if np.dtype(dt) == dtypes.bool_:
        raise Decline(f"{e.prim.name} of booleans")
    fl, it, op = _COMBINE[e.prim.name]
    axes = sorted(e.params["axes"], reverse=True)
    mask = b.axis_mask(b.check(shape), axes, [shape[a] for a in axes])
    if mask:
        code = b.name(f"tl.where({mask}, {code}, {identity_literal(op, dt)})")
    fn = fl if np.dtype(dt) in dtypes.FLOATS else it
    for a in axes:  # (from the last: the others keep their numbers)
        code = b.name(f"tl.reduce({code}, {a}, {fn})")
    return code


def _dot(b: Body, e) -> str:
    """``dot_general`` as ``sum(lhs' * rhs')`` over the contracted axes, each operand permuted to
    (batch, its free axes, contracted) and given unit axes for the other's free axes."""
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    (_, ls, ldt), (_, rs, rdt) = b.read(e.invars[0]), b.read(e.invars[1])
    dt = e.outvars[0].aval.dtype
    if dtypes.bool_ in (np.dtype(ldt), np.dtype(rdt)):
        raise Decline("a product of booleans")
    lf = [d for d in range(len(ls)) if d not in lc and d not in lb]
    rf = [d for d in range(len(rs)) if d not in rc and d not in rb]
    nb, nl, nr, nc = len(lb), len(lf), len(rf), len(lc)
    full = [ls[d] for d in lb] + [ls[d] for d in lf] + [rs[d] for d in rf] + [ls[d] for d in lc]
    p = b.check(full)
    rank = len(full)

    def operand(a, order, at):
        x = b.tensor(a)
        if tuple(order) != tuple(range(len(order))):
            x = f"tl.permute({x}, {tuple(order)})"
        if np.dtype(a.aval.dtype) != np.dtype(dt):
            x = f"{x}.to({tl_dtype(dt)})"
        if a.id in b.invariant and not x.isidentifier():  # (a constant's: once, before the loop)
            x = b.name(x, b.pre)
        return _expand(x, rank, at)

    batch, cont = list(range(nb)), list(range(nb + nl + nr, rank))
    lhs = operand(e.invars[0], list(lb) + lf + list(lc), batch + list(range(nb, nb + nl)) + cont)
    rhs = operand(
        e.invars[1], list(rb) + rf + list(rc), batch + list(range(nb + nl, rank - nc)) + cont
    )
    prod = b.name(f"{lhs} * {rhs}")  # (of shape p: each axis comes from one side or both)
    if not nc:
        return prod
    mask = b.axis_mask(p, cont, full[nb + nl + nr :])
    if mask:
        prod = b.name(f"tl.where({mask}, {prod}, 0)")
    for a in reversed(cont):
        prod = b.name(f"tl.reduce({prod}, {a}, _fx_add)")
    return prod


_LANEWISE_GROUPS = ("unary", "binary", "compare", "bitwise", "select", "convert")
# the rules by primitive name (the lane-wise groups: ``_lanewise``)
RULES = {
    "stop_gradient": _lanewise,
    "broadcast_in_dim": _broadcast,
    "reshape": _reshape,
    "expand_dims": _reshape,
    "squeeze": _reshape,
    "transpose": _transpose,
    "iota": _iota,
    "dot_general": _dot,
    **{name: _reduce for name in _COMBINE},
}


def _rule(e):
    if e.prim.group in _LANEWISE_GROUPS:
        return _lanewise
    rule = RULES.get(e.prim.name)
    if rule is None:
        raise Decline(f"no device-loop rule for '{e.prim.name}'")
    return rule


# --- the kernels ---------------------------------------------------------------------------------
def _screen(group, jaxprs) -> None:
    """``Decline`` what no rule takes whatever the equations: closed-over constants, half
    precision, empty values, buffers of 2^31 elements or more."""
    for closed in jaxprs:
        if closed.consts or closed.jaxpr.constvars:
            raise Decline("the body closes over constants")
        j = closed.jaxpr
        for v in list(j.invars) + [v for e in j.eqns for v in e.outvars]:
            if np.dtype(v.aval.dtype) in _HALF or 0 in v.aval.shape:
                raise Decline(f"a {np.dtype(v.aval.dtype)}{list(v.aval.shape)} value")
    for n in list(group["ins"]) + list(group["outs"]):
        if n.buf is None or np.dtype(n.dtype) in _HALF or 0 in n.shape or n.size >= 2**31:
            raise Decline(f"a {np.dtype(n.dtype)}{list(n.shape)} operand or result")


def _bind(b: Body, invars, nodes, carries=()) -> None:
    """Load ``nodes`` before the loop as ``invars``; the last ``len(carries)`` are carries,
    bound to those names (rebound each step)."""
    first = len(invars) - len(carries)
    for m, (v, n) in enumerate(zip(invars, nodes)):
        code = b.load(n.buf, "0", v.aval.shape, b.pre)
        if m >= first:
            b.pre.append(f"    {carries[m - first]} = {code}")
            code = carries[m - first]
        else:
            b.invariant.add(v.id)
        b.env[v.id] = (code, v.aval.shape, v.aval.dtype)


def _equations(b: Body, j) -> None:
    """The equations of ``j``, each through its rule: in the loop, or before it when every
    operand is a loop invariant."""
    for e in j.eqns:
        if len(e.outvars) != 1:
            raise Decline(f"'{e.prim.name}' has several results")
        out = e.outvars[0]
        before = all(type(a) is Literal or a.id in b.invariant for a in e.invars)
        b.hoist(before)
        code = _rule(e)(b, e)
        b.check(out.aval.shape)
        b.env[out.id] = (
            code if code.isidentifier() else b.name(code),
            out.aval.shape,
            out.aval.dtype,
        )
        b.hoist(False)
        if before:
            b.invariant.add(out.id)


def _rebind(b: Body, carries, res, flag=None) -> list[str]:
    """The loop's last lines: the new carries ``res`` (with ``flag``: only where it holds) named
    first (a new carry may be an old one), then bound to the carries' names."""
    new = [b.tensor(v) for v in res]
    if flag is not None:
        new = [x if x == h else f"tl.where({flag}, {x}, {h})" for x, h in zip(new, carries)]
    new = [b.name(x) for x in new]
    return [f"        {h} = {x}" for h, x in zip(carries, new)]


def _scan(b: Body, group) -> tuple[str, list[str], list[str]]:
    """A scan: the constants and carries loaded once, each step's xs loaded and ys stored at
    the step's index (reversed for a reverse scan)."""
    j = group["jaxpr"].jaxpr
    ins, outs = group["ins"], group["outs"]
    nc, nk, length = group["num_consts"], group["num_carry"], group["length"]
    carries = [f"h{m}" for m in range(nk)]
    _bind(b, j.invars[: nc + nk], ins[: nc + nk], carries)
    i = f"({length - 1} - it)" if group["reverse"] else "it"
    for v, n in zip(j.invars[nc + nk :], ins[nc + nk :]):
        base = f"{i} * {math.prod(v.aval.shape)}"
        code = b.load(n.buf, base, v.aval.shape, None)
        b.env[v.id] = (code, v.aval.shape, v.aval.dtype)
    _equations(b, j)
    for v, n in zip(j.outvars[nk:], outs[nk:]):
        b.store(n.buf, f"{i} * {math.prod(n.shape[1:])}", v, n.shape[1:])
    b.lines += _rebind(b, carries, j.outvars[:nk])
    what = f"scan of length {length}{' (reverse)' if group['reverse'] else ''}"
    return what, [f"    for it in range({length}):"], carries


def _while(b: Body, group) -> tuple[str, list[str], list[str]]:
    """A while loop: each trip evaluates the condition, then the body, and keeps the body's
    carries only where the condition held (the trip that finds it false computes one body
    whose results are dropped: the condition is never read back to the host)."""
    cj, bj = group["cond_jaxpr"].jaxpr, group["body_jaxpr"].jaxpr
    ncc, nbc = group["cond_nconsts"], group["body_nconsts"]
    ins = group["ins"]
    carries = [f"h{m}" for m in range(len(ins) - ncc - nbc)]
    _bind(b, cj.invars[:ncc], ins[:ncc])
    _bind(b, bj.invars, ins[ncc:], carries)
    for v, w in zip(cj.invars[ncc:], bj.invars[nbc:]):  # (the condition reads the carries)
        b.env[v.id] = b.env[w.id]
    _equations(b, cj)
    flag = b.name(b.tensor(cj.outvars[0]))
    _equations(b, bj)
    b.lines += _rebind(b, carries, bj.outvars, flag) + [f"        go = {flag}"]
    b.pre.append("    go = tl.full([], 1, tl.int1)")
    return "while_loop", ["    while go:"], carries


KINDS = {"scan": (_scan, "jaxpr"), "while": (_while, "cond_jaxpr", "body_jaxpr")}


def render(prog, k, group) -> str | None:
    """Kernel ``k`` (a scan or a while loop: ``group``) as one device-loop kernel launch added
    to ``prog``; returns None, or the reason it keeps its host loop (``loops.py`` writes it)."""
    if not config.device_loops():
        return "device loops are off (FUNCTX_DEVICE_LOOPS=0)"
    kind, *bodies = KINDS[group["type"]]
    b = Body()
    try:
        _screen(group, [group[x] for x in bodies])
        what, head, carries = kind(b, group)
    except Decline as why:
        return str(why)
    body = b.pre + head + (b.lines or ["        pass"])
    for h, n in zip(carries, group["outs"]):
        off, mask = b.layout(n.shape)
        body.append(f"    tl.store({n.buf} + {off}, {h}{f', mask={mask}' if mask else ''})")
    bufs = list(dict.fromkeys([n.buf for n in group["ins"]] + [n.buf for n in group["outs"]]))
    warps = config.devloop_warps() or next(w for limit, w in WARPS if b.largest <= limit)
    name = prog._kname(k, "devloop")
    prog._define(name, bufs, body, f"{what} as one device loop")
    prog._launch(name, 1, bufs, warps)
    return None
