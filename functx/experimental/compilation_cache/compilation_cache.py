"""``functx.experimental.compilation_cache.compilation_cache``: where compiled programs are
kept on disk (``jax.experimental.compilation_cache.compilation_cache``).

functx always keeps compiled kernels on disk, in ``FUNCTX_CACHE_DIR`` (default
``$XDG_CACHE_HOME/functx`` or ``~/.cache/functx``); ``set_cache_dir`` sets that variable for
this process (and the processes it starts).
"""

from __future__ import annotations

import os

from functx.lowering import cache

__all__ = ["reset_cache", "set_cache_dir"]


def set_cache_dir(path) -> None:
    """Keep compiled programs in ``path`` from now on (``jax.experimental.compilation_cache.
    compilation_cache.set_cache_dir``): sets ``FUNCTX_CACHE_DIR`` for this process.

    A compile cache is code this process loads and runs, so functx checks the directory as it
    checks ``FUNCTX_CACHE_DIR``, now and at each use: made with mode 0700 if missing; one that
    another user owns or can write (or whose parents they can replace) is not used, with a
    ``functx.CacheWarning``, and programs go to a private temporary directory instead.

    Arguments:
      path: a directory (a ``str`` or ``os.PathLike``).
    Returns:
      None.
    Example:
      >>> import os, tempfile
      >>> from functx.experimental.compilation_cache import compilation_cache as cc
      >>> old = os.environ.get("FUNCTX_CACHE_DIR")
      >>> cc.set_cache_dir(os.path.join(tempfile.mkdtemp(), "programs"))
      >>> os.path.basename(os.environ["FUNCTX_CACHE_DIR"])
      'programs'
      >>> _ = cc.set_cache_dir(old) if old else os.environ.pop("FUNCTX_CACHE_DIR")
    """
    os.environ["FUNCTX_CACHE_DIR"] = os.fspath(path)
    cache.cache_dir()  # (the trust checks, warning now rather than at the first compile)


def reset_cache() -> None:
    """JAX's reset of its cache handle to the uninitialized state
    (``jax.experimental.compilation_cache.compilation_cache.reset_cache``). functx opens the
    cache directory afresh at each use, so there is nothing to reset: the directory stays the
    one set, and compiled programs stay cached.

    Arguments:
      none.
    Returns:
      None.
    Example:
      >>> from functx.experimental.compilation_cache import compilation_cache as cc
      >>> cc.reset_cache()
    """
    return None
