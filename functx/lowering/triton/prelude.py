"""The prelude of every generated Triton module: imports and small ``@triton.jit`` helpers (JAX's
semantics for max/min with NaN, argmax/argmin as value-index pairs, the combines of reductions)."""

from __future__ import annotations

# --- the prelude of every generated module -------------------------------------------------------
PRELUDE = '''\
import os

import torch
import triton
import triton.language as tl

if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
    from functx.lowering.triton.interpreter import interpreter_libdevice as libdevice
else:
    from triton.language.extra import libdevice

from functx.lowering.triton.runtime import matmul as _fx_matmul
from functx.lowering.triton.runtime import scratch as _fx_scratch
from functx.lowering.triton.runtime import site as _fx_site


@triton.jit
def _fx_fmax(a, b):
    # JAX's max: NaN wins, max(-0, +0) = +0
    r = tl.where(a > b, a, b)
    # (nested rather than `(a == b) & (a == 0)`: Triton's interpreter mislabels the comparison
    # of a 0-d tensor with a constant as float32 and then refuses the `&`)
    # (two zeros: the sign from 1 / a, an infinity of a's sign; sums of signed zeros such as
    # -((-a) + (-b)) gave +0 for min(-0, +0) on an H100)
    r = tl.where(a == b, tl.where(a == 0, tl.where(1.0 / a > 0, a, b), r), r)
    return tl.where(a != a, a, r)


@triton.jit
def _fx_fmin(a, b):
    # JAX's min: NaN wins, min(-0, +0) = -0
    r = tl.where(a < b, a, b)
    r = tl.where(a == b, tl.where(a == 0, tl.where(1.0 / a < 0, a, b), r), r)
    return tl.where(a != a, a, r)


# (reductions use tl.reduce with these combines rather than tl.sum & co., which are functions
# of Triton's standard library that its interpreter cannot run unless TRITON_INTERPRET was set
# before triton was first imported; on a GPU both compile to the same code)
@triton.jit
def _fx_add(a, b):
    return a + b


@triton.jit
def _fx_mul(a, b):
    return a * b


@triton.jit
def _fx_imax(a, b):
    return tl.maximum(a, b)


@triton.jit
def _fx_imin(a, b):
    return tl.minimum(a, b)


@triton.jit
def _fx_and(a, b):
    return a & b


@triton.jit
def _fx_or(a, b):
    return a | b


@triton.jit
def _fx_argmax(va, ia, vb, ib):
    # first occurrence of the maximum; NaN counts as the maximum
    an = va != va
    bn = vb != vb
    take_a = (va > vb) | (an & (bn == 0)) | (((va == vb) | (an & bn)) & (ia < ib))
    return tl.where(take_a, va, vb), tl.where(take_a, ia, ib)


@triton.jit
def _fx_argmin(va, ia, vb, ib):
    an = va != va
    bn = vb != vb
    take_a = (va < vb) | (an & (bn == 0)) | (((va == vb) | (an & bn)) & (ia < ib))
    return tl.where(take_a, va, vb), tl.where(take_a, ia, ib)


@triton.jit
def _fx_ipow_s(a, b):
    r = a * 0 + 1
    base = a
    e = tl.where(b < 0, 0, b)
    for _ in tl.static_range(64):
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = e >> 1
    neg = tl.where(a == 1, 1, tl.where(a == -1, tl.where((b % 2) == 0, 1, -1), 0))
    return tl.where(b < 0, neg, r)


@triton.jit
def _fx_ipow_u(a, b):
    r = a * 0 + 1
    base = a
    e = b
    for _ in tl.static_range(64):
        r = tl.where((e & 1) != 0, r * base, r)
        base = base * base
        e = e >> 1
    return r


# The special functions of functx.lax (digamma, the incomplete gamma family, polygamma, zeta, the
# scaled Bessel functions): the algorithms of functx/primitives/special.py (and of the C++
# prelude's fx_sp namespace), in float64 whatever the operands' type (a float32 result is rounded
# once). Per-element loops run as one loop over the block while any lane is still active
# (``_fx_any``); a finished lane keeps its values.
@triton.jit
def _fx_any(c):
    return tl.reduce(tl.where(c, 1, 0), None, _fx_imax) > 0


@triton.jit
def _fx_c64(v: tl.constexpr):
    # a float64 constant (Triton types a bare Python float as float32)
    return tl.full([], v, tl.float64)


@triton.jit
def _fx_isint(x):
    return x == tl.floor(x)


@triton.jit
def _fx_digamma(x):
    bad = (x != x) | (x == -float('inf')) | ((x <= 0) & _fx_isint(x))
    neg = x < 0
    pi = tl.full([], 3.141592653589793, tl.float64)
    xs = tl.where(bad | (x == float('inf')), 1.0, x)
    r = tl.where(neg, -pi / libdevice.tan(pi * (xs - libdevice.rint(xs))), 0.0)
    xs = tl.where(neg, 1.0 - xs, xs)
    for _ in tl.static_range(10):  # (xs > 0 here: ten steps reach 10)
        low = xs < 10.0
        r = tl.where(low, r - 1.0 / xs, r)
        xs = tl.where(low, xs + 1.0, xs)
    z = 1.0 / (xs * xs)
    t = _fx_c64(0.021092796092796094) - z / 12.0
    t = _fx_c64(0.007575757575757576) - z * t
    t = _fx_c64(0.004166666666666667) - z * t
    t = _fx_c64(0.003968253968253968) - z * t
    t = _fx_c64(0.008333333333333333) - z * t
    t = z * (_fx_c64(0.08333333333333333) - z * t)
    out = r + libdevice.log(xs) - 0.5 / xs - t
    out = tl.where(x == float('inf'), float('inf'), out)
    return tl.where(bad, float('nan'), out)


@triton.jit
def _fx_zeta_a(i: tl.constexpr):
    # (2i+2)! / B_{2i+2}, i = 0..11: the Euler-Maclaurin coefficients
    if i == 0:
        a = 12.0
    elif i == 1:
        a = -720.0
    elif i == 2:
        a = 30240.0
    elif i == 3:
        a = -1209600.0
    elif i == 4:
        a = 47900160.0
    elif i == 5:
        a = -1892437580.3183791606
    elif i == 6:
        a = 74724249600.0
    elif i == 7:
        a = -2950130727918.164224
    elif i == 8:
        a = 116467828143500.67249
    elif i == 9:
        a = -4597978722407472.6105
    elif i == 10:
        a = 181521054019435467.73
    else:
        a = -7166165256175667011.3
    return tl.full([], a, tl.float64)


@triton.jit
def _fx_zeta(x, q):
    eps = 2.220446049250313e-16
    inf = float('inf')
    pole = (q <= 0) & ((q == -inf) | _fx_isint(q))
    even = (x >= 0) & _fx_isint(x) & (libdevice.fmod(x, tl.full(x.shape, 2.0, x.dtype)) == 0)
    special = (x == 1) | (x != x) | (q != q) | (x == inf) | (q == inf) | pole
    special = special | (x < 1) | ((q < 0) & (_fx_isint(x) == 0))
    sv = tl.where(pole, tl.where(even, inf, float('nan')), float('nan'))
    sv = tl.where((x != x) | (q != q) | (x == inf) | (q == inf), float('nan'), sv)
    sv = tl.where(x == 1, inf, sv)
    huge = (special == 0) & (q > 1e8)
    xs = tl.where(special, 2.0, x)
    qs = tl.where(special | huge, 1.0, q)
    hv = (1.0 / (xs - 1.0) + 1.0 / (2.0 * q)) * libdevice.pow(tl.where(huge, q, 1.0), 1.0 - xs)
    s = libdevice.pow(qs, -xs)
    a = qs
    b = s * 0.0
    i = s * 0.0
    active = (special | huge) == 0
    done = active == 0
    while _fx_any(active):
        i = tl.where(active, i + 1.0, i)
        a = tl.where(active, a + 1.0, a)
        b = tl.where(active, libdevice.pow(a, -xs), b)
        s = tl.where(active, s + b, s)
        hit = active & (tl.abs(b / s) < eps)
        done = done | hit
        active = active & (hit == 0) & ((i < 9) | (a <= 9))
    w = a
    s = tl.where(done, s, s + b * w / (xs - 1.0) - 0.5 * b)
    a = s * 0.0 + 1.0
    k = s * 0.0
    for j in tl.static_range(12):
        go = done == 0
        a = tl.where(go, a * (xs + k), a)
        b = tl.where(go, b / w, b)
        t = a * b / _fx_zeta_a(j)
        s = tl.where(go, s + t, s)
        done = done | (go & (tl.abs(t / s) < eps))
        go = done == 0
        k = tl.where(go, k + 1.0, k)
        a = tl.where(go, a * (xs + k), a)
        b = tl.where(go, b / w, b)
        k = tl.where(go, k + 1.0, k)
    return tl.where(special, sv, tl.where(huge, hv, s))


@triton.jit
def _fx_polygamma(m, x):
    bad = (m != m) | (x != x) | (m < 0) | (m == float('inf')) | (_fx_isint(m) == 0)
    ms = tl.where(bad, 1.0, m)
    sign = tl.where(libdevice.fmod(ms, tl.full(ms.shape, 2.0, ms.dtype)) == 1, 1.0, -1.0)
    z = sign * libdevice.exp(libdevice.lgamma(ms + 1.0)) * _fx_zeta(ms + 1.0, x)
    out = tl.where(ms == 0, _fx_digamma(x), z)
    return tl.where(bad, float('nan'), out)


@triton.jit
def _fx_igamma_series(a, x, active):
    eps = 2.220446049250313e-16
    r = a
    c = a * 0.0 + 1.0
    ans = c
    dc = a * 0.0
    dans = dc
    n = 0
    while _fx_any(active) & (n < 2000):
        r = r + 1.0  # (finished lanes run on: their ans/dans no longer change)
        dc = dc * x / r - c * x / (r * r)
        c = c * (x / r)
        ans = tl.where(active, ans + c, ans)
        dans = tl.where(active, dans + dc, dans)
        active = active & ((c > ans * eps) | (tl.abs(dc) > tl.abs(dans) * eps))
        n += 1
    return ans, dans


@triton.jit
def _fx_igamma_cfrac(a, x, active):
    eps = 2.220446049250313e-16
    big = 4503599627370496.0
    y = 1.0 - a
    z = x + 2.0 - a
    c = a * 0.0
    pkm2 = c + 1.0
    qkm2 = x
    pkm1 = x + 1.0
    qkm1 = z * x
    dpkm2 = c
    dqkm2 = c
    dpkm1 = c
    dqkm1 = -x
    ans = pkm1 / qkm1
    dans = (dpkm1 - ans * dqkm1) / qkm1
    n = 0
    while _fx_any(active) & (n < 2000):
        c = c + 1.0
        y = y + 1.0
        z = z + 2.0
        yc = y * c
        pk = pkm1 * z - pkm2 * yc
        qk = qkm1 * z - qkm2 * yc
        dpk = dpkm1 * z - pkm1 - dpkm2 * yc + pkm2 * c
        dqk = dqkm1 * z - qkm1 - dqkm2 * yc + qkm2 * c
        upd = active & (qk != 0)
        qs = tl.where(qk != 0, qk, 1.0)
        r = pk / qs
        dr = (dpk - r * dqk) / qs
        t = tl.where(r != 0, tl.abs((ans - r) / tl.where(r != 0, r, 1.0)), 0.0)
        dt = tl.where(dr != 0, tl.abs((dans - dr) / tl.where(dr != 0, dr, 1.0)), 0.0)
        ans = tl.where(upd, r, ans)
        dans = tl.where(upd, dr, dans)
        fin = upd & (t <= eps) & (dt <= eps)
        # (finished lanes run on: their ans/dans no longer change)
        pkm2 = pkm1
        pkm1 = pk
        qkm2 = qkm1
        qkm1 = qk
        dpkm2 = dpkm1
        dpkm1 = dpk
        dqkm2 = dqkm1
        dqkm1 = dqk
        sc = tl.where(tl.abs(pk) > big, 1.0 / big, 1.0)
        pkm2 = pkm2 * sc
        pkm1 = pkm1 * sc
        qkm2 = qkm2 * sc
        qkm1 = qkm1 * sc
        dpkm2 = dpkm2 * sc
        dpkm1 = dpkm1 * sc
        dqkm2 = dqkm2 * sc
        dqkm1 = dqkm1 * sc
        active = active & (fin == 0)
        n += 1
    return ans, dans


@triton.jit
def _fx_igamma(a, x, kind: tl.constexpr):
    # kind: 0 igamma, 1 igammac, 2 igamma_grad_a, 3 random_gamma_grad (JAX's domain rules)
    nan = float('nan')
    inf = float('inf')
    bad = (a != a) | (x != x) | (x < 0) | (a < 0)
    if kind >= 2:
        sp = bad | (a == 0) | (x == inf) | (x == 0)
        sv = tl.where(bad | (a == 0) | (x == inf), nan, 0.0)
        cf = (x > 1) & (x > a)
    elif kind == 0:
        sp = bad | (x == 0) | (x == inf)
        sv = tl.where(bad, nan, tl.where(x == 0, tl.where(a == 0, nan, 0.0), 1.0))
        cf = (x >= 1) & (x > a)
    else:
        sp = bad | (x == 0) | (x == inf) | (a == 0)
        sv = tl.where(x == 0, tl.where(a == 0, nan, 1.0), tl.where(x == inf, 0.0, 0.0))
        sv = tl.where(bad, nan, sv)
        cf = ((x < 1) | (x < a)) == 0
    ok = sp == 0
    xs = tl.where(ok, x, 1.0)
    as_ = tl.where(ok, a, 1.0)
    cans, cdans = _fx_igamma_cfrac(as_, xs, ok & cf)
    sans, sdans = _fx_igamma_series(as_, xs, ok & (cf == 0))
    lx = libdevice.log(xs)
    if kind == 3:
        vc = xs * (cdans + cans * (lx - _fx_digamma(as_)))
        vs = -xs / as_ * (sdans + sans * (lx - _fx_digamma(as_ + 1.0)))
        out = tl.where(cf, vc, vs)
    else:
        ax = as_ * lx - xs - libdevice.lgamma(as_)
        e = tl.where(ax < _fx_c64(-709.782712893384), 0.0, libdevice.exp(ax))
        if kind == 2:
            vc = -e * (cdans + cans * (lx - _fx_digamma(as_)))
            vs = e / as_ * (sdans + sans * (lx - _fx_digamma(as_ + 1.0)))
            out = tl.where(cf, vc, vs)
        else:
            q = cans * e
            p = sans * e / as_
            if kind == 0:
                out = tl.where(cf, 1.0 - q, p)
            else:
                out = tl.where(cf, q, 1.0 - p)
    return tl.where(sp, sv, out)


@triton.jit
def _fx_bessel_ie(x, nu: tl.constexpr):
    eps = 2.220446049250313e-16
    ax = tl.abs(x)
    small = ax <= 20
    xs = tl.where((x != x) | (ax == float('inf')), 1.0, x)
    axs = tl.abs(xs)
    q = xs * xs / 4.0
    t = q * 0.0 + 1.0
    s = t
    k = q * 0.0
    active = small & (x == x)
    while _fx_any(active):
        k = k + 1.0
        t = tl.where(active, t * (q / (k * (k + nu))), t)
        s = tl.where(active, s + t, s)
        active = active & (t > s * eps * 0.5)
    if nu == 0:
        vs = s * libdevice.exp(-axs)
    else:
        vs = s * libdevice.exp(-axs) * (axs / 2.0)
    mu = 4.0 * nu * nu
    s2 = q * 0.0 + 1.0
    t2 = s2
    active = (small == 0) & (x == x) & (ax != float('inf'))
    kk = 0.0
    while _fx_any(active) & (kk < 59.0):
        kk = kk + 1.0
        nt = t2 * ((2.0 * kk - 1.0) * (2.0 * kk - 1.0) - mu) / (8.0 * kk * axs)
        grow = tl.abs(nt) >= tl.abs(t2)
        active = active & (grow == 0)
        t2 = tl.where(active, nt, t2)
        s2 = tl.where(active, s2 + t2, s2)
        active = active & (tl.abs(t2) > tl.abs(s2) * eps * 0.5)
    va = s2 / libdevice.sqrt(_fx_c64(6.283185307179586) * axs)
    out = tl.where(small, vs, va)
    if nu != 0:
        out = tl.where(x < 0, -out, out)
    out = tl.where(ax == float('inf'), 0.0, out)
    return tl.where(x != x, float('nan'), out)


def _fx_dot(a, b, out, bsz, m, k, n, ta, tb, tf32):
    """out[b] = op(a[b]) @ op(b[b]) on flat buffers (cuBLAS through torch on a GPU; float32
    products in TF32 where ``tf32``, the default matmul precision, says so)."""
    a, b = a.reshape(-1)[:bsz * m * k], b.reshape(-1)[:bsz * k * n]
    out = out.view(-1)[:bsz * m * n]
    A = a.view(bsz, k, m).transpose(1, 2) if ta else a.view(bsz, m, k)
    B = b.view(bsz, n, k).transpose(1, 2) if tb else b.view(bsz, k, n)
    O = out.view(bsz, m, n)
    if k == 0:
        O.zero_()
        return
    if A.dtype != O.dtype:
        A, B = A.to(O.dtype), B.to(O.dtype)
    if O.dtype.is_floating_point or O.device.type == "cpu":
        _fx_matmul(A, B, O, tf32)
    else:  # no integer GEMM on the GPU: an exact (wrapping) multiply and sum
        O.copy_((A.unsqueeze(-1) * B.unsqueeze(1)).sum(2).to(O.dtype))
'''
