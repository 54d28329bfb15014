"""``functx.extend``: the parts of JAX's ``jax.extend`` (its interface for libraries built on
JAX) that functx has: ``functx.extend.core`` (user primitives, Jaxprs and their pieces). JAX's
other submodules (``backend``, ``mlir``, ``linear_util``, ``random``, ...) reach into XLA and
JAX's internals; naming one raises an AttributeError that says functx lacks it."""

from __future__ import annotations

from functx.errors import missing_name_hook as _missing_name_hook
from functx.extend import core as core

__all__ = ["core"]

__getattr__ = _missing_name_hook(__name__)
