"""``functx.lax``'s general ragged product ``ragged_dot_general`` (with its dimension numbers)
and the block-scaled product ``scaled_dot``: composites of ``einsum``/``dot_general``, so every
transform applies."""

from __future__ import annotations

import string

import numpy as np

from functx import dtypes, numpy as fnp, ops
from functx.errors import FunctxTypeError, UnsupportedError
from functx.source_info import where
from functx.tracing import get_aval


class RaggedDotDimensionNumbers:
    """The dimensions of a ``ragged_dot_general`` (``jax.lax.RaggedDotDimensionNumbers``).

    Arguments:
      dot_dimension_numbers: ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``,
        as ``dot_general``'s.
      lhs_ragged_dimensions: the one ``lhs`` dimension split into groups.
      rhs_group_dimensions: the ``rhs`` dimension indexed by group (one when the ragged
        dimension is a free one of ``lhs``, none otherwise).
    Returns:
      A ``RaggedDotDimensionNumbers``.
    Example:
      >>> from functx import lax
      >>> lax.RaggedDotDimensionNumbers((([1], [1]), ([], [])), [0], [0])
      RaggedDotDimensionNumbers(dot_dimension_numbers=(((1,), (1,)), ((), ())), lhs_ragged_dimensions=(0,), rhs_group_dimensions=(0,))
    """  # noqa: E501

    __slots__ = ("dot_dimension_numbers", "lhs_ragged_dimensions", "rhs_group_dimensions")

    def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
        dn = tuple(
            tuple(tuple(int(d) for d in dims) for dims in pair) for pair in dot_dimension_numbers
        )
        object.__setattr__(self, "dot_dimension_numbers", dn)
        object.__setattr__(
            self, "lhs_ragged_dimensions", tuple(int(d) for d in lhs_ragged_dimensions)
        )
        object.__setattr__(
            self, "rhs_group_dimensions", tuple(int(d) for d in rhs_group_dimensions)
        )

    def __setattr__(self, name, value):
        raise AttributeError(f"RaggedDotDimensionNumbers is immutable: cannot set {name}")

    def _key(self):
        return (self.dot_dimension_numbers, self.lhs_ragged_dimensions, self.rhs_group_dimensions)

    def __eq__(self, other):
        return isinstance(other, RaggedDotDimensionNumbers) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return (
            f"RaggedDotDimensionNumbers(dot_dimension_numbers={self.dot_dimension_numbers}, "
            f"lhs_ragged_dimensions={self.lhs_ragged_dimensions}, "
            f"rhs_group_dimensions={self.rhs_group_dimensions})"
        )


def _group_mask(group_sizes, size: int, dtype):
    """``mask[..., g, r]``: 1 where position ``r`` of the ragged dimension falls in group ``g``
    (groups are consecutive runs of ``group_sizes[..., g]`` positions from 0; positions past
    the last group are in none)."""
    sizes = fnp.asarray(group_sizes).astype(np.int32)
    ends = fnp.cumsum(sizes, axis=-1)
    starts = ends - sizes
    r = fnp.arange(size, dtype=np.int32)
    inside = (starts[..., None] <= r) & (r < ends[..., None])
    return inside.astype(dtype)


def ragged_dot_general(
    lhs,
    rhs,
    group_sizes,
    ragged_dot_dimension_numbers,
    precision=None,
    preferred_element_type=None,
    group_offset=None,
    out_sharding=None,
):
    """A product whose ``lhs`` has one dimension cut into consecutive groups
    (``jax.lax.ragged_dot_general``), ``g = group_sizes.shape[-1]`` of them. Three modes, by the
    kind of the ragged dimension (the output is ``dot_general``'s):

    1. a free dimension of ``lhs``: ``rhs`` has a group dimension, and the positions of group
       ``i`` are multiplied by ``rhs``'s slice ``i`` (positions past the groups give zeros);
    2. a contracting dimension: each group contracts separately, and the output has a leading
       dimension of size ``g``;
    3. a batch dimension: ``rhs`` has no group dimension, and the product is ``dot_general``'s.

    ``group_sizes`` is ``[g]`` (the same groups everywhere) or, in modes 1 and 2,
    ``[b..., x..., g]``: one set of groups per position of the batch dimensions ``b...`` and of
    the ``lhs`` dimensions ``x...`` of the ragged one's kind that come before it.

    Arguments:
      lhs, rhs: arrays.
      group_sizes: an integer array (see above).
      ragged_dot_dimension_numbers: a ``RaggedDotDimensionNumbers``.
      precision, preferred_element_type: as ``dot_general``'s.
      group_offset: not supported (JAX 0.10 fails on it too).
      out_sharding: only None.
    Returns:
      The product.

    functx computes it as an ``einsum`` with a 0/1 mask of the groups (``g`` times one
    product's work).

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> dn = lax.RaggedDotDimensionNumbers((([1], [0]), ([], [])), [1], [])
      >>> lhs, rhs = jnp.ones((2, 5)), jnp.arange(10.0).reshape(5, 2)
      >>> lax.ragged_dot_general(lhs, rhs, jnp.array([2, 3]), dn)[:, 0]
      Array([[ 2.,  4.],
             [18., 21.]], dtype=float32)
    """
    api = "ragged_dot_general"
    if group_offset is not None:
        raise UnsupportedError(f"{api}: group_offset is not supported{where()}")
    if out_sharding is not None:
        raise UnsupportedError(f"{api}: out_sharding must be None{where()}")
    if not isinstance(ragged_dot_dimension_numbers, RaggedDotDimensionNumbers):
        raise FunctxTypeError(
            f"{api}: ragged_dot_dimension_numbers must be a lax.RaggedDotDimensionNumbers, got "
            f"{ragged_dot_dimension_numbers!r}{where()}"
        )
    rdn = ragged_dot_dimension_numbers
    (lc, rc), (lb, rb) = rdn.dot_dimension_numbers
    la, ra, ga = get_aval(lhs), get_aval(rhs), get_aval(group_sizes)
    if not dtypes.issubdtype(ga.dtype, np.integer):
        raise FunctxTypeError(f"{api}: group_sizes must be integers, got {ga.dtype}{where()}")
    if len(rdn.lhs_ragged_dimensions) != 1:
        raise FunctxTypeError(f"{api}: expected one lhs ragged dimension, got {rdn}{where()}")
    (ragged,) = rdn.lhs_ragged_dimensions
    groups = rdn.rhs_group_dimensions
    if not 0 <= ragged < la.ndim:
        raise FunctxTypeError(f"{api}: lhs ragged dimension {ragged} out of range{where()}")
    mode = 2 if ragged in lc else 3 if ragged in lb else 1
    if (mode == 1) != (len(groups) == 1) or len(groups) > 1:
        raise FunctxTypeError(
            f"{api}: rhs must have one group dimension when the ragged dimension is a free one "
            f"of lhs, and none otherwise; got {rdn}{where()}"
        )
    if ga.ndim < 1:
        raise FunctxTypeError(f"{api}: group_sizes must have rank >= 1{where()}")
    g = ga.shape[-1]
    if mode == 1 and ra.shape[groups[0]] != g:
        raise FunctxTypeError(
            f"{api}: rhs group dimension has size {ra.shape[groups[0]]}, group_sizes has {g} "
            f"groups{where()}"
        )
    if mode == 3:
        return ops.dot_general(
            lhs, rhs, rdn.dot_dimension_numbers, precision, preferred_element_type
        )
    # letters: lhs dims, rhs dims (contracting and batch dims share lhs's), the group "g"
    letters = iter(string.ascii_letters.replace("g", ""))
    lhs_l = [next(letters) for _ in range(la.ndim)]
    rhs_l = [next(letters) for _ in range(ra.ndim)]
    for i, j in zip((*lc, *lb), (*rc, *rb)):
        rhs_l[j] = lhs_l[i]
    if mode == 1:
        rhs_l[groups[0]] = "g"
    kind = lc if mode == 2 else [d for d in range(la.ndim) if d not in lc and d not in lb]
    outer = [lhs_l[d] for d in lb] + [lhs_l[d] for d in kind if d < ragged]
    if ga.ndim == 1:
        outer = []
    elif ga.ndim - 1 != len(outer) or tuple(ga.shape[:-1]) != tuple(
        la.shape[lhs_l.index(c)] for c in outer
    ):
        raise FunctxTypeError(
            f"{api}: group_sizes of shape {ga.shape}: expected ({g},) or one set of groups per "
            f"batch and outer position ({len(outer)} leading dimensions){where()}"
        )
    mask = _group_mask(group_sizes, la.shape[ragged], la.dtype)
    mask_l = [*outer, "g", lhs_l[ragged]]
    out_l = [lhs_l[d] for d in lb]
    out_l += [lhs_l[d] for d in range(la.ndim) if d not in lc and d not in lb]
    out_l += [rhs_l[d] for d in range(ra.ndim) if d not in rc and d not in rb and d not in groups]
    if mode == 2:
        out_l = ["g", *out_l]
    spec = f"{''.join(mask_l)},{''.join(lhs_l)},{''.join(rhs_l)}->{''.join(out_l)}"
    return fnp.einsum(
        spec, mask, lhs, rhs, precision=precision, preferred_element_type=preferred_element_type
    )


def _scale_to(api, side, x, scale, contracting):
    """``scale`` repeated along the contracting dimensions to ``x``'s shape (JAX's checks)."""
    xa, sa = get_aval(x), get_aval(scale)
    for i, size in enumerate(xa.shape):
        if i in contracting:
            if size % sa.shape[i] or size // sa.shape[i] < 2:
                raise FunctxTypeError(
                    f"{api}: {side} contracting dim {i} of size {size} must be a multiple, at "
                    f"least twice, of its scale's dim size {sa.shape[i]}{where()}"
                )
            scale = fnp.repeat(scale, size // sa.shape[i], axis=i)
        elif sa.shape[i] != size:
            raise FunctxTypeError(
                f"{api}: {side} dim {i} of size {size} does not match scale dim size "
                f"{sa.shape[i]}{where()}"
            )
    return scale


def scaled_dot(
    lhs,
    rhs,
    *,
    lhs_scale=None,
    rhs_scale=None,
    dimension_numbers=None,
    preferred_element_type=None,
):
    """The block-scaled product ``(lhs * lhs_scale) @ (rhs * rhs_scale)`` of microscaling
    formats (``jax.lax.scaled_dot``): each scale has its operand's shape except along the
    contracting dimensions, which it divides into blocks (of at least 2) sharing one scale.

    As JAX's own definition: the operands and the repeated scales are converted to bfloat16 and
    multiplied, then ``dot_general`` sums in ``preferred_element_type``.

    Arguments:
      lhs, rhs: arrays of one rank (e.g. float8).
      lhs_scale, rhs_scale: the scales (e.g. ``float8_e8m0fnu``), of the operands' rank
        (default: ones).
      dimension_numbers: as ``dot_general``'s (default: the last dimension of ``lhs`` with the
        one before last of ``rhs``, the leading ones batch).
      preferred_element_type: the result's dtype (default bfloat16).
    Returns:
      The product.
    Raises:
      TypeError: operands of rank < 2 with no ``dimension_numbers``, or shapes that do not fit.

    Differences from JAX: differentiable (JAX 0.10 has no transpose rule for it).

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> lhs, rhs = jnp.ones((2, 4)), jnp.ones((4, 3))
      >>> lax.scaled_dot(lhs, rhs, lhs_scale=jnp.full((2, 2), 2.0), rhs_scale=jnp.ones((2, 3)))
      Array([[8, 8, 8],
             [8, 8, 8]], dtype=bfloat16)
    """
    api = "scaled_dot"
    la, ra = get_aval(lhs), get_aval(rhs)
    if dimension_numbers is None:
        if la.ndim < 2:
            raise FunctxTypeError(f"{api} does not support 0-rank and 1-rank operands.{where()}")
        n = la.ndim
        dimension_numbers = (((n - 1,), (n - 2,)), (tuple(range(n - 2)), tuple(range(n - 2))))
    ranks = {la.ndim, ra.ndim} | {get_aval(s).ndim for s in (lhs_scale, rhs_scale) if s is not None}
    if len(ranks) != 1:
        raise FunctxTypeError(f"{api}: all operands and scales must have one rank{where()}")
    (lc, rc), _ = dimension_numbers
    out = dtypes.check_user_dtype(
        dtypes.bfloat16 if preferred_element_type is None else preferred_element_type, api
    )
    bf16 = dtypes.bfloat16
    sides = []
    for side, x, scale, contracting in (("LHS", lhs, lhs_scale, lc), ("RHS", rhs, rhs_scale, rc)):
        x = fnp.asarray(x).astype(bf16)
        if scale is not None:
            x = x * _scale_to(api, side, x, fnp.asarray(scale), contracting).astype(bf16)
        sides.append(x)
    return ops.dot_general(*sides, dimension_numbers, preferred_element_type=out)
