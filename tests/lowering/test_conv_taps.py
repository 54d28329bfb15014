"""A convolution's forward sum in a C++ program as one ``conv_taps`` step
(``functx/lowering/cpp/conv.py``, rendered by ``cpp/dot.py``'s ``_conv_taps``): which sums
``jit`` rewrites, and the values against JAX (computed here, in one ``jax.jit`` per test) and
against the eager composite, in both x64 modes, with ``value_and_grad`` (which reads the
forward) under ``jit``."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import functx
import functx.lax as flax
from functx.interpreter import eval_jaxpr
from functx.lowering.cpp import conv as cpp_conv

RNG = np.random.default_rng(19)

# (input shape, kernel shape, keyword arguments, rewritten?)
_CASES = [
    ((2, 9, 7, 8), (3, 3, 8, 16), dict(padding="SAME"), True),
    ((1, 6, 9, 10), (2, 4, 10, 8), dict(padding=[(2, 1), (0, 3)]), True),
    ((2, 8, 8, 8), (3, 3, 8, 8), dict(padding="SAME", rhs_dilation=(2, 1)), True),
    ((3, 20, 9), (5, 9, 12), dict(padding="VALID"), True),
    ((1, 4, 5, 6, 8), (2, 3, 2, 8, 8), dict(padding="SAME"), True),
    ((2, 9, 7, 8), (3, 3, 8, 16), dict(padding="SAME", window_strides=(2, 1)), False),
    ((2, 9, 7, 4), (3, 3, 4, 16), dict(padding="SAME"), False),  # (few input channels)
]
_DN = {3: ("NWC", "WIO", "NWC"), 4: ("NHWC", "HWIO", "NHWC"), 5: ("NDHWC", "DHWIO", "NDHWC")}


def _convs(lax, dtype, cases=_CASES):
    args, fns = [], []
    for xs, ws, kw, _ in cases:
        args += [RNG.standard_normal(xs).astype(dtype), RNG.standard_normal(ws).astype(dtype)]
        kw = {"window_strides": (1,) * (len(xs) - 2), "dimension_numbers": _DN[len(xs)], **kw}
        fns.append(lambda x, w, kw=kw: lax.conv_general_dilated(x, w, **kw))
    return args, lambda *a: [f(a[2 * i], a[2 * i + 1]) for i, f in enumerate(fns)]


def _check(dtype, tol, cases, grad=False):
    """jit (C++) against JAX in one program each (the rewrite's count and the eager composite
    are checked without compiling: ``test_rewrite_and_reference_without_compiling``); with
    ``grad``, also ``value_and_grad`` of a 1-D convolution (which reads the forward)."""
    args, f = _convs(flax, dtype, cases)
    _, jf = _convs(jax.lax, dtype, cases)
    x, w = (
        RNG.standard_normal((2, 7, 8)).astype(dtype),
        RNG.standard_normal((3, 8, 8)).astype(dtype),
    )
    g = RNG.standard_normal((2, 7, 8)).astype(dtype)

    def both(lax, np_, grad_fn, f):
        def loss(x, w):
            y = lax.conv_general_dilated(x, w, (1,), "SAME", dimension_numbers=_DN[3])
            return np_.sum(np_.tanh(y) * g)

        return lambda *a: (f(*a[:-2]), grad_fn(loss, (0, 1))(*a[-2:]) if grad else ())

    got = functx.jit(both(flax, functx.numpy, functx.value_and_grad, f))(*args, x, w)
    want = jax.jit(both(jax.lax, jax.numpy, jax.value_and_grad, jf))(*args, x, w)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def test_forward_and_value_and_grad_float32_default_mode(no_x64):
    _check(np.float32, 2e-4, [_CASES[i] for i in (0, 3)], grad=True)


def test_forward_sums_float64():
    _check(np.float64, 1e-11, [_CASES[i] for i in (1, 2, 4)])


def test_rewrite_and_reference_without_compiling():
    """The rewritten Jaxpr, run by the interpreter (``conv_taps``' NumPy reference), equals the
    composite; disabled, the rewrite returns the program itself."""
    args, f = _convs(flax, np.float64)
    closed = functx.make_jaxpr(f)(*args)
    new = cpp_conv.fuse_conv_taps(closed)
    assert sum(e.prim is cpp_conv.conv_taps_p for e in new.jaxpr.eqns) == 5
    got = eval_jaxpr(new.jaxpr, new.consts, *args)
    for a, b in zip(got, f(*args)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)
    try:
        cpp_conv.ENABLED = False
        assert cpp_conv.fuse_conv_taps(closed) is closed
    finally:
        cpp_conv.ENABLED = True


@pytest.mark.parametrize("dtype", [np.float16, np.int32])
def test_other_dtypes_keep_their_products(dtype, no_x64):
    x = np.ones((1, 5, 5, 8), dtype)
    w = np.ones((3, 3, 8, 8), dtype)
    closed = functx.make_jaxpr(
        lambda x, w: flax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=_DN[4])
    )(x, w)
    assert cpp_conv.fuse_conv_taps(closed) is closed
