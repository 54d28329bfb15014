"""``functx.experimental.shard_alike``: two values laid out alike
(``jax.experimental.shard_alike``)."""

from __future__ import annotations

from functx import numpy as jnp, tree_util
from functx.errors import FunctxValueError

__all__ = ["shard_alike"]


def shard_alike(x, y):
    """``x`` and ``y``, constrained to be split over devices the same way
    (``jax.experimental.shard_alike.shard_alike``). functx arrays are whole on one device, so
    the values are ``x`` and ``y`` (their leaves as Arrays), after JAX's checks: one pytree
    structure, leaves of equal shapes.

    Arguments:
      x, y: pytrees of arrays of one structure and matching shapes (dtypes may differ).
    Returns:
      ``(x, y)``.
    Raises:
      ValueError: different structures or shapes (as JAX).
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.shard_alike import shard_alike
      >>> shard_alike(jnp.ones(2), jnp.zeros(2, jnp.int32))
      (Array([1., 1.], dtype=float32), Array([0, 0], dtype=int32))
    """
    xl, xt = tree_util.tree_flatten(x)
    yl, yt = tree_util.tree_flatten(y)
    if xt != yt:
        raise FunctxValueError(f"Trees should be equal. Got x_tree: {xt}, y_tree: {yt}")
    xl, yl = [jnp.asarray(v) for v in xl], [jnp.asarray(v) for v in yl]
    for a, b in zip(xl, yl):
        if a.shape != b.shape:
            raise FunctxValueError(
                f"The leaves shapes of `x` and `y` should match. Got `x` leaf shape: {a.shape} "
                f"and `y` leaf shape: {b.shape}."
            )
    return tree_util.tree_unflatten(xt, xl), tree_util.tree_unflatten(yt, yl)
