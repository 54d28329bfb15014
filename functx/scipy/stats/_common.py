"""Helpers of ``functx.scipy.stats``: argument promotion and JAX's docstring layout."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp


def promote(*args):
    """The arguments as arrays of their promoted inexact dtype (integers become float), not
    broadcast (the formulas broadcast)."""
    arrs = [a if hasattr(a, "aval") else jnp.asarray(a) for a in args]
    return jnp._core._promote_only(*arrs, kind="inexact")


def const(v, like):
    """The Python number ``v`` as a scalar array of ``like``'s dtype."""
    return jnp.asarray(np.asarray(v, like.dtype))


def doc(dist, name, summary, params, example, result="the promoted float dtype"):
    """Sets ``fn.__doc__`` in the layout every public functx function has (Arguments, Returns,
    and a running Example: ``example``'s first line is the statement, the rest its output)."""

    def wrap(fn):
        fn.__doc__ = (
            f"{summary}\n\n    Arguments:\n"
            + "".join(f"      {p}\n" for p in params)
            + f"    Returns:\n      An array of {result}, the arguments broadcast together.\n\n"
            + "    Example:\n"
            + "      >>> import functx.numpy as jnp\n"
            + f"      >>> from functx.scipy.stats import {dist}\n"
            + "".join(
                f"      {'>>> ' if i == 0 else ''}{line}\n"
                for i, line in enumerate(example.strip().splitlines())
            )
        )
        fn.__qualname__ = fn.__name__ = name
        return fn

    return wrap


LOC_SCALE = ("loc: the location (default 0).", "scale: the scale (default 1).")
