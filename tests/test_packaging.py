"""The project's front door: README.md, the demo, the tutorials, pyproject.toml and .ci/run.

These keep the documentation honest: the README's example runs and prints what the README says,
its two set-up commands are single shell lines, and the test command is exactly what CI runs.
"""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CI = ROOT / ".ci" / "run"
SHELL_LANGS = {"bash", "sh", "shell", "console"}
# The files this test lints: the front door (the rest of the tree is linted by its owners).
# Everything we write is linted and formatted: `ruff check` and `ruff format --check` over these.
LINTED = ["functx", "tests", "benchmarks", "tutorials"]

try:
    import tomllib
except ImportError:  # Python 3.10
    try:
        import tomli as tomllib
    except ImportError:
        tomllib = None


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of every fenced code block of a Markdown text."""
    return [
        (m.group(1).strip().lower(), m.group(2))
        for m in re.finditer(r"^```([^\n`]*)\n(.*?)^```\s*$", text, re.S | re.M)
    ]


def shell_commands() -> list[str]:
    blocks = [body for lang, body in fenced_blocks(README.read_text()) if lang in SHELL_LANGS]
    return [body.strip() for body in blocks]


def run_python(args, timeout=300, cwd=ROOT):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("JAX_PLATFORMS", "cpu")
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def check_ran(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 0, (
        f"exit status {proc.returncode}\n--- stdout ---\n{proc.stdout[-4000:]}\n"
        f"--- stderr ---\n{proc.stderr[-4000:]}"
    )
    return proc.stdout


# --- README ----------------------------------------------------------------------------------
def test_readme_has_exactly_two_single_line_commands():
    commands = shell_commands()
    assert len(commands) == 2, f"README.md must have exactly two shell blocks, has {commands}"
    for cmd in commands:
        assert "\n" not in cmd, f"each set-up command must be one line: {cmd!r}"
        assert not cmd.startswith("$"), f"no prompt in the command: {cmd!r}"
    install_demo, install_test = commands
    assert "pip install" in install_demo and "functx.demo" in install_demo
    assert "pip install" in install_test and ".[test]" in install_test
    assert "pytest" in install_test


def test_readme_test_command_is_what_ci_runs():
    test_command = shell_commands()[1]
    ci_lines = [line.strip() for line in CI.read_text().splitlines()]
    assert test_command in ci_lines, (
        f".ci/run must run the README's test command verbatim, as a line: {test_command!r}"
    )


def test_readme_example_runs_and_prints_what_it_says(tmp_path):
    blocks = fenced_blocks(README.read_text())
    examples = [body for lang, body in blocks if lang in ("python", "py")]
    assert examples, "README.md has no python example"
    for i, code in enumerate(examples):
        script = tmp_path / f"readme_example_{i}.py"
        script.write_text(code)
        out = check_ran(run_python([str(script)], timeout=120, cwd=tmp_path))
        # The README shows the output after the example: its first line must be real output.
        at = [body for _, body in blocks].index(code)
        if at + 1 < len(blocks) and blocks[at + 1][0] == "text":
            first_line = blocks[at + 1][1].strip().splitlines()[0]
            assert first_line in out, f"README says the example prints {first_line!r}; got\n{out}"


# --- demo and tutorials ----------------------------------------------------------------------
def test_demo_runs():
    out = check_ran(run_python(["-m", "functx.demo"], timeout=300))
    assert "{ lambda ;" in out, out
    assert re.search(r"functx demo: all \d+ checks passed", out), out
    assert "ConcretizationError" in out, out


TUTORIALS = sorted((ROOT / "tutorials").glob("*.py"))


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.name for p in TUTORIALS])
def test_tutorial_runs(path, tutorial_output):
    tutorial_output(path.name)


# --- CI script ---------------------------------------------------------------------------------
def test_ci_script_is_strict_bash():
    text = CI.read_text()
    assert text.startswith("#!/usr/bin/env bash\n") or text.startswith("#!/bin/bash\n")
    assert "set -euo pipefail" in text
    subprocess.run(["bash", "-n", str(CI)], check=True)


# --- pyproject.toml ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def pyproject():
    if tomllib is None:
        pytest.skip("needs tomllib (Python 3.11+) or tomli")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def _names(reqs):
    return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower().replace("_", "-") for r in reqs}


def test_pyproject_metadata(pyproject):
    import functx

    project = pyproject["project"]
    assert project["name"] == "functx"
    assert project["version"] == functx.__version__
    assert project["requires-python"] == ">=3.10"
    assert {"numpy", "optree", "sympy", "ml-dtypes"} <= _names(project["dependencies"])
    extras = project["optional-dependencies"]
    assert {"pytest", "hypothesis", "jax", "jaxlib", "torch", "ruff"} <= _names(extras["test"])
    assert {"triton", "torch"} <= _names(extras["gpu"])
    # Any torch spec other than this exact pin pulls GBs of CUDA packages on a CPU machine.
    for extra in extras.values():
        torch_specs = [r for r in extra if _names([r]) == {"torch"}]
        assert all(r.replace(" ", "") == "torch==2.13.0" for r in torch_specs), torch_specs
    assert pyproject["tool"]["ruff"]["line-length"] == 100
    assert pyproject["tool"]["pytest"]["ini_options"]["testpaths"] == ["tests"]


def test_every_package_directory_is_packaged():
    """setuptools packages only directories with an __init__.py; others drop out of wheels."""
    for d in (ROOT / "functx").rglob("*"):
        if d.is_dir() and d.name != "__pycache__" and any(d.glob("*.py")):
            assert (d / "__init__.py").exists(), f"{d.relative_to(ROOT)} has no __init__.py"


@pytest.mark.parametrize(
    "name", ["functx", "functx.numpy", "functx.lax", "functx.nn", "functx.tree_util"]
)
def test_public_names_resolve(name):
    module = importlib.import_module(name)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what it does not define: {missing}"


# --- lint ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["check"], ["format", "--check"]])
def test_the_code_passes_ruff(command):
    pytest.importorskip("ruff")
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", *command, *LINTED],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
