"""Convolutions of ``functx.lax``: ``conv_general_dilated`` and its wrappers (``conv``,
``conv_with_general_padding``, ``conv_transpose``, ``conv_general_dilated_patches``), with JAX's
signatures, dimension numbers, padding strings, dtypes and errors.

Design: a convolution is a COMPOSITE of existing primitives, not a primitive of its own.

* The input goes channels-last, ``(N, spatial..., C)`` (a transpose: a view under ``jit``);
  ``lhs_dilation`` and the padding are one ``pad`` (interior padding for the dilation; negative
  padding crops).
* One strided ``slice`` per kernel tap (tap ``t`` starts at ``t * rhs_dilation`` and steps by
  the window stride) gives that tap's windows, ``(N * out_spatial, C)``; the convolution is the
  SUM OVER TAPS of one ``dot_general`` each with the tap's ``(C, O)`` kernel slice. Feature and
  batch groups are a batch dimension of those products.
* A depthwise convolution (one input channel per group: ``feature_group_count`` equal to the
  channels, Mamba's causal conv1d, or a single-channel signal as in ``jnp.convolve``) is a sum
  of shifted slices times per-channel weights: elementwise multiply-adds that ``jit`` fuses into
  one loop reading the input once per tap from cache.
* Kernels of more than ``_SLICE_TAPS`` taps (``jnp.convolve`` with a kernel of a few hundred
  taps) build the im2col matrix ``(N * out_spatial, taps * C)`` with ONE ``gather`` of
  precomputed flat indices and one ``dot_general``, so the Jaxpr stays a handful of equations
  whatever the kernel size.

Why a composite: the derivatives come from the rules of pad/slice/dot_general (the transpose of
a slice is a pad, of each tap's product two products), so ``grad``, ``jvp``, ``vmap`` and both
backends need no new rule, and the transposed convolutions JAX's rules would build are the same
sums. Why per-tap products rather than one product on an im2col concatenation: measured on the
CPU (2 cores, loaded; 3x3 'SAME', NHWC (2, 64, 64, 64) -> 64 channels, float32, jit, ms per
call, forward / gradient): im2col concatenation 272-360 / 294-1240, output-side shifts (one
product to 9 * O channels, then a sum of shifted slices) 75-96 / 219-393, im2col by a gather
88 / 226, per-tap products 70-79 / 100-205, JAX 44-52 / 155-163. The concatenation renders as a
chain of selects per element (each of the 9 branches loads), and the transposes of the shifted
products are the same; the per-tap products are BLAS calls on contiguous copies and their
transposes are too. benchmarks/conv.py has the figures against JAX. ``make_jaxpr`` therefore
shows pads, slices and ``dot_general``s where JAX shows one ``conv_general_dilated`` equation.

Session 28 (the same case, N = 2, load average 11-13 from other processes, each library in its
own process, three alternating rounds, median of 9 calls, wall ms with CPU ms in brackets):

* the products' OpenBLAS threads were the cost: they spin between calls against the program's
  OpenMP threads. With OpenBLAS on one thread and the products cut into pieces for the OpenMP
  threads (``lowering/cpp/dot.py``) the forward went from 288-348 (73-83) to 60-80 (15-19), JAX
  36-68 (9.5-12), and the gradient from 1304-2325 (329-581) to 128-187 (28-42), JAX 177-320
  (45-59): the gradient is ahead of JAX's, the forward 1.1-1.7x its time;
* designs measured again on top of that (forward / gradient, wall (CPU)): the padded input
  flattened so that each tap is a contiguous row range (one product per tap over the padded
  grid, the border rows cropped after) 71-81 (17-23) / 175-184 (41-44); three taps of a kernel
  row concatenated along channels (K = 3C, three products) 116-125 (25-28) / 241-272 (53-57);
  all nine (one K = 9C product) 192-204 (48-49) / 296-360 (73-79); per-tap products (kept)
  48-64 (12-17) / 109-135 (30-33). The concatenations render as selects per element, and the
  flattened rows are still copied before their product (a slice feeding a product is stored),
  so none of them saves work. The rest of the forward's gap is the nine K = 64 products
  themselves: NumPy's sgemm takes 14-16 CPU ms for them alone here (one K = 576 product 12-13),
  while JAX's whole convolution takes 9.5-12; avoiding the tap copies and the final sum would
  need products reading strided windows in place and accumulating into one output (BLAS's
  beta = 1), which the ``dot`` kernel does not take yet.

Session 30 (load average 9-12 from other processes; CPU ms per call, medians of 15, each
library in its own process, alternating):

* the same 3x3 case (N = 2) again, per-tap products against the im2col gather (``_SLICE_TAPS``
  set to 0): forward 14-17 against 20-22 (JAX 11-12), gradient 28-33 against 47-53 (JAX 50-60):
  per-tap products stay. Outside functx, NumPy/OpenBLAS on one thread: the nine tap products
  on contiguous copies 12.6-13.2, one K = 576 im2col product 12.5-13.0, and nine products
  reading the FLATTENED padded input in place (tap ``(i, j)`` is the row range starting at
  ``i * (W + 2) + j`` of the ``(N * (H + 2) * (W + 2), C)`` matrix, so no copy) accumulating with
  beta = 1 into one padded-grid output, cropped after: 9.5-10.2, under JAX's whole convolution.
  That is the next step for the forward (a ``dot`` kernel taking a row offset and beta = 1);
* a one-channel input to 8+ outputs (the first convolution of benchmarks/workloads.py's CNN,
  1 -> 16 channels on 28x28 images) is one gather and one product (``one_channel``): as
  depthwise multiply-adds it fused into the max-pool reading it, whose rows (one per output
  element and channel) ran as scalar loops. With ``_window.py``'s pooling reshape keeping the
  channels whole, the CNN SGD step went from 41-43 to 30-31 CPU ms (JAX 14-18). Most of the
  rest was the max-pool's gradient: its expression was evaluated by a pointwise kernel and
  again by the bias gradient's column reduction, which ran on one thread (16 columns, one
  block), and it re-read the second convolution's nine input-gradient products four times per
  element. With the scheduler storing a cotangent read by a reduction and a product, and a sum
  of 8+ buffers read 4+ times per element (``lowering/schedule.py``), and column reductions of
  few blocks split into chunks (``lowering/cpp/reduce.py``): 11-15 CPU ms, JAX's 14-18.

Session 31: on the CPU the forward is no longer per-tap products. ``jit`` finds the stride-1
forward sums in a CPU program's final Jaxpr and makes each one ``conv_taps`` step
(``lowering/cpp/conv.py``): tap ``t``'s windows are rows ``q + r_t`` of the padded input's row
grid, so the step reads the padded input in place, as register tiles (float32, 16k output
channels, AVX2/FMA) or blocks of BLAS calls accumulating in cache (the session-30 measurement
above); so do the stride-1 input gradient's sum (a forward sum over the padded cotangent) and,
in float32, the kernel gradient's (register tiles reading the padded input and the cotangent
in place). The composite, its Jaxpr and its derivatives are unchanged (on a GPU the same sums
become cuDNN steps, ``lowering/triton/conv.py``). The 3x3 case at N = 8 (load average 8-12,
CPU ms per call, alternating calls in one process, JAX in the same process): forward 29-37
against JAX's 34-42 (per-tap products 57-72); gradient 76-80 against JAX's 275-309 (per-tap
119-136).
"""

from __future__ import annotations

import itertools
import math
import operator
from typing import NamedTuple

import numpy as np

from functx import dtypes, ops, primitives as P
from functx._window import padtype_to_pads as _string_pads
from functx.errors import FunctxTypeError, FunctxValueError
from functx.source_info import where as _loc
from functx.tracing import get_aval

# Kernels with more taps than this build their im2col matrix with one gather instead of one
# slice per tap (a Jaxpr of a few equations instead of hundreds).
_SLICE_TAPS = 64
# A one-channel input convolved to this many outputs or more is one gather and one product.
_ONE_CHANNEL_OUTPUTS = 8


class ConvDimensionNumbers(NamedTuple):
    """Where the batch, feature and spatial dimensions of a convolution's operands are, like
    ``jax.lax.ConvDimensionNumbers``.

    Arguments:
      lhs_spec: the input's dimensions as ``(batch, feature, spatial...)``.
      rhs_spec: the kernel's dimensions as ``(out feature, in feature, spatial...)``.
      out_spec: the output's dimensions as ``(batch, feature, spatial...)``.

    Returns:
      A named tuple of three tuples of ints.

    Example:
      >>> import functx as fx
      >>> fx.lax.conv_dimension_numbers((1, 5, 5, 3), (3, 3, 3, 8), ("NHWC", "HWIO", "NHWC"))
      ConvDimensionNumbers(lhs_spec=(0, 3, 1, 2), rhs_spec=(3, 2, 0, 1), out_spec=(0, 3, 1, 2))
    """

    lhs_spec: tuple
    rhs_spec: tuple
    out_spec: tuple


def conv_general_permutations(dimension_numbers):
    """The ``(batch, feature, spatial...)`` permutations of three layout strings, like
    ``jax.lax.conv_general_permutations``; the spatial dimensions follow the kernel's order.

    Arguments:
      dimension_numbers: three strings such as ``("NCHW", "OIHW", "NCHW")``: ``N``/``C`` name
        the batch and feature dimensions of the input and output, ``O``/``I`` the kernel's output
        and input features, other letters the spatial dimensions.

    Returns:
      Three tuples of ints: for the input, the kernel and the output.

    Example:
      >>> import functx as fx
      >>> fx.lax.conv_general_permutations(("NHWC", "HWIO", "NHWC"))
      ((0, 3, 1, 2), (3, 2, 0, 1), (0, 3, 1, 2))
    """
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    pairs = (("N", "C"), ("O", "I"), ("N", "C"))
    for i, (a, b) in enumerate(pairs):
        spec = dimension_numbers[i]
        if not spec.count(a) == spec.count(b) == 1:
            raise FunctxTypeError(
                f"convolution dimension_numbers[{i}] must contain the characters '{a}' and "
                f"'{b}' exactly once, got {spec}.{_loc()}"
            )
        if len(spec) != len(set(spec)):
            raise FunctxTypeError(
                f"convolution dimension_numbers[{i}] cannot have duplicate characters, got "
                f"{spec}.{_loc()}"
            )
    spatial = [set(s) - set(p) for s, p in zip(dimension_numbers, pairs)]
    if not spatial[0] == spatial[1] == spatial[2]:
        raise FunctxTypeError(
            f"convolution dimension_numbers elements must each have the same set of spatial "
            f"characters, got {tuple(dimension_numbers)}.{_loc()}"
        )
    rhs_order = [c for c in rhs_spec if c not in pairs[1]]

    def perm(spec, pair):
        sp = sorted((spec.index(c) for c in rhs_order), key=lambda i: rhs_order.index(spec[i]))
        return (spec.index(pair[0]), spec.index(pair[1]), *sp)

    return tuple(perm(s, p) for s, p in zip(dimension_numbers, pairs))


def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers):
    """``dimension_numbers`` as a ``ConvDimensionNumbers``, like
    ``jax.lax.conv_dimension_numbers``.

    Arguments:
      lhs_shape: the input's shape.
      rhs_shape: the kernel's shape.
      dimension_numbers: None (``NCHW``, ``OIHW``, ``NCHW`` order), three layout strings, or a
        ``ConvDimensionNumbers`` (returned as it is).

    Returns:
      A ``ConvDimensionNumbers``.

    Example:
      >>> import functx as fx
      >>> fx.lax.conv_dimension_numbers((1, 3, 5), (4, 3, 2), None)
      ConvDimensionNumbers(lhs_spec=(0, 1, 2), rhs_spec=(0, 1, 2), out_spec=(0, 1, 2))
    """
    if isinstance(dimension_numbers, ConvDimensionNumbers):
        return dimension_numbers
    if len(lhs_shape) != len(rhs_shape):
        raise FunctxTypeError(
            f"convolution requires lhs and rhs ndim to be equal, got {len(lhs_shape)} and "
            f"{len(rhs_shape)}.{_loc()}"
        )
    if dimension_numbers is None:
        iota = tuple(range(len(lhs_shape)))
        return ConvDimensionNumbers(iota, iota, iota)
    if not isinstance(dimension_numbers, (list, tuple)):
        raise FunctxTypeError(
            f"convolution dimension_numbers must be tuple/list or None, got "
            f"{type(dimension_numbers)}.{_loc()}"
        )
    if len(dimension_numbers) != 3:
        raise FunctxTypeError(
            f"convolution dimension_numbers list/tuple must be length 3, got "
            f"{len(dimension_numbers)}.{_loc()}"
        )
    if not all(isinstance(s, str) for s in dimension_numbers):
        raise FunctxTypeError(
            f"convolution dimension_numbers elements must be strings, got "
            f"{tuple(type(s) for s in dimension_numbers)}.{_loc()}"
        )
    for i, s in enumerate(dimension_numbers):
        if len(s) != len(lhs_shape):
            raise FunctxTypeError(
                f"convolution dimension_numbers[{i}] must have len equal to the ndim of lhs and "
                f"rhs, got {len(s)} for lhs and rhs shapes {tuple(lhs_shape)} and "
                f"{tuple(rhs_shape)}.{_loc()}"
            )
    return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def _dilate(n, d):
    return 0 if n == 0 else 1 + d * (n - 1)


def _ints(name, what, vs, n):
    try:
        out = tuple(operator.index(v) for v in vs)
    except TypeError:
        raise FunctxTypeError(
            f"{name}: {what} must be a sequence of integers, got {vs!r}{_loc()}"
        ) from None
    if len(out) != n:
        raise FunctxValueError(
            f"{name}: {what} must have {n} entries (one per spatial dimension), got "
            f"{len(out)}{_loc()}"
        )
    return out


def _check_preferred(name, dtype, pet):
    """JAX's allowed (input, preferred_element_type) pairs: integral to integral or floating,
    floating to floating, complex to complex."""
    if pet is None:
        return None
    pet = dtypes.canonicalize(pet)
    kind, pkind = np.dtype(dtype).kind, np.dtype(pet).kind
    ok = (
        (kind in "iub" and pkind in "iubf")
        or (kind == "f" and pkind == "f")
        or (kind == "c" and pkind == "c")
        or (dtype == dtypes.bfloat16 and (pkind == "f" or pet == dtypes.bfloat16))
        or (kind == "f" and pet == dtypes.bfloat16)
    )
    if not ok:
        raise FunctxTypeError(
            "Input type is incompatible with `preferred_element_type`. The compatible "
            "combinations of (input_type, preferred_element_type) are (integral, integral), "
            "(integral, floating), (floating, floating), (complex, complex)."
        )
    return pet


def _as_array(x):
    return x if hasattr(x, "shape") and hasattr(x, "dtype") else np.asarray(x)


def conv_general_dilated(
    lhs,
    rhs,
    window_strides,
    padding,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    feature_group_count=1,
    batch_group_count=1,
    precision=None,
    preferred_element_type=None,
):
    """General N-dimensional convolution with strides, padding, dilations and groups, like
    ``jax.lax.conv_general_dilated`` (XLA's ``Conv``: a cross-correlation; the kernel is not
    flipped).

    Arguments:
      lhs: the input, of rank ``n + 2``.
      rhs: the kernel, of rank ``n + 2``.
      window_strides: ``n`` strides.
      padding: 'SAME', 'SAME_LOWER', 'VALID', or ``n`` ``(low, high)`` pairs (negative crops).
      lhs_dilation: ``n`` input dilations (a transposed convolution), or None.
      rhs_dilation: ``n`` kernel dilations (an atrous convolution), or None.
      dimension_numbers: None (``NCHW``/``OIHW``/``NCHW``), three layout strings such as
        ``("NHWC", "HWIO", "NHWC")``, or a ``ConvDimensionNumbers``.
      feature_group_count: the number of groups the input features are split into.
      batch_group_count: the number of groups the input batch is split into.
      precision: None, a ``Precision`` or a string, or a pair (as ``dot_general``).
      preferred_element_type: the accumulation and result dtype, or None.

    Returns:
      The convolution, in ``dimension_numbers``' output layout.

    Differences from JAX: a composite: ``make_jaxpr`` shows a ``pad``, strided ``slice``s and one
    ``dot_general`` per kernel tap (a ``gather`` beyond 64 taps) where JAX shows one
    ``conv_general_dilated``; values agree to rounding.

    Example:
      >>> import functx as fx
      >>> x = fx.numpy.arange(5.0).reshape(1, 1, 5)
      >>> fx.lax.conv_general_dilated(x, fx.numpy.ones((1, 1, 2)), (1,), "VALID")
      Array([[[1., 3., 5., 7.]]], dtype=float32)
    """
    lhs, rhs = _as_array(lhs), _as_array(rhs)
    la, ra = get_aval(lhs), get_aval(rhs)
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    name = "conv_general_dilated"
    if la.ndim != ra.ndim:
        raise FunctxValueError(
            f"conv_general_dilated lhs and rhs must have the same number of dimensions, but got "
            f"{la.shape} and {ra.shape}.{_loc()}"
        )
    nsp = la.ndim - 2
    if nsp < 0:
        raise FunctxTypeError(f"{name}: operands need rank >= 2, got {la.shape}{_loc()}")
    lhs_spec, rhs_spec, out_spec = (tuple(s) for s in dn)
    if len(rhs_spec) - 2 != len(window_strides):
        raise FunctxValueError(
            f"conv_general_dilated window and window_strides must have the same number of "
            f"dimensions, but got {len(rhs_spec) - 2} and {len(window_strides)}{_loc()}"
        )
    strides = _ints(name, "window_strides", window_strides, nsp)
    if lhs_dilation is None:
        lhs_dilation = (1,) * nsp
    elif isinstance(padding, str) and any(d != 1 for d in lhs_dilation):
        raise FunctxValueError(
            "String padding is not implemented for transposed convolution using this op. "
            "Please either exactly specify the required padding or use conv_transpose."
        )
    lhs_dil = _ints(name, "lhs_dilation", lhs_dilation, nsp)
    rhs_dil = _ints(name, "rhs_dilation", (1,) * nsp if rhs_dilation is None else rhs_dilation, nsp)
    in_sp = [la.shape[d] for d in lhs_spec[2:]]
    k_sp = [ra.shape[d] for d in rhs_spec[2:]]
    if isinstance(padding, str):
        pads = _string_pads(in_sp, [_dilate(k, r) for k, r in zip(k_sp, rhs_dil)], strides, padding)
    else:
        try:
            pads = [(operator.index(lo), operator.index(hi)) for lo, hi in padding]
        except (ValueError, TypeError):
            raise FunctxValueError(
                f"padding argument to conv_general_dilated should be a string or a sequence of "
                f"(low, high) pairs, got {padding}{_loc()}"
            ) from None
    fg, bg = operator.index(feature_group_count), operator.index(batch_group_count)
    n, c = la.shape[lhs_spec[0]], la.shape[lhs_spec[1]]
    o, i = ra.shape[rhs_spec[0]], ra.shape[rhs_spec[1]]
    if fg <= 0:
        raise FunctxValueError(
            f"conv_general_dilated feature_group_count must be a positive integer, got {fg}."
        )
    if c % fg:
        raise FunctxValueError(
            f"conv_general_dilated feature_group_count must divide lhs feature dimension size, "
            f"but {fg} does not divide {c}.{_loc()}"
        )
    if c // fg != i:
        raise FunctxValueError(
            f"conv_general_dilated lhs feature dimension size divided by feature_group_count "
            f"must equal the rhs input feature dimension size, but {c} // {fg} != {i}.{_loc()}"
        )
    if o % fg:
        raise FunctxValueError(
            f"conv_general_dilated rhs output feature dimension size must be a multiple of "
            f"feature_group_count, but {o} is not a multiple of {fg}.{_loc()}"
        )
    if bg <= 0:
        raise FunctxValueError(
            f"conv_general_dilated batch_group_count must be a positive integer, got {bg}."
        )
    if bg > 1 and n % bg:
        raise FunctxValueError(
            f"conv_general_dilated batch_group_count must divide lhs batch dimension size, but "
            f"{bg} does not divide {n}.{_loc()}"
        )
    if o % bg:
        raise FunctxValueError(
            f"conv_general_dilated rhs output feature dimension size must be a multiple of "
            f"batch_group_count, but {o} is not a multiple of {bg}.{_loc()}"
        )
    if bg > 1 and fg > 1:
        raise FunctxValueError(
            f"At most one of batch_group_count and feature_group_count may be > 1, got "
            f"batch_group_count={bg} and feature_group_count={fg}"
        )
    if len(pads) != nsp:
        raise FunctxTypeError(
            f"Wrong number of explicit pads for convolution: expected {nsp}, got {len(pads)}."
        )
    padded = [_dilate(s, d) + lo + hi for s, d, (lo, hi) in zip(in_sp, lhs_dil, pads)]
    if any(p < 0 for p in padded):
        raise FunctxValueError(
            f"Negative padding is larger than the size of the corresponding dimension: got "
            f"padding={pads} for lhs_shape[2:]={tuple(in_sp)}{_loc()}"
        )
    if la.dtype != ra.dtype:
        raise FunctxTypeError(
            f"conv_general_dilated requires arguments to have the same dtypes, got "
            f"{np.dtype(la.dtype).name}, {np.dtype(ra.dtype).name}.{_loc()}"
        )
    pet = _check_preferred(name, la.dtype, preferred_element_type)
    out_sp = []
    for p, k, r, s in zip(padded, k_sp, rhs_dil, strides):
        e = _dilate(k, r)
        out_sp.append(0 if p < e else (p - e) // s + 1)
    # channels-last: x is (N, spatial..., C), w is (spatial..., I, O)
    x = ops.transpose(lhs, (lhs_spec[0], *lhs_spec[2:], lhs_spec[1]))
    w = ops.transpose(rhs, (*rhs_spec[2:], rhs_spec[1], rhs_spec[0]))
    y = _conv_channels_last(
        x, w, strides, pads, lhs_dil, rhs_dil, fg, bg, out_sp, precision, pet, la.dtype
    )
    # y is (N', out spatial..., O): canonical dims 0, 2.., 1 in that order
    pos = [0, nsp + 1, *range(1, nsp + 1)]
    perm = [0] * (nsp + 2)
    for j in range(nsp + 2):
        perm[out_spec[j]] = pos[j]
    return ops.transpose(y, tuple(perm))


def _conv_channels_last(x, w, strides, pads, lhs_dil, rhs_dil, fg, bg, out_sp, precision, pet, dt):
    xa, wa = get_aval(x), get_aval(w)
    n, c = xa.shape[0], xa.shape[-1]
    k_sp, o = wa.shape[:-2], wa.shape[-1]
    out_dt = dt if pet is None else pet
    nsp = len(out_sp)
    taps = list(itertools.product(*(range(k) for k in k_sp)))
    nt = len(taps)
    n_out = n // bg
    out_shape = (n_out, *out_sp, o)
    if math.prod(out_shape) == 0 or nt == 0 or c == 0:
        return ops.full(out_shape, 0, out_dt)
    if any(lo or hi for lo, hi in pads) or any(d != 1 for d in lhs_dil):
        cfg = [(0, 0, 0)] + [(lo, hi, d - 1) for (lo, hi), d in zip(pads, lhs_dil)] + [(0, 0, 0)]
        x = ops.pad(x, np.zeros((), dt)[()], cfg)
    xp_sp = get_aval(x).shape[1:-1]
    m_sp = math.prod(out_sp)
    cg = c // fg

    def tap_slice(t):
        start = [0] + [k * r for k, r in zip(t, rhs_dil)] + [0]
        limit = [n] + [b + (m - 1) * s + 1 for b, m, s in zip(start[1:], out_sp, strides)] + [c]
        if not any(start) and limit == [n, *xp_sp, c] and all(s == 1 for s in strides):
            return x
        return ops.slice(x, start, limit, [1, *strides, 1])

    # a single input channel to several outputs (a CNN's first layer on grey images): the taps
    # are the product's K, so one gather of the windows and ONE product (below). As multiply-adds
    # (the depthwise form) the products fused into their reader, e.g. a max-pool, whose rows then
    # ran as scalar loops: the CNN step of benchmarks/workloads.py took 42 -> 37 CPU ms with it.
    one_channel = c == 1 and fg == 1 and bg == 1 and o >= _ONE_CHANNEL_OUTPUTS
    if cg == 1 and bg == 1 and nt <= _SLICE_TAPS and out_dt != dtypes.bool_ and not one_channel:
        # depthwise: out[..., g*m + j] = sum_t x_t[..., g] * w[t, 0, g*m + j]
        mult = o // fg
        wt = ops.reshape(w, (nt, fg, mult))
        if pet is not None:
            wt = ops.convert_element_type(wt, pet)
        acc = None
        for ti, t in enumerate(taps):
            xt = tap_slice(t)
            if pet is not None:
                xt = ops.convert_element_type(xt, pet)
            wk = ops.reshape(ops.slice(wt, (ti, 0, 0), (ti + 1, fg, mult)), (fg, mult))
            if mult == 1:
                term = ops.mul(
                    xt, ops.broadcast_in_dim(ops.reshape(wk, (fg,)), (n, *out_sp, fg), (nsp + 1,))
                )
            else:
                shape = (n, *out_sp, fg, mult)
                term = ops.mul(
                    ops.broadcast_in_dim(xt, shape, tuple(range(nsp + 2))),
                    ops.broadcast_in_dim(wk, shape, (nsp + 1, nsp + 2)),
                )
            acc = term if acc is None else ops.add(acc, term)
        return ops.reshape(acc, out_shape)

    kw = {"precision": precision, "preferred_element_type": pet}
    og, ob = o // fg, o // bg

    def dot(cols, wk, k):
        """The product of windows ``cols`` (N, out spatial..., k * C) with kernel rows ``wk``
        (k, I, O), groups as the dot's batch dimension: (M, O), (G, M, O/G) or (B, M/B, O/B)."""
        if fg == 1 and bg == 1:
            lhs = ops.reshape(cols, (n * m_sp, k * c))
            return ops.dot_general(lhs, ops.reshape(wk, (k * c, o)), (((1,), (0,)), ((), ())), **kw)
        if fg > 1:
            lhs = ops.reshape(cols, (n * m_sp, k, fg, cg))
            wg = ops.reshape(wk, (k, cg, fg, og))
            return ops.dot_general(lhs, wg, (((1, 3), (0, 1)), ((2,), (2,))), **kw)
        lhs = ops.reshape(cols, (bg, n_out * m_sp, k * c))
        wg = ops.reshape(wk, (k * c, bg, ob))
        return ops.dot_general(lhs, wg, (((2,), (0,)), ((0,), (1,))), **kw)

    wt = ops.reshape(w, (nt, cg, o))
    plus = ops.bitwise_or if out_dt == dtypes.bool_ else ops.add  # bool: or of ands
    if nt <= _SLICE_TAPS and not one_channel:
        # one product per tap, summed: BLAS-sized products on strided copies of the input (an
        # im2col concatenation renders as a chain of selects per element, several times slower)
        y = None
        for ti, t in enumerate(taps):
            wk = ops.slice(wt, (ti, 0, 0), (ti + 1, cg, o)) if nt > 1 else wt
            term = dot(tap_slice(t), wk, 1)
            y = term if y is None else plus(y, term)
    else:
        y = dot(_gather_cols(x, taps, rhs_dil, strides, out_sp), wt, nt)
    if fg > 1 or bg > 1:
        y = ops.transpose(y, (1, 0, 2))
    return ops.reshape(y, out_shape)


def _gather_cols(x, taps, rhs_dil, strides, out_sp):
    """The im2col matrix ``(N, out spatial..., taps * C)`` of the padded channels-last ``x`` by
    one gather of flat spatial indices (for kernels with many taps)."""
    xa = get_aval(x)
    n, c, sp = xa.shape[0], xa.shape[-1], xa.shape[1:-1]
    flat_stride = np.cumprod((1, *sp[::-1][:-1]))[::-1].astype(np.int64)
    grids = np.meshgrid(*(np.arange(m) for m in out_sp), indexing="ij")
    base = sum(g.astype(np.int64) * s * fs for g, s, fs in zip(grids, strides, flat_stride))
    tap_off = np.array(
        [sum(k * r * fs for k, r, fs in zip(t, rhs_dil, flat_stride)) for t in taps], np.int64
    )
    idx = (base.reshape(-1, 1) + tap_off.reshape(1, -1)).astype(np.int32)[..., None]
    flat = ops.reshape(x, (n, math.prod(sp), c))
    g = P.gather_p.bind(flat, idx, axes=(1,), mode="clip")  # (M, T, N, C)
    g = ops.transpose(g, (2, 0, 1, 3))
    return ops.reshape(g, (n, *out_sp, len(taps) * c))


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
    """A convolution in the ``NCHW``/``OIHW`` layout without dilation or groups, like
    ``jax.lax.conv``.

    Arguments:
      lhs: the input ``(N, C, spatial...)``.
      rhs: the kernel ``(O, I, spatial...)``.
      window_strides: one stride per spatial dimension.
      padding: 'SAME', 'SAME_LOWER', 'VALID' or ``(low, high)`` pairs.
      precision: as ``conv_general_dilated``.
      preferred_element_type: as ``conv_general_dilated``.

    Returns:
      The convolution ``(N, O, out spatial...)``.

    Differences from JAX: a composite: ``make_jaxpr`` shows a ``pad``, strided ``slice``s and one
    ``dot_general`` per kernel tap (a ``gather`` beyond 64 taps) where JAX shows one
    ``conv_general_dilated``; values agree to rounding.

    Example:
      >>> import functx as fx
      >>> x = fx.numpy.ones((1, 1, 3, 3))
      >>> fx.lax.conv(x, fx.numpy.ones((1, 1, 2, 2)), (1, 1), "VALID")
      Array([[[[4., 4.],
               [4., 4.]]]], dtype=float32)
    """
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def conv_with_general_padding(
    lhs,
    rhs,
    window_strides,
    padding,
    lhs_dilation,
    rhs_dilation,
    precision=None,
    preferred_element_type=None,
):
    """A convolution in the ``NCHW``/``OIHW`` layout with dilations, like
    ``jax.lax.conv_with_general_padding``.

    Arguments:
      lhs: the input ``(N, C, spatial...)``.
      rhs: the kernel ``(O, I, spatial...)``.
      window_strides: one stride per spatial dimension.
      padding: 'SAME', 'SAME_LOWER', 'VALID' or ``(low, high)`` pairs.
      lhs_dilation: input dilations, or None.
      rhs_dilation: kernel dilations, or None.
      precision: as ``conv_general_dilated``.
      preferred_element_type: as ``conv_general_dilated``.

    Returns:
      The convolution ``(N, O, out spatial...)``.

    Differences from JAX: a composite: ``make_jaxpr`` shows a ``pad``, strided ``slice``s and one
    ``dot_general`` per kernel tap (a ``gather`` beyond 64 taps) where JAX shows one
    ``conv_general_dilated``; values agree to rounding.

    Example:
      >>> import functx as fx
      >>> x = fx.numpy.arange(3.0).reshape(1, 1, 3)
      >>> fx.lax.conv_with_general_padding(x, fx.numpy.ones((1, 1, 1)), (1,), [(0, 0)], (2,), None)
      Array([[[0., 0., 1., 0., 2.]]], dtype=float32)
    """
    return conv_general_dilated(
        lhs,
        rhs,
        window_strides,
        padding,
        lhs_dilation=lhs_dilation,
        rhs_dilation=rhs_dilation,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def _transpose_pads(k, s, padding):
    """The (before, after) padding of one dimension of a transposed convolution whose forward
    convolution had kernel size ``k``, stride ``s`` and ``padding``."""
    if padding == "SAME":
        total = k + s - 2
        before = k - 1 if s > k - 1 else -(-total // 2)
    elif padding == "VALID":
        total = k + s - 2 + max(k - s, 0)
        before = k - 1
    elif isinstance(padding, tuple):
        before, after = (k - p - 1 for p in padding)
        total = before + after
    else:
        raise FunctxValueError(f"Invalid padding mode: {padding}")
    return before, total - before


def conv_transpose(
    lhs,
    rhs,
    strides,
    padding,
    rhs_dilation=None,
    dimension_numbers=None,
    transpose_kernel=False,
    precision=None,
    preferred_element_type=None,
    use_consistent_padding=False,
):
    """A transposed ("fractionally strided") convolution, like ``jax.lax.conv_transpose``: the
    input is dilated by ``strides`` and convolved with stride 1.

    Arguments:
      lhs: the input, of rank ``n + 2``.
      rhs: the kernel, of rank ``n + 2``.
      strides: ``n`` strides (the input dilation).
      padding: 'SAME' or 'VALID' (the forward convolution's padding), or ``(low, high)``
        pairs: the transposed convolution's own padding, or with ``use_consistent_padding``
        the forward convolution's.
      rhs_dilation: ``n`` kernel dilations, or None.
      dimension_numbers: as ``conv_general_dilated``; None means ``NHWC``/``HWIO``/``NHWC``
        (``NC``/``IO``/``NC``, ``NHC``/``HIO``/``NHC``, ... by rank).
      transpose_kernel: flip the kernel's spatial axes and swap its feature axes (the gradient
        of a forward convolution with this kernel, as Keras' ``Conv2DTranspose``).
      precision: as ``conv_general_dilated``.
      preferred_element_type: as ``conv_general_dilated``.
      use_consistent_padding: read padding pairs as the forward convolution's padding.

    Returns:
      The transposed convolution.

    Differences from JAX: a composite: ``make_jaxpr`` shows a ``pad``, strided ``slice``s and one
    ``dot_general`` per kernel tap (a ``gather`` beyond 64 taps) where JAX shows one
    ``conv_general_dilated``; values agree to rounding.

    Example:
      >>> import functx as fx
      >>> x = fx.numpy.ones((1, 2, 1))
      >>> fx.lax.conv_transpose(x, fx.numpy.ones((2, 1, 1)), (2,), "VALID")[0, :, 0]
      Array([1., 1., 1., 1.], dtype=float32)
    """
    lhs, rhs = _as_array(lhs), _as_array(rhs)
    la, ra = get_aval(lhs), get_aval(rhs)
    if la.ndim != ra.ndim or la.ndim < 2:
        raise FunctxValueError(
            f"conv_transpose: lhs and rhs need the same rank >= 2, got {la.shape} and "
            f"{ra.shape}{_loc()}"
        )
    nd = la.ndim
    if dimension_numbers is None:
        defaults = {
            2: ("NC", "IO", "NC"),
            3: ("NHC", "HIO", "NHC"),
            4: ("NHWC", "HWIO", "NHWC"),
            5: ("NHWDC", "HWDIO", "NHWDC"),
        }
        if nd not in defaults:
            raise FunctxValueError("No 4+ dimensional dimension_number defaults.")
        dimension_numbers = defaults[nd]
    dn = conv_dimension_numbers(la.shape, ra.shape, dimension_numbers)
    k_sp = [ra.shape[d] for d in dn.rhs_spec[2:]]
    rhs_dil = (1,) * (nd - 2) if rhs_dilation is None else tuple(rhs_dilation)
    if use_consistent_padding or (isinstance(padding, str) and padding in ("SAME", "VALID")):
        each = [padding] * len(strides) if isinstance(padding, str) else padding
        pads = [
            _transpose_pads(_dilate(k, r), s, tuple(p) if isinstance(p, list) else p)
            for k, r, s, p in zip(k_sp, rhs_dil, strides, each)
        ]
    else:
        pads = padding
    if transpose_kernel:
        rhs = ops.rev(rhs, tuple(dn.rhs_spec[2:]))
        perm = list(range(nd))
        perm[dn.rhs_spec[0]], perm[dn.rhs_spec[1]] = dn.rhs_spec[1], dn.rhs_spec[0]
        rhs = ops.transpose(rhs, tuple(perm))
    return conv_general_dilated(
        lhs,
        rhs,
        (1,) * (nd - 2),
        pads,
        strides,
        rhs_dil,
        dn,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def conv_general_dilated_patches(
    lhs,
    filter_shape,
    window_strides,
    padding,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    precision=None,
    preferred_element_type=None,
):
    """The patches a convolution with a kernel of spatial shape ``filter_shape`` would see,
    like ``jax.lax.conv_general_dilated_patches``: the output's feature dimension holds, for
    each input feature ``c`` and each kernel tap ``t`` (row-major), the input value at feature
    index ``c * prod(filter_shape) + t``.

    Arguments:
      lhs: the input, of rank ``n + 2``.
      filter_shape: the ``n`` spatial sizes of the window.
      window_strides: ``n`` strides.
      padding: 'SAME', 'SAME_LOWER', 'VALID' or ``(low, high)`` pairs.
      lhs_dilation: input dilations, or None.
      rhs_dilation: window dilations, or None.
      dimension_numbers: as ``conv_general_dilated`` (the kernel's layout only places the
        spatial dimensions); None means ``NCHW``.
      precision: accepted, as ``conv_general_dilated`` (the patches are copies).
      preferred_element_type: the result dtype, or None.

    Returns:
      The patches, in the output layout, with ``C * prod(filter_shape)`` features.

    Example:
      >>> import functx as fx
      >>> x = fx.numpy.arange(4.0).reshape(1, 1, 4)
      >>> fx.lax.conv_general_dilated_patches(x, (2,), (1,), "VALID")
      Array([[[0., 1., 2.],
              [1., 2., 3.]]], dtype=float32)
    """
    lhs = _as_array(lhs)
    la = get_aval(lhs)
    filter_shape = tuple(filter_shape)
    nsp = la.ndim - 2
    if len(filter_shape) != nsp:
        raise FunctxValueError(
            f"conv_general_dilated_patches: filter_shape needs {nsp} sizes, got "
            f"{filter_shape}{_loc()}"
        )
    if dimension_numbers is None:
        dimension_numbers = ConvDimensionNumbers(*(tuple(range(la.ndim)),) * 3)
    rhs_shape = [0] * la.ndim
    dn0 = conv_dimension_numbers(la.shape, tuple(rhs_shape), dimension_numbers)
    c = la.shape[dn0.lhs_spec[1]]
    nt = math.prod(filter_shape)
    for d, k in zip(dn0.rhs_spec[2:], filter_shape):
        rhs_shape[d] = k
    rhs_shape[dn0.rhs_spec[0]] = c * nt
    rhs_shape[dn0.rhs_spec[1]] = 1
    # a one-hot kernel: output feature c * nt + t copies input feature c at tap t
    eye = np.eye(nt, dtype=la.dtype).reshape((nt, *filter_shape))
    canon = np.broadcast_to(eye[None], (c, nt, *filter_shape)).reshape((c * nt, 1, *filter_shape))
    kernel = np.empty(rhs_shape, la.dtype)
    kernel[...] = np.transpose(canon, np.argsort(dn0.rhs_spec))
    return conv_general_dilated(
        lhs,
        kernel,
        window_strides,
        padding,
        lhs_dilation,
        rhs_dilation,
        dn0,
        feature_group_count=c,
        precision=precision,
        preferred_element_type=preferred_element_type,
    )


def conv_general_dilated_local(
    lhs,
    rhs,
    window_strides,
    padding,
    filter_shape,
    lhs_dilation=None,
    rhs_dilation=None,
    dimension_numbers=None,
    precision=None,
):
    """A locally connected ("unshared") convolution, like ``jax.lax.conv_general_dilated_local``:
    each output position has its own kernel. The patches of ``conv_general_dilated_patches``
    times the kernel of their position, summed over features and window taps.

    Arguments:
      lhs: the input, of rank ``n + 2``.
      rhs: the kernels, in the kernel layout of ``dimension_numbers``: output features, input
        features ``C * prod(filter_shape)`` (feature-major, then taps), and the OUTPUT's spatial
        sizes.
      window_strides: ``n`` strides.
      padding: 'SAME', 'SAME_LOWER', 'VALID' or ``(low, high)`` pairs.
      filter_shape: the ``n`` spatial sizes of the window.
      lhs_dilation: input dilations, or None.
      rhs_dilation: window dilations, or None.
      dimension_numbers: as ``conv_general_dilated``.
      precision: as ``dot_general``.

    Returns:
      The convolution, in the output layout.

    Example:
      >>> import functx as fx
      >>> x = fx.numpy.arange(4.0).reshape(1, 1, 4)
      >>> k = fx.numpy.array([[[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]]])  # (O, C * 2 taps, 3 outputs)
      >>> fx.lax.conv_general_dilated_local(x, k, (1,), "VALID", (2,))
      Array([[[0., 2., 5.]]], dtype=float32)
    """
    lhs, rhs = _as_array(lhs), _as_array(rhs)
    filter_shape = tuple(filter_shape)
    patches = conv_general_dilated_patches(
        lhs, filter_shape, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers
    )
    _, rhs_spec, out_spec = conv_dimension_numbers(
        get_aval(lhs).shape, (1, 1, *filter_shape), dimension_numbers
    )
    nsp = len(filter_shape)
    dn = (((out_spec[1],), (rhs_spec[1],)), (tuple(out_spec[2:]), tuple(rhs_spec[2:])))
    y = ops.dot_general(patches, rhs, dn, precision=precision)  # (spatial..., N, O)
    perm = [0] * (nsp + 2)
    perm[out_spec[0]], perm[out_spec[1]] = nsp, nsp + 1
    for i in range(nsp):
        perm[out_spec[2 + i]] = i
    return ops.transpose(y, tuple(perm))


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
    """The output shape of a convolution in the canonical ``(N, C, spatial...)`` /
    ``(O, I, spatial...)`` layout, like ``jax.lax.conv_shape_tuple``.

    Arguments:
      lhs_shape: the input's shape.
      rhs_shape: the kernel's shape.
      strides: one stride per spatial dimension.
      pads: a padding string or ``(low, high)`` pairs.
      batch_group_count: the number of batch groups.

    Returns:
      A tuple of ints.

    Example:
      >>> import functx as fx
      >>> fx.lax.conv_shape_tuple((2, 3, 9, 9), (8, 3, 3, 3), (2, 2), "SAME")
      (2, 8, 5, 5)
    """
    lhs_shape, rhs_shape = tuple(lhs_shape), tuple(rhs_shape)
    if isinstance(pads, str):
        pads = _string_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
    if len(pads) != len(lhs_shape) - 2:
        raise FunctxTypeError(
            f"Wrong number of explicit pads for convolution: expected {len(lhs_shape) - 2}, "
            f"got {len(pads)}."
        )
    padded = [d + lo + hi for d, (lo, hi) in zip(lhs_shape[2:], pads)]
    if any(p < 0 for p in padded):
        raise FunctxValueError(
            f"Negative padding is larger than the size of the corresponding dimension: got "
            f"padding={pads} for lhs_shape[2:]={lhs_shape[2:]}"
        )
    out_sp = tuple(
        max(0, (p - k) // s + 1) if p >= k else 0 for p, k, s in zip(padded, rhs_shape[2:], strides)
    )
    n = lhs_shape[0] // batch_group_count if batch_group_count > 1 else lhs_shape[0]
    return (n, rhs_shape[0], *out_sp)


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of a convolution in the layout ``dimension_numbers`` names, like
    ``jax.lax.conv_general_shape_tuple``.

    Arguments:
      lhs_shape: the input's shape.
      rhs_shape: the kernel's shape.
      window_strides: one stride per spatial dimension.
      padding: a padding string or ``(low, high)`` pairs.
      dimension_numbers: three layout strings (as ``conv_general_dilated``).

    Returns:
      A tuple of ints, in the output layout.

    Example:
      >>> import functx as fx
      >>> fx.lax.conv_general_shape_tuple(
      ...     (2, 9, 9, 3), (3, 3, 3, 8), (2, 2), "SAME", ("NHWC", "HWIO", "NHWC"))
      (2, 5, 5, 8)
    """
    lp, rp, op = conv_general_permutations(dimension_numbers)
    lhs_c = tuple(lhs_shape[i] for i in lp)
    rhs_c = tuple(rhs_shape[i] for i in rp)
    out_c = conv_shape_tuple(lhs_c, rhs_c, window_strides, padding)
    return tuple(out_c[j] for j in np.argsort(op))


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
    """The output shape of ``conv_transpose`` in the layout ``dimension_numbers`` names, like
    ``jax.lax.conv_transpose_shape_tuple``.

    Arguments:
      lhs_shape: the input's shape.
      rhs_shape: the kernel's shape.
      window_strides: one stride (input dilation) per spatial dimension.
      padding: 'SAME', 'VALID' or ``(low, high)`` pairs of the transposed convolution.
      dimension_numbers: three layout strings (as ``conv_general_dilated``).

    Returns:
      A tuple of ints, in the output layout.

    Example:
      >>> import functx as fx
      >>> fx.lax.conv_transpose_shape_tuple(
      ...     (1, 4, 4, 2), (3, 3, 2, 5), (2, 2), "SAME", ("NHWC", "HWIO", "NHWC"))
      (1, 8, 8, 5)
    """
    lp, rp, op = conv_general_permutations(dimension_numbers)
    lhs_c = [lhs_shape[i] for i in lp]
    rhs_c = [rhs_shape[i] for i in rp]
    if isinstance(padding, str):
        padding = [_transpose_pads(k, s, padding) for k, s in zip(rhs_c[2:], window_strides)]
    sp = [
        (i - 1) * s - k + 2 + lo + hi
        for i, k, s, (lo, hi) in zip(lhs_c[2:], rhs_c[2:], window_strides, padding)
    ]
    out_c = (lhs_c[0], rhs_c[0], *sp)
    return tuple(out_c[j] for j in np.argsort(op))


__all__ = [
    "ConvDimensionNumbers",
    "conv",
    "conv_dimension_numbers",
    "conv_general_dilated",
    "conv_general_dilated_local",
    "conv_general_dilated_patches",
    "conv_general_permutations",
    "conv_general_shape_tuple",
    "conv_shape_tuple",
    "conv_transpose",
    "conv_transpose_shape_tuple",
    "conv_with_general_padding",
]
