"""The special functions of ``functx.lax`` (erf_inv, digamma, the incomplete gamma family,
polygamma, zeta, the scaled Bessel functions): their eager NumPy implementations.

Each is a scalar algorithm in float64 (series, continued fractions and asymptotic expansions,
after Cephes and the structure XLA uses) mapped over the operands; float32 and the half types
round the float64 result once. The C++ backend runs the same algorithms
(``functx/lowering/cpp/prelude.py``, ``SPECIAL``), so eager and compiled results agree to a few
ulp. Domain conventions follow JAX's: NaN outside the domain, the limits at the edges.
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np

_EPS = 2.220446049250313e-16  # float64's machine epsilon
_NAN = math.nan
_INF = math.inf
_LOG_MAX = math.log(1.7976931348623157e308)
_BIG = 4503599627370496.0  # 2**52: the continued fraction rescales past it
_ITERATIONS = 2000


def _bernoulli(n):
    """The Bernoulli numbers B_0 .. B_n as Fractions (Akiyama-Tanigawa)."""
    out, a = [], [Fraction(0)] * (n + 1)
    for m in range(n + 1):
        a[m] = Fraction(1, m + 1)
        for j in range(m, 0, -1):
            a[j - 1] = j * (a[j - 1] - a[j])
        out.append(a[0])
    return out


# (2k)! / B_2k for k = 1..12: the Euler-Maclaurin tail of the Hurwitz zeta function.
_B = _bernoulli(24)
_ZETA_A = [float(Fraction(math.factorial(2 * k)) / _B[2 * k]) for k in range(1, 13)]


def digamma(x: float) -> float:
    """psi(x) = d/dx log Gamma(x); NaN at the poles 0, -1, -2, ..."""
    if math.isnan(x) or x == -_INF:
        return _NAN
    if x == _INF:
        return _INF
    if x <= 0 and x == math.floor(x):
        return _NAN
    if x < 0:  # reflection: psi(1 - x) - pi / tan(pi x), tan taken on the fractional part
        return digamma(1 - x) - math.pi / math.tan(math.pi * (x - round(x)))
    r = 0.0
    while x < 10:
        r -= 1 / x
        x += 1
    z = 1 / (x * x)
    tail = z * (
        1 / 12
        - z * (1 / 120 - z * (1 / 252 - z * (1 / 240 - z * (1 / 132 - z * (691 / 32760 - z / 12)))))
    )
    return r + math.log(x) - 0.5 / x - tail


def _pow(a, b):
    with np.errstate(all="ignore"):
        return float(np.power(np.float64(a), b))


def zeta(x: float, q: float) -> float:
    """The Hurwitz zeta function sum_k (k + q)**-x (Euler-Maclaurin summation, as Cephes)."""
    if x == 1:
        return _INF
    if math.isnan(x) or math.isnan(q) or x == _INF or q == _INF:
        return _NAN
    if q <= 0 and (q == -_INF or q == math.floor(q)):  # a pole (JAX's conventions)
        return _INF if x >= 0 and x == math.floor(x) and x % 2 == 0 else _NAN
    if x < 1 or (q < 0 and x != math.floor(x)):
        return _NAN
    if q > 1e8:
        return (1 / (x - 1) + 1 / (2 * q)) * _pow(q, 1 - x)
    s = _pow(q, -x)
    a, i, b = q, 0, 0.0
    while i < 9 or a <= 9:
        i += 1
        a += 1
        b = _pow(a, -x)
        s += b
        if abs(b / s) < _EPS:
            return s
    w = a
    s += b * w / (x - 1) - 0.5 * b
    a, k = 1.0, 0.0
    for i in range(12):
        a *= x + k
        b /= w
        t = a * b / _ZETA_A[i]
        s += t
        if abs(t / s) < _EPS:
            break
        k += 1
        a *= x + k
        b /= w
        k += 1
    return s


def polygamma(m: float, x: float) -> float:
    """psi^(m)(x) for a non-negative integer m (NaN for other m)."""
    if math.isnan(m) or math.isnan(x) or not 0 <= m < _INF or m != math.floor(m):
        return _NAN
    if m == 0:
        return digamma(x)
    sign = 1.0 if int(m) % 2 else -1.0
    return sign * math.exp(math.lgamma(m + 1)) * zeta(m + 1, x)


# --- the incomplete gamma functions ----------------------------------------------------------
def _series(a, x):
    """sum_n x**n / ((a+1)...(a+n)) and its derivative in a: P = sum * exp(ax) / a."""
    r, c, ans, dc, dans = a, 1.0, 1.0, 0.0, 0.0
    for _ in range(_ITERATIONS):
        r += 1
        dc = dc * x / r - c * x / (r * r)
        c *= x / r
        ans += c
        dans += dc
        if c <= ans * _EPS and abs(dc) <= abs(dans) * _EPS:
            break
    return ans, dans


def _continued_fraction(a, x):
    """Q's continued fraction and its derivative in a: Q = ans * exp(ax)."""
    y, z, c = 1 - a, x + 2 - a, 0.0
    pkm2, qkm2, pkm1, qkm1 = 1.0, x, x + 1, z * x
    dpkm2, dqkm2, dpkm1, dqkm1 = 0.0, 0.0, 0.0, -x
    ans = pkm1 / qkm1
    dans = (dpkm1 - ans * dqkm1) / qkm1
    for _ in range(_ITERATIONS):
        c += 1
        y += 1
        z += 2
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        # d/da: dy = dz = -1, so d(yc) = -c
        dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c
        dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c
        done = False
        if qk != 0:
            r = pk / qk
            dr = (dpk - r * dqk) / qk
            t = abs((ans - r) / r) if r else 0.0
            dt = abs((dans - dr) / dr) if dr else 0.0
            ans, dans = r, dr
            done = t <= _EPS and dt <= _EPS
        pkm2, pkm1, qkm2, qkm1 = pkm1, pk, qkm1, qk
        dpkm2, dpkm1, dqkm2, dqkm1 = dpkm1, dpk, dqkm1, dqk
        if abs(pk) > _BIG:
            s = 1 / _BIG
            pkm2, pkm1, qkm2, qkm1 = pkm2 * s, pkm1 * s, qkm2 * s, qkm1 * s
            dpkm2, dpkm1, dqkm2, dqkm1 = dpkm2 * s, dpkm1 * s, dqkm2 * s, dqkm1 * s
        if done:
            break
    return ans, dans


def _igamma_kind(a, x, kind):
    """kind: 0 igamma (P), 1 igammac (Q), 2 igamma_grad_a (dP/da), 3 random_gamma_grad
    (-(dP/da) / (dP/dx): the derivative of a Gamma(a) sample x in a). The domain rules and the
    choice between the series and the continued fraction are JAX's."""
    if math.isnan(a) or math.isnan(x) or x < 0 or a < 0:
        return _NAN
    if kind >= 2:
        if a == 0 or x == _INF:
            return _NAN
        if x == 0:
            return 0.0
        use_cf = x > 1 and x > a
    elif x == 0:
        return _NAN if a == 0 else float(kind)
    elif x == _INF:
        return 1.0 - kind
    elif kind == 0:
        use_cf = x >= 1 and x > a
    else:
        if a == 0:
            return 0.0
        use_cf = not (x < 1 or x < a)
    lx = math.log(x)
    with np.errstate(all="ignore"):
        ax = float(np.float64(a) * lx - x - (math.lgamma(a) if a else _INF))
    if kind == 3:  # without exp(ax): it cancels in the ratio
        if use_cf:
            ans, dans = _continued_fraction(a, x)
            return x * (dans + ans * (lx - digamma(a)))
        ans, dans = _series(a, x)
        return -x / a * (dans + ans * (lx - digamma(a + 1)))
    e = 0.0 if ax < -_LOG_MAX else math.exp(ax) if ax == ax else _NAN
    if use_cf:
        ans, dans = _continued_fraction(a, x)
        if kind == 2:
            return -e * (dans + ans * (lx - digamma(a)))
        q = ans * e
        return 1 - q if kind == 0 else q
    if a == 0:
        return _NAN
    ans, dans = _series(a, x)
    if kind == 2:
        return e / a * (dans + ans * (lx - digamma(a + 1)))
    p = ans * e / a
    return p if kind == 0 else 1 - p


def igamma(a, x):
    return _igamma_kind(a, x, 0)


def igammac(a, x):
    return _igamma_kind(a, x, 1)


def igamma_grad_a(a, x):
    return _igamma_kind(a, x, 2)


def random_gamma_grad(a, x):
    return _igamma_kind(a, x, 3)


# --- Bessel functions, exponentially scaled --------------------------------------------------
def _bessel_ie(nu, x):
    ax = abs(x)
    if math.isnan(x):
        return _NAN
    if ax == _INF:
        return 0.0
    if ax <= 20:  # the power series (positive terms), times exp(-|x|)
        q, t = x * x / 4, 1.0
        s = t
        k = 0
        while True:
            k += 1
            t *= q / (k * (k + nu))
            s += t
            if t <= s * _EPS * 0.5:
                break
        out = s * math.exp(-ax) * (ax / 2 if nu else 1.0)
    else:  # the asymptotic expansion, to its smallest term
        mu = 4.0 * nu * nu
        s, t = 1.0, 1.0
        for k in range(1, 60):
            nt = t * ((2 * k - 1) ** 2 - mu) / (8 * k * ax)
            if abs(nt) >= abs(t):
                break
            t = nt
            s += t
            if abs(t) <= abs(s) * _EPS * 0.5:
                break
        out = s / math.sqrt(2 * math.pi * ax)
    return -out if nu and x < 0 else out


def bessel_i0e(x):
    return _bessel_ie(0, x)


def bessel_i1e(x):
    return _bessel_ie(1, x)


# --- erf_inv ---------------------------------------------------------------------------------
def erf_inv(x: float) -> float:
    """The inverse of erf on [-1, 1]: Giles' single-precision approximation, then Halley steps
    on erf (|x| < 0.5) or erfc (the tails, where 1 - |x| is exact)."""
    if math.isnan(x) or abs(x) > 1:
        return _NAN
    if abs(x) == 1:
        return math.copysign(_INF, x)
    if x == 0:
        return x
    w = -math.log((1 - x) * (1 + x))
    if w < 5:
        w -= 2.5
        p = 2.81022636e-08
        for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
                  -0.00125372503, -0.00417768164, 0.246640727, 1.50140941):  # fmt: skip
            p = c + p * w
    else:
        w = math.sqrt(w) - 3
        p = -0.000200214257
        for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                  -0.0076224613, 0.00943887047, 1.00167406, 2.83297682):  # fmt: skip
            p = c + p * w
    ax, y = abs(x), abs(p * x)
    k = 2 / math.sqrt(math.pi)
    for _ in range(50):
        if ax < 0.5:
            f = math.erf(y) - ax
        else:
            f = (1 - ax) - math.erfc(y)
        d = k * math.exp(-y * y)
        if d == 0:
            break
        step = f / d
        step /= 1 + y * step
        y -= step
        if abs(step) <= y * _EPS:
            break
    return math.copysign(y, x)


# --- mapped over arrays ------------------------------------------------------------------------
def vectorize(fn):
    """``fn`` (a float64 scalar function) over arrays: computed in float64, rounded once to the
    first operand's dtype."""
    ufunc = np.frompyfunc(fn, fn.__code__.co_argcount, 1)

    def impl(*args):
        dt = np.asarray(args[0]).dtype
        out = ufunc(*[np.asarray(a, np.float64) for a in args])
        return np.asarray(out, np.float64).astype(dt)

    impl.__name__ = fn.__name__
    return impl


# --- reduce_precision --------------------------------------------------------------------------
def float_layout(dtype):
    """(bits, exponent bits, mantissa bits, the unsigned integer view) of a float dtype."""
    dt = np.dtype(dtype)
    info = ml_dtypes.finfo(dt)
    ut = {2: np.uint16, 4: np.uint32, 8: np.uint64}[dt.itemsize]
    return 8 * dt.itemsize, int(info.nexp), int(info.nmant), np.dtype(ut)


def reduce_precision(x, *, exponent_bits, mantissa_bits):
    """``x`` rounded to ``mantissa_bits`` (to nearest even) and to the exponent range of
    ``exponent_bits``, on its bit pattern as XLA does: overflow to a signed infinity, underflow
    (subnormals included) to a signed zero, NaN kept."""
    x = np.asarray(x)
    nbits, e_src, m_src, ut = float_layout(x.dtype)
    one = ut.type(1)
    bits = x.view(ut).copy()
    with np.errstate(over="ignore"):
        if mantissa_bits < m_src:
            shift = ut.type(m_src - mantissa_bits)
            last = one << shift
            bias = (last >> one) - one
            bits = (bits + ((bits & last) >> shift) + bias) & ~(last - one)
        if exponent_bits < e_src:
            sign = one << ut.type(nbits - 1)
            exp_mask = ut.type((1 << e_src) - 1) << ut.type(m_src)
            ebias = (1 << (e_src - 1)) - 1
            rbias = (1 << (exponent_bits - 1)) - 1
            xe = bits & exp_mask
            over = xe > (ut.type(ebias + rbias) << ut.type(m_src))
            under = xe <= (ut.type(ebias - rbias) << ut.type(m_src))
            zero = bits & sign
            bits = np.where(over, zero | exp_mask, np.where(under, zero, bits)).astype(ut)
    out = bits.view(x.dtype)
    # NaN stays NaN (XLA on CPU keeps its bits; bfloat16, computed through float32, comes back
    # as the canonical quiet NaN with its sign unless the float32 operation is the identity)
    nan = np.isnan(x.astype(np.float32) if x.dtype == ml_dtypes.bfloat16 else x)
    if x.dtype == ml_dtypes.bfloat16 and (exponent_bits < 8 or mantissa_bits < 23):
        keep = ((x.view(ut) & ut.type(0x8000)) | ut.type(0x7FC0)).view(x.dtype)
    else:
        keep = x
    return np.asarray(np.where(nan, keep, out), x.dtype)
