"""The generated parts of the documentation site (a mkdocs hook, named in mkdocs.yml).

At every build this hook writes, in memory (nothing is written to docs/):

- one API page per public namespace (``api/<module>.md``): a ``:::`` block (mkdocstrings) for every
  function and class of the namespace's ``__all__``, and a table for the rest (constants, dtypes,
  primitives, submodules), so a name added to ``__all__`` is documented without editing a page;
- the coverage table (``coverage.md``): every public name of each JAX namespace that
  ``functx/_jax_names.py`` maps, read from the JAX installed here, and whether functx has it;
- a page per tutorial present (``tutorials/NN_*.py``, jupytext percent scripts that mkdocs-jupyter
  executes while it builds);
- the navigation, from the pages above and the hand-written pages in docs/.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import os
import pathlib
import re
import subprocess
import sys
import types

import jax
from griffe._internal.agents import inspector as _griffe_inspector
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File

# The site documents (and its tutorials run) the functx of this checkout, installed or not: the
# build process imports it from here, and so do the notebook kernels (PYTHONPATH).
ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
)

from functx._jax_names import JAX_NAMES  # noqa: E402 - after the path above

# The API pages show no source (mkdocs.yml: show_source false), so griffe need not find each
# object's source lines: inspect.getsourcelines re-parses a module per object and was a fifth of
# the build's time. (Griffe has no option for it; the line numbers are then unknown.)
if hasattr(_griffe_inspector.Inspector, "_get_linenos"):
    _griffe_inspector.Inspector._get_linenos = lambda self, node: (None, None)

from functx import _public  # noqa: E402 (the namespace list tests/test_docstrings.py uses too)

# The hand-written pages, in navigation order (title, path under docs/).
_REFERENCE = [
    ("Differences from JAX", "differences.md"),
    ("Coverage of JAX's API", "coverage.md"),
    ("Array API test suite", "array_api.md"),
    ("JAX's own test files", "jax_tests.md"),
]
_DEV = [
    ("Overview", "dev/index.md"),
    ("Architecture and layers", "dev/architecture.md"),
    ("Adding a primitive or a reduction", "dev/primitives.md"),
    ("Adding a lowering", "dev/lowering.md"),
    ("How the tests are organised", "dev/tests.md"),
    ("Benchmarks and GPU checks", "dev/benchmarks.md"),
]


def namespaces() -> tuple[str, ...]:
    return tuple(_public.NAMESPACES)


def all_namespaces() -> tuple[str, ...]:
    """The namespaces and, after them, the public modules inside them that are not namespaces
    themselves (``functx.scipy.stats.norm``, ...): each gets an API page."""
    return tuple(_public.all_namespaces())


def public_names(module: str) -> list[str]:
    """The names a namespace's page documents (``functx._public.public_names``: its ``__all__``,
    or the explicit list of the three modules without one)."""
    return list(_public.public_names(module))


def _slug(module: str) -> str:
    return f"api/{module}.md"


def _kind(value) -> str:
    """How a name is documented: "doc" (a functx function or class: mkdocstrings renders its
    docstring), "module" (a link to its page, or a row), or "row" (a table row: constants, dtypes
    from NumPy or ml_dtypes, primitives)."""
    if isinstance(value, types.ModuleType):
        return "module"
    if inspect.isclass(value) or inspect.isroutine(value):
        if (getattr(value, "__module__", None) or "").startswith("functx"):
            return "doc"
    return "row"


def _findable(value) -> bool:
    """Whether ``value.__module__`` + ``value.__qualname__`` leads back to ``value``: what
    mkdocstrings (griffe) follows from a re-exported name to the documented object."""
    try:
        obj = importlib.import_module(value.__module__)
        for part in value.__qualname__.split("."):
            obj = getattr(obj, part)
    except (AttributeError, ImportError, TypeError):
        return False
    return obj is value


def _name_for_griffe(module: str, name: str, value) -> None:
    """Give a function made by a factory (``_ufunc1.<locals>.fn``) the public path it is
    documented under, in this build process only: griffe cannot follow ``<locals>``."""
    if not _findable(value):
        value.__module__, value.__qualname__ = module, name


def _describe(value) -> str:
    if inspect.isclass(value):
        return f"class `{value.__module__}.{value.__qualname__}`"
    if callable(value) and not inspect.isroutine(value):
        summary = (inspect.getdoc(value) or "").split("\n\n")[0].replace("\n", " ")
        return f"a callable `{type(value).__name__}`: {summary}".replace("|", "\\|")
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"`{text}` ({type(value).__name__})".replace("|", "\\|")


def api_page(module: str, modules: tuple[str, ...]) -> str:
    mod = importlib.import_module(module)
    doc = inspect.getdoc(mod) or ""
    summary = doc.split("\n\n")[0].strip()
    lines = [f"# `{module}`", ""]
    if summary:
        lines += [summary, ""]
    docs, rows = [], []
    for name in sorted(public_names(module), key=lambda n: (n.lower(), n)):
        value = getattr(mod, name)
        kind = _kind(value)
        if kind == "doc":
            _name_for_griffe(module, name, value)
            docs.append(name)
        elif kind == "module":
            target = value.__name__
            where = f"[`{target}`]({target}.md)" if target in modules else f"the module `{target}`"
            rows.append((name, where))
        else:
            rows.append((name, _describe(value)))
    lines += [
        f"{len(docs) + len(rows)} public names (`{module}.__all__`): "
        f"{len(docs)} functions and classes below, {len(rows)} other names in the table at "
        "the end.",
        "",
    ]
    for name in docs:
        lines += [f"::: {module}.{name}", ""]
    if rows:
        lines += ["## Other names", "", "| name | what it is |", "|---|---|"]
        lines += [f"| `{n}` | {w} |" for n, w in rows]
        lines.append("")
    return "\n".join(lines)


def api_index(modules: tuple[str, ...]) -> str:
    lines = [
        "# API reference",
        "",
        "One page per public namespace, generated at build time from each namespace's `__all__`"
        " (docs/hooks/site.py): every function and class with its docstring (Arguments,"
        " Returns, a doctested Example and, where functx differs from JAX, how), and a table"
        " of the other names (constants, dtypes, primitives, submodules).",
        "",
        "| namespace | public names | summary |",
        "|---|---|---|",
    ]
    for module in modules:
        mod = importlib.import_module(module)
        summary = ((inspect.getdoc(mod) or "").split("\n\n")[0]).replace("\n", " ")
        summary = summary.replace("|", "\\|")
        lines.append(f"| [`{module}`]({module}.md) | {len(public_names(module))} | {summary} |")
    return "\n".join(lines) + "\n"


def _has(module, mod_name: str, name: str) -> bool:
    if name in vars(module):
        return True
    try:
        return importlib.util.find_spec(f"{mod_name}.{name}") is not None
    except (ImportError, ValueError):
        return False


def coverage_page() -> str:
    """Every public name of each JAX namespace (read from the installed JAX now) and whether the
    functx namespace standing for it has the name."""
    summary, sections, total_jax, total_have = [], [], 0, 0
    pairs = [(m, j) for m, (j, _) in JAX_NAMES.items()]
    for mod_name in all_namespaces():  # the other namespaces JAX has under the same name
        jax_name = "jax" + mod_name.removeprefix("functx")
        if mod_name not in JAX_NAMES and importlib.util.find_spec(jax_name) is not None:
            pairs.append((mod_name, jax_name))
    for mod_name, jax_name in pairs:
        jmod = importlib.import_module(jax_name)
        try:
            module = importlib.import_module(mod_name)
        except ImportError:
            module = None
        names = sorted(n for n in dir(jmod) if not n.startswith("_"))
        have = [n for n in names if module is not None and _has(module, mod_name, n)]
        total_jax, total_have = total_jax + len(names), total_have + len(have)
        anchor = mod_name.replace(".", "")
        summary.append(
            f"| [`{jax_name}`](#{anchor}) | `{mod_name}` | {len(names)} | {len(have)} | "
            f"{len(names) - len(have)} | {100 * len(have) / max(len(names), 1):.0f}% |"
        )
        rows = [f"| `{n}` | {'yes' if n in have else '**no**'} |" for n in names]
        sections += [
            f"## `{mod_name}` {{#{anchor}}}",
            "",
            f"JAX's `{jax_name}`: {len(have)} of {len(names)} names.",
            "",
            '??? note "The names"',
            "",
            "    | JAX name | in functx |",
            "    |---|---|",
            *("    " + r for r in rows),
            "",
        ]
    head = [
        "# Coverage of JAX's API",
        "",
        f"Generated when this site was built, from the installed JAX {jax.__version__}: each public"
        " name (`dir()` without private names) of each JAX namespace that"
        " `functx/_jax_names.py` maps to a functx namespace, then of the other functx namespaces"
        " whose JAX module has the same name (`functx.dtypes` and `jax.dtypes`, ...), and"
        " whether functx has it. In the namespaces `functx/_jax_names.py` maps, a name functx"
        " lacks raises an `AttributeError` that points to"
        " [Differences from JAX](differences.md), which lists the same names.",
        "",
        f"**{total_have} of {total_jax} names** ({100 * total_have / total_jax:.0f}%).",
        "",
        "| JAX namespace | functx namespace | JAX names | in functx | missing | coverage |",
        "|---|---|---|---|---|---|",
    ]
    return "\n".join(head + summary + [""] + sections)


_PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```\n", re.S | re.M)
OUTPUT_MARK = "<!-- functx-output -->"
_SEPARATOR = "----- functx docs: end of block -----"


def run_page_examples(markdown: str, page: str) -> str:
    """A hand-written page's ```python blocks run in order in one fresh process, and each block
    followed by ``<!-- functx-output -->`` gets what it printed in its place: the output on the
    page is the output of this build, never a copy that drifts. A block that raises fails the
    build, naming the page."""
    blocks = list(_PYTHON_BLOCK.finditer(markdown))
    if OUTPUT_MARK not in markdown:
        return markdown
    script = "".join(f"{m[1]}\nprint({_SEPARATOR!r}, flush=True)\n" for m in blocks)
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, check=False
    )
    if run.returncode != 0:
        raise RuntimeError(f"the examples of {page} failed:\n{run.stderr[-3000:]}")
    outputs = run.stdout.split(_SEPARATOR + "\n")
    pieces, last = [], 0
    for m, out in zip(blocks, outputs):
        pieces.append(markdown[last : m.end()])
        last = m.end()
        rest = markdown[last:]
        if rest.lstrip("\n").startswith(OUTPUT_MARK):
            skip = len(rest) - len(rest.lstrip("\n")) + len(OUTPUT_MARK)
            pieces.append(f"\nprints\n\n```text\n{out.rstrip()}\n```")
            last += skip
    pieces.append(markdown[last:])
    return "".join(pieces)


LAYERS_MARK = "<!-- functx-layers -->"


def layers_table() -> str:
    """tests/test_layers.py's ``LAYERS`` (read from its source, not imported) as a table."""
    tree = ast.parse((ROOT / "tests" / "test_layers.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(getattr(t, "id", None) == "LAYERS" for t in targets):
                layers = ast.literal_eval(node.value)
                break
    else:
        raise RuntimeError("tests/test_layers.py has no LAYERS table")
    rows = ["| layer | modules (prefixes) |", "|---|---|"]
    rows += [f"| {name} | {', '.join(f'`{m}`' for m in mods)} |" for name, mods in layers]
    return "\n".join(rows)


BENCHMARKS_MARK = "<!-- functx-benchmarks -->"


def benchmarks_table() -> str:
    """benchmarks/*.py, each with the first paragraph of its docstring."""
    rows = ["| script | what it measures |", "|---|---|"]
    for path in sorted((ROOT / "benchmarks").glob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        first = " ".join(doc.split("\n\n")[0].split()).replace("|", "\\|")
        rows.append(f"| `benchmarks/{path.name}` | {first} |")
    return "\n".join(rows)


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri in _EXECUTED_PAGES:
        markdown = run_page_examples(markdown, page.file.src_uri)
    if LAYERS_MARK in markdown:
        markdown = markdown.replace(LAYERS_MARK, layers_table())
    if BENCHMARKS_MARK in markdown:
        markdown = markdown.replace(BENCHMARKS_MARK, benchmarks_table())
    return markdown


_EXECUTED_PAGES = {"index.md"}


def tutorials() -> list[pathlib.Path]:
    return sorted((ROOT / "tutorials").glob("[0-9][0-9]_*.py"))


def tutorial_title(path: pathlib.Path) -> str:
    for line in path.read_text().splitlines():
        if line.startswith("# # "):
            return line[4:].replace("`", "").strip()  # (the nav shows plain text)
    return path.stem[3:].replace("_", " ").capitalize()


def on_config(config):
    modules = namespaces()
    inner = [m for m in all_namespaces() if m not in modules]
    api = [{"Overview": "api/index.md"}] + [{m: _slug(m)} for m in modules]
    if inner:
        api.append({"Modules inside namespaces": [{m: _slug(m)} for m in inner]})
    config["nav"] = [
        {"Home": "index.md"},
        {"Tutorials": [{tutorial_title(p): f"tutorials/{p.name}"} for p in tutorials()]},
        {"API reference": api},
        {"Reference": [{t: p} for t, p in _REFERENCE]},
        {"Developer guide": [{t: p} for t, p in _DEV]},
    ]
    return config


@event_priority(100)  # before mkdocs-jupyter's on_files, which must see the tutorial files
def on_files(files, config):
    modules = all_namespaces()
    generated = {_slug(m): api_page(m, modules) for m in modules}
    generated["api/index.md"] = api_index(modules)
    generated["coverage.md"] = coverage_page()
    for uri, text in generated.items():
        files.append(File.generated(config, uri, content=text))
    for path in tutorials():
        # A File read from the checkout's tutorials/ (not File.generated: mkdocs-jupyter's wrapper
        # finds the source through src_dir).
        rel = path.relative_to(ROOT).as_posix()
        files.append(File(rel, str(ROOT), config["site_dir"], config["use_directory_urls"]))
    return files
