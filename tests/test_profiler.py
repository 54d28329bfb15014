"""``functx.profiler`` against ``jax.profiler``: the trace directory's layout and a readable Chrome
trace (annotations, steps, jit's compiles), the errors JAX raises for misuse, and the memory
profile: a gzipped pprof protobuf with JAX's sample types, decoded here and checked against the
live arrays."""

from __future__ import annotations

import gzip
import json
import logging
import warnings

import numpy as np
import pytest

import functx
import functx.numpy as fnp
from functx import profiler

jax = pytest.importorskip("jax")


def _layout(root):
    """The trace files under ``root``, as JAX lays them out: plugins/profile/<stamp>/<file>."""
    files = sorted(p.relative_to(root) for p in root.rglob("*.trace.json.gz"))
    return [(p.parts[:2], len(p.parts), p.name.endswith(".trace.json.gz")) for p in files]


def _events(root):
    (path,) = root.rglob("*.trace.json.gz")
    with gzip.open(path) as f:
        return json.load(f)["traceEvents"]


def test_trace_layout_as_jax(tmp_path):
    with jax.profiler.trace(tmp_path / "jax"):
        jax.numpy.ones(3).block_until_ready()
    with profiler.trace(tmp_path / "functx"):
        fnp.ones(3)
    assert _layout(tmp_path / "functx") == _layout(tmp_path / "jax")


def test_trace_records_annotations_steps_and_compiles(tmp_path):
    @profiler.annotate_function
    def double(x):
        return x * 2.0

    f = functx.jit(lambda x: fnp.sin(x) + 1.0)
    x = np.arange(4, dtype=np.float32)
    with profiler.trace(tmp_path, create_perfetto_trace=True):
        with profiler.TraceAnnotation("outer", batch=3, what=[1]):
            assert profiler.TraceAnnotation.is_enabled()
            for step in range(2):
                with profiler.StepTraceAnnotation("train", step_num=step):
                    double(f(x))
    assert not profiler.TraceAnnotation.is_enabled()
    events = _events(tmp_path)
    spans = {e["name"]: e for e in events if e["ph"] == "X"}
    assert {"outer", "train 0", "train 1"} <= set(spans)
    assert spans["outer"]["args"] == {"batch": 3, "what": "[1]"}
    name = next(n for n in spans if n.endswith("double"))  # (the qualified name)
    assert spans[name]["dur"] >= 0
    outer, step0 = spans["outer"], spans["train 0"]
    assert outer["ts"] <= step0["ts"] and step0["ts"] + step0["dur"] <= outer["ts"] + outer["dur"]
    compiles = [e for e in events if "ompil" in e["name"]]
    assert compiles, [e["name"] for e in events]  # jit compiled once, inside the trace
    (perfetto,) = tmp_path.rglob("perfetto_trace.json.gz")
    with gzip.open(perfetto) as fh:
        assert "metadata" not in json.load(fh)


def test_trace_leaves_the_jit_logger_as_it_was(tmp_path, caplog):
    logger = logging.getLogger("functx.jit")
    level = logger.level
    with caplog.at_level(logging.INFO):
        with profiler.trace(tmp_path):
            functx.jit(lambda x: x - 3.0)(np.ones(5, np.float32))
    assert logger.level == level and not logger.filters
    assert not [r for r in caplog.records if r.name == "functx.jit"]  # (DEBUG records hidden)


@pytest.mark.parametrize(
    "case",
    [
        "stop without start",
        "start twice",
        "bad options",
        "bad log_dir",
        "annotation name",
        "step name",
        "no annotation name",
        "stop_server",
        "start_server port",
        "unknown backend",
        "annotate non-callable",
    ],
)
def test_errors_as_jax(case, tmp_path):
    def run(p):
        cases = {
            "stop without start": p.stop_trace,
            "start twice": lambda: [p.start_trace(tmp_path), p.start_trace(tmp_path)],
            "bad options": lambda: p.start_trace(tmp_path, profiler_options=3),
            "bad log_dir": lambda: p.start_trace(None),
            "annotation name": lambda: p.TraceAnnotation(123),
            "step name": lambda: p.StepTraceAnnotation(5, step_num=1),
            "no annotation name": lambda: p.TraceAnnotation(),
            "stop_server": p.stop_server,
            "start_server port": lambda: p.start_server("x"),
            "unknown backend": lambda: p.device_memory_profile("bogus"),
            "annotate non-callable": lambda: p.annotate_function(3),
        }
        try:
            cases[case]()
        except Exception as e:  # noqa: BLE001 - the class is what is compared
            return e
        finally:
            try:
                p.stop_trace()
            except RuntimeError:
                pass
        return None

    if case == "bad log_dir":  # (JAX traces into a directory named "None" and raises nothing)
        assert isinstance(run(profiler), TypeError)
        return
    want, got = run(jax.profiler), run(profiler)
    if case == "no annotation name":  # (Python's own error for a missing argument)
        assert isinstance(want, TypeError) and isinstance(got, TypeError), (want, got)
        return
    if case == "annotate non-callable":
        # JAX fails with an unrelated error (a missing __name__); functx says what is wrong
        assert isinstance(got, TypeError), got
        return
    assert want is not None and got is not None, (want, got)
    builtin = next(c for c in type(want).__mro__ if c.__module__ == "builtins")
    assert isinstance(got, builtin) and isinstance(got, functx.FunctxError), (want, got)


def test_servers_are_inert_and_say_so():
    with pytest.warns(UserWarning, match="no profiler server"):
        profiler._warned = False
        server = profiler.start_server(9012)
    assert server.port == 9012
    with pytest.raises(ValueError, match="Only one"):
        profiler.start_server(9013)
    profiler.stop_server()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (warned once per process)
        unregister = profiler.register_subprocess(1, 9014)
    assert unregister() is None
    with pytest.raises(ValueError):
        profiler.start_server(70000)


def test_missing_names_say_so():
    with pytest.raises(AttributeError, match="not implemented"):
        _ = profiler.ProfileData


# --- the pprof memory profile --------------------------------------------------------------------
def _varint(b, i):
    out = shift = 0
    while True:
        c = b[i]
        i += 1
        out |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return out, i


def _fields(b):
    """A protobuf message's (field number, value) pairs (varints and length-delimited only)."""
    i, out = 0, []
    while i < len(b):
        key, i = _varint(b, i)
        if key & 7 == 0:
            value, i = _varint(b, i)
        else:
            assert key & 7 == 2, key
            n, i = _varint(b, i)
            value, i = b[i : i + n], i + n
        out.append((key >> 3, value))
    return out


def _packed(b):
    i, out = 0, []
    while i < len(b):
        v, i = _varint(b, i)
        out.append(v)
    return out


def _profile(data):
    msg = _fields(gzip.decompress(data))
    strings = [v.decode() for f, v in msg if f == 6]
    types_ = [tuple(strings[v] for _, v in _fields(m)) for f, m in msg if f == 1]
    samples = []
    for f, m in msg:
        if f == 2:
            fs = _fields(m)
            values = _packed(next(v for k, v in fs if k == 2))
            labels = {
                strings[dict(_fields(v))[1]]: strings[dict(_fields(v))[2]] for k, v in fs if k == 3
            }
            samples.append((values, labels))
    return strings, types_, samples


def test_memory_profile_has_jaxs_form_and_the_live_arrays(tmp_path):
    keep = fnp.ones((123, 7), fnp.float32), fnp.arange(5, dtype=fnp.int32), jax.numpy.ones(3)
    _, want_types, want_samples = _profile(jax.profiler.device_memory_profile())
    strings, types_, samples = _profile(profiler.device_memory_profile("cpu"))
    assert types_ == want_types == [("allocations", "count"), ("space", "bytes")]
    assert {k for _, labels in want_samples for k in labels} >= {"kind", "device"}
    assert all(labels["kind"] == "buffer" and labels["device"] == "cpu:0" for _, labels in samples)
    assert [1, keep[0].nbytes] in [values for values, _ in samples]
    assert "float32[123,7]" in strings and "int32[5]" in strings
    path = tmp_path / "memory.prof"
    profiler.save_device_memory_profile(path)
    _, _, saved = _profile(path.read_bytes())
    assert [1, keep[0].nbytes] in [values for values, _ in saved]
