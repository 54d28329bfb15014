"""``lax.rng_bit_generator``, ``lax.RandomAlgorithm`` and ``lax.rng_uniform``: XLA's stateless
bit generator and its stateful uniform sampler (re-exported by ``functx.lax``).

``rng_bit_generator(key, shape, dtype, algorithm)`` gives the bits XLA's CPU backend gives for
JAX 0.10.2. The key is a ``uint32[4]`` (two 64-bit words, low half first) or a ``uint64[2]``;
its first word is the cipher key ``s0`` and its second the counter ``s1``.

* Philox-4x32 (10 rounds; ``RNG_DEFAULT`` on the CPU): block ``j`` encrypts the 128-bit counter
  ``(s1 + j) + 2**64 * s0`` (the carry of ``s1 + j`` goes into the high half) under the key
  ``s0``; the four words of block ``j`` are outputs ``4j .. 4j+3`` (64-bit outputs: two blocks'
  words pairwise, low word first). The new key is ``(s0, s1 + blocks)``.
* Threefry-2x32 (20 rounds, ``functx.control.threefry``): for 32-bit (and narrower) outputs the
  shape is halved along its first even dimension (else its longest one); element ``i`` of the
  halved shape hashes the counter ``s1 + i`` and its two words land at positions ``2k`` and
  ``2k+1`` of that dimension (an odd size drops the last). 64-bit outputs hash ``s1 + i`` per
  element and join the two words. The new key is ``(s0, s1 + hashes)``.
* uint8/uint16 outputs are the 32-bit outputs' low bits.

Both algorithms are written once over word arithmetic (``_Words``: NumPy for the eager path,
``functx.ops`` for the Jaxpr the lowering inlines), elementwise over the output's positions, so
the whole generator fuses into the kernel that consumes the bits on both backends.

``rng_uniform(a, b, shape)`` is stateful in JAX (XLA draws a fresh seed on every execution, so
its values cannot be reproduced): functx draws from a NumPy generator seeded by the operating
system, eagerly only; ``jit`` of it raises ``UnsupportedError``.
"""

from __future__ import annotations

import enum
import math

import numpy as np

from functx import dtypes, ops, primitives as P
from functx.control.threefry import threefry2x32_p
from functx.core import Primitive, ShapedArray
from functx.errors import FunctxTypeError, FunctxValueError, UnsupportedError
from functx.lowering.rules import lowerings
from functx.source_info import where as _loc
from functx.tracing import get_aval, trace_flat
from functx.transforms import jvp as J, passes, vmap as V


class RandomAlgorithm(enum.IntEnum):
    """The bit generator of ``rng_bit_generator`` (``jax.lax.RandomAlgorithm``).

    Members: ``RNG_DEFAULT`` (the platform's choice: Philox on the CPU), ``RNG_THREE_FRY``
    (Threefry-2x32) and ``RNG_PHILOX`` (Philox-4x32).

    Example:
        >>> from functx import lax
        >>> print(lax.RandomAlgorithm.RNG_PHILOX, int(lax.RandomAlgorithm.RNG_PHILOX))
        RNG_PHILOX 2
    """

    RNG_DEFAULT = 0
    RNG_THREE_FRY = 1
    RNG_PHILOX = 2

    def __str__(self):
        return self.name


_UNSIGNED = (dtypes.uint8, dtypes.uint16, dtypes.uint32, dtypes.uint64)
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)  # the round multipliers
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)  # the key's increments (golden ratio, sqrt(3) - 1)
_MASK32 = (1 << 32) - 1


# --- word arithmetic, once for NumPy and once for op builders ------------------------------------
class _NumpyWords:
    """uint32 words as NumPy arrays (wrapping arithmetic)."""

    @staticmethod
    def const(v, dtype=np.uint32):
        return np.asarray(v, dtype)

    add = staticmethod(np.add)
    mul = staticmethod(np.multiply)
    xor = staticmethod(np.bitwise_xor)
    band = staticmethod(np.bitwise_and)
    bor = staticmethod(np.bitwise_or)
    lt = staticmethod(np.less)
    eq = staticmethod(np.equal)
    select = staticmethod(np.where)

    @staticmethod
    def shr(x, n):
        return x >> np.asarray(n, x.dtype)

    @staticmethod
    def shl(x, n):
        return x << np.asarray(n, x.dtype)

    @staticmethod
    def convert(x, dtype):
        return np.asarray(x).astype(dtype)

    @staticmethod
    def iota(shape, dim):
        return np.broadcast_to(
            np.arange(shape[dim], dtype=np.uint32).reshape(
                [-1 if i == dim else 1 for i in range(len(shape))]
            ),
            shape,
        )

    @staticmethod
    def full(shape, x):
        return np.broadcast_to(x, shape)

    @staticmethod
    def threefry(k1, k2, x1, x2):
        return threefry2x32_p.impl(k1, k2, x1, x2)

    @staticmethod
    def word(key, i):
        return np.asarray(key)[i]

    @staticmethod
    def mul_wide(x, m):
        p = x.astype(np.uint64) * np.uint64(m)
        return (p >> np.uint64(32)).astype(np.uint32), p.astype(np.uint32)

    @staticmethod
    def stack(words, dtype):
        return np.array(words, dtype)


def _broadcasting(op):
    def fn(*xs):
        shape = max((get_aval(x).shape for x in xs), key=len)
        xs = [ops.broadcast_in_dim(x, shape, ()) if get_aval(x).shape != shape else x for x in xs]
        return op(*xs)

    return fn


class _TracedWords:
    """The same words through ``functx.ops`` (the Jaxpr that the lowering inlines); rank-0
    operands broadcast as NumPy's do."""

    @staticmethod
    def const(v, dtype=np.uint32):
        # (a NumPy scalar: a Python int above 2**31 would go through int32 with x64 off)
        return ops.full((), np.asarray(v, dtype), dtype)

    add = staticmethod(_broadcasting(ops.add))
    mul = staticmethod(_broadcasting(ops.mul))
    xor = staticmethod(_broadcasting(ops.bitwise_xor))
    band = staticmethod(_broadcasting(ops.bitwise_and))
    bor = staticmethod(_broadcasting(ops.bitwise_or))
    lt = staticmethod(_broadcasting(ops.lt))
    eq = staticmethod(_broadcasting(ops.eq))
    select = staticmethod(_broadcasting(ops.select))
    div = staticmethod(_broadcasting(ops.div))

    # shifts by constants: a floor division and a multiplication by a power of two (one
    # operation each; C and Triton compile them to shifts)
    @staticmethod
    def shr(x, n):
        return _TracedWords.div(x, _TracedWords.const(1 << n, get_aval(x).dtype))

    @staticmethod
    def shl(x, n):
        return _TracedWords.mul(x, _TracedWords.const(1 << n, get_aval(x).dtype))

    @staticmethod
    def convert(x, dtype):
        return ops.convert_element_type(x, dtype)

    @staticmethod
    def iota(shape, dim):
        return ops.broadcasted_iota(dtypes.uint32, shape, dim)

    @staticmethod
    def full(shape, x):
        return ops.broadcast_in_dim(x, tuple(shape), ())

    @staticmethod
    def threefry(k1, k2, x1, x2):
        return threefry2x32_p.bind(k1, k2, x1, x2)

    @staticmethod
    def word(key, i):
        return ops.reshape(ops.slice(key, (i,), (i + 1,)), ())

    @staticmethod
    def mul_wide(x, m):
        # the 64-bit product from 16-bit halves (no uint64 with x64 off): four partial products
        o = _TracedWords
        mask = o.const(0xFFFF)
        m0, m1 = o.const(m & 0xFFFF), o.const(m >> 16)
        x0, x1 = o.band(x, mask), o.shr(x, 16)
        p00, p01, p10, p11 = o.mul(x0, m0), o.mul(x0, m1), o.mul(x1, m0), o.mul(x1, m1)
        mid = o.add(o.add(o.shr(p00, 16), o.band(p01, mask)), o.band(p10, mask))
        hi = o.add(o.add(p11, o.add(o.shr(p01, 16), o.shr(p10, 16))), o.shr(mid, 16))
        return hi, o.mul(x, o.const(m))

    @staticmethod
    def stack(words, dtype):
        return ops.concatenate([ops.reshape(w, (1,)) for w in words], 0)


def _bool_word(o, b):
    return o.select(b, o.const(1), o.const(0))


def _add64(o, lo, hi, n_lo, n_hi=None):
    """``(lo, hi) + (n_lo, n_hi)`` as 64-bit words, and the carry out of the high word."""
    new_lo = o.add(lo, n_lo)
    carry = _bool_word(o, o.lt(new_lo, lo))
    mid = hi if n_hi is None else o.add(hi, n_hi)
    new_hi = o.add(mid, carry)
    out = o.lt(new_hi, carry)
    if n_hi is not None:
        out = o.bor(_bool_word(o, o.lt(mid, hi)), _bool_word(o, out))
    else:
        out = _bool_word(o, out)
    return new_lo, new_hi, out


def _philox(o, x, k0, k1):
    """Philox-4x32 with 10 rounds of the counter words ``x`` under the key ``(k0, k1)``."""
    for r in range(10):
        if r:
            k0, k1 = o.add(k0, o.const(_PHILOX_W[0])), o.add(k1, o.const(_PHILOX_W[1]))
        hi0, lo0 = o.mul_wide(x[0], _PHILOX_M[0])
        hi1, lo1 = o.mul_wide(x[2], _PHILOX_M[1])
        x = (o.xor(o.xor(hi1, x[1]), k0), lo1, o.xor(o.xor(hi0, x[3]), k1), lo0)
    return x


def _linear_index(o, shape, div=None):
    """Each position's row-major index in ``shape`` (uint32); with ``div=(d, 2)`` the index
    in the shape whose dimension ``d`` is halved (rounded up), position ``i`` of ``d`` counting
    as ``i // 2``."""
    idx, stride = None, 1
    for d in reversed(range(len(shape))):
        n = shape[d]
        i = o.iota(shape, d)
        if div is not None and d == div:
            i, n = o.shr(i, 1), -(-n // 2)
        if stride != 1:
            i = o.mul(i, o.const(stride))
        idx = i if idx is None else o.add(idx, i)
        stride *= n
    return (o.full(shape, o.const(0)) if idx is None else idx), stride


def _split_dim(shape):
    """The dimension XLA's Threefry halves: the first even one, else the first longest."""
    for d, n in enumerate(shape):
        if n % 2 == 0:
            return d
    return max(range(len(shape)), key=lambda d: (shape[d], -d))


def _generate(o, key, shape, dtype, algorithm):
    """``(new_key, bits)`` for ``key`` (uint32[4] or uint64[2] words as ``o`` arrays)."""
    key_dt = np.dtype(dtypes.uint64) if _key_is_u64(key, o) else np.dtype(dtypes.uint32)
    if key_dt == np.uint64:
        w = [o.word(key, 0), o.word(key, 1)]
        words = []
        for v in w:
            words += [o.convert(v, np.uint32), o.convert(o.shr(v, 32), np.uint32)]
    else:
        words = [o.word(key, i) for i in range(4)]
    k0, k1, c0, c1 = words
    wide = np.dtype(dtype) == np.uint64
    n = math.prod(shape)
    shape = tuple(shape)
    if algorithm == RandomAlgorithm.RNG_THREE_FRY:
        if wide:
            idx, count = _linear_index(o, shape)
            lane = None
        elif shape:
            d = _split_dim(shape)
            idx, count = _linear_index(o, shape, d)
            lane = o.band(o.iota(shape, d), o.const(1))
        else:
            idx, count, lane = o.full((), o.const(0)), 1, None
        lo, hi, _ = _add64(o, o.full(shape, c0), o.full(shape, c1), idx)
        y0, y1 = o.threefry(o.full(shape, k0), o.full(shape, k1), lo, hi)
        if wide:
            bits = o.bor(o.convert(y0, np.uint64), o.shl(o.convert(y1, np.uint64), 32))
        else:
            bits = y0 if lane is None else o.select(o.eq(lane, o.const(0)), y0, y1)
    else:
        per = 2 if wide else 4  # outputs per block
        count = -(-n * (2 if wide else 1) // 4)
        m, _ = _linear_index(o, shape)
        j = o.shr(m, per.bit_length() - 1)
        lane = o.band(m, o.const(per - 1))
        full = [o.full(shape, w) for w in (c0, c1, k0, k1)]
        x0, x1, carry = _add64(o, full[0], full[1], j)
        x2, x3, _ = _add64(o, full[2], full[3], carry)
        y = _philox(o, (x0, x1, x2, x3), full[2], full[3])
        if wide:
            pairs = [
                o.bor(o.convert(y[2 * i], np.uint64), o.shl(o.convert(y[2 * i + 1], np.uint64), 32))
                for i in range(2)
            ]
            bits = o.select(o.eq(lane, o.const(0)), pairs[0], pairs[1])
        else:
            bits = y[3]
            for i in (2, 1, 0):
                bits = o.select(o.eq(lane, o.const(i)), y[i], bits)
    if np.dtype(dtype) in (np.uint8, np.uint16):
        bits = o.convert(bits, dtype)
    # the new key: the counter advanced by the blocks (hashes) used, 64-bit, no carry into s0
    n0, n1, _ = _add64(o, c0, c1, o.const(count & _MASK32), o.const(count >> 32))
    if key_dt == np.uint64:
        join = [
            o.bor(o.convert(lo_, np.uint64), o.shl(o.convert(hi_, np.uint64), 32))
            for lo_, hi_ in ((k0, k1), (n0, n1))
        ]
        new_key = o.stack(join, np.uint64)
    else:
        new_key = o.stack([k0, k1, n0, n1], np.uint32)
    return new_key, bits


def _key_is_u64(key, o):
    dt = np.asarray(key).dtype if o is _NumpyWords else get_aval(key).dtype
    return np.dtype(dt) == np.uint64


# --- the primitive -------------------------------------------------------------------------------
rng_bit_generator_p = Primitive("rng_bit_generator", multiple_results=True, group="random")
P.registry["rng_bit_generator"] = rng_bit_generator_p


def _check_key(aval):
    ok = (aval.shape == (4,) and aval.dtype == dtypes.uint32) or (
        aval.shape == (2,) and aval.dtype == dtypes.uint64
    )
    if not ok:
        # JAX's lowering asserts the same (an AssertionError too)
        raise AssertionError(
            "rng_bit_generator: the key must be uint32[4] or uint64[2], got "
            f"{aval.str_short()}{_loc()}"
        )


def _rbg_abstract_eval(key, *, shape, dtype, algorithm, out_sharding):
    _check_key(key)
    return [
        ShapedArray(key.shape, key.dtype, weak_type=key.weak_type),
        ShapedArray(tuple(shape), dtype),
    ]


def _rbg_impl(key, *, shape, dtype, algorithm, out_sharding):
    key = np.asarray(key)
    with np.errstate(over="ignore"):
        new_key, bits = _generate(_NumpyWords, key, tuple(shape), dtype, algorithm)
    return [np.asarray(new_key, key.dtype), np.array(bits, dtype)]


rng_bit_generator_p.abstract_eval = _rbg_abstract_eval
rng_bit_generator_p.impl = _rbg_impl
J.nondifferentiable.add(rng_bit_generator_p)


def _rbg_batch(args, dims, *, shape, dtype, algorithm, out_sharding):
    # as JAX batches it: the first key alone draws the bits of every example (shape (n, *shape)),
    # and only the first key advances
    (keys,), (d,) = args, dims
    keys = V.moveaxis(keys, d, 0)
    n = get_aval(keys).shape[0]
    new_key, bits = rng_bit_generator_p.bind(
        ops.index_in_dim(keys, 0, 0, keepdims=False),
        shape=(n, *shape),
        dtype=dtype,
        algorithm=algorithm,
        out_sharding=out_sharding,
    )
    new_keys = (
        ops.dynamic_update_slice_in_dim(keys, ops.expand_dims(new_key, (0,)), 0, 0) if n else keys
    )
    return [new_keys, bits], [0, 0]


V.batching_rules[rng_bit_generator_p] = _rbg_batch

_jaxprs: dict = {}  # (key aval, shape, dtype, algorithm) -> the generator's ClosedJaxpr


def _rbg_lowering(g, ins, avals, *, shape, dtype, algorithm, out_sharding):
    # imported here, when jit lowers: the loop IR (0.1 s of import), which `import functx` must not
    from functx.lowering import lower

    key = avals[0]  # the new key has the key's aval
    cache_key = (key.shape, key.dtype, tuple(shape), np.dtype(dtype), int(algorithm))
    closed = _jaxprs.get(cache_key)
    if closed is None:
        kaval = ShapedArray(key.shape, key.dtype)
        closed, _ = trace_flat(
            lambda k: (list(_generate(_TracedWords, k, tuple(shape), dtype, algorithm)), None),
            [kaval],
        )
        _jaxprs[cache_key] = closed
    return lower.inline_jaxpr(g, closed, ins)


lowerings[rng_bit_generator_p] = _rbg_lowering


def _shape(name, shape):
    """A shape as JAX canonicalizes it (an int or a sequence of non-negative ints)."""
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    out = []
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise FunctxTypeError(
                f"{name}: shapes must be sequences of integers, got {shape}{_loc()}"
            )
        if d < 0:
            raise FunctxTypeError(f"{name}: shapes must be non-negative, got {shape}{_loc()}")
        out.append(int(d))
    return tuple(out)


def rng_bit_generator(
    key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *, out_sharding=None
):
    """Stateless random bits from a key: XLA's ``RngBitGenerator`` (``jax.lax.rng_bit_generator``),
    with the bits JAX gives on the CPU.

    Arguments:
        key: a ``uint32[4]`` array (or ``uint64[2]`` with x64 on): the generator's state.
        shape: the shape of the bits.
        dtype: ``uint8``, ``uint16``, ``uint32`` or ``uint64`` (anything else: TypeError).
        algorithm: a ``RandomAlgorithm`` (``RNG_DEFAULT`` is Philox, as on JAX's CPU).
        out_sharding: accepted for JAX's signature; functx runs on one device.

    Returns:
        ``(new_key, bits)``: the advanced key (the input's shape and dtype) and the bits.

    Differences from JAX: a key that is not ``uint32[4]``/``uint64[2]`` raises AssertionError when
    traced (JAX fails at lowering); a negative size raises TypeError (JAX: an MLIR error).

    Example:
        >>> import numpy as np
        >>> from functx import lax
        >>> new_key, bits = lax.rng_bit_generator(np.array([1, 2, 3, 4], np.uint32), (3,))
        >>> new_key
        Array([1, 2, 4, 4], dtype=uint32)
        >>> bits
        Array([ 512747620, 1298009047, 1267190206], dtype=uint32)
    """
    shape = _shape("rng_bit_generator", shape)
    dt = dtypes.check_user_dtype(dtype, "rng_bit_generator")
    if dt not in _UNSIGNED:
        raise FunctxTypeError(f"rng_bit_generator: unsupported dtype {dt}")
    algorithm = RandomAlgorithm(algorithm)
    if isinstance(key, (list, tuple)):
        raise FunctxTypeError(
            "Error interpreting argument to rng_bit_generator as a JAX value: a "
            f"{type(key).__name__} (pass an array){_loc()}"
        )
    new_key, bits = rng_bit_generator_p.bind(
        key, shape=tuple(shape), dtype=dt, algorithm=algorithm, out_sharding=out_sharding
    )
    return new_key, bits


# --- rng_uniform: stateful, eager only -----------------------------------------------------------
rng_uniform_p = Primitive("rng_uniform", group="random")
P.registry["rng_uniform"] = rng_uniform_p
_generator = np.random.default_rng()


def _ru_abstract_eval(a, b, *, shape):
    if a.dtype != b.dtype:
        raise FunctxValueError(
            f"Arguments to rng_uniform must have identical dtypes, got {a.dtype} and {b.dtype}."
        )
    if a.shape != () or b.shape != ():
        raise FunctxValueError(
            f"Arguments to rng_uniform must be scalars; got shapes {a.shape} and {b.shape}."
        )
    return ShapedArray(tuple(shape), a.dtype, weak_type=a.weak_type and b.weak_type)


def _ru_impl(a, b, *, shape):
    a, b = np.asarray(a), np.asarray(b)
    dt = a.dtype
    if dt.kind == "f":
        # as XLA converts bits: the top mantissa bits scaled to [0, 1), then into [a, b)
        mant = np.finfo(dt).nmant
        bits = _generator.integers(0, 1 << mant, size=shape, dtype=np.uint64)
        u = bits.astype(dt) * dt.type(2.0**-mant)
        return (u * (b - a) + a).astype(dt)
    if dt.kind in "iu":
        if b <= a:
            return np.full(shape, a, dt)
        return _generator.integers(a, b, size=shape, dtype=dt, endpoint=False)
    raise FunctxTypeError(f"rng_uniform does not accept dtype {dt}{_loc()}")


rng_uniform_p.abstract_eval = _ru_abstract_eval
rng_uniform_p.impl = _ru_impl
passes.effectful.add(rng_uniform_p)


def _ru_jvp(primals, tangents, *, shape):
    raise UnsupportedError(f"Differentiation rule for 'rng_uniform' not implemented{_loc()}")


J.jvp_rules[rng_uniform_p] = _ru_jvp


def _ru_batch(args, dims, *, shape):
    raise UnsupportedError(f"Batching rule for 'rng_uniform' not implemented{_loc()}")


V.batching_rules[rng_uniform_p] = _ru_batch


def rng_uniform(a, b, shape):
    """Stateful uniform random numbers in ``[a, b)`` (``jax.lax.rng_uniform``; experimental in
    JAX as here). Each call draws new numbers: JAX's XLA seeds them afresh on every execution,
    so they cannot equal JAX's; functx draws from an OS-seeded NumPy generator, eagerly only
    (``jit`` raises ``UnsupportedError``).

    Arguments:
        a, b: scalars of one dtype (float or integer): the range.
        shape: the result's shape.

    Returns:
        An array of ``shape`` and the operands' dtype.

    Differences from JAX: JAX's is stateful (XLA reseeds it on every execution), so values cannot
    match: functx draws from a NumPy generator seeded by the operating system, eagerly only; under
    ``jit`` it raises UnsupportedError.

    Example:
        >>> import numpy as np
        >>> from functx import lax
        >>> u = lax.rng_uniform(np.float32(2), np.float32(3), (4,))
        >>> u.shape, u.dtype, bool(((u >= 2) & (u < 3)).all())
        ((4,), dtype('float32'), True)
    """
    shape = _shape("rng_uniform", shape)
    return rng_uniform_p.bind(a, b, shape=tuple(shape))


__all__ = [
    "RandomAlgorithm",
    "rng_bit_generator",
    "rng_bit_generator_p",
    "rng_uniform",
    "rng_uniform_p",
]
