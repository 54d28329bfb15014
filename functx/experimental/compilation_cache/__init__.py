"""``functx.experimental.compilation_cache`` (``jax.experimental.compilation_cache``): its
``compilation_cache`` module sets the directory of compiled programs."""

from functx.experimental.compilation_cache import compilation_cache as compilation_cache

__all__ = ["compilation_cache"]
