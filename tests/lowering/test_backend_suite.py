"""One set of value-checking cases, stamped once per backend (as TorchInductor stamps its tests).

Each case is a function ``fn(ns, *args)`` written once against a namespace ``ns`` that is either
functx (``functx.numpy``, ``functx.lax``, ``functx.nn``, ``functx.grad``, ...) or JAX; it returns a
flat dict of named outputs. The backends:

* ``eager``: ``fn(FX, *args)`` on functx Arrays (the NumPy interpreter),
* ``cpp``:   ``functx.jit(fn)(*args)`` (the C++ backend), called twice (NumPy inputs, then functx
  Arrays through the dispatch fast path),
* ``triton``: ``functx.jit(fn, backend="triton")(*args)`` (the Triton backend), called twice the
  same way. In CI (no GPU) its kernels run in Triton's CPU interpreter: ``backend_env`` sets
  ``TRITON_INTERPRET=1`` for the duration of each Triton test only, and swaps in small block
  limits (``TRITON_BLOCKS``) so that the tiny shapes here take the looped, split and multi-chunk
  paths of reductions and scans. On a GPU, ``FUNCTX_TEST_TRITON_GPU=1`` runs them there instead.

are all compared with ``jax.jit(fn)(*args)`` (the reference), and the compiled ones also with
``eager``. Every case compiles one program per backend, so cases batch many operations into one
function. ``test_suite_covers_every_lowering`` checks that the cases together contain every
primitive that has a lowering (collected from their Jaxprs, nested ones included), so every
lowered primitive runs on every backend; ``test_fusion_kernel_counts`` counts the kernels of the
fused programs on both compiled backends. All cases run for Triton: under the interpreter they
take about 15 s together, and all the Triton tests of this file about 30 s (2 cores), inside the
CI budget, so no sampling is needed.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functx
import functx.lax as flax
import functx.nn as fnn
import functx.numpy as fnp
from functx import primitives as P
from functx.lowering import lower

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
from jax import ad_checkpoint as jax_ad_checkpoint, experimental as jax_experimental  # noqa: E402

jax.config.update("jax_enable_x64", True)

F64, F32, F16 = np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.float16)
BF16 = np.dtype(ml_dtypes.bfloat16)
I8, I32, I64, U8, U32 = (np.dtype(t) for t in (np.int8, np.int32, np.int64, np.uint8, np.uint32))
BOOL = np.dtype(np.bool_)
FLOAT_DTYPES = (F64, F32, F16, BF16)

NAN, INF = math.nan, math.inf

# --- the two namespaces ----------------------------------------------------------------------
FX = SimpleNamespace(
    name="functx",
    np=fnp,
    lax=flax,
    nn=fnn,
    grad=functx.grad,
    vmap=functx.vmap,
    jit=functx.jit,
    value_and_grad=functx.value_and_grad,
    checkpoint=functx.checkpoint,
    checkpoint_name=functx.ad_checkpoint.checkpoint_name,
    policies=functx.checkpoint_policies,
    ShapeDtypeStruct=functx.ShapeDtypeStruct,
    pure_callback=functx.pure_callback,
    debug_callback=functx.debug.callback,
    io_callback=functx.control.callbacks.io_callback,
)
JX = SimpleNamespace(
    name="jax",
    np=jnp,
    lax=jax.lax,
    nn=jax.nn,
    grad=jax.grad,
    vmap=jax.vmap,
    jit=jax.jit,
    value_and_grad=jax.value_and_grad,
    checkpoint=jax.checkpoint,
    checkpoint_name=jax_ad_checkpoint.checkpoint_name,
    policies=jax.checkpoint_policies,
    ShapeDtypeStruct=jax.ShapeDtypeStruct,
    pure_callback=jax.pure_callback,
    debug_callback=jax.debug.callback,
    io_callback=jax_experimental.io_callback,
)

# (rtol, atol) per dtype; a case may scale them.
TOL = {F64: (1e-12, 1e-13), F32: (2e-6, 1e-6), F16: (2e-3, 1e-3), BF16: (1.6e-2, 1e-2)}


@dataclass
class Case:
    name: str
    fn: Callable  # fn(ns, *args) -> dict of arrays
    make_args: Callable  # rng -> tuple of arguments (NumPy arrays or pytrees of them)
    tol: float = 1.0  # multiplies TOL
    vs_jax: bool = True  # compare with JAX (False where JAX has no counterpart)
    jax_tol: float | None = None  # tolerance scale against JAX (default: ``tol``)
    triton_unsupported: bool = False  # Triton raises UnsupportedError up front (complex values)


CASES: dict[str, Case] = {}


def case(make_args, tol=1.0, vs_jax=True, jax_tol=None, name=None, triton_unsupported=False):
    def deco(fn):
        n = name or fn.__name__
        CASES[n] = Case(n, fn, make_args, tol, vs_jax, jax_tol, triton_unsupported)
        return fn

    return deco


def _rng(name):
    return np.random.default_rng(sum(map(ord, name)))


def args_of(c: Case):
    return c.make_args(_rng(c.name))


def to_fx(tree):
    return functx.tree_util.tree_map(lambda a: fnp.asarray(a), tree)


# --- comparing results -----------------------------------------------------------------------
def assert_same(got, want, what, tol=1.0, check_dtype=True):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if check_dtype:
        assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    if want.dtype.kind == "c" and got.dtype.kind == "c":  # each part at its float's tolerance
        part = F32 if want.dtype == np.complex64 else F64
        for f in (np.real, np.imag):
            assert_same(f(got).astype(part), f(want).astype(part), what, tol, check_dtype)
        return
    if want.dtype in FLOAT_DTYPES or got.dtype in FLOAT_DTYPES:
        rtol, atol = TOL.get(want.dtype, TOL[F64])
        np.testing.assert_allclose(
            got.astype(np.float64),
            want.astype(np.float64),
            rtol=rtol * tol,
            atol=atol * tol,
            equal_nan=True,
            err_msg=what,
        )
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def assert_same_dicts(got: dict, want: dict, what: str, tol=1.0):
    assert sorted(got) == sorted(want), f"{what}: outputs {sorted(got)} != {sorted(want)}"
    for k in sorted(want):
        assert_same(got[k], want[k], f"{what}: output {k!r}", tol)


@functools.lru_cache(maxsize=None)
def jax_result(name):
    c = CASES[name]
    out = jax.jit(functools.partial(c.fn, JX))(*args_of(c))
    return {k: np.asarray(v) for k, v in out.items()}


@functools.lru_cache(maxsize=None)
def eager_result(name):
    c = CASES[name]
    out = c.fn(FX, *to_fx(args_of(c)))
    return {k: np.asarray(v) for k, v in out.items()}


_JITTED: dict = {}


def cpp_result(name):
    c = CASES[name]
    if name not in _JITTED:
        _JITTED[name] = functx.jit(functools.partial(c.fn, FX))
    jf = _JITTED[name]
    args = args_of(c)
    first = {k: np.asarray(v) for k, v in jf(*args).items()}
    again = {k: np.asarray(v) for k, v in jf(*to_fx(args)).items()}
    assert_same_dicts(again, first, f"{name}: second call (functx Arrays)", tol=0.0)
    return first


# --- the Triton backend ------------------------------------------------------------------------
TRITON_GPU = os.environ.get("FUNCTX_TEST_TRITON_GPU", "0") not in ("", "0")
_TRITON_JITTED: dict = {}


def _triton_blocks():
    from functx.lowering.triton.blocks import Blocks

    # reductions of more than 16 elements loop in chunks of 16 (and split when single-pass),
    # scans take chunks of 16 positions (4 along a strided axis)
    return Blocks(pointwise=64, reduce_inner=16, persistent=16, scan=16, elems=256)


@contextlib.contextmanager
def backend_env(backend):
    """For ``triton``: Triton's interpreter (unless FUNCTX_TEST_TRITON_GPU=1) and small block
    limits, set for the body of the ``with`` only (also inside hypothesis tests, which cannot use
    function-scoped fixtures)."""
    if backend != "triton":
        yield
        return
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    from functx.lowering.triton import program as tri

    old_env, old_blocks = os.environ.get("TRITON_INTERPRET"), tri.DEFAULT_BLOCKS
    if not TRITON_GPU:
        os.environ["TRITON_INTERPRET"] = "1"
    tri.DEFAULT_BLOCKS = _triton_blocks()
    # functx.devices looks for GPUs once per process: if it found none before the interpreter
    # was on, look again now (its stand-in GPU exists only under TRITON_INTERPRET=1), and put
    # its findings back afterwards
    pl = _placement_module()
    saved = (pl._gpu_list, pl.GPU_IN_USE) if pl is not None else None
    if pl is not None and not pl._gpu_list:
        pl._gpu_list = None
    # results are compared at float32 tolerances: products in full float32 (a GPU's default is
    # TF32, as JAX's: tests/test_matmul_precision.py)
    precision = functx.default_matmul_precision("highest")
    precision.__enter__()
    # Triton's interpreter computes with NumPy, which warns where the cases feed inf/nan on
    # purpose (a GPU does not): those RuntimeWarnings are expected here
    quiet = contextlib.nullcontext() if TRITON_GPU else np.errstate(all="ignore")
    quiet.__enter__()
    try:
        yield
    finally:
        quiet.__exit__(None, None, None)
        precision.__exit__(None, None, None)
        tri.DEFAULT_BLOCKS = old_blocks
        if old_env is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = old_env
        if saved is not None and not saved[0]:
            pl._gpu_list, pl.GPU_IN_USE = saved


def _placement_module():
    try:
        from functx.devices import device as placement
    except ImportError:  # before GPU arrays: jit(backend="triton") takes host arrays
        return None
    return placement


def on_backend(backend, tree):
    """The arguments for a call on ``backend``: for Triton, on the (stand-in) GPU."""
    if backend != "triton" or not hasattr(functx, "device_put"):
        return tree
    gpu = functx.devices("gpu")[0]
    return functx.tree_util.tree_map(lambda a: functx.device_put(a, gpu), tree)


def to_np(v):
    """A NumPy array from a backend's output (GPU arrays or torch tensors from Triton)."""
    if type(v).__name__ == "GpuArray":
        return np.asarray(functx.device_get(v))
    if type(v).__module__.startswith("torch"):
        import torch

        v = v.detach().cpu()
        if v.dtype == torch.bfloat16:
            return v.view(torch.uint16).numpy().view(BF16)
        return v.numpy()
    return np.asarray(v)


def np_dict(d):
    return {k: to_np(v) for k, v in d.items()}


def jit_for(backend, fn):
    """``functx.jit`` for a compiled backend."""
    return functx.jit(fn) if backend == "cpp" else functx.jit(fn, backend="triton")


def triton_result(name):
    c = CASES[name]
    if name not in _TRITON_JITTED:
        _TRITON_JITTED[name] = jit_for("triton", functools.partial(c.fn, FX))
    jf = _TRITON_JITTED[name]
    args = args_of(c)
    with backend_env("triton"):
        args = on_backend("triton", args)
        first = np_dict(jf(*args))
        again = np_dict(jf(*args))  # the dispatch fast path
    assert_same_dicts(again, first, f"{name}: second call", tol=0.0)
    return first


BACKENDS = ["eager", "cpp", "triton"]


# =============================================================================================
# The cases
# =============================================================================================
SPECIAL = [
    -3.5,
    -2.0,
    -1.0,
    -0.7,
    -0.5,
    -0.0,
    0.0,
    0.3,
    0.5,
    0.9,
    1.0,
    1.5,
    2.5,
    3.0,
    10.0,
    100.0,
    NAN,
    INF,
    -INF,
    1e-7,
    -1e-7,
    0.25,
]
UNARY_FLOAT = [
    "floor",
    "ceil",
    "exp",
    "exp2",
    "log",
    "log1p",
    "expm1",
    "sqrt",
    "rsqrt",
    "cbrt",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "tanh",
    "asinh",
    "acosh",
    "atanh",
    "logistic",
    "erf",
    "erfc",
    "lgamma",
    "erf_inv",
    "neg",
    "abs",
    "sign",
    "is_finite",
]


def _unary(ns, x):
    lax = ns.lax
    out = {n: getattr(lax, n)(x) for n in UNARY_FLOAT}
    out["round_away"] = lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO)
    out["round_even"] = lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
    for k in (0, 1, 2, 3, -2, 7):
        out[f"integer_pow{k}"] = lax.integer_pow(x, k)
    out["square"] = lax.square(x)
    out["reciprocal"] = lax.reciprocal(x)
    out["stop_gradient"] = lax.stop_gradient(x)
    return out


for _dt in (F32, F64):
    case(
        lambda rng, dt=_dt: (np.array(SPECIAL, dt).reshape(2, 11),),
        tol=4.0,
        name=f"unary_{_dt.name}",
    )(_unary)

_YS = [-2.0, -0.0, 0.0, 0.5, 1.0, 3.0, NAN, INF, -INF]
BINARY = ["add", "sub", "mul", "div", "rem", "pow", "max", "min", "atan2", "nextafter"]
COMPARE = ["eq", "ne", "lt", "le", "gt", "ge"]


def _binary_args(dt):
    x, y = np.meshgrid(np.array(SPECIAL, dt), np.array(_YS, dt), indexing="ij")
    return x.reshape(-1), y.reshape(-1)


def _binary(ns, x, y):
    out = {n: getattr(ns.lax, n)(x, y) for n in BINARY + COMPARE}
    out["clamp"] = ns.lax.clamp(np.asarray(-1.0, x.dtype), x, np.asarray(2.0, x.dtype))
    # broadcasting of a row against a column, in one fused expression
    out["outer"] = ns.np.maximum(x[:9, None] * 2.0, y[None, :9]) - 1.0
    return out


for _dt in (F32, F64):
    case(lambda rng, dt=_dt: _binary_args(dt), tol=4.0, name=f"binary_{_dt.name}")(_binary)

# The special functions (functx.primitives.special): C++ runs them; Triton refuses this case up
# front for reduce_precision (the others run on Triton in tests/lowering/test_triton_special.py;
# erf_inv, a libdevice function, runs on both: it is in UNARY_FLOAT). Compiled against eager
# only: XLA takes 5-8 s to compile each of the igamma family, so tests/scipy/test_lax_special.py
# checks them against scipy (JAX's own reference) and the cheap ones against JAX.
_SP_A = [0.5, 1.0, 2.5, 7.0, 30.0, 0.0, -1.5, NAN]
_SP_X = [0.25, 1.0, 3.0, 8.0, 40.0, 0.0, -2.5, INF]


def _special_args(dt):
    a, x = np.meshgrid(np.array(_SP_A, dt), np.array(_SP_X, dt), indexing="ij")
    return a.reshape(-1), x.reshape(-1)


def _special(ns, a, x):
    lax = ns.lax
    out = {n: getattr(lax, n)(a, x) for n in ["igamma", "igammac", "igamma_grad_a"]}
    out["random_gamma_grad"] = lax.random_gamma_grad(a, x)
    out["polygamma"] = lax.polygamma(ns.np.minimum(ns.np.floor(ns.np.abs(a)), 3.0), x)
    out["zeta"] = lax.zeta(a + 1.5, x)
    for n in ["digamma", "bessel_i0e", "bessel_i1e"]:
        out[n] = getattr(lax, n)(x)
    out["reduce_precision"] = lax.reduce_precision(a * x, 5, 3)
    # a composite with a while_loop: shapes in (0, 40], x in [0, 1]
    out["betainc"] = lax.betainc(ns.np.abs(a) + 0.5, x * 0 + 2.5, ns.np.clip(x / 40.0, 0.0, 1.0))
    return out


for _dt in (F32, F64):
    case(
        lambda rng, dt=_dt: _special_args(dt),
        tol=4.0,
        vs_jax=False,
        name=f"special_{_dt.name}",
        triton_unsupported="no Triton implementation",
    )(_special)

IMIN, IMAX = np.iinfo(np.int32).min, np.iinfo(np.int32).max


@case(
    lambda rng: (
        np.array([5, -7, IMIN, 3, 0, IMAX, -1, 9, 100, -100, 7, IMIN], I32),
        np.array([0, 2, -1, -2, 0, 1, -1, 3, -7, 7, 7, 1], I32),
    )
)
def int32_ops(ns, x, y):
    lax = ns.lax
    out = {
        n: getattr(lax, n)(x, y)
        for n in ["add", "sub", "mul", "div", "rem", "max", "min"] + COMPARE
    }
    for n in ["neg", "abs", "sign"]:
        out[n] = getattr(lax, n)(x)
    out["and"] = lax.bitwise_and(x, y)
    out["or"] = lax.bitwise_or(x, y)
    out["xor"] = lax.bitwise_xor(x, y)
    out["not"] = lax.bitwise_not(x)
    for k in (0, 2, 3):
        out[f"integer_pow{k}"] = lax.integer_pow(x, k)
    out["clamp"] = lax.clamp(np.int32(-5), x, np.int32(5))
    return out


@case(
    lambda rng: (
        np.array([0, 1, 7, 200, 255, 128], U8),
        np.array([0, 3, 2, 100, 1, 128], U8),
        np.array([-128, 127, -1, 5, 0, 64], I8),
        np.array([0, 1, 2**32 - 1, 12345, 7, 2**31], U32),
        np.array([-(2**62), 2**62, -1, 3, 0, 2**40], I64),
    )
)
def small_int_dtypes(ns, a, b, c, d, e):
    lax = ns.lax
    return {
        "u8_add": lax.add(a, b),
        "u8_mul": lax.mul(a, b),
        "u8_div": lax.div(a, b),
        "u8_rem": lax.rem(a, b),
        "u8_sub": lax.sub(a, b),
        "u8_max": lax.max(a, b),
        "u8_not": lax.bitwise_not(a),
        "u8_lt": lax.lt(a, b),
        "i8_neg": lax.neg(c),
        "i8_abs": lax.abs(c),
        "i8_add": lax.add(c, c),
        "i8_mul": lax.mul(c, c),
        "i8_div": lax.div(c, np.full(6, -1, I8)),
        "u32_xor": lax.bitwise_xor(d, d[::-1]),
        "u32_not": lax.bitwise_not(d),
        "u32_div": lax.div(d, np.array([1, 2, 3, 4, 5, 0], U32)),
        "u32_sign": lax.sign(d),
        "i64_mul": lax.mul(e, e),
        "i64_sign": lax.sign(e),
        "i64_ge": lax.ge(e, e[::-1]),
    }


@case(
    lambda rng: (
        np.array([True, False, True, False, True, True]),
        np.array([True, True, False, False, False, True]),
        np.arange(6, dtype=F32),
        -np.arange(6, dtype=F32),
    )
)
def bool_ops(ns, p, q, a, b):
    lax = ns.lax
    return {
        "and": lax.bitwise_and(p, q),
        "or": lax.bitwise_or(p, q),
        "xor": lax.bitwise_xor(p, q),
        "not": lax.bitwise_not(p),
        "eq": lax.eq(p, q),
        "ne": lax.ne(p, q),
        "lt": lax.lt(p, q),
        "max": lax.max(p, q),
        "select_bool": lax.select_n(p, a, b),
        "select": lax.select(q, a, b),
        "where": ns.np.where(p & ~q, a, 7.0),
        "to_f32": lax.convert_element_type(p, np.float32),
        "to_i32": lax.convert_element_type(q, np.int32),
        "all": lax.reduce_and(p, (0,)),
        "any": lax.reduce_or(q, (0,)),
    }


@case(
    lambda rng: (
        np.array([0, 1, 2, 2, 1, 0, 2, 1], I32),
        rng.standard_normal(8).astype(F32),
        rng.standard_normal(8).astype(F32),
        rng.standard_normal(8).astype(F32),
    )
)
def select_n_int(ns, which, a, b, c):
    lax = ns.lax
    return {
        "select3": lax.select_n(which, a, b, c),
        "select2": lax.select_n(lax.convert_element_type(which, np.int32) % 2, a, c),
        "select1": lax.select_n(which * 0, b),
        "select_scalar_pred": lax.select_n(which[3] > 1, a, b),
    }


_CONV_F = [
    -1.5,
    -0.5,
    0.5,
    2.7,
    300.0,
    -300.0,
    1e10,
    -1e10,
    NAN,
    INF,
    -INF,
    65504.0,
    1e-8,
    2.0**31,
    -(2.0**31),
    2.0**63,
    3.0e38,
    -0.0,
]


@case(
    lambda rng: (
        np.array(_CONV_F, F32),
        np.array(_CONV_F, F64),
        np.array([0, 1, -1, 127, 128, 255, 256, IMIN, IMAX, 65537], I32),
        np.array([1.0, -2.5, 3.0e38, NAN, 1e-3], BF16),
        np.array([1.0, -2.5, 65504.0, NAN, 1e-3], F16),
    )
)
def convert(ns, f, d, i, b, h):
    cv = ns.lax.convert_element_type
    out = {}
    for name, src in (("f32", f), ("f64", d)):
        for to in (I32, I64, I8, U8, U32, BOOL, F32, F64, F16, BF16):
            out[f"{name}_to_{to.name}"] = cv(src, to)
    for to in (F32, F64, F16, BF16, BOOL, I8, U8, U32, I64):
        out[f"i32_to_{to.name}"] = cv(i, to)
    out["bf16_to_f32"] = cv(b, F32)
    out["bf16_to_i32"] = cv(b, I32)
    out["f16_to_f32"] = cv(h, F32)
    out["f16_to_bf16"] = cv(h, BF16)
    out["bool_to_f32"] = cv(cv(i, BOOL), F32)
    return out


@case(lambda rng: (rng.standard_normal((3, 4)).astype(F32),))
def iota(ns, x):
    lax = ns.lax
    return {
        "iota_i32": lax.iota(np.int32, 7),
        "iota_f32": lax.iota(np.float32, 5),
        "iota_i64": lax.iota(np.int64, 3),
        "biota0": lax.broadcasted_iota(np.int32, (3, 4), 0),
        "biota1": lax.broadcasted_iota(np.float32, (3, 4), 1),
        "fused": x * lax.broadcasted_iota(np.float32, (3, 4), 1)
        + lax.convert_element_type(lax.broadcasted_iota(np.int32, (3, 4), 0), np.float32),
    }


def _reduction_args(rng):
    x = rng.uniform(0.5, 1.5, (3, 4, 5)).astype(F32)
    x[0, 1, 2] = NAN
    x[2, 3, 4] = INF
    xi = rng.integers(-50, 50, (3, 4, 5)).astype(I32)
    b = rng.random((3, 4)) > 0.3
    b[1] = True
    b[2] = False
    e = np.zeros((0, 4), F32)
    ei = np.zeros((0, 4), I32)
    eb = np.zeros((0, 4), bool)
    return x, xi, b, e, ei, eb


@case(_reduction_args, tol=4.0)
def reductions(ns, x, xi, b, e, ei, eb):
    lax = ns.lax
    out = {}
    for op in ("reduce_sum", "reduce_max", "reduce_min", "reduce_prod"):
        for axes in ((0,), (2,), (0, 2), (0, 1, 2), ()):
            out[f"{op}{axes}"] = getattr(lax, op)(x, axes)
        for axes in ((1,), (0, 1, 2)):
            out[f"{op}{axes}_i32"] = getattr(lax, op)(xi, axes)
        out[f"{op}_empty_axis"] = getattr(lax, op)(e, (0,))
        out[f"{op}_empty_rows"] = getattr(lax, op)(e, (1,))
        out[f"{op}_empty_i32"] = getattr(lax, op)(ei, (0,))
    for op in ("reduce_and", "reduce_or"):
        out[f"{op}_row"] = getattr(lax, op)(b, (1,))
        out[f"{op}_col"] = getattr(lax, op)(b, (0,))
        out[f"{op}_empty"] = getattr(lax, op)(eb, (0,))
        out[f"{op}_i32"] = getattr(lax, op)(xi, (2,))
    # a reduction of a fused elementwise expression, and a sum of squares of an integer array
    out["sum_of_exp"] = lax.reduce_sum(ns.np.exp(x - 1.0) * 2.0, (1,))
    out["nansum"] = ns.np.nansum(x, axis=2)
    out["mean"] = ns.np.mean(x, axis=(0, 2))
    return out


@case(
    lambda rng: (
        rng.standard_normal((4, 6)).astype(F32),
        rng.integers(0, 99, (4, 6)).astype(I32),
        np.zeros((0, 3), F32),
    ),
    tol=4.0,
)
def generic_reduce(ns, x, xi, e):
    """``lax.reduce`` with combines that are not a built-in monoid: one fused kernel each."""
    lax = ns.lax
    ind = lax.broadcasted_iota(np.int32, x.shape, 1)

    def argmax_pair(c1, c2):  # (value, index) pairs: the larger value, the first on ties
        (v1, i1), (v2, i2) = c1, c2
        take1 = (v1 > v2) | ((v1 == v2) & (i1 < i2))
        return ns.np.where(take1, v1, v2), ns.np.where(take1, i1, i2)

    out = {}
    out["argmax_v"], out["argmax_i"] = lax.reduce(
        (x, ind), (np.float32(-INF), np.int32(0)), argmax_pair, (1,)
    )
    out["sum_and_max0"], out["sum_and_max1"] = lax.reduce(
        (x, x * 2.0),
        (np.float32(0), np.float32(-INF)),
        lambda a, b: (a[0] + b[0], lax.max(a[1], b[1])),
        (0,),
    )
    out["logaddexp"] = lax.reduce(x, np.float32(-INF), ns.np.logaddexp, (1,))
    out["logaddexp_all"] = lax.reduce(x, np.float32(-INF), ns.np.logaddexp, (0, 1))
    out["xor"] = lax.reduce(xi, np.int32(0), lax.bitwise_xor, (0,))
    out["monoid_sum"] = lax.reduce(x, np.float32(0), lax.add, (1,))
    out["empty"] = lax.reduce(e, np.float32(-INF), ns.np.logaddexp, (0,))
    return out


def _argreduce_args(rng):
    x = np.array(
        [
            [1, 3, 3, 0, 2, 1],
            [NAN, 1, NAN, 5, 5, 0],
            [2, 2, 2, 2, 2, 2],
            [-INF, -INF, 1, INF, INF, -INF],
            [NAN, NAN, NAN, NAN, NAN, NAN],
        ],
        F32,
    )
    xi = np.array([[1, 3, 3, 0, 2, 1], [IMIN, IMIN, 0, IMAX, IMAX, 5], [4, 4, 4, 4, 4, 4]], I32)
    return x, x.astype(F64), xi


@case(_argreduce_args)
def argreduce(ns, x, xd, xi):
    lax = ns.lax
    out = {}
    for op in ("argmax", "argmin"):
        for axis in (0, 1):
            out[f"{op}{axis}"] = getattr(lax, op)(x, axis, np.int32)
            out[f"{op}{axis}_f64"] = getattr(lax, op)(xd, axis, np.int64)
            out[f"{op}{axis}_i32"] = getattr(lax, op)(xi, axis, np.int32)
    out["argmax_fused"] = lax.argmax(x * 2.0 - 1.0, 1, np.int32)
    out["jnp_argmax"] = ns.np.argmax(xi).astype(np.int32)
    return out


def _cum_args(rng):
    x = rng.uniform(0.5, 1.5, (4, 5)).astype(F32)
    x[1, 2] = NAN
    x[3, 0] = -INF
    return x, rng.integers(-9, 9, (4, 5)).astype(I32), rng.standard_normal((3, 6)).astype(F64)


@case(_cum_args, tol=4.0)
def cumulative(ns, x, xi, xd):
    lax = ns.lax
    out = {}
    for op in ("cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"):
        for axis in (0, 1):
            for rev in (False, True):
                out[f"{op}_a{axis}_r{int(rev)}"] = getattr(lax, op)(x, axis=axis, reverse=rev)
        out[f"{op}_f64"] = getattr(lax, op)(xd, axis=1)
    for op in ("cumsum", "cumprod", "cummax", "cummin"):
        out[f"{op}_i32"] = getattr(lax, op)(xi, axis=1, reverse=True)
    out["np_cumsum_fused"] = ns.np.cumsum(x * 2.0 + 1.0, axis=0)
    return out


@case(
    lambda rng: (
        rng.standard_normal((2, 3, 4)).astype(F32),
        rng.standard_normal(3).astype(F32),
        rng.standard_normal((1, 4)).astype(F32),
        rng.standard_normal((2, 3)).astype(F32),
        rng.standard_normal((1, 3)).astype(F32),
    )
)
def views(ns, x, v, r, m, m1):
    lax = ns.lax
    y = x * 2.0 + 1.0  # a pointwise (unrealised) operand
    s = lax.reduce_sum(x, (0,))  # a realised (buffer) operand, shape (3, 4)
    t = lax.transpose(x, (2, 0, 1))
    return {
        "bcast_vec": lax.broadcast_in_dim(v, (2, 3, 4), (1,)),
        "bcast_size1": lax.broadcast_in_dim(r, (3, 4), (0, 1)) + s,
        "bcast_scalar": lax.broadcast_in_dim(v[1], (2, 2), ()),
        "reshape_merge": lax.reshape(y, (6, 4)),
        "reshape_merge2": lax.reshape(y, (2, 12)),
        "reshape_flat": lax.reshape(y, (24,)),
        "reshape_mixed": lax.reshape(y, (4, 6)),
        "reshape_mixed2": lax.reshape(y, (3, 8)),
        "reshape_ones": lax.reshape(y, (1, 24, 1)),
        "reshape_split": lax.reshape(lax.reshape(y, (24,)), (4, 3, 2)),
        "reshape_scalar": lax.reshape(y[:1, :1, :1], ()),
        "reshape_buffer": lax.reshape(s, (2, 6)),
        "reshape_transposed": lax.reshape(t, (8, 3)),
        "transpose": t,
        "transpose2": lax.transpose(y, (1, 2, 0)),
        "squeeze": lax.squeeze(r, (0,)),
        "squeeze_mid": lax.squeeze(y[:, 1:2, :], (1,)),
        "expand_dims": lax.expand_dims(m, (0, 2)),
        "slice_strided": lax.slice(x, (0, 1, 0), (2, 3, 4), (1, 2, 3)),
        "slice_strided2": lax.slice(y, (1, 0, 1), (2, 3, 4), (1, 2, 2)),
        "rev": lax.rev(y, (0, 2)),
        "rev_slice": lax.rev(lax.slice(x, (0, 0, 1), (2, 3, 4)), (2,)),
        "pad": lax.pad(m, np.float32(0.5), [(1, 2, 0), (-1, 1, 2)]),
        "pad_negative": lax.pad(m, np.float32(-1), [(-1, 0, 1), (2, -2, 0)]),
        "pad_interior_neg": lax.pad(m, np.float32(9), [(-2, 1, 1), (0, -3, 2)]),
        "pad3d": lax.pad(y, np.float32(0), [(0, 1, 1), (1, 0, 0), (0, 0, 1)]),
        "concat0": lax.concatenate([m, m1, m1 * 2.0], 0),
        "concat1": lax.concatenate([m, m * 3.0, lax.slice(m, (0, 0), (2, 0))], 1),
        "concat_views": lax.concatenate(
            [lax.rev(m, (1,)), lax.transpose(lax.transpose(m1, (1, 0)), (1, 0))], 0
        ),
        "np_views": ns.np.flip(ns.np.swapaxes(y, 0, 2), 1)[::2, :, ::-1],
    }


def _gather_args(rng):
    x = rng.standard_normal((6, 3)).astype(F32)
    idx = np.array([1, 7, 0, 5, 6, 1], I32)  # out of range: 6 and 7 (kept >= 0: JAX wraps -1)
    uniq = np.array([4, 9, 0, 2], I32)
    upd = rng.standard_normal((6, 3)).astype(F32)
    return x, idx, uniq, upd, x.astype(I32) * 3


def _fx_gather(x, idx, axes, mode):
    return P.gather_p.bind(x, idx, axes=axes, mode=mode)


def _fx_scatter(op, x, idx, upd, axes, mode):
    return P.registry[op].bind(x, idx, upd, axes=axes, mode=mode)


_AT = {
    "scatter": "set",
    "scatter_add": "add",
    "scatter_mul": "multiply",
    "scatter_min": "min",
    "scatter_max": "max",
}


@case(_gather_args)
def gather_scatter(ns, x, idx, uniq, upd, xi):
    out = {}
    for mode in ("clip", "fill"):
        if ns is FX:
            out[f"gather0_{mode}"] = _fx_gather(x, idx[:, None], (0,), mode)
            out[f"gather1_{mode}"] = _fx_gather(x, idx[:2, None] % 4, (1,), mode).T
            out[f"gather01_{mode}"] = _fx_gather(x, ns.np.stack([idx, idx % 4], -1), (0, 1), mode)
            out[f"gather_i32_{mode}"] = _fx_gather(xi, idx[:, None], (0,), mode)
        else:
            out[f"gather0_{mode}"] = x.at[idx].get(mode=mode)
            out[f"gather1_{mode}"] = x.at[:, idx[:2] % 4].get(mode=mode)
            out[f"gather01_{mode}"] = x.at[idx, idx % 4].get(mode=mode)
            out[f"gather_i32_{mode}"] = xi.at[idx].get(mode=mode)
    for op in _AT:
        ind = uniq if op == "scatter" else idx[:4]
        u = upd[:4]
        for mode in ("drop", "clip"):
            if op == "scatter" and mode == "clip":
                continue  # clipping makes duplicate targets, whose order JAX leaves unspecified
            if ns is FX:
                out[f"{op}_{mode}"] = _fx_scatter(op, x, ind[:, None], u, (0,), mode)
            else:
                out[f"{op}_{mode}"] = getattr(x.at[ind], _AT[op])(u, mode=mode)
        if ns is FX:
            out[f"{op}_axis1"] = _fx_scatter(op, x, (ind[:2] % 5)[:, None], upd.T[:2], (1,), "drop")
            out[f"{op}_i32"] = _fx_scatter(
                op, xi, ind[:, None], ns.np.astype(u, np.int32) + 1, (0,), "drop"
            )
        else:
            out[f"{op}_axis1"] = getattr(x.at[:, ind[:2] % 5], _AT[op])(upd.T[:2].T, mode="drop")
            out[f"{op}_i32"] = getattr(xi.at[ind], _AT[op])(u.astype(np.int32) + 1, mode="drop")
    return out


@case(
    lambda rng: (
        rng.standard_normal((3, 4)).astype(F32),
        rng.standard_normal((4, 5)).astype(F32),
        rng.standard_normal((2, 3, 4)).astype(F64),
        rng.standard_normal((2, 4, 5)).astype(F64),
        rng.integers(-5, 5, (3, 4)).astype(I32),
        rng.integers(-5, 5, (4, 2)).astype(I32),
        rng.integers(-100, 100, (3, 4)).astype(I8),
    ),
    tol=8.0,
)
def dot_general(ns, a, b, a3, b3, ai, bi, a8):
    lax = ns.lax
    dg = lax.dot_general
    return {
        "matmul": dg(a, b, (((1,), (0,)), ((), ()))),
        "lhs_T": dg(lax.transpose(a, (1, 0)) + 0.0, b, (((0,), (0,)), ((), ()))),
        "lhs_T_input": dg(b, b, (((0,), (0,)), ((), ()))),
        "rhs_T_input": dg(a, a, (((1,), (1,)), ((), ()))),
        "both_T": dg(b, a, (((0,), (1,)), ((), ()))),
        "batch": dg(a3, b3, (((2,), (1,)), ((0,), (0,)))),
        "batch_mid": dg(lax.transpose(a3, (1, 0, 2)), b3, (((2,), (1,)), ((1,), (0,)))),
        "batch_last": dg(a3, lax.transpose(b3, (1, 2, 0)), (((2,), (0,)), ((0,), (2,)))),
        "two_contract": dg(a3, a3, (((1, 2), (1, 2)), ((), ()))),
        "contract_all": dg(a3, a3 * 2.0, (((0, 1, 2), (0, 1, 2)), ((), ()))),
        "outer": dg(a[0], b[:, 0], (((), ()), ((), ()))),
        "outer_batch": dg(a3[:, 0], b3[:, 0], (((), ()), ((0,), (0,)))),
        "vecmat": lax.dot(a[0], b),
        "matvec": lax.dot(a, b[:, 1]),
        "fused_operands": dg(ns.np.tanh(a), ns.np.exp(b * 0.1), (((1,), (0,)), ((), ()))),
        "k0": dg(a[:, :0], b[:0], (((1,), (0,)), ((), ()))),
        "int32": dg(ai, bi, (((1,), (0,)), ((), ()))),
        "int32_T": dg(ai, ai, (((0,), (0,)), ((), ()))),
        "int8_to_int32": dg(a8, a8, (((1,), (1,)), ((), ())), preferred_element_type=np.int32),
        "f32_to_f64": dg(a, b, (((1,), (0,)), ((), ())), preferred_element_type=np.float64),
        "np_matmul": ns.np.matmul(a3, b3),
        "np_dot": ns.np.dot(a, b),
    }


@case(
    lambda rng: (
        rng.standard_normal((4, 6)).astype(F16),
        rng.standard_normal((4, 6)).astype(F16),
        rng.standard_normal((4, 6)).astype(BF16),
        rng.standard_normal((4, 6)).astype(BF16),
        rng.standard_normal((6, 3)).astype(BF16),
    ),
    tol=2.0,
)
def low_precision(ns, h, h2, b, b2, bm):
    lax = ns.lax
    out = {}
    for name, x, y in (("f16", h, h2), ("bf16", b, b2)):
        for op in ("add", "mul", "sub", "div", "max", "min"):
            out[f"{name}_{op}"] = getattr(lax, op)(x, y)
        for op in ("exp", "tanh", "neg", "abs", "sqrt", "sin", "logistic", "floor"):
            out[f"{name}_{op}"] = getattr(lax, op)(x)
        out[f"{name}_lt"] = lax.lt(x, y)
        out[f"{name}_select"] = lax.select(lax.gt(x, y), x, y)
        out[f"{name}_sum"] = lax.reduce_sum(x, (1,))
        out[f"{name}_max"] = lax.reduce_max(x, (0,))
        out[f"{name}_argmax"] = lax.argmax(x, 1, np.int32)
        out[f"{name}_cumsum"] = lax.cumsum(x, axis=1)
        out[f"{name}_to_f32"] = lax.convert_element_type(x, np.float32)
        out[f"{name}_transpose"] = lax.transpose(x, (1, 0))
        out[f"{name}_pad"] = lax.pad(x, np.asarray(0, x.dtype), [(1, 0, 1), (0, 1, 0)])
    out["bf16_dot"] = lax.dot(b, bm)
    out["f16_dot"] = lax.dot(h, lax.convert_element_type(bm, np.float16))
    return out


# --- composites of functx.numpy and functx.nn ------------------------------------------------
def _layer_norm(ns, x, g, b, eps=1e-5):
    mean = ns.np.mean(x, axis=-1, keepdims=True)
    var = ns.np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / ns.np.sqrt(var + eps) * g + b


@case(
    lambda rng: (
        rng.standard_normal((5, 7)).astype(F32) * 3,
        rng.standard_normal(7).astype(F32),
        rng.standard_normal(7).astype(F32),
        rng.standard_normal((7, 4)).astype(F32),
        np.array([0, 4, -1, 2, -5], I32),
        rng.standard_normal((2, 5, 7)).astype(F64),
    ),
    tol=8.0,
)
def composites(ns, x, g, b, w, idx, x3):
    np_, nn = ns.np, ns.nn

    return {
        "softmax": nn.softmax(x, axis=-1),
        "softmax0": nn.softmax(x, axis=0),
        "log_softmax": nn.log_softmax(x),
        "logsumexp": nn.logsumexp(x, axis=1),
        "logsumexp_all": nn.logsumexp(x),
        "logsumexp_f64": nn.logsumexp(x3, axis=(0, 2)),
        "layer_norm": _layer_norm(ns, x, g, b),
        "layer_norm_f64": _layer_norm(ns, x3, 1.0, 0.0),
        "gelu_tanh": nn.gelu(x, approximate=True),
        "gelu_erf": nn.gelu(x, approximate=False),
        "relu": nn.relu(x),
        "sigmoid": nn.sigmoid(x),
        "softplus": nn.softplus(x),
        "silu": nn.silu(x),
        "one_hot": nn.one_hot(idx % 4, 4, dtype=np.float32),
        "matmul": np_.matmul(x, w),
        "matmul_bcast": np_.matmul(x3.astype(np.float32), w),
        "einsum_mm": np_.einsum("ij,jk->ik", x, w),
        "einsum_T": np_.einsum("ij->ji", x),
        "einsum_batch": np_.einsum("bij,bkj->bik", x3, x3),
        "einsum_mv": np_.einsum("ij,j->i", x, g),
        "index_array": x[idx],
        "index_cols": x[:, idx[:3]],
        "index_strided": x[::2, 1::3],
        "index_rev": x[::-1, 2],
        "index_mixed": x[idx[1:4], 1:5],
        "index_scalar": x[2, 3],
        "at_add": x.at[idx].add(1.0),
        "at_set": x.at[2:4].set(0.0),
        "at_mul": x.at[1, idx].multiply(2.0),
        "where": np_.where(x > 0, x, 0.1 * x),
        "clip": np_.clip(x, -1.0, 1.0),
        "var": np_.var(x, axis=0),
        "std": np_.std(x3, axis=-1),
        "take_along": np_.take_along_axis(x, ns.lax.abs(idx)[:, None] % 7, axis=1),
    }


# --- transforms under jit --------------------------------------------------------------------
def _mlp_params(rng):
    return {
        "w1": rng.standard_normal((4, 8)) * 0.5,
        "b1": rng.standard_normal(8) * 0.1,
        "w2": rng.standard_normal((8, 3)) * 0.5,
        "b2": rng.standard_normal(3) * 0.1,
    }


def _mlp(ns, p, x):
    h = ns.np.tanh(x @ p["w1"] + p["b1"])
    return h @ p["w2"] + p["b2"]


def _loss(ns, p, x, y):
    return ns.np.mean((_mlp(ns, p, x) - y) ** 2)


def _mlp_args(rng):
    return _mlp_params(rng), rng.standard_normal((6, 4)), rng.standard_normal((6, 3))


def _flat(prefix, tree):
    return {f"{prefix}{k}": v for k, v in tree.items()}


@case(_mlp_args, tol=100.0)
def transforms_mlp(ns, p, x, y):
    loss = functools.partial(_loss, ns)
    value, grads = ns.value_and_grad(loss)(p, x, y)
    per_sample = ns.vmap(lambda xi, yi: ns.grad(loss)(p, xi[None], yi[None]))(x, y)
    out = {"loss": value, **_flat("grad_", grads), **_flat("per_sample_", per_sample)}
    out["vmap_forward"] = ns.vmap(lambda xi: _mlp(ns, p, xi))(x)
    out["vmap_in_axes"] = ns.vmap(lambda w, xi: ns.np.tanh(xi @ w), in_axes=(None, 1))(p["w1"], x.T)
    # jit inside a transform inlines: grad(jit(f))
    out["grad_of_jit"] = ns.grad(ns.jit(lambda xx: loss(p, xx, y)))(x)
    out["grad_grad"] = ns.grad(lambda s: ns.grad(lambda t: ns.np.sin(t) * t**3)(s))(x[0, 0])
    return out


@case(lambda rng: (rng.standard_normal((3, 4)).astype(F32),))
def remat_and_callbacks(ns, x):
    """checkpoint (a policy keeping the named value) and the host callbacks as host steps."""

    def f(v):
        h = ns.checkpoint_name(ns.np.sin(v * 2.0), "h")
        return (ns.np.tanh(h) * v).sum()

    ck = ns.checkpoint(f, policy=ns.policies.save_only_these_names("h"))
    sds = ns.ShapeDtypeStruct(x.shape, x.dtype)
    ns.debug_callback(lambda a: None, x)
    return {
        "grad": ns.grad(ck)(x),
        "pure": ns.pure_callback(lambda a: np.asarray(a) * 2, sds, x) + 1.0,
        "io": ns.io_callback(lambda a: np.cos(np.asarray(a)), sds, x * 3.0),
    }


# --- control flow under jit ------------------------------------------------------------------
def _linrec_combine(ns):
    def combine(c1, c2):
        a1, b1 = c1
        a2, b2 = c2
        return a1 * a2, a2 * b1 + b2

    return combine


def _cf_args(rng):
    return (
        rng.uniform(0.5, 1.0, (7, 3)),
        rng.standard_normal((7, 3)),
        rng.standard_normal((5, 2, 2)) * 0.7,
        np.int32(4),
        np.int32(1),
        np.float64(2.0),
    )


@case(_cf_args, tol=100.0)
def control_flow(ns, a, b, m, n, k, s):
    lax, np_ = ns.lax, ns.np
    out = {}

    def step(c, x):
        c = c * 0.9 + x
        return c, np_.sin(c) * 2.0

    out["scan_carry"], out["scan_ys"] = lax.scan(step, np_.zeros(3, b.dtype), b)
    out["scan_rev_carry"], out["scan_rev_ys"] = lax.scan(step, b[0], a, reverse=True)
    (c1, c2), ys = lax.scan(
        lambda c, x: ((c[0] + x[0], c[1] * x[1]), c[0] - x[1]),
        (np_.zeros(3, a.dtype), np_.ones(3, a.dtype)),
        (a, b),
    )
    out["scan_tree0"], out["scan_tree1"], out["scan_tree_ys"] = c1, c2, ys
    out["map"] = lax.map(lambda r: np_.sum(r**2) + r[0], b)
    out["fori_static"] = lax.fori_loop(0, 5, lambda i, c: c * 0.5 + i, a[0])
    out["fori_traced"] = lax.fori_loop(
        0, n, lambda i, c: c * 0.5 + lax.convert_element_type(i, c.dtype), a[1]
    )

    def newton_cond(c):
        return (np_.abs(c[0] * c[0] - s) > 1e-12) & (c[1] < 50)

    def newton_body(c):
        return 0.5 * (c[0] + s / c[0]), c[1] + 1

    out["while_sqrt"], out["while_iters"] = lax.while_loop(
        newton_cond, newton_body, (s, np.int32(0))
    )
    out["cond_true"] = lax.cond(n > 2, lambda x: x * 2.0, lambda x: x - 1.0, a[0])
    out["cond_false"] = lax.cond(n > 10, lambda x: x * 2.0, lambda x: x - 1.0, a[0])
    branches = [lambda x: x + 1.0, lambda x: np_.sin(x), lambda x: x * x]
    out["switch"] = lax.switch(k, branches, b[1])
    out["switch_clamped_hi"] = lax.switch(n + 10, branches, b[1])
    out["switch_clamped_lo"] = lax.switch(k - 5, branches, b[1])
    # associative scans: lane-wise (one kernel), the linear recurrence and its gradient,
    # reverse, and a non-lane-wise combine (2x2 matrix products)
    out["ascan_add"] = lax.associative_scan(lax.add, b)
    out["ascan_max_rev"] = lax.associative_scan(lax.max, b, reverse=True)
    out["ascan_axis1"] = lax.associative_scan(lax.add, b, axis=1)
    comb = _linrec_combine(ns)
    _, h = lax.associative_scan(comb, (a, b))
    out["linrec"] = h
    _, hr = lax.associative_scan(comb, (a, b), reverse=True)
    out["linrec_rev"] = hr

    def linrec_loss(a_, b_):
        return np_.sum(lax.associative_scan(comb, (a_, b_))[1] ** 2)

    out["linrec_grad_a"], out["linrec_grad_b"] = ns.grad(linrec_loss, argnums=(0, 1))(a, b)
    out["matprod"] = lax.associative_scan(lambda x, y: np_.matmul(x, y), m)
    out["matprod_rev"] = lax.associative_scan(lambda x, y: np_.matmul(x, y), m, reverse=True)
    out["scan_grad"] = ns.grad(lambda bb: np_.sum(lax.scan(step, np_.zeros(3, bb.dtype), bb)[1]))(b)
    return out


@case(lambda rng: (rng.standard_normal((3, 8)).astype(F32),))
def fft_conv(ns, x):
    # the fft primitive as a library step (C++: pocketfft; Triton: on real lanes, complex_lanes.py)
    fft = ns.np.fft
    conv = lambda v: fft.irfft(fft.rfft(v, n=16) * fft.rfft(v[::-1], n=16), n=16)
    return {"conv": conv(x), "grad": ns.grad(lambda v: ns.np.sum(conv(v) ** 2))(x)}


@case(lambda rng: (np.array([0, 42], U32),), name="random_threefry")
def random_threefry(ns, k):
    # functx.random's hash (the threefry2x32 primitive); bit-level tests in tests/test_random.py
    r = functx.random if ns.name == "functx" else jax.random
    return {"bits": r.bits(k, (4,), U32)}


@case(lambda rng: (np.array([0xFFFFFFF0, 7, 0xFFFFFFFE, 0xFFFFFFFF], U32),), name="rng_bit_gen")
def rng_bit_gen(ns, k):
    # lax.rng_bit_generator: Philox with a counter carry (Threefry is random_threefry's hash);
    # every algorithm, dtype and key kind in tests/test_rng_bit_generator.py
    new_key, bits = ns.lax.rng_bit_generator(k, (3, 2), U32, ns.lax.RandomAlgorithm.RNG_PHILOX)
    return {"bits": bits, "key": new_key}


def _spd_pair(rng):
    a = rng.standard_normal((2, 3, 3))
    return (
        (a @ a.transpose(0, 2, 1) + 3 * np.eye(3)).astype(F32),
        rng.standard_normal((2, 3, 2)).astype(F32),
    )


@case(_spd_pair, tol=50.0, vs_jax=False)
def linalg_cholesky_solve(ns, a, b):
    # lax.linalg's library steps (LAPACK through NumPy/SciPy) between fused kernels; the rest of
    # their tests (against JAX too) are in tests/numpy/test_linalg.py
    lin = ns.lax.linalg
    L = lin.cholesky(a * 1.0)
    x = lin.triangular_solve(L, b, left_side=True, lower=True)
    y = lin.triangular_solve(L, x + 1.0, left_side=True, lower=True, transpose_a=True)
    lu, piv, perm = lin.lu(a - 2.0)
    perm2 = lin.lu_pivots_to_permutation(piv, 3)
    q, r = lin.qr(a[0] + 1.0)
    w = lin.eigh(a)[1]
    sv = lin.svd(b, compute_uv=False)
    out = {"L": L, "x": y, "lu": lu, "piv": piv, "perm": perm + perm2, "r": ns.np.abs(r)}
    return {**out, "qq": q @ q.T, "w": w * 2.0, "s": sv}


@case(_spd_pair, tol=50.0)
def custom_solve_root(ns, a, b):
    # lax.custom_linear_solve (jvp, transpose; solve inlined) and lax.custom_root (Newton); their
    # vmap and the rest: tests/test_custom_solve.py
    lax, np_ = ns.lax, ns.np

    def lsolve(m, v):
        mv = lambda x: m @ x  # noqa: E731
        rich = lambda f, y: y / 8.0 + (y - f(y / 8.0)) / 8.0  # noqa: E731 (two Richardson steps)
        return lax.custom_linear_solve(mv, v, rich, symmetric=True)

    def newton_sqrt(c):
        def newton(f, x):
            for _ in range(3):
                x = x - f(x) / (2.0 * x)
            return x

        tsolve = lambda g, y: y / g(np_.ones_like(y))  # noqa: E731
        return lax.custom_root(lambda x: x * x - c, c, newton, tsolve)

    loss = lambda m, v: np_.sum(lsolve(m, v) ** 2)  # noqa: E731
    return {
        "x": lsolve(a[1], b[1, :, 0]),
        "ga": ns.grad(loss)(a[0], b[0, :, 0]),
        "root": newton_sqrt(a[0] + 3.0),
        "root_grad": ns.grad(lambda c: np_.sum(newton_sqrt(c)))(a[0] + 3.0),
    }


@case(lambda rng: (rng.standard_normal((2, 3, 3)),), tol=1e3, triton_unsupported="eig")
def linalg_eig(ns, a):
    # lax.linalg.eig as a C++ library step (LAPACK's geev); its results are complex, which the
    # Triton backend's library steps do not take (JAX runs eig on the CPU): UnsupportedError
    w, vr = ns.np.linalg.eig(a * 2.0)
    return {"w": w, "vr_abs": ns.np.abs(vr), "wsum": ns.np.sum(ns.np.linalg.eigvals(a) ** 2)}


def _trid_args(rng):
    a = rng.standard_normal((2, 4, 4)).astype(F32)
    dl, d, du = rng.standard_normal((3, 2, 4)).astype(F32)
    return a, dl, d + 4.0, du, rng.standard_normal((2, 4, 2)).astype(F32)


@case(_trid_args, tol=50.0)
def linalg_reductions(ns, a, dl, d, du, b):
    # hessenberg / tridiagonal / schur / householder_product / tridiagonal_solve as library steps
    # (LAPACK's gehrd, sytrd, gees, orgqr, gtsv); their other tests are in
    # tests/numpy/test_linalg_lax_more.py
    lin = ns.lax.linalg
    h, taus = lin.hessenberg(a * 1.0)
    q = lin.householder_product(a + 1.0, taus)
    _, td, te, _ = lin.tridiagonal(a + ns.np.swapaxes(a, -1, -2))
    t = lin.schur(a[0] @ a[0].T)[0]
    x = lin.tridiagonal_solve(dl, d, du, b)
    return {"h": h, "q": q, "td": td, "te": ns.np.abs(te), "t": ns.np.diag(t), "x": x}


def _complex_args(rng):
    def c(shape, dt):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)

    return (c((5, 3), np.complex64), c((3,), np.complex128))


@case(_complex_args, tol=8.0)
def complex_lanes(ns, z, w):
    # complex inputs and outputs, functions, reductions, products, scans and ordering (Triton:
    # every complex value as a pair of real lanes, functx/lowering/complex_lanes.py)
    np_, lax = ns.np, ns.lax
    lam = 0.9 * np_.exp(1j * np_.real(z[0]))

    def combine(x, y):  # the LRU/S5 linear recurrence, as a parallel scan
        return y[0] * x[0], y[0] * x[1] + y[1]

    h = lax.associative_scan(combine, (np_.broadcast_to(lam, z.shape), z), axis=0)[1]
    carry, ys = lax.scan(lambda c, x: (c * 0.5 + x, c * x), w, z.astype(w.dtype))
    u = lax.complex(np_.real(z) * 2.0, np_.imag(z))  # (from real parts)
    v = u * np_.conj(u) + np_.exp(u) / (u + 2.0)
    return {
        "re": np_.real(v),
        "im": np_.imag(v),
        "abs_sum": np_.abs(np_.sum(u * u)),
        "lru": h,
        "fns": np_.sqrt(z) / (np_.log(z) + 2.0) - np_.sin(z) * np_.tanh(z) + z**3,
        "abs_angle": np_.abs(w) + np_.angle(w),
        "matmul": z.T @ z,
        "prod_cumsum": np_.prod(z, axis=0) + np_.cumsum(z, axis=0)[-1],
        "max_min": lax.max(z, z[::-1]) - np_.min(z, axis=0),
        "scan_carry": carry,
        "scan_ys": ys,
        "c128": np_.exp(w) * np_.conj(w) / (w + 1j),
        "eq": z == z[::-1],
    }


def _sort_args(rng):
    x = rng.standard_normal((3, 7)).astype(F32)
    x[0, 2], x[1, 4], x[2, 0], x[2, 1] = np.nan, -0.0, 0.0, x[2, 3]
    return x, rng.integers(0, 3, (3, 7)).astype(np.int32)


@case(_sort_args, name="sort_top_k")
def sort_top_k(ns, x, y):
    # the sort kernel (functx/lowering/{cpp,triton}/sort.py): JAX's order, several keys, top_k
    lax = ns.lax
    return {
        "keys2": lax.sort((y, x * 2.0), num_keys=2),
        "argsort": ns.np.argsort(x, axis=0, descending=True),
        "top_k": lax.top_k(x, 3),
    }


def _general_gather_args(rng):
    x = rng.standard_normal((2, 3, 4)).astype(F32)
    idx = np.array([[0, 1], [1, 3], [5, -1]], np.int32)  # the last window is out of bounds
    bidx = np.array([[[1], [0]], [[2], [2]]], np.int32)
    ids = np.array([0, 2, 2, 0, 4, -1, 1], np.int32)
    upd = rng.standard_normal((3, 3, 2)).astype(F32)
    return x, idx, bidx, upd, ids, rng.standard_normal((7, 2)).astype(F32)


@case(_general_gather_args, name="general_gather_scatter")
def general_gather_scatter(ns, x, idx, bidx, upd, ids, data):
    # lax.gather/scatter* with dimension numbers (functx/_gather.py) and jax.ops.segment_*: index
    # arithmetic into the point gather/scatter primitives
    lax = ns.lax
    ops = functx.ops if ns.name == "functx" else jax.ops
    dn = lax.GatherDimensionNumbers((1, 2), (0,), (0, 2))
    batched = lax.GatherDimensionNumbers((2,), (1,), (1,), (0,), (0,))
    sd = lax.ScatterDimensionNumbers((1, 2), (0,), (0, 2))
    return {
        "gather_clip": lax.gather(x, idx, dn, (1, 3, 2), mode="clip"),
        "gather_fill": lax.gather(x, idx, dn, (1, 3, 2), mode="fill", fill_value=-1.0),
        "gather_batched": lax.gather(x, bidx, batched, (1, 1, 4)),
        "scatter_add": lax.scatter_add(x, idx, upd, sd),
        "segment_max_clip": ops.segment_max(data, ids, 5, mode="clip"),
    }


def _conv_args(rng):
    return (
        rng.standard_normal((1, 4, 3, 2)).astype(F32),
        rng.standard_normal((2, 1, 1, 4)).astype(F32),
        rng.standard_normal((2, 7, 4)).astype(F32),
        rng.standard_normal((3, 1, 4)).astype(F32),
        rng.standard_normal(66).astype(F32),
        rng.standard_normal((1, 4, 3, 1)).astype(F32),
        rng.standard_normal((3, 3, 1, 8)).astype(F32),
    )


@case(_conv_args, tol=4.0)
def conv(ns, x, w, s, k, v, x1, w1):
    # convolutions (functx/_conv.py, composites): per-tap products with feature groups and
    # strides, Mamba's depthwise causal conv1d (multiply-adds), a 65-tap jnp.convolve (one
    # gather), one input channel to 8 outputs (one gather, one product), and gradients
    lax = ns.lax

    def conv2d(x, w):
        dn = ("NHWC", "HWIO", "NHWC")
        return lax.conv_general_dilated(
            x, w, (2, 1), "SAME", rhs_dilation=(1, 2), dimension_numbers=dn, feature_group_count=2
        )

    def conv1d(s, k):
        dn = ("NWC", "WIO", "NWC")
        return lax.conv_general_dilated(
            s, k, (1,), [(2, 0)], dimension_numbers=dn, feature_group_count=4
        )

    def sq(f):
        return ns.grad(lambda *a: ns.np.sum(f(*a) ** 2), argnums=(0, 1))

    gx, gw = sq(conv2d)(x, w)
    gs, gk = sq(conv1d)(s, k)
    long = lambda a, b: ns.np.convolve(a, b, "same")  # noqa: E731
    out = {"conv2d": conv2d(x, w), "gx": gx, "gw": gw, "conv1d": conv1d(s, k), "gs": gs, "gk": gk}
    one = lambda x, w: lax.conv_general_dilated(  # noqa: E731
        x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")
    )
    g1w = ns.grad(lambda w: ns.np.sum(one(x1, w) ** 2))(w1)
    return {**out, "long": long(v, v[1:]), "one": one(x1, w1), "g1w": g1w}


def _bitcast_args(rng):
    f = np.array([1.5, -0.0, NAN, -NAN, INF, -INF, 1e-45, -3.0], F32)
    return (
        f,
        f.astype(np.float16),
        f.astype(BF16),
        rng.integers(0, 256, (3, 4)).astype(U8),
        np.array([[1.0, -2.5], [INF, 1e-300]]).view(np.int64).reshape(2, 2),
        rng.integers(0, 0x7C00, (2, 3)).astype(np.int16),
    )


@case(_bitcast_args)
def bitcast(ns, f, h, b, u, d, i):
    # lax.bitcast_convert_type at equal widths, narrower (a new last axis of parts) and wider (the
    # last axis consumed), halves, and the jnp functions that read sign bits
    cv, np_ = ns.lax.bitcast_convert_type, ns.np
    return {
        "f32_i32": cv(f, np.int32),
        "f32_u8": cv(-f, np.uint8),
        "f16_i16": cv(h, np.int16),
        "bf16_u16": cv(b, np.uint16),
        "u8_i32": cv(u, np.int32),
        "i64_i16": cv(d, np.int16),
        "i16_f16": cv(i, np.float16) * 2.0,
        "signbit": np_.signbit(f),
        "nextafter_f16": cv(np_.nextafter(h, np_.float16(0.5)), np.int16),
    }


# =============================================================================================
# The tests
# =============================================================================================
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("backend", BACKENDS)
def test_case(backend, name):
    c = CASES[name]
    if backend == "triton" and c.triton_unsupported:
        from functx.errors import UnsupportedError

        why = c.triton_unsupported if isinstance(c.triton_unsupported, str) else "complex"
        with pytest.raises(UnsupportedError, match=why):
            triton_result(name)
        return
    got = {"eager": eager_result, "cpp": cpp_result, "triton": triton_result}[backend](name)
    if backend != "eager":
        assert_same_dicts(got, eager_result(name), f"{name}: {backend} vs eager", c.tol)
    if c.vs_jax:
        assert_same_dicts(
            got,
            jax_result(name),
            f"{name}: {backend} vs jax",
            c.jax_tol if c.jax_tol is not None else c.tol,
        )


def _prims_of(jaxpr, acc):
    for e in jaxpr.eqns:
        acc.add(e.prim.name)
        for v in e.params.values():
            for sub in v if isinstance(v, (list, tuple)) else [v]:
                if isinstance(sub, functx.ClosedJaxpr):
                    _prims_of(sub.jaxpr, acc)
                elif isinstance(sub, functx.Jaxpr):
                    _prims_of(sub, acc)
    return acc


def test_suite_covers_every_lowering():
    """Every primitive with a lowering occurs in some case (so the cpp backend ran it)."""
    from functx.transforms import passes

    seen: set = set()
    for c in CASES.values():
        closed = functx.make_jaxpr(functools.partial(c.fn, FX))(*args_of(c))
        _prims_of(passes.simplify(closed).jaxpr, seen)
    seen |= {"dynamic_slice", "dynamic_update_slice"}  # the hypothesis tests below
    # the collectives need a bound axis: tests/control/test_collectives.py runs them under jit
    seen |= {
        "psum",
        "pmax",
        "pmin",
        "axis_index",
        "all_gather",
        "reduce_scatter",
        "all_to_all",
        "ppermute",
    }
    # a check under jit raises (JAX's ValueError) or, as a debug_check, lowers to nothing:
    # tests/experimental/test_checkify.py
    seen |= {"check"}
    seen |= {"custom_vmap_call"}  # jit of custom_vmap: tests/test_jax_api_fixes.py
    # shard_map over processes (its boundary and block primitives, jitted): test_distributed.py
    seen |= {"shard_map_block", "shard_map_boundary"}
    # flash attention (jit on a GPU only): tests/transforms/test_attention.py
    seen |= {"flash_attention", "flash_attention_bwd"}
    # stride-1 convolutions' tap sums (jit's CPU rewrite): tests/lowering/test_conv_taps.py
    seen |= {"conv_taps", "conv_taps_dw"}
    lowered = {p.name for p in lower.lowerings}
    # custom_jvp_call / custom_vjp_call are exercised by the custom-derivative test below
    missing = sorted(lowered - seen - {"custom_jvp_call", "custom_vjp_call"})
    assert not missing, f"primitives with a lowering that no backend case runs: {missing}"


# --- dynamic_slice / dynamic_update_slice with hypothesis-drawn (clamped) starts ---------------
def _dyn(ns, x, upd, i0, i1, j0, j1):
    lax = ns.lax
    return {
        "ds": lax.dynamic_slice(x, (i0, i1), (2, 3)),
        "ds_fused": lax.dynamic_slice(x * 2.0, (j0, i1), (4, 1)) + 1.0,
        "ds_full": lax.dynamic_slice(x, (j1, i0), (5, 6)),
        "dus": lax.dynamic_update_slice(x, upd, (j0, j1)),
        "dus_fused": lax.dynamic_update_slice(x + 1.0, upd * 3.0, (i0, j1)) - 1.0,
        "dyn_index": lax.dynamic_index_in_dim(x, i0, axis=1, keepdims=False),
    }


_DYN = {
    "cpp": functx.jit(functools.partial(_dyn, FX)),
    "jax": jax.jit(functools.partial(_dyn, JX)),
    "triton": functx.jit(functools.partial(_dyn, FX), backend="triton"),
}
_DYN_X = np.arange(30, dtype=F32).reshape(5, 6) / 7.0
_DYN_U = -np.arange(6, dtype=F32).reshape(2, 3) - 1.0


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=10)
@given(starts=st.lists(st.integers(-9, 12), min_size=4, max_size=4))
def test_dynamic_slice_clamped(backend, starts):
    args = (_DYN_X, _DYN_U, *[np.int32(s) for s in starts])
    want = {k: np.asarray(v) for k, v in _DYN["jax"](*args).items()}
    if backend == "eager":
        got = _dyn(FX, *to_fx(args))
    else:
        with backend_env(backend):
            got = np_dict(_DYN[backend](*on_backend(backend, args)))
        assert_same_dicts(got, np_dict(_dyn(FX, *to_fx(args))), f"{backend} vs eager")
    assert_same_dicts(np_dict(got), want, f"{backend} vs jax")


# --- hypothesis: random values through the compiled elementwise programs ----------------------
_F32_VALUES = st.floats(-60, 60, width=32) | st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5])


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@settings(max_examples=8)
@given(
    xs=st.lists(_F32_VALUES, min_size=22, max_size=22),
    ys=st.lists(_F32_VALUES, min_size=9, max_size=9),
)
def test_random_values_compiled_vs_eager(backend, xs, ys):
    """The unary_float32 and binary_float32 programs (compiled once) on drawn values."""
    x = np.array(xs, F32).reshape(2, 11)
    jitted = _JITTED if backend == "cpp" else _TRITON_JITTED
    for name, args in (
        ("unary_float32", (x,)),
        (
            "binary_float32",
            tuple(
                v.reshape(-1)
                for v in np.meshgrid(np.array(xs, F32), np.array(ys, F32), indexing="ij")
            ),
        ),
    ):
        c = CASES[name]
        if name not in jitted:
            jitted[name] = jit_for(backend, functools.partial(c.fn, FX))
        with backend_env(backend):
            got = np_dict(jitted[name](*on_backend(backend, args)))
        want = {k: np.asarray(v) for k, v in c.fn(FX, *to_fx(args)).items()}
        assert_same_dicts(got, want, f"{name}: {backend} vs eager", tol=8.0)


# --- hypothesis: shapes (each draws a new program, so few examples) --------------------------
def _shape_program(ns, x):
    lax, np_ = ns.lax, ns.np
    y = x * 2.0 + 1.0
    n = x.ndim
    return {
        "sum_last": np_.sum(y, axis=-1),
        "max_first": np_.max(y, axis=0),
        "softmax0": ns.nn.softmax(y, axis=0),
        "mean_all": np_.mean(np_.tanh(y)),
        "transpose": lax.transpose(y, tuple(reversed(range(n)))) - 1.0,
        "reshape": lax.reshape(lax.reshape(y, (x.size,)), tuple(reversed(x.shape))) * 3.0,
        "cumsum0": lax.cumsum(y, axis=0, reverse=True),
        "strided": y[::2] * y[::2],
        "pad": lax.pad(
            y, np.float32(-1), [(1, -1 if x.shape[0] > 1 else 0, 1)] + [(0, 1, 0)] * (n - 1)
        ),
        "argmax0": lax.argmax(y, 0, np.int32),
    }


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@settings(max_examples=5)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3))
def test_drawn_shapes_compiled_vs_eager_and_jax(backend, shape):
    x = np.random.default_rng(len(shape)).standard_normal(shape).astype(F32)
    jf = jit_for(backend, functools.partial(_shape_program, FX))
    with backend_env(backend):
        got = np_dict(jf(*on_backend(backend, (x,))))
    want = {k: np.asarray(v) for k, v in _shape_program(FX, fnp.asarray(x)).items()}
    assert_same_dicts(got, want, f"{shape}: {backend} vs eager", tol=4.0)
    ref = {k: np.asarray(v) for k, v in jax.jit(functools.partial(_shape_program, JX))(x).items()}
    assert_same_dicts(got, ref, f"{shape}: {backend} vs jax", tol=4.0)


# --- gather / scatter with hypothesis-drawn out-of-range indices ------------------------------
def _gs(x, idx, upd):
    out = {
        "gather_clip": _fx_gather(x, idx[:, None], (0,), "clip"),
        "gather_fill": _fx_gather(x, idx[:, None], (0,), "fill"),
        "gather2_fill": _fx_gather(x, fnp.stack([idx, idx], -1), (0, 1), "fill"),
        "index": x[idx],
    }
    for op in _AT:
        for mode in ("drop", "clip"):
            out[f"{op}_{mode}"] = _fx_scatter(op, x, idx[:, None], upd, (0,), mode)
    out["at_add"] = x.at[idx].add(upd)
    out["at_max"] = x.at[idx, 1].max(upd[:, 0])
    return out


_GS_JIT = {"cpp": functx.jit(_gs), "triton": functx.jit(_gs, backend="triton")}
_GS_JAX = jax.jit(
    lambda x, i, u: {
        "index": x.at[i].get(mode="clip"),
        "at_add": x.at[i].add(u),
        "at_max": x.at[i, 1].max(u[:, 0]),
    }
)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=10)
@given(idx=st.lists(st.integers(-8, 9), min_size=4, max_size=4))
def test_gather_scatter_out_of_range(backend, idx):
    """Compiled vs eager (JAX's indexing wraps negative indices, so the primitives are compared
    with the interpreter and the numpy-style indexing separately with JAX below)."""
    x = np.arange(18, dtype=F32).reshape(6, 3) / 3.0 - 2.0
    upd = np.arange(12, dtype=F32).reshape(4, 3) * 0.5 - 1.0
    args = (x, np.array(idx, I32), upd)
    want = {k: np.asarray(v) for k, v in _gs(*to_fx(args)).items()}
    if backend != "eager":
        with backend_env(backend):
            got = np_dict(_GS_JIT[backend](*on_backend(backend, args)))
        assert_same_dicts(got, want, f"{backend} vs eager")
    ref = {k: np.asarray(v) for k, v in _GS_JAX(*args).items()}
    got = want if backend == "eager" else got
    for k in ref:
        assert_same(got[k], ref[k], f"{backend} vs jax: {k}")


# --- signed zeros in max/min (compared bit for bit: assert_allclose treats -0.0 == 0.0) ----------
def _max_min_elementwise(ns, x, y):
    lax = ns.lax
    return {
        "max": lax.max(x, y),
        "min": lax.min(x, y),
        "max_rev": lax.max(y, x),
        "min_rev": lax.min(y, x),
        "cummax": lax.cummax(x, axis=0),
        "cummin": lax.cummin(y, axis=0),
    }


def _max_min_reductions(ns, x, y):
    lax = ns.lax
    return {
        "reduce_max": lax.reduce_max(x, (0,)),
        "reduce_min": lax.reduce_min(y, (0,)),
        "reduce_max2": lax.reduce_max(y, (0,)),
        "reduce_min2": lax.reduce_min(x, (0,)),
    }


_ZX = np.array([-0.0, 0.0, -0.0], F32)
_ZY = np.array([0.0, -0.0, 0.0], F32)


def _check_signed_zeros(fn, backend):
    want = {k: np.asarray(v) for k, v in jax.jit(functools.partial(fn, JX))(_ZX, _ZY).items()}
    if backend == "eager":
        got = fn(FX, fnp.asarray(_ZX), fnp.asarray(_ZY))
    else:
        with backend_env(backend):
            got = jit_for(backend, functools.partial(fn, FX))(*on_backend(backend, (_ZX, _ZY)))
    for k in want:
        g = to_np(got[k])
        assert_same(g, want[k], k)
        np.testing.assert_array_equal(np.signbit(g), np.signbit(want[k]), err_msg=f"sign of {k}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_signed_zeros_elementwise_max_min(backend):
    _check_signed_zeros(_max_min_elementwise, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_signed_zeros_reduce_max_min(backend):
    _check_signed_zeros(_max_min_reductions, backend)


# --- custom derivatives under jit ------------------------------------------------------------
@functx.custom_jvp
def _softclip(x):
    return fnp.tanh(x) * 2.0


@_softclip.defjvp
def _softclip_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _softclip(x), 2.0 * (1.0 - fnp.tanh(x) ** 2) * t


@functx.custom_vjp
def _scale(x):
    return x * 3.0


_scale.defvjp(lambda x: (x * 3.0, None), lambda res, g: (g * 3.0,))


def test_custom_derivatives_under_jit():
    x = np.linspace(-2, 2, 7)

    def f(x):
        return fnp.sum(_softclip(x) * _scale(x))

    g = functx.jit(functx.value_and_grad(f))(x)
    ref = jax.value_and_grad(lambda x: jnp.sum(jnp.tanh(x) * 2.0 * x * 3.0))(x)
    for a, b in zip(g, ref):
        assert_same(a, b, "custom derivatives under jit", tol=10.0)
    assert_same(functx.jit(f)(x), f(fnp.asarray(x)), "jit vs eager")


# --- known bugs (strict xfail: they flip to failures when fixed) -----------------------------
@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("dt", [BF16, F16])
def test_low_precision_chain_rounds_each_op(dt, backend):
    def f(ns, x, y):
        return {"out": (x + y) - y}

    x = np.array([1.0, 3.0], dt)
    y = np.array([4096.0, 4096.0], dt)
    with backend_env(backend):
        got = to_np(jit_for(backend, functools.partial(f, FX))(*on_backend(backend, (x, y)))["out"])
    want = jax.jit(functools.partial(f, JX))(x, y)["out"]
    assert_same(got, want, "chain", tol=0.0)
    assert_same(got, f(FX, *to_fx((x, y)))["out"], "chain vs eager", tol=0.0)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("dt", [I64, F32])
def test_dus_with_constant_starts(dt, backend):
    """``x.at[1].add(x[0])``: constant starts and an update expression with temporaries.

    For int64 the bug writes at row ``2 * x[0] + u0``: x is all ones so that the wrong row (2)
    stays inside the buffer (other values write out of bounds and corrupt the heap)."""

    def f(ns, x):
        out = {"dus": ns.lax.dynamic_update_slice(x, x[:1] * 2, (1, 0))}
        if x.dtype != I64:
            out["at_add"] = x.at[1].add(x[0])
        return out

    x = np.ones((3, 4), dt) if dt == I64 else np.arange(12, dtype=dt).reshape(3, 4)
    with backend_env(backend):
        got = jit_for(backend, functools.partial(f, FX))(*on_backend(backend, (x,)))
    assert_same_dicts(
        np_dict(got),
        {k: np.asarray(v) for k, v in jax.jit(functools.partial(f, JX))(x).items()},
        "dus with constant starts vs jax",
    )


def _nested_scan(ns, x):
    def outer(c, row):
        inner_c, ys = ns.lax.scan(lambda ci, v: (ci * 0.5 + v, ci), c, row)
        return inner_c, ns.np.sum(ys)

    return ns.lax.scan(outer, np.float32(0), x)


def _cond_in_scan(ns, x):
    def body(c, row):
        c = ns.lax.cond(ns.np.sum(row) > 2, lambda a: a * 2.0 + row, lambda a: a - 1.0, c)
        return c, ns.np.sum(c)

    return ns.lax.scan(body, ns.np.zeros(4, x.dtype), x)


def _while_in_scan(ns, x):
    def body(c, row):
        r, k = ns.lax.while_loop(
            lambda s: s[1] < 3, lambda s: (s[0] * 1.5 + 1.0, s[1] + 1), (row, np.int32(0))
        )
        return c + r, k

    return ns.lax.scan(body, ns.np.zeros(4, x.dtype), x)


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("fn", [_nested_scan, _cond_in_scan, _while_in_scan])
def test_nested_control_flow(fn, backend):
    x = np.arange(12, dtype=F32).reshape(3, 4) / 5
    with backend_env(backend):
        got = jit_for(backend, functools.partial(fn, FX))(*on_backend(backend, (x,)))
    want = jax.jit(functools.partial(fn, JX))(x)
    for g, w in zip(functx.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        assert_same(to_np(g), w, fn.__name__, tol=10.0)


# --- fusion: kernel counts of the compiled programs (both compiled backends) -----------------
def _ln_grad(ns, x, g, b, dy):
    return ns.grad(lambda x, g, b: ns.np.sum(_layer_norm(ns, x, g, b) * dy), argnums=(0, 1, 2))(
        x, g, b
    )


def _linrec_grad(ns, a, b):
    comb = _linrec_combine(ns)
    return ns.grad(
        lambda a, b: ns.np.sum(ns.lax.associative_scan(comb, (a, b))[1] ** 2), argnums=(0, 1)
    )(a, b)


_FX8 = np.random.default_rng(7).standard_normal((8, 33)).astype(F32)
_G33 = np.random.default_rng(8).standard_normal(33).astype(F32)
_A = np.random.default_rng(9).uniform(0.5, 1.0, (40, 3)).astype(F32)
# name -> (fn(ns, *args), args, kernels: the exact count, tolerance scale)
FUSION = {
    "elementwise_chain": (
        lambda ns, x, y: (
            ns.np.exp(ns.np.sin(x) * 2.0 + 1.0) / (1.0 + y * y)
            - ns.np.tanh(x * y)
            + ns.np.maximum(x, 0.0)
        ),
        (_FX8, _FX8[::-1]),
        1,
        4,
    ),
    "views": (
        lambda ns, x: (
            ns.np.reshape(ns.lax.transpose(x, (1, 0))[::2] * 2.0, (8, 17))
            + x[:, :17]
            + x[0][None, :17]
        ),
        (_FX8,),
        1,
        1,
    ),
    "softmax": (lambda ns, x: ns.nn.softmax(x, axis=-1), (_FX8,), 1, 2),
    "layer_norm": (lambda ns, x, g: _layer_norm(ns, x, g, g * 0.5), (_FX8, _G33), 1, 8),
    "same_rows_share": (
        lambda ns, x: (ns.np.sum(x, 1), ns.np.max(x, 1), ns.np.min(x * 2.0, 1)),
        (_FX8,),
        1,
        2,
    ),
    "argmax_logsumexp": (
        lambda ns, x: (ns.np.argmax(x, 1), ns.nn.logsumexp(x, axis=1)),
        (_FX8,),
        1,
        2,
    ),
    "gelu": (lambda ns, x: ns.nn.gelu(x), (_FX8,), 1, 2),
    "matmul_bias_relu": (
        lambda ns, x, w: ns.nn.relu(x @ w + 1.0),
        (_FX8, _FX8.T[:, :5].copy()),
        2,
        8,
    ),
    "layer_norm_grad": (_ln_grad, (_FX8, _G33, _G33, _FX8[::-1].copy()), 2, 50),
    "linrec_grad": (_linrec_grad, (_A, _A[::-1] - 0.7), 2, 50),
}


@pytest.mark.parametrize("backend", ["cpp", "triton"])
@pytest.mark.parametrize("name", sorted(FUSION))
def test_fusion_kernel_counts(backend, name):
    """``lower(...).kernel_count()`` proves fusion (softmax and layer norm: one kernel; the
    linear-recurrence gradient: two scans, the pointwise tail in the second), and the values
    agree with the interpreter and JAX."""
    fn, args, count, tol = FUSION[name]
    jf = jit_for(backend, functools.partial(fn, FX))
    with backend_env(backend):
        placed = on_backend(backend, args)
        lowered = jf.lower(*placed)
        got = [to_np(v) for v in functx.tree_util.tree_leaves(jf(*placed))]
    text = lowered.executable.kernels_text
    assert lowered.kernel_count() == count, text
    want = functx.tree_util.tree_leaves(fn(FX, *to_fx(args)))
    ref = jax.tree_util.tree_leaves(jax.jit(functools.partial(fn, JX))(*args))
    for i, (g, w, r) in enumerate(zip(got, want, ref)):
        assert_same(g, np.asarray(w), f"{name} output {i}: {backend} vs eager", tol)
        assert_same(
            g, np.asarray(r), f"{name} output {i}: {backend} vs jax", tol, check_dtype=False
        )


def test_every_primitive_lowers_for_triton_or_names_itself():
    """Each primitive of the registry either has a lowering (and then some case above runs it on
    the Triton backend: ``test_suite_covers_every_lowering``), or ``jit(backend="triton")``
    raises ``UnsupportedError`` naming it; and an element operation Triton cannot do names
    itself too."""
    from functx.errors import UnsupportedError

    missing = sorted(n for n, p in P.registry.items() if p not in lower.lowerings)

    @functx.custom_vjp
    def vjp_only(x):
        return fnp.sin(x)

    vjp_only.defvjp(lambda x: (fnp.sin(x), x), lambda r, g: (g * fnp.cos(r),))
    provokers = {"custom_lin": lambda x: functx.jvp(vjp_only, (x,), (x,))}
    provokers["rng_uniform"] = lambda x: flax.rng_uniform(x[0], x[1], (2,))
    assert set(missing) <= set(provokers), f"no lowering and no provoker: {missing}"
    x = np.linspace(-1, 1, 4).astype(F32)
    with backend_env("triton"):
        for name in missing:
            with pytest.raises(UnsupportedError, match=name):
                functx.jit(provokers[name], backend="triton")(*on_backend("triton", (x,)))
        with pytest.raises(UnsupportedError, match="nextafter"):
            h = on_backend("triton", (x.astype(F16),))
            functx.jit(lambda a: flax.nextafter(a, a * 2), backend="triton")(*h)
