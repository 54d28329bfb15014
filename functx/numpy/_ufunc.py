"""``functx.numpy.ufunc`` and ``frompyfunc``: NumPy's universal-function methods (``reduce``,
``accumulate``, ``at``, ``reduceat``, ``outer``) on functx's elementwise functions, as JAX has them.

Each of JAX's fourteen ufuncs (``add``, ``multiply``, ``maximum``, ...) wraps functx's function of
that name with a table row of fast methods (``add.reduce`` is ``sum``, ``add.at`` is
``.at[].add``); a method without a fast form runs the function in a ``lax.scan`` (``reduce``,
``accumulate``) or a ``lax.fori_loop`` over the indices (``at``, ``reduceat``), in JAX's order,
so ``jit``, ``grad`` and ``vmap`` see ordinary functx programs.
"""

from __future__ import annotations

import operator

import numpy as np

from functx import dtypes, ops
from functx._laxextra import reduce_xor
from functx.array import Array
from functx.control.scan import scan
from functx.control.while_loop import fori_loop
from functx.errors import FunctxTypeError, FunctxValueError, UnsupportedError
from functx.numpy import _core as C
from functx.numpy._extra import vectorize
from functx.source_info import where as _where_line
from functx.tracing import ShapeDtypeStruct, Tracer, eval_shape, get_aval


class ufunc:
    """A universal function (``jax.numpy.ufunc``): an elementwise function of ``nin`` arrays with
    NumPy's methods ``reduce``, ``accumulate``, ``at``, ``reduceat`` and ``outer``.

    Arguments:
      func: the elementwise function (called on scalars by ``frompyfunc``'s ufuncs: it is
        vectorized unless ``call`` is given).
      nin, nout: its numbers of inputs and outputs.
      name: its name (default ``func.__name__``).
      nargs: the number of arguments a call takes (default ``nin``).
      identity: the identity of a binary ufunc's reduction (None: none).
      call, reduce, accumulate, at, reduceat: faster implementations of the methods (optional).
    Returns:
      the ufunc object.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.add.reduce(jnp.array([1, 2, 3]))
      Array(6, dtype=int32)
      >>> jnp.multiply.outer(jnp.array([1, 2]), jnp.array([3, 4, 5]))
      Array([[ 3,  4,  5],
             [ 6,  8, 10]], dtype=int32)
      >>> jnp.add.at(jnp.zeros(3), jnp.array([0, 0, 2]), 1.0, inplace=False)
      Array([2., 0., 1.], dtype=float32)
    """

    def __init__(
        self,
        func,
        /,
        nin,
        nout,
        *,
        name=None,
        nargs=None,
        identity=None,
        call=None,
        reduce=None,
        accumulate=None,
        at=None,
        reduceat=None,
    ):
        if not callable(func):
            raise FunctxTypeError(f"ufunc: func must be callable, got {func!r}")
        self.__name__ = name or getattr(func, "__name__", "ufunc")
        self.__doc__ = getattr(call or func, "__doc__", None)
        self.nin, self.nout = operator.index(nin), operator.index(nout)
        self.nargs = self.nin if nargs is None else operator.index(nargs)
        self.identity = identity
        self._func = func
        self._call = call or vectorize(func)
        self._reduce, self._accumulate = reduce, accumulate
        self._at, self._reduceat = at, reduceat

    def __repr__(self):
        return f"<jnp.ufunc '{self.__name__}'>"

    def __hash__(self):
        return hash((self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs))

    def __eq__(self, other):
        return isinstance(other, ufunc) and (
            self._func,
            self.__name__,
            self.identity,
            self.nin,
            self.nout,
            self.nargs,
        ) == (other._func, other.__name__, other.identity, other.nin, other.nout, other.nargs)

    def __call__(self, *args, out=None, where=None):
        if out is not None or where is not None:  # (jnp.add and co. are called often)
            kw = "out" if out is not None else "where"
            raise NotImplementedError(f"{kw} argument of {self}{_where_line()}")
        if len(args) != self.nargs:
            raise FunctxTypeError(
                f"{self}: expected {self.nargs} positional arguments, got {len(args)}"
                f"{_where_line()}"
            )
        return self._call(*args)

    def _binary(self, method):
        if self.nin != 2 or self.nout != 1:
            raise FunctxValueError(
                f"{method} is only supported for binary ufuncs with a single output, got "
                f"{self} with nin={self.nin}, nout={self.nout}{_where_line()}"
            )

    def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=None):
        """``a`` reduced along ``axis`` by this binary ufunc (``ufunc.reduce``).

        Arguments:
          a: an array.
          axis: an int, a tuple of ints, or None (every axis).
          dtype: the dtype to reduce in (default ``a``'s).
          out: must be None.
          keepdims: keep the reduced axes with size 1.
          initial: the reduction's starting value (default the identity, else the first entry).
          where: a boolean mask of the entries to include (needs ``initial`` or an identity).
        Returns:
          the reduced array.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.maximum.reduce(jnp.array([[1, 5], [4, 2]]), axis=1)
          Array([5, 4], dtype=int32)
        """
        self._binary("reduce")
        _no_out(out, f"{self.__name__}.reduce")
        if self._reduce is not None:
            return self._reduce(
                a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where
            )
        return self._reduce_via_scan(a, axis, dtype, keepdims, initial, where)

    def _in_result_dtype(self, a, dtype):
        """``a`` as an array of ``dtype``, or of the dtype a call on two of its entries gives."""
        a = C.asarray(a)
        if dtype is None:
            entry = ShapeDtypeStruct((), a.dtype)
            dtype = eval_shape(self._call, *[entry] * self.nin).dtype
        return a.astype(dtype)

    def _reduce_via_scan(self, a, axis, dtype, keepdims, initial, where):
        a = self._in_result_dtype(a, dtype)
        nd = a.ndim
        axes = _axes(a, axis, self.__name__)
        if len(axes) > 1 and axis is not None:  # (NumPy: not for a non-reorderable function)
            raise UnsupportedError(
                f"{self.__name__}.reduce: a tuple of axes {axis} (as in JAX, one axis or None)"
                f"{_where_line()}"
            )
        init = self.identity if initial is None else initial
        if where is not None and init is None:
            raise FunctxValueError(
                f"reduction operation {self.__name__} does not have an identity, so to use a "
                f"where mask one has to specify 'initial'{_where_line()}"
            )
        rest = [d for d in range(nd) if d not in axes]
        size = int(np.prod([a.shape[d] for d in axes]))
        shape = (size, *[a.shape[d] for d in rest])
        flat = C.transpose(a, (*axes, *rest)).reshape(shape)
        # a masked-out entry leaves the carry as it is (filling it with ``initial`` would apply
        # the function to it: wrong where ``initial`` is not the identity, as for subtract)
        mask = None
        if where is not None:
            mask = C.transpose(C.broadcast_to(where, a.shape), (*axes, *rest)).reshape(shape)
        if init is None:
            if size == 0:
                raise FunctxValueError(
                    f"zero-size array to reduction operation {self.__name__} which has no "
                    f"identity{_where_line()}"
                )
            carry, xs = flat[0], flat[1:]  # (no mask here: a mask needs an initial value)
        else:
            if not isinstance(init, (Array, Tracer)):  # (an identity of -1 is all ones)
                init = np.asarray(init).astype(a.dtype)
            carry, xs = C.broadcast_to(C.asarray(init).astype(a.dtype), shape[1:]), flat

        def step(acc, x_keep):
            x, keep = x_keep
            new = C.asarray(self._call(acc, x)).astype(acc.dtype)
            return (new if keep is None else C.where(keep, new, acc)), None

        result, _ = scan(step, carry, (xs, mask))
        if keepdims:
            result = C.expand_dims(result, axes)
        return result

    def accumulate(self, a, axis=0, dtype=None, out=None):
        """The running reductions of ``a`` along ``axis`` (``ufunc.accumulate``).

        Arguments:
          a: an array.
          axis: the axis (an int).
          dtype: the dtype to accumulate in (default ``a``'s).
          out: must be None.
        Returns:
          an array of ``a``'s shape.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.multiply.accumulate(jnp.array([1, 2, 3, 4]))
          Array([ 1,  2,  6, 24], dtype=int32)
        """
        self._binary("accumulate")
        _no_out(out, f"{self.__name__}.accumulate")
        if self._accumulate is not None:
            return self._accumulate(a, axis=axis, dtype=dtype)
        a = self._in_result_dtype(a, dtype)
        if a.ndim == 0:
            raise FunctxValueError(f"{self.__name__}.accumulate: a must be an array, not 0-d")
        axis = C._canon_axis(axis, a.ndim, f"{self.__name__}.accumulate axis")
        moved = C.moveaxis(a, axis, 0)
        if moved.shape[0] == 0:
            return a

        def step(acc, x):
            acc = C.asarray(self._call(acc, x)).astype(acc.dtype)
            return acc, acc

        _, ys = scan(step, moved[0], moved[1:])
        return C.moveaxis(C.concatenate([moved[:1], ys]), 0, axis)

    def at(self, a, indices, b=None, /, *, inplace=True):
        """``a`` with this ufunc applied at ``indices`` (``ufunc.at``), functionally: repeated
        indices apply it once per occurrence.

        Arguments:
          a: an array.
          indices: an index (an int, an integer array or a tuple of them).
          b: the second operand of a binary ufunc (broadcast to the indexed entries).
          inplace: must be False (functx arrays are immutable, as JAX's).
        Returns:
          the updated copy of ``a``.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.maximum.at(jnp.zeros(3), jnp.array([1, 1]), jnp.array([2.0, 5.0]), inplace=False)
          Array([0., 5., 0.], dtype=float32)
        """
        if inplace:
            raise NotImplementedError(
                f"{self.__name__}.at: in-place updates are not supported (functx arrays are "
                f"immutable); pass inplace=False for the updated copy{_where_line()}"
            )
        if self.nout != 1 or self.nin not in (1, 2):
            raise FunctxValueError(f"{self}.at is only supported for one output and nin <= 2")
        if (b is None) != (self.nin == 1):
            raise FunctxTypeError(
                f"{self}.at: {'no' if self.nin == 1 else 'a'} second operand b expected"
                f"{_where_line()}"
            )
        if self._at is not None:
            return self._at(a, indices, b)
        return self._at_via_loop(C.asarray(a), indices, b)

    def _at_via_loop(self, a, indices, b):
        idx = indices if isinstance(indices, tuple) else (indices,)
        idx = C.broadcast_arrays(*[C.asarray(i) for i in idx])
        n = int(np.prod(idx[0].shape)) if idx else 1
        flat = [i.reshape(-1) for i in idx]
        item = a.shape[len(idx) :]
        entries = [ShapeDtypeStruct((), a.dtype)]
        if b is not None:
            bav = get_aval(b)  # (a Python scalar stays weakly typed, as in JAX)
            entries.append(ShapeDtypeStruct((), bav.dtype, weak_type=bav.weak_type))
            b = C.asarray(b)
        a = a.astype(eval_shape(self._call, *entries).dtype)  # (JAX's: the call's dtype)
        if b is not None:
            b = C.broadcast_to(b.astype(a.dtype), (*idx[0].shape, *item)).reshape((n, *item))

        def body(k, acc):
            where = tuple(i[k] for i in flat)
            args = (acc[where],) if b is None else (acc[where], b[k])
            return acc.at[where].set(C.asarray(self._call(*args)).astype(acc.dtype))

        return fori_loop(0, n, body, a)

    def reduceat(self, a, indices, axis=0, dtype=None, out=None):
        """Reductions of ``a`` over the segments that start at ``indices`` along ``axis``
        (``ufunc.reduceat``; where an index is not below the next, that entry alone).

        Arguments:
          a: an array.
          indices: a 1-d integer array of segment starts.
          axis: the axis (an int).
          dtype: the dtype to reduce in (default ``a``'s).
          out: must be None.
        Returns:
          an array with ``len(indices)`` entries along ``axis``.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.add.reduceat(jnp.arange(8), jnp.array([0, 4, 1, 5]))
          Array([ 6,  4, 10, 18], dtype=int32)
        """
        self._binary("reduceat")
        _no_out(out, f"{self.__name__}.reduceat")
        if self._reduceat is not None:
            return self._reduceat(a, indices, axis=axis, dtype=dtype)
        a = self._in_result_dtype(a, dtype)
        ind = C.asarray(indices)
        if ind.ndim != 1 or not dtypes.issubdtype(ind.dtype, np.integer):
            raise FunctxValueError(
                f"{self.__name__}.reduceat: indices must be a 1-d integer array, got "
                f"{get_aval(ind)}{_where_line()}"
            )
        axis = C._canon_axis(axis, a.ndim, f"{self.__name__}.reduceat axis")
        moved = C.moveaxis(a, axis, 0)
        n = moved.shape[0]
        out = moved.at[ind].get(mode="fill")  # each segment's first entry (JAX's fill past n)
        ends = C.concatenate([ind[1:], C.asarray([n], ind.dtype)])
        ends = C.where(ends > ind, ends, ind + 1)  # a non-increasing start: that entry alone

        def body(k, acc):
            # every segment j takes entry k when ind[j] < k < ends[j]
            inside = (ind < k) & (k < ends)
            item = moved[k]
            cand = C.asarray(self._call(acc, item)).astype(acc.dtype)
            mask = inside.reshape((-1,) + (1,) * (acc.ndim - 1))
            return C.where(mask, cand, acc)

        return C.moveaxis(fori_loop(0, n, body, out), 0, axis)

    def outer(self, A, B, /):
        """This binary ufunc of every pair of ``A``'s and ``B``'s entries (``ufunc.outer``).

        Arguments:
          A, B: arrays.
        Returns:
          an array of shape ``A.shape + B.shape``.
        Example:
          >>> import functx.numpy as jnp
          >>> jnp.subtract.outer(jnp.array([10, 20]), jnp.array([1, 2]))
          Array([[ 9,  8],
                 [19, 18]], dtype=int32)
        """
        self._binary("outer")
        A, B = C.asarray(A), C.asarray(B)
        return self(A.reshape(A.shape + (1,) * B.ndim), B)


def _no_out(out, method):
    if out is not None:
        raise NotImplementedError(f"out argument of {method}(){_where_line()}")


def frompyfunc(func, /, nin, nout, *, identity=None):
    """A ufunc from a scalar Python function (``jax.numpy.frompyfunc``): calls vectorize it over
    broadcast arrays, and the methods run it in loops (``ufunc``).

    Arguments:
      func: a function of ``nin`` scalars (written with functx operations, so it traces).
      nin, nout: its numbers of inputs and outputs.
      identity: the identity of its reduction (None: none).
    Returns:
      a ``ufunc``.
    Example:
      >>> import functx.numpy as jnp
      >>> hypot = jnp.frompyfunc(lambda x, y: jnp.sqrt(x * x + y * y), 2, 1, identity=0.0)
      >>> hypot.reduce(jnp.array([3.0, 4.0, 12.0]))
      Array(13., dtype=float32)
    """
    return ufunc(func, nin, nout, identity=identity)


def _reducer(fn, takes_dtype=False):
    """``reduce`` through ``fn``, a jnp reduction of JAX's keyword arguments; with
    ``takes_dtype`` (``sum``, ``prod``) it reduces in ``dtype`` (a cast alone left it to widen
    small integers to the default int: ``add.reduce(x, dtype='int8')`` gave int32)."""

    def reduce(a, *, axis, dtype, keepdims, initial, where):
        kw = {"axis": axis, "keepdims": keepdims, "where": where}
        if initial is not None:
            kw["initial"] = initial
        if dtype is not None:
            a = C.asarray(a).astype(dtype)
            if takes_dtype:
                kw["dtype"] = dtype
        return fn(a, **kw)

    return reduce


def _axes(a, axis, name):
    axes = tuple(range(a.ndim)) if axis is None else axis
    axes = (axes,) if isinstance(axes, int) else tuple(axes)
    return tuple(sorted(C._canon_axis(ax, a.ndim, f"{name}.reduce axis") for ax in axes))


def _lax_reducer(name, reduce_op, binary, identity, to_bool=False):
    """``reduce`` through a reduction primitive (``reduce_op(a, axes)``) of JAX's bitwise and
    logical ufuncs: ``where`` fills ``identity``, ``initial`` is combined by ``binary``."""

    def reduce(a, *, axis, dtype, keepdims, initial, where):
        a = C.asarray(a)
        a = a.astype(np.bool_) if to_bool else a
        a = a.astype(dtype) if dtype is not None else a
        axes = _axes(a, axis, name)
        if where is not None:
            a = C.where(where, a, C.asarray(np.asarray(identity).astype(a.dtype)))
        r = reduce_op(a, axes)
        if initial is not None:
            r = binary(r, C.asarray(initial).astype(r.dtype))
        return C.expand_dims(r, axes) if keepdims else r

    return reduce


def _logsumexp(base2):
    """``logaddexp.reduce`` (``logaddexp2.reduce`` with ``base2``): log(sum(exp(a))) shifted by
    the largest entry, in the inexact dtype ``a`` promotes to (JAX's; ``dtype`` is not used
    there either)."""
    exp, log = (C.exp2, C.log2) if base2 else (C.exp, C.log)
    pair = C.logaddexp2 if base2 else C.logaddexp

    def reduce(a, *, axis, dtype, keepdims, initial, where):
        a = C.asarray(a)
        # (JAX's base 2 scales a by log(2), a weak float: integers and bool go to the default)
        exact = not dtypes.is_inexact(a.dtype)
        a = a.astype(dtypes.default_float() if base2 and exact else dtypes.to_inexact(a.dtype))
        axes = _axes(a, axis, "logaddexp")
        if where is not None:
            a = C.where(where, a, C.asarray(-np.inf, a.dtype))
        top = C.max(a, axis=axes, keepdims=True, initial=-np.inf)
        shift = C.where(C.isfinite(top), top, C.zeros_like(top))
        r = log(C.sum(exp(a - shift), axis=axes, keepdims=True)) + shift
        r = r if keepdims else C.squeeze(r, axes)
        return pair(r, C.asarray(initial).astype(r.dtype)) if initial is not None else r

    return reduce


def _accumulator(fn):
    def accumulate(a, *, axis, dtype):
        return fn(a, axis=axis, dtype=dtype) if dtype is not None else fn(a, axis=axis)

    return accumulate


def _at(method):
    def at(a, indices, b):
        ref = C.asarray(a).at[indices]
        return getattr(ref, method)(b) if b is not None else getattr(ref, method)()

    return at


def _add_at(a, indices, b):
    a = C.asarray(a)
    if a.dtype == np.bool_:  # (or: as JAX, through int32 counts)
        b = C.asarray(b).astype(np.bool_).astype(np.int32)
        return a.astype(np.int32).at[indices].add(b).astype(np.bool_)
    return a.at[indices].add(b)


# name: (function, nin, identity, reduce, accumulate, at): JAX's fourteen ufuncs and the methods
# it gives a fast form (the others run the function in a loop)
_TABLE = {
    "add": (C.add, 2, 0, _reducer(C.sum, takes_dtype=True), _accumulator(C.cumsum), _add_at),
    "multiply": (
        C.multiply, 2, 1, _reducer(C.prod, takes_dtype=True), _accumulator(C.cumprod),
        _at("multiply"),
    ),
    "subtract": (C.subtract, 2, None, None, None, _at("subtract")),
    "maximum": (C.maximum, 2, None, _reducer(C.max), None, None),
    "minimum": (C.minimum, 2, None, _reducer(C.min), None, None),
    "logical_and": (
        C.logical_and, 2, True,
        _lax_reducer("logical_and", ops.reduce_and, C.logical_and, True, to_bool=True),
        None, None,
    ),
    "logical_or": (
        C.logical_or, 2, False,
        _lax_reducer("logical_or", ops.reduce_or, C.logical_or, False, to_bool=True),
        None, None,
    ),
    "logical_xor": (
        C.logical_xor, 2, False,
        _lax_reducer("logical_xor", reduce_xor, C.logical_xor, False, to_bool=True),
        None, None,
    ),
    "bitwise_and": (
        C.bitwise_and, 2, -1, _lax_reducer("bitwise_and", ops.reduce_and, C.bitwise_and, -1),
        None, None,
    ),
    "bitwise_or": (
        C.bitwise_or, 2, 0, _lax_reducer("bitwise_or", ops.reduce_or, C.bitwise_or, 0),
        None, None,
    ),
    "bitwise_xor": (
        C.bitwise_xor, 2, 0, _lax_reducer("bitwise_xor", reduce_xor, C.bitwise_xor, 0),
        None, None,
    ),
    "logaddexp": (C.logaddexp, 2, -np.inf, _logsumexp(False), None, None),
    "logaddexp2": (C.logaddexp2, 2, -np.inf, _logsumexp(True), None, None),
    "negative": (C.negative, 1, None, None, None, None),
}  # fmt: skip


def _make(name):
    fn, nin, identity, red, acc, at = _TABLE[name]
    return ufunc(
        fn, nin, 1, name=name, identity=identity, call=fn, reduce=red, accumulate=acc, at=at
    )


add = _make("add")
multiply = _make("multiply")
subtract = _make("subtract")
maximum = _make("maximum")
minimum = _make("minimum")
logical_and = _make("logical_and")
logical_or = _make("logical_or")
logical_xor = _make("logical_xor")
bitwise_and = _make("bitwise_and")
bitwise_or = _make("bitwise_or")
bitwise_xor = _make("bitwise_xor")
logaddexp = _make("logaddexp")
logaddexp2 = _make("logaddexp2")
negative = _make("negative")
