"""``functx.lax`` names of JAX's that wrap other ops: ``mul`` with ``out_dtype``,
``platform_dependent``, and the ordering tokens ``create_token``/``after_all``."""

from __future__ import annotations

from functx import config, ops, tree_util
from functx.errors import FunctxTypeError, FunctxValueError


def mul(x, y, *, out_dtype=None):
    """Elementwise product ``x * y`` (``jax.lax.mul``). With ``out_dtype``, the operands may
    have different dtypes: each is converted to ``out_dtype`` and the product is computed in it
    (XLA's mixed-precision multiply: its values and its derivatives are those of the converted
    product).

    Arguments:
      x, y: arrays of one shape (or a scalar operand), of one dtype unless ``out_dtype`` is
        given.
      out_dtype: the result's dtype (None: the operands' dtype).
    Returns:
      the product, of dtype ``out_dtype`` when given.

    Differences from JAX: where size-1 dimensions broadcast, functx records explicit
    ``broadcast_in_dim`` equations before the product (JAX's primitive broadcasts implicitly), so
    ``make_jaxpr`` prints them; with ``out_dtype`` the Jaxpr shows the two conversions and a plain
    ``mul`` (JAX's ``mul`` equation carries ``out_dtype``).

    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> lax.mul(jnp.float32(1.5), jnp.float32(2.0))
      Array(3., dtype=float32)
      >>> lax.mul(jnp.bfloat16(1.5), jnp.float32(2.0), out_dtype=jnp.float32)
      Array(3., dtype=float32)
    """
    if out_dtype is not None:
        x = ops.convert_element_type(x, out_dtype)
        y = ops.convert_element_type(y, out_dtype)
    return ops.mul(x, y)


def _platform() -> str:
    """The platform operations run on by default, by JAX's branch names ("cpu" or "cuda")."""
    dev = config.default_device_setting()
    plat = dev.platform if dev is not None else (config.default_device_spec().lower() or "cpu")
    return "cpu" if plat.partition(":")[0] == "cpu" else "cuda"


def platform_dependent(*args, default=None, **per_platform):
    """``per_platform[platform](*args)`` (``jax.lax.platform_dependent``): the branch of the
    platform the computation runs on, else ``default``.

    Differences from JAX: functx chooses when the call is traced (or run eagerly): the platform
    of the default device ("cpu", or "cuda" for a GPU; ``functx.default_device``,
    ``FUNCTX_DEFAULT_DEVICE``). Only that branch is traced, so the others never reach the
    program (JAX keeps them in the Jaxpr and picks one when lowering; a ``jit`` whose committed
    arguments live on another device than the default still runs the default's branch here).

    Arguments:
      *args: arrays (pytrees) handed to the branch.
      default: the branch of a platform without its own (optional).
      **per_platform: branches by platform name ("cpu", "cuda", "rocm", "tpu").
    Returns:
      the chosen branch's result.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> lax.platform_dependent(jnp.float32(0.0), cpu=jnp.cos, default=jnp.sin)
      Array(1., dtype=float32)
    """
    for name, branch in per_platform.items():
        if not callable(branch):
            raise FunctxTypeError(
                f"lax.platform_dependent: the '{name}' branch must be a callable."
            )
        if name == "gpu":
            raise FunctxValueError("Use 'cuda' or 'rocm' for lax.platform_dependent.")
    if default is not None and not callable(default):
        raise FunctxTypeError("lax.platform_dependent: the 'default' branch must be a callable.")
    platform = _platform()
    branch = per_platform.get(platform, default)
    if branch is None:
        raise NotImplementedError(
            f"lax.platform_dependent: translation rule for platform_index not found for platform "
            f"{platform} (branches: {', '.join(per_platform)}; no default)"
        )
    return branch(*args)


class Token:
    """An ordering token (``jax.lax.create_token``'s result). It holds no data: a pytree with no
    leaves, so it passes through ``jit`` (which returns a new token) and transformations.

    Example:
      >>> from functx import lax
      >>> tok = lax.create_token()
      >>> tok
      Token()
      >>> lax.after_all(tok, tok)
      Token()
    """

    __slots__ = ()

    def __repr__(self):
        return "Token()"


tree_util.register_pytree_node(Token, lambda t: ((), None), lambda aux, children: Token())


def create_token(*_):
    """A new ordering token (``jax.lax.create_token``; the arguments are ignored, as in JAX).

    Differences from JAX: a functx ``Token`` (a pytree without leaves), not JAX's
    ``core.Token``; it orders nothing, since functx runs operations in program order.

    Arguments:
      *_: ignored.
    Returns:
      a ``Token``.
    Example:
      >>> from functx import lax
      >>> lax.create_token()
      Token()
    """
    return Token()


def after_all(*operands):
    """A token ordered after every one of ``operands`` (``jax.lax.after_all``).

    Differences from JAX: functx runs operations in program order, so this is a new ``Token``
    (see ``create_token``).

    Arguments:
      *operands: tokens (anything else raises TypeError, as in JAX).
    Returns:
      a ``Token``.
    Example:
      >>> from functx import lax
      >>> lax.after_all(lax.create_token(), lax.create_token())
      Token()
    """
    if not all(isinstance(t, Token) for t in operands):
        raise FunctxTypeError("Arguments to after_all must be tokens")
    return Token()


__all__ = ["Token", "after_all", "create_token", "mul", "platform_dependent"]
