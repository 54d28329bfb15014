"""More API pieces found missing by JAX's own test files (issue 18 item 8): the settings
(``transfer_guard*``, ``legacy_prng_key``, ``log_compiles``), ``ensure_compile_time_eval``,
``lax.mul(out_dtype=)``, ``lax.platform_dependent``, tokens, and the ``jnp`` functions below;
checked against JAX 0.10.2 computed here (values, dtypes, error classes)."""

import logging

import jax
import jax.numpy as jnp_ref
import numpy as np
import pytest
from x64util import x64_off

import functx
import functx.numpy as jnp
from functx import lax

# --- settings ------------------------------------------------------------------------------------
GUARDS = [
    "transfer_guard_host_to_device",
    "transfer_guard_device_to_device",
    "transfer_guard_device_to_host",
]


def test_transfer_guards_as_jax():
    for level in ("allow", "log", "disallow", "log_explicit", "disallow_explicit"):
        with functx.transfer_guard(level), jax.transfer_guard(level):
            for name in GUARDS:
                assert functx.config.read("jax_" + name) == getattr(jax.config, "jax_" + name)
            # functx checks no transfers: these run in a "disallow" block
            assert functx.numpy.arange(3).shape == (3,)
            assert not jnp.iscomplexobj(np.float32(1))
        for name in GUARDS:
            with getattr(functx, name)(level), getattr(jax, name)(level):
                assert functx.config.read("jax_" + name) == getattr(jax.config, "jax_" + name)
    for name in ["transfer_guard"] + GUARDS:
        for lib in (jax, functx):
            with pytest.raises(ValueError, match="new enum value"):
                with getattr(lib, name)("bad"):
                    pass
    assert functx.config.jax_transfer_guard_host_to_device is None
    functx.config.update("jax_transfer_guard", "log")
    try:
        assert functx.config.jax_transfer_guard_device_to_host == "log"
    finally:
        functx.config.update("jax_transfer_guard", None)


def test_legacy_prng_key_as_jax():
    for level in ("allow", "warn", "error"):
        with functx.legacy_prng_key(level), jax.legacy_prng_key(level):
            assert functx.config.jax_legacy_prng_key == jax.config.jax_legacy_prng_key

    @functx.legacy_prng_key("allow")
    def draw():
        return functx.random.uniform(functx.random.PRNGKey(0), (2,))

    assert draw().shape == (2,)
    for lib in (jax, functx):
        with pytest.raises(ValueError):
            lib.legacy_prng_key("bad")


def test_log_compiles_logs_at_warning(caplog):
    @functx.jit
    def add(x):
        return x * 2

    x = np.arange(8, dtype=np.int32)
    with functx.log_compiles(True), jax.log_compiles(True):
        assert functx.config.jax_log_compiles is True is jax.config.jax_log_compiles
        with caplog.at_level(logging.WARNING):
            add(x)
            functx.clear_caches()
            add(x)
            add(x)  # (a cached call: no log)
    traced = [r for r in caplog.records if "Finished tracing + transforming add" in r.message]
    assert len(traced) == 2 and all(r.levelno == logging.WARNING for r in traced)
    assert any("Compiling jit(add)" in r.message for r in caplog.records)
    assert functx.config.jax_log_compiles is False
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        add(np.arange(3, dtype=np.int32))  # (outside the block: DEBUG only)
    assert not caplog.records


# --- ensure_compile_time_eval --------------------------------------------------------------------
def _branchy(lib, np_):
    def f(x):
        with lib.ensure_compile_time_eval():
            y = np_.sin(2.0)
            big = bool(y > 0.5)  # concrete under jit
        return x * y if big else x

    return f


def test_ensure_compile_time_eval_against_jax():
    x = np.float32(1.5)
    ours, ref = _branchy(functx, jnp), _branchy(jax, jnp_ref)
    np.testing.assert_allclose(functx.grad(ours)(x), jax.grad(ref)(x), rtol=1e-6)
    xs = np.arange(3, dtype=np.float32)
    np.testing.assert_allclose(functx.vmap(ours)(xs), jax.vmap(ref)(xs), rtol=1e-6)
    # sin ran at once: the Jaxpr (what jit compiles) multiplies by its value, as JAX's does
    for lib, f in [(functx, ours), (jax, ref)]:
        jaxpr = lib.make_jaxpr(f)(x)
        assert "sin" not in str(jaxpr) and jaxpr.eqns[-1].primitive.name == "mul"
    # traced operands are still staged; no leak (JAX issue 25847)
    with functx.ensure_compile_time_eval():
        np.testing.assert_allclose(jnp.linalg.solve(jnp.eye(3), jnp.ones(3)), np.ones(3))
    assert not functx.core.is_tracing()


# --- lax.mul(out_dtype=), platform_dependent, tokens ---------------------------------------------
@pytest.mark.parametrize(
    "dx,dy,do",
    [
        ("float32", "bfloat16", "float16"),
        ("bfloat16", "bfloat16", "float32"),
        ("int32", "int32", "float32"),
    ],
)
def test_mul_out_dtype_against_jax(dx, dy, do):
    rng = np.random.RandomState(0)
    x = rng.randn(50).astype(np.float32).astype(jnp_ref.dtype(dx))
    y = rng.randn(50).astype(np.float32).astype(jnp_ref.dtype(dy))
    ref = jax.lax.mul(x, y, out_dtype=do)
    got = lax.mul(x, y, out_dtype=do)
    assert got.dtype == ref.dtype
    np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
    if dx == "float32":  # (one compile)
        compiled = functx.jit(lambda a, b: lax.mul(a, b, out_dtype=do))(x, y)
        np.testing.assert_array_equal(np.asarray(compiled), np.asarray(ref))
    if dx != "int32":
        g = functx.grad(lambda a: lax.mul(a, y, out_dtype=do).astype(np.float32).sum())(x)
        r = jax.grad(lambda a: jax.lax.mul(a, y, out_dtype=do).astype(np.float32).sum())(x)
        assert g.dtype == r.dtype
        np.testing.assert_allclose(np.asarray(g, np.float32), np.asarray(r, np.float32))


def test_mul_out_dtype_grad_float64():
    from functx.test_util import check_grads

    x, y = np.float64(1.3), np.float32(0.7)
    check_grads(lambda a: lax.mul(a, y, out_dtype=np.float64), (x,), 2, ["fwd", "rev"])


def test_platform_dependent_against_jax():
    x = np.arange(3, dtype=np.float32)
    f_ours = lambda x: lax.platform_dependent(x, cpu=jnp.sin, default=jnp.cos)  # noqa: E731
    f_ref = lambda x: jax.lax.platform_dependent(x, cpu=jnp_ref.sin, default=jnp_ref.cos)  # noqa: E731
    for t_ours, t_ref in [
        (lambda f: f, lambda f: f),
        (functx.jit, jax.jit),
        (functx.vmap, jax.vmap),
    ]:
        np.testing.assert_allclose(t_ours(f_ours)(x), t_ref(f_ref)(x), rtol=1e-6)
    g = functx.grad(lambda x: lax.platform_dependent(x, cpu=jnp.sin, default=jnp.cos))(1.0)
    np.testing.assert_allclose(g, jax.grad(lambda x: f_ref(x))(1.0), rtol=1e-6)
    # no-argument branches; only the chosen branch is traced
    assert lax.platform_dependent(cpu=lambda: 1.0, tpu=lambda: 1 / 0) == 1.0
    eqns = functx.make_jaxpr(f_ours)(x).eqns
    assert [e.primitive.name for e in eqns] == ["sin"]
    for lib in (functx, jax):
        with pytest.raises(NotImplementedError, match="translation rule .* not found for platform"):
            lib.lax.platform_dependent(3.0, tpu=lambda x: x + 2.0)
        with pytest.raises(ValueError, match="Use 'cuda' or 'rocm'"):
            lib.lax.platform_dependent(3.0, gpu=lambda x: x)
        with pytest.raises(TypeError, match="must be a callable"):
            lib.lax.platform_dependent(3.0, cpu=1)


def test_tokens_as_jax():
    tok = lax.create_token(123)
    ref = jax.lax.create_token(123)
    assert functx.tree_util.tree_leaves(tok) == []
    assert isinstance(lax.after_all(tok, tok), type(tok))
    assert isinstance(lax.after_all(), type(tok))
    for lib, t in [(functx, tok), (jax, ref)]:
        with pytest.raises(TypeError, match="must be tokens"):
            lib.lax.after_all(t, np.ones(2))
        out = lib.jit(lambda x: (x + 2, t))(7)
        assert isinstance(out[1], type(t)) and out[1] is not t and int(out[0]) == 9
        assert isinstance(lib.jit(lib.lax.create_token)(1.0), type(t))


def test_default_mode_dtypes():
    with x64_off():
        got = lax.mul(np.int32(3), np.int32(2), out_dtype=float)
        ref = jax.lax.mul(np.int32(3), np.int32(2), out_dtype=float)
        assert got.dtype == ref.dtype and float(got) == float(ref)


# --- jnp.interp(period=, left/right="extrapolate"), quantile(weights=, method="inverted_cdf") ---
INTERP = [(None, None, None), ("extrapolate", "extrapolate", None), (-1.0, "extrapolate", None)]
INTERP += [(None, None, 3.0), (None, None, -2.5)]


def test_interp_period_extrapolate_against_jax():
    rng = np.random.RandomState(0)
    x = rng.uniform(-4, 6, 7).astype(np.float32)
    fp = rng.randn(5).astype(np.float32)
    for i, (left, right, period) in enumerate(INTERP):
        xp = rng.uniform(-3, 5, 5) if period else np.sort(rng.uniform(0, 3, 5))
        xp = xp.astype(np.float32)
        x64 = i != 1  # (one case in the default mode)
        with functx.enable_x64(x64), jax.enable_x64(x64):
            got = jnp.interp(x, xp, fp, left, right, period)
            ref = jnp_ref.interp(x, xp, fp, left, right, period)
        assert got.dtype == ref.dtype
        np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-5, atol=1e-6)
    for kw, err in [({"left": "bad"}, "only valid string"), ({"period": np.ones(2)}, "scalar")]:
        for lib in (jnp, jnp_ref):
            with pytest.raises(ValueError, match=err):
                lib.interp(1.0, np.arange(3.0), np.arange(3.0), **kw)


def test_interp_period_grad_float64():
    from functx.test_util import check_grads

    xp, fp = np.array([0.3, 2.0, 1.1, 2.9]), np.array([1.0, -2.0, 0.5, 3.0])
    x = np.array([0.2, 1.7, 4.4, -0.6])
    check_grads(lambda x: jnp.interp(x, xp, fp, period=3.0), (x,), 1, ["fwd", "rev"])
    check_grads(lambda fp: jnp.interp(x, xp, fp, right="extrapolate"), (fp,), 1, ["rev"])


QUANTILE = [
    ((7,), None, (7,)),
    ((3, 5), 1, (5,)),
    ((3, 4, 5), (2, 0), (5, 3)),
    ((3, 4), None, None),
]


def test_quantile_weights_inverted_cdf_against_jax():
    rng = np.random.RandomState(1)
    qs = [np.array([0.0, 0.3, 1.0], np.float32), np.float32(0.3)]
    for i, ((shape, axis, wshape), name) in enumerate(
        zip(QUANTILE, ["quantile", "nanquantile"] * 2)
    ):
        a = rng.randn(*shape).astype(np.float32)
        a.flat[::5] = np.nan if name == "nanquantile" else 0.0
        w = None if wshape is None else rng.uniform(0, 2, wshape).astype(np.float32)
        kw = dict(axis=axis, weights=w, method="inverted_cdf", keepdims=i % 2 == 1)
        x64 = i != 2  # (one case in the default mode)
        with functx.enable_x64(x64), jax.enable_x64(x64):
            got = getattr(jnp, name)(a, qs[i % 2], **kw)
            ref = getattr(jnp_ref, name)(a, qs[i % 2], **kw)
        assert got.shape == ref.shape and got.dtype == ref.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
    w = np.array([1.0, 2, -1, 1, 1, 1])  # a negative weight: NaN
    for lib in (jnp, jnp_ref):
        assert np.isnan(lib.quantile(np.arange(6), 0.5, weights=w, method="inverted_cdf"))
    cases = [
        ({"weights": np.ones(6)}, NotImplementedError),
        ({"weights": np.ones(6) * 1j, "method": "inverted_cdf"}, ValueError),
        ({"weights": np.ones(2), "axis": 0, "method": "inverted_cdf"}, ValueError),
    ]
    for kw, err in cases:
        for lib in (jnp, jnp_ref):
            with pytest.raises(err):
                lib.quantile(np.arange(6.0), 0.5, **kw)


# --- jnp.insert / jnp.delete(assume_unique_indices=True) with traced indices -------------------
def _ins_del(lib):
    def f(a, obj, vals, dobj):
        return lib.insert(a, obj, vals, axis=1), lib.delete(a, dobj, 1, assume_unique_indices=True)

    return f


def test_insert_delete_traced_indices_against_jax():
    a = np.arange(15, dtype=np.float32).reshape(3, 5)
    # traced indices under vmap (scalar and array indices, values per slice), against JAX's
    objs, vals = np.array([[3, 1], [1, -2], [9, 0]]), np.arange(6, dtype=np.float32).reshape(3, 2)
    got = functx.vmap(lambda o, v: jnp.insert(a, o, v, axis=1))(objs, vals)
    want = jax.jit(jax.vmap(lambda o, v: jnp_ref.insert(a, o, v, axis=1)))(objs, vals)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    dobjs = np.array([[0, 4], [-1, 1], [3, 2]])
    got = functx.vmap(lambda o: jnp.delete(a, o, 1, assume_unique_indices=True))(dobjs)
    want = jax.jit(jax.vmap(lambda o: jnp_ref.delete(a, o, 1, assume_unique_indices=True)))(dobjs)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    # compiled (one program) against eager (concrete indices: the NumPy path) and JAX's
    args = (a, objs[0], vals[0], dobjs[0])
    compiled, eager = functx.jit(_ins_del(jnp))(*args), _ins_del(jnp)(*args)
    for c, e in zip(compiled, eager):
        assert c.shape == e.shape and c.dtype == e.dtype
        np.testing.assert_array_equal(np.asarray(c), np.asarray(e))
    np.testing.assert_array_equal(np.asarray(compiled[1]), np.asarray(want[0]))
    # nothing to insert: the values' shape does not matter, as in JAX
    empty = np.array([], np.int32)
    ref = jax.eval_shape(lambda a: jnp_ref.insert(a, empty, np.ones(5), axis=0), a)
    assert jnp.insert(a, empty, np.ones(5), axis=0).shape == ref.shape


# --- jnp.histogramdd / histogram2d ---------------------------------------------------------------
def _hists(lib, w):
    def f(s):
        a = lib.histogramdd(s, [3, np.array([-3.0, 0.5, 2.0, 6.0]), 2], [(-1, 4), None, None], w)
        b = lib.histogramdd(s, 2, density=True)
        return a, b

    return f


def _check_tree(got, want):
    got, want = functx.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        # (edges from linspace may differ in the last bit: data away from the edges)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-5, atol=1e-6)


def test_histogramdd_histogram2d_against_jax():
    rng = np.random.RandomState(0)
    s = rng.uniform(-3, 6, (20, 3)).astype(np.float32)
    w = rng.uniform(0, 1, 20).astype(np.float32)
    want = jax.jit(_hists(jnp_ref, w))(s)
    _check_tree(_hists(jnp, w)(s), want)
    compiled = functx.jit(lambda s: jnp.histogramdd(s, 2, density=True))(s)  # (one small program)
    _check_tree(compiled, want[1])
    with x64_off():
        ints = rng.randint(-3, 6, (20, 2)).astype(np.int32)
        edges = np.array([-3, 0, 2, 6])
        got = jnp.histogram2d(ints[:, 0], ints[:, 1], edges)
        ref = jax.jit(jnp_ref.histogram2d)(ints[:, 0], ints[:, 1], edges)
        assert [(g.shape, g.dtype) for g in got] == [(r.shape, r.dtype) for r in ref]
        for g, r in zip(got, ref):  # (explicit edges, integer data on them: exact)
            np.testing.assert_array_equal(np.asarray(g), np.asarray(r))
        np.testing.assert_array_equal(
            np.asarray(got[0]), np.histogram2d(ints[:, 0], ints[:, 1], edges)[0]
        )
    for kw in [{"weights": np.ones(2)}, {"bins": [1, 2, 3]}, {"range": [(0, 1)]}]:
        for lib in (jnp, jnp_ref):
            with pytest.raises(ValueError):
                lib.histogramdd(np.ones((3, 2)), **kw)


# --- vjp's and linearize's functions are pytrees (tree_util.Partial), as JAX's ------------------
def _nested(lib):
    def f(x):
        return x**2

    @lib.custom_vjp
    def g(x):
        return f(x)

    def g_fwd(x):
        return lib.vjp(f, x)  # (the pullback is g's residual: a pytree)

    g.defvjp(g_fwd, lambda f_vjp, y_bar: f_vjp(y_bar))
    return g


def test_vjp_and_linearize_functions_are_pytrees_as_jax():
    x = np.float32(1.5)
    for lib in (functx, jax):
        _, pullback = lib.vjp(lambda x: 2.0 * x * x, x)
        _, f_lin = lib.linearize(lambda x: jnp_ref.sin(x) if lib is jax else jnp.sin(x), x)
        assert len(lib.tree_util.tree_leaves(pullback)) >= 1
        got = lib.jit(lambda p, l, t: (p(t), l(t)))(pullback, f_lin, np.float32(3.0))
        np.testing.assert_allclose(np.asarray(got[0][0]), 18.0)
        np.testing.assert_allclose(np.asarray(got[1]), 3.0 * np.cos(1.5), rtol=1e-6)
        _, g_vjp = lib.vjp(_nested(lib), 1.0)
        assert float(g_vjp(1.0)[0]) == 2.0
        with pytest.raises(TypeError, match="applied to <lambda> was called with 2 arguments"):
            pullback(1.0, 1.0)
    assert isinstance(functx.linearize(jnp.sin, x)[1].func.args[0], functx.Jaxpr)


def test_complex_scalar_types_are_callable_as_jax():
    for name in ("complex64", "complex128"):
        ours, ref = getattr(jnp, name), getattr(jnp_ref, name)
        got, want = ours(0.5), ref(0.5)
        assert got.dtype == want.dtype and complex(got) == complex(want)
        assert jnp.zeros(2, ours).dtype == jnp_ref.zeros(2, ref).dtype
    assert jnp.complex64 is jnp.csingle and jnp.complex128 is jnp.cdouble
