"""Jaxpr -> Jaxpr: per-example outer products that are only reduced are never formed.

What it rewrites. Per-example gradients of a dense layer (``vmap(grad(loss))``, as DP-SGD
computes them) are outer products: example ``b``'s weight gradient is ``v[b] = a[b] (x) d[b]``,
the layer's input ``a[b]`` times the output cotangent ``d[b]``. The traced program forms them as
a ``dot_general`` with a batch dimension whose contracting dimensions all have size 1 (or none),
a ``(B, n, m)`` array, and DP-SGD then only reads it twice: each example's squared norm and the
clip-scale-weighted sum over the examples. Both are cheap from the two factors:

* squared norm: ``sum_{l,r} (a[b,l] d[b,r])**2 == (sum_l a[b,l]**2) * (sum_r d[b,r]**2)``;
* weighted sum: ``sum_b s[b] a[b,l] d[b,r] == ((a * s[:, None]).T @ d)[l, r]``, one product.

The pass finds each such ``dot_general`` (batch dimensions, every contracting dimension of size
1; under an outer ``vmap`` there are several batch dimensions, the examples' and the groups'),
and each ``mul`` of two same-rank broadcasts whose axes are full in both (the leading batch
axes) or in one only (``a[:, :, None] * d[:, None, :]``), follows its value through layout-only
equations that keep the batch axes leading (``transpose``;
``reshape``/``squeeze``/``expand_dims``; a ``convert_element_type`` between real float types)
and rewrites it only when EVERY reader is one of:

* a squared-norm reduction: ``integer_pow[y=2] v`` (or ``mul v v``) read only by a
  ``reduce_sum`` over all axes but the batch axes, giving one number per example;
* a contraction of one batch axis with an array ``s`` shaped like the batch axes:
  ``dot_general`` contracting that axis of both (either operand order), the other batch axes
  kept as its batch dimensions (``tensordot(s, v, 1)``, or the same under ``vmap``).

Each reader is then replaced by the factored form (computed from the factors without their
size-1 axes, converted first to the reader's dtype, followed by the same layout equations
without the batch axis; a leading transpose that puts the second factor's axes first is done by
taking the factors in the other order), and DCE drops the outer product. If any reader is
something else (the value is a program output, an elementwise op reads it, a ``dot_general``
contracts a non-batch axis, ...) it is left alone.

Why it is exact up to rounding: both identities above hold in exact arithmetic for any values;
only the order and number of roundings change (a factored norm rounds two sums and one product
instead of ``B*n*m`` products and one long sum; the weighted sum rounds the scaled factor before
the product instead of each outer-product element). Where the factors' own squares overflow or
underflow, or an infinite element meets a zero one, the results can differ: in float32
``(1e30 * 1e-30)**2`` is 1, but ``1e30**2 * 1e-30**2`` is ``inf * 0``, NaN; ``inf * 0`` is NaN
in the outer product, while the factored norm multiplies an infinite sum by a nonzero one.
``functx.jit`` runs it on the top-level Jaxpr of both backends (C++ and Triton); control flow
bodies are left as they are.
"""

from __future__ import annotations

import numpy as np

from functx import dtypes, primitives as P
from functx.core import ClosedJaxpr, Eqn, Jaxpr, Literal, Var
from functx.transforms import passes

# Equations that only move or retype the elements of a value (the batch axis is followed through).
_RESHAPES = (P.reshape_p, P.squeeze_p, P.expand_dims_p)


def _is_real_float(dt) -> bool:
    return dtypes.is_inexact(dt) and np.dtype(dt).kind != "c"


# --- 1. Finding outer products -------------------------------------------------------------------
class _Outer:
    """A per-example outer product: its two factors (each with its batch axes and its size-1
    axes, which the factored forms drop), and the layout steps from the product of the factors
    without those axes, ``(batch..., lhs axes..., rhs axes...)``, to the value's layout."""

    def __init__(self, e: Eqn, defs, lhs, rhs, steps=()):
        self.eqn = e
        self.lhs, self.lb, self.lc = _unreshaped(*lhs, defs)
        self.rhs, self.rb, self.rc = _unreshaped(*rhs, defs)
        self.steps = steps


def _unreshaped(x, batch, contract, defs):
    """``x``'s factor as ``(value, batch axes, size-1 contracting axes)``: the value ``x`` was
    reshaped from when that is ``x`` without its contracting axes (``expand_dims`` of a per-example
    vector, as ``vmap(grad)`` makes), so that the products below read it without a copy."""
    d = defs.get(x.id)
    if contract and d is not None and d.prim in _RESHAPES:
        keep = [a for a in range(x.aval.ndim) if a not in contract]
        src = d.invars[0]
        if type(src) is Var and tuple(src.aval.shape) == tuple(x.aval.shape[a] for a in keep):
            return src, tuple(keep.index(a) for a in batch), ()
    return x, batch, contract


def _outer_product(e: Eqn, defs) -> _Outer | None:
    """``e`` as an outer product, or None: a ``dot_general`` of real floats with batch
    dimensions (in increasing order on both sides) whose contracting dimensions (if any) all
    have size 1; or a ``mul`` of two broadcasts (``a[:, :, None] * d[:, None, :]``)."""
    if e.prim is P.mul_p:
        return _broadcast_product(e, defs)
    if e.prim is not P.dot_general_p or any(type(a) is Literal for a in e.invars):
        return None
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    lhs = e.invars[0].aval
    if not lb or any(lhs.shape[i] != 1 for i in lc):
        return None
    if list(lb) != sorted(lb) or list(rb) != sorted(rb):
        return None
    if not all(_is_real_float(a.aval.dtype) for a in (*e.invars, e.outvars[0])):
        return None
    lhs, rhs = (e.invars[0], tuple(lb), tuple(lc)), (e.invars[1], tuple(rb), tuple(rc))
    return _Outer(e, defs, lhs, rhs)


def _broadcast_product(e: Eqn, defs) -> _Outer | None:
    """``mul`` of two same-rank ``broadcast_in_dim``s where every axis is full in both (a batch
    axis: these lead) or in one only (an axis of that factor)."""
    out = e.outvars[0].aval
    srcs = []
    for a in e.invars:
        d = defs.get(a.id) if type(a) is Var else None
        if d is None or d.prim is not P.broadcast_in_dim_p or type(d.invars[0]) is not Var:
            return None
        x = d.invars[0]
        if x.aval.ndim != out.ndim or tuple(d.params["broadcast_dimensions"]) != tuple(
            range(out.ndim)
        ):
            return None
        srcs.append(x)
    if not _is_real_float(out.dtype) or any(x.aval.dtype != out.dtype for x in srcs):
        return None
    (x, y), n = srcs, out.shape
    owner = []
    for i in range(out.ndim):
        full = (x.aval.shape[i] == n[i], y.aval.shape[i] == n[i])
        if not any(full):
            return None
        owner.append("b" if all(full) else "l" if full[0] else "r")
    k = owner.count("b")
    if not k or owner[:k] != ["b"] * k:
        return None
    lhs_axes = [i for i in range(k, out.ndim) if owner[i] == "l"]
    rhs_axes = [i for i in range(k, out.ndim) if owner[i] == "r"]
    # the factors' product has the lhs axes, then the rhs axes: value axis k + p is its axis
    # perm[p]
    order = lhs_axes + rhs_axes
    perm = tuple(order.index(k + p) for p in range(len(order)))
    steps = () if perm == tuple(range(len(perm))) else (("transpose", perm),)
    batch = tuple(range(k))
    return _Outer(e, defs, (x, batch, tuple(rhs_axes)), (y, batch, tuple(lhs_axes)), steps)


# --- 2. Following its value to the readers -------------------------------------------------------
class _View:
    """A value derived from the outer product by layout-only equations that keep its ``k`` batch
    axes leading (as the ``dot_general`` puts them), and those equations' counterparts on the
    other axes (``("transpose", perm)``, ``("reshape", shape)``): they turn the outer product's
    per-example layout into this value's."""

    def __init__(self, var, k: int, steps: tuple):
        self.var, self.k, self.steps = var, k, steps


def _follow_layout(e: Eqn, view: _View) -> _View | None:
    """The view of ``e``'s output when ``e`` is a layout-only equation on ``view.var`` that
    keeps the batch axes leading."""
    out, k = e.outvars[0], view.k
    if e.prim is P.transpose_p:
        perm = tuple(e.params["permutation"])
        if perm[:k] != tuple(range(k)):
            return None
        return _View(out, k, (*view.steps, ("transpose", tuple(p - k for p in perm[k:]))))
    if e.prim in _RESHAPES:
        # (a row-major reshape of (batch, rest) to (batch, rest') keeps each example's elements
        # together)
        shape, new = view.var.aval.shape, out.aval.shape
        if len(new) < k or tuple(new[:k]) != tuple(shape[:k]):
            return None
        return _View(out, k, (*view.steps, ("reshape", tuple(new[k:]))))
    if e.prim is P.convert_element_type_p and _is_real_float(out.aval.dtype):
        return _View(out, k, view.steps)  # (the factors are converted instead)
    return None


def _readers(view: _View, uses, outputs, found) -> bool:
    """Collect into ``found`` the readers of ``view.var`` and of every view derived from it,
    as ``(eqn index, kind, view, extra)``; False when some reader is not one the pass rewrites."""
    v = view.var
    if v.id in outputs:
        return False
    for i in sorted(uses.get(v.id, ())):
        e = uses[v.id][i]
        if e.prim in (P.transpose_p, P.convert_element_type_p, *_RESHAPES):
            nxt = _follow_layout(e, view)
            if nxt is None or not _readers(nxt, uses, outputs, found):
                return False
        elif _is_square(e, v):
            sq = e.outvars[0]
            readers = uses.get(sq.id, {})
            if sq.id in outputs or len(readers) != 1:
                return False
            ((j, r),) = readers.items()
            axes = tuple(range(view.k, v.aval.ndim))
            if r.prim is not P.reduce_sum_p or tuple(sorted(r.params["axes"])) != axes:
                return False
            found.append((j, "norm", view, None))
        elif (hit := _batch_vector(e, view)) is not None:
            found.append((i, "weighted", view, hit))
        else:
            return False
    return True


def _is_square(e: Eqn, v) -> bool:
    if e.prim is P.integer_pow_p:
        return e.params["y"] == 2
    return e.prim is P.mul_p and all(type(a) is Var and a.id == v.id for a in e.invars)


def _batch_vector(e: Eqn, view: _View):
    """``(s, j)`` when ``e`` is a ``dot_general`` of ``view.var`` (either operand order) with
    ``s``, shaped like its batch axes, contracting their batch axis ``j`` and keeping the others
    as batch dimensions in order (the clip-weighted sum over examples); else None."""
    if e.prim is not P.dot_general_p:
        return None
    (lc, rc), (lb, rb) = e.params["dimension_numbers"]
    pet = e.params.get("preferred_element_type")
    lhs, rhs = e.invars
    v, k = view.var, view.k
    if pet is not None and np.dtype(pet) != np.dtype(v.aval.dtype):
        return None
    if type(rhs) is Var and rhs.id == v.id:
        s = lhs
    elif type(lhs) is Var and lhs.id == v.id:
        s = rhs
    else:
        return None
    if type(s) is not Var or s.id == v.id or s.aval.dtype != v.aval.dtype:
        return None
    if s.aval.ndim != k or tuple(s.aval.shape) != tuple(v.aval.shape[:k]):
        return None
    if len(lc) != 1 or tuple(lc) != tuple(rc) or lc[0] >= k:
        return None
    j = lc[0]
    others = tuple(a for a in range(k) if a != j)
    if tuple(lb) != others or tuple(rb) != others:
        return None
    return s, j


# --- 3. The factored readers ---------------------------------------------------------------------
def _emit(eqns, prim, invars, params, src, out=None):
    """Append ``prim(*invars, **params)`` to ``eqns``; its output variable (``out`` if given)."""
    if out is None:
        aval = prim.abstract_eval(*[a.aval for a in invars], **params)
        out = Var(aval)
    eqns.append(Eqn(prim, invars, [out], params, src))
    return out


def _factor(eqns, x, batch, contract, dt, src):
    """A factor of the outer product without its size-1 contracting axes (a row-major reshape
    that moves no element), in dtype ``dt``; and the positions of its batch axes then."""
    if contract:
        keep = [a for a in range(x.aval.ndim) if a not in contract]
        shape = tuple(x.aval.shape[a] for a in keep)
        x = _emit(eqns, P.reshape_p, [x], {"new_sizes": shape}, src)
        batch = tuple(keep.index(a) for a in batch)
    if np.dtype(x.aval.dtype) != np.dtype(dt):
        params = {"new_dtype": dt, "weak_type": False}
        x = _emit(eqns, P.convert_element_type_p, [x], params, src)
    return x, batch


def _norm(op: _Outer, view: _View, reducer: Eqn) -> list:
    """Equations computing ``reducer``'s output (each example's sum of squares of the outer
    product) as the product of the two factors' sums of squares."""
    eqns, src = [], reducer.source_info
    dt = view.var.aval.dtype
    sums = []
    for x, b, c in ((op.lhs, op.lb, op.lc), (op.rhs, op.rb, op.rc)):
        x, b = _factor(eqns, x, b, c, dt, src)
        sq = _emit(eqns, P.mul_p, [x, x], {}, src)
        axes = tuple(a for a in range(x.aval.ndim) if a not in b)
        sums.append(_emit(eqns, P.reduce_sum_p, [sq], {"axes": axes}, src))
    _emit(eqns, P.mul_p, sums, {}, src, out=reducer.outvars[0])
    return eqns


def _weighted(op: _Outer, view: _View, hit, reader: Eqn) -> list:
    """Equations computing ``reader``'s output (the sum over examples of ``s[..., b]`` times the
    outer product) as one product of the factors, the smaller one scaled by ``s``. When the
    value is read through a transpose that puts the rhs factor's axes first, the product takes
    the factors in the other order instead (the transposed product, not a transposed copy)."""
    s, j = hit
    eqns, src = [], reader.source_info
    dt = view.var.aval.dtype
    lhs, lb = _factor(eqns, op.lhs, op.lb, op.lc, dt, src)
    rhs, rb = _factor(eqns, op.rhs, op.rb, op.rc, dt, src)
    scale_lhs = lhs.aval.size <= rhs.aval.size
    x, b = (lhs, lb) if scale_lhs else (rhs, rb)
    params = {"shape": tuple(x.aval.shape), "broadcast_dimensions": b}
    xs = _emit(eqns, P.mul_p, [x, _emit(eqns, P.broadcast_in_dim_p, [s], params, src)], {}, src)
    lhs, rhs = (xs, rhs) if scale_lhs else (lhs, xs)
    steps = view.steps
    n_l, n_r = lhs.aval.ndim - len(lb), rhs.aval.ndim - len(rb)
    swap = (*range(n_l, n_l + n_r), *range(n_l))
    if steps and steps[0] == ("transpose", swap):
        (lhs, lb), (rhs, rb), steps = (rhs, rb), (lhs, lb), steps[1:]
    kept = [a for a in range(view.k) if a != j]  # (batch axes of the result, leading)
    dn = (((lb[j],), (rb[j],)), (tuple(lb[a] for a in kept), tuple(rb[a] for a in kept)))
    params = {"dimension_numbers": dn, "preferred_element_type": None}
    result = reader.outvars[0]
    w = _emit(eqns, P.dot_general_p, [lhs, rhs], params, src, None if steps else result)
    lead = tuple(view.var.aval.shape[a] for a in kept)
    for n, (kind, arg) in enumerate(steps):
        out = result if n == len(steps) - 1 else None
        if kind == "transpose":
            perm = (*range(len(kept)), *(len(kept) + p for p in arg))
            w = _emit(eqns, P.transpose_p, [w], {"permutation": perm}, src, out)
        else:
            w = _emit(eqns, P.reshape_p, [w], {"new_sizes": (*lead, *arg)}, src, out)
    return eqns


# --- 4. The pass ---------------------------------------------------------------------------------
def factor_outer_products(closed: ClosedJaxpr) -> ClosedJaxpr:
    """Rewrite the readers of every per-example outer product whose readers are all squared-norm
    reductions or batch-vector contractions (see the module docstring) so that the outer
    product is never formed; ``closed`` itself when there is none. Top level only."""
    jaxpr = closed.jaxpr
    uses: dict[int, dict[int, Eqn]] = {}
    for i, e in enumerate(jaxpr.eqns):
        for a in e.invars:
            if type(a) is Var:
                uses.setdefault(a.id, {})[i] = e
    outputs = {v.id for v in jaxpr.outvars if type(v) is Var}
    defs = {v.id: e for e in jaxpr.eqns for v in e.outvars}

    replace: dict[int, list] = {}
    for e in jaxpr.eqns:
        op = _outer_product(e, defs)
        if op is None:
            continue
        found: list = []
        out = e.outvars[0]
        if not _readers(_View(out, len(op.lb), op.steps), uses, outputs, found) or not found:
            continue
        if any(j in replace for j, *_ in found):
            continue
        for j, kind, view, s in found:
            r = jaxpr.eqns[j]
            replace[j] = _norm(op, view, r) if kind == "norm" else _weighted(op, view, s, r)
    if not replace:
        return closed

    eqns = []
    for i, e in enumerate(jaxpr.eqns):
        eqns.extend(replace.get(i, (e,)))
    j = passes.cse_jaxpr(Jaxpr(jaxpr.constvars, jaxpr.invars, eqns, jaxpr.outvars))
    return passes.dce_closed(ClosedJaxpr(j, closed.consts))


__all__ = ["factor_outer_products"]
