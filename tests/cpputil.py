"""Counting what the generated C++ computes: the calls of an element function in the kernels of
``jit(f).lower(...).as_text()``, against the equations of the Jaxpr."""

from __future__ import annotations

import re

import functx

_STATEMENT = re.compile(r"\s+const \S+ [a-z]+\d+ = ")


def calls(text: str, name: str) -> int:
    """How many times the kernels of ``lower(...).as_text()`` call ``name`` (their statements
    only, not the prelude's definitions)."""
    call = re.compile(rf"(?:fx_|fx::){name}(?:<\w+>)?\(")
    cpp = text[text.index("# C++") :]
    return sum(len(call.findall(ln)) for ln in cpp.splitlines() if _STATEMENT.match(ln))


def in_jaxpr(f, args, name: str) -> int:
    """How many ``name`` equations ``make_jaxpr(f)(*args)`` has (nested ones included)."""
    return len(re.findall(rf"= {name} ", str(functx.make_jaxpr(f)(*args))))
