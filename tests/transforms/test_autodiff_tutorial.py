"""tutorials/autodiff.py runs, checks itself against JAX and finite differences, and prints its
gradient Jaxpr and summary."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "tutorials" / "autodiff.py"


def test_autodiff_tutorial_runs(tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("JAX_PLATFORMS", "cpu")
    proc = subprocess.run([sys.executable, str(TUTORIAL)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "{ lambda ; a:f32[]. let b:f32[] = cos a; c:f32[] = mul 2.0:f32[] b in (c,) }" in out
    assert "dot_general" in out and "reduce_sum" in out  # the model's gradient Jaxpr is shown
    assert "match JAX" in out
    assert "autodiff tutorial: all 5 checks passed" in out
