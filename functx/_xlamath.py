"""XLA's CPU float math, reproduced bit for bit from functx's elementwise primitives (private).

``functx.random`` applies ``log``/``log1p``/``erf_inv`` to uniform bits; to give JAX's bits it must
round exactly as XLA's CPU backend does, and the same way eagerly, in C++ and in Triton. What XLA
0.10's CPU backend computes (read from its optimized LLVM IR and object code, and checked against
``jax.jit`` on every float32 input a sampler can produce):

* float32 ``log``: the Cephes polynomial of Eigen's ``plog_float`` (mantissa in ``[sqrt(1/2),
  sqrt(2))``, three interleaved Horner chains in powers of ``x**3``), with LLVM contracting each
  product that feeds one sum into a fused multiply-add; denormal inputs count as zero.
* float32/float64 ``log1p``: ``x + (-x**2/2 + x**3 * P(x)/Q(x))`` (degree-6 ``P`` and ``Q``) for
  ``|x| < sqrt(2) - 1``, else ``log(1 + x)``; float64 ``log`` is glibc's (NumPy's on this machine).
* float32 ``exp``: Eigen's ``pexp_float`` (argument clamped to ``[-87.8, 88.8]``, ``n =
  floor(x log2(e) + 1/2)`` clamped to ``[-127, 127]``, Cody-Waite reduction by two parts of
  ``ln 2``, a degree-7 polynomial, scaling by ``2**n`` built from bits), every product feeding one
  sum fused; results below the smallest normal flushed to zero.
* float64 ``exp``: XLA's own expansion (``exp(g) = 1 + 2 g P(g^2) / (Q(g^2) - g P(g^2))``, the
  scale ``2**n`` applied as three factors ``2**(n >> 2)`` and one ``2**(n - 3 (n >> 2))``), zero
  below ``-708.396...`` and infinity above ``709.78...``.
* float32 ``erf``: ``x P(x^2) / Q(x^2)`` (degrees 4 and 6, every Horner step a fused
  multiply-add), ``sign(x)`` from ``|x| >= 3.832...`` on; float64 ``erf`` is
  ``functx.lax.erf``'s.
* ``erf_inv``: Giles' polynomials (XLA's ``ErfInv``) with every Horner step a fused multiply-add.

Fused multiply-adds are emulated (``fma``): in float64 for float32 operands, by Dekker's product
and Knuth's sum for float64 ones, written so that the result does not depend on whether a compiler
contracts the emulation's own products into FMAs.
"""

from __future__ import annotations

import numpy as np

from functx import config, dtypes, lax, numpy as jnp

__all__ = [
    "erf",
    "erf_inv",
    "exp",
    "flush_denormal",
    "fma",
    "lgamma",
    "log",
    "log1p",
    "rounded",
    "row_sum",
]


def _c(v, dt):
    return np.asarray(v, dt)


def _f32(h):
    return np.array([h], np.uint32).view(np.float32)[0]


def _kept(x):
    """``x`` itself, rounded on its own: a compiler contracting floating-point expressions (gcc
    fuses a product into every sum that is its only kind of use) may not fuse it into a sum."""
    return lax.max(x, jnp.full(x.shape, -np.inf, x.dtype))


def rounded(x):
    """``x`` rounded on its own (an unfused product): compiled code may not contract it into a
    following sum."""
    return _kept(x)


def _div(a, b):
    """``a / b`` rounded once. float32: computed in float64 and rounded, which rounds correctly
    (53 >= 2 * 24 + 2 bits) on every backend, also where float32 division is not IEEE's (Triton's
    ``/`` on an NVIDIA GPU is ``div.full.f32``, off by up to 2 ulp)."""
    if a.dtype == dtypes.float32:
        with config.enable_x64(True):
            f64 = dtypes.float64
            q = lax.convert_element_type(a, f64) / lax.convert_element_type(b, f64)
            return lax.convert_element_type(q, dtypes.float32)
    return a / b


def _two_sum(a, b):
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _two_prod(a, b):
    dt = a.dtype
    factor = _c(2.0 ** ((dtypes.finfo(dt).nmant + 2) // 2) + 1, dt)  # Veltkamp's split

    def split(x):
        t = _kept(x * factor)
        hi = t - (t - x)
        return hi, x - hi

    p = _kept(a * b)
    ahi, alo = split(a)
    bhi, blo = split(b)
    return p, ((ahi * bhi - p) + ahi * blo + alo * bhi) + alo * blo


def fma(a, b, c):
    """``a * b + c`` rounded once, in the dtype of the array operand(s) (float32 or float64).

    float32: the product is exact in float64 and the float64 sum is exact too unless the operands'
    magnitudes are far apart, so one float64 multiply-add rounded to float32 is the fused result
    (checked on every input of the samplers; a compiler contracting it to a float64 FMA computes
    the same number). float64: Dekker's exact product and Knuth's exact sum, the two low parts
    added before the last rounding (off only when that sum lands exactly halfway between two
    float64 numbers, a chance of about 2**-50)."""
    dt = next(v.dtype for v in (a, b, c) if not isinstance(v, np.ndarray | np.generic))
    if dt == dtypes.float32:
        with config.enable_x64(True):  # (float32 operands converted inside: a float64 constant
            # would become float32 where a transform evaluates the Jaxpr again outside the block)
            f64 = dtypes.float64
            a, b, c = (lax.convert_element_type(jnp.asarray(v, dt), f64) for v in (a, b, c))
            return lax.convert_element_type(a * b + c, dt)
    a, b, c = (jnp.asarray(v, dt) for v in (a, b, c))
    shape = np.broadcast_shapes(a.shape, b.shape, c.shape)
    a, b, c = (jnp.broadcast_to(v, shape) for v in (a, b, c))
    ph, pl = _two_prod(a, b)
    th, tl = _two_sum(_kept(c), ph)
    return th + (tl + pl)


def _flush_denormal(x):
    dt = x.dtype
    return jnp.where(jnp.abs(x) < _c(dtypes.finfo(dt).tiny, dt), _c(0, dt), x)


_LOG32 = tuple(
    _f32(h)
    for h in (
        0x3D9021BB,
        0xBDEBD1B8,
        0x3DEF251A,  # chain 0: p0 m^2 + p1 m + p2
        0xBDFE5D4F,
        0x3E11E9BF,
        0xBE2AAE50,  # chain 1
        0x3E4CCEAC,
        0xBE7FFFFC,
        0x3EAAAAAA,  # chain 2
    )
)
_LN2_LO32, _LN2_HI32 = _f32(0xB95E8083), _f32(0x3F318000)
_SQRT_HALF32 = _f32(0x3F3504F3)


def flush_denormal(x):
    """``x`` with subnormal values replaced by zero: XLA's CPU code runs with the processor's
    flush-to-zero and denormals-are-zero modes on, so a product (or a libm result converted to
    float32) that would be subnormal is zero there."""
    return _flush_denormal(x)


def _log32(x):
    dt = dtypes.float32
    x = _flush_denormal(x)
    xc = jnp.maximum(x, _c(dtypes.finfo(dt).tiny, dt))
    xc = jnp.where(jnp.isfinite(xc), xc, _c(1, dt))
    m, e = jnp.frexp(xc)  # m in [0.5, 1)
    e = lax.convert_element_type(e, dt)
    lt = m < _c(_SQRT_HALF32, dt)
    e = e - jnp.where(lt, _c(1, dt), _c(0, dt))
    m = (m - _c(1, dt)) + jnp.where(lt, m, _c(0, dt))
    m2 = m * m
    m3 = m2 * m
    k = _LOG32
    y0 = fma(fma(m, _c(k[0], dt), _c(k[1], dt)), m, _c(k[2], dt))
    y1 = fma(fma(m, _c(k[3], dt), _c(k[4], dt)), m, _c(k[5], dt))
    y2 = fma(fma(m, _c(k[6], dt), _c(k[7], dt)), m, _c(k[8], dt))
    y = fma(fma(y0, m3, y1), m3, y2)
    y = fma(y, m3, e * _c(_LN2_LO32, dt))
    r = (m - m2 * _c(0.5, dt)) + y
    r = fma(e, _c(_LN2_HI32, dt), r)
    r = jnp.where(x < _c(0, dt), _c(np.nan, dt), r)
    r = jnp.where(x == _c(0, dt), _c(-np.inf, dt), r)
    r = jnp.where(x == _c(np.inf, dt), x, r)
    return jnp.where(jnp.isnan(x), x, r)


def log(x):
    """XLA's CPU ``log`` for float32 (glibc's, through ``functx.numpy.log``, for float64)."""
    if x.dtype == dtypes.float32:
        return _log32(x)
    return jnp.log(x)


_LOG1P_P = {
    np.dtype(np.float32): (0x417101AD, 0x42A6185B, 0x435DC32D, 0x439A8CA3, 0x43586D8A, 0x42707982),
    np.dtype(np.float64): (
        0x402E20359E903E37,
        0x4054C30B52213498,
        0x406BB86590FCFB56,
        0x407351945DC908A5,
        0x406B0DB13E48E066,
        0x404E0F304466448E,
    ),
}
_LOG1P_Q = {
    np.dtype(np.float32): (
        4.527e-05,
        0x3EFF40C5,
        0x40D284FA,
        0x41EF4B9C,
        0x4273CC76,
        0x426473AD,
        0x41A05101,
    ),
    np.dtype(np.float64): (
        0x3F07BC0962B395CA,
        0x3FDFE818A0FE1A83,
        0x401A509F46F4FA53,
        0x403DE9738B8CB9C9,
        0x404E798EB86C3351,
        0x404C8E7597479A10,
        0x40340A202D99830A,
    ),
}
_LOG1P_CUT = {np.dtype(np.float32): 0x3ED413CD, np.dtype(np.float64): 0x3FDA827999FCEF32}


def _from_bits(h, dt):
    if isinstance(h, float):
        return _c(h, dt)
    ut = np.uint32 if dt == np.float32 else np.uint64
    return np.array([h], ut).view(dt)[0]


def log1p(x):
    """XLA's CPU ``log1p`` (float32, float64): a rational approximation near zero, else
    ``log(1 + x)``."""
    dt = np.dtype(x.dtype)
    if dt not in _LOG1P_P:
        return jnp.log1p(x)
    if dt == np.float32:
        x = _flush_denormal(x)
    x = _kept(x)  # (a caller's product, x * -x in erf_inv, may not be fused into x + 1)
    big = log(x + _c(1, dt))
    cut = _from_bits(_LOG1P_CUT[dt], dt)
    small = jnp.abs(x) < cut
    xs = jnp.where(small, x, _c(0, dt))  # (keeps the emulated products finite)
    x2 = xs * xs
    p = _c(1, dt)
    for h in _LOG1P_P[dt]:
        p = fma(p, xs, _from_bits(h, dt))
    q = _from_bits(_LOG1P_Q[dt][0], dt)
    for h in _LOG1P_Q[dt][1:]:
        q = fma(q, xs, _from_bits(h, dt))
    s = fma(x2, _c(-0.5, dt), (xs * x2) * _div(q, p))
    return jnp.where(small, xs + s, big)


# Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011): the single- and
# double-precision polynomials XLA evaluates for erf_inv, in w = -log(1 - x^2).
_ERFINV32 = (
    (
        2.81022636e-08,
        3.43273939e-07,
        -3.5233877e-06,
        -4.39150654e-06,
        0.00021858087,
        -0.00125372503,
        -0.00417768164,
        0.246640727,
        1.50140941,
    ),
    (
        -0.000200214257,
        0.000100950558,
        0.00134934322,
        -0.00367342844,
        0.00573950773,
        -0.0076224613,
        0.00943887047,
        1.00167406,
        2.83297682,
    ),
)
_ERFINV64_LT_6_25 = (
    -3.6444120640178196996e-21,
    -1.685059138182016589e-19,
    1.2858480715256400167e-18,
    1.115787767802518096e-17,
    -1.333171662854620906e-16,
    2.0972767875968561637e-17,
    6.6376381343583238325e-15,
    -4.0545662729752068639e-14,
    -8.1519341976054721522e-14,
    2.6335093153082322977e-12,
    -1.2975133253453532498e-11,
    -5.4154120542946279317e-11,
    1.051212273321532285e-09,
    -4.1126339803469836976e-09,
    -2.9070369957882005086e-08,
    4.2347877827932403518e-07,
    -1.3654692000834678645e-06,
    -1.3882523362786468719e-05,
    0.0001867342080340571352,
    -0.00074070253416626697512,
    -0.0060336708714301490533,
    0.24015818242558961693,
    1.6536545626831027356,
)
_ERFINV64_LT_16 = (
    2.2137376921775787049e-09,
    9.0756561938885390979e-08,
    -2.7517406297064545428e-07,
    1.8239629214389227755e-08,
    1.5027403968909827627e-06,
    -4.013867526981545969e-06,
    2.9234449089955446044e-06,
    1.2475304481671778723e-05,
    -4.7318229009055733981e-05,
    6.8284851459573175448e-05,
    2.4031110387097893999e-05,
    -0.0003550375203628474796,
    0.00095328937973738049703,
    -0.0016882755560235047313,
    0.0024914420961078508066,
    -0.0037512085075692412107,
    0.005370914553590063617,
    1.0052589676941592334,
    3.0838856104922207635,
)
_ERFINV64_GE_16 = (
    -2.7109920616438573243e-11,
    -2.5556418169965252055e-10,
    1.5076572693500548083e-09,
    -3.7894654401267369937e-09,
    7.6157012080783393804e-09,
    -1.4960026627149240478e-08,
    2.9147953450901080826e-08,
    -6.7711997758452339498e-08,
    2.2900482228026654717e-07,
    -9.9298272942317002539e-07,
    4.5260625972231537039e-06,
    -1.9681778105531670567e-05,
    7.5995277030017761139e-05,
    -0.00021503011930044477347,
    -0.00013871931833623122026,
    1.0103004648645343977,
    4.8499064014085844221,
)


def erf_inv(x):
    """XLA's ``ErfInv`` (float32, float64; float16/bfloat16 in float32), its Horner steps fused."""
    dt = x.dtype
    if dt in (dtypes.float16, dtypes.bfloat16):
        return erf_inv(x.astype(np.float32)).astype(dt)
    w = jnp.negative(log1p(x * jnp.negative(x)))
    if dt == dtypes.float32:
        small = w < _c(5.0, dt)
        w = jnp.where(small, w - _c(2.5, dt), jnp.sqrt(w) - _c(3.0, dt))
        lo, hi = _ERFINV32
        p = jnp.where(small, _c(lo[0], dt), _c(hi[0], dt))
        for a, b in zip(lo[1:], hi[1:]):
            p = fma(p, w, jnp.where(small, _c(a, dt), _c(b, dt)))
    else:
        lt625_c, lt16_c, ge16_c = _ERFINV64_LT_6_25, _ERFINV64_LT_16, _ERFINV64_GE_16
        lt625, lt16 = w < _c(6.25, dt), w < _c(16.0, dt)
        w = jnp.where(
            lt625, w - _c(3.125, dt), jnp.sqrt(w) - jnp.where(lt16, _c(3.25, dt), _c(5.0, dt))
        )

        def coef(i):
            v = _c(lt625_c[i], dt)
            if i < 19:
                v = jnp.where(lt625, v, _c(lt16_c[i], dt))
            if i < 17:
                v = jnp.where(lt16, v, _c(ge16_c[i], dt))
            return v

        p = coef(0)
        for i in range(1, 17):
            p = fma(p, w, coef(i))
        for i in range(17, 19):
            p = jnp.where(lt16, fma(p, w, coef(i)), p)
        for i in range(19, 23):
            p = jnp.where(lt625, fma(p, w, coef(i)), p)
    return jnp.where(jnp.abs(x) == _c(1.0, dt), x * _c(np.inf, dt), p * x)


def _pow2(n, dt, lo):
    """``2**n`` for integral float ``n`` in ``[lo, -lo]`` (``2**lo`` giving zero when it is below
    the normal range, as the exponent-field construction does): a table lookup, exact on every
    backend."""
    ks = np.arange(lo, -lo + 1)
    table = np.ldexp(np.ones(ks.shape, dt), ks).astype(dt)
    table[ks < dtypes.finfo(dt).minexp] = 0
    idx = lax.convert_element_type(jnp.where(jnp.isnan(n), _c(0, n.dtype), n), np.int32)
    return jnp.take(jnp.asarray(table), idx - np.int32(lo), mode="clip")


_EXP32_P = (0x39506967, 0x3AB743CE, 0x3C088908, 0x3D2AA9C1, 0x3E2AAAAA)


def _exp32(x):
    dt = dtypes.float32
    x = jnp.where(x < _c(-87.8, dt), _c(-87.8, dt), x)
    x = jnp.where(x > _c(88.8, dt), _c(88.8, dt), x)
    n = jnp.floor(fma(x, _f32(0x3FB8AA3B), _c(0.5, dt)))
    n = jnp.clip(n, _c(-127, dt), _c(127, dt))
    nn = jnp.negative(n)
    r = fma(nn, _f32(0x3F318000), x)
    r = fma(nn, _f32(0xB95E8083), r)
    y = jnp.full(x.shape, _f32(_EXP32_P[0]), dt)
    for h in _EXP32_P[1:]:
        y = fma(y, r, _f32(h))
    y = fma(y, r, _c(0.5, dt))
    y = fma(y, r * r, r) + _c(1, dt)
    return _flush_denormal(y * _pow2(n, dt, -127))


_EXP64 = {
    k: _from_bits(h, np.float64)
    for k, h in dict(
        lo=0xC086232BDD7ABCD2,
        hi=0x40862E42FEFA39EF,
        log2e=0x3FF71547652B82FE,
        c1=0x3FE62E4000000000,
        c2=0x3EB7F7D1CF79ABCA,
        p0=0x3F2089CDD5E44BE8,
        p1=0x3F9F06D10CCA2C7E,
        q0=0x3EC92EB6BC365FA0,
        q1=0x3F64AE39B508B6C0,
        q2=0x3FCD17099887E074,
    ).items()
}


def _exp64(x):
    dt, k = dtypes.float64, _EXP64
    xc = jnp.where(x > _c(k["hi"], dt), _c(k["hi"], dt), x)
    xc = jnp.where(xc < _c(k["lo"], dt), _c(k["lo"], dt), xc)
    n = jnp.floor(fma(xc, k["log2e"], _c(0.5, dt)))
    g = xc - n * _c(k["c1"], dt)  # (n * c1 is exact: c1 has 19 significant bits)
    g = fma(n, -k["c2"], g)
    g2 = g * g
    p = _kept(fma(fma(g2, k["p0"], k["p1"]), g2, _c(1, dt)) * g)  # (not fused into q - p)
    q = fma(fma(fma(g2, k["q0"], k["q1"]), g2, k["q2"]), g2, _c(2, dt))
    y = (p / (q - p)) * _c(2, dt) + _c(1, dt)
    n = jnp.clip(n, _c(-2099, dt), _c(2099, dt))
    b = jnp.floor(n * _c(0.25, dt))
    f = _pow2(b, dt, -525)
    y = y * f * f * f * _pow2(n - b * _c(3, dt), dt, -525)
    y = jnp.where(x < _c(k["lo"], dt), _c(0, dt), y)
    return jnp.where(x > _c(k["hi"], dt), _c(np.inf, dt), y)


def exp(x):
    """XLA's CPU ``exp`` (float32, float64; other dtypes through ``functx.numpy.exp``)."""
    if x.dtype == dtypes.float32:
        return _exp32(x)
    if x.dtype == dtypes.float64:
        return _exp64(x)
    return jnp.exp(x)


_ERF32_P = (0x39702D51, 0x3B5F5DA2, 0x3D50B6EB, 0x3E3DA740, 0x3F906EBA)
_ERF32_Q = (0xB3FD3906, 0x37C588DF, 0x3A856D28, 0x3C6687D4, 0x3DE34C21, 0x3EFEB44A)


def erf(x):
    """XLA's CPU ``erf`` for float32 (``functx.lax.erf`` for other dtypes)."""
    dt = x.dtype
    if dt != dtypes.float32:
        return lax.erf(x)
    x2 = x * x
    p = jnp.full(x.shape, _f32(_ERF32_P[0]), dt)
    for h in _ERF32_P[1:]:
        p = fma(x2, p, _f32(h))
    q = jnp.full(x.shape, _f32(_ERF32_Q[0]), dt)
    for h in _ERF32_Q[1:]:
        q = fma(x2, q, _f32(h))
    q = fma(x2, q, _c(1, dt))
    r = _div(x * p, q)
    one = jnp.where(jnp.signbit(x), _c(-1, dt), _c(1, dt))
    return jnp.where(jnp.abs(x) >= _f32(0x407547CB), one, r)


# Lanczos's approximation with g = 7 (the float32 coefficients XLA's Lgamma uses; the leading
# coefficient, 0.99999999999980993, is 1 in float32)
_LANCZOS32 = (
    676.520386,
    -1259.13916,
    771.323425,
    -176.615036,
    12.5073433,
    -0.138571098,
    9.98436917e-06,
    1.50563267e-07,
)


def lgamma(x):
    """XLA's CPU ``lgamma`` for float32 at ``x >= 0.5`` (below, ``functx.lax.lgamma``; other
    dtypes: ``functx.lax.lgamma``): with ``z = x - 1``, ``log(sqrt(2 pi)) + (z + 1/2 - t /
    log t) log t + log(A(z))``, ``t = z + 7.5``, ``log t = log1p(z * (2/15)) + log(7.5)`` and
    ``A(z) = 1 + sum_i c_i / (z + i)`` summed in order, the product with ``log t`` fused into
    the addition of ``log(sqrt(2 pi))``."""
    dt = x.dtype
    if dt != dtypes.float32:
        return lax.lgamma(x)
    big = x >= _c(0.5, dt)
    z = jnp.where(big, x, _c(1, dt)) - _c(1, dt)
    a = _c(1, dt)
    for i, coef in enumerate(_LANCZOS32):
        a = a + _div(jnp.full(z.shape, coef, dt), z + _c(i + 1, dt))
    log_t = log1p(z * _c(0.13333334, dt)) + _c(2.01490307, dt)
    y = fma((z + _c(0.5, dt)) - _div(z + _c(7.5, dt), log_t), log_t, _c(0.918938518, dt))
    y = y + log(a)
    y = jnp.where(big, y, lax.lgamma(x))
    return jnp.where(jnp.isinf(x), _c(np.inf, dt), y)


# XLA's CPU reduction over the last axis of an operand of 4096 elements or more keeps interleaved
# partial sums (element i goes to accumulator i mod K, each summed in order) and then adds the
# accumulators pairwise by halving (0 with K/2, 1 with K/2 + 1, ...): K = 16 for float32, 8 for
# float64; measured against jax.jit for rows of up to 64 (float32) and 33 (float64) elements,
# beyond which its order changes. Smaller operands are summed in order along each row.
_ROW_SUM = {np.dtype(np.float32): (16, 64), np.dtype(np.float64): (8, 33)}


def row_sum(x):
    """``x.sum(-1)`` added in the order of XLA's CPU reduction for short rows (float32 rows of
    at most 64 elements, float64 of at most 33; otherwise ``functx.numpy.sum``'s order)."""
    k, most = _ROW_SUM.get(np.dtype(x.dtype), (0, -1))
    d = x.shape[-1]
    if d == 0 or d > most:
        return jnp.sum(x, axis=-1)
    if x.size < 4096:
        k = 1
    accs = [None] * k
    for i in range(d):
        v = x[..., i]
        accs[i % k] = v if accs[i % k] is None else accs[i % k] + v
    while len(accs) > 1:
        h = len(accs) // 2
        accs = [b if a is None else a if b is None else a + b for a, b in zip(accs[:h], accs[h:])]
    return accs[0]
