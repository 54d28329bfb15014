"""functx.experimental.multihost_utils in one process against jax.experimental.multihost_utils
(tests/test_distributed.py runs functx over processes)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from jax.experimental import multihost_utils as jmh

import functx.numpy as fnp
from functx.experimental import multihost_utils as mh

TREE = {"a": np.arange(3.0, dtype=np.float32), "b": np.float32(2.0), "c": np.int32([1, 2])}


@pytest.mark.parametrize("tiled", [False, True])
def test_process_allgather_like_jax(tiled):
    ours, theirs = mh.process_allgather(TREE, tiled=tiled), jmh.process_allgather(TREE, tiled=tiled)
    for k in TREE:
        assert isinstance(ours[k], np.ndarray)
        assert ours[k].shape == theirs[k].shape and ours[k].dtype == theirs[k].dtype, k
        np.testing.assert_array_equal(ours[k], theirs[k])
    assert mh.process_allgather(fnp.ones((2, 3)), tiled=False).shape == (1, 2, 3)


def test_broadcast_sync_assert():
    ours, theirs = mh.broadcast_one_to_all(TREE), jmh.broadcast_one_to_all(TREE)
    for k in TREE:
        assert isinstance(ours[k], np.ndarray) and ours[k].dtype == theirs[k].dtype
        np.testing.assert_array_equal(ours[k], theirs[k])
    assert mh.sync_global_devices("step") is None
    mh.assert_equal(TREE, "differ")


_TWO_PROCESSES = """
import numpy as np, functx
functx.distributed.initialize()
from functx.experimental import multihost_utils as mh
r = functx.process_index()
g = mh.process_allgather({"a": np.float32([r, r + 10])})["a"].tolist()
t = mh.process_allgather(np.float32([r]), tiled=True).tolist()
b = mh.broadcast_one_to_all(np.float32([r + 5])).tolist()
b1 = mh.broadcast_one_to_all(np.float32([r + 7]), is_source=(r == 1)).tolist()
mh.sync_global_devices("step")
try:
    mh.assert_equal(np.float32([r]))
    differ = "equal"
except AssertionError:
    differ = "raised"
print("RESULT", r, g, t, b, b1, differ, flush=True)
functx.distributed.shutdown()
"""


@pytest.mark.skipif(
    not os.environ.get("FUNCTX_SLOW_TESTS"),
    reason="launches 2 processes (~35 s on 2 loaded cores); set FUNCTX_SLOW_TESTS=1",
)
def test_over_two_gloo_processes(tmp_path):

    script = tmp_path / "two.py"
    script.write_text(_TWO_PROCESSES)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = dict(os.environ, PYTHONPATH=root)
    env.pop("XLA_FLAGS", None)
    cmd = [sys.executable, "-m", "functx.distributed", "--nproc", "2", str(script)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    lines = sorted(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT"))
    for r, line in enumerate(lines):
        want = f"RESULT {r} [[0.0, 10.0], [1.0, 11.0]] [0.0, 1.0] [5.0] [8.0] raised"
        assert line == want, line
    assert len(lines) == 2
