"""``functx.example_libraries.stax``: JAX's ``jax.example_libraries.stax``, a small library of
neural-network layers.

A layer is a pair ``(init_fun, apply_fun)``: ``init_fun(rng, input_shape)`` returns
``(output_shape, params)`` (the shapes are tuples, the random numbers those JAX draws from the
same key), and ``apply_fun(params, inputs, **kwargs)`` computes the layer (``rng=`` passes a key
to layers that need one, such as ``Dropout``). Layer constructors are CamelCase (``Dense(10)``);
layers without settings are pairs already (``Relu``, ``Flatten``). Combinators (``serial``,
``parallel``, ``FanOut``, ...) make one layer of several. As in JAX, an example library; Flax
and Haiku are the full ones.
"""

from __future__ import annotations

import math

from functx import lax, numpy as jnp, random
from functx.errors import (
    FunctxValueError,
    missing_name_hook as _missing_name_hook,
)
from functx.nn import (
    elu as elu,
    gelu as gelu,
    leaky_relu as leaky_relu,
    log_softmax as log_softmax,
    relu as relu,
    selu as selu,
    sigmoid as sigmoid,
    softmax as softmax,
    softplus as softplus,
    standardize as standardize,
)
from functx.nn.initializers import (
    glorot_normal as glorot_normal,
    normal as normal,
    ones as ones,
    zeros as zeros,
)

# the older names JAX's stax keeps
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax

# the default initializers (one object each: initializers are pure functions)
_GLOROT = glorot_normal()
_NORMAL = normal()
_BIAS = normal(1e-6)


def _no_params(rng, input_shape):
    return input_shape, ()


def Dense(out_dim, W_init=_GLOROT, b_init=_NORMAL):
    """A fully-connected layer: ``inputs @ W + b`` over the last axis.

    Arguments:
      out_dim: the number of outputs.
      W_init: the initializer of ``W`` (shape ``(input_shape[-1], out_dim)``; default
        ``glorot_normal()``).
      b_init: the initializer of ``b`` (shape ``(out_dim,)``; default ``normal()``).
    Returns:
      the layer ``(init_fun, apply_fun)``; its params are ``(W, b)``.
    Example:
      >>> import functx.numpy as jnp, functx.random as random
      >>> from functx.example_libraries import stax
      >>> init_fun, apply_fun = stax.Dense(3)
      >>> out_shape, (W, b) = init_fun(random.key(0), (5, 2))
      >>> out_shape, W.shape, apply_fun((W, b), jnp.ones((5, 2))).shape
      ((5, 3), (2, 3), (5, 3))
    """

    def init_fun(rng, input_shape):
        k1, k2 = random.split(rng)
        W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return input_shape[:-1] + (out_dim,), (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return jnp.dot(inputs, W) + b

    return init_fun, apply_fun


def _conv(inputs, W, strides, padding, dimension_numbers):
    one = (1,) * (W.ndim - 2)
    return lax.conv_general_dilated(
        inputs, W, strides, padding, one, one, dimension_numbers=dimension_numbers
    )


def _conv_transpose(inputs, W, strides, padding, dimension_numbers):
    return lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers)


def _general(shape_rule, apply_rule):
    """A constructor of convolution-like layers: ``apply_rule(inputs, W, strides, padding,
    dimension_numbers) + b``, the output shape by ``shape_rule`` (``lax``'s shape tuple rule);
    the kernel's spatial sizes are ``filter_shape``, its input channels the input's."""

    def layer(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
              W_init=None, b_init=_BIAS):  # fmt: skip
        lhs_spec, rhs_spec, out_spec = dimension_numbers
        strides = strides or (1,) * len(filter_shape)
        W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

        def init_fun(rng, input_shape):
            spatial = iter(filter_shape)
            sizes = {"O": out_chan, "I": input_shape[lhs_spec.index("C")]}
            kernel_shape = [sizes[c] if c in sizes else next(spatial) for c in rhs_spec]
            out_shape = shape_rule(input_shape, kernel_shape, strides, padding, dimension_numbers)
            bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
            k1, k2 = random.split(rng)
            return out_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

        def apply_fun(params, inputs, **kwargs):
            W, b = params
            return apply_rule(inputs, W, strides, padding, dimension_numbers) + b

        return init_fun, apply_fun

    return layer


def _fixed_layout(general, dimension_numbers):
    """``general`` with its ``dimension_numbers`` given (JAX's ``functools.partial``)."""

    def layer(out_chan, filter_shape, strides=None, padding="VALID", W_init=None, b_init=_BIAS):
        return general(dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init)

    return layer


_CONV_ARGS = """
    Arguments:{layout}
      out_chan: the number of output channels.
      filter_shape: the kernel's spatial sizes.
      strides: the strides (default 1 along each spatial axis).
      padding: ``"VALID"`` (default), ``"SAME"`` or explicit ``(low, high)`` pairs.
      W_init: the kernel's initializer (default ``glorot_normal`` with the kernel layout's ``I``
        and ``O`` axes as fan-in and fan-out).
      b_init: the bias's initializer (default ``normal(1e-6)``).
    Returns:
      the layer ``(init_fun, apply_fun)``; its params are ``(W, b)``, ``b`` of one entry per
      output channel (and size 1 along the other axes).
    Example:
      >>> import functx.random as random
      >>> from functx.example_libraries import stax
"""
_LAYOUT_ARG = """
      dimension_numbers: the layouts ``(lhs_spec, rhs_spec, out_spec)`` of the inputs, the
        kernel and the outputs, such as ``("NHWC", "HWIO", "NHWC")``."""


def _named(fn, name, summary, example):
    """``fn`` named ``name`` with the convolutions' docstring (``example``: the statement after
    ``>>>`` and its output)."""
    fn.__name__ = fn.__qualname__ = name
    layout = _LAYOUT_ARG if name.startswith("General") else ""
    fn.__doc__ = f"{summary}\n{_CONV_ARGS.format(layout=layout)}      >>> {example}\n    "
    return fn


GeneralConv = _named(
    _general(lax.conv_general_shape_tuple, _conv),
    "GeneralConv",
    "A convolution layer (``lax.conv_general_dilated``) plus a bias.",
    'init_fun, _ = stax.GeneralConv(("NCHW", "OIHW", "NCHW"), 4, (3, 3))\n      >>> '
    "out_shape, (W, b) = init_fun(random.key(0), (2, 3, 8, 8))\n      >>> "
    "out_shape, W.shape, b.shape\n      ((2, 4, 6, 6), (4, 3, 3, 3), (1, 4, 1, 1))",
)
GeneralConvTranspose = _named(
    _general(lax.conv_transpose_shape_tuple, _conv_transpose),
    "GeneralConvTranspose",
    "A transposed-convolution layer (``lax.conv_transpose``) plus a bias.",
    'layer = stax.GeneralConvTranspose(("NHWC", "HWIO", "NHWC"), 4, (3, 3), (2, 2))\n'
    "      >>> layer[0](random.key(0), (1, 5, 5, 2))[0]\n      (1, 11, 11, 4)",
)
Conv = _named(
    _fixed_layout(GeneralConv, ("NHWC", "HWIO", "NHWC")),
    "Conv",
    '``GeneralConv`` with the layouts ``("NHWC", "HWIO", "NHWC")``.',
    "stax.Conv(8, (3, 3), padding='SAME')[0](random.key(1), (2, 5, 5, 3))[0]\n      (2, 5, 5, 8)",
)
ConvTranspose = _named(
    _fixed_layout(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC")),
    "ConvTranspose",
    '``GeneralConvTranspose`` with the layouts ``("NHWC", "HWIO", "NHWC")``.',
    "stax.ConvTranspose(4, (2, 2), (2, 2))[0](random.key(0), (1, 3, 3, 5))[0]\n      (1, 6, 6, 4)",
)
Conv1DTranspose = _named(
    _fixed_layout(GeneralConvTranspose, ("NHC", "HIO", "NHC")),
    "Conv1DTranspose",
    '``GeneralConvTranspose`` with the one-dimensional layouts ``("NHC", "HIO", "NHC")``.',
    "stax.Conv1DTranspose(4, (3,), (2,))[0](random.key(0), (2, 7, 5))[0]\n      (2, 15, 4)",
)


def BatchNorm(
    axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros, gamma_init=ones
):
    """Batch normalization: the inputs standardized over ``axis`` (``nn.standardize``), then
    scaled by ``gamma`` and shifted by ``beta`` (one per position of the other axes). It keeps
    no running statistics (the batch's own are used, in training and inference alike).

    Arguments:
      axis: the axis or axes normalized over (default ``(0, 1, 2)``, the batch and spatial axes
        of NHWC).
      epsilon: added to the variance (default 1e-5).
      center: whether to add ``beta`` (default True).
      scale: whether to multiply by ``gamma`` (default True).
      beta_init: the initializer of ``beta`` (default zeros).
      gamma_init: the initializer of ``gamma`` (default ones).
    Returns:
      the layer ``(init_fun, apply_fun)``; its params are ``(beta, gamma)`` (``()`` for one
      turned off).
    Example:
      >>> import functx.numpy as jnp, functx.random as random
      >>> from functx.example_libraries import stax
      >>> init_fun, apply_fun = stax.BatchNorm(axis=0)
      >>> _, params = init_fun(random.key(0), (4, 3))
      >>> apply_fun(params, jnp.arange(12.0).reshape(4, 3)).round(3)[:, 0]
      Array([-1.342, -0.447,  0.447,  1.342], dtype=float32)
    """
    axis = (axis,) if jnp.isscalar(axis) else axis

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        kept = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if scale:
            z = gamma[kept] * z
        return z + beta[kept] if center else z

    return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
    """A layer without parameters that applies ``fun(inputs, **fun_kwargs)``.

    Arguments:
      fun: the function (elementwise, or any function that keeps the shape).
      **fun_kwargs: keyword arguments passed to it.
    Returns:
      the layer ``(init_fun, apply_fun)``; ``Tanh``, ``Relu``, ``Exp``, ``LogSoftmax``,
      ``Softmax``, ``Softplus``, ``Sigmoid``, ``Elu``, ``LeakyRelu``, ``Selu`` and ``Gelu`` are
      such layers.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.example_libraries import stax
      >>> init_fun, apply_fun = stax.elementwise(jnp.clip, min=0.0, max=1.0)
      >>> apply_fun((), jnp.array([-1.0, 0.5, 2.0]))
      Array([0. , 0.5, 1. ], dtype=float32)
    """
    return _no_params, lambda params, inputs, **kwargs: fun(inputs, **fun_kwargs)


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _with_unit_axes(window, strides, spec):
    """The window and strides with size 1 inserted at the batch and channel axes (axes 0 and
    last without a ``spec``, else where ``spec`` has ``N`` and ``C``)."""
    axes = (0, len(window) + 1) if spec is None else (spec.index("N"), spec.index("C"))
    window, strides = list(window), list(strides)
    for a in sorted(axes):
        window.insert(a, 1)
        strides.insert(a, 1)
    return tuple(window), tuple(strides), axes


def _pool(reducer, init_value, window_shape, strides, padding, spec, mean=False):
    """A pooling layer: ``lax.reduce_window`` over the spatial axes; ``mean`` divides by the
    number of input elements each window covers (padding not counted)."""
    strides = strides or (1,) * len(window_shape)
    window, full_strides, unit_axes = _with_unit_axes(window_shape, strides, spec)

    def init_fun(rng, input_shape):
        pads = lax.padtype_to_pads(input_shape, window, full_strides, padding)
        one = (1,) * len(window)
        return lax.reduce_window_shape_tuple(input_shape, window, full_strides, pads, one, one), ()

    def apply_fun(params, inputs, **kwargs):
        out = lax.reduce_window(inputs, init_value, reducer, window, full_strides, padding)
        if not mean:
            return out
        spatial = tuple(n for i, n in enumerate(inputs.shape) if i not in unit_axes)
        ones_ = jnp.ones(spatial, dtype=inputs.dtype)
        counts = lax.reduce_window(ones_, 0.0, lax.add, window_shape, strides, padding)
        return out / jnp.expand_dims(counts, tuple(sorted(unit_axes)))

    return init_fun, apply_fun


def _pool_doc(summary, example):
    return f"""{summary}

    Arguments:
      window_shape: the window's size along each spatial axis.
      strides: the strides (default 1 along each spatial axis).
      padding: ``"VALID"`` (default), ``"SAME"`` or explicit pairs.
      spec: the input's layout such as ``"NHWC"`` (default: batch first, channels last).
    Returns:
      the layer ``(init_fun, apply_fun)``, without parameters.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.example_libraries import stax
      >>> {example}
    """


def MaxPool(window_shape, strides=None, padding="VALID", spec=None):
    return _pool(lax.max, -jnp.inf, window_shape, strides, padding, spec)


def SumPool(window_shape, strides=None, padding="VALID", spec=None):
    return _pool(lax.add, 0.0, window_shape, strides, padding, spec)


def AvgPool(window_shape, strides=None, padding="VALID", spec=None):
    return _pool(lax.add, 0.0, window_shape, strides, padding, spec, mean=True)


_ROW = "jnp.array([1.0, 5.0, 2.0, 0.0]).reshape(1, 4, 1)"
MaxPool.__doc__ = _pool_doc(
    "Max pooling: the maximum of each window (padding counts as ``-inf``).",
    f"stax.MaxPool((2,), (2,))[1]((), {_ROW}).ravel()\n      Array([5., 2.], dtype=float32)",
)
SumPool.__doc__ = _pool_doc(
    "Sum pooling: the sum of each window.",
    f"stax.SumPool((2,), (2,))[1]((), {_ROW}).ravel()\n      Array([6., 2.], dtype=float32)",
)
AvgPool.__doc__ = _pool_doc(
    'Average pooling: the mean of each window (with ``"SAME"`` padding, of the input\n'
    "    elements the window covers).",
    f"stax.AvgPool((3,), padding='SAME')[1]((), {_ROW}).ravel()\n"
    "      Array([3.       , 2.6666667, 2.3333333, 1.       ], dtype=float32)",
)


def _flatten_init(rng, input_shape):
    return (input_shape[0], math.prod(input_shape[1:])), ()


# Flatten: all axes but the leading (batch) one into one; a layer without parameters.
Flatten = (
    _flatten_init,
    lambda params, inputs, **kwargs: jnp.reshape(inputs, (inputs.shape[0], -1)),
)

# Identity: the inputs unchanged.
Identity = (_no_params, lambda params, inputs, **kwargs: inputs)


def FanOut(num):
    """A layer that gives ``num`` copies of its input (a list), for ``parallel``.

    Arguments:
      num: the number of copies.
    Returns:
      the layer ``(init_fun, apply_fun)``.
    Example:
      >>> import functx.random as random
      >>> from functx.example_libraries import stax
      >>> stax.FanOut(2)[0](random.key(0), (3, 4))
      ([(3, 4), (3, 4)], ())
    """
    return (
        lambda rng, input_shape: ([input_shape] * num, ()),
        lambda params, inputs, **kwargs: [inputs] * num,
    )


# FanInSum: the sum of a list of inputs (of one shape).
FanInSum = (
    lambda rng, input_shape: (input_shape[0], ()),
    lambda params, inputs, **kwargs: sum(inputs),
)


def FanInConcat(axis=-1):
    """A layer that concatenates a list of inputs along ``axis``.

    Arguments:
      axis: the axis (default -1).
    Returns:
      the layer ``(init_fun, apply_fun)``.
    Example:
      >>> import functx.random as random
      >>> from functx.example_libraries import stax
      >>> stax.FanInConcat()[0](random.key(0), [(3, 4), (3, 2)])
      ((3, 6), ())
    """

    def init_fun(rng, input_shape):
        first = input_shape[0]
        ax = axis % len(first)
        size = sum(shape[ax] for shape in input_shape)
        return first[:ax] + (size,) + first[ax + 1 :], ()

    return init_fun, lambda params, inputs, **kwargs: jnp.concatenate(inputs, axis)


def Dropout(rate, mode="train"):
    """Dropout: in ``"train"`` mode, each input is kept with probability ``rate`` (and divided
    by ``rate``) or set to zero; in any other mode the inputs pass unchanged. ``apply_fun``
    needs ``rng=`` (a ValueError without it).

    Arguments:
      rate: the probability of KEEPING an input (JAX's stax meaning, the opposite of most
        libraries').
      mode: ``"train"`` (default) or another string for inference.
    Returns:
      the layer ``(init_fun, apply_fun)``.
    Example:
      >>> import functx.numpy as jnp, functx.random as random
      >>> from functx.example_libraries import stax
      >>> _, apply_fun = stax.Dropout(0.5)
      >>> apply_fun((), jnp.ones(4), rng=random.key(0)).shape
      (4,)
    """

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng")
        if rng is None:
            raise FunctxValueError(
                "Dropout layer requires apply_fun to be called with a PRNG key argument: "
                "call it as apply_fun(params, inputs, rng=key) with a key from "
                "functx.random.key."
            )
        if mode != "train":
            return inputs
        keep = random.bernoulli(rng, rate, inputs.shape)
        return jnp.where(keep, inputs / rate, 0)

    return _no_params, apply_fun


def _layer_keys(rng, count):
    return random.split(rng, count) if rng is not None else (None,) * count


def serial(*layers):
    """The layers one after the other: each one's output is the next one's input.

    ``init_fun`` splits its key once per layer (the layer gets the second half, the first
    goes on); ``apply_fun`` splits an ``rng=`` key into one per layer.

    Arguments:
      *layers: the layers, each an ``(init_fun, apply_fun)`` pair.
    Returns:
      the layer ``(init_fun, apply_fun)``; its params are the list of the layers' params.
    Example:
      >>> import functx.numpy as jnp, functx.random as random
      >>> from functx.example_libraries import stax
      >>> init_fun, apply_fun = stax.serial(stax.Dense(4), stax.Relu, stax.Dense(2))
      >>> out_shape, params = init_fun(random.key(0), (-1, 3))
      >>> out_shape, apply_fun(params, jnp.ones((5, 3))).shape
      ((-1, 2), (5, 2))
    """
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, p = init(layer_rng, input_shape)
            params.append(p)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        keys = _layer_keys(kwargs.pop("rng", None), len(layers))
        for f, p, key in zip(apply_funs, params, keys):
            inputs = f(p, inputs, rng=key, **kwargs)
        return inputs

    return init_fun, apply_fun


def parallel(*layers):
    """The layers side by side: a list of inputs, one per layer, gives the list of their
    outputs (with ``FanOut`` before and ``FanInSum`` or ``FanInConcat`` after).

    Arguments:
      *layers: the layers, each an ``(init_fun, apply_fun)`` pair.
    Returns:
      the layer ``(init_fun, apply_fun)``; ``init_fun`` returns the output shapes and the
      params, one per layer.

    Differences from JAX: ``init_fun`` returns a tuple of two tuples where JAX returns a
    ``zip`` iterator of them (both unpack as ``shapes, params = init_fun(...)``).

    Example:
      >>> import functx.random as random
      >>> from functx.example_libraries import stax
      >>> layer = stax.serial(stax.FanOut(2), stax.parallel(stax.Dense(3), stax.Identity),
      ...                     stax.FanInConcat())
      >>> layer[0](random.key(0), (5, 2))[0]
      (5, 5)
    """
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        keys = random.split(rng, len(layers))
        pairs = [init(k, s) for init, k, s in zip(init_funs, keys, input_shape)]
        return tuple(zip(*pairs))

    def apply_fun(params, inputs, **kwargs):
        keys = _layer_keys(kwargs.pop("rng", None), len(layers))
        return [f(p, x, rng=k, **kwargs) for f, p, x, k in zip(apply_funs, params, inputs, keys)]

    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built only when its input shape is known: ``make_layer(input_shape)`` gives it.

    Arguments:
      make_layer: a function of the input shape returning an ``(init_fun, apply_fun)`` pair.
    Returns:
      the layer ``(init_fun, apply_fun)``.
    Example:
      >>> import functx.random as random
      >>> from functx.example_libraries import stax
      >>> same_width = stax.shape_dependent(lambda shape: stax.Dense(shape[-1]))
      >>> same_width[0](random.key(0), (2, 7))[0]
      (2, 7)
    """

    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)

    return init_fun, apply_fun


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
    "AvgPool",
    "BatchNorm",
    "Conv",
    "Conv1DTranspose",
    "ConvTranspose",
    "Dense",
    "Dropout",
    "Elu",
    "Exp",
    "FanInConcat",
    "FanInSum",
    "FanOut",
    "Flatten",
    "Gelu",
    "GeneralConv",
    "GeneralConvTranspose",
    "Identity",
    "LeakyRelu",
    "LogSoftmax",
    "MaxPool",
    "Relu",
    "Selu",
    "Sigmoid",
    "Softmax",
    "Softplus",
    "SumPool",
    "Tanh",
    "elementwise",
    "elu",
    "gelu",
    "glorot",
    "glorot_normal",
    "leaky_relu",
    "log_softmax",
    "logsoftmax",
    "normal",
    "ones",
    "parallel",
    "randn",
    "relu",
    "selu",
    "serial",
    "shape_dependent",
    "sigmoid",
    "softmax",
    "softplus",
    "standardize",
    "zeros",
]
