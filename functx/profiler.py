"""``functx.profiler``: host-side traces and array-memory snapshots (JAX's ``jax.profiler``).

What functx records, and in which format:

- **Traces** (``trace``, ``start_trace``/``stop_trace``): while a trace runs, functx records the
  blocks of ``TraceAnnotation``, ``StepTraceAnnotation`` and ``annotate_function`` and the steps
  of ``jit`` (tracing and transforming a function, compiling it), with their host thread and
  times. ``stop_trace`` writes them in the Chrome trace-event format (JSON, gzipped) to
  ``log_dir/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json.gz``, the file and the
  directory layout JAX's profiler also writes; the Perfetto UI (https://ui.perfetto.dev) and
  ``chrome://tracing`` open it. functx has no device tracer: kernel launches and device times
  are not in the trace (put the steps you want to see in annotations, with
  ``block_until_ready`` inside them for GPU work), and there is no XPlane file for TensorBoard's
  profile plugin.
- **Memory** (``device_memory_profile``, ``save_device_memory_profile``): the live functx
  Arrays, each its shape, dtype, device and bytes, as a gzipped pprof profile (the format JAX
  writes, which ``pprof`` reads). functx does not record where each array was made: a sample's
  location is the array's dtype and shape instead of JAX's allocation stack.
- **Servers** (``start_server``, ``stop_server``, ``register_subprocess``): functx has no
  profiler server that TensorBoard could connect to. They check their arguments and the
  one-server rule as JAX does, warn once that nothing listens, and do nothing else.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import pathlib
import threading
import time
import warnings

from functx._runtime import live_arrays
from functx.devices.device import gpu_devices
from functx.errors import (
    FunctxRuntimeError,
    FunctxTypeError,
    FunctxValueError,
    missing_name_hook as _missing_name_hook,
)

__all__ = [
    "ProfileOptions",
    "StepTraceAnnotation",
    "TraceAnnotation",
    "annotate_function",
    "device_memory_profile",
    "register_subprocess",
    "save_device_memory_profile",
    "start_server",
    "start_trace",
    "stop_server",
    "stop_trace",
    "trace",
]


class ProfileOptions:
    """The options of a trace (JAX's ``jax.profiler.ProfileOptions``), with JAX's attributes and
    defaults: ``host_tracer_level`` (2), ``python_tracer_level`` (1), ``enable_hlo_proto``
    (True), ``include_dataset_ops`` (True), ``start_timestamp_ns`` (0), ``duration_ms`` (0),
    ``repository_path`` (""), ``raise_error_on_start_failure`` (False),
    ``advanced_configuration`` ({}) and ``session_id`` ("").

    Differences from JAX: functx records the same host events whatever the options say; they
    are kept for code that sets them.

    Example:
      >>> import functx
      >>> opts = functx.profiler.ProfileOptions()
      >>> opts.host_tracer_level = 3
      >>> opts.host_tracer_level, opts.duration_ms
      (3, 0)
    """

    def __init__(self):
        self.host_tracer_level = 2
        self.python_tracer_level = 1
        self.enable_hlo_proto = True
        self.include_dataset_ops = True
        self.start_timestamp_ns = 0
        self.duration_ms = 0
        self.repository_path = ""
        self.raise_error_on_start_failure = False
        self.advanced_configuration = {}
        self.session_id = ""


# --- the trace in progress ------------------------------------------------------------------------
class _Trace:
    """One trace: where it goes and the events recorded so far (Chrome trace events)."""

    def __init__(self, log_dir: str, perfetto: bool, link: bool):
        self.log_dir, self.perfetto, self.link = log_dir, perfetto, link
        self.events: list[dict] = []
        self.lock = threading.Lock()

    def add(self, name: str, start_ns: int, end_ns: int | None, args: dict, cat: str):
        event = {
            "name": name,
            "cat": cat,
            "ph": "X" if end_ns is not None else "i",
            "ts": start_ns / 1e3,  # (microseconds)
            "pid": os.getpid(),
            "tid": threading.get_ident(),
        }
        if end_ns is not None:
            event["dur"] = (end_ns - start_ns) / 1e3
        else:
            event["s"] = "t"
        if args:
            event["args"] = {k: _jsonable(v) for k, v in args.items()}
        with self.lock:
            self.events.append(event)


def _jsonable(v):
    return v if isinstance(v, (bool, int, float, str)) or v is None else str(v)


_state_lock = threading.Lock()
_current: _Trace | None = None


class _JitSteps(logging.Filter):
    """Records ``functx.jit``'s log records (tracing, compiling) as trace events. While a trace
    runs the logger is lowered to DEBUG so that jit writes them; records below the level the
    logger had before are dropped here, so handlers see what they saw without the trace."""

    def __init__(self, level: int, own_level: int):
        super().__init__()
        self.level = level  # (the effective level before the trace)
        self.own_level = own_level  # (the logger's own, restored after it)

    def filter(self, record: logging.LogRecord) -> bool:
        trace = _current
        if trace is not None:
            end = time.time_ns()
            msg = record.getMessage()
            seconds = record.args[-1] if record.args else None
            if msg.startswith("Finished") and isinstance(seconds, float):
                trace.add(msg, end - int(seconds * 1e9), end, {}, "jit")
            else:
                trace.add(msg, end, None, {}, "jit")
        return record.levelno >= self.level


_jit_logger = logging.getLogger("functx.jit")
_jit_filter: _JitSteps | None = None


def _check_trace_args(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options):
    try:
        path = os.fspath(log_dir)
    except TypeError:
        raise FunctxTypeError(
            f"log_dir must be a str or an os.PathLike, not {type(log_dir).__name__}"
        ) from None
    if profiler_options is not None and not isinstance(profiler_options, ProfileOptions):
        raise FunctxTypeError(
            "profiler_options must be None or a functx.profiler.ProfileOptions, not "
            f"{type(profiler_options).__name__}"
        )
    return str(path), bool(create_perfetto_link), bool(create_perfetto_trace)


def start_trace(
    log_dir: os.PathLike | str,
    create_perfetto_link: bool = False,
    create_perfetto_trace: bool = False,
    profiler_options: ProfileOptions | None = None,
) -> None:
    """Start recording a trace of this process (JAX's ``jax.profiler.start_trace``); one at a
    time (a second one is a RuntimeError). ``stop_trace`` writes it (see the module's
    documentation for what is recorded and the file format).

    Arguments:
      log_dir: the directory the trace goes to (made if missing).
      create_perfetto_link: JAX serves the trace to the Perfetto UI and waits; functx writes
        ``perfetto_trace.json.gz`` and logs its path instead (open it in ui.perfetto.dev).
      create_perfetto_trace: also write ``perfetto_trace.json.gz`` (the trace without metadata,
        which the Perfetto UI wants) next to the trace.
      profiler_options: None or a ``ProfileOptions`` (checked; functx records the same events
        whatever they say).
    Returns:
      None.

    Differences from JAX: host events only (annotations and jit's tracing and compiling), no
    device activity; ``create_perfetto_link`` does not serve the file or wait.

    Example:
      >>> import pathlib, tempfile, functx
      >>> d = tempfile.mkdtemp()
      >>> functx.profiler.start_trace(d)
      >>> with functx.profiler.TraceAnnotation("work"):
      ...     _ = functx.numpy.ones(3).sum()
      >>> functx.profiler.stop_trace()
      >>> [p.name.endswith(".trace.json.gz") for p in pathlib.Path(d).rglob("*.json.gz")]
      [True]
    """
    global _current, _jit_filter
    path, link, perfetto = _check_trace_args(
        log_dir, create_perfetto_link, create_perfetto_trace, profiler_options
    )
    with _state_lock:
        if _current is not None:
            raise FunctxRuntimeError(
                "a profiler trace is already running: only one trace at a time "
                "(functx.profiler.stop_trace ends it)"
            )
        _current = _Trace(path, perfetto or link, link)
        _jit_filter = _JitSteps(_jit_logger.getEffectiveLevel(), _jit_logger.level)
        _jit_logger.addFilter(_jit_filter)
        _jit_logger.setLevel(min(logging.DEBUG, _jit_filter.level))


def stop_trace() -> None:
    """Stop the trace ``start_trace`` started and write it (JAX's ``jax.profiler.stop_trace``):
    ``log_dir/plugins/profile/<YYYY_MM_DD_HH_MM_SS>/<host>.trace.json.gz``, Chrome trace events
    (``traceEvents``, times in microseconds), and ``perfetto_trace.json.gz`` beside it when asked.
    Without a trace running it is a RuntimeError, as in JAX.

    Arguments:
      none.
    Returns:
      None.

    Example:
      >>> import gzip, json, pathlib, tempfile, functx
      >>> d = tempfile.mkdtemp()
      >>> functx.profiler.start_trace(d)
      >>> with functx.profiler.StepTraceAnnotation("train", step_num=1):
      ...     pass
      >>> functx.profiler.stop_trace()
      >>> (path,) = pathlib.Path(d).rglob("*.trace.json.gz")
      >>> events = json.load(gzip.open(path))["traceEvents"]
      >>> [e["name"] for e in events if e["ph"] == "X"]
      ['train 1']
    """
    global _current, _jit_filter
    with _state_lock:
        trace = _current
        if trace is None:
            raise FunctxRuntimeError("No profile started (functx.profiler.start_trace starts one)")
        _current = None
        _jit_logger.removeFilter(_jit_filter)
        _jit_logger.setLevel(_jit_filter.own_level)
        _jit_filter = None
    _write(trace)


def _write(trace: _Trace) -> None:
    import datetime  # (this module's heavier imports wait for their first use)
    import gzip
    import json
    import socket

    stamp = datetime.datetime.now().strftime("%Y_%m_%d_%H_%M_%S")
    folder = pathlib.Path(trace.log_dir) / "plugins" / "profile" / stamp
    folder.mkdir(parents=True, exist_ok=True)
    pid = os.getpid()
    meta = [
        {"name": "process_name", "ph": "M", "pid": pid, "args": {"name": "functx (host)"}},
    ]
    body = {"displayTimeUnit": "ns", "traceEvents": meta + trace.events}
    with gzip.open(folder / f"{socket.gethostname()}.trace.json.gz", "wt") as f:
        json.dump(dict(body, metadata={"producer": "functx"}), f)
    if trace.perfetto:
        out = folder / "perfetto_trace.json.gz"
        with gzip.open(out, "wt") as f:
            json.dump(body, f)
        if trace.link:
            logging.getLogger(__name__).warning(
                "functx does not serve traces: open %s in https://ui.perfetto.dev", out
            )


@contextlib.contextmanager
def trace(
    log_dir: os.PathLike | str,
    create_perfetto_link=False,
    create_perfetto_trace=False,
    profiler_options: ProfileOptions | None = None,
):
    """A trace of the block (JAX's ``jax.profiler.trace``): ``start_trace`` on entry,
    ``stop_trace`` on exit (also when the block raises).

    Arguments:
      log_dir, create_perfetto_link, create_perfetto_trace, profiler_options: as for
        ``start_trace``.
    Returns:
      a context manager.

    Differences from JAX: as ``start_trace``: host events only.

    Example:
      >>> import pathlib, tempfile, functx, functx.numpy as jnp
      >>> d = tempfile.mkdtemp()
      >>> with functx.profiler.trace(d, create_perfetto_trace=True):
      ...     y = functx.jit(lambda x: x * 2.0)(jnp.ones(3))
      >>> len(list(pathlib.Path(d).rglob("*trace.json.gz")))  # the trace and Perfetto's copy
      2
    """
    start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
    try:
        yield
    finally:
        stop_trace()


# --- annotations ---------------------------------------------------------------------------------
class TraceAnnotation:
    """A block recorded as one event of the running trace (JAX's
    ``jax.profiler.TraceAnnotation``): its name, host thread, start and duration, and
    ``kwargs`` as the event's arguments. Outside a trace the block runs unchanged.

    Arguments:
      name: the event's name (a str; anything else is a TypeError, as in JAX).
      **kwargs: shown with the event (values that are not numbers or strings as their str).
    Returns:
      a context manager.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> with functx.profiler.TraceAnnotation("my_label", batch=3):
      ...     y = jnp.arange(3.0) * 2
      >>> functx.profiler.TraceAnnotation.is_enabled()
      False
    """

    __slots__ = ("_name", "_args", "_start")

    def __init__(self, name: str, /, **kwargs):
        if not isinstance(name, str):
            raise FunctxTypeError(
                f"{type(self).__name__}: name must be a str, not {type(name).__name__}"
            )
        self._name = name
        self._args = kwargs
        self._start = None

    @staticmethod
    def is_enabled() -> bool:
        """Whether a trace is running (annotations are recorded)."""
        return _current is not None

    def __enter__(self):
        self._start = time.time_ns() if _current is not None else None
        return self

    def __exit__(self, *exc):
        trace, start = _current, self._start
        if trace is not None and start is not None:
            trace.add(self._event_name(), start, time.time_ns(), self._args, "annotation")
        return False

    def _event_name(self) -> str:
        return self._name


class StepTraceAnnotation(TraceAnnotation):
    """A training step recorded as one event of the running trace (JAX's
    ``jax.profiler.StepTraceAnnotation``): as ``TraceAnnotation``, named ``"<name> <step_num>"``
    when ``step_num=`` is given.

    Arguments:
      name: the step's name (a str).
      **kwargs: ``step_num`` and any others, shown with the event.
    Returns:
      a context manager.

    Example:
      >>> import functx
      >>> for step in range(2):
      ...     with functx.profiler.StepTraceAnnotation("train", step_num=step):
      ...         pass
    """

    __slots__ = ()

    def __init__(self, name: str, **kwargs):
        super().__init__(name, **kwargs)

    def _event_name(self) -> str:
        step = self._args.get("step_num")
        return self._name if step is None else f"{self._name} {step}"


def annotate_function(func, name: str | None = None, **decorator_kwargs):
    """``func`` with each call recorded as a ``TraceAnnotation`` event (JAX's
    ``jax.profiler.annotate_function``), named ``name`` or ``func.__qualname__``.

    Arguments:
      func: the function.
      name: the events' name (default: the function's qualified name).
      **decorator_kwargs: shown with each event.
    Returns:
      the wrapped function.

    Example:
      >>> import functools, functx, functx.numpy as jnp
      >>> @functools.partial(functx.profiler.annotate_function, name="double")
      ... def f(x):
      ...     return x * 2
      >>> f(jnp.ones(2))
      Array([2., 2.], dtype=float32)
    """
    if not callable(func):
        raise FunctxTypeError(f"annotate_function: expected a callable, got {type(func).__name__}")
    name = name or getattr(func, "__qualname__", None) or func.__name__

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with TraceAnnotation(name, **decorator_kwargs):
            return func(*args, **kwargs)

    return wrapper


# --- memory: a pprof profile of the live arrays ---------------------------------------------------
def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, value) -> bytes:
    """One protobuf field: an int (varint) or bytes (length-delimited)."""
    if isinstance(value, int):
        return _varint(number << 3) + _varint(value)
    return _varint(number << 3 | 2) + _varint(len(value)) + value


def _packed(number: int, values) -> bytes:
    return _field(number, b"".join(_varint(v) for v in values))


def _check_backend(backend):
    if backend is None or backend == "cpu":
        return backend
    if backend in ("gpu", "cuda") and gpu_devices():
        return "gpu"
    known = "['cpu'] (no GPU)" if backend in ("gpu", "cuda") else "'cpu' (and 'gpu' with a GPU)"
    raise FunctxRuntimeError(f"Unknown backend {backend}. Available backends are {known}")


def device_memory_profile(backend: str | None = None) -> bytes:
    """A snapshot of the live functx Arrays as a gzipped pprof profile (JAX's
    ``jax.profiler.device_memory_profile``): one sample per array, its values ``allocations``
    (1) and ``space`` (its bytes), its labels ``kind`` ("buffer") and ``device``; ``pprof``
    reads it (``pprof --web memory.prof``).

    Arguments:
      backend: None (every device) or a platform name ("cpu", "gpu"); another name is a
        RuntimeError, as in JAX.
    Returns:
      the profile's bytes.

    Differences from JAX: a sample's location is the array's dtype and shape (functx does not
    record the Python stack that made each array); compiled programs are not listed.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> x = jnp.ones(1000)
      >>> functx.profiler.device_memory_profile()[:2]  # gzip's magic number
      b'\\x1f\\x8b'
    """
    backend = _check_backend(backend)
    import gzip

    strings = {"": 0}

    def s(text: str) -> int:
        return strings.setdefault(text, len(strings))

    types_ = _field(1, _field(1, s("allocations")) + _field(2, s("count")))
    types_ += _field(1, _field(1, s("space")) + _field(2, s("bytes")))
    kind, buffer, device = s("kind"), s("buffer"), s("device")
    samples, functions, locations = [], {}, []
    for a in live_arrays(backend):
        where_ = f"{a.dtype}[{','.join(map(str, a.shape))}]"
        if where_ not in functions:
            fid = functions[where_] = len(functions) + 1
            locations.append(_field(1, fid) + _field(4, _field(1, fid)))
        loc = functions[where_]
        labels = _field(3, _field(1, kind) + _field(2, buffer))
        labels += _field(3, _field(1, device) + _field(2, s(str(a.device))))
        samples.append(_field(2, _packed(1, [loc]) + _packed(2, [1, int(a.nbytes)]) + labels))
    unknown = s("<functx: allocation site not recorded>")
    funcs = [
        _field(5, _field(1, fid) + _field(2, s(name)) + _field(3, s(name)) + _field(4, unknown))
        for name, fid in functions.items()
    ]
    table = b"".join(_field(6, text.encode()) for text in strings)
    body = types_ + b"".join(samples) + b"".join(_field(4, loc) for loc in locations)
    return gzip.compress(body + b"".join(funcs) + table)


def save_device_memory_profile(filename, backend: str | None = None) -> None:
    """Write ``device_memory_profile(backend)`` to ``filename`` (JAX's
    ``jax.profiler.save_device_memory_profile``).

    Arguments:
      filename: the file's path.
      backend: as for ``device_memory_profile``.
    Returns:
      None.

    Differences from JAX: as ``device_memory_profile``.

    Example:
      >>> import os, tempfile, functx
      >>> path = os.path.join(tempfile.mkdtemp(), "memory.prof")
      >>> functx.profiler.save_device_memory_profile(path)
      >>> os.path.getsize(path) > 0
      True
    """
    profile = device_memory_profile(backend)
    with open(filename, "wb") as f:
        f.write(profile)


# --- servers: none in functx ----------------------------------------------------------------------
_server = None
_warned = False


class _Server:
    """What ``start_server`` returns: the port asked for (nothing listens on it)."""

    def __init__(self, port: int):
        self.port = port


def _no_server(what: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            f"functx.profiler.{what}: functx has no profiler server, so nothing listens for "
            "TensorBoard; record traces with functx.profiler.trace instead",
            stacklevel=3,
        )


def _check_port(port, what: str) -> int:
    if isinstance(port, bool) or not isinstance(port, int):
        raise FunctxTypeError(f"{what}: port must be an int, not {type(port).__name__}")
    if not 0 <= port <= 65535:
        raise FunctxValueError(f"{what}: port must be in [0, 65535], got {port}")
    return port


def start_server(port: int, requires_backend: bool = True):
    """JAX's ``jax.profiler.start_server``: a server TensorBoard connects to for traces. functx
    has none: this checks ``port`` and that no server is running (a ValueError, as in JAX),
    warns once that nothing listens, and returns an object holding the port.

    Arguments:
      port: an int in [0, 65535].
      requires_backend: accepted for JAX's signature.
    Returns:
      the (inert) server object.

    Differences from JAX: no server is started (a warning says so); use ``trace``.

    Example:
      >>> import warnings, functx
      >>> with warnings.catch_warnings():
      ...     warnings.simplefilter("ignore")
      ...     server = functx.profiler.start_server(9999)
      >>> server.port
      9999
      >>> functx.profiler.stop_server()
    """
    global _server
    port = _check_port(port, "start_server")
    if _server is not None:
        raise FunctxValueError("Only one profiler server can be active at a time.")
    _no_server("start_server")
    _server = _Server(port)
    return _server


def stop_server() -> None:
    """Forget the server ``start_server`` made (JAX's ``jax.profiler.stop_server``); without one
    it is a ValueError, as in JAX.

    Arguments:
      none.
    Returns:
      None.

    Differences from JAX: as ``start_server``: there is no server to stop.

    Example:
      >>> import functx
      >>> try:
      ...     functx.profiler.stop_server()
      ... except ValueError as e:
      ...     print(e)
      No active profiler server.
    """
    global _server
    if _server is None:
        raise FunctxValueError("No active profiler server.")
    _server = None


def register_subprocess(pid: int, port: int):
    """JAX's ``jax.profiler.register_subprocess``: profile a subprocess's server with this
    process. functx has no profiler servers: this checks the arguments, warns once, and returns
    the function that unregisters (which does nothing).

    Arguments:
      pid: the subprocess's id (an int).
      port: its server's port.
    Returns:
      a function of no arguments that unregisters it.

    Differences from JAX: nothing is registered (see ``start_server``).

    Example:
      >>> import os, warnings, functx
      >>> with warnings.catch_warnings():
      ...     warnings.simplefilter("ignore")
      ...     unregister = functx.profiler.register_subprocess(os.getpid(), 9012)
      >>> unregister()
    """
    if isinstance(pid, bool) or not isinstance(pid, int):
        raise FunctxTypeError(f"register_subprocess: pid must be an int, not {type(pid).__name__}")
    _check_port(port, "register_subprocess")
    _no_server("register_subprocess")
    return lambda: None


# A JAX name functx lacks (ProfileData, ProfileEvent, ProfilePlane: readers of XPlane files, which
# functx does not write): an AttributeError that says so.
__getattr__ = _missing_name_hook(__name__)
