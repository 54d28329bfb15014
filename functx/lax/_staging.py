"""``functx.lax`` names that describe a program rather than compute: sharding constraints, casts
between SPMD value types, composites, shapes as values, DCE sinks, dtypes, and JAX's type aliases.

functx runs on one device per process with arrays never split in memory, so most of these are
the identity after JAX's argument checks; each docstring says what functx does.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Union

import numpy as np

from functx import dtypes, numpy as jnp, ops
from functx._conv import ConvDimensionNumbers
from functx.array import Array
from functx.errors import FunctxTypeError, FunctxValueError, UnexpectedTracerError
from functx.source_info import where
from functx.tracing import Tracer
from functx.transforms.axis_env import is_bound
from functx.tree_util import tree_leaves, tree_map

# --- JAX's type aliases --------------------------------------------------------------------------
DotDimensionNumbers = tuple[
    tuple[Sequence[int], Sequence[int]], tuple[Sequence[int], Sequence[int]]
]
PrecisionLike = Union[  # noqa: UP007 (JAX's alias is a typing.Union)
    None,
    str,
    ops.Precision,
    tuple[str, str],
    tuple[ops.Precision, ops.Precision],
    ops.DotAlgorithm,
    ops.DotAlgorithmPreset,
]
ConvGeneralDilatedDimensionNumbers = Union[tuple[str, str, str], ConvDimensionNumbers, None]  # noqa: UP007


# --- sharding constraints ------------------------------------------------------------------------
# Filled by functx.sharding (a higher layer, which owns the sharding classes and the context
# mesh): "with_sharding_constraint" -> check(x, shardings), raising JAX's errors for shardings
# that do not fit x.
SHARDING_CHECKS: dict = {}


def _as_arrays(x):
    return tree_map(lambda v: v if isinstance(v, (Array, Tracer)) else jnp.asarray(v), x)


def with_sharding_constraint(x, shardings):
    """``x``, constrained to be laid out by ``shardings`` (``jax.lax.with_sharding_constraint``).

    functx arrays are whole on one device, so the value is ``x`` itself (its leaves as Arrays),
    eagerly and under every transform, after JAX's checks of ``shardings``: a tree prefix of
    ``x`` whose leaves are ``Sharding`` objects, or ``PartitionSpec`` objects with a mesh in
    context (``functx.sharding.set_mesh``, ``use_abstract_mesh`` or ``with mesh:``); each fits its
    arrays (rank, divisibility, axes of its mesh), and a ``NamedSharding`` refers to no
    ``Explicit`` mesh axis (use ``reshard``).

    Arguments:
      x: an array or a pytree of arrays.
      shardings: a ``Sharding`` or ``PartitionSpec``, or a pytree of them that is a prefix of
        ``x``'s.
    Returns:
      ``x``.
    Raises:
      ValueError: a sharding that does not fit; TypeError: a leaf of another type;
      RuntimeError: a ``PartitionSpec`` with no mesh in context.

    Differences from JAX: under a mesh of ``Explicit`` axes JAX asserts that the array's
    (typed) sharding equals a ``PartitionSpec`` given; functx arrays carry no sharding, and the
    check is not made.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> from functx.sharding import AxisType, NamedSharding, PartitionSpec as P
      >>> mesh = functx.make_mesh((1,), ("x",), (AxisType.Auto,))
      >>> functx.lax.with_sharding_constraint(jnp.ones(2), NamedSharding(mesh, P("x")))
      Array([1., 1.], dtype=float32)
    """
    SHARDING_CHECKS["with_sharding_constraint"](x, shardings)
    return _as_arrays(x)


# --- SPMD value types ----------------------------------------------------------------------------
_PCAST_TO = ("varying", "reduced", "unreduced")


def pcast(x, axis_name, *, to: str):
    """``x`` cast to another SPMD value type over ``axis_name`` (``jax.lax.pcast``): ``to`` is
    "varying" (a value that differs along the axis), "reduced" or "unreduced".

    functx's ``shard_map`` follows JAX with the varying-axes checks off (``check_vma=False``),
    where the types do not exist: the value is ``x``, after JAX's checks of the arguments.

    Arguments:
      x: an array or a pytree of arrays.
      axis_name: a bound axis name, or a tuple of them (an empty one returns ``x``).
      to: "varying", "reduced" or "unreduced".
    Returns:
      ``x``.
    Raises:
      TypeError: ``axis_name`` is a set; ValueError: ``to`` is another string, or no named axis
      is bound (outside ``shard_map``/``vmap(axis_name=...)``); NameError: a name that is not
      bound.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> f = functx.vmap(lambda v: functx.lax.pcast(v, "i", to="varying"), axis_name="i")
      >>> f(jnp.arange(3.0))
      Array([0., 1., 2.], dtype=float32)
    """
    if isinstance(axis_name, (set, frozenset)):
        raise FunctxTypeError(f"pcast: axis_name must be a tuple or a str, got {axis_name!r}")
    names = axis_name if isinstance(axis_name, tuple) else (axis_name,)
    if not axis_name:
        return x
    if to not in _PCAST_TO:
        raise FunctxValueError(f"pcast: to must be one of {_PCAST_TO}, got {to!r}{where()}")
    bound = [is_bound(n) for n in names]
    if not any(bound):
        raise FunctxValueError(
            f"pcast must be called under functx.shard_map (or vmap with axis_name=...): axis "
            f"name(s) {names} are not bound{where()}"
        )
    for n, b in zip(names, bound):
        if not b:
            raise NameError(f"pcast: unbound axis name: {n}{where()}")
    return x


# --- composites ----------------------------------------------------------------------------------
def composite(decomposition, name: str, version: int = 0):
    """A function computing ``decomposition`` that JAX stages as one named op
    (``jax.lax.composite``): a backend may replace it by its own kernel for ``name``; keyword
    arguments are the op's static attributes.

    functx has no such backend kernels: the function calls ``decomposition`` (traced into the
    surrounding program, so every transform applies), after JAX's check that no keyword
    attribute is a traced value.

    Arguments:
      decomposition: the function the op computes.
      name: the op's name (e.g. "my.tangent").
      version: the op's version.
    Returns:
      The function (``functools.wraps`` of ``decomposition``).
    Raises:
      UnexpectedTracerError: a keyword attribute that is a traced value (as JAX).

    Differences from JAX: no ``composite`` equation: ``make_jaxpr`` shows the decomposition's
    equations inline; and so it is differentiable (JAX's composite has no JVP rule: ValueError).

    Example:
      >>> import functx, functx.numpy as jnp
      >>> tan = functx.lax.composite(lambda x: jnp.sin(x) / jnp.cos(x), name="my.tangent")
      >>> tan(jnp.float32(0.5))
      Array(0.5463025, dtype=float32)
    """

    @functools.wraps(decomposition)
    def op(*args, **kwargs):
        if any(isinstance(v, Tracer) for v in tree_leaves(kwargs)):
            raise UnexpectedTracerError(
                f"composite '{name}': a keyword attribute is a traced value; attributes must "
                "be known at trace time (pass arrays as positional arguments, or NumPy arrays)"
                f"{where()}"
            )
        return decomposition(*args, **kwargs)

    return op


# --- shapes, sinks, dtypes -----------------------------------------------------------------------
def shape_as_value(shape):
    """A shape as a 1-D integer array (``jax.lax.shape_as_value``): int32, or int64 when a
    dimension does not fit int32. functx's shapes are always known, so, as JAX for a known
    shape, this is a NumPy constant (an empty Array for ``()``).

    Arguments:
      shape: a sequence of ints.
    Returns:
      A NumPy int array of shape ``(len(shape),)`` (an int32 Array of shape (0,) for ``()``).
    Example:
      >>> import functx
      >>> functx.lax.shape_as_value((2, 3))
      array([2, 3], dtype=int32)
    """
    dims = [ops._int("shape_as_value", "a dimension", d) for d in shape]
    big = any(d > np.iinfo(np.int32).max for d in dims)
    if not dims:
        return jnp.zeros((0,), np.int32)
    return np.asarray(dims, np.int64 if big else np.int32)


def dce_sink(val, *, prevent_mlir_dce: bool = False):
    """Mark ``val`` as used (``jax.lax.dce_sink``): JAX's dead-code elimination keeps the
    computation of ``val``. functx's programs are run as traced (nothing is eliminated before
    its side effects), so this only returns.

    Arguments:
      val: an array or a pytree of arrays.
      prevent_mlir_dce: JAX's flag for its compiler's own elimination (no effect here).
    Returns:
      None.

    Differences from JAX: no ``dce_sink`` equation in ``make_jaxpr``.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> print(functx.lax.dce_sink(jnp.ones(3)))
      None
    """
    del prevent_mlir_dce
    tree_leaves(val)
    return None


def dtype(x):
    """The dtype of a value or a type (``jax.lax.dtype``): an array's or tracer's own; Python
    scalars and types, NumPy types, dtype names and NumPy arrays canonicalized (float64 is
    float32 unless x64 is on).

    Arguments:
      x: an array, a scalar, a type, a dtype or its name.
    Returns:
      A ``numpy.dtype``.
    Raises:
      ValueError: ``x`` is None; TypeError: a value or type that is not numeric.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.lax.dtype(1.0), functx.lax.dtype(np.float64), functx.lax.dtype(np.int8(1))
      (dtype('float32'), dtype('float32'), dtype('int8'))
    """
    if x is None:
        raise FunctxValueError(f"Invalid argument to dtype: {x}.")
    if isinstance(x, (Array, Tracer)):
        return x.dtype
    if isinstance(x, (bool, int, float, complex)):
        return dtypes.dtype_of_python_scalar(x)
    if isinstance(x, type) and x in (bool, int, float, complex):
        return dtypes.dtype_of_python_scalar(x())
    try:
        dt = np.dtype(x) if isinstance(x, (type, str, np.dtype)) else np.result_type(x)
    except TypeError:
        raise FunctxTypeError(f"Cannot determine dtype of {x!r}") from None
    return dtypes.check_user_dtype(dt, "dtype")
