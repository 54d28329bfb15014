"""Mutable array references (``jax.ref``): ``new_ref(x)`` makes a ``Ref`` whose contents are read
with ``ref[idx]`` and replaced in place with ``ref[idx] = v`` (or ``get``/``set``/``swap``/
``addupdate``).

A ``Ref`` is a box holding its current value (``functx/_refbox.py``): a write replaces that value
with ``value.at[idx].set(v)``, so inside a traced function the state is threaded functionally and
the Jaxpr holds ordinary ``dynamic_update_slice``/``scatter`` equations, not reference types.
References created outside a traced function and used inside it are threaded through as extra
inputs and outputs by ``jit`` (a ``Ref`` argument is updated for the caller after the call, as in
JAX), ``scan``, ``fori_loop``, ``while_loop`` and ``cond``/``switch``; ``grad`` and ``vmap`` raise
when such a reference is written inside them, as JAX does.
"""

from __future__ import annotations

import numpy as np

from functx import _refbox, numpy as jnp
from functx.core import ShapedArray
from functx.dtypes import issubdtype
from functx.errors import (
    FunctxTypeError,
    FunctxValueError,
    UnsupportedError,
    missing_name_hook,
)
from functx.source_info import where
from functx.tracing import Tracer, get_aval


class AbstractRef:
    """The type of a ``Ref`` (``jax.ref.AbstractRef``): the abstract value of its contents.

    Arguments:
      inner_aval: the contents' ``ShapedArray``.
      memory_space, kind: kept as given (functx has one memory space).
    Returns:
      (constructed) the type, printed as ``Ref{float32[3]}``.
    Example:
      >>> import functx
      >>> from functx.core import ShapedArray
      >>> functx.ref.AbstractRef(ShapedArray((3,), "float32"))
      Ref{float32[3]}
    """

    def __init__(self, inner_aval, memory_space=None, kind=None):
        self.inner_aval, self.memory_space, self.kind = inner_aval, memory_space, kind

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: len(self.inner_aval.shape))
    size = property(lambda self: int(np.prod(self.inner_aval.shape, dtype=np.int64)))

    def __eq__(self, other):
        return type(other) is AbstractRef and self.inner_aval == other.inner_aval

    def __hash__(self):
        return hash(("Ref", self.inner_aval))

    def __repr__(self):
        a = self.inner_aval
        return f"Ref{{{np.dtype(a.dtype).name}[{','.join(map(str, a.shape))}]}}"


class Ref(_refbox.Handle):
    """A mutable array reference (``jax.Ref``), made by ``new_ref`` or ``empty_ref``.

    ``ref[idx]`` reads, ``ref[idx] = v`` writes (``v`` of exactly the indexed shape and the
    reference's dtype; Python scalars are cast), ``ref[idx] += v`` reads then writes. Indices:
    ``...``, integers, slices and integer arrays, as for arrays. A ``Ref`` is a pytree leaf, not
    an array: no arithmetic on it (read it first).

    Arguments:
      (not constructed directly: use ``new_ref``).
    Returns:
      (constructed) the reference.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> r = functx.new_ref(jnp.zeros(3))
      >>> r[1] = 5.0
      >>> r[...]
      Array([0., 5., 0.], dtype=float32)
    """

    __slots__ = ("_box", "__weakref__")

    def __init__(self, box):
        self._box = box

    def _value(self, what="read"):
        box = self._box
        if box.state != "live":
            raise FunctxValueError(
                f"cannot {what} a Ref that was {box.state} (by "
                f"{'free_ref' if box.state == 'freed' else 'freeze'}){where()}"
            )
        return box.value

    shape = property(lambda self: get_aval(self._value("inspect")).shape)
    dtype = property(lambda self: get_aval(self._value("inspect")).dtype)
    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def _functx_typeof(self):  # (functx.typeof)
        return AbstractRef(_inner(self._value("inspect")))

    def __len__(self):
        if not self.shape:
            raise FunctxTypeError(f"len() of unsized object (a 0-d Ref){where()}")
        return self.shape[0]

    def __getitem__(self, idx):
        return get(self, idx)

    def __setitem__(self, idx, value):
        set(self, idx, value)

    def __repr__(self):
        v = self._box.value
        if self._box.state != "live":
            return f"Ref(<{self._box.state}>)"
        if isinstance(v, Tracer):
            return f"Ref({_inner(v).str_short()})"
        return "Ref(" + repr(v).partition("(")[2]

    __str__ = __repr__


def _inner(v) -> ShapedArray:
    a = get_aval(v)
    return ShapedArray(a.shape, a.dtype, a.weak_type)


def _check_ref(ref, fun):
    if not isinstance(ref, Ref):
        raise FunctxTypeError(
            f"{fun} expects a Ref (made by new_ref), got {type(ref).__name__}{where()}"
        )


def _whole(idx):
    return (
        idx is None
        or idx is Ellipsis
        or (type(idx) is tuple and (not idx or (len(idx) == 1 and idx[0] is Ellipsis)))
    )


def _static_bounds(shape, idx):
    """JAX's ValueError for a static integer index out of range (arrays would clamp)."""
    for d, i in zip(shape, idx if isinstance(idx, tuple) else (idx,)):
        if i is Ellipsis:
            return
        if isinstance(i, (int, np.integer)) and not isinstance(i, bool) and not -d <= i < d:
            raise FunctxValueError(f"Out of bound indexer: idx={i}, dim={d}{where()}")


def _read(ref, idx):
    ref._box.note(False)
    value = ref._value()
    if _whole(idx):
        return value
    _static_bounds(get_aval(value).shape, idx)
    return value[idx]


def _casts(to, va) -> bool:
    """Whether a write casts a value of aval ``va`` to the dtype ``to`` (JAX's rule: an integer to
    any integer type, a weakly typed floating value to any floating type; nothing else)."""
    if issubdtype(to, np.integer) and issubdtype(va.dtype, np.integer):
        return True
    return va.weak_type and issubdtype(to, np.floating) and issubdtype(va.dtype, np.floating)


def _checked_value(ref, idx, value, what, cast=True):
    """``value`` as an array of the reference's dtype and the indexed shape (JAX's rules: the
    shape exactly, no broadcasting; the dtype exactly unless ``cast`` and ``_casts``)."""
    cur = _read(ref, idx)
    ca = get_aval(cur)
    v = jnp.asarray(value)
    va = get_aval(v)
    if va.dtype != ca.dtype:
        if not (cast and _casts(ca.dtype, va)):
            raise FunctxValueError(
                f"Invalid dtype for `{what}`: the Ref holds {np.dtype(ca.dtype).name}, the "
                f"value is {np.dtype(va.dtype).name}{where()}"
            )
        v = v.astype(ca.dtype)
    if va.shape != ca.shape:
        raise FunctxValueError(
            f"Invalid shape for `{what}`: the Ref{list(get_aval(ref._box.value).shape)} indexed "
            f"by {idx!r} has shape {ca.shape}, the value has shape {va.shape} (no "
            f"broadcasting){where()}"
        )
    return cur, v


def _write(ref, new):
    ref._box.note(True)
    ref._box.value = new


def new_ref(init_val, *, memory_space=None, kind=None) -> Ref:
    """A new mutable reference holding ``init_val`` (``jax.new_ref``).

    Arguments:
      init_val: an array or scalar (NumPy, functx or Python): the initial contents, whose shape
        and dtype the reference keeps.
      memory_space: must be None (functx has one memory space).
      kind: accepted and ignored.
    Returns:
      a ``Ref``.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> r = functx.new_ref(jnp.arange(3.0))
      >>> r[0] += 10.0
      >>> functx.freeze(r)
      Array([10.,  1.,  2.], dtype=float32)
    """
    if memory_space is not None:
        raise UnsupportedError(
            f"new_ref: memory_space={memory_space!r} is not supported (functx has one memory "
            f"space; JAX accepts it only inside jit){where()}"
        )
    if isinstance(init_val, Ref):
        raise FunctxTypeError(f"new_ref: init_val is already a Ref; read it first{where()}")
    if not (
        isinstance(init_val, (Tracer, np.ndarray, np.generic, int, float, complex))
        or hasattr(init_val, "aval")
    ):
        raise FunctxTypeError(
            f"Error interpreting argument to new_ref as an array: the value is of type "
            f"{type(init_val).__name__} (convert lists with functx.numpy.asarray){where()}"
        )
    return Ref(_refbox.Box(jnp.asarray(init_val)))


def empty_ref(ty, memory_space=None) -> Ref:
    """A new mutable reference of type ``ty`` (``jax.empty_ref``), holding zeros.

    Arguments:
      ty: what has ``shape`` and ``dtype`` (a ``ShapeDtypeStruct``, a ``ShapedArray``).
      memory_space: must be None.
    Returns:
      a ``Ref``.

    Differences from JAX: JAX's contents are unspecified and it builds one only inside ``jit``;
    functx's hold zeros, also outside ``jit``.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> r = functx.empty_ref(functx.ShapeDtypeStruct((2,), jnp.int32))
      >>> r[...] = jnp.array([4, 5], jnp.int32)
      >>> r[...]
      Array([4, 5], dtype=int32)
    """
    if not hasattr(ty, "shape") or not hasattr(ty, "dtype"):
        raise FunctxTypeError(
            f"empty_ref: ty must have a shape and a dtype (a ShapeDtypeStruct), got "
            f"{type(ty).__name__}{where()}"
        )
    return new_ref(jnp.zeros(ty.shape, ty.dtype), memory_space=memory_space)


def freeze(ref: Ref):
    """The contents of ``ref``, which is invalidated (``jax.freeze``).

    Arguments:
      ref: a ``Ref``.
    Returns:
      an array: the final contents.

    Differences from JAX: using ``ref`` afterwards raises a ValueError; JAX 0.10.2 does not
    check.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> r = functx.new_ref(jnp.ones(2))
      >>> r[1] = 3.0
      >>> functx.freeze(r)
      Array([1., 3.], dtype=float32)
    """
    _check_ref(ref, "freeze")
    value = _read(ref, ...)
    _write(ref, value)  # (a box born outside a trace changes state: threaded like a write)
    ref._box.state = "frozen"
    return value


def free_ref(ref: Ref) -> None:
    """Invalidate ``ref`` (``jax.free_ref``).

    Arguments:
      ref: a ``Ref``.
    Returns:
      None.

    Differences from JAX: using ``ref`` afterwards raises a ValueError; JAX 0.10.2 checks that
    only inside ``jit``.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> r = functx.new_ref(jnp.ones(2))
      >>> functx.free_ref(r)
      >>> r
      Ref(<freed>)
    """
    _check_ref(ref, "free_ref")
    _write(ref, ref._value("free"))
    ref._box.state = "freed"


def get(ref, idx=None):
    """``ref[idx]`` (``jax.ref.get``): read part of a reference.

    Arguments:
      ref: a ``Ref``.
      idx: an index as for arrays (``...``, integers, slices, integer arrays, a tuple of them),
        or None for all of it.
    Returns:
      an array: a copy of the indexed contents.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> r = functx.new_ref(jnp.arange(6).reshape(2, 3))
      >>> functx.ref.get(r, (1, slice(0, 2)))
      Array([3, 4], dtype=int32)
    """
    _check_ref(ref, "get")
    return _read(ref, idx)


def swap(ref, idx, value, _function_name="ref_swap"):
    """Write ``value`` into ``ref[idx]`` and return what was there (``jax.ref.swap``).

    Arguments:
      ref: a ``Ref``.
      idx: an index as for ``get`` (None for all of it).
      value: an array of exactly the indexed shape and the reference's dtype (as in JAX, an
        integer is cast to an integer dtype and a weakly typed float to a floating one).
      _function_name: the operation's name in errors.
    Returns:
      the previous contents of ``ref[idx]``.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> r = functx.new_ref(jnp.zeros(3))
      >>> functx.ref.swap(r, 0, 2.0), r[...]
      (Array(0., dtype=float32), Array([2., 0., 0.], dtype=float32))
    """
    _check_ref(ref, "swap")
    what = "swap" if _function_name == "ref_swap" else _function_name
    old, v = _checked_value(ref, idx, value, what)
    whole = ref._value()
    _write(ref, v if _whole(idx) else whole.at[idx].set(v))
    return old


def set(ref, idx, value) -> None:  # noqa: A001 (JAX's name)
    """``ref[idx] = value`` (``jax.ref.set``): replace part of a reference.

    Arguments:
      ref: a ``Ref``.
      idx: an index as for ``get`` (None for all of it).
      value: an array of exactly the indexed shape and the reference's dtype (as in JAX, an
        integer is cast to an integer dtype and a weakly typed float to a floating one).
    Returns:
      None.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> r = functx.new_ref(jnp.zeros((2, 2)))
      >>> functx.ref.set(r, 1, jnp.ones(2))
      >>> r[...]
      Array([[0., 0.],
             [1., 1.]], dtype=float32)
    """
    swap(ref, idx, value)


def addupdate(ref, idx, x) -> None:
    """``ref[idx] += x`` in one step (``jax.ref.addupdate``).

    Arguments:
      ref: a ``Ref``.
      idx: an index as for ``get`` (None for all of it).
      x: an array of exactly the indexed shape and the reference's dtype (not cast, as in
        JAX); repeated integer-array indices add once per occurrence.
    Returns:
      None.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> r = functx.new_ref(jnp.zeros(3))
      >>> functx.ref.addupdate(r, jnp.array([0, 0, 2]), jnp.ones(3))
      >>> r[...]
      Array([2., 0., 1.], dtype=float32)
    """
    _check_ref(ref, "addupdate")
    _, v = _checked_value(ref, idx, x, "addupdate", cast=False)
    whole = ref._value()
    _write(ref, whole + v if _whole(idx) else whole.at[idx].add(v))


def boxes(refs) -> list:
    """The boxes of ``refs`` (for ``jit`` and control flow, which thread them through)."""
    return [r._box for r in refs]


__all__ = [
    "AbstractRef",
    "Ref",
    "addupdate",
    "empty_ref",
    "free_ref",
    "freeze",
    "get",
    "new_ref",
    "set",
    "swap",
]

# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = missing_name_hook(__name__)
