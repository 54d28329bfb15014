"""functx's exceptions. Each message names the operation, the shapes and the user's source line."""

from __future__ import annotations

from functx._jax_names import JAX_NAMES


class FunctxError(Exception):
    """Base class of every error functx raises on purpose (JAX raises the builtin classes; functx's
    subclass them, so ``except TypeError`` etc. work as with JAX).

    Example:
      >>> import numpy as np
      >>> import functx
      >>> import functx.numpy as jnp
      >>> try:
      ...     jnp.ones(3) + jnp.ones(4)
      ... except functx.FunctxError as e:
      ...     print(type(e).__name__)
      FunctxArgumentError
    """


class FunctxTypeError(FunctxError, TypeError):
    """A shape or dtype mismatch, or a bad argument, found while tracing or running an operation
    (a ``TypeError``).

    Example:
      >>> import numpy as np
      >>> import functx
      >>> import functx.numpy as jnp
      >>> try:
      ...     functx.lax.add(np.float32([1]), np.int32([1]))
      ... except functx.FunctxTypeError as e:
      ...     print(type(e).__name__)
      FunctxTypeError
    """


class FunctxValueError(FunctxError, ValueError):
    """An argument with a valid type but an invalid value: an axis out of range, a negative size,
    an unknown mode or option, a length that does not match (a ``ValueError``).

    Example:
      >>> import numpy as np
      >>> import functx
      >>> import functx.numpy as jnp
      >>> try:
      ...     functx.lax.broadcasted_iota(np.int32, (2,), 3)
      ... except functx.FunctxValueError as e:
      ...     print(type(e).__name__)
      FunctxValueError
    """


class FunctxArgumentError(FunctxTypeError, FunctxValueError):
    """A bad argument (a shape or size mismatch, an unhashable static argument, ...) for which
    JAX raises ValueError where functx's check raised TypeError, or the reverse: an instance of
    both, so that the ``except`` clauses of programs written for JAX, and functx's own, catch it.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> import functx.numpy as jnp
      >>> try:
      ...     jnp.reshape(jnp.ones(6), (4,))
      ... except functx.FunctxArgumentError as e:
      ...     print(type(e).__name__)
      FunctxArgumentError
      >>> issubclass(functx.FunctxArgumentError, (TypeError, ValueError))
      True
    """


class FunctxZeroDivisionError(FunctxValueError, ZeroDivisionError):
    """A zero step or divisor where JAX raises ZeroDivisionError (``arange(0, 3, 0)``).

    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> try:
      ...     jnp.arange(0, 3, 0)
      ... except ZeroDivisionError as e:
      ...     print(type(e).__name__)
      FunctxZeroDivisionError
    """


class FunctxIndexError(FunctxError, IndexError):
    """An index out of range where JAX (and NumPy) raise IndexError.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> import functx.numpy as jnp
      >>> try:
      ...     functx.lax.index_in_dim(np.int32([1, 2]), 5)
      ... except functx.FunctxIndexError as e:
      ...     print(type(e).__name__)
      FunctxIndexError
    """


class FunctxOverflowError(FunctxError, OverflowError):
    """A size or value too large for the type that must hold it (an ``OverflowError``).

    Example:
      >>> import numpy as np
      >>> import functx
      >>> import functx.numpy as jnp
      >>> try:
      ...     jnp.int32(2**40)
      ... except functx.FunctxOverflowError as e:
      ...     print(type(e).__name__)
      FunctxOverflowError
    """


class ConcretizationError(FunctxError, TypeError):
    """Python needed a concrete value (``bool``, ``int``, ``if``, ``while``) of a traced array
    (JAX's ``ConcretizationTypeError``, a ``TypeError``).

    Example:
      >>> import numpy as np
      >>> import functx
      >>> import functx.numpy as jnp
      >>> try:
      ...     functx.make_jaxpr(lambda x: int(x))(1.0)
      ... except functx.ConcretizationError as e:
      ...     print(type(e).__name__)
      ConcretizationError
    """


class FunctxAttributeError(FunctxError, AttributeError):
    """A name JAX has that functx does not implement yet (a module's ``__getattr__`` raises it, an
    ``AttributeError`` whose message points to docs/differences.md).

    Example:
      >>> import functx
      >>> issubclass(functx.FunctxAttributeError, AttributeError)
      True
    """


# JAX's names for the concretization errors (``jax.errors``): functx raises these subclasses.
ConcretizationTypeError = ConcretizationError


class TracerBoolConversionError(ConcretizationError):
    """``bool()`` of a traced array (an ``if``, ``while``, ``and``/``or``, ``assert``).

    Example:
      >>> import functx
      >>> try:
      ...     functx.jit(lambda x: 1.0 if x > 0 else -1.0)(2.0)
      ... except functx.errors.TracerBoolConversionError as e:
      ...     print(type(e).__name__)
      TracerBoolConversionError
    """


class TracerIntegerConversionError(ConcretizationError):
    """``operator.index()`` of a traced array (a Python index or size).

    Differences from JAX: a subclass of ``ConcretizationTypeError`` here (not in JAX); a TypeError
    in both.

    Example:
      >>> import functx
      >>> try:
      ...     functx.jit(lambda x, n: x * [1.0, 2.0][n])(1.0, 1)
      ... except functx.errors.TracerIntegerConversionError as e:
      ...     print(type(e).__name__)
      TracerIntegerConversionError
    """


class TracerArrayConversionError(ConcretizationError):
    """``numpy.asarray()`` (``__array__``) of a traced array.

    Differences from JAX: a subclass of ``ConcretizationTypeError`` here (not in JAX); a TypeError
    in both.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> try:
      ...     functx.jit(lambda x: np.sin(np.asarray(x)))(1.0)
      ... except functx.errors.TracerArrayConversionError as e:
      ...     print(type(e).__name__)
      TracerArrayConversionError
    """


class UnexpectedTracerError(FunctxTypeError):
    """A tracer used after its trace ended (a value stored in a global or a closure).

    Example:
      >>> import functx
      >>> leaked = []
      >>> _ = functx.make_jaxpr(lambda x: leaked.append(x) or x)(1.0)
      >>> try:
      ...     leaked[0] + 1
      ... except functx.errors.UnexpectedTracerError as e:
      ...     print(type(e).__name__)
      UnexpectedTracerError
    """


class NonConcreteBooleanIndexError(FunctxTypeError, FunctxIndexError):
    """A boolean mask index that is traced: the result's shape would depend on its values
    (JAX's NonConcreteBooleanIndexError, an IndexError; a TypeError in functx before).

    Differences from JAX: an IndexError as in JAX, and also a TypeError (what functx raised before).

    Example:
      >>> import functx
      >>> import functx.numpy as jnp
      >>> try:
      ...     functx.jit(lambda x: x[x > 0])(jnp.arange(3.0))
      ... except functx.errors.NonConcreteBooleanIndexError as e:
      ...     print(type(e).__name__)
      NonConcreteBooleanIndexError
    """


class JAXTypeError(FunctxTypeError):
    """JAX's base class of its own type errors (``jax.errors.JAXTypeError``), for code that
    catches it; functx raises its subclasses below or ``FunctxTypeError``.

    Example:
      >>> import functx
      >>> issubclass(functx.errors.KeyReuseError, functx.errors.JAXTypeError)
      True
    """


class JAXIndexError(FunctxIndexError):
    """JAX's base class of its own index errors (``jax.errors.JAXIndexError``).

    Example:
      >>> import functx
      >>> issubclass(functx.errors.JAXIndexError, IndexError)
      True
    """


class KeyReuseError(JAXTypeError):
    """A PRNG key used twice where key reuse is checked (``jax.errors.KeyReuseError``; functx
    does not check key reuse, so it never raises it: the class is here for code that catches it).

    Example:
      >>> import functx
      >>> issubclass(functx.errors.KeyReuseError, TypeError)
      True
    """


class JaxprTypeError(FunctxTypeError):
    """A Jaxpr that fails its type check (``jax.errors.JaxprTypeError``).

    Example:
      >>> import functx
      >>> issubclass(functx.errors.JaxprTypeError, TypeError)
      True
    """


class JaxRuntimeError(FunctxError, RuntimeError):
    """An error while a compiled program runs (``jax.errors.JaxRuntimeError``, a RuntimeError).

    Example:
      >>> import functx
      >>> try:
      ...     raise functx.errors.JaxRuntimeError("a kernel failed")
      ... except RuntimeError as e:
      ...     print(e)
      a kernel failed
    """


class CheckifyRuntimeError(FunctxValueError):
    """A failed ``functx.experimental.checkify.check`` (or an ``Error`` thrown): a ValueError, as
    JAX's ``jax.experimental.checkify.JaxRuntimeError`` is; ``checkify.JaxRuntimeError`` names it.

    Example:
      >>> import numpy as np
      >>> from functx.experimental import checkify
      >>> try:
      ...     checkify.check(False, "x is {}", np.asarray(2.0, np.float32))
      ... except ValueError as e:
      ...     print(type(e).__name__, e)
      CheckifyRuntimeError x is 2.0 (`check` failed)
    """


class FunctxRuntimeError(FunctxError, RuntimeError):
    """A call that is wrong for the state it finds (a second profiler trace, ``stop_trace``
    with none running): a RuntimeError, as JAX raises there.

    Example:
      >>> import functx
      >>> try:
      ...     functx.profiler.stop_trace()
      ... except RuntimeError as e:
      ...     print(type(e).__name__)
      FunctxRuntimeError
    """


class FunctxFloatingPointError(FunctxError, FloatingPointError):
    """A NaN or an infinity where ``functx.debug_nans`` / ``functx.debug_infs`` are on (JAX raises
    a FloatingPointError there); the message names the operation and the user's line.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> with functx.debug_nans(True):
      ...     try:
      ...         jnp.log(jnp.float32(-1.0))
      ...     except FloatingPointError as e:
      ...         print(type(e).__name__)
      FunctxFloatingPointError
    """


class InconclusiveDimensionOperation(FunctxError):
    """A shape operation on symbolic dimensions whose result is not known
    (``jax.errors.InconclusiveDimensionOperation``; functx has no symbolic shapes, so it never
    raises it).

    Example:
      >>> import functx
      >>> issubclass(functx.errors.InconclusiveDimensionOperation, Exception)
      True
    """


class UnsupportedError(FunctxError, NotImplementedError):
    """A primitive has no rule in some transform or backend (a ``NotImplementedError``); inside
    ``jit`` functx raises it rather than falling back to the interpreter.

    Example:
      >>> import functx
      >>> issubclass(functx.UnsupportedError, NotImplementedError)
      True
    """


class UnsupportedValueError(UnsupportedError, FunctxValueError):
    """A transform functx (like JAX) does not support for this input, where JAX raises
    ``ValueError`` (reverse mode of a ``while_loop``): both an ``UnsupportedError`` and a
    ``ValueError``.

    Example:
      >>> from functx.errors import UnsupportedValueError
      >>> issubclass(UnsupportedValueError, (NotImplementedError, ValueError))
      True
    """


class CacheWarning(UserWarning, RuntimeWarning):
    """A compile-cache directory functx does not trust (owned by another user, or writable by
    others) or cannot write: functx goes on with a private temporary directory (no JAX
    counterpart).

    Example:
      >>> import warnings
      >>> import functx
      >>> with warnings.catch_warnings():
      ...     warnings.filterwarnings("ignore", category=functx.CacheWarning)
    """


# --- names JAX has and functx lacks ---------------------------------------------------------------
# The "Differences from JAX" page of the documentation site; its source in the repository.
DIFFERENCES = 'the "Differences from JAX" page of the functx documentation (docs/differences.md)'
_names: dict[str, frozenset] = {}


def missing_name(module: str, name: str) -> AttributeError:
    """The error for ``module.name`` that does not exist: a ``FunctxAttributeError`` saying it is
    not implemented yet (and where the differences are listed) when JAX's counterpart of
    ``module`` has the name, else Python's plain AttributeError."""
    entry = JAX_NAMES.get(module)
    if entry is not None:
        if module not in _names:
            _names[module] = frozenset(entry[1].split())
        if name in _names[module]:
            return FunctxAttributeError(
                f"module {module!r} has no attribute {name!r}: JAX's {entry[0]}.{name} is not "
                f"implemented in functx yet: {DIFFERENCES} lists what functx lacks and where it "
                "differs from JAX"
            )
    return AttributeError(f"module {module!r} has no attribute {name!r}")


def missing_name_hook(module: str):
    """A module ``__getattr__`` for ``module`` that raises ``missing_name``'s error: a public
    namespace writes ``__getattr__ = missing_name_hook(__name__)``."""

    def __getattr__(name: str):
        raise missing_name(module, name)

    return __getattr__


# A JAX name functx lacks (jax.errors'): an AttributeError that says so.
__getattr__ = missing_name_hook(__name__)
