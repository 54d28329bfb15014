"""functx.shard_map over 2 and 4 gloo processes on this machine, started once with
``python -m functx.distributed --nproc 4`` (torch's launcher; the 2-process meshes are made of
processes 0 and 1 while 2 and 3 wait: one launch, to keep the suite's time), against the
single-process run of
the same programs (tests/test_sharding.py's ``cases``, which that file checks against JAX's
shard_map): collectives over one and two mesh axes, gradients taken inside the body through
``psum``/``pmean``, ``jit`` of a shard_map-ped function, and ``grad`` of one refused.

Run as a script (by the launcher), this file is the per-process program: every process runs the
cases of the meshes it belongs to and process 0 writes the results to the path given."""

from __future__ import annotations

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


def jit_psum(M, mesh):
    """``jit`` of a shard_map-ped function (over processes: a host step that runs the shard_map)."""
    P_ = M.sharding.PartitionSpec
    x = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    f = M.shard_map(lambda a: M.lax.psum(a * a, "x"), mesh=mesh, in_specs=P_("x"), out_specs=P_())
    return M.jit(lambda a: f(a) + 1)(x)


def run(M, devices, names):
    """The results of ``names`` (cases of tests/test_sharding.py, or ``jit_psum``)."""
    sys.path.insert(0, HERE)
    import test_sharding as ts

    out = ts.run_cases(M, devices, [n for n in names if n != "jit_psum"])
    if "jit_psum" in names:
        out["jit_psum"] = [np.asarray(jit_psum(M, ts.make(M, devices, "x2")))]
    return out


def _main(path):
    import torch.distributed as dist

    import functx
    from functx import sharding

    functx.config.update("jax_enable_x64", True)  # the suite's mode (tests/conftest.py)
    functx.distributed.initialize(platform="cpu")
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
    res["grad_refused"] = [np.array(_grad_outside_is_refused(functx))]
    if me == 0:
        np.savez(path, **{f"{k}/{i}": a for k, vs in res.items() for i, a in enumerate(vs)})
    functx.distributed.shutdown()


def _grad_outside_is_refused(functx):
    """grad of a shard_map-ped function over processes raises UnsupportedError (its backward
    pass would not be the global function's)."""
    P_ = functx.sharding.PartitionSpec
    mesh = functx.sharding.Mesh(np.array(functx.devices()), ("x",))
    f = functx.shard_map(lambda a, w: a * w, mesh=mesh, in_specs=(P_("x"), P_()), out_specs=P_("x"))
    try:
        functx.grad(lambda w: (f(np.ones(4), w) ** 2).sum())(2.0)
    except functx.UnsupportedError:
        return True
    return False


def _load(path):
    out: dict = {}
    with np.load(path) as z:
        for key in sorted(z.files, key=lambda k: (k.split("/")[0], int(k.split("/")[1]))):
            out.setdefault(key.split("/")[0], []).append(z[key])
    return out


def test_shard_map_over_2_and_4_gloo_processes_matches_one_process(tmp_path, monkeypatch):
    import functx
    from functx import sharding

    path = str(tmp_path / "out.npz")
    root = os.path.dirname(HERE)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
    env.pop("XLA_FLAGS", None)
    cmd = [sys.executable, "-m", "functx.distributed", "--nproc", str(NPROC), __file__, path]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    theirs = _load(path)
    assert theirs.pop("grad_refused")[0]
    monkeypatch.setenv("XLA_FLAGS", HOST4)
    ours = {}
    for jitted, eager in PLAN.values():
        ours.update(run(functx, sharding.host_devices(), jitted + eager))
    assert set(ours) == set(theirs)
    for name, leaves in ours.items():
        for i, (a, b) in enumerate(zip(leaves, theirs[name], strict=True)):
            assert a.shape == b.shape and a.dtype == b.dtype, (name, i)
            np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-6, err_msg=f"{name}[{i}]")


if __name__ == "__main__":
    _main(sys.argv[1])
