"""The rest of ``jax.numpy``'s smaller names, as composites of ``functx.numpy``'s functions: set
operations (``isin``, ``intersect1d``, ``union1d``, ``setdiff1d``, ``setxor1d``, with ``size=``
and ``fill_value=`` for use under transformations), polynomials (``polyval``, ``polyadd``,
``polysub``, ``polymul``, ``polyder``, ``polyint``, ``polydiv``, ``polyfit``, ``poly``,
``roots``),
``gradient``, ``unwrap``, ``vectorize``, ``apply_along_axis``, ``apply_over_axes``, ``block``,
the index tricks (``r_``, ``c_``, ``s_``, ``index_exp``, ``mgrid``, ``ogrid``, ``ix_``),
selection (``choose``, ``compress``, ``extract``, ``place``, ``put``, ``fill_diagonal``),
``copy``, ``modf``, ``spacing``, ``i0``, the windows (``bartlett``, ``blackman``, ``hamming``,
``hanning``, ``kaiser``), ``packbits``/``unpackbits``, ``resize``, ``trim_zeros``, ``matvec``,
``vecmat``, ``einsum_path``, ``fromfunction``, ``frombuffer``/``fromstring``, ``bitwise_count``,
the print options and the remaining dtype names.

Deviations from JAX: ``isin`` compares every element with every test element (JAX's
``method="compare_all"``; the other methods give the same values)."""

from __future__ import annotations

import builtins
import math
import operator
import re

import ml_dtypes
import numpy as np

from functx import dtypes, lax
from functx.errors import (
    ConcretizationTypeError,
    FunctxTypeError,
    FunctxValueError,
)
from functx.numpy import (
    _complex as cplx,
    _core as jnp,
    _more as more,
    _sort as srt,
    linalg as _linalg,
)
from functx.source_info import where as _loc
from functx.tracing import Tracer
from functx.transforms.vmap import vmap

# --- helpers --------------------------------------------------------------------------------------


def _arr(x):
    return x if jnp._is_array(x) else jnp.asarray(x)


def _shape_of(x):
    return jnp._aval(x).shape


def _ndim(x):
    return jnp._aval(x).ndim


def _dtype(x):
    return jnp._aval(x).dtype


def _static_int(v, what):
    if isinstance(v, Tracer):
        raise ConcretizationTypeError(
            f"Abstract tracer value encountered where concrete value is expected: {what}{_loc()}"
        )
    try:
        return operator.index(v)
    except TypeError:
        raise FunctxTypeError(f"{what} must be an int, got {v!r:.60}{_loc()}") from None


def _concrete(x, name):
    if isinstance(x, Tracer):
        raise ConcretizationTypeError(
            f"Abstract tracer value encountered where concrete value is expected: the size "
            f"argument of jnp.{name} must be statically specified to use jnp.{name} within "
            f"JAX transformations.{_loc()}"
        )
    return x


def _promote_inexact(*xs):
    return jnp._promote_only(*[_arr(x) for x in xs], kind="inexact")


def _promote(*xs):
    return jnp._promote_only(*[_arr(x) for x in xs])


def _fill(fill_value, dt):
    return jnp.astype(_arr(fill_value), dt)


# --- set operations -------------------------------------------------------------------------------


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
    """Whether each element of ``element`` is in ``test_elements`` (every element compared with
    every test element).

    Arguments:
      element: an array.
      test_elements: the values to look for (any shape; flattened).
      assume_unique: accepted for NumPy's signature; the result does not depend on it.
      invert: return the negation (``not in``).
      method: ``"auto"``, ``"compare_all"``, ``"binary_search"`` or ``"sort"`` (all give the
        same values here).
    Returns:
      A bool array of ``element``'s shape.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.isin(jnp.array([1, 2, 3, 4]), jnp.array([2, 4, 6])))
      [False  True False  True]
    """
    if method not in ("auto", "compare_all", "binary_search", "sort"):
        raise FunctxValueError(f"jnp.isin: unrecognized method={method!r}{_loc()}")
    e, t = _arr(element), jnp.ravel(_arr(test_elements))
    if _shape_of(t)[0] == 0:
        out = jnp.zeros(_shape_of(e), dtypes.bool_)
    else:
        out = jnp.any(jnp.expand_dims(e, -1) == t, axis=-1)
    return jnp.logical_not(out) if invert else out


def _sorted_first(a, assume_unique):
    """``a`` (1-D) sorted, and which of its elements are the first of their value."""
    s = srt.sort(a)
    n = _shape_of(s)[0]
    if assume_unique or n == 0:
        return s, jnp.ones((n,), dtypes.bool_)
    first = jnp.concatenate([jnp.ones((1,), dtypes.bool_), s[1:] != s[:-1]])
    return s, first


def _compact(vals, keep, size, fill_value, name, default_fill="min"):
    """The elements of the sorted 1-D ``vals`` where ``keep``, in order: all of them (concrete
    ``keep`` only) or the first ``size``, the rest filled with ``fill_value`` (by default the
    smallest kept value, or 0 when none is kept)."""
    if size is None:
        keep = _concrete(keep, name)
        return vals[np.asarray(keep)]
    size = _static_int(size, f"the size argument of jnp.{name}")
    dt = _dtype(vals)
    idx, valid, _ = srt._flat_positions(keep, size, name)
    n = _shape_of(vals)[0]
    got = vals[jnp.clip(idx, 0, max(n - 1, 0))] if n else jnp.zeros((size,), dt)
    if fill_value is not None:
        fill = _fill(fill_value, dt)
    elif default_fill == "zero" or n == 0:
        fill = jnp.zeros((), dt)
    else:
        first = got[0] if size else jnp.zeros((), dt)
        fill = jnp.where(jnp.any(keep), first, jnp.zeros((), dt))
    return jnp.where(valid, got, fill)


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """The sorted unique values found in either array.

    Arguments:
      ar1, ar2: arrays (flattened).
      size: the static length of the result (needed under ``jit``/``vmap``): the first ``size``
        values, padded with ``fill_value``.
      fill_value: the padding (default: the smallest value).
    Returns:
      A 1-D array of the promoted dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.union1d(jnp.array([3, 1, 2]), jnp.array([2, 5])))
      [1 2 3 5]
    """
    a1, a2 = _arr(ar1), _arr(ar2)
    if size is None:
        _concrete(a1, "union1d")
        _concrete(a2, "union1d")
    return srt.unique(
        jnp.concatenate([jnp.ravel(a1), jnp.ravel(a2)]), size=size, fill_value=fill_value
    )


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None, fill_value=None):
    """The sorted unique values found in both arrays.

    Arguments:
      ar1, ar2: arrays (flattened).
      assume_unique: whether both arrays are known to hold unique values.
      return_indices: also return the index of each value's first occurrence in each array.
      size: the static length of the result (needed under ``jit``/``vmap``), padded with
        ``fill_value``; the padded indices are the arrays' lengths (out of bounds).
      fill_value: the padding (default: the smallest value of the intersection).
    Returns:
      The 1-D intersection, or ``(intersection, ar1_indices, ar2_indices)``.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.intersect1d(jnp.array([1, 2, 3, 4]), jnp.array([6, 4, 3, 4])))
      [3 4]
    """
    a1, a2 = _promote(jnp.ravel(_arr(ar1)), jnp.ravel(_arr(ar2)))
    if size is None:
        _concrete(a1, "intersect1d")
        _concrete(a2, "intersect1d")
    s1, first1 = _sorted_first(a1, assume_unique)
    keep = jnp.logical_and(first1, isin(s1, a2))
    vals = _compact(s1, keep, size, fill_value, "intersect1d")
    if not return_indices:
        return vals
    idt = dtypes.default_int()
    out = [vals]
    n_out = _shape_of(vals)[0]
    count = jnp.sum(keep, dtype=idt)
    for a in (a1, a2):
        n = _shape_of(a)[0]
        if n == 0 or n_out == 0:
            out.append(jnp.full((n_out,), n, idt))
            continue
        i = jnp.argmax(jnp.expand_dims(vals, 1) == a, axis=1).astype(idt)
        out.append(jnp.where(jnp.arange(n_out, dtype=idt) < count, i, n))
    return tuple(out)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted unique values of ``ar1`` that are not in ``ar2``.

    Arguments:
      ar1, ar2: arrays (flattened).
      assume_unique: whether ``ar1`` is known to hold unique values.
      size: the static length of the result (needed under ``jit``/``vmap``), padded with
        ``fill_value``.
      fill_value: the padding (default 0).
    Returns:
      A 1-D array of ``ar1``'s dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.setdiff1d(jnp.array([5, 1, 2, 3, 1]), jnp.array([3, 4])))
      [1 2 5]
    """
    a1, a2 = jnp.ravel(_arr(ar1)), jnp.ravel(_arr(ar2))
    if size is None:
        _concrete(a1, "setdiff1d")
    s1, first1 = _sorted_first(a1, assume_unique)
    keep = jnp.logical_and(first1, isin(s1, a2, invert=True))
    return _compact(s1, keep, size, fill_value, "setdiff1d", default_fill="zero")


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """The sorted unique values found in exactly one of the arrays.

    Arguments:
      ar1, ar2: arrays (flattened).
      assume_unique: whether both arrays are known to hold unique values.
      size: the static length of the result (needed under ``jit``/``vmap``), padded with
        ``fill_value``.
      fill_value: the padding (default: the smallest value of the result).
    Returns:
      A 1-D array of the promoted dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.setxor1d(jnp.array([1, 2, 3, 4]), jnp.array([3, 4, 5, 6])))
      [1 2 5 6]
    """
    a1, a2 = _promote(jnp.ravel(_arr(ar1)), jnp.ravel(_arr(ar2)))
    if size is None:
        _concrete(a1, "setxor1d")
        _concrete(a2, "setxor1d")
    s1, f1 = _sorted_first(a1, assume_unique)
    s2, f2 = _sorted_first(a2, assume_unique)
    k1 = jnp.logical_and(f1, isin(s1, a2, invert=True))
    k2 = jnp.logical_and(f2, isin(s2, a1, invert=True))
    both = jnp.concatenate([s1, s2])
    keep = jnp.concatenate([k1, k2])
    if _shape_of(both)[0]:
        both, keep = lax.sort((both, keep), num_keys=1)
    return _compact(both, keep, size, fill_value, "setxor1d")


# --- polynomials ----------------------------------------------------------------------------------


def _vec(p, name):
    p = _arr(p)
    if _ndim(p) != 1:
        raise FunctxValueError(
            f"jnp.{name}: expected a 1-D coefficient array, got shape {_shape_of(p)}{_loc()}"
        )
    return p


def polyval(p, x, *, unroll=16):
    """The polynomial with coefficients ``p`` (highest power first) at ``x`` (Horner's rule).

    Arguments:
      p: a 1-D array of coefficients.
      x: an array of points.
      unroll: accepted for JAX's signature (the loop is unrolled here).
    Returns:
      An array of ``x``'s shape, of the promoted inexact dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.polyval(jnp.array([3.0, 0.0, 1.0]), jnp.array([0.0, 1.0, 2.0])))
      [ 1.  4. 13.]
    """
    p, x = _promote(p, x)
    if _ndim(p) == 0:
        raise FunctxValueError(f"jnp.polyval: p must have at least 1 dimension{_loc()}")
    y = jnp.zeros(jnp.broadcast_shapes(_shape_of(p)[1:], _shape_of(x)), _dtype(x))
    for i in range(_shape_of(p)[0]):
        y = y * x + p[i]
    return y


def _add_aligned(a1, a2, sign):
    n1, n2 = _shape_of(a1)[0], _shape_of(a2)[0]
    if n1 >= n2:
        return a1.at[n1 - n2 :].add(sign * a2) if n2 else a1
    out = sign * a2
    return out.at[n2 - n1 :].add(a1) if n1 else out


def polyadd(a1, a2):
    """The sum of two polynomials (coefficients highest power first, aligned at the end).

    Arguments:
      a1, a2: 1-D arrays of coefficients.
    Returns:
      A 1-D array as long as the longer one, of the promoted dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.polyadd(jnp.array([1, 2]), jnp.array([1, 0, 0])))
      [1 1 2]
    """
    a1, a2 = _promote(a1, a2)
    return _add_aligned(_vec(a1, "polyadd"), _vec(a2, "polyadd"), 1)


def polysub(a1, a2):
    """The difference of two polynomials (coefficients highest power first).

    Arguments:
      a1, a2: 1-D arrays of coefficients.
    Returns:
      ``a1 - a2``, a 1-D array as long as the longer one, of the promoted dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.polysub(jnp.array([1, 2]), jnp.array([1, 0, 0])))
      [-1  1  2]
    """
    a1, a2 = _promote(a1, a2)
    return _add_aligned(_vec(a1, "polysub"), _vec(a2, "polysub"), -1)


def _convolve_full(a, b):
    """The full discrete convolution of two 1-D arrays of one dtype (a Toeplitz product)."""
    n, m = _shape_of(a)[0], _shape_of(b)[0]
    k = np.arange(n + m - 1)[:, None] - np.arange(n)[None, :]
    valid = (k >= 0) & (k < m)
    toeplitz = jnp.where(valid, b[np.clip(k, 0, m - 1)], jnp.zeros((), _dtype(b)))
    return jnp.sum(toeplitz * a, axis=1)


def _trim_leading(a, name):
    a = _concrete(a, name)
    nz = np.flatnonzero(np.asarray(a) != 0)
    return a[int(nz[0]) :] if nz.size else a[:0]


def polymul(a1, a2, *, trim_leading_zeros=False):
    """The product of two polynomials (coefficients highest power first).

    Arguments:
      a1, a2: 1-D arrays (or scalars) of coefficients.
      trim_leading_zeros: drop leading zeros first (concrete inputs only).
    Returns:
      A 1-D array of length ``len(a1) + len(a2) - 1``, of the promoted inexact dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.polymul(jnp.array([1.0, 1.0]), jnp.array([1.0, -1.0])))
      [ 1.  0. -1.]
    """
    a1, a2 = _promote_inexact(jnp.atleast_1d(_arr(a1)), jnp.atleast_1d(_arr(a2)))
    a1, a2 = _vec(a1, "polymul"), _vec(a2, "polymul")
    if trim_leading_zeros:
        a1, a2 = _trim_leading(a1, "polymul"), _trim_leading(a2, "polymul")
    if _shape_of(a1)[0] == 0:
        a1 = jnp.zeros((1,), _dtype(a1))
    if _shape_of(a2)[0] == 0:
        a2 = jnp.zeros((1,), _dtype(a2))
    return _convolve_full(a1, a2)


def polyder(p, m=1):
    """The ``m``-th derivative of a polynomial (coefficients highest power first).

    Arguments:
      p: a 1-D array of coefficients.
      m: the order of the derivative (a non-negative int).
    Returns:
      A 1-D array of length ``len(p) - m``, of ``p``'s inexact dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.polyder(jnp.array([1.0, 2.0, 3.0, 4.0])))
      [3. 4. 3.]
    """
    (p,) = _promote_inexact(p)
    p = _vec(p, "polyder")
    m = _static_int(m, "the order m of jnp.polyder")
    if m < 0:
        raise FunctxValueError(f"Order of derivative must be positive{_loc()}")
    if m == 0:
        return p
    n = _shape_of(p)[0]
    c = np.ones(max(n - m, 0))
    for j in range(m):
        c = c * (np.arange(m, n)[::-1] - j)
    return p[: n - m] * jnp.asarray(c.astype(_dtype(p)))


def polyint(p, m=1, k=None):
    """The ``m``-th antiderivative of a polynomial, with integration constants ``k``.

    Arguments:
      p: a 1-D array of coefficients (highest power first).
      m: the order of the antiderivative (a non-negative int).
      k: the constants (a scalar, or ``m`` of them, the first for the outermost integral;
        default zeros).
    Returns:
      A 1-D array of length ``len(p) + m``, of the promoted inexact dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.polyint(jnp.array([3.0, 2.0, 1.0]), k=5.0))
      [1. 1. 1. 5.]
    """
    m = _static_int(m, "the order m of jnp.polyint")
    if m < 0:
        raise FunctxValueError(f"Order of integral must be positive (see polyder){_loc()}")
    k = 0 if k is None else k
    p, k = _promote_inexact(p, k)
    p = _vec(p, "polyint")
    k = jnp.atleast_1d(k)
    if _shape_of(k)[0] == 1:
        k = jnp.broadcast_to(k, (m,))
    if _shape_of(k) != (m,):
        raise FunctxValueError(f"k must be a scalar or a rank-1 array of length 1 or m.{_loc()}")
    if m == 0:
        return p
    n = _shape_of(p)[0]
    grid = np.arange(n + m)[None, :] - np.arange(m)[:, None]
    coeff = np.maximum(1, grid).prod(0)[::-1]
    return jnp.concatenate([p, k]) / jnp.asarray(coeff.astype(_dtype(p)))


def polydiv(u, v, *, trim_leading_zeros=False):
    """The quotient and remainder of polynomial division ``u / v``.

    Arguments:
      u: the dividend's coefficients (highest power first).
      v: the divisor's coefficients (its first must be non-zero).
      trim_leading_zeros: trim the remainder's leading (near-)zeros (concrete inputs only).
    Returns:
      ``(q, r)`` of the promoted inexact dtype; ``r`` keeps ``u``'s length unless trimmed.

    Example:
      >>> import functx.numpy as jnp
      >>> q, r = jnp.polydiv(jnp.array([1.0, 0.0, -1.0]), jnp.array([1.0, 1.0]))
      >>> print(q, r)
      [ 1. -1.] [0. 0. 0.]
    """
    u, v = _promote_inexact(u, v)
    u, v = _vec(u, "polydiv"), _vec(v, "polydiv")
    m, n = _shape_of(u)[0] - 1, _shape_of(v)[0] - 1
    scale = 1.0 / v[0]
    q = jnp.zeros((max(m - n + 1, 1),), _dtype(u))
    r = u
    for k in range(m - n + 1):
        d = scale * r[k]
        q = q.at[k].set(d)
        r = r.at[k : k + n + 1].add(-d * v)
    if trim_leading_zeros:
        r = _concrete(r, "polydiv")
        tol = math.sqrt(float(jnp.finfo(_dtype(r)).eps))
        nz = np.flatnonzero(np.abs(np.asarray(r)) >= tol)
        r = r[int(nz[0]) :] if nz.size else r[:0]
    return q, r


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """The least-squares polynomial fit of degree ``deg`` to the points ``(x, y)``.

    Arguments:
      x: a 1-D array of sample points.
      y: a 1-D or 2-D array of values (one fit per column).
      deg: the degree (a non-negative int).
      rcond: the relative cutoff for small singular values (default ``len(x) * eps``).
      full: also return the residuals, rank, singular values and ``rcond``.
      w: weights applied to the residuals (1-D, ``len(x)``).
      cov: also return the coefficients' covariance (``"unscaled"``: without the residual
        factor).
    Returns:
      The coefficients (highest power first), or a tuple as described above.

    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.array([0.0, 1.0, 2.0, 3.0])
      >>> print(jnp.round(jnp.polyfit(x, 2 * x * x + 1, 2), 4))
      [ 2. -0.  1.]
    """
    x, y = _promote_inexact(x, y)
    deg = _static_int(deg, "the degree of jnp.polyfit")
    order = deg + 1
    if deg < 0:
        raise FunctxValueError(f"expected deg >= 0{_loc()}")
    if _ndim(x) != 1:
        raise FunctxTypeError(f"expected 1D vector for x{_loc()}")
    if _shape_of(x)[0] == 0:
        raise FunctxTypeError(f"expected non-empty vector for x{_loc()}")
    if _ndim(y) < 1 or _ndim(y) > 2:
        raise FunctxTypeError(f"expected 1D or 2D array for y{_loc()}")
    if _shape_of(x)[0] != _shape_of(y)[0]:
        raise FunctxTypeError(f"expected x and y to have same length{_loc()}")
    dt = _dtype(x)
    if rcond is None:
        rcond = len(x) * float(jnp.finfo(dt).eps)
    rcond = float(rcond)
    lhs = more.vander(x, order)
    rhs = y
    if w is not None:
        (w,) = _promote_inexact(w)
        w = jnp.astype(w, dt)
        if _ndim(w) != 1:
            raise FunctxTypeError(f"expected a 1-d array for weights{_loc()}")
        if _shape_of(w)[0] != _shape_of(y)[0]:
            raise FunctxTypeError(f"expected w and y to have the same length{_loc()}")
        lhs = lhs * w[:, None]
        rhs = rhs * (w if _ndim(rhs) == 1 else w[:, None])
    scale = jnp.sqrt(jnp.sum(lhs * lhs, axis=0))
    lhs = lhs / scale
    c, resids, rank, s = _linalg.lstsq(lhs, rhs, rcond)
    c = (c.T / scale).T
    if full:
        return c, resids, rank, s, jnp.asarray(rcond, dt)
    if cov:
        vbase = _linalg.inv(lhs.T @ lhs) / jnp.outer(scale, scale)
        if cov == "unscaled":
            fac = jnp.asarray(1.0, dt)
        else:
            if len(x) <= order:
                raise FunctxValueError(
                    f"the number of data points must exceed order to scale the covariance "
                    f"matrix{_loc()}"
                )
            fac = resids / (len(x) - order)
            fac = fac[0] if _ndim(y) == 1 else fac
        if _ndim(y) == 1:
            return c, vbase * fac
        return c, vbase[:, :, None] * fac
    return c


def poly(seq_of_zeros):
    """The coefficients of the monic polynomial with the given roots.

    Arguments:
      seq_of_zeros: a 1-D array of roots (a square matrix means its eigenvalues: that needs
        ``jnp.linalg.eigvals``).
    Returns:
      A 1-D array of ``len(seq_of_zeros) + 1`` coefficients, highest power first.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.poly(jnp.array([1.0, 2.0])))
      [ 1. -3.  2.]
    """
    seq = jnp.atleast_1d(_arr(seq_of_zeros))
    sh = _shape_of(seq)
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        seq = _linalg.eigvals(seq)
    elif len(sh) != 1:
        raise FunctxValueError(f"input must be 1d or non-empty square 2d array.{_loc()}")
    (seq,) = _promote_inexact(seq)
    dt = _dtype(seq)
    a = jnp.ones((1,), dt)
    for k in range(_shape_of(seq)[0]):
        a = _convolve_full(a, jnp.stack([jnp.ones((), dt), -seq[k]]))
    return a


def _companion_roots(p):
    n = _shape_of(p)[0]
    if n < 2:
        return jnp.zeros((0,), dtypes.to_complex(_dtype(p)))
    a = jnp.eye(n - 1, k=-1, dtype=_dtype(p))
    a = a.at[0, :].set(-p[1:] / p[0])
    return _linalg.eigvals(a)


def roots(p, *, strip_zeros=True):
    """The roots of the polynomial with coefficients ``p`` (highest power first): the
    eigenvalues of its companion matrix.

    Arguments:
      p: a 1-D array of coefficients.
      strip_zeros: drop leading zero coefficients first (concrete ``p`` only); with False
        (traceable) each leading zero gives a NaN root, placed last.
    Returns:
      A 1-D complex array of ``len(p) - 1`` roots (fewer when zeros are stripped).

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.sort_complex(jnp.roots(jnp.array([1.0, -3.0, 2.0]))))
      [1.+0.j 2.+0.j]
    """
    (p,) = _promote_inexact(jnp.atleast_1d(_arr(p)))
    if _ndim(p) != 1:
        raise FunctxValueError(f"Input must be a rank-1 array.{_loc()}")
    n = _shape_of(p)[0]
    cdt = dtypes.to_complex(_dtype(p))
    if n < 2:
        return jnp.zeros((0,), cdt)
    is_zero = p == 0
    lead = jnp.where(jnp.all(is_zero), n, jnp.argmin(is_zero))
    if strip_zeros:
        if isinstance(lead, Tracer):
            raise ConcretizationTypeError(
                "Abstract tracer value encountered where concrete value is expected: the error "
                "occurred in the jnp.roots() function. To use this within a JIT-compiled "
                "context, pass strip_zeros=False, but be aware that leading zeros will result "
                f"in some returned roots being set to NaN.{_loc()}"
            )
        return _companion_roots(p[int(lead) :])
    p = jnp.where(lead == n, jnp.ones_like(p), p)
    idx = (jnp.arange(n) + lead) % n  # (the leading zeros rolled to the end)
    r = _companion_roots(p[idx])
    _, r = lax.sort_key_val(r == 0, r)  # (the zero roots they give, last)
    keep = jnp.arange(n - 1) < n - 1 - lead
    return jnp.where(keep, r, jnp.asarray(np.asarray(complex(np.nan, np.nan), cdt)))


# --- derivatives of samples, phases ---------------------------------------------------------------


def _slice_axis(a, start, stop, axis):
    idx = [slice(None)] * _ndim(a)
    idx[axis] = slice(start, stop)
    return a[tuple(idx)]


def _gradient_along(a, h, axis):
    def sl(x, start, stop):
        return _slice_axis(x, start, stop, axis)

    n = _shape_of(a)[axis]
    first = sl(a, 1, 2) - sl(a, 0, 1)
    last = sl(a, n - 1, n) - sl(a, n - 2, n - 1)
    if _ndim(h) == 0:
        inner = (sl(a, 2, n) - sl(a, 0, n - 2)) * 0.5 / h
        return jnp.concatenate([first / h, inner, last / h], axis=axis)
    if _ndim(h) != 1:
        raise FunctxValueError(f"Spacing arrays must be 1D arrays or scalars.{_loc()}")
    if _shape_of(h)[0] != n:
        raise FunctxValueError(
            "Spacing arrays must have the same length as the dimension along which the "
            f"gradient is calculated.{_loc()}"
        )
    shape = [1] * _ndim(a)
    shape[axis] = n
    h = jnp.reshape(h, tuple(shape))
    d1 = sl(h, 1, n - 1) - sl(h, 0, n - 2)
    d2 = sl(h, 2, n) - sl(h, 1, n - 1)
    inner = (
        -d2 / (d1 * (d1 + d2)) * sl(a, 0, n - 2)
        + (d2 - d1) / (d1 * d2) * sl(a, 1, n - 1)
        + d1 / (d2 * (d1 + d2)) * sl(a, 2, n)
    )
    first = first / (sl(h, 1, 2) - sl(h, 0, 1))
    last = last / (sl(h, n - 1, n) - sl(h, n - 2, n - 1))
    return jnp.concatenate([first, inner, last], axis=axis)


def gradient(f, *varargs, axis=None, edge_order=None):
    """The gradient of sampled values: central differences inside, one-sided at the edges.

    Arguments:
      f: an array of samples.
      *varargs: the spacing, per axis or one for all: a scalar step or a 1-D array of
        coordinates.
      axis: the axis or axes to differentiate along (default all).
      edge_order: not supported (JAX raises NotImplementedError too).
    Returns:
      One array (one axis) or a list of arrays, of the promoted inexact dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.gradient(jnp.array([1.0, 2.0, 4.0, 7.0])))
      [1.  1.5 2.5 3. ]
    """
    if edge_order is not None:
        raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
    a, *spacing = _promote_inexact(f, *varargs)
    nd = _ndim(a)
    if axis is None:
        axes = tuple(range(nd))
    else:
        axes = tuple(
            jnp._canon_axis(i, nd) for i in (axis if isinstance(axis, (tuple, list)) else (axis,))
        )
    if not axes:
        return []
    if builtins.min(_shape_of(a)[i] for i in axes) < 2:
        raise FunctxValueError(
            "Shape of array too small to calculate a numerical gradient, at least 2 elements "
            f"are required.{_loc()}"
        )
    if not spacing:
        dx = [jnp.asarray(np.asarray(1.0, _dtype(a)))] * len(axes)
    elif len(spacing) == 1:
        dx = spacing * len(axes)
    elif len(spacing) == len(axes):
        dx = spacing
    else:
        raise FunctxTypeError(
            f"Invalid number of spacing arguments {len(spacing)} for axis={axis}{_loc()}"
        )
    out = [_gradient_along(a, h, ax) for ax, h in zip(axes, dx)]
    return out[0] if len(axes) == 1 else out


def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
    """Unwrap a phase: replace jumps larger than ``discont`` by their equivalent modulo
    ``period``.

    Arguments:
      p: an array of phases.
      discont: the largest jump kept as is (default ``period / 2``).
      axis: the axis to unwrap along.
      period: the period of the phase (default ``2 pi``).
    Returns:
      An array of the promoted dtype of ``p`` and ``period``.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.round(jnp.unwrap(jnp.array([0.0, 3.0, 6.5, 0.5])), 3))
      [0.    3.    0.217 0.5  ]
    """
    p, period = _promote(p, period)
    if dtypes.is_complex(_dtype(p)):
        raise FunctxValueError(f"jnp.unwrap does not support complex inputs.{_loc()}")
    axis = jnp._canon_axis(axis, _ndim(p))
    n = _shape_of(p)[axis]
    if n == 0:
        return p
    if discont is None:
        discont = period / 2
    interval = period // 2 if _dtype(p).kind in "iu" else period / 2
    dd = more.diff(p, axis=axis)
    ddmod = jnp.mod(dd + interval, period) - interval
    ddmod = jnp.where(jnp.logical_and(ddmod == -interval, dd > 0), interval, ddmod)
    correct = jnp.where(jnp.abs(dd) < discont, jnp.zeros((), _dtype(dd)), ddmod - dd)
    rest = _slice_axis(p, 1, n, axis) + jnp.cumsum(correct, axis=axis)
    return jnp.concatenate([_slice_axis(p, 0, 1, axis), rest], axis=axis)


# --- vectorize and friends ------------------------------------------------------------------------

_DIMS = r"\w+"
_CORE = rf"\((?:{_DIMS}(?:,{_DIMS})*)?\)"
_ARGS = rf"{_CORE}(?:,{_CORE})*"
_SIGNATURE = rf"^{_ARGS}->{_ARGS}$"


def _parse_signature(signature):
    sig = signature.replace(" ", "")
    if not re.match(_SIGNATURE, sig):
        raise FunctxValueError(f"not a valid gufunc signature: {signature}{_loc()}")
    ins, outs = sig.split("->")

    def parse(part):
        return [
            tuple(d for d in core.split(",") if d)
            for core in re.findall(rf"\(((?:{_DIMS}(?:,{_DIMS})*)?)\)", part)
        ]

    return parse(ins), parse(outs)


def vectorize(pyfunc, *, excluded=frozenset(), signature=None):
    """A function that maps ``pyfunc`` over the leading (broadcast) dimensions of its array
    arguments, with ``vmap``.

    Arguments:
      pyfunc: the function of arrays with the core dimensions only.
      excluded: positions (ints) or names (strs) of the arguments passed through unchanged.
      signature: a generalized-ufunc signature such as ``"(n),(n)->()"`` naming each argument's
        core dimensions (default: all scalars).
    Returns:
      The vectorized function.

    Example:
      >>> import functx.numpy as jnp
      >>> dot = jnp.vectorize(jnp.dot, signature="(n),(n)->()")
      >>> print(dot(jnp.ones((3, 2)), jnp.array([1.0, 2.0])))
      [3. 3. 3.]
    """
    excluded = frozenset(excluded)
    if any(not isinstance(e, (int, str)) for e in excluded):
        raise FunctxTypeError(
            f"jax.numpy.vectorize can only exclude integer or string arguments, but excluded="
            f"{excluded!r}{_loc()}"
        )
    if any(isinstance(e, int) and e < 0 for e in excluded):
        raise FunctxValueError(f"excluded={excluded!r} contains negative numbers{_loc()}")
    in_cores, out_cores = _parse_signature(signature) if signature else (None, None)

    def wrapped(*args, **kwargs):
        static = {i: a for i, a in enumerate(args) if i in excluded}
        skw = {k: v for k, v in kwargs.items() if k in excluded}
        dyn_args = [_arr(a) for i, a in enumerate(args) if i not in excluded]
        dyn_kw = {k: _arr(v) for k, v in kwargs.items() if k not in excluded}
        names = list(dyn_kw)
        arrays = dyn_args + [dyn_kw[k] for k in names]
        cores = in_cores
        if cores is None:
            cores = [()] * len(arrays)
        elif len(cores) != len(arrays):
            raise FunctxTypeError(
                f"wrong number of positional arguments: expected {len(cores)}, got "
                f"{len(arrays)}{_loc()}"
            )
        sizes = {}
        batch = []
        for x, core in zip(arrays, cores):
            shp = _shape_of(x)
            if len(shp) < len(core):
                raise FunctxValueError(
                    f"input with shape {shp} does not have enough dimensions for all core "
                    f"dimensions {core} of the signature {signature!r}{_loc()}"
                )
            lead = shp[: len(shp) - len(core)]
            for d, s in zip(core, shp[len(lead) :]):
                if sizes.setdefault(d, s) != s:
                    raise FunctxValueError(
                        f"inconsistent size for core dimension {d!r}: {s} vs {sizes[d]}{_loc()}"
                    )
            batch.append(lead)
        bshape = jnp.broadcast_shapes(*batch) if batch else ()
        nb = math.prod(bshape)
        flat = [
            jnp.reshape(
                jnp.broadcast_to(x, bshape + _shape_of(x)[len(lead) :]),
                (nb,) + _shape_of(x)[len(lead) :],
            )
            for x, lead in zip(arrays, batch)
        ]

        def one(*xs):
            pos = list(xs[: len(dyn_args)])
            kw = dict(zip(names, xs[len(dyn_args) :]))
            full, it = [], iter(pos)
            for i in range(len(args)):
                full.append(static[i] if i in static else next(it))
            out = pyfunc(*full, **kw, **skw)
            if out_cores is not None:
                outs = out if isinstance(out, tuple) else (out,)
                if len(out_cores) != len(outs) or (len(out_cores) > 1) != isinstance(out, tuple):
                    raise FunctxValueError(
                        f"wrong number of output arguments: expected {len(out_cores)}, got "
                        f"{len(outs)}{_loc()}"
                    )
                for o, core in zip(outs, out_cores):
                    if _ndim(_arr(o)) != len(core):
                        raise FunctxValueError(
                            f"output shape {_shape_of(_arr(o))} does not match core dimensions "
                            f"{core} on vectorized function with excluded={set(excluded)!r} and "
                            f"signature={signature!r}{_loc()}"
                        )
            return out

        if not arrays:
            return pyfunc(*args, **kwargs)
        out = vmap(one)(*flat)

        def unflatten(o):
            o = _arr(o)
            return jnp.reshape(o, bshape + _shape_of(o)[1:])

        if isinstance(out, tuple):
            return tuple(unflatten(o) for o in out)
        if isinstance(out, list):
            return [unflatten(o) for o in out]
        return unflatten(out)

    wrapped.__name__ = getattr(pyfunc, "__name__", "vectorized")
    wrapped.__doc__ = getattr(pyfunc, "__doc__", None)
    return wrapped


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """Apply ``func1d`` to the 1-D slices of ``arr`` along ``axis`` (with ``vmap``).

    Arguments:
      func1d: a function of a 1-D array (and ``*args``, ``**kwargs``).
      axis: the axis of the slices.
      arr: the array.
      *args, **kwargs: passed to ``func1d``.
    Returns:
      The stacked results; ``func1d``'s output dimensions replace ``axis``.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.apply_along_axis(jnp.sum, 1, jnp.arange(6).reshape(2, 3)))
      [ 3 12]
    """
    arr = _arr(arr)
    nd = _ndim(arr)
    axis = jnp._canon_axis(_static_int(axis, "the axis of jnp.apply_along_axis"), nd)

    def func(x):
        return func1d(x, *args, **kwargs)

    for i in range(1, nd - axis):
        func = vmap(func, in_axes=i, out_axes=-1)
    for _ in range(axis):
        func = vmap(func, in_axes=0, out_axes=0)
    return func(arr)


jnp.PAD_WITH_FUNCTION["apply_along_axis"] = apply_along_axis


def apply_over_axes(func, a, axes):
    """Apply ``func(a, axis)`` repeatedly, once per axis, keeping the rank.

    Arguments:
      func: a function of an array and an axis returning an array of the same rank or one
        less (whose axis is then re-inserted).
      a: the array.
      axes: the axes, in order.
    Returns:
      An array of ``a``'s rank.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.apply_over_axes(jnp.sum, jnp.arange(6).reshape(2, 3), [0, 1]))
      [[15]]
    """
    a = _arr(a)
    for axis in axes:
        b = _arr(func(a, axis))
        if _ndim(b) == _ndim(a):
            a = b
        elif _ndim(b) == _ndim(a) - 1:
            a = jnp.expand_dims(b, axis)
        else:
            raise FunctxValueError(
                f"function is not returning an array of the correct shape{_loc()}"
            )
    return a


def _atleast_nd(x, n):
    shp = _shape_of(x)
    return jnp.reshape(x, (1,) * (n - len(shp)) + shp) if len(shp) < n else x


def _block(xs):
    if isinstance(xs, tuple):
        raise FunctxValueError(f"jax.numpy.block does not allow tuples, got {xs}{_loc()}")
    if isinstance(xs, list):
        if not xs:
            raise FunctxValueError(f"jax.numpy.block does not allow empty list arguments{_loc()}")
        parts, depths = zip(*[_block(x) for x in xs])
        if any(d != depths[0] for d in depths[1:]):
            raise FunctxValueError(f"Mismatched list depths in jax.numpy.block{_loc()}")
        rank = builtins.max(depths[0], builtins.max(_ndim(x) for x in parts))
        parts = [_atleast_nd(x, rank) for x in parts]
        return jnp.concatenate(parts, axis=-depths[0]), depths[0] + 1
    return _arr(xs), 1


def block(arrays):
    """An array assembled from nested lists of blocks (the innermost list joins along the last
    axis, the next along the one before, ...).

    Arguments:
      arrays: nested lists (not tuples) of arrays or scalars, of one depth.
    Returns:
      The assembled array.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.block([[jnp.eye(2), jnp.zeros((2, 1))], [jnp.ones((1, 2)), jnp.ones((1, 1))]]))
      [[1. 0. 0.]
       [0. 1. 0.]
       [1. 1. 1.]]
    """
    return _block(arrays)[0]


# --- index tricks ---------------------------------------------------------------------------------


def _grid_1d(s, name):
    for part in ("start", "stop", "step"):
        if isinstance(getattr(s, part), Tracer):
            raise ConcretizationTypeError(
                f"Abstract tracer value encountered where concrete value is expected: slice "
                f"{part} of jnp.{name}{_loc()}"
            )
    start = s.start or 0
    step = s.step or 1
    if np.iscomplex(step):
        return jnp.linspace(start, s.stop, int(abs(step)))
    return jnp.arange(start, s.stop, step)


class _Mgrid:
    """``jnp.mgrid[...]``: a dense grid from slices (``start:stop:step``, or ``start:stop:nj``
    for ``n`` points including ``stop``).

    Arguments:
      key: a slice or a tuple of slices.
    Returns:
      An array of shape ``(len(key), n1, n2, ...)`` (1-D for one slice).

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.mgrid[0:2, 0:3])
      [[[0 0 0]
        [1 1 1]]
      <BLANKLINE>
       [[0 1 2]
        [0 1 2]]]
    """

    sparse = False
    name = "mgrid"

    def __getitem__(self, key):
        if isinstance(key, slice):
            return _grid_1d(key, self.name)
        parts = [_grid_1d(k, self.name) for k in key]
        if parts:
            parts = jnp._promote_only(*parts)
        if self.sparse:
            return jnp.meshgrid(*parts, indexing="ij", sparse=True)
        if not parts:
            return jnp.arange(0)
        return jnp.stack(jnp.meshgrid(*parts, indexing="ij"), 0)


class _Ogrid(_Mgrid):
    """``jnp.ogrid[...]``: an open grid from slices (as ``mgrid``, each array keeping only its
    own axis: they broadcast together).

    Arguments:
      key: a slice or a tuple of slices.
    Returns:
      A list of arrays (a 1-D array for one slice).

    Example:
      >>> import functx.numpy as jnp
      >>> print([g.tolist() for g in jnp.ogrid[0:2, 0:3]])
      [[[0], [1]], [[0, 1, 2]]]
    """

    sparse = True
    name = "ogrid"


mgrid = _Mgrid()
ogrid = _Ogrid()


class _AxisConcat:
    axis, ndmin, trans1d, name = 0, 1, -1, "r_"

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        axis, ndmin, trans1d, matrix = self.axis, self.ndmin, self.trans1d, -1
        if items and isinstance(items[0], str):
            directive, items = items[0], items[1:]
            if directive == "r":
                matrix = 0
            elif directive == "c":
                matrix = 1
            else:
                vec = directive.split(",")
                defaults = [axis, ndmin, trans1d, matrix]
                vec = vec + defaults[len(vec) :] if len(vec) < 4 else vec[:3] + [matrix]
                try:
                    axis, ndmin, trans1d, matrix = (int(v) for v in vec)
                except ValueError:
                    raise FunctxValueError(
                        f"could not understand directive {directive!r}{_loc()}"
                    ) from None
        parts = []
        for item in items:
            if isinstance(item, slice):
                new, item_nd = _grid_1d(item, self.name), 0
            elif isinstance(item, str):
                raise FunctxValueError(f"string directive must be placed at the beginning{_loc()}")
            else:
                new = _arr(item)
                item_nd = _ndim(new)
            new = _atleast_nd(new, ndmin)
            if trans1d != -1 and ndmin - item_nd > 0:
                order = tuple(range(ndmin))
                shift = ndmin - abs(ndmin + trans1d + 1) % ndmin
                new = jnp.transpose(new, order[shift:] + order[:shift])
            parts.append(new)
        out = jnp.concatenate(parts, axis=axis)
        if matrix != -1 and _ndim(out) == 1:
            out = jnp.expand_dims(out, matrix)
        return out

    def __len__(self):
        return 0


class _RClass(_AxisConcat):
    """``jnp.r_[...]``: arrays, scalars and slices (as ``mgrid``'s) joined along the first
    axis; a leading string directive (``"r"``, ``"c"``, ``"axis,ndmin,trans1d"``) changes how.

    Arguments:
      key: the pieces, optionally after a directive string.
    Returns:
      The joined array.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.r_[jnp.array([1, 2]), 0, 4:7])
      [1 2 0 4 5 6]
    """

    axis, ndmin, trans1d, name = 0, 1, -1, "r_"


class _CClass(_AxisConcat):
    """``jnp.c_[...]``: as ``r_``, joined along the last axis with 1-D pieces as columns.

    Arguments:
      key: the pieces, optionally after a directive string.
    Returns:
      The joined array (at least 2-D).

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.c_[jnp.array([1, 2]), jnp.array([3, 4])])
      [[1 3]
       [2 4]]
    """

    axis, ndmin, trans1d, name = -1, 2, 0, "c_"


r_ = _RClass()
c_ = _CClass()
s_ = np.s_
index_exp = np.index_exp


def ix_(*args):
    """Open-mesh index arrays from 1-D integer sequences (``a[ix_(rows, cols)]`` selects the
    cross product).

    Arguments:
      *args: 1-D integer arrays.
    Returns:
      A tuple of arrays, the ``i``-th of shape ``(1, ..., len(args[i]), ..., 1)``.

    Example:
      >>> import functx.numpy as jnp
      >>> a = jnp.arange(12).reshape(3, 4)
      >>> print(a[jnp.ix_(jnp.array([0, 2]), jnp.array([1, 3]))])
      [[ 1  3]
       [ 9 11]]
    """
    args = [_arr(a) for a in args]
    out = []
    for i, a in enumerate(args):
        if _ndim(a) != 1:
            raise FunctxValueError(
                f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape {_shape_of(a)}"
                f"{_loc()}"
            )
        if _dtype(a) == dtypes.bool_:
            raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
        shape = [1] * len(args)
        shape[i] = _shape_of(a)[0]
        if shape[i] == 0:
            out.append(jnp.zeros(tuple(shape), dtypes.default_int()))
        else:
            out.append(jnp.reshape(a, tuple(shape)))
    return tuple(out)


# --- selection and updates ------------------------------------------------------------------------


def choose(a, choices, out=None, mode="raise"):
    """Pick each element from one of ``choices``, by the index in ``a``.

    Arguments:
      a: an integer array of choice indices.
      choices: a sequence of arrays (broadcast with ``a``).
      out: not supported (JAX raises NotImplementedError too).
      mode: ``"raise"`` (indices must be in range; concrete ``a`` only), ``"wrap"`` or
        ``"clip"``.
    Returns:
      An array of the broadcast shape and the choices' promoted dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.choose(jnp.array([0, 1, 0]), [jnp.array([1, 2, 3]), jnp.array([7, 8, 9])]))
      [1 8 3]
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
    a = _arr(a)
    choices = [_arr(c) for c in choices]
    if _dtype(a).kind not in "iu":
        raise FunctxValueError(f"`a` array must be integer typed{_loc()}")
    n = len(choices)
    if mode == "raise":
        if isinstance(a, Tracer):
            raise ConcretizationTypeError(
                "Abstract tracer value encountered where concrete value is expected: the error "
                "occurred because jnp.choose was jit-compiled with mode='raise'. Use "
                f"mode='wrap' or mode='clip' instead.{_loc()}"
            )
        av = np.asarray(a)
        if np.any((av < 0) | (av >= n)):
            raise FunctxValueError(f"invalid entry in choice array{_loc()}")
    elif mode == "wrap":
        a = jnp.mod(a, n)
    elif mode == "clip":
        a = jnp.clip(a, 0, n - 1)
    else:
        raise FunctxValueError(
            f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'{_loc()}"
        )
    a, *choices = jnp.broadcast_arrays(a, *choices)
    stacked = jnp.stack(jnp._promote_only(*choices)) if n > 1 else jnp.stack(choices)
    return jnp.squeeze(jnp.take_along_axis(stacked, jnp.expand_dims(a, 0), axis=0), 0)


def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
    """The slices of ``a`` along ``axis`` where ``condition`` is true.

    Arguments:
      condition: a 1-D array (converted to bool); entries past ``a``'s length must be false.
      a: the array (flattened when ``axis`` is None).
      axis: the axis to select along.
      size: the static number of slices (needed under ``jit``/``vmap``); missing ones are
        filled with ``fill_value``.
      fill_value: the padding value.
      out: not supported (JAX raises NotImplementedError too).
    Returns:
      An array with the selected slices.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.compress(jnp.array([True, False, True]), jnp.arange(6).reshape(3, 2), axis=0))
      [[0 1]
       [4 5]]
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
    cond = jnp.astype(_arr(condition), dtypes.bool_)
    arr = _arr(a)
    if _ndim(cond) != 1:
        raise FunctxValueError(f"condition must be a 1D array{_loc()}")
    if axis is None:
        axis, arr = 0, jnp.ravel(arr)
    else:
        axis = jnp._canon_axis(axis, _ndim(arr))
        arr = jnp.moveaxis(arr, axis, 0)
    n = _shape_of(arr)[0]
    cond, extra = cond[:n], cond[n:]
    arr = arr[: _shape_of(cond)[0]]
    if size is None:
        cond = _concrete(cond, "compress")
        if np.any(np.asarray(extra)):
            raise FunctxValueError(f"condition contains entries that are out of bounds{_loc()}")
        result = arr[np.asarray(cond)]
    else:
        size = _static_int(size, "the size argument of jnp.compress")
        if not 0 <= size <= _shape_of(arr)[0]:
            raise FunctxValueError(
                "size must be positive and not greater than the size of the array axis; got "
                f"size={size} for a.shape[axis]={_shape_of(arr)[0]}{_loc()}"
            )
        mask = jnp.reshape(cond, _shape_of(cond) + (1,) * (_ndim(arr) - 1))
        arr = jnp.where(mask, arr, _fill(fill_value, _dtype(arr)))
        result = arr[srt.argsort(cond, stable=True, descending=True)][:size]
    return jnp.moveaxis(result, 0, axis)


def extract(condition, arr, *, size=None, fill_value=0):
    """The elements of ``arr`` where ``condition`` is true (both flattened).

    Arguments:
      condition: an array (converted to bool).
      arr: the array.
      size: the static number of elements (needed under ``jit``/``vmap``); padded with
        ``fill_value``.
      fill_value: the padding value.
    Returns:
      A 1-D array.

    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.arange(6)
      >>> print(jnp.extract(x % 2 == 0, x), jnp.extract(x > 3, x, size=3, fill_value=-1))
      [0 2 4] [ 4  5 -1]
    """
    return compress(
        jnp.ravel(_arr(condition)), jnp.ravel(_arr(arr)), size=size, fill_value=fill_value
    )


def _tile_to(v, n):
    m = _shape_of(v)[0]
    if m == n:
        return v
    return jnp.tile(v, -(-n // m))[:n] if m else v


def place(arr, mask, vals, *, inplace=True):
    """``arr`` with the elements where ``mask`` is true replaced, in order, by ``vals``
    (repeated as needed). JAX arrays are immutable: pass ``inplace=False``.

    Arguments:
      arr: the array.
      mask: a bool array of ``arr``'s size.
      vals: the values (flattened, cycled).
      inplace: must be False.
    Returns:
      The updated array.

    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.arange(5)
      >>> print(jnp.place(x, x % 2 == 1, jnp.array([10, 20]), inplace=False))
      [ 0 10  2 20  4]
    """
    if inplace:
        raise FunctxValueError(
            "jax.numpy.place cannot modify arrays in-place, because JAX arrays are immutable. "
            f"Pass inplace=False to instead return an updated array.{_loc()}"
        )
    arr = _arr(arr)
    data, m, v = jnp.ravel(arr), jnp.ravel(_arr(mask)), jnp.ravel(_arr(vals))
    n = _shape_of(data)[0]
    if _shape_of(m)[0] != n:
        raise FunctxValueError(f"place: mask and data must be the same size{_loc()}")
    if n == 0:
        return arr
    if _shape_of(v)[0] == 0:
        raise FunctxValueError(f"Cannot place values from an empty array{_loc()}")
    idt = dtypes.default_int()
    rank = jnp.cumsum(jnp.astype(m, idt)) - 1
    picked = _tile_to(v, n)[jnp.clip(rank, 0, n - 1)]
    return jnp.reshape(jnp.where(m, jnp.astype(picked, _dtype(arr)), data), _shape_of(arr))


def put(a, ind, v, mode=None, *, inplace=True):
    """``a`` with the elements at flat indices ``ind`` replaced by ``v`` (cycled). JAX arrays are
    immutable: pass ``inplace=False``.

    Arguments:
      a: the array.
      ind: flat indices (negative ones count from the end).
      v: the values (flattened, cycled to ``ind``'s size).
      mode: None (negative indices count from the end, out-of-range ones are clipped, as in
        JAX), ``"clip"`` or ``"wrap"``; ``"raise"`` is not supported (as in JAX).
      inplace: must be False.
    Returns:
      The updated array.

    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.zeros(5, int)
      >>> print(jnp.put(x, jnp.array([0, -1, 9]), jnp.array([7, 8, 9]), inplace=False))
      [7 0 0 0 9]
    """
    if inplace:
        raise FunctxValueError(
            "jax.numpy.put cannot modify arrays in-place, because JAX arrays are immutable. "
            f"Pass inplace=False to instead return an updated array.{_loc()}"
        )
    a = _arr(a)
    data, idx, vals = jnp.ravel(a), jnp.ravel(_arr(ind)), jnp.ravel(_arr(v))
    if _dtype(idx).kind not in "iu":
        raise FunctxTypeError(f"jnp.put: indices must be integers, got {_dtype(idx)}{_loc()}")
    n, k = _shape_of(data)[0], _shape_of(idx)[0]
    if k == 0 or n == 0:
        return a
    if _shape_of(vals)[0] == 0:
        raise FunctxValueError(f"Cannot put values from an empty array{_loc()}")
    vals = jnp.astype(_tile_to(vals, k), _dtype(a))
    idx = jnp.astype(idx, dtypes.default_int())
    if mode is None:  # (JAX: negative indices count from the end, the others are clipped)
        idx = jnp.clip(jnp.where(idx < 0, idx + n, idx), 0, n - 1)
    elif mode == "clip":
        idx = jnp.clip(idx, 0, n - 1)
    elif mode == "wrap":
        idx = jnp.mod(idx, n)
    elif mode == "raise":
        raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
    else:
        raise FunctxValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}{_loc()}")
    return jnp.reshape(data.at[idx].set(vals), _shape_of(a))


def fill_diagonal(a, val, wrap=False, *, inplace=True):
    """``a`` with its main diagonal (all indices equal) set to ``val``. JAX arrays are
    immutable: pass ``inplace=False``.

    Arguments:
      a: an array of rank at least 2 (all dimensions equal beyond rank 2).
      val: a scalar or an array of values (flattened, cycled along the diagonal).
      wrap: not supported (JAX raises NotImplementedError too).
      inplace: must be False.
    Returns:
      The updated array.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.fill_diagonal(jnp.zeros((2, 3), int), 5, inplace=False))
      [[5 0 0]
       [0 5 0]]
    """
    if inplace:
        raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
    if wrap:
        raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
    a, val = _arr(a), _arr(val)
    shp = _shape_of(a)
    if len(shp) < 2:
        raise FunctxValueError(f"array must be at least 2-d{_loc()}")
    if len(shp) > 2 and not all(s == shp[0] for s in shp[1:]):
        raise FunctxValueError(f"All dimensions of input must be of equal length{_loc()}")
    n = builtins.min(shp)
    idx = (np.arange(n),) * len(shp)
    v = val if _ndim(val) == 0 else _tile_to(jnp.ravel(val), n)
    return a.at[idx].set(jnp.astype(v, _dtype(a)))


def copy(a, order=None):
    """A copy of ``a`` (an array of the same values; functx arrays are immutable, so this is
    for NumPy's API).

    Arguments:
      a: an array or array-like.
      order: accepted for NumPy's signature.
    Returns:
      An array.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.copy(jnp.array([1, 2, 3])))
      [1 2 3]
    """
    return jnp.array(a, copy=True, order=order or "K")


def resize(a, new_shape):
    """An array of ``new_shape`` filled with ``a``'s elements, repeated in order.

    Arguments:
      a: an array.
      new_shape: an int or a tuple of non-negative ints.
    Returns:
      An array of ``a``'s dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.resize(jnp.array([1, 2, 3]), (2, 4)))
      [[1 2 3 1]
       [2 3 1 2]]
    """
    a = _arr(a)
    if isinstance(new_shape, int):
        new_shape = (new_shape,)
    new_shape = tuple(_static_int(s, "new_shape of jnp.resize") for s in new_shape)
    if any(s < 0 for s in new_shape):
        raise FunctxValueError(f"All elements of `new_shape` must be non-negative{_loc()}")
    flat = jnp.ravel(a)
    size = math.prod(new_shape)
    if _shape_of(flat)[0] == 0 or size == 0:
        return jnp.zeros(new_shape, _dtype(a))
    return jnp.reshape(_tile_to(flat, size), new_shape)


def trim_zeros(filt, trim="fb", axis=None):
    """``filt`` without its leading and/or trailing zeros (along each axis, the slices that are
    all zero). Needs a concrete array.

    Arguments:
      filt: an array.
      trim: ``"f"`` (front), ``"b"`` (back) or ``"fb"``.
      axis: the axes to trim (default all).
    Returns:
      A slice of ``filt``.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.trim_zeros(jnp.array([0, 0, 1, 2, 0])))
      [1 2]
    """
    filt = _arr(filt)
    if isinstance(filt, Tracer):
        raise ConcretizationTypeError(
            "Abstract tracer value encountered where concrete value is expected: Error arose "
            f"in the `filt` argument of trim_zeros(){_loc()}"
        )
    nd = _ndim(filt)
    if axis is None:
        axes = set(range(nd))
    else:
        axes = {
            jnp._canon_axis(i, nd) for i in (axis if isinstance(axis, (tuple, list)) else (axis,))
        }
    t = trim.lower()
    if not axes or ("f" not in t and "b" not in t):
        return filt
    x = np.asarray(filt) != 0
    idx = []
    for ax in range(nd):
        if ax not in axes:
            idx.append(slice(None))
            continue
        mask = x.any(axis=tuple(i for i in range(nd) if i != ax))
        if not mask.any():
            idx.append(slice(0, 0))
            continue
        start = int(mask.argmax()) if "f" in t else None
        stop = x.shape[ax] - int(mask[::-1].argmax()) if "b" in t else None
        idx.append(slice(start, stop))
    return filt[tuple(idx)]


# --- elementwise ----------------------------------------------------------------------------------


def modf(x, /, out=None):
    """The fractional and integral parts of ``x`` (both with ``x``'s sign).

    Arguments:
      x: an array (integers and bools convert to float).
      out: not supported (JAX raises NotImplementedError too).
    Returns:
      ``(fractional, integral)``, of the inexact dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> frac, whole = jnp.modf(jnp.array([1.5, -2.25]))
      >>> print(frac, whole)
      [ 0.5  -0.25] [ 1. -2.]
    """
    if out is not None:
        raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
    (x,) = _promote_inexact(x)
    whole = jnp.where(x >= 0, jnp.floor(x), jnp.ceil(x))
    return x - whole, whole


def spacing(x, /):
    """The distance from ``x`` to the next representable number away from zero (NumPy's
    ``spacing``; float16 steps towards +inf, as in NumPy and JAX).

    Arguments:
      x: a real array (integers and bools convert to float).
    Returns:
      An array of the inexact dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.spacing(jnp.array([1.0, -1.0], jnp.float32)))
      [ 1.1920929e-07 -1.1920929e-07]
    """
    (x,) = _promote_inexact(x)
    dt = _dtype(x)
    if dtypes.is_complex(dt):
        raise FunctxValueError(f"jnp.spacing is not defined for complex inputs.{_loc()}")
    inf = jnp.asarray(np.asarray(np.inf, dt))
    if dt == dtypes.float16:
        return lax.nextafter(x, jnp.broadcast_to(inf, _shape_of(x))) - x
    toward = jnp.copysign(jnp.broadcast_to(inf, _shape_of(x)), x)
    out = lax.nextafter(x, toward) - x
    tiny = jnp.copysign(jnp.asarray(np.asarray(jnp.finfo(dt).smallest_subnormal, dt)), x)
    return jnp.where(out == 0, tiny, out)


def i0(x):
    """The modified Bessel function of the first kind of order 0 (``exp(|x|) * i0e(x)``).

    Arguments:
      x: a real array (integers and bools convert to float).
    Returns:
      An array of the inexact dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.round(jnp.i0(jnp.array([0.0, 1.0])), 4))
      [1.     1.2661]
    """
    (x,) = _promote_inexact(x)
    if not dtypes.is_float(_dtype(x)):
        raise FunctxValueError(f"Unsupported input type to jax.numpy.i0: {_dtype(x)}{_loc()}")
    return jnp.exp(jnp.abs(x)) * lax.bessel_i0e(x)


def bitwise_count(x, /):
    """The number of 1 bits in ``|x|`` (NumPy's ``bitwise_count``).

    Arguments:
      x: an integer or bool array.
    Returns:
      A uint8 array.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.bitwise_count(jnp.array([0, 7, -8, 255])))
      [0 3 1 8]
    """
    x = _arr(x)
    if _dtype(x) == dtypes.bool_:
        x = jnp.astype(x, dtypes.int32)
    if _dtype(x).kind not in "iu":
        raise FunctxTypeError(
            f"bitwise_count: expected an integer or bool array, got {_dtype(x)}{_loc()}"
        )
    return jnp.astype(lax.population_count(jnp.abs(x)), dtypes.uint8)


# --- windows --------------------------------------------------------------------------------------


def _window(name, M, formula):
    """The window ``name`` of ``M`` points: ``formula(n, M)`` of the positions ``n`` (0 to
    ``M - 1`` in the default float dtype) for ``M > 1``; ones for ``M`` of 1, empty below."""
    if isinstance(M, Tracer):
        raise ConcretizationTypeError(
            f"Abstract tracer value encountered where concrete value is expected: M argument of "
            f"jnp.{name}{_loc()}"
        )
    M = int(M)
    dt = dtypes.default_float()
    if M <= 1:
        return jnp.ones((builtins.max(M, 0),), dt)
    return formula(jnp.arange(M, dtype=dt), M)


def _window_doc(shown, prints, **meanings):
    """Completes a window's docstring (its summary) with its Arguments (``M`` and ``meanings``),
    Returns and an example that prints ``prints`` for ``shown``."""

    def complete(fn):
        more = "".join(f"\n      {name}: {meaning}" for name, meaning in meanings.items())
        fn.__doc__ = (
            (fn.__doc__ or "")
            + f"""

    Arguments:
      M: the number of points (an int; 0 or less gives an empty array).{more}
    Returns:
      A 1-D array of the default float dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> print({shown})
      {prints}
    """
        )
        return fn

    return complete


@_window_doc("jnp.bartlett(5)", "[0.  0.5 1.  0.5 0. ]")
def bartlett(M):
    """The Bartlett (triangular) window of ``M`` points."""
    return _window("bartlett", M, lambda n, M: 1 - jnp.abs(2 * n + 1 - M) / (M - 1))


@_window_doc("jnp.round(jnp.blackman(3), 4)", "[-0.  1. -0.]")
def blackman(M):
    """The Blackman window of ``M`` points."""
    return _window(
        "blackman",
        M,
        lambda n, M: (
            0.42 - 0.5 * jnp.cos(2 * np.pi * n / (M - 1)) + 0.08 * jnp.cos(4 * np.pi * n / (M - 1))
        ),
    )


@_window_doc("jnp.round(jnp.hamming(3), 4)", "[0.08 1.   0.08]")
def hamming(M):
    """The Hamming window of ``M`` points."""
    return _window("hamming", M, lambda n, M: 0.54 - 0.46 * jnp.cos(2 * np.pi * n / (M - 1)))


@_window_doc("jnp.hanning(5)", "[0.  0.5 1.  0.5 0. ]")
def hanning(M):
    """The Hann window of ``M`` points."""
    return _window("hanning", M, lambda n, M: 0.5 * (1 - jnp.cos(2 * np.pi * n / (M - 1))))


@_window_doc(
    "jnp.round(jnp.kaiser(3, 2.0), 4)", "[0.4387 1.     0.4387]", beta="the shape parameter."
)
def kaiser(M, beta):
    """The Kaiser window of ``M`` points with shape parameter ``beta``."""

    def formula(n, M):
        alpha = 0.5 * (M - 1)
        return i0(beta * jnp.sqrt(1 - ((n - alpha) / alpha) ** 2)) / i0(beta)

    return _window("kaiser", M, formula)


# --- bits -----------------------------------------------------------------------------------------


def packbits(a, axis=None, bitorder="big"):
    """Pack the truth of each element into the bits of uint8 (8 per byte, padded with zeros).

    Arguments:
      a: an integer or bool array.
      axis: the axis to pack along (default: the flattened array).
      bitorder: ``"big"`` (first element in the high bit) or ``"little"``.
    Returns:
      A uint8 array, ``axis`` ``ceil(n / 8)`` long.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.packbits(jnp.array([1, 0, 1, 1, 0, 0, 0, 0, 1])))
      [176 128]
    """
    arr = _arr(a)
    if _dtype(arr).kind not in "iub":
        raise FunctxTypeError(f"Expected an input array of integer or boolean data type{_loc()}")
    if bitorder not in ("little", "big"):
        raise FunctxValueError(f"'order' must be either 'little' or 'big'{_loc()}")
    arr = jnp.astype(arr != 0, dtypes.uint8)
    if axis is None:
        arr, axis = jnp.ravel(arr), 0
    axis = jnp._canon_axis(axis, _ndim(arr))
    arr = jnp.swapaxes(arr, axis, -1)
    rem = _shape_of(arr)[-1] % 8
    if rem:
        arr = jnp.pad(arr, [(0, 0)] * (_ndim(arr) - 1) + [(0, 8 - rem)])
    arr = jnp.reshape(arr, _shape_of(arr)[:-1] + (_shape_of(arr)[-1] // 8, 8))
    bits = np.arange(8, dtype=np.uint8)
    if bitorder == "big":
        bits = bits[::-1]
    packed = jnp.sum(
        lax.shift_left(arr, jnp.broadcast_to(jnp.asarray(bits.copy()), _shape_of(arr))),
        axis=-1,
        dtype=dtypes.uint8,
    )
    return jnp.swapaxes(packed, axis, -1)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """Unpack each uint8 into its 8 bits.

    Arguments:
      a: a uint8 array.
      axis: the axis to unpack along (default: the flattened array).
      count: the number of bits to keep along ``axis`` (more pads with zeros).
      bitorder: ``"big"`` (the high bit first) or ``"little"``.
    Returns:
      A uint8 array of zeros and ones.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.unpackbits(jnp.array([176], jnp.uint8)))
      [1 0 1 1 0 0 0 0]
    """
    arr = _arr(a)
    if _dtype(arr) != dtypes.uint8:
        raise FunctxTypeError(f"Expected an input array of unsigned byte data type{_loc()}")
    if bitorder not in ("little", "big"):
        raise FunctxValueError(f"'order' must be either 'little' or 'big'{_loc()}")
    bits = (1 << np.arange(8)).astype(np.uint8)
    if bitorder == "big":
        bits = bits[::-1]
    if axis is None:
        arr, axis = jnp.ravel(arr), 0
    axis = jnp._canon_axis(axis, _ndim(arr))
    arr = jnp.swapaxes(arr, axis, -1)
    out = jnp.astype(
        jnp.bitwise_and(jnp.expand_dims(arr, -1), jnp.asarray(bits.copy())) > 0, dtypes.uint8
    )
    out = jnp.reshape(out, _shape_of(out)[:-2] + (-1,))
    if count is not None:
        count = _static_int(count, "the count of jnp.unpackbits")
        n = _shape_of(out)[-1]
        if count > n:
            out = jnp.pad(out, [(0, 0)] * (_ndim(out) - 1) + [(0, count - n)])
        else:
            out = out[..., :count]
    return jnp.swapaxes(out, axis, -1)


# --- products -------------------------------------------------------------------------------------


def matvec(x1, x2, /):
    """Batched matrix-vector products: ``x1[..., i, j] * x2[..., j]`` summed over ``j``.

    Arguments:
      x1: an array of matrices, shape ``(..., n, m)``.
      x2: an array of vectors, shape ``(..., m)`` (batch dimensions broadcast).
    Returns:
      An array of shape ``(..., n)``.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.matvec(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 1])))
      [3 7]
    """
    return vectorize(jnp.matmul, signature="(n,m),(m)->(n)")(_arr(x1), _arr(x2))


def vecmat(x1, x2, /):
    """Batched vector-matrix products with the vector conjugated: ``conj(x1[..., i]) *
    x2[..., i, j]`` summed over ``i``.

    Arguments:
      x1: an array of vectors, shape ``(..., n)``.
      x2: an array of matrices, shape ``(..., n, m)`` (batch dimensions broadcast).
    Returns:
      An array of shape ``(..., m)``.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.vecmat(jnp.array([1, 1]), jnp.array([[1, 2], [3, 4]])))
      [4 6]
    """
    return vectorize(jnp.matmul, signature="(n),(n,m)->(m)")(cplx.conj(_arr(x1)), _arr(x2))


def einsum_path(subscripts, /, *operands, optimize="auto"):
    """The contraction order ``einsum`` would use, and a report (opt_einsum's
    ``contract_path``; needs the ``opt_einsum`` package, a dependency of JAX).

    Arguments:
      subscripts: the einsum subscripts.
      *operands: the arrays (only their shapes are used).
      optimize: ``"auto"``, ``"greedy"``, ``"optimal"``, ..., True (``"optimal"``), False (one
        contraction of all operands) or an explicit path.
    Returns:
      ``(path, info)``: a list of index tuples and opt_einsum's ``PathInfo``.

    Example:
      >>> import functx.numpy as jnp
      >>> a = jnp.ones((2, 3)); b = jnp.ones((3, 4)); c = jnp.ones((4, 5))
      >>> print(jnp.einsum_path("ij,jk,kl->il", a, b, c)[0])
      [(0, 1), (0, 1)]
    """
    import opt_einsum  # noqa: PLC0415 (an optional dependency: only einsum_path needs it)

    if optimize is True:
        optimize = "optimal"
    elif optimize is False:
        optimize = [tuple(range(len(operands)))]
    shapes = [_shape_of(_arr(o)) for o in operands]
    return opt_einsum.contract_path(subscripts, *shapes, optimize=optimize, shapes=True)


# --- construction ---------------------------------------------------------------------------------


def fromfunction(function, shape, *, dtype=float, **kwargs):
    """An array whose element at ``(i, j, ...)`` is ``function(i, j, ...)`` (``function`` is
    mapped with ``vmap``, so it may take scalars).

    Arguments:
      function: a function of one coordinate per dimension (and ``**kwargs``).
      shape: the shape (a tuple of ints).
      dtype: the coordinates' dtype (default float, canonicalized).
      **kwargs: passed to ``function``.
    Returns:
      ``function``'s output over the grid.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.fromfunction(lambda i, j: i + 2 * j, (2, 3), dtype=int))
      [[0 2 4]
       [1 3 5]]
    """
    shape = jnp._shape(shape, "fromfunction")
    f = function
    for i in range(len(shape)):
        in_axes = [0 if i == j else None for j in range(len(shape))]
        f = vmap(f, in_axes=tuple(in_axes[::-1]))
    return f(*(jnp.arange(s, dtype=dtype) for s in shape), **kwargs)


def frombuffer(buffer, dtype=float, count=-1, offset=0):
    """An array of the values a bytes buffer holds (NumPy's ``frombuffer``, then
    ``asarray``).

    Arguments:
      buffer: a bytes-like object.
      dtype: the dtype of the buffer's elements (default float64; canonicalized like any
        input).
      count: how many elements (-1: all).
      offset: the byte offset to start at.
    Returns:
      A 1-D array.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.frombuffer(b"\\x01\\x02\\x03", dtype=jnp.uint8))
      [1 2 3]
    """
    return jnp.asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
    """An array of the numbers a text string holds (NumPy's ``fromstring`` with a separator).

    Arguments:
      string: the text.
      dtype: the dtype of the elements (canonicalized like any input).
      count: how many elements (-1: all).
      sep: the separator between the numbers (whitespace also separates).
    Returns:
      A 1-D array.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.fromstring("1 2 3", dtype=int, sep=" "))
      [1 2 3]
    """
    return jnp.asarray(np.fromstring(string, dtype=dtype, count=count, sep=sep))


def fromiter(*args, **kwargs):
    """Not implemented, as in JAX: an iterator may not be pure. Use
    ``jnp.asarray(np.fromiter(...))``.

    Arguments:
      *args, **kwargs: NumPy's ``fromiter`` arguments.
    Returns:
      Nothing: raises NotImplementedError.

    Example:
      >>> import functx.numpy as jnp
      >>> try:
      ...     jnp.fromiter(iter([1, 2]), int)
      ... except NotImplementedError:
      ...     print("use jnp.asarray(np.fromiter(...))")
      use jnp.asarray(np.fromiter(...))
    """
    raise NotImplementedError(
        "jnp.fromiter() is not implemented because it may be non-pure and thus unsafe for use "
        "with JIT and other JAX transformations. Consider using jnp.asarray(np.fromiter(...)) "
        "instead, although care should be taken if np.fromiter is used within jax "
        "transformations because of its potential side-effect of consuming the iterable object."
    )


def fromfile(*args, **kwargs):
    """Not implemented, as in JAX: reading a file is not pure. Use
    ``jnp.asarray(np.fromfile(...))``.

    Arguments:
      *args, **kwargs: NumPy's ``fromfile`` arguments.
    Returns:
      Nothing: raises NotImplementedError.

    Example:
      >>> import functx.numpy as jnp
      >>> try:
      ...     jnp.fromfile("data.bin")
      ... except NotImplementedError:
      ...     print("use jnp.asarray(np.fromfile(...))")
      use jnp.asarray(np.fromfile(...))
    """
    raise NotImplementedError(
        "jnp.fromfile() is not implemented because it may be non-pure and thus unsafe for use "
        "with JIT and other JAX transformations. Consider using jnp.asarray(np.fromfile(...)) "
        "instead, although care should be taken if np.fromfile is used within jax "
        "transformations because of its potential side-effect of consuming the file object."
    )


def dsplit(ary, indices_or_sections):
    """Split an array of rank at least 3 along its third axis.

    Arguments:
      ary: the array.
      indices_or_sections: a number of equal parts or the split indices.
    Returns:
      A list of arrays.

    Example:
      >>> import functx.numpy as jnp
      >>> print([p.shape for p in jnp.dsplit(jnp.zeros((1, 2, 4)), 2)])
      [(1, 2, 2), (1, 2, 2)]
    """
    ary = _arr(ary)
    if _ndim(ary) < 3:
        raise FunctxValueError(f"dsplit only works on arrays of 3 or more dimensions{_loc()}")
    return jnp.split(ary, indices_or_sections, axis=2)


def mask_indices(n, mask_func, k=0, *, size=None):
    """The indices where ``mask_func(ones((n, n)), k)`` is non-zero (e.g. ``jnp.triu``).

    Arguments:
      n: the size of the square matrix.
      mask_func: a function of an array and ``k`` (``triu``, ``tril``, ...).
      k: passed to ``mask_func``.
      size: the static number of indices (padded), as for ``nonzero``.
    Returns:
      ``(rows, cols)``.

    Example:
      >>> import functx.numpy as jnp
      >>> rows, cols = jnp.mask_indices(3, jnp.triu, 1)
      >>> print(rows, cols)
      [0 0 1] [1 2 2]
    """
    a = jnp.ones((n, n), dtypes.bool_)
    return srt.nonzero(mask_func(a, k), size=size)


def iterable(y):
    """Whether ``y`` can be iterated over (NumPy's ``iterable``).

    Arguments:
      y: any object.
    Returns:
      A Python bool.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.iterable([1, 2]), jnp.iterable(3))
      True False
    """
    return np.iterable(y)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """The string of an array's values (NumPy's ``array_str`` of its values).

    Arguments:
      a: an array.
      max_line_width, precision, suppress_small: as in NumPy.
    Returns:
      A str.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.array_str(jnp.array([1.5, 2.0])))
      [1.5 2. ]
    """
    return np.array_str(np.asarray(a), max_line_width, precision, suppress_small)


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """The repr of an array (NumPy's ``array_repr``: ``Array([...], dtype=...)`` for a functx
    array, ``array([...])`` for a NumPy one), with NumPy's formatting options.

    Arguments:
      arr: an array.
      max_line_width, precision, suppress_small: as in NumPy.
    Returns:
      A str.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.array_repr(jnp.array([1, 2], jnp.int32)))
      Array([1, 2], dtype=int32)
    """
    return np.array_repr(arr, max_line_width, precision, suppress_small)


# --- print options --------------------------------------------------------------------------------


def printoptions(*args, **kwargs):
    """A context manager setting NumPy's print options (which functx arrays print with) for a
    block.

    Arguments:
      *args, **kwargs: NumPy's ``set_printoptions`` arguments.
    Returns:
      The context manager.

    Example:
      >>> import functx.numpy as jnp
      >>> with jnp.printoptions(precision=2):
      ...     print(jnp.array([1 / 3]))
      [0.33]
    """
    return np.printoptions(*args, **kwargs)


def get_printoptions():
    """NumPy's current print options (which functx arrays print with).

    Arguments:
      (none)
    Returns:
      A dict.

    Example:
      >>> import functx.numpy as jnp
      >>> print(jnp.get_printoptions()["precision"])
      8
    """
    return np.get_printoptions()


def set_printoptions(*args, **kwargs):
    """Set NumPy's print options (which functx arrays print with).

    Arguments:
      *args, **kwargs: NumPy's ``set_printoptions`` arguments.
    Returns:
      None.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.set_printoptions(precision=8)
    """
    np.set_printoptions(*args, **kwargs)


# --- dtype names ----------------------------------------------------------------------------------

csingle = more._scalar_type(dtypes.complex64, 0.5)
cdouble = more._scalar_type(dtypes.complex128, 0.5)
complex64, complex128 = csingle, cdouble  # (callable scalar types, as jnp.float32; JAX's names)
complex_ = cdouble
uint = more.uint64
int4 = more._scalar_type(dtypes.int4, 3)
uint4 = more._scalar_type(dtypes.uint4, 3)
int2 = more._scalar_type(dtypes.int2, 1)
int1 = ml_dtypes.int1
uint1 = ml_dtypes.uint1
uint2 = more._scalar_type(dtypes.uint2, 3)
float8_e4m3fn = more._scalar_type(dtypes.float8_e4m3fn, 0.5)
float8_e4m3fnuz = more._scalar_type(dtypes.float8_e4m3fnuz, 0.5)
float8_e4m3b11fnuz = more._scalar_type(dtypes.float8_e4m3b11fnuz, 0.5)
float8_e5m2 = more._scalar_type(dtypes.float8_e5m2, 0.5)
float8_e5m2fnuz = more._scalar_type(dtypes.float8_e5m2fnuz, 0.5)
float8_e4m3 = more._scalar_type(dtypes.float8_e4m3, 0.5)
float8_e3m4 = more._scalar_type(dtypes.float8_e3m4, 0.5)
float8_e8m0fnu = more._scalar_type(dtypes.float8_e8m0fnu, 0.5)
float4_e2m1fn = more._scalar_type(dtypes.float4_e2m1fn, 0.5)
float6_e2m3fn = ml_dtypes.float6_e2m3fn
float6_e3m2fn = ml_dtypes.float6_e3m2fn
character = np.character
flexible = np.flexible
object_ = np.object_
ComplexWarning = np.exceptions.ComplexWarning


def save(file, arr, allow_pickle=True):
    """Write an array to a ``.npy`` file (``jax.numpy.save``, which is NumPy's ``save``): the
    array's data is copied to the host.

    Arguments:
      file: a file name or an open binary file (``.npy`` is appended to a name without it).
      arr: an array (functx, NumPy) or anything ``numpy.asarray`` takes.
      allow_pickle: whether object arrays may be pickled (NumPy's argument).
    Returns:
      None.

    Example:
      >>> import io
      >>> import functx.numpy as jnp
      >>> buf = io.BytesIO()
      >>> jnp.save(buf, jnp.arange(3))
      >>> _ = buf.seek(0)
      >>> jnp.load(buf)
      Array([0, 1, 2], dtype=int32)
    """
    np.save(file, np.asarray(arr), allow_pickle=allow_pickle)


def savez(file, *args, **kwds):
    """Write several arrays to an uncompressed ``.npz`` archive (``jax.numpy.savez``, which is
    NumPy's ``savez``).

    Arguments:
      file: a file name or an open binary file.
      *args: arrays stored as ``arr_0``, ``arr_1``, ...
      **kwds: arrays stored under their keyword names.
    Returns:
      None.

    Example:
      >>> import io
      >>> import functx.numpy as jnp
      >>> buf = io.BytesIO()
      >>> jnp.savez(buf, w=jnp.ones(2))
      >>> _ = buf.seek(0)
      >>> jnp.load(buf)["w"]
      array([1., 1.], dtype=float32)
    """
    np.savez(file, *[np.asarray(a) for a in args], **{k: np.asarray(v) for k, v in kwds.items()})


def load(file, *args, **kwargs):
    """Read an array from a ``.npy`` file as a functx Array (``jax.numpy.load``): NumPy's
    ``load``, whose array result becomes an Array (a bfloat16 array NumPy wrote as two-byte
    void values is read back as bfloat16, as JAX does); an ``.npz`` archive or a pickled object
    comes back as NumPy gives it.

    Arguments:
      file: a file name or an open binary file.
      *args, **kwargs: NumPy's ``load`` arguments (``mmap_mode``, ``allow_pickle``, ...).
    Returns:
      an Array for an ``.npy`` file of a numeric dtype, else NumPy's result.

    Example:
      >>> import io
      >>> import functx.numpy as jnp
      >>> buf = io.BytesIO()
      >>> jnp.save(buf, jnp.array([1.5, 2.5], dtype=jnp.bfloat16))
      >>> _ = buf.seek(0)
      >>> jnp.load(buf)
      Array([1.5, 2.5], dtype=bfloat16)
    """
    out = np.load(file, *args, **kwargs)
    if not isinstance(out, np.ndarray) or out.dtype == object:
        return out
    if out.dtype == np.dtype("V2"):  # (how NumPy writes ml_dtypes' bfloat16)
        out = out.view(ml_dtypes.bfloat16)
    return jnp.asarray(out)
