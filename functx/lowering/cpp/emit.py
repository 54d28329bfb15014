"""C++ element code: storage and compute types, number literals, the index printer (``_ic``), the C
spellings of element operations (read from the rows of ``functx.primitives.elementwise`` by
``render_row``) and the ``Emitter`` that prints element expressions (``E`` trees of ``loopir.py``)
as C statements, plus the small helpers every kernel kind uses (stores, the parallel threshold,
index decomposition)."""

from __future__ import annotations

import math

import numpy as np

from functx import dtypes
from functx.errors import UnsupportedError
from functx.lowering.common import IndexPrinter, decompose
from functx.lowering.intexpr import add, ix
from functx.lowering.loopir import Acc, Const, Idx, Load, Op, Sym
from functx.primitives.elementwise import ROW, Unsupported

_STORAGE = {
    dtypes.bool_: "bool",
    dtypes.int8: "int8_t",
    dtypes.int16: "int16_t",
    dtypes.int32: "int32_t",
    dtypes.int64: "int64_t",
    dtypes.uint8: "uint8_t",
    dtypes.uint16: "uint16_t",
    dtypes.uint32: "uint32_t",
    dtypes.uint64: "uint64_t",
    dtypes.float16: "_Float16",
    dtypes.bfloat16: "uint16_t",
    dtypes.float32: "float",
    dtypes.float64: "double",
    dtypes.complex64: "fx::c64",
    dtypes.complex128: "fx::c128",
    # narrow dtypes: one byte (ml_dtypes' layout), decoded on load and encoded on store
    **{d: "uint8_t" for d in dtypes.NARROW},
}
_NARROW_COMPUTE = {
    **{d: "int8_t" if d in dtypes.SIGNED else "uint8_t" for d in dtypes.NARROW_INTS},
    **{d: "float" for d in dtypes.NARROW_FLOATS},
}


def storage_type(dt) -> str:
    dt = np.dtype(dt)
    if dt == dtypes.float8_e8m0fnu:
        # (XLA computes it in float32 with subnormals flushed, its smallest value among them)
        raise UnsupportedError("jit: float8_e8m0fnu is not supported by the C++ backend")
    return _STORAGE[dt]


def compute_type(dt) -> str:
    dt = np.dtype(dt)
    if dt in (dtypes.float16, dtypes.bfloat16):
        return "float"
    return _NARROW_COMPUTE.get(dt) or _STORAGE[dt]


def _narrow_round(code: str, dt) -> str:
    """A value computed for a narrow dtype, rounded (floats: through float16 as XLA's CPU
    computes float8, float32 only for float8_e8m0fnu) or wrapped (integers) to it, and back in
    the compute type; None for other dtypes."""
    if dt in dtypes.NARROW_INTS:
        return f"fx_wrap_{dt.name}({code})"
    if dt in dtypes.NARROW_FLOATS:
        half = code if dt == dtypes.float8_e8m0fnu else f"(float)(_Float16)({code})"
        return f"fx_{dt.name}_to_f32(fx_f32_to_{dt.name}({half}))"
    return None


def _is_float(dt) -> bool:
    return np.dtype(dt) in dtypes.FLOATS


def _num(v, dt) -> str:
    dt = np.dtype(dt)
    ct = compute_type(dt)
    if dt in dtypes.COMPLEX:
        part = dtypes.REAL_OF[dt]
        v = complex(v)
        return f"fx::complex({_num(v.real, part)}, {_num(v.imag, part)})"
    if dt == dtypes.bool_:
        return "true" if bool(v) else "false"
    if _is_float(dt):
        f = float(v)
        if math.isnan(f):
            return f"fx::limits<{ct}>::quiet_NaN()"
        if math.isinf(f):
            return f"({'-' if f < 0 else ''}fx::limits<{ct}>::infinity())"
        return f"(({ct}){f!r})"
    i = int(v)
    if dt == dtypes.int64 and i == -(2**63):
        return "fx::limits<int64_t>::lowest()"
    return f"(({ct}){i}{'ULL' if dt.kind == 'u' else 'LL'})"


class _SympyC(IndexPrinter):
    """Print index expressions as C integer arithmetic (``int64_t``)."""

    def integer(self, v: int) -> str:
        return f"{v}LL"

    def extremum(self, is_max: bool, args: list) -> str:
        out = args[0]
        for a in args[1:]:
            out = f"{'fx_imax' if is_max else 'fx_imin'}({out}, {a})"
        return out


_ic = _SympyC()


class OpView:
    """What a row's C++ spelling sees of one element operation (``functx.primitives.elementwise``):
    the printed operands ``a``, the compute type ``ct``, the operand and result dtypes, whether the
    operand is a float (``fl``) and the op's parameters."""

    __slots__ = ("em", "a", "ct", "in_dt", "dt", "fl", "params")

    def __init__(self, em, a, ct, in_dt, dt, fl, params):
        self.em, self.a, self.ct, self.in_dt, self.dt, self.fl = em, a, ct, in_dt, dt, fl
        self.params = params

    def ipow(self, x: str, y: int, ct: str) -> str:
        return self.em._ipow(x, y, ct)

    @staticmethod
    def unsupported(msg: str):
        raise UnsupportedError(f"jit: {msg}")


def render_row(name: str, v: OpView) -> str:
    """The C++ of elementwise op ``name`` from its row: a function name called on the operands, a
    template (``{0}``, ``{1}``: operands, ``{ct}``: compute type) or a callable of ``v``."""
    row = ROW.get(name)
    spelling = None if row is None else row.cpp
    if spelling is None or isinstance(spelling, Unsupported):
        why = "" if spelling is None else f": {spelling.reason}"
        raise UnsupportedError(f"jit: no C++ for elementwise op '{name}'{why}")
    if callable(spelling):
        return spelling(v)
    if "{" in spelling:
        return spelling.format(*v.a, ct=v.ct)
    return f"{spelling}({', '.join(v.a)})"


class Emitter:
    """Emits statements computing element expressions, sharing repeated subexpressions."""

    def __init__(self, indent: str, prefix: str = "v"):
        self.indent = indent
        self.prefix = prefix
        self.lines: list[str] = []
        self.by_id: dict[int, str] = {}
        self.keep: list = []
        self.counter = 0
        self.acc_names: dict = {}
        self.syms: dict = {}  # Sym name -> the C it reads (a kernel's locals); else the name
        # Loop-invariant hoisting: subexpressions that do not involve ``inner`` (the innermost
        # loop's index symbols) are emitted by ``outer``, before the loop.
        self.outer: Emitter | None = None
        self.inner: frozenset = frozenset()
        self._dep: dict[int, bool] = {}

    def hoisting(self, outer: Emitter, inner_syms) -> Emitter:
        self.outer = outer
        outer.acc_names = self.acc_names
        self.inner = frozenset(inner_syms)
        return self

    def _depends(self, e) -> bool:
        hit = self._dep.get(id(e))
        if hit is not None:
            return hit
        stack = [(e, False)]  # (an explicit stack: expressions may be deep)
        while stack:
            x, ready = stack.pop()
            if id(x) in self._dep:
                continue
            kids = _operands(x)
            if not ready and kids:
                stack.append((x, True))
                stack.extend((k, False) for k in kids if id(k) not in self._dep)
                continue
            if isinstance(x, (Const, Acc)):
                out = False
            elif isinstance(x, Sym):
                out = True
            elif isinstance(x, Idx):
                out = bool(ix(x.expr).free_symbols & self.inner)
            elif isinstance(x, Load) and not kids:
                out = bool(ix(x.offset).free_symbols & self.inner)
            else:
                out = any(self._dep[id(k)] for k in kids)
            self._dep[id(x)] = out
        return self._dep[id(e)]

    def temp(self, ctype: str, code: str) -> str:
        name = f"{self.prefix}{self.counter}"
        self.counter += 1
        self.lines.append(f"{self.indent}const {ctype} {name} = {code};")
        return name

    def __call__(self, e) -> str:
        hit = self.by_id.get(id(e))
        if hit is not None:
            return hit
        # operands first, from an explicit stack in the order a recursive walk would take them
        # (left to right, depth first), so that deep expressions need no deep Python recursion
        stack = [(e, False)]
        while stack:
            x, ready = stack.pop()
            if id(x) in self.by_id:
                continue
            if (
                ready
                or self.outer is not None
                and not isinstance(x, (Const, Acc))
                and not self._depends(x)
            ):
                self._one(x)  # (what the outer emitter takes, it walks itself)
                continue
            kids = _operands(x)
            stack.append((x, True))
            stack.extend((k, False) for k in reversed(kids) if id(k) not in self.by_id)
        return self.by_id[id(e)]

    def _one(self, e) -> str:
        """Emit ``e``, whose operands are emitted already."""
        if self.outer is not None and not isinstance(e, (Const, Acc)) and not self._depends(e):
            out = self.outer(e)
            self.by_id[id(e)] = out
            self.keep.append(e)
            return out
        code = self._emit(e)
        if isinstance(e, (Const, Acc, Sym)) or (isinstance(e, Idx) and ix(e.expr).is_Atom):
            out = code
        else:
            out = self.temp(compute_type(e.dtype), code)
        self.by_id[id(e)] = out
        self.keep.append(e)
        return out

    def offset(self, off) -> str:
        if isinstance(off, (Const, Idx, Op, Load)):
            return self(off)
        off = ix(off)
        if self.outer is not None and off.is_Add:
            # the terms that do not vary in the inner loop are computed once, before it: an
            # address the compiler sees as base + affine(i) becomes a contiguous vector load
            # (a clamp such as max(0, i - 1) in the address otherwise makes it a gather)
            inv = [t for t in off.args if not t.free_symbols & self.inner]
            var = [t for t in off.args if t.free_symbols & self.inner]
            if var and any(not t.is_Number for t in inv):
                return f"({_ic(add(*var))} + {self.outer.index_temp(add(*inv))})"
        return _ic(off)

    def index_temp(self, e) -> str:
        key = ("index", e)
        hit = self.by_id.get(key)
        if hit is None:
            hit = self.by_id[key] = self.temp("int64_t", _ic(e))
        return hit

    def _emit(self, e) -> str:
        if isinstance(e, Const):
            return _num(e.value, e.dtype)
        if isinstance(e, Idx):
            return f"((int64_t){_ic(e.expr)})"
        if isinstance(e, Acc):
            return self.acc_names[(e.node, e.which)]
        if isinstance(e, Sym):
            return self.syms.get(e.name, e.name)
        if isinstance(e, Load):
            raw = f"{e.buf}[{self.offset(e.offset)}]"
            dt = np.dtype(e.dtype)
            if dt == dtypes.bfloat16:
                return f"fx_bf16_to_f32({raw})"
            if dt == dtypes.float16:
                return f"((float){raw})"
            if dt in dtypes.NARROW_INTS:
                return f"fx_wrap_{dt.name}({raw})"
            if dt in dtypes.NARROW_FLOATS:
                return f"fx_{dt.name}_to_f32({raw})"
            return raw
        if isinstance(e, Op):
            code = self._op(e)
            dt = np.dtype(e.dtype)
            if e.name not in _EXACT and dt == dtypes.bfloat16:
                return f"fx_bf16_to_f32(fx_f32_to_bf16({code}))"
            if e.name not in _EXACT and dt == dtypes.float16:
                return f"((float)(_Float16)({code}))"
            if e.name not in _EXACT and dt in dtypes.NARROW_SET:
                return _narrow_round(code, dt)
            return code
        raise TypeError(e)

    def _op(self, e: Op) -> str:
        name = e.name
        params = dict(a for a in e.args if isinstance(a, tuple))
        args = [a for a in e.args if not isinstance(a, tuple)]
        a = [self(x) for x in args]
        ct = compute_type(e.dtype)
        in_dt = np.dtype(args[0].dtype) if args else np.dtype(e.dtype)
        in_ct = compute_type(in_dt)
        fl = _is_float(in_dt) or in_dt in dtypes.COMPLEX  # (complex: the float spellings)
        if name == "select":
            return f"({a[0]} ? {a[1]} : {a[2]})"
        if name == "convert":
            to = np.dtype(e.dtype)
            src = in_ct
            if to in (dtypes.float16, dtypes.bfloat16):
                # round through the storage type so values match the stored precision
                if to == dtypes.float16:
                    return f"((float)(_Float16)fx_convert<float, {src}>({a[0]}))"
                return f"fx_bf16_to_f32(fx_f32_to_bf16(fx_convert<float, {src}>({a[0]})))"
            if to in dtypes.NARROW_FLOATS:  # directly from float32, as XLA converts
                return f"fx_{to.name}_to_f32(fx_f32_to_{to.name}(fx_convert<float, {src}>({a[0]})))"
            if to in dtypes.NARROW_INTS:
                if fl:  # saturated to the narrow range, NaN to 0 (as XLA converts)
                    info = dtypes.iinfo(to)
                    v = f"fx_convert<int32_t, {src}>({a[0]})"
                    return f"(({ct})fx_clamp({v}, (int32_t){info.min}, (int32_t){info.max}))"
                return f"fx_wrap_{to.name}((int)({a[0]}))"  # integers wrap (their low bits)
            return f"fx_convert<{ct}, {src}>({a[0]})"
        if name == "clamp":
            return f"fx_clamp({a[0]}, {a[1]}, {a[2]})"
        if name == "logistic" and in_dt in dtypes.NARROW_FLOATS:
            # XLA's expansion, 1 / (1 + exp(-x)), each step rounded to the narrow dtype
            e = _narrow_round(f"fx_exp<float>({_narrow_round(f'-{a[0]}', in_dt)})", in_dt)
            return f"(1.0f / {_narrow_round(f'1.0f + {e}', in_dt)})"
        if name == "exp2" and in_dt in dtypes.NARROW_FLOATS:
            # JAX's exp(log(2) * x), log(2) and the product rounded to the narrow dtype
            ln2 = float(np.asarray(np.log(2), np.float32).astype(in_dt).astype(np.float32))
            return f"fx_exp<float>({_narrow_round(f'{ln2!r}f * {a[0]}', in_dt)})"
        if name == "bitcast":
            if in_dt in dtypes.NARROW_SET or np.dtype(e.dtype) in dtypes.NARROW_SET:
                # (narrow values are held decoded, so their bits are not at hand)
                raise UnsupportedError(
                    f"jit: bitcast_convert_type between {in_dt} and {np.dtype(e.dtype)} is not "
                    "supported by the C++ backend"
                )
            return _bitcast(a[0], in_dt, np.dtype(e.dtype))
        return render_row(name, OpView(self, a, ct, in_dt, np.dtype(e.dtype), fl, params))

    def _ipow(self, x: str, y: int, ct: str) -> str:
        if y == 0:
            return f"(({ct})1)"
        n = abs(y)
        acc, base = None, x
        while n:
            if n & 1:
                acc = base if acc is None else self.temp(ct, f"{acc} * {base}")
            n >>= 1
            if n:
                base = self.temp(ct, f"{base} * {base}")
        return f"(({ct})1 / {acc})" if y < 0 else acc


# element ops whose half-precision results are already rounded to the stored type
_EXACT = ("convert", "bitcast")


def _bitcast(x: str, src, to) -> str:
    """The same bits as ``to`` (same widths; halves are held as float: bfloat16 exactly in a
    float's top half)."""
    if src == dtypes.bfloat16:
        x = f"(uint16_t)(fx_f2bits({x}) >> 16)"
    elif src == dtypes.float16:
        x = f"(_Float16)({x})"
    else:
        x = f"({storage_type(src)})({x})"
    if to == dtypes.bfloat16:
        return f"fx_bf16_to_f32(__builtin_bit_cast(uint16_t, {x}))"
    if to == dtypes.float16:
        return f"((float)__builtin_bit_cast(_Float16, {x}))"
    return f"__builtin_bit_cast({storage_type(to)}, {x})"


def _operands(e) -> list:
    """The expressions ``e`` reads directly (its operands, or a data-dependent load offset)."""
    if isinstance(e, Op):
        return [a for a in e.args if not isinstance(a, tuple)]
    if isinstance(e, Load) and isinstance(e.offset, (Const, Idx, Op, Load)):
        return [e.offset]
    return []


def _store(buf: str, off: str, val: str, dt) -> str:
    dt = np.dtype(dt)
    if dt == dtypes.bfloat16:
        return f"{buf}[{off}] = fx_f32_to_bf16({val});"
    if dt == dtypes.float16:
        return f"{buf}[{off}] = (_Float16)({val});"
    if dt in dtypes.NARROW_INTS:
        return f"{buf}[{off}] = (uint8_t)(({val}) & {(1 << dtypes.iinfo(dt).bits) - 1});"
    if dt in dtypes.NARROW_FLOATS:
        return f"{buf}[{off}] = fx_f32_to_{dt.name}({val});"
    return f"{buf}[{off}] = {val};"


_PAR = 1 << 15  # parallelise loops of at least this many elements


# float32 sums over more elements than this are cascaded (see _cascade_split)
_SUM_BLOCK = 128


def _decompose(vars_, shape, flat_name):
    """Statements binding ``vars_`` to the multi-index of ``flat_name`` in ``shape``."""
    exprs = decompose(shape, flat_name, "/", _ic.integer)
    return [f"const int64_t {v} = {x};" for v, x in zip(vars_, exprs)]
