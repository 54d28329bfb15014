"""``functx.nn``'s selu, celu, glu, hard_tanh, soft_sign and sparse_plus against ``jax.nn``:
values and dtypes on hypothesis-drawn shapes, derivatives at the kinks (``jax.grad``) and by
``check_grads`` away from them, errors, and the docstrings' examples."""

from __future__ import annotations

import docutil
import jax
import jax.nn as jnn
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import functx
import functx.nn as fnn
from functx.test_util import check_grads

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)

ACTS = {
    "selu": lambda m, x: m.selu(x),
    "celu": lambda m, x: m.celu(x),
    "celu_alpha": lambda m, x: m.celu(x, alpha=0.5),
    "hard_tanh": lambda m, x: m.hard_tanh(x),
    "soft_sign": lambda m, x: m.soft_sign(x),
    "sparse_plus": lambda m, x: m.sparse_plus(x),
    "glu": lambda m, x: m.glu(x),
}
KINKS = np.array([-1.0, -0.0, 0.0, 1.0, -2.0, -0.5, 0.5, 2.0, np.inf, -np.inf])


def assert_same(out, ref, rtol):
    out, ref = np.asarray(out), np.asarray(ref)
    assert out.dtype == ref.dtype, (out.dtype, ref.dtype)
    assert out.shape == ref.shape, (out.shape, ref.shape)
    np.testing.assert_allclose(out, ref, rtol=rtol, atol=rtol)


def tol(dt):
    return 2e-6 if dt == F32 else 1e-13


@pytest.mark.parametrize("name", list(ACTS))
@settings(max_examples=6)
@given(data=st.data())
def test_values_match_jax(name, data):
    dt = data.draw(st.sampled_from([F32, F64]), label="dtype")
    shape = data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))
    if name == "glu":
        shape = (*shape[:-1], 2 * shape[-1])
    x = data.draw(
        hnp.arrays(F64, shape, elements=st.floats(-4, 4, allow_subnormal=False)), label="x"
    ).astype(dt)
    assert_same(ACTS[name](fnn, x), ACTS[name](jnn, x), tol(dt))


@pytest.mark.parametrize("name", [n for n in ACTS if n != "glu"])
@pytest.mark.parametrize("dt", [F32, F64])
def test_kinks_values_and_derivatives(name, dt):
    x = KINKS.astype(dt)
    with np.errstate(all="ignore"):
        assert_same(ACTS[name](fnn, x), ACTS[name](jnn, x), tol(dt))
    finite = x[np.isfinite(x)]
    gx = functx.vmap(functx.grad(lambda v: ACTS[name](fnn, v)))(finite)
    gj = jax.vmap(jax.grad(lambda v: ACTS[name](jnn, v)))(finite)
    assert_same(gx, gj, tol(dt))


def test_glu_axis_gradients_and_errors():
    x = np.linspace(-2, 2, 24).reshape(2, 4, 3)
    for axis in (0, 1, -2):
        assert_same(fnn.glu(x, axis=axis), jnn.glu(x, axis=axis), 1e-13)
        gx = functx.grad(lambda v, a=axis: fnn.glu(v, axis=a).sum())(x)
        gj = jax.grad(lambda v, a=axis: jnn.glu(v, axis=a).sum())(x)
        assert_same(gx, gj, 1e-13)
    with pytest.raises(ValueError):
        fnn.glu(x, axis=-1)  # size 3 (JAX asserts: AssertionError)
    with pytest.raises(AssertionError):
        jnn.glu(x, axis=-1)


def test_hard_tanh_keeps_integer_dtype_as_jax():
    x = np.arange(-3, 4, dtype=np.int32)
    assert_same(fnn.hard_tanh(x), jnn.hard_tanh(x), 0)


@pytest.mark.parametrize("name", list(ACTS))
def test_check_grads(name):
    x = np.array([-3.3, -1.7, -0.6, -0.2, 0.3, 0.7, 1.6, 2.9])  # away from the kinks
    check_grads(lambda v: ACTS[name](fnn, v), (x,), order=2)


@pytest.mark.usefixtures("no_x64")
def test_jit_and_docstrings():
    x = np.linspace(-3, 3, 8).astype(np.float32)
    for f in ACTS.values():
        assert_same(functx.jit(lambda v, f=f: f(fnn, v))(x), f(jnn, x), 2e-6)
    for name in ("selu", "celu", "glu", "hard_tanh", "soft_sign", "sparse_plus"):
        assert name in fnn.__all__
        doc = getattr(fnn, name).__doc__
        assert "Arguments:" in doc and "Returns:" in doc and "Example:" in doc, name
    # (the public names' examples run in tests/test_docstrings.py; the others here)
    assert docutil.run(fnn, optionflags=0).failed == 0


# --- hard_sigmoid, hard_silu/hard_swish, identity, tanh, mish, squareplus, sparse_sigmoid,
# log1mexp, logmeanexp, dot_product_attention: every JAX reference of these tests comes from ONE
# jax.jit (a single XLA compile; JAX's eager calls would compile each function separately).
NEW_ACTS = {
    "hard_sigmoid": lambda m, x: m.hard_sigmoid(x),
    "hard_silu": lambda m, x: m.hard_silu(x),
    "hard_swish": lambda m, x: m.hard_swish(x),
    "identity": lambda m, x: m.identity(x),
    "tanh": lambda m, x: m.tanh(x),
    "mish": lambda m, x: m.mish(x),
    "squareplus": lambda m, x: m.squareplus(x),
    "squareplus_b": lambda m, x: m.squareplus(x, 0.5),
    "sparse_sigmoid": lambda m, x: m.sparse_sigmoid(x),
    "log1mexp": lambda m, x: m.log1mexp(m.relu(x) + 0.01),
}
ATT = np.random.default_rng(0).normal(size=(4, 2, 5, 4, 3)).astype(np.float32)
ATT_MASK = np.random.default_rng(1).uniform(size=(2, 4, 5, 5)) > 0.3
ATT_BIAS = np.random.default_rng(2).normal(size=(1, 4, 5, 5)).astype(np.float32)


def _attention_cases(m, q, k, v, bias, mask):
    k2, v2 = k[:, :, :2], v[:, :, :2]  # 2 key/value heads for 4 query heads
    return [
        m.dot_product_attention(q, k, v, bias, mask, scale=0.3),
        m.dot_product_attention(q, k2, v2, is_causal=True),
    ]


def _all_new(m, x, q, k, v, bias, mask):
    grad = jax.grad if m is jnn else functx.grad
    out = [f(m, x) for f in NEW_ACTS.values()]
    # elementwise functions: the gradient of the sum is the derivative at each point
    out += [grad(lambda u, f=f: f(m, u).sum())(x) for f in NEW_ACTS.values()]
    out += [
        m.logmeanexp(x),
        m.logmeanexp(x, where=x > 0),
        m.logmeanexp(x.reshape(2, -1), 1, keepdims=True),
    ]
    return out + _attention_cases(m, q, k, v, bias, mask)


def test_new_activations_and_attention_match_jax():
    x = np.concatenate([KINKS[np.isfinite(KINKS)], [-3.3, 2.9, 4.0, -4.0, 3.0, -3.0]]).astype(F32)
    args = (x, ATT[0], ATT[1], ATT[2], ATT_BIAS, ATT_MASK)
    ref = jax.jit(lambda *a: _all_new(jnn, *a))(*args)
    out = _all_new(fnn, *args)
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        assert_same(o, r, 2e-5)


def _attention_ref(q, k, v, keep, scale=None):
    """JAX's 'xla' attention written out in NumPy: (B, T, N, H) with N == K, masked logits
    -0.7 * float32 max, the softmax in float32."""
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    logits = np.einsum("btnh,bsnh->bnts", q, k) * np.float32(scale)
    logits = np.where(keep, logits, np.float32(-0.7 * np.finfo(np.float32).max))
    p = np.exp(logits - logits.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True)
    lse = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)
    return np.einsum("bnts,bsnh->btnh", p, v).astype(np.float32), lse.transpose(0, 2, 1)


def test_attention_masks_and_padding_match_the_formula():
    q, k, v = ATT[0], ATT[1], ATT[2]
    T = S = 5
    none = np.ones((1, 1, T, S), bool)
    causal = np.tril(none)
    assert_same(
        fnn.dot_product_attention(q[0], k[0], v[0], is_causal=True),
        _attention_ref(q[:1], k[:1], v[:1], causal)[0][0],
        2e-5,
    )
    masked = ATT_MASK[:, :1] & False  # every logit masked: the values are averaged, as in JAX
    assert_same(
        fnn.dot_product_attention(q, k, v, mask=masked), _attention_ref(q, k, v, masked)[0], 2e-5
    )
    qi, ki = np.arange(T)[:, None], np.arange(S)[None, :]
    window = (qi <= ki + 1) & (qi >= ki - 1)
    qlen = np.array([3, 5], np.int32)
    out = fnn.dot_product_attention(q, k, v, query_seq_lengths=qlen, local_window_size=1)
    pad = (np.arange(T)[None, :, None] < qlen[:, None, None])[:, None]
    ref = (
        _attention_ref(q, k, v, window & pad)[0]
        * (np.arange(T)[None, :] < qlen[:, None])[:, :, None, None]
    )
    assert_same(out, ref, 2e-5)
    kvlen = np.array([2, 4], np.int32)
    out, res = fnn.dot_product_attention(q, k, v, key_value_seq_lengths=kvlen, return_residual=True)
    ref, lse = _attention_ref(q, k, v, (ki[None] < kvlen[:, None, None])[:, None])
    assert_same(out, ref, 2e-5)
    assert_same(res, lse.astype(np.float32), 2e-5)
    f64 = [t[:1, :3].astype(np.float64) for t in (q, k, v)]
    bias, mask = ATT_BIAS[:, :, :3, :3], ATT_MASK[:1, :, :3, :3]
    # the softmax runs in float32 (JAX's choice) even for float64 inputs: loose tolerances
    check_grads(
        lambda *a: fnn.dot_product_attention(*a, bias, mask), f64, 1, atol=2e-3, rtol=2e-3, eps=1e-3
    )


def test_new_activations_errors_jit_and_docstrings():
    q = ATT[0]
    for mod in (fnn, jnn):
        with pytest.raises(ValueError):
            mod.dot_product_attention(q, q[:, :, :3], q[:, :, :3])  # 4 heads vs 3
        with pytest.raises(ValueError):
            mod.dot_product_attention(q, q, q.astype(np.float16))
        with pytest.raises(ValueError):
            mod.dot_product_attention(q, q, q, mask=ATT_MASK.astype(np.int32))
    with pytest.raises(NotImplementedError):
        fnn.dot_product_attention(q, q, q, implementation="cudnn")
    f = lambda q: fnn.dot_product_attention(q, q, q, is_causal=True)  # noqa: E731
    assert "dot_general" in str(functx.make_jaxpr(f)(q))  # traces (jit compiles this Jaxpr)
    check_grads(
        lambda v: fnn.mish(v) + fnn.log1mexp(v * v + 0.1), (np.array([-1.3, 0.4, 2.2]),), order=1
    )
    for name in ("hard_sigmoid", "mish", "log1mexp", "logmeanexp", "dot_product_attention"):
        assert "Example:" in getattr(fnn, name).__doc__
    # (the module's examples: test_jit_and_docstrings above and tests/test_docstrings.py)
