"""functx's exceptions. Each message names the operation, the shapes and the user's source line."""

from __future__ import annotations

import os
import sys

_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# Modules inside the package that are user code (their lines are the ones to report).
_USER_FILES = {os.path.join(_PKG_DIR, "demo.py")}


class FunctxError(Exception):
    """Base class of every error functx raises on purpose."""


class FunctxTypeError(FunctxError, TypeError):
    """A shape or dtype mismatch, or a bad argument, found while tracing or running an operation."""


class FunctxValueError(FunctxError, ValueError):
    """An argument with a valid type but an invalid value: an axis out of range, a negative size,
    an unknown mode or option, a length that does not match."""


class FunctxIndexError(FunctxError, IndexError):
    """An index out of range where JAX (and NumPy) raise IndexError."""


class FunctxOverflowError(FunctxError, OverflowError):
    """A size or value too large for the type that must hold it."""


class ConcretizationError(FunctxError, TypeError):
    """Python needed a concrete value (``bool``, ``int``, ``if``, ``while``) of a traced array."""


class UnsupportedError(FunctxError, NotImplementedError):
    """A primitive has no rule in some transform or backend."""


class CacheWarning(UserWarning, RuntimeWarning):
    """A compile-cache directory functx does not trust (owned by another user, or writable by
    others) or cannot write: functx goes on with a private temporary directory. Filter it with
    ``warnings.filterwarnings("ignore", category=functx.CacheWarning)``."""


def user_frame():
    """The innermost stack frame outside the functx package: the user's line."""
    from functx.core import SourceInfo

    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_PKG_DIR) or fn in _USER_FILES:
            return SourceInfo(fn, f.f_lineno, f.f_code.co_name)
        f = f.f_back
    return None


def where(source_info=None) -> str:
    """' (at file:line (function))' for the given source info, else the equation a transform is
    rewriting, else the current user frame."""
    si = source_info
    if si is None:
        from functx import tracing

        stack = tracing._state.source_stack
        si = stack[-1] if stack else user_frame()
    return f" (at {si})" if si else ""
