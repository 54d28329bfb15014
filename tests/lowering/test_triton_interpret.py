"""The Triton backend (``functx/lowering/triton.py``) under Triton's CPU interpreter.

``TRITON_INTERPRET=1`` is set before triton is imported, so every generated ``@triton.jit`` kernel
runs on NumPy (slowly: shapes are tiny, and the block limits are small so that reductions and
scans loop over several chunks). Each case is written once against a namespace ``ns`` (functx or
JAX, as in ``test_backend_suite.py``) and the Triton results are compared with the eager
interpreter and with ``jax.jit``. Kernel counts prove that softmax, layer norm and logsumexp stay
one kernel. With a GPU, ``TRITON_INTERPRET=0 pytest tests/lowering/test_triton_interpret.py`` runs
the same tests on it.
"""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import functools  # noqa: E402
import math  # noqa: E402
from types import SimpleNamespace  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

import functx  # noqa: E402
import functx.lax as flax  # noqa: E402
import functx.nn as fnn  # noqa: E402
import functx.numpy as fnp  # noqa: E402
from functx.errors import UnsupportedError  # noqa: E402
from functx.lowering.triton import Blocks, compile_triton  # noqa: E402
from functx.transforms import passes  # noqa: E402

jax.config.update("jax_enable_x64", True)

# the interpreter evaluates masked-off lanes and NaN inputs with NumPy, which warns about them
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

FX = SimpleNamespace(np=fnp, lax=flax, nn=fnn, grad=functx.grad, vmap=functx.vmap,
                     associative_scan=flax.associative_scan)
JX = SimpleNamespace(np=jnp, lax=jax.lax, nn=jax.nn, grad=jax.grad, vmap=jax.vmap,
                     associative_scan=jax.lax.associative_scan)

F32, F64, I32, BOOL = (np.dtype(t) for t in (np.float32, np.float64, np.int32, np.bool_))
NAN, INF = math.nan, math.inf
TOL = {F64: (1e-12, 1e-13), F32: (2e-6, 1e-6)}
# small blocks: reductions and scans of a few dozen elements take several chunks
SMALL = Blocks(pointwise=64, reduce_inner=16, scan=16, elems=256)
RNG = np.random.default_rng(0)
INTERPRET = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
DEVICE = "cuda" if not INTERPRET and torch.cuda.is_available() else "cpu"


def to_numpy(t):
    t = t.detach().cpu()
    return t.float().numpy().astype(np.float32) if t.dtype == torch.bfloat16 else t.numpy()


def assert_same(got, want, what, tol=1.0, check_dtype=True):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    if check_dtype:
        assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} != {want.dtype}"
    else:  # JAX runs with x64 enabled: its defaults (argmax's int64, literals) are wider
        want = want.astype(got.dtype)
    if want.dtype.kind == "f":
        rtol, atol = TOL.get(want.dtype, TOL[F32])
        np.testing.assert_allclose(got, want, rtol=rtol * tol, atol=atol * tol, equal_nan=True,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def check(fn, *args, tol=1.0, jax_tol=None, blocks=SMALL, vs_jax=True):
    """Compile ``fn(FX, *args)`` to Triton, run it, compare with eager functx and JAX; returns
    the executable (for kernel counts)."""
    f = functools.partial(fn, FX)
    closed = passes.simplify(functx.make_jaxpr(f)(*args))
    exe = compile_triton(closed, blocks)
    leaves = functx.tree_util.tree_leaves(args)
    got = [to_numpy(t) for t in exe(*leaves)]
    eager = functx.tree_util.tree_leaves(
        f(*functx.tree_util.tree_map(fnp.asarray, args)))
    assert len(got) == len(eager)
    for i, (g, w) in enumerate(zip(got, eager)):
        assert_same(g, np.asarray(w), f"output {i} vs eager", tol)
    if vs_jax:
        want = jax.tree.leaves(jax.jit(functools.partial(fn, JX))(*args))
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, np.asarray(w), f"output {i} vs JAX", jax_tol or tol,
                        check_dtype=False)
    return exe


# --- elementwise ---------------------------------------------------------------------------------
SPECIAL = [-3.5, -2.0, -1.0, -0.5, -0.0, 0.0, 0.3, 0.5, 1.0, 2.5, 100.0, NAN, INF, -INF, 1e-7]


def _float_chain(ns, x, y):
    lax, np_ = ns.lax, ns.np
    return {
        "chain": np_.exp(np_.sin(x) * 2.0 + 1.0) / (1.0 + y * y) - np_.tanh(x * y),
        "max": lax.max(x, y), "min": lax.min(x, y),  # NaN wins, max(-0, 0) = 0
        "tanh": lax.tanh(x), "logistic": lax.logistic(x), "log1p": lax.log1p(x),
        "expm1": lax.expm1(x), "erf": lax.erf(x), "sign": lax.sign(x), "abs": lax.abs(x),
        "round": lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN),
        "round_away": lax.round(x, lax.RoundingMethod.AWAY_FROM_ZERO),
        "rsqrt": lax.rsqrt(y), "sqrt": lax.sqrt(x), "floor": lax.floor(x),
        "pow": lax.pow(x, y), "rem": lax.rem(x, y), "atan2": lax.atan2(x, y),
        "ipow": lax.integer_pow(x, 3) - lax.integer_pow(y, -2),
        "where": np_.where(x > y, x, 7.0), "is_finite": lax.is_finite(x),
        # constants only: typed constants, not float32 literals
        "const_where": np_.where(x > 0.0, np.asarray(0.1, x.dtype), np.asarray(1 / 3, x.dtype)),
        "cmp": (x < y) | (x >= 2.0),
    }


def _special_pair(dt):
    x, y = np.meshgrid(np.array(SPECIAL, dt), np.array([-2.0, -0.0, 0.0, 0.5, 3.0, NAN], dt),
                       indexing="ij")
    return x.reshape(-1), y.reshape(-1)


@pytest.mark.parametrize("dt", [F32, F64], ids=["f32", "f64"])
def test_elementwise_floats_match_eager_and_jax(dt):
    exe = check(_float_chain, *_special_pair(dt), tol=4.0)
    assert exe.kernel_count() == 1  # every output of one shape: one kernel


def test_float64_literals_keep_their_precision():
    x = np.linspace(-1, 1, 9)
    check(lambda ns, x: {"a": x * 0.1 + 1.0 / 3.0,
                         "b": ns.np.where(x > 0, np.float64(0.1), np.float64(1e-300))}, x, tol=0.01)


I32_X = np.array([5, -7, -(2**31), 3, 0, 2**31 - 1, -1, 9, 100, -100, 7, -(2**31)], I32)
I32_Y = np.array([0, 2, -1, -2, 0, 1, -1, 3, -7, 7, 7, 1], I32)


def test_int32_division_and_saturating_conversion():
    def f(ns, x, y, f):
        lax = ns.lax
        cv = lax.convert_element_type
        return {"div": lax.div(x, y), "rem": lax.rem(x, y), "max": lax.max(x, y),
                "min": lax.min(x, y), "abs": lax.abs(x), "neg": lax.neg(x), "sign": lax.sign(x),
                "ipow": lax.integer_pow(x, 3),
                "not": lax.bitwise_not(x), "xor": lax.bitwise_xor(x, y),
                "to_f32": cv(x, np.float32), "from_f32": cv(f, np.int32),
                "from_f32_u8": cv(f, np.uint8), "from_f32_bool": cv(f, np.bool_)}

    conv = np.array([-1.5, 0.5, 2.7, 3e9, -3e9, NAN, INF, -INF, 2.0**31, -(2.0**31), 255.5,
                     -0.0], F32)
    check(f, I32_X, I32_Y, conv)
    # integer pow (JAX's lax.pow takes floats only): negative exponents, 0 ** 0, wrapping
    check(lambda ns, x, y: ns.lax.pow(x, y), I32_X, I32_Y, vs_jax=False)


def test_bool_ops_and_reductions():
    p = np.array([[True, False, True], [False, False, False], [True, True, True]])
    q = np.array([[True, True, False], [False, True, False], [True, False, True]])

    def f(ns, p, q):
        lax = ns.lax
        return {"and": p & q, "or": p | q, "xor": p ^ q, "not": ~p, "eq": p == q,
                "sel": ns.np.where(p, 1.5, -2.0), "to_i32": lax.convert_element_type(q, np.int32),
                "any": ns.np.any(p, axis=1), "all": ns.np.all(q, axis=0),
                "max": lax.max(p, q)}

    check(f, p, q)


# --- views ----------------------------------------------------------------------------------------
def test_views_are_index_expressions():
    x = RNG.standard_normal((4, 6)).astype(F32)
    v = RNG.standard_normal(6).astype(F32)

    def f(ns, x, v):
        lax, np_ = ns.lax, ns.np
        return {"bcast": x + v[None, :] * 2.0, "t": x.T * 3.0, "slice": x[1:, ::2] - 1.0,
                "rev": lax.rev(x, (1,)) + 0.5,
                "pad": lax.pad(x, np.float32(-9.0), ((1, -1, 0), (2, 1, 1))),
                "concat": lax.concatenate([x, x[:, :2] * 2.0], 1),
                "reshape": np_.reshape(x.T, (3, 8)) + 1.0,
                "outer": np_.maximum(v[:, None], v[None, :])}

    check(f, x, v)


# --- reductions -----------------------------------------------------------------------------------
@pytest.mark.parametrize("split", [True, False], ids=["split", "rows-only"])
def test_reductions_with_nan_ties_and_argmax(split):
    x = np.array([[1.0, 3.0, 3.0, -2.0, 0.5] * 5,
                  [1.0, NAN, 2.0, NAN, 9.0] * 5,
                  [-INF, -INF, -INF, -INF, -INF] * 5,
                  [0.0, -0.0, 0.0, -1.0, -0.0] * 5], F32)  # 25 columns: two chunks of 16
    xi = RNG.integers(-5, 5, (4, 25)).astype(I32)

    def f(ns, x, xi):
        np_, lax = ns.np, ns.lax
        return {"sum": np_.sum(x, axis=1), "max": np_.max(x, axis=1), "min": np_.min(x, axis=1),
                "max0": np_.max(x, axis=0), "sum_all": np_.sum(np_.where(x == x, x, 0.0)),
                "prod": lax.reduce_prod(x[:, :7] + 2.0, (1,)), "argmax": np_.argmax(x, axis=1),
                "argmin": np_.argmin(x, axis=1), "argmax0": np_.argmax(x, axis=0),
                "argmax_i": np_.argmax(xi, axis=1), "argmin_i": np_.argmin(xi, axis=1),
                "isum": np_.sum(xi, axis=1), "imax": np_.max(xi, axis=0)}

    # with the split, single-pass reductions write partials over chunks, then fold them
    blocks = SMALL if split else Blocks(pointwise=64, reduce_inner=16, scan=16, elems=256,
                                        min_programs=1)
    exe = check(f, x, xi, blocks=blocks)
    assert ("_part[" in exe.source) == split


def _layer_norm(ns, x, g, b):
    mean = ns.np.mean(x, axis=-1, keepdims=True)
    var = ns.np.mean((x - mean) ** 2, axis=-1, keepdims=True)
    return (x - mean) / ns.np.sqrt(var + 1e-5) * g + b


@pytest.mark.parametrize("blocks", [SMALL, Blocks()], ids=["chunked", "one-chunk"])
def test_softmax_layer_norm_logsumexp_are_one_kernel_each(blocks):
    x = RNG.standard_normal((5, 37)).astype(F32)
    g, b = RNG.standard_normal(37).astype(F32), RNG.standard_normal(37).astype(F32)
    for fn, args in [(lambda ns, x: ns.nn.softmax(x, axis=-1), (x,)), (_layer_norm, (x, g, b)),
                     (lambda ns, x: ns.nn.logsumexp(x, axis=-1), (x,))]:
        exe = check(fn, *args, tol=2.0, blocks=blocks)
        assert exe.kernel_count() == 1, exe.kernels_text
        assert exe.source.count("@triton.jit\ndef k") == 1


def test_gelu():
    x = np.linspace(-6, 6, 50).astype(F32)
    check(lambda ns, x: {"tanh": ns.nn.gelu(x), "erf": ns.nn.gelu(x, approximate=False)}, x,
          tol=2.0)


# --- matrix products ------------------------------------------------------------------------------
def test_matmul_with_fused_epilogue():
    a = RNG.standard_normal((5, 7)).astype(F32)
    w = RNG.standard_normal((7, 3)).astype(F32)
    bias = RNG.standard_normal(3).astype(F32)
    bt = RNG.standard_normal((2, 4, 7)).astype(F64)

    def f(ns, a, w, bias, bt):
        np_ = ns.np
        return {"mlp": np_.maximum(a @ w + bias, 0.0), "at": a.T @ a,
                "batched": np_.einsum("bij,bkj->bik", bt, bt)}

    check(f, a, w, bias, bt, tol=4.0)


# --- scans ----------------------------------------------------------------------------------------
def _linrec(p, q):
    return p[0] * q[0], q[0] * p[1] + q[1]


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
def test_linear_recurrence_scan_and_its_gradient(reverse):
    n = 37  # three chunks of 16, the last one partial
    a, b = RNG.uniform(-1, 1, (n, 3)), RNG.standard_normal((n, 3))

    def scan(ns, a, b):
        return ns.associative_scan(_linrec, (a, b), reverse=reverse)

    def grads(ns, a, b):
        def loss(a, b):
            return ns.np.sum(ns.associative_scan(_linrec, (a, b), reverse=reverse)[1] ** 2)

        return ns.grad(loss, argnums=(0, 1))(a, b)

    exe = check(scan, a, b)
    assert "tl.associative_scan" in exe.source
    check(grads, a, b, tol=10.0)
    # along a middle axis, float32, lanes on both sides of the axis
    a3 = RNG.uniform(-1, 1, (2, n, 2)).astype(F32)
    b3 = RNG.standard_normal((2, n, 2)).astype(F32)
    check(lambda ns, a, b: ns.associative_scan(_linrec, (a, b), reverse=reverse, axis=1), a3, b3,
          tol=4.0)


def test_cumulative_ops():
    x = RNG.standard_normal((3, 21)).astype(F32)
    x[1, 4] = NAN

    def f(ns, x):
        np_, lax = ns.np, ns.lax
        return {"cumsum": np_.cumsum(x, axis=1), "cumsum_r": lax.cumsum(x, axis=1, reverse=True),
                "cummax": lax.cummax(x, axis=1), "cumprod0": lax.cumprod(x, axis=0),
                "cumlse": lax.cumlogsumexp(x, axis=1)}

    check(f, x, tol=4.0)


# --- transforms under jit -------------------------------------------------------------------------
def test_per_sample_gradients_of_a_tiny_mlp():
    params = {"w1": RNG.standard_normal((4, 8)).astype(F32) * 0.5,
              "b1": np.zeros(8, F32), "w2": RNG.standard_normal((8, 1)).astype(F32) * 0.5}
    xs, ys = RNG.standard_normal((6, 4)).astype(F32), RNG.standard_normal((6, 1)).astype(F32)

    def per_sample(ns, params, xs, ys):
        def loss(p, x, y):
            h = ns.np.tanh(x @ p["w1"] + p["b1"])
            return ns.np.sum((h @ p["w2"] - y) ** 2)

        return ns.vmap(ns.grad(loss), in_axes=(None, 0, 0))(params, xs, ys)

    check(per_sample, params, xs, ys, tol=4.0)


# --- control flow, scatters, generic reductions ---------------------------------------------------
def test_nested_control_flow_runs_sub_programs_from_the_host():
    x = (np.arange(12, dtype=F32).reshape(3, 4) / 5).astype(F32)

    def f(ns, x):
        lax, np_ = ns.lax, ns.np

        def outer(c, row):  # a scan in a scan
            inner_c, ys = lax.scan(lambda ci, v: (ci * 0.5 + v, ci), c, row)
            return inner_c, np_.sum(ys)

        def cond_body(c, row):  # a cond in a scan
            c = lax.cond(np_.sum(row) > 2, lambda a: a * 2.0 + row, lambda a: a - 1.0, c)
            return c, np_.sum(c)

        def while_body(c, row):  # a while_loop in a reverse scan
            r, k = lax.while_loop(lambda s: s[1] < 3, lambda s: (s[0] * 1.5 + 1.0, s[1] + 1),
                                  (row, np.int32(0)))
            return c + r, k

        return {"nested": lax.scan(outer, np.float32(0), x),
                "cond": lax.scan(cond_body, np_.zeros(4, x.dtype), x),
                "while": lax.scan(while_body, np_.zeros(4, x.dtype), x, reverse=True),
                "switch": lax.switch(np.int32(1), [lambda v: v + 1.0, lambda v: v * v], x[0])}

    exe = check(f, x, tol=10.0)
    assert "def _sub" in exe.source


@pytest.mark.parametrize("atomic", [True, False], ids=["atomic-add", "ordered-add"])
def test_scatters_dynamic_update_slice_and_generic_reduce(atomic):
    w = RNG.standard_normal((6, 3)).astype(F32)
    idx = np.array([4, 1, 4, 0, 4, 2], np.int32)  # duplicates: updates combine in order
    start = np.array(2, np.int32)

    def f(ns, w, idx, start):
        lax, np_ = ns.lax, ns.np

        def loss(w):  # the gradient of a gather is a scatter-add with duplicate indices
            return np_.sum(w[idx] ** 2 * 0.5)

        return {"grad": ns.grad(loss)(w),
                "add": w.at[idx].add(1.0), "max": w.at[idx].max(0.5),
                "mul": w.at[idx].multiply(2.0),
                "set": w.at[np.array([5, 0, 2])].set(-1.0),
                "dus": lax.dynamic_update_slice(w, w[:2] * 10.0, (start, np.int32(1))),
                "logaddexp": lax.reduce(w, np.float32(-INF), np_.logaddexp, (0,)),
                "sum_max": lax.reduce((w, w * 2.0), (np.float32(0), np.float32(-INF)),
                                      lambda a, b: (a[0] + b[0], lax.max(a[1], b[1])), (1,))}

    blocks = Blocks(pointwise=64, reduce_inner=16, scan=16, elems=256, atomic_scatter_add=atomic)
    exe = check(f, w, idx, start, tol=4.0, blocks=blocks)
    assert ("tl.atomic_add" in exe.source) == atomic


def test_an_op_without_triton_names_itself():
    x = np.ones(3, np.float16)
    closed = functx.make_jaxpr(lambda x: flax.nextafter(x, x * 2))(x)
    with pytest.raises(UnsupportedError, match="nextafter"):
        compile_triton(closed)


def test_as_text_shows_kernels_and_host_code():
    x = np.ones((2, 3), F32)
    exe = compile_triton(functx.make_jaxpr(lambda x: fnp.exp(x) / fnp.sum(fnp.exp(x)))(x))
    text = exe.as_text()
    assert text.startswith("# kernels\nkernel 0: reduce")
    assert "@triton.jit" in text and "def run(inputs, consts, outputs):" in text
    (y,) = exe(torch.ones(2, 3, device=DEVICE))  # torch tensors in, torch tensors out
    assert isinstance(y, torch.Tensor) and y.shape == (2, 3) and y.device.type == DEVICE
    np.testing.assert_allclose(to_numpy(y), np.full((2, 3), 1 / 6), rtol=1e-6)


def test_int64_index_arithmetic():
    """What programs of 2**31 elements or more get (forced here on tiny shapes)."""
    x = RNG.standard_normal((3, 21)).astype(F32)
    big = Blocks(pointwise=64, reduce_inner=16, scan=16, elems=256, int64_index=True)
    exe = check(lambda ns, x: {"sm": ns.nn.softmax(x * 2.0, axis=0), "am": ns.np.argmax(x, 1),
                               "cs": ns.np.cumsum(x, axis=1)}, x, blocks=big, tol=2.0)
    assert "tl.program_id(0).to(tl.int64)" in exe.source


# --- cases of the shared backend suite (tests/lowering/test_backend_suite.py) ---------------------
SUITE_CASES = ["small_int_dtypes", "convert", "low_precision", "iota", "select_n_int",
               "generic_reduce", "gather_scatter", "control_flow"]


@pytest.mark.parametrize("name", SUITE_CASES)
def test_backend_suite_case(name):
    """Dtypes this file does not otherwise cover (u8, i8, u32, i64, f16, bf16), gathers and every
    scatter mode, generic reductions and control flow, against the eager interpreter and JAX
    with the suite's own tolerances."""
    suite = pytest.importorskip("tests.lowering.test_backend_suite")
    if name not in suite.CASES:
        pytest.skip(f"no case {name!r} in the backend suite")
    c = suite.CASES[name]
    args = suite.args_of(c)
    f = functools.partial(c.fn, suite.FX)
    closed, _, out_tree, _ = functx.tracing.trace_pytree(f, args)
    exe = compile_triton(passes.simplify(closed), SMALL)
    outs = [t.detach().cpu() for t in exe(*functx.tree_util.tree_leaves(args))]
    outs = [t.view(torch.uint16).numpy().view(suite.BF16) if t.dtype == torch.bfloat16
            else t.numpy() for t in outs]
    got = functx.tree_util.tree_unflatten(out_tree, outs)
    suite.assert_same_dicts(got, suite.eager_result(name), f"{name}: triton vs eager", c.tol)
    if c.vs_jax:
        suite.assert_same_dicts(got, suite.jax_result(name), f"{name}: triton vs JAX",
                                c.jax_tol or c.tol)
