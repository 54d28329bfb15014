"""``functx.memory``: where an array's memory is (JAX's ``jax.memory``, whose one name is
``Space``). A leaf module."""

from __future__ import annotations

import enum

__all__ = ["Space"]


class Space(enum.Enum):
    """The kinds of memory an array may live in (``jax.memory.Space``, printed as JAX prints it,
    ``MemorySpace.Device``): ``Device`` (the device's own memory: a GPU's, or the host's for the
    CPU), ``Host`` (host memory a device can reach) and ``Any``.

    functx keeps every array in its device's memory (``Device``): the names are there for
    ported code that names them.

    Example:
      >>> from functx import memory
      >>> memory.Space.Device, memory.Space(2), [s.name for s in memory.Space]
      (MemorySpace.Device, MemorySpace.Host, ['Device', 'Host', 'Any'])
    """

    Device = 1
    Host = 2
    Any = 3

    def __repr__(self):
        return f"MemorySpace.{self.name}"

    __str__ = __repr__
