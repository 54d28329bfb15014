"""``functx.example_libraries.stax`` against JAX's: each layer's output shape and initial
parameters from the same key (the same random numbers), the outputs of a network using every
layer kind and its gradients (JAX's side compiled once), dropout's mask for the same key, pooling
layouts, jit and vmap, the errors."""

from __future__ import annotations

import jax
import jax.example_libraries.optimizers as jopt
import jax.example_libraries.stax as jstax
import numpy as np
import pytest
from errutil import raises_as_jax
from x64util import x64_off

import functx
import functx.example_libraries.optimizers as fopt
import functx.example_libraries.stax as fstax
import functx.numpy as fnp

RNG = np.random.default_rng(0)
KEY = {jstax: jax.random.PRNGKey(3), fstax: functx.random.PRNGKey(3)}


def _same(got, want, rtol=1e-6, atol=1e-6, what=""):
    assert jax.tree.structure(got) == jax.tree.structure(want), what
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.dtype, a.shape) == (b.dtype, b.shape), what
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=what)


# name -> (a function of the stax module giving the layer, the input shape)
LAYERS = {
    "Dense": (lambda s: s.Dense(4), (5, 3)),
    "Conv": (lambda s: s.Conv(3, (2, 2), padding="SAME"), (2, 5, 4, 2)),
    "Conv strided": (lambda s: s.Conv(2, (3, 3), (2, 1)), (1, 7, 6, 3)),
    "ConvTranspose": (lambda s: s.ConvTranspose(2, (3, 3), (2, 2)), (1, 4, 3, 2)),
    "Conv1DTranspose": (lambda s: s.Conv1DTranspose(3, (2,), padding="SAME"), (2, 6, 2)),
    "GeneralConv": (lambda s: s.GeneralConv(("NCHW", "OIHW", "NCHW"), 2, (3, 2)), (2, 3, 5, 4)),
    "BatchNorm": (lambda s: s.BatchNorm(), (2, 3, 3, 4)),
    "BatchNorm axis 0 no center": (lambda s: s.BatchNorm(axis=0, center=False), (6, 4)),
    "BatchNorm no scale": (lambda s: s.BatchNorm((0, 1), scale=False), (3, 2, 5)),
    "MaxPool": (lambda s: s.MaxPool((2, 2), (2, 1), "SAME"), (2, 5, 4, 3)),
    "AvgPool NCHW": (lambda s: s.AvgPool((2, 3), padding="SAME", spec="NCHW"), (2, 3, 5, 4)),
    "SumPool": (lambda s: s.SumPool((3,), (2,)), (2, 7, 2)),
    "Flatten": (lambda s: s.Flatten, (2, 3, 4)),
    "FanOut parallel FanInConcat": (
        lambda s: s.serial(
            s.FanOut(3), s.parallel(s.Dense(2), s.Identity, s.Dense(1)), s.FanInConcat()
        ),
        (4, 3),
    ),  # fmt: skip
    "FanOut parallel FanInSum": (
        lambda s: s.serial(s.FanOut(2), s.parallel(s.Dense(3), s.Dense(3)), s.FanInSum),
        (4, 3),
    ),
    "shape_dependent": (lambda s: s.shape_dependent(lambda shape: s.Dense(shape[-1])), (2, 5)),
}
ELEMENTWISE = "Tanh Relu Exp LogSoftmax Softmax Softplus Sigmoid Elu LeakyRelu Selu Gelu".split()


def _init(stax, name):
    make, shape = LAYERS[name]
    out_shape, params = make(stax)[0](KEY[stax], shape)
    return tuple(out_shape), params


@pytest.mark.parametrize("name", LAYERS)
def test_init_shapes_match_jax(name):
    """The output shape and the parameters' structure, shapes and dtypes, by JAX's shape
    evaluation (JAX draws nothing: each new shape of its random numbers is an XLA compile)."""
    with x64_off():
        got = _init(fstax, name)
        out_shape = []
        params = jax.eval_shape(
            lambda k: out_shape.append(_init(jstax, name)[0]) or _init(jstax, name)[1], KEY[jstax]
        )
    assert got[0] == out_shape[0]
    assert jax.tree.structure(got[1]) == jax.tree.structure(params)
    for a, b in zip(jax.tree.leaves(got[1]), jax.tree.leaves(params)):
        assert (a.dtype, a.shape) == (b.dtype, b.shape), name


def test_init_values_match_jax():
    """The same random numbers as JAX from the same key: a general convolution (its kernel's
    fan axes from the spec), dense layers in serial and parallel (the keys' order)."""

    def net(s):
        conv = s.GeneralConv(("NCHW", "OIHW", "NCHW"), 2, (2, 2))
        return s.serial(conv, s.Flatten, s.FanOut(2), s.parallel(s.Dense(3), s.Identity))

    with x64_off():
        got = net(fstax)[0](KEY[fstax], (2, 3, 4, 3))
        want = net(jstax)[0](KEY[jstax], (2, 3, 4, 3))
    assert got[0] == want[0] == ((2, 3), (2, 12))
    _same(got[1], want[1], what="params")


def test_apply_and_grads_match_jax():
    """Every layer of LAYERS and every elementwise layer applied with the same parameters (the
    ones functx initialized), and the gradient of a loss of all outputs in the parameters."""
    names = list(LAYERS)
    with x64_off():
        params = {n: jax.tree.map(np.asarray, _init(fstax, n)[1]) for n in names}
        inputs = {n: RNG.standard_normal(LAYERS[n][1]).astype(np.float32) for n in names}
        x = RNG.standard_normal((3, 4)).astype(np.float32)

        def outputs(stax, params):
            outs = {n: LAYERS[n][0](stax)[1](params[n], inputs[n]) for n in names}
            outs.update({n: getattr(stax, n)[1]((), x) for n in ELEMENTWISE})
            return outs

        def loss(stax, np_, params):
            return sum(np_.sum(np_.sin(o)) for o in jax.tree.leaves(outputs(stax, params)))

        want = jax.jit(
            lambda p: (outputs(jstax, p), jax.grad(lambda p: loss(jstax, jax.numpy, p))(p))
        )
        want_out, want_grad = want(params)
        _same(outputs(fstax, params), want_out, rtol=2e-5, atol=2e-5)
        _same(functx.grad(lambda p: loss(fstax, fnp, p))(params), want_grad, rtol=1e-4, atol=1e-4)


def test_dropout_and_serial_keys_match_jax():
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    with x64_off():
        for m in ["train", "test"]:
            got = fstax.Dropout(0.7, m)[1]((), x, rng=KEY[fstax])
            _same(got, jstax.Dropout(0.7, m)[1]((), x, rng=KEY[jstax]))
        net = {s: s.serial(s.Dense(5), s.Dropout(0.5), s.Relu, s.Dropout(0.8)) for s in KEY}
        params = net[fstax][0](KEY[fstax], (-1, 6))[1]
        got = net[fstax][1](params, x, rng=KEY[fstax])
        _same(got, net[jstax][1](jax.tree.map(np.asarray, params), x, rng=KEY[jstax]))
    raises_as_jax(lambda s: s.Dropout(0.5)[1]((), x), jstax, fstax, ValueError)


def test_a_training_loop_matches_jax():
    """JAX's classic example program: a stax network trained by an optimizer, each step one
    jitted function (gradient, update), three steps; then vmap over examples and the aliases."""
    x = RNG.standard_normal((8, 5)).astype(np.float32)
    labels = np.eye(3, dtype=np.float32)[RNG.integers(0, 3, 8)]

    def net(stax):
        return stax.serial(stax.Dense(8), stax.Gelu, stax.Dense(3), stax.LogSoftmax)

    # (one set of initial parameters: test_init_* compare the draws; each new shape JAX draws
    # is an XLA compile)
    start = jax.tree.map(np.asarray, net(fstax)[0](KEY[fstax], (-1, 5))[1])

    def train(jax_, stax, opt):
        apply = net(stax)[1]
        opt_init, opt_update, get_params = opt.adam(opt.exponential_decay(0.05, 2, 0.5))
        params = start

        def loss(params):
            return -jax_.numpy.mean(jax_.numpy.sum(apply(params, x) * labels, axis=-1))

        @jax_.jit
        def step(i, state):
            value, grads = jax_.value_and_grad(loss)(get_params(state))
            return value, opt_update(i, grads, state)

        state, values = opt_init(params), []
        for i in range(3):
            value, state = step(i, state)
            values.append(float(value))
        return values, get_params(state), apply

    with x64_off():
        values, params, apply = train(functx, fstax, fopt)
        want_values, want_params, _ = train(jax, jstax, jopt)
    np.testing.assert_allclose(values, want_values, rtol=1e-5)
    _same(params, want_params, rtol=1e-4, atol=1e-5)
    per_row = functx.vmap(lambda row: apply(params, row[None])[0])(x)
    np.testing.assert_allclose(per_row, apply(params, x), rtol=1e-5, atol=1e-6)
    assert fstax.glorot is fstax.glorot_normal and fstax.randn is fstax.normal
    assert fstax.logsoftmax is fstax.log_softmax and fstax.relu is functx.nn.relu
