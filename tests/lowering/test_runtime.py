"""Memory reuse in the C++ runtime: large outputs return to a pool when their Array dies, large
temporaries stay with the compiled program between calls. Reuse must never alias a live
result, nor mix up results of calls running at the same time; dead outputs waiting for reuse
stay within the pool's bound."""

from __future__ import annotations

import gc
import math
import os
import threading

import numpy as np
import pytest

import functx
import functx.numpy as fnp

N = 512 * 1024  # 2 MiB of float32: above the 1 MiB pooling threshold


def test_live_outputs_are_never_shared():
    f = functx.jit(lambda x, c: fnp.exp(x) * c)
    x = np.linspace(-1, 1, N, dtype=np.float32)
    keep = [f(x, np.float32(c)) for c in range(4)]
    ptrs = {np.asarray(k).ctypes.data for k in keep}
    assert len(ptrs) == 4
    for c, k in enumerate(keep):
        np.testing.assert_allclose(np.asarray(k), np.exp(x) * c, rtol=1e-6)


def test_dropped_output_is_reused_and_rewritten():
    f = functx.jit(lambda x, c: x * c + 1.0)
    x = np.ones(N, np.float32)
    first = f(x, np.float32(2))
    addr = np.asarray(first).ctypes.data
    view = np.asarray(first)[:4]  # a view keeps the buffer alive: no reuse yet
    del first
    gc.collect()
    second = f(x, np.float32(5))
    assert np.asarray(second).ctypes.data != addr
    np.testing.assert_array_equal(view, 3.0)
    del view, second
    gc.collect()
    third = f(x, np.float32(7))  # the pool hands back a buffer: its old contents are overwritten
    np.testing.assert_array_equal(np.asarray(third), 8.0)


def test_concurrent_calls_keep_their_own_buffers():
    # a grad with large temporaries (t, its square and the cotangents) and large outputs
    f = functx.jit(functx.grad(lambda x, c: fnp.sum(fnp.tanh(x * c) ** 2)))
    x = np.linspace(-2, 2, N, dtype=np.float32)
    expect = {}
    for c in range(1, 9):
        t = np.tanh(x.astype(np.float64) * c)
        expect[c] = 2 * t * (1 - t * t) * c
    errors = []

    def work(c):
        try:
            for _ in range(10):
                np.testing.assert_allclose(
                    np.asarray(f(x, np.float32(c))), expect[c], rtol=1e-4, atol=1e-5
                )
        except AssertionError as e:  # reported on the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(c,)) for c in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_large_buffers_are_cache_line_aligned():
    x = np.linspace(-1, 1, N, dtype=np.float32)
    a = fnp.asarray(x)  # a copy onto a 64-byte boundary (NumPy aligns to 16)
    assert np.asarray(a).ctypes.data % 64 == 0
    np.testing.assert_array_equal(np.asarray(a), x)
    out = functx.jit(lambda x: x * 2.0)(a)
    assert np.asarray(out).ctypes.data % 64 == 0
    np.testing.assert_array_equal(np.asarray(out), x * 2)


def test_large_identity_output_is_copied_in_parallel_chunks():
    # an output that is an input is copied (fx_copy splits 4 MiB and more among the threads);
    # the copy is exact, including a tail that is not a whole chunk
    x = np.arange((1 << 20) + 3, dtype=np.float64)
    out = functx.jit(lambda x, y: (x, y + 1.0))(x, np.float32(1))
    np.testing.assert_array_equal(np.asarray(out[0]), x)
    assert np.asarray(out[0]).ctypes.data != x.ctypes.data


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.parametrize("limit_mb", [None, 32, 0])
def test_dead_outputs_kept_for_reuse_stay_bounded(monkeypatch, limit_mb):
    """60 distinct ~8 MiB outputs that die stay in the pool only up to its bound
    (``FUNCTX_OUTPUT_POOL_MB``, default 256), the least recently given back freed first."""
    from functx.lowering import runtime

    if limit_mb is None:
        monkeypatch.delenv("FUNCTX_OUTPUT_POOL_MB", raising=False)
    else:
        monkeypatch.setenv("FUNCTX_OUTPUT_POOL_MB", str(limit_mb))
    bound = (256 if limit_mb is None else limit_mb) << 20
    gc.collect()
    rss = _rss_bytes()
    for i in range(60):
        out = runtime._take(((1 << 21) + 1024 * (i + 1),), np.float32)  # ~8 MiB, each size new
        out.fill(1.0)  # (touched: resident)
        last = out.ctypes.data
        del out
    gc.collect()
    assert runtime._pooled[0] <= bound, runtime._pooled[0] >> 20
    assert _rss_bytes() - rss <= bound + (48 << 20), (_rss_bytes() - rss) >> 20
    if limit_mb != 0:  # the size given back last is still there
        assert runtime._take(((1 << 21) + 1024 * 60,), np.float32).ctypes.data == last


# --- inputs converted for the call live until it returns -----------------------------------------
def _program_of(jitted):
    (entry,) = jitted.cache.values()
    return entry[0]


def test_converted_inputs_live_through_the_ctypes_call():
    """The ctypes path (taken before the call extension is built, and for non-contiguous
    inputs) passes raw addresses: every buffer it converts must outlive the call. It used to
    drop the contiguous copy of an input that was not a host Array (an array of ones from
    ``jnp.ones``, a strided NumPy view) right after taking its address, so the program read
    freed memory:
    ``jit(lambda a, b, c: a + b)(jnp.ones(3), jnp.zeros(3), jnp.zeros(3))`` gave zeros."""
    import weakref

    f = functx.jit(lambda a, b, c: a + b + 2.0 * c)
    strided = np.arange(6, dtype=np.float32)[::2] + 1.0  # [1, 3, 5], not contiguous
    args = [fnp.ones(3, "float32"), strided[::-1][::-1], fnp.zeros(3, "float32")]
    np.testing.assert_array_equal(f(*args), [2.0, 4.0, 6.0])
    exe = _program_of(f)
    converted = []
    convert = exe._convert

    def tracked(x, i):
        v = convert(x, i)
        converted.append(weakref.ref(v))
        return v

    alive_at_call = []
    fn = exe.fn

    def checked(*ptrs):
        alive_at_call.append(all(r() is not None for r in converted))
        return fn(*ptrs)

    exe._convert, exe.fn = tracked, checked
    try:
        outs = [np.empty(3, np.float32)]
        assert exe._call_ctypes(args, outs) == 0
    finally:
        del exe._convert, exe.fn
    assert converted and alive_at_call == [True]
    np.testing.assert_array_equal(outs[0], [2.0, 4.0, 6.0])


def test_uncommitted_and_strided_inputs_give_the_eager_result():
    for n in range(2, 6):
        f = functx.jit(lambda *xs: sum(x * (k + 1) for k, x in enumerate(xs)))
        want = np.full(4, sum((k + 1) * (k + 1.0) for k in range(n)), np.float32)
        xs = [fnp.full(4, k + 1.0, "float32") for k in range(n)]  # stride-0 views
        np.testing.assert_array_equal(f(*xs), want)
        views = [np.full(8, k + 1.0, np.float32)[::2] for k in range(n)]  # not contiguous
        np.testing.assert_array_equal(f(*views), want)


def test_first_run_lets_the_background_builds_go_on(monkeypatch):
    """A program's first run ends the yielding of the builds started beside its compile
    (``cache.background_thread``: cpp/gemm.py's library); later runs do not touch it."""
    from functx.lowering import cache

    calls = []
    monkeypatch.setattr(cache, "foreground_done", lambda: calls.append(1))
    f = functx.jit(lambda x: x * 3.0 + 1.0)
    x = np.arange(7, dtype=np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(np.asarray(f(x)), x * 3.0 + 1.0)
    assert calls == [1]


def test_call_extension_builds_behind_the_programs(monkeypatch):
    """The call extension, when not cached, is compiled on a thread whose compiler yields to the
    program's (``cache.background_thread``); the exit waits for it at most 60 s."""
    from functx.lowering import cache, runtime

    started = []
    monkeypatch.setattr(runtime, "_fast", [None])
    monkeypatch.setattr(runtime, "_fast_building", [])
    monkeypatch.setattr(runtime.call_library(), "prebuilt_path", "/no-such/fx_call.so")
    monkeypatch.setattr(cache, "cached", lambda *a, **k: None)
    monkeypatch.setattr(
        cache, "background_thread", lambda fn, join_timeout=None: started.append((fn, join_timeout))
    )
    assert runtime.fast_call() is None and runtime.fast_call() is None
    [(build, timeout)] = started
    assert build.func is runtime._build_fast and timeout == 60
    assert build.args == (runtime.call_library(),)


def test_omp_wait_settings():
    """Waiting OpenMP threads sleep (``PASSIVE``) on a busy machine and spin a little first on
    an idle one; what the user set is kept."""
    from functx.lowering import runtime

    spin = str(runtime.IDLE_SPIN)
    assert runtime.omp_wait_settings({}, 12.0, 2) == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert runtime.omp_wait_settings({}, 2.0, 2) == {"OMP_WAIT_POLICY": "PASSIVE"}
    assert runtime.omp_wait_settings({}, 0.5, 2) == {
        "OMP_WAIT_POLICY": "PASSIVE",
        "GOMP_SPINCOUNT": spin,
    }
    given = {"OMP_WAIT_POLICY": "PASSIVE"}  # (as benchmarks/workloads.py sets it for torch)
    assert runtime.omp_wait_settings(given, 0.5, 2) == {"GOMP_SPINCOUNT": spin}
    assert runtime.omp_wait_settings({"GOMP_SPINCOUNT": "0"}, 0.5, 2) == {
        "OMP_WAIT_POLICY": "PASSIVE"
    }
    for active in ("ACTIVE", "active"):  # (a user's ACTIVE keeps libgomp's long spin)
        assert runtime.omp_wait_settings({"OMP_WAIT_POLICY": active}, 0.5, 2) == {}
    assert os.environ["OMP_WAIT_POLICY"]  # (set at import, before any program loads libgomp)


def test_unreadable_load_average_is_a_busy_machine(monkeypatch):
    """Where the load average cannot be read, the machine counts as busy (sleeping waiters)."""
    from functx.lowering import runtime

    def unreadable():
        raise OSError("no load average")

    monkeypatch.setattr(runtime.os, "getloadavg", unreadable)
    load, cpus = runtime._machine()
    assert load == math.inf and cpus >= 1
    assert runtime.omp_wait_settings({}, load, cpus) == {"OMP_WAIT_POLICY": "PASSIVE"}


# --- the first run's memory, faulted in while the program compiles (runtime.PoolWarmer) -------
def test_pool_warmer_takes_what_the_pools_keep():
    """The blocks the program's pool keeps (64 KiB and more, at most 64 and 1 GiB, in the order
    ``fx_run`` allocates them) and the outputs ``_take`` pools (1 MiB and more)."""
    from functx.lowering import runtime

    big, small = 1 << 16, (1 << 16) - 4
    w = runtime.PoolWarmer([small, big, 3 * big, small], [((4,), np.float32), ((N,), np.int64)])
    assert w.blocks == [big, 3 * big] and w.outs == [8 * N]
    assert runtime.PoolWarmer([big] * 70, []).blocks == [big] * 64
    assert runtime.PoolWarmer([1 << 29, 1 << 29, 1 << 29, big], []).blocks == [1 << 29, 1 << 29]


def _faults(write) -> int:
    """The page faults this process takes running ``write()``."""
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    write()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


@pytest.mark.parametrize("populate", [True, False], ids=["madvise", "written"])
def test_warmed_blocks_are_resident_and_given_to_the_program(monkeypatch, populate):
    """``start`` allocates and faults in the blocks on a thread (``madvise``, or writing them
    where there is none); ``give`` hands each to the program's ``fx_pool_give`` (writing them
    then takes no page faults) and the outputs to the output pool; ``give(None)`` (the program
    did not load) frees them."""
    import ctypes
    import mmap

    from functx.lowering import runtime

    if not populate:
        monkeypatch.setattr(runtime, "_MADV_POPULATE_WRITE", None)

    n = 8 << 20
    fresh = mmap.mmap(-1, n)  # (fresh memory takes a fault a page: what the test tells apart)
    assert _faults(lambda: np.frombuffer(fresh, np.uint8).fill(1)) > n // 4096 // 2
    got = []

    class Lib:
        def fx_pool_give(p, size):
            got.append((p, size))

    w = runtime.PoolWarmer([n, n // 2], [])
    w.start()
    w.give(Lib)
    assert [size for _, size in got] == [n, n // 2]
    for p, size in got:
        block = np.frombuffer((ctypes.c_char * size).from_address(p), np.uint8)
        assert _faults(lambda b=block: b.fill(1)) < size // 4096 // 8
    for p, _ in got:
        runtime._c().free(p)
    w = runtime.PoolWarmer([n], [])
    w.give(Lib)  # never started: nothing
    w.start()
    w.give(None)
    assert len(got) == 2


def test_a_compiled_programs_first_run_takes_warmed_memory(tmp_path, monkeypatch):
    """Compiled with an empty cache, a program's first run finds its temporaries (those of
    ``fx_run``, as the source allocates them) and its large output faulted in: few page faults
    where about 2,000 pages are new, and the same values as NumPy's."""
    import re

    from functx.lowering import runtime

    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))
    warmers = []
    monkeypatch.setattr(
        runtime.PoolWarmer, "start", lambda w, s=runtime.PoolWarmer.start: (warmers.append(w), s(w))
    )
    x = np.linspace(-2, 2, 1 << 20, dtype=np.float32).reshape(1024, 1024)
    lowered = functx.jit(lambda x: fnp.cumsum(fnp.tanh(x), axis=0) * fnp.sum(x)).lower(x)
    exe = lowered.compile()
    [w] = warmers
    sizes = re.findall(r"fx_alloc\((\d+)ULL \* sizeof\(float\)\)", lowered.as_text())
    assert w.blocks == [4 * int(s) for s in sizes if 4 * int(s) >= 1 << 16] == [4 << 20]
    assert w.outs == [4 << 20]
    y = []
    assert _faults(lambda: y.append(np.asarray(exe(x)))) < 2048 // 4
    y = y[0]
    t = np.tanh(x.astype(np.float64))
    np.testing.assert_allclose(
        y, np.cumsum(t, axis=0) * x.sum(dtype=np.float64), rtol=2e-5, atol=1e-3
    )
