"""``jax_enable_x64`` against JAX, in both modes: the flag's spellings (``config.update``/``read``,
the ``JAX_ENABLE_X64`` environment variable, ``functx.enable_x64``, ``functx.experimental``),
input canonicalization (NumPy arrays and scalars, Python scalars, lists, jit arguments), JAX's
warning for explicit 64-bit dtype requests, the jit cache across flips, and a table-driven sweep
of the dtypes every public ``numpy``/``lax``/``nn`` function gives (``eval_shape``: no compiles).

The suite runs with the flag on in both libraries (tests/conftest.py); ``mode(x64)`` sets both.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest
from x64util import x64_off, x64_on

import functx
import functx.lax as flax
import functx.nn as fnn
import functx.numpy as fnp
from functx import config, dtypes

jax = pytest.importorskip("jax")
jjnp = jax.numpy
jlax = jax.lax
jnn = jax.nn

MODES = [False, True]


def mode(x64: bool):
    return x64_on() if x64 else x64_off()


def _dt(x):
    return np.dtype(x.dtype), bool(getattr(x, "weak_type", False))


# --- the flag ------------------------------------------------------------------------------------
def test_environment_variable_and_default_off():
    # one fresh process: off by default; JAX_ENABLE_X64 read when functx.config is (re)loaded
    code = (
        "import importlib, os, functx, functx.numpy as f\n"
        "print(functx.config.jax_enable_x64, f.zeros(1).dtype)\n"
        "os.environ['JAX_ENABLE_X64'] = 'true'\n"
        "importlib.reload(functx.config)\n"
        "print(functx.config.jax_enable_x64, f.zeros(1).dtype)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["False", "float32", "True", "float64"], out.stderr


def test_env_truth_values(monkeypatch):
    for raw, want in (("1", True), ("yes", True), ("On", True), ("0", False), ("false", False)):
        monkeypatch.setenv("JAX_ENABLE_X64", raw)
        assert config._env_bool("JAX_ENABLE_X64", False) is want
    monkeypatch.setenv("JAX_ENABLE_X64", "maybe")
    with pytest.raises(ValueError, match="invalid truth value 'maybe'"):
        config._env_bool("JAX_ENABLE_X64", False)
    monkeypatch.delenv("JAX_ENABLE_X64")
    assert config._env_bool("JAX_ENABLE_X64", False) is False


def test_update_read_and_blocks():
    assert functx.config.jax_enable_x64 is True  # (tests/conftest.py)
    try:
        functx.config.update("jax_enable_x64", False)
        assert functx.config.read("jax_enable_x64") is False
        assert functx.config.jax_enable_x64 is False and functx.config.x64_enabled is False
        assert functx.enable_x64.value is False and dtypes.x64_enabled() is False
        assert fnp.zeros(1).dtype == np.float32 and fnp.arange(2).dtype == np.int32
    finally:
        functx.config.update("jax_enable_x64", True)
    assert fnp.zeros(1).dtype == np.float64 and fnp.arange(2).dtype == np.int64
    with functx.experimental.disable_x64():
        assert functx.config.jax_enable_x64 is False
        with functx.experimental.enable_x64():
            assert functx.config.jax_enable_x64 is True
            with functx.enable_x64(False):
                assert fnp.asarray(1.0).dtype == np.float32
            assert fnp.asarray(1.0).dtype == np.float64
        assert fnp.asarray(1).dtype == np.int32

    @functx.enable_x64(False)
    def f():
        return fnp.ones(2).dtype

    assert f() == np.float32 and fnp.ones(2).dtype == np.float64
    with pytest.raises(AttributeError, match="Unrecognized config option"):
        functx.config.read("jax_no_such_option")


def test_blocks_are_per_thread():
    seen = []
    with functx.experimental.disable_x64():
        t = threading.Thread(target=lambda: seen.append(fnp.zeros(1).dtype))
        t.start()
        t.join()
        assert fnp.zeros(1).dtype == np.float32
    assert seen == [np.float64]  # the other thread sees the global setting


# --- inputs ---------------------------------------------------------------------------------------
INPUTS = {
    "np_f64": np.ones(3),
    "np_i64": np.arange(3, dtype=np.int64),
    "np_u64": np.arange(3, dtype=np.uint64),
    "np_f32": np.ones(3, np.float32),
    "np_f64_scalar": np.float64(1.5),
    "np_i64_scalar": np.int64(3),
    "np_i64_big": np.array([2**40 + 3]),
    "py_float": 1.5,
    "py_int": 3,
    "py_bool": True,
    "list_ints": [1, 2],
    "list_mixed": [1, 2.5],
    "list_np": [np.float64(1.0), 2],
    "empty_list": [],
}


def _jax(f, *args):
    """JAX's (dtype, weak_type) of ``f(*args)``, traced only (JAX's eager ops compile)."""
    return _dt(jax.eval_shape(f, *args))


@pytest.mark.parametrize("x64", MODES)
def test_inputs_canonicalize_as_jax(x64):
    with mode(x64):
        for name, x in INPUTS.items():
            for fn in ("asarray", "array"):
                ours, theirs = getattr(fnp, fn)(x), _jax(lambda f=fn: getattr(jjnp, f)(x))
                if fn == "array" and isinstance(x, (int, float)):  # (a weak-type question)
                    assert ours.dtype == theirs[0], (name, fn)
                    continue
                assert _dt(ours) == theirs, (name, fn)
            want = np.asarray(x).astype(ours.dtype)  # (64-bit integers wrap, as in JAX)
            np.testing.assert_array_equal(np.asarray(ours), want)
            if not isinstance(x, list):  # as operands, in eager code and traced
                assert _dt(fnp.add(x, 1)) == _jax(lambda: jjnp.add(x, 1)), name
                ours = functx.eval_shape(lambda v: v * 2, x)
                assert _dt(ours) == _jax(lambda v: v * 2, x), name


@pytest.mark.parametrize("x64", MODES)
def test_python_int_range(x64):
    with mode(x64):
        if x64:
            assert _dt(fnp.asarray(2**40)) == _jax(lambda: jjnp.asarray(2**40))
            assert _dt(fnp.ones(2) + 2**40) == _jax(lambda: jjnp.ones(2) + 2**40)
        else:
            for f in (lambda m: m.asarray(2**40), lambda m: m.ones(2) + 2**40):
                with pytest.raises(OverflowError):
                    f(jjnp)
                with pytest.raises(OverflowError, match="too large to convert to int32"):
                    f(fnp)


# --- explicit dtype requests ----------------------------------------------------------------------
REQUESTS = {
    "zeros": lambda m, lax, d: m.zeros(2, d),
    "ones": lambda m, lax, d: m.ones((2,), dtype=d),
    "full": lambda m, lax, d: m.full(2, 1, d),
    "empty": lambda m, lax, d: m.empty(2, d),
    "arange": lambda m, lax, d: m.arange(3, dtype=d),
    "linspace": lambda m, lax, d: m.linspace(0, 1, 3, dtype=d),
    "eye": lambda m, lax, d: m.eye(2, dtype=d),
    "identity": lambda m, lax, d: m.identity(2, dtype=d),
    "asarray": lambda m, lax, d: m.asarray([1, 2], dtype=d),
    "array": lambda m, lax, d: m.array(np.ones(2), dtype=d),
    "astype": lambda m, lax, d: m.astype(m.ones(2, "float32"), d),
    "method_astype": lambda m, lax, d: m.ones(2, "float32").astype(d),
    "zeros_like": lambda m, lax, d: m.zeros_like(np.ones(2, np.float32), dtype=d),
    "full_like": lambda m, lax, d: m.full_like(np.ones(2, np.float32), 1, dtype=d),
    "sum": lambda m, lax, d: m.sum(np.ones(2, np.float32), dtype=d),
    "convert_element_type": lambda m, lax, d: lax.convert_element_type(np.ones(2, "f4"), d),
    "iota": lambda m, lax, d: lax.iota(d, 3),
}


def _run(fn, lib_np, lib_lax, d):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        if lib_np is jjnp:  # traced only: JAX's eager ops compile
            out = jax.eval_shape(lambda: fn(lib_np, lib_lax, d))
        else:
            out = fn(lib_np, lib_lax, d)
    return _dt(out), [(x.category, str(x.message), x.filename) for x in w]


@pytest.mark.parametrize("x64", MODES)
def test_explicit_64bit_requests_warn_as_jax(x64):
    requests = {
        "float64": ("float64", np.float64, np.dtype("float64")),
        "int64": ("int64", np.int64),
        "uint64": ("uint64",),
        "python types": (float, int, bool),
    }
    with mode(x64):
        for name, fn in REQUESTS.items():
            for kind, ds in requests.items():
                for d in ds:
                    if name == "linspace" and (kind in ("int64", "uint64") or d is bool):
                        continue
                    try:
                        theirs, tw = _run(fn, jjnp, jlax, d)
                    except TypeError:  # JAX rejects it (iota of bool): another test's question
                        continue
                    ours, ow = _run(fn, fnp, flax, d)
                    assert ours[0] == theirs[0], (name, d)
                    if x64 or kind == "python types":
                        assert ow == [] and tw == [], (name, d, ow, tw)
                        continue
                    # JAX's first warning (some functions warn twice in JAX), pointing here
                    assert len(ow) == 1 and tw, (name, d, ow)
                    assert ow[0][:2] == tw[0][:2], (name, d)
                    assert ow[0][1].startswith(f"Explicitly requested dtype {np.dtype(d)} ")
                    assert ow[0][2] == __file__, (name, ow[0][2])


# --- jit across flips -----------------------------------------------------------------------------
def test_jit_keys_on_the_flag():
    def body(m):
        def f(x, s, a):
            return x + 1.0, m.zeros(2), m.arange(3), s * 2, x.sum(), a + m.zeros(2)

        return f

    ours, theirs = functx.jit(body(fnp)), jax.jit(body(jjnp))
    a, ja = fnp.ones(2, np.float32), jjnp.ones(2, np.float32)
    for x64 in (False, True, False, True):
        with mode(x64):
            for _ in range(2):  # (the second call takes the dispatch fast path)
                got = [_dt(v) for v in ours(np.ones(2), 3, a)]
                assert got == [_dt(v) for v in theirs(np.ones(2), 3, ja)], x64
            for _ in range(2):  # host Arrays alone: the fast path keyed on their avals
                assert _dt(ours(a, 3, a)[5]) == _dt(theirs(ja, 3, ja)[5]), x64


# --- dtypes of the public functions, both modes ---------------------------------------------------
ARGS = {
    "i32": np.ones((2, 3), np.int32),
    "f32": np.ones((2, 3), np.float32),
    "b": np.ones((2, 3), np.bool_),
    "u8": np.ones((2, 3), np.uint8),
    "f64": np.ones((2, 3), np.float64),
    "pi": 2,
    "pf": 2.0,
}
# argument kinds by arity: the arity is the first that JAX accepts with int32 operands
KINDS = {1: [("i32",), ("b",), ("pi",)], 2: [("i32", "pf"), ("u8", "i32")]}
# (library, name, argument kinds, mode): functx's dtype differs from JAX's by design (none now:
# functx.nn gives integer and bool inputs JAX's dtypes, float64 with x64 on where JAX mixes them
# with a Python float).
KNOWN: set = set()


def _sig(tree):
    return [np.dtype(leaf.dtype) for leaf in jax.tree_util.tree_leaves(tree)]


def _sweep(lib, ours_mod, theirs_mod, names, arities):
    """functx's result dtypes against JAX's x64 ones, and against those narrowed to 32 bits with
    x64 off: JAX's default mode is its x64 mode canonicalized (``canonicalize_dtype``), which
    the other tests here check against JAX itself; tracing JAX once per case halves the time."""
    bad = []
    for name in names:
        ff, jf = getattr(ours_mod, name, None), getattr(theirs_mod, name, None)
        if not callable(ff) or not callable(jf) or isinstance(jf, type):
            continue
        if getattr(jf, "__module__", "").partition(".")[0] == "numpy":
            continue  # NumPy's own function under JAX's name (can_cast): nothing to trace
        for n in arities:
            try:
                with mode(True):
                    first = _sig(jax.eval_shape(jf, *[ARGS["i32"]] * n))
                break
            except Exception:  # noqa: BLE001 - not this arity
                continue
        else:
            continue
        for kinds in KINDS[n]:
            args = [ARGS[k] for k in kinds]
            try:
                if kinds == ("i32",):
                    want64 = first
                else:
                    with mode(True):
                        want64 = _sig(jax.eval_shape(jf, *args))
            except Exception:  # noqa: BLE001 - JAX rejects it: nothing to compare
                continue
            for x64 in MODES:
                want = want64 if x64 else [dtypes.TO_32BIT.get(d, d) for d in want64]
                with mode(x64):
                    try:
                        got = _sig(functx.eval_shape(ff, *args))
                    except Exception:  # noqa: BLE001 - rejected: a question for other tests
                        continue
                if got != want and (lib, name, kinds, x64) not in KNOWN:
                    bad.append(f"{lib}.{name}{kinds} x64={x64}: {got} (JAX {want})")
    return bad


@pytest.mark.parametrize("lib", ["numpy", "lax", "nn"])
def test_public_function_dtypes_both_modes(lib):
    ours, theirs = {"numpy": (fnp, jjnp), "lax": (flax, jlax), "nn": (fnn, jnn)}[lib]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bad = _sweep(lib, ours, theirs, sorted(ours.__all__), (1,) if lib == "nn" else (1, 2))
    assert not bad, "\n".join(bad)


def test_trace_caches_key_on_the_x64_mode():
    """A function traced in one mode is traced again in the other: its constants' dtypes
    depend on the mode (vmap, grad and jit caches alike)."""
    import functx.experimental as fx_exp

    def f(x):
        return x * np.float64(2)

    x = np.ones(3, np.float32)
    for transform in (functx.vmap, functx.jit):
        g = transform(f)
        with fx_exp.enable_x64(True):
            assert g(x).dtype == np.float64
        with fx_exp.enable_x64(False):
            assert g(x).dtype == np.float32
    gr = functx.grad(lambda x: f(x).sum())
    with fx_exp.enable_x64(True):
        assert gr(x).dtype == np.float32  # (the gradient has the input's dtype)
    with fx_exp.enable_x64(False):
        assert gr(x).dtype == np.float32
