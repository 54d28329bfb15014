"""Triton products (``lowering/triton/dot.py``): small matrix-vector products written as a
multiply and a sum (``matvec_sums``), which the scheduler fuses with the work around them, against
NumPy float64 and JAX; what stays a cuBLAS product. Triton's CPU interpreter stands in for the GPU
(``TRITON_INTERPRET=1``, set per test)."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
jax = pytest.importorskip("jax")

import functx  # noqa: E402
from functx import lax  # noqa: E402
from functx.lowering.triton import dot  # noqa: E402


@pytest.fixture(autouse=True)
def interpreter(monkeypatch):
    from functx.devices import device as placement

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(placement, "_gpu_list", placement._gpu_list or None)
    monkeypatch.setattr(placement, "GPU_IN_USE", placement.GPU_IN_USE)


RNG = np.random.default_rng(7)
DN = lambda lc, rc, lb=(), rb=(): ((lc, rc), (lb, rb))  # noqa: E731

# (lhs shape, rhs shape, dimension numbers, a cuBLAS product?)
CASES = [
    ((6, 5), (5,), DN((1,), (0,)), False),  # A x
    ((5, 6), (5,), DN((0,), (0,)), False),  # A^T x
    ((5,), (5, 6), DN((0,), (0,)), False),  # x A
    ((5,), (5,), DN((0,), (0,)), False),  # a vector product
    ((6, 5), (5, 1), DN((1,), (0,)), False),  # a column (unit axes dropped)
    ((3, 4, 5), (3, 5), DN((2,), (1,), (0,), (0,)), False),  # batched A x
    ((2, 3, 4), (2, 3), DN((0, 1), (0, 1)), False),  # two contracted axes
    ((6, 5), (5, 3), DN((1,), (0,)), True),  # a matrix product
    ((6, 1), (1, 5), DN((1,), (0,)), False),  # an outer product (lower.py multiplies)
]


@pytest.mark.parametrize("case", range(len(CASES)))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_matvec_sums_match_numpy_and_jax(case, dtype):
    ls, rs, dn, cublas = CASES[case]
    a, b = (RNG.standard_normal(s).astype(dtype) for s in (ls, rs))

    def f(a, b):  # (a consumer, so the sum has work to fuse with)
        return lax.dot_general(a, b, dn) * 2.0

    gpu = functx.devices("gpu")[0]
    # (full float32 products: a cuBLAS product is TF32 by default on a GPU)
    with functx.enable_x64(dtype == np.float64), functx.default_matmul_precision("highest"):
        lowered = functx.jit(f, backend="triton").lower(*functx.device_put((a, b), gpu))
        got = np.asarray(lowered.compile()(*functx.device_put((a, b), gpu)))
    launches = re.findall(r"(?m)^    (_L\d+|_fx_dot)\(", lowered.as_text().split("\ndef run(")[1])
    # (a sum, or lower.py's outer product, fuses with its consumer into one kernel)
    assert launches == (["_fx_dot", "_L0"] if cublas else ["_L0"]), launches
    want = np.asarray(jax.jit(lambda a, b: jax.lax.dot_general(a, b, dn) * 2.0)(a, b))
    exact = 2.0 * np.asarray(jax.lax.dot_general(a.astype(np.float64), b.astype(np.float64), dn))
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = 1e-6 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, exact, rtol=tol, atol=tol)
    np.testing.assert_allclose(got, want, rtol=tol * 10, atol=tol * 10)


def test_matvec_sums_keep_half_precision_and_large_products(monkeypatch):
    """bfloat16 products (a float32 accumulation) and operands above ``MATVEC_MAX_ELEMENTS``
    stay products; the switch turns the rewrite off."""
    x = np.ones((4, 3), np.float32)
    v = np.ones(3, np.float32)
    bf16 = functx.numpy.bfloat16
    closed = functx.make_jaxpr(lambda a, b: a @ b)(x.astype(bf16), v.astype(bf16))
    assert dot.matvec_sums(closed) is closed
    closed = functx.make_jaxpr(lambda a, b: a @ b)(x, v)
    assert dot.matvec_sums(closed) is not closed
    monkeypatch.setattr(dot, "MATVEC_MAX_ELEMENTS", 11)
    assert dot.matvec_sums(closed) is closed
    monkeypatch.setattr(dot, "MATVEC_MAX_ELEMENTS", 12)
    monkeypatch.setattr(dot, "MATVEC_SUMS", False)
    assert dot.matvec_sums(closed) is closed
