"""Compiling a program's Triton kernels before its first run on a GPU, several at a time.

Triton compiles a kernel at its first launch, so a program's first run compiles its kernels one
after another (each: Triton's front end, its MLIR passes, LLVM and ptxas, 0.2-4 s). Before the
first run of an executable on a GPU, ``precompile``

1. runs the module's host code with every launch site recording its first launch (the grid and
   the buffers) instead of launching: a *dry run*. Buffers are allocated and matrix products and
   the graph-safe library steps run on their uninitialised contents; no kernel runs. It stops as
   soon as every site of the module has been seen (a host loop's first iteration);
2. compiles the recorded launches in a pool of threads, one kernel per task, each with the
   arguments and options its launch will give (``Site.options``), so the compiled kernel lands in
   the kernel's own cache under the key the launch looks up (``JITFunction.warmup``), and in
   Triton's disk cache as a launch would put it; then loads it (``_init_handles``), which in
   Triton 3.6 also builds the launcher of its signature, a C compile of its own (0.2-0.4 s) that
   the first launch would otherwise make. Most of Triton's MLIR passes run without Python's lock
   and ptxas and the C compiler are processes of their own, so the compiles overlap;
3. the real run then finds every kernel compiled.

Only for programs whose host code does not depend on values: those a CUDA graph could capture
(``graph_safe``: nothing read back to the host, library steps that only queue device work), less
those with collective steps (a dry run would add a round of collectives on each process). A
compile that fails here is left to its launch, which compiles it again and raises as before.
``FUNCTX_TRITON_PRECOMPILE=0`` turns this off (each launch compiles its kernel, one by one).
"""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from functx import config
from functx.lowering.compile import log


class _DryRun(threading.local):
    recorder = None  # the recorder of launches while this thread runs a dry run (``record``)


DRY_RUN = _DryRun()  # (read by ``runtime.Site.through_triton``)


class _AllSeen(Exception):
    """Raised by the recorder once every site of the module has been seen: ends the dry run."""


def _eligible(exe) -> bool:
    if not config.triton_precompile() or config.triton_interpret():
        return False
    why = ""
    if not exe.graph_safe:
        why = "its host code reads values back or runs host steps"
    elif any(getattr(c[0], "label", "") == "collective" for c in exe.host_calls):
        why = "it has collective steps"
    if why:
        log(f"no compiles before the first run: {why} (its launches compile their kernels)")
    return not why


def record(exe, dev, ins, consts) -> dict:
    """The dry run: ``{site: (grid0, grid1, buffers)}`` of the first launch of each site that
    the host code reaches (``exe``'s sites, and those of library steps it runs)."""
    seen: dict = {}
    missing = set(exe.sites)

    def recorder(site, g0, g1, args):
        if site not in seen:
            seen[site] = (g0, g1, args)
            missing.discard(site)
            if not missing:
                raise _AllSeen

    DRY_RUN.recorder = recorder
    try:
        exe._run_module(ins, consts, exe._outputs(dev))
    except _AllSeen:
        pass
    finally:
        DRY_RUN.recorder = None
    return seen


def _workers(n_jobs: int) -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # (not on Linux)
        cpus = os.cpu_count() or 1
    return max(1, min(n_jobs, cpus))


def _device_index(dev) -> int:
    """``dev``'s index, with Triton's driver set up (in this thread, before the pool's threads
    would each start setting it up)."""
    import torch
    from triton.runtime import driver

    driver.active.get_current_target()
    return dev.index if dev.index is not None else torch.cuda.current_device()


def _on_device(index: int):
    import torch

    return torch.cuda.device(index)  # (a new thread starts on device 0)


def compile_all(jobs, index: int) -> tuple[int, list]:
    """Compile ``jobs`` (``(site, (grid0, grid1, buffers))`` pairs, one per kernel) in a pool of
    threads on device ``index``, each as its launch will (``Site.options``). Returns the pool's
    size and the names of the kernels whose compile failed (their launches compile them)."""

    def compile_one(job):
        site, (g0, g1, args) = job
        with _on_device(index):
            ck = site.kernel.warmup(*args, grid=(g0, g1), **site.options(args))
            init = getattr(ck, "_init_handles", None)
            if init is not None:  # the module loaded and, in Triton 3.6, the launcher built:
                init()  # a C compile per signature, else at the first launch, one by one

    n = _workers(len(jobs))
    with ThreadPoolExecutor(n, thread_name_prefix="functx-triton-compile") as pool:
        futures = [pool.submit(compile_one, j) for j in jobs]
        failed = [
            f"{site.name} ({type(f.exception()).__name__})"
            for (site, _), f in zip(jobs, futures)
            if f.exception() is not None
        ]
    return n, failed


def precompile(exe, dev, ins, consts) -> int:
    """Compile the kernels ``exe``'s first run on ``dev`` (a CUDA torch device) will launch, in
    parallel, before it runs. Returns how many were compiled here (0 when the program is not
    eligible, or when a site of its module has launched on ``dev`` already: another executable
    shares the module and compiled them)."""
    if not _eligible(exe):
        return 0
    index = _device_index(dev)
    # (a site that launches directly on dev, for some alignment, would run in a dry run)
    if any((k if isinstance(k, int) else k[0]) == index for s in exe.sites for k in s.fast):
        return 0
    t0 = time.perf_counter()
    try:
        jobs = list(record(exe, dev, ins, consts).items())
    except Exception as e:  # noqa: BLE001 - reported; the launches then compile one by one
        log(f"no compiles before the first run: its dry run raised {type(e).__name__}: {e}")
        return 0
    if len(jobs) < 2:  # (one kernel: its launch compiles it as soon)
        return 0
    n, failed = compile_all(jobs, index)
    log(
        f"compiled {len(jobs) - len(failed)} Triton kernels on {dev} before the first run, "
        f"{n} at a time: {time.perf_counter() - t0:.2f}s"
        + (f"; left to their launches: {', '.join(failed)}" if failed else "")
    )
    return len(jobs) - len(failed)


__all__ = ["precompile", "record", "compile_all"]
