"""The memory plan of generated Triton host functions (``functx/lowering/triton/memplan.py``): the
lifetimes read from the host code, placements that never give two live buffers the same bytes,
and programs (the GPT block's training step, control flow) computing the same values with the
plan as with a ``torch.empty`` per intermediate.

Programs run in Triton's CPU interpreter (``TRITON_INTERPRET=1``, set per test), or with
``FUNCTX_TEST_TRITON_GPU=1`` on a CUDA GPU (where the step also replays CUDA graphs).
"""

from __future__ import annotations

import functools
import os
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
jax = pytest.importorskip("jax")

import functx  # noqa: E402
from functx.lowering.triton import memplan, program  # noqa: E402
from functx.transforms import attention  # noqa: E402

GPU = os.environ.get("FUNCTX_TEST_TRITON_GPU", "0") not in ("", "0") and torch.cuda.is_available()
BENCH = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")


@pytest.fixture
def gpu(monkeypatch):
    """functx's GPU placement: Triton's interpreter (CPU tensors), or a CUDA GPU."""
    from functx.devices import device as placement

    if not GPU:
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    # (the interpreter's stand-in GPU exists only under TRITON_INTERPRET=1: look again, restore)
    monkeypatch.setattr(placement, "_gpu_list", placement._gpu_list or None)
    monkeypatch.setattr(placement, "GPU_IN_USE", placement.GPU_IN_USE)
    # (these tests count allocations: no intermediate of theirs goes to the shared scratch)
    monkeypatch.setattr(program, "SCRATCH_MAX_BYTES", 0)
    return functx.devices("gpu")[0]


# --- lifetimes and placements ---------------------------------------------------------------------
def test_lifetimes_follow_statements_loops_branches_and_names_bound_to_buffers():
    body = [
        "    _L0(1, 1, in0, a)",  # 0: a written
        "    # kernel 1: a comment naming b and c",
        "    b = a  # kernel 1: the elements of a in order (no copy)",  # 1: b stands for a
        "    _fx_dot(b, in1, c, 1, 2, 2, 2, False, False, True)",  # 2: reads a through b
        "    La0 = d.view(-1)[:4].clone()",  # 3: a loop's carry from d
        "    for it in range(3):",  # 4: the loop, one statement
        "        _sub0([La0], [], [e])",
        "        La0, e = e, La0",
        "    if C == 0:",  # 5: a branch and its elif, one statement
        "        _sub1([c], [], [out0])",
        "    elif C == 1:",
        "        _sub2([f], [], [out0])",
        "    out1.copy_(La0)",  # 6: reads d through the carry
    ]
    stmts = memplan.statements(body)
    assert len(stmts) == 7
    live = memplan.lifetimes(stmts, ["a", "c", "d", "e", "f", "g"])
    assert live == {"a": (0, 2), "c": (2, 5), "d": (3, 6), "e": (4, 4), "f": (5, 5)}
    sizes = {"a": 1000, "c": 24, "d": 16, "e": 16, "f": 300, "g": 8}
    mp = memplan.plan(sizes, stmts)
    assert mp.overlaps() == [] and mp.size < mp.total
    assert all(s.offset % memplan.ALIGN == 0 for s in mp.slots.values())
    # f (statement 5) takes a's bytes (statements 0-2); g, named nowhere, lives at statement 0
    assert mp.slots["f"].offset == mp.slots["a"].offset
    assert mp.slots["g"].first == mp.slots["g"].last == 0


def test_a_pointwise_output_overlays_an_input_it_reads_in_order_at_its_last_reader():
    body = [
        "    _L0(4, 1, in0, a)",  # 0: a
        "    _L1(4, 1, a, b)",  # 1: b = f(a) elementwise, a's last reader
        "    _L2(4, 1, b, in0, c)",  # 2: c = g(b, in0) elementwise, b's last reader
        "    _L3(4, 1, c, out0)",
    ]
    stmts = memplan.statements(body)
    sizes = {"a": 1024, "b": 1024, "c": 1024}
    chain = memplan.plan(sizes, stmts, {"b": ("_L1", {"a"}), "c": ("_L2", {"b"})})
    assert chain.shared == {frozenset(("a", "b")), frozenset(("b", "c"))}
    assert chain.overlaps() == [] and chain.size == 1024
    assert len({s.offset for s in chain.slots.values()}) == 1
    # an entry naming another kernel than the writer's, or an input still read later: no overlay
    for overlays in ({"b": ("_L9", {"a"})}, {"c": ("_L2", {"a"})}):
        mp = memplan.plan(sizes, stmts, overlays)
        assert not mp.shared and mp.overlaps() == [] and mp.size == 2048
    moved = memplan.Slot("b", 1024, 256, 1, 2)  # (overlapping a, not at its offset)
    bad = memplan.MemoryPlan({**chain.slots, "b": moved}, 2048, 3072, chain.shared)
    assert ("a", "b") in bad.overlaps()


@pytest.mark.parametrize("seed", range(4))
def test_random_plans_give_no_two_live_buffers_the_same_bytes(seed):
    rng = np.random.default_rng(seed)
    n = 60
    first = rng.integers(0, 40, n)
    last = first + rng.integers(0, 12, n)
    stmts = [
        "    _L(" + ", ".join(f"b{i}" for i in range(n) if first[i] <= s <= last[i]) + ")"
        for s in range(int(last.max()) + 1)
    ]
    sizes = {f"b{i}": int(x) for i, x in enumerate(rng.integers(1, 5000, n))}
    mp = memplan.plan(sizes, stmts)
    assert {b: (s.first, s.last) for b, s in mp.slots.items()} == {
        f"b{i}": (int(first[i]), int(last[i])) for i in range(n)
    }
    assert mp.overlaps() == [] and mp.size <= mp.total
    # the planned peak is at least the largest sum of buffers live at one statement
    need = max(
        sum(-(-sizes[b] // 256) * 256 for b, s in mp.slots.items() if s.first <= t <= s.last)
        for t in range(len(stmts))
    )
    assert need <= mp.size < mp.total
    bad = memplan.MemoryPlan(
        {**mp.slots, "b0": memplan.Slot("b0", 1, mp.slots["b1"].offset, first[1], first[1])},
        mp.size,
        mp.total,
    )
    assert ("b0", "b1") in bad.overlaps() or ("b1", "b0") in bad.overlaps()


# --- programs: the same values with and without the plan ----------------------------------------
def _executable(comp):
    """The ``TritonExecutable`` of a compiled function, and what it computes."""
    exe, closed = comp.runtime_executable(), None
    while not hasattr(exe, "memory_plans"):
        closed = getattr(exe, "closed", closed)
        exe = exe.exe
    return exe, closed


def _both(monkeypatch, f, args):
    """``f``'s jitted results and executable with the plan; the results of the same program
    compiled without it are equal to the bit."""
    monkeypatch.setattr(program, "PLAN_MEMORY", True)
    monkeypatch.setattr(program, "PLAN_MIN_BYTES", 0)  # (these programs are small)
    comp = functx.jit(f).lower(*args).compile()
    exe, closed = _executable(comp)
    leaves = functx.tree_util.tree_leaves(args)
    got = [o.cpu().numpy() for o in exe(*leaves)]
    monkeypatch.setattr(program, "PLAN_MEMORY", False)
    plain = program.compile_triton(closed)
    assert "_mem = torch.empty(" in exe.source and "_mem" not in plain.source
    want = [o.cpu().numpy() for o in plain(*leaves)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    return got, exe


def test_the_gpt_step_computes_the_same_with_a_smaller_planned_peak(gpu, monkeypatch):
    sys.path.insert(0, BENCH)
    try:
        import workloads
    finally:
        sys.path.remove(BENCH)
    monkeypatch.setattr(attention, "ENABLED", True)
    c = dict(B=1, T=8, d=16, H=2, dtype="float32")
    args = functx.device_put(workloads.inputs("gpt", c), gpu)
    _, exe = _both(monkeypatch, workloads.program(functx, "gpt", c), args)
    mp = exe.memory_plans["run"]
    assert mp.overlaps() == [] and mp.size < 0.6 * mp.total, mp.summary()
    assert mp.summary() in exe.source
    # the GELU gradient's pointwise kernel writes over the MLP's pre-activation (read in order)
    assert mp.shared and all(
        mp.slots[a].offset == mp.slots[b].offset for a, b in map(sorted, mp.shared)
    )
    assert "_fx_host(" in exe.source  # (flash attention's host steps read and write the arena)


def _loops(jx, x, w):
    jnp, lax = jx.numpy, jx.lax

    def body(h, xs):
        a = jnp.tanh(h @ w + xs)
        b = jnp.exp(a - a.max())
        return b / b.sum() + h, a.sum()

    h, ys = lax.scan(body, x[0], x)
    h = lax.while_loop(lambda h: h.sum() < 50.0, lambda h: h * 1.5 + 0.25, h)
    g = lax.cond(h.sum() > 60.0, lambda h: jnp.tanh(h) @ w, lambda h: jnp.exp(-h) @ w.T, h)
    return h, ys * 2.0, g


def test_small_programs_keep_an_allocation_per_intermediate(gpu):
    x = functx.device_put(np.ones((4, 8), np.float32), gpu)
    f = functx.jit(lambda x: functx.numpy.exp(x).sum(0) * functx.numpy.tanh(x).max(0))
    exe, _ = _executable(f.lower(x).compile())
    assert "_mem" not in exe.source and not exe.memory_plans
    assert exe.source.count("torch.empty(") >= 2


def test_control_flow_sub_programs_plan_their_own_intermediates(gpu, monkeypatch):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 2, 4)).astype(np.float32)
    w = rng.standard_normal((4, 4)).astype(np.float32)
    args = functx.device_put((x, w), gpu)
    monkeypatch.setenv("FUNCTX_DEVICE_LOOPS", "0")  # (host loops: sub-programs)
    with functx.default_matmul_precision("highest"):  # (no TF32 products on a GPU)
        got, exe = _both(monkeypatch, functools.partial(_loops, functx), args)
    plans = exe.memory_plans
    assert "run" in plans and any(k.startswith("_sub") for k in plans), list(plans)
    assert all(p.overlaps() == [] for p in plans.values())
    with jax.default_matmul_precision("highest"):
        want = jax.jit(functools.partial(_loops, jax))(x, w)
    for g, w_ in zip(got, jax.tree.leaves(want)):
        np.testing.assert_allclose(g, np.asarray(w_), rtol=1e-5, atol=1e-5)
