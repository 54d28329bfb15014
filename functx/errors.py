"""functx's exceptions. Each message names the operation, the shapes and the user's source line."""

from __future__ import annotations


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
