"""The memory plan of a generated Triton host function (``program.py``): where its intermediate
buffers live.

Without a plan every intermediate is a ``torch.empty`` at the top of the host function and lives
until it returns, so the program's peak is the sum of its intermediates. With one, the host
function allocates a single byte *arena* and binds each intermediate to a slice of it (a dtype
view of the ``uint8`` arena); two intermediates share bytes only when their lifetimes are
disjoint.

* **Lifetimes** come from the host function's statements, in order: a buffer is live from the
  first statement that names it (its writer: a launch, a matrix product, a host step, a copy) to
  the last one (its last reader). A statement is a line of the function's body with everything
  indented under it (a host loop over a sub-program is one statement, so the buffers it names
  are live for the whole loop); comments name nothing. A name bound by an assignment
  (``t5 = t3``: a reshape that reads another buffer in place; a loop's carry cloned from one)
  stands for the buffers its right-hand side names, so reading it extends their lifetimes.
  Inputs, outputs and constants are never in the arena. Kernels run in statement order on one
  stream, so a slice written after another buffer's last reader was launched is written after
  that reader ran. CUDA-graph replays keep these guarantees: a capture records the arena once
  (in the graph's memory pool) and each replay runs the same statements in the same order;
  nothing in the arena outlives a call (outputs are never planned).
* **Offsets**: greedy by size (the largest buffer first, each at the lowest offset where it
  overlaps no placed buffer whose lifetime meets its own), every slice aligned to ``ALIGN``
  bytes (Triton's kernels are specialised for 16-byte aligned pointers; cuBLAS prefers 256).

* **Overlays**: a pointwise kernel storing one buffer that reads an input only at the element it
  stores (``tl.load(x + flat)``, the same bytes per element), where that kernel is the input's
  last reader, may write its output over the input at the input's very offset: each element is
  loaded before its own store, and no other element of the input is read there (``program.py``
  finds these kernels; the GELU gradient writes over the MLP's pre-activation in the GPT step).

``plan(sizes, statements, overlays)`` returns a ``MemoryPlan``; ``MemoryPlan.overlaps()`` lists
pairs of buffers that are live together and share bytes other than by an overlay (none: the
tests check it). The GPT block's training step (B=8 T=1024 d=768, float32): 964 MiB of
intermediates as separate allocations, an arena of 432 MiB (the most bytes live at one statement,
so no fragmentation); the step's peak went from 1219 MiB (H100, 12:23) to 768 MiB (H200, 14:03,
before the overlays), under JAX's 1451 and torch.compile's 1026 there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

ALIGN = 256  # bytes: where each slice of the arena starts
MAX_BUFFERS = 3000  # more intermediates than this: no plan (greedy placement is quadratic)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGN = re.compile(r"^ {4}([A-Za-z_][A-Za-z0-9_]*) = (?!=)(.*)$")
_CONTINUES = ("elif ", "else:", "except", "finally:")


@dataclass(frozen=True)
class Slot:
    """One planned buffer: ``nbytes`` at ``offset`` of the arena, live over the host
    statements ``first`` to ``last`` (inclusive)."""

    name: str
    nbytes: int
    offset: int
    first: int
    last: int


@dataclass
class MemoryPlan:
    """The arena of one host function: ``slots`` by name, ``size`` its bytes (the planned peak
    of the intermediates), ``total`` what they take as separate allocations (the sum),
    ``shared`` the pairs (frozensets of two names) an output overlays at its input's offset."""

    slots: dict
    size: int
    total: int
    shared: set = field(default_factory=set)  # pairs overlaid on purpose (``plan``'s overlays)

    def overlaps(self) -> list[tuple[str, str]]:
        """Pairs of buffers that are live at once and share bytes (a correct plan has none)."""
        out = []
        slots = sorted(self.slots.values(), key=lambda s: s.offset)
        for i, a in enumerate(slots):
            for b in slots[i + 1 :]:
                if b.offset >= a.offset + a.nbytes:
                    break
                if a.first <= b.last and b.first <= a.last:
                    if a.offset != b.offset or frozenset((a.name, b.name)) not in self.shared:
                        out.append((a.name, b.name))
        return out

    def summary(self) -> str:
        pct = 100 * self.size / self.total if self.total else 100
        return (
            f"memory plan: {len(self.slots)} intermediates in one arena of {self.size:,} bytes "
            f"({pct:.0f}% of the {self.total:,} bytes they take as separate allocations)"
        )


def statements(lines: list[str]) -> list[str]:
    """The host function body's statements: each line at the body's indent (4 spaces) with the
    lines indented under it (and an ``elif``/``else`` of its ``if``); comment lines dropped."""
    out: list[list[str]] = []
    for text in lines:
        for line in text.split("\n"):
            body = line.strip()
            if not body or body.startswith("#"):
                continue
            top = line.startswith("    ") and not line.startswith("     ")
            if (top and not body.startswith(_CONTINUES)) or not out:
                out.append([line])
            else:
                out[-1].append(line)
    return ["\n".join(s) for s in out]


def _names(stmt: str) -> set:
    return set(_NAME.findall("\n".join(ln.split("#", 1)[0] for ln in stmt.split("\n"))))


def lifetimes(stmts: list[str], buffers) -> dict:
    """``{buffer: (first, last)}``: the statements (indices) that name each of ``buffers``,
    directly or through a name assigned from them."""
    buffers = set(buffers)
    via: dict = {}  # a name bound by an assignment -> the buffers it stands for
    live: dict = {}
    for i, stmt in enumerate(stmts):
        names = _names(stmt)
        used = set()
        for n in names:
            if n in buffers:
                used.add(n)
            used |= via.get(n, set())
        m = _ASSIGN.match(stmt) if "\n" not in stmt else None
        if m is not None:
            target = m.group(1)
            src = set()
            for n in _names(m.group(2)):
                if n in buffers:
                    src.add(n)
                src |= via.get(n, set())
            via[target] = via.get(target, set()) | src
        for b in used:
            first, _ = live.get(b, (i, i))
            live[b] = (first, i)
    return live


def _round(n: int) -> int:
    return -(-max(n, 1) // ALIGN) * ALIGN


def _overlaid(a: Slot, b: Slot, overlays: dict, stmts: list[str]) -> bool:
    """Whether ``b`` may take ``a``'s bytes exactly: ``b`` is written by the kernel of an
    ``overlays`` entry that reads ``a`` in order, at ``a``'s last statement."""
    site, inputs = overlays.get(b.name, (None, ()))
    return a.name in inputs and a.last == b.first and stmts[b.first].lstrip().startswith(site + "(")


def plan(sizes: dict, stmts: list[str], overlays: dict | None = None) -> MemoryPlan:
    """The arena for buffers ``sizes`` (``{name: bytes}``) of a host function whose body is
    ``stmts`` (``statements``). A buffer no statement names is live at statement 0 only.

    ``overlays`` (``{output: (launch site, inputs)}``): an output of a pointwise kernel (the
    statement calling ``launch site``) that reads each of ``inputs`` only at the element it
    stores; where such an input's last statement is that kernel, the output may start at the
    input's very offset (each element is read before its own store overwrites it)."""
    overlays = overlays or {}
    live = lifetimes(stmts, sizes)
    order = sorted(sizes, key=lambda b: (-_round(sizes[b]), live.get(b, (0, 0)), b))
    placed: list[Slot] = []
    shared: set = set()
    end = 0
    for b in order:
        nb = _round(sizes[b])
        first, last = live.get(b, (0, 0))
        me = Slot(b, sizes[b], 0, first, last)
        meets = [s for s in placed if s.first <= last and first <= s.last]
        partners = [
            s
            for s in meets
            if _round(s.nbytes) >= nb
            and (_overlaid(s, me, overlays, stmts) or _overlaid(me, s, overlays, stmts))
        ]
        off = None
        for p in partners:  # (the exact bytes of a buffer read in order by its writer)
            if not any(
                s is not p and s.offset < p.offset + nb and p.offset < s.offset + _round(s.nbytes)
                for s in meets
            ):
                off = p.offset
                shared.add(frozenset((p.name, b)))
                break
        if off is None:
            off = 0
            for lo, hi in sorted((s.offset, s.offset + _round(s.nbytes)) for s in meets):
                if off + nb <= lo:
                    break
                off = max(off, hi)
        placed.append(Slot(b, sizes[b], off, first, last))
        end = max(end, off + nb)
    slots = {s.name: s for s in sorted(placed, key=lambda s: (s.first, s.name))}
    return MemoryPlan(slots, end, sum(_round(n) for n in sizes.values()), shared)


__all__ = ["ALIGN", "MAX_BUFFERS", "Slot", "MemoryPlan", "statements", "lifetimes", "plan"]
