"""``x64_off()``: a block with ``jax_enable_x64`` off in functx and in JAX, their default mode
(tests/conftest.py turns it on in both for the suite). Tests import it as ``from x64util import
x64_off`` (pytest puts tests/ on the path for its conftest)."""

import contextlib

import functx

try:
    import jax
except ImportError:  # pragma: no cover - jax is a test dependency
    jax = None


@contextlib.contextmanager
def x64_off():
    """Run the block with ``jax_enable_x64`` off in functx and in JAX."""
    with functx.experimental.disable_x64():
        if jax is None:  # pragma: no cover
            yield
        else:
            with jax.enable_x64(False):
                yield


@contextlib.contextmanager
def x64_on():
    """Run the block with ``jax_enable_x64`` on in functx and in JAX."""
    with functx.experimental.enable_x64():
        if jax is None:  # pragma: no cover
            yield
        else:
            with jax.enable_x64(True):
                yield
