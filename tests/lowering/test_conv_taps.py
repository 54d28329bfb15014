"""A convolution's sums in a C++ program as ``conv_taps`` / ``conv_taps_dw`` steps
(``functx/lowering/cpp/conv.py``, rendered by ``cpp/dot.py``): which sums ``jit`` rewrites (the
forward, the input gradient, the kernel gradient), and the values against JAX (computed here,
in one ``jax.jit`` per test) and against the eager composite, in both x64 modes, with
``value_and_grad`` under ``jit``."""

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
    ((2, 9, 7, 8), (3, 3, 8, 32), dict(padding="SAME"), True),
    ((1, 6, 9, 10), (2, 4, 10, 8), dict(padding=[(2, 1), (0, 3)]), True),
    ((2, 8, 8, 8), (3, 3, 8, 8), dict(padding="SAME", rhs_dilation=(2, 1)), True),
    ((2, 200, 9), (5, 9, 16), dict(padding="VALID"), True),  # (a line of 33 tiles: 2 items)
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
    ``grad``, also ``value_and_grad`` of a 1-D convolution (its forward, which the loss reads,
    its input gradient and its kernel gradient are steps)."""
    args, f = _convs(flax, dtype, cases)
    _, jf = _convs(jax.lax, dtype, cases)
    x = RNG.standard_normal((2, 7, 16)).astype(dtype)
    w = RNG.standard_normal((3, 16, 16)).astype(dtype)
    g = RNG.standard_normal((2, 7, 16)).astype(dtype)

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
    composite, for forward sums and a gradient's input and kernel sums; disabled, the rewrite
    returns the program itself."""
    args, f = _convs(flax, np.float64)
    closed = functx.make_jaxpr(f)(*args)
    new = cpp_conv.fuse_conv_taps(closed)
    assert sum(e.prim is cpp_conv.conv_taps_p for e in new.jaxpr.eqns) == 5
    got = eval_jaxpr(new.jaxpr, new.consts, *args)
    for a, b in zip(got, f(*args)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12)
    # the gradient (float32: the kernel gradient's step is float32 only): the forward (read by
    # the loss), the input gradient's and the kernel gradient's sums
    x, w = (a.astype(np.float32) for a in args[:2])
    grad = functx.grad(lambda x, w: functx.numpy.sum(f(x, w, *args[2:])[0] ** 2), (0, 1))
    closed_g = functx.make_jaxpr(grad)(x, w)
    new_g = cpp_conv.fuse_conv_taps(closed_g)
    assert sum(e.prim is cpp_conv.conv_taps_p for e in new_g.jaxpr.eqns) == 2
    assert sum(e.prim is cpp_conv.conv_taps_dw_p for e in new_g.jaxpr.eqns) == 1
    for a, b in zip(eval_jaxpr(new_g.jaxpr, new_g.consts, x, w), grad(x, w)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-4)
    try:
        cpp_conv.ENABLED = False
        assert cpp_conv.fuse_conv_taps(closed) is closed
    finally:
        cpp_conv.ENABLED = True


def test_gradient_steps_read_the_cotangent_and_write_the_cropped_input_gradient():
    """In the gradient of a 'SAME' convolution, the input gradient's step computes only the rows
    that the crop after it keeps (no crop, no wider result) and the kernel gradient's step reads
    the cotangent as the program's input (no reshaped copy); the values stay the composite's."""
    x = RNG.standard_normal((2, 9, 7, 8)).astype(np.float32)
    w = RNG.standard_normal((3, 3, 8, 16)).astype(np.float32)
    g = RNG.standard_normal((2, 9, 7, 16)).astype(np.float32)

    def loss(x, w, g):
        y = flax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=_DN[4])
        return functx.numpy.sum(y * g)

    grad = functx.grad(loss, (0, 1))
    new = cpp_conv.fuse_conv_taps(functx.make_jaxpr(grad)(x, w, g)).jaxpr
    (dx,) = [e for e in new.eqns if e.prim is cpp_conv.conv_taps_p]
    assert dx.outvars[0].aval.shape == (2 * 9 * 7, 8)
    pads = [e.params["padding_config"] for e in new.eqns if e.prim.name == "pad"]
    assert all(lo >= 0 and hi >= 0 for cfg in pads for lo, hi, _ in cfg)
    (dw,) = [e for e in new.eqns if e.prim is cpp_conv.conv_taps_dw_p]
    assert dw.invars[1] is new.invars[2]
    for a, b in zip(eval_jaxpr(new, [], x, w, g), grad(x, w, g)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float16, np.int32])
def test_other_dtypes_keep_their_products(dtype, no_x64):
    x = np.ones((1, 5, 5, 8), dtype)
    w = np.ones((3, 3, 8, 8), dtype)
    closed = functx.make_jaxpr(
        lambda x, w: flax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=_DN[4])
    )(x, w)
    assert cpp_conv.fuse_conv_taps(closed) is closed


def test_long_sums_of_products_are_walked_without_recursion():
    xs = [np.full((2, 2), 0.5, np.float32)] * 1200  # (deeper than Python's recursion limit)
    closed = functx.make_jaxpr(lambda *xs: sum(x @ x for x in xs))(*xs)
    assert cpp_conv.fuse_conv_taps(closed) is closed
