"""Stage 3 of lowering: C++ source for a scheduled graph.

One translation unit per jitted program: a prelude of small inline helpers (JAX's semantics for
max/min with NaN, integer division, saturating float->int conversion, half-precision storage), one
block per kernel inside ``fx_run`` (OpenMP across rows or outer iterations, ``omp simd`` on the
innermost loop), and ``fx_run(void** args)`` taking the inputs, constants and outputs in order.
Intermediate buffers are allocated and freed inside ``fx_run``; matrix products call the BLAS
``gemm`` whose address Python hands over with ``fx_set_gemm``.
"""

from __future__ import annotations

import math
import os
import re

import numpy as np
import sympy

from functx import dtypes
from functx.errors import UnsupportedError
from functx.lowering.loops import (
    Acc,
    Const,
    FloorDiv,
    Graph,
    Guard,
    Idx,
    Load,
    ModI,
    Node,
    Op,
    Sym,
    costly,
    flat_offset,
    lanewise_exprs,
    strides_of,
    subexprs,
    sym,
)
from functx.lowering.prelude import PRELUDE
from functx.lowering.schedule import Kernel, KernelCtx

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
}


def storage_type(dt) -> str:
    return _STORAGE[np.dtype(dt)]


def compute_type(dt) -> str:
    dt = np.dtype(dt)
    if dt in (dtypes.float16, dtypes.bfloat16):
        return "float"
    return _STORAGE[dt]


def _is_float(dt) -> bool:
    return np.dtype(dt) in dtypes.FLOATS


# The main translation unit's own part: the BLAS entry points (set once the program is loaded).
MAIN_PRELUDE = r"""
static fx_sgemm_t fx_sgemm = nullptr;
static fx_dgemm_t fx_dgemm = nullptr;
extern "C" void fx_set_gemm(void* s, void* d) {
  fx_sgemm = (fx_sgemm_t)s;
  fx_dgemm = (fx_dgemm_t)d;
}
"""
# A program with at least this many characters of movable kernel source is compiled as several
# translation units at once (one per core, at most UNITS_MAX): gcc takes about 30-50 ms per
# kernel at -O3.
SPLIT_MIN_CHARS = 6000
UNITS_MAX = 4
# kernels that touch the main unit's state (sub-programs, the BLAS pointers, the buffer pool)
# A program with more buffers than this puts each kernel in a function of its own, naming only its
# buffers: gcc's vectoriser and dead-store pass take minutes over one function holding thousands
# of restrict pointers (2,000 outputs).
SPLIT_BUFFERS = 256
_MAIN_ONLY = ("fx_sub", "fx_sgemm", "fx_dgemm", "fx_alloc", "fx_free", "fx_gemm_narrow")


def _num(v, dt) -> str:
    dt = np.dtype(dt)
    ct = compute_type(dt)
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


class _SympyC:
    """Print SymPy index expressions as C integer arithmetic."""

    def __call__(self, e) -> str:
        e = sympy.sympify(e)
        if e.is_Integer:
            return f"{int(e)}LL"
        if e.is_Symbol:
            return str(e)
        if isinstance(e, Guard):
            return self(e.args[1])
        if isinstance(e, FloorDiv):
            return f"({self(e.args[0])} / {self(e.args[1])})"
        if isinstance(e, ModI):
            return f"({self(e.args[0])} % {self(e.args[1])})"
        if e.is_Add:
            return "(" + " + ".join(self(a) for a in e.args) + ")"
        if e.is_Mul:
            return "(" + " * ".join(self(a) for a in e.args) + ")"
        if isinstance(e, sympy.Max):
            out = self(e.args[0])
            for a in e.args[1:]:
                out = f"fx_imax({out}, {self(a)})"
            return out
        if isinstance(e, sympy.Min):
            out = self(e.args[0])
            for a in e.args[1:]:
                out = f"fx_imin({out}, {self(a)})"
            return out
        raise UnsupportedError(f"jit: cannot print index expression {e}")


_ic = _SympyC()

_FLOAT_FN = {
    "exp": "fx_exp",
    "exp2": "fx::exp2",
    "log": "fx_log",
    "log1p": "fx::log1p",
    "expm1": "fx::expm1",
    "sqrt": "fx::sqrt",
    "cbrt": "fx::cbrt",
    "sin": "fx::sin",
    "cos": "fx::cos",
    "tan": "fx::tan",
    "asin": "fx::asin",
    "acos": "fx::acos",
    "atan": "fx::atan",
    "sinh": "fx::sinh",
    "cosh": "fx::cosh",
    "tanh": "fx_tanh",
    "asinh": "fx::asinh",
    "acosh": "fx::acosh",
    "atanh": "fx::atanh",
    "erf": "fx::erf",
    "lgamma": "fx::lgamma",
    "floor": "fx::floor",
    "ceil": "fx::ceil",
}
_BIN = {
    "add": "+",
    "sub": "-",
    "mul": "*",
    "eq": "==",
    "ne": "!=",
    "lt": "<",
    "le": "<=",
    "gt": ">",
    "ge": ">=",
}


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
                out = bool(sympy.sympify(x.expr).free_symbols & self.inner)
            elif isinstance(x, Load) and not kids:
                out = bool(sympy.sympify(x.offset).free_symbols & self.inner)
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
        if isinstance(e, (Const, Acc, Sym)) or (
            isinstance(e, Idx) and sympy.sympify(e.expr).is_Atom
        ):
            out = code
        else:
            out = self.temp(compute_type(e.dtype), code)
        self.by_id[id(e)] = out
        self.keep.append(e)
        return out

    def offset(self, off) -> str:
        if isinstance(off, (Const, Idx, Op, Load)):
            return self(off)
        off = sympy.sympify(off)
        if self.outer is not None and off.is_Add:
            # the terms that do not vary in the inner loop are computed once, before it: an
            # address the compiler sees as base + affine(i) becomes a contiguous vector load
            # (a clamp such as max(0, i - 1) in the address otherwise makes it a gather)
            inv = [t for t in off.args if not t.free_symbols & self.inner]
            var = [t for t in off.args if t.free_symbols & self.inner]
            if var and any(not t.is_Number for t in inv):
                return f"({_ic(sympy.Add(*var))} + {self.outer.index_temp(sympy.Add(*inv))})"
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
            return e.name
        if isinstance(e, Load):
            raw = f"{e.buf}[{self.offset(e.offset)}]"
            dt = np.dtype(e.dtype)
            if dt == dtypes.bfloat16:
                return f"fx_bf16_to_f32({raw})"
            if dt == dtypes.float16:
                return f"((float){raw})"
            return raw
        if isinstance(e, Op):
            code = self._op(e)
            dt = np.dtype(e.dtype)
            if e.name != "convert" and dt == dtypes.bfloat16:
                return f"fx_bf16_to_f32(fx_f32_to_bf16({code}))"
            if e.name != "convert" and dt == dtypes.float16:
                return f"((float)(_Float16)({code}))"
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
        fl = _is_float(in_dt)
        if name in _BIN:
            return f"({a[0]} {_BIN[name]} {a[1]})"
        if name in ("and", "or", "xor"):
            op = {"and": "&", "or": "|", "xor": "^"}[name]
            return f"(({ct})({a[0]} {op} {a[1]}))"
        if name == "not":
            return f"(!{a[0]})" if in_dt == dtypes.bool_ else f"(({ct})~{a[0]})"
        if name == "div":
            return f"({a[0]} / {a[1]})" if fl else f"fx_idiv<{ct}>({a[0]}, {a[1]})"
        if name == "rem":
            return f"fx::fmod({a[0]}, {a[1]})" if fl else f"fx_irem<{ct}>({a[0]}, {a[1]})"
        if name == "pow":
            if fl:
                return f"fx::pow({a[0]}, ({ct}){a[1]})"
            return f"fx_ipow_int<{ct}>({a[0]}, {a[1]})"
        if name == "max":
            return f"fx_max<{ct}>({a[0]}, {a[1]})"
        if name == "min":
            return f"fx_min<{ct}>({a[0]}, {a[1]})"
        if name == "atan2":
            return f"fx::atan2({a[0]}, {a[1]})"
        if name == "nextafter":
            if np.dtype(e.dtype) in (dtypes.float16, dtypes.bfloat16):
                raise UnsupportedError("jit: nextafter of float16/bfloat16 is not supported")
            return f"fx::nextafter({a[0]}, {a[1]})"
        if name == "neg":
            return f"(({ct})(-{a[0]}))"
        if name == "abs":
            return f"fx::fabs({a[0]})" if fl else f"(({ct})({a[0]} < 0 ? -{a[0]} : {a[0]}))"
        if name == "sign":
            return f"fx_sign<{ct}>({a[0]})"
        if name == "round":
            return (
                f"fx::nearbyint({a[0]})"
                if params.get("rounding_method", 1) == 1
                else f"fx::round({a[0]})"
            )
        if name == "rsqrt":
            return f"(({ct})1 / fx::sqrt({a[0]}))"
        if name == "logistic":
            return f"fx_logistic<{ct}>({a[0]})"
        if name == "is_finite":
            return f"(({a[0]} - {a[0]}) == 0)"  # false for inf and NaN; vectorises
        if name in _FLOAT_FN:
            fn = _FLOAT_FN[name]
            return f"{fn}<{ct}>({a[0]})" if fn.startswith("fx_") else f"{fn}({a[0]})"
        if name == "integer_pow":
            return self._ipow(a[0], params["y"], ct)
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
            return f"fx_convert<{ct}, {src}>({a[0]})"
        if name == "clamp":
            return f"fx_clamp({a[0]}, {a[1]}, {a[2]})"
        raise UnsupportedError(f"jit: no C++ for elementwise op '{name}'")

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
    return f"{buf}[{off}] = {val};"


_PAR = 1 << 15  # parallelise loops of at least this many elements
# and generated matrix products of at least this many multiply-adds: below, waking the other
# threads costs more than they save (128x10 @ 10x256: 9.9 us on one thread, 17 us on two)
_PAR_DOT = 1 << 20
_SMALL_GEMM = 1 << 24  # matrix products of at most this many multiply-adds are generated code
# scan outputs of at least this many bytes are written with streaming stores (prelude fx_stream)
_STREAM_MIN = 1 << 24

_OMP_IF = re.compile(r"^(\s*#pragma omp parallel for\b.*?)\s*if\((.*)\)\s*$")
_INT = r"(?:0|[1-9]\d*)(?:LL)?"  # (no leading zeros: C would read them as octal)
_OMP_TEST = re.compile(rf"^\s*({_INT}(?:\s*\*\s*{_INT})*)\s*(>=|>)\s*({_INT})\s*$")


def _static_test(cond: str):
    """The value of an ``if()`` clause made of ``N * M >= K`` tests joined by ``&&`` (what the
    kernels below write), or None for anything else."""
    value = True
    for part in cond.split("&&"):
        m = _OMP_TEST.match(part)
        if m is None:
            return None
        lhs = math.prod(int(f.strip().removesuffix("LL")) for f in m.group(1).split("*"))
        rhs = int(m.group(3).removesuffix("LL"))
        value = value and (lhs >= rhs if m.group(2) == ">=" else lhs > rhs)
    return value


def _decide_parallel(lines: list[str]) -> list[str]:
    """Parallel loops whose ``if()`` clause is a constant (sizes are static): decided here. A
    false one loses its pragma, since libgomp's parallel call costs about 0.25 us even when told
    to run on one thread (per kernel, per call: small programs pay it several times over); a
    true one loses the clause. Clauses of another form stay as they are."""
    out = []
    for ln in lines:
        m = _OMP_IF.match(ln)
        if m and (value := _static_test(m.group(2))) is not None:
            if not value:
                continue
            ln = m.group(1)
        out.append(ln)
    return out


_PAR_ITEMS = 64  # a pointwise loop is split into at least this many parallel items...
_TILE = 4096  # ...of at least this many elements
_ROW_CACHE_ELEMS = 1 << 14  # reduction rows up to this long may keep costly values on the stack


def _size(e) -> int:
    return sum(1 for _ in subexprs(e))


def _contains(big, e) -> bool:
    return any(s is e for s in subexprs(big))


# float32 sums over more elements than this are cascaded (see _cascade_split)
_SUM_BLOCK = 128


def _cascade_split(inner):
    """Where a float32 sum over the reduced axes ``inner`` is cut into blocks: ``(d, g)``, the
    loop over axis ``d`` taken ``g`` iterations at a time so that a block (those iterations and
    the loops inside) covers at most _SUM_BLOCK elements, or None when the whole row fits one
    block. Each block sums in float SIMD lanes (a lane adds at most _SUM_BLOCK / lanes values)
    and the blocks' sums meet in a double, so the error stays that of a short float sum whatever
    the row's length (one float accumulator per lane stops growing at 2^24 ulp)."""
    if math.prod(inner) <= _SUM_BLOCK:
        return None
    d, below = len(inner) - 1, 1
    while d > 0 and below * inner[d] <= _SUM_BLOCK:
        below *= inner[d]
        d -= 1
    return d, max(1, _SUM_BLOCK // below)


def _decompose(vars_, shape, flat_name):
    """Statements binding ``vars_`` to the multi-index of ``flat_name`` in ``shape``."""
    out = []
    for v, s, d in zip(vars_, strides_of(shape), shape):
        expr = f"{flat_name}"
        if s != 1:
            expr = f"({expr} / {s}LL)"
        if s * d != math.prod(shape):
            expr = f"({expr} % {d}LL)"
        out.append(f"const int64_t {v} = {expr};")
    return out


class CppProgram:
    """C++ source for one scheduled graph."""

    def __init__(self, graph: Graph, kernels: list[Kernel]):
        self.g = graph
        self.kernels = kernels
        self.body: list[str] = []
        self.subs: list = []

    # --- kernels -------------------------------------------------------------------------------
    def _pointwise(self, k: Kernel):
        shape = k.shape
        n = math.prod(shape)
        if n == 0:
            return
        nd = len(shape)
        ivars = [sym(f"i{d}") for d in range(nd)]
        lines = [f"  // kernel {k.index}: pointwise {shape}"]
        if nd == 0:
            em = Emitter("    ")
            ctx = KernelCtx(k)
            stores = []
            for node in k.nodes:
                val = em(node.fn((), ctx))
                stores.append(_store(node.buf, "0", val, node.dtype))
            lines += ["  {"] + em.lines + ["    " + s for s in stores] + ["  }"]
            self.body += lines
            return
        outer = shape[:-1]
        n_outer = math.prod(outer)
        last = shape[-1]
        hoist = Emitter("    ", prefix="h")
        em = Emitter("      ").hoisting(hoist, [ivars[-1]])
        ctx = KernelCtx(k)
        stores = []
        for node in k.nodes:
            val = em(node.fn(tuple(ivars), ctx))
            stores.append(_store(node.buf, em.offset(flat_offset(ivars, shape)), val, node.dtype))
        # too few outer rows to share among threads: split the last axis into tiles too
        tiles = 1
        if n_outer < _PAR_ITEMS and last >= 2 * _TILE:
            tiles = min(-(-_PAR_ITEMS // n_outer), last // _TILE)
        tile = -(-last // tiles)
        tile = -(-tile // 64) * 64
        tiles = -(-last // tile)
        par = f"#pragma omp parallel for schedule(static) if({n_outer}LL * {last}LL >= {_PAR})"
        lines.append(f"  {par}")
        lines.append(f"  for (int64_t o = 0; o < {n_outer * tiles}LL; ++o) {{")
        iv = ivars[-1]
        if tiles == 1:
            lines += ["    " + s for s in _decompose([str(v) for v in ivars[:-1]], outer, "o")]
            lo, hi = "0", f"{last}LL"
        else:
            lines.append(f"    const int64_t ob = o / {tiles}LL;")
            lines += ["    " + s for s in _decompose([str(v) for v in ivars[:-1]], outer, "ob")]
            lines.append(f"    const int64_t lo = (o % {tiles}LL) * {tile}LL;")
            lines.append(f"    const int64_t hi = fx_imin(lo + {tile}LL, {last}LL);")
            lo, hi = "lo", "hi"
        lines += hoist.lines
        lines.append("    #pragma omp simd")
        lines.append(f"    for (int64_t {iv} = {lo}; {iv} < {hi}; ++{iv}) {{")
        lines += em.lines + ["      " + s for s in stores]
        lines += ["    }", "  }"]
        self.body += lines

    def _reduce(self, k: Kernel):
        rows = k.row_shape
        inner = k.inner_shape
        n_rows = math.prod(rows)
        n_inner = math.prod(inner)
        rv, iv = k.row_vars(), k.inner_vars()
        full = k.full_index()
        if n_rows == 0:
            return
        lines = [
            f"  // kernel {k.index}: reduce axes {k.axes} of {k.shape}",
            f"  #pragma omp parallel for schedule(static) if({n_rows}LL * {max(n_inner, 1)}LL"
            f" >= {_PAR} && {n_rows}LL > 1)",
            f"  for (int64_t row = 0; row < {n_rows}LL; ++row) {{",
        ]
        lines += ["    " + s for s in _decompose([str(v) for v in rv], rows, "row")]
        acc_names: dict = {}
        row_off = _ic(flat_offset(rv, rows)) if rows else "0"
        # element expressions first (one context per phase: each pass, then the maps), so that
        # costly subexpressions shared between phases can be kept in a row buffer
        ctxs = [KernelCtx(k, rv) for _ in range(len(k.passes) + 1)]
        pass_vals = [
            [r.params["operand"].load(full, c) for r in red] for red, c in zip(k.passes, ctxs)
        ]
        map_vals = [m.fn(full, ctxs[-1]) for m in k.maps]
        keep, reuse = self._row_cache(k, full, ctxs)
        cascade_at = _cascade_split(inner)
        lines += [
            f"    alignas(64) {ct} {name}[{n_inner}];"
            for name, ct in dict.fromkeys((name, ct) for keeps in keep for name, ct, _ in keeps)
        ]
        for p, red_nodes in enumerate(k.passes):
            decls, updates = [], []
            hoist = Emitter("    ", prefix=f"h{p}_")
            em = Emitter("      " + "  " * max(len(inner) - 1, 0))
            em.acc_names = acc_names
            em.hoisting(hoist, iv)
            self._reuse(em, reuse[p])
            clauses, post, index_loops, zero_fixes, cascade = [], [], [], [], []
            for r, val_e in zip(red_nodes, pass_vals[p]):
                op = r.params["op"]
                x = r.params["operand"]
                v = em(val_e)
                ct = compute_type(x.dtype)
                a = f"a{r.id}"
                acc_names[(r.id, 0)] = a
                if op in ("argmax", "argmin") and np.dtype(x.dtype) != dtypes.bool_:
                    # vectorisable: the extreme value (with a NaN flag) in this pass, then the
                    # first index holding it (or the first NaN) in a second loop over the row
                    cmp = ">" if op == "argmax" else "<"
                    bi = f"ai{r.id}"
                    ident = self._lowest(x.dtype) if op == "argmax" else self._highest(x.dtype)
                    nan = _is_float(x.dtype)
                    decls.append(
                        f"{ct} {a} = {ident}; int {a}_nan = 0;" if nan else f"{ct} {a} = {ident};"
                    )
                    updates.append(
                        f"{a} = ({v} {cmp} {a}) ? {v} : {a};"
                        + (f" {a}_nan |= ({v} != {v});" if nan else "")
                    )
                    clauses.append(f"reduction({'max' if cmp == '>' else 'min'}:{a})")
                    if nan:
                        clauses.append(f"reduction(|:{a}_nan)")
                    hit = (
                        f"((!{a}_nan & ({{v}} == {a})) | ({a}_nan & ({{v}} != {{v}})))"
                        if nan
                        else f"({{v}} == {a})"
                    )
                    index_loops.append((bi, val_e, hit))
                    acc_names[(r.id, 0)] = f"(({compute_type(r.dtype)}){bi})"
                    continue
                if op in ("argmax", "argmin"):  # bool operands: one scalar loop
                    bi = f"ai{r.id}"
                    init = "-" if op == "argmax" else ""
                    cmp = ">" if op == "argmax" else "<"
                    if _is_float(x.dtype):
                        decls.append(
                            f"{ct} {a} = {init}fx::limits<{ct}>::infinity(); int64_t {bi} = 0;"
                        )
                        updates.append(
                            f"if (!({a} != {a}) && ({v} {cmp} {a} || {v} != {v})) "
                            f"{{ {a} = {v}; {bi} = jflat; }}"
                        )
                    else:
                        lim = "lowest" if op == "argmax" else "max"
                        decls.append(
                            f"{ct} {a} = fx::limits<{ct}>::{lim}(); "
                            f"int64_t {bi} = 0; bool {a}_set = false;"
                        )
                        updates.append(
                            f"if (!{a}_set || {v} {cmp} {a}) {{ {a} = {v}; "
                            f"{bi} = jflat; {a}_set = true; }}"
                        )
                    acc_names[(r.id, 0)] = f"(({compute_type(r.dtype)}){bi})"
                    continue
                is_bool = np.dtype(x.dtype) == dtypes.bool_
                if op in ("reduce_max", "reduce_min") and _is_float(x.dtype):
                    # vectorisable: the plain comparison (which skips NaN) plus a NaN flag
                    cmp = ">" if op == "reduce_max" else "<"
                    ident = self._lowest(x.dtype) if op == "reduce_max" else self._highest(x.dtype)
                    # a zero of the sign that wins ties: +0.0 for max, -0.0 for min
                    zsign = "0" if cmp == ">" else "1"
                    # (which zero, when the extreme is a zero: a second loop over the row, run
                    # only then, keeps the sign test out of the hot loop)
                    decls.append(f"{ct} {a} = {ident}; int {a}_nan = 0;")
                    updates.append(f"{a} = ({v} {cmp} {a}) ? {v} : {a}; {a}_nan |= ({v} != {v});")
                    clauses += [
                        f"reduction({'max' if cmp == '>' else 'min'}:{a})",
                        f"reduction(|:{a}_nan)",
                    ]
                    zero_fixes.append((a, val_e, zsign, "+" if cmp == ">" else "-", ct))
                    post.append(f"if ({a}_nan) {a} = fx::limits<{ct}>::quiet_NaN();")
                    continue
                ident, comb, clause = {
                    "reduce_sum": ("0", f"{a} + {v}", "+"),
                    "reduce_prod": ("1", f"{a} * {v}", "*"),
                    "reduce_max": (self._lowest(x.dtype), f"fx_max<{ct}>({a}, {v})", "max"),
                    "reduce_min": (self._highest(x.dtype), f"fx_min<{ct}>({a}, {v})", "min"),
                    "reduce_and": (
                        "true" if is_bool else f"(({ct})-1)",
                        f"({ct})({a} & {v})",
                        "&&" if is_bool else "&",
                    ),
                    "reduce_or": (
                        "false" if is_bool else "0",
                        f"({ct})({a} | {v})",
                        "||" if is_bool else "|",
                    ),
                }[op]
                if is_bool and op in ("reduce_and", "reduce_or"):
                    comb = f"{a} {'&&' if op == 'reduce_and' else '||'} {v}"
                if op == "reduce_sum" and ct == "float" and cascade_at is not None:
                    # blocks of at most _SUM_BLOCK elements summed in float lanes, the blocks'
                    # partial sums added in double: the error does not grow with the row
                    decls.append(f"double {a}_w = 0;")
                    cascade.append(a)
                else:
                    decls.append(f"{ct} {a} = ({ct}){ident};")
                updates.append(f"{a} = {comb};")
                if clauses is not None:
                    clauses.append(f"reduction({clause}:{a})")
            updates += [f"{name}[jflat] = {em(e)};" for name, _, e in keep[p]]
            lines += ["    " + d for d in decls]
            lines += hoist.lines
            has_arg = any(
                r.params["op"] in ("argmax", "argmin")
                and np.dtype(r.params["operand"].dtype) == dtypes.bool_
                for r in red_nodes
            )
            lines += self._inner_loops(
                iv,
                inner,
                em.lines + [em.indent + u for u in updates],
                needs_jflat=has_arg or bool(keep[p] or reuse[p]),
                simd_clauses=None if has_arg else clauses,
                cascade=(cascade_at, cascade) if cascade else None,
            )
            lines += [f"    float {a} = (float){a}_w;" for a in cascade]
            if index_loops:
                lines += self._index_loop(k, index_loops, acc_names, iv, reuse[p])
            for fix in zero_fixes:
                lines += self._zero_sign(k, fix, acc_names, iv, reuse[p])
            lines += ["    " + q for q in post]
        # stores of the reductions that own buffers used outside the row
        for r in [r for p in k.passes for r in p]:
            lines.append(f"    {_store(r.buf, row_off, acc_names[(r.id, 0)], r.dtype)}")
        if k.maps:
            hoist = Emitter("    ", prefix="hm")
            em = Emitter("      " + "  " * max(len(inner) - 1, 0))
            em.acc_names = acc_names
            em.hoisting(hoist, iv)
            self._reuse(em, reuse[-1])
            stores = []
            for m, val_e in zip(k.maps, map_vals):
                val = em(val_e)
                stores.append(
                    em.indent + _store(m.buf, em.offset(flat_offset(full, k.shape)), val, m.dtype)
                )
            lines += hoist.lines
            lines += self._inner_loops(
                iv, inner, em.lines + stores, simd=True, needs_jflat=bool(reuse[-1])
            )
        if k.epilogue:
            em = Emitter("    ")
            em.acc_names = acc_names
            ctx = KernelCtx(k, rv)
            for m in k.epilogue:
                val = em(m.fn(rv, ctx))
                em.lines.append("    " + _store(m.buf, row_off, val, m.dtype))
            lines += em.lines
        lines.append("  }")
        self.body += lines

    def _index_loop(self, k: Kernel, index_loops, acc_names, iv, reuse):
        """The second loop of a vectorised argmax/argmin: the first position where the row's
        element equals the extreme value found by the pass (or is NaN, if the row has one)."""
        n_inner = math.prod(k.inner_shape)
        hoist = Emitter("    ", prefix="hi_")
        em = Emitter("      " + "  " * max(len(k.inner_shape) - 1, 0))
        em.acc_names = acc_names
        em.hoisting(hoist, iv)
        self._reuse(em, reuse)
        updates, clauses = [], []
        for bi, val_e, hit in index_loops:
            v = em(val_e)
            updates.append(f"{bi} = fx_imin({bi}, {hit.format(v=v)} ? jflat : {n_inner}LL);")
            clauses.append(f"reduction(min:{bi})")
        lines = [f"    int64_t {bi} = {n_inner}LL;" for bi, _, _ in index_loops] + hoist.lines
        lines += self._inner_loops(
            iv,
            k.inner_shape,
            em.lines + [em.indent + u for u in updates],
            needs_jflat=True,
            simd_clauses=clauses,
        )
        return lines

    def _zero_sign(self, k: Kernel, fix, acc_names, iv, reuse):
        """When a float max (min) of a row is zero, whether +0 (-0) occurs in the row: that
        zero is the result (JAX's max(-0, +0) is +0 whatever the order)."""
        a, val_e, zsign, sign, ct = fix
        hoist = Emitter("      ", prefix=f"hz{a}_")
        em = Emitter("        " + "  " * max(len(k.inner_shape) - 1, 0))
        em.acc_names = acc_names
        em.hoisting(hoist, iv)
        self._reuse(em, reuse)
        v = em(val_e)
        body = em.lines + [f"{em.indent}{a}_z |= ({v} == 0 && __builtin_signbit({v}) == {zsign});"]
        loop = self._inner_loops(
            iv, k.inner_shape, body, needs_jflat=bool(reuse), simd_clauses=[f"reduction(|:{a}_z)"]
        )
        return (
            [f"    if ({a} == 0) {{", f"      int {a}_z = 0;"]
            + hoist.lines
            + ["  " + ln for ln in loop]
            + [f"      if ({a}_z) {a} = {sign}({ct})0;", "    }"]
        )

    def _row_cache(self, k: Kernel, full, ctxs):
        """Costly element subexpressions (a transcendental function of the row's elements) that
        more than one phase of a reduction kernel computes, e.g. softmax's ``exp(x - max)`` in
        the sum pass and again in the normalising map: the first phase stores them in a row
        buffer on the stack, later phases read it. Returns, per phase, the (buffer, C type,
        expression) to store and the (expression, buffer) pairs to read."""
        n_inner = math.prod(k.inner_shape)
        keep: list = [[] for _ in ctxs]
        reuse: list = [[] for _ in ctxs]
        if not k.inner_shape or n_inner > _ROW_CACHE_ELEMS:
            return keep, reuse
        first: dict = {}  # node id -> (phase, expression)
        chosen: list = []
        for p, ctx in enumerate(ctxs):
            for (nid, idx), e in ctx.memo.items():
                if idx != full or not isinstance(e, Op):
                    continue
                if nid not in first:
                    first[nid] = (p, e)
                elif first[nid][0] < p and costly(e):
                    chosen.append((nid, p, e))
        taken: dict = {}
        for nid, p, e in sorted(chosen, key=lambda c: -_size(c[2])):
            if any(_contains(big, e) for big, _ in reuse[p]):
                continue  # already inside a reused larger expression
            q, e0 = first[nid]
            if nid not in taken:
                taken[nid] = f"rc{len(taken)}_{k.index}"
                keep[q].append((taken[nid], compute_type(e0.dtype), e0))
            reuse[p].append((e, taken[nid]))
        return keep, reuse

    @staticmethod
    def _reuse(em: Emitter, reuse: list):
        for e, name in reuse:
            em.by_id[id(e)] = f"{name}[jflat]"
            em.keep.append(e)

    def _inner_loops(
        self, iv, inner, body, needs_jflat=False, simd=False, simd_clauses=None, cascade=None
    ):
        """Loops over the reduced axes around ``body``. ``cascade``: ``((d, g), names)`` of
        _cascade_split and the float partial sums (declared here, per block) that each block
        adds to ``<name>_w``, a double declared by the caller."""
        if not inner:
            pre = ["    {", "      const int64_t jflat = 0;"] if needs_jflat else ["    {"]
            return pre + body + ["    }"]
        out = []
        ind = "    "
        (cut, g), sums = cascade if cascade else ((-1, 0), [])
        for d, (v, n) in enumerate(zip(iv, inner)):
            lo, hi = "0", f"{n}LL"
            if d == cut:
                out.append(f"{ind}for (int64_t blk_{v} = 0; blk_{v} < {n}LL; blk_{v} += {g}LL) {{")
                ind += "  "
                if n % g:
                    out.append(f"{ind}const int64_t end_{v} = fx_imin(blk_{v} + {g}LL, {n}LL);")
                out += [f"{ind}float {a} = 0.0f;" for a in sums]
                lo, hi = f"blk_{v}", f"end_{v}" if n % g else f"blk_{v} + {g}LL"
            if d == len(inner) - 1 and simd:
                out.append(f"{ind}#pragma omp simd")
            elif d == len(inner) - 1 and simd_clauses is not None:
                out.append(f"{ind}#pragma omp simd {' '.join(simd_clauses)}".rstrip())
            out.append(f"{ind}for (int64_t {v} = {lo}; {v} < {hi}; ++{v}) {{")
            ind += "  "
        if needs_jflat:
            out.append(f"{ind}const int64_t jflat = {_ic(flat_offset(iv, inner))};")
        out += body
        for d in reversed(range(len(inner))):
            ind = ind[:-2]
            out.append(f"{ind}}}")
            if d == cut:
                out += [f"{ind}{a}_w += (double){a};" for a in sums]
                ind = ind[:-2]
                out.append(f"{ind}}}")
        return out

    @staticmethod
    def _lowest(dt):
        dt = np.dtype(dt)
        if _is_float(dt):
            return f"-fx::limits<{compute_type(dt)}>::infinity()"
        if dt == dtypes.bool_:
            return "false"
        return f"fx::limits<{compute_type(dt)}>::lowest()"

    @staticmethod
    def _highest(dt):
        dt = np.dtype(dt)
        if _is_float(dt):
            return f"fx::limits<{compute_type(dt)}>::infinity()"
        if dt == dtypes.bool_:
            return "true"
        return f"fx::limits<{compute_type(dt)}>::max()"

    def _ascan(self, k: Kernel):
        """A lane-wise associative scan run sequentially along the axis. Lanes before the axis are
        distributed over threads; lanes after it (contiguous in memory) form an inner vector loop
        over blocks, with one accumulator array per element leaf."""
        group = k.nodes[0].params["group"]
        xs, consts, outs = group["xs"], group["consts"], group["outs"]
        axis, reverse = group["axis"], group["reverse"]
        shape = xs[0].shape
        n = shape[axis]
        pre, post = shape[:axis], shape[axis + 1 :]
        n_pre, n_post = math.prod(pre), math.prod(post)
        if n == 0 or n_pre * n_post == 0:
            return
        block = min(n_post, 256)
        n_blocks = -(-n_post // block)
        pv = [sym(f"p{i}") for i in range(len(pre))]
        qv = [sym(f"q{i}") for i in range(len(post))]
        j = sym("j")
        full = tuple(pv) + (j,) + tuple(qv)
        lanes_e = tuple(pv) + tuple(qv)
        ctx = KernelCtx(k)
        em = Emitter("          ")
        cur = [em(x.load(full, ctx)) for x in xs]
        cvals = [c.load(lanes_e if c.shape else (), ctx) for c in consts]
        accs = [Sym(x.dtype, f"acc{m}[ii]") for m, x in enumerate(xs)]
        curs = [Sym(x.dtype, c) for x, c in zip(xs, cur)]
        raw = lanewise_exprs(group["combine"], cvals + accs + curs)
        # a float32 running sum (cumsum) carries its prefix in double: in float32 each addition
        # rounds, and the prefix stops growing at 2^24 ulp of the first element
        wide = [
            np.dtype(x.dtype) == dtypes.float32
            and isinstance(e, Op)
            and e.name == "add"
            and {id(a) for a in e.args} == {id(accs[m]), id(curs[m])}
            for m, (x, e) in enumerate(zip(xs, raw))
        ]
        new = [None if w else em(e) for w, e in zip(wide, raw)]
        off = em.offset(flat_offset(full, shape))
        first = f"{n - 1}LL" if reverse else "0"
        loop = (
            f"for (int64_t j = {n - 1}LL; j >= 0; --j)"
            if reverse
            else f"for (int64_t j = 0; j < {n}LL; ++j)"
        )
        lines = [
            f"  // kernel {k.index}: associative_scan along axis {axis} of {shape}",
            f"  #pragma omp parallel for schedule(static) if({n_pre * n_post}LL * {n}LL >= {_PAR})",
            f"  for (int64_t task = 0; task < {n_pre * n_blocks}LL; ++task) {{",
            f"    const int64_t pflat = task / {n_blocks}LL;",
            f"    const int64_t q0_ = (task % {n_blocks}LL) * {block}LL;",
            f"    const int64_t len = fx_imin({block}LL, {n_post}LL - q0_);",
        ]
        lines += ["    " + s for s in _decompose([str(v) for v in pv], pre, "pflat")]
        lines += [
            f"    {'double' if w else compute_type(x.dtype)} acc{m}[{block}];"
            for m, (x, w) in enumerate(zip(xs, wide))
        ]
        # Large outputs (rows of whole cache lines) go through a staging row and streaming
        # stores; each stored node's name for this position: its buffer, or its staging row.
        stored = [o for o in outs if o.buf] + [e for e in k.epilogue if e.buf]
        streamed = {
            o.id
            for o in stored
            if o.size * np.dtype(o.dtype).itemsize >= _STREAM_MIN
            and n_post * np.dtype(o.dtype).itemsize % 64 == 0
        }
        lines += [
            f"    {storage_type(o.dtype)} st{o.id}[{block}] __attribute__((aligned(64)));"
            for o in stored
            if o.id in streamed
        ]

        def store(o, val):
            if o.id in streamed:
                return _store(f"st{o.id}", "ii", val, o.dtype)
            return _store(o.buf, off, val, o.dtype)

        lines += [
            f"    {loop} {{",
            "      #pragma omp simd",
            "      for (int64_t ii = 0; ii < len; ++ii) {",
            "        const int64_t qflat = q0_ + ii;",
        ]
        lines += ["        " + s for s in _decompose([str(v) for v in qv], post, "qflat")]
        lines += em.lines
        lines += [
            f"        {'double' if w else compute_type(x.dtype)} nv{m};"
            for m, (x, w) in enumerate(zip(xs, wide))
        ]
        lines += [f"        if (j == {first}) {{"]
        lines += [f"          nv{m} = {c};" for m, c in enumerate(cur)]
        lines += ["        } else {"]
        lines += [
            f"          nv{m} = acc{m}[ii] + (double){c};" if w else f"          nv{m} = {v};"
            for m, (w, c, v) in enumerate(zip(wide, cur, new))
        ]
        lines += ["        }"]
        lines += [f"        acc{m}[ii] = nv{m};" for m in range(len(xs))]
        # (the rounded value is the scan's output, and what the epilogue reads)
        lines += [f"        const float nv{m}f = (float)nv{m};" for m, w in enumerate(wide) if w]
        nv = [f"nv{m}f" if w else f"nv{m}" for m, w in enumerate(wide)]
        lines += ["        " + store(o, nv[m]) for m, o in enumerate(outs) if o.buf]
        if k.epilogue:  # pointwise nodes at this position, reading the new values (schedule.py)
            ep = Emitter("        ", prefix="e")
            ep.acc_names.update({(o.id, 0): nv[m] for m, o in enumerate(outs)})
            ectx = KernelCtx(k, full)
            vals = [ep(e.fn(full, ectx)) for e in k.epilogue]
            lines += ep.lines
            lines += ["        " + store(e, v) for e, v in zip(k.epilogue, vals) if e.buf]
        lines.append("      }")
        if streamed:
            row = em.offset(flat_offset(tuple(pv) + (j,) + (0,) * len(qv), shape))
            lines += [
                f"      fx_stream({o.buf} + {row} + q0_, st{o.id}, len * sizeof(*{o.buf}));"
                for o in stored
                if o.id in streamed
            ]
        lines.append("    }")
        if streamed:
            lines.append("    fx_stream_fence();")
        lines.append("  }")
        self.body += lines

    def _greduce(self, k: Kernel):
        """functx.lax.reduce with a custom combine: rows in parallel, the combine inlined."""
        group = k.nodes[0].params["group"]
        ops, inits, outs, axes = group["ops"], group["inits"], group["outs"], group["axes"]
        shape = ops[0].shape
        rows = tuple(d for i, d in enumerate(shape) if i not in axes)
        inner = tuple(shape[i] for i in axes)
        n_rows = math.prod(rows)
        if n_rows == 0:
            return
        rv = [sym(f"r{i}") for i in range(len(rows))]
        iv = [sym(f"j{i}") for i in range(len(inner))]
        it_r, it_i = iter(rv), iter(iv)
        full = tuple(next(it_i) if i in axes else next(it_r) for i in range(len(shape)))
        ctx = KernelCtx(k)
        em0 = Emitter("    ")
        init_vals = [em0(i.load((), ctx)) for i in inits]
        em = Emitter("      " + "  " * max(len(inner) - 1, 0))
        cur = [em(o.load(full, ctx)) for o in ops]
        accs = [Sym(o.dtype, f"acc{m}") for m, o in enumerate(ops)]
        curs = [Sym(o.dtype, c) for o, c in zip(ops, cur)]
        new = [em(e) for e in lanewise_exprs(group["computation"], accs + curs)]
        body = em.lines + [
            f"{em.indent}{compute_type(o.dtype)} nv{m} = {v};"
            for m, (o, v) in enumerate(zip(ops, new))
        ]
        body += [f"{em.indent}acc{m} = nv{m};" for m in range(len(ops))]
        lines = [
            f"  // kernel {k.index}: reduce (custom combine) over axes {axes} of {shape}",
            f"  #pragma omp parallel for schedule(static) if({n_rows}LL * "
            f"{max(math.prod(inner), 1)}LL >= {_PAR} && {n_rows}LL > 1)",
            f"  for (int64_t row = 0; row < {n_rows}LL; ++row) {{",
        ]
        lines += ["    " + s for s in _decompose([str(v) for v in rv], rows, "row")]
        lines += em0.lines
        lines += [
            f"    {compute_type(o.dtype)} acc{m} = {v};"
            for m, (o, v) in enumerate(zip(ops, init_vals))
        ]
        lines += self._inner_loops(iv, inner, body)
        off = _ic(flat_offset(rv, rows)) if rows else "0"
        lines += [
            "    " + _store(o.buf, off, f"acc{m}", o.dtype) for m, o in enumerate(outs) if o.buf
        ]
        lines.append("  }")
        self.body += lines

    def _dot(self, k: Kernel):
        node = k.nodes[0]
        p = node.params
        lhs, rhs = p["lhs"], p["rhs"]
        ta, tb = p["lhs_trans"], p["rhs_trans"]
        bsz, m, kk, nn = p["batch"], p["m"], p["k"], p["n"]
        ct = compute_type(node.dtype)
        la, rb_ = lhs.buf, rhs.buf
        lines = [f"  // kernel {k.index}: dot_general {lhs.shape} x {rhs.shape} -> {node.shape}"]
        if bsz * m * nn == 0:
            self.body += lines
            return
        if kk == 0:
            lines += [f"  memset({node.buf}, 0, {bsz * m * nn}ULL * sizeof(*{node.buf}));"]
            self.body += lines
            return
        blas = {dtypes.float32: "fx_sgemm", dtypes.float64: "fx_dgemm"}.get(np.dtype(node.dtype))
        close = ["  }"]
        same = np.dtype(lhs.dtype) == np.dtype(node.dtype) == np.dtype(rhs.dtype)
        if blas and same and bsz * m * nn * kk <= _SMALL_GEMM:
            lines += self._small_gemm(node, la, rb_, ta, tb, bsz, m, kk, nn, ct)
            self.body += lines
            return
        if blas and np.dtype(lhs.dtype) == np.dtype(node.dtype):
            lda = m if ta else kk
            ldb = kk if tb else nn
            lines += [
                f"  if ({blas}) {{",
                f"    for (int64_t b = 0; b < {bsz}LL; ++b)",
                f"      {blas}(101, {112 if ta else 111}, {112 if tb else 111}, {m}LL, "
                f"{nn}LL,"
                f" {kk}LL, ({ct})1, {la} + b * {m * kk}LL, {lda}LL, {rb_} + b * {kk * nn}LL,"
                f" {ldb}LL, ({ct})0, {node.buf} + b * {m * nn}LL, {nn}LL);",
                "  } else {",
            ]
        else:
            lines.append("  {")
        a_idx = f"(t * {m}LL + ii)" if ta else f"(ii * {kk}LL + t)"
        b_idx = f"(jj * {kk}LL + t)" if tb else f"(t * {nn}LL + jj)"
        acc_t = (
            "double"
            if ct == "double"
            else ("float" if _is_float(node.dtype) else compute_type(node.dtype))
        )

        def rd(buf, idx, dt, sz):
            raw = f"{buf}[b * {sz}LL + {idx}]"
            if np.dtype(dt) == dtypes.bfloat16:
                return f"(({acc_t})fx_bf16_to_f32({raw}))"
            return f"(({acc_t}){raw})"

        a_read = rd(la, a_idx, lhs.dtype, m * kk)
        b_read = rd(rb_, b_idx, rhs.dtype, kk * nn)
        lines += [
            f"    #pragma omp parallel for collapse(2) if({bsz * m * nn * kk}LL >= {_PAR})",
            f"    for (int64_t b = 0; b < {bsz}LL; ++b)",
            f"    for (int64_t ii = 0; ii < {m}LL; ++ii) {{",
            f"      for (int64_t jj = 0; jj < {nn}LL; ++jj) {{",
            f"        {acc_t} s = 0;",
            f"        for (int64_t t = 0; t < {kk}LL; ++t) s += {a_read} * {b_read};",
            "        "
            + _store(
                node.buf,
                f"b * {m * nn}LL + ii * {nn}LL + jj",
                f"({compute_type(node.dtype)})s",
                node.dtype,
            ),
            "      }",
            "    }",
        ]
        lines += close
        self.body += lines

    @staticmethod
    def _small_gemm(node, la, rb_, ta, tb, bsz, m, kk, nn, ct):
        """A generated matrix product for problems too small for BLAS's threads (idle, they spin
        against the OpenMP threads). From 4 rows and 2 columns up, the prelude's register-tiled
        ``fx_gemm`` (one tile shape per machine; for fewer columns than a vector holds, on the
        transposed problem); below, one row of C at a time:
        ``c += a * B[t, :]`` in vector form when B is stored (K, N), vector dot products when
        B's columns are contiguous."""
        c = node.buf
        work = bsz * m * nn * kk
        a_i, a_t = (1, m) if ta else (kk, 1)
        b_t, b_j = (1, kk) if tb else (nn, 1)
        lanes = 64 // np.dtype(node.dtype).itemsize
        if 2 <= nn < lanes and m > nn and a_t == 1:  # few columns, rows of A contiguous
            return [
                f"  if (fx_gemm_narrow<{ct}, {nn}>({bsz}LL, {m}LL, {kk}LL, {la}, {a_i}LL, "
                f"{rb_}, {b_t}LL, {b_j}LL, {c}, {nn}LL)) return 1;"
            ]
        if 2 <= nn < lanes and m > nn:  # few columns: C^T = B^T A^T, C stored transposed
            return [
                f"  fx_gemm<{ct}>({bsz}LL, {nn}LL, {kk}LL, {m}LL, {rb_}, {b_j}LL, {b_t}LL, "
                f"{la}, {a_t}LL, {a_i}LL, {c}, 1LL, {nn}LL, {work}LL >= {_PAR_DOT});"
            ]
        if m >= 4 and nn >= 2:
            return [
                f"  fx_gemm<{ct}>({bsz}LL, {m}LL, {kk}LL, {nn}LL, {la}, {a_i}LL, {a_t}LL, "
                f"{rb_}, {b_t}LL, {b_j}LL, {c}, {nn}LL, 1LL, {work}LL >= {_PAR_DOT});"
            ]
        tb = tb or nn == 1  # a single column of B is contiguous either way
        a_el = f"{la}[b * {m * kk}LL + " + (f"t * {m}LL + ii]" if ta else f"ii * {kk}LL + t]")
        lines = [
            f"  #pragma omp parallel for collapse(2) schedule(static) if({work}LL >= {_PAR_DOT})",
            f"  for (int64_t b = 0; b < {bsz}LL; ++b)",
            f"  for (int64_t ii = 0; ii < {m}LL; ++ii) {{",
            f"    {ct}* __restrict crow = {c} + b * {m * nn}LL + ii * {nn}LL;",
        ]
        if not tb:
            lines += [
                "    #pragma omp simd",
                f"    for (int64_t jj = 0; jj < {nn}LL; ++jj) crow[jj] = 0;",
                f"    for (int64_t t = 0; t < {kk}LL; ++t) {{",
                f"      const {ct} av = {a_el};",
                f"      const {ct}* __restrict brow = {rb_} + b * {kk * nn}LL + t * {nn}LL;",
                "      #pragma omp simd",
                f"      for (int64_t jj = 0; jj < {nn}LL; ++jj) crow[jj] += av * brow[jj];",
                "    }",
            ]
        elif ct == "float" and kk > _SUM_BLOCK:
            # long float32 dot products: blocks in SIMD lanes, the blocks' sums in double (see
            # _cascade_split)
            g = _SUM_BLOCK
            end = f"fx_imin(tb + {g}LL, {kk}LL)" if kk % g else f"tb + {g}LL"
            lines += [
                f"    for (int64_t jj = 0; jj < {nn}LL; ++jj) {{",
                f"      const {ct}* __restrict bcol = {rb_} + b * {kk * nn}LL + jj * {kk}LL;",
                "      double sw = 0;",
                f"      for (int64_t tb = 0; tb < {kk}LL; tb += {g}LL) {{",
                "        float s = 0.0f;",
                "        #pragma omp simd reduction(+:s)",
                f"        for (int64_t t = tb; t < {end}; ++t) s += {a_el} * bcol[t];",
                "        sw += (double)s;",
                "      }",
                "      crow[jj] = (float)sw;",
                "    }",
            ]
        else:
            lines += [
                f"    for (int64_t jj = 0; jj < {nn}LL; ++jj) {{",
                f"      const {ct}* __restrict bcol = {rb_} + b * {kk * nn}LL + jj * {kk}LL;",
                f"      {ct} s = 0;",
                "      #pragma omp simd reduction(+:s)",
                f"      for (int64_t t = 0; t < {kk}LL; ++t) s += {a_el} * bcol[t];",
                "      crow[jj] = s;",
                "    }",
            ]
        return lines + ["  }"]

    def _copy_into(self, dst: str, src: Node, k: Kernel, shape, dtype):
        """Loop writing ``src`` (an expression) into ``dst`` (contiguous)."""
        n = math.prod(shape)
        if n == 0:
            return []
        iv = [sym(f"i{d}") for d in range(len(shape))]
        em = Emitter("    ")
        ctx = KernelCtx(k)
        val = em(src.load(tuple(iv), ctx))
        store = _store(dst, em.offset(flat_offset(iv, shape)), val, dtype)
        lines = [
            f"  #pragma omp parallel for schedule(static) if({n}LL >= {_PAR})",
            f"  for (int64_t flat = 0; flat < {n}LL; ++flat) {{",
        ]
        lines += ["    " + s for s in _decompose([str(v) for v in iv], shape, "flat")]
        lines += em.lines + ["    " + store, "  }"]
        return lines

    def _scatter(self, k: Kernel):
        node = k.nodes[0]
        p = node.params
        x, ind, upd = p["operand"], p["indices"], p["updates"]
        axes, mode, op = p["axes"], p["mode"], p["op"]
        lines = [f"  // kernel {k.index}: {op} into {x.shape}"]
        lines += self._copy_into(node.buf, x, k, x.shape, node.dtype)
        nb = len(ind.shape) - 1
        bshape = ind.shape[:-1]
        rest_axes = [i for i in range(len(x.shape)) if i not in axes]
        rshape = tuple(x.shape[i] for i in rest_axes)
        if math.prod(bshape) == 0 or math.prod(x.shape) == 0:
            self.body += lines
            return
        bv = [sym(f"b{i}") for i in range(nb)]
        rv = [sym(f"q{i}") for i in range(len(rshape))]
        em = Emitter("      ")
        ctx = KernelCtx(k)
        ct = compute_type(x.dtype)
        idx_vals = [
            em(Op(dtypes.int64, "convert", (ind.load(tuple(bv) + (sympy.Integer(c),), ctx),)))
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
        lines += [f"    for (int64_t qflat = 0; qflat < {n_r}LL; ++qflat) {{"]
        lines += ["      " + s for s in _decompose([str(v) for v in rv], rshape, "qflat")]
        lines += em.lines + ["      " + stmt, "    }", "  }"]
        self.body += lines

    def _dus(self, k: Kernel):
        node = k.nodes[0]
        p = node.params
        x, upd, starts = p["operand"], p["update"], p["starts"]
        lines = [f"  // kernel {k.index}: dynamic_update_slice into {x.shape}"]
        lines += self._copy_into(node.buf, x, k, x.shape, node.dtype)
        n = math.prod(upd.shape)
        if n == 0:
            self.body += lines
            return
        em = Emitter("    ")
        ctx = KernelCtx(k)
        st = [
            em(
                Op(
                    dtypes.int64,
                    "clamp",
                    (
                        Op(dtypes.int64, "convert", (s.load((), ctx),)),
                        Const(dtypes.int64, 0),
                        Const(dtypes.int64, d - u),
                    ),
                )
            )
            for s, d, u in zip(starts, x.shape, upd.shape)
        ]
        uv = [sym(f"u{i}") for i in range(len(upd.shape))]
        em2 = Emitter("    ")
        em2.counter = em.counter + 1000  # distinct temporaries from the start-index block
        val = em2(upd.load(tuple(uv), ctx))
        off = (
            " + ".join(f"({s} + {v}) * {stv}LL" for s, v, stv in zip(st, uv, strides_of(x.shape)))
            or "0"
        )
        lines += ["  {"] + em.lines
        lines += [f"  for (int64_t uflat = 0; uflat < {n}LL; ++uflat) {{"]
        lines += ["    " + s for s in _decompose([str(v) for v in uv], upd.shape, "uflat")]
        lines += em2.lines + ["    " + _store(node.buf, off, val, node.dtype), "  }", "  }"]
        self.body += lines

    # --- control flow: sub-programs called in C++ loops -----------------------------------------
    def _sub(self, closed) -> tuple[str, list[str]]:
        """Compile a sub-Jaxpr into a static function of the same calling convention as fx_run;
        returns its name and the parent's names for the sub-program's constants."""
        from functx.lowering.loops import lower_jaxpr
        from functx.lowering.schedule import schedule

        sg = lower_jaxpr(closed)
        sk = schedule(sg)
        self.n_subs = getattr(self, "n_subs", 0) + 1
        name = f"fx_sub{self.n_subs}"
        const_names = []
        for n, arr in sg.consts:
            pn = self.g.add(Node(n.shape, n.dtype, kind="input"))
            pn.buf = f"c{len(self.g.consts)}"
            self.g.consts.append((pn, arr))
            const_names.append(pn.buf)
        # nested sub-programs are appended while this one is generated, so they come first
        self.subs.append(self.function(name, sg, sk, static=True))
        return name, const_names

    def _loop(self, k: Kernel):
        group = k.nodes[0].params["group"]
        getattr(self, "_loop_" + group["type"])(k, group)

    @staticmethod
    def _ptr_list(names):
        return ", ".join(f"(void*)({n})" for n in names) if names else ""

    def _carry_buffers(self, tag, nodes, init_bufs):
        """Two buffers per loop carry (this iteration's and the next's), and their sizes."""
        lines, a_names, b_names, sizes = [], [], [], []
        for m, (n, src) in enumerate(zip(nodes, init_bufs)):
            st = storage_type(n.dtype)
            size = max(n.size, 1)
            a, b = f"{tag}_a{m}", f"{tag}_b{m}"
            lines += [
                f"    {st}* {a} = ({st}*)fx_alloc({size}ULL * sizeof({st}));",
                f"    {st}* {b} = ({st}*)fx_alloc({size}ULL * sizeof({st}));",
                f"    if (!{a} || !{b}) return 1;",
                f"    fx_copy({a}, {src}, {n.size}ULL * sizeof({st}));",
            ]
            a_names.append(a)
            b_names.append(b)
            sizes.append(f"{size}ULL * sizeof({st})")
        return lines, a_names, b_names, sizes

    def _loop_scan(self, k: Kernel, group):
        ins, outs = group["ins"], group["outs"]
        nc, nk, length, reverse = (
            group["num_consts"],
            group["num_carry"],
            group["length"],
            group["reverse"],
        )
        body = group["jaxpr"]
        name, bconsts = self._sub(body)
        consts, carry, xs = ins[:nc], ins[nc : nc + nk], ins[nc + nk :]
        carry_out, ys = outs[:nk], outs[nk:]
        tag = f"s{k.index}"
        lines = [f"  // kernel {k.index}: scan of length {length} calling {name}", "  {"]
        cl, a_names, b_names, sizes = self._carry_buffers(tag, carry_out, [c.buf for c in carry])
        lines += cl
        idx = f"({length - 1}LL - it)" if reverse else "it"
        x_ptrs = [f"{x.buf} + {idx} * {math.prod(x.shape[1:])}LL" for x in xs]
        y_ptrs = [f"{y.buf} + {idx} * {math.prod(y.shape[1:])}LL" for y in ys]
        n_args = nc + nk + len(xs) + len(bconsts) + nk + len(ys)
        lines += [
            f"    for (int64_t it = 0; it < {length}LL; ++it) {{",
            f"      void* sa[{max(n_args, 1)}] = {{"
            + self._ptr_list(
                [c.buf for c in consts] + a_names + x_ptrs + bconsts + b_names + y_ptrs
            )
            + "};",
            f"      if ({name}(sa)) return 1;",
        ]
        lines += [f"      fx::swap({a}, {b});" for a, b in zip(a_names, b_names)]
        lines += ["    }"]
        for n, a in zip(carry_out, a_names):
            lines.append(f"    fx_copy({n.buf}, {a}, {n.size}ULL * sizeof(*{a}));")
        lines += [f"    fx_free({a}, {sz});" for a, sz in zip(a_names + b_names, sizes + sizes)]
        lines += ["  }"]
        self.body += lines

    def _loop_while(self, k: Kernel, group):
        ins, outs = group["ins"], group["outs"]
        ncc, nbc = group["cond_nconsts"], group["body_nconsts"]
        cname, cconsts = self._sub(group["cond_jaxpr"])
        bname, bconsts = self._sub(group["body_jaxpr"])
        cc, bc, carry = ins[:ncc], ins[ncc : ncc + nbc], ins[ncc + nbc :]
        tag = f"w{k.index}"
        lines = [f"  // kernel {k.index}: while_loop calling {cname} and {bname}", "  {"]
        cl, a_names, b_names, sizes = self._carry_buffers(tag, outs, [c.buf for c in carry])
        lines += cl
        lines += [
            f"    bool {tag}_flag = false;",
            "    while (true) {",
            f"      void* ca[{ncc + len(carry) + len(cconsts) + 1}] = {{"
            + self._ptr_list([c.buf for c in cc] + a_names + cconsts + [f"&{tag}_flag"])
            + "};",
            f"      if ({cname}(ca)) return 1;",
            f"      if (!{tag}_flag) break;",
            f"      void* ba[{max(nbc + 2 * len(carry) + len(bconsts), 1)}] = {{"
            + self._ptr_list([c.buf for c in bc] + a_names + bconsts + b_names)
            + "};",
            f"      if ({bname}(ba)) return 1;",
        ]
        lines += [f"      fx::swap({a}, {b});" for a, b in zip(a_names, b_names)]
        lines += ["    }"]
        for n, a in zip(outs, a_names):
            lines.append(f"    fx_copy({n.buf}, {a}, {n.size}ULL * sizeof(*{a}));")
        lines += [f"    fx_free({a}, {sz});" for a, sz in zip(a_names + b_names, sizes + sizes)]
        lines += ["  }"]
        self.body += lines

    def _loop_cond(self, k: Kernel, group):
        ins, outs = group["ins"], group["outs"]
        branches = group["branches"]
        index, ops = ins[0], ins[1:]
        lines = [
            f"  // kernel {k.index}: cond with {len(branches)} branches",
            "  {",
            f"    const int64_t bi = fx_clamp((int64_t){index.buf}[0], 0, {len(branches) - 1}LL);",
        ]
        for b, br in enumerate(branches):
            name, consts = self._sub(br)
            n_args = len(ops) + len(consts) + len(outs)
            lines += [
                f"    if (bi == {b}) {{",
                f"      void* a[{max(n_args, 1)}] = {{"
                + self._ptr_list([o.buf for o in ops] + consts + [o.buf for o in outs])
                + "};",
                f"      if ({name}(a)) return 1;",
                "    }",
            ]
        lines.append("  }")
        self.body += lines

    # --- functions -----------------------------------------------------------------------------
    def function(self, name: str, g: Graph, kernels, static: bool, units: int = 1) -> str:
        """A C++ function ``int name(void** args)`` running ``kernels`` over graph ``g``; args are
        the inputs, the constants and the outputs (named out0, out1, ...), in that order. With
        ``units`` > 1, kernels that can are moved into functions of their own, spread over that
        many translation units (``self.units``; the first is this function's)."""
        saved_body, saved_g = self.body, self.g
        self.body, self.g = [], g
        outs, copies = {}, []
        for i, node in enumerate(g.outputs):
            if node.id in outs or node.kind == "input":
                continue
            outs[node.id] = f"out{i}"
            node.buf = outs[node.id]
        spans = []
        for k in kernels:
            start = len(self.body)
            getattr(self, "_" + k.kind)(k)
            self.body[start:] = _decide_parallel(self.body[start:])
            spans.append((k.index, start, len(self.body)))
        # outputs that are inputs or repeat an earlier output are copied into place
        out_names, seen = [], {}
        for i, node in enumerate(g.outputs):
            nm = f"out{i}"
            out_names.append((nm, node))
        arg_lines, decl = [], set()
        env = []  # (declared type, name) of every buffer, for kernels moved out (see _split)
        pos = 0
        for n in g.inputs:
            st = storage_type(n.dtype)
            arg_lines.append(f"  const {st}* __restrict {n.buf} = (const {st}*)args[{pos}];")
            decl.add(n.buf)
            env.append((f"const {st}*", n.buf))
            pos += 1
        for n, _ in g.consts:
            st = storage_type(n.dtype)
            arg_lines.append(f"  const {st}* __restrict {n.buf} = (const {st}*)args[{pos}];")
            decl.add(n.buf)
            env.append((f"const {st}*", n.buf))
            pos += 1
        for i, node in enumerate(g.outputs):
            st = storage_type(node.dtype)
            if node.kind != "input" and node.buf == f"out{i}" and node.id not in seen:
                arg_lines.append(f"  {st}* __restrict out{i} = ({st}*)args[{pos}];")
                decl.add(f"out{i}")
                env.append((f"{st}*", f"out{i}"))
                seen[node.id] = f"out{i}"
            else:
                arg_lines.append(f"  {st}* out{i}_dst = ({st}*)args[{pos}];")
                copies.append(
                    f"  fx_copy(out{i}_dst, {seen.get(node.id, node.buf)}, "
                    f"{node.size}ULL * sizeof({st}));"
                )
                seen.setdefault(node.id, node.buf)
            pos += 1
        allocs, frees = [], []
        for n in g.nodes:
            if n.buf and n.buf not in decl and not n.buf.startswith("out"):
                decl.add(n.buf)
                st = storage_type(n.dtype)
                allocs.append(
                    f"  {st}* __restrict {n.buf} = ({st}*)fx_alloc("
                    f"{max(n.size, 1)}ULL * sizeof({st}));"
                )
                allocs.append(f"  if (!{n.buf}) return 1;")
                env.append((f"{st}*", n.buf))
                frees.append(f"  fx_free({n.buf}, {max(n.size, 1)}ULL * sizeof({st}));")
        body = self.body
        if units > 1 or len(env) > SPLIT_BUFFERS:
            self._arg_of = {
                m.group(1): int(m.group(2))
                for m in (re.search(r"\b(\w+) = \([^)]*\)args\[(\d+)\];$", ln) for ln in arg_lines)
                if m
            }
            body = self._split(body, spans, env, units)
        self.body, self.g = saved_body, saved_g
        head = (
            f"static int {name}(void** args) {{"
            if static
            else f'extern "C" int {name}(void** args) {{'
        )
        return "\n".join(
            [head] + arg_lines + allocs + body + copies + frees + ["  return 0;", "}", ""]
        )

    def _split(self, body, spans, env, units):
        """Move the kernels of ``body`` that use no main-unit state into functions
        ``fx_k<index>(void** env)`` (``env``: every buffer of the program, in ``env``'s order),
        balanced over ``units`` translation units by source length; returns the new body."""
        movable = [
            (len("\n".join(body[a:b])), i, a, b)
            for i, a, b in spans
            if b > a and not any(w in "\n".join(body[a:b]) for w in _MAIN_ONLY)
        ]
        moved = sum(m[0] for m in movable)
        every = len(env) > SPLIT_BUFFERS  # each kernel a function of its own (see SPLIT_BUFFERS)
        if moved < SPLIT_MIN_CHARS and not every:
            return body
        load = [len("\n".join(body)) - moved] + [0] * (units - 1)
        home = {}
        for size, i, a, b in sorted(movable, reverse=True):
            u = min(range(units), key=lambda u: load[u])
            load[u] += size
            if u or every:
                home[i] = (u, a, b)
        if not home:
            return body
        decls = [f"  {t} __restrict {n} = ({t})fx_env[{j}];" for j, (t, n) in enumerate(env)]
        self.units = [[] for _ in range(units)]
        out, pos = ["  void* fx_env[] = {" + ", ".join(f"(void*){n}" for _, n in env) + "};"], 0
        if every:  # a loop over a table, not thousands of stores (see SPLIT_BUFFERS)
            from_args = [self._arg_of[n] for _, n in env if n in self._arg_of]
            out = [
                f"  static const int32_t fx_env_arg[] = {{{', '.join(map(str, from_args))}}};",
                f"  void* fx_env[{len(env)}];",
                f"  for (int j = 0; j < {len(from_args)}; ++j) fx_env[j] = args[fx_env_arg[j]];",
            ]
            out += [
                f"  fx_env[{j}] = (void*){n};"
                for j, (_, n) in enumerate(env)
                if n not in self._arg_of
            ]
            assert all(n in self._arg_of for _, n in env[: len(from_args)])
        for i, (u, a, b) in sorted(home.items(), key=lambda h: h[1][1]):
            out += body[pos:a] + [f"  if (fx_k{i}(fx_env)) return 1;"]
            # (only the buffers the kernel names: thousands of unused restrict pointers per
            # function cost the compiler seconds)
            used = set(re.findall(r"[A-Za-z_]\w*", "\n".join(body[a:b])))
            mine = [d for d, (_, n) in zip(decls, env) if n in used]
            self.units[u].append(
                "\n".join(
                    [f'extern "C" int fx_k{i}(void** fx_env) {{']
                    + mine
                    + body[a:b]
                    + ["  return 0;", "}", ""]
                )
            )
            if u:
                self.units[0].append(f'extern "C" int fx_k{i}(void** fx_env);')
            pos = b
        return out + body[pos:]

    def sources(self, units: int = 1, header: str | None = None) -> list[str]:
        """The program's translation units: one, or up to ``units`` when its kernels are large
        enough to be worth compiling at the same time (see SPLIT_MIN_CHARS). Each starts with
        the prelude, or with an ``#include`` of ``header`` holding it (``cache.prelude_header``)."""
        self.subs, self.units = [], []
        main = self.function(
            "fx_run", self.g, self.kernels, static=False, units=min(units, UNITS_MAX)
        )
        pre = PRELUDE if header is None else f'#include "{os.path.basename(header)}"\n'
        if not self.units:
            return ["\n".join([pre, MAIN_PRELUDE] + self.subs + [main])]
        others = ["\n".join([pre] + u) for u in self.units[1:] if u]
        return ["\n".join([pre, MAIN_PRELUDE] + self.subs + self.units[0] + [main])] + others

    def source(self) -> str:
        return self.sources()[0]


__all__ = ["CppProgram", "PRELUDE", "storage_type", "compute_type", "Emitter"]
