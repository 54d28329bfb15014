"""``functx.flatten_util``: ``ravel_pytree``, a pytree of arrays as one flat vector (JAX's)."""

from __future__ import annotations

import functools

import numpy as np

from functx import lax, numpy as jnp, tree_util
from functx.errors import FunctxTypeError, FunctxValueError, missing_name_hook as _missing_name_hook
from functx.source_info import where


def ravel_pytree(pytree):
    """Ravel a pytree of arrays and scalars into one 1-D array.

    The leaves are raveled and concatenated in ``tree_leaves`` order, in the dtype that promoting
    the leaves' dtypes gives (weak types are not consulted, as in JAX). A tree with no leaves gives
    an empty float32 vector.

    Arguments:
        pytree: a pytree of arrays and scalars.

    Returns:
        ``(flat, unravel)``: the 1-D array, and a function that takes a 1-D array of the same
        length back to a pytree of ``pytree``'s structure (leaves reshaped, and cast back to their
        dtypes when the leaves' dtypes differ; then ``unravel`` accepts only ``flat``'s dtype).

    Example:
        >>> import numpy as np
        >>> import functx.numpy as jnp
        >>> from functx.flatten_util import ravel_pytree
        >>> flat, unravel = ravel_pytree({"w": jnp.ones((2, 2)), "b": np.int32(3)})
        >>> flat
        Array([3., 1., 1., 1., 1.], dtype=float32)
        >>> unravel(flat)["b"]
        Array(3, dtype=int32)
    """
    leaves, treedef = tree_util.tree_flatten(pytree)
    if not leaves:
        return jnp.zeros((0,), "float32"), functools.partial(_unravel_empty, treedef)
    from_dtypes = tuple(jnp.result_type(x) for x in leaves)
    to_dtype = jnp.result_type(*from_dtypes)
    shapes = tuple(tuple(np.shape(x)) for x in leaves)
    sizes = tuple(int(np.prod(s, dtype=np.int64)) for s in shapes)
    same = all(dt == to_dtype for dt in from_dtypes)
    parts = [
        jnp.reshape(x if same else lax.convert_element_type(x, to_dtype), (n,))
        for x, n in zip(leaves, sizes, strict=True)
    ]
    flat = lax.concatenate([jnp.asarray(p) for p in parts], 0)
    unravel = functools.partial(
        _unravel, treedef, sizes, shapes, None if same else (from_dtypes, to_dtype)
    )
    return flat, unravel


def _unravel_empty(treedef, flat):
    return tree_util.tree_unflatten(treedef, [])


def _unravel(treedef, sizes, shapes, casts, flat):
    total = sum(sizes)
    shape = tuple(np.shape(flat))
    if len(shape) != 1 or shape[0] != total:
        raise FunctxValueError(
            f"Sum of sizes {total} must be equal to dimension 0 of the operand shape "
            f"{list(shape)}{where()}"
        )
    if casts is not None:
        from_dtypes, to_dtype = casts
        dt = jnp.result_type(flat)
        if dt != to_dtype:
            raise FunctxTypeError(
                f"unravel function given array of dtype {dt}, but expected dtype {to_dtype}"
                f"{where()}"
            )
    bounds = np.cumsum(sizes)[:-1].tolist()
    chunks = jnp.split(flat, bounds) if bounds else [flat]
    leaves = [jnp.reshape(c, s) for c, s in zip(chunks, shapes, strict=True)]
    if casts is not None:
        leaves = [lax.convert_element_type(x, d) for x, d in zip(leaves, casts[0], strict=True)]
    return tree_util.tree_unflatten(treedef, leaves)


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["ravel_pytree"]
