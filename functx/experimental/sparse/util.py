"""``functx.experimental.sparse.util``: the sparse module's exception and warning classes
(``jax.experimental.sparse.util``'s public ones)."""

from __future__ import annotations

from functx.errors import FunctxValueError


class SparseEfficiencyError(FunctxValueError):
    """An operation on a sparse array that would be inefficient enough to refuse (a
    ``ValueError``, as ``jax.experimental.sparse.SparseEfficiencyError``).

    Example:
      >>> from functx.experimental import sparse
      >>> issubclass(sparse.SparseEfficiencyError, ValueError)
      True
    """


class SparseEfficiencyWarning(UserWarning):
    """A sparse operation that runs, but less efficiently than it could
    (``jax.experimental.sparse.SparseEfficiencyWarning``).

    Example:
      >>> from functx.experimental import sparse
      >>> issubclass(sparse.SparseEfficiencyWarning, UserWarning)
      True
    """


class CuSparseEfficiencyWarning(SparseEfficiencyWarning):
    """A sparse operation that cannot use the GPU's sparse library for its inputs
    (``jax.experimental.sparse.CuSparseEfficiencyWarning``); functx never calls cuSPARSE, so
    it does not raise it, and the class is there for programs that filter it.

    Example:
      >>> from functx.experimental import sparse
      >>> issubclass(sparse.CuSparseEfficiencyWarning, sparse.SparseEfficiencyWarning)
      True
    """


__all__ = ["CuSparseEfficiencyWarning", "SparseEfficiencyError", "SparseEfficiencyWarning"]
