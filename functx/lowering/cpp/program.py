"""The C++ backend: one translation unit per jitted program.

A prelude of small inline helpers (``prelude.py``: JAX's semantics for max/min with NaN, integer
division, saturating float->int conversion, half-precision storage), one block per kernel inside
``fx_run`` (OpenMP across rows or outer iterations, ``omp simd`` on the innermost loop), and
``fx_run(void** args)`` taking the inputs, constants and outputs in order. Intermediate buffers
are allocated and freed inside ``fx_run``; matrix products call the BLAS that NumPy links.

``CppProgram`` walks the scheduled kernels and hands each to the renderer of its kind, declared
in ``KERNEL_KINDS`` (one module per kind: pointwise, reduce, ascan, greduce, dot, scatter, dus,
loops); each renderer appends C++ lines to ``prog.body``."""

from __future__ import annotations

import math
import os
import re

import numpy as np

from functx.lowering import common
from functx.lowering.common import adopt_consts, sub_program
from functx.lowering.cpp import (
    ascan,
    dot,
    dus,
    greduce,
    loops,
    pointwise,
    reduce,
    scatter,
    sort,
)
from functx.lowering.cpp.emit import _PAR, Emitter, _decompose, _store, storage_type
from functx.lowering.cpp.prelude import PRELUDE
from functx.lowering.loopir import Graph, Node, flat_offset, sym
from functx.lowering.schedule import Kernel, KernelCtx

# The main translation unit's own part: the BLAS entry points (set once the program is loaded) and
# the host-callback dispatcher (``runtime.Executable`` sets it for programs with host steps).
MAIN_PRELUDE = r"""
static fx_sgemm_t fx_sgemm = nullptr;
static fx_dgemm_t fx_dgemm = nullptr;
extern "C" void fx_set_gemm(void* s, void* d) {
  fx_sgemm = (fx_sgemm_t)s;
  fx_dgemm = (fx_dgemm_t)d;
}
typedef int (*fx_host_t)(int64_t, void**);
static fx_host_t fx_host = nullptr;
extern "C" void fx_set_host(void* h) { fx_host = (fx_host_t)h; }
// a block of the runtime's malloc for the pool (runtime.PoolWarmer: faulted in while this
// program compiled); fx_free keeps it if it fits the pool's bounds, else frees it
extern "C" void fx_pool_give(void* p, size_t n) { fx_free(p, n); }
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


_MAIN_ONLY = ("fx_sub", "fx_sgemm", "fx_dgemm", "fx_alloc", "fx_free", "fx_gemm_narrow", "fx_host")


# Kernel kinds compiled at -O2 (with -O3's cost model for the vectoriser) where the program is
# split (``_split``: these kernels become functions, in the main unit too, for the attribute).
# Alone, each of the GPT block's seven reductions cost gcc 38-61 ms of CPU at -O3; at -O2 its
# units took 0.35 s each against 0.41-0.45 s, and the steady steps of the CPU workloads stayed
# the same (session 38; with every kernel at -O2 the CNN's pointwise kernels ran a third
# slower). Their sums may differ from -O3's in the last bits (another vector loop's split), as
# a one-unit program's already could from a split one's.
O2_KINDS = frozenset({"reduce"})
_O2 = '__attribute__((optimize("O2", "vect-cost-model=dynamic"))) '


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


# The kernel kinds of ``schedule.py`` and their renderers: ``render(prog, k)`` appends the C++ of
# kernel ``k`` to ``prog.body``.
KERNEL_KINDS = {
    "pointwise": pointwise.render,
    "reduce": reduce.render,
    "ascan": ascan.render,
    "greduce": greduce.render,
    "dot": dot.render,
    "scatter": scatter.render,
    "dus": dus.render,
    "loop": loops.render,
    "sort": sort.render,
}


def render_kernel(prog, k: Kernel) -> None:
    """Append the C++ of kernel ``k`` to ``prog.body``, through ``KERNEL_KINDS``."""
    common.render_kernel(KERNEL_KINDS, "C++", prog, k)


class CppProgram:
    """C++ source for one scheduled graph."""

    def __init__(self, graph: Graph, kernels: list[Kernel]):
        self.g = graph
        self.kernels = kernels
        self.body: list[str] = []
        self.subs: list = []
        # host steps (callbacks), by the index the program passes to fx_host: (callable,
        # input avals, output avals); the runtime dispatches on it
        self.host_calls: list = []

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

    # --- control flow: sub-programs called in C++ loops -----------------------------------------
    def _sub(self, closed) -> tuple[str, list[str]]:
        """Compile a sub-Jaxpr into a static function of the same calling convention as fx_run;
        returns its name and the parent's names for the sub-program's constants."""
        sg, sk = sub_program(closed, costly_once=True)
        self.n_subs = getattr(self, "n_subs", 0) + 1
        name = f"fx_sub{self.n_subs}"
        const_names = adopt_consts(self.g, sg.consts)
        # nested sub-programs are appended while this one is generated, so they come first
        self.subs.append(self.function(name, sg, sk, static=True))
        return name, const_names

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
            render_kernel(self, k)
            self.body[start:] = _decide_parallel(self.body[start:])
            spans.append((k.index, k.kind, start, len(self.body)))
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
                if not static:  # (what fx_run allocates before its first kernel: see sources)
                    self.pool_blocks.append(max(n.size, 1) * np.dtype(n.dtype).itemsize)
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
        balanced over ``units`` translation units by source length (the main one's counting
        100 characters a buffer for its allocation, release and entry in ``fx_env``: gcc's time
        was 14-20 ms a KB over the GPT block's, the CNN's and the Newton step's units; at 100
        their larger units took 0.45, 0.62 and 0.33 s of gcc CPU, at 150 0.55, 0.58 and 0.34,
        before 0.67, 0.70 and 0.45; the main unit's sub-programs too, by their length); kernels
        of ``O2_KINDS`` become functions in the main unit too, for their -O2 attribute; returns
        the new body."""
        movable = [
            (len("\n".join(body[a:b])), kind in O2_KINDS, i, a, b)
            for i, kind, a, b in spans
            if b > a and not any(w in "\n".join(body[a:b]) for w in _MAIN_ONLY)
        ]
        moved = sum(m[0] for m in movable)
        every = len(env) > SPLIT_BUFFERS  # each kernel a function of its own (see SPLIT_BUFFERS)
        if moved < SPLIT_MIN_CHARS and not every:
            return body
        subs = sum(len(t) for t in self.subs)  # (in the main unit)
        load = [len("\n".join(body)) - moved + 100 * len(env) + subs] + [0] * (units - 1)
        home = {}
        for size, o2, i, a, b in sorted(movable, reverse=True):
            u = min(range(units), key=lambda u: load[u])
            load[u] += size
            if u or every or o2:
                home[i] = (u, a, b, o2)
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
        for i, (u, a, b, o2) in sorted(home.items(), key=lambda h: h[1][1]):
            out += body[pos:a] + [f"  if (fx_k{i}(fx_env)) return 1;"]
            # (only the buffers the kernel names: thousands of unused restrict pointers per
            # function cost the compiler seconds)
            used = set(re.findall(r"[A-Za-z_]\w*", "\n".join(body[a:b])))
            mine = [d for d, (_, n) in zip(decls, env) if n in used]
            self.units[u].append(
                "\n".join(
                    [f'extern "C" {_O2 if o2 else ""}int fx_k{i}(void** fx_env) {{']
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
        the prelude, or with an ``#include`` of ``header`` holding it (``cache.prelude_header``).
        Sets ``pool_blocks``: the sizes in bytes of the buffers ``fx_run`` allocates on entry, in
        order (``runtime.PoolWarmer`` faults them in while the units compile)."""
        self.subs, self.units, self.host_calls, self.pool_blocks = [], [], [], []
        main = self.function(
            "fx_run", self.g, self.kernels, static=False, units=min(units, UNITS_MAX)
        )
        pre = PRELUDE if header is None else f'#include "{os.path.basename(header)}"\n'
        if not self.units:
            return ["\n".join([pre, MAIN_PRELUDE] + self.subs + [main])]
        others = ["\n".join([pre] + u) for u in self.units[1:] if u]
        return ["\n".join([pre, MAIN_PRELUDE] + self.subs + self.units[0] + [main])] + others


__all__ = ["CppProgram", "KERNEL_KINDS", "render_kernel"]
