"""``functx.scipy.spatial``: JAX's ``jax.scipy.spatial``: the ``transform`` module."""

from functx.errors import missing_name_hook as _missing_name_hook
from functx.scipy.spatial import transform as transform

# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["transform"]
