"""Launch plans (``runtime.LaunchPlan``): a small program's launches bound once and replayed
with each call's input and output addresses, instead of running its module's host code.

On the CPU the kernels' launchers are stand-ins that record what they are given (the plans
never launch through Triton, and its interpreter has no compiled kernels to launch), so the
tests check that a plan launches exactly what the module's host code launches for the same
call (grids, kernels, the addresses of inputs, outputs, constants and its intermediates),
whatever addresses later calls' buffers have, and that it declines calls it was not recorded
for. On a GPU, ``benchmarks/gpu_host_time.py --stages`` checks values against JAX first.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

import functx  # noqa: E402
from functx.lowering.triton import runtime as rt  # noqa: E402
from functx.lowering.triton.program import compile_triton  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import workloads  # noqa: E402

CPU = torch.device("cpu")
STREAM = 77


@pytest.fixture
def on_cuda():
    """A CUDA GPU (``FUNCTX_TEST_TRITON_GPU=1``), for a test that launches for real."""
    if os.environ.get("FUNCTX_TEST_TRITON_GPU", "0") in ("", "0") or not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU (FUNCTX_TEST_TRITON_GPU=1)")
    return torch.device("cuda", 0)


@pytest.fixture(autouse=True)
def stand_ins(request, monkeypatch):
    """Triton's interpreter for compiling; launches through stand-ins on device 0, STREAM
    (except for tests on a real GPU: ``on_cuda``)."""
    if "on_cuda" in request.fixturenames:
        return
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(rt, "_cuda", (lambda: 0, lambda dev: STREAM))
    monkeypatch.setattr(rt, "_knobs", None)
    monkeypatch.setattr(rt, "_capturing", lambda: False)


def kls_step(n=8, c_launcher=True):
    """The kernel least squares momentum step (``workloads.py``) compiled for Triton, its
    arguments as flat tensors, and a launcher recording every launch in ``calls``."""
    args = workloads.inputs("kls", dict(n=n))
    step = workloads.program(functx, "kls", dict(n=n))
    exe = compile_triton(functx.make_jaxpr(step)(*args))
    calls = []

    def launcher(*a):
        calls.append(a)

    for s in exe.sites:  # (Triton 3.6's C launcher: function, cooperative, pdl, metadata;
        s.fast.clear()  # else a launcher object: function, metadata)
        s.fast[0] = (c_launcher, launcher, f"fn_{s.name}", False, False, "meta")
    leaves = [torch.as_tensor(np.asarray(x)) for x in functx.tree_util.tree_leaves(args)]
    return exe, leaves, calls


def fresh(exe, leaves):
    """New input and output tensors (new addresses) for a call."""
    return [x.clone() for x in leaves], exe._outputs(CPU)


@pytest.mark.parametrize("c_launcher", [True, False])
def test_a_plan_launches_what_the_host_code_launches(c_launcher):
    exe, leaves, calls = kls_step(c_launcher=c_launcher)
    head = 13 if c_launcher else 9  # (the arguments before the addresses)
    assert rt.plan_eligible(exe.source) and exe._plans == {}
    consts = exe._consts(CPU)
    ins, outs = fresh(exe, leaves)
    plan = rt.record_plan(exe.module, 0, STREAM, ins, consts, outs)
    assert plan is not None and len(calls) == len(exe.sites) == len(plan.launches)
    recorded = list(calls)
    fixed = set(plan.fixed)  # the intermediates' addresses (and the scratch's)
    for _ in range(3):
        ins, outs = fresh(exe, leaves)
        calls.clear()
        exe.module.run(ins, consts, outs)
        want = list(calls)
        calls.clear()
        assert plan(ins, outs, STREAM) is True
        got = list(calls)
        assert len(got) == len(want)
        for w, g in zip(want, got):
            assert g[:head] == w[:head] and len(g) == len(w)  # grid, stream, kernel, metadata
            for a, b in zip(w[head:], g[head:]):
                # an input's or output's address as the host code gives it, else a buffer of
                # the plan's own where the host code allocated one
                assert a == b or (b in fixed and a not in {t.data_ptr() for t in ins + outs})
        # the call's own inputs and outputs are the ones launched
        ptrs = {t.data_ptr() for t in ins + outs}
        assert ptrs <= {p for g in got for p in g[head:]}
    # the intermediates the recording allocated are kept at the same addresses
    assert recorded[0][-1] == got[0][-1]


def test_a_plan_declines_calls_unlike_its_recording(monkeypatch):
    exe, leaves, calls = kls_step()
    consts = exe._consts(CPU)
    ins, outs = fresh(exe, leaves)
    plan = rt.record_plan(exe.module, 0, STREAM, ins, consts, outs)
    calls.clear()
    storage = torch.empty(leaves[2].numel() + 1, dtype=leaves[2].dtype)
    odd = storage[1:].view(leaves[2].shape)  # 4 bytes past an aligned address
    odd.copy_(leaves[2])
    assert plan([ins[0], ins[1], odd, ins[3]], outs, STREAM) is False  # (Triton specialised on it)
    assert plan(ins, outs, STREAM + 1) is False  # another stream: its own plan
    monkeypatch.setattr(rt, "_cuda", (lambda: 1, lambda dev: STREAM))
    assert plan(ins, outs, STREAM) is False  # another current device
    monkeypatch.setattr(rt, "_cuda", (lambda: 0, lambda dev: STREAM))
    hooks = SimpleNamespace(launch_enter_hook=print, launch_exit_hook=None)
    monkeypatch.setattr(rt, "_knobs", hooks)
    assert plan(ins, outs, STREAM) is False  # a profiler's hook: launches go through Triton
    assert calls == []


def test_no_plan_where_a_later_call_could_differ(monkeypatch):
    exe, leaves, calls = kls_step()
    consts = exe._consts(CPU)
    ins, outs = fresh(exe, leaves)
    # the same tensor for two arguments: the recording cannot tell which the kernels read
    assert rt.record_plan(exe.module, 0, STREAM, [ins[0], ins[0], *ins[2:]], consts, outs) is None
    site = exe.sites[-1]
    entry = site.fast.pop(0)  # a site without a kernel to launch directly
    assert rt.record_plan(exe.module, 0, STREAM, ins, consts, outs) is None
    site.fast[0] = entry
    assert rt.record_plan(exe.module, 1, STREAM, ins, consts, outs) is None  # (device 1: none)
    # intermediates too large to keep between calls (the module frees its own)
    plan = rt.record_plan(exe.module, 0, STREAM, ins, consts, outs)
    kept = sum(t.untyped_storage().nbytes() for t in plan.keep)
    monkeypatch.setattr(rt, "PLAN_MAX_BYTES", kept - 1)
    assert rt.record_plan(exe.module, 0, STREAM, ins, consts, outs) is None


@pytest.mark.parametrize(
    "line, ok",
    [
        ("    _L3(4, 1, in0, t8)", True),
        ("    t8 = torch.empty(100, dtype=torch.float32, device=dev)", True),
        ("    t1 = t2 = _fx_scratch(dev, torch.float32, 100)  # (stored, never read)", True),
        ("    t5 = in0  # kernel 3: (100,), the elements of in0 in order (no copy)", True),
        ("    t9 = _mem_float32[0:256]  # bytes 0-1024, steps 0-2", True),
        ("    _fx_dot(in0, in1, t3, 1, 4, 4, 4, False, False, True)", False),
        ("    t1 = in0.view(4, 4)", False),
        ("    out0.view(-1)[:4].copy_(t3.view(-1)[:4])", False),
        ("    for it in range(10):", False),
        ("    _fx_host(0, [in0], [t1])", False),
        ("    _L0(n, 1, in0)", False),
    ],
)
def test_which_host_code_a_plan_can_stand_for(line, ok):
    src = "\ndef run(inputs, consts, outputs):\n    in0, = inputs\n    out0, = outputs\n"
    src += "    dev = out0.device\n" + line + "\n    return outputs\n"
    assert rt.plan_eligible(src) is ok


def test_calls_go_through_the_streams_plan_once_recorded(monkeypatch):
    """``run_on`` on a CUDA device: the second call records the stream's plan while running
    the module, later calls launch through it; ``LAUNCH_PLANS = False`` runs the module."""
    exe, leaves, calls = kls_step()
    dev = torch.device("cuda", 0)  # (a name only: the tensors stay on the CPU)
    consts = exe._consts(CPU)
    exe._ran.add(dev)
    exe._last = (dev, consts)
    exe._rings = SimpleNamespace(dev=dev, take=lambda: exe._outputs(CPU))
    runs = []
    run = exe._run_module
    monkeypatch.setattr(exe, "_run_module", lambda *a: (runs.append(1), run(*a))[1])
    ins, _ = fresh(exe, leaves)
    exe.run_on(dev, ins)
    assert type(exe._plans[0, STREAM]) is rt.LaunchPlan and len(calls) == len(exe.sites)
    calls.clear()
    outs = exe.run_on(dev, fresh(exe, leaves)[0])
    assert len(runs) == 0 and len(calls) == len(exe.sites)  # the plan launched, no module run
    assert {o.data_ptr() for o in outs} <= {p for c in calls for p in c[13:]}
    # another device (its default stream has the same handle, 0): a plan of its own, here
    # none, since no kernel was compiled there (its sites launch through Triton)
    monkeypatch.setattr(rt, "_cuda", (lambda: 1, lambda dev: STREAM))
    dev1 = torch.device("cuda", 1)
    exe._ran.add(dev1)
    exe._last = (dev1, consts)
    exe._rings.dev = dev1
    exe.run_on(dev1, ins)
    assert exe._plans[1, STREAM] == 1 and type(exe._plans[0, STREAM]) is rt.LaunchPlan
    monkeypatch.setattr(rt, "_cuda", (lambda: 0, lambda dev: STREAM))
    exe._last, exe._rings.dev = (dev, consts), dev
    monkeypatch.setattr(rt, "LAUNCH_PLANS", False)
    runs.clear()
    exe.run_on(dev, ins)
    assert len(runs) == 1


def _on_named_cuda(exe, monkeypatch):
    """``exe`` as if it had run on ``cuda:0`` (a name only: its tensors stay on the CPU)."""
    dev = torch.device("cuda", 0)
    consts = exe._consts(CPU)
    exe._device_consts[dev] = consts
    exe._ran.add(dev)
    exe._last = (dev, consts)
    monkeypatch.setattr(exe, "_outputs", lambda d: rt.TritonExecutable._outputs(exe, CPU))
    return dev


def test_a_capture_is_given_nothing_that_later_calls_reuse(monkeypatch):
    """A call while the stream captures a CUDA graph (the caller's) runs the module on new
    outputs: no output ring's buffer (the graph's replays would write it after a later call got
    it), no launch plan (its intermediates are shared), no graph of the executable's own."""
    exe, leaves, calls = kls_step()
    dev = _on_named_cuda(exe, monkeypatch)
    taken, graphed, runs = [], [], []
    exe._rings = SimpleNamespace(dev=dev, take=lambda: taken.append(1) or exe._outputs(dev))
    exe.use_graphs = exe.graph_safe = True
    monkeypatch.setattr(exe, "_graphed", lambda d, ins: graphed.append(1))  # (None: no graph)
    run = exe._run_module
    monkeypatch.setattr(exe, "_run_module", lambda *a: (runs.append(1), run(*a))[1])
    for _ in range(2):  # the first records the plan (running the host code), the second
        exe.run_on(dev, fresh(exe, leaves)[0])  # launches through it
    assert (len(taken), len(graphed), len(runs)) == (2, 2, 0)
    assert type(exe._plans[0, STREAM]) is rt.LaunchPlan
    taken.clear(), graphed.clear(), runs.clear(), calls.clear()
    monkeypatch.setattr(rt, "_capturing", lambda: True)
    outs = exe.run_on(dev, fresh(exe, leaves)[0])
    assert (taken, graphed, runs) == ([], [], [1]) and len(calls) == len(exe.sites)
    assert {o.data_ptr() for o in outs} <= {p for c in calls for p in c[13:]}
    monkeypatch.setattr(rt, "_capturing", lambda: False)
    runs.clear(), calls.clear()
    exe.run_on(dev, fresh(exe, leaves)[0])  # (after the capture: the ring and the plan again)
    assert (len(taken), len(graphed), len(runs), len(calls)) == (1, 1, 0, len(exe.sites))


@pytest.mark.parametrize("graphs", [False, True])
def test_a_callers_cuda_graph_owns_its_buffers(on_cuda, graphs):
    """On a GPU: a graph captured around a call (after calls that set up the output rings, the
    launch plan or the executable's own graphs) writes buffers of its own. A later call's
    results, made after the graph's outputs were dropped, keep their values over replays."""
    args = workloads.inputs("kls", dict(n=100))
    step = workloads.program(functx, "kls", dict(n=100))
    exe = compile_triton(functx.make_jaxpr(step)(*args))
    exe.use_graphs, exe.graph_mode = graphs, "copy"
    ins = [torch.as_tensor(np.asarray(x)).to(on_cuda) for x in functx.tree_util.tree_leaves(args)]
    for _ in range(4):
        want = [o.clone() for o in exe(*ins)]
    static = [x * 2 for x in ins]
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        captured = exe(*static)
    captured_ptrs = {o.data_ptr() for o in captured}
    del captured  # (the caller keeps only the graph)
    held = exe(*ins)
    snap = [o.clone() for o in held]
    for x in static:
        x.neg_()
    g.replay()
    torch.cuda.synchronize()
    assert not exe.graph_note, exe.graph_note
    assert not captured_ptrs & {o.data_ptr() for o in held}
    for h, s_, w in zip(held, snap, want):
        assert torch.equal(h, s_)  # the replay wrote nothing of this later call's
        torch.testing.assert_close(h, w, rtol=1e-5, atol=1e-6)
