"""``functx.example_libraries``: JAX's ``jax.example_libraries``, its two small example
libraries: ``optimizers`` (gradient-descent optimizers and step-size schedules) and ``stax``
(neural-network layers), for the many programs written with them (``from
functx.example_libraries import optimizers, stax``).
"""

from functx.errors import missing_name_hook as _missing_name_hook
from functx.example_libraries import optimizers as optimizers, stax as stax

# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["optimizers", "stax"]
