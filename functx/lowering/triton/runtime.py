"""Running generated Triton modules (``program.py`` writes them): loading through the disk cache,
launch sites, and the executables ``functx.jit`` holds.

* **Loading.** A module's source is stored under ``<FUNCTX_CACHE_DIR>/triton/modules`` keyed by
  a hash of the source (``cache.triton_module``) and imported from there (``@triton.jit`` needs
  the source on disk); Triton's own cache of the kernels it compiles is pointed at
  ``<FUNCTX_CACHE_DIR>/triton/kernels`` (``cache.triton_kernel_dir``).
* **Launch sites.** Each kernel launch in a module's host code goes through a ``Site``. Its first
  call goes through Triton (``kernel[grid](...)``), which compiles the kernel and returns it; later
  calls give the compiled kernel's launcher the grid, the stream and the buffers directly, which
  skips Triton's per-call argument binding and specialisation. Triton compiles a kernel for the
  pattern of its pointers' 16-byte alignment, so a site keeps a compiled kernel per pattern (the
  first call with a new pattern goes through Triton): a host loop passing slices of a stacked
  buffer (25 float32 values a step: aligned every fourth step) launches directly every step.
  Every call goes through Triton while a Triton launch hook (a profiler) is set.
  ``FUNCTX_TRITON_DIRECT=0`` turns the direct launches off. Before an executable's first run on
  a GPU, ``precompile.py`` compiles its kernels in parallel (a dry run of the host code records
  each site's launches), so those first launches find them compiled.
* **Launch plans.** A program whose host code is only allocations and launches (checked on its
  source: ``plan_eligible``) and that launches directly, not through a graph, records a
  ``LaunchPlan`` per stream on its second call on a device: per launch the compiled kernel's
  launcher, the grid and where each address comes from (an input, an output, or bound once:
  constants, the scratch, intermediates, which the plan keeps: at most ``PLAN_MAX_BYTES``, else
  no plan). Later calls on that stream skip
  the module's host code: no allocation of intermediates, one device and stream query, hook
  check and alignment check per call instead of per launch. A call the plan was not recorded
  for (an address not 16-byte aligned, a launch hook set, another device, a graph capture) runs
  the module.
  ``LAUNCH_PLANS = False`` turns them off (``FUNCTX_TRITON_DIRECT=0`` too).
* **CUDA graphs**: programs of at least ``GRAPH_MIN_LAUNCHES`` launches (kernels, matrix
  products and graph-safe library steps, each counted as the launches it stands for:
  ``step_launches``) replay a CUDA graph of their whole host function instead of launching
  kernel by kernel, which saves the host's launch time and the 1-2.5 us the GPU idles between
  launches. Two kinds:
  - **copies** (``graph_mode == "copy"``: inputs and outputs take at most
    ``GRAPH_BYTES_PER_LAUNCH`` per launch): ``CopyGraphs``. The arguments are copied into
    static input buffers. The second call on a device (and stream) captures the program and
    returns copies of its outputs; later calls replay one of up to ``HANDOUT_INSTANCES`` more
    instances that hand out their own output buffers, each only while nothing holds its previous
    outputs (so a training loop alternates between two and copies nothing out), else the first
    instance with its outputs copied. A hand-out instance reads in place the arguments that lie
    where they lay in the previous call or in the outputs it handed out (a training loop's
    parameters: two instances then read each other's outputs), and copies only the others in.
    Where the first capture was slow (``GRAPH_SLOW_CAPTURE_S``: a host loop, whose capture runs
    every iteration's host code), every call replays the first instance. On an H100 host, the
    16-launch per-sample-gradient step on 8 samples: about 400 us with direct launches, 157 us
    replayed (with outputs copied).
  - **in place** (``graph_mode == "in place"``, larger data, where copies would cost more than the
    graph saves): ``InPlaceGraphs``. A graph reads the inputs where they lie, so it serves only
    calls whose inputs sit at the addresses it was captured with (a call with addresses seen before
    captures it: with unchanging inputs, the third call), and it hands out its own output buffers.
    Before a replay overwrites them, the storage's use count shows that nothing holds the previous
    outputs any more (an Array, a view, a DLPack export); while something does, another instance is
    captured (at most ``GRAPH_INSTANCES`` per executable and stream, within a quarter of the
    device's memory shared by the executables on the device, the least recently used first to go),
    else the call launches directly. On an H100 the per-sample-gradient step on 1024 samples (14
    launches, 7.6 GB of outputs) took 2.446 ms replayed against 2.476 launched
    (``benchmarks/gpu_per_sample.py``). A replay is ordered after earlier work on its own stream
    only: a reader of an output on another stream must be synchronised with before the output's last
    reference goes (torch's ``record_stream`` does not reach these buffers, which the graph keeps).
  Single launches gain nothing (a copy, a replay and a clone took 21 us against 13 us for one
  direct launch). ``FUNCTX_CUDA_GRAPHS=auto`` (the default) is the above; ``1`` uses graphs
  for every program, ``0`` never (also settable per executable: ``exe.use_graphs``). Programs
  that read values back to the host (``while_loop``, ``cond``) are never captured.
* **A caller's capture.** A call made while the current stream captures a CUDA graph (the
  caller's ``torch.cuda.graph``) runs the module on outputs and intermediates allocated then,
  from the graph's memory pool: no output ring, launch plan or graph of the executable's own,
  whose buffers later calls reuse and the graph's replays would write (``_run_captured``).

The executable contract (used by ``functx.jit`` and by the GPU Array work): ``exe(leaves)`` takes
the flat list of argument leaves (torch tensors, NumPy arrays, functx Arrays or scalars) and
returns a list of torch tensors on the arguments' device; ``exe.source`` is the module's source and
``exe.kernels_text`` the scheduler's one-line-per-kernel summary.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import operator
import re
import sys
import threading
import time
import types
import weakref

import numpy as np

from functx import config, dtypes
from functx.lowering import cache
from functx.lowering.compile import log
from functx.lowering.triton import interpreter, precompile


def torch_dtype_name(dt) -> str:
    return dtypes.TORCH_NAMES[np.dtype(dt)]


def interpreting() -> bool:
    """Whether Triton runs kernels in its CPU interpreter (``TRITON_INTERPRET=1``)."""
    return config.triton_interpret()


def _direct_allowed() -> bool:
    return config.triton_direct()


# --- loading -------------------------------------------------------------------------------------
def load_module(source: str):
    """Import generated source (through the disk cache). Returns ``(module, path, written)``:
    ``written`` is False when the module file was already in the cache. Modules loaded under the
    interpreter get a name of their own (their kernels are interpreter functions)."""
    key, path, written = cache.triton_module(source)
    cache.triton_kernel_dir()
    name = f"functx_triton_{key}" + ("_interp" if interpreting() else "")
    mod = sys.modules.get(name)
    if mod is None:
        if interpreting():
            interpreter.index_scalars()  # (a product's loop over its contraction slice)
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[name]
            raise
    return mod, path, written


# --- launch sites --------------------------------------------------------------------------------
_cuda = None  # (current_device, current raw stream) functions, bound on first use
_knobs = None


def _bind_cuda():
    global _cuda, _knobs, _capturing
    import torch

    _cuda = (torch._C._cuda_getDevice, torch._C._cuda_getCurrentRawStream)
    # (the C function behind torch.cuda.is_current_stream_capturing, without its Python frame)
    _capturing = torch._C._cuda_isCurrentStreamCapturing
    try:
        import triton

        _knobs = triton.knobs.runtime
    except AttributeError:
        _knobs = None


def _hooks_active() -> bool:
    """Whether a Triton launch hook (a profiler) is set: launches then go through Triton."""
    rt = _knobs
    if rt is None:
        return False
    a, b = rt.launch_enter_hook, rt.launch_exit_hook
    return (a is not None and getattr(a, "calls", True)) or (
        b is not None and getattr(b, "calls", True)
    )


def _aligned(args) -> bool:
    for a in args:
        if a.data_ptr() & 15:
            return False
    return True


class Site:
    """One kernel launch of a generated module's host code: ``site(grid0, grid1, *buffers)``."""

    __slots__ = ("kernel", "num_warps", "fast", "name", "note", "exact")

    def __init__(self, kernel, num_warps: int):
        self.kernel = kernel
        self.num_warps = num_warps
        # device index (16-byte aligned buffers), or (device index, _misaligned bits) ->
        # _fast_entry(the kernel Triton compiled for that alignment)
        self.fast: dict = {}
        self.name = getattr(kernel, "__name__", None) or getattr(
            getattr(kernel, "fn", None), "__name__", "kernel"
        )
        self.note = ""  # why launches go through Triton, when they do
        self.exact = None  # compiled without FMA contraction (float64 buffers): on first launch

    @property
    def mode(self) -> str:
        """ "direct" once launches skip Triton's dispatch, else "triton"."""
        return "direct" if self.fast else "triton"

    def __call__(self, g0, g1, *args):
        fast = self.fast
        if fast:
            dev = _cuda[0]()
            if not _hooks_active():
                # the buffers' addresses as integers: the launcher takes them as they are
                # (given tensors, it asks each for data_ptr() and checks it with the driver)
                ptrs = [a.data_ptr() for a in args]
                bits = 0
                for p in ptrs:
                    bits |= p
                # (the kernel compiled for 16-byte aligned buffers, else for this pattern)
                f = fast.get(dev if not bits & 15 else (dev, _misaligned(ptrs)))
                if f is not None:
                    if f[0]:  # the launcher's C function (no scratch memory to allocate)
                        f[1](
                            g0,
                            g1,
                            1,
                            _cuda[1](dev),
                            f[2],
                            f[3],
                            f[4],
                            None,
                            None,
                            f[5],
                            None,
                            None,
                            None,
                            *ptrs,
                        )
                    else:  # the launcher object
                        f[1](g0, g1, 1, _cuda[1](dev), f[2], f[5], None, None, None, *ptrs)
                    return
        self.through_triton(g0, g1, args)

    def options(self, args) -> dict:
        """Triton's launch options for this site (decided by the first launch's buffers)."""
        if self.exact is None:
            self.exact = any(str(getattr(a, "dtype", "")) == "torch.float64" for a in args)
        if self.exact:  # no contraction into FMAs: float64 kernels (Dekker/Knuth steps in
            # functx/_xlamath.py, compensated sums) need each product rounded as written
            return {"num_warps": self.num_warps, "enable_fp_fusion": False}
        return {"num_warps": self.num_warps}

    def through_triton(self, g0, g1, args):
        recorder = precompile.DRY_RUN.recorder
        if recorder is not None:  # (precompile.py's dry run: no launch)
            recorder(self, g0, g1, args)
            return
        ck = self.kernel[(g0, g1)](*args, **self.options(args))
        if ck is None or interpreting() or not _direct_allowed():
            return
        if _cuda is None:
            _bind_cuda()
        dev = _cuda[0]()
        ptrs = [a.data_ptr() for a in args]
        key = dev if _aligned(args) else (dev, _misaligned(ptrs))
        if key in self.fast:
            return
        try:
            self.fast[key] = _fast_entry(ck)
        except AttributeError as e:  # another Triton's compiled-kernel interface
            if not self.note:
                self.note = f"direct launches unavailable ({e})"
                log(f"Triton kernel {self.name}: {self.note}; launching through Triton")


def _misaligned(ptrs) -> int:
    """Which of the addresses ``ptrs`` are not 16-byte aligned, as bits (bit ``i``: ``ptrs[i]``):
    Triton compiles a kernel for each pattern (a host loop's slices of a stacked ``xs``/``ys``
    buffer at ``it * 100`` bytes give two), and a site keeps each pattern's compiled kernel."""
    mask, bit = 0, 1
    for p in ptrs:
        if p & 15:
            mask |= bit
        bit <<= 1
    return mask


def _fast_entry(ck):
    """``(is C, launch, function, cooperative, pdl, packed metadata)`` for a compiled kernel.
    Triton 3.6's launcher object allocates scratch memory (none for these kernels) and then
    calls its C function ``launch(grid, stream, function, cooperative, pdl, global scratch,
    profile scratch, metadata, launch metadata, enter hook, exit hook, *args)``; with no scratch,
    functx calls that function itself (about 2 us less per launch). Other Triton versions go
    through the launcher object, with the arguments ``JITFunction.run`` gives it."""
    run = ck.run
    import triton

    c_ok = (
        triton.__version__.startswith("3.6.")
        and callable(getattr(run, "launch", None))
        and getattr(run, "global_scratch_size", 1) == 0
        and getattr(run, "profile_scratch_size", 1) == 0
        and getattr(run, "num_ctas", 1) == 1
    )
    if c_ok:
        return (
            True,
            run.launch,
            ck.function,
            run.launch_cooperative_grid,
            run.launch_pdl,
            ck.packed_metadata,
        )
    return (False, run, ck.function, None, None, ck.packed_metadata)


def site(kernel, num_warps: int) -> Site:
    return Site(kernel, num_warps)


# --- launch plans --------------------------------------------------------------------------------
# The statements a host function ``run`` may hold for a launch plan: unpacking its arguments,
# allocations (``torch.empty``, the scratch, slices of a planned arena), aliases, comments and
# launch sites with constant grids. Anything else (a matrix product, a copy, a host step, a
# loop, a view of an argument) and the program runs its module every call.
_PLAN_LINE = re.compile(
    r"    (?:#.*"
    r"|\w+(?:, \w+)*,? = (?:inputs|outputs|consts)"
    r"|dev = (?:out0\.device|None)"
    r"|(?:\w+ = )+_fx_scratch\(dev, torch\.\w+, \d+\)"
    r"|\w+ = torch\.empty\(\d+, dtype=torch\.\w+, device=dev\)"
    r"|_mem_\w+ = _mem\.view\(torch\.\w+\)"
    r"|\w+ = _mem_\w+\[\d+:\d+\]"
    r"|\w+ = \w+"
    r"|_L\d+\(\d+, \d+(?:, \w+)*\)"
    r"|return outputs)(?:  #.*)?"
)
LAUNCH_PLANS = True  # (benchmarks/gpu_host_time.py compares with and without)
PLAN_TRIES = 4  # recordings per executable and stream that may fail before it stops trying
# the intermediates a plan may keep (bytes): the module frees its own after each call, for other
# work to reuse; a program with larger ones gains little from a plan (its kernels take longer)
PLAN_MAX_BYTES = 1 << 20


def plan_eligible(source: str) -> bool:
    """Whether the module ``source``'s host function ``run`` is straight-line launches and
    allocations (``_PLAN_LINE``), which a ``LaunchPlan`` can replay."""
    body = source.split("\ndef run(inputs, consts, outputs):\n", 1)
    if len(body) != 2:
        return False
    lines = body[1].split("\n\n", 1)[0].rstrip("\n").split("\n")
    return all(_PLAN_LINE.fullmatch(ln) for ln in lines)


class LaunchPlan:
    """A program's launches bound once, for one device and stream: per launch the compiled
    kernel's launcher, its grid and which addresses it takes (an input's, an output's, or one
    fixed when the plan was recorded: constants, the scratch, intermediates, which the plan
    keeps). ``plan(ins, outs, stream)`` launches them with the call's input and output
    addresses and returns True, or returns False (nothing launched) where the call differs from
    the recording in what a kernel was compiled for (an address not 16-byte aligned), a launch
    hook is set, or the current device or stream is another: the module then runs as always.
    (``run_on`` never calls a plan while the stream captures a CUDA graph.)

    What it saves per call, against the module's ``run`` and its sites: the intermediates'
    allocations, and per launch the device and stream queries, the hook check, the buffers'
    ``data_ptr`` calls and the site's lookup of its compiled kernel. Calls on one stream share
    the intermediates, so they launch under a lock (their kernels then run in order on the
    stream, one call's after the other's)."""

    __slots__ = ("launches", "fixed", "index", "stream", "keep", "lock")

    def __init__(self, launches, fixed, index, stream, keep):
        # (the launcher with the grid, stream and kernel bound, a function picking its addresses)
        self.launches = launches
        self.fixed = fixed  # addresses bound at recording, after the inputs' and outputs'
        self.index = index
        self.stream = stream
        self.keep = keep  # the intermediates (alive for the plan's life)
        self.lock = threading.Lock()

    def __call__(self, ins, outs, stream) -> bool:
        """Launch for ``ins`` and ``outs`` on ``stream`` (the current stream of the plan's
        device, which the caller looked up), or return False."""
        ptrs = [t.data_ptr() for t in ins]
        ptrs += [t.data_ptr() for t in outs]
        bits = 0
        for p in ptrs:
            bits |= p
        if bits & 15 or stream != self.stream or _cuda[0]() != self.index or _hooks_active():
            return False
        ptrs += self.fixed
        with self.lock:
            for launch, pick in self.launches:
                launch(*pick(ptrs))
        return True


def _capturing() -> bool:
    """Whether the current CUDA stream is capturing a graph (``_bind_cuda`` rebinds the name to
    torch's C function)."""
    return sys.modules["torch"].cuda.is_current_stream_capturing()


def _pick(positions):
    """A function of a list returning its items at ``positions`` as a tuple."""
    if len(positions) == 1:
        (p,) = positions
        return lambda ptrs: (ptrs[p],)
    return operator.itemgetter(*positions)


def run_recorded(module, ins, consts, outs) -> list:
    """Run ``module``'s host code once (its kernels launch) and return each launch as
    ``(site, grid0, grid1, buffers)``: ``run`` called with its sites behind recording stand-ins
    in a copy of the module's globals (the module itself is not changed)."""
    calls = []

    def stand_in(site):
        def launch(g0, g1, *bufs):
            calls.append((site, g0, g1, bufs))
            site(g0, g1, *bufs)

        return launch

    scope = dict(vars(module))
    scope.update((k, stand_in(v)) for k, v in vars(module).items() if isinstance(v, Site))
    types.FunctionType(module.run.__code__, scope)(ins, consts, outs)
    return calls


def record_plan(module, index: int, stream, ins, consts, outs):
    """Run ``module``'s host code on ``ins``/``consts``/``outs`` (a real run, on the current
    stream ``stream`` of device ``index``), recording its launches; returns their
    ``LaunchPlan``, or None where one cannot stand for later calls (an argument appears twice,
    a buffer that is not an argument shares an argument's memory, an address is not 16-byte
    aligned, or a site has no compiled kernel to launch directly) or would keep intermediates
    of more than ``PLAN_MAX_BYTES``."""
    calls = run_recorded(module, ins, consts, outs)
    args = list(ins) + list(outs)
    where = {id(t): i for i, t in enumerate(args)}
    if len(where) < len(args):
        return None
    storages = {t.untyped_storage().data_ptr() for t in args}
    fixed_at: dict = {}  # id -> position in the address list
    fixed, keep = [], []
    for t in consts:
        where.setdefault(id(t), len(args) + len(fixed))
        fixed.append(t.data_ptr())
    launches = []
    for site, g0, g1, bufs in calls:
        positions = []
        for b in bufs:
            p = where.get(id(b), fixed_at.get(id(b)))
            if p is None:
                if b.untyped_storage().data_ptr() in storages:
                    return None  # (a view of an argument)
                p = fixed_at[id(b)] = len(args) + len(fixed)
                fixed.append(b.data_ptr())
                keep.append(b)
            positions.append(p)
        f = site.fast.get(index)
        if f is None or any(p & 15 for p in fixed) or any(t.data_ptr() & 15 for t in args):
            return None
        if f[0]:  # (the arguments Site.__call__ gives the C function or the launcher object)
            head = (g0, g1, 1, stream, f[2], f[3], f[4], None, None, f[5], None, None, None)
        else:
            head = (g0, g1, 1, stream, f[2], f[5], None, None, None)
        launches.append((functools.partial(f[1], *head), _pick(positions)))
    if sum(t.untyped_storage().nbytes() for t in keep) > PLAN_MAX_BYTES:
        return None
    return LaunchPlan(tuple(launches), fixed, index, stream, keep)


# --- matrix products -----------------------------------------------------------------------------
_fp32_mode = None  # (get, set, TF32 value, float32 value), bound on first use


def _bind_fp32_mode():
    """Torch's switch between TF32 and full float32 cuBLAS products: ``fp32_precision``
    ("tf32" / "ieee"; torch 2.9 on) or the older ``allow_tf32`` (True / False)."""
    global _fp32_mode
    import torch

    m = torch.backends.cuda.matmul
    if hasattr(m, "fp32_precision"):
        _fp32_mode = (
            lambda: m.fp32_precision,
            lambda v: setattr(m, "fp32_precision", v),
            "tf32",
            "ieee",
        )
    else:
        _fp32_mode = (lambda: m.allow_tf32, lambda v: setattr(m, "allow_tf32", v), True, False)


def matmul(a, b, out, tf32: bool) -> None:
    """``torch.matmul(a, b, out=out)``; float32 products on a GPU in TF32 if ``tf32`` else in
    full float32, whatever torch's own setting (set for the call, then restored)."""
    import torch

    if out.dtype != torch.float32 or out.device.type != "cuda":
        torch.matmul(a, b, out=out)
        return
    if _fp32_mode is None:
        _bind_fp32_mode()
    get, put, on, off = _fp32_mode
    want = on if tf32 else off
    prev = get()
    if prev == want:
        torch.matmul(a, b, out=out)
        return
    put(want)
    try:
        torch.matmul(a, b, out=out)
    finally:
        put(prev)


# --- scratch -------------------------------------------------------------------------------------
_SCRATCH: dict = {}  # (device, torch dtype) -> the scratch tensor
_SCRATCH_KEPT: list = []  # every scratch tensor made: graphs captured with one write into it


def scratch(dev, dtype, n: int):
    """A tensor of at least ``n`` elements of ``dtype`` on ``dev`` that programs store into and
    never read (``program.SCRATCH_MAX_BYTES``): shared by every program and call on the device,
    so its contents mean nothing. Never freed (a CUDA graph may have been captured with it)."""
    t = _SCRATCH.get((dev, dtype))
    if t is None or t.numel() < n:
        import torch

        t = torch.empty(max(n, 2 * (t.numel() if t is not None else 0)), dtype=dtype, device=dev)
        _SCRATCH[(dev, dtype)] = t
        _SCRATCH_KEPT.append(t)
    return t


# --- arguments -----------------------------------------------------------------------------------
def to_torch(x, dtype, device):
    """A contiguous torch tensor of ``dtype`` on ``device`` from an array-like (shape kept)."""
    import torch

    dt = np.dtype(dtype)
    tdt = getattr(torch, torch_dtype_name(dt))
    if isinstance(x, torch.Tensor):
        t = x.to(device=device, dtype=tdt)
    else:
        v = getattr(x, "_value", x)  # functx.Array
        if isinstance(v, torch.Tensor):
            return to_torch(v, dtype, device)
        a = np.ascontiguousarray(np.asarray(v, dtype=dt))
        if dt == dtypes.bfloat16:
            t = torch.from_numpy(a.view(np.uint16).copy()).view(torch.bfloat16)
        else:
            t = torch.from_numpy(a.copy() if not a.flags.writeable else a)
        t = t.to(device)
    return t.contiguous()


def default_device(args):
    import torch

    for a in args:
        if isinstance(a, torch.Tensor):
            return a.device
        v = getattr(a, "_value", None)
        if isinstance(v, torch.Tensor):
            return v.device
    if torch.cuda.is_available() and not interpreting():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


# --- executables ---------------------------------------------------------------------------------
def _strides(shape) -> tuple:
    """Row-major strides, in elements, of ``shape``."""
    out, step = [], 1
    for d in reversed(shape):
        out.append(step)
        step *= max(d, 1)
    return tuple(reversed(out))


GRAPH_MIN_LAUNCHES = 4
RECYCLE_MAX_BYTES = 64 << 10  # directly launched programs with outputs this small reuse them
RECYCLE_RING = 3  # output buffers kept per output and stream (OutputRings)
GRAPH_STEP_LAUNCHES = 3  # launches a graph-safe host step stands for (see step_launches)
GRAPH_BYTES_PER_LAUNCH = 8 << 20  # copying this in and out takes about 6 us on an H100
GRAPH_INSTANCES = 2  # in-place graphs an executable keeps (a caller holding the last result)
GRAPH_MAX_CAPTURES = 16  # in-place captures of one executable, at most
HANDOUT_INSTANCES = 3  # copy-mode graphs of an executable whose outputs are handed out
# a copy-mode capture slower than this (seconds: a host loop's every iteration, thousands of
# launches) captures no hand-out instances after it: each would cost as much, to save copies
# of the arguments and results (microseconds a call)
GRAPH_SLOW_CAPTURE_S = 0.1
_ALIGN = 16  # bytes: where each static input of a copy-mode graph starts


def step_launches(step) -> int:
    """The launches a graph-safe host step stands for in the graph policy: its
    ``graph_launches`` where it says (its kernels, allocations and Python dispatch, as direct
    launches: a lone step whose host cost a replay saves), else ``GRAPH_STEP_LAUNCHES``."""
    return getattr(step, "graph_launches", None) or GRAPH_STEP_LAUNCHES


def _graph_policy(n_launches: int) -> bool:
    """Whether a program replays CUDA graphs (see the module's docstring)."""
    mode = config.cuda_graphs_mode()
    if mode in ("0", "", "no", "off"):
        return False
    return mode != "auto" or n_launches >= GRAPH_MIN_LAUNCHES


def _graph_mode(n_launches: int, io_bytes: int) -> str:
    """ "copy" where copying the inputs and outputs costs less than the graph saves, else
    "in place"."""
    return "copy" if io_bytes <= max(n_launches, 1) * GRAPH_BYTES_PER_LAUNCH else "in place"


def _use_count(t) -> int:
    """How many tensors (views, DLPack exports' tensors) share ``t``'s storage."""
    return _storage_use_count(t.untyped_storage()._cdata)


_storage_use_count = None  # torch._C._storage_Use_Count, bound by the graph classes


def _bind_use_count() -> None:
    global _storage_use_count
    if _storage_use_count is None:
        import torch

        _storage_use_count = torch._C._storage_Use_Count


class GraphMemory:
    """The memory that the in-place graphs on one device hold together (what each capture
    added to torch's reserved memory: outputs and intermediates): at most ``budget`` bytes.
    Capturing past it drops instances of the least recently used executables first (their
    outputs stay valid for whoever holds them). ``lock`` serialises every in-place graph call
    on the device, since making room changes other executables' graphs."""

    def __init__(self, budget: int):
        self.budget = budget
        self.lock = threading.RLock()
        self.users: list = []  # weak references to InPlaceGraphs, least recently used first

    def touch(self, graphs) -> None:
        """Mark ``graphs`` the most recently used."""
        if not (self.users and self.users[-1]() is graphs):
            live = [g for g in (r() for r in self.users) if g is not None and g is not graphs]
            self.users = [weakref.ref(g) for g in live] + [weakref.ref(graphs)]

    def make_room(self, graphs, keep, nbytes: int) -> bool:
        """Drop instances until ``nbytes`` more fit, least recently used first, never those of
        ``graphs`` under the key ``keep``; drops nothing where they would not fit anyway."""
        self.touch(graphs)
        users = [g for g in (r() for r in self.users) if g is not None]
        if graphs.held_bytes(keep) + nbytes > self.budget:
            return False
        held = sum(g.held_bytes() for g in users)
        while held + nbytes > self.budget:
            freed = next(
                (b for b in (g.drop_oldest(keep if g is graphs else None) for g in users) if b), 0
            )
            if not freed:
                return False
            held -= freed
        return True


_GRAPH_MEMORY: dict = {}  # torch device -> GraphMemory


class InPlaceGraphs:
    """The in-place CUDA graphs of one executable on one device and stream (module docstring).

    ``capture(ins)`` records the program reading ``ins`` where they lie and returns
    ``(replay, outs, nbytes)``; ``self(ins)`` returns handed-out outputs (new tensors on the
    graph's output buffers) or None, where the caller launches directly. Graphs are keyed by
    the inputs' addresses; at most ``limit`` instances, which ``memory`` counts (``nbytes``
    estimates an instance before its first capture). After ``GRAPH_MAX_CAPTURES`` captures
    (addresses that keep changing, executables that keep pushing each other out of
    ``memory``) it captures no more.
    """

    def __init__(self, capture, nbytes: int, memory: GraphMemory, limit: int = GRAPH_INSTANCES):
        _bind_use_count()
        self.capture = capture
        self.nbytes = nbytes
        self.memory = memory
        self.limit = limit
        self.captures = 0
        # input addresses -> [[replay, outs, use counts when free, bytes]], least recent first
        self.graphs: dict = {}
        self.seen: dict = {}  # addresses seen once (the next call with them captures)

    def __call__(self, ins):
        with self.memory.lock:
            key = tuple(t.data_ptr() for t in ins)
            found = self.graphs.pop(key, None)
            if found is None:
                if self.seen.pop(key, 0) == 0:
                    self.seen[key] = 1
                    while len(self.seen) > 8:
                        del self.seen[next(iter(self.seen))]
                    return None
                found = []
            for i, (replay, outs, free, _) in enumerate(found):
                if all(_use_count(o) == n for o, n in zip(outs, free)):
                    found.append(found.pop(i))  # the most recently used last
                    self.graphs[key] = found  # (so is its key)
                    self.memory.touch(self)
                    replay()
                    return [o.detach() for o in outs]
            # every instance's outputs are held (or none yet): capture another, if allowed
            if found:
                self.graphs[key] = found
            if (
                len(found) >= self.limit
                or self.captures >= GRAPH_MAX_CAPTURES
                or self.held_bytes(key) + self.nbytes > self.memory.budget
            ):
                return None
            while self.instances() >= self.limit and self.drop_oldest(key):
                pass  # this executable's graphs for other addresses go first
            if not self.memory.make_room(self, key, self.nbytes):
                return None
            self.captures += 1
            replay, outs, nbytes = self.capture(ins)
            self.nbytes = max(self.nbytes, nbytes)
            found.append([replay, outs, [_use_count(o) for o in outs], nbytes])
            self.graphs[key] = found
            replay()
            return [o.detach() for o in outs]

    def instances(self) -> int:
        return sum(map(len, self.graphs.values()))

    def held_bytes(self, key=None) -> int:
        """What the instances hold (those under ``key`` only, where given)."""
        if key is not None:
            return sum(inst[3] for inst in self.graphs.get(key, ()))
        return sum(inst[3] for insts in self.graphs.values() for inst in insts)

    def drop_oldest(self, keep=None) -> int:
        """Drop the least recently used instance not under the key ``keep``; returns the bytes
        it held (0: none to drop)."""
        for k, insts in self.graphs.items():
            if k != keep:
                inst = insts.pop(0)  # its outputs stay valid for whoever holds them
                if not insts:
                    del self.graphs[k]
                return max(inst[3], 1)  # (something was dropped)
        return 0


def _as_shape(t, shape):
    """``t`` itself where it has ``shape`` (a view would count as one more holder), else a view."""
    return t if t.shape == shape else t.view(shape)


class _Layout:
    """Static inputs for the positions ``copied`` of a copy-mode graph: aligned views of one byte
    buffer, filled by one ``torch.cat`` of the arguments' bytes (one kernel; torch's multi-tensor
    copy issues a device-to-device memcpy per tensor, about 5 us of host time each). Each view
    starts at a multiple of ``_ALIGN`` bytes, as the kernels' pointer specialisation expects."""

    def __init__(self, ins, copied: tuple, dev):
        torch = sys.modules["torch"]
        self.copied = copied
        sizes = [ins[p].numel() * ins[p].element_size() for p in copied]
        starts, end = [], 0
        for n in sizes:
            starts.append(end)
            end += -(-n // _ALIGN) * _ALIGN
        self.flat = torch.empty(max(end, 1), dtype=torch.uint8, device=dev)
        self.filled = self.flat[:end]  # (cat's ``out``: exactly the pieces' bytes)
        self.views = {
            p: self.flat[a : a + n].view(ins[p].dtype).view(ins[p].shape)
            for p, a, n in zip(copied, starts, sizes)
        }
        # the padding between arguments: slices of one zero buffer, as cat's pieces
        pads = torch.zeros(_ALIGN, dtype=torch.uint8, device=dev)
        self.pads = [pads[: -n % _ALIGN] if n % _ALIGN else None for n in sizes]

    def fill(self, ins) -> None:
        torch = sys.modules["torch"]
        pieces = []
        for p, pad in zip(self.copied, self.pads):
            pieces.append(ins[p].reshape(-1).view(torch.uint8))
            if pad is not None:
                pieces.append(pad)
        if pieces:  # (nothing to copy: every input is read in place)
            torch.cat(pieces, out=self.filled)


class _Instance:
    """A hand-out graph: reads the inputs at ``bound`` (position -> address) where they lie and
    the others from ``layout``'s static inputs; writes ``outs``, which it hands out."""

    __slots__ = ("bound", "layout", "outs", "graph", "free", "used", "small", "held", "out_map")

    def __init__(self, bound: dict, layout, outs, graph, free):
        self.bound, self.layout, self.outs, self.graph = bound, layout, outs, graph
        self.used = 0  # the call that last replayed it
        # scalar outputs beside larger ones (a loss, a metric) are copied out, so that holding
        # them (``losses.append(loss)``) leaves the instance free
        small = [o.numel() <= 1 for o in outs]
        self.small = small if not all(small) else [False] * len(outs)
        self.set_free(free)
        # address of each handed-out output -> (this instance, its index): see CopyGraphs
        self.out_map = {
            o.data_ptr(): (self, q) for q, (o, s) in enumerate(zip(outs, self.small)) if not s
        }

    def set_free(self, free) -> None:
        """The use counts of the handed-out outputs' storages when nothing else holds them."""
        self.free = free
        # (the storages, fixed for the instance's life: no storage object made per call)
        self.held = [
            (o.untyped_storage()._cdata, n) for o, n, s in zip(self.outs, free, self.small) if not s
        ]

    def matches(self, addrs) -> bool:
        return all(addrs[p] == a for p, a in self.bound.items())

    def is_free(self) -> bool:
        """Nothing but this instance holds its handed-out outputs (the storages' use counts)."""
        count = _storage_use_count
        return all(count(c) == n for c, n in self.held)

    def results(self) -> list:
        return [o.clone() if s else o.detach() for o, s in zip(self.outs, self.small)]


class CopyGraphs:
    """The copy-mode CUDA graphs of one executable on one device and stream (module docstring).

    The first call captures the fallback instance: every argument copied into static inputs
    (``_Layout``), its outputs copied out after each replay (they never escape). Later calls
    replay up to ``HANDOUT_INSTANCES`` hand-out instances (``_Instance``), which hand out their
    own output buffers, each replayed only when nothing holds its previous outputs (the storages'
    use counts), so a held result is never overwritten. A hand-out instance reads in place the
    inputs whose addresses it was captured with (``bound``): those that lay where they lay in the
    previous call (the same arrays passed again) or in the outputs the previous call handed out
    (a training loop's parameters); only the others are copied in. When a call's inputs are the
    outputs of instance ``P``, two instances are captured as a pair: ``X`` reads ``P``'s output
    buffers and writes new ones, ``Y`` reads ``X``'s and writes into ``P``'s (``P`` retires), so a
    loop ``params = step(params, batch)`` alternates between them and copies only the batch.
    A call no instance serves captures a new one, retiring the least recently used instance
    whose outputs are free where the limit is reached (at most ``GRAPH_MAX_CAPTURES`` captures;
    none after a first capture slower than ``GRAPH_SLOW_CAPTURE_S``: a program with a host loop,
    whose every capture runs all its iterations' host code, replays the fallback instance from
    its third call on instead of capturing a hand-out instance on the third and fourth).
    Instances share the fallback's memory pool (they replay one after another on one stream, and
    their outputs are allocated outside it), so an instance costs its outputs' bytes.
    Scalar outputs beside larger ones are copied out rather than handed out, so a loop that
    keeps its losses does not hold an instance.
    ``capture(static_in, outs, pool)`` returns ``(outputs, graph)``; ``outs`` None: allocated in
    the graph's pool. ``copied`` counts the arguments copied in by the last call.
    """

    def __init__(self, capture, ins, dev):
        _bind_use_count()
        self.capture = capture
        self.dev = dev
        self.full = _Layout(ins, tuple(range(len(ins))), dev)
        self.static_in = [self.full.views[p] for p in range(len(ins))]
        self.layouts = {self.full.copied: self.full}
        self.copying = None  # (outputs, graph): the fallback instance, outputs copied out
        self.handout: list = []  # _Instance, most bound inputs first
        self.last_addrs = None  # the previous call's input addresses
        self.last_out: dict = {}  # address -> (instance, output index) of the last hand-out
        self.copied = len(ins)
        self.captures = 0  # hand-out instances captured (at most GRAPH_MAX_CAPTURES)
        self.calls = 0

    def __call__(self, ins):
        addrs = [t.data_ptr() for t in ins]
        last, self.last_addrs = self.last_addrs, addrs
        if self.copying is None:  # (filled first: the capture runs the program once)
            self.full.fill(ins)
            t0 = time.perf_counter()
            self.copying = self.capture(self.static_in, None, None)
            if time.perf_counter() - t0 > GRAPH_SLOW_CAPTURE_S:
                self.captures = GRAPH_MAX_CAPTURES  # (no more: copies in and out from now on)
            return self._copy_out(ins, filled=True)
        inst = next((i for i in self.handout if i.matches(addrs) and i.is_free()), None)
        if inst is None or len(inst.bound) < len(ins):  # (else no instance could bind more)
            bind = self._bindable(ins, addrs, last)
            if inst is None or len(inst.bound) < len(bind):
                inst = self._new_instance(ins, addrs, bind) or inst
        if inst is None:
            return self._copy_out(ins)
        self.copied = len(inst.layout.copied)
        self.calls += 1
        inst.used = self.calls
        inst.layout.fill(ins)
        inst.graph.replay()
        self.last_out = inst.out_map
        return inst.results()

    def _copy_out(self, ins, filled=False):
        torch = sys.modules["torch"]
        self.copied = len(ins)
        self.last_out = {}
        if not filled:
            self.full.fill(ins)
        static_out, g = self.copying
        g.replay()
        outs = [torch.empty_like(o) for o in static_out]
        torch._foreach_copy_(outs, static_out)
        return outs

    def _bindable(self, ins, addrs, last) -> dict:
        """Positions a new instance may read in place: position -> the hand-out output it is
        (instance, output index), or None where the input lies where it lay last call."""
        out = {}
        for p, a in enumerate(addrs):
            src = self.last_out.get(a)
            if src is not None:
                o = src[0].outs[src[1]]
                if o.dtype == ins[p].dtype and o.numel() == ins[p].numel():
                    out[p] = src
                    continue
            if last is not None and last[p] == a:
                out[p] = None
        return out

    def _layout(self, ins, bound) -> _Layout:
        copied = tuple(p for p in range(len(ins)) if p not in bound)
        lay = self.layouts.get(copied)
        if lay is None:
            lay = self.layouts[copied] = _Layout(ins, copied, self.dev)
        return lay

    def _capture_one(self, ins, bound, inputs, outs):
        """Capture an instance reading ``inputs`` (position -> tensor) in place, the rest from
        its layout; ``outs`` None: new output buffers."""
        torch = sys.modules["torch"]
        lay = self._layout(ins, bound)
        static = [inputs[p] if p in bound else lay.views[p] for p in range(len(ins))]
        if outs is None:
            outs = [torch.empty_like(o) for o in self.copying[0]]
        free = [_use_count(o) for o in outs]
        outs, g = self.capture(static, outs, self.copying[1].pool())
        return _Instance(bound, lay, outs, g, free)

    def _new_instance(self, ins, addrs, bind):
        """Capture the instance (or the pair, when the inputs are another instance's outputs)
        best for this call; None where no more may be captured."""
        chained = {p: s for p, s in bind.items() if s is not None}
        source = next(iter(chained.values()))[0] if chained else None
        if source is not None and any(s[0] is not source for s in chained.values()):
            bind = {p: s for p, s in bind.items() if s is None or s[0] is source}
            chained = {p: s for p, s in chained.items() if s[0] is source}
        pair = source is not None and source in self.handout
        need = 2 if pair else 1
        if self.captures + need > GRAPH_MAX_CAPTURES:
            return None
        while HANDOUT_INSTANCES - len(self.handout) + (1 if pair else 0) < need:
            idle = [i for i in self.handout if i is not source and i.is_free()]
            if not idle:
                return None
            self.handout.remove(min(idle, key=lambda i: i.used))  # the least recently used
        self.captures += need
        inputs = {p: ins[p] for p in bind}
        x = self._capture_one(ins, {p: addrs[p] for p in bind}, inputs, None)
        if pair:  # y reads x's outputs and writes into the source's; the source retires
            self.handout.remove(source)
            y_in = {p: _as_shape(x.outs[q], ins[p].shape) for p, (_, q) in chained.items()}
            y_in.update((p, ins[p]) for p in bind if p not in chained)
            y_bound = {p: t.data_ptr() for p, t in y_in.items()}
            y = self._capture_one(ins, y_bound, y_in, source.outs)
            y.set_free(source.free)
            self.handout.append(y)
        self.handout.append(x)
        self.handout.sort(key=lambda i: -len(i.bound))
        return x


class OutputRings:
    """The output buffers of a directly launched program on one device, kept for reuse: per
    stream and output up to ``RECYCLE_RING`` buffers. A call hands out a new tensor on a buffer
    that nothing but the ring holds any more (its storage's use count), else on a new buffer, so
    a training loop (``params = step(params, batch)``) or a caller dropping each result
    allocates nothing (torch's allocator, an allocation and its free, is most of a small
    step's host time besides the launches; on an H100 host ``torch.empty`` took 4.2 us, a
    ``detach`` 0.7). An executable keeps at most ``RECYCLE_RING * RECYCLE_MAX_BYTES`` per stream.
    As for the graphs' outputs, reuse is ordered after the earlier work on the stream the
    buffer was made on: a reader on another stream must be synchronised with before the
    output's last reference goes."""

    __slots__ = ("specs", "dev", "index", "rings")

    def __init__(self, specs, dev):
        _bind_use_count()
        if dev.type == "cuda" and _cuda is None:
            _bind_cuda()
        self.specs = specs
        self.dev = dev
        self.index = dev.index if dev.type == "cuda" else None  # (None: no streams)
        self.rings: dict = {}  # stream -> per output [(buffer, its storage, free use count)]

    def take(self) -> list:
        index = self.index
        stream = 0 if index is None else _cuda[1](index)
        rings = self.rings.get(stream)
        if rings is None:
            rings = self.rings[stream] = [[] for _ in self.specs]
        count = _storage_use_count
        outs = []
        for ring, spec in zip(rings, self.specs):
            for buf, c, free in ring:
                if count(c) == free:
                    out = buf.detach()
                    if count(c) == free + 1:  # (else another thread took it meanwhile)
                        break
            else:
                buf = out = self.new(spec)
                if len(ring) < RECYCLE_RING:
                    c = buf.untyped_storage()._cdata
                    ring.append((buf, c, count(c)))  # (the use count while only the ring holds it)
                    out = buf.detach()
            outs.append(out)
        return outs

    def new(self, spec):
        shape, strides, dtype = spec
        return sys.modules["torch"].empty_strided(shape, strides, dtype=dtype, device=self.dev)


def _graph_memory(dev) -> GraphMemory:
    """The device's ``GraphMemory``: a quarter of its memory."""
    mem = _GRAPH_MEMORY.get(dev)
    if mem is None:
        import torch

        mem = _GRAPH_MEMORY.setdefault(
            dev,
            GraphMemory(  # (one per device, whatever threads)
                torch.cuda.get_device_properties(dev).total_memory // 4
            ),
        )
    return mem


# The executable whose host code runs on each thread: generated modules (shared by executables
# of the same source) call their host steps through ``_host_step_running``.
_running = threading.local()


def _host_step_running(index, ins, outs):
    return _running.exe._host_step(index, ins, outs)


def _to_numpy(t, dtype):
    """A flat tensor's values as a NumPy array of ``dtype`` (bfloat16 through its bits)."""
    import torch

    dt = np.dtype(dtype)
    if t.dtype == torch.bfloat16:
        return t.detach().view(torch.int16).cpu().numpy().view(dt).copy()
    return t.detach().cpu().numpy().astype(dt, copy=True)


def _from_numpy(a, torch_dtype):
    import torch

    if torch_dtype == torch.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def _np_complex(tdt):
    import torch

    return {torch.complex64: dtypes.complex64, torch.complex128: dtypes.complex128}[tdt]


class TritonExecutable:
    """A compiled program: call it with the flat inputs (torch tensors, NumPy arrays, functx
    Arrays or scalars); returns the outputs as torch tensors on the inputs' device."""

    def __init__(self, graph, kernels, source: str, kernels_text: str, host=None, complex_io=None):
        import torch

        self.source = source
        self.kernels_text = kernels_text
        self.n_kernels = len(kernels)
        self.in_specs = [
            (tuple(n.shape), n.dtype, getattr(torch, torch_dtype_name(n.dtype)), math.prod(n.shape))
            for n in graph.inputs
        ]
        self.out_specs = [
            (tuple(n.shape), _strides(n.shape), getattr(torch, torch_dtype_name(n.dtype)))
            for n in graph.outputs
        ]
        self.consts = [(np.asarray(c), n.dtype) for n, c in graph.consts]
        self._device_consts: dict = {}
        self.module, self.module_path, self.module_written = load_module(source)
        self.sites = [
            v for k, v in vars(self.module).items() if k.startswith("_L") and isinstance(v, Site)
        ]
        # host steps (callbacks) run Python between launches: never inside a CUDA graph, unless
        # the step says it only queues device work on the current stream (``graph_safe``: the
        # convolution steps, lowering/triton/conv.py), which a capture then records
        self.host_calls = list(host or ())
        if self.host_calls:  # (the module's dispatcher: the same function for every executable)
            self.module._fx_host = _host_step_running
        safe_steps = [c[0] for c in self.host_calls if getattr(c[0], "graph_safe", False)]
        self.graph_safe = ".item()" not in source and len(safe_steps) == len(self.host_calls)
        self.n_launches = (
            len(self.sites) + source.count("    _fx_dot(") + sum(map(step_launches, safe_steps))
        )
        io_bytes = sum(n * np.dtype(dt).itemsize for _, dt, _, n in self.in_specs) + sum(
            math.prod(n.shape) * np.dtype(n.dtype).itemsize for n in graph.outputs
        )
        self.use_graphs = _graph_policy(self.n_launches)
        self.graph_mode = _graph_mode(self.n_launches, io_bytes)
        self.out_bytes = sum(math.prod(n.shape) * np.dtype(n.dtype).itemsize for n in graph.outputs)
        self.graph_note = ""  # why a capture failed, if one did
        self._graphs: dict = {}
        self._graph_lock = threading.Lock()
        self._ran: set = set()
        self._last = (None, None)  # (device, its constants): the common single-device case
        self._rings = None  # OutputRings of the first device (small outputs only)
        # (device index, stream) -> its LaunchPlan, or how many recordings failed (None: the
        # host code is more than launches and allocations)
        self._plans = {} if not self.host_calls and plan_eligible(source) else None
        self._torch = torch
        # complex inputs and outputs (``complex_io``: which ones, from complex_lanes.py): the
        # kernels see them as real arrays with a trailing axis of 2 (torch.view_as_real)
        self.complex_io = None
        if complex_io is not None:
            cin, cout = complex_io
            cdt = [
                getattr(torch, torch_dtype_name(dtypes.COMPLEX_OF[n.dtype])) if c else None
                for n, c in zip(graph.inputs, cin)
            ]  # (a real input beside complex ones has no complex dtype)
            self.complex_io = (
                cdt,
                list(cout),
            )
            self.run_on = self._run_complex  # (real programs keep the plain method)

    def as_text(self) -> str:
        return f"# kernels\n{self.kernels_text}\n\n# Triton\n{self.source}"

    def kernel_count(self) -> int:
        return self.n_kernels

    def launch_modes(self) -> dict:
        """How many launch sites launch directly and how many through Triton."""
        out: dict = {}
        for s in self.sites:
            out[s.mode] = out.get(s.mode, 0) + 1
        return out

    def _consts(self, dev):
        consts = self._device_consts.get(dev)
        if consts is None:
            consts = [to_torch(c, dt, dev) for c, dt in self.consts]
            self._device_consts[dev] = consts
        return consts

    def _outputs(self, dev):
        empty = self._torch.empty_strided
        return [empty(s, st, dtype=t, device=dev) for s, st, t in self.out_specs]

    def __call__(self, *args):
        return self.call(args)

    def call(self, args):
        """``self(*args)`` for a sequence of arguments (what ``functx.jit`` calls)."""
        torch = self._torch
        specs = self.in_specs
        if len(args) != len(specs):
            raise TypeError(f"expected {len(specs)} arguments, got {len(args)}")
        dev = None
        for a in args:
            if type(a) is torch.Tensor:
                dev = a.device
                break
        if dev is None:
            dev = default_device(args)
        ins = list(args)
        if self.complex_io is not None:
            args = ins = self._complex_args(ins, dev)
        for i, (a, spec) in enumerate(zip(args, specs)):
            if (
                type(a) is not torch.Tensor
                or a.dtype is not spec[2]
                or a.device != dev
                or not a.is_contiguous()
            ):
                ins[i] = a = to_torch(a, spec[1], dev)
            if a.numel() != spec[3]:
                raise TypeError(
                    f"argument of shape {tuple(np.shape(args[i]))} where {spec[0]} was compiled"
                )
        return self.run_on(dev, ins)

    def run_on(self, dev, ins):
        """Run on ``dev`` (a torch device) with ``ins`` already as the kernels take them:
        contiguous tensors on ``dev`` of the compiled dtypes and sizes (``call`` makes them so;
        GPU arrays' buffers are; complex ones as complex tensors). Returns new output tensors."""
        cuda = dev.type == "cuda"
        if cuda and _capturing():
            return self._run_captured(dev, ins)
        if self.use_graphs and self.graph_safe and cuda:
            outs = self._graphed(dev, ins)
            if outs is not None:
                return outs
        last_dev, consts = self._last
        if last_dev is not dev and last_dev != dev:
            if dev not in self._ran:
                return self._first_run(dev, ins, self._outputs(dev))
            consts = self._consts(dev)
            self._last = (dev, consts)
        rings = self._rings
        if rings is not None and rings.dev == dev:
            outs = rings.take()
        else:
            empty = self._torch.empty_strided  # (on an H100 host: 2.7 us, torch.empty 3.8)
            outs = [empty(s, st, dtype=t, device=dev) for s, st, t in self.out_specs]
        if self._plans is not None and LAUNCH_PLANS and cuda:
            if self._planned(dev, ins, consts, outs):
                return outs
        self._run_module(ins, consts, outs)
        return outs

    def _run_captured(self, dev, ins):
        """A call while the current stream captures a CUDA graph (the caller's): the module runs
        on outputs and intermediates allocated now, which the capture takes from the graph's
        own memory pool. Nothing that later calls reuse goes into the graph (its replays would
        write it): no output ring's buffer (a later call may hold it), no launch plan (its
        intermediates are shared by later calls), none of this executable's own graphs (their
        static inputs and hand-out outputs)."""
        if dev not in self._ran:
            return self._first_run(dev, ins, self._outputs(dev))
        outs = self._outputs(dev)
        self._run_module(ins, self._consts(dev), outs)
        return outs

    def _planned(self, dev, ins, consts, outs) -> bool:
        """Launch through the current stream's ``LaunchPlan``, recording it on a call
        without one (that call runs the module, recording); False where the module must run."""
        index = dev.index if dev.index is not None else _cuda[0]()
        stream = _cuda[1](index)
        key = (index, stream)  # (every device's default stream is 0)
        plan = self._plans.get(key)
        if type(plan) is LaunchPlan:
            return plan(ins, outs, stream)
        tries = plan or 0
        if tries >= PLAN_TRIES or _cuda[0]() != index or _hooks_active() or not _direct_allowed():
            return False
        plan = record_plan(self.module, index, stream, ins, consts, outs)
        self._plans[key] = plan if plan is not None else tries + 1
        return True

    def _complex_args(self, args, dev):
        """The complex arguments as real views (a trailing axis of 2) of complex tensors."""
        torch = self._torch
        out = list(args)
        for i, (a, tdt) in enumerate(zip(args, self.complex_io[0])):
            if tdt is not None and not (type(a) is torch.Tensor and not a.is_complex()):
                t = (
                    to_torch(a, _np_complex(tdt), dev)
                    if not (type(a) is torch.Tensor and a.dtype is tdt and a.device == dev)
                    else a
                )
                out[i] = torch.view_as_real(t.contiguous())
        return out

    def _run_complex(self, dev, ins):
        torch = self._torch
        ins = [
            torch.view_as_real(t.contiguous()) if c is not None and t.is_complex() else t
            for t, c in zip(ins, self.complex_io[0])
        ]
        outs = TritonExecutable.run_on(self, dev, ins)
        return [torch.view_as_complex(o) if c else o for o, c in zip(outs, self.complex_io[1])]

    def _run_module(self, ins, consts, outs):
        """The module's ``run``; with host steps, this executable is the thread's running one
        for the call (the module's ``_fx_host`` routes to it; a callback may run another)."""
        if not self.host_calls:
            self.module.run(ins, consts, outs)
            return
        outer = getattr(_running, "exe", None)
        _running.exe = self
        try:
            self.module.run(ins, consts, outs)
        finally:
            _running.exe = outer

    def _host_step(self, index, ins, outs):
        """Host step ``index``: its callable on NumPy copies of ``ins`` (flat tensors), the
        results copied into ``outs``."""
        fn, in_avals, out_specs = self.host_calls[index]
        on_device = getattr(fn, "torch", None)  # a library step that runs on the device itself
        if on_device is not None:  # (FFT: torch.fft on the step's device tensors)
            on_device(ins, outs)
            return
        args = [_to_numpy(t, a.dtype).reshape(a.shape) for t, a in zip(ins, in_avals)]
        for o, r, (shape, dtype) in zip(outs, fn(*args), out_specs):
            r = np.ascontiguousarray(np.asarray(r, dtype).reshape(shape)).reshape(-1)
            o.copy_(_from_numpy(r, o.dtype))

    def _first_run(self, dev, ins, outs):
        t0 = time.perf_counter()
        consts = self._consts(dev)
        if dev.type == "cuda":
            precompile.precompile(self, dev, ins, consts)
        self._run_module(ins, consts, outs)
        self._last = (dev, consts)
        if self._rings is None and self.out_bytes <= RECYCLE_MAX_BYTES:
            self._rings = OutputRings(self.out_specs, dev)
        if dev.type == "cuda" and not _capturing():  # (no synchronisation inside a capture)
            import torch

            torch.cuda.synchronize(dev)
        self._ran.add(dev)
        where = "interpreter" if interpreting() else f"cache {cache.triton_kernel_dir()}"
        log(
            f"first run of {self.n_kernels} kernels on {dev}: {time.perf_counter() - t0:.2f}s "
            f"(Triton compiles or loads its kernels; {where})"
        )
        return outs

    # --- CUDA graphs ---------------------------------------------------------------------------
    def _graphed(self, dev, ins):
        if _cuda is None:
            _bind_cuda()
        key = (dev, _cuda[1](dev.index if dev.index is not None else _cuda[0]()))
        state = self._graphs.get(key)
        if state is None:  # the first call compiles the kernels; capture on the next one
            self._graphs[key] = "warm"
            return None
        with self._graph_lock:
            state = self._graphs.get(key)  # (again: another thread may have set it)
            try:
                if self.graph_mode == "in place":
                    if not isinstance(state, InPlaceGraphs):
                        me = weakref.ref(self)  # (no cycle through the graphs)
                        state = self._graphs[key] = InPlaceGraphs(
                            lambda ins: me()._capture_in_place(dev, ins),
                            self.out_bytes,
                            _graph_memory(dev),
                        )
                    return state(ins)
                if not isinstance(state, CopyGraphs):
                    me = weakref.ref(self)
                    state = self._graphs[key] = CopyGraphs(
                        lambda static_in, outs, pool: me()._capture(dev, static_in, outs, pool),
                        ins,
                        dev,
                    )
                return state(ins)
            except Exception as e:  # noqa: BLE001 - reported, then direct launches
                self.use_graphs = False
                self.graph_note = f"CUDA graph failed: {type(e).__name__}: {e}"
                log(f"{self.graph_note}; launching directly from now on")
                return None

    def _capture_in_place(self, dev, ins):
        """A graph of the program reading ``ins`` in place: ``(replay, outputs, the bytes its
        capture reserved)``."""
        import torch

        t0 = time.perf_counter()
        consts = self._consts(dev)
        torch.cuda.synchronize(dev)
        torch.cuda.empty_cache()  # (as the capture will) so that its reservation shows
        before = torch.cuda.memory_reserved(dev)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            outs = self._outputs(dev)
            self._run_module(ins, consts, outs)
        nbytes = max(torch.cuda.memory_reserved(dev) - before, self.out_bytes)
        log(
            f"captured {self.n_kernels} kernels into a CUDA graph on {dev} reading the inputs in "
            f"place ({nbytes / 2**20:.0f} MiB), in {time.perf_counter() - t0:.2f}s"
        )
        return g.replay, outs, nbytes

    def _capture(self, dev, static_in, outs, pool):
        """A graph of the program reading ``static_in`` and writing ``outs`` (allocated here,
        inside the graph's memory, where None); ``pool``: the memory pool of an earlier graph
        of this program to share (None for the first). No warm-up run first (torch's advice for
        a first capture): ``_graphed`` captures only after a direct run of the program on this
        device and stream, which compiled its kernels and made cuBLAS's handle, as for in-place
        graphs; a warm-up cost a whole run more (a host loop's every iteration).
        Returns ``(outputs, graph)``."""
        import torch

        t0 = time.perf_counter()
        consts = self._consts(dev)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, pool=pool):
            if outs is None:
                outs = self._outputs(dev)
            self._run_module(static_in, consts, outs)
        log(
            f"captured {self.n_kernels} kernels into a CUDA graph on {dev} in "
            f"{time.perf_counter() - t0:.2f}s"
        )
        return outs, g


class JitExecutable:
    """What ``functx.jit`` holds for the Triton backend: called with the list of flat leaves
    (like the C++ backend's ``runtime.Executable``), returns a list of torch tensors."""

    def __init__(self, exe: TritonExecutable):
        self.exe = exe
        self.source = exe.source
        self.kernels_text = exe.kernels_text
        self._call = exe.call
        self.run_on = exe.run_on

    def __call__(self, leaves):
        return self._call(leaves)


__all__ = [
    "Site",
    "site",
    "LaunchPlan",
    "record_plan",
    "run_recorded",
    "plan_eligible",
    "GraphMemory",
    "InPlaceGraphs",
    "CopyGraphs",
    "load_module",
    "to_torch",
    "default_device",
    "TritonExecutable",
    "JitExecutable",
    "interpreting",
    "torch_dtype_name",
    "matmul",
    "scratch",
]
