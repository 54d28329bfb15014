"""``functx.jit``: trace once per signature, lower to C++ or Triton, compile (cached on disk), run.

The program runs on the device its arguments live on (``functx.devices.transfer.op_device``:
committed arguments must agree): C++ for the CPU, Triton kernels for a GPU, whose outputs come
back as GPU arrays. A jitted function keeps a cache keyed by the tree structure, the abstract
values of the array arguments, the values of the static arguments and the device. Called with
tracers of an outer transform it inlines its Jaxpr instead, so ``grad(jit(f))`` and
``jit(grad(f))`` both work. ``FUNCTX_LOG_COMPILES=1`` logs each compilation with the reason
(which argument changed); ``FUNCTX_JIT_CACHE_SIZE`` bounds how many compiled signatures each
jitted function keeps (default 1024, least recently used evicted first: an evicted signature
compiles again, from the disk cache). This module also fills
``functx.devices.eager.compilers["triton"]``: eager GPU operations compile through it.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import logging
import threading
import time
import types
import weakref

import numpy as np
import optree

from functx import _refbox, config as _config, core, dtypes, monitoring, source_info, tracing
from functx.array import Array, UncommittedArray
from functx.config import jit_cache_size, jit_disabled, matmul_precision
from functx.core import ClosedJaxpr, Jaxpr
from functx.devices import device as _device, eager as _eager
from functx.devices.device import CPU, DeviceError
from functx.devices.eager import DeviceExecutable, check_consts, gpu_tree_signature
from functx.devices.transfer import op_device
from functx.errors import (
    FunctxArgumentError,
    FunctxFloatingPointError,
    FunctxRuntimeError,
    FunctxTypeError,
    FunctxValueError,
)
from functx.interpreter import eval_jaxpr
from functx.lowering.compile import compile_jaxpr, log as _log, loop_ir_text
from functx.lowering.cpp import (
    conv as _cpp_conv,  # (convolution sums, CPU programs)
    hostmath as _hostmath,  # noqa: F401 (eager rsqrt, pow, libm)
)
from functx.lowering.runtime import Executable
from functx.lowering.triton import attention as _attention, linalg as _triton_linalg  # noqa: F401
from functx.ref import Ref
from functx.source_info import where
from functx.tracing import ShapeDtypeStruct, Tracer, get_aval, tree_flatten, tree_unflatten
from functx.transforms import axis_env as _axis_env, outer_products, passes, vjp as _vjp


class Lowered:
    """What ``jit(f).lower(*args)`` returns: the final Jaxpr and the generated source
    (``functx.stages.Lowered``).

    Example:
      >>> import functx
      >>> low = functx.jit(lambda x: x + 1.0).lower(2.0)
      >>> low.compile()(2.0)
      Array(3., dtype=float32, weak_type=True)
    """

    def __init__(
        self,
        jaxpr: ClosedJaxpr,
        executable,
        in_tree=None,
        in_avals=(),
        out_tree=None,
        what="jit",
        runner=None,
    ):
        self.jaxpr = jaxpr
        self.executable = executable  # the program (its source, kernels, shared object)
        self._runner = executable if runner is None else runner  # what Compiled calls
        self.in_tree = in_tree  # of (dynamic positional arguments, dynamic keyword arguments)
        self.in_avals = tuple(in_avals)
        self.out_tree = out_tree
        self._what = what
        self._donated = ()  # the flat leaves' donation flags (Jitted.lower sets them)

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        """The stages of the program as text: the final Jaxpr, the loop IR (one line per node,
        with its kernel), the kernels (one line each) and the generated C++ or Triton source.

        Arguments:
          dialect: JAX's dialect names ("stablehlo", "hlo") are accepted; functx has no HLO, so
            every dialect gives functx's own stages. Any other name is a ValueError, as in JAX.
          debug_info: accepted for JAX's signature; ignored.
        Returns:
          the text.
        Example:
          >>> import numpy as np, functx
          >>> low = functx.jit(lambda x: x + 1.0).lower(np.ones(2, np.float32))
          >>> low.as_text("hlo").startswith("# Jaxpr")
          True
        """
        _check_dialect(dialect)
        lang = "Triton" if hasattr(self.executable, "exe") else "C++"
        loop_ir = loop_ir_text(getattr(self.executable, "closed", self.jaxpr))
        return (
            f"# Jaxpr\n{self.jaxpr}\n\n# loop IR\n{loop_ir}\n\n"
            f"# kernels\n{self.executable.kernels_text}\n\n"
            f"# {lang}\n{self.executable.source}"
        )

    def compiler_ir(self, dialect: str | None = None):
        """The program's intermediate representation (JAX gives an MLIR module; functx's IR is
        its final ``ClosedJaxpr``, whatever the dialect).

        Arguments:
          dialect: as for ``as_text``.
        Returns:
          the ``ClosedJaxpr`` that is compiled.
        Example:
          >>> import numpy as np, functx
          >>> print(functx.jit(lambda x: x * 2.0).lower(np.float32(1)).compiler_ir())
          { lambda ; a:f32[]. let b:f32[] = mul a 2.0:f32[] in (b,) }
        """
        _check_dialect(dialect)
        return self.jaxpr

    @property
    def args_info(self):
        """The arguments' ``ArgInfo`` (shape, dtype, donated) in the pytree of the dynamic
        ``(args, kwargs)`` that were lowered, as JAX's ``Lowered.args_info``."""
        return _args_info(self.in_tree, self.in_avals, self._donated)

    @property
    def out_info(self):
        """The outputs' ``ShapeDtypeStruct`` in the function's output pytree."""
        return _out_info(self.jaxpr, self.out_tree)

    def kernel_count(self) -> int:
        return self.executable.kernels_text.count("kernel ")

    def compile(self, compiler_options=None, *, device_assignment=None) -> Compiled:
        """The compiled program, callable with the lowered dynamic arguments (JAX's
        ``compiler_options`` and ``device_assignment`` are accepted and ignored: the program is
        already compiled, for the device of its arguments)."""
        return Compiled(self)


class Compiled:
    """What ``jit(f).lower(*args).compile()`` returns: called like JAX's ``Compiled``, with the
    dynamic arguments of the lowering (static ones left out) in the same pytree structure, of the
    same shapes and dtypes (anything else is a FunctxTypeError); returns the outputs in the
    function's output pytree (``functx.stages.Compiled``).

    Example:
      >>> import numpy as np, functx
      >>> c = functx.jit(lambda x: x.sum()).lower(np.ones(3, np.float32)).compile()
      >>> c(np.arange(3, dtype=np.float32))
      Array(3., dtype=float32)
    """

    def __init__(self, lowered: Lowered):
        self._lowered = lowered
        self._exe = lowered._runner
        self.in_tree = lowered.in_tree
        self.in_avals = lowered.in_avals
        self.out_tree = lowered.out_tree
        self._what = lowered._what

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        """The lowering's stages as text (see ``Lowered.as_text``)."""
        return self._lowered.as_text(dialect, debug_info=debug_info)

    def runtime_executable(self):
        """The program object that runs (C++ shared object or Triton kernels), JAX's
        ``Compiled.runtime_executable()``."""
        return self._exe

    @property
    def args_info(self):
        """As ``Lowered.args_info``."""
        return self._lowered.args_info

    @property
    def out_info(self):
        """As ``Lowered.out_info``."""
        return self._lowered.out_info

    def __call__(self, *args, **kwargs):
        leaves, tree = optree.tree_flatten(
            (args, kwargs), none_is_leaf=False, namespace=tracing.PYTREE_NAMESPACE
        )
        if tree != self.in_tree:
            raise FunctxTypeError(
                f"{self._what}: the compiled function was called with arguments of another pytree "
                f"structure: compiled for {self.in_tree}, called with {tree} (pass the dynamic "
                f"arguments given to lower(), static ones left out){where()}"
            )
        got = []
        for x in leaves:
            try:
                got.append(get_aval(x))
            except Exception:  # noqa: BLE001 - reported below as what it is
                got.append(None)
        bad = [
            i
            for i, (a, b) in enumerate(zip(self.in_avals, got))
            if b is None or a.shape != b.shape or a.dtype != b.dtype
        ]
        if bad:

            def fmt(avals):
                return ", ".join("?" if a is None else a.str_short() for a in avals)

            i = bad[0]
            raise FunctxTypeError(
                f"{self._what}: computation compiled for input types:\n  {fmt(self.in_avals)}\n"
                f"called with:\n  {fmt(got)}\n(argument leaf {i} differs: expected "
                f"{self.in_avals[i].str_short()}, got "
                f"{'a ' + type(leaves[i]).__name__ if got[i] is None else got[i].str_short()}); "
                f"lower and compile again for these arguments{where()}"
            )
        return tree_unflatten(self.out_tree, self._exe(leaves))


_DIALECTS = (None, "stablehlo", "hlo", "mhlo")


def _hashable(v) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _check_dialect(dialect):
    if dialect not in _DIALECTS:
        raise ValueError(f"unknown dialect: {dialect}")


class ArgInfo:
    """One argument of a lowering: its shape, dtype and whether it was donated (JAX's
    ``jax.stages.ArgInfo``).

    Example:
      >>> import numpy as np, functx
      >>> (x,), _ = functx.jit(lambda x: x).lower(np.ones(2, np.float32)).args_info
      >>> x.shape, x.dtype, x.donated
      ((2,), dtype('float32'), False)
    """

    __slots__ = ("_aval", "donated")

    def __init__(self, aval, donated: bool):
        self._aval = aval
        self.donated = donated

    @property
    def shape(self):
        return self._aval.shape

    @property
    def dtype(self):
        return self._aval.dtype

    def __repr__(self):
        return f"ArgInfo(_aval={self._aval}, donated={self.donated})"


def _args_info(in_tree, in_avals, donated):
    if in_tree is None:
        return None
    flags = list(donated) + [False] * (len(in_avals) - len(donated))
    return tree_unflatten(in_tree, [ArgInfo(a, d) for a, d in zip(in_avals, flags)])


def _out_info(closed, out_tree):
    outs = [ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.outvars]
    return outs if out_tree is None else tree_unflatten(out_tree, outs)


class Traced:
    """What ``jit(f).trace(*args)`` returns (JAX's ``jax.stages.Traced``): the traced
    ``jaxpr`` (a ``ClosedJaxpr``), ``out_info``, ``args_info``, and ``lower()``.

    Example:
      >>> import functx
      >>> t = functx.jit(lambda x: x * 2).trace(1.0)
      >>> print(t.jaxpr)
      { lambda ; a:f32[]. let b:f32[] = mul a 2.0:f32[] in (b,) }
    """

    def __init__(self, jitted, args, kwargs, jaxpr, in_tree, in_avals, out_tree, donated):
        self._jitted, self._args, self._kwargs = jitted, args, kwargs
        self.jaxpr = jaxpr
        self.in_tree, self.in_avals, self.out_tree = in_tree, tuple(in_avals), out_tree
        self._donated = donated
        self.fun_name = getattr(jitted.fun, "__name__", type(jitted.fun).__name__)

    @property
    def args_info(self):
        return _args_info(self.in_tree, self.in_avals, self._donated)

    @property
    def out_info(self):
        return _out_info(self.jaxpr, self.out_tree)

    def lower(self) -> Lowered:
        return self._jitted.lower(*self._args, **self._kwargs)


_CACHE_LOCK = threading.Lock()  # (evictions: compiles are rare, so one lock for all functions)
# Each trace and compile of a jitted function is logged here, at DEBUG, or at WARNING inside
# ``functx.log_compiles(True)`` / with ``config.update("jax_log_compiles", True)`` (JAX's levels)
_logger = logging.getLogger("functx.jit")


class _Checking(threading.local):
    active = False  # (inside _checked_call's own call: the plain dispatch runs)


_checking = _Checking()


def _compile_eager(closed, what: str):
    """How an eager GPU operation compiles (``functx.devices.eager.compilers["triton"]``): log
    ``what``, then a Triton executable for ``closed``."""
    _log(what)
    return compile_jaxpr(passes.simplify(closed), "triton")


_eager.compilers["triton"] = _compile_eager


def _executable(closed, place):
    """The flat runner of ``closed`` on ``place``. float0 outputs (the tangents of integer inputs)
    hold no data: they are made here, and the program computes the others."""
    n_out = len(closed.out_avals)
    zeros = [(i, a) for i, a in enumerate(closed.out_avals) if a.dtype == dtypes.float0]
    if zeros:
        j = closed.jaxpr
        keep = [v for v in j.outvars if v.aval.dtype != dtypes.float0]
        closed = passes.dce_closed(
            ClosedJaxpr(Jaxpr(j.constvars, j.invars, j.eqns, keep), closed.consts)
        )
    if place == "cpu":
        exe = compile_jaxpr(closed, "cpu")
    else:
        exe = DeviceExecutable(compile_jaxpr(closed, "triton"), closed.out_avals, place)
    return _WithFloat0(exe, zeros, n_out) if zeros else exe


class _WithFloat0:
    """A flat runner whose program leaves out the float0 outputs: puts them back."""

    def __init__(self, exe, zeros, n_out):
        self.inner = exe
        self.zeros = dict(zeros)
        self.n_out = n_out

    def __getattr__(self, name):  # source, kernels_text, so_path, ... of the program
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __call__(self, leaves):
        outs = iter(self.inner(leaves))
        return [
            np.zeros(self.zeros[i].shape, dtypes.float0) if i in self.zeros else next(outs)
            for i in range(self.n_out)
        ]


def _run(exe, leaves):
    """Call a cached program: a host program unchecked, since the cache key that found it holds
    the shapes and dtypes of ``leaves`` (its own check costs microseconds per call)."""
    return exe.run(leaves) if type(exe) is Executable else exe(leaves)


_HOST_ARRAYS = (Array, UncommittedArray)


_SUPPORTED = frozenset(dtypes.SUPPORTED)  # (a set: a tuple's ``in`` compares dtypes one by one)


def _walk(items, key: list, leaves: list, depth: int = 0) -> bool:
    """Append the signatures of ``items`` to ``key`` and their leaves to ``leaves`` (see
    ``_host_signature``); False when one holds anything else, or nests deeper than 32 levels
    (optree's flatten takes those: Python's recursion would run out)."""
    for x in items:
        t = type(x)
        if t is Array:
            key.append(x.aval)
            leaves.append(x)
        elif t is np.ndarray:
            if x.dtype not in _SUPPORTED:
                return False
            key.append((x.shape, x.dtype))
            leaves.append(x)
        elif (t is tuple or t is list) and depth < 32:
            key.append((t, len(x)))
            if not _walk(x, key, leaves, depth + 1):
                return False
        elif t is dict and depth < 32:
            try:
                names = sorted(x)  # (optree's order, as JAX's)
            except TypeError:
                return False
            key.append((dict, tuple(names)))
            if not _walk([x[k] for k in names], key, leaves, depth + 1):
                return False
        elif x is None:
            key.append(None)
        elif t is UncommittedArray:
            key.append((x.aval,))
            leaves.append(x)
        elif t is float or t is bool or (isinstance(x, np.generic) and x.dtype in _SUPPORTED):
            key.append(t)
            leaves.append(x)
        else:
            return False
    return True


def _host_signature(args):
    """The fast path's key for positional host arguments, and their leaves: per leaf its aval
    (a functx host Array; uncommitted ones marked apart), ``(shape, dtype)`` of a NumPy array,
    or the type of a NumPy scalar, Python float or bool (whose aval depends only on the type
    and the x64 flag, which is part of the key); per tuple or list ``(type, length)``, per dict
    ``(dict, sorted keys)``, per None None, each before its contents. It is one walk of the
    arguments, without optree (which took longer than the rest of a small step's dispatch).
    None when an argument holds anything else (a Python int, whose dtype depends on its value,
    a GPU array, another pytree node): the call takes the general path."""
    key, leaves = [], []
    return (tuple(key), leaves) if _walk(args, key, leaves) else None


def host_tree(x) -> bool:
    """Whether ``x`` is a host value, or tuples, lists and dicts of them (the values
    ``_host_signature`` takes): nothing in it is computed asynchronously."""
    return _walk((x,), [], [])


def _runner(exe, leaves):
    """The program's runner (``Executable.runner``) for these leaves' kinds: each host Array
    passed as its buffer, a NumPy array of the program's dtype as it is, anything else
    converted."""
    kinds = []
    for i, s in enumerate(_host_signature(leaves)[0]):
        if type(s) is not tuple:  # an Array's aval, or a scalar's type
            kinds.append("c" if isinstance(s, type) else "a")
        elif len(s) == 1:  # (an uncommitted Array's aval,)
            kinds.append("u")
        else:  # a NumPy array's (shape, dtype)
            kinds.append("n" if exe.in_dtypes is None or s[1] == exe.in_dtypes[i] else "c")
    return exe.runner("".join(kinds))


def _commits_call(a) -> bool:
    """Whether a host argument commits the call to the CPU (functx.devices.transfer's rule: a
    committed Array or a NumPy array with dimensions; scalars and uncommitted arrays do not)."""
    t = type(a)
    return (t is Array and bool(a.aval.shape)) or (t is np.ndarray and a.ndim > 0)


def _describe_change(old_key, new_key) -> str:
    if old_key is None:
        return "first call"
    if old_key[6:] != new_key[6:]:
        return f"named axes bound around the call changed: {old_key[6:]} -> {new_key[6:]}"
    (ot, oa, os_, ob, op, ox), (nt, na, ns, nb, np_, nx) = old_key[:6], new_key[:6]
    if ox != nx:
        return f"jax_enable_x64 changed: {ox} -> {nx}"
    if ob != nb:
        return f"device changed: {ob} -> {nb}"
    if op != np_:
        return f"default matmul precision changed: {op} -> {np_}"
    if ot != nt:
        return f"tree structure changed: {ot} -> {nt}"
    for i, (a, b) in enumerate(zip(oa, na)):
        if a != b:
            return f"argument leaf {i} changed from {a.str_short()} to {b.str_short()}"
    if os_ != ns:
        return f"static arguments changed: {os_} -> {ns}"
    return "new signature"


@contextlib.contextmanager
def _timed(event: str, name: str):
    """Time the block: its seconds land in the yielded list, and in ``functx.monitoring`` as a
    duration and a time span of ``event`` with ``fun_name=name``, and its start time as a scalar
    when it starts (JAX's compile events)."""
    took = [0.0]
    start, wall = time.perf_counter(), time.time()
    monitoring.record_scalar(event, wall, fun_name=name)
    yield took
    took[0] = time.perf_counter() - start
    monitoring.record_event_duration_secs(event, took[0], fun_name=name)
    monitoring.record_event_time_span(event, wall, wall + took[0], fun_name=name)


def _key_distance(a, b) -> int:
    """How many parts of two cache keys differ (each differing argument leaf counts)."""
    leaves = sum(x != y for x, y in zip(a[1], b[1])) if a[0] == b[0] else len(b[1])
    return leaves + sum(x != y for x, y in zip((a[0], *a[2:]), (b[0], *b[2:])))


def _defined_at(fun) -> str:
    """``name defined at file:line`` (the name alone when ``fun`` has no code object)."""
    name = getattr(fun, "__name__", type(fun).__name__)
    code = getattr(fun, "__code__", None)
    return f"{name} defined at {code.co_filename}:{code.co_firstlineno}" if code else name


def _param_name(fun, i):
    """The name of ``fun``'s positional parameter ``i`` (``i`` itself when a keyword name),
    else ``args[i]``."""
    if isinstance(i, str):
        return i
    try:
        params = [
            p.name
            for p in inspect.signature(fun).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    return params[i] if 0 <= i < len(params) else f"args[{i}]"


def _leaf_names(fun, split, n_args) -> list:
    """The path of each dynamic argument leaf, as JAX names them (``x``, ``params['w']``,
    ``xs[0]``), in the order of the flattened arguments."""
    dyn_args, dyn_kw, stat, _ = split
    static = {i for i, _ in stat}
    named = [(_param_name(fun, i), None) for i in range(n_args) if i not in static]
    named = [(n, a) for (n, _), a in zip(named, dyn_args)] + sorted(dyn_kw.items())
    out = []
    for name, value in named:
        paths, _, _ = optree.tree_flatten_with_path(
            value, none_is_leaf=False, namespace=tracing.PYTREE_NAMESPACE
        )
        for path in paths:
            out.append(name + "".join(f"[{k!r}]" for k in path))
    return out


def _placement(leaves, backend, what):
    """ "cpu" or the GPU ``Device`` a call runs on: where its committed arguments live (else the
    default device); ``backend`` ("cpu" or "triton"), when given, must agree."""
    dev, _ = op_device(leaves, what, "argument leaf")
    if backend == "cpu" and dev is not CPU:
        raise DeviceError(
            f"{what} was asked for backend='cpu' but its arguments are on {dev!r}; copy them to "
            "the host with functx.device_put(x, functx.devices('cpu')[0]), or drop backend="
        )
    if backend == "triton" and dev.platform != "gpu":
        raise DeviceError(
            f"{what} was asked for backend='triton' (a GPU) but its arguments are on {dev!r}; "
            "put them on a GPU first: functx.device_put(x, functx.devices('gpu')[0])"
        )
    return "cpu" if dev is CPU else dev


def _check_static(static_argnums, static_argnames):
    """``static_argnums`` (an int or a sequence of ints) and ``static_argnames`` (a str or a
    sequence of str) as tuples; anything else is a FunctxTypeError."""

    def ints(v):
        return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))

    if static_argnums is None:
        static_argnums = ()
    try:
        items = None if isinstance(static_argnums, (str, bytes)) else tuple(static_argnums)
    except TypeError:
        items = None
    if ints(static_argnums):
        nums = (int(static_argnums),)
    elif items is None or not all(ints(a) for a in items):
        raise FunctxTypeError(
            f"jit: static_argnums must be an int or a sequence of ints, got "
            f"{static_argnums!r:.60}{where()}"
        )
    else:
        nums = tuple(int(a) for a in items)
    if static_argnames is None:
        static_argnames = ()
    try:
        items = None if isinstance(static_argnames, bytes) else tuple(static_argnames)
    except TypeError:
        items = None
    if isinstance(static_argnames, str):
        names = (static_argnames,)
    elif items is None or not all(isinstance(a, str) for a in items):
        raise FunctxTypeError(
            f"jit: static_argnames must be a str or a sequence of str, got "
            f"{static_argnames!r:.60}{where()}"
        )
    else:
        names = items
    return nums, names


def _check_donate(donate_argnums, donate_argnames):
    """``donate_argnums`` (an int or an iterable of ints) and ``donate_argnames`` (a str or an
    iterable of str) as tuples, with JAX's TypeErrors for anything else."""
    if donate_argnums is None:
        nums = ()
    elif isinstance(donate_argnums, (int, np.integer)) and not isinstance(donate_argnums, bool):
        nums = (int(donate_argnums),)
    else:
        try:
            items = tuple(donate_argnums)
        except TypeError:
            raise FunctxTypeError(
                f"jit: donate_argnums must be an int or a sequence of ints, got "
                f"{donate_argnums!r:.60}{where()}"
            ) from None
        bad = [a for a in items if not isinstance(a, (int, np.integer)) or isinstance(a, bool)]
        if bad:
            raise FunctxTypeError(
                f"jit: donate_argnums must be ints, got {bad[0]!r:.60} of type "
                f"{type(bad[0]).__name__}{where()}"
            )
        nums = tuple(int(a) for a in items)
    if donate_argnames is None:
        names = ()
    elif isinstance(donate_argnames, str):
        names = (donate_argnames,)
    else:
        try:
            names = tuple(donate_argnames)
        except TypeError:
            raise FunctxTypeError(
                f"jit: donate_argnames must be a str or a sequence of str, got "
                f"{donate_argnames!r:.60}{where()}"
            ) from None
        bad = [a for a in names if not isinstance(a, str)]
        if bad:
            raise FunctxTypeError(f"jit: argument is not a string: {bad[0]!r:.60}{where()}")
    return nums, names


_live_jitted: weakref.WeakSet = weakref.WeakSet()  # every live Jitted (clear_caches)


def clear_caches() -> None:
    """Drop every in-memory cache of compiled programs and traces, as JAX's
    ``jax.clear_caches``: each jitted function's compiled signatures (and its dispatch fast
    paths) and the transforms' caches (traces, jvp and gradient Jaxprs). The next call traces
    again (and loads the program from the disk cache, which stays, as JAX's persistent cache
    does).

    Arguments:
      none.
    Returns:
      None.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> f = functx.jit(lambda x: print("traced") or x * 2.0)
      >>> _ = f(np.float32(1.0))
      traced
      >>> functx.clear_caches()
      >>> _ = f(np.float32(1.0))
      traced
    """
    with _CACHE_LOCK:
        for j in list(_live_jitted):
            j.cache.clear()
            j._fast_of.clear()
            j._gpu_calls.clear()
            j._cpu_calls.clear()
            j.last_key = None
    tracing.clear_trace_caches()
    _vjp.clear_caches()  # (and jvp's: traces, jvp and gradient Jaxprs)


class Jitted:
    """A jit-compiled function, what ``functx.jit(fun)`` returns: calling it traces ``fun`` once per
    signature (tree structure, shapes and dtypes, static arguments, device), compiles the Jaxpr
    to C++ or Triton and runs the cached program; ``lower(*args)`` gives the stages as text.

    Arguments:
      fun: the function to compile.
      static_argnums, static_argnames: arguments passed as Python values (part of the cache key).
      backend: None (where the arguments live), "cpu" or "triton".
      donate_argnums, donate_argnames: validated as JAX does, then ignored.

    Returns:
      (Calling it) the outputs of ``fun``, as arrays in ``fun``'s output tree.

    Example:
      >>> import numpy as np, functx
      >>> f = functx.jit(lambda x: x * 2.0 + 1.0)
      >>> print(f(np.arange(3, dtype=np.float32)))
      [1. 3. 5.]
    """

    def __init__(
        self,
        fun,
        static_argnums=(),
        static_argnames=(),
        backend=None,
        donate_argnums=None,
        donate_argnames=None,
    ):
        if backend not in (None, "cpu", "triton"):
            raise FunctxValueError(
                f"jit: backend must be None, 'cpu' or 'triton', not {backend!r}{where()}"
            )
        if not callable(fun):
            raise FunctxTypeError(
                f"jit: expected a callable value, got {fun!r:.80} of type "
                f"{type(fun).__name__}{where()}"
            )
        static_argnums, static_argnames = _check_static(static_argnums, static_argnames)
        # donation is checked as JAX checks it, then ignored: functx never reuses an argument's
        # buffer for an output, and leaves the argument usable
        self.donate_argnums, self.donate_argnames = _check_donate(donate_argnums, donate_argnames)
        functools.update_wrapper(self, fun)
        self.fun = fun
        self._what = f"jit({getattr(fun, '__name__', type(fun).__name__)})"  # for errors
        self.backend = backend
        self.static_argnums = (
            (static_argnums,) if isinstance(static_argnums, int) else tuple(static_argnums)
        )
        self.static_argnames = (
            (static_argnames,) if isinstance(static_argnames, str) else tuple(static_argnames)
        )
        self._infer_static_from_signature()
        # the compiled programs, least recently used first (at most FUNCTX_JIT_CACHE_SIZE)
        self.cache: collections.OrderedDict = collections.OrderedDict()
        self._fast_of: dict = {}  # cache key -> [(fast-path dict, its key)] (dropped with it)
        # (gpu_tree_signature(args)[0], x64) -> [DeviceExecutable, output tree or None for one
        # leaf, cache key, used]
        self._gpu_calls: dict = {}
        # the avals of positional host Arrays -> (executable, output tree or None, cache key,
        # whether one of them is committed to the CPU: not 0-d)
        self._cpu_calls: dict = {}
        self.last_key = None
        self._ref_boxes = None  # (the Refs created outside ``fun`` that it uses: _call_refs)
        self._ref_programs: dict = {}  # (_call_refs' key -> (its Jitted, the call's slot))
        _live_jitted.add(self)

    def _infer_static_from_signature(self):
        """Like JAX, static_argnums and static_argnames imply each other through the signature."""
        try:
            params = list(inspect.signature(self.fun).parameters.values())
        except (TypeError, ValueError):
            return
        positional = [
            p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        kinds = {p.kind for p in params}
        if inspect.Parameter.VAR_POSITIONAL not in kinds:
            bad = [i for i in self.static_argnums if not -len(positional) <= i < len(positional)]
            if bad:  # JAX raises here too: a static_argnums that can never apply is a mistake
                raise FunctxValueError(
                    f"{self._what}: static_argnums={self.static_argnums} names argument {bad[0]}, "
                    f"but the function takes only {len(positional)} positional arguments"
                    f"{where()}"
                )
        if inspect.Parameter.VAR_KEYWORD not in kinds:
            named = {p.name for p in params if p.kind != p.VAR_POSITIONAL}
            bad = sorted(set(self.static_argnames) - named)
            if bad:
                raise FunctxValueError(
                    f"{self._what}: static_argnames names {bad}, which the function does not "
                    f"take (its arguments: {sorted(named)}){where()}"
                )
        nums, names = set(self.static_argnums), set(self.static_argnames)
        for name in list(names):
            if name in positional:
                nums.add(positional.index(name))
        for i in list(nums):
            if 0 <= i < len(positional) and params[i].kind == params[i].POSITIONAL_OR_KEYWORD:
                names.add(positional[i])
        self.static_argnums, self.static_argnames = tuple(sorted(nums)), tuple(sorted(names))
        self._infer_donate(params, positional, kinds)

    def _infer_donate(self, params, positional, kinds):
        """JAX's checks of donate_argnums/donate_argnames against the signature (ValueErrors),
        and the two completed through it, as the static ones are."""
        if not self.donate_argnums and not self.donate_argnames:
            return
        if inspect.Parameter.VAR_POSITIONAL not in kinds:
            bad = [i for i in self.donate_argnums if not -len(positional) <= i < len(positional)]
            if bad:
                raise FunctxValueError(
                    f"Jitted function has donate_argnums={self.donate_argnums}, but only accepts "
                    f"{len(positional)} positional arguments.{where()}"
                )
        if inspect.Parameter.VAR_KEYWORD not in kinds:
            named = {p.name for p in params if p.kind != p.VAR_POSITIONAL}
            bad = set(self.donate_argnames) - named
            if bad:
                raise FunctxValueError(
                    f"Jitted function has invalid argnames {bad} in donate_argnames. Function "
                    f"does not take these args.{where()}"
                )
        nums, names = set(self.donate_argnums), set(self.donate_argnames)
        for name in list(names):
            if name in positional:
                nums.add(positional.index(name))
        for i in list(nums):
            j = i % len(positional) if -len(positional) <= i < len(positional) else None
            if j is not None and params[j].kind == params[j].POSITIONAL_OR_KEYWORD:
                names.add(positional[j])
        both = names & set(self.static_argnames)
        if both:
            raise FunctxValueError(
                f"static_argnames and donate_argnames cannot intersect. Argument names {both} "
                f"appear in both static_argnames and donate_argnames{where()}"
            )
        both = {i % len(positional) if positional else i for i in nums} & {
            i % len(positional) if positional else i for i in self.static_argnums
        }
        if both:
            raise FunctxValueError(
                f"static_argnums and donate_argnums cannot intersect: {sorted(both)}{where()}"
            )
        self.donate_argnums, self.donate_argnames = tuple(sorted(nums)), tuple(sorted(names))

    def _split(self, args, kwargs):
        static = {i % len(args) for i in self.static_argnums if -len(args) <= i < len(args)}
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static)
        stat = tuple((i, args[i]) for i in sorted(static))
        dyn_kw = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        stat_kw = tuple(sorted((k, v) for k, v in kwargs.items() if k in self.static_argnames))
        try:
            hash((stat, stat_kw))
        except TypeError as e:
            bad = next(v for _, v in stat + stat_kw if not _hashable(v))
            raise FunctxArgumentError(
                f"Non-hashable static arguments are not supported. An error occurred while "
                f"trying to hash an object of type {type(bad)}, {bad}. The error was:\n"
                f"TypeError: {e}{where()}"
            ) from None
        return dyn_args, dyn_kw, stat, stat_kw

    def _cache_size(self) -> int:
        """How many compiled signatures this function keeps (JAX's ``_cache_size()``)."""
        return len(self.cache)

    def _donated_leaves(self, args, kwargs):
        """Per flat dynamic leaf, whether its argument is donated (for ``args_info``)."""
        static = {i % len(args) for i in self.static_argnums if -len(args) <= i < len(args)}
        nums = {i % len(args) for i in self.donate_argnums if -len(args) <= i < len(args)}
        flags = []
        for i, a in enumerate(args):
            if i not in static:
                flags += [i in nums] * len(tree_flatten(a)[0])
        for k in sorted(kwargs):  # (dicts flatten in sorted key order)
            if k not in self.static_argnames:
                flags += [k in self.donate_argnames] * len(tree_flatten(kwargs[k])[0])
        return tuple(flags)

    def trace(self, *args, **kwargs) -> Traced:
        """Trace for these arguments without compiling (JAX's ``jit(f).trace``).

        Arguments:
          *args, **kwargs: as for a call (``ShapeDtypeStruct`` leaves stand for arrays).
        Returns:
          a ``Traced``: ``.jaxpr`` (the ``ClosedJaxpr``), ``.out_info``, ``.args_info`` and
          ``.lower()``.
        Example:
          >>> import functx
          >>> print(functx.jit(lambda x: x * 2).trace(1.0).jaxpr)
          { lambda ; a:f32[]. let b:f32[] = mul a 2.0:f32[] in (b,) }
        """
        f, leaves, in_tree, statics = self._trace(args, kwargs)
        if _config.no_tracing.value:
            real = [x for x in leaves if not isinstance(x, ShapeDtypeStruct)]
            place = _placement(real, self.backend, self._what)
            self._check_no_tracing(leaves, in_tree, statics, place)
        a, kw = tree_unflatten(in_tree, leaves)
        closed, _, out_tree, _ = tracing.trace_pytree(f, a, kw)
        avals = [get_aval(x) for x in leaves]
        donated = self._donated_leaves(args, kwargs)
        return Traced(self, args, kwargs, closed, in_tree, avals, out_tree, donated)

    def _trace(self, args, kwargs):
        dyn_args, dyn_kw, stat, stat_kw = self._split(args, kwargs)
        n = len(args)

        def f(*a, **kw):
            full, it = [], iter(a)
            sd = dict(stat)
            for i in range(n):
                full.append(sd[i] if i in sd else next(it))
            return _no_refs(self.fun(*full, **kw, **dict(stat_kw)), self._what)

        leaves, in_tree = tree_flatten((dyn_args, dyn_kw))
        return f, leaves, in_tree, (stat, stat_kw)

    def __get__(self, obj, objtype=None):
        # a method (``@partial(jit, static_argnums=0) def f(self, x)``): bound as JAX binds it,
        # ``self`` passed as argument 0
        return self if obj is None else types.MethodType(self, obj)

    def __call__(self, *args, **kwargs):
        if _config.slow_dispatch:  # (jit off, NaN/inf checks or no_execution on, somewhere)
            if jit_disabled():
                return self.fun(*args, **kwargs)
            if _config.no_execution.value and not core.is_tracing():
                raise FunctxRuntimeError(
                    f"functx tried to execute function {self._what}, but the no_execution "
                    f"config option is set{where()}"
                )
            if _config.debug_checks_active and not _checking.active and not core.is_tracing():
                return self._checked_call(args, kwargs)
        if (
            not kwargs
            and not self.static_argnums
            and not core.trace_state.stack
            and not _axis_env.frames()  # (under bound named axes: the keyed path)
        ):
            # the dispatch fast paths. GPU arrays committed to one device, or tuples, lists and
            # dicts of them: one walk (gpu_tree_signature), one lookup, the kernels (about 10 us
            # on an H100 host in all for positional arrays)
            if _device.GPU_IN_USE and self.backend != "cpu":
                found = gpu_tree_signature(args)
                hit = self._gpu_calls.get((found[0], _config.jit_key_flags())) if found else None
                if hit is not None:
                    self.last_key = hit[2]
                    hit[3] = True  # (used: see _insert)
                    outs = hit[0].call_arrays(found[1])
                    return outs[0] if hit[1] is None else hit[1].unflatten(outs)
            # host arguments (Arrays, NumPy arrays and scalars, Python floats and bools), or
            # tuples, lists and dicts of them: one walk for their signature (structure and
            # leaves), one lookup, then the program's runner for that signature (about 1.3 us in
            # all on a 2-core VM for positional Arrays)
            sig, leaves = [], []  # (``_host_signature``, inline: this is the hot path)
            ok = _walk(args, sig, leaves)
            hit = self._cpu_calls.get((tuple(sig), _config.jit_key_flags())) if ok else None
            # (without a committed argument the call goes to the default device, the CPU for
            # certain only while this process has no GPU)
            if hit is not None and (hit[3] or not _device.GPU_IN_USE):
                self.last_key = hit[2]
                hit[4] = True  # (used: see _insert)
                outs = hit[0](leaves)
                return outs[0] if hit[1] is None else tree_unflatten(hit[1], outs)
            # else the keyed cache
            leaves, in_tree = optree.tree_flatten(
                (args, {}), none_is_leaf=False, namespace=tracing.PYTREE_NAMESPACE
            )
            try:
                place = (
                    _placement(leaves, self.backend, self._what)
                    if _device.GPU_IN_USE
                    else self.backend or "cpu"
                )
                key = (
                    in_tree,
                    tuple([x.aval for x in leaves]),
                    ((), ()),
                    place,
                    None if place == "cpu" else matmul_precision(),
                    _config.jit_key_flags(),
                )
                entry = self.cache.get(key)
            except AttributeError:
                entry = None
            if entry is not None:
                self.last_key = key
                self._touch(key)
                self._note_gpu_call(args, entry, key)
                self._note_cpu_call(args, entry, key)
                return tree_unflatten(entry[1], _run(entry[0], leaves))
        f, leaves, in_tree, statics = self._trace(args, kwargs)
        if self._ref_boxes is not None or any(type(x) is Ref for x in leaves):
            return self._call_refs(f, leaves, in_tree, statics)
        if any(isinstance(x, Tracer) for x in leaves) or core.is_tracing():
            traced, refs = _refbox.traced_or_boxes(
                lambda: _refbox.check_reads(
                    tracing.trace_pytree(f, *tree_unflatten(in_tree, leaves))
                )
            )
            if refs:
                return self._call_refs(f, leaves, in_tree, statics, refs)
            closed, _, out_tree, _ = traced
            return tree_unflatten(out_tree, eval_jaxpr(closed.jaxpr, closed.consts, *leaves))
        place = _placement(leaves, self.backend, self._what)
        key = self._key(leaves, in_tree, statics, place)
        env = key[6:]
        entry = self.cache.get(key)
        if entry is None:
            self._before_trace(key, args, kwargs)
            _log(
                f"compiling {getattr(self.fun, '__name__', 'function')} for {place}: "
                f"{_describe_change(self.last_key, key)}"
            )
            entry, refs = _refbox.traced_or_boxes(lambda: self._compile(f, leaves, in_tree, place))
            if refs:
                return self._call_refs(f, leaves, in_tree, statics, refs)
            self._insert(key, entry)
        else:
            self._touch(key)
        self.last_key = key
        if not kwargs and not self.static_argnums and not env:  # (fast paths: no named axes)
            self._note_gpu_call(args, entry, key)
            self._note_cpu_call(args, entry, key)
        exe, out_tree = entry
        return tree_unflatten(out_tree, _run(exe, leaves))

    def _call_refs(self, f, leaves, in_tree, statics, closure_boxes=()):
        """A call with ``Ref`` arguments, or of a function that uses Refs created outside it
        (``closure_boxes``, kept for later calls): a jit of the pure function of the Refs'
        values and the other arguments that returns the outputs and the Refs' final values,
        written back into the Refs after the call (JAX's in-place update)."""
        if closure_boxes:
            self._ref_boxes = list(self._ref_boxes or ()) + list(closure_boxes)
        pos = [i for i, x in enumerate(leaves) if type(x) is Ref]
        seen: dict = {}
        for i in pos:
            if id(leaves[i]._box) in seen:
                raise FunctxValueError(
                    f"only one reference to a mutable array may be passed as an argument to a "
                    f"function, but {self._what} got the same Ref{list(leaves[i].shape)} as "
                    f"flat arguments {seen[id(leaves[i]._box)]} and {i}{where()}"
                )
            seen[id(leaves[i]._box)] = i
        boxes = [leaves[i]._box for i in pos]
        boxes += [b for b in dict.fromkeys(self._ref_boxes or ()) if id(b) not in seen]
        key = (in_tree, statics, tuple(pos), tuple(map(id, boxes[len(pos) :])))
        if key not in self._ref_programs:
            slot: list = []
            pure = _pure_of_refs(f, in_tree, pos, slot)
            self._ref_programs[key] = (Jitted(pure, backend=self.backend), slot)
        inner, slot = self._ref_programs[key]
        slot[:] = [leaves, boxes]  # (what a trace of this call binds)
        rest = [x for x in leaves if type(x) is not Ref]
        try:
            out, finals = inner(_refbox.values(boxes), rest)
        finally:
            slot.clear()
        _refbox.store(boxes, finals)
        return out

    def _checked_call(self, args, kwargs):
        """A call while NaN/inf checks may be on (``functx.debug_nans``/``debug_infs``): the
        compiled program runs as always; when an output holds a value this thread checks for,
        the function runs again without ``jit`` (its operations eagerly, each checked), so the
        error names the first operation that makes one, as JAX does."""
        _checking.active = True
        try:
            out = self(*args, **kwargs)
        finally:
            _checking.active = False  # (this call is never nested in another checked call)
        bad = tracing.invalid_value(optree.tree_leaves(out, namespace=tracing.PYTREE_NAMESPACE))
        if bad is None:
            return out
        self.fun(*args, **kwargs)  # (raises FloatingPointError at the operation)
        raise FunctxFloatingPointError(
            f"invalid value ({bad}) encountered in {self._what}'s outputs; the function run "
            f"without jit made none (it passed on its inputs' own, its operations on NumPy "
            f"values are NumPy's, unchecked, or the compiled program's arithmetic differs){where()}"
        )

    def _key(self, leaves, in_tree, statics, place):
        """The cache key of a call: the tree, the leaves' avals, the static arguments, the
        device, the GPU precision, x64 and the settings that change what tracing makes, and the
        named axes bound around the call (their sizes are baked in)."""
        key = (
            in_tree,
            tuple(get_aval(x) for x in leaves),
            statics,
            place,
            None if place == "cpu" else matmul_precision(),
            _config.jit_key_flags(),
        )
        env = _axis_env.env_key()
        return key + (env,) if env else key

    def _check_no_tracing(self, leaves, in_tree, statics, place):
        """Under ``functx.no_tracing``, ``.trace``/``.lower`` for a signature no call has a
        program for raise (as JAX's, whose tracing cache the calls fill)."""
        if (
            _config.no_tracing.value
            and self._key(leaves, in_tree, statics, place) not in self.cache
        ):
            self._before_trace(None, (), {})

    def _before_trace(self, key, args, kwargs):
        """A call has no program for ``key``: raise under ``functx.no_tracing``; under
        ``functx.explain_cache_misses``, log why (JAX's explanation of a tracing cache miss)."""
        if _config.no_tracing.value:
            raise FunctxRuntimeError(
                f"re-tracing function {_defined_at(self.fun)} for `jit`, but 'no_tracing' is "
                f"set{where()}"
            )
        if _config.explain_cache_misses.value:
            _logger.warning(self._explain_miss(key, args, kwargs))

    def _explain_miss(self, key, args, kwargs) -> str:
        """Why ``key`` missed: the user's line, then the differences from the closest key this
        function still has a program for (or that it has none)."""
        frame = source_info.user_frame()
        head = f"TRACING CACHE MISS at {frame.file}:{frame.line} ({frame.function}):"
        if not self.cache:
            return f"{head}\n  never seen function:\n    {_defined_at(self.fun)}"
        old = min(list(self.cache), key=lambda k: _key_distance(k, key))
        return (
            f"{head}\n  for {_defined_at(self.fun)}\n  all previously seen cache keys differ. "
            f"For the closest previous key:\n"
            + "\n".join(f"  {line}" for line in self._key_changes(old, key, args, kwargs))
        )

    def _key_changes(self, old, new, args, kwargs) -> list:
        """Lines naming what differs between the cache keys ``old`` and ``new`` of a call."""
        lines = []
        if old[0] != new[0]:
            lines += ["different input pytree:", f"* now {new[0]} and before {old[0]}"]
        elif old[1] != new[1]:
            names = _leaf_names(self.fun, self._split(args, kwargs), len(args))
            lines.append("different input types:")
            for name, a, b in zip(names, new[1], old[1]):
                if a != b:
                    lines.append(f"* at {name}, now {a.str_short()} and before {b.str_short()}")
        if old[2] != new[2]:
            lines.append("different static arguments:")
            for (i, a), (_, b) in zip(new[2][0] + new[2][1], old[2][0] + old[2][1]):
                if a != b:
                    lines.append(f"* at {_param_name(self.fun, i)}, now {a!r} and before {b!r}")
        labels = ("device", "default matmul precision", "configuration (jax_enable_x64, ...)")
        for label, a, b in zip(labels, new[3:6], old[3:6]):
            if a != b:
                lines.append(f"different {label}: now {a} and before {b}")
        if old[6:] != new[6:]:
            lines.append(
                f"different named axes bound around the call: now {new[6:]} and before {old[6:]}"
            )
        return lines

    def _insert(self, key, entry):
        """Cache ``entry``, then evict the least recently used programs beyond the size limit
        (with their fast-path records). Calls through the fast paths only mark their record
        as used: such an entry gets a second chance (moved to the back) instead of going."""
        limit = jit_cache_size()
        with _CACHE_LOCK:
            self.cache[key] = entry
            chances = len(self.cache)
            while len(self.cache) > limit:
                old = next(iter(self.cache))
                recs = [(d, s) for d, s in self._fast_of.get(old, ()) if s in d]
                if chances > 0 and any(d[s][-1] for d, s in recs):
                    chances -= 1
                    for d, s in recs:
                        d[s][-1] = False
                    self.cache.move_to_end(old)
                    continue
                self.cache.pop(old, None)
                for d, s in self._fast_of.pop(old, ()):
                    d.pop(s, None)

    def _touch(self, key):
        """Mark ``key`` as the most recently used (another thread may have evicted it)."""
        try:
            self.cache.move_to_end(key)
        except KeyError:
            pass

    def _note_gpu_call(self, args, entry, key):
        """Remember ``entry`` for the fast path when ``args`` are GPU arrays on one device, or
        tuples, lists and dicts of them (``gpu_tree_signature``)."""
        if key[3] == "cpu" or key[2] != ((), ()):
            return
        found = gpu_tree_signature(args)
        sig = None if found is None else (found[0], key[5])
        if sig is not None and sig not in self._gpu_calls and key in self.cache:
            exe, out_tree = entry
            self._gpu_calls[sig] = [exe, None if out_tree.is_leaf() else out_tree, key, False]
            self._fast_of.setdefault(key, []).append((self._gpu_calls, sig))

    def _note_cpu_call(self, args, entry, key):
        """Remember ``entry`` for the fast path when ``args`` are host values or tuples, lists
        and dicts of them (``_host_signature``). At least one argument: a call without arguments
        runs on the default device, which may change; so does a call without a committed
        argument, which the fast path takes only while no GPU is in use."""
        if not args or key[3] != "cpu" or key[2] != ((), ()) or type(entry[0]) is not Executable:
            return
        found = _host_signature(args)
        if found is None:
            return
        sig = (found[0], key[5])
        if sig not in self._cpu_calls and key in self.cache:
            exe, out_tree = entry
            self._cpu_calls[sig] = [
                _runner(exe, found[1]),
                None if out_tree.is_leaf() else out_tree,
                key,
                any(_commits_call(a) for a in found[1]),
                False,  # (used: see _insert; the last item)
            ]
            self._fast_of.setdefault(key, []).append((self._cpu_calls, sig))

    def _compile(self, f, leaves, in_tree, place="cpu"):
        level = logging.WARNING if _config.log_compiles_state.value else logging.DEBUG
        name = getattr(self.fun, "__name__", "function")
        logs = _logger.isEnabledFor(level)
        with _timed(monitoring.JAXPR_TRACE_EVENT, name) as took:
            closed, out_tree = self._final_jaxpr(f, leaves, in_tree, place)
        if logs:
            _logger.log(
                level, "Finished tracing + transforming %s for jit in %.9f sec", name, took[0]
            )
            _logger.log(
                level,
                "Compiling jit(%s) for %s with global shapes and types [%s]",
                name,
                place,
                ", ".join(str(v.aval) for v in closed.jaxpr.invars),
            )
        with _timed(monitoring.BACKEND_COMPILE_EVENT, f"jit({name})") as took:
            exe = _executable(closed, place)
        if logs:
            _logger.log(
                level,
                "Finished compilation of jit(%s) (%s) in %.9f sec",
                name,
                "C++" if place == "cpu" else "Triton",
                took[0],
            )
        return exe, out_tree

    def _final_jaxpr(self, f, leaves, in_tree, place):
        a, kw = tree_unflatten(in_tree, leaves)
        closed, _, out_tree, _ = _refbox.check_reads(tracing.trace_pytree(f, a, kw))
        check_consts(closed.consts, CPU if place == "cpu" else place, self._what)
        closed = outer_products.factor_outer_products(passes.simplify(closed))
        # (flash; on the CPU, compile.py fuses on a program-cache miss: the loop IR stays out of a
        # warm process)
        closed = closed if place == "cpu" else _attention.fuse_attention(closed)
        closed = _cpp_conv.fuse_conv_taps(closed) if place == "cpu" else closed  # (conv sums)
        closed = passes.reshape_unit_reductions(passes.divide_by_reciprocals(closed))
        if _config.enable_checks.value:
            core.typecheck_jaxpr(closed)
        return closed, out_tree

    def lower(self, *args, **kwargs) -> Lowered:
        f, leaves, in_tree, statics = self._trace(args, kwargs)
        # (ShapeDtypeStructs stand for arrays without data, on no device)
        real = [x for x in leaves if not isinstance(x, ShapeDtypeStruct)]
        place = _placement(real, self.backend, self._what)
        self._check_no_tracing(leaves, in_tree, statics, place)
        closed, out_tree = self._final_jaxpr(f, leaves, in_tree, place)
        runner = _executable(closed, place)
        inner = getattr(runner, "inner", runner)  # (under _WithFloat0)
        program = inner.exe if isinstance(inner, DeviceExecutable) else runner
        lowered = Lowered(
            closed, program, in_tree, [get_aval(x) for x in leaves], out_tree, self._what, runner
        )
        lowered._donated = self._donated_leaves(args, kwargs)
        return lowered


def _pure_of_refs(f, in_tree, pos, slot):
    """``f`` as a function of its Refs' values and its other flat arguments, returning its
    outputs and the Refs' final values (``Jitted._call_refs``; a Ref is a pytree leaf). ``slot``
    holds the current call's flat arguments and boxes, which a trace binds."""

    def pure(values, rest):
        leaves, boxes = slot
        full = list(rest)
        for i in pos:
            full.insert(i, leaves[i])
        with _refbox.bound(boxes, values) as finals:
            a, kw = tree_unflatten(in_tree, full)
            return f(*a, **kw), finals()

    return pure


def _no_refs(out, what):
    """``out``, the outputs of a function traced for ``jit``, which JAX forbids to hold Refs."""
    for x in tree_flatten(out)[0]:
        if type(x) is Ref:
            raise FunctxValueError(
                f"function traced for {what} returned a mutable array reference ({x!r}), but "
                f"mutable array references cannot be returned{where()}"
            )
    return out


def jit(
    fun=None,
    *,
    static_argnums=(),
    static_argnames=(),
    donate_argnums=None,
    donate_argnames=None,
    backend=None,
    keep_unused=False,
    inline=False,
    compiler_options=None,
):
    """Compile ``fun`` to fused kernels (JAX's ``jit``); usable as a decorator.

    The program runs where its arguments live: C++ kernels on the CPU, Triton kernels on a GPU
    (the outputs are then GPU arrays on that device). Arguments committed to different devices
    are an error; arguments without a device (Python scalars) go with the others, and a call
    with none runs on the default device (see ``functx.devices``). ``jit(f).lower(*args)``
    accepts ``ShapeDtypeStruct`` leaves in place of arrays. Under ``functx.disable_jit()`` a
    jitted function calls ``fun`` directly.

    Arguments:
      fun: a function of pytrees of arrays.
      static_argnums / static_argnames: arguments treated as compile-time constants.
      donate_argnums / donate_argnames: arguments whose buffers JAX may reuse for outputs.
        They are checked as JAX checks them (TypeError for a wrong type, ValueError for an
        argument the function does not take or one also static); functx then ignores them:
        no buffer is reused, and donated arrays stay usable (JAX deletes them).
      backend: None (follow the arguments), or "cpu" / "triton" to insist on the CPU or a GPU:
        arguments elsewhere are then an error.
      keep_unused, inline, compiler_options: accepted for JAX's signature. functx always keeps
        unused arguments, inlines a jitted function called inside another trace, and has no
        XLA compiler options to pass them to.
    Returns:
      the jitted function (``.lower(*args)`` gives its program as text).

    Differences from JAX: ``keep_unused=``, ``inline=`` and ``compiler_options=`` are accepted and
    have no effect; donated arguments are checked as JAX checks them, then ignored (donated arrays
    stay usable).

    Example:
      >>> import numpy as np
      >>> import functx
      >>> f = functx.jit(lambda x: functx.numpy.tanh(x) * 2.0)
      >>> f(np.zeros(3, np.float32))
      Array([0., 0., 0.], dtype=float32)
      >>> print(f.lower(np.ones(4, np.float32)).as_text().splitlines()[1])
      { lambda ; a:f32[4]. let b:f32[4] = tanh a; c:f32[4] = mul b 2.0:f32[] in (c,) }
    """
    if fun is None:
        return functools.partial(
            jit,
            static_argnums=static_argnums,
            static_argnames=static_argnames,
            donate_argnums=donate_argnums,
            donate_argnames=donate_argnames,
            backend=backend,
            keep_unused=keep_unused,
            inline=inline,
            compiler_options=compiler_options,
        )
    return Jitted(fun, static_argnums, static_argnames, backend, donate_argnums, donate_argnames)
