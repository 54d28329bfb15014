"""``lax.custom_linear_solve`` and ``lax.custom_root`` against JAX: values and dtypes in both x64
modes, jvp/grad (implicit differentiation: the transpose of the linear solve), check_grads in
float64, vmap against a loop, has_aux, and JAX's errors. jit (C++ and Triton, against eager and
JAX) is tests/lowering/test_backend_suite.py's case ``custom_solve_root``."""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from x64util import x64_off

import functx
import functx.numpy as fnp
from functx.test_util import check_grads

FX = SimpleNamespace(lax=functx.lax, np=fnp, grad=functx.grad, while_loop=functx.lax.while_loop)
JX = SimpleNamespace(lax=jax.lax, np=jnp, grad=jax.grad, while_loop=jax.lax.while_loop)

RNG = np.random.default_rng(0)
A = RNG.standard_normal((3, 3)) + 4 * np.eye(3)
SPD = A @ A.T + np.eye(3)
B = RNG.standard_normal(3)


def _solver(ns, symmetric=False, has_aux=False):
    """The JAX docs' pattern: matvec closes over a matrix, solve/transpose_solve are exact
    (JAX's side is jitted: its eager dispatch is the slow part)."""

    def f(a, b):
        mv = lambda x: ns.np.dot(a, x)  # noqa: E731

        def solve(_, y):
            x = ns.np.linalg.solve(a, y)
            return (x, ns.np.sum(x)) if has_aux else x

        def tsolve(_, y):
            x = ns.np.linalg.solve(a.T, y)
            return (x, ns.np.sum(x)) if has_aux else x

        return ns.lax.custom_linear_solve(
            mv, b, solve, None if symmetric else tsolve, symmetric=symmetric, has_aux=has_aux
        )

    return f


def _newton_sqrt(ns):
    """The JAX docs' Newton example: a scalar square root by custom_root."""

    def newton(f, x):
        for _ in range(10):
            x = x - f(x) / ns.grad(f)(x)
        return x

    def sqrt(a):
        return ns.lax.custom_root(lambda x: x**2 - a, 1.0, newton, lambda g, y: y / g(1.0))

    return sqrt


def _fixed_point(ns):
    """A fixed point ``x = a cos(x)`` by a while_loop (not differentiable), as a root."""

    def iterate(f, x0):
        def cond(c):
            return ns.np.abs(c[0] - c[1]) > 1e-7

        return ns.while_loop(cond, lambda c: (f(c[0]) + c[0], c[0]), (f(x0) + x0, x0))[0]

    def fp(a):
        return ns.lax.custom_root(
            lambda x: a * ns.np.cos(x) - x, 0.5 * a, iterate, lambda g, y: y / g(1.0)
        )

    return fp


def _close(got, want, tol=1e-9):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _results(ns, jvp, a, spd, b, c, full=True):
    """Every value compared with JAX, as one dict (JAX's side runs as one jitted program: its
    eager dispatch is the slow part)."""
    out = {}
    for sym, m in ((False, a), (True, spd)):
        f = _solver(ns, sym)
        loss = lambda m, b: ns.np.sum(f(m, b) ** 2)  # noqa: E731
        out[f"x{sym}"] = f(m, b)
        out[f"ga{sym}"], out[f"gb{sym}"] = ns.grad(loss, (0, 1))(m, b)
        out[f"jvp{sym}"] = jvp(f, (m, b), (m, b))[1]
    if not full:
        return out
    sq, fp = _newton_sqrt(ns), _fixed_point(ns)
    out["sqrt"], out["dsqrt"], out["d2sqrt"] = sq(c), ns.grad(sq)(c), ns.grad(ns.grad(sq))(c)
    out["fp"], out["dfp"] = fp(c / 3.0), ns.grad(fp)(c / 3.0)
    return out


def _compare_all(tol, full=True):
    got = _results(FX, functx.jvp, A, SPD, B, 2.0, full)
    want = jax.jit(lambda *xs: _results(JX, jax.jvp, *xs, full))(A, SPD, B, 2.0)
    for k in want:
        _close(got[k], want[k], tol if not k.endswith("fp") else max(tol, 1e-6))


def test_values_and_gradients_vs_jax_x64():
    _compare_all(1e-9)


def test_values_and_gradients_vs_jax_default_mode():
    with x64_off():  # (the linear solves: the roots' dtypes follow the same rules)
        _compare_all(2e-5, full=False)


def test_check_grads_and_has_aux():
    check_grads(_solver(FX), (A, B), order=1, modes=["fwd", "rev"])
    check_grads(_newton_sqrt(FX), (2.0,), order=1)
    x, aux = _solver(FX, has_aux=True)(A, B)
    y, auy = _solver(JX, has_aux=True)(A, B)
    _close(x, y)
    _close(aux, auy)
    ga = functx.grad(lambda a: fnp.sum(_solver(FX, has_aux=True)(a, B)[0]))(A)
    _close(ga, jax.grad(lambda a: jnp.sum(_solver(JX, has_aux=True)(a, B)[0]))(A))


def test_pytree_rhs_and_vmap_vs_loop():
    def f(ns):
        def solve2(d, b):
            mv = lambda x: {"u": d * x["u"], "v": 2.0 * x["v"]}  # noqa: E731
            sv = lambda _, y: {"u": y["u"] / d, "v": y["v"] / 2.0}  # noqa: E731
            return ns.lax.custom_linear_solve(mv, b, sv, symmetric=True)

        return solve2

    ff, fj = f(FX), f(JX)
    d = np.array([1.0, 2.0, 4.0])
    b = {"u": np.ones(3), "v": np.arange(2.0)}
    for k, v in ff(d, b).items():
        _close(v, fj(d, b)[k])
    # vmap: batched matrix, batched rhs, and only one of them batched
    As = np.stack([A, A.T, A + np.eye(3)])
    Bs = np.stack([B, 2 * B, -B])
    f1 = _solver(FX)
    loop = np.stack([np.asarray(f1(a, b)) for a, b in zip(As, Bs)])
    _close(functx.vmap(f1)(As, Bs), loop)
    _close(functx.vmap(f1, (None, 0))(A, Bs), np.stack([np.asarray(f1(A, b)) for b in Bs]))
    _close(functx.vmap(f1, (0, None))(As, B), np.stack([np.asarray(f1(a, B)) for a in As]))
    g1 = functx.vmap(functx.grad(lambda a, b: fnp.sum(f1(a, b) ** 2)))(As, Bs)
    gl = [functx.grad(lambda a, b: fnp.sum(f1(a, b) ** 2))(a, b) for a, b in zip(As, Bs)]
    _close(g1, np.stack([np.asarray(g) for g in gl]))
    r = functx.vmap(_newton_sqrt(FX))(np.array([1.0, 4.0, 9.0]))
    _close(r, np.array([1.0, 2.0, 3.0]))


def test_errors_like_jax():
    f = lambda x: x  # noqa: E731
    good = lambda _, y: y  # noqa: E731
    no_t = lambda b: functx.lax.custom_linear_solve(f, b, good)  # noqa: E731
    with pytest.raises(TypeError, match="transpose_solve required"):
        functx.grad(lambda b: fnp.sum(no_t(b)))(B)
    with pytest.raises(TypeError, match="transpose_solve required"):
        jax.grad(lambda b: jnp.sum(jax.lax.custom_linear_solve(f, b, good)))(B)
    for lib, np_ in ((functx, fnp), (jax, jnp)):
        with pytest.raises(ValueError, match="solve\\(\\) output shapes must match b"):
            lib.lax.custom_linear_solve(f, np_.ones(3), lambda _, y: y[:2])
        with pytest.raises(TypeError, match="matvec\\(\\) output pytree structure must match b"):
            lib.lax.custom_linear_solve(lambda x: (x,), np_.ones(3), good)
        with pytest.raises(TypeError, match="f\\(\\) output pytree structure must match"):
            lib.lax.custom_root(lambda x: (x, x), 1.0, lambda f, x: x, lambda g, y: y)


@pytest.mark.usefixtures("no_x64")
def test_docstring_examples_run():
    import docutil

    for f in (functx.lax.custom_linear_solve, functx.lax.custom_root):
        for section in ("Arguments:", "Returns:", "Example:"):
            assert section in f.__doc__
        # (the public examples run in tests/test_docstrings.py; the rest here)
        assert docutil.run(f, f.__name__, globs={"functx": functx, "np": np}).failed == 0


def test_grad_without_transpose_solve_is_a_functx_type_error():
    """Reverse mode through a non-symmetric custom_linear_solve without transpose_solve: JAX's
    TypeError, as a FunctxError that says what to pass and where."""
    s = np.eye(3, dtype=np.float32) * 2.0

    def loss(lax, np_, b):
        x = lax.custom_linear_solve(lambda v: s @ v, b, lambda mv, r: np_.linalg.solve(s, r))
        return np_.sum(x**2)

    b = np.ones(3, np.float32)
    with pytest.raises(TypeError):
        jax.grad(lambda v: loss(jax.lax, jnp, v))(b)
    with pytest.raises(functx.FunctxError, match="transpose_solve") as e:
        functx.grad(lambda v: loss(functx.lax, fnp, v))(b)
    assert isinstance(e.value, TypeError) and "test_custom_solve.py" in str(e.value)
