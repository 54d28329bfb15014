"""Block sizes and warps of the Triton kernels (``Blocks``, ``reduce_plan``, ``scan_plan``), chosen
from sweeps on an H100 (``benchmarks/gpu.py --sweep``); they are constants of the generated source,
so they are cached with it."""

from __future__ import annotations

from dataclasses import dataclass

from functx.lowering.triton.emit import _next_pow2


@dataclass(frozen=True)
class Blocks:
    """Block-size limits (powers of two) and code-generation choices: the heuristic table of
    ``reduce_plan``/``scan_plan`` below picks sizes within them. Small limits make tests cover the
    looped variants and multi-chunk scans on tiny shapes."""

    pointwise: int = 1024  # elements per program of a pointwise kernel
    pointwise_warps: int = 4
    reduce_inner: int = 4096  # reduced elements per chunk of a looped reduction
    persistent: int = 8192  # rows of up to this many 32-bit elements stay in registers
    scan: int = 1024  # scan positions per chunk
    elems: int = 4096  # elements per block of a reduction or scan (rows x chunk)
    strided_rows: int = 64  # rows per block when the rows, not the reduced axes, are contiguous
    # ... down to this many, to hold a whole short reduced extent in one chunk (a column sum of
    # 128 rows, a batch's bias gradient: one kernel, no second launch to fold split partials)
    strided_min_rows: int = 32
    strided_scan_lanes: int = 32  # lanes per block of a scan along a non-contiguous axis
    min_programs: int = 512  # split single-pass reductions with fewer blocks of rows than this
    # a reduction along contiguous axes whose rows would fit in fewer blocks than this spreads
    # them over this many, of 16 rows at least (the MLP's 128x10 log-softmax: 8 blocks, not 1)
    row_blocks: int = 8
    atomic_scatter_add: bool = True  # scatter_add with atomics (else in order, deterministic)
    int64_index: bool = False  # index arithmetic in int64 (automatic for 2**31 elements or more)
    welford: bool = True  # looped mean/variance pairs in one pass (Chan's chunked Welford update)
    reduce_warps: int = 0  # warps of a reduction kernel (0: about 16 elements per thread)
    # a pointwise kernel writing at least this many bytes (more than the L2 cache holds) loads
    # the inputs it reuses (broadcast ones, of at most 1/8 of that) with evict_last and stores
    # with evict_first, so that its stream of stores does not push them out of L2: on an H100,
    # the per-sample-gradient outer products went from 3.22 to 3.29 TB/s (0: never)
    stream_bytes: int = 64 << 20


def _warps(elems: int) -> int:
    """Warps for a block of ``elems`` elements: about 32 elements per thread, 2 to 16 warps (on
    an H100, 4 warps for rows of 4096 float32 beat 8 and 16: argmax + logsumexp 0.24 ms against
    0.28 and 0.37; layer norm and softmax were the same with 4, 8 or 16)."""
    return max(2, min(16, elems // 1024))


def reduce_plan(contiguous: bool, n_rows: int, n_inner: int, itemsize: int, blocks: Blocks):
    """The block shape of a reduction: ``(rows per block, chunk, warps)``. A row that fits
    ``blocks.persistent`` (32-bit elements; half as many of 64-bit ones) is one chunk, held in
    registers across all the kernel's passes (the *persistent* variant); longer rows loop over
    chunks of ``blocks.reduce_inner`` (the *looped* variant). When the rows, not the reduced
    axes, are contiguous, a block is ``strided_rows`` neighbouring rows by a short chunk so that
    its loads are coalesced; when fewer rows (down to ``strided_min_rows``) hold the whole
    reduced extent, the block takes that many, in one chunk. Contiguous rows that would fit in
    fewer than ``row_blocks`` blocks are spread over that many (16 rows a block at least): on an
    H100 the MLP step's 128x10 log-softmax went from 4.2 to 1.4 us, its cross-entropy gradient
    from 2.3 to 1.4 (one block of 128 rows before, on one SM)."""
    scale = max(1, itemsize // 4)
    if contiguous:
        whole = _next_pow2(max(n_inner, 1))
        if whole <= max(1, blocks.persistent // scale):
            ib = whole
        else:
            ib = max(1, min(blocks.reduce_inner // scale, whole))
        rb = min(_next_pow2(n_rows), max(1, blocks.elems // ib))
        rb = min(rb, max(16, _next_pow2(n_rows) // max(1, blocks.row_blocks)))
    else:
        rb = min(_next_pow2(n_rows), blocks.strided_rows)
        whole = min(_next_pow2(max(n_inner, 1)), blocks.reduce_inner)
        ib = min(whole, max(1, blocks.elems // rb))
        if ib < whole and whole * blocks.strided_min_rows <= blocks.elems:
            ib, rb = whole, blocks.elems // whole
    return rb, ib, blocks.reduce_warps or _warps(rb * ib)


def scan_plan(n: int, n_lanes: int, strided: bool, blocks: Blocks):
    """The block shape of a scan: ``(lanes per block, chunk of positions, warps)``. Along the
    contiguous axis a chunk is long and a block holds few lanes; along a strided axis a block is
    ``strided_scan_lanes`` neighbouring (coalesced) lanes by a short chunk."""
    if strided:
        lb = min(_next_pow2(n_lanes), blocks.strided_scan_lanes)
        sb = min(_next_pow2(n), blocks.scan, max(1, blocks.elems // 2 // lb))
    else:
        sb = min(_next_pow2(n), blocks.scan)
        lb = min(_next_pow2(n_lanes), max(1, blocks.elems // sb))
    return lb, sb, 8 if lb * sb >= 4096 else 4
