"""vmap: every primitive's batching rule against a loop over examples, functx.numpy against
jax.vmap, the API (in_axes/out_axes pytrees, kwargs, axis_size, nesting, closures), errors, the
batched Jaxprs, and compositions with autodiff, control flow and custom derivatives."""

import functools
import inspect
import types
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pytest
from hypothesis import given, strategies as st

import functx
import functx.numpy as fnp
from functx import lax, primitives as P
from functx.core import Primitive, ShapedArray
from functx.errors import FunctxError, UnsupportedError
from functx.transforms.vmap import BatchingError, batch_jaxpr, batching_rules, vmap

jax = pytest.importorskip("jax")
jnp = jax.numpy

F32, F64, I32, I64, BOOL = np.float32, np.float64, np.int32, np.int64, np.bool_
FLOATS = (F32, F64)


def _lineno():
    return inspect.currentframe().f_back.f_lineno


def _vals(rng, shape, dt):
    dt = np.dtype(dt)
    if dt == BOOL:
        return rng.random(shape) < 0.5
    if dt.kind in "iu":
        return rng.integers(-4, 5, shape).astype(dt)
    if dt.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def _idx(rng, shape, lo, hi, dt=I32):
    return rng.integers(lo, hi, shape).astype(dt)


def _scalar_idx(lo, hi):
    return lambda rng, dt: rng.integers(lo, hi, ()).astype(I32)


# --- The table: per primitive, example arguments (one example) and params ------------------------
@dataclass
class Case:
    """``make(rng, dtype)`` returns the arguments of one example (same shapes on every call)."""

    make: Callable
    params: dict = field(default_factory=dict)
    dtypes: tuple = FLOATS


def _ew(nargs, shapes=((2, 3), (3,), ()), dtypes_=FLOATS, params=None, mix_scalar=True):
    """Elementwise cases: every operand of one shape, and (binary) one operand a scalar."""
    cases = []
    for s in shapes:
        cases.append(
            Case(
                lambda rng, dt, s=s: [_vals(rng, s, dt) for _ in range(nargs)],
                params or {},
                dtypes_,
            )
        )
        if nargs == 2 and mix_scalar and s:
            cases.append(
                Case(
                    lambda rng, dt, s=s: [_vals(rng, s, dt), _vals(rng, (), dt)],
                    params or {},
                    dtypes_,
                )
            )
            cases.append(
                Case(
                    lambda rng, dt, s=s: [_vals(rng, (), dt), _vals(rng, s, dt)],
                    params or {},
                    dtypes_,
                )
            )
    return cases


def _fn(f, dtypes_=FLOATS, params=None):
    return [Case(f, params or {}, dtypes_)]


CASES: dict[str, list[Case]] = {}
for _n in [
    "floor",
    "ceil",
    "exp",
    "exp2",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "rsqrt",
    "cbrt",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "logistic",
    "erf",
    "erfc",
    "lgamma",
    "erf_inv",
    "digamma",
    "bessel_i0e",
    "bessel_i1e",
    "is_finite",
    "stop_gradient",
]:
    CASES[_n] = _ew(1)
for _n in ["neg", "abs", "sign"]:
    CASES[_n] = _ew(1, dtypes_=(F32, I32))
CASES["round"] = _ew(1, params={"rounding_method": 0}) + _ew(1, params={"rounding_method": 1})
CASES["not"] = _ew(1, dtypes_=(BOOL, I32))
CASES["reduce_precision"] = _ew(1, params={"exponent_bits": 5, "mantissa_bits": 3})
for _n in ["real", "imag", "conj"]:
    CASES[_n] = _ew(1, dtypes_=(np.dtype(np.complex64),))
CASES["complex"] = _ew(2, dtypes_=(F32, F64))
CASES["integer_pow"] = (
    _ew(1, params={"y": 3}) + _ew(1, params={"y": -2}) + _ew(1, dtypes_=(I32,), params={"y": 2})
)
for _n in ["add", "sub", "mul", "div", "rem", "max", "min"]:
    CASES[_n] = _ew(2, dtypes_=(F32, F64, I32))
for _n in ["pow", "atan2", "nextafter"]:
    CASES[_n] = _ew(2)
for _n in ["igamma", "igammac", "igamma_grad_a", "random_gamma_grad", "polygamma", "zeta"]:
    CASES[_n] = _ew(2)
for _n in ["eq", "ne", "lt", "le", "gt", "ge"]:
    CASES[_n] = _ew(2, dtypes_=(F32, I32))
for _n in ["and", "or", "xor"]:
    CASES[_n] = _ew(2, dtypes_=(BOOL, I32))

CASES["select_n"] = [
    Case(
        lambda rng, dt: [_vals(rng, (2, 3), BOOL), _vals(rng, (2, 3), dt), _vals(rng, (2, 3), dt)],
        dtypes=(F32, I32),
    ),
    Case(lambda rng, dt: [_vals(rng, (), BOOL), _vals(rng, (3,), dt), _vals(rng, (3,), dt)]),
    Case(
        lambda rng, dt: [
            _idx(rng, (4,), 0, 3),
            _vals(rng, (4,), dt),
            _vals(rng, (4,), dt),
            _vals(rng, (4,), dt),
        ]
    ),
    Case(lambda rng, dt: [_vals(rng, (), BOOL), _vals(rng, (), dt), _vals(rng, (), dt)]),
]
# (a real result: the batched and per-example transforms agree to rounding, not bit for bit)
CASES["fft"] = [
    Case(
        lambda rng, dt: [_vals(rng, (2, 3), dt)],
        {"fft_type": functx.lax.FftType.IRFFT, "fft_lengths": (4,)},
        (np.dtype(np.complex128),),
    )
]
CASES["bitcast_convert_type"] = [
    Case(lambda rng, dt: [_vals(rng, (2, 3), dt)], {"new_dtype": np.dtype(I32)}, (F32,)),
    # wider: the last axis (2 float32 -> 1 float64) is consumed, so a batch axis drawn last moves
    Case(lambda rng, dt: [_vals(rng, (3, 2), dt)], {"new_dtype": np.dtype(F64)}, (F32, I32)),
    Case(lambda rng, dt: [_vals(rng, (3,), dt)], {"new_dtype": np.dtype(np.uint16)}, FLOATS),
]
CASES["convert_element_type"] = [
    Case(
        lambda rng, dt: [_vals(rng, (2, 3), dt) * 3],
        {"new_dtype": np.dtype(I32), "weak_type": False},
    ),
    Case(
        lambda rng, dt: [_vals(rng, (3,), dt)],
        {"new_dtype": np.dtype(BOOL), "weak_type": False},
        (F32, I32),
    ),
    Case(
        lambda rng, dt: [_vals(rng, (), dt)],
        {"new_dtype": np.dtype(F64), "weak_type": False},
        (F32, I32),
    ),
]
CASES["iota"] = [
    Case(lambda rng, dt: [], {"dtype": np.dtype(I32), "shape": (2, 3), "dimension": 1}, (I32,))
]

for _n in ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"]:
    CASES[_n] = [
        Case(lambda rng, dt: [_vals(rng, (2, 3, 4), dt)], {"axes": ax}, (F32, F64, I32))
        for ax in [(0,), (1, 2), (0, 1, 2), ()]
    ]
for _n in ["reduce_and", "reduce_or"]:
    CASES[_n] = [
        Case(lambda rng, dt: [_vals(rng, (2, 3, 4), dt)], {"axes": ax}, (BOOL, I32))
        for ax in [(0,), (0, 2), ()]
    ]
for _n in ["argmax", "argmin"]:
    CASES[_n] = [
        Case(
            lambda rng, dt: [_vals(rng, (2, 3, 4), dt)],
            {"axes": ax, "index_dtype": np.dtype(I32)},
            (F32, I32),
        )
        for ax in [(0,), (1,), (2,)]
    ]

CASES["broadcast_in_dim"] = [
    Case(
        lambda rng, dt: [_vals(rng, (3,), dt)], {"shape": (2, 3, 4), "broadcast_dimensions": (1,)}
    ),
    Case(
        lambda rng, dt: [_vals(rng, (1, 3), dt)], {"shape": (5, 3), "broadcast_dimensions": (0, 1)}
    ),
    Case(
        lambda rng, dt: [_vals(rng, (2, 3), dt)],
        {"shape": (2, 4, 3), "broadcast_dimensions": (0, 2)},
    ),
    Case(lambda rng, dt: [_vals(rng, (), dt)], {"shape": (2, 3), "broadcast_dimensions": ()}),
]
CASES["reshape"] = [
    Case(lambda rng, dt: [_vals(rng, (2, 3, 4), dt)], {"new_sizes": (6, 4)}),
    Case(lambda rng, dt: [_vals(rng, (2, 3), dt)], {"new_sizes": (3, 2)}),
    Case(lambda rng, dt: [_vals(rng, (), dt)], {"new_sizes": (1, 1)}),
]
CASES["transpose"] = [
    Case(lambda rng, dt: [_vals(rng, (2, 3, 4), dt)], {"permutation": (2, 0, 1)}),
    Case(lambda rng, dt: [_vals(rng, (2, 3), dt)], {"permutation": (1, 0)}),
]
CASES["squeeze"] = [
    Case(lambda rng, dt: [_vals(rng, (2, 1, 3, 1), dt)], {"dimensions": (1, 3)}),
    Case(lambda rng, dt: [_vals(rng, (1,), dt)], {"dimensions": (0,)}),
]
CASES["expand_dims"] = [
    Case(lambda rng, dt: [_vals(rng, (2, 3), dt)], {"dimensions": (0, 2)}),
    Case(lambda rng, dt: [_vals(rng, (2, 3), dt)], {"dimensions": (1, 3)}),
    Case(lambda rng, dt: [_vals(rng, (), dt)], {"dimensions": (0,)}),
]
CASES["rev"] = [
    Case(lambda rng, dt: [_vals(rng, (3, 4), dt)], {"dimensions": (1,)}),
    Case(lambda rng, dt: [_vals(rng, (3, 4), dt)], {"dimensions": (0, 1)}),
]
CASES["slice"] = [
    Case(
        lambda rng, dt: [_vals(rng, (5, 6), dt)],
        {"start_indices": (1, 0), "limit_indices": (4, 6), "strides": (2, 1)},
    ),
    Case(
        lambda rng, dt: [_vals(rng, (5, 6), dt)],
        {"start_indices": (0, 2), "limit_indices": (5, 3), "strides": None},
    ),
]
CASES["concatenate"] = [
    Case(
        lambda rng, dt: [_vals(rng, (2, 3), dt), _vals(rng, (1, 3), dt), _vals(rng, (4, 3), dt)],
        {"dimension": 0},
    ),
    Case(lambda rng, dt: [_vals(rng, (2, 1), dt), _vals(rng, (2, 2), dt)], {"dimension": 1}),
]
CASES["pad"] = [
    Case(
        lambda rng, dt: [_vals(rng, (3, 4), dt), _vals(rng, (), dt)],
        {"padding_config": ((1, 2, 0), (0, 1, 1))},
        (F32, I32),
    ),
    Case(
        lambda rng, dt: [_vals(rng, (3, 4), dt), _vals(rng, (), dt)],
        {"padding_config": ((-1, 1, 0), (2, -1, 1))},
    ),
]
CASES["dynamic_slice"] = [
    Case(
        lambda rng, dt: [_vals(rng, (5, 6), dt), _idx(rng, (), -2, 8), _idx(rng, (), -2, 8)],
        {"slice_sizes": (2, 6)},
        (F32, I32),
    ),
    Case(
        lambda rng, dt: [_vals(rng, (5, 6), dt), _idx(rng, (), -2, 8), _idx(rng, (), -2, 8)],
        {"slice_sizes": (3, 4)},
    ),
    Case(lambda rng, dt: [_vals(rng, (5,), dt), _idx(rng, (), -2, 8, I64)], {"slice_sizes": (5,)}),
]
CASES["dynamic_update_slice"] = [
    Case(
        lambda rng, dt: [
            _vals(rng, (5, 6), dt),
            _vals(rng, (2, 3), dt),
            _idx(rng, (), -2, 8),
            _idx(rng, (), -2, 8),
        ],
        {},
        (F32, I32),
    ),
    Case(
        lambda rng, dt: [
            _vals(rng, (5, 6), dt),
            _vals(rng, (5, 2), dt),
            _idx(rng, (), -2, 8),
            _idx(rng, (), -2, 8),
        ]
    ),
    Case(lambda rng, dt: [_vals(rng, (3,), dt), _vals(rng, (3,), dt), _idx(rng, (), -2, 8)]),
]
CASES["gather"] = [
    Case(
        lambda rng, dt: [_vals(rng, (5, 4), dt), _idx(rng, (3, 1), -1, 7)],
        {"axes": (0,), "mode": mode, "fill_value": None},
        (F32, I32),
    )
    for mode in ("clip", "fill")
] + [
    Case(
        lambda rng, dt: [_vals(rng, (5, 4, 3), dt), _idx(rng, (2, 2, 2), 0, 3)],
        {"axes": (0, 2), "mode": "clip", "fill_value": None},
    ),
    Case(
        lambda rng, dt: [_vals(rng, (5, 4), dt), _idx(rng, (1,), 0, 4)],
        {"axes": (1,), "mode": "fill", "fill_value": 0.5},
    ),
]


def _perm_idx(rng, n, k):
    return rng.permutation(n)[:k].astype(I32).reshape(k, 1)


for _n in ["scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max"]:
    CASES[_n] = [
        Case(
            lambda rng, dt: [_vals(rng, (5, 4), dt), _perm_idx(rng, 5, 3), _vals(rng, (3, 4), dt)],
            {"axes": (0,), "mode": "drop"},
            (F32, I32),
        ),
        Case(
            lambda rng, dt: [_vals(rng, (4, 5), dt), _perm_idx(rng, 5, 2), _vals(rng, (2, 4), dt)],
            {"axes": (1,), "mode": "clip"},
        ),
        Case(
            lambda rng, dt: [
                _vals(rng, (3, 4), dt),
                np.stack([_idx(rng, (2,), -1, 4), _idx(rng, (2,), 0, 5)], -1),
                _vals(rng, (2,), dt),
            ],
            {"axes": (0, 1), "mode": "drop"},
        ),
    ]
    if _n != "scatter":  # duplicate indices (scatter's winner among duplicates is unspecified)
        CASES[_n].append(
            Case(
                lambda rng, dt: [
                    _vals(rng, (5,), dt),
                    _idx(rng, (4, 1), 0, 5),
                    _vals(rng, (4,), dt),
                ],
                {"axes": (0,), "mode": "drop"},
            )
        )


def _dg(ls, rs, dn):
    return Case(
        lambda rng, dt: [_vals(rng, ls, dt), _vals(rng, rs, dt)],
        {"dimension_numbers": dn, "preferred_element_type": None},
        (F32, F64, I32),
    )


CASES["dot_general"] = [
    _dg((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    _dg((3, 4), (4,), (((1,), (0,)), ((), ()))),
    _dg((3,), (3,), (((0,), (0,)), ((), ()))),
    _dg((4, 3), (5, 4), (((0,), (1,)), ((), ()))),
    _dg((3, 2), (2, 3), (((), ()), ((), ()))),
]


# Higher-order primitives (with sub-Jaxprs or user callbacks) are tested through their public API
# below (test_vmap_higher_order, test_vmap_custom_*), not from the table.
HIGHER_ORDER = {
    "cond",
    "scan",
    "while",
    "associative_scan",
    "reduce",
    "custom_jvp_call",
    "custom_vjp_call",
    "custom_lin",
    "custom_vmap_call",  # its rule is the user's: tests/test_jax_api_fixes.py (against JAX)
    # tests/test_remat.py and tests/test_debug.py (checkpoint_name's `name` is the identity)
    "checkpoint",
    "name",
    "debug_callback",
    "check",  # tests/experimental/test_checkify.py (the last failing example, as JAX)
    "pure_callback",
    "io_callback",
    "threefry2x32",  # two results, which the table test cannot stack: tests/test_random.py
    "rng_bit_generator",  # JAX's rule (the first key draws): tests/test_rng_bit_generator.py
    "rng_uniform",  # no batching rule in JAX either: tests/test_rng_bit_generator.py
    # matrix operands (batched over leading axes): vmap against a loop in tests/numpy/test_linalg.py
    "cholesky",
    "triangular_solve",
    "lu",
    "lu_pivots_to_permutation",
    "eigh",
    "qr",
    "svd",
    "sort",  # several results: vmap against a loop in tests/numpy/test_sort.py
    "top_k",  # two results: tests/numpy/test_sort.py
    "custom_linear_solve",  # carries Jaxprs: vmap against a loop in tests/test_custom_solve.py
    "eig",  # several complex results: vmap against a loop in tests/numpy/test_linalg_eig.py
    # LAPACK reductions and tridiagonal_solve: tests/numpy/test_linalg_lax_more.py
    "hessenberg",
    "tridiagonal",
    "householder_product",
    "schur",
    "tridiagonal_solve",
    # named-axis collectives (vmap with and without axis_name): tests/control/test_collectives.py
    "psum",
    "pmax",
    "pmin",
    "axis_index",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "ppermute",
}


def test_every_primitive_has_a_batching_rule_and_a_test_case():
    missing_rules = sorted(name for name, p in P.registry.items() if p not in batching_rules)
    assert not missing_rules, f"primitives without a vmap batching rule: {missing_rules}"
    missing_cases = sorted(set(P.registry) - set(CASES) - HIGHER_ORDER)
    assert not missing_cases, f"primitives without a vmap test case: {missing_cases}"


def _tol(dt):
    return {"rtol": 1e-5, "atol": 1e-5} if np.dtype(dt) == F32 else {"rtol": 1e-12, "atol": 1e-12}


def _check_close(got, want, **tol):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, want, equal_nan=True, **tol)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(set(P.registry) - HIGHER_ORDER))
@given(data=st.data())
def test_batching_rule_matches_loop(name, data):
    if name not in CASES:  # test_every_primitive_has_a_batching_rule_and_a_test_case reports it
        pytest.skip(f"no vmap test case for {name}")
    prim = P.registry[name]
    case = data.draw(st.sampled_from(CASES[name]), label="case")
    dt = data.draw(st.sampled_from(case.dtypes), label="dtype")
    size = data.draw(st.integers(1, 3), label="batch")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    examples = [case.make(rng, dt) for _ in range(size)]
    in_axes = tuple(
        data.draw(
            st.one_of(st.none(), st.integers(-np.ndim(a) - 1, np.ndim(a))), label=f"in_axes[{i}]"
        )
        for i, a in enumerate(examples[0])
    )
    batched_args = [
        examples[0][i] if ax is None else np.stack([ex[i] for ex in examples], ax)
        for i, ax in enumerate(in_axes)
    ]
    per_example = [
        [ex[i] if ax is not None else examples[0][i] for i, ax in enumerate(in_axes)]
        for ex in examples
    ]
    with np.errstate(all="ignore"):
        want = [np.asarray(prim.bind(*a, **case.params)) for a in per_example]
        out_axis = data.draw(st.integers(-want[0].ndim - 1, want[0].ndim), label="out_axes")
        want = np.stack(want, out_axis)

        def f(*args):
            return prim.bind(*args, **case.params)

        g = vmap(f, in_axes=in_axes, out_axes=out_axis, axis_size=size)
        got = g(*batched_args)
        _check_close(got, want, **_tol(dt))
        # The batched Jaxpr is well typed and has no per-example loop (equation count fixed).
        jaxpr = functx.make_jaxpr(g)(*batched_args)
        functx.typecheck_jaxpr(jaxpr)
        assert len(jaxpr.eqns) <= 40, str(jaxpr)


# --- Against jax.vmap for functx.numpy functions -------------------------------------------------
_fx = types.SimpleNamespace(np=fnp, nn=functx.nn, lax=functx.lax)
_jx = types.SimpleNamespace(np=jnp, nn=jax.nn, lax=jax.lax)

# name: (f(ns, *args), argument makers, in_axes)
_r = np.random.default_rng(1)


def _a(*shape, dt=F64):
    return _vals(_r, shape, dt)


JAX_CASES = {
    "sin_mul_add": (lambda m, x, y: m.np.sin(x) * y + 1.0, [_a(4, 3), _a(3)], (0, None)),
    "exp_div_axis1": (lambda m, x, y: m.np.exp(x) / y, [_a(3, 4), _a(4, 3)], (1, 0)),
    "where": (lambda m, x, y: m.np.where(x > 0, x, y * 2), [_a(5, 3), _a(3)], (0, None)),
    "clip_abs": (lambda m, x: m.np.clip(m.np.abs(x), 0.2, 1.0), [_a(4, 3)], 0),
    "sum_mean_keepdims": (
        lambda m, x: m.np.sum(x, axis=0) + m.np.mean(x, axis=-1, keepdims=True),
        [_a(4, 3, 3)],
        1,
    ),
    "max_min_prod": (
        lambda m, x: m.np.max(x, axis=1) - m.np.min(x) * m.np.prod(x, axis=0),
        [_a(3, 3, 4)],
        -1,
    ),
    "var_std": (lambda m, x: m.np.var(x, axis=0) + m.np.std(x), [_a(5, 3, 4)], 2),
    "argmax_argmin": (
        lambda m, x: m.np.argmax(x, axis=-1) + m.np.argmin(x, axis=0),
        [_a(4, 3, 3)],
        0,
    ),
    "cumsum_cumprod": (
        lambda m, x: m.np.cumsum(x, axis=0) + m.np.cumprod(x, axis=1),
        [_a(3, 4, 2)],
        2,
    ),
    "matmul_shared_weight": (lambda m, x, w: m.np.tanh(x @ w), [_a(6, 3), _a(3, 2)], (0, None)),
    "matmul_both": (lambda m, x, w: x @ w, [_a(6, 2, 3), _a(3, 6, 4)], (0, 1)),
    "matmul_weight_mapped": (lambda m, x, w: x @ w, [_a(2, 3), _a(3, 5, 4)], (None, 1)),
    "einsum": (lambda m, a, b: m.np.einsum("ij,jk->ki", a, b), [_a(4, 2, 3), _a(3, 5)], (0, None)),
    "einsum_both": (
        lambda m, a, b: m.np.einsum("ij,jk->ik", a, b),
        [_a(4, 2, 3), _a(3, 4, 5)],
        (0, 1),
    ),
    "dot_vdot": (lambda m, a, b: m.np.dot(a, b) + m.np.vdot(a, a), [_a(5, 3), _a(3)], (0, None)),
    "outer_tensordot": (
        lambda m, a, b: m.np.outer(a, b) + m.np.tensordot(a, b, 0),
        [_a(4, 3), _a(4, 3)],
        0,
    ),
    "take": (
        lambda m, x, i: m.np.take(x, i, axis=0),
        [_a(5, 4), _idx(_r, (3, 2), 0, 5)],
        (None, 0),
    ),
    "take_both": (
        lambda m, x, i: m.np.take(x, i, axis=1),
        [_a(3, 4, 5), _idx(_r, (3, 2), -5, 5)],
        (0, 0),
    ),
    "index_traced_scalar": (lambda m, x, i: x[i], [_a(4, 6), _idx(_r, (4,), -6, 6)], (0, 0)),
    "index_array": (
        lambda m, x, i: m.np.asarray(x)[:, i] * 2,
        [_a(4, 6), _idx(_r, (3, 2), 0, 4)],
        (None, 0),
    ),
    "take_along_axis": (
        lambda m, x, i: m.np.take_along_axis(x, i, axis=0),
        [_a(3, 4, 2), _idx(_r, (3, 4, 2), 0, 4)],
        (0, 0),
    ),
    "at_set": (lambda m, x, i, v: x.at[i].set(v), [_a(4, 5), _idx(_r, (4,), 0, 5), _a(4)], 0),
    "at_add_array": (
        lambda m, x, i, v: x.at[i].add(v),
        [_a(3, 5), _idx(_r, (3, 2), 0, 5), _a(3, 2)],
        (0, 0, 0),
    ),
    "at_add_shared_x": (
        lambda m, x, i, v: m.np.asarray(x).at[i].add(v),
        [_a(5), _idx(_r, (3,), 0, 5), _a(3)],
        (None, 0, 0),
    ),
    "dynamic_slice": (
        lambda m, x, i: m.lax.dynamic_slice(x, (i, i * 0 + 1), (2, 3)),
        [_a(4, 5, 6), _idx(_r, (4,), 0, 6)],
        0,
    ),
    "dynamic_update_slice": (
        lambda m, x, u, i: m.lax.dynamic_update_slice(x, u, (i, i * 0)),
        [_a(5, 4), _a(3, 2, 4), _idx(_r, (3,), 0, 6)],
        (None, 0, 0),
    ),
    "softmax": (lambda m, x: m.nn.softmax(x), [_a(4, 3, 5)], 1),
    "log_softmax_logsumexp": (
        lambda m, x: m.nn.log_softmax(x) + m.nn.logsumexp(x, axis=0),
        [_a(4, 3, 5)],
        0,
    ),
    "gelu_relu": (lambda m, x: m.nn.gelu(x) + m.nn.relu(x), [_a(4, 3)], 0),
    "concatenate_stack": (
        lambda m, x, y: m.np.concatenate([x, y], axis=0) + m.np.stack([x, y])[0, 0],
        [_a(3, 2, 4), _a(2, 4)],
        (0, None),
    ),
    "pad_roll_flip": (
        lambda m, x: m.np.roll(m.np.flip(m.np.pad(x, ((1, 2), (0, 1)))), 2, axis=1),
        [_a(3, 4, 2)],
        0,
    ),
    "reshape_transpose": (lambda m, x: m.np.reshape(x.T, (-1,)) + m.np.ravel(x), [_a(3, 2, 4)], 1),
    "squeeze_expand": (lambda m, x: m.np.expand_dims(m.np.squeeze(x, 1), 0), [_a(3, 4, 1, 2)], 1),
    "tril_triu_diag": (
        lambda m, x: m.np.tril(x) + m.np.triu(x, 1) + m.np.diag(m.np.diagonal(x)),
        [_a(3, 4, 4)],
        0,
    ),
    "astype_bool": (
        lambda m, x: m.np.logical_and(x > 0, x < 1).astype(m.np.float32) + 1,
        [_a(4, 3)],
        0,
    ),
    "broadcast_to": (lambda m, x: m.np.broadcast_to(x, (2, 3)) * m.np.ones((2, 1)), [_a(4, 3)], 0),
    "linalg_norm": (lambda m, x: m.np.linalg.norm(x, axis=-1), [_a(4, 3, 2)], 0),
}


@pytest.mark.parametrize("name", sorted(JAX_CASES))
def test_against_jax_vmap(name):
    f, args, in_axes = JAX_CASES[name]
    got = vmap(functools.partial(f, _fx), in_axes=in_axes)(*args)
    want = jax.vmap(functools.partial(f, _jx), in_axes=in_axes)(*args)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-10)
    assert np.asarray(got).dtype.kind == np.asarray(want).dtype.kind


@given(st.data())
def test_elementwise_and_reduction_against_numpy_loop_hypothesis(data):
    shape = data.draw(st.lists(st.integers(1, 3), min_size=2, max_size=4), label="shape")
    ax = data.draw(st.integers(-len(shape), len(shape) - 1), label="in_axis")
    out_ax = data.draw(st.integers(-len(shape), len(shape) - 1), label="out_axis")
    dt = data.draw(st.sampled_from([F32, F64]), label="dtype")
    x = _vals(np.random.default_rng(data.draw(st.integers(0, 99))), shape, dt)
    w = np.linspace(-1, 1, int(np.prod(shape)) // shape[ax]).astype(dt)

    def f(m, x):
        y = m.tanh(x) * 2 + m.sum(x) - m.max(x, axis=-1, keepdims=True)
        return m.cumsum(y, axis=0) * m.reshape(w, y.shape)

    got = vmap(functools.partial(f, fnp), in_axes=ax, out_axes=out_ax)(x)
    want = np.stack([f(np, xi) for xi in np.moveaxis(x, ax, 0)], out_ax)
    np.testing.assert_allclose(np.asarray(got), want, **_tol(dt))
    assert np.asarray(got).dtype == want.dtype


# --- API: nesting, closures, pytrees, kwargs, axis_size ------------------------------------------
def test_nested_vmap_three_deep_matches_loops():
    rng = np.random.default_rng(0)
    a, b, c = rng.standard_normal((2, 3)), rng.standard_normal((4,)), rng.standard_normal((5, 3))

    def f(x, y, z):  # x: (3,), y: (), z: (3,)
        return fnp.sum(fnp.sin(x) * z) + y

    g = vmap(vmap(vmap(f, (None, None, 0)), (None, 0, None)), (0, None, None))
    got = g(a, b, c)
    want = np.array(
        [
            [[np.sum(np.sin(a[i]) * c[k]) + b[j] for k in range(5)] for j in range(4)]
            for i in range(2)
        ]
    )
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12)
    assert got.shape == (2, 4, 5)


def test_nested_vmap_closure_over_outer_tracer():
    xs, ys = np.arange(3.0), np.arange(4.0)
    got = vmap(lambda x: vmap(lambda y: x * y + fnp.sin(x))(ys))(xs)
    np.testing.assert_allclose(np.asarray(got), xs[:, None] * ys[None, :] + np.sin(xs)[:, None])


def test_closure_over_array_stays_unbatched():
    W = fnp.asarray(np.arange(6.0).reshape(3, 2))
    f = vmap(lambda x: x @ W + fnp.sum(fnp.cos(W)))
    xs = np.ones((5, 3))
    np.testing.assert_allclose(
        np.asarray(f(xs)), xs @ np.arange(6.0).reshape(3, 2) + np.cos(np.arange(6.0)).sum()
    )
    jaxpr = functx.make_jaxpr(f)(xs)
    cos = [e for e in jaxpr.eqns if e.prim.name == "cos"]
    # cos(W) is computed once, not per example
    assert len(cos) == 1 and cos[0].outvars[0].aval.shape == (3, 2)


def test_pytree_in_axes_and_out_axes():
    params = {"w": np.arange(6.0).reshape(3, 2), "b": np.arange(8.0).reshape(4, 2)}
    xs = np.arange(12.0).reshape(4, 3)

    def layer(p, x):
        y = x @ p["w"] + p["b"]
        return {"y": y, "norm": fnp.sum(p["w"] ** 2)}, y * 2

    f = vmap(layer, in_axes=({"w": None, "b": 0}, 0), out_axes=({"y": 1, "norm": None}, 0))
    out, out2 = f(params, xs)
    want = xs @ params["w"] + params["b"]
    np.testing.assert_allclose(np.asarray(out["y"]), want.T)
    np.testing.assert_allclose(np.asarray(out["norm"]), np.sum(params["w"] ** 2))
    np.testing.assert_allclose(np.asarray(out2), want * 2)


def test_in_axes_list_negative_and_tuple_outputs():
    x, y = np.arange(12.0).reshape(3, 4), np.arange(4.0)
    a, b = vmap(lambda u, v: (u + v, u * v), in_axes=[-1, 0], out_axes=-1)(x, y)
    np.testing.assert_allclose(np.asarray(a), x + y)
    np.testing.assert_allclose(np.asarray(b), x * y)


def test_kwargs_are_mapped_over_axis_0():
    def f(x, *, scale):
        return x * scale

    x, s = np.arange(3.0), np.arange(3.0) + 1
    np.testing.assert_allclose(
        np.asarray(vmap(f, in_axes=None)(x, scale=s)), x[None, :] * s[:, None]
    )


def test_axis_size_without_mapped_inputs_broadcasts():
    out = vmap(lambda x: x * 2, in_axes=None, axis_size=4)(np.arange(3.0))
    np.testing.assert_allclose(np.asarray(out), np.tile(np.arange(3.0) * 2, (4, 1)))
    out = vmap(lambda: fnp.arange(3), axis_size=2, out_axes=1)()
    np.testing.assert_array_equal(np.asarray(out), np.tile(np.arange(3)[:, None], (1, 2)))


def test_python_scalar_unmapped_and_unbatched_outputs():
    out = vmap(lambda x, c: (x + c, c), in_axes=(0, None))(np.arange(3.0), 2.0)
    np.testing.assert_allclose(np.asarray(out[0]), np.arange(3.0) + 2)
    np.testing.assert_allclose(np.asarray(out[1]), [2.0, 2.0, 2.0])


def test_wraps_and_cache_does_not_retrace():
    calls = []

    def f(x):
        """Doc."""
        calls.append(1)
        return x * 2

    g = vmap(f)
    assert g.__name__ == "f" and g.__doc__ == "Doc." and g.__wrapped__ is f
    g(np.ones((3, 2)))
    g(np.zeros((3, 2)))
    assert len(calls) == 1
    g(np.zeros((4, 2)))
    assert len(calls) == 2


def test_vmap_inside_make_jaxpr_and_of_traced_inputs():
    def f(xs):
        return vmap(lambda x: fnp.dot(x, x))(xs) + 1.0

    jaxpr = functx.make_jaxpr(f)(np.ones((4, 3), np.float32))
    functx.typecheck_jaxpr(jaxpr)
    assert [e.prim.name for e in jaxpr.eqns] == ["dot_general", "add"]
    assert "dot_general" in str(jaxpr)


# --- The batched Jaxpr ---------------------------------------------------------------------------
def test_matmul_by_shared_weight_is_one_dot_general_without_broadcast():
    W = fnp.asarray(np.ones((3, 2), np.float32))
    for batch in (5, 17):
        jaxpr = functx.make_jaxpr(vmap(lambda x: x @ W))(np.ones((batch, 3), np.float32))
        names = [e.prim.name for e in jaxpr.eqns]
        assert names.count("dot_general") == 1, str(jaxpr)
        assert "broadcast_in_dim" not in names, str(jaxpr)
        assert len(names) <= 3  # no per-example loop: the size does not change the program
        assert [v.aval.shape for v in jaxpr.jaxpr.constvars] == [(3, 2)]
        (dot,) = [e for e in jaxpr.eqns if e.prim.name == "dot_general"]
        assert dot.invars[1] is jaxpr.jaxpr.constvars[0]


def test_matrix_matmul_shared_weight_no_batch_dims():
    W = fnp.asarray(np.ones((3, 2), np.float32))
    jaxpr = functx.make_jaxpr(vmap(lambda x: x @ W))(np.ones((7, 4, 3), np.float32))
    assert [e.prim.name for e in jaxpr.eqns] == ["dot_general"]
    assert str(jaxpr).count("broadcast") == 0


def test_both_batched_dot_general_gets_a_batch_dimension():
    jaxpr = functx.make_jaxpr(vmap(lambda a, b: a @ b))(np.ones((5, 2, 3)), np.ones((5, 3, 4)))
    (dot,) = [e for e in jaxpr.eqns if e.prim.name == "dot_general"]
    assert dot.params["dimension_numbers"][1] == ((0,), (0,))


def test_batch_axis_is_not_moved_needlessly():
    jaxpr = functx.make_jaxpr(vmap(lambda x: fnp.sum(fnp.exp(x), axis=0), in_axes=1, out_axes=0))(
        np.ones((3, 5, 4))
    )
    assert [e.prim.name for e in jaxpr.eqns] == ["exp", "reduce_sum"], str(jaxpr)


def test_scalar_operand_stays_scalar():
    jaxpr = functx.make_jaxpr(vmap(lambda x, c: x * c, in_axes=(0, None)))(
        np.ones((5, 3), np.float32), np.float32(2)
    )
    assert [e.prim.name for e in jaxpr.eqns] == ["mul"]


def test_batched_equations_keep_the_users_line():
    line = _lineno() + 1
    f = vmap(lambda x: fnp.sin(x) * 2.0)
    jaxpr = functx.make_jaxpr(f)(np.ones((4, 3), np.float32))
    (sin,) = [e for e in jaxpr.eqns if e.prim.name == "sin"]
    assert sin.source_info.line == line and sin.source_info.file == __file__


def test_batch_jaxpr_directly():
    closed = functx.make_jaxpr(lambda x, y: (fnp.sin(x) + y, y * 2))(np.ones(3), np.ones(3))
    new, out_dims = batch_jaxpr(closed, [0, None], 4)
    assert out_dims == [0, None]
    assert new.in_avals == [ShapedArray((4, 3), np.dtype(F64)), ShapedArray((3,), np.dtype(F64))]
    functx.typecheck_jaxpr(new)
    new, out_dims = batch_jaxpr(closed, [None, -1], 4, force_out_dims=[1, 0])
    assert out_dims == [1, 0] and [a.shape for a in new.out_avals] == [(3, 4), (4, 3)]


# --- Errors --------------------------------------------------------------------------------------
def _assert_names_line(err, line, *parts):
    msg = str(err)
    assert f"test_vmap.py:{line}" in msg, msg
    for p in parts:
        assert p in msg, (p, msg)


def test_error_inconsistent_sizes_names_paths_sizes_and_line():
    f = vmap(lambda x, p: x + p["w"], in_axes=(0, {"w": 1}))
    with pytest.raises(BatchingError) as e:
        line = _lineno() + 1
        f(np.ones((3, 2)), {"w": np.ones((2, 4))})
    assert isinstance(e.value, FunctxError) and isinstance(e.value, ValueError)
    _assert_names_line(e.value, line, "args[0]", "size 3", "args[1]['w']", "size 4", "inconsistent")


def test_error_inconsistent_kwarg_size():
    with pytest.raises(BatchingError) as e:
        line = _lineno() + 1
        vmap(lambda x, y: x + y)(np.ones(3), y=np.ones(2))
    _assert_names_line(e.value, line, "args[0]", "kwargs['y']", "size 3", "size 2")


def test_error_axis_size_disagrees():
    with pytest.raises(BatchingError) as e:
        line = _lineno() + 1
        vmap(lambda x: x, axis_size=5)(np.ones(3))
    _assert_names_line(e.value, line, "args[0]", "size 3", "axis_size=5")


def test_error_in_axes_structure_mismatch():
    f = vmap(lambda p: p["a"], in_axes=({"a": 0, "b": 0},))
    with pytest.raises(BatchingError) as e:
        line = _lineno() + 1
        f({"a": np.ones(3)})
    _assert_names_line(e.value, line, "in_axes", "prefix")
    with pytest.raises(BatchingError) as e:
        line = _lineno() + 1
        vmap(lambda x, y: x, in_axes=(0, 0, 0))(np.ones(3), np.ones(3))
    _assert_names_line(e.value, line, "in_axes", "3 entries", "2 positional")


def test_error_bad_in_axes_type():
    with pytest.raises(BatchingError, match="in_axes must be an int, None, or a tuple"):
        vmap(lambda x: x, in_axes={"x": 0})
    with pytest.raises(BatchingError, match="ints or None"):
        vmap(lambda x: x, in_axes=(0.5,))(np.ones(3))


def test_error_axis_out_of_range():
    with pytest.raises(BatchingError) as e:
        line = _lineno() + 1
        vmap(lambda x, y: x, in_axes=(0, 2))(np.ones(3), np.ones((3, 2)))
    _assert_names_line(e.value, line, "args[1]", "axis 2", "rank 2")
    with pytest.raises(BatchingError) as e:
        line = _lineno() + 1
        vmap(lambda x: x)(1.0)
    _assert_names_line(e.value, line, "args[0]", "rank 0")
    with pytest.raises(BatchingError) as e:
        line = _lineno() + 1
        vmap(lambda x: x, out_axes=3)(np.ones((2, 3)))
    _assert_names_line(e.value, line, "out_axes 3")


def test_error_axis_size_missing():
    with pytest.raises(BatchingError) as e:
        line = _lineno() + 1
        vmap(lambda x: x * 2, in_axes=None)(np.ones(3))
    _assert_names_line(e.value, line, "axis_size")


def test_error_mapped_output_with_out_axes_none():
    with pytest.raises(BatchingError) as e:
        line = _lineno() + 1
        vmap(lambda x: (x, x * 2), out_axes=(0, None))(np.ones(3))
    _assert_names_line(e.value, line, "out_axes is None", "out[1]")


def test_error_missing_rule_names_primitive_and_line():
    mystery_p = Primitive("mystery", group="unary")
    mystery_p.abstract_eval = lambda x: x
    mystery_p.impl = lambda x: x
    with pytest.raises(UnsupportedError) as e:
        line = _lineno() + 1
        vmap(lambda x: mystery_p.bind(x))(np.ones(3))
    _assert_names_line(e.value, line, "mystery", "vmap")


def test_a_buggy_rule_is_reported_with_the_primitive(monkeypatch):
    bogus_p = Primitive("bogus", group="unary")
    bogus_p.abstract_eval = lambda x: x
    bogus_p.impl = lambda x: x
    monkeypatch.setitem(batching_rules, bogus_p, lambda args, dims: (args[0], None))
    with pytest.raises(FunctxError, match="batching rule of 'bogus'.*f32\\[3\\]"):
        vmap(lambda x: bogus_p.bind(x))(np.ones((2, 3), np.float32))


def test_shape_error_inside_vmap_names_line():
    with pytest.raises(functx.FunctxTypeError) as e:
        line = _lineno() + 1
        vmap(lambda x: lax.add(x, np.ones(4)))(np.ones((2, 3)))
    assert f"test_vmap.py:{line}" in str(e.value)


# --- Compositions with autodiff (enabled once functx.grad and friends exist) -------------------
def _needs(*names):
    missing = [n for n in names if not hasattr(functx, n)]
    return pytest.mark.skipif(
        bool(missing), reason=f"functx.{', '.join(missing)} not yet available"
    )


def _loss(m, w, x):
    return m.np.sum(m.np.tanh(x @ w) ** 2)


_W, _XS = _a(3, 2), _a(5, 3)


@_needs("grad")
def test_vmap_of_grad():
    got = vmap(functx.grad(functools.partial(_loss, _fx)), in_axes=(None, 0))(_W, _XS)
    want = jax.vmap(jax.grad(functools.partial(_loss, _jx)), in_axes=(None, 0))(_W, _XS)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10)


@_needs("grad")
def test_grad_of_vmap():
    def total(m, vm, w):
        return m.np.sum(vm(functools.partial(_loss, m), in_axes=(None, 0))(w, _XS))

    got = functx.grad(functools.partial(total, _fx, vmap))(_W)
    want = jax.grad(functools.partial(total, _jx, jax.vmap))(_W)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10)


@_needs("jvp")
def test_vmap_of_jvp():
    def f(m, x):
        return m.np.sin(x) * x

    def fx(x, t):
        return functx.jvp(functools.partial(f, _fx), (x,), (t,))

    def jx(x, t):
        return jax.jvp(functools.partial(f, _jx), (x,), (t,))

    got = vmap(fx)(_XS, _XS * 2)
    want = jax.vmap(jx)(_XS, _XS * 2)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10)


@_needs("grad")
def test_vmap_of_vmap_of_grad_and_grad_of_vmap_of_grad():
    def f(m, x):
        return m.np.sum(m.np.sin(x) ** 3)

    xs = _a(2, 4, 3)
    got = vmap(vmap(functx.grad(functools.partial(f, _fx))))(xs)
    want = jax.vmap(jax.vmap(jax.grad(functools.partial(f, _jx))))(xs)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10)

    def g(m, vm, grad, x):
        return m.np.sum(vm(grad(functools.partial(f, m)))(x))

    got = functx.grad(functools.partial(g, _fx, vmap, functx.grad))(_XS)
    want = jax.grad(functools.partial(g, _jx, jax.vmap, jax.grad))(_XS)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10)


@_needs("jacfwd", "jacrev", "hessian")
def test_jacobians_and_hessian_of_functions_using_vmap():
    def f(m, vm, x):
        return vm(lambda r: m.np.sin(r) * m.np.sum(r))(m.np.reshape(x, (2, 3)))

    x = _a(6)
    for fx_t, jx_t in [(functx.jacfwd, jax.jacfwd), (functx.jacrev, jax.jacrev)]:
        got = fx_t(functools.partial(f, _fx, vmap))(x)
        want = jx_t(functools.partial(f, _jx, jax.vmap))(x)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10)

    def s(vm, x):
        return fnp.sum(f(_fx, vm, x) ** 2)

    def loop(fun, in_axes=0):  # the reference: a Python loop instead of vmap
        return lambda xs: fnp.stack([fun(r) for r in xs])

    got = functx.hessian(functools.partial(s, vmap))(x)
    want = functx.hessian(functools.partial(s, loop))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


@_needs("jacrev")
def test_vmap_of_jacrev_per_example_jacobians():
    def f(m, x):
        return m.np.tanh(x @ _W)

    got = vmap(functx.jacrev(functools.partial(f, _fx)))(_XS)
    want = jax.vmap(jax.jacrev(functools.partial(f, _jx)))(_XS)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10)


# --- Higher-order primitives: control flow and custom derivatives --------------------------------
def _has_rule(name):
    p = P.registry.get(name)
    return pytest.mark.skipif(
        p is None or p not in batching_rules, reason=f"no vmap batching rule for {name} yet"
    )


_i = _idx(np.random.default_rng(2), (4,), 0, 3)
_n = _idx(np.random.default_rng(3), (4,), 0, 5)


def _max_and_index(m):  # a variadic reduction that is no monoid of its own
    def combine(a, b):
        take_b = (b[0] > a[0]) | ((b[0] == a[0]) & (b[1] < a[1]))
        return m.np.where(take_b, b[0], a[0]), m.np.where(take_b, b[1], a[1])

    return combine


# name: (primitive, f(ns, *args), args, in_axes)
HIGHER_ORDER_CASES = {
    "reduce_variadic": (
        "reduce",
        lambda m, x: m.lax.reduce(
            (x, m.lax.broadcasted_iota(np.int32, x.shape, 1)),
            (np.float64(-np.inf), np.int32(0)),
            _max_and_index(m),
            (1,),
        ),
        [_a(4, 3, 5)],
        1,
    ),
    "cond_batched_pred": (
        "cond",
        lambda m, x, p: m.lax.cond(p > 0, lambda x: m.np.sin(x), lambda x: m.np.cos(x) * 2, x),
        [_a(4, 3), _a(4)],
        0,
    ),
    "cond_shared_pred": (
        "cond",
        lambda m, x, p: m.lax.cond(p > 0, lambda x: m.np.sin(x), lambda x: x * 2, x),
        [_a(4, 3), _a()],
        (0, None),
    ),
    "cond_closure": (
        "cond",
        lambda m, x, w: m.lax.cond(m.np.sum(x) > 0, lambda: x * w, lambda: x - w),
        [_a(4, 3), _a(3, 4)],
        (0, 1),
    ),
    "switch": (
        "cond",
        lambda m, x, i: m.lax.switch(i, [lambda x: x, lambda x: m.np.exp(x), lambda x: -x], x),
        [_a(4, 3), _i],
        0,
    ),
    "scan_batched_xs": (
        "scan",
        lambda m, c, xs: m.lax.scan(lambda c, x: (c * 0.5 + x, m.np.sin(c)), c, xs),
        [_a(3), _a(4, 5, 3)],
        (None, 0),
    ),
    "scan_batched_init": (
        "scan",
        lambda m, c, xs: m.lax.scan(lambda c, x: (c * x, c + x), c, xs),
        [_a(4, 3), _a(5, 3)],
        (0, None),
    ),
    "fori_loop": (
        "scan",
        lambda m, x: m.lax.fori_loop(0, 3, lambda i, v: v * v - 0.5, x),
        [_a(4, 3)],
        1,
    ),
    "map": ("scan", lambda m, x: m.lax.map(lambda r: m.np.sum(r**2), x), [_a(4, 5, 3)], 0),
    "while_batched_cond": (
        "while",
        lambda m, x, n: m.lax.while_loop(
            lambda s: s[0] < n, lambda s: (s[0] + 1, s[1] * 1.5 + 1), (0, x)
        )[1],
        [_a(4, 3), _n],
        0,
    ),
    "while_shared_cond": (
        "while",
        lambda m, x: m.lax.while_loop(
            lambda s: s[0] < 3, lambda s: (s[0] + 1, m.np.sin(s[1])), (0, x)
        )[1],
        [_a(4, 3)],
        0,
    ),
    "associative_scan": (
        "associative_scan",
        lambda m, x: m.lax.associative_scan(m.np.add, x),
        [_a(3, 5)],
        1,
    ),
    "associative_scan_pair": (
        "associative_scan",
        lambda m, a, b: m.lax.associative_scan(
            lambda p, q: (p[0] * q[0], q[0] * p[1] + q[1]), (a, b), axis=1
        ),
        [_a(4, 2, 5), _a(4, 2, 5)],
        0,
    ),
}


@pytest.mark.parametrize("name", sorted(HIGHER_ORDER_CASES))
def test_vmap_higher_order(name):
    prim, f, args, in_axes = HIGHER_ORDER_CASES[name]
    if P.registry.get(prim) not in batching_rules:
        pytest.skip(f"no vmap batching rule for {prim} yet")
    got = vmap(functools.partial(f, _fx), in_axes=in_axes)(*args)
    want = jax.vmap(functools.partial(f, _jx), in_axes=in_axes)(*args)
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-12)
    functx.typecheck_jaxpr(functx.make_jaxpr(vmap(functools.partial(f, _fx), in_axes))(*args))


@_has_rule("scan")
def test_grad_of_vmap_of_scan_and_vmap_of_grad():
    def f(m, vm, w, xs):
        def body(c, x):
            return m.np.tanh(c * w + x), c

        return m.np.sum(vm(lambda x: m.lax.scan(body, x[0], x)[0])(xs))

    w, xs = np.float64(0.7), _a(3, 4, 2)
    got = functx.grad(functools.partial(f, _fx, vmap), argnums=(0, 1))(w, xs)
    want = jax.grad(functools.partial(f, _jx, jax.vmap), argnums=(0, 1))(w, xs)
    for g, v in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(v), rtol=1e-9)


def _custom_fns(ns, cj, cv):
    @cj
    def softplus(x):
        return ns.log1p(ns.exp(x))

    @softplus.defjvp
    def _softplus_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        return softplus(x), t * 3.0 / (1 + ns.exp(-x))  # 3x the true derivative, on purpose

    @cv
    def clip_mul(x, y):
        return x * y

    def fwd(x, y):
        return x * y, (x, y)

    def bwd(res, g):
        x, y = res
        return ns.clip(g * y, -0.5, 0.5), g * x * 2

    clip_mul.defvjp(fwd, bwd)
    return softplus, clip_mul


def _tree_close(got, want):
    for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-10, atol=1e-12)


@_has_rule("custom_jvp_call")
def test_vmap_custom_jvp():
    fs, _ = _custom_fns(fnp, functx.custom_jvp, functx.custom_vjp)
    js, _ = _custom_fns(jnp, jax.custom_jvp, jax.custom_vjp)
    xs = _a(4, 3)
    _tree_close(vmap(fs)(xs), jax.vmap(js)(xs))
    _tree_close(
        functx.grad(lambda x: fnp.sum(vmap(fs)(x)))(xs),
        jax.grad(lambda x: jnp.sum(jax.vmap(js)(x)))(xs),
    )
    _tree_close(
        vmap(functx.grad(lambda x: fnp.sum(fs(x))))(xs),
        jax.vmap(jax.grad(lambda x: jnp.sum(js(x))))(xs),
    )
    _tree_close(functx.jvp(vmap(fs), (xs,), (xs,)), jax.jvp(jax.vmap(js), (xs,), (xs,)))
    _tree_close(functx.jacfwd(vmap(fs))(xs), jax.jacfwd(jax.vmap(js))(xs))


@_has_rule("custom_vjp_call")
def test_vmap_custom_vjp():
    _, fc = _custom_fns(fnp, functx.custom_jvp, functx.custom_vjp)
    _, jc = _custom_fns(jnp, jax.custom_jvp, jax.custom_vjp)
    xs, w = _a(4, 3), _a(3)
    _tree_close(vmap(fc, (0, None))(xs, w), jax.vmap(jc, (0, None))(xs, w))
    _tree_close(
        functx.grad(lambda x, w: fnp.sum(vmap(fc, (0, None))(x, w)), (0, 1))(xs, w),
        jax.grad(lambda x, w: jnp.sum(jax.vmap(jc, (0, None))(x, w)), (0, 1))(xs, w),
    )
    _tree_close(
        vmap(functx.grad(lambda x, w: fnp.sum(fc(x, w)), (0, 1)), (0, None))(xs, w),
        jax.vmap(jax.grad(lambda x, w: jnp.sum(jc(x, w)), (0, 1)), (0, None))(xs, w),
    )
    _tree_close(
        functx.jacrev(vmap(lambda x: fc(x, w)))(xs), jax.jacrev(jax.vmap(lambda x: jc(x, w)))(xs)
    )
