"""``functx.example_libraries.optimizers`` against JAX's: every optimizer's iterates over several
steps on a nested pytree of parameters (float32, and float64 with x64 on), with constant and
scheduled step sizes; the schedules, ``l2_norm`` and ``clip_grads``; (un)packing states; states
through ``jit`` and ``vmap``; the errors."""

from __future__ import annotations

import jax
import jax.example_libraries.optimizers as jopt
import numpy as np
import pytest
from errutil import raises_as_jax
from x64util import x64_off

import functx
import functx.example_libraries.optimizers as fopt
import functx.numpy as fnp

RNG = np.random.default_rng(0)
PARAMS = {
    "w": RNG.standard_normal((3, 2)).astype(np.float32),
    "layers": [RNG.standard_normal(2).astype(np.float32), np.float32(0.7)],
}

# name -> the constructor's arguments (with m the optimizers module: schedules come from it)
OPTIMIZERS = {
    "sgd": lambda m: (0.1,),
    "momentum": lambda m: (m.exponential_decay(0.1, 2, 0.5), 0.9),
    "nesterov": lambda m: (0.05, 0.8),
    "adagrad": lambda m: (m.inverse_time_decay(0.2, 3, 0.5, staircase=True),),
    "rmsprop": lambda m: (0.01, 0.8, 1e-6),
    "rmsprop_momentum": lambda m: (m.polynomial_decay(0.02, 3, 0.001),),
    "adam": lambda m: (m.piecewise_constant([1, 3], [0.1, 0.05, 0.01]),),
    "adamax": lambda m: (0.1, 0.8, 0.99),
    "sm3": lambda m: (0.3,),
}


def _grads(params, i):
    """A deterministic gradient for step i (a function of the parameters, as a real one is)."""
    return jax.tree.map(lambda p: np.sin(np.asarray(p, np.float64) * (i + 1)), params)


def _iterates(m, name, params, steps=4, dtype=np.float32):
    """The parameters after each step (JAX's update compiled once: its op-by-op compiles cost
    seconds; the step index is an int32 array for both)."""
    init, update, get_params = getattr(m, name)(*OPTIMIZERS[name](m))
    state = init(params)
    if m is jopt:
        update = jax.jit(update)
    out = []
    for i in range(steps):
        g = jax.tree.map(lambda a: a.astype(dtype), _grads(get_params(state), i))
        state = update(np.int32(i), g, state)
        out.append(jax.tree.map(np.asarray, get_params(state)))
    return out


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_iterates_match_jax(name):
    with x64_off():
        want = _iterates(jopt, name, PARAMS)
        got = _iterates(fopt, name, PARAMS)
    for step, (g, w) in enumerate(zip(got, want)):
        assert jax.tree.structure(g) == jax.tree.structure(w)
        for a, b in zip(jax.tree.leaves(g), jax.tree.leaves(w)):
            assert a.dtype == b.dtype == np.float32 and a.shape == b.shape, (step, a, b)
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"step {step}")


def test_iterates_in_float64():
    params = jax.tree.map(lambda p: np.asarray(p, np.float64), PARAMS)
    got = _iterates(fopt, "adam", params, dtype=np.float64)
    want = _iterates(jopt, "adam", params, dtype=np.float64)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        assert a.dtype == b.dtype == np.float64
        np.testing.assert_allclose(a, b, rtol=1e-13)


def test_schedules_and_utilities():
    schedules = [
        lambda m: m.constant(0.3),
        lambda m: m.exponential_decay(0.5, 4, 0.3),
        lambda m: m.inverse_time_decay(0.5, 4, 0.3),
        lambda m: m.inverse_time_decay(0.5, 4, 0.3, staircase=True),
        lambda m: m.polynomial_decay(0.5, 4, 0.01, power=2.0),
        lambda m: m.piecewise_constant([2, 5], [0.5, 0.25, 0.125]),
        lambda m: m.make_schedule(0.2),
        lambda m: m.make_schedule(lambda i: 1.0 / (i + 1)),
    ]
    with x64_off():
        for k, make in enumerate(schedules):
            for i in [0, 2, 7, np.int32(3)]:
                want, got = make(jopt)(i), make(fopt)(i)
                assert np.asarray(got).dtype == np.asarray(want).dtype, (k, i)
                np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=f"{k} {i}")
        tree = {"a": PARAMS["w"], "b": PARAMS["layers"]}
        np.testing.assert_allclose(fopt.l2_norm(tree), jopt.l2_norm(tree), rtol=1e-6)
        for max_norm in [0.5, 100.0]:
            got, want = fopt.clip_grads(tree, max_norm), jopt.clip_grads(tree, max_norm)
            for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
                np.testing.assert_allclose(a, b, rtol=1e-6)


def test_pack_unpack_and_the_decorator():
    init, update, get_params = fopt.adam(0.1)
    state = update(0, _grads(PARAMS, 0), init(PARAMS))
    marked = fopt.unpack_optimizer_state(state)
    assert isinstance(marked["w"], fopt.JoinPoint) and len(marked["w"].subtree) == 3
    again = fopt.pack_optimizer_state(marked)
    assert again.tree_def == state.tree_def and again.subtree_defs == state.subtree_defs
    for a, b in zip(jax.tree.leaves(again.packed_state), jax.tree.leaves(state.packed_state)):
        np.testing.assert_array_equal(a, b)
    assert isinstance(fopt.sgd(0.1), fopt.Optimizer)
    assert fopt.Optimizer._fields == jopt.Optimizer._fields
    assert fopt.OptimizerState._fields == jopt.OptimizerState._fields

    @fopt.optimizer
    def scaled(c):
        return (lambda x: (x, 0 * x)), (lambda i, g, s: (s[0] - c * g, s[1] + 1)), (lambda s: s[0])

    init, update, get_params = scaled(0.5)
    state = update(0, {"a": 2.0}, init({"a": 1.0}))
    assert get_params(state) == {"a": 0.0} and state.packed_state == [[0.0, 1.0]]


def test_states_through_jit_vmap_grad():
    init, update, get_params = fopt.adam(0.1)
    state = init(PARAMS)
    step = functx.jit(update)
    eager = state
    for i in range(3):
        g = _grads(get_params(eager), i)
        state, eager = step(i, g, state), update(i, g, eager)
    for a, b in zip(jax.tree.leaves(get_params(state)), jax.tree.leaves(get_params(eager))):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    # one optimizer step per row of a batch of parameters
    batch = RNG.standard_normal((4, 3)).astype(np.float32)
    stepped = functx.vmap(lambda p: get_params(update(0, fnp.cos(p), init(p))))(batch)
    for p, s in zip(batch, stepped):
        np.testing.assert_allclose(s, get_params(update(0, np.cos(p), init(p))), rtol=1e-6)
    # the gradient of a loss at the parameters an optimizer state holds
    loss = lambda st: fnp.sum(get_params(st)["w"] ** 2)  # noqa: E731
    grads = functx.grad(loss)(state)
    np.testing.assert_allclose(grads.packed_state[2][0], 2 * get_params(state)["w"], rtol=1e-6)


def test_errors_as_jax():
    def mismatched(m):
        init, update, _ = m.sgd(0.1)
        return update(0, {"w": 1.0}, init({"w": 1.0, "b": 2.0}))

    raises_as_jax(mismatched, jopt, fopt, TypeError)
    raises_as_jax(lambda m: m.piecewise_constant([1, 2], [0.1]), jopt, fopt, ValueError)
    raises_as_jax(lambda m: m.piecewise_constant(1, [0.1]), jopt, fopt, ValueError)
    raises_as_jax(lambda m: m.make_schedule(np.ones(2)), jopt, fopt, TypeError)
    with pytest.raises(functx.errors.FunctxTypeError, match="JoinPoint"):
        fopt.pack_optimizer_state({"w": 1.0})
