"""jvp and the per-primitive derivative rules: every primitive of the registry either has a jvp rule
(checked here with ``check_grads`` of order 2, forward and reverse, in float64, against finite
differences) or is declared non-differentiable (checked to give zero derivatives, as in JAX); every
primitive a jvp rule applies to a tangent has a transpose rule; jvp's API against ``jax.jvp``."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functx
import functx.numpy as fnp
from functx import lax, primitives as P
from functx.errors import FunctxTypeError, UnsupportedError
from functx.test_util import check_grads
from functx.transforms import jvp as J, linearize as L, transpose as T

jax = pytest.importorskip("jax")
jnp = jax.numpy

F32, F64, I32 = np.float32, np.float64, np.int32


def _jgrad(f, *a, **kw):
    """jax.grad, jit-compiled (JAX's eager transforms dispatch slowly)."""
    return jax.jit(jax.grad(f, *a, **kw))


def _jjvp(f, primals, tangents):
    return jax.jit(lambda p, t: jax.jvp(f, p, t))(primals, tangents)


def _lineno():
    return inspect.currentframe().f_back.f_lineno


# --- The table: per primitive, how to make differentiable arguments in its domain ---------------
# ``make(rng, shape)`` returns (differentiable float64 args, fixed args); the function checked is
# ``lambda *d: prim.bind(*merge(d, fixed), **params)``. ``fixed`` holds integer operands (indices,
# predicates) as {position: value}.
@dataclass
class Case:
    make: Callable
    params: dict = field(default_factory=dict)
    shapes: bool = True  # elementwise: hypothesis draws the shape
    fn: Callable | None = None  # fn(fixed) -> the function of the differentiable args (else bind)
    modes: tuple = ("fwd", "rev")


def _u(lo, hi):
    """Uniform values in [lo, hi]."""
    return lambda rng, s: rng.uniform(lo, hi, s)


def _away(lo, hi, gap):
    """Uniform values in [lo, hi] at least ``gap`` away from 0 (kinks and poles live there)."""
    return lambda rng, s: (
        rng.choice([-1.0, 1.0], s) * rng.uniform(gap, hi, s)
        if lo < 0
        else rng.uniform(max(lo, gap), hi, s)
    )


def _unary(gen, **params):
    return [Case(lambda rng, s: ([gen(rng, s)], {}), params)]


def _binary(gx, gy):
    """Both operands of one shape, and each operand in turn a rank-0 one that broadcasts."""
    return [
        Case(lambda rng, s: ([gx(rng, s), gy(rng, s)], {})),
        Case(lambda rng, s: ([gx(rng, s), gy(rng, ())], {})),
        Case(lambda rng, s: ([gx(rng, ()), gy(rng, s)], {})),
    ]


def _fixed(make, params=None):
    return [Case(make, params or {}, shapes=False)]


def _distinct(rng, shape, lo=-2.0, hi=2.0):
    """Values at least 0.05 apart (no ties: max/min/sort are smooth there)."""
    n = int(np.prod(shape, dtype=np.int64))
    grid = np.linspace(lo, hi, max(n, 2) * 2)
    return rng.permutation(grid)[:n].reshape(shape)


def _idx(rng, shape, lo, hi):
    return rng.integers(lo, hi, shape).astype(I32)


def _perm_idx(rng, n, k):
    return rng.permutation(n)[:k].astype(I32).reshape(k, 1)


N = np.random.default_rng(0).standard_normal  # for readability below only

CASES: dict[str, list[Case]] = {
    "neg": _unary(_u(-2, 2)),
    "abs": _unary(_away(-2, 2, 0.1)),
    "exp": _unary(_u(-2, 2)),
    "exp2": _unary(_u(-2, 2)),
    "log": _unary(_u(0.3, 3)),
    "log1p": _unary(_u(-0.6, 3)),
    "expm1": _unary(_u(-2, 2)),
    "sqrt": _unary(_u(0.3, 3)),
    "rsqrt": _unary(_u(0.3, 3)),
    "cbrt": _unary(_away(-2, 2, 0.3)),
    "sin": _unary(_u(-3, 3)),
    "cos": _unary(_u(-3, 3)),
    "tan": _unary(_u(-1.2, 1.2)),
    "asin": _unary(_u(-0.8, 0.8)),
    "acos": _unary(_u(-0.8, 0.8)),
    "atan": _unary(_u(-3, 3)),
    "sinh": _unary(_u(-2, 2)),
    "cosh": _unary(_u(-2, 2)),
    "tanh": _unary(_u(-2, 2)),
    "asinh": _unary(_u(-3, 3)),
    "acosh": _unary(_u(1.2, 3)),
    "atanh": _unary(_u(-0.8, 0.8)),
    "logistic": _unary(_u(-4, 4)),
    "erf": _unary(_u(-2, 2)),
    "erfc": _unary(_u(-2, 2)),
    "lgamma": _unary(_u(0.5, 4)),
    "digamma": _unary(_u(0.5, 4)),
    "erf_inv": _unary(_u(-0.8, 0.8)),
    # float64's own format: the identity, so finite differences see the linear derivative
    "reduce_precision": _unary(_u(-2, 2), exponent_bits=11, mantissa_bits=52),
    "bessel_i0e": _unary(_away(-3, 3, 0.2)),
    "bessel_i1e": _unary(_away(-3, 3, 0.2)),
    # second order in a needs igamma_grad_a's derivative, which JAX lacks too: a stays fixed here
    # (tests/scipy/test_lax_special.py checks the first derivative in a)
    "igamma": [Case(lambda rng, s: ([rng.uniform(0.5, 3, s)], {0: rng.uniform(0.5, 3, s)}))],
    "igammac": [Case(lambda rng, s: ([rng.uniform(0.5, 3, s)], {0: rng.uniform(0.5, 3, s)}))],
    "polygamma": [
        Case(lambda rng, s: ([rng.uniform(0.5, 3, s)], {0: np.float64(rng.integers(0, 3, s))}))
    ],
    "real": _unary(lambda rng, s: rng.standard_normal(s) + 1j * rng.standard_normal(s)),
    "imag": _unary(lambda rng, s: rng.standard_normal(s) + 1j * rng.standard_normal(s)),
    "conj": _unary(lambda rng, s: rng.standard_normal(s) + 1j * rng.standard_normal(s))
    + _unary(_u(-2, 2)),
    "complex": _binary(_u(-2, 2), _u(-2, 2)),
    "integer_pow": (
        _unary(_u(-2, 2), y=0)
        + _unary(_u(-2, 2), y=1)
        + _unary(_u(-2, 2), y=2)
        + _unary(_u(-2, 2), y=3)
        + _unary(_away(-2, 2, 0.3), y=-2)
    ),
    "add": _binary(_u(-2, 2), _u(-2, 2)),
    "sub": _binary(_u(-2, 2), _u(-2, 2)),
    "mul": _binary(_u(-2, 2), _u(-2, 2)),
    "div": _binary(_u(-2, 2), _away(-2, 2, 0.3)),
    # x / y stays away from integers, where rem jumps.
    "rem": _binary(
        lambda rng, s: rng.uniform(0.1, 0.4, s) + rng.integers(0, 3, s),
        lambda rng, s: np.ones(s) + rng.uniform(-0.01, 0.01, s),
    ),
    "pow": _binary(_u(0.3, 2), _u(-2, 2)),
    "max": [Case(lambda rng, s: ([_distinct(rng, s), _distinct(rng, s) + 0.025], {}))]
    + _binary(_u(-2, -1), _u(1, 2))
    + _binary(_u(1, 2), _u(-2, -1)),
    "min": [Case(lambda rng, s: ([_distinct(rng, s), _distinct(rng, s) + 0.025], {}))]
    + _binary(_u(-2, -1), _u(1, 2))
    + _binary(_u(1, 2), _u(-2, -1)),
    "atan2": _binary(_away(-2, 2, 0.3), _away(-2, 2, 0.3)),
    "select_n": [
        Case(
            lambda rng, s: (
                [rng.standard_normal(s), rng.standard_normal(s)],
                {0: rng.random(s) < 0.5},
            )
        ),
        Case(
            lambda rng, s: (
                [rng.standard_normal(s), rng.standard_normal(s)],
                {0: np.bool_(rng.random() < 0.5)},
            )
        ),
        Case(lambda rng, s: ([rng.standard_normal(s)] * 3, {0: _idx(rng, s, 0, 3)})),
    ],
    "convert_element_type": [
        Case(
            lambda rng, s: ([rng.standard_normal(s)], {}),
            {"new_dtype": np.dtype(F64), "weak_type": True},
        ),
        Case(
            lambda rng, s: ([rng.standard_normal(s)], {}),
            {"new_dtype": np.dtype(F32), "weak_type": False},
        ),
        Case(
            lambda rng, s: ([rng.standard_normal(s).astype(F32)], {}),
            {"new_dtype": np.dtype(F64), "weak_type": False},
        ),
    ],
    "reduce_sum": [
        Case(lambda rng, s: ([rng.standard_normal((2, 3, 4))], {}), {"axes": ax}, False)
        for ax in [(0,), (1, 2), (0, 1, 2), ()]
    ],
    "reduce_prod": [
        Case(lambda rng, s: ([rng.uniform(0.5, 1.5, (2, 3, 4))], {}), {"axes": ax}, False)
        for ax in [(0,), (1, 2), (0, 1, 2), ()]
    ]
    # with zeros: one, and two in a row (the gradient is then exactly the product of the others)
    + _fixed(lambda rng, s: ([np.array([[0.0, 2.0, 3.0], [1.5, 0.0, 0.0]])], {}), {"axes": (1,)})
    + _fixed(lambda rng, s: ([np.zeros((2, 0))], {}), {"axes": (1,)}),
    "reduce_max": [
        Case(lambda rng, s: ([_distinct(rng, (2, 3, 4))], {}), {"axes": ax}, False)
        for ax in [(0,), (1, 2), (0, 1, 2)]
    ],
    "reduce_min": [
        Case(lambda rng, s: ([_distinct(rng, (2, 3, 4))], {}), {"axes": ax}, False)
        for ax in [(0,), (1, 2), (0, 1, 2)]
    ],
    "broadcast_in_dim": [
        Case(
            lambda rng, s: ([rng.standard_normal((3,))], {}),
            {"shape": (2, 3, 4), "broadcast_dimensions": (1,)},
            False,
        ),
        Case(
            lambda rng, s: ([rng.standard_normal((1, 3))], {}),
            {"shape": (5, 3), "broadcast_dimensions": (0, 1)},
            False,
        ),
        Case(
            lambda rng, s: ([rng.standard_normal(())], {}),
            {"shape": (2, 3), "broadcast_dimensions": ()},
            False,
        ),
    ],
    "reshape": [
        Case(lambda rng, s: ([rng.standard_normal((2, 3, 4))], {}), {"new_sizes": (6, 4)}, False),
        Case(lambda rng, s: ([rng.standard_normal(())], {}), {"new_sizes": (1, 1)}, False),
    ],
    "transpose": [
        Case(
            lambda rng, s: ([rng.standard_normal((2, 3, 4))], {}), {"permutation": (2, 0, 1)}, False
        )
    ],
    "squeeze": [
        Case(
            lambda rng, s: ([rng.standard_normal((2, 1, 3, 1))], {}), {"dimensions": (1, 3)}, False
        )
    ],
    "expand_dims": [
        Case(lambda rng, s: ([rng.standard_normal((2, 3))], {}), {"dimensions": (0, 2)}, False)
    ],
    "rev": [
        Case(lambda rng, s: ([rng.standard_normal((3, 4))], {}), {"dimensions": d}, False)
        for d in [(1,), (0, 1)]
    ],
    "slice": [
        Case(
            lambda rng, s: ([rng.standard_normal((5, 6))], {}),
            {"start_indices": (1, 0), "limit_indices": (4, 6), "strides": (2, 1)},
            False,
        ),
        Case(
            lambda rng, s: ([rng.standard_normal((5, 6))], {}),
            {"start_indices": (0, 2), "limit_indices": (5, 3), "strides": None},
            False,
        ),
        Case(
            lambda rng, s: ([rng.standard_normal((7,))], {}),
            {"start_indices": (1,), "limit_indices": (7,), "strides": (3,)},
            False,
        ),
    ],
    "concatenate": [
        Case(
            lambda rng, s: (
                [
                    rng.standard_normal((2, 3)),
                    rng.standard_normal((1, 3)),
                    rng.standard_normal((4, 3)),
                ],
                {},
            ),
            {"dimension": 0},
            False,
        ),
        Case(
            lambda rng, s: ([rng.standard_normal((2, 1)), rng.standard_normal((2, 2))], {}),
            {"dimension": 1},
            False,
        ),
    ],
    "pad": [
        Case(
            lambda rng, s: ([rng.standard_normal((3, 4)), rng.standard_normal(())], {}),
            {"padding_config": ((1, 2, 0), (0, 1, 1))},
            False,
        ),
        Case(
            lambda rng, s: ([rng.standard_normal((3, 4)), rng.standard_normal(())], {}),
            {"padding_config": ((-1, 1, 0), (2, -1, 1))},
            False,
        ),
        Case(
            lambda rng, s: ([rng.standard_normal((3,)), rng.standard_normal(())], {}),
            {"padding_config": ((0, 0, 2),)},
            False,
        ),
    ],
    "dynamic_slice": [
        Case(
            lambda rng, s: (
                [rng.standard_normal((5, 6))],
                {1: _idx(rng, (), -2, 8), 2: _idx(rng, (), -2, 8)},
            ),
            {"slice_sizes": (2, 3)},
            False,
        ),
        Case(
            lambda rng, s: ([rng.standard_normal((5,))], {1: _idx(rng, (), -2, 8)}),
            {"slice_sizes": (5,)},
            False,
        ),
    ],
    "dynamic_update_slice": [
        Case(
            lambda rng, s: (
                [rng.standard_normal((5, 6)), rng.standard_normal((2, 3))],
                {2: _idx(rng, (), -2, 8), 3: _idx(rng, (), -2, 8)},
            ),
            {},
            False,
        ),
        Case(
            lambda rng, s: (
                [rng.standard_normal((3,)), rng.standard_normal((3,))],
                {2: _idx(rng, (), -2, 8)},
            ),
            {},
            False,
        ),
    ],
    "gather": [
        # (out of range, mode "fill" returns the fill value: a constant, not NaN, for the
        # finite differences)
        Case(
            lambda rng, s: ([rng.standard_normal((5, 4))], {1: _idx(rng, (3, 1), -1, 7)}),
            {"axes": (0,), "mode": mode, "fill_value": fill},
            False,
        )
        for mode, fill in (("clip", None), ("fill", 2.0))
    ]
    + [
        Case(
            lambda rng, s: ([rng.standard_normal((5, 4))], {1: _idx(rng, (3, 1), 0, 5)}),
            {"axes": (0,), "mode": "fill", "fill_value": None},
            False,
        ),
        Case(
            lambda rng, s: ([rng.standard_normal((5, 4, 3))], {1: _idx(rng, (2, 2, 2), 0, 3)}),
            {"axes": (0, 2), "mode": "clip", "fill_value": None},
            False,
        ),
        Case(
            lambda rng, s: ([rng.standard_normal((5, 4))], {1: _idx(rng, (1,), 0, 4)}),
            {"axes": (1,), "mode": "fill", "fill_value": 0.5},
            False,
        ),
        # repeated indices: the cotangents accumulate
        Case(
            lambda rng, s: ([rng.standard_normal((3,))], {1: np.array([[0], [2], [0]], I32)}),
            {"axes": (0,), "mode": "clip", "fill_value": None},
            False,
        ),
    ],
    "scatter": [
        Case(
            lambda rng, s: (
                [rng.standard_normal((5, 4)), rng.standard_normal((3, 4))],
                {1: _perm_idx(rng, 5, 3)},
            ),
            {"axes": (0,), "mode": "drop"},
            False,
        ),
        Case(
            lambda rng, s: (
                [rng.standard_normal((4, 5)), rng.standard_normal((2, 4))],
                {1: np.array([[1], [7]], I32)},
            ),
            {"axes": (1,), "mode": "drop"},
            False,
        ),
    ],
    "scatter_add": [
        Case(
            lambda rng, s: (
                [rng.standard_normal((5, 4)), rng.standard_normal((3, 4))],
                {1: _perm_idx(rng, 5, 3)},
            ),
            {"axes": (0,), "mode": "drop"},
            False,
        ),
    ]
    + [
        Case(
            lambda rng, s: (
                [rng.standard_normal((5,)), rng.standard_normal((4,))],
                {1: _idx(rng, (4, 1), -1, 6)},
            ),
            {"axes": (0,), "mode": m},
            False,
        )
        for m in ("drop", "clip")
    ],
    "scatter_mul": [
        Case(
            lambda rng, s: (
                [rng.standard_normal((5, 4)), _away(-2, 2, 0.3)(rng, (3, 4))],
                {1: _perm_idx(rng, 5, 3)},
            ),
            {"axes": (0,), "mode": "drop"},
            False,
        ),
        Case(
            lambda rng, s: (
                [rng.standard_normal((5,)), _away(-2, 2, 0.3)(rng, (4,))],
                {1: _idx(rng, (4, 1), 0, 5)},
            ),
            {"axes": (0,), "mode": "drop"},
            False,
        ),
    ],
    "scatter_min": [
        Case(
            lambda rng, s: (list(np.split(_distinct(rng, (8, 4)), [5])), {1: _perm_idx(rng, 5, 3)}),
            {"axes": (0,), "mode": "drop"},
            False,
        ),
    ],
    "scatter_max": [
        Case(
            lambda rng, s: (list(np.split(_distinct(rng, (8, 4)), [5])), {1: _perm_idx(rng, 5, 3)}),
            {"axes": (0,), "mode": "drop"},
            False,
        ),
    ],
    "dot_general": [
        Case(
            lambda rng, s, ls=ls, rs=rs: ([rng.standard_normal(ls), rng.standard_normal(rs)], {}),
            {"dimension_numbers": dn, "preferred_element_type": None},
            False,
        )
        for ls, rs, dn in [
            ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
            ((3, 4), (4,), (((1,), (0,)), ((), ()))),
            ((3,), (3,), (((0,), (0,)), ((), ()))),
            ((4, 3), (5, 4), (((0,), (1,)), ((), ()))),
            ((3, 2), (2, 3), (((), ()), ((), ()))),
            ((2, 3, 4), (4, 3, 2), (((1, 2), (1, 0)), ((), ()))),
        ]
    ]
    + [
        # float32 operands, a float64 product: cotangents come back in float32
        Case(
            lambda rng, s: (
                [rng.standard_normal((3, 4)).astype(F32), rng.standard_normal((4, 2)).astype(F32)],
                {},
            ),
            {
                "dimension_numbers": (((1,), (0,)), ((), ())),
                "preferred_element_type": np.dtype(F64),
            },
            False,
        ),
    ],
}


# --- Primitives that hold functions: control flow and custom derivatives, through their APIs -----
def _cond_fn(fixed):
    w = np.array([0.5, -1.5, 2.0])  # a closed-over constant becomes an operand of the equation

    def f(x, y):
        return lax.cond(
            fixed["pred"], lambda a, b: fnp.sin(a) * b + w, lambda a, b: a * a - fnp.exp(b), x, y
        )

    return f


def _switch_fn(fixed):
    def f(x, y):
        return lax.switch(
            fixed["index"],
            [lambda a, b: a * b, lambda a, b: fnp.tanh(a) + b, lambda a, b: (a - b) ** 2],
            x,
            y,
        )

    return f


def _scan_fn(fixed):
    def f(c0, xs):
        def body(c, x):
            c = fnp.sin(c) * x + c * 0.5
            return c, c * x

        return lax.scan(body, c0, xs, reverse=fixed["reverse"])

    return f


def _fori_fn(fixed):  # static bounds: a scan
    def f(x, w):
        return lax.fori_loop(0, 3, lambda i, v: fnp.tanh(v @ w) + v, x)

    return f


def _while_fn(fixed):  # forward mode only, as in JAX
    def f(x, s):
        def body(c):
            i, v = c
            return i + 1, fnp.sin(v) * s + v

        return lax.while_loop(lambda c: c[0] < fixed["n"], body, (0, x))[1]

    return f


@functx.custom_jvp
def _softplus(x):
    return fnp.log1p(fnp.exp(x))


_softplus.defjvp(lambda p, t: (_softplus(p[0]), t[0] * functx.nn.sigmoid(p[0])))


@functx.custom_vjp
def _cube(x, y):
    return x**3 * y


_cube.defvjp(
    lambda x, y: (x**3 * y, (x, y)), lambda r, g: (3 * r[0] ** 2 * r[1] * g, r[0] ** 3 * g)
)

CASES.update(
    {
        "cond": [
            Case(
                lambda rng, s, pred=pred: (
                    [rng.standard_normal(3), rng.standard_normal(3)],
                    {"pred": pred},
                ),
                fn=_cond_fn,
                shapes=False,
            )
            for pred in (True, False)
        ]
        + [
            Case(
                lambda rng, s, i=i: (
                    [rng.standard_normal((2,)), rng.standard_normal((2,))],
                    {"index": i},
                ),
                fn=_switch_fn,
                shapes=False,
            )
            for i in (0, 1, 5)
        ],
        "scan": [
            Case(
                lambda rng, s, r=r: (
                    [rng.standard_normal(2), rng.standard_normal((4, 2))],
                    {"reverse": r},
                ),
                fn=_scan_fn,
                shapes=False,
            )
            for r in (False, True)
        ]
        + [
            Case(
                lambda rng, s: ([rng.standard_normal(3), rng.standard_normal((3, 3)) / 2], {}),
                fn=_fori_fn,
                shapes=False,
            )
        ],
        "while": [
            Case(
                lambda rng, s: ([rng.standard_normal(3), rng.standard_normal(3)], {"n": 3}),
                fn=_while_fn,
                shapes=False,
                modes=("fwd",),
            )
        ],
        "custom_jvp_call": [
            Case(lambda rng, s: ([rng.standard_normal(s)], {}), fn=lambda fixed: _softplus)
        ],
        "custom_vjp_call": [
            Case(
                lambda rng, s: ([rng.standard_normal(s), rng.standard_normal(s)], {}),
                fn=lambda fixed: _cube,
                modes=("rev",),
            )
        ],
    }
)


def _linrec(a, b):  # the linear recurrence h_i = a_i h_{i-1} + b_i: a lane-wise combine
    return a[0] * b[0], b[0] * a[1] + b[1]


CASES["associative_scan"] = [
    Case(
        lambda rng, s: ([rng.standard_normal((5, 2))], {}),
        shapes=False,
        fn=lambda fixed: lambda x: lax.associative_scan(lax.add, x, axis=1),
    ),
    Case(
        lambda rng, s: ([rng.uniform(0.5, 1.5, (4, 3))], {}),
        shapes=False,
        fn=lambda fixed: lambda x: lax.associative_scan(lax.mul, x, reverse=True),
    ),
    Case(
        lambda rng, s: ([rng.uniform(-1, 1, (6, 2)), rng.standard_normal((6, 2))], {}),
        shapes=False,
        fn=lambda fixed: lambda a, b: lax.associative_scan(_linrec, (a, b)),
    ),
    Case(
        lambda rng, s: ([rng.standard_normal((5, 3))], {}),
        shapes=False,
        fn=lambda fixed: lambda x: lax.associative_scan(fnp.logaddexp, x),
    ),
    # not lane-wise: 2x2 matrix products (the jvp of the O(log n) ladder)
    Case(
        lambda rng, s: ([rng.standard_normal((4, 2, 2)) / 2], {}),
        shapes=False,
        fn=lambda fixed: lambda m: lax.associative_scan(lambda a, b: b @ a, m),
    ),
]
CASES["fft"] = [
    Case(
        lambda rng, s: ([rng.standard_normal((2, 6))], {}),
        shapes=False,
        fn=lambda fixed: lambda x: lax.fft(x, "rfft", (6,)),
    ),
    Case(
        lambda rng, s: ([rng.standard_normal((3, 4))], {}),
        shapes=False,
        fn=lambda fixed: lambda x: lax.fft(lax.fft(x, "fft", (3, 4)), "ifft", (4,)),
    ),
    Case(
        lambda rng, s: ([rng.standard_normal((3, 4))], {}),
        shapes=False,
        fn=lambda fixed: lambda x: lax.fft(lax.fft(x, "rfft", (3, 4)), "irfft", (3, 5)),
    ),
]
# checkpoint's linear half recomputes primal values (nonlinear equations, by design), so its
# reverse mode is checked by tests/test_remat.py (residuals and gradients against JAX)
CASES["checkpoint"] = [
    Case(
        lambda rng, s: ([rng.standard_normal((3,))], {}),
        shapes=False,
        fn=lambda fixed: functx.checkpoint(lambda x: fnp.sin(fnp.sin(x)) * x),
        modes=("fwd",),
    )
]
CASES["name"] = [
    Case(
        lambda rng, s: ([rng.standard_normal((3,))], {}),
        shapes=False,
        fn=lambda fixed: lambda x: functx.ad_checkpoint.checkpoint_name(fnp.sin(x), "a") * x,
    )
]
CASES["sort"] = [
    Case(
        lambda rng, s: ([rng.standard_normal((2, 5))], {}),
        shapes=False,
        fn=lambda fixed: lambda x: lax.sort(x, dimension=1),
    )
]
# a generic lax.reduce (an associative combine that is no known monoid): JAX's tree-of-pairs
# derivative
CASES["reduce"] = [
    Case(
        lambda rng, s: ([rng.standard_normal((2, 5))], {}),
        shapes=False,
        fn=lambda fixed: lambda x: lax.reduce(x, -np.inf, fnp.logaddexp, (1,)),
    )
]
CASES["top_k"] = [
    Case(
        lambda rng, s: ([rng.standard_normal((6,))], {}),
        shapes=False,
        fn=lambda fixed: lambda x: lax.top_k(x, 3)[0],
    )
]
# custom_lin (the linear half of a custom_vjp function) is checked through custom_vjp_call; the
# special functions JAX has no derivative of have declared unsupported jvps
# (tested below and in tests/scipy/test_lax_special.py).
DECLARED_UNSUPPORTED = {
    "zeta": lambda x: lax.zeta(x, 2.0),
    "igamma_grad_a": lambda x: lax.igamma_grad_a(x, 2.0),
    "random_gamma_grad": lambda x: lax.random_gamma_grad(x, 2.0),
    # lax.linalg's LAPACK reductions: no derivative in JAX either
    "hessenberg": lambda x: lax.linalg.hessenberg(fnp.outer(x, x) + 1.0)[0],
    "tridiagonal": lambda x: lax.linalg.tridiagonal(fnp.outer(x, x) + 1.0)[0],
    "schur": lambda x: lax.linalg.schur(fnp.outer(x, x) + 1.0)[0],
    "householder_product": lambda x: lax.linalg.householder_product(fnp.outer(x, x), x[:1]),
    "rng_uniform": lambda x: lax.rng_uniform(x[0], x[1], (2,)),  # stateful: no derivative in JAX
}
# the host callbacks (tests/test_debug.py): debug_callback has no outputs (its jvp calls it on the
# primals), pure_callback's and io_callback's jvps raise JAX's ValueError
NOT_IN_TABLE = {"custom_lin", "debug_callback", "pure_callback", "io_callback"} | set(
    DECLARED_UNSUPPORTED
)
# dense linear algebra: check_grads (both modes, order 2) in tests/numpy/test_linalg.py
NOT_IN_TABLE |= {"cholesky", "triangular_solve", "lu", "eigh", "qr", "svd"}
# carries Jaxprs: jvp, grad and check_grads in tests/test_custom_solve.py
NOT_IN_TABLE |= {"custom_linear_solve"}
NOT_IN_TABLE |= {"eig"}  # check_grads in tests/numpy/test_linalg_eig.py
NOT_IN_TABLE |= {"tridiagonal_solve"}  # check_grads in tests/numpy/test_linalg_lax_more.py
# named-axis collectives (need a bound axis): check_grads in tests/control/test_collectives.py
NOT_IN_TABLE |= {"psum", "pmax", "pmin", "all_gather", "reduce_scatter", "all_to_all", "ppermute"}
NOT_IN_TABLE |= {"check"}  # no outputs: grad through checks in tests/experimental/test_checkify.py
NOT_IN_TABLE |= {"custom_vmap_call"}  # jvp against JAX in tests/test_jax_api_fixes.py


def _merge(diff, fixed, positions=None):
    """Interleave differentiable args with fixed ones ({position: value})."""
    n = len(diff) + len(fixed)
    out, it = [], iter(diff)
    for i in range(n):
        out.append(fixed[i] if i in fixed else next(it))
    return out


def _shape_strategy():
    return st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


DIFFERENTIABLE = sorted(
    n for n, p in P.registry.items() if p not in J.nondifferentiable and n not in NOT_IN_TABLE
)


# --- Coverage ------------------------------------------------------------------------------------
def test_every_primitive_has_a_jvp_rule_or_is_declared_nondifferentiable():
    missing = sorted(
        n for n, p in P.registry.items() if p not in J.jvp_rules and p not in J.nondifferentiable
    )
    assert not missing, f"primitives with no jvp rule and no nondifferentiable mark: {missing}"
    both = sorted(n for n, p in P.registry.items() if p in J.jvp_rules and p in J.nondifferentiable)
    assert not both, f"primitives both differentiable and not: {both}"


def test_every_differentiable_primitive_has_a_test_case():
    assert sorted(set(DIFFERENTIABLE) - set(CASES)) == []
    assert sorted(set(CASES) - set(DIFFERENTIABLE)) == []


def _case_fun(name, case, fixed):
    if case.fn is not None:
        return case.fn(fixed)
    prim = P.registry[name]
    return lambda *d: prim.bind(*_merge(d, fixed), **case.params)


def _prims_in(jaxpr):
    out = set()
    for e in jaxpr.eqns:
        out.add(e.prim)
        for p in e.params.values():
            for sub in p if isinstance(p, tuple) else (p,):
                if isinstance(sub, (functx.ClosedJaxpr, functx.Jaxpr)):
                    out |= _prims_in(sub.jaxpr if isinstance(sub, functx.ClosedJaxpr) else sub)
    return out


def _linear_prims(name):
    """The primitives that the jvp rule of ``name`` applies to tangents, over all its cases."""
    found = set()
    rng = np.random.default_rng(0)
    for case in CASES[name]:
        if "rev" not in case.modes:
            continue
        diff, fixed = case.make(rng, (2, 3))
        closed = functx.make_jaxpr(_case_fun(name, case, fixed))(*diff)
        lin = L.linearize_jaxpr(closed, tuple(True for _ in diff), len(closed.out_avals))
        found |= _prims_in(lin.linear)
    return found


def test_every_linear_primitive_has_a_transpose_rule():
    used = set()
    for name in DIFFERENTIABLE:
        used |= _linear_prims(name)
    missing = sorted(p.name for p in used if p not in T.transpose_rules)
    assert not missing, f"primitives applied to tangents without a transpose rule: {missing}"


@pytest.mark.parametrize("name", sorted(DECLARED_UNSUPPORTED))
def test_declared_unsupported_jvps_raise(name):
    f = DECLARED_UNSUPPORTED[name]
    x = np.array([1.5, 2.5])
    assert P.registry[name] in {e.prim for e in functx.make_jaxpr(f)(x).eqns}
    with pytest.raises(UnsupportedError, match=f"'{name}' not implemented") as e:
        functx.grad(lambda v: fnp.sum(f(v)))(x)
    assert f"test_jvp.py:{f.__code__.co_firstlineno}" in str(e.value)  # the line of the op


def test_lax_reduce_with_a_monoid_differentiates_like_jax():
    x = np.array([[1.0, 4.0, 2.0], [3.0, -1.0, 0.5]])
    for comb, init in [(lax.add, 0.0), (lax.mul, 1.0), (lax.max, -np.inf)]:
        g = functx.grad(lambda v: fnp.sum(lax.reduce(v, init, comb, (1,)) ** 2))(x)
        jcomb = {lax.add: jax.lax.add, lax.mul: jax.lax.mul, lax.max: jax.lax.max}[comb]
        jg = _jgrad(lambda v: jnp.sum(jax.lax.reduce(v, init, jcomb, (1,)) ** 2))(x)
        np.testing.assert_allclose(g, jg, rtol=1e-12)


def test_special_function_jvps_raise_declared_unsupported_errors():
    with pytest.raises(UnsupportedError, match=r"zeta") as e:
        functx.grad(lambda x: lax.zeta(x, 2.0))(3.0)
    assert f"test_jvp.py:{_lineno() - 1}" in str(e.value)
    with pytest.raises(NotImplementedError, match="igamma_grad_a"):
        functx.jvp(lambda a: lax.igamma_grad_a(a, 2.0), (2.0,), (1.0,))
    # the primal alone is fine, and so is a derivative that does not flow through zeta
    g = functx.grad(lambda x: x * lax.zeta(lax.stop_gradient(x), 2.0))(np.float64(3.0))
    assert np.isclose(float(g), float(jax.lax.zeta(3.0, 2.0)))


# --- check_grads on every differentiable primitive ----------------------------------------------
CASE_IDS = [(name, i) for name in DIFFERENTIABLE for i in range(len(CASES.get(name, [])))]


@pytest.mark.parametrize("name,i", CASE_IDS, ids=[f"{n}-{i}" for n, i in CASE_IDS])
@settings(max_examples=2)
@given(data=st.data())
def test_primitive_check_grads(name, i, data):
    case = CASES[name][i]
    shape = data.draw(_shape_strategy(), label="shape") if case.shapes else None
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    diff, fixed = case.make(rng, shape)
    f = _case_fun(name, case, fixed)
    with np.errstate(all="ignore"):
        check_grads(f, diff, order=2, modes=case.modes)


# --- Non-differentiable primitives give zero derivatives, like JAX ------------------------------
def test_piecewise_constant_functions_have_zero_gradients_like_jax():
    x = np.array([-1.7, -0.4, 0.3, 2.5])
    for name in ["sign", "floor", "ceil", "round", "rint", "trunc"]:
        f = lambda v, name=name: fnp.sum(getattr(fnp, name)(v) * v)  # noqa: E731
        g = lambda v, name=name: jnp.sum(getattr(jnp, name)(v) * v)  # noqa: E731
        np.testing.assert_allclose(functx.grad(f)(x), _jgrad(g)(x), err_msg=name)
    # comparisons, argmax, iota, stop_gradient, is_finite: no tangent flows
    h = lambda v: fnp.sum(
        fnp.where(v > 0, 1.0, 0.0)
        + fnp.argmax(v) * v  # noqa: E731
        + lax.stop_gradient(v) ** 2
        + fnp.isfinite(v) * v
    )
    hj = lambda v: jnp.sum(
        jnp.where(v > 0, 1.0, 0.0)
        + jnp.argmax(v) * v  # noqa: E731
        + jax.lax.stop_gradient(v) ** 2
        + jnp.isfinite(v) * v
    )
    np.testing.assert_allclose(functx.grad(h)(x), _jgrad(hj)(x))
    # nextafter is piecewise constant in functx (JAX has no rule for it and raises)
    np.testing.assert_array_equal(functx.grad(lambda v: fnp.nextafter(v, 0.0).sum())(x), 0 * x)
    _, t = functx.jvp(lambda v: fnp.floor(v), (x,), (np.ones(4),))
    np.testing.assert_array_equal(t, np.zeros(4))


def test_integer_outputs_have_float0_tangents():
    x = np.arange(3.0)
    out, t = functx.jvp(lambda v: (fnp.argmax(v), v * 2), (x,), (np.ones(3),))
    jout, jt = jax.jvp(lambda v: (jnp.argmax(v), v * 2), (x,), (np.ones(3),))
    assert np.asarray(t[0]).dtype == jax.dtypes.float0 == np.asarray(jt[0]).dtype
    np.testing.assert_allclose(t[1], jt[1])


# --- jvp against jax.jvp -------------------------------------------------------------------------
def _mlp(m, p, x):
    h = m.tanh(x @ p["w1"] + p["b1"])
    return m.sum((h @ p["w2"]) ** 2)


JVP_CASES = {
    "sin_cos": (lambda m, x, y: m.sin(x) * m.cos(y), [(3, 2), (3, 2)]),
    "broadcast_scalar": (lambda m, x, y: x * y + y, [(4,), ()]),
    "matmul": (lambda m, a, b: m.tanh(a @ b), [(3, 4), (4, 2)]),
    "reductions": (
        lambda m, x, y: m.max(x, axis=0) * m.prod(y) + m.mean(x) - m.var(y),
        [(3, 4), (4,)],
    ),
    "cum": (lambda m, x, y: m.cumsum(x, axis=1) * m.cumprod(y), [(3, 4), (4,)]),
    "index": (
        lambda m, x, y: x[1:, ::2] * y[0] + x[m.array([0, 2, 2])][:, :2].sum(),
        [(3, 4), (2,)],
    ),
    "where_clip": (lambda m, x, y: m.where(x > 0, m.clip(x, -0.5, 0.5), y), [(5,), (5,)]),
    "pytree_mlp": None,
}


@pytest.mark.parametrize("name", sorted(JVP_CASES))
def test_jvp_matches_jax(name, rng):
    if name == "pytree_mlp":
        p = {
            "w1": rng.standard_normal((3, 4)),
            "b1": rng.standard_normal(4),
            "w2": rng.standard_normal((4, 2)),
        }
        x = rng.standard_normal((5, 3))
        tp = {k: rng.standard_normal(v.shape) for k, v in p.items()}
        out, t = functx.jvp(lambda p: _mlp(fnp, p, x), (p,), (tp,))
        jout, jt = _jjvp(lambda p: _mlp(jnp, p, x), (p,), (tp,))
    else:
        f, shapes = JVP_CASES[name]
        args = [rng.standard_normal(s) for s in shapes]
        ts = [rng.standard_normal(s) for s in shapes]
        out, t = functx.jvp(lambda *a: f(fnp, *a), tuple(args), tuple(ts))
        jout, jt = _jjvp(lambda *a: f(jnp, *a), tuple(args), tuple(ts))
    np.testing.assert_allclose(out, jout, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(t, jt, rtol=1e-10, atol=1e-12)


def test_jvp_has_aux_and_pytrees():
    def f(d):
        return {"s": fnp.sin(d["a"]) * d["b"]}, d["a"].sum()

    x = {"a": np.array([0.1, 0.2]), "b": np.float64(3.0)}
    t = {"a": np.array([1.0, 0.0]), "b": np.float64(1.0)}
    out, tout, aux = functx.jvp(f, (x,), (t,), has_aux=True)
    np.testing.assert_allclose(tout["s"], np.cos(x["a"]) * 3.0 * t["a"] + np.sin(x["a"]))
    np.testing.assert_allclose(aux, 0.3)


def test_jvp_float32_keeps_dtype_and_weak_types():
    x = np.float32(0.5)
    out, t = functx.jvp(lambda v: fnp.sin(v) * 2.0 + 1, (x,), (np.float32(1.0),))
    jout, jt = jax.jvp(lambda v: jnp.sin(v) * 2.0 + 1, (x,), (np.float32(1.0),))
    assert np.asarray(out).dtype == np.asarray(jout).dtype == np.float32
    assert np.asarray(t).dtype == np.asarray(jt).dtype == np.float32
    np.testing.assert_allclose(t, jt, rtol=1e-6)
    # python-scalar primals are weakly typed
    out, t = functx.jvp(lambda v: v * 3.0, (2.0,), (1.0,))
    assert float(t) == 3.0


# --- jvp errors -----------------------------------------------------------------------------------
def test_jvp_mismatched_shapes_names_the_line():
    with pytest.raises(FunctxTypeError, match=r"equal shapes.*f64\[3\].*f64\[2\]") as e:
        functx.jvp(fnp.sin, (np.zeros(3),), (np.zeros(2),))
    assert f"test_jvp.py:{_lineno() - 1}" in str(e.value)
    with pytest.raises(FunctxTypeError, match="dtypes must be equal") as e:
        functx.jvp(fnp.sin, (np.zeros(3),), (np.zeros(3, np.float32),))
    assert f"test_jvp.py:{_lineno() - 1}" in str(e.value)
    with pytest.raises(FunctxTypeError, match="same tree structure") as e:
        functx.jvp(lambda a, b: a * b, (1.0, 2.0), (1.0,))
    assert f"test_jvp.py:{_lineno() - 1}" in str(e.value)
    with pytest.raises(FunctxTypeError, match="tuples or lists"):
        functx.jvp(fnp.sin, np.zeros(3), np.zeros(3))
    # the error names the function
    with pytest.raises(FunctxTypeError, match=r"jvp of mul3 \(defined at .*test_jvp.py"):

        def mul3(x):
            return x * 3

        functx.jvp(mul3, (np.zeros(3),), (np.zeros(2),))


def test_jvp_integer_primals_need_float0_tangents():
    f = lambda x, i: x * i  # noqa: E731
    out, t = functx.jvp(f, (np.float64(1.0), 3), (np.float64(1.0), np.zeros((), jax.dtypes.float0)))
    assert float(t) == 3.0
    with pytest.raises(FunctxTypeError, match="tangent dtype must be float0") as e:
        functx.jvp(f, (np.float64(1.0), 3), (np.float64(1.0), 1))
    assert f"test_jvp.py:{_lineno() - 1}" in str(e.value)
