"""More gaps found by JAX's own test files (issue 18, session 30): jvp's weakly typed tangents,
and the causes listed in docs/jax_tests.md; checked against JAX 0.10.2 computed here (values,
dtypes, weak types, error classes)."""

import functools

import jax
import jax.numpy as jnp_ref
import numpy as np
import pytest
from x64util import x64_off, x64_on

import functx
import functx.numpy as jnp


def _sig(tree):
    return [
        (np.dtype(x.dtype), bool(getattr(x, "weak_type", False))) if hasattr(x, "dtype") else x
        for x in jax.tree_util.tree_leaves(tree)
    ]


# --- jvp: a weakly typed primal output has a weakly typed tangent, as in JAX --------------------
def _jvp_cases(F):  # F: the mode's default float type (a tangent must match its primal)
    return [
        (lambda m: m.sin, (0.5,), (1.0,)),
        (lambda m: m.sin, (0.5,), (F(1.0),)),
        (lambda m: m.sin, (F(0.5),), (1.0,)),
        (lambda m: lambda x: x * x, (0.5,), (F(1.0),)),
        (lambda m: lambda x: m.sum(x), (0.5,), (F(1.0),)),
        (lambda m: lambda x: x.astype(m.float32), (0.5,), (1.0,)),
        (lambda m: lambda x, y: x * y, (0.5, 2.0), (F(1.0), F(1.0))),
        (lambda m: lambda x: (2 * x, m.ones(2) * x), (0.5,), (1.0,)),
        (lambda m: lambda x: m.float32(3.0) * x, (0.5,), (1.0,)),
    ]


@pytest.mark.parametrize("x64", [False, True])
def test_jvp_tangent_weak_type_as_jax(x64):
    ctx = x64_off() if not x64 else x64_on()
    F = np.float64 if x64 else np.float32
    with ctx:
        for i, (mk, p, t) in enumerate(_jvp_cases(F)):
            want = jax.jvp(mk(jnp_ref), p, t)
            got = functx.jvp(mk(jnp), p, t)
            assert _sig(got) == _sig(want), i
            for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
        # traced (under jit) the tangent is weak too
        got = functx.eval_shape(lambda x: functx.jvp(jnp.sin, (x,), (F(1),)), 0.5)
        want = jax.eval_shape(lambda x: jax.jvp(jnp_ref.sin, (x,), (F(1),)), 0.5)
        assert _sig(got) == _sig(want)
        # a tangent of another dtype: JAX's TypeError
        for lib, m in ((jax, jnp_ref), (functx, jnp)):
            with pytest.raises(TypeError):
                lib.jvp(m.sin, (F(0.5),), (np.float16(1),))


# --- vjp's function: JAX's input-saving VJP (args_res, opaque_residuals) -------------------------
def _vjp_cases(lib, m):
    f = lambda x, y: x * y  # noqa: E731
    y, f_vjp = lib.vjp(f, 2.0, 3.0)
    f_vjp.args_res = [None, None]  # (dropped while stored, put back before the call)
    f_vjp.args_res = [2.0, 3.0]
    yield y, f_vjp(1.0), len(f_vjp.args_res), len(f_vjp.opaque_residuals)

    def g(x, y):  # (under jit: the residuals are tracers)
        out, fv = lib.vjp(f, x, y)
        fv.args_res = [None, None]
        fv.args_res = [x, y]
        return out, fv(1.0)

    yield lib.jit(g)(2.0, 3.0)
    _, fv = lib.vjp(m.sin, 3.0)
    yield fv(1.0), type(fv.args_res[0]).__name__, bool(fv.opaque_residuals)

    def f2(x, w):
        return 2.0 * ((1.0 * x) @ w)

    x, w = m.ones((3, 4)), m.ones((4, 4))
    y, f2_vjp = lib.vjp(f2, x, w)
    f2_vjp.args_res[1] = None
    f2_vjp.args_res[1] = w
    yield f2_vjp(m.ones((3, 4)))
    with pytest.raises(ValueError, match="unexpected JAX type"):
        f2_vjp(m.ones((2, 4)))
    _, fv = lib.vjp(lambda x: 1.0, 3.14)
    yield isinstance(fv(1.0)[0], lib.Array)


def test_vjp_function_args_res_as_jax():
    for got, want in zip(_vjp_cases(functx, jnp), _vjp_cases(jax, jnp_ref), strict=True):
        assert _sig(got) == _sig(want)
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


# --- errors and argument forms found in lax_numpy_test -------------------------------------------
def _error_cases(m):
    x = np.ones(3, np.complex64)
    return [
        lambda: m.arange(1 + 2j, 5 + 3j),
        lambda: m.arange(0, 5, 1 + 1j),
        lambda: m.argmax(np.array([], np.float32)),
        lambda: m.nanargmin(np.zeros((2, 0), np.float32), axis=1),
        lambda: m.array([0.0, None]),
        lambda: m.asarray(None),
        lambda: 1 in m.array(1),
        lambda: m.arange(2) in m.arange(2),
        lambda: "abc" in m.arange(2),
        lambda: m.broadcast_to(m.zeros((3, 4, 5)), (4, 5)),
        lambda: m.broadcast_to(np.ones((2, 3)), (1, 3)),
        lambda: m.clip(x, 0, 1),
        lambda: m.corrcoef(m.arange(5), m.arange(5), dtype=int),
        lambda: m.cov(m.arange(5), dtype="int32"),
        lambda: m.hypot(x, x),
        lambda: m.expand_dims(m.ones((2, 3)), [3, -1]),
        lambda: m.pad(m.array([1, 2, 3]), 1, "foo"),
        lambda: m.take(m.ones((2, 0, 4)), m.array([0]), axis=1),
        lambda: m.trace(m.ones((2, 3, 2)), axis1=1, axis2=-2),
        lambda: m.dot([1.0, 2.0], np.ones(2)),
        lambda: m.matmul(np.ones(2), (1.0, 2.0)),
        lambda: m.tensordot(np.ones((3, 2, 2)), np.ones(2), axes=2),
        lambda: m.tensordot(np.ones((3, 2, 2)), np.ones(2), axes=([0], [0, 1])),
        lambda: m.tensordot(np.ones((3, 2, 2)), np.ones(2), axes="badaxes"),
        lambda: m.rot90(m.ones(2)),
        lambda: m.zeros(2, 3),
        lambda: m.zeros(1.0),
    ]


_JAX_WORDS = [  # the part of JAX's message its tests match
    "Passing complex start/stop/step to jnp.arange is no longer supported",
    "Passing complex start/stop/step to jnp.arange is no longer supported",
    "attempt to get argmax of an empty sequence",
    "attempt to get argmin of an empty sequence",
    "None is not a valid value for jnp.array",
    "None is not a valid value for jnp.array",
    "Array.__contains__: search array must be one-dimensional",
    "Array.__contains__: query value must be a scalar",
    "Array.__contains__: unsupported operand type",
    "Cannot broadcast to shape with fewer dimensions",
    "Incompatible.*broadcasting: ",
    "Complex values have no ordering and cannot be clipped",
    "corrcoef: dtype must be a subclass of float or complex",
    "cov: dtype must be a subclass of float or complex",
    "jnp.hypot is not well defined for complex-valued inputs",
    "repeated axis",
    "Unimplemented padding mode 'foo' for np.pad",
    "non-empty jnp.take",
    "axis1 and axis2 can not be same",
    "dot requires ndarray or scalar arguments",
    "matmul requires ndarray or scalar arguments",
    "Number of tensordot axes.*exceeds input ranks",
    "tensordot requires axes lists to have equal length",
    "tensordot axes argument must be an int, a pair of ints, or a pair of lists",
    "rot90 requires its first argument to have ndim at least two, but got first argument of",
    r"Did you accidentally write `jax\.numpy\..*?\(2, 3\)` when you meant "
    r"`jax\.numpy\..*?\(\(2, 3\)\)`",
    "Shapes must be 1D sequences of concrete values of integer type",
]


def test_traced_argument_errors_as_jax():
    lib_errors = {
        functx: functx.errors.ConcretizationTypeError,
        jax: jax.errors.ConcretizationTypeError,
    }
    v = np.arange(6, dtype=np.int32).reshape(2, 3)
    for lib, m in ((functx, jnp), (jax, jnp_ref)):
        cls = lib_errors[lib]
        with pytest.raises(cls, match="It arose in the jnp.arange argument 'stop'"):
            lib.jit(m.arange)(3)
        with pytest.raises(cls, match="It arose in the jnp.arange argument 'start'"):
            lib.jit(lambda s: m.arange(s, 3))(0)
        with pytest.raises(TypeError, match="Shapes must be 1D sequences of concrete values"):
            lib.jit(m.zeros)(2)
        for name in ("tolist", "tobytes"):
            with pytest.raises(cls, match=rf"The {name}\(\) method was called on traced array"):
                lib.jit(lambda x: getattr(x, name)())(v)


def test_error_classes_and_words_as_jax():
    for i, (ours, ref) in enumerate(zip(_error_cases(jnp), _error_cases(jnp_ref), strict=True)):
        with pytest.raises(Exception) as want:
            ref()
        with pytest.raises(want.type, match=_JAX_WORDS[i]):
            ours()


_PAD_MODES = ["constant", "edge", "linear_ramp", "maximum", "mean", "median", "minimum"]
_PAD_MODES += ["reflect", "symmetric", "wrap", "empty"]


def _pad_with(vector, pad_width, iaxis, kwargs):  # NumPy's function form of a pad mode
    pad_value = kwargs.get("padder", 10)
    vector = vector.at[: pad_width[0]].set(pad_value)
    return vector.at[-pad_width[1] :].set(pad_value)


def _pads(m, a, b, c):
    return [m.pad(a, 2, _pad_with), m.pad(b, 1, _pad_with, padder=100)] + [
        m.pad(c, 1, mode=mode) for mode in _PAD_MODES
    ]


def _traced(m, x, y):  # (under vmap: tracers)
    return m.iscomplexobj([x + 1j]), round(y, 1), round(y), m.pad(x, 1, _pad_with)


@pytest.mark.parametrize("x64", [False, True])
def test_array_forms_as_jax(x64):
    with x64_off() if not x64 else x64_on():
        _array_forms()
        if not x64:
            return
        # pad's function mode and weak types (JAX's reference jitted: its eager pads are slow)
        pad_args = (np.arange(6).reshape(2, 3), np.arange(24).reshape(2, 3, 4))
        got = _pads(jnp, *pad_args, jnp.array(1.0)[None])
        want = jax.jit(lambda a, b, c: _pads(jnp_ref, a, b, c))(*pad_args, jnp_ref.array(1.0)[None])
        # the same on tracers
        v, y = np.arange(12).reshape(2, 2, 3), np.float32([7.56, -1.25])
        got += functx.vmap(lambda x, y: _traced(jnp, x, y))(v, y)
        want += jax.jit(jax.vmap(lambda x, y: _traced(jnp_ref, x, y)))(v, y)
        assert _sig(got) == _sig(want)
        for g, w in zip(got, want, strict=True):
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def _array_forms():
    import array

    class ArrayLike:
        def __jax_array__(self):
            return self.m.array(3.0)

    for m in (jnp, jnp_ref):
        ArrayLike.m = m
        got = [
            1 in m.arange(4),
            100 in m.arange(4),
            m.asarray(array.array("l", [0, 1, 2])),
            m.array(bytearray(b"\x2a\xf3"), ndmin=2),
            ArrayLike() * m.arange(3.0),
            m.iscomplexobj([1 + 1j]),
            round(m.float32(7.5), 1),
            round(m.array([1.5, 2.5])),
            m.take(m.ones((2, 0, 4)), m.array([], m.int32), axis=1),
        ]
        v = np.arange(6, dtype=np.int32).reshape(2, 3)
        assert m.asarray(v).tobytes("F") == v.tobytes("F")
        if m is jnp:
            ours = got
        else:
            for g, w in zip(ours, got, strict=True):
                assert _sig([g]) == _sig([w]), (g, w)
                np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    # complex cov/corrcoef conjugate the second factor, as NumPy's and JAX's
    z = np.array([[1 + 2j, 3 - 1j, 0.5j], [2, 1j, -1 + 1j]], np.complex64)
    for f in ("cov", "corrcoef"):
        np.testing.assert_allclose(getattr(jnp, f)(z), getattr(jnp_ref, f)(z), rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(
        jnp.cov(z, aweights=np.arange(1.0, 4.0)), np.cov(z, aweights=np.arange(1.0, 4.0)), rtol=2e-6
    )


# --- jvp/vjp/grad/linearize argument errors: JAX's classes and the words api_test matches ------
def _transform_error_cases(lib, m):
    f2 = lambda x, y: x * y  # noqa: E731
    f32 = np.float32
    _, pullback = lib.vjp(f2, f32(3), f32(4))
    _, lin_f = lib.linearize(lambda x: x, 1.0)
    _, lin_i = lib.linearize(lambda x: x, np.ones(2, np.int32))
    return [
        (lambda: lib.jvp(f2, (f32(2),), ()), "must have the same tree structure"),
        (lambda: lib.jvp(f2, (f32(2),), [f32(2)]), "must have the same tree structure"),
        (lambda: lib.jvp(lambda x: -x, (np.float16(2),), (f32(4),)), "jvp do not match"),
        (lambda: lib.jvp(lambda x: x, (m.ones(3),), (m.ones(4),)), "different primal and tangent"),
        (lambda: lib.jvp(f2, 0.0, (1.0,)), "must be tuples or lists; found float and tuple"),
        (lambda: pullback((f32(7), f32(100))), "unexpected tree structure"),
        (lambda: pullback(np.float16(42)), "unexpected JAX type"),
        (lambda: lib.grad(lambda x: (1, 2, 3), has_aux=True)(1.0), "two-element tuple"),
        (lambda: lib.grad(lambda x: x)("foo"), " 'foo' of type <.*'str'> is not a valid JAX type"),
        (
            lambda: functools.partial(lib.grad(f2, argnums=0), x=0.0)(y=1.0),
            "differentiating with respect to argnums=0 requires at least 1 positional arguments "
            "to be passed by the caller, but got only 0 positional arguments.",
        ),
        (lambda: lib.grad(lambda x: (x, x))(1.0), "Gradient only defined for scalar-output "),
        (lambda: lin_f(1), "tangent values inconsistent"),
        (lambda: lin_i(np.ones(2, np.int32)), "tangent values inconsistent"),
    ]


def test_transform_argument_errors_as_jax():
    ours, ref = _transform_error_cases(functx, jnp), _transform_error_cases(jax, jnp_ref)
    for (f, words), (g, _) in zip(ours, ref, strict=True):
        with pytest.raises(Exception) as want:
            g()
        with pytest.raises(want.type, match=words):
            f()


def test_linearize_has_aux_as_jax():
    def fn(m):
        return lambda x: ({"a": x * x, "b": m.sin(x)}, {"c": x + 1, "pos": x > 0})

    x, t = np.float32(2.0), np.float32(0.5)
    got = functx.linearize(fn(jnp), x, has_aux=True)
    want = jax.linearize(fn(jnp_ref), x, has_aux=True)
    for g, w in ((got[0], want[0]), (got[1](t), want[1](t)), (got[2], want[2])):
        assert _sig(g) == _sig(w)
        for a, b in zip(jax.tree_util.tree_leaves(g), jax.tree_util.tree_leaves(w)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


_NAN_REDUCTIONS = ["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nancumsum", "nancumprod"]


def test_complex_nan_reductions_as_jax():
    def all_of(m, x):
        return [getattr(m, f)(x, axis=ax) for f in _NAN_REDUCTIONS for ax in (None, 1)]

    x = np.array([[np.nan + 0j, 2j, 1 + 1j], [1 - 1j, 3 + np.nan * 1j, 2]], np.complex64)
    got, want = all_of(jnp, x), jax.jit(lambda x: all_of(jnp_ref, x))(x)
    assert _sig(got) == _sig(want)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=2e-6, atol=1e-6)
