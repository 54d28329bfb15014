"""``functx.scipy``: JAX's ``jax.scipy`` names, as composites of functx's primitives.

``special`` and ``stats`` so far (``import functx.scipy.special``, ``functx.scipy.stats``).
"""

from functx.scipy import special as special, stats as stats

__all__ = ["special", "stats"]
