"""Complex numbers (complex64, complex128) against JAX: dtypes and promotion, creation, eager values
of the elementwise ops, reductions, matmul and a complex ``associative_scan`` (the LRU/S5 linear
recurrence), autodiff with JAX's convention (``grad`` of real functions of complex inputs,
``holomorphic=True``, ``vjp``, ``jacfwd``/``jacrev``) and its errors, ``vmap``, and ``jit`` on the
C++ backend (one compiled program checks many ops); the Triton backend computes them as pairs
of real lanes (``functx/lowering/complex_lanes.py``). ``max``/``min`` order complex values as JAX
does (lexicographically, JAX's NaN behaviour) on eager, C++ and Triton.

JAX runs with x64 on (tests/conftest.py): every case gives explicit dtypes.
"""

from __future__ import annotations

import doctest

import docutil
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functx
import functx.lax as flax
import functx.numpy as fnp
from functx import dtypes
from functx.errors import UnsupportedError
from functx.test_util import check_grads

jax = pytest.importorskip("jax")
jnp = jax.numpy

C64, C128, F32, F64 = np.complex64, np.complex128, np.float32, np.float64
RNG = np.random.default_rng(0)


def _c(shape, dt=C64, scale=1.0):
    return (scale * (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape))).astype(dt)


Z = np.array([1 + 2j, 3 - 1j, -0.5 + 0.25j, 0.3 - 0.7j], C64)
W = np.array([0.5 - 1j, 2 + 1j, 1.5 + 0.1j, -0.4 - 1j], C64)


def _close(ours, theirs, rtol=2e-5, atol=2e-6):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)


def _tree_close(ours, theirs, **kw):
    a, b = jax.tree.leaves(ours), jax.tree.leaves(theirs)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        _close(x, y, **kw)


# --- dtypes, promotion, creation -------------------------------------------------------------
def _jax_promote(a, b, x64):
    S = jax.ShapeDtypeStruct
    with jax.enable_x64(x64):
        r = jax.eval_shape(
            lambda p, q: p | q if p.dtype == q.dtype == np.bool_ else p + q,
            S((), a[0], weak_type=a[1]),
            S((), b[0], weak_type=b[1]),
        )
    return np.dtype(r.dtype), bool(r.weak_type)


def test_promotion_matches_jax():
    # 32-bit operands against JAX without x64 (functx's mode), 64-bit ones with x64
    for kinds, x64 in (
        ([C64, F32, np.float16, np.int32, np.uint8, np.bool_], False),
        ([C128, F64, C64, np.int64], True),
    ):
        pairs = [(d, False) for d in kinds] + [(d, True) for d in kinds[:3] if not x64]
        for a in pairs:
            for b in pairs:
                if a[1] and b[1]:
                    continue
                with functx.enable_x64(x64):
                    ours = dtypes.result_type((np.dtype(a[0]), a[1]), (np.dtype(b[0]), b[1]))
                assert ours == _jax_promote(a, b, x64), (a, b)


@pytest.mark.usefixtures("no_x64")  # (the default mode's dtypes; x64 ones in the block below)
def test_creation_and_python_complex():
    x = fnp.ones(3, F32)
    y = 1j * x
    assert y.dtype == C64 and not y.weak_type
    _close(y, 1j * jnp.ones(3, F32))
    assert fnp.asarray(1j).dtype == C64 and fnp.asarray(1j).weak_type
    assert fnp.array([1 + 2j, 3]).dtype == C64
    with functx.enable_x64(True):
        assert fnp.asarray(np.ones(2, C128)).dtype == C128
        assert (fnp.ones(2, F64) * 1j).dtype == C128
    assert fnp.asarray(np.ones(2, C128)).dtype == C64
    assert (fnp.arange(3) + 1j).dtype == C64  # int32 + weak complex: the default complex
    assert fnp.zeros(2, fnp.complex64).dtype == C64
    assert dtypes.canonicalize(complex) == C64
    assert float(dtypes.finfo(C64).eps) == float(jnp.finfo(C64).eps)
    assert fnp.iscomplexobj(fnp.asarray(Z)) and fnp.isrealobj(fnp.ones(2))
    assert not jnp.isrealobj(jnp.asarray(Z)) and not fnp.isrealobj(Z)
    assert fnp.issubdtype(fnp.complex128, fnp.complexfloating)
    assert jnp.issubdtype(jnp.complex128, jnp.complexfloating)


# --- eager values: against NumPy's complex128, dtypes against JAX (traced only) ------------------
UNARY = [
    "exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "arcsin", "arccos", "arctan",
    "sinh", "cosh", "tanh", "arcsinh", "arccosh", "arctanh", "negative", "square", "reciprocal",
    "abs", "sign", "real", "imag", "conj", "conjugate", "angle", "iscomplex", "isreal", "exp2",
    "log2", "log10",
]  # fmt: skip
BINARY = ["add", "subtract", "multiply", "true_divide", "power", "equal", "not_equal"]


def _ref_close(ours, ref, jax_fn, *args, rtol=1e-5):
    """``ours`` equals NumPy's complex128 ``ref`` (to the dtype's precision) and has JAX's dtype."""
    want = jax.eval_shape(jax_fn, *[jax.ShapeDtypeStruct(np.shape(a), a.dtype) for a in args])
    assert np.asarray(ours).dtype == want.dtype, (np.asarray(ours).dtype, want.dtype)
    np.testing.assert_allclose(np.asarray(ours), ref, rtol=rtol, atol=rtol)


@pytest.mark.parametrize("dt", [C64, C128])
def test_eager_ops_match_numpy_and_jax_dtypes(dt):
    z, w = Z.astype(dt), W.astype(dt)
    z2, w2 = Z.astype(C128), W.astype(C128)
    tol = 2e-6 if dt == C64 else 1e-12
    for name in UNARY:
        ref = getattr(np, name)(z2)
        _ref_close(getattr(fnp, name)(z), ref, getattr(jnp, name), z, rtol=tol)
    for name in BINARY:
        ref = getattr(np, name)(z2, w2)
        _ref_close(getattr(fnp, name)(z, w), ref, getattr(jnp, name), z, w, rtol=tol)
    _ref_close(fnp.asarray(z) ** 3, z2**3, lambda v: v**3, z, rtol=tol)
    _ref_close(fnp.asarray(z) ** 0.5, z2**0.5, lambda v: v**0.5, z, rtol=tol)
    _ref_close(
        flax.complex(z.real, w.imag), z2.real + 1j * w2.imag, jax.lax.complex, z.real, w.imag
    )
    _ref_close(flax.conj(z.real), z2.real + 0j, jax.lax.conj, z.real)
    a = fnp.asarray(z)
    np.testing.assert_array_equal(a.real, z.real)
    np.testing.assert_array_equal(a.imag, z.imag)
    np.testing.assert_array_equal(a.conj(), z.conj())
    np.testing.assert_array_equal(fnp.where(fnp.abs(z) > 1, z, w), np.where(np.abs(z) > 1, z, w))
    m = _c((3, 4), dt)
    m2 = m.astype(C128)
    for name in ("sum", "prod", "mean", "cumsum", "cumprod"):
        ref = getattr(np, name)(m2, axis=1)
        _ref_close(getattr(fnp, name)(m, axis=1), ref, getattr(jnp, name), m, rtol=1e-5)
    _ref_close(fnp.asarray(m) @ m.T, m2 @ m2.T, lambda v: v @ v.T, m, rtol=1e-5)
    _ref_close(fnp.einsum("ij,kj->ik", m, m), m2 @ m2.T, lambda v: v @ v.T, m, rtol=1e-5)


def test_jnp_comparisons_tests_and_rounding_of_complex():
    # lexicographic order (real parts, then imaginary), as JAX's and NumPy's jnp/np.less
    z = np.array([1 + 2j, 1 + 3j, np.nan + 1j, np.inf - 1j, 2 - 5j, 1.5 + 2.5j], C64)
    w = np.array([1 + 3j, 1 + 2j, 0, 0, 2 - 5j, 1.5 - 2.5j], C64)
    with np.errstate(invalid="ignore"):  # (NumPy's reference warns about the NaN)
        for name in ("less", "less_equal", "greater", "greater_equal"):
            ref = getattr(np, name)(z, w)
            _ref_close(getattr(fnp, name)(z, w), ref, getattr(jnp, name), z, w)
        for name in ("maximum", "minimum"):
            ref = getattr(np, name)(z[4:], w[4:])
            _ref_close(getattr(fnp, name)(z[4:], w[4:]), ref, getattr(jnp, name), z, w)
        for name in ("isnan", "isinf", "isfinite", "rint"):
            _ref_close(getattr(fnp, name)(z), getattr(np, name)(z), getattr(jnp, name), z)
    _ref_close(fnp.round(z[4:], 1), np.round(z[4:], 1), lambda v: jnp.round(v, 1), z[4:])
    for name in ("floor", "ceil", "trunc"):
        with pytest.raises(TypeError):
            getattr(fnp, name)(z)


def test_ordering_and_real_only_ops_raise_like_jax():
    z = fnp.asarray(Z)
    cases = [
        (lambda L, x: L.lt(x, x)),
        (lambda L, x: L.rem(x, x)),
        (lambda L, x: L.floor(x)),
    ]
    for case in cases:
        with pytest.raises(TypeError):
            case(jax.lax, jnp.asarray(Z))
        with pytest.raises(TypeError):
            case(flax, z)


# --- ordering: lax.max/min and max/min reductions (lexicographic, JAX's NaN behaviour) -------
_NAN = np.nan
ORD_B = np.array([1 + 2j, complex(_NAN, 0), 3, complex(1, _NAN), 2j, 1 + 2j], C64)
ORD_C = np.array([complex(1, _NAN), 1 + 1j, complex(_NAN, 1), 1 + 3j, 2j, 1 + 2j], C64)


def _ordering(N, L):
    def f(b, c, m):
        out = [L.max(b, c), L.min(b, c), L.max(c, b), L.min(c, b), N.maximum(b, 1 + 1j)]
        for v in (b, c, b[::-1], c[::-1], m):
            out += [N.max(v), N.min(v)]
        out += [N.max(m, axis=0), N.min(m, axis=1), N.max(b, where=b.real > 1, initial=0j)]
        return out

    return f


ORD_M = np.array([[1 + 2j, 3j, 1 + 1j], [1 + 1j, 0, 1 + 1j], [1 + 2j, -1j, 1 - 1j]], C128)


def test_complex_max_min_order_like_jax():
    # (compiled: in test_jit_cpp_matches_eager's program, against these eager values)
    args = (ORD_B, ORD_C, ORD_M)
    _tree_close(
        _ordering(fnp, flax)(*args), jax.jit(_ordering(jnp, jax.lax))(*args), rtol=0, atol=0
    )
    # the tangent of the operand chosen (both halves where they are equal), as JAX's jvp
    t = (W, W * 2j)
    theirs = jax.jit(lambda p, q: jax.jvp(jax.lax.max, p, q))((Z, Z[::-1]), t)
    _tree_close(functx.jvp(flax.max, (Z, Z[::-1]), t), theirs)
    for J, N in ((jax, jnp), (functx, fnp)):
        with pytest.raises(TypeError):  # argmax/argmin: no complex comparator in JAX
            N.argmax(Z)
        with pytest.raises(TypeError):
            J.lax.argmin(Z, 0, np.int32)
        with pytest.raises(ValueError):  # clip: "complex values have no ordering"
            N.clip(Z, 0, 1)


def _lru(lax, np_):
    """The LRU/S5 linear recurrence h_t = a_t * h_{t-1} + b_t, as a parallel scan."""

    def combine(x, y):
        return y[0] * x[0], y[0] * x[1] + y[1]

    def f(lam, b):
        a = np_.broadcast_to(lam, b.shape)
        return lax.associative_scan(combine, (a, b), axis=0)[1]

    return f


def test_associative_scan_linear_recurrence():
    lam = (0.9 * np.exp(1j * np.linspace(0.1, 1.0, 3))).astype(C64)
    b = _c((6, 3))
    h, ref = np.zeros(3, C128), []
    for t in range(6):  # the recurrence, sequentially in complex128
        h = lam * h + b[t]
        ref.append(h)
    out = _lru(flax, fnp)(lam, b)
    assert out.dtype == C64
    np.testing.assert_allclose(out, np.array(ref), rtol=1e-5, atol=1e-6)
    # reverse mode through the complex combine, checked against finite differences
    check_grads(lambda lam, b: fnp.sum(fnp.abs(_lru(flax, fnp)(lam, b)) ** 2), (lam, b), 1)


# --- autodiff with JAX's convention (each side's cases in one function: one JAX compile) -------
GRAD_CASES = [
    (lambda N, L: lambda z: N.sum(N.abs(z) ** 2), {}),
    (lambda N, L: lambda z: N.sum(N.real(z * z)), {}),
    (lambda N, L: lambda z: N.sum(N.imag(N.exp(z))), {}),
    (lambda N, L: lambda z: N.sum(N.angle(z)), {}),
    (lambda N, L: lambda z: N.sum(N.abs(N.sqrt(z) / (z + 1) - N.conj(z) * z**3)), {}),
    (lambda N, L: lambda z: N.sum(N.sin(z) * z + N.log(z)), {"holomorphic": True}),
]


def _derivatives(J, N, L):
    def f(z, w, ct, x):
        out = [J.grad(make(N, L), **kw)(z) for make, kw in GRAD_CASES]

        def g(z):
            return N.exp(z) * N.conj(z) + N.real(z)

        def h(z):
            return N.tanh(z) * z

        out.append(J.vjp(g, z)[1](ct))
        out.append(J.jvp(g, (z,), (w,)))
        out.append(J.jacfwd(h, holomorphic=True)(z))
        out.append(J.jacrev(h, holomorphic=True)(z))
        out.append(J.jacrev(lambda z: N.abs(z * z))(z))
        out.append(J.grad(lambda x: N.abs(N.sum(L.complex(x, 2 * x) * (1 + 2j))))(x))
        out.append(J.hessian(lambda z: N.sum(N.sin(z) * z), holomorphic=True)(z))
        out.append(J.vmap(J.grad(lambda v: N.abs(N.exp(v) * v)))(z))
        return out

    return f


def test_derivatives_match_jax():
    args = (Z, W, _c(Z.shape), np.float32([0.3, -1.2]))
    ours = _derivatives(functx, fnp, flax)(*args)
    theirs = jax.jit(_derivatives(jax, jnp, jax.lax))(*args)
    _tree_close(ours, theirs, rtol=1e-4, atol=1e-5)


def test_derivative_errors_match_jax():
    calls = [
        lambda J, N: J.grad(lambda z: N.sum(z))(Z),  # complex output without holomorphic
        lambda J, N: J.grad(lambda z: N.sum(z), holomorphic=True)(np.float32([1.0])),
        lambda J, N: J.grad(lambda z: N.sum(N.abs(z)), holomorphic=True)(Z),
        lambda J, N: J.jacfwd(lambda z: z)(Z),  # complex input without holomorphic
        lambda J, N: J.jacrev(lambda z: z)(Z),  # complex output without holomorphic
    ]
    for call in calls:
        with pytest.raises(TypeError) as theirs:
            call(jax, jnp)
        with pytest.raises(TypeError) as ours:
            call(functx, fnp)
        head = str(theirs.value).split(",")[0].split(".")[0]
        assert head in str(ours.value), (str(ours.value), str(theirs.value))


@settings(max_examples=3)
@given(
    shape=st.sampled_from([(), (3,), (2, 2)]),
    dt=st.sampled_from([C64, C128]),
    seed=st.integers(0, 100),
)
def test_check_grads_and_vmap(shape, dt, seed):
    rng = np.random.default_rng(seed)
    z = (rng.uniform(0.5, 1.5, shape) * np.exp(1j * rng.uniform(-1, 1, shape))).astype(dt)

    def f(z):
        return fnp.exp(z) * fnp.conj(z) + fnp.sqrt(z) * flax.real(z) - 1j * fnp.abs(z)

    with np.errstate(all="ignore"):
        check_grads(f, (z,), order=1, atol=5e-2 if dt == C64 else None)
    zz = np.stack([z, z * 0.5])
    out = functx.vmap(f)(zz)
    assert out.dtype == dt
    np.testing.assert_allclose(out, np.stack([f(z), f(z * 0.5)]), rtol=1e-5)


# --- jit: complex64 and complex128 in one C++ program -----------------------------------------
def _many(N, L, grad):
    def f(z, w, m):
        return [
            z + w, z - w, z * w, z / w, -z, N.exp(z), N.log(z), N.sqrt(z), N.sin(z), N.tanh(z),
            N.arcsinh(z), z**3, z**2.5, N.abs(z), N.real(z), N.imag(z), N.conj(z),
            L.complex(N.real(z), N.imag(w)), N.sign(z), N.where(N.abs(z) > 1, z, w), z == w,
            N.real(z * 2.5j), N.sum(m, axis=1), N.prod(z), N.cumsum(m, axis=1),
            m @ m.T, _lru(L, N)(z[:3] * 0.5, m.T),
            grad(lambda v: N.sum(N.abs(N.exp(v) * v) ** 2))(z),
        ]  # fmt: skip

    return f


def test_jit_cpp_matches_eager():
    f = _many(fnp, flax, functx.grad)
    args = [(Z.astype(dt), W.astype(dt), _c((3, 4), dt)) for dt in (C64, C128)]
    g, o = _ordering(fnp, flax), (ORD_B, ORD_C, ORD_M)
    ours, ours_o = functx.jit(lambda a, b, o: ((f(*a), f(*b)), g(*o)))(*args, o)
    for out, a, tol in zip(ours, args, (2e-5, 1e-12)):
        _tree_close(out, f(*a), rtol=tol, atol=tol)
    _tree_close(ours_o, g(*o), rtol=0, atol=0)  # complex max/min (NaN parts included)


def test_jit_cpp_products_and_quotients_of_infinities_match_jax():
    """The C++ backend multiplies complex values by the schoolbook formula, as XLA and NumPy do:
    C's complex ``*`` would turn (nan+inf*j)*(1+1j) into -inf+inf*j where JAX gives nan+nan*j.
    Quotients keep C's own division, which gives JAX's (1+inf*j)/(1+1j) = inf+inf*j. (A product
    whose parts overflow, such as (1e30+1e30j)*(1e10+1e10j) in float32, gives -inf or nan in its
    real part as the compiler contracts it into a fused multiply-add or not, in XLA as here.)"""
    inf, nan = np.inf, np.nan
    a = [inf + 0j, inf + 1j, complex(nan, inf), complex(1, inf), complex(nan, 1), complex(inf, inf)]
    b = [inf + 0j, 1j, 1 + 1j, 1 + 1j, 1 + 0j, 0j]
    for dt in (C64, C128):
        x, y = np.array(a, dt), np.array(b, dt)
        ours = functx.jit(lambda x, y: (x * y, x / y))(x, y)
        with np.errstate(all="ignore"):
            theirs = jax.jit(lambda x, y: (x * y, x / y))(x, y)
        for o, t in zip(ours, theirs):
            o, t = np.asarray(o), np.asarray(t)
            assert o.dtype == t.dtype
            np.testing.assert_array_equal(o.real, t.real)
            np.testing.assert_array_equal(o.imag, t.imag)


def test_triton_computes_complex_as_pairs_of_real_lanes(monkeypatch):
    # the Triton backend (its CPU interpreter) on complex max/min with NaN parts, exactly as
    # eager (and so JAX); the LRU scan and the functions run in tests/lowering/test_backend_suite
    pytest.importorskip("triton")
    from functx.lowering.triton.program import compile_triton

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    g, o = _ordering(fnp, flax), (ORD_B, ORD_C, ORD_M)
    outs = compile_triton(functx.make_jaxpr(g)(*o))(*o)
    _tree_close([t.numpy() for t in outs], g(*o), rtol=0, atol=0)
    # host callbacks see complex NumPy arrays (they cross as real pairs)
    seen = []

    def h(z):
        y = functx.pure_callback(lambda a: np.conj(a) * 2, jax.ShapeDtypeStruct(z.shape, C64), z)
        functx.debug.callback(seen.append, y + 1)
        return y

    (y,) = compile_triton(functx.make_jaxpr(h)(Z))(Z)
    _close(y.numpy(), np.conj(Z) * 2)
    _close(seen[0], np.conj(Z) * 2 + 1)
    # what it does not cover is refused by name, never computed wrong
    # (eig: CPU-only in JAX too; complex sorts and the other linear algebra run there:
    # tests/lowering/test_triton_complex_steps.py)
    closed = functx.make_jaxpr(flax.linalg.eig)(np.eye(2, dtype=C64))
    with pytest.raises(UnsupportedError, match="eig of complex values is not supported"):
        compile_triton(closed)


_LANE_FNS = {
    "arith": lambda z, w: (z * w - z / (w + 0.5j), -z + w**2, z == w, z != w),
    "exp_log": lambda z, w: (fnp.exp(z), fnp.log(z), fnp.log1p(z), fnp.expm1(z), fnp.exp2(z)),
    "roots": lambda z, w: (fnp.sqrt(z), flax.rsqrt(z), fnp.abs(z), fnp.sign(z), fnp.angle(z)),
    "trig": lambda z, w: (fnp.sin(z), fnp.cos(z), fnp.tan(z), fnp.sinh(z), fnp.cosh(z)),
    "inverse": lambda z, w: (fnp.arcsin(z), fnp.arccos(z), fnp.arctan(z), fnp.arcsinh(z)),
    "inverse_h": lambda z, w: (fnp.arccosh(z), fnp.arctanh(z), fnp.tanh(z), flax.logistic(z)),
    "pow": lambda z, w: (z**w, z**3, z**-2, fnp.conj(z) ** 0, flax.max(z, w), flax.min(z, w)),
    "reduce": lambda z, w: (fnp.prod(z, axis=0), fnp.max(z, axis=-1), fnp.min(w), fnp.sum(z)),
    "cast": lambda z, w: (z.astype(np.complex128), fnp.real(w).astype(z.dtype), z.astype(bool)),
    "control": lambda z, w: (
        flax.reduce((z, w), (1 + 0j, 0j), lambda a, b: (a[0] * b[0], a[1] + b[1]), (0,)),
        flax.while_loop(lambda c: c[1] < 3, lambda c: (c[0] * w + 1j, c[1] + 1), (z, 0)),
        flax.cond(fnp.sum(z).real > 0, lambda v: v * 2j, lambda v: v / w, z),
        flax.scan(lambda c, x: (c * x + 1j, c - x), z[0], z),
        flax.associative_scan(lambda a, b: a * b, z, axis=0),
    ),
}


@pytest.mark.parametrize("group", sorted(_LANE_FNS))
@settings(max_examples=1, deadline=None)
@given(
    shape=st.sampled_from([(1,), (3,), (2, 3)]),
    dt=st.sampled_from([C64, C128]),
    seed=st.integers(0, 1000),
)
def test_real_lane_rewrite_matches_complex_eager(group, shape, dt, seed):
    # the rewrite Triton compiles (complex values as pairs of real lanes), run eagerly on
    # NumPy's interleaved layout, against the complex program (the formulas, without Triton)
    from functx.interpreter import eval_jaxpr
    from functx.lowering.complex_lanes import split_complex

    rng = np.random.default_rng(seed)
    z, w = ((rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt) for _ in "zw")
    z.flat[0] = 0 if seed % 3 == 0 else z.flat[0]  # (zero: sqrt, sign, pow, abs special cases)
    f = _LANE_FNS[group]
    closed = functx.make_jaxpr(f)(z, w)
    real, cin, cout = split_complex(closed)
    assert cin == [True, True] and not any(
        a.dtype in dtypes.COMPLEX for a in real.in_avals + real.out_avals
    )
    outs = eval_jaxpr(
        real.jaxpr,
        real.consts,
        z.view(z.real.dtype).reshape(shape + (2,)),
        w.view(w.real.dtype).reshape(shape + (2,)),
    )
    with np.errstate(all="ignore"):
        want = [np.asarray(v) for v in jax.tree.leaves(f(z, w))]
    for o, c, ref in zip(outs, cout, want):
        o = np.asarray(o)
        got = o.view(ref.dtype).reshape(ref.shape) if c else o
        assert got.dtype == ref.dtype
        tol = 2e-5 if dt == C64 else 1e-11
        np.testing.assert_allclose(got, ref, rtol=tol, atol=tol, equal_nan=True, err_msg=group)


def test_docstring_examples_run():
    from functx import ops
    from functx.numpy import _complex

    # (the public names' examples run in tests/test_docstrings.py; the others here)
    assert doctest.DocTestFinder().find(_complex)  # (the module has examples)
    assert docutil.run(_complex, optionflags=0).failed == 0
    for fn in (ops.real, ops.imag, ops.conj, ops.complex):
        assert docutil.run(fn, optionflags=0).failed == 0
