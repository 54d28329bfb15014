"""Stage 3 of lowering, GPU flavour: Triton source for a scheduled graph.

The same loop IR (``loops.py``) and the same kernels (``schedule.py``) as the C++ backend, printed
as one Python module: a prelude of small ``@triton.jit`` helpers (JAX's semantics for max/min with
NaN, argmax/argmin as value-index pairs, the combines of reductions), one ``@triton.jit`` kernel
per scheduled kernel, each launched through a module-level *launch site* (``_L0 = _fx_site(k0_..,
warps)``: see ``triton_runtime.py``, which loads and runs the module), and a host function
``run(inputs, consts, outputs)`` that launches them in order on contiguous torch tensors
(intermediates are allocated with ``torch.empty`` on the outputs' device).

* ``pointwise``: flat 1-D blocks; the multi-index comes from the flat offset with ``//`` and ``%``;
  the tail is masked.
* ``reduce``: a block of rows per program, in one of three variants chosen by size
  (``reduce_plan``): *persistent*, when a row fits in registers (up to 8192 float32 elements): it
  is loaded once and every pass, the map phase (softmax's output) and the epilogue use it there;
  *looped*, for longer rows: each pass loops over chunks of the row and folds each chunk's
  ``tl.reduce`` into per-row accumulators; a mean/variance pair (a sum, then a sum of squared
  deviations from ``sum / n``) is one Welford pass over shifted values (``_welford``), and a map
  phase that does not read the last pass's results joins that pass's loop; *split*, for a
  single pass with too few blocks of rows to fill the GPU (a full sum, a column sum of a tall
  matrix): partial accumulators over slices of the chunks, then a folding kernel that runs the
  epilogue. Softmax and layer norm are one kernel each, as on the CPU.
* ``ascan`` (lane-wise ``associative_scan``) and ``scan`` (cumsum & co.): ``tl.associative_scan``
  over a chunk of the scan axis (any length: chunks in a loop) with the combine function emitted
  as its own ``@triton.jit`` function; the prefix carried across chunks is the previous chunk's
  *last* element (picked by index, never with a value reduction, which would assume
  commutativity). Reverse scans flip the indices themselves (Triton's ``reverse=`` is not used).
  Along a strided axis a block is 32 neighbouring lanes by a short chunk (``scan_plan``).
* ``greduce`` (``lax.reduce`` with a custom combine): ``tl.reduce`` with the combine emitted as
  a function (XLA's contract: commutative, associative, the init value an identity).
* ``dot``: ``torch.matmul`` on the realised operands (cuBLAS), called from the host function;
  float32 products use TF32 unless the default matmul precision (read when the program is
  generated: ``functx.default_matmul_precision``) is "highest"/"float32", as in JAX.
* ``scatter``: the operand is copied, then one program per block of the update window applies
  the updates *in order* (deterministic, duplicates combine as on the CPU); ``scatter_add`` of
  32/64-bit types uses atomics over (updates x window) blocks instead (``Blocks`` can turn that
  off).
* ``dus``: a copy, then a kernel over the update with the clamped, data-dependent starts.
* ``loop`` (``scan``, ``while_loop``, ``cond``): host Python loops calling sub-programs (their own
  host functions in the same module, nested to any depth); a ``while_loop`` reads its predicate
  back to the host each iteration, a ``cond`` its branch index.

Block sizes and warps come from a small table (``Blocks``, ``reduce_plan``, ``scan_plan``),
chosen from sweeps on an H100 (``benchmarks/gpu.py --sweep``); they are constants of the
generated source, so they are cached with it. An element operation with no Triton counterpart
raises ``UnsupportedError`` naming it.

Element expressions become Triton values with *dependencies*: the block axes they vary along
(``f`` for a pointwise kernel's flat block; ``r``/``j`` for a reduction's rows/inner chunk;
``l``/``s`` for a scan's lanes/positions). A load is masked with the mask of exactly the axes its
offset depends on, so a row-only load in a reduction is a ``[ROWS, 1]`` block, not a broadcast.
Equal expressions share one value (one load, one ``exp``). Constants are Python literals where
Triton types them weakly (next to a tensor operand), and ``tl.full([], v, dtype)`` otherwise (a
bare float literal would be float32). Half-precision values compute in float32 and are rounded to
their type after each operation, as JAX does.

Transcendental functions call ``libdevice`` (CUDA's math library: Triton's own ``tl.exp`` is an
approximate ``ex2``). Under ``TRITON_INTERPRET=1`` Triton cannot run libdevice, so the generated
module binds ``libdevice`` to ``interpreter_libdevice`` below, NumPy stand-ins with the same names.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import NamedTuple

import numpy as np
import sympy

from functx import config, dtypes
from functx.errors import UnsupportedError
from functx.lowering.loops import (
    Acc,
    Const,
    E,
    FloorDiv,
    Graph,
    Guard,
    Idx,
    Load,
    ModI,
    Node,
    Op,
    Sym,
    flat_offset,
    lanewise_exprs,
    reads_in_order,
    strides_of,
    sym,
)
from functx.lowering.schedule import Kernel, KernelCtx
from functx.lowering.triton_runtime import (  # noqa: F401 (re-exported)
    JitExecutable,
    TritonExecutable,
    load_module,
    to_torch,
    torch_dtype_name,
)

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
_ATOMIC_ADD = (
    dtypes.float32,
    dtypes.float64,
    dtypes.int32,
    dtypes.int64,
    dtypes.uint32,
    dtypes.uint64,
)


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


@dataclass(frozen=True)
class Blocks:
    """Block-size limits (powers of two) and code-generation choices: the heuristic table of
    ``reduce_plan``/``scan_plan`` below picks sizes within them. Small limits make tests cover the
    looped variants and multi-chunk scans on tiny shapes."""

    pointwise: int = 1024  # elements per program of a pointwise kernel
    pointwise_warps: int = 4
    reduce_inner: int = 4096  # reduced elements per chunk of a looped reduction
    persistent: int = 8192  # rows of up to this many 32-bit elements stay in registers
    scan: int = 1024  # scan positions per chunk
    elems: int = 4096  # elements per block of a reduction or scan (rows x chunk)
    strided_rows: int = 64  # rows per block when the rows, not the reduced axes, are contiguous
    strided_scan_lanes: int = 32  # lanes per block of a scan along a non-contiguous axis
    min_programs: int = 512  # split single-pass reductions with fewer blocks of rows than this
    atomic_scatter_add: bool = True  # scatter_add with atomics (else in order, deterministic)
    int64_index: bool = False  # index arithmetic in int64 (automatic for 2**31 elements or more)
    welford: bool = True  # looped mean/variance pairs in one pass (Chan's chunked Welford update)
    reduce_warps: int = 0  # warps of a reduction kernel (0: about 16 elements per thread)
    # a pointwise kernel writing at least this many bytes (more than the L2 cache holds) loads
    # the inputs it reuses (broadcast ones, of at most 1/8 of that) with evict_last and stores
    # with evict_first, so that its stream of stores does not push them out of L2: on an H100,
    # the per-sample-gradient outer products went from 3.22 to 3.29 TB/s (0: never)
    stream_bytes: int = 64 << 20


DEFAULT_BLOCKS = Blocks()  # what ``compile_triton`` uses when given no blocks (tests swap it)


def _warps(elems: int) -> int:
    """Warps for a block of ``elems`` elements: about 32 elements per thread, 2 to 16 warps (on
    an H100, 4 warps for rows of 4096 float32 beat 8 and 16: argmax + logsumexp 0.24 ms against
    0.28 and 0.37; layer norm and softmax were the same with 4, 8 or 16)."""
    return max(2, min(16, elems // 1024))


def reduce_plan(contiguous: bool, n_rows: int, n_inner: int, itemsize: int, blocks: Blocks):
    """The block shape of a reduction: ``(rows per block, chunk, warps)``. A row that fits
    ``blocks.persistent`` (32-bit elements; half as many of 64-bit ones) is one chunk, held in
    registers across all the kernel's passes (the *persistent* variant); longer rows loop over
    chunks of ``blocks.reduce_inner`` (the *looped* variant). When the rows, not the reduced
    axes, are contiguous, a block is ``strided_rows`` neighbouring rows by a short chunk so that
    its loads are coalesced."""
    scale = max(1, itemsize // 4)
    if contiguous:
        whole = _next_pow2(max(n_inner, 1))
        if whole <= max(1, blocks.persistent // scale):
            ib = whole
        else:
            ib = max(1, min(blocks.reduce_inner // scale, whole))
        rb = min(_next_pow2(n_rows), max(1, blocks.elems // ib))
    else:
        rb = min(_next_pow2(n_rows), blocks.strided_rows)
        ib = min(_next_pow2(max(n_inner, 1)), blocks.reduce_inner, max(1, blocks.elems // rb))
    return rb, ib, blocks.reduce_warps or _warps(rb * ib)


def scan_plan(n: int, n_lanes: int, strided: bool, blocks: Blocks):
    """The block shape of a scan: ``(lanes per block, chunk of positions, warps)``. Along the
    contiguous axis a chunk is long and a block holds few lanes; along a strided axis a block is
    ``strided_scan_lanes`` neighbouring (coalesced) lanes by a short chunk."""
    if strided:
        lb = min(_next_pow2(n_lanes), blocks.strided_scan_lanes)
        sb = min(_next_pow2(n), blocks.scan, max(1, blocks.elems // 2 // lb))
    else:
        sb = min(_next_pow2(n), blocks.scan)
        lb = min(_next_pow2(n_lanes), max(1, blocks.elems // sb))
    return lb, sb, 8 if lb * sb >= 4096 else 4


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


def _lowest(dt) -> str:
    dt = np.dtype(dt)
    if _is_float(dt):
        return "-float('inf')"
    if dt == dtypes.bool_:
        return "False"
    return str(int(np.iinfo(dt).min))


def _highest(dt) -> str:
    dt = np.dtype(dt)
    if _is_float(dt):
        return "float('inf')"
    if dt == dtypes.bool_:
        return "True"
    return str(int(np.iinfo(dt).max))


# --- index expressions ---------------------------------------------------------------------------
class _SympyPy:
    """Print SymPy index expressions as Triton integer arithmetic (all values are non-negative,
    so Triton's truncating ``//`` and ``%`` are floor division and modulo)."""

    def __init__(self, names: dict, known: dict):
        self.names = names  # symbol name -> variable name in the kernel
        self.known = known  # expanded expression -> variable name (flat offsets)

    def __call__(self, e) -> str:
        e = sympy.sympify(e)
        hit = self.known.get(e)
        if hit is not None:
            return hit
        if e.is_Integer:
            return str(int(e))
        if e.is_Symbol:
            return self.names.get(e.name, e.name)
        if isinstance(e, Guard):
            return self(e.args[1])
        if isinstance(e, FloorDiv):
            return f"({self(e.args[0])} // {self(e.args[1])})"
        if isinstance(e, ModI):
            return f"({self(e.args[0])} % {self(e.args[1])})"
        if e.is_Add:
            return "(" + " + ".join(self(a) for a in e.args) + ")"
        if e.is_Mul:
            return "(" + " * ".join(self(a) for a in e.args) + ")"
        if isinstance(e, (sympy.Max, sympy.Min)):
            fn = "tl.maximum" if isinstance(e, sympy.Max) else "tl.minimum"
            args = [self(a) for a in e.args]
            # a literal first argument is fine as long as one is a tensor; keep tensors first
            args.sort(key=lambda s: s.lstrip("-").isdigit())
            out = args[0]
            for a in args[1:]:
                out = f"{fn}({out}, {a})"
            return out
        raise UnsupportedError(f"jit (Triton): cannot print index expression {e}")


def _decompose(names, shape, flat: str) -> list[str]:
    """Statements binding ``names`` to the multi-index of ``flat`` in ``shape``."""
    out = []
    total = math.prod(shape)
    for v, s, d in zip(names, strides_of(shape), shape):
        expr = flat
        if s != 1:
            expr = f"({expr} // {s})"
        if s * d != total:
            expr = f"({expr} % {d})"
        out.append(f"{v} = {expr}")
    return out


# --- element expressions -------------------------------------------------------------------------
class V(NamedTuple):
    """A printed value: its code, the block axes it varies along, whether it is a bare Python
    literal (weakly typed by Triton), and its IR dtype."""

    code: str
    deps: frozenset
    lit: bool
    dtype: object


_NO = frozenset()

_LIBDEVICE_1 = {
    "exp": "exp",
    "exp2": "exp2",
    "log": "log",
    "log1p": "log1p",
    "expm1": "expm1",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "asin": "asin",
    "acos": "acos",
    "atan": "atan",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "asinh": "asinh",
    "acosh": "acosh",
    "atanh": "atanh",
    "erf": "erf",
    "lgamma": "lgamma",
    "cbrt": "cbrt",
}
_EXACT_IN_HALF = {
    "select",
    "convert",
    "clamp",
    "neg",
    "abs",
    "max",
    "min",
    "floor",
    "ceil",
    "sign",
    "round",
}
_CMP = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


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
        e = sympy.sympify(e)
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
        rounds = dt in _HALF and name not in _EXACT_IN_HALF

        def out(code):
            if rounds:
                code = f"({code}).to({tl_dtype(dt)}).to(tl.float32)"
            return V(code, deps, False, dt)

        if name in ("add", "sub", "mul"):
            if dt == dtypes.bool_:
                op = {"add": "|", "sub": "^", "mul": "&"}[name]
                return out(f"({a[0]} {op} {a[1]})")
            op = {"add": "+", "sub": "-", "mul": "*"}[name]
            return out(f"({a[0]} {op} {a[1]})")
        if name in _CMP:
            return out(f"({a[0]} {_CMP[name]} {a[1]})")
        if name in ("and", "or", "xor"):
            op = {"and": "&", "or": "|", "xor": "^"}[name]
            return out(f"({a[0]} {op} {a[1]})")
        if name == "not":
            return out(f"({t[0]} == 0)" if in_dt == dtypes.bool_ else f"(~{t[0]})")
        if name == "div":
            if fl:
                return out(f"({a[0]} / {a[1]})")
            x, y = t
            if _is_signed(in_dt):
                return out(
                    f"tl.where({y} == 0, -1, tl.where({y} == -1, -{x}, {x} // "
                    f"tl.where(({y} == 0) | ({y} == -1), 1, {y})))"
                )
            return out(f"tl.where({y} == 0, {_highest(in_dt)}, {x} // tl.where({y} == 0, 1, {y}))")
        if name == "rem":
            if fl:
                return out(f"libdevice.fmod({t[0]}, {t[1]})")
            x, y = t
            if _is_signed(in_dt):
                return out(
                    f"tl.where({y} == 0, {x}, tl.where({y} == -1, 0, {x} % "
                    f"tl.where(({y} == 0) | ({y} == -1), 1, {y})))"
                )
            return out(f"tl.where({y} == 0, {x}, {x} % tl.where({y} == 0, 1, {y}))")
        if name == "pow":
            if fl:
                return out(f"libdevice.pow({t[0]}, {t[1]})")
            return out(f"_fx_ipow_{'s' if _is_signed(in_dt) else 'u'}({t[0]}, {t[1]})")
        if name in ("max", "min"):
            if fl:
                return out(f"_fx_f{name}({t[0]}, {t[1]})")
            if dt == dtypes.bool_:
                return out(f"({a[0]} {'|' if name == 'max' else '&'} {a[1]})")
            return out(f"tl.{'maximum' if name == 'max' else 'minimum'}({t[0]}, {t[1]})")
        if name == "atan2":
            return out(f"libdevice.atan2({t[0]}, {t[1]})")
        if name == "nextafter":
            if dt in _HALF:
                raise UnsupportedError("jit (Triton): nextafter of float16/bfloat16")
            return out(f"libdevice.nextafter({t[0]}, {t[1]})")
        if name == "neg":
            return out(f"(-{t[0]})")
        if name == "abs":
            return out(f"tl.abs({t[0]})")
        if name == "sign":
            x = t[0]
            if fl:
                return out(
                    f"tl.where({x} != {x}, {x}, tl.where({x} > 0, 1.0, "
                    f"tl.where({x} < 0, -1.0, {x})))"
                )
            if _is_signed(in_dt):
                return out(f"(({x} > 0).to({ct}) - ({x} < 0).to({ct}))")
            return out(f"({x} > 0).to({ct})")
        if name == "round":
            fn = "nearbyint" if params.get("rounding_method", 1) == 1 else "round"
            return out(f"libdevice.{fn}({t[0]})")
        if name in ("sqrt", "rsqrt"):
            # IEEE-rounded (tl.sqrt is approximate in float32; float64's is exact)
            root = f"tl.sqrt_rn({t[0]})" if ct == "tl.float32" else f"tl.sqrt({t[0]})"
            return out(root if name == "sqrt" else f"(1.0 / {root})")
        if name == "logistic":
            x = t[0]
            ex = self.temp(f"libdevice.exp(-tl.abs({x}))")
            return out(f"tl.where({x} >= 0, 1.0 / (1.0 + {ex}), {ex} / (1.0 + {ex}))")
        if name == "is_finite":
            x = t[0]
            return out(f"(({x} == {x}) & (tl.abs({x}) != float('inf')))")
        if name in ("floor", "ceil"):
            return out(f"tl.{name}({t[0]})")
        if name in _LIBDEVICE_1:
            return out(f"libdevice.{_LIBDEVICE_1[name]}({t[0]})")
        if name == "integer_pow":
            return out(self._ipow(t[0], params["y"], dt))
        if name == "select":
            c = t[0]
            if vs[1].lit and vs[2].lit:
                return out(f"tl.where({c}, {t[1]}, {t[2]})")
            return out(f"tl.where({c}, {vs[1].code}, {vs[2].code})")
        if name == "convert":
            return out(self._convert(t[0], in_dt, dt))
        if name == "clamp":
            return out(f"tl.minimum(tl.maximum({t[0]}, {a[1]}), {a[2]})")
        raise UnsupportedError(f"jit (Triton): no Triton for elementwise op '{name}'")

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


# --- the prelude of every generated module -------------------------------------------------------
PRELUDE = '''\
import os

import torch
import triton
import triton.language as tl

if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
    from functx.lowering.triton import interpreter_libdevice as libdevice
else:
    from triton.language.extra import libdevice

from functx.lowering.triton_runtime import matmul as _fx_matmul
from functx.lowering.triton_runtime import site as _fx_site


@triton.jit
def _fx_fmax(a, b):
    # JAX's max: NaN wins, max(-0, +0) = +0
    r = tl.where(a > b, a, b)
    r = tl.where((a == b) & (a == 0), a + b, r)
    return tl.where(a != a, a, r)


@triton.jit
def _fx_fmin(a, b):
    r = tl.where(a < b, a, b)
    r = tl.where((a == b) & (a == 0), -((-a) + (-b)), r)
    return tl.where(a != a, a, r)


# (reductions use tl.reduce with these combines rather than tl.sum & co., which are functions
# of Triton's standard library that its interpreter cannot run unless TRITON_INTERPRET was set
# before triton was first imported; on a GPU both compile to the same code)
@triton.jit
def _fx_add(a, b):
    return a + b


@triton.jit
def _fx_mul(a, b):
    return a * b


@triton.jit
def _fx_imax(a, b):
    return tl.maximum(a, b)


@triton.jit
def _fx_imin(a, b):
    return tl.minimum(a, b)


@triton.jit
def _fx_and(a, b):
    return a & b


@triton.jit
def _fx_or(a, b):
    return a | b


@triton.jit
def _fx_argmax(va, ia, vb, ib):
    # first occurrence of the maximum; NaN counts as the maximum
    an = va != va
    bn = vb != vb
    take_a = (va > vb) | (an & (bn == 0)) | (((va == vb) | (an & bn)) & (ia < ib))
    return tl.where(take_a, va, vb), tl.where(take_a, ia, ib)


@triton.jit
def _fx_argmin(va, ia, vb, ib):
    an = va != va
    bn = vb != vb
    take_a = (va < vb) | (an & (bn == 0)) | (((va == vb) | (an & bn)) & (ia < ib))
    return tl.where(take_a, va, vb), tl.where(take_a, ia, ib)


@triton.jit
def _fx_ipow_s(a, b):
    r = a * 0 + 1
    base = a
    e = tl.where(b < 0, 0, b)
    for _ in tl.static_range(64):
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = e >> 1
    neg = tl.where(a == 1, 1, tl.where(a == -1, tl.where((b % 2) == 0, 1, -1), 0))
    return tl.where(b < 0, neg, r)


@triton.jit
def _fx_ipow_u(a, b):
    r = a * 0 + 1
    base = a
    e = b
    for _ in tl.static_range(64):
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = e >> 1
    return r


def _fx_dot(a, b, out, bsz, m, k, n, ta, tb, tf32):
    """out[b] = op(a[b]) @ op(b[b]) on flat buffers (cuBLAS through torch on a GPU; float32
    products in TF32 where ``tf32``, the default matmul precision, says so)."""
    a, b = a.reshape(-1)[:bsz * m * k], b.reshape(-1)[:bsz * k * n]
    out = out.view(-1)[:bsz * m * n]
    A = a.view(bsz, k, m).transpose(1, 2) if ta else a.view(bsz, m, k)
    B = b.view(bsz, n, k).transpose(1, 2) if tb else b.view(bsz, k, n)
    O = out.view(bsz, m, n)
    if k == 0:
        O.zero_()
        return
    if A.dtype != O.dtype:
        A, B = A.to(O.dtype), B.to(O.dtype)
    if O.dtype.is_floating_point or O.device.type == "cpu":
        _fx_matmul(A, B, O, tf32)
    else:  # no integer GEMM on the GPU: an exact (wrapping) multiply and sum
        O.copy_((A.unsqueeze(-1) * B.unsqueeze(1)).sum(2).to(O.dtype))
'''


# --- the program ---------------------------------------------------------------------------------
class TritonProgram:
    """Triton source for one scheduled graph: ``TritonProgram(graph, kernels).source()``."""

    def __init__(
        self,
        graph: Graph,
        kernels: list[Kernel],
        blocks: Blocks | None = None,
        *,
        parent: TritonProgram | None = None,
        prefix: str = "",
    ):
        self.g = graph
        self.kernels = kernels
        self.root = parent.root if parent is not None else self
        self.blocks = blocks or (parent.blocks if parent is not None else DEFAULT_BLOCKS)
        self.prefix = prefix  # of kernel names (sub-programs of control flow)
        self.host: list[str] = []  # the body of this program's host function
        self.aliases: set = set()  # buffers that name another one (see _same_elements)
        if parent is None:
            self.n_sites = 0  # launch sites of the module
            self.defs: list[str] = []  # kernels and helpers, shared by all sub-programs
            self.helpers: set = set()
            self.subs: list[str] = []  # host functions of sub-programs
        else:
            self.defs, self.helpers, self.subs = self.root.defs, self.root.helpers, self.root.subs
        self.big = self.blocks.int64_index or any(n.size >= 2**31 - 1 for n in graph.nodes)

    # --- utilities -----------------------------------------------------------------------------
    def _kname(self, k: Kernel, what: str) -> str:
        return f"{self.prefix}k{k.index}_{what}"

    def _pid(self) -> str:
        return "tl.program_id(0).to(tl.int64)" if self.big else "tl.program_id(0)"

    def _launch(self, name, grid, bufs, num_warps=4):
        """A launch of kernel ``name`` through a launch site (``triton_runtime.site``): a
        module-level object that, once Triton has compiled the kernel, calls the compiled
        kernel's launcher directly."""
        g = [str(grid)] if isinstance(grid, int) else [x.strip() for x in grid.split(",")]
        g += ["1"] * (2 - len(g))
        root = self.root
        site = f"_L{root.n_sites}"
        root.n_sites += 1
        self.defs.append(f"{site} = _fx_site({name}, {num_warps})\n")
        self.host.append(f"    {site}({g[0]}, {g[1]}, {', '.join(bufs)})")

    def _define(self, name, bufs, body: list[str], comment: str):
        self.defs.append(
            "\n".join(["@triton.jit", f"def {name}({', '.join(bufs)}):", f"    # {comment}"] + body)
            + "\n"
        )

    @staticmethod
    def _store(buf: str, ptr_off: str, v: V, dt, mask: str | None, hint: str = "") -> str:
        val = Emitter.tensor(v)
        if np.dtype(dt) in _HALF:
            val = f"{val}.to({tl_dtype(dt)})"
        m = f", mask={mask}" if mask else ""
        return f"tl.store({buf} + {ptr_off}, {val}{m}{hint})"

    def _reused_inputs(self, n: int, stores) -> set:
        """The buffers a pointwise kernel over ``n`` elements writing ``stores`` should keep in
        L2 (see ``Blocks.stream_bytes``): smaller than the iteration, so read many times."""
        limit = self.blocks.stream_bytes
        written = sum(n * np.dtype(dt).itemsize for _, dt, _ in stores)
        if not limit or written < limit:
            return set()
        return {
            nd.buf
            for nd in self.g.nodes
            if nd.buf and nd.size < n and nd.size * np.dtype(nd.dtype).itemsize <= limit // 8
        }

    @staticmethod
    def _ordered(*groups) -> list[str]:
        out: dict = {}
        for g in groups:
            for b in g:
                out[b] = None
        return list(out)

    # --- kernels -------------------------------------------------------------------------------
    def _pointwise(self, k: Kernel):
        src = self._same_elements(k)
        if src is not None:  # a copy of another buffer in the same order: that buffer will do
            node = k.nodes[0]
            self.aliases.add(node.buf)
            self.host.append(
                f"    {node.buf} = {src}  # kernel {k.index}: {k.shape}, the "
                f"elements of {src} in order (no copy)"
            )
            return
        self._flat_kernel(
            self._kname(k, "pointwise"),
            k,
            k.shape,
            [(nd.buf, nd.dtype, nd.fn) for nd in k.nodes],
            f"pointwise {k.shape}",
        )

    def _same_elements(self, k: Kernel) -> str | None:
        """The buffer a pointwise kernel copies element for element (a reshape or an added unit
        axis realised for a matrix product), when its result is a temporary: the program can
        read that buffer instead. Buffers are written once, by the kernel computing them, so
        the source keeps its values."""
        if len(k.nodes) != 1:
            return None
        node = k.nodes[0]
        if node.fn is None or any(node is o for o in self.g.outputs):
            return None
        ivars = tuple(sym(f"i{d}") for d in range(len(k.shape)))
        e = node.fn(ivars, KernelCtx(k))
        if not reads_in_order(e, ivars, k.shape) or np.dtype(e.dtype) != np.dtype(node.dtype):
            return None
        src = next((n for n in self.g.nodes if n.buf == e.buf), None)
        if src is None or src.size != node.size or np.dtype(src.dtype) != np.dtype(node.dtype):
            return None
        return e.buf

    def _flat_kernel(self, name, k: Kernel, shape, stores, comment):
        """A kernel over the flat elements of ``shape`` storing each ``(buf, dtype, fn)`` with
        ``fn(index, ctx)`` the element expression."""
        n = math.prod(shape)
        if n == 0:
            return
        block = min(_next_pow2(n), self.blocks.pointwise)
        ivars = [sym(f"i{d}") for d in range(len(shape))]
        counter = itertools.count()
        known = {sympy.expand(flat_offset(ivars, shape)): "flat"} if shape else {}
        em = Emitter("    ", counter, {v.name: "f" for v in ivars}, {frozenset("f"): "mask"}, known)
        em.keep_in_cache = self._reused_inputs(n, stores)
        ctx = KernelCtx(k)
        body = [
            f"    flat = {self._pid()} * {block} + tl.arange(0, {block})",
            f"    mask = flat < {n}",
        ]
        body += ["    " + s for s in _decompose([v.name for v in ivars], shape, "flat")]
        values = [(buf, dt, em(fn(tuple(ivars), ctx))) for buf, dt, fn in stores]
        hint = ', eviction_policy="evict_first"' if em.kept else ""
        body += em.lines + [
            "    " + self._store(buf, "flat", v, dt, "mask", hint) for buf, dt, v in values
        ]
        bufs = self._ordered(em.bufs, [b for b, _, _ in stores])
        self._define(name, bufs, body, comment)
        self._launch(
            name, -(-n // block), bufs, max(1, min(self.blocks.pointwise_warps, block // 128))
        )

    def _copy(self, k: Kernel, src, dst: str, dt, what: str):
        self._flat_kernel(
            self._kname(k, "copy"),
            k,
            src.shape,
            [(dst, dt, lambda idx, ctx: src.load(idx, ctx))],
            f"{what}: copy of the operand",
        )

    def _dus(self, k: Kernel):
        node = k.nodes[0]
        p = node.params
        x, upd, starts = p["operand"], p["update"], p["starts"]
        self._copy(k, x, node.buf, node.dtype, f"dynamic_update_slice into {x.shape}")
        if upd.size == 0:
            return

        def fn(idx, ctx):
            off = Const(dtypes.int64, 0)
            for s, d, u, v, st in zip(starts, x.shape, upd.shape, idx, strides_of(x.shape)):
                c = Op(
                    dtypes.int64,
                    "clamp",
                    (
                        Op(dtypes.int64, "convert", (s.load((), ctx),)),
                        Const(dtypes.int64, 0),
                        Const(dtypes.int64, d - u),
                    ),
                )
                pos = Op(dtypes.int64, "add", (c, Idx(dtypes.int64, v)))
                off = Op(
                    dtypes.int64,
                    "add",
                    (off, Op(dtypes.int64, "mul", (pos, Const(dtypes.int64, st)))),
                )
            return off

        # a flat kernel over the update: its "value" is the destination offset; the store is
        # written by hand below
        n = upd.size
        block = min(_next_pow2(n), self.blocks.pointwise)
        uvars = [sym(f"i{d}") for d in range(len(upd.shape))]
        em = Emitter(
            "    ",
            itertools.count(),
            {v.name: "f" for v in uvars},
            {frozenset("f"): "mask"},
            {sympy.expand(flat_offset(uvars, upd.shape)): "flat"} if upd.shape else {},
        )
        ctx = KernelCtx(k)
        off = em(fn(tuple(uvars), ctx))
        val = em(upd.load(tuple(uvars), ctx))
        body = [
            f"    flat = {self._pid()} * {block} + tl.arange(0, {block})",
            f"    mask = flat < {n}",
        ]
        body += ["    " + s for s in _decompose([v.name for v in uvars], upd.shape, "flat")]
        body += em.lines
        o = off.code if "f" in off.deps else f"{off.code} + flat * 0"
        body.append("    " + self._store(node.buf, o, val, node.dtype, "mask"))
        name = self._kname(k, "dus")
        bufs = self._ordered(em.bufs, [node.buf])
        self._define(name, bufs, body, f"dynamic_update_slice of {upd.shape} into {x.shape}")
        self._launch(name, -(-n // block), bufs)

    def _scatter(self, k: Kernel):
        """Deterministic scatters: the operand is copied, then one program per block of the
        update window walks the updates in order (what the C++ backend does), so duplicate
        indices combine (or, for plain scatter, the last one wins) exactly as on the CPU."""
        node = k.nodes[0]
        p = node.params
        x, ind, upd = p["operand"], p["indices"], p["updates"]
        axes, mode, op = p["axes"], p["mode"], p["op"]
        self._copy(k, x, node.buf, node.dtype, f"{op} into {x.shape}")
        nb = len(ind.shape) - 1
        bshape = ind.shape[:-1]
        rest_axes = [i for i in range(len(x.shape)) if i not in axes]
        rshape = tuple(x.shape[i] for i in rest_axes)
        n_b, n_r = math.prod(bshape), math.prod(rshape)
        if n_b == 0 or n_r == 0 or x.size == 0:
            return
        if (
            op == "scatter_add"
            and self.blocks.atomic_scatter_add
            and np.dtype(x.dtype) in _ATOMIC_ADD
        ):
            return self._scatter_add_atomic(
                k, node, x, ind, upd, axes, mode, bshape, rshape, rest_axes
            )
        qb = min(_next_pow2(n_r), self.blocks.pointwise)
        bv = [sym(f"b{i}") for i in range(nb)]
        qv = [sym(f"q{i}") for i in range(len(rshape))]
        tags = {v.name: "b" for v in bv} | {v.name: "q" for v in qv}
        masks = {frozenset("b"): None, frozenset("q"): "qmask", frozenset("bq"): "qmask"}
        em = Emitter("        ", itertools.count(), tags, masks)
        u, conds, off = self._scatter_target(k, em, x, ind, upd, axes, mode, bv, qv, rest_axes)
        # (a scalar condition selects the block mask: the interpreter mishandles bool & bool
        # of a scalar and a block)
        m = f"tl.where({' & '.join(f'({c})' for c in conds)}, qmask, False)" if conds else "qmask"
        cur = f"tl.load({node.buf} + off, mask={m}, other=0)"
        if np.dtype(x.dtype) in _HALF:
            cur = f"{cur}.to(tl.float32)"
        uu = Emitter.tensor(u)
        fl = _is_float(x.dtype)
        new = {
            "scatter": uu,
            "scatter_add": f"cur + {uu}",
            "scatter_mul": f"cur * {uu}",
            "scatter_min": f"_fx_fmin(cur, {uu})" if fl else f"tl.minimum(cur, {uu})",
            "scatter_max": f"_fx_fmax(cur, {uu})" if fl else f"tl.maximum(cur, {uu})",
        }[op]
        if np.dtype(x.dtype) == dtypes.bool_ and op in ("scatter_add", "scatter_max"):
            new = f"cur | {uu}"
        elif np.dtype(x.dtype) == dtypes.bool_ and op in ("scatter_mul", "scatter_min"):
            new = f"cur & {uu}"
        body = [
            f"    qflat = {self._pid()} * {qb} + tl.arange(0, {qb})",
            f"    qmask = qflat < {n_r}",
        ]
        body += ["    " + s for s in _decompose([v.name for v in qv], rshape, "qflat")]
        body += [f"    for bflat in range({n_b}):"]
        body += ["        " + s for s in _decompose([v.name for v in bv], bshape, "bflat")]
        body += em.lines
        body += [f"        off = {off} + qflat * 0"]
        if op != "scatter":
            body.append(f"        cur = {cur}")
        body.append(
            "        "
            + self._store(node.buf, "off", V(new, frozenset("q"), False, x.dtype), x.dtype, m)
        )
        name = self._kname(k, "scatter")
        bufs = self._ordered(em.bufs, [node.buf])
        self._define(name, bufs, body, f"{op} of {upd.shape} into {x.shape} (updates in order)")
        self._launch(name, -(-n_r // qb), bufs)

    @staticmethod
    def _scatter_target(k, em, x, ind, upd, axes, mode, bv, qv, rest_axes):
        """The update value, the in-bounds conditions (mode "fill"/"drop") and the flat offset
        into ``x`` of a scatter's element (batch ``bv``, window ``qv``)."""
        ctx = KernelCtx(k)
        idx_vals = [
            em(Op(dtypes.int64, "convert", (ind.load(tuple(bv) + (sympy.Integer(c),), ctx),)))
            for c in range(len(axes))
        ]
        u = em(upd.load(tuple(bv) + tuple(qv), ctx))
        conds, full = [], {}
        for a, iv_ in zip(axes, idx_vals):
            d = x.shape[a]
            if mode == "clip":
                full[a] = f"tl.minimum(tl.maximum({iv_.code}, 0), {d - 1})"
            else:
                conds.append(f"({iv_.code} >= 0) & ({iv_.code} < {d})")
                full[a] = iv_.code
        for a, v in zip(rest_axes, qv):
            full[a] = v.name
        off = " + ".join(
            f"({full[a]}) * {st}" for a, st in zip(range(len(x.shape)), strides_of(x.shape))
        )
        return u, conds, off

    def _scatter_add_atomic(self, k, node, x, ind, upd, axes, mode, bshape, rshape, rest_axes):
        """scatter_add with atomics: blocks of (updates x window) in parallel (the order in
        which duplicates are summed is not fixed, as with JAX on a GPU)."""
        n_b, n_r = math.prod(bshape), math.prod(rshape)
        qb = min(_next_pow2(n_r), 128)
        bb = min(_next_pow2(n_b), max(1, self.blocks.elems // qb))
        bv = [sym(f"b{i}") for i in range(len(bshape))]
        qv = [sym(f"q{i}") for i in range(len(rshape))]
        tags = {v.name: "b" for v in bv} | {v.name: "q" for v in qv}
        masks = {frozenset("b"): "bmask", frozenset("q"): "qmask", frozenset("bq"): "mask"}
        em = Emitter("    ", itertools.count(), tags, masks)
        u, conds, off = self._scatter_target(k, em, x, ind, upd, axes, mode, bv, qv, rest_axes)
        body = [
            f"    bflat = {self._pid()} * {bb} + tl.arange(0, {bb})[:, None]",
            f"    bmask = bflat < {n_b}",
            f"    qflat = tl.program_id(1) * {qb} + tl.arange(0, {qb})[None, :]",
            f"    qmask = qflat < {n_r}",
            "    mask = bmask & qmask",
        ]
        body += ["    " + st for st in _decompose([v.name for v in bv], bshape, "bflat")]
        body += ["    " + st for st in _decompose([v.name for v in qv], rshape, "qflat")]
        body += em.lines
        m = "mask"
        if conds:
            body.append(f"    ok = tl.where({' & '.join(f'({c})' for c in conds)}, mask, False)")
            m = "ok"
        body.append(
            f"    tl.atomic_add({node.buf} + ({off}) + bflat * 0 + qflat * 0, "
            f"{Emitter.tensor(u)}, mask={m})"
        )
        name = self._kname(k, "scatter_add")
        bufs = self._ordered(em.bufs, [node.buf])
        self._define(name, bufs, body, f"scatter_add of {upd.shape} into {x.shape} (atomics)")
        self._launch(name, f"{-(-n_b // bb)}, {-(-n_r // qb)}", bufs)

    def _greduce(self, k: Kernel):
        """functx.lax.reduce with a custom combine: ``tl.reduce`` over chunks with the combine
        emitted as a function (XLA's reduce assumes a commutative, associative combine whose
        init value is an identity, so masked lanes hold the init value)."""
        group = k.nodes[0].params["group"]
        ops, inits, outs, axes = group["ops"], group["inits"], group["outs"], group["axes"]
        shape = ops[0].shape
        rows = tuple(d for i, d in enumerate(shape) if i not in axes)
        inner = tuple(shape[i] for i in axes)
        n_rows, n_inner = math.prod(rows), math.prod(inner)
        if n_rows == 0:
            return
        n = len(ops)
        cname = self._combine_fn(
            k,
            [o.dtype for o in ops],
            [],
            lambda cs, a, b: lanewise_exprs(group["computation"], a + b),
        )
        ib = min(_next_pow2(max(n_inner, 1)), self.blocks.reduce_inner)
        rb = min(_next_pow2(n_rows), max(1, self.blocks.elems // ib))
        rv = [sym(f"r{i}") for i in range(len(rows))]
        iv = [sym(f"j{i}") for i in range(len(inner))]
        it_r, it_i = iter(rv), iter(iv)
        full = tuple(next(it_i) if i in axes else next(it_r) for i in range(len(shape)))
        counter = itertools.count()
        tags = {v.name: "r" for v in rv} | {v.name: "j" for v in iv}
        masks = {frozenset("r"): "rmask", frozenset("j"): "jmask", frozenset("rj"): "mask"}
        ctx = KernelCtx(k)
        em0 = Emitter("    ", counter, tags, masks)
        init_v = [em0(i.load((), ctx)) for i in inits]
        body = [
            f"    rflat = {self._pid()} * {rb} + tl.arange(0, {rb})[:, None]",
            f"    rmask = rflat < {n_rows}",
        ]
        body += ["    " + s for s in _decompose([v.name for v in rv], rows, "rflat")]
        body += em0.lines
        accs = [f"acc{m}" for m in range(n)]
        for a, v in zip(accs, init_v):
            body.append(f"    {a} = tl.broadcast_to({Emitter.tensor(v)}, [{rb}, 1])")
        bufs_read = dict(em0.bufs)

        def chunk(indent, start):
            em = Emitter(indent, counter, tags, masks)
            cur = [em(o.load(full, ctx)) for o in ops]
            lines = [
                f"{indent}jflat = {start} + tl.arange(0, {ib})[None, :]",
                f"{indent}jmask = jflat < {n_inner}",
                f"{indent}mask = rmask & jmask",
            ]
            lines += [indent + s for s in _decompose([v.name for v in iv], inner, "jflat")]
            lines += em.lines
            cs = [f"g{m}_{next(counter)}" for m in range(n)]
            for c, v, iv_ in zip(cs, cur, init_v):
                lines.append(
                    f"{indent}{c} = tl.where(mask, {Emitter.tensor(v)}, {Emitter.tensor(iv_)})"
                )
            rs = [c + "r" for c in cs]
            if n == 1:
                lines += [
                    f"{indent}{rs[0]} = tl.reduce({cs[0]}, 1, {cname}, keep_dims=True)",
                    f"{indent}acc0 = {cname}(acc0, {rs[0]})",
                ]
            else:
                lines += [
                    f"{indent}{', '.join(rs)} = tl.reduce(({', '.join(cs)}), 1, {cname}, "
                    "keep_dims=True)",
                    f"{indent}{', '.join(accs)} = {cname}({', '.join(accs + rs)})",
                ]
            bufs_read.update(em.bufs)
            return lines

        if n_inner > 0:
            if n_inner <= ib:
                body += chunk("    ", "0")
            else:
                body += [f"    for jstart in range(0, {n_inner}, {ib}):"]
                body += chunk("        ", "jstart")
        for a, o in zip(accs, outs):
            if o.buf:
                body.append(
                    "    "
                    + self._store(
                        o.buf, "rflat", V(a, frozenset("r"), False, o.dtype), o.dtype, "rmask"
                    )
                )
        name = self._kname(k, "greduce")
        bufs = self._ordered(bufs_read, [o.buf for o in outs if o.buf])
        self._define(name, bufs, body, f"reduce (custom combine) over axes {axes} of {shape}")
        self._launch(name, -(-n_rows // rb), bufs)

    def _welford(self, k: Kernel, passes: list, n_inner: int):
        """Merge mean/variance pairs into one pass: a later pass's ``reduce_sum`` of
        ``(A - s / n) ** 2`` (or ``d * d``), with ``s`` an earlier pass's ``reduce_sum`` of ``A``
        over the ``n`` reduced elements, is the second moment Welford's update gives in the same
        pass as ``s``. A pass merges into the one before it when all its reductions pair so.
        Returns the new passes and ``{id of the squared sum: the sum it pairs with}``."""
        ctx = KernelCtx(k, k.row_vars())
        full = k.full_index()
        keys = Emitter("", itertools.count(), {}, {})

        def same(a, b):
            try:
                return keys._skey(a) == keys._skey(b)
            except TypeError:
                return False

        def operand(r):
            return r.params["operand"].load(full, ctx)

        def args_of(e):
            return [a for a in e.args if not isinstance(a, tuple)], dict(
                a for a in e.args if isinstance(a, tuple)
            )

        def square_base(e):
            if isinstance(e, Op):
                a, params = args_of(e)
                if e.name == "integer_pow" and params.get("y") == 2:
                    return a[0]
                if e.name == "mul" and len(a) == 2 and same(a[0], a[1]):
                    return a[0]
            return None

        def is_mean(e, r0):
            if not isinstance(e, Op) or e.name not in ("div", "mul"):
                return False
            a, _ = args_of(e)
            if len(a) != 2:
                return False
            pairs = [(a[0], a[1])] if e.name == "div" else [(a[0], a[1]), (a[1], a[0])]
            for x, c in pairs:
                if isinstance(x, Acc) and x.node == r0.id and isinstance(c, Const):
                    v = float(c.value)
                    if (e.name == "div" and v == n_inner) or (
                        e.name == "mul" and abs(v * n_inner - 1.0) < 1e-6
                    ):
                        return True
            return False

        def sums(p):
            return [
                r
                for r in p
                if r.params["op"] == "reduce_sum"
                and _is_float(r.params["operand"].dtype)
                and _is_float(r.dtype)
            ]

        out, pairs = [list(passes[0])], {}
        for p in passes[1:]:
            prev = out[-1]
            found = {}
            for r1 in p:
                d = square_base(operand(r1)) if r1 in sums(p) else None
                if d is None or not isinstance(d, Op) or d.name != "sub":
                    break
                x, y = args_of(d)[0]
                for r0 in sums(prev):
                    if r0.id in pairs or r0.id in pairs.values() or r0.id in found.values():
                        continue
                    a0 = operand(r0)
                    if np.dtype(r0.params["operand"].dtype) != np.dtype(r1.dtype):
                        continue
                    if (same(x, a0) and is_mean(y, r0)) or (same(y, a0) and is_mean(x, r0)):
                        found[r1.id] = r0.id
                        break
                else:
                    break
            if found and len(found) == len(p):
                prev.extend(p)
                pairs.update(found)
            else:
                out.append(list(p))
        return out, pairs

    def _reduce(self, k: Kernel):
        """Rows x chunks of the reduced elements, in one of three variants (``reduce_plan``
        picks the block shape):

        * persistent (a row is one chunk): the row is loaded once and every pass, the map phase
          and the epilogue use it from registers;
        * looped: each pass loops over the chunks; a mean/variance pair is one Welford pass
          (``_welford``); a map phase that does not read the last pass's results joins that
          pass's loop;
        * split: a single-pass kernel with too few blocks of rows to fill the GPU writes partial
          accumulators over slices of the chunks, and a second kernel folds them and runs the
          epilogue.
        """
        rows, inner = k.row_shape, k.inner_shape
        n_rows, n_inner = math.prod(rows), math.prod(inner)
        if n_rows == 0:
            return
        rv, iv, full = k.row_vars(), k.inner_vars(), k.full_index()
        nd = len(k.shape)
        contiguous = k.axes == tuple(range(nd - len(k.axes), nd)) or n_rows == 1
        itemsize = max(np.dtype(r.params["operand"].dtype).itemsize for p in k.passes for r in p)
        rb, ib, warps = reduce_plan(contiguous, n_rows, n_inner, itemsize, self.blocks)
        n_chunks = max(1, -(-n_inner // ib))
        persistent = n_chunks == 1
        row_progs = -(-n_rows // rb)
        passes, pairs = [list(p) for p in k.passes], {}
        if not persistent and self.blocks.welford and len(passes) > 1:
            passes, pairs = self._welford(k, passes, n_inner)
        partner = {v: s for s, v in pairs.items()}  # the sum -> its squared-deviation sum
        ids_of = [{r.id for r in p} for p in passes]
        # which of this kernel's reductions the map phase reads
        probe = KernelCtx(k, rv)
        for m in k.maps:
            m.fn(full, probe)
        maps_join_last = bool(k.maps) and not (probe.accs & ids_of[-1])
        split, per_split = 1, n_chunks
        if (
            len(passes) == 1
            and not pairs
            and (not k.maps or maps_join_last)
            and n_chunks > 1
            and row_progs < self.blocks.min_programs
        ):
            split = min(n_chunks, -(-self.blocks.min_programs // row_progs))
            per_split = -(-n_chunks // split)
            split = -(-n_chunks // per_split)
        counter = itertools.count()
        tags = {v.name: "r" for v in rv} | {v.name: "j" for v in iv}
        masks = {frozenset("r"): "rmask", frozenset("j"): "jmask", frozenset("rj"): "mask"}
        known = {sympy.expand(flat_offset(rv, rows)): "rflat"} if rows else {}
        if inner:
            known[sympy.expand(flat_offset(iv, inner))] = "jflat"
        acc: dict = {}  # (node id, 0) -> V of the row's final value
        ems: list = []  # the emitters of the kernel being written (for the buffers they read)
        idx_t = "tl.int64" if self.big else "tl.int32"
        idx_past = 2**63 - 1 if self.big else 2**31 - 1  # the index of masked lanes

        def emitter(indent):
            em = Emitter(indent, counter, tags, masks, known)
            em.acc = acc
            ems.append(em)
            return em

        def reads():
            out: dict = {}
            for em in ems:
                out.update(em.bufs)
            return out

        def ptr(off: V, want) -> str:
            """An offset broadcast over the block axes ``want`` (for stores)."""
            code = off.code
            if "r" in want and "r" not in off.deps:
                code = f"{code} + rzero"
            if "j" in want and "j" not in off.deps:
                code = f"{code} + jzero"
            return code

        def head(pid):
            return [
                f"    rflat = {pid} * {rb} + tl.arange(0, {rb})[:, None]",
                f"    rmask = rflat < {n_rows}",
                "    rzero = rflat * 0",
            ] + ["    " + s for s in _decompose([v.name for v in rv], rows, "rflat")]

        def chunk_head(indent, start):
            return [
                f"{indent}jflat = {start} + tl.arange(0, {ib})[None, :]",
                f"{indent}jmask = jflat < {n_inner}",
                f"{indent}mask = rmask & jmask",
                f"{indent}jzero = jflat * 0",
            ] + [indent + s for s in _decompose([v.name for v in iv], inner, "jflat")]

        def over_inner(make_body):
            """Lines running ``make_body(indent)`` for each chunk of the reduced elements."""
            if n_inner == 0:
                return []
            if n_inner <= ib:
                return chunk_head("    ", "0") + make_body("    ")
            return (
                [f"    for jstart in range(0, {n_inner}, {ib}):"]
                + chunk_head("        ", "jstart")
                + make_body("        ")
            )

        # one spec per reduction: its accumulator(s), identity, dtype and final value
        specs = []
        for p in passes:
            for r in p:
                op = r.params["op"]
                xdt = np.dtype(r.params["operand"].dtype)
                is_bool = xdt == dtypes.bool_
                a = f"a{r.id}"
                rdt = "tl.int32" if is_bool else tl_compute(xdt)
                if op in ("argmax", "argmin"):
                    # masked lanes hold the identity; their indices are past every real one
                    if is_bool:
                        ident = "0" if op == "argmax" else "1"
                    else:
                        ident = _lowest(xdt) if op == "argmax" else _highest(xdt)
                    final = f"    {a}_out = {a}_i.to({tl_compute(r.dtype)})"
                    acc[(r.id, 0)] = V(f"{a}_out", frozenset("r"), False, r.dtype)
                else:
                    ident = {
                        "reduce_sum": "0",
                        "reduce_prod": "1",
                        "reduce_max": "0" if is_bool else _lowest(xdt),
                        "reduce_min": "1" if is_bool else _highest(xdt),
                        "reduce_and": "1"
                        if is_bool
                        else ("-1" if _is_signed(xdt) else _highest(xdt)),
                        "reduce_or": "0",
                    }[op]
                    final = f"    {a}_out = {a} != 0" if is_bool else None
                    acc[(r.id, 0)] = V(f"{a}_out" if is_bool else a, frozenset("r"), False, r.dtype)
                # each chunk's tl.reduce is a tree; the running sum of the chunks' sums must
                # not add an error that grows with the row's length: a float32 sum carries a
                # Kahan compensation across chunks (float32 work, as fast as the plain sum on
                # an H100, where a float64 carry cost 13% on a 2**28 sum), and a Welford pair
                # keeps its running mean in float64
                wide = op == "reduce_sum" and rdt == "tl.float32"
                welford = r.id in partner or r.id in pairs
                if r.id in partner:  # the sum, from the running mean of shifted values
                    final = f"    {a} = ((w{r.id} + wk{r.id}) * {n_inner}).to({rdt})"
                elif wide and welford:  # the second moment, kept in float64
                    final = f"    {a} = {a}.to({rdt})"
                specs.append(
                    SimpleNamespace(
                        r=r,
                        op=op,
                        a=a,
                        ident=ident,
                        rdt=rdt,
                        final=final,
                        arg=op in ("argmax", "argmin"),
                        acc_t="tl.float64" if wide and welford else rdt,
                        kahan=wide and not welford,
                        fl=_is_float(xdt),
                        bool=is_bool,
                    )
                )
        spec_of = {s.r.id: s for s in specs}

        def inits(ss):
            out = []
            for s in ss:
                out.append(f"    {s.a} = tl.full([{rb}, 1], {s.ident}, {s.acc_t})")
                if s.arg:
                    out.append(f"    {s.a}_i = tl.full([{rb}, 1], {idx_past}, {idx_t})")
                if s.r.id in partner:
                    out.append(f"    w{s.r.id} = tl.full([{rb}, 1], 0, {s.acc_t})")
                if s.kahan:
                    out.append(f"    {s.a}_c = tl.full([{rb}, 1], 0, tl.float32)")
            return out

        def fold(indent, s, c, idx):
            """Fold the block ``c`` (masked lanes hold the identity; ``idx``: their element
            indices, for argmax/argmin) into the accumulators of ``s``."""
            a = s.a
            if s.arg:
                return [
                    f"{indent}{c}v, {c}i = tl.reduce(({c}, {idx}), 1, _fx_{s.op}, keep_dims=True)",
                    f"{indent}{a}, {a}_i = _fx_{s.op}({a}, {a}_i, {c}v, {c}i)",
                ]
            fn = {
                "reduce_sum": "_fx_add",
                "reduce_prod": "_fx_mul",
                "reduce_max": "_fx_fmax" if s.fl else "_fx_imax",
                "reduce_min": "_fx_fmin" if s.fl else "_fx_imin",
                "reduce_and": "_fx_and",
                "reduce_or": "_fx_or",
            }[s.op]
            red = f"tl.reduce({c}, 1, {fn}, keep_dims=True)"
            if s.kahan:  # a compensated running sum of the chunks' sums
                return [
                    f"{indent}{a}_y = {red} - {a}_c",
                    f"{indent}{a}_t = {a} + {a}_y",
                    # (no compensation once the sum is infinite: inf - inf is NaN)
                    f"{indent}{a}_c = tl.where({a}_t - {a}_t == 0, ({a}_t - {a}) - {a}_y, 0.0)",
                    f"{indent}{a} = {a}_t",
                ]
            if s.acc_t != s.rdt:
                red = f"{red}.to({s.acc_t})"
            comb = {
                "reduce_sum": "{a} + {s}",
                "reduce_prod": "{a} * {s}",
                "reduce_max": "_fx_fmax({a}, {s})" if s.fl else "tl.maximum({a}, {s})",
                "reduce_min": "_fx_fmin({a}, {s})" if s.fl else "tl.minimum({a}, {s})",
                "reduce_and": "{a} & {s}",
                "reduce_or": "{a} | {s}",
            }[s.op]
            return [f"{indent}{a} = ({comb.format(a=a, s=red)}).to({s.acc_t})"]

        def welford_shift(red_nodes):
            """Before a Welford pass: each pair's shift, its operand at the row's first reduced
            element. The pass works on shifted values, which keeps the chunk means small and
            exact (a float32 mean of values near 1000 would carry errors that Chan's update
            turns into first-order errors of the variance)."""
            em = emitter("    ")
            ctx = KernelCtx(k, rv)
            first = tuple(sympy.Integer(0) if i in k.axes else v for i, v in enumerate(full))
            lines = []
            for r in red_nodes:
                if r.id in partner:
                    v = em(r.params["operand"].load(first, ctx))
                    lines.append(
                        f"    wk{r.id} = tl.broadcast_to({em.tensor(v)}, [{rb}, 1])"
                        f".to({spec_of[r.id].rdt})"
                    )
            return em.flush() + lines

        def welford_fold(indent, s, val):
            """Chan's update of (running mean, second moment) of the shifted values with this
            chunk's own pair."""
            i, t = s.r.id, s.rdt
            m2 = spec_of[partner[i]].a
            return [
                f"{indent}wv{i} = {val} - wk{i}",
                f"{indent}wc{i} = tl.where(mask, wv{i}, 0)",
                f"{indent}wold{i} = tl.full([{rb}, 1], 0, {t}) + jstart",
                f"{indent}wn{i} = tl.minimum({n_inner} - wold{i}, {ib})",
                f"{indent}wm{i} = tl.reduce(wc{i}, 1, _fx_add, keep_dims=True) / wn{i}",
                f"{indent}wd{i} = tl.where(mask, wv{i} - wm{i}, 0)",
                f"{indent}wq{i} = tl.reduce(wd{i} * wd{i}, 1, _fx_add, keep_dims=True)",
                f"{indent}wdel{i} = wm{i} - w{i}",
                f"{indent}wtot{i} = wold{i} + wn{i}",
                f"{indent}w{i} = w{i} + wdel{i} * (wn{i} / wtot{i})",
                f"{indent}{m2} = {m2} + wq{i} + wdel{i} * wdel{i} * (wold{i} * wn{i} / wtot{i})",
            ]

        def updates(em, ctx, red_nodes, indent):
            """The statements folding one chunk into the accumulators of ``red_nodes``."""
            ups = []
            for r in red_nodes:
                s = spec_of[r.id]
                if r.id in pairs:
                    continue  # folded with its sum
                val = em.tensor(em(r.params["operand"].load(full, ctx)))
                if r.id in partner:
                    ups += welford_fold(indent, s, val)
                    continue
                if s.bool:
                    val = f"{val}.to(tl.int32)"
                c = f"c{r.id}_{next(counter)}"
                ups.append(f"{indent}{c} = tl.where(mask, {val}, {s.ident})")
                ups += fold(indent, s, c, f"tl.broadcast_to(jflat, [{rb}, {ib}])")
            return em.flush() + ups

        def map_stores(em, ctx, indent):
            lines = []
            for m in k.maps:
                v = em(m.fn(full, ctx))
                off = em.index(flat_offset(full, k.shape))
                lines.append(indent + self._store(m.buf, ptr(off, "rj"), v, m.dtype, "mask"))
            return em.flush() + lines

        def epilogue(em, ctx):
            lines = []
            for m in k.epilogue:
                v = em(m.fn(rv, ctx))
                lines.append("    " + self._store(m.buf, "rflat", v, m.dtype, "rmask"))
            return em.flush() + lines

        def stores():
            return [
                "    " + self._store(s.r.buf, "rflat", acc[(s.r.id, 0)], s.r.dtype, "rmask")
                for s in specs
            ]

        ops = [[r.params["op"] for r in p] for p in k.passes]
        variant = "persistent" if persistent else "looped"
        if pairs:
            variant += f", {len(pairs)} Welford pair(s)"
        what = (
            f"reduce axes {k.axes} of {k.shape}: passes {ops}, {len(k.maps)} map, "
            f"{len(k.epilogue)} epilogue; {rb} rows x {ib} ({variant})"
        )
        name = self._kname(k, "reduce")
        stored = [s.r.buf for s in specs] + [m.buf for m in k.maps] + [m.buf for m in k.epilogue]

        if split == 1:
            body = head(self._pid())
            if persistent:
                # one chunk: a single emitter, so every pass and the map phase share the loads
                if n_inner:
                    body += chunk_head("    ", "0")
                em, ctx = emitter("    "), KernelCtx(k, rv)
                for p in passes:
                    body += inits([spec_of[r.id] for r in p])
                    if n_inner:
                        body += updates(em, ctx, p, "    ")
                    body += [spec_of[r.id].final for r in p if spec_of[r.id].final]
                if k.maps and n_inner:
                    body += map_stores(em, ctx, "    ")
            else:
                n_passes = len(passes)
                for pi, p in enumerate(passes):
                    body += inits([spec_of[r.id] for r in p]) + welford_shift(p)

                    def make(indent, p=p, last=pi == n_passes - 1):
                        em, ctx = emitter(indent), KernelCtx(k, rv)
                        lines = updates(em, ctx, p, indent)
                        if last and maps_join_last:
                            lines += map_stores(em, ctx, indent)
                        return lines

                    body += over_inner(make)
                    body += [spec_of[r.id].final for r in p if spec_of[r.id].final]
                if k.maps and not maps_join_last:
                    body += over_inner(
                        lambda indent: map_stores(emitter(indent), KernelCtx(k, rv), indent)
                    )
            body += stores()
            body += epilogue(emitter("    "), KernelCtx(k, rv))
            bufs = self._ordered(reads(), stored)
            self._define(name, bufs, body, what)
            self._launch(name, row_progs, bufs, warps)
            return

        # split: partial accumulators, [row, split] in buffers of their own
        parts = []
        for s in specs:  # (a compensated sum hands on its partial in float64)
            parts.append((f"p{s.r.id}", "tl.float64" if s.kahan else s.acc_t))
            if s.arg:
                parts.append((f"p{s.r.id}_i", idx_t))
        for pn, dt in parts:
            self.host.append(
                f"    {pn} = torch.empty({n_rows * split}, dtype=torch.{dt[3:]}, device=dev)"
            )
        body = head(self._pid()) + ["    sp = tl.program_id(1)"] + inits(specs)
        body += [
            f"    for jc in range({per_split}):",
            f"        jstart = (sp * {per_split} + jc) * {ib}",
        ]
        em, ctx = emitter("        "), KernelCtx(k, rv)
        body += chunk_head("        ", "jstart") + updates(em, ctx, passes[0], "        ")
        if k.maps:
            body += map_stores(em, ctx, "        ")
        for s in specs:
            val = f"{s.a}.to(tl.float64) - {s.a}_c.to(tl.float64)" if s.kahan else s.a
            body.append(f"    tl.store(p{s.r.id} + rflat * {split} + sp, {val}, mask=rmask)")
            if s.arg:
                body.append(
                    f"    tl.store(p{s.r.id}_i + rflat * {split} + sp, {s.a}_i, mask=rmask)"
                )
        map_bufs = [m.buf for m in k.maps]
        bufs = self._ordered(reads(), [pn for pn, _ in parts], map_bufs)
        self._define(
            name + "_part",
            bufs,
            body,
            f"{what}; partials over {split} splits of {per_split} chunks",
        )
        self._launch(name + "_part", f"{row_progs}, {split}", bufs, warps)
        ems.clear()
        sp2 = _next_pow2(split)
        # the partials of a compensated sum fold in float64 (no loop here, so no carry)
        specs = [
            SimpleNamespace(
                **{
                    **vars(s),
                    "kahan": False,
                    "acc_t": "tl.float64",
                    "final": f"    {s.a} = {s.a}.to({s.rdt})",
                }
            )
            if s.kahan
            else s
            for s in specs
        ]
        body = head(self._pid()) + inits(specs)
        body += [
            f"    sidx = tl.arange(0, {sp2})[None, :]",
            "    pmask = rmask & (sidx < {})".format(split),
        ]
        for s in specs:
            c = f"c{s.r.id}"
            body.append(
                f"    {c} = tl.load(p{s.r.id} + rflat * {split} + sidx, mask=pmask, "
                f"other={s.ident})"
            )
            idx = None
            if s.arg:
                idx = f"{c}_i"
                body.append(
                    f"    {idx} = tl.load(p{s.r.id}_i + rflat * {split} + sidx, "
                    f"mask=pmask, other={idx_past})"
                )
            body += fold("    ", s, c, idx)
        body += [s.final for s in specs if s.final]
        body += stores()
        body += epilogue(emitter("    "), KernelCtx(k, rv))
        rest = [s.r.buf for s in specs] + [m.buf for m in k.epilogue]
        bufs = self._ordered([pn for pn, _ in parts], reads(), rest)
        self._define(name, bufs, body, f"{what}; folds {split} partials")
        self._launch(name, row_progs, bufs, 4)

    # --- scans ---------------------------------------------------------------------------------
    def _pick_last(self, n: int) -> str:
        """A helper reducing (v_1..v_n, index) tuples to the entry with the largest index."""
        name = f"_fx_last{n}"
        if name not in self.helpers:
            self.helpers.add(name)
            a = [f"a{i}" for i in range(n)]
            b = [f"b{i}" for i in range(n)]
            rets = [f"tl.where(t, {y}, {x})" for x, y in zip(a, b)] + ["tl.where(t, ib, ia)"]
            self.defs.append(
                "\n".join(
                    [
                        "@triton.jit",
                        f"def {name}({', '.join(a + ['ia'] + b + ['ib'])}):",
                        "    t = ib > ia",
                        f"    return {', '.join(rets)}",
                    ]
                )
                + "\n"
            )
        return name

    def _combine_fn(self, k: Kernel, xdts, cdts, build) -> str:
        """A ``@triton.jit`` combine ``(a..., ac..., b..., bc...) -> (new..., ac...)`` from
        ``build(const_syms, a_syms, b_syms) -> [E]`` (constants ride along as operands)."""
        name = f"_fx_comb_{self.prefix}{k.index}"
        ce = Emitter("    ", itertools.count(), {}, {})
        a_syms = [Sym(dt, f"a{i}") for i, dt in enumerate(xdts)]
        b_syms = [Sym(dt, f"b{i}") for i, dt in enumerate(xdts)]
        c_syms = [Sym(dt, f"ac{i}") for i, dt in enumerate(cdts)]
        for sy in a_syms + b_syms + c_syms:
            ce.syms[sy.name] = V(sy.name, frozenset("s"), False, sy.dtype)
        new = [ce(e) for e in build(c_syms, a_syms, b_syms)]
        params = (
            [sy.name for sy in a_syms]
            + [sy.name for sy in c_syms]
            + [sy.name for sy in b_syms]
            + [f"bc{i}" for i in range(len(cdts))]
        )
        rets = [Emitter.tensor(v) for v in new] + [sy.name for sy in c_syms]
        self.defs.append(
            "\n".join(
                ["@triton.jit", f"def {name}({', '.join(params)}):"]
                + ce.lines
                + [f"    return {', '.join(rets)}"]
            )
            + "\n"
        )
        return name

    def _scan_kernel(self, k: Kernel, xs, consts, outs, axis, reverse, combine, what: str):
        """A scan of ``xs`` along ``axis`` with ``combine(const_syms, acc_syms, cur_syms) -> [E]``
        (lane-wise), chunked along the axis with a carried prefix."""
        shape = xs[0].shape
        n = shape[axis]
        pre, post = shape[:axis], shape[axis + 1 :]
        n_pre, n_post = math.prod(pre), math.prod(post)
        n_lanes = n_pre * n_post
        if n == 0 or n_lanes == 0:
            return
        lb, sb, warps = scan_plan(n, n_lanes, n_post > 1, self.blocks)
        counter = itertools.count()
        pv = [sym(f"p{i}") for i in range(len(pre))]
        qv = [sym(f"q{i}") for i in range(len(post))]
        j = sym("j")
        full = tuple(pv) + (j,) + tuple(qv)
        lanes_e = tuple(pv) + tuple(qv)
        tags = {v.name: "l" for v in pv + qv} | {"j": "s"}
        masks = {frozenset("l"): "lmask", frozenset("s"): "smask", frozenset("ls"): "mask"}
        nx, nc = len(xs), len(consts)
        m_all = nx + nc

        cname = self._combine_fn(k, [x.dtype for x in xs], [c.dtype for c in consts], combine)
        last = self._pick_last(m_all)

        body = [
            f"    lflat = {self._pid()} * {lb} + tl.arange(0, {lb})[:, None]",
            f"    lmask = lflat < {n_lanes}",
        ]
        if pre:
            body.append(f"    pflat = lflat // {n_post}")
            body += ["    " + s for s in _decompose([v.name for v in pv], pre, "pflat")]
        if post:
            body.append(f"    qflat = lflat % {n_post}")
            body += ["    " + s for s in _decompose([v.name for v in qv], post, "qflat")]
        all_bufs: dict = {}
        ctx = KernelCtx(k)
        em0 = Emitter("    ", counter, tags, masks)
        cvals = [em0(c.load(lanes_e if c.shape else (), ctx)) for c in consts]
        body += em0.lines
        all_bufs.update(em0.bufs)
        cbs = []
        for i, v in enumerate(cvals):
            body.append(f"    cb{i} = tl.broadcast_to({Emitter.tensor(v)}, [{lb}, {sb}])")
            cbs.append(f"cb{i}")

        def chunk(indent, start, first):
            lines = [
                f"{indent}s = {start} + tl.arange(0, {sb})[None, :]",
                f"{indent}smask = s < {n}",
                f"{indent}mask = lmask & smask",
                f"{indent}j = {n - 1} - s" if reverse else f"{indent}j = s",
            ]
            em = Emitter(indent, counter, tags, masks)
            cur = [em(x.load(full, ctx)) for x in xs]
            lines += em.flush()
            all_bufs.update(em.bufs)
            ys = [f"y{i}" for i in range(m_all)]
            xb = [f"tl.broadcast_to({Emitter.tensor(v)}, [{lb}, {sb}])" for v in cur] + cbs
            if m_all == 1:
                lines.append(f"{indent}y0 = tl.associative_scan({xb[0]}, 1, {cname})")
            else:
                lines.append(
                    f"{indent}{', '.join(ys)} = tl.associative_scan(({', '.join(xb)}), 1, {cname})"
                )
            carries = [f"carry{i}" for i in range(m_all)]
            if not first:
                # prefix of the earlier chunks: combine(carry, y) (the carry is the left operand)
                lhs = ", ".join(ys) if m_all > 1 else "y0"
                lines.append(f"{indent}{lhs} = {cname}({', '.join(carries)}, {', '.join(ys)})")
            off = em.index(flat_offset(full, shape))
            for i, o in enumerate(outs):
                if o.buf:
                    lines.append(
                        indent
                        + self._store(
                            o.buf,
                            off.code,
                            V(ys[i], frozenset("ls"), False, o.dtype),
                            o.dtype,
                            "mask",
                        )
                    )
            if k.epilogue:  # pointwise nodes at these positions, reading ys (schedule.py)
                # (the chunk's emitter: a load of the scan's own operands is not repeated)
                em.acc.update(
                    {
                        (o.id, 0): V(ys[i], frozenset("ls"), False, o.dtype)
                        for i, o in enumerate(outs)
                    }
                )
                ectx = KernelCtx(k, full)
                for e in k.epilogue:
                    v = em(e.fn(full, ectx))
                    lines += em.flush()
                    lines.append(indent + self._store(e.buf, off.code, v, e.dtype, "mask"))
                all_bufs.update(em.bufs)
            if n > sb:
                lines.append(
                    f"{indent}{', '.join(carries)}, _ = tl.reduce(({', '.join(ys)}, "
                    f"tl.where(mask, s, -1)), 1, {last}, keep_dims=True)"
                )
            return lines

        body += chunk("    ", "0", True)
        if n > sb:
            body.append(f"    for sstart in range({sb}, {n}, {sb}):")
            body += chunk("        ", "sstart", False)
        name = self._kname(k, "scan")
        stored = [o.buf for o in outs if o.buf] + [e.buf for e in k.epilogue]
        bufs = self._ordered(all_bufs, stored)
        self._define(
            name,
            bufs,
            body,
            f"{what} along axis {axis} of {shape}"
            f"{' (reverse)' if reverse else ''}; {lb} lanes x {sb}",
        )
        self._launch(name, -(-n_lanes // lb), bufs, warps)

    def _ascan(self, k: Kernel):
        group = k.nodes[0].params["group"]

        def combine(cs, accs, curs):
            return lanewise_exprs(group["combine"], list(cs) + list(accs) + list(curs))

        self._scan_kernel(
            k,
            group["xs"],
            group["consts"],
            group["outs"],
            group["axis"],
            group["reverse"],
            combine,
            "associative_scan",
        )

    def _scan(self, k: Kernel):
        node = k.nodes[0]
        op = node.params["op"]
        x = node.params["operands"][0]
        dt = x.dtype

        def combine(cs, accs, curs):
            a, b = accs[0], curs[0]
            if op == "cumsum":
                return [Op(dt, "add", (a, b))]
            if op == "cumprod":
                return [Op(dt, "mul", (a, b))]
            if op in ("cummax", "cummin"):
                return [Op(dt, "max" if op == "cummax" else "min", (a, b))]
            m = Op(dt, "max", (a, b))
            d = Op(dt, "sub", (a, b))
            soft = Op(
                dt,
                "add",
                (m, Op(dt, "log1p", (Op(dt, "exp", (Op(dt, "neg", (Op(dt, "abs", (d,)),)),)),))),
            )
            return [Op(dt, "select", (Op(dtypes.bool_, "ne", (d, d)), Op(dt, "add", (a, b)), soft))]

        self._scan_kernel(
            k, [x], [], [node], node.params["axis"], node.params["reverse"], combine, op
        )

    # --- matrix products (host) ----------------------------------------------------------------
    def _dot(self, k: Kernel):
        node = k.nodes[0]
        p = node.params
        lhs, rhs = p["lhs"], p["rhs"]
        if node.size == 0:
            return
        # the product's own precision=, else the default (see functx.default_matmul_precision)
        tf32 = (p.get("precision") or config.matmul_precision()) != "float32"
        self.host.append(
            f"    _fx_dot({lhs.buf}, {rhs.buf}, {node.buf}, {p['batch']}, {p['m']}, "
            f"{p['k']}, {p['n']}, {p['lhs_trans']}, {p['rhs_trans']}, {tf32})"
            f"  # kernel {k.index}: dot_general {lhs.shape} x {rhs.shape}"
        )

    # --- control flow: host loops over sub-programs -----------------------------------------------
    def _sub(self, closed) -> tuple[str, list[str]]:
        """A host function ``_subN(inputs, consts, outputs)`` for a sub-Jaxpr (its kernels join
        the module); returns its name and this program's names for its constants."""
        from functx.lowering.loops import lower_jaxpr
        from functx.lowering.schedule import schedule

        sg = lower_jaxpr(closed)
        sk = schedule(sg)
        name = f"_sub{len(self.subs)}"
        self.subs.append("")  # reserve the name (nested sub-programs come first)
        index = len(self.subs) - 1
        child = TritonProgram(sg, sk, parent=self, prefix=f"s{index}_")
        self.subs[index] = child.function(name)  # may add constants of nested programs
        const_names = []
        for n, arr in sg.consts:
            pn = self.g.add(Node(n.shape, n.dtype, kind="input"))
            pn.buf = f"c{len(self.g.consts)}"
            self.g.consts.append((pn, arr))
            const_names.append(pn.buf)
        return name, const_names

    def _loop(self, k: Kernel):
        group = k.nodes[0].params["group"]
        getattr(self, "_loop_" + group["type"])(k, group)

    @staticmethod
    def _view(n) -> str:
        """A flat view of ``n``'s buffer (arguments and outputs arrive shaped)."""
        return f"{n.buf}.view(-1)[:{n.size}]"

    def _carries(self, tag, inits):
        a = [f"{tag}a{m}" for m in range(len(inits))]
        b = [f"{tag}b{m}" for m in range(len(inits))]
        lines = [f"    {x} = {self._view(n)}.clone()" for x, n in zip(a, inits)]
        lines += [f"    {y} = torch.empty_like({x})" for x, y in zip(a, b)]
        return lines, a, b

    def _loop_scan(self, k: Kernel, group):
        ins, outs = group["ins"], group["outs"]
        nc, nk, length = group["num_consts"], group["num_carry"], group["length"]
        name, bconsts = self._sub(group["jaxpr"])
        consts, carry, xs = ins[:nc], ins[nc : nc + nk], ins[nc + nk :]
        carry_out, ys = outs[:nk], outs[nk:]
        tag = f"L{k.index}"
        lines, a, b = self._carries(tag, carry)
        i = f"({length - 1} - it)" if group["reverse"] else "it"

        def at(n):
            sz = math.prod(n.shape[1:])
            return f"{n.buf}.view(-1)[{i} * {sz}:({i} + 1) * {sz}]"

        args = [self._view(c) for c in consts] + a + [at(x) for x in xs]
        res = b + [at(y) for y in ys]
        lines += [
            f"    for it in range({length}):",
            f"        {name}([{', '.join(args)}], [{', '.join(bconsts)}], [{', '.join(res)}])",
        ]
        if a:
            lines.append(f"        {', '.join(a + b)} = {', '.join(b + a)}")
        lines += [f"    {self._view(n)}.copy_({x})" for n, x in zip(carry_out, a)]
        self.host += [f"    # kernel {k.index}: scan of length {length} calling {name}"] + lines

    def _loop_while(self, k: Kernel, group):
        ins, outs = group["ins"], group["outs"]
        ncc, nbc = group["cond_nconsts"], group["body_nconsts"]
        cname, cconsts = self._sub(group["cond_jaxpr"])
        bname, bconsts = self._sub(group["body_jaxpr"])
        cc, bc, carry = ins[:ncc], ins[ncc : ncc + nbc], ins[ncc + nbc :]
        tag = f"W{k.index}"
        lines, a, b = self._carries(tag, carry)
        lines += [
            f"    {tag}flag = torch.empty(1, dtype=torch.bool, device=dev)",
            "    while True:",
            f"        {cname}([{', '.join([self._view(c) for c in cc] + a)}], "
            f"[{', '.join(cconsts)}], [{tag}flag])",
            f"        if not bool({tag}flag.item()):",
            "            break",
            f"        {bname}([{', '.join([self._view(c) for c in bc] + a)}], "
            f"[{', '.join(bconsts)}], [{', '.join(b)}])",
        ]
        if a:
            lines.append(f"        {', '.join(a + b)} = {', '.join(b + a)}")
        lines += [f"    {self._view(n)}.copy_({x})" for n, x in zip(outs, a)]
        self.host += [
            f"    # kernel {k.index}: while_loop calling {cname} and {bname} "
            "(the condition is read on the host each iteration)"
        ] + lines

    def _loop_cond(self, k: Kernel, group):
        ins, outs = group["ins"], group["outs"]
        branches = group["branches"]
        index, ops = ins[0], ins[1:]
        tag = f"C{k.index}"
        lines = [
            f"    # kernel {k.index}: cond with {len(branches)} branches",
            f"    {tag} = min(max(int({index.buf}.view(-1)[0].item()), 0), {len(branches) - 1})",
        ]
        for bi, br in enumerate(branches):
            name, consts = self._sub(br)
            lines += [
                f"    {'if' if bi == 0 else 'elif'} {tag} == {bi}:",
                f"        {name}([{', '.join(self._view(o) for o in ops)}], "
                f"[{', '.join(consts)}], [{', '.join(self._view(o) for o in outs)}])",
            ]
        self.host += lines

    # --- the module ----------------------------------------------------------------------------
    def function(self, name: str) -> str:
        """Emit this program's kernels and return its host function ``name(inputs, consts,
        outputs)`` on flat, contiguous torch tensors (outputs preallocated)."""
        g = self.g
        outs: dict = {}
        for i, node in enumerate(g.outputs):
            if node.id in outs or node.kind == "input":
                continue
            outs[node.id] = f"out{i}"
            node.buf = outs[node.id]
        for k in self.kernels:
            getattr(self, "_" + k.kind)(k)
        head = [f"def {name}(inputs, consts, outputs):"]
        names = [n.buf for n in g.inputs]
        if names:
            head.append(f"    {', '.join(names)}, = inputs")
        if g.consts:
            head.append(f"    {', '.join(n.buf for n, _ in g.consts)}, = consts")
        out_names = [f"out{i}" for i in range(len(g.outputs))]
        if out_names:
            head.append(f"    {', '.join(out_names)}, = outputs")
        declared = set(names) | {n.buf for n, _ in g.consts} | set(out_names)
        allocs = []
        declared |= self.aliases
        for n in g.nodes:
            if n.buf and n.buf not in declared:
                declared.add(n.buf)
                allocs.append(
                    f"    {n.buf} = torch.empty({max(n.size, 1)}, "
                    f"dtype=torch.{torch_dtype_name(n.dtype)}, device=dev)"
                )
        copies = []
        for i, node in enumerate(g.outputs):
            if node.buf != f"out{i}":
                copies.append(
                    f"    out{i}.view(-1)[:{node.size}].copy_({node.buf}.view(-1)[:{node.size}])"
                )
        body = allocs + self.host + copies
        if any("device=dev" in ln for ln in body):  # (only where used: each line costs)
            head.append("    dev = out0.device" if out_names else "    dev = None")
        return "\n".join(head + body + ["    return outputs"]) + "\n"

    def source(self) -> str:
        """The whole module: the prelude, the kernels, the sub-programs and ``run``."""
        self.defs.clear()
        self.helpers.clear()
        self.subs.clear()
        self.n_sites = 0
        self.host = []
        self.aliases = set()
        main = self.function("run")
        return "\n".join(
            [PRELUDE]
            + ["\n" + d for d in self.defs]
            + ["\n" + f for f in self.subs]
            + ["\n" + main]
        )


# --- NumPy stand-ins for libdevice under TRITON_INTERPRET=1 ------------------------------------
def _round_half_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= 0.5, t + np.sign(x), t)


def _lgamma(x):
    def one(v):
        try:
            return math.lgamma(v)
        except ValueError:
            return math.inf

    return np.vectorize(one, otypes=[np.float64])(x)


_NP_LIBDEVICE = {
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "cbrt": np.cbrt,
    "sqrt": np.sqrt,
    "erf": np.vectorize(math.erf, otypes=[np.float64]),
    "lgamma": _lgamma,
    "pow": np.power,
    "fmod": np.fmod,
    "atan2": np.arctan2,
    "nextafter": np.nextafter,
    "nearbyint": np.rint,
    "rint": np.rint,
    "round": _round_half_away,
    "trunc": np.trunc,
}


class _InterpreterLibdevice:
    """``libdevice.<fn>`` for Triton's interpreter (which cannot call CUDA's library): NumPy on
    the interpreter's tensors, with the result in the first argument's dtype."""

    def __getattr__(self, name):
        fn = _NP_LIBDEVICE.get(name)
        if fn is None:
            raise AttributeError(f"libdevice.{name} has no interpreter stand-in")
        return functools.partial(self._call, fn)

    @staticmethod
    def _call(fn, *args):
        import triton.language as tl
        from triton.runtime.interpreter import TensorHandle

        ref = next(a for a in args if isinstance(a, tl.tensor))
        data = [a.handle.data if isinstance(a, tl.tensor) else a for a in args]
        shapes = [
            list(a.type.shape) for a in args if isinstance(a, tl.tensor) and a.type.is_block()
        ]
        np_dt = ref.handle.data.dtype
        with np.errstate(all="ignore"):
            out = np.asarray(fn(*data)).astype(np_dt)
        if shapes:
            shape = list(np.broadcast_shapes(*[tuple(s) for s in shapes]))
            out = np.broadcast_to(out, shape).copy()
            return tl.tensor(
                TensorHandle(out, ref.dtype.scalar), tl.block_type(ref.dtype.scalar, shape)
            )
        return tl.tensor(
            TensorHandle(out.reshape(-1)[:1].copy(), ref.dtype.scalar), ref.dtype.scalar
        )


interpreter_libdevice = _InterpreterLibdevice()


def compile_triton(closed, blocks: Blocks | None = None) -> TritonExecutable:
    """Lower, schedule and generate Triton for ``closed`` (a ClosedJaxpr), and load the module.

    Arguments:
      closed: the program (``functx.make_jaxpr(f)(*args)``, simplified or not).
      blocks: block-size limits (defaults suit a GPU; tests use small ones).
    Returns:
      A ``TritonExecutable`` (``triton_runtime.py``): call it with the flat arguments to get
      torch tensors; ``.as_text()`` shows the kernels and the generated source.
    Example:
      >>> exe = compile_triton(functx.make_jaxpr(lambda x: functx.numpy.tanh(x) * 2.0)(x))
      >>> (y,) = exe(x)
    """
    from functx.lowering import loops, schedule

    g = loops.lower_jaxpr(closed)
    kernels = schedule.schedule(g)
    prog = TritonProgram(g, kernels, blocks)
    src = prog.source()
    return TritonExecutable(g, kernels, src, schedule.describe(kernels))


__all__ = [
    "TritonProgram",
    "TritonExecutable",
    "JitExecutable",
    "Blocks",
    "compile_triton",
    "reduce_plan",
    "scan_plan",
    "PRELUDE",
    "interpreter_libdevice",
    "tl_dtype",
    "tl_compute",
    "load_module",
    "to_torch",
]
