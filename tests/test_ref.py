"""``functx.ref`` (mutable array references) against ``jax.ref``: each program below runs once with
``jax`` and once with ``functx`` as ``m`` and the two must give the same values, dtypes and errors
(eager; refs made inside ``jit``; ``Ref`` arguments of ``jit`` updated for the caller; refs a
``jit``, ``scan``, ``fori_loop``, ``while_loop`` or ``cond`` body closes over and writes;
``grad``/``vmap`` of functions that make their own refs, and JAX's errors when they write one made
outside). Where functx differs on purpose (reading a frozen or freed ref raises; ``empty_ref``
outside ``jit``) the test says so.
"""

from __future__ import annotations

import inspect

import jax
import numpy as np
import pytest

import functx
from functx.errors import FunctxError, FunctxTypeError, FunctxValueError
from functx.test_util import check_grads


def _same(a, b):
    """Equal pytrees of arrays, values and dtypes."""
    la, lb = jax.tree.leaves(a), functx.tree_util.tree_leaves(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        assert np.asarray(x).dtype == np.asarray(y).dtype, (x, y)
        np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=1e-6)


def _both(program, *args):
    """``program(m, *args)`` with JAX and with functx: the same values and dtypes."""
    _same(program(jax, *args), program(functx, *args))


# --- eager reads and writes -----------------------------------------------------------------------
def _eager_indexing(m):
    jnp = m.numpy
    r = m.new_ref(jnp.arange(12.0, dtype=jnp.float32).reshape(3, 4))
    out = [r[...], r[1], r[:, 1:3], r[-1, ::2], r[jnp.array([2, 0])], r[1, jnp.array([3, 0])]]
    r[...] = r[...] * 2
    r[0] += 1.0
    r[1, 2] = 7.0
    r[:, 0] = jnp.array([5.0, 6.0, 7.0], jnp.float32)
    r[jnp.array([2, 0]), 3] = jnp.array([-1.0, -2.0], jnp.float32)
    out.append(r[...])
    out.append(m.ref.get(r))
    out.append(m.ref.get(r, (2, slice(1, 3))))
    out.append(m.ref.swap(r, 1, jnp.zeros(4, jnp.float32)))
    m.ref.set(r, (slice(None), 1), jnp.ones(3, jnp.float32))
    m.ref.addupdate(r, ..., jnp.full((3, 4), 0.5, jnp.float32))
    m.ref.addupdate(r, jnp.array([0, 0]), jnp.ones((2, 4), jnp.float32))
    out.append(m.freeze(r))
    return out


def _eager_dtypes(m):
    jnp = m.numpy
    i = m.new_ref(jnp.arange(4, dtype=jnp.int32))
    i[1] = 9  # (a Python int: weakly typed, cast to the ref's dtype)
    i[2] += 3
    w = m.new_ref(2.5)  # (weakly typed contents)
    w[...] = w[...] * 2
    b = m.new_ref(jnp.zeros(3, bool))
    b[1] = True
    h = m.new_ref(np.ones(2, np.float16))
    h[0] = 3.0
    h[1] = jnp.asarray(0.5)  # (a weakly typed float32 array: cast)
    u = m.new_ref(jnp.zeros(3, jnp.uint8))
    u[0], u[1], u[2] = 300, -1, jnp.int32(7)  # (integers, strongly typed too: cast, wrapping)
    return i[...], w[...], b[...], h[...], u[...], m.typeof(w[...]).weak_type


def test_eager_indexing():
    _both(_eager_indexing)


def test_eager_dtypes():
    _both(_eager_dtypes)


def _x64_inputs(m):
    r = m.new_ref(np.arange(3.0))  # (float64: float32 with x64 off, float64 with it on)
    r[0] = np.float64(2.5)  # (a NumPy float64 scalar is not weakly typed)
    r[1] += 1.0
    i = m.new_ref(np.arange(3))  # (int64, or int32 with x64 off)
    i[2] = 7
    return r[...], i[...]


def test_x64_modes(no_x64):
    _both(_x64_inputs)
    with functx.enable_x64(True), jax.enable_x64(True):
        _both(_x64_inputs)


def test_attributes_and_types():
    for m in (jax, functx):
        r = m.new_ref(m.numpy.zeros((2, 3), m.numpy.float32))
        assert (r.shape, r.dtype, r.ndim, r.size, len(r)) == ((2, 3), np.float32, 2, 6, 2)
        assert isinstance(r, m.Ref) and isinstance(r, m.ref.Ref)
        assert not isinstance(r, m.Array)
        assert m.tree_util.tree_leaves([r, 1]) == [r, 1]  # (a Ref is a pytree leaf)
        assert repr(r).startswith("Ref([[0., 0., 0.],")
        assert str(m.typeof(r)) == "Ref{float32[2,3]}" and m.typeof(r).shape == (2, 3)
    f, j = functx.ref.AbstractRef, jax.ref.AbstractRef
    assert str(f(functx.core.ShapedArray((2, 3), np.float32))) == str(
        j(jax.core.ShapedArray((2, 3), np.float32))
    )


def test_signatures_match_jax():
    names = sorted(n for n in dir(jax.ref) if not n.startswith("_"))
    assert names == sorted(functx.ref.__all__)
    for n in names:
        if inspect.isfunction(getattr(jax.ref, n)):
            js, fs = (
                inspect.signature(getattr(jax.ref, n)),
                inspect.signature(getattr(functx.ref, n)),
            )
            assert [(p.name, p.kind, p.default) for p in js.parameters.values()] == [
                (p.name, p.kind, p.default) for p in fs.parameters.values()
            ], n
    for n in ("Ref", "new_ref", "empty_ref", "freeze", "free_ref"):
        assert getattr(functx, n) is getattr(functx.ref, n)
    assert functx.ref is not None and "ref" in functx.__all__


# --- errors, as JAX raises them -------------------------------------------------------------------
def _error_cases(m):
    jnp = m.numpy

    def ref(dtype=jnp.float32):
        return m.new_ref(jnp.zeros(3, dtype))

    return {
        # (a write casts only an integer to an integer dtype or a weak float to a floating one)
        "set weak float into int": lambda: ref(jnp.int32).__setitem__(0, 1.5),
        "set int plus float into int": lambda: (lambda r: r.__setitem__(..., r[...] + 1.5))(
            ref(jnp.int32)
        ),
        "set complex into float": lambda: ref().__setitem__(0, 1j),
        "set weak int into float": lambda: ref().__setitem__(0, 2),
        "set bool into int": lambda: ref(jnp.int32).__setitem__(0, True),
        "addupdate weak float into f16": lambda: m.ref.addupdate(ref(jnp.float16), 0, 1.5),
        "addupdate int8 into int32": lambda: m.ref.addupdate(ref(jnp.int32), 0, jnp.int8(1)),
        "set dtype": lambda: ref().__setitem__(..., jnp.zeros(3, jnp.int32)),
        "set f16 into f32": lambda: ref().__setitem__(..., jnp.zeros(3, jnp.float16)),
        "set shape": lambda: ref().__setitem__(..., jnp.zeros(4, jnp.float32)),
        "set no broadcast": lambda: ref().__setitem__(..., 1.0),
        "set indexed shape": lambda: ref().__setitem__(0, jnp.ones(1, jnp.float32)),
        "set int array shape": lambda: ref().__setitem__(jnp.array([0, 2]), 7.0),
        "addupdate no broadcast": lambda: m.ref.addupdate(ref(), ..., 1.0),
        "static index oob": lambda: ref()[5],
        "new_ref of list": lambda: m.new_ref([1.0, 2.0]),
        "arithmetic on a Ref": lambda: ref() + 1,
        "jit aliased args": lambda: m.jit(lambda a, b: None)(*[ref()] * 2),
        "jit aliased in a pytree": lambda: m.jit(lambda a: None)([ref()] * 2),
        "jit returns a new ref": lambda: m.jit(lambda x: m.new_ref(x))(jnp.ones(2)),
        "jit returns its ref argument": lambda: m.jit(lambda r: r)(ref()),
        "cond returns a ref": lambda: (lambda r: m.lax.cond(True, lambda: r, lambda: r))(ref()),
        "scan carries a ref": lambda: m.lax.scan(lambda c, x: (c, x), ref(), jnp.arange(2.0)),
        "scan outputs a ref": lambda: (lambda r: m.lax.scan(lambda c, x: (c, r), 0.0, None, 2))(
            ref()
        ),
        "fori_loop returns a new ref": lambda: m.lax.fori_loop(
            0, 2, lambda i, c: m.new_ref(c), jnp.zeros(2)
        ),
        "while_loop carries a ref": lambda: m.lax.while_loop(lambda c: False, lambda c: c, ref()),
        "make_jaxpr returns a ref": lambda: m.make_jaxpr(lambda x: m.new_ref(x))(1.0),
        "checkpoint returns a ref": lambda: m.checkpoint(lambda x: m.new_ref(x))(1.0),
    }


@pytest.mark.parametrize("name", list(_error_cases(functx)))
def test_errors_as_jax(name):
    with pytest.raises(Exception) as want:
        _error_cases(jax)[name]()
    with pytest.raises(Exception) as got:
        _error_cases(functx)[name]()
    base = next(c for c in type(want.value).__mro__ if c.__module__ == "builtins")
    assert isinstance(got.value, base), (type(got.value), base)
    if name != "arithmetic on a Ref":  # (Python's own TypeError, in both)
        assert isinstance(got.value, FunctxError), type(got.value)
    assert "test_ref.py" in str(got.value) or name == "arithmetic on a Ref"  # (the user's line)


def test_a_ref_returned_through_vmap_or_jvp_raises():
    # (documented: JAX's vmap and jvp return such a Ref; functx raises as its jit and scan do)
    for transform in (
        lambda f: functx.vmap(f)(np.ones((2, 2), np.float32)),
        lambda f: functx.jvp(f, (1.0,), (1.0,)),
    ):
        with pytest.raises(FunctxValueError, match="cannot be returned"):
            transform(functx.new_ref)


def test_lower_and_trace_refuse_ref_arguments():
    # (documented: JAX lowers a function of a Ref; functx's calls take Refs, these do not)
    r = functx.new_ref(np.ones(2, np.float32))
    f = functx.jit(lambda r: r[...] * 2)
    for stage in (f.lower, f.trace):
        with pytest.raises(TypeError):
            stage(r)
    np.testing.assert_array_equal(np.asarray(f(r)), [2.0, 2.0])


def test_freed_and_frozen_refs_raise():
    # Differences from JAX (documented in freeze/free_ref): JAX 0.10.2 reads a frozen ref, and a
    # freed one outside jit, without complaint; functx raises, as the refs' contract says.
    r = functx.new_ref(functx.numpy.ones(2))
    np.testing.assert_array_equal(functx.freeze(r), np.ones(2))
    with pytest.raises(FunctxValueError, match="frozen"):
        r[...]
    with pytest.raises(FunctxValueError, match="frozen"):
        r[0] = 1.0
    q = functx.new_ref(functx.numpy.ones(2))
    assert functx.free_ref(q) is None
    with pytest.raises(FunctxValueError, match="freed"):
        functx.freeze(q)

    def freed_read(m, x):
        r = m.new_ref(x)
        m.free_ref(r)
        return r[...]

    with pytest.raises(ValueError):  # (JAX checks this one under jit)
        jax.jit(lambda x: freed_read(jax, x))(np.ones(2))
    with pytest.raises(FunctxValueError):
        functx.jit(lambda x: freed_read(functx, x))(np.ones(2))
    with pytest.raises(FunctxTypeError):
        functx.ref.get(np.ones(2))


def test_empty_ref():
    def program(m, x):
        r = m.empty_ref(m.ShapeDtypeStruct((2, 3), np.float32))
        r[...] = x
        r[1, 1] = 0.0
        return m.freeze(r)

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    _same(jax.jit(lambda x: program(jax, x))(x), functx.jit(lambda x: program(functx, x))(x))
    # (difference from JAX, documented: outside jit functx's empty_ref holds zeros)
    e = functx.empty_ref(functx.ShapeDtypeStruct((2,), np.int32))
    _same(jax.numpy.zeros(2, jax.numpy.int32), e[...])


# --- jit ------------------------------------------------------------------------------------------
def _made_inside(m, x, i):
    r = m.new_ref(x)
    r[...] = r[...] * 2
    r[i] += 1.0
    m.ref.addupdate(r, 0, x[2])
    return m.freeze(r)


def test_jit_ref_made_inside():
    x = np.arange(4, dtype=np.float32)
    want = jax.jit(lambda x, i: _made_inside(jax, x, i))(x, 3)
    got = functx.jit(lambda x, i: _made_inside(functx, x, i))(x, 3)
    _same(want, got)
    _same(want, _made_inside(functx, x, 3))  # (eager: the same)
    jaxpr = str(functx.make_jaxpr(lambda x, i: _made_inside(functx, x, i))(x, 3))
    assert "Ref" not in jaxpr and "dynamic_update_slice" in jaxpr  # (state threaded as values)


def _ref_args(m):
    jnp = m.numpy

    @m.jit
    def step(acc, counts, y):
        acc[...] += y
        counts[1] = counts[1] + 1
        return acc[0] * 2

    acc = m.new_ref(jnp.zeros(3, jnp.float32))
    counts = m.new_ref(jnp.zeros(2, jnp.int32))
    outs = [step(acc, counts, jnp.ones(3, jnp.float32) * k) for k in (1.0, 2.0, 3.0)]
    return outs, acc[...], counts[...]


def test_jit_ref_arguments_updated_in_place():
    _both(_ref_args)


def _closed_over(m):
    jnp = m.numpy
    r = m.new_ref(jnp.zeros(3, jnp.float32))
    seen = m.new_ref(jnp.ones(3, jnp.float32))

    @m.jit
    def g(y):
        r[...] += y * seen[...]
        return r[0]

    first = g(jnp.ones(3, jnp.float32))
    seen[...] = jnp.full(3, 10.0, jnp.float32)  # (a later call reads the new value)
    second = g(jnp.ones(3, jnp.float32))
    return first, second, r[...]


def test_jit_refs_closed_over():
    _both(_closed_over)


# --- control flow ---------------------------------------------------------------------------------
def _loops(m, x):
    lax = m.lax
    r = m.new_ref(x)

    def fori_body(i, c):
        r[i] += c
        return c + 1.0

    c = lax.fori_loop(0, 3, fori_body, np.float32(1.0))

    def scan_body(c, xi):
        r[...] += xi
        return c + r[0], r[1] * 1

    (s, ys) = lax.scan(scan_body, np.float32(0.0), np.ones((4, 3), np.float32))

    def while_body(k):
        r[2] = r[2] * 2
        return k + 1

    k = lax.while_loop(lambda k: k < 3, while_body, 0)
    lax.cond(x[0] > -1, lambda: r.__setitem__(0, r[0] + 100.0), lambda: None)
    lax.cond(x[0] > 1e9, lambda: r.__setitem__(1, r[1] + 100.0), lambda: None)
    lax.switch(2, [lambda v: None, lambda v: None, lambda v: m.ref.addupdate(r, 1, v)], x[0])
    return c, s, ys, k, r[...]


def test_control_flow_carries_refs():
    x = np.array([0.5, 1.0, 2.0], np.float32)
    want = _loops(jax, x)
    _same(want, _loops(functx, x))  # (eager: the loops trace their bodies)
    _same(want, functx.jit(lambda x: _loops(functx, x))(x))


def _nested(m, x):
    r = m.new_ref(x)
    n = m.new_ref(np.int32(0))

    def outer(c, xi):
        def inner(i, _):
            r[i] += xi
            n[...] += 1

        m.lax.fori_loop(0, 2, inner, None)
        return c + r[0], None

    return m.lax.scan(outer, np.float32(0.0), np.arange(3, dtype=np.float32))[0], r[...], n[...]


def test_nested_loops_write_one_ref():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    _same(_nested(jax, x), _nested(functx, x))


def test_loop_bodies_read_refs_freshly():
    # a body that reads a Ref made outside it is not cached with the value it read
    r = functx.new_ref(np.float32(1.0))

    def body(c, _):
        return c + r[...], None

    first = functx.lax.scan(body, np.float32(0.0), None, length=3)[0]
    r[...] = np.float32(5.0)
    second = functx.lax.scan(body, np.float32(0.0), None, length=3)[0]
    assert (float(first), float(second)) == (3.0, 15.0)
    g = functx.grad(lambda x: x * r[...])
    r[...] = np.float32(2.0)
    assert float(g(np.float32(1.0))) == 2.0
    r[...] = np.float32(4.0)
    assert float(g(np.float32(1.0))) == 4.0


# --- grad and vmap --------------------------------------------------------------------------------
def _internal(m, x):
    q = m.new_ref(x)
    q[0] = q[1] * x[2]
    q[1:] = q[1:] ** 2
    m.ref.addupdate(q, 2, q[0])
    return (m.freeze(q) * np.arange(1.0, 4.0)).sum()


def test_grad_and_vmap_of_refs_made_inside():
    x = np.array([0.5, -1.5, 2.0])
    _same(jax.grad(lambda x: _internal(jax, x))(x), functx.grad(lambda x: _internal(functx, x))(x))
    check_grads(lambda x: _internal(functx, x), (x,), order=1, modes=("rev", "fwd"))
    xs = np.arange(6.0).reshape(2, 3)
    _same(
        jax.vmap(lambda x: _internal(jax, x))(xs), functx.vmap(lambda x: _internal(functx, x))(xs)
    )


@pytest.mark.parametrize("transform", ["grad", "vmap"])
def test_grad_and_vmap_writing_an_outer_ref_raise(transform):
    for m in (jax, functx):
        r = m.new_ref(m.numpy.zeros(3))

        def f(x):
            r[...] = x * 2
            return (x * 3).sum()

        t = getattr(m, transform)
        with pytest.raises(Exception, match="(?i)ref") as info:
            t(f)(np.ones((2, 3)) if transform == "vmap" else np.ones(3))
        if m is functx:  # (JAX leaves the write half done; functx puts the ref back)
            assert isinstance(info.value, FunctxError) and "(f)" in str(info.value)  # (the line)
            np.testing.assert_array_equal(np.asarray(r[...]), np.zeros(3))
    # reading one is fine in both
    for m in (jax, functx):
        r = m.new_ref(m.numpy.arange(3.0))
        np.testing.assert_array_equal(
            m.grad(lambda x: (x * r[...]).sum())(np.ones(3)), np.arange(3.0)
        )


def _jit_in_scan(m, x):
    @m.jit
    def inc(r, v):
        r[...] += v

    r = m.new_ref(x)
    inc(r, x)  # (compiled, at top level)

    def body(c, _):
        inc(r, m.numpy.ones_like(x))  # (traced inside the scan's body)
        return c + r[0], None

    c = m.lax.scan(body, x[0], None, length=3)[0]
    return c, m.freeze(r)


def test_jit_with_ref_argument_inside_a_scan_body():
    x = np.arange(3.0)
    _both(_jit_in_scan, x)
    _same(
        jax.vmap(lambda x: _jit_in_scan(jax, x))(np.arange(6.0).reshape(2, 3)),
        functx.vmap(lambda x: _jit_in_scan(functx, x))(np.arange(6.0).reshape(2, 3)),
    )
