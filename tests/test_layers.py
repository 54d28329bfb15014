"""The layers contract: imports inside functx point down only.

Every module of the package is parsed (``ast``, no import), and each ``import``/``from ... import``
of a functx module, at module level or inside a function, is checked against ``LAYERS`` below:
importing a module of a higher layer fails, naming both modules and both layers. Modules of one
layer may import each other. An import inside a function must also be listed in
``LAZY_IMPORTS`` (with its reason): a function-level import that only breaks a cycle is not
allowed (move the code, or register into a table the lower module owns). And no module assigns
another functx module's attributes at import time (``tracing._flag = ...``, ``setattr``);
registering into a table the other module owns (``core.eager_rules["gpu"] = ...``) is the way.
"""

from __future__ import annotations

import ast
import functools
import pathlib

import pytest

PKG = pathlib.Path(__file__).resolve().parent.parent / "functx"

# The layers, lowest first: (layer name, module-name prefixes). A module belongs to the layer of
# its longest matching prefix ("functx.lowering.loopir" before "functx.lowering"); "functx" alone
# is the package's __init__. docs/hooks/site.py renders this list as the developer guide's table.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    (
        "leaves",
        (
            "functx.errors",
            "functx._jax_names",
            "functx.dtypes",
            "functx.config",
            "functx.source_info",
            "functx.monitoring",
            "functx.memory",
            "functx._refbox",
        ),
    ),
    ("core", ("functx.core",)),
    ("primitives", ("functx.primitives",)),
    (
        "array/tracing/interpreter",
        # (tree_util is public, but it needs only tracing's pytree namespace: control and devices
        # map over pytrees with it; functx.tree is its jax.tree names)
        (
            "functx.array",
            "functx._shard",
            "functx.tracing",
            "functx.interpreter",
            "functx.tree_util",
            "functx.tree",
        ),
    ),
    (
        "loop IR",
        (
            "functx.lowering.rules",
            "functx.lowering.intexpr",
            "functx.lowering.loopir",
            "functx.lowering.lower",
        ),
    ),
    ("ops", ("functx.ops",)),
    ("transforms", ("functx.transforms",)),
    ("control", ("functx.control",)),
    (
        "public",
        (
            "functx.lax",
            "functx.numpy",
            "functx.nn",
            "functx.random",
            "functx._xlamath",
            "functx._window",
            "functx._gather",
            "functx._conv",
            "functx._qdwh",
            "functx.scipy",
            "functx.test_util",
            "functx.flatten_util",
            "functx.experimental",
            "functx.debug",
            "functx.ad_checkpoint",
            "functx._laxextra",
            "functx._rng",
            "functx.custom_derivatives",
            "functx.custom_batching",
            "functx.extend",
            "functx._compile_time",
            "functx._laxmore",
            "functx.dlpack",
            "functx.typing",
            "functx.version",
            "functx.image",
            "functx.example_libraries",
            "functx.ref",
        ),
    ),
    ("devices", ("functx.devices",)),
    ("lowering", ("functx.lowering",)),
    (
        "top",
        (
            "functx.jit",
            "functx.demo",
            "functx",
            "functx.sharding",
            "functx.distributed",
            "functx._shard_map",
            "functx.experimental.shard_map",
            "functx.experimental.mesh_utils",
            "functx.experimental.multihost_utils",
            "functx.experimental.pjit",
            "functx.experimental.compilation_cache",
            "functx.export",
            "functx._public",
            "functx.profiler",
            "functx.stages",
            "functx._runtime",
            "functx._toplevel",
        ),
    ),
]

# Function-level imports of functx modules that are honest (not cycle breakers), as
# (importing module, imported module): reason.
LAZY_IMPORTS: dict[tuple[str, str], str] = {
    # Triton (and torch) are optional dependencies: only a jit on a GPU imports that backend.
    ("functx.lowering.compile", "functx.lowering.triton.program"): "optional dependency (triton)",
    ("functx.lowering.compile", "functx.lowering.triton.runtime"): "optional dependency (triton)",
    # The loop IR and the renderers cost about 0.1 s of CPU to import, which `import functx` and a
    # warm process must not pay (the program-cache test checks that a cache hit does not import
    # them): only a C++ program-cache miss, as_text, or a control rule run at lowering does.
    ("functx.lowering.compile", "functx.lowering.loopir"): "only on a program-cache miss",
    ("functx.lowering.compile", "functx.lowering.lower"): "only on a program-cache miss",
    ("functx.lowering.compile", "functx.lowering.schedule"): "only on a program-cache miss",
    ("functx.lowering.compile", "functx.lowering.cpp.program"): "only on a cache miss",
    ("functx.lowering.compile", "functx.lowering.cpp.dot"): "only on a cache miss",
    ("functx.control.common", "functx.lowering.loopir"): "loop IR only when jit lowers",
    ("functx.control.linalg", "functx.lowering.loopir"): "loop IR only when jit lowers",
    ("functx.control.associative_scan", "functx.lowering.loopir"): "loop IR only when jit lowers",
    ("functx.control.associative_scan", "functx.lowering.lower"): "loop IR only when jit lowers",
    ("functx.control.generic_reduce", "functx.lowering.loopir"): "loop IR only when jit lowers",
    ("functx.control.custom_derivatives", "functx.lowering.lower"): "loop IR only when jit lowers",
    ("functx.control.remat", "functx.lowering.lower"): "loop IR only when jit lowers",
    ("functx.control.threefry", "functx.lowering.lower"): "loop IR only when jit lowers",
    ("functx.control.sort", "functx.lowering.loopir"): "loop IR only when jit lowers",
    ("functx.control.linear_solve", "functx.lowering.lower"): "loop IR only when jit lowers",
    ("functx._rng", "functx.lowering.lower"): "loop IR only when jit lowers",
    ("functx.control.collectives", "functx.lowering.lower"): "loop IR only when jit lowers",
    ("functx.lowering.cpp.conv", "functx.lowering.loopir"): "loop IR only when jit lowers",
    # cache.py (subprocess, the compiler lookup) costs ~85 ms of `import functx`: first use only.
    ("functx.lowering.compile", "functx.lowering.cpp.prelude"): "import time of `import functx`",
    ("functx.lowering.compile", "functx.lowering.cache"): "import time of `import functx`",
    ("functx.lowering.program_cache", "functx.lowering.cache"): "import time of `import functx`",
    ("functx.lowering.program_cache", "functx.lowering.cpp.gemm"): "only for programs using it",
    ("functx.lowering.runtime", "functx.lowering.cache"): "import time of `import functx`",
    ("functx.lowering.runtime", "functx.lowering.cpp.native"): "import time of `import functx`",
    ("functx.lowering.runtime", "functx.lowering.cpp.gemm"): "only for programs using it",
    ("functx.lowering.runtime", "functx.lowering.cpp.attention"): "only for programs using it",
    ("functx.lowering.cpp.hostmath", "functx.lowering.cache"): "import time of `import functx`",
}


def _modules() -> dict[str, pathlib.Path]:
    mods = {}
    for path in sorted(PKG.rglob("*.py")):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        mods[".".join(parts)] = path
    return mods


MODULES = _modules()


def layer_of(module: str) -> int | None:
    """The index in LAYERS of ``module``'s layer (None: no prefix matches)."""
    best, best_len = None, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best_len:
                if p == "functx" and module != "functx":
                    continue  # "functx" names the package's __init__ only
                best, best_len = i, len(p)
    return best


def _is_package(module: str) -> bool:
    return MODULES.get(module, pathlib.Path()).name == "__init__.py"


def _resolve(node, importer: str) -> list[str]:
    """The functx modules an import statement imports (a name imported from a package is the
    submodule when there is one)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == "functx"]
    base = node.module or ""
    if node.level:
        pkg = importer if _is_package(importer) else importer.rpartition(".")[0]
        for _ in range(node.level - 1):
            pkg = pkg.rpartition(".")[0]
        base = f"{pkg}.{base}" if base else pkg
    if base.split(".")[0] != "functx":
        return []
    out = []
    for a in node.names:
        sub = f"{base}.{a.name}"
        out.append(sub if sub in MODULES else base)
    return out


def _imports(module: str, path: pathlib.Path):
    """(imported module, line, inside a function) for each functx import of ``module``; imports
    under ``if TYPE_CHECKING:`` do not run and are skipped."""
    source = path.read_text()
    tree = _tree(path)
    found = []
    # import statements are statements: expressions need a look only where a call may import
    calls = "import_module" in source or "__import__" in source

    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _names_type_checking(child.test):
                continue
            if not calls and isinstance(child, ast.expr):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                for target in dict.fromkeys(_resolve(child, module)):
                    found.append((target, child.lineno, in_function))
            elif (  # importlib.import_module("functx....") / __import__("functx....")
                isinstance(child, ast.Call)
                and _is_import_call(child.func)
                and child.args
                and isinstance(child.args[0], ast.Constant)
                and str(child.args[0].value).split(".")[0] == "functx"
            ):
                found.append((child.args[0].value, child.lineno, in_function))
            walk(
                child,
                in_function
                or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)),
            )

    walk(tree, False)
    return found


@functools.cache
def _tree(path: pathlib.Path) -> ast.Module:
    return ast.parse(path.read_text(), str(path))


def _names_type_checking(test) -> bool:
    return any(
        getattr(n, "id", None) == "TYPE_CHECKING" or getattr(n, "attr", None) == "TYPE_CHECKING"
        for n in ast.walk(test)
    )


def _is_import_call(func) -> bool:
    """``importlib.import_module`` or ``__import__`` (checked without unparsing every call)."""
    if isinstance(func, ast.Name):
        return func.id == "__import__"
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "import_module"
        and isinstance(func.value, ast.Name)
        and func.value.id == "importlib"
    )


@functools.cache
def _all_imports() -> dict[str, list]:
    """``_imports`` of every functx module, computed once, by the first test that needs it (not
    at collection, which each pytest-xdist worker repeats)."""
    return {m: _imports(m, p) for m, p in MODULES.items()}


def _where(module, line):
    return f"{MODULES[module].relative_to(PKG.parent)}:{line}"


def test_every_module_has_a_layer():
    missing = [m for m in MODULES if layer_of(m) is None]
    assert not missing, f"modules in no layer (add them to LAYERS): {missing}"


def test_imported_modules_exist():
    bad = [
        f"{_where(module, line)}: {module} imports {target}, which does not exist"
        for module, imports in _all_imports().items()
        for target, line, _ in imports
        if target not in MODULES
    ]
    assert not bad, "imports of missing functx modules:\n" + "\n".join(bad)


def test_imports_point_down():
    bad = []
    for module, imports in _all_imports().items():
        mine = layer_of(module)
        for target, line, _ in imports:
            theirs = layer_of(target)
            if mine is not None and theirs is not None and theirs > mine:
                bad.append(
                    f"{_where(module, line)}: {module} (layer {LAYERS[mine][0]!r}) imports "
                    f"{target} (layer {LAYERS[theirs][0]!r}, higher)"
                )
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_no_function_level_imports():
    bad = []
    for module, imports in _all_imports().items():
        for target, line, in_function in imports:
            if in_function and (module, target) not in LAZY_IMPORTS:
                bad.append(f"{_where(module, line)}: {module} imports {target} inside a function")
    assert not bad, (
        "function-level imports of functx modules (import at the top, move the code down, or "
        "register into a table of the lower module; list honest lazy imports in LAZY_IMPORTS):\n"
        + "\n".join(bad)
    )


def _module_aliases(tree, module: str) -> set[str]:
    """Names bound at module level by imports from functx: modules, and the classes and objects
    imported from them (``Array.__add__ = ...`` patches another module's class)."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            targets = _resolve(node, module)
            for a, target in zip(node.names, targets):
                if target in MODULES:
                    names.add((a.asname or a.name).split(".")[0])
    return names


def test_no_module_assigns_another_modules_globals():
    bad = []
    for module, path in MODULES.items():
        tree = _tree(path)
        aliases = _module_aliases(tree, module)

        def visit(node):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                return  # runs later, if at all (not at import)
            targets = []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id in aliases
                ):
                    bad.append(f"{_where(module, node.lineno)}: {module} sets {ast.unparse(t)}")
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "setattr"
                and node.args
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id in aliases
            ):
                bad.append(f"{_where(module, node.lineno)}: {module} calls {ast.unparse(node)}")
            for child in ast.iter_child_nodes(node):
                visit(child)

        visit(tree)
    assert not bad, (
        "modules assigning attributes of another module, or of a class or object imported from "
        "one, at import time (register into a table the other module owns instead):\n"
        + "\n".join(bad)
    )


@pytest.mark.parametrize(
    "module,layer",
    [
        ("functx", "top"),
        ("functx.errors", "leaves"),
        ("functx.lowering.loopir", "loop IR"),
        ("functx.lowering.loopir.x", "loop IR"),
        ("functx.lowering.cpp", "lowering"),
        ("functx.numpy._core", "public"),
        ("functx.lax", "public"),
        ("functx.laxx", None),
    ],
)
def test_layer_map(module, layer):
    i = layer_of(module)
    assert (LAYERS[i][0] if i is not None else None) == layer
