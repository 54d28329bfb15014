"""``functx.test_util.check_grads``: JAX's check of jvp and vjp against finite differences."""

from __future__ import annotations

import numpy as np

from functx import dtypes
from functx.array import Array, is_python_scalar
from functx.tracing import (
    get_aval as get_aval,  # (public here too: in __all__)
    tree_flatten,
    tree_unflatten,
)
from functx.transforms.jvp import jvp
from functx.transforms.vjp import vjp

_DEFAULT_TOL = {
    dtypes.float16: 1e-1,
    dtypes.bfloat16: 1e-1,
    dtypes.float32: 2e-2,
    dtypes.float64: 1e-5,
    dtypes.complex64: 2e-2,
    dtypes.complex128: 1e-5,
}
EPS = 1e-4


def _tol(leaves, given):
    """The loosest default tolerance over the dtypes of ``leaves`` (inputs and outputs: a float32
    output of a float64 function is only as exact as float32)."""
    if given is not None and not isinstance(given, dict):
        return given
    # a dict maps dtypes to tolerances (JAX's form); dtypes it does not name take the default
    by_dtype = {np.dtype(k): v for k, v in (given or {}).items()}
    return max(
        (by_dtype.get(_dtype(x), _DEFAULT_TOL.get(_dtype(x), 1e-5)) for x in leaves),
        default=1e-5,
    )


def _dtype(x):
    """The functx dtype of a leaf (a Python float is a weakly typed float32, as in functx)."""
    return x.dtype if isinstance(x, (np.ndarray, np.generic)) else get_aval(x).dtype


def _np(x):
    """A leaf as float64 (complex128 for complex leaves); None for float0 ones."""
    dt = np.asarray(x).dtype
    if dt == dtypes.float0:
        return None
    return np.asarray(x, dtype=np.complex128 if dt.kind == "c" else np.float64)


def _rand_like(rng, x):
    a = get_aval(x)
    if a.dtype in dtypes.COMPLEX:
        return (rng.standard_normal(a.shape) + 1j * rng.standard_normal(a.shape)).astype(a.dtype)
    if a.dtype not in dtypes.FLOATS:
        return np.zeros(a.shape, dtypes.float0)
    return rng.standard_normal(a.shape).astype(a.dtype)


def _inner(a_leaves, b_leaves):
    """The real part of the bilinear pairing ``sum(a * b)``: with JAX's convention for complex
    reverse mode (transposes without conjugation), ``<vjp(ct), v> == <ct, J v>`` in it."""
    total = 0.0
    for a, b in zip(a_leaves, b_leaves):
        a, b = _np(a), _np(b)
        if a is not None and b is not None:
            total += float(np.real(np.sum(a * b)))
    return total


def _add_scaled(args_leaves, t_leaves, eps):
    """``x + eps * t`` per leaf, as functx Arrays of x's type (so ``f`` may use ``x.at[...]``)."""
    out = []
    for x, t in zip(args_leaves, t_leaves):
        a = get_aval(x)
        if not dtypes.is_inexact(a.dtype):
            out.append(x)
            continue
        v = (_np(x) + eps * _np(t)).astype(a.dtype)
        out.append(v.item() if is_python_scalar(x) else Array._new(np.asarray(v), a))
    return out


def numerical_jvp(f, primals, tangents, eps=EPS):
    """Central difference ``(f(x + eps t) - f(x - eps t)) / (2 eps)`` (leaves as float64).

    Arguments:
      f: a function of the ``primals``.
      primals: a tuple of arguments (arrays, Python scalars, pytrees of them).
      tangents: a tuple of the same structure: the direction ``t``.
      eps: the finite-difference step (default 1e-4).
    Returns:
      A list with one float64 (complex128) NumPy array per output leaf of ``f`` (None for an
      output leaf with no tangent, such as an integer one).
    Example:
      >>> import numpy as np
      >>> from functx.test_util import numerical_jvp
      >>> [d] = numerical_jvp(lambda x: x**2, (np.float32(3.0),), (np.float32(1.0),), eps=1e-2)
      >>> print(f"{float(d):.3f}")
      6.000
    """
    p_leaves, tree = tree_flatten(tuple(primals))
    t_leaves = tree_flatten(tuple(tangents))[0]
    hi = f(*tree_unflatten(tree, _add_scaled(p_leaves, t_leaves, eps)))
    lo = f(*tree_unflatten(tree, _add_scaled(p_leaves, t_leaves, -eps)))
    hi_l, lo_l = tree_flatten(hi)[0], tree_flatten(lo)[0]
    return [
        (_np(h) - _np(l)) / (2 * eps) if _np(h) is not None else None for h, l in zip(hi_l, lo_l)
    ]


def _assert_close(a, b, atol, rtol, what):
    for x, y in zip(a, b):
        if x is None or y is None:
            continue
        np.testing.assert_allclose(_np(x), _np(y), atol=atol, rtol=rtol, err_msg=what)


def check_jvp(f, args, atol=None, rtol=None, eps=EPS, rng=None):
    """Check ``jvp(f)`` at ``args`` along a random tangent against a central finite difference.

    Arguments:
      f: a function of pytrees of arrays.
      args: a tuple of arguments.
      atol, rtol: tolerances (default: by the dtypes present, as in ``check_grads``).
      eps: the finite-difference step (default 1e-4).
      rng: a ``numpy.random.Generator`` for the tangent (default: seeded with 0).
    Returns:
      None; raises ``AssertionError`` when the derivatives differ.

    Differences from JAX: JAX's ``check_jvp(f, f_jvp, args, ...)`` takes the jvp function to
    check as its second argument; functx's takes ``f`` and ``args`` and checks ``functx.jvp(f)``
    (an ``rng`` argument replaces ``err_msg``). ``check_grads`` has JAX's signature.

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> from functx.test_util import check_jvp
      >>> check_jvp(jnp.tanh, (np.array([0.1, 0.7]),))
    """
    rng = rng or np.random.default_rng(0)
    leaves, tree = tree_flatten(tuple(args))
    t_leaves = [_rand_like(rng, x) for x in leaves]
    tangents = tree_unflatten(tree, t_leaves)
    out, t_out = jvp(f, tuple(args), tuple(tangents))
    lv = leaves + tree_flatten(out)[0]
    atol, rtol = _tol(lv, atol), _tol(lv, rtol)
    num = numerical_jvp(f, args, tangents, eps)
    _assert_close(tree_flatten(t_out)[0], num, atol, rtol, "jvp vs finite differences")


def check_vjp(f, args, atol=None, rtol=None, eps=EPS, rng=None, check_transpose=True):
    """Check ``vjp(f)`` at ``args``: ``<vjp(ct), v>`` against ``<ct, J v>`` with ``J v`` by a
    central finite difference, for a random cotangent ``ct`` and direction ``v``.

    Arguments:
      f: a function of pytrees of arrays.
      args: a tuple of arguments.
      atol, rtol: tolerances (default: by the dtypes present, as in ``check_grads``).
      eps: the finite-difference step (default 1e-4).
      rng: a ``numpy.random.Generator`` for ``ct`` and ``v`` (default: seeded with 1).
      check_transpose: also check that the vjp is the transpose of ``functx.jvp(f)``.
    Returns:
      None; raises ``AssertionError`` when the derivatives differ.

    Differences from JAX: JAX's ``check_vjp(f, f_vjp, args, ...)`` takes the vjp function to
    check as its second argument; functx's takes ``f`` and ``args`` and checks ``functx.vjp(f)``
    (``rng`` and ``check_transpose`` replace ``err_msg``). ``check_grads`` has JAX's signature.

    Example:
      >>> import numpy as np
      >>> import functx.numpy as jnp
      >>> from functx.test_util import check_vjp
      >>> check_vjp(lambda x: jnp.sum(x**3), (np.array([0.5, -1.0]),))
    """
    rng = rng or np.random.default_rng(1)
    leaves, tree = tree_flatten(tuple(args))
    out, f_vjp = vjp(f, *args)
    out_leaves, out_tree = tree_flatten(out)
    atol, rtol = _tol(leaves + out_leaves, atol), _tol(leaves + out_leaves, rtol)
    ct_leaves = [_rand_like(rng, o) for o in out_leaves]
    cts_in = f_vjp(tree_unflatten(out_tree, ct_leaves))
    v_leaves = [_rand_like(rng, x) for x in leaves]
    v = tree_unflatten(tree, v_leaves)
    num = numerical_jvp(f, args, v, eps)
    lhs = _inner(tree_flatten(cts_in)[0], v_leaves)
    rhs = _inner(ct_leaves, num)
    np.testing.assert_allclose(
        lhs,
        rhs,
        atol=atol * max(1.0, abs(rhs)),
        rtol=rtol,
        err_msg="vjp vs finite differences: <vjp(ct), v> != <ct, J v>",
    )
    if check_transpose:
        _, t_out = jvp(f, tuple(args), tuple(v))
        ad = _inner(ct_leaves, tree_flatten(t_out)[0])
        np.testing.assert_allclose(
            lhs,
            ad,
            atol=atol * max(1.0, abs(ad)),
            rtol=rtol,
            err_msg="vjp is not the transpose of jvp",
        )


def check_grads(f, args, order, modes=("fwd", "rev"), atol=None, rtol=None, eps=None):
    """Check the derivatives of ``f`` at ``args`` against central finite differences (JAX's
    ``check_grads``).

    Arguments:
      f: a function of pytrees of arrays (integer and bool leaves are data, not differentiated).
      args: a tuple of arguments (NumPy arrays, functx Arrays, Python scalars, pytrees of them).
      order: check derivatives up to this order (jvp of jvp, vjp of vjp, ...).
      modes: ``"fwd"`` checks ``jvp`` along random tangents, ``"rev"`` checks ``vjp`` with random
        cotangents (and, with both, that vjp is the transpose of jvp).
      atol, rtol, eps: tolerances (default: by the dtypes of the inputs and outputs: 1e-5 for
        float64, 2e-2 for float32; a dict maps dtypes to tolerances, as in JAX, the loosest of
        the dtypes present counting) and the finite-difference step (default 1e-4).
    Returns:
      None; raises ``AssertionError`` naming the failed check.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> from functx.test_util import check_grads
      >>> check_grads(functx.numpy.sin, (np.array([0.5, 1.0]),), order=2)
    """
    eps = eps or EPS
    leaves, tree = tree_flatten(tuple(args))
    args = tree_unflatten(
        tree,
        [Array.from_value(x) if isinstance(x, (np.ndarray, np.generic)) else x for x in leaves],
    )
    rng = np.random.default_rng(0)

    def _check(fn, fargs, k):
        if "fwd" in modes:
            check_jvp(fn, fargs, atol, rtol, eps, rng)
            if k > 1:
                leaves, tree = tree_flatten(fargs)
                ts = tree_unflatten(tree, [_rand_like(rng, x) for x in leaves])
                _check(lambda *a: jvp(fn, a, tuple(ts))[1], fargs, k - 1)
        if "rev" in modes:
            check_vjp(fn, fargs, atol, rtol, eps, rng, check_transpose="fwd" in modes)
            if k > 1:
                out = fn(*fargs)
                o_leaves, o_tree = tree_flatten(out)
                ct = tree_unflatten(o_tree, [_rand_like(rng, o) for o in o_leaves])
                _check(lambda *a: vjp(fn, *a)[1](ct), fargs, k - 1)

    _check(f, args, order)


__all__ = ["check_grads", "check_jvp", "check_vjp", "numerical_jvp", "get_aval"]
