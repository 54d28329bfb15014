"""``functx.experimental.multihost_utils``: host-side exchanges between the processes of a
distributed run (``jax.experimental.multihost_utils``).

In one process (no ``functx.distributed.initialize()``) every exchange is with this process
alone; in a distributed run they go through ``torch.distributed`` over all processes. Values are
NumPy arrays on the host, as in JAX.
"""

from __future__ import annotations

import zlib

import numpy as np

from functx import distributed, tree_util
from functx.errors import FunctxValueError

__all__ = [
    "assert_equal",
    "broadcast_one_to_all",
    "process_allgather",
    "sync_global_devices",
]


def _world():
    """The collectives over every process, or None in one process."""
    run = distributed.current()
    return None if run is None else distributed.TorchCollectives(range(run.size))


def _host(x) -> np.ndarray:
    return np.asarray(x)


def process_allgather(in_tree, tiled: bool = False):
    """Every process's value of each leaf, gathered on every process
    (``jax.experimental.multihost_utils.process_allgather``).

    Arguments:
      in_tree: a pytree of arrays or scalars (each process's own).
      tiled: False: stack the processes' values along a new leading axis; True: concatenate
        them along axis 0.
    Returns:
      The same pytree of NumPy arrays.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental import multihost_utils
      >>> multihost_utils.process_allgather(jnp.arange(3.0))
      array([[0., 1., 2.]], dtype=float32)
    """
    world = _world()

    def gather(x):
        a = _host(x)
        if world is None:
            return a if tiled else a[None]
        stacked = world.all_gather(a, 0, False)
        return np.concatenate(list(stacked), axis=0) if tiled else stacked

    return tree_util.tree_map(gather, in_tree)


def broadcast_one_to_all(in_tree, is_source: bool | None = None):
    """Process 0's value of each leaf (or that of the one process whose ``is_source`` is True),
    on every process (``jax.experimental.multihost_utils.broadcast_one_to_all``).

    Arguments:
      in_tree: a pytree of arrays or scalars, of one structure, shapes and dtypes everywhere.
      is_source: whether this process is the source (default: process 0 is).
    Returns:
      The same pytree of NumPy arrays.
    Example:
      >>> import numpy as np
      >>> from functx.experimental import multihost_utils
      >>> multihost_utils.broadcast_one_to_all({"w": np.float32([1, 2])})
      {'w': array([1., 2.], dtype=float32)}
    """
    world = _world()
    if world is None:
        return tree_util.tree_map(_host, in_tree)
    source = world.index == 0 if is_source is None else bool(is_source)
    flags = world.all_gather(np.int32([source]), 0, True)
    if int(flags.sum()) != 1:
        raise FunctxValueError(
            f"broadcast_one_to_all: exactly one process must be the source, got {int(flags.sum())}"
        )
    src = int(np.argmax(flags))
    return tree_util.tree_map(lambda x: world.all_gather(_host(x), 0, False)[src], in_tree)


def sync_global_devices(name: str) -> None:
    """Wait until every process reaches this call with the same ``name``
    (``jax.experimental.multihost_utils.sync_global_devices``).

    Arguments:
      name: the barrier's name; processes calling it with different names is an error.
    Returns:
      None.
    Raises:
      AssertionError: the processes gave different names (as JAX).
    Example:
      >>> from functx.experimental import multihost_utils
      >>> multihost_utils.sync_global_devices("after init")
    """
    world = _world()
    if world is None:
        return None
    h = np.uint32([zlib.crc32(name.encode())]).view(np.int32)
    seen = world.all_gather(h, 0, True)
    if not (seen == seen[0]).all():
        raise AssertionError(f"sync_global_devices name mismatch ('{name}')")
    return None


def assert_equal(in_tree, fail_message: str = "") -> None:
    """Check that every process has the same values (``jax.experimental.multihost_utils.
    assert_equal``).

    Arguments:
      in_tree: a pytree of arrays or scalars.
      fail_message: text for the error.
    Returns:
      None.
    Raises:
      AssertionError: values differ between processes.
    Example:
      >>> import numpy as np
      >>> from functx.experimental import multihost_utils
      >>> multihost_utils.assert_equal(np.ones(2), "weights differ")
    """
    for a, leaf in zip(
        tree_util.tree_leaves(process_allgather(in_tree)), tree_util.tree_leaves(in_tree)
    ):
        if not all(np.array_equal(row, _host(leaf), equal_nan=True) for row in a):
            raise AssertionError(f"{fail_message} Expected equal values on every process.")
