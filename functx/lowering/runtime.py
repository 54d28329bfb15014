"""Loading compiled programs and calling them: one ctypes call per jitted call."""

from __future__ import annotations

import collections
import ctypes
import functools
import glob
import math
import os
import sys
import threading
import weakref

import numpy as np

from functx import config
from functx.array import Array, UncommittedArray
from functx.errors import FunctxTypeError

_HOST_ARRAYS = (Array, UncommittedArray)  # (host Arrays: committed or not)

# Spin iterations of an OpenMP thread waiting for work before it sleeps, on an idle machine
# (libgomp counts about 100 a microsecond: some 50 us)
IDLE_SPIN = 5000


def omp_wait_settings(environ, load: float, cpus: int) -> dict:
    """The OpenMP environment variables to set before libgomp loads (with the first compiled
    program), given the machine's 1-minute load average and the CPUs this process may use.

    OpenMP threads that spin while waiting steal the cores from each other (and from anything
    else running) on a busy machine: ``OMP_WAIT_POLICY=PASSIVE`` unless given. A sleeping
    worker, though, is woken by a futex at each parallel region: 33 us a region against 1 us
    spinning (measured in session 34 on the 2-core Zen 4), and the MLP SGD step opens
    10 regions. So where the load average is below the CPU count (nothing else wants the cores)
    the waiters spin ``IDLE_SPIN`` times first (``GOMP_SPINCOUNT``, which libgomp honours under
    ``PASSIVE`` too). At real-time priority (``chrt -f``, the nearest to idle on the loaded
    machine, load 10-12, 300 calls, medians of 3 alternating rounds): MLP step 8.32 / 8.38 /
    8.60 ms sleeping, 7.93 / 8.05 / 8.02 spinning 5000, 8.03 / 8.07 / 8.00 spinning 20000; the
    GPT block step 66.5-69.7 ms in every variant. Under load the same spin raised the MLP step's
    CPU time from 14 to 16.5 ms (20000: 24 ms), so a busy machine keeps sleeping waiters. A
    ``GOMP_SPINCOUNT`` of the user's own is left as it is, and so is a user's
    ``OMP_WAIT_POLICY=ACTIVE`` (libgomp reads a set ``GOMP_SPINCOUNT`` under every policy: ours
    would cut ACTIVE's minutes of spinning to ours); a user's ``PASSIVE`` (as
    ``benchmarks/workloads.py`` sets for torch) gets the idle machine's short spin."""
    out = {}
    policy = environ.get("OMP_WAIT_POLICY")
    if policy is None:
        out["OMP_WAIT_POLICY"] = "PASSIVE"
    active = policy is not None and policy.strip().upper() == "ACTIVE"
    if "GOMP_SPINCOUNT" not in environ and not active and load < cpus:
        out["GOMP_SPINCOUNT"] = str(IDLE_SPIN)
    return out


def _machine() -> tuple[float, int]:
    try:
        return os.getloadavg()[0], len(os.sched_getaffinity(0))
    except (OSError, AttributeError):  # (no load average or affinity here: taken as busy)
        return math.inf, os.cpu_count() or 1


os.environ.update(omp_wait_settings(os.environ, *_machine()))


@functools.lru_cache(maxsize=1)
def gemm_pointers() -> tuple[int, int]:
    """Addresses of an ILP64 ``cblas_sgemm``/``cblas_dgemm`` from NumPy's own BLAS (0 if none)."""
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs", "*blas*.so*"))
    libs += glob.glob(os.path.join(os.path.dirname(np.__file__), ".dylibs", "*blas*"))
    for path in libs:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for s, d in (
            ("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_"),
            ("cblas_sgemm64_", "cblas_dgemm64_"),
        ):
            if hasattr(lib, s) and hasattr(lib, d):
                return (
                    ctypes.cast(getattr(lib, s), ctypes.c_void_p).value,
                    ctypes.cast(getattr(lib, d), ctypes.c_void_p).value,
                )
    return 0, 0


_fast = [None]  # the extension's call function, once loaded
_fast_lock = threading.Lock()
_fast_building: list = []  # the thread building it, if one was started


def call_library():
    """The call extension's source and flags (``cpp/fx_call.c``, ``toolchain.LIBRARIES``) and
    where an install built it (``native.CALL``)."""
    from functx.lowering.cpp import native  # lazy: cache.py costs ~85 ms of import functx

    return native.CALL


def _load_fast(so):
    import importlib.util

    spec = importlib.util.spec_from_file_location("_fxcall", so)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    _fast[0] = mod.call


def _build_fast(lib):
    from functx.lowering import cache  # lazy: cache.py costs ~85 ms of import functx

    try:
        so, _ = cache.compile_cached(lib.source, extra_flags=lib.flags, suffix="-pyext")
        _load_fast(so)
    except Exception:  # noqa: BLE001 - the ctypes path works everywhere
        pass


def fast_call():
    """A tiny CPython extension that passes buffer pointers to a compiled program (a ctypes call
    costs microseconds per argument), or None. The one an install built (``call_library``) is
    loaded where its record fits; else, when the extension is not in the cache yet, it is
    compiled on another thread (``cache.background_thread``) while the first program is lowered:
    calls use ctypes until it is loaded, and the process waits for it at exit (at most 60 s) so
    that the next one finds it."""
    if _fast[0] is not None or _fast_building:
        return _fast[0]
    from functx.lowering import cache  # lazy: cache.py costs ~85 ms of import functx

    lib = call_library()
    with _fast_lock:
        if _fast[0] is None and not _fast_building:
            so = lib.prebuilt() or cache.cached(lib.source, extra_flags=lib.flags, suffix="-pyext")
            if so is not None:
                try:
                    _load_fast(so)
                    return _fast[0]
                except Exception:  # noqa: BLE001 - a broken entry: rebuild it
                    pass
            # (its compiler yields to the program's until that program has run: at load 4 it
            # spent 0.08-0.11 s of its CPU beside the GPT block's units)
            build = functools.partial(_build_fast, lib)
            _fast_building.append(cache.background_thread(build, join_timeout=60))
    return _fast[0]


# Output buffers of 1 MiB and more are recycled: when the Array holding one dies, its memory waits
# here (at most two blocks per size) for the next call that needs that size. Fresh memory from the
# kernel costs a page fault and a zeroed page per 4 KiB on first touch, which for a memory-bound
# program is about as much time again as the program itself. The pool holds at most
# ``FUNCTX_OUTPUT_POOL_MB`` MiB (default 256; 0 turns it off): past that, the blocks given back
# least recently are freed first (LRU by bytes), so sizes a program stopped using do not stay
# resident.
_POOL_MIN = 1 << 20
_POOL_DEFAULT_MB = 256
_pool: dict = {}  # nbytes -> [raw block], the most recently given back last
_lru: collections.OrderedDict = collections.OrderedDict()  # id(raw) -> (nbytes, raw), oldest first
_pooled = [0]  # bytes waiting in _pool
_pool_lock = threading.Lock()
_returned: collections.deque = collections.deque()  # blocks given back, not yet filed


def pool_limit() -> int:
    """The output pool's bound in bytes (``FUNCTX_OUTPUT_POOL_MB``, default 256 MiB)."""
    return max(0, int(config.output_pool_mb(_POOL_DEFAULT_MB) * (1 << 20)))


def pooled_bytes() -> int:
    """Bytes of dead outputs the pool keeps for reuse now."""
    _file_returned()
    return _pooled[0]


def _file_returned():
    """File the blocks given back into the pool, evicting the least recently given back past
    the bound. Finalizers only append to ``_returned`` and try the lock (one may run inside a
    collection on a thread that holds it); whoever holds the lock files them."""
    while _returned and _pool_lock.acquire(blocking=False):
        try:
            _file_locked()
        finally:
            _pool_lock.release()


def _file_locked():
    if not _returned:
        return
    limit = pool_limit()
    while _returned:
        nbytes, raw = _returned.popleft()
        free = _pool.setdefault(nbytes, [])
        if nbytes > limit or len(free) >= 2:
            continue
        free.append(raw)
        _lru[id(raw)] = (nbytes, raw)
        _pooled[0] += nbytes
    while _pooled[0] > limit and _lru:
        _, (nbytes, raw) = _lru.popitem(last=False)
        free = _pool[nbytes]
        for i, r in enumerate(free):
            if r is raw:
                del free[i]
                break
        _pooled[0] -= nbytes


def _give_back(nbytes, raw):
    _returned.append((nbytes, raw))
    _file_returned()


def _take(shape, dtype):
    dtype = np.dtype(dtype)
    nbytes = dtype.itemsize
    for d in shape:
        nbytes *= d
    if nbytes < _POOL_MIN:
        return np.empty(shape, dtype)
    raw = None
    with _pool_lock:
        _file_locked()
        free = _pool.get(nbytes)
        if free:
            raw = free.pop()
            del _lru[id(raw)]
            _pooled[0] -= nbytes
    _file_returned()
    if raw is None:
        raw = np.empty(nbytes + 64, np.uint8)
    skip = -raw.ctypes.data % 64  # 64-byte aligned: whole cache lines per vector store
    holder = (ctypes.c_char * nbytes).from_buffer(raw, skip)
    weakref.finalize(holder, _give_back, nbytes, raw)
    return np.frombuffer(holder, dtype).reshape(shape)


# The buffer pool inside each program (``cpp/prelude.py``'s ``fx_alloc``): blocks of 64 KiB and
# more, at most 64 of them and 1 GiB in all; smaller ones go to a cache of the thread's.
_PROGRAM_POOL_MIN = 1 << 16
_PROGRAM_POOL_BLOCKS = 64
_PROGRAM_POOL_BYTES = 1 << 30
# (Linux 5.14 and later; elsewhere, and on other systems, the pages are written instead)
_MADV_POPULATE_WRITE = 23 if sys.platform.startswith("linux") else None
_libc: list = []


def _c():
    """The C library's ``posix_memalign``, ``madvise`` and ``free`` (typed once)."""
    if not _libc:
        c = ctypes.CDLL(None, use_errno=True)
        c.posix_memalign.argtypes = [
            ctypes.POINTER(ctypes.c_void_p),
            ctypes.c_size_t,
            ctypes.c_size_t,
        ]
        c.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        c.free.argtypes = [ctypes.c_void_p]
        _libc.append(c)
    return _libc[0]


def _fault_in(ptr: int, n: int) -> None:
    """Have the kernel back the ``n`` bytes at ``ptr`` with zeroed pages now (the pages that
    hold them: the memory is this process's), instead of a page fault each at first use."""
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    lo, hi = ptr - ptr % page, -(-(ptr + n) // page) * page
    if _MADV_POPULATE_WRITE is None or _c().madvise(lo, hi - lo, _MADV_POPULATE_WRITE) != 0:
        ctypes.memset(ptr, 0, n)


class PoolWarmer:
    """The memory a compiled program's first run takes from the kernel, allocated and faulted
    in on another thread while the program's last translation units compile (``start``: the
    ``on_idle`` of ``cache.compile_cached``, when a core is left idle), then handed over before
    that run (``give``): the buffers ``fx_run`` allocates (``pool_blocks``: those its pool keeps,
    given to it by ``fx_pool_give``) and the outputs of 1 MiB and more (``_take``'s pool). The
    GPT block's first run took 19,800 page faults and 20-25 ms more than the next ones: the
    kernel zeroing 77 MB of fresh pages, now done on the core the compiler leaves idle. A warmer
    never started (the program came from the cache) gives nothing; the pools then fill on the
    first run as before."""

    def __init__(self, pool_blocks, out_specs):
        self.blocks, total = [], 0
        for n in pool_blocks:
            if n >= _PROGRAM_POOL_MIN and len(self.blocks) < _PROGRAM_POOL_BLOCKS:
                if total + n <= _PROGRAM_POOL_BYTES:
                    self.blocks.append(n)
                    total += n
        sizes = [math.prod(s) * np.dtype(d).itemsize for s, d in out_specs]
        self.outs = [n for n in sizes if n >= _POOL_MIN]
        self._ptrs: list = []  # (pointer, bytes) allocated by the C library, faulted in
        self._raws: list = []  # (bytes, raw block) for ``_take``
        self._thread = None

    def start(self) -> None:
        if self._thread is None and (self.blocks or self.outs):
            self._thread = threading.Thread(target=self._warm, daemon=True)
            self._thread.start()

    def _warm(self):
        c = _c()
        for n in self.blocks:
            p = ctypes.c_void_p()
            if c.posix_memalign(ctypes.byref(p), 64, n) != 0:
                break
            self._ptrs.append((p.value, n))
            _fault_in(p.value, n)
        if pool_limit() >= sum(self.outs):
            for n in self.outs:
                raw = np.empty(n + 64, np.uint8)
                _fault_in(raw.ctypes.data, raw.nbytes)
                self._raws.append((n, raw))

    def give(self, lib) -> None:
        """Hand the blocks over to the program loaded as ``lib`` and to the output pool (after
        the warming thread, if started, is done); without ``lib`` (it failed to load), free
        them."""
        if self._thread is None:
            return
        self._thread.join()
        self._thread = None
        ptrs, self._ptrs = self._ptrs, []
        give = getattr(lib, "fx_pool_give", None) if lib is not None else None
        if give is not None:
            give.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
            give.restype = None
        for p, n in ptrs:
            give(p, n) if give is not None else _c().free(p)
        for n, raw in self._raws if lib is not None else ():
            _give_back(n, raw)
        self._raws = []


# The C signature of the host-callback dispatcher a program calls for its host steps.
HOST_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64, ctypes.POINTER(ctypes.c_void_p))

# The host steps of the program running on each thread. A program calls ``fx_host`` on the thread
# that called it (host steps run between kernels, outside OpenMP regions), so one process-wide
# dispatcher serves every program, whichever executables share its shared object, on any thread.
_running = threading.local()


def _dispatch_running(index, ptrs):
    return _running.host._dispatch(index, ptrs)


_HOST_DISPATCHER = HOST_FN(_dispatch_running)
_HOST_DISPATCHER_ADDR = ctypes.cast(_HOST_DISPATCHER, ctypes.c_void_p).value


def _buffer(ptr, shape, dtype, copy: bool) -> np.ndarray:
    """The program's buffer at ``ptr`` as a NumPy array: a copy, or (``copy`` false) a view that
    the step reads or writes in place, valid only during the step."""
    dt = np.dtype(dtype)
    n = math.prod(shape)
    if not n:
        return np.zeros(shape, dt)
    a = np.frombuffer((ctypes.c_char * (n * dt.itemsize)).from_address(ptr), dt).reshape(shape)
    return a.copy() if copy else a


class HostDispatch:
    """What a program with host steps calls back (``fx_host(index, buffers)``): step ``index``
    of ``steps`` (``(callable, input avals, output (shape, dtype)s)``) gets copies of its input
    buffers as NumPy arrays and its results are copied into the output buffers; a step with an
    ``into(inputs, outputs)`` method gets views of the buffers instead and writes its results
    into the output views itself (``control/fft.py``'s transforms: no copy either way). An
    exception is kept in ``error`` (the program then stops, returning 1) for the caller to raise.
    ``Executable.run`` makes it the running thread's dispatcher for the call (``_running``)."""

    def __init__(self, steps):
        self.steps = list(steps)
        self.error = None

    def _dispatch(self, index, ptrs):
        try:
            fn, in_avals, out_specs = self.steps[index]
            into = getattr(fn, "into", None)  # (a step that writes into the buffers itself)
            args = [
                _buffer(ptrs[j], a.shape, a.dtype, into is None) for j, a in enumerate(in_avals)
            ]
            if into is not None:
                n = len(in_avals)
                into(args, [_buffer(ptrs[n + k], *spec, False) for k, spec in enumerate(out_specs)])
                return 0
            outs = fn(*args)
            for k, (o, (shape, dtype)) in enumerate(zip(outs, out_specs)):
                o = np.ascontiguousarray(np.asarray(o, dtype).reshape(shape))
                if o.nbytes:
                    ctypes.memmove(ptrs[len(in_avals) + k], o.ctypes.data, o.nbytes)
            return 0
        except BaseException as e:  # noqa: BLE001 - re-raised by the caller of the program
            self.error = e
            return 1

    def raise_error(self):
        err, self.error = self.error, None
        if err is not None:
            raise err


# How a runner (``Executable.runner``) passes input ``i`` of each kind to the program.
_PASS = {
    "a": "args[{0}]._value",
    "u": "args[{0}]._value",
    "n": "args[{0}]",
    "c": "conv(args[{0}], {0})",
}


class Executable:
    """A compiled program: call it with the flat input arrays, get the flat outputs."""

    def __init__(
        self,
        so_path,
        n_in,
        consts,
        out_specs,
        out_map,
        source,
        kernels_text,
        in_dtypes=None,
        host=None,
        warm=None,
    ):
        self.so_path = so_path
        try:
            self.lib = ctypes.CDLL(so_path)
        except OSError:
            if warm is not None:
                warm.give(None)
            raise
        self.lib.fx_set_gemm.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self.lib.fx_set_gemm(*gemm_pointers())
        if warm is not None:  # (memory faulted in while it compiled: ``PoolWarmer``)
            warm.give(self.lib)
        self.host = HostDispatch(host) if host else None
        if self.host is not None:
            self.lib.fx_set_host.argtypes = [ctypes.c_void_p]
            self.lib.fx_set_host(_HOST_DISPATCHER_ADDR)
        self.fn = self.lib.fx_run
        self.fn.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
        self.fn.restype = ctypes.c_int
        self.n_in = n_in
        self.in_dtypes = in_dtypes  # inputs that are not Arrays are converted to these
        self.in_specs = None  # [(shape, dtype)] of the inputs, checked by __call__ (compile.py)
        self.consts = [np.ascontiguousarray(c) for c in consts]
        self.out_specs = out_specs  # [(shape, dtype)] for each output buffer
        self._out_alloc = [
            (s, d, math.prod(s) * np.dtype(d).itemsize < _POOL_MIN) for s, d in out_specs
        ]
        self.out_map = out_map  # per program output: ("buf", k, aval) | ("in", i, aval)
        self.source = source
        self.kernels_text = kernels_text
        self.n_args = n_in + len(self.consts) + len(out_specs)
        self._const_ptrs = [c.ctypes.data for c in self.consts]
        self._arg_type = ctypes.c_void_p * self.n_args
        self._addr = ctypes.cast(self.fn, ctypes.c_void_p).value
        self._call = fast_call()
        self._runners: dict = {}  # kinds -> run(leaves) (see runner)
        self._first = True  # (not run yet)

    def __call__(self, leaves):
        self._check(leaves)
        return self.run(leaves)

    def run(self, leaves):
        """``self(leaves)`` without the check, for a caller that has already matched the
        shapes and dtypes (``functx.jit``: they are part of its cache key)."""
        if self._first:  # (the first call of a program: ``functx.jit`` makes it here)
            self._first = False
            if "fx_own_sgemm" in self.source or "fx_fa_lib" in self.source:
                from functx.lowering.cpp import attention, gemm  # (programs using them only)

                gemm.give(self.lib, self.source)  # (their fixed libraries' routines: the same
                attention.give(self.lib, self.source)  # code every call, cpp/native.py)
            try:
                return self.run(leaves)
            finally:
                from functx.lowering import cache  # lazy: cache.py costs ~85 ms of import functx

                cache.foreground_done()  # (background builds held back for this program)
        if self.host is not None:  # (a callback may run another program: restore after)
            outer = getattr(_running, "host", None)
            _running.host = self.host
            try:
                return self._run(leaves)
            finally:
                _running.host = outer
        return self._run(leaves)

    def _run(self, leaves):
        outs = [
            np.empty(shape, dtype) if small else _take(shape, dtype)
            for shape, dtype, small in self._out_alloc
        ]
        if self._call is None:
            self._call = _fast[0]  # None until the extension is built (see fast_call)
        if self._call is not None:
            bufs = [
                x._value if type(x) in _HOST_ARRAYS else self._convert(x, i)
                for i, x in enumerate(leaves)
            ]
            bufs += self.consts
            bufs += outs
            rc = self._call(self._addr, bufs)
            if rc == -2:  # a non-contiguous input (a broadcast ``zeros``, a strided view): copy
                n = len(leaves)
                bufs[:n] = [np.ascontiguousarray(b) for b in bufs[:n]]
                rc = self._call(self._addr, bufs)
                if rc == -2:  # (not a buffer at all)
                    rc = self._call_ctypes(leaves, outs)
        else:
            rc = self._call_ctypes(leaves, outs)
        if rc != 0:
            if self.host is not None:
                self.host.raise_error()
            raise MemoryError("functx.jit: the compiled program could not allocate its buffers")
        result = []
        for kind, k, aval in self.out_map:
            if kind == "buf":
                result.append(Array._new(outs[k], aval))
            else:
                v = leaves[k]  # (an input returned as it is: see runner)
                if type(v) is not Array:
                    v = Array._new(np.array(v, np.dtype(aval.dtype)), aval)
                result.append(v)
        return result

    def runner(self, kinds: str):
        """A function ``run(leaves)`` for flat inputs of these ``kinds`` (one letter per input:
        ``a`` a host Array, ``u`` an uncommitted one, ``n`` a NumPy array of the program's
        dtype, ``c`` anything to convert), written out for this program: one allocation per
        output, one list of buffers, one C call, the result Arrays (about half the Python time
        of ``run``, which loops over them). ``functx.jit``'s fast paths keep one per argument
        signature. Anything unusual (a non-contiguous input) goes through ``run``; so does every
        call while the call extension is not loaded, and every call of a program with host
        steps (``run`` sets their dispatcher)."""
        fn = self._runners.get(kinds)
        if fn is not None:
            return fn
        if _fast[0] is None or self.host is not None:
            return functools.partial(self._run_pending, kinds)
        env = {"call": _fast[0], "addr": self._addr, "empty": np.empty, "take": _take}
        env |= {"new": Array._new, "array": np.array, "conv": self._convert, "slow": self._slow}
        lines = ["def run(args):"]
        bufs = [_PASS[k].format(i) for i, k in enumerate(kinds)]
        for j, c in enumerate(self.consts):
            env[f"c{j}"] = c
            bufs.append(f"c{j}")
        for k, (shape, dtype, small) in enumerate(self._out_alloc):
            env[f"s{k}"], env[f"d{k}"] = shape, dtype
            lines.append(f"    o{k} = {'empty' if small else 'take'}(s{k}, d{k})")
            bufs.append(f"o{k}")
        lines.append(f"    rc = call(addr, [{', '.join(bufs)}])")
        lines.append("    if rc:")
        lines.append("        return slow(args, rc)")
        res = []
        for m, (kind, k, aval) in enumerate(self.out_map):
            env[f"a{m}"] = aval
            if kind == "buf":
                res.append(f"new(o{k}, a{m})")
            elif kinds[k] == "a":  # an input returned as it is: an Array itself,
                res.append(f"args[{k}]")
            else:  # anything else as a copy
                env[f"t{m}"] = np.dtype(aval.dtype)
                res.append(f"new(array(args[{k}], t{m}), a{m})")
        lines.append(f"    return [{', '.join(res)}]")
        exec("\n".join(lines), env)  # noqa: S102 - names and numbers of this program only
        fn = self._runners[kinds] = env["run"]
        return fn

    def _run_pending(self, kinds, leaves):
        """``runner(kinds)`` before the call extension is loaded (or for host steps)."""
        if _fast[0] is not None and self.host is None:
            return self.runner(kinds)(leaves)
        return self.run(list(leaves))

    def _slow(self, args, rc):
        if rc == -2:  # an input that is not C-contiguous: with a copy of it
            return self.run(list(args))
        raise MemoryError("functx.jit: the compiled program could not allocate its buffers")

    def _check(self, leaves):
        """The count of the flat inputs, and the shape and dtype of each buffer: a program reads
        and writes exactly the sizes it was compiled for."""
        if len(leaves) != self.n_in:
            raise FunctxTypeError(
                f"functx.jit: the compiled program takes {self.n_in} flat "
                f"inputs, called with {len(leaves)}"
            )
        for i, (x, spec) in enumerate(zip(leaves, self.in_specs or ())):
            v = x._value if type(x) in _HOST_ARRAYS else x
            shape, dtype = np.shape(v), getattr(v, "dtype", None)
            if shape != spec[0] or (type(x) in _HOST_ARRAYS and dtype != spec[1]):
                raise FunctxTypeError(
                    f"functx.jit: input {i} of the compiled program must be "
                    f"{np.dtype(spec[1]).name}{list(spec[0])}, not "
                    f"{getattr(dtype, 'name', type(x).__name__)}{list(shape)}"
                )

    def _convert(self, x, i):
        """A Python scalar, list or foreign array as a C-contiguous buffer of the traced dtype."""
        want = self.in_dtypes[i] if self.in_dtypes else None
        v = np.asarray(x) if want is None else np.asarray(x, dtype=want)
        return np.ascontiguousarray(v)

    def _call_ctypes(self, leaves, outs):
        ptrs = []
        keep = []  # every buffer whose address is passed lives until the call returns
        for i, x in enumerate(leaves):
            v = x._value if type(x) in _HOST_ARRAYS else self._convert(x, i)
            if not v.flags.c_contiguous:
                v = np.ascontiguousarray(v)
            keep.append(v)
            ptrs.append(v.__array_interface__["data"][0])
        ptrs += self._const_ptrs
        ptrs += [o.__array_interface__["data"][0] for o in outs]
        rc = self.fn(self._arg_type(*ptrs))
        del keep
        return rc


__all__ = ["Executable", "gemm_pointers"]
