"""The axis environment: the named axes bound while a function is traced or run.

A named axis is bound by ``vmap(f, axis_name=...)`` (kind ``"vmap"``, while ``f`` is traced) or by
a per-device program such as ``shard_map`` (kind ``"spmd"``, while its body is traced and run).
Collectives (``functx.control.collectives``: ``psum``, ``all_gather``, ...) look their axis names
up here: at trace time to check that the name is bound and to read its size, and, for an
``"spmd"`` frame, at run time to call the frame's ``handler``, which performs the communication.

The frames form a per-thread stack (innermost last); a name bound twice refers to the innermost
frame. This module sits in the transforms layer because ``vmap`` pushes frames;
``functx.control.collectives`` re-exports its names and documents the handler interface.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Hashable, NamedTuple


class AxisFrame(NamedTuple):
    """One bound named axis.

    Fields:
      name: the axis name (any hashable but a tuple).
      size: the number of positions along the axis (an int).
      kind: ``"vmap"`` (batched by ``vmap``: collectives become array operations on the batch
        axis) or ``"spmd"`` (one program per position: collectives call ``handler``).
      handler: for an ``"spmd"`` frame, the object whose methods perform the collectives on this
        axis (see ``functx.control.collectives``); None for ``"vmap"`` frames.
    """

    name: Hashable
    size: int
    kind: str = "vmap"
    handler: Any = None


KINDS = ("vmap", "spmd")


class _Env(threading.local):
    def __init__(self):
        self.frames: list[AxisFrame] = []


_env = _Env()


def _check_name(name):
    if isinstance(name, (tuple, list)):
        raise TypeError(f"an axis name must be a single hashable name, not a sequence: {name!r}")
    hash(name)


@contextlib.contextmanager
def axis_frame(name, size: int | None = None, kind: str = "vmap", handler: Any = None):
    """Bind a named axis for the duration of a ``with`` block.

    Arguments:
      name: the axis name, or an ``AxisFrame`` (then the other arguments must be left out).
      size: the axis size (a non-negative int).
      kind: ``"vmap"`` or ``"spmd"``.
      handler: the collective handler of an ``"spmd"`` frame.
    Returns:
      a context manager yielding the ``AxisFrame`` it pushed (popped on exit).
    Example:
      >>> from functx.transforms.axis_env import axis_frame, lookup
      >>> with axis_frame("i", 4):
      ...     print(lookup("i").size)
      4
    """
    if isinstance(name, AxisFrame):
        if size is not None or handler is not None:
            raise TypeError("axis_frame: give an AxisFrame or its fields, not both")
        frame = name
    else:
        if size is None:
            raise TypeError("axis_frame: the axis size is required")
        frame = AxisFrame(name, size, kind, handler)
    _check_name(frame.name)
    if frame.kind not in KINDS:
        raise ValueError(f"axis_frame: kind must be one of {KINDS}, got {frame.kind!r}")
    if isinstance(frame.size, bool) or not isinstance(frame.size, int) or frame.size < 0:
        raise TypeError(f"axis_frame: the size must be a non-negative int, got {frame.size!r}")
    frames = _env.frames
    frames.append(frame)
    try:
        yield frame
    finally:
        popped = frames.pop()
        assert popped is frame, "axis frames popped out of order"


def lookup(name) -> AxisFrame:
    """The innermost frame binding ``name``; NameError ("unbound axis name: i") if none does."""
    for f in reversed(_env.frames):
        if f.name == name:
            return f
    raise NameError(f"unbound axis name: {name}")


def is_bound(name) -> bool:
    return any(f.name == name for f in _env.frames)


def frames() -> tuple[AxisFrame, ...]:
    """The bound frames, outermost first."""
    return tuple(_env.frames)


def env_key() -> tuple:
    """What a trace may depend on (names, sizes, kinds and the handlers, which collective
    equations record), for trace caches' keys."""
    return tuple((f.name, f.size, f.kind, id(f.handler)) for f in _env.frames)


def names_tuple(axis_name) -> tuple:
    """``axis_name`` (one name or a tuple/list of names) as a tuple of names."""
    return tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)


__all__ = ["AxisFrame", "axis_frame", "env_key", "frames", "is_bound", "lookup", "names_tuple"]
