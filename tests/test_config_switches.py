"""JAX's top-level configuration switches (functx/config.py's ``_SWITCHES``): each is a state like
JAX's (a block, a decorator, ``.value``, ``config.update``/``read``), compared with JAX's where
functx has the behaviour: ``no_tracing``, ``no_execution``, ``explain_cache_misses``,
``debug_key_reuse``, ``threefry_partitionable``, ``allow_f16_reductions``, ``enable_checks``."""

from __future__ import annotations

import logging

import jax
import jax.numpy as jnp_ref
import numpy as np
import pytest

import functx
import functx.numpy as jnp
from functx import config, core

SWITCHES = {s.name.removeprefix("jax_"): s for s in config._SWITCHES}


@pytest.mark.parametrize("name", sorted(SWITCHES))
def test_state_as_jax(name):
    ours, theirs = getattr(functx, name), getattr(jax, name)
    assert ours is SWITCHES[name]
    assert ours.value == theirs.value, name  # (the same default)
    new = "log" if name == "array_garbage_collection_guard" else not theirs.value
    for m in (functx, jax):
        with getattr(m, name)(new):
            assert getattr(m, name).value == new
            assert getattr(m.config, ours.name) == new

        @getattr(m, name)(new)
        def inside(m=m):
            return getattr(m, name).value

        assert inside() == new
        assert getattr(m, name).value == theirs.value
    functx.config.update(ours.name, new)
    try:
        assert ours.value == new and functx.config.read(ours.name) == new
    finally:
        functx.config.update(ours.name, theirs.value)
    assert ours.value == theirs.value
    if name == "array_garbage_collection_guard":
        for m in (functx, jax):
            with pytest.raises(ValueError):
                getattr(m, name)("sometimes")
    with pytest.raises(TypeError):
        bool(ours)


# --- no_tracing / no_execution ------------------------------------------------------------------
def test_no_tracing_as_jax():
    one, two = np.float32(1), np.ones(2, np.float32)
    for m in (functx, jax):
        f = m.jit(lambda x: x * 2)
        f(one)
        with m.no_tracing(True):
            assert float(f(np.float32(3))) == 6.0  # (a program it has)
            assert f.trace(one).jaxpr is not None and f.lower(one) is not None
            for new in (lambda: f(two), lambda: f.trace(two), lambda: f.lower(two)):
                with pytest.raises(RuntimeError, match="no_tracing"):
                    new()
            with pytest.raises(RuntimeError, match="no_tracing"):
                m.make_jaxpr(lambda x: x)(one)
    with functx.no_tracing(True), pytest.raises(functx.errors.FunctxRuntimeError, match="lambda"):
        functx.jit(lambda x: x).lower(one)


def test_no_execution_as_jax():
    x = np.float32(1)
    for m in (functx, jax):
        f = m.jit(lambda x: x + 1)
        f(x)
        with m.no_execution(True):
            assert "sin" in str(m.make_jaxpr(m.numpy.sin)(x))  # (tracing still works)
            for run in (lambda: m.jit(m.numpy.cos)(x), lambda: m.numpy.sin(x), lambda: f(x)):
                with pytest.raises(RuntimeError, match="no_execution"):
                    run()
        assert float(f(x)) == 2.0
    assert not config.slow_dispatch and not config.debug_checks_active


# --- explain_cache_misses -----------------------------------------------------------------------
def _misses(m, caplog):
    def f(x, n):
        return x * n

    g = m.jit(f, static_argnums=1)
    caplog.clear()
    with caplog.at_level(logging.WARNING), m.explain_cache_misses(True):
        g(np.ones(3, np.float32), 2)
        g(np.ones(3, np.float32), 2)
        g(np.ones(4, np.float32), 2)
        g(np.ones(4, np.float32), 3)
    return [r.getMessage() for r in caplog.records if "CACHE MISS" in r.getMessage()]


@pytest.mark.usefixtures("no_jax_persistent_cache")  # (JAX's messages as users see them)
def test_explain_cache_misses_as_jax(caplog):
    ours, theirs = _misses(functx, caplog), _misses(jax, caplog)
    assert len(ours) == len(theirs) == 3
    assert "never seen function" in ours[0] and "never seen function" in theirs[0]
    line = "* at x, now f32[4] and before f32[3]"
    assert line in ours[1] and line in theirs[1]
    assert "* at n, now 3 and before 2" in ours[2]  # (JAX: "Static(val=3) and ... (val=2)")
    assert "test_config_switches.py" in ours[1] and "f defined at" in ours[1]
    caplog.clear()
    functx.jit(lambda x: x)(np.ones(5, np.float32))  # (off: nothing logged)
    assert not [r for r in caplog.records if "CACHE MISS" in r.getMessage()]


def test_explain_names_pytree_paths(caplog):
    h = functx.jit(lambda p: p["w"] @ p["b"])
    with caplog.at_level(logging.WARNING), functx.explain_cache_misses(True):
        h({"w": np.ones((2, 2), np.float32), "b": np.ones(2, np.float32)})
        h({"w": np.ones((2, 3), np.float32), "b": np.ones(3, np.float32)})
    assert "* at p['w'], now f32[2,3] and before f32[2,2]" in caplog.records[-1].getMessage()


# --- debug_key_reuse ----------------------------------------------------------------------------
def _reuse_raises(m, fn) -> bool:
    with m.debug_key_reuse(True):
        try:
            fn(m.random)
        except m.errors.KeyReuseError:
            return True
    return False


@pytest.mark.parametrize(
    "case",
    [
        lambda r: (lambda k: (r.normal(k), r.uniform(k)))(r.key(0)),
        lambda r: (lambda k: (r.split(k), r.bits(k)))(r.key(0)),
        lambda r: (lambda k: (r.fold_in(k, 1), r.fold_in(k, 2), r.normal(k)))(r.key(0)),
        lambda r: (lambda k: (r.key_data(k), r.normal(k), r.normal(r.clone(k))))(r.key(0)),
        lambda r: (lambda ks: (r.normal(ks[0]), r.normal(ks[0])))(r.split(r.key(0), 3)),
        lambda r: (lambda ks: (r.normal(ks[1]), r.split(ks[2])))(r.split(r.key(0), 3)),
        lambda r: (r.normal(r.PRNGKey(0)), r.normal(r.PRNGKey(0))),  # (raw keys: unchecked)
    ],
)
def test_key_reuse_eager_as_jax(case):
    assert _reuse_raises(functx, case) == _reuse_raises(jax, case)


def test_key_reuse_traced_as_jax():
    def twice(r):
        return lambda k: r.normal(k) + r.normal(k)

    for m in (functx, jax):
        for transform in (m.jit, m.make_jaxpr, m.vmap):
            key = m.random.split(m.random.key(0), 2) if transform is m.vmap else m.random.key(0)
            assert _reuse_raises(m, lambda r, t=transform, k=key: t(twice(r))(k))
        with m.debug_key_reuse(True):
            m.make_jaxpr(lambda k: m.random.normal(k))(m.random.key(1))  # (once: no error)
    # (jit keys its programs on the setting: a program traced without it is not reused)
    f = functx.jit(twice(functx.random))
    f(functx.random.key(0))
    assert _reuse_raises(functx, lambda r: f(r.key(0)))


def test_key_reuse_does_not_change_values():
    k = functx.random.key(5)
    with functx.debug_key_reuse(True):
        x = functx.random.normal(functx.random.key(5), (3,))
    np.testing.assert_array_equal(np.asarray(x), np.asarray(functx.random.normal(k, (3,))))


# --- threefry_partitionable ---------------------------------------------------------------------
def _draws(m, f):
    k = m.random.key(42)
    return [
        *(m.random.bits(k, (5,), dt) for dt in ("uint8", "uint16", "uint32")),
        m.random.key_data(m.random.split(k, 3)),
        m.random.key_data(m.random.fold_in(k, 7)),
        m.random.uniform(k, (2, 3)),
        m.random.randint(k, (4,), 0, 100),
        f(k),
    ]


def test_threefry_partitionable_bits_as_jax():
    # (one jitted function per library, called in both settings: its programs are keyed apart)
    fs = {m: m.jit(lambda k, m=m: m.random.bits(k, (7,), "uint16")) for m in (functx, jax)}
    for partitionable in (False, True):
        with (
            functx.threefry_partitionable(partitionable),
            jax.threefry_partitionable(partitionable),
        ):
            ours = _draws(functx, fs[functx])
            theirs = jax.jit(lambda: _draws(jax, fs[jax]))()  # (one compile, not one per op)
        for a, b in zip(ours, theirs):
            assert np.asarray(a).dtype == np.asarray(b).dtype
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_threefry_original_64_bit_as_jax():
    with functx.enable_x64(True), jax.enable_x64(True):
        for m in (functx, jax):
            with m.threefry_partitionable(False):
                got = [m.random.bits(m.random.key(3), (n,), "uint64") for n in (3, 4)]
                got.append(m.random.uniform(m.random.key(3), (3,)))
            if m is functx:
                ours = got
        for a, b in zip(ours, got):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_threefry_original_under_vmap_and_scan_as_jax():
    got = {}
    for m in (functx, jax):
        with m.threefry_partitionable(False):
            keys = m.random.split(m.random.key(7), 4)
            got[m] = [
                m.vmap(lambda k, m=m: m.random.uniform(k, (3,)))(keys),
                m.lax.scan(
                    lambda k, _, m=m: (m.random.split(k)[0], m.random.bits(k, (5,), "uint8")),
                    m.random.key(1),
                    None,
                    length=3,
                )[1],
                m.random.bits(m.random.key(5), (), "uint16"),
            ]
    for a, b in zip(got[functx], got[jax]):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# --- allow_f16_reductions, enable_checks ---------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_allow_f16_reductions_as_jax(dtype):
    for m in (functx, jax):
        x = m.numpy.ones((3, 1), dtype)
        with m.allow_f16_reductions(False):
            assert float(m.numpy.sum(x)) == 3.0  # (summed in float32: allowed)
            assert m.lax.reduce_sum(x, (1,)).shape == (3,)  # (over a size-1 axis: allowed)
            with pytest.raises(ValueError, match="jax_allow_f16_reductions=False"):
                m.lax.reduce_sum(x, (0,))
            with pytest.raises(ValueError, match="jax_allow_f16_reductions"):
                m.jit(lambda x, m=m: m.lax.reduce_sum(x, (0, 1)))(x)
        assert float(m.lax.reduce_sum(x, (0, 1))) == 3.0


def test_enable_checks_typechecks_jitted_programs(monkeypatch):
    seen = []
    real = core.typecheck_jaxpr
    monkeypatch.setattr(core, "typecheck_jaxpr", lambda j: seen.append(j) or real(j))
    f = functx.jit(functx.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2)))
    f(np.ones(3, np.float32))
    assert not seen
    with functx.enable_checks(True):
        got = functx.jit(functx.grad(lambda x: jnp.sum(jnp.tanh(x) ** 2)))(np.ones(3, np.float32))
    assert len(seen) == 1
    want = jax.grad(lambda x: jnp_ref.sum(jnp_ref.tanh(x) ** 2))(np.ones(3, np.float32))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


# --- the switches functx keeps without a behaviour of its own ------------------------------------
SM_X = np.float32([[0.5, -1.0, 2.0, 0.1], [1.0, 3.0, -2.0, 0.0]])
SM_MASK = np.array([[True, True, False, True], [True, False, True, True]])
SM_CT = np.float32([[1, 2, 3, 4], [0.5, -1, 2, 1]])


def _softmax_grads(m, jitted):
    """The gradient of a softmax loss, without and with a mask (traced under ``jit``), and a
    Hessian."""

    def loss(x, where=None):
        return (m.nn.softmax(x, where=where) * SM_CT).sum()

    def all_three(x, mask):
        hess = m.hessian(lambda v: (m.nn.softmax(v) * SM_CT[0]).sum())(x[0])
        return m.grad(loss)(x), m.grad(loss)(x, mask), hess

    return (m.jit(all_three) if jitted else all_three)(SM_X, SM_MASK)


def test_softmax_custom_jvp_as_jax():
    for on in (True, False):
        with functx.softmax_custom_jvp(on), jax.softmax_custom_jvp(on):
            ours = _softmax_grads(functx, jitted=on)  # (a traced mask: an operand of the rule)
            theirs = _softmax_grads(jax, jitted=True)
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
    traced = []
    f = functx.jit(lambda x: traced.append(1) or functx.nn.softmax(x))
    f(SM_X[0])
    with functx.softmax_custom_jvp(True):  # (jit keys its programs on the setting)
        f(SM_X[0])
        assert "custom_jvp" in str(functx.make_jaxpr(functx.nn.softmax)(SM_X[0]))
    assert len(traced) == 2
    assert "custom_jvp" not in str(functx.make_jaxpr(functx.nn.softmax)(SM_X[0]))


@pytest.mark.parametrize(
    "name",
    [
        "thread_guard",
        "enable_custom_prng",
        "remove_size_one_mesh_axis_from_type",
        "jax2tf_associative_scan_reductions",
        "auto_pcast",
        "array_garbage_collection_guard",
    ],
)
def test_kept_switches_change_no_result(name):
    new = "fatal" if name == "array_garbage_collection_guard" else not SWITCHES[name].default
    f = functx.jit(lambda x: jnp.cumsum(x) * 2)
    want = f(np.arange(4, dtype=np.float32))
    with getattr(functx, name)(new):
        np.testing.assert_array_equal(np.asarray(f(np.arange(4, dtype=np.float32))), want)
        k = functx.random.PRNGKey(0)
        assert functx.random.key_data(functx.random.split(k)).shape == (2, 2)


# --- make_user_context ----------------------------------------------------------------------------
def test_make_user_context_as_jax():
    for m in (functx, jax):
        ctx = m.make_user_context(default_value=1.0)
        traced = []
        f = m.jit(lambda x, ctx=ctx: traced.append(1) or x * ctx.value)
        assert float(f(np.float32(2))) == 2.0
        with ctx(3.0):
            assert ctx.value == 3.0
            assert float(f(np.float32(2))) == 6.0  # (traced again for the new value)
        assert float(f(np.float32(2))) == 2.0 and len(traced) == 2  # (the first program)
        ctx.set_global(5.0)
        try:
            assert ctx.get_global() == 5.0 and float(f(np.float32(2))) == 10.0
        finally:
            ctx.set_global(1.0)
        assert ctx.value == 1.0
