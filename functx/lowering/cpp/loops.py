"""C++ control-flow kernels: scan, while and cond loops calling compiled sub-programs."""

from __future__ import annotations

import math

from functx.lowering.cpp import attention, lapack
from functx.lowering.cpp.emit import storage_type
from functx.lowering.schedule import Kernel


def render(prog, k: Kernel):
    """A control-flow loop kernel, through ``LOOP_KINDS`` (its group's type)."""
    group = k.nodes[0].params["group"]
    LOOP_KINDS[group["type"]](prog, k, group)


def _ptr_list(names):
    return ", ".join(f"(void*)({n})" for n in names) if names else ""


def _carry_buffers(prog, tag, nodes, init_bufs):
    """Two buffers per loop carry (this iteration's and the next's), and their sizes."""
    lines, a_names, b_names, sizes = [], [], [], []
    for m, (n, src) in enumerate(zip(nodes, init_bufs)):
        st = storage_type(n.dtype)
        size = max(n.size, 1)
        a, b = f"{tag}_a{m}", f"{tag}_b{m}"
        lines += [
            f"    {st}* {a} = ({st}*)fx_alloc({size}ULL * sizeof({st}));",
            f"    {st}* {b} = ({st}*)fx_alloc({size}ULL * sizeof({st}));",
            f"    if (!{a} || !{b}) return 1;",
            f"    fx_copy({a}, {src}, {n.size}ULL * sizeof({st}));",
        ]
        a_names.append(a)
        b_names.append(b)
        sizes.append(f"{size}ULL * sizeof({st})")
    return lines, a_names, b_names, sizes


def _loop_scan(prog, k: Kernel, group):
    ins, outs = group["ins"], group["outs"]
    nc, nk, length, reverse = (
        group["num_consts"],
        group["num_carry"],
        group["length"],
        group["reverse"],
    )
    body = group["jaxpr"]
    name, bconsts = prog._sub(body)
    consts, carry, xs = ins[:nc], ins[nc : nc + nk], ins[nc + nk :]
    carry_out, ys = outs[:nk], outs[nk:]
    tag = f"s{k.index}"
    lines = [f"  // kernel {k.index}: scan of length {length} calling {name}", "  {"]
    cl, a_names, b_names, sizes = _carry_buffers(prog, tag, carry_out, [c.buf for c in carry])
    lines += cl
    idx = f"({length - 1}LL - it)" if reverse else "it"
    x_ptrs = [f"{x.buf} + {idx} * {math.prod(x.shape[1:])}LL" for x in xs]
    y_ptrs = [f"{y.buf} + {idx} * {math.prod(y.shape[1:])}LL" for y in ys]
    n_args = nc + nk + len(xs) + len(bconsts) + nk + len(ys)
    lines += [
        f"    for (int64_t it = 0; it < {length}LL; ++it) {{",
        f"      void* sa[{max(n_args, 1)}] = {{"
        + _ptr_list([c.buf for c in consts] + a_names + x_ptrs + bconsts + b_names + y_ptrs)
        + "};",
        f"      if ({name}(sa)) return 1;",
    ]
    lines += [f"      fx::swap({a}, {b});" for a, b in zip(a_names, b_names)]
    lines += ["    }"]
    for n, a in zip(carry_out, a_names):
        lines.append(f"    fx_copy({n.buf}, {a}, {n.size}ULL * sizeof(*{a}));")
    lines += [f"    fx_free({a}, {sz});" for a, sz in zip(a_names + b_names, sizes + sizes)]
    lines += ["  }"]
    prog.body += lines


def _loop_while(prog, k: Kernel, group):
    ins, outs = group["ins"], group["outs"]
    ncc, nbc = group["cond_nconsts"], group["body_nconsts"]
    cname, cconsts = prog._sub(group["cond_jaxpr"])
    bname, bconsts = prog._sub(group["body_jaxpr"])
    cc, bc, carry = ins[:ncc], ins[ncc : ncc + nbc], ins[ncc + nbc :]
    tag = f"w{k.index}"
    lines = [f"  // kernel {k.index}: while_loop calling {cname} and {bname}", "  {"]
    cl, a_names, b_names, sizes = _carry_buffers(prog, tag, outs, [c.buf for c in carry])
    lines += cl
    lines += [
        f"    bool {tag}_flag = false;",
        "    while (true) {",
        f"      void* ca[{ncc + len(carry) + len(cconsts) + 1}] = {{"
        + _ptr_list([c.buf for c in cc] + a_names + cconsts + [f"&{tag}_flag"])
        + "};",
        f"      if ({cname}(ca)) return 1;",
        f"      if (!{tag}_flag) break;",
        f"      void* ba[{max(nbc + 2 * len(carry) + len(bconsts), 1)}] = {{"
        + _ptr_list([c.buf for c in bc] + a_names + bconsts + b_names)
        + "};",
        f"      if ({bname}(ba)) return 1;",
    ]
    lines += [f"      fx::swap({a}, {b});" for a, b in zip(a_names, b_names)]
    lines += ["    }"]
    for n, a in zip(outs, a_names):
        lines.append(f"    fx_copy({n.buf}, {a}, {n.size}ULL * sizeof(*{a}));")
    lines += [f"    fx_free({a}, {sz});" for a, sz in zip(a_names + b_names, sizes + sizes)]
    lines += ["  }"]
    prog.body += lines


def _loop_cond(prog, k: Kernel, group):
    ins, outs = group["ins"], group["outs"]
    branches = group["branches"]
    index, ops = ins[0], ins[1:]
    lines = [
        f"  // kernel {k.index}: cond with {len(branches)} branches",
        "  {",
        f"    const int64_t bi = fx_clamp((int64_t){index.buf}[0], 0, {len(branches) - 1}LL);",
    ]
    for b, br in enumerate(branches):
        name, consts = prog._sub(br)
        n_args = len(ops) + len(consts) + len(outs)
        lines += [
            f"    if (bi == {b}) {{",
            f"      void* a[{max(n_args, 1)}] = {{"
            + _ptr_list([o.buf for o in ops] + consts + [o.buf for o in outs])
            + "};",
            f"      if ({name}(a)) return 1;",
            "    }",
        ]
    lines.append("  }")
    prog.body += lines


def _host(prog, k: Kernel, group):
    """A host step (``functx/control/callbacks.py``): the Python dispatcher the runtime set with
    ``fx_set_host`` is called with the step's index and its operand and result buffers. It runs
    between kernels, on the calling thread (never inside an OpenMP region). A linear-algebra
    library step that ``lapack.py`` renders calls LAPACK itself instead, and a flash attention
    step is ``attention.py``'s C++."""
    if lapack.render(prog, k, group) or attention.render(prog, k, group):
        return
    index = len(prog.host_calls)
    outs = group["outs"][: group["n_out"]]
    prog.host_calls.append(
        (group["callback"], group["in_avals"], [(n.shape, n.dtype) for n in outs])
    )
    bufs = [n.buf for n in group["ins"]] + [n.buf for n in outs]
    prog.body += [
        f"  // kernel {k.index}: host step {index}",
        "  {",
        f"    void* h[{max(len(bufs), 1)}] = {{" + _ptr_list(bufs) + "};",
        f"    if (!fx_host || fx_host({index}LL, h)) return 1;",
        "  }",
    ]


# the loop kernels by their group's type (``lower.py``'s control-flow lowering)
LOOP_KINDS = {"scan": _loop_scan, "while": _loop_while, "cond": _loop_cond, "host": _host}
