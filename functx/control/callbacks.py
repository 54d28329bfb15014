"""Host callbacks: Python functions called on runtime values from traced and compiled code.

Two primitives, with JAX's names and all their rules:

* ``debug_callback`` (``functx.debug.print``, ``functx.debug.callback``): no outputs, an effect.
  Passes never drop it (``passes.effectful``); its jvp calls it on the primals (so ``grad``
  prints the forward pass's values once); its transpose has nothing to do; under ``vmap`` it is
  unrolled over the batch, called once per example, as JAX does.
* ``pure_callback`` (``functx.pure_callback``): outputs of declared shapes and dtypes; no jvp or
  transpose (JAX's ValueErrors); under ``vmap`` as its ``vmap_method`` says ("sequential" maps
  it with a scan, "expand_dims" and "broadcast_all" call it once on the whole batch; None is
  JAX's NotImplementedError).

Under ``jit`` both lower to a *host step* of the compiled program (a ``loop`` node of group type
``host``): the C++ program calls back into Python through a function pointer between kernels
(outside any OpenMP region) with the step's buffers; the Triton program calls the function from
its host code between launches. The callable is a parameter of the equation (``HostFn``): it
prints with its address, so a program with a callback is never taken from the program cache
for another one with the same text.
"""

from __future__ import annotations

import numpy as np

from functx import dtypes, ops
from functx.array import Array
from functx.control.common import lower_to_loop
from functx.control.scan import scan
from functx.core import Primitive, ShapedArray
from functx.errors import FunctxError, FunctxTypeError, FunctxValueError
from functx.lowering.rules import lowerings
from functx.primitives import registry
from functx.source_info import where
from functx.tracing import get_aval, tree_flatten, tree_unflatten
from functx.transforms import jvp as J, passes, transpose as T, vmap as V


def _as_array(x, weak=False) -> Array:
    """A runtime value (a NumPy array) as the functx Array a callback receives (a copy)."""
    v = np.array(x, copy=True)
    return Array._new(v, ShapedArray(v.shape, v.dtype, weak))


def split_static(leaves):
    """The leaves that are arrays (operands of the equation) and the others (``{position:
    value}``: strings, None, any object), which the callback receives as they are (JAX's rule
    for debug callbacks)."""
    dyn, static = [], {}
    for i, x in enumerate(leaves):
        try:
            get_aval(x)
        except (FunctxError, TypeError):
            static[i] = x
            continue
        dyn.append(x)
    return dyn, static


class HostFn:
    """The Python side of a callback equation: calls ``fun`` (the user's function on pytrees)
    with the flat operands as functx Arrays (of the operands' weak types, with the non-array
    leaves ``static`` put back), and returns its flat results as NumPy arrays of the declared
    shapes and dtypes (``out_avals``). Hashes by identity; prints with its address."""

    __slots__ = (
        "fun",
        "in_tree",
        "out_avals",
        "out_tree",
        "label",
        "static",
        "weak",
        "__weakref__",
    )

    def __init__(
        self, fun, in_tree, out_avals=(), out_tree=None, label="callback", static=None, weak=()
    ):
        self.fun = fun
        self.in_tree = in_tree
        self.out_avals = tuple(out_avals)
        self.out_tree = out_tree
        self.label = label
        self.static = dict(static or {})
        self.weak = tuple(weak)

    def args(self, flat):
        """The user's ``(args, kwargs)`` from the flat operand values."""
        it = iter(_as_array(x, i < len(self.weak) and self.weak[i]) for i, x in enumerate(flat))
        n = len(flat) + len(self.static)
        leaves = [self.static[i] if i in self.static else next(it) for i in range(n)]
        return tree_unflatten(self.in_tree, leaves)

    def __repr__(self):
        return f"<{self.label} at 0x{id(self):x}>"

    def __call__(self, *flat):
        args, kwargs = self.args(flat)
        out = self.fun(*args, **kwargs)
        if self.out_tree is None:
            return []
        got, tree = tree_flatten(out)
        if tree != self.out_tree:
            raise FunctxTypeError(
                f"{self.label}: the callback returned a result of structure {tree}, "
                f"but result_shape_dtypes has structure {self.out_tree}"
            )
        res = []
        for x, a in zip(got, self.out_avals):
            v = np.asarray(x)
            if v.shape != a.shape or v.dtype != a.dtype:
                raise FunctxTypeError(
                    f"{self.label}: callback output has shape {v.shape} and dtype {v.dtype}; "
                    f"expected shape {a.shape} and dtype {np.dtype(a.dtype)} "
                    "(from result_shape_dtypes)"
                )
            res.append(v)
        return res


# --- debug_callback ------------------------------------------------------------------------------
debug_callback_p = Primitive("debug_callback", multiple_results=True, group="callback")
registry["debug_callback"] = debug_callback_p
debug_callback_p.abstract_eval = lambda *avals, callback, ordered: []


def _debug_impl(*vals, callback, ordered):
    callback(*vals)
    return []


debug_callback_p.impl = _debug_impl
passes.effectful.add(debug_callback_p)


def _debug_jvp(primals, tangents, **params):
    return debug_callback_p.bind(*primals, **params), []


J.jvp_rules[debug_callback_p] = _debug_jvp
T.transpose_rules[debug_callback_p] = lambda cts, *args, **params: [None] * len(args)


def _unstack(args, dims, size):
    """The operands of each example: mapped ones indexed along their batch axis."""
    return [
        [a if d is None else ops.index_in_dim(a, i, d, keepdims=False) for a, d in zip(args, dims)]
        for i in range(size)
    ]


def _debug_batch(args, dims, **params):
    for one in _unstack(args, dims, V.axis_size_of(args, dims)):
        debug_callback_p.bind(*one, **params)
    return [], []


V.batching_rules[debug_callback_p] = _debug_batch


# --- pure_callback -------------------------------------------------------------------------------
pure_callback_p = Primitive("pure_callback", multiple_results=True, group="callback")
registry["pure_callback"] = pure_callback_p
pure_callback_p.abstract_eval = lambda *avals, callback, result_avals, vmap_method: list(
    result_avals
)


def _pure_impl(*vals, callback, result_avals, vmap_method):
    out = callback(*vals)
    if len(out) != len(result_avals):  # (a batched call: the callback checked the per-call ones)
        raise FunctxTypeError(f"pure_callback: expected {len(result_avals)} outputs{where()}")
    for o, a in zip(out, result_avals):
        if o.shape != a.shape:
            raise FunctxTypeError(
                f"pure_callback: the callback returned shape {o.shape} where the batched call "
                f"expects {a.shape}{where()}"
            )
    return out


pure_callback_p.impl = _pure_impl


def _pure_jvp(primals, tangents, **params):
    raise FunctxValueError(
        "Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks "
        "while taking gradients."
    )


def _pure_transpose(cts, *args, **params):
    raise FunctxValueError(
        "Pure callbacks do not support transpose. Please use `jax.custom_vjp` to use "
        "callbacks while taking gradients."
    )


J.jvp_rules[pure_callback_p] = _pure_jvp
T.transpose_rules[pure_callback_p] = _pure_transpose


class _Batched:
    """A callback called on a whole batch at once (vmap_method expand_dims/broadcast_all): the
    user's function sees the batched operands and returns the batched results."""

    __slots__ = ("inner", "label", "__weakref__")

    def __init__(self, inner):
        self.inner = inner
        self.label = inner.label

    def __repr__(self):
        return f"<{self.label} at 0x{id(self):x}>"

    def __call__(self, *flat):
        args, kwargs = self.inner.args(flat)
        got, _ = tree_flatten(self.inner.fun(*args, **kwargs))
        return [np.asarray(x, a.dtype) for x, a in zip(got, self.inner.out_avals)]


def _pure_batch(args, dims, *, callback, result_avals, vmap_method):
    size = V.axis_size_of(args, dims)
    args = [a if d is None else V.moveaxis(a, d, 0) for a, d in zip(args, dims)]
    batched_avals = tuple(V.batched_aval(a, 0, size) for a in result_avals)
    if vmap_method in ("expand_dims", "broadcast_all", "legacy_vectorized"):
        if vmap_method != "legacy_vectorized":  # (which passes unmapped operands as they are)
            n = size if vmap_method == "broadcast_all" else 1
            args = [ops.broadcast(a, (n,)) if d is None else a for a, d in zip(args, dims)]
        inner = callback.inner if isinstance(callback, _Batched) else callback
        outs = pure_callback_p.bind(
            *args, callback=_Batched(inner), result_avals=batched_avals, vmap_method=vmap_method
        )
        return outs, [0] * len(outs)
    if vmap_method in ("sequential", "sequential_unrolled"):
        mapped = [d is not None for d in dims]
        fixed = [a for a, m in zip(args, mapped) if not m]
        xs = [a for a, m in zip(args, mapped) if m]

        def body(c, x):
            it_f, it_x = iter(fixed), iter(x)
            one = [next(it_x) if m else next(it_f) for m in mapped]
            return c, pure_callback_p.bind(
                *one, callback=callback, result_avals=result_avals, vmap_method=vmap_method
            )

        _, ys = scan(body, (), xs)
        return list(ys), [0] * len(ys)
    raise NotImplementedError(
        "vmap is only supported for the pure_callback primitive when vmap_method is one of "
        "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
        f"'legacy_vectorized'; got vmap_method={vmap_method!r}"
    )


V.batching_rules[pure_callback_p] = _pure_batch


# --- io_callback ---------------------------------------------------------------------------------
io_callback_p = Primitive("io_callback", multiple_results=True, group="callback")
registry["io_callback"] = io_callback_p
io_callback_p.abstract_eval = lambda *avals, callback, result_avals, ordered: list(result_avals)
io_callback_p.impl = lambda *vals, callback, result_avals, ordered: callback(*vals)
passes.effectful.add(io_callback_p)


def _io_jvp(primals, tangents, **params):
    raise FunctxValueError("IO callbacks do not support JVP.")


def _io_transpose(cts, *args, **params):
    raise FunctxValueError("IO callbacks do not support transpose.")


def _io_batch(args, dims, *, callback, result_avals, ordered):
    if ordered:
        raise FunctxValueError("Cannot `vmap` ordered IO callback.")
    args = [a if d is None else V.moveaxis(a, d, 0) for a, d in zip(args, dims)]
    mapped = [d is not None for d in dims]
    fixed = [a for a, m in zip(args, mapped) if not m]

    def body(c, x):
        it_f, it_x = iter(fixed), iter(x)
        one = [next(it_x) if m else next(it_f) for m in mapped]
        return c, io_callback_p.bind(
            *one, callback=callback, result_avals=result_avals, ordered=False
        )

    _, ys = scan(body, (), [a for a, m in zip(args, mapped) if m])
    return list(ys), [0] * len(ys)


J.jvp_rules[io_callback_p] = _io_jvp
T.transpose_rules[io_callback_p] = _io_transpose
V.batching_rules[io_callback_p] = _io_batch


# --- jit: a host step of the compiled program ----------------------------------------------------
def _host_lowering(g, ins, avals, *, callback, **params):
    """One ``loop`` node of group type ``host`` per output (a token node when there is none, so
    that the step is scheduled in program order), reading the operands' buffers."""
    in_avals = [ShapedArray(n.shape, n.dtype) for n in ins]
    nodes = lower_to_loop(
        g,
        ins,
        list(avals) or [ShapedArray((), np.dtype(np.bool_))],
        "host",
        callback=callback,
        in_avals=in_avals,
        n_out=len(avals),
    )
    return nodes[: len(avals)]


lowerings[debug_callback_p] = _host_lowering
lowerings[pure_callback_p] = _host_lowering
lowerings[io_callback_p] = _host_lowering


# --- the public functions ------------------------------------------------------------------------
def _result_avals(result_shape_dtypes):
    leaves, tree = tree_flatten(result_shape_dtypes)
    avals = []
    for x in leaves:
        if not (hasattr(x, "shape") and hasattr(x, "dtype")):
            raise FunctxValueError(
                "pure_callback: result_shape_dtypes must be a pytree of objects with shape and "
                f"dtype attributes (functx.ShapeDtypeStruct), got {x!r}{where()}"
            )
        avals.append(ShapedArray(tuple(x.shape), dtypes.canonicalize(x.dtype)))
    return avals, tree


_VMAP_METHODS = (
    "sequential",
    "sequential_unrolled",
    "expand_dims",
    "broadcast_all",
    "legacy_vectorized",
    None,
)


def pure_callback(callback, result_shape_dtypes, *args, sharding=None, vmap_method=None, **kwargs):
    """Call a Python (NumPy) function on runtime values from traced or compiled code (JAX's
    ``jax.pure_callback``). The function must be pure: functx may skip it when its results
    are unused, and calls it once per example under ``vmap`` with "sequential".

    Arguments:
      callback: a function of pytrees of arrays returning a pytree matching
        ``result_shape_dtypes``.
      result_shape_dtypes: a pytree of ``ShapeDtypeStruct`` (anything with ``shape`` and
        ``dtype``) describing the results.
      *args, **kwargs: pytrees of arrays passed to ``callback``.
      sharding: accepted for JAX's signature (one device: ignored).
      vmap_method: how ``vmap`` treats the call: "sequential" (a loop over examples),
        "expand_dims" (one call, unmapped operands get a leading axis of size 1),
        "broadcast_all" (one call, every operand broadcast to the batch); None raises
        NotImplementedError under ``vmap``, as in JAX.
    Returns:
      a pytree of Arrays of the declared shapes and dtypes.

    Differences from JAX: runs in program order always (``ordered=`` and ``partitioned=`` are
    accepted); under ``jit`` it is a host step between kernels, and a Triton program with one never
    replays a CUDA graph.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> f = lambda x: functx.pure_callback(
      ...     np.sin, functx.ShapeDtypeStruct(x.shape, x.dtype), x)
      >>> print(functx.jit(f)(np.zeros(2, np.float32)))
      [0. 0.]
    """
    del sharding
    if vmap_method not in _VMAP_METHODS:
        raise FunctxValueError(
            f"vmap_method must be on of the allowed methods {list(_VMAP_METHODS)}, "
            f"but got: {vmap_method}"
        )
    leaves, in_tree = tree_flatten((args, kwargs))
    weak = [get_aval(x).weak_type for x in leaves]
    avals, out_tree = _result_avals(result_shape_dtypes)
    fn = HostFn(callback, in_tree, avals, out_tree, label=_name(callback), weak=weak)
    outs = pure_callback_p.bind(
        *leaves, callback=fn, result_avals=tuple(avals), vmap_method=vmap_method
    )
    return tree_unflatten(out_tree, outs)


def io_callback(callback, result_shape_dtypes, *args, sharding=None, ordered=False, **kwargs):
    """Call a Python function with side effects on runtime values from traced or compiled code
    (JAX's ``jax.experimental.io_callback``): never dropped, never merged with another call, run
    in program order; no derivatives (JAX's ValueError); under ``vmap`` (unordered only) once
    per example.

    Arguments:
      callback: a function of pytrees of arrays returning a pytree matching
        ``result_shape_dtypes`` (None for no result).
      result_shape_dtypes: a pytree of ``ShapeDtypeStruct`` describing the results.
      *args, **kwargs: pytrees of arrays passed to ``callback``.
      sharding: accepted for JAX's signature (one device: ignored).
      ordered: whether calls keep their program order (functx always does; an ordered call
        cannot be vmapped, as in JAX).
    Returns:
      a pytree of Arrays of the declared shapes and dtypes.

    Differences from JAX: runs in program order always (``ordered=`` and ``partitioned=`` are
    accepted); under ``jit`` it is a host step between kernels, and a Triton program with one never
    replays a CUDA graph.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> from functx.experimental import io_callback
      >>> seen = []
      >>> f = lambda x: io_callback(lambda v: seen.append(float(v)) or v, x, x)
      >>> print(functx.jit(f)(np.float32(2.0)), seen)
      2.0 [2.0]
    """
    del sharding
    leaves, in_tree = tree_flatten((args, kwargs))
    weak = [get_aval(x).weak_type for x in leaves]
    avals, out_tree = _result_avals(result_shape_dtypes)
    fn = HostFn(callback, in_tree, avals, out_tree, label=_name(callback), weak=weak)
    outs = io_callback_p.bind(
        *leaves, callback=fn, result_avals=tuple(avals), ordered=bool(ordered)
    )
    return tree_unflatten(out_tree, outs)


def _name(f) -> str:
    return getattr(f, "__name__", type(f).__name__)


def debug_callback(callback, *args, ordered=False, partitioned=False, **kwargs):
    """``functx.debug.callback``: bind a ``debug_callback`` equation calling ``callback(*args,
    **kwargs)`` on runtime values (Arrays); returns None."""
    del partitioned
    if not callable(callback):
        raise FunctxTypeError(
            f"first argument to `jax.debug.callback` must be callable, "
            f"but got an object of type {type(callback)}"
        )
    leaves, in_tree = tree_flatten((args, kwargs))
    dyn, static = split_static(leaves)
    weak = [get_aval(x).weak_type for x in dyn]
    fn = HostFn(callback, in_tree, label=_name(callback), static=static, weak=weak)
    debug_callback_p.bind(*dyn, callback=fn, ordered=bool(ordered))


__all__ = [
    "HostFn",
    "debug_callback",
    "debug_callback_p",
    "io_callback",
    "io_callback_p",
    "pure_callback",
    "pure_callback_p",
]
