"""``functx.numpy`` and ``functx.numpy.linalg`` against ``jax.numpy`` (the reference).

Every public function runs on inputs drawn by hypothesis (shapes including 0-d and size-0, dtypes,
values with infinities and NaNs) in functx and in JAX; the values, the result dtype and the shape
must agree. Each function is also traced once with ``functx.make_jaxpr`` on the same input: the
Jaxpr must print and type-check, and evaluating it must reproduce the eager result exactly.

JAX compiles every new function, shape and dtype, which is what costs time here; so the reference
results come from a few compilations (``Ref``): the cases that share inputs form a group, compiled
once into one XLA computation that returns every case's result. Elementwise functions run on inputs
flattened and padded to a fixed length, so that every drawn shape reuses one compilation; their
result shape and dtype come from ``jax.eval_shape`` on the drawn shape.

conftest enables x64 mode in both JAX and functx (``jax_enable_x64``), so the default dtypes are
64-bit in both and the dtypes must agree exactly; tests/test_x64.py covers the default mode.
"""

from __future__ import annotations

import functools
import inspect
import os
import pathlib

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import optree
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import functx
import functx.numpy as fnp
from functx.errors import FunctxTypeError
from functx.interpreter import jaxpr_as_fun

BF16, F16, F32, F64 = (np.dtype(d) for d in (ml_dtypes.bfloat16, "float16", "float32", "float64"))
I8, U8, I32, I64, U32, BOOL = (
    np.dtype(d) for d in ("int8", "uint8", "int32", "int64", "uint32", "bool")
)
FLOATS = (F16, BF16, F32, F64)
MAIN_DTYPES = (F32, F64, I32, BOOL)
RTOL = {F16: 1e-2, BF16: 1e-2, F32: 1e-5, F64: 1e-12}
_THIS_FILE = os.path.abspath(__file__)


# --- Comparison helpers --------------------------------------------------------------------------
_NARROW = {I64: I32, np.dtype("uint64"): U32, F64: F32}


def functx_dtype(jax_dtype, in_dtypes) -> np.dtype:
    """The dtype functx must give where JAX gives ``jax_dtype``: the same one (both run with
    ``jax_enable_x64`` in the same mode). ``in_dtypes`` is kept for the callers."""
    return np.dtype(jax_dtype)


def _as_f64(a):
    return np.asarray(a).astype(np.float64)


def assert_close(actual, expected, dtype=None, rtol=None):
    """Values of ``actual`` (functx's dtype) against ``expected``: per-dtype tolerance for floats
    (NaN matches NaN, infinities must be equal), exact for integers and bools."""
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    dtype = actual.dtype if dtype is None else np.dtype(dtype)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if dtype in FLOATS:
        tol = RTOL[dtype] if rtol is None else rtol
        np.testing.assert_allclose(
            _as_f64(actual), _as_f64(expected), rtol=tol, atol=tol, equal_nan=True
        )
    else:
        np.testing.assert_array_equal(
            actual.astype(np.int64) if dtype != BOOL else actual,
            expected.astype(np.int64) if dtype != BOOL else expected,
        )


def _leaves(tree):
    return optree.tree_leaves(tree, none_is_leaf=False, namespace="functx")


def assert_matches(out, ref, in_dtypes, rtol=None):
    """functx's result ``out`` against JAX's ``ref``: same structure, shapes, dtypes (functx's
    documented default where JAX uses its x64 default) and values."""
    outs, refs = _leaves(out), _leaves(ref)
    assert len(outs) == len(refs), (len(outs), len(refs))
    for o, r in zip(outs, refs):
        if isinstance(o, (int, float, bool, tuple)) and not isinstance(o, np.generic):
            assert o == r, (o, r)
            continue
        o, r = np.asarray(o), np.asarray(r)
        want = functx_dtype(r.dtype, in_dtypes)
        assert o.dtype == want, f"dtype {o.dtype}, JAX gives {r.dtype} (functx: {want})"
        assert o.shape == r.shape, f"shape {o.shape}, JAX gives {r.shape}"
        assert_close(o, r, o.dtype, rtol)


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    if a.dtype in FLOATS:
        np.testing.assert_array_equal(_as_f64(a), _as_f64(b))
    else:
        np.testing.assert_array_equal(a, b)


def check_traced(fn, *args):
    """Trace ``fn`` on ``args``: the Jaxpr prints and type-checks, and evaluating it gives the
    eager result exactly."""
    eager = fn(*args)
    closed = functx.make_jaxpr(fn)(*args)
    text = str(closed)
    assert text.startswith("{ lambda"), text
    functx.typecheck_jaxpr(closed)
    outs = jaxpr_as_fun(closed)(*args)
    leaves = _leaves(eager)
    assert len(outs) == len(leaves)
    for o, e in zip(outs, leaves):
        _same(o, e)


# --- The JAX reference: one compilation per group of cases ---------------------------------------
# XLA's CPU compiler at -O0 with its older elemental emitters compiles ~3x faster; the results
# agree with the default pipeline to an ulp (checked when this suite was written).
_COMPILER_OPTIONS = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}


def _compile(lowered):
    try:
        return lowered.compile(_COMPILER_OPTIONS)
    except Exception:  # noqa: BLE001 - an XLA without these options: compile as usual
        return lowered.compile()


class Ref:
    """JAX's results for groups of cases. A group has input specs (shape, dtype) and cases, each a
    function of all the group's inputs; the group is traced once and compiled into one
    computation returning every case JAX accepts. ``rejection`` gives the error of a case JAX
    refuses (it raises while tracing)."""

    def __init__(self):
        self.groups: dict = {}
        self._ready: dict = {}

    def case(self, group, specs, key, fn):
        specs = tuple((tuple(s), np.dtype(d)) for s, d in specs)
        g = self.groups.setdefault(group, (specs, {}))
        assert g[0] == specs, (group, g[0], specs)
        g[1][key] = fn

    def _prepare(self, group):
        if group not in self._ready:
            specs, cases = self.groups[group]
            index, rejected = {}, {}

            def all_cases(*args):
                outs = []
                for k, fn in cases.items():
                    try:
                        outs.append(fn(*args))
                    except Exception as e:  # noqa: BLE001 - any refusal counts
                        rejected[k] = e
                        continue
                    index[k] = len(outs) - 1
                return outs

            sds = [jax.ShapeDtypeStruct(s, d) for s, d in specs]
            self._ready[group] = (index, rejected, _compile(jax.jit(all_cases).lower(*sds)))
        return self._ready[group]

    def accepts(self, group, key) -> bool:
        return key in self._prepare(group)[0]

    def rejection(self, group, key):
        return self._prepare(group)[1].get(key)

    def __call__(self, group, key, *args):
        index, rejected, compiled = self._prepare(group)
        assert key in index, f"JAX rejects {key} for {group}: {rejected.get(key)}"
        return compiled(*args)[index[key]]


REF = Ref()


# --- Hypothesis strategies -----------------------------------------------------------------------
SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan]


def elements(dtype, lo=-10.0, hi=10.0, specials=True):
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return st.booleans()
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return st.integers(max(int(lo), info.min), min(int(hi), info.max))
    width = {F16: 16, BF16: 32, F32: 32, F64: 64}[dtype]
    fl = st.floats(lo, hi, width=width, allow_subnormal=False)
    return st.one_of(fl, fl, fl, st.sampled_from(SPECIALS)) if specials else fl


def arrays(dtype, shape, **kw):
    """Arrays of ``dtype`` (bfloat16 drawn as float32 and rounded)."""
    dtype = np.dtype(dtype)
    base = F32 if dtype == BF16 else dtype
    return hnp.arrays(base, shape, elements=elements(dtype, **kw)).map(lambda a: a.astype(dtype))


N = 64  # the padded length of elementwise inputs (max_side 4, max_dims 3)
SHAPES = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)
_PAD = {BOOL: True}


def _pad(x):
    flat = np.asarray(x).reshape(-1)
    return np.concatenate([flat, np.full(N - flat.size, _PAD.get(flat.dtype, 1), flat.dtype)])


# --- Elementwise unary ---------------------------------------------------------------------------
UNARY = """abs absolute acos acosh arccos arccosh arcsin arcsinh arctan arctanh asin asinh atan
atanh bitwise_invert bitwise_not cbrt ceil cos cosh deg2rad degrees exp exp2 expm1 fix floor invert
isfinite isinf isnan isneginf isposinf log log10 log1p log2 logical_not negative positive rad2deg
radians reciprocal rint round around sign signbit sin sinc sinh sqrt square tan tanh trunc
nan_to_num""".split()
# functx names JAX dropped: compared with the function JAX documents as the replacement.
JNP_NAME = {"fix": "trunc", "row_stack": "vstack"}
# f16/bf16 run for this sample of the elementwise functions.
LOW_PRECISION = set(
    """abs exp log tanh sqrt floor negative square reciprocal isnan rint sign expm1
log1p sin arctan2 add multiply divide maximum power logaddexp hypot equal floor_divide
subtract""".split()
)
# Input ranges where the default [-10, 10] would only test overflow or conditioning.
DOMAIN = {
    "tan": (-1.5, 1.5),
    "arccosh": (0.5, 10.0),
    "acosh": (0.5, 10.0),
    **{n: (-1.25, 1.25) for n in "arcsin asin arccos acos arctanh atanh".split()},
}


def _jnp(name):
    return getattr(jnp, JNP_NAME.get(name, name))


def _unary_dtypes(name):
    return MAIN_DTYPES + ((F16, BF16) if name in LOW_PRECISION else ())


for _name in UNARY:
    for _dt in _unary_dtypes(_name):
        REF.case(("unary", _dt), [((N,), _dt)], _name, _jnp(_name))


@pytest.mark.parametrize("name", UNARY)
@settings(max_examples=10)
@given(data=st.data())
def test_unary(name, data):
    dtypes_ok = [d for d in _unary_dtypes(name) if REF.accepts(("unary", d), name)]
    dt = data.draw(st.sampled_from(dtypes_ok), label="dtype")
    x = data.draw(
        arrays(
            dt,
            data.draw(SHAPES, label="shape"),
            **dict(zip(("lo", "hi"), DOMAIN.get(name, (-10.0, 10.0)))),
        ),
        label="x",
    )
    fn = getattr(fnp, name)
    out = fn(x)
    # Elementwise: JAX's result on the padded input, cut back to the drawn shape.
    ref = np.asarray(REF(("unary", dt), name, _pad(x)))[: x.size].reshape(x.shape)
    assert_matches(out, ref, [dt])
    check_traced(fn, x)


@pytest.mark.parametrize("name", UNARY)
def test_unary_rejected_dtypes(name):
    """Where JAX refuses an input dtype, functx raises too (or documents that it accepts it)."""
    accepted_by_functx_only = {("round", I32), ("around", I32)}
    for dt in MAIN_DTYPES:
        if REF.accepts(("unary", dt), name) or (name, dt) in accepted_by_functx_only:
            continue
        with pytest.raises(TypeError):
            getattr(fnp, name)(np.zeros((2,), dt))


# --- Elementwise binary --------------------------------------------------------------------------
BINARY = """add arctan2 atan2 bitwise_and bitwise_or bitwise_xor copysign divide divmod equal
float_power floor_divide fmax fmin fmod greater greater_equal heaviside hypot less less_equal
logaddexp logaddexp2 logical_and logical_or logical_xor maximum minimum mod multiply nextafter
not_equal pow power remainder subtract true_divide""".split()
# Mixed-dtype pairs exercise the promotion lattice (bool, signed/unsigned, low floats).
MIXED_PAIRS = [
    (F32, I32),
    (I32, F64),
    (BOOL, I32),
    (F16, F32),
    (BF16, F16),
    (I8, U8),
    (U8, I32),
    (BF16, I32),
    (F32, BOOL),
]
MIXED_SAMPLE = set(
    "add subtract multiply true_divide floor_divide maximum power equal arctan2 remainder".split()
)


def _binary_pairs(name):
    pairs = [(d, d) for d in _unary_dtypes(name)]
    return pairs + (MIXED_PAIRS if name in MIXED_SAMPLE else [])


for _name in BINARY:
    for _pair in _binary_pairs(_name):
        REF.case(("binary",) + _pair, [((N,), _pair[0]), ((N,), _pair[1])], _name, _jnp(_name))


@pytest.mark.parametrize("name", BINARY)
@settings(max_examples=10)
@given(data=st.data())
def test_binary(name, data):
    pairs = [p for p in _binary_pairs(name) if REF.accepts(("binary",) + p, name)]
    d1, d2 = data.draw(st.sampled_from(pairs), label="dtypes")
    shapes = data.draw(
        hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4),
        label="shapes",
    )
    x = data.draw(arrays(d1, shapes.input_shapes[0]), label="x")
    y = data.draw(arrays(d2, shapes.input_shapes[1]), label="y")
    if name in ("divide", "true_divide") and BOOL in (d1, d2):
        # XLA's CPU compiler folds convert(bool) / convert(bool) so that 0/0 is 0, not NaN.
        y = np.ones_like(y)
    fn = getattr(fnp, name)
    out = fn(x, y)
    bx, by = np.broadcast_arrays(x, y)
    ref = REF(("binary", d1, d2), name, _pad(bx), _pad(by))
    ref = jax.tree.map(lambda r: np.asarray(r)[: bx.size].reshape(bx.shape), ref)
    assert_matches(out, ref, [d1, d2])
    check_traced(fn, x, y)


# Python scalars are weakly typed: the array's dtype wins (2.5 + f16 is f16, 300 + u8 wraps).
WEAK_OPS = {
    "add": lambda m, x, s: m.add(s, x),
    "true_divide": lambda m, x, s: m.true_divide(x, s),
    "maximum": lambda m, x, s: m.maximum(x, s),
    "power": lambda m, x, s: m.power(s, x),
    "where": lambda m, x, s: m.where(x > 1, x, s),
    "greater": lambda m, x, s: m.greater(x, s),
    "floor_divide": lambda m, x, s: m.floor_divide(x, s),
    "operators": lambda m, x, s: (m.asarray(x) * s - s) / (s + 1),
}
WEAK_SCALARS = [-3, 300, 2.5, True]
WEAK_DTYPES = [F16, BF16, F32, I8, U8, I32, BOOL]
for _op, _f in WEAK_OPS.items():
    for _s in WEAK_SCALARS:
        for _dt in WEAK_DTYPES:
            REF.case(
                ("weak", _dt), [((5,), _dt)], (_op, repr(_s)), functools.partial(_f, jnp, s=_s)
            )


@pytest.mark.parametrize("op", list(WEAK_OPS))
@settings(max_examples=8)
@given(data=st.data())
def test_python_scalar_weak_types(op, data):
    s = data.draw(st.sampled_from(WEAK_SCALARS), label="scalar")
    dts = [d for d in WEAK_DTYPES if REF.accepts(("weak", d), (op, repr(s)))]
    dt = data.draw(st.sampled_from(dts), label="dtype")
    x = data.draw(arrays(dt, (5,), lo=-5, hi=5, specials=False), label="x")
    if op in ("true_divide", "floor_divide", "operators") and dt == BOOL:
        x = np.ones_like(x)
    fn = functools.partial(WEAK_OPS[op], fnp, s=s)
    # A Python float with an integer array gives the default float (float64 with x64 on).
    assert_matches(fn(x), REF(("weak", dt), (op, repr(s)), x), [dt])
    check_traced(fn, x)


@pytest.mark.usefixtures("no_x64")
def test_python_scalars_alone_use_functx_defaults():
    """Python scalars alone give the default mode's defaults (as JAX without x64): weak int32 and
    weak float32 (tests/test_x64.py checks both modes against JAX)."""
    assert fnp.add(1, 2).dtype == I32 and fnp.add(1, 2).weak_type
    assert fnp.multiply(1.5, 2).dtype == F32 and fnp.multiply(1.5, 2).weak_type
    assert fnp.sin(1).dtype == F32 and fnp.sqrt(2.0).dtype == F32
    assert fnp.array([1, 2]).dtype == I32 and fnp.array([1, 2.5]).dtype == F32
    assert fnp.asarray(True).dtype == BOOL
    assert (fnp.asarray(np.ones(3, F16)) + 2.5).dtype == F16
    assert (fnp.asarray(np.ones(3, I8)) + 1000).dtype == I8


def test_reductions_of_python_scalars_are_not_weak():
    # review34: max/min (so ptp, maximum.reduce) kept a Python scalar's weak type; JAX's do not
    for name in ("max", "min", "ptp", "sum", "nanmax", "argmax"):
        for s in (3.0, 2):
            got, want = getattr(fnp, name)(s), getattr(jnp, name)(s)
            assert (got.dtype, got.weak_type) == (want.dtype, want.weak_type), (name, s)


# --- Reductions ----------------------------------------------------------------------------------
REDUCTIONS = """sum mean var std max min amax amin prod argmax argmin any all ptp count_nonzero
nansum nanmean nanmax nanmin average cumsum cumprod cumulative_sum cumulative_prod""".split()
CUMULATIVE = {"cumsum", "cumprod", "cumulative_sum", "cumulative_prod"}
NO_KEEPDIMS = CUMULATIVE | {"average"}
SINGLE_AXIS = CUMULATIVE | {"argmax", "argmin"}
AXES = [None, 0, -1, (0, 2), (), (2, 0, 1)]
# (shape, dtypes) drawn for reductions: a 3-d array, a size-0 one and a 0-d one.
RED_SHAPES = {(2, 3, 4): MAIN_DTYPES, (3, 0, 2): (F32, I32), (): (F32, I32)}


def _red_call(m, name, x, axis, keepdims):
    f = getattr(m, JNP_NAME.get(name, name)) if m is jnp else getattr(m, name)
    if name in NO_KEEPDIMS:
        if keepdims:
            return None
        if name.startswith("cumulative_"):
            return f(x, axis=axis)
        return f(x, axis)
    return f(x, axis=axis, keepdims=keepdims)


for _shape, _dts in RED_SHAPES.items():
    for _dt in _dts:
        for _name in REDUCTIONS:
            for _axis in AXES:
                for _kd in (False, True):
                    if (_name in NO_KEEPDIMS and _kd) or (
                        _name in SINGLE_AXIS and isinstance(_axis, tuple)
                    ):
                        continue
                    REF.case(
                        ("reduce", _shape, _dt),
                        [(_shape, _dt)],
                        (_name, _axis, _kd),
                        functools.partial(_red_call, jnp, _name, axis=_axis, keepdims=_kd),
                    )


@pytest.mark.parametrize("name", REDUCTIONS)
@settings(max_examples=12)
@given(data=st.data())
def test_reduction(name, data):
    shape = data.draw(st.sampled_from(list(RED_SHAPES)), label="shape")
    dt = data.draw(st.sampled_from(RED_SHAPES[shape]), label="dtype")
    axis = data.draw(
        st.sampled_from([a for a in AXES if not (name in SINGLE_AXIS and isinstance(a, tuple))]),
        label="axis",
    )
    keepdims = False if name in NO_KEEPDIMS else data.draw(st.booleans(), label="keepdims")
    x = data.draw(arrays(dt, shape, lo=-5, hi=5), label="x")
    group, key = ("reduce", shape, dt), (name, axis, keepdims)
    fn = functools.partial(_red_call, fnp, name, axis=axis, keepdims=keepdims)
    if not REF.accepts(group, key):
        # JAX refuses (an axis out of range, an empty max): functx raises a clear error too.
        with pytest.raises((FunctxTypeError, ValueError, IndexError)):
            fn(x)
        return
    out = fn(x)
    assert_matches(out, REF(group, key, x), [dt])
    check_traced(fn, x)


# --- Everything else: cases over a shared set of named inputs ------------------------------------
# Each case is ``fn(m, *inputs)`` with ``m`` the namespace (functx.numpy or jax.numpy); its
# parameter names pick the inputs. The cases of one dtype compile together.
INPUTS = {
    "a": (2, 3, 4),
    "b": (3, 4),
    "c": (4, 5),
    "v": (4,),
    "w": (3,),
    "s": (),
    "e": (0, 3),
    "d": (2, 4, 5),
    "q": (3, 3),
    "p": (5, 4, 3),
    "u": (2, 1, 3, 4),
    "z": (4, 2),
}
_INPUT_NAMES = list(INPUTS)
I = functools.partial(np.array, dtype=np.int32)  # noqa: E741 - index arrays in the cases
ALL = MAIN_DTYPES
NUM = (F32, F64, I32)
FLT = (F32, F64)


class Case:
    """``fn(m, *inputs)`` for the dtypes given; ``asks`` are dtypes the case requests explicitly
    (``dtype=float64``), which functx honours like JAX."""

    def __init__(self, cid, fn, dtypes=ALL, rtol=None, asks=()):
        self.cid, self.fn, self.dtypes, self.rtol, self.asks = cid, fn, dtypes, rtol, asks
        params = inspect.signature(fn).parameters.values()
        self.inputs = [p.name for p in params if p.default is p.empty][1:]
        assert all(n in INPUTS for n in self.inputs), cid


CASES = [
    # creation
    Case("zeros", lambda m: m.zeros((2, 3)), (F32,)),
    Case("zeros_dtype", lambda m, s: m.zeros((2, 0, 3), s.dtype)),
    Case("ones", lambda m, s: m.ones(4, dtype=s.dtype)),
    Case("ones_default", lambda m: m.ones((2,)), (F32,)),
    Case("full", lambda m, s: m.full((2, 3), s)),
    Case("full_dtype", lambda m, s: m.full((3,), 2, dtype=s.dtype)),
    Case("full_array", lambda m, v: m.full((3, 4), v)),
    Case("full_scalar", lambda m: m.full((2,), 2.5), (F32,)),
    Case("empty", lambda m, s: m.empty((3, 2), s.dtype) * 0),
    Case("zeros_like", lambda m, a: m.zeros_like(a)),
    Case("zeros_like_dtype", lambda m, a: m.zeros_like(a, dtype=m.float16)),
    Case("ones_like", lambda m, b: m.ones_like(b)),
    Case("ones_like_shape", lambda m, b: m.ones_like(b, shape=(5,))),
    Case("full_like", lambda m, b: m.full_like(b, 3)),
    Case("full_like_float", lambda m, b: m.full_like(b, 2.7)),
    Case("empty_like", lambda m, e: m.empty_like(e)),
    Case("arange", lambda m: m.arange(5), (I32,)),
    Case("arange_dtype", lambda m, s: m.arange(1, 10, 3, dtype=s.dtype), NUM),
    Case("arange_neg", lambda m, s: m.arange(10, 0, -3, dtype=s.dtype), NUM),
    Case("arange_float", lambda m: m.arange(0.5, 3.0, 0.5), (F32,)),
    Case("arange_empty", lambda m: m.arange(3, 1), (I32,)),
    Case("linspace", lambda m, s: m.linspace(0, 1, 5, dtype=s.dtype), FLT),
    Case("linspace_default", lambda m: m.linspace(-2, 3, 7), (F32,)),
    Case("linspace_noend", lambda m, s: m.linspace(0, 1, 5, endpoint=False, dtype=s.dtype), FLT),
    Case("linspace_arrays", lambda m, v, w: m.linspace(v[:3], w, 4), FLT),
    Case("linspace_axis", lambda m, w: m.linspace(w, 5.0, 4, axis=1), FLT),
    Case("linspace_retstep", lambda m, s: m.linspace(2, 3, 5, retstep=True, dtype=s.dtype), FLT),
    Case("linspace_one", lambda m, s: m.linspace(0, 10, 1, dtype=s.dtype), FLT),
    Case("linspace_zero", lambda m, s: m.linspace(0, 10, 0, dtype=s.dtype), FLT),
    Case("linspace_int", lambda m: m.linspace(0, 10, 5, dtype=m.int32), (I32,)),
    Case("eye", lambda m, s: m.eye(3, dtype=s.dtype)),
    Case("eye_rect", lambda m, s: m.eye(3, 4, 1, dtype=s.dtype)),
    Case("eye_neg", lambda m, s: m.eye(4, 2, -1, dtype=s.dtype)),
    Case("eye_default", lambda m: m.eye(2), (F32,)),
    Case("identity", lambda m, s: m.identity(3, dtype=s.dtype)),
    Case("tri", lambda m, s: m.tri(3, dtype=s.dtype)),
    Case("tri_rect", lambda m, s: m.tri(3, 4, -1, dtype=s.dtype)),
    Case("tril", lambda m, b: m.tril(b)),
    Case("tril_k", lambda m, a: m.tril(a, -1)),
    Case("triu", lambda m, b: m.triu(b)),
    Case("triu_k", lambda m, a: m.triu(a, 2)),
    Case("array", lambda m, b: m.array(b)),
    Case("array_list", lambda m, w: m.array([w, w * 2])),
    Case("array_ndmin", lambda m, v: m.array(v, ndmin=3)),
    Case("array_dtype", lambda m, v: m.array(v, dtype=m.float32)),
    Case("asarray", lambda m, b: m.asarray(b)),
    Case("asarray_dtype", lambda m, b: m.asarray(b, dtype=m.int32)),
    Case("astype", lambda m, b: m.astype(b, m.float16)),
    Case("astype_bool", lambda m, b: m.astype(b, m.bool_)),
    Case("astype_int8", lambda m, b: m.astype(b * 50, m.int8), NUM),
    # shapes
    Case("reshape", lambda m, a: m.reshape(a, (4, -1))),
    Case("reshape_flat", lambda m, a: m.reshape(a, 24)),
    Case("reshape_0d", lambda m, s: m.reshape(s, (1, 1))),
    Case("reshape_empty", lambda m, e: m.reshape(e, (3, 0, 1))),
    Case("ravel", lambda m, a: m.ravel(a)),
    Case("transpose", lambda m, a: m.transpose(a)),
    Case("transpose_axes", lambda m, a: m.transpose(a, (1, -1, 0))),
    Case("permute_dims", lambda m, a: m.permute_dims(a, (2, 0, 1))),
    Case("matrix_transpose", lambda m, a: m.matrix_transpose(a)),
    Case("moveaxis", lambda m, a: m.moveaxis(a, 0, -1)),
    Case("moveaxis_multi", lambda m, a: m.moveaxis(a, (0, 1), (2, 0))),
    Case("swapaxes", lambda m, a: m.swapaxes(a, 0, 2)),
    Case("swapaxes_neg", lambda m, a: m.swapaxes(a, -1, 1)),
    Case("squeeze", lambda m, u: m.squeeze(u)),
    Case("squeeze_axis", lambda m, u: m.squeeze(u, 1)),
    Case("squeeze_0d", lambda m, s: m.squeeze(s)),
    Case("expand_dims", lambda m, a: m.expand_dims(a, 0)),
    Case("expand_dims_multi", lambda m, a: m.expand_dims(a, (-1, 1))),
    Case("expand_dims_0d", lambda m, s: m.expand_dims(s, -1)),
    Case("broadcast_to", lambda m, b: m.broadcast_to(b, (2, 3, 4))),
    Case("broadcast_to_ones", lambda m, u: m.broadcast_to(u, (5, 2, 3, 3, 4))),
    Case("broadcast_to_0d", lambda m, s: m.broadcast_to(s, (2, 0))),
    Case("broadcast_arrays", lambda m, a, v, s: m.broadcast_arrays(a, v, s)),
    Case("atleast_1d", lambda m, s: m.atleast_1d(s)),
    Case("atleast_2d", lambda m, v: m.atleast_2d(v)),
    Case("atleast_3d", lambda m, b: m.atleast_3d(b)),
    Case("atleast_multi", lambda m, s, v: m.atleast_3d(s, v)),
    Case("concatenate", lambda m, a: m.concatenate([a, a * 2], 1)),
    Case("concatenate_neg", lambda m, b, w: m.concatenate([b, w[:, None]], -1)),
    Case("concatenate_none", lambda m, a, v: m.concatenate([a, v], None)),
    Case("concatenate_empty", lambda m, e: m.concatenate([e, e], 0)),
    Case("concatenate_dtype", lambda m, b: m.concatenate([b, b], dtype=m.float32)),
    Case("concat", lambda m, b: m.concat([b, b], axis=1)),
    Case("stack", lambda m, b: m.stack([b, b * 2], 1)),
    Case("stack_neg", lambda m, b: m.stack([b, b], -1)),
    Case("stack_0d", lambda m, s: m.stack([s, s, s])),
    Case("vstack", lambda m, b, v: m.vstack([b, v])),
    Case("row_stack", lambda m, b, v: (m.row_stack if m is fnp else m.vstack)([b, v])),
    Case("hstack", lambda m, b: m.hstack([b, b])),
    Case("hstack_1d", lambda m, v, w: m.hstack([v, w])),
    Case("dstack", lambda m, b: m.dstack([b, b])),
    Case("column_stack", lambda m, w, b: m.column_stack([w, b])),
    Case("split", lambda m, a: m.split(a, 3, 1)),
    Case("split_indices", lambda m, a: m.split(a, [1, 3], 2)),
    Case("array_split", lambda m, a: m.array_split(a, 3, 2)),
    Case("vsplit", lambda m, a: m.vsplit(a, 2)),
    Case("hsplit", lambda m, a: m.hsplit(a, 3)),
    Case("tile", lambda m, b: m.tile(b, 2)),
    Case("tile_more", lambda m, b: m.tile(b, (2, 1, 3))),
    Case("tile_0d", lambda m, s: m.tile(s, (2, 3))),
    Case("repeat", lambda m, b: m.repeat(b, 2)),
    Case("repeat_axis", lambda m, a: m.repeat(a, 3, -1)),
    Case("repeat_array", lambda m, a: m.repeat(a, I([1, 0, 2]), 1)),
    Case(
        "repeat_total",
        lambda m, a, w: m.repeat(a, m.abs(w).astype(m.int32), 1, total_repeat_length=5),
        NUM,
    ),
    Case("repeat_total_pad", lambda m, v: m.repeat(v, 2, total_repeat_length=11)),
    Case("flip", lambda m, a: m.flip(a)),
    Case("flip_axis", lambda m, a: m.flip(a, (0, 2))),
    Case("fliplr", lambda m, b: m.fliplr(b)),
    Case("flipud", lambda m, b: m.flipud(b)),
    Case("roll", lambda m, a: m.roll(a, 7)),
    Case("roll_axis", lambda m, a: m.roll(a, -5, 2)),
    Case("roll_multi", lambda m, a: m.roll(a, (1, 2), (0, 2))),
    Case("pad", lambda m, a: m.pad(a, 1)),
    Case("pad_widths", lambda m, a: m.pad(a, ((1, 2), (0, 1), (2, 0)))),
    Case("pad_value", lambda m, b: m.pad(b, (2, 1), constant_values=7)),
    Case("pad_edge", lambda m, a: m.pad(a, ((1, 2), (0, 1), (2, 0)), mode="edge")),
    Case("pad_reflect", lambda m, a: m.pad(a, ((1, 1), (2, 2), (3, 3)), mode="reflect")),
    Case("pad_symmetric", lambda m, a: m.pad(a, ((1, 2), (0, 1), (3, 0)), mode="symmetric")),
    Case("pad_wrap", lambda m, a: m.pad(a, ((1, 2), (0, 4), (5, 0)), mode="wrap")),
    Case("pad_0d", lambda m, s: m.pad(s, 2)),
    # indexing helpers (full indexing tests are in test_indexing.py)
    Case("take", lambda m, a: m.take(a, I([0, 2, 5, -1]))),
    Case("take_axis", lambda m, a: m.take(a, I([[0, 2], [1, -1]]), axis=1)),
    Case("take_oob", lambda m, a: m.take(a, I([0, 100, -100]), axis=0)),
    Case("take_clip", lambda m, a: m.take(a, I([0, 100, -100]), axis=2, mode="clip")),
    Case("take_along_axis", lambda m, a: m.take_along_axis(a, I([[[2, 0, 1, 1]]] * 2), 1)),
    Case("take_along_axis_last", lambda m, b: m.take_along_axis(b, I([[3, 0]] * 3), -1)),
    Case("diagonal", lambda m, b: m.diagonal(b)),
    Case("diagonal_offset", lambda m, a: m.diagonal(a, 1, 1, 2)),
    Case("diagonal_neg", lambda m, a: m.diagonal(a, -1, 2, 0)),
    Case("diag_1d", lambda m, v: m.diag(v)),
    Case("diag_1d_k", lambda m, w: m.diag(w, -2)),
    Case("diag_2d", lambda m, b: m.diag(b, 1)),
    Case("trace", lambda m, q: m.trace(q), NUM),
    Case("trace_offset", lambda m, a: m.trace(a, 1, 1, 2), NUM),
    Case("meshgrid", lambda m, v, w: m.meshgrid(v, w)),
    Case("meshgrid_ij", lambda m, v, w: m.meshgrid(v, w, indexing="ij")),
    Case("meshgrid_sparse", lambda m, v, w, b: m.meshgrid(v, w, b[0], sparse=True)),
    Case("shape", lambda m, a: m.shape(a)),
    Case("ndim", lambda m, a: m.ndim(a)),
    Case("size", lambda m, a: m.size(a)),
    Case("size_axis", lambda m, a: m.size(a, 1)),
    # select / clip / misc elementwise with options
    Case("where", lambda m, a, b: m.where(a > 0, a, b)),
    Case("where_scalar", lambda m, a: m.where(a > 0, a, 0)),
    Case("where_float_scalar", lambda m, b: m.where(b > 1, 1.5, b), NUM),
    Case("clip", lambda m, a: m.clip(a, -1, 1), NUM),
    Case("clip_max", lambda m, a: m.clip(a, max=2), NUM),
    Case("clip_arrays", lambda m, a, v: m.clip(a, v, 2), NUM),
    Case("round_decimals", lambda m, b: m.round(b * 3.3, 2), FLT),
    Case("round_negative", lambda m, b: m.round(b * 31.7, -1), FLT),
    Case(
        "nan_to_num_args", lambda m, b: m.nan_to_num(b / 0.0, nan=1.0, posinf=2.0, neginf=-2.0), FLT
    ),
    Case("result_type", lambda m, a, v: m.zeros((), m.result_type(a, v.astype(m.float16)))),
    # reductions with options
    Case("sum_dtype", lambda m, b: m.sum(b, axis=1, dtype=m.float32)),
    Case("sum_where", lambda m, b: m.sum(b, axis=1, where=b > 0), NUM),
    Case("sum_initial", lambda m, b: m.sum(b, axis=0, initial=3), NUM),
    Case("prod_initial", lambda m, b: m.prod(b, axis=1, initial=2), NUM),
    Case("mean_where", lambda m, b: m.mean(b, axis=1, where=b > -3), NUM),
    Case("mean_dtype", lambda m, b: m.mean(b, dtype=m.float64), asks=(F64,)),
    Case("var_ddof", lambda m, b: m.var(b, axis=1, ddof=1), NUM),
    Case("std_ddof", lambda m, b: m.std(b, axis=0, ddof=2, keepdims=True), NUM),
    Case("var_where", lambda m, b: m.var(b, axis=1, where=b > -3), NUM),
    Case("max_initial", lambda m, b: m.max(b, axis=1, initial=-5), NUM),
    Case("max_where", lambda m, b: m.max(b, axis=1, where=b < 2, initial=-5)),
    Case("min_empty_initial", lambda m, e: m.min(e, axis=0, initial=3), NUM),
    Case("any_where", lambda m, b: m.any(b, axis=1, where=b != 1)),
    Case("all_where", lambda m, b: m.all(b, axis=0, where=b != 1)),
    Case("average_weights", lambda m, b, v: m.average(b, axis=1, weights=m.abs(v) + 1), NUM),
    Case(
        "average_axes",
        lambda m, a, b: m.average(
            a, axis=(2, 1), weights=m.abs(b.T) + 1, keepdims=True, returned=True
        ),
        NUM,
    ),
    Case("average_returned", lambda m, b: m.average(b, axis=0, returned=True), NUM),
    Case(
        "average_full_weights", lambda m, b: m.average(b, weights=m.abs(b) + 1, returned=True), NUM
    ),
    Case("cumsum_dtype", lambda m, b: m.cumsum(b, axis=1, dtype=m.float32)),
    Case("cumulative_sum_initial", lambda m, b: m.cumulative_sum(b, axis=1, include_initial=True)),
    Case(
        "cumulative_prod_initial",
        lambda m, b: m.cumulative_prod(b, axis=0, include_initial=True),
        NUM,
    ),
    Case("count_nonzero_axis", lambda m, a: m.count_nonzero(a, axis=(0, 2))),
    Case("nanmean_nan", lambda m, b: m.nanmean(m.where(b > 0, m.nan, b), axis=1), FLT),
    Case("nansum_nan", lambda m, b: m.nansum(m.where(b > 0, m.nan, b), axis=0), FLT),
    Case("nanmax_nan", lambda m, b: m.nanmax(m.where(b > 0, m.nan, b), axis=1), FLT),
    Case("nanmin_nan", lambda m, b: m.nanmin(m.where(b > 0, m.nan, b)), FLT),
    # products
    Case("dot", lambda m, b, c: m.dot(b, c)),
    Case("dot_mv", lambda m, b, v: m.dot(b, v)),
    Case("dot_vv", lambda m, v: m.dot(v, v)),
    Case("dot_vm", lambda m, w, b: m.dot(w, b)),
    Case("dot_scalar", lambda m, s, b: m.dot(s, b)),
    Case("dot_nd", lambda m, a, p: m.dot(a, p)),
    Case("dot_empty", lambda m, e: m.dot(e, e.T)),
    Case("matmul", lambda m, b, c: m.matmul(b, c)),
    Case("matmul_op", lambda m, b, c: m.asarray(b) @ c),
    Case("matmul_vm", lambda m, v, c: m.matmul(v, c)),
    Case("matmul_mv", lambda m, b, v: m.matmul(b, v)),
    Case("matmul_vv", lambda m, v: m.matmul(v, v)),
    Case("matmul_batched", lambda m, a, d: m.matmul(a, d)),
    Case("matmul_batch_left", lambda m, a, c: m.matmul(a, c)),
    Case("matmul_batch_right", lambda m, b, d: m.matmul(b, d)),
    Case("matmul_broadcast", lambda m, u, d: m.matmul(u, d[:, None])),
    Case("matmul_batch_vec", lambda m, a, v: m.matmul(a, v)),
    Case("matmul_vec_batch", lambda m, v, d: m.matmul(v, d)),
    Case("matmul_empty", lambda m, e, b: m.matmul(e, b)),
    Case("matmul_zero_k", lambda m, e: m.matmul(e.T, e)),
    Case(
        "matmul_preferred",
        lambda m, b, c: m.matmul(b, c, preferred_element_type=m.float64),
        FLT,
        asks=(F64,),
    ),
    Case("outer", lambda m, w, v: m.outer(w, v)),
    Case("outer_nd", lambda m, b, v: m.outer(b, v)),
    Case("inner", lambda m, b, z: m.inner(b, z.T)),
    Case("inner_vv", lambda m, v: m.inner(v, v)),
    Case("inner_scalar", lambda m, s, b: m.inner(s, b)),
    Case("tensordot", lambda m, a, p: m.tensordot(a, m.transpose(p), 2)),
    Case("tensordot_axes", lambda m, a, p: m.tensordot(a, p, ((1, 2), (2, 1)))),
    Case("tensordot_int", lambda m, b, c: m.tensordot(b, c, 1)),
    Case("tensordot_outer", lambda m, w, v: m.tensordot(w, v, 0)),
    Case("tensordot_neg", lambda m, a, c: m.tensordot(a, c, (-1, 0))),
    Case("vdot", lambda m, b: m.vdot(b, b + 1)),
    Case("vecdot", lambda m, b: m.vecdot(b, b)),
    Case("vecdot_axis", lambda m, b, w: m.vecdot(b, w[:, None], axis=0)),
    Case("kron", lambda m, b, z: m.kron(b, z), NUM),
    Case("kron_scalar", lambda m, s, b: m.kron(s, b), NUM),
    Case("einsum", lambda m, b, c: m.einsum("ij,jk->ik", b, c)),
    # linalg
    Case("linalg.matmul", lambda m, b, c: m.linalg.matmul(b, c)),
    Case("linalg.outer", lambda m, w, v: m.linalg.outer(w, v)),
    Case("linalg.vecdot", lambda m, b: m.linalg.vecdot(b, b)),
    Case("linalg.tensordot", lambda m, b, c: m.linalg.tensordot(b, c, axes=1)),
    Case("linalg.matrix_transpose", lambda m, a: m.linalg.matrix_transpose(a)),
    Case("linalg.vector_norm", lambda m, a: m.linalg.vector_norm(a), FLT),
    Case("linalg.vector_norm_axes", lambda m, a: m.linalg.vector_norm(a, axis=(0, 2), ord=1)),
    Case(
        "linalg.vector_norm_inf",
        lambda m, a: m.linalg.vector_norm(a, axis=1, ord=m.inf, keepdims=True),
    ),
    Case("linalg.vector_norm_p", lambda m, b: m.linalg.vector_norm(b, axis=0, ord=3), FLT),
    Case("linalg.matrix_norm", lambda m, a: m.linalg.matrix_norm(a)),
    Case("linalg.matrix_norm_1", lambda m, a: m.linalg.matrix_norm(a, ord=1, keepdims=True)),
]
# linalg.norm: every supported ord over vectors (one axis), matrices (two) and None.
for _o in (None, 1, 2, np.inf, -np.inf, 0, 3, 0.5, -1, -2):
    CASES.append(
        Case(
            f"linalg.norm_vec_{_o}",
            functools.partial(lambda m, b, o: m.linalg.norm(b, ord=o, axis=1), o=_o),
        )
    )
    CASES.append(
        Case(
            f"linalg.norm_1d_{_o}", functools.partial(lambda m, v, o: m.linalg.norm(v, ord=o), o=_o)
        )
    )
for _o in (None, "fro", 1, -1, np.inf, -np.inf):
    CASES.append(
        Case(
            f"linalg.norm_mat_{_o}",
            functools.partial(lambda m, a, o: m.linalg.norm(a, ord=o, axis=(2, 0)), o=_o),
        )
    )
    CASES.append(
        Case(
            f"linalg.norm_mat_kd_{_o}",
            functools.partial(
                lambda m, a, o: m.linalg.norm(a, ord=o, axis=(0, 1), keepdims=True), o=_o
            ),
        )
    )
CASES += [
    Case("linalg.norm_all", lambda m, a: m.linalg.norm(a)),
    Case("linalg.norm_all_kd", lambda m, a: m.linalg.norm(a, keepdims=True)),
    Case("linalg.norm_0d", lambda m, s: m.linalg.norm(s)),
    Case("linalg.norm_empty", lambda m, e: m.linalg.norm(e, axis=0)),
    Case(
        "put_along_axis",
        lambda m, b: m.put_along_axis(b, I([[3, 0]] * 3), b[:, 1:3], -1, inplace=False),
    ),
]
CASES_BY_ID = {c.cid: c for c in CASES}
assert len(CASES_BY_ID) == len(CASES)


def _case_fn(case, m):
    """The case as a function of all the group's inputs (as ``m``'s arrays, so that Python
    operators in a case are ``m``'s too)."""
    idx = [_INPUT_NAMES.index(n) for n in case.inputs]
    return lambda *all_inputs: case.fn(m, *[m.asarray(all_inputs[i]) for i in idx])


for _c in CASES:
    for _dt in _c.dtypes:
        REF.case(("case", _dt), [(INPUTS[n], _dt) for n in _INPUT_NAMES], _c.cid, _case_fn(_c, jnp))


@pytest.mark.parametrize("cid", list(CASES_BY_ID))
@settings(max_examples=4)
@given(data=st.data())
def test_case(cid, data):
    case = CASES_BY_ID[cid]
    dts = [d for d in case.dtypes if REF.accepts(("case", d), cid)]
    assert dts, f"JAX rejects every dtype of {cid}: {REF.rejection(('case', case.dtypes[0]), cid)}"
    dt = data.draw(st.sampled_from(dts), label="dtype")
    args = [
        data.draw(arrays(dt, INPUTS[n], lo=-4, hi=4, specials=False), label=n)
        if n in case.inputs
        else np.zeros(INPUTS[n], dt)
        for n in _INPUT_NAMES
    ]
    fn = _case_fn(case, fnp)
    out = fn(*args)
    assert_matches(out, REF(("case", dt), cid, *args), [dt, *case.asks], rtol=case.rtol)
    used = [args[_INPUT_NAMES.index(n)] for n in case.inputs]
    if any(isinstance(leaf, functx.Array) for leaf in _leaves(out)):
        check_traced(lambda *xs: case.fn(fnp, *map(fnp.asarray, xs)), *used)


def test_matrix_norms_by_svd():
    """ord=2, -2 and 'nuc' matrix norms (by the SVD; more in tests/numpy/test_linalg.py)."""
    x = np.arange(9, dtype=F32).reshape(3, 3) + np.eye(3, dtype=F32)
    for o in (2, -2, "nuc"):
        np.testing.assert_allclose(fnp.linalg.norm(x, ord=o), jnp.linalg.norm(x, ord=o), rtol=1e-5)


def test_constants_and_dtype_objects():
    for name in ("pi", "e", "inf", "euler_gamma"):
        assert getattr(fnp, name) == getattr(jnp, name)
    assert np.isnan(fnp.nan) and fnp.newaxis is None
    for name in (
        "bool_",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float16",
        "float32",
        "float64",
        "bfloat16",
        "float_",
        "int_",
    ):
        assert np.dtype(getattr(fnp, name)) == np.dtype(getattr(jnp, name)), name
    for name in (
        "integer",
        "signedinteger",
        "unsignedinteger",
        "floating",
        "inexact",
        "number",
        "generic",
    ):
        assert getattr(fnp, name) is getattr(jnp, name), name
    assert fnp.dtype("float32") == jnp.dtype("float32")
    assert isinstance(fnp.zeros(2), fnp.ndarray)
    for a, b in [(F16, BF16), (I8, U8), (I32, F16), (BOOL, I8), (U32, I32), (F32, I64)]:
        assert fnp.promote_types(a, b) == jnp.promote_types(a, b), (a, b)
        assert fnp.result_type(np.zeros(1, a), np.zeros(1, b)) == jnp.result_type(
            np.zeros(1, a), np.zeros(1, b)
        )
    for d in (F16, BF16, F32, F64):
        fi, ji = fnp.finfo(d), jnp.finfo(d)
        assert (float(fi.eps), float(fi.max), fi.bits) == (float(ji.eps), float(ji.max), ji.bits)
    assert fnp.iinfo(I8).max == jnp.iinfo(I8).max and fnp.iinfo(U32).min == 0
    for d, kind in [
        (BF16, fnp.floating),
        (I32, fnp.integer),
        (U8, fnp.unsignedinteger),
        (F16, fnp.inexact),
        (BOOL, fnp.number),
    ]:
        assert fnp.issubdtype(d, kind) == jnp.issubdtype(d, kind), (d, kind)
    assert fnp.broadcast_shapes((2, 1, 3), (4, 1), ()) == jnp.broadcast_shapes(
        (2, 1, 3), (4, 1), ()
    )


@pytest.mark.usefixtures("no_x64")
def test_documented_defaults():
    """The default mode (x64 off, as JAX's): 32-bit defaults, and 64-bit inputs canonicalize to
    32 bits (tests/test_x64.py checks both modes against JAX)."""
    assert fnp.arange(5).dtype == I32 and fnp.linspace(0, 1, 3).dtype == F32
    assert fnp.zeros(3).dtype == F32 and fnp.eye(2).dtype == F32
    x32, x64 = np.arange(6, dtype=I32).reshape(2, 3), np.arange(6, dtype=I64).reshape(2, 3)
    assert fnp.sum(x32).dtype == I32 and fnp.sum(x64).dtype == I32
    assert fnp.argmax(np.ones(3, F64)).dtype == I32
    assert fnp.mean(x32).dtype == F32 and fnp.mean(x64).dtype == F32
    assert fnp.sin(x32).dtype == F32 and fnp.sin(x64).dtype == F32
    assert fnp.rint(x32).dtype == F32 and fnp.true_divide(x64, 2).dtype == F32
    assert fnp.cumsum(np.ones(3, I8)).dtype == I8 and fnp.cumsum(np.ones(3, BOOL)).dtype == I32


# --- Coverage: every public name is compared somewhere -------------------------------------------
NOT_FUNCTIONS = """linalg bfloat16 bool_ dtype e euler_gamma float16 float32 float64 float_ floating
generic inexact inf int16 int32 int64 int8 int_ integer nan ndarray newaxis number pi
signedinteger uint16 uint32 uint64 uint8 unsignedinteger finfo iinfo issubdtype promote_types
result_type broadcast_shapes bool fft""".split()  # compared in test_constants_and_dtype_objects


def test_every_public_function_is_compared():
    import re

    covered = set(UNARY) | set(BINARY) | set(REDUCTIONS) | set(NOT_FUNCTIONS)
    linalg_covered = set()
    for c in CASES:
        src = inspect.getsource(getattr(c.fn, "func", c.fn))
        covered |= set(re.findall(r"m\.(\w+)", src))
        linalg_covered |= set(re.findall(r"m\.linalg\.(\w+)", src))
    # tests/numpy/test_more_functions.py compares its functions itself: a name it calls both as
    # functx's (fjnp.name) and as JAX's (jjnp.name) counts as compared
    more = (pathlib.Path(__file__).parent / "test_more_functions.py").read_text()
    # tests/test_complex.py compares the complex functions (its UNARY list, and what it calls as
    # fnp.name) with NumPy's values and JAX's dtypes
    cplx = (pathlib.Path(__file__).parents[1] / "test_complex.py").read_text()
    covered |= set(re.findall(r"\bfnp\.(\w+)", cplx))
    covered |= set(re.findall(r'"(\w+)"', cplx.split("UNARY = [")[1].split("]")[0]))
    covered |= set(re.findall(r"\bfjnp\.(\w+)", more)) & set(re.findall(r"\bjjnp\.(\w+)", more))
    covered |= set(re.findall(r"\bm\.(\w+)", more))  # its compare(f): f(m) for functx, NumPy, JAX
    # the files of sorting, the Array API names and FFT compare their own functions the same ways
    # (f(m) with m functx's or JAX's module; or fjnp.name beside jjnp.name)
    # tests/test_jax_api_fixes2.py compares histogramdd as lib.name (lib: functx's or JAX's
    # numpy) and histogram2d beside jnp_ref.histogram2d (JAX's)
    fixes2 = (pathlib.Path(__file__).parents[1] / "test_jax_api_fixes2.py").read_text()
    covered |= set(re.findall(r"\blib\.(histogram\w*)", fixes2))
    covered |= set(re.findall(r"\bjnp_ref\.(histogram\w*)", fixes2))
    here = pathlib.Path(__file__).parent
    for name in ("test_ufunc.py", "test_save_load.py"):  # (fnp.name beside jnp.name)
        src = (here / name).read_text()
        covered |= set(re.findall(r"\bfnp\.(\w+)", src)) & set(re.findall(r"\bjnp\.(\w+)", src))
    for name in ("test_sort.py", "test_array_api.py", "test_fft.py"):
        src = (here / name).read_text()
        covered |= set(re.findall(r"\bm\.numpy\.(\w+)", src))
        covered |= set(re.findall(r"\bfjnp\.(\w+)", src)) & set(re.findall(r"\bjjnp\.(\w+)", src))
    # tests/numpy/test_extra.py: its compare(f) runs f(m) with m functx's, NumPy's and JAX's
    # module; its dtype-name test compares each name it lists with JAX's
    src = (here / "test_extra.py").read_text()
    covered |= set(re.findall(r"\bm\.(\w+)", src))
    covered |= set(re.findall(r"\bfjnp\.(\w+)", src)) & set(re.findall(r"\bjjnp\.(\w+)", src))
    covered |= set(re.findall(r'"(\w+)"', src.split("DTYPE_NAMES = (")[1].split(")")[0]))
    # tests/test_conv.py: jnp.convolve/correlate (fnp.name beside jjnp.name)
    src = (here.parent / "test_conv.py").read_text()
    covered |= set(re.findall(r"\bfnp\.(\w+)", src)) & set(re.findall(r"\bjjnp\.(\w+)", src))
    missing = sorted(set(fnp.__all__) - covered)
    assert not missing, f"functx.numpy functions with no comparison against JAX: {missing}"
    # tests/numpy/test_linalg.py and test_linalg_eig.py: functx's values against NumPy float64,
    # shapes and dtypes against JAX's (fnp.linalg.name beside jnp.linalg.name); the result types
    # are NamedTuples
    for name in ("test_linalg.py", "test_linalg_eig.py"):
        src = (here / name).read_text()
        linalg_covered |= set(re.findall(r"\bfnp\.linalg\.(\w+)", src)) & set(
            re.findall(r"\bjnp\.linalg\.(\w+)", src)
        )
    linalg_covered |= {n for n in fnp.linalg.__all__ if n.endswith("Result")}
    missing = sorted(set(fnp.linalg.__all__) - linalg_covered)
    assert not missing, f"functx.numpy.linalg functions with no comparison: {missing}"


# --- Errors name the op, the shapes and the user's line ------------------------------------------
def _assert_names_line(excinfo, line, *parts):
    msg = str(excinfo.value)
    for p in parts:
        assert p in msg, (p, msg)
    assert f"{_THIS_FILE}:{line}" in msg, (f"{_THIS_FILE}:{line}", msg)


def test_elementwise_shape_mismatch_error():
    x, y = np.ones((2, 3), F32), np.ones((4,), F32)
    with pytest.raises(FunctxTypeError) as ei:
        fnp.add(x, y)
    _assert_names_line(ei, inspect.currentframe().f_lineno - 1, "add", "f32[2,3]", "f32[4]")
    with pytest.raises(FunctxTypeError) as ei:
        functx.make_jaxpr(lambda a, b: fnp.multiply(a, b) + 1)(x, y)
    _assert_names_line(ei, inspect.currentframe().f_lineno - 1, "multiply", "f32[2,3]", "f32[4]")
    with pytest.raises(FunctxTypeError) as ei:
        fnp.asarray(x) - y
    _assert_names_line(ei, inspect.currentframe().f_lineno - 1, "subtract", "f32[2,3]", "f32[4]")


def test_matmul_shape_mismatch_error():
    a, b = np.ones((2, 3), F32), np.ones((4, 5), F32)
    with pytest.raises(FunctxTypeError) as ei:
        fnp.matmul(a, b)
    _assert_names_line(ei, inspect.currentframe().f_lineno - 1, "matmul", "f32[2,3]", "f32[4,5]")
    with pytest.raises(FunctxTypeError) as ei:
        functx.make_jaxpr(lambda p, q: p @ q)(a, b)
    _assert_names_line(ei, inspect.currentframe().f_lineno - 1, "matmul", "f32[2,3]", "f32[4,5]")
    with pytest.raises(FunctxTypeError) as ei:
        fnp.dot(a, b)
    _assert_names_line(ei, inspect.currentframe().f_lineno - 1, "f32[2,3]", "f32[4,5]")


BAD_AXIS_CALLS = {
    "sum": lambda x: fnp.sum(x, axis=2),
    "mean": lambda x: fnp.mean(x, axis=-3),
    "max": lambda x: fnp.max(x, axis=(0, 5)),
    "argmax": lambda x: fnp.argmax(x, axis=2),
    "cumsum": lambda x: fnp.cumsum(x, axis=3),
    "squeeze": lambda x: fnp.squeeze(x, 4),
    "expand_dims": lambda x: fnp.expand_dims(x, 3),
    "moveaxis": lambda x: fnp.moveaxis(x, 0, 2),
    "swapaxes": lambda x: fnp.swapaxes(x, 0, 5),
    "transpose": lambda x: fnp.transpose(x, (0, 2)),
    "concatenate": lambda x: fnp.concatenate([x, x], axis=2),
    "stack": lambda x: fnp.stack([x, x], axis=-4),
    "flip": lambda x: fnp.flip(x, 2),
    "split": lambda x: fnp.split(x, 2, axis=2),
    "roll": lambda x: fnp.roll(x, 1, axis=2),
    "take": lambda x: fnp.take(x, np.zeros(1, I32), axis=2),
    "repeat": lambda x: fnp.repeat(x, 2, axis=-3),
    "norm": lambda x: fnp.linalg.norm(x, axis=2),
    "diagonal": lambda x: fnp.diagonal(x, 0, 0, 2),
    "sum_0d": lambda x: fnp.sum(x[0, 0], axis=0),
}


@pytest.mark.parametrize("name", list(BAD_AXIS_CALLS))
def test_bad_axis_is_a_clear_error(name):
    x = np.ones((2, 4), F32)
    with pytest.raises(FunctxTypeError, match=r"(?i)axis|axes") as ei:
        BAD_AXIS_CALLS[name](x)
    assert _THIS_FILE in str(ei.value), str(ei.value)
    with pytest.raises(FunctxTypeError, match=r"(?i)axis|axes"):
        functx.make_jaxpr(BAD_AXIS_CALLS[name])(x)
