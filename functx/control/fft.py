"""The ``fft`` primitive (``functx.lax.fft``), with all its rules.

One primitive with JAX's parameters: ``fft_type`` (an ``FftType``: FFT, IFFT, RFFT, IRFFT) and
``fft_lengths`` (the lengths of the trailing ``len(fft_lengths)`` axes it transforms):

* shape and dtype rules with JAX's errors (a ``ValueError`` for a dtype or shape the transform
  does not take); ``lax.fft`` converts its operand first as JAX does (complex for FFT, IFFT and
  IRFFT, a real inexact dtype for RFFT), so complex64 stays complex64 and float64 gives
  complex128;
* the eager implementation: ducc0's FFT where ducc0 is installed (``_entry_points``), else
  SciPy's pocketfft, writing into the result array; ``scipy.fft`` (or ``numpy.fft`` without
  SciPy: NumPy 2's single-precision complex transforms measured 15-30 times slower than SciPy's
  here) for the shapes those entry points do not take. Single precision stays single;
* JAX's jvp (the primitive is linear) and transpose rules: the transpose of FFT is FFT and of
  IFFT is IFFT (the DFT matrix is symmetric); RFFT's and IRFFT's transposes are an IRFFT and an
  RFFT with the mask that accounts for the spectrum's Hermitian redundancy, as JAX writes them;
* batching: the batch axis goes first and the primitive is bound again (it transforms trailing
  axes only);
* under ``jit``, a *library step* of the compiled program: a host step (the mechanism of the host
  callbacks, ``functx/control/callbacks.py``) that hands the step's buffers to the same
  library call. On the C++ backend the program calls it between kernels through its
  ``fx_host`` pointer; on the Triton backend the host code calls it between launches, and a
  runtime that passes the step its device tensors (``FftStep.torch``) gets cuFFT through
  ``torch.fft``. A library step rather than generated code: an FFT's cost is an O(n log n)
  library call that a ~10 us Python dispatch does not bound from a few thousand points up.
"""

from __future__ import annotations

import enum
import functools
import importlib
import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from functx import dtypes, ops, primitives as P
from functx.array import UncommittedArray
from functx.control.common import lower_to_loop
from functx.core import Primitive, ShapedArray
from functx.errors import FunctxTypeError, FunctxValueError
from functx.lowering.rules import lowerings
from functx.tracing import get_aval
from functx.transforms import jvp as J, transpose as T, vmap as V
from functx.transforms.jvp import Zero


class FftType(enum.IntEnum):
    """Which transform ``lax.fft`` computes (JAX's ``jax.lax.FftType``).

    ``lax.fft`` also takes the names as strings (``"FFT"``, ``"IFFT"``, ``"RFFT"``, ``"IRFFT"``).

    Example:
      >>> import functx, numpy as np
      >>> x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
      >>> functx.lax.fft(x, functx.lax.FftType.RFFT, (4,))
      Array([10.+0.j, -2.+2.j, -2.+0.j], dtype=complex64)
    """

    FFT = 0
    "Forward complex-to-complex FFT."
    IFFT = 1
    "Inverse complex-to-complex FFT."
    RFFT = 2
    "Forward real-to-complex FFT."
    IRFFT = 3
    "Inverse real-to-complex FFT."


_BY_NAME = {
    "fft": FftType.FFT,
    "ifft": FftType.IFFT,
    "rfft": FftType.RFFT,
    "irfft": FftType.IRFFT,
}


def fft_type_of(fft_type) -> FftType:
    """An ``FftType`` from a member or from its name ("fft" or "FFT", ...), with JAX's errors."""
    if isinstance(fft_type, str):
        t = _BY_NAME.get(fft_type.lower()) if fft_type in _BY_NAME or fft_type.isupper() else None
        if t is None:
            raise FunctxValueError(f"Unknown FFT type '{fft_type}'")
        return t
    if isinstance(fft_type, FftType):
        return fft_type
    raise FunctxTypeError(f"Unknown FFT type value '{fft_type}'")


def _complex_of(dt) -> np.dtype:
    return np.dtype(np.complex128 if np.dtype(dt) == np.float64 else np.complex64)


def _real_of(dt) -> np.dtype:
    return np.dtype(np.float64 if np.dtype(dt) == np.complex128 else np.float32)


def _is_complex(dt) -> bool:
    return np.dtype(dt) in dtypes.COMPLEX


# --- the primitive -------------------------------------------------------------------------------
fft_p = Primitive("fft", group="fft")
P.registry["fft"] = fft_p


def _fft_abstract(x, *, fft_type, fft_lengths):
    k = len(fft_lengths)
    if k > x.ndim:
        raise FunctxValueError(
            f"FFT input shape {x.shape} must have at least as many input dimensions as "
            f"fft_lengths {fft_lengths}."
        )
    minor = tuple(x.shape[x.ndim - k :])
    if fft_type == FftType.RFFT:
        if np.dtype(x.dtype) not in (np.float32, np.float64):
            raise FunctxValueError(
                f"RFFT input must be float32 or float64, got {np.dtype(x.dtype)}"
            )
        if minor != fft_lengths:
            raise FunctxValueError(
                f"RFFT input shape {x.shape} minor dimensions must be equal to fft_lengths "
                f"{fft_lengths}"
            )
        shape = x.shape[: x.ndim - k] + fft_lengths[:-1] + (fft_lengths[-1] // 2 + 1,)
        return ShapedArray(shape, _complex_of(x.dtype))
    if not _is_complex(x.dtype):
        name = "IRFFT" if fft_type == FftType.IRFFT else "FFT"
        raise FunctxValueError(
            f"{name} input must be complex64 or complex128, got {np.dtype(x.dtype)}"
        )
    if fft_type == FftType.IRFFT:
        if minor[:-1] != fft_lengths[:-1]:
            raise FunctxValueError(
                f"IRFFT input shape {x.shape} minor dimensions must be equal to all except the "
                f"last fft_length, got fft_lengths={fft_lengths!r}"
            )
        return ShapedArray(x.shape[: x.ndim - k] + fft_lengths, _real_of(x.dtype))
    if minor != fft_lengths:
        raise FunctxValueError(
            f"FFT input shape {x.shape} minor dimensions must be equal to fft_lengths {fft_lengths}"
        )
    return ShapedArray(x.shape, x.dtype)


def _complex_in(fft_type) -> bool:
    return fft_type != FftType.RFFT


def _lanes_avals(x, fft_type, fft_lengths):
    """For ``lanes=True``: the complex operand aval behind the real lanes ``x`` and the result
    aval (complex), where a complex value is stored as a trailing axis of 2 (real, imaginary)."""
    if _complex_in(fft_type):
        x = ShapedArray(x.shape[:-1], _complex_of(x.dtype))
    return x, _fft_abstract(x, fft_type=fft_type, fft_lengths=fft_lengths)


def _as_lanes(aval):
    if _is_complex(aval.dtype):
        return ShapedArray(aval.shape + (2,), _real_of(aval.dtype))
    return aval


def _abstract(x, *, fft_type, fft_lengths, lanes=False):
    if lanes:
        return _as_lanes(_lanes_avals(x, fft_type, fft_lengths)[1])
    return _fft_abstract(x, fft_type=fft_type, fft_lengths=fft_lengths)


fft_p.abstract_eval = _abstract

_pocketfft = []  # the module computing transforms: scipy.fft, or numpy.fft without SciPy


def _library():
    if not _pocketfft:
        try:  # (SciPy is optional; its single-precision transforms are the fast ones)
            import scipy.fft as lib
        except ImportError:  # pragma: no cover - SciPy is installed with the test extras
            lib = np.fft
        _pocketfft.append(lib)
    return _pocketfft[0]


def _entry_points():
    """The pocketfft entry points that write into an ``out`` array on a number of threads
    (``r2c``, ``c2r`` and ``c2c``): ducc0's (``ducc0.fft``, pocketfft's successor and the FFT of
    XLA's CPU backend) where ducc0 is installed, else SciPy's own copy of pocketfft
    (``pypocketfft``), else None. ducc0 vectorizes a batch of float32 rows 8 or 16 wide where
    SciPy's pocketfft does 4: an RFFT of 8 rows of 2^17 float32 points took 1.8-2.0 ms of CPU
    time against SciPy's 2.3-2.5 (Zen 4, one thread, loaded machine)."""
    if not _direct:
        for name in ("ducc0.fft", "scipy.fft._pocketfft.pypocketfft"):
            try:
                mod = importlib.import_module(name)
            except ImportError:
                continue
            if all(hasattr(mod, f) for f in ("r2c", "c2r", "c2c")):
                _direct.append(mod)
                break
        else:
            _direct.append(None)
    return _direct[0]


_direct = []  # the module of ``_entry_points``, or None


# Transforms of at least this many points in all, of at least two rows, run on two threads
# (``_transform_into``): the cores of this 2-core test machine
THREADS_MIN_POINTS = 1 << 18
THREADS = 2

# A batch of 1-D transforms is cut between rows that are multiples of this: ducc0 and pocketfft
# transform rows together in SIMD groups of 4, 8 or 16 and the rows left over one at a time, and
# a row's bits depend on which of the two it went through (a few ulp). Cut at a multiple of 4,
# each part's rows fall in the groups of the whole batch, so the parts give the whole batch's
# bits. (Not so for a transform over several axes, whose passes group the lines of each axis:
# those keep the library's own threads, which share out each pass's lines.)
ROW_GROUP = 4


def _row_cuts(rows, points):
    """Where ``_transform_into`` cuts a batch of ``rows`` rows (``points`` points in all) into
    parts for its threads: ``[0, ..., rows]``, one part where threads do not pay."""
    if points < THREADS_MIN_POINTS or rows <= ROW_GROUP:
        return [0, rows]
    cuts = [round(rows * i / THREADS / ROW_GROUP) * ROW_GROUP for i in range(THREADS)]
    return sorted(set(cuts)) + [rows]


def _transform_into(x, out, fft_type, fft_lengths) -> bool:
    """The transform of ``x`` written into ``out`` by pocketfft directly (no result array, no
    copy); False where its entry points are missing or the shapes are not theirs (an IRFFT
    operand whose last axis is not ``n // 2 + 1``: the eager path pads or cuts it; an empty
    operand, which pocketfft refuses: the eager path's zeros).

    A large batch of 1-D transforms is cut into parts by rows (``_row_cuts``), one part per
    thread: the calling thread and ``_pool``'s, each with the library on one thread. The
    libraries' own threads share out rows by whole SIMD groups only: ducc0 gave a batch of 8
    rows of 2^17 float32 points one thread (16 rows to a group on AVX-512), and the FFT
    convolution gradient's two such transforms ran on one core. One such RFFT: 1.8 ms on one
    thread, 1.1 ms wall (2.0 ms CPU) cut in two (Zen 4, load 2)."""
    pp = _entry_points()
    k = len(fft_lengths)
    if (
        pp is None
        or x.size == 0
        or out.dtype != _fft_abstract(x, fft_type=fft_type, fft_lengths=fft_lengths).dtype
    ):
        return False
    if fft_type == FftType.IRFFT and x.shape[-1] != fft_lengths[-1] // 2 + 1:
        return False
    rows = math.prod(x.shape[: x.ndim - k])
    cuts = _row_cuts(rows, x.size) if k == 1 and out.flags.c_contiguous else [0, rows]
    if len(cuts) > 2:  # (views: ``out`` is C-contiguous)
        x = x.reshape((rows, *x.shape[x.ndim - k :]))
        out = out.reshape((rows, *out.shape[out.ndim - k :]))
    axes = tuple(range(x.ndim - k, x.ndim))
    if fft_type == FftType.RFFT:
        call = functools.partial(pp.r2c, axes=axes, forward=True, inorm=0)
    elif fft_type == FftType.IRFFT:
        n = fft_lengths[-1]
        call = functools.partial(pp.c2r, axes=axes, lastsize=n, forward=False, inorm=2)
    else:
        fwd = fft_type == FftType.FFT
        call = functools.partial(pp.c2c, axes=axes, forward=fwd, inorm=0 if fwd else 2)
    if len(cuts) == 2:  # (the library's threads: they share out a multi-axis transform)
        threads = THREADS if rows > 1 and x.size >= THREADS_MIN_POINTS else 1
        call(x, out=out, nthreads=threads)
        return True
    parts = [(x[a:b], out[a:b]) for a, b in zip(cuts, cuts[1:])]
    rest = [_pool().submit(call, xp, out=op, nthreads=1) for xp, op in parts[1:]]
    try:
        call(parts[0][0], out=parts[0][1], nthreads=1)
    finally:  # (the other parts write into ``out``: done before the caller goes on)
        for f in rest:
            f.result()
    return True


_workers = []  # the thread pool of ``_transform_into``'s parts


def _pool():
    if not _workers:
        _workers.append(ThreadPoolExecutor(THREADS - 1, thread_name_prefix="functx-fft"))
    return _workers[0]


if hasattr(os, "register_at_fork"):  # (a forked child has none of its parent's threads)
    os.register_at_fork(after_in_child=_workers.clear)


def _fft_impl(x, *, fft_type, fft_lengths):
    out = _fft_abstract(ShapedArray(x.shape, x.dtype), fft_type=fft_type, fft_lengths=fft_lengths)
    k = len(fft_lengths)
    axes = tuple(range(x.ndim - k, x.ndim))
    if math.prod(out.shape) == 0 or math.prod(x.shape) == 0:
        return np.zeros(out.shape, out.dtype)  # (XLA's result; pocketfft refuses length 0)
    x = np.asarray(x)
    y = np.empty(out.shape, out.dtype)
    if _transform_into(x, y, fft_type, fft_lengths):
        return y
    lib = _library()
    if fft_type == FftType.FFT:
        y = lib.fftn(x, axes=axes)
    elif fft_type == FftType.IFFT:
        y = lib.ifftn(x, axes=axes)
    elif fft_type == FftType.RFFT:
        y = lib.rfftn(x, axes=axes)
    else:
        y = lib.irfftn(x, s=fft_lengths, axes=axes)
    return np.asarray(y, out.dtype).reshape(out.shape)


def _lanes_impl(x, *, fft_type, fft_lengths):
    """The transform on real lanes (complex values as a trailing axis of 2)."""
    x = np.asarray(x)
    if _complex_in(fft_type):
        x = np.ascontiguousarray(x).view(_complex_of(x.dtype))[..., 0]
    y = _fft_impl(x, fft_type=fft_type, fft_lengths=fft_lengths)
    return np.stack([y.real, y.imag], -1) if _is_complex(y.dtype) else y


def _impl(x, *, fft_type, fft_lengths, lanes=False):
    f = _lanes_impl if lanes else _fft_impl
    return f(x, fft_type=fft_type, fft_lengths=fft_lengths)


fft_p.impl = _impl


def on_lanes(x, fft_type, fft_lengths, pair=None):
    """The ``fft`` equation rewritten for a backend without complex values
    (``functx/lowering/complex_lanes.py``): ``x`` is the operand, a real array for RFFT and
    otherwise its real and imaginary parts (an object with ``re`` and ``im``); returns the
    result the same way, built with ``pair(re, im)`` when complex. One ``fft`` equation with
    ``lanes=True`` on the parts stacked along a new trailing axis."""
    if _complex_in(fft_type):
        re, im = x.re, x.im
        shape = tuple(get_aval(re).shape) + (1,)
        x = ops.concatenate([ops.reshape(re, shape), ops.reshape(im, shape)], len(shape) - 1)
    y = fft_p.bind(x, fft_type=FftType(fft_type), fft_lengths=tuple(fft_lengths), lanes=True)
    if fft_type == FftType.IRFFT:
        return y
    last = get_aval(y).ndim - 1
    parts = [ops.index_in_dim(y, i, last, keepdims=False) for i in (0, 1)]
    return pair(*parts)


def bind_fft(x, fft_type, fft_lengths):
    """``fft_p`` on ``x`` (no conversion: the operand's dtype must be the transform's)."""
    return fft_p.bind(x, fft_type=FftType(fft_type), fft_lengths=tuple(fft_lengths))


def fft(x, fft_type, fft_lengths):
    """The discrete Fourier transform over the trailing ``len(fft_lengths)`` axes (JAX's
    ``jax.lax.fft``).

    Arguments:
      x: the operand; converted first as JAX does: to a complex dtype for FFT, IFFT and IRFFT
        (float64 and int64 to complex128, the others to complex64), to a real inexact dtype for
        RFFT (a complex operand is a ValueError; float16 and bfloat16 are refused by the
        primitive, as in JAX).
      fft_type: an ``FftType`` or its name ("fft", "ifft", "rfft", "irfft", any case JAX takes).
      fft_lengths: the lengths of the transformed trailing axes (for IRFFT the last one is the
        length of the real result, the operand's last axis being ``n // 2 + 1``).
    Returns:
      The transform: complex of the operand's shape (FFT, IFFT), complex with the last axis
      ``n // 2 + 1`` long (RFFT), or real with the trailing axes ``fft_lengths`` (IRFFT). The
      inverse transforms are scaled by ``1 / prod(fft_lengths)``.

    Differences from JAX: computed with ducc0 where it is installed, else pocketfft (SciPy's, else
    NumPy's); JAX's CPU FFT is a ducc built into XLA, so values agree to rounding, not always bit
    for bit. Under ``jit`` it is a library step of the program
    (cuFFT through torch on the Triton backend). It also takes more than three axes (XLA refuses
    them).

    Example:
      >>> import numpy as np
      >>> import functx
      >>> print(functx.lax.fft(np.array([1.0, 2.0, 3.0, 4.0]), "rfft", (4,)))
      [10.+0.j -2.+2.j -2.+0.j]
    """
    typ = fft_type_of(fft_type)
    try:
        fft_lengths = tuple(int(n) for n in fft_lengths)
    except TypeError:
        raise FunctxTypeError(
            f"lax.fft: fft_lengths must be a sequence of ints, got {fft_lengths!r}"
        ) from None
    dt = np.dtype(get_aval(x).dtype)
    inexact = dt if dtypes.is_inexact(dt) else _to_inexact(dt)
    if typ == FftType.RFFT:
        if _is_complex(dt):
            raise FunctxValueError("only real valued inputs supported for rfft")
        new = inexact
    else:
        new = dt if _is_complex(dt) else _complex_of(inexact)
    x = ops.convert_element_type(x, new)
    if not fft_lengths:
        return x  # (nothing to transform; XLA takes no rank-0 FFT either)
    return bind_fft(x, typ, fft_lengths)


def _to_inexact(dt) -> np.dtype:
    """JAX's ``to_inexact_dtype``: 64-bit integers to float64, other integers and bool to
    float32 (then canonicalized: float64 is float32 with x64 off)."""
    if np.dtype(dt) in (np.int64, np.uint64):
        return dtypes.canonicalize(np.float64)
    return np.dtype(np.float32)


# --- derivatives ---------------------------------------------------------------------------------
J.defjvp_linear(fft_p)


def _hermitian_mask(m: int, n: int, dtype) -> np.ndarray:
    """The weights of a half spectrum of ``m`` entries of a length-``n`` real signal: 2 for the
    entries that stand for a conjugate pair, 1 for the zero frequency (and Nyquist's, ``n``
    even)."""
    mask = np.full(m, 2.0, dtype)
    mask[0] = 1.0
    if n % 2 == 0:
        mask[m - 1] = 1.0
    return mask


def _along_last(w: np.ndarray, shape):
    """The vector ``w`` broadcast along the last axis of ``shape`` (a constant that goes with the
    device of the cotangent, as an array built from scalars does)."""
    w = UncommittedArray.from_value(w)
    return ops.broadcast_in_dim(w, shape, (len(shape) - 1,))


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    if isinstance(ct, Zero):
        return [Zero(x.aval)]
    n = math.prod(fft_lengths)
    if fft_type == FftType.RFFT:
        # irfft of the conjugated cotangent, each doubled entry halved, times the length
        cdt = get_aval(ct).dtype
        w = _hermitian_mask(get_aval(ct).shape[-1], fft_lengths[-1], cdt)
        t = ops.mul(ops.conj(ct), _along_last((1 / w).astype(cdt), get_aval(ct).shape))
        out = bind_fft(t, FftType.IRFFT, fft_lengths)
        return [ops.mul(out, ops.full(get_aval(out).shape, n, get_aval(out).dtype))]
    if fft_type == FftType.IRFFT:
        y = bind_fft(ct, FftType.RFFT, fft_lengths)
        cdt = get_aval(y).dtype
        w = _hermitian_mask(get_aval(y).shape[-1], fft_lengths[-1], cdt) / np.asarray(n, cdt)
        return [ops.conj(ops.mul(y, _along_last(w.astype(cdt), get_aval(y).shape)))]
    return [bind_fft(ct, fft_type, fft_lengths)]


T.transpose_rules[fft_p] = _fft_transpose


# --- batching ------------------------------------------------------------------------------------
def _fft_batch(args, dims, *, fft_type, fft_lengths):
    (x,), (d,) = args, dims
    return bind_fft(V.moveaxis(x, d, 0), fft_type, fft_lengths), 0


V.batching_rules[fft_p] = _fft_batch


# --- jit: a library step of the compiled program -------------------------------------------------
class FftStep:
    """The host step of an ``fft`` equation under ``jit``: pocketfft on the step's operand buffer
    (``__call__``, NumPy arrays in, a list of results out) or cuFFT on device tensors
    (``torch``). Prints with its address, as the callbacks' ``HostFn`` does."""

    __slots__ = ("fft_type", "fft_lengths", "in_aval", "out_aval", "__weakref__")
    # ``torch`` only queues device work on the current stream (cuFFT plans come from torch's
    # plan cache, filled by the program's first, uncaptured run), so a CUDA graph may record it
    graph_safe = True

    def __init__(self, fft_type, fft_lengths, in_aval, out_aval):
        self.fft_type = FftType(fft_type)
        self.fft_lengths = tuple(fft_lengths)
        self.in_aval = in_aval
        self.out_aval = out_aval

    def __repr__(self):
        return f"<fft {self.fft_type.name} {self.fft_lengths} at 0x{id(self):x}>"

    def __call__(self, x):
        return [_fft_impl(x, fft_type=self.fft_type, fft_lengths=self.fft_lengths)]

    def into(self, ins, outs):
        """The step on views of the program's buffers (``runtime.HostDispatch``): pocketfft
        reads the operand in place and writes the result into its buffer. Before, the host
        step copied the operand, pocketfft allocated the result and the step copied it into the
        buffer: 3.4 against 2.2 ms of CPU time for an RFFT of 8 rows of 2^17 points (the
        FFT convolution gradient's, ``benchmarks/fft_conv.py``; loaded 2-core machine)."""
        x, out = self._views(ins[0], outs[0])
        if out.size and not _transform_into(x, out, self.fft_type, self.fft_lengths):
            out[...] = _fft_impl(x, fft_type=self.fft_type, fft_lengths=self.fft_lengths)

    def _views(self, x, out):
        return x, out

    def torch(self, ins, outs):
        """The step on torch tensors (the Triton runtime's buffers, flat): ``torch.fft`` (cuFFT
        on a GPU) from ``ins[0]`` into ``outs[0]``. A complex buffer may come as a complex
        tensor or as its interleaved real and imaginary parts (a real tensor twice as long)."""
        import torch  # (optional dependency: only a Triton program calls this)

        x = _torch_view(torch, ins[0], self.in_aval)
        k = len(self.fft_lengths)
        dims = tuple(range(x.ndim - k, x.ndim))
        if math.prod(self.out_aval.shape) == 0 or x.numel() == 0:
            dt = _torch_dtype(torch, self.out_aval.dtype)
            y = torch.zeros(self.out_aval.shape, dtype=dt, device=x.device)
        elif self.fft_type == FftType.FFT:
            y = torch.fft.fftn(x, dim=dims)
        elif self.fft_type == FftType.IFFT:
            y = torch.fft.ifftn(x, dim=dims)
        elif self.fft_type == FftType.RFFT:
            y = torch.fft.rfftn(x, dim=dims)
        else:
            # cuFFT's multi-axis C2R assumes Hermitian symmetry on every axis; pocketfft's
            # (and XLA's) only on the last: inverse complex transforms first, then a 1-D C2R
            if k > 1:
                x = torch.fft.ifftn(x, dim=dims[:-1])
            y = torch.fft.irfft(x, n=self.fft_lengths[-1], dim=-1)
        out = outs[0]
        if out.is_complex() or not y.is_complex():
            out.copy_(y.reshape(-1))
        else:
            out.copy_(torch.view_as_real(y.contiguous()).reshape(-1))


class LanesStep(FftStep):
    """The host step of an ``fft`` equation on real lanes (``lanes=True``): NumPy arrays of the
    lanes in and out; ``torch`` (inherited) reads the real device buffers as complex ones."""

    __slots__ = ()

    def __call__(self, x):
        return [_lanes_impl(x, fft_type=self.fft_type, fft_lengths=self.fft_lengths)]

    def _views(self, x, out):  # (complex values as their pairs of lanes, read as complex)
        if _is_complex(self.in_aval.dtype):
            x = x.view(self.in_aval.dtype).reshape(self.in_aval.shape)
        if _is_complex(self.out_aval.dtype):
            out = out.view(self.out_aval.dtype).reshape(self.out_aval.shape)
        return x, out


def _torch_dtype(torch, dt):
    return getattr(torch, np.dtype(dt).name)


def _torch_view(torch, t, aval):
    if _is_complex(aval.dtype) and not t.is_complex():
        return torch.view_as_complex(t.reshape(*aval.shape, 2).contiguous())
    return t.reshape(aval.shape)


def _fft_lowering(g, ins, avals, *, fft_type, fft_lengths, lanes=False):
    in_avals = [ShapedArray(n.shape, n.dtype) for n in ins]
    if lanes:  # (the step's own avals are the complex ones: torch reads the lanes as complex)
        step = LanesStep(fft_type, fft_lengths, *_lanes_avals(in_avals[0], fft_type, fft_lengths))
    else:
        step = FftStep(fft_type, fft_lengths, in_avals[0], avals[0])
    return lower_to_loop(
        g, ins, list(avals), "host", callback=step, in_avals=in_avals, n_out=len(avals)
    )


lowerings[fft_p] = _fft_lowering


__all__ = ["FftStep", "FftType", "LanesStep", "fft", "fft_p", "fft_type_of", "on_lanes"]
