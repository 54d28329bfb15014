"""``functx.version``: functx's version (JAX's ``jax.version`` holds JAX's): ``__version__``, a
string, and ``__version_info__``, its numbers as a tuple of ints (also ``functx.__version__`` and
``functx.__version_info__``).

Example:
  >>> import functx
  >>> functx.version.__version__ == functx.__version__, functx.__version_info__
  (True, (0, 1, 0))
"""

from __future__ import annotations

__version__ = "0.1.0"
__version_info__ = tuple(int(part) for part in __version__.split("."))
