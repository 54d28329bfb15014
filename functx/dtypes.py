"""dtypes and JAX's type-promotion lattice, with weak-typed Python scalars.

functx uses NumPy dtype objects everywhere (bfloat16 comes from ml_dtypes). The
``jax_enable_x64`` flag (``functx.config``) decides, as in JAX: off (the default), 64-bit dtypes
canonicalize to 32 bits (``canonicalize(float64)`` is float32, NumPy float64 inputs become float32
arrays, an explicit float64 request warns and gives float32) and Python ``float``/``int`` are weak
float32/int32; on, 64-bit dtypes stay and the defaults are float64/int64.
"""

from __future__ import annotations

import functools
import sys
import warnings

import ml_dtypes
import numpy as np

from functx import config
from functx.errors import FunctxTypeError, FunctxValueError
from functx.source_info import where

bool_ = np.dtype(np.bool_)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)
float16 = np.dtype(np.float16)
bfloat16 = np.dtype(ml_dtypes.bfloat16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)
# The narrow dtypes (ml_dtypes; one byte per element in NumPy, as in JAX).
int2 = np.dtype(ml_dtypes.int2)
int4 = np.dtype(ml_dtypes.int4)
uint2 = np.dtype(ml_dtypes.uint2)
uint4 = np.dtype(ml_dtypes.uint4)
float8_e3m4 = np.dtype(ml_dtypes.float8_e3m4)
float8_e4m3 = np.dtype(ml_dtypes.float8_e4m3)
float8_e4m3b11fnuz = np.dtype(ml_dtypes.float8_e4m3b11fnuz)
float8_e4m3fn = np.dtype(ml_dtypes.float8_e4m3fn)
float8_e4m3fnuz = np.dtype(ml_dtypes.float8_e4m3fnuz)
float8_e5m2 = np.dtype(ml_dtypes.float8_e5m2)
float8_e5m2fnuz = np.dtype(ml_dtypes.float8_e5m2fnuz)
float8_e8m0fnu = np.dtype(ml_dtypes.float8_e8m0fnu)
float4_e2m1fn = np.dtype(ml_dtypes.float4_e2m1fn)

# float0 is the dtype of tangents of integer inputs (JAX's name); it holds no data.
float0 = np.dtype([("float0", np.void, 0)])

SUPPORTED = (
    bool_,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
    float16,
    bfloat16,
    float32,
    float64,
    complex64,
    complex128,
)
NARROW_INTS = (int2, int4, uint2, uint4)
FLOAT8S = (
    float8_e3m4,
    float8_e4m3,
    float8_e4m3b11fnuz,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
)
NARROW_FLOATS = FLOAT8S + (float4_e2m1fn,)
#: The narrow dtypes (JAX's int2/int4/uint2/uint4, float8 and float4 types): no implicit
#: promotion; arithmetic computes in the wider dtype given here and rounds (floats) or wraps
#: (integers) the result back, as XLA's CPU backend does (float8 in float16, float8_e8m0fnu,
#: whose range float16 lacks, in float32).
NARROW = NARROW_INTS + NARROW_FLOATS
COMPUTE_DTYPE = {
    **{
        d: (np.dtype(np.int8) if d.name.startswith("int") else np.dtype(np.uint8))
        for d in NARROW_INTS
    },
    **{d: float16 for d in NARROW_FLOATS},
    float8_e8m0fnu: float32,
}
SUPPORTED = SUPPORTED + NARROW
FLOATS = (float16, bfloat16, float32, float64) + NARROW_FLOATS
COMPLEX = (complex64, complex128)
# The real dtype of each complex dtype's parts, and back (float16/bfloat16 go to complex64).
REAL_OF = {complex64: float32, complex128: float64}
COMPLEX_OF = {float16: complex64, bfloat16: complex64, float32: complex64, float64: complex128}
COMPLEX_OF.update({d: complex64 for d in NARROW_FLOATS})
SIGNED = (int8, int16, int32, int64, int2, int4)
UNSIGNED = (uint8, uint16, uint32, uint64, uint2, uint4)
INTEGERS = SIGNED + UNSIGNED

# torch's name of each supported dtype (GPU buffers are torch tensors): NumPy's own name.
TORCH_NAMES = {d: d.name for d in SUPPORTED}

# The 32-bit dtype each 64-bit one becomes while jax_enable_x64 is off.
TO_32BIT = {float64: float32, int64: int32, uint64: uint32, complex128: complex64}

_CANONICAL = {d: d for d in SUPPORTED + (float0,)}  # x64 on
_CANONICAL_32 = {d: TO_32BIT.get(d, d) for d in SUPPORTED + (float0,)}  # x64 off


def x64_enabled() -> bool:
    """Whether 64-bit dtypes are enabled (JAX's ``jax_enable_x64``; see ``functx.config``).

    Returns:
        ``True`` or ``False`` (off by default, as in JAX).

    Example:
        >>> from functx import dtypes
        >>> dtypes.x64_enabled()
        False
    """
    return config.x64_on()


def default_float() -> np.dtype:
    """The dtype of a Python ``float`` and of float defaults (``jnp.zeros``, samplers): float32,
    float64 while ``jax_enable_x64`` is on.

    Returns:
        a NumPy dtype.

    Example:
        >>> from functx import dtypes
        >>> dtypes.default_float()
        dtype('float32')
    """
    return float64 if config.x64_on() else float32


def default_int() -> np.dtype:
    """The dtype of a Python ``int`` and of integer defaults (``jnp.arange(3)``): int32, int64
    while ``jax_enable_x64`` is on.

    Returns:
        a NumPy dtype.

    Example:
        >>> from functx import dtypes
        >>> dtypes.default_int()
        dtype('int32')
    """
    return int64 if config.x64_on() else int32


def default_uint() -> np.dtype:
    """The default unsigned integer dtype: uint32, uint64 while ``jax_enable_x64`` is on.

    Returns:
        a NumPy dtype.

    Example:
        >>> from functx import dtypes
        >>> dtypes.default_uint()
        dtype('uint32')
    """
    return uint64 if config.x64_on() else uint32


def default_complex() -> np.dtype:
    """The dtype of a Python ``complex`` (``1j``): the complex type of :func:`default_float`.

    Returns:
        complex64 while the default float is float32, complex128 when it is float64.

    Example:
        >>> from functx import dtypes
        >>> dtypes.default_complex()
        dtype('complex64')
    """
    return complex128 if default_float() == float64 else complex64


_SHORT = {
    bool_: "bool",
    int8: "i8",
    int16: "i16",
    int32: "i32",
    int64: "i64",
    uint8: "u8",
    uint16: "u16",
    uint32: "u32",
    uint64: "u64",
    float16: "f16",
    bfloat16: "bf16",
    float32: "f32",
    float64: "f64",
    complex64: "c64",
    complex128: "c128",
    float0: "float0",
    # JAX's spelling: float -> f, uint -> u, int -> i (i4, u4, f8_e4m3fn, f4_e2m1fn).
    **{d: d.name.replace("float", "f").replace("uint", "u").replace("int", "i") for d in NARROW},
}


def canonicalize_dtype(dtype, allow_extended_dtype=False) -> np.dtype:
    """The dtype functx computes in for ``dtype`` (``jax.dtypes.canonicalize_dtype``): with
    ``jax_enable_x64`` off, 64-bit types give their 32-bit counterparts.

    Arguments:
      dtype: a dtype, a NumPy or Python type, or a name.
      allow_extended_dtype: accepted for JAX's signature (functx has no extended dtypes).
    Returns:
      a NumPy dtype.
    Example:
      >>> from functx import dtypes
      >>> dtypes.canonicalize_dtype("int64") in (dtypes.canonicalize_dtype("int32"), "int64")
      True
    """
    del allow_extended_dtype
    return canonicalize(dtype)


def itemsize_bits(dtype) -> int:
    """The bits an element of ``dtype`` takes (``jax.dtypes.itemsize_bits``): 4 for int4,
    uint4 and float4_e2m1fn, 8 for bool.

    Arguments:
      dtype: a dtype or anything ``numpy.dtype`` takes.
    Returns:
      an int.
    Example:
      >>> import ml_dtypes
      >>> from functx import dtypes
      >>> dtypes.itemsize_bits("float32"), dtypes.itemsize_bits(ml_dtypes.int4)
      (32, 4)
    """
    dt = np.dtype(dtype)
    narrow = {"int2": 2, "uint2": 2, "int4": 4, "uint4": 4, "float4_e2m1fn": 4}
    return narrow.get(dt.name, dt.itemsize * 8)


def scalar_type_of(x) -> type:
    """The Python scalar type of ``x``'s dtype (``jax.dtypes.scalar_type_of``): bool, int,
    float or complex.

    Arguments:
      x: an array or a scalar.
    Returns:
      ``bool``, ``int``, ``float`` or ``complex``.
    Example:
      >>> import numpy as np
      >>> from functx import dtypes
      >>> dtypes.scalar_type_of(np.float32(1)), dtypes.scalar_type_of(3)
      (<class 'float'>, <class 'int'>)
    """
    dt = np.result_type(x) if not hasattr(x, "dtype") else np.dtype(x.dtype)
    if dt == np.bool_:
        return bool
    if issubdtype(dt, np.integer):
        return int
    if issubdtype(dt, np.complexfloating):
        return complex
    if issubdtype(dt, np.floating):  # (ml_dtypes' floats too)
        return float
    raise TypeError(f"Invalid scalar value {x!r}")


def short_name(dtype: np.dtype) -> str:
    """JAX's short spelling of a dtype in printed Jaxprs (``f32``, ``i32``, ``bool``)."""
    return _SHORT.get(dtype, str(dtype))


def canonicalize(dtype) -> np.dtype:
    """Turn anything NumPy understands as a dtype (or a Python type) into a supported np.dtype,
    the canonical one of the ``jax_enable_x64`` mode (JAX's ``canonicalize_dtype``): with the
    flag off, 64-bit dtypes give their 32-bit counterparts, silently.

    Arguments:
        dtype: a dtype, a NumPy or Python type, or a name.

    Returns:
        a NumPy dtype functx supports.

    Example:
        >>> from functx import dtypes
        >>> dtypes.canonicalize('float64'), dtypes.canonicalize(int)
        (dtype('float32'), dtype('int32'))
    """
    if isinstance(dtype, np.dtype):  # the hot path (every eager result): one dict lookup
        dt = (_CANONICAL if config.x64_on() else _CANONICAL_32).get(dtype)
        if dt is not None:
            return dt
    if dtype is float:
        return default_float()
    if dtype is int:
        return default_int()
    if dtype is bool:
        return bool_
    if dtype is complex:
        return default_complex()
    if isinstance(dtype, str) and dtype == "bfloat16":
        return bfloat16
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        raise FunctxTypeError(
            f"{dtype!r:.60} is not a dtype; supported: "
            + ", ".join(str(d) for d in SUPPORTED)
            + where()
        ) from None
    if dt == float0:
        return float0
    if dt not in SUPPORTED:
        raise FunctxTypeError(
            f"functx does not support dtype {dt}; supported: "
            + ", ".join(str(d) for d in SUPPORTED)
            + where()
        )
    return dt if config.x64_on() else _CANONICAL_32[dt]


NARROW_SET = frozenset(NARROW)


_STEPWISE = frozenset(
    ("reduce_sum", "reduce_prod", "associative_scan", "scatter_add", "scatter_mul", "scatter_sub")
)


def call_widened(name: str, impl, vals, params):
    """Run a primitive's NumPy implementation on operands of narrow dtypes as XLA's CPU backend
    computes them: each narrow operand in its :data:`COMPUTE_DTYPE` (int4 in int8, sign-extended;
    float8 in float16), the result left wide (float16 ones as float32, which they are exactly) for
    the caller to round or wrap back to the narrow result dtype with ``astype`` (ml_dtypes rounds
    to nearest even and wraps integers). float8_e8m0fnu computes in float32 (XLA's CPU also
    flushes its smallest value, 2**-127, a float32 subnormal, to zero in some operations: not
    here).

    Arguments:
        name: the primitive's name.
        impl: its NumPy implementation, ``impl(*vals, **params)``.
        vals: the operands (NumPy arrays).
        params: the primitive's parameters.

    Returns:
        what ``impl`` returns on the widened operands.

    Example:
        >>> import numpy as np
        >>> from functx import dtypes
        >>> x = np.array([7, -8], dtypes.int4)
        >>> dtypes.call_widened("add", np.add, (x, x), {}).astype(dtypes.int4)
        array([-2, 0], dtype=int4)
    """
    if name in ("logistic", "exp2") and vals[0].dtype in NARROW_FLOATS:
        # XLA expands logistic to 1 / (1 + exp(-x)), JAX exp2 to exp(log(2) * x), before the
        # narrow float is computed wider: each step rounds to the narrow dtype
        dt = vals[0].dtype

        def step(fn, *a):
            with np.errstate(all="ignore"):
                return np.asarray(call_widened("", fn, a, {})).astype(dt)

        if name == "exp2":
            return step(np.exp, step(np.multiply, vals[0], np.full_like(vals[0], np.log(2))))
        e = step(np.exp, step(np.negative, vals[0]))
        return step(np.divide, np.ones_like(e), step(np.add, np.ones_like(e), e))
    if name == "bitcast_convert_type" or (name in _STEPWISE and vals[0].dtype in NARROW_FLOATS):
        # the bits as they are; and XLA rounds each partial result of a narrow float reduction
        # or scan: ml_dtypes' own ufuncs (float32 arithmetic rounded at each step) do that
        with np.errstate(all="ignore"):
            return impl(*vals, **params)
    wide = []
    for v in vals:
        dt = getattr(v, "dtype", None)
        if dt in NARROW_SET:
            v = np.asarray(v).astype(COMPUTE_DTYPE[dt])
        wide.append(v)
    with np.errstate(all="ignore"):  # (overflow to a narrow type is NaN or inf, no warning)
        out = impl(*wide, **params)
    if isinstance(out, (tuple, list)):
        return type(out)(_widen_result(o) for o in out)
    return _widen_result(out)


def _widen_result(out):
    if getattr(out, "dtype", None) == float16:
        # float32 (exact), NaN made positive: float4_e2m1fn, which has no NaN, takes -0.0 for
        # it as in XLA (ml_dtypes gives a negative NaN +0.0)
        out = np.asarray(out).astype(np.float32)
        return np.where(out != out, np.float32(np.nan), out)
    return out


_PY_TYPES = (bool, int, float, complex)


def _user_stacklevel() -> int:
    """The ``stacklevel`` of a warning that points at the first frame outside functx."""
    pkg = __file__[: -len("dtypes.py")]
    f, level = sys._getframe(2), 2
    while f is not None and f.f_code.co_filename.startswith(pkg):
        f, level = f.f_back, level + 1
    return level


def check_user_dtype(dtype, fun_name: str = "") -> np.dtype:
    """A dtype the user asked for (``dtype=`` of ``zeros``, ``astype``, ...), canonicalized as
    JAX does it: with ``jax_enable_x64`` off, an explicit 64-bit dtype warns (JAX's UserWarning,
    "Explicitly requested dtype float64 requested in zeros is not available, and will be
    truncated to dtype float32...") and gives the 32-bit one; a Python type (``float``, ``int``)
    gives the default dtype without a warning.

    Arguments:
        dtype: the requested dtype (a dtype, a NumPy or Python type, or a name).
        fun_name: the function's name, for the warning.

    Returns:
        the canonical NumPy dtype.

    Example:
        >>> import warnings
        >>> from functx import dtypes
        >>> with warnings.catch_warnings(record=True) as w:
        ...     warnings.simplefilter("always")
        ...     print(dtypes.check_user_dtype("float64", "zeros"), w[0].category.__name__)
        float32 UserWarning
    """
    if isinstance(dtype, type) and dtype in _PY_TYPES:
        return canonicalize(dtype)
    dt = canonicalize(dtype)
    if config.x64_on() or dt == float0:
        return dt
    full = np.dtype(dtype) if not (isinstance(dtype, str) and dtype == "bfloat16") else dt
    if full != dt:
        where_ = f" requested in {fun_name}" if fun_name else ""
        warnings.warn(
            f"Explicitly requested dtype {full}{where_} is not available, and will be "
            f"truncated to dtype {dt}. To enable more dtypes, set the jax_enable_x64 "
            "configuration option or the JAX_ENABLE_X64 shell environment variable. See "
            "https://github.com/jax-ml/jax#current-gotchas for more.",
            UserWarning,
            stacklevel=_user_stacklevel(),
        )
    return dt


def _member_test(name: str, members: tuple, what: str, yes: str, no: str):
    """The function ``name(dtype)``: whether ``dtype`` is among ``members``; its docstring says
    it is ``what`` and shows a dtype that is (``yes``) and one that is not (``no``)."""

    def test(dtype) -> bool:
        return np.dtype(dtype) in members

    test.__name__ = test.__qualname__ = name
    test.__doc__ = f"""Whether ``dtype`` is {what}.

    Arguments:
        dtype: anything ``numpy.dtype`` accepts (a dtype, a type or a name).

    Returns:
        ``True`` or ``False``.

    Example:
        >>> from functx import dtypes
        >>> dtypes.{name}({yes!r}), dtypes.{name}({no!r})
        (True, False)
    """
    return test


is_float = _member_test(
    "is_float",
    FLOATS,
    "one of functx's floating dtypes (bfloat16, float8s, ...)",
    "bfloat16",
    "int32",
)
is_complex = _member_test(
    "is_complex",
    COMPLEX,
    "one of functx's complex dtypes (complex64, complex128)",
    "complex64",
    "float32",
)
is_inexact = _member_test(
    "is_inexact",
    FLOATS + COMPLEX,
    "floating or complex (the dtypes that have derivatives)",
    "complex128",
    "int8",
)
is_int = _member_test(
    "is_int",
    INTEGERS,
    "one of functx's integer dtypes, signed or unsigned (not bool)",
    "uint8",
    "bool",
)
is_signed = _member_test("is_signed", SIGNED, "a signed integer dtype", "int8", "uint8")
is_unsigned = _member_test("is_unsigned", UNSIGNED, "an unsigned integer dtype", "uint16", "int16")


def to_inexact(dtype) -> np.dtype:
    """The inexact dtype a function that needs one computes an integer or bool input in, as
    JAX's ``quantile``/``median`` do: bool and integers of up to 32 bits become float32, 64-bit
    integers float64 (float32 with x64 off); inexact dtypes stay.

    Arguments:
        dtype: anything ``numpy.dtype`` accepts.

    Returns:
        A floating or complex ``numpy.dtype``, canonical for the x64 mode.

    Example:
        >>> from functx import dtypes
        >>> dtypes.to_inexact('int32'), dtypes.to_inexact('float16')
        (dtype('float32'), dtype('float16'))
    """
    dt = np.dtype(dtype)
    if is_inexact(dt):
        return dt
    return canonicalize(float64 if dt.itemsize == 8 else float32)


def to_complex(dtype) -> np.dtype:
    """The complex dtype of ``to_inexact(dtype)``'s width (complex64 for float16/bfloat16/float32,
    complex128 for float64), as JAX's ``sort_complex`` converts.

    Arguments:
        dtype: anything ``numpy.dtype`` accepts.

    Returns:
        complex64 or complex128 (complex64 with x64 off).

    Example:
        >>> from functx import dtypes
        >>> dtypes.to_complex('int8'), dtypes.to_complex('complex64')
        (dtype('complex64'), dtype('complex64'))
    """
    dt = to_inexact(dtype)
    if dt in COMPLEX:
        return dt
    return canonicalize(complex128 if dt == float64 else complex64)


def issubdtype(dtype, category) -> bool:
    """Whether ``dtype`` is ``category`` or below it in the type hierarchy
    (``jax.numpy.issubdtype``),
    like ``np.issubdtype`` but aware of bfloat16 (a floating type).

    Arguments:
      dtype: a dtype, a scalar type or an array.
      category: a dtype or an abstract type (``jnp.floating``, ``jnp.integer``, ``jnp.inexact``,
        ...).
    Returns:
      A bool.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.issubdtype(jnp.bfloat16, jnp.floating), jnp.issubdtype(jnp.int8, jnp.inexact)
      (True, False)
    """
    dtype = np.dtype(dtype)
    if dtype == bfloat16 or dtype in NARROW_FLOATS:
        return category in (np.floating, np.inexact, np.number, np.generic) or (
            isinstance(category, (np.dtype, type, str)) and _same_dtype(dtype, category)
        )
    if dtype in NARROW_INTS:
        kind = np.signedinteger if dtype in SIGNED else np.unsignedinteger
        return category in (kind, np.integer, np.number, np.generic) or (
            isinstance(category, (np.dtype, type, str)) and _same_dtype(dtype, category)
        )
    return np.issubdtype(dtype, category)


def _same_dtype(dtype, category):
    try:
        return np.dtype(category) == dtype
    except TypeError:
        return False


def finfo(dtype):
    """Machine limits of a floating dtype, bfloat16 included (``ml_dtypes.finfo``).

    For a complex dtype, the limits of its real parts (complex64 -> float32), as in JAX.

    Arguments:
        dtype: anything ``numpy.dtype`` accepts (a dtype, a type or a name).

    Returns:
        an object with ``eps``, ``max``, ``min``, ``tiny``, ``bits``, ... as ``numpy.finfo``'s.

    Example:
        >>> from functx import dtypes
        >>> float(dtypes.finfo('bfloat16').eps)
        0.0078125
    """
    return ml_dtypes.finfo(dtype)


def iinfo(dtype):
    """Machine limits of an integer dtype (``numpy.iinfo``; ``ml_dtypes.iinfo`` for int2, int4,
    uint2 and uint4).

    Arguments:
        dtype: anything ``numpy.dtype`` accepts (a dtype, a type or a name).

    Returns:
        a ``numpy.iinfo`` with ``min``, ``max`` and ``bits``.

    Example:
        >>> from functx import dtypes
        >>> int(dtypes.iinfo('int8').max), int(dtypes.iinfo('int4').min)
        (127, -8)
    """
    return ml_dtypes.iinfo(dtype)


# --- The promotion lattice -----------------------------------------------------------------------
# Nodes are dtypes plus the three weak kinds "i*" (Python int), "f*" (Python float) and "c*"
# (Python complex): bool < ints < floats < complex, as in JAX.
_I, _F, _C = "i*", "f*", "c*"
_EDGES = {
    bool_: [_I],
    _I: [uint8, int8, *NARROW_INTS],
    uint8: [uint16, int16],
    uint16: [uint32, int32],
    uint32: [uint64, int64],
    uint64: [_F],
    int8: [int16],
    int16: [int32],
    int32: [int64],
    int64: [_F],
    _F: [float16, bfloat16, *NARROW_FLOATS, _C],
    float16: [float32],
    bfloat16: [float32],
    float32: [float64, complex64],
    float64: [complex128],
    _C: [complex64],
    complex64: [complex128],
    complex128: [],
    # The narrow dtypes have no edge upwards: a weak Python scalar takes their type, anything
    # else raises TypePromotionError (as in JAX: no implicit promotion of narrow types).
    **{d: [] for d in NARROW},
}


def _upper_closure(node):
    seen, todo = {node}, [node]
    while todo:
        for m in _EDGES[todo.pop()]:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return frozenset(seen)


_UPPER = {n: _upper_closure(n) for n in _EDGES}


class TypePromotionError(FunctxValueError):
    """Two dtypes with no implicit promotion between them (a narrow dtype, such as int4 or
    float8_e4m3fn, with any other dtype but a weak Python scalar): JAX's
    ``jax.dtypes.TypePromotionError``, a ValueError.

    Example:
        >>> import functx.numpy as jnp
        >>> from functx import dtypes
        >>> try:
        ...     jnp.ones(2, jnp.int4) + jnp.ones(2, jnp.int8)
        ... except dtypes.TypePromotionError as e:
        ...     print(type(e).__name__, isinstance(e, ValueError))
        TypePromotionError True
    """


def _promotion_error(a, b):
    names = tuple(n if isinstance(n, str) else str(n) for n in (a, b))
    narrow = next((n for n in (a, b) if n in NARROW), None)
    kind = "integers" if narrow in NARROW_INTS else "floats"
    bits = {"float8": "8-bit", "float4": "4-bit", "int4": "4-bit", "int2": "2-bit"}
    width = next((w for k, w in bits.items() if k in str(narrow)), "narrow")
    raise TypePromotionError(
        f"Input dtypes {names} have no implicit promotion: {width} {kind} ({narrow}) promote "
        "only with weakly typed Python scalars. Convert explicitly, e.g. x.astype('float32')"
        + where()
    )


@functools.lru_cache(maxsize=None)
def _join(a, b):
    common = _UPPER[a] & _UPPER[b]
    # The least upper bound is the common node whose own upper set contains all the others.
    for n in common:
        if _UPPER[n] >= common:
            return n
    _promotion_error(a, b)  # only the narrow dtypes have no common upper bound


def _node(dtype, weak):
    if weak:
        if dtype in FLOATS:
            return _F
        if dtype in INTEGERS:
            return _I
        if dtype in COMPLEX:
            return _C
    return dtype


@functools.lru_cache(maxsize=None)
def _result_type_cached(pairs, x64):
    # (keyed on the x64 flag: its result is canonical for that mode)
    d, w = _lattice_result(pairs)
    return (d if x64 else TO_32BIT.get(d, d)), w


def _lattice_result(pairs):
    # JAX's rules (jax._src.dtypes.lattice_result_type), with the mode's default dtypes.
    if len(pairs) == 1:
        d, w = pairs[0]
        return d, w and d != bool_
    dts = {d for d, _ in pairs}
    all_weak = all(w for _, w in pairs)
    if len(dts) == 1 and not all_weak:
        return pairs[0][0], False
    if all_weak:
        # Only weak operands: join their dtypes as if strong, and stay weak (weak f16 + weak f16
        # is weak f16, not the default float).
        node = functools.reduce(_join, dts)
        if node == _F:  # uint64 with a signed int
            node = float64
        return node, node != bool_
    node = functools.reduce(_join, {_node(d, w) for d, w in pairs})
    if node == _F:
        # A Python float joined with integers gives the default float (int32 + 1.0 -> weak
        # float32); uint64 joined with int64 has no integer type and needs float64.
        strong = functools.reduce(_join, {d for d, w in pairs if not w})
        return (float64 if strong == _F else default_float()), True
    if node == _C:
        # A Python complex joined with integers or a weak float gives the default complex.
        strong = functools.reduce(_join, {d for d, w in pairs if not w})
        return (complex128 if strong == _F else default_complex()), True
    if node == _I:
        return default_int(), True
    return node, False


def result_type(*pairs) -> tuple[np.dtype, bool]:
    """Promote ``(dtype, weak_type)`` pairs with JAX's lattice; returns ``(dtype, weak_type)``.

    Arguments:
      *pairs: ``(dtype, weak_type)`` tuples (a weakly typed entry is a Python scalar's type).
    Returns:
      The ``(dtype, weak_type)`` of the result (weak when its kind comes from weakly typed
      inputs only: an int32 array and a Python float give a weak float32, as in JAX).

    Differences from JAX: ``jax.dtypes.result_type(*args, return_weak_type_flag=False)`` takes
    arrays, scalars and dtypes; functx's ``dtypes.result_type`` is the internal form on
    ``(dtype, weak_type)`` pairs that every operation calls. ``functx.numpy.result_type`` has
    JAX's signature.

    Example:
      >>> import numpy as np
      >>> from functx import dtypes
      >>> dtypes.result_type((np.dtype("int32"), False), (np.dtype("float32"), True))
      (dtype('float32'), True)
      >>> dtypes.result_type((np.dtype("int8"), False), (np.dtype("uint8"), False))
      (dtype('int16'), False)
    """
    for d, w in pairs:  # hot path: already (np.dtype, bool) pairs, the cache key as given
        if not isinstance(d, np.dtype) or w.__class__ is not bool:
            return _result_type_cached(
                tuple((np.dtype(d), bool(w)) for d, w in pairs), config.x64_on()
            )
    return _result_type_cached(pairs, config.x64_on())


def promote_types(a, b) -> np.dtype:
    """The dtype two (strongly typed) dtypes promote to (``jax.numpy.promote_types``), by JAX's
    promotion lattice (not NumPy's: ``int32`` with ``float16`` gives ``float16``).

    Arguments:
      a, b: dtypes or scalar types.
    Returns:
      A NumPy dtype.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.promote_types(jnp.int32, jnp.float16), jnp.promote_types(jnp.uint8, jnp.int8)
      (dtype('float16'), dtype('int16'))
    """
    return result_type((canonicalize(a), False), (canonicalize(b), False))[0]


def dtype_of_python_scalar(x) -> np.dtype:
    """The dtype a Python scalar takes (weakly typed): int32/float32, or int64/float64 while
    ``jax_enable_x64`` is on, as in JAX.

    Arguments:
        x: a Python ``bool``, ``int``, ``float`` or ``complex`` (or a NumPy bool).

    Returns:
        the default dtype for that kind of scalar.

    Example:
        >>> from functx import dtypes
        >>> dtypes.dtype_of_python_scalar(1), dtypes.dtype_of_python_scalar(1.0)
        (dtype('int32'), dtype('float32'))
        >>> dtypes.dtype_of_python_scalar(1j)
        dtype('complex64')
    """
    if isinstance(x, (bool, np.bool_)):
        return bool_
    if isinstance(x, int):
        return default_int()
    if isinstance(x, float):
        return default_float()
    if isinstance(x, complex):
        return default_complex()
    raise TypeError(f"not a Python scalar: {type(x).__name__}")
