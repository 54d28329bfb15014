"""Independent kernel launches in one launch: a pass over a host function's launch lines.

Consecutive launches of a host function (``prog.host``) that do not read or write what another
of them writes can run at the same time, so they can run as one launch: its programs are the
concatenated grids of the parts, and each program runs one program of its part (the part's
kernel, taking the program's index within its part as a parameter ``_fx_pid`` in place of
``tl.program_id(0)``: a name no generated kernel uses). That saves the launch (host time, and
the GPU's idle time between kernels) of each part after the first. The kernel least squares
step's loss (a full sum over the rows of ``K @ a``) and its gradient (one sum per column of
``K``, over the same rows) read the same vectors after ``K @ a`` and are two such launches; the
pointwise kernels of a step have their own, finer merge (``pointwise._horizontal``), which this
pass may then join with others.

It runs after the kernels are rendered and before the intermediates are laid out
(``TritonProgram.function``), so the memory plan sees one statement naming every part's buffers
(none of them then shares bytes with another). Which launches join (all of it, else the launch
stays as it was):

* a grid of one axis, given as a number, of at most ``MAX_PROGRAMS`` programs for the whole
  group, and at most ``MAX_PARTS`` parts: small launches, whose cost is mostly the launch;
* the same number of warps (the parts' kernels then compile as they did alone), unless
  ``SAME_WARPS`` is off (the group takes the most);
* a kernel of its own site only, whose arguments are its parameters' buffers as plain names,
  that uses no second grid axis, no ``tl.dot`` (a matrix product's tiles would size every
  program's shared memory and registers) and does not call ``tl.num_programs``;
* no hazard between parts: a buffer that one part may write (any use of it but a ``tl.load``
  from it) is not among another part's arguments, with the names the host code binds to other
  buffers (``a = b`` views) resolved first; no argument is a name bound more than once (a
  loop's carries). Buffers that only the shared scratch stands for (stored, never read:
  ``runtime.scratch``) have names of their own here and never conflict.

``COMBINE = False`` turns the pass off.
"""

from __future__ import annotations

import re

COMBINE = True
MAX_PARTS = 8
MAX_PROGRAMS = 1024
SAME_WARPS = True

_LAUNCH = re.compile(r"    (_L\d+)\((\d+), 1, (\w+(?:, \w+)*)\)")
_SITE = re.compile(r"(_L\d+) = _fx_site\((\w+), (\d+)\)\n")
_ALIAS = re.compile(r"    (\w+) = (\w+)\b")
_ASSIGN = re.compile(r"\s+((?:\w+, )*\w+),? = ")
_BARRED = ("tl.program_id(1)", "tl.program_id(2)", "tl.num_programs", "tl.dot(")


class _Part:
    """One launch line: its site, grid, arguments (``names``: the buffers they stand for),
    kernel, warps, and the buffers it may write."""

    __slots__ = ("site", "grid", "args", "names", "kernel", "warps", "params", "body", "written")

    def __init__(self, site, grid, args, kernel, warps, params, body, roots):
        self.site, self.grid, self.args = site, grid, args
        self.kernel, self.warps, self.params, self.body = kernel, warps, params, body
        self.names = {roots.get(a, a) for a in args}
        self.written = {roots.get(a, a) for p, a in zip(params, args) if not _only_loaded(p, body)}

    def conflicts(self, other) -> bool:
        return bool(self.written & other.names or other.written & self.names)


def _only_loaded(param: str, body: str) -> bool:
    """Whether every use of ``param`` in a kernel's ``body`` is a load from it."""
    uses = len(re.findall(rf"\b{param}\b", body))
    return uses == len(re.findall(rf"tl\.load\({param}\b", body))


def _sites(defs) -> tuple:
    """``{site: (kernel name, warps)}`` and how many sites launch each kernel."""
    out, count = {}, {}
    for d in defs:
        m = _SITE.fullmatch(d)
        if m is not None:
            out[m.group(1)] = (m.group(2), int(m.group(3)))
            count[m.group(2)] = count.get(m.group(2), 0) + 1
    return out, count


def _part(prog, line, sites, count, roots):
    """The ``_Part`` of host line ``line``, or None where it cannot join a group."""
    m = _LAUNCH.fullmatch(line)
    if m is None or m.group(1) not in sites:
        return None
    site, grid, args = m.group(1), int(m.group(2)), m.group(3).split(", ")
    kernel, warps = sites[site]
    if count[kernel] != 1:
        return None
    head = f"@triton.jit\ndef {kernel}("
    d = next((d for d in prog.defs if d.startswith(head)), None)
    if d is None:
        return None
    sig, body = d[len(head) :].split("\n", 1)
    params = sig[: -len("):")].split(", ") if sig.endswith("):") else []
    if (
        params != [p for p in params if p.isidentifier()]
        or len(params) != len(args)
        or any(b in body for b in _BARRED)
    ):
        return None
    return _Part(site, grid, args, kernel, warps, params, body, roots)


def _aliases(host) -> tuple:
    """``{name: the buffer it stands for}`` for the host code's ``a = b...`` bindings, and the
    names bound more than once (a loop's carries: which buffer they name depends on where)."""
    roots: dict = {}
    bound: dict = {}
    for line in host:
        for text in line.split("\n"):
            m = _ASSIGN.match(text)
            for name in m.group(1).split(", ") if m else ():
                bound[name] = bound.get(name, 0) + 1
        m = _ALIAS.match(line)
        if m is not None and m.group(2) != "torch" and not m.group(2).startswith("_fx"):
            roots[m.group(1)] = roots.get(m.group(2), m.group(2))
    return roots, {name for name, n in bound.items() if n > 1}


def launches(prog, host: list[str]) -> list[str]:
    """``host`` with each group of consecutive independent launches made one launch (the
    kernels' definitions in ``prog.defs`` changed to match; see the module docstring)."""
    if not COMBINE:
        return host
    sites, count = _sites(prog.defs)
    roots, rebound = _aliases(host)
    parts = [_part(prog, line, sites, count, roots) for line in host]
    parts = [None if p is None or rebound & set(p.args) else p for p in parts]
    out: list[str] = []
    i = 0
    while i < len(host):
        group = [parts[i]] if parts[i] is not None else []
        for p in parts[i + 1 :] if group else ():
            if (
                p is None
                or len(group) >= MAX_PARTS
                or sum(q.grid for q in group) + p.grid > MAX_PROGRAMS
                or (SAME_WARPS and p.warps != group[0].warps)
                or any(p.conflicts(q) for q in group)
            ):
                break
            group.append(p)
        if len(group) < 2:
            out.append(host[i])
            i += 1
            continue
        prog.host = out  # (``_launch`` appends the group's launch here)
        _one_launch(prog, group)
        i += len(group)
    prog.host = out
    return out


def _one_launch(prog, group) -> None:
    """Define and launch the kernel running ``group``'s parts: each part's kernel takes its
    program index as ``_fx_pid`` and no longer has a site of its own."""
    drop = {p.site for p in group}
    defs = []
    for d in prog.defs:
        m = _SITE.fullmatch(d)
        if m is not None and m.group(1) in drop:
            continue
        p = next((p for p in group if d.startswith(f"@triton.jit\ndef {p.kernel}(")), None)
        if p is not None:
            d = f"@triton.jit\ndef {p.kernel}(_fx_pid, {', '.join(p.params)}):\n"
            d += p.body.replace("tl.program_id(0)", "_fx_pid")
        defs.append(d)
    prog.defs[:] = defs
    args: dict = {}
    body = ["    _fx_pid = tl.program_id(0)"]
    start = 0
    for n, p in enumerate(group):
        args.update(dict.fromkeys(p.args))
        cond = "if" if n == 0 else "elif"
        test = f"    {cond} _fx_pid < {start + p.grid}:" if n < len(group) - 1 else "    else:"
        at = "_fx_pid" if start == 0 else f"_fx_pid - {start}"
        body += [test, f"        {p.kernel}({at}, {', '.join(p.args)})"]
        start += p.grid
    name = "_with_".join(p.kernel for p in group)
    spans = ", ".join(f"{p.kernel} {p.grid}" for p in group)
    prog._define(name, list(args), body, f"{len(group)} independent launches in one: {spans}")
    prog._launch(name, start, list(args), max(p.warps for p in group))


__all__ = ["COMBINE", "MAX_PARTS", "MAX_PROGRAMS", "SAME_WARPS", "launches"]
