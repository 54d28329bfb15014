"""From a final Jaxpr to something ``functx.jit`` can call: the backend-independent entry point.

``compile_jaxpr(closed, backend)`` lowers (``lower.py``), schedules (``schedule.py``), generates
source (``cpp/`` or ``triton/``) and compiles it (``cache.py``), returning an executable that
takes the flat list of argument leaves and returns the flat list of outputs.
``FUNCTX_LOG_COMPILES=1`` makes ``log`` print each step to stderr.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import threading
import time

import numpy as np

from functx import config
from functx.lowering import program_cache, runtime
from functx.lowering.cpp import attention as cpp_attention


def log(msg: str) -> None:
    if config.log_compiles():
        print(f"functx: {msg}", file=sys.stderr)


def compile_jaxpr(closed, backend: str = "cpu"):
    """An executable for ``closed`` (a ClosedJaxpr): "cpu" gives C++ kernels, "triton" Triton
    kernels on torch tensors."""
    with _gc_paused():
        exe = _compile_triton(closed) if backend == "triton" else _compile_cpp(closed)
    exe.closed = closed  # what it computes (``loop_ir_text`` lowers it again to print)
    return exe


_GC = {"depth": 0, "was": False, "unscanned": 0, "lock": threading.Lock()}
#: how many objects compiles may move to the collector's oldest generation unscanned before one
#: of them runs a full collection (they do not count towards the collector's own trigger of one)
_UNSCANNED_MAX = 250_000


@contextlib.contextmanager
def _gc_paused():
    """Python's cyclic garbage collector held off while a program compiles. A compile allocates
    many objects that outlive it or live until it ends (the lowering's modules, the loop IR),
    which the collector would scan again and again: the GPT block's empty-cache first call ran
    about 150 collections, two of them full, 65-100 ms of its critical path at load (session 37).

    When the last compile in flight ends, the collector is re-enabled as it was, and the objects
    allocated meanwhile are moved to its oldest generation unscanned (``gc.freeze`` then
    ``gc.unfreeze``; not where the program froze objects of its own), instead of a scan of all
    of them at the next allocation: a later full collection frees what of them is garbage (the
    GPT block's compile leaves about 48,000 such objects), at the latest the one that a compile
    runs once ``_UNSCANNED_MAX`` objects were moved so. Where the program disabled the collector,
    it is left so and nothing moved."""
    with _GC["lock"]:
        if _GC["depth"] == 0:
            _GC["was"] = gc.isenabled()
            gc.disable()
        _GC["depth"] += 1
    full = False
    try:
        yield
    finally:
        with _GC["lock"]:
            _GC["depth"] -= 1
            if _GC["depth"] == 0 and _GC["was"]:
                _GC["unscanned"] += gc.get_count()[0]
                full = _GC["unscanned"] > _UNSCANNED_MAX
                if full:
                    _GC["unscanned"] = 0
                elif gc.get_freeze_count() == 0:
                    gc.freeze()
                    gc.unfreeze()
                gc.enable()
        if full:  # (their garbage, freed now: outside the lock, as finalizers may compile)
            gc.collect()


def loop_ir_text(closed) -> str:
    """The loop IR of ``closed`` (a ClosedJaxpr) as the backends see it: lowered, scheduled and
    printed with its kernel grouping (``loopir.pp_graph``); ``lower(...).as_text()`` shows it.
    Lowered again here, so a program loaded from the program cache prints it too."""
    from functx.lowering import loopir, lower, schedule  # lazy: not in import functx

    g = lower.lower_jaxpr(cpp_attention.fuse(closed))  # (as _lower_cpp: the flash steps)
    return loopir.pp_graph(g, schedule.schedule(g))


def _compile_triton(closed):
    """Generate the Triton module and load it through the disk cache (the module file is keyed
    by a hash of its source; Triton compiles the kernels at their first launch, into its own
    cache under the same directory: see ``triton/runtime.py``)."""
    # lazy: optional dependencies (torch, triton)
    from functx.lowering.triton import program as triton_backend
    from functx.lowering.triton.runtime import JitExecutable

    t0 = time.perf_counter()
    exe = triton_backend.compile_triton(closed)
    state = "new module" if exe.module_written else "module from the cache"
    log(
        f"generated {exe.kernel_count()} Triton kernels in {time.perf_counter() - t0:.2f}s "
        f"({state}: {exe.module_path})"
    )
    return JitExecutable(exe)


def _compile_cpp(closed):
    key = program_cache.key_of(closed)
    exe = program_cache.load(key, closed) if key is not None else None
    if exe is not None:
        log(f"loaded the compiled program from the cache ({exe.so_path})")
    else:
        exe = _lower_cpp(closed)
        if key is not None:
            program_cache.store(key, exe, closed)
    # what the program reads: its flat runner checks every call against these
    exe.in_specs = [(tuple(a.shape), np.dtype(a.dtype)) for a in closed.in_avals]
    return exe


def _lower_cpp(closed):
    # lazy: only on a program-cache miss (cache.py costs ~85 ms of import functx)
    from functx.lowering import cache
    from functx.lowering.cpp import prelude

    # the prelude's precompiled header builds on another core while the lowering is imported, then
    # the call extension of the runtime (when not cached) while the program is lowered: ready for
    # the first run instead of compiling beside it
    header = cache.PreludeBuild(prelude.PRELUDE, then=runtime.fast_call)
    # lazy: the lowering only on a program-cache miss (tests/lowering/test_program_cache.py)
    from functx.lowering import lower, schedule
    from functx.lowering.cpp import dot, program

    # (attention's chain -> flash steps: here, after the program cache's key, whose Jaxpr is the
    # one before, so a warm process does not run the pass)
    closed = cpp_attention.fuse(closed)
    g = lower.lower_jaxpr(closed)
    dot.fold_product_updates(g)  # (products that update a buffer: C++ only)
    kernels = schedule.schedule(g, costly_once=True)
    prog = program.CppProgram(g, kernels)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    srcs = prog.sources(units=cores or 1, header=header.header())
    out_specs = [(n.shape, n.dtype) for n in g.outputs]
    out_map = [("buf", i, aval) for i, aval in enumerate(closed.out_avals)]
    # (the first run's fresh memory, faulted in on the core the compiler leaves idle)
    warm = runtime.PoolWarmer(prog.pool_blocks, out_specs)
    t0 = time.perf_counter()
    try:
        so, compiled = cache.compile_cached(srcs, on_idle=warm.start)
    except BaseException:
        warm.give(None)  # (frees what it faulted in)
        raise
    if compiled:
        log(
            f"compiled {len(kernels)} kernels in {time.perf_counter() - t0:.2f}s"
            + (f" ({len(srcs)} translation units at once)" if len(srcs) > 1 else "")
        )
    return runtime.Executable(
        so,
        len(g.inputs),
        [c for _, c in g.consts],
        out_specs,
        out_map,
        cache.join_units(srcs),
        schedule.describe(kernels),
        in_dtypes=[n.dtype for n in g.inputs],
        host=prog.host_calls,
        warm=warm,
    )
