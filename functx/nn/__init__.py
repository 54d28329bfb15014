"""``functx.nn``: activations and normalizations with JAX's names and numerics.

Each function follows the formula of its ``jax.nn`` namesake. Deliberate differences:

* Integer and bool inputs give JAX's dtypes: the activations that JAX writes as a mix of the
  input with a Python float (``elu``, ``relu6``, ``leaky_relu``, ``hard_sigmoid``, ...) give the
  default float dtype, weakly typed (float64 with x64 on); ``sigmoid``/``silu``/``glu`` reject
  integers and ``softmax``/``log_softmax``/``log_sigmoid``/``log1mexp`` bools (TypeError), as
  JAX does; the others compute in float32 (float64 for 64-bit integers).
* ``one_hot``'s default dtype is float32 (functx's default float; JAX with x64 gives float64).
* The exact ``gelu`` (``approximate=False``) is ``x * (1 + erf(x / sqrt(2))) / 2``: functx has no
  ``erfc``, so where ``x < -5`` the tiny true values (below 1e-6 in magnitude) may round to 0.
"""

from __future__ import annotations

import inspect
import re
import textwrap

import numpy as np

from functx import config, dtypes, numpy as jnp, ops
from functx.control.custom_derivatives import custom_jvp
from functx.errors import (
    FunctxTypeError,
    FunctxValueError,
    UnsupportedError,
    missing_name_hook as _missing_name_hook,
)
from functx.nn._scaled import (
    get_scaled_dot_general_config as get_scaled_dot_general_config,
    scaled_dot_general as scaled_dot_general,
    scaled_matmul as scaled_matmul,
)
from functx.source_info import where as _loc

# What ``x`` is, in the docstrings ``_activation`` completes: by default the input of a function
# that computes in its float dtype; ``_X_WEAK`` for those that JAX writes as a mix of the input
# with a Python float.
_X = "the input (integers are converted to float)."
_X_WEAK = "an array or scalar (integers and bools are converted to the default float)."


def _activation(call, result, *, returns="An array of ``x``'s shape and float dtype.", **meanings):
    """Completes a function's docstring (its summary) with its Arguments in the signature's order
    (``x`` is ``_X`` unless ``meanings`` says otherwise; the others' meanings from ``meanings``),
    ``returns`` and an example that shows ``nn.<name>(<call>)`` as ``result``: its repr when
    ``result`` is one (``Array(...)``), else printed."""

    def complete(fn):
        names = list(inspect.signature(fn).parameters)
        given = {"x": _X, **meanings}
        unknown, missing = set(meanings) - set(names), set(names) - set(given)
        if unknown or missing:
            raise TypeError(
                f"the docstring of {fn.__name__}: no meaning for {sorted(missing)}, "
                f"meanings of {sorted(unknown)} that are not its arguments"
            )
        args = [
            textwrap.fill(f"{n}: {given[n]}", 96, initial_indent="  ", subsequent_indent="    ")
            for n in names
        ]
        shown = f"nn.{fn.__name__}({call})"
        shown = shown if result.startswith("Array(") else f"print({shown})"
        code = ["import numpy as np"] if re.search(r"\bnp\.", call) else []
        code += [
            "from functx import nn",
            *(["import functx.numpy as jnp"] if "jnp." in call else []),
        ]
        text = "\n".join(
            ["", "", "Arguments:", *args, "Returns:", f"  {returns}", "", "Example:"]
            + [f"  >>> {line}" for line in (*code, shown)]
            + [f"  {line}" for line in result.split("\n")]
        )
        fn.__doc__ = (fn.__doc__ or "") + textwrap.indent(text, "    ") + "\n    "
        return fn

    return complete


def _arr(x):
    return jnp.asarray(x) if not hasattr(x, "aval") else x


def _float(x):
    (x,) = jnp._core._promote_float("functx.nn", _arr(x))
    return x


def _is_intbool(x):
    dt = x.dtype
    return dt == dtypes.bool_ or np.issubdtype(dt, np.integer)


def _weak_float(x):
    """An activation that JAX writes as a mix of its input with a Python float: an integer or
    bool input becomes the default float dtype, weakly typed (float64 with x64 on), as in JAX."""
    x = _arr(x)
    if _is_intbool(x):
        return ops.convert_element_type(x, dtypes.default_float(), weak_type=True)
    return _float(x)


def _bool_weak_float(x):
    """Like ``_weak_float`` for bools only (JAX mixes a bool input with a Python int first)."""
    x = _arr(x)
    if x.dtype == dtypes.bool_:
        return ops.convert_element_type(x, dtypes.default_float(), weak_type=True)
    return _float(x)


def _inexact(x, name, allow_int=False):
    """``x`` as a float array; like JAX, reject integers (``allow_int`` False) and bools."""
    x = _arr(x)
    if _is_intbool(x) and (not allow_int or x.dtype == dtypes.bool_):
        raise FunctxTypeError(
            f"{name} does not accept dtype {x.dtype.name}. Accepted dtypes are subtypes of "
            f"floating, complexfloating.{_loc()}"
        )
    return _float(x)


def _relu(x):
    """The rectified linear unit ``max(x, 0)`` (``jax.nn.relu``); the derivative at 0 is 0, like
    JAX's.

    Arguments:
      x: an array or scalar (a bool input gives the default integer type, as in JAX).
    Returns:
      An array of ``x``'s shape and dtype.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> from functx import nn
      >>> nn.relu(np.float32([-1.0, 0.0, 2.5]))
      Array([0. , 0. , 2.5], dtype=float32)
      >>> functx.grad(nn.relu)(0.0)
      Array(0., dtype=float32, weak_type=True)
    """
    x = _arr(x)
    if x.dtype == dtypes.bool_:  # JAX: a bool input gives the default integer, weakly typed
        x = ops.convert_element_type(x, dtypes.default_int(), weak_type=True)
    return jnp.maximum(x, jnp.zeros((), x.dtype))


def _relu_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    x = _arr(x)
    # the derivative is 1 where x > 0 and 0 elsewhere, including at 0 (JAX's choice)
    return _relu(x), ops.select(x > 0, t, ops.full_like(t, 0))


relu = custom_jvp(_relu)
relu.defjvp(_relu_jvp)
relu.__name__ = "relu"


def _relu6(x):
    """``min(max(x, 0), 6)``; the derivative is 0 at both kinks (0 and 6), like JAX's."""
    return jnp.minimum(jnp.maximum(x, jnp.zeros((), x.dtype)), jnp.full((), 6, x.dtype))


def _relu6_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    inside = jnp.logical_and(x > 0, x < 6)
    return _relu6(x), ops.select(inside, t, ops.full_like(t, 0))


_relu6_cj = custom_jvp(_relu6)
_relu6_cj.defjvp(_relu6_jvp)


@_activation(
    "np.float32([-1.0, 3.0, 8.0])",
    "Array([0., 3., 6.], dtype=float32)",
    x=_X_WEAK,
)
def relu6(x):
    """``min(max(x, 0), 6)`` (``jax.nn.relu6``); the derivative is 1 strictly inside (0, 6) and 0
    elsewhere, including at 0 and 6 (JAX's choice)."""
    return _relu6_cj(_weak_float(x))


@_activation(
    "np.float32([-2.0, 0.0, 2.0])",
    "Array([0.11920292, 0.5       , 0.880797  ], dtype=float32)",
    x=_X_WEAK,
)
def sigmoid(x):
    """The logistic function ``1 / (1 + exp(-x))`` (``jax.nn.sigmoid``)."""
    return ops.logistic(_inexact(x, "logistic"))


@_activation(
    "np.float32([-100.0, 0.0])",
    "Array([-100.       ,   -0.6931472], dtype=float32)",
    x=_X_WEAK,
)
def log_sigmoid(x):
    """``log(sigmoid(x)) = -softplus(-x)`` (``jax.nn.log_sigmoid``), stable for large ``|x|``."""
    return -softplus(-_inexact(x, "log_sigmoid", allow_int=True))


@_activation(
    "np.float32([-1.0, 0.0, 2.0])",
    "Array([-0.2689414,  0.       ,  1.761594 ], dtype=float32)",
    x="an array or scalar (integers are converted to the default float).",
)
def silu(x):
    """``x * sigmoid(x)`` (``jax.nn.silu``; ``jax.nn.swish`` is the same function)."""
    x = _inexact(x, "logistic")
    return x * ops.logistic(x)


swish = silu


def _softplus(x):
    return jnp.logaddexp(x, jnp.zeros((), x.dtype))


def _softplus_jvp(primals, tangents):
    # d/dx log(1 + exp(x)) = sigmoid(x) everywhere (0.5 at 0, where logaddexp's formula has a tie)
    (x,), (t,) = primals, tangents
    return _softplus(x), t * ops.logistic(x)


_softplus_cj = custom_jvp(_softplus)
_softplus_cj.defjvp(_softplus_jvp)


@_activation(
    "np.float32([-1.0, 0.0, 30.0])",
    "Array([ 0.3132617,  0.6931472, 30.       ], dtype=float32)",
    x=_X_WEAK,
)
def softplus(x):
    """``log(1 + exp(x))`` (``jax.nn.softplus``), computed as ``logaddexp(x, 0)``; its derivative is
    ``sigmoid(x)``."""
    return _softplus_cj(_bool_weak_float(x))


@_activation(
    "np.float32([-1.0, 2.0])",
    "Array([-0.63212055,  2.        ], dtype=float32)",
    x=_X_WEAK,
    alpha="the scale of the negative part.",
)
def elu(x, alpha=1.0):
    """``x`` where positive, ``alpha * expm1(x)`` elsewhere (``jax.nn.elu``)."""
    x = _weak_float(x)
    pos = x > 0
    safe = jnp.where(pos, jnp.zeros((), x.dtype), x)
    return jnp.where(pos, x, alpha * jnp.expm1(safe))


@_activation(
    "np.float32([-2.0, 3.0]), negative_slope=0.1",
    "Array([-0.2,  3. ], dtype=float32)",
    x=_X_WEAK,
    negative_slope="the slope for negative ``x``.",
)
def leaky_relu(x, negative_slope=0.01):
    """``x`` where ``x >= 0``, ``negative_slope * x`` elsewhere (``jax.nn.leaky_relu``)."""
    x = _weak_float(x)
    return jnp.where(x >= 0, x, negative_slope * x)


def gelu(x, approximate: bool = True):
    """The Gaussian error linear unit (``jax.nn.gelu``): the tanh approximation (default, as in JAX)
    or the exact erf form.

    Arguments:
      x: the input (integers are converted to float).
      approximate: use ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`` (True) or
        ``x (1 + erf(x / sqrt(2))) / 2`` (False).
    Returns:
      An array of the input's float dtype.
    Example:
      >>> import numpy as np
      >>> from functx import nn
      >>> nn.gelu(np.float32([-1.0, 0.0, 1.0]))
      Array([-0.158808,  0.      ,  0.841192], dtype=float32)
      >>> nn.gelu(np.float32([1.0]), approximate=False)
      Array([0.8413447], dtype=float32)
    """
    x = _float(x)
    if approximate:
        c = jnp.asarray(np.sqrt(2 / np.pi), x.dtype)
        cdf = 0.5 * (1.0 + jnp.tanh(c * (x + 0.044715 * ops.integer_pow(x, 3))))
        return x * cdf
    half = jnp.asarray(np.sqrt(0.5), x.dtype)
    return 0.5 * x * (1.0 + ops.erf(x * half))


@_activation(
    "jnp.array([-1.0, 0.0, 2.0])",
    "[-1.1113307  0.         2.101402 ]",
)
def selu(x):
    """Scaled exponential linear unit: ``scale * elu(x, alpha)`` with JAX's constants
    (``alpha = 1.6732632423543772848170429916717``, ``scale = 1.0507009873554804934193349852946``).

    The derivative at 0 is that of the negative side (``scale * alpha``), as in JAX."""
    alpha = 1.6732632423543772848170429916717
    scale = 1.0507009873554804934193349852946
    return scale * elu(x, alpha)


@_activation(
    "jnp.array([-1.0, 0.0, 2.0]), alpha=0.5",
    "[-0.43233237  0.          2.        ]",
    alpha="the scale of the negative side (a scalar or an array broadcastable to ``x``).",
)
def celu(x, alpha=1.0):
    """Continuously differentiable exponential linear unit:
    ``max(x, 0) + alpha * expm1(min(x, 0) / alpha)`` (JAX's formula; the derivative at 0 is 1)."""
    x = _weak_float(x)
    return jnp.maximum(x, 0.0) + alpha * jnp.expm1(jnp.minimum(x, 0.0) / alpha)


def glu(x, axis=-1):
    """Gated linear unit: ``x1 * sigmoid(x2)``, where ``x1`` and ``x2`` are the two halves of ``x``
    along ``axis``.

    Arguments:
      x: the input; its ``axis`` dimension must be even (integers are converted to float).
      axis: the axis to split.
    Returns:
      An array of the input's float dtype, ``axis`` halved.
    Raises:
      ValueError (as functx's FunctxValueError): an odd ``axis`` size (JAX asserts).

    Example:
      >>> import functx
      >>> print(functx.nn.glu(functx.numpy.array([1.0, 2.0, 0.0, 100.0])))
      [0.5 2. ]
    """
    x = _inexact(x, "logistic")
    (ax,) = _axes(axis, x.ndim)
    if x.shape[ax] % 2:
        raise FunctxValueError(f"glu: axis size must be divisible by 2, got {x.shape[ax]}{_loc()}")
    x1, x2 = jnp.split(x, 2, ax)
    return x1 * ops.logistic(x2)


@_activation(
    "jnp.array([-2.0, 0.5, 3.0])",
    "[-1.   0.5  1. ]",
    returns="An array of the input's dtype.",
    x="the input.",
)
def hard_tanh(x):
    """``x`` clipped to ``[-1, 1]`` (JAX's ``where`` form: the derivative is 1 on the closed
    interval, kinks included, and 0 outside). Integer inputs keep their dtype, as in JAX."""
    x = _arr(x)
    return jnp.where(x > 1, 1, jnp.where(x < -1, -1, x))


@_activation(
    "jnp.array([-3.0, 0.0, 1.0])",
    "[-0.75  0.    0.5 ]",
)
def soft_sign(x):
    """``x / (|x| + 1)`` (JAX's ``jax.nn.soft_sign``)."""
    x = _bool_weak_float(x)
    return x / (jnp.abs(x) + 1)


@_activation(
    "jnp.array([-2.0, 0.0, 2.0])",
    "[0.   0.25 2.  ]",
)
def sparse_plus(x):
    """The sparse plus function: 0 for ``x <= -1``, ``x`` for ``x >= 1`` and ``(x + 1)^2 / 4``
    between (JAX's ``where`` form: the derivative is 0 at -1 and 1 at 1)."""
    x = _weak_float(x)
    return jnp.where(x <= -1.0, 0.0, jnp.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axes = (axis,)
    elif isinstance(axis, (tuple, list)):
        axes = tuple(axis)
    else:
        axes = (None,)
    out = []
    for a in axes:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
            raise FunctxTypeError(
                f"axis must be an int or a tuple of ints, got {axis!r:.60}{_loc()}"
            )
        if not -ndim <= a < ndim:
            raise FunctxTypeError(f"axis {a} is out of bounds for an array of rank {ndim}{_loc()}")
        out.append(int(a) % ndim)
    return tuple(out)


@_activation(
    "np.float32([[0.0, 0.0], [1.0, 2.0]]), axis=1",
    "Array([0.6931472, 2.3132617], dtype=float32)",
    returns="An array of ``a``'s float dtype, or ``(log|sum|, sign)`` with ``return_sign``.",
    a="an array.",
    axis="None (all axes), an int or a tuple of ints to reduce over.",
    b=(
        "None or weights broadcastable to ``a``; where the weighted sum is negative the result is "
        "NaN unless ``return_sign``."
    ),
    keepdims="keep the reduced axes with size 1.",
    return_sign="also return the sign of the sum (then the first result is ``log|sum|``).",
    where="None or a bool mask of the elements to include.",
)
def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """``log(sum(b * exp(a)))`` computed stably (``jax.nn.logsumexp``); the max is held constant for
    the gradient."""
    a = _arr(a)
    if where is not None:
        a = jnp.where(where, a, 0)
    if b is not None:
        a, b = jnp._core._promote_float("logsumexp", a, _arr(b))
        a = jnp.where(b != 0, a, -np.inf)
    else:
        a = _float(a)
    axes = _axes(axis, a.ndim)
    amax = jnp.max(a, axis=axes, keepdims=True, where=where, initial=-np.inf)
    amax = ops.stop_gradient(jnp.where(jnp.isfinite(amax), amax, jnp.zeros((), a.dtype)))
    e = jnp.exp(a - amax)
    if b is not None:
        e = e * b
    s = jnp.sum(e, axis=axes, keepdims=True, where=where)
    sign = jnp.sign(s)
    out = jnp.log(jnp.abs(s)) + amax
    if not keepdims:
        out = jnp.squeeze(out, axes)
        sign = jnp.squeeze(sign, axes)
    if return_sign:
        return out, sign
    if b is not None:
        out = jnp.where(sign < 0, jnp.asarray(np.nan, out.dtype), out)
    return out


@_activation(
    "np.float32([1.0, 2.0, 3.0])",
    "Array([0.09003057, 0.24472846, 0.66524094], dtype=float32)",
    x="an array.",
    axis="an int or a tuple of ints to normalize over (default the last).",
    where="None or a bool mask; masked-out entries are 0.",
)
def softmax(x, axis=-1, where=None):
    """``exp(x - max) / sum(exp(x - max))`` along ``axis`` (``jax.nn.softmax``)."""
    x = _inexact(x, "softmax", allow_int=True)
    axes = _axes(axis, x.ndim)
    if config.softmax_custom_jvp.value:
        return _softmax_custom(x, axes, where)
    return _softmax(x, axes, where)


def _softmax(x, axes, where=None):
    xmax = jnp.max(x, axis=axes, keepdims=True, where=where, initial=-np.inf)
    safe = x if where is None else jnp.where(where, x, -np.inf)
    unnormalized = jnp.exp(safe - ops.stop_gradient(xmax))
    out = unnormalized / jnp.sum(unnormalized, axis=axes, keepdims=True, where=where)
    if where is not None:
        out = jnp.where(where, out, jnp.zeros((), out.dtype))
    return out


def _softmax_custom(x, axes, where):
    """``softmax`` under ``functx.softmax_custom_jvp(True)``: JAX's rule, the tangent
    ``y * (dx - sum(y * dx))`` (``where``'s entries only), instead of the formula's derivative.
    (``where`` is an operand of the rule, not a closure: it may be a tracer.)"""

    def jvp(primals, tangents):
        x, *mask = primals
        y = _softmax(x, axes, *mask)
        dx = tangents[0]
        return y, y * (dx - jnp.sum(y * dx, axis=axes, keepdims=True, where=next(iter(mask), None)))

    rule = custom_jvp(lambda x, *mask: _softmax(x, axes, *mask))
    rule.defjvp(jvp)
    return rule(x) if where is None else rule(x, jnp.asarray(where))


@_activation(
    "np.float32([0.0, 0.0])",
    "Array([-0.6931472, -0.6931472], dtype=float32)",
    x="an array.",
    axis="an int or a tuple of ints to normalize over (default the last).",
    where="None or a bool mask; masked-out entries are ``-inf``.",
)
def log_softmax(x, axis=-1, where=None):
    """``x - logsumexp(x)`` along ``axis`` (``jax.nn.log_softmax``)."""
    x = _inexact(x, "log_softmax", allow_int=True)
    axes = _axes(axis, x.ndim)
    xmax = jnp.max(x, axis=axes, keepdims=True, where=where, initial=-np.inf)
    safe = x if where is None else jnp.where(where, x, -np.inf)
    shifted = safe - ops.stop_gradient(xmax)
    lse = jnp.log(jnp.sum(jnp.exp(shifted), axis=axes, keepdims=True, where=where))
    out = shifted - lse
    if where is not None:
        out = jnp.where(where, out, jnp.asarray(-np.inf, out.dtype))
    return out


def standardize(
    x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *, algorithm: str = "fast"
):
    """``(x - mean) / sqrt(variance + epsilon)`` along ``axis`` (``jax.nn.standardize``).

    Arguments:
      x: an array.
      axis: an int or a tuple of ints (default the last).
      mean, variance: None (computed from ``x``) or arrays broadcastable to ``x``.
      epsilon: added to the variance.
      where: None or a bool mask of the elements that count.
      algorithm: ``'fast'`` (JAX's default) computes the variance as ``E[x^2] - E[x]^2``
        clipped at 0; ``'stable'`` as ``E[(x - E[x])^2]``.
    Returns:
      An array of ``x``'s shape and float dtype.
    Example:
      >>> import numpy as np
      >>> from functx import nn
      >>> nn.standardize(np.float32([1.0, 2.0, 3.0]))
      Array([-1.2247359,  0.       ,  1.2247359], dtype=float32)
    """
    x = _float(x)
    axes = _axes(axis, x.ndim)
    if mean is None:
        mean = jnp.mean(x, axis=axes, keepdims=True, where=where)
    if variance is None:
        if algorithm == "stable":
            variance = jnp.mean(jnp.square(x - mean), axis=axes, keepdims=True, where=where)
        elif algorithm == "fast":
            variance = jnp.mean(jnp.square(x), axis=axes, keepdims=True, where=where) - jnp.square(
                mean
            )
            variance = jnp.clip(variance, 0)
        else:
            raise FunctxTypeError(
                f"standardize: unknown algorithm {algorithm!r}; expected 'fast' or 'stable'{_loc()}"
            )
    return jnp.subtract(x, mean) * ops.rsqrt(jnp.add(variance, epsilon))


@_activation(
    "np.int32([0, 2, 5]), 3",
    "Array([[1., 0., 0.],\n       [0., 0., 1.],\n       [0., 0., 0.]], dtype=float32)",
    returns="An array of shape ``x.shape`` with ``num_classes`` inserted at ``axis``.",
    x="an integer (or float) array of class indices.",
    num_classes="the number of classes.",
    dtype="the result's dtype (default float32, float64 with x64).",
    axis="where the new axis goes (an int or a tuple for several).",
)
def one_hot(x, num_classes: int, *, dtype=None, axis=-1):
    """One-hot encode ``x`` along a new ``axis`` (``jax.nn.one_hot``); out-of-range values give all-
    zero rows, as in JAX."""
    if (
        isinstance(num_classes, (bool, np.bool_))
        or not isinstance(num_classes, (int, np.integer))
        or num_classes < 0
    ):
        raise FunctxTypeError(
            f"one_hot: num_classes must be a non-negative int, got {num_classes!r:.60}{_loc()}"
        )
    x = _arr(x)
    dtype = dtypes.default_float() if dtype is None else dtypes.canonicalize(dtype)
    out_ndim = x.ndim + 1
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise FunctxTypeError(f"one_hot: axis must be an int, got {axis!r:.60}{_loc()}")
    if not -out_ndim <= axis < out_ndim:
        raise FunctxTypeError(
            f"one_hot: axis {axis} is out of bounds for a result of rank {out_ndim}{_loc()}"
        )
    axis = axis % out_ndim
    shape = [1] * x.ndim
    shape.insert(axis, int(num_classes))
    classes = ops.broadcasted_iota(x.dtype, tuple(shape), axis)
    return jnp.astype(jnp.equal(jnp.expand_dims(x, axis), classes), dtype)


@_activation(
    "jnp.array([-4.0, 0.0, 1.5, 4.0])",
    "[0.   0.5  0.75 1.  ]",
)
def hard_sigmoid(x):
    """``relu6(x + 3) / 6``: a piecewise-linear sigmoid."""
    return relu6(_weak_float(x) + 3.0) / 6.0


@_activation(
    "jnp.array([-4.0, 0.0, 1.5, 4.0])",
    "[-0.     0.     1.125  4.   ]",
)
def hard_silu(x):
    """``x * hard_sigmoid(x)`` (also named ``hard_swish``)."""
    x = _weak_float(x)
    return x * hard_sigmoid(x)


hard_swish = hard_silu


def identity(x):
    """The identity activation: ``x`` itself, as an array.

    Arguments:
      x: the input.
    Returns:
      ``x`` as an array (same dtype).

    Example:
      >>> import functx.numpy as jnp
      >>> import functx.nn as nn
      >>> print(nn.identity(jnp.array([1.0, 2.0])))
      [1. 2.]
    """
    return _arr(x)


@_activation(
    "jnp.array([0.0])",
    "[0.]",
)
def tanh(x, /):
    """The hyperbolic tangent (``jax.nn.tanh`` is ``jax.numpy.tanh``)."""
    return jnp.tanh(x)


@_activation(
    "jnp.array([0.0, 1.0])",
    "[0.        0.8650984]",
)
def mish(x):
    """``x * tanh(softplus(x))``."""
    x = _bool_weak_float(x)
    return x * jnp.tanh(softplus(x))


@_activation(
    "jnp.array([0.0, 3.0])",
    "[1.        3.3027756]",
    b="the smoothness (``b = 0`` is ReLU).",
)
def squareplus(x, b=4):
    """``(x + sqrt(x**2 + b)) / 2``: a smooth ReLU."""
    x = _float(x)
    b = jnp.astype(_arr(b), x.dtype)
    return (x + jnp.sqrt(jnp.square(x) + b)) / 2


@_activation(
    "jnp.array([-2.0, 0.0, 0.5, 2.0])",
    "[0.   0.5  0.75 1.  ]",
)
def sparse_sigmoid(x):
    """``clip(x + 1, 0, 2) / 2``: the sparsemax counterpart of the sigmoid."""
    x = _weak_float(x)
    return 0.5 * jnp.clip(x + 1.0, 0.0, 2.0)


def _log1mexp(x):
    small = x < np.log(2.0)
    # each branch sees a safe operand, so the unused one never makes a NaN
    a = jnp.where(small, x, jnp.ones((), x.dtype))
    b = jnp.where(small, jnp.ones((), x.dtype), x)
    return jnp.where(small, jnp.log(-jnp.expm1(-a)), jnp.log1p(-jnp.exp(-b)))


def _log1mexp_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _log1mexp(x), t / jnp.expm1(x)


_log1mexp_cj = custom_jvp(_log1mexp)
_log1mexp_cj.defjvp(_log1mexp_jvp)


@_activation(
    "jnp.array([0.1, 5.0])",
    "[-2.3521686  -0.00676075]",
    returns="An array of ``x``'s float dtype (NaN for ``x < 0``, ``-inf`` at 0).",
    x="a non-negative input (integers are converted to float).",
)
def log1mexp(x):
    """``log(1 - exp(-x))`` computed stably (``expm1`` below ``log 2``, ``log1p`` above); the
    derivative is ``1 / expm1(x)``."""
    return _log1mexp_cj(_inexact(x, "log1mexp", allow_int=True))


@_activation(
    "jnp.array([0.0, 0.0, 0.0])",
    "0.0",
    x="the input.",
    axis="an int, a tuple of ints, or None (all axes).",
    where="elements to include.",
    keepdims="keep the reduced axes as size-1 dimensions.",
    returns="An array of ``x``'s float dtype.",
)
def logmeanexp(x, axis=None, where=None, keepdims=False):
    """``log(mean(exp(x)))`` computed stably: ``logsumexp`` minus the log of the count."""
    x = _float(x)
    lse = logsumexp(x, axis=axis, keepdims=keepdims, where=where)
    if where is None:
        axes = _axes(axis, x.ndim)
        count = jnp.asarray(np.asarray(int(np.prod([x.shape[a] for a in axes])), lse.dtype))
    else:
        mask = jnp.broadcast_to(_arr(where), x.shape)
        count = jnp.sum(jnp.astype(mask, lse.dtype), axis=axis, keepdims=keepdims)
    return lse - jnp.log(count)


def _as_4d(t):
    t = _arr(t)
    return jnp.reshape(t, (1,) * (4 - t.ndim) + t.shape) if t.ndim < 4 else t


def dot_product_attention(
    query,
    key,
    value,
    bias=None,
    mask=None,
    *,
    scale=None,
    is_causal=False,
    query_seq_lengths=None,
    key_value_seq_lengths=None,
    local_window_size=None,
    implementation=None,
    return_residual=False,
):
    """Scaled dot-product attention, ``softmax(q k^T * scale + bias, masked) v``, with JAX's
    ``implementation='xla'`` semantics: shapes ``(B, T, N, H)`` for the query and ``(B, S, K, H)``
    for key and value (the batch dimension may be left out; ``N`` a multiple of ``K``: grouped
    query attention), logits in at least float32, the softmax in float32, masked logits set to
    ``-0.7 * finfo.max`` (so a fully masked row averages the values, as in JAX).

    Arguments:
      query: ``(B, T, N, H)`` or ``(T, N, H)``.
      key, value: ``(B, S, K, H)`` or ``(S, K, H)``, of one dtype (the query's too).
      bias: added to the logits, broadcastable to ``(B, N, T, S)``.
      mask: a bool array broadcastable to ``(B, N, T, S)``: True keeps a logit.
      scale: the logits' scale (default ``1 / sqrt(H)``).
      is_causal: also mask key positions after the query position.
      query_seq_lengths, key_value_seq_lengths: int32 ``(B,)`` valid lengths (padding masks).
      local_window_size: an int or ``(left, right)``: keep keys within this window of the query.
      implementation: None or ``'xla'`` (``'cudnn'`` is not available in functx).
      return_residual: also return the log-sum-exp of the logits, ``(B, T, N)``.
    Returns:
      The attention output, of the query's shape and the key's dtype (and the residual).

    Example:
      >>> import functx.nn as nn, functx.numpy as jnp
      >>> q = jnp.ones((2, 1, 4))
      >>> v = jnp.arange(8.0).reshape(2, 1, 4)
      >>> print(nn.dot_product_attention(q, q, v, is_causal=True))
      [[[0. 1. 2. 3.]]
      <BLANKLINE>
       [[2. 3. 4. 5.]]]
    """
    if implementation not in (None, "xla"):
        raise UnsupportedError(
            f"dot_product_attention: implementation={implementation!r} is not available in "
            f"functx (use None or 'xla'){_loc()}"
        )
    out_shape = _arr(query).shape
    q, k, v = _as_4d(query), _as_4d(key), _as_4d(value)
    bias = _as_4d(bias) if bias is not None else None
    mask = _as_4d(mask) if mask is not None else None
    B, S, K, H = k.shape

    def check(t, shape, dtype, name):
        if t is None:
            return
        if t.ndim != len(shape):
            raise FunctxValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}{_loc()}")
        if dtype is not None and t.dtype != dtype:
            raise FunctxValueError(f"{name} dtype should be {dtype}, but got {t.dtype}{_loc()}")
        if any(d != -1 and t.shape[i] != d for i, d in enumerate(shape)):
            raise FunctxValueError(f"{name} shape should be {shape}: but got {t.shape}{_loc()}")

    qlen = _arr(query_seq_lengths) if query_seq_lengths is not None else None
    kvlen = _arr(key_value_seq_lengths) if key_value_seq_lengths is not None else None
    check(v, [B, S, K, H], k.dtype, "value")
    check(q, [B, -1, -1, H], k.dtype, "query")
    check(mask, [-1] * 4, np.dtype(bool), "mask")
    check(bias, [-1] * 4, None, "bias")
    check(qlen, [B], np.dtype("int32"), "query_seq_lengths")
    check(kvlen, [B], np.dtype("int32"), "key_value_seq_lengths")
    _, T, N, _ = q.shape
    if N % K != 0:
        raise FunctxValueError(
            "The number of query heads must be a multiple of key/value heads, but got "
            f"{N} vs {K}{_loc()}"
        )
    G = N // K
    scale = 1.0 / np.sqrt(H) if scale is None else scale
    ldt = dtypes.promote_types(q.dtype, dtypes.float32)
    qg = jnp.reshape(jnp.astype(q, ldt), (B, T, K, G, H))
    logits = jnp.einsum("btkgh,bskh->bkgts", qg, jnp.astype(k, ldt))
    logits = jnp.reshape(logits, (B, N, T, S)) * jnp.asarray(np.asarray(scale, ldt))
    if bias is not None:
        logits = jnp.astype(logits + bias, ldt)
    keep = mask
    extra = []
    if is_causal:
        extra.append(jnp.tril(jnp.ones((T, S), dtypes.bool_)))
    if local_window_size is not None:
        left, right = (
            (local_window_size, local_window_size)
            if isinstance(local_window_size, int)
            else local_window_size
        )
        qi = jnp.arange(T, dtype=np.int32)[:, None]
        ki = jnp.arange(S, dtype=np.int32)[None, :]
        extra.append(jnp.logical_and(qi <= ki + left, qi >= ki - right))
    if qlen is not None or kvlen is not None:
        pad = jnp.ones((B, 1, T, S), dtypes.bool_)
        if qlen is not None:
            pad = jnp.logical_and(
                pad, (jnp.arange(T, dtype=np.int32)[:, None] < qlen[:, None, None, None])
            )
        if kvlen is not None:
            pad = jnp.logical_and(
                pad, (jnp.arange(S, dtype=np.int32)[None, :] < kvlen[:, None, None, None])
            )
        extra.append(pad)
    for m in extra:
        keep = m if keep is None else jnp.logical_and(keep, m)
    if keep is not None:
        big = -0.7 * min(float(dtypes.finfo(ldt).max), float(np.finfo(np.float32).max))
        logits = jnp.where(keep, logits, jnp.asarray(np.asarray(big, ldt)))
    logits32 = jnp.astype(logits, dtypes.float32)
    probs = jnp.astype(softmax(logits32, axis=-1), k.dtype)
    pg = jnp.reshape(probs, (B, K, G, T, S))
    out = jnp.reshape(jnp.einsum("bkgts,bskh->btkgh", pg, v), (B, T, N, H))
    if qlen is not None:
        valid = jnp.arange(T, dtype=np.int32)[None, :] < qlen[:, None]
        out = out * jnp.astype(valid[:, :, None, None], out.dtype)
    out = jnp.reshape(out, out_shape)
    if return_residual:
        lse = jnp.astype(logsumexp(logits32, axis=-1), k.dtype)
        lse = ops.stop_gradient(jnp.transpose(lse, (0, 2, 1)))
        return out, jnp.reshape(lse, out_shape[:-1])
    return out


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

# The initializers draw with functx.random, which imports this module: imported last, once every
# name above exists.
from functx.nn import initializers as initializers  # noqa: E402

__all__ = [
    "get_scaled_dot_general_config",
    "scaled_dot_general",
    "scaled_matmul",
    "relu",
    "relu6",
    "sigmoid",
    "log_sigmoid",
    "silu",
    "swish",
    "softplus",
    "elu",
    "leaky_relu",
    "gelu",
    "logsumexp",
    "softmax",
    "log_softmax",
    "standardize",
    "one_hot",
    "selu",
    "celu",
    "glu",
    "hard_tanh",
    "soft_sign",
    "sparse_plus",
    "hard_sigmoid",
    "hard_silu",
    "hard_swish",
    "identity",
    "tanh",
    "mish",
    "squareplus",
    "sparse_sigmoid",
    "log1mexp",
    "logmeanexp",
    "dot_product_attention",
    "initializers",
]
