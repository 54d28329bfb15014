"""Triton kernels for the linear-algebra library steps of small matrices on a GPU: Cholesky, the
triangular solves, LU and the symmetric eigensolver, one program per matrix with the matrix in
registers.

A library step (``functx/control/linalg.py``'s ``LibraryStep``) of the Triton backend runs
``torch.linalg`` on the program's tensors (cuSOLVER/cuBLAS). For a batch of small matrices that
is slow: ``torch.linalg.eigh`` of 64 64x64 float32 matrices runs one ``syevd`` per matrix (49.6 ms
on an H200 where JAX took 0.387), and the batched ``potrf``/``trsm`` behind cholesky + cho_solve
took 0.366 ms (JAX 0.148). This module fills ``linalg.GPU_KERNELS`` (the table the step owns):
for real ``float32``/``float64`` operands of at most ``MAX_N`` rows, the step launches one of
these kernels instead, and only queues work on the current stream, so the program keeps its CUDA
graph (``LibraryStep.graph_safe``). Real operands larger than that take runners that only queue
work too: triangular solves the blocked kernels below, ``cholesky`` ``torch.linalg.cholesky_ex``
writing into the step's output (``_cuda_only``), and ``eigh`` above ``EIGH_JACOBI_MAX_N`` rows
(any size) cuSOLVER's eigensolvers called directly (``cusolver.py``: torch runs one Jacobi solve
per matrix there). Complex operands, LU above ``MAX_N`` and subsets of eigenvalues keep
``torch.linalg``.

Every kernel runs one program per matrix (``grid = batch``; the solves add a grid axis over
blocks of right-hand-side columns) on a ``BN x BN`` tile, ``BN`` the next power of two of ``n``,
the padding masked (zeros that no step reads as data):

* ``cholesky`` (right-looking): for each column ``j``, the column is picked out of the tile by a
  masked row reduction, ``l = a[:, j] / sqrt(a[j, j])`` below the diagonal becomes column ``j``
  and the trailing matrix loses ``l l^T`` (in place: ``l`` is zero left of ``j``). A pivot that
  is not positive (or NaN) makes the whole factor NaN, as JAX's kernels give. The upper factor
  (``_UpperCholeskyStep``) reads and writes through swapped strides.
* ``triangular_solve``: substitution, forward for a lower operator and backward for an upper
  one, on ``op(A) X = B`` with the left/right side and the transpose folded into the strides the
  operator is read with (``X A = B`` is ``A^T X^T = B^T``); each solved row of ``B``'s tile
  becomes the row of ``X``. Only ``B`` is a register tile: the operator's columns (past the
  diagonal, as ``(BN, 1)`` tiles in ``B``'s layout, so no step converts a layout) and the
  reciprocals of its diagonal (scalar loads: no step picks the diagonal out of a column) come
  from memory two steps ahead of their use. A step is one row reduction and one update of the
  rows past the diagonal only (session 33's kernel updated every row, the solved ones by zero
  times ``x_j``: a NaN in the operator turned the rows solved before it into NaNs, where
  LAPACK's substitution, JAX's CPU result, leaves them).
  (H100, 19:36 UTC, one right-hand side: 10.4 us a solve of 16 64x64s, session 32's kernel
  31 us in the Newton step; 19:53 UTC: the Newton step's six solves, two of 64 right-hand
  sides, 14.7 us on average, were 31.)
* blocked ``triangular_solve`` (operators above ``MAX_N`` rows; ``_blocked_trisolve``): two
  launches. ``trinv`` inverts every diagonal block of ``SOLVE_BLOCK`` rows at once (a program
  per block and per ``RHS_BLOCK`` columns of it: the substitution above on the identity's
  columns, from the program's first column) into a workspace; ``trisolve_blocks`` then solves
  block after block, ``x_i = inv(A_ii) (b_i - sum_{j<i} A_ij x_j)``, by ``tl.dot`` products in
  IEEE float32 (no TF32), a program per ``SOLVE_RHS_BLOCK`` right-hand-side columns, reading
  the ``x_j`` back from its own output. An upper operator is the lower one with rows and
  columns in reverse order: negative strides from its last entry, ``B`` and ``X`` likewise.
  The substitution's 512 dependent steps become 64 (in parallel, one launch) plus 8 block
  steps. NaNs land where substitution (LAPACK's, JAX's) puts them: an operator NaN spreads as
  there, and where a result is not finite the program solves again, its rows above a column's
  first NaN or infinity of a block's right-hand side from the finite rows only (the product
  with the block's inverse would multiply the NaN by its zeros). (An infinity in ``B`` may give
  NaNs where substitution gives infinities past it.) Float64 products need ``out_dtype``.
  (torch's ``solve_triangular`` of row-major operands, session 33's runner and the
  ``BLOCKED_SOLVE = False`` form, poses the left solve as cuBLAS's right-side trsm of the
  transposed system: 8 launches of an ~18 us kernel a solve at 512 rows, 0.29 ms of the
  cholesky+solve's 0.56; JAX's left-side trsm took 0.20 ms for both solves.)
* ``lu`` (square operands): partial pivoting column by column, the pivot the first largest
  magnitude by position (LAPACK's ``idamax``; NaNs passed over, a column of NaNs keeps its
  row). Rows never move: a swap exchanges two rows' positions, and the factors are stored by
  position at the end (the permutation too). Each step takes the next column out of the tile
  before its update, so the pivot search of the next step waits only for a vector update;
  the column below the pivot is scaled by the pivot's reciprocal (``getf2``'s rule: divided
  where that overflows) and only the trailing matrix is updated. A zero pivot leaves its
  column (a singular matrix keeps its factors, as ``getrf`` does). The pivots and the
  permutation are 0-based ``int32``. ``jnp.linalg.solve`` is this and two triangular solves.
  (H100, 16 64x64s: session 32's kernel 115 us, this one 71 us at 19:36 UTC dividing each
  row, 60 us at 19:53 with the reciprocal.)
* ``eigh``: cyclic Jacobi in parallel rounds. Round ``m`` (``1 <= m < BN``) rotates every pair
  ``(i, i XOR m)`` at once: these ``BN - 1`` perfect matchings cover each pair exactly once, so
  a round sweep is a cyclic sweep. The rotation of each pair is Rutishauser's
  (``theta = (a_qq - a_pp) / (2 a_pq)``, ``t = sign(theta) / (|theta| + sqrt(theta^2 + 1))``), its
  pair entries set to zero, the diagonal kept apart (``a_pp - t a_pq``, ``a_qq + t a_pq``: the
  eigenvalues). Both indices of a pair take ``a_pq`` from the row of ``p``: on a GPU the products
  contract into FMAs that round ``a[p, q]`` and ``a[q, p]`` differently, and near convergence
  the two could even differ in sign, giving the pair two different rotations (eigenvectors
  orthogonal to only 1e-2 in float32). The rows and columns of the partner come from
  ``tl.gather`` (register shuffles). Sweeps run while the off-diagonal Frobenius norm exceeds
  ``eps`` times the matrix's (cuSOLVER's ``syevj`` test, with its default tolerance: machine
  epsilon), at most ``MAX_SWEEPS``. Padded rows and columns stay zero (their rotations are the
  identity). Eigenvalues come out ascending (a rank by comparison, ties by index), the eigenvectors
  orthonormal columns in the same order (signs are Jacobi's own: JAX's are not fixed either).

Measured (benchmarks/gpu_libsteps.py --explore, H100, 19:53 UTC, float32, functx / JAX ms;
the solves 8 right-hand-side columns a program, 4 now): cholesky + cho_solve of 64 64x64 0.117 /
0.275, 1024 64x64 0.194 / 0.268, one 512x512 0.560 / 0.434, 16 512x512 1.142 / 1.568; solve
(8 right-hand sides) of 16 64x64 0.137 / 0.218 (4 a program: 0.092), of 1024 64x64 0.352 /
0.462 (0.334), one right-hand side 0.085 / 0.190 and 0.297 / 0.462; eigh 64 32x32 0.132 /
0.132 (syevjBatched), 1024 32x32 0.514 / 0.512, 64 64x64 0.359 / 0.394; the Newton step
(benchmarks/workloads.py) 0.252 / 0.328. The single 512x512 cholesky+solve lost its gap to
JAX with the blocked solve (``benchmarks/gpu_libsteps.py --chol``, H100, 21:40 UTC, functx /
JAX ms): one 512x512 0.363 (1 stage; the checks ran at 3: 0.395) / 0.433 (torch's right-side
trsm: 0.559), float64 0.439 / 0.594, 16 512x512 0.851 / 1.441; GP 2.267 / 2.954; 64 64x64
0.083 / 0.352, 1024 64x64 0.180 / 0.280 (4 columns a program; 8: 0.107, 0.187 in the 21:12
run); the Newton step 0.237 / 0.350. Its two solves: 61.7 us of GPU time each at 1 stage
(trinv 14.9, trisolve_blocks 46.5), where JAX's trsm kernels take 108 and 2 x 47 plus a 31 us
GEMM for both; the potrf is the same call (168 us in both). A program of one such solve has no
CUDA graph (a graph-safe step counts as 3 launches, fewer than the runtime's 4): 0.143 ms
against JAX's 0.120 for 8 right-hand sides, 0.078 with the graph forced.
"""

from __future__ import annotations

import weakref

import numpy as np

from functx import config
from functx.control import linalg
from functx.lowering.triton import cusolver, interpreter

#: the primitives whose library steps use the kernels: those that passed the GPU check of
#: benchmarks/gpu_libsteps.py (H100, 14:52 UTC: all 96 checks; 17:24 UTC: the in-place Cholesky
#: kernel, cuSOLVER's batched eigh and the runners above 64 rows; the interpreter's float rounding
#: is not the GPU's, so a new kernel joins only after that check)
ENABLED: set = {"cholesky", "triangular_solve", "lu", "eigh"}
MAX_N = 64  # the largest matrices the kernels take; larger ones keep torch.linalg
#: the largest matrices whose eigh runs the Jacobi kernel where cuSOLVER can be called
#: (``cusolver.py``; larger ones, up to ``MAX_N``, where it cannot: Triton's interpreter)
EIGH_JACOBI_MAX_N = 16
CUSOLVER_EIGH = True  # eigh above EIGH_JACOBI_MAX_N rows through cusolver.py where it can
#: batches of at most ``cusolver.SYEVJ_MAX_N`` rows through cuSOLVER's batched Jacobi solver
#: (``syevjBatched``, as JAX and torch choose there), larger ones ``XsyevBatched``
CUSOLVER_SYEVJ = True
#: cholesky above MAX_N (and triangular_solve there without BLOCKED_SOLVE): the graph-safe
#: torch.linalg runners
LIBRARY_RUNNERS = True
MAX_SWEEPS = 20  # Jacobi sweeps at most (float64 64x64 needs about 8)
#: right-hand-side columns per program of the solves: few, for more programs (the solves are
#: latency-bound; H100, 19:53 UTC, ms with 4 / 8 / 32 columns a program: solve of 16 64x64s with
#: 8 right-hand sides 0.092 / 0.137 / 0.137, with 64 0.089 / 0.097 / 0.155, of 1024 64x64s with
#: 8 0.334 / 0.352 / 0.353; the Newton step 0.256 / 0.252 / 0.388)
RHS_BLOCK = 4
#: triangular solves above ``MAX_N`` rows by blocks (``trinv`` + ``trisolve_blocks``) rather
#: than torch.linalg (cuBLAS's trsm); rows a diagonal block, right-hand-side columns a program
#: (at least 16: ``tl.dot``'s), warps, software-pipeline stages, and the operator's columns a
#: product of the blocked substitution (None: a block). H100, 21:40 UTC, GPU us of one solve of
#: a 512x512 with 8 right-hand sides (trinv + trisolve_blocks): 3 stages (Triton's default)
#: 77.1 (16.0 + 61.6), 2 stages 68.1, 1 stage 61.7 (14.9 + 46.5); 8 warps 71.3; products of
#: 128 columns 78.2, of 256 (8 warps) 88.8; tf32x3 products 78.1; blocks of 32 rows (products
#: of 256) 137.3; of 128 rows (run 1: cholesky+solve 0.452 ms against 0.359 with 64)
BLOCKED_SOLVE = True
SOLVE_BLOCK = 64
SOLVE_RHS_BLOCK = 16
SOLVE_WARPS = 4
SOLVE_STAGES = 1
SOLVE_K = None
#: warps per program by tile size ``BN`` (the eigensolver's float64 tiles take more registers)
#: (H100, cholesky + cho_solve of 64x64 float32: 4 warps best for 64 matrices, 0.100 ms; 2 for
#: 1024, 0.284 ms against 0.366 with 4: ``_warps``)
WARPS = {4: 1, 8: 1, 16: 1, 32: 2, 64: 4, 128: 8}
#: the eigensolver's warps per program (H100, 64 float32 matrices, ms, 1/2/4/8 warps: 16x16
#: 0.264/0.115/0.071/0.055, 32x32 8.86/1.08/0.536/0.321, 64x64 85.4/7.39/2.86/1.67)
EIGH_WARPS = {4: 4, 8: 4, 16: 8, 32: 8, 64: 8, 128: 8}

_KERNELS: dict = {}  # interpreting? -> {name: @triton.jit kernel} (triton is optional)
_CHOICES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # step -> runner or None

# the kernels' helpers (module globals: kernels resolve them by name); reductions combine with
# these rather than call tl.sum, which Triton's interpreter cannot run unless TRITON_INTERPRET was
# set before triton was first imported (as in prelude.py)
_add = _sqrt = _div = _max = _min = _beyond = _recip = _substitute = _solve_block = None


def _kernels():
    """The kernels, built on first use in each mode (``triton.jit`` makes interpreter functions
    when ``TRITON_INTERPRET=1`` was set by then)."""
    global _add, _sqrt, _div, _max, _min, _beyond, _recip, _substitute, _solve_block
    interp = config.triton_interpret()
    if interp in _KERNELS:
        return _KERNELS[interp]
    import triton
    import triton.language as tl

    if interp:
        interpreter.index_scalars()  # (loops over ``n``)

    @triton.jit
    def add(a, b):
        return a + b

    @triton.jit
    def sqrt(x):  # (IEEE rounding: tl.sqrt and / are approximate in float32)
        if x.dtype == tl.float32:
            return tl.sqrt_rn(x)
        return tl.sqrt(x)

    @triton.jit
    def div(a, b):
        if a.dtype == tl.float32:
            return tl.div_rn(a, b)
        return a / b

    @triton.jit
    def maximum(a, b):
        return tl.maximum(a, b)

    @triton.jit
    def minimum(a, b):
        return tl.minimum(a, b)

    @triton.jit
    def beyond(r, j, n, LOWER):  # the rows of column j strictly past the diagonal
        if LOWER:
            return (r > j) & (r < n)
        return r < j

    @triton.jit
    def recip(base, j, n, stride, UNIT):  # 1 / a[j, j] (1 for a unit diagonal)
        if UNIT:
            return tl.full([1, 1], 1.0, base.dtype.element_ty)
        inb = (j >= 0) & (j < n)
        d = tl.load(base + tl.where(inb, j, 0) * stride, mask=inb, other=1.0)
        return _div(tl.full([1, 1], 1.0, d.dtype), d)

    _add, _sqrt, _div, _max, _min = add, sqrt, div, maximum, minimum
    _beyond, _recip = beyond, recip

    @triton.jit
    def cholesky(X, L, n, xs_r, xs_c, os_r, os_c, BN: tl.constexpr):
        pid = tl.program_id(0).to(tl.int64)
        rv = tl.arange(0, BN)
        r = rv[:, None]
        c = rv[None, :]
        base = pid * n * n
        inb = (r < n) & (c < n)
        a = tl.load(X + base + r * xs_r + c * xs_c, mask=inb & (c <= r), other=0.0)
        nbad = 0  # (pivots that were not positive)
        for j in range(0, n):
            col = tl.reduce(tl.where(c == j, a, 0.0), 1, _add)  # a[:, j]
            d = tl.reduce(tl.where(rv == j, col, 0.0), 0, _add)  # a[j, j]
            nbad += tl.where(d > 0.0, 0, 1)
            s = _sqrt(tl.where(d > 0.0, d, 1.0))
            lcol = tl.where(rv >= j, _div(col, tl.full([BN], 0.0, col.dtype) + s), 0.0)
            # (l is zero left of column j: the factor's columns so far stay as they are)
            a = tl.where(c == j, lcol[:, None], a - lcol[:, None] * lcol[None, :])
        out = tl.where(nbad > 0, float("nan"), tl.where(c <= r, a, 0.0))
        tl.store(L + base + r * os_r + c * os_c, out, mask=inb)

    @triton.jit
    def substitute(b, abase, r, n, start, as_r, as_c, LOWER: tl.constexpr, UNIT: tl.constexpr):
        # op(A) X = B on b's tile (rows of b become x's as they are solved), from row ``start``
        # (forward, 0 for all; backward from n - 1 - start). op(A)'s columns below (above) the
        # diagonal as (BN, 1) tiles of b's layout, and the reciprocals of its diagonal, come
        # from memory two steps ahead of the step using them (the loads overlap two steps; no
        # reduction picks the diagonal out)
        dj = 1 if LOWER else -1
        first = start if LOWER else n - 1 - start
        aj = abase + r * as_r  # (+ j * as_c: column j)
        col0 = tl.load(aj + first * as_c, mask=_beyond(r, first, n, LOWER), other=0.0)
        col1 = tl.load(aj + (first + dj) * as_c, mask=_beyond(r, first + dj, n, LOWER), other=0.0)
        inv0 = _recip(abase, first, n, as_r + as_c, UNIT)
        inv1 = _recip(abase, first + dj, n, as_r + as_c, UNIT)
        for step in range(start, n):
            j = first + (step - start) * dj
            j2 = j + 2 * dj
            col2 = tl.load(aj + j2 * as_c, mask=_beyond(r, j2, n, LOWER), other=0.0)
            inv2 = _recip(abase, j2, n, as_r + as_c, UNIT)
            xj = tl.reduce(tl.where(r == j, b, 0.0), 0, _add)[None, :] * inv0  # b[j, :] / a_jj
            # (only the rows past j: a NaN x_j leaves the rows solved before it as they are)
            b = tl.where(_beyond(r, j, n, LOWER), b - col0 * xj, tl.where(r == j, xj, b))
            col0, col1, inv0, inv1 = col1, col2, inv1, inv2
        return b

    _substitute = substitute

    @triton.jit
    def trisolve(A, B, Xo, n, k, as_r, as_c, bs_r, bs_c,
                 BN: tl.constexpr, BK: tl.constexpr, LOWER: tl.constexpr,
                 UNIT: tl.constexpr):  # fmt: skip
        pid = tl.program_id(0).to(tl.int64)
        r = tl.arange(0, BN)[:, None]
        kc = tl.program_id(1) * BK + tl.arange(0, BK)[None, :]
        bmask = (r < n) & (kc < k)
        boff = pid * n * k + r * bs_r + kc * bs_c
        b = tl.load(B + boff, mask=bmask, other=0.0)
        b = _substitute(b, A + pid * n * n, r, n, 0, as_r, as_c, LOWER, UNIT)
        tl.store(Xo + boff, b, mask=bmask)

    @triton.jit
    def trinv(A, W, n, a0, as_r, as_c, BS: tl.constexpr, BK: tl.constexpr,
              UNIT: tl.constexpr):  # fmt: skip
        # columns c0.. of the inverse of the lower operator's diagonal block i (by substitution
        # on the identity's columns, from row c0: the rows above are zeros) into W's block i
        # (BS x BS, rows past n: the identity's)
        pid = tl.program_id(0).to(tl.int64)
        i = tl.program_id(1)
        c0 = tl.program_id(2) * BK
        r = tl.arange(0, BS)[:, None]
        kc = c0 + tl.arange(0, BK)[None, :]
        m = tl.minimum(n - i * BS, BS)  # (the block's rows)
        y = tl.where(r == kc, 1.0, 0.0).to(W.dtype.element_ty)
        abase = A + pid * n * n + a0 + i * BS * (as_r + as_c)
        y = _substitute(y, abase, r, m, tl.minimum(c0, m), as_r, as_c, True, UNIT)
        nb = (n + BS - 1) // BS
        tl.store(W + ((pid * nb + i) * BS + r) * BS + kc, y)

    @triton.jit
    def solve_block(B, Xo, i, n, k, abase, as_r, as_c, boff, bs_r, winv, r, kc,
                    BS: tl.constexpr, BK: tl.constexpr, KB: tl.constexpr,
                    CAREFUL: tl.constexpr):  # fmt: skip
        # block i of the blocked substitution: x_i = inv(A_ii) (b_i - sum_j<i A_ij x_j), the
        # sum over KB columns at a time, the x_j read back from the program's own output;
        # stored, then a barrier. CAREFUL: the rows above a column's first NaN or infinity of
        # b_i - sum come from its finite rows only (substitution leaves them finite; the
        # product with the inverse multiplies the NaN by the inverse's zeros)
        dt = winv.dtype.element_ty
        rows = i * BS + r
        mask = (rows < n) & (kc < k)
        b = tl.load(B + boff + rows * bs_r, mask=mask, other=0.0)
        inv = tl.load(winv + i * BS * BS)
        s = tl.full((BS, BK), 0.0, dt)
        ck = tl.arange(0, KB)
        for j0 in range(0, i * BS, KB):
            cols = j0 + ck[None, :]
            t = tl.load(abase + rows * as_r + cols * as_c, mask=(rows < n) & (cols < i * BS),
                        other=0.0)  # fmt: skip
            xr = j0 + ck[:, None]
            xj = tl.load(Xo + boff + xr * bs_r, mask=(xr < i * BS) & (kc < k), other=0.0)
            s = tl.dot(t, xj, s, input_precision="ieee", out_dtype=dt)
        rhs = b - s
        x = tl.dot(inv, rhs, input_precision="ieee", out_dtype=dt)
        if CAREFUL:
            first = tl.reduce(tl.where(tl.abs(rhs) < float("inf"), BS, r), 0, _min)[None, :]
            part = tl.dot(inv, tl.where(r < first, rhs, 0.0), input_precision="ieee", out_dtype=dt)
            x = tl.where(r < first, part, x)
        tl.store(Xo + boff + rows * bs_r, x, mask=mask)
        tl.debug_barrier()
        return x

    @triton.jit
    def trisolve_blocks(A, B, Xo, W, n, k, a0, as_r, as_c, b0, bs_r, bs_c, BS: tl.constexpr,
                        BK: tl.constexpr, KB: tl.constexpr):  # fmt: skip
        # forward substitution by blocks of BS rows with the lower operator's diagonal blocks
        # inverted (W, from trinv); where a result is not finite, solved again with care
        pid = tl.program_id(0).to(tl.int64)
        r = tl.arange(0, BS)[:, None]
        c = tl.arange(0, BS)[None, :]
        kc = tl.program_id(1) * BK + tl.arange(0, BK)[None, :]
        nb = (n + BS - 1) // BS
        abase = A + pid * n * n + a0
        boff = pid * n * k + b0 + kc * bs_c
        winv = W + (pid * nb * BS + r) * BS + c
        bad = tl.full((BS, BK), 0, tl.int32)
        for i in range(0, nb):
            x = _solve_block(B, Xo, i, n, k, abase, as_r, as_c, boff, bs_r, winv, r, kc,
                             BS, BK, KB, False)  # fmt: skip
            bad = tl.where(tl.abs(x) < float("inf"), bad, 1)
        if tl.reduce(tl.reduce(bad, 1, _max), 0, _max) > 0:
            for i in range(0, nb):
                _solve_block(B, Xo, i, n, k, abase, as_r, as_c, boff, bs_r, winv, r, kc,
                             BS, BK, KB, True)  # fmt: skip

    @triton.jit
    def lu(X, LU, PIV, PERM, n, BN: tl.constexpr):
        pid = tl.program_id(0).to(tl.int64)
        rv = tl.arange(0, BN)
        r = rv[:, None]
        c = rv[None, :]
        base = pid * n * n
        a = tl.load(X + base + r * n + c, mask=(r < n) & (c < n), other=0.0)
        # rows stay where they are: a swap exchanges two rows' positions, and the rows are
        # stored by position at the end
        pos = rv
        piv = rv
        col = tl.reduce(tl.where(c == 0, a, 0.0), 1, _add)  # a[:, j] (by row, not position)
        for j in range(0, n):
            # column j + 1 before this step's update (off the pivot search's path)
            nxt = tl.reduce(tl.where(c == j + 1, a, 0.0), 1, _add)
            live = (pos >= j) & (rv < n)
            mag = tl.where(live, tl.abs(col), -1.0)
            top = tl.reduce(mag, 0, _max)
            # the pivot's position: the first largest magnitude by position (LAPACK's idamax);
            # NaNs are passed over, and a column of NaNs keeps the row at position j
            q = tl.reduce(tl.where((mag == top) & live, pos, BN), 0, _min)
            q = tl.where(q < BN, q, j)
            isp = pos == q
            d = tl.reduce(tl.where(isp, col, 0.0), 0, _add)
            u1 = tl.reduce(tl.where(isp, nxt, 0.0), 0, _add)  # (its entry in column j + 1)
            urow = tl.reduce(tl.where(isp[:, None], a, 0.0), 0, _add)
            piv = tl.where(rv == j, q, piv)
            pos = tl.where(pos == j, q, tl.where(isp, j, pos))
            # the column below the pivot scaled (a zero pivot: left as it is, zeros; by the
            # pivot's reciprocal unless that overflows, as getf2 does), the trailing matrix
            # updated (only it: a NaN elsewhere stays where it is, as in getrf)
            d = tl.where(d != 0.0, d, 1.0)
            below = pos > j
            rd = _div(d * 0.0 + 1.0, d)  # (NaN for an infinite d, which then divides)
            if tl.abs(rd) < float("inf"):
                lcol = col * rd
            else:
                lcol = _div(col, tl.full([BN], 0.0, col.dtype) + d)
            lcol = tl.where(below, lcol, 0.0)
            col = tl.where(below, nxt - lcol * u1, nxt)
            below = below[:, None]
            a = tl.where(below & (c > j), a - lcol[:, None] * urow[None, :],
                         tl.where(below & (c == j), lcol[:, None], a))  # fmt: skip
        outm = (pos < n)[:, None] & (c < n)
        tl.store(LU + base + pos[:, None] * n + c, a, mask=outm)
        tl.store(PIV + pid * n + rv, piv, mask=rv < n)
        tl.store(PERM + pid * n + pos, rv, mask=pos < n)

    @triton.jit
    def eigh(X, V, W, n, eps2, LOWER: tl.constexpr, BN: tl.constexpr, MAXS: tl.constexpr):
        pid = tl.program_id(0).to(tl.int64)
        rv = tl.arange(0, BN)
        r = rv[:, None]
        c = rv[None, :]
        inb = (r < n) & (c < n)
        base = pid * n * n
        a1 = tl.load(X + base + r * n + c, mask=inb, other=0.0)
        a2 = tl.load(X + base + c * n + r, mask=inb, other=0.0)
        if LOWER:
            a = tl.where(c <= r, a1, a2)
        else:
            a = tl.where(c >= r, a1, a2)
        v = tl.where(r == c, 1.0, 0.0).to(a.dtype)
        diag = r == c
        fro = tl.reduce(tl.reduce(a * a, 1, _add), 0, _add)
        off = tl.reduce(tl.reduce(tl.where(diag, 0.0, a * a), 1, _add), 0, _add)
        tol = fro * eps2
        d = tl.reduce(tl.where(diag, a, 0.0), 1, _add)  # the diagonal, kept by the rotations
        sweep = 0
        while (off > tol) & (sweep < MAXS):
            for m in range(1, BN):
                pr = rv ^ m  # each index's partner in this round
                pm = c == pr[:, None]  # (i, partner(i))
                isp = rv < pr
                dq = tl.gather(d, pr, 0)  # a[partner(i), partner(i)]
                apq = tl.reduce(tl.where(pm, a, 0.0), 1, _add)  # a[i, partner(i)]
                # (both of a pair take a[p, q]: the same rotation, bit for bit)
                apq = tl.where(isp, apq, tl.gather(apq, pr, 0))
                app = tl.where(isp, d, dq)
                aqq = tl.where(isp, dq, d)
                nz = apq != 0.0
                theta = _div(aqq - app, tl.where(nz, 2.0 * apq, 1.0))
                at = tl.abs(theta)
                big = at > 1.0
                inv = _div(tl.full([BN], 1.0, at.dtype), tl.where(big, at, 1.0))
                root = tl.where(big, at * _sqrt(1.0 + inv * inv), _sqrt(1.0 + at * at))
                t = _div(tl.full([BN], 1.0, at.dtype), at + root)
                t = tl.where(theta < 0.0, -t, t)
                t = tl.where(nz, t, 0.0)
                cs = _div(tl.full([BN], 1.0, t.dtype), _sqrt(1.0 + t * t))
                sn = t * cs
                sg = tl.where(isp, -sn, sn)
                d = d + tl.where(isp, -t * apq, t * apq)  # (a_pp - t a_pq, a_qq + t a_pq)
                idx = pr[:, None] + tl.full((BN, BN), 0, tl.int32)
                a = cs[:, None] * a + sg[:, None] * tl.gather(a, idx, 0)  # rows: J^T a
                cidx = pr[None, :] + tl.full((BN, BN), 0, tl.int32)
                a = a * cs[None, :] + tl.gather(a, cidx, 1) * sg[None, :]  # columns: (J^T a) J
                a = tl.where(pm, 0.0, a)
                v = v * cs[None, :] + tl.gather(v, cidx, 1) * sg[None, :]
            off = tl.reduce(tl.reduce(tl.where(diag, 0.0, a * a), 1, _add), 0, _add)
            sweep += 1
        wr = tl.where(rv < n, d, float("inf"))  # the eigenvalues, by row
        w = tl.reduce(tl.where(diag, d[:, None], 0.0), 0, _add)  # (the same, by column)
        wc = tl.where(rv < n, w, float("inf"))[None, :]
        before = (wr[:, None] < wc) | ((wr[:, None] == wc) & (r < c))
        rank = tl.reduce(before.to(tl.int32), 0, _add)  # of each column's eigenvalue
        tl.store(W + pid * n + rank, w, mask=rv < n)
        tl.store(V + base + r * n + rank[None, :], v, mask=inb)

    _solve_block = solve_block
    blocks = dict(trinv=trinv, trisolve_blocks=trisolve_blocks)
    _KERNELS[interp] = dict(cholesky=cholesky, trisolve=trisolve, lu=lu, eigh=eigh, **blocks)
    return _KERNELS[interp]


def _bn(n: int) -> int:
    return max(4, 1 << (n - 1).bit_length())


def _real(avals) -> bool:
    a = avals[0]
    return (
        np.dtype(a.dtype) in (np.float32, np.float64)
        and all(np.dtype(x.dtype) == np.dtype(a.dtype) for x in avals)
        and all(x.size > 0 for x in avals)
    )


def _small_real(avals) -> bool:
    return _real(avals) and avals[0].shape[-1] <= MAX_N


def _on_gpu() -> bool:
    """Whether the library runners (``torch.linalg`` calls that only queue work, for operands
    larger than the kernels take) serve: ``LIBRARY_RUNNERS`` and a CUDA device."""
    import torch

    return LIBRARY_RUNNERS and torch.cuda.is_available()


def _cuda_only(body):
    """A runner calling ``body(ins, outs)`` on CUDA tensors (False, calling nothing, on others:
    the step's ``torch.linalg`` form then runs); ``run.body`` is ``body`` itself."""

    def run(ins, outs):
        if not ins[0].is_cuda:
            return False
        body(ins, outs)
        return True

    run.body = body
    return run


def _here(t) -> bool:
    """Whether the kernels can run on tensor ``t`` (a CUDA tensor, or Triton's interpreter)."""
    return t.is_cuda or config.triton_interpret()


def _warps(bn: int, batch: int) -> int:
    """Warps per program of the factorisations and solves (``WARPS``; 2 for many 64x64s)."""
    return 2 if bn == 64 and batch >= 256 else WARPS[bn]


def _trisolve_warps(bn: int, batch: int) -> int:
    """Warps per program of the solves: 1 at 64x64 (H100, 17:24 UTC, ms, 1 / 2 / 4 warps:
    cholesky+solve 1024 64x64 0.162 / 0.177 / 0.224, 64 64x64 0.082 / - / 0.087; solve 16 64x64
    0.149 / - / 0.155)."""
    return 1 if bn == 64 else _warps(bn, batch)


def _batch(aval) -> int:
    return int(np.prod(aval.shape[:-2], dtype=np.int64))


def _torch_cholesky(shape, upper):
    """The factor through ``torch.linalg.cholesky_ex`` (cuSOLVER's potrf) straight into the
    step's output, NaNs where a pivot was not positive; ``upper``: ``swap(cholesky(swap(s)))``
    of ``s`` (``_UpperCholeskyStep``). (H100, 19:36 UTC: letting torch write the factor into the
    output itself, as the upper factor of the transpose, made cuSOLVER take its upper-triangle
    potrf: cholesky+solve of one 512x512 0.696 ms against 0.562 this way.)"""

    def body(ins, outs):
        import torch

        s = ins[0].reshape(shape)
        low, info = torch.linalg.cholesky_ex(s.mT if upper else s)
        bad, nan = (info != 0)[..., None, None], low.new_full((), float("nan"))
        torch.where(bad, nan, low.mT if upper else low, out=outs[0].reshape(shape))

    return _cuda_only(body)


def _choose_cholesky(step):
    (x,) = step.in_avals
    upper = bool(getattr(step, "upper", False))
    if not _small_real([x]):
        return _torch_cholesky(x.shape, upper) if _real([x]) and _on_gpu() else None
    n, bn = x.shape[-1], _bn(x.shape[-1])
    # the upper factor of ``s``: factor swap(s) and write swap(L) (reads and writes transposed)
    strides = (1, n, 1, n) if upper else (n, 1, n, 1)

    def run(ins, outs):
        if not _here(ins[0]):
            return False
        _kernels()["cholesky"][(_batch(x),)](
            ins[0], outs[0], n, *strides, BN=bn, num_warps=_warps(bn, _batch(x))
        )
        return True

    return run


def _torch_trisolve(a, b, p):
    """The solve through ``torch.linalg.solve_triangular`` (cuBLAS's trsm, which reads one
    triangle) straight into the step's output (``BLOCKED_SOLVE = False``). (torch poses a left
    solve of row-major operands as cuBLAS's right-side solve of the transposed system. Solving
    into a column-major buffer instead, which torch hands to cuBLAS's left-side solve, and
    copying, was tried: H100, 21:40 UTC, cholesky+solve of a 512x512 0.386 ms against the
    blocked solve's 0.363 and this form's 0.559; not kept.)"""
    lower, left = bool(p["lower"]), bool(p["left_side"])
    trans, unit = bool(p["transpose_a"]), bool(p["unit_diagonal"])

    def body(ins, outs):
        import torch

        t = ins[0].reshape(a.shape)
        t = t.mT if trans else t
        up = lower == trans  # (the transpose of a lower operator is upper)
        torch.linalg.solve_triangular(
            t, ins[1].reshape(b.shape), upper=up, left=left, unitriangular=unit,
            out=outs[0].reshape(b.shape),
        )  # fmt: skip

    return _cuda_only(body)


def _solve_layout(a, b, p):
    """``(n, k, lower, (as_r, as_c), (bs_r, bs_c))`` of a triangular_solve step as ``op(A) X =
    B`` on the left: ``X op(A) = B`` is ``op(A)^T X^T = B^T``; ``lower`` is ``op(A)``'s, which
    is read through the strides ``as_*`` (B and X through ``bs_*``; ``k`` right-hand sides)."""
    n = a.shape[-1]
    left = bool(p["left_side"])
    t_trans = bool(p["transpose_a"]) if left else not p["transpose_a"]
    lower = bool(p["lower"]) != t_trans
    a_str = (1, n) if t_trans else (n, 1)
    k = b.shape[-1] if left else b.shape[-2]
    return n, k, lower, a_str, (k, 1) if left else (1, n)


def _choose_trisolve(step):
    a, b = step.in_avals
    p = step.params
    if not _real([a, b]):
        return None
    unit = bool(p["unit_diagonal"])
    n, k, lower, a_str, b_str = _solve_layout(a, b, p)
    if n > MAX_N:
        if BLOCKED_SOLVE:
            return _blocked_trisolve(_batch(a), n, k, lower, a_str, b_str, unit)
        return _torch_trisolve(a, b, p) if _on_gpu() else None
    bn = _bn(n)
    bk = min(RHS_BLOCK, _bn(k))
    grid = (_batch(a), -(-k // bk))

    def run(ins, outs):
        if not _here(ins[0]):
            return False
        _kernels()["trisolve"][grid](
            ins[0], ins[1], outs[0], n, k, *a_str, *b_str,
            BN=bn, BK=bk, LOWER=lower, UNIT=unit, num_warps=_trisolve_warps(bn, grid[0]),
        )  # fmt: skip
        return True

    return run


def _blocked_trisolve(batch, n, k, lower, a_str, b_str, unit):
    """The runner of a solve larger than ``MAX_N``: ``trinv`` inverts the diagonal blocks of
    ``SOLVE_BLOCK`` rows (all at once, by substitution) into a workspace, ``trisolve_blocks``
    substitutes by blocks with ``tl.dot`` products. An upper operator is solved as the lower
    one it is with rows and columns in reverse order (negative strides from its last entry).
    ``run.launches``: the two launches, ``(ins, outs, workspace)`` each (timed apart by
    benchmarks/gpu_libsteps.py)."""
    bs, bk = SOLVE_BLOCK, SOLVE_RHS_BLOCK
    (as_r, as_c), (bs_r, bs_c) = a_str, b_str
    a0 = b0 = 0
    if not lower:
        a0, b0 = (n - 1) * (as_r + as_c), (n - 1) * bs_r
        as_r, as_c, bs_r = -as_r, -as_c, -bs_r
    nb = -(-n // bs)
    inv_bk = min(RHS_BLOCK, bs)
    inv_grid = (batch, nb, bs // inv_bk)
    grid = (batch, -(-k // bk))

    def inv(ins, outs, w):
        _kernels()["trinv"][inv_grid](
            ins[0], w, n, a0, as_r, as_c, BS=bs, BK=inv_bk, UNIT=unit,
            num_warps=_trisolve_warps(bs, batch * nb),
        )  # fmt: skip

    def solve(ins, outs, w):
        _kernels()["trisolve_blocks"][grid](
            ins[0], ins[1], outs[0], w, n, k, a0, as_r, as_c, b0, bs_r, bs_c,
            BS=bs, BK=bk, KB=SOLVE_K or bs, num_warps=SOLVE_WARPS, num_stages=SOLVE_STAGES,
        )  # fmt: skip

    def run(ins, outs):
        if not _here(ins[0]):
            return False
        import torch

        w = torch.empty(batch * nb * bs * bs, dtype=ins[0].dtype, device=ins[0].device)
        inv(ins, outs, w)
        solve(ins, outs, w)
        return True

    run.launches = (inv, solve)
    # two kernels through Triton's dispatch and a workspace: a lone solve is worth a CUDA graph
    # (H100, 00:47 UTC: a lone 512x512 solve with 8 / 512 right-hand sides 160.5 / 132.7 us
    # launched, 62.9 / 60.5 replayed; JAX 116.4 / 135.9: benchmarks/gpu_small_steps.py)
    run.graph_launches = 4
    return run


def _choose_lu(step):
    (x,) = step.in_avals
    if not _small_real([x]) or x.shape[-1] != x.shape[-2]:
        return None
    n, bn = x.shape[-1], _bn(x.shape[-1])

    def run(ins, outs):
        if not _here(ins[0]):
            return False
        _kernels()["lu"][(_batch(x),)](
            ins[0], outs[0], outs[1], outs[2], n, BN=bn, num_warps=_warps(bn, _batch(x))
        )
        return True

    return run


def _choose_eigh(step):
    (x,) = step.in_avals
    p = step.params
    if not _real([x]) or p.get("subset_by_index") is not None:
        return None
    n, lower = x.shape[-1], bool(p["lower"])
    if n > EIGH_JACOBI_MAX_N and CUSOLVER_EIGH and cusolver.available():
        jacobi = CUSOLVER_SYEVJ and n <= cusolver.SYEVJ_MAX_N and _batch(x) > 1
        return _cuda_only(lambda ins, outs: cusolver.eigh(*ins, *outs, n, lower, jacobi))
    if n > MAX_N:
        return None
    bn = _bn(n)
    eps = float(np.finfo(x.dtype).eps)
    warps = EIGH_WARPS[bn]

    def run(ins, outs):
        if not _here(ins[0]):
            return False
        _kernels()["eigh"][(_batch(x),)](
            ins[0], outs[0], outs[1], n, eps * eps,
            LOWER=lower, BN=bn, MAXS=MAX_SWEEPS, num_warps=warps,
        )  # fmt: skip
        return True

    return run


_CHOOSERS = {
    "cholesky": _choose_cholesky,
    "triangular_solve": _choose_trisolve,
    "lu": _choose_lu,
    "eigh": _choose_eigh,
}


def choose(step):
    """The kernel runner ``run(ins, outs)`` (flat tensors; False where the tensors are on the CPU
    and Triton is not interpreting) for a library step, or None where the
    step keeps ``torch.linalg`` (complex, larger than ``MAX_N``, empty, or a subset of
    eigenvalues). Cached per step."""
    try:
        return _CHOICES[step]
    except KeyError:
        pass
    chooser = _CHOOSERS.get(step.prim.name) if step.prim.name in ENABLED else None
    run = None if chooser is None else chooser(step)
    _CHOICES[step] = run
    return run


for _name in _CHOOSERS:
    linalg.GPU_KERNELS[_name] = choose

__all__ = ["ENABLED", "MAX_N", "MAX_SWEEPS", "RHS_BLOCK", "WARPS", "choose"]
