"""``functx.scipy``: JAX's ``jax.scipy`` names, as composites of functx's primitives.

``cluster``, ``fft``, ``integrate``, ``interpolate``, ``linalg``, ``ndimage``, ``optimize``,
``signal``, ``sparse``, ``spatial``, ``special`` and ``stats`` so far (``import
functx.scipy.special``, ``functx.scipy.stats``, ...).
"""

from functx.errors import missing_name_hook as _missing_name_hook
from functx.scipy import (
    cluster as cluster,
    fft as fft,
    integrate as integrate,
    interpolate as interpolate,
    linalg as linalg,
    ndimage as ndimage,
    optimize as optimize,
    signal as signal,
    sparse as sparse,
    spatial as spatial,
    special as special,
    stats as stats,
)

# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
    "cluster",
    "fft",
    "integrate",
    "interpolate",
    "linalg",
    "ndimage",
    "optimize",
    "signal",
    "sparse",
    "spatial",
    "special",
    "stats",
]
