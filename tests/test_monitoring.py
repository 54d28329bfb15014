"""functx.monitoring against jax.monitoring: the listeners of each kind receive what the records
pass, in registration order; unregistering and clearing; the compile events jit records."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import functx
from functx import monitoring

KINDS = [  # (register, unregister, record, arguments)
    ("register_event_listener", "unregister_event_listener", "record_event", ()),
    (
        "register_event_duration_secs_listener",
        "unregister_event_duration_listener",
        "record_event_duration_secs",
        (0.5,),
    ),
    (
        "register_event_time_span_listener",
        "unregister_event_time_span_listener",
        "record_event_time_span",
        (1.0, 3.5),
    ),
    ("register_scalar_listener", "unregister_scalar_listener", "record_scalar", (7,)),
]


@pytest.fixture(autouse=True)
def _no_listeners():
    monitoring.clear_event_listeners()
    yield
    monitoring.clear_event_listeners()


def _calls(m, register, unregister, record, args):
    seen = []
    first = lambda *a, **kw: seen.append(("first", a, kw))  # noqa: E731
    second = lambda *a, **kw: seen.append(("second", a, kw))  # noqa: E731
    getattr(m.monitoring, register)(first)
    getattr(m.monitoring, register)(second)
    getattr(m.monitoring, record)("/test/event", *args, tag="a", n=2)
    getattr(m.monitoring, unregister)(first)
    getattr(m.monitoring, record)("/test/other", *args)
    getattr(m.monitoring, unregister)(second)
    getattr(m.monitoring, record)("/test/none", *args)
    return seen


@pytest.mark.parametrize("kind", KINDS, ids=[k[2] for k in KINDS])
def test_listeners_as_jax(kind):
    assert _calls(functx, *kind) == _calls(jax, *kind)
    with pytest.raises(ValueError):  # (JAX: a failed assert)
        getattr(monitoring, kind[1])(print)


def test_clear_event_listeners():
    seen = []
    for register, *_ in KINDS:
        getattr(monitoring, register)(lambda *a, **kw: seen.append(a))
    monitoring.clear_event_listeners()
    for _, _, record, args in KINDS:
        getattr(monitoring, record)("/test/cleared", *args)
    assert seen == []


def _compile_events(m):
    durations, spans, scalars = [], [], []
    m.monitoring.register_event_duration_secs_listener(
        lambda e, d, **kw: durations.append((e, d, kw))
    )
    m.monitoring.register_event_time_span_listener(
        lambda e, s, t, **kw: spans.append((e, (s, t), kw))
    )
    m.monitoring.register_scalar_listener(lambda e, v, **kw: scalars.append((e, v, kw)))

    def scaled(x):
        return x * 3.0

    m.jit(scaled)(np.ones(3, np.float32))
    try:
        m.monitoring.clear_event_listeners()
    finally:
        jax.monitoring.clear_event_listeners()
    return durations, spans, scalars


def test_jit_records_compile_events_as_jax():
    """Each step as a duration and a time span, and its start time as a scalar (JAX's
    ``LogElapsedTimeContextManager``), with JAX's ``fun_name``."""
    names = {
        monitoring.JAXPR_TRACE_EVENT: "scaled",
        monitoring.BACKEND_COMPILE_EVENT: "jit(scaled)",
    }
    for m in (functx, jax):
        durations, spans, scalars = _compile_events(m)
        for name, fun_name in names.items():
            got = [(d, kw) for e, d, kw in durations if e == name]
            assert len(got) == 1, (m.__name__, name, durations)
            assert got[0][1] == {"fun_name": fun_name} and got[0][0] >= 0
            span = [(s, kw) for e, s, kw in spans if e == name]
            assert [kw for _, kw in span] == [{"fun_name": fun_name}]
            assert span[0][0][0] <= span[0][0][1]
            started = [(v, kw) for e, v, kw in scalars if e == name]
            assert [kw for _, kw in started] == [{"fun_name": fun_name}], (m.__name__, scalars)
            assert abs(started[0][0] - span[0][0][0]) < 0.1
