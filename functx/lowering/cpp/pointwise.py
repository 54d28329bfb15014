"""C++ pointwise kernels: one loop nest over the output, tiled and parallel when large. A local
of the kernel (``Kernel.local_ids``) is the temporary its expression ends in, which the
kernel's later nodes read (``Emitter.syms``); it is stored only if it has a buffer. A kernel
whose last-axis index sits in clamps or divisions (concatenate or pad along the last axis, head
transposes) walks that axis in pieces where the clamps are constant and runs where the divisions
are (``_segmented``)."""

from __future__ import annotations

import dataclasses
import math

from functx.lowering.cpp.emit import _PAR, Emitter, _decompose, _store
from functx.lowering.intexpr import IMax, IMin, add_args, ix, preorder
from functx.lowering.loopir import E, FloorDiv, Idx, Load, ModI, Op, flat_offset, subexprs, sym
from functx.lowering.schedule import Kernel, KernelCtx, local_sym

_PAR_ITEMS = 64  # a pointwise loop is split into at least this many parallel items...


_TILE = 4096  # ...of at least this many elements


# --- kernels -------------------------------------------------------------------------------
def render(prog, k: Kernel):
    shape = k.shape
    n = math.prod(shape)
    if n == 0:
        return
    nd = len(shape)
    ivars = [sym(f"i{d}") for d in range(nd)]
    lines = [f"  // kernel {k.index}: pointwise {shape}"]
    if nd == 0:
        em = Emitter("    ")
        ctx = KernelCtx(k)
        stores = []
        for node in k.nodes:
            e = node.fn((), ctx)
            ctx.remember(node, (), e)  # (the kernel's later nodes read it, not compute it again)
            val = em(e)
            if node.id in k.local_ids:
                em.syms[local_sym(node).name] = val
            if node.buf is not None:
                stores.append(_store(node.buf, "0", val, node.dtype))
        lines += ["  {"] + em.lines + ["    " + s for s in stores] + ["  }"]
        prog.body += lines
        return
    outer = shape[:-1]
    n_outer = math.prod(outer)
    last = shape[-1]
    hoist = Emitter("    ", prefix="h")
    em = Emitter("      ").hoisting(hoist, [ivars[-1]])
    ctx = KernelCtx(k)
    stores, vals = [], []
    for node in k.nodes:
        e = node.fn(tuple(ivars), ctx)
        ctx.remember(node, tuple(ivars), e)  # (the kernel's later nodes read it at this index)
        vals.append(e)
        val = em(e)
        if node.id in k.local_ids:  # (a variable the kernel's later nodes read)
            em.syms[local_sym(node).name] = val
        if node.buf is not None:
            stores.append(_store(node.buf, em.offset(flat_offset(ivars, shape)), val, node.dtype))
    cut = _transposed_axis(k, shape, ivars, vals)
    if cut is not None:
        lines += _tiled(k, shape, ivars, cut, hoist, em, stores)
        prog.body += lines
        return
    # too few outer rows to share among threads: split the last axis into tiles too
    tiles = 1
    if n_outer < _PAR_ITEMS and last >= 2 * _TILE:
        tiles = min(-(-_PAR_ITEMS // n_outer), last // _TILE)
    if tiles == 1 and nd >= 2 and (n_outer >= _PAR_ITEMS or n < _PAR):
        split = _segmented(k, shape, ivars, vals)
        if split is not None:
            prog.body += lines + split
            return
    tile = -(-last // tiles)
    tile = -(-tile // 64) * 64
    tiles = -(-last // tile)
    par = f"#pragma omp parallel for schedule(static) if({n_outer}LL * {last}LL >= {_PAR})"
    lines.append(f"  {par}")
    lines.append(f"  for (int64_t o = 0; o < {n_outer * tiles}LL; ++o) {{")
    iv = ivars[-1]
    if tiles == 1:
        lines += ["    " + s for s in _decompose([str(v) for v in ivars[:-1]], outer, "o")]
        lo, hi = "0", f"{last}LL"
    else:
        lines.append(f"    const int64_t ob = o / {tiles}LL;")
        lines += ["    " + s for s in _decompose([str(v) for v in ivars[:-1]], outer, "ob")]
        lines.append(f"    const int64_t lo = (o % {tiles}LL) * {tile}LL;")
        lines.append(f"    const int64_t hi = fx_imin(lo + {tile}LL, {last}LL);")
        lo, hi = "lo", "hi"
    lines += hoist.lines
    lines.append("    #pragma omp simd")
    lines.append(f"    for (int64_t {iv} = {lo}; {iv} < {hi}; ++{iv}) {{")
    lines += em.lines + ["      " + s for s in stores]
    lines += ["    }", "  }"]
    prog.body += lines


_TILE_LAST = 16  # a transposing loop nest takes tiles of this many elements of the last axis...
_TILE_AXIS = 64  # ...by this many along the axis its loads walk contiguously
_TILE_MIN = 1 << 14  # (and only when it has at least this many elements)


def _transposed_axis(k: Kernel, shape, ivars, vals):
    """The axis ``d`` (not the last) along which a load of the kernel is contiguous while it
    strides along the last axis (a transpose copy): the loop nest is then tiled over ``d`` and
    the last axis (``_tiled``), so that the lines it reads are used whole before they leave
    the cache. None when no load is like that."""
    nd = len(shape)
    if nd < 2 or math.prod(shape) < _TILE_MIN or shape[-1] < _TILE_LAST:
        return None
    seen: set = set()
    for e in vals:
        for x in subexprs(e):
            if not isinstance(x, Load) or id(x) in seen or isinstance(x.offset, E):
                continue
            seen.add(id(x))
            try:
                coef = _linear_coefs(ix(x.offset), ivars)
            except (TypeError, ValueError, AttributeError):
                continue
            if coef is None or abs(coef[-1]) in (0, 1):
                continue
            for d in range(nd - 1):
                if coef[d] == 1 and shape[d] >= _TILE_LAST:
                    return d
    return None


def _linear_coefs(off, ivars):
    """The integer coefficient of each of ``ivars`` in the index expression ``off``, or None
    when ``off`` is not an integer-linear function of them (its terms read term by term: what
    differentiating by each variable would say)."""
    coef = dict.fromkeys(ivars, 0)
    for term in add_args(off):
        c, rest = term.as_coeff_Mul()
        if rest in coef and c.is_Integer:
            coef[rest] += int(c)
        elif not term.free_symbols.isdisjoint(coef):
            return None
    return [coef[v] for v in ivars]


def _tiled(k: Kernel, shape, ivars, d, hoist, em, stores):
    """The loop nest of a transposing pointwise kernel: tiles of _TILE_AXIS along axis ``d`` by
    _TILE_LAST along the last axis, in parallel; within a tile the loop over ``d`` outside and
    the vectorised loop over the last axis inside (the values and their order are the plain
    loop's: each element is computed once, by the same expression)."""
    nd = len(shape)
    other = [a for a in range(nd - 1) if a != d]
    n_other = math.prod(shape[a] for a in other)
    td = -(-shape[d] // _TILE_AXIS)
    tl = -(-shape[-1] // _TILE_LAST)
    n = math.prod(shape)
    vd, vl = ivars[d], ivars[-1]
    lines = [
        f"  // (tiled {_TILE_AXIS}x{_TILE_LAST} over axes {d} and {nd - 1}: a transpose)",
        f"  #pragma omp parallel for schedule(static) if({n}LL >= {_PAR})",
        f"  for (int64_t o = 0; o < {n_other * td * tl}LL; ++o) {{",
        f"    const int64_t t = o % {td * tl}LL;",
        f"    const int64_t d0 = (t / {tl}LL) * {_TILE_AXIS}LL;",
        f"    const int64_t d1 = fx_imin(d0 + {_TILE_AXIS}LL, {shape[d]}LL);",
        f"    const int64_t l0 = (t % {tl}LL) * {_TILE_LAST}LL;",
        f"    const int64_t l1 = fx_imin(l0 + {_TILE_LAST}LL, {shape[-1]}LL);",
    ]
    if other:
        lines.append(f"    const int64_t ot = o / {td * tl}LL;")
        lines += [
            "    " + s
            for s in _decompose([str(ivars[a]) for a in other], [shape[a] for a in other], "ot")
        ]
    lines.append(f"    for (int64_t {vd} = d0; {vd} < d1; ++{vd}) {{")
    lines += ["  " + ln for ln in hoist.lines]
    lines.append("      #pragma omp simd")
    lines.append(f"      for (int64_t {vl} = l0; {vl} < l1; ++{vl}) {{")
    lines += ["  " + ln for ln in em.lines] + ["        " + s for s in stores]
    lines += ["      }", "    }", "  }"]
    return lines


# --- the last axis cut where its index clamps and divisions change ---------------------------
_SEGMENTS_MAX = 8  # at most this many pieces of the last axis (each is the loop body once more)


def _index_exprs(vals):
    """The index expressions (load offsets, index values) of a kernel's element expressions, or
    None when a load's offset is data-dependent."""
    out, seen = [], set()
    stack = list(vals)  # (walked as a graph: shared subexpressions once, no recursion)
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, Load):
            if isinstance(x.offset, E):
                return None
            out.append(ix(x.offset))
        elif isinstance(x, Idx):
            out.append(ix(x.expr))
        elif isinstance(x, Op):
            stack.extend(a for a in x.args if isinstance(a, E))
    return out


def _shift(a, iv):
    """``k`` where ``a`` is ``iv + k`` with ``k`` an integer, else None."""
    k = a - iv
    return int(k) if k.is_Integer else None


def _cuts(exprs, iv, last):
    """The divisor ``D`` and the cut points of the last axis (``iv`` in ``[0, last)``) between
    which every clamp of ``iv`` (``Max``/``Min`` of ``iv + k`` and a constant, as pad and
    concatenate read) is constant and every ``(iv + k) / d``, ``(iv + k) % d`` is a run of ``d``
    (``k`` a multiple of ``d``, ``D`` the least common multiple of the divisors, every cut a
    multiple of ``D``); None when the expressions hold another use of ``iv`` in those forms or
    have none of them."""
    divs, cuts, found = [], {0, last}, False
    for ex in exprs:
        if iv not in ex.free_symbols:
            continue
        for sub in preorder(ex):
            if isinstance(sub, (FloorDiv, ModI)) and iv in sub.args[0].free_symbols:
                if not sub.args[1].is_Integer or int(sub.args[1]) <= 0:
                    return None
                divs.append(int(sub.args[1]))
                found = True
            elif isinstance(sub, (IMax, IMin)) and iv in sub.free_symbols:
                consts = [int(a) for a in sub.args if a.is_Integer]
                if len(consts) != 1 or len(sub.args) != 2:
                    return None
                shifts = _leaf_shifts(next(a for a in sub.args if not a.is_Integer), iv)
                if shifts is None:
                    return None
                for kk in shifts:
                    cuts.add(consts[0] - kk + (0 if isinstance(sub, IMax) else 1))
                found = True
    if not found:
        return None
    d = math.lcm(*divs) if divs else 1
    cuts = sorted(c for c in cuts if 0 <= c <= last)
    if last % d or any(c % d for c in cuts) or len(cuts) - 1 > _SEGMENTS_MAX:
        return None
    return d, cuts


def _leaf_shifts(a, iv):
    """The ``k`` of each ``iv + k`` that ``a`` (nested ``Max``/``Min`` of such terms and
    constants) takes its value from, or None for another form."""
    if isinstance(a, (IMax, IMin)):
        out = set()
        for x in a.args:
            if x.is_Integer:
                continue
            sub = _leaf_shifts(x, iv)
            if sub is None:
                return None
            out |= sub
        return out
    kk = _shift(a, iv)
    return None if kk is None else {kk}


def _bounds(e, iv, lo, hi):
    """An interval holding the integer index expression ``e`` for ``iv`` in ``[lo, hi]`` (the
    other loop variables non-negative), or None where unknown."""
    inf = math.inf
    if e.is_Integer:
        return (int(e), int(e))
    if e == iv:
        return (lo, hi)
    if e.is_Symbol:
        return (0, inf) if e.is_nonnegative else None
    if e.is_Add or e.is_Mul:
        parts = [_bounds(a, iv, lo, hi) for a in e.args]
        if None in parts:
            return None
        if e.is_Add:
            return (sum(p[0] for p in parts), sum(p[1] for p in parts))
        out = (1, 1)
        for p in parts:
            prods = [0 if 0 in (x, y) else x * y for x in out for y in p]
            out = (min(prods), max(prods))
        return out
    if isinstance(e, (IMax, IMin)):
        parts = [_bounds(a, iv, lo, hi) for a in e.args]
        if None in parts:
            return None
        pick = max if isinstance(e, IMax) else min
        return (pick(p[0] for p in parts), pick(p[1] for p in parts))
    if isinstance(e, (FloorDiv, ModI)) and e.args[1].is_Integer:
        b = _bounds(e.args[0], iv, lo, hi)
        d = int(e.args[1])
        if b is None or b[0] < 0:
            return None
        if isinstance(e, ModI):
            return (0, d - 1)
        return (b[0] // d, b[1] // d if b[1] != inf else inf)
    return None


class _Unresolved(Exception):
    pass


def _resolve(e, iv, lo, hi, memo):
    """``e`` for ``iv`` in ``[lo, hi]``: each ``Max``/``Min`` holding ``iv`` replaced by the
    argument that is the extremum all over the interval (_Unresolved when none is)."""
    if iv not in e.free_symbols or e.is_Atom:
        return e
    hit = memo.get(e)
    if hit is not None:
        return hit
    args = [_resolve(a, iv, lo, hi, memo) for a in e.args]
    if isinstance(e, (IMax, IMin)):
        bs = [_bounds(a, iv, lo, hi) for a in args]
        if None in bs:
            raise _Unresolved
        is_max = isinstance(e, IMax)
        out = None
        for a, b in zip(args, bs):
            if all(
                (b[0] >= o[1]) if is_max else (b[1] <= o[0])
                for a2, o in zip(args, bs)
                if a2 is not a
            ):
                out = a
                break
        if out is None:
            raise _Unresolved
    else:
        out = e.func(*args)
    memo[e] = out
    return out


def _strip(e, iv, d, outer, inner, lo, hi, memo):
    """``e`` (clamps resolved) with ``iv = d * outer + inner`` (``inner`` in ``[0, d)``): each
    ``(iv + k) / m`` becomes ``(d / m) * outer + k / m`` (plus ``inner / m``) and each
    ``(iv + k) % m`` ``inner % m`` (_Unresolved when ``m`` does not divide ``d`` or ``k``, or
    ``iv + k`` may be negative)."""
    if iv not in e.free_symbols:
        return e
    hit = memo.get(e)
    if hit is not None:
        return hit
    if e == iv:
        out = d * outer + inner if d > 1 else iv
    elif isinstance(e, (FloorDiv, ModI)):
        m = int(e.args[1])
        kk = _shift(e.args[0], iv)
        b = _bounds(e.args[0], iv, lo, hi)
        if kk is None or d % m or kk % m or b is None or b[0] < 0:
            raise _Unresolved
        if isinstance(e, ModI):
            out = inner if m == d else ModI(inner, m)
        else:
            out = (d // m) * outer + kk // m + (FloorDiv(inner, m) if m < d else 0)
    else:
        out = e.func(*[_strip(a, iv, d, outer, inner, lo, hi, memo) for a in e.args])
    memo[e] = out
    return out


def _rewrite(e, fix, memo):
    """The element expression ``e`` with ``fix`` applied to its index expressions (the same
    objects where nothing changes, so that shared subexpressions stay shared)."""
    hit = memo.get(id(e))
    if hit is not None:
        return hit[1]
    if isinstance(e, (Load, Idx)):
        field = "offset" if isinstance(e, Load) else "expr"
        old = ix(getattr(e, field))
        new = fix(old)
        out = e if new == old else dataclasses.replace(e, **{field: new})
    elif isinstance(e, Op):
        args = tuple(_rewrite(a, fix, memo) if isinstance(a, E) else a for a in e.args)
        out = e if all(a is b for a, b in zip(args, e.args)) else dataclasses.replace(e, args=args)
    else:
        out = e
    memo[id(e)] = (e, out)
    return out


def _segmented(k: Kernel, shape, ivars, vals):
    """The loop nest of a pointwise kernel whose last-axis index ``iv`` sits in clamps or
    divisions (a concatenate along the last axis of head-transposed pieces: the GPT block's
    gradient of its fused q/k/v product, ``(4, 256, 1152)`` from three ``(4, 6, 256, 64)``
    pieces): the last axis cut where the clamps change (``_cuts``), each piece in runs of the
    divisor, so that every load is a plain affine read in the vectorised loop instead of a
    gather through clamped divisions. Each element is computed by the same expression as in the
    plain loop (clamps resolved where they are constant). None when the kernel has no such
    index or it does not resolve."""
    iv = ivars[-1]
    exprs = _index_exprs(vals)
    if exprs is None:
        return None
    last = shape[-1]
    plan = _cuts(exprs, iv, last)
    if plan is None:
        return None
    d, cuts = plan
    outer_v, inner_v = sym(f"{iv}o"), sym(f"{iv}i")
    off = flat_offset(ivars, shape)
    hoist = Emitter("    ", prefix="h")
    body = []
    for s0, s1 in zip(cuts, cuts[1:]):
        if s0 == s1:
            continue
        rmemo, smemo = {}, {}

        def fix(x, s0=s0, s1=s1, rmemo=rmemo, smemo=smemo):
            x = _resolve(x, iv, s0, s1 - 1, rmemo)
            return _strip(x, iv, d, outer_v, inner_v, s0, s1 - 1, smemo)

        em = Emitter("        " if d > 1 else "      ").hoisting(
            hoist, [outer_v, inner_v] if d > 1 else [iv]
        )
        emo = {}
        stores = []
        try:  # (a deep expression: the plain loop, whose emitter walks it without recursion)
            for node, e in zip(k.nodes, vals):
                val = em(_rewrite(e, fix, emo))
                if node.id in k.local_ids:
                    em.syms[local_sym(node).name] = val
                if node.buf is not None:
                    stores.append(_store(node.buf, em.offset(fix(off)), val, node.dtype))
        except (_Unresolved, RecursionError):
            return None
        if d > 1:
            body += [
                f"    for (int64_t {outer_v} = {s0 // d}LL; {outer_v} < {s1 // d}LL;"
                f" ++{outer_v}) {{",
                "      #pragma omp simd",
                f"      for (int64_t {inner_v} = 0; {inner_v} < {d}LL; ++{inner_v}) {{",
                *em.lines,
                *["        " + s for s in stores],
                "      }",
                "    }",
            ]
        else:
            body += [
                "    #pragma omp simd",
                f"    for (int64_t {iv} = {s0}LL; {iv} < {s1}LL; ++{iv}) {{",
                *em.lines,
                *["      " + s for s in stores],
                "    }",
            ]
    outer = shape[:-1]
    n_outer = math.prod(outer)
    lines = [
        f"  // (the last axis cut at {cuts[1:-1]}, in runs of {d})",
        f"  #pragma omp parallel for schedule(static) if({n_outer}LL * {last}LL >= {_PAR})",
        f"  for (int64_t o = 0; o < {n_outer}LL; ++o) {{",
    ]
    lines += ["    " + s for s in _decompose([str(v) for v in ivars[:-1]], outer, "o")]
    return lines + hoist.lines + body + ["  }"]
