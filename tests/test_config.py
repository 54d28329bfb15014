"""``functx.debug_nans`` / ``functx.debug_infs`` (``functx/config.py``'s "jax_debug_nans" and
"jax_debug_infs") against JAX's: which computations raise FloatingPointError, the operation the
error names (JAX's de-optimized re-run of a jitted function, eager, under grad, vmap, scan), the
user's line, the ways to turn them on (blocks, ``config.update``, the environment variables), and
that off they leave the dispatch flags and the eager entry point as they were."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading

import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx import config, core, tracing

jax = pytest.importorskip("jax")

NEG = np.array([1.0, -1.0], np.float32)
ZERO = np.zeros(2, np.float32)


def _cases(m):
    jnp, lax = m.numpy, m.lax

    def two_ops(x):
        y = x * 2.0
        return jnp.log(y - 1.0)

    def scan_log(x):
        return lax.scan(lambda c, v: (c + jnp.log(v), c), 0.0, x)[0]

    return {
        "eager log": ("nans", lambda: jnp.log(NEG)),
        "eager sqrt": ("nans", lambda: jnp.sqrt(NEG)),
        "eager fine": ("nans", lambda: jnp.log(np.abs(NEG))),
        "jit two ops": ("nans", lambda: m.jit(two_ops)(NEG)),
        "jit nan input": ("nans", lambda: m.jit(lambda x: x * 2.0)(np.float32(np.nan))),
        "jit int": ("nans", lambda: m.jit(lambda x: x // 2)(np.arange(3, dtype=np.int32))),
        "jit inf without infs": ("nans", lambda: m.jit(lambda x: 1.0 / x)(ZERO)),
        "jit inf": ("infs", lambda: m.jit(lambda x: 1.0 / x)(ZERO)),
        "eager inf": ("infs", lambda: jnp.exp(np.float32(100.0)) * ZERO),
        "grad sqrt": ("nans", lambda: m.grad(lambda x: jnp.sqrt(x - 3.0))(np.float32(1.0))),
        "grad log": ("nans", lambda: m.grad(lambda x: jnp.log(x) * 2.0)(np.float32(-1.0))),
        "grad of jit": ("nans", lambda: m.grad(m.jit(lambda x: jnp.log(x)))(np.float32(-1.0))),
        "vmap log": ("nans", lambda: m.vmap(jnp.log)(NEG)),
        "jit scan": ("nans", lambda: m.jit(scan_log)(NEG)),
        "jit of grad": ("nans", lambda: m.jit(m.grad(lambda x: jnp.log(x)))(np.float32(-1.0))),
    }


def _outcome(m, case):
    kind, run = _cases(m)[case]
    state = m.debug_nans if kind == "nans" else m.debug_infs
    with state(True), np.errstate(divide="ignore", invalid="ignore"):
        try:
            np.asarray(run())
        except FloatingPointError as e:
            # (JAX's message when its op-by-op run finds nothing starts "('jit(f)', 'nan')")
            found = re.search(r"encountered in (\w+)|^\('(jit)\(", str(e))
            return e, found and (found.group(1) or found.group(2))
    return None, None


# Where functx names another operation than JAX (docs/differences.md): inside a loop run op by op,
# functx's eager scan runs the body's equations one by one and names the one that made the NaN,
# JAX names the loop.
NAMED_INSIDE = {"jit scan": "log"}
# Where JAX raises and functx computes no NaN (docs/differences.md): a gradient computes only
# the forward values it uses, and log's derivative (1/x) does not use log(x), which JAX computes.
NOT_COMPUTED = {"grad log", "grad of jit"}


@pytest.mark.parametrize("case", list(_cases(functx)))
def test_raises_and_names_the_operation_as_jax(case, no_x64):
    want, want_op = _outcome(jax, case)
    got, got_op = _outcome(functx, case)
    if case in NOT_COMPUTED:
        assert got is None and want is not None, (case, want, got)
        return
    assert (got is None) == (want is None), (case, want, got)
    if got is not None:
        assert isinstance(got, functx.FunctxError), got
        assert got_op == NAMED_INSIDE.get(case, want_op), (case, str(want), str(got))
        assert __file__ in str(got), str(got)  # the user's line


def test_library_infinities_are_not_reported_as_jax(no_x64):
    """Library functions whose functx versions pass infinite constants through operations (JAX
    keeps them inside one primitive or an initial value) raise in neither library."""
    for m in (functx, jax):
        with m.debug_infs(True), m.debug_nans(True):
            key = m.random.key(0)
            for f in (
                lambda: m.random.normal(key, (3,)),
                lambda: m.random.truncated_normal(key, -1.0, 1.0, (3,)),
                lambda: m.nn.softmax(m.numpy.array([1.0, 2.0])),
                lambda: m.nn.logsumexp(m.numpy.array([1.0, 2.0])),
            ):
                assert np.isfinite(np.asarray(f())).all(), m


def test_an_operand_holding_a_nan_is_not_reported(no_x64):
    """(docs/differences.md) An eager operation passing on its operand's NaN: JAX raises, functx
    reports only operations that make one; a jitted function's NaN output still raises."""
    for m in (functx, jax):
        x = m.numpy.array([np.nan, 1.0], dtype=np.float32)
        with m.debug_nans(True):
            if m is jax:
                with pytest.raises(FloatingPointError):
                    x * 2.0
            else:
                assert np.isnan(np.asarray(x * 2.0)[0])
                with pytest.raises(functx.errors.FunctxFloatingPointError, match="jit"):
                    functx.jit(lambda v: v * 2.0)(x)


def test_a_compiled_objects_call_is_not_checked(no_x64):
    """(docs/differences.md) ``lower().compile()``'s call returns its NaN outputs; JAX raises an
    internal error that is no FloatingPointError."""
    x = np.float32(-1.0)
    for m in (functx, jax):
        compiled = m.jit(lambda v: m.numpy.log(v)).lower(x).compile()
        with m.debug_nans(True):
            if m is jax:
                with pytest.raises(Exception) as info:
                    compiled(x)
                assert not isinstance(info.value, FloatingPointError)
            else:
                assert np.isnan(np.asarray(compiled(x)))


def test_names_the_users_line(no_x64):
    def f(x):
        y = x + 1.0
        return fnp.log(y)  # the line

    line = f.__code__.co_firstlineno + 2
    with functx.debug_nans(True), pytest.raises(FloatingPointError) as info:
        functx.jit(f)(np.float32(-3.0))
    assert f"{__file__}:{line} (f)" in str(info.value)


def test_off_by_default_and_restored(no_x64):
    assert not functx.debug_nans.value and not functx.debug_infs.value
    assert not config.slow_dispatch and not config.debug_checks_active
    assert core.eager_rules["cpu"] is tracing.eager_bind
    with functx.debug_infs(True):
        assert config.slow_dispatch and core.eager_rules["cpu"] is tracing.checked_eager_bind
        with functx.debug_infs(False):
            np.testing.assert_array_equal(functx.jit(lambda x: 1.0 / x)(ZERO), np.inf)
    assert not config.slow_dispatch and core.eager_rules["cpu"] is tracing.eager_bind
    assert np.isnan(functx.jit(fnp.log)(np.float32(-1.0)))


def test_config_update_and_read(no_x64):
    for name in ("jax_debug_nans", "jax_debug_infs"):
        assert config.read(name) is False
        config.update(name, True)
        try:
            assert config.read(name) is True and config.debug_checks_active
            with pytest.raises(FloatingPointError):
                fnp.log(NEG) if name == "jax_debug_nans" else fnp.exp(np.float32(200.0))
        finally:
            config.update(name, False)
    assert not config.slow_dispatch and not config.debug_checks_active


def test_a_block_is_per_thread(no_x64):
    inside, done = threading.Event(), threading.Event()

    def other():
        with functx.debug_nans(True):
            inside.set()
            done.wait(5)

    t = threading.Thread(target=other)
    t.start()
    try:
        inside.wait(5)
        assert config.slow_dispatch  # (some thread may check) ...
        assert np.isnan(np.asarray(fnp.log(NEG))[1])  # ... but not this one
        assert np.isnan(np.asarray(functx.jit(fnp.log)(NEG))[1])
    finally:
        done.set()
        t.join()
    assert not config.slow_dispatch


def test_environment_variable():
    code = "import functx, functx.numpy as jnp; jnp.log(jnp.float32(-1.0))"
    env = dict(os.environ, JAX_DEBUG_NANS="1", PYTHONPATH=os.path.dirname(functx.__path__[0]))
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert run.returncode != 0 and "FunctxFloatingPointError" in run.stderr, run.stderr[-2000:]


# --- check_tracer_leaks, default_prng_impl ---------------------------------------------------
def test_check_tracer_leaks_state_as_jax():
    for m, name in ((functx, "functx"), (jax, "jax")):
        assert m.check_tracer_leaks.value is False, name
        with m.check_tracer_leaks(True):
            assert m.check_tracer_leaks.value is True
            assert float(m.grad(lambda x: x * x)(np.float32(2.0))) == 4.0
        assert m.config.jax_check_tracer_leaks is False
    with pytest.raises(functx.errors.UnexpectedTracerError):  # (reported where it is used)
        with functx.check_tracer_leaks(True):
            leaked = []
            functx.jit(lambda x: leaked.append(x) or x)(np.float32(1))
            leaked[0] + 1.0


def test_default_prng_impl_as_jax_for_threefry():
    for m in (functx, jax):
        assert m.default_prng_impl.value == "threefry2x32"
        with m.default_prng_impl("threefry2x32"):
            bits = m.random.key_data(m.random.key(3))
        np.testing.assert_array_equal(
            np.asarray(bits), np.asarray(jax.random.key_data(jax.random.key(3)))
        )
    with pytest.raises(functx.FunctxValueError):  # (other bits than JAX's: refused)
        functx.config.update("jax_default_prng_impl", "rbg")
    for m in (functx, jax):  # (a bad value: ValueError; no value for a string option: TypeError)
        with pytest.raises(ValueError):
            m.default_prng_impl("nope")
        with pytest.raises(TypeError):
            m.default_prng_impl()
    with pytest.raises(functx.FunctxValueError):
        functx.default_prng_impl("nope")
    with pytest.raises(functx.FunctxTypeError, match="default_prng_impl"):
        functx.default_prng_impl()
    assert functx.config.read("jax_default_prng_impl") == "threefry2x32"
