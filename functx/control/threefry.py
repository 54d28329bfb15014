"""The ``threefry2x32`` primitive: the Threefry-2x32 block cipher (20 rounds), the hash under
``functx.random``, with all its rules.

``threefry2x32(k1, k2, x1, x2) -> (y1, y2)`` encrypts the counter pairs ``(x1, x2)`` under the key
``(k1, k2)``; all four operands are ``uint32``, of one shape or rank 0 (broadcast), and so are the
two results. It is JAX's ``threefry2x32_p`` (Salmon et al., "Parallel random numbers: as easy as
1, 2, 3", SC 2011), bit for bit.

* shape inference and the eager implementation (NumPy ``uint32`` arithmetic, which wraps);
* jvp: none (integer outputs: ``jvp`` gives them float0 tangents);
* vmap: elementwise (batched operands move their batch axis to the front, unbatched ones of full
  rank are broadcast, rank-0 ones stay scalars);
* lowering: the rounds written with the integer ops of ``functx.ops`` (add, xor, or, and
  rotations as a multiplication and a division by powers of two, which C and Triton compile to
  shifts) are traced once per operand shape into a Jaxpr and inlined into the loop IR, so the whole
  hash fuses into the kernel that consumes its bits.
"""

from __future__ import annotations

import numpy as np

from functx import dtypes, ops, primitives as P
from functx.core import Primitive, ShapedArray
from functx.errors import FunctxTypeError
from functx.lowering.rules import lowerings
from functx.tracing import trace_flat
from functx.transforms import jvp as J, vmap as V

threefry2x32_p = Primitive("threefry2x32", multiple_results=True, group="random")
P.registry["threefry2x32"] = threefry2x32_p

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
PARITY = 0x1BD11BDA  # the key schedule's constant (Threefish's C240)


def _out_shape(shapes):
    full = [s for s in shapes if s != ()]
    for s in full[1:]:
        if s != full[0]:
            raise FunctxTypeError(
                "threefry2x32: operands must have equal shapes (or be scalars), got "
                + ", ".join(str(s) for s in shapes)
            )
    return full[0] if full else ()


def _abstract_eval(k1, k2, x1, x2):
    avals = (k1, k2, x1, x2)
    if any(a.dtype != dtypes.uint32 for a in avals):
        raise FunctxTypeError(
            "Arguments to threefry2x32 must have uint32 type, got "
            + ", ".join(a.str_short() for a in avals)
        )
    shape = _out_shape([a.shape for a in avals])
    return [ShapedArray(shape, dtypes.uint32)] * 2


threefry2x32_p.abstract_eval = _abstract_eval


# --- the rounds, written once for NumPy arrays and for op builders ----------------------------
class _NumpyOps:
    """uint32 NumPy arithmetic (wrapping), with the spelling of ``functx.ops``."""

    add = staticmethod(np.add)
    bitwise_xor = staticmethod(np.bitwise_xor)
    bitwise_or = staticmethod(np.bitwise_or)

    @staticmethod
    def rotl(x, d):
        return (x << np.uint32(d)) | (x >> np.uint32(32 - d))

    @staticmethod
    def const(v, like):
        return np.uint32(v)


class _TracedOps:
    """The same through ``functx.ops`` (used to build the Jaxpr the lowering inlines)."""

    add = staticmethod(ops.add)
    bitwise_xor = staticmethod(ops.bitwise_xor)
    bitwise_or = staticmethod(ops.bitwise_or)

    @staticmethod
    def rotl(x, d):
        # x << d is x * 2**d and x >> (32 - d) is x // 2**(32 - d) in uint32 arithmetic
        return ops.bitwise_or(ops.mul(x, 1 << d), ops.div(x, 1 << (32 - d)))

    @staticmethod
    def const(v, like):
        return ops.full((), v, dtypes.uint32)


def _rounds(o, k1, k2, x1, x2):
    """Threefry-2x32 with 20 rounds: five groups of four, a key injection after each group."""
    ks = (k1, k2, o.bitwise_xor(o.bitwise_xor(k1, k2), o.const(PARITY, k1)))
    x1 = o.add(x1, ks[0])
    x2 = o.add(x2, ks[1])
    for i in range(5):
        for r in ROTATIONS[i % 2]:
            x1 = o.add(x1, x2)
            x2 = o.bitwise_xor(x1, o.rotl(x2, r))
        x1 = o.add(x1, ks[(i + 1) % 3])
        x2 = o.add(o.add(x2, ks[(i + 2) % 3]), o.const(i + 1, k1))
    return x1, x2


def _impl(k1, k2, x1, x2):
    args = [np.asarray(a, np.uint32) for a in (k1, k2, x1, x2)]
    shape = _out_shape([a.shape for a in args])
    args = [np.broadcast_to(a, shape).astype(np.uint32) for a in args]  # arrays: they wrap
    with np.errstate(over="ignore"):
        y1, y2 = _rounds(_NumpyOps, *args)
    return [np.asarray(y1, np.uint32), np.asarray(y2, np.uint32)]


threefry2x32_p.impl = _impl

# --- jvp: integer outputs have no derivative ---------------------------------------------------
J.nondifferentiable.add(threefry2x32_p)


# --- vmap: elementwise ---------------------------------------------------------------------------
def _batch(args, dims):
    size = V.axis_size_of(args, dims)
    ranks = [np.ndim(a) - (d is not None) for a, d in zip(args, dims)]
    r = max(ranks)
    per_example = next(
        tuple(s for i, s in enumerate(np.shape(a)) if i != d)
        for a, d, k in zip(args, dims, ranks)
        if k == r
    )
    full = (size, *per_example)
    new = []
    for a, d, k in zip(args, dims, ranks):
        if d is None:
            new.append(a if k == 0 else ops.broadcast_in_dim(a, full, tuple(range(1, r + 1))))
        elif k == r:
            new.append(V.moveaxis(a, d, 0))
        else:  # a batched per-example scalar among full-rank operands
            new.append(ops.broadcast_in_dim(a, full, (0,)))
    return threefry2x32_p.bind(*new), [0, 0]


V.batching_rules[threefry2x32_p] = _batch

# --- lowering: the rounds' Jaxpr, inlined ---------------------------------------------------------
_jaxprs: dict = {}  # operand shapes -> the ClosedJaxpr of the rounds


def _rounds_jaxpr(shapes):
    closed = _jaxprs.get(shapes)
    if closed is None:
        avals = [ShapedArray(s, dtypes.uint32) for s in shapes]
        closed, _ = trace_flat(lambda *a: (list(_rounds(_TracedOps, *a)), None), avals)
        _jaxprs[shapes] = closed
    return closed


def _lowering(g, ins, avals):
    # imported here, when jit lowers: the loop IR (0.1 s of import), which `import functx` must not
    from functx.lowering import lower

    return lower.inline_jaxpr(g, _rounds_jaxpr(tuple(n.shape for n in ins)), ins)


lowerings[threefry2x32_p] = _lowering


def threefry2x32(k1, k2, x1, x2):
    """Bind ``threefry2x32``: the Threefry-2x32 hash of the counters ``(x1, x2)`` under the key
    ``(k1, k2)`` (uint32 arrays of one shape, or scalars).

    Arguments:
        k1, k2: the two uint32 words of the key.
        x1, x2: the two uint32 words of the counters.

    Returns:
        The pair ``(y1, y2)`` of uint32 arrays.

    Example:
        >>> import numpy as np
        >>> from functx.control.threefry import threefry2x32
        >>> y1, y2 = threefry2x32(np.uint32(0), np.uint32(0), np.uint32(0), np.uint32(0))
        >>> print(y1, y2)
        1797259609 2579123966
    """
    y1, y2 = threefry2x32_p.bind(k1, k2, x1, x2)
    return y1, y2


__all__ = ["threefry2x32", "threefry2x32_p"]
