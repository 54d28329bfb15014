"""``functx.scipy``: JAX's ``jax.scipy`` names, as composites of functx's primitives.

Only ``special`` exists so far (``import functx.scipy.special``).
"""

from functx.scipy import special as special

__all__ = ["special"]
