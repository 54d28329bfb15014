"""``einsum``: subscripts parsed here, contracted pairwise (left to right) with dot_general.

Indices repeated inside one operand take its diagonal; indices found in one operand only and not in
the output are summed first; each pairwise step contracts the indices no later operand or the
output needs and batches the ones they do.
"""

from __future__ import annotations

from functx import dtypes, ops
from functx.errors import FunctxArgumentError, FunctxTypeError, FunctxValueError
from functx.numpy import _core as jnp
from functx.source_info import where
from functx.tracing import get_aval


def _parse(subscripts: str, ndims):
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        ins, out = subscripts.split("->")
        explicit = True
    else:
        ins, out, explicit = subscripts, None, False
    terms = ins.split(",")
    if len(terms) != len(ndims):
        raise FunctxValueError(
            f"einsum: {len(terms)} subscript terms for {len(ndims)} operands{where()}"
        )
    used = set(c for c in subscripts if c.isalpha())
    free = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    n_ell = (
        max((nd - (len(t) - 3) if "..." in t else 0) for t, nd in zip(terms, ndims))
        if any("..." in t for t in terms)
        else 0
    )
    ell = "".join(free[:n_ell])
    parsed = []
    for t, nd in zip(terms, ndims):
        if "..." in t:
            k = nd - (len(t) - 3)
            t = t.replace("...", ell[n_ell - k :] if k else "")
        if len(t) != nd:
            raise FunctxValueError(
                f"einsum: term {t!r} has {len(t)} indices for an operand of rank {nd}{where()}"
            )
        parsed.append(t)
    if explicit:
        out = out.replace("...", ell)
    else:
        counts = {}
        for t in parsed:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    return parsed, out


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _interleaved(args):
    """``einsum(x, [0, 1], y, [1, 2], [0, 2])`` (the interleaved form) as a subscripts string and
    the operands. Labels are ``...`` or hashable, comparable values (integers, strings); they
    become letters in their sorted order, so an implicit output is ordered as JAX orders it."""
    has_out = len(args) % 2 == 1
    operands = list(args[0 : len(args) - has_out : 2])
    sublists = list(args[1::2]) + ([args[-1]] if has_out else [])
    if len(sublists) > len(operands) + has_out:
        sublists = sublists[: len(operands) + has_out]
    for sub in sublists:
        if isinstance(sub, str) or not hasattr(sub, "__iter__"):
            raise FunctxTypeError(
                f"einsum: in the interleaved form each operand is followed by a list of axis "
                f"labels (integers, strings or ...), got {sub!r}{where()}"
            )
    sublists = [list(sub) for sub in sublists]
    try:
        labels = sorted({s for sub in sublists for s in sub if s is not Ellipsis})
    except TypeError as e:
        raise FunctxTypeError(
            f"einsum: the interleaved form's axis labels must be comparable: {e}{where()}"
        ) from None
    if len(labels) > len(_LETTERS):
        raise FunctxArgumentError(
            f"einsum: {len(labels)} distinct axis labels, at most {len(_LETTERS)}{where()}"
        )
    letter = dict(zip(labels, _LETTERS))
    terms = ["".join("..." if s is Ellipsis else letter[s] for s in sub) for sub in sublists]
    subscripts = ",".join(terms[: len(operands)])
    if has_out:
        subscripts += "->" + terms[-1]
    return subscripts, operands


def _diagonal(x, term):
    """Take the diagonal over indices repeated in one term."""
    while True:
        dup = next((c for c in term if term.count(c) > 1), None)
        if dup is None:
            return x, term
        i = term.index(dup)
        j = term.index(dup, i + 1)
        n = get_aval(x).shape[i]
        x = jnp.moveaxis(x, (i, j), (-2, -1))
        eye = jnp.eye(n, dtype=dtypes.bool_)
        x = _sum(jnp.where(eye, x, jnp.zeros((), get_aval(x).dtype)), (-1,))
        term = term[:i] + term[i + 1 : j] + term[j + 1 :] + dup


def _sum(x, axes):
    """Sum in the operand's own dtype, as a contraction does (bools: logical or, like JAX)."""
    return jnp.sum(x, axis=tuple(axes), dtype=get_aval(x).dtype)


def einsum(subscripts, *operands, optimize=None, precision=None, preferred_element_type=None):
    """Einstein summation (``jax.numpy.einsum``).

    functx ignores ``optimize``: operands are contracted left to right.

    Arguments:
      subscripts: the subscripts string (``"ij,jk->ik"``; ``...`` and implicit output work),
        or the first operand of the interleaved form ``einsum(x, [0, 1], y, [1, 2], [0, 2])``
        (each operand followed by its axis labels, integers or ``...``; an optional last list
        names the output's).
      *operands: the arrays, one per comma-separated term (in the interleaved form, the
        operands and label lists after the first operand).
      optimize: accepted for JAX's signature, ignored.
      precision: None, a ``functx.lax.Precision`` or its string, for the products.
      preferred_element_type: the result's dtype (default: the operands' promoted dtype).
    Returns:
      An Array.
    Example:
      >>> import functx.numpy as jnp
      >>> a = jnp.arange(6.0).reshape(2, 3)
      >>> jnp.einsum("ij,ij->i", a, a)
      Array([ 5., 50.], dtype=float32)
      >>> jnp.einsum("ij->ji", a).shape
      (3, 2)
      >>> jnp.einsum(a, [0, 1], a, [0, 1], [0])
      Array([ 5., 50.], dtype=float32)
    """
    if not isinstance(subscripts, str):
        subscripts, operands = _interleaved((subscripts, *operands))
    arrs = [jnp.asarray(o) for o in operands]
    arrs = jnp._promote_only(*arrs) if len(arrs) > 1 else arrs
    terms, out = _parse(subscripts, [get_aval(o).ndim for o in arrs])
    sizes = {}
    for t, o in zip(terms, arrs):
        for c, n in zip(t, get_aval(o).shape):
            if sizes.setdefault(c, n) != n and n != 1 and sizes[c] != 1:
                raise FunctxArgumentError(
                    f"einsum: index {c!r} has sizes {sizes[c]} and {n}{where()}"
                )
            sizes[c] = max(sizes[c], n)
    for c in out:
        if c not in sizes:
            raise FunctxValueError(f"einsum: output index {c!r} is in no input{where()}")

    pending = []
    for t, o in zip(terms, arrs):
        o, t = _diagonal(o, t)
        # broadcast size-1 dimensions to the common size
        shape = tuple(sizes[c] for c in t)
        if get_aval(o).shape != shape:
            o = jnp.broadcast_to(o, shape)
        pending.append((o, t))

    def needed_later(k):
        s = set(out)
        for _, t in pending[k:]:
            s |= set(t)
        return s

    # Sum indices that appear in one operand only and are not needed elsewhere.
    for k, (o, t) in enumerate(pending):
        others = set(out)
        for m, (_, t2) in enumerate(pending):
            if m != k:
                others |= set(t2)
        axes = tuple(i for i, c in enumerate(t) if c not in others)
        if axes:
            o = _sum(o, axes)
            t = "".join(c for c in t if c not in [t[i] for i in axes])
        pending[k] = (o, t)

    acc, at = pending[0]
    for k in range(1, len(pending)):
        o, t = pending[k]
        later = needed_later(k + 1)
        common = [c for c in at if c in t]
        batch = [c for c in common if c in later]
        contract = [c for c in common if c not in later]
        dn = (
            ([at.index(c) for c in contract], [t.index(c) for c in contract]),
            ([at.index(c) for c in batch], [t.index(c) for c in batch]),
        )
        acc = ops.dot_general(
            acc, o, dn, precision=precision, preferred_element_type=preferred_element_type
        )
        at = (
            "".join(batch)
            + "".join(c for c in at if c not in common)
            + "".join(c for c in t if c not in common)
        )
    # Sum what the output does not keep, then order the axes like the output.
    axes = tuple(i for i, c in enumerate(at) if c not in out)
    if axes:
        acc = _sum(acc, axes)
        at = "".join(c for c in at if c in out)
    acc = ops.transpose(acc, tuple(at.index(c) for c in out))
    if preferred_element_type is not None:
        acc = jnp.astype(acc, preferred_element_type)
    return acc
