"""The state behind ``functx.ref``: a mutable box per reference, and the recorders that let a
trace see which boxes created outside it were read or written inside it.

A reference is a Python object holding its current value (an array, or a tracer while a function
is traced). Writes replace that value functionally (``x.at[idx].set(v)``), so a reference needs no
primitive and no transform rule. What needs care is a box created *outside* a traced function and
used inside it: every ``tracing.trace_flat`` pushes a ``Recorder``; a box read or written inside
the trace but born outside it is noted there. After the trace the recorder puts written boxes
back as they were and raises ``RefsTouched``: ``jit``, ``scan``, ``while_loop`` and ``cond`` catch
it for their own trace and trace again with those boxes threaded through as extra inputs and
outputs (``bound``), which is JAX's "discharge" of the state effect into the carry. A trace that
only read an outer box is kept out of the trace caches (its constants hold the box's value).
"""

from __future__ import annotations

import threading
import weakref

from functx.errors import FunctxError, FunctxValueError
from functx.source_info import where


class _Traces(threading.local):
    """The recorders of this thread's traces in progress, innermost last (pushed and popped by
    ``tracing.trace_flat``; per thread, like core's trace stack)."""

    def __init__(self):
        self.stack: list[Recorder] = []


_traces = _Traces()
# Traced Jaxprs that read a box born outside their trace: never cached (their consts hold the
# box's value of that moment); ``jit`` threads such boxes through as inputs instead.
_reads: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class Box:
    """A mutable reference's state: its value and the recorders it was created under."""

    __slots__ = ("value", "born", "state", "__weakref__")

    def __init__(self, value):
        self.value = value
        self.born = tuple(_traces.stack)  # (local to these traces: no discharge needed there)
        self.state = "live"  # or "freed", "frozen"

    def note(self, wrote: bool):
        """Record a read or a write of this box in every trace it was born outside of."""
        for rec in _traces.stack:
            if not any(b is rec for b in self.born):
                rec.touch(self, wrote)


class Recorder:
    """The boxes born outside one trace and used inside it (first value, whether written)."""

    __slots__ = ("touched", "written", "line")

    def __init__(self):
        self.touched: dict[int, tuple[Box, tuple]] = {}  # id -> (box, (value, state) first)
        self.written: set[int] = set()
        self.line = ""  # (the user's line of the first write, for the error)

    def touch(self, box, wrote):
        self.touched.setdefault(id(box), (box, (box.value, box.state)))
        if wrote:
            if not self.written:
                self.line = where()
            self.written.add(id(box))


class RefsTouched(FunctxError):
    """A traced function wrote (or, under ``jit``, used) a reference created outside it, and
    the transform tracing it cannot thread references through (``grad``, ``vmap``, ...).

    ``jit``, ``scan``, ``fori_loop``, ``while_loop`` and ``cond``/``switch`` catch this for their
    own trace (``depth``) and trace again with ``boxes`` as extra inputs and outputs; elsewhere it
    reaches the user, as JAX's error does."""

    def __init__(self, boxes, depth, line=""):
        self.boxes = list(boxes)
        self.depth = depth
        super().__init__(
            "a Ref created outside a traced function was written inside it, and this "
            "transformation (grad, vjp, jvp, vmap, make_jaxpr, ...) cannot carry the write out; "
            "pass the Ref as an argument of a jit-compiled function, or create it inside the "
            f"transformed function{line}"
        )


class Handle:
    """The base of ``functx.ref.Ref`` (a handle on a box), which this layer cannot import."""

    __slots__ = ()


def no_refs_returned(outs) -> None:
    """JAX's ValueError where the outputs of a traced function (a control-flow body's, a
    ``make_jaxpr``'s, ...) or a loop's carry hold a Ref."""
    for x in outs:
        if isinstance(x, Handle):
            raise FunctxValueError(
                f"a function traced by functx returned a mutable array reference ({x!r}), but "
                f"mutable array references cannot be returned (nor carried by a loop){where()}"
            )


def begin() -> Recorder:
    """Push a new innermost recorder of the boxes a trace reads and writes; ``end`` pops it."""
    rec = Recorder()
    _traces.stack.append(rec)
    return rec


def end(rec: Recorder, closed=None):
    """Pop ``rec`` (the innermost recorder); put back the values of the outer boxes the trace
    wrote, and raise ``RefsTouched`` if there are any; ``closed`` (the traced Jaxpr) is marked
    as reading outer boxes if it did."""
    _traces.stack.pop()
    if not rec.touched:
        return
    for box, first in rec.touched.values():
        if id(box) in rec.written:
            box.value, box.state = first
    if rec.written:
        raise RefsTouched([b for b, _ in rec.touched.values()], len(_traces.stack) + 1, rec.line)
    if closed is not None:
        _reads[closed] = [b for b, _ in rec.touched.values()]


def abort(rec: Recorder):
    """Pop ``rec`` after the traced function raised, putting back what it wrote."""
    _traces.stack.pop()
    for box, first in rec.touched.values():
        box.value, box.state = first


def reads(closed) -> list:
    """The outer boxes a traced Jaxpr read (empty for most)."""
    return _reads.get(closed, []) if _reads else []


class bound:
    """``with bound(boxes, values) as finals:`` the boxes hold ``values`` (the tracers of the
    trace in progress: they count as born in it) until the block ends, then their old values
    again; ``finals()`` gives their values at the end of the block (call it inside)."""

    def __init__(self, boxes, values):
        self.boxes, self.values = list(boxes), list(values)

    def __enter__(self):
        self.saved = [(b.value, b.born) for b in self.boxes]
        for b, v in zip(self.boxes, self.values):
            b.value, b.born = v, b.born + tuple(_traces.stack[-1:])
        return lambda: [b.value for b in self.boxes]

    def __exit__(self, *exc):
        for b, (v, born) in zip(self.boxes, self.saved):
            b.value, b.born = v, born
        return False


def traced_or_boxes(trace):
    """``(trace(), [])``, or ``(None, boxes)`` when the function ``trace`` traces (one trace
    deeper than now) wrote references born outside it: the caller then traces again with those
    boxes threaded through (``bound``)."""
    d = len(_traces.stack)
    try:
        return trace(), []
    except RefsTouched as e:
        if e.depth != d + 1:
            raise
        return None, e.boxes


def values(boxes) -> list:
    """The boxes' values, read (as seen by the traces in progress)."""
    for b in boxes:
        b.note(False)
    return [b.value for b in boxes]


def store(boxes, new_values):
    """Write ``new_values`` into the boxes (as seen by the traces in progress)."""
    for b, v in zip(boxes, new_values):
        b.note(True)
        b.value = v


def check_reads(traced):
    """``traced`` (a tuple whose first item is a traced ClosedJaxpr), unless that trace read
    references born outside it: then ``RefsTouched``, for ``jit``, which passes them in as
    arguments (a compiled program must not keep their values as constants)."""
    boxes = reads(traced[0])
    if boxes:
        raise RefsTouched(boxes, len(_traces.stack) + 1)
    return traced
