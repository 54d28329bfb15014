"""``functx.debug.print``/``callback`` and ``functx.pure_callback`` against JAX: what is printed
(and in which order) eagerly, under ``jit`` (from the compiled C++ program: a host step, not the
interpreter), ``vmap``, ``grad`` and control flow; pure_callback's values, vmap methods and
errors; the Triton program's host steps under Triton's interpreter."""

from __future__ import annotations

import doctest
import importlib.util

import docutil
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import functx
import functx.numpy as fnp
from functx import debug

jax = pytest.importorskip("jax")

X = np.arange(3.0, dtype=np.float32)


def _printed(capsys, run) -> list[str]:
    capsys.readouterr()
    run()
    return capsys.readouterr().out.splitlines()


def _model(m, dbg):
    """The same program written against ``m`` (functx or jax) and its ``debug`` module."""

    def step(c, x):
        dbg.print("step c={} x={}", c, x)
        return c + x, c * 2

    def f(x):
        dbg.print("x = {}", x)
        y = x * 2 + 1
        dbg.print("y = {y}", y=y)
        dbg.callback(lambda a, b: print("cb", a.shape, b["k"]), y, {"k": x[0]})
        c, ys = m.lax.scan(step, x[0], y)
        return (ys * x).sum() + c

    return f


F = _model(functx, debug)
J = _model(jax, jax.debug)


# What JAX 0.10.2 prints for J (recorded: running JAX here costs seconds of compilation): the same
# lines eagerly, under jit, grad and jit(grad) (the forward pass's values, once); under vmap one
# line per example (JAX's unordered callbacks print a step's examples in any order).
WANT = ["x = [0. 1. 2.]", "y = [1. 3. 5.]", "cb (3,) 0.0"] + [
    f"step c={c} x={x}" for c, x in [(0.0, 1.0), (1.0, 3.0), (4.0, 5.0)]
]
WANT_VMAP = (
    ["x = [0. 1. 2.]", "x = [1. 2. 3.]", "x = [2. 3. 4.]"]
    + ["y = [1. 3. 5.]", "y = [3. 5. 7.]", "y = [5. 7. 9.]"]
    + ["cb (3,) 0.0", "cb (3,) 1.0", "cb (3,) 2.0"]
    + [
        f"step c={c} x={x}"
        for c, x in [(0.0, 1.0), (2.0, 5.0), (1.0, 3.0), (1.0, 3.0), (7.0, 7.0), (4.0, 5.0)]
        + [(4.0, 5.0), (14.0, 9.0), (9.0, 7.0)]
    ]
)


def test_print_eager_jit_grad_vmap_like_jax(capsys):
    jf = functx.jit(F)
    for name, run in [
        ("eager", lambda: F(X)),
        ("jit", lambda: jf(X)),
        ("grad", lambda: functx.grad(F)(X)),
        ("jit grad", lambda: functx.jit(functx.grad(F))(X)),
    ]:
        assert _printed(capsys, run) == WANT, name
    got = _printed(capsys, lambda: functx.vmap(F)(X[None] + X[:, None]))
    assert got[:9] == WANT_VMAP[:9]
    assert sorted(got[9:12]) == sorted(WANT_VMAP[9:12])  # the scan's first step, and so on
    assert sorted(got) == sorted(WANT_VMAP)
    # the second jit call runs the cached program: it prints again
    assert _printed(capsys, lambda: jf(X + 1))[0] == "x = [1. 2. 3.]"


def test_jit_prints_from_the_compiled_program(capsys):
    text = functx.jit(F).lower(X).as_text()
    assert "host step 0" in text and "fx_host(0LL, h)" in text  # a C++ host step
    assert "fx_host(3LL, h)" in text  # the scan body's step, inside the compiled loop

    # the program's order: a value computed between two prints is printed between them
    def g(x):
        debug.print("a {}", x)
        z = fnp.exp(x) * 0 + 7
        debug.print("b {}", z)
        return z

    assert _printed(capsys, lambda: functx.jit(g)(X[:1])) == ["a [0.]", "b [7.]"]
    # an unused print is never dropped; a print in a while_loop prints each iteration
    h = functx.jit(lambda x: (debug.print("unused {}", x), x)[1])
    assert _printed(capsys, lambda: h(X[:1])) == ["unused [0.]"]
    w = functx.jit(
        lambda x: functx.lax.while_loop(
            lambda c: c < 3, lambda c: (debug.print("it {}", c), c + 1)[1], x
        )
    )
    assert _printed(capsys, lambda: w(np.int32(0))) == ["it 0", "it 1", "it 2"]


def test_host_steps_of_programs_sharing_code_on_threads_and_nested():
    import threading

    def adder(k):
        def f(v):
            out = functx.ShapeDtypeStruct(v.shape, v.dtype)
            return functx.pure_callback(lambda a: np.asarray(a) + k, out, v)

        return functx.jit(f)

    fs = [adder(1), adder(2)]  # one C++ source, two sets of callbacks
    bad = []

    def work(k):
        for _ in range(50):
            if not np.array_equal(np.asarray(fs[k](X)), X + k + 1):
                bad.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not bad
    outer = functx.jit(
        lambda v: functx.pure_callback(
            lambda a: np.asarray(fs[0](a)) * 10, functx.ShapeDtypeStruct(v.shape, v.dtype), v
        )
    )
    np.testing.assert_array_equal(outer(X), (X + 1) * 10)


def test_callback_errors_propagate_from_compiled_code():
    def bad(v):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        functx.jit(lambda x: (debug.callback(bad, x), x + 1)[1])(X)
    with pytest.raises(KeyError):
        debug.print("{missing}", X)  # as jax.debug.print: str.format's error
    with pytest.raises(ValueError, match="Unused positional arguments"):
        debug.print("{}", X, X)


@pytest.mark.usefixtures("no_x64")
def test_print_formats_like_jax(capsys):
    # (what JAX 0.10.2 prints, recorded): non-array leaves as they are, Python scalars as weak
    # arrays, a format without placeholders followed by its arguments, the two-call form
    def run():
        debug.print("{:.2f} {s} {}", np.float32(1.23456), [1, None], s="hi")
        debug.print("no placeholders", X[:2], 3, skip_format_check=True)
        debug.print(ordered=True)("{x}", x=np.int32(7))
        functx.jit(lambda x: debug.print("{} {}", x, 2.5))(np.float32(0.5))

    assert _printed(capsys, run) == [
        "1.23 hi [Array(1, dtype=int32, weak_type=True), None]",
        "no placeholders [0. 1.] 3",
        "7",
        "0.5 2.5",
    ]


def _pure(m, method):
    def f(x, y):
        out = m.ShapeDtypeStruct(np.broadcast_shapes(x.shape, y.shape), x.dtype)
        return m.pure_callback(
            lambda a, b: (print(np.shape(a), np.shape(b)), np.asarray(a) * np.asarray(b))[1],
            out,
            x,
            y,
            vmap_method=method,
        )

    return f


# what the callback sees under vmap in JAX 0.10.2 (its docstring's example, recorded)
SEEN = {
    "sequential": ["() ()", "() ()", "() ()"],
    "expand_dims": ["(3,) (1,)"],
    "broadcast_all": ["(3,) (3,)"],
    "legacy_vectorized": ["(3,) ()"],
}


def test_pure_callback_like_jax(capsys):
    y = np.float32(3.0)
    got = functx.jit(_pure(functx, None))(X, y)
    np.testing.assert_array_equal(got, X * 3)
    assert got.dtype == np.float32
    for method in SEEN:
        xs = X
        out = _printed(capsys, lambda: functx.vmap(_pure(functx, method), (0, None))(xs, y))
        assert out == SEEN[method], method
        r = functx.jit(functx.vmap(_pure(functx, method), (0, None)))(xs, y)
        np.testing.assert_array_equal(r, xs * 3)
    with pytest.raises(NotImplementedError):
        functx.vmap(_pure(functx, None), (0, None))(np.stack([X, X]), y)
    with pytest.raises(ValueError, match="Pure callbacks do not support JVP"):
        functx.grad(lambda x: _pure(functx, None)(x, y).sum())(X)
    with pytest.raises(ValueError):
        jax.grad(lambda x: _pure(jax, None)(x, y).sum())(X)
    with pytest.raises(ValueError, match="vmap_method"):
        functx.pure_callback(np.sin, functx.ShapeDtypeStruct((3,), np.float32), X, vmap_method="x")


DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.int32, np.uint32, np.float16, np.float32]


def test_host_steps_pass_every_dtype_through():
    """The compiled program's buffers reach the callback, and its results come back, bit for bit
    and with their dtypes (one program for all of them)."""
    xs = [(np.arange(6).reshape(2, 3) % 3 - 1).astype(d) for d in DTYPES]
    xs.append(xs[-1].astype(functx.dtypes.bfloat16))
    seen = []

    def f(*xs):
        debug.callback(lambda *v: seen.append([np.asarray(a) for a in v]), *xs)
        structs = [functx.ShapeDtypeStruct(x.shape, x.dtype) for x in xs]
        return functx.pure_callback(lambda *v: [np.asarray(a)[::-1] for a in v], structs, *xs)

    outs = functx.jit(f)(*xs)
    for x, o, s in zip(xs, outs, seen[0]):
        assert o.dtype == x.dtype and s.dtype == x.dtype
        np.testing.assert_array_equal(np.asarray(o), x[::-1])
        np.testing.assert_array_equal(s, x)


@settings(max_examples=4, deadline=None)
@given(
    shape=st.lists(st.integers(1, 3), max_size=3).map(tuple),
    dtype=st.sampled_from(DTYPES),
    axis=st.integers(0, 3),
)
def test_vmapped_callbacks_see_each_example(shape, dtype, axis):
    x = (np.arange(int(np.prod(shape)) * 2).reshape((2,) + shape) % 5).astype(dtype)
    axis = axis % x.ndim
    xb = np.moveaxis(x, 0, axis)
    seen = []
    functx.vmap(lambda v: debug.callback(lambda a: seen.append(np.asarray(a)), v), axis)(xb)
    assert len(seen) == 2
    for i in range(2):
        assert seen[i].dtype == x.dtype
        np.testing.assert_array_equal(seen[i], x[i])
    got = functx.vmap(
        lambda v: functx.pure_callback(
            lambda a: np.array(a),
            functx.ShapeDtypeStruct(v.shape, v.dtype),
            v,
            vmap_method="sequential",
        ),
        axis,
    )(xb)
    np.testing.assert_array_equal(got, x)


def test_log_sends_records_with_the_users_line(caplog):
    import logging

    with caplog.at_level(logging.INFO, logger="functx.debug"):
        functx.jit(lambda x: debug.log("x = {}", x))(X[:2])
    (rec,) = caplog.records
    assert rec.getMessage() == "x = [0. 1.]" and rec.levelno == logging.INFO
    assert rec.pathname == __file__ and rec.name == "functx.debug"


def test_io_callback_like_jax():
    from functx.control.callbacks import io_callback

    seen = []

    def cb(v):
        seen.append(np.asarray(v).tolist())
        return np.asarray(v) * 2

    def f(x):
        return io_callback(cb, functx.ShapeDtypeStruct(x.shape, x.dtype), x)

    for run in (f, functx.jit(f), functx.vmap(f)):
        np.testing.assert_array_equal(run(X), X * 2)
    functx.jit(lambda x: (f(x), x)[1])(X)  # an unused result: the call still happens
    # (what JAX 0.10.2 records for the same calls)
    assert seen == [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0], 0.0, 1.0, 2.0, [0.0, 1.0, 2.0]]
    with pytest.raises(ValueError, match="IO callbacks do not support JVP"):
        functx.grad(lambda x: f(x).sum())(X)
    with pytest.raises(ValueError, match="Cannot `vmap` ordered IO callback"):
        functx.vmap(
            lambda x: io_callback(cb, functx.ShapeDtypeStruct((), x.dtype), x, ordered=True)
        )(X)


def test_triton_host_steps_in_the_interpreter(capsys, monkeypatch):
    pytest.importorskip("triton")
    torch = pytest.importorskip("torch")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    from functx.lowering.triton.program import compile_triton
    from functx.transforms import passes

    def f(x):
        debug.print("x = {}", x)
        y = _pure(functx, None)(fnp.sin(x), x)
        debug.print("y = {}", y * 0 + 1)
        return y

    exe = compile_triton(passes.simplify(functx.make_jaxpr(f)(X)))
    assert "_fx_host(0, " in exe.source and not exe.graph_safe
    out = _printed(capsys, lambda: exe(torch.as_tensor(X)))
    assert out == ["x = [0. 1. 2.]", "(3,) (3,)", "y = [1. 1. 1.]"]


def test_docstrings():
    from functx.control.callbacks import io_callback

    for obj in (debug.print, debug.callback, debug.log, functx.pure_callback, io_callback):
        # (the public names' examples run in tests/test_docstrings.py; the others here)
        globs = {"functx": functx, "np": np}
        assert docutil.run(obj, globs=globs, optionflags=doctest.ELLIPSIS).failed == 0, obj
    # (debug_callback and pure_callback: the primitives these tests exercise)


# --- debug.breakpoint ----------------------------------------------------------------------------
def _f_with_breakpoint(x, n=3):
    z = fnp.sin(x) * n
    functx.debug.breakpoint()
    return z + 1.0


@pytest.mark.parametrize("how", ["eager", "jit", "vmap", "grad"])
def test_breakpoint_shows_the_runtime_values(how, monkeypatch, capsys):
    import io

    x = np.array([0.5, 1.5], np.float32)
    run = {
        "eager": lambda: _f_with_breakpoint(x),
        "jit": lambda: functx.jit(_f_with_breakpoint)(x),
        "vmap": lambda: functx.vmap(_f_with_breakpoint)(x),
        "grad": lambda: functx.grad(lambda v: _f_with_breakpoint(v).sum())(x),
    }[how]
    stops = 2 if how == "vmap" else 1
    monkeypatch.setattr("sys.stdin", io.StringIO("p z.tolist()\np n\np x.tolist()\nc\n" * stops))
    capsys.readouterr()
    run()
    out = capsys.readouterr().out
    assert out.count("(Pdb) ") == 4 * stops and "_f_with_breakpoint" in out
    shown = [line.split("(Pdb) ")[-1] for line in out.splitlines() if line.startswith("(Pdb) ")]
    for k in range(stops):
        z, n, xs = (eval(s) for s in shown[4 * k : 4 * k + 3])  # noqa: S307 - our own output
        assert n == 3 and xs == (x[k] if how == "vmap" else x).tolist()
        np.testing.assert_allclose(z, np.sin(np.float64(xs)) * 3, rtol=1e-6)  # (the runtime value)


def test_breakpoint_checks_its_arguments():
    with pytest.raises(ValueError, match="backend"):
        functx.debug.breakpoint(backend="web")
    with pytest.raises(TypeError, match="num_frames"):
        functx.debug.breakpoint(num_frames="2")


# --- sharding: inspect_array_sharding, visualize_sharding, visualize_array_sharding ---------------
# JAX's pictures as it draws them without colour (``rich`` is not a functx dependency; run with
# it installed, the test also draws them with JAX and compares).
_PICTURES = {  # (shape, scale) -> JAX's picture
    ((2, 4), 1.0): (50, 9),  # (width in columns, lines inside the box)
    ((8,), 1.0): (9, 1),
    ((2, 40), 2.0): (80, 19),
    ((2, 6), 0.3): (22, 2),
}


@pytest.mark.parametrize("shape,scale", list(_PICTURES))
def test_visualize_array_sharding_as_jax(shape, scale, capsys):
    x = functx.numpy.ones(shape)
    functx.debug.visualize_array_sharding(x, scale=scale)
    ours = capsys.readouterr().out
    lines = ours.splitlines()
    width, inside = _PICTURES[shape, scale]
    assert len(lines) == inside + 2 and {len(line) for line in lines} == {width}
    assert lines[0] == "┌" + "─" * (width - 2) + "┐" and lines[-1][0] == "└"
    assert sum("CPU 0" in line for line in lines) == 1
    if importlib.util.find_spec("rich") is not None:
        jax.debug.visualize_array_sharding(jax.numpy.ones(shape), scale=scale)
        assert capsys.readouterr().out == ours


def test_inspect_array_sharding():
    seen = []
    x = functx.numpy.ones((2, 3))
    functx.debug.inspect_array_sharding({"a": x, "b": [x]}, callback=seen.append)
    assert [type(s).__name__ for s in seen] == ["SingleDeviceSharding"] * 2
    assert seen[0].device_set == {x.device}
    seen.clear()
    f = functx.jit(lambda x: functx.debug.inspect_array_sharding(x, callback=seen.append) or x * 2)
    np.testing.assert_array_equal(np.asarray(f(x)), 2 * np.ones((2, 3), np.float32))
    assert len(seen) == 1 and seen[0].device_set == {x.device}  # (at trace time)
    f(x)
    assert len(seen) == 1
    with pytest.raises(TypeError):
        functx.debug.inspect_array_sharding(x, callback=3)


def test_visualize_sharding_bad_rank():
    has_rich = importlib.util.find_spec("rich") is not None  # (JAX needs it before any check)
    for m in (functx, jax) if has_rich else (functx,):
        x = m.numpy.ones((2, 2, 2))
        with pytest.raises(ValueError, match="1 and 2 dimensions"):
            m.debug.visualize_sharding(x.shape, m.sharding.SingleDeviceSharding(x.device))
