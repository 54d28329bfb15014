"""The Triton backend's own tests (the shared value cases run for it in ``test_backend_suite.py``):
the reduction variants (persistent, looped, split, Welford), scans along strided axes, the block
tables, launch sites, the CUDA graphs' bookkeeping (replays themselves on a GPU only), the disk
cache and compile logging, and ``lower(...).as_text()``.

In CI (no GPU) the kernels run in Triton's CPU interpreter: the autouse fixture ``interpreter`` sets
``TRITON_INTERPRET=1`` for each test of this file only (with ``monkeypatch``). Shapes are tiny and
the block limits small (``SMALL``) so that reductions loop over several chunks. On a GPU,
``FUNCTX_TEST_TRITON_GPU=1 pytest tests/lowering/test_triton_interpret.py`` runs them there.
"""

from __future__ import annotations

import functools
import math
import os
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import functx  # noqa: E402
import functx.lax as flax  # noqa: E402
import functx.nn as fnn  # noqa: E402
import functx.numpy as fnp  # noqa: E402
from functx.lowering import cache  # noqa: E402
from functx.lowering.triton import runtime as rt  # noqa: E402
from functx.lowering.triton.blocks import Blocks, reduce_plan, scan_plan  # noqa: E402
from functx.lowering.triton.program import compile_triton  # noqa: E402
from functx.transforms import passes  # noqa: E402

jax.config.update("jax_enable_x64", True)

# the interpreter evaluates masked-off lanes and NaN inputs with NumPy, which warns about them
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

GPU = os.environ.get("FUNCTX_TEST_TRITON_GPU", "0") not in ("", "0") and torch.cuda.is_available()
DEVICE = "cuda" if GPU else "cpu"


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    """Triton's CPU interpreter for this test only (unless the tests run on a GPU)."""
    if not GPU:
        from functx.devices import device as placement

        monkeypatch.setenv("TRITON_INTERPRET", "1")
        # (an earlier test may have looked for GPUs without the interpreter: look again, and
        # restore what it found afterwards)
        monkeypatch.setattr(placement, "_gpu_list", placement._gpu_list or None)
        monkeypatch.setattr(placement, "GPU_IN_USE", placement.GPU_IN_USE)


FX = SimpleNamespace(
    np=fnp,
    lax=flax,
    nn=fnn,
    grad=functx.grad,
    vmap=functx.vmap,
    associative_scan=flax.associative_scan,
)
JX = SimpleNamespace(
    np=jnp,
    lax=jax.lax,
    nn=jax.nn,
    grad=jax.grad,
    vmap=jax.vmap,
    associative_scan=jax.lax.associative_scan,
)

F32, F64, I32 = (np.dtype(t) for t in (np.float32, np.float64, np.int32))
NAN, INF = math.nan, math.inf
TOL = {F64: (1e-12, 1e-13), F32: (2e-6, 1e-6)}
# small blocks: rows of more than 16 elements loop in chunks of 16
SMALL = Blocks(pointwise=64, reduce_inner=16, scan=16, elems=256, persistent=16)
RNG = np.random.default_rng(0)


def to_numpy(t):
    t = t.detach().cpu()
    return t.float().numpy().astype(np.float32) if t.dtype == torch.bfloat16 else t.numpy()


def assert_same(got, want, what, tol=1.0, check_dtype=True):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if check_dtype:
        assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    else:  # JAX runs with x64 enabled: its defaults (argmax's int64, literals) are wider
        want = want.astype(got.dtype)
    if want.dtype.kind == "f":
        rtol, atol = TOL.get(want.dtype, TOL[F32])
        np.testing.assert_allclose(
            got, want, rtol=rtol * tol, atol=atol * tol, equal_nan=True, err_msg=what
        )
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def check(fn, *args, tol=1.0, blocks=SMALL, vs_jax=True):
    """Compile ``fn(FX, *args)`` to Triton, run it, compare with eager functx and JAX; returns
    the executable (for kernel counts and its source)."""
    f = functools.partial(fn, FX)
    closed = passes.simplify(functx.make_jaxpr(f)(*args))
    exe = compile_triton(closed, blocks)
    leaves = [
        torch.as_tensor(np.asarray(a), device=DEVICE) if GPU else a
        for a in functx.tree_util.tree_leaves(args)
    ]
    got = [to_numpy(t) for t in exe(*leaves)]
    eager = functx.tree_util.tree_leaves(f(*functx.tree_util.tree_map(fnp.asarray, args)))
    assert len(got) == len(eager)
    for i, (g, w) in enumerate(zip(got, eager)):
        assert_same(g, np.asarray(w), f"output {i} vs eager", tol)
    if vs_jax:
        want = jax.tree.leaves(jax.jit(functools.partial(fn, JX))(*args))
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, np.asarray(w), f"output {i} vs JAX", tol, check_dtype=False)
    return exe


def kernel_comments(exe) -> list[str]:
    """The first comment line of each generated kernel (what it is, its blocks, its variant)."""
    lines = exe.source.splitlines()
    return [
        lines[i + 2]
        for i, ln in enumerate(lines)
        if ln == "@triton.jit" and lines[i + 1].startswith("def k")
    ]


# --- the block tables ----------------------------------------------------------------------------
def test_block_tables():
    b = Blocks()
    # rows up to 8192 float32 (4096 float64) elements are one chunk held in registers
    assert reduce_plan(True, 32768, 4096, 4, b) == (1, 4096, 4)
    assert reduce_plan(True, 32768, 8192, 4, b) == (1, 8192, 8)
    assert reduce_plan(True, 100, 8192, 8, b)[1] == 2048  # float64: looped, chunks of 2048
    assert reduce_plan(True, 1000, 64, 4, b)[:2] == (64, 64)  # short rows: a block of rows
    assert reduce_plan(True, 10, 100000, 4, b)[:2] == (1, 4096)  # looped
    # reducing leading axes: 64 neighbouring (coalesced) columns by a short chunk
    assert reduce_plan(False, 4096, 32768, 4, b)[:2] == (64, 64)
    # scans: along the contiguous axis long chunks; along a strided axis 32 lanes x 64
    assert scan_plan(4096, 1024, False, b)[:2] == (4, 1024)
    assert scan_plan(8192, 16384, True, b)[:2] == (32, 64)


# --- reductions: persistent, looped, split, Welford ----------------------------------------------
@pytest.mark.parametrize("split", [True, False], ids=["split", "rows-only"])
def test_reductions_with_nan_ties_and_argmax(split):
    x = np.array(
        [
            [1.0, 3.0, 3.0, -2.0, 0.5] * 5,
            [1.0, NAN, 2.0, NAN, 9.0] * 5,
            [-INF, -INF, -INF, -INF, -INF] * 5,
            [0.0, -0.0, 0.0, -1.0, -0.0] * 5,
        ],
        F32,
    )  # 25 columns: two chunks of 16
    xi = RNG.integers(-5, 5, (4, 25)).astype(I32)

    def f(ns, x, xi):
        np_, lax = ns.np, ns.lax
        return {
            "sum": np_.sum(x, axis=1),
            "max": np_.max(x, axis=1),
            "min": np_.min(x, axis=1),
            "max0": np_.max(x, axis=0),
            "sum_all": np_.sum(np_.where(x == x, x, 0.0)),
            "prod": lax.reduce_prod(x[:, :7] + 2.0, (1,)),
            "argmax": np_.argmax(x, axis=1),
            "argmin": np_.argmin(x, axis=1),
            "argmax0": np_.argmax(x, axis=0),
            "argmax_i": np_.argmax(xi, axis=1),
            "argmin_i": np_.argmin(xi, axis=1),
            "isum": np_.sum(xi, axis=1),
            "imax": np_.max(xi, axis=0),
        }

    # with the split, single-pass reductions write partials over chunks, then fold them
    blocks = (
        SMALL
        if split
        else Blocks(
            pointwise=64, reduce_inner=16, scan=16, elems=256, persistent=16, min_programs=1
        )
    )
    exe = check(f, x, xi, blocks=blocks)
    assert ("_reduce_part(" in exe.source) == split


def _layer_norm(ns, x, g, b):
    mean = ns.np.mean(x, axis=-1, keepdims=True)
    var = ns.np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / ns.np.sqrt(var + 1e-5) * g + b


@pytest.mark.parametrize("blocks", [SMALL, Blocks()], ids=["looped", "persistent"])
def test_softmax_layer_norm_logsumexp_are_one_kernel_each(blocks):
    """One kernel each; with rows in registers (persistent) the row is loaded once for all the
    passes and the map phase; looped, the layer norm's mean and variance are one Welford pass."""
    x = (RNG.standard_normal((5, 37)) * 3 + 100).astype(F32)  # a large mean: Welford's case
    g, b = RNG.standard_normal(37).astype(F32), RNG.standard_normal(37).astype(F32)
    looped = blocks is SMALL
    for name, fn, args in [
        ("softmax", lambda ns, x: ns.nn.softmax(x, axis=-1), (x,)),
        ("layer norm", _layer_norm, (x, g, b)),
        ("logsumexp", lambda ns, x: ns.nn.logsumexp(x, axis=-1), (x,)),
    ]:
        # (a mean of 100 and a deviation of 3 amplify float32 rounding: the interpreter sums
        # sequentially, eager NumPy pairwise)
        exe = check(fn, *args, tol=16.0, blocks=blocks)
        assert exe.kernel_count() == 1, exe.kernels_text
        (comment,) = kernel_comments(exe)
        assert ("(looped" in comment) == looped and ("(persistent)" in comment) != looped, comment
        body = exe.source[exe.source.index("def k0_reduce") : exe.source.index("\n_L0 =")]
        if not looped:
            assert body.count("tl.load(in0 +") == 1, body  # one load of the row, shared
        if name == "layer norm":
            assert ("Welford" in comment) == looped, comment
            # looped: the Welford pass and the map phase read the row; persistent: once
            assert body.count("for jstart in range") == (2 if looped else 0), body


@pytest.mark.parametrize("shift", [0.0, 1e3, 1e5])
def test_welford_variance_and_moments_that_do_not_pair(shift):
    """``jnp.var`` (``d * d``) pairs with its mean into one Welford pass; a mean of cubed
    deviations does not pair and stays a pass of its own. Data far from zero: the Welford pass
    works on values shifted by the row's first one, so the variance keeps float32 accuracy (about
    as good as the two-pass formula in float32: compared with float64)."""
    x = (RNG.standard_normal((3, 40)) + shift).astype(F32)

    def f(x):
        m = fnp.mean(x, axis=1, keepdims=True)
        return [fnp.var(x, axis=1), fnp.std(x, axis=1), fnp.mean((x - m) ** 3, axis=1)]

    exe = compile_triton(passes.simplify(functx.make_jaxpr(f)(x)), SMALL)
    comments = kernel_comments(exe)  # (the scheduler gives the third moment its own kernel)
    assert "1 Welford pair" in comments[0], comments
    assert not any("Welford" in c for c in comments[1:]), comments
    var, std, m3 = (to_numpy(t) for t in exe(x))
    x64 = x.astype(np.float64)
    d = x64 - x64.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(var, (d * d).mean(1), rtol=2e-5)
    np.testing.assert_allclose(std, np.sqrt((d * d).mean(1)), rtol=2e-5)
    # the third moment inherits the float32 mean's rounding (so does the eager interpreter's)
    eager_m3 = np.asarray(f(fnp.asarray(x))[2])
    bound = 2 * max(np.abs(eager_m3 - (d**3).mean(1)).max(), 1e-5)
    assert np.abs(m3 - (d**3).mean(1)).max() <= bound


def test_column_reduction_with_a_map_phase_splits_and_fuses():
    """The layer-norm gradient's second kernel: column sums (dg, db) and dx, a map over the whole
    operand that reads none of this kernel's sums, in the same loop; with few column blocks the
    work splits over chunks of rows (partials, then a folding kernel)."""
    x = RNG.standard_normal((40, 8)).astype(F32)
    g, b = RNG.standard_normal(8).astype(F32), RNG.standard_normal(8).astype(F32)
    dy = RNG.standard_normal((40, 8)).astype(F32)

    def f(ns, x, g, b, dy):
        return ns.grad(lambda x, g, b: ns.np.sum(_layer_norm(ns, x, g, b) * dy), argnums=(0, 1, 2))(
            x, g, b
        )

    exe = check(f, x, g, b, dy, tol=50.0)
    assert exe.kernel_count() == 2, exe.kernels_text
    assert "_reduce_part(" in exe.source
    part = exe.source[exe.source.index("_reduce_part(") :]
    part = part[: part.index("\n_L")]
    assert part.count("for jc in range") == 1 and "out0 +" in part, part  # dx in the loop


# --- scans ---------------------------------------------------------------------------------------
def _linrec(p, q):
    return p[0] * q[0], q[0] * p[1] + q[1]


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_linear_recurrence_along_a_strided_axis(reverse):
    """Lanes on both sides of the scanned axis (a block of neighbouring lanes by a short chunk),
    several chunks with the prefix carried, and the reverse scan (indices flipped by hand)."""
    n = 37
    a = RNG.uniform(-1, 1, (2, n, 5)).astype(F32)
    b = RNG.standard_normal((2, n, 5)).astype(F32)
    exe = check(
        lambda ns, a, b: ns.associative_scan(_linrec, (a, b), reverse=reverse, axis=1),
        a,
        b,
        tol=4.0,
    )
    assert "tl.associative_scan" in exe.source and "reverse=True" not in exe.source
    (comment,) = kernel_comments(exe)
    assert "16 lanes x 8" in comment, comment  # 10 lanes: 16 per block; chunks of 256//2//16


@pytest.mark.parametrize("axis", [0, 1], ids=["contiguous-lanes", "strided"])
def test_linear_recurrence_gradient_fuses_into_the_reverse_scan(axis):
    """The gradient's pointwise tail (``g_a[t] = lambda[t] * h[t - 1]``, ``g_b = lambda``) is the
    reverse scan's epilogue, run per chunk on the values just scanned: two kernels, and the
    reverse scan's own state is never stored. Several chunks carry the prefix."""
    n = 37
    shape = (n, 6) if axis == 0 else (2, n, 5)
    a = RNG.uniform(0.5, 1.0, shape).astype(F32)
    b = RNG.standard_normal(shape).astype(F32)

    def f(ns, a, b):
        def loss(a, b):
            return ns.np.sum(ns.associative_scan(_linrec, (a, b), axis=axis)[1] ** 2)

        return ns.grad(loss, argnums=(0, 1))(a, b)

    exe = check(f, a, b, tol=8.0)
    comments = kernel_comments(exe)
    assert len(comments) == 2 and all("associative_scan" in c for c in comments), comments
    sig = exe.source[exe.source.rindex("@triton.jit") :].splitlines()[1]
    # a, the forward state and the two gradients: no buffer for the reverse scan's state
    assert sig.count(",") == 3 and "out0" in sig and "out1" in sig, sig


# --- scatters ------------------------------------------------------------------------------------
def test_ordered_scatter_add_and_dynamic_update_slice():
    w = RNG.standard_normal((6, 3)).astype(F32)
    idx = np.array([4, 1, 4, 0, 4, 2], np.int32)  # duplicates: updates combine in order
    start = np.array(2, np.int32)

    def f(ns, w, idx, start):
        return {
            "grad": ns.grad(lambda w: ns.np.sum(w[idx] ** 2 * 0.5))(w),
            "add": w.at[idx].add(1.0),
            "dus": ns.lax.dynamic_update_slice(w, w[:2] * 10.0, (start, np.int32(1))),
        }

    blocks = Blocks(pointwise=64, reduce_inner=16, scan=16, elems=256, atomic_scatter_add=False)
    exe = check(f, w, idx, start, tol=4.0, blocks=blocks)
    assert "tl.atomic_add" not in exe.source


def test_int64_index_arithmetic():
    """What programs of 2**31 elements or more get (forced here on tiny shapes)."""
    x = RNG.standard_normal((3, 21)).astype(F32)
    big = Blocks(pointwise=64, reduce_inner=16, scan=16, elems=256, persistent=16, int64_index=True)
    exe = check(
        lambda ns, x: {
            "sm": ns.nn.softmax(x * 2.0, axis=0),
            "am": ns.np.argmax(x, 1),
            "cs": ns.np.cumsum(x, axis=1),
        },
        x,
        blocks=big,
        tol=2.0,
    )
    assert "tl.program_id(0).to(tl.int64)" in exe.source


# --- launch sites ---------------------------------------------------------------------------------
class _Compiled:
    """Stands in for Triton's compiled kernel: records direct launches."""

    def __init__(self):
        self.calls = []
        self.function, self.packed_metadata = "fn", "meta"

    def run(self, *a):
        self.calls.append(a)


class _Kernel:
    """Stands in for a ``@triton.jit`` function: ``kernel[grid](*args)`` returns the compiled
    kernel, as Triton's does."""

    def __init__(self):
        self.compiled = _Compiled()
        self.slow = []

    def __getitem__(self, grid):
        def launch(*args, num_warps):
            self.slow.append((grid, args, num_warps))
            return self.compiled

        return launch


class _Buf:
    def __init__(self, ptr):
        self.ptr = ptr

    def data_ptr(self):
        return self.ptr


def test_launch_site_calls_the_compiled_kernel_directly(monkeypatch):
    """The first launch goes through Triton; later ones call the compiled kernel's launcher with
    (grid, stream, function, metadata, hooks, the buffers' addresses). Triton compiles a kernel
    per pattern of 16-byte alignment: the first launch with a new pattern goes through Triton,
    later ones with that pattern (a host loop's slices of a stacked buffer) launch directly."""
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(rt, "_cuda", (lambda: 0, lambda dev: 1234))
    monkeypatch.setattr(rt, "_knobs", None)
    k = _Kernel()
    site = rt.site(k, 4)
    a, b = _Buf(4096), _Buf(8192)
    site(3, 1, a, b)
    assert len(k.slow) == 1 and k.slow[0][0] == (3, 1) and site.mode == "direct"
    site(5, 2, a, b)
    assert len(k.slow) == 1
    assert k.compiled.calls == [(5, 2, 1, 1234, "fn", "meta", None, None, None, 4096, 8192)]
    site(5, 2, _Buf(4100), b)  # not 16-byte aligned: Triton specialises differently
    assert len(k.slow) == 2 and len(k.compiled.calls) == 1
    site(6, 1, _Buf(4200), b)  # the same pattern (the first buffer misaligned): direct
    assert len(k.slow) == 2 and k.compiled.calls[-1][-2:] == (4200, 8192)
    site(6, 1, a, _Buf(8200))  # another pattern: through Triton once, then direct
    site(6, 1, a, _Buf(8228))
    assert len(k.slow) == 3 and k.compiled.calls[-1][-2:] == (4096, 8228)
    assert set(site.fast) == {0, (0, 0b01), (0, 0b10)}
    # a profiler's launch hook (Triton calls it): through Triton while it is set
    hooks = SimpleNamespace(launch_enter_hook=lambda *a: None, launch_exit_hook=None)
    monkeypatch.setattr(rt, "_knobs", hooks)
    n = len(k.compiled.calls)
    site(5, 2, a, b)
    assert len(k.slow) == 4 and len(k.compiled.calls) == n
    hooks.launch_enter_hook = SimpleNamespace(calls=[])  # Triton 3.7's empty hook chain
    site(5, 2, a, b)
    assert len(k.slow) == 4 and len(k.compiled.calls) == n + 1
    monkeypatch.setenv("FUNCTX_TRITON_DIRECT", "0")
    k2 = _Kernel()
    s2 = rt.site(k2, 4)
    s2(1, 1, a)
    s2(1, 1, a)
    assert len(k2.slow) == 2 and s2.mode == "triton" and not k2.compiled.calls


def test_host_loop_launches_go_through_triton_as_often_for_any_length(monkeypatch):
    """A host loop (device loops off) over a scan whose steps read and write 25-element slices
    of stacked buffers: each step's slices are 16-byte aligned one step in four. Triton's
    dispatch (compiles, specialisation) serves each launch site's first launch per alignment
    pattern only, so a run dispatches through Triton as often at 13 steps as at 60; the other
    launches go to the compiled kernels directly (every launch through Triton grew with the
    length: on an H100 each took tens of microseconds, the first calls' bulk)."""
    monkeypatch.setenv("FUNCTX_DEVICE_LOOPS", "0")

    def body(c, x):
        y = fnp.tanh(c * x + 1.0)
        return y, y * 2.0 + x

    counts = []
    for length in (13, 60):
        xs = np.ones((length, 25), np.float32)
        exe = compile_triton(functx.make_jaxpr(lambda c, xs: flax.scan(body, c, xs))(xs[0], xs))
        assert "(a host loop: " in exe.source
        kernels = [_Kernel() for _ in exe.sites]
        with monkeypatch.context() as m:  # (after compiling) the direct path, on the CPU
            m.setattr(rt, "_cuda", (lambda: 0, lambda dev: 0))
            m.setattr(rt, "_knobs", None)
            m.setattr(rt, "interpreting", lambda: False)
            for s, k in zip(exe.sites, kernels):  # stand-ins: launches recorded, not run
                m.setattr(s, "kernel", k)
            exe(xs[0], xs)
        slow = sum(len(k.slow) for k in kernels)
        counts.append((slow, slow + sum(len(k.compiled.calls) for k in kernels)))
    (slow13, all13), (slow60, all60) = counts
    assert slow13 == slow60 and all60 - all13 >= 60 - 13


def test_launch_site_calls_the_c_launcher_of_triton_3_6(monkeypatch):
    """With Triton 3.6 and no scratch memory, the site calls the launcher's C function with the
    arguments its Python wrapper would give it."""
    import triton

    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(rt, "_cuda", (lambda: 0, lambda dev: 77))
    monkeypatch.setattr(rt, "_knobs", None)
    monkeypatch.setattr(triton, "__version__", "3.6.0")
    k = _Kernel()
    calls = []
    k.compiled.run = SimpleNamespace(
        launch=lambda *a: calls.append(a),
        global_scratch_size=0,
        profile_scratch_size=0,
        num_ctas=1,
        launch_cooperative_grid=False,
        launch_pdl=True,
    )
    site = rt.site(k, 4)
    a = _Buf(256)
    site(2, 1, a)
    site(9, 3, a)
    assert calls == [(9, 3, 1, 77, "fn", False, True, None, None, "meta", None, None, None, 256)]
    k.compiled.run.global_scratch_size = 64  # scratch to allocate: the launcher object
    s2 = rt.site(k, 4)
    s2(1, 1, a)
    assert s2.fast[0][0] is False and s2.fast[0][1] is k.compiled.run
    monkeypatch.setattr(triton, "__version__", "3.7.0")  # unverified versions: the object too
    k.compiled.run.global_scratch_size = 0
    s3 = rt.site(k, 4)
    s3(1, 1, a)
    assert s3.fast[0][0] is False


def test_programs_alike_but_for_argument_types_get_modules_of_their_own():
    """A launch site keeps the kernel Triton compiled for the buffers of its first launch, and a
    conversion to float32 from int32 or from float64 generates the same kernel text: sharing a
    module, the float64 conversion read int32 words on a GPU (eager ``random.normal`` gave
    1e21). The argument types head the module's source."""

    def to_f32(x):
        return flax.convert_element_type(x, np.float32)

    with functx.config.enable_x64(True):
        xs = [np.array([3, -2, 7], np.int32), np.array([0.3, -0.5, 3.0]), np.float32([1, 2, 3])]
        exes = [compile_triton(functx.make_jaxpr(to_f32)(x)) for x in xs]
        assert len({e.module_path for e in exes}) == 3
        for x, e in zip(xs, exes):
            (got,) = e(torch.tensor(x, device=DEVICE))
            np.testing.assert_array_equal(got.cpu().numpy(), x.astype(np.float32))


def test_cuda_graph_policy(monkeypatch):
    """Graphs by default for several launches, never for one; copies for little data, in place
    for large; FUNCTX_CUDA_GRAPHS=1/0 forces them on/off."""
    monkeypatch.delenv("FUNCTX_CUDA_GRAPHS", raising=False)
    assert rt._graph_policy(16) and rt._graph_policy(4)
    assert not rt._graph_policy(1) and not rt._graph_policy(3)
    assert rt._graph_mode(16, 60 << 20) == "copy" and rt._graph_mode(1, 8) == "copy"
    assert rt._graph_mode(16, 8 << 30) == rt._graph_mode(1, 9 << 20) == "in place"
    monkeypatch.setenv("FUNCTX_CUDA_GRAPHS", "1")
    assert rt._graph_policy(1)
    monkeypatch.setenv("FUNCTX_CUDA_GRAPHS", "0")
    assert not rt._graph_policy(16)


def _fake_capture(captured, nbytes=20):
    """A stand-in for ``TritonExecutable._capture_in_place`` on the CPU: the 'graph' reads its
    two inputs as captured and writes ``2 * a + b`` and ``sum(a)`` into new output buffers at
    each replay."""

    def capture(ins):
        a, b = ins
        outs = [torch.empty(4), torch.empty(())]
        captured.append(outs)

        def replay():
            outs[0].copy_(a * 2 + b)
            outs[1].copy_(a.sum())

        return replay, outs, nbytes

    return capture


def _graphs(captured, nbytes=20, memory=None, limit=2):
    return rt.InPlaceGraphs(
        _fake_capture(captured, nbytes), nbytes, memory or rt.GraphMemory(100), limit
    )


def test_in_place_graphs_hand_out_outputs_only_once_nothing_holds_them():
    """InPlaceGraphs: the second call with the same input addresses captures; a replay reuses
    an instance only when nothing (a result, one of its outputs, a view, a DLPack export)
    holds its outputs; otherwise another instance, up to the limit, then direct launches."""
    captured = []
    graphs = _graphs(captured)
    x, b = torch.arange(4.0), torch.ones(4)
    assert graphs([x, b]) is None and not captured  # first sight of these addresses
    r1 = graphs([x, b])
    assert len(captured) == 1 and torch.equal(r1[0], x * 2 + 1) and float(r1[1]) == 6.0
    assert r1[0] is not captured[0][0] and r1[0].data_ptr() == captured[0][0].data_ptr()
    r2 = graphs([x, b])  # r1 is held: a second instance
    assert len(captured) == 2 and r2[0].data_ptr() == captured[1][0].data_ptr()
    assert graphs([x, b]) is None  # both held, at the limit: launch directly
    second = r1[1]  # only the second output
    del r1
    assert graphs([x, b]) is None
    view = second.view(1)
    del second
    assert graphs([x, b]) is None  # a view of it still holds it
    del view
    r3 = graphs([x, b])  # r1's buffers are free: replayed, not captured again
    assert len(captured) == 2 and r3[0].data_ptr() == captured[0][0].data_ptr()
    cap = torch.utils.dlpack.to_dlpack(r3[0])
    del r3
    assert graphs([x, b]) is None  # the export holds it (and r2 holds the other)
    back = torch.utils.dlpack.from_dlpack(cap)
    assert torch.equal(back, x * 2 + 1)
    del back, cap, r2
    x.mul_(10)  # the 'graph' reads its inputs where they lie
    assert torch.equal(graphs([x, b])[0], x * 2 + 1) and len(captured) == 2


def _fake_copy_graphs(captured, ins, fn):
    """CopyGraphs over a fake capture: 'replaying' computes ``fn`` of the inputs into the
    outputs. Like a graph, it keeps no reference to an input it reads in place: it reads
    whatever this call's argument at the captured address holds."""
    current = []
    held = {}

    def capture(static_in, outs, pool):
        if outs is None:
            outs = [torch.empty_like(r) for r in fn(*static_in)]
        views = {id(v) for lay in held["g"].layouts.values() for v in lay.views.values()}
        reads = [t if id(t) in views else t.data_ptr() for t in static_in]
        captured.append((outs, pool, None))

        class Graph:
            def replay(self):
                args = []
                for r in reads:
                    if isinstance(r, int):
                        r = next(t for t in current if t.data_ptr() == r)
                    args.append(r)
                for o, v in zip(outs, fn(*args)):
                    o.copy_(v)

            def pool(self):
                return "pool of the first"

        return outs, Graph()

    held["g"] = graphs = rt.CopyGraphs(capture, [t.clone() for t in ins], ins[0].device)

    def call(args):
        current[:] = args
        try:
            return graphs(args)
        finally:
            current.clear()

    call.graphs = graphs
    return call


def test_copy_graphs_hand_out_outputs_only_while_nothing_holds_them():
    """CopyGraphs: the first instance copies the arguments in and its outputs out; up to
    HANDOUT_INSTANCES more hand out their own outputs, each replayed only once nothing holds its
    previous ones, so a held result is never overwritten."""
    captured = []
    x, b = torch.arange(4.0), torch.ones(4)
    graphs = _fake_copy_graphs(captured, [x, b], lambda a, b: [a * 2 + b, a.sum()])

    def call(k):
        return graphs([x + k, b])

    def ok(r, k):
        return torch.equal(r[0], (x + k) * 2 + 1) and float(r[1]) == float((x + k).sum())

    r0 = call(0)  # the first instance: its outputs are copied out
    assert ok(r0, 0) and len(captured) == 1 and captured[0][1] is None
    assert r0[0].data_ptr() != captured[0][0][0].data_ptr()
    held = []
    for k in range(1, rt.HANDOUT_INSTANCES + 1):  # each result held: one more instance each
        held.append(call(k))
        assert ok(held[-1], k) and len(captured) == k + 1
        assert captured[k][1] == "pool of the first"
        assert held[-1][0].data_ptr() == captured[k][0][0].data_ptr()
    n = rt.HANDOUT_INSTANCES + 1
    r3 = call(n)  # all held: the first instance again, with copies
    assert ok(r3, n) and len(captured) == n
    assert all(ok(r, k) for k, r in enumerate(held, 1))
    r1 = held.pop(0)
    assert r1[1].data_ptr() != captured[1][0][1].data_ptr()  # a scalar beside: copied out
    view = r1[0][1:]
    del r1
    assert ok(call(n + 1), n + 1) and len(captured) == n  # a view still holds r1: copied
    del view
    r5 = call(n + 2)  # r1's buffers are free: replayed into them, no capture
    assert ok(r5, n + 2) and len(captured) == n
    assert r5[0].data_ptr() == captured[1][0][0].data_ptr()
    assert ok(r0, 0) and ok(r3, n) and all(ok(r, k) for k, r in enumerate(held, 2))


def test_copy_graphs_read_a_training_loops_parameters_in_place():
    """``params = step(params, batch)`` with a new batch each call: after the first calls two
    instances read each other's outputs in place and only the batch is copied in; the same
    arguments passed again are read in place too. Values always right, held results kept."""
    captured = []

    def step(w, v, batch):
        return [w - 0.5 * batch.sum() * v, v * 0.9 + w, (w * batch).sum()]

    def want(w, v, batch):
        return [t.clone() for t in step(w, v, batch)]

    w, v = torch.arange(6.0), torch.ones(6)
    graphs = _fake_copy_graphs(captured, [w, v, torch.zeros(6)], step)
    losses, ref_w, ref_v = [], w.clone(), v.clone()
    for k in range(8):
        batch = torch.full((6,), 0.1 * (k + 1))
        out = graphs([w, v, batch])
        ref_w, ref_v, loss = want(ref_w, ref_v, batch)
        assert torch.allclose(out[0], ref_w) and torch.allclose(out[1], ref_v), k
        assert torch.allclose(out[2], loss), k
        losses.append((out[2].clone(), loss))
        if k == 4:  # a result held to the end: never overwritten
            kept = (out, [o.clone() for o in out])
        if k >= 3:  # the pair is in place: the parameters are not copied
            assert graphs.graphs.copied == 1, (k, graphs.graphs.copied)
        w, v = out[0], out[1]
        del out
    assert len(graphs.graphs.handout) <= rt.HANDOUT_INSTANCES
    assert all(torch.equal(a, b) for a, b in losses)
    assert all(torch.equal(a, b) for a, b in zip(*kept))
    del kept
    # the same arguments again and again (a benchmark's loop): nothing copied in
    captured.clear()
    same = _fake_copy_graphs(captured, [w, v, batch], step)
    expect = want(w, v, batch)
    kept = []
    for k in range(6):
        out = same([w, v, batch])
        assert all(torch.allclose(a, b) for a, b in zip(out, expect)), k
        if k >= 3:
            assert same.graphs.copied == 0, (k, same.graphs.copied)
        kept.append(out)  # (held one call: the instances alternate)
        if len(kept) > 1:
            kept.pop(0)


def test_copy_graphs_after_a_slow_first_capture_replay_it_with_copies(monkeypatch):
    """A first capture slower than GRAPH_SLOW_CAPTURE_S (a host loop's: each capture runs every
    iteration's host code) is the only one: later calls replay it, copying the arguments in and
    the results out, whatever the caller holds. Results right and kept."""
    captured = []
    x, b = torch.arange(4.0), torch.ones(4)

    def fn(a, b):
        return [a * 2 + b, a.sum()]

    for slow, more in ((-1.0, 0), (60.0, rt.HANDOUT_INSTANCES)):
        monkeypatch.setattr(rt, "GRAPH_SLOW_CAPTURE_S", slow)
        captured.clear()
        graphs = _fake_copy_graphs(captured, [x, b], fn)
        held = []
        for k in range(6):  # the same arguments, each result held (out = f(x) in a loop)
            held.append((graphs([x + k, b]), x + k))
        assert len(captured) == 1 + more and len(graphs.graphs.handout) == more, slow
        assert all(torch.equal(r[0], a * 2 + b) and float(r[1]) == a.sum() for r, a in held)


def test_copy_graphs_copy_arguments_of_any_dtype_into_aligned_static_inputs():
    """The static inputs are aligned views of one buffer that one cat fills with the arguments'
    bytes: every dtype, 0-d and empty arguments arrive unchanged."""
    ins = [
        torch.arange(3, dtype=torch.float32),
        torch.tensor(7, dtype=torch.int32),
        torch.tensor([True, False, True]),
        torch.zeros((0, 2), dtype=torch.float64),
        torch.tensor([1 + 2j], dtype=torch.complex64),
        torch.arange(5, dtype=torch.int64).reshape(5, 1),
    ]
    seen = []

    def capture(static_in, outs, pool):
        seen.append([t.clone() for t in static_in])

        class Graph:
            def replay(self):
                seen.append([t.clone() for t in static_in])

            def pool(self):
                return None

        return [torch.empty(1)], Graph()

    graphs = rt.CopyGraphs(capture, [torch.empty_like(t) for t in ins], ins[0].device)
    assert all(s.data_ptr() % rt._ALIGN == 0 for s in graphs.static_in)
    assert [s.shape for s in graphs.static_in] == [t.shape for t in ins]
    for k in range(3):
        args = [t + k if t.dtype != torch.bool else t ^ bool(k % 2) for t in ins]
        graphs(args)
        for got, want in zip(seen[-1], args):
            assert got.dtype == want.dtype and torch.equal(got, want)
    nothing = rt.CopyGraphs(capture, [], torch.device("cpu"))  # a program without arguments
    assert nothing([])[0].shape == (1,) and nothing.static_in == []


def test_in_place_graphs_key_on_every_input_address():
    """Graphs are keyed by the addresses of all inputs (offsets into a storage included), not
    by the tensor objects; keys whose graphs are gone do not pile up."""
    captured = []
    graphs = _graphs(captured, limit=8)
    base, b, c = torch.arange(6.0), torch.ones(4), torch.full((4,), 3.0)
    for args in ([base[:4], b], [base[1:5], b], [base[:4], c]):
        graphs(args)
        assert torch.equal(graphs(args)[0], args[0] * 2 + args[1]), args
    assert len(captured) == 3 and graphs.instances() == 3
    same = [base.view(6)[:4], b.view(4)]  # new tensor objects at the same addresses
    assert torch.equal(graphs(same)[0], base[:4] * 2 + 1) and len(captured) == 3
    small = _graphs(captured, limit=1)
    for i in range(12):  # new addresses each time: the oldest key's graph goes
        z = torch.full((4,), float(i))
        small([z, b])
        assert torch.equal(small([z, b])[0], z * 2 + 1)
        assert small.instances() == len(small.graphs) == 1
    assert len(small.seen) <= 8


def test_in_place_graphs_drop_the_least_recently_replayed_instance():
    """Within one key too, the instance replayed longest ago goes first."""
    captured = []
    graphs = _graphs(captured)
    x, y, one = torch.arange(4.0), torch.zeros(4), torch.ones(4)
    graphs([x, one])
    r1, r2 = graphs([x, one]), graphs([x, one])
    del r1
    r3 = graphs([x, one])  # the first instance, replayed: now the most recent
    assert r3[0].data_ptr() == captured[0][0].data_ptr()
    del r2, r3
    graphs([y, one])
    graphs([y, one])  # y's graph takes the place of x's least recently used instance
    assert graphs.instances() == 2 and len(captured) == 3
    assert graphs([x, one])[0].data_ptr() == captured[0][0].data_ptr()


def test_in_place_graphs_share_the_device_budget():
    """Executables' in-place graphs on one device share a GraphMemory: capturing past its
    budget drops the least recently used executable's instances first; a capture that could
    not fit drops nothing; an executable that keeps capturing stops after
    GRAPH_MAX_CAPTURES."""
    captured = []
    memory = rt.GraphMemory(60)  # three instances of 20 bytes
    a, b = _graphs(captured, memory=memory), _graphs(captured, memory=memory)
    x, one = torch.arange(4.0), torch.ones(4)
    a([x, one])
    ra1, ra2 = a([x, one]), a([x, one])
    assert a.instances() == 2 and a.held_bytes() == 40
    b([x, one])
    rb1 = b([x, one])  # fits beside a's two
    assert (a.instances(), b.instances()) == (2, 1)
    rb2 = b([x, one])  # b's second: a, the least recently used, gives one up
    assert (a.instances(), b.instances()) == (1, 2) and len(captured) == 4
    assert all(torch.equal(r[0], x * 2 + 1) for r in (ra1, ra2, rb1, rb2))
    del ra2
    a([x, one])  # a's remaining instance was ra2's: replayed, and a is the most recent again
    assert len(captured) == 4 and [r() for r in memory.users] == [b, a]
    big = _graphs(captured, nbytes=61, memory=memory)  # can never fit
    big([x, one])
    assert big([x, one]) is None and (a.instances(), b.instances()) == (1, 2)
    c = _graphs(captured, nbytes=31, memory=memory)  # fits only once the others give way
    c([x, one])
    rc = c([x, one])
    assert rc is not None and a.instances() + b.instances() == 1 and len(captured) == 5
    assert c([x, one]) is None and a.instances() + b.instances() == 1  # 31 kept + 31: no room
    assert all(torch.equal(r[0], x * 2 + 1) for r in (ra1, rb1, rb2, rc))
    # of three executables, the least recently used gives way
    memory, kept = rt.GraphMemory(60), []
    e, f, g = (_graphs(kept, memory=memory) for _ in range(3))
    for h in (e, f, g):
        h([x, one])  # first sight
    results = [h([x, one]) for h in (e, f, g, g)]  # g's second capture: e gives way
    assert (e.instances(), f.instances(), g.instances()) == (0, 1, 2) and len(kept) == 4
    assert all(torch.equal(r[0], x * 2 + 1) for r in results)
    # an executable at its own limit gives up its own older graph before others' (B keeps its)
    memory, kept = rt.GraphMemory(60), []
    a, b = _graphs(kept, memory=memory), _graphs(kept, memory=memory)
    y = torch.zeros(4)
    b([x, one])
    rb = b([x, one])
    a([x, one])
    ra = [a([x, one]), a([x, one])]
    a([y, one])
    ry = a([y, one])  # new addresses: a's oldest instance goes, not b's
    assert (a.instances(), b.instances()) == (2, 1) and len(kept) == 4
    assert all(torch.equal(r[0], x * 2 + 1) for r in [rb] + ra) and torch.equal(ry[0], one)
    d = _graphs(captured, memory=rt.GraphMemory(1 << 20))
    d([y, one])
    held = [d([y, one]) for _ in range(2)]
    zs = [torch.full((4,), float(i)) for i in range(rt.GRAPH_MAX_CAPTURES)]
    for z in zs:  # new addresses each time, each seen twice
        d([z, one])
        held.append(d([z, one]))
    assert d.captures == rt.GRAPH_MAX_CAPTURES and held[-1] is None  # 2 for y, 14 for zs
    assert [h is not None for h in held[2:]] == [True] * 14 + [False] * 2
    assert all(torch.equal(h[0], z * 2 + 1) for h, z in zip(held[2:16], zs))


@pytest.mark.skipif(not GPU, reason="CUDA graphs need a GPU (FUNCTX_TEST_TRITON_GPU=1)")
def test_cuda_graph_training_loop_copies_only_the_batch():
    """A training loop on the GPU (``w, v = step(w, v, batch)``, four batches cycling): the
    copy-mode graphs read the parameters in place after the first steps (two instances reading
    each other's outputs), copy only the batch, and give the direct launches' values."""
    w0 = RNG.standard_normal((48, 32)).astype(F32)
    v0 = RNG.standard_normal(32).astype(F32)
    x0 = RNG.standard_normal((64, 48)).astype(F32)

    def fn(ns, w, v, x):
        h = ns.np.tanh(x @ w)
        return w - 0.01 * (x.T @ h), 0.9 * v + h.sum(0), (h * h).sum()

    with functx.default_matmul_precision("highest"), jax.default_matmul_precision("highest"):
        exe = check(fn, w0, v0, x0, tol=30)
    batches = [torch.as_tensor(x0 * (1 + 0.1 * k), device="cuda") for k in range(4)]

    def run(graphs: bool):
        exe.use_graphs, exe.graph_mode = graphs, "copy"
        w, v = (torch.as_tensor(a, device="cuda") for a in (w0, v0))
        losses, copied = [], []
        for k in range(12):
            w, v, loss = exe(w, v, batches[k % 4])
            losses.append(loss)
            if graphs:
                (state,) = exe._graphs.values()
                copied.append(getattr(state, "copied", None))
        return w.clone(), v.clone(), torch.stack(losses), copied

    ref = run(False)
    exe._graphs.clear()
    got = run(True)
    assert not exe.graph_note, exe.graph_note
    assert got[3][4:] == [1] * 8, got[3]  # the batch only, once the pair is in place
    for a, b in zip(got[:3], ref[:3]):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not GPU, reason="CUDA graphs need a GPU (FUNCTX_TEST_TRITON_GPU=1)")
@pytest.mark.parametrize("mode", ["copy", "in place"])
def test_cuda_graph_replays_match_direct_launches(mode):
    """Both kinds of CUDA graph on the GPU: replays give the direct launches' results (up to
    the products' rounding: cuBLAS may pick another kernel under capture), for new inputs too,
    and results held across later calls keep their values bit for bit."""
    x = RNG.standard_normal((64, 48)).astype(F32)
    w = RNG.standard_normal((48, 32)).astype(F32)

    def fn(ns, x, w):
        h = ns.np.tanh(x @ w)
        return h * 2, ns.np.exp(h).sum(0), ns.np.max(x, axis=1) + ns.np.sum(h)

    with functx.default_matmul_precision("highest"), jax.default_matmul_precision("highest"):
        exe = check(fn, x, w, tol=30)  # sums of 48 products, in another order than NumPy's
    xt, wt = (torch.as_tensor(a, device="cuda") for a in (x, w))
    x2 = xt * 3 - 1
    exe.use_graphs = False
    want, want2 = ([o.clone() for o in exe(a, wt)] for a in (xt, x2))
    exe.use_graphs, exe.graph_mode = True, mode
    held, snaps = [], []
    for a in [xt] * 5 + [x2] * 3 + [xt] * 2:
        held.append(exe(a, wt))
        snaps.append([o.clone() for o in held[-1]])
    (state,) = exe._graphs.values()
    assert exe.use_graphs and not exe.graph_note, exe.graph_note  # no capture failed
    if mode == "copy":  # every result is held: two hand-out instances, then copies
        assert isinstance(state, rt.CopyGraphs) and state.copying is not None
        assert len(state.handout) == rt.HANDOUT_INSTANCES
    if mode == "in place":
        graphs = state
        assert isinstance(graphs, rt.InPlaceGraphs) and graphs.captures >= 3, exe.graph_note
        xt.copy_(x2)  # new values at the same address: replays read them
        for _ in range(3):
            held.append(exe(xt, wt))
            snaps.append([o.clone() for o in held[-1]])
    torch.cuda.synchronize()
    for i, (outs, snap) in enumerate(zip(held, snaps)):
        for got, s_, w_ in zip(outs, snap, want2 if 5 <= i < 8 or i >= 10 else want):
            torch.testing.assert_close(got, w_, rtol=1e-5, atol=1e-5, msg=f"{mode} call {i}")
            assert torch.equal(got, s_), (mode, i)  # unchanged by the calls after it
    if mode == "copy":
        del held, snaps, outs, snap, got, s_
        ptrs = set()
        for i in range(4):  # results dropped after each call: the hand-out instances alternate
            out = exe(x2 if i % 2 else xt, wt)
            ptrs.add(out[0].data_ptr())
            for got, w_ in zip(out, want2 if i % 2 else want):
                torch.testing.assert_close(got, w_, rtol=1e-5, atol=1e-5, msg=f"drop {i}")
            del out
        assert ptrs <= {h.outs[0].data_ptr() for h in state.handout}, "no copy out"


def test_large_pointwise_kernels_keep_reused_inputs_in_l2():
    """A pointwise kernel writing at least ``Blocks.stream_bytes`` loads the inputs it reuses
    (smaller than its iteration: broadcast ones) with evict_last and stores with evict_first;
    full-size inputs, and smaller kernels, get no hint."""
    import dataclasses

    x, y = RNG.standard_normal(16).astype(F32), RNG.standard_normal(32).astype(F32)
    z = RNG.standard_normal((16, 32)).astype(F32)

    def fn(ns, x, y, z):
        return ns.np.tanh(x[:, None]) * y[None, :] + z

    exe = check(fn, x, y, z, blocks=dataclasses.replace(SMALL, stream_bytes=1024))
    loads = {
        ln.split("tl.load(")[1].split(" ")[0]: ln
        for ln in exe.source.splitlines()
        if "tl.load(" in ln
    }
    assert set(loads) == {"in0", "in1", "in2"}
    assert all('eviction_policy="evict_last"' in loads[b] for b in ("in0", "in1"))
    assert "eviction_policy" not in loads["in2"]
    (store,) = [ln for ln in exe.source.splitlines() if "tl.store(" in ln]
    assert store.endswith('eviction_policy="evict_first")')
    assert "eviction_policy" not in check(fn, x, y, z).source  # 2 KiB: under 64 MiB


def test_copies_that_keep_the_element_order_are_not_made():
    """A temporary that holds another buffer's elements in the same order (a reshaped input
    that a gather indexes) names that buffer instead of being copied; a matrix product reads a
    reshaped input in place; outputs are still new."""
    x = RNG.standard_normal((3, 4)).astype(F32)
    w = RNG.standard_normal((4, 5)).astype(F32)
    idx = np.array([3, 1, 7], np.int32)
    exe = check(lambda ns, x, i: ns.np.tanh(x.reshape(12)[i]) * 2, x, idx)
    assert "t2 = in0  # kernel 0: (12,), the elements of in0 in order (no copy)" in exe.source, (
        exe.source
    )
    assert exe.source.count("def k") == 1  # only the gather and tanh: no copy kernel
    with functx.default_matmul_precision("highest"), jax.default_matmul_precision("highest"):
        exe = check(
            lambda ns, x, w: (
                ns.np.tanh(ns.lax.dot_general(x[None], w, (((2,), (0,)), ((), ()))))[0] * 2
            ),
            x,
            w,
        )
    assert "_fx_dot(in0, in1, " in exe.source, exe.source
    assert exe.source.count("def k") == 1  # only the tanh
    exe = check(lambda ns, x: x.reshape(2, 6), x)
    xt = torch.as_tensor(x, device=DEVICE)
    (y,) = exe(xt)
    assert y.data_ptr() != xt.data_ptr()


def test_interpreter_launches_go_through_triton():
    x = RNG.standard_normal((4, 5)).astype(F32)
    exe = check(lambda ns, x: ns.np.tanh(x) * 2.0, x)
    exe(x)
    assert exe.launch_modes() == ({"direct": 1} if GPU else {"triton": 1})


@pytest.mark.skipif(GPU, reason="the interpreter's own conversion")
def test_interpreted_kernels_loop_over_scalar_arguments():
    """A loop bounded by a kernel argument (``linalg.py``'s ``range(0, n)``) runs in the
    interpreter: Triton 3.6's turned the scalar (a one-element array) into an int with
    ``int(array)``, which NumPy 2.4 refuses; ``interpreter.index_scalars`` takes the element."""
    import triton
    import triton.language as tl
    from triton.runtime import interpreter as ti

    from functx.lowering.triton import interpreter

    interpreter.index_scalars()
    interpreter.index_scalars()  # (installed once)
    assert ti._patch_lang_tensor.functx_index_scalars
    assert (
        interpreter._scalar_index(SimpleNamespace(handle=SimpleNamespace(data=np.full((1, 1), 4))))
        == 4
    )
    with pytest.raises((TypeError, ValueError)):  # (a block is no index)
        interpreter._scalar_index(SimpleNamespace(handle=SimpleNamespace(data=np.arange(2))))

    @triton.jit
    def total(X, Y, lo, n):
        acc = tl.load(X) * 0.0
        for j in range(lo, n):
            acc += tl.load(X + j)
        tl.store(Y, acc)

    x, y = torch.arange(10, dtype=torch.float32), torch.zeros(1)
    total[(1,)](x, y, 2, 7)
    assert y.item() == float(np.arange(10)[2:7].sum())


# --- disk cache, logging, as_text --------------------------------------------------------------
def test_modules_and_triton_kernels_are_cached_under_functx_cache_dir(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("FUNCTX_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("FUNCTX_LOG_COMPILES", "1")
    monkeypatch.delenv("TRITON_CACHE_DIR", raising=False)
    x = np.linspace(-1, 1, 6).astype(F32)
    jf = functx.jit(lambda x: fnp.exp(x) - 1.5, backend="triton")
    arg = functx.device_put(x, functx.devices("gpu")[0]) if hasattr(functx, "device_put") else x
    capfd.readouterr()
    np.testing.assert_allclose(
        np.asarray(functx.device_get(jf(arg)) if hasattr(functx, "device_get") else jf(arg)),
        np.exp(x) - 1.5,
        rtol=1e-6,
    )
    err = capfd.readouterr().err
    modules = tmp_path / "triton" / "modules"
    (path,) = modules.glob("functx_triton_*.py")
    assert (modules / (path.name + ".sha256")).exists()
    assert f"new module: {path}" in err, err
    assert "first run of 1 kernels" in err, err
    import triton

    if hasattr(triton, "knobs"):
        assert triton.knobs.cache.dir == str(tmp_path / "triton" / "kernels")
    # a damaged module file is written again; an intact one is reused
    source = path.read_text()
    path.write_text("garbage")
    key, again, written = cache.triton_module(source)
    assert str(again) == str(path) and written and path.read_text() == source
    assert cache.triton_module(source)[2] is False


def test_lower_as_text_shows_the_triton_source():
    x = np.ones((2, 3), F32)
    arg = functx.device_put(x, functx.devices("gpu")[0]) if hasattr(functx, "device_put") else x
    text = functx.jit(lambda x: fnn.softmax(x), backend="triton").lower(arg).as_text()
    assert "# Jaxpr" in text and "# kernels\nkernel 0: reduce" in text and "# Triton" in text
    assert "@triton.jit\ndef k0_reduce(" in text and "def run(inputs, consts, outputs):" in text
    exe = compile_triton(functx.make_jaxpr(lambda x: fnp.exp(x) / fnp.sum(fnp.exp(x)))(x))
    (y,) = exe(torch.ones(2, 3, device=DEVICE))  # torch tensors in, torch tensors out
    assert isinstance(y, torch.Tensor) and y.shape == (2, 3) and y.device.type == DEVICE
    np.testing.assert_allclose(to_numpy(y), np.full((2, 3), 1 / 6), rtol=1e-6)


def test_compile_jaxpr_contract():
    """``compile_jaxpr(closed, "triton")``: ``exe(leaves)`` on torch tensors, NumPy arrays and
    scalars returns a list of torch tensors on the inputs' device; it has ``.source`` and
    ``.kernels_text``."""
    from functx.lowering.compile import compile_jaxpr

    x = RNG.standard_normal(5).astype(F32)
    closed = functx.make_jaxpr(lambda x, s: (x * s, fnp.sum(x)))(x, np.float32(2))
    exe = compile_jaxpr(closed, "triton")
    assert "@triton.jit" in exe.source and exe.kernels_text.startswith("kernel 0")
    for leaves in ([x, np.float32(2)], [torch.as_tensor(x, device=DEVICE), 2.0]):
        outs = exe(leaves)
        assert isinstance(outs, list) and all(isinstance(o, torch.Tensor) for o in outs)
        assert outs[0].device.type == DEVICE and outs[1].shape == ()
        np.testing.assert_allclose(to_numpy(outs[0]), x * 2, rtol=1e-6)
        np.testing.assert_allclose(to_numpy(outs[1]), x.sum(), rtol=1e-5)


def test_intermediates_stored_and_never_read_share_the_scratch():
    """A reduction that only its own kernel's epilogue uses is still stored by its kernel; such
    small intermediates take the device's shared scratch (``runtime.scratch``), no allocation
    per call, while one another kernel reads gets its own buffer; both programs compute the
    right values, and the scratch is one tensor for both."""

    def f(ns, x):  # row sums used only by their epilogue
        return ns.np.sum(x * x, axis=1) * 2.0 + 1.0, ns.np.max(x, axis=1) - 1.0

    def g(ns, x):  # row sums read by the column sums' kernel
        return ns.np.sum(x * ns.np.sum(ns.np.abs(x), axis=1, keepdims=True), axis=0)

    x = RNG.standard_normal((5, 7)).astype(F32)
    exe_f = check(f, x, tol=4.0)
    run = exe_f.source.split("\ndef run(")[1]
    assert "_fx_scratch(dev, torch.float32, 5)" in run and "torch.empty(" not in run, run
    exe_g = check(g, x, tol=4.0)
    run_g = exe_g.source.split("\ndef run(")[1]
    assert "_fx_scratch" not in run_g and "torch.empty(5," in run_g, run_g
    assert len({id(t) for t in rt._SCRATCH.values()}) == len(rt._SCRATCH)
    again = [to_numpy(t) for t in exe_f(x)]  # (after g: the scratch's contents mean nothing)
    np.testing.assert_allclose(again[0], (x.astype(np.float64) ** 2).sum(1) * 2 + 1, rtol=1e-5)
