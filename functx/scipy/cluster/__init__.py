"""``functx.scipy.cluster``: JAX's ``jax.scipy.cluster``: the ``vq`` module."""

from functx.errors import missing_name_hook as _missing_name_hook
from functx.scipy.cluster import vq as vq

# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["vq"]
