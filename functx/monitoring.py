"""``functx.monitoring``: named events and the listeners that receive them (JAX's
``jax.monitoring``).

Code marks a point with ``record_event`` (a count), ``record_event_duration_secs`` (a duration),
``record_event_time_span`` (a start and an end time) or ``record_scalar`` (a value); each call
runs the listeners registered for that kind, in registration order, with the event's name and
its keyword metadata. functx records its own compile steps as JAX names them: each ``jit``
trace (``/jax/core/compile/jaxpr_trace_duration``) and each compilation of a program to C++ or
Triton (``/jax/core/compile/backend_compile_duration``), each as a duration and as a time span
(``time.time()`` seconds), and its start time as a scalar when it starts, with ``fun_name`` as
JAX gives it (``f`` for the trace, ``jit(f)`` for the compilation).

A leaf module: it imports only ``functx.errors``.
"""

from __future__ import annotations

from collections.abc import Callable

from functx.errors import FunctxValueError

# The listeners of each kind of event, in registration order
_LISTENERS: dict[str, list[Callable]] = {"event": [], "duration": [], "span": [], "scalar": []}

# The events functx records (JAX's names)
JAXPR_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

__all__ = [
    "clear_event_listeners",
    "record_event",
    "record_event_duration_secs",
    "record_event_time_span",
    "record_scalar",
    "register_event_duration_secs_listener",
    "register_event_listener",
    "register_event_time_span_listener",
    "register_scalar_listener",
    "unregister_event_duration_listener",
    "unregister_event_listener",
    "unregister_event_time_span_listener",
    "unregister_scalar_listener",
]


def _unregister(kind: str, callback) -> None:
    listeners = _LISTENERS[kind]
    if callback not in listeners:
        raise FunctxValueError(f"{callback!r} is not a registered {kind} listener")
    listeners.remove(callback)


def record_event(event: str, **kwargs: str | int) -> None:
    """Record that ``event`` happened: calls each ``register_event_listener`` callback as
    ``callback(event, **kwargs)`` (``jax.monitoring.record_event``).

    Arguments:
      event: the event's name (JAX's are paths such as ``"/jax/compilation_cache/cache_hits"``).
      **kwargs: metadata (strings or ints), passed on to the listeners.
    Returns:
      None.
    Example:
      >>> from functx import monitoring
      >>> seen = []
      >>> monitoring.register_event_listener(lambda e, **kw: seen.append((e, kw)))
      >>> monitoring.record_event("/my/event", step=3)
      >>> seen
      [('/my/event', {'step': 3})]
      >>> monitoring.clear_event_listeners()
    """
    for callback in _LISTENERS["event"]:
        callback(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs: str | int) -> None:
    """Record a duration of ``event`` in seconds: calls each
    ``register_event_duration_secs_listener`` callback as ``callback(event, duration,
    **kwargs)`` (``jax.monitoring.record_event_duration_secs``).

    Arguments:
      event: the event's name.
      duration: seconds (a float).
      **kwargs: metadata (strings or ints), passed on to the listeners.
    Returns:
      None.
    Example:
      >>> from functx import monitoring
      >>> seen = []
      >>> monitoring.register_event_duration_secs_listener(lambda e, d, **kw: seen.append(d))
      >>> monitoring.record_event_duration_secs("/my/step", 0.25)
      >>> seen
      [0.25]
      >>> monitoring.clear_event_listeners()
    """
    for callback in _LISTENERS["duration"]:
        callback(event, duration, **kwargs)


def record_event_time_span(
    event: str, start_time: float, end_time: float, **kwargs: str | int
) -> None:
    """Record when ``event`` started and ended (seconds, as ``time.time()``): calls each
    ``register_event_time_span_listener`` callback as ``callback(event, start_time, end_time,
    **kwargs)`` (``jax.monitoring.record_event_time_span``).

    Arguments:
      event: the event's name.
      start_time, end_time: the times, in seconds.
      **kwargs: metadata (strings or ints), passed on to the listeners.
    Returns:
      None.
    Example:
      >>> from functx import monitoring
      >>> seen = []
      >>> monitoring.register_event_time_span_listener(lambda e, s, t, **kw: seen.append(t - s))
      >>> monitoring.record_event_time_span("/my/span", 10.0, 12.5)
      >>> seen
      [2.5]
      >>> monitoring.clear_event_listeners()
    """
    for callback in _LISTENERS["span"]:
        callback(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs: str | int) -> None:
    """Record a value of ``event``: calls each ``register_scalar_listener`` callback as
    ``callback(event, value, **kwargs)`` (``jax.monitoring.record_scalar``).

    Arguments:
      event: the event's name.
      value: a number.
      **kwargs: metadata (strings or ints), passed on to the listeners.
    Returns:
      None.
    Example:
      >>> from functx import monitoring
      >>> seen = []
      >>> monitoring.register_scalar_listener(lambda e, v, **kw: seen.append((e, v)))
      >>> monitoring.record_scalar("/my/loss", 0.5)
      >>> seen
      [('/my/loss', 0.5)]
      >>> monitoring.clear_event_listeners()
    """
    for callback in _LISTENERS["scalar"]:
        callback(event, value, **kwargs)


def register_event_listener(callback) -> None:
    """Call ``callback(event, **kwargs)`` at every ``record_event``
    (``jax.monitoring.register_event_listener``).

    Arguments:
      callback: a function of the event's name and its keyword metadata.
    Returns:
      None.
    Example:
      >>> from functx import monitoring
      >>> monitoring.register_event_listener(lambda e, **kw: print("event", e))
      >>> monitoring.record_event("/my/event")
      event /my/event
      >>> monitoring.clear_event_listeners()
    """
    _LISTENERS["event"].append(callback)


def register_event_duration_secs_listener(callback) -> None:
    """Call ``callback(event, duration_secs, **kwargs)`` at every
    ``record_event_duration_secs``, functx's compile steps included
    (``jax.monitoring.register_event_duration_secs_listener``).

    Arguments:
      callback: a function of the event's name, the seconds and the keyword metadata.
    Returns:
      None.
    Example:
      >>> import functx
      >>> from functx import monitoring
      >>> names = []
      >>> monitoring.register_event_duration_secs_listener(lambda e, d, **kw: names.append(e))
      >>> _ = functx.jit(lambda x: x * 3.0)(1.0)
      >>> "/jax/core/compile/jaxpr_trace_duration" in names
      True
      >>> monitoring.clear_event_listeners()
    """
    _LISTENERS["duration"].append(callback)


def register_event_time_span_listener(callback) -> None:
    """Call ``callback(event, start_time, end_time, **kwargs)`` at every
    ``record_event_time_span`` (``jax.monitoring.register_event_time_span_listener``).

    Arguments:
      callback: a function of the event's name, the two times and the keyword metadata.
    Returns:
      None.
    Example:
      >>> from functx import monitoring
      >>> monitoring.register_event_time_span_listener(lambda e, s, t, **kw: print(e, t - s))
      >>> monitoring.record_event_time_span("/my/span", 1.0, 1.5)
      /my/span 0.5
      >>> monitoring.clear_event_listeners()
    """
    _LISTENERS["span"].append(callback)


def register_scalar_listener(callback) -> None:
    """Call ``callback(event, value, **kwargs)`` at every ``record_scalar``
    (``jax.monitoring.register_scalar_listener``).

    Arguments:
      callback: a function of the event's name, the value and the keyword metadata.
    Returns:
      None.
    Example:
      >>> from functx import monitoring
      >>> monitoring.register_scalar_listener(lambda e, v, **kw: print(e, v))
      >>> monitoring.record_scalar("/my/loss", 2)
      /my/loss 2
      >>> monitoring.clear_event_listeners()
    """
    _LISTENERS["scalar"].append(callback)


# Per kind of listener: the function that calls it, the ones that register and unregister it,
# its noun, its parameters and the record function's arguments after the event name (for
# ``_unregisterer``'s docstrings).
_KINDS = {
    "event": (
        "record_event",
        "register_event_listener",
        "unregister_event_listener",
        "event",
        "e, **kw",
        "",
    ),
    "duration": (
        "record_event_duration_secs",
        "register_event_duration_secs_listener",
        "unregister_event_duration_listener",
        "duration",
        "e, d, **kw",
        ", 1.0",
    ),
    "span": (
        "record_event_time_span",
        "register_event_time_span_listener",
        "unregister_event_time_span_listener",
        "time-span",
        "e, s, t, **kw",
        ", 1.0, 2.0",
    ),
    "scalar": (
        "record_scalar",
        "register_scalar_listener",
        "unregister_scalar_listener",
        "scalar",
        "e, v, **kw",
        ", 1",
    ),
}


def _unregisterer(kind: str) -> Callable[[Callable], None]:
    """The public function that unregisters a listener of ``kind`` (``_KINDS``)."""
    record, register, name, noun, params, args = _KINDS[kind]

    def unregister(callback) -> None:
        _unregister(kind, callback)

    unregister.__name__ = unregister.__qualname__ = name
    unregister.__doc__ = f"""Stop calling ``callback`` at ``{record}`` (``jax.monitoring.{name}``).

    Arguments:
      callback: a registered {noun} listener.
    Returns:
      None; ValueError when ``callback`` is not registered.

    Differences from JAX: an unregistered callback is a ValueError (JAX's is a failed assert).

    Example:
      >>> from functx import monitoring
      >>> listener = lambda {params}: print(e)
      >>> monitoring.{register}(listener)
      >>> monitoring.{name}(listener)
      >>> monitoring.{record}("/quiet"{args})
    """
    return unregister


unregister_event_listener = _unregisterer("event")
unregister_event_duration_listener = _unregisterer("duration")
unregister_event_time_span_listener = _unregisterer("span")
unregister_scalar_listener = _unregisterer("scalar")


def clear_event_listeners() -> None:
    """Unregister every listener of every kind (``jax.monitoring.clear_event_listeners``).

    Arguments:
      none.
    Returns:
      None.

    Differences from JAX: scalar listeners are cleared too (JAX 0.10 keeps them).

    Example:
      >>> from functx import monitoring
      >>> monitoring.register_event_listener(lambda e, **kw: print(e))
      >>> monitoring.clear_event_listeners()
      >>> monitoring.record_event("/quiet")
    """
    for listeners in _LISTENERS.values():
        listeners.clear()
