"""API pieces found missing by JAX's own test files (api, custom_api, lax_control_flow): checked
against JAX 0.10.2 (values, dtypes, error classes and the messages JAX's tests match)."""

import doctest
import re
import weakref

import docutil
import jax
import jax.numpy as jnp_ref
import numpy as np
import pytest
from x64util import x64_off

import functx
import functx.custom_derivatives as fcd
import functx.numpy as jnp
from functx import lax

# --- jax.lax.<name>_p ----------------------------------------------------------------------------
PRIMS = ["sin", "cos", "ge", "dot_general", "convert_element_type", "integer_pow", "reduce_sum"]
PRIMS += ["reduce_prod", "iota", "while", "scan", "cond", "psum"]


@pytest.mark.parametrize("name", PRIMS)
def test_primitive_names_match_jax(name):
    p = getattr(lax, name + "_p")
    assert p.name == getattr(jax.lax, name + "_p").name
    assert name + "_p" in lax.__all__


def test_primitive_is_the_traced_one():
    j = functx.make_jaxpr(lambda x: jnp.sin(x) >= 0.0)(1.0)
    assert [e.primitive for e in j.eqns] == [lax.sin_p, lax.ge_p]
    assert lax.sin_p.bind(np.float32(0.5)) == np.sin(np.float32(0.5))


# --- Lowered / Compiled / Traced -----------------------------------------------------------------
def _add(x, y):
    return {"s": x + y}


def test_lowered_compiled_traced_against_jax():
    args = (np.ones(3, np.float32), np.arange(3, dtype=np.float32))
    ours = functx.jit(_add, donate_argnums=0, inline=True, compiler_options={}).lower(*args)
    ref = jax.jit(_add, donate_argnums=0, inline=True, compiler_options={}).lower(*args)
    got = ours.args_info[0]
    want = ref.args_info[0]
    assert [(a.shape, a.dtype, a.donated) for a in got] == [
        (a.shape, a.dtype, a.donated) for a in want
    ]
    assert ours.args_info[1] == {} == ref.args_info[1]
    assert ours.out_info["s"].shape == ref.out_info["s"].shape == (3,)
    for dialect in (None, "stablehlo", "hlo"):
        assert "# Jaxpr" in ours.as_text(dialect)
        ref.as_text(dialect)
    with pytest.raises(ValueError, match="unknown dialect"):
        ours.as_text("nope")
    with pytest.raises(ValueError, match="unknown dialect"):
        ref.as_text("nope")
    assert ours.compiler_ir() is ours.jaxpr and ours.compiler_ir("stablehlo") is ours.jaxpr
    comp = ours.compile(compiler_options={"x": 1})
    assert comp.runtime_executable() is not None and comp.args_info[0][0].donated
    np.testing.assert_array_equal(comp(*args)["s"], ref.compile()(*args)["s"])
    traced = functx.jit(lambda x: x * 2).trace(1.0)
    want = jax.jit(lambda x: x * 2).trace(1.0)
    assert str(traced.jaxpr) == str(want.jaxpr)
    assert traced.out_info.shape == () and traced.out_info.dtype == want.out_info.dtype
    assert traced.lower().compile()(3.0) == 6.0


def test_jit_arguments_checked_as_jax():
    for lib in (functx, jax):
        f = lib.jit(lambda x: (x**2).sum())
        assert f._cache_size() == 0
        for _ in range(3):
            f(np.arange(5.0))
        assert f._cache_size() == 1
        with pytest.raises(ValueError, match="Non-hashable static arguments are not supported"):
            lib.jit(lambda x: x, static_argnums=0)(np.arange(3))


# --- Array and Jaxpr objects ---------------------------------------------------------------------
def test_array_delete_and_friends():
    for lib in (jnp, jnp_ref):
        x = lib.arange(3.0)
        assert weakref.ref(x)() is x
        assert not x.is_deleted() and isinstance(x.unsafe_buffer_pointer(), int)
        x.copy_to_host_async()
        x.delete()
        assert x.is_deleted() and x.shape == (3,)
        with pytest.raises(RuntimeError, match=r"Array has been deleted with shape=float\d\d\[3\]"):
            np.asarray(x)
        with pytest.raises(RuntimeError, match="deleted"):
            x + 1
    u = jnp.zeros(2)  # an UncommittedArray
    assert not u.is_deleted() and weakref.ref(u)() is u
    assert functx.copy_to_host_async([u, 3]) == [u, 3]


def test_jaxpr_weakref_and_pretty_print():
    f = lambda x: jnp.cos(x) * 2.0  # noqa: E731
    ours = functx.make_jaxpr(f)(1.0)
    ref = jax.make_jaxpr(lambda x: jnp_ref.cos(x) * 2.0)(1.0)
    assert weakref.ref(ours.jaxpr)() is ours.jaxpr
    assert ours.pretty_print(use_color=False) == ref.pretty_print(use_color=False)
    assert ours.jaxpr.pretty_print(name_stack=True) == str(ours.jaxpr)
    assert ours.invars == ours.jaxpr.invars and ours.outvars == ours.jaxpr.outvars


# --- top-level names -----------------------------------------------------------------------------
def test_named_call_and_checking_leaks():
    def double(x):
        return x * 2.0

    for lib in (functx, jax):
        g = lib.named_call(double)
        assert g.__name__ == "double"
        with lib.checking_leaks():
            assert lib.jit(lib.grad(g))(1.0) == 2.0
            assert lib.named_call(double, name="d")(3.0) == 6.0


def test_lax_map_batch_size():
    xs = {"a": np.arange(14, dtype=np.float32).reshape(7, 2), "b": np.arange(7, dtype=np.int32)}

    def f(d):
        return d["a"].sum() * d["b"], d["b"] + 1

    for bs in (None, 1, 3, 7, 9, 0):
        got = lax.map(f, xs, batch_size=bs)
        want = jax.lax.map(f, xs, batch_size=bs)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g, w)
    grad = functx.grad(lambda a: lax.map(jnp.sin, a, batch_size=2).sum())(np.ones(5))
    np.testing.assert_allclose(grad, np.cos(np.ones(5)))


# --- custom derivatives --------------------------------------------------------------------------
def test_custom_vjp_nondiff_argnames_and_optimize_remat():
    for lib in (functx, jax):
        f = lib.custom_vjp(lambda x, n: x**n, nondiff_argnames=("n",))
        f.defvjp(
            lambda x, n: (x**n, x), lambda n, x, g: (g * n * x ** (n - 1),), optimize_remat=True
        )
        assert f.nondiff_argnums == (1,)
        assert lib.grad(f)(2.0, 3) == 12.0
        h = lib.custom_jvp(lambda s, x: s * x, nondiff_argnames=("s",))
        h.defjvp(lambda s, p, t: (s * p[0], s * t[0]))
        assert h.nondiff_argnums == (0,) and lib.grad(h, 1)(3.0, 1.0) == 3.0


def _raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return e
    raise AssertionError("no error")


def _rule_errors(lib, lnp):
    def f(x):
        return lnp.sin(x)

    def f_jvp(primals, tangents):
        return primals[0]

    def f_jvp_struct(primals, tangents):
        return (primals[0],), tangents[0]

    def f_jvp_tangent(primals, tangents):
        return primals[0], lnp.ones(2)

    def f_fwd(x):
        return f(x)

    def f_bwd(res, g):
        return g

    def f_bwd_shape(res, g):
        return (lnp.ones(2),)

    cases = []
    for jvp_rule in (f_jvp, f_jvp_struct, f_jvp_tangent):
        c = lib.custom_jvp(f)
        c.defjvp(jvp_rule)
        cases.append(lambda c=c: lib.jvp(c, (1.0,), (1.0,)))
    for fwd, bwd in ((f_fwd, f_bwd), (lambda x: (f(x), None), f_bwd), (f_fwd2, f_bwd_shape)):
        c = lib.custom_vjp(f)
        c.defvjp(fwd, bwd)
        cases.append(lambda c=c: lib.grad(c)(1.0))
    return [_raised(case) for case in cases]


def f_fwd2(x):
    return np.float32(1) * x, None


def test_custom_rule_errors_match_jax():
    ours = _rule_errors(functx, jnp)
    ref = _rule_errors(jax, jnp_ref)
    patterns = [
        "Custom JVP rule f_jvp for function f must produce a pair",
        "Custom JVP rule f_jvp_struct for function f must produce primal and tangent outputs "
        "with equal container",
        "Custom JVP rule must produce primal and tangent outputs with corresponding shapes",
        "Custom VJP fwd rule f_fwd for function f must produce a pair",
        "Custom VJP bwd rule .* must produce a tuple",
        "Custom VJP bwd rule must produce an output with the same type",
    ]
    for o, r, pat in zip(ours, ref, patterns):
        assert re.search(pat, str(r)), (pat, r)
        assert re.search(pat, str(o)), (pat, o)
        assert isinstance(o, type(r)), (o, r)


def test_closure_convert_and_custom_gradient():
    def outer(lib, w):
        g, consts = lib.closure_convert(lambda x: x * w, 1.0)
        return g(2.0, *consts), len(consts)

    assert outer(fcd, 3.0) == (6.0, 0)
    assert functx.grad(lambda w: outer(fcd, w)[0])(3.0) == jax.grad(lambda w: outer(jax, w)[0])(3.0)

    def make(lib, lnp):
        @lib.custom_gradient
        def f(x, w):
            y = lnp.sin(x) * w
            return y, lambda g: (g * 3.0 * y, g * x)

        return lambda x, w: (f(x, w) * x).sum()

    args = (np.float32([0.5, 1.5]), np.float32([2.0, -1.0]))
    got = functx.jit(functx.grad(make(fcd, jnp), argnums=(0, 1)))(*args)
    want = jax.grad(make(jax, jnp_ref), argnums=(0, 1))(*args)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6)
        assert g.dtype == w.dtype


# --- docstrings ----------------------------------------------------------------------------------
DOCUMENTED = {
    "functx.named_call": functx.named_call,
    "functx.checking_leaks": functx.checking_leaks,
    "functx.copy_to_host_async": functx.copy_to_host_async,
    "functx.closure_convert": functx.closure_convert,
    "functx.custom_gradient": functx.custom_gradient,
    "functx.lax.map": lax.map,
    "Array.delete": functx.Array.delete,
    "Array.is_deleted": functx.Array.is_deleted,
    "Array.unsafe_buffer_pointer": functx.Array.unsafe_buffer_pointer,
    "Array.copy_to_host_async": functx.Array.copy_to_host_async,
    "Lowered.as_text": functx.jit(abs).lower(1.0).__class__.as_text,
    "Lowered.compiler_ir": functx.jit(abs).lower(1.0).__class__.compiler_ir,
    "Jitted.trace": functx.jit(abs).__class__.trace,
    "ClosedJaxpr.pretty_print": functx.ClosedJaxpr.pretty_print,
    "Jaxpr.pretty_print": functx.Jaxpr.pretty_print,
    "custom_vmap": functx.custom_batching.custom_vmap,
    "sequential_vmap": functx.custom_batching.sequential_vmap,
}


def test_docstring_examples():
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    with x64_off():
        for qual, obj in DOCUMENTED.items():
            doc = obj.__doc__ or ""
            assert all(s in doc for s in ("Returns:", "Example:")), qual
            tests = doctest.DocTestFinder(recurse=False).find(obj, qual, globs={})
            before = runner.failures
            # (the public names' examples run in tests/test_docstrings.py; the others here)
            for t in docutil.uncovered(tests):
                runner.run(t)
            assert sum(len(t.examples) for t in tests) > 0, qual
            assert runner.failures == before, qual


# --- custom_batching -----------------------------------------------------------------------------
def _custom_vmap_cases(lib):
    lnp = lib.numpy
    calls = []

    @lib.custom_batching.custom_vmap
    def f(x, y):
        return {"s": lnp.sin(x) * y}

    @f.def_vmap
    def rule(axis_size, in_batched, xs, ys):
        calls.append((axis_size, in_batched))
        return {"s": lnp.cos(xs) * ys}, {"s": True}

    x = np.arange(3.0, dtype=np.float32)
    y = np.float32(2)
    seq = lib.custom_batching.sequential_vmap(lambda a, b: a @ b + 1.0)
    m = np.arange(18, dtype=np.float32).reshape(2, 3, 3)
    outs = [
        f(x[1], y)["s"],
        lib.vmap(f, (0, None))(x, y)["s"],
        lib.jit(lib.vmap(f, (0, None)))(x, y)["s"],
        lib.vmap(lib.vmap(f, (0, None)), (None, 0))(x, x)["s"],
        lib.jvp(lambda a: f(a, y)["s"], (x,), (np.ones(3, np.float32),))[1],
        lib.vmap(seq, (0, None))(m, x),
        lib.vmap(seq, (0, 0))(m, m[:, 0]),
    ]
    return outs, calls


def test_custom_vmap_against_jax():
    ours, our_calls = _custom_vmap_cases(functx)
    ref, ref_calls = _custom_vmap_cases(jax)
    assert our_calls == ref_calls
    for o, r in zip(ours, ref):
        assert o.dtype == r.dtype
        np.testing.assert_allclose(o, r, rtol=1e-6)


def test_custom_vmap_errors():
    for lib in (functx, jax):
        cv = lib.custom_batching.custom_vmap
        x = np.ones(2, np.float32)
        with pytest.raises(AttributeError, match="No batching rule defined for custom_vmap"):
            cv(lambda v: v)(x)
        g = cv(lambda v: v)
        g.def_vmap(lambda n, b, v: (v, [True]))
        with pytest.raises(ValueError, match="structure of output value and output batching"):
            lib.vmap(g)(x)
        g.def_vmap(lambda n, b, v: ((v,), (True,)))
        with pytest.raises(ValueError, match="structure of output returned by custom vmap rule"):
            lib.vmap(g)(x)


def test_bwd_nones_in_subtrees_and_singleton_custom_gradient():
    def run(lib):
        f = lib.custom_vjp(lambda x: x[0])
        f.defvjp(lambda x: (f(x), None), lambda _, z: ((z, (None, None)),))
        g = lib.custom_vjp(lambda x: x[0])
        g.defvjp(lambda x: (g(x), None), lambda _, z: ((z, None),))
        h = lib.custom_gradient(lambda x: (x * 2.0, lambda ct: ct * 5.0))
        x = (1.0, (2.0, 3.0))
        return lib.grad(f)(x), lib.grad(g)(x), lib.grad(h)(1.0)

    ours, ref = run(functx), run(jax)
    for o, r in zip(jax.tree_util.tree_leaves(ours), jax.tree_util.tree_leaves(ref)):
        assert o == r and o.dtype == r.dtype
    k = functx.custom_vjp(lambda x, y: x.sum() + y.sum())
    k.defvjp(lambda x, y: (k(x, y), None), lambda _, z: (jnp.ones(4), jnp.ones(3)))
    with pytest.raises(ValueError, match=r"at output\[1\] the bwd rule produced an output of type"):
        functx.grad(k, (0, 1))(np.ones(4), np.ones(4))
    assert functx.custom_derivatives.SymbolicZero is not None


def test_custom_derivative_keyword_arguments():
    def f(x, *, z=1.0):
        return x * z

    for lib in (functx, jax):
        cf = lib.custom_jvp(f)
        cf.defjvp(lambda p, t: (f(*p), t[0]))
        assert cf(2.0) == 2.0 and cf(x=2.0) == 2.0
        with pytest.raises(TypeError, match="could not be resolved to positions: z"):
            cf(2.0, z=3.0)
        with pytest.raises(TypeError, match=r"custom_jvp-decorated function f could not be resol"):
            cf()


def test_lax_broadcast_shapes():
    for lib in (lax, jax.lax):
        assert lib.broadcast_shapes((2, 1), (3,)) == (2, 3)
        assert lib.broadcast_shapes((), (4, 1), (1, 5)) == (4, 5)
        with pytest.raises(ValueError):
            lib.broadcast_shapes((2, 3, 4), (0,))
