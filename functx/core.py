"""The IR: abstract values, variables, literals, equations, Jaxprs; the printer and the type
checker.

A Jaxpr is a list of equations in SSA form. Every stage of functx (tracing, each transform,
lowering) produces or consumes one, and every one prints in JAX's format::

    { lambda ; a:f32[3]. let b:f32[3] = sin a; c:f32[3] = mul b 2.0:f32[] in (c,) }

This module also holds the trace stack and ``bind``: a primitive call goes to the innermost active
trace (its ``process_primitive`` records the equation), else to the eager path registered in
``eager_rules``.
"""

from __future__ import annotations

import itertools
import threading
from typing import Callable

import numpy as np

from functx import dtypes
from functx.errors import FunctxTypeError


# --- Abstract values -----------------------------------------------------------------------------
class ShapedArray:
    """The abstract value of an array (``jax.core.ShapedArray``): shape, dtype and whether it is
    weakly typed.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> a = functx.ShapedArray((2, 3), np.dtype(np.float32))
      >>> a.shape, a.dtype, a.ndim, a.str_short()
      ((2, 3), dtype('float32'), 2, 'f32[2,3]')
    """

    __slots__ = ("shape", "dtype", "weak_type", "_hash")

    def __init__(self, shape, dtype, weak_type: bool = False):
        self.shape = tuple(shape)
        self.dtype = dtype
        self.weak_type = weak_type
        self._hash = None

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def __eq__(self, other):
        return (
            isinstance(other, ShapedArray)
            and self.shape == other.shape
            and self.dtype == other.dtype
            and self.weak_type == other.weak_type
        )

    def __hash__(self):
        if self._hash is None:
            self._hash = hash((self.shape, self.dtype, self.weak_type))
        return self._hash

    def strip_weak(self) -> ShapedArray:
        return ShapedArray(self.shape, self.dtype, False) if self.weak_type else self

    def update(self, shape=None, dtype=None, weak_type=None) -> ShapedArray:
        return ShapedArray(
            self.shape if shape is None else shape,
            self.dtype if dtype is None else dtype,
            self.weak_type if weak_type is None else weak_type,
        )

    def str_short(self) -> str:
        return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __repr__(self):
        weak = ", weak_type=True" if self.weak_type else ""
        return f"ShapedArray({self.dtype}{list(self.shape)}{weak})"


def same_type(a: ShapedArray, b: ShapedArray) -> bool:
    """Equal shape and dtype (weak type ignored), the test for matching branches and carries."""
    return a.shape == b.shape and a.dtype == b.dtype


# --- Variables, literals, equations --------------------------------------------------------------
_var_ids = itertools.count()


class Var:
    """A variable of a Jaxpr (JAX's ``jax.extend.core.Var``): its abstract value ``aval``
    (a ``ShapedArray``) and a unique ``id``; printed by its name in the Jaxpr (``a``, ``b``).

    Example:
      >>> import functx
      >>> eqn = functx.make_jaxpr(lambda x: x * 2.0)(1.0).jaxpr.eqns[0]
      >>> eqn.invars[0].aval
      ShapedArray(float32[], weak_type=True)
    """

    __slots__ = ("aval", "id")

    def __init__(self, aval: ShapedArray):
        self.aval = aval
        self.id = next(_var_ids)

    def __repr__(self):
        return f"Var({self.id}:{self.aval.str_short()})"


class Literal:
    """A scalar constant written inline in an equation (``2.0:f32[]``; JAX's
    ``jax.extend.core.Literal``): its value ``val`` and abstract value ``aval``.

    Example:
      >>> import functx
      >>> eqn = functx.make_jaxpr(lambda x: x * 2.0)(1.0).jaxpr.eqns[0]
      >>> eqn.invars[1].val, eqn.invars[1].aval
      (2.0, ShapedArray(float32[], weak_type=True))
    """

    __slots__ = ("val", "aval")

    def __init__(self, val, aval: ShapedArray):
        self.val = val
        self.aval = aval

    def __repr__(self):
        return f"Literal({self.val!r})"


Atom = Var | Literal


#: Primitives with a side effect (host callbacks, ...), registered by their modules through
#: ``functx.transforms.passes.effectful`` (this set): ``Eqn.effects`` reads it.
effectful_primitives: set = set()


class Eqn:
    """An equation of a Jaxpr (JAX's ``jax.extend.core.JaxprEqn``): its primitive (``prim``,
    also ``primitive``), input atoms (``Var``/``Literal``), output ``Var``s, parameters and the
    user's source line.

    Example:
      >>> import functx
      >>> eqn = functx.make_jaxpr(lambda x: x * 2.0)(1.0).jaxpr.eqns[0]
      >>> eqn.primitive, len(eqn.invars), eqn.params
      (mul, 2, {})
    """

    __slots__ = ("prim", "invars", "outvars", "params", "source_info")

    @property
    def effects(self) -> frozenset:
        """JAX's ``eqn.effects``: the names of the effectful primitives the equation runs (its
        own, or inside its sub-Jaxprs: a loop body, a branch); empty for a pure equation."""
        out = {self.prim.name} if self.prim in effectful_primitives else set()
        for p in self.params.values():
            for j in p if isinstance(p, tuple) else (p,):
                inner = j.jaxpr if isinstance(j, ClosedJaxpr) else j
                if isinstance(inner, Jaxpr):
                    for e in inner.eqns:
                        out |= e.effects
        return frozenset(out)

    @property
    def primitive(self):
        """The equation's primitive (JAX's name for ``prim``)."""
        return self.prim

    def __init__(self, prim, invars, outvars, params, source_info=None):
        self.prim = prim
        self.invars = list(invars)
        self.outvars = list(outvars)
        self.params = params
        self.source_info = source_info

    def replace(self, **kw) -> Eqn:
        fields = dict(
            prim=self.prim,
            invars=self.invars,
            outvars=self.outvars,
            params=self.params,
            source_info=self.source_info,
        )
        fields.update(kw)
        return Eqn(**fields)

    def __repr__(self):
        return f"Eqn({self.prim.name})"


class Jaxpr:
    """A traced program (``jax.extend.core.Jaxpr``): ``constvars`` are bound to the consts of a
    ClosedJaxpr, ``invars`` to the arguments; ``eqns`` compute ``outvars``.

    Example:
      >>> import functx
      >>> j = functx.make_jaxpr(lambda x: x * 2.0 + 1.0)(1.0).jaxpr
      >>> len(j.invars), [e.primitive.name for e in j.eqns]
      (1, ['mul', 'add'])
    """

    __slots__ = ("constvars", "invars", "eqns", "outvars", "__weakref__")

    def __init__(self, constvars, invars, eqns, outvars):
        self.constvars = list(constvars)
        self.invars = list(invars)
        self.eqns = list(eqns)
        self.outvars = list(outvars)

    @property
    def in_avals(self):
        return [v.aval for v in self.invars]

    @property
    def out_avals(self):
        return [v.aval for v in self.outvars]

    def __str__(self):
        return pp_jaxpr(self)

    __repr__ = __str__

    def pretty_print(
        self,
        *,
        source_info=False,
        print_shapes=True,
        name_stack=False,
        custom_pp_eqn_rules=True,
        print_effects=False,
        **kwargs,
    ) -> str:
        """The printed program, as ``str`` (JAX's ``pretty_print``; its keyword arguments,
        ``use_color`` among them, are accepted and do not change functx's one format).

        Returns:
          the text.
        Example:
          >>> import functx
          >>> print(functx.make_jaxpr(lambda x: -x)(1.0).jaxpr.pretty_print(use_color=False))
          { lambda ; a:f32[]. let b:f32[] = neg a in (b,) }
        """
        return str(self)


class ClosedJaxpr:
    """A Jaxpr with values for its constvars (``jax.extend.core.ClosedJaxpr``): what
    ``make_jaxpr`` returns and control flow stores.

    Example:
      >>> import functx
      >>> cj = functx.make_jaxpr(lambda x: x * 2.0)(1.0)
      >>> print(cj)
      { lambda ; a:f32[]. let b:f32[] = mul a 2.0:f32[] in (b,) }
      >>> cj.consts
      []
    """

    __slots__ = ("jaxpr", "consts", "__weakref__")

    def __init__(self, jaxpr: Jaxpr, consts):
        assert len(jaxpr.constvars) == len(consts)
        self.jaxpr = jaxpr
        self.consts = list(consts)

    in_avals = property(lambda self: self.jaxpr.in_avals)
    out_avals = property(lambda self: self.jaxpr.out_avals)
    eqns = property(lambda self: self.jaxpr.eqns)

    constvars = property(lambda self: self.jaxpr.constvars)
    invars = property(lambda self: self.jaxpr.invars)
    outvars = property(lambda self: self.jaxpr.outvars)

    def __str__(self):
        return pp_jaxpr(self.jaxpr)

    __repr__ = __str__

    def pretty_print(self, **kwargs) -> str:
        """The printed program (``Jaxpr.pretty_print``: JAX's keyword arguments are accepted).

        Returns:
          the text.
        Example:
          >>> import functx
          >>> print(functx.make_jaxpr(lambda x: -x)(1.0).pretty_print(use_color=False))
          { lambda ; a:f32[]. let b:f32[] = neg a in (b,) }
        """
        return self.jaxpr.pretty_print(**kwargs)

    # ClosedJaxprs are params of control-flow equations, so they hash by identity.
    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


class Primitive:
    """One operation of the closed primitive set.

    ``abstract_eval(*avals, **params)`` returns the output aval (a list if ``multiple_results``);
    ``impl(*ndarrays, **params)`` is the NumPy implementation used by the eager path.
    """

    def __init__(self, name: str, *, multiple_results: bool = False, group: str = "other"):
        self.name = name
        self.multiple_results = multiple_results
        self.group = group
        self.abstract_eval = None
        self.impl = None

    def bind(self, *args, **params):
        return bind(self, args, params)

    def __repr__(self):
        return self.name


# --- The trace stack and bind --------------------------------------------------------------------
class _TraceState(threading.local):
    """Per-thread trace state: the active traces, innermost last (so one thread tracing never
    captures another thread's computation)."""

    def __init__(self):
        self.stack: list = []


trace_state = _TraceState()


def is_tracing() -> bool:
    """Whether a trace is active in this thread (a primitive call is staged, not run)."""
    return bool(trace_state.stack)


class active_trace:
    """Context manager that makes ``trace`` the innermost active trace of this thread. A trace is
    any object with ``process_primitive(prim, args, params)`` (``functx.tracing.Builder``)."""

    def __init__(self, trace):
        self.trace = trace

    def __enter__(self):
        trace_state.stack.append(self.trace)
        return self.trace

    def __exit__(self, *exc):
        popped = trace_state.stack.pop()
        assert popped is self.trace


# The eager path, by platform: fn(prim, args, params) -> result(s). "cpu" (the entry point of every
# eager call: functx.tracing's NumPy path) decides where an operation runs and hands operations
# on GPU arrays to "gpu" (filled by functx's devices package at import).
eager_rules: dict[str, Callable] = {}


def bind(prim: Primitive, args, params: dict):
    """Apply ``prim`` to ``args``: staged into the innermost active trace, else run eagerly."""
    stack = trace_state.stack
    if stack:
        return stack[-1].process_primitive(prim, args, params)
    return eager_rules["cpu"](prim, args, params)


# --- The printer ---------------------------------------------------------------------------------
def _name(i: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    s = ""
    while True:
        s = letters[i % 26] + s
        i //= 26
        if i == 0:
            return s


class _Names:
    def __init__(self):
        self.names: dict[int, str] = {}

    def __call__(self, v) -> str:
        if isinstance(v, Literal):
            return f"{_fmt_literal(v.val)}:{v.aval.str_short()}"
        if v.id not in self.names:
            self.names[v.id] = _name(len(self.names))
        return self.names[v.id]

    def bind(self, v) -> str:
        return f"{self(v)}:{v.aval.str_short()}"


def _fmt_literal(val) -> str:
    if isinstance(val, (np.generic, np.ndarray)):
        return str(np.asarray(val)[()])  # the shortest repr of the stored dtype, like JAX
    if isinstance(val, float):
        return repr(val)
    return str(val)


def _fmt_param(v, names, indent) -> str:
    if isinstance(v, ClosedJaxpr):
        return _pp(v.jaxpr, names, indent + 2, multiline=True)
    if isinstance(v, Jaxpr):
        return _pp(v, names, indent + 2, multiline=True)
    if isinstance(v, np.dtype):
        return dtypes.short_name(v) if v in dtypes.SUPPORTED else str(v)
    if isinstance(v, tuple):
        inner = ", ".join(_fmt_param(x, names, indent) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if callable(v) and hasattr(v, "__name__"):
        return v.__name__
    return str(v)


# A product's precision "float32" (full float32 products) is JAX's Precision.HIGHEST, printed as
# JAX prints it (one per operand); "tensorfloat32" stands for several JAX names and stays as is.
_PRECISION_TEXT = {"float32": "(Precision.HIGHEST, Precision.HIGHEST)"}


def _fmt_named(k, v, names, indent) -> str:
    if k == "precision" and isinstance(v, str):
        return _PRECISION_TEXT.get(v, v)
    return _fmt_param(v, names, indent)


def _pp_eqn(e: Eqn, names, indent) -> str:
    outs = " ".join(names.bind(v) for v in e.outvars)
    params = ""
    if e.params:
        params = (
            "["
            + " ".join(
                f"{k}={_fmt_named(k, v, names, indent)}" for k, v in sorted(e.params.items())
            )
            + "]"
        )
    ins = " ".join(names(v) for v in e.invars)
    return f"{outs} = {e.prim.name}{params} {ins}".rstrip()


def _has_subjaxpr(jaxpr: Jaxpr) -> bool:
    return any(isinstance(p, (ClosedJaxpr, Jaxpr)) for e in jaxpr.eqns for p in e.params.values())


def _pp(jaxpr: Jaxpr, names: _Names, indent: int, multiline: bool | None = None) -> str:
    consts = " ".join(names.bind(v) for v in jaxpr.constvars)
    ins = " ".join(names.bind(v) for v in jaxpr.invars)
    head = f"{{ lambda {consts}; {ins}. let" if consts else f"{{ lambda ; {ins}. let"
    eqns = [_pp_eqn(e, names, indent) for e in jaxpr.eqns]
    outs = ", ".join(names(v) for v in jaxpr.outvars)
    tail = f"in ({outs},) }}" if len(jaxpr.outvars) == 1 else f"in ({outs}) }}"
    one_line = f"{head} {'; '.join(eqns)} {tail}"
    if multiline is None:
        multiline = len(one_line) + indent > 100 or _has_subjaxpr(jaxpr)
    if not multiline:
        return one_line
    pad = " " * indent
    body = "".join(f"\n{pad}    {e}" for e in eqns)
    return f"{head}{body}\n{pad}  {tail}"


def pp_jaxpr(jaxpr: Jaxpr) -> str:
    return _pp(jaxpr, _Names(), 0)


# --- The type checker ----------------------------------------------------------------------------
def typecheck_jaxpr(jaxpr: Jaxpr | ClosedJaxpr) -> None:
    """Check a jaxpr (functx's form of ``jax.extend.core.check_jaxpr``): every variable is defined
    once before use and every equation's output types match its primitive's shape/dtype inference.

    Arguments:
      jaxpr: a Jaxpr or ClosedJaxpr.
    Returns:
      None; raises FunctxTypeError on the first problem.
    Example:
      >>> import functx
      >>> functx.typecheck_jaxpr(functx.make_jaxpr(lambda x: x + 1.0)(2.0))
    """
    if isinstance(jaxpr, ClosedJaxpr):
        for v, c in zip(jaxpr.jaxpr.constvars, jaxpr.consts):
            shape, dtype = np.shape(c), np.asarray(c).dtype
            if shape != v.aval.shape or dtype != v.aval.dtype:
                raise FunctxTypeError(
                    f"typecheck: const for {v.aval.str_short()} has shape {shape} and dtype {dtype}"
                )
        jaxpr = jaxpr.jaxpr
    defined: set[int] = set()

    def define(v, where):
        if not isinstance(v, Var):
            raise FunctxTypeError(f"typecheck: {where} binds a non-variable {v!r}")
        if v.id in defined:
            raise FunctxTypeError(f"typecheck: variable {v!r} is defined twice ({where})")
        defined.add(v.id)

    def use(v, where):
        if isinstance(v, Literal):
            if np.shape(v.val) != () or v.aval.shape != ():
                raise FunctxTypeError(f"typecheck: literal {v!r} in {where} is not a scalar")
            return
        if not isinstance(v, Var) or v.id not in defined:
            raise FunctxTypeError(f"typecheck: {where} uses {v!r} before it is defined")

    for v in jaxpr.constvars:
        define(v, "constvars")
    for v in jaxpr.invars:
        define(v, "invars")
    for e in jaxpr.eqns:
        where = f"equation {e.prim.name} at {e.source_info}" if e.source_info else e.prim.name
        for v in e.invars:
            use(v, where)
        for p in e.params.values():
            if isinstance(p, (ClosedJaxpr, Jaxpr)):
                typecheck_jaxpr(p)
        if e.prim.abstract_eval is None:
            raise FunctxTypeError(f"typecheck: primitive {e.prim.name} has no shape inference")
        out = e.prim.abstract_eval(*[v.aval for v in e.invars], **e.params)
        out = out if e.prim.multiple_results else [out]
        if len(out) != len(e.outvars):
            raise FunctxTypeError(
                f"typecheck: {where} has {len(e.outvars)} outputs, inference gives {len(out)}"
            )
        for v, a in zip(e.outvars, out):
            if not same_type(v.aval, a):
                raise FunctxTypeError(
                    f"typecheck: {where} output is {v.aval.str_short()}, "
                    f"inference gives {a.str_short()}"
                )
            define(v, where)
    for v in jaxpr.outvars:
        use(v, "outvars")
