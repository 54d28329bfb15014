"""The primitive registry and the helpers every table of primitives uses.

``registry`` maps each primitive's name to its ``Primitive``; ``prim`` creates and registers one;
``by_group`` lists a group (unary, binary, compare, bitwise, select, convert, reduce, shape, index,
contract, special). The other helpers are shared by the abstract evaluation rules and NumPy
implementations of the table modules: errors naming the operands, axis checks, and the quiet
(IEEE, no RuntimeWarning) and float16/bfloat16-upcasting wrappers of eager kernels.
"""

from __future__ import annotations

import numpy as np

from functx import dtypes
from functx.core import Primitive
from functx.errors import FunctxArgumentError, FunctxTypeError

#: Every primitive by name. Modules that define primitives (control flow, custom derivatives)
#: register theirs here too.
registry: dict[str, Primitive] = {}


def prim(name, group, *, multiple_results=False) -> Primitive:
    """A new ``Primitive`` of ``group``, registered under ``name``."""
    p = Primitive(name, multiple_results=multiple_results, group=group)
    registry[name] = p
    return p


def by_group(group: str) -> list[Primitive]:
    """The registered primitives of ``group``, in registration order."""
    return [p for p in registry.values() if p.group == group]


def err(msg):
    raise FunctxTypeError(msg)


def fmt(avals):
    return ", ".join(a.str_short() for a in avals)


def check_axes(name, axes, ndim):
    for a in axes:
        if not isinstance(a, (int, np.integer)) or not 0 <= a < ndim:
            raise FunctxArgumentError(
                f"{name}: axis {a} is out of range for an array of rank {ndim}"
            )
    if len(set(axes)) != len(axes):
        err(f"{name}: repeated axes {axes}")


def same_dtypes(name, avals):
    d = avals[0].dtype
    for a in avals[1:]:
        if a.dtype != d:
            err(
                f"{name} got different dtypes {fmt(avals)}; functx.lax ops need equal dtypes "
                "(functx.numpy functions promote for you)"
            )
    return d


LOW_FLOATS = (dtypes.float16, dtypes.bfloat16)

# Eager kernels return IEEE results (nan, inf) without NumPy's RuntimeWarnings, as XLA does.
# ``np.errstate`` costs about 3 us per call, as much as the whole kernel on small arrays, so the hot
# paths set NumPy's error-state context variable directly (what np.errstate does inside), falling
# back to np.errstate where that private API is missing.
try:
    from numpy._core.umath import _extobj_contextvar, _make_extobj

    _IGNORE_FP = _make_extobj(all="ignore")

    def quiet(fn):
        """``fn`` run with NumPy's floating-point warnings off."""
        set_state, reset_state = _extobj_contextvar.set, _extobj_contextvar.reset

        def impl(*args, **params):
            token = set_state(_IGNORE_FP)
            try:
                return fn(*args, **params)
            finally:
                reset_state(token)

        return impl
except (ImportError, TypeError):  # pragma: no cover - other NumPy versions

    def quiet(fn):
        """``fn`` run with NumPy's floating-point warnings off."""

        def impl(*args, **params):
            with np.errstate(all="ignore"):
                return fn(*args, **params)

        return impl


def upcast(fn):
    """Compute float16/bfloat16 in float32 and round back, as JAX does on the CPU."""

    def impl(x, **params):
        if x.dtype in LOW_FLOATS:
            return fn(x.astype(np.float32), **params).astype(x.dtype)
        return fn(x, **params)

    return quiet(impl)
