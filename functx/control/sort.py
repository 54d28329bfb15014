"""Sorting primitives with all their rules: ``sort`` (XLA's Sort with JAX's comparator) and
``top_k``.

``sort(*operands, dimension, is_stable, num_keys)`` sorts every operand along ``dimension`` by the
lexicographic order of the first ``num_keys`` of them, JAX's ``lax.sort_p``. The order is JAX's:
floating keys compare with -0.0 equal to 0.0 and every NaN after +inf (and equal to every other
NaN); complex keys compare by real part, then imaginary part, each so; ties keep their input order
(the sort is always stable, which ``is_stable=False`` permits). The sorted outputs are the
operands' own elements (a -0.0 stays -0.0).

``top_k(operand, k, axis)`` gives the ``k`` largest elements along ``axis`` and their ``int32``
indices, JAX's ``lax.top_k_p``. Its order is the total order of the bits: NaN > +inf > ... > +0.0
> -0.0 > ... > -inf > -NaN, and of equal elements the lower index comes first.

* shape inference, and the eager implementation (``np.lexsort`` on canonical keys; ``top_k`` a
  stable argsort of order-preserving integer keys);
* jvp: the tangents are gathered with the sorting permutation (a ``sort`` with an extra iota
  operand), so ``grad`` and ``vjp`` go through ``gather``'s transpose, as JAX's;
* vmap: the batch axis moves to the front and ``dimension``/``axis`` shift by one;
* lowering: a ``sort`` loop-IR node (kernel kind ``sort``) per output; the C++ kernel
  (``lowering/cpp/sort.py``) runs a stable merge sort per row, rows in parallel; the Triton
  backend (``lowering/triton/sort.py``) sorts rows of ``TORCH_ROW_MIN`` (256) elements or more
  with ``torch.sort`` of order-preserving integer keys between launches, and shorter rows in a
  kernel that ranks each element by counting the elements before it; complex operands reach it
  as their real and imaginary parts (a complex key as two keys: ``lowering/complex_lanes.py``).
"""

from __future__ import annotations

import operator

import numpy as np

from functx import dtypes, ops, primitives as P
from functx.core import Primitive, ShapedArray
from functx.errors import FunctxTypeError, FunctxValueError
from functx.lowering.rules import lowerings
from functx.source_info import where
from functx.tracing import get_aval
from functx.transforms import jvp as J, vmap as V

sort_p = Primitive("sort", multiple_results=True, group="sort")
P.registry["sort"] = sort_p
top_k_p = Primitive("top_k", multiple_results=True, group="sort")
P.registry["top_k"] = top_k_p


# --- sort ----------------------------------------------------------------------------------------
def _sort_abstract_eval(*avals, dimension, is_stable, num_keys):
    if not avals:
        raise FunctxTypeError("Sort requires at least one operand")
    if any(a.shape != avals[0].shape for a in avals[1:]):
        shapes = " ".join(str(a.shape) for a in avals)
        raise FunctxTypeError(f"Arguments to sort must have equal shapes, got: {shapes}")
    if not 0 <= dimension < max(avals[0].ndim, 1) or avals[0].ndim == 0:
        raise FunctxValueError(
            f"sort: dimension {dimension} is out of range for {avals[0].str_short()}"
        )
    if not 1 <= num_keys <= len(avals):
        raise FunctxValueError(
            f"num_keys={num_keys} must be between 1 and len(operand)={len(avals)}"
        )
    return [ShapedArray(a.shape, a.dtype, a.weak_type) for a in avals]


sort_p.abstract_eval = _sort_abstract_eval


def _rows(x, dimension):
    """``x`` with ``dimension`` moved last, as (rows, n)."""
    x = np.moveaxis(np.asarray(x), dimension, -1)
    return x.reshape(int(np.prod(x.shape[:-1], dtype=np.int64)), x.shape[-1])


def _float_key(x):
    """A float key in JAX's sort order: -0.0 equal to 0.0, NaNs after +inf (lexsort's order)."""
    return x.astype(np.float64) + 0.0


def _keys(x):
    dt = np.dtype(x.dtype)
    if dt in dtypes.COMPLEX:
        return [_float_key(x.real), _float_key(x.imag)]
    if dt in dtypes.FLOATS:
        return [_float_key(x)]
    if dt == np.bool_:
        return [x.astype(np.uint8)]
    return [x]


def sort_permutation(operands, dimension, num_keys):
    """The (rows, n) permutation that sorts ``operands`` along ``dimension`` (eager)."""
    keys = []
    for o in operands[:num_keys]:
        keys.extend(_keys(_rows(o, dimension)))
    if keys[0].shape[-1] == 0:
        return np.zeros(keys[0].shape, np.int64)
    return np.lexsort(keys[::-1], axis=-1)


def _unrows(r, shape, dimension):
    moved = tuple(np.delete(np.asarray(shape, dtype=np.int64), dimension)) + (shape[dimension],)
    return np.moveaxis(r.reshape(moved), -1, dimension)


def _sort_impl(*operands, dimension, is_stable, num_keys):
    operands = [np.asarray(o) for o in operands]
    shape = operands[0].shape
    perm = sort_permutation(operands, dimension, num_keys)
    return [
        _unrows(np.take_along_axis(_rows(o, dimension), perm, -1), shape, dimension).astype(o.dtype)
        for o in operands
    ]


sort_p.impl = _sort_impl


def _take_along(t, idx, axis):
    """``t`` gathered with ``idx`` (of ``t``'s rank) along ``axis``: a full-index gather, linear
    in ``t`` (its transpose is gather's scatter-add)."""
    shape = get_aval(idx).shape
    nd = len(shape)
    cols = [
        ops.expand_dims(
            ops.convert_element_type(idx, dtypes.int32)
            if d == axis
            else ops.broadcasted_iota(dtypes.int32, shape, d),
            (nd,),
        )
        for d in range(nd)
    ]
    full = ops.concatenate(cols, nd)
    return P.gather_p.bind(t, full, axes=tuple(range(nd)), mode="clip", fill_value=None)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
    shape = get_aval(primals[0]).shape
    if all(isinstance(t, J.Zero) for t in tangents):
        outs = sort_p.bind(*primals, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
        return outs, [J.Zero(J.tangent_aval(get_aval(o))) for o in outs]
    iota = ops.broadcasted_iota(dtypes.int32, shape, dimension)
    outs = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable, num_keys=num_keys)
    perm = outs[-1]
    touts = [t if isinstance(t, J.Zero) else _take_along(t, perm, dimension) for t in tangents]
    return outs[:-1], touts


J.jvp_rules[sort_p] = _sort_jvp


def _sort_batch(args, dims, *, dimension, is_stable, num_keys):
    size = V.axis_size_of(args, dims)
    moved = [V.bdim_at_front(a, d, size) for a, d in zip(args, dims)]
    outs = sort_p.bind(*moved, dimension=dimension + 1, is_stable=is_stable, num_keys=num_keys)
    return outs, [0] * len(outs)


V.batching_rules[sort_p] = _sort_batch


def _sort_group(g, ins, avals, dimension, num_keys, mode, k, index):
    # imported here, when jit lowers: the loop IR (0.1 s of import), which `import functx` must not
    from functx.lowering.loopir import Node

    group = {
        "ops": list(ins),
        "dimension": dimension,
        "num_keys": num_keys,
        "mode": mode,  # "asc": JAX's sort comparator; "topk": descending total order
        "k": k,  # outputs keep the first k of each sorted row
        "index": index,  # the last output is the (int32) permutation
        "outs": [],
    }
    outs = []
    for a in avals:
        # the operands are read from buffers (the Triton kernel indexes them itself)
        params = {"group": group, "needs_buffer": list(ins)}
        node = g.add(Node(a.shape, a.dtype, kind="sort", inputs=list(ins), params=params))
        group["outs"].append(node)
        outs.append(node)
    return outs


def _sort_lowering(g, ins, avals, *, dimension, is_stable, num_keys):
    """jit: ``sort`` nodes of one kernel (``lowering/cpp/sort.py``, ``lowering/triton/sort.py``)."""
    n = ins[0].shape[dimension]
    return _sort_group(g, ins, avals, dimension, num_keys, "asc", n, False)


lowerings[sort_p] = _sort_lowering


# --- top_k ---------------------------------------------------------------------------------------
def _top_k_abstract_eval(operand, *, k, axis):
    if operand.dtype in dtypes.COMPLEX:
        raise FunctxValueError("top_k is not compatible with complex inputs.")
    if k < 0:
        raise FunctxValueError(f"k argument to top_k must be nonnegative, got {k}")
    if operand.ndim == 0:
        raise FunctxTypeError(f"top_k operand must have >= 1 dimension, got {operand.shape}")
    if not 0 <= axis < operand.ndim:
        raise FunctxValueError(
            f"axis argument out of range: axis={axis} for operand.shape={operand.shape}"
        )
    shape = list(operand.shape)
    if shape[axis] < k:
        raise FunctxValueError(
            "k argument to top_k must be no larger than size along axis;"
            f" got k={k} with shape={tuple(shape)} and axis={axis}"
        )
    shape[axis] = k
    return [
        ShapedArray(tuple(shape), operand.dtype, operand.weak_type),
        ShapedArray(tuple(shape), dtypes.int32),
    ]


top_k_p.abstract_eval = _top_k_abstract_eval


def total_order_key(x):
    """int64 keys ordered as the bits of ``x``'s elements in the total order (floats: -NaN <
    -inf < ... < -0.0 < +0.0 < ... < +inf < NaN); integers and bools as themselves."""
    x = np.asarray(x)
    dt = np.dtype(x.dtype)
    if dt in dtypes.FLOATS:
        if dt == dtypes.bfloat16 or dt == np.float16:
            x = x.astype(np.float32)  # exact, NaN signs included
        bits = x.view(np.int32 if x.dtype == np.float32 else np.int64).astype(np.int64)
        mask = np.int64(0x7FFFFFFF if x.dtype == np.float32 else 0x7FFFFFFFFFFFFFFF)
        return np.where(bits < 0, bits ^ mask, bits)
    if dt == np.bool_:
        return x.astype(np.int64)
    return x


def _top_k_impl(operand, *, k, axis):
    x = np.asarray(operand)
    rows = _rows(x, axis)
    n = rows.shape[-1]
    key = total_order_key(rows)
    # descending with ties in index order: a stable ascending sort of the reversed row, reversed
    rev = np.argsort(key[:, ::-1], axis=-1, kind="stable")[:, ::-1]
    idx = (n - 1 - rev)[:, :k]
    vals = np.take_along_axis(rows, idx, -1)
    shape = list(x.shape)
    shape[axis] = k
    return [
        _unrows(vals, tuple(shape), axis).astype(x.dtype),
        _unrows(idx, tuple(shape), axis).astype(np.int32),
    ]


top_k_p.impl = _top_k_impl


def _top_k_jvp(primals, tangents, *, k, axis):
    (x,), (t,) = primals, tangents
    vals, idx = top_k_p.bind(x, k=k, axis=axis)
    dv = (
        J.Zero(J.tangent_aval(get_aval(vals)))
        if isinstance(t, J.Zero)
        else _take_along(t, idx, axis)
    )
    return [vals, idx], [dv, J.Zero(J.tangent_aval(get_aval(idx)))]


J.jvp_rules[top_k_p] = _top_k_jvp


def _top_k_batch(args, dims, *, k, axis):
    (x,), (d,) = args, dims
    x = V.bdim_at_front(x, d, V.axis_size_of(args, dims))
    return top_k_p.bind(x, k=k, axis=axis + 1), [0, 0]


V.batching_rules[top_k_p] = _top_k_batch


def _top_k_lowering(g, ins, avals, *, k, axis):
    return _sort_group(g, ins, avals, axis, 1, "topk", k, True)


lowerings[top_k_p] = _top_k_lowering


# --- public functions (re-exported by functx.lax) ------------------------------------------------
def _canon_axis(axis, ndim, what):
    try:
        axis = operator.index(axis)
    except TypeError:
        raise FunctxTypeError(f"{what} must be an int, got {axis!r}{where()}") from None
    if not -ndim <= axis < ndim:
        raise FunctxValueError(
            f"axis {axis} is out of bounds for array of dimension {ndim}{where()}"
        )
    return axis % ndim


def _as_array(x):
    from_value = not hasattr(x, "aval") and not hasattr(x, "dtype")
    return ops.convert_element_type(x, get_aval(x).dtype) if from_value else x


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
    """Sort ``operand`` (an array or a sequence of arrays) along ``dimension``: JAX's
    ``lax.sort``, XLA's Sort with JAX's comparator.

    Arguments:
      operand: an array, or a sequence of arrays of one shape.
      dimension: the axis to sort along (default the last).
      is_stable: accepted as JAX's; the sort is always stable.
      num_keys: how many of the operands, from the first, are sort keys (lexicographically,
        the first primary); the others follow the same permutation.

    Returns:
      The sorted array, or a tuple of sorted arrays for a sequence. Floating keys order -0.0 as
      equal to 0.0 and NaNs last; complex keys by real, then imaginary part.

    Differences from JAX: always stable: ``is_stable=False`` gives the stable result, as XLA's CPU
    sort does. On the Triton backend a sort ranks by counting (O(n^2) per row) and refuses complex
    keys.

    Example:
      >>> import functx as fx
      >>> fx.lax.sort(fx.numpy.array([3.0, -1.0, 2.0]))
      Array([-1.,  2.,  3.], dtype=float32)
    """
    if isinstance(operand, (list, tuple)):
        if len(operand) == 0:
            raise FunctxTypeError(f"Sort requires at least one operand{where()}")
        if not 1 <= num_keys <= len(operand):
            raise FunctxValueError(
                f"num_keys={num_keys} must be between 1 and len(operand)={len(operand)}{where()}"
            )
        operand = [_as_array(o) for o in operand]
        dim = _canon_axis(dimension, get_aval(operand[0]).ndim, "sort dimension")
        return tuple(
            sort_p.bind(*operand, dimension=dim, is_stable=bool(is_stable), num_keys=num_keys)
        )
    if num_keys != 1:
        raise FunctxValueError(f"num_keys={num_keys} must equal 1 for a single operand.{where()}")
    operand = _as_array(operand)
    dim = _canon_axis(dimension, get_aval(operand).ndim, "sort dimension")
    return sort_p.bind(operand, dimension=dim, is_stable=bool(is_stable), num_keys=1)[0]


def sort_key_val(keys, values, dimension=-1, is_stable=True):
    """Sort ``keys`` along ``dimension`` and apply the same permutation to ``values`` (JAX's
    ``lax.sort_key_val``).

    Arguments:
      keys: the array to sort.
      values: an array of ``keys``' shape, permuted with it.
      dimension: the axis to sort along (default the last).
      is_stable: accepted as JAX's; the sort is always stable.

    Returns:
      ``(sorted_keys, permuted_values)``.

    Example:
      >>> import functx as fx
      >>> k, v = fx.lax.sort_key_val(fx.numpy.array([3, 1, 2]), fx.numpy.array([0, 1, 2]))
      >>> v
      Array([1, 2, 0], dtype=int32)
    """
    keys, values = _as_array(keys), _as_array(values)
    dim = _canon_axis(dimension, get_aval(keys).ndim, "sort dimension")
    k, v = sort_p.bind(keys, values, dimension=dim, is_stable=bool(is_stable), num_keys=1)
    return k, v


def top_k(operand, k, *, axis=-1):
    """The ``k`` largest entries along ``axis`` and their indices (JAX's ``lax.top_k``).

    Arguments:
      operand: an array of rank >= 1, not complex.
      k: how many entries to keep (a non-negative int, at most the axis' size).
      axis: the axis to select along (default the last).

    Returns:
      ``(values, indices)``: the largest entries in descending order (NaN above +inf, +0.0 above
      -0.0) and their ``int32`` indices; of equal entries the lower index comes first.

    Example:
      >>> import functx as fx
      >>> vals, idx = fx.lax.top_k(fx.numpy.array([9.0, 3.0, 6.0, 4.0, 10.0]), 3)
      >>> vals, idx
      (Array([10.,  9.,  6.], dtype=float32), Array([4, 0, 2], dtype=int32))
    """
    try:
        k = operator.index(k)
    except TypeError:
        raise FunctxTypeError(f"top_k: k must be a static int, got {k!r}{where()}") from None
    if k < 0:
        raise FunctxValueError(f"k argument to top_k must be nonnegative, got {k}{where()}")
    operand = _as_array(operand)
    nd = get_aval(operand).ndim
    axis = _canon_axis(axis, nd, "top_k axis")
    vals, idx = top_k_p.bind(operand, k=k, axis=axis)
    return vals, idx


__all__ = ["sort", "sort_key_val", "sort_p", "top_k", "top_k_p"]
