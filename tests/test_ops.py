"""functx/ops.py's product algorithms and unary accuracies (``lax.DotAlgorithm``,
``lax.DotAlgorithmPreset``, ``lax.AccuracyMode``, ``lax.Tolerance``) against JAX's and against a
NumPy float64 reference of what each preset names (operands rounded to its input type, sums in
its accumulation type)."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx import lax
from functx.test_util import check_grads

R = np.random.RandomState(0)
A = R.randn(4, 5).astype(np.float32)
B = R.randn(5, 3).astype(np.float32)
Preset = lax.DotAlgorithmPreset


def _tf32(x):
    """float32 rounded to TF32 (8 exponent bits, 10 mantissa bits), to nearest even."""
    return np.asarray(jax.lax.reduce_precision(x, 8, 10))


# What each preset rounds the operands to, for float32 operands (None: not rounded).
ROUND = {
    "F16_F16_F16": lambda x: x.astype(np.float16).astype(np.float64),
    "F16_F16_F32": lambda x: x.astype(np.float16).astype(np.float64),
    "BF16_BF16_BF16": lambda x: x.astype(ml_dtypes.bfloat16).astype(np.float64),
    "BF16_BF16_F32": lambda x: x.astype(ml_dtypes.bfloat16).astype(np.float64),
    "TF32_TF32_F32": lambda x: _tf32(x).astype(np.float64),
}
# Tolerances of the result against the float64 product of the rounded operands: the output's
# rounding (and, for the F16/BF16 accumulations, the sums').
TOL = {"F16_F16_F16": 1e-2, "BF16_BF16_BF16": 5e-2}
NON_F8 = [p for p in Preset if not p.name.startswith("ANY_F8")]


def test_names_match_jax():
    assert [p.name for p in Preset] == [p.name for p in jax.lax.DotAlgorithmPreset]
    assert lax.DotAlgorithm._fields == jax.lax.DotAlgorithm._fields
    assert [m.name for m in lax.AccuracyMode] == [m.name for m in jax.lax.AccuracyMode]
    for p in Preset:
        jp = jax.lax.DotAlgorithmPreset[p.name]
        assert (repr(p), str(p)) == (repr(jp), str(jp))
        assert p.accumulation_type == jp.accumulation_type
        assert p.supported_lhs_types == jp.supported_lhs_types, p
        for dt in (np.float32, np.float16, ml_dtypes.bfloat16):
            ours, theirs = p.supported_output_types(dt, dt), jp.supported_output_types(dt, dt)
            assert (ours is None) == (theirs is None), p
            if ours is not None:
                assert [np.dtype(t) for t in ours] == [np.dtype(t) for t in theirs], (p, dt)


@pytest.mark.parametrize("preset", NON_F8, ids=str)
def test_preset_computes_what_it_names(preset):
    """Each preset (member or name) in lax.dot, jnp.matmul under jit, and einsum: the result's
    dtype is JAX's; its value the float64 product of the rounded operands."""
    rnd = ROUND.get(preset.name, lambda x: x.astype(np.float64))
    want = rnd(A) @ rnd(B)
    outs = [
        lax.dot(A, B, precision=preset),
        fnp.matmul(A, B, precision=preset.name),
        fnp.einsum("ij,jk->ik", A, B, precision=preset),
    ]
    if preset.name in ("BF16_BF16_F32", "TF32_TF32_F32"):  # (a compile costs ~0.5 s)
        outs.append(functx.jit(lambda a, b: fnp.matmul(a, b, precision=preset))(A, B))
    theirs = jax.eval_shape(lambda a, b: jax.lax.dot(a, b, precision=preset.name), A, B)
    for out in outs:
        assert out.dtype == theirs.dtype and out.shape == theirs.shape
        np.testing.assert_allclose(
            np.asarray(out, np.float64), want, rtol=TOL.get(preset.name, 1e-5), atol=1e-5
        )


@pytest.mark.parametrize("name", ["DEFAULT", "F16_F16_F16", "F32_F32_F32", "BF16_BF16_F32_X3"])
def test_presets_jax_cpu_computes_equal(name):
    """The presets whose rounding JAX's CPU backend does: functx's values are JAX's."""
    ours = lax.dot_general(A, B, (((1,), (0,)), ((), ())), precision=name)
    theirs = jax.lax.dot_general(A, B, (((1,), (0,)), ((), ())), precision=name)
    assert ours.dtype == theirs.dtype
    np.testing.assert_allclose(np.asarray(ours), np.asarray(theirs), rtol=2e-6, atol=2e-6)


def test_preset_on_narrow_inputs_and_preferred_type():
    a16, b16 = A.astype(np.float16), B.astype(np.float16)
    out = lax.dot(a16, b16, precision="F16_F16_F32", preferred_element_type=np.float32)
    theirs = jax.eval_shape(
        lambda a, b: jax.lax.dot(a, b, precision="F16_F16_F32", preferred_element_type=np.float32),
        a16,
        b16,
    )
    assert out.dtype == theirs.dtype == np.float32
    np.testing.assert_allclose(np.asarray(out), a16.astype(np.float64) @ b16, rtol=1e-5, atol=1e-5)


def test_dot_algorithm_tuple():
    alg = lax.DotAlgorithm(np.float16, np.float16, np.float32)
    out = lax.dot(A, B, precision=alg)
    assert out.dtype == np.float32
    want = A.astype(np.float16).astype(np.float64) @ B.astype(np.float16)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5)
    assert lax.canonicalize_precision(alg) is alg
    assert lax.canonicalize_precision("BF16_BF16_F32") is Preset.BF16_BF16_F32


def test_f8_presets_need_f8():
    with pytest.raises(ValueError, match="float8"):
        lax.dot(A, B, precision="ANY_F8_ANY_F8_F32")
    a8, b8 = A.astype(ml_dtypes.float8_e4m3fn), B.astype(ml_dtypes.float8_e4m3fn)
    out = lax.dot(fnp.asarray(a8), fnp.asarray(b8), precision=Preset.ANY_F8_ANY_F8_F32)
    theirs = jax.eval_shape(lambda a, b: jax.lax.dot(a, b, precision="ANY_F8_ANY_F8_F32"), a8, b8)
    assert out.dtype == theirs.dtype
    want = (a8.astype(np.float64) @ b8.astype(np.float64)).astype(out.dtype)
    np.testing.assert_array_equal(np.asarray(out), want)


def test_bad_precision_is_a_value_error():
    with pytest.raises(ValueError):
        lax.dot(A, B, precision="F32_F32")


def test_preset_grad_vmap_jit():
    f = lambda a, b: lax.dot(a, b, precision="F64_F64_F64")  # noqa: E731
    check_grads(f, (A.astype(np.float64), B.astype(np.float64)), order=1, modes=("rev",))
    g = functx.grad(lambda a: lax.dot(a, B, precision="BF16_BF16_F32").sum())(A)
    # the product of the rounded operands: the gradient is B's rounded row sums (in bfloat16)
    want = np.broadcast_to(ROUND["BF16_BF16_F32"](B).sum(1), A.shape)
    np.testing.assert_allclose(np.asarray(g), want, rtol=1e-2)
    v = functx.vmap(lambda a: lax.dot(a, B, precision="TF32_TF32_F32"))(A)
    np.testing.assert_allclose(np.asarray(v), np.asarray(lax.dot(A, B, precision="TF32_TF32_F32")))


# --- accuracy= ----------------------------------------------------------------------------------
ACCURACY_OPS = "exp exp2 log log1p expm1 tanh logistic sin cos tan sqrt rsqrt cbrt".split()


@pytest.mark.parametrize("name", ACCURACY_OPS)
def test_accuracy_argument(name):
    x = np.float32([0.25, 0.5, 1.5])
    theirs = np.asarray(getattr(jax.lax, name)(x, accuracy=jax.lax.AccuracyMode.HIGHEST))
    for acc in (None, lax.AccuracyMode.HIGHEST, lax.Tolerance(rtol=1e-3)):
        ours = getattr(lax, name)(x, accuracy=acc)
        np.testing.assert_allclose(np.asarray(ours), theirs, rtol=3e-6)
    with pytest.raises(NotImplementedError):
        getattr(lax, name)(x, accuracy="high")


def test_tolerance_checks():
    for bad in ({}, {"atol": -1.0}):
        with pytest.raises(ValueError):
            lax.Tolerance(**bad)
        with pytest.raises(ValueError):
            jax.lax.Tolerance(**bad)
    t = lax.Tolerance(atol=1e-3, ulps=2)
    assert (t.atol, t.rtol, t.ulps) == (1e-3, 0.0, 2)
    g = functx.grad(lambda v: lax.sin(v, accuracy=lax.AccuracyMode.HIGHEST))(0.5)
    assert np.isclose(float(g), float(jax.grad(lambda v: jjnp.sin(v))(0.5)))


@pytest.mark.parametrize(
    "name",
    ["reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or", "argmax", "argmin"],
)
def test_reductions_take_jaxs_parameter_names(name):
    import inspect

    want = list(inspect.signature(getattr(jax.lax, name)).parameters)
    assert list(inspect.signature(getattr(lax, name)).parameters) == want
    x = np.float32([[1, 5], [3, 4]])
    args = {"axis": 1, "index_dtype": np.int32} if name.startswith("arg") else {"axes": (1,)}
    if name in ("reduce_and", "reduce_or"):
        x = x > 2
    got, ref = getattr(lax, name)(operand=x, **args), getattr(jax.lax, name)(operand=x, **args)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
