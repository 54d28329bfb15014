"""``functx.numpy`` functions: composites of functx.lax with NumPy's broadcasting and JAX's
promotion.

Dtype defaults follow JAX's ``jax_enable_x64`` flag: off (the default), Python floats and
``arange``/``zeros`` give float32 and int32, sums of small integers accumulate in int32, indices
(``argmax``) are int32, and an explicit 64-bit ``dtype=`` warns and gives its 32-bit counterpart;
on, all of these are 64-bit.
"""

from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from functx import config, dtypes, ops
from functx.array import Array, UncommittedArray, device_rule, is_python_scalar
from functx.control import associative_scan as _ascan
from functx.control.sort import sort as _lax_sort
from functx.core import ShapedArray
from functx.errors import (
    ConcretizationError,
    FunctxArgumentError,
    FunctxError,
    FunctxIndexError,
    FunctxOverflowError,
    FunctxTypeError,
    FunctxValueError,
    FunctxZeroDivisionError,
    UnsupportedError,
)
from functx.numpy import _validate as _v
from functx.source_info import where as _loc
from functx.tracing import Tracer, get_aval

# --- dtypes --------------------------------------------------------------------------------------
bool_ = dtypes.bool_
int8, int16, int32, int64 = dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64
uint8, uint16, uint32, uint64 = dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64
float16, bfloat16 = dtypes.float16, dtypes.bfloat16
float32, float64 = dtypes.float32, dtypes.float64
complex64, complex128 = dtypes.complex64, dtypes.complex128
complexfloating = np.complexfloating
float_ = float64
int_ = int64
integer, signedinteger, unsignedinteger = np.integer, np.signedinteger, np.unsignedinteger
floating, inexact, number, generic = np.floating, np.inexact, np.number, np.generic
dtype = np.dtype
pi, e, inf, nan, euler_gamma = np.pi, np.e, np.inf, np.nan, np.euler_gamma
newaxis = None
ndarray = Array

promote_types = dtypes.promote_types
issubdtype = dtypes.issubdtype
finfo = dtypes.finfo
iinfo = dtypes.iinfo


def _aval(x) -> ShapedArray:
    return get_aval(x)


def _is_array(x):
    return isinstance(x, (Array, Tracer))


def result_type(*args):
    """The dtype JAX's type promotion gives for these operands (``jax.numpy.result_type``).

    Arguments:
      *args: arrays, scalars or dtypes; Python scalars and weakly typed arrays are weak, as in JAX.
    Returns:
      A NumPy dtype (canonical: 64-bit types only with x64 on).
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.result_type(jnp.int8, jnp.float32)
      dtype('float32')
      >>> jnp.result_type(jnp.array([1], jnp.int8), 2)
      dtype('int8')
    """
    pairs = []
    for a in args:
        if isinstance(a, (np.dtype, type, str)) and not is_python_scalar(a):
            pairs.append((dtypes.canonicalize(a), False))
        else:
            av = _aval(a)
            pairs.append((av.dtype, av.weak_type))
    return dtypes.result_type(*pairs)[0]


# --- array creation ------------------------------------------------------------------------------
# ``device=`` (JAX's keyword) puts the new array on that device, committed to it; without it, data
# converted by asarray/array goes to the default device and arrays built from scalars (zeros, eye,
# arange, ...) are uncommitted there (see the devices package, which fills array.device_rules).
def _placed(out, device):
    if device is None and not config.default_off_cpu():
        return out  # the CPU default: nothing to do
    if isinstance(out, Tracer):
        return out
    return device_rule("place_new")(out, device)


def _made_on(device, make, *args):
    """``make(*args)`` (arrays built from scalars) on ``device``, committed there; None: the default
    device, uncommitted."""
    if device is None:
        return make(*args)
    with device_rule("default_device")(device):
        out = make(*args)
    return _placed(out, device)


def asarray(a, dtype=None, order=None, *, copy=None, device=None):
    """Convert to a functx array (``jax.numpy.asarray``): NumPy arrays, scalars, nested lists,
    DLPack producers.

    Arguments:
      a: the data: an array, scalar, nested list or tuple, or a DLPack producer.
      dtype: the dtype (default: inferred as JAX infers it; a functx array keeps its own).
      order, copy: accepted for compatibility (arrays are immutable).
      device: put it there (a copy if it is elsewhere); by default functx arrays stay where they
        are and other data goes to the default device. A DLPack producer on a GPU (a torch
        tensor, say) becomes an array on that GPU.
    Returns:
      A functx Array (``a`` itself when it already is one and nothing changes).
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.asarray([1, 2])
      Array([1, 2], dtype=int32)
      >>> jnp.asarray(2.5, dtype=jnp.float16)
      Array(2.5, dtype=float16)
    """
    if _is_array(a):
        out = a if dtype is None else astype(a, dtype)
        return out if device is None else _placed(out, device)
    if a is None:  # (also a None inside a list: stack_nested comes here for it)
        raise FunctxValueError(f"None is not a valid value for jnp.array{_loc()}")
    try:
        out = Array.from_value(a, None if dtype is None else _dt(dtype, None, "asarray"))
    except FunctxError:
        raise
    except OverflowError as e:
        raise FunctxOverflowError(f"asarray: {e}{_loc()}") from None
    except (TypeError, ValueError) as e:
        raise FunctxTypeError(
            f"asarray: cannot convert {type(a).__name__} to an array ({e}){_loc()}"
        ) from None
    return _placed(out, device)


def array(object, dtype=None, copy=True, order="K", ndmin=0, *, device=None):  # noqa: A002
    """An array from ``object`` (JAX's ``jnp.array``): like ``asarray`` (a Python scalar gives a
    weakly typed array, as in JAX 0.10), and ``ndmin`` prepends size-1 axes. Arrays are
    immutable, so ``copy`` and ``order`` change nothing.

    Arguments:
      object: an array, scalar, nested list or tuple, or a buffer of another library.
      dtype: the dtype (default: inferred as JAX infers it).
      copy, order: accepted for NumPy compatibility.
      ndmin: the least number of dimensions of the result.
      device: where to place it (default: the default device).

    Returns:
      A functx Array.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.array([1.0, 2.0], ndmin=2)
      Array([[1., 2.]], dtype=float32)
    """
    out = asarray(object, None if dtype is None else _dt(dtype, op="array"), device=device)
    if ndmin > out.ndim:
        out = reshape(out, (1,) * (ndmin - out.ndim) + out.shape)
    return out


def stack_nested(x, dtype=None):
    """``jnp.array`` of nested lists holding arrays or tracers."""
    if isinstance(x, (list, tuple)):
        if not x:
            return Array.from_value(
                np.zeros((0,), dtypes.default_float() if dtype is None else dtype)
            )
        return stack([stack_nested(v, dtype) for v in x])
    return asarray(x, dtype)


def _shape(shape, op="functx.numpy", dtype=None):
    return _v.shape(shape, op, dtype=dtype)


_DEFAULT_FLOAT = object()  # (``_dt``'s default: the mode's default float, read at each call)


def _dt(dtype, default=_DEFAULT_FLOAT, op="functx.numpy"):
    if dtype is None and default is _DEFAULT_FLOAT:
        return dtypes.default_float()
    return _v.dtype(dtype, op, default=default)


def _shape_hint(op, shape, dtype):
    """JAX's TypeError, with its hint, for ``jnp.zeros(2, 3)`` (an int where the dtype goes)."""
    if isinstance(dtype, (int, np.integer)) and not isinstance(dtype, (bool, np.bool_)):
        raise FunctxTypeError(
            f"{op}: cannot interpret {dtype!r} as a dtype. Did you accidentally write "
            f"`jax.numpy.{op}({shape!r}, {dtype!r})` when you meant "
            f"`jax.numpy.{op}(({shape!r}, {dtype!r}))`, the shape as one tuple?{_loc()}"
        )


def _constant(name, value, example, example_like):
    """``zeros``/``ones`` (``name``) and ``zeros_like``/``ones_like``: arrays of ``value`` (0 or
    1); their examples print ``example`` and ``example_like`` (each a call and what it prints)."""
    like = f"{name}_like"

    def constant(shape, dtype=None, *, device=None):
        _shape_hint(name, shape, dtype)
        args = (_shape(shape, name), value, _dt(dtype, op=name))
        return ops.full(*args) if device is None else _made_on(device, ops.full, *args)

    def constant_like(a, dtype=None, shape=None, *, device=None):
        av = _aval(a)
        out = constant(
            av.shape if shape is None else shape,
            av.dtype if dtype is None else _dt(dtype, op=like),
            device=_like_device(a, device),
        )
        return _weak_like(out, av, dtype)

    constant.__name__ = constant.__qualname__ = name
    constant.__doc__ = f"""An array of {name}, as ``jnp.{name}``.

    Arguments:
      shape: an int or a sequence of ints.
      dtype: the dtype (default: the default float, float32 unless ``jax_enable_x64``).
      device: where to make it (default: the default device).
    Returns:
      An Array of ``shape`` and ``dtype``.
    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.{example[0]})
      {example[1]}
    """
    constant_like.__name__ = constant_like.__qualname__ = like
    constant_like.__doc__ = f"""{name.title()} with the shape and dtype of ``a``, as ``jnp.{like}``.

    Arguments:
      a: an array (or anything with a shape and dtype).
      dtype: overrides ``a``'s dtype.
      shape: overrides ``a``'s shape.
      device: where to make it (default: where ``a`` is).
    Returns:
      An Array of {name}.
    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.{example_like[0]})
      {example_like[1]}
    """
    return constant, constant_like


zeros, zeros_like = _constant(
    "zeros",
    0,
    ("zeros((2, 3))", "[[0. 0. 0.]\n       [0. 0. 0.]]"),
    ("zeros_like(jnp.arange(3))", "[0 0 0]"),
)
ones, ones_like = _constant(
    "ones",
    1,
    ('ones(3, "int32")', "[1 1 1]"),
    ('ones_like(jnp.arange(3), dtype="float32")', "[1. 1. 1.]"),
)


def empty(shape, dtype=None, *, device=None):
    """An array of ``shape`` and ``dtype``, as ``jnp.empty``: zeros, as in JAX (no uninitialized
    memory).

    Arguments:
      shape: an int or a sequence of ints.
      dtype: the dtype (default: the default float).
      device: where to make it (default: the default device).
    Returns:
      An Array of zeros.
    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.empty(2))
      [0. 0.]
    """
    _shape_hint("empty", shape, dtype)
    return zeros(shape, _dt(dtype, op="empty"), device=device)


def full(shape, fill_value, dtype=None, *, device=None):
    """An array filled with ``fill_value``, as ``jnp.full``.

    Arguments:
      shape: an int or a sequence of ints.
      fill_value: a scalar, or an array broadcast to ``shape``.
      dtype: the dtype (default: ``fill_value``'s, a Python scalar taking the default type).
      device: where to make it (default: the default device).
    Returns:
      An Array of ``shape``.
    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.full((2, 2), 7))
      [[7 7]
       [7 7]]
    """
    if device is not None:
        return _made_on(device, full, shape, fill_value, dtype)
    if dtype is None and not is_python_scalar(fill_value):
        fv = asarray(fill_value)
        return broadcast_to(fv, _shape(shape, "full"))
    dt = (
        _dt(dtype, None, op="full")
        if dtype is not None
        else dtypes.result_type((_aval(fill_value).dtype, False))[0]
    )
    return broadcast_to(ops.convert_element_type(fill_value, dt), _shape(shape, "full"))


def _like_device(a, device):
    """``*_like(a)`` makes its array where ``a`` is (JAX keeps ``a``'s placement)."""
    if device is not None or isinstance(a, Tracer) or not isinstance(a, Array) or type(a) in _HOST:
        return device
    return a.device


def empty_like(a, dtype=None, shape=None, *, device=None):
    """An array with the shape and dtype of ``a``, as ``jnp.empty_like``: zeros, as in JAX.

    Arguments:
      a: an array (or anything with a shape and dtype).
      dtype: overrides ``a``'s dtype.
      shape: overrides ``a``'s shape.
      device: where to make it (default: where ``a`` is).
    Returns:
      An Array of zeros.
    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.empty_like(jnp.ones(2)))
      [0. 0.]
    """
    return zeros_like(
        a, None if dtype is None else _dt(dtype, op="empty_like"), shape, device=device
    )


def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
    """``fill_value`` with the shape and dtype of ``a``, as ``jnp.full_like``.

    Arguments:
      a: an array (or anything with a shape and dtype).
      fill_value: a scalar, or an array broadcast to the shape.
      dtype: overrides ``a``'s dtype.
      shape: overrides ``a``'s shape.
      device: where to make it (default: where ``a`` is).
    Returns:
      An Array.
    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.full_like(jnp.zeros(3), 2.5))
      [2.5 2.5 2.5]
    """
    av = _aval(a)
    out = full(
        av.shape if shape is None else shape,
        fill_value,
        av.dtype if dtype is None else _dt(dtype, op="full_like"),
        device=_like_device(a, device),
    )
    return _weak_like(out, av, dtype)


def _weak_like(out, av, dtype):
    """``*_like(a)`` without a dtype is weakly typed where ``a`` is (a Python scalar, a weak
    Array), as in JAX: ``jnp.zeros_like(3.0) + x`` keeps ``x``'s dtype."""
    if dtype is None and av.weak_type:
        return ops.convert_element_type(out, _aval(out).dtype, weak_type=True)
    return out


def _concrete_number(x, what):
    if isinstance(x, Tracer):
        raise FunctxTypeError(
            f"{what} must be a concrete Python number, got a traced array "
            f"{x.aval.str_short()}{_loc()}; mark it static (static_argnums)"
        )
    return x.item() if isinstance(x, (Array, np.ndarray, np.generic)) else x


def arange(start, stop=None, step=None, dtype=None, *, device=None):
    """Evenly spaced values in ``[start, stop)`` (``jax.numpy.arange``).

    Arguments:
      start: the first value (the end, from 0, when ``stop`` is None); concrete numbers only.
      stop: the end (excluded); step: the spacing (default 1).
      dtype: the result's dtype (default: from the arguments, as JAX's).
      device: where the result lives (default: the default device).
    Returns:
      A 1-D Array.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.arange(1, 7, 2)
      Array([1, 3, 5], dtype=int32)
    """
    names = ("stop",) if stop is None and step is None else ("start", "stop", "step")
    for name, v in zip(names, (start, stop, step)):
        if isinstance(v, Tracer):
            raise ConcretizationError(
                f"arange needs concrete values, got a traced array {v.aval.str_short()}: It arose "
                f"in the jnp.arange argument '{name}'; mark it static (static_argnums){_loc()}"
            )
    if [v for v in (start, stop, step) if not isinstance(v, Tracer) and np.iscomplexobj(v)]:
        raise FunctxValueError(  # (JAX's class and words: they are matched by its tests)
            f"arange: Passing complex start/stop/step to jnp.arange is no longer supported "
            f"(JAX 0.10); got {start!r}, {stop!r}, {step!r}{_loc()}"
        )
    start = _v.number(start, "arange", "start")
    stop = None if stop is None else _v.number(stop, "arange", "stop")
    step = None if step is None else _v.number(step, "arange", "step")
    if stop is None:
        start, stop = 0, start
    step = 1 if step is None else step
    if step == 0:
        raise FunctxZeroDivisionError(f"arange: step must not be zero{_loc()}")
    if not builtins.all(math.isfinite(v) for v in (start, stop, step)):
        raise FunctxValueError(
            f"arange: start, stop and step must be finite, got ({start}, {stop}, {step}){_loc()}"
        )
    if dtype is None:
        dtype = (
            dtypes.default_float()
            if builtins.any(isinstance(v, (float, np.floating)) for v in (start, stop, step))
            else dtypes.default_int()
        )
    dtype = _dt(dtype, None, "arange")
    n = builtins.max(int(math.ceil((stop - start) / step)), 0)
    _v.check_size((n,), "arange", "length", dtype)
    if n == 0:
        return _made_on(device, ops.full, (0,), 0, dtype)
    if start == 0 and step == 1 and dtype in dtypes.INTEGERS:
        return _made_on(device, ops.iota, dtype, n)
    v = np.arange(start, stop, step).astype(dtype)  # made from scalars: uncommitted
    return _placed(UncommittedArray._new(v, ShapedArray(v.shape, dtype)), device)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` (``jax.numpy.linspace``).

    Arguments:
      start, stop: the ends (scalars or arrays, broadcast together).
      num: how many values; endpoint: whether ``stop`` is the last one.
      retstep: also return the spacing; dtype: the result's dtype (default float).
      axis: where the new axis goes when the ends are arrays; device: where the result lives.
    Returns:
      The values, and with ``retstep`` the pair ``(values, step)``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.linspace(0.0, 1.0, 5)
      Array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32)
    """
    if device is not None:
        return _made_on(device, linspace, start, stop, num, endpoint, retstep, dtype, axis)
    num = _v.integer(num, "linspace", "num", minimum=0)
    _v.check_size((num,), "linspace", "num")
    for name, v in (("start", start), ("stop", stop)):
        if not (_is_array(v) or isinstance(v, (np.ndarray, complex, np.complexfloating))):
            _v.number(v, "linspace", name)
    dt = _dt(dtype, op="linspace") if dtype is not None else _inexact(result_type(start, stop))
    cdt = _inexact(dt)  # the computation's dtype (float or complex)
    start, stop = asarray(start, cdt), asarray(stop, cdt)
    shape = broadcast_shapes(start.shape, stop.shape)
    s, t = broadcast_to(start, shape)[None], broadcast_to(stop, shape)[None]
    div = (num - 1) if endpoint else num
    # JAX's formula, with its divisions by the constant ``div`` as XLA computes them (times the
    # reciprocal, rounded to the dtype), so the values are JAX's to the bit, eagerly and jitted
    if num > 1:
        rdt = dtypes.REAL_OF.get(cdt, cdt)
        delta = (stop - start) * (np.asarray(1, cdt) / np.asarray(div, cdt))
        inv = np.asarray(1, rdt) / np.asarray(div, rdt)
        it = ops.broadcasted_iota(rdt, (div,) + (1,) * len(shape), 0)
        step = astype(it * inv, cdt)
        if cdt in (dtypes.float32, dtypes.float16, dtypes.bfloat16):
            # XLA computes ``stop * step`` as ``iota * (stop * (1 / div))`` and fuses that
            # product into the sum; in float64 the fused multiply-add is exact for these
            # operands (one rounding at the end, as the FMA's)
            with config.enable_x64(True):
                f64, cvt = dtypes.float64, ops.convert_element_type
                w = cvt(s * (1 - step), f64)
                out = cvt(cvt(it, f64) * cvt(t * np.asarray(inv, cdt), f64) + w, cdt)
        else:
            out = s * (1 - step) + t * step
        if endpoint:
            out = concatenate([out, t], axis=0)
    elif num == 1:
        delta = (
            full(shape, np.nan, cdt) if endpoint else broadcast_to(stop - start, shape)
        ).astype(cdt)
        out = s
    else:
        delta = full(shape, np.nan, cdt)
        out = zeros((0,) + shape, cdt)
    if shape:
        out = moveaxis(out, 0, axis)
    if dt in dtypes.INTEGERS:
        out = floor(out)  # JAX rounds an integer linspace down
    out = astype(out, dt)
    return (out, delta) if retstep else out


def eye(N, M=None, k=0, dtype=None, *, device=None):
    """A 2-D array with ones on diagonal ``k`` and zeros elsewhere (``jax.numpy.eye``).

    Arguments:
      N: rows; M: columns (default ``N``); k: the diagonal (positive: above the main one).
      dtype: the result's dtype (default float); device: where the result lives.
    Returns:
      An ``(N, M)`` Array.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.eye(2, 3, k=1)
      Array([[0., 1., 0.],
             [0., 0., 1.]], dtype=float32)
    """
    if device is not None:
        return _made_on(device, eye, N, M, k, dtype)
    offset = _array_k(k, "eye")
    if offset is not None:  # an array (possibly traced) diagonal, as JAX allows
        N, M, _, dt = _nmk(N, M, 0, dtype, "eye")
        odt = _aval(offset).dtype
        r = ops.broadcasted_iota(odt, (N, M), 0)
        c = ops.broadcasted_iota(odt, (N, M), 1)
        return astype(equal(add(r, offset), c), dt)
    N, M, k, dt = _nmk(N, M, k, dtype, "eye")
    r = ops.broadcasted_iota(dtypes.int32, (N, M), 0)
    c = ops.broadcasted_iota(dtypes.int32, (N, M), 1)
    return astype(equal(c - r, k), dt)


def _array_k(k, op):
    """``k`` as a scalar integer Array when it is an array (traced or not; JAX's eye and tri
    accept one), None for a Python or NumPy integer."""
    if isinstance(k, (int, np.integer)) or not (_is_array(k) or isinstance(k, np.ndarray)):
        return None
    k = asarray(k)
    kv = _aval(k)
    if kv.shape != () or kv.dtype not in dtypes.INTEGERS:
        raise FunctxValueError(f"{op}: k must be a scalar integer; got {kv.str_short()}{_loc()}")
    return k


def _nmk(N, M, k, dtype, op):
    """eye/tri's sizes and diagonal checked: non-negative ints (M defaults to N) whose product
    fits, an int ``k`` (clamped into int32's range, where it selects the same entries)."""
    for name, v in (("N", N), ("M", M)):
        if isinstance(v, Tracer):
            _v.shape(v, op, name)  # (JAX's TypeError for a traced shape)
    N = _v.integer(N, op, "N", minimum=0)
    M = N if M is None else _v.integer(M, op, "M", minimum=0)
    k = _v.integer(k, op, "k")
    dt = _dt(dtype, op=op)
    _v.check_size((N, M), op, "(N, M)", dt)
    if builtins.max(N, M) >= 2**31:
        raise FunctxOverflowError(f"{op}: N={N}, M={M} does not fit int32 indices{_loc()}")
    return N, M, builtins.min(builtins.max(k, -(2**31) + 1), 2**31 - 1), dt


def identity(n, dtype=None, *, device=None):
    """The ``n`` x ``n`` identity matrix (``jax.numpy.identity``).

    Arguments:
      n: its size; dtype: the result's dtype (default float); device: where it lives.
    Returns:
      An ``(n, n)`` Array.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.identity(2, dtype=jnp.int32)
      Array([[1, 0],
             [0, 1]], dtype=int32)
    """
    return eye(n, dtype=None if dtype is None else _dt(dtype, op="identity"), device=device)


def tri(N, M=None, k=0, dtype=None):
    """Ones at and below diagonal ``k``, zeros above (``jax.numpy.tri``).

    Arguments:
      N: rows; M: columns (default ``N``); k: the diagonal; dtype: default float.
    Returns:
      An ``(N, M)`` Array.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.tri(2, 3)
      Array([[1., 0., 0.],
             [1., 1., 0.]], dtype=float32)
    """
    if dtype is None:
        dtype = dtypes.float32  # JAX's tri defaults to float32, with x64 too
    offset = _array_k(k, "tri")
    if offset is not None:  # an array (possibly traced) diagonal, as JAX allows
        N, M, _, dt = _nmk(N, M, 0, dtype, "tri")
        odt = _aval(offset).dtype
        wide = dtypes.int32
        if dtypes.iinfo(odt).min < dtypes.iinfo(wide).min or (
            dtypes.iinfo(odt).max > dtypes.iinfo(wide).max
        ):
            wide = dtypes.int64
        offset = astype(offset, wide)
        r = ops.broadcasted_iota(wide, (N, M), 0)
        c = ops.broadcasted_iota(wide, (N, M), 1)
        return astype(greater_equal(add(r, offset), c), dt)
    if not dtypes.x64_enabled() and not -(2**31) <= int(k) < 2**31:
        raise FunctxOverflowError(f"Python int {k} too large to convert to int32{_loc()}")
    N, M, k, dt = _nmk(N, M, k, dtype, "tri")
    wide = dtypes.int64 if dtypes.x64_enabled() else dtypes.int32
    r = astype(ops.broadcasted_iota(dtypes.int32, (N, M), 0), wide)
    c = astype(ops.broadcasted_iota(dtypes.int32, (N, M), 1), wide)
    return astype(less_equal(c, r + np.asarray(k, wide)), dt)


def _triangle(name, lower, result):
    """``tril`` (``lower``) or ``triu``: ``m`` with the elements on the other side of diagonal
    ``k`` zeroed; the example prints ``result``."""

    def triangle(m, k=0):
        av = _aval(m)
        if av.ndim < 2:
            raise FunctxTypeError(f"tril/triu need an array of rank >= 2, got {av.str_short()}")
        mask = tri(av.shape[-2], av.shape[-1], k if lower else k - 1, dtype=bool_)
        return where(mask if lower else logical_not(mask), m, zeros_like(m))

    triangle.__name__ = triangle.__qualname__ = name
    side = "above" if lower else "below"
    triangle.__doc__ = f"""``m`` with the elements {side} diagonal ``k`` of its last two axes set
    to zero (``jax.numpy.{name}``).

    Arguments:
      m: an array of rank 2 or more; k: the diagonal (positive: above the main one).
    Returns:
      An array of ``m``'s shape and dtype.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.{name}(jnp.ones((2, 2), jnp.int32))
      {result}
    """
    return triangle


tril = _triangle("tril", True, "Array([[1, 0],\n             [1, 1]], dtype=int32)")
triu = _triangle("triu", False, "Array([[1, 1],\n             [0, 1]], dtype=int32)")


def astype(x, dtype, /, *, copy=False, device=None):
    """``x`` converted to ``dtype``, like ``jax.numpy.astype`` (the Array API's signature).

    Arguments:
      x: an array or a scalar.
      dtype: the new dtype; ``None`` means the default float dtype, as in JAX.
      copy: accepted for the Array API; functx arrays are immutable, so the result is always
        a new array (as in JAX).
      device: where to put the result (default: where ``x`` is).
    Returns:
      An Array of ``x``'s shape and dtype ``dtype``. Complex to bool is ``x != 0``; complex to
      a real dtype keeps the real part with JAX's DeprecationWarning.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.astype(jnp.array([1.7, -2.5]), jnp.int32)
      Array([ 1, -2], dtype=int32)
    """
    x = asarray(x) if not _is_array(x) else x
    dt = _dt(dtype, op="astype")
    if _aval(x).dtype in dtypes.COMPLEX and dt not in dtypes.COMPLEX and dt != dtypes.bool_:
        warnings.warn(
            "Casting from complex to real dtypes will soon raise a ValueError. Please first "
            "use jnp.real or jnp.imag to take the real/imaginary component of your input.",
            DeprecationWarning,
            stacklevel=2,
        )
    out = ops.convert_element_type(x, dt)
    return out if device is None else out.to_device(device)


# --- promotion and broadcasting ------------------------------------------------------------------
def broadcast_shapes(*shapes):
    """The shape that arrays of ``shapes`` broadcast to (``jax.numpy.broadcast_shapes``).

    Arguments:
      *shapes: tuples of ints.
    Returns:
      A tuple of ints; a ValueError when the shapes do not broadcast.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.broadcast_shapes((2, 1), (3,))
      (2, 3)
    """
    out = []
    for dims in zip(*[(1,) * (builtins.max(map(len, shapes)) - len(s)) + tuple(s) for s in shapes]):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise FunctxArgumentError(
                f"shapes {', '.join(map(str, shapes))} cannot be broadcast together{_loc()}"
            )
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _promote(name, *args, kind=None):
    """Promote the operands' dtypes (JAX's lattice) and broadcast their shapes (NumPy's rules).
    Rank-0 operands stay rank 0: the primitives broadcast them. ``kind="inexact"`` then maps an
    integer or bool result dtype to a float (JAX's ``promote_args_inexact``), ``kind="numeric"``
    a bool one to int32 (``promote_args_numeric``); Python scalars convert straight to the final
    dtype (so ``uint8_array / -2`` divides by -2.0, not by 254)."""
    try:
        fast = _promote_fast(args, kind)
        if fast is not None:
            return fast
        return _promote_general(name, args, kind)
    except FunctxError:
        raise
    except OverflowError as e:
        raise FunctxOverflowError(
            f"{name}: an operand does not fit its dtype ({e}){_loc()}"
        ) from None


def _arraylike(a, name, position=0):
    """``a`` as an array, where JAX's ``check_arraylike`` accepts it: arrays, NumPy arrays and
    scalars, not Python lists or tuples (TypeError, JAX's message)."""
    if _is_array(a):
        return a
    if isinstance(a, (list, tuple)):
        raise FunctxTypeError(
            f"{name} requires ndarray or scalar arguments, got {type(a)} at position "
            f"{position}.{_loc()} Convert it first: jnp.asarray(x)"
        )
    return asarray(a)


def _promote_general(name, args, kind):
    for i, a in enumerate(args):
        if isinstance(a, (list, tuple)):
            _arraylike(a, name, i)
    avals = [_aval(a) for a in args]
    dt, weak = dtypes.result_type(*[(a.dtype, a.weak_type) for a in avals])
    if kind == "inexact":
        dt = _inexact(dt)
    elif kind == "numeric" and dt == dtypes.bool_:
        dt = dtypes.int32
    shapes = [a.shape for a in avals]
    try:
        shape = broadcast_shapes(*shapes)
    except FunctxTypeError:
        raise FunctxArgumentError(
            f"{name}: operands of shapes "
            f"{', '.join(a.str_short() for a in avals)} cannot be broadcast "
            f"together{_loc()}"
        ) from None
    out = []
    for a, av in zip(args, avals):
        if is_python_scalar(a):
            if weak and dt in (dtypes.default_float(), dtypes.default_int()):
                a = float(a) if dt in dtypes.FLOATS else int(a)
                out.append(a)
                continue
            # Like JAX, a Python int wraps into a narrower integer dtype (uint8 + -1 is 255).
            with np.errstate(over="ignore"):
                a = Array.from_value(np.asarray(a).astype(dt))
        elif av.dtype != dt:
            a = ops.convert_element_type(a, dt, weak_type=weak)
        elif not _is_array(a):
            a = Array.from_value(a)
        if av.shape != shape and av.shape != ():
            n = len(shape) - av.ndim
            a = ops.broadcast_in_dim(a, shape, tuple(range(n, len(shape))))
        out.append(a)
    return out


_HOST = (Array, UncommittedArray)  # host arrays (committed or not: see the devices package)


def _promote_fast(args, kind):
    """The eager fast path of _promote for the common cases: concrete float arrays of one aval,
    or a float array and a Python scalar. None when the general path is needed."""
    if len(args) == 1:
        a = args[0]
        t = type(a)
        if (t is Array or t is UncommittedArray) and (
            kind is None or a.aval.dtype in dtypes.FLOATS
        ):
            return [a]
        return None
    if len(args) != 2:
        return None
    x, y = args
    tx, ty = type(x), type(y)
    if tx is Array or tx is UncommittedArray:
        if ty is Array or ty is UncommittedArray:
            ax, ay = x.aval, y.aval
            if (
                ax.shape == ay.shape
                and ax.dtype == ay.dtype
                and (kind is None or ax.dtype in dtypes.FLOATS)
                and ax.weak_type == ay.weak_type
            ):
                return [x, y]
            return None
        if ty not in (float, int):
            return None
        arr, scalar, first = x, y, True
    elif (ty is Array or ty is UncommittedArray) and tx in (float, int):
        arr, scalar, first = y, x, False
    else:
        return None
    av = arr.aval
    if av.dtype not in dtypes.FLOATS:
        return None
    if type(scalar) is int and not -(2**31) <= scalar < 2**31:
        return None  # (the general path: an OverflowError while jax_enable_x64 is off)
    if av.weak_type:
        if av.dtype != dtypes.default_float():
            return None
        conv = float(scalar)
    else:
        conv = np.asarray(scalar, av.dtype)[()]
    return [arr, conv] if first else [conv, arr]


def _promote_float(name, *args):
    """Like _promote, then integers and bools become floats (``jnp.sin(1)``), as JAX's
    ``to_inexact_dtype`` maps them: 64-bit integers to float64, all others to float32."""
    return _promote(name, *args, kind="inexact")


def _inexact(dt):
    """JAX's ``to_inexact_dtype``: the float dtype an integer or bool dtype computes in."""
    if dt in dtypes.FLOATS or dt in dtypes.COMPLEX:
        return dt
    # (int32 and narrower give float32 in both modes; int64 exists only with x64 on)
    return dtypes.float64 if dt in (dtypes.int64, dtypes.uint64) else dtypes.float32


def broadcast_to(x, shape):
    """``x`` repeated along new leading axes and size-1 axes to ``shape``
    (``jax.numpy.broadcast_to``, NumPy's broadcasting rules).

    Arguments:
      x: an array or scalar.
      shape: the target shape (an int or a sequence of ints).
    Returns:
      An array of that shape and x's dtype.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.broadcast_to(jnp.array([1, 2]), (2, 2))
      Array([[1, 2],
             [1, 2]], dtype=int32)
    """
    shape = _shape(shape, "broadcast_to")
    x = asarray(x) if not _is_array(x) else x
    av = _aval(x)
    if av.shape == shape:
        return x
    n = len(shape) - av.ndim
    if n < 0 or builtins.any(s not in (1, t) for s, t in zip(av.shape, shape[n:])):
        what = "Cannot broadcast to shape with fewer dimensions" if n < 0 else "Incompatible"
        raise FunctxArgumentError(  # (JAX raises ValueError; its words, which its tests match)
            f"broadcast_to: {what}: shapes for broadcasting: {av.str_short()} and requested "
            f"shape {shape}{_loc()}"
        )
    return ops.broadcast_in_dim(x, shape, tuple(range(n, len(shape))))


def broadcast_arrays(*args):
    """The arrays broadcast against each other to one shape (``jax.numpy.broadcast_arrays``).

    Arguments:
      *args: arrays or scalars.
    Returns:
      A list of arrays, each of the common shape and its own dtype.
    Example:
      >>> import functx.numpy as jnp
      >>> a, b = jnp.broadcast_arrays(jnp.array([1, 2]), jnp.array([[0], [1]]))
      >>> b
      Array([[0, 0],
             [1, 1]], dtype=int32)
    """
    shape = broadcast_shapes(*[_aval(a).shape for a in args])
    return [broadcast_to(a, shape) for a in args]


# --- elementwise ---------------------------------------------------------------------------------
def _no_ufunc_kw(out, where, name):
    """JAX's ufuncs take ``out=`` and ``where=`` only as None: NotImplementedError otherwise."""
    if out is not None:
        raise NotImplementedError(f"out argument of <jnp.ufunc '{name}'>{_loc()}")
    if where is not None:
        raise NotImplementedError(f"where argument of <jnp.ufunc '{name}'>{_loc()}")


def _ufunc1(lax_fn, name, kind="float"):
    def fn(x, /):
        (x,) = _promote_float(name, x) if kind == "float" else _promote(name, x)
        return lax_fn(x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name}, like ``jax.numpy.{name}``."
    return fn


sin = _ufunc1(ops.sin, "sin")
cos = _ufunc1(ops.cos, "cos")
tan = _ufunc1(ops.tan, "tan")
arcsin = _ufunc1(ops.asin, "arcsin")
arccos = _ufunc1(ops.acos, "arccos")
arctan = _ufunc1(ops.atan, "arctan")
sinh = _ufunc1(ops.sinh, "sinh")
cosh = _ufunc1(ops.cosh, "cosh")
tanh = _ufunc1(ops.tanh, "tanh")
arcsinh = _ufunc1(ops.asinh, "arcsinh")
arccosh = _ufunc1(ops.acosh, "arccosh")
arctanh = _ufunc1(ops.atanh, "arctanh")
exp = _ufunc1(ops.exp, "exp")
exp2 = _ufunc1(ops.exp2, "exp2")
expm1 = _ufunc1(ops.expm1, "expm1")
log = _ufunc1(ops.log, "log")
log1p = _ufunc1(ops.log1p, "log1p")
sqrt = _ufunc1(ops.sqrt, "sqrt")
cbrt = _ufunc1(ops.cbrt, "cbrt")
asin, acos, atan = arcsin, arccos, arctan
asinh, acosh, atanh = arcsinh, arccosh, arctanh
_negative = _ufunc1(ops.neg, "negative", "any")


def negative(x, /, *, out=None, where=None):
    _no_ufunc_kw(out, where, "negative")
    return _negative(x)


def _unary_doc(name, what, arg, out, x=None, note="", alias=None, returns="An array of x's shape."):
    """The docstring of an elementwise function of one operand (made by ``_ufunc1``, or
    ``_rounding``)."""
    x = x or "an array or scalar; integers and bools compute in a float dtype, as in JAX."
    note = f"\n    {note}\n" if note else ""
    alias = f"; ``{alias}`` is the same function" if alias else ""
    return f"""{what}, elementwise (``jax.numpy.{name}``{alias}).

    Arguments:
      x: {x}
    Returns:
      {returns}
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.{name}({arg})
      {out}
    {note}"""


sin.__doc__ = _unary_doc(
    "sin",
    "The sine (radians)",
    "jnp.array([0.0, 0.5])",
    "Array([0.        , 0.47942555], dtype=float32)",
)
cos.__doc__ = _unary_doc(
    "cos",
    "The cosine (radians)",
    "jnp.array([0.0, 0.5])",
    "Array([1.        , 0.87758255], dtype=float32)",
)
tan.__doc__ = _unary_doc(
    "tan",
    "The tangent (radians)",
    "jnp.array([0.0, 0.5])",
    "Array([0.       , 0.5463025], dtype=float32)",
)
arcsin.__doc__ = _unary_doc(
    "arcsin",
    "The inverse sine, in [-pi/2, pi/2] (NaN outside [-1, 1])",
    "jnp.array([0.0, 0.5])",
    "Array([0.       , 0.5235988], dtype=float32)",
    alias="asin",
)
arccos.__doc__ = _unary_doc(
    "arccos",
    "The inverse cosine, in [0, pi] (NaN outside [-1, 1])",
    "jnp.array([0.0, 0.5])",
    "Array([1.5707964, 1.0471976], dtype=float32)",
    alias="acos",
)
arctan.__doc__ = _unary_doc(
    "arctan",
    "The inverse tangent, in (-pi/2, pi/2)",
    "jnp.array([0.0, 1.0])",
    "Array([0.       , 0.7853982], dtype=float32)",
    alias="atan",
    note="functx's float32 result is the correctly rounded one; JAX on CPU can differ in the\n"
    "    last place (0.7853981 here).",
)
sinh.__doc__ = _unary_doc(
    "sinh",
    "The hyperbolic sine",
    "jnp.array([0.0, 1.0])",
    "Array([0.       , 1.1752012], dtype=float32)",
)
cosh.__doc__ = _unary_doc(
    "cosh",
    "The hyperbolic cosine",
    "jnp.array([0.0, 1.0])",
    "Array([1.       , 1.5430806], dtype=float32)",
)
tanh.__doc__ = _unary_doc(
    "tanh",
    "The hyperbolic tangent",
    "jnp.array([0.0, 1.0])",
    "Array([0.       , 0.7615942], dtype=float32)",
)
arcsinh.__doc__ = _unary_doc(
    "arcsinh",
    "The inverse hyperbolic sine",
    "jnp.array([0.0, 0.5])",
    "Array([0.        , 0.48121184], dtype=float32)",
    alias="asinh",
)
arccosh.__doc__ = _unary_doc(
    "arccosh",
    "The inverse hyperbolic cosine (NaN below 1)",
    "jnp.array([1.0, 2.0])",
    "Array([0.      , 1.316958], dtype=float32)",
    alias="acosh",
)
arctanh.__doc__ = _unary_doc(
    "arctanh",
    "The inverse hyperbolic tangent (+-inf at +-1, NaN outside)",
    "jnp.array([0.0, 0.5])",
    "Array([0.        , 0.54930615], dtype=float32)",
    alias="atanh",
)
exp.__doc__ = _unary_doc(
    "exp",
    "``e ** x``",
    "jnp.array([0.0, 0.5])",
    "Array([1.       , 1.6487212], dtype=float32)",
)
exp2.__doc__ = _unary_doc(
    "exp2",
    "``2 ** x``",
    "jnp.array([0, 3])",
    "Array([1., 8.], dtype=float32)",
)
expm1.__doc__ = _unary_doc(
    "expm1",
    "``exp(x) - 1``, accurate for small ``x``",
    "jnp.array([0.0, 1e-5])",
    "Array([0.000000e+00, 1.000005e-05], dtype=float32)",
)
log.__doc__ = _unary_doc(
    "log",
    "The natural logarithm (-inf at 0, NaN below)",
    "jnp.array([1.0, 2.0])",
    "Array([0.       , 0.6931472], dtype=float32)",
)
log1p.__doc__ = _unary_doc(
    "log1p",
    "``log(1 + x)``, accurate for small ``x``",
    "jnp.array([0.0, 1e-5])",
    "Array([0.00000e+00, 9.99995e-06], dtype=float32)",
)
sqrt.__doc__ = _unary_doc(
    "sqrt",
    "The square root (NaN below 0 for real inputs)",
    "jnp.array([1.0, 4.0])",
    "Array([1., 2.], dtype=float32)",
)
cbrt.__doc__ = _unary_doc(
    "cbrt",
    "The real cube root (negative for negative ``x``)",
    "jnp.array([8.0, -27.0])",
    "Array([ 2., -3.], dtype=float32)",
)
negative.__doc__ = _unary_doc(
    "negative",
    "``-x``",
    "jnp.array([1, -2])",
    "Array([-1,  2], dtype=int32)",
    "an array or scalar (its dtype is kept; bools are refused, as in JAX).\n      "
    "out, where: must be None (NotImplementedError otherwise, as for JAX's ufuncs).",
)


def _is_bool(x):
    return _aval(x).dtype == dtypes.bool_


def positive(x, /):
    """``+x``: ``x`` itself, after JAX's promotion (``jax.numpy.positive``).

    Arguments:
      x: an array or scalar.
    Returns:
      An array equal to ``x``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.positive(jnp.array([1, -2]))
      Array([ 1, -2], dtype=int32)
    """
    return _promote("positive", x)[0]


def abs(x, /):  # noqa: A001
    """The absolute value, elementwise (``jax.numpy.abs``; ``absolute`` is the same function).

    Arguments:
      x: an array or scalar; bools and unsigned integers are returned unchanged.
    Returns:
      An array of x's shape; complex inputs give the modulus in the real dtype.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.abs(jnp.array([-1.5, 2.0]))
      Array([1.5, 2. ], dtype=float32)
    """
    (x,) = _promote("abs", x)
    if _is_bool(x) or dtypes.is_unsigned(_aval(x).dtype):
        return x
    return ops.abs(x)


absolute = abs


def sign(x, /):
    """The sign, -1, 0 or 1, elementwise (``jax.numpy.sign``).

    Arguments:
      x: an array or scalar (not bool, as in JAX); for complex ``x``, ``x / |x|``.
    Returns:
      An array of x's shape and dtype (NaN stays NaN).
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.sign(jnp.array([-3, 0, 2]))
      Array([-1,  0,  1], dtype=int32)
    """
    (x,) = _promote("sign", x)
    if _is_bool(x):
        raise FunctxTypeError(f"sign does not accept bool operands, like jax.numpy.sign{_loc()}")
    return ops.sign(x)


def _no_complex(name, x):
    if _aval(x).dtype in dtypes.COMPLEX:
        raise FunctxTypeError(
            f"{name} does not accept complex operands, like jax.numpy.{name}{_loc()}"
        )


def _rounding(name, rounded, what, out, alias=None):
    """``floor``, ``ceil`` or ``trunc`` (``name``): ``rounded`` of a float operand; integers
    and bools are returned unchanged (as Arrays: a Python int too), complex operands refused (as
    in JAX)."""

    def fn(x, /):
        (x,) = _promote(name, x)
        _no_complex(name, x)
        x = asarray(x)  # (a Python float too: trunc compares it with 0)
        return rounded(x) if _aval(x).dtype in dtypes.FLOATS else x

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = _unary_doc(
        name,
        what,
        "jnp.array([-1.5, 2.5])",
        out,
        x="an array or scalar (not complex, as in JAX); integers and bools are returned unchanged.",
        alias=alias,
        returns="An array of x's shape and dtype.",
    )
    return fn


floor = _rounding(
    "floor", ops.floor, "The largest integer not above ``x``", "Array([-2.,  2.], dtype=float32)"
)
ceil = _rounding(
    "ceil", ops.ceil, "The smallest integer not below ``x``", "Array([-1.,  3.], dtype=float32)"
)
trunc = _rounding(
    "trunc",
    lambda x: where(ops.lt(x, 0), ops.ceil(x), ops.floor(x)),
    "Rounding toward zero",
    "Array([-1.,  2.], dtype=float32)",
    alias="fix",
)


fix = trunc


def rint(x, /):
    """Round to the nearest integer, ties to even, elementwise (``jax.numpy.rint``).

    Arguments:
      x: an array or scalar. Integers and bools convert to the default float (float32, float64
        with x64 on), as JAX's ``rint`` does; complex rounds each part.
    Returns:
      An array of x's shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.rint(jnp.array([0.5, 1.5, -2.5]))
      Array([ 0.,  2., -2.], dtype=float32)
    """
    (x,) = _promote("rint", x)
    if _aval(x).dtype in dtypes.COMPLEX:  # each part, as in JAX
        return ops.complex(rint(ops.real(x)), rint(ops.imag(x)))
    if _aval(x).dtype not in dtypes.FLOATS:
        return ops.convert_element_type(x, dtypes.default_float())
    return ops.round(x, ops.RoundingMethod.TO_NEAREST_EVEN)


def round(a, decimals=0, out=None):  # noqa: A001
    """Round to ``decimals`` places, ties to even (``jax.numpy.round``; ``around`` is the same
    function).

    Arguments:
      a: an array or scalar (complex rounds each part; not bool).
      decimals: the number of decimal places (negative: to tens, hundreds, ...).
      out: must be None (NotImplementedError otherwise, as in JAX).
    Returns:
      An array of a's shape and dtype.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.round(jnp.array([1.25, 2.75]), 1)
      Array([1.2, 2.8], dtype=float32)

    Integers are returned unchanged for ``decimals >= 0``, as in JAX. Unlike JAX: for integers
    and ``decimals < 0``, where JAX raises NotImplementedError, functx rounds them.
    """
    _no_out(out, "round")
    (a,) = _promote("round", a)
    if _aval(a).dtype in dtypes.COMPLEX:  # each part, as in JAX
        return ops.complex(round(ops.real(a), decimals), round(ops.imag(a), decimals))
    decimals = _v.integer(decimals, "round", "decimals")
    if builtins.abs(decimals) > 2**31 - 1:
        raise FunctxOverflowError(f"round: decimals {decimals} does not fit int32{_loc()}")
    # Past 400 places every float rounds to itself (or to 0, the other way): clamp, so that
    # 10 ** decimals stays finite.
    decimals = builtins.max(builtins.min(decimals, 400), -400)
    dt = _aval(a).dtype
    if dt == dtypes.bool_:
        raise FunctxTypeError(f"round does not accept bool operands, like jax.numpy.round{_loc()}")
    if dt not in dtypes.FLOATS:
        if decimals >= 0:
            return a
        if decimals < -20:  # past any 64-bit integer: everything rounds to 0
            return zeros_like(a)
        f = 10 ** (-decimals)
        return astype(rint(astype(a, dtypes.float64) / f) * f, dt)
    if decimals == 0:
        return ops.round(a, ops.RoundingMethod.TO_NEAREST_EVEN)
    f = np.asarray(10.0**decimals, dt)
    return ops.round(a * f, ops.RoundingMethod.TO_NEAREST_EVEN) / f


around = round


def square(x, /):
    """``x * x``, elementwise (``jax.numpy.square``).

    Arguments:
      x: an array or scalar; bools compute in int32, as in JAX.
    Returns:
      An array of x's shape and dtype.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.square(jnp.array([2, -3]))
      Array([4, 9], dtype=int32)
    """
    (x,) = _promote_numeric("square", x)
    return ops.integer_pow(x, 2)


def reciprocal(x, /):
    """``1 / x``, elementwise (``jax.numpy.reciprocal``).

    Arguments:
      x: an array or scalar; integers and bools compute in a float dtype, as in JAX.
    Returns:
      An array of x's shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.reciprocal(jnp.array([2.0, 4.0]))
      Array([0.5 , 0.25], dtype=float32)
    """
    (x,) = _promote_float("reciprocal", x)
    return ops.integer_pow(x, -1)


def _log_base(base, example, result):
    """``log2``/``log10``: ``log(x) / log(base)``; the example prints ``result`` for
    ``example``."""
    name = f"log{base}"

    def log_base(x, /):
        (x,) = _promote_float(name, x)
        return ops.div(ops.log(x), _const(np.log(base), x))

    log_base.__name__ = log_base.__qualname__ = name
    log_base.__doc__ = f"""The base-{base} logarithm, elementwise (``jax.numpy.{name}``).

    Arguments:
      x: an array or scalar; integers and bools compute in a float dtype, as in JAX.
    Returns:
      An array of x's shape (-inf at 0, NaN below).
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.{name}(jnp.array({example}))
      {result}
    """
    return log_base


log2 = _log_base(2, "[1.0, 8.0]", "Array([0., 3.], dtype=float32)")
log10 = _log_base(10, "[1.0, 100.0]", "Array([0., 2.], dtype=float32)")


def _const(v, like):
    """``v`` as a constant of ``like``'s dtype: an Array, or for a weakly typed ``like`` a Python
    scalar of its kind (so it stays weak and takes ``like``'s dtype in the op)."""
    av = _aval(like)
    if not av.weak_type:
        return Array.from_value(np.asarray(v, av.dtype))
    kind = np.dtype(av.dtype).kind
    return {"i": int, "u": int, "b": bool, "c": complex}.get(kind, float)(v)


def deg2rad(x, /):
    """Degrees to radians, elementwise (``jax.numpy.deg2rad``; ``radians`` is the same function).

    Arguments:
      x: an array or scalar of angles in degrees; integers compute in a float dtype.
    Returns:
      An array of x's shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.deg2rad(jnp.array([90.0, 180.0]))
      Array([1.5707964, 3.1415927], dtype=float32)
    """
    (x,) = _promote_float("deg2rad", x)
    return ops.mul(x, _const(np.pi / 180, x))


def rad2deg(x, /):
    """Radians to degrees, elementwise (``jax.numpy.rad2deg``; ``degrees`` is the same function).

    Arguments:
      x: an array or scalar of angles in radians; integers compute in a float dtype.
    Returns:
      An array of x's shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.rad2deg(jnp.array([jnp.pi / 2]))
      Array([90.], dtype=float32)
    """
    (x,) = _promote_float("rad2deg", x)
    return ops.mul(x, _const(180 / np.pi, x))


radians, degrees = deg2rad, rad2deg


def isfinite(x, /):
    """Whether ``x`` is neither infinite nor NaN (complex: both parts), elementwise
    (``jax.numpy.isfinite``).

    Arguments:
      x: an array or scalar (integers and bools: never).
    Returns:
      A bool array of x's shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.isfinite(jnp.array([1.0, jnp.inf, jnp.nan]))
      Array([ True, False, False], dtype=bool)
    """
    (x,) = _promote("isfinite", x)
    if _aval(x).dtype in dtypes.COMPLEX:  # both parts finite, as in JAX
        return logical_and(ops.is_finite(ops.real(x)), ops.is_finite(ops.imag(x)))
    if _aval(x).dtype not in dtypes.FLOATS:
        return full(_aval(x).shape, True, dtypes.bool_)
    return ops.is_finite(x)


def isnan(x, /):
    """Whether ``x`` is NaN (complex: either part), elementwise (``jax.numpy.isnan``).

    Arguments:
      x: an array or scalar (integers and bools: never).
    Returns:
      A bool array of x's shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.isnan(jnp.array([1.0, jnp.inf, jnp.nan]))
      Array([False, False,  True], dtype=bool)
    """
    (x,) = _promote("isnan", x)
    if _aval(x).dtype not in dtypes.FLOATS and _aval(x).dtype not in dtypes.COMPLEX:
        return full(_aval(x).shape, False, dtypes.bool_)
    return ops.ne(x, x)


def isinf(x, /):
    """Whether ``x`` is +inf or -inf (complex: either part), elementwise (``jax.numpy.isinf``).

    Arguments:
      x: an array or scalar (integers and bools: never).
    Returns:
      A bool array of x's shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.isinf(jnp.array([1.0, -jnp.inf, jnp.nan]))
      Array([False,  True, False], dtype=bool)
    """
    (x,) = _promote("isinf", x)
    if _aval(x).dtype in dtypes.COMPLEX:  # either part infinite, as in JAX
        return logical_or(isinf(ops.real(x)), isinf(ops.imag(x)))
    if _aval(x).dtype not in dtypes.FLOATS:
        return full(_aval(x).shape, False, dtypes.bool_)
    return ops.eq(ops.abs(x), _const(np.inf, x))


def _is_inf_of_sign(sign, result):
    """``isposinf``/``isneginf`` (``sign`` "+", "-"): infinite, and above or below 0; the example
    prints ``result``."""
    name = f"is{'pos' if sign == '+' else 'neg'}inf"

    def is_inf_of_sign(x, /, out=None):
        _no_out(out, name)
        return logical_and(isinf(x), greater(x, 0) if sign == "+" else less(x, 0))

    is_inf_of_sign.__name__ = is_inf_of_sign.__qualname__ = name
    is_inf_of_sign.__doc__ = f"""Whether ``x`` is {sign}inf, elementwise (``jax.numpy.{name}``).

    Arguments:
      x: an array or scalar (integers and bools: never).
      out: must be None (NotImplementedError otherwise, as in JAX).
    Returns:
      A bool array of x's shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.{name}(jnp.array([1.0, jnp.inf, -jnp.inf]))
      {result}
    """
    return is_inf_of_sign


isposinf = _is_inf_of_sign("+", "Array([False,  True, False], dtype=bool)")
isneginf = _is_inf_of_sign("-", "Array([False, False,  True], dtype=bool)")


def signbit(x, /):
    """Whether the sign bit is set, elementwise (``jax.numpy.signbit``): True for negative
    numbers and -0.0.

    Arguments:
      x: a real array or scalar.
    Returns:
      A bool array of x's shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.signbit(jnp.array([-1.0, -0.0, 0.0]))
      Array([ True,  True, False], dtype=bool)

    Floats are read by their sign bit (``lax.bitcast_convert_type``), so ``signbit(-nan)`` is
    True, as in JAX. Complex operands raise ValueError, as in JAX.
    """
    (x,) = _promote("signbit", x)
    dt = _aval(x).dtype
    if dt in dtypes.COMPLEX:
        raise FunctxValueError(f"jax.numpy.signbit is not well defined for {dt.name}{_loc()}")
    if dt in dtypes.FLOATS:
        if dt not in (dtypes.float16, dtypes.bfloat16, dtypes.float32, dtypes.float64):
            raise NotImplementedError(
                f"jax.numpy.signbit only supports 16, 32, and 64-bit types.{_loc()}"
            )
        bits = ops.bitcast_convert_type(x, np.dtype(f"int{dt.itemsize * 8}"))
        return ops.lt(bits, _const(0, bits))
    return less(x, 0)


def array_byteswap(x):
    """``Array.byteswap`` (``jax.Array.byteswap``; its docstring is the method's)."""
    dt = _aval(x).dtype
    if dt in dtypes.COMPLEX:
        return ops.complex(array_byteswap(ops.real(x)), array_byteswap(ops.imag(x)))
    if dt.itemsize == 1:
        return x
    parts = ops.bitcast_convert_type(x, dtypes.uint8)
    return ops.bitcast_convert_type(ops.rev(parts, (_aval(x).ndim,)), dt)


def array_view(x, dtype=None, type=None):  # noqa: A002
    """``Array.view`` (``jax.Array.view``; its docstring is the method's in ``functx.array``)."""
    if type is not None:
        raise NotImplementedError("`type` argument of array.view() is not supported.")
    if dtype is None:
        return x
    dtype = dtypes.check_user_dtype(dtype, "view")
    old = _aval(x).dtype
    shape = _aval(x).shape
    bits_in, bits_out = old.itemsize * 8, dtype.itemsize * 8
    if not shape:
        if bits_in != bits_out:
            raise FunctxValueError(
                f"view() of a 0d array is only supported if the itemsize is unchanged.{_loc()}"
            )
        return squeeze(array_view(expand_dims(x, 0), dtype), 0)
    if (shape[-1] * bits_in) % bits_out:
        raise FunctxValueError(
            "When changing to a larger dtype, its size must be a divisor of the total size in "
            f"bytes of the last axis of the array.{_loc()}"
        )
    if old == dtype:
        return x
    if old == dtypes.bool_:
        return array_view(ops.convert_element_type(x, dtypes.uint8), dtype)
    if old in dtypes.COMPLEX:
        parts = stack([ops.real(x), ops.imag(x)], -1)
        return array_view(reshape(parts, (*shape[:-1], 2 * shape[-1])), dtype)
    if dtype == dtypes.bool_:
        u = array_view(x, dtypes.uint8)
        return ops.ne(u, _const(0, u))
    if dtype in dtypes.COMPLEX:
        out = array_view(x, dtypes.REAL_OF[dtype])
        return ops.complex(out[..., 0::2], out[..., 1::2])
    if bits_in < bits_out:
        k = bits_out // bits_in
        return ops.bitcast_convert_type(reshape(x, (*shape[:-1], shape[-1] // k, k)), dtype)
    out = ops.bitcast_convert_type(x, dtype)
    if bits_in > bits_out:
        out = reshape(out, (*shape[:-1], shape[-1] * (bits_in // bits_out)))
    return out


def _ufunc2(lax_fn, name, kind="any"):
    def fn(x1, x2, /):
        x1, x2 = _promote_float(name, x1, x2) if kind == "float" else _promote(name, x1, x2)
        return lax_fn(x1, x2)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} with broadcasting, like ``jax.numpy.{name}``."
    return fn


def add(x1, x2, /, *, out=None, where=None):
    """``x1 + x2``, elementwise (``jax.numpy.add``; for bools, logical or).

    Arguments:
      x1, x2: arrays or scalars, broadcast together and promoted to one dtype (JAX's rules).
      out, where: must be None (NotImplementedError otherwise, as for JAX's ufuncs).
    Returns:
      An array of the broadcast shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.add(jnp.array([1, 2]), 3)
      Array([4, 5], dtype=int32)
    """
    _no_ufunc_kw(out, where, "add")
    if (
        (type(x1) is Array or type(x1) is UncommittedArray)
        and (type(x2) is Array or type(x2) is UncommittedArray)
        and x1.aval == x2.aval
    ):  # fast path
        return ops.add(x1, x2) if x1.dtype != dtypes.bool_ else ops.bitwise_or(x1, x2)
    x1, x2 = _promote("add", x1, x2)
    return ops.bitwise_or(x1, x2) if _is_bool(x1) else ops.add(x1, x2)


def multiply(x1, x2, /, *, out=None, where=None):
    """``x1 * x2``, elementwise (``jax.numpy.multiply``; for bools, logical and).

    Arguments:
      x1, x2: arrays or scalars, broadcast together and promoted to one dtype (JAX's rules).
      out, where: must be None (NotImplementedError otherwise, as for JAX's ufuncs).
    Returns:
      An array of the broadcast shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.multiply(jnp.array([1, 2]), jnp.array([3.0, 4.0]))
      Array([3., 8.], dtype=float32)
    """
    _no_ufunc_kw(out, where, "multiply")
    if (
        (type(x1) is Array or type(x1) is UncommittedArray)
        and (type(x2) is Array or type(x2) is UncommittedArray)
        and x1.aval == x2.aval
    ):
        return ops.mul(x1, x2) if x1.dtype != dtypes.bool_ else ops.bitwise_and(x1, x2)
    x1, x2 = _promote("multiply", x1, x2)
    return ops.bitwise_and(x1, x2) if _is_bool(x1) else ops.mul(x1, x2)


def subtract(x1, x2, /, *, out=None, where=None):
    """``x1 - x2``, elementwise (``jax.numpy.subtract``).

    Arguments:
      x1, x2: arrays or scalars, broadcast together and promoted to one dtype (JAX's rules); not
        bool (TypeError, as in JAX).
      out, where: must be None (NotImplementedError otherwise, as for JAX's ufuncs).
    Returns:
      An array of the broadcast shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.subtract(jnp.array([5, 7]), 2)
      Array([3, 5], dtype=int32)
    """
    _no_ufunc_kw(out, where, "subtract")
    x1, x2 = _promote("subtract", x1, x2)
    if _is_bool(x1):
        raise FunctxTypeError(
            f"subtract does not accept bool operands{_loc()}; use logical_xor or convert to int"
        )
    return ops.sub(x1, x2)


def true_divide(x1, x2, /):
    """``x1 / x2``, elementwise (``jax.numpy.true_divide``; ``divide`` is the same function).

    Arguments:
      x1, x2: arrays or scalars, broadcast together; integers and bools compute in a float dtype.
    Returns:
      An inexact array of the broadcast shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.true_divide(jnp.array([1, 3]), 2)
      Array([0.5, 1.5], dtype=float32)
    """
    x1, x2 = _promote_float("true_divide", x1, x2)
    return ops.div(x1, x2)


divide = true_divide


def _promote_numeric(name, *args):
    """Like _promote, then bools become int32 (JAX's ``promote_args_numeric``)."""
    return _promote(name, *args, kind="numeric")


def _int_floordiv(x1, x2):
    """Integer floor division as JAX computes it (x // 0 follows XLA: -1, then the sign fix)."""
    q = ops.div(x1, x2)
    if dtypes.is_unsigned(_aval(x1).dtype):
        return q
    fix = logical_and(not_equal(ops.sign(x1), ops.sign(x2)), not_equal(ops.rem(x1, x2), 0))
    return where(fix, ops.sub(q, _const(1, q)), q)


def floor_divide(x1, x2, /):
    """``x1 // x2``, rounding toward -inf, elementwise (``jax.numpy.floor_divide``).

    Arguments:
      x1, x2: arrays or scalars, broadcast together and promoted to one dtype (JAX's rules); bools
        compute in int32. Floats follow CPython's float divmod (so ``x // 0.0`` is +-inf or nan).
    Returns:
      An array of the broadcast shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.floor_divide(jnp.array([7, -7]), 2)
      Array([ 3, -4], dtype=int32)
    """
    x1, x2 = _promote_numeric("floor_divide", x1, x2)
    if _aval(x1).dtype in dtypes.FLOATS:
        return _float_divmod(x1, x2)[0]
    return _int_floordiv(x1, x2)


def _float_divmod(x1, x2):
    # CPython's float_divmod, as jax.numpy computes it.
    mod = ops.rem(x1, x2)
    x1c = where(ops.eq(x2, _const(0, x2)), x1, ops.sub(x1, mod))
    div = ops.div(x1c, x2)
    ind = logical_and(not_equal(mod, 0), not_equal(ops.sign(x2), ops.sign(mod)))
    mod = where(ind, ops.add(mod, x2), mod)
    div = where(ind, ops.sub(div, _const(1, div)), div)
    return ops.round(div, ops.RoundingMethod.AWAY_FROM_ZERO), mod


def _nonzero_int_divisor(x2):
    """Integer ``x % 0`` is 0 in JAX: the divisor 0 is replaced by 1."""
    if _aval(x2).dtype in dtypes.INTEGERS:
        return where(ops.eq(x2, _const(0, x2)), _const(1, x2), x2)
    return x2


def remainder(x1, x2, /):
    """``x1 % x2`` with the sign of ``x2``, elementwise (``jax.numpy.remainder``; ``mod`` is the
    same function).

    Arguments:
      x1, x2: arrays or scalars, broadcast together and promoted to one dtype (JAX's rules); bools
        compute in int32. Integer ``x % 0`` is 0, as in JAX.
    Returns:
      An array of the broadcast shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.remainder(jnp.array([7, -7]), 3)
      Array([1, 2], dtype=int32)
    """
    x1, x2 = _promote_numeric("remainder", x1, x2)
    x2 = _nonzero_int_divisor(x2)
    r = ops.rem(x1, x2)
    if dtypes.is_unsigned(_aval(x1).dtype):
        return r
    fix = logical_and(
        not_equal(r, 0), not_equal(ops.lt(r, _const(0, r)), ops.lt(x2, _const(0, x2)))
    )
    return where(fix, ops.add(r, x2), r)


mod = remainder


def fmod(x1, x2, /):
    """C's fmod: the remainder of ``x1 / x2`` with the sign of ``x1``, elementwise
    (``jax.numpy.fmod``).

    Arguments:
      x1, x2: arrays or scalars, broadcast together and promoted to one dtype (JAX's rules); bools
        compute in int32. Integer ``x % 0`` is 0, as in JAX.
    Returns:
      An array of the broadcast shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.fmod(jnp.array([7, -7]), 3)
      Array([ 1, -1], dtype=int32)
    """
    is_bool = result_type(x1, x2) == dtypes.bool_
    x1, x2 = _promote_numeric("fmod", x1, x2)
    # JAX guards only integer divisors: bool operands keep XLA's x % 0 == x.
    return ops.rem(x1, x2 if is_bool else _nonzero_int_divisor(x2))


def divmod(x1, x2, /):  # noqa: A001
    """``(x1 // x2, x1 % x2)``, elementwise (``jax.numpy.divmod``).

    Arguments:
      x1, x2: arrays or scalars, broadcast together and promoted to one dtype (JAX's rules); bools
        compute in int32.
    Returns:
      The pair ``(floor_divide(x1, x2), remainder(x1, x2))``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.divmod(jnp.array([7, -7]), 2)
      (Array([ 3, -4], dtype=int32), Array([1, 1], dtype=int32))
    """
    x1, x2 = _promote_numeric("divmod", x1, x2)
    if _aval(x1).dtype in dtypes.FLOATS:
        return _float_divmod(x1, x2)
    return floor_divide(x1, x2), remainder(x1, x2)


def _concrete_int(x):
    """A concrete integer scalar exponent (Python, NumPy or a concrete 0-d integer Array)."""
    if isinstance(x, (bool, np.bool_)):
        return None
    if isinstance(x, (int, np.integer)):
        return int(x)
    if type(x) in _HOST and x.ndim == 0 and x.dtype in dtypes.INTEGERS:
        return int(x)
    return None


def power(x1, x2, /):
    """``x1 ** x2``, elementwise (``jax.numpy.power``; ``pow`` is the same function).

    Arguments:
      x1, x2: arrays or scalars, broadcast together and promoted to one dtype (JAX's rules); bools
        compute in int32. A concrete integer exponent uses ``lax.integer_pow``; an
        integer base to a negative integer power is a TypeError, as in JAX.
    Returns:
      An array of the broadcast shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.power(jnp.array([2, 3]), 3)
      Array([ 8, 27], dtype=int32)
    """
    k = _concrete_int(x2)
    if k is not None:
        (x1,) = _promote_numeric("power", x1)
        if k < 0 and not dtypes.is_inexact(_aval(x1).dtype):  # (complex too, as JAX)
            raise FunctxTypeError(
                f"power: integers to negative integer powers are not allowed{_loc()}"
            )
        return ops.integer_pow(x1, k)
    a1, a2 = _aval(x1), _aval(x2)
    if (
        a1.dtype in dtypes.FLOATS
        and a2.dtype in dtypes.INTEGERS
        and not a2.weak_type
        and _is_array(x1)
        and _is_array(x2)
    ):
        # float ** integer array: the exponent stays an integer (ops.pow's mixed form, which
        # JAX keeps so that the derivative in x is defined at x == 0).
        shape = broadcast_shapes(a1.shape, a2.shape)
        return ops.pow(broadcast_to(x1, shape), broadcast_to(x2, shape))
    x1, x2 = _promote_numeric("power", x1, x2)
    if _aval(x1).dtype in dtypes.INTEGERS:
        return _pow_int_int(x1, x2)
    return ops.pow(x1, x2)


def _pow_int_int(x1, x2):
    """Integer ``x1 ** x2`` exactly as jax.numpy computes it: binary exponentiation over the low
    6 bits of the exponent (wrapping like any integer product; a negative exponent uses its
    two's-complement low bits, so ``3 ** -1`` is ``3 ** 63`` wrapped, as in JAX)."""
    dt = _aval(x1).dtype
    shape = broadcast_shapes(_aval(x1).shape, _aval(x2).shape)
    x1, x2 = broadcast_to(x1, shape), broadcast_to(x2, shape)
    zero, one = zeros((), dt), ones((), dt)
    acc = where(logical_and(ops.eq(x1, zero), ops.ne(x2, zero)), zero, one)
    for k in range(6):
        bit = ops.ne(ops.bitwise_and(x2, np.asarray(1 << k, dt)[()]), zero)
        acc = where(bit, ops.mul(acc, x1), acc)
        x1 = ops.mul(x1, x1)
    return acc


pow = power  # noqa: A001


def float_power(x1, x2, /):
    """``x1 ** x2`` computed in a float dtype, elementwise (``jax.numpy.float_power``).

    Arguments:
      x1, x2: arrays or scalars, broadcast together and promoted to an inexact dtype (so float32
        inputs give float32, as in JAX, not NumPy's float64).
    Returns:
      An inexact array of the broadcast shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.float_power(jnp.array([2, 3]), 2)
      Array([4., 9.], dtype=float32)
    """
    x1, x2 = _promote_float("float_power", x1, x2)
    return ops.pow(x1, x2)


def _extremum(lax_fn, name):
    """maximum/minimum; complex operands compare lexicographically, as in JAX."""

    def fn(x1, x2, /, *, out=None, where=None):
        _no_ufunc_kw(out, where, name)
        x1, x2 = _promote(name, x1, x2)
        return lax_fn(x1, x2)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} with broadcasting, like ``jax.numpy.{name}``."
    return fn


maximum = _extremum(ops.max, "maximum")
minimum = _extremum(ops.min, "minimum")
arctan2 = _ufunc2(ops.atan2, "arctan2", "float")
atan2 = arctan2


def _nextafter(x1, x2):
    """``lax.nextafter``; float16/bfloat16 by a step of the bit pattern (the compiled backends
    have no half-precision nextafter): one unit away from zero where ``x2`` lies further out than
    ``x1``, else toward it; from zero the smallest subnormal with ``x2``'s sign."""
    x1, x2 = broadcast_arrays(x1, x2)
    nan = ops.full_like(x1, np.nan)  # any NaN operand gives the positive quiet NaN, as in JAX
    half = _aval(x1).dtype in (dtypes.float16, dtypes.bfloat16)
    out = _nextafter_half(x1, x2) if half else ops.nextafter(x1, x2)
    return ops.select_n(ops.ne(x1, x1), ops.select_n(ops.ne(x2, x2), out, nan), nan)


def _nextafter_half(x1, x2):
    dt = _aval(x1).dtype
    bits = ops.bitcast_convert_type(x1, dtypes.int16)
    one = ops.full_like(bits, 1)
    away = ops.eq(ops.gt(x2, x1), ops.gt(x1, ops.full_like(x1, 0)))
    step = ops.select_n(away, ops.sub(bits, one), ops.add(bits, one))
    tiny = ops.select_n(signbit(x2), one, ops.full_like(bits, -32767))  # 0x0001 / 0x8001
    zero = ops.eq(x1, ops.full_like(x1, 0))
    out = ops.bitcast_convert_type(ops.select_n(zero, step, tiny), dt)
    return ops.select_n(ops.eq(x1, x2), out, x2)


nextafter = _ufunc2(_nextafter, "nextafter", "float")
equal = _ufunc2(ops.eq, "equal")
not_equal = _ufunc2(ops.ne, "not_equal")


def _binary_doc(name, what, args, out, xs=None, ufunc=False, differences=""):
    """The docstring of an elementwise function of two operands made by a factory here
    (``differences``: the "Differences from JAX:" paragraph, if any)."""
    xs = xs or "arrays or scalars, broadcast together and promoted to one dtype (JAX's rules)."
    if ufunc:
        xs += (
            "\n      out, where: must be None (NotImplementedError otherwise, as for JAX's ufuncs)."
        )
    returns = "A bool array" if "``x1" in what[:6] else "An array"
    return f"""{what}, elementwise (``jax.numpy.{name}``).

    Arguments:
      x1, x2: {xs}
    Returns:
      {returns} of the broadcast shape.
{differences}    Example:
      >>> import functx.numpy as jnp
      >>> jnp.{name}({args})
      {out}
    """


arctan2.__doc__ = _binary_doc(
    "arctan2",
    "The angle of the point ``(x2, x1)`` in [-pi, pi] (``atan2`` is the same function)",
    "jnp.array([1.0, -1.0]), jnp.array([1.0, 1.0])",
    "Array([ 0.7853982, -0.7853982], dtype=float32)",
    "arrays or scalars, broadcast together; integers and bools compute in a float dtype.",
)
nextafter.__doc__ = _binary_doc(
    "nextafter",
    "The next representable float after ``x1`` toward ``x2``",
    "jnp.float32(1.0), 2.0",
    "Array(1.0000001, dtype=float32)",
    "arrays or scalars, broadcast together; integers and bools compute in a float dtype.",
    differences=(
        "\n    Differences from JAX: subnormal inputs follow NumPy and C; JAX's CPU backend flushes"
        "\n    them to zero.\n\n"
    ),
)
equal.__doc__ = _binary_doc(
    "equal", "``x1 == x2``", "jnp.array([1, 2]), 2", "Array([False,  True], dtype=bool)"
)
not_equal.__doc__ = _binary_doc(
    "not_equal", "``x1 != x2``", "jnp.array([1, 2]), 2", "Array([ True, False], dtype=bool)"
)
maximum.__doc__ = _binary_doc(
    "maximum",
    "The larger of ``x1`` and ``x2`` (NaN if either is NaN; complex: lexicographic)",
    "jnp.array([1.0, 5.0]), jnp.array([3.0, 2.0])",
    "Array([3., 5.], dtype=float32)",
    ufunc=True,
)
minimum.__doc__ = _binary_doc(
    "minimum",
    "The smaller of ``x1`` and ``x2`` (NaN if either is NaN; complex: lexicographic)",
    "jnp.array([1.0, 5.0]), jnp.array([3.0, 2.0])",
    "Array([1., 2.], dtype=float32)",
    ufunc=True,
)


def _ordered(lax_fn, name):
    """An ordered comparison; complex operands compare lexicographically (real parts, then
    imaginary parts), as in JAX."""

    def fn(x1, x2, /):
        x1, x2 = _promote(name, x1, x2)
        if _aval(x1).dtype in dtypes.COMPLEX:
            r1, r2 = ops.real(x1), ops.real(x2)
            return ops.select(ops.eq(r1, r2), lax_fn(ops.imag(x1), ops.imag(x2)), lax_fn(r1, r2))
        return lax_fn(x1, x2)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} with broadcasting, like ``jax.numpy.{name}``."
    return fn


less = _ordered(ops.lt, "less")
less_equal = _ordered(ops.le, "less_equal")
greater = _ordered(ops.gt, "greater")
greater_equal = _ordered(ops.ge, "greater_equal")
greater.__doc__ = _binary_doc(
    "greater",
    "``x1 > x2`` (complex: lexicographic, real parts then imaginary parts)",
    "jnp.array([1, 2, 3]), 2",
    "Array([False, False,  True], dtype=bool)",
)
greater_equal.__doc__ = _binary_doc(
    "greater_equal",
    "``x1 >= x2`` (complex: lexicographic, real parts then imaginary parts)",
    "jnp.array([1, 2, 3]), 2",
    "Array([False,  True,  True], dtype=bool)",
)
less.__doc__ = _binary_doc(
    "less",
    "``x1 < x2`` (complex: lexicographic, real parts then imaginary parts)",
    "jnp.array([1, 2, 3]), 2",
    "Array([ True, False, False], dtype=bool)",
)
less_equal.__doc__ = _binary_doc(
    "less_equal",
    "``x1 <= x2`` (complex: lexicographic, real parts then imaginary parts)",
    "jnp.array([1, 2, 3]), 2",
    "Array([ True,  True, False], dtype=bool)",
)


def _nan_ignoring(name, extremum, which):
    """``fmax``/``fmin``: ``extremum`` of the operands where neither is NaN, else the one that
    is not; the docstring names ``which`` (larger, smaller) operand it takes."""

    def nan_ignoring(x1, x2, /):
        x1, x2 = _promote(name, x1, x2)
        return where(isnan(x2), x1, where(isnan(x1), x2, extremum(x1, x2)))

    nan_ignoring.__name__ = nan_ignoring.__qualname__ = name
    nan_ignoring.__doc__ = f"""The {which} of ``x1`` and ``x2``, ignoring NaNs, elementwise
    (``jax.numpy.{name}``).

    Arguments:
      x1, x2: arrays or scalars, broadcast together and promoted to one dtype (JAX's rules).
    Returns:
      An array of the broadcast shape (NaN only where both are NaN).
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.{name}(jnp.array([1.0, jnp.nan]), jnp.array([jnp.nan, 2.0]))
      Array([1., 2.], dtype=float32)
    """
    return nan_ignoring


fmax = _nan_ignoring("fmax", ops.max, "larger")
fmin = _nan_ignoring("fmin", ops.min, "smaller")


def hypot(x1, x2, /):
    """``sqrt(x1**2 + x2**2)`` without overflow, elementwise (``jax.numpy.hypot``).

    Arguments:
      x1, x2: arrays or scalars, broadcast together; integers and bools compute in a float dtype.
    Returns:
      An array of the broadcast shape (inf where either is infinite, even with a NaN).
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.hypot(jnp.array([3.0, 6.0]), jnp.array([4.0, 8.0]))
      Array([ 5., 10.], dtype=float32)
    """
    x1, x2 = _promote_float("hypot", x1, x2)
    if _aval(x1).dtype in dtypes.COMPLEX:
        raise FunctxValueError(
            f"jnp.hypot is not well defined for complex-valued inputs: take abs(x) (or the real "
            f"part) first{_loc()}"
        )
    a, b = ops.abs(x1), ops.abs(x2)
    big, small = ops.max(a, b), ops.min(a, b)
    safe = where(ops.eq(big, _const(0, big)), _const(1, big), big)
    r = ops.div(small, safe)
    out = where(
        ops.eq(big, _const(0, big)),
        big,
        ops.mul(big, ops.sqrt(ops.add(_const(1, r), ops.mul(r, r)))),
    )
    # An infinite operand gives inf even when the other is NaN (C99, and JAX).
    inf = _const(np.inf, a)
    return where(logical_or(ops.eq(a, inf), ops.eq(b, inf)), inf, out)


def copysign(x1, x2, /):
    """``|x1|`` with the sign of ``x2``, elementwise (``jax.numpy.copysign``).

    Arguments:
      x1, x2: arrays or scalars, broadcast together; integers and bools compute in a float dtype.
    Returns:
      An array of the broadcast shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.copysign(jnp.array([1.0, 2.0]), jnp.array([-1.0, 0.0]))
      Array([-1.,  2.], dtype=float32)

    The sign is ``x2``'s sign bit (``signbit``), so ``-0.0`` and a negative NaN give a negative
    result, as in JAX.
    """
    x1, x2 = _promote_float("copysign", x1, x2)
    return where(signbit(x2), negative(abs(x1)), abs(x1))


def logaddexp(x1, x2, /, *, out=None, where=None):
    """``log(exp(x1) + exp(x2))`` without overflow, elementwise (``jax.numpy.logaddexp``).

    Arguments:
      x1, x2: arrays or scalars, broadcast together; integers and bools compute in a float dtype.
      out, where: must be None (NotImplementedError otherwise, as for JAX's ufuncs).
    Returns:
      An array of the broadcast shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.logaddexp(jnp.array([0.0, 1.0]), jnp.array([0.0, 2.0]))
      Array([0.6931472, 2.3132617], dtype=float32)
    """
    _no_ufunc_kw(out, where, "logaddexp")
    x1, x2 = _promote_float("logaddexp", x1, x2)
    if _aval(x1).dtype in dtypes.COMPLEX:
        return _logaddexp_complex(x1, x2, ops.exp, 1.0)
    delta = ops.sub(x1, x2)
    # big + log1p(exp(small - big)) with the operands (not the results) chosen by where: the
    # derivative is exp(x_i - out) for each operand, 1/2 each at a tie, as JAX's, and never NaN
    # where one operand is -inf. Equal infinities give delta = NaN: the answer is x1 + x2.
    first = ops.ge(delta, _const(0, delta))
    both_inf = logical_and(isnan(delta), ops.eq(x1, x2))  # (NaN operands: NaN, as JAX)
    big, small = _where3(first, x1, x2), _where3(first, x2, x1)
    gap = _where3(both_inf, _const(0, delta), ops.sub(small, big))  # (no NaN in the derivative)
    return _where3(both_inf, ops.add(x1, x2), ops.add(big, ops.log1p(ops.exp(gap))))


def _logaddexp_complex(x1, x2, exp_fn, scale):
    """Complex ``logaddexp`` (``exp_fn`` = exp) or ``logaddexp2`` (exp2, ``scale`` = 1/ln 2) as
    JAX computes it: the lexicographic maximum ``m`` plus ``scale * log1p(exp_fn(x1 + x2 - 2m))``,
    with the imaginary part wrapped into [-pi*scale, pi*scale]."""
    m = maximum(x1, x2)
    delta = ops.sub(ops.add(x1, x2), ops.mul(m, _const(2, m)))
    out = ops.add(m, ops.mul(_const(scale, m), ops.log1p(exp_fn(delta))))
    im = ops.imag(out)
    half = _const(np.pi * scale, im)
    full = _const(2 * np.pi * scale, im)
    rem = ops.rem(ops.add(im, half), full)
    rem = ops.select(ops.lt(rem, _const(0, rem)), ops.add(rem, full), rem)
    return ops.complex(ops.real(out), ops.sub(rem, half))


def logaddexp2(x1, x2, /, *, out=None, where=None):
    """``log2(2**x1 + 2**x2)`` without overflow, elementwise (``jax.numpy.logaddexp2``).

    Arguments:
      x1, x2: arrays or scalars, broadcast together; integers and bools compute in a float dtype.
      out, where: must be None (NotImplementedError otherwise, as for JAX's ufuncs).
    Returns:
      An array of the broadcast shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.logaddexp2(jnp.array([1.0, 3.0]), jnp.array([1.0, 3.0]))
      Array([2., 4.], dtype=float32)
    """
    _no_ufunc_kw(out, where, "logaddexp2")
    x1, x2 = _promote_float("logaddexp2", x1, x2)
    if _aval(x1).dtype in dtypes.COMPLEX:
        return _logaddexp_complex(x1, x2, exp2, 1 / np.log(2))
    ln2 = _const(np.log(2), x1)
    return ops.div(logaddexp(ops.mul(x1, ln2), ops.mul(x2, ln2)), ln2)


# sin(y)/y = sum_k (-1)^k y^(2k) / (2k+1)!: the series sinc uses for |pi x| < 1, so that every
# derivative at 0 is right (a _where3() picking the constant 1 at 0 makes all of them 0). Nine terms
# are exact to float64 rounding on |y| < 1 and keep derivatives up to order 16 exact at 0.
_SINC_SERIES = tuple((-1) ** k / math.factorial(2 * k + 1) for k in range(9))


def sinc(x, /):
    """``sin(pi x) / (pi x)``, 1 at 0 (``jax.numpy.sinc``).

    Arguments:
      x: an array or number; integers and bools promote to the default float.
    Returns:
      An Array of ``x``'s shape. Every derivative, of any order, is right at and near 0: a
      power series there, the quotient elsewhere.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.sinc(jnp.array([0.0, 0.5, 1.0]))
      Array([ 1.0000000e+00,  6.3661975e-01, -2.7827534e-08], dtype=float32)
    """
    (x,) = _promote_float("sinc", x)
    pix = ops.mul(x, _const(np.pi, x))
    small = ops.lt(ops.abs(pix), _const(1, x))
    y2 = ops.mul(pix, pix)
    series = _const(_SINC_SERIES[-1], x)
    for c in _SINC_SERIES[-2::-1]:
        series = ops.add(ops.mul(series, y2), _const(c, x))
    safe = where(small, _const(1, x), pix)
    return where(small, series, ops.div(ops.sin(safe), safe))


def heaviside(x1, x2, /):
    """The Heaviside step function (``jax.numpy.heaviside``).

    Arguments:
      x1: the input values.
      x2: the value taken where ``x1 == 0``.
    Returns:
      An Array of the broadcast shape and promoted float dtype: 0 where ``x1 < 0``, ``x2`` where
      ``x1 == 0``, 1 where ``x1 > 0`` (NaN stays NaN).
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.heaviside(jnp.array([-1.0, 0.0, 2.0]), 0.5)
      Array([0. , 0.5, 1. ], dtype=float32)
    """
    x1, x2 = _promote_float("heaviside", x1, x2)
    return where(
        ops.lt(x1, _const(0, x1)),
        _const(0, x1),
        where(ops.gt(x1, _const(0, x1)), _const(1, x1), where(ops.ne(x1, x1), x1, x2)),
    )


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """Replace NaN and infinities by finite numbers (``jax.numpy.nan_to_num``).

    Arguments:
      x: an array or number.
      copy: unused (arrays are immutable), as in JAX.
      nan: the value for NaN (default 0.0).
      posinf, neginf: the values for +inf and -inf (default: the dtype's largest and smallest).
    Returns:
      An Array of ``x``'s shape and dtype; integer and bool inputs come back unchanged.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.nan_to_num(jnp.array([jnp.nan, jnp.inf, -jnp.inf, 1.0]), posinf=9.0, neginf=-9.0)
      Array([ 0.,  9., -9.,  1.], dtype=float32)
    """
    (x,) = _promote("nan_to_num", x)
    dt = _aval(x).dtype
    if dt not in dtypes.FLOATS:
        return x
    info = dtypes.finfo(dt)
    nan = _v.number(nan, "nan_to_num", "nan")
    posinf = float(info.max) if posinf is None else _v.number(posinf, "nan_to_num", "posinf")
    neginf = float(info.min) if neginf is None else _v.number(neginf, "nan_to_num", "neginf")
    x = where(isnan(x), _const(nan, x), x)
    x = where(isposinf(x), _const(posinf, x), x)
    return where(isneginf(x), _const(neginf, x), x)


def _logical(lax_fn, name, what, x1, x2, result):
    """``logical_and``/``or``/``xor`` (``name``): ``lax_fn`` of the operands' truth values; its
    docstring names ``what`` it computes, and its example prints ``result`` for ``x1``, ``x2``."""

    def fn(x1, x2, /, *, out=None, where=None):
        _no_ufunc_kw(out, where, name)
        x1, x2 = _promote(name, astype(x1, bool_), astype(x2, bool_))
        return lax_fn(x1, x2)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""Elementwise logical {what} of the truth values (``jax.numpy.{name}``).

    Arguments:
      x1, x2: arrays or numbers, broadcast together; nonzero counts as True.
      out, where: must be None (NotImplementedError otherwise, as for JAX's ufuncs).
    Returns:
      A bool Array of the broadcast shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.{name}(jnp.array({x1}), jnp.array({x2}))
      {result}
    """
    return fn


logical_and = _logical(
    ops.bitwise_and,
    "logical_and",
    "AND",
    "[True, True, False]",
    "[True, False, False]",
    "Array([ True, False, False], dtype=bool)",
)
logical_or = _logical(
    ops.bitwise_or,
    "logical_or",
    "OR",
    "[True, False, False]",
    "[False, False, True]",
    "Array([ True, False,  True], dtype=bool)",
)
logical_xor = _logical(
    ops.bitwise_xor,
    "logical_xor",
    "XOR",
    "[True, False, True]",
    "[True, True, False]",
    "Array([False,  True,  True], dtype=bool)",
)


def logical_not(x, /):
    """Elementwise logical NOT of the truth values (``jax.numpy.logical_not``).

    Arguments:
      x: an array or number; nonzero counts as True.
    Returns:
      A bool Array of ``x``'s shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.logical_not(jnp.array([0, 1, 2]))
      Array([ True, False, False], dtype=bool)
    """
    return ops.bitwise_not(astype(x, bool_))


def _bitwise(lax_fn, name, what, result):
    """``bitwise_and``/``or``/``xor`` (``name``): ``lax_fn`` of integer or bool operands; its
    docstring names ``what`` it computes, and its example prints ``result``."""

    def fn(x1, x2, /, *, out=None, where=None):
        _no_ufunc_kw(out, where, name)
        x1, x2 = _promote(name, x1, x2)
        if _aval(x1).dtype in dtypes.FLOATS:
            raise FunctxTypeError(
                f"{name} needs integer or bool operands, got {_aval(x1).str_short()}{_loc()}"
            )
        return lax_fn(x1, x2)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""Elementwise bitwise {what} (``jax.numpy.{name}``).

    Arguments:
      x1, x2: integer or bool arrays or numbers, broadcast and promoted together.
      out, where: must be None (NotImplementedError otherwise, as for JAX's ufuncs).
    Returns:
      An Array of the broadcast shape and promoted dtype.
    Raises:
      TypeError: for a floating-point operand, as in JAX.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.{name}(jnp.array([12, 10]), jnp.array([10, 6]))
      {result}
    """
    return fn


bitwise_and = _bitwise(ops.bitwise_and, "bitwise_and", "AND", "Array([8, 2], dtype=int32)")
bitwise_or = _bitwise(ops.bitwise_or, "bitwise_or", "OR", "Array([14, 14], dtype=int32)")
bitwise_xor = _bitwise(ops.bitwise_xor, "bitwise_xor", "XOR", "Array([ 6, 12], dtype=int32)")


def invert(x, /):
    """Elementwise bitwise NOT (``jax.numpy.invert``; also ``bitwise_not`` and ``bitwise_invert``).

    Arguments:
      x: an integer or bool array or number.
    Returns:
      An Array of ``x``'s shape and dtype (logical NOT for bools).
    Raises:
      TypeError: for a floating-point operand, as in JAX.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.invert(jnp.array([0, 5], dtype=jnp.uint8))
      Array([255, 250], dtype=uint8)
      >>> jnp.invert(jnp.array([True, False]))
      Array([False,  True], dtype=bool)
    """
    (x,) = _promote("invert", x)
    if _aval(x).dtype in dtypes.FLOATS:
        raise FunctxTypeError(
            f"invert needs an integer or bool operand, got {_aval(x).str_short()}{_loc()}"
        )
    return ops.bitwise_not(x)


bitwise_not = bitwise_invert = invert


def where(condition, x=None, y=None, /):
    """Three-argument ``where``: elements of ``x`` where ``condition`` else ``y``."""
    if x is None or y is None:
        raise FunctxTypeError(
            "functx.numpy.where needs three arguments: the one-argument form has "
            f"a data-dependent shape{_loc()}; use nonzero on a concrete array"
        )
    condition = asarray(condition) if not _is_array(condition) else condition
    c = astype(condition, bool_) if _aval(condition).dtype != bool_ else condition
    x, y = _promote("where", x, y)
    shape = broadcast_shapes(_aval(c).shape, _aval(x).shape, _aval(y).shape)
    c, x, y = broadcast_to(c, shape), broadcast_to(x, shape), broadcast_to(y, shape)
    return ops.select_n(c, y, x)


def clip(arr=None, /, min=None, max=None):  # noqa: A002
    """``arr`` limited to ``[min, max]``, like ``jax.numpy.clip`` (JAX's and the Array API's
    signature: the bounds are ``min`` and ``max``; NumPy's ``a_min``/``a_max`` are gone, as in
    JAX).

    Arguments:
      arr: an array or a scalar (real: complex values have no order).
      min: the lower bound (an array or a scalar broadcasting against ``arr``), or ``None``.
      max: the upper bound, or ``None``.
    Returns:
      ``minimum(max, maximum(min, arr))``, with the dtype of promoting ``arr`` with the bounds.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.clip(jnp.array([-2, 0, 5]), 0, 3)
      Array([0, 0, 3], dtype=int32)
      >>> jnp.clip(jnp.array([-2.0, 9.0]), max=1)
      Array([-2.,  1.], dtype=float32)
    """
    if arr is None:
        raise FunctxValueError(f"No input was provided to the clip function{_loc()}")
    if builtins.any(
        t is not None and _aval(asarray(t) if not _is_array(t) else t).dtype in dtypes.COMPLEX
        for t in (arr, min, max)
    ):
        raise FunctxValueError(
            "clip received a complex value. Complex values have no ordering and cannot be "
            f"clipped (take jnp.real or jnp.imag first){_loc()}"
        )
    if min is not None:
        arr = maximum(min, arr)
    if max is not None:
        arr = minimum(max, arr)
    return asarray(arr)


# --- reductions ----------------------------------------------------------------------------------
def _split_name(name):
    """``"take axis"`` -> ("take", "axis"); ``"axis"`` -> ("functx.numpy", "axis")."""
    op, _, arg = name.rpartition(" ")
    return (op or "functx.numpy"), arg


def _norm_axis(axis, ndim, name="axis"):
    """None (all axes), an int or a tuple of distinct ints in ``[-ndim, ndim)``: sorted and
    non-negative; a functx error naming the user's line otherwise (see _validate.axes)."""
    return _v.axes(axis, ndim, *_split_name(name))


def _canon_axis(axis, ndim, name="axis"):
    """One axis in ``[-ndim, ndim)`` made non-negative; a functx error (an AxisError, both a
    ValueError as in JAX and the TypeError functx raised before) naming the user's line
    otherwise (Python's ``%`` would silently wrap it)."""
    return _v.axis(axis, ndim, *_split_name(name))


def _keep(out, axes, shape, keepdims):
    if not keepdims:
        return out
    return ops.reshape(out, tuple(1 if i in axes else d for i, d in enumerate(shape)))


def _sum_dtype(dt, promote_integers=True):
    """JAX promotes bool and small integers to the default integer for sum and prod (bools
    always: to int32 when ``promote_integers`` is False; the integers unless it is False)."""
    if not promote_integers:
        return dtypes.int32 if dt == dtypes.bool_ else dt
    if dt == dtypes.bool_:
        return dtypes.default_int()
    if dt in (dtypes.int8, dtypes.int16, dtypes.int32):
        return dtypes.default_int()
    if dt in (dtypes.uint8, dtypes.uint16, dtypes.uint32):
        return dtypes.default_uint()
    return dt


def _where_arg(a, where_mask, fill):
    if where_mask is None:
        return a
    return _where3(where_mask, a, fill)


def _where3(c, x, y):
    return where(c, x, y)


def _no_out(out, name):
    """JAX's arrays are immutable: a non-None ``out=`` raises NotImplementedError, as in JAX."""
    if out is not None:
        raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.{_loc()}")


# sum and prod: the reduction (of bools: or, and), the array of the value masked-out elements
# (``where``) take, and how ``initial`` is combined with the result
_SUM_OR_PROD = {
    "sum": (ops.reduce_sum, ops.reduce_or, zeros, add),
    "prod": (ops.reduce_prod, ops.reduce_and, ones, multiply),
}


def _sum_or_prod(name, a, axis, dtype, out, keepdims, initial, where, promote_integers):
    reduce, reduce_bools, identities, combine = _SUM_OR_PROD[name]
    _no_out(out, name)
    a = _arraylike(a, name)
    av = _aval(a)
    axes = _norm_axis(axis, av.ndim, f"{name} axis")
    dt = _sum_dtype(av.dtype, promote_integers) if dtype is None else _dt(dtype, None, name)
    a = astype(a, dt)
    if where is not None:
        a = _where_arg(a, where, identities((), dt))
    r = reduce(a, axes) if dt != dtypes.bool_ else reduce_bools(a, axes)
    if initial is not None:
        r = combine(r, astype(initial, dt))
    return _keep(r, axes, av.shape, keepdims)


def sum(  # noqa: A001
    a,
    axis=None,
    dtype=None,
    out=None,
    keepdims=False,
    initial=None,
    where=None,
    promote_integers=True,
):
    """Sum of the elements over the given axes (``jax.numpy.sum``).

    Arguments:
      a: an array or number.
      axis: an int, a tuple of ints or None (all axes).
      dtype: the accumulation and result dtype (default: bools and small integers widen to the
        default integer, other dtypes keep theirs).
      out: must be None (NotImplementedError otherwise, as in JAX).
      keepdims: keep the reduced axes with size 1.
      initial: a value added to the result.
      where: a bool mask broadcastable to ``a``; only True elements are summed.
      promote_integers: if True (default), integers narrower than the default integer sum in
        it (unsigned ones in the default unsigned integer); if False they keep their dtype.
        Ignored when ``dtype`` is given.
    Returns:
      An Array of the reduced shape.
    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.array([[1, 2, 3], [4, 5, 6]])
      >>> jnp.sum(x)
      Array(21, dtype=int32)
      >>> jnp.sum(x, axis=0)
      Array([5, 7, 9], dtype=int32)
      >>> jnp.sum(x, axis=1, keepdims=True, where=x > 1)
      Array([[ 5],
             [15]], dtype=int32)
    """
    return _sum_or_prod("sum", a, axis, dtype, out, keepdims, initial, where, promote_integers)


def prod(
    a,
    axis=None,
    dtype=None,
    out=None,
    keepdims=False,
    initial=None,
    where=None,
    promote_integers=True,
):
    """Product of the elements over the given axes (``jax.numpy.prod``).

    Arguments:
      a: an array or number.
      axis: an int, a tuple of ints or None (all axes).
      dtype: the accumulation and result dtype (default as for ``sum``).
      out: must be None (NotImplementedError otherwise, as in JAX).
      keepdims: keep the reduced axes with size 1.
      initial: a value multiplied into the result.
      where: a bool mask broadcastable to ``a``; only True elements are multiplied.
      promote_integers: as for ``sum``.
    Returns:
      An Array of the reduced shape.
    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.array([[1, 2, 3], [4, 5, 6]])
      >>> jnp.prod(x)
      Array(720, dtype=int32)
      >>> jnp.prod(x, axis=1)
      Array([  6, 120], dtype=int32)
    """
    return _sum_or_prod("prod", a, axis, dtype, out, keepdims, initial, where, promote_integers)


# max and min: the reduction, the combination with ``initial``, and whether the masked-out
# elements (``where``) are the dtype's lowest value (max) or its highest (min)
_MAX_OR_MIN = {"max": (ops.reduce_max, maximum, True), "min": (ops.reduce_min, minimum, False)}


def _max_or_min(name, a, axis, out, keepdims, initial, where):
    """``jnp.max`` or ``jnp.min`` (``name``), whose reductions have no identity: an empty axis
    and a ``where`` mask need ``initial``."""
    reduce, combine, lowest = _MAX_OR_MIN[name]
    _no_out(out, name)
    a = _arraylike(a, name)
    av = _aval(a)
    axes = _norm_axis(axis, av.ndim, f"{name} axis")
    if builtins.any(av.shape[i] == 0 for i in axes) and initial is None:
        raise FunctxValueError(
            f"{name} of an empty axis of {av.str_short()} has no identity; pass initial={_loc()}"
        )  # (JAX: ValueError)
    if where is not None and initial is None:
        raise FunctxValueError(
            f"reduction operation {name} does not have an identity, so to use a where mask one "
            f"has to specify 'initial'{_loc()}"
        )
    if where is not None:
        if av.dtype in dtypes.FLOATS or av.dtype in dtypes.COMPLEX:
            fill = -np.inf if lowest else np.inf
        elif av.dtype == bool_:
            fill = not lowest
        else:
            fill = dtypes.iinfo(av.dtype).min if lowest else dtypes.iinfo(av.dtype).max
        a = _where3(where, a, full((), fill, av.dtype))
    r = reduce(a, axes)
    if initial is not None:
        r = combine(r, astype(initial, av.dtype))
    elif av.weak_type:  # (as JAX's: a reduction's result is not weakly typed)
        r = astype(r, av.dtype)
    return _keep(r, axes, av.shape, keepdims)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """Maximum over the given axes (``jax.numpy.max``; also ``amax``).

    Arguments:
      a: an array or number.
      axis: an int, a tuple of ints or None (all axes).
      out: must be None (NotImplementedError otherwise, as in JAX).
      keepdims: keep the reduced axes with size 1.
      initial: a lower bound for the result; needed to reduce an empty axis.
      where: a bool mask broadcastable to ``a``; only True elements count (it needs
        ``initial``: ValueError without it, as in JAX).
    Returns:
      An Array of the reduced shape and ``a``'s dtype; NaN propagates.
    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.array([[1.0, 5.0], [3.0, 2.0]])
      >>> jnp.max(x)
      Array(5., dtype=float32)
      >>> jnp.max(x, axis=0)
      Array([3., 5.], dtype=float32)
      >>> jnp.max(x, axis=1, initial=4.0)
      Array([5., 4.], dtype=float32)
    """
    return _max_or_min("max", a, axis, out, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
    """Minimum over the given axes (``jax.numpy.min``; also ``amin``).

    Arguments:
      a: an array or number.
      axis: an int, a tuple of ints or None (all axes).
      out: must be None (NotImplementedError otherwise, as in JAX).
      keepdims: keep the reduced axes with size 1.
      initial: an upper bound for the result; needed to reduce an empty axis.
      where: a bool mask broadcastable to ``a``; only True elements count (it needs
        ``initial``: ValueError without it, as in JAX).
    Returns:
      An Array of the reduced shape and ``a``'s dtype; NaN propagates.
    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.array([[1.0, 5.0], [3.0, 2.0]])
      >>> jnp.min(x)
      Array(1., dtype=float32)
      >>> jnp.min(x, axis=1, keepdims=True)
      Array([[1.],
             [2.]], dtype=float32)
    """
    return _max_or_min("min", a, axis, out, keepdims, initial, where)


amax, amin = max, min


def _any_or_all(name, reduce, which, example, result):
    """``any``/``all`` (``name``): ``reduce`` (``reduce_or``, ``reduce_and``) of the truth
    values, masked-out elements being its identity; the docstring says ``which`` element (any,
    every) is true, and the example prints ``result`` for ``example`` along ``axis=1``."""

    def fn(a, axis=None, out=None, keepdims=False, where=None):
        _no_out(out, name)
        a = astype(a, bool_)
        av = _aval(a)
        axes = _norm_axis(axis, av.ndim, f"{name} axis")
        a = _where_arg(a, where, name == "all")
        return _keep(reduce(a, axes), axes, av.shape, keepdims)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""Whether {which} element is true over the given axes (``jax.numpy.{name}``).

    Arguments:
      a: an array or number; nonzero counts as True.
      axis: an int, a tuple of ints or None (all axes).
      out: must be None (NotImplementedError otherwise, as in JAX).
      keepdims: keep the reduced axes with size 1.
      where: a bool mask broadcastable to ``a``; False elements are left out.
    Returns:
      A bool Array of the reduced shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.{name}(jnp.array({example}), axis=1)
      {result}
    """
    return fn


any = _any_or_all(  # noqa: A001
    "any", ops.reduce_or, "any", "[[0, 0], [0, 3]]", "Array([False,  True], dtype=bool)"
)
all = _any_or_all(  # noqa: A001
    "all", ops.reduce_and, "every", "[[1, 2], [0, 3]]", "Array([ True, False], dtype=bool)"
)


def _count(av, axes):
    return math.prod(av.shape[i] for i in axes)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
    """Arithmetic mean over the given axes (``jax.numpy.mean``).

    Arguments:
      a: an array or number.
      axis: an int, a tuple of ints or None (all axes).
      dtype: the result dtype (default: the default float for integers and bools; float16 and
        bfloat16 accumulate in float32).
      out: must be None (NotImplementedError otherwise, as in JAX).
      keepdims: keep the reduced axes with size 1.
      where: a bool mask broadcastable to ``a``; only True elements count.
    Returns:
      An Array of the reduced shape (NaN for an empty reduction).
    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.array([[1, 2], [3, 5]])
      >>> jnp.mean(x)
      Array(2.75, dtype=float32)
      >>> jnp.mean(x, axis=0)
      Array([2. , 3.5], dtype=float32)
    """
    _no_out(out, "mean")
    a = _arraylike(a, "mean")
    av = _aval(a)
    axes = _norm_axis(axis, av.ndim, "mean axis")
    dt = _dt(dtype, None, "mean") if dtype is not None else _inexact(av.dtype)
    # float16/bfloat16 accumulate in float32, like JAX.
    acc = dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt
    if where is None:
        s = sum(astype(a, acc), axes, keepdims=keepdims)
        n = _count(av, axes)
        return astype(true_divide(s, np.asarray(n, acc) if n else np.asarray(0, acc)), dt)
    mask = broadcast_to(asarray(where), av.shape)
    s = sum(astype(a, acc), axes, keepdims=keepdims, where=mask)
    n = sum(astype(mask, acc), axes, keepdims=keepdims)
    return astype(true_divide(s, n), dt)


_mean = mean


def var(
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    *,
    where=None,
    mean=None,  # noqa: A002 (JAX's name; the function is _mean here)
    correction=None,
):
    """Variance over the given axes (``jax.numpy.var``): the mean of ``|a - mean(a)|**2``.

    Arguments:
      a: an array or number.
      axis: an int, a tuple of ints or None (all axes).
      dtype: the result dtype (default: the default float for integers and bools, the real
        counterpart for complex input; a real ``dtype`` for complex input raises ValueError,
        as in JAX).
      out: must be None (NotImplementedError otherwise, as in JAX).
      ddof: delta degrees of freedom; the divisor is ``N - ddof``.
      keepdims: keep the reduced axes with size 1.
      where: a bool mask broadcastable to ``a``; only True elements count.
      mean: the mean of ``a`` (broadcastable against it, e.g. computed with
        ``keepdims=True``), used instead of computing it.
      correction: the array API's name for ``ddof`` (not both).
    Returns:
      An Array of the reduced shape.
    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.array([1.0, 2.0, 3.0, 4.0])
      >>> jnp.var(x)
      Array(1.25, dtype=float32)
      >>> jnp.var(x, ddof=1)
      Array(1.6666666, dtype=float32)
      >>> jnp.var(jnp.array([1j, 1.0]))
      Array(0.5, dtype=float32)
    """
    _no_out(out, "var")
    if correction is None:
        correction = ddof
    elif not isinstance(ddof, int) or ddof != 0:
        raise FunctxValueError(f"ddof and correction can't be provided simultaneously.{_loc()}")
    ddof = _v.number(correction, "var", "ddof")
    a = _arraylike(a, "var")
    av = _aval(a)
    axes = _norm_axis(axis, av.ndim, "var axis")
    if dtype is not None:
        dt = _dt(dtype, None, "var")
        if av.dtype in dtypes.COMPLEX and dt not in dtypes.COMPLEX:
            raise FunctxValueError(
                "jax.numpy.var does not yet support real dtype parameters when computing the "
                f"variance of an array of complex values{_loc()}"
            )
    else:
        dt = _inexact(av.dtype)
        if dt in dtypes.COMPLEX:
            dt = np.dtype(np.zeros((), dt).real.dtype)
    acc = dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt
    if av.dtype in dtypes.COMPLEX and acc not in dtypes.COMPLEX:
        acc = _inexact(av.dtype)
    a = astype(a, acc)
    if mean is None:
        mu = _mean(a, axes, keepdims=True, where=where)
    else:
        mu = astype(mean, acc)
    c = subtract(a, mu)
    if acc in dtypes.COMPLEX:
        # |c|**2, real: the variance of complex values is real, as in JAX and NumPy.
        sq = ops.real(ops.mul(c, ops.conj(c)))
        acc = _aval(sq).dtype
    else:
        sq = multiply(c, c)
    # Like JAX: no degrees of freedom left (ddof >= the count) gives NaN, not a negative or
    # infinite variance.
    if where is None:
        n = _count(av, axes)
        s = sum(sq, axes, keepdims=keepdims)
        if n - ddof <= 0:
            return astype(multiply(s, np.asarray(np.nan, acc)), dt)
        return astype(true_divide(s, np.asarray(n - ddof, acc)), dt)
    mask = broadcast_to(asarray(where), av.shape)
    s = sum(sq, axes, keepdims=keepdims, where=mask)
    n = sum(astype(mask, acc), axes, keepdims=keepdims)
    dof = subtract(n, np.asarray(ddof, acc))
    ok = greater(dof, np.asarray(0, acc))
    safe = _where3(ok, dof, ones((), acc))
    return astype(_where3(ok, true_divide(s, safe), full((), np.nan, acc)), dt)


def std(
    a,
    axis=None,
    dtype=None,
    out=None,
    ddof=0,
    keepdims=False,
    *,
    where=None,
    mean=None,  # noqa: A002 (JAX's name)
    correction=None,
):
    """Standard deviation over the given axes (``jax.numpy.std``): ``sqrt(var(...))``.

    Arguments:
      a: an array or number.
      axis: an int, a tuple of ints or None (all axes).
      dtype: the result dtype (default: the default float for integers and bools, the real
        counterpart for complex input).
      out: must be None (NotImplementedError otherwise, as in JAX).
      ddof: delta degrees of freedom; the divisor is ``N - ddof``.
      keepdims: keep the reduced axes with size 1.
      where: a bool mask broadcastable to ``a``; only True elements count.
      mean: the mean of ``a`` (broadcastable against it), used instead of computing it.
      correction: the array API's name for ``ddof`` (not both).
    Returns:
      An Array of the reduced shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.std(jnp.array([[1.0, 3.0], [2.0, 2.0]]), axis=1)
      Array([1., 0.], dtype=float32)
      >>> jnp.std(jnp.array([1j, -1j]))
      Array(1., dtype=float32)
    """
    _no_out(out, "std")
    return sqrt(
        var(a, axis, dtype, None, ddof, keepdims, where=where, mean=mean, correction=correction)
    )


def average(a, axis=None, weights=None, returned=False, keepdims=False):
    """Weighted mean over the given axes (``jax.numpy.average``).

    Arguments:
      a: an array or number.
      axis: an int, a tuple of ints or None (all axes).
      weights: None (the plain mean), an array of ``a``'s shape, or one of the shape of ``a``'s
        ``axis`` dimensions.
      returned: also return the sum of the weights.
      keepdims: keep the reduced axes with size 1.
    Returns:
      The weighted mean as an Array, or the pair ``(average, sum_of_weights)`` when ``returned``.
    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.array([1.0, 2.0, 4.0])
      >>> jnp.average(x, weights=jnp.array([1.0, 1.0, 2.0]))
      Array(2.75, dtype=float32)
      >>> jnp.average(x, weights=jnp.array([3.0, 1.0, 0.0]), returned=True)
      (Array(1.25, dtype=float32), Array(4., dtype=float32))
    """
    a = _arraylike(a, "average")
    av = _aval(a)
    axes = _norm_axis(axis, av.ndim, "average axis")
    if weights is None:
        (a,) = _promote_float("average", a)
        avg = mean(a, axis, keepdims=keepdims)
        wsum = full((), _count(av, axes), _aval(avg).dtype)
    else:
        a, weights = _promote_only(
            a, asarray(weights) if not _is_array(weights) else weights, kind="inexact"
        )
        wv = _aval(weights)
        if wv.shape != av.shape:
            if axis is None:
                raise FunctxTypeError(
                    f"average: axis must be given when the shapes of a "
                    f"{av.str_short()} and weights {wv.str_short()} differ"
                    f"{_loc()}"
                )
            user = tuple(
                _canon_axis(x, av.ndim)
                for x in (axis if isinstance(axis, (tuple, list)) else (axis,))
            )
            if wv.shape != tuple(av.shape[x] for x in user):
                raise FunctxTypeError(
                    f"average: the shape of weights {wv.str_short()} must be "
                    f"that of a {av.str_short()} along axis {axis}{_loc()}"
                )
            weights = transpose(weights, tuple(int(i) for i in np.argsort(user)))
            weights = reshape(weights, tuple(d if i in axes else 1 for i, d in enumerate(av.shape)))
        wsum = sum(weights, axis, keepdims=keepdims)
        avg = true_divide(sum(multiply(a, weights), axis, keepdims=keepdims), wsum)
    if returned:
        return avg, broadcast_to(wsum, _aval(avg).shape)
    return avg


def _argreduce(fn, name, which, argmax_of_x, argmax_of_x_axis_1):
    """``argmax``/``argmin`` (``name``): ``fn`` along one axis or the flattened array; its
    docstring names the ``which`` (largest, smallest) element, and its example prints the two
    results for ``x`` and ``axis=1``."""

    def f(a, axis=None, out=None, keepdims=False):
        _no_out(out, name)
        a = _arraylike(a, name)
        av = _aval(a)
        if axis is None:
            flat = ravel(a)
            r = fn(flat, 0, dtypes.default_int())
            return reshape(r, (1,) * av.ndim) if keepdims else r
        ax = _canon_axis(axis, av.ndim, f"{name} axis")
        r = fn(a, ax, dtypes.default_int())
        return _keep(r, (ax,), av.shape, keepdims)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"""Index of the {which} element along an axis (``jax.numpy.{name}``).

    Arguments:
      a: an array or number.
      axis: the axis to reduce, or None for the index into the flattened array.
      out: must be None (NotImplementedError otherwise, as in JAX).
      keepdims: keep the reduced axis with size 1.
    Returns:
      An Array of the default integer dtype; the first index wins ties, and a NaN counts as
      the {which} value, as in JAX.
    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.array([[1, 7, 3], [9, 2, 9]])
      >>> jnp.{name}(x)
      {argmax_of_x}
      >>> jnp.{name}(x, axis=1)
      {argmax_of_x_axis_1}
    """
    return f


argmax = _argreduce(
    ops.argmax, "argmax", "largest", "Array(3, dtype=int32)", "Array([1, 0], dtype=int32)"
)
argmin = _argreduce(
    ops.argmin, "argmin", "smallest", "Array(0, dtype=int32)", "Array([0, 1], dtype=int32)"
)


def count_nonzero(a, axis=None, keepdims=False):
    """Number of nonzero elements over the given axes (``jax.numpy.count_nonzero``).

    Arguments:
      a: an array or number.
      axis: an int, a tuple of ints or None (all axes).
      keepdims: keep the reduced axes with size 1.
    Returns:
      An Array of the default integer dtype and the reduced shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.count_nonzero(jnp.array([[0, 1, 2], [0, 0, 3]]), axis=1)
      Array([2, 1], dtype=int32)
    """
    return sum(not_equal(a, 0), axis, keepdims=keepdims)


def ptp(a, axis=None, out=None, keepdims=False):
    """Peak to peak, ``max - min``, over the given axes (``jax.numpy.ptp``).

    Arguments:
      a: an array or number.
      axis: an int, a tuple of ints or None (all axes).
      out: must be None (NotImplementedError otherwise, as in JAX).
      keepdims: keep the reduced axes with size 1.
    Returns:
      An Array of the reduced shape and ``a``'s dtype.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.ptp(jnp.array([[4, 9, 2], [1, 1, 1]]), axis=1)
      Array([7, 0], dtype=int32)
    """
    _no_out(out, "ptp")
    return subtract(max(a, axis, keepdims=keepdims), min(a, axis, keepdims=keepdims))


def _cumulative(lax_fn, name, what, flat, rows):
    """``cumsum``/``cumprod`` (``name``): ``lax_fn`` along an axis, the ``what`` (sum, product)
    in its docstring, whose example prints ``flat`` and ``rows`` (``axis=1``)."""

    def f(a, axis=None, dtype=None, out=None):
        _no_out(out, name)
        a = _arraylike(a, name)
        if axis is None:
            a = ravel(a)
            axis = 0
        av = _aval(a)
        ax = _canon_axis(axis, av.ndim, f"{name} axis")
        # Like JAX: bools accumulate in the default integer, other dtypes in themselves.
        dt = (
            _dt(dtype, None, "cumsum/cumprod")
            if dtype is not None
            else (dtypes.default_int() if av.dtype == dtypes.bool_ else av.dtype)
        )
        if dt == dtypes.bool_:
            # A boolean result: accumulate the truth values (a != 0, so that -1 and 1 do not
            # cancel) in the default integer, then cast back, as JAX does.
            if av.dtype != dtypes.bool_:
                a = not_equal(a, 0)
            return astype(lax_fn(astype(a, dtypes.default_int()), ax), dt)
        return lax_fn(astype(a, dt), ax)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"""Cumulative {what} along an axis (``jax.numpy.{name}``).

    Arguments:
      a: an array or number.
      axis: the axis, or None to accumulate the flattened array.
      dtype: the accumulation and result dtype (default: bools accumulate in the default
        integer, other dtypes keep theirs, as in JAX).
      out: must be None (NotImplementedError otherwise, as in JAX).
    Returns:
      An Array of ``a``'s shape (1-D when ``axis`` is None).
    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.array([[1, 2, 3], [4, 5, 6]])
      >>> jnp.{name}(x)
      {flat}
      >>> jnp.{name}(x, axis=1)
      {rows}
    """
    return f


cumsum = _cumulative(
    _ascan.cumsum,
    "cumsum",
    "sum",
    "Array([ 1,  3,  6, 10, 15, 21], dtype=int32)",
    "Array([[ 1,  3,  6],\n             [ 4,  9, 15]], dtype=int32)",
)
cumprod = _cumulative(
    _ascan.cumprod,
    "cumprod",
    "product",
    "Array([  1,   2,   6,  24, 120, 720], dtype=int32)",
    "Array([[  1,   2,   6],\n             [  4,  20, 120]], dtype=int32)",
)


def _cumulative_api(fn, name, identity, promote=True):
    def f(x, /, *, axis=None, dtype=None, include_initial=False):
        x = asarray(x) if not _is_array(x) else x
        av = _aval(x)
        if av.ndim == 0:
            raise FunctxValueError(
                f"{name} needs an array of rank >= 1, got {av.str_short()}{_loc()}"
            )
        if axis is None:
            if av.ndim > 1:
                raise FunctxValueError(
                    f"{name}: axis must be given for an array of rank {av.ndim}{_loc()}"
                )
            x = ravel(x)
            axis = 0
        ax = _canon_axis(axis, _aval(x).ndim, f"{name} axis")
        # Like JAX: cumulative_sum promotes like sum (small integers and bools to int32);
        # cumulative_prod like cumprod (only bools, to int32).
        xdt = _aval(x).dtype
        dt = (
            _dt(dtype, None, "cumulative_sum/prod")
            if dtype is not None
            else (
                _sum_dtype(xdt) if promote else dtypes.default_int() if xdt == dtypes.bool_ else xdt
            )
        )
        out = fn(astype(x, dt), ax)
        if include_initial:
            shape = list(_aval(out).shape)
            shape[ax] = 1
            out = concatenate([full(tuple(shape), identity, dt), out], axis=ax)
        return out

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"``jax.numpy.{name}`` (the array API's cumulative reduction)."
    return f


cumulative_sum = _cumulative_api(cumsum, "cumulative_sum", 0)
cumulative_sum.__doc__ = """Cumulative sum along an axis (``jax.numpy.cumulative_sum``).

Arguments:
  x: an array of rank >= 1.
  axis: the axis; may be None only for a 1-D array (ValueError otherwise, as in JAX).
  dtype: the accumulation and result dtype (default: bools and small integers widen to the default
    integer, as for ``sum``).
  include_initial: start the result with the identity (so the axis grows by 1).
Returns:
  An Array of ``x``'s shape (one longer along ``axis`` with ``include_initial``).
Example:
  >>> import functx.numpy as jnp
  >>> jnp.cumulative_sum(jnp.array([1, 2, 3, 4]))
  Array([ 1,  3,  6, 10], dtype=int32)
  >>> jnp.cumulative_sum(jnp.array([[1, 2], [3, 4]]), axis=0, include_initial=True)
  Array([[0, 0],
         [1, 2],
         [4, 6]], dtype=int32)
"""
cumulative_prod = _cumulative_api(cumprod, "cumulative_prod", 1, promote=False)
cumulative_prod.__doc__ = """Cumulative product along an axis (``jax.numpy.cumulative_prod``).

Arguments:
  x: an array of rank >= 1.
  axis: the axis; may be None only for a 1-D array (ValueError otherwise, as in JAX).
  dtype: the accumulation and result dtype (default: bools accumulate in the default integer,
    other dtypes keep theirs).
  include_initial: start the result with the identity (so the axis grows by 1).
Returns:
  An Array of ``x``'s shape (one longer along ``axis`` with ``include_initial``).
Example:
  >>> import functx.numpy as jnp
  >>> jnp.cumulative_prod(jnp.array([1, 2, 3, 4]))
  Array([ 1,  2,  6, 24], dtype=int32)
  >>> jnp.cumulative_prod(jnp.array([[1, 2], [3, 4]]), axis=0, include_initial=True)
  Array([[1, 1],
         [1, 2],
         [3, 8]], dtype=int32)
"""


def _nan_extremum(fn, fill, a, axis, keepdims):
    a = _arraylike(a, "nan" + fn.__name__)
    dt = _aval(a).dtype
    if dt not in dtypes.FLOATS:
        return fn(a, axis, keepdims=keepdims)
    nan = isnan(a)
    out = fn(where(nan, full((), fill, dt), a), axis, keepdims=keepdims)
    # Like JAX: a slice of NaNs only gives NaN.
    return where(all(nan, axis, keepdims=keepdims), full((), np.nan, dt), out)


def nanmax(a, axis=None, keepdims=False):
    """``max`` ignoring NaNs (NaN where every element is NaN), like ``jax.numpy.nanmax``."""
    return _nan_extremum(max, -np.inf, a, axis, keepdims)


def nanmin(a, axis=None, keepdims=False):
    """``min`` ignoring NaNs (NaN where every element is NaN), like ``jax.numpy.nanmin``."""
    return _nan_extremum(min, np.inf, a, axis, keepdims)


# --- shape manipulation --------------------------------------------------------------------------
def shape(a):
    """The shape of an array or number (``jax.numpy.shape``).

    Arguments:
      a: an array, number or nested list.
    Returns:
      A tuple of ints.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.shape(jnp.zeros((2, 3)))
      (2, 3)
      >>> jnp.shape(1.0)
      ()
    """
    return _aval(a).shape


def ndim(a):
    """The number of dimensions (``jax.numpy.ndim``).

    Arguments:
      a: an array, number or nested list.
    Returns:
      An int.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.ndim(jnp.zeros((2, 3)))
      2
    """
    return _aval(a).ndim


def size(a, axis=None):
    """The number of elements (``jax.numpy.size``).

    Arguments:
      a: an array, number or nested list.
      axis: None for all elements, an axis or a sequence of distinct axes (their lengths
        multiply).
    Returns:
      An int.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.size(jnp.zeros((2, 3)))
      6
      >>> jnp.size(jnp.zeros((2, 3)), axis=1)
      3
    """
    av = _aval(a)
    if axis is None:
        return av.size
    return math.prod(av.shape[i] for i in _v.axes(axis, av.ndim, "size", sort=False))


def reshape(a, shape, order="C", *, copy=None):
    """``a`` with a new shape, like ``jax.numpy.reshape`` (one dimension may be -1).

    Arguments:
      a: an array or a scalar.
      shape: an int or a sequence of ints.
      order: ``"C"`` (row-major) or ``"F"`` (column-major); ``"A"`` raises as in JAX.
      copy: accepted for the Array API and unused, as in JAX (functx arrays are immutable).
    Returns:
      An Array of ``shape`` with ``a``'s elements in ``order``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.reshape(jnp.arange(6), (2, -1))
      Array([[0, 1, 2],
             [3, 4, 5]], dtype=int32)
    """
    del copy  # unused: the result never aliases a mutable buffer
    a = _arraylike(a, "reshape")
    if order == "A":
        raise UnsupportedError(f"reshape: order='A' is not implemented (nor in JAX){_loc()}")
    if order not in ("C", "F"):
        raise FunctxValueError(f"Unexpected value for 'order' argument: {order}{_loc()}")
    av = _aval(a)
    shape = list(_v.axis_seq(shape, "reshape", "shape"))
    if builtins.any(d < -1 for d in shape):
        raise FunctxValueError(f"reshape: shape {tuple(shape)} has a negative dimension{_loc()}")
    if shape.count(-1) > 1:
        raise FunctxArgumentError(
            f"reshape: can only specify one unknown dimension, got {shape}{_loc()}"
        )
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        if known == 0 or av.size % known:
            raise FunctxArgumentError(
                f"reshape: cannot reshape {av.str_short()} into shape {tuple(shape)}{_loc()}"
            )
        shape[shape.index(-1)] = av.size // known
    if order == "F":
        # Column-major: reverse the axes, reshape to the reversed shape, reverse back.
        rev = ops.reshape(ops.transpose(a, tuple(range(av.ndim))[::-1]), tuple(shape[::-1]))
        return ops.transpose(rev, tuple(range(len(shape)))[::-1])
    return ops.reshape(a, tuple(shape))


def ravel(a, order="C"):
    """The elements as a 1-D array, in row-major order (``jax.numpy.ravel``).

    Arguments:
      a: an array or number.
      order: ``'C'`` (row-major) or ``'F'`` (column-major).
    Returns:
      A 1-D Array.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.ravel(jnp.array([[1, 2], [3, 4]]))
      Array([1, 2, 3, 4], dtype=int32)
    """
    if order == "K":
        raise UnsupportedError(f"ravel: order='K' is not implemented (nor in JAX){_loc()}")
    return reshape(a, (-1,), order)


def transpose(a, axes=None):
    """Permute the axes (``jax.numpy.transpose``; also ``permute_dims``).

    Arguments:
      a: an array or number.
      axes: a permutation of ``range(a.ndim)``; None reverses the axes.
    Returns:
      An Array with ``shape[i] == a.shape[axes[i]]``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.transpose(jnp.zeros((2, 3, 4))).shape
      (4, 3, 2)
      >>> jnp.transpose(jnp.array([[1, 2], [3, 4]]), (1, 0))
      Array([[1, 3],
             [2, 4]], dtype=int32)
    """
    a = _arraylike(a, "transpose")
    nd = _aval(a).ndim
    if axes is None:
        axes = tuple(range(nd))[::-1]
    axes = tuple(
        _canon_axis(x, nd, "transpose axes") for x in _v.axis_seq(axes, "transpose", "axes")
    )
    if sorted(axes) != list(range(nd)):
        raise FunctxTypeError(f"transpose: axes {axes} are not a permutation of {nd} axes{_loc()}")
    return ops.transpose(a, axes)


permute_dims = transpose


def matrix_transpose(x, /):
    """Swap the last two axes (``jax.numpy.matrix_transpose``).

    Arguments:
      x: an array of rank >= 2.
    Returns:
      An Array with the last two axes swapped.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.matrix_transpose(jnp.zeros((5, 2, 3))).shape
      (5, 3, 2)
    """
    return swapaxes(x, -1, -2)


def moveaxis(a, source, destination):
    """Move axes to new positions (``jax.numpy.moveaxis``).

    Arguments:
      a: an array.
      source: an axis or a sequence of axes to move.
      destination: their new positions (same length as ``source``).
    Returns:
      An Array with the axes moved and the others kept in order.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.moveaxis(jnp.zeros((2, 3, 4)), 0, -1).shape
      (3, 4, 2)
    """
    a = _arraylike(a, "moveaxis")
    nd = _aval(a).ndim
    src = [_canon_axis(s, nd, "moveaxis source") for s in _v.axis_seq(source, "moveaxis", "source")]
    dst = [
        _canon_axis(d, nd, "moveaxis destination")
        for d in _v.axis_seq(destination, "moveaxis", "destination")
    ]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise FunctxTypeError(
            f"moveaxis: repeated axis in source {source} or destination {destination}{_loc()}"
        )
    if len(src) != len(dst):
        raise FunctxTypeError(
            f"moveaxis: source {source} and destination {destination} must have "
            f"the same number of elements{_loc()}"
        )
    order = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return ops.transpose(a, tuple(order))


def swapaxes(a, axis1, axis2):
    """Swap two axes (``jax.numpy.swapaxes``).

    Arguments:
      a: an array.
      axis1, axis2: the two axes.
    Returns:
      An Array with the two axes swapped.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.swapaxes(jnp.zeros((2, 3, 4)), 0, 2).shape
      (4, 3, 2)
    """
    a = _arraylike(a, "swapaxes")
    nd = _aval(a).ndim
    perm = list(range(nd))
    i, j = _canon_axis(axis1, nd, "swapaxes axis1"), _canon_axis(axis2, nd, "swapaxes axis2")
    perm[i], perm[j] = perm[j], perm[i]
    return ops.transpose(a, tuple(perm))


def squeeze(a, axis=None):
    """Remove axes of length 1 (``jax.numpy.squeeze``).

    Arguments:
      a: an array.
      axis: None (every length-1 axis), an int or a tuple of ints.
    Returns:
      An Array without those axes.
    Raises:
      ValueError: when a named axis does not have length 1, as in JAX.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.squeeze(jnp.zeros((1, 3, 1))).shape
      (3,)
      >>> jnp.squeeze(jnp.zeros((1, 3, 1)), axis=0).shape
      (3, 1)
    """
    a = _arraylike(a, "squeeze")
    av = _aval(a)
    if axis is None:
        axes = tuple(i for i, d in enumerate(av.shape) if d == 1)
    else:
        axes = _norm_axis(axis, av.ndim, "squeeze axis")
        for i in axes:
            if av.shape[i] != 1:
                raise FunctxArgumentError(
                    f"squeeze: cannot select an axis to squeeze out which has "
                    f"size not equal to one: axis {i} of {av.str_short()}"
                    f"{_loc()}"
                )
    return ops.squeeze(a, axes)


def expand_dims(a, axis):
    """Insert axes of length 1 (``jax.numpy.expand_dims``).

    Arguments:
      a: an array or number.
      axis: an int or a tuple of ints: positions in the result.
    Returns:
      An Array of rank ``a.ndim + len(axis)``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.expand_dims(jnp.zeros((2, 3)), (0, 3)).shape
      (1, 2, 3, 1)
    """
    a = _arraylike(a, "expand_dims")
    axes = _v.axis_seq(axis, "expand_dims", "axis")
    n = _aval(a).ndim + len(axes)
    dims = sorted(_canon_axis(d, n, "expand_dims axis") for d in axes)
    if len(set(dims)) != len(dims):
        # (a ValueError, as JAX's)
        raise FunctxArgumentError(f"expand_dims: repeated axis in {axis}{_loc()}")
    return ops.expand_dims(a, tuple(dims))


def atleast_1d(*arys):
    """View inputs as arrays of rank >= 1 (``jax.numpy.atleast_1d``).

    Arguments:
      *arys: arrays or numbers.
    Returns:
      One Array for one input, else a list; a 0-D input becomes ``(1,)``,
      a 1-D one is unchanged.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.atleast_1d(3.0).shape
      (1,)
      >>> [x.shape for x in jnp.atleast_1d(jnp.zeros(2), jnp.zeros((2, 2)))]
      [(2,), (2, 2)]
    """
    out = [reshape(a, (1,)) if _aval(a).ndim == 0 else asarray(a) for a in arys]
    return out[0] if len(out) == 1 else out


def atleast_2d(*arys):
    """View inputs as arrays of rank >= 2 (``jax.numpy.atleast_2d``).

    Arguments:
      *arys: arrays or numbers.
    Returns:
      One Array for one input, else a list; a 0-D input becomes ``(1, 1)``,
      a 1-D one ``(1, n)``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.atleast_2d(3.0).shape
      (1, 1)
      >>> [x.shape for x in jnp.atleast_2d(jnp.zeros(2), jnp.zeros((2, 2)))]
      [(1, 2), (2, 2)]
    """
    out = []
    for a in arys:
        a = asarray(a)
        out.append(reshape(a, (1,) * (2 - a.ndim) + a.shape) if a.ndim < 2 else a)
    return out[0] if len(out) == 1 else out


def atleast_3d(*arys):
    """View inputs as arrays of rank >= 3 (``jax.numpy.atleast_3d``).

    Arguments:
      *arys: arrays or numbers.
    Returns:
      One Array for one input, else a list; a 0-D input becomes ``(1, 1, 1)``,
      a 1-D one ``(1, n, 1)``, a 2-D one ``(m, n, 1)``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.atleast_3d(3.0).shape
      (1, 1, 1)
      >>> [x.shape for x in jnp.atleast_3d(jnp.zeros(2), jnp.zeros((2, 2)))]
      [(1, 2, 1), (2, 2, 1)]
    """
    out = []
    for a in arys:
        a = asarray(a)
        if a.ndim == 0:
            a = reshape(a, (1, 1, 1))
        elif a.ndim == 1:
            a = reshape(a, (1, a.shape[0], 1))
        elif a.ndim == 2:
            a = reshape(a, a.shape + (1,))
        out.append(a)
    return out[0] if len(out) == 1 else out


def concatenate(arrays, axis=0, dtype=None):
    """Join arrays along an existing axis (``jax.numpy.concatenate``).

    Arguments:
      arrays: a sequence of arrays with equal shapes except along ``axis``.
      axis: the axis to join along; None flattens every input first.
      dtype: the result dtype (default: the promoted dtype).
    Returns:
      An Array.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.concatenate([jnp.array([[1, 2]]), jnp.array([[3, 4], [5, 6]])])
      Array([[1, 2],
             [3, 4],
             [5, 6]], dtype=int32)
      >>> jnp.concatenate([jnp.array([1]), jnp.array([2.5])], axis=None)
      Array([1. , 2.5], dtype=float32)
    """
    arrays = [asarray(a) if not _is_array(a) else a for a in arrays]
    if not arrays:
        raise FunctxTypeError(f"concatenate needs at least one array{_loc()}")
    if axis is None:
        arrays = [ravel(a) for a in arrays]
        axis = 0
    if _aval(arrays[0]).ndim == 0:
        raise FunctxTypeError(f"zero-dimensional arrays cannot be concatenated{_loc()}")
    arrays = _promote_only(*arrays) if len(arrays) > 1 else arrays
    if dtype is not None:
        arrays = [astype(a, dtype) for a in arrays]
    nd = _aval(arrays[0]).ndim
    for a in arrays:
        if _aval(a).ndim != nd:
            raise FunctxTypeError(
                "concatenate: all the input arrays must have the same number of dimensions, got "
                f"{', '.join(_aval(x).str_short() for x in arrays)}{_loc()}"
            )
    return ops.concatenate(arrays, _canon_axis(axis, nd, "concatenate axis"))


def _promote_only(*arrays, kind=None):
    """Promote dtypes only (no broadcasting); ``kind="inexact"`` then maps to a float dtype."""
    dt, weak = dtypes.result_type(*[(_aval(a).dtype, _aval(a).weak_type) for a in arrays])
    if kind == "inexact":
        dt = _inexact(dt)
    return [ops.convert_element_type(a, dt, weak) if _aval(a).dtype != dt else a for a in arrays]


def concat(arrays, /, *, axis=0):
    """Join arrays along an existing axis, the array API's form (``jax.numpy.concat``).

    Arguments:
      arrays: a sequence of arrays with equal shapes except along ``axis``.
      axis: the axis to join along; None flattens every input first.
    Returns:
      An Array of the promoted dtype.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.concat([jnp.array([1, 2]), jnp.array([3])])
      Array([1, 2, 3], dtype=int32)
    """
    return concatenate(arrays, axis)


def stack(arrays, axis=0, out=None, dtype=None):
    """Join arrays along a new axis (``jax.numpy.stack``).

    Arguments:
      arrays: a sequence of arrays of one shape.
      axis: the new axis's position in the result.
      out: must be None (NotImplementedError otherwise, as in JAX).
      dtype: the result dtype (default: the promoted dtype).
    Returns:
      An Array of rank one more than the inputs'.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.stack([jnp.array([1, 2]), jnp.array([3, 4])], axis=1)
      Array([[1, 3],
             [2, 4]], dtype=int32)
    """
    _no_out(out, "stack")
    arrays = [asarray(a) if not _is_array(a) else a for a in arrays]
    if not arrays:
        raise FunctxTypeError(f"stack needs at least one array{_loc()}")
    shapes = {_aval(a).shape for a in arrays}
    if len(shapes) != 1:
        raise FunctxArgumentError(
            f"stack: all input arrays must have the same shape, got "
            f"{', '.join(_aval(a).str_short() for a in arrays)}{_loc()}"
        )
    nd = _aval(arrays[0]).ndim + 1
    axis = _canon_axis(axis, nd, "stack axis")
    arrays = _promote_only(*arrays)
    if dtype is not None:
        arrays = [astype(a, dtype) for a in arrays]
    return ops.concatenate([ops.expand_dims(a, (axis,)) for a in arrays], axis)


def vstack(tup, dtype=None):
    """Stack arrays row-wise (``jax.numpy.vstack``; also ``row_stack``).

    Arguments:
      tup: a sequence of arrays; 1-D ones become rows.
      dtype: the result dtype (default: the promoted dtype).
    Returns:
      An Array joined along axis 0.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.vstack([jnp.array([1, 2]), jnp.array([3, 4])])
      Array([[1, 2],
             [3, 4]], dtype=int32)
    """
    return concatenate([atleast_2d(a) for a in tup], 0, dtype)


row_stack = vstack


def hstack(tup, dtype=None):
    """Stack arrays column-wise (``jax.numpy.hstack``).

    Arguments:
      tup: a sequence of arrays; 1-D ones join along axis 0, others along axis 1.
      dtype: the result dtype (default: the promoted dtype).
    Returns:
      An Array.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.hstack([jnp.array([1, 2]), jnp.array([3])])
      Array([1, 2, 3], dtype=int32)
    """
    arrs = [atleast_1d(a) for a in tup]
    if not arrs:
        raise FunctxValueError(f"hstack needs at least one array{_loc()}")
    return concatenate(arrs, 0 if _aval(arrs[0]).ndim == 1 else 1, dtype)


def dstack(tup, dtype=None):
    """Stack arrays depth-wise, along axis 2 (``jax.numpy.dstack``).

    Arguments:
      tup: a sequence of arrays, each viewed as at least 3-D.
      dtype: the result dtype (default: the promoted dtype).
    Returns:
      An Array of rank >= 3.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.dstack([jnp.array([1, 2]), jnp.array([3, 4])]).shape
      (1, 2, 2)
    """
    return concatenate([atleast_3d(a) for a in tup], 2, dtype)


def column_stack(tup):
    """Stack 1-D arrays as columns of a 2-D array (``jax.numpy.column_stack``).

    Arguments:
      tup: a sequence of arrays; 1-D ones become columns, others join along axis 1.
    Returns:
      A 2-D (or higher) Array.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.column_stack([jnp.array([1, 2]), jnp.array([3, 4])])
      Array([[1, 3],
             [2, 4]], dtype=int32)
    """
    arrs = [reshape(a, (-1, 1)) if _aval(a).ndim < 2 else a for a in tup]
    return concatenate(arrs, 1)


_MAX_SECTIONS = 2**24  # split's outputs are Python lists: more would exhaust memory or time


def split(ary, indices_or_sections, axis=0):
    """Split an array into pieces along an axis (``jax.numpy.split``).

    Arguments:
      ary: an array.
      indices_or_sections: an int N (N equal pieces; the axis must divide evenly) or a
        sequence of non-decreasing split indices in ``[0, len]`` (negative, decreasing or
        too large indices raise ValueError, as in JAX; NumPy takes them).
      axis: the axis to split.
    Returns:
      A list of Arrays.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.split(jnp.arange(6), 3)
      [Array([0, 1], dtype=int32), Array([2, 3], dtype=int32), Array([4, 5], dtype=int32)]
      >>> jnp.split(jnp.arange(5), [1, 3])
      [Array([0], dtype=int32), Array([1, 2], dtype=int32), Array([3, 4], dtype=int32)]
    """
    ary = asarray(ary) if not _is_array(ary) else ary
    av = _aval(ary)
    axis = _canon_axis(axis, av.ndim, "split axis")
    n = av.shape[axis]
    if _v.is_int_like(indices_or_sections):
        k = _v.integer(indices_or_sections, "split", "indices_or_sections")
        if k == 0:  # JAX: ZeroDivisionError (this class is also a ValueError)
            raise FunctxZeroDivisionError(f"split: the number of sections is 0{_loc()}")
        if k < 0:
            raise FunctxValueError(f"split: the number of sections must be > 0, got {k}{_loc()}")
        if k > _MAX_SECTIONS:
            raise FunctxOverflowError(
                f"split: {k} sections is more than functx makes ({_MAX_SECTIONS}){_loc()}"
            )
        if n % k:
            raise FunctxValueError(
                f"split: array split does not result in an equal division: "
                f"axis of size {n} into {k} sections{_loc()}"
            )
        bounds = [i * (n // k) for i in range(k + 1)]
    else:
        if (
            not isinstance(indices_or_sections, (list, tuple, np.ndarray, Array))
            or np.ndim(indices_or_sections) != 1
        ):
            raise FunctxTypeError(
                f"split: indices_or_sections must be an int or a sequence of "
                f"ints, got {indices_or_sections!r}{_loc()}"
            )
        idx = [_v.integer(i, "split", "index") for i in indices_or_sections]
        # JAX's rule: the pieces' sizes (the differences of 0, the indices, n) are >= 0.
        bounds = [0, *idx, n]
        sizes = [bounds[i + 1] - bounds[i] for i in range(len(bounds) - 1)]
        if builtins.any(d < 0 for d in sizes):
            raise FunctxValueError(
                f"split: sizes passed to split must be nonnegative, got {sizes} (the indices "
                f"must be non-decreasing, in [0, {n}]){_loc()}"
            )
    return [
        ops.slice_in_dim(ary, bounds[i], builtins.max(bounds[i + 1], bounds[i]), 1, axis)
        for i in range(len(bounds) - 1)
    ]


def array_split(ary, indices_or_sections, axis=0):
    """Split into N nearly equal pieces, or at indices (``jax.numpy.array_split``).

    Arguments:
      ary: an array.
      indices_or_sections: an int N (the first ``len % N`` pieces get one extra element) or
        a sequence of split indices.
      axis: the axis to split.
    Returns:
      A list of Arrays.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.array_split(jnp.arange(5), 2)
      [Array([0, 1, 2], dtype=int32), Array([3, 4], dtype=int32)]
    """
    if _v.is_int_like(indices_or_sections):
        ary = asarray(ary) if not _is_array(ary) else ary
        n = _aval(ary).shape[_canon_axis(axis, _aval(ary).ndim, "array_split axis")]
        k = _v.integer(indices_or_sections, "array_split", "indices_or_sections")
        if k == 0:  # JAX: ZeroDivisionError (this class is also a ValueError)
            raise FunctxZeroDivisionError(f"array_split: the number of sections is 0{_loc()}")
        if k < 0:
            raise FunctxValueError(
                f"array_split: the number of sections must be > 0, got {k}{_loc()}"
            )
        if k > _MAX_SECTIONS:
            raise FunctxOverflowError(
                f"array_split: {k} sections is more than functx makes ({_MAX_SECTIONS}){_loc()}"
            )
        sizes = [n // k + (1 if i < n % k else 0) for i in range(k)]
        indices_or_sections = list(np.cumsum(sizes)[:-1])
    return split(ary, indices_or_sections, axis)


def vsplit(ary, s):
    """Split along axis 0 (``jax.numpy.vsplit``).

    Arguments:
      ary: an array of rank >= 2.
      s: a number of equal pieces or a sequence of split indices.
    Returns:
      A list of Arrays.
    Example:
      >>> import functx.numpy as jnp
      >>> [x.shape for x in jnp.vsplit(jnp.zeros((4, 3)), 2)]
      [(2, 3), (2, 3)]
    """
    return split(ary, s, 0)


def hsplit(ary, s):
    """Split along axis 1 (axis 0 for 1-D arrays) (``jax.numpy.hsplit``).

    Arguments:
      ary: an array of rank >= 1.
      s: a number of equal pieces or a sequence of split indices.
    Returns:
      A list of Arrays.
    Example:
      >>> import functx.numpy as jnp
      >>> [x.shape for x in jnp.hsplit(jnp.zeros((4, 6)), [1, 4])]
      [(4, 1), (4, 3), (4, 2)]
    """
    return split(ary, s, 1 if _aval(ary).ndim > 1 else 0)


def tile(A, reps):
    """Repeat a whole array along each axis (``jax.numpy.tile``).

    Arguments:
      A: an array or number.
      reps: an int or a tuple of ints, the repetitions per axis.
    Returns:
      An Array of rank ``max(A.ndim, len(reps))``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.tile(jnp.array([1, 2]), (2, 2))
      Array([[1, 2, 1, 2],
             [1, 2, 1, 2]], dtype=int32)
    """
    A = asarray(A) if not _is_array(A) else A
    reps = _v.axis_seq(reps, "tile", "reps")
    if builtins.any(r < 0 for r in reps):
        raise FunctxValueError(f"tile: reps {reps} must be >= 0{_loc()}")
    _v.check_size(tuple(reps) + _aval(A).shape, "tile", "output shape", _aval(A).dtype)
    av = _aval(A)
    nd = builtins.max(av.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    A = reshape(A, (1,) * (nd - av.ndim) + av.shape)
    shape = _aval(A).shape
    # Broadcast each axis to (rep, size) and merge.
    big = []
    dims = []
    for i, (r, s) in enumerate(zip(reps, shape)):
        big += [r, s]
        dims.append(2 * i + 1)
    out = ops.broadcast_in_dim(A, tuple(big), tuple(dims))
    return ops.reshape(out, tuple(r * s for r, s in zip(reps, shape)))


def repeat(a, repeats, axis=None, *, total_repeat_length=None):
    """Repeat each element along an axis (``jax.numpy.repeat``).

    Arguments:
      a: an array or number.
      repeats: an int, or an integer array with one count per element along ``axis``; an array
        must be concrete unless ``total_repeat_length`` is given.
      axis: the axis, or None to repeat the flattened array.
      total_repeat_length: the static output length along ``axis``: the result is truncated, or
        padded by repeating the last element, to it.
    Returns:
      An Array.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.repeat(jnp.array([1, 2]), 2)
      Array([1, 1, 2, 2], dtype=int32)
      >>> jnp.repeat(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 2]), axis=0)
      Array([[1, 2],
             [3, 4],
             [3, 4]], dtype=int32)
    """
    a = _arraylike(a, "repeat")
    if axis is None:
        a = ravel(a)
        axis = 0
    av = _aval(a)
    axis = _canon_axis(axis, av.ndim, "repeat axis")
    n = av.shape[axis]
    if total_repeat_length is None:
        if isinstance(repeats, Tracer):
            raise FunctxTypeError(
                f"repeat with traced repeats has a data-dependent shape"
                f"{_loc()}; pass a concrete array or an int, or give "
                "total_repeat_length"
            )
        try:
            reps = np.asarray(repeats)
        except (TypeError, ValueError):
            reps = np.asarray(None)
        if reps.dtype.kind not in "iub":  # (bool counts as 0/1, as in JAX)
            raise FunctxTypeError(f"repeat: repeats must be integers, got {repeats!r}{_loc()}")
        if reps.dtype.kind == "u" and reps.size and reps.max() > np.iinfo(np.int64).max:
            raise FunctxValueError(f"repeat: repeats {repeats!r} are too large{_loc()}")
        reps = reps.astype(np.int64)  # (np.repeat refuses uint64 counts)
        if (reps < 0).any():
            raise FunctxValueError(f"repeat: repeats must be >= 0, got {repeats!r}{_loc()}")
        if reps.ndim > 1 or (reps.ndim == 1 and reps.shape[0] not in (1, n)):
            raise FunctxValueError(
                f"repeat: repeats of shape {reps.shape} must be a scalar or "
                f"have one entry per element ({n}) along axis {axis}{_loc()}"
            )
        _v.check_size(
            (int(reps.max(initial=0)) * n if reps.ndim == 0 else int(reps.astype(object).sum()),)
            + av.shape[:axis]
            + av.shape[axis + 1 :],
            "repeat",
            "output shape",
            av.dtype,
        )
        if reps.ndim == 0:
            r = int(reps)
            shape = av.shape[: axis + 1] + (r,) + av.shape[axis + 1 :]
            dims = tuple(range(axis + 1)) + tuple(range(axis + 2, av.ndim + 1))
            out = ops.broadcast_in_dim(a, shape, dims)
            return ops.reshape(out, av.shape[:axis] + (n * r,) + av.shape[axis + 1 :])
        idx = np.repeat(np.arange(n), np.broadcast_to(reps.ravel(), (n,)))
        return take(a, UncommittedArray.from_value(idx.astype(np.int32)), axis=axis)
    # A static output length: JAX's construction, which works for traced repeats.
    total = _v.integer(total_repeat_length, "repeat", "total_repeat_length", minimum=0)
    if total == 0 or n == 0:
        return a if n == 0 else zeros(av.shape[:axis] + (0,) + av.shape[axis + 1 :], av.dtype)
    reps = broadcast_to(ravel(asarray(repeats)), (n,))
    exclusive = roll(reps, 1).at[0].set(0)
    starts = cumsum(exclusive)
    marks = zeros((total,), dtypes.int32).at[starts].add(1)
    idx = subtract(cumsum(marks), 1)
    return take(a, idx, axis=axis)


def flip(m, axis=None):
    """Reverse the order of elements along axes (``jax.numpy.flip``).

    Arguments:
      m: an array.
      axis: None (every axis), an int or a tuple of ints.
    Returns:
      An Array of ``m``'s shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.flip(jnp.array([[1, 2], [3, 4]]), axis=1)
      Array([[2, 1],
             [4, 3]], dtype=int32)
    """
    m = asarray(m) if not _is_array(m) else m
    return ops.rev(m, _norm_axis(axis, _aval(m).ndim, "flip axis"))


def fliplr(m):
    """Reverse along axis 1 (``jax.numpy.fliplr``).

    Arguments:
      m: an array of rank >= 2.
    Returns:
      An Array of ``m``'s shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.fliplr(jnp.array([[1, 2], [3, 4]]))
      Array([[2, 1],
             [4, 3]], dtype=int32)
    """
    return flip(m, 1)


def flipud(m):
    """Reverse along axis 0 (``jax.numpy.flipud``).

    Arguments:
      m: an array of rank >= 1.
    Returns:
      An Array of ``m``'s shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.flipud(jnp.array([[1, 2], [3, 4]]))
      Array([[3, 4],
             [1, 2]], dtype=int32)
    """
    return flip(m, 0)


def roll(a, shift, axis=None):
    """Shift elements cyclically along axes (``jax.numpy.roll``).

    Arguments:
      a: an array.
      shift: an int or a tuple of ints (one per axis).
      axis: None (roll the flattened array, then restore the shape), an int or a tuple of ints.
    Returns:
      An Array of ``a``'s shape.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.roll(jnp.arange(5), 2)
      Array([3, 4, 0, 1, 2], dtype=int32)
      >>> jnp.roll(jnp.array([[1, 2, 3], [4, 5, 6]]), -1, axis=1)
      Array([[2, 3, 1],
             [5, 6, 4]], dtype=int32)
    """
    a = _arraylike(a, "roll")
    if axis is None:
        return reshape(roll(ravel(a), shift, 0), _aval(a).shape)
    if isinstance(shift, Tracer):
        return _roll_dynamic(a, shift, axis)
    shifts = _v.axis_seq(shift, "roll", "shift")
    axes = _v.axis_seq(axis, "roll", "axis")
    if len(shifts) != len(axes) and 1 not in (len(shifts), len(axes)):
        raise FunctxValueError(
            f"roll: shift {shift} and axis {axis} must have the same length{_loc()}"
        )
    # broadcast against each other as NumPy and JAX do (shifts of one axis add up)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(axes) == 1 and len(shifts) > 1:
        axes = axes * len(shifts)
    for s, ax in zip(shifts, axes):
        av = _aval(a)
        ax = _canon_axis(ax, av.ndim, "roll axis")
        n = av.shape[ax]
        if n == 0:
            continue
        if isinstance(s, Tracer):
            return _roll_dynamic(a, asarray(shift), axis)
        s = int(s) % n
        if s:
            a = ops.concatenate(
                [ops.slice_in_dim(a, n - s, n, 1, ax), ops.slice_in_dim(a, 0, n - s, 1, ax)], ax
            )
    return a


def _roll_dynamic(a, shift, axis):
    """``roll`` by a traced shift (a scalar or 1-D integer array): per axis, a slice of length
    n starting at ``n - shift % n`` of ``a`` concatenated with itself."""
    axes = _v.axis_seq(axis, "roll", "axis")
    sv = _aval(shift)
    if sv.dtype not in dtypes.INTEGERS:
        raise FunctxTypeError(f"roll: shift must be integers, got {sv.str_short()}{_loc()}")
    if sv.ndim > 1 or (sv.ndim == 1 and len(axes) not in (1, sv.shape[0])):
        raise FunctxValueError(
            f"'shift' and 'axis' arguments to roll must be scalars or 1D arrays{_loc()}"
        )
    count = builtins.max(len(axes), sv.shape[0] if sv.ndim else 1)
    shifts = [shift if sv.ndim == 0 else shift[j if sv.shape[0] > 1 else 0] for j in range(count)]
    axes = axes * count if len(axes) == 1 else axes
    for x, ax in zip(shifts, axes):
        ax = _canon_axis(ax, _aval(a).ndim, "roll axis")
        n = _aval(a).shape[ax]
        if n == 0:
            continue
        x = remainder(astype(x, dtypes.int32), np.int32(n))
        both = ops.concatenate([a, a], ax)
        a = ops.dynamic_slice_in_dim(both, subtract(np.int32(n), x), n, ax)
    return a


_PAD_MODES = (
    "constant",
    "edge",
    "linear_ramp",
    "maximum",
    "mean",
    "median",
    "minimum",
    "reflect",
    "symmetric",
    "wrap",
    "empty",
)


def _pad_width(pad_width, av):
    """``pad_width`` as an (ndim, 2) array of non-negative ints: an int, a pair, one pair per axis
    (NumPy's forms); a functx error otherwise."""
    if isinstance(pad_width, Tracer):
        raise FunctxTypeError(
            f"pad: pad_width must be concrete, got {_v._describe(pad_width)}{_loc()}"
        )
    try:
        raw = np.asarray(pad_width if not _is_array(pad_width) else np.asarray(pad_width))
    except (TypeError, ValueError):
        raise FunctxTypeError(
            f"pad: pad_width must be an int, a pair of ints or one pair per "
            f"axis, got {pad_width!r}{_loc()}"
        ) from None
    if raw.dtype == np.bool_ or raw.dtype not in (
        np.dtype(np.int8),
        np.dtype(np.int16),
        np.dtype(np.int32),
        np.dtype(np.int64),
        np.dtype(np.uint8),
        np.dtype(np.uint16),
        np.dtype(np.uint32),
        np.dtype(np.uint64),
    ):
        if not (raw.size == 0 and raw.dtype == np.float64):
            raise FunctxTypeError(f"pad: pad_width must hold integers, got {pad_width!r}{_loc()}")
        raw = raw.astype(np.int64)
    ok = {(), (1,), (2,), (1, 1), (1, 2), (av.ndim, 1), (av.ndim, 2)}
    if raw.shape not in ok:
        raise FunctxValueError(
            f"pad: pad_width of shape {raw.shape} does not fit "
            f"{av.str_short()}: give an int, a pair, or {av.ndim} pairs"
            f"{_loc()}"
        )
    pw = np.broadcast_to(
        raw.reshape(-1, 2) if raw.ndim and raw.shape[-1] == 2 else raw.reshape(-1, 1), (av.ndim, 2)
    ).astype(object)
    if (pw < 0).any():
        raise FunctxValueError(f"pad: pad_width {pad_width!r} has a negative width{_loc()}")
    _v.check_size(
        tuple(int(d + lo + hi) for d, (lo, hi) in zip(av.shape, pw)),
        "pad",
        "padded shape",
        av.dtype,
    )
    return [(int(lo), int(hi)) for lo, hi in pw]


def _pad_pairs(values, nd, name):
    """A pad keyword (``constant_values``, ``stat_length``, ``end_values``) as ``nd`` concrete
    ``(before, after)`` pairs: a scalar, ``(v,)``, ``(before, after)``, ``((before, after),)``
    or one pair per axis, as in JAX."""
    v = np.asarray(values)
    if v.shape in ((), (1,)):
        return [(v.reshape(()),) * 2] * nd
    if v.shape in ((2,), (1, 2)):
        v = v.reshape(2)
        return [(v[0], v[1])] * nd
    if v.shape == (nd, 2):
        return [(v[i, 0], v[i, 1]) for i in range(nd)]
    raise FunctxValueError(
        f"jnp.pad: {name} with nd={nd} has unsupported shape {v.shape}. Valid shapes are "
        f"({nd}, 2), (1, 2), (2,), (1,), or (){_loc()}"
    )


def _pad_constant(array, pw, constant_values):
    av = _aval(array)
    cv = np.asarray(constant_values)
    if cv.ndim == 1 and cv.shape[0] not in (1, 2):
        raise FunctxValueError(
            f"jnp.pad: constant_values has unsupported shape {cv.shape}. If the shape is 1D or "
            f"2D, the last dimension must be of size 1 or 2.{_loc()}"
        )
    if cv.size == 1:
        return ops.pad(
            array,
            ops.convert_element_type(cv.reshape(()).item(), av.dtype),
            [(int(lo), int(hi), 0) for lo, hi in pw],
        )
    pairs = np.broadcast_to(cv, (av.ndim, 2))
    for ax, (lo, hi) in enumerate(pw):
        for side, width in ((0, int(lo)), (1, int(hi))):
            if width:
                cfg = [(0, 0, 0)] * av.ndim
                cfg[ax] = (width, 0, 0) if side == 0 else (0, width, 0)
                val = ops.convert_element_type(pairs[ax, side].item(), av.dtype)
                array = ops.pad(array, val, cfg)
    return array


def _repeat_on(x, count, ax):
    shape = list(_aval(x).shape)
    shape[ax] = count
    return broadcast_to(x, tuple(shape))


def _median_keep(x, axis, keepdims=True):
    """jnp.median(x, axis, keepdims=True) for pad (NaN when the slice holds a NaN; the mean
    of the two middle elements of an even count, in the inexact dtype)."""
    x = x if _aval(x).dtype in dtypes.FLOATS else astype(x, dtypes.default_float())
    n = _aval(x).shape[axis]
    srt = _lax_sort(x, dimension=axis)
    lo = ops.slice_in_dim(srt, (n - 1) // 2, (n - 1) // 2 + 1, 1, axis)
    hi = ops.slice_in_dim(srt, n // 2, n // 2 + 1, 1, axis)
    med = multiply(add(lo, hi), _const(0.5, lo))
    return where(any(isnan(x), axis=axis, keepdims=True), _const(np.nan, med), med)


def _pad_stats(array, pw, stat_length, mode):
    """'maximum'/'minimum'/'mean'/'median' padding: each side repeats the statistic of the
    first/last ``stat_length`` elements (default: the whole axis), rounded for integers."""
    fn = {"maximum": max, "minimum": min, "mean": mean, "median": _median_keep}[mode]
    nd = _aval(array).ndim
    lengths = None if stat_length is None else _pad_pairs(stat_length, nd, "stat_length")
    for ax, (lo, hi) in enumerate(pw):
        n = _aval(array).shape[ax]
        if lengths is None:
            before = after = fn(array, axis=ax, keepdims=True)
        else:
            lb, la = (int(v) for v in lengths[ax])
            if lb == 0 or la == 0:
                raise FunctxValueError(f"stat_length of 0 yields no value for padding{_loc()}")
            lb, la = builtins.min(lb, n), builtins.min(la, n)
            before = fn(ops.slice_in_dim(array, 0, lb, 1, ax), axis=ax, keepdims=True)
            after = fn(ops.slice_in_dim(array, n - la, n, 1, ax), axis=ax, keepdims=True)
        dt = _aval(array).dtype
        if dt in dtypes.INTEGERS:
            before, after = round(before), round(after)
        before, after = astype(before, dt), astype(after, dt)
        array = concatenate(
            [_repeat_on(before, int(lo), ax), array, _repeat_on(after, int(hi), ax)], axis=ax
        )
    return array


def _pad_linear_ramp(array, pw, end_values):
    """'linear_ramp' padding: from ``end_values`` towards the edge value (excluded), in the
    array's dtype (JAX's linspace)."""
    nd = _aval(array).ndim
    ends = _pad_pairs(end_values, nd, "end_values")
    for ax, (lo, hi) in enumerate(pw):
        n = _aval(array).shape[ax]
        dt = _aval(array).dtype
        first = squeeze(ops.slice_in_dim(array, 0, 1, 1, ax), ax)
        last = squeeze(ops.slice_in_dim(array, n - 1, n, 1, ax), ax)
        shape = _aval(first).shape
        before = linspace(
            broadcast_to(asarray(ends[ax][0]), shape),
            first,
            int(lo),
            endpoint=False,
            dtype=dt,
            axis=ax,
        )
        after = linspace(
            broadcast_to(asarray(ends[ax][1]), shape),
            last,
            int(hi),
            endpoint=False,
            dtype=dt,
            axis=ax,
        )
        array = concatenate([before, array, flip(after, ax)], axis=ax)
    return array


def _pad_reflect_odd(array, pw, mode):
    """'reflect'/'symmetric' with ``reflect_type='odd'``: each reflected block is
    ``2 * edge - block``, the edge moving out block by block (as NumPy and JAX do)."""
    for ax, (lo, hi) in enumerate(pw):
        n = _aval(array).shape[ax]
        if n == 0 or lo == hi == 0:
            continue
        skip = 1 if (mode == "reflect" and n > 1) else 0
        for before, padding in ((True, int(lo)), (False, int(hi))):
            m = _aval(array).shape[ax]
            edge = (
                ops.slice_in_dim(array, 0, 1, 1, ax)
                if before
                else ops.slice_in_dim(array, m - 1, m, 1, ax)
            )
            while padding > 0:
                cur = builtins.min(padding, n - skip)
                padding -= cur
                m = _aval(array).shape[ax]
                if before:
                    block = ops.slice_in_dim(array, skip, skip + cur, 1, ax)
                else:
                    stop = m if (mode == "symmetric" or n == 1) else m - 1
                    block = ops.slice_in_dim(array, m - cur - skip, stop, 1, ax)
                block = subtract(multiply(_const(2, edge), edge), flip(block, ax))
                if n > 1:
                    k = _aval(block).shape[ax]
                    edge = (
                        ops.slice_in_dim(block, 0, 1, 1, ax)
                        if before
                        else ops.slice_in_dim(block, k - 1, k, 1, ax)
                    )
                array = concatenate([block, array] if before else [array, block], axis=ax)
    return array


def pad(array, pad_width, mode="constant", **kwargs):
    """Pad an array (``jax.numpy.pad``).

    A keyword the mode does not take (``stat_length`` with 'constant', ...) raises ValueError,
    as in JAX. The keywords' values must be concrete.

    Arguments:
      array: an array or number.
      pad_width: an int, a ``(before, after)`` pair, or one pair per axis (non-negative).
      mode: ``'constant'``, ``'edge'``, ``'wrap'``, ``'reflect'``, ``'symmetric'``,
        ``'linear_ramp'``, ``'maximum'``, ``'minimum'``, ``'mean'``, ``'median'`` or
        ``'empty'`` (zeros, as in JAX), or a function ``mode(vector, (before, after), axis,
        kwargs)`` returning each 1-D slice padded (NumPy's form; the slices start zero-padded).
      kwargs: the mode's keywords (a function mode gets them all): ``constant_values``
        (``'constant'``: the fill value, a scalar, a pair or one pair per axis; default 0),
        ``reflect_type``
        (``'reflect'``/``'symmetric'``: ``'even'`` or ``'odd'``), ``stat_length``
        (the statistic modes: how many edge elements, default all), ``end_values``
        (``'linear_ramp'``: where the ramps start, default 0).
    Returns:
      An Array whose axes grew by the padding.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.pad(jnp.array([1, 2, 3]), (1, 2))
      Array([0, 1, 2, 3, 0, 0], dtype=int32)
      >>> jnp.pad(jnp.array([1, 2, 3]), 2, mode='reflect')
      Array([3, 2, 1, 2, 3, 2, 1], dtype=int32)
      >>> jnp.pad(jnp.array([1.0, 2.0, 4.0]), (2, 1), mode='maximum')
      Array([4., 4., 1., 2., 4., 4.], dtype=float32)
    """
    array = asarray(array) if not _is_array(array) else array
    av = _aval(array)
    pw = _pad_width(pad_width, av)
    if callable(mode):  # NumPy's function form: mode(vector, (before, after), axis, kwargs)
        out = _pad_constant(array, pw, 0)
        for ax in range(av.ndim):
            out = PAD_WITH_FUNCTION["apply_along_axis"](mode, ax, out, pw[ax], ax, kwargs)
        return out
    if not isinstance(mode, str) or mode not in _PAD_MODES:
        raise UnsupportedError(  # (JAX's class, a NotImplementedError, and its words)
            f"Unimplemented padding mode '{mode}' for np.pad. The modes are "
            f"{', '.join(map(repr, _PAD_MODES))}, or a function{_loc()}"
        )
    out = _pad(array, av, pw, mode, kwargs)
    if av.weak_type and not _aval(out).weak_type:  # (the statistic modes: JAX's stays weak)
        out = ops.convert_element_type(out, _aval(out).dtype, weak_type=True)
    return out


# numpy._extra's apply_along_axis (it builds on vmap, above this module), for pad's function mode;
# numpy._extra fills it at import
PAD_WITH_FUNCTION: dict = {}


def _pad(array, av, pw, mode, kwargs):
    allowed = {
        "constant": {"constant_values"},
        "linear_ramp": {"end_values"},
        "maximum": {"stat_length"},
        "mean": {"stat_length"},
        "median": {"stat_length"},
        "minimum": {"stat_length"},
        "reflect": {"reflect_type"},
        "symmetric": {"reflect_type"},
    }.get(mode, set())
    unsupported = set(kwargs) - allowed
    if unsupported:
        raise FunctxValueError(
            f"unsupported keyword arguments for mode '{mode}': {unsupported}{_loc()}"
        )
    constant_values = kwargs.get("constant_values", 0)
    reflect_type = kwargs.get("reflect_type", "even")
    if reflect_type not in ("even", "odd"):
        raise FunctxValueError(
            f"pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}{_loc()}"
        )
    if mode != "constant":
        for ax, (lo, hi) in enumerate(pw):
            if av.shape[ax] == 0 and lo + hi:
                raise FunctxValueError(
                    f"pad: cannot pad the empty axis {ax} of "
                    f"{av.str_short()} with mode={mode!r}{_loc()}"
                )
    if av.ndim == 0:
        return array
    if mode == "empty":  # JAX's empty padding is zeros
        mode, constant_values = "constant", 0
    if mode == "constant":
        return _pad_constant(array, pw, constant_values)
    if mode in ("maximum", "minimum", "mean", "median"):
        return _pad_stats(array, pw, kwargs.get("stat_length"), mode)
    if mode == "linear_ramp":
        return _pad_linear_ramp(array, pw, kwargs.get("end_values", 0))
    if mode in ("reflect", "symmetric") and reflect_type == "odd":
        return _pad_reflect_odd(array, pw, mode)
    if mode in ("edge", "wrap", "reflect", "symmetric"):
        out = array
        for ax, (lo, hi) in enumerate(pw):
            n = _aval(out).shape[ax]
            idx = np.arange(-int(lo), n + int(hi))
            if mode == "edge":
                idx = np.clip(idx, 0, n - 1)
            elif mode == "wrap":
                idx = idx % n
            elif mode == "reflect":
                period = 2 * (n - 1) if n > 1 else 1
                idx = np.abs(idx) % period
                idx = np.where(idx >= n, period - idx, idx)
            else:
                period = 2 * n
                idx = idx % period
                idx = np.where(idx >= n, period - 1 - idx, idx)
            out = take(out, UncommittedArray.from_value(idx.astype(np.int32)), axis=ax)
        return out
    raise FunctxTypeError(f"pad: mode {mode!r} is not supported{_loc()}")


# --- indexing helpers ----------------------------------------------------------------------------
# (They index through the arrays' own ``[]`` and ``.at[].get``, which call functx.numpy.indexing:
# that module builds on this one.)
def take(
    a,
    indices,
    axis=None,
    out=None,
    mode=None,
    unique_indices=False,
    indices_are_sorted=False,
    fill_value=None,
):
    """Take elements along an axis by index (``jax.numpy.take``).

    Arguments:
      a: an array.
      indices: an integer array of indices.
      axis: the axis, or None to index the flattened array.
      out: must be None (NotImplementedError otherwise, as in JAX).
      mode: ``'fill'`` (default: out-of-range indices give ``fill_value``), ``'clip'`` or
        ``'wrap'``; ``'raise'`` is unsupported, as in JAX.
      unique_indices, indices_are_sorted: hints, accepted and unused (as on JAX's CPU).
      fill_value: the value for out-of-range indices under ``'fill'`` (default: NaN for
        inexact dtypes, the dtype's extreme value otherwise).
    Returns:
      An Array of shape ``a.shape[:axis] + indices.shape + a.shape[axis + 1:]``.
    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.array([10.0, 20.0, 30.0])
      >>> jnp.take(x, jnp.array([2, 0, 5]))
      Array([30., 10., nan], dtype=float32)
      >>> jnp.take(x, jnp.array([2, 0, 5]), mode='clip')
      Array([30., 10., 30.], dtype=float32)
    """
    _no_out(out, "take")
    a = _arraylike(a, "take")
    if mode == "raise":
        raise UnsupportedError(
            f"take: mode='raise' is not supported (it needs a data-dependent "
            f"check){_loc()}; use 'fill', 'clip' or 'wrap'"
        )
    mode = _v.choice("fill" if mode is None else mode, ("fill", "clip", "wrap"), "take", "mode")
    if axis is None:
        a = ravel(a)
        axis = 0
    av = _aval(a)
    axis = _canon_axis(axis, av.ndim, "take axis")
    indices = asarray(indices) if not _is_array(indices) else indices
    iv = _aval(indices)
    if iv.dtype not in dtypes.INTEGERS:
        raise FunctxTypeError(f"take: indices must be integers, got {iv.str_short()}{_loc()}")
    n = av.shape[axis]
    if n == 0 and iv.size:  # (every mode, as JAX's: 'fill' too)
        raise FunctxIndexError(
            f"take: cannot do a non-empty jnp.take() ({iv.str_short()}) from the empty axis "
            f"{axis} of {av.str_short()}{_loc()}"
        )
    if mode == "clip" and n:
        # NumPy and JAX clip the raw index into [0, n): -1 gives the first element, not the last.
        indices = clip(
            indices,
            np.asarray(0, iv.dtype)[()],
            np.asarray(builtins.min(n - 1, int(dtypes.iinfo(iv.dtype).max)), iv.dtype)[()],
        )
    elif mode == "wrap" and n:
        indices = (
            remainder(indices, np.asarray(n, iv.dtype)[()])
            if n <= int(dtypes.iinfo(iv.dtype).max)
            else indices
        )
    idx = (slice(None),) * axis + (indices,)
    return a.at[idx].get(mode="fill" if mode == "fill" else "clip", fill_value=fill_value)


def take_along_axis(
    arr, indices, axis=-1, mode=None, fill_value=None, *, wrap_negative_indices=None
):
    """Pick elements along an axis by matching indices (``jax.numpy.take_along_axis``).

    Arguments:
      arr: an array.
      indices: an integer array of ``arr``'s rank, broadcastable to it off ``axis``.
      axis: the axis to index (default -1), or None for the flattened array (then ``indices``
        must be 1-D).
      mode: ``'fill'`` (default), ``'clip'``, ``'promise_in_bounds'``, ``'drop'`` or
        ``'one_hot'`` (a masked sum over the axis: out-of-range indices give 0).
      fill_value: the value for out-of-range indices under ``'fill'``.
      wrap_negative_indices: whether ``-1`` means the last element (default: True unless
        ``mode='promise_in_bounds'``). Without wrapping a negative index is out of range.
    Returns:
      An Array of the broadcast shape with ``indices``' length along ``axis``.
    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.array([[4, 1, 3], [2, 6, 5]])
      >>> jnp.take_along_axis(x, jnp.argsort(x, axis=1), axis=1)
      Array([[1, 3, 4],
             [2, 5, 6]], dtype=int32)
      >>> jnp.take_along_axis(jnp.array([10, 20, 30]), jnp.array([-1, 5]), mode="clip")
      Array([30, 30], dtype=int32)
    """
    arr = asarray(arr) if not _is_array(arr) else arr
    indices = asarray(indices) if not _is_array(indices) else indices
    _v.choice(
        "fill" if mode is None else mode,
        ("fill", "clip", "promise_in_bounds", "drop", "one_hot"),
        "take_along_axis",
        "mode",
    )
    av, iv = _aval(arr), _aval(indices)
    if iv.dtype not in dtypes.INTEGERS:
        raise FunctxTypeError(
            f"take_along_axis indices must be of integer type, got {np.dtype(iv.dtype)}{_loc()}"
        )
    if axis is None:
        if iv.ndim != 1:
            raise FunctxValueError(
                f"take_along_axis indices must be 1D if axis=None, got shape {iv.shape}{_loc()}"
            )
        return take_along_axis(
            ravel(arr), indices, 0, mode, fill_value, wrap_negative_indices=wrap_negative_indices
        )
    if av.ndim != iv.ndim:
        raise FunctxValueError(
            "indices and arr must have the same number of dimensions; "
            f"{iv.ndim} vs. {av.ndim}{_loc()}"
        )
    axis = _canon_axis(axis, av.ndim, "take_along_axis axis")
    if wrap_negative_indices is None:
        wrap_negative_indices = mode != "promise_in_bounds"
    n = av.shape[axis]
    if mode == "one_hot":
        return _take_along_axis_one_hot(arr, indices, axis, n, wrap_negative_indices)
    if not wrap_negative_indices and mode != "promise_in_bounds" and dtypes.is_signed(iv.dtype):
        # a negative index is out of range: clipped to 0 under 'clip', filled/dropped otherwise
        wide = iv.dtype if n <= int(dtypes.iinfo(iv.dtype).max) else dtypes.int64
        indices = astype(indices, wide)
        off = _const(0 if mode == "clip" else n, indices)
        indices = where(ops.lt(indices, _const(0, indices)), off, indices)
    idx = []
    for i in range(av.ndim):
        if i == axis:
            idx.append(indices)
        else:
            # array and indices broadcast against each other off the axis, as in NumPy
            n = builtins.max(av.shape[i], iv.shape[i])
            if iv.shape[i] not in (1, n) or av.shape[i] not in (1, n):
                raise FunctxTypeError(
                    f"take_along_axis: indices {iv.str_short()} do not "
                    f"broadcast against {av.str_short()}{_loc()}"
                )
            shape = [1] * av.ndim
            shape[i] = n
            idx.append(
                ops.broadcasted_iota(dtypes.int32, tuple(shape), i)
                if av.shape[i] > 1
                else zeros(tuple(shape), dtypes.int32)
            )
    return arr.at[tuple(idx)].get(
        mode=mode or "fill",
        fill_value=fill_value,
    )


def _take_along_axis_one_hot(arr, indices, axis, n, wrap):
    """``take_along_axis(mode='one_hot')``: each output element is the sum over the axis of the
    array masked by ``index == position`` (JAX's one-hot product; out of range gives 0)."""
    if wrap:
        indices = where(ops.lt(indices, _const(0, indices)), add(indices, n), indices)
    a_m = moveaxis(arr, axis, -1)
    i_m = moveaxis(indices, axis, -1)
    hot = equal(
        expand_dims(astype(i_m, dtypes.int64 if n > 2**31 - 1 else dtypes.int32), -1),
        arange(n, dtype=dtypes.int32),
    )
    dt = _aval(arr).dtype
    picked = where(hot, expand_dims(a_m, -2), zeros((), dt))
    return moveaxis(sum(picked, axis=-1, dtype=dt), -1, axis)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """A diagonal of a matrix or stack of matrices (``jax.numpy.diagonal``).

    Arguments:
      a: an array of rank >= 2.
      offset: the diagonal's offset (positive: above the main one).
      axis1, axis2: the two axes that form the matrices.
    Returns:
      An Array whose last axis holds the diagonal; ``axis1`` and ``axis2`` are removed.
    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.arange(9).reshape(3, 3)
      >>> jnp.diagonal(x)
      Array([0, 4, 8], dtype=int32)
      >>> jnp.diagonal(x, offset=1)
      Array([1, 5], dtype=int32)
    """
    a = _arraylike(a, "diagonal")
    av = _aval(a)
    offset = _v.integer(offset, "diagonal", "offset")
    if av.ndim < 2:
        raise FunctxValueError(
            f"diagonal needs an array of rank >= 2, got {av.str_short()}{_loc()}"
        )
    if _canon_axis(axis1, av.ndim, "diagonal axis1") == _canon_axis(
        axis2, av.ndim, "diagonal axis2"
    ):
        raise FunctxArgumentError(  # (JAX: TypeError from diagonal, ValueError from trace)
            f"diagonal: axis1 and axis2 can not be same: got {axis1} and {axis2}{_loc()}"
        )
    a = moveaxis(
        a,
        (
            _canon_axis(axis1, av.ndim, "diagonal axis1"),
            _canon_axis(axis2, av.ndim, "diagonal axis2"),
        ),
        (-2, -1),
    )
    n, m = _aval(a).shape[-2:]
    offset = builtins.max(builtins.min(offset, m), -n)  # beyond the array: the same empty result
    k = builtins.max(0, builtins.min(n + builtins.min(offset, 0), m - builtins.max(offset, 0)))
    rows = np.arange(k) - builtins.min(offset, 0)
    cols = np.arange(k) + builtins.max(offset, 0)
    return a[
        Ellipsis,
        UncommittedArray.from_value(rows.astype(np.int32)),  # (made from scalars: any device)
        UncommittedArray.from_value(cols.astype(np.int32)),
    ]


def diag(v, k=0):
    """Extract a diagonal, or build a diagonal matrix (``jax.numpy.diag``).

    Arguments:
      v: a 1-D array (the diagonal to place) or a 2-D array (the matrix to read).
      k: the diagonal's offset (positive: above the main one).
    Returns:
      A 2-D Array for a 1-D ``v``, a 1-D Array for a 2-D ``v``; other ranks raise ValueError,
      as in JAX.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.diag(jnp.array([1, 2]))
      Array([[1, 0],
             [0, 2]], dtype=int32)
      >>> jnp.diag(jnp.arange(9).reshape(3, 3), k=-1)
      Array([3, 7], dtype=int32)
    """
    v = asarray(v) if not _is_array(v) else v
    k = _v.integer(k, "diag", "k")
    if v.ndim == 1:
        n = v.shape[0] + builtins.abs(k)
        _v.check_size((n, n), "diag", "output shape", v.dtype)
        r = ops.broadcasted_iota(dtypes.int32, (n, n), 0)
        c = ops.broadcasted_iota(dtypes.int32, (n, n), 1)
        vv = pad(v, (builtins.max(-k, 0), builtins.max(k, 0)))
        src = broadcast_to(vv[:, None], (n, n))  # entry (r, r + k) is vv[r]
        return where(equal(c - r, k), src, zeros((), v.dtype))
    if v.ndim == 2:
        return diagonal(v, k)
    raise FunctxValueError(f"diag takes a rank 1 or 2 array, got {v.aval.str_short()}{_loc()}")


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """Sum along a diagonal (``jax.numpy.trace``).

    Arguments:
      a: an array of rank >= 2.
      offset: the diagonal's offset.
      axis1, axis2: the two axes that form the matrices.
      dtype: the accumulation and result dtype (default as for ``sum``).
      out: must be None (NotImplementedError otherwise, as in JAX).
    Returns:
      An Array of ``a``'s shape without ``axis1`` and ``axis2``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.trace(jnp.arange(9).reshape(3, 3))
      Array(12, dtype=int32)
    """
    _no_out(out, "trace")
    return sum(diagonal(a, offset, axis1, axis2), -1, dtype)


def meshgrid(*xi, indexing="xy", sparse=False):
    """Coordinate grids from 1-D coordinate vectors (``jax.numpy.meshgrid``).

    Arguments:
      *xi: 1-D arrays, one per dimension.
      indexing: ``'xy'`` (Cartesian: the first two axes swapped) or ``'ij'`` (matrix).
      sparse: return arrays broadcastable to the grid instead of full ones.
    Returns:
      A list of Arrays, one per input.
    Example:
      >>> import functx.numpy as jnp
      >>> xs, ys = jnp.meshgrid(jnp.array([1, 2, 3]), jnp.array([4, 5]))
      >>> xs
      Array([[1, 2, 3],
             [1, 2, 3]], dtype=int32)
      >>> ys
      Array([[4, 4, 4],
             [5, 5, 5]], dtype=int32)
    """
    _v.choice(indexing, ("xy", "ij"), "meshgrid", "indexing")
    xi = [ravel(asarray(x)) for x in xi]
    n = len(xi)
    shapes = [x.shape[0] for x in xi]
    if indexing == "xy" and n >= 2:
        shapes[0], shapes[1] = shapes[1], shapes[0]
    out = []
    for i, x in enumerate(xi):
        d = i
        if indexing == "xy" and n >= 2 and i < 2:
            d = 1 - i
        shape = [1] * n
        shape[d] = x.shape[0]
        x = reshape(x, shape)
        out.append(x if sparse else broadcast_to(x, tuple(shapes)))
    return out


# --- products ------------------------------------------------------------------------------------
def _promote_dot(name, a, b):
    a, b = (_arraylike(x, name, i) for i, x in enumerate((a, b)))  # (lists: JAX's TypeError)
    a, b = _promote_only(a, b)
    return a, b


def matmul(a, b, /, *, precision=None, preferred_element_type=None):
    """Matrix product with NumPy's broadcasting (``jax.numpy.matmul``; ``@``).

    Arguments:
      a, b: arrays of rank >= 1; a 1-D operand acts as a row (``a``) or column (``b``)
        vector, and leading (batch) axes broadcast.
      precision: None, a ``lax.Precision`` or a pair of them, as in JAX.
      preferred_element_type: the accumulation and result dtype (default: the promoted dtype).
    Returns:
      An Array of the promoted dtype.
    Example:
      >>> import functx.numpy as jnp
      >>> a = jnp.array([[1.0, 2.0], [3.0, 4.0]])
      >>> jnp.matmul(a, a)
      Array([[ 7., 10.],
             [15., 22.]], dtype=float32)
      >>> jnp.matmul(a, jnp.array([1.0, -1.0]))
      Array([-1., -1.], dtype=float32)
    """
    a, b = _promote_dot("matmul", a, b)
    av, bv = _aval(a), _aval(b)
    if av.ndim == 0 or bv.ndim == 0:
        raise FunctxTypeError(
            f"matmul: operands must not be scalars, got {av.str_short()} and "
            f"{bv.str_short()}{_loc()}"
        )
    a2 = ops.expand_dims(a, (0,)) if av.ndim == 1 else a
    b2 = ops.expand_dims(b, (1,)) if bv.ndim == 1 else b
    a2v, b2v = _aval(a2), _aval(b2)
    if a2v.shape[-1] != b2v.shape[-2]:
        raise FunctxTypeError(
            f"matmul: contracting dimensions differ: {av.str_short()} @ "
            f"{bv.str_short()} ({a2v.shape[-1]} != {b2v.shape[-2]}){_loc()}"
        )
    batch = broadcast_shapes(a2v.shape[:-2], b2v.shape[:-2])
    nb = len(batch)
    # Unbatched operands (rank 2) stay unbatched: dot_general folds them into free dimensions.
    if b2v.ndim == 2:
        out = ops.dot_general(
            broadcast_to(a2, batch + a2v.shape[-2:]) if a2v.ndim > 2 else a2,
            b2,
            (((a2v.ndim - 1 if a2v.ndim > 2 else 1,), (0,)), ((), ())),
            precision=precision,
            preferred_element_type=preferred_element_type,
        )
    elif a2v.ndim == 2:
        out = ops.dot_general(
            a2,
            broadcast_to(b2, batch + b2v.shape[-2:]),
            (((1,), (nb,)), ((), ())),
            precision=precision,
            preferred_element_type=preferred_element_type,
        )
        # result: (m, batch..., n) -> (batch..., m, n)
        out = moveaxis(out, 0, nb)
    else:
        a3 = broadcast_to(a2, batch + a2v.shape[-2:])
        b3 = broadcast_to(b2, batch + b2v.shape[-2:])
        out = ops.dot_general(
            a3,
            b3,
            (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))),
            precision=precision,
            preferred_element_type=preferred_element_type,
        )
    if av.ndim == 1:
        out = ops.squeeze(out, (_aval(out).ndim - 2,))
    if bv.ndim == 1:
        out = ops.squeeze(out, (_aval(out).ndim - 1,))
    return out


def dot(a, b, *, precision=None, preferred_element_type=None):
    """Dot product (``jax.numpy.dot``).

    Arguments:
      a, b: arrays or numbers. 0-D operands multiply; 1-D with 1-D is the inner product;
        otherwise it sums over ``a``'s last axis and ``b``'s second-to-last (its only one when
        1-D).
      precision: None, a ``lax.Precision`` or a pair of them, as in JAX.
      preferred_element_type: the accumulation and result dtype (default: the promoted dtype).
    Returns:
      An Array of shape ``a.shape[:-1] + b.shape[:-2] + b.shape[-1:]``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.dot(jnp.array([1, 2, 3]), jnp.array([4, 5, 6]))
      Array(32, dtype=int32)
      >>> jnp.dot(jnp.array([[1, 0], [0, 2]]), jnp.array([3, 4]))
      Array([3, 8], dtype=int32)
    """
    a, b = _promote_dot("dot", a, b)
    av, bv = _aval(a), _aval(b)
    if av.ndim == 0 or bv.ndim == 0:
        return multiply(a, b)
    if bv.ndim == 1:
        return ops.dot_general(
            a,
            b,
            (((av.ndim - 1,), (0,)), ((), ())),
            precision=precision,
            preferred_element_type=preferred_element_type,
        )
    return ops.dot_general(
        a,
        b,
        (((av.ndim - 1,), (bv.ndim - 2,)), ((), ())),
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def vdot(a, b, *, precision=None, preferred_element_type=None):
    """Dot product of the flattened arrays, conjugating a complex ``a``
    (``jax.numpy.vdot``).

    Arguments:
      a, b: arrays of the same size.
      precision: None, a ``lax.Precision`` or a pair of them, as in JAX.
      preferred_element_type: the accumulation and result dtype (default: the promoted dtype).
    Returns:
      A 0-D Array.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.vdot(jnp.array([[1, 2], [3, 4]]), jnp.array([[1, 0], [0, 1]]))
      Array(5, dtype=int32)
      >>> jnp.vdot(jnp.array([1 + 2j, 3j]), jnp.array([1, 1j]))
      Array(4.-2.j, dtype=complex64)
    """
    a = _arraylike(a, "vdot")
    if _aval(a).dtype in dtypes.COMPLEX:
        a = ops.conj(a)
    return dot(
        ravel(a), ravel(b), precision=precision, preferred_element_type=preferred_element_type
    )


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """Dot products of vectors along an axis, conjugating a complex ``x1``
    (``jax.numpy.vecdot``).

    Arguments:
      x1, x2: arrays, broadcast together off ``axis`` (their lengths along it must match);
        a complex ``x1`` is conjugated.
      axis: the axis to contract.
      precision: accepted for JAX's signature (the products are elementwise).
      preferred_element_type: the accumulation and result dtype (default: the promoted dtype).
    Returns:
      An Array of the broadcast shape without ``axis``; the dtype is the promoted input dtype
      (bool stays bool, int8 stays int8).
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.vecdot(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 1]))
      Array([3, 7], dtype=int32)
      >>> jnp.vecdot(jnp.array([1j]), jnp.array([1j]))
      Array(1.+0.j, dtype=complex64)
    """
    x1, x2 = _promote_dot("vecdot", x1, x2)
    s1, s2 = _aval(x1).shape, _aval(x2).shape
    if not s1 or not s2:
        raise FunctxValueError(
            f"vecdot: operands must have rank >= 1, got shapes {s1} and {s2}{_loc()}"
        )
    axis = _v.integer(axis, "vecdot", "axis")
    if not (-len(s1) <= axis < len(s1) and -len(s2) <= axis < len(s2)):
        raise _v.AxisError(f"vecdot: axis {axis} is out of bounds for shapes {s1} and {s2}{_loc()}")
    if s1[axis] != s2[axis]:
        raise FunctxTypeError(
            f"vecdot: axes must match; got shapes {s1} and {s2} with axis={axis}{_loc()}"
        )
    dt = (
        _aval(x1).dtype
        if preferred_element_type is None
        else dtypes.canonicalize(preferred_element_type)
    )
    if _aval(x1).dtype in dtypes.COMPLEX:
        x1 = ops.conj(x1)
    return sum(multiply(astype(x1, dt), astype(x2, dt)), axis=axis, dtype=dt)


def inner(a, b, *, precision=None, preferred_element_type=None):
    """Inner product over the last axes (``jax.numpy.inner``).

    Arguments:
      a, b: arrays with equal last-axis lengths (or 0-D, which multiply).
      precision: None, a ``lax.Precision`` or a pair of them, as in JAX.
      preferred_element_type: the accumulation and result dtype (default: the promoted dtype).
    Returns:
      An Array of shape ``a.shape[:-1] + b.shape[:-1]``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.inner(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 10]))
      Array([21, 43], dtype=int32)
    """
    a, b = _promote_dot("inner", a, b)
    av, bv = _aval(a), _aval(b)
    if av.ndim == 0 or bv.ndim == 0:
        return multiply(a, b)
    return ops.dot_general(
        a,
        b,
        (((av.ndim - 1,), (bv.ndim - 1,)), ((), ())),
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def outer(a, b, out=None):
    """Outer product of the flattened inputs (``jax.numpy.outer``).

    Arguments:
      a, b: arrays or numbers (flattened).
      out: must be None (NotImplementedError otherwise, as in JAX).
    Returns:
      A 2-D Array of shape ``(a.size, b.size)``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.outer(jnp.array([1, 2]), jnp.array([1, 10, 100]))
      Array([[  1,  10, 100],
             [  2,  20, 200]], dtype=int32)
    """
    _no_out(out, "outer")
    a, b = ravel(asarray(a)), ravel(asarray(b))
    return multiply(a[:, None], b[None, :])


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None):
    """Tensor contraction over chosen axes (``jax.numpy.tensordot``).

    Arguments:
      a, b: arrays.
      axes: an int N (``a``'s last N axes with ``b``'s first N) or a pair of axis sequences.
      precision: None, a ``lax.Precision`` or a pair of them, as in JAX.
      preferred_element_type: the accumulation and result dtype (default: the promoted dtype).
    Returns:
      An Array: ``a``'s free axes, then ``b``'s.
    Example:
      >>> import functx.numpy as jnp
      >>> a = jnp.ones((2, 3, 4))
      >>> jnp.tensordot(a, jnp.ones((3, 4, 5))).shape
      (2, 5)
      >>> jnp.tensordot(a, jnp.ones((4, 3)), axes=([1, 2], [1, 0])).shape
      (2,)
    """
    a, b = _promote_dot("tensordot", a, b)
    av, bv = _aval(a), _aval(b)
    if _v.is_int_like(axes) and not isinstance(axes, (str, bytes)):
        axes = _v.integer(axes, "tensordot", "axes", minimum=0)
        if axes > builtins.min(av.ndim, bv.ndim):
            raise FunctxArgumentError(  # (a TypeError, as JAX's; its words, which tests match)
                f"tensordot: Number of tensordot axes (axes={axes}) exceeds input ranks "
                f"({av.str_short()} and {bv.str_short()}){_loc()}"
            )
        axes = (tuple(range(av.ndim - axes, av.ndim)), tuple(range(axes)))
    if not isinstance(axes, (tuple, list)) or len(axes) != 2:
        raise FunctxTypeError(
            f"tensordot axes argument must be an int, a pair of ints, or a pair of lists/tuples "
            f"of ints; got {axes!r}{_loc()}"
        )
    for x in axes:
        if isinstance(x, (str, bytes)):
            raise FunctxTypeError(
                f"tensordot requires both axes lists to be either ints, tuples or lists, got "
                f"{axes[0]!r} and {axes[1]!r}{_loc()}"
            )
    ax_a, ax_b = (_v.axis_seq(x, "tensordot", "axes") for x in axes)
    if len(ax_a) != len(ax_b):
        raise FunctxArgumentError(  # (a TypeError, as JAX's)
            f"tensordot requires axes lists to have equal length, got {ax_a} and {ax_b}{_loc()}"
        )
    ax_a = tuple(_canon_axis(x, av.ndim, "tensordot axis") for x in ax_a)
    ax_b = tuple(_canon_axis(x, bv.ndim, "tensordot axis") for x in ax_b)
    return ops.dot_general(
        a,
        b,
        ((ax_a, ax_b), ((), ())),
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def kron(a, b):
    """Kronecker product (``jax.numpy.kron``).

    Arguments:
      a, b: arrays or numbers.
    Returns:
      An Array whose blocks are ``a[i, j] * b``; of rank ``max(a.ndim, b.ndim)``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.kron(jnp.array([1, 2]), jnp.array([1, 10]))
      Array([ 1, 10,  2, 20], dtype=int32)
    """
    a, b = asarray(a), asarray(b)
    nd = builtins.max(a.ndim, b.ndim)
    a = reshape(a, (1,) * (nd - a.ndim) + a.shape)
    b = reshape(b, (1,) * (nd - b.ndim) + b.shape)
    ae = reshape(a, tuple(x for s in a.shape for x in (s, 1)))
    be = reshape(b, tuple(x for s in b.shape for x in (1, s)))
    return reshape(multiply(ae, be), tuple(s * t for s, t in zip(a.shape, b.shape)))
