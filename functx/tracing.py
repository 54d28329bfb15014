"""Tracing: tracers, the builder that records equations, the eager NumPy path and ``make_jaxpr``.

While a builder is active every primitive call (``core.bind``) is staged into it (JAX's
"omnistaging"); with no builder active, ``core.bind`` calls ``core.eager_rules["cpu"]``, this
module's ``eager_bind``, which runs the primitive's NumPy implementation at once, or, when an
operand lives on a GPU, hands the operation to ``core.eager_rules["gpu"]`` (the devices package).
A builder nested inside another lifts tracers of the outer one into constvars, so tracing a
transformed function inside an outer trace records a self-contained Jaxpr that the caller inlines.
"""

from __future__ import annotations

import contextlib
import functools
import operator
import weakref
from typing import Any, Callable

import numpy as np
import optree

from functx import _refbox, config, core, dtypes
from functx.array import Array, ArrayMethods, UncommittedArray, is_python_scalar, scalar_aval
from functx.core import ClosedJaxpr, Eqn, Jaxpr, Literal, ShapedArray, Var
from functx.errors import (
    ConcretizationError,
    FunctxError,
    FunctxFloatingPointError,
    FunctxOverflowError,
    FunctxRuntimeError,
    FunctxTypeError,
    TracerArrayConversionError,
    TracerBoolConversionError,
    TracerIntegerConversionError,
    UnexpectedTracerError,
)
from functx.source_info import current, where

PYTREE_NAMESPACE = "functx"


# --- Tracers -------------------------------------------------------------------------------------
class Tracer(ArrayMethods):
    """A stand-in for an array while a function is being traced; it records what is done to it.

    ``value`` is the concrete NumPy value when the trace knows it (the eager ``grad``, ``vjp``,
    ``jvp``, ... of a function on concrete arguments: a ``ValuedBuilder``), else None. With a
    value, ``bool``, ``int``, ``operator.index`` and ``.item()`` give it, as JAX's do for the
    tracers of eager transforms; ``float``, ``complex``, ``.tolist()`` and ``np.asarray`` raise
    ConcretizationError even then, as JAX 0.10 does."""

    __slots__ = ("aval", "builder", "ir_var", "value")
    __array_priority__ = 1000

    def __init__(self, builder: Builder, aval: ShapedArray, value=None):
        self.aval = aval
        self.builder = builder
        self.ir_var = Var(aval)
        self.value = value

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    weak_type = property(lambda self: self.aval.weak_type)

    def __repr__(self):
        return f"Traced<{self.aval.str_short()}>"

    def _concrete_error(self, what: str, hint: str, cls=ConcretizationError):
        raise cls(
            f"{what} needs a concrete value, but this is a traced array {self.aval.str_short()} "
            f"inside a functx transform{where()}. {hint}"
        )

    def __bool__(self):
        if self.value is not None:
            return bool(self.value)
        self._concrete_error(
            "Converting to bool (an `if`, `while`, `and`/`or`, or `assert`)",
            "Use functx.lax.cond or functx.numpy.where for a value-dependent choice, "
            "functx.lax.while_loop for a value-dependent loop, or mark the argument static.",
            TracerBoolConversionError,
        )

    _HINT = (
        "Keep it an array (use functx.lax.cond or functx.numpy.where for value-dependent "
        "choices), or mark the argument static (static_argnums) so it is a Python value."
    )

    _EVEN_EAGER = " (JAX raises here even in an eager grad; use int() or .item().)"

    def __int__(self):
        if self.value is not None:
            return int(self.value)
        self._concrete_error("int()", self._HINT)

    def __float__(self):
        self._concrete_error("float()", self._HINT + self._EVEN_EAGER)

    def __complex__(self):
        self._concrete_error("complex()", self._HINT + self._EVEN_EAGER)

    def __index__(self):
        if self.value is not None:
            if not dtypes.is_int(self.dtype) and self.dtype != dtypes.bool_:
                raise FunctxTypeError(
                    f"only integer arrays can be used as an index, not {self.dtype}{where()}"
                )
            return operator.index(self.value)
        self._concrete_error(
            "Using a traced value as a Python index or size",
            "Use functx.lax.dynamic_slice for traced offsets, or mark the "
            "argument static (static_argnums).",
            TracerIntegerConversionError,
        )

    def __array__(self, dtype=None, copy=None):
        self._concrete_error(
            "Converting to a NumPy array (np.asarray)",
            "Use functx.numpy functions inside traced code instead of NumPy ones.",
            TracerArrayConversionError,
        )

    def item(self, *args):
        if self.value is not None:
            return self.value.item(*args)
        self._concrete_error(".item()", "Keep it an array inside traced code.")

    def _method_error(self, name):
        raise ConcretizationError(
            f"The {name}() method was called on traced array {self.aval.str_short()} inside a "
            f"functx transform: it needs a concrete value{where()}. Keep it an array inside "
            f"traced code."
        )

    def tolist(self):
        self._method_error("tolist")

    def tobytes(self, order="C"):
        self._method_error("tobytes")


# --- The builder ---------------------------------------------------------------------------------
class Builder:
    """Records equations for one trace (the trace object of ``core.active_trace``). ``consts`` are
    concrete arrays or tracers of outer traces."""

    def __init__(self):
        self.eqns: list[Eqn] = []
        self.constvars: list[Var] = []
        self.consts: list[Any] = []
        self._const_ids: dict[int, Var] = {}
        self.lifted_tracers = False

    def new_tracer(self, aval: ShapedArray) -> Tracer:
        return Tracer(self, aval)

    def to_atom(self, x) -> Var | Literal:
        if isinstance(x, Tracer):
            if x.builder is self:
                return x.ir_var
            if x.builder not in core.trace_state.stack:
                raise UnexpectedTracerError(
                    f"A tracer {x!r} from a finished trace was used{where()}: a value computed "
                    "inside a transformed function escaped it (stored in a global or a closure). "
                    "Return it from the function instead."
                )
            self.lifted_tracers = True
            return self._const(x, x.aval)
        if is_python_scalar(x):
            return Literal(x, scalar_aval(x))
        arr = x if isinstance(x, Array) else Array.from_value(x)
        if arr.ndim == 0 and type(arr) in (Array, UncommittedArray):
            return Literal(arr._value[()], arr.aval)
        return self._const(arr, arr.aval)  # (a GPU array stays a constant, even a 0-d one)

    def _const(self, x, aval) -> Var:
        v = self._const_ids.get(id(x))
        if v is None:
            v = Var(aval)
            self._const_ids[id(x)] = v
            self.constvars.append(v)
            self.consts.append(x)
        return v

    def process_primitive(self, prim, args, params):
        """Record ``prim`` applied to ``args`` (``core.bind`` under this trace); new tracers."""
        atoms = [self.to_atom(a) for a in args]
        src = current()
        out_avals = abstract_eval_checked(prim, [a.aval for a in atoms], params)
        if prim.multiple_results:
            outs = [self.new_tracer(a) for a in out_avals]
        else:
            outs = [self.new_tracer(out_avals)]
        self.eqns.append(Eqn(prim, atoms, [t.ir_var for t in outs], params, src))
        return outs if prim.multiple_results else outs[0]

    def build(self, in_tracers, outs) -> ClosedJaxpr:
        outvars = [self.to_atom(o) for o in outs]
        jaxpr = Jaxpr(self.constvars, [t.ir_var for t in in_tracers], self.eqns, outvars)
        return ClosedJaxpr(jaxpr, self.consts)


def _known_value(x):
    """The concrete NumPy value of an operand of a ``ValuedBuilder``'s equation, or None."""
    if isinstance(x, Tracer):
        return x.value
    if type(x) in (Array, UncommittedArray):
        return x._value
    if is_python_scalar(x):
        return np.asarray(x, scalar_aval(x).dtype)
    if isinstance(x, (np.ndarray, np.generic)):
        return np.asarray(x)
    return None  # a GPU array: its value stays unknown


class ValuedBuilder(Builder):
    """A builder whose tracers carry their concrete values: it evaluates each primitive it
    records on the known operand values (the NumPy implementation, with no trace active), so
    Python control flow on the tracers works (the eager transforms' trace; its Jaxpr is
    specialised to the values and never cached). An output whose operands are not all known
    (a GPU constant) has no value."""

    def process_primitive(self, prim, args, params):
        outs = Builder.process_primitive(self, prim, args, params)
        vals = []
        for a in args:
            v = _known_value(a)
            if v is None:
                return outs
            vals.append(v)
        saved, core.trace_state.stack = core.trace_state.stack, []
        try:
            with np.errstate(all="ignore"):
                res = prim.impl(*vals, **params)
        except Exception:  # noqa: BLE001 - the value stays unknown; running the Jaxpr reports it
            return outs
        finally:
            core.trace_state.stack = saved
        tracers = outs if prim.multiple_results else [outs]
        res = res if prim.multiple_results else [res]
        for t, r in zip(tracers, res):
            r = np.asarray(getattr(r, "_value", r))
            t.value = r if r.dtype == t.aval.dtype else r.astype(t.aval.dtype)
        return outs


def known_values(leaves):
    """The concrete NumPy values of argument leaves (arrays, scalars, valued tracers), or None if
    one of them is not known (a tracer of an abstract trace, a GPU array, a struct)."""
    vals = []
    for x in leaves:
        v = _known_value(x)
        if v is None:
            return None
        vals.append(v)
    return vals


def new_trace() -> core.active_trace:
    """A context manager that makes a new ``Builder`` the active trace (and gives it)."""
    return core.active_trace(Builder())


# --- The eager path ------------------------------------------------------------------------------
def abstract_eval_checked(prim, avals, params):
    """``prim``'s output avals for ``avals``; a shape/dtype error gets the user's line."""
    try:
        return prim.abstract_eval(*avals, **params)
    except FunctxTypeError as e:
        msg = str(e)
        if "(at " not in msg:
            msg += where()
        raise type(e)(msg) from None


def as_value(x):
    """The NumPy value, aval and committedness of a concrete argument of ``eager_bind`` that is
    not a committed host ``Array``; None for an argument on a GPU (``core.eager_rules["gpu"]``
    runs those)."""
    if type(x) is UncommittedArray:
        return x._value, x.aval, False
    if isinstance(x, Tracer):
        raise UnexpectedTracerError(
            f"A tracer {x!r} from a finished trace was used{where()}: a value computed inside a "
            "transformed function escaped it (stored in a global or a closure). Return it from "
            "the function instead."
        )
    if is_python_scalar(x):
        aval = scalar_aval(x)
        try:
            return np.asarray(x, aval.dtype), aval, False
        except OverflowError:
            raise FunctxOverflowError(
                f"Python int {x} is too large to convert to {aval.dtype} "
                f"(use a wider dtype, or enable x64){where()}"
            ) from None
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype in dtypes.SUPPORTED:
        v = np.asarray(x)
        dt = dtypes.canonicalize(v.dtype)
        if dt != v.dtype:  # a 64-bit NumPy operand while jax_enable_x64 is off
            v = v.astype(dt)
        return v, ShapedArray(v.shape, dt), v.ndim > 0
    if isinstance(x, Array):
        return None  # a GPU array
    arr = Array.from_value(x)
    if type(arr) is not Array:
        return None  # a GPU buffer of another library
    return arr._value, arr.aval, arr._value.ndim > 0


def eager_bind(prim, args, params):
    """``core.bind`` outside any trace (``core.eager_rules["cpu"]``): shape/dtype inference (which
    also validates), then the NumPy implementation. Results are committed (see the devices
    package) unless every operand was a scalar (a Python scalar or a 0-d host array) or
    uncommitted. Operations on GPU arrays, and, when the default device may be a GPU, those
    without committed operands, go to ``core.eager_rules["gpu"]``."""
    vals, avals = [], []
    committed = False
    for a in args:
        if type(a) is Array:
            vals.append(a._value)
            avals.append(a.aval)
            if a.aval.shape:
                committed = True
        else:
            got = as_value(a)
            if got is None:
                return core.eager_rules["gpu"](prim, args, params)
            v, av, c = got
            vals.append(v)
            avals.append(av)
            if c:
                committed = True
    if not committed and config.default_off_cpu():
        return core.eager_rules["gpu"](prim, args, params)
    return _run_host(prim, vals, avals, params, args, committed)


def bind_host(prim, args, params, committed: bool):
    """``eager_bind``'s NumPy path for operands all on the host (the devices package calls it)."""
    vals, avals = [], []
    for a in args:
        if type(a) is Array:
            vals.append(a._value)
            avals.append(a.aval)
        else:
            v, av, _ = as_value(a)
            vals.append(v)
            avals.append(av)
    return _run_host(prim, vals, avals, params, args, committed)


def _run_host(prim, vals, avals, params, args, committed: bool):
    """Check the operands' types, run the NumPy implementation, wrap the results as Arrays."""
    out_avals = abstract_eval_checked(prim, avals, params)
    for a in avals:
        if a.dtype.itemsize == 1 and a.dtype in dtypes.NARROW_SET:
            # int4, float8, ...: computed wider, rounded or wrapped back by _wrap
            out = dtypes.call_widened(prim.name, prim.impl, vals, params)
            break
    else:
        out = prim.impl(*vals, **params)
    wrap = _wrap if committed else _wrap_uncommitted
    if prim.multiple_results:
        return [wrap(_own(o, args), a) for o, a in zip(out, out_avals)]
    return wrap(_own(out, args), out_avals)


def _own(out, args):
    """An impl may return an input unchanged; never freeze (make read-only) the caller's array."""
    for a in args:
        if out is a:
            return np.array(out)
    return out


def _wrap(value, aval: ShapedArray, cls=Array) -> Array:
    if type(value) is not np.ndarray:
        value = np.asarray(value)
    if value.dtype != aval.dtype:
        value = value.astype(aval.dtype)
    return cls._new(value, aval)


def _wrap_uncommitted(value, aval: ShapedArray) -> Array:
    return _wrap(value, aval, UncommittedArray)


# --- jax_debug_nans / jax_debug_infs: the checked eager path --------------------------------------
def invalid_value(values, only: str | None = None) -> str | None:
    """ "nan" or "inf" when a floating-point array of ``values`` holds a value this thread checks
    for (``functx.debug_nans`` / ``functx.debug_infs``; ``only``: that kind alone), else None."""
    nans = config.debug_nans_state.value and only in (None, "nan")
    infs = config.debug_infs_state.value and only in (None, "inf")
    if nans or infs:
        for v in values:
            dt = getattr(v, "dtype", None)
            if dt is None or not dtypes.is_inexact(dt):
                continue
            a = np.asarray(v)  # (a GPU array: copied to the host)
            if nans and np.isnan(a).any():
                return "nan"
            if infs and np.isinf(a).any():
                return "inf"
    return None


def checked_eager_bind(prim, args, params):
    """``eager_bind`` while NaN/inf checks or ``no_execution`` may be on: a RuntimeError under
    ``no_execution``; else ``eager_bind``, then the check of its results: a
    FloatingPointError naming the primitive and the user's line (the equation's, when the eager
    interpreter runs a Jaxpr), when the primitive made a NaN (inf) that none of its operands
    holds. (Not one it passes on: functx's library functions broadcast, convert and multiply
    infinite constants where JAX has one primitive or a reduction's initial value, as
    ``random.normal``'s erfinv and ``nn.softmax``'s -inf do; docs/differences.md.)"""
    if config.no_execution.value:
        raise FunctxRuntimeError(
            f"functx tried to execute function {prim.name}, but the no_execution config option "
            f"is set{where()}"
        )
    out = eager_bind(prim, args, params)
    outs = out if prim.multiple_results else (out,)
    for kind in ("nan", "inf"):
        if invalid_value(outs, kind) and not invalid_value(args, kind):
            raise FunctxFloatingPointError(
                f"invalid value ({kind}) encountered in {prim.name}{where()}"
            )
    return out


def _watch_checks(active: bool) -> None:
    core.eager_rules["cpu"] = checked_eager_bind if active else eager_bind


config.debug_checks_watchers.append(_watch_checks)
_watch_checks(config.debug_checks_active)


# --- pytrees -------------------------------------------------------------------------------------
def tree_flatten(tree, is_leaf=None):
    return optree.tree_flatten(
        tree, is_leaf=is_leaf, none_is_leaf=False, namespace=PYTREE_NAMESPACE
    )


def tree_unflatten(treedef, leaves):
    return optree.tree_unflatten(treedef, leaves)


# --- make_jaxpr ----------------------------------------------------------------------------------
class ShapeDtypeStruct:
    """An abstract array: a shape, a dtype and a weak type, for tracing without data (JAX's
    ``jax.ShapeDtypeStruct``). ``eval_shape`` returns them; ``eval_shape``, ``make_jaxpr`` and
    ``jit(f).lower`` accept them wherever an array argument goes.

    Arguments:
      shape: a sequence of ints.
      dtype: anything ``numpy.dtype`` accepts (kept as given, as JAX keeps it).
      sharding: accepted for JAX's signature; functx has one device per array, and ignores it.
      weak_type: whether the array is weakly typed (as a Python scalar's is).
    Returns:
      the struct; ``.shape``, ``.dtype``, ``.weak_type``, ``.ndim``, ``.size``; equal structs
      compare equal and hash alike.

    Differences from JAX: ``sharding=`` is accepted and ignored (one device per array).

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.ShapeDtypeStruct((2, 3), np.float32)
      ShapeDtypeStruct(shape=(2, 3), dtype=float32)
    """

    __slots__ = ("shape", "dtype", "weak_type", "sharding")

    def __init__(self, shape, dtype, *, sharding=None, weak_type: bool = False):
        self.shape = tuple(shape)
        dt = dtypes.canonicalize(dtype)  # (checks it)
        try:  # kept as given, 64 bits included, as JAX keeps it (traced as canonical: get_aval)
            raw = np.dtype(dtype)
        except TypeError:
            raw = dt
        self.dtype = raw if raw in dtypes.SUPPORTED else dt
        self.weak_type = bool(weak_type)
        self.sharding = sharding

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: int(np.prod(self.shape, dtype=np.int64)))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __eq__(self, other):
        if not isinstance(other, ShapeDtypeStruct):
            return False
        return (self.shape, self.dtype, self.weak_type) == (
            other.shape,
            other.dtype,
            other.weak_type,
        )

    def __hash__(self):
        return hash((self.shape, self.dtype, self.weak_type))

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{weak})"


def get_aval(x) -> ShapedArray:
    """The abstract value of an argument leaf (array, tracer, scalar or ShapeDtypeStruct).

    Arguments:
      x: an array (functx, NumPy, torch), a tracer, a Python scalar or a ``ShapeDtypeStruct``.
    Returns:
      A ``ShapedArray``: its shape, dtype and weak type (a Python scalar is weakly typed).
    Example:
      >>> import numpy as np
      >>> from functx.test_util import get_aval
      >>> get_aval(np.ones((2, 3), np.float32))
      ShapedArray(float32[2, 3])
      >>> get_aval(1.0)
      ShapedArray(float32[], weak_type=True)
    """
    if isinstance(x, (Tracer, Array)):
        return x.aval
    if isinstance(x, ShapeDtypeStruct):
        return ShapedArray(x.shape, dtypes.canonicalize(x.dtype), x.weak_type)
    if is_python_scalar(x):
        return scalar_aval(x)
    if isinstance(x, (np.ndarray, np.generic)) and x.dtype in dtypes.SUPPORTED:
        return ShapedArray(np.shape(x), dtypes.canonicalize(x.dtype))
    if type(x).__module__.startswith("torch") and hasattr(x, "data_ptr"):
        # a torch tensor (possibly on a GPU): its aval without copying it to the host
        return ShapedArray(tuple(x.shape), dtypes.canonicalize(str(x.dtype).split(".")[-1]))
    return Array.from_value(x).aval


def trace_flat(flat_fun: Callable, in_avals, values=None) -> tuple[ClosedJaxpr, Any]:
    """Trace ``flat_fun(*tracers) -> (flat outputs, aux)`` into a ClosedJaxpr. With ``values``
    (one concrete NumPy value per input) the tracers carry values (a ``ValuedBuilder``)."""
    rec = _refbox.begin()  # (mutable references used inside: see functx/_refbox.py)
    try:
        if values is not None:
            with core.active_trace(ValuedBuilder()) as b:
                tracers = [Tracer(b, a, v) for a, v in zip(in_avals, values)]
                outs, aux = flat_fun(*tracers)
                _refbox.no_refs_returned(outs)
                closed = b.build(tracers, outs)
        else:
            with new_trace() as b:
                tracers = [b.new_tracer(a) for a in in_avals]
                outs, aux = flat_fun(*tracers)
                _refbox.no_refs_returned(outs)
                closed = b.build(tracers, outs)
    except BaseException:
        _refbox.abort(rec)
        raise
    _refbox.end(rec, closed)
    return closed, aux


def flatten_fun(f, in_tree):
    """Wrap ``f(*args, **kwargs)`` so that it takes and returns flat lists of leaves."""

    def flat(*leaves):
        args, kwargs = tree_unflatten(in_tree, list(leaves))
        out = f(*args, **kwargs)
        out_leaves, out_tree = tree_flatten(out)
        return out_leaves, out_tree

    return flat


_trace_caches: weakref.WeakSet = weakref.WeakSet()  # every live TraceCache (clear_trace_caches)


class TraceCache:
    """Traced Jaxprs of one function keyed by (tree structure, abstract values): a repeated
    ``grad(f)(x)`` does not retrace. Traces that closed over tracers of an outer trace are not
    kept (those tracers die with their trace)."""

    def __init__(self, maxsize: int = 64):
        self.maxsize = maxsize
        self.entries: dict = {}
        _trace_caches.add(self)

    def clear(self):
        self.entries.clear()

    def get(self, key):
        return self.entries.get(key)

    def put(self, key, value, closed: ClosedJaxpr):
        if any(isinstance(c, Tracer) for c in closed.consts) or _refbox.reads(closed):
            return
        if len(self.entries) >= self.maxsize:
            self.entries.pop(next(iter(self.entries)))
        self.entries[key] = value


def clear_trace_caches() -> None:
    """Empty every live ``TraceCache`` (``functx.clear_caches`` calls it)."""
    for c in list(_trace_caches):
        c.clear()


def trace_pytree(
    fun: Callable, args: tuple, kwargs: dict | None = None, cache: TraceCache | None = None
):
    """Trace ``fun(*args, **kwargs)`` (pytrees) into a ClosedJaxpr over the flattened leaves.

    Returns ``(closed, in_tree, out_tree, leaves)`` where ``leaves`` are the flat arguments.
    """
    leaves, in_tree = tree_flatten((tuple(args), dict(kwargs or {})))
    avals = tuple(get_aval(x) for x in leaves)
    key = (in_tree, avals, config.x64_on())  # (the mode decides the constants' dtypes)
    hit = cache.get(key) if cache is not None else None
    if hit is not None:
        closed, out_tree = hit
        return closed, in_tree, out_tree, leaves
    closed, out_tree = trace_flat(flatten_fun(fun, in_tree), avals)
    if cache is not None:
        cache.put(key, (closed, out_tree), closed)
    return closed, in_tree, out_tree, leaves


def split_static(args, static_argnums):
    static = {i % len(args) if args else i for i in static_argnums}
    dyn = tuple(a for i, a in enumerate(args) if i not in static)
    stat = tuple((i, args[i]) for i in sorted(static) if i < len(args))
    return dyn, stat


def merge_static(dyn, stat, n):
    out, it, stat = [], iter(dyn), dict(stat)
    for i in range(n):
        out.append(stat[i] if i in stat else next(it))
    return out


def _as_tuple(x):
    return (x,) if isinstance(x, int) else tuple(x)


def make_jaxpr(fun: Callable, static_argnums: int | tuple[int, ...] = ()):
    """Return a function that traces ``fun`` on its arguments and gives the ClosedJaxpr.

    Arguments:
      fun: the function to trace; its arguments and result may be pytrees.
      static_argnums: positions of arguments treated as Python constants.
    Returns:
      ``make_jaxpr(fun)(*args, **kwargs)`` is a printable ``ClosedJaxpr``.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> print(functx.make_jaxpr(lambda x: functx.numpy.sin(x) * 2.0)(np.ones(3, np.float32)))
      { lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }
    """
    if not callable(fun):
        raise FunctxTypeError(
            f"make_jaxpr: expected a callable value, got {type(fun).__name__}{where()}"
        )
    static_argnums = _as_tuple(static_argnums)

    @functools.wraps(fun)
    def traced(*args, **kwargs):
        if config.no_tracing.value:  # (make_jaxpr always traces: JAX's raises too)
            raise FunctxRuntimeError(
                f"re-tracing function {getattr(fun, '__name__', fun)} for `make_jaxpr`, but "
                f"'no_tracing' is set{where()}"
            )
        dyn, stat = split_static(args, static_argnums)
        leaves, in_tree = tree_flatten((dyn, kwargs))

        def f(*a, **kw):
            return fun(*merge_static(a, stat, len(args)), **kw)

        closed, _ = trace_flat(flatten_fun(f, in_tree), [get_aval(x) for x in leaves])
        return closed

    return traced


def typeof(x):
    """The abstract type of ``x`` (``jax.typeof``): its ``ShapedArray`` (shape, dtype, weak
    type), as ``jit`` traces it.

    Arguments:
      x: an array (functx, NumPy), a tracer or a Python scalar.
    Returns:
      a ``ShapedArray``.
    Raises:
      TypeError if ``x`` is not a valid functx type (e.g. a string).
    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> functx.typeof(jnp.ones((2, 3)))
      ShapedArray(float32[2, 3])
      >>> functx.typeof(3)
      ShapedArray(int32[], weak_type=True)
    """
    own = getattr(type(x), "_functx_typeof", None)  # (a Ref's is its AbstractRef: functx/ref.py)
    if own is not None:
        return own(x)
    if not isinstance(x, (list, tuple)):  # (get_aval reads a sequence as an array; JAX refuses)
        try:
            return get_aval(x)
        except TypeError:
            pass
    raise FunctxTypeError(f"Argument {x!r} of type {type(x)} is not a valid JAX type{where()}")


def eval_shape(fun: Callable, *args, **kwargs):
    """The shapes and dtypes of ``fun(*args, **kwargs)``, found by tracing: nothing is computed
    (JAX's ``jax.eval_shape``).

    Arguments:
      fun: a function of pytrees of arrays.
      *args, **kwargs: pytrees whose leaves are arrays, NumPy arrays, Python scalars,
        ``ShapeDtypeStruct``s or any object with ``shape`` and ``dtype`` attributes (all
        traced; none of their values is read).
    Returns:
      ``fun``'s output pytree with each array leaf replaced by a ``ShapeDtypeStruct`` of its
      shape, dtype and weak type.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.eval_shape(lambda x, y: (x @ y, y.sum()), np.ones((2, 3), np.float32),
      ...                   functx.ShapeDtypeStruct((3, 4), np.float32))
      (ShapeDtypeStruct(shape=(2, 4), dtype=float32), ShapeDtypeStruct(shape=(), dtype=float32))
    """
    if not callable(fun):
        raise FunctxTypeError(
            f"eval_shape: expected a callable value, got {type(fun).__name__}{where()}"
        )
    leaves, in_tree = tree_flatten((args, kwargs))
    avals = []
    for x in leaves:
        try:
            avals.append(get_aval(x))
        except FunctxError as e:
            if hasattr(x, "shape") and hasattr(x, "dtype"):  # any struct-like (as JAX takes)
                try:
                    avals.append(
                        ShapedArray(
                            tuple(x.shape),
                            dtypes.canonicalize(x.dtype),
                            bool(getattr(x, "weak_type", False)),
                        )
                    )
                    continue
                except Exception:  # noqa: BLE001 - reported below as what it is
                    pass
            raise FunctxTypeError(
                f"eval_shape: error interpreting argument to {fun!r:.80} as an abstract array: {e}"
            ) from None
    closed, out_tree = trace_flat(flatten_fun(fun, in_tree), avals)
    outs = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in closed.out_avals]
    return tree_unflatten(out_tree, outs)


@contextlib.contextmanager
def named_scope(name: str):
    """A context manager (and decorator) naming the operations inside it, as JAX's
    ``jax.named_scope``: JAX adds ``name`` to the name stack of their equations, for profilers
    and HLO dumps. functx has neither, so the block runs unchanged: values, Jaxprs and compiled
    programs are the same as without it (a documented no-op); only the name is checked.

    Arguments:
      name: a str (anything else is a FunctxTypeError, a TypeError, as in JAX).
    Returns:
      a context manager.

    Differences from JAX: names nothing: functx has no name stack, so the block runs unchanged.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> with functx.named_scope("layer1"):
      ...     y = functx.numpy.tanh(np.float32(0.5))
      >>> print(round(float(y), 6))
      0.462117
    """
    if not isinstance(name, str):
        raise FunctxTypeError("named_scope name argument must be a string.")
    yield


__all__ = [
    "Tracer",
    "Builder",
    "ValuedBuilder",
    "known_values",
    "bind_host",
    "eager_bind",
    "clear_trace_caches",
    "eval_shape",
    "make_jaxpr",
    "named_scope",
    "trace_flat",
    "flatten_fun",
    "trace_pytree",
    "TraceCache",
    "new_trace",
    "tree_flatten",
    "tree_unflatten",
    "ShapeDtypeStruct",
    "get_aval",
]
