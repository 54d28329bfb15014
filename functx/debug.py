"""``functx.debug``: printing and callbacks on runtime values, inside ``jit``, ``vmap``, ``grad``
and control flow (JAX's ``jax.debug``).

Each call records a ``debug_callback`` equation (``functx/control/callbacks.py``): eagerly it
runs at once; under ``jit`` the compiled program calls it as a host step, in program order, with
the values the program computed; under ``vmap`` it runs once per example; under ``grad`` it
prints the forward pass's values once.
"""

from __future__ import annotations

import copy
import logging
import string
import sys

import numpy as np

from functx import tree_util
from functx.array import Array
from functx.control.callbacks import debug_callback
from functx.errors import (
    FunctxTypeError,
    FunctxValueError,
    UnsupportedError,
    missing_name_hook as _missing_name_hook,
)
from functx.source_info import current

_logger = logging.getLogger(__name__)


def callback(callback=None, *args, ordered=False, partitioned=False, **kwargs):
    """Call ``callback(*args, **kwargs)`` on the runtime values of ``args`` (JAX's
    ``jax.debug.callback``), for its side effects; its result is ignored. Leaves of ``args`` that
    are not arrays (strings, None, ...) reach ``callback`` as they are.

    Arguments:
      callback: a Python function; it receives functx Arrays in the pytrees of ``args``. With
        ``callback=None`` (the two-call form), returns a function taking ``(callback, *args,
        **kwargs)`` with these options.
      *args, **kwargs: pytrees of arrays (traced or concrete).
      ordered: accepted for JAX's signature; functx runs callbacks in program order always.
      partitioned: accepted for JAX's signature (one device).
    Returns:
      None (or, in the two-call form, the function described above).

    Differences from JAX: runs in program order always (``ordered=`` and ``partitioned=`` are
    accepted); under ``jit`` it is a host step between kernels, and a Triton program with one never
    replays a CUDA graph.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> def f(x):
      ...     functx.debug.callback(lambda v: print("got", v), x * 2)
      ...     return x + 1
      >>> _ = functx.jit(f)(np.float32(1.5))
      got 3.0
    """
    if callback is None:
        if args or kwargs:
            raise FunctxTypeError(
                f"debug_callback received unexpected arguments in the two-call form: "
                f"args={args} kwargs={kwargs}"
            )
        return lambda cb, *a, **kw: debug_callback(
            cb, *a, ordered=ordered, partitioned=partitioned, **kw
        )
    debug_callback(callback, *args, ordered=ordered, partitioned=partitioned, **kwargs)
    return None


class _FormatCheck(string.Formatter):
    """Formats nothing; raises (JAX's ValueError) for arguments the format string leaves
    unused, and (str.format's KeyError/IndexError) for fields without an argument."""

    def format_field(self, value, format_spec):
        return ""

    def check_unused_args(self, used_args, args, kwargs):
        unused = [a for i, a in enumerate(args) if i not in used_args]
        if unused:
            raise FunctxValueError(f"Unused positional arguments to `jax.debug.print`: {unused}")
        unused_kw = [k for k in kwargs if k not in used_args]
        if unused_kw:
            raise FunctxValueError(
                f"Unused keyword arguments to `jax.debug.print`: {unused_kw}. You may be "
                'passing an f-string (i.e, `f"{x}"`) into `jax.debug.print` and instead '
                "should pass in a regular string."
            )


def print(  # noqa: A001
    fmt=None,
    *args,
    ordered=False,
    partitioned=False,
    skip_format_check=False,
    _use_logging=False,
    **kwargs,
):
    """Print ``fmt.format(*args, **kwargs)`` with the runtime values of the arrays (JAX's
    ``jax.debug.print``): from compiled code under ``jit``, once per example under ``vmap``,
    the forward values under ``grad``, every iteration inside ``scan``/``while_loop``. NumPy's
    print options are those in force at the call.

    Arguments:
      fmt: a ``str.format`` format string (not an f-string); one without placeholders is
        followed by the arguments, space-separated. With ``fmt=None`` (the two-call form),
        returns a function taking ``(fmt, *args, **kwargs)`` with these options.
      *args, **kwargs: pytrees of arrays (or other objects) to format.
      ordered: accepted for JAX's signature; functx prints in program order always.
      partitioned: accepted for JAX's signature (one device).
      skip_format_check: do not check that the arguments match the format string.
    Returns:
      None (or, in the two-call form, the function described above).

    Differences from JAX: runs in program order always (``ordered=`` and ``partitioned=`` are
    accepted); under ``jit`` it is a host step between kernels, and a Triton program with one never
    replays a CUDA graph.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> @functx.jit
      ... def f(x):
      ...     functx.debug.print("x = {}", x)
      ...     return x * 2
      >>> _ = f(np.arange(3.0, dtype=np.float32))
      x = [0. 1. 2.]
    """

    def print_(fmt, *args, **kwargs):
        if not skip_format_check:
            _FormatCheck().format(fmt, *args, **kwargs)
        placeholders = bool(fmt) and next(iter(string.Formatter().parse(fmt)))[1] is not None
        options = np.get_printoptions()
        record = None
        if _use_logging:  # a record naming the user's line, sent when the values are known
            src = current()
            record = _logger.makeRecord(
                _logger.name,
                logging.INFO,
                src.file if src else "(unknown file)",
                src.line if src else 0,
                "",
                (),
                None,
            )

        def debug_print(*a, **kw):
            with np.printoptions(**options):
                if placeholders:
                    msg = fmt.format(*a, **kw)
                else:
                    msg = " ".join((fmt, *(str(x) for x in a)))
            if record is None:
                sys.stdout.write(msg + "\n")
            else:
                r = copy.copy(record)
                r.msg = msg
                _logger.handle(r)

        debug_callback(debug_print, *args, ordered=ordered, partitioned=partitioned, **kwargs)

    if fmt is not None:
        print_(fmt, *args, **kwargs)
        return None
    if args or kwargs:
        raise FunctxTypeError(
            f"debug_print received unexpected arguments in the two-call form: "
            f"args={args} kwargs={kwargs}"
        )
    return print_


def log(fmt=None, *args, ordered=False, partitioned=False, skip_format_check=False, **kwargs):
    """``print``'s message sent to the logger ``functx.debug`` at level INFO instead of standard
    output, with the caller's file and line (JAX's ``jax.debug.log``).

    Arguments:
      fmt, *args, **kwargs, ordered, partitioned, skip_format_check: as ``print``'s.
    Returns:
      None (or, with ``fmt=None``, the two-call form's function).
    Example:
      >>> import numpy as np
      >>> import functx
      >>> import logging
      >>> logging.getLogger("functx.debug").setLevel(logging.INFO)
      >>> functx.debug.log("x = {}", np.float32(2.0))  # (to the logger's handlers)
    """
    return print(
        fmt,
        *args,
        ordered=ordered,
        partitioned=partitioned,
        skip_format_check=skip_format_check,
        _use_logging=True,
        **kwargs,
    )


_BREAKPOINT_BACKENDS = (None, "cli")


def breakpoint(  # noqa: A001 - JAX's name
    *,
    backend=None,
    filter_frames: bool = True,
    num_frames=None,
    ordered: bool = False,
    token=None,
    **kwargs,
):
    """Stop in Python's debugger (``pdb``) when the program reaches this point, with the local
    variables of the function that called it, their arrays holding the runtime values (JAX's
    ``jax.debug.breakpoint``). Under ``jit`` the compiled program stops there (a host step,
    through ``functx.debug.callback``'s machinery); under ``vmap`` once per example; eagerly at
    once. ``c`` (continue) resumes the program; ``p name`` prints a variable.

    Arguments:
      backend: None or "cli" (the command-line debugger); another name is a ValueError.
      filter_frames, num_frames: accepted for JAX's signature (one frame is shown: the caller's).
      ordered: accepted for JAX's signature (debug callbacks run in program order).
      token: returned as given.
      **kwargs: accepted for JAX's signature.
    Returns:
      ``token``.

    Differences from JAX: the debugger is ``pdb`` over the calling frame's variables (JAX's has
    its own commands and walks up the traced frames).

    Example:
      >>> import io, sys, functx, functx.numpy as jnp
      >>> def f(x):
      ...     y = x * 2.0
      ...     functx.debug.breakpoint()
      ...     return y + 1.0
      >>> sys.stdin = io.StringIO("p y\\nc\\n")  # (what a user would type)
      >>> functx.jit(f)(jnp.float32(3.0))
      > ...
      (Pdb) Array(6., dtype=float32)
      (Pdb) Array(7., dtype=float32)
      >>> sys.stdin = sys.__stdin__
    """
    del filter_frames, ordered, kwargs
    if backend not in _BREAKPOINT_BACKENDS:
        raise FunctxValueError(
            f"debug.breakpoint: backend must be None or 'cli' (functx's debugger is pdb), not "
            f"{backend!r}"
        )
    if num_frames is not None and (isinstance(num_frames, bool) or not isinstance(num_frames, int)):
        raise FunctxTypeError(
            f"debug.breakpoint: num_frames must be None or an int, not {type(num_frames).__name__}"
        )
    frame = sys._getframe(1)
    leaves, tree = tree_util.tree_flatten(dict(frame.f_locals))
    arrays = [i for i, x in enumerate(leaves) if isinstance(x, (Array, np.ndarray))]
    where_ = f"{frame.f_code.co_filename}:{frame.f_lineno} ({frame.f_code.co_name})"
    env_globals = dict(frame.f_globals)

    def stop(*values):
        full = list(leaves)
        for i, v in zip(arrays, values):
            full[i] = v
        _debugger(env_globals, tree_util.tree_unflatten(tree, full), where_)

    debug_callback(stop, *[leaves[i] for i in arrays])
    return token


def _debugger(env_globals: dict, env_locals: dict, where_: str) -> None:
    """``pdb`` at a frame whose variables are ``env_locals`` (a statement run with them as its
    locals leaves that frame): the debugger's command loop on it, without tracing, so that
    nothing of pdb stays installed after ``c``."""
    import pdb  # (only when a breakpoint is reached: not at `import functx`)

    code = compile("__functx_frame__ = _getframe()\n", f"<breakpoint at {where_}>", "exec")
    exec(code, dict(env_globals, _getframe=sys._getframe), env_locals)
    frame = env_locals.pop("__functx_frame__")
    debugger = pdb.Pdb(stdin=sys.stdin, stdout=sys.stdout)
    debugger.reset()
    debugger.interaction(frame, None)


# --- shardings -----------------------------------------------------------------------------------
# What a higher module registers at import (``functx._toplevel``: this module may not import
# functx.sharding): "of" -> fn(array or tracer) -> the array's Sharding.
sharding_rules: dict = {}


def inspect_array_sharding(value, *, callback):
    """Call ``callback(sharding)`` with the sharding of each array of the pytree ``value``
    (``jax.debug.inspect_array_sharding``). Eagerly it is called at once with the array's
    ``SingleDeviceSharding``; under ``jit`` it is called when the function is traced (JAX calls
    it when the program is compiled), with the ``SingleDeviceSharding`` of the device the
    program will run on by default: functx's programs run on one device, and their values are
    never split across devices.

    Arguments:
      value: a pytree of arrays (traced or concrete).
      callback: a function of a ``functx.sharding.Sharding``; its result is ignored.
    Returns:
      None.

    Differences from JAX: under ``jit`` the sharding is a ``SingleDeviceSharding`` (JAX's is
    the compiler's, ``GSPMDSharding({replicated})`` on one device), given at trace time.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> functx.debug.inspect_array_sharding(jnp.ones(3), callback=print)
      SingleDeviceSharding(device=CpuDevice(id=0), memory_kind=device)
    """
    if not callable(callback):
        raise FunctxTypeError(
            f"inspect_array_sharding: callback must be callable, not {callback!r}"
        )
    for leaf in tree_util.tree_leaves(value):
        callback(sharding_rules["of"](leaf))


def _box(entry: str, width: int, height: int) -> str:
    """A box drawn with line characters, ``width`` columns wide (borders included) and
    ``height`` lines inside, ``entry`` in its middle."""
    inner = width - 2
    top = max((height - 2) // 2, 0)
    bottom = max(height - 2 - (height - 2) // 2, 0)
    left = max((inner - len(entry)) // 2, 0)
    blank = f"│{' ' * inner}│"
    lines = [f"┌{'─' * inner}┐", *[blank] * top]
    lines.append(f"│{' ' * left}{entry}{' ' * max(inner - left - len(entry), 0)}│")
    lines += [*[blank] * bottom, f"└{'─' * inner}┘"]
    return "\n".join(lines)


def visualize_sharding(
    shape,
    sharding,
    *,
    use_color: bool = True,
    scale: float = 1.0,
    min_width: int = 9,
    max_width: int = 80,
    color_map=None,
):
    """Print how an array of ``shape`` is laid out by ``sharding`` across devices, as a box per
    piece labelled with its devices (``jax.debug.visualize_sharding``), drawn as JAX draws it
    without colour: a 2-D array's box is about ``10 * scale`` lines high and as wide as its
    aspect ratio makes it (2.5 columns a line), a 1-D array's one line high, each between
    ``min_width`` and ``max_width`` columns. functx's shardings put the whole array on one
    device (or replicate it), so there is one box, naming every device that holds it.

    Arguments:
      shape: the array's shape (one or two dimensions; another rank is a ValueError).
      sharding: a ``functx.sharding`` Sharding.
      use_color: accepted; functx draws without colour.
      scale: the height of a 2-D box in tens of lines.
      min_width, max_width: the bounds of a box's width, in columns.
      color_map: accepted; functx draws without colour.
    Returns:
      None (the boxes are printed).

    Differences from JAX: no colours (and no ``rich`` needed); a sharding that splits the array
    across devices (which functx never makes) raises ``NotImplementedError``.

    Example:
      >>> import functx
      >>> from functx.sharding import SingleDeviceSharding
      >>> x = functx.numpy.ones(8)
      >>> functx.debug.visualize_sharding(x.shape, SingleDeviceSharding(x.device))
      ┌───────┐
      │ CPU 0 │
      └───────┘
    """
    del use_color, color_map
    shape = tuple(shape)
    if len(shape) not in (1, 2):
        raise FunctxValueError(
            "`visualize_sharding` only works for shapes with 1 and 2 dimensions."
        )
    pieces = sharding.devices_indices_map(shape)
    whole = tuple(slice(None) for _ in shape)
    if any(tuple(idx) != whole for idx in pieces.values()):
        raise UnsupportedError(
            "visualize_sharding: the sharding splits the array across devices; functx draws "
            "only shardings that keep the whole array on each device"
        )
    devices = sorted(pieces, key=lambda d: d.id)
    entry = f"{devices[0].platform.upper()} " + ",".join(str(d.id) for d in devices)
    base_height = int(10 * scale)
    aspect = (shape[1] if len(shape) == 2 else 1) / shape[0]
    width = min(max(int(int(base_height * aspect) * 2.5), min_width), max_width)
    height = base_height if len(shape) == 2 else 1
    sys.stdout.write(_box(entry, width, height) + "\n")


def visualize_array_sharding(arr, **kwargs):
    """Print how ``arr`` is laid out across devices (``jax.debug.visualize_array_sharding``):
    ``visualize_sharding(arr.shape, <arr's sharding>, **kwargs)``.

    Arguments:
      arr: an array (one or two dimensions).
      **kwargs: ``visualize_sharding``'s options.
    Returns:
      None (the box is printed).

    Differences from JAX: as ``visualize_sharding``'s (no colours).

    Example:
      >>> import functx
      >>> functx.debug.visualize_array_sharding(functx.numpy.ones((2, 6)), scale=0.3)
      ┌────────────────────┐
      │       CPU 0        │
      │                    │
      └────────────────────┘
    """

    def draw(sharding):
        visualize_sharding(arr.shape, sharding, **kwargs)

    inspect_array_sharding(arr, callback=draw)


class DebugEffect:
    """The effect of an unordered debug callback (JAX's ``jax.debug.DebugEffect``, an effect
    class). functx names an equation's effects by its effectful primitives
    (``eqn.effects == {"debug_callback"}``) and runs every debug callback in program order, so
    this class exists for code that names it; functx attaches no instances to equations.

    Example:
      >>> import functx
      >>> issubclass(functx.debug.OrderedDebugEffect, functx.debug.DebugEffect)
      False
    """


class OrderedDebugEffect:
    """The effect of an ordered debug callback (``ordered=True``; JAX's
    ``jax.debug.OrderedDebugEffect``). As ``DebugEffect``: functx names effects by primitive and
    orders every debug callback, so no instances are attached to equations.

    Example:
      >>> import functx
      >>> functx.debug.OrderedDebugEffect.__name__
      'OrderedDebugEffect'
    """


__all__ = [
    "DebugEffect",
    "OrderedDebugEffect",
    "breakpoint",
    "callback",
    "inspect_array_sharding",
    "log",
    "print",
    "visualize_array_sharding",
    "visualize_sharding",
]

# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)
