"""functx/nn/_scaled.py (``scaled_matmul``, ``scaled_dot_general``,
``get_scaled_dot_general_config``). JAX computes these only through cuDNN on a GPU, so the
references are JAX's own definitions run here: its block quantizer (``quantize``, plain jnp)
and the documented formula of ``scaled_matmul`` (operands times repeated scales), in float64."""

from __future__ import annotations

import jax
import jax.numpy as jjnp
import ml_dtypes
import numpy as np
import pytest
from jax._src.cudnn import scaled_matmul_stablehlo as jsm

import functx
import functx.numpy as fnp
from functx import nn

R = np.random.RandomState(0)
DN = (((2,), (2,)), ((0,), (0,)))


def _jax_quantize(x, config):
    """JAX's block quantizer, jitted (its eager op-by-op run costs seconds)."""
    return jax.jit(lambda v: jsm.quantize(v, config))(jjnp.asarray(x))


def _dequant(q, s):
    q, s = np.asarray(q, np.float64), np.asarray(s, np.float64)
    return q * np.repeat(s, q.shape[-1] // s.shape[-1], axis=-1)


def test_scaled_matmul_formula():
    lhs = R.randn(2, 3, 64).astype(ml_dtypes.float8_e4m3fn)
    rhs = R.randn(2, 5, 64).astype(ml_dtypes.float8_e4m3fn)
    ls = np.exp2(R.randint(-3, 3, (2, 3, 2))).astype(ml_dtypes.float8_e8m0fnu)
    rs = np.exp2(R.randint(-3, 3, (2, 5, 2))).astype(ml_dtypes.float8_e8m0fnu)
    for pet in (np.float32, ml_dtypes.bfloat16):
        out = nn.scaled_matmul(
            fnp.asarray(lhs), fnp.asarray(rhs), fnp.asarray(ls), fnp.asarray(rs), pet
        )
        want = np.einsum("bmk,bnk->bmn", _dequant(lhs, ls), _dequant(rhs, rs))
        assert out.dtype == pet and out.shape == (2, 3, 5)
        np.testing.assert_allclose(
            np.asarray(out, np.float64), want, rtol=1e-2 if pet != np.float32 else 1e-6
        )
    with pytest.raises(ValueError):
        nn.scaled_matmul(np.ones((3, 4)), np.ones((3, 4)), np.ones((3, 1)), np.ones((3, 1)))
    with pytest.raises(ValueError):  # scales do not match the non-contracting dimensions
        nn.scaled_matmul(*[np.ones((1, 2, 4))] * 2, np.ones((1, 3, 1)), np.ones((1, 2, 1)))


def test_config_like_jax():
    for mode in ("mxfp8", "nvfp4"):
        ours, theirs = (
            nn.get_scaled_dot_general_config(mode),
            jax.nn.get_scaled_dot_general_config(mode),
        )
        for f in ("mode", "block_size", "data_type", "scale_type", "infer_only"):
            assert getattr(ours, f) == getattr(theirs, f), (mode, f)
    with pytest.raises(ValueError):
        nn.get_scaled_dot_general_config("fp3")


@pytest.mark.parametrize("mode", ["mxfp8", "nvfp4"])
def test_scaled_dot_general_like_jax_definition(mode):
    lhs = (R.randn(2, 32, 64) * 3).astype(np.float32)
    rhs = R.randn(2, 32, 64).astype(np.float32)
    gs = 0.5 if mode == "nvfp4" else None
    cfg = [nn.get_scaled_dot_general_config(mode, None if gs is None else fnp.float32([gs]))] * 3
    jcfg = [
        jax.nn.get_scaled_dot_general_config(mode, None if gs is None else jjnp.float32([gs]))
    ] * 3
    out = nn.scaled_dot_general(lhs, rhs, DN, configs=cfg)
    (ql, sl), (qr, sr) = (
        _jax_quantize(lhs, jcfg[0]),
        _jax_quantize(rhs, jcfg[1]),
    )
    want = np.einsum("bmk,bnk->bmn", _dequant(ql, sl), _dequant(qr, sr)) * (gs * gs if gs else 1)
    assert out.dtype == np.float32 and out.shape == (2, 32, 32)
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-4)
    # the gradient: the cotangent (ones) and rhs quantized along rhs's free dimension (nvfp4:
    # unquantized), as JAX's backward pass
    g = functx.grad(lambda x: nn.scaled_dot_general(x, rhs, DN, configs=cfg).sum())(lhs)
    ones = np.ones((2, 32, 32), np.float32)
    if mode == "nvfp4":
        want_g = np.einsum("bmn,bnk->bmk", ones, rhs.astype(np.float64))
    else:
        y3 = np.swapaxes(rhs, 1, 2)  # (B, K, N): contracted over N
        (qg, sg), (qy, sy) = (
            _jax_quantize(ones, jcfg[2]),
            _jax_quantize(y3, jcfg[1]),
        )
        want_g = np.einsum("bmn,bkn->bmk", _dequant(qg, sg), _dequant(qy, sy))
    np.testing.assert_allclose(np.asarray(g), want_g, rtol=1e-5, atol=1e-4)


def test_scaled_dot_general_plain_and_errors():
    x, y = R.randn(3, 8).astype(np.float32), R.randn(8, 2).astype(np.float32)
    out = nn.scaled_dot_general(x, y, (((1,), (0,)), ((), ())))
    np.testing.assert_allclose(np.asarray(out), x @ y, rtol=1e-5)
    cfg = [nn.get_scaled_dot_general_config("mxfp8")] * 3
    with pytest.raises(ValueError):  # 8 is not a multiple of the block size 32
        nn.scaled_dot_general(x, y, (((1,), (0,)), ((), ())), configs=cfg)
    with pytest.raises(TypeError):
        nn.scaled_dot_general(x, y, (((1,), (0,)), ((), ())), configs=cfg[:2])
    a = R.randn(4, 64).astype(np.float32)  # no batch dimension, and vmap
    two = nn.scaled_dot_general(a, a, (((1,), (1,)), ((), ())), configs=cfg)
    assert two.shape == (4, 4)
    v = functx.vmap(lambda r: nn.scaled_dot_general(r, a, (((1,), (1,)), ((), ())), configs=cfg))(
        a[None]
    )
    np.testing.assert_allclose(np.asarray(v[0]), np.asarray(two), rtol=1e-6)
