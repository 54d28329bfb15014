"""The client suite: small JAX programs of the kinds researchers write, each run twice in this
process, once with JAX and once with functx, and compared.

Each program in ``programs/`` is plain JAX code (``import jax``, ``from jax import random``...)
with a ``main()`` that returns a pytree of results. The functx run executes the same source with
only its import lines rewritten (``import jax`` -> ``import functx as jax`` and so on); JAX's
``jax.example_libraries`` modules a program imports are the installed JAX's own source files,
loaded with the same rewrite. Nothing else changes: data are synthetic and step counts small,
which each program states in its docstring.

A program whose JAX run is mostly XLA compiles of single eager operations (one each, with
``JAX_REFERENCE_UNDER_JIT = True``) has its JAX reference computed as ``jax.jit(main)()``: one
compile (XLA's costly LLVM passes off), the same values up to rounding, the same dtypes and
bits (JAX's jit and eager agree); the functx run stays the program as written, eager.

The comparison: the same tree structure, the same dtype for every leaf, integer and boolean
leaves (random bits, argmaxes, counts) equal, floating leaves equal to the program's ``RTOL`` /
``ATOL``. Each run starts with ``jax_enable_x64`` off in both libraries (their default; a program
that wants float64 turns it on in its first lines, as scientific scripts do), and the suite's
setting is restored afterwards.
"""

from __future__ import annotations

import pathlib
import re
import sys
import types

import jax
import numpy as np
import pytest

import functx

PROGRAMS = pathlib.Path(__file__).parent / "programs"
JAX_DIR = pathlib.Path(jax.__file__).parent
FAKE_LIBS = "functx_clients_example_libraries"

# Import lines of a JAX program and their functx spelling, tried in order on each line.
_SWAPS = (
    (re.compile(r"^(\s*)import jax(\s*#.*)?$"), r"\1import functx as jax\2"),
    (re.compile(r"^(\s*)import jax\.([\w.]+) as (\w+)(\s*#.*)?$"), r"\1import functx.\2 as \3\4"),
    (re.compile(r"^(\s*)from jax\.example_libraries import "), rf"\1from {FAKE_LIBS} import "),
    (re.compile(r"^(\s*)from jax(\.[\w.]+)? import "), r"\1from functx\2 import "),
)
_PRIVATE = re.compile(r"^\s*from jax\._src\.util import ")
_NEEDS = re.compile(rf"^\s*from {FAKE_LIBS} import (.+)$", re.M)


def swap_imports(src: str) -> str:
    """``src`` with its JAX import lines rewritten to import functx; other lines unchanged."""
    out = []
    for line in src.splitlines():
        if _PRIVATE.match(line):  # JAX's pure-Python helpers (safe_zip...): not its API, kept
            out.append(line)
            continue
        for pattern, repl in _SWAPS:
            new = pattern.sub(repl, line)
            if new != line:
                line = new
                break
        else:
            assert not re.match(r"^\s*(import|from) jax\b", line), f"unhandled import: {line}"
        out.append(line)
    return "\n".join(out) + "\n"


def _example_library(name: str) -> types.ModuleType:
    """The installed JAX's ``jax/example_libraries/<name>.py`` run with functx in place of jax."""
    package = sys.modules.get(FAKE_LIBS)
    if package is None:
        package = types.ModuleType(FAKE_LIBS)
        package.__path__ = []
        sys.modules[FAKE_LIBS] = package
    if not hasattr(package, name):
        path = JAX_DIR / "example_libraries" / f"{name}.py"
        module = types.ModuleType(f"{FAKE_LIBS}.{name}")
        module.__file__ = str(path)
        exec(
            compile(swap_imports(path.read_text()), str(path), "exec", dont_inherit=True),
            module.__dict__,
        )
        sys.modules[module.__name__] = module
        setattr(package, name, module)
    return getattr(package, name)


def load_program(path: pathlib.Path, *, with_functx: bool) -> types.ModuleType:
    """The program's module, executed (its definitions made, ``main`` not called)."""
    src = path.read_text()
    if with_functx:
        src = swap_imports(src)
        for names in _NEEDS.findall(src):
            for name in names.split(","):
                _example_library(name.strip().split(" as ")[0])
    module = types.ModuleType(f"client_{path.stem}_{'functx' if with_functx else 'jax'}")
    module.__file__ = str(path)
    # As a script runs: in sys.modules (dataclasses look their module up there), and without
    # this file's ``from __future__`` flags (dont_inherit).
    sys.modules[module.__name__] = module
    try:
        exec(compile(src, str(path), "exec", dont_inherit=True), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module


# XLA's CPU backend without its costly LLVM passes: the reference compiles in half the CPU time;
# the same operations, so the same values up to rounding.
_QUICK_XLA = {"xla_backend_optimization_level": 0, "xla_llvm_disable_expensive_passes": True}


def run_program(path: pathlib.Path, *, with_functx: bool):
    module = load_program(path, with_functx=with_functx)
    if not with_functx and getattr(module, "JAX_REFERENCE_UNDER_JIT", False):
        return jax.jit(module.main, compiler_options=_QUICK_XLA)(), module
    return module.main(), module


class _FreshConfig:
    """Both libraries with jax_enable_x64 off (their default) inside; the old settings after."""

    def __enter__(self):
        self.old = (jax.config.jax_enable_x64, functx.config.jax_enable_x64)
        jax.config.update("jax_enable_x64", False)
        functx.config.update("jax_enable_x64", False)

    def __exit__(self, *exc):
        jax.config.update("jax_enable_x64", self.old[0])
        functx.config.update("jax_enable_x64", self.old[1])


def _leaves(tree, prefix="result"):
    """(path, leaf) pairs of a tree of dicts, lists and tuples, in a fixed order."""
    if isinstance(tree, dict):
        for k in sorted(tree):
            yield from _leaves(tree[k], f"{prefix}[{k!r}]")
    elif isinstance(tree, (list, tuple)):
        yield (prefix + ".__len__", len(tree))
        for i, v in enumerate(tree):
            yield from _leaves(v, f"{prefix}[{i}]")
    else:
        yield prefix, tree


def compare(ours, theirs, rtol: float, atol: float) -> int:
    """Assert two result trees agree (see the module docstring); returns the number of leaves."""
    a, b = list(_leaves(ours)), list(_leaves(theirs))
    assert [p for p, _ in a] == [p for p, _ in b], "result trees differ in structure"
    for (path, x), (_, y) in zip(a, b):
        if path.endswith(".__len__"):
            assert x == y, path
            continue
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype, f"{path}: functx {x.dtype}, JAX {y.dtype}"
        assert x.shape == y.shape, f"{path}: functx {x.shape}, JAX {y.shape}"
        if x.dtype.kind in "biu":
            np.testing.assert_array_equal(x, y, err_msg=path)
        else:
            np.testing.assert_allclose(x, y, rtol=rtol, atol=atol, err_msg=path)
    return len(a)


ALL = sorted(p.stem for p in PROGRAMS.glob("*.py"))


def test_the_suite_has_at_least_twelve_programs():
    assert len(ALL) >= 12, ALL


def test_swap_imports_rewrites_only_import_lines():
    src = "import jax\nimport jax.numpy as jnp\nfrom jax import random, grad\nx = 'import jax'\n"
    assert swap_imports(src) == (
        "import functx as jax\nimport functx.numpy as jnp\n"
        "from functx import random, grad\nx = 'import jax'\n"
    )


@pytest.mark.parametrize("name", ALL)
def test_program_gives_jax_results(name):
    path = PROGRAMS / f"{name}.py"
    with _FreshConfig():
        theirs, module = run_program(path, with_functx=False)
        theirs = jax.tree_util.tree_map(np.asarray, theirs)
    with _FreshConfig():
        ours, _ = run_program(path, with_functx=True)
    n = compare(ours, theirs, getattr(module, "RTOL", 1e-5), getattr(module, "ATOL", 1e-6))
    assert n > 0
