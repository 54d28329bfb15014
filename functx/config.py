"""``functx.config``: the environment variables functx reads, the default-device and
matmul-precision state, and ``functx.config.update``. A leaf: it imports only ``functx.errors``.

Environment variables (each read where noted; the functions here read them at every call, so a
test may change one with ``monkeypatch.setenv``):

==================================  ==============================================================
``FUNCTX_DEFAULT_DEVICE``           the default device (``cpu``, ``gpu``, ``gpu:1``): read once,
                                    on first use (``default_device_spec``); a non-CPU value makes
                                    ``default_off_cpu()`` true from import on
``FUNCTX_DEFAULT_MATMUL_PRECISION`` the default float32 matmul precision: read once, at import
``FUNCTX_JIT_CACHE_SIZE``           programs each jitted function keeps (``jit_cache_size``)
``FUNCTX_OUTPUT_POOL_MB``           bound of the GPU output pool (``output_pool_mb``)
``FUNCTX_COMPILE_TIMEOUT``          seconds one C++ compiler run may take (``compile_timeout``)
``FUNCTX_CACHE_LOCK_TIMEOUT``       seconds to wait for another process's compile
                                    (``cache_lock_timeout``)
``FUNCTX_CACHE_DIR``                the compile cache (``cache_dir_setting``; else
                                    ``$XDG_CACHE_HOME/functx`` or ``~/.cache/functx``)
``FUNCTX_LOG_COMPILES``             print a line per compile to stderr (``log_compiles``)
``FUNCTX_TRITON_DIRECT``            launch Triton kernels without Triton's launcher
                                    (``triton_direct``, default on)
``FUNCTX_TRITON_PRECOMPILE``        compile a program's Triton kernels in parallel before its
                                    first run on a GPU (``triton_precompile``, default on)
``FUNCTX_CUDA_GRAPHS``              "auto" (default), on or off (``cuda_graphs_mode``)
``FUNCTX_DEVICE_LOOPS``             small scans and while loops as one Triton kernel each
                                    (``device_loops``, default on)
``FUNCTX_DEVLOOP_WARPS``            the warps of those kernels (``devloop_warps``; default: by
                                    the size of their values)
``TRITON_INTERPRET``                Triton's CPU interpreter; with no CUDA it also makes the
                                    stand-in GPU device (``triton_interpret``)
``TRITON_CACHE_DIR``                Triton's kernel cache: one the user set wins over functx's
                                    (read and set by ``functx.lowering.cache``)
``CXX``                             the C++ compiler (read by ``functx.lowering.cache``)
``OMP_WAIT_POLICY``                 set to PASSIVE unless given (by ``functx.lowering.runtime``)
``GOMP_SPINCOUNT``                  set to a short spin when the load average is below the CPU
                                    count, unless given or ``OMP_WAIT_POLICY=ACTIVE`` is
                                    (``runtime.omp_wait_settings``)
``JAX_ENABLE_X64``                  JAX's name: the initial ``jax_enable_x64`` (read at import)
==================================  ==============================================================

The default device: the innermost ``with functx.default_device(d):`` of this thread, else
``functx.config.update("functx_default_device", d)``, else ``FUNCTX_DEFAULT_DEVICE``, else the
CPU. This module keeps the first two as opaque device objects (it does not import
``functx.devices``, which makes and checks them: it registers the check in ``checkers``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading

from functx.errors import FunctxError, FunctxTypeError, FunctxValueError, UnsupportedError


# --- environment knobs ---------------------------------------------------------------------------
def _flag(name: str, default: str) -> bool:
    return os.environ.get(name, default) not in ("", "0")


def default_device_spec() -> str:
    """``FUNCTX_DEFAULT_DEVICE``, stripped ("" when unset)."""
    return os.environ.get("FUNCTX_DEFAULT_DEVICE", "").strip()


DEFAULT_JIT_CACHE_SIZE = 1024


def jit_cache_size() -> int:
    """How many compiled programs each jitted function keeps (``FUNCTX_JIT_CACHE_SIZE``, default
    1024; least recently used go first)."""
    raw = os.environ.get("FUNCTX_JIT_CACHE_SIZE", "").strip()
    if not raw:
        return DEFAULT_JIT_CACHE_SIZE
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise FunctxValueError(f"FUNCTX_JIT_CACHE_SIZE must be a positive integer, not {raw!r}")
    return n


def output_pool_mb(default: float) -> float:
    """``FUNCTX_OUTPUT_POOL_MB`` as a number of MiB; ``default`` when unset or not a number."""
    raw = os.environ.get("FUNCTX_OUTPUT_POOL_MB", "")
    try:
        return float(raw) if raw else default
    except ValueError:
        return default


def seconds(name: str, default: float) -> float:
    """A positive number of seconds from the environment variable ``name`` (``default`` when
    unset; capped at 1e6, so ``inf`` means no limit)."""
    raw = os.environ.get(name, "")
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise FunctxValueError(f"{name}={raw!r}: expected a positive number of seconds")
    return min(value, 1e6)  # (inf: no limit; poll() overflows past 24 days)


def compile_timeout() -> float:
    """Seconds one compiler run may take (``FUNCTX_COMPILE_TIMEOUT``, default 600)."""
    return seconds("FUNCTX_COMPILE_TIMEOUT", 600.0)


def cache_lock_timeout() -> float:
    """Seconds to wait for another process compiling the same program
    (``FUNCTX_CACHE_LOCK_TIMEOUT``, default 900)."""
    return seconds("FUNCTX_CACHE_LOCK_TIMEOUT", 900.0)


def cache_dir_setting() -> str:
    """The configured compile-cache directory: ``FUNCTX_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/functx``, else ``~/.cache/functx``."""
    return os.environ.get("FUNCTX_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "functx"
    )


def triton_interpret() -> bool:
    """Whether Triton runs kernels in its CPU interpreter (``TRITON_INTERPRET=1``)."""
    return _flag("TRITON_INTERPRET", "0")


def triton_direct() -> bool:
    """Whether Triton kernels may be launched directly (``FUNCTX_TRITON_DIRECT``, default 1)."""
    return _flag("FUNCTX_TRITON_DIRECT", "1")


def triton_precompile() -> bool:
    """Whether a program's Triton kernels are compiled in parallel before its first run on a GPU
    (``FUNCTX_TRITON_PRECOMPILE``, default 1; ``functx.lowering.triton.precompile``)."""
    return _flag("FUNCTX_TRITON_PRECOMPILE", "1")


def cuda_graphs_mode() -> str:
    """``FUNCTX_CUDA_GRAPHS``, lower-cased (default "auto")."""
    return os.environ.get("FUNCTX_CUDA_GRAPHS", "auto").lower()


def device_loops() -> bool:
    """Whether the Triton backend runs a scan or while loop with a small body as one kernel with
    the loop inside (``FUNCTX_DEVICE_LOOPS``, default 1; ``functx.lowering.triton.devloop``)."""
    return _flag("FUNCTX_DEVICE_LOOPS", "1")


def devloop_warps() -> int | None:
    """``FUNCTX_DEVLOOP_WARPS``: the warps of every device-loop kernel (a power of two up to 32);
    None when unset (the kernel's values choose)."""
    raw = os.environ.get("FUNCTX_DEVLOOP_WARPS", "").strip()
    if not raw:
        return None
    n = int(raw) if raw.isdigit() else 0
    if not 1 <= n <= 32 or n & (n - 1):
        raise FunctxValueError(f"FUNCTX_DEVLOOP_WARPS must be 1, 2, 4, 8, 16 or 32, not {raw!r}")
    return n


# --- the default device --------------------------------------------------------------------------
class _DefaultState(threading.local):
    def __init__(self):
        self.stack: list = []


_default_local = _DefaultState()
_global_default = None  # set by config.update; None: the environment's, else the CPU
# Whether the default device may be other than the CPU: set once a non-CPU device is made the
# default (or the environment names one), never cleared.
_off_cpu = default_device_spec().lower() not in ("", "cpu", "cpu:0")


def default_off_cpu() -> bool:
    """Whether the default device may be other than the CPU. While it is false, an eager
    operation with no committed operand runs on the host without asking for the default device
    (a non-CPU default set once, by ``FUNCTX_DEFAULT_DEVICE``, ``config.update`` or
    ``functx.default_device``, makes it true for the rest of the process)."""
    return _off_cpu


def _note_default(device) -> None:
    global _off_cpu
    if device is not None and device.platform != "cpu":
        _off_cpu = True


def default_device_setting():
    """The default device set in this process, or None when only the environment (or nothing)
    sets it: the innermost ``functx.default_device`` block of this thread that names a device,
    else ``config.update``'s setting."""
    stack = _default_local.stack
    if stack and stack[-1] is not None:
        return stack[-1]
    return _global_default


def push_default_device(device) -> None:
    """Enter a ``functx.default_device(device)`` block in this thread (``device`` checked by
    ``functx.devices``; None: the configured default)."""
    _note_default(device)
    _default_local.stack.append(device)


def pop_default_device() -> None:
    """Leave the innermost ``functx.default_device`` block of this thread."""
    _default_local.stack.pop()


# Checks of option values that need a higher module: "device" -> fn(value, what) -> Device,
# registered by functx.devices at import (it turns "gpu:1" into a device or raises).
checkers: dict = {}


def _check_device(value, what: str):
    check = checkers.get("device")
    if check is None:
        raise FunctxError(f"internal: {what} needs functx.devices, which is not imported")
    return check(value, what)


# --- the default precision of matrix products ----------------------------------------------------
# JAX's names. On a GPU, float32 products take TF32 (10-bit mantissa) inputs unless the precision
# is "highest"/"float32", as JAX does there; the CPU always computes in float32.
_PRECISIONS = {
    "default": "tensorfloat32",
    "fastest": "tensorfloat32",
    "bfloat16": "tensorfloat32",
    "high": "tensorfloat32",
    "tensorfloat32": "tensorfloat32",
    "highest": "float32",
    "float32": "float32",
}


class _PrecisionState(threading.local):
    def __init__(self):
        self.stack: list = []


_precision_local = _PrecisionState()
_global_precision = "tensorfloat32"  # config.update's setting, resolved


def check_precision(value, what: str) -> str:
    """The float32 product mode ("tensorfloat32" or "float32") a precision name stands for."""
    if value is None:
        return "tensorfloat32"
    name = value.lower() if isinstance(value, str) else value
    if name not in _PRECISIONS:
        raise ValueError(
            f"{what}: unknown matmul precision {value!r}; use one of "
            f"{', '.join(repr(k) for k in _PRECISIONS)} (or None)"
        )
    return _PRECISIONS[name]


if os.environ.get("FUNCTX_DEFAULT_MATMUL_PRECISION", "").strip():
    _global_precision = check_precision(
        os.environ["FUNCTX_DEFAULT_MATMUL_PRECISION"].strip(), "FUNCTX_DEFAULT_MATMUL_PRECISION"
    )


def matmul_precision() -> str:
    """How float32 matrix products run on a GPU here: "tensorfloat32" or "float32" (the innermost
    ``default_matmul_precision`` block, else ``config``'s setting)."""
    stack = _precision_local.stack
    return stack[-1] if stack else _global_precision


class default_matmul_precision(contextlib.ContextDecorator):
    """``with functx.default_matmul_precision("highest"):`` sets the precision of the float32
    matrix products (``@``, ``dot``, ``matmul``, ``einsum``, ``dot_general``) that run in the
    block, eagerly or under ``jit``, in this thread, like ``jax.default_matmul_precision``.

    On a GPU, JAX's default takes TF32 inputs (about 3 significant digits, with float32
    accumulation); "highest" or "float32" gives full float32. "default", "high", "bfloat16" and
    "tensorfloat32" all mean TF32 here (functx's GPU backend has those two modes). The CPU
    computes in float32 whatever the setting. ``jit`` compiles again when the setting changes.
    A product's own ``precision=`` argument (``functx.lax.Precision``) wins over the setting.
    Outside any block: ``functx.config.update("jax_default_matmul_precision", ...)``, else the
    environment's ``FUNCTX_DEFAULT_MATMUL_PRECISION``, else TF32.

    Arguments:
      precision: one of the strings above (or a ``functx.lax.Precision``).
    Returns:
      A context manager, also usable as a decorator.
    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> with functx.default_matmul_precision("highest"):
      ...     y = jnp.ones((2, 2)) @ jnp.ones(2)
      >>> y
      Array([2., 2.], dtype=float32)
    """

    def __init__(self, precision):
        self.mode = check_precision(precision, "functx.default_matmul_precision")

    def __enter__(self):
        _precision_local.stack.append(self.mode)

    def __exit__(self, *exc):
        _precision_local.stack.pop()


# --- numpy_rank_promotion / numpy_dtype_promotion ----------------------------------------------
class _PromotionSetting(contextlib.ContextDecorator):
    """A JAX promotion setting of which functx has only JAX's default behaviour: that value is
    accepted (a no-op block, also as a decorator), another valid one raises UnsupportedError when
    its block is entered, an invalid one ValueError at once."""

    name = ""
    default = ""
    values: tuple = ()

    def __init__(self, value):
        if value not in self.values:
            raise FunctxValueError(
                f"{self.name}: new enum value must be in {set(self.values)}, got {value!r}"
            )
        self.value = value

    def __enter__(self):
        if self.value != self.default:
            raise UnsupportedError(
                f"{self.name}({self.value!r}) is not supported: functx always behaves as JAX's "
                f"default {self.default!r}"
            )

    def __exit__(self, *exc):
        return False


class numpy_rank_promotion(_PromotionSetting):
    """``jax.numpy_rank_promotion(level)``: how ``functx.numpy`` treats operands of different
    ranks. functx always broadcasts them (JAX's default, ``"allow"``).

    Arguments:
      level: ``"allow"`` (the only behaviour functx has), ``"warn"`` or ``"raise"``.
    Returns:
      A context manager, also usable as a decorator. ``"warn"``/``"raise"`` raise
      ``UnsupportedError`` when the block is entered; another value raises ValueError.

    Example:
      >>> import functx
      >>> with functx.numpy_rank_promotion("allow"):
      ...     print(functx.numpy.ones((2, 3)) + functx.numpy.ones(3))
      [[2. 2. 2.]
       [2. 2. 2.]]
    """

    name = "numpy_rank_promotion"
    default = "allow"
    values = ("allow", "warn", "raise")


class numpy_dtype_promotion(_PromotionSetting):
    """``jax.numpy_dtype_promotion(kind)``: the type promotion rules of ``functx.numpy``.
    functx has JAX's default, ``"standard"``.

    Arguments:
      kind: ``"standard"`` (the only rules functx has) or ``"strict"``.
    Returns:
      A context manager, also usable as a decorator. ``"strict"`` raises ``UnsupportedError``
      when the block is entered; another value raises ValueError.

    Example:
      >>> import functx
      >>> with functx.numpy_dtype_promotion("standard"):
      ...     print((functx.numpy.ones(2, "int32") + 1.5).dtype)
      float32
    """

    name = "numpy_dtype_promotion"
    default = "standard"
    values = ("standard", "strict")


# --- disable_jit ---------------------------------------------------------------------------------
class _DisableJitState(threading.local):
    def __init__(self):
        self.stack: list = []


_disable_local = _DisableJitState()
_global_disable_jit = False  # config.update("jax_disable_jit", ...)
_disable_blocks = 0  # open disable_jit blocks in all threads
_disable_lock = threading.Lock()
# True while jit's dispatch must read the settings before its fast paths: while jit may be off, or
# NaN/inf checks may be on, anywhere (a setting, or a block in some thread). jit's dispatch reads
# this one attribute before anything else.
slow_dispatch = False
# True while NaN/inf checks or ``no_execution`` may be on anywhere; the functions in
# ``debug_checks_watchers`` are called with it when it changes (functx.tracing swaps its eager
# entry point, so that the eager path checks nothing while it is False)
debug_checks_active = False
debug_checks_watchers: list = []
_open_blocks: dict = {}  # setting -> open blocks in all threads, of the watched settings
# True while a setting that changes what tracing makes (``_JIT_KEYED``) may differ from its
# default somewhere: ``jit_key_flags`` then keys jit's programs on their values
jit_keyed = False


def jit_disabled() -> bool:
    """Whether ``jit`` runs functions eagerly here: the innermost ``disable_jit`` block of this
    thread, else ``functx.config.update("jax_disable_jit", ...)``'s setting (default False)."""
    stack = _disable_local.stack
    return stack[-1] if stack else _global_disable_jit


def _note_disable() -> None:
    """Recompute ``slow_dispatch``, ``debug_checks_active`` and ``jit_keyed`` (callers hold
    ``_disable_lock``)."""
    global slow_dispatch, debug_checks_active, jit_keyed
    checks = any(_open_blocks.get(s) or s.global_value for s in (*_CHECKS, no_execution))
    slow_dispatch = _global_disable_jit or _disable_blocks > 0 or checks
    jit_keyed = any(_open_blocks.get(s) or s.global_value != s.default for s in _JIT_KEYED)
    if checks != debug_checks_active:
        debug_checks_active = checks
        for watch in debug_checks_watchers:
            watch(checks)


class disable_jit:
    """``with functx.disable_jit():`` runs jitted functions eagerly in this thread, as JAX's
    ``jax.disable_jit``: a ``jit(f)`` called in the block calls ``f`` itself on its arguments
    (no trace, no compile, no cache), so Python side effects and prints in ``f`` run at every
    call and see concrete values. ``disable_jit(False)`` inside the block turns jit back on. The
    setting is per thread, as JAX's context managers are; outside any block,
    ``functx.config.update("jax_disable_jit", True)`` sets it for every thread. Also usable as a
    decorator. As in JAX, control flow runs in Python in the block: ``lax.scan`` (and
    ``fori_loop`` with concrete bounds) loops over the slices and stacks the outputs,
    ``while_loop`` loops while its condition is concrete, ``cond``/``switch`` with a concrete
    predicate call one branch.

    Arguments:
      disable: True (default) to run jitted functions eagerly, False to compile them again.
    Returns:
      a context manager.
    Example:
      >>> import functx
      >>> f = functx.jit(lambda x: print("called") or x + 1)
      >>> with functx.disable_jit():
      ...     _ = f(1.0)
      ...     _ = f(1.0)
      called
      called
    """

    def __init__(self, disable: bool = True):
        self.disable = bool(disable)

    def __enter__(self):
        global _disable_blocks
        _disable_local.stack.append(self.disable)
        with _disable_lock:
            _disable_blocks += 1
            _note_disable()

    def __exit__(self, *exc):
        global _disable_blocks
        _disable_local.stack.pop()
        with _disable_lock:
            _disable_blocks -= 1
            _note_disable()

    def __call__(self, fun):
        @functools.wraps(fun)
        def wrapped(*args, **kwargs):
            with disable_jit(self.disable):
                return fun(*args, **kwargs)

        return wrapped


# --- jax_enable_x64 ------------------------------------------------------------------------------
# Off by default, as in JAX: 64-bit inputs and dtype requests canonicalize to 32 bits and Python
# scalars are weak int32/float32; on, they stay 64-bit and the defaults are int64/float64. Set by
# ``update("jax_enable_x64", ...)``, by the ``JAX_ENABLE_X64`` environment variable (read once, at
# import) and, per thread, by ``functx.enable_x64(...)`` / ``functx.experimental.enable_x64()``
# blocks. ``dtypes`` reads it at every canonicalization and ``jit`` keys its programs on it.
_TRUE = ("y", "yes", "t", "true", "on", "1")
_FALSE = ("n", "no", "f", "false", "off", "0")


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    val = raw.strip().lower()
    if val in _TRUE:
        return True
    if val in _FALSE:
        return False
    raise ValueError(f"invalid truth value {raw!r} for environment {name!r}")


class _X64State(threading.local):
    def __init__(self):
        self.stack: list = []


_x64_local = _X64State()
_global_x64 = _env_bool("JAX_ENABLE_X64", False)
_x64_blocks = 0  # open x64 blocks in all threads: while 0, the global setting alone decides
_x64_lock = threading.Lock()


def x64_on() -> bool:
    """Whether 64-bit dtypes are enabled here (JAX's ``jax_enable_x64``): the innermost
    ``enable_x64`` block of this thread, else ``update("jax_enable_x64", ...)``'s setting, else
    the ``JAX_ENABLE_X64`` environment variable (default off).

    Returns:
      ``True`` or ``False``.

    Example:
      >>> from functx import config
      >>> config.x64_on()
      False
    """
    if _x64_blocks:
        stack = _x64_local.stack
        if stack:
            return stack[-1]
    return _global_x64


def push_x64(value: bool) -> None:
    """Enter a block of this thread in which ``jax_enable_x64`` is ``value``."""
    global _x64_blocks
    _x64_local.stack.append(bool(value))
    with _x64_lock:
        _x64_blocks += 1


def pop_x64() -> None:
    """Leave the innermost ``jax_enable_x64`` block of this thread."""
    global _x64_blocks
    _x64_local.stack.pop()
    with _x64_lock:
        _x64_blocks -= 1


class _BoolState:
    """A JAX-style configuration state, here ``functx.enable_x64`` (``jax.enable_x64`` in JAX
    0.10): ``.value`` reads it, ``with functx.enable_x64(True):`` sets it in a block of this
    thread (also usable as a decorator).

    Arguments:
      new_val: the value inside the block.

    Returns:
      a context manager.

    Differences from JAX: a 64-bit Array made while the flag was on and passed to ``jit`` after it
    is turned off keeps its dtype (JAX converts it).

    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> with functx.enable_x64(True):
      ...     print(jnp.arange(3).dtype, functx.enable_x64.value)
      int64 True
      >>> jnp.arange(3).dtype
      dtype('int32')
    """

    def __init__(self, name: str):
        self.name = name

    @property
    def value(self) -> bool:
        return x64_on()

    def __call__(self, new_val):
        return _X64Block(new_val)

    def __bool__(self):
        raise TypeError(
            f"bool() not supported for instances of type 'State' (did you mean to use "
            f"'functx.{self.name[4:]}.value' instead?)"
        )

    def __repr__(self):
        return f"State(name={self.name!r}, value={self.value})"


class _X64Block:
    def __init__(self, value):
        self.value = bool(value)

    def __enter__(self):
        push_x64(self.value)
        return self

    def __exit__(self, *exc):
        pop_x64()

    def __call__(self, fun):
        @functools.wraps(fun)
        def wrapped(*args, **kwargs):
            with _X64Block(self.value):
                return fun(*args, **kwargs)

        return wrapped


enable_x64 = _BoolState("jax_enable_x64")


# --- JAX's other settings: states with a value per thread -----------------------------------------
_NO_VALUE = object()  # (a block opened without a value)


class _SettingState(threading.local):
    def __init__(self):
        self.stack: list = []


class Setting:
    """One of JAX's ``jax.config`` options that functx keeps as a state: the innermost block of
    this thread (``with setting(value):``, also a decorator), else ``update(name, value)``'s
    value, else the default. ``values`` is None for a boolean option, else the allowed strings
    (None allowed too when ``optional``)."""

    def __init__(self, name: str, default, values=None, optional: bool = False, doc=None):
        if doc is not None:
            self.__doc__ = doc  # (a public state's own documentation)
        self.name = name
        self.default = default
        self.values = values
        self.optional = optional
        self.global_value = default
        self.watched = False  # (its blocks are counted: see _note_disable)
        self._local = _SettingState()

    def check(self, value):
        """``value`` as the setting stores it; ValueError for one outside its values."""
        if self.values is None:
            return bool(value)
        if value is None and self.optional:
            return None
        if value not in self.values:
            allowed = list(self.values)
            raise FunctxValueError(
                f"new enum value must be {'None or ' if self.optional else ''}in {allowed}, "
                f"got {value!r} of type {type(value)}."
            )
        return value

    @property
    def value(self):
        stack = self._local.stack
        return stack[-1] if stack else self.global_value

    def __call__(self, new_val=_NO_VALUE):
        if new_val is _NO_VALUE:  # (a block of a boolean option without a value turns it on)
            if self.values is not None:
                raise FunctxTypeError(
                    f"functx.{self.name.removeprefix('jax_')}() needs the new value of the "
                    f"option (one of {list(self.values)})"
                )
            new_val = True
        return _SettingBlock((self,), self.check(new_val))

    def __bool__(self):
        raise TypeError(
            f"bool() not supported for instances of type 'State' (did you mean to use "
            f"'functx.config.{self.name}' instead?)"
        )

    def __repr__(self):
        return f"State(name={self.name!r}, value={self.value!r})"


class _SettingBlock:
    """A block (or decorated function) in which ``settings`` have ``value`` in this thread."""

    def __init__(self, settings, value):
        self.settings = settings
        self.value = value

    def __enter__(self):
        for s in self.settings:
            s._local.stack.append(self.value)
        if self.settings[0].watched:
            _count_blocks(self.settings[0], 1)
        return self

    def __exit__(self, *exc):
        for s in self.settings:
            s._local.stack.pop()
        if self.settings[0].watched:
            _count_blocks(self.settings[0], -1)

    def __call__(self, fun):
        @functools.wraps(fun)
        def wrapped(*args, **kwargs):
            with _SettingBlock(self.settings, self.value):
                return fun(*args, **kwargs)

        return wrapped


_GUARD_VALUES = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
log_compiles_state = Setting("jax_log_compiles", False)
legacy_prng_key_state = Setting("jax_legacy_prng_key", "allow", ("allow", "warn", "error"))
transfer_guard_host_to_device_state = Setting(
    "jax_transfer_guard_host_to_device", None, _GUARD_VALUES, optional=True
)
transfer_guard_device_to_device_state = Setting(
    "jax_transfer_guard_device_to_device", None, _GUARD_VALUES, optional=True
)
transfer_guard_device_to_host_state = Setting(
    "jax_transfer_guard_device_to_host", None, _GUARD_VALUES, optional=True
)
_TRANSFER_GUARDS = (
    transfer_guard_host_to_device_state,
    transfer_guard_device_to_device_state,
    transfer_guard_device_to_host_state,
)


class _DebugCheck(Setting):
    """``functx.debug_nans`` and ``functx.debug_infs`` (JAX's ``jax.debug_nans`` /
    ``jax.debug_infs`` states, the options "jax_debug_nans" / "jax_debug_infs" of
    ``functx.config.update``, the ``JAX_DEBUG_NANS`` / ``JAX_DEBUG_INFS`` environment variables):
    while on, an operation run eagerly whose floating-point result holds a NaN (an infinity)
    raises ``FloatingPointError`` (``functx.errors.FunctxFloatingPointError``) naming the
    operation and the user's line; a jitted function whose outputs hold one runs again op by op
    (the function without ``jit``, as JAX does), so that the error names the first operation
    that makes one. ``.value`` reads the setting; ``with functx.debug_nans(True):`` sets it in a
    block of this thread (also a decorator). Off, nothing is checked: jit's dispatch reads one
    flag it read before, and the eager path is the unchecked one.

    Arguments:
      new_val: True (the default) or False, inside the block.
    Returns:
      a context manager, also usable as a decorator.

    Differences from JAX: a jitted function's outputs are checked, not each kernel's; the
    de-optimized run reports the first operation whose result has a NaN (inf), even where its
    operands had one; when that run makes none (the compiled program's arithmetic differed), the
    error says so and names the jitted function. A gradient computes only the forward values it
    uses, so a NaN in one it does not use is not made, nor reported (JAX reports it).

    Example:
      >>> import functx, functx.numpy as jnp
      >>> def f(x):
      ...     return jnp.log(x - 2.0)
      >>> with functx.debug_nans(True):
      ...     try:
      ...         functx.jit(f)(1.0)
      ...     except FloatingPointError as e:
      ...         print(str(e).split(" (at")[0])
      invalid value (nan) encountered in log
      >>> functx.debug_nans.value, functx.jit(f)(1.0)
      (False, Array(nan, dtype=float32, weak_type=True))
    """


def _count_blocks(setting: Setting, n: int) -> None:
    """Count the open blocks of a watched setting (in all threads), then recompute the flags."""
    with _disable_lock:
        _open_blocks[setting] = _open_blocks.get(setting, 0) + n
        _note_disable()


debug_nans = debug_nans_state = _DebugCheck("jax_debug_nans", _env_bool("JAX_DEBUG_NANS", False))
debug_infs = debug_infs_state = _DebugCheck("jax_debug_infs", _env_bool("JAX_DEBUG_INFS", False))
_CHECKS = (debug_nans_state, debug_infs_state)
check_tracer_leaks = Setting(
    "jax_check_tracer_leaks",
    _env_bool("JAX_CHECK_TRACER_LEAKS", False),
    doc="""``functx.check_tracer_leaks`` (JAX's ``jax.check_tracer_leaks`` state, the option
    "jax_check_tracer_leaks", the ``JAX_CHECK_TRACER_LEAKS`` environment variable): ``.value``
    reads it, ``with functx.check_tracer_leaks(True):`` sets it in a block of this thread.

    functx keeps the setting and scans for nothing when a transformation ends: a leaked tracer is
    reported where it is used (``UnexpectedTracerError``, naming where it was made), with the
    setting on or off (see ``functx.checking_leaks``).

    Arguments:
      new_val: True (the default) or False, inside the block.
    Returns:
      a context manager, also usable as a decorator.

    Differences from JAX: no scan when a transformation ends; the block runs unchanged.

    Example:
      >>> import functx
      >>> with functx.check_tracer_leaks(True):
      ...     print(functx.check_tracer_leaks.value, functx.grad(lambda x: x * x)(2.0))
      True 4.0
    """,
)
default_prng_impl = Setting(
    "jax_default_prng_impl",
    os.environ.get("JAX_DEFAULT_PRNG_IMPL", "threefry2x32"),
    ("threefry2x32",),
    doc="""``functx.default_prng_impl`` (JAX's ``jax.default_prng_impl`` state, the option
    "jax_default_prng_impl", the ``JAX_DEFAULT_PRNG_IMPL`` environment variable): the PRNG
    implementation of new keys. functx has one, JAX's default ``"threefry2x32"``, so that is the
    one value it takes: ``"rbg"`` and ``"unsafe_rbg"`` are a ValueError (they would draw other
    bits than JAX's).

    Arguments:
      new_val: ``"threefry2x32"``.
    Returns:
      a context manager, also usable as a decorator.

    Differences from JAX: ``"rbg"`` and ``"unsafe_rbg"`` are refused.

    Example:
      >>> import functx
      >>> with functx.default_prng_impl("threefry2x32"):
      ...     print(functx.random.key_impl(functx.random.key(0)))
      threefry2x32
      >>> functx.default_prng_impl.value
      'threefry2x32'
    """,
)
default_prng_impl.check(default_prng_impl.global_value)  # (the environment variable's value)


# --- JAX's other top-level switches (jax.enable_checks, jax.no_tracing, ...) ---------------------
_BOOL_ARGUMENTS = """Arguments:
      new_val: True (the default) or False, inside the block.
    Returns:
      a context manager, also usable as a decorator; ``.value`` reads the setting."""


def _switch(
    name: str, default, doc: str, values=None, optional: bool = False, option: str | None = None
) -> Setting:
    """A JAX state ``jax.<name>``, option ``jax_<name>`` (or ``option``), whose initial value a
    boolean one reads from the environment variable of the option's name in capitals, as JAX
    does; ``<arguments>`` in ``doc`` stands for a boolean state's Arguments and Returns."""
    option = option or f"jax_{name}"
    if values is None:
        default = _env_bool(option.upper(), default)
    return Setting(
        option, default, values, optional, doc=doc.replace("<arguments>", _BOOL_ARGUMENTS)
    )


enable_checks = _switch(
    "enable_checks",
    False,
    """``functx.enable_checks`` (``jax.enable_checks``, the option "jax_enable_checks"): while
    on, functx checks its own invariants as it works: every Jaxpr ``jit`` traces and transforms
    for a call is type-checked (``functx.typecheck_jaxpr``) before it is compiled, so a
    transformation that emits an ill-typed equation fails there (``JaxprTypeError``) instead of
    in the compiler. Slower; off by default.

    <arguments>

    Differences from JAX: JAX checks its internal Jaxprs at many more points.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> with functx.enable_checks(True):
      ...     print(functx.enable_checks.value, functx.jit(jnp.sin)(0.0))
      True 0.0
    """,
)
explain_cache_misses = _switch(
    "explain_cache_misses",
    False,
    """``functx.explain_cache_misses`` (``jax.explain_cache_misses``, the option
    "jax_explain_cache_misses"): while on, each time a ``jit``-compiled function has to trace
    again, a WARNING on the ``logging`` logger ``functx.jit`` says why, as JAX's does: the
    caller's line, the function and where it is defined, and what differs from the closest
    program it already has (an argument's shape or dtype, named by its path such as ``x`` or
    ``params['w']``, a static argument's value, the tree structure, ``jax_enable_x64``, the
    device), or that the function was never seen.

    <arguments>

    Differences from JAX: only ``jit``'s own cache explains its misses (functx has no other
    tracing cache), against the programs the function still keeps.

    Example:
      >>> import logging, functx, numpy as np
      >>> f = functx.jit(lambda x: x + 1)
      >>> with functx.explain_cache_misses(True):
      ...     _ = f(np.ones(2, np.float32))
      ...     _ = f(np.ones(3, np.float32))  # logs "different input types: * at x, ..."
      >>> functx.explain_cache_misses.value
      False
    """,
)
no_tracing = _switch(
    "no_tracing",
    False,
    """``functx.no_tracing`` (``jax.no_tracing``, the option "jax_no_tracing"): while on,
    tracing raises ``RuntimeError`` naming the function, as JAX's does: a ``jit``-compiled
    function called (or ``.trace``/``.lower``-ed) for a signature it has no program for, and
    ``make_jaxpr``. A way to assert that a loop runs on programs already compiled.

    <arguments>

    Differences from JAX: ``eval_shape``, ``grad``, ``vmap``, ``jvp`` and a ``jit`` called inside
    another trace still trace (JAX raises where they trace a function its tracing cache lacks).

    Example:
      >>> import functx, numpy as np
      >>> f = functx.jit(lambda x: x * 2)
      >>> _ = f(np.float32(1))
      >>> with functx.no_tracing(True):
      ...     print(f(np.float32(3)))
      ...     try:
      ...         f(np.ones(2, np.float32))
      ...     except RuntimeError as e:
      ...         print(str(e).split(" defined at ")[0])
      6.0
      re-tracing function <lambda>
    """,
)
no_execution = _switch(
    "no_execution",
    False,
    """``functx.no_execution`` (``jax.no_execution``, the option "jax_no_execution"): while
    on, running anything raises ``RuntimeError``: a ``jit``-compiled program, and an operation
    run eagerly; tracing (``make_jaxpr``, ``jit(f).lower``) still works, as in JAX.

    <arguments>
    Example:
      >>> import functx, functx.numpy as jnp, numpy as np
      >>> with functx.no_execution(True):
      ...     print(functx.make_jaxpr(jnp.sin)(np.float32(1)))
      ...     try:
      ...         functx.jit(jnp.sin)(np.float32(1))
      ...     except RuntimeError as e:
      ...         print(str(e).split(",")[0])
      { lambda ; a:f32[]. let b:f32[] = sin a in (b,) }
      functx tried to execute function jit(sin)
    """,
)
thread_guard = _switch(
    "thread_guard",
    False,
    """``functx.thread_guard`` (``jax.thread_guard``, the option "jax_thread_guard"): JAX
    raises when a multi-process operation is launched from another thread than the one that set
    the guard. functx runs one process (``process_count() == 1``) and has no multi-process
    operation, so the setting is kept and nothing can trip it.

    <arguments>

    Differences from JAX: no check: functx has no multi-process operations.

    Example:
      >>> import functx
      >>> with functx.thread_guard(True):
      ...     print(functx.thread_guard.value, functx.process_count())
      True 1
    """,
)
debug_key_reuse = _switch(
    "debug_key_reuse",
    False,
    """``functx.debug_key_reuse`` (``jax.debug_key_reuse``, the option "jax_debug_key_reuse"):
    while on, a typed key (``functx.random.key``) that is consumed twice raises
    ``functx.errors.KeyReuseError``, as JAX's check does. A sampler (``normal``, ``uniform``,
    ``bits``, ...) or ``split`` consumes its key; ``fold_in``, ``clone``, ``key_data`` and
    comparisons do not, and ``clone(key)`` is a fresh key. An element of a key array consumed
    through indexing (``keys[0]``) counts as consumed in the array. Checked eagerly and in code
    traced straight through (``jit``, ``vmap``, ``grad``, the branches of ``cond``), where the same
    key object is used twice; ``jit`` keys its programs on the setting.

    Not checked (JAX checks them): a key consumed outside a ``jit``-compiled function and passed
    to it (or consumed inside one and used after), and a key consumed once in the body of
    ``scan``/``fori_loop``/``while_loop`` that is carried unchanged, so that each iteration uses
    it again. Raw ``uint32`` keys (``PRNGKey``) are never checked, as in JAX.

    <arguments>

    Differences from JAX: the cases above are not checked.

    Example:
      >>> import functx
      >>> from functx import random
      >>> with functx.debug_key_reuse(True):
      ...     k = random.key(0)
      ...     x = random.normal(k)
      ...     try:
      ...         y = random.normal(k)
      ...     except functx.errors.KeyReuseError as e:
      ...         print(str(e).split(" (at")[0])
      Previously-consumed key passed to functx.random.normal
    """,
)
softmax_custom_jvp = _switch(
    "softmax_custom_jvp",
    False,
    """``functx.softmax_custom_jvp`` (``jax.softmax_custom_jvp``, the option
    "jax_softmax_custom_jvp"): which derivative ``nn.softmax`` has, as in JAX: off (the
    default), the derivative of its formula ``exp(x - max) / sum(exp(x - max))``; on, the rule
    ``y * (dx - sum(y * dx))`` (over ``where``'s entries), a ``custom_jvp`` that is itself
    differentiable (``hessian``). The values are the same; the gradients agree to rounding.
    ``jit`` keys its programs on the setting.

    <arguments>
    Example:
      >>> import functx, functx.numpy as jnp
      >>> with functx.softmax_custom_jvp(True):
      ...     g = functx.grad(lambda x: functx.nn.softmax(x)[0])(jnp.zeros(2))
      >>> g
      Array([ 0.25, -0.25], dtype=float32)
    """,
)
threefry_partitionable = _switch(
    "threefry_partitionable",
    True,
    """``functx.threefry_partitionable`` (``jax.threefry_partitionable``, the option
    "jax_threefry_partitionable"): which of JAX's two layouts of Threefry counters
    ``functx.random`` uses. On (JAX 0.10's default), each element of an array of bits hashes
    its own index; off, the old layout: the counters ``0 .. n-1`` are hashed in two halves and
    concatenated, and ``split`` hashes ``0 .. 2n-1``. Both give JAX's bits for the same key,
    eagerly and under ``jit`` (which keys its programs on the setting); ``fold_in`` is the same
    either way. Off, an array of more than ``2**32 - 1`` 32-bit words of bits raises
    ``NotImplementedError``.

    <arguments>
    Example:
      >>> import functx
      >>> from functx import random
      >>> with functx.threefry_partitionable(False):
      ...     print(random.bits(random.key(0), (3,)))
      [4146024105 1351547692 2718843009]
      >>> print(random.bits(random.key(0), (3,)))
      [4070199207 4202968722 1427181096]
    """,
)
enable_custom_prng = _switch(
    "enable_custom_prng",
    False,
    """``functx.enable_custom_prng`` (``jax.enable_custom_prng``, the option
    "jax_enable_custom_prng"): in JAX, a transitional switch under which ``jax.random``
    functions return typed keys even when given raw ``uint32`` keys, and warn about raw ones.
    functx keeps the setting; its ``functx.random`` returns the kind of key it was given, and has
    one PRNG implementation (Threefry).

    <arguments>

    Differences from JAX: on, raw keys still give raw keys, without a warning.

    Example:
      >>> import functx
      >>> with functx.enable_custom_prng(True):
      ...     print(functx.enable_custom_prng.value)
      True
    """,
)
allow_f16_reductions = _switch(
    "allow_f16_reductions",
    True,
    """``functx.allow_f16_reductions`` (``jax.allow_f16_reductions``, the option
    "jax_allow_f16_reductions"): off, ``lax.reduce_sum`` of a ``float16`` or ``bfloat16``
    operand over axes longer than 1 raises ``ValueError``, as JAX's does. ``functx.numpy.sum``
    and the other library functions add half-precision values in float32, so they are not
    affected (nor are JAX's). On by default.

    <arguments>
    Example:
      >>> import functx, functx.numpy as jnp
      >>> x = jnp.ones(3, jnp.float16)
      >>> with functx.allow_f16_reductions(False):
      ...     print(jnp.sum(x))
      ...     try:
      ...         functx.lax.reduce_sum(x, (0,))
      ...     except ValueError as e:
      ...         print(str(e).split(" (at")[0])
      3.0
      reduce_sum on operand f16[3] is not allowed when jax_allow_f16_reductions=False.
    """,
)
array_garbage_collection_guard = _switch(
    "array_garbage_collection_guard",
    None,
    """``functx.array_garbage_collection_guard`` (``jax.array_garbage_collection_guard``, the
    option "jax_array_garbage_collection_guard"): what JAX does when Python's cycle collector
    (rather than reference counting) frees an Array: ``"allow"`` (its default), ``"log"`` or
    ``"fatal"``. functx keeps the setting and does nothing more: its CPU arrays are NumPy
    memory, and its GPU arrays return their memory to a pool whichever way they are freed.

    Arguments:
      new_val: None, ``"allow"``, ``"log"`` or ``"fatal"`` (another value raises ValueError).
    Returns:
      a context manager, also usable as a decorator; ``.value`` reads the setting.

    Differences from JAX: no log and no fatal error for an array freed by the collector.

    Example:
      >>> import functx
      >>> with functx.array_garbage_collection_guard("log"):
      ...     print(functx.array_garbage_collection_guard.value)
      log
    """,
    values=("allow", "log", "fatal"),
    optional=True,
)
remove_size_one_mesh_axis_from_type = _switch(
    "remove_size_one_mesh_axis_from_type",
    False,
    """``functx.remove_size_one_mesh_axis_from_type`` (JAX's state of that name, the option
    "jax_remove_size_one_mesh_axis_from_type"): in JAX, drops mesh axes of size 1 from the
    sharding in an array's type. functx's array types carry no sharding (one device), so there
    is nothing to drop: the setting is kept and changes nothing.

    <arguments>
    Example:
      >>> import functx, functx.numpy as jnp
      >>> with functx.remove_size_one_mesh_axis_from_type(True):
      ...     print(functx.typeof(jnp.ones(2)))
      ShapedArray(float32[2])
    """,
)
# (the attribute of its option's name, ``functx.config.jax2tf_...``, is the value, as in JAX)
_jax2tf_associative_scan_reductions = _switch(
    "jax2tf_associative_scan_reductions",
    False,
    """``functx.jax2tf_associative_scan_reductions`` (JAX's state of that name, the option
    "jax2tf_associative_scan_reductions"): which lowering ``jax2tf`` gives cumulative sums,
    products, maxima and minima. functx has no ``jax2tf``; its ``cumsum``/``cumprod``/``cummax``/
    ``cummin`` are associative scans on every backend, so the setting is kept and changes
    nothing.

    <arguments>
    Example:
      >>> import functx, functx.numpy as jnp
      >>> with functx.jax2tf_associative_scan_reductions(True):
      ...     print(jnp.cumsum(jnp.arange(4)))
      [0 1 3 6]
    """,
    option="jax2tf_associative_scan_reductions",
)
auto_pcast = _switch(
    "auto_pcast",
    True,
    """``functx.auto_pcast`` (``jax.auto_pcast``, the option "jax_auto_pcast"): in JAX,
    whether simple operations inside ``shard_map`` insert ``pvary`` to match the
    varying-manual-axes types of their operands. functx's ``shard_map`` runs on one device and
    its types carry no varying axes, so the setting is kept and changes nothing.

    <arguments>
    Example:
      >>> import functx
      >>> with functx.auto_pcast(False):
      ...     print(functx.auto_pcast.value)
      False
    """,
)
# The settings that change what tracing makes: jit keys its programs on them while one may
# differ from its default (``jit_key_flags``)
# differ from its default (``jit_key_flags``); ``make_user_context`` adds its contexts
_JIT_KEYED = [threefry_partitionable, allow_f16_reductions, debug_key_reuse, softmax_custom_jvp]
for _s in (*_CHECKS, no_execution, *_JIT_KEYED):
    _s.watched = True
_SWITCHES = (
    enable_checks,
    explain_cache_misses,
    no_tracing,
    no_execution,
    thread_guard,
    debug_key_reuse,
    softmax_custom_jvp,
    threefry_partitionable,
    enable_custom_prng,
    allow_f16_reductions,
    array_garbage_collection_guard,
    remove_size_one_mesh_axis_from_type,
    _jax2tf_associative_scan_reductions,
    auto_pcast,
)


class _UserContext(Setting):
    """A context ``make_user_context`` made: any hashable value, ``jit``-keyed."""

    def check(self, value):
        return value

    def get_global(self):
        """The value outside any block."""
        return self.global_value

    def set_global(self, new_value) -> None:
        """Set the value outside any block."""
        self.global_value = new_value
        with _disable_lock:
            _note_disable()

    def __call__(self, new_value):
        return _SettingBlock((self,), new_value)


def make_user_context(default_value=None):
    """A context of the user's whose value ``jit`` keys its programs on
    (``jax.make_user_context``): a jitted function called while the value differs from the one
    it was traced with traces (and compiles) again, so a function that reads the value while it
    is traced sees the current one.

    Arguments:
      default_value: the value outside any block (hashable, as the values set later must be).
    Returns:
      the context: ``ctx(value)`` is a block (also a decorator) in which it has ``value`` in this
      thread; ``ctx.value`` reads it; ``ctx.get_global()``/``ctx.set_global(v)`` the value
      outside any block.
    Example:
      >>> import functx
      >>> scale = functx.make_user_context(default_value=1.0)
      >>> f = functx.jit(lambda x: x * scale.value)
      >>> with scale(3.0):
      ...     print(f(2.0))
      6.0
      >>> print(f(2.0))
      2.0
    """
    ctx = _UserContext("user_context", default_value)
    ctx.watched = True
    with _disable_lock:
        _JIT_KEYED.append(ctx)
        _note_disable()
    return ctx


def jit_key_flags():
    """What ``jit`` keys its programs on besides the arguments: ``jax_enable_x64``, and while a
    setting of ``_JIT_KEYED`` may differ from its default anywhere, their values too."""
    if not jit_keyed:
        return x64_on()
    return (x64_on(), *[s.value for s in _JIT_KEYED])


_SETTINGS = {
    s.name: s
    for s in (log_compiles_state, legacy_prng_key_state, check_tracer_leaks, default_prng_impl)
    + _TRANSFER_GUARDS
    + _CHECKS
    + _SWITCHES
}
with _disable_lock:
    _note_disable()  # (the environment variables)


def transfer_guard(new_val: str):
    """``jax.transfer_guard(level)``: the transfer guard of all three directions (host to
    device, device to device, device to host) in a block of this thread.

    Differences from JAX: functx keeps the setting (readable as
    ``functx.config.jax_transfer_guard_host_to_device`` and so on) but checks no transfers: CPU
    arrays live in host memory, where JAX's CPU client copies them, and functx's GPU arrays move
    only through ``device_put``/``device_get`` or an operation that names the device. A
    ``"disallow"`` block therefore never raises (JAX raises for implicit transfers).

    Arguments:
      new_val: ``"allow"``, ``"log"``, ``"disallow"``, ``"log_explicit"`` or
        ``"disallow_explicit"`` (another value raises ValueError).
    Returns:
      a context manager, also usable as a decorator.
    Example:
      >>> import functx, functx.numpy as jnp
      >>> with functx.transfer_guard("disallow"):
      ...     print(functx.config.jax_transfer_guard_host_to_device, jnp.arange(3))
      disallow [0 1 2]
    """
    return _SettingBlock(_TRANSFER_GUARDS, _TRANSFER_GUARDS[0].check(new_val))


def _one_guard(state: Setting, what: str):
    def guard(new_val: str):
        return state(new_val)

    guard.__name__ = guard.__qualname__ = f"transfer_guard_{what}"
    guard.__doc__ = f"""``jax.transfer_guard_{what}(level)``: the guard of {what.replace("_", " ")}
    transfers in a block of this thread.

    Differences from JAX: functx keeps the setting and checks no transfers (see
    ``functx.transfer_guard``).

    Arguments:
      new_val: ``"allow"``, ``"log"``, ``"disallow"``, ``"log_explicit"`` or
        ``"disallow_explicit"`` (another value raises ValueError).
    Returns:
      a context manager, also usable as a decorator.
    Example:
      >>> import functx
      >>> with functx.transfer_guard_{what}("log"):
      ...     print(functx.config.{state.name})
      log
    """
    return guard


transfer_guard_host_to_device = _one_guard(transfer_guard_host_to_device_state, "host_to_device")
transfer_guard_device_to_device = _one_guard(
    transfer_guard_device_to_device_state, "device_to_device"
)
transfer_guard_device_to_host = _one_guard(transfer_guard_device_to_host_state, "device_to_host")


def legacy_prng_key(new_val: str):
    """``jax.legacy_prng_key(level)``: what ``functx.random`` does with a raw ``uint32`` key
    (one made by ``random.PRNGKey``) in a block of this thread: ``"allow"`` (JAX's default),
    ``"warn"`` or ``"error"``.

    Differences from JAX: functx keeps the setting (``functx.config.jax_legacy_prng_key``); its
    samplers accept raw keys whatever it says.

    Arguments:
      new_val: ``"allow"``, ``"warn"`` or ``"error"`` (another value raises ValueError).
    Returns:
      a context manager, also usable as a decorator.
    Example:
      >>> import functx
      >>> @functx.legacy_prng_key("allow")
      ... def draw():
      ...     return functx.random.uniform(functx.random.PRNGKey(0), (2,)).shape
      >>> draw()
      (2,)
    """
    if new_val not in legacy_prng_key_state.values:
        raise ValueError(f"{new_val!r} is not a valid LegacyPrngKeyState")
    return legacy_prng_key_state(new_val)


def log_compiles(new_val=None):
    """``jax.log_compiles(True)``: a block of this thread in which ``functx.jit`` logs each trace
    and compile at WARNING level (``logging``'s logger ``functx.jit``, as JAX logs them; outside
    it they go to DEBUG). Without an argument: whether the ``FUNCTX_LOG_COMPILES`` environment
    variable asks for functx's compiler steps on stderr.

    Differences from JAX: the messages name functx's compilers (C++ or Triton), not XLA, and the
    no-argument form is functx's.

    Arguments:
      new_val: True or False (a block), or nothing (the current setting).
    Returns:
      a context manager, also usable as a decorator; with no argument, a bool.
    Example:
      >>> import functx
      >>> with functx.log_compiles(True):
      ...     print(functx.config.jax_log_compiles)
      True
    """
    if new_val is None:
        return _flag("FUNCTX_LOG_COMPILES", "")
    return log_compiles_state(new_val)


# --- functx.config.update ------------------------------------------------------------------------
# This module is ``functx.config``: ``update`` and the option names below are what JAX's
# ``jax.config`` has that functx has.
_DEVICE = ("functx_default_device", "jax_default_device")
_PRECISION = ("jax_default_matmul_precision",)
_DISABLE_JIT = ("jax_disable_jit",)
_X64 = ("jax_enable_x64",)


def update(name: str, value) -> None:
    """``functx.config.update(name, value)``: the settings JAX keeps in ``jax.config`` that functx
    has: the default device ("functx_default_device"; "jax_default_device" is accepted for
    ported code) and the default precision of float32 matrix products
    ("jax_default_matmul_precision": see ``functx.default_matmul_precision``), and whether
    ``jit`` runs functions eagerly ("jax_disable_jit": see ``functx.disable_jit``), and whether
    64-bit dtypes are enabled ("jax_enable_x64", off by default as in JAX: see
    ``functx.enable_x64``), compile logging ("jax_log_compiles"), the transfer guards
    ("jax_transfer_guard" sets all three, "jax_transfer_guard_host_to_device", ...) and
    "jax_legacy_prng_key" (see the functions of those names). Read them back as attributes
    (``functx.config.jax_enable_x64``) or with ``functx.config.read(name)``."""
    global _global_default, _global_precision, _global_disable_jit, _global_x64
    if name in _X64:
        _global_x64 = bool(value)
        return
    if name in _PRECISION:
        _global_precision = check_precision(value, name)
        return
    if name in _DISABLE_JIT:
        _global_disable_jit = bool(value)
        with _disable_lock:
            _note_disable()
        return
    if name == "jax_transfer_guard":
        value = _TRANSFER_GUARDS[0].check(value)
        for state in _TRANSFER_GUARDS:
            state.global_value = value
        return
    if name in _SETTINGS:
        _SETTINGS[name].global_value = _SETTINGS[name].check(value)
        with _disable_lock:
            _note_disable()
        return
    if name not in _DEVICE:
        raise ValueError(
            f"functx.config has no option {name!r}; it has "
            f"{', '.join(_DEVICE + _PRECISION + _DISABLE_JIT + _X64 + tuple(_SETTINGS))}, "
            "jax_transfer_guard"
        )
    _global_default = None if value is None else _check_device(value, name)
    _note_default(_global_default)


def read(name: str):
    """The value of the option ``name`` (``functx.config.read("jax_enable_x64")``), as JAX's
    ``jax.config.read``.

    Arguments:
      name: an option ``update`` accepts.

    Returns:
      its current value.

    Example:
      >>> functx.config.read("jax_enable_x64")
      False
    """
    try:
        return __getattr__(name)
    except AttributeError:
        raise AttributeError(f"Unrecognized config option: {name}") from None


def __getattr__(name: str):
    if name in _X64 or name == "x64_enabled":
        return x64_on()
    if name in _DEVICE:
        return _global_default
    if name in _PRECISION:
        return _global_precision
    if name in _DISABLE_JIT:
        return jit_disabled()
    if name in _SETTINGS:
        return _SETTINGS[name].value
    if name == "jax_transfer_guard":
        return _TRANSFER_GUARDS[0].global_value
    raise AttributeError(f"module 'functx.config' has no attribute {name!r}")


__all__ = [
    "make_user_context",
    "enable_checks",
    "explain_cache_misses",
    "no_tracing",
    "no_execution",
    "thread_guard",
    "debug_key_reuse",
    "softmax_custom_jvp",
    "threefry_partitionable",
    "enable_custom_prng",
    "allow_f16_reductions",
    "array_garbage_collection_guard",
    "remove_size_one_mesh_axis_from_type",
    "auto_pcast",
    "default_matmul_precision",
    "check_tracer_leaks",
    "debug_infs",
    "debug_nans",
    "default_prng_impl",
    "default_off_cpu",
    "disable_jit",
    "enable_x64",
    "jit_disabled",
    "legacy_prng_key",
    "log_compiles",
    "matmul_precision",
    "read",
    "transfer_guard",
    "transfer_guard_device_to_device",
    "transfer_guard_device_to_host",
    "transfer_guard_host_to_device",
    "update",
    "x64_on",
]
