"""C++ matrix products: generated loops for small products, the BLAS NumPy links otherwise.

Float products of at least ``_SMALL_GEMM`` (2^15) multiply-adds per matrix, with 4 rows and 2
columns or more, call NumPy's OpenBLAS (``cblas_?gemm``). OpenBLAS's own threads are not used:
after a call they spin waiting for the next one while the program's OpenMP threads want the same
cores, and under load a call waits for a descheduled worker (a 3x3 convolution's forward took
6x, its gradient 10x JAX's time on the loaded 2-core machine). Instead ``_blas_call`` sets
OpenBLAS to one thread for the kernel (restoring its count after) and cuts a large product into
pieces of about 2^22 multiply-adds along its longer side, which the program's OpenMP threads
take (``schedule(dynamic)``). Measured with ``benchmarks/matmul_cpu.py --crossover`` on the
2-core AVX2 machine under load average 12 (wall/CPU us per call, generated against BLAS): 64x64
@ 64x64 176/176 against 93/94, (128,256) @ (256,10) 126/126 against 62/62, (1024,64) @ (64,64)
6378/1548 against 230/231, 512x512 @ 512x512 189701/42136 against 21170/5102; at 16x16 they tie
(47 against 44, the call's cost). The per-sample-gradient MLP's 128x256 @ 256x256 went from
12.4-15.9 ms (generated, OpenMP under load) to 0.21-0.25 ms (NumPy: 0.19-0.24 when its threads
are idle). Without a way to set OpenBLAS's thread count (another BLAS), products up to 2^24
multiply-adds stay generated code, as before.

Which BLAS: ``benchmarks/matmul_cpu.py --libs`` measured the MLP SGD step's products on this
machine (AMD Zen 3, AVX2; session 30, table in benchmarks/RESULTS.md). On one thread NumPy's
OpenBLAS 0.3.31 and the newest scipy-openblas wheels (0.3.34, the same Haswell kernels) ran
80-87 GFLOP/s, MKL 2026.2 35-77, JAX's own product 55-91, the blis wheel 10-18 (its detection
falls back to generic kernels here). NumPy's OpenBLAS stays: no new dependency. On AVX-512 hosts
the float32 pieces call functx's own kernel instead (``cpp/gemm.py``, ``OWN_GEMM``): on the Zen 4
machine of session 33 it runs the MLP step's five products in 12.5 CPU ms against OpenBLAS's 14.0
(one thread each; XLA's 13.4).

Around the calls: an update ``U + c * (A @ B)`` of a product read once (an SGD step on a weight
gradient) is the product itself, accumulating into a copy of ``U`` (``fold_product_updates``),
and two consecutive independent products (a layer's weight and data gradients) share one loop of
pieces (``_independent_next``). Session 32 (benchmarks/RESULTS.md) measured what bounds the MLP
step here: its products' speed per core in OpenBLAS (14.7 CPU ms a step) against XLA's (13.5)."""

from __future__ import annotations

import ctypes
import functools
import glob
import math
import os

import numpy as np

from functx import dtypes
from functx.lowering import loopir
from functx.lowering.cpp import gemm, lapack
from functx.lowering.cpp.emit import _PAR, _SUM_BLOCK, _is_float, _store, compute_type
from functx.lowering.loopir import Const, Load, Node, Op, flat_offset, reads_in_order
from functx.lowering.lower import _DOT_PARAMS
from functx.lowering.schedule import Kernel

# and generated matrix products of at least this many multiply-adds: below, waking the other
# threads costs more than they save (128x10 @ 10x256: 9.9 us on one thread, 17 us on two)
_PAR_DOT = 1 << 20


# Generated code (``_small_gemm``) for products of fewer multiply-adds than this per matrix, and
# for vector-like ones (fewer than 4 rows or 2 columns: their float32 sums are blocked, see
# ``_cascade_split``); the others call OpenBLAS on one thread (``_blas_call``), 2-20x faster
# than the generated tiles from 2^15 multiply-adds up on the 2-core AVX2 test machine
# (``python benchmarks/matmul_cpu.py --crossover``; the figures are in its docstring).
_SMALL_GEMM = 1 << 15

# Without control over the BLAS's thread count, products up to this many multiply-adds in all
# stay generated code (its threads would spin against the program's).
_SMALL_GEMM_THREADED = 1 << 24


def _generated(bsz, m, kk, nn) -> bool:
    """Whether a float product is generated code rather than a BLAS call."""
    if blas_threads() is None:
        return bsz * m * nn * kk <= _SMALL_GEMM_THREADED
    return m < 4 or nn < 2 or m * nn * kk < _SMALL_GEMM


# --- products that update a buffer: ``out = U + c * (A @ B)`` ------------------------------------

# (switches for A/B measurements in one process: benchmarks/matmul_cpu.py --step)
FOLD_UPDATES = True  # fold_product_updates
JOIN_PRODUCTS = True  # _independent_next
OWN_GEMM = True  # float32 pieces through cpp/gemm.py's kernel rather than OpenBLAS

_BLAS_TYPES = (dtypes.float32, dtypes.float64)


class _Inline:
    """A context in which pointwise nodes are inlined (each once per index) and every other node
    reads as a load of its own (``n<id>``); ``seen`` collects the pointwise nodes inlined. An
    expression inlining more than ``_INLINE_MAX`` of them is given up (``_TooDeep``): an update's
    is a few loads, views and a scaling."""

    def __init__(self):
        self.seen: dict[int, Node] = {}
        self.memo: dict = {}

    def lookup(self, node, idx):
        hit = self.memo.get((node.id, idx))
        if hit is not None:
            return hit
        if node.kind == "pointwise" and node.fn is not None:
            self.seen[node.id] = node
            if len(self.seen) > _INLINE_MAX:
                raise _TooDeep
            return None
        return Load(node.dtype, f"n{node.id}", flat_offset(idx, node.shape))

    def remember(self, node, idx, e):
        self.memo[(node.id, idx)] = e

    def can_read_buffer(self, node) -> bool:
        return False

    def inlines(self, node) -> bool:
        return True

    def note_read(self, node):
        pass


class _TooDeep(Exception):
    pass


_INLINE_MAX = 32
_CHAIN_MAX = 4  # pointwise nodes from a product to the update that reads it (a view, a scaling)


def _scaled_load(e):
    """``(c, load)`` for ``e`` = ``load``, ``c * load``, ``load * c`` or ``-load`` (c a scalar
    constant), else None."""
    if isinstance(e, Load):
        return 1.0, e
    if isinstance(e, Op) and e.name == "neg" and isinstance(e.args[0], Load):
        return -1.0, e.args[0]
    if isinstance(e, Op) and e.name == "mul" and len(e.args) == 2:
        x, y = e.args
        if isinstance(y, Const):
            x, y = y, x
        if isinstance(x, Const) and isinstance(y, Load) and np.ndim(x.value) == 0:
            c = float(x.value)
            return (c, y) if math.isfinite(c) else None  # (C++ has no literal for inf, nan)
    return None


def _update_form(e):
    """``(u, c, d)`` for ``e`` = ``u + c * d`` or ``u - c * d`` (u and d loads), else None."""
    if not isinstance(e, Op) or e.name not in ("add", "sub") or len(e.args) != 2:
        return None
    x, y = e.args
    for u, term, sign in ((x, y, 1.0), (y, x, 1.0)) if e.name == "add" else ((x, y, -1.0),):
        t = _scaled_load(term)
        if isinstance(u, Load) and t is not None:
            return u, sign * t[0], t[1]
    return None


def _read_only_through(d, t, inlined, consumers, outputs) -> bool:
    """Whether ``d`` reaches nothing but ``t``: a chain of single readers from ``d`` to ``t``,
    each inlined into ``t`` (a view, a scaling) and none an output."""
    n = d
    while n is not t:
        readers = consumers.get(n.id, [])
        if len(readers) != 1 or n.id in outputs or (n is not d and n.id not in inlined):
            return False
        n = readers[0]
    return True


def fold_product_updates(g) -> None:
    """Fold ``out = U + c * D`` into the product ``D`` when ``D`` (a float32/float64 matrix
    product) is read by nothing else and ``U`` is a buffer read in the same order (an SGD update
    ``w - lr * (x.T @ d)``: the weight gradient is used once). ``D`` takes ``acc = U`` and
    ``alpha = c`` and computes ``out`` itself: each BLAS piece copies its block of ``U`` into the
    output and accumulates ``c * op(A) op(B)`` into it (``beta = 1``), so the gradient is never
    stored, zeroed (OpenBLAS's ``beta = 0`` clears C first) or read back by a pointwise kernel.
    C++ backend only (the compile step calls it between lowering and scheduling).

    Rounding (a decision, not JAX's): OpenBLAS adds ``alpha * sum`` to C with one fused
    multiply-add, so each element of ``out`` is ``U + c * s`` rounded once, where JAX (and the
    unfolded program) round ``c * s`` and then the sum. Elements differ by at most one unit in
    the last place of ``out``; on the GPT block's step, whose updates are about 1e-4 of the
    weights, that is 2-3e-4 of the update ``out - U`` in the 2-norm (1e-5 before).
    MLP step (784-1024-1024-10, batch 128, one thread): the update kernels (5.5% of its CPU
    time) and OpenBLAS's clearing of the gradients (most of its 3.1% memset) became a copy of
    the weights (4.9%): 16.5-16.8 -> 15.8-16.2 CPU ms per step (session 32,
    benchmarks/RESULTS.md)."""
    if OWN_GEMM and any(
        n.kind == "dot"
        and "m" in n.params
        and np.dtype(n.dtype) == dtypes.float32
        and _work(n) >= _SMALL_GEMM
        for n in g.nodes
    ):
        gemm.start_build()  # (cpp/gemm.py's library, for the programs' float32 BLAS products)
    if not FOLD_UPDATES:
        return
    consumers: dict[int, list] = {}
    for n in g.nodes:
        for i in n.inputs:
            consumers.setdefault(i.id, []).append(n)
    pos = {n.id: i for i, n in enumerate(g.nodes)}
    outputs = [n.id for n in g.outputs]
    by_id = {n.id: n for n in g.nodes}
    for d in [n for n in g.nodes if n.kind == "dot" and set(n.params) == _DOT_PARAMS]:
        t = d  # (the update: at the end of a chain of single readers from the product)
        for _ in range(_CHAIN_MAX):
            readers = consumers.get(t.id, [])
            if len(readers) != 1 or t.id in outputs:
                break
            t = readers[0]
            if t.kind != "pointwise" or t.fn is None or t.shape != d.shape:
                break
            if _fold_into(d, t, by_id, pos, consumers, outputs):
                # (U keeps its buffer: the scheduler's common_values must not make it a view)
                g.distinct.add(id(d.params["acc"]))
                g.outputs = [d if n is t else n for n in g.outputs]
                outputs = [n.id for n in g.outputs]
                break


def _fold_into(d, t, by_id, pos, consumers, outputs) -> bool:
    """Make product ``d`` compute ``t`` when ``t`` is ``U + c * d`` (``fold_product_updates``)."""
    if np.dtype(t.dtype) not in _BLAS_TYPES:
        return False
    ivars = loopir.loop_vars(len(t.shape))
    ctx = _Inline()
    try:
        form = _update_form(t.fn(ivars, ctx))
    except Exception:  # (too deep, or an expression only a kernel can build)
        return False
    if form is None:
        return False
    u_load, c, d_load = form
    u = by_id.get(_node_id(u_load.buf))
    if (
        u is None
        or _node_id(d_load.buf) != d.id
        or u.kind not in ("input", "dot", "reduce", "scatter", "dus")
        or not all(np.dtype(x.dtype) == np.dtype(t.dtype) for x in (u, d, *d.inputs))
        or pos[u.id] > pos[d.id]
        or not reads_in_order(u_load, ivars, t.shape)
        or not reads_in_order(d_load, ivars, t.shape)
        or not _read_only_through(d, t, ctx.seen, consumers, outputs)
    ):
        return False
    d.params["acc"], d.params["alpha"] = u, c
    d.inputs = [*d.inputs, u]
    t.fn = lambda idx, ctx, d=d: d.load(idx, ctx)  # (other readers of t read D in place)
    t.inputs = [d]
    return True


def _node_id(buf) -> int:
    """The node id of a load made by ``_Inline`` (``n<id>``), else -1."""
    return int(buf[1:]) if isinstance(buf, str) and buf[:1] == "n" and buf[1:].isdigit() else -1


def render(prog, k: Kernel):
    node = k.nodes[0]
    p = node.params
    if "conv_taps" in p:  # a convolution's forward sum (cpp/conv.py)
        prog.body += _conv_taps(prog, k)
        return
    if "conv_taps_dw" in p:  # a convolution's kernel gradient (cpp/conv.py)
        prog.body += _conv_taps_dw(prog, k)
        return
    lhs, rhs = p["lhs"], p["rhs"]
    lines = [f"  // kernel {k.index}: dot_general {lhs.shape} x {rhs.shape} -> {node.shape}"]
    if id(k) in getattr(prog, "dot_joined", ()):  # (its pieces ran with the product before it)
        return
    ct = compute_type(node.dtype)
    # (a product that updates a buffer, fold_product_updates: C = U + alpha * C after the
    # product, where the BLAS call does not accumulate into U itself)
    update = _update_loop(node, ct) if "acc" in p else []
    if node.size == 0:
        prog.body += lines
        return
    if p["k"] == 0:
        lines += [f"  memset({node.buf}, 0, {node.size}ULL * sizeof(*{node.buf}));"]
        prog.body += lines + update
        return
    blas = _blas_of(node)
    bsz, m, kk, nn = p["batch"], p["m"], p["k"], p["n"]
    if blas and _generated(bsz, m, kk, nn):
        args = (lhs.buf, rhs.buf, p["lhs_trans"], p["rhs_trans"], bsz, m, kk, nn, ct)
        prog.body += lines + _small_gemm(node, *args) + update
        return
    if blas:
        group = [node]
        nxt = _independent_next(prog, k, blas)
        if nxt is not None:
            group.append(nxt.nodes[0])
            prog.dot_joined = getattr(prog, "dot_joined", set()) | {id(nxt)}
            lines[0] += f", with kernel {nxt.index}: independent, its pieces in the same loop"
        prog.body += lines + _blas_call(prog, group, blas, ct)
        return
    prog.body += lines + ["  {"] + _loops(node, ct) + ["  }"]


def _blas_of(node) -> str | None:
    """The BLAS routine computing ``node`` (a product of operands of its own float type)."""
    p = node.params
    if not np.dtype(p["lhs"].dtype) == np.dtype(p["rhs"].dtype) == np.dtype(node.dtype):
        return None
    return {dtypes.float32: "fx_sgemm", dtypes.float64: "fx_dgemm"}.get(np.dtype(node.dtype))


def _independent_next(prog, k: Kernel, blas: str):
    """The kernel after ``k`` when it is a BLAS product with the same routine that does not read
    ``k``'s (the weight gradient and the data gradient of a layer): its pieces join ``k``'s in
    one parallel loop, one fork and one join for both. None otherwise: for products of fewer
    than ``_BLAS_PIECE`` multiply-adds (two small ones run one after the other on this thread:
    a parallel loop's join waits for the other thread to be scheduled, milliseconds on a loaded
    machine) and for the kernels of a control-flow body (only the program's own list is
    looked at)."""
    kernels = getattr(prog, "kernels", None)
    if not JOIN_PRODUCTS or not kernels or k.index + 1 >= len(kernels) or kernels[k.index] is not k:
        return None
    nxt = kernels[k.index + 1]
    if nxt.kind != "dot" or len(nxt.nodes) != 1:
        return None
    n = nxt.nodes[0]
    p = n.params
    if (
        "conv_taps" in p
        or "conv_taps_dw" in p
        or any(x is k.nodes[0] for x in n.inputs)
        or _blas_of(n) != blas
        or n.size == 0
        or p["k"] == 0
        or _generated(p["batch"], p["m"], p["k"], p["n"])
        or blas_threads() is None
        or min(_work(n), _work(k.nodes[0])) < _BLAS_PIECE
    ):
        return None
    return nxt


def _work(node) -> int:
    p = node.params
    return p["batch"] * p["m"] * p["k"] * p["n"]


def _loops(node, ct) -> list[str]:
    """The product as plain loops, for operands and result of different types (any dtype)."""
    p = node.params
    lhs, rhs, ta, tb = p["lhs"], p["rhs"], p["lhs_trans"], p["rhs_trans"]
    bsz, m, kk, nn = p["batch"], p["m"], p["k"], p["n"]
    update = _update_loop(node, ct) if "acc" in p else []
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
        if np.dtype(dt) in dtypes.NARROW_INTS:
            return f"(({acc_t})fx_wrap_{np.dtype(dt).name}({raw}))"
        if np.dtype(dt) in dtypes.NARROW_FLOATS:
            return f"(({acc_t})fx_{np.dtype(dt).name}_to_f32({raw}))"
        return f"(({acc_t}){raw})"

    a_read = rd(lhs.buf, a_idx, lhs.dtype, m * kk)
    b_read = rd(rhs.buf, b_idx, rhs.dtype, kk * nn)
    lines = [
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
    return lines + update


def _update_loop(node, ct) -> list[str]:
    """``C = U + alpha * C`` over the whole product (``U``: the ``acc`` buffer)."""
    n, u, alpha = node.size, node.params["acc"].buf, node.params["alpha"]
    return [
        f"    #pragma omp parallel for simd schedule(static) if({n}LL >= {_PAR})",
        f"    for (int64_t i = 0; i < {n}LL; ++i)",
        f"      {node.buf}[i] = {u}[i] + ({ct}){alpha!r} * {node.buf}[i];",
    ]


# BLAS products are cut into pieces of about this many multiply-adds (at most _BLAS_PIECES), run
# by the program's OpenMP threads with OpenBLAS itself on one thread (see _blas_call)
_BLAS_PIECE = 1 << 22
_BLAS_PIECES = 16

# ... and each piece spans at least this many rows (or columns) of C where the product has more
# than two pieces' worth: every piece repacks the whole operand the pieces share (B when rows
# are cut, A when columns are), so a product of span S cut into P pieces repacks P/S times that
# operand's size per multiply-add. OpenBLAS's instructions (callgrind, NumPy's OpenBLAS on one
# thread, the MLP SGD step's products, 784-1024-1024-10 batch 128) against one uncut call:
# 128x784 @ 784x1024 cut into 2 / 4 / 16 column pieces +0.4 / +0.7 / +11.5%, 128x1024 @
# (1024x1024).T +0.8 / +2.8 / +10.5%; 16 pieces of 64 columns were what the step ran before.
# The whole step with 4 pieces instead of 16: ~9% less CPU time, a third less packing (perf,
# benchmarks/RESULTS.md, session 30).
_BLAS_PIECE_SPAN = 256


@functools.lru_cache(maxsize=None)
def blas_threads() -> tuple[str, str, str] | None:
    """``(path, set, get)``: NumPy's OpenBLAS (the library whose ``cblas_?gemm`` the programs
    call, found as ``runtime.gemm_pointers`` finds it) and its ``openblas_set_num_threads`` /
    ``openblas_get_num_threads`` entry points, or None when it has none."""
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs", "*blas*.so*"))
    libs += glob.glob(os.path.join(os.path.dirname(np.__file__), ".dylibs", "*blas*"))
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if not any(hasattr(lib, s) for s in ("scipy_cblas_sgemm64_", "cblas_sgemm64_")):
            continue
        for prefix, suffix in (("scipy_", "64_"), ("", "64_"), ("", "")):
            st, gt = (f"{prefix}openblas_{w}_num_threads{suffix}" for w in ("set", "get"))
            if hasattr(lib, st) and hasattr(lib, gt):
                return os.path.realpath(path), st, gt
        return None
    return None


def _blas_call(prog, nodes, blas, ct):
    """The BLAS products ``nodes`` (one, or two independent ones, ``_independent_next``), each
    C = op(A) op(B) for each of its ``batch`` matrices: a table of jobs for the prelude's
    ``fx_gemm_run`` (one copy of the loop of pieces per unit: inline, 16 products' loops cost
    the GPT block's step 0.35 s of gcc CPU).

    OpenBLAS's own threads are the wrong ones here: after a call they keep spinning for their
    next task while the program's OpenMP threads (the kernels around the product) want the same
    cores, and on a loaded machine a product waits for a descheduled worker. So, when the
    library's thread count can be set, each product is cut into pieces along its longer side
    (rows of C, or columns; at least ``_BLAS_PIECE_SPAN`` of them a piece beyond two pieces,
    since each piece repacks the operand the pieces share), the program's OpenMP threads take
    the pieces of all the products (``schedule(dynamic)``: a thread that is descheduled holds up
    one piece, not half the product) and OpenBLAS runs on one thread for the duration of the
    kernel; the count it had is restored after it. Figures in benchmarks/matmul_cpu.py and
    functx/_conv.py.

    With ``acc`` (``fold_product_updates``), C = U + alpha op(A) op(B): each piece first copies
    its block of ``U`` into C's, then accumulates into it (``beta = 1``)."""
    lib = blas_threads()
    own = OWN_GEMM and all(gemm.applies(n) for n in nodes)
    routine = gemm.routine(prog, blas) if own else blas
    threads = "fx_blas_threads{}"
    if lib is not None:
        _need(prog, lapack.HELPER, _THREADS_OF.format(*lib))
        threads = "fx_blas_nt()"
    return [
        "  {",
        f"    const fx_gemm_job<{ct}> fx_jobs[] = {{",
        *(_job(node, ct, whole=lib is None, own=own) for node in nodes),
        "    };",
        f"    fx_gemm_run({routine}, {threads}, fx_jobs, {len(nodes)});",
        *([gemm.CHECK] if own else []),
        "  }",
    ]


# NumPy's OpenBLAS's thread-count entry points, looked up once per program (_blas_call)
_THREADS_OF = """static fx_blas_threads fx_blas_nt() {{
  static const fx_blas_threads nt = {{(fx_blas_nt_set_t)fx_lapack_fn("{0}", "{1}"),
                                      (fx_blas_nt_get_t)fx_lapack_fn("{0}", "{2}")}};
  return nt;
}}
"""


def _need(prog, *subs) -> None:
    """Add the C++ ``subs`` to the program's shared code, once each."""
    prog.subs.extend(sub for sub in subs if sub not in prog.subs)


def _one_thread(prog, lib) -> list[str]:
    """C++ setting NumPy's OpenBLAS (``lib``: ``blas_threads()``) to one thread, its count kept
    in ``fx_bprev`` (the caller restores it: ``if (fx_bprev != 1) fx_bset(fx_bprev);``)."""
    _need(prog, lapack.HELPER)
    path, st, gt = lib
    return [
        "    static const fx_blas_nt_set_t fx_bset ="
        f' (fx_blas_nt_set_t)fx_lapack_fn("{path}", "{st}");',
        "    static const fx_blas_nt_get_t fx_bget ="
        f' (fx_blas_nt_get_t)fx_lapack_fn("{path}", "{gt}");',
        "    const int fx_bprev = (fx_bset && fx_bget) ? fx_bget() : 1;",
        "    if (fx_bprev != 1) fx_bset(1);",
    ]


def _job(node, ct, whole=False, own=False) -> str:
    """The ``fx_gemm_job`` of product ``node`` (an initializer in ``_blas_call``'s table), cut
    into pieces along C's longer side; ``whole``: one piece per matrix (no cut); ``own``: the
    pieces go to ``cpp/gemm.py``'s kernel (column pieces of whole panels, ``_whole_panels``; a
    large batch of small matrices uncut)."""
    p = node.params
    bsz, m, kk, nn = p["batch"], p["m"], p["k"], p["n"]
    acc = p.get("acc")
    span = max(m, nn)  # the side cut (rows of C when m >= nn, else columns)
    pieces = (
        1
        if whole
        else min(
            _BLAS_PIECES,
            max(1, bsz * m * nn * kk // _BLAS_PIECE),
            max(2, span // _BLAS_PIECE_SPAN),
            span // 16 or 1,
        )
    )
    if own and not whole:
        # (a batch of small matrices is pieces already: at most _BLAS_PIECES in all, each
        # packing its own operand once; the GPT block's 24 attention products of 256x256x64,
        # one thread, load 13: 15.7 CPU ms whole, 17.3 in two pieces of each. Larger matrices
        # keep their cuts: a few big pieces would leave threads idle at the end.)
        if m * nn * kk <= 4 * _BLAS_PIECE:
            pieces = min(pieces, max(1, _BLAS_PIECES // bsz))
        pieces = _whole_panels(nn, pieces) if m < nn else pieces
    ops = f"{p['lhs'].buf}, {p['rhs'].buf}, {node.buf}, {acc.buf if acc else 'nullptr'}"
    dims = f"{bsz}LL, {m}LL, {nn}LL, {kk}LL, {int(p['lhs_trans'])}, {int(p['rhs_trans'])}"
    side = "rows" if m >= nn else "columns"
    return (
        f"      {{{ops}, ({ct}){p.get('alpha', 1.0)!r}, {dims}, {pieces}LL}},"
        f"  // {pieces} piece(s) of C's {side}"
    )


def _whole_panels(n: int, pieces: int) -> int:
    """The fewest column pieces, at least ``pieces``, that cut ``n`` columns into whole panels of
    ``cpp/gemm.py``'s 64-column tile, or ``pieces`` when none does. A piece ending in part of a
    panel runs that tile padded: the GPT block's 1152-column products in 4 pieces of 288 ran a
    32-column tile each. (At least as many pieces as before: fewer leave a thread idle at the
    end, as 3 pieces on 2 threads did.) One thread, CPU ms, load 8: `x @ W_qkv` (1024x384 @
    384x1152) 9.8 in 4 pieces, 8.9 in 6; its weight gradient (1024x384).T @ (1024x1152), whose
    pieces each pack A, 11.3 and 10.4."""
    panels, rem = divmod(n, gemm.PANEL)
    if pieces < 2 or rem:
        return pieces
    return next((p for p in range(pieces, panels + 1) if panels % p == 0), pieces)


def _small_gemm(node, la, rb_, ta, tb, bsz, m, kk, nn, ct):
    """A generated matrix product for problems too small for BLAS's threads (idle, they spin
    against the OpenMP threads). From 4 rows and 2 columns up, the prelude's register-tiled
    ``fx_gemm`` (one tile shape per machine; for fewer columns than a vector holds, on the
    transposed problem). One column: ``A^T b`` as rows of A scaled and added
    (``_matvec_rows``), ``A b`` as ``fx_gemm_narrow``'s dot products (one column of one)
    unless its float32 sums are cascaded. Otherwise one row of C at a time:
    ``c += a * B[t, :]`` in vector form when B is stored (K, N), vector dot products when
    B's columns are contiguous."""
    c = node.buf
    work = bsz * m * nn * kk
    a_i, a_t = (1, m) if ta else (kk, 1)
    b_t, b_j = (1, kk) if tb else (nn, 1)
    lanes = 64 // np.dtype(node.dtype).itemsize
    cascade = ct == "float" and kk > _SUM_BLOCK  # (see _cascade_split)
    if nn == 1 and ta:  # A^T b: rows of A scaled and added up, in vector form
        return _matvec_rows(la, rb_, c, bsz, m, kk, ct, cascade, work)
    if 1 <= nn < lanes and m > nn and a_t == 1 and not (nn == 1 and cascade):
        # few columns, rows of A contiguous (one column: gcc sums an ``omp simd`` reduction's
        # lanes one by one, 16 dependent adds per row; this sums them as a tree)
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


# A^T b (one column) takes the rows of A in blocks of this many outputs, the sums staying in the
# L1 cache
_MATVEC_BLOCK = 256


def _matvec_rows(la, rb_, c, bsz, m, kk, ct, cascade, work):
    """``C[b] (m x 1) = A[b]^T @ B[b]`` with A stored (k, m): for each block of outputs, the rows
    of A scaled by B's elements and added (``omp simd`` over the block), rather than dot products
    that read A with stride m (gathers: the kernel least squares step's gradient product took
    twice as long). float32 sums over more than ``_SUM_BLOCK`` terms are cascaded: each block of
    terms summed in float, the blocks' sums in double."""
    w = min(m, _MATVEC_BLOCK)
    if work >= _PAR_DOT:  # (at least 8 blocks of whole vectors for the threads, when m allows)
        w = min(w, max(16, -(-m // 128) * 16))
    lines = [
        f"  #pragma omp parallel for collapse(2) schedule(static) if({work}LL >= {_PAR_DOT})",
        f"  for (int64_t b = 0; b < {bsz}LL; ++b)",
        f"  for (int64_t i0 = 0; i0 < {m}LL; i0 += {w}LL) {{",
        f"    const int64_t w = fx_imin({w}LL, {m}LL - i0);",
        f"    const {ct}* __restrict a = {la} + b * {m * kk}LL + i0;",
        f"    const {ct}* __restrict x = {rb_} + b * {kk}LL;",
        f"    {ct}* __restrict crow = {c} + b * {m}LL + i0;",
    ]
    if not cascade:
        return lines + [
            "    #pragma omp simd",
            "    for (int64_t ii = 0; ii < w; ++ii) crow[ii] = 0;",
            f"    for (int64_t t = 0; t < {kk}LL; ++t) {{",
            f"      const {ct} xt = x[t];",
            "      #pragma omp simd",
            f"      for (int64_t ii = 0; ii < w; ++ii) crow[ii] += a[t * {m}LL + ii] * xt;",
            "    }",
            "  }",
        ]
    g = _SUM_BLOCK
    return lines + [
        f"    double sw[{w}];",
        f"    float s[{w}];",
        "    for (int64_t ii = 0; ii < w; ++ii) sw[ii] = 0;",
        f"    for (int64_t tb = 0; tb < {kk}LL; tb += {g}LL) {{",
        "      #pragma omp simd",
        "      for (int64_t ii = 0; ii < w; ++ii) s[ii] = 0.0f;",
        f"      for (int64_t t = tb; t < fx_imin(tb + {g}LL, {kk}LL); ++t) {{",
        "        const float xt = x[t];",
        "        #pragma omp simd",
        f"        for (int64_t ii = 0; ii < w; ++ii) s[ii] += a[t * {m}LL + ii] * xt;",
        "      }",
        "      #pragma omp simd",
        "      for (int64_t ii = 0; ii < w; ++ii) sw[ii] += (double)s[ii];",
        "    }",
        "    #pragma omp simd",
        "    for (int64_t ii = 0; ii < w; ++ii) crow[ii] = (float)sw[ii];",
        "  }",
    ]


# The rows of P's grid one block of the convolution step covers (its result block, 256 x O,
# stays in the L2 cache across the taps' products)
_CONV_BLOCK = 256


def _conv_taps(prog, k: Kernel) -> list[str]:
    """A convolution's forward sum (``cpp/conv.py``): ``y[m] = sum_t P[q(m) + r_t] @ K[t]`` for
    output row ``m`` at row ``q(m)`` of ``P``'s grid. Blocks of ``_CONV_BLOCK`` grid rows, taken
    by the OpenMP threads (OpenBLAS on one thread, as ``_blas_call``): per block one BLAS call
    per tap on ``P``'s rows in place, accumulated into the thread's block buffer (``beta = 1``
    after the first), then the block's output rows copied to ``y`` (rows on the grid's border,
    the last ``k - 1`` of each line, are dropped). Without BLAS, the same sums as loops. A
    float32 sum of 16k output channels is register tiles instead (``_conv_direct``) where the
    compiler targets AVX2 and FMA (the block path is the ``#else``)."""
    node = k.nodes[0]
    geo = node.params["conv_taps"]
    p, w = node.params["lhs"].buf, node.params["rhs"].buf
    y = node.buf
    n, c, o, grid = geo["n"], geo["c"], geo["o"], geo["grid"]
    rows, out_sp, offs = geo["rows"], geo["out_sp"], geo["offsets"]
    ct = compute_type(node.dtype)
    blas = {dtypes.float32: "fx_sgemm", dtypes.float64: "fx_dgemm"}[np.dtype(node.dtype)]
    # grid rows up to the last output's
    last = (n - 1) * grid + sum((m - 1) * r for m, r in zip(out_sp, rows)) + 1
    out_rows = [math.prod(out_sp[d + 1 :]) for d in range(len(out_sp))]
    per_image = math.prod(out_sp)
    blk = _CONV_BLOCK
    lib = blas_threads()
    # the block's output rows: grid row q -> (image, coordinates) -> output row m
    valid = [
        "      for (int64_t r = 0; r < nr; ++r) {",
        "        const int64_t q = q0 + r, img = q / " + f"{grid}LL;",
        f"        int64_t rem = q % {grid}LL, m = img * {per_image}LL;",
        "        bool ok = true;",
    ]
    for rr, mo, orr in zip(rows, out_sp, out_rows):
        valid += [
            f"        {{ const int64_t a = rem / {rr}LL; rem %= {rr}LL;"
            f" ok = ok && a < {mo}LL; m += a * {orr}LL; }}"
        ]
    valid += [
        "        if (ok) memcpy(" + f"{y} + m * {o}LL, yb + r * {o}LL, {o}ULL * sizeof({ct}));",
        "      }",
    ]
    calls = [
        f"        {blas}(101, 111, 111, nr, {o}LL, {c}LL, ({ct})1, {p} + (q0 + {r}LL) * {c}LL,"
        f" {c}LL, {w} + {t * c * o}LL, {o}LL, ({ct}){int(t > 0)}, yb, {o}LL);"
        for t, r in enumerate(offs)
    ]
    loops = [
        "        for (int64_t i = 0; i < nr; ++i) {",
        f"          {ct}* __restrict yr = yb + i * {o}LL;",
        f"          for (int64_t j = 0; j < {o}LL; ++j) yr[j] = 0;",
        f"          for (int64_t t = 0; t < {len(offs)}LL; ++t) {{",
        f"            const {ct}* __restrict pr = {p} + (q0 + i + offs[t]) * {c}LL;",
        f"            const {ct}* __restrict wt = {w} + t * {c * o}LL;",
        f"            for (int64_t a = 0; a < {c}LL; ++a) {{",
        f"              const {ct} v = pr[a];",
        "              #pragma omp simd",
        f"              for (int64_t j = 0; j < {o}LL; ++j) yr[j] += v * wt[a * {o}LL + j];",
        "            }",
        "          }",
        "        }",
    ]
    lines = [f"  // kernel {k.index}: convolution forward, {len(offs)} taps of ({c}, {o})", "  {"]
    direct = _CONV_DIRECT and ct == "float" and o % 16 == 0
    if direct:
        if _SIMD_HEADER not in prog.subs:
            prog.subs.append(_SIMD_HEADER)
        lines += ["#if defined(__AVX2__) && defined(__FMA__)"]
        lines += _conv_direct(geo, p, w, y)
        lines += ["#else"]
    if lib is not None:
        lines += _one_thread(prog, lib)
    lines += [
        f"    static const int64_t offs[{len(offs)}] = {{{', '.join(f'{r}LL' for r in offs)}}};",
        "    (void)offs;",
        # (without a way to keep OpenBLAS on one thread, its threads do the blocks' products)
        *([f"    #pragma omp parallel if({last * c * o * len(offs)}LL >= {_PAR_DOT})"] * bool(lib)),
        "    {",
        f"      {ct}* yb = ({ct}*)malloc({blk * o}ULL * sizeof({ct}));",
        "      #pragma omp for schedule(dynamic)",
        f"      for (int64_t q0 = 0; q0 < {last}LL; q0 += {blk}LL) {{",
        f"        const int64_t nr = fx_imin({blk}LL, {last}LL - q0);",
        f"        if ({blas}) {{",
        *calls,
        "        } else {",
        *loops,
        "        }",
        *valid,
        "      }",
        "      free(yb);",
        "    }",
    ]
    if lib is not None:
        lines += ["    if (fx_bprev != 1) fx_bset(fx_bprev);"]
    if direct:
        lines += ["#endif"]
    return lines + ["  }"]


_CONV_DIRECT = True
_SIMD_HEADER = "#if defined(__AVX2__) && defined(__FMA__)\n#include <immintrin.h>\n#endif\n"
_TILE_ROWS = 6  # a tile: 6 rows x 16 channels, 6 accumulators of 16 lanes (12 of 8: AVX2)
_TILE_CHUNK = 16  # the most tiles of a line one OpenMP work item takes


def _vec(lanes):
    """The C++ vector type and intrinsic prefix of a register tile's ``lanes``-float vectors."""
    return ("__m512", "_mm512") if lanes == 16 else ("__m256", "_mm256")


def _tile_variants(tile) -> list[str]:
    """A register tile's C++ for 16-channel rows as one 16-lane AVX-512 accumulator per row
    where the compiler targets AVX-512, else as two 8-lane AVX2 ones: ``tile(lanes)``. (The
    AVX2 kernel-gradient tile had one of its loads spilled to the stack by gcc and took 1.7
    times the forward's time for the same multiply-adds; AVX-512's 16 lanes also halve the
    instructions of both.) The sums and their order are the same in both."""
    return ["#if defined(__AVX512F__)", *tile(16), "#else", *tile(8), "#endif"]


def _fma_rows(rows, lanes, scalar, bp) -> list[str]:
    """The loop body of a tile: the 16 channels at ``bp`` loaded once, then per row ``r`` the
    float at ``scalar(r)`` broadcast and multiplied into the row's accumulators."""
    vt, mm = _vec(lanes)
    halves = range(16 // lanes)
    lines = [
        f"                const {vt} b{h} = {mm}_loadu_ps({bp} + {h * lanes});" for h in halves
    ]
    for r in range(rows):
        fmas = " ".join(f"a{r}{h} = {mm}_fmadd_ps(v, b{h}, a{r}{h});" for h in halves)
        lines += [f"                {{ const {vt} v = {mm}_set1_ps({scalar(r)}); {fmas} }}"]
    return lines


def _acc_lines(rows, lanes, indent, fmt) -> list[str]:
    """One line per accumulator ``a{r}{h}``: ``fmt(name, offset of its 16 channels' part)``."""
    return [indent + fmt(f"a{r}{h}", r, h * lanes) for r in range(rows) for h in range(16 // lanes)]


def _conv_tile(rows, c, nt, o):
    """C++ for one tile: ``rows`` output rows (``pb``: the first one's row of P; ``yt``: its
    result row) x 16 channels (``wb``: the panel of the repacked kernel), over all taps."""

    def tile(lanes):
        vt, mm = _vec(lanes)
        lines = ["          {"]
        lines += _acc_lines(
            rows, lanes, "            ", lambda a, r, j: f"{vt} {a} = {mm}_setzero_ps();"
        )
        lines += [
            "            const float* __restrict bp = wb;",
            f"            for (int64_t t = 0; t < {nt}LL; ++t) {{",
            f"              const float* __restrict ap = pb + offs[t] * {c}LL;",
            f"              for (int64_t ch = 0; ch < {c}LL; ++ch, bp += 16) {{",
        ]
        lines += _fma_rows(rows, lanes, lambda r: f"ap[{r * c}LL + ch]", "bp")
        lines += ["              }", "            }"]
        lines += _acc_lines(
            rows, lanes, "            ", lambda a, r, j: f"{mm}_storeu_ps(yt + {r * o + j}LL, {a});"
        )
        return lines + ["          }"]

    return _tile_variants(tile)


def _conv_direct(geo, p, w, y) -> list[str]:
    """The forward sum as register tiles (AVX2 + FMA, float32, ``O`` a multiple of 16): the
    kernel repacked into 16-channel panels ``(O / 16, T, C, 16)``; per line of outputs (one
    image row of the last spatial axis), tiles of ``_TILE_ROWS`` outputs x 16 channels, each
    accumulating ``T * C`` broadcasts of ``P``'s elements (read in place) times panel rows in
    registers and storing its result rows once. No packing of ``P``, no border rows."""
    n, c, o, grid = geo["n"], geo["c"], geo["o"], geo["grid"]
    rows, out_sp, offs = geo["rows"], geo["out_sp"], geo["offsets"]
    nt = len(offs)
    width = out_sp[-1]
    lines_n = n * math.prod(out_sp[:-1])
    panels = o // 16
    full, rem = divmod(width, _TILE_ROWS)
    chunks = max(1, -(-full // _TILE_CHUNK))  # (work items per line: long 1-D lines are cut)
    decomp = [
        f"        const int64_t img = line / {math.prod(out_sp[:-1])}LL;",
        f"        int64_t rest = line % {math.prod(out_sp[:-1])}LL, q = img * {grid}LL;",
    ]
    for d in range(len(out_sp) - 2, -1, -1):
        decomp += [f"        q += (rest % {out_sp[d]}LL) * {rows[d]}LL; rest /= {out_sp[d]}LL;"]
    body = [
        f"    static const int64_t offs[{nt}] = {{{', '.join(f'{r}LL' for r in offs)}}};",
        f"    float* __restrict wp = (float*)malloc({nt * c * o}ULL * sizeof(float));",
        f"    for (int64_t jp = 0; jp < {panels}LL; ++jp)",
        f"      for (int64_t tc = 0; tc < {nt * c}LL; ++tc)",
        f"        memcpy(wp + (jp * {nt * c}LL + tc) * 16LL, {w} + tc * {o}LL + jp * 16LL,"
        " 16 * sizeof(float));",
        "    #pragma omp parallel for schedule(dynamic)"
        f" if({lines_n * width * o * c * nt}LL >= {_PAR_DOT})",
        f"    for (int64_t item = 0; item < {lines_n * chunks}LL; ++item) {{",
        f"      const int64_t line = item / {chunks}LL, part = item % {chunks}LL;",
        *decomp,
        f"      const int64_t w_lo = part * {_TILE_CHUNK * _TILE_ROWS}LL;",
        f"      const int64_t w_hi = fx_imin(w_lo + {_TILE_CHUNK * _TILE_ROWS}LL,"
        f" {full * _TILE_ROWS}LL);",
        f"      for (int64_t jp = 0; jp < {panels}LL; ++jp) {{",
        f"        const float* __restrict wb = wp + jp * {nt * c * 16}LL;",
        f"        for (int64_t w0 = w_lo; w0 < w_hi; w0 += {_TILE_ROWS}LL) {{",
        f"          const float* __restrict pb = {p} + (q + w0) * {c}LL;",
        f"          float* __restrict yt = {y} + (line * {width}LL + w0) * {o}LL + jp * 16LL;",
        *_conv_tile(_TILE_ROWS, c, nt, o),
        "        }",
    ]
    if rem:
        body += [
            f"        if (part == {chunks - 1}LL) {{",
            f"          const int64_t w0 = {full * _TILE_ROWS}LL;",
            f"          const float* __restrict pb = {p} + (q + w0) * {c}LL;",
            f"          float* __restrict yt = {y} + (line * {width}LL + w0) * {o}LL + jp * 16LL;",
            *_conv_tile(rem, c, nt, o),
            "        }",
        ]
    return body + ["      }", "    }", "    free(wp);"]


# the kernel gradient's fixed chunks of lines (each its own partial sum, added in order: the
# result does not depend on the thread count) and the lines a tile pass covers
_DW_CHUNKS = 8
_DW_LINES = 4


def _conv_dw_tile(rows, c, o):
    """C++ for one kernel-gradient tile: ``rows`` input channels (from ``pr``: the block's
    first line's row of P at the tap, channel ``c0``) x 16 output channels (``gr``: the
    line's cotangent rows), accumulated over the block's lines into ``dst`` (its partial)."""

    def tile(lanes):
        vt, mm = _vec(lanes)
        lines = ["          {"]
        lines += _acc_lines(
            rows,
            lanes,
            "            ",
            lambda a, r, j: f"{vt} {a} = {mm}_loadu_ps(dst + {r * o + j}LL);",
        )
        lines += [
            "            for (int64_t li = 0; li < nl; ++li) {",
            f"              const float* __restrict pr = {{P}} + (qs[li] + off) * {c}LL + c0;",
            "              const float* __restrict gr = gl[li] + jp * 16LL;",
            "              for (int64_t x = 0; x < wl[li]; ++x, pr += " + f"{c}LL, gr += {o}LL) {{",
        ]
        lines += _fma_rows(rows, lanes, lambda r: f"pr[{r}]", "gr")
        lines += ["              }", "            }"]
        lines += _acc_lines(
            rows,
            lanes,
            "            ",
            lambda a, r, j: f"{mm}_storeu_ps(dst + {r * o + j}LL, {a});",
        )
        return lines + ["          }"]

    return _tile_variants(tile)


def _conv_taps_dw(prog, k: Kernel) -> list[str]:
    """A convolution's kernel gradient (``cpp/conv.py``, float32, ``O`` a multiple of 16):
    ``dW[t] = sum_m P[q(m) + r_t]^T G[m]`` over the output rows ``m``, reading ``P`` (the
    padded input) and ``G`` (the cotangent) in place. The lines of outputs are cut into
    ``_DW_CHUNKS`` fixed chunks, each summed into a partial ``(T, C, O)`` (the OpenMP threads
    take the chunks), ``_DW_LINES`` lines at a time: per tap, register tiles of 6 input x 16
    output channels, loaded from the partial, accumulated over those lines' positions
    (broadcasts of ``P``'s elements times ``G``'s rows) and stored back; the partials are then
    added in order. Where the compiler does not target AVX2 and FMA, one BLAS call per line and
    tap instead (``beta = 1`` into the chunk's partial)."""
    node = k.nodes[0]
    geo = node.params["conv_taps_dw"]
    p, gbuf, y = node.params["lhs"].buf, node.params["rhs"].buf, node.buf
    n, c, o, grid = geo["n"], geo["c"], geo["o"], geo["grid"]
    rows, out_sp, offs = geo["rows"], geo["out_sp"], geo["offsets"]
    nt, width = len(offs), out_sp[-1]
    per_image = math.prod(out_sp[:-1])
    # (fewer lines than chunks, e.g. one long 1-D signal: each line cut into segments)
    seg = -(-_DW_CHUNKS // (n * per_image))
    seg_w = -(-width // seg)
    seg = -(-width // seg_w)
    lines_n = n * per_image * seg
    chunks = max(1, min(_DW_CHUNKS, lines_n))
    size = nt * c * o
    if _SIMD_HEADER not in prog.subs:
        prog.subs.append(_SIMD_HEADER)
    decomp = [
        f"          const int64_t whole = seg_line / {seg}LL;",
        f"          const int64_t x0 = (seg_line % {seg}LL) * {seg_w}LL;",
        f"          const int64_t img = whole / {per_image}LL;",
        f"          int64_t rest = whole % {per_image}LL, q = img * {grid}LL + x0;",
    ]
    for d in range(len(out_sp) - 2, -1, -1):
        decomp += [f"          q += (rest % {out_sp[d]}LL) * {rows[d]}LL; rest /= {out_sp[d]}LL;"]
    full, rem = divmod(c, _TILE_ROWS)
    tiles = []
    for c0, r in [(i * _TILE_ROWS, _TILE_ROWS) for i in range(full)] + (
        [(full * _TILE_ROWS, rem)] if rem else []
    ):
        tiles += [
            f"        {{ const int64_t c0 = {c0}LL;",
            f"          float* __restrict dst = part + (t * {c}LL + c0) * {o}LL + jp * 16LL;",
        ]
        tiles += [ln.replace("{P}", p) for ln in _conv_dw_tile(r, c, o)]
        tiles += ["        }"]
    lines = [
        f"  // kernel {k.index}: convolution kernel gradient, {nt} taps of ({c}, {o})",
        "  {",
        f"    static const int64_t offs[{nt}] = {{{', '.join(f'{r}LL' for r in offs)}}};",
        f"    float* __restrict parts = (float*)calloc({chunks * size}ULL, sizeof(float));",
        "    if (!parts) return 1;",
        "    #pragma omp parallel for schedule(dynamic)"
        f" if({n * per_image * width * size}LL >= {_PAR_DOT})",
        f"    for (int64_t ch = 0; ch < {chunks}LL; ++ch) {{",
        f"      float* __restrict part = parts + ch * {size}LL;",
        f"      const int64_t l_end = (ch + 1) * {lines_n}LL / {chunks}LL;",
        f"      for (int64_t l0 = ch * {lines_n}LL / {chunks}LL; l0 < l_end;"
        f" l0 += {_DW_LINES}LL) {{",
        f"        const int64_t nl = fx_imin({_DW_LINES}LL, l_end - l0);",
        f"        int64_t qs[{_DW_LINES}], wl[{_DW_LINES}]; const float* gl[{_DW_LINES}];",
        "        for (int64_t li = 0; li < nl; ++li) {",
        "          const int64_t seg_line = l0 + li;",
        *decomp,
        f"          qs[li] = q; gl[li] = {gbuf} + (whole * {width}LL + x0) * {o}LL;",
        f"          wl[li] = fx_imin({seg_w}LL, {width}LL - x0);",
        "        }",
        "#if defined(__AVX2__) && defined(__FMA__)",
        f"        for (int64_t t = 0; t < {nt}LL; ++t) {{",
        "        const int64_t off = offs[t];",
        f"        for (int64_t jp = 0; jp < {o // 16}LL; ++jp) {{",
        *tiles,
        "        }",
        "        }",
        "#else",
        f"        for (int64_t t = 0; t < {nt}LL; ++t)",
        "          for (int64_t li = 0; li < nl; ++li)",
        f"            fx_sgemm(101, 112, 111, {c}LL, {o}LL, wl[li], 1.0f,"
        f" {p} + (qs[li] + offs[t]) * {c}LL, {c}LL, gl[li], {o}LL, 1.0f,"
        f" part + t * {c * o}LL, {o}LL);",
        "#endif",
        "      }",
        "    }",
        f"    #pragma omp parallel for schedule(static) if({size * chunks}LL >= {_PAR})",
        f"    for (int64_t i = 0; i < {size}LL; ++i) {{",
        "      float s = parts[i];",
        f"      for (int64_t ch = 1; ch < {chunks}LL; ++ch) s += parts[ch * {size}LL + i];",
        f"      {y}[i] = s;",
        "    }",
        "    free(parts);",
        "  }",
    ]
    return lines
