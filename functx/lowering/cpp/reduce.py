"""C++ reduction kernels: rows of sums, max/min, products, argmax/argmin and Welford moments,
with the pointwise work around them fused in (row caches, cascaded sums, zero-sign fixes)."""

from __future__ import annotations

import math

import numpy as np

from functx import dtypes
from functx.errors import UnsupportedError
from functx.lowering.cpp.emit import (
    _PAR,
    _SUM_BLOCK,
    Emitter,
    _decompose,
    _ic,
    _is_float,
    _store,
    compute_type,
)
from functx.lowering.cpp.pointwise import _index_exprs, _rewrite
from functx.lowering.intexpr import ix, linear_coeff
from functx.lowering.loopir import E, Load, Op, costly, flat_offset, subexprs, sym
from functx.lowering.schedule import Kernel, KernelCtx
from functx.primitives.reduce import ARG, SEMANTICS, identity

_ROW_CACHE_ELEMS = 1 << 14  # reduction rows up to this long may keep costly values on the stack


def _size(e) -> int:
    return sum(1 for _ in subexprs(e))


def _contains(big, e) -> bool:
    return any(s is e for s in subexprs(big))


def _cascade_split(inner):
    """Where a float32 sum over the reduced axes ``inner`` is cut into blocks: ``(d, g)``, the
    loop over axis ``d`` taken ``g`` iterations at a time so that a block (those iterations and
    the loops inside) covers at most _SUM_BLOCK elements, or None when the whole row fits one
    block. Each block sums in float SIMD lanes (a lane adds at most _SUM_BLOCK / lanes values)
    and the blocks' sums meet in a double, so the error stays that of a short float sum whatever
    the row's length (one float accumulator per lane stops growing at 2^24 ulp)."""
    if math.prod(inner) <= _SUM_BLOCK:
        return None
    d, below = len(inner) - 1, 1
    while d > 0 and below * inner[d] <= _SUM_BLOCK:
        below *= inner[d]
        d -= 1
    return d, max(1, _SUM_BLOCK // below)


_COLUMN_BLOCK = 256  # a column reduction keeps this many outputs' accumulators at a time


# Before a column reduction's loops over its block of accumulators (setting, flushing, copying):
# gcc would otherwise unroll each completely (32 vector steps for 256 float32s), and those loops
# were a tenth of the GPT block's compile time for no gain (they run once a block of rows).
_KEEP_LOOP = "#pragma GCC unroll 1"
_COLUMN_OPS = ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and", "reduce_or")


def _columns(k: Kernel) -> bool:
    """Whether kernel ``k`` reduces leading axes of rows whose last axis is kept: then each
    output's elements lie a whole row apart, and the kernel walks the input row by row instead,
    a block of the outputs at a time (``_render_columns``)."""
    nd = len(k.shape)
    return (
        bool(k.axes)
        and nd - 1 not in k.axes
        and k.shape[-1] >= 8
        and math.prod(k.inner_shape) > 1
        and len(k.passes) == 1
        and not k.maps
        and all(
            r.params["op"] in _COLUMN_OPS
            and (r.params["op"] == "reduce_sum" or r.params["operand"].dtype not in dtypes.COMPLEX)
            for r in k.passes[0]
        )
    )


# A column reduction with fewer blocks of outputs than this (a bias gradient: one block of 16
# columns over 25,088 rows) splits its reduced rows into _COLUMN_CHUNKS chunks, one loop item
# each (the number of chunks is fixed, not the thread count's, so the result does not depend
# on the machine); the chunks' partial results are combined in chunk order afterwards.
_COLUMN_FEW_BLOCKS = 4
_COLUMN_CHUNKS = 8
_CHUNKED_OPS = ("reduce_sum", "reduce_max", "reduce_min", "reduce_and", "reduce_or")


def _column_chunks(k: Kernel, items: int, n_inner: int, step: int, cascades: bool) -> int:
    """How many chunks of its reduced rows column kernel ``k`` runs as separate loop items: 1
    (none) unless it has few output blocks, many rows, and only reductions whose chunked
    combination keeps the result: max/min/and/or, integer sums, and float32 sums cascaded by
    _SUM_BLOCK (the chunks are whole blocks, so every block's float sum is unchanged and only
    the double additions of those sums are regrouped)."""
    if items >= _COLUMN_FEW_BLOCKS or n_inner < 2 * step * _COLUMN_CHUNKS:
        return 1
    if n_inner * math.prod(k.row_shape) < _PAR:
        return 1
    for r in k.passes[0]:
        op, dt = r.params["op"], np.dtype(r.params["operand"].dtype)
        if op not in _CHUNKED_OPS:
            return 1
        if op == "reduce_sum" and _is_float(dt) and not (cascades and compute_type(dt) == "float"):
            return 1
    return _COLUMN_CHUNKS


def _flat_rows(vals, iv, inner):
    """``vals`` with the reduced axes' variables ``iv`` replaced by one flat index ``jf`` when
    every index expression in them is ``c + s * (flat index over inner)`` (the reduced axes lie
    one row stride apart in every operand, as a bias gradient's ``(B, T)`` rows do), else None.
    The row offset is then ``s * jf``: from ``jf``'s division and remainder by the axes' sizes
    it is not affine in ``jf``, and GCC vectorised the row loop of such a kernel with gathers
    for every other row (the GPT block's bias gradients, 60% of those kernels' time)."""
    exprs = _index_exprs(vals)
    if len(iv) < 2 or exprs is None:
        return None
    zero = {v: 0 for v in iv}
    weights = [math.prod(inner[d + 1 :]) for d in range(len(iv))]
    for x in exprs:
        base = x.xreplace(zero)
        coef = [x.xreplace({**zero, v: 1}) - base for v in iv]
        stride = coef[-1]
        if x - base - sum(c * v for c, v in zip(coef, iv)) != 0 or any(
            c - w * stride != 0 for c, w in zip(coef, weights)
        ):
            return None
    flat = {**zero, iv[-1]: sym("jf")}
    memo: dict = {}
    return [_rewrite(v, lambda x: x.xreplace(flat), memo) for v in vals]


def _render_columns(prog, k: Kernel):
    """A reduction over leading axes (``_columns``): for a block of up to _COLUMN_BLOCK
    consecutive outputs along the last (kept) axis, an accumulator per output on the stack; the
    reduced elements (one flat index over the reduced axes) are the outer loop and the block the
    inner, contiguous, vectorised loop, so the input streams in memory order. Each output folds
    its own elements in order; a float32 sum adds _SUM_BLOCK elements at a time in float and
    those partial sums in double (the error does not grow with the length, as the cascaded sums
    of ``render``); max/min through fx_max/fx_min (NaN and signed zeros as in any order). With
    few blocks (``_column_chunks``) the reduced elements are cut into chunks that run in
    parallel, their partial results kept in a buffer and combined in order."""
    rows, inner = k.row_shape, k.inner_shape
    rv, iv = k.row_vars(), k.inner_vars()
    full = k.full_index()
    last, n_last = rv[-1], rows[-1]
    outer = rows[:-1]
    n_outer = math.prod(outer)
    blk = min(_COLUMN_BLOCK, -(-n_last // 8) * 8)
    nblk = -(-n_last // blk)
    n_rows, n_inner = math.prod(rows), math.prod(inner)
    items = n_outer * nblk
    cascades = any(
        r.params["op"] == "reduce_sum"
        and compute_type(r.params["operand"].dtype) == "float"
        and n_inner > _SUM_BLOCK
        for r in k.passes[0]
    )
    step = _SUM_BLOCK if cascades else n_inner
    nch = _column_chunks(k, items, n_inner, _SUM_BLOCK, cascades)
    if nch > 1:
        chunk = -(-n_inner // nch)
        chunk = -(-chunk // _SUM_BLOCK) * _SUM_BLOCK  # whole cascade blocks
    head = [
        f"    const int64_t lo = (ob % {nblk}LL) * {blk}LL;",
        f"    const int64_t hi = fx_imin(lo + {blk}LL, {n_last}LL);",
    ]
    if outer:
        head.append(f"    const int64_t obo = ob / {nblk}LL;")
        head += ["    " + s for s in _decompose([str(v) for v in rv[:-1]], outer, "obo")]
    lines = [
        f"  // kernel {k.index}: reduce axes {k.axes} of {k.shape}, {blk} columns at a time"
        + (f", the reduced elements in {nch} chunks" if nch > 1 else ""),
    ]
    ctx = KernelCtx(k, rv)
    vals = [r.params["operand"].load(full, ctx) for r in k.passes[0]]
    flat = _flat_rows(vals, iv, inner)
    vals = flat or vals
    hoist = Emitter("        ", prefix="h_")
    em = Emitter("          ")
    acc_names: dict = {}
    em.acc_names = acc_names
    em.hoisting(hoist, [last])
    at = f"[{last} - lo]"
    updates, sums, decls, parts = [], [], [], []
    for r, val_e in zip(k.passes[0], vals):
        op, x = r.params["op"], r.params["operand"]
        ct = compute_type(x.dtype)
        a = f"a{r.id}"
        cascade = op == "reduce_sum" and ct == "float" and n_inner > _SUM_BLOCK
        at_ct = "double" if cascade else ct
        init = [
            f"    {_KEEP_LOOP}",
            f"    for (int64_t c = 0; c < {blk}LL; ++c) "
            f"{a}[c] = ({at_ct}){identity_literal(op, x.dtype)};",
        ]
        decls += [f"    alignas(64) {at_ct} {a}[{blk}];", *init]
        if cascade:
            decls.append(f"    alignas(64) float {a}_p[{blk}];")
            sums.append(a)
        v = em(val_e)
        cur = f"{a}_p{at}" if cascade else f"{a}{at}"
        is_bool = np.dtype(x.dtype) == dtypes.bool_

        def comb(cur, v, op=op, ct=ct, is_bool=is_bool):
            return {
                "reduce_sum": f"{cur} + {v}",
                "reduce_prod": f"{cur} * {v}",
                "reduce_max": f"fx_max<{ct}>({cur}, {v})",
                "reduce_min": f"fx_min<{ct}>({cur}, {v})",
                "reduce_and": f"{cur} && {v}" if is_bool else f"({ct})({cur} & {v})",
                "reduce_or": f"{cur} || {v}" if is_bool else f"({ct})({cur} | {v})",
            }[op]

        updates.append(f"{em.indent}{cur} = {comb(cur, v)};")
        acc_names[(r.id, 0)] = f"((float){a}{at})" if cascade else f"{a}{at}"
        parts.append((a, at_ct, init, comb))
    if nch > 1:
        for a, at_ct, _, _ in parts:  # (at most 3 * 8 * 256 partial results: 48 KiB)
            lines.append(f"  alignas(64) {at_ct} {a}_parts[{items * nch * blk}];")
        lines += [
            f"  #pragma omp parallel for schedule(static) if({items * nch}LL > 1)",
            f"  for (int64_t obc = 0; obc < {items * nch}LL; ++obc) {{",
            f"    const int64_t ob = obc / {nch}LL;",
            f"    const int64_t jlo = (obc % {nch}LL) * {chunk}LL;",
            f"    const int64_t jhi = fx_imin(jlo + {chunk}LL, {n_inner}LL);",
        ]
        j_from, j_to = "jlo", "jhi"
    else:
        lines += [
            f"  #pragma omp parallel for schedule(static) if({n_rows}LL * {n_inner}LL"
            f" >= {_PAR} && {items}LL > 1)",
            f"  for (int64_t ob = 0; ob < {items}LL; ++ob) {{",
        ]
        j_from, j_to = "0", f"{n_inner}LL"
    lines += head + decls
    lines.append(f"    for (int64_t jb = {j_from}; jb < {j_to}; jb += {step}LL) {{")
    for a in sums:
        lines += [
            f"      {_KEEP_LOOP}",
            f"      for (int64_t c = 0; c < {blk}LL; ++c) {a}_p[c] = 0.0f;",
        ]
    lines.append(f"      const int64_t je = fx_imin(jb + {step}LL, {j_to});")
    lines.append("      for (int64_t jf = jb; jf < je; ++jf) {")
    if flat is None:
        lines += ["        " + s for s in _decompose([str(v) for v in iv], inner, "jf")]
    lines += hoist.lines
    lines.append("        #pragma omp simd")
    lines.append(f"        for (int64_t {last} = lo; {last} < hi; ++{last}) {{")
    lines += em.lines + updates
    lines += ["        }", "      }"]
    for a in sums:
        lines += [
            f"      {_KEEP_LOOP}",  # (vectorised all the same)
            f"      for (int64_t c = 0; c < {blk}LL; ++c) {a}[c] += (double){a}_p[c];",
        ]
    lines.append("    }")
    if nch > 1:
        for a, _, _, _ in parts:
            lines += [
                f"    {_KEEP_LOOP}",
                f"    for (int64_t c = 0; c < {blk}LL; ++c) {a}_parts[obc * {blk}LL + c] = {a}[c];",
            ]
        lines.append("  }")
        # the chunks' partial results, combined in chunk order, one block of outputs at a time
        lines.append(f"  for (int64_t ob = 0; ob < {items}LL; ++ob) {{")
        lines += head
        for a, at_ct, init, comb in parts:
            lines += [f"    alignas(64) {at_ct} {a}[{blk}];", *init]
            lines.append(f"    for (int64_t ch = 0; ch < {nch}LL; ++ch) {{")
            lines += [f"      {_KEEP_LOOP}", f"      for (int64_t c = 0; c < {blk}LL; ++c) {{"]
            part = f"{a}_parts[(ob * {nch}LL + ch) * {blk}LL + c]"
            lines.append(f"        {a}[c] = {comb(f'{a}[c]', part)};")
            lines += ["      }", "    }"]
    # the block's outputs: stores of the reductions that own buffers, then the epilogue
    lines.append(f"    for (int64_t {last} = lo; {last} < hi; ++{last}) {{")
    row_off = _ic(flat_offset(rv, rows))
    for r in k.passes[0]:
        lines.append(f"      {_store(r.buf, row_off, acc_names[(r.id, 0)], r.dtype)}")
    if k.epilogue:
        em = Emitter("      ")
        em.acc_names = acc_names
        ectx = KernelCtx(k, rv)
        for m in k.epilogue:
            val = em(m.fn(rv, ectx))
            em.lines.append("      " + _store(m.buf, row_off, val, m.dtype))
        lines += em.lines
    lines += ["    }", "  }"]
    prog.body += lines


def _walks_last(k: Kernel) -> bool:
    """Whether a load of the reduction's operand is contiguous along the last (kept) axis: the
    column loop then streams it (a transposed operand keeps the row loop)."""
    ctx = KernelCtx(k, k.row_vars())
    last = k.row_vars()[-1]
    for r in k.passes[0]:
        for x in subexprs(r.params["operand"].load(k.full_index(), ctx)):
            if isinstance(x, Load) and not isinstance(x.offset, E):
                if linear_coeff(ix(x.offset), last) == 1:
                    return True
    return False


def render(prog, k: Kernel):
    for red in k.passes:
        for r in red:
            _refuse_narrow(r.params["op"], r.params["operand"].dtype)
    if math.prod(k.row_shape) and _columns(k) and _walks_last(k):
        return _render_columns(prog, k)
    rows = k.row_shape
    inner = k.inner_shape
    n_rows = math.prod(rows)
    n_inner = math.prod(inner)
    rv, iv = k.row_vars(), k.inner_vars()
    full = k.full_index()
    if n_rows == 0:
        return
    lines = [
        f"  // kernel {k.index}: reduce axes {k.axes} of {k.shape}",
        f"  #pragma omp parallel for schedule(static) if({n_rows}LL * {max(n_inner, 1)}LL"
        f" >= {_PAR} && {n_rows}LL > 1)",
        f"  for (int64_t row = 0; row < {n_rows}LL; ++row) {{",
    ]
    lines += ["    " + s for s in _decompose([str(v) for v in rv], rows, "row")]
    acc_names: dict = {}
    row_off = _ic(flat_offset(rv, rows)) if rows else "0"
    # element expressions first (one context per phase: each pass, then the maps), so that
    # costly subexpressions shared between phases can be kept in a row buffer
    ctxs = [KernelCtx(k, rv) for _ in range(len(k.passes) + 1)]
    pass_vals = [[r.params["operand"].load(full, c) for r in red] for red, c in zip(k.passes, ctxs)]
    map_vals = [m.fn(full, ctxs[-1]) for m in k.maps]
    keep, reuse = _row_cache(prog, k, full, ctxs)
    cascade_at = _cascade_split(inner)
    lines += [
        f"    alignas(64) {ct} {name}[{n_inner}];"
        for name, ct in dict.fromkeys((name, ct) for keeps in keep for name, ct, _ in keeps)
    ]
    for p, red_nodes in enumerate(k.passes):
        decls, updates = [], []
        hoist = Emitter("    ", prefix=f"h{p}_")
        em = Emitter("      " + "  " * max(len(inner) - 1, 0))
        em.acc_names = acc_names
        em.hoisting(hoist, iv)
        _reuse(em, reuse[p])
        clauses, post, index_loops, cascade = [], [], [], []
        serial = False
        for r, val_e in zip(red_nodes, pass_vals[p]):
            op = r.params["op"]
            x = r.params["operand"]
            v = em(val_e)
            ct = compute_type(x.dtype)
            a = f"a{r.id}"
            acc_names[(r.id, 0)] = a
            if op in ("argmax", "argmin") and np.dtype(x.dtype) != dtypes.bool_:
                # vectorisable: the extreme value (with a NaN flag) in this pass, then the
                # first index holding it (or the first NaN) in a second loop over the row
                cmp = ">" if op == "argmax" else "<"
                bi = f"ai{r.id}"
                ident = identity_literal(op, x.dtype)
                nan = _is_float(x.dtype)
                decls.append(
                    f"{ct} {a} = {ident}; int {a}_nan = 0;" if nan else f"{ct} {a} = {ident};"
                )
                updates.append(
                    f"{a} = ({v} {cmp} {a}) ? {v} : {a};"
                    + (f" {a}_nan |= ({v} != {v});" if nan else "")
                )
                clauses.append(f"reduction({'max' if cmp == '>' else 'min'}:{a})")
                if nan:
                    clauses.append(f"reduction(|:{a}_nan)")
                hit = (
                    f"((!{a}_nan & ({{v}} == {a})) | ({a}_nan & ({{v}} != {{v}})))"
                    if nan
                    else f"({{v}} == {a})"
                )
                index_loops.append((bi, val_e, hit))
                acc_names[(r.id, 0)] = f"(({compute_type(r.dtype)}){bi})"
                continue
            if op in ("argmax", "argmin"):  # bool operands: one scalar loop
                bi = f"ai{r.id}"
                init = "-" if op == "argmax" else ""
                cmp = ">" if op == "argmax" else "<"
                if _is_float(x.dtype):
                    decls.append(
                        f"{ct} {a} = {init}fx::limits<{ct}>::infinity(); int64_t {bi} = 0;"
                    )
                    updates.append(
                        f"if (!({a} != {a}) && ({v} {cmp} {a} || {v} != {v})) "
                        f"{{ {a} = {v}; {bi} = jflat; }}"
                    )
                else:
                    lim = "lowest" if op == "argmax" else "max"
                    decls.append(
                        f"{ct} {a} = fx::limits<{ct}>::{lim}(); "
                        f"int64_t {bi} = 0; bool {a}_set = false;"
                    )
                    updates.append(
                        f"if (!{a}_set || {v} {cmp} {a}) {{ {a} = {v}; "
                        f"{bi} = jflat; {a}_set = true; }}"
                    )
                acc_names[(r.id, 0)] = f"(({compute_type(r.dtype)}){bi})"
                continue
            is_bool = np.dtype(x.dtype) == dtypes.bool_
            if op in ("reduce_max", "reduce_min") and _is_float(x.dtype):
                # vectorisable: the plain comparison (which skips NaN) plus a NaN flag
                cmp = ">" if op == "reduce_max" else "<"
                ident = identity_literal(op, x.dtype)
                # a zero of the sign that wins ties: +0.0 for max, -0.0 for min (JAX's
                # max(-0, +0) is +0 whatever the order); a flag in the same loop says whether
                # the row holds it (a second loop over the row, run when the extreme is a
                # zero, cost a tenth of a kernel's compile time for little run time saved)
                wins, zero = _zero_rule(op)
                decls.append(f"{ct} {a} = {ident}; int {a}_nan = 0, {a}_z = 0;")
                updates.append(
                    f"{a} = ({v} {cmp} {a}) ? {v} : {a}; {a}_nan |= ({v} != {v}); "
                    f"{a}_z |= ({wins.format(v=v)});"
                )
                clauses += [
                    f"reduction({'max' if cmp == '>' else 'min'}:{a})",
                    f"reduction(|:{a}_nan)",
                    f"reduction(|:{a}_z)",
                ]
                post.append(f"if ({a} == 0 && {a}_z) {a} = {zero}({ct})0;")
                post.append(f"if ({a}_nan) {a} = fx::limits<{ct}>::quiet_NaN();")
                continue
            ident = identity_literal(op, x.dtype)
            comb, clause = {
                "reduce_sum": (f"{a} + {v}", "+"),
                "reduce_prod": (f"{a} * {v}", "*"),
                "reduce_max": (f"fx_max<{ct}>({a}, {v})", "max"),
                "reduce_min": (f"fx_min<{ct}>({a}, {v})", "min"),
                "reduce_and": (f"({ct})({a} & {v})", "&&" if is_bool else "&"),
                "reduce_or": (f"({ct})({a} | {v})", "||" if is_bool else "|"),
            }[op]
            if is_bool and op in ("reduce_and", "reduce_or"):
                comb = f"{a} {'&&' if op == 'reduce_and' else '||'} {v}"
            if op in ("reduce_max", "reduce_min") and x.dtype in dtypes.COMPLEX:
                # lexicographic (fx_max/fx_min): no OpenMP reduction of that kind, so the row
                # is folded in order, left to right
                serial = True
                clause = None
            if op == "reduce_sum" and ct == "float" and cascade_at is not None:
                # blocks of at most _SUM_BLOCK elements summed in float lanes, the blocks'
                # partial sums added in double: the error does not grow with the row
                decls.append(f"double {a}_w = 0;")
                cascade.append(a)
            else:
                decls.append(f"{ct} {a} = ({ct}){ident};")
            updates.append(f"{a} = {comb};")
            if clause is not None:
                clauses.append(f"reduction({clause}:{a})")
        updates += [f"{name}[jflat] = {em(e)};" for name, _, e in keep[p]]
        lines += ["    " + d for d in decls]
        lines += hoist.lines
        has_arg = any(
            r.params["op"] in ("argmax", "argmin")
            and np.dtype(r.params["operand"].dtype) == dtypes.bool_
            for r in red_nodes
        )
        lines += _inner_loops(
            prog,
            iv,
            inner,
            em.lines + [em.indent + u for u in updates],
            needs_jflat=has_arg or bool(keep[p] or reuse[p]),
            simd_clauses=None if has_arg or serial else clauses,
            cascade=(cascade_at, cascade) if cascade else None,
        )
        lines += [f"    float {a} = (float){a}_w;" for a in cascade]
        if index_loops:
            lines += _index_loop(prog, k, index_loops, acc_names, iv, reuse[p], p)
        lines += ["    " + q for q in post]
    # stores of the reductions that own buffers used outside the row
    for r in [r for p in k.passes for r in p]:
        lines.append(f"    {_store(r.buf, row_off, acc_names[(r.id, 0)], r.dtype)}")
    if k.maps:
        hoist = Emitter("    ", prefix="hm")
        em = Emitter("      " + "  " * max(len(inner) - 1, 0))
        em.acc_names = acc_names
        em.hoisting(hoist, iv)
        _reuse(em, reuse[-1])
        stores = []
        for m, val_e in zip(k.maps, map_vals):
            val = em(val_e)
            stores.append(
                em.indent + _store(m.buf, em.offset(flat_offset(full, k.shape)), val, m.dtype)
            )
        lines += hoist.lines
        lines += _inner_loops(
            prog, iv, inner, em.lines + stores, simd=True, needs_jflat=bool(reuse[-1])
        )
    if k.epilogue:
        em = Emitter("    ")
        em.acc_names = acc_names
        ctx = KernelCtx(k, rv)
        for m in k.epilogue:
            val = em(m.fn(rv, ctx))
            em.lines.append("    " + _store(m.buf, row_off, val, m.dtype))
        lines += em.lines
    lines.append("  }")
    prog.body += lines


def _index_loop(prog, k: Kernel, index_loops, acc_names, iv, reuse, p: int = 0):
    """The second loop of a vectorised argmax/argmin: the first position where the row's
    element equals the extreme value found by the pass (or is NaN, if the row has one)."""
    n_inner = math.prod(k.inner_shape)
    hoist = Emitter("    ", prefix=f"hi{p}_")  # (per pass: a kernel may have several)
    em = Emitter("      " + "  " * max(len(k.inner_shape) - 1, 0))
    em.acc_names = acc_names
    em.hoisting(hoist, iv)
    _reuse(em, reuse)
    updates, clauses = [], []
    for bi, val_e, hit in index_loops:
        v = em(val_e)
        updates.append(f"{bi} = fx_imin({bi}, {hit.format(v=v)} ? jflat : {n_inner}LL);")
        clauses.append(f"reduction(min:{bi})")
    lines = [f"    int64_t {bi} = {n_inner}LL;" for bi, _, _ in index_loops] + hoist.lines
    lines += _inner_loops(
        prog,
        iv,
        k.inner_shape,
        em.lines + [em.indent + u for u in updates],
        needs_jflat=True,
        simd_clauses=clauses,
    )
    return lines


def _row_cache(prog, k: Kernel, full, ctxs):
    """Costly element subexpressions (a transcendental function of the row's elements) that
    more than one phase of a reduction kernel computes, e.g. softmax's ``exp(x - max)`` in
    the sum pass and again in the normalising map: the first phase stores them in a row
    buffer on the stack, later phases read it. Returns, per phase, the (buffer, C type,
    expression) to store and the (expression, buffer) pairs to read."""
    n_inner = math.prod(k.inner_shape)
    keep: list = [[] for _ in ctxs]
    reuse: list = [[] for _ in ctxs]
    if not k.inner_shape or n_inner > _ROW_CACHE_ELEMS:
        return keep, reuse
    first: dict = {}  # node id -> (phase, expression)
    chosen: list = []
    for p, ctx in enumerate(ctxs):
        for (nid, idx), e in ctx.memo.items():
            if idx != full or not isinstance(e, Op):
                continue
            if nid not in first:
                first[nid] = (p, e)
            elif first[nid][0] < p and costly(e):
                chosen.append((nid, p, e))
    taken: dict = {}
    for nid, p, e in sorted(chosen, key=lambda c: -_size(c[2])):
        if any(_contains(big, e) for big, _ in reuse[p]):
            continue  # already inside a reused larger expression
        q, e0 = first[nid]
        if nid not in taken:
            taken[nid] = f"rc{len(taken)}_{k.index}"
            keep[q].append((taken[nid], compute_type(e0.dtype), e0))
        reuse[p].append((e, taken[nid]))
    return keep, reuse


def _reuse(em: Emitter, reuse: list):
    for e, name in reuse:
        em.by_id[id(e)] = f"{name}[jflat]"
        em.keep.append(e)


def _inner_loops(
    prog, iv, inner, body, needs_jflat=False, simd=False, simd_clauses=None, cascade=None
):
    """Loops over the reduced axes around ``body``. ``cascade``: ``((d, g), names)`` of
    _cascade_split and the float partial sums (declared here, per block) that each block
    adds to ``<name>_w``, a double declared by the caller."""
    if not inner:
        pre = ["    {", "      const int64_t jflat = 0;"] if needs_jflat else ["    {"]
        return pre + body + ["    }"]
    out = []
    ind = "    "
    (cut, g), sums = cascade if cascade else ((-1, 0), [])
    for d, (v, n) in enumerate(zip(iv, inner)):
        lo, hi = "0", f"{n}LL"
        if d == cut:
            out.append(f"{ind}for (int64_t blk_{v} = 0; blk_{v} < {n}LL; blk_{v} += {g}LL) {{")
            ind += "  "
            if n % g:
                out.append(f"{ind}const int64_t end_{v} = fx_imin(blk_{v} + {g}LL, {n}LL);")
            out += [f"{ind}float {a} = 0.0f;" for a in sums]
            lo, hi = f"blk_{v}", f"end_{v}" if n % g else f"blk_{v} + {g}LL"
        if d == len(inner) - 1 and simd:
            out.append(f"{ind}#pragma omp simd")
        elif d == len(inner) - 1 and simd_clauses is not None:
            out.append(f"{ind}#pragma omp simd {' '.join(simd_clauses)}".rstrip())
        out.append(f"{ind}for (int64_t {v} = {lo}; {v} < {hi}; ++{v}) {{")
        ind += "  "
    if needs_jflat:
        out.append(f"{ind}const int64_t jflat = {_ic(flat_offset(iv, inner))};")
    out += body
    for d in reversed(range(len(inner))):
        ind = ind[:-2]
        out.append(f"{ind}}}")
        if d == cut:
            out += [f"{ind}{a}_w += (double){a};" for a in sums]
            ind = ind[:-2]
            out.append(f"{ind}}}")
    return out


_EXACT = ("reduce_max", "reduce_min", "argmax", "argmin")


def _refuse_narrow(op: str, dt) -> None:
    """XLA rounds every partial sum or product of a float8/float4 reduction to the narrow type,
    in its own order: not followed by these kernels (max/min, exact, are)."""
    if np.dtype(dt) in dtypes.NARROW_FLOATS and op not in _EXACT:
        raise UnsupportedError(
            f"jit: a {op} reduction of {np.dtype(dt)} is not supported by the C++ backend "
            "(convert to float32 first, or run it outside jit)"
        )


def identity_literal(op: str, dt) -> str:
    """The C++ of reduction ``op``'s identity for operands of ``dt``, from the reduction table
    (``functx.primitives.reduce``): the extremes as ``fx::limits``, all-ones as ``(T)-1``."""
    dt = np.dtype(dt)
    ct = compute_type(dt)
    kind = SEMANTICS[ARG[op].like if op in ARG else op].identity
    v = identity(op, dt)
    if dt == dtypes.bool_:
        return "true" if v else "false"
    if dt in dtypes.COMPLEX and kind in ("lowest", "highest"):
        pt = "float" if dt == dtypes.complex64 else "double"
        sign = "-" if kind == "lowest" else ""
        return f"fx::complex({sign}fx::limits<{pt}>::infinity(), ({pt})0)"
    if kind in ("lowest", "highest"):
        if _is_float(dt):
            return f"{'-' if v < 0 else ''}fx::limits<{ct}>::infinity()"
        return f"fx::limits<{ct}>::{'lowest' if kind == 'lowest' else 'max'}()"
    if kind == "all_ones":
        return f"(({ct})-1)"
    return str(int(v))


def _zero_rule(op: str):
    """For a float max/min: (a C test of ``v`` being the zero that wins a tie of zeros, its
    sign). (``__builtin_signbit`` gives the bit's value, not 1: tested as nonzero.)"""
    neg = bool(np.signbit(SEMANTICS[op].zero_sign))
    return (
        ("{v} == 0 && __builtin_signbit({v})", "-")
        if neg
        else ("{v} == 0 && !__builtin_signbit({v})", "+")
    )
