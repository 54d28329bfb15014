"""functx.experimental.checkify against jax.experimental.checkify: the messages, which error
wins, jit/vmap/grad composition, control flow, the automatic checks and the errors."""

from __future__ import annotations

import os

import jax
import jax.numpy as jjnp
import numpy as np
import pytest
from jax.experimental import checkify as jcheckify

import functx
import functx.numpy as fjnp
import functx.test_util
from functx.experimental import checkify as fcheckify

F32 = np.float32
LIBS = {
    "functx": (functx, fjnp, fcheckify, functx.lax),
    "jax": (jax, jjnp, jcheckify, jax.lax),
}


def _both(program, *args):
    """``program(lib, jnp, checkify, lax)`` run with functx and with JAX on ``args``: the two
    ``(err.get(), out)`` pairs."""
    res = []
    for lib, jnp, ck, lax in LIBS.values():
        err, out = program(lib, jnp, ck, lax)(*lib.tree_util.tree_map(jnp.asarray, args))
        res.append((err.get(), None if out is None else np.asarray(out)))
    return res


def _same(program, *args):
    (fm, fo), (jm, jo) = _both(program, *args)
    assert fm == jm
    if jo is not None:
        np.testing.assert_allclose(fo, jo, rtol=1e-6)
    return fm


def _two_checks(jnp, ck):
    def f(x):
        ck.check(x > 0, "x must be positive, got {}", x)
        ck.check(x < 10, "x={x} too big", x=x)
        return jnp.log(x)

    return f


@pytest.mark.parametrize("x", [-1.0, 20.0, 2.0])
@pytest.mark.parametrize("jit", [False, True])
def test_user_checks_messages_and_jit(x, jit):
    def program(lib, jnp, ck, lax):
        g = ck.checkify(_two_checks(jnp, ck))
        return lib.jit(g) if jit else g

    msg = _same(program, F32(x))
    assert (msg is None) == (x == 2.0)


def test_first_in_program_order_wins():
    def program(lib, jnp, ck, lax):
        def f(x):
            ck.check(x > 5, "first {}", x)
            ck.check(x > 10, "second {}", x)
            return x

        return ck.checkify(f)

    assert _same(program, F32(1.0)).startswith("first")


@pytest.mark.parametrize("xs", [[1.0, -2.0, -3.0, 4.0], [1.0, 2.0, 3.0], [-5.0, 20.0, 3.0]])
def test_vmap_inside_checkify_reports_jaxs_example(xs):
    def program(lib, jnp, ck, lax):
        return ck.checkify(lib.vmap(_two_checks(jnp, ck)))

    _same(program, np.asarray(xs, F32))


def test_vmap_of_checkify_batched_error():
    def program(lib, jnp, ck, lax):
        return lib.vmap(ck.checkify(_two_checks(jnp, ck)))

    xs = np.asarray([1.0, -2.0, 30.0], F32)
    assert _same(program, xs).count("at mapped index") == 2
    # throw: the last failing example, as JAX
    msgs = []
    for lib, jnp, ck, _ in LIBS.values():
        err, _ = lib.vmap(ck.checkify(_two_checks(jnp, ck)))(jnp.asarray(xs))
        with pytest.raises(ValueError) as info:
            err.throw()
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]


def test_grad_inside_checkify():
    def program(lib, jnp, ck, lax):
        return ck.checkify(lib.grad(_two_checks(jnp, ck)))

    _same(program, F32(-1.0))
    _same(program, F32(2.0))


def test_grad_of_checkified_output():
    f = fcheckify.checkify(_two_checks(fjnp, fcheckify))
    g = functx.grad(lambda x: f(x)[1])
    np.testing.assert_allclose(g(fjnp.float32(2.0)), 0.5, rtol=1e-6)
    functx.test_util.check_grads(lambda x: f(x)[1], (np.float64(2.0),), order=1)


def test_control_flow():
    def scan_prog(lib, jnp, ck, lax):
        def body(c, y):
            ck.check(y > 0, "neg {y} at {c}", y=y, c=c)
            return c + 1, y * 2

        return ck.checkify(lambda x: lax.scan(body, 0, x)[1])

    _same(scan_prog, np.asarray([1.0, -1.0, -2.0], F32))
    _same(scan_prog, np.asarray([1.0, 2.0], F32))

    def while_prog(lib, jnp, ck, lax):
        def body(c):
            ck.check(c < 3, "c {}", c)
            return c + 1

        return ck.checkify(lambda x: lax.while_loop(lambda c: c < 5, body, x))

    _same(while_prog, np.int32(0))
    _same(while_prog, np.int32(4))

    def cond_prog(lib, jnp, ck, lax):
        def yes(x):
            ck.check(x > 0, "cond {}", x)
            return x

        return ck.checkify(lambda p, x: lax.cond(p, yes, lambda x: x * 2, x))

    for p in (True, False):
        _same(cond_prog, p, F32(-1.0))


@pytest.mark.parametrize(
    "errors, fn, args",
    [
        ("nan_checks", lambda jnp, lax: jnp.sin, (F32(np.inf),)),
        ("nan_checks", lambda jnp, lax: jnp.log, (F32(2.0),)),
        ("float_checks", lambda jnp, lax: lambda x, y: x / y, (F32(3.0), F32(0.0))),
        ("div_checks", lambda jnp, lax: lambda x, y: x // y, (np.int32(3), np.int32(0))),
        ("index_checks", lambda jnp, lax: lambda x, i: x[i], (np.arange(3, dtype=F32), 5)),
        ("index_checks", lambda jnp, lax: lambda x, i: x[i], (np.arange(3, dtype=F32), -2)),
        (
            "index_checks",
            lambda jnp, lax: lambda x, i: x[i],
            (np.ones((3, 2), F32), np.asarray([0, 7, 9], np.int32)),
        ),
        (
            "index_checks",
            lambda jnp, lax: lambda x, i: lax.dynamic_update_slice(x, x[:2], (i,)),
            (np.ones(3, F32), np.int32(2)),
        ),
        (
            "all_checks",
            lambda jnp, lax: lambda x, i: jnp.sqrt(x) + x[i],
            (np.ones(3, F32), np.int32(3)),
        ),
        (
            "all_checks",
            lambda jnp, lax: lambda x, i: jnp.sqrt(x) + x[i],
            (-np.ones(3, F32), np.int32(3)),
        ),
        ("user_checks", lambda jnp, lax: jnp.log, (F32(-1.0),)),
    ],
)
def test_automatic_checks(errors, fn, args):
    def program(lib, jnp, ck, lax):
        return lib.jit(ck.checkify(fn(jnp, lax), errors=getattr(ck, errors)))

    args = tuple(np.asarray(a) if isinstance(a, int) else a for a in args)
    _same(program, *args)


def test_automatic_checks_in_a_loop_body():
    def program(lib, jnp, ck, lax):
        f = lambda x: lax.scan(lambda c, y: (c, jnp.log(y)), 0.0, x)[1]  # noqa: E731
        return ck.checkify(f, errors=ck.nan_checks)

    _same(program, np.asarray([1.0, -1.0], F32))


def test_check_error_and_throw():
    for _lib, jnp, ck, _ in LIBS.values():
        err, _ = ck.checkify(_two_checks(jnp, ck))(jnp.float32(-1.0))
        with pytest.raises(ck.JaxRuntimeError, match="x must be positive"):
            err.throw()
        with pytest.raises(ValueError, match="x must be positive"):
            ck.check_error(err)
        assert isinstance(err.get_exception(), Exception)
        # check_error under checkify: the error joins the new function's
        err2, _ = ck.checkify(lambda e: ck.check_error(e))(err)
        assert err2.get() == err.get()
    assert fcheckify.init_error.get() is None


def test_check_outside_checkify():
    f = _two_checks(fjnp, fcheckify)
    with pytest.raises(fcheckify.JaxRuntimeError, match=r"x must be positive, got -1.0"):
        f(fjnp.float32(-1.0))
    with pytest.raises(ValueError, match="not functionalized"):
        functx.jit(f)(F32(1.0))
    with pytest.raises(fcheckify.JaxRuntimeError, match="got -2.0"):
        functx.vmap(f)(fjnp.asarray([1.0, -2.0], F32))
    np.testing.assert_allclose(f(fjnp.float32(2.0)), np.log(2.0), rtol=1e-6)


def test_debug_check():
    def g(x):
        fcheckify.debug_check(x > 0, "dbg {}", x)
        return x * 2

    assert g(fjnp.float32(-1.0)) == -2.0
    assert functx.jit(g)(fjnp.float32(-1.0)) == -2.0
    assert fcheckify.checkify(g)(fjnp.float32(-1.0))[0].get() == "dbg -1.0 (`check` failed)"


def test_bad_arguments():
    with pytest.raises(TypeError, match="scalar pred"):
        fcheckify.check(fjnp.asarray([True, False]), "m")
    with pytest.raises(TypeError, match="scalar pred"):
        fcheckify.check(np.bool_(True), "m")  # (a NumPy bool: JAX refuses it too)
    with pytest.raises(TypeError, match="PyTrees of arrays"):
        fcheckify.check(True, "m {}", np.float32(1.0))
    with pytest.raises(TypeError, match="error categories"):
        fcheckify.checkify(lambda x: x, errors={"nan"})
    with pytest.raises(TypeError, match="takes an Error"):
        fcheckify.check_error(None)


@pytest.fixture
def gpu(request):
    """Triton's interpreter as the GPU (conftest's ``interpreted_gpu``), or a CUDA GPU with
    FUNCTX_TEST_TRITON_GPU=1."""
    if os.environ.get("FUNCTX_TEST_TRITON_GPU", "0") in ("", "0"):
        return request.getfixturevalue("interpreted_gpu")
    if not pytest.importorskip("torch").cuda.is_available():
        pytest.skip("FUNCTX_TEST_TRITON_GPU=1 without a CUDA device")
    return functx.devices("gpu")[0]


@pytest.mark.parametrize("backend", ["cpu", "triton"])
def test_both_backends_run_a_checkified_loop(backend, request):
    """The compiled program computes the error value (no check equation reaches the kernels):
    each backend's (err.get(), out) equals the eager interpreter's."""

    def f(x, i):
        def body(c, y):
            fcheckify.check(y > 0, "neg {} at {}", y, c)
            return c + 1, fjnp.log(y) + x[i]

        return functx.lax.scan(body, 0, x)[1]

    g = fcheckify.checkify(f, errors=fcheckify.all_checks)
    jg = functx.jit(g, backend=backend)
    dev = request.getfixturevalue("gpu") if backend == "triton" else None
    cases = [([1.0, -1.0, 2.0], 5), ([1.0, 2.0, 3.0], 5), ([1.0, 2.0, 3.0], 1)]
    for xs, i in cases if backend == "cpu" else cases[:1]:  # (Triton's interpreter is slow)
        args = (np.asarray(xs, F32), np.int32(i))
        err, out = jg(*(functx.device_put(args, dev) if dev is not None else args))
        want_err, want = g(*args)
        assert err.get() == want_err.get()
        np.testing.assert_allclose(np.asarray(out), np.asarray(want), rtol=1e-6)
    assert "check" not in str(functx.make_jaxpr(g)(*args))


def test_checkpoint_map_fori_and_pytrees():
    def remat_prog(lib, jnp, ck, lax):
        def g(x):
            ck.check(x > 0, "g {}", x)
            return jnp.log(x)

        return ck.checkify(lib.checkpoint(g), errors=ck.all_checks)

    _same(remat_prog, F32(-1.0))
    _same(remat_prog, F32(2.0))

    def map_prog(lib, jnp, ck, lax):
        def one(y):
            ck.check(y > 0, "y {}", y)
            return y * 2

        return ck.checkify(lambda x: lax.map(one, x))

    _same(map_prog, np.asarray([1.0, -3.0, -4.0], F32))

    def fori_prog(lib, jnp, ck, lax):
        def body(i, c):
            ck.check(i < 2, "i {i} c {c}", i=i, c=c)
            return c + 1.0

        return ck.checkify(lambda x: lax.fori_loop(0, 3, body, x))

    _same(fori_prog, F32(1.0))

    def tree_prog(lib, jnp, ck, lax):
        def f(d):
            ck.check(d["a"] > 0, "a={a} b={b}", a=d["a"], b=d["b"])
            return d["a"] + d["b"]

        return ck.checkify(f)

    _same(tree_prog, {"a": F32(-2.0), "b": np.asarray([1.0, 2.0], F32)})


def test_batched_while_with_a_check_is_refused_as_in_jax():
    def body(c):
        fcheckify.check(c < 2, "c {}", c)
        return c + 1

    def loop(x):
        return functx.lax.while_loop(lambda c: c < 3, body, x)

    with pytest.raises(ValueError, match="batched while-loops"):
        fcheckify.checkify(functx.vmap(loop))(fjnp.asarray([0, 1, 5]))
    # an unbatched predicate (the bound is shared) is fine: each example runs every step
    err, out = fcheckify.checkify(functx.vmap(loop, in_axes=None, axis_size=2))(fjnp.int32(0))
    assert err.get() == "c 2 (`check` failed)"
    with pytest.raises(fcheckify.JaxRuntimeError, match="c 2"):
        loop(fjnp.int32(0))


def test_a_check_in_a_scan_under_grad_is_reported():
    """Documented: JAX 0.10.2 loses this check (err.get() is None); functx reports what the
    program raises eagerly."""

    def f(x):
        def step(c, y):
            fcheckify.check(y > 0, "y {}", y)
            return c + y * c, None

        return functx.lax.scan(step, x, fjnp.asarray([1.0, -2.0], F32))[0]

    with pytest.raises(fcheckify.JaxRuntimeError, match="y -2.0"):
        functx.grad(f)(fjnp.float32(1.0))
    err, g = fcheckify.checkify(functx.grad(f))(fjnp.float32(1.0))
    assert err.get() == "y -2.0 (`check` failed)"
    np.testing.assert_allclose(g, jax.grad(lambda x: x * 2 * -1)(1.0))


def test_nan_table_names_registered_primitives():
    from functx import primitives as P
    from functx.experimental.checkify import _NAN_PRIMS

    assert _NAN_PRIMS <= set(P.registry), sorted(_NAN_PRIMS - set(P.registry))


@pytest.mark.parametrize("a, b", [([1.0, 2.0], [3.0, -4.0]), ([1.0, -2.0], [3.0, -4.0])])
def test_one_body_in_two_loops(a, b):
    """A body traced once (functx caches the trace) and used by two loops: one set of sites."""

    def program(lib, jnp, ck, lax):
        def one(y):
            ck.check(y > 0, "y {}", y)
            return jnp.log(y)

        return ck.checkify(lambda a, b: lax.map(one, a) + lax.map(one, b), errors=ck.all_checks)

    _same(program, np.asarray(a, F32), np.asarray(b, F32))
