"""Issue 20's small training steps on the Triton backend: how many launches each program makes
(kernels and library calls, counted in the generated host function), and the rules that save
them, against JAX: values computed twice are computed once (``schedule.common_values``: the
forward pass of a per-example gradient and of the reported loss), copies that keep the element
order are not made (``schedule.in_order``), and consecutive independent pointwise kernels (the
parameter updates) share one launch (``lowering/triton/pointwise.py``).

The programs are ``benchmarks/workloads.py``'s, lowered at small sizes with Triton's CPU
interpreter standing in for the GPU (``TRITON_INTERPRET=1``, set per test); one small step runs.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
jax = pytest.importorskip("jax")

import functx  # noqa: E402
from functx.lowering import schedule  # noqa: E402
from functx.lowering.intexpr import Int  # noqa: E402
from functx.lowering.loopir import FloorDiv, Load, ModI, sym  # noqa: E402
from functx.lowering.schedule import in_order  # noqa: E402
from functx.lowering.triton import gemm  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import workloads  # noqa: E402


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    """Triton's CPU interpreter as the GPU, for this test only."""
    from functx.devices import device as placement

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    # (the scheduler's rules, counted with every product on cuBLAS: Triton GEMMs and their
    # epilogues, ``triton/gemm.py``, are counted in test_triton_gemm.py)
    monkeypatch.setattr(gemm, "TRITON_GEMM", False)
    # (an earlier test may have looked for GPUs without the interpreter: look again, and restore
    # what it found afterwards)
    monkeypatch.setattr(placement, "_gpu_list", placement._gpu_list or None)
    monkeypatch.setattr(placement, "GPU_IN_USE", placement.GPU_IN_USE)


def _on_gpu(tree):
    return functx.device_put(tree, functx.devices("gpu")[0])


def launches(source: str) -> list[str]:
    """The launches of a Triton program's host function ``run``: kernel launch sites
    (``_L<n>(...)``), matrix products and library or host steps (``_fx_<name>(...)``)."""
    run = source.split("\ndef run(")[1]
    return [ln.strip() for ln in run.splitlines() if re.match(r"    (_L\d+|_fx_\w+)\(", ln)]


# The steps at small sizes and their launches (before these rules: 25, 7, 41, 37; the CNN step,
# 10 s to lower here, went from 32 to 25). At the GPU sizes of ``workloads.py --gpu``: MLP 27 ->
# 23, kernel least squares 7 -> 6, DP-SGD 39 -> 29, CNN 35 -> 27, GPT block 44 -> 37. The kernel
# least squares step's three matrix-vector products are sums (``triton/dot.py``'s
# ``matvec_sums``): 6 -> 3 launches, none of them cuBLAS; at these sizes the DP-SGD step's three
# sums of clipped per-example bias gradients are too (30 -> 28). Consecutive independent launches
# then run as one (``triton/combine.py``): 21 -> 20, 3 -> 2, 28 -> 24, 30 -> 29.
STEPS = {
    "mlp_sgd": ("mlp", dict(sizes=(784, 64, 64, 10), batch=16), 20),
    "kls_momentum": ("kls", dict(n=100), 2),
    "dpsgd": ("dpsgd", dict(sizes=(64, 32, 32, 10), batch=16), 24),
    "gpt_block": ("gpt", dict(B=2, T=32, d=32, H=2, dtype="float32"), 29),
}


@pytest.mark.parametrize("name", list(STEPS))
def test_small_steps_launch_counts(name, monkeypatch):
    family, c, want = STEPS[name]
    args = _on_gpu(workloads.inputs(family, c))

    def lowered():
        step = functx.jit(workloads.program(functx, family, c), backend="triton")
        source = step.lower(*args).as_text()
        return source, launches(source)

    source, got = lowered()
    assert len(got) == want, "\n".join(got)
    if name != "kls_momentum":  # (the parameter updates: one launch)
        assert "kernels in one launch" in source
    if name == "dpsgd":  # common_values: the second forward pass reads the first (off: 31)
        monkeypatch.setattr(schedule, "COMMON_VALUES", False)
        functx.clear_caches()
        _, more = lowered()
        assert len(more) == 31, "\n".join(more)
        dots = [len([ln for ln in g if ln.startswith("_fx_dot(")]) for g in (more, got)]
        assert dots[0] - dots[1] == 3 and dots[1] == 8, dots  # (3 products fewer)


def _updates(ns, p, g):
    """An SGD update of four parameters of four shapes, and a reader of one of the new values
    at another shape (it must wait for that value: a launch of its own)."""
    new = ns.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)
    return new, ns.numpy.tanh(new["w"][:, :, None] * p["v"])


def test_parameter_updates_share_one_launch_and_match_jax():
    rng = np.random.default_rng(2)
    shapes = {"b": (3,), "w": (2, 3), "v": (4,), "s": ()}
    p, g = ({k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()} for _ in "pg")
    lowered = functx.jit(lambda p, g: _updates(functx, p, g), backend="triton").lower(
        *_on_gpu((p, g))
    )
    source = lowered.as_text()
    assert "4 kernels in one launch" in source, source
    assert len([ln for ln in launches(source) if ln.startswith("_L")]) == 2, source
    got = jax.tree.leaves(lowered.compile()(*_on_gpu((p, g))))
    want = jax.tree.leaves(jax.jit(lambda p, g: _updates(jax, p, g))(p, g))
    eager = jax.tree.leaves(_updates(functx, p, g))
    assert len(got) == len(want) == len(eager) == 5
    for a, w, e in zip(got, want, eager):
        a = np.asarray(a)
        assert a.dtype == np.asarray(w).dtype == np.float32
        np.testing.assert_allclose(a, np.asarray(w), rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(a, np.asarray(e), rtol=1e-6, atol=1e-7)


def test_in_order_folds_divisions_by_the_loop_bounds():
    i0, i1, i2 = (sym(f"i{d}") for d in range(3))
    f32 = np.dtype(np.float32)

    def load(off):
        return Load(f32, "t1", off)

    # a unit axis realised for a product: i1 // 10 is 0 for i1 < 10
    assert in_order(load(i1 + 10 * i0 + 10 * FloorDiv(i1, 10)), (i0, i1), (128, 10))
    # rows split in three axes and merged again
    split = 9 * ModI(i0, 28) + 252 * ModI(FloorDiv(i0, 28), 28) + 7056 * FloorDiv(i0, 784)
    assert in_order(load(i1 + split), (i0, i1), (1568, 9))
    assert in_order(load(i2 + 256 * i1 + 32768 * FloorDiv(i0, 128)), (i0, i1, i2), (1, 128, 256))
    # not in order: a transpose, a division the bounds do not decide, a broadcast
    assert not in_order(load(i0 + 4 * i1), (i0, i1), (4, 4))
    assert not in_order(load(i1 + 10 * i0 + 10 * FloorDiv(i1, 10)), (i0, i1), (4, 20))
    assert not in_order(load(i1 + Int(0) * i0), (i0, i1), (4, 4))
    assert not in_order(load(9 * ModI(i0, 28) + 7056 * FloorDiv(i0, 784) + i1), (i0, i1), (56, 9))


def _twice(ns, x, w, b):
    """A value computed twice, once with a unit axis (as vmap of a per-example function does):
    the product, its bias and tanh, a reduction of it."""
    h1 = ns.numpy.tanh(ns.lax.dot_general(x[None], w, (((2,), (0,)), ((), ()))) + b)
    h2 = ns.numpy.tanh(x @ w + b)
    return h1[0] * 2.0, h2 - 1.0, ns.numpy.max(h1, axis=2)[0] + ns.numpy.max(h2, axis=1)


def test_values_computed_twice_are_computed_once_by_both_backends(monkeypatch):
    from functx.lowering import lower, schedule
    from functx.transforms import passes

    rng = np.random.default_rng(1)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((5, 4), (4, 3), (3,)))
    g = lower.lower_jaxpr(
        passes.simplify(functx.make_jaxpr(lambda *a: _twice(functx, *a))(x, w, b))
    )
    dots = [n for n in g.nodes if n.kind == "dot"]
    assert schedule.common_values(g) >= 3  # the product, tanh and the maximum, as reads
    assert [n.kind for n in g.nodes if n.kind in ("dot", "reduce")] == ["dot", "reduce"], dots
    quick = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}
    with functx.default_matmul_precision("highest"), jax.default_matmul_precision("highest"):
        want = jax.jit(lambda *a: _twice(jax, *a)).lower(x, w, b).compile(quick)(x, w, b)
        cpp = functx.jit(lambda *a: _twice(functx, *a)).lower(x, w, b)
        tri = functx.jit(lambda *a: _twice(functx, *a), backend="triton").lower(*_on_gpu((x, w, b)))
        got_cpp, got_tri = cpp.compile()(x, w, b), tri.compile()(*_on_gpu((x, w, b)))
    for text in (cpp.as_text(), tri.as_text()):
        assert len(set(re.findall(r"(?m)^kernel \d+: dot ", text))) == 1, text
    assert len([ln for ln in launches(tri.as_text()) if ln.startswith("_fx_dot(")]) == 1
    for c, t, e in zip(got_cpp, got_tri, want):
        assert np.asarray(c).dtype == np.asarray(t).dtype == np.asarray(e).dtype
        np.testing.assert_allclose(np.asarray(c), np.asarray(e), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(np.asarray(t), np.asarray(e), rtol=1e-6, atol=1e-6)


def test_common_values_keeps_apart_what_only_looks_alike(monkeypatch):
    """Three ways two nodes can look alike without being the same value: ml_dtypes' int4 and
    uint4 share their dtype ``str`` (``<V1``); a scalar constant's expression, built and freed
    while keying, once left its ``id`` to the next one (a scan's ``randint`` clamped its bounds
    to the wrong constant). (The third, a ``checkpoint``'s forward pass recomputed on purpose,
    is tests/test_remat.py's.)"""
    import jax.random as jr
    import ml_dtypes

    from functx.lowering import lower
    from functx.transforms import passes

    monkeypatch.setattr(schedule, "COMMON_VALUES", True)
    i4, u4 = ml_dtypes.int4, ml_dtypes.uint4
    full = functx.numpy.full

    def scaled(a, b):
        return a * full(4, 3, i4), b * full(4, 3, u4)

    args = (np.ones(4, i4), np.ones(4, u4))
    g = lower.lower_jaxpr(passes.simplify(functx.make_jaxpr(scaled)(*args)))
    assert schedule.common_values(g) == 0

    def draws(k):
        def step(kk, _):
            kk, sub = functx.random.split(kk)
            return kk, functx.random.randint(sub, (2,), 0, 9, np.int32)

        return functx.lax.scan(step, k, None, length=3)[1]

    key = np.asarray(jr.PRNGKey(1234567))
    np.testing.assert_array_equal(functx.jit(draws)(key), draws(key))


@pytest.mark.skipif(
    torch.cuda.is_available(),
    reason="the interpreter cannot run the blocked solve's loop over CUDA tensors; on a GPU "
    "benchmarks/gpu_small_steps.py checks these programs",
)
@pytest.mark.parametrize("blocked", [True, False])
def test_a_lone_library_step_counts_the_launches_it_says(blocked, monkeypatch):
    """The CUDA-graph policy (``runtime.step_launches``): a program whose only step is a blocked
    triangular solve (two Triton kernels and a workspace: ``graph_launches`` 4) replays a graph;
    one whose only step is the one-kernel solve counts ``GRAPH_STEP_LAUNCHES`` and launches
    directly. Both match NumPy float64 and JAX."""
    import jax.lax.linalg as jll

    from functx.lowering.triton import linalg as tlinalg, runtime

    monkeypatch.delenv("FUNCTX_CUDA_GRAPHS", raising=False)
    monkeypatch.setattr(tlinalg, "SOLVE_BLOCK", 16)
    monkeypatch.setattr(tlinalg, "MAX_N", 8 if blocked else 64)  # (20 rows: blocked above 8)
    rng = np.random.default_rng(3)
    low = np.tril(rng.standard_normal((20, 20))).astype(np.float32) + 8 * np.eye(20, dtype="f4")
    b = rng.standard_normal((20, 3)).astype(np.float32)
    kw = dict(left_side=True, lower=True)
    f = functx.jit(lambda a, b: functx.lax.linalg.triangular_solve(a, b, **kw))
    got = np.asarray(f(*_on_gpu((low, b))))
    exe = next(iter(f.cache.values()))[0].exe.exe
    assert not exe.sites and len(exe.host_calls) == 1
    step = exe.host_calls[0][0]
    assert runtime.step_launches(step) == (4 if blocked else runtime.GRAPH_STEP_LAUNCHES)
    assert exe.n_launches == runtime.step_launches(step)
    assert exe.use_graphs == blocked == (exe.n_launches >= runtime.GRAPH_MIN_LAUNCHES)
    want = np.linalg.solve(low.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, jll.triangular_solve(low, b, **kw), rtol=1e-5, atol=1e-6)


def test_small_outputs_are_reused_only_when_nothing_holds_them():
    """``runtime.OutputRings``: a directly launched program hands out its previous output
    buffers again once nothing holds them (an Array, a view), never while something does;
    a loop feeding its results back gets the values of a loop that allocates every call."""
    from functx.lowering.triton import runtime

    f = functx.jit(lambda x, v: (x * 2.0 + v, functx.numpy.sum(x * v)), backend="triton")
    x0, v = _on_gpu((np.arange(6, dtype=np.float32), np.linspace(-1, 1, 6, dtype=np.float32)))
    f(x0, v)  # (the first call compiles; the rings start with the second)
    exe = next(iter(f.cache.values()))[0].exe.exe
    assert not exe.use_graphs and exe._rings is not None
    ptr = lambda a: a._value.data_ptr()  # noqa: E731
    held = [f(x0, v) for _ in range(runtime.RECYCLE_RING + 2)]  # all held: all apart
    assert len({ptr(h[0]) for h in held}) == len(held)
    view = held[0][0]._value[2:4]  # a view holds its buffer
    first_free = {ptr(held[1][0])}  # (the ring keeps the first RECYCLE_RING buffers)
    del held
    again = {ptr(f(x0, v)[0]) for _ in range(4)}  # each dropped at once: one buffer
    assert again == first_free and view.data_ptr() - 8 not in again
    first = 2.0 * np.asarray(x0) + np.asarray(v)  # (the held view kept its values)
    np.testing.assert_allclose(view.cpu().numpy(), first[2:4], rtol=1e-6)
    x, want = x0, np.arange(6, dtype=np.float64)
    for _ in range(5):  # x = step(x): the input is held while the call runs
        x, s = f(x, v)
        want, s_want = want * 2.0 + np.asarray(v, np.float64), np.sum(want * np.asarray(v))
        np.testing.assert_allclose(np.asarray(x), want, rtol=1e-6)
        np.testing.assert_allclose(float(s), s_want, rtol=1e-5)
