"""Triton element code: Triton dtypes, literals, the index printer, the spellings of element
operations (read from the rows of ``functx.primitives.elementwise`` by ``render_row``), and the
``Emitter`` that prints element expressions (``E`` trees of ``loopir.py``) as Triton values with
their block dependencies."""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from functx import dtypes
from functx.errors import UnsupportedError
from functx.lowering.common import IndexPrinter, decompose
from functx.lowering.intexpr import ix
from functx.lowering.loopir import (
    Acc,
    Const,
    E,
    Idx,
    Load,
    Op,
    Sym,
)
from functx.primitives.elementwise import ROW, Unsupported
from functx.primitives.reduce import highest, identity, lowest

# --- dtypes --------------------------------------------------------------------------------------
_TL = {
    dtypes.bool_: "tl.int1",
    dtypes.int8: "tl.int8",
    dtypes.int16: "tl.int16",
    dtypes.int32: "tl.int32",
    dtypes.int64: "tl.int64",
    dtypes.uint8: "tl.uint8",
    dtypes.uint16: "tl.uint16",
    dtypes.uint32: "tl.uint32",
    dtypes.uint64: "tl.uint64",
    dtypes.float16: "tl.float16",
    dtypes.bfloat16: "tl.bfloat16",
    dtypes.float32: "tl.float32",
    dtypes.float64: "tl.float64",
}


_HALF = (dtypes.float16, dtypes.bfloat16)


def tl_dtype(dt) -> str:
    """The Triton type of stored elements of ``dt``."""
    try:
        return _TL[np.dtype(dt)]
    except KeyError:
        raise UnsupportedError(f"jit (Triton): no Triton type for {np.dtype(dt)}") from None


def tl_compute(dt) -> str:
    """The Triton type element expressions of ``dt`` are computed in (halves compute in f32)."""
    return "tl.float32" if np.dtype(dt) in _HALF else tl_dtype(dt)


def _is_float(dt) -> bool:
    return np.dtype(dt) in dtypes.FLOATS


def _is_signed(dt) -> bool:
    return np.dtype(dt).kind == "i"


def _next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


# --- literals ------------------------------------------------------------------------------------
def _literal(v, dt) -> str:
    """Python source for a constant; Triton types it from the tensor it meets."""
    dt = np.dtype(dt)
    if dt == dtypes.bool_:
        return "True" if bool(v) else "False"
    if _is_float(dt):
        f = float(v)
        if math.isnan(f):
            return "float('nan')"
        if math.isinf(f):
            return "float('inf')" if f > 0 else "-float('inf')"
        return repr(f)
    return str(int(v))


def _typed(code: str, dt) -> str:
    return f"tl.full([], {code}, {tl_compute(dt)})"


def _py_value(v) -> str:
    """A reduction-table value (``functx.primitives.reduce``) as a Triton literal."""
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, float) and math.isinf(v):
        return "float('inf')" if v > 0 else "-float('inf')"
    return str(int(v))


def _lowest(dt) -> str:
    return _py_value(lowest(dt))


def _highest(dt) -> str:
    return _py_value(highest(dt))


def identity_literal(op: str, dt) -> str:
    """The Triton literal of reduction ``op``'s identity for operands of ``dt`` (bools as 0/1:
    they accumulate in int32)."""
    v = identity(op, dt)
    if np.dtype(dt) == dtypes.bool_:
        return "1" if v else "0"
    return _py_value(v)


# --- index expressions ---------------------------------------------------------------------------
class _SympyPy(IndexPrinter):
    """Print index expressions as Triton integer arithmetic (all values are non-negative,
    so Triton's truncating ``//`` and ``%`` are floor division and modulo)."""

    div = "//"
    what = "jit (Triton)"

    def __init__(self, names: dict, known: dict):
        self.names = names  # symbol name -> variable name in the kernel
        self.known = known  # expanded expression -> variable name (flat offsets)

    def lookup(self, e) -> str | None:
        return self.known.get(e)

    def symbol(self, name: str) -> str:
        return self.names.get(name, name)

    def extremum(self, is_max: bool, args: list) -> str:
        fn = "tl.maximum" if is_max else "tl.minimum"
        # a literal first argument is fine as long as one is a tensor; keep tensors first
        args.sort(key=lambda s: s.lstrip("-").isdigit())
        out = args[0]
        for a in args[1:]:
            out = f"{fn}({out}, {a})"
        return out


def _decompose(names, shape, flat: str) -> list[str]:
    """Statements binding ``names`` to the multi-index of ``flat`` in ``shape``."""
    return [f"{v} = {x}" for v, x in zip(names, decompose(shape, flat, "//", str))]


# --- element expressions -------------------------------------------------------------------------
class V(NamedTuple):
    """A printed value: its code, the block axes it varies along, whether it is a bare Python
    literal (weakly typed by Triton), and its IR dtype."""

    code: str
    deps: frozenset
    lit: bool
    dtype: object


_NO = frozenset()


# loop-IR operations that are no primitive row, whose half-precision results are exact
_EXACT_IN_HALF = {"select", "convert", "clamp", "bitcast"}


class OpView:
    """What a row's Triton spelling sees of one element operation
    (``functx.primitives.elementwise``): the operands as printed ``a`` (literals may stay bare next
    to a tensor) and as typed tensors ``t``, the compute type ``ct``, the operand and result
    dtypes, ``fl``/``signed`` of the operand dtype and the op's parameters."""

    __slots__ = ("em", "a", "t", "ct", "in_dt", "dt", "fl", "signed", "params")

    def __init__(self, em, a, t, ct, in_dt, dt, fl, params):
        self.em, self.a, self.t, self.ct, self.in_dt, self.dt = em, a, t, ct, in_dt, dt
        self.fl, self.signed, self.params = fl, _is_signed(in_dt), params

    def temp(self, code: str) -> str:
        return self.em.temp(code)

    def ipow(self, x: str, y: int, dt) -> str:
        return self.em._ipow(x, y, dt)

    @staticmethod
    def highest(dt) -> str:
        return _highest(dt)

    @staticmethod
    def unsupported(msg: str):
        raise UnsupportedError(f"jit (Triton): {msg}")


def render_row(name: str, v: OpView) -> str:
    """The Triton of elementwise op ``name`` from its row: a function name (``libdevice.erf``)
    called on the typed operands, a template (``{0}``/``{1}``: operands, ``{t0}``/``{t1}``: typed
    operands, ``{ct}``: compute type) or a callable of ``v``."""
    row = ROW.get(name)
    spelling = None if row is None else row.triton
    if spelling is None or isinstance(spelling, Unsupported):
        why = "" if spelling is None else f": {spelling.reason}"
        raise UnsupportedError(f"jit (Triton): no Triton for elementwise op '{name}'{why}")
    if callable(spelling):
        return spelling(v)
    if "{" in spelling:
        typed = {f"t{i}": x for i, x in enumerate(v.t)}
        return spelling.format(*v.a, ct=v.ct, **typed)
    return f"{spelling}({', '.join(v.t)})"


class Emitter:
    """Emits Triton statements computing element expressions, sharing repeated subexpressions.

    ``tags`` maps index symbol names to the block axis they vary along; ``masks`` maps a set of
    axes to the mask variable of those axes; ``counter`` is shared by all emitters of a kernel so
    that temporaries never reuse a name (Triton treats a reassigned name as loop-carried)."""

    def __init__(
        self,
        indent: str,
        counter,
        tags: dict,
        masks: dict,
        known: dict | None = None,
        names: dict | None = None,
    ):
        self.indent = indent
        self.counter = counter
        self.tags = tags
        self.masks = masks
        self.lines: list[str] = []
        self.memo: dict[int, V] = {}
        self.smemo: dict = {}  # structural key -> V
        self._ids: dict = {}  # id(expression) -> structural key
        self._intern: dict = {}
        self._alive: list = []
        self.keep: list = []
        self.acc: dict = {}  # (node id, which) -> V
        self.syms: dict = {}  # Sym name -> V
        self.bufs: dict = {}  # buffers read (ordered)
        self.keep_in_cache: set = set()  # buffers to load with evict_last
        self.kept = False  # whether a load did
        self.ix = _SympyPy(names or {}, known or {})

    # -- helpers --
    def temp(self, code: str) -> str:
        name = f"v{next(self.counter)}"
        self.lines.append(f"{self.indent}{name} = {code}")
        return name

    def mask_of(self, deps) -> str | None:
        deps = frozenset(deps)
        if not deps:
            return None
        return self.masks[deps]

    def index(self, e) -> V:
        e = ix(e)
        deps = frozenset(self.tags[s.name] for s in e.free_symbols)
        code = self.ix(e)
        return V(code, deps, e.is_Integer, dtypes.int64)

    @staticmethod
    def tensor(v: V) -> str:
        """``v`` as a Triton value of its own dtype (never a weakly typed literal)."""
        return _typed(v.code, v.dtype) if v.lit else v.code

    def __call__(self, e) -> V:
        hit = self.memo.get(id(e))
        if hit is not None:
            return hit
        # equal expressions built separately (a map phase rebuilding a pass's operand, a load
        # of the same element) share one value: one load, one exp
        try:
            key = self._skey(e)
        except TypeError:  # an unhashable parameter somewhere in the tree
            key = None
        hit = self.smemo.get(key) if key is not None else None
        if hit is None:
            hit = self._emit(e)
            if not hit.lit and not isinstance(e, (Acc, Sym)) and not _is_name(hit.code):
                hit = V(self.temp(hit.code), hit.deps, False, hit.dtype)
            if key is not None:
                self.smemo[key] = hit
        self.memo[id(e)] = hit
        self.keep.append(e)
        return hit

    def _skey(self, e) -> int:
        """A structural key of ``e`` (interned: equal trees get equal small integers). Constants
        are keyed by their bytes, so that -0.0 and 0.0 stay apart."""
        k = self._ids.get(id(e))
        if k is not None:
            return k
        if isinstance(e, Const):
            v = np.asarray(e.value)
            t = ("C", np.dtype(e.dtype).str, v.dtype.str, v.tobytes())
        elif isinstance(e, Idx):
            t = ("I", e.expr)
        elif isinstance(e, Load):
            off = e.offset
            t = ("L", np.dtype(e.dtype).str, e.buf, self._skey(off) if isinstance(off, E) else off)
        elif isinstance(e, Op):
            t = (
                "O",
                np.dtype(e.dtype).str,
                e.name,
                tuple(self._skey(a) if isinstance(a, E) else a for a in e.args),
            )
        elif isinstance(e, Acc):
            t = ("A", e.node, e.which)
        elif isinstance(e, Sym):
            t = ("S", e.name)
        else:
            t = ("X", id(e))
        k = self._intern.setdefault(t, len(self._intern))
        self._ids[id(e)] = k
        self._alive.append(e)  # ids stay valid while the emitter lives
        return k

    def flush(self) -> list[str]:
        """The statements emitted since the last flush (values stay available)."""
        out, self.lines = self.lines, []
        return out

    def offset(self, off) -> V:
        if isinstance(off, (Const, Idx, Op, Load)):
            return self(off)
        return self.index(off)

    # -- expressions --
    def _emit(self, e) -> V:
        if isinstance(e, Const):
            return V(_literal(e.value, e.dtype), _NO, True, e.dtype)
        if isinstance(e, Idx):
            return self.index(e.expr)
        if isinstance(e, Acc):
            return self.acc[(e.node, e.which)]
        if isinstance(e, Sym):
            return self.syms[e.name]
        if isinstance(e, Load):
            off = self.offset(e.offset)
            self.bufs[e.buf] = None
            m = self.mask_of(off.deps)
            ptr = f"{e.buf} + {off.code}"
            hint = ""
            if e.buf in self.keep_in_cache:
                hint = ', eviction_policy="evict_last"'
                self.kept = True
            raw = f"tl.load({ptr}, mask={m}, other=0{hint})" if m else f"tl.load({ptr}{hint})"
            if np.dtype(e.dtype) in _HALF:
                raw = f"{raw}.to(tl.float32)"
            return V(raw, off.deps, False, e.dtype)
        if isinstance(e, Op):
            return self._op(e)
        raise TypeError(e)

    def _op(self, e: Op) -> V:
        name = e.name
        params = dict(a for a in e.args if isinstance(a, tuple))
        args = [a for a in e.args if not isinstance(a, tuple)]
        vs = [self(x) for x in args]
        deps = frozenset().union(*[v.deps for v in vs]) if vs else _NO
        dt = np.dtype(e.dtype)
        in_dt = np.dtype(args[0].dtype) if args else dt
        fl = _is_float(in_dt)
        # operands: literals may stay literals next to a tensor operand (Triton types them from
        # it); an operation of literals only, or a function call, gets typed constants
        if vs and all(v.lit for v in vs):
            a = [self.tensor(v) for v in vs]
        else:
            a = [v.code for v in vs]
        t = [self.tensor(v) for v in vs]
        ct = tl_compute(dt)
        # halves compute in float32 but round every result to their own precision (as JAX
        # and the C++ backend do), except where the result is exact anyway
        row = ROW.get(name)
        exact = name in _EXACT_IN_HALF or (row is not None and row.exact_in_half)
        rounds = dt in _HALF and not exact

        def out(code):
            if rounds:
                code = f"({code}).to({tl_dtype(dt)}).to(tl.float32)"
            return V(code, deps, False, dt)

        if name == "select":
            c = t[0]
            if vs[1].lit and vs[2].lit:
                return out(f"tl.where({c}, {t[1]}, {t[2]})")
            return out(f"tl.where({c}, {vs[1].code}, {vs[2].code})")
        if name == "convert":
            return out(self._convert(t[0], in_dt, dt))
        if name == "clamp":
            return out(f"tl.minimum(tl.maximum({t[0]}, {a[1]}), {a[2]})")
        if name == "bitcast":  # same widths; halves are held as float32
            x = f"{t[0]}.to({tl_dtype(in_dt)})" if in_dt in _HALF else t[0]
            x = f"{x}.to({tl_dtype(dt)}, bitcast=True)"
            return out(f"{x}.to(tl.float32)" if dt in _HALF else x)
        return out(render_row(name, OpView(self, a, t, ct, in_dt, dt, fl, params)))

    def _ipow(self, x: str, y: int, dt) -> str:
        if y == 0:
            return _typed("1", dt)
        n = abs(y)
        acc, base = None, x
        while n:
            if n & 1:
                acc = base if acc is None else self.temp(f"{acc} * {base}")
            n >>= 1
            if n:
                base = self.temp(f"{base} * {base}")
        return f"(1.0 / {acc})" if y < 0 else acc

    @staticmethod
    def _convert(x: str, src, to) -> str:
        src, to = np.dtype(src), np.dtype(to)
        if to == dtypes.bool_:
            return f"({x} != 0)"
        if _is_float(src) and not _is_float(to):
            # saturating, NaN -> 0, as JAX (and the C++ backend) convert
            lo, hi = np.iinfo(to).min, np.iinfo(to).max
            lo_f, hi_f = repr(float(lo)), repr(float(hi))
            safe = f"tl.where(({x} > {lo_f}) & ({x} < {hi_f}), {x}, 0.0).to({tl_dtype(to)})"
            return (
                f"tl.where({x} != {x}, 0, tl.where({x} <= {lo_f}, {lo}, "
                f"tl.where({x} >= {hi_f}, {hi}, {safe})))"
            )
        if to in _HALF:
            # round through the storage type so values match the stored precision (from float64
            # through float32, as the C++ backend does)
            if src == dtypes.float64 or not _is_float(src):
                x = f"{x}.to(tl.float32)"
            return f"{x}.to({tl_dtype(to)}).to(tl.float32)"
        return f"{x}.to({tl_compute(to)})"


def _is_name(code: str) -> bool:
    return code.isidentifier()
