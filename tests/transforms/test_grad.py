"""grad / vjp / value_and_grad / jacfwd / jacrev / hessian.

Every differentiable ``functx.numpy`` / ``functx.nn`` function is checked with ``check_grads``
(order 2, forward and reverse, float64) on hypothesis-drawn shapes and values in its domain, and
against ``jax.vjp`` / ``jax.jvp`` on identical inputs; then the numerics users hit (stable softmax,
safe norms, ties), higher-order derivatives, composition (pytrees, has_aux, argnums, closures),
the printed gradient Jaxprs and their size, and the error messages.
"""

from __future__ import annotations

import inspect
import types
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functx
import functx.numpy as fnp
from functx import lax
from functx.errors import FunctxTypeError
from functx.test_util import check_grads

jax = pytest.importorskip("jax")
jnp = jax.numpy

FX = types.SimpleNamespace(np=fnp, nn=functx.nn, linalg=fnp.linalg, lax=lax)
JX = types.SimpleNamespace(np=jnp, nn=jax.nn, linalg=jnp.linalg, lax=jax.lax)


def _jitted(transform):
    """A JAX transform whose result is jit-compiled (JAX's eager transforms dispatch slowly)."""
    return lambda *a, **kw: jax.jit(transform(*a, **kw))


jgrad, jvalue_and_grad = _jitted(jax.grad), _jitted(jax.value_and_grad)
jhessian, jjacrev, jjacfwd = _jitted(jax.hessian), _jitted(jax.jacrev), _jitted(jax.jacfwd)


# --- argument makers: ``gen(rng, shape) -> float64 array`` in a function's domain ---------------
def U(lo, hi):
    return lambda rng, s: rng.uniform(lo, hi, s)


def AWAY(gap, hi=2.0):
    """|x| in [gap, hi] with a random sign: away from a kink or pole at 0."""
    return lambda rng, s: rng.choice([-1.0, 1.0], s) * rng.uniform(gap, hi, s)


def DISTINCT(lo=-2.0, hi=2.0):
    """Values at least (hi - lo) / (2 n) apart: no ties (max/min/sort are smooth there)."""

    def gen(rng, s):
        n = int(np.prod(s, dtype=np.int64))
        return rng.permutation(np.linspace(lo, hi, 2 * max(n, 1)))[:n].reshape(s)

    return gen


N = U(-2, 2)


@dataclass
class Fn:
    """``f(m, *args)`` with m the namespace (functx or JAX); ``args(rng, shape)`` makes the args."""

    f: object
    args: object
    min_dims: int = 0
    jax: bool = True  # also compared with JAX (False where JAX's semantics differ on purpose)


def _ew(f, *gens, min_dims=0):
    return Fn(f, lambda rng, s: [g(rng, s) for g in gens], min_dims)


def _mat(f, shapes):
    """Arguments of fixed-rank shapes built from the drawn sizes: shapes(s) -> list of shapes."""
    return Fn(f, lambda rng, s: [rng.uniform(-1.5, 1.5, sh) for sh in shapes(_dims(s))])


def _dims(s):
    """Three sizes from the drawn shape (padded with 2, 3, 1)."""
    return tuple(s) + (2, 3, 1)[len(s) :]


FNS: dict[str, Fn] = {
    # elementwise unary math
    **{
        name: _ew(lambda m, x, name=name: getattr(m.np, name)(x), gen)
        for name, gen in {
            "sin": N,
            "cos": N,
            "tan": U(-1.2, 1.2),
            "arcsin": U(-0.8, 0.8),
            "arccos": U(-0.8, 0.8),
            "arctan": N,
            "sinh": N,
            "cosh": N,
            "tanh": N,
            "arcsinh": N,
            "arccosh": U(1.2, 3),
            "arctanh": U(-0.8, 0.8),
            "exp": N,
            "exp2": N,
            "expm1": N,
            "log": U(0.3, 3),
            "log1p": U(-0.6, 3),
            "log2": U(0.3, 3),
            "log10": U(0.3, 3),
            "sqrt": U(0.3, 3),
            "cbrt": AWAY(0.3),
            "square": N,
            "reciprocal": AWAY(0.3),
            "abs": AWAY(0.1),
            "negative": N,
            "positive": N,
            "deg2rad": N,
            "rad2deg": N,
            "sinc": AWAY(0.1),
        }.items()
    },
    # elementwise binary
    **{
        name: _ew(lambda m, x, y, name=name: getattr(m.np, name)(x, y), gx, gy)
        for name, (gx, gy) in {
            "add": (N, N),
            "subtract": (N, N),
            "multiply": (N, N),
            "divide": (N, AWAY(0.3)),
            "power": (U(0.3, 2), N),
            "float_power": (U(0.3, 2), N),
            "arctan2": (AWAY(0.3), AWAY(0.3)),
            "hypot": (AWAY(0.3), AWAY(0.3)),
            "logaddexp": (N, N),
            "logaddexp2": (N, N),
            "maximum": (U(-2, -0.1), U(0.1, 2)),
            "minimum": (U(0.1, 2), U(-2, -0.1)),
            "fmax": (U(0.1, 2), U(-2, -0.1)),
            "fmin": (U(-2, -0.1), U(0.1, 2)),
            "remainder": (U(0.1, 0.9), U(1.1, 2)),
            "fmod": (U(0.1, 0.9), U(1.1, 2)),
            "copysign": (AWAY(0.1), AWAY(0.1)),
        }.items()
    },
    "broadcast_row": _ew(lambda m, x, y: x * y[..., :1] + m.np.sin(y), N, N, min_dims=1),
    "power_int": _ew(lambda m, x: x**3 + m.np.power(x, 2) - x**-2, AWAY(0.3)),
    "scalar_ops": _ew(lambda m, x: 2.0 * x - 1 / (x + 3.0) + x / 2, U(-2, 2)),
    "where": _ew(lambda m, x, y: m.np.where(x > y, x * y, m.np.sin(y)), N, N),
    "clip": _ew(
        lambda m, x: m.np.clip(x, -0.5, 0.5),
        lambda rng, s: (
            rng.choice([-1.0, 1.0], s)
            * np.where(rng.random(s) < 0.5, rng.uniform(0, 0.4, s), rng.uniform(0.6, 2, s))
        ),
    ),
    # reductions
    "sum": _ew(lambda m, x: m.np.sum(x**2, axis=-1), N, min_dims=1),
    "sum_keepdims": _ew(lambda m, x: x * m.np.sum(x, axis=0, keepdims=True), N, min_dims=1),
    "mean": _ew(lambda m, x: m.np.mean(m.np.sin(x)), N),
    "prod": _ew(lambda m, x: m.np.prod(x, axis=-1), U(-1.5, 1.5), min_dims=1),
    "prod_with_zeros": _ew(
        lambda m, x: m.np.prod(x),
        lambda rng, s: np.where(rng.random(s) < 0.4, 0.0, rng.uniform(-1.5, 1.5, s)),
    ),
    "max": _ew(lambda m, x: m.np.max(x, axis=-1), DISTINCT(), min_dims=1),
    "min": _ew(lambda m, x: m.np.min(x), DISTINCT()),
    "amax_keepdims": _ew(
        lambda m, x: m.np.amax(x, axis=0, keepdims=True) * x, DISTINCT(), min_dims=1
    ),
    "ptp": _ew(lambda m, x: m.np.ptp(x, axis=0), DISTINCT(), min_dims=1),
    "var": _ew(lambda m, x: m.np.var(x, axis=-1), N, min_dims=1),
    "std": Fn(
        lambda m, x: m.np.std(x, axis=0), lambda rng, s: [DISTINCT()(rng, (s[0] + 1,) + s[1:])], 1
    ),
    "var_ddof": _ew(lambda m, x: m.np.var(x, ddof=1), N, min_dims=1),
    "average": _ew(lambda m, x, w: m.np.average(x, axis=-1, weights=w), N, U(0.5, 2), min_dims=1),
    "cumsum": _ew(lambda m, x: m.np.cumsum(x, axis=-1), N, min_dims=1),
    "cumprod": _ew(lambda m, x: m.np.cumprod(x, axis=0), U(-1.5, 1.5), min_dims=1),
    "cumsum_flat": _ew(lambda m, x: m.np.cumsum(x), N),
    "trace": _ew(lambda m, x: m.np.trace(x), N, min_dims=2),
    "linalg_norm": _ew(lambda m, x: m.linalg.norm(x), N),
    "linalg_norm_axis": _ew(lambda m, x: m.linalg.norm(x, axis=-1), N, min_dims=1),
    "linalg_norm_ord1": _ew(lambda m, x: m.linalg.norm(x, ord=1, axis=0), AWAY(0.1), min_dims=1),
    "linalg_norm_ord3": _ew(lambda m, x: m.linalg.norm(x, ord=3, axis=0), AWAY(0.3), min_dims=1),
    "linalg_norm_inf": _ew(
        lambda m, x: m.linalg.norm(x, ord=np.inf, axis=-1),
        lambda rng, s: DISTINCT(0.2, 2)(rng, s) * rng.choice([-1.0, 1.0], s),
        min_dims=1,
    ),
    "linalg_norm_fro": _ew(lambda m, x: m.linalg.norm(x, ord="fro", axis=(0, 1)), N, min_dims=2),
    # contraction
    "matmul": _mat(lambda m, a, b: m.np.matmul(a, b), lambda d: [(d[0], d[1]), (d[1], d[2])]),
    "matmul_batched": _mat(lambda m, a, b: a @ b, lambda d: [(2, d[0], d[1]), (d[1], d[2])]),
    "matmul_vec": _mat(lambda m, a, b: a @ b, lambda d: [(d[0], d[1]), (d[1],)]),
    "dot": _mat(lambda m, a, b: m.np.dot(a, b), lambda d: [(d[0],), (d[0],)]),
    "vdot": _mat(lambda m, a, b: m.np.vdot(a, b), lambda d: [(d[0], d[1]), (d[0], d[1])]),
    "outer": _mat(lambda m, a, b: m.np.outer(a, b), lambda d: [(d[0],), (d[1],)]),
    "inner": _mat(lambda m, a, b: m.np.inner(a, b), lambda d: [(d[0], d[1]), (d[2], d[1])]),
    "kron": _mat(lambda m, a, b: m.np.kron(a, b), lambda d: [(d[0], d[1]), (d[2], 2)]),
    "einsum_matmul": _mat(
        lambda m, a, b: m.np.einsum("ij,jk->ik", a, b), lambda d: [(d[0], d[1]), (d[1], d[2])]
    ),
    "einsum_batch_trace": _mat(
        lambda m, a, b: m.np.einsum("bij,bji->b", a, b),
        lambda d: [(d[2], d[0], d[1]), (d[2], d[1], d[0])],
    ),
    "einsum_outer_sum": _mat(
        lambda m, a, b: m.np.einsum("i,j->", a, b), lambda d: [(d[0],), (d[1],)]
    ),
    "tensordot": _mat(
        lambda m, a, b: m.np.tensordot(a, b, axes=([1, 0], [0, 2])),
        lambda d: [(d[0], d[1]), (d[1], 2, d[0])],
    ),
    "tensordot_int": _mat(
        lambda m, a, b: m.np.tensordot(a, b, 1), lambda d: [(d[0], d[1]), (d[1], d[2])]
    ),
    # indexing
    "getitem_basic": _ew(lambda m, x: x[1:, ::-1] * x[0, None], N, min_dims=2),
    "getitem_int": _ew(lambda m, x: x[-1] + x[0], N, min_dims=1),
    "getitem_array": Fn(
        lambda m, x: x[np.array([0, 2, 2, -1])] * 2,
        lambda rng, s: [rng.standard_normal((3,) + tuple(s[1:]))],
        1,
    ),
    "getitem_bool_mask": Fn(
        lambda m, x: m.np.where(x > 0, x, 0.0)[np.array([True, False, True])],
        lambda rng, s: [rng.standard_normal((3,) + tuple(s[1:]))],
        1,
    ),
    "getitem_mixed": Fn(
        lambda m, x: x[:, np.array([1, 0, 1])],
        lambda rng, s: [rng.standard_normal((s[0], 2) + tuple(s[2:]))],
        2,
    ),
    "take": Fn(
        lambda m, x: m.np.take(x, np.array([[0, 1], [1, 1]]), axis=0),
        lambda rng, s: [rng.standard_normal((2,) + tuple(s[1:]))],
        1,
    ),
    "take_along_axis": Fn(
        lambda m, x: m.np.take_along_axis(x, np.array([[2, 0, 1, 1], [0, 0, 2, 1]]), axis=-1),
        lambda rng, s: [rng.standard_normal((2, 3))],
    ),
    "at_set": _ew(lambda m, x: x.at[0].set(m.np.sin(x[-1])), N, min_dims=1),
    "at_add_dup": Fn(
        lambda m, x, v: x.at[np.array([0, 2, 0])].add(v),
        lambda rng, s: [rng.standard_normal((3,)), rng.standard_normal((3,))],
    ),
    # (JAX differentiates scatter_mul only with unique_indices=True, which functx does not take)
    "at_mul": Fn(
        lambda m, x, v: x.at[np.array([1, 0, 1])].multiply(v),
        lambda rng, s: [rng.standard_normal((3,)), AWAY(0.3)(rng, (3,))],
        jax=False,
    ),
    "at_min_max": Fn(
        lambda m, x, v: x.at[np.array([1, 3])].min(v) + x.at[np.array([0, 2])].max(v),
        lambda rng, s: list(np.split(DISTINCT()(rng, (6,)), [4])),
    ),
    "at_get_slice": _ew(lambda m, x: x.at[1:].get().sum() * 3 + x.at[:1].set(2.0), N, min_dims=1),
    "diagonal": _mat(
        lambda m, x: m.np.diagonal(x, 1) * 2 + m.np.diag(x)[:1], lambda d: [(d[0], d[1] + 1)]
    ),
    "diag_vec": _mat(lambda m, x: m.np.diag(x) + m.np.diag(x[1:], k=-1), lambda d: [(d[0] + 1,)]),
    "tril_triu": _ew(lambda m, x: m.np.tril(x) - 2 * m.np.triu(x, 1), N, min_dims=2),
    # shapes
    "concatenate": _ew(lambda m, x, y: m.np.concatenate([x, y * 2, x], axis=-1), N, N, min_dims=1),
    "stack": _ew(lambda m, x, y: m.np.stack([x, y], axis=-1), N, N),
    "hstack_vstack": _ew(
        lambda m, x, y: m.np.hstack([x, y]) * m.np.vstack([x, y]).sum(), N, N, min_dims=1
    ),
    "pad_constant": _ew(lambda m, x: m.np.pad(x, 1, constant_values=0.5), N),
    "pad_edge": _ew(lambda m, x: m.np.pad(x, (1, 2), mode="edge"), N, min_dims=1),
    "pad_reflect": Fn(
        lambda m, x: m.np.pad(x, ((2, 1),), mode="reflect"),
        lambda rng, s: [rng.standard_normal((s[0] + 2,))],
        1,
    ),
    "pad_wrap": _ew(lambda m, x: m.np.pad(x, 2, mode="wrap"), N, min_dims=1),
    "roll": _ew(lambda m, x: m.np.roll(x, 1, axis=-1) * m.np.roll(x, -2), N, min_dims=1),
    "tile": _ew(lambda m, x: m.np.tile(x, (2, 1)), N),
    "repeat": _ew(lambda m, x: m.np.repeat(x, 2, axis=-1), N, min_dims=1),
    "repeat_array": Fn(
        lambda m, x: m.np.repeat(x, np.array([1, 0, 3]), axis=0),
        lambda rng, s: [rng.standard_normal((3,) + tuple(s[1:]))],
        1,
    ),
    "flip": _ew(lambda m, x: m.np.flip(x) * x, N),
    "reshape_transpose": _ew(lambda m, x: m.np.reshape(m.np.transpose(x), (-1,)), N),
    "moveaxis_swapaxes": _ew(
        lambda m, x: m.np.swapaxes(m.np.moveaxis(x, 0, -1), 0, -1), N, min_dims=2
    ),
    "squeeze_expand": _ew(lambda m, x: m.np.squeeze(m.np.expand_dims(x, (0, 2)), 0), N, min_dims=1),
    "broadcast_to": _ew(lambda m, x: m.np.broadcast_to(x, (2,) + x.shape), N),
    "split": _ew(lambda m, x: m.np.split(m.np.concatenate([x, x * 2]), 2)[1], N, min_dims=1),
    "ravel": _ew(lambda m, x: m.np.ravel(x) ** 2, N),
    # nn
    "relu": _ew(lambda m, x: m.nn.relu(x), AWAY(0.1)),
    "relu6": _ew(
        lambda m, x: m.nn.relu6(x),
        lambda rng, s: np.where(
            rng.random(s) < 0.5, rng.uniform(0.1, 5.9, s), rng.uniform(6.1, 8, s)
        ),
    ),
    "sigmoid": _ew(lambda m, x: m.nn.sigmoid(x), U(-4, 4)),
    "log_sigmoid": _ew(lambda m, x: m.nn.log_sigmoid(x), U(-4, 4)),
    "silu": _ew(lambda m, x: m.nn.silu(x), N),
    "softplus": _ew(lambda m, x: m.nn.softplus(x), U(-4, 4)),
    "elu": _ew(lambda m, x: m.nn.elu(x), AWAY(0.1)),
    "leaky_relu": _ew(lambda m, x: m.nn.leaky_relu(x), AWAY(0.1)),
    "gelu_tanh": _ew(lambda m, x: m.nn.gelu(x, approximate=True), N),
    "gelu_erf": _ew(lambda m, x: m.nn.gelu(x, approximate=False), N),
    "logsumexp": _ew(lambda m, x: m.nn.logsumexp(x), N),
    "logsumexp_axis_b": _ew(
        lambda m, x, b: m.nn.logsumexp(x, axis=-1, b=b), N, U(0.5, 2), min_dims=1
    ),
    "softmax": _ew(lambda m, x: m.nn.softmax(x, axis=-1), N, min_dims=1),
    "log_softmax": _ew(lambda m, x: m.nn.log_softmax(x, axis=0), N, min_dims=1),
    "standardize": Fn(
        lambda m, x: m.nn.standardize(x, axis=-1),
        lambda rng, s: [DISTINCT()(rng, s[:-1] + (s[-1] + 1,))],
        1,
    ),
}

shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


def _draw_args(case, data):
    shape = data.draw(shapes.filter(lambda s: len(s) >= case.min_dims), label="shape")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    return case.args(rng, shape)


@pytest.mark.parametrize("name", sorted(FNS))
@settings(max_examples=3)
@given(data=st.data())
def test_check_grads(name, data):
    case = FNS[name]
    args = _draw_args(case, data)
    with np.errstate(all="ignore"):
        check_grads(lambda *a: case.f(FX, *a), args, order=2, modes=("fwd", "rev"))


# A selection across the groups (each JAX comparison costs a compile).
JAX_SELECTION = [
    "arccosh",
    "log1p",
    "cbrt",
    "sinc",
    "abs",
    "power",
    "arctan2",
    "hypot",
    "logaddexp",
    "maximum",
    "remainder",
    "copysign",
    "broadcast_row",
    "where",
    "clip",
    "prod_with_zeros",
    "max",
    "amax_keepdims",
    "var_ddof",
    "std",
    "average",
    "cumprod",
    "linalg_norm_axis",
    "linalg_norm_inf",
    "linalg_norm_fro",
    "matmul_batched",
    "einsum_batch_trace",
    "tensordot",
    "getitem_basic",
    "getitem_mixed",
    "take_along_axis",
    "at_add_dup",
    "at_min_max",
    "diagonal",
    "pad_reflect",
    "roll",
    "repeat_array",
    "tile",
    "gelu_erf",
    "gelu_tanh",
    "logsumexp_axis_b",
    "softmax",
    "log_softmax",
    "standardize",
    "softplus",
    "elu",
]


def _jax_vjp_jvp(f, args, ct, ts):
    def both(args, ct, ts):
        out, f_vjp = jax.vjp(f, *args)
        return out, f_vjp(ct), jax.jvp(f, args, ts)[1]

    return jax.jit(both)(tuple(args), ct, tuple(ts))


@pytest.mark.parametrize("name", JAX_SELECTION)
def test_vjp_and_jvp_match_jax(name):
    case = FNS[name]
    assert case.jax
    rng = np.random.default_rng(sum(map(ord, name)))
    args = case.args(rng, (2, 3, 2)[: max(case.min_dims, 2)])
    out, f_vjp = functx.vjp(lambda *a: case.f(FX, *a), *args)
    ct = rng.standard_normal(np.shape(out))
    ts = [rng.standard_normal(np.shape(a)) for a in args]
    _, t = functx.jvp(lambda *a: case.f(FX, *a), tuple(args), tuple(ts))
    jout, jg, jt = _jax_vjp_jvp(lambda *a: case.f(JX, *a), args, ct, ts)
    np.testing.assert_allclose(out, jout, rtol=1e-12, atol=1e-12)
    for g, want in zip(f_vjp(ct), jg):
        np.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(t, jt, rtol=1e-10, atol=1e-12)


# --- Numerics users hit ---------------------------------------------------------------------------
LARGE = np.array([1000.0, 0.0, -np.inf, 999.0])


@pytest.mark.parametrize("name", ["logsumexp", "softmax", "log_softmax"])
def test_stable_gradients_of_large_and_minus_inf_inputs(name):
    w = np.array([0.0, 1.0, 2.0, 3.0])

    def f(m, x):
        out = getattr(m.nn, name)(x)
        return out if name == "logsumexp" else m.np.sum(m.np.where(m.np.isfinite(out), out, 0) * w)

    g = functx.grad(lambda x: f(FX, x))(LARGE)
    want = jgrad(lambda x: f(JX, x))(LARGE)
    assert np.all(np.isfinite(g)), g
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-12)
    assert g[2] == 0.0  # the -inf entry gets no gradient
    # a whole row of -inf (an empty softmax) stays finite in logsumexp's gradient
    g2 = functx.grad(lambda x: functx.nn.logsumexp(x[:1]) + functx.nn.logsumexp(x))(
        np.array([2.0, -np.inf])
    )
    assert np.all(np.isfinite(g2))


def test_norm_at_zero_has_zero_gradient():
    # functx's linalg.norm is deliberately safe here; JAX's gives NaN (sqrt at 0).
    for x in [np.zeros(3), np.zeros((2, 2))]:
        g = np.asarray(functx.grad(lambda v: fnp.linalg.norm(v))(x))
        assert np.all(np.isfinite(g)) and np.all(g == 0), g
        assert np.all(np.isnan(jgrad(jnp.linalg.norm)(x)))
    # second derivatives stay finite too (norm is not differentiable at 0: 0 is the safe choice)
    h = np.asarray(functx.hessian(lambda v: fnp.linalg.norm(v))(np.zeros(3)))
    assert np.all(h == 0)
    # away from zero it agrees with JAX, rows at zero included
    x = np.array([[3.0, 4.0], [0.0, 0.0]])
    g = functx.grad(lambda v: fnp.sum(fnp.linalg.norm(v, axis=1)))(x)
    np.testing.assert_allclose(g, [[0.6, 0.8], [0.0, 0.0]])


def _safe_sqrt(m, x):
    ok = x > 0
    return m.np.where(ok, m.np.sqrt(m.np.where(ok, x, 1.0)), 0.0)


def _safe_log(m, x):
    ok = x > 0
    return m.np.where(ok, m.np.log(m.np.where(ok, x, 1.0)), -10.0)


@pytest.mark.parametrize("f", [_safe_sqrt, _safe_log])
def test_double_where_trick_gives_no_nan(f):
    x = np.array([-1.0, 0.0, 4.0])
    g = functx.grad(lambda v: fnp.sum(f(FX, v)))(x)
    assert np.all(np.isfinite(g))
    np.testing.assert_allclose(g, jgrad(lambda v: jnp.sum(f(JX, v)))(x))
    # the single where does give NaN, in JAX as in functx (the cotangent 0 times inf)
    bad = functx.grad(lambda v: fnp.sum(fnp.where(v > 0, fnp.sqrt(v), 0.0)))(x)
    assert np.isnan(bad[0]) and np.isnan(bad[1]) and bad[2] == 0.25


def test_max_min_ties_split_the_gradient_like_jax():
    x = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    for name in ["max", "min", "amax", "amin"]:
        g = functx.grad(lambda v: fnp.sum(getattr(fnp, name)(v, axis=1)))(x)
        want = jgrad(lambda v: jnp.sum(getattr(jnp, name)(v, axis=1)))(x)
        np.testing.assert_allclose(g, want, err_msg=name)
    np.testing.assert_allclose(functx.grad(fnp.max)(np.array([1.0, 3.0, 3.0])), [0, 0.5, 0.5])
    ga, gb = functx.grad(lambda a, b: fnp.maximum(a, b), (0, 1))(np.float64(1.0), np.float64(1.0))
    assert float(ga) == float(gb) == 0.5
    ga, gb = functx.grad(lambda a, b: fnp.minimum(a, b), (0, 1))(np.float64(2.0), np.float64(2.0))
    assert float(ga) == float(gb) == 0.5
    # clip at its bounds, as JAX
    xs = np.array([-0.5, 0.0, 0.5, 0.7])
    np.testing.assert_allclose(
        functx.grad(lambda v: fnp.sum(fnp.clip(v, -0.5, 0.5)))(xs),
        jgrad(lambda v: jnp.sum(jnp.clip(v, -0.5, 0.5)))(xs),
    )


def test_abs_sign_at_zero_like_jax():
    assert float(functx.grad(fnp.abs)(np.float64(0.0))) == float(jgrad(jnp.abs)(0.0)) == 1.0
    assert float(functx.grad(fnp.abs)(np.float64(-0.0))) == float(jgrad(jnp.abs)(-0.0))
    x = np.array([-2.0, 0.0, 3.0])
    np.testing.assert_array_equal(
        functx.grad(lambda v: fnp.sum(fnp.abs(v)))(x), jgrad(lambda v: jnp.sum(jnp.abs(v)))(x)
    )


def test_pow_at_zero():
    x = np.array([0.0, 0.0, 2.0])
    y = np.array([0.0, 2.0, 0.5])
    gx, gy = functx.grad(lambda a, b: fnp.sum(a**b), (0, 1))(x, y)
    jx, jy = jgrad(lambda a, b: jnp.sum(a**b), (0, 1))(x, y)
    np.testing.assert_allclose(gy, jy)  # d/dy x**y = log(x) x**y, 0 at x = 0
    np.testing.assert_allclose(gx[1:], jx[1:])
    # d/dx x**y at x = y = 0: functx gives the limit 0; JAX 0.10 computes 0 * 0**-1 = NaN
    assert gx[0] == 0.0 and np.isnan(jx[0])
    np.testing.assert_allclose(functx.grad(lambda v: v**2)(np.float64(0.0)), 0.0)


def test_prod_with_zeros_gradient_is_exact():
    x = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 5.0], [1.0, 2.0, 4.0]])
    g = functx.grad(lambda v: fnp.sum(fnp.prod(v, axis=1)))(x)
    np.testing.assert_allclose(g, [[6, 0, 0], [0, 0, 0], [8, 4, 2]])
    np.testing.assert_allclose(g, jgrad(lambda v: jnp.sum(jnp.prod(v, axis=1)))(x))
    x = np.array([0.0, 2.0, 0.0, 3.0])
    np.testing.assert_allclose(
        functx.grad(lambda v: fnp.sum(fnp.cumprod(v)))(x),
        jgrad(lambda v: jnp.sum(jnp.cumprod(v)))(x),
    )


# --- Higher order ---------------------------------------------------------------------------------
def test_third_derivative_of_sin():
    for x in [0.3, np.float64(1.2), np.float32(-0.7)]:
        got = functx.grad(functx.grad(functx.grad(fnp.sin)))(x)
        np.testing.assert_allclose(got, -np.cos(np.float64(x)), rtol=1e-6)
        # (a Python float is the default float: float64 in the suite's x64 mode)
        want_dtype = np.float32 if isinstance(x, np.float32) else np.float64
        assert np.asarray(got).dtype == want_dtype
    j = functx.make_jaxpr(functx.grad(functx.grad(functx.grad(fnp.sin))))(np.float32(1))
    assert str(j) == "{ lambda ; a:f32[]. let b:f32[] = cos a; c:f32[] = mul -1.0:f32[] b in (c,) }"


def _dict_loss(m, p):
    return m.np.sum(m.np.tanh(p["w"] @ p["x"]) * p["b"]) + m.np.sum(p["x"] ** 3) * p["b"][0]


def test_hessian_of_a_pytree_function_matches_jax(rng):
    p = {"w": rng.standard_normal((2, 3)), "x": rng.standard_normal(3), "b": rng.standard_normal(2)}
    h = functx.hessian(lambda q: _dict_loss(FX, q))(p)
    want = jhessian(lambda q: _dict_loss(JX, q))(p)
    assert set(h) == set(want)
    for k1 in want:
        for k2 in want[k1]:
            np.testing.assert_allclose(
                h[k1][k2], want[k1][k2], rtol=1e-10, atol=1e-12, err_msg=f"{k1},{k2}"
            )
    # several argnums: a nested tuple of blocks
    f = lambda m, x, b: _dict_loss(m, {"w": p["w"], "x": x, "b": b})  # noqa: E731
    h = functx.hessian(lambda x, b: f(FX, x, b), argnums=(0, 1))(p["x"], p["b"])
    want = jhessian(lambda x, b: f(JX, x, b), argnums=(0, 1))(p["x"], p["b"])
    for i in range(2):
        for j in range(2):
            np.testing.assert_allclose(h[i][j], want[i][j], rtol=1e-10, atol=1e-12)


def _vec_fun(m, x, y):
    return m.np.concatenate([m.np.sin(x) * y[0], m.np.cumsum(x * y[1]) ** 2])


def test_jacobians_match_jax(rng):
    x, y = rng.standard_normal(3), rng.standard_normal(2)
    for fx, jx in [(functx.jacrev, jjacrev), (functx.jacfwd, jjacfwd)]:
        got = fx(lambda a, b: _vec_fun(FX, a, b), argnums=(0, 1))(x, y)
        want = jx(lambda a, b: _vec_fun(JX, a, b), argnums=(0, 1))(x, y)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=1e-12)
    got = functx.jacfwd(functx.jacrev(lambda a: _vec_fun(FX, a, y)))(x)
    want = jjacfwd(jax.jacrev(lambda a: _vec_fun(JX, a, y)))(x)
    assert got.shape == (6, 3, 3)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    got = functx.jacrev(functx.jacfwd(lambda a: _vec_fun(FX, a, y)))(x)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_jvp_of_grad_is_a_hessian_vector_product(rng):
    x, v = rng.standard_normal(4), rng.standard_normal(4)

    def f(m, z):
        return m.np.sum(m.np.sin(z) * m.np.roll(z, 1)) + m.nn.logsumexp(z) ** 2

    g, hv = functx.jvp(functx.grad(lambda z: f(FX, z)), (x,), (v,))
    jg, jhv = jax.jit(lambda x, v: jax.jvp(jax.grad(lambda z: f(JX, z)), (x,), (v,)))(x, v)
    np.testing.assert_allclose(g, jg, rtol=1e-12)
    np.testing.assert_allclose(hv, jhv, rtol=1e-10)
    # and grad of a jvp (forward-over-reverse and reverse-over-forward agree)
    hv2 = functx.grad(lambda z: functx.jvp(lambda u: f(FX, u), (z,), (v,))[1])(x)
    np.testing.assert_allclose(hv2, jhv, rtol=1e-10)
    check_grads(functx.grad(lambda z: f(FX, z)), (x,), order=1)


def test_linearize_matches_jvp(rng):
    x, t = rng.standard_normal(3), rng.standard_normal(3)
    y, f_jvp = functx.linearize(lambda v: fnp.sin(v) * fnp.sum(v**2), x)
    jy, jt = jax.jvp(lambda v: jnp.sin(v) * jnp.sum(v**2), (x,), (t,))
    np.testing.assert_allclose(y, jy, rtol=1e-12)
    np.testing.assert_allclose(f_jvp(t), jt, rtol=1e-12)
    np.testing.assert_allclose(f_jvp(2 * t), 2 * jt, rtol=1e-12)


# --- Composition ----------------------------------------------------------------------------------
def _mlp_params(rng, sizes=(3, 8, 8, 2)):
    return {
        f"layer{i}": {"w": rng.standard_normal((a, b)) / np.sqrt(a), "b": rng.standard_normal(b)}
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:]))
    }


def _mlp_loss(m, params, x, y):
    h = x
    for i in range(len(params)):
        layer = params[f"layer{i}"]
        h = h @ layer["w"] + layer["b"]
        if i < len(params) - 1:
            h = m.nn.gelu(h)
    return m.np.mean(m.nn.log_softmax(h) * y)


def test_grad_through_an_mlp_with_a_dict_of_weights_matches_jax(rng):
    params = _mlp_params(rng)
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    g = functx.grad(lambda p: _mlp_loss(FX, p, x, y))(params)
    want = jgrad(lambda p: _mlp_loss(JX, p, x, y))(params)
    assert jax.tree_util.tree_structure(g) == jax.tree_util.tree_structure(want)
    for a, b in zip(jax.tree_util.tree_leaves(g), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13)
    (v, gx) = functx.value_and_grad(lambda xx: _mlp_loss(FX, params, xx, y))(x)
    jv, jgx = jvalue_and_grad(lambda xx: _mlp_loss(JX, params, xx, y))(x)
    np.testing.assert_allclose(v, jv, rtol=1e-12)
    np.testing.assert_allclose(gx, jgx, rtol=1e-10)


def _layer_norm(m, x, g, b):
    mu = m.np.mean(x, axis=-1, keepdims=True)
    var = m.np.var(x, axis=-1, keepdims=True)
    return m.np.sum(((x - mu) / m.np.sqrt(var + 1e-5) * g + b) ** 2 * m.np.arange(x.shape[-1]))


def _attention(m, q, k, v):
    s = q @ k.T / np.sqrt(q.shape[-1])
    return m.np.sum(m.nn.softmax(s, axis=-1) @ v)


@pytest.mark.parametrize(
    "model,shapes", [(_layer_norm, [(4, 6), (6,), (6,)]), (_attention, [(3, 4), (5, 4), (5, 2)])]
)
def test_small_models_match_jax(model, shapes, rng):
    args = [rng.standard_normal(s) for s in shapes]
    n = len(args)
    g = functx.grad(lambda *a: model(FX, *a), argnums=tuple(range(n)))(*args)
    want = jgrad(lambda *a: model(JX, *a), argnums=tuple(range(n)))(*args)
    for a, b in zip(g, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_value_and_grad_has_aux_and_argnums():
    def f(x, y, z):
        loss = fnp.sum(fnp.sin(x) * y) + z
        return loss, {"loss": loss, "n": x.shape[0]}

    x, y = np.array([0.1, 0.2]), np.array([3.0, 4.0])
    (v, aux), g = functx.value_and_grad(f, has_aux=True)(x, y, 1.0)
    np.testing.assert_allclose(v, np.sum(np.sin(x) * y) + 1.0)
    assert aux["n"] == 2 and np.isclose(aux["loss"], v)
    np.testing.assert_allclose(g, np.cos(x) * y)
    (v, aux), (gy, gz) = functx.value_and_grad(f, argnums=(1, 2), has_aux=True)(x, y, 1.0)
    np.testing.assert_allclose(gy, np.sin(x))
    assert float(gz) == 1.0
    g, aux = functx.grad(f, argnums=-2, has_aux=True)(x, y, 1.0)
    np.testing.assert_allclose(g, np.sin(x))
    # argnums tuple with a pytree argument, and a single argnums as a 1-tuple
    (gd,) = functx.grad(lambda d, s: fnp.sum(d["a"] * d["b"]) * s, argnums=(0,))(
        {"a": x, "b": y}, 2.0
    )
    np.testing.assert_allclose(gd["a"], 2 * y)
    np.testing.assert_allclose(gd["b"], 2 * x)


def test_grad_of_closures_over_arrays():
    w = fnp.asarray(np.array([1.0, -2.0, 3.0]))

    def outer(s):
        inner = lambda x: fnp.sum(fnp.sin(x * w) * s)  # noqa: E731
        return functx.grad(inner)(np.ones(3)).sum()

    s = np.float64(0.7)
    np.testing.assert_allclose(outer(s), np.sum(np.cos(w._value) * w._value * s))
    # the derivative of a closure that itself contains a grad over a closed-over tracer
    g = functx.grad(outer)(s)
    np.testing.assert_allclose(g, np.sum(np.cos(w._value) * w._value), rtol=1e-12)
    jw = np.array([1.0, -2.0, 3.0])
    want = jgrad(lambda s: jgrad(lambda x: jnp.sum(jnp.sin(x * jw) * s))(np.ones(3)).sum())(s)
    np.testing.assert_allclose(g, want, rtol=1e-12)


def test_stop_gradient():
    f = lambda x: fnp.sum(x * lax.stop_gradient(x) + lax.stop_gradient(fnp.exp(x)))  # noqa: E731
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(functx.grad(f)(x), x)
    np.testing.assert_allclose(
        functx.grad(f)(x),
        jgrad(lambda x: jnp.sum(x * jax.lax.stop_gradient(x) + jax.lax.stop_gradient(jnp.exp(x))))(
            x
        ),
    )
    # on pytrees with integer leaves, and under a second derivative
    out = lax.stop_gradient({"a": x, "i": np.arange(2)})
    assert np.asarray(out["i"]).dtype == np.arange(2).dtype
    assert (
        float(functx.grad(functx.grad(lambda v: v * lax.stop_gradient(v) ** 2))(np.float64(3.0)))
        == 0.0
    )


def test_integer_and_mixed_inputs():
    # allow_int gives float0 zeros for integer arguments, like JAX
    g = functx.grad(lambda x, i: x * i, argnums=(0, 1), allow_int=True)(
        np.float64(2.0), np.int32(3)
    )
    jg = jgrad(lambda x, i: x * i, argnums=(0, 1), allow_int=True)(np.float64(2.0), np.int32(3))
    assert float(g[0]) == float(jg[0]) == 3.0
    assert np.asarray(g[1]).dtype == np.asarray(jg[1]).dtype == jax.dtypes.float0
    # an integer argument that is not differentiated is just data
    assert float(functx.grad(lambda x, n: x**n)(np.float64(2.0), 3)) == 12.0
    # vjp w.r.t. an int input gives a float0 cotangent
    _, f_vjp = functx.vjp(lambda x, i: x * i, np.float64(2.0), np.int32(3))
    ct = f_vjp(np.float64(1.0))
    assert np.asarray(ct[1]).dtype == jax.dtypes.float0


def test_float32_and_weak_types():
    g = functx.grad(lambda x: fnp.sum(fnp.sin(x) * 2.0))(np.ones(3, np.float32))
    assert np.asarray(g).dtype == np.float32
    g = functx.grad(lambda x: x * 2)(1.0)  # a Python float: weakly typed, the default float
    assert float(g) == 2.0 and np.asarray(g).dtype == functx.dtypes.default_float()
    # a float32 scalar broadcast against a float64 array, differentiated in both
    ga, gb = functx.grad(lambda a, b: fnp.sum(a * b), (0, 1))(np.float32(2.0), np.ones(3))
    jga, jgb = jgrad(lambda a, b: jnp.sum(a * b), (0, 1))(np.float32(2.0), np.ones(3))
    assert np.asarray(ga).dtype == np.asarray(jga).dtype == np.float32
    assert np.asarray(gb).dtype == np.float64
    np.testing.assert_allclose(ga, jga)
    np.testing.assert_allclose(gb, jgb)


# --- Printed Jaxprs -------------------------------------------------------------------------------
F32 = np.float32
GOLDEN = [
    (
        lambda x: fnp.sin(x) * 2.0,
        [F32(1)],
        {},
        "{ lambda ; a:f32[]. let b:f32[] = cos a; c:f32[] = mul 2.0:f32[] b in (c,) }",
    ),
    (
        lambda x: fnp.sum(x**2),
        [np.ones(3, F32)],
        {},
        "{ lambda ; a:f32[3]. let b:f32[3] = mul 2.0:f32[] a in (b,) }",
    ),
    (
        lambda x: fnp.sum(fnp.tanh(x)),
        [np.ones(3, F32)],
        {},
        "{ lambda ; a:f32[3]. let b:f32[3] = tanh a; c:f32[3] = mul b b; "
        "d:f32[3] = sub 1.0:f32[] c in (d,) }",
    ),
    (
        lambda x, y: x * y,
        [F32(1), F32(2)],
        {"argnums": (0, 1)},
        "{ lambda ; a:f32[] b:f32[]. let  in (b, a) }",
    ),
    (
        lambda x: fnp.exp(x) * x,
        [np.float64(1)],
        {},
        "{ lambda ; a:f64[]. let b:f64[] = exp a; c:f64[] = add 1.0:f64[] a; d:f64[] = mul c b "
        "in (d,) }",
    ),
]


@pytest.mark.parametrize("i", range(len(GOLDEN)))
def test_gradient_jaxpr_golden(i):
    f, args, kw, want = GOLDEN[i]
    closed = functx.make_jaxpr(functx.grad(f, **kw))(*args)
    assert str(closed) == want
    functx.typecheck_jaxpr(closed)


def test_value_and_grad_and_jvp_jaxprs():
    x = np.ones(3, F32)
    assert str(functx.make_jaxpr(functx.value_and_grad(lambda v: fnp.sum(fnp.sin(v))))(x)) == (
        "{ lambda ; a:f32[3]. let\n    b:f32[3] = sin a\n    c:f32[3] = cos a\n"
        "    d:f32[] = reduce_sum[axes=(0,)] b\n  in (d, c) }"
    )
    assert str(functx.make_jaxpr(lambda p, t: functx.jvp(fnp.sin, (p,), (t,)))(F32(1), F32(1))) == (
        "{ lambda ; a:f32[] b:f32[]. let c:f32[] = sin a; d:f32[] = cos a; e:f32[] = mul b d "
        "in (c, e) }"
    )


# --- Jaxpr size -----------------------------------------------------------------------------------
def _n_eqns(closed):
    return len(closed.eqns)


@pytest.mark.parametrize("model,args", [("mlp", None), ("layer_norm", None), ("deep_chain", None)])
def test_gradient_jaxpr_is_linear_in_the_forward_jaxpr(model, args, rng):
    if model == "mlp":
        params = _mlp_params(rng, (3, 8, 8, 8, 2))
        x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
        f = lambda p: _mlp_loss(FX, p, x, y)  # noqa: E731
        args = (params,)
    elif model == "layer_norm":
        f = lambda x, g, b: fnp.sum(functx.nn.standardize(x) * g + b)  # noqa: E731
        args = (rng.standard_normal((4, 8)), np.ones(8), np.zeros(8))
    else:

        def f(x):
            for _ in range(30):
                x = fnp.sin(x) * 1.5 + x
            return fnp.sum(x)

        args = (rng.standard_normal(3),)
    n = _n_eqns(functx.make_jaxpr(f)(*args))
    argnums = tuple(range(len(args)))
    ng = _n_eqns(functx.make_jaxpr(functx.grad(f, argnums=argnums))(*args))
    assert ng <= 3 * n + 5, (n, ng)


def test_residuals_are_only_the_needed_ones():
    from functx.transforms import linearize as L

    def f(x):
        big = fnp.outer(x, x)  # a large intermediate the derivative does not need
        return fnp.sum(fnp.sin(x)) + lax.stop_gradient(fnp.sum(big))

    x = np.ones(50)
    closed = functx.make_jaxpr(f)(x)
    lin = L.linearize_jaxpr(closed, (True,), 1)
    res = lin.primal.out_avals[1:]
    assert [a.str_short() for a in res] == ["f64[50]"]  # cos(x), not the 50x50 outer product
    # linear functions need no residuals at all
    lin = L.linearize_jaxpr(functx.make_jaxpr(lambda v: fnp.sum(v * 3.0))(x), (True,), 1)
    assert lin.n_res == 0


def test_gradient_jaxpr_drops_unused_computation():
    def f(x):
        unused = fnp.exp(x) @ fnp.ones((3, 3))  # noqa: F841
        branch = fnp.where(x > 0, fnp.log(fnp.abs(x) + 1), fnp.sin(x))
        return fnp.sum(fnp.cos(x)) + lax.stop_gradient(fnp.sum(branch))

    x = np.ones(3)
    text = str(functx.make_jaxpr(functx.grad(f))(x))
    for gone in ["exp", "dot_general", "log", "select_n", "abs"]:
        assert gone not in text, text
    assert "sin" in text  # d cos = -sin
    v, g = functx.value_and_grad(f)(x)  # with the value, the primal is computed once
    np.testing.assert_allclose(g, -np.sin(x))


# --- Errors ---------------------------------------------------------------------------------------
def _check_error(exc, match, fn, line=None):
    """``fn`` (a lambda calling the user's code) raises ``exc`` naming ``line`` (by default the
    lambda's own line)."""
    line = fn.__code__.co_firstlineno if line is None else line
    with pytest.raises(exc, match=match) as e:
        fn()
    msg = str(e.value)
    assert f"test_grad.py:{line}" in msg, msg
    return msg


def test_grad_of_a_non_scalar_output():
    def vec(x):
        return x * 2

    msg = _check_error(
        FunctxTypeError,
        r"Gradient only defined for scalar-output functions\. "
        r"Output had shape: \(3,\)\.",
        lambda: functx.grad(vec)(np.ones(3)),
    )
    assert "vec" in msg
    msg = _check_error(
        FunctxTypeError,
        "scalar-output",
        lambda: functx.grad(lambda x: (x, x))(1.0),
    )
    assert "<lambda>" in msg


def test_grad_with_respect_to_an_integer_input():
    def f(x, n):
        return x * n

    msg = _check_error(
        FunctxTypeError,
        r"grad requires real- or complex-valued inputs \(input "
        r"dtype that is a sub-dtype of np\.inexact\), but got int32",
        lambda: functx.grad(f, argnums=1)(np.float64(1.0), np.int32(2)),
    )
    assert "argument 1 of f" in msg
    _check_error(
        FunctxTypeError,
        "real-valued outputs",
        lambda: functx.grad(lambda x: x > 0)(1.0),
    )


def test_grad_argnums_and_aux_errors():
    def f(x, y):
        return x * y

    msg = _check_error(
        FunctxTypeError,
        "argnums 2 is out of range",
        lambda: functx.grad(f, argnums=2)(1.0, 2.0),
    )
    assert "grad of f" in msg
    msg = _check_error(
        FunctxTypeError,
        "must return a pair",
        lambda: functx.grad(f, has_aux=True)(1.0, 2.0),
    )
    assert "f (defined at" in msg
    _check_error(
        FunctxTypeError,
        "cotangent leaf 0 has shape f64\\[2\\]",
        lambda: functx.vjp(f, np.ones(3), 2.0)[1](np.ones(2)),
    )
    _check_error(
        FunctxTypeError,
        "jacrev requires real-valued inputs",
        lambda: functx.jacrev(f)(np.arange(3), 1.0),
    )


def test_missing_rule_error_names_the_primitive_and_line():
    from functx import primitives as P
    from functx.transforms import transpose as T

    rule = T.transpose_rules.pop(P.rev_p)
    try:
        _check_error(
            functx.UnsupportedError,
            "Transpose rule .* for 'rev' not implemented",
            lambda: functx.grad(lambda x: fnp.sum(fnp.flip(x) * x))(np.ones(3)),
        )
    finally:
        T.transpose_rules[P.rev_p] = rule


def test_while_loop_reverse_mode_error():
    def f(x):
        return lax.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, c[1] * 2.0), (0, x))[1]

    _check_error(
        functx.UnsupportedError,
        "Reverse-mode differentiation does not work for lax.while_loop",
        lambda: functx.grad(f)(1.0),
        inspect.getsourcelines(f)[1] + 1,
    )
    assert float(functx.jvp(f, (1.0,), (1.0,))[1]) == 8.0


# --- Bugs in functx.numpy / functx.nn (owned elsewhere; reported with a patch) -------------------
def test_einsum_is_not_shadowed_by_its_module():  # (was: the submodule replaced the function)
    a = np.ones(3)
    fnp.einsum("i,i->", a, a)
    assert callable(fnp.einsum)


def test_diag_with_positive_offset():
    np.testing.assert_array_equal(
        fnp.diag(np.array([1.0, 2.0]), k=1), np.diag(np.array([1.0, 2.0]), k=1)
    )


def test_take_along_axis_broadcasts_indices():
    x = np.arange(6.0).reshape(2, 3)
    idx = np.array([[2, 0]])
    np.testing.assert_array_equal(
        fnp.take_along_axis(x, idx, axis=-1), np.take_along_axis(x, idx, axis=-1)
    )


def test_relu_derivative_at_zero_like_jax():
    assert (
        float(functx.grad(functx.nn.relu)(np.float64(0.0))) == float(jgrad(jax.nn.relu)(0.0)) == 0.0
    )


def test_numpy_all_any_accept_functx_arrays():
    g = functx.grad(lambda v: fnp.sum(v * v))(np.ones(3))
    assert np.all(g == 2.0) and not np.any(g == 0.0)


def test_jacobians_of_gpu_arrays_stay_on_the_gpu(interpreted_gpu):
    """jacfwd / jacrev / hessian push and pull the standard basis, which goes with the
    arguments' device: on a GPU array (Triton's interpreter) they ran into a DeviceError against
    the basis on the host. Values against the CPU's."""
    x = np.array([0.5, -1.0, 2.0], np.float32)
    on_gpu = functx.device_put(x, interpreted_gpu)

    def f(v):
        return fnp.sin(v) * v[::-1]

    for jac in (functx.jacfwd(f), functx.jacrev(f), functx.hessian(lambda v: fnp.sum(v**3))):
        got = jac(on_gpu)
        assert got.device == interpreted_gpu
        np.testing.assert_allclose(np.asarray(got), np.asarray(jac(x)), rtol=1e-6, atol=1e-6)
