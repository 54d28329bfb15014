"""Doctests that tests/test_docstrings.py does not already run.

test_docstrings.py runs the examples of every public name's docstring (and of its class's
methods), with x64 off. A test file that doctests a module or an object for its own reasons (its
private helpers, its module docstring, a differently named global) calls :func:`run` here, which
skips every docstring test_docstrings.py runs, so that no example runs twice in the suite. Tests
import it as ``import docutil`` (tests/ is on the path for its conftest).
"""

from __future__ import annotations

import doctest
import functools
import importlib
import types

from functx._public import all_namespaces, public_names


def _own_docstrings(obj):
    """The functions whose docstrings test_docstrings.py runs for one public object."""
    from test_docstrings import _own_methods  # (the same walk over a class's methods)

    yield obj
    if isinstance(obj, type) and (obj.__module__ or "").startswith("functx"):
        yield from (member for _, member in _own_methods(obj))


@functools.cache
def covered() -> frozenset[str]:
    """The docstrings (as text) whose examples test_docstrings.py runs."""
    from test_docstrings import PENDING  # (examples it skips while their reason holds)

    docs = set()
    for ns in all_namespaces():
        module = importlib.import_module(ns)
        for name in public_names(ns):
            obj = getattr(module, name)
            if isinstance(obj, types.ModuleType) or not callable(obj):
                continue
            if f"{ns}.{name}" in PENDING and PENDING[f"{ns}.{name}"]():
                continue
            for f in _own_docstrings(obj):
                if isinstance(f.__doc__, str) and ">>>" in f.__doc__:
                    docs.add(f.__doc__)
    return frozenset(docs)


def uncovered(tests):
    """The doctests of ``tests`` (DocTest objects) that test_docstrings.py does not run."""
    done = covered()
    return [t for t in tests if t.examples and t.docstring not in done]


def run(obj, name=None, *, globs=None, optionflags=doctest.NORMALIZE_WHITESPACE):
    """Run the examples of ``obj`` (a module, class or function, recursively) that
    test_docstrings.py does not run; returns doctest's (failed, attempted) counts."""
    runner = doctest.DocTestRunner(optionflags=optionflags)
    finder = doctest.DocTestFinder()
    kw = {} if globs is None else {"globs": dict(globs)}
    for t in uncovered(finder.find(obj, name, **kw)):
        runner.run(t)
    return runner.summarize(verbose=False)
