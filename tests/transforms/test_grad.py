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
from hypothesis import given, settings
from hypothesis import strategies as st

import functx
import functx.numpy as fnp
from functx import lax
from functx.errors import FunctxTypeError
from functx.numpy._core import einsum as _fx_einsum
from functx.test_util import check_grads

jax = pytest.importorskip("jax")
jnp = jax.numpy

# (einsum from its defining module: ``functx.numpy.einsum`` gets shadowed by the submodule of the
# same name after its first call; see test_einsum_is_not_shadowed_by_its_module)
FX = types.SimpleNamespace(np=fnp, nn=functx.nn, linalg=fnp.linalg, lax=lax, einsum=_fx_einsum)
JX = types.SimpleNamespace(np=jnp, nn=jax.nn, linalg=jnp.linalg, lax=jax.lax, einsum=jnp.einsum)


def _lineno():
    return inspect.currentframe().f_back.f_lineno


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
    return tuple(s) + (2, 3, 1)[len(s):]


def _idx(rng, shape, lo, hi):
    return rng.integers(lo, hi, shape).astype(np.int32)


FNS: dict[str, Fn] = {
    # elementwise unary math
    **{name: _ew(lambda m, x, name=name: getattr(m.np, name)(x), gen) for name, gen in {
        "sin": N, "cos": N, "tan": U(-1.2, 1.2), "arcsin": U(-0.8, 0.8), "arccos": U(-0.8, 0.8),
        "arctan": N, "sinh": N, "cosh": N, "tanh": N, "arcsinh": N, "arccosh": U(1.2, 3),
        "arctanh": U(-0.8, 0.8), "exp": N, "exp2": N, "expm1": N, "log": U(0.3, 3),
        "log1p": U(-0.6, 3), "log2": U(0.3, 3), "log10": U(0.3, 3), "sqrt": U(0.3, 3),
        "cbrt": AWAY(0.3), "square": N, "reciprocal": AWAY(0.3), "abs": AWAY(0.1),
        "negative": N, "positive": N, "deg2rad": N, "rad2deg": N, "sinc": AWAY(0.1),
    }.items()},
    # elementwise binary (with broadcasting of a row against a matrix)
    **{name: _ew(lambda m, x, y, name=name: getattr(m.np, name)(x, y), gx, gy) for name, (gx, gy)
       in {"add": (N, N), "subtract": (N, N), "multiply": (N, N), "divide": (N, AWAY(0.3)),
           "power": (U(0.3, 2), N), "float_power": (U(0.3, 2), N), "arctan2": (AWAY(0.3), AWAY(0.3)),
           "hypot": (AWAY(0.3), AWAY(0.3)), "logaddexp": (N, N), "logaddexp2": (N, N),
           "maximum": (U(-2, -0.1), U(0.1, 2)), "minimum": (U(0.1, 2), U(-2, -0.1)),
           "fmax": (U(0.1, 2), U(-2, -0.1)), "fmin": (U(-2, -0.1), U(0.1, 2)),
           "remainder": (U(0.1, 0.9), U(1.1, 2)), "fmod": (U(0.1, 0.9), U(1.1, 2)),
           "copysign": (AWAY(0.1), AWAY(0.1)),
           }.items()},
    "broadcast_row": _ew(lambda m, x, y: x * y[..., :1] + m.np.sin(y), N, N, min_dims=1),
    "power_int": _ew(lambda m, x: x ** 3 + m.np.power(x, 2) - x ** -2, AWAY(0.3)),
    "scalar_ops": _ew(lambda m, x: 2.0 * x - 1 / (x + 3.0) + x / 2, U(-2, 2)),
    "where": _ew(lambda m, x, y: m.np.where(x > y, x * y, m.np.sin(y)), N, N),
    "clip": _ew(lambda m, x: m.np.clip(x, -0.5, 0.5), lambda rng, s: rng.choice(
        [-1.0, 1.0], s) * np.where(rng.random(s) < 0.5, rng.uniform(0, 0.4, s),
                                   rng.uniform(0.6, 2, s))),
    # reductions
    "sum": _ew(lambda m, x: m.np.sum(x ** 2, axis=-1), N, min_dims=1),
    "sum_keepdims": _ew(lambda m, x: x * m.np.sum(x, axis=0, keepdims=True), N, min_dims=1),
    "mean": _ew(lambda m, x: m.np.mean(m.np.sin(x)), N),
    "prod": _ew(lambda m, x: m.np.prod(x, axis=-1), U(-1.5, 1.5), min_dims=1),
    "prod_with_zeros": _ew(lambda m, x: m.np.prod(x), lambda rng, s: np.where(
        rng.random(s) < 0.4, 0.0, rng.uniform(-1.5, 1.5, s))),
    "max": _ew(lambda m, x: m.np.max(x, axis=-1), DISTINCT(), min_dims=1),
    "min": _ew(lambda m, x: m.np.min(x), DISTINCT()),
    "amax_keepdims": _ew(lambda m, x: m.np.amax(x, axis=0, keepdims=True) * x, DISTINCT(),
                         min_dims=1),
    "ptp": _ew(lambda m, x: m.np.ptp(x, axis=0), DISTINCT(), min_dims=1),
    "var": _ew(lambda m, x: m.np.var(x, axis=-1), N, min_dims=1),
    "std": Fn(lambda m, x: m.np.std(x, axis=0), lambda rng, s: [DISTINCT()(rng, (s[0] + 1,)
                                                                              + s[1:])], 1),
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
    "linalg_norm_inf": _ew(lambda m, x: m.linalg.norm(x, ord=np.inf, axis=-1),
                           lambda rng, s: DISTINCT(0.2, 2)(rng, s) * rng.choice([-1.0, 1.0], s),
                           min_dims=1),
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
    "einsum_matmul": _mat(lambda m, a, b: m.einsum("ij,jk->ik", a, b),
                          lambda d: [(d[0], d[1]), (d[1], d[2])]),
    "einsum_batch_trace": _mat(lambda m, a, b: m.einsum("bij,bji->b", a, b),
                               lambda d: [(d[2], d[0], d[1]), (d[2], d[1], d[0])]),
    "einsum_outer_sum": _mat(lambda m, a, b: m.einsum("i,j->", a, b), lambda d: [(d[0],),
                                                                                   (d[1],)]),
    "tensordot": _mat(lambda m, a, b: m.np.tensordot(a, b, axes=([1, 0], [0, 2])),
                      lambda d: [(d[0], d[1]), (d[1], 2, d[0])]),
    "tensordot_int": _mat(lambda m, a, b: m.np.tensordot(a, b, 1),
                          lambda d: [(d[0], d[1]), (d[1], d[2])]),
    # indexing
    "getitem_basic": _ew(lambda m, x: x[1:, ::-1] * x[0, None], N, min_dims=2),
    "getitem_int": _ew(lambda m, x: x[-1] + x[0], N, min_dims=1),
    "getitem_array": Fn(lambda m, x: x[np.array([0, 2, 2, -1])] * 2,
                        lambda rng, s: [rng.standard_normal((3,) + tuple(s[1:]))], 1),
    "getitem_bool_mask": Fn(lambda m, x: m.np.where(x > 0, x, 0.0)[np.array([True, False, True])],
                            lambda rng, s: [rng.standard_normal((3,) + tuple(s[1:]))], 1),
    "getitem_mixed": Fn(lambda m, x: x[:, np.array([1, 0, 1])],
                        lambda rng, s: [rng.standard_normal((s[0], 2) + tuple(s[2:]))], 2),
    "take": Fn(lambda m, x: m.np.take(x, np.array([[0, 1], [1, 1]]), axis=0),
               lambda rng, s: [rng.standard_normal((2,) + tuple(s[1:]))], 1),
    "take_along_axis": Fn(lambda m, x: m.np.take_along_axis(x, np.array([[2, 0, 1, 1], [0, 0, 2, 1]]),
                                                            axis=-1),
                          lambda rng, s: [rng.standard_normal((2, 3))]),
    "at_set": _ew(lambda m, x: x.at[0].set(m.np.sin(x[-1])), N, min_dims=1),
    "at_add_dup": Fn(lambda m, x, v: x.at[np.array([0, 2, 0])].add(v),
                     lambda rng, s: [rng.standard_normal((3,)), rng.standard_normal((3,))]),
    # (JAX differentiates scatter_mul only with unique_indices=True, which functx does not take)
    "at_mul": Fn(lambda m, x, v: x.at[np.array([1, 0, 1])].multiply(v),
                 lambda rng, s: [rng.standard_normal((3,)), AWAY(0.3)(rng, (3,))], jax=False),
    "at_min_max": Fn(lambda m, x, v: x.at[np.array([1, 3])].min(v) + x.at[np.array([0, 2])].max(v),
                     lambda rng, s: list(np.split(DISTINCT()(rng, (6,)), [4]))),
    "at_get_slice": _ew(lambda m, x: x.at[1:].get().sum() * 3 + x.at[:1].set(2.0), N, min_dims=1),
    "diagonal": _mat(lambda m, x: m.np.diagonal(x, 1) * 2 + m.np.diag(x)[:1],
                     lambda d: [(d[0], d[1] + 1)]),
    "diag_vec": _mat(lambda m, x: m.np.diag(x) + m.np.diag(x[1:], k=-1),
                     lambda d: [(d[0] + 1,)]),
    "tril_triu": _ew(lambda m, x: m.np.tril(x) - 2 * m.np.triu(x, 1), N, min_dims=2),
    # shapes
    "concatenate": _ew(lambda m, x, y: m.np.concatenate([x, y * 2, x], axis=-1), N, N, min_dims=1),
    "stack": _ew(lambda m, x, y: m.np.stack([x, y], axis=-1), N, N),
    "hstack_vstack": _ew(lambda m, x, y: m.np.hstack([x, y]) * m.np.vstack([x, y]).sum(), N, N,
                         min_dims=1),
    "pad_constant": _ew(lambda m, x: m.np.pad(x, 1, constant_values=0.5), N),
    "pad_edge": _ew(lambda m, x: m.np.pad(x, (1, 2), mode="edge"), N, min_dims=1),
    "pad_reflect": Fn(lambda m, x: m.np.pad(x, ((2, 1),), mode="reflect"),
                      lambda rng, s: [rng.standard_normal((s[0] + 2,))], 1),
    "pad_wrap": _ew(lambda m, x: m.np.pad(x, 2, mode="wrap"), N, min_dims=1),
    "roll": _ew(lambda m, x: m.np.roll(x, 1, axis=-1) * m.np.roll(x, -2), N, min_dims=1),
    "tile": _ew(lambda m, x: m.np.tile(x, (2, 1)), N),
    "repeat": _ew(lambda m, x: m.np.repeat(x, 2, axis=-1), N, min_dims=1),
    "repeat_array": Fn(lambda m, x: m.np.repeat(x, np.array([1, 0, 3]), axis=0),
                       lambda rng, s: [rng.standard_normal((3,) + tuple(s[1:]))], 1),
    "flip": _ew(lambda m, x: m.np.flip(x) * x, N),
    "reshape_transpose": _ew(lambda m, x: m.np.reshape(m.np.transpose(x), (-1,)), N),
    "moveaxis_swapaxes": _ew(lambda m, x: m.np.swapaxes(m.np.moveaxis(x, 0, -1), 0, -1), N,
                             min_dims=2),
    "squeeze_expand": _ew(lambda m, x: m.np.squeeze(m.np.expand_dims(x, (0, 2)), 0), N,
                          min_dims=1),
    "broadcast_to": _ew(lambda m, x: m.np.broadcast_to(x, (2,) + x.shape), N),
    "split": _ew(lambda m, x: m.np.split(m.np.concatenate([x, x * 2]), 2)[1], N, min_dims=1),
    "ravel": _ew(lambda m, x: m.np.ravel(x) ** 2, N),
    # nn
    "relu": _ew(lambda m, x: m.nn.relu(x), AWAY(0.1)),
    "relu6": _ew(lambda m, x: m.nn.relu6(x), lambda rng, s: np.where(
        rng.random(s) < 0.5, rng.uniform(0.1, 5.9, s), rng.uniform(6.1, 8, s))),
    "sigmoid": _ew(lambda m, x: m.nn.sigmoid(x), U(-4, 4)),
    "log_sigmoid": _ew(lambda m, x: m.nn.log_sigmoid(x), U(-4, 4)),
    "silu": _ew(lambda m, x: m.nn.silu(x), N),
    "softplus": _ew(lambda m, x: m.nn.softplus(x), U(-4, 4)),
    "elu": _ew(lambda m, x: m.nn.elu(x), AWAY(0.1)),
    "leaky_relu": _ew(lambda m, x: m.nn.leaky_relu(x), AWAY(0.1)),
    "gelu_tanh": _ew(lambda m, x: m.nn.gelu(x, approximate=True), N),
    "gelu_erf": _ew(lambda m, x: m.nn.gelu(x, approximate=False), N),
    "logsumexp": _ew(lambda m, x: m.nn.logsumexp(x), N),
    "logsumexp_axis_b": _ew(lambda m, x, b: m.nn.logsumexp(x, axis=-1, b=b), N, U(0.5, 2),
                            min_dims=1),
    "softmax": _ew(lambda m, x: m.nn.softmax(x, axis=-1), N, min_dims=1),
    "log_softmax": _ew(lambda m, x: m.nn.log_softmax(x, axis=0), N, min_dims=1),
    "standardize": Fn(lambda m, x: m.nn.standardize(x, axis=-1),
                      lambda rng, s: [DISTINCT()(rng, s[:-1] + (s[-1] + 1,))], 1),
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


@pytest.mark.parametrize("name", sorted(n for n, c in FNS.items() if c.jax))
def test_vjp_and_jvp_match_jax(name):
    case = FNS[name]
    rng = np.random.default_rng(sum(map(ord, name)))
    args = case.args(rng, (2, 3, 2)[:max(case.min_dims, 2)])
    out, f_vjp = functx.vjp(lambda *a: case.f(FX, *a), *args)
    jout, j_vjp = jax.vjp(lambda *a: case.f(JX, *a), *args)
    np.testing.assert_allclose(out, jout, rtol=1e-12, atol=1e-12)
    ct = rng.standard_normal(np.shape(jout))
    for g, jg in zip(f_vjp(ct), j_vjp(ct)):
        np.testing.assert_allclose(g, jg, rtol=1e-10, atol=1e-12)
    ts = [rng.standard_normal(np.shape(a)) for a in args]
    _, t = functx.jvp(lambda *a: case.f(FX, *a), tuple(args), tuple(ts))
    _, jt = jax.jvp(lambda *a: case.f(JX, *a), tuple(args), tuple(ts))
    np.testing.assert_allclose(t, jt, rtol=1e-10, atol=1e-12)
