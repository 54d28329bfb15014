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
from functx.lowering.triton.runtime import site as _fx_site


@triton.jit
def _fx_fmax(a, b):
    # JAX's max: NaN wins, max(-0, +0) = +0
    r = tl.where(a > b, a, b)
    # (nested rather than `(a == b) & (a == 0)`: Triton's interpreter mislabels the comparison
    # of a 0-d tensor with a constant as float32 and then refuses the `&`)
    r = tl.where(a == b, tl.where(a == 0, a + b, r), r)
    return tl.where(a != a, a, r)


@triton.jit
def _fx_fmin(a, b):
    r = tl.where(a < b, a, b)
    r = tl.where(a == b, tl.where(a == 0, -((-a) + (-b)), r), r)
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
