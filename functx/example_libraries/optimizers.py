"""``functx.example_libraries.optimizers``: JAX's ``jax.example_libraries.optimizers``.

An optimizer is a triple of functions ``(init_fun, update_fun, get_params)``:
``init_fun(params)`` gives the first optimizer state, ``update_fun(step, grads, state)`` the next
one, and ``get_params(state)`` the parameters in it. Each optimizer below is written for one
array (its state a small tuple of arrays) and made to work on any pytree of parameters by the
``optimizer`` decorator, which applies it leaf by leaf and keeps the flattened states in an
``OptimizerState`` (itself a pytree, so states pass through ``jit``). A step size is a number or
a schedule, a function of the step index (``constant``, ``exponential_decay``, ...).
As in JAX, these are small examples; for a full library see Optax.
"""

from __future__ import annotations

import functools
import inspect
import textwrap
from collections import namedtuple
from collections.abc import Callable
from typing import Any, NamedTuple

from functx import numpy as jnp, tree as _tree, tree_util as _tree_util
from functx.errors import (
    FunctxTypeError,
    FunctxValueError,
    missing_name_hook as _missing_name_hook,
)

OptimizerState = namedtuple("OptimizerState", ["packed_state", "tree_def", "subtree_defs"])
OptimizerState.__doc__ = """The state of an optimizer made by ``optimizer``, for a whole pytree
of parameters: ``packed_state`` lists each parameter leaf's state flattened, ``tree_def`` is
the parameters' tree structure and ``subtree_defs`` the structure of each leaf's state. A pytree
whose only children are the packed states (so it passes through ``jit`` and ``tree.map``).

Example:
  >>> import functx.numpy as jnp
  >>> from functx.example_libraries import optimizers
  >>> init, update, get_params = optimizers.momentum(0.1, mass=0.9)
  >>> state = init({"w": jnp.ones(2)})
  >>> len(state.packed_state), state.tree_def
  (1, PyTreeSpec({'w': *}))
"""
_tree_util.register_pytree_node(
    OptimizerState,
    lambda s: ((s.packed_state,), (s.tree_def, s.subtree_defs)),
    lambda aux, children: OptimizerState(children[0], *aux),
)

# The type names JAX's module defines (annotations only).
Array = Any
Params = Any  # a pytree of arrays
State = Any  # one leaf's optimizer state
Updates = Params  # gradients, structured as the parameters
InitFn = Callable[[Params], OptimizerState]
Step = int
UpdateFn = Callable[[Step, Updates, OptimizerState], OptimizerState]
ParamsFn = Callable[[OptimizerState], Params]
Schedule = Callable[[Step], float]


class Optimizer(NamedTuple):
    """The ``(init_fn, update_fn, params_fn)`` triple an optimizer constructor returns (a named
    tuple: it unpacks as ``init_fun, update_fun, get_params = optimizers.sgd(0.1)``).

    Example:
      >>> from functx.example_libraries import optimizers
      >>> opt = optimizers.sgd(0.1)
      >>> opt.params_fn(opt.update_fn(0, 1.0, opt.init_fn(2.0)))
      1.9
    """

    init_fn: InitFn
    update_fn: UpdateFn
    params_fn: ParamsFn


def _flatten_each(trees):
    """The leaves and the tree structure of each tree, as two lists."""
    pairs = [_tree.flatten(t) for t in trees]
    return [p[0] for p in pairs], [p[1] for p in pairs]


def _unflatten_each(structures, leaves):
    return [_tree.unflatten(s, leaf) for s, leaf in zip(structures, leaves, strict=True)]


def optimizer(opt_maker: Callable[..., tuple[Callable, Callable, Callable]]) -> Callable:
    """Turns a constructor of single-array optimizers into one of pytree optimizers (a
    decorator).

    ``opt_maker(*args, **kwargs)`` returns ``(init, update, get_params)`` for one array:
    ``init(x0)`` gives its state (a pytree of arrays), ``update(i, g, state)`` the next state,
    ``get_params(state)`` the array. The decorated constructor returns an ``Optimizer`` whose
    functions take any pytree of parameters, apply those to each leaf, and keep the states in an
    ``OptimizerState``.

    Arguments:
      opt_maker: the constructor of the single-array triple.
    Returns:
      the constructor of the pytree ``Optimizer``; ``update_fn`` raises a TypeError when the
      gradients' tree structure differs from the parameters' (or an update changes a state's
      structure).
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.example_libraries.optimizers import optimizer
      >>> @optimizer
      ... def halve():
      ...     return (lambda x: x), (lambda i, g, x: x - 0.5 * g), (lambda x: x)
      >>> init, update, get_params = halve()
      >>> get_params(update(0, {"a": jnp.ones(2)}, init({"a": jnp.ones(2)})))
      {'a': Array([0.5, 0.5], dtype=float32)}
    """

    @functools.wraps(opt_maker)
    def make(*args, **kwargs):
        init, update, get_params = opt_maker(*args, **kwargs)

        @functools.wraps(init)
        def init_fn(params):
            leaves, structure = _tree.flatten(params)
            packed, substructures = _flatten_each([init(x0) for x0 in leaves])
            return OptimizerState(packed, structure, substructures)

        @functools.wraps(update)
        def update_fn(i, grads, opt_state):
            packed, structure, substructures = opt_state
            grad_leaves, grad_structure = _tree.flatten(grads)
            if grad_structure != structure:
                raise FunctxTypeError(
                    "optimizer update function was passed a gradient tree that did not match "
                    f"the parameter tree structure with which it was initialized: parameter "
                    f"tree {structure} and grad tree {grad_structure}."
                )
            states = _unflatten_each(substructures, packed)
            new = [update(i, g, s) for g, s in zip(grad_leaves, states, strict=True)]
            new_packed, new_substructures = _flatten_each(new)
            for before, after in zip(substructures, new_substructures):
                if before != after:
                    raise FunctxTypeError(
                        "optimizer update function produced an output structure that did not "
                        f"match its input structure: input {before} and output {after}."
                    )
            return OptimizerState(new_packed, structure, substructures)

        @functools.wraps(get_params)
        def params_fn(opt_state):
            packed, structure, substructures = opt_state
            states = _unflatten_each(substructures, packed)
            return _tree.unflatten(structure, [get_params(s) for s in states])

        return Optimizer(init_fn, update_fn, params_fn)

    return make


def _first(state):
    return state[0]


# --- the optimizers (each for one array; ``optimizer`` extends it to pytrees) --------------------

# What each constructor argument means, for the docstrings ``_documented`` writes (the defaults
# come from the signatures).
_MEANINGS = {
    "step_size": "a positive number, or a schedule (a function of the step index)",
    "mass": "the momentum coefficient",
    "momentum": "the momentum coefficient",
    "gamma": "the decay of the mean square",
    "b1": "the decay of the first moment",
    "b2": "the decay of the second moment",
    "eps": "added to the denominator",
}


def _documented(what: str, call: str, result: str, steps: int = 1, x0="jnp.float32(1.0)", **means):
    """Writes an optimizer constructor's docstring: ``what`` it computes, each argument's meaning
    (``_MEANINGS``, or ``means`` where it differs) and default, and an example that runs
    ``optimizers.<name>(<call>)`` for ``steps`` steps on f(x) = sum(x**2) from ``x0``, whose
    parameters print as ``result``."""

    def set_doc(maker):
        args = "".join(
            f"\n      {p.name}: {means.get(p.name, _MEANINGS[p.name])}"
            + ("" if p.default is p.empty else f" (default {p.default})")
            + "."
            for p in inspect.signature(maker).parameters.values()
        )
        step = "state = update({}, 2 * get_params(state), state)"
        run = (
            step.format(0)
            if steps == 1
            else f"for i in range({steps}):\n      ...     " + step.format("i")
        )
        maker.__doc__ = f"""{textwrap.fill(what, 96, subsequent_indent="    ")}

    Arguments:{args}
    Returns:
      an ``Optimizer`` ``(init_fun, update_fun, get_params)``.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.example_libraries import optimizers
      >>> init, update, get_params = optimizers.{maker.__name__}({call})
      >>> state = init({x0})
      >>> {run}
      >>> get_params(state)
      {result}
    """
        return maker

    return set_doc


@optimizer
@_documented(
    "Stochastic gradient descent: ``x <- x - step_size(i) * g``.",
    "0.1",
    "Array(0.51199996, dtype=float32)",
    3,
)
def sgd(step_size):
    step_size = make_schedule(step_size)
    return (lambda x0: x0), (lambda i, g, x: x - step_size(i) * g), (lambda x: x)


def _with_zeros(count):
    """An ``init`` whose state is the parameter followed by ``count`` arrays of zeros like it."""
    return lambda x0: (x0, *(jnp.zeros_like(x0) for _ in range(count)))


@optimizer
@_documented(
    "Gradient descent with momentum: ``v <- mass * v + g``, ``x <- x - step_size(i) * v``.",
    "0.1, mass=0.9",
    "Array(0.06200001, dtype=float32)",
    3,
)
def momentum(step_size: Schedule, mass: float):
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * velocity, velocity

    return _with_zeros(1), update, _first


@optimizer
@_documented(
    "Gradient descent with Nesterov momentum: ``v <- mass * v + g``, "
    "``x <- x - step_size(i) * (mass * v + g)``.",
    "0.1, mass=0.9",
    "Array(0.62, dtype=float32)",
)
def nesterov(step_size: Schedule, mass: float):
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, velocity = state
        velocity = mass * velocity + g
        return x - step_size(i) * (mass * velocity + g), velocity

    return _with_zeros(1), update, _first


@optimizer
@_documented(
    "Adagrad (Duchi, Hazan and Singer, 2011), with momentum on the scaled gradient: "
    "``G <- G + g**2``, ``m <- (1 - momentum) * g / sqrt(G) + momentum * m``, "
    "``x <- x - step_size(i) * m``.",
    "0.1",
    "Array(0.99, dtype=float32)",
)
def adagrad(step_size, momentum=0.9):
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, g_sq, m = state
        g_sq = g_sq + jnp.square(g)
        scaled = g * jnp.where(g_sq > 0, 1.0 / jnp.sqrt(g_sq), 0.0)
        m = (1.0 - momentum) * scaled + momentum * m
        return x - step_size(i) * m, g_sq, m

    return _with_zeros(2), update, _first


@optimizer
@_documented(
    "RMSProp: ``a <- gamma * a + (1 - gamma) * g**2``, "
    "``x <- x - step_size(i) * g / sqrt(a + eps)``.",
    "0.1",
    "Array(0.6837722, dtype=float32)",
    eps="added to the mean square",
)
def rmsprop(step_size, gamma=0.9, eps=1e-8):
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq = state
        avg_sq = avg_sq * gamma + jnp.square(g) * (1.0 - gamma)
        return x - step_size(i) * g / jnp.sqrt(avg_sq + eps), avg_sq

    return _with_zeros(1), update, _first


@optimizer
@_documented(
    "RMSProp with momentum: ``a <- gamma * a + (1 - gamma) * g**2``, "
    "``m <- momentum * m + step_size(i) * g / sqrt(a + eps)``, ``x <- x - m``.",
    "0.1",
    "Array(0.6837722, dtype=float32)",
    eps="added to the mean square",
)
def rmsprop_momentum(step_size, gamma=0.9, eps=1e-8, momentum=0.9):
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, avg_sq, mom = state
        avg_sq = avg_sq * gamma + jnp.square(g) * (1.0 - gamma)
        mom = momentum * mom + step_size(i) * g / jnp.sqrt(avg_sq + eps)
        return x - mom, avg_sq, mom

    return _with_zeros(2), update, _first


def _unbias(beta, i, dtype):
    """``1 - beta**(i + 1)``, the bias correction of an average started at zero."""
    return 1 - jnp.asarray(beta, dtype) ** (i + 1)


@optimizer
@_documented(
    "Adam (Kingma and Ba, 2015): moving averages ``m`` of ``g`` and ``v`` of ``g**2``, "
    "bias-corrected, and ``x <- x - step_size(i) * m_hat / (sqrt(v_hat) + eps)``.",
    "0.1",
    "Array(0.7015893, dtype=float32)",
    3,
)
def adam(step_size, b1=0.9, b2=0.999, eps=1e-8):
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, v = state
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * jnp.square(g) + b2 * v
        m_hat, v_hat = m / _unbias(b1, i, m.dtype), v / _unbias(b2, i, m.dtype)
        return x - step_size(i) * m_hat / (jnp.sqrt(v_hat) + eps), m, v

    return _with_zeros(2), update, _first


@optimizer
@_documented(
    "AdaMax, Adam with the infinity norm: ``m <- (1 - b1) * g + b1 * m``, "
    "``u <- max(b2 * u, |g|)``, ``x <- x - step_size(i) / (1 - b1**(i+1)) * m / (u + eps)``.",
    "0.1",
    "Array(0.90000004, dtype=float32)",
    b2="the decay of the infinity norm",
)
def adamax(step_size, b1=0.9, b2=0.999, eps=1e-8):
    step_size = make_schedule(step_size)

    def update(i, g, state):
        x, m, u = state
        m = (1 - b1) * g + b1 * m
        u = jnp.maximum(b2 * u, jnp.abs(g))
        return x - (step_size(i) / _unbias(b1, i, m.dtype)) * m / (u + eps), m, u

    return _with_zeros(2), update, _first


@optimizer
@_documented(
    "SM3 (Anil, Gupta, Koren and Singer, 2019): Adagrad whose accumulator is kept per row, "
    "per column, ... (one vector per axis; an entry's accumulator is the least of its axes'), "
    "with momentum.",
    "0.1",
    "Array([[0.99, 0.99],\n             [0.99, 0.99]], dtype=float32)",
    x0="jnp.ones((2, 2))",
)
def sm3(step_size, momentum=0.9):
    step_size = make_schedule(step_size)

    def init(x0):
        x = jnp.atleast_1d(x0)
        per_axis = [jnp.zeros(n, dtype=x.dtype) for n in x.shape]
        return x, jnp.zeros_like(x), per_axis, jnp.shape(x0)

    def along(v, axis, ndim):
        """The vector ``v`` of axis ``axis`` shaped to broadcast against an ``ndim`` array."""
        return jnp.expand_dims(v, tuple(a for a in range(ndim) if a != axis))

    def update(i, g, state):
        x, m, per_axis, shape = state
        accum = functools.reduce(
            jnp.minimum, [along(v, a, g.ndim) for a, v in enumerate(per_axis)]
        ) + jnp.square(g)
        scaled = g * jnp.where(accum > 0, 1.0 / jnp.sqrt(accum), 0)
        m = (1.0 - momentum) * scaled + momentum * m
        x = x - step_size(i) * m
        others = [tuple(b for b in range(x.ndim) if b != a) for a in range(x.ndim)]
        return x, m, [accum.max(axes) for axes in others], shape

    def get_params(state):
        return state[0].reshape(state[3])

    return init, update, get_params


# --- step-size schedules: functions of the step index --------------------------------------------


def constant(step_size) -> Schedule:
    """The schedule that is ``step_size`` at every step.

    Arguments:
      step_size: the step size.
    Returns:
      a function of the step index.
    Example:
      >>> from functx.example_libraries.optimizers import constant
      >>> constant(0.1)(7)
      0.1
    """
    return lambda i: step_size


def exponential_decay(step_size, decay_steps, decay_rate):
    """``step_size * decay_rate ** (i / decay_steps)``.

    Arguments:
      step_size: the size at step 0.
      decay_steps: the steps over which the size is multiplied by ``decay_rate``.
      decay_rate: the factor.
    Returns:
      a function of the step index.
    Example:
      >>> from functx.example_libraries.optimizers import exponential_decay
      >>> exponential_decay(1.0, 10, 0.5)(20)
      0.25
    """
    return lambda i: step_size * decay_rate ** (i / decay_steps)


def inverse_time_decay(step_size, decay_steps, decay_rate, staircase=False):
    """``step_size / (1 + decay_rate * i / decay_steps)``; with ``staircase``, ``i /
    decay_steps`` is rounded down.

    Arguments:
      step_size: the size at step 0.
      decay_steps: the step count that divides ``i``.
      decay_rate: the rate.
      staircase: whether the size changes only every ``decay_steps`` steps (default False).
    Returns:
      a function of the step index.
    Example:
      >>> from functx.example_libraries.optimizers import inverse_time_decay
      >>> inverse_time_decay(1.0, 10, 1.0)(5), inverse_time_decay(1.0, 10, 1.0, True)(5)
      (0.6666666666666666, Array(1., dtype=float32, weak_type=True))
    """
    if staircase:
        return lambda i: step_size / (1 + decay_rate * jnp.floor(i / decay_steps))
    return lambda i: step_size / (1 + decay_rate * i / decay_steps)


def polynomial_decay(step_size, decay_steps, final_step_size, power=1.0):
    """From ``step_size`` at step 0 to ``final_step_size`` at step ``decay_steps`` (and after)
    along ``(1 - i / decay_steps) ** power``.

    Arguments:
      step_size: the size at step 0.
      decay_steps: the step at which the final size is reached.
      final_step_size: the size from then on.
      power: the polynomial's power (default 1, linear).
    Returns:
      a function of the step index.
    Example:
      >>> from functx.example_libraries.optimizers import polynomial_decay
      >>> polynomial_decay(1.0, 10, 0.1)(5)
      Array(0.55, dtype=float32, weak_type=True)
    """

    def schedule(step_num):
        step_num = jnp.minimum(step_num, decay_steps)
        frac = (1 - step_num / decay_steps) ** power
        return frac * (step_size - final_step_size) + final_step_size

    return schedule


def piecewise_constant(boundaries: Any, values: Any):
    """``values[k]`` for steps ``i`` with ``k`` boundaries below ``i`` (``values[0]`` up to and
    including ``boundaries[0]``, ...).

    Arguments:
      boundaries: the increasing step indices where the size changes.
      values: the sizes, one more than the boundaries.
    Returns:
      a function of the step index; a ValueError if the lengths do not fit.
    Example:
      >>> from functx.example_libraries.optimizers import piecewise_constant
      >>> schedule = piecewise_constant([10, 20], [1.0, 0.5, 0.1])
      >>> schedule(10), schedule(11), schedule(25)
      (Array(1., dtype=float32), Array(0.5, dtype=float32), Array(0.1, dtype=float32))
    """
    boundaries, values = jnp.array(boundaries), jnp.array(values)
    if not boundaries.ndim == values.ndim == 1:
        raise FunctxValueError("boundaries and values must be sequences")
    if boundaries.shape[0] != values.shape[0] - 1:
        raise FunctxValueError("boundaries length must be one shorter than values length")
    return lambda i: values[jnp.sum(i > boundaries)]


def make_schedule(scalar_or_schedule: float | Schedule) -> Schedule:
    """A schedule from a step size: a callable is a schedule already; a scalar becomes
    ``constant(scalar)``.

    Arguments:
      scalar_or_schedule: a scalar or a function of the step index.
    Returns:
      a function of the step index; a TypeError for anything else.
    Example:
      >>> from functx.example_libraries.optimizers import make_schedule
      >>> make_schedule(0.5)(3)
      0.5
    """
    if callable(scalar_or_schedule):
        return scalar_or_schedule
    if jnp.ndim(scalar_or_schedule) == 0:
        return constant(scalar_or_schedule)
    raise FunctxTypeError(
        f"a step size must be a scalar or a schedule (a function of the step index), got "
        f"{type(scalar_or_schedule).__name__}"
    )


# --- utilities -----------------------------------------------------------------------------------


def l2_norm(tree):
    """The l2 norm of all the leaves of a pytree of arrays together.

    Arguments:
      tree: a pytree of arrays.
    Returns:
      the norm, a scalar.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.example_libraries.optimizers import l2_norm
      >>> l2_norm({"a": jnp.array([3.0]), "b": jnp.array([4.0])})
      Array(5., dtype=float32)
    """
    return jnp.sqrt(sum(jnp.vdot(x, x) for x in _tree.leaves(tree)))


def clip_grads(grad_tree, max_norm):
    """The gradients scaled down so that their ``l2_norm`` is at most ``max_norm``.

    Arguments:
      grad_tree: a pytree of arrays.
      max_norm: the largest norm kept.
    Returns:
      the pytree, unchanged when its norm is below ``max_norm``.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.example_libraries.optimizers import clip_grads
      >>> clip_grads([jnp.array([3.0, 4.0])], 1.0)
      [Array([0.6, 0.8], dtype=float32)]
    """
    norm = l2_norm(grad_tree)
    return _tree.map(lambda g: jnp.where(norm < max_norm, g, g * (max_norm / norm)), grad_tree)


# --- (de)serialising an OptimizerState -----------------------------------------------------------


class JoinPoint:
    """A leaf of the parameters' tree that holds that parameter's state (a pytree), as
    ``unpack_optimizer_state`` makes them; iterating over it yields the state.

    Example:
      >>> from functx.example_libraries.optimizers import JoinPoint
      >>> list(JoinPoint((1, 2)))
      [(1, 2)]
    """

    def __init__(self, subtree):
        self.subtree = subtree

    def __iter__(self):
        yield self.subtree


def unpack_optimizer_state(opt_state):
    """An ``OptimizerState`` as a pytree of the parameters' structure whose leaves are
    ``JoinPoint``s holding each parameter's state (for saving a state).

    Arguments:
      opt_state: an ``OptimizerState``.
    Returns:
      the marked pytree.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.example_libraries import optimizers
      >>> init, _, _ = optimizers.momentum(0.1, 0.9)
      >>> marked = optimizers.unpack_optimizer_state(init({"w": jnp.ones(2)}))
      >>> marked["w"].subtree
      (Array([1., 1.], dtype=float32), Array([0., 0.], dtype=float32))
    """
    packed, structure, substructures = opt_state
    states = _unflatten_each(substructures, packed)
    return _tree.unflatten(structure, [JoinPoint(s) for s in states])


def pack_optimizer_state(marked_pytree):
    """The ``OptimizerState`` that ``unpack_optimizer_state`` gave ``marked_pytree``.

    Arguments:
      marked_pytree: a pytree whose leaves are ``JoinPoint``s.
    Returns:
      the ``OptimizerState``; a TypeError if a leaf is not a ``JoinPoint``.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.example_libraries import optimizers
      >>> init, _, get_params = optimizers.adam(0.1)
      >>> state = init({"w": jnp.ones(2)})
      >>> again = optimizers.pack_optimizer_state(optimizers.unpack_optimizer_state(state))
      >>> get_params(again)
      {'w': Array([1., 1.], dtype=float32)}
    """
    marks, structure = _tree.flatten(marked_pytree)
    bad = [type(m).__name__ for m in marks if not isinstance(m, JoinPoint)]
    if bad:
        raise FunctxTypeError(
            f"pack_optimizer_state takes a pytree whose leaves are JoinPoints, got {bad[0]}"
        )
    packed, substructures = _flatten_each([m.subtree for m in marks])
    return OptimizerState(packed, structure, substructures)


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
    "JoinPoint",
    "Optimizer",
    "OptimizerState",
    "adagrad",
    "adam",
    "adamax",
    "clip_grads",
    "constant",
    "exponential_decay",
    "inverse_time_decay",
    "l2_norm",
    "make_schedule",
    "momentum",
    "nesterov",
    "optimizer",
    "pack_optimizer_state",
    "piecewise_constant",
    "polynomial_decay",
    "rmsprop",
    "rmsprop_momentum",
    "sgd",
    "sm3",
    "unpack_optimizer_state",
]
