"""Stage 3 of lowering, GPU flavour: Triton source for a scheduled graph (``TritonProgram``).

The same loop IR (``loopir.py``) and the same kernels (``schedule.py``) as the C++ backend, printed
as one Python module: a prelude of small ``@triton.jit`` helpers (JAX's semantics for max/min with
NaN, argmax/argmin as value-index pairs, the combines of reductions), one ``@triton.jit`` kernel
per scheduled kernel, each launched through a module-level *launch site* (``_L0 = _fx_site(k0_..,
warps)``: see ``runtime.py``, which loads and runs the module), and a host function
``run(inputs, consts, outputs)`` that launches them in order on contiguous torch tensors
(intermediates are slices of one arena on the outputs' device, laid out by ``memplan.py`` so
that buffers whose lifetimes are disjoint share bytes; ``PLAN_MEMORY = False``: a ``torch.empty``
each; small ones that one kernel stores and nothing reads: a shared scratch, ``runtime.scratch``).

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
* ``ascan`` (lane-wise ``associative_scan``): ``tl.associative_scan``
  over a chunk of the scan axis (any length: chunks in a loop) with the combine function emitted
  as its own ``@triton.jit`` function; the prefix carried across chunks is the previous chunk's
  *last* element (picked by index, never with a value reduction, which would assume
  commutativity). Reverse scans flip the indices themselves (Triton's ``reverse=`` is not used).
  Along a strided axis a block is 32 neighbouring lanes by a short chunk (``scan_plan``).
* ``greduce`` (``lax.reduce`` with a custom combine): ``tl.reduce`` with the combine emitted as
  a function (XLA's contract: commutative, associative, the init value an identity).
* ``dot``: ``torch.matmul`` on the realised operands (cuBLAS), called from the host function;
  float32 products use TF32 unless the default matmul precision (read when the program is
  generated: ``functx.default_matmul_precision``) is "highest"/"float32", as in JAX. The small
  TF32 products of ``gemm.TABLE``'s shape classes (a training step's batch of 128 rows) are
  Triton GEMMs instead (``gemm.py``), which compute their first pointwise consumer as their
  epilogue (``dot._epilogue``: bias and activation, the SGD update of a weight). Small
  float matrix-vector products are a multiply and a sum instead (``dot.matvec_sums``, a Jaxpr
  rewrite before lowering), which fuse with the work around them as reductions do.
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
raises ``UnsupportedError`` naming it. Kernels go to the renderer of their kind through
``KERNEL_KINDS`` (one module per kind).

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
module binds ``libdevice`` to ``interpreter_libdevice`` (``interpreter.py``), NumPy stand-ins with
the same names.
"""

from __future__ import annotations

import itertools
import math
import re

import numpy as np

from functx.lowering import common, schedule
from functx.lowering.common import adopt_consts, sub_program
from functx.lowering.complex_lanes import split_complex, uses_complex
from functx.lowering.loopir import Graph, Sym, flat_offset, sym
from functx.lowering.lower import lower_jaxpr
from functx.lowering.schedule import Kernel, KernelCtx
from functx.lowering.triton import (
    ascan,
    combine,
    conv,
    dot,
    dus,
    greduce,
    loops,
    memplan,
    pointwise,
    reduce,
    scatter,
    sort,
)
from functx.lowering.triton.blocks import Blocks
from functx.lowering.triton.emit import _HALF, Emitter, V, _decompose, _next_pow2, tl_dtype
from functx.lowering.triton.prelude import PRELUDE
from functx.lowering.triton.runtime import TritonExecutable, torch_dtype_name

DEFAULT_BLOCKS = Blocks()  # what ``compile_triton`` uses when given no blocks (tests swap it)
# whether host functions place their intermediates in one planned arena (``memplan.py``); False:
# a ``torch.empty`` each, all live until the function returns (tests compare the two)
PLAN_MEMORY = True
# ... where the plan saves at least this many bytes: a small program keeps its ``torch.empty``
# lines (an arena and its slices cost as much host time per call as the allocations they replace)
PLAN_MIN_BYTES = 1 << 20
# intermediates of at most this many bytes that one kernel stores and nothing reads share a
# scratch buffer per device and dtype (``runtime.scratch``): no allocation per call
SCRATCH_MAX_BYTES = 64 << 10


# The kernel kinds of ``schedule.py`` and their renderers: ``render(prog, k)`` adds kernel ``k``'s
# ``@triton.jit`` definitions to ``prog.defs`` and its launches to ``prog.host``.
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
    """Add the Triton of kernel ``k`` to ``prog``, through ``KERNEL_KINDS``."""
    common.render_kernel(KERNEL_KINDS, "Triton", prog, k)


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
        # single-store pointwise kernels: output -> (launch site, its bytes, the buffers of as
        # many bytes it reads only at the element it writes: the memory plan may overlay them)
        self.in_order: dict = {}
        if parent is None:
            self.n_sites = 0  # launch sites of the module
            self.defs: list[str] = []  # kernels and helpers, shared by all sub-programs
            self.helpers: set = set()
            self.subs: list[str] = []  # host functions of sub-programs
            # host steps (callbacks) by index: (callable, input avals, output (shape, dtype)s)
            self.host_calls: list = []
            self.memory_plans: dict = {}  # host function name -> its memplan.MemoryPlan
        else:
            self.defs, self.helpers, self.subs = self.root.defs, self.root.helpers, self.root.subs
        self.big = self.blocks.int64_index or any(n.size >= 2**31 - 1 for n in graph.nodes)

    # --- utilities -----------------------------------------------------------------------------
    def _kname(self, k: Kernel, what: str) -> str:
        return f"{self.prefix}k{k.index}_{what}"

    def _pid(self) -> str:
        return "tl.program_id(0).to(tl.int64)" if self.big else "tl.program_id(0)"

    def _launch(self, name, grid, bufs, num_warps=4):
        """A launch of kernel ``name`` through a launch site (``runtime.site``): a
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
        written = sum(n * np.dtype(dt).itemsize for buf, dt, _ in stores if buf is not None)
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

    def _flat_kernel(self, name, k: Kernel, shape, stores, comment, local_names=None):
        """A kernel over the flat elements of ``shape`` storing each ``(buf, dtype, fn)`` with
        ``fn(index, ctx)`` the element expression. ``local_names`` (one per store, or None):
        the ``Sym`` name the value is bound to for the later stores' expressions (a local of the
        kernel: ``schedule.local_sym``); a store whose ``buf`` is None only binds it."""
        n = math.prod(shape)
        if n == 0:
            return
        block = min(_next_pow2(n), self.blocks.pointwise)
        ivars = [sym(f"i{d}") for d in range(len(shape))]
        counter = itertools.count()
        known = {flat_offset(ivars, shape): "flat"} if shape else {}
        em = Emitter("    ", counter, {v.name: "f" for v in ivars}, {frozenset("f"): "mask"}, known)
        em.keep_in_cache = self._reused_inputs(n, stores)
        ctx = KernelCtx(k)
        body = [
            f"    flat = {self._pid()} * {block} + tl.arange(0, {block})",
            f"    mask = flat < {n}",
        ]
        body += ["    " + s for s in _decompose([v.name for v in ivars], shape, "flat")]
        values = []
        for j, (buf, dt, fn) in enumerate(stores):
            v = em(fn(tuple(ivars), ctx))
            if local_names is not None and local_names[j] is not None:
                em.syms[local_names[j]] = v
            if buf is not None:
                values.append((buf, dt, v))
        hint = ', eviction_policy="evict_first"' if em.kept else ""
        body += em.lines + [
            "    " + self._store(buf, "flat", v, dt, "mask", hint) for buf, dt, v in values
        ]
        bufs = self._ordered(em.bufs, [b for b, _, _ in values])
        self._define(name, bufs, body, comment)
        self._launch(
            name, -(-n // block), bufs, max(1, min(self.blocks.pointwise_warps, block // 128))
        )
        if len(values) == 1:  # (the memory plan may write it over an input read in order)
            out, dt, _ = values[0]
            self.in_order[out] = (
                self.host[-1].split("(", 1)[0].strip(),
                n * np.dtype(dt).itemsize,
                _read_in_order(em.lines, em.bufs, n, np.dtype(dt).itemsize, self._by_buf()),
            )

    def _copy(self, k: Kernel, src, dst: str, dt, what: str):
        self._flat_kernel(
            self._kname(k, "copy"),
            k,
            src.shape,
            [(dst, dt, lambda idx, ctx: src.load(idx, ctx))],
            f"{what}: copy of the operand",
        )

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

    # --- control flow: host loops over sub-programs -----------------------------------------------
    def _sub(self, closed) -> tuple[str, list[str]]:
        """A host function ``_subN(inputs, consts, outputs)`` for a sub-Jaxpr (its kernels join
        the module); returns its name and this program's names for its constants."""
        sg, sk = sub_program(closed)
        name = f"_sub{len(self.subs)}"
        self.subs.append("")  # reserve the name (nested sub-programs come first)
        index = len(self.subs) - 1
        child = TritonProgram(sg, sk, parent=self, prefix=f"s{index}_")
        self.subs[index] = child.function(name)  # may add constants of nested programs
        return name, adopt_consts(self.g, sg.consts)

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
            render_kernel(self, k)
        dot.drop_unread_products(self)
        self.host = sink_waits(self.host, self._wait_steps())  # (before any plan reads it)
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
        declared |= self.aliases
        allocs = packed_buffers(g, self.host, declared)  # (collective steps' operands)
        temps = []  # the other intermediates: (buffer, elements, dtype)
        for n in g.nodes:
            if n.buf and n.buf not in declared:
                declared.add(n.buf)
                temps.append((n.buf, max(n.size, 1), np.dtype(n.dtype)))
        copies = []
        for i, node in enumerate(g.outputs):
            if node.buf != f"out{i}":
                copies.append(
                    f"    out{i}.view(-1)[:{node.size}].copy_({node.buf}.view(-1)[:{node.size}])"
                )
        unread = self._unread(temps, self.host + copies)
        allocs += _scratch_lines(unread)
        temps = [t for t in temps if t[0] not in unread]
        self.host = combine.launches(self, self.host)  # (after _unread: it reads site kernels)
        allocs += self._allocations(name, temps, self.host + copies)
        body = allocs + self.host + copies
        if any("device=dev" in ln or "_fx_scratch(dev" in ln for ln in body):  # (where used)
            head.append("    dev = out0.device" if out_names else "    dev = None")
        return "\n".join(head + body + ["    return outputs"]) + "\n"

    def _unread(self, temps, body: list[str]) -> dict:
        """``{buffer: (elements, dtype)}``: the small intermediates (``SCRATCH_MAX_BYTES``) that
        one kernel launch of the host code ``body`` stores and nothing loads (a reduction whose
        value only its own kernel's epilogue uses: the kernel least squares step's loss terms):
        they take the device's shared scratch (``runtime.scratch``), no allocation per call."""
        out: dict = {}
        for b, n, dt in temps:
            if n * dt.itemsize > SCRATCH_MAX_BYTES:
                continue
            word = re.compile(rf"\b{b}\b")
            uses = [ln for ln in body if word.search(ln)]
            m = re.match(r"    (_L\d+)\(", uses[0]) if len(uses) == 1 else None
            kernel = self._site_body(m.group(1)) if m else None
            if kernel is not None and len(word.findall(kernel)) == kernel.count(f"tl.store({b} + "):
                out[b] = (n, dt)
        return out

    def _site_body(self, site: str):
        """The body of the kernel launch site ``site`` launches (None if not found)."""
        line = next((d for d in self.defs if d.startswith(site + " = _fx_site(")), None)
        m = re.match(rf"{site} = _fx_site\((\w+),", line or "")
        if m is None:
            return None
        head = f"def {m.group(1)}("
        d = next((d for d in self.defs if head in d), None)
        return None if d is None else d.split("\n", 2)[-1]

    def _by_buf(self) -> dict:
        if getattr(self, "_nodes_by_buf", None) is None:
            self._nodes_by_buf = {nd.buf: nd for nd in self.g.nodes if nd.buf}
        return self._nodes_by_buf

    def _overlays(self, sizes: dict, stmts: list[str]) -> dict:
        """``{output: inputs}``: pointwise kernels' outputs that may take the bytes of an input
        dying at their kernel (``memplan.plan``'s ``overlays``): the kernel stores one buffer
        and reads the input only at the element it stores, of the same size in bytes, so each
        element is loaded before its own store overwrites it and no other is read there."""
        out: dict = {}
        for o, (site, nbytes, inputs) in self.in_order.items():
            ok = {x for x in inputs if sizes.get(x) == nbytes}
            if o in sizes and sizes[o] == nbytes and ok:
                out[o] = (site, ok)
        return out

    def _allocations(self, name: str, temps, body: list[str], plan: bool = True) -> list[str]:
        """The lines binding the intermediates ``temps`` (``(buffer, elements, dtype)``): with
        ``PLAN_MEMORY``, slices of one arena laid out by ``memplan.plan`` over the host code
        ``body`` (the plan is kept in ``self.root.memory_plans[name]``) where that saves at
        least ``PLAN_MIN_BYTES``, else a ``torch.empty`` each."""
        if not (plan and PLAN_MEMORY) or len(temps) < 2 or len(temps) > memplan.MAX_BUFFERS:
            return [
                f"    {b} = torch.empty({n}, dtype=torch.{torch_dtype_name(dt)}, device=dev)"
                for b, n, dt in temps
            ]
        sizes = {b: n * dt.itemsize for b, n, dt in temps}
        if sum(sizes.values()) < PLAN_MIN_BYTES:
            return self._allocations(name, temps, body, plan=False)
        stmts = memplan.statements(body)
        mp = memplan.plan(sizes, stmts, self._overlays(sizes, stmts))
        if mp.total - mp.size < PLAN_MIN_BYTES:
            return self._allocations(name, temps, body, plan=False)
        self.root.memory_plans[name] = mp
        lines = [
            f"    # {mp.summary()}",
            f"    _mem = torch.empty({mp.size}, dtype=torch.uint8, device=dev)",
        ]
        views: dict = {}
        for b, n, dt in temps:
            tname = torch_dtype_name(dt)
            view = views.get(tname)
            if view is None:
                view = views[tname] = f"_mem_{tname}"
                lines.append(f"    {view} = _mem.view(torch.{tname})")
            s = mp.slots[b]
            at = s.offset // dt.itemsize
            lines.append(
                f"    {b} = {view}[{at}:{at + n}]  # bytes {s.offset}-{s.offset + s.nbytes}, "
                f"steps {s.first}-{s.last}"
            )
        return lines

    def _wait_steps(self) -> set:
        """The indices of this program's host steps whose group has ``wait`` (a ``PsumDone``:
        it only waits for work started earlier and writes its outputs)."""
        waits = {
            id(n.params["group"]["callback"])
            for n in self.g.nodes
            if n.kind == "loop" and n.params["group"].get("wait")
        }
        return {i for i, call in enumerate(self.root.host_calls) if id(call[0]) in waits}

    def source(self) -> str:
        """The whole module: the prelude, the kernels, the sub-programs and ``run``."""
        self.defs.clear()
        self.helpers.clear()
        self.subs.clear()
        self.n_sites = 0
        self.host_calls = []
        self.host = []
        self.aliases = set()
        self.in_order = {}
        self.memory_plans = {}
        main = self.function("run")
        return "\n".join(
            [PRELUDE]
            + ["\n" + d for d in self.defs]
            + ["\n" + f for f in self.subs]
            + ["\n" + main]
        )


def _scratch_lines(unread: dict) -> list[str]:
    """One line per dtype binding the never-read intermediates ``unread`` to the scratch."""
    by_dt: dict = {}
    for b, (n, dt) in unread.items():
        by_dt.setdefault(dt, []).append((b, n))
    return [
        f"    {' = '.join(b for b, _ in bs)} = _fx_scratch(dev, torch.{torch_dtype_name(dt)}, "
        f"{max(n for _, n in bs)})  # (stored, never read)"
        for dt, bs in by_dt.items()
    ]


def _read_in_order(lines: list[str], bufs, n: int, itemsize: int, by_buf: dict) -> set:
    """The buffers of ``n`` elements of ``itemsize`` bytes (``by_buf``: their nodes) that a flat
    kernel's body ``lines`` loads only at its own flat offset (``tl.load(buf + flat, ...)``)."""
    text = "\n".join(lines)
    out = set()
    for b in bufs:
        nd = by_buf.get(b)
        if nd is None or nd.size != n or np.dtype(nd.dtype).itemsize != itemsize:
            continue
        uses = len(re.findall(rf"\b{b}\b", text))
        if uses and uses == text.count(f"tl.load({b} + flat,") + text.count(f"tl.load({b} + flat)"):
            out.add(b)
    return out


# --- packed buffers: a bucket of operands in one flat buffer ----------------------------------
PACK_ALIGN = 256  # bytes: where each operand of a pack starts (functx.distributed reads packs)


def packed_buffers(g: Graph, host: list[str], declared: set) -> list[str]:
    """The allocation lines of the program's *packs*, adding their buffers' names to
    ``declared``. A host step whose group has ``pack`` (``PsumStart``: an overlapped psum's
    bucket) gets its operands placed one after another, every ``PACK_ALIGN`` bytes, in one flat
    buffer per dtype (``pack<id>_<k>``): the kernels computing them write into views of it, and
    the step reduces the whole buffer in place (no concatenation). A group with ``inplace`` (its
    ``PsumDone``: per output, the operand it is the sum of, or None) has those outputs read the
    operand's view (no copy out). An operand is packed only when it is a temporary of this
    program that nothing else reads (no other live node, no alias, not rebound by the host
    code), so reducing it in place changes no other value."""
    if not any(n.kind == "loop" and n.params["group"].get("pack") for n in g.nodes):
        return []
    live: set = set()
    stack = list(g.outputs)
    while stack:
        n = stack.pop()
        if n.id not in live:
            live.add(n.id)
            stack.extend(n.inputs)
    readers: dict = {}
    for n in g.nodes:
        if n.id in live:
            for x in n.inputs:
                readers.setdefault(x.id, set()).add(n.id)
    rebound = {m.group(1) for ln in host if (m := re.match(r"\s+(\w+) = ", ln))}
    # a temporary the host code makes another buffer's name (pointwise._same_elements: an
    # in-order view, as a folded transposed product): that buffer is packed in its place
    same = {m.group(1): m.group(2) for ln in host if (m := re.match(r"\s+(\w+) = (\w+)  #", ln))}
    by_buf = {n.buf: n for n in g.nodes if n.buf}
    lines: list[str] = []
    views: dict = {}  # node id -> its view's name (packed operands)
    for n in g.nodes:
        group = n.params.get("group")
        if n.kind != "loop" or not group or group.get("outs", [None])[0] is not n:
            continue
        if group.get("pack") and n.id in live:
            own = {o.id for o in group["outs"]}
            ids = [x.id for x in group["ins"]]
            by_dtype: dict = {}
            for x in group["ins"]:
                if x.buf is None or ids.count(x.id) > 1 or readers.get(x.id, set()) - own:
                    continue
                y = by_buf.get(same.get(x.buf), x)  # (the buffer x's name stands for)
                if y is not x and (
                    y.size != x.size
                    or np.dtype(y.dtype) != np.dtype(x.dtype)
                    or readers.get(y.id, set()) - {x.id}
                    or any(o is y for o in g.outputs)
                ):
                    continue
                if y.kind == "input" or y.buf in declared or y.buf in rebound:
                    continue
                by_dtype.setdefault(np.dtype(x.dtype), []).append((x, y))
            for k, (dt, xys) in enumerate(by_dtype.items()):
                step = max(1, PACK_ALIGN // dt.itemsize)
                name, off, placed = f"pack{n.id}_{k}", 0, []
                for _, y in xys:
                    placed.append(f"    {y.buf} = {name}[{off}:{off + y.size}]")
                    off += -(-max(y.size, 1) // step) * step
                lines.append(
                    f"    {name} = torch.empty({off}, dtype=torch.{torch_dtype_name(dt)}, "
                    "device=dev)"
                )
                lines.append(f"    {name}._fx_pack = True  # (the step may reduce it in place)")
                lines += placed
                for x, y in xys:
                    declared.add(y.buf)
                    views[x.id] = y.buf
                declared.add(name)
        for o, x in zip(group["outs"], group.get("inplace") or ()):
            if x is not None and x.id in views and o.buf and o.buf not in declared:
                if o.size == x.size and np.dtype(o.dtype) == np.dtype(x.dtype):
                    lines.append(f"    {o.buf} = {views[x.id]}  # (the sum, in place)")
                    declared.add(o.buf)
    return lines


_BUFFER = re.compile(r"\b(?:in|out|t|c)\d+\b|\bpack\d+_\d+\b")
_SIMPLE = re.compile(r"    (?:_L\d+\(|_fx_host\(|_fx_dot\(|t\d+ = t\d+  # kernel)")


def sink_waits(host: list[str], waits: set) -> list[str]:
    """The host code ``host`` with each wait step (``waits``: host step indices, an overlapped
    psum's ``PsumDone``) and the statements that read what it wrote moved as late as they can
    go, in the order the waits come: the program's stream then waits for a bucket's reduction
    only where its first reader needs it, and the kernels that need no later bucket (the
    parameter updates of the buckets reduced first) run while the last bucket is reduced. A
    statement goes after another only when they name no buffer in common (outputs that are
    views of a pack name the operand they sum, ``# (the sum, in place)``, and the pack by the
    same name). Only after the first wait, and only when everything there is a plain statement
    (a kernel launch, a product, a host step, an alias): otherwise ``host`` is unchanged."""
    stmts: list[list[str]] = []
    notes: list[str] = []
    for ln in host:
        if ln.startswith("    #"):
            notes.append(ln)
        elif ln.startswith("     ") and stmts:
            stmts[-1].append(ln)
        else:
            stmts.append(notes + [ln])
            notes = []

    def wait_of(st):
        m = re.match(r"    _fx_host\((\d+),", st[-1])
        return m is not None and int(m.group(1)) in waits

    first = next((k for k, st in enumerate(stmts) if wait_of(st)), None)
    if first is None:
        return host
    tail = stmts[first:]
    plain = all(
        sum(not ln.startswith("    #") for ln in st) == 1 and _SIMPLE.match(st[-1]) for st in tail
    )
    if not plain:
        return host
    names = [set(_BUFFER.findall(st[-1])) for st in tail]
    order = list(range(len(tail)))
    for w in [k for k in range(len(tail)) if wait_of(tail[k])]:
        at = order.index(w)
        moved, used = [w], set(names[w])
        for k in order[at + 1 :]:
            if names[k] & used:
                moved.append(k)
                used |= names[k]
        order = [k for k in order if k not in moved] + moved
    out = [ln for st in stmts[:first] for ln in st]
    out += [ln for k in order for ln in tail[k]]
    return out + notes


def _signature_line(closed) -> str:
    """A comment naming the program's argument and result types (``float64[4]``...)."""

    def names(avals):
        return ", ".join(a.str_short() for a in avals)

    consts = [v.aval for v in closed.jaxpr.constvars]
    return (
        f"# functx program ({names(closed.in_avals)}) -> ({names(closed.out_avals)}), "
        f"constants ({names(consts)})\n"
    )


def compile_triton(closed, blocks: Blocks | None = None) -> TritonExecutable:
    """Lower, schedule and generate Triton for ``closed`` (a ClosedJaxpr), and load the module.

    Arguments:
      closed: the program (``functx.make_jaxpr(f)(*args)``, simplified or not).
      blocks: block-size limits (defaults suit a GPU; tests use small ones).
    Returns:
      A ``TritonExecutable`` (``runtime.py``): call it with the flat arguments to get
      torch tensors; ``.as_text()`` shows the kernels and the generated source.
    Example:
      >>> exe = compile_triton(functx.make_jaxpr(lambda x: functx.numpy.tanh(x) * 2.0)(x))
      >>> (y,) = exe(x)
    """
    complex_io = None
    if uses_complex(closed.jaxpr):  # complex values as pairs of real lanes (complex_lanes.py)
        closed, cin, cout = split_complex(closed)
        complex_io = (cin, cout)
    closed = conv.recognize_convs(closed)  # convolution sums as cuDNN steps (conv.py)
    closed = dot.matvec_sums(closed)  # small matrix-vector products as sums (dot.py)
    g = lower_jaxpr(closed)
    kernels = schedule.schedule(g)
    prog = TritonProgram(g, kernels, blocks)
    # the argument types head the source: Triton types a kernel's pointers by the first buffers
    # it is launched with, and the launch sites of a module keep that compiled kernel, so two
    # programs whose code is the same for other argument types (a conversion from int32 or from
    # float64) must not share a module
    src = _signature_line(closed) + prog.source()
    exe = TritonExecutable(
        g, kernels, src, schedule.describe(kernels), host=prog.host_calls, complex_io=complex_io
    )
    exe.memory_plans = dict(prog.memory_plans)  # host function -> its arena (memplan.py)
    return exe


__all__ = ["TritonProgram", "KERNEL_KINDS", "render_kernel", "DEFAULT_BLOCKS", "compile_triton"]
