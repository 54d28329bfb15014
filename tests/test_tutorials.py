"""The tutorials (tutorials/0N_*.py), checked without running them.

The docs build executes them (mkdocs-jupyter in tests/test_docs_site.py: a raising cell fails the
build, and each page must hold its tutorial's last line, ``NN tutorial: all checks passed``,
printed after the tutorial's own checks), so they run once in CI. Here: the seven are numbered,
listed in tutorials/README.md, read as notebooks by jupytext (a title cell first, every code
cell valid Python), say how to run them, and use nothing a notebook kernel lacks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py"))
NAMES = [
    "01_tracing_and_jaxprs.py",
    "02_autodiff.py",
    "03_per_sample_gradients.py",
    "04_mamba_selective_scan.py",
    "05_inspecting_compiled_code.py",
    "06_gpu.py",
    "07_porting_from_jax.py",
]


def test_the_seven_tutorials_are_listed():
    assert [p.name for p in TUTORIALS] == NAMES
    assert sorted(p.name for p in (ROOT / "tutorials").glob("*.py")) == NAMES  # no stray script
    readme = (ROOT / "tutorials" / "README.md").read_text()
    for name in NAMES:
        assert f"`{name}`" in readme, name


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.name for p in TUTORIALS])
def test_tutorial_reads_as_a_notebook(path):
    jupytext = pytest.importorskip("jupytext")
    text = path.read_text()
    nb = jupytext.reads(text, fmt="py:percent")
    kinds = [c.cell_type for c in nb.cells]
    title = nb.cells[0].source.splitlines()[0]
    assert kinds[0] == "markdown" and title.startswith("# "), path.name  # a title cell first
    assert "`" not in title, title  # plain text: the site's navigation shows it whole
    assert kinds.count("markdown") >= 5 and kinds.count("code") >= 5, kinds
    for cell in nb.cells:
        if cell.cell_type == "code":
            ast.parse(cell.source)  # each cell is valid Python on its own
    assert f"python tutorials/{path.name}" in text  # says how to run it
    # a notebook kernel has no __file__, and a `__main__` guard would skip code there
    assert "__file__" not in text and "__main__" not in text
    last = [c for c in nb.cells if c.cell_type == "code"][-1].source
    assert f"{path.name[:2]} tutorial: all checks passed" in last.splitlines()[-1], path.name
