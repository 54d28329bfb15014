"""``functx.scipy.sparse``: JAX's ``jax.scipy.sparse``: the ``linalg`` module (Krylov solvers)."""

from functx.errors import missing_name_hook as _missing_name_hook
from functx.scipy.sparse import linalg as linalg

# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["linalg"]
