"""Source lines: where the user's code is, for equations and error messages.

A leaf module (it imports nothing from functx). It holds ``SourceInfo`` (the user's file, line and
function, stored on every equation), ``user_frame()`` (the innermost stack frame outside the
package), the per-thread stack of source lines that a transform pushes while it rewrites an
equation (``source_info(info)``), ``current()`` (the line new equations are attributed to) and
``where()`` (the `` (at file:line (function))`` suffix of error messages).
"""

from __future__ import annotations

import os
import sys
import threading
from typing import NamedTuple

_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# Modules inside the package that are user code (their lines are the ones to report).
_USER_FILES = {os.path.join(_PKG_DIR, "demo.py")}


class SourceInfo(NamedTuple):
    """Where the user's code bound an equation: the first stack frame outside functx."""

    file: str
    line: int
    function: str

    def __str__(self):
        return f"{self.file}:{self.line} ({self.function})"


def user_frame() -> SourceInfo | None:
    """The innermost stack frame outside the functx package: the user's line."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_PKG_DIR) or fn in _USER_FILES:
            return SourceInfo(fn, f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return None


class _SourceState(threading.local):
    """Per-thread stack of the source lines of the equations being rewritten (so one thread's
    transform never attributes another thread's equations)."""

    def __init__(self):
        self.stack: list[SourceInfo] = []


_state = _SourceState()


class source_info:
    """Attribute the equations emitted inside this block to ``info`` (the user's line of the
    equation a transform is rewriting), so errors in transformed code point at the user's source."""

    def __init__(self, info):
        self.info = info

    def __enter__(self):
        _state.stack.append(self.info)

    def __exit__(self, *exc):
        _state.stack.pop()


def current() -> SourceInfo | None:
    """The source line a new equation is attributed to: the innermost ``source_info`` block's,
    else the current user frame."""
    stack = _state.stack
    return stack[-1] if stack else user_frame()


def where(info: SourceInfo | None = None) -> str:
    """' (at file:line (function))' for the given source info, else the equation a transform is
    rewriting, else the current user frame ("" when there is none)."""
    si = info if info is not None else current()
    return f" (at {si})" if si else ""


__all__ = ["SourceInfo", "current", "source_info", "user_frame", "where"]
