"""``functx.lax`` names of JAX's that wrap other ops: ``mul`` with ``out_dtype``,
``platform_dependent``, the ordering tokens ``create_token``/``after_all``, ``broadcast_like``,
the top-k searches ``approx_max_k``/``approx_min_k`` and the grouped product ``ragged_dot``."""

from __future__ import annotations

import operator

import numpy as np

from functx import config, dtypes, numpy as fnp, ops, tree_util
from functx.control.sort import top_k
from functx.errors import FunctxIndexError, FunctxTypeError, FunctxValueError
from functx.source_info import where
from functx.tracing import get_aval


def mul(x, y, *, out_dtype=None):
    """Elementwise product ``x * y`` (``jax.lax.mul``). With ``out_dtype``, the operands may
    have different dtypes: each is converted to ``out_dtype`` and the product is computed in it
    (XLA's mixed-precision multiply: its values and its derivatives are those of the converted
    product).

    Arguments:
      x, y: arrays of one shape (or a scalar operand), of one dtype unless ``out_dtype`` is
        given.
      out_dtype: the result's dtype (None: the operands' dtype).
    Returns:
      the product, of dtype ``out_dtype`` when given.

    Differences from JAX: where size-1 dimensions broadcast, functx records explicit
    ``broadcast_in_dim`` equations before the product (JAX's primitive broadcasts implicitly), so
    ``make_jaxpr`` prints them; with ``out_dtype`` the Jaxpr shows the two conversions and a plain
    ``mul`` (JAX's ``mul`` equation carries ``out_dtype``).

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> lax.mul(jnp.float32(1.5), jnp.float32(2.0))
      Array(3., dtype=float32)
      >>> lax.mul(jnp.bfloat16(1.5), jnp.float32(2.0), out_dtype=jnp.float32)
      Array(3., dtype=float32)
    """
    if out_dtype is not None:
        x = ops.convert_element_type(x, out_dtype)
        y = ops.convert_element_type(y, out_dtype)
    return ops.mul(x, y)


def _platform() -> str:
    """The platform operations run on by default, by JAX's branch names ("cpu" or "cuda")."""
    dev = config.default_device_setting()
    plat = dev.platform if dev is not None else (config.default_device_spec().lower() or "cpu")
    return "cpu" if plat.partition(":")[0] == "cpu" else "cuda"


def platform_dependent(*args, default=None, **per_platform):
    """``per_platform[platform](*args)`` (``jax.lax.platform_dependent``): the branch of the
    platform the computation runs on, else ``default``.

    Differences from JAX: functx chooses when the call is traced (or run eagerly): the platform
    of the default device ("cpu", or "cuda" for a GPU; ``functx.default_device``,
    ``FUNCTX_DEFAULT_DEVICE``). Only that branch is traced, so the others never reach the
    program (JAX keeps them in the Jaxpr and picks one when lowering; a ``jit`` whose committed
    arguments live on another device than the default still runs the default's branch here).

    Arguments:
      *args: arrays (pytrees) handed to the branch.
      default: the branch of a platform without its own (optional).
      **per_platform: branches by platform name ("cpu", "cuda", "rocm", "tpu").
    Returns:
      the chosen branch's result.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> lax.platform_dependent(jnp.float32(0.0), cpu=jnp.cos, default=jnp.sin)
      Array(1., dtype=float32)
    """
    for name, branch in per_platform.items():
        if not callable(branch):
            raise FunctxTypeError(
                f"lax.platform_dependent: the '{name}' branch must be a callable."
            )
        if name == "gpu":
            raise FunctxValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
    if default is not None and not callable(default):
        raise FunctxTypeError("lax.platform_dependent: the 'default' branch must be a callable.")
    platform = _platform()
    branch = per_platform.get(platform, default)
    if branch is None:
        raise NotImplementedError(
            f"lax.platform_dependent: translation rule for platform_index not found for platform "
            f"{platform} (branches: {', '.join(per_platform)}; no default)"
        )
    return branch(*args)


class Token:
    """An ordering token (``jax.lax.create_token``'s result). It holds no data: a pytree with no
    leaves, so it passes through ``jit`` (which returns a new token) and transformations.

    Example:
      >>> from functx import lax
      >>> tok = lax.create_token()
      >>> tok
      Token()
      >>> lax.after_all(tok, tok)
      Token()
    """

    __slots__ = ()

    def __repr__(self):
        return "Token()"


tree_util.register_pytree_node(Token, lambda t: ((), None), lambda aux, children: Token())


def create_token(*_):
    """A new ordering token (``jax.lax.create_token``; the arguments are ignored, as in JAX).

    Differences from JAX: a functx ``Token`` (a pytree without leaves), not JAX's
    ``core.Token``; it orders nothing, since functx runs operations in program order.

    Arguments:
      *_: ignored.
    Returns:
      a ``Token``.
    Example:
      >>> from functx import lax
      >>> lax.create_token()
      Token()
    """
    return Token()


def after_all(*operands):
    """A token ordered after every one of ``operands`` (``jax.lax.after_all``).

    Differences from JAX: functx runs operations in program order, so this is a new ``Token``
    (see ``create_token``).

    Arguments:
      *operands: tokens (anything else raises TypeError, as in JAX).
    Returns:
      a ``Token``.
    Example:
      >>> from functx import lax
      >>> lax.after_all(lax.create_token(), lax.create_token())
      Token()
    """
    if not all(isinstance(t, Token) for t in operands):
        raise FunctxTypeError("Arguments to after_all must be tokens")
    return Token()


def broadcast_like(arr, like_arr):
    """``arr`` broadcast to the shape of ``like_arr`` (``jax.lax.broadcast_like``), by NumPy's
    rules (trailing dimensions aligned, size-1 dimensions stretched).

    Arguments:
      arr: an array (or scalar) whose shape broadcasts to ``like_arr``'s.
      like_arr: an array (or anything with a shape) whose shape the result takes.
    Returns:
      ``arr``'s values in ``like_arr``'s shape, ``arr``'s dtype.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> lax.broadcast_like(jnp.array([1, 2, 3]), jnp.zeros((2, 3)))
      Array([[1, 2, 3],
             [1, 2, 3]], dtype=int32)
    """
    return fnp.broadcast_to(arr, get_aval(like_arr).shape)


def _approx_k(name, operand, k, reduction_dimension, recall_target):
    """The checks JAX makes of an ``approx_max_k``/``approx_min_k`` call; the operand and axis."""
    aval = get_aval(operand)
    if not dtypes.issubdtype(aval.dtype, np.floating):
        raise FunctxValueError(
            f"{name}: operand must be a floating type, got {aval.dtype} of shape {aval.shape}"
            f"{where()}"
        )
    try:
        k = operator.index(k)
        dim = operator.index(reduction_dimension)
    except TypeError:
        raise FunctxTypeError(
            f"{name}: k and reduction_dimension must be static ints, got {k!r} and "
            f"{reduction_dimension!r}{where()}"
        ) from None
    if not -aval.ndim <= dim < aval.ndim:
        raise FunctxIndexError(
            f"{name}: reduction_dimension {dim} is out of range for an operand of shape "
            f"{aval.shape}{where()}"
        )
    dim %= aval.ndim
    if k <= 0:
        raise FunctxValueError(f"{name}: k must be positive, got {k}{where()}")
    if k > aval.shape[dim]:
        raise FunctxValueError(
            f"{name}: k must be smaller than the size of reduction_dim {aval.shape[dim]}, got {k}"
            f"{where()}"
        )
    if not 0.0 < float(recall_target) <= 1.0:
        raise FunctxValueError(f"{name}: recall_target out of range (0, 1]: {recall_target}")
    return k, dim


def _last_extreme(operand, dim, largest):
    """``k = 1``: the last of the tied largest (smallest) entries, ``+0.0`` and ``-0.0`` tied, as
    XLA's reduction for one entry keeps them; ``(values, int32 indices)`` of size 1 on ``dim``."""
    n = get_aval(operand).shape[dim]
    pick = fnp.argmax if largest else fnp.argmin
    back = pick(fnp.flip(operand, dim), axis=dim, keepdims=True).astype(np.int32)
    idx = (n - 1) - back
    return fnp.take_along_axis(operand, idx, axis=dim), idx


def _zeros_tied_top_k(operand, keys, k, dim):
    """``k > 1``: ``lax.top_k`` of ``keys`` with ``-0.0`` made ``+0.0`` (XLA's comparison ties
    them, so the lower index comes first), and ``operand``'s entries at those indices."""
    _, idx = top_k(ops.add(keys, fnp.zeros((), get_aval(keys).dtype)), k, axis=dim)
    return fnp.take_along_axis(operand, idx, axis=dim), idx


def approx_max_k(
    operand,
    k,
    reduction_dimension=-1,
    recall_target=0.95,
    reduction_input_size_override=-1,
    aggregate_to_topk=True,
):
    """The ``k`` largest entries along ``reduction_dimension`` and their indices
    (``jax.lax.approx_max_k``). functx computes them exactly, as JAX does on the CPU and the GPU
    (XLA's approximate algorithm runs on TPUs only): for ``k > 1`` the result is
    ``lax.top_k``'s, NaN first, ties by the lower index, except that ``+0.0`` and ``-0.0`` tie;
    differentiable like it.

    Differences from JAX: with ``aggregate_to_topk=False`` JAX returns an implementation-defined
    number (at least ``k``) of candidates in an implementation-defined order; functx returns the
    exact top ``k``, sorted, which satisfies that contract. With ``k = 1`` both run a reduction
    that keeps the last of tied entries (``+0.0`` and ``-0.0`` tie), where JAX's result with NaN
    entries depends on their places and functx's is a NaN (for ``k > 1`` too JAX's places NaN
    entries by the dtype and ``k``: float16 rows with one NaN left it out of the top 2, a
    float32 row put it fifth of 7; functx's come first); and JAX pads its reduction with
    ``-inf`` (``+inf`` for ``approx_min_k``), so its indices of tied entries equal to that value
    can differ from functx's lowest-first ones (``recall_target`` and
    ``reduction_input_size_override`` only steer the approximation and are checked, not used).

    Arguments:
      operand: a floating-point array.
      k: how many entries to keep (a static int, positive and at most the dimension's size).
      reduction_dimension: the dimension to search (default the last).
      recall_target: the approximation's expected recall, in (0, 1].
      reduction_input_size_override: JAX's hint for sharded inputs (unused here).
      aggregate_to_topk: whether the result is the top ``k`` (see above).
    Returns:
      ``(values, indices)``: the ``k`` largest entries in descending order and their ``int32``
      indices along ``reduction_dimension``.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> lax.approx_max_k(jnp.array([[3.0, 1.0, 7.0, 5.0]]), 2)
      (Array([[7., 5.]], dtype=float32), Array([[2, 3]], dtype=int32))
    """
    del reduction_input_size_override, aggregate_to_topk
    k, dim = _approx_k("approx_max_k", operand, k, reduction_dimension, recall_target)
    if k == 1:
        return _last_extreme(operand, dim, largest=True)
    return _zeros_tied_top_k(operand, operand, k, dim)


def approx_min_k(
    operand,
    k,
    reduction_dimension=-1,
    recall_target=0.95,
    reduction_input_size_override=-1,
    aggregate_to_topk=True,
):
    """The ``k`` smallest entries along ``reduction_dimension`` and their indices
    (``jax.lax.approx_min_k``), computed exactly (see ``approx_max_k``): for ``k > 1``
    ascending, ties (``+0.0`` and ``-0.0`` among them) by the lower index, NaN entries first, as
    in ``approx_max_k``; for ``k = 1`` the last of the tied smallest entries.

    Differences from JAX: as ``approx_max_k``'s; in addition JAX's result with NaN entries
    follows no order on the CPU (its comparator is not a total order there), where functx's puts
    them first.

    Arguments:
      operand: a floating-point array.
      k: how many entries to keep (a static int, positive and at most the dimension's size).
      reduction_dimension: the dimension to search (default the last).
      recall_target: the approximation's expected recall, in (0, 1].
      reduction_input_size_override: JAX's hint for sharded inputs (unused here).
      aggregate_to_topk: whether the result is the top ``k`` (see ``approx_max_k``).
    Returns:
      ``(values, indices)``: the ``k`` smallest entries in ascending order and their ``int32``
      indices.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> lax.approx_min_k(jnp.array([3.0, 1.0, 7.0, 5.0]), 2)
      (Array([1., 3.], dtype=float32), Array([1, 0], dtype=int32))
    """
    del reduction_input_size_override, aggregate_to_topk
    k, dim = _approx_k("approx_min_k", operand, k, reduction_dimension, recall_target)
    if k == 1:
        return _last_extreme(operand, dim, largest=False)
    return _zeros_tied_top_k(operand, ops.neg(operand), k, dim)


def ragged_dot(
    lhs,
    rhs,
    group_sizes,
    precision=None,
    preferred_element_type=None,
    group_offset=None,
    out_sharding=None,
):
    """The grouped matrix product of a mixture of experts (``jax.lax.ragged_dot``): the rows of
    ``lhs`` fall into ``g`` consecutive groups of ``group_sizes`` rows, and the rows of group
    ``i`` are multiplied by ``rhs[i]``. Rows past ``sum(group_sizes)`` give zeros; a group that
    would reach past the last row is cut there.

    functx computes it as one product per group, each row's result kept where its group is
    (``g`` times the work of one (m, k) x (k, n) product): composite, so ``grad`` and ``vmap``
    come from the products'.

    Arguments:
      lhs: an (m, k) array.
      rhs: a (g, k, n) array, one matrix a group.
      group_sizes: a (g,) integer array: the rows in each group.
      precision: the products' precision (as ``lax.dot``'s).
      preferred_element_type: the accumulation and result dtype (as ``lax.dot``'s).
      group_offset: not supported (JAX does not support it either).
      out_sharding: only None (functx arrays are not sharded).
    Returns:
      the (m, n) product.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> lhs = jnp.arange(8.0).reshape(4, 2)
      >>> rhs = jnp.stack([jnp.eye(2), 2 * jnp.eye(2)])
      >>> lax.ragged_dot(lhs, rhs, jnp.array([1, 3]))
      Array([[ 0.,  1.],
             [ 4.,  6.],
             [ 8., 10.],
             [12., 14.]], dtype=float32)
    """
    la, ra, ga = get_aval(lhs), get_aval(rhs), get_aval(group_sizes)
    shapes = f"lhs {la.shape}, rhs {ra.shape}, group_sizes {ga.shape}"
    if group_offset is not None:
        raise NotImplementedError(f"ragged_dot: group_offset is not supported{where()}")
    if out_sharding is not None:
        raise NotImplementedError(f"ragged_dot: out_sharding must be None{where()}")
    if la.ndim != 2 or ra.ndim != 3 or ga.ndim != 1:
        raise FunctxTypeError(
            f"ragged_dot expects lhs of rank 2, rhs of rank 3 and group_sizes of rank 1; got "
            f"{shapes}{where()}"
        )
    if ra.shape[0] != ga.shape[0]:
        raise FunctxTypeError(
            f"ragged_dot: expected rhs group dimension size to be {ga.shape[0]}, got "
            f"{ra.shape[0]} ({shapes}){where()}"
        )
    if la.shape[1] != ra.shape[1]:
        raise FunctxTypeError(f"ragged_dot: the contracting dimensions differ: {shapes}{where()}")
    if not dtypes.issubdtype(ga.dtype, np.integer):
        raise FunctxTypeError(f"ragged_dot: group_sizes must be integers, got {ga.dtype}{where()}")
    ends = fnp.cumsum(fnp.asarray(group_sizes).astype(np.int32))
    group = fnp.searchsorted(ends, fnp.arange(la.shape[0], dtype=np.int32), side="right")
    mask = (group[None, :] == fnp.arange(ra.shape[0], dtype=np.int32)[:, None]).astype(la.dtype)
    return fnp.einsum(
        "gm,mk,gkn->mn",
        mask,
        lhs,
        rhs,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


__all__ = [
    "Token",
    "after_all",
    "approx_max_k",
    "approx_min_k",
    "broadcast_like",
    "create_token",
    "mul",
    "platform_dependent",
    "ragged_dot",
]
