"""The project's front door: README.md, the demo, pyproject.toml and .ci/run.

These keep the documentation honest: the README's examples run and print exactly what the README
shows (and what JAX prints for the same programs), its two set-up commands are single shell lines,
and the test command is exactly what CI runs. (The tutorials run in the docs site's strict build:
tests/test_docs_site.py.)
"""

from __future__ import annotations

import importlib
import importlib.util
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
    assert "pip install" in install_test and '".[test,docs]"' in install_test
    assert "pytest" in install_test


def test_readme_says_how_to_read_and_check_the_docs(pyproject):
    text = README.read_text()
    assert "## Documentation" in text
    assert "`mkdocs serve`" in text and "`mkdocs build --strict`" in text
    assert "docs" in pyproject["project"]["optional-dependencies"]
    assert (ROOT / "mkdocs.yml").exists()


def test_readme_test_command_is_what_ci_runs():
    test_command = shell_commands()[1]
    ci_lines = [line.strip() for line in CI.read_text().splitlines()]
    assert test_command in ci_lines, (
        f".ci/run must run the README's test command verbatim, as a line: {test_command!r}"
    )


def readme_examples() -> list[tuple[str, str]]:
    """(code, output) of every python example of the README: each is followed by a text block
    holding everything it prints."""
    blocks = fenced_blocks(README.read_text())
    examples = []
    for at, (lang, code) in enumerate(blocks):
        if lang in ("python", "py"):
            following = blocks[at + 1] if at + 1 < len(blocks) else ("", "")
            assert following[0] == "text", (
                f"README.md: the python example {code[:60]!r}... must be followed by a text "
                "block with its whole output"
            )
            examples.append((code, following[1]))
    assert examples, "README.md has no python example"
    return examples


def _run_example(code: str, path: Path) -> str:
    path.write_text(code)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TRITON_INTERPRET", "FUNCTX_DEFAULT_DEVICE", "JAX_ENABLE_X64")
    }
    # The README shows what a machine without a GPU prints.
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["JAX_PLATFORMS"] = "cpu"
    proc = subprocess.run(
        [sys.executable, str(path)],
        cwd=path.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return check_ran(proc)


def _without_jaxprs(text: str) -> str:
    return re.sub(r"^\{ lambda .*?^\s+in .*?\}\n", "<jaxpr>\n", text, flags=re.S | re.M)


def test_readme_examples_print_exactly_what_they_say(tmp_path):
    """Each python example of the README prints exactly its text block (whole), and the same
    programs with JAX's imports print the same values (the Jaxprs aside: JAX prints a few more
    parameters). JAX runs all the examples in one process, each as a function of its own."""
    examples = readme_examples()
    outs = []
    for i, (code, shown) in enumerate(examples):
        out = _run_example(code, tmp_path / f"example_{i}.py")
        assert out == shown, f"README.md shows\n{shown}\nbut example {i} prints\n{out}"
        outs.append(out)
    if importlib.util.find_spec("jax") is None:  # pragma: no cover - jax is a test dependency
        return
    marker = "----- next README example -----"
    program = []
    for i, (code, _) in enumerate(examples):
        jax_code = code.replace("import functx as jax", "import jax").replace(
            "import functx.numpy as jnp", "import jax.numpy as jnp"
        )
        assert "functx" not in jax_code.replace("# port JAX code", ""), jax_code
        program += [f"def example_{i}():", *("    " + line for line in jax_code.splitlines())]
        program += [f"example_{i}()", f"print({marker!r})"]
    jax_outs = _run_example("\n".join(program) + "\n", tmp_path / "jax_examples.py")
    jax_outs = jax_outs.split(marker + "\n")[: len(examples)]
    for i, (jax_out, out) in enumerate(zip(jax_outs, outs)):
        assert _without_jaxprs(jax_out) == _without_jaxprs(out), (i, jax_out, out)


# --- demo -----------------------------------------------------------------------------------------
def test_demo_runs():
    out = check_ran(run_python(["-m", "functx.demo"], timeout=300))
    assert "{ lambda ;" in out, out
    assert re.search(r"functx demo: all \d+ checks passed", out), out
    assert "ConcretizationError" in out, out


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
    assert {"numpy", "optree", "mpmath", "ml-dtypes"} <= _names(project["dependencies"])
    extras = project["optional-dependencies"]
    assert {"pytest", "hypothesis", "jax", "jaxlib", "torch", "ruff", "sympy"} <= _names(
        extras["test"]
    )
    assert {"triton", "torch"} <= _names(extras["gpu"])
    # Any torch spec other than this exact pin pulls GBs of CUDA packages on a CPU machine.
    for extra in extras.values():
        torch_specs = [r for r in extra if _names([r]) == {"torch"}]
        assert all(r.replace(" ", "") == "torch==2.13.0" for r in torch_specs), torch_specs
    assert pyproject["tool"]["ruff"]["line-length"] == 100
    assert pyproject["tool"]["pytest"]["ini_options"]["testpaths"] == ["tests"]


def test_functx_warnings_are_errors_in_the_tests(pyproject):
    """Every warning class functx defines is turned into an error by pytest's filterwarnings, so
    that a new warning fails the test that triggers it (tests that expect one use pytest.warns)."""
    import ast

    defined = set()
    for path in (ROOT / "functx").rglob("*.py"):
        text = path.read_text()
        if "Warning)" not in text and "Warning," not in text:
            continue  # no class with a warning base (parse only the few that may have one)
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and any(
                (isinstance(b, ast.Name) and b.id.endswith("Warning"))
                or (isinstance(b, ast.Attribute) and b.attr.endswith("Warning"))
                for b in node.bases
            ):
                module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
                defined.add(f"{module}.{node.name}")
    assert "functx.errors.CacheWarning" in defined, defined
    filters = pyproject["tool"]["pytest"]["ini_options"]["filterwarnings"]
    errors = {f.split(":")[2] for f in filters if f.startswith("error::")}
    assert defined <= errors, f"warning classes not turned into errors: {defined - errors}"
    for name in errors:
        module, _, attr = name.rpartition(".")
        assert issubclass(getattr(importlib.import_module(module), attr), Warning), name


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


def test_every_module_imports_and_runs_without_docstrings(tmp_path):
    """``python -OO`` drops docstrings: the modules that build theirs from templates must still
    import (``numpy.fft``'s shared paragraph raised AttributeError on None), and a program still
    compiles and runs."""
    code = (
        "import importlib, importlib.util, pkgutil, functx\n"
        "import functx.numpy as jnp\n"
        "for m in pkgutil.walk_packages(functx.__path__, 'functx.'):\n"
        "    spec = importlib.util.find_spec(m.name)\n"
        "    if not spec.origin.endswith('.py'):  # (the compiled libraries beside the code)\n"
        "        continue\n"
        "    try:\n"
        "        importlib.import_module(m.name)\n"
        "    except ModuleNotFoundError as e:  # (an optional dependency: torch, triton)\n"
        "        assert not (e.name or '').startswith('functx'), e\n"
        "f = functx.jit(functx.grad(lambda x: jnp.fft.rfft(x).real.sum()))\n"
        "print(f(jnp.arange(4.0)).tolist())\n"
    )
    proc = run_python(["-OO", "-c", code])
    assert check_ran(proc).strip().splitlines()[-1] == "[3.0, 0.0, 1.0, 0.0]"
