"""Triton reduction kernels: persistent (a whole row in one block), looped, split across blocks,
and Welford moments, with the pointwise work around them fused in."""

from __future__ import annotations

import itertools
import math
from types import SimpleNamespace

import numpy as np

from functx import dtypes
from functx.lowering.intexpr import Int
from functx.lowering.loopir import Acc, Const, Op, flat_offset
from functx.lowering.schedule import Kernel, KernelCtx
from functx.lowering.triton import dot
from functx.lowering.triton.blocks import reduce_plan
from functx.lowering.triton.emit import (
    Emitter,
    V,
    _decompose,
    _is_float,
    _next_pow2,
    identity_literal,
    tl_compute,
)


def _welford(prog, k: Kernel, passes: list, n_inner: int):
    """Merge mean/variance pairs into one pass: a later pass's ``reduce_sum`` of
    ``(A - s / n) ** 2`` (or ``d * d``), with ``s`` an earlier pass's ``reduce_sum`` of ``A``
    over the ``n`` reduced elements, is the second moment Welford's update gives in the same
    pass as ``s``. A pass merges into the one before it when all its reductions pair so.
    Returns the new passes and ``{id of the squared sum: the sum it pairs with}``."""
    ctx = KernelCtx(k, k.row_vars())
    full = k.full_index()
    keys = Emitter("", itertools.count(), {}, {})

    def same(a, b):
        try:
            return keys._skey(a) == keys._skey(b)
        except TypeError:
            return False

    def operand(r):
        return r.params["operand"].load(full, ctx)

    def args_of(e):
        return [a for a in e.args if not isinstance(a, tuple)], dict(
            a for a in e.args if isinstance(a, tuple)
        )

    def square_base(e):
        if isinstance(e, Op):
            a, params = args_of(e)
            if e.name == "integer_pow" and params.get("y") == 2:
                return a[0]
            if e.name == "mul" and len(a) == 2 and same(a[0], a[1]):
                return a[0]
        return None

    def is_mean(e, r0):
        if not isinstance(e, Op) or e.name not in ("div", "mul"):
            return False
        a, _ = args_of(e)
        if len(a) != 2:
            return False
        pairs = [(a[0], a[1])] if e.name == "div" else [(a[0], a[1]), (a[1], a[0])]
        for x, c in pairs:
            if isinstance(x, Acc) and x.node == r0.id and isinstance(c, Const):
                v = float(c.value)
                if (e.name == "div" and v == n_inner) or (
                    e.name == "mul" and abs(v * n_inner - 1.0) < 1e-6
                ):
                    return True
        return False

    def sums(p):
        return [
            r
            for r in p
            if r.params["op"] == "reduce_sum"
            and _is_float(r.params["operand"].dtype)
            and _is_float(r.dtype)
        ]

    out, pairs = [list(passes[0])], {}
    for p in passes[1:]:
        prev = out[-1]
        found = {}
        for r1 in p:
            d = square_base(operand(r1)) if r1 in sums(p) else None
            if d is None or not isinstance(d, Op) or d.name != "sub":
                break
            x, y = args_of(d)[0]
            for r0 in sums(prev):
                if r0.id in pairs or r0.id in pairs.values() or r0.id in found.values():
                    continue
                a0 = operand(r0)
                if np.dtype(r0.params["operand"].dtype) != np.dtype(r1.dtype):
                    continue
                if (same(x, a0) and is_mean(y, r0)) or (same(y, a0) and is_mean(x, r0)):
                    found[r1.id] = r0.id
                    break
            else:
                break
        if found and len(found) == len(p):
            prev.extend(p)
            pairs.update(found)
        else:
            out.append(list(p))
    return out, pairs


def render(prog, k: Kernel):
    """Rows x chunks of the reduced elements, in one of three variants (``reduce_plan``
    picks the block shape):

    * persistent (a row is one chunk): the row is loaded once and every pass, the map phase
      and the epilogue use it from registers;
    * looped: each pass loops over the chunks; a mean/variance pair is one Welford pass
      (``_welford``); a map phase that does not read the last pass's results joins that
      pass's loop;
    * split: a single-pass kernel with too few blocks of rows to fill the GPU writes partial
      accumulators over slices of the chunks, and a second kernel folds them and runs the
      epilogue.
    """
    rows, inner = k.row_shape, k.inner_shape
    n_rows, n_inner = math.prod(rows), math.prod(inner)
    if n_rows == 0 or any(r is k for r in dot.column_sums(prog).values()):
        return  # (or a product's programs compute these sums: dot.column_sums)
    rv, iv, full = k.row_vars(), k.inner_vars(), k.full_index()
    nd = len(k.shape)
    contiguous = k.axes == tuple(range(nd - len(k.axes), nd)) or n_rows == 1
    itemsize = max(np.dtype(r.params["operand"].dtype).itemsize for p in k.passes for r in p)
    rb, ib, warps = reduce_plan(contiguous, n_rows, n_inner, itemsize, prog.blocks)
    n_chunks = max(1, -(-n_inner // ib))
    persistent = n_chunks == 1
    row_progs = -(-n_rows // rb)
    passes, pairs = [list(p) for p in k.passes], {}
    if not persistent and prog.blocks.welford and len(passes) > 1:
        passes, pairs = _welford(prog, k, passes, n_inner)
    partner = {v: s for s, v in pairs.items()}  # the sum -> its squared-deviation sum
    ids_of = [{r.id for r in p} for p in passes]
    # which of this kernel's reductions the map phase reads
    probe = KernelCtx(k, rv)
    for m in k.maps:
        m.fn(full, probe)
    maps_join_last = bool(k.maps) and not (probe.accs & ids_of[-1])
    split, per_split = 1, n_chunks
    if (
        len(passes) == 1
        and not pairs
        and (not k.maps or maps_join_last)
        and n_chunks > 1
        and row_progs < prog.blocks.min_programs
    ):
        split = min(n_chunks, -(-prog.blocks.min_programs // row_progs))
        per_split = -(-n_chunks // split)
        split = -(-n_chunks // per_split)
    counter = itertools.count()
    tags = {v.name: "r" for v in rv} | {v.name: "j" for v in iv}
    masks = {frozenset("r"): "rmask", frozenset("j"): "jmask", frozenset("rj"): "mask"}
    known = {flat_offset(rv, rows): "rflat"} if rows else {}
    if inner:
        known[flat_offset(iv, inner)] = "jflat"
    acc: dict = {}  # (node id, 0) -> V of the row's final value
    ems: list = []  # the emitters of the kernel being written (for the buffers they read)
    idx_t = "tl.int64" if prog.big else "tl.int32"
    idx_past = 2**63 - 1 if prog.big else 2**31 - 1  # the index of masked lanes

    def emitter(indent):
        em = Emitter(indent, counter, tags, masks, known)
        em.acc = acc
        ems.append(em)
        return em

    def reads():
        out: dict = {}
        for em in ems:
            out.update(em.bufs)
        return out

    def ptr(off: V, want) -> str:
        """An offset broadcast over the block axes ``want`` (for stores)."""
        code = off.code
        if "r" in want and "r" not in off.deps:
            code = f"{code} + rzero"
        if "j" in want and "j" not in off.deps:
            code = f"{code} + jzero"
        return code

    def head(pid):
        return [
            f"    rflat = {pid} * {rb} + tl.arange(0, {rb})[:, None]",
            f"    rmask = rflat < {n_rows}",
            "    rzero = rflat * 0",
        ] + ["    " + s for s in _decompose([v.name for v in rv], rows, "rflat")]

    def chunk_head(indent, start):
        return [
            f"{indent}jflat = {start} + tl.arange(0, {ib})[None, :]",
            f"{indent}jmask = jflat < {n_inner}",
            f"{indent}mask = rmask & jmask",
            f"{indent}jzero = jflat * 0",
        ] + [indent + s for s in _decompose([v.name for v in iv], inner, "jflat")]

    def over_inner(make_body):
        """Lines running ``make_body(indent)`` for each chunk of the reduced elements."""
        if n_inner == 0:
            return []
        if n_inner <= ib:
            return chunk_head("    ", "0") + make_body("    ")
        return (
            [f"    for jstart in range(0, {n_inner}, {ib}):"]
            + chunk_head("        ", "jstart")
            + make_body("        ")
        )

    # one spec per reduction: its accumulator(s), identity, dtype and final value
    specs = []
    for p in passes:
        for r in p:
            op = r.params["op"]
            xdt = np.dtype(r.params["operand"].dtype)
            is_bool = xdt == dtypes.bool_
            a = f"a{r.id}"
            rdt = "tl.int32" if is_bool else tl_compute(xdt)
            if op in ("argmax", "argmin"):
                # masked lanes hold the identity; their indices are past every real one
                ident = identity_literal(op, xdt)
                final = f"    {a}_out = {a}_i.to({tl_compute(r.dtype)})"
                acc[(r.id, 0)] = V(f"{a}_out", frozenset("r"), False, r.dtype)
            else:
                ident = identity_literal(op, xdt)
                final = f"    {a}_out = {a} != 0" if is_bool else None
                acc[(r.id, 0)] = V(f"{a}_out" if is_bool else a, frozenset("r"), False, r.dtype)
            # each chunk's tl.reduce is a tree; the running sum of the chunks' sums must
            # not add an error that grows with the row's length: a float32 sum carries a
            # Kahan compensation across chunks (float32 work, as fast as the plain sum on
            # an H100, where a float64 carry cost 13% on a 2**28 sum), and a Welford pair
            # keeps its running mean in float64
            wide = op == "reduce_sum" and rdt == "tl.float32"
            welford = r.id in partner or r.id in pairs
            if r.id in partner:  # the sum, from the running mean of shifted values
                final = f"    {a} = ((w{r.id} + wk{r.id}) * {n_inner}).to({rdt})"
            elif wide and welford:  # the second moment, kept in float64
                final = f"    {a} = {a}.to({rdt})"
            specs.append(
                SimpleNamespace(
                    r=r,
                    op=op,
                    a=a,
                    ident=ident,
                    rdt=rdt,
                    final=final,
                    arg=op in ("argmax", "argmin"),
                    acc_t="tl.float64" if wide and welford else rdt,
                    kahan=wide and not welford,
                    fl=_is_float(xdt),
                    bool=is_bool,
                )
            )
    spec_of = {s.r.id: s for s in specs}

    def inits(ss):
        out = []
        for s in ss:
            out.append(f"    {s.a} = tl.full([{rb}, 1], {s.ident}, {s.acc_t})")
            if s.arg:
                out.append(f"    {s.a}_i = tl.full([{rb}, 1], {idx_past}, {idx_t})")
            if s.r.id in partner:
                out.append(f"    w{s.r.id} = tl.full([{rb}, 1], 0, {s.acc_t})")
            if s.kahan:
                out.append(f"    {s.a}_c = tl.full([{rb}, 1], 0, tl.float32)")
        return out

    def fold(indent, s, c, idx):
        """Fold the block ``c`` (masked lanes hold the identity; ``idx``: their element
        indices, for argmax/argmin) into the accumulators of ``s``."""
        a = s.a
        if s.arg:
            return [
                f"{indent}{c}v, {c}i = tl.reduce(({c}, {idx}), 1, _fx_{s.op}, keep_dims=True)",
                f"{indent}{a}, {a}_i = _fx_{s.op}({a}, {a}_i, {c}v, {c}i)",
            ]
        fn = {
            "reduce_sum": "_fx_add",
            "reduce_prod": "_fx_mul",
            "reduce_max": "_fx_fmax" if s.fl else "_fx_imax",
            "reduce_min": "_fx_fmin" if s.fl else "_fx_imin",
            "reduce_and": "_fx_and",
            "reduce_or": "_fx_or",
        }[s.op]
        red = f"tl.reduce({c}, 1, {fn}, keep_dims=True)"
        if s.kahan:  # a compensated running sum of the chunks' sums
            return [
                f"{indent}{a}_y = {red} - {a}_c",
                f"{indent}{a}_t = {a} + {a}_y",
                # (no compensation once the sum is infinite: inf - inf is NaN)
                f"{indent}{a}_c = tl.where({a}_t - {a}_t == 0, ({a}_t - {a}) - {a}_y, 0.0)",
                f"{indent}{a} = {a}_t",
            ]
        if s.acc_t != s.rdt:
            red = f"{red}.to({s.acc_t})"
        comb = {
            "reduce_sum": "{a} + {s}",
            "reduce_prod": "{a} * {s}",
            "reduce_max": "_fx_fmax({a}, {s})" if s.fl else "tl.maximum({a}, {s})",
            "reduce_min": "_fx_fmin({a}, {s})" if s.fl else "tl.minimum({a}, {s})",
            "reduce_and": "{a} & {s}",
            "reduce_or": "{a} | {s}",
        }[s.op]
        return [f"{indent}{a} = ({comb.format(a=a, s=red)}).to({s.acc_t})"]

    def welford_shift(red_nodes):
        """Before a Welford pass: each pair's shift, its operand at the row's first reduced
        element. The pass works on shifted values, which keeps the chunk means small and
        exact (a float32 mean of values near 1000 would carry errors that Chan's update
        turns into first-order errors of the variance)."""
        em = emitter("    ")
        ctx = KernelCtx(k, rv)
        first = tuple(Int(0) if i in k.axes else v for i, v in enumerate(full))
        lines = []
        for r in red_nodes:
            if r.id in partner:
                v = em(r.params["operand"].load(first, ctx))
                lines.append(
                    f"    wk{r.id} = tl.broadcast_to({em.tensor(v)}, [{rb}, 1])"
                    f".to({spec_of[r.id].rdt})"
                )
        return em.flush() + lines

    def welford_fold(indent, s, val):
        """Chan's update of (running mean, second moment) of the shifted values with this
        chunk's own pair."""
        i, t = s.r.id, s.rdt
        m2 = spec_of[partner[i]].a
        return [
            f"{indent}wv{i} = {val} - wk{i}",
            f"{indent}wc{i} = tl.where(mask, wv{i}, 0)",
            f"{indent}wold{i} = tl.full([{rb}, 1], 0, {t}) + jstart",
            f"{indent}wn{i} = tl.minimum({n_inner} - wold{i}, {ib})",
            f"{indent}wm{i} = tl.reduce(wc{i}, 1, _fx_add, keep_dims=True) / wn{i}",
            f"{indent}wd{i} = tl.where(mask, wv{i} - wm{i}, 0)",
            f"{indent}wq{i} = tl.reduce(wd{i} * wd{i}, 1, _fx_add, keep_dims=True)",
            f"{indent}wdel{i} = wm{i} - w{i}",
            f"{indent}wtot{i} = wold{i} + wn{i}",
            f"{indent}w{i} = w{i} + wdel{i} * (wn{i} / wtot{i})",
            f"{indent}{m2} = {m2} + wq{i} + wdel{i} * wdel{i} * (wold{i} * wn{i} / wtot{i})",
        ]

    def updates(em, ctx, red_nodes, indent):
        """The statements folding one chunk into the accumulators of ``red_nodes``."""
        ups = []
        for r in red_nodes:
            s = spec_of[r.id]
            if r.id in pairs:
                continue  # folded with its sum
            val = em.tensor(em(r.params["operand"].load(full, ctx)))
            if r.id in partner:
                ups += welford_fold(indent, s, val)
                continue
            if s.bool:
                val = f"{val}.to(tl.int32)"
            c = f"c{r.id}_{next(counter)}"
            ups.append(f"{indent}{c} = tl.where(mask, {val}, {s.ident})")
            ups += fold(indent, s, c, f"tl.broadcast_to(jflat, [{rb}, {ib}])")
        return em.flush() + ups

    def map_stores(em, ctx, indent):
        lines = []
        for m in k.maps:
            v = em(m.fn(full, ctx))
            off = em.index(flat_offset(full, k.shape))
            lines.append(indent + prog._store(m.buf, ptr(off, "rj"), v, m.dtype, "mask"))
        return em.flush() + lines

    def epilogue(em, ctx):
        lines = []
        for m in k.epilogue:
            v = em(m.fn(rv, ctx))
            lines.append("    " + prog._store(m.buf, "rflat", v, m.dtype, "rmask"))
        return em.flush() + lines

    def stores():
        return [
            "    " + prog._store(s.r.buf, "rflat", acc[(s.r.id, 0)], s.r.dtype, "rmask")
            for s in specs
        ]

    ops = [[r.params["op"] for r in p] for p in k.passes]
    variant = "persistent" if persistent else "looped"
    if pairs:
        variant += f", {len(pairs)} Welford pair(s)"
    what = (
        f"reduce axes {k.axes} of {k.shape}: passes {ops}, {len(k.maps)} map, "
        f"{len(k.epilogue)} epilogue; {rb} rows x {ib} ({variant})"
    )
    name = prog._kname(k, "reduce")
    stored = [s.r.buf for s in specs] + [m.buf for m in k.maps] + [m.buf for m in k.epilogue]

    if split == 1:
        body = head(prog._pid())
        if persistent:
            # one chunk: a single emitter, so every pass and the map phase share the loads
            if n_inner:
                body += chunk_head("    ", "0")
            em, ctx = emitter("    "), KernelCtx(k, rv)
            for p in passes:
                body += inits([spec_of[r.id] for r in p])
                if n_inner:
                    body += updates(em, ctx, p, "    ")
                body += [spec_of[r.id].final for r in p if spec_of[r.id].final]
            if k.maps and n_inner:
                body += map_stores(em, ctx, "    ")
        else:
            n_passes = len(passes)
            for pi, p in enumerate(passes):
                body += inits([spec_of[r.id] for r in p]) + welford_shift(p)

                def make(indent, p=p, last=pi == n_passes - 1):
                    em, ctx = emitter(indent), KernelCtx(k, rv)
                    lines = updates(em, ctx, p, indent)
                    if last and maps_join_last:
                        lines += map_stores(em, ctx, indent)
                    return lines

                body += over_inner(make)
                body += [spec_of[r.id].final for r in p if spec_of[r.id].final]
            if k.maps and not maps_join_last:
                body += over_inner(
                    lambda indent: map_stores(emitter(indent), KernelCtx(k, rv), indent)
                )
        body += stores()
        body += epilogue(emitter("    "), KernelCtx(k, rv))
        bufs = prog._ordered(reads(), stored)
        prog._define(name, bufs, body, what)
        prog._launch(name, row_progs, bufs, warps)
        return

    # split: partial accumulators, [row, split] in buffers of their own
    parts = []
    for s in specs:  # (a compensated sum hands on its partial in float64)
        parts.append((f"p{s.r.id}", "tl.float64" if s.kahan else s.acc_t))
        if s.arg:
            parts.append((f"p{s.r.id}_i", idx_t))
    for pn, dt in parts:
        prog.host.append(
            f"    {pn} = torch.empty({n_rows * split}, dtype=torch.{dt[3:]}, device=dev)"
        )
    body = head(prog._pid()) + ["    sp = tl.program_id(1)"] + inits(specs)
    body += [
        f"    for jc in range({per_split}):",
        f"        jstart = (sp * {per_split} + jc) * {ib}",
    ]
    em, ctx = emitter("        "), KernelCtx(k, rv)
    body += chunk_head("        ", "jstart") + updates(em, ctx, passes[0], "        ")
    if k.maps:
        body += map_stores(em, ctx, "        ")
    for s in specs:
        val = f"{s.a}.to(tl.float64) - {s.a}_c.to(tl.float64)" if s.kahan else s.a
        body.append(f"    tl.store(p{s.r.id} + rflat * {split} + sp, {val}, mask=rmask)")
        if s.arg:
            body.append(f"    tl.store(p{s.r.id}_i + rflat * {split} + sp, {s.a}_i, mask=rmask)")
    map_bufs = [m.buf for m in k.maps]
    bufs = prog._ordered(reads(), [pn for pn, _ in parts], map_bufs)
    prog._define(
        name + "_part",
        bufs,
        body,
        f"{what}; partials over {split} splits of {per_split} chunks",
    )
    prog._launch(name + "_part", f"{row_progs}, {split}", bufs, warps)
    ems.clear()
    sp2 = _next_pow2(split)
    # the partials of a compensated sum fold in float64 (no loop here, so no carry)
    specs = [
        SimpleNamespace(
            **{
                **vars(s),
                "kahan": False,
                "acc_t": "tl.float64",
                "final": f"    {s.a} = {s.a}.to({s.rdt})",
            }
        )
        if s.kahan
        else s
        for s in specs
    ]
    body = head(prog._pid()) + inits(specs)
    body += [
        f"    sidx = tl.arange(0, {sp2})[None, :]",
        "    pmask = rmask & (sidx < {})".format(split),
    ]
    for s in specs:
        c = f"c{s.r.id}"
        body.append(
            f"    {c} = tl.load(p{s.r.id} + rflat * {split} + sidx, mask=pmask, other={s.ident})"
        )
        idx = None
        if s.arg:
            idx = f"{c}_i"
            body.append(
                f"    {idx} = tl.load(p{s.r.id}_i + rflat * {split} + sidx, "
                f"mask=pmask, other={idx_past})"
            )
        body += fold("    ", s, c, idx)
    body += [s.final for s in specs if s.final]
    body += stores()
    body += epilogue(emitter("    "), KernelCtx(k, rv))
    rest = [s.r.buf for s in specs] + [m.buf for m in k.epilogue]
    bufs = prog._ordered([pn for pn, _ in parts], reads(), rest)
    prog._define(name, bufs, body, f"{what}; folds {split} partials")
    prog._launch(name, row_progs, bufs, 4)
