"""Triton control-flow kernels: scan, while and cond loops on the host calling sub-programs (a
scan or while loop with a small body runs as one device-loop kernel instead: ``devloop.py``)."""

from __future__ import annotations

import math

from functx.lowering.schedule import Kernel
from functx.lowering.triton import devloop


def render(prog, k: Kernel):
    """A control-flow loop kernel, through ``LOOP_KINDS`` (its group's type)."""
    group = k.nodes[0].params["group"]
    LOOP_KINDS[group["type"]](prog, k, group)


def _view(n) -> str:
    """A flat view of ``n``'s buffer (arguments and outputs arrive shaped)."""
    return f"{n.buf}.view(-1)[:{n.size}]"


def _carries(prog, tag, inits):
    a = [f"{tag}a{m}" for m in range(len(inits))]
    b = [f"{tag}b{m}" for m in range(len(inits))]
    lines = [f"    {x} = {_view(n)}.clone()" for x, n in zip(a, inits)]
    lines += [f"    {y} = torch.empty_like({x})" for x, y in zip(a, b)]
    return lines, a, b


def _invariants(tag, consts):
    """Flat views of the loop's constants, made once before the loop: ``(lines, names)``."""
    names = [f"{tag}c{m}" for m in range(len(consts))]
    return [f"    {x} = {_view(n)}" for x, n in zip(names, consts)], names


def _loop_scan(prog, k: Kernel, group):
    why = devloop.render(prog, k, group)  # (None: one kernel with the loop inside)
    if why is None:
        return
    ins, outs = group["ins"], group["outs"]
    nc, nk, length = group["num_consts"], group["num_carry"], group["length"]
    name, bconsts = prog._sub(group["jaxpr"])
    consts, carry, xs = ins[:nc], ins[nc : nc + nk], ins[nc + nk :]
    carry_out, ys = outs[:nk], outs[nk:]
    tag = f"L{k.index}"
    lines, a, b = _carries(prog, tag, carry)
    more, cs = _invariants(tag, consts)
    lines += more
    i = f"{length - 1} - it" if group["reverse"] else "it"
    # each stacked xs / ys buffer as its ``length`` steps, views made by one ``unbind`` before
    # the loop (two slicing calls of torch per buffer and step cost more than the launches)
    steps = []
    for m, n in enumerate(xs + ys):
        sz = math.prod(n.shape[1:])
        steps.append(f"{tag}s{m}")
        lines.append(
            f"    {steps[-1]} = {n.buf}.view(-1)[:{length * sz}].view({length}, {sz}).unbind(0)"
        )
    at = [f"{s}[{i}]" for s in steps]
    args = cs + a + at[: len(xs)]
    res = b + at[len(xs) :]
    lines += [
        f"    for it in range({length}):",
        f"        {name}([{', '.join(args)}], [{', '.join(bconsts)}], [{', '.join(res)}])",
    ]
    if a:
        lines.append(f"        {', '.join(a + b)} = {', '.join(b + a)}")
    lines += [f"    {_view(n)}.copy_({x})" for n, x in zip(carry_out, a)]
    prog.host += [
        f"    # kernel {k.index}: scan of length {length} calling {name} (a host loop: {why})"
    ] + lines


def _loop_while(prog, k: Kernel, group):
    why = devloop.render(prog, k, group)  # (None: one kernel with the loop inside)
    if why is None:
        return
    ins, outs = group["ins"], group["outs"]
    ncc, nbc = group["cond_nconsts"], group["body_nconsts"]
    cname, cconsts = prog._sub(group["cond_jaxpr"])
    bname, bconsts = prog._sub(group["body_jaxpr"])
    cc, bc, carry = ins[:ncc], ins[ncc : ncc + nbc], ins[ncc + nbc :]
    tag = f"W{k.index}"
    lines, a, b = _carries(prog, tag, carry)
    more, cs = _invariants(tag, cc + bc)
    lines += more + [
        f"    {tag}flag = torch.empty(1, dtype=torch.bool, device=dev)",
        "    while True:",
        f"        {cname}([{', '.join(cs[:ncc] + a)}], [{', '.join(cconsts)}], [{tag}flag])",
        f"        if not bool({tag}flag.item()):",
        "            break",
        f"        {bname}([{', '.join(cs[ncc:] + a)}], [{', '.join(bconsts)}], [{', '.join(b)}])",
    ]
    if a:
        lines.append(f"        {', '.join(a + b)} = {', '.join(b + a)}")
    lines += [f"    {_view(n)}.copy_({x})" for n, x in zip(outs, a)]
    prog.host += [
        f"    # kernel {k.index}: while_loop calling {cname} and {bname} "
        f"(a host loop: {why}; the condition is read on the host each iteration)"
    ] + lines


def _loop_cond(prog, k: Kernel, group):
    ins, outs = group["ins"], group["outs"]
    branches = group["branches"]
    index, ops = ins[0], ins[1:]
    tag = f"C{k.index}"
    lines = [
        f"    # kernel {k.index}: cond with {len(branches)} branches",
        f"    {tag} = min(max(int({index.buf}.view(-1)[0].item()), 0), {len(branches) - 1})",
    ]
    for bi, br in enumerate(branches):
        name, consts = prog._sub(br)
        lines += [
            f"    {'if' if bi == 0 else 'elif'} {tag} == {bi}:",
            f"        {name}([{', '.join(_view(o) for o in ops)}], "
            f"[{', '.join(consts)}], [{', '.join(_view(o) for o in outs)}])",
        ]
    prog.host += lines


def _host(prog, k: Kernel, group):
    """A host step (``functx/control/callbacks.py``): the host code calls the module's
    ``_fx_host`` (the executable's dispatcher, set before each run) with the step's index and
    flat views of its operand and result buffers, between kernel launches."""
    root = prog.root
    if not root.host_calls:
        root.defs.append("_fx_host = None  # the host-step dispatcher (set by runtime.py)\n")
    index = len(root.host_calls)
    outs = group["outs"][: group["n_out"]]
    root.host_calls.append(
        (group["callback"], group["in_avals"], [(n.shape, n.dtype) for n in outs])
    )
    prog.host += [
        f"    # kernel {k.index}: host step {index}",
        f"    _fx_host({index}, [{', '.join(_view(n) for n in group['ins'])}], "
        f"[{', '.join(_view(n) for n in outs)}])",
    ]


# the loop kernels by their group's type (``lower.py``'s control-flow lowering)
LOOP_KINDS = {"scan": _loop_scan, "while": _loop_while, "cond": _loop_cond, "host": _host}
