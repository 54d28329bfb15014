"""functx/lowering/triton/precompile.py on the CPU: the dry run (Triton's interpreter runs the
programs) and the parallel compile step (with stand-in kernels: compiles need a GPU). The GPU
measurement is ``benchmarks/gpu_first_compile.py``."""

from __future__ import annotations

import contextlib
import threading
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import functx  # noqa: E402
import functx.lax as flax  # noqa: E402
import functx.numpy as fnp  # noqa: E402
from functx.lowering.triton import (  # noqa: E402
    precompile as pre,
    runtime as rt,
)
from functx.lowering.triton.blocks import Blocks  # noqa: E402
from functx.lowering.triton.program import compile_triton  # noqa: E402
from functx.transforms import passes  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
SMALL = Blocks(pointwise=64, reduce_inner=16, scan=16, elems=256, persistent=16)
CPU = torch.device("cpu")
RNG = np.random.default_rng(0)


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    from functx.devices import device as placement

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(placement, "_gpu_list", placement._gpu_list or None)
    monkeypatch.setattr(placement, "GPU_IN_USE", placement.GPU_IN_USE)


def _exe(f, *args):
    return compile_triton(passes.simplify(functx.make_jaxpr(f)(*args)), SMALL)


def _several_kernels(x, w):
    h = fnp.tanh(x @ w)
    m = fnp.max(h, axis=1, keepdims=True)
    return h - m, fnp.cumsum(h, axis=0), fnp.sum(fnp.exp(h))


def _host_loop(x):
    def body(i, c):
        y = fnp.sin(c) * 0.5
        return y - fnp.sum(y, axis=0, keepdims=True) / c.shape[0]

    return flax.fori_loop(0, 12, body, x)


class Counting:
    """Wraps a kernel: counts its launches (then launches it)."""

    def __init__(self, kernel):
        self.kernel, self.launches = kernel, 0

    def __getitem__(self, grid):
        self.launches += 1
        return self.kernel[grid]


def test_the_dry_run_records_each_site_once_and_launches_nothing():
    x = RNG.standard_normal((12, 10)).astype(np.float32)
    w = RNG.standard_normal((10, 16)).astype(np.float32)
    exe = _exe(_several_kernels, x, w)
    assert len(exe.sites) >= 3
    kernels = [s.kernel for s in exe.sites]
    counters = [Counting(k) for k in kernels]
    for s, c in zip(exe.sites, counters):
        s.kernel = c
    try:
        ins = [torch.as_tensor(x), torch.as_tensor(w)]
        seen = pre.record(exe, CPU, ins, exe._consts(CPU))
        assert set(seen) == set(exe.sites)
        assert [c.launches for c in counters] == [0] * len(counters)
        for g0, g1, args in seen.values():  # the buffers the launch will get
            assert g0 >= 1 and g1 >= 1 and all(isinstance(a, torch.Tensor) for a in args)
    finally:
        for s, k in zip(exe.sites, kernels):
            s.kernel = k
    got = exe(x, w)  # (the dry run left the executable as it was)
    want = _several_kernels(fnp.asarray(x), fnp.asarray(w))
    for g, v in zip(got, want):  # (the product is a TF32 Triton GEMM: three digits)
        np.testing.assert_allclose(g.numpy(), np.asarray(v), rtol=1e-2, atol=1e-2)


def test_the_dry_run_of_a_host_loop_ends_once_every_site_is_seen(monkeypatch):
    monkeypatch.setenv("FUNCTX_DEVICE_LOOPS", "0")
    x = RNG.standard_normal((8, 6)).astype(np.float32)
    exe = _exe(_host_loop, x)
    assert "for " in exe.source  # (the loop runs on the host: 12 iterations of its kernels)
    calls = []
    through = rt.Site.through_triton

    def counted(self, g0, g1, args):
        if pre.DRY_RUN.recorder is not None:
            calls.append(self)
        return through(self, g0, g1, args)

    monkeypatch.setattr(rt.Site, "through_triton", counted)
    seen = pre.record(exe, CPU, [torch.as_tensor(x)], exe._consts(CPU))
    assert set(seen) == set(exe.sites)
    assert len(calls) == len(set(calls)) == len(exe.sites)
    assert pre.DRY_RUN.recorder is None
    np.testing.assert_allclose(
        exe(x)[0].numpy(), np.asarray(_host_loop(fnp.asarray(x))), rtol=2e-5, atol=2e-5
    )


class StandIn:
    """A kernel whose compiles take 50 ms and are kept by argument dtypes and options (as
    Triton's cache of a JITFunction); a launch compiles what is not kept."""

    def __init__(self):
        self.kept, self.compiles, self.loads, self.threads = set(), 0, 0, set()
        self.lock = threading.Lock()

    def _get(self, args, opts):
        key = (tuple(str(a.dtype) for a in args), tuple(sorted(opts.items())))
        with self.lock:
            if key in self.kept:
                return
        time.sleep(0.05)
        with self.lock:
            self.kept.add(key)
            self.compiles += 1
            self.threads.add(threading.current_thread().name)

    def warmup(self, *args, grid, **opts):
        self._get(args, opts)
        return self  # (the compiled kernel, loaded by its _init_handles)

    def _init_handles(self):
        with self.lock:
            self.loads += 1

    def __getitem__(self, grid):
        return lambda *args, **opts: self._get(args, opts)


def test_precompile_compiles_each_kernel_once_in_parallel_and_the_run_compiles_none(monkeypatch):
    x = RNG.standard_normal((12, 10)).astype(np.float32)
    w = RNG.standard_normal((10, 16)).astype(np.float64)  # (float64 sites: no FMA contraction)
    exe = _exe(_several_kernels, x, w)
    ins = [torch.as_tensor(x), torch.as_tensor(w)]
    consts = exe._consts(CPU)
    seen = pre.record(exe, CPU, ins, consts)
    kernels = [s.kernel for s in exe.sites]
    stand = [StandIn() for _ in exe.sites]
    for s, k in zip(exe.sites, stand):
        s.kernel = k
    try:
        with monkeypatch.context() as m:
            m.setattr(pre, "_device_index", lambda dev: 0)
            m.setattr(pre, "_on_device", lambda index: contextlib.nullcontext())
            m.setenv("TRITON_INTERPRET", "0")  # (precompile skips the interpreter)
            assert pre.precompile(exe, CPU, ins, consts) == len(exe.sites)
        assert [(k.compiles, k.loads) for k in stand] == [(1, 1)] * len(stand)
        assert len(set().union(*(k.threads for k in stand))) == min(
            len(stand), pre._workers(len(stand))
        )
        for site, (g0, g1, args) in seen.items():  # the launches find their kernels compiled
            site.through_triton(g0, g1, args)
        assert [k.compiles for k in stand] == [1] * len(stand)
        assert any(s.exact for s in exe.sites)  # (the float64 options reached the compiles)
    finally:
        for s, k in zip(exe.sites, kernels):
            s.kernel = k


def test_precompile_skips_programs_whose_host_code_reads_values(monkeypatch):
    monkeypatch.setenv("FUNCTX_DEVICE_LOOPS", "0")  # (the loop's test read back on the host)

    def f(x):
        return flax.while_loop(lambda c: fnp.sum(c) < 100.0, lambda c: c * 2.0 + 1.0, x)

    x = RNG.uniform(0.5, 1.0, (8,)).astype(np.float32)
    exe = _exe(f, x)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.setattr(pre, "record", lambda *a: pytest.fail("a dry run of a value-driven loop"))
    assert ".item()" in exe.source and not exe.graph_safe
    assert pre.precompile(exe, CPU, [torch.as_tensor(x)], exe._consts(CPU)) == 0


def test_precompile_is_off_under_the_switch_and_under_the_interpreter(monkeypatch):
    x = RNG.standard_normal((12, 10)).astype(np.float32)
    w = RNG.standard_normal((10, 16)).astype(np.float32)
    exe = _exe(_several_kernels, x, w)
    monkeypatch.setattr(pre, "record", lambda *a: pytest.fail("a dry run"))
    args = (exe, CPU, [torch.as_tensor(x), torch.as_tensor(w)], exe._consts(CPU))
    assert pre.precompile(*args) == 0  # (the interpreter compiles nothing)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    monkeypatch.setenv("FUNCTX_TRITON_PRECOMPILE", "0")
    assert pre.precompile(*args) == 0


@pytest.mark.parametrize("key", [0, (0, 0b10)])  # (aligned buffers; a misaligned pattern)
def test_precompile_skips_a_module_whose_sites_launch_directly_on_the_device(monkeypatch, key):
    x = RNG.standard_normal((12, 10)).astype(np.float32)
    w = RNG.standard_normal((10, 16)).astype(np.float32)
    exe = _exe(_several_kernels, x, w)
    monkeypatch.setattr(pre, "record", lambda *a: pytest.fail("a dry run would launch it"))
    monkeypatch.setattr(pre, "_device_index", lambda dev: 0)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    site = exe.sites[-1]
    monkeypatch.setitem(site.fast, key, None)
    assert pre.precompile(exe, CPU, [torch.as_tensor(x), torch.as_tensor(w)], []) == 0
