"""Top-level functions of JAX's built on ``jit`` and ``vjp``: ``functx.fwd_and_bwd`` and
``functx.effects_barrier``; and the sharding of an array that ``functx.debug``'s sharding
functions report (registered into ``functx.debug.sharding_rules``)."""

from __future__ import annotations

import operator
from collections.abc import Sequence

from functx import debug
from functx.array import is_concrete_array
from functx.devices.device import get_default_device
from functx.errors import FunctxTypeError, FunctxValueError
from functx.jit import jit
from functx.sharding import SingleDeviceSharding
from functx.source_info import where
from functx.transforms.vjp import vjp


def _argnums(argnums) -> tuple[int, ...]:
    """``argnums`` as a tuple of ints (TypeError for anything else, as JAX's)."""
    nums = (argnums,) if not isinstance(argnums, Sequence) else tuple(argnums)
    try:
        return tuple(operator.index(i) for i in nums)
    except TypeError:
        raise FunctxTypeError(
            f"argnums must be an int or a sequence of ints, got {argnums!r}{where()}"
        ) from None


def fwd_and_bwd(fun, argnums, has_aux=False, jitted=True):
    """The forward and backward passes of ``fun`` as two functions (``jax.fwd_and_bwd``), so a
    training loop can compile the backward pass once and call it on each step's residuals
    (``jit`` of the function ``vjp`` returns would compile again at each step).

    ``fwd(*args)`` is ``vjp`` of ``fun`` with respect to the positional arguments ``argnums``:
    it returns ``(outputs, residuals)`` (``(outputs, residuals, aux)`` with ``has_aux``), the
    residuals being the pullback, a pytree of arrays. ``bwd(residuals, cotangents)`` returns
    the cotangents of those arguments: a tuple, or the one cotangent when ``argnums`` is an int.

    Arguments:
      fun: the function.
      argnums: an int or a sequence of ints: the positional arguments to differentiate.
      has_aux: whether ``fun`` returns ``(outputs, aux)``.
      jitted: whether ``fwd`` and ``bwd`` are ``jit``-compiled (default True).
    Returns:
      the pair ``(fwd, bwd)``.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> fwd, bwd = functx.fwd_and_bwd(lambda x, w: jnp.sum(x * w), argnums=(0, 1))
      >>> y, res = fwd(jnp.arange(3.0), jnp.ones(3))
      >>> y
      Array(3., dtype=float32)
      >>> bwd(res, jnp.float32(1))
      (Array([1., 1., 1.], dtype=float32), Array([0., 1., 2.], dtype=float32))
    """
    if not callable(fun):
        raise FunctxTypeError(
            f"Expected a callable value, got {fun!r:.80} of type {type(fun).__name__}{where()}"
        )
    nums = _argnums(argnums)

    def fwd(*args):
        n = len(args)
        bad = [i for i in nums if not -n <= i < n]
        if bad:
            raise FunctxValueError(
                f"fwd_and_bwd: argnums={argnums!r} names argument {bad[0]}, but fwd was called "
                f"with {n} positional arguments{where()}"
            )
        chosen = [i % n for i in nums]

        def partial(*dyn):
            full = list(args)
            for i, a in zip(chosen, dyn):
                full[i] = a
            return fun(*full)

        return vjp(partial, *[args[i] for i in chosen], has_aux=has_aux)

    def bwd(residuals, cotangents):
        grads = residuals(cotangents)
        return grads[0] if isinstance(argnums, int) else grads

    return (jit(fwd), jit(bwd)) if jitted else (fwd, bwd)


def effects_barrier():
    """Wait until the side effects of the functions already called have happened
    (``jax.effects_barrier``). functx runs host callbacks (``debug.print``,
    ``debug.callback``, ``pure_callback``, ``io_callback``) in the calling thread, in program
    order, before the call that makes them returns (eagerly, and as host steps of ``jit``'s
    C++ and Triton programs), so none is pending when this is called: it returns at once.

    Arguments:
      none.
    Returns:
      None.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> f = functx.jit(lambda x: functx.debug.print("x = {}", x) or x + 1)
      >>> _ = f(jnp.float32(2))
      x = 2.0
      >>> functx.effects_barrier()
    """
    return None


def _sharding_of(x):
    """The sharding ``functx.debug.inspect_array_sharding`` reports: the device of a concrete
    array, else (a traced value) the default device."""
    device = x.device if is_concrete_array(x) else get_default_device()
    return SingleDeviceSharding(device)


debug.sharding_rules["of"] = _sharding_of
