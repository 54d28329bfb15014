"""functx.sharding (Mesh, PartitionSpec, NamedSharding, SingleDeviceSharding, make_mesh,
device_put with a sharding) against jax.sharding, and functx.shard_map in one process against
JAX's shard_map on JAX CPU devices (JAX needs XLA_FLAGS before it starts, so its reference runs
in a subprocess once per session)."""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys

import jax
import numpy as np
import pytest

import functx
from functx import sharding as fs
from functx.sharding import Mesh, NamedSharding, PartitionSpec as P, SingleDeviceSharding

HOST4 = "--xla_force_host_platform_device_count=4"


@pytest.fixture
def host4(monkeypatch):
    """Four host devices for functx (JAX in this process keeps its one)."""
    monkeypatch.setenv("XLA_FLAGS", HOST4)
    return fs.host_devices()


# --- PartitionSpec, Mesh, NamedSharding against jax.sharding --------------------------------------
SPECS = [(), ("x",), ("x", None), (None, ("x", "y")), (("x",),), ("x", None, ("x", "y"))]


@pytest.mark.parametrize("entries", SPECS)
def test_partition_spec_matches_jax(entries):
    ours, theirs = P(*entries), jax.sharding.PartitionSpec(*entries)
    assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
    assert len(ours) == len(theirs) and list(ours) == list(theirs)
    assert functx.P is P and fs.PartitionSpec is P
    assert ours == P(*entries) and hash(ours) == hash(P(*entries))
    assert (ours == P(*entries, None)) == (theirs == jax.sharding.PartitionSpec(*entries, None))


def test_mesh_reprs_shapes_and_errors_match_jax(host4):
    jd = jax.devices()[:1]
    for shape, names in [((1,), ("x",)), ((1, 1), ("a", "b"))]:
        ours = Mesh(np.array(host4[:1]).reshape(shape), names)
        theirs = jax.sharding.Mesh(np.array(jd).reshape(shape), names)
        assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
        assert ours.shape == theirs.shape and ours.axis_names == theirs.axis_names
        assert ours.size == theirs.size and ours.axis_sizes == theirs.axis_sizes
    m = functx.make_mesh((2, 2), ("x", "y"))
    assert (
        repr(m) == "Mesh(axis_sizes=(2, 2), axis_names=('x', 'y'), axis_types=(Explicit, Explicit))"
    )
    assert str(m) == "Mesh('x': 2, 'y': 2, axis_types=(Explicit, Explicit))"
    assert [d.id for d in m.devices.flat] == [0, 1, 2, 3] and m == functx.make_mesh(
        (2, 2), ("x", "y")
    )
    assert Mesh(host4, "i").axis_names == ("i",)
    with m:
        assert fs.current_mesh() is m
    assert fs.current_mesh() is None
    for ours, theirs in [
        (lambda: Mesh(host4, ("x", "y")), lambda: jax.sharding.Mesh(jd, ("x", "y"))),
        (lambda: functx.make_mesh((8,), ("x",)), lambda: jax.make_mesh((8,), ("x",))),
    ]:
        with pytest.raises(ValueError) as e_theirs:
            theirs()
        with pytest.raises(ValueError) as e_ours:
            ours()
        assert re.sub(r"\d", "N", str(e_ours.value)) == re.sub(r"\d", "N", str(e_theirs.value))


def test_named_sharding_matches_jax(host4):
    m = functx.make_mesh((2, 2), ("x", "y"))
    s = NamedSharding(m, P("x", ("y",)))
    assert repr(s) == (
        "NamedSharding(mesh=Mesh('x': 2, 'y': 2, axis_types=(Explicit, Explicit)), "
        "spec=P('x', 'y'), memory_kind=device)"
    )
    assert s.shard_shape((4, 6)) == (2, 3) and s.num_devices == 4 and not s.is_fully_replicated
    assert NamedSharding(m, P()).is_fully_replicated and s == NamedSharding(m, P("x", "y"))
    assert s.devices_indices_map((4, 6))[host4[3]] == (slice(2, 4), slice(3, 6))
    with pytest.raises(ValueError, match=r"Resource axis: z of P\('z',\) is not found in mesh"):
        NamedSharding(m, P("z"))
    with pytest.raises(fs.DuplicateSpecError, match="duplicate entries for `x`"):
        NamedSharding(m, P("x", "x"))
    with pytest.raises(ValueError, match="partitioned 4 times"):
        functx.device_put(np.arange(6.0), NamedSharding(m, P(("x", "y"))))
    x = functx.device_put(np.arange(8.0), NamedSharding(m, P(("x", "y"))))
    assert isinstance(x, functx.Array) and x.dtype == np.float64
    one = SingleDeviceSharding(functx.devices("cpu")[0])
    theirs = jax.sharding.SingleDeviceSharding(jax.devices("cpu")[0])
    assert repr(one) == repr(theirs) and one.num_devices == 1
    assert functx.device_put(np.ones(2, np.float32), one).dtype == np.float32
    # a pytree of shardings
    y = functx.device_put({"a": np.ones(2), "b": np.zeros(4)}, {"a": one, "b": s.mesh and one})
    assert set(y) == {"a", "b"}


def test_docstring_examples():
    from functx import _shard_map, distributed
    from functx.experimental import shard_map as exp_shard_map

    for mod in (fs, distributed, _shard_map, exp_shard_map):
        res = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert res.failed == 0 and res.attempted > 0, mod.__name__


# --- shard_map in one process against JAX's ----------------------------------------------------
MESHES = {"x4": ((4,), ("x",)), "x2": ((2,), ("x",)), "x2y2": ((2, 2), ("x", "y"))}


def make(M, devices, mesh_name):
    """A mesh of ``M`` (jax or functx) with Auto axes over the first devices of ``devices``."""
    shape, names = MESHES[mesh_name]
    return M.sharding.Mesh(np.array(devices[: int(np.prod(shape))]).reshape(shape), names)


def _inputs():
    r = np.random.default_rng(0)
    return {
        "a46": r.standard_normal((4, 6)).astype(np.float32),
        "a163": r.standard_normal((16, 3)).astype(np.float32),
        "a86": r.standard_normal((8, 6)).astype(np.float32),
        "w64": r.standard_normal((6, 4)).astype(np.float32),
        "X": r.standard_normal((8, 3)),
        "y": r.standard_normal(8),
        "w3": r.standard_normal(3),
    }


def cases(M):
    """(name, mesh name, thunk(mesh) -> outputs): the same programs for JAX and functx (``M``),
    few of them (each costs JAX a compile). Each also runs over processes in
    tests/test_distributed.py."""
    P_, lax, jnp_ = M.sharding.PartitionSpec, M.lax, M.numpy
    A = _inputs()

    def sm(mesh, f, i, o, **kw):
        return M.shard_map(f, mesh=mesh, in_specs=i, out_specs=o, **kw)

    def mesh2d(mesh):  # jitted; reductions over one and two axes, 2-d blocks, a split contraction
        def f(a, b, c, w):
            return (
                lax.psum(a, "x"),
                lax.pmean(a, ("x", "y")),
                lax.pmax(a, "y"),
                lax.pmin(a, "x"),
                b * (1 + lax.axis_index("x") + 10 * lax.axis_index("y")),
                lax.psum(c @ w, "x"),
            )

        ins = (P_("x", "y"), P_("x", "y"), P_(None, "x"), P_("x", None))
        outs = (P_(None, "y"), P_(), P_("x"), P_(None, "y"), P_(("y", "x")), P_())
        return M.jit(sm(mesh, f, ins, outs))(A["a46"], A["a86"], A["a86"], A["w64"])

    def ring(mesh):  # gathers, scatters, all_to_all, a ring ppermute
        def f(a):
            perm = [(i, (i + 1) % 4) for i in range(4)]
            return (
                lax.all_gather(a, "x"),
                lax.all_gather(a, "x", axis=1, tiled=True),
                lax.psum_scatter(a, "x", scatter_dimension=0, tiled=True),
                lax.all_to_all(a, "x", 0, 1, tiled=True),
                lax.ppermute(a, "x", perm) + lax.axis_index("x"),
            )

        outs = (P_(), P_(), P_("x"), P_("x"), P_("x"))  # (JAX types all_gather's as varying)
        return sm(mesh, f, P_("x"), outs, check_vma=False)(A["a163"])

    def data_parallel(mesh):  # per-shard gradients averaged; a pytree of specs
        def loss(w, X, y):
            return jnp_.mean((X @ w - y) ** 2)

        def step(w, d, s):
            g = M.grad(loss)(w, d["X"], d["y"])
            g_sum = M.grad(lambda w: lax.psum(loss(w, d["X"], d["y"]), "x"))(w)  # through psum
            l_sum = lax.psum(loss(w, d["X"], d["y"]), "x")
            return {"g": lax.pmean(g, "x"), "g_sum": g_sum, "l": l_sum * s}

        # check_vma=False: JAX's varying-axes types would also psum the gradient of the
        # replicated w over x (functx has no such types: docs/differences.md)
        specs = (P_(), {"X": P_("x"), "y": P_("x")}, P_())
        d = {"X": A["X"], "y": A["y"]}
        return sm(mesh, step, specs, P_(), check_vma=False)(A["w3"], d, 2.0)

    return [
        ("mesh2d", "x2y2", mesh2d),
        ("ring", "x4", ring),
        ("data_parallel", "x2", data_parallel),
        ("data_parallel_4", "x4", data_parallel),
    ]


JAX_CASES = ("mesh2d", "ring", "data_parallel")  # (data_parallel_4: the same program on x4)


def run_cases(M, devices, names=None):
    """{case name: list of NumPy leaves} for every case (or those in ``names``)."""
    out = {}
    for name, mesh_name, thunk in cases(M):
        if names is None or name in names:
            res = thunk(make(M, devices, mesh_name))
            out[name] = [np.asarray(v) for v in M.tree_util.tree_leaves(res)]
    return out


def grad_outside(M, mesh):
    """grad of a shard_map-ped loss (one-process mode only: the backward pass runs outside)."""
    P_, lax, jnp_ = M.sharding.PartitionSpec, M.lax, M.numpy
    A = _inputs()

    def loss(w, X, y):
        body = lambda w, X, y: lax.pmean(jnp_.mean((X @ w - y) ** 2), "x")  # noqa: E731
        return M.shard_map(body, mesh=mesh, in_specs=(P_(), P_("x"), P_("x")), out_specs=P_())(
            w, X, y
        )

    return M.value_and_grad(loss)(A["w3"], A["X"], A["y"])


_JAX_SCRIPT = """
import sys, numpy as np, jax
jax.config.update("jax_enable_x64", True)
sys.path.insert(0, {tests!r})
import test_sharding as t
res = t.run_cases(jax, jax.devices(), t.JAX_CASES)
v, g = t.grad_outside(jax, t.make(jax, jax.devices(), "x4"))
res["grad_outside"] = [np.asarray(v), np.asarray(g)]
np.savez({out!r}, **{{f"{{k}}/{{i}}": a for k, vs in res.items() for i, a in enumerate(vs)}})
"""


@pytest.fixture(scope="module")
def jax_reference(tmp_path_factory):
    """JAX's results for ``cases`` on four JAX CPU devices, from a subprocess."""
    out = str(tmp_path_factory.mktemp("jaxref") / "ref.npz")
    tests = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(tests)
    path = os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, XLA_FLAGS=HOST4, JAX_PLATFORMS="cpu", PYTHONPATH=path)
    script = _JAX_SCRIPT.format(tests=tests, out=out)
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(out) as z:
        ref: dict = {}
        for key in sorted(z.files, key=lambda k: (k.split("/")[0], int(k.split("/")[1]))):
            ref.setdefault(key.split("/")[0], []).append(z[key])
    return ref


def test_shard_map_one_process_matches_jax(host4, jax_reference):
    ours = run_cases(functx, host4, JAX_CASES)
    v, g = grad_outside(functx, make(functx, host4, "x4"))
    ours["grad_outside"] = [np.asarray(v), np.asarray(g)]
    assert set(ours) == set(jax_reference)
    for name, leaves in ours.items():
        for i, (a, b) in enumerate(zip(leaves, jax_reference[name], strict=True)):
            assert a.shape == b.shape and a.dtype == b.dtype, (name, i, a.dtype, b.dtype)
            np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-6, err_msg=f"{name}[{i}]")


def test_shard_map_errors_match_jax(host4):
    m = make(functx, host4, "x2y2")
    x = np.arange(8.0, dtype=np.float32)

    def sm(f, i, o, **kw):
        return functx.shard_map(f, mesh=m, in_specs=i, out_specs=o, **kw)

    with pytest.raises(ValueError, match="out_specs which require replication"):
        sm(lambda a: a, P("x"), P())(x)
    np.testing.assert_array_equal(sm(lambda a: a, P("x"), P(), check_vma=False)(x), x[:4])
    with pytest.raises(ValueError, match="not evenly divisible"):
        sm(lambda a: a, P("x"), P("x"))(x[:7])
    with pytest.raises(ValueError, match="must refer to an axis marked as manual"):
        sm(lambda a: a, P("z"), P("x"))(x)
    with pytest.raises(ValueError, match="in_specs entry which is too long"):
        sm(lambda a: a, P("x", "y"), P("x"))(x)
    with pytest.raises(ValueError, match="out_specs entry which is too long"):
        sm(lambda a: a, P("x"), P(None, "x"))(x)
    with pytest.raises(ValueError, match="pytree structure"):
        sm(lambda a: a, (P("x"), P("x")), P("x"))(x)
    with pytest.raises(NameError, match="unbound axis name: z"):
        sm(lambda a: functx.lax.psum(a, "z"), P("x"), P("x"))(x)
    # the older spelling, and the mesh of a `with mesh:` block
    from functx.experimental.shard_map import shard_map as old

    np.testing.assert_array_equal(
        old(lambda a: a * 2, m, P("x"), P("x"), check_rep=False)(x), 2 * x
    )
    with m:
        y = functx.shard_map(lambda a: a + 1, in_specs=P(("x", "y")), out_specs=P(("x", "y")))(x)
    np.testing.assert_array_equal(y, x + 1)


def test_pmap_one_process(host4):
    x = np.arange(12.0).reshape(4, 3)
    y = functx.pmap(lambda v: v - functx.lax.pmean(v, "i"), "i")(x)
    np.testing.assert_allclose(y, x - x.mean(0))
    with pytest.raises(ValueError, match="requires 8 logical devices"):
        functx.pmap(lambda v: v, "i")(np.ones((8, 2)))


# --- the overlapped psum of a compiled data-parallel step (functx.control.collectives) ------------
class _TwinHandler:
    """A 2-position axis whose other position holds this one's operands: a psum doubles them.
    With ``psum_start``/``psum_done`` (asynchronous in a real handler: TorchCollectives)."""

    size = 2

    def __init__(self):
        self.calls = []

    def psum(self, x):
        self.calls.append("psum")
        return 2 * np.asarray(x)

    def psum_start(self, xs):
        self.calls.append(("start", len(xs)))
        return [2 * np.asarray(x) for x in xs]

    def psum_done(self, handle):
        self.calls.append("done")
        return handle

    def axis_index(self):
        return 0


def test_overlapped_psum_placement_and_host_steps(monkeypatch):
    """jit's lowering of a psum over an axis whose handler starts reductions asynchronously: a
    start per bucket right after the bucket's last gradient (before the rest of the backward
    pass), the dones where the psum stood; the steps' NumPy path (the C++ backend's)."""
    from functx.control import collectives as C
    from functx.core import ShapedArray
    from functx.lowering.compile import loop_ir_text
    from functx.transforms import passes

    r = np.random.default_rng(0)
    p = {"w1": r.standard_normal((3, 4)), "w2": r.standard_normal((4, 2))}
    X, y = r.standard_normal((5, 3)), r.standard_normal((5, 2))

    def step(p):
        loss = lambda p: ((functx.numpy.tanh(X @ p["w1"]) @ p["w2"] - y) ** 2).sum()  # noqa: E731
        return functx.lax.psum(functx.grad(loss)(p), "x")

    h = _TwinHandler()
    order = {}
    for bucket in ("1", str(1 << 20)):  # each gradient its own bucket; one bucket
        monkeypatch.setenv("FUNCTX_PSUM_BUCKET_BYTES", bucket)
        with C.axis_frame("x", 2, "spmd", h):
            text = loop_ir_text(passes.simplify(functx.make_jaxpr(step)(p)))
        kinds = []
        for line in text.splitlines():
            for what in ("<psum start", "<psum done", " = dot("):
                if what in line and "# kernel " in line:
                    kinds.append((int(line.rsplit("# kernel ", 1)[1]), what.strip(" =(<")))
        order[bucket] = [w for _, w in sorted(set(kinds))]
    # (kernels in program order) the backward pass's last two products (the hidden layer's
    # cotangent and w1's gradient) run after w2's gradient's reduction started
    want = ["dot"] * 3 + ["psum start", "dot", "dot", "psum start", "psum done", "psum done"]
    assert order["1"] == want, order
    assert order[str(1 << 20)] == ["dot"] * 5 + ["psum start", "psum done"], order
    # the steps, on NumPy values: a transposed operand's sum comes out transposed
    frame = C.lookup("x") if C.is_bound("x") else C.AxisFrame("x", 2, "spmd", h)
    params = {"axes": ("x",), "frames": C.Baked([frame])}
    pending = C._Pending()
    a = np.arange(6.0).reshape(2, 3)
    start = C.PsumStart(params, [ShapedArray((2, 3), np.float64)], pending)
    done = C.PsumDone(params, [ShapedArray((3, 2), np.float64)], pending, [((2, 3), (1, 0))])
    h.calls.clear()
    (token,) = start(a)
    (out,) = done(token)
    np.testing.assert_array_equal(out, 2 * a.T)
    assert h.calls == [("start", 1), "done"]
    with pytest.raises(functx.errors.FunctxError, match="did not run first"):
        done(token)
    assert C.psum_buckets([5, 1, 3], [4, 4, 4], 8) == [[1, 2], [0]]
    # the operand computed last reduces alone when it and the rest are large enough
    mib = 1 << 20
    assert C.psum_buckets([4, 1, 2, 3], [mib, 8 * mib, mib, 8 * mib], 8 * mib) == [[1], [2, 3], [0]]
    assert C.psum_buckets([4, 1, 2], [4 * mib, 8 * mib, mib], 8 * mib) == [[1], [2], [0]]
    assert C.psum_buckets([4, 1, 2], [4 * mib, 8 * mib, 10], 8 * mib) == [[1], [2, 0]]


class _TwinTorch(_TwinHandler):
    """``_TwinHandler`` on the Triton runtime's torch tensors (``torch``): a start whose operands
    fill a compiled program's pack (``functx.distributed._pack_of``) doubles the pack in place,
    as an all_reduce of it would; other operands are doubled into new tensors."""

    graph_safe = False

    def __init__(self):
        super().__init__()
        self.torch = self

    def psum_start(self, xs):
        from functx.distributed import _pack_of

        pack = _pack_of(list(xs))
        if pack is None:
            self.calls.append(("start", len(xs)))
            return [2 * x for x in xs]
        pack.mul_(2)
        self.calls.append(("in place", len(xs)))
        return list(xs)


def test_overlapped_psum_reduces_packed_gradients_in_place(monkeypatch):
    """On the Triton backend (its interpreter), the gradients of an overlapped psum's bucket are
    computed into views of one flat buffer (a pack), reduced in place and read in place by the
    update: no concatenation and no copy out. A gradient that another kernel also reads is not
    packed (an in-place sum would change that reader's value): its bucket takes the copies."""
    pytest.importorskip("triton")
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("FUNCTX_PSUM_BUCKET_BYTES", "1")  # (each gradient its own bucket)
    from functx.control import collectives as C
    from functx.distributed import PACK_SLACK
    from functx.lowering.triton.program import PACK_ALIGN, compile_triton
    from functx.transforms import passes

    assert PACK_SLACK == PACK_ALIGN  # (the program's packs are what the handler recognises)
    r = np.random.default_rng(0)
    p = {"b": r.standard_normal(4), "w1": r.standard_normal((3, 4)), "w2": r.standard_normal(4)}
    X, y = r.standard_normal((5, 3)), r.standard_normal(5)

    def loss(p):
        return ((functx.numpy.tanh(X @ p["w1"] + p["b"]) @ p["w2"] - y) ** 2).sum()

    def step(p):
        g = functx.grad(loss)(p)
        s = functx.lax.psum(g, "x")
        new = functx.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, s)
        return new, g["w2"] * 3.0  # (w2's gradient is read by another kernel too)

    h = _TwinTorch()
    with C.axis_frame("x", 2, "spmd", h):
        exe = compile_triton(passes.simplify(functx.make_jaxpr(step)(p)))
    assert exe.source.count("._fx_pack = True") == 2 and "(the sum, in place)" in exe.source
    leaves = functx.tree_util.tree_leaves(p)
    out = [t.numpy() for t in exe(*[torch.as_tensor(v) for v in leaves])]
    g = functx.grad(loss)(p)
    want = [v - 0.2 * gv for v, gv in zip(leaves, functx.tree_util.tree_leaves(g))]
    for a, b in zip(out, want + [3.0 * np.asarray(g["w2"])], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert sorted(h.calls, key=str) == [("in place", 1)] * 2 + [("start", 1)] + ["done"] * 3


def test_psum_waits_move_down_to_their_readers():
    """Triton host code: each psum done (a wait step) moves, with what reads its sums, below the
    statements that need none of them, in the order of the dones (``sink_waits``); code with a
    statement of another form after the first wait is left as it is."""
    from functx.lowering.triton.program import sink_waits

    host = [
        "    _L1(1, 1, in0, t5)",
        "    _fx_host(0, [t5.view(-1)[:4]], [t6.view(-1)[:1]])",
        "    _L2(1, 1, t5, t7)",
        "    # kernel 4: host step 1",
        "    _fx_host(1, [t6.view(-1)[:1]], [t8.view(-1)[:4], t9.view(-1)[:4]])",
        "    _fx_host(2, [t16.view(-1)[:1]], [t10.view(-1)[:4]])",
        "    _L3(1, 1, in1, t10, out0)",
        "    _L4(1, 1, in2, t8, out1)",
        "    t11 = t9  # kernel 7: the elements of t9 in order (no copy)",
        "    _L5(1, 1, t11, out2)",
        "    _L6(1, 1, in3, t7, out3)",
    ]
    got = sink_waits(host, {1, 2})
    want = host[:3] + [host[10]] + host[3:5] + host[7:10] + [host[5], host[6]]
    assert got == want
    loop = host[:5] + ["    for i in range(3):", "        _L7(1, 1, t8, t12)"] + host[5:]
    assert sink_waits(loop, {1, 2}) == loop


def test_make_array_from_callback_assembles_the_blocks(host4):
    data = np.arange(24.0, dtype=np.float32).reshape(4, 6)
    mesh = functx.make_mesh((2, 2), ("x", "y"))
    calls = []

    def block(index):
        calls.append(index)
        return data[index]

    for spec, blocks in ((P("x", "y"), 4), (P("x"), 2), (P(), 1)):
        calls.clear()
        got = functx.make_array_from_callback((4, 6), NamedSharding(mesh, spec), block)
        np.testing.assert_array_equal(np.asarray(got), data)
        assert got.dtype == np.float32 and len(calls) == blocks  # (replicated blocks once)
    s = NamedSharding(mesh, P("x", "y"))
    idx = list(s.addressable_devices_indices_map((4, 6)).values())
    got = functx.make_array_from_single_device_arrays((4, 6), s, [data[i] for i in idx])
    np.testing.assert_array_equal(np.asarray(got), data)
    got = functx.make_array_from_process_local_data(s, data)
    np.testing.assert_array_equal(np.asarray(got), data)
    with pytest.raises(ValueError, match=r"expected \(2, 3\)"):
        functx.make_array_from_callback((4, 6), s, lambda index: data)
    with pytest.raises(ValueError, match="3 arrays for 4 addressable devices"):
        functx.make_array_from_single_device_arrays((4, 6), s, [data[i] for i in idx[:3]])
    # review34: JAX's errors for a dtype unlike the blocks', a global shape unlike the local
    # data's (one process); not a Sharding: a TypeError before the callback is looked at
    for make in (
        lambda: functx.make_array_from_callback((4, 6), s, block, dtype=np.int32),
        lambda: functx.make_array_from_single_device_arrays(
            (4, 6), s, [data[i] for i in idx], dtype=np.int32
        ),
        lambda: functx.make_array_from_process_local_data(s, data, (8, 6)),
    ):
        with pytest.raises(ValueError, match="must match|None or equal"):
            make()
    with pytest.raises(TypeError, match="must be a Sharding"):
        functx.make_array_from_callback((4, 6), "cpu", block)


# --- sharding in types: abstract meshes, the mesh in context, reshard, auto/explicit axes --------
def test_abstract_mesh_like_jax():
    ours = fs.AbstractMesh((2, 3), ("x", "y"))
    theirs = jax.sharding.AbstractMesh((2, 3), ("x", "y"))
    assert repr(ours) == repr(theirs) and ours.size == theirs.size
    assert dict(ours.shape) == dict(theirs.shape) and ours.shape_tuple == theirs.shape_tuple
    for name in ("auto_axes", "explicit_axes", "manual_axes", "are_all_axes_auto", "empty"):
        assert getattr(ours, name) == getattr(theirs, name), name
    ex = ours.update_axis_types({"x": fs.AxisType.Explicit})
    jex = theirs.update_axis_types({"x": jax.sharding.AxisType.Explicit})
    assert repr(ex) == repr(jex) and ex.explicit_axes == ("x",)
    assert repr(ours.update(axis_sizes=(4, 3))) == repr(theirs.update(axis_sizes=(4, 3)))
    assert ours == fs.AbstractMesh((2, 3), ("x", "y")) and hash(ours) == hash(
        ex.update_axis_types({"x": fs.AxisType.Auto})
    )
    assert repr(fs.get_abstract_mesh()) == repr(jax.sharding.get_abstract_mesh())
    cpu = functx.devices("cpu")  # (the default device may be the Triton interpreter's GPU)
    mesh, jmesh = functx.make_mesh((1,), ("x",), devices=cpu), jax.make_mesh((1,), ("x",))
    assert repr(mesh.abstract_mesh) == repr(jmesh.abstract_mesh)
    dev = fs.AbstractDevice("cpu", None, "cpu")
    assert (
        repr(dev) == repr(jax.sharding.AbstractDevice("cpu", None, "cpu"))
        and dev == mesh.abstract_mesh.abstract_device
    )
    with pytest.raises(ValueError):
        fs.AbstractMesh((2,), ("x", "y"))
    with pytest.raises(ValueError):
        fs.use_abstract_mesh(mesh)


def test_manual_axis_type_and_single_device_sharding():
    t = fs.ManualAxisType(varying={"x"})
    assert repr(t) == repr(jax.sharding.ManualAxisType(varying={"x"}))
    assert t == fs.ManualAxisType(varying=["x"]) and hash(t)
    dev = functx.devices()[0]
    assert fs.make_single_device_sharding(dev) == SingleDeviceSharding(dev)


def test_set_mesh_and_use_abstract_mesh_contexts():
    mesh = functx.make_mesh((1,), ("x",))
    assert functx.set_mesh is fs.set_mesh and fs.get_mesh().empty
    with functx.set_mesh(mesh):
        assert fs.get_mesh() == mesh and fs.get_abstract_mesh() == mesh.abstract_mesh
        assert fs.current_mesh() == mesh  # (shard_map's mesh=None)
        abstract = fs.AbstractMesh((4,), ("d",))
        with fs.use_abstract_mesh(abstract):
            assert fs.get_abstract_mesh() == abstract and fs.get_mesh() == mesh
        assert fs.get_abstract_mesh() == mesh.abstract_mesh
    assert fs.get_mesh().empty and fs.get_abstract_mesh().empty
    fs.set_mesh(mesh)  # (the plain call stays set)
    try:
        assert fs.get_mesh() == mesh
    finally:
        fs.set_mesh(None)
    assert fs.get_mesh().empty
    with pytest.raises(ValueError):
        fs.set_mesh(3)
    with pytest.raises(ValueError):
        functx.jit(lambda v: (fs.set_mesh(mesh), v)[1])(1.0)
    manual = functx.make_mesh((1,), ("x",), (fs.AxisType.Manual,))
    with pytest.raises(ValueError):
        fs.set_mesh(manual)


def test_reshard_like_jax():
    x = np.arange(4.0, dtype=np.float32)
    mesh, jmesh = functx.make_mesh((1,), ("x",)), jax.make_mesh((1,), ("x",))
    out = functx.reshard(x, NamedSharding(mesh, P("x")))
    np.testing.assert_array_equal(np.asarray(out), x)
    for ours, theirs in [
        (lambda: functx.reshard(x, P("x")), lambda: jax.reshard(x, jax.P("x"))),
        (lambda: functx.reshard(x, None), lambda: jax.reshard(x, None)),
    ]:
        with pytest.raises(ValueError):
            theirs()
        with pytest.raises(ValueError):
            ours()
    with functx.set_mesh(mesh):
        assert functx.reshard({"a": x}, P("x"))["a"].shape == (4,)
        with pytest.raises(ValueError):
            functx.reshard(x, P("y"))
    with jax.set_mesh(jmesh):
        jax.reshard({"a": x}, jax.P("x"))


def test_auto_and_explicit_axes():
    x = np.arange(4.0, dtype=np.float32)
    mesh = functx.make_mesh((1,), ("x",))
    assert fs.auto_axes(lambda v: v * 2, out_sharding=P("x"))(x).shape == (4,)  # (no mesh: f)
    with functx.set_mesh(mesh):
        seen = []
        f = fs.auto_axes(
            lambda v: (seen.append(fs.get_abstract_mesh()), v * 2)[1], out_sharding=P("x")
        )
        np.testing.assert_array_equal(np.asarray(f(x)), 2 * x)
        assert seen[0].axis_types == (fs.AxisType.Auto,)
        g = fs.explicit_axes(axes="x", in_sharding=(P("x"),))(lambda v: v + 1)
        np.testing.assert_array_equal(np.asarray(g(x)), x + 1)
        with pytest.raises(TypeError):
            fs.auto_axes(lambda v: v)(x)
        with pytest.raises(ValueError):
            fs.auto_axes(lambda v: v, out_sharding=P("nope"))(x)


def test_smap():
    x = np.arange(8.0, dtype=np.float32).reshape(2, 4)
    with functx.set_mesh(functx.make_mesh((1,), ("x",))):
        f = functx.smap(lambda a: a.sum(0, keepdims=True), in_axes=1, out_axes=1, axis_name="x")
        np.testing.assert_array_equal(np.asarray(f(x)), x.sum(0, keepdims=True))
        g = functx.smap(in_axes=(0, None), out_axes=0, axis_name="x")(lambda a, b: a * b)
        np.testing.assert_array_equal(np.asarray(g(x, 2.0)), 2 * x)
    with pytest.raises(TypeError):
        functx.smap(lambda a: a, in_axes=0, out_axes=0, axis_name=("x",))
    with pytest.raises(TypeError):
        functx.smap(lambda a: a, in_axes=0, out_axes="0", axis_name="x")
    with pytest.raises(ValueError):  # no mesh in context
        functx.smap(lambda a: a, in_axes=0, out_axes=0, axis_name="x")(x)
