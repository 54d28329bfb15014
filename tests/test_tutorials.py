"""The tutorials (tutorials/0N_*.py) run as scripts and print what their prose says: checks
against JAX and references, compiled (jit) results, generated kernels, timings with the machine
named. Each runs once per session through conftest's ``tutorial_output`` fixture (a fresh
process). tests/test_mamba_tutorial.py checks tutorial 04; one tutorial is also executed as a
notebook (jupytext + nbclient), the way the docs build runs them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py"))


def test_numbered_tutorials():
    assert [p.name[:3] for p in TUTORIALS] == [f"{i:02d}_" for i in range(1, len(TUTORIALS) + 1)]
    readme = (ROOT / "tutorials" / "README.md").read_text()
    for p in TUTORIALS:
        assert f"`{p.name}`" in readme, p.name
        text = p.read_text()
        assert text.startswith("# %% [markdown]\n# # "), p.name  # a title cell first
        assert f"python tutorials/{p.name}" in text, p.name  # says how to run it


def test_01_tracing_and_jaxprs(tutorial_output):
    out = tutorial_output("01_tracing_and_jaxprs.py")
    assert "{ lambda ; a:f32[8,32] b:f32[32] c:f32[32]. let" in out
    assert "eager vs NumPy float64" in out and "eager vs JAX" in out
    assert "jit vs eager" in out and "# kernels" in out
    assert "kernel 0: reduce" in out and "// kernel 0:" in out and "omp simd" in out
    assert re.search(r"functx\.jit +[\d.]+ us", out) and re.search(r"\d+ CPUs", out)
    assert "row 3 matches the eager gradient" in out
    assert "tutorial 01: all checks passed" in out


def test_02_autodiff(tutorial_output):
    out = tutorial_output("02_autodiff.py")
    assert "{ lambda ; a:f32[]. let b:f32[] = cos a; c:f32[] = mul 2.0:f32[] b in (c,) }" in out
    assert "dot_general" in out and "reduce_sum" in out  # the model's gradient Jaxpr is shown
    assert "grad, jacrev and hessian match JAX" in out
    assert "jit(value_and_grad(loss)) matches the eager loss and gradient" in out
    assert re.search(r"jit\(value_and_grad\) [\d.]+ us \(\d+ CPUs", out), out
    assert "tutorial 02: all 6 checks passed" in out


def test_03_per_sample_gradients(tutorial_output):
    out = tutorial_output("03_per_sample_gradients.py")
    assert "matches the per-example loop" in out
    assert "matches jax.jit(jax.vmap(jax.grad(loss)))" in out
    assert "compiled per-example gradients match the eager ones" in out
    assert "compiled per-example gradients match jax.jit's" in out
    assert re.search(r"kernel \d+: dot ", out), out
    assert re.search(r"machine: .*\d+ CPUs", out), out
    assert re.search(r"functx takes [\d.]+x JAX's time", out), out
    assert "tutorial 03: all checks passed" in out


def test_01_as_a_notebook(tmp_path, monkeypatch):
    """jupytext reads the script as a notebook and nbclient executes it cell by cell."""
    jupytext = pytest.importorskip("jupytext")
    nbclient = pytest.importorskip("nbclient")
    nb = jupytext.read(ROOT / "tutorials" / "01_tracing_and_jaxprs.py")
    assert sum(c.cell_type == "markdown" for c in nb.cells) >= 5
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    monkeypatch.setenv("PYTHONPATH", path)  # the kernel imports this checkout's functx
    monkeypatch.setenv("JAX_PLATFORMS", os.environ.get("JAX_PLATFORMS", "cpu"))
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    text = "".join(o.get("text", "") for o in outputs)
    assert "tutorial 01: all checks passed" in text, text[-2000:]
