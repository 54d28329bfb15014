"""The scheduler's depth cuts as kernel-local values (``schedule.py``: ``MAX_INLINE_DEPTH``,
``Kernel.local_ids``).

A pointwise chain deeper than ``MAX_INLINE_DEPTH`` is cut so that element expressions stay
bounded; the cut node is computed once per element into a variable of its kernel, which the
kernel's later nodes read, and it is stored only when another kernel reads it. So the threefry
hash and the exact samplers (hundreds of operations) run as one kernel, with the same bits as
eager, in C++ and in Triton (here under ``TRITON_INTERPRET=1``, small shapes).

The C++ backend's costly values are locals too (``schedule._stored_once``): a transcendental
value that kernels would evaluate at two places (two kernels, or two indices of one) is computed
once, so the generated C++ calls each function as often as the Jaxpr does.
"""

from __future__ import annotations

import numpy as np
import pytest
from cpputil import calls, in_jaxpr

import functx
import functx.numpy as fnp
from functx import lax, random
from functx.lowering import loopir, schedule
from functx.lowering.lower import lower_jaxpr
from functx.transforms import passes


def _chain(n):
    """``n`` elementwise operations, with a sine now and then."""

    def f(x):
        v = x
        for i in range(n):
            k = i % 4
            if k == 0:
                v = v * 1.0001
            elif k == 1:
                v = v + 0.001
            elif k == 2:
                v = fnp.sin(v) if i % 20 == 2 else v * 0.9999
            else:
                v = fnp.maximum(v, -0.5)
        return v

    return f


def _bits(a):
    a = np.asarray(a)
    return a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.kind == "f" else a


def _schedule(f, *args):
    g = lower_jaxpr(passes.simplify(functx.make_jaxpr(f)(*args)))
    kernels = schedule.schedule(g)
    schedule.verify(g, kernels)
    return g, kernels


def _splits(k):
    for i in range(6):
        k, s = random.split(k)
        k = random.fold_in(k, i)
    return k, random.uniform(s, (8,), np.float32)


X = np.linspace(-1, 1, 96).astype(np.float32)
KEY = random.PRNGKey(7)


# --- the schedule ----------------------------------------------------------------------------
def test_a_long_chain_is_one_kernel_with_locals():
    g, kernels = _schedule(_chain(200), X)
    assert len(kernels) == 1, schedule.describe(kernels)
    (k,) = kernels
    assert len(k.local_ids) >= 200 // schedule.MAX_INLINE_DEPTH
    # the locals have no buffer: only the output is stored
    assert [n.id for n in k.nodes if n.buf is not None] == [g.outputs[0].id]
    assert schedule.describe(kernels).count("(not stored)") == len(k.local_ids)


def test_a_local_read_elsewhere_is_stored():
    # read at a shifted index and by a reduction: those readers are in other kernels
    def f(x):
        v = _chain(120)(x)
        return v[1:] + v[:-1], fnp.sum(v)

    g, kernels = _schedule(f, X)
    by_id = {n.id: n for n in g.nodes}
    local = [by_id[i] for k in kernels for i in k.local_ids]
    # the deepest cut is read by the other kernels (stored); the others only by later locals
    assert len(kernels) >= 2 and local, schedule.describe(kernels)
    assert max(local, key=lambda n: n.id).buf is not None
    assert any(n.buf is None for n in local)
    got = functx.jit(f)(X)
    want = f(fnp.asarray(X))
    for a, b in zip(got, want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)


def test_verify_names_a_local_read_before_it_is_computed():
    g, kernels = _schedule(_chain(120), X)
    (k,) = kernels
    first = next(n for n in k.nodes if n.id in k.local_ids)
    k.nodes.remove(first)
    k.nodes.append(first)  # now its readers come first
    with pytest.raises(loopir.LoopIRError, match="not a local computed before it"):
        schedule.verify(g, kernels)


def test_kernel_size_is_bounded(monkeypatch):
    monkeypatch.setattr(schedule, "MAX_KERNEL_OPS", 200)
    g, kernels = _schedule(_chain(400), X)
    assert 1 < len(kernels) <= 400 // schedule.MAX_INLINE_DEPTH
    assert all(k.ops < 200 + 4 * schedule.MAX_INLINE_DEPTH for k in kernels)


# --- C++: the same values, fewer kernels --------------------------------------------------------
def test_normal_under_jit_is_one_kernel_with_eager_bits():
    f = functx.jit(lambda k: random.normal(k, (256,), np.float32))
    assert f.lower(KEY).kernel_count() == 1
    np.testing.assert_array_equal(_bits(f(KEY)), _bits(random.normal(KEY, (256,), np.float32)))


def test_normal_default_mode_under_jit(no_x64):
    key = random.PRNGKey(3)
    f = functx.jit(lambda k: (random.normal(k, (64,)), random.uniform(k, (64,))))
    assert f.lower(key).kernel_count() == 1
    for a, b in zip(f(key), (random.normal(key, (64,)), random.uniform(key, (64,)))):
        assert np.asarray(a).dtype == np.float32
        np.testing.assert_array_equal(_bits(a), _bits(b))


def test_split_and_fold_in_chains_under_jit():
    lowered = functx.jit(_splits).lower(KEY)
    got = lowered.compile()(KEY)
    for a, b in zip(got, _splits(KEY)):
        np.testing.assert_array_equal(_bits(a), _bits(b))


def test_a_200_op_chain_under_jit():
    f = _chain(200)
    lowered = functx.jit(f).lower(X)
    assert lowered.kernel_count() == 1, lowered.executable.kernels_text
    np.testing.assert_allclose(
        np.asarray(lowered.compile()(X)), np.asarray(f(fnp.asarray(X))), rtol=2e-6, atol=1e-6
    )


# --- C++: costly values computed once ------------------------------------------------------------
def _stages(np_, loops):
    """A Runge-Kutta-like step in a fori_loop: each stage evaluates a pendulum chain (slices and
    concatenations of the state) at the state plus all the earlier stages."""

    def f(s):
        q, p = s[:4], s[4:]
        pull = np_.concatenate([q[1:] - q[:-1], np_.zeros(1, s.dtype)])
        return np_.concatenate([p, -np_.sin(q) + 0.5 * pull])

    def step(i, s):
        k = [f(s)]
        for j in range(1, 4):
            k.append(f(s + 0.01 * sum(k) / j))
        return s + 0.01 * (k[0] + 2 * k[1] + 2 * k[2] + k[3]) / 6

    return lambda s: loops.fori_loop(0, 5, step, s)


S = np.linspace(0.1, 0.8, 8).astype(np.float32)


def test_a_stage_chain_in_a_loop_calls_sin_as_often_as_its_jaxpr():
    import jax

    f = _stages(fnp, lax)
    lowered = functx.jit(f).lower(S)
    # (inlined, each stage evaluated the earlier ones at each index it reads: 72 calls)
    assert calls(lowered.as_text(), "sin") == in_jaxpr(f, (S,), "sin") == 4
    got = np.asarray(lowered.compile()(S))
    np.testing.assert_allclose(got, np.asarray(f(fnp.asarray(S))), rtol=1e-6, atol=1e-7)
    want = jax.jit(_stages(jax.numpy, jax.lax))(S)
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-6)


def _descent(np_, loops, grad):
    """Gradient descent on an L2-regularized logistic regression in a while_loop: the
    objective's value and gradient both read its ``exp``."""

    def nll(w, x, y):
        z = x @ w
        return np_.mean(np_.logaddexp(0.0, z) - y * z) + 1e-3 * w @ w

    def fit(x, y):
        def body(c):
            i, w, _ = c
            v, g = grad(nll)(w, x, y)
            return i + 1, w - 0.5 * g, v

        return loops.while_loop(lambda c: c[0] < 6, body, (0, np_.zeros(x.shape[1]), 0.0))[1:]

    return fit


def test_a_value_and_grad_in_a_loop_calls_exp_and_log1p_as_often_as_its_jaxpr():
    import jax

    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 5)).astype(np.float32)
    y = (x @ rng.standard_normal(5) > 0).astype(np.float32)
    f = _descent(fnp, lax, functx.value_and_grad)
    lowered = functx.jit(f).lower(x, y)
    for name in ("exp", "log1p"):
        # (inlined, the gradient's kernel evaluated the value's exp again)
        assert calls(lowered.as_text(), name) == in_jaxpr(f, (x, y), name) == 1, name
    got = lowered.compile()(x, y)
    want = jax.jit(_descent(jax.numpy, jax.lax, jax.value_and_grad))(x, y)
    for a, b, c in zip(got, f(x, y), want):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(np.asarray(a), np.asarray(c), rtol=1e-5, atol=1e-6)


def test_a_value_read_at_two_indices_is_computed_once():
    def f(x):
        y = fnp.exp(x) * 2.0
        return y[1:] - y[:-1], fnp.sum(y)

    lowered = functx.jit(f).lower(X)
    assert calls(lowered.as_text(), "exp") == 1  # (inlined: three, one per reader)
    for a, b in zip(lowered.compile()(X), f(fnp.asarray(X))):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-6)
    # only the C++ backend asks for it: a Triton kernel more costs a launch
    g = lower_jaxpr(passes.simplify(functx.make_jaxpr(f)(X)))
    (pointwise,) = [n for n in g.nodes if n.prim == "mul"]
    assert schedule._stored_once(g, {n.id for n in g.outputs}) == {pointwise.id}
    kernels = schedule.schedule(g)
    assert pointwise.buf is None, schedule.describe(kernels)


def test_cheap_values_and_values_read_once_are_still_inlined():
    def f(x):
        y = -x * 3.0  # cheap: recomputed by each reader
        z = fnp.exp(x)  # read at one index by one kernel
        return y[1:] - y[:-1] + z[1:]

    g = lower_jaxpr(passes.simplify(functx.make_jaxpr(f)(X)))
    kernels = schedule.schedule(g, costly_once=True)
    assert len(kernels) == 1, schedule.describe(kernels)
    assert not kernels[0].local_ids


def test_a_reductions_map_shares_its_costly_values_through_the_row_cache():
    def f(x):  # (the forward step of an HMM: normalised by the sum)
        a = fnp.exp(x) * x
        return a / fnp.sum(a)

    g = lower_jaxpr(passes.simplify(functx.make_jaxpr(f)(X)))
    kernels = schedule.schedule(g, costly_once=True)
    assert len(kernels) == 1 and not kernels[0].local_ids, schedule.describe(kernels)
    lowered = functx.jit(f).lower(X)
    assert calls(lowered.as_text(), "exp") == 1
    np.testing.assert_allclose(
        np.asarray(lowered.compile()(X)), np.asarray(f(fnp.asarray(X))), rtol=1e-6, atol=1e-7
    )


# --- Triton (interpreter) -----------------------------------------------------------------------
@pytest.fixture
def triton(monkeypatch):
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    from functx.lowering.triton.blocks import Blocks
    from functx.lowering.triton.program import compile_triton

    def run(f, *args):
        exe = compile_triton(passes.simplify(functx.make_jaxpr(f)(*args)), Blocks(pointwise=64))
        return exe, [t.numpy() for t in exe(*functx.tree_util.tree_leaves(args))]

    return run


def test_triton_normal_and_chain_with_locals(triton):
    def f(k, x):
        v = _chain(120)(x)
        return random.normal(k, (96,), np.float32), v, v[1:] - v[:-1]

    exe, got = triton(f, KEY, X)
    assert "(not stored)" in exe.kernels_text
    want = f(KEY, fnp.asarray(X))
    np.testing.assert_array_equal(_bits(got[0]), _bits(want[0]))
    for a, b in zip(got[1:], want[1:]):
        np.testing.assert_allclose(a, np.asarray(b), rtol=2e-6, atol=1e-6)
