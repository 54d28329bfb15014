"""Regressions of issue 16 (functx.lax, functx.nn, transforms, jit, tree_util, control flow):
derivatives at the kinks of the activations match JAX, and invalid arguments are rejected (with a
functx error deriving from the builtin class JAX raises, naming the op and the user's line)
instead of being read as something else."""

import functools

import docutil
import jax
import jax.numpy as jjnp
import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx import lax, nn, tree_util
from functx.errors import FunctxError

X1 = np.arange(4.0)
X2 = np.arange(6.0).reshape(2, 3)
THIS_FILE = __file__


class Unregistered:
    """A user class nobody registered as a pytree node."""


# --- 1. derivatives of the activations at their kinks --------------------------------------------
ACTIVATIONS = [
    "relu",
    "relu6",
    "softplus",
    "log_sigmoid",
    "sigmoid",
    "silu",
    "elu",
    "leaky_relu",
    "gelu",
]
KINKS = [-6.0, -1.0, 0.0, 1e-300, 3.0, 6.0, 7.0]


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_derivatives_match_jax_at_kinks(name):
    fx, jx = getattr(nn, name), getattr(jax.nn, name)
    for p in KINKS:
        d1 = float(functx.grad(fx)(np.float64(p)))
        d2 = float(functx.grad(functx.grad(fx))(np.float64(p)))
        assert d1 == pytest.approx(float(jax.grad(jx)(p)), rel=1e-12, abs=1e-12), (name, p)
        assert d2 == pytest.approx(float(jax.grad(jax.grad(jx))(p)), rel=1e-9, abs=1e-12), (name, p)


def test_relu6_softplus_log_sigmoid_kinks():
    # the values the issue names: relu6'(6) is 0 (was 0.5), relu6'(0) is 0; softplus'(0) and
    # log_sigmoid'(0) are 1/2 (were 0 and 1)
    g = functx.vmap(functx.grad(nn.relu6))(np.array([0.0, 3.0, 6.0]))
    np.testing.assert_array_equal(np.asarray(g), [0.0, 1.0, 0.0])
    assert float(functx.grad(nn.softplus)(0.0)) == 0.5
    assert float(functx.grad(nn.log_sigmoid)(0.0)) == 0.5
    # the values themselves (eager and compiled) are unchanged
    xs = np.array([-1.0, 0.0, 3.0, 6.0, 7.0], np.float32)
    np.testing.assert_array_equal(np.asarray(functx.jit(nn.relu6)(xs)), [0, 0, 3, 6, 6])
    np.testing.assert_allclose(np.asarray(nn.softplus(xs)), np.logaddexp(xs, 0), rtol=1e-6)
    np.testing.assert_allclose(
        np.asarray(functx.jit(functx.vmap(functx.grad(nn.softplus)))(xs)),
        1 / (1 + np.exp(-xs)),
        rtol=1e-6,
    )


# --- 2. invalid lax arguments are rejected, as JAX rejects them ----------------------------------
def _jax_class(call, L):
    try:
        call(L)
    except Exception as e:  # noqa: BLE001 - the class JAX raises is what we compare with
        return type(e)
    return None


# (id, call(L) with L = functx.lax or jax.lax, the builtin class JAX raises; None: JAX accepts it
# but it is meaningless, so functx raises the class given last)
LAX_BAD = [
    ("cumsum-axis3", lambda L: L.cumsum(X2, axis=3), ValueError),
    ("cumprod-axis3", lambda L: L.cumprod(X2, axis=3), ValueError),
    ("cummax-axis3", lambda L: L.cummax(X2, axis=3), ValueError),
    ("cummin-axis-3", lambda L: L.cummin(X2, axis=-3), ValueError),
    ("cumlogsumexp-axis3", lambda L: L.cumlogsumexp(X2, axis=3), ValueError),
    ("cumsum-reverse-str", lambda L: L.cumsum(X2, axis=0, reverse="yes"), (None, TypeError)),
    ("expand_dims-5", lambda L: L.expand_dims(X1, (5,)), ValueError),
    ("expand_dims--3", lambda L: L.expand_dims(X1, (-3,)), ValueError),
    ("squeeze-3", lambda L: L.squeeze(X2[:1], (3,)), ValueError),
    ("slice_in_dim-axis4", lambda L: L.slice_in_dim(X1, 0, 1, axis=4), IndexError),
    ("slice_in_dim-start9", lambda L: L.slice_in_dim(X1, 9, 10), TypeError),
    ("slice_in_dim-limit9", lambda L: L.slice_in_dim(X1, 0, 9), TypeError),
    ("slice_in_dim-backwards", lambda L: L.slice_in_dim(X1, 3, 1), TypeError),
    ("index_in_dim-5", lambda L: L.index_in_dim(X1, 5), IndexError),
    ("index_in_dim--5", lambda L: L.index_in_dim(X1, -5), IndexError),
    ("integer_pow-2.5", lambda L: L.integer_pow(X1, 2.5), TypeError),
    ("round-7", lambda L: L.round(X1, 7), ValueError),
    ("iota-3.5", lambda L: L.iota(np.int32, 3.5), TypeError),
    ("iota-bool", lambda L: L.iota(bool, 3), TypeError),
    ("iota--1", lambda L: L.iota(np.int32, -1), TypeError),
    ("reduce_sum-axes-1.5", lambda L: L.reduce_sum(X2, (1.5,)), TypeError),
    ("transpose-float", lambda L: L.transpose(X2, (1.0, 0)), TypeError),
    ("reshape-6.5", lambda L: L.reshape(X2, (6.5,)), TypeError),
    ("slice-float", lambda L: L.slice(X2, (0.5, 0), (1, 1)), TypeError),
    ("pad-pairs", lambda L: L.pad(X1, 0.0, [(1, 1)]), (ValueError, TypeError)),
    ("pad-float", lambda L: L.pad(X1, 0.0, [(1.5, 1, 0)]), TypeError),
    ("convert-foo", lambda L: L.convert_element_type(X1, "foo"), TypeError),
    ("convert-object", lambda L: L.convert_element_type(X1, object), TypeError),
    ("dynamic_slice_in_dim-axis5", lambda L: L.dynamic_slice_in_dim(X1, 0, 1, axis=5), IndexError),
    ("dynamic_index_in_dim-axis5", lambda L: L.dynamic_index_in_dim(X1, 0, axis=5), IndexError),
    (
        "dynamic_update_slice_in_dim-axis5",
        lambda L: L.dynamic_update_slice_in_dim(X1, X1[:1], 0, axis=5),
        IndexError,
    ),
    ("concatenate-empty", lambda L: L.concatenate([], 0), ValueError),
    ("reduce-dims5", lambda L: L.reduce(X1, 0.0, L.add, (5,)), ValueError),
]


@pytest.mark.parametrize("call,cls", [c[1:] for c in LAX_BAD], ids=[c[0] for c in LAX_BAD])
def test_lax_rejects_invalid_arguments_like_jax(call, cls):
    if isinstance(cls, tuple):
        jax_cls, cls = cls
        if jax_cls is not None:
            assert issubclass(_jax_class(call, jax.lax), jax_cls)
    else:
        assert issubclass(_jax_class(call, jax.lax), cls)  # what JAX raises
    with pytest.raises(cls) as e:
        call(lax)
    assert isinstance(e.value, FunctxError), repr(e.value)
    assert THIS_FILE in str(e.value), str(e.value)  # the user's line


LAX_GOOD = [
    ("cumsum-axis-1", lambda L: L.cumsum(X2, axis=1)),
    ("expand_dims--1", lambda L: L.expand_dims(X1, (-1,))),
    ("expand_dims--2", lambda L: L.expand_dims(X1, (-2,))),
    ("squeeze--2", lambda L: L.squeeze(X2[:1], (-2,))),
    ("slice_in_dim-neg", lambda L: L.slice_in_dim(X1, -3, -1)),
    ("slice_in_dim-none", lambda L: L.slice_in_dim(X1, None, None, 2)),
    ("slice_in_dim-axis-1", lambda L: L.slice_in_dim(X2, 1, 3, axis=-1)),
    ("slice_in_dim-empty", lambda L: L.slice_in_dim(X1, 2, 2)),
    ("index_in_dim--1", lambda L: L.index_in_dim(X1, -1)),
    ("index_in_dim-axis1", lambda L: L.index_in_dim(X2, 2, axis=1, keepdims=False)),
    ("integer_pow-2.0", lambda L: L.integer_pow(X1, 2.0)),
    ("integer_pow-np", lambda L: L.integer_pow(X1, np.int64(3))),
    ("round-1", lambda L: L.round(X1 + 0.5, 1)),
    ("round-0", lambda L: L.round(X1 + 0.5, L.RoundingMethod.AWAY_FROM_ZERO)),
    ("iota-np", lambda L: L.iota(np.float32, np.int64(3))),
    ("pad", lambda L: L.pad(X1, 0.0, [(1, -1, 1)])),
    ("broadcasted_iota", lambda L: L.broadcasted_iota(np.int32, (2, 3), 1)),
]


@pytest.mark.parametrize("call", [c[1] for c in LAX_GOOD], ids=[c[0] for c in LAX_GOOD])
def test_lax_valid_arguments_still_match_jax(call):
    np.testing.assert_array_equal(np.asarray(call(lax)), np.asarray(call(jax.lax)))


def test_lax_checks_run_under_jit_and_vmap():
    with pytest.raises(ValueError, match="axis 3"):
        functx.jit(lambda x: lax.cumsum(x, axis=3))(X2)
    with pytest.raises(IndexError, match="index 5"):
        functx.vmap(lambda x: lax.index_in_dim(x, 5))(X2)
    # a traced index is not a concrete int: a ConcretizationError, not a wrong slice
    with pytest.raises(functx.errors.ConcretizationError):
        functx.jit(lambda x, i: lax.index_in_dim(x, i))(X1, 1)


# --- 3. transform and jit arguments --------------------------------------------------------------
def f1(x):
    return (x**2).sum()


def f2(x, y):
    return (x * y).sum()


X = np.ones(3)

TRANSFORM_BAD = [
    ("grad-argnums-0.0", lambda M: M.grad(f1, argnums=0.0)(X), TypeError),
    ("grad-argnums-str", lambda M: M.grad(f2, argnums="a")(X, X), TypeError),
    ("grad-argnums-5", lambda M: M.grad(f2, argnums=5)(X, X), TypeError),
    ("grad-argnums-dup", lambda M: M.grad(f2, argnums=(0, 0))(X, X), TypeError),
    ("jacrev-argnums-0.0", lambda M: M.jacrev(f2, argnums=0.0)(X, X), TypeError),
    ("hessian-argnums-5", lambda M: M.hessian(f2, argnums=5)(X, X), ValueError),
    ("grad-noncallable", lambda M: M.grad(3)(X), TypeError),
    ("vjp-noncallable", lambda M: M.vjp(3, X), TypeError),
    ("jvp-noncallable", lambda M: M.jvp(3, (X,), (X,)), TypeError),
    ("vmap-noncallable", lambda M: M.vmap(3)(X), TypeError),
    ("jit-noncallable", lambda M: M.jit(3), TypeError),
    ("vjp-int-cotangent", lambda M: M.vjp(lambda a: a, X)[1](np.ones(3, np.int32)), ValueError),
    ("vmap-in_axes-float", lambda M: M.vmap(lambda a: a, in_axes=0.0)(X), TypeError),
    ("vmap-out_axes-float", lambda M: M.vmap(lambda a: a, out_axes=1.0)(X), TypeError),
    ("jit-static-0.0", lambda M: M.jit(f1, static_argnums=0.0)(X), TypeError),
    ("jit-static-str", lambda M: M.jit(f2, static_argnums="a")(X, X), TypeError),
    ("jit-static-5", lambda M: M.jit(f2, static_argnums=5), ValueError),
    ("jit-static--5", lambda M: M.jit(f2, static_argnums=-5), ValueError),
    ("jit-staticnames-z", lambda M: M.jit(f2, static_argnames="z"), ValueError),
    ("jit-staticnames-int", lambda M: M.jit(f2, static_argnames=3), TypeError),
    ("cond-noncallable", lambda M: M.lax.cond(True, 3, lambda a: a, X), TypeError),
    ("switch-noncallable", lambda M: M.lax.switch(0, [3], X), TypeError),
    ("scan-noncallable", lambda M: M.lax.scan(3, 0.0, X), TypeError),
    ("while-noncallable", lambda M: M.lax.while_loop(3, lambda a: a, X), TypeError),
    ("fori-noncallable", lambda M: M.lax.fori_loop(0, 3, 3, X), TypeError),
    ("fori-float-bounds", lambda M: M.lax.fori_loop(0.5, 3, lambda i, a: a, X), TypeError),
    ("assoc-noncallable", lambda M: M.lax.associative_scan(3, X), TypeError),
    ("tree_map-noncallable", lambda M: M.tree_util.tree_map(3, [1, 2]), TypeError),
    ("tree_map-mismatch", lambda M: M.tree_util.tree_map(lambda a, b: a, [1, 2], [1]), ValueError),
    (
        "tree_unflatten-count",
        lambda M: M.tree_util.tree_unflatten(M.tree_util.tree_structure([1, 2]), [1]),
        ValueError,
    ),
    ("tree_reduce-empty", lambda M: M.tree_util.tree_reduce(lambda a, b: a, []), TypeError),
    ("tree_reduce-noncallable", lambda M: M.tree_util.tree_reduce(3, [1, 2]), TypeError),
    (
        "register-nonclass",
        lambda M: M.tree_util.register_pytree_node(3, len, len),
        (None, TypeError),
    ),
    ("tree_leaves-is_leaf", lambda M: M.tree_util.tree_leaves([1], is_leaf=3), TypeError),
]


@pytest.mark.parametrize(
    "call,cls", [c[1:] for c in TRANSFORM_BAD], ids=[c[0] for c in TRANSFORM_BAD]
)
def test_transform_arguments_rejected_like_jax(call, cls):
    if isinstance(cls, tuple):  # (what JAX raises, or None where it accepts it; functx's class)
        assert _jax_class(call, jax) is cls[0]
        cls = cls[1]
    else:
        assert issubclass(_jax_class(call, jax), cls)
    with pytest.raises(cls) as e:
        call(functx)
    assert isinstance(e.value, FunctxError), repr(e.value)
    assert THIS_FILE in str(e.value), str(e.value)


def test_argnums_out_of_range_and_duplicate_raise():
    with pytest.raises(TypeError, match="argnums 5 is out of range") as e:
        functx.grad(f2, argnums=5)(X, X)
    assert isinstance(e.value, FunctxError)
    with pytest.raises(ValueError, match="argnums 5 is out of range"):  # (JAX: ValueError)
        functx.jacrev(f2, argnums=5)(X, X)
    with pytest.raises(ValueError, match="repeats an argument") as e:
        functx.grad(f2, argnums=(1, 1))
    assert isinstance(e.value, FunctxError) and isinstance(e.value, TypeError)
    with pytest.raises(ValueError, match="twice"):  # -1 and 1 name the same argument
        functx.grad(f2, argnums=(1, -1))(X, X)


@pytest.mark.parametrize(
    "transform",
    [
        # (JAX passes an argument outside argnums to the function as it is: differentiate it)
        lambda v: functx.grad(lambda a, b: 1.0 * b.sum(), argnums=1)(2.0, v),
        lambda v: functx.value_and_grad(lambda a, b: b.sum(), argnums=1)(2.0, v),
        lambda v: functx.vjp(lambda a, b: b, 2.0, v),
        lambda v: functx.jvp(lambda a, b: b, (2.0, v), (2.0, v)),
        lambda v: functx.vmap(lambda a, b: b, in_axes=(0, None))(X, v),
        lambda v: functx.jacrev(lambda a, b: b, argnums=1)(2.0, v),
        lambda v: functx.linearize(lambda a, b: b, 2.0, v),
    ],
    ids=["grad", "value_and_grad", "vjp", "jvp", "vmap", "jacrev", "linearize"],
)
def test_unregistered_class_names_the_argument_and_the_fix(transform):
    with pytest.raises(TypeError) as e:
        transform({"w": Unregistered()})
    msg = str(e.value)
    assert isinstance(e.value, FunctxError), repr(e.value)
    assert "argument 1['w']" in msg and "Unregistered" in msg, msg
    assert "register_pytree_node" in msg and THIS_FILE in msg, msg


def test_unregistered_class_under_jit_and_control_flow():
    for call in (
        lambda: functx.jit(lambda a: a)(Unregistered()),
        lambda: lax.scan(lambda c, x: (c, x), Unregistered(), None, length=2),
        lambda: lax.cond(True, lambda a: a, lambda a: a, Unregistered()),
        lambda: lax.while_loop(lambda a: False, lambda a: a, Unregistered()),
    ):
        with pytest.raises(TypeError, match="register_pytree_node") as e:
            call()
        assert isinstance(e.value, FunctxError) and "Unregistered" in str(e.value)

    # once registered it works
    @functools.partial(
        tree_util.register_pytree_node,
        flatten_func=lambda p: ((p.v,), None),
        unflatten_func=lambda aux, ch: Pt(ch[0]),
    )
    class Pt:
        def __init__(self, v):
            self.v = v

    g = functx.grad(lambda p: (p.v**2).sum())(Pt(np.ones(2)))
    np.testing.assert_array_equal(np.asarray(g.v), [2.0, 2.0])


def test_jit_static_argnums_still_work_where_jax_accepts_them():
    def va(x, *rest):
        return x * len(rest)

    assert float(functx.jit(va, static_argnums=3)(2.0, 1, 2, 3)) == 6.0  # *args: not checked
    assert float(functx.jit(f2, static_argnums=-1)(np.ones(2), 3.0)) == 6.0
    assert float(functx.jit(f2, static_argnames="y")(np.ones(2), y=3.0)) == 6.0

    def kw(x, **options):
        return x * options.get("scale", 1)

    assert float(functx.jit(kw, static_argnames="scale")(2.0, scale=3)) == 6.0


def test_control_flow_lengths_and_flags():
    body = lambda c, x: (c + x, x)  # noqa: E731
    with pytest.raises(ValueError, match="length must be non-negative") as e:
        lax.scan(body, 0.0, None, length=-1)
    assert isinstance(e.value, FunctxError)
    with pytest.raises(TypeError, match="length must be a non-negative int"):
        lax.scan(body, 0.0, None, length=2.5)
    with pytest.raises(TypeError, match="reverse must be a bool"):
        lax.scan(body, 0.0, X, reverse="x")
    with pytest.raises(ValueError, match="at least one branch"):
        lax.switch(0, [], X)
    # valid calls still agree with JAX
    c, ys = lax.scan(body, 0.0, X1, reverse=True)
    jc, jys = jax.lax.scan(body, 0.0, X1, reverse=True)
    assert float(c) == float(jc)
    np.testing.assert_array_equal(np.asarray(ys), np.asarray(jys))
    out = lax.fori_loop(np.int32(0), 3, lambda i, a: a + i, 0.0)
    assert float(out) == 3.0


def test_vmap_axis_size_and_in_axes_types():
    with pytest.raises(TypeError, match="axis_size") as e:
        functx.vmap(lambda a: a, in_axes=None, axis_size=-1)(X)
    assert isinstance(e.value, functx.transforms.vmap.BatchingError)
    with pytest.raises(ValueError, match="inconsistent sizes"):
        functx.vmap(f2)(X, np.ones(4))
    np.testing.assert_array_equal(
        np.asarray(functx.vmap(lambda a: a * 2, in_axes=None, axis_size=2)(X)),
        np.asarray(jax.vmap(lambda a: a * 2, in_axes=None, axis_size=2)(X)),
    )


def test_dtype_errors_are_functx_errors():
    with pytest.raises(TypeError) as e:
        fnp.zeros(3, dtype="not-a-dtype")
    assert isinstance(e.value, FunctxError)
    with pytest.raises(TypeError) as e:
        fnp.asarray(np.array(["a"]))
    assert isinstance(e.value, FunctxError)
    assert jjnp.zeros(3).dtype == np.float64  # (JAX is the reference; x64 is on in tests)


# --- the elementwise builders' docstrings ---------------------------------------------------------
@pytest.mark.parametrize(
    "name",
    [r.public_name for r in functx.primitives.elementwise.ROWS if r.builder == "plain"],
)
@pytest.mark.usefixtures("no_x64")
def test_elementwise_docstring_examples_run(name):
    """Each builder made from an elementwise row documents its arguments and result, and its
    example runs and prints what the docstring says (doctest)."""
    import doctest

    fn = getattr(lax, name)
    assert "Arguments:" in fn.__doc__ and "Returns:" in fn.__doc__, fn.__doc__
    (test,) = doctest.DocTestFinder().find(fn, name, globs={})
    assert test.examples, fn.__doc__
    # (the public names' examples run in tests/test_docstrings.py; the others here)
    for t in docutil.uncovered([test]):
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
        result = runner.run(t)
        assert result.failed == 0 and result.attempted == len(t.examples)
    # and the value agrees with JAX's (for the template's ``print(lax.name(...))`` examples;
    # lax.mul's own example calls it on jnp scalars, which the doctest above checks)
    if "print(lax." not in fn.__doc__:
        return
    args = [np.asarray(eval(a, {"np": np})) for a in _example_args(fn.__doc__)]
    np.testing.assert_allclose(
        np.asarray(fn(*args)), np.asarray(getattr(jax.lax, name)(*args)), rtol=2e-6
    )


def _example_args(doc):
    call = next(line for line in doc.splitlines() if "print(lax." in line)
    inner = call.split("print(lax.", 1)[1].split("(", 1)[1].rsplit("))", 1)[0]
    return [p if p.endswith("])") else p + ")" for p in inner.split("), ")]
