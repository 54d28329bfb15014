"""``functx.jit``: trace once per signature, lower to C++ or Triton, compile (cached on disk), run.

The program runs on the device its arguments live on (``functx.placement.op_device``: committed
arguments must agree): C++ for the CPU, Triton kernels for a GPU, whose outputs come back as GPU
arrays. A jitted function keeps a cache keyed by the tree structure, the abstract values of the
array arguments, the values of the static arguments and the device. Called with tracers of an
outer transform it inlines its Jaxpr instead, so ``grad(jit(f))`` and ``jit(grad(f))`` both work.
``FUNCTX_LOG_COMPILES=1`` logs each compilation with the reason (which argument changed).
"""

from __future__ import annotations

import functools

import optree

from functx import placement as _pl
from functx import tracing
from functx.array import Array
from functx.core import ClosedJaxpr
from functx.interpreter import eval_jaxpr
from functx.lowering.compile import compile_jaxpr
from functx.lowering.compile import log as _log
from functx.tracing import Tracer, get_aval, tree_flatten, tree_unflatten
from functx.transforms import passes


class Lowered:
    """What ``jit(f).lower(*args)`` returns: the final Jaxpr and the generated source."""

    def __init__(self, jaxpr: ClosedJaxpr, executable):
        self.jaxpr = jaxpr
        self.executable = executable

    def as_text(self) -> str:
        lang = "Triton" if hasattr(self.executable, "exe") else "C++"
        return (f"# Jaxpr\n{self.jaxpr}\n\n# kernels\n{self.executable.kernels_text}\n\n"
                f"# {lang}\n{self.executable.source}")

    def kernel_count(self) -> int:
        return self.executable.kernels_text.count("kernel ")

    def compile(self):
        return self.executable


def _describe_change(old_key, new_key) -> str:
    if old_key is None:
        return "first call"
    (ot, oa, os_, ob, op), (nt, na, ns, nb, np_) = old_key, new_key
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


def _placement(leaves, backend, what):
    """"cpu" or the GPU ``Device`` a call runs on: where its committed arguments live (else the
    default device); ``backend`` ("cpu" or "triton"), when given, must agree."""
    dev, _ = _pl.op_device(leaves, what, "argument leaf")
    if backend == "cpu" and dev is not _pl.CPU:
        raise _pl.DeviceError(
            f"{what} was asked for backend='cpu' but its arguments are on {dev}; copy them to "
            "the host with functx.device_put(x, functx.devices('cpu')[0]), or drop backend=")
    if backend == "triton" and dev.platform != "gpu":
        raise _pl.DeviceError(
            f"{what} was asked for backend='triton' (a GPU) but its arguments are on {dev}; "
            "put them on a GPU first: functx.device_put(x, functx.devices('gpu')[0])")
    return "cpu" if dev is _pl.CPU else dev


class Jitted:
    def __init__(self, fun, static_argnums=(), static_argnames=(), backend=None):
        if backend not in (None, "cpu", "triton"):
            raise ValueError(f"jit: backend must be None, 'cpu' or 'triton', not {backend!r}")
        functools.update_wrapper(self, fun)
        self.fun = fun
        self._what = f"jit({getattr(fun, '__name__', type(fun).__name__)})"  # for errors
        self.backend = backend
        self.static_argnums = (static_argnums,) if isinstance(static_argnums, int) \
            else tuple(static_argnums)
        self.static_argnames = (static_argnames,) if isinstance(static_argnames, str) \
            else tuple(static_argnames)
        self._infer_static_from_signature()
        self.cache: dict = {}
        self._flat_trees: dict = {}  # number of positional Arrays -> their tree structure
        # gpu_signature(args) -> (DeviceExecutable, output tree or None for one leaf, cache key)
        self._gpu_calls: dict = {}
        # the avals of positional host Arrays -> (executable, output tree or None, cache key,
        # whether one of them is committed to the CPU: not 0-d)
        self._cpu_calls: dict = {}
        self.last_key = None

    def _infer_static_from_signature(self):
        """Like JAX, static_argnums and static_argnames imply each other through the signature."""
        import inspect

        try:
            params = list(inspect.signature(self.fun).parameters.values())
        except (TypeError, ValueError):
            return
        positional = [p.name for p in params
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        nums, names = set(self.static_argnums), set(self.static_argnames)
        for name in list(names):
            if name in positional:
                nums.add(positional.index(name))
        for i in list(nums):
            if 0 <= i < len(positional) and params[i].kind == params[i].POSITIONAL_OR_KEYWORD:
                names.add(positional[i])
        self.static_argnums, self.static_argnames = tuple(sorted(nums)), tuple(sorted(names))

    def _split(self, args, kwargs):
        static = {i % len(args) for i in self.static_argnums if -len(args) <= i < len(args)}
        dyn_args = tuple(a for i, a in enumerate(args) if i not in static)
        stat = tuple((i, args[i]) for i in sorted(static))
        dyn_kw = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        stat_kw = tuple(sorted((k, v) for k, v in kwargs.items() if k in self.static_argnames))
        try:
            hash((stat, stat_kw))
        except TypeError as e:
            raise TypeError(f"jit: static arguments must be hashable ({e})") from None
        return dyn_args, dyn_kw, stat, stat_kw

    def _trace(self, args, kwargs):
        dyn_args, dyn_kw, stat, stat_kw = self._split(args, kwargs)
        n = len(args)

        def f(*a, **kw):
            full, it = [], iter(a)
            sd = dict(stat)
            for i in range(n):
                full.append(sd[i] if i in sd else next(it))
            return self.fun(*full, **kw, **dict(stat_kw))

        leaves, in_tree = tree_flatten((dyn_args, dyn_kw))
        return f, leaves, in_tree, (stat, stat_kw)

    def __call__(self, *args, **kwargs):
        if not kwargs and not self.static_argnums and not tracing._state.stack:
            # the dispatch fast paths. GPU arrays committed to one device: one look at each
            # (gpu_signature), one lookup, the kernels (about 10 us on an H100 host in all)
            if _pl.GPU_IN_USE and self.backend != "cpu":
                sig = _pl.gpu_signature(args)
                hit = self._gpu_calls.get(sig) if sig is not None else None
                if hit is not None:
                    self.last_key = hit[2]
                    outs = hit[0].call_arrays(args)
                    return outs[0] if hit[1] is None else tree_unflatten(hit[1], outs)
            # host Arrays (committed to the CPU, so no placement to decide): one lookup by their
            # avals, then the compiled program (about 1.3 us in all on a 2-core VM)
            hit = self._cpu_calls.get(tuple([a.aval if type(a) is Array else None
                                             for a in args]))
            # (0-d Arrays alone have no device: the call goes to the default device, the CPU
            # for certain only while this process has no GPU)
            if hit is not None and (hit[3] or not _pl.GPU_IN_USE):
                self.last_key = hit[2]
                outs = hit[0].run_arrays(args)
                return outs[0] if hit[1] is None else tree_unflatten(hit[1], outs)
            # else flatten, look up, run (where the arguments are: that takes a look at each
            # argument only once this process has a GPU)
            if all(type(a) is Array for a in args):  # no pytree to flatten: skip optree
                leaves = list(args)
                in_tree = self._flat_trees.get(len(args))
                if in_tree is None:
                    in_tree = self._flat_trees[len(args)] = optree.tree_structure(
                        (args, {}), none_is_leaf=False, namespace=tracing.PYTREE_NAMESPACE)
            else:
                leaves, in_tree = optree.tree_flatten((args, {}), none_is_leaf=False,
                                                      namespace=tracing.PYTREE_NAMESPACE)
            try:
                place = _placement(leaves, self.backend, self._what) if _pl.GPU_IN_USE \
                    else self.backend or "cpu"
                key = (in_tree, tuple([x.aval for x in leaves]), ((), ()), place,
                       None if place == "cpu" else _pl.matmul_precision())
                entry = self.cache.get(key)
            except AttributeError:
                entry = None
            if entry is not None:
                self.last_key = key
                self._note_gpu_call(args, entry, key)
                self._note_cpu_call(args, entry, key)
                return tree_unflatten(entry[1], entry[0](leaves))
        f, leaves, in_tree, statics = self._trace(args, kwargs)
        if any(isinstance(x, Tracer) for x in leaves) or tracing.is_tracing():
            closed, _, out_tree, _ = tracing.trace_pytree(f, *tree_unflatten(in_tree, leaves))
            return tree_unflatten(out_tree, eval_jaxpr(closed.jaxpr, closed.consts, *leaves))
        place = _placement(leaves, self.backend, self._what)
        key = (in_tree, tuple(get_aval(x) for x in leaves), statics, place,
               None if place == "cpu" else _pl.matmul_precision())
        entry = self.cache.get(key)
        if entry is None:
            _log(f"compiling {getattr(self.fun, '__name__', 'function')} for {place}: "
                 f"{_describe_change(self.last_key, key)}")
            entry = self._compile(f, leaves, in_tree, place)
            self.cache[key] = entry
        self.last_key = key
        if not kwargs and not self.static_argnums:
            self._note_gpu_call(args, entry, key)
            self._note_cpu_call(args, entry, key)
        exe, out_tree = entry
        return tree_unflatten(out_tree, exe(leaves))

    def _note_gpu_call(self, args, entry, key):
        """Remember ``entry`` for the fast path when ``args`` are GPU arrays on one device."""
        if key[3] == "cpu" or key[2] != ((), ()):
            return
        sig = _pl.gpu_signature(args)
        if sig is not None and sig not in self._gpu_calls:
            exe, out_tree = entry
            self._gpu_calls[sig] = (exe, None if out_tree.is_leaf() else out_tree, key)

    def _note_cpu_call(self, args, entry, key):
        """Remember ``entry`` for the fast path when ``args`` are all host Arrays (at least one:
        a call without arguments runs on the default device, which may change; so does a call
        with 0-d Arrays alone, which the fast path takes only while no GPU is in use)."""
        if args and key[3] == "cpu" and key[2] == ((), ()) and hasattr(entry[0], "run_arrays") \
                and all(type(a) is Array for a in args):
            exe, out_tree = entry
            sig = tuple([a.aval for a in args])
            if sig not in self._cpu_calls:
                committed = any(a.shape for a in sig)  # (placement._classify)
                self._cpu_calls[sig] = (exe, None if out_tree.is_leaf() else out_tree, key,
                                        committed)

    def _compile(self, f, leaves, in_tree, place="cpu"):
        closed, out_tree = self._final_jaxpr(f, leaves, in_tree, place)
        if place == "cpu":
            return compile_jaxpr(closed, "cpu"), out_tree
        exe = compile_jaxpr(closed, "triton")
        return _pl.DeviceExecutable(exe, closed.out_avals, place), out_tree

    def _final_jaxpr(self, f, leaves, in_tree, place):
        a, kw = tree_unflatten(in_tree, leaves)
        closed, _, out_tree, _ = tracing.trace_pytree(f, a, kw)
        _pl.check_consts(closed.consts, _pl.CPU if place == "cpu" else place,
                              self._what)
        return passes.divide_by_reciprocals(passes.simplify(closed)), out_tree

    def lower(self, *args, **kwargs) -> Lowered:
        f, leaves, in_tree, _ = self._trace(args, kwargs)
        place = _placement(leaves, self.backend, self._what)
        closed, _ = self._final_jaxpr(f, leaves, in_tree, place)
        return Lowered(closed, compile_jaxpr(closed, "cpu" if place == "cpu" else "triton"))


def jit(fun=None, *, static_argnums=(), static_argnames=(), backend=None):
    """Compile ``fun`` to fused kernels (JAX's ``jit``); usable as a decorator.

    The program runs where its arguments live: C++ kernels on the CPU, Triton kernels on a GPU
    (the outputs are then GPU arrays on that device). Arguments committed to different devices
    are an error; arguments without a device (Python scalars) go with the others, and a call
    with none runs on the default device (see ``functx.placement``).

    Arguments:
      fun: a function of pytrees of arrays.
      static_argnums / static_argnames: arguments treated as compile-time constants.
      backend: None (follow the arguments), or "cpu" / "triton" to insist on the CPU or a GPU:
        arguments elsewhere are then an error.
    Example:
      >>> f = functx.jit(lambda x: functx.numpy.tanh(x) * 2.0)
      >>> print(f.lower(np.ones(4, np.float32)).as_text())
    """
    if fun is None:
        return functools.partial(jit, static_argnums=static_argnums,
                                 static_argnames=static_argnames, backend=backend)
    return Jitted(fun, static_argnums, static_argnames, backend)
