"""The documentation site builds in strict mode (issue 21): `mkdocs build --strict` into a
temporary directory, once per session, exactly as a user or CI runs it. Strict mode fails the
build on a broken link or anchor, a page missing from the navigation, a docstring mkdocstrings
cannot collect, a home-page example that raises, or a tutorial cell that raises (mkdocs-jupyter
executes every tutorials/NN_*.py). The tests then check that the generated pages are there and
hold what was computed during the build: every public name of every namespace, the coverage
table, and the tutorials' executed output.
"""

from __future__ import annotations

import html
import importlib.util
import os
import pathlib
import re
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

# (one build: a single test below checks every page, so no two xdist workers both build it)
pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("mkdocs", "mkdocstrings", "mkdocs_jupyter")),
    reason='the docs extra is not installed (python -m pip install -e ".[docs]")',
)


def _hook():
    """docs/hooks/site.py, the module that generates the pages (it is not a package module)."""
    spec = importlib.util.spec_from_file_location("functx_docs_hook", ROOT / "docs/hooks/site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.setdefault("JAX_PLATFORMS", "cpu")
    env.setdefault("FUNCTX_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
    env["NO_MKDOCS_2_WARNING"] = "1"
    # no search index: nothing here reads it, and indexing every page's HTML cost ~7 CPU s of the
    # build (mkdocs.yml); a user's `mkdocs build --strict` still writes it
    env["FUNCTX_DOCS_SEARCH"] = "false"
    start = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    seconds = time.perf_counter() - start
    assert run.returncode == 0, f"mkdocs build --strict failed:\n{run.stderr[-6000:]}"
    print(f"mkdocs build --strict: {seconds:.1f} s")
    return out


def _text(site: pathlib.Path, page: str) -> str:
    """A built page's text, tags removed (what a reader sees)."""
    raw = (site / page / "index.html").read_text()
    return html.unescape(re.sub(r"<[^>]+>", "", raw))


def _every_public_name_has_its_api_entry(site):
    hook = _hook()
    for module in hook.all_namespaces():
        page = (site / "api" / module / "index.html").read_text()
        for name in hook.public_names(module):
            # a documented function or class has an anchor; other names are rows of its table
            assert f'id="{module}.{name}"' in page or f"<code>{name}</code>" in page, (
                f"{module}.{name} is missing from api/{module}/"
            )


def _home_page_shows_the_output_of_its_examples(site):
    text = _text(site, ".")
    assert "(4, 3, 2) float32" in text  # the printed per-example gradient shape
    assert 'extern "C" int fx_run' in text  # the generated C++ kernel
    assert "functx-output" not in (site / "index.html").read_text()


def _coverage_and_differences_pages(site):
    import jax

    coverage = _text(site, "coverage")
    assert f"installed JAX {jax.__version__}" in coverage
    assert "jax.numpy" in coverage and "ragged_dot" in coverage
    differences = _text(site, "differences")
    assert "Deliberate differences" in differences and "Not implemented yet" in differences
    for page in ("array_api", "jax_tests", "dev", "dev/architecture", "dev/primitives"):
        assert (site / page / "index.html").exists(), page
    assert "functx.lowering.loopir" in _text(site, "dev/architecture")  # the generated layers


def _tutorials_ran_during_the_build(site):
    hook = _hook()
    tutorials = hook.tutorials()
    assert tutorials, "no tutorials/NN_*.py to build"
    for path in tutorials:
        raw = (site / "tutorials" / path.stem / "index.html").read_text()
        title = html.escape(hook.tutorial_title(path), quote=False)
        assert f"<title>{title} - functx</title>" in raw, f"{path.name}: title is not {title!r}"
        text = html.unescape(re.sub(r"<[^>]+>", "", raw))
        assert "jp-OutputArea-output" in raw, f"{path.name}: no executed output on its page"
        # the line each tutorial prints last, after its own checks (tutorials/README.md)
        done = f"{path.name[:2]} tutorial: all checks passed"
        assert done in text, f"{path.name}: {done!r} is not on its page"
        assert "Traceback" not in text, path.name


def test_site_builds_strict_and_holds_every_page(site):
    """One test for the one build (so that pytest-xdist never builds it twice in two workers)."""
    _every_public_name_has_its_api_entry(site)
    _home_page_shows_the_output_of_its_examples(site)
    _coverage_and_differences_pages(site)
    _tutorials_ran_during_the_build(site)
