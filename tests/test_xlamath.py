"""functx._xlamath against XLA's CPU math: ``log``, ``log1p``, ``erf_inv``, ``exp``, ``erf`` and
float32 ``lgamma`` as
``jax.jit`` computes them, bit for bit (the functions functx.random applies to uniform bits), and
the emulated fused multiply-add against an exact one, and float32 ``rsqrt`` (XLA's approximation
and Newton steps) against ``jax.jit(lax.rsqrt)``."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import functx
import functx.numpy as fjnp
from functx import _xlamath as xm

jax = pytest.importorskip("jax")
from jax import lax  # noqa: E402

RNG = np.random.default_rng(7)


def _inputs(dt):
    """Uniform-looking values in (0, 1) and (-1, 1), and positive numbers across the exponents."""
    u = RNG.random(4000).astype(dt)
    wide = np.exp(RNG.uniform(-80, 80, 2000)).astype(dt)
    return {
        "log": np.concatenate([u, wide, np.array([0, 1, np.inf, -1, np.nan], dt)]),
        "log1p": np.concatenate([u * 2 - 1, u * 1e-3, wide, np.array([-1, 0, np.inf], dt)]),
        "erf_inv": np.concatenate([u * 2 - 1, np.array([-1, 1, 0], dt)]),
        "erf": np.concatenate([(u - 0.5) * 10, u * 1e-3, np.array([0, -np.inf, np.inf], dt)]),
        "exp": np.concatenate(
            [
                (u - 0.5) * (180 if dt == np.float32 else 1500),
                np.log(wide),
                np.array([0, -np.inf, np.inf, np.nan, -87.5, 88.7], dt),
            ]
        ),
    }


def _same_bits(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype
    both_nan = np.isnan(got) & np.isnan(want)
    bad = got.view(np.uint8).reshape(got.size, -1) != want.view(np.uint8).reshape(want.size, -1)
    bad = bad.any(axis=1) & ~both_nan
    assert not bad.any(), (got[bad][:5], want[bad][:5])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_functions_give_xlas_bits(dt):
    ours = {"log": xm.log, "log1p": xm.log1p, "erf_inv": xm.erf_inv, "exp": xm.exp, "erf": xm.erf}
    theirs = jax.jit(
        lambda d: {
            "log": lax.log(d["log"]),
            "log1p": lax.log1p(d["log1p"]),
            "erf_inv": lax.erf_inv(d["erf_inv"]),
            "exp": lax.exp(d["exp"]),
            "erf": lax.erf(d["erf"]),
        }
    )
    x = _inputs(dt)
    want = theirs(x)
    for name, f in ours.items():
        _same_bits(f(fjnp.asarray(x[name])), want[name])


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_fma_rounds_once(dt):
    a, b, c = (RNG.standard_normal(500).astype(dt) for _ in range(3))
    c[:100] = -(a[:100] * b[:100])  # (cancellation: the low part decides)
    got = np.asarray(xm.fma(fjnp.asarray(a), fjnp.asarray(b), fjnp.asarray(c)))
    # (float32: the exact value fits float64 here, so rounding through it rounds once)
    want = [
        dt(float(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))))
        for x, y, z in zip(a, b, c)
    ]
    np.testing.assert_array_equal(got, np.asarray(want, dt))


def test_compiled_functions_give_the_eager_bits():
    """Under ``functx.jit`` (C++) the kept products (erf_inv's ``x * -x`` may not be fused into
    log1p's ``x + 1``) and the float32 divisions round as eagerly. (float32 normal, which runs
    erf_inv, is compared bit for bit under jit in test_random; float64 ``log`` and ``erf`` are
    libm's, and compiled loops call glibc's vector variants, an ulp apart.)"""
    dt = np.float32
    x = _inputs(dt)
    ours = {
        "log1p": lambda v: xm.log1p(v * fjnp.negative(v)),
        "erf": xm.erf,
    }
    x = {"log1p": x["erf_inv"], "erf": x["erf"]}
    got = functx.jit(lambda d: {n: f(d[n]) for n, f in ours.items()})(x)
    for name, f in ours.items():
        _same_bits(got[name], f(fjnp.asarray(x[name])))


def test_float32_lgamma_gives_xlas_bits():
    """float32 ``lgamma`` at ``x >= 0.5`` (the Poisson sampler's ``lgamma(k + 1)``): XLA's
    Lanczos sum, eagerly and under ``jit``; infinity at infinity."""
    x = np.concatenate(
        [
            np.arange(1, 3000, dtype=np.float32),
            RNG.uniform(0.5, 60, 2000).astype(np.float32),
            np.exp(RNG.uniform(0, 16, 1000)).astype(np.float32),
            np.array([0.5, np.inf], np.float32),
        ]
    )
    want = jax.jit(lax.lgamma)(x)
    _same_bits(xm.lgamma(fjnp.asarray(x)), want)
    _same_bits(functx.jit(xm.lgamma)(x), want)


def test_row_sum_adds_in_xlas_order():
    """XLA's CPU sum over the last axis of short rows: 16 (float32) or 8 (float64) interleaved
    partial sums, added pairwise by halving (functx.random.ball's norm)."""
    rows = {np.float32: (3, 7, 16, 40, 64), np.float64: (3, 9, 33)}
    # (300 rows: below 4096 elements XLA adds each row in order; 1500: interleaved)
    cases = {
        (dt, d, n): RNG.standard_normal((n, d)).astype(dt)
        for dt in rows
        for d in rows[dt]
        for n in (300, 1500)
    }
    want = jax.jit(lambda c: {k: v.sum(-1) for k, v in c.items()})(
        {f"{np.dtype(dt).name}_{d}_{n}": v for (dt, d, n), v in cases.items()}
    )
    for (dt, d, n), v in cases.items():
        _same_bits(xm.row_sum(fjnp.asarray(v)), want[f"{np.dtype(dt).name}_{d}_{n}"])


def test_float32_rsqrt_gives_xlas_bits():
    """``lax.rsqrt`` in float32 (and float16/bfloat16, computed in float32) is XLA's CPU rsqrt on
    this host, eagerly and under ``jit`` (C++): the processor's ``rsqrtss`` and Newton steps with
    fused multiply-adds (functx.lowering.cpp.hostmath), not the correctly rounded value. Random
    bit patterns, subnormals, zeros, infinities, NaN, powers of 2, and every float16/bfloat16;
    float64 too (``rsqrt14`` and Newton steps with AVX-512, else ``1 / sqrt``)."""
    specials = np.array([0, -0.0, np.inf, -np.inf, np.nan, -1, 1, 2, 4, 0.25], np.float32)
    x = {
        "f32": np.concatenate(
            [
                RNG.integers(0, 2**32, 60000, dtype=np.uint64).astype(np.uint32).view(np.float32),
                RNG.integers(1, 2**23, 2000, dtype=np.uint32).view(np.float32),  # subnormals
                np.ldexp(np.float32(1), np.arange(-149, 128)).astype(np.float32),
                specials,
            ]
        ),
        "f16": np.arange(2**16, dtype=np.uint16).view(np.float16),
        "bf16": np.arange(2**16, dtype=np.uint16).view(ml_dtypes.bfloat16),
        "f64": np.concatenate([np.exp(RNG.uniform(-700, 700, 5000)), specials.astype(np.float64)]),
    }
    want = jax.jit(lambda d: {k: lax.rsqrt(v) for k, v in d.items()})(x)
    compiled = functx.jit(lambda d: {k: functx.lax.rsqrt(v) for k, v in d.items()})(x)
    with np.errstate(all="ignore"):
        for k, v in x.items():
            _same_bits(functx.lax.rsqrt(v), want[k])
            _same_bits(compiled[k], want[k])
    # (the correctly rounded value differs from XLA's in a sizeable share of inputs)
    pos = x["f32"][(x["f32"] > 1e-30) & (x["f32"] < 1e30)]
    exact = (1 / np.sqrt(pos.astype(np.float64))).astype(np.float32)
    assert (exact != np.asarray(functx.lax.rsqrt(pos))).mean() > 0.05
