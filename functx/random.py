"""``functx.random``: JAX's counter-based pseudo-random numbers, bit for bit.

A key is either a raw ``uint32[..., 2]`` array (``PRNGKey``, JAX's legacy keys) or a typed key
array (``key``: a ``KeyArray`` whose shape leaves out the trailing 2). Every function takes both
and returns the kind it was given. Keys are split and sampled with the Threefry-2x32 hash (the
``threefry2x32`` primitive of ``functx.control.threefry``) in JAX's default configuration
(``jax_threefry_partitionable``: the counters of an array of bits are its element indices), so the
same key, shape and dtype give JAX's bits, eagerly and under ``jit``, ``vmap``, ``scan`` and
``fori_loop``, where the hash compiles into the kernels that consume it.

Which results equal JAX's to the bit (JAX 0.10 on an x86-64 CPU): ``bits``, ``split``,
``fold_in``, ``uniform``, ``randint``, ``bernoulli``, ``rademacher``, ``permutation``, ``choice``,
``categorical``, the counts of ``poisson``, ``geometric``, ``binomial`` and ``multinomial``, and the
samplers that apply ``log``/``log1p``/``erf_inv``/``exp``/``erf`` to uniform bits: ``normal``,
``exponential``, ``gumbel``, ``laplace``, ``logistic``, ``cauchy``, ``weibull_min``, ``rayleigh``,
``gamma``, ``loggamma``, ``t``, ``generalized_normal``, ``lognormal``, ``pareto``, ``beta``,
``dirichlet``, ``chisquare``, ``f``, ``truncated_normal``, ``maxwell``, ``double_sided_maxwell``,
``wald`` and ``multivariate_normal`` (float32 and float64, eagerly; float32 under ``jit`` too).
They evaluate those functions (and ``poisson`` its ``lgamma``) as XLA's CPU backend does
(``functx._xlamath``: its polynomials, its fused multiply-adds) and make the rewrites XLA's
compiler makes inside JAX's jitted samplers (a division by a broadcast parameter as a product by
its reciprocal, constant factors folded).
Not yet bit for bit, to a few ulp: ``ball``, float32 ``orthogonal`` and ``multivariate_normal``
in more than 3 dimensions (other reductions of XLA's); under ``jit``, float64 ``log`` is glibc's
vector function, which differs from the scalar one XLA calls by an ulp for about a quarter of
inputs. XLA fuses ``uniform``'s scaling ``u * (maxval - minval) + minval`` into a fused
multiply-add; functx rounds it once too (in Dekker's exact product and Knuth's exact sum).
``multivariate_normal`` factors with ``functx.numpy.linalg.cholesky`` (``method="svd"``/
``"eigh"`` raise ``NotImplementedError``), ``orthogonal`` with ``functx.numpy.linalg.qr``
(float64: JAX's bits; float32: factored in float64, to rounding).

Sorting (``permutation``, ``choice`` without replacement, ``categorical(replace=False)``) uses a
bitonic sorting network on (key, index) pairs written with ``functx.numpy`` (functx has no sort
primitive yet): it gives exactly the stable sort JAX uses, in O(n log^2 n).
"""

from __future__ import annotations

import inspect
import math
import operator
import re
import textwrap
import warnings
from collections.abc import Sequence

import numpy as np

from functx import _xlamath as _xm, config, dtypes, lax, numpy as jnp, tree_util
from functx.control.threefry import threefry2x32
from functx.errors import (
    FunctxTypeError,
    FunctxValueError,
    KeyReuseError,
    missing_name_hook as _missing_name_hook,
)
from functx.source_info import where
from functx.transforms.vmap import vmap as functx_vmap

__all__ = [
    "KeyArray",
    "PRNGKey",
    "ball",
    "bernoulli",
    "beta",
    "binomial",
    "bits",
    "categorical",
    "cauchy",
    "chisquare",
    "choice",
    "clone",
    "dirichlet",
    "double_sided_maxwell",
    "exponential",
    "f",
    "fold_in",
    "gamma",
    "generalized_normal",
    "geometric",
    "gumbel",
    "key",
    "key_data",
    "key_dtype",
    "key_impl",
    "laplace",
    "loggamma",
    "logistic",
    "lognormal",
    "maxwell",
    "multinomial",
    "multivariate_normal",
    "normal",
    "orthogonal",
    "pareto",
    "permutation",
    "poisson",
    "rademacher",
    "randint",
    "random_gamma_p",
    "rayleigh",
    "split",
    "t",
    "triangular",
    "truncated_normal",
    "uniform",
    "wald",
    "weibull_min",
    "wrap_key_data",
]

_U32 = dtypes.uint32
_UINT = {8: dtypes.uint8, 16: dtypes.uint16, 32: dtypes.uint32, 64: dtypes.uint64}


# --- typed keys ----------------------------------------------------------------------------------
class _KeyDType:
    """The dtype of typed keys, printed as JAX prints it (``key<fry>``)."""

    name = "key<fry>"

    def __repr__(self):
        return self.name

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, _KeyDType) or other == self.name

    def __hash__(self):
        return hash(self.name)


KEY_DTYPE = _KeyDType()


class KeyArray:
    """An array of typed Threefry keys (what ``key`` and ``wrap_key_data`` return), JAX's key arrays
    of dtype ``key<fry>``.

    Its ``shape`` leaves out the trailing 2 of the ``uint32`` key data (``key_data`` returns the
    data). It is a pytree whose one leaf is that data, so it passes through ``jit``, ``vmap``,
    ``lax.scan`` carries and ``tree_util``.

    Differences from JAX: a typed key is this pytree over the ``uint32`` key data, not an array of a
    key dtype: ``jnp`` functions take raw keys, not typed ones.

    Example:
      >>> from functx import random
      >>> keys = random.split(random.key(0), 3)
      >>> keys.shape, random.key_data(keys).shape
      ((3,), (3, 2))
    """

    __slots__ = ("_data", "_consumed", "_parent")

    def __init__(self, data):
        self._data = data
        # under functx.debug_key_reuse: which keys are consumed (a bool array of the shape;
        # None: none), and (array, index) when this one is an element of another
        self._consumed = None
        self._parent = None

    @property
    def shape(self):
        return tuple(np.shape(self._data)[:-1])

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def dtype(self):
        return KEY_DTYPE

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __getitem__(self, idx):
        idx = idx if isinstance(idx, tuple) else (idx,)
        out = KeyArray(self._data[(*idx, slice(None)) if Ellipsis in idx else idx])
        if config.debug_key_reuse.value:
            _check_unconsumed(self, "slice", idx)
            out._parent = (self, idx)
        return out

    def __eq__(self, other):
        if not isinstance(other, KeyArray):
            return NotImplemented
        return jnp.all(jnp.asarray(self._data) == jnp.asarray(other._data), axis=-1)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else jnp.logical_not(eq)

    __hash__ = None

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return KeyArray(jnp.reshape(self._data, (*shape, 2)))

    def __repr__(self):
        return f"Array({self.shape}, dtype={KEY_DTYPE}) overlaying:\n{self._data}"


tree_util.register_pytree_node(KeyArray, lambda k: ((k._data,), None), lambda _, c: KeyArray(c[0]))


# --- functx.debug_key_reuse: a typed key consumed twice raises ----------------------------------
_KEEP_KEY = frozenset({"key_data", "wrap_key_data", "key_impl", "fold_in"})  # (not consumers)


def _check_unconsumed(key, what, idx=()):
    """KeyReuseError when a key of ``key[idx]`` was consumed (``what``: the operation)."""
    if key._consumed is not None and np.any(key._consumed[idx]):
        raise KeyReuseError(f"Previously-consumed key passed to {what}{where()}")


def _consume(key, name):
    """Mark a typed key consumed (and its element in the array it came from, if any)."""
    _check_unconsumed(key, f"functx.random.{name}")
    key._consumed = np.ones(key.shape, bool)
    while key._parent is not None:
        key, idx = key._parent
        if key._consumed is None:
            key._consumed = np.zeros(key.shape, bool)
        key._consumed[idx] = True


def _check_key(name, key, allow_batched=False):
    """The uint32[..., 2] data of ``key`` and whether it was a typed key (consumed, under
    ``functx.debug_key_reuse``, unless ``name`` keeps its key)."""
    if isinstance(key, KeyArray):
        data, typed, shape = jnp.asarray(key._data), True, key.shape
        if config.debug_key_reuse.value and name not in _KEEP_KEY:
            _consume(key, name)
    else:
        try:
            data = jnp.asarray(key)
        except Exception:
            raise FunctxTypeError(f"unexpected PRNG key type {type(key)}") from None
        typed, shape = False, data.shape
        if data.dtype != _U32:
            raise FunctxTypeError(
                "functx encountered invalid PRNG key data: expected key_data.dtype = uint32; "
                f"got dtype={data.dtype}"
            )
    if data.shape[-1:] != (2,):
        raise FunctxTypeError(
            "functx encountered invalid PRNG key data: expected key_data.shape to end with "
            f"(2,); got shape={data.shape}"
        )
    if not allow_batched and data.ndim > 1:
        raise FunctxValueError(
            f"{name} accepts a single key, but was given a key array of shape {shape} != (). "
            "Use functx.vmap for batching."
        )
    return data, typed


def _out_key(typed, data):
    return KeyArray(data) if typed else data


# --- the Threefry-based core (on key data) --------------------------------------------------------
def _iota_2x32(shape):
    """The high and low words of each element's flat index (JAX's ``iota_2x32_shape``)."""
    n = math.prod(shape)
    if not shape:
        z = jnp.zeros((), _U32)
        return z, z
    if n >= 2**32:
        raise NotImplementedError("random bits array of size 2 ** 32 or more")
    lo = lax.reshape(lax.iota(_U32, n), shape)
    return jnp.zeros(shape, _U32), lo


def _hash_counters(data, shape):
    hi, lo = _iota_2x32(shape)
    return threefry2x32(data[0], data[1], hi, lo)


def _split(data, shape):
    if not config.threefry_partitionable.value:
        return lax.reshape(_hash_iota(data, 2 * math.prod(shape)), (*shape, 2))
    y1, y2 = _hash_counters(data, shape)
    return jnp.stack([y1, y2], axis=len(shape))


def _hash_iota(data, n):
    """The ``n`` words of JAX's original counter layout (``jax_threefry_partitionable`` off):
    the counters ``0 .. n-1`` (a 0 appended when ``n`` is odd) hashed as two halves, the first
    half's words then the second's."""
    if n > 2**32 - 1:
        raise NotImplementedError(
            "random bits of more than 2 ** 32 - 1 words with jax_threefry_partitionable off"
        )
    half = (n + 1) // 2
    first = lax.iota(_U32, half)
    second = first + np.uint32(half)
    if n % 2:  # (the padding counter is 0)
        second = jnp.where(first == np.uint32(half - 1), np.uint32(0), second)
    y1, y2 = threefry2x32(data[0], data[1], first, second)
    return lax.concatenate([y1, y2], 0)[:n]


def _fold_in(data, msg):
    y1, y2 = threefry2x32(data[0], data[1], jnp.zeros((), _U32), msg)
    return jnp.stack([y1, y2])


def _bits(data, bit_width, shape):
    dt = _UINT[bit_width]
    if not config.threefry_partitionable.value:
        return _bits_original(data, bit_width, shape, dt)
    y1, y2 = _hash_counters(data, shape)
    if bit_width == 64:
        hi = lax.convert_element_type(y1, dt)
        lo = lax.convert_element_type(y2, dt)
        return lax.bitwise_or(lax.mul(hi, np.asarray(2**32, dt)), lo)
    x = lax.bitwise_xor(y1, y2)
    return x if bit_width == 32 else lax.convert_element_type(x, dt)


def _bits_original(data, bit_width, shape, dt):
    """``_bits`` in JAX's original layout: ``ceil(bit_width * size / 32)`` hashed words; 64-bit
    values join the first half's words (high) to the second half's (low), 8- and 16-bit ones
    are the words' little-endian pieces."""
    size = math.prod(shape)
    words = _hash_iota(data, -(-bit_width * size // 32))
    if bit_width == 64:
        hi = lax.convert_element_type(words[:size], dt)
        lo = lax.convert_element_type(words[size:], dt)
        out = lax.bitwise_or(lax.mul(hi, np.asarray(2**32, dt)), lo)
    elif bit_width == 32:
        out = words
    else:
        per = 32 // bit_width
        j = lax.iota(_U32, size)
        piece = lax.shift_right_logical(words[j // np.uint32(per)], (j % per) * bit_width)
        out = lax.convert_element_type(piece, dt)
    return lax.reshape(out, shape)


# --- arguments ---------------------------------------------------------------------------------
def _x64():
    return dtypes.default_int() == dtypes.int64


def _user_dtype(name, dtype, default):
    """A requested dtype, canonicalized as JAX does: ``None`` is the default of the
    ``jax_enable_x64`` mode (``float`` or ``int``), and an explicit 64-bit dtype that the mode
    narrows to 32 bits warns, as JAX's does."""
    if dtype is None:
        return dtypes.canonicalize(default)
    dt = dtypes.canonicalize(dtype)
    if dtype not in (float, int) and np.dtype(dtype) != dt:
        warnings.warn(
            f"Explicitly requested dtype {np.dtype(dtype)} requested in {name} is not "
            f"available, and will be truncated to dtype {dt}. To enable more dtypes, set the "
            "jax_enable_x64 configuration option or the JAX_ENABLE_X64 shell environment "
            "variable.",
            UserWarning,
            stacklevel=3,
        )
    return dt


def _float_dtype(name, dtype, what="a float dtype"):
    dt = _user_dtype(name, dtype, float)
    if not dtypes.is_float(dt):
        raise FunctxValueError(f"dtype argument to `{name}` must be {what}, got {dt}")
    return dt


def _shape(name, shape):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise FunctxTypeError(
            f"{name}: shape must be a sequence of integers, got {shape!r}"
        ) from None
    if any(d < 0 for d in shape):
        raise FunctxValueError(f"{name}: shape {shape} has a negative dimension")
    return shape


def _check_shape(name, shape, *param_shapes):
    if param_shapes:
        got = np.broadcast_shapes(shape, *param_shapes)
        if got != tuple(shape):
            raise FunctxValueError(
                f"{name} parameter shapes must be broadcast-compatible with shape argument, and "
                f"the result of broadcasting the shapes must equal the shape argument, but got "
                f"result {got} for shape argument {tuple(shape)}."
            )


def _broadcast_shapes(name, *shapes):
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        raise FunctxTypeError(
            f"{name} got incompatible shapes for broadcasting: "
            + ", ".join(str(tuple(s)) for s in shapes)
        ) from None


def _param_shape(name, shape, *params):
    """``shape``, checked against the parameters' shapes, or (``None``) their broadcast shape."""
    if shape is None:
        return _broadcast_shapes(name, *(np.shape(p) for p in params))
    shape = _shape(name, shape)
    _check_shape(name, shape, *(np.shape(p) for p in params))
    return shape


# --- docstrings -----------------------------------------------------------------------------------
# The samplers' docstrings share the meanings of ``key``, ``shape`` and ``dtype``, the usual
# Returns and the opening of their examples: ``_documented`` writes those parts around each
# sampler's own summary, arguments and example.
_FLOAT_DTYPE = "a float dtype (default float64 with ``jax_enable_x64``, else float32)."
_INT_DTYPE = "an integer dtype (default int64 with ``jax_enable_x64``, else int32)."
_OF_SHAPE_AND_DTYPE = "An array of ``shape`` and ``dtype``."
_LIBMVEC = (
    "under C++ ``jit`` {} values can be 1-10 ulp from the eager ones, which are JAX's bits: "
    "compiled loops call glibc's vector math (libmvec)."
)


def _shape_doc(names, default):
    """What ``shape`` means when the sampler does not say: the result's shape, with its
    default (``()``, or the broadcast shape of the parameters ahead of it)."""
    if default is inspect.Parameter.empty:
        return "the result's shape."
    if default == ():
        return "the result's shape. Default ``()``."
    params = names[1 : names.index("shape")]
    if len(params) == 1:
        return f"the result's shape (default ``{params[0]}``'s shape)."
    return "the result's shape (default: the parameters' broadcast shape)."


def _documented(
    summary, *, call, prints, returns=_OF_SHAPE_AND_DTYPE, differs=None, setup=(), **meanings
):
    """Writes a sampler's docstring: the ``summary``; its Arguments in the signature's order, each
    meaning from ``meanings`` (by default ``key`` is a single key, ``dtype`` a float dtype and
    ``shape`` the result's shape, with its default); ``returns``; ``differs`` as a "Differences
    from JAX" paragraph; and an example that runs the lines of ``setup``, then prints
    ``random.<name>(random.PRNGKey(0), <call>)`` as ``prints``."""

    def fill(text, indent="", hang=""):  # (lines of 96 characters, not breaking ``code``)
        text = re.sub(r"``.*?``", lambda code: code[0].replace(" ", "\0"), text)
        lines = textwrap.wrap(
            text,
            96,
            initial_indent=indent,
            subsequent_indent=indent + hang,
            break_long_words=False,
            break_on_hyphens=False,
        )
        return "\n".join(lines).replace("\0", " ")

    def set_doc(sampler):
        params = inspect.signature(sampler).parameters
        names = list(params)
        given = {"key": "a single key.", "dtype": _FLOAT_DTYPE, **meanings}
        if "shape" in params:
            given.setdefault("shape", _shape_doc(names, params["shape"].default))
        unknown, missing = set(meanings) - set(names), set(names) - set(given)
        if unknown or missing:
            raise TypeError(
                f"the docstring of {sampler.__name__}: no meaning for {sorted(missing)}, "
                f"meanings of {sorted(unknown)} that are not its arguments"
            )
        lines = [fill(summary), "", "Arguments:"]
        lines += [fill(f"{name}: {given[name]}", "    ", "    ") for name in names]
        lines += ["", "Returns:", fill(returns, "    "), ""]
        if differs:
            lines += [fill(f"Differences from JAX: {differs}"), ""]
        code = [*setup, f"print(random.{sampler.__name__}(random.PRNGKey(0), {call}))"]
        imports = ["import functx.random as random"]
        if any("np." in line for line in code):
            imports.insert(0, "import numpy as np")
        lines += ["Example:", *(f"    >>> {line}" for line in imports + code)]
        lines += [f"    {line}" for line in prints.split("\n")]
        sampler.__doc__ = textwrap.indent("\n".join(lines), "    ").lstrip() + "\n    "
        return sampler

    return set_doc


# --- keys -----------------------------------------------------------------------------------------
def _seed_data(ctor, seed):
    if isinstance(seed, KeyArray):
        raise FunctxTypeError(f"{ctor} accepts a scalar seed, but was given a PRNG key.")
    if np.ndim(seed):
        raise FunctxTypeError(
            f"{ctor} accepts a scalar seed, but was given an array of shape {np.shape(seed)} "
            "!= (). Use functx.vmap for batching"
        )
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        # Python ints go through int64 (too large: OverflowError, as in JAX), then canonicalize
        seed = jnp.asarray(np.int64(seed) if isinstance(seed, int) else seed)
    else:
        seed = jnp.asarray(seed)
    if not dtypes.is_int(seed.dtype):
        raise FunctxTypeError(f"PRNG key seed must be an integer; got {seed!r}")
    if seed.dtype.itemsize == 8:
        hi = lax.convert_element_type(
            lax.shift_right_logical(seed, np.asarray(32, seed.dtype)), _U32
        )
    else:
        hi = jnp.zeros((), _U32)
    lo = lax.convert_element_type(seed, _U32)  # the low 32 bits (a wrapping conversion)
    return jnp.stack([hi, lo])


def PRNGKey(seed, *, impl=None):  # noqa: N802 - JAX's name
    """A raw key (a ``uint32[2]`` array) from an integer seed, as ``jax.random.PRNGKey``.

    Arguments:
        seed: a 64- or 32-bit integer (a Python int goes through int64, as in JAX).
        impl: only ``None`` or ``"threefry2x32"`` (the one implementation functx has).

    Returns:
        The key: ``[seed >> 32, seed & 0xFFFFFFFF]`` as uint32 (the high word is 0 for 32-bit
        seeds).

    Example:
        >>> import functx.random as random
        >>> print(random.PRNGKey(42))
        [ 0 42]
    """
    _check_impl(impl)
    return _seed_data("PRNGKey", seed)


def key(seed, *, impl=None, dtype=None):
    """A typed key (a ``KeyArray`` of shape ``()``) from an integer seed, as ``jax.random.key``.

    Arguments:
        seed: a 64- or 32-bit integer.
        impl: only ``None`` or ``"threefry2x32"``.
        dtype: the same, spelled as JAX's key dtype argument.

    Returns:
        A scalar key array, which every ``functx.random`` function takes.

    Differences from JAX: the typed key is a ``KeyArray`` pytree over the ``uint32`` data, not an
    array of a key dtype: ``jnp`` functions take raw keys, not typed ones.

    Example:
        >>> import functx.random as random
        >>> k = random.key(0)
        >>> print(k.shape, k.dtype, random.key_data(k))
        () key<fry> [0 0]
    """
    if impl is not None and dtype is not None:
        raise FunctxValueError("Cannot specify both `impl` and `dtype` arguments to key")
    _check_impl(impl if dtype is None else dtype)
    return KeyArray(_seed_data("key", seed))


def _check_impl(impl):
    if impl is not None and impl not in ("threefry2x32", KEY_DTYPE):
        raise FunctxValueError(
            f"unrecognized PRNG implementation {impl!r}: functx has only 'threefry2x32'"
        )


def key_data(keys):
    """The ``uint32`` data of an array of keys (``shape + (2,)``), as ``jax.random.key_data``.

    Arguments:
        keys: a typed key array, or raw key data (returned as it is).

    Returns:
        A uint32 array whose last axis has size 2.

    Example:
        >>> import functx.random as random
        >>> print(random.key_data(random.split(random.key(0))))
        [[1797259609 2579123966]
         [ 928981903 3453687069]]
    """
    data, _ = _check_key("key_data", keys, allow_batched=True)
    return data


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
    """Typed keys around ``uint32`` key data, as ``jax.random.wrap_key_data``.

    Arguments:
        key_bits_array: a uint32 array whose last axis has size 2.
        impl: only ``None`` or ``"threefry2x32"``.
        dtype: the same, spelled as JAX's key dtype argument.

    Returns:
        A ``KeyArray`` of shape ``key_bits_array.shape[:-1]``.

    Example:
        >>> import numpy as np
        >>> import functx.random as random
        >>> k = random.wrap_key_data(np.array([0, 42], np.uint32))
        >>> print(k.shape, random.key_data(k))
        () [ 0 42]
    """
    if impl is not None and dtype is not None:
        raise FunctxValueError("Cannot specify both `impl` and `dtype` arguments to wrap_key_data")
    _check_impl(impl if dtype is None else dtype)
    data, _ = _check_key("wrap_key_data", key_bits_array, allow_batched=True)
    return KeyArray(data)


def key_impl(keys):
    """The name of the keys' PRNG implementation: ``"threefry2x32"`` (``jax.random.key_impl``).

    Arguments:
        keys: typed keys or raw key data.

    Returns:
        ``"threefry2x32"``.

    Example:
        >>> import functx.random as random
        >>> random.key_impl(random.key(0))
        'threefry2x32'
    """
    _check_key("key_impl", keys, allow_batched=True)
    return "threefry2x32"


def split(key, num=2):
    """Split a key into ``num`` new keys (a new leading axis, or axes for a tuple ``num``),
    as ``jax.random.split``.

    Arguments:
        key: a single key (raw ``uint32[2]`` data or a typed key).
        num: a positive integer or a tuple of them: the shape of the new keys. Default 2.

    Returns:
        The new keys, of the kind ``key`` was: raw data of shape ``(*num, 2)``, or typed keys of
        shape ``num``.

    Example:
        >>> import functx.random as random
        >>> print(random.split(random.PRNGKey(0)))
        [[1797259609 2579123966]
         [ 928981903 3453687069]]
    """
    data, typed = _check_key("split", key)
    shape = _shape("split", tuple(num) if isinstance(num, Sequence) else (num,))
    return _out_key(typed, _split(data, shape))


@_documented(
    "A new key from ``key`` and a 32-bit integer, as ``jax.random.fold_in``.",
    call="1",
    prints="[ 928981903 3453687069]",
    returns="A new key of the kind ``key`` was.",
    data="a scalar integer (taken modulo 2**32).",
)
def fold_in(key, data):
    kdata, typed = _check_key("fold_in", key)
    if np.ndim(data):
        raise FunctxTypeError(
            f"fold_in accepts a scalar, but was given an array of shape {np.shape(data)} != (). "
            "Use functx.vmap for batching."
        )
    if isinstance(data, (int, np.integer)):
        msg = jnp.asarray(np.asarray(data, _U32))  # (a Python int out of range: OverflowError)
    else:
        msg = lax.convert_element_type(jnp.asarray(data), _U32)
    return _out_key(typed, _fold_in(kdata, msg))


def clone(key):
    """The key itself (``jax.random.clone``: keys are immutable values in functx); under
    ``functx.debug_key_reuse``, a typed key is a fresh, unconsumed copy.

    Arguments:
        key: a key or array of keys.

    Returns:
        ``key``.

    Example:
        >>> import functx.random as random
        >>> print(random.clone(random.PRNGKey(3)))
        [0 3]
    """
    return KeyArray(key._data) if isinstance(key, KeyArray) else key


@_documented(
    "Uniform random bits as unsigned integers, as ``jax.random.bits``.",
    call="(3,), np.uint32",
    prints="[4070199207 4202968722 1427181096]",
    dtype="an unsigned integer dtype (default uint64 with ``jax_enable_x64``, else uint32).",
)
def bits(key, shape=(), dtype=None):
    data, _ = _check_key("bits", key)
    dt = _user_dtype("bits", dtype, np.uint64 if _x64() else np.uint32)
    if not dtypes.is_unsigned(dt):
        raise FunctxValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dt}")
    return _bits(data, dt.itemsize * 8, _shape("bits", shape))


# --- uniform floats and integers ------------------------------------------------------------------
def _unit_floats(data, shape, dtype):
    """Floats in [0, 1): the mantissa bits of ``bits`` under exponent 0, minus 1 (JAX's uniform
    bits before scaling; computed as ``m * 2**-nmant``, the same numbers exactly)."""
    fi = dtypes.finfo(dtype)
    nmant = int(fi.nmant)
    rng_bits = fi.bits if nmant >= 8 else 8  # (JAX draws 8 bits for bfloat16)
    b = _bits(data, rng_bits, shape)
    udt = _UINT[rng_bits]
    m = lax.div(b, np.asarray(2 ** (rng_bits - nmant), udt))  # a logical right shift
    return lax.mul(lax.convert_element_type(m, dtype), np.asarray(2.0**-nmant, dtype))


def _uniform(data, shape, dtype, minval, maxval):
    minval = lax.convert_element_type(jnp.asarray(minval), dtype)
    maxval = lax.convert_element_type(jnp.asarray(maxval), dtype)
    _broadcast_shapes("uniform", shape, minval.shape, maxval.shape)
    floats = _unit_floats(data, shape, dtype)
    span = maxval - minval
    f64 = dtypes.float64
    if dtype == dtypes.float32 and dtypes.canonicalize(f64) == f64:
        # the product of two float32 numbers is exact in float64, so the float64 sum rounds
        # (almost always) as the fused multiply-add does; compiled code keeps it so too
        wide = lax.convert_element_type(floats, f64) * lax.convert_element_type(span, f64)
        scaled = lax.convert_element_type(wide + lax.convert_element_type(minval, f64), dtype)
    elif dtype in (dtypes.float32, dtypes.float64):
        # (without float64: Dekker's product, which a compiler contracting to FMAs may perturb)
        scaled = _fma(floats, span, minval)
    else:
        scaled = floats * span + minval
    # (max(scaled, minval): the same as JAX's max(minval, scaled), operands in the order that
    # Triton's interpreter takes when minval is a constant)
    return jnp.reshape(jnp.maximum(scaled, minval), shape)


def _fma(a, b, c):
    """``a * b + c`` rounded once (almost always), in the operands' own precision: Dekker's exact
    product and Knuth's exact sum, then one final rounding (XLA fuses uniform's scaling into a
    fused multiply-add)."""
    dt = a.dtype
    factor = np.asarray(2.0 ** ((dtypes.finfo(dt).nmant + 2) // 2) + 1, dt)  # Veltkamp's split

    def split(x):
        t = x * factor
        hi = t - (t - x)
        return hi, x - hi

    p = a * b
    ahi, alo = split(a)
    bhi, blo = split(b)
    e = ((ahi * bhi - p) + ahi * blo + alo * bhi) + alo * blo
    s = p + c
    bb = s - p
    t = (p - (s - bb)) + (c - bb)
    return s + (t + e)


@_documented(
    "Uniform floats in ``[minval, maxval)``, as ``jax.random.uniform``.",
    call="(3,), np.float32",
    prints="[0.947667   0.9785799  0.33229148]",
    minval="the inclusive lower bound, broadcast-compatible with ``shape``. Default 0.",
    maxval="the exclusive upper bound, broadcast-compatible with ``shape``. Default 1.",
)
def uniform(key, shape=(), dtype=None, minval=0.0, maxval=1.0):
    data, _ = _check_key("uniform", key)
    dt = _float_dtype("uniform", dtype)
    return _uniform(data, _shape("uniform", shape), dt, minval, maxval)


def _convert_and_clip_integer(val, dtype):
    lo = max(int(dtypes.iinfo(dtype).min), int(dtypes.iinfo(val.dtype).min))
    hi = min(int(dtypes.iinfo(dtype).max), int(dtypes.iinfo(val.dtype).max))
    lo, hi = np.asarray(lo, val.dtype), np.asarray(hi, val.dtype)
    return jnp.clip(val, lo, hi).astype(dtype)


def _as_int_array(x):
    x = jnp.asarray(x)
    return x if dtypes.is_int(x.dtype) else x.astype(int)


def _randint(data, shape, minval, maxval, dtype):
    minval, maxval = _as_int_array(minval), _as_int_array(maxval)
    _check_shape("randint", shape, minval.shape, maxval.shape)
    top = jnp.asarray(np.asarray(dtypes.iinfo(dtype).max, dtype))
    top = _convert_and_clip_integer(top, maxval.dtype)
    maxval_out_of_range = maxval > top
    minval = _convert_and_clip_integer(minval, dtype)
    maxval = _convert_and_clip_integer(maxval, dtype)
    nbits = dtypes.iinfo(dtype).bits
    keys = _split(data, (2,))
    higher, lower = _bits(keys[0], nbits, shape), _bits(keys[1], nbits, shape)
    udt = _UINT[nbits]
    span = lax.convert_element_type(maxval - minval, udt)
    span = jnp.where(maxval <= minval, np.asarray(1, udt), span)
    span = jnp.where(maxval_out_of_range & (maxval > minval), span + np.asarray(1, udt), span)
    span = jnp.broadcast_to(span, shape)
    mult = lax.rem(jnp.full(shape, np.asarray(2 ** (nbits // 2), udt)), span)
    mult = lax.rem(lax.mul(mult, mult), span)
    offset = lax.add(lax.mul(lax.rem(higher, span), mult), lax.rem(lower, span))
    offset = lax.rem(offset, span)
    return jnp.broadcast_to(minval, shape) + lax.convert_element_type(offset, dtype)


@_documented(
    "Uniform integers in ``[minval, maxval)``, as ``jax.random.randint``.",
    call="(5,), 0, 10, np.int32",
    prints="[9 0 2 3 1]",
    minval=(
        "the inclusive lower bound (clipped to the dtype's range), broadcast-compatible with "
        "``shape``."
    ),
    maxval="the exclusive upper bound (clipped to the dtype's range plus one).",
    dtype=_INT_DTYPE,
)
def randint(key, shape, minval, maxval, dtype=None):
    data, _ = _check_key("randint", key)
    dt = _user_dtype("randint", dtype, int)
    if not dtypes.is_int(dt) or dt == dtypes.bool_:
        raise FunctxTypeError(f"randint only accepts integer dtypes, got {dt}")
    shape = _shape("randint", shape)
    info = dtypes.iinfo(dt)
    sample_dt = dt
    if info.bits < 32:
        sample_dt = dtypes.int32
        minval = jnp.clip(_as_int_array(minval).astype(np.int32), int(info.min), int(info.max))
        maxval = jnp.clip(_as_int_array(maxval).astype(np.int32), int(info.min), int(info.max) + 1)
    return _randint(data, shape, minval, maxval, sample_dt).astype(dt)


# --- sorting by random keys (a bitonic network on (key, index) pairs) ---------------------------
def _sort_order(keys, less):
    """The permutation (int32, along the last axis) that sorts ``keys`` stably by ``less``
    (``less(ka, kb)`` a strict order; equal keys keep their index order)."""
    n = keys.shape[-1]
    if n <= 1:
        return jnp.zeros(keys.shape, np.int32)
    size = 1 << (n - 1).bit_length()
    batch = keys.shape[:-1]
    idx = jnp.broadcast_to(jnp.arange(size, dtype=np.int32), (*batch, size))
    if size > n:
        pad = jnp.broadcast_to(less.pad(keys.dtype), (*batch, size - n))
        keys = jnp.concatenate([keys, pad], axis=-1)

    def before(ka, ia, kb, ib):  # (ka, ia) sorts before (kb, ib)
        return less(ka, kb) | ((ka == kb) & (ia < ib))

    s = 2
    while s <= size:
        j = s // 2
        while j >= 1:
            blocks = size // (2 * j)
            k3 = jnp.reshape(keys, (*batch, blocks, 2, j))
            i3 = jnp.reshape(idx, (*batch, blocks, 2, j))
            ka, kb = k3[..., 0, :], k3[..., 1, :]
            ia, ib = i3[..., 0, :], i3[..., 1, :]
            # the direction of each block: ascending where bit s of its first position is 0
            up = ((np.arange(blocks) * 2 * j) & s) == 0
            up = np.broadcast_to(up[:, None], (blocks, j))
            swap = jnp.where(up, before(kb, ib, ka, ia), before(ka, ia, kb, ib))
            keys = jnp.reshape(
                jnp.stack([jnp.where(swap, kb, ka), jnp.where(swap, ka, kb)], axis=-2),
                (*batch, size),
            )
            idx = jnp.reshape(
                jnp.stack([jnp.where(swap, ib, ia), jnp.where(swap, ia, ib)], axis=-2),
                (*batch, size),
            )
            j //= 2
        s *= 2
    return idx[..., :n]


class _Ascending:
    def __call__(self, a, b):
        return a < b

    @staticmethod
    def pad(dtype):
        return jnp.asarray(np.asarray(np.iinfo(dtype).max, dtype))


class _Descending:
    def __call__(self, a, b):
        return a > b

    @staticmethod
    def pad(dtype):
        return jnp.asarray(np.asarray(-np.inf, dtype))


def _sort_along(sort_keys, x, axis):
    """``x`` reordered along ``axis`` by the stable ascending order of ``sort_keys`` (JAX's
    ``lax.sort_key_val``)."""
    k = jnp.moveaxis(sort_keys, axis, -1)
    order = _sort_order(k, _Ascending())
    out = jnp.take_along_axis(jnp.moveaxis(x, axis, -1), order, axis=-1)
    return jnp.moveaxis(out, -1, axis)


def _top_k_indices(x, k):
    """The indices of the ``k`` largest entries along the last axis, largest first, ties by
    index (``lax.top_k``)."""
    return _sort_order(x, _Descending())[..., :k]


def _shuffle(data, x, axis):
    exponent = 3  # JAX's number of sort rounds: ceil(3 ln(size) / ln(2**32 - 1))
    rounds = int(np.ceil(exponent * np.log(max(1, x.size)) / np.log(np.iinfo(np.uint32).max)))
    for _ in range(rounds):
        keys = _split(data, (2,))
        data, sub = keys[0], keys[1]
        x = _sort_along(_bits(sub, 32, x.shape), x, axis)
    return x


def _canonical_axis(axis, ndim):
    axis = operator.index(axis)
    if not -ndim <= axis < ndim:
        raise FunctxValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
    return axis % ndim


@_documented(
    "A random permutation of ``range(x)`` or of ``x`` along ``axis``, as "
    "``jax.random.permutation``.",
    call="5",
    prints="[0 1 4 3 2]",
    returns="The permuted array.",
    x="an integer n (permute ``arange(n)``) or an array.",
    axis="the axis to permute. Default 0.",
    independent="permute each slice along ``axis`` independently (else whole slices move).",
)
def permutation(key, x, axis=0, independent=False):
    data, _ = _check_key("permutation", key)
    if not np.ndim(x):
        dt = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
        if not np.issubdtype(dt, np.integer):
            raise FunctxTypeError("x must be an integer or at least 1-dimensional")
        return _shuffle(data, jnp.arange(int(x)), 0)
    x = jnp.asarray(x)
    axis = _canonical_axis(axis, x.ndim)
    if independent or x.ndim == 1:
        return _shuffle(data, x, axis)
    ind = _shuffle(data, jnp.arange(x.shape[axis]), 0)
    return jnp.take(x, ind, axis=axis)


@_documented(
    "Random samples of ``a`` (or of ``arange(a)``), as ``jax.random.choice``.",
    call="10, (4,), replace=False",
    prints="[0 1 8 5]",
    returns=(
        "The samples: of shape ``shape`` for an integer ``a``, else ``a.shape`` with "
        "``axis`` replaced by ``shape``."
    ),
    a="an array to sample along ``axis``, or an integer n (sample ``arange(n)``).",
    shape="the sample's shape (a sequence). Default ``()``.",
    replace="sample with replacement. Default True.",
    p="optional probabilities of the entries (default uniform).",
    axis="the axis of ``a`` to sample along. Default 0.",
    mode="the ``gumbel`` mode used when ``p`` is given and ``replace`` is False.",
)
def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
    data, _ = _check_key("choice", key)
    if not isinstance(shape, Sequence):
        raise FunctxTypeError(
            f"shape argument of functx.random.choice must be a sequence, got {shape}"
        )
    shape = _shape("choice", shape)
    arr = jnp.asarray(a)
    if arr.ndim == 0:
        n_inputs = int(a)
    else:
        axis = _canonical_axis(axis, arr.ndim)
        n_inputs = arr.shape[axis]
    n_draws = math.prod(shape)
    if n_draws == 0:
        return jnp.zeros(shape, dtype=arr.dtype)
    if n_inputs <= 0:
        raise FunctxValueError("a must be greater than 0 unless no samples are taken")
    if not replace and n_draws > n_inputs:
        raise FunctxValueError(
            f"Cannot take a larger sample (size {n_draws}) than population (size {n_inputs}) "
            "when 'replace=False'"
        )
    if p is None:
        if replace:
            ind = randint(data, shape, 0, n_inputs)
            result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis=axis)
        else:
            perm = permutation(data, n_inputs if arr.ndim == 0 else arr, axis)
            result = lax.slice_in_dim(perm, 0, n_draws, axis=axis if arr.ndim else 0)
    else:
        p_arr = jnp.asarray(p)
        if not dtypes.is_float(p_arr.dtype):
            p_arr = p_arr.astype(float)
        if p_arr.shape != (n_inputs,):
            raise FunctxValueError(
                "p must be None or a 1D vector with the same size as a.shape[axis]. "
                f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}."
            )
        if replace:
            p_cuml = jnp.cumsum(p_arr)
            r = p_cuml[-1] * (1 - uniform(data, shape, dtype=p_cuml.dtype))
            # searchsorted(p_cuml, r, side="left"): how many cumulative sums are below r
            ind = jnp.sum(p_cuml < jnp.expand_dims(r, -1), axis=-1).astype(int)
        else:
            g = gumbel(data, (n_inputs,), dtype=p_arr.dtype, mode=mode) + _xm.log(p_arr)
            ind = _top_k_indices(g, n_draws).astype(int)
        result = ind if arr.ndim == 0 else jnp.take(arr, ind, axis=axis)
    out_shape = shape if arr.ndim == 0 else arr.shape[:axis] + shape + arr.shape[axis + 1 :]
    return jnp.reshape(result, out_shape)


# --- continuous distributions ---------------------------------------------------------------------
def _erf_inv(x):
    """erf^-1 as XLA evaluates it (Giles' polynomials, fused multiply-adds; float16/bfloat16
    computed in float32)."""
    return _xm.erf_inv(x)


def _normal(data, shape, dtype, scale=None):
    """``sqrt(2) * erfinv(u)``, times ``scale`` when given: as ``jax.jit`` computes it, whose
    compiler folds the two factors into one (``erfinv(u) * (scale * sqrt(2))``) when ``scale``
    is broadcast."""
    e = _unit_erf_inv(data, shape, dtype)
    sqrt2 = np.asarray(np.sqrt(2), dtype)
    if scale is None:
        return sqrt2 * e
    if scale.size < math.prod(shape):
        return e * (scale * sqrt2)
    return (sqrt2 * e) * scale


def _unit_erf_inv(data, shape, dtype):
    """``erfinv(u)`` for ``u`` uniform in ``(-1, 1)``: a normal sample over ``sqrt(2)``."""
    lo = np.nextafter(np.asarray(-1.0, dtype), np.asarray(0.0, dtype))
    return _erf_inv(_uniform(data, shape, dtype, lo, np.asarray(1.0, dtype)))


def _div(a, b):
    """``a / b`` as ``jax.jit`` computes it: a division by a broadcast operand is a
    multiplication by its reciprocal (XLA's rewrite; ``functx.jit`` makes the same one)."""
    if b.size < a.size:
        return a * (np.asarray(1, b.dtype) / b)
    return a / b


@_documented(
    "Standard normal samples, as ``jax.random.normal`` (``sqrt(2) * erfinv(u)`` for ``u`` "
    "uniform in ``(-1, 1)``).",
    call="(3,), np.float32",
    prints="[ 1.6226422   2.0252647  -0.43359444]",
)
def normal(key, shape=(), dtype=None):
    data, _ = _check_key("normal", key)
    shape = _shape("normal", shape)
    dt = _user_dtype("normal", dtype, float)
    if dtypes.is_complex(dt):  # real and imaginary parts from two keys, scaled by 1/sqrt(2)
        real = dtypes.float32 if dt == dtypes.complex64 else dtypes.float64
        keys = _split(data, (2,))
        re, im = _normal(keys[0], shape, real), _normal(keys[1], shape, real)
        z = lax.complex(re, im) if hasattr(lax, "complex") else re.astype(dt) + 1j * im.astype(dt)
        return z.astype(dt) / np.asarray(np.sqrt(2), dt)
    if not dtypes.is_float(dt):
        raise FunctxValueError(
            f"dtype argument to `normal` must be a float or complex dtype, got {dt}"
        )
    return _normal(data, shape, dt)


@_documented(
    "Normal samples truncated to ``(lower, upper)``, as ``jax.random.truncated_normal``.",
    call="-1.0, 1.0, (3,), np.float32",
    prints="[ 0.8618594  0.9412883 -0.2910484]",
    returns="An array of ``shape`` and ``dtype`` with values strictly inside the bounds.",
    differs=_LIBMVEC.format("float64"),
    lower="the lower bound, broadcast-compatible with ``shape``.",
    upper="the upper bound, broadcast-compatible with ``shape``.",
    shape="the result's shape (default: the bounds' broadcast shape).",
)
def truncated_normal(key, lower, upper, shape=None, dtype=None):
    data, _ = _check_key("truncated_normal", key)
    dt = _float_dtype("truncated_normal", dtype)
    shape = _param_shape("truncated_normal", shape, lower, upper)
    sqrt2 = np.asarray(np.sqrt(2), dt)
    lower = lax.convert_element_type(jnp.asarray(lower), dt)
    upper = lax.convert_element_type(jnp.asarray(upper), dt)
    inv = np.asarray(1, dt) / sqrt2  # (XLA divides by a constant as a product by its inverse)
    a = _xm.erf(lower * inv)
    b = _xm.erf(upper * inv)
    u = _uniform(data, shape, dt, a, b)
    out = sqrt2 * _erf_inv(u)
    return jnp.clip(
        out,
        lax.nextafter(lax.stop_gradient(lower), jnp.full(lower.shape, np.inf, dt)),
        lax.nextafter(lax.stop_gradient(upper), jnp.full(upper.shape, -np.inf, dt)),
    )


@_documented(
    "Random booleans, True with probability ``p``, as ``jax.random.bernoulli``.",
    call="np.float32(0.5), (4,)",
    prints="[False False  True  True]",
    returns="A bool array of ``shape``.",
    p="the probability (a float or float array), broadcast-compatible with ``shape``.",
    mode='``"low"`` (one uniform) or ``"high"`` (two uniforms: finer probabilities).',
)
def bernoulli(key, p=0.5, shape=None, mode="low"):
    if shape is not None:
        shape = _shape("bernoulli", shape)
    if mode not in ("high", "low"):
        raise FunctxValueError(f"got mode={mode!r}, expected 'high' or 'low'")
    data, _ = _check_key("bernoulli", key)
    p = jnp.asarray(p)
    if not dtypes.is_float(p.dtype):
        raise FunctxTypeError(
            f"bernoulli probability `p` must have a floating dtype, got {p.dtype}."
        )
    if shape is None:
        shape = p.shape
    else:
        _check_shape("bernoulli", shape, p.shape)
    dt = p.dtype
    if mode == "high":
        u = _uniform(data, (2, *shape), dt, 0.0, 1.0)
        u1, u2 = u[0], u[1] * np.asarray(2.0 ** -dtypes.finfo(dt).nmant, dt)
        return u2 < p - u1
    return _uniform(data, shape, dt, 0.0, 1.0) < p


@_documented(
    "Random signs -1 and +1 with equal probability, as ``jax.random.rademacher``.",
    call="(4,), np.int32",
    prints="[-1 -1  1  1]",
    dtype="the result's dtype (default int64 with ``jax_enable_x64``, else int32).",
)
def rademacher(key, shape=(), dtype=None):
    data, _ = _check_key("rademacher", key)
    dt = _user_dtype("rademacher", dtype, int)
    shape = _shape("rademacher", shape)
    b = bernoulli(data, np.asarray(0.5, dtypes.default_float()), shape).astype(dt)
    return (2 * b - 1).astype(dt)


def _fixed_point_float32(hi, lo):
    """The uint64 fixed-point fraction ``(hi * 2**32 + lo) / 2**64`` truncated to a float32 (24
    significant bits): JAX's conversion for ``gumbel(mode="highest")``, which builds the float's
    bits from the count of leading zeros."""
    with config.enable_x64(True):  # (uint64 and float64 inside; the result is float32)
        u64, f64 = dtypes.uint64, dtypes.float64
        n = lax.bitwise_or(
            lax.mul(lax.convert_element_type(hi, u64), np.asarray(2**32, u64)),
            lax.convert_element_type(lo, u64),
        )
        _, e = jnp.frexp(lax.convert_element_type(n, f64))  # 2**(e-1) <= n, up to rounding
        k = jnp.maximum(e - 25, 0).astype(np.int32)
        t = lax.shift_right_logical(n, lax.convert_element_type(k, u64))
        over = t >= np.asarray(2**24, u64)  # (n rounded up to a power of two)
        t = jnp.where(over, lax.shift_right_logical(t, np.asarray(1, u64)), t)
        k = jnp.where(over, k + 1, k)
        m = lax.convert_element_type(t, dtypes.float32)  # < 2**24: exact
        return jnp.ldexp(m, k - 64).astype(dtypes.float32)


def _gumbel(data, shape, dtype, mode):
    fi = dtypes.finfo(dtype)
    if mode == "highest" and dtype == dtypes.float32:
        b = _bits(data, 32, (2, *shape))
        hi, lo = b[0], b[1]
        u32 = dtypes.uint32
        full = np.asarray(0xFFFFFFFF, u32)
        # 1 - bits in the same fixed point: the two's complement of the pair
        neg_lo = lax.bitwise_not(lo)
        neg_hi = lax.bitwise_not(hi) + lax.convert_element_type(neg_lo == full, u32)
        neg_lo = neg_lo + np.asarray(1, u32)
        flip = hi < np.asarray(2**31, u32)
        x = _fixed_point_float32(jnp.where(flip, hi, neg_hi), jnp.where(flip, lo, neg_lo))
        return jnp.where(
            flip,
            jnp.negative(_xm.log(jnp.negative(_xm.log1p(jnp.negative(x))))),
            jnp.negative(_xm.log(jnp.negative(_xm.log(x)))),
        )
    if mode in ("high", "highest"):
        u = _uniform(data, (2, *shape), dtype, 0.0, 1.0)
        high, low = u[0], u[1]
        x = jnp.where(
            high >= np.asarray(0.5, dtype),
            high,
            high + np.asarray(2.0**-fi.nmant, dtype) * low + np.asarray(fi.tiny, dtype),
        )
        return jnp.negative(_xm.log(jnp.negative(_xm.log1p(jnp.negative(x)))))
    u = _uniform(data, shape, dtype, np.asarray(fi.tiny, dtype), 1.0)
    return jnp.negative(_xm.log(jnp.negative(_xm.log(u))))


def _gumbel_mode(mode):
    mode = "low" if mode is None else mode
    if mode not in ("highest", "high", "low"):
        raise FunctxValueError(f"Must provide valid mode for gumbel got: {mode}")
    return mode


@_documented(
    "Standard Gumbel samples (``-log(-log(u))``), as ``jax.random.gumbel``.",
    call="(3,), np.float32",
    prints="[ 2.9233725   3.8326178  -0.09689324]",
    mode=(
        '``"low"`` (default), ``"high"`` (two uniforms, for a finer upper tail) or '
        '``"highest"`` (float32: 64 random bits as a fixed-point fraction, truncated to a '
        'float with all its significant bits; other dtypes as ``"high"``).'
    ),
)
def gumbel(key, shape=(), dtype=None, mode=None):
    data, _ = _check_key("gumbel", key)
    dt = _float_dtype("gumbel", dtype)
    return _gumbel(data, _shape("gumbel", shape), dt, _gumbel_mode(mode))


@_documented(
    "Samples of categories with unnormalized log-probabilities ``logits``, as "
    "``jax.random.categorical`` (the argmax of ``logits`` plus Gumbel noise).",
    call="logits, shape=(6,)",
    prints="[1 2 2 1 2 2]",
    returns="int indices of ``shape``.",
    setup=("logits = np.log(np.array([0.1, 0.2, 0.7], np.float32))",),
    logits="the log-probabilities, categories along ``axis``.",
    axis="the categories' axis. Default -1.",
    shape=(
        "the result's shape: a prefix of sample dimensions followed by the batch shape "
        "(``logits.shape`` without ``axis``; the default)."
    ),
    replace=(
        "draw with replacement (default); without, the samples of one batch entry are distinct."
    ),
    mode="the ``gumbel`` mode.",
)
def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None):
    data, _ = _check_key("categorical", key)
    logits = jnp.asarray(logits)
    axis = _canonical_axis(axis, logits.ndim)
    batch_shape = tuple(np.delete(logits.shape, axis))
    if shape is None:
        shape = batch_shape
    else:
        shape = _shape("categorical", shape)
        _check_shape("categorical", shape, batch_shape)
    mode = _gumbel_mode(mode)
    prefix = shape[: len(shape) - len(batch_shape)]
    if replace:
        gshape = list(shape[len(shape) - len(batch_shape) :])
        gshape.insert(axis, logits.shape[axis])
        noise = _gumbel(data, (*prefix, *gshape), logits.dtype, mode)
        return jnp.argmax(
            noise + jnp.reshape(logits, (1,) * len(prefix) + logits.shape), axis=axis + len(prefix)
        )
    logits = logits + _gumbel(data, logits.shape, logits.dtype, mode)
    k = math.prod(prefix)
    if k > logits.shape[axis]:
        raise FunctxValueError(
            f"Number of samples without replacement ({k}) cannot exceed number of categories "
            f"({logits.shape[axis]})."
        )
    ind = _top_k_indices(jnp.moveaxis(logits, axis, -1), k).astype(int)  # batch + (k,)
    ind = jnp.moveaxis(ind, -1, 0)
    return jnp.reshape(ind, shape)


@_documented(
    "Standard exponential samples (``-log1p(-u)``), as ``jax.random.exponential``.",
    call="(3,), np.float32",
    prints="[2.950128   3.8434246  0.40390354]",
)
def exponential(key, shape=(), dtype=None):
    data, _ = _check_key("exponential", key)
    dt = _float_dtype("exponential", dtype)
    u = _uniform(data, _shape("exponential", shape), dt, 0.0, 1.0)
    return jnp.negative(_xm.log1p(jnp.negative(u)))


@_documented(
    "Standard Laplace samples, as ``jax.random.laplace``.",
    call="(3,), np.float32",
    prints="[-2.2569816  -3.1502788   0.40859544]",
    differs=_LIBMVEC.format("float64"),
)
def laplace(key, shape=(), dtype=None):
    data, _ = _check_key("laplace", key)
    dt = _float_dtype("laplace", dtype)
    lo = np.asarray(-1.0 + float(dtypes.finfo(dt).epsneg), dt)
    u = _uniform(data, _shape("laplace", shape), dt, lo, 1.0)
    return jnp.sign(u) * _xm.log1p(jnp.negative(jnp.abs(u)))


@_documented(
    "Standard logistic samples (``log(u) - log1p(-u)``), as ``jax.random.logistic``.",
    call="(3,), np.float32",
    prints="[ 2.896376   3.8217716 -0.6978392]",
    differs=_LIBMVEC.format("float64"),
)
def logistic(key, shape=(), dtype=None):
    data, _ = _check_key("logistic", key)
    dt = _float_dtype("logistic", dtype)
    u = _uniform(data, _shape("logistic", shape), dt, np.asarray(dtypes.finfo(dt).tiny, dt), 1.0)
    return _xm.log(u) - _xm.log1p(jnp.negative(u))


# --- gamma and the distributions built on it -----------------------------------------------------
def _gamma_one(data, alpha, log_space):
    """One Gamma(alpha) sample by Marsaglia and Tsang's rejection method (JAX's loop, so the same
    keys are drawn in the same order); alpha < 1 is boosted by ``u ** (1 / alpha)``."""
    dt = alpha.dtype

    def c(v):
        return np.asarray(v, dt)

    boost_mask = alpha >= c(1)
    alpha_orig = alpha
    alpha = jnp.where(boost_mask, alpha, alpha + c(1))
    d = alpha - c(1.0 / 3.0)
    # (XLA: a / sqrt(b) is a * rsqrt(b), and its CPU float32 rsqrt is not rounded correctly:
    # lax.rsqrt computes it as XLA does, see functx.lowering.cpp.hostmath)
    cc = c(1.0 / 3.0) * lax.rsqrt(d)

    def cond_fn(state):
        _, x, v, u = state
        # (XLA contracts each product that only feeds a sum into a fused multiply-add)
        squeeze = u >= _xm.fma(c(-0.0331), x * x, c(1))
        return squeeze & (_xm.log(u) >= _xm.fma(x, c(0.5), d * (c(1) - v + _xm.log(v))))

    def body_fn(state):
        keys = _split(state[0], (3,))
        key, x_key, u_key = keys[0], keys[1], keys[2]

        def next_xv(kxv):
            kk = _split(kxv[0], (2,))
            x = _normal(kk[1], (), dt)
            return kk[0], x, _xm.fma(x, cc, c(1))

        _, x, v = lax.while_loop(lambda kxv: kxv[2] <= c(0), next_xv, (x_key, c(0), c(-1)))
        return key, x * x, v * v * v, _uniform(u_key, (), dt, 0.0, 1.0)

    keys = _split(data, (2,))
    _, _, v, _ = lax.while_loop(cond_fn, body_fn, (keys[0], c(0), c(1), c(2)))
    sub = keys[1]
    if log_space:
        log_samples = jnp.negative(
            jnp.negative(_xm.log1p(jnp.negative(_uniform(sub, (), dt, 0.0, 1.0))))
        )
        log_boost = jnp.where(
            boost_mask | (log_samples == c(0)), c(0), log_samples * (c(1) / alpha_orig)
        )
        return _xm.log(d) + _xm.log(v) + log_boost
    samples = c(1) - _uniform(sub, (), dt, 0.0, 1.0)
    # (XLA's CPU code flushes subnormal results to zero: small shapes' tiny samples are 0 in JAX)
    boost = _xm.flush_denormal(lax.pow(samples, c(1) / alpha_orig))
    boost = jnp.where(boost_mask, c(1), boost)
    return _xm.flush_denormal(d * v * boost)


# the batched sampler, one function object per mode (vmap's trace cache keys on it: a fresh
# lambda per call traced and batched the rejection loop again on every eager call)
_GAMMA_BATCHED = {
    ls: functx_vmap(lambda k, al, ls=ls: _gamma_one(k, al, ls)) for ls in (False, True)
}


def _gamma(data, a, shape, dtype, log_space):
    a = lax.convert_element_type(jnp.asarray(a), dtype)
    if shape is None:
        shape = a.shape
    else:
        _check_shape("gamma", shape, a.shape)
    a = jnp.broadcast_to(a, shape)
    n = math.prod(shape)
    if n == 0:
        return jnp.zeros(shape, dtype)
    keys = _split(data, (n,))
    return jnp.reshape(_GAMMA_BATCHED[log_space](keys, jnp.reshape(a, (n,))), shape)


@_documented(
    "Gamma(a, 1) samples, as ``jax.random.gamma`` (Marsaglia-Tsang rejection per element).",
    call="np.float32(2.0), (3,), np.float32",
    prints="[1.5897877 1.7599413 1.1290071]",
    a="the shape parameter(s), broadcast-compatible with ``shape``.",
)
def gamma(key, a, shape=None, dtype=None):
    data, _ = _check_key("gamma", key)
    dt = _float_dtype("gamma", dtype)
    return _gamma(data, a, None if shape is None else _shape("gamma", shape), dt, False)


@_documented(
    "The logarithm of Gamma(a, 1) samples, accurate for small ``a``, as ``jax.random.loggamma``.",
    call="np.float32(0.5), (3,), np.float32",
    prints="[-0.12265953  0.02866279 -3.05603   ]",
    a="the shape parameter(s), broadcast-compatible with ``shape``.",
)
def loggamma(key, a, shape=None, dtype=None):
    data, _ = _check_key("loggamma", key)
    dt = _float_dtype("gamma", dtype)
    return _gamma(data, a, None if shape is None else _shape("loggamma", shape), dt, True)


@_documented(
    "Beta(a, b) samples, as ``jax.random.beta`` (a ratio of two log-gamma samples).",
    call="np.float32(2.0), np.float32(3.0), (3,)",
    prints="[0.23627362 0.49045956 0.6837948 ]",
    a="the first shape parameter, broadcast-compatible with ``shape``.",
    b="the second shape parameter, broadcast-compatible with ``shape``.",
)
def beta(key, a, b, shape=None, dtype=None):
    data, _ = _check_key("beta", key)
    dt = _float_dtype("beta", dtype)
    shape = _param_shape("beta", shape, a, b)
    a = jnp.broadcast_to(lax.convert_element_type(jnp.asarray(a), dt), shape)
    b = jnp.broadcast_to(lax.convert_element_type(jnp.asarray(b), dt), shape)
    keys = _split(data, (2,))
    log_a = _gamma(keys[0], a, shape, dt, True)
    log_b = _gamma(keys[1], b, shape, dt, True)
    log_max = jnp.maximum(log_a, log_b)
    ga, gb = _xm.exp(log_a - log_max), _xm.exp(log_b - log_max)
    return ga / (ga + gb)


@_documented(
    "Dirichlet(alpha) samples (the last axis of ``alpha`` holds the concentrations), as "
    "``jax.random.dirichlet``.",
    call="np.ones(3, np.float32)",
    prints="[0.36472055 0.4282893  0.20699008]",
    returns="An array of shape ``shape + (k,)`` whose last axis sums to 1.",
    alpha="the concentrations, shape ``(..., k)``.",
    shape="the batch shape (default ``alpha.shape[:-1]``).",
)
def dirichlet(key, alpha, shape=None, dtype=None):
    data, _ = _check_key("dirichlet", key)
    dt = _float_dtype("dirichlet", dtype)
    if np.ndim(alpha) < 1:
        raise FunctxValueError(
            f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {np.ndim(alpha)}"
        )
    if shape is None:
        shape = np.shape(alpha)[:-1]
    else:
        shape = _shape("dirichlet", shape)
        _check_shape("dirichlet", shape, np.shape(alpha)[:-1])
    alpha = lax.convert_element_type(jnp.asarray(alpha), dt)
    log_g = _gamma(data, alpha, (*shape, alpha.shape[-1]), dt, True)
    e = _xm.exp(log_g - jnp.max(log_g, axis=-1, keepdims=True))  # (softmax, XLA's exp)
    return _div(e, jnp.sum(e, axis=-1, keepdims=True))


def _poisson_knuth(data, lam, shape, dtype, max_iters):
    def body(carry):
        i, k, rng, log_prod = carry
        keys = _split(rng, (2,))
        k = jnp.where(log_prod > -lam, k + np.asarray(1, dtype), k)
        u = _uniform(keys[1], shape, dtypes.float32, 0.0, 1.0)
        return i + 1, k, keys[0], log_prod + _xm.log(u)

    def cond(carry):
        i, log_prod = carry[0], carry[3]
        return jnp.any(log_prod > -lam) & (i < max_iters)

    init = (
        jnp.asarray(0, dtypes.default_int()),
        jnp.zeros(shape, dtype),
        data,
        jnp.zeros(shape, dtypes.float32),
    )
    k = lax.while_loop(cond, body, init)[1]
    return (k - np.asarray(1, dtype)).astype(dtype)


def _poisson_rejection(data, lam, shape, dtype, max_iters):
    f32 = dtypes.float32

    def c(v):
        return np.asarray(v, f32)

    # (XLA's log and lgamma, and the products it fuses into the sums that follow them)
    log_lam = _xm.log(lam)
    b = _xm.fma(c(2.53), jnp.sqrt(lam), c(0.931))
    a = _xm.fma(c(0.02483), b, c(-0.059))
    inv_alpha = c(1.1239) + c(1.1328) / (b - c(3.4))
    v_r = c(0.9277) - c(3.6224) / (b - c(2))

    def body(carry):
        i, k_out, accepted, rng = carry
        keys = _split(rng, (3,))
        u = _uniform(keys[1], shape, f32, 0.0, 1.0) - c(0.5)
        v = _uniform(keys[2], shape, f32, 0.0, 1.0)
        u_shifted = c(0.5) - jnp.abs(u)
        k = jnp.floor(_xm.fma(c(2) * a / u_shifted + b, u, lam) + c(0.43))
        s = _xm.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
        t = _xm.fma(k, log_lam, -lam) - _xm.lgamma(k + c(1))
        accept1 = (u_shifted >= c(0.07)) & (v <= v_r)
        reject = (k < c(0)) | ((u_shifted < c(0.013)) & (v > u_shifted))
        accept = accept1 | (~reject & (s <= t))
        return i + 1, jnp.where(accept, k, k_out), accepted | accept, keys[0]

    def cond(carry):
        i, _, accepted, _ = carry
        return jnp.any(~accepted) & (i < max_iters)

    init = (
        jnp.asarray(0, dtypes.default_int()),
        jnp.full(shape, -1.0, f32),
        jnp.zeros(shape, bool),
        data,
    )
    return lax.while_loop(cond, body, init)[1].astype(dtype)


@_documented(
    "Poisson(lam) samples, as ``jax.random.poisson`` (Knuth's method below ``lam = 10``, "
    "transformed rejection above it).",
    call="3.0, (5,), np.int32",
    prints="[0 0 4 4 1]",
    returns="An integer array of ``shape`` and ``dtype``.",
    lam="the rate(s), broadcast to ``shape``.",
    dtype=_INT_DTYPE,
)
def poisson(key, lam, shape=None, dtype=None):
    data, _ = _check_key("poisson", key)
    dt = _user_dtype("poisson", dtype, int)
    shape = np.shape(lam) if shape is None else _shape("poisson", shape)
    lam = lax.convert_element_type(jnp.broadcast_to(jnp.asarray(lam), shape), dtypes.float32)
    use_knuth = jnp.isnan(lam) | (lam < np.float32(10))
    lam_knuth = jnp.where(use_knuth, lam, np.float32(0))
    lam_rejection = jnp.where(use_knuth, np.float32(1e5), lam)
    max_iters = int(dtypes.iinfo(dt).max)
    result = jnp.where(
        use_knuth,
        _poisson_knuth(data, lam_knuth, shape, dt, max_iters),
        _poisson_rejection(data, lam_rejection, shape, dt, max_iters),
    )
    return jnp.where(lam == np.float32(0), jnp.zeros_like(result), result)


@_documented(
    "Samples with density proportional to ``exp(-|x| ** p)``, as "
    "``jax.random.generalized_normal``.",
    call="2.0, (3,), np.float32",
    prints="[ 0.9542763   0.09015025 -1.152542  ]",
    p="the shape parameter (positive).",
)
def generalized_normal(key, p, shape=(), dtype=None):
    data, _ = _check_key("generalized_normal", key)
    dt = _float_dtype("generalized_normal", dtype)
    return _generalized_normal(data, p, _shape("generalized_normal", shape), dt)


def _generalized_normal(data, p, shape, dtype):
    keys = _split(data, (2,))
    g = _gamma(keys[0], 1 / p, shape, dtype, False)
    r = rademacher(keys[1], shape, dtype)
    return r * g ** (1 / p)


class _RandomGammaPrimitive:
    """The object ``jax.random.random_gamma_p`` is: ``random_gamma_p.bind(key, a,
    log_space=False)`` draws one Gamma(``a``) sample per element of ``a`` (its shape and dtype),
    as ``jax.random.gamma`` (``loggamma`` with ``log_space=True``) does after broadcasting.

    functx's gamma sampler is a composite of its primitives, so this object is no functx
    primitive: ``bind`` runs that composite, and ``jit``, ``vmap`` and ``grad`` see its parts.

    Arguments (of ``bind``):
        key: a single key (typed, or raw ``uint32[2]`` key data).
        a: the shape parameters (a float array).
        log_space: whether to return the samples' logarithms.

    Returns:
        An array of ``a``'s shape and dtype.

    Example:
        >>> import numpy as np
        >>> import functx.random as random
        >>> a = np.array([0.5, 2.5], np.float32)
        >>> print(random.random_gamma_p.bind(random.PRNGKey(0), a, log_space=False))
        [0.8845648 2.2727783]
    """

    name = "random_gamma"
    multiple_results = False

    def bind(self, key, a, *, log_space=False):
        data, _ = _check_key("random_gamma", key)
        a = jnp.asarray(a)
        dt = _float_dtype("random_gamma", a.dtype)
        return _gamma(data, a, tuple(a.shape), dt, bool(log_space))

    def __repr__(self):
        return self.name


random_gamma_p = _RandomGammaPrimitive()


@_documented(
    "Uniform samples from the unit Lp ball in ``d`` dimensions, as ``jax.random.ball``.",
    call="3, dtype=np.float32",
    prints="[0.91715974 0.39274216 0.0116535 ]",
    returns="An array of shape ``shape + (d,)``.",
    differs=(
        "the bits are those of JAX's sampler with ``p`` as an argument (an eager "
        "``jax.random.ball`` call; checked for p from 0.1 to 8 in float32); inside a user's "
        "``jax.jit`` with a constant ``p`` XLA folds it and may round an ulp apart."
    ),
    d="the dimension (a nonnegative int).",
    p="the p of the Lp norm. Default 2.",
    shape="the batch shape. Default ``()``.",
)
def ball(key, d, p=2, shape=(), dtype=None):
    data, _ = _check_key("ball", key)
    dt = _float_dtype("ball", dtype)
    shape, d = _shape("ball", shape), operator.index(d)
    keys = _split(data, (2,))
    g = _generalized_normal(keys[0], p, (*shape, d), dt)
    e = jnp.negative(_xm.log1p(jnp.negative(_uniform(keys[1], shape, dt, 0.0, 1.0))))
    if d == 1:  # (XLA drops the reduction over one element and divides)
        return g / (((jnp.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]
    # (XLA's compiler sums short rows in its own order, closely though not always
    # _xlamath.row_sum's, and rewrites a / b ** c as a * b ** -c)
    neg_inv_p = jnp.negative(np.asarray(1, dt) / jnp.asarray(p, dt))
    return g * ((_xm.row_sum(jnp.abs(g) ** p) + e) ** neg_inv_p)[..., None]


@_documented(
    "Multivariate normal samples, as ``jax.random.multivariate_normal`` (``mean + L @ z`` with "
    "``L`` the Cholesky factor of ``cov`` and ``z`` standard normal).",
    call="np.zeros(2, np.float32), cov",
    prints="[2.2947626 2.4681523]",
    returns="An array of shape ``shape + mean.shape[-1:]``.",
    differs=(
        "float32 samples in more than 3 dimensions with a batch differ from JAX's in the "
        "last bits (XLA's dot adds the products in another order), within 2 eps of ``|mean| "
        '+ |L| |z|``; ``method`` ``"svd"`` and ``"eigh"`` raise NotImplementedError.'
    ),
    setup=("cov = np.array([[2.0, 0.5], [0.5, 1.0]], np.float32)",),
    mean="the means, shape ``(..., n)``.",
    cov="the covariances, shape ``(..., n, n)`` (positive definite).",
    shape="the batch shape (default: the broadcast batch shapes of ``mean`` and ``cov``).",
    dtype="a float dtype (default: ``mean``'s).",
    method=(
        '``"cholesky"`` (``"svd"`` and ``"eigh"`` need the linear algebra of issue 19: '
        "``NotImplementedError``)."
    ),
)
def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky"):
    data, _ = _check_key("multivariate_normal", key)
    if method not in ("svd", "eigh", "cholesky"):
        raise FunctxValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
    mean, cov = jnp.asarray(mean), jnp.asarray(cov)
    inexact = jnp.result_type(mean, cov)
    if not dtypes.is_float(inexact):
        inexact = dtypes.default_float()
    mean, cov = mean.astype(inexact), cov.astype(inexact)
    dt = mean.dtype if dtype is None else _float_dtype("multivariate_normal", dtype)
    if not dtypes.is_float(dt):
        raise FunctxValueError(
            f"dtype argument to `multivariate_normal` must be a float dtype, got {dt}"
        )
    if mean.ndim < 1:
        raise FunctxValueError(
            f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == {mean.ndim}"
        )
    if cov.ndim < 2:
        raise FunctxValueError(
            f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == {cov.ndim}"
        )
    n = mean.shape[-1]
    if cov.shape[-2:] != (n, n):
        raise FunctxValueError(
            f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but got "
            f"cov.shape == {cov.shape}."
        )
    if shape is None:
        shape = _broadcast_shapes("multivariate_normal", mean.shape[:-1], cov.shape[:-2])
    else:
        shape = _shape("multivariate_normal", shape)
        _check_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
    if method != "cholesky":
        raise NotImplementedError(
            f"multivariate_normal(method={method!r}) needs an eigendecomposition, which functx "
            "does not have yet: use method='cholesky'"
        )
    factor = jnp.linalg.cholesky(cov)
    z = _normal(data, (*shape, n), dt)
    # factor @ z as XLA's CPU dot computes it for small n (measured for n = 2, 3, 5): batched
    # float32 rounds the products and adds them in order; float64, and float32 for one sample,
    # fuse each product after the first into the running sum
    acc = _xm.rounded(factor[..., :, 0] * z[..., 0:1])
    for j in range(1, n):
        if dt == dtypes.float64 or (dt == dtypes.float32 and z.ndim == 1 and factor.ndim == 2):
            acc = _xm.fma(factor[..., :, j], z[..., j : j + 1], acc)
        else:
            acc = acc + _xm.rounded(factor[..., :, j] * z[..., j : j + 1])
    return mean + acc


def orthogonal(key, n, shape=(), dtype=None, m=None):
    """A uniformly random orthogonal ``n x m`` matrix (semi-orthogonal when ``n != m``), as
    ``jax.random.orthogonal`` (the Q of the QR decomposition of a normal matrix, with R's
    diagonal made positive).

    Arguments:
        key: a single key.
        n: the number of rows.
        shape: the batch shape. Default ``()``.
        dtype: a float dtype (default float64 with ``jax_enable_x64``, else float32).
        m: the number of columns (default ``n``).

    Returns:
        An array of shape ``shape + (n, m)``.

    Example:
        >>> import numpy as np
        >>> import functx.random as random
        >>> q = random.orthogonal(random.PRNGKey(0), 3, dtype=np.float32)
        >>> print(np.allclose(np.asarray(q) @ np.asarray(q).T, np.eye(3), atol=1e-5))
        True
    """
    data, _ = _check_key("orthogonal", key)
    dt = _float_dtype("orthogonal", dtype)
    shape, n = _shape("orthogonal", shape), operator.index(n)
    m = n if m is None else operator.index(m)
    z = _normal(data, (*shape, max(n, m), min(n, m)), dt)
    q, r = jnp.linalg.qr(z)
    q = q * jnp.expand_dims(jnp.sign(jnp.diagonal(r, 0, -2, -1)), -2)
    return jnp.swapaxes(q, -1, -2) if n < m else q


# --- more distributions, composed of the ones above (JAX's formulas) -------------------------
def _as(x, dt):
    return lax.convert_element_type(jnp.asarray(x), dt)


@_documented(
    "Standard Cauchy samples, as ``jax.random.cauchy``.",
    call="(3,), np.float32",
    prints="[ 6.0274944  14.837895   -0.58172226]",
    differs=_LIBMVEC.format("float32 and float64"),
)
def cauchy(key, shape=(), dtype=None):
    data, _ = _check_key("cauchy", key)
    dt = _float_dtype("cauchy", dtype)
    u = _uniform(data, _shape("cauchy", shape), dt, np.asarray(dtypes.finfo(dt).eps, dt), 1.0)
    return jnp.tan(np.asarray(np.pi, dt) * (u - np.asarray(0.5, dt)))


@_documented(
    "Pareto samples with shape parameter ``b``, as ``jax.random.pareto``.",
    call="3.0, (3,), np.float32",
    prints="[2.6734667 3.6007476 1.1441185]",
    b="the shape parameter(s).",
)
def pareto(key, b, shape=None, dtype=None):
    data, _ = _check_key("pareto", key)
    dt = _float_dtype("pareto", dtype)
    shape = _param_shape("pareto", shape, b)
    e = jnp.negative(_xm.log1p(jnp.negative(_uniform(data, shape, dt, 0.0, 1.0))))
    return _xm.exp(_div(e, _as(b, dt)))


def _exp_gamma(data, df, shape, dt):
    half_df = _as(df, dt) / np.asarray(2, dt)
    return _xm.exp(_gamma(data, half_df, shape, dt, True))


def _chisquare(data, df, shape, dt):
    return _exp_gamma(data, df, shape, dt) * np.asarray(2, dt)


@_documented(
    "Chi-square samples with ``df`` degrees of freedom, as ``jax.random.chisquare``.",
    call="2.0, (3,), np.float32",
    prints="[1.2369726  1.4525698  0.70201975]",
    df="the degrees of freedom.",
)
def chisquare(key, df, shape=None, dtype=None):
    data, _ = _check_key("chisquare", key)
    dt = _float_dtype("chisquare", dtype)
    return _chisquare(data, df, _param_shape("chisquare", shape, df), dt)


@_documented(
    "F-distribution samples, as ``jax.random.f``.",
    call="3.0, 5.0, (3,), np.float32",
    prints="[2.5797074  0.19219677 0.1597769 ]",
    dfnum="the numerator's degrees of freedom.",
    dfden="the denominator's degrees of freedom.",
)
def f(key, dfnum, dfden, shape=None, dtype=None):
    data, _ = _check_key("f", key)
    dt = _float_dtype("f", dtype)
    shape = _param_shape("f", shape, dfnum, dfden)
    keys = _split(data, (2,))
    dfnum, dfden = _as(dfnum, dt), _as(dfden, dt)
    two, n = np.asarray(2, dt), math.prod(shape)
    if dfnum.size < n and dfden.size < n:
        # (jax.jit's compiler rewrites (a / b) / (c / d) with broadcast b, d to (a d) / (c b),
        # folding the factors 2 of the chi-square samples into d and b)
        num = _exp_gamma(keys[1], dfnum, shape, dt) * (dfden * two)
        return num / (_exp_gamma(keys[0], dfden, shape, dt) * (dfnum * two))
    num = _div(_chisquare(keys[1], dfnum, shape, dt), dfnum)
    return num / _div(_chisquare(keys[0], dfden, shape, dt), dfden)


@_documented(
    "Student's t samples with ``df`` degrees of freedom, as ``jax.random.t``.",
    call="4.0, (3,), np.float32",
    prints="[ 0.7160013 -2.417441  -1.414403 ]",
    df="the degrees of freedom.",
)
def t(key, df, shape=None, dtype=None):
    data, _ = _check_key("t", key)
    dt = _float_dtype("t", dtype)
    shape = _param_shape("t", shape, df)
    keys = _split(data, (2,))
    n = _normal(keys[0], shape, dt)
    half_df = _as(df, dt) / np.asarray(2, dt)
    g = _gamma(keys[1], half_df, shape, dt, False)
    return n * jnp.sqrt(half_df / g)


def _maxwell(data, shape, dt):
    n = _normal(data, (*shape, 3), dt)
    x, y, z = (n[..., i] for i in range(3))
    if dt == dtypes.float32:  # (the order XLA's vectorized float32 reduction adds them in)
        x, y = y, x
    # (XLA's sum of squares: each product after the first fused into the running sum)
    return jnp.sqrt(_xm.fma(z, z, _xm.fma(y, y, x * x)))


@_documented(
    "Maxwell samples (the norm of three standard normals), as ``jax.random.maxwell``.",
    call="(3,), np.float32",
    prints="[2.6310966  0.99103284 0.9649306 ]",
)
def maxwell(key, shape=(), dtype=None):
    data, _ = _check_key("maxwell", key)
    dt = _float_dtype("maxwell", dtype)
    return _maxwell(data, _shape("maxwell", shape), dt)


@_documented(
    "Double-sided Maxwell samples, as ``jax.random.double_sided_maxwell``.",
    call="0.0, 1.0, (3,), np.float32",
    prints="[ 1.5457209  1.5741276 -2.0825305]",
    returns="An array of ``shape`` plus the parameters' broadcast shape.",
    loc="the location(s).",
    scale="the scale(s).",
    shape="the batch shape; the parameters' broadcast shape is appended. Default ``()``.",
)
def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
    data, _ = _check_key("double_sided_maxwell", key)
    dt = _float_dtype("double_sided_maxwell", dtype)
    params = _broadcast_shapes("double_sided_maxwell", np.shape(loc), np.shape(scale))
    shape = _shape("double_sided_maxwell", shape) or params
    shape = (*shape, *params)
    keys = _split(data, (2,))
    m = _maxwell(keys[0], shape, dt)
    sign = rademacher(keys[1], shape, dt)
    return _xm.fma(sign * m, _as(scale, dt), _as(loc, dt))  # (contracted, as XLA's)


@_documented(
    "Weibull samples, as ``jax.random.weibull_min``.",
    call="1.0, 2.0, (3,), np.float32",
    prints="[1.7175937  1.9604654  0.63553405]",
    scale="the scale(s).",
    concentration="the concentration(s).",
)
def weibull_min(key, scale, concentration, shape=(), dtype=None):
    data, _ = _check_key("weibull_min", key)
    dt = _float_dtype("weibull_min", dtype)
    u = _uniform(data, _shape("weibull_min", shape), dt, 0.0, 1.0)
    return jnp.power(jnp.negative(_xm.log1p(jnp.negative(u))), 1.0 / _as(concentration, dt)) * _as(
        scale, dt
    )


@_documented(
    "Rayleigh samples, as ``jax.random.rayleigh``.",
    call="1.0, (3,), np.float32",
    prints="[0.32787833 0.20810027 1.4844142 ]",
    scale="the scale(s).",
)
def rayleigh(key, scale, shape=None, dtype=None):
    data, _ = _check_key("rayleigh", key)
    dt = _float_dtype("rayleigh", dtype)
    shape = _param_shape("rayleigh", shape, scale)
    u = _uniform(data, shape, dt, 0.0, 1.0)
    scale = jnp.broadcast_to(_as(scale, dt), shape)
    return scale * jnp.sqrt(_xm.log(u) * np.asarray(-2, dt))


@_documented(
    "Wald (inverse Gaussian) samples, as ``jax.random.wald``.",
    call="1.0, (3,), np.float32",
    prints="[0.3805977  0.41566527 0.48107237]",
    mean="the mean(s).",
)
def wald(key, mean, shape=None, dtype=None):
    data, _ = _check_key("wald", key)
    dt = _float_dtype("wald", dtype)
    shape = _param_shape("wald", shape, mean)
    keys = _split(data, (2,))
    mean = jnp.broadcast_to(_as(mean, dt), shape)
    z = _uniform(keys[1], shape, dt, 0.0, 1.0)
    two, four = np.asarray(2, dt), np.asarray(4, dt)
    mean_sq = mean * mean
    if shape == ():
        # (one sample: XLA's compiler folds the constant factors sqrt(2)**2, sqrt(2)**4 and
        # 4 sqrt(2)**2 into one constant each; the first product of each sum is fused into it)
        e = _unit_erf_inv(keys[0], shape, dt)
        c2 = np.asarray(np.sqrt(2), dt) * np.asarray(np.sqrt(2), dt)
        e2 = e * e
        y = e2 * c2
        y_sq = (e2 * e2) * (c2 * c2)
        sqrt_term = jnp.sqrt(_xm.fma(mean * e2, four * c2, mean_sq * y_sq))
    else:
        v = _normal(keys[0], shape, dt)
        y = v * v
        y_sq = y * y
        # (XLA's contractions: the first product of each sum fused into it)
        sqrt_term = jnp.sqrt(_xm.fma(four * mean, y, mean_sq * y_sq))
    x = _xm.fma(jnp.negative(mean / two), sqrt_term, mean + mean_sq * y / two)
    return jnp.where(z <= mean / (mean + x), x, mean_sq / x)


@_documented(
    "Geometric samples (the number of trials to the first success), as ``jax.random.geometric``.",
    call="np.float32(0.3), (3,), np.int32",
    prints="[1 1 4]",
    returns="An integer array of ``shape``.",
    p="the success probability.",
    dtype=_INT_DTYPE,
)
def geometric(key, p, shape=None, dtype=None):
    data, _ = _check_key("geometric", key)
    dt = _user_dtype("geometric", dtype, int)
    shape = _param_shape("geometric", shape, p)
    p = jnp.asarray(p)
    if not dtypes.is_float(p.dtype):
        p = p.astype(float)
    u = _uniform(data, shape, p.dtype, 0.0, 1.0)
    u = jnp.where(u == 0, np.asarray(1, p.dtype), u)
    g = jnp.floor(_xm.log(u) / jnp.broadcast_to(_xm.log1p(jnp.negative(p)), shape))
    return (g + np.asarray(1, p.dtype)).astype(dt)


@_documented(
    "Triangular samples, as ``jax.random.triangular``.",
    call="0.0, 1.0, 3.0, (3,), np.float32",
    prints="[2.4396448 2.6415021 0.998436 ]",
    left="the lower limit(s).",
    mode="the peak(s).",
    right="the upper limit(s).",
)
def triangular(key, left, mode, right, shape=None, dtype=None):
    data, _ = _check_key("triangular", key)
    dt = _float_dtype("triangular", dtype)
    shape = _param_shape("triangular", shape, left, mode, right)
    left, mode, right = (jnp.broadcast_to(_as(v, dt), shape) for v in (left, mode, right))
    fc = (mode - left) / (right - left)
    u = _uniform(data, shape, dt, 0.0, 1.0)
    out1 = left + jnp.sqrt(u * (right - left) * (mode - left))
    out2 = right - jnp.sqrt((np.asarray(1, dt) - u) * (right - left) * (right - mode))
    return jnp.where(u < fc, out1, out2)


@_documented(
    "Log-normal samples (``exp(sigma * normal)``), as ``jax.random.lognormal``.",
    call="0.5, (3,), np.float32",
    prints="[2.2508795 2.752838  0.8050932]",
    sigma="the standard deviation of the logarithm. Default 1.",
)
def lognormal(key, sigma=np.float32(1), shape=None, dtype=None):  # noqa: B008 - JAX's default
    data, _ = _check_key("lognormal", key)
    dt = _float_dtype("lognormal", dtype)
    shape = _param_shape("lognormal", shape, sigma)
    return _xm.exp(_normal(data, shape, dt, _as(sigma, dt)))


def key_dtype(impl_spec=None):
    """The dtype of typed keys (``key<fry>``), as ``jax.random.key_dtype``.

    Arguments:
        impl_spec: only ``None`` or ``"threefry2x32"``.

    Returns:
        The key dtype, which ``key`` and ``wrap_key_data`` accept as ``dtype=``.

    Example:
        >>> import functx.random as random
        >>> print(random.key_dtype())
        key<fry>
    """
    _check_impl(impl_spec)
    return KEY_DTYPE


# --- binomial and multinomial -----------------------------------------------------------------
_STIRLING_TAIL = (
    0.0810614667953272,
    0.0413406959554092,
    0.0276779256849983,
    0.02079067210376509,
    0.0166446911898211,
    0.0138761288230707,
    0.0118967099458917,
    0.0104112652619720,
    0.00925546218271273,
    0.00833056343336287,
)


def _stirling_tail(k):
    """log(k!) minus Stirling's approximation of it: a table below 10, the series above."""
    dt = k.dtype
    table = jnp.asarray(np.asarray(_STIRLING_TAIL, dt))
    small = k <= np.asarray(9, dt)
    k = jnp.clip(k, np.asarray(0, dt), np.asarray(9, dt))
    kp1sq = (k + np.asarray(1, dt)) * (k + np.asarray(1, dt))
    approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + np.asarray(1, dt))
    return jnp.where(small, table[jnp.floor(k).astype(np.int32)], approx)


def _binomial_inversion(data, count, prob, shape, max_iters):
    dt = prob.dtype
    log1m = jnp.log1p(jnp.negative(prob))

    def body(carry):
        i, num_geom, geom_sum, rng = carry
        keys = _split(rng, (2,))
        num_geom = jnp.where(geom_sum <= count, num_geom + np.asarray(1, dt), num_geom)
        u = _uniform(keys[0], shape, dt, 0.0, 1.0)
        return i + 1, num_geom, geom_sum + jnp.ceil(jnp.log(u) / log1m), keys[1]

    def cond(carry):
        return jnp.any(carry[2] <= count) & (carry[0] < max_iters)

    z = jnp.zeros(shape, dt)
    k = lax.while_loop(cond, body, (jnp.asarray(0, dtypes.default_int()), z, z, data))[1]
    return k - np.asarray(1, dt)


def _btrs(data, count, prob, shape, max_iters):
    dt = prob.dtype

    def c(v):
        return np.asarray(v, dt)

    stddev = jnp.sqrt(count * prob * (c(1) - prob))
    b = c(1.15) + c(2.53) * stddev
    a = c(-0.0873) + c(0.0248) * b + c(0.01) * prob
    cc = count * prob + c(0.5)
    v_r = c(0.92) - c(4.2) / b
    r = prob / (c(1) - prob)
    alpha = (c(2.83) + c(5.1) / b) * stddev
    m = jnp.floor((count + c(1)) * prob)

    def body(carry):
        i, k_out, accepted, rng = carry
        keys = _split(rng, (3,))
        u = _uniform(keys[1], shape, dt, 0.0, 1.0) - c(0.5)
        v = _uniform(keys[2], shape, dt, 0.0, 1.0)
        us = c(0.5) - jnp.abs(u)
        accept1 = (us >= c(0.07)) & (v <= v_r)
        k = jnp.floor((c(2) * a / us + b) * u + cc)
        reject = (k < c(0)) | (k > count)
        v = jnp.log(v * alpha / (a / (us * us) + b))
        ub = (
            (m + c(0.5)) * jnp.log((m + c(1)) / (r * (count - m + c(1))))
            + (count + c(1)) * jnp.log((count - m + c(1)) / (count - k + c(1)))
            + (k + c(0.5)) * jnp.log(r * (count - k + c(1)) / (k + c(1)))
            + _stirling_tail(m)
            + _stirling_tail(count - m)
            - _stirling_tail(k)
            - _stirling_tail(count - k)
        )
        accept = accept1 | (~reject & (v <= ub))
        return i + 1, jnp.where(accept, k, k_out), accepted | accept, keys[0]

    def cond(carry):
        return jnp.any(~carry[2]) & (carry[0] < max_iters)

    init = (
        jnp.asarray(0, dtypes.default_int()),
        jnp.full(shape, -1.0, dt),
        jnp.zeros(shape, bool),
        data,
    )
    return lax.while_loop(cond, body, init)[1]


def _binomial(data, count, prob, shape, dtype):
    prob = jnp.asarray(prob)
    if not dtypes.is_float(prob.dtype):
        prob = prob.astype(float)
    pdt = prob.dtype
    count = jnp.broadcast_to(lax.convert_element_type(jnp.asarray(count), pdt), shape)
    prob = jnp.broadcast_to(prob, shape)
    p_lt_half = prob < np.asarray(0.5, pdt)
    q = jnp.where(p_lt_half, prob, np.asarray(1, pdt) - prob)
    count_bad = jnp.isnan(count) | (count < np.asarray(0, pdt))
    count_inf = jnp.isinf(count)
    q_nan, q_neg = jnp.isnan(q), q < np.asarray(0, pdt)
    q = jnp.where(q_nan | q_neg, np.asarray(0.01, pdt), q)
    use_inversion = count_bad | (count * q <= np.asarray(10, pdt))
    count = jnp.floor(count)
    count_inv = jnp.where(use_inversion, count, np.asarray(0, pdt))
    count_btrs = jnp.where(use_inversion, np.asarray(1e4, pdt), count)
    q_btrs = jnp.where(use_inversion, np.asarray(0.5, pdt), q)
    max_iters = float(dtypes.finfo(dtype).max)
    samples = jnp.where(
        use_inversion,
        _binomial_inversion(data, count_inv, q, shape, max_iters),
        _btrs(data, count_btrs, q_btrs, shape, max_iters),
    ).astype(dtype)
    invalid = q_neg | q_nan | count_bad
    samples = jnp.where(invalid, np.asarray(np.nan, dtype), samples)
    samples = jnp.where(count_inf & ~invalid, np.asarray(np.inf, dtype), samples)
    return jnp.where(
        p_lt_half | count_bad | q_nan | count_inf, samples, count.astype(dtype) - samples
    )


@_documented(
    "Binomial(n, p) samples (as floats), as ``jax.random.binomial`` (inversion for small ``n * "
    "p``, the BTRS rejection sampler above).",
    call="10.0, np.float32(0.3), (4,)",
    prints="[2. 2. 1. 2.]",
    returns="An array of ``shape`` and ``dtype`` holding counts.",
    n="the number(s) of trials.",
    p="the success probability (or probabilities).",
)
def binomial(key, n, p, shape=None, dtype=None):
    data, _ = _check_key("binomial", key)
    dt = _float_dtype("binomial", dtype)
    shape = _param_shape("binomial", shape, n, p)
    return _binomial(data, n, p, shape, dt)


@_documented(
    "Multinomial(n, p) counts (categories along ``p``'s last axis), as "
    "``jax.random.multinomial`` (a chain of binomials over the categories, in a scan).",
    call="10.0, p",
    prints="[1. 1. 8.]",
    returns="An array of ``shape`` and ``dtype`` holding counts that sum to ``n``.",
    setup=("p = np.array([0.2, 0.3, 0.5], np.float32)",),
    n="the number(s) of trials.",
    p="the category probabilities, shape ``(..., k)``.",
    shape="the result's shape (default ``p.shape``), ending in ``k``.",
    unroll="accepted for JAX's signature (the scan is not unrolled).",
)
def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
    data, _ = _check_key("multinomial", key)
    dt = _float_dtype("multinomial", dtype)
    n, p = jnp.asarray(n), jnp.asarray(p)
    ft = jnp.result_type(n, p)
    if not dtypes.is_float(ft):
        ft = dtypes.default_float()
    n, p = n.astype(ft), p.astype(ft)
    shape = p.shape if shape is None else _shape("multinomial", shape)
    n = jnp.broadcast_to(n, shape[:-1])
    p = jnp.moveaxis(jnp.broadcast_to(p, shape), -1, 0)
    remaining = jnp.flip(jnp.cumsum(jnp.flip(p, 0), axis=0), 0)
    ratios = p / jnp.where(remaining == 0, np.asarray(1, ft), remaining)
    keys = _split(data, (ratios.shape[0],))

    def step(remainder, ratio_key):
        ratio, k = ratio_key
        count = _binomial(k, remainder, jnp.clip(ratio, 0, 1), remainder.shape, remainder.dtype)
        return remainder - count, count

    _, counts = lax.scan(step, n, (ratios, keys))
    return jnp.moveaxis(counts, 0, -1).astype(dt)


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)
