"""``functx.Array``: an immutable array holding a NumPy buffer, and the methods it shares with
tracers. (GPU arrays are a subclass, made by the devices package; placement rules live there.)

Operators and methods call ``functx.numpy`` functions, so they behave the same on concrete arrays
(eager) and on tracers (staged into a Jaxpr). ``functx.numpy`` builds on this module, so it reaches
them through a table that ``functx.numpy`` fills at import, ``numpy_functions``; the device queries
(``Array.device``, importing a DLPack producer on a GPU, placing new arrays) go through
``device_rules``, which the devices package fills at import.
"""

from __future__ import annotations

import array as pyarray
from typing import Any, Callable

import numpy as np

from functx import dtypes
from functx._shard import Shard
from functx.core import ShapedArray
from functx.errors import FunctxError, FunctxOverflowError, FunctxTypeError, FunctxValueError
from functx.source_info import where

# --- Tables that higher modules fill at import ---------------------------------------------------
# The functx.numpy functions that the operators and methods of Array and Tracer call, by their
# functx.numpy name (the names in NUMPY_FUNCTIONS, plus "getitem" and "scatter_update" from
# functx.numpy.indexing, "real", "imag", "conjugate", "view" and "byteswap" (Array.view and
# Array.byteswap), and "array_namespace":
# a function returning the functx.numpy module, for __array_namespace__). functx.numpy fills it at
# import.
NUMPY_FUNCTIONS = (
    "abs", "add", "all", "any", "argmax", "argmin", "array", "astype", "bitwise_and",
    "bitwise_or", "bitwise_xor", "clip", "cumprod", "cumsum", "divmod", "dot", "equal",
    "floor_divide", "greater", "greater_equal", "invert", "less", "less_equal", "matmul", "max",
    "mean", "min", "multiply", "negative", "not_equal", "positive", "power", "prod", "ravel",
    "remainder", "reshape", "round", "squeeze", "stack_nested", "std", "subtract", "sum",
    "swapaxes", "transpose", "true_divide", "var",
)  # fmt: skip
numpy_functions: dict[str, Callable] = {}

# What only the devices package knows, filled by it at import:
#   "cpu_device":     the CPU device object (``Array.device`` of every host array);
#   "from_foreign":   fn(x, dtype) -> Array, a DLPack producer whose buffer is on a GPU;
#   "place_new":      fn(array, device) -> Array, a new array put on ``device`` (None: the
#                     default device), committed there when ``device`` is given;
#   "default_device": the ``functx.default_device(device)`` context manager class.
device_rules: dict[str, Any] = {}


def device_rule(name: str):
    """``device_rules[name]``, or an error saying the devices package is not imported."""
    rule = device_rules.get(name)
    if rule is None:
        raise FunctxError(f"internal: functx's devices package is not imported (no {name!r})")
    return rule


_PY_SCALARS = (bool, int, float, complex)


def is_python_scalar(x) -> bool:
    """Whether ``x`` is a Python ``bool``, ``int``, ``float`` or ``complex`` (or a subclass that
    is not a NumPy scalar): the values that take a weak type in functx, as in JAX.

    Arguments:
        x: any value.

    Returns:
        ``True`` for Python scalars, ``False`` for everything else (NumPy scalars included).

    Example:
        >>> from functx.array import is_python_scalar
        >>> import numpy as np
        >>> is_python_scalar(1.0), is_python_scalar(np.float32(1.0))
        (True, False)
    """
    return type(x) in _PY_SCALARS or (isinstance(x, _PY_SCALARS) and not isinstance(x, np.generic))


def scalar_aval(x) -> ShapedArray:
    """Python scalars are weakly typed (except bool), like JAX's."""
    if isinstance(x, bool):
        return ShapedArray((), dtypes.bool_, False)
    if isinstance(x, int):
        if not -(2**63) <= x < 2**64:
            raise FunctxOverflowError(
                f"Python int too large for any functx integer dtype: {x}{where()}"
            )
        dt = dtypes.default_int()
        if dt == dtypes.int32 and not -(2**31) <= x < 2**31:  # (jax_enable_x64 off)
            raise FunctxOverflowError(f"Python int {x} too large to convert to int32{where()}")
        return ShapedArray((), dt, True)
    if isinstance(x, float):
        return ShapedArray((), dtypes.default_float(), True)
    if isinstance(x, complex):
        return ShapedArray((), dtypes.default_complex(), True)
    raise TypeError(f"{type(x).__name__} is not a Python scalar functx accepts")


_fn = numpy_functions


def _defers(o) -> bool:
    """Whether ``array * o`` and ``array @ o`` leave the operation to ``o``: an object whose class
    outranks Array's ``__array_priority__`` (a sparse array) computes the product itself."""
    priority = getattr(type(o), "__array_priority__", 0)  # (a descriptor on NumPy's scalars)
    return isinstance(priority, int | float) and priority > ArrayMethods.__array_priority__


class ArrayMethods:
    """Operators and methods shared by Array and Tracer; each is a ``functx.numpy`` call."""

    __slots__ = ()
    __array_priority__ = 1000

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))
    T = property(lambda self: _fn["transpose"](self))
    mT = property(lambda self: _fn["swapaxes"](self, -1, -2))
    at = property(lambda self: _IndexUpdateHelper(self))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        return (self[i] for i in range(self.shape[0]))

    def __round__(self, ndigits=None):
        """``round(x)`` is an integer array (as a Python float's round), ``round(x, n)`` keeps
        the dtype (JAX's rule)."""
        out = _fn["round"](self, ndigits or 0)
        return out if ndigits is not None else _fn["astype"](out, int)

    def __contains__(self, query):
        """``query in x`` for a 1-D ``x`` and a scalar ``query``: whether some element equals it
        (JAX's rule and errors; a traced ``x`` cannot give a Python bool)."""
        if not (is_python_scalar(query) or hasattr(query, "shape")):
            raise FunctxTypeError(
                f"Array.__contains__: unsupported operand type {type(query)}{where()}"
            )
        if len(self.shape) != 1:
            raise FunctxValueError(
                f"Array.__contains__: search array must be one-dimensional, got "
                f"arr.shape={self.shape}{where()}"
            )
        if getattr(query, "shape", ()) != ():
            raise FunctxValueError(
                f"Array.__contains__: query value must be a scalar, got "
                f"query.shape={query.shape}{where()}"
            )
        return bool(_fn["any"](_fn["equal"](self, query)))

    # arithmetic
    def __add__(self, o):
        return _fn["add"](self, o)

    def __radd__(self, o):
        return _fn["add"](o, self)

    def __sub__(self, o):
        return _fn["subtract"](self, o)

    def __rsub__(self, o):
        return _fn["subtract"](o, self)

    def __mul__(self, o):
        return NotImplemented if _defers(o) else _fn["multiply"](self, o)

    def __rmul__(self, o):
        return NotImplemented if _defers(o) else _fn["multiply"](o, self)

    def __truediv__(self, o):
        return _fn["true_divide"](self, o)

    def __rtruediv__(self, o):
        return _fn["true_divide"](o, self)

    def __floordiv__(self, o):
        return _fn["floor_divide"](self, o)

    def __rfloordiv__(self, o):
        return _fn["floor_divide"](o, self)

    def __mod__(self, o):
        return _fn["remainder"](self, o)

    def __rmod__(self, o):
        return _fn["remainder"](o, self)

    def __divmod__(self, o):
        return _fn["divmod"](self, o)

    def __rdivmod__(self, o):
        return _fn["divmod"](o, self)

    def __pow__(self, o):
        return _fn["power"](self, o)

    def __rpow__(self, o):
        return _fn["power"](o, self)

    def __matmul__(self, o):
        return NotImplemented if _defers(o) else _fn["matmul"](self, o)

    def __rmatmul__(self, o):
        return NotImplemented if _defers(o) else _fn["matmul"](o, self)

    def __neg__(self):
        return _fn["negative"](self)

    def __pos__(self):
        return _fn["positive"](self)

    def __abs__(self):
        return _fn["abs"](self)

    def __invert__(self):
        return _fn["invert"](self)

    def __and__(self, o):
        return _fn["bitwise_and"](self, o)

    def __rand__(self, o):
        return _fn["bitwise_and"](o, self)

    def __or__(self, o):
        return _fn["bitwise_or"](self, o)

    def __ror__(self, o):
        return _fn["bitwise_or"](o, self)

    def __xor__(self, o):
        return _fn["bitwise_xor"](self, o)

    def __rxor__(self, o):
        return _fn["bitwise_xor"](o, self)

    def __lshift__(self, o):
        return _fn["left_shift"](self, o)

    def __rlshift__(self, o):
        return _fn["left_shift"](o, self)

    def __rshift__(self, o):
        return _fn["right_shift"](self, o)

    def __rrshift__(self, o):
        return _fn["right_shift"](o, self)

    # comparisons
    def __eq__(self, o):
        return _fn["equal"](self, o)

    def __ne__(self, o):
        return _fn["not_equal"](self, o)

    def __lt__(self, o):
        return _fn["less"](self, o)

    def __le__(self, o):
        return _fn["less_equal"](self, o)

    def __gt__(self, o):
        return _fn["greater"](self, o)

    def __ge__(self, o):
        return _fn["greater_equal"](self, o)

    __hash__ = None

    def __getitem__(self, idx):
        return _fn["getitem"](self, idx)

    def __setitem__(self, idx, value):
        raise TypeError(
            f"functx arrays are immutable: {type(self).__name__} does not support item "
            "assignment. Instead of `x[idx] = y`, write `x = x.at[idx].set(y)`."
        )

    # methods
    def astype(self, dtype, copy=False, device=None):
        out = _fn["astype"](self, dtype)
        return out if device is None else out.to_device(device)

    def view(self, dtype=None, type=None):  # noqa: A002
        """The same bits read as ``dtype`` (``jax.Array.view``, on ``lax.bitcast_convert_type``).

        Arguments:
          dtype: the new dtype (None: the array itself). With a different width the last axis
            grows or shrinks by the ratio (ValueError when it does not divide, and for a 0-d
            array). bool counts as 8 bits (a view as bool is ``!= 0`` of the bytes); a complex
            element is its real then its imaginary part.
          type: must be None (NotImplementedError otherwise, as in JAX).
        Returns:
          An array of ``dtype`` (a copy: functx arrays are immutable).
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.array([1.0, -2.0], dtype=jnp.float32).view(jnp.uint16)
          Array([    0, 16256,     0, 49152], dtype=uint16)
        """
        return _fn["view"](self, dtype, type)

    def byteswap(self):
        """The array with the bytes of each element reversed (``jax.Array.byteswap``): little
        endian read as big endian. Complex elements swap their real and imaginary parts each.

        Returns:
          An array of the same shape and dtype (one-byte dtypes: the same values).
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.arange(3, dtype=jnp.int32).byteswap()
          Array([       0, 16777216, 33554432], dtype=int32)
        """
        return _fn["byteswap"](self)

    def __array_namespace__(self, *, api_version=None):
        """The Array API namespace of functx arrays: ``functx.numpy``."""
        if api_version not in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
            raise ValueError(f"Unrecognized array API version: {api_version!r}")
        return _fn["array_namespace"]()

    def to_device(self, device, /, *, stream=None):
        """The array on ``device`` (the Array API's ``to_device``); a traced value stays as it is,
        as placement happens outside a trace."""
        if stream is not None:
            raise NotImplementedError("to_device: the stream argument is not supported")
        if type(self).__name__.endswith("Tracer") or not hasattr(self, "_value"):
            return self
        return device_rule("place_new")(self, device)

    def reshape(self, *shape, order="C"):
        shape = shape[0] if len(shape) == 1 and not isinstance(shape[0], int) else shape
        return _fn["reshape"](self, shape, order=order)

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        return _fn["transpose"](self, axes or None)

    def sum(self, axis=None, dtype=None, keepdims=False, **kw):
        return _fn["sum"](self, axis=axis, dtype=dtype, keepdims=keepdims, **kw)

    def prod(self, axis=None, dtype=None, keepdims=False, **kw):
        return _fn["prod"](self, axis=axis, dtype=dtype, keepdims=keepdims, **kw)

    def mean(self, axis=None, dtype=None, keepdims=False, **kw):
        return _fn["mean"](self, axis=axis, dtype=dtype, keepdims=keepdims, **kw)

    def var(self, axis=None, dtype=None, ddof=0, keepdims=False, **kw):
        return _fn["var"](self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, **kw)

    def std(self, axis=None, dtype=None, ddof=0, keepdims=False, **kw):
        return _fn["std"](self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, **kw)

    def max(self, axis=None, keepdims=False, **kw):
        return _fn["max"](self, axis=axis, keepdims=keepdims, **kw)

    def min(self, axis=None, keepdims=False, **kw):
        return _fn["min"](self, axis=axis, keepdims=keepdims, **kw)

    def any(self, axis=None, out=None, keepdims=False, **kw):
        return _fn["any"](self, axis=axis, keepdims=keepdims, **kw)

    def all(self, axis=None, out=None, keepdims=False, **kw):
        return _fn["all"](self, axis=axis, keepdims=keepdims, **kw)

    def argmax(self, axis=None, keepdims=False):
        return _fn["argmax"](self, axis=axis, keepdims=keepdims)

    def argmin(self, axis=None, keepdims=False):
        return _fn["argmin"](self, axis=axis, keepdims=keepdims)

    def cumsum(self, axis=None, dtype=None):
        return _fn["cumsum"](self, axis=axis, dtype=dtype)

    def cumprod(self, axis=None, dtype=None):
        return _fn["cumprod"](self, axis=axis, dtype=dtype)

    def squeeze(self, axis=None):
        return _fn["squeeze"](self, axis=axis)

    def ravel(self):
        return _fn["ravel"](self)

    def flatten(self):
        return _fn["ravel"](self)

    def swapaxes(self, a, b):
        return _fn["swapaxes"](self, a, b)

    def dot(self, o):
        return _fn["dot"](self, o)

    def clip(self, min=None, max=None):
        return _fn["clip"](self, min, max)

    def round(self, decimals=0):
        return _fn["round"](self, decimals)

    def conj(self):
        return _fn["conjugate"](self)

    def conjugate(self):
        return _fn["conjugate"](self)

    def copy(self):
        return _fn["array"](self, copy=True)

    real = property(lambda self: _fn["real"](self))
    imag = property(lambda self: _fn["imag"](self))

    # -- the jnp functions JAX's Array also has as methods (jax._src.numpy.array_methods) --
    def argpartition(self, kth, axis=-1):
        """``functx.numpy.argpartition`` as a method, with JAX's ``Array.argpartition`` signature.

        Arguments:
          kth, axis: as ``functx.numpy.argpartition`` takes them.
        Returns:
          The indices that partition the array around its ``kth`` element along ``axis``.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.asarray([3, 1, 2]).argpartition(1)
          Array([1, 2, 0], dtype=int32)
        """
        return _fn["argpartition"](self, kth, axis=axis)

    def argsort(self, axis=-1, *, kind=None, order=None, stable=True, descending=False):
        """``functx.numpy.argsort`` as a method, with JAX's ``Array.argsort`` signature.

        Arguments:
          axis, kind, order, stable, descending: as ``functx.numpy.argsort`` takes them.
        Returns:
          The indices that sort the array along ``axis`` (stable).
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.asarray([3, 1, 2]).argsort()
          Array([1, 2, 0], dtype=int32)
        """
        return _fn["argsort"](
            self, axis=axis, kind=kind, order=order, stable=stable, descending=descending
        )

    def sort(self, axis=-1, *, kind=None, order=None, stable=True, descending=False):
        """``functx.numpy.sort`` as a method, with JAX's ``Array.sort`` signature.

        Arguments:
          axis, kind, order, stable, descending: as ``functx.numpy.sort`` takes them.
        Returns:
          A sorted copy along ``axis``.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.asarray([3, 1, 2]).sort()
          Array([1, 2, 3], dtype=int32)
        """
        return _fn["sort"](
            self, axis=axis, kind=kind, order=order, stable=stable, descending=descending
        )

    def searchsorted(self, v, side="left", sorter=None, *, method="scan"):
        """``functx.numpy.searchsorted`` as a method, with JAX's ``Array.searchsorted`` signature.

        Arguments:
          v, side, sorter, method: as ``functx.numpy.searchsorted`` takes them.
        Returns:
          Where the values ``v`` go in this sorted 1-D array.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.asarray([1, 2, 3]).searchsorted(2)
          Array(1, dtype=int32)
        """
        return _fn["searchsorted"](self, v, side=side, sorter=sorter, method=method)

    def choose(self, choices, out=None, mode="raise"):
        """``functx.numpy.choose`` as a method, with JAX's ``Array.choose`` signature.

        Arguments:
          choices, out, mode: as ``functx.numpy.choose`` takes them.
        Returns:
          For each element ``i`` of this index array, ``choices[i]`` at that place.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.asarray([0, 1]).choose([jnp.asarray([1, 2]), jnp.asarray([10, 20])])
          Array([ 1, 20], dtype=int32)
        """
        return _fn["choose"](self, choices, out=out, mode=mode)

    def compress(self, condition, axis=None, *, out=None, size=None, fill_value=0):
        """``functx.numpy.compress`` as a method, with JAX's ``Array.compress`` signature.

        Arguments:
          condition, axis, out, size, fill_value: as ``functx.numpy.compress`` takes them.
        Returns:
          The slices along ``axis`` where ``condition`` is true.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.asarray([1, 2, 3]).compress(jnp.asarray([True, False, True]))
          Array([1, 3], dtype=int32)
        """
        return _fn["compress"](
            condition, self, axis=axis, out=out, size=size, fill_value=fill_value
        )

    def diagonal(self, offset=0, axis1=0, axis2=1):
        """``functx.numpy.diagonal`` as a method, with JAX's ``Array.diagonal`` signature.

        Arguments:
          offset, axis1, axis2: as ``functx.numpy.diagonal`` takes them.
        Returns:
          The diagonal of the planes ``(axis1, axis2)``.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.asarray([[1, 2], [3, 4]]).diagonal()
          Array([1, 4], dtype=int32)
        """
        return _fn["diagonal"](self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        """``functx.numpy.trace`` as a method, with JAX's ``Array.trace`` signature.

        Arguments:
          offset, axis1, axis2, dtype, out: as ``functx.numpy.trace`` takes them.
        Returns:
          The sum along the diagonal.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.asarray([[1, 2], [3, 4]]).trace()
          Array(5, dtype=int32)
        """
        return _fn["trace"](self, offset, axis1, axis2, dtype=dtype, out=out)

    def nonzero(self, *, fill_value=None, size=None):
        """``functx.numpy.nonzero`` as a method, with JAX's ``Array.nonzero`` signature.

        Arguments:
          fill_value, size: as ``functx.numpy.nonzero`` takes them.
        Returns:
          A tuple of the indices of the nonzero elements, one array per axis.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.asarray([0, 3, 0, 4]).nonzero()
          (Array([1, 3], dtype=int32),)
        """
        return _fn["nonzero"](self, size=size, fill_value=fill_value)

    def ptp(self, axis=None, out=None, keepdims=False):
        """``functx.numpy.ptp`` as a method, with JAX's ``Array.ptp`` signature.

        Arguments:
          axis, out, keepdims: as ``functx.numpy.ptp`` takes them.
        Returns:
          The range (maximum minus minimum) along ``axis``.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.asarray([[1, 5], [2, 3]]).ptp(axis=1)
          Array([4, 1], dtype=int32)
        """
        return _fn["ptp"](self, axis=axis, out=out, keepdims=keepdims)

    def repeat(self, repeats, axis=None, *, total_repeat_length=None, out_sharding=None):
        """``functx.numpy.repeat`` as a method, with JAX's ``Array.repeat`` signature.

        Arguments:
          repeats, axis, total_repeat_length, out_sharding: as ``functx.numpy.repeat`` takes them.
        Returns:
          Each element repeated ``repeats`` times along ``axis``.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.asarray([1, 2]).repeat(2)
          Array([1, 1, 2, 2], dtype=int32)
        """
        if out_sharding is not None:
            raise NotImplementedError("Array.repeat: out_sharding is not supported by functx")
        return _fn["repeat"](self, repeats, axis=axis, total_repeat_length=total_repeat_length)

    def take(
        self,
        indices,
        axis=None,
        out=None,
        mode=None,
        unique_indices=False,
        indices_are_sorted=False,
        fill_value=None,
    ):
        """``functx.numpy.take`` as a method, with JAX's ``Array.take`` signature.

        Arguments:
          indices, axis, out, mode, unique_indices, indices_are_sorted, fill_value: as
            ``functx.numpy.take`` takes them.
        Returns:
          The elements at ``indices`` along ``axis``.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.asarray([5, 6, 7]).take(jnp.asarray([2, 0]))
          Array([7, 5], dtype=int32)
        """
        return _fn["take"](
            self,
            indices,
            axis=axis,
            out=out,
            mode=mode,
            unique_indices=unique_indices,
            indices_are_sorted=indices_are_sorted,
            fill_value=fill_value,
        )

    itemsize = property(lambda self: np.dtype(self.aval.dtype).itemsize)
    nbytes = property(lambda self: np.dtype(self.aval.dtype).itemsize * self.aval.size)

    @property
    def flat(self):
        raise NotImplementedError(
            "functx Arrays do not implement the arr.flat property (neither do JAX's): use "
            "arr.flatten() or arr.ravel() instead"
        )


_ALIGN_MIN = 1 << 16


def _aligned_copy(x: np.ndarray, dtype) -> np.ndarray:
    """A C-contiguous copy of ``x`` (cast like ``np.array(x, dtype)``) starting on a 64-byte
    boundary, so that compiled kernels' vector loads do not straddle cache lines (NumPy aligns
    to 16 bytes)."""
    dtype = np.dtype(dtype)
    n = x.size * dtype.itemsize
    raw = np.empty(n + 64, np.uint8)
    skip = -raw.ctypes.data % 64
    out = raw[skip : skip + n].view(dtype).reshape(x.shape)
    np.copyto(out, x, casting="unsafe")
    return out


class _ArrayType(type):
    """``Array``'s metaclass: ``isinstance(x, functx.Array)`` is also True for the tracers of
    every transform (``jit``, ``vmap``, ``grad``, ...), as JAX's ``jax.Array`` is for its tracers,
    so user code that checks for an array works the same traced or not. ``type(x)`` is
    unchanged, and subclasses (``UncommittedArray``, ``GpuArray``) keep the plain check. Inside
    functx a test that must tell a concrete array from a tracer checks for the tracer first, or
    uses ``is_concrete_array``."""

    def __instancecheck__(cls, obj):
        if type.__instancecheck__(cls, obj):
            return True
        return cls is Array and isinstance(obj, ArrayMethods)


def is_concrete_array(x) -> bool:
    """Whether ``x`` is a ``functx.Array`` with a buffer (not a tracer)."""
    return type.__instancecheck__(Array, x)


class Array(ArrayMethods, metaclass=_ArrayType):
    """An immutable n-dimensional array on the CPU (a read-only NumPy buffer underneath), as
    ``jax.Array``.

    Arrays on a GPU are instances too (the devices package's ``GpuArray``); ``x.device`` says
    where an array lives. Tracers are instances too for ``isinstance`` (as in JAX), never for
    ``type(x)``.

    Arguments:
      value: an array-like (NumPy array, nested lists, Python scalar, another Array).
      dtype: the dtype to convert to (default: the value's, canonicalized as JAX does).
    Returns:
      The Array; users normally make one with ``functx.numpy.array`` or ``asarray``.

    Differences from JAX: ``isinstance(x, functx.Array)`` is True for the tracers of every
    transform, as in JAX, but ``type(x)`` of a traced value is functx's ``Tracer``.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> x = jnp.arange(3.0)
      >>> isinstance(x, functx.Array), x.shape, x.dtype
      (True, (3,), dtype('float32'))
      >>> x.at[1].set(5.0)
      Array([0., 5., 2.], dtype=float32)
    """

    __slots__ = ("_value", "aval", "__weakref__")

    def __init__(self, value, dtype=None):
        arr = Array.from_value(value, dtype)
        if type(arr) not in (Array, UncommittedArray):
            raise TypeError(
                f"functx.Array(...) makes host arrays; for data on a GPU "
                f"({type(value).__name__}) use functx.numpy.asarray(x), which keeps "
                "it on its device"
            )
        self._value, self.aval = arr._value, arr.aval

    @classmethod
    def _new(cls, value: np.ndarray, aval: ShapedArray) -> Array:
        value.setflags(write=False)  # (faster than assigning flags.writeable)
        self = object.__new__(cls)
        self._value = value
        self.aval = aval
        return self

    @classmethod
    def from_value(cls, x, dtype=None, weak_type=None) -> Array:
        """Convert an Array, NumPy array or scalar, nested list or DLPack producer (copying).
        A DLPack producer on a CUDA GPU (a torch tensor, say) becomes a GPU array on that GPU."""
        if is_concrete_array(x):
            if dtype is None or dtypes.canonicalize(dtype) == x.dtype:
                return x
            if type(x) not in (Array, UncommittedArray):  # on a device: convert there
                return _fn["astype"](x, dtype)
            return cls._new(
                x._value.astype(dtypes.canonicalize(dtype)),
                ShapedArray(x.shape, dtypes.canonicalize(dtype)),
            )
        weak = False
        if is_python_scalar(x):
            # (with a dtype given, the int need not fit the default integer: uint32's max)
            aval = scalar_aval(x) if dtype is None else ShapedArray((), dtypes.canonicalize(dtype))
            weak = aval.weak_type and dtype is None
            try:
                value = np.asarray(
                    x, dtypes.canonicalize(dtype) if dtype is not None else aval.dtype
                )
            except OverflowError:
                raise FunctxOverflowError(
                    f"Python int {x} is too large to convert to "
                    f"{dtypes.canonicalize(dtype) if dtype is not None else aval.dtype} (use "
                    f"a wider dtype, or enable x64){where()}"
                ) from None
        elif isinstance(x, np.ndarray) and x.nbytes >= _ALIGN_MIN:
            value = _aligned_copy(x, dtypes.canonicalize(x.dtype if dtype is None else dtype))
        elif isinstance(x, (np.ndarray, np.generic)):
            value = np.array(x, dtype=None if dtype is None else dtypes.canonicalize(dtype))
        elif hasattr(x, "__dlpack__") and not isinstance(x, (list, tuple)):
            if _on_device(x):
                return device_rule("from_foreign")(x, dtype)
            value = _from_dlpack(x)
            if dtype is not None:
                value = value.astype(dtypes.canonicalize(dtype))
        elif isinstance(x, (list, tuple)):
            return _from_sequence(x, dtype)
        elif hasattr(x, "__jax_array__"):  # (JAX's protocol for array-like classes)
            return cls.from_value(x.__jax_array__(), dtype, weak_type)
        elif hasattr(x, "__array__") or isinstance(x, (memoryview, bytearray, pyarray.array)):
            value = np.array(x)  # (buffers too: array.array, memoryview, bytearray, as JAX's)
            if dtype is not None:
                value = value.astype(dtypes.canonicalize(dtype))
        else:
            raise FunctxTypeError(
                f"functx cannot make an array from {type(x).__name__}: {x!r:.80}; pass arrays or "
                f"Python scalars, or register the class as a pytree node "
                f"(functx.tree_util.register_pytree_node){where()}"
            )
        if weak_type is not None:
            weak = weak_type
        dt = dtypes.canonicalize(value.dtype)
        if dt != value.dtype:  # a 64-bit NumPy input while jax_enable_x64 is off
            value = value.astype(dt)
        return cls._new(value, ShapedArray(value.shape, dt, weak))

    shape = property(lambda self: self._value.shape)
    dtype = property(lambda self: self._value.dtype)
    weak_type = property(lambda self: self.aval.weak_type)
    device = property(lambda self: _cpu_device())
    # see the devices package: 0-d host arrays are scalars, and UncommittedArray is not committed
    committed = property(lambda self: self._value.ndim > 0)

    def devices(self):
        """The set of devices the array lives on (one), like ``jax.Array.devices()``."""
        return {self.device}

    @property
    def addressable_shards(self) -> list:
        """The shards of the array this process holds (``jax.Array.addressable_shards``): one
        ``functx.Shard`` holding the whole array, on its device."""
        return [Shard(self.device, None, self.shape, self)]

    global_shards = addressable_shards  # (one process: every shard is addressable)

    def __array__(self, dtype=None, copy=None):
        """The read-only buffer itself (zero-copy) unless a copy or another dtype is asked for."""
        if type(self._value) is _DeletedBuffer:
            self._value._fail()
        if copy:
            return np.array(self._value, dtype=dtype)
        if dtype is None or np.dtype(dtype) == self._value.dtype:
            return self._value
        if copy is False:  # NumPy 2's protocol: refuse rather than copy silently
            raise ValueError(
                f"converting a functx {self.dtype} array to {np.dtype(dtype)} needs "
                "a copy, but copy=False was requested"
            )
        return self._value.astype(dtype)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of the array's data (the Array API's protocol, JAX's signature).

        A consumer that speaks DLPack 1.0 (``max_version >= (1, 0)``, as ``numpy.from_dlpack``)
        gets the read-only buffer itself; an older one gets a writable copy, since the older
        protocol cannot mark a buffer read-only (``copy=False`` then raises BufferError)."""
        if max_version is None or tuple(max_version) < (1, 0):
            if copy is False:
                raise BufferError(
                    "__dlpack__: a DLPack consumer older than 1.0 cannot receive a read-only "
                    "functx buffer without a copy, but copy=False"
                )
            return np.array(self._value).__dlpack__(stream=stream, dl_device=dl_device)
        return self._value.__dlpack__(
            stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
        )

    def __dlpack_device__(self):
        """``(device type, device id)`` of the data in DLPack's terms: ``(1, 0)``, the host."""
        return self._value.__dlpack_device__()

    def __bool__(self):
        return bool(self._value)

    def __int__(self):
        return int(self._value)

    def __float__(self):
        return float(self._value)

    def __complex__(self):
        return complex(self._value)

    def __index__(self):
        if not dtypes.is_int(self.dtype) and self.dtype != dtypes.bool_:
            raise TypeError(f"only integer arrays can be used as an index, not {self.dtype}")
        return int(self._value)

    def item(self, *args):
        return self._value.item(*args)

    def tolist(self):
        return self._value.tolist()

    def tobytes(self, order="C"):
        """The elements' bytes, in C (row-major) or Fortran ``order`` (NumPy's ``tobytes``)."""
        return self._value.tobytes(order)

    def __format__(self, spec):
        return format(self._value.item(), spec) if self.ndim == 0 else format(str(self), spec)

    def __repr__(self):
        body = np.array2string(self._value, separator=", ", prefix="Array(")
        if self._value.size == 0:
            body += f", shape={self._value.shape}"  # as JAX: `[]` alone is ambiguous
        extra = ", weak_type=True" if self.aval.weak_type else ""
        return f"Array({body}, dtype={self.dtype}{extra})"

    def __str__(self):
        return str(self._value)

    def block_until_ready(self):
        return self

    def delete(self):
        """Free the array's buffer (JAX's ``Array.delete``): any later use of its data is a
        RuntimeError; ``shape`` and ``dtype`` stay readable.

        Returns:
          None.
        Example:
          >>> import functx.numpy as jnp
          >>> x = jnp.ones(3)
          >>> x.delete()
          >>> x.is_deleted(), x.shape
          (True, (3,))
        """
        if not self.is_deleted():
            self._value = _DeletedBuffer(self.aval)

    def is_deleted(self) -> bool:
        """Whether ``delete()`` freed the array's buffer (JAX's ``Array.is_deleted``).

        Returns:
          a bool.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.zeros(2).is_deleted()
          False
        """
        return type(self._value) is _DeletedBuffer

    def unsafe_buffer_pointer(self) -> int:
        """The address of the array's first element in host memory (JAX's
        ``Array.unsafe_buffer_pointer``; valid while the array lives).

        Returns:
          an int.
        Example:
          >>> import functx.numpy as jnp
          >>> isinstance(jnp.ones(4).unsafe_buffer_pointer(), int)
          True
        """
        return int(self._value.ctypes.data)

    def copy_to_host_async(self):
        """Start copying the array to the host (JAX's ``Array.copy_to_host_async``); a host
        array is already there, so this does nothing.

        Returns:
          None.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.ones(2).copy_to_host_async()
        """
        if self.is_deleted():
            self._value.ctypes  # noqa: B018 - raises the deleted-array RuntimeError

    def __reduce__(self):
        return (Array, (np.array(self._value),))


class _DeletedBuffer:
    """What a deleted Array holds instead of its buffer: shape, dtype, ndim and size stay
    readable (as JAX's aval does); any other use raises JAX's RuntimeError."""

    __slots__ = ("_aval",)

    def __init__(self, aval):
        self._aval = aval

    shape = property(lambda self: self._aval.shape)
    dtype = property(lambda self: self._aval.dtype)
    ndim = property(lambda self: len(self._aval.shape))
    size = property(lambda self: int(np.prod(self._aval.shape, dtype=np.int64)))

    def _fail(self, *args, **kwargs):
        dims = ",".join(map(str, self._aval.shape))
        raise RuntimeError(f"Array has been deleted with shape={self._aval.dtype.name}[{dims}].")

    __array__ = __getattr__ = __getitem__ = __len__ = __iter__ = __bool__ = __str__ = _fail
    __int__ = __float__ = __index__ = __complex__ = _fail


class UncommittedArray(Array):
    """A host array built from Python scalars alone (``zeros``, ``iota``, ``eye``, ...): like
    JAX's uncommitted arrays it goes with the device of the committed array it meets (see
    the devices package). Everything else about it is an ``Array``."""

    __slots__ = ()
    committed = property(lambda self: False)


def _cpu_device():
    return device_rule("cpu_device")


def _on_device(x) -> bool:
    """Whether a DLPack producer's buffer is off the host (DLPack device types 1 and 3 are host
    memory)."""
    dev = getattr(x, "__dlpack_device__", None)
    if dev is None:
        return False
    try:
        kind = int(dev()[0])
    except Exception:  # noqa: BLE001 - a producer that cannot say: let the host import try
        return False
    return kind not in (1, 3)


def _from_dlpack(x) -> np.ndarray:
    """A copy of a DLPack producer's data (a copy: functx arrays are immutable)."""
    try:
        return np.array(np.from_dlpack(x))
    except (BufferError, RuntimeError, TypeError):
        if type(x).__module__.partition(".")[0] != "torch":
            # a dtype DLPack cannot carry into NumPy (a JAX bfloat16 array): the producer's own
            # NumPy conversion (ml_dtypes' bfloat16 for JAX)
            if hasattr(x, "__array__"):
                return np.array(x)
            raise
    # torch: NumPy's DLPack import has no bfloat16 and refuses tensors that require grad.
    import torch

    t = x.detach()
    if t.dtype == torch.bfloat16:
        return np.array(np.from_dlpack(t.view(torch.int16))).view(dtypes.bfloat16)
    return np.array(np.from_dlpack(t))


def _from_sequence(x, dtype):
    """Nested lists may mix arrays, tracers and Python scalars: ``jnp.array([a, 1.0])``."""
    leaves = []

    def walk(y):
        if isinstance(y, (list, tuple)):
            for z in y:
                walk(z)
        else:
            leaves.append(y)

    walk(x)
    if any(not is_python_scalar(v) and not isinstance(v, (np.ndarray, np.generic)) for v in leaves):
        return _fn["stack_nested"](x, dtype)
    if dtype is None:
        if all(is_python_scalar(v) for v in leaves) and leaves:
            dt, weak = dtypes.result_type(
                *[(scalar_aval(v).dtype, scalar_aval(v).weak_type) for v in leaves]
            )
            value = _seq_array(x, dt)
            return Array._new(value, ShapedArray(value.shape, dt, False))
        avals = [
            (scalar_aval(v).dtype, True)
            if is_python_scalar(v)
            else (dtypes.canonicalize(np.asarray(v).dtype), False)
            for v in leaves
        ]
        dt = dtypes.result_type(*avals)[0] if avals else dtypes.default_float()
    else:
        dt = dtypes.canonicalize(dtype)
    value = _seq_array(x, dt)
    return Array._new(value, ShapedArray(value.shape, dt, False))


def _seq_array(x, dt):
    """``np.array(x, dt)`` of a nested list; a ragged list or an out-of-range int is a functx
    error (ValueError / OverflowError, as in JAX)."""
    try:
        return np.array(x, dtype=dt)
    except OverflowError as e:
        raise FunctxOverflowError(
            f"cannot make an {dt} array from {x!r:.60}: {e}{where()}"
        ) from None
    except ValueError as e:
        raise FunctxValueError(
            f"cannot make an array from {x!r:.60}: the nested sequences "
            f"must have a regular shape ({e}){where()}"
        ) from None


class _IndexUpdateHelper:
    __slots__ = ("array",)

    def __init__(self, array):
        self.array = array

    def __getitem__(self, idx):
        return _IndexUpdateRef(self.array, idx)


_AT_KEYWORDS = (
    "indices_are_sorted",
    "unique_indices",
    "mode",
    "out_sharding",
    "wrap_negative_indices",
)


class _IndexUpdateRef:
    """``x.at[idx]``: functional updates with JAX's semantics.

    Every method takes JAX's keywords: ``indices_are_sorted`` and ``unique_indices`` (promises,
    accepted), ``mode`` (``None``, ``"fill"``/``"drop"`` and ``"promise_in_bounds"`` drop an
    update out of bounds, ``"clip"`` clamps its index; for ``get``, ``None`` and ``"clip"`` clamp,
    ``"fill"`` returns ``fill_value``), ``out_sharding`` (accepted) and
    ``wrap_negative_indices`` (``True``: ``-1`` is the last element, as NumPy).
    """

    __slots__ = ("array", "index")

    def __init__(self, array, index):
        self.array = array
        self.index = index

    def _scatter(self, values, op, kw):
        for k in kw:
            if k not in _AT_KEYWORDS:
                name = {None: "set", "sub": "subtract", "div": "divide", "pow": "power"}
                raise TypeError(
                    f"_IndexUpdateRef.{name.get(op, op)}() got an unexpected keyword argument {k!r}"
                )
        kw.pop("indices_are_sorted", None)
        kw.pop("unique_indices", None)
        kw.pop("out_sharding", None)
        return _fn["scatter_update"](self.array, self.index, values, op, **kw)

    def get(
        self,
        *,
        indices_are_sorted=False,
        unique_indices=False,
        mode=None,
        fill_value=None,
        out_sharding=None,
        wrap_negative_indices=True,
    ):
        """``x[idx]``, with an out-of-bounds ``mode`` and ``fill_value``."""
        return _fn["getitem"](
            self.array,
            self.index,
            mode=mode,
            fill_value=fill_value,
            wrap_negative_indices=wrap_negative_indices,
        )

    def set(self, values, **kw):
        """``x[idx] = values``; of several updates to one place the last lands."""
        return self._scatter(values, None, kw)

    def apply(self, func, **kw):
        """``x[idx] = func(x[idx])``; an element indexed ``n`` times gets ``func`` ``n`` times."""
        return self._scatter(func, "apply", kw)

    def add(self, values, **kw):
        """``x[idx] += values`` (repeated indices add up)."""
        return self._scatter(values, "add", kw)

    def subtract(self, values, **kw):
        """``x[idx] -= values`` (repeated indices subtract each)."""
        return self._scatter(values, "sub", kw)

    def multiply(self, values, **kw):
        """``x[idx] *= values`` (repeated indices multiply up)."""
        return self._scatter(values, "mul", kw)

    mul = multiply

    def divide(self, values, **kw):
        """``x[idx] /= values`` (true division: an integer array gives floats, as JAX)."""
        return self._scatter(values, "div", kw)

    def power(self, values, **kw):
        """``x[idx] **= values``."""
        return self._scatter(values, "pow", kw)

    def min(self, values, **kw):
        """``x[idx] = minimum(x[idx], values)``."""
        return self._scatter(values, "min", kw)

    def max(self, values, **kw):
        """``x[idx] = maximum(x[idx], values)``."""
        return self._scatter(values, "max", kw)
