"""functx.shard_map over 2 and 4 gloo processes on this machine, started once with
``python -m functx.distributed --nproc 4`` (torch's launcher; the 2-process meshes are made of
processes 0 and 1 while 2 and 3 wait: one launch, to keep the suite's time), against the
single-process run of the same programs (tests/test_sharding.py's ``cases``, which that file
checks against JAX's shard_map): collectives over one and two mesh axes, gradients taken inside
the body through ``psum``/``pmean``, ``jit`` of a shard_map-ped function; ``grad``/``vjp``/``jvp``
of a shard_map-ped function across processes (``AD``); ``pmap`` over processes, each passing its
own block (``pmap_case``); and the Triton path of the collectives (``TRITON_INTERPRET=1``: a
jitted ``pmean`` of a pytree of two dtypes, one ``all_reduce`` per dtype: of the operands'
concatenation, or in place of the pack the program computed them into).

Run as a script (by the launcher), this file is the per-process program: every process runs the
cases of the meshes it belongs to and process 0 writes the results to the path given (each of
processes 0 and 1 its pmap results too). ``python tests/test_distributed.py --check-gpu`` runs
the same checks over NCCL on 4 GPUs."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
HOST4 = "--xla_force_host_platform_device_count=4"

# per mesh size: (cases run jitted, cases run with functx.disable_jit(): eager, each collective a
# handler call); every process creates the torch groups of the smaller meshes first.
PLAN = {
    2: (["jit_psum"], ["data_parallel"]),
    4: ([], ["mesh2d", "ring", "data_parallel_4"]),
}
NPROC = 4
# autodiff of shard_map-ped functions: (case, mesh) run over processes after PLAN's cases
AD = {2: ["grad_global"], 4: ["vjp_jvp_2d"]}


def _ts():
    sys.path.insert(0, HERE)
    import test_sharding as ts

    return ts


def grad_global(M, mesh):
    """value_and_grad (w.r.t. the replicated weights and the split data) of a shard_map-ped
    data-parallel loss, eagerly, jitted, and the data gradient under vmap."""
    P_, lax, jnp_ = M.sharding.PartitionSpec, M.lax, M.numpy
    A = _ts()._inputs()

    def body(w, X, y):
        return lax.pmean(jnp_.mean((X @ w - y) ** 2), "x")

    f = M.shard_map(body, mesh=mesh, in_specs=(P_(), P_("x"), P_("x")), out_specs=P_())
    vg = M.value_and_grad(f, argnums=(0, 1))
    Xs = np.stack([A["X"], np.cos(A["X"])])  # (and vmap of the gradient over two data sets)
    gXs = M.vmap(M.grad(f, argnums=1), in_axes=(None, 0, None))(A["w3"], Xs, A["y"])
    return vg(A["w3"], A["X"], A["y"]), M.jit(vg)(A["w3"], A["X"], A["y"]), gXs


def vjp_jvp_2d(M, mesh):
    """vjp and jvp of a shard_map-ped function on a 2x2 mesh: an output split over x and
    replicated over y (its cotangent is shared by the y devices), a replicated one, and one
    split over both through a ppermute."""
    P_, lax, jnp_ = M.sharding.PartitionSpec, M.lax, M.numpy
    A = _ts()._inputs()

    def body(a, w):  # a: a (2, 3) block of (4, 6); w: a (3, 4) block of (6, 4)
        h = lax.psum(a @ w, "y")
        s = lax.psum(jnp_.sin(a).sum(), ("x", "y"))
        r = lax.ppermute(a, "x", [(0, 1), (1, 0)]) * (2.0 + lax.axis_index("y"))
        return h, s, r

    f = M.shard_map(
        body, mesh=mesh, in_specs=(P_("x", "y"), P_("y")), out_specs=(P_("x"), P_(), P_("x", "y"))
    )
    a, w = A["a46"].astype(np.float64), A["w64"].astype(np.float64)
    out, pull = M.vjp(f, a, w)
    cts = (A["a86"][:4, :4].astype(np.float64), np.float64(0.5), np.cos(a))
    _, tangents = M.jvp(f, (a, w), (np.sin(a), np.cos(w)))
    return out, pull(cts), tangents


def run_ad(M, devices, names):
    ts = _ts()
    mesh = {"grad_global": "x2", "vjp_jvp_2d": "x2y2"}
    return {
        n: [
            np.asarray(v)
            for v in M.tree_util.tree_leaves(globals()[n](M, ts.make(M, devices, mesh[n])))
        ]
        for n in names
    }


def pmap_case(M, xs, devices=None):
    """pmap with collectives, in_axes/out_axes pytrees, grad through it and jit of it. In one
    process ``xs`` stacks both examples; over processes each passes its own (leading size 1)."""
    lax = M.lax

    def step(v, w):
        return {"c": (v - lax.pmean(v, "i")) * w, "s": lax.psum((v * v).sum(), "i")}

    f = M.pmap(step, "i", in_axes=(0, None), out_axes={"c": 1, "s": None}, devices=devices)
    w = 1.5
    out = f(xs, w)
    gx, gw = M.grad(lambda xs, w: (f(xs, w)["c"] ** 3).sum(), argnums=(0, 1))(xs, w)
    return [out["c"], out["s"], gx, gw, M.jit(f)(xs, w)["c"]]


def _pmap_inputs():
    return np.random.default_rng(1).standard_normal((2, 2, 3))


def pmean_tree(M, mesh, gpu=None):
    """pmean of a pytree of 3 leaves of two dtypes (float32, float64) over x; with ``gpu``: jitted
    on the Triton backend, the leaves on that device."""
    P_ = M.sharding.PartitionSpec
    r = np.random.default_rng(2)
    tree = {
        "a": r.standard_normal((4, 3)).astype(np.float32),
        "b": r.standard_normal(4),
        "c": r.standard_normal((2, 2)).astype(np.float32),
    }
    f = M.shard_map(lambda t: M.lax.pmean(t, "x"), mesh=mesh, in_specs=P_("x"), out_specs=P_())
    if gpu is not None:
        f = M.jit(f, backend="triton")
        tree = M.device_put(tree, gpu)
    return [np.asarray(v) for v in M.tree_util.tree_leaves(f(tree))]


def jit_psum(M, mesh):
    """``jit`` of a shard_map-ped function (over processes: a host step that runs the shard_map)."""
    P_ = M.sharding.PartitionSpec
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    f = M.shard_map(lambda a: M.lax.psum(a * a, "x"), mesh=mesh, in_specs=P_("x"), out_specs=P_())
    return M.jit(lambda a: f(a) + 1)(x)


def overlap_step(M, mesh):
    """A data-parallel step of a small tanh MLP whose gradients are summed with one ``psum``
    (the pytree of 4 gradients): ``(step, arguments)``. Over processes, ``jit`` of it compiles
    a program that starts each bucket's reduction right after the backward pass produces it
    (``functx.control.collectives._psum_lowering``)."""
    P_, lax, jnp_ = M.sharding.PartitionSpec, M.lax, M.numpy
    r = np.random.default_rng(3)
    params = {
        "w1": r.standard_normal((3, 8)),
        "b1": r.standard_normal(8),
        "w2": r.standard_normal((8, 2)),
        "b2": r.standard_normal(2),
    }
    X, y = r.standard_normal((8, 3)), r.standard_normal((8, 2))

    def loss(p, X, y):
        h = jnp_.tanh(X @ p["w1"] + p["b1"])
        return jnp_.mean((h @ p["w2"] + p["b2"] - y) ** 2)

    def body(p, X, y):
        g = lax.psum(M.grad(loss)(p, X, y), "x")
        return M.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g)

    f = M.shard_map(body, mesh=mesh, in_specs=(P_(), P_("x"), P_("x")), out_specs=P_())
    return f, (params, X, y)


def overlap_schedule(text):
    """From a program's ``as_text()``: the kernel indices of its psum starts, psum dones and
    matrix products (the loop IR's lines, in program order)."""
    ir = text[text.index("# loop IR") : text.index("# kernels")]
    found = {"psum start": [], "psum done": [], "dot": []}
    for line in ir.splitlines():
        if "# kernel " not in line:
            continue
        k = int(line.rsplit("# kernel ", 1)[1])
        for what in ("psum start", "psum done"):
            if f"<{what} " in line:
                found[what].append(k)
        if " = dot(" in line:
            found["dot"].append(k)
    return found


def run(M, devices, names):
    """The results of ``names`` (cases of tests/test_sharding.py, or ``jit_psum``)."""
    ts = _ts()

    out = ts.run_cases(M, devices, [n for n in names if n != "jit_psum"])
    if "jit_psum" in names:
        out["jit_psum"] = [np.asarray(jit_psum(M, ts.make(M, devices, "x2")))]
    return out


def _main(path, platform):
    import torch.distributed as dist

    import functx
    from functx import sharding

    functx.config.update("jax_enable_x64", True)  # the suite's mode (tests/conftest.py)
    functx.distributed.initialize(platform=platform)
    me = functx.process_index()
    functx.distributed.make_groups([(0, 1)])
    res = {}
    for n, (jitted, eager) in PLAN.items():
        if me < n:
            devices = sharding.mesh_devices()[:n]
            res.update(run(functx, devices, jitted))
            with functx.disable_jit():
                res.update(run(functx, devices, eager))
        dist.barrier()
    if me < 2:  # each gradient its own bucket: 4 reductions started during the backward pass
        os.environ["FUNCTX_PSUM_BUCKET_BYTES"] = "1"
        f, args = overlap_step(functx, sharding.Mesh(np.array(functx.devices()[:2]), ("x",)))
        # the Triton program (this CPU: the interpreter, gloo, no compiler run; a GPU: NCCL, and
        # its third call replays a CUDA graph), three calls; the C++ program without Triton
        if platform == "gpu" or importlib.util.find_spec("triton") is not None:
            gpu = functx.devices("gpu")[0] if platform == "cpu" else functx.local_devices()[0]
            step, args = functx.jit(f, backend="triton"), functx.device_put(args, gpu)
        else:
            step = functx.jit(f)
        runs = [[np.asarray(v) for v in functx.tree_util.tree_leaves(step(*args))] for _ in "abc"]
        for leaves in runs[1:]:
            for a, b in zip(leaves, runs[0], strict=True):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
        res["overlap"] = runs[0]
        text = step.lower(*args).as_text()
        found = overlap_schedule(text)
        del os.environ["FUNCTX_PSUM_BUCKET_BYTES"]
        res["overlap_schedule"] = [np.array(found[k], np.int64) for k in sorted(found)]
        # (Triton: the gradients computed into packs, reduced in place; C++: none)
        res["overlap_packs"] = [np.array([text.count("._fx_pack = True")], np.int64)]
    dist.barrier()
    for n, names in AD.items():
        if me < n:
            res.update(run_ad(functx, sharding.mesh_devices()[:n], names))
        dist.barrier()
    mine = {}
    if me < 2:
        devs = functx.devices()[:2]
        mine["pmap"] = pmap_case(functx, _pmap_inputs()[me : me + 1], devices=devs)
        if importlib.util.find_spec("triton") is not None:
            calls = []
            all_reduce = dist.all_reduce

            def counted(tensor, *a, **kw):
                calls.append(str(tensor.dtype))
                return all_reduce(tensor, *a, **kw)

            dist.all_reduce = counted
            mesh = sharding.Mesh(np.array(devs), ("x",))
            gpu = functx.devices("gpu")[0] if platform == "cpu" else functx.local_devices()[0]
            res["pmean_triton"] = pmean_tree(functx, mesh, gpu)
            res["all_reduce_calls"] = [np.array(sorted(calls))]
            dist.all_reduce = all_reduce
    dist.barrier()
    _save(f"{path}.{me}", mine)
    if me == 0:
        _save(path, res)
    functx.distributed.shutdown()


def _save(path, res):
    np.savez(path, **{f"{k}/{i}": np.asarray(a) for k, vs in res.items() for i, a in enumerate(vs)})


def _load(path):
    out: dict = {}
    with np.load(path) as z:
        for key in sorted(z.files, key=lambda k: (k.split("/")[0], int(k.split("/")[1]))):
            out.setdefault(key.split("/")[0], []).append(z[key])
    return out


def _close(a, b, what, tol=1e-6):
    assert a.shape == b.shape and a.dtype == b.dtype, (what, a.shape, b.shape, a.dtype, b.dtype)
    np.testing.assert_allclose(b, a, rtol=tol, atol=tol, err_msg=what)


def test_dp_sgd_example_chunked_clipped_sum_matches_whole_batch():
    """examples/dp_sgd_data_parallel.py's ``clipped_grad_sum`` in blocks of ``chunk`` examples (a
    ``lax.scan``; benchmarks/multi_gpu.py's peers take it so) is the whole batch's, for functx
    and JAX; a batch that is not whole blocks is refused."""
    import jax
    import pytest

    import functx

    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
    import dp_sgd_data_parallel as ex

    rng = np.random.default_rng(1)
    params = ex.init_params(rng, (5, 7, 3))
    x, y = ex.make_batch(rng, 12, 5, 3)
    x[:4] *= 50.0  # (gradients clipped in some blocks, not in others)
    want = ex.clipped_grad_sum(functx, params, x, y, 1.0)  # (functx eagerly: no compiler run)
    chunked = jax.jit(lambda p, a, b: ex.clipped_grad_sum(jax, p, a, b, 1.0, chunk=4))
    for got in (ex.clipped_grad_sum(functx, params, x, y, 1.0, chunk=4), chunked(params, x, y)):
        for g, w in zip(jax.tree_util.tree_leaves(got), functx.tree_util.tree_leaves(want)):
            w = np.asarray(w)
            np.testing.assert_allclose(np.asarray(g), w, atol=2e-5 * np.max(np.abs(w)))
    with pytest.raises(ValueError, match="not blocks of chunk=5"):
        ex.clipped_grad_sum(functx, params, x, y, 1.0, chunk=5)


def test_shard_map_over_2_and_4_gloo_processes_matches_one_process(tmp_path, monkeypatch):
    check(str(tmp_path), "cpu", monkeypatch.setenv)


def check(tmp, platform, setenv):
    """Launch the processes (gloo on the CPU, or NCCL on 4 GPUs), then compare their results
    with one process's on the CPU."""
    import functx
    from functx import sharding

    path = os.path.join(tmp, "out.npz")
    root = os.path.dirname(HERE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    env.pop("XLA_FLAGS", None)
    if platform == "cpu":
        env["TRITON_INTERPRET"] = "1"  # (the Triton path on this CPU: torch CPU tensors, gloo)
    cmd = [sys.executable, "-m", "functx.distributed", "--nproc", str(NPROC), __file__, path]
    limit = 300 if platform == "cpu" else 600
    proc = subprocess.run(cmd + [platform], env=env, capture_output=True, text=True, timeout=limit)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    theirs = _load(path)
    setenv("XLA_FLAGS", HOST4)
    tol = 1e-6 if platform == "cpu" else 2e-3  # (float32 products on a GPU may use TF32)
    host = sharding.host_devices()
    ours = {}
    for jitted, eager in PLAN.values():
        ours.update(run(functx, host, jitted + eager))
    for names in AD.values():
        ours.update(run_ad(functx, host, names))
    if importlib.util.find_spec("triton") is not None:
        # one all_reduce per dtype of the 3 leaves, on each of the 2 processes
        calls = theirs.pop("all_reduce_calls")[0]
        want = ["torch.float32", "torch.float64"]
        assert (list(calls) if platform == "cpu" else sorted(set(calls))) == want, calls
        ours["pmean_triton"] = pmean_tree(functx, _ts().make(functx, host, "x2"))
    # the overlapped psum: 4 starts, the first before the backward pass's last matrix product,
    # each done after every start (where the psum stood); then the step's values
    dots, dones, starts = (list(v) for v in theirs.pop("overlap_schedule"))
    assert len(starts) == len(dones) == 4 and min(starts) < max(dots), (starts, dones, dots)
    assert min(dones) > max(starts), (starts, dones)
    # on the Triton path, gradients computed straight into their bucket's buffer (a pack)
    packs = int(theirs.pop("overlap_packs")[0][0])
    assert packs >= (2 if importlib.util.find_spec("triton") is not None else 0), packs
    step, args = overlap_step(functx, _ts().make(functx, host, "x2"))
    ours["overlap"] = [np.asarray(v) for v in functx.tree_util.tree_leaves(step(*args))]
    assert set(ours) == set(theirs)
    for name, leaves in ours.items():
        for i, (a, b) in enumerate(zip(leaves, theirs[name], strict=True)):
            _close(a, b, f"{name}[{i}]", tol)
    # pmap: each process's outputs are its block of the one-process outputs (out_axes: c 1,
    # s None); the gradient w.r.t. its block of xs and w.r.t. the broadcast w (summed)
    c, s, gx, gw, jc = (np.asarray(v) for v in pmap_case(functx, _pmap_inputs()))
    for k in range(2):
        mine = _load(f"{path}.{k}.npz")["pmap"]
        for i, want in enumerate([c[:, k : k + 1], s, gx[k : k + 1], gw, jc[:, k : k + 1]]):
            _close(want, mine[i], f"pmap process {k} [{i}]", tol)


if __name__ == "__main__":
    if sys.argv[1] == "--check-gpu":
        # the same checks over NCCL, one process per GPU (4 GPUs):
        #   python tests/test_distributed.py --check-gpu
        import tempfile

        import functx

        functx.config.update("jax_enable_x64", True)
        check(tempfile.mkdtemp(), "gpu", os.environ.__setitem__)
        print("test_distributed: every check passed over NCCL on 4 GPUs")
    else:
        _main(sys.argv[1], sys.argv[2])
