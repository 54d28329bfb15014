"""Dense linear algebra primitives (``functx.lax.linalg``), each with all its rules.

Every primitive works on the last two axes of its operands and is batched over the leading ones
(JAX's ``linalg_primitive`` convention: the operands have the same number of batch axes). Each has:

* shape and dtype rules with JAX's errors (``TypeError`` for a rank below 2 or an integer dtype,
  ``ValueError`` for a non-square matrix or mismatched operands);
* an eager implementation through LAPACK (NumPy's ``numpy.linalg`` gufuncs, which loop over the
  batch in C, and SciPy's BLAS/LAPACK wrappers);
* JAX's jvp (and, for the linear operand of ``triangular_solve``, transpose) rules, written with
  the op builders and these primitives, so ``grad`` and higher derivatives compose;
* a batching rule: batch axes go to the front and the primitive is bound on the bigger batch;
* under ``jit``, a *library step* of the compiled program (``LibraryStep``). On the C++ backend
  the program calls LAPACK itself (``potrf``, ``trsm``, ``getrf``, ``syevd``, ``geqrf``/
  ``orgqr``, ``gesdd`` of SciPy's OpenBLAS, the library JAX's CPU kernels call:
  ``functx/lowering/cpp/lapack.py``, with the measurements); what it does not cover (``eig``,
  ``lu_pivots_to_permutation``, empty operands, a complex ``conj(A) X = B``) is a host step (the
  mechanism of the host callbacks, ``functx/control/callbacks.py``) handing NumPy copies of the
  step's buffers to the eager implementation through the program's ``fx_host`` pointer. On the
  Triton backend the host code calls ``LibraryStep.torch`` between launches, on the program's
  own tensors: a GPU runner (``GPU_KERNELS``: Triton kernels for batches of small matrices,
  cuSOLVER's batched eigensolvers, ``torch.linalg`` into the outputs) or plain ``torch.linalg``
  (cuSOLVER/cuBLAS on a GPU), with JAX's conventions (lower factor, 0-based ``int32`` pivots,
  ascending eigenvalues). The step's callable prints with its
  address: the disk program cache skips such programs (the shared object is still cached by
  its source).

Primitives: ``cholesky``, ``triangular_solve``, ``lu`` (LU with partial pivoting: the packed
factors, the pivots and the permutation), ``eigh`` (with JAX's eigenvalue order and gradient
rule), ``qr`` and ``svd``.
"""

from __future__ import annotations

import enum

import numpy as np

from functx import dtypes, ops, primitives as P
from functx.control.common import HostStep, lower_to_loop
from functx.core import Primitive, ShapedArray
from functx.errors import UnsupportedError
from functx.lowering.rules import lowerings
from functx.source_info import where
from functx.tracing import get_aval
from functx.transforms import jvp as J, transpose as T, vmap as V
from functx.transforms.jvp import Zero

_HIGHEST = ops.Precision.HIGHEST


# --- helpers on traced values ----------------------------------------------------------------
def _is_complex(dt) -> bool:
    return np.dtype(dt) in dtypes.COMPLEX


def _T(x):
    """Swap the last two axes."""
    n = np.ndim(x)
    return ops.transpose(x, (*range(n - 2), n - 1, n - 2))


def _conj(x):
    return ops.conj(x) if _is_complex(get_aval(x).dtype) else x


def _H(x):
    return _conj(_T(x))


def _mask(shape, k, lower):
    """A bool mask of shape ``shape`` (last two axes): below-or-on diagonal ``k`` if ``lower``,
    above-or-on if not."""
    r = ops.broadcasted_iota(np.int32, shape, len(shape) - 2)
    c = ops.broadcasted_iota(np.int32, shape, len(shape) - 1)
    d = ops.sub(c, r)
    return ops.le(d, ops.full((), k, np.int32)) if lower else ops.ge(d, ops.full((), k, np.int32))


def tril(x, k=0):
    """The lower triangle (on and below diagonal ``k``) of the last two axes of ``x``."""
    a = get_aval(x)
    return ops.select(_mask(a.shape, k, True), x, ops.full(a.shape, 0, a.dtype))


def triu(x, k=0):
    """The upper triangle (on and above diagonal ``k``) of the last two axes of ``x``."""
    a = get_aval(x)
    return ops.select(_mask(a.shape, k, False), x, ops.full(a.shape, 0, a.dtype))


def _eye_like(x):
    a = get_aval(x)
    n = a.shape[-1]
    m = _mask((n, n), 0, True)
    e = ops.convert_element_type(ops.bitwise_and(m, _mask((n, n), 0, False)), a.dtype)
    return e


def matmul(a, b):
    """A batched matrix product over the last two axes (same batch shape), at full precision."""
    n = np.ndim(a)
    batch = tuple(range(n - 2))
    return ops.dot_general(a, b, (((n - 1,), (n - 2,)), (batch, batch)), precision=_HIGHEST)


def symmetrize(x):
    """``(x + x^H) / 2`` over the last two axes (JAX's ``lax.linalg.symmetrize``; a true
    division, as JAX's: integers give floats).

    Arguments:
      x: an array of rank 2 or more, square in its last two axes.

    Returns:
      The Hermitian (for real ``x``: symmetric) part of ``x``, of ``x``'s inexact dtype.

    Example:
      >>> import functx, functx.numpy as jnp
      >>> functx.control.linalg.symmetrize(jnp.array([[1.0, 2.0], [0.0, 3.0]]))
      Array([[1., 1.],
             [1., 3.]], dtype=float32)
    """
    dt = get_aval(x).dtype
    if not (dt in dtypes.FLOATS or _is_complex(dt)):
        big = np.dtype(dt) in (np.dtype(np.int64), np.dtype(np.uint64))
        x = ops.convert_element_type(x, np.float64 if big else np.float32)
        dt = get_aval(x).dtype
    return ops.div(ops.add(x, _H(x)), ops.full((), 2, dt))


# --- the shared machinery ----------------------------------------------------------------------
def _name_dtype(dt) -> str:
    return np.dtype(dt).name


def _check_operands(name, avals, ranks):
    for i, (a, r) in enumerate(zip(avals, ranks)):
        if a.ndim < r:
            raise TypeError(
                f"Input {i} to {name} must have rank at least {r}, but got shape={a.shape}"
            )
    nb = [a.ndim - r for a, r in zip(avals, ranks)]
    if any(b != nb[0] for b in nb):
        raise TypeError(
            f"All inputs to {name} must have the same number of batch dimensions, but got "
            f"{nb} batch dimensions for the inputs."
        )
    for a in avals:
        if not (a.dtype in dtypes.FLOATS or _is_complex(a.dtype)):
            raise TypeError(
                f"{name} does not accept dtype {_name_dtype(a.dtype)}. Accepted dtypes are "
                "subtypes of floating, complexfloating."
            )
    if any(a.dtype != avals[0].dtype for a in avals):
        raise TypeError(
            f"{name} requires arguments to have the same dtypes, got "
            + ", ".join(_name_dtype(a.dtype) for a in avals)
            + "."
        )
    return avals[0].shape[: nb[0]]


#: GPU runners of library steps, by primitive name: ``choose(step)`` gives ``run(ins, outs)``
#: (flat tensors; it returns False, launching nothing, for CPU tensors outside Triton's
#: interpreter) where one takes the step's operands, else None and the step calls
#: ``torch.linalg``. The runners only queue work on the current stream: Triton kernels for
#: batches of small real matrices, cuSOLVER's batched eigensolvers for larger ``eigh``, and
#: ``torch.linalg`` calls into the outputs for larger ``cholesky``/``triangular_solve``. Filled
#: by ``functx/lowering/triton/linalg.py``, which has them and their limits.
GPU_KERNELS: dict = {}


class LibraryStep(HostStep):
    """The library step of a linear-algebra equation under ``jit``. On the C++ backend the
    program calls LAPACK itself for ``cholesky``, ``triangular_solve`` and ``lu``
    (``functx/lowering/cpp/lapack.py``); otherwise the step is a host step: ``__call__`` runs the
    primitive's LAPACK implementation on NumPy copies of the operands, and ``torch`` (used by the
    Triton runtime) runs ``torch.linalg`` on the program's own tensors (cuSOLVER/cuBLAS on a GPU,
    LAPACK on the CPU) with JAX's conventions. Prints with its address, as the callbacks'
    ``HostFn`` does, so the disk program cache (which cannot restore host steps) never indexes
    a program with one; the compiled shared object is still cached by its source."""

    __slots__ = ()
    label = "lapack"

    def gpu_kernel(self):
        """The GPU runner for this step's operands (``GPU_KERNELS``), or None."""
        choose = GPU_KERNELS.get(self.prim.name)
        return None if choose is None else choose(self)

    @property
    def graph_safe(self) -> bool:
        """Whether the step only queues work on the current stream (a ``GPU_KERNELS`` runner:
        the program keeps its CUDA graph); plain ``torch.linalg`` may synchronise (``eigh``'s
        info)."""
        return self.gpu_kernel() is not None

    @property
    def graph_launches(self):
        """The kernel launches the step stands for in the Triton runtime's CUDA-graph policy
        (``runtime.step_launches``): its runner's ``graph_launches``, None where it says none."""
        return getattr(self.gpu_kernel(), "graph_launches", None)

    def torch(self, ins, outs):
        """The step on torch tensors (the Triton runtime's flat buffers): a ``GPU_KERNELS``
        runner where one takes the operands, else ``torch.linalg`` from ``ins`` into ``outs``.
        A complex buffer may come as a complex tensor or as its interleaved real and imaginary
        parts (a real tensor twice as long). Empty operands and primitives without a torch form
        run ``__call__`` on host copies."""
        run = self.gpu_kernel()
        if run is not None and run(ins, outs):
            return
        import torch  # (optional dependency: only a Triton program calls this)

        rule = _TORCH_RULES.get(self.prim.name)
        if rule is None or any(a.size == 0 for a in self.in_avals + self.out_avals):
            args = [_torch_in(torch, t, a).cpu().numpy() for t, a in zip(ins, self.in_avals)]
            results = [torch.from_numpy(np.ascontiguousarray(r)) for r in self(*args)]
        else:
            args = [_torch_in(torch, t, a) for t, a in zip(ins, self.in_avals)]
            results = rule(torch, *args, **self.params)
        for o, r, a in zip(outs, results, self.out_avals):
            r = r.to(device=o.device, dtype=_torch_dtype(torch, a.dtype))
            if r.is_complex() and not o.is_complex():
                r = torch.view_as_real(r.contiguous())
            o.copy_(r.reshape(-1))


def _torch_dtype(torch, dt):
    return getattr(torch, np.dtype(dt).name)


def _torch_in(torch, t, aval):
    """A flat buffer as a tensor of ``aval``'s shape (complex from interleaved lanes)."""
    if _is_complex(aval.dtype) and not t.is_complex():
        return torch.view_as_complex(t.reshape(*aval.shape, 2).contiguous())
    return t.reshape(aval.shape)


def _torch_cholesky(torch, x):
    L, info = torch.linalg.cholesky_ex(x)  # (reads the lower triangle, as LAPACK's 'L')
    bad = (info != 0)[..., None, None]
    return [torch.where(bad, torch.full_like(L, float("nan")), L)]


def _torch_trisolve(torch, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    a = torch.tril(a) if lower else torch.triu(a)  # (the other triangle is never read)
    if transpose_a:
        a, lower = a.mT, not lower
    if conjugate_a and a.is_complex():
        a = a.conj()
    x = torch.linalg.solve_triangular(
        a.resolve_conj(), b, upper=not lower, left=left_side, unitriangular=unit_diagonal
    )
    return [x]


def _torch_lu(torch, x):
    lu, piv, _ = torch.linalg.lu_factor_ex(x)  # (a singular matrix keeps its factors)
    m = x.shape[-2]
    p = torch.lu_unpack(lu, piv, unpack_data=False)[0]  # x = P L U: P[perm[i], i] = 1
    perm = torch.argmax(p.real if p.is_complex() else p, dim=-2)[..., :m]
    return [lu, (piv - 1).to(torch.int32), perm.to(torch.int32)]


#: float32 ``eigh`` steps of matrices this large run torch.linalg.eigh in float64 and round the
#: results: on an H100 cuSOLVER's float32 syevd of one n x n took 2.09 / 3.80 / 5.38 / 15.0 ms at
#: n = 128 / 192 / 256 / 512, its float64 one 1.74 / 1.58 / 2.14 / 4.89 (JAX's float32 512: 4.90;
#: benchmarks/gpu_libsteps.py, 14:52 UTC)
EIGH_F64_MIN_N = 128


def _torch_eigh(torch, x, *, lower, sort_eigenvalues, subset_by_index):
    up = x.dtype == torch.float32 and x.shape[-1] >= EIGH_F64_MIN_N
    w, v = torch.linalg.eigh(x.double() if up else x, UPLO="L" if lower else "U")  # (ascending)
    if up:
        w, v = w.float(), v.float()
    if subset_by_index is not None:
        lo, hi = subset_by_index
        w, v = w[..., lo:hi], v[..., lo:hi]
    return [v, w]


def _torch_qr(torch, x, *, full_matrices):
    q, r = torch.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return [q, r]


def _torch_svd(torch, x, *, full_matrices, compute_uv, subset_by_index):
    lo, hi = subset_by_index if subset_by_index is not None else (0, min(x.shape[-2:]))
    if not compute_uv:
        return [torch.linalg.svdvals(x)[..., lo:hi]]
    u, s, vh = torch.linalg.svd(x, full_matrices=full_matrices)
    if not full_matrices:
        u, s, vh = u[..., lo:hi], s[..., lo:hi], vh[..., lo:hi, :]
    return [s, u, vh]


# the torch forms of the library steps, by primitive name (``LibraryStep.torch``)
_TORCH_RULES = {
    "cholesky": _torch_cholesky,
    "triangular_solve": _torch_trisolve,
    "lu": _torch_lu,
    "eigh": _torch_eigh,
    "qr": _torch_qr,
    "svd": _torch_svd,
}


class _UpperCholeskyStep(LibraryStep):
    """The library step of ``cholesky(swap(s))`` for a real ``s`` whose swap of the last two
    axes is only a view (``scipy.linalg.cho_factor``'s upper factor is
    ``swap(cholesky(swap(a)))``): it reads ``s`` itself and gives ``U = swap(L)``, the upper
    factor, so neither transpose is a copy; the lowering returns ``swap(U)``, which the caller's
    own swap cancels. LAPACK's ``potrf`` reads the row-major ``s`` as ``swap(s)`` in column
    order and factors that with ``uplo='L'``: its column-major ``L`` is the row-major ``U``
    (``functx/lowering/cpp/lapack.py``). Elsewhere (host, torch) the step swaps around the
    plain one."""

    __slots__ = ()
    upper = True

    def __call__(self, s):
        (low,) = super().__call__(np.swapaxes(np.asarray(s), -1, -2))
        return [np.ascontiguousarray(np.swapaxes(low, -1, -2))]

    def torch(self, ins, outs):
        run = self.gpu_kernel()  # (the kernel reads and writes through swapped strides)
        if run is not None and run(ins, outs):
            return
        shape = self.in_avals[0].shape
        t = ins[0].reshape(shape).transpose(-1, -2).contiguous().reshape(-1)
        tmp = outs[0].new_empty(outs[0].shape)
        super().torch([t], [tmp])
        outs[0].copy_(tmp.reshape(shape).transpose(-1, -2).contiguous().reshape(-1))


def _swapped_source(x):
    """The node ``s`` of which the loop-IR node ``x`` is the swap of the last two axes, read in
    place (a transpose view, not stored), or None."""
    # imported here, when jit lowers: `import functx` does not load the loop IR
    from functx.lowering.loopir import E, Load, _Reads, flat_offset, sym

    if x.kind != "pointwise" or x.fn is None or len(x.inputs) != 1 or len(x.shape) < 2:
        return None
    s = x.inputs[0]
    if np.dtype(s.dtype) != np.dtype(x.dtype) or tuple(s.shape) != (
        *x.shape[:-2],
        x.shape[-1],
        x.shape[-2],
    ):
        return None
    iv = [sym(f"i{d}") for d in range(len(x.shape))]
    e = x.fn(tuple(iv), _Reads())
    if not isinstance(e, Load) or e.buf != f"n{s.id}":
        return None
    want = flat_offset((*iv[:-2], iv[-1], iv[-2]), s.shape)
    return s if not isinstance(e.offset, E) and e.offset == want else None


def _library_lowering(prim):
    def rule(g, ins, avals, **params):
        step = LibraryStep
        if prim.name == "cholesky" and np.dtype(ins[0].dtype) in (np.float32, np.float64):
            s = _swapped_source(ins[0])
            if s is not None:
                ins, step = [s], _UpperCholeskyStep
        in_avals = [ShapedArray(n.shape, n.dtype) for n in ins]
        out_avals = (
            [ShapedArray(n.shape, n.dtype) for n in ins]
            if step is not LibraryStep
            else [ShapedArray(a.shape, a.dtype) for a in avals]
        )
        outs = lower_to_loop(
            g,
            ins,
            list(out_avals),
            "host",
            callback=step(prim, params, in_avals, out_avals),
            in_avals=in_avals,
            n_out=len(avals),
        )
        if step is _UpperCholeskyStep:
            nd = len(avals[0].shape)
            perm = (*range(nd - 2), nd - 1, nd - 2)
            return [lowerings[P.transpose_p](g, outs, list(avals), permutation=perm)]
        return outs

    return rule


def _batch_front(prim):
    """The batching rule of a primitive batched over leading axes: batch axes to the front
    (unbatched operands broadcast), one bind on the bigger batch."""

    def rule(args, dims, **params):
        size = V.axis_size_of(args, dims)
        new = [
            ops.broadcast(a, (size,)) if d is None else V.moveaxis(a, d, 0)
            for a, d in zip(args, dims)
        ]
        out = prim.bind(*new, **params)
        if prim.multiple_results:
            return list(out), [0] * len(out)
        return out, 0

    return rule


def _define(name, abstract_eval, impl, multiple_results=False):
    p = Primitive(name, multiple_results=multiple_results, group="linalg")
    P.registry[name] = p
    p.abstract_eval = abstract_eval
    p.impl = impl
    V.batching_rules[p] = _batch_front(p)
    lowerings[p] = _library_lowering(p)
    return p


def _weak(*avals):
    return all(a.weak_type for a in avals)


# --- cholesky ------------------------------------------------------------------------------------
def _cholesky_abstract(x):
    batch = _check_operands("cholesky", [x], [2])
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(
            f"The input to cholesky must be a square matrix. Got shape {x.shape[-2:]}."
        )
    return ShapedArray((*batch, *x.shape[-2:]), x.dtype, _weak(x))


def _cholesky_impl(x):
    """The lower Cholesky factor of each matrix, reading its lower triangle; a matrix LAPACK
    cannot factor (not positive definite) gives NaNs, as JAX's CPU lowering does."""
    x = np.asarray(x)
    if x.size == 0:
        return x.copy()
    if x.dtype in (np.float32, np.complex64):
        # LAPACK's potrf in the operand's precision, as JAX's CPU kernel (NumPy factors float32
        # in float64, which rounds differently)
        potrf = _lapack("potrf", x.dtype)
        flat = x.reshape((-1, *x.shape[-2:]))
        out = np.empty_like(flat)
        for i, m in enumerate(flat):
            c, info = potrf(m, lower=1, clean=1)
            out[i] = c if info == 0 else np.nan * (1 + 1j if out.dtype.kind == "c" else 1)
        return out.reshape(x.shape)
    try:
        return np.linalg.cholesky(x).astype(x.dtype, copy=False)
    except np.linalg.LinAlgError:
        pass
    flat = x.reshape((-1, *x.shape[-2:]))
    out = np.empty_like(flat)
    for i, m in enumerate(flat):
        try:
            out[i] = np.linalg.cholesky(m)
        except np.linalg.LinAlgError:
            out[i] = np.nan
    return out.reshape(x.shape)


cholesky_p = _define("cholesky", _cholesky_abstract, _cholesky_impl)


def _cholesky_jvp(primals, tangents):
    (x,), (dx,) = primals, tangents
    L = tril(cholesky_p.bind(x))
    if isinstance(dx, Zero):
        return L, Zero(J.tangent_aval(get_aval(L)))
    # Murray, "Differentiation of the Cholesky decomposition" (arXiv:1602.07527):
    # dL = L phi(L^-1 dA L^-H), phi = the lower triangle with its diagonal halved
    tmp = triangular_solve(L, dx, left_side=False, transpose_a=True, conjugate_a=True, lower=True)
    inner = triangular_solve(L, tmp, left_side=True, lower=True)
    half = ops.add(ops.full((), 1, get_aval(x).dtype), _eye_like(x))
    nd = np.ndim(inner)
    phi = ops.div(tril(inner), ops.broadcast_in_dim(half, get_aval(inner).shape, (nd - 2, nd - 1)))
    return L, matmul(L, phi)


J.jvp_rules[cholesky_p] = _cholesky_jvp


def cholesky(x, *, symmetrize_input: bool = True):
    """Cholesky decomposition ``A = L L^H`` of Hermitian positive-definite matrices (JAX's
    ``jax.lax.linalg.cholesky``).

    Arguments:
      x: a batch of square matrices, shape ``[..., n, n]``, float or complex.
      symmetrize_input: if True, factor ``(x + x^H) / 2``; if False, only the lower triangle of
        ``x`` is read.
    Returns:
      The lower-triangular factor ``L``, shape and dtype of ``x``; a matrix that is not positive
      definite gives a matrix of NaNs.
    Example:
      >>> import functx
      >>> import numpy as np
      >>> x = np.array([[4.0, 2.0], [2.0, 5.0]], np.float32)
      >>> functx.lax.linalg.cholesky(x)
      Array([[2., 0.],
             [1., 2.]], dtype=float32)
    """
    if symmetrize_input:
        x = symmetrize(x)
    return tril(cholesky_p.bind(x))


# --- triangular_solve --------------------------------------------------------------------------
def _trisolve_abstract(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    batch = _check_operands("triangular_solve", [a, b], [2, 2])
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(
            "The first input to triangular_solve must be a square matrix. Got shape "
            f"{a.shape[-2:]}."
        )
    common = -2 if left_side else -1
    if a.shape[-1] != b.shape[common]:
        raise ValueError(
            "Incompatible shapes for arguments to triangular_solve: "
            f"{a.shape[-2:]} and {b.shape[-2:]}."
        )
    return ShapedArray((*batch, *b.shape[-2:]), b.dtype, _weak(a, b))


def _trsm_one(a, b, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    from_blas = _trsm_fn(a.dtype)
    conj_only = conjugate_a and not transpose_a and np.iscomplexobj(a)
    trans = (2 if conjugate_a and np.iscomplexobj(a) else 1) if transpose_a else 0
    if conj_only:  # conj(A) X = B  <=>  A conj(X) = conj(B)
        b = np.conj(b)
    x = from_blas(
        1.0,
        np.asfortranarray(a),
        np.asfortranarray(b),
        side=0 if left_side else 1,
        lower=int(lower),
        trans_a=trans,
        diag=int(unit_diagonal),
    )
    return np.conj(x) if conj_only else x


_TRSM: dict = {}


def _trsm_fn(dt):
    f = _TRSM.get(np.dtype(dt))
    if f is None:
        # (SciPy: its BLAS, loaded on first use)
        from scipy.linalg import blas

        f = _TRSM[np.dtype(dt)] = blas.get_blas_funcs("trsm", dtype=dt)
    return f


def _trisolve_impl(a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    a, b = np.asarray(a), np.asarray(b)
    out = np.empty(b.shape, b.dtype)
    if out.size == 0:
        return out
    fa = a.reshape((-1, *a.shape[-2:]))
    fb = b.reshape((-1, *b.shape[-2:]))
    fo = out.reshape((-1, *b.shape[-2:]))
    for i in range(fb.shape[0]):
        fo[i] = _trsm_one(fa[i], fb[i], left_side, lower, transpose_a, conjugate_a, unit_diagonal)
    return out


triangular_solve_p = _define("triangular_solve", _trisolve_abstract, _trisolve_impl)


def _trisolve_jvp(primals, tangents, **params):
    (a, b), (da, db) = primals, tangents
    ans = triangular_solve_p.bind(a, b, **params)
    out = Zero(J.tangent_aval(get_aval(ans)))
    if not isinstance(db, Zero):
        out = J.add_tangents(out, triangular_solve_p.bind(a, db, **params))
    if not isinstance(da, Zero):
        out = J.add_tangents(out, _trisolve_jvp_a(da, ans, a, **params))
    return ans, out


def _trisolve_jvp_a(g_a, ans, a, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    k = 1 if unit_diagonal else 0
    g_a = tril(g_a, -k) if lower else triu(g_a, k)
    g_a = ops.neg(g_a)
    g_a = _T(g_a) if transpose_a else g_a
    g_a = _conj(g_a) if conjugate_a else g_a
    params = dict(
        left_side=left_side,
        lower=lower,
        transpose_a=transpose_a,
        conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal,
    )
    m, n = get_aval(ans).shape[-2:]
    if left_side:
        if m > n:
            return triangular_solve_p.bind(a, matmul(g_a, ans), **params)
        return matmul(triangular_solve_p.bind(a, g_a, **params), ans)
    if m < n:
        return triangular_solve_p.bind(a, matmul(ans, g_a), **params)
    return matmul(ans, triangular_solve_p.bind(a, g_a, **params))


def _trisolve_transpose(ct, a, b, *, left_side, lower, transpose_a, conjugate_a, unit_diagonal):
    if T.is_undefined(a):
        raise ValueError("triangular_solve is not linear in its first operand")
    if isinstance(ct, Zero):
        return [None, Zero(b.aval)]
    ct_b = triangular_solve_p.bind(
        a,
        ct,
        left_side=left_side,
        lower=lower,
        transpose_a=not transpose_a,
        conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal,
    )
    return [None, ct_b]


J.jvp_rules[triangular_solve_p] = _trisolve_jvp
T.transpose_rules[triangular_solve_p] = _trisolve_transpose


def triangular_solve(
    a,
    b,
    *,
    left_side: bool = False,
    lower: bool = False,
    transpose_a: bool = False,
    conjugate_a: bool = False,
    unit_diagonal: bool = False,
):
    """Solve ``op(a) x = b`` (``left_side=True``) or ``x op(a) = b`` for triangular ``a`` (JAX's
    ``jax.lax.linalg.triangular_solve``); ``op`` transposes and/or conjugates ``a``.

    Arguments:
      a: a batch of triangular matrices ``[..., m, m]``; only the triangle ``lower`` names is read.
      b: a batch of matrices ``[..., m, n]`` (``left_side``) or ``[..., n, m]``, or one
        rank lower (a batch of vectors).
      left_side: which of the two equations to solve.
      lower: whether ``a`` is lower (True) or upper (False) triangular.
      transpose_a: use the transpose of ``a``.
      conjugate_a: use the complex conjugate of ``a`` (no effect for real ``a``).
      unit_diagonal: assume a diagonal of ones (not read).
    Returns:
      ``x``, of ``b``'s shape and dtype.
    Example:
      >>> import functx
      >>> import numpy as np
      >>> a = np.array([[2.0, 0.0], [1.0, 4.0]], np.float32)
      >>> b = np.array([[2.0], [9.0]], np.float32)
      >>> functx.lax.linalg.triangular_solve(a, b, left_side=True, lower=True)
      Array([[1.],
             [2.]], dtype=float32)
    """
    a_dt = get_aval(a).dtype
    conjugate_a = bool(conjugate_a) and _is_complex(a_dt)
    singleton = np.ndim(b) == np.ndim(a) - 1
    if singleton:
        b = ops.expand_dims(b, (np.ndim(b) if left_side else np.ndim(b) - 1,))
    out = triangular_solve_p.bind(
        a,
        b,
        left_side=bool(left_side),
        lower=bool(lower),
        transpose_a=bool(transpose_a),
        conjugate_a=conjugate_a,
        unit_diagonal=bool(unit_diagonal),
    )
    if singleton:
        n = np.ndim(out)
        out = ops.squeeze(out, (n - 1,) if left_side else (n - 2,))
    return out


# --- lu ------------------------------------------------------------------------------------------
def _lu_abstract(x):
    batch = _check_operands("lu", [x], [2])
    m, n = x.shape[-2:]
    i32 = np.dtype(np.int32)
    return [
        ShapedArray(x.shape, x.dtype, _weak(x)),
        ShapedArray((*batch, min(m, n)), i32),
        ShapedArray((*batch, m), i32),
    ]


_GETRF: dict = {}


def _getrf_fn(dt):
    f = _GETRF.get(np.dtype(dt))
    if f is None:
        from scipy.linalg import lapack  # (SciPy: the LAPACK JAX calls too)

        f = _GETRF[np.dtype(dt)] = lapack.get_lapack_funcs("getrf", dtype=dt)
    return f


def _pivots_to_perm(piv, m):
    perm = np.arange(m, dtype=np.int32)
    for i, j in enumerate(piv):
        perm[i], perm[j] = perm[j], perm[i]
    return perm


def _lu_impl(x):
    """LAPACK's getrf on each matrix: the packed factors, 0-based pivots and the permutation
    they make; a singular matrix keeps its factors (JAX's CPU result)."""
    x = np.asarray(x)
    m, n = x.shape[-2:]
    k = min(m, n)
    lead = x.shape[:-2]
    out = np.empty(x.shape, x.dtype)
    piv = np.empty((*lead, k), np.int32)
    perm = np.empty((*lead, m), np.int32)
    if x.size == 0:
        piv[...] = np.arange(k, dtype=np.int32)
        perm[...] = np.arange(m, dtype=np.int32)
        return [out, piv, perm]
    getrf = _getrf_fn(x.dtype)
    fx, fo = x.reshape((-1, m, n)), out.reshape((-1, m, n))
    fp, fq = piv.reshape((-1, k)), perm.reshape((-1, m))
    for i in range(fx.shape[0]):
        lu, p, info = getrf(fx[i])
        if info < 0:
            fo[i] = np.nan
        else:
            fo[i] = lu
        fp[i] = p[:k]
        fq[i] = _pivots_to_perm(p[:k], m)
    return [out, piv, perm]


lu_p = _define("lu", _lu_abstract, _lu_impl, multiple_results=True)


def permute_rows(perm, x, inverse=False):
    """``x[..., perm, :]`` (or the inverse permutation's) for int32 ``perm`` ``[..., m]`` and
    ``x`` ``[..., m, k]`` of the same batch shape, linear in ``x``: a gather (O(m k)); the
    inverse is a product with the one-hot permutation matrix."""
    xa = get_aval(x)
    m = xa.shape[-2]
    nd = xa.ndim
    if not inverse:
        nb = nd - 2
        col = (*xa.shape[:-2], m, 1)
        parts = [ops.broadcasted_iota(np.int32, col, i) for i in range(nb)]
        parts.append(ops.reshape(ops.convert_element_type(perm, np.int32), col))
        idx = ops.concatenate(parts, nb + 1) if nb else parts[0]
        return P.gather_p.bind(x, idx, axes=tuple(range(nb + 1)), mode="clip")
    shape = (*xa.shape[:-2], m, m)
    rows = ops.broadcast_in_dim(perm, shape, tuple(range(nd - 1)))
    cols = ops.broadcast_in_dim(ops.iota(np.int32, m), shape, (nd - 1,))
    onehot = ops.convert_element_type(ops.eq(rows, cols), xa.dtype)
    return matmul(_T(onehot) if inverse else onehot, x)


def _slice2(x, r0, r1, c0, c1):
    a = get_aval(x)
    lead = a.shape[:-2]
    return ops.slice(x, (0,) * len(lead) + (r0, c0), (*lead, r1, c1))


def _pad2(x, rows, cols):
    """Pad the last two axes at their end with ``rows``/``cols`` zeros."""
    a = get_aval(x)
    cfg = [(0, 0, 0)] * (a.ndim - 2) + [(0, rows, 0), (0, cols, 0)]
    return ops.pad(x, ops.full((), 0, a.dtype), cfg)


def _eye(n, dt, lead=()):
    e = _eye_like(ops.full((n, n), 0, dt))
    return ops.broadcast_in_dim(e, (*lead, n, n), (len(lead), len(lead) + 1)) if lead else e


def _lu_jvp(primals, tangents):
    (a,), (da,) = primals, tangents
    lu, piv, perm = lu_p.bind(a)
    out = [lu, piv, perm]
    int_t = [Zero(J.tangent_aval(get_aval(piv))), Zero(J.tangent_aval(get_aval(perm)))]
    if isinstance(da, Zero):
        return out, [Zero(J.tangent_aval(get_aval(lu))), *int_t]
    # De Hoog, Anderssen and Lukas: L' = L tril(L^-1 A' U^-1, -1), U' = triu(L^-1 A' U^-1) U,
    # with L and U padded to square (an identity block) for rectangular matrices
    at = get_aval(a)
    m, n = at.shape[-2:]
    k = min(m, n)
    lead = at.shape[:-2]
    dt = at.dtype
    l_ = ops.add(_pad2(tril(_slice2(lu, 0, m, 0, k), -1), 0, m - k), _eye(m, dt, lead))
    u = _pad2(triu(_slice2(lu, 0, k, 0, n)), n - k, 0)
    if n > k:  # (an identity block in U's lower right corner)
        z = ops.full((), 0, dt)
        eye = ops.pad(_eye(n - k, dt, lead), z, [(0, 0, 0)] * len(lead) + [(k, 0, 0)] * 2)
        u = ops.add(u, eye)
    la = triangular_solve_p.bind(
        l_,
        permute_rows(perm, da),
        left_side=True,
        lower=True,
        transpose_a=False,
        conjugate_a=False,
        unit_diagonal=True,
    )
    lau = triangular_solve_p.bind(
        u,
        la,
        left_side=False,
        lower=False,
        transpose_a=False,
        conjugate_a=False,
        unit_diagonal=False,
    )
    dlu = ops.add(matmul(l_, tril(lau, -1)), matmul(triu(lau), u))
    return out, [dlu, *int_t]


J.jvp_rules[lu_p] = _lu_jvp


def lu(x):
    """LU decomposition with partial pivoting, ``P A = L U`` (JAX's ``jax.lax.linalg.lu``).

    Arguments:
      x: a batch of matrices ``[..., m, n]``, float or complex.
    Returns:
      ``(lu, pivots, permutation)``: ``L`` (unit diagonal, not stored) and ``U`` packed in one
      matrix of ``x``'s shape; the int32 row swaps ``[..., min(m, n)]``; and the int32
      permutation ``[..., m]`` they make (``x[permutation] = L U``).
    Example:
      >>> import numpy as np
      >>> import functx
      >>> lu, piv, perm = functx.lax.linalg.lu(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
      >>> lu
      Array([[3.        , 4.        ],
             [0.33333334, 0.6666666 ]], dtype=float32)
      >>> piv, perm
      (Array([1, 1], dtype=int32), Array([1, 0], dtype=int32))
    """
    out = lu_p.bind(x)
    return out[0], out[1], out[2]


# --- lu_pivots_to_permutation ------------------------------------------------------------------
def _p2p_abstract(pivots, *, permutation_size):
    if pivots.dtype != np.dtype(np.int32):
        raise TypeError(
            f"lu_pivots_to_permutation does not accept dtype {_name_dtype(pivots.dtype)}. "
            "Accepted dtypes are subtypes of int32."
        )
    if pivots.ndim < 1:
        raise ValueError(
            "Argument to lu_pivots_to_permutation must have rank >= 1 and dtype int32. "
            f"Got shape={pivots.shape} and dtype={pivots.dtype}"
        )
    if permutation_size < pivots.shape[-1]:
        raise ValueError(
            "Output permutation size {} has to exceed the trailing dimension of "
            "the pivots. Got pivots size {}".format(permutation_size, pivots.shape[-1])
        )
    return ShapedArray((*pivots.shape[:-1], permutation_size), np.dtype(np.int32))


def _p2p_impl(pivots, *, permutation_size):
    pivots = np.asarray(pivots)
    lead = pivots.shape[:-1]
    out = np.empty((*lead, permutation_size), np.int32)
    fo = out.reshape((-1, permutation_size))
    for i, p in enumerate(pivots.reshape((-1, pivots.shape[-1]))):
        fo[i] = _pivots_to_perm(p, permutation_size)
    return out


lu_pivots_to_permutation_p = _define("lu_pivots_to_permutation", _p2p_abstract, _p2p_impl)
J.nondifferentiable.add(lu_pivots_to_permutation_p)


def lu_pivots_to_permutation(pivots, permutation_size: int):
    """The permutation that the row swaps ``pivots`` of an LU decomposition make (JAX's
    ``jax.lax.linalg.lu_pivots_to_permutation``).

    Arguments:
      pivots: int32 row swaps ``[..., k]`` (row ``i`` was swapped with row ``pivots[i]``).
      permutation_size: the number of rows ``m >= k``.
    Returns:
      The int32 permutation ``[..., m]``.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.lax.linalg.lu_pivots_to_permutation(np.array([2, 2], np.int32), 3)
      Array([2, 0, 1], dtype=int32)
    """
    return lu_pivots_to_permutation_p.bind(pivots, permutation_size=int(permutation_size))


def lu_solve(lu, permutation, b, trans=0):
    """Solve ``A x = b`` (``trans`` 0), ``A^T x = b`` (1) or ``A^H x = b`` (2) from ``A``'s
    packed LU factors and permutation; ``b`` is ``[..., m, k]`` with the factors' batch shape."""
    tri = dict(left_side=True, conjugate_a=False)
    if trans == 0:
        x = permute_rows(permutation, b)
        x = triangular_solve(lu, x, lower=True, unit_diagonal=True, **tri)
        return triangular_solve(lu, x, lower=False, **tri)
    if trans not in (1, 2):
        raise ValueError(f"'trans' value must be 0, 1, or 2, got {trans}")
    tri = dict(left_side=True, transpose_a=True, conjugate_a=trans == 2)
    x = triangular_solve(lu, b, lower=False, **tri)
    x = triangular_solve(lu, x, lower=True, unit_diagonal=True, **tri)
    return permute_rows(permutation, x, inverse=True)


def _real_dtype(dt):
    return (
        np.dtype(np.float32 if np.dtype(dt) == np.complex64 else np.float64)
        if _is_complex(dt)
        else np.dtype(dt)
    )


def _diag(x):
    """The diagonal of the last two axes (a product with the identity, then a sum)."""
    a = get_aval(x)
    n = min(a.shape[-2:])
    sq = _slice2(x, 0, n, 0, n)
    return ops.reduce_sum(ops.mul(sq, _eye(n, a.dtype, a.shape[:-2])), (a.ndim - 1,))


def _real(x):
    return ops.real(x) if _is_complex(get_aval(x).dtype) else x


def _as(x, dt):
    return x if get_aval(x).dtype == np.dtype(dt) else ops.convert_element_type(x, dt)


def _col(w):
    """``w[..., None, :]``."""
    a = get_aval(w)
    return ops.broadcast_in_dim(w, (*a.shape[:-1], 1, a.shape[-1]), (*range(a.ndim - 1), a.ndim))


def _bcast2(x, shape):
    """Broadcast ``x`` (last two axes of size 1 or full) to ``shape``."""
    a = get_aval(x)
    if a.shape == tuple(shape):
        return x
    keep = tuple(i for i, (s, t) in enumerate(zip(a.shape, shape)) if s == t)
    sq = ops.reshape(x, tuple(a.shape[i] for i in keep))
    return ops.broadcast_in_dim(sq, tuple(shape), keep)


# --- eigh ----------------------------------------------------------------------------------------
def _eigh_abstract(x, *, lower, sort_eigenvalues, subset_by_index):
    batch = _check_operands("eigh", [x], [2])
    n = x.shape[-1]
    if x.shape[-2] != n:
        raise ValueError(
            "Argument to symmetric eigendecomposition must have shape [..., n, n], "
            f"got shape {x.shape[-2:]}"
        )
    d = n if subset_by_index is None else subset_by_index[1] - subset_by_index[0]
    return [
        ShapedArray((*batch, n, d), x.dtype, _weak(x)),
        ShapedArray((*batch, d), _real_dtype(x.dtype), _weak(x)),
    ]


def _eigh_impl(x, *, lower, sort_eigenvalues, subset_by_index):
    x = np.asarray(x)
    n = x.shape[-1]
    if x.size == 0:
        w, v = np.zeros(x.shape[:-1], _real_dtype(x.dtype)), x.copy()
    else:
        w, v = np.linalg.eigh(x, UPLO="L" if lower else "U")
    if subset_by_index is not None:
        lo, hi = subset_by_index
        w, v = w[..., lo:hi], v[..., lo:hi]
    del n, sort_eigenvalues  # (LAPACK's order: ascending, which sorting keeps)
    return [v.astype(x.dtype, copy=False), w.astype(_real_dtype(x.dtype), copy=False)]


eigh_p = _define("eigh", _eigh_abstract, _eigh_impl, multiple_results=True)


def _eigh_jvp(primals, tangents, *, lower, sort_eigenvalues, subset_by_index):
    (a,), (da,) = primals, tangents
    n = get_aval(a).shape[-1]
    if not (subset_by_index is None or tuple(subset_by_index) == (0, n)):
        raise NotImplementedError("Derivatives not defined for partial eigen decomposition.")
    params = dict(lower=lower, sort_eigenvalues=sort_eigenvalues, subset_by_index=subset_by_index)
    v, w_real = eigh_p.bind(symmetrize(a), **params)
    if isinstance(da, Zero):
        return [v, w_real], [
            Zero(J.tangent_aval(get_aval(v))),
            Zero(J.tangent_aval(get_aval(w_real))),
        ]
    # nondegenerate perturbation theory (Giles 2008), JAX's rule: F_ij = 1 / (w_j - w_i), F_ii = 0
    dt = get_aval(a).dtype
    w = _as(w_real, dt)
    shape = get_aval(a).shape
    eye = _eye(n, dt, shape[:-2])
    wj = _bcast2(_col(w), shape)
    wi = _bcast2(_T(_col(w)), shape)
    F = ops.sub(ops.integer_pow(ops.sub(ops.add(eye, wj), wi), -1), eye)
    vdav = matmul(matmul(_H(v), da), v)
    dv = matmul(v, ops.mul(F, vdav))
    dw = _diag(_real(vdav))
    return [v, w_real], [dv, dw]


J.jvp_rules[eigh_p] = _eigh_jvp


def eigh(
    x,
    *,
    lower: bool = True,
    symmetrize_input: bool = True,
    sort_eigenvalues: bool = True,
    subset_by_index=None,
    implementation=None,
):
    """Eigendecomposition of Hermitian matrices (JAX's ``jax.lax.linalg.eigh``).

    Arguments:
      x: a batch of Hermitian matrices ``[..., n, n]``.
      lower: read the lower (True) or upper triangle (when ``symmetrize_input`` is False).
      symmetrize_input: decompose ``(x + x^H) / 2``.
      sort_eigenvalues: accepted (LAPACK's eigenvalues are ascending).
      subset_by_index: ``(lo, hi)``: only the eigenvalues ``lo..hi-1`` (ascending order).
      implementation: accepted and ignored (LAPACK's ``syevd``/``heevd`` through NumPy).
    Returns:
      ``(v, w)``: the eigenvectors as columns ``[..., n, d]`` and the real eigenvalues
      ``[..., d]``, ascending.

    Differences from JAX: the derivative with ``subset_by_index`` raises NotImplementedError.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> v, w = functx.lax.linalg.eigh(np.array([[2.0, 0.0], [0.0, 1.0]], np.float32))
      >>> w
      Array([1., 2.], dtype=float32)
    """
    del implementation
    if symmetrize_input:
        x = symmetrize(x)
    sub = None if subset_by_index is None else tuple(int(i) for i in subset_by_index)
    v, w = eigh_p.bind(
        x, lower=bool(lower), sort_eigenvalues=bool(sort_eigenvalues), subset_by_index=sub
    )
    return v, w


# --- qr ------------------------------------------------------------------------------------------
def _qr_abstract(x, *, full_matrices):
    batch = _check_operands("qr", [x], [2])
    m, n = x.shape[-2:]
    k = m if full_matrices else min(m, n)
    w = _weak(x)
    return [ShapedArray((*batch, m, k), x.dtype, w), ShapedArray((*batch, k, n), x.dtype, w)]


def _qr_impl(x, *, full_matrices):
    x = np.asarray(x)
    m, n = x.shape[-2:]
    if x.size == 0:
        k = m if full_matrices else min(m, n)
        q = np.zeros((*x.shape[:-2], m, k), x.dtype)
        q[..., range(min(m, k)), range(min(m, k))] = 1
        return [q, np.zeros((*x.shape[:-2], k, n), x.dtype)]
    if x.dtype in (np.float32, np.complex64):
        return _qr_lapack(x, full_matrices)
    q, r = np.linalg.qr(x, mode="complete" if full_matrices else "reduced")
    return [q.astype(x.dtype, copy=False), r.astype(x.dtype, copy=False)]


def _qr_lapack(x, full_matrices):
    """QR by LAPACK's geqrf and orgqr/ungqr in the operand's precision, as JAX's CPU kernels
    (NumPy factors float32 in float64, which rounds differently)."""
    geqrf = _lapack("geqrf", x.dtype)
    orgqr = _lapack("ungqr" if np.iscomplexobj(x) else "orgqr", x.dtype)
    m, n = x.shape[-2:]
    k = min(m, n)
    qcols = m if full_matrices else k
    flat = x.reshape((-1, m, n))
    qs = np.empty((flat.shape[0], m, qcols), x.dtype)
    rs = np.empty((flat.shape[0], qcols, n), x.dtype)
    for i, a in enumerate(flat):
        f, tau, _, _ = geqrf(a)
        rs[i] = np.triu(f[:qcols])
        refl = np.zeros((m, qcols), x.dtype)
        refl[:, :k] = f[:, :k]
        qs[i] = orgqr(refl, tau)[0]
    lead = x.shape[:-2]
    return [qs.reshape((*lead, m, qcols)), rs.reshape((*lead, qcols, n))]


qr_p = _define("qr", _qr_abstract, _qr_impl, multiple_results=True)


def _thin_qr_jvp(q, r, dx):
    """The jvp of ``[..., m, n]`` QR with ``m >= n`` (J. Townsend's derivation, as JAX's)."""
    right = dict(left_side=False, lower=False, transpose_a=False, conjugate_a=False)
    dx_rinv = triangular_solve_p.bind(r, dx, unit_diagonal=False, **right)
    qt = matmul(_H(q), dx_rinv)
    low = tril(qt, -1)
    do = ops.sub(low, _H(low))
    dt = get_aval(qt).dtype
    if _is_complex(dt):
        n = get_aval(qt).shape[-1]
        eye = _eye(n, dt, get_aval(qt).shape[:-2])
        do = ops.add(do, ops.mul(eye, ops.sub(qt, _as(ops.real(qt), dt))))
    dq = ops.add(matmul(q, ops.sub(do, qt)), dx_rinv)
    dr = matmul(ops.sub(qt, do), r)
    return dq, dr


def _qr_jvp(primals, tangents, *, full_matrices):
    (x,), (dx,) = primals, tangents
    q, r = qr_p.bind(x, full_matrices=full_matrices)
    if isinstance(dx, Zero):
        return [q, r], [Zero(J.tangent_aval(get_aval(q))), Zero(J.tangent_aval(get_aval(r)))]
    m, n = get_aval(x).shape[-2:]
    if m < n:  # X = [X1 X2], R = [R1 R2]: the square part, then dR2 = dQ^H X2 + Q^H dX2
        x2 = _slice2(x, 0, m, m, n)
        dx1, dx2 = _slice2(dx, 0, m, 0, m), _slice2(dx, 0, m, m, n)
        dq, dr1 = _thin_qr_jvp(q, _slice2(r, 0, m, 0, m), dx1)
        dr2 = ops.add(matmul(_H(dq), x2), matmul(_H(q), dx2))
        return [q, r], [dq, ops.concatenate([dr1, dr2], get_aval(x).ndim - 1)]
    if full_matrices and m != n:
        raise NotImplementedError(
            "functx: the derivative of a QR decomposition with full_matrices=True of a tall "
            "matrix is not implemented (use full_matrices=False)"
        )
    dq, dr = _thin_qr_jvp(q, r, dx)
    return [q, r], [dq, dr]


J.jvp_rules[qr_p] = _qr_jvp


def qr(x, *, pivoting: bool = False, full_matrices: bool = True, use_magma=None):
    """QR decomposition ``x = q r`` (JAX's ``jax.lax.linalg.qr``; LAPACK's Householder QR).

    Arguments:
      x: a batch of matrices ``[..., m, n]``.
      pivoting: column pivoting (not supported by functx: ``NotImplementedError``).
      full_matrices: ``q`` is ``[..., m, m]`` (True) or ``[..., m, min(m, n)]``.
      use_magma: accepted and ignored.
    Returns:
      ``(q, r)``: ``q`` with orthonormal columns and upper-triangular ``r``.

    Differences from JAX: ``pivoting=True`` and the derivative with ``full_matrices=True`` of a
    non-square matrix raise NotImplementedError.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> q, r = functx.lax.linalg.qr(np.array([[3.0, 1.0], [4.0, 2.0]], np.float32))
      >>> r
      Array([[-5.        , -2.2       ],
             [ 0.        ,  0.39999998]], dtype=float32)
    """
    del use_magma
    if pivoting:
        raise NotImplementedError("functx: qr(pivoting=True) is not implemented")
    q, r = qr_p.bind(x, full_matrices=bool(full_matrices))
    return q, r


# --- svd -----------------------------------------------------------------------------------------
def _svd_abstract(x, *, full_matrices, compute_uv, subset_by_index):
    batch = _check_operands("svd", [x], [2])
    m, n = x.shape[-2:]
    rank = min(m, n)
    if subset_by_index is not None:
        if full_matrices and tuple(subset_by_index) != (0, rank):
            raise ValueError("full_matrices and subset_by_index cannot both be set")
        rank = min(rank, subset_by_index[1] - subset_by_index[0])
    w = _weak(x)
    s = ShapedArray((*batch, rank), _real_dtype(x.dtype), w)
    if not compute_uv:
        return [s]
    return [
        s,
        ShapedArray((*batch, m, m if full_matrices else rank), x.dtype, w),
        ShapedArray((*batch, n if full_matrices else rank, n), x.dtype, w),
    ]


def _svd_impl(x, *, full_matrices, compute_uv, subset_by_index):
    x = np.asarray(x)
    rdt = _real_dtype(x.dtype)
    if x.size == 0:
        outs = _svd_abstract(
            ShapedArray(x.shape, x.dtype),
            full_matrices=full_matrices,
            compute_uv=compute_uv,
            subset_by_index=subset_by_index,
        )
        res = [np.zeros(a.shape, a.dtype) for a in outs]
        for r in res[1:]:
            k = min(r.shape[-2:])
            r[..., range(k), range(k)] = 1
        return res
    if not compute_uv:
        s = np.linalg.svd(x, compute_uv=False)
        if subset_by_index is not None:
            s = s[..., subset_by_index[0] : subset_by_index[1]]
        return [s.astype(rdt, copy=False)]
    u, s, vh = np.linalg.svd(x, full_matrices=full_matrices)
    if subset_by_index is not None and not full_matrices:
        lo, hi = subset_by_index
        u, s, vh = u[..., lo:hi], s[..., lo:hi], vh[..., lo:hi, :]
    return [
        s.astype(rdt, copy=False),
        u.astype(x.dtype, copy=False),
        vh.astype(x.dtype, copy=False),
    ]


svd_p = _define("svd", _svd_abstract, _svd_impl, multiple_results=True)


def _svd_jvp(primals, tangents, *, full_matrices, compute_uv, subset_by_index):
    (A,), (dA,) = primals, tangents
    s, U, Vt = svd_p.bind(A, full_matrices=False, compute_uv=True, subset_by_index=subset_by_index)
    m, n = get_aval(A).shape[-2:]
    if compute_uv and full_matrices and m != n:
        raise NotImplementedError(
            "Singular value decomposition JVP not implemented for full matrices"
        )
    outs = [s, U, Vt] if compute_uv else [s]
    if isinstance(dA, Zero):
        return outs, [Zero(J.tangent_aval(get_aval(o))) for o in outs]
    dt = get_aval(A).dtype
    Ut, V = _H(U), _H(Vt)
    dS = matmul(matmul(Ut, dA), V)
    ds = _diag(_real(dS))
    if not compute_uv:
        return [s], [ds]
    k = get_aval(s).shape[-1]
    sq = (*get_aval(s).shape[:-1], k, k)
    rdt = get_aval(s).dtype
    s_row = _bcast2(_col(s), sq)  # s_j
    s_colm = _T(s_row)  # s_i
    s_diffs = ops.mul(ops.add(s_row, s_colm), ops.sub(s_row, s_colm))
    eye = _eye(k, rdt, sq[:-2])
    F = ops.sub(ops.div(ops.full((), 1, rdt), ops.add(s_diffs, eye)), eye)
    Fc = _as(F, dt)
    dSS = ops.mul(_as(s_row, dt), dS)
    SdS = ops.mul(_as(s_colm, dt), dS)
    zero = ops.convert_element_type(ops.eq(s, ops.full((), 0, rdt)), rdt)
    s_inv = ops.sub(ops.div(ops.full((), 1, rdt), ops.add(s, zero)), zero)
    s_inv_mat = ops.mul(_bcast2(_col(s_inv), sq), eye)
    half = ops.full((), 0.5, dt)
    dUdV_diag = ops.mul(ops.mul(half, ops.sub(dS, _H(dS))), _as(s_inv_mat, dt))
    dU = matmul(U, ops.add(ops.mul(Fc, ops.add(dSS, _H(dSS))), dUdV_diag))
    dV = matmul(V, ops.mul(Fc, ops.add(SdS, _H(SdS))))
    if m > n:
        dAV = matmul(dA, V)
        corr = ops.sub(dAV, matmul(U, matmul(Ut, dAV)))
        dU = ops.add(dU, ops.div(corr, _bcast2(_as(_col(s), dt), get_aval(corr).shape)))
    if n > m:
        dAHU = matmul(_H(dA), U)
        corr = ops.sub(dAHU, matmul(V, matmul(Vt, dAHU)))
        dV = ops.add(dV, ops.div(corr, _bcast2(_as(_col(s), dt), get_aval(corr).shape)))
    return [s, U, Vt], [ds, dU, _H(dV)]


J.jvp_rules[svd_p] = _svd_jvp


def svd(
    x, *, full_matrices: bool = True, compute_uv: bool = True, subset_by_index=None, algorithm=None
):
    """Singular value decomposition ``x = u diag(s) vh`` (JAX's ``jax.lax.linalg.svd``).

    Arguments:
      x: a batch of matrices ``[..., m, n]``.
      full_matrices: ``u`` ``[..., m, m]`` and ``vh`` ``[..., n, n]`` (True) or their first
        ``min(m, n)`` columns/rows.
      compute_uv: return ``(u, s, vh)`` (True) or only ``s``.
      subset_by_index: ``(lo, hi)``: only singular values ``lo..hi-1`` (descending order).
      algorithm: accepted and ignored (LAPACK's ``gesdd`` through NumPy).
    Returns:
      ``(u, s, vh)`` or ``s``; ``s`` is real, descending.

    Differences from JAX: the derivative with ``full_matrices=True`` of a non-square matrix raises
    NotImplementedError.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.lax.linalg.svd(np.array([[3.0, 0.0], [0.0, -4.0]], np.float32), compute_uv=False)
      Array([4., 3.], dtype=float32)
    """
    del algorithm
    sub = None if subset_by_index is None else tuple(int(i) for i in subset_by_index)
    outs = svd_p.bind(
        x, full_matrices=bool(full_matrices), compute_uv=bool(compute_uv), subset_by_index=sub
    )
    if compute_uv:
        s, u, vh = outs
        return u, s, vh
    return outs[0]


# --- eig -----------------------------------------------------------------------------------------
def _eig_abstract(x, *, compute_left_eigenvectors, compute_right_eigenvectors, **_):
    batch = _check_operands("eig", [x], [2])
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"The input to eig must be a square matrix. Got shape {x.shape[-2:]}.")
    n = x.shape[-1]
    cdt = np.dtype(x.dtype) if _is_complex(x.dtype) else dtypes.COMPLEX_OF[np.dtype(x.dtype)]
    count = int(compute_left_eigenvectors) + int(compute_right_eigenvectors)
    return [ShapedArray((*batch, n), cdt)] + [ShapedArray((*batch, n, n), cdt)] * count


def _eig_impl(x, *, compute_left_eigenvectors, compute_right_eigenvectors, **_):
    """LAPACK's geev on each matrix (through ``scipy.linalg.eig``: eigenvalues in LAPACK's order,
    eigenvectors of unit 2-norm with their largest component real); a matrix LAPACK cannot
    decompose gives NaNs, as JAX's CPU lowering does."""
    from scipy import linalg as sla  # (SciPy: the LAPACK JAX calls too)

    x = np.asarray(x)
    n = x.shape[-1]
    cdt = x.dtype if np.iscomplexobj(x) else dtypes.COMPLEX_OF[x.dtype]
    lead = x.shape[:-2]
    left, right = compute_left_eigenvectors, compute_right_eigenvectors
    w = np.empty((*lead, n), cdt)
    vl = np.empty((*lead, n, n), cdt)
    vr = np.empty((*lead, n, n), cdt)
    fx, fw, fl, fr = (a.reshape((-1, *a.shape[len(lead) :])) for a in (x, w, vl, vr))
    work = x.dtype if x.dtype in (np.float32, np.float64, np.complex64, np.complex128) else cdt
    for i in range(fx.shape[0]):
        try:
            res = sla.eig(fx[i].astype(work), left=left, right=right, check_finite=False)
        except (np.linalg.LinAlgError, ValueError):
            fw[i] = fl[i] = fr[i] = np.nan
            continue
        res = res if isinstance(res, tuple) else (res,)
        fw[i] = res[0]
        if left:
            fl[i] = res[1]
        if right:
            fr[i] = res[-1]
    return [w] + ([vl] if left else []) + ([vr] if right else [])


eig_p = _define("eig", _eig_abstract, _eig_impl, multiple_results=True)


def _lu_solve_square(a, b):
    """``a^-1 b`` for square ``a`` (LU with partial pivoting)."""
    lu_, _, perm = lu_p.bind(a)
    return lu_solve(lu_, perm, b)


def _eig_vec_jvp(w, v, da):
    """Nondegenerate perturbation theory (Giles 2008, sec. 3.1) for ``A v_j = w_j v_j``, with the
    scale of each ``v_j`` fixed as LAPACK's geev fixes it (unit 2-norm, largest component real):
    JAX's rule."""
    va = get_aval(v)
    n = va.shape[-1]
    dt = va.dtype
    eye = _eye(n, dt, va.shape[:-2])
    wa = get_aval(w)
    w_row = ops.broadcast_in_dim(w, va.shape, (*range(wa.ndim - 1), wa.ndim))
    w_col = ops.broadcast_in_dim(w, va.shape, tuple(range(wa.ndim)))
    fmat = ops.sub(ops.reciprocal(ops.add(eye, ops.sub(w_row, w_col))), eye)
    pm = matmul(_lu_solve_square(v, da), v)
    dw = _diag(pm)
    u = matmul(v, ops.mul(fmat, pm))
    nd = va.ndim
    k = ops.argmax(ops.abs(v), nd - 2, np.int32)
    rows = ops.broadcasted_iota(np.int32, va.shape, nd - 2)
    kb = ops.broadcast_in_dim(k, va.shape, (*range(nd - 2), nd - 1))
    mask = ops.convert_element_type(ops.eq(rows, kb), dt)
    re = ops.neg(ops.real(ops.reduce_sum(ops.mul(ops.conj(v), u), (nd - 2,))))
    im = ops.div(
        ops.neg(ops.imag(ops.reduce_sum(ops.mul(mask, u), (nd - 2,)))),
        ops.real(ops.reduce_sum(ops.mul(mask, v), (nd - 2,))),
    )
    c = ops.complex(re, im)
    return dw, ops.add(u, ops.mul(v, _col(c)))


def _eig_jvp(
    primals,
    tangents,
    *,
    compute_left_eigenvectors,
    compute_right_eigenvectors,
    enable_eigvec_derivs,
):
    (a,), (da,) = primals, tangents
    left, right = compute_left_eigenvectors, compute_right_eigenvectors
    if (left or right) and not enable_eigvec_derivs:
        raise NotImplementedError(
            "Derivatives of non-symmetric eigenvectors are only valid under assumptions on the "
            "input that JAX cannot check (see the enable_eigvec_derivs argument to "
            "jax.lax.linalg.eig). Pass enable_eigvec_derivs=True to jax.lax.linalg.eig to opt in. "
            "See https://github.com/jax-ml/jax/issues/2748 for discussion."
        )
    outs = eig_p.bind(
        a,
        compute_left_eigenvectors=left,
        compute_right_eigenvectors=True,
        enable_eigvec_derivs=enable_eigvec_derivs,
    )
    w, vr = outs[0], outs[-1]
    cdt = get_aval(vr).dtype
    da = _as(J.instantiate(da, J.tangent_aval(get_aval(a))), cdt)
    if not (left or right):
        dw = ops.reduce_sum(ops.mul(_lu_solve_square(vr, da), _T(vr)), (get_aval(vr).ndim - 1,))
        return [w], [dw]
    dw, dvr = _eig_vec_jvp(w, vr, da)
    prim, tan = [w], [dw]
    if left:
        _, dvl = _eig_vec_jvp(ops.conj(w), outs[1], _H(da))
        prim.append(outs[1])
        tan.append(dvl)
    if right:
        prim.append(vr)
        tan.append(dvr)
    return prim, tan


J.jvp_rules[eig_p] = _eig_jvp


def eig(
    x,
    *,
    compute_left_eigenvectors: bool = True,
    compute_right_eigenvectors: bool = True,
    enable_eigvec_derivs: bool = False,
    implementation=None,
    use_magma=None,
):
    """Eigendecomposition of general square matrices (JAX's ``jax.lax.linalg.eig``), by LAPACK's
    geev on the host (under ``jit`` on the C++ backend too; the Triton backend raises
    ``UnsupportedError``: the results are complex).

    Arguments:
      x: a batch of square matrices ``[..., n, n]``, float or complex.
      compute_left_eigenvectors: whether to return the left eigenvectors (``vl^H x = w vl^H``).
      compute_right_eigenvectors: whether to return the right eigenvectors (``x vr = vr w``).
      enable_eigvec_derivs: allow derivatives of the eigenvectors (valid only for distinct
        eigenvalues, as in JAX); without it differentiating them raises ``NotImplementedError``.
      implementation, use_magma: accepted for JAX's signature (GPU choices); unused.

    Returns:
      A list ``[w]`` followed by ``vl`` and/or ``vr`` as requested: eigenvalues ``[..., n]`` and
      eigenvectors ``[..., n, n]`` (columns, unit 2-norm), of the complex dtype of ``x``'s width.
      A matrix LAPACK cannot decompose gives NaNs.

    Example:
      >>> import functx, numpy as np
      >>> w, vr = functx.lax.linalg.eig(np.array([[2.0, 0.0], [0.0, -1.0]], np.float32),
      ...                               compute_left_eigenvectors=False)
      >>> w
      Array([ 2.+0.j, -1.+0.j], dtype=complex64)
    """
    del implementation, use_magma
    return list(
        eig_p.bind(
            x,
            compute_left_eigenvectors=bool(compute_left_eigenvectors),
            compute_right_eigenvectors=bool(compute_right_eigenvectors),
            enable_eigvec_derivs=bool(enable_eigvec_derivs),
        )
    )


# --- hessenberg, tridiagonal, householder_product, schur: LAPACK reductions (no derivatives, as
# in JAX) ------------------------------------------------------------------------------------------
def _lapack(name, dt):
    from scipy.linalg import lapack  # (SciPy: the LAPACK JAX calls too)

    return lapack.get_lapack_funcs(name, dtype=np.dtype(dt))


def _per_matrix(fn, arrays, outs):
    """Run ``fn(*matrices) -> tuple`` over the flattened batch of ``arrays`` (each with
    ``core`` trailing dims given by its entry ``(array, ndim_core)``), writing ``outs`` (same
    batch)."""
    lead = arrays[0][0].shape[: arrays[0][0].ndim - arrays[0][1]]
    size = int(np.prod(lead, dtype=np.int64))
    flat_in = [a.reshape((size, *a.shape[a.ndim - k :])) for a, k in arrays]
    flat_out = [o.reshape((size, *o.shape[len(lead) :])) for o in outs]
    for i in range(size):
        res = fn(*(a[i] for a in flat_in))
        for o, r in zip(flat_out, res):
            o[i] = r
    return outs


def _hessenberg_abstract(a):
    batch = _check_operands("hessenberg", [a], [2])
    if a.shape[-1] != a.shape[-2]:
        raise ValueError(
            f"Argument to Hessenberg reduction must have shape [..., n, n], got shape "
            f"{a.shape[-2:]}"
        )
    n = a.shape[-1]
    return [ShapedArray(a.shape, a.dtype), ShapedArray((*batch, max(n - 1, 0)), a.dtype)]


def _hessenberg_impl(a):
    a = np.asarray(a)
    n = a.shape[-1]
    h = np.empty(a.shape, a.dtype)
    taus = np.empty((*a.shape[:-2], max(n - 1, 0)), a.dtype)
    if a.size == 0:
        return [h, taus]
    gehrd = _lapack("gehrd", a.dtype)

    def one(m):
        ht, tau, info = gehrd(m, lo=0, hi=n - 1)
        return (ht, tau[: n - 1]) if info == 0 else (np.nan, np.nan)

    return _per_matrix(one, [(a, 2)], [h, taus])


hessenberg_p = _define("hessenberg", _hessenberg_abstract, _hessenberg_impl, multiple_results=True)


def hessenberg(a):
    """Reduction of square matrices to upper Hessenberg form (JAX's
    ``jax.lax.linalg.hessenberg``: LAPACK's gehrd, on the host).

    Arguments:
      a: a batch of square matrices ``[..., n, n]``, float or complex.

    Returns:
      ``(a_out, taus)``: the Hessenberg matrix in the upper triangle and first subdiagonal of
      ``a_out``, the Householder reflectors below it, and their scales ``taus`` ``[..., n - 1]``.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> h, taus = functx.lax.linalg.hessenberg(np.eye(3, dtype=np.float32))
      >>> taus
      Array([0., 0.], dtype=float32)
    """
    return tuple(hessenberg_p.bind(a))


def _tridiagonal_abstract(a, *, lower):
    batch = _check_operands("tridiagonal", [a], [2])
    if a.shape[-1] != a.shape[-2] or a.shape[-1] == 0:
        raise ValueError(
            f"The input to tridiagonal must be a square matrix. Got shape {a.shape[-2:]}."
        )
    n = a.shape[-1]
    rdt = _real_dtype(a.dtype)
    return [
        ShapedArray(a.shape, a.dtype),
        ShapedArray((*batch, n), rdt),
        ShapedArray((*batch, n - 1), rdt),
        ShapedArray((*batch, n - 1), a.dtype),
    ]


def _tridiagonal_impl(a, *, lower):
    a = np.asarray(a)
    n = a.shape[-1]
    rdt = _real_dtype(a.dtype)
    outs = [
        np.empty(a.shape, a.dtype),
        np.empty((*a.shape[:-2], n), rdt),
        np.empty((*a.shape[:-2], n - 1), rdt),
        np.empty((*a.shape[:-2], n - 1), a.dtype),
    ]
    if a.size == 0:
        return outs
    sytrd = _lapack("hetrd" if np.iscomplexobj(a) else "sytrd", a.dtype)

    def one(m):
        c, d, e, tau, info = sytrd(m, lower=int(lower))
        return (c, d, e, tau) if info == 0 else (np.nan,) * 4

    return _per_matrix(one, [(a, 2)], outs)


tridiagonal_p = _define(
    "tridiagonal", _tridiagonal_abstract, _tridiagonal_impl, multiple_results=True
)


def tridiagonal(a, *, lower=True):
    """Reduction of Hermitian matrices to real symmetric tridiagonal form (JAX's
    ``jax.lax.linalg.tridiagonal``: LAPACK's sytrd/hetrd, on the host).

    Arguments:
      a: a batch of square matrices ``[..., n, n]``; only the triangle ``lower`` names is read.
      lower: read the lower (True) or the upper triangle.

    Returns:
      ``(a_out, d, e, taus)``: the packed reflectors, the diagonal ``d`` ``[..., n]`` and
      off-diagonal ``e`` ``[..., n - 1]`` (real), and the reflectors' scales ``[..., n - 1]``.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> _, d, e, _ = functx.lax.linalg.tridiagonal(np.diag(np.float32([1, 2, 3])))
      >>> d
      Array([1., 2., 3.], dtype=float32)
    """
    return tuple(tridiagonal_p.bind(a, lower=bool(lower)))


def _hh_abstract(a, taus):
    batch = _check_operands("householder_product", [a, taus], [2, 1])
    m, n = a.shape[-2:]
    if m < n:
        raise ValueError(
            "The first argument to householder_product must have at least as many rows as "
            f"columns, got shape {a.shape[-2:]}"
        )
    if taus.shape[-1] > min(m, n):
        raise ValueError(
            "The second argument to householder_product must not have more rows than the "
            "minimum of the first argument's rows and columns."
        )
    return ShapedArray((*batch, m, n), a.dtype)


def _hh_impl(a, taus):
    a, taus = np.asarray(a), np.asarray(taus)
    out = np.empty(a.shape, a.dtype)
    if a.size == 0:
        return out
    orgqr = _lapack("ungqr" if np.iscomplexobj(a) else "orgqr", a.dtype)
    n = a.shape[-1]

    def one(m, t):
        if t.shape[0] < n:  # LAPACK wants n scales: the rest are identity reflectors
            t = np.concatenate([t, np.zeros(n - t.shape[0], t.dtype)])
        q, _, info = orgqr(m, t)
        return (q if info == 0 else np.nan,)

    return _per_matrix(one, [(a, 2), (taus, 1)], [out])[0]


householder_product_p = _define("householder_product", _hh_abstract, _hh_impl)


def householder_product(a, taus):
    """The product of elementary Householder reflectors (JAX's
    ``jax.lax.linalg.householder_product``: LAPACK's orgqr/ungqr, on the host).

    Arguments:
      a: ``[..., m, n]`` with ``m >= n``, the reflectors below its diagonal (as ``hessenberg`` and
        LAPACK's geqrf leave them).
      taus: ``[..., k]`` with ``k <= n``, the reflectors' scales.

    Returns:
      The orthogonal (unitary) matrices ``[..., m, n]``.

    Example:
      >>> import functx
      >>> import numpy as np
      >>> q = functx.lax.linalg.householder_product(np.eye(2, dtype=np.float32),
      ...                                           np.zeros(2, np.float32))
      >>> print(np.abs(q))
      [[1. 0.]
       [0. 1.]]
    """
    return householder_product_p.bind(a, taus)


def _schur_abstract(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    _check_operands("schur", [x], [2])
    if x.shape[-1] != x.shape[-2]:
        raise ValueError(f"The input to schur must be a square matrix. Got shape {x.shape[-2:]}.")
    out = ShapedArray(x.shape, x.dtype)
    return [out, out] if compute_schur_vectors else [out]


def _schur_impl(x, *, compute_schur_vectors, sort_eig_vals, select_callable):
    from scipy import linalg as sla  # (SciPy: the LAPACK JAX calls too)

    x = np.asarray(x)
    t, z = np.empty(x.shape, x.dtype), np.empty(x.shape, x.dtype)
    if x.size:
        out = "complex" if np.iscomplexobj(x) else "real"

        def one(m):
            try:
                return sla.schur(m, output=out, check_finite=False)
            except (np.linalg.LinAlgError, ValueError):
                return np.nan, np.nan

        _per_matrix(one, [(x, 2)], [t, z])
    return [t, z] if compute_schur_vectors else [t]


schur_p = _define("schur", _schur_abstract, _schur_impl, multiple_results=True)


def schur(x, *, compute_schur_vectors=True, sort_eig_vals=False, select_callable=None):
    """Schur decomposition ``x = Z T Z^H`` (JAX's ``jax.lax.linalg.schur``: LAPACK's gees, on the
    host; real input gives the real Schur form).

    Arguments:
      x: a batch of square matrices ``[..., n, n]``, float or complex.
      compute_schur_vectors: whether to return ``Z`` too.
      sort_eig_vals, select_callable: LAPACK's eigenvalue ordering, which JAX does not implement
        (``sort_eig_vals=True`` raises ``NotImplementedError``, as in JAX).

    Returns:
      ``(T, Z)``, or ``(T,)`` without Schur vectors: ``T`` quasi-upper-triangular (upper
      triangular for complex input), ``Z`` unitary.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> t, z = functx.lax.linalg.schur(np.array([[1.0, 2.0], [0.0, 3.0]], np.float32))
      >>> t
      Array([[1., 2.],
             [0., 3.]], dtype=float32)
    """
    if sort_eig_vals:
        raise NotImplementedError("The sort feature of LAPACK's gees routine is not implemented.")
    return tuple(
        schur_p.bind(
            x,
            compute_schur_vectors=bool(compute_schur_vectors),
            sort_eig_vals=False,
            select_callable=select_callable,
        )
    )


def _no_jvp(name):
    def rule(primals, tangents, **params):
        # as in JAX, which registers no derivative for these reductions
        raise UnsupportedError(f"Differentiation rule for '{name}' not implemented{where()}")

    return rule


for _p in (hessenberg_p, tridiagonal_p, householder_product_p, schur_p):
    J.jvp_rules[_p] = _no_jvp(_p.name)
del _p


# --- tridiagonal_solve -------------------------------------------------------------------------
def _trid_abstract(dl, d, du, b, *, perturb_singular):
    _check_operands("tridiagonal_solve", [dl, d, du, b], [1, 1, 1, 2])
    if dl.shape != d.shape or dl.shape != du.shape:
        raise TypeError(
            "tridiagonal_solve requires that all diagonal arguments have the same shape."
        )
    if dl.shape != b.shape[:-1]:
        raise TypeError(
            "tridiagonal_solve requires that the leading ndim-1 dimensions of b equal the "
            "dimensions of the diagonal arguments."
        )
    return ShapedArray(b.shape, b.dtype)


def _trid_impl(dl, d, du, b, *, perturb_singular):
    dl, d, du, b = (np.asarray(v) for v in (dl, d, du, b))
    out = np.empty(b.shape, b.dtype)
    if b.size == 0:
        return out
    gtsv = _lapack("gtsv", b.dtype)

    def one(l_, d_, u_, b_):
        if d_.shape[0] == 1:
            return (b_ / d_[0],)
        x, info = gtsv(l_[1:], d_, u_[:-1], b_)[3:]
        return (x if info == 0 else np.nan,)

    return _per_matrix(one, [(dl, 1), (d, 1), (du, 1), (b, 2)], [out])[0]


tridiagonal_solve_p = _define("tridiagonal_solve", _trid_abstract, _trid_impl)


def _shift(x, up):
    """``x[..., 1:]`` padded with a zero at the end (``up``), or ``x[..., :-1]`` with one at the
    front, along the last axis."""
    a = get_aval(x)
    z = ops.full((*a.shape[:-1], 1), 0, a.dtype)
    nd = a.ndim - 1
    if up:
        return ops.concatenate([ops.slice_in_dim(x, 1, a.shape[-1], axis=nd), z], nd)
    return ops.concatenate([z, ops.slice_in_dim(x, 0, a.shape[-1] - 1, axis=nd)], nd)


def _trid_product(dl, d, du, x):
    """``A x`` for the tridiagonal ``A`` (``dl[i] = A[i, i-1]``, ``du[i] = A[i, i+1]``)."""
    xa = get_aval(x)
    nd = xa.ndim
    col = lambda v: ops.broadcast_in_dim(v, xa.shape, tuple(range(nd - 1)))  # noqa: E731
    z = ops.full((*xa.shape[:-2], 1, xa.shape[-1]), 0, xa.dtype)
    m = xa.shape[-2]
    x_dn = ops.concatenate([z, ops.slice_in_dim(x, 0, m - 1, axis=nd - 2)], nd - 2)
    x_up = ops.concatenate([ops.slice_in_dim(x, 1, m, axis=nd - 2), z], nd - 2)
    y = ops.mul(col(d), x)
    y = ops.add(y, ops.mul(col(dl), x_dn))
    return ops.add(y, ops.mul(col(du), x_up))


def _trid_jvp(primals, tangents, *, perturb_singular):
    dl, d, du, b = primals
    *dd, db = tangents
    ans = tridiagonal_solve_p.bind(*primals, perturb_singular=perturb_singular)
    rhs = db
    if not all(isinstance(t, Zero) for t in dd):
        dd = [J.instantiate(t, J.tangent_aval(get_aval(v))) for t, v in zip(dd, (dl, d, du))]
        mv = _trid_product(*dd, ans)
        rhs = ops.neg(mv) if isinstance(db, Zero) else ops.sub(db, mv)
    if isinstance(rhs, Zero):
        return ans, Zero(J.tangent_aval(get_aval(ans)))
    return ans, tridiagonal_solve_p.bind(dl, d, du, rhs, perturb_singular=perturb_singular)


def _trid_transpose(ct, dl, d, du, b, *, perturb_singular):
    if any(T.is_undefined(v) for v in (dl, d, du)):
        raise ValueError("tridiagonal_solve is linear in b only")
    if isinstance(ct, Zero):
        return [None, None, None, Zero(b.aval)]
    ct_b = tridiagonal_solve_p.bind(
        _shift(du, False), d, _shift(dl, True), ct, perturb_singular=perturb_singular
    )
    return [None, None, None, ct_b]


J.jvp_rules[tridiagonal_solve_p] = _trid_jvp
T.transpose_rules[tridiagonal_solve_p] = _trid_transpose


def tridiagonal_solve(dl, d, du, b, *, perturb_singular=False):
    """Solve ``A X = B`` for tridiagonal ``A`` (JAX's ``jax.lax.linalg.tridiagonal_solve``:
    LAPACK's gtsv, on the host), differentiable in all four operands.

    Arguments:
      dl: ``[..., m]``, the lower diagonal: ``dl[i] = A[i, i-1]`` (``dl[0]`` is ignored).
      d: ``[..., m]``, the diagonal.
      du: ``[..., m]``, the upper diagonal: ``du[i] = A[i, i+1]`` (``du[m-1]`` is ignored).
      b: ``[..., m, n]``, the right-hand sides.
      perturb_singular: JAX's perturbation of tiny pivots; not supported (raises
        ``NotImplementedError``).

    Returns:
      ``X``, of ``b``'s shape and dtype; a singular system gives NaNs.

    Differences from JAX: ``perturb_singular=True`` raises NotImplementedError.

    Example:
      >>> import functx
      >>> import numpy as np
      >>> one = np.ones(3, np.float32)
      >>> b = np.ones((3, 1), np.float32)
      >>> functx.lax.linalg.tridiagonal_solve(0 * one, 2 * one, 0 * one, b)
      Array([[0.5],
             [0.5],
             [0.5]], dtype=float32)
    """
    if perturb_singular:
        raise NotImplementedError("tridiagonal_solve: perturb_singular=True is not supported")
    return tridiagonal_solve_p.bind(dl, d, du, b, perturb_singular=False)


# --- composites: symmetric_product, cholesky_update --------------------------------------------
def symmetric_product(a_matrix, c_matrix, *, alpha=1.0, beta=0.0, symmetrize_output=False):
    """``alpha * A A^T + beta * C`` (JAX's ``jax.lax.linalg.symmetric_product``, a BLAS syrk
    there; here a product at full precision).

    Arguments:
      a_matrix: ``[..., n, k]``.
      c_matrix: ``[..., n, n]``, of ``a_matrix``'s dtype.
      alpha, beta: the scales.
      symmetrize_output: copy the lower triangle to the upper one (syrk computes only one).

    Returns:
      ``[..., n, n]``, of the operands' dtype.

    Differences from JAX: computes the whole product (JAX: a BLAS syrk update); equal to rounding.

    Example:
      >>> import functx
      >>> import numpy as np
      >>> a = np.array([[1.0], [2.0]], np.float32)
      >>> functx.lax.linalg.symmetric_product(a, np.eye(2, dtype=np.float32), beta=1.0)
      Array([[2., 2.],
             [2., 5.]], dtype=float32)
    """
    aa, ca = get_aval(a_matrix), get_aval(c_matrix)
    if aa.ndim < 2 or ca.ndim < 2 or ca.shape[-1] != ca.shape[-2] or ca.shape[-1] != aa.shape[-2]:
        raise TypeError(
            "symmetric_product requires a_matrix [..., n, k] and c_matrix [..., n, n], got "
            f"{aa.shape} and {ca.shape}"
        )
    for i, a in enumerate((aa, ca)):
        if a.dtype not in dtypes.FLOATS:
            raise TypeError(
                f"symmetric_product does not accept dtype {_name_dtype(a.dtype)} at position {i}. "
                f"Accepted dtypes at position {i} are subtypes of floating."
            )
    dt = ca.dtype
    out = ops.add(
        ops.mul(ops.full((), alpha, dt), matmul(a_matrix, _T(a_matrix))),
        ops.mul(ops.full((), beta, dt), c_matrix),
    )
    if symmetrize_output:
        out = ops.add(tril(out), _T(tril(out, -1)))
    return out


def cholesky_update(r_matrix, w_vector):
    """The upper Cholesky factor of ``R^H R + w w^H`` from the upper factor ``R`` (JAX's
    ``jax.lax.linalg.cholesky_update``, a rank-one update there; here a refactorization, equal
    to rounding).

    Arguments:
      r_matrix: an upper-triangular ``[n, n]`` with a positive diagonal.
      w_vector: ``[n]``, of ``r_matrix``'s dtype.

    Returns:
      The updated upper-triangular factor ``[n, n]``.

    Differences from JAX: refactorizes ``R^H R + w w^H`` (JAX: rank-one updates); equal to rounding.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.lax.linalg.cholesky_update(np.eye(2, dtype=np.float32),
      ...                                   np.zeros(2, np.float32))
      Array([[1., 0.],
             [0., 1.]], dtype=float32)
    """
    ra, wa = get_aval(r_matrix), get_aval(w_vector)
    if ra.ndim != 2 or wa.ndim != 1 or ra.shape != (wa.shape[0], wa.shape[0]):
        raise ValueError(
            "cholesky_update requires r_matrix [n, n] and w_vector [n], got "
            f"{ra.shape} and {wa.shape}"
        )
    n = wa.shape[0]
    w_col = ops.broadcast_in_dim(w_vector, (n, 1), (0,))
    gram = ops.add(matmul(_H(r_matrix), r_matrix), matmul(w_col, _H(w_col)))
    return _H(tril(cholesky_p.bind(gram)))


def ormqr(a, taus, c, *, left=True, transpose=False):
    """``Q c``, ``Q^H c``, ``c Q`` or ``c Q^H`` for the ``Q`` of Householder reflectors (JAX's
    ``jax.lax.linalg.ormqr``; here the full ``Q`` is formed by ``householder_product`` and
    multiplied, where JAX applies the reflectors one by one: equal to rounding).

    Arguments:
      a: the reflectors ``[..., m, n]`` (below the diagonal, as geqrf leaves them).
      taus: their scales ``[..., k]``, ``k <= min(m, n)``.
      c: ``[..., m, p]`` (``left``) or ``[..., p, m]``, of ``a``'s batch shape.
      left: multiply ``Q`` from the left.
      transpose: use ``Q^T`` (``Q^H`` for complex).

    Returns:
      The product, of ``c``'s shape.

    Differences from JAX: forms ``Q`` (``householder_product``) and multiplies (JAX: LAPACK's
    ormqr); equal to rounding.

    Example:
      >>> import functx
      >>> import numpy as np
      >>> e = np.eye(2, dtype=np.float32)
      >>> print(np.abs(functx.lax.linalg.ormqr(e, np.zeros(2, np.float32), e)))
      [[1. 0.]
       [0. 1.]]
    """
    aa, ta, ca = get_aval(a), get_aval(taus), get_aval(c)
    m = aa.shape[-2]
    if left and ca.shape[-2] != m:
        raise ValueError(
            "ormqr with left=True expects c to have the same number of rows as the Householder "
            f"matrix a. Got a shape {aa.shape[-2:]} and c shape {ca.shape[-2:]}."
        )
    if not left and ca.shape[-1] != m:
        raise ValueError(
            "ormqr with left=False expects c to have the same number of columns as the "
            f"Householder matrix a has rows. Got a shape {aa.shape[-2:]} and c shape "
            f"{ca.shape[-2:]}."
        )
    k = ta.shape[-1]
    nd = aa.ndim
    head = ops.slice_in_dim(a, 0, k, axis=nd - 1)
    pad = [(0, 0, 0)] * (nd - 1) + [(0, m - k, 0)]
    square = ops.pad(head, ops.full((), 0, aa.dtype), pad)
    q = householder_product_p.bind(square, taus)
    q = _H(q) if transpose else q
    return matmul(q, c) if left else matmul(c, q)


# --- the choice enums of JAX's signatures (the host LAPACK path is the only implementation) ----
class EigImplementation(enum.Enum):
    """JAX's choice of ``eig`` implementation (GPU libraries); functx always runs LAPACK.

    Example:
      >>> import functx
      >>> functx.lax.linalg.EigImplementation.LAPACK.value
      'lapack'
    """

    CUSOLVER = "cusolver"
    MAGMA = "magma"
    LAPACK = "lapack"


class EighImplementation(enum.Enum):
    """JAX's choice of ``eigh`` algorithm; functx always runs LAPACK's.

    Example:
      >>> import functx
      >>> functx.lax.linalg.EighImplementation.QR.value
      'qr'
    """

    QR = "qr"
    JACOBI = "jacobi"
    QDWH = "qdwh"


class SvdAlgorithm(enum.Enum):
    """JAX's choice of SVD algorithm (``svd``'s ``algorithm``); functx always runs LAPACK's.

    Example:
      >>> import functx
      >>> functx.lax.linalg.SvdAlgorithm.DEFAULT.value
      'default'
    """

    DEFAULT = "default"
    QR = "QR"
    JACOBI = "Jacobi"
    POLAR = "polar"
    DIVIDE_AND_CONQUER = "divide_and_conquer"


__all__ = [
    "EigImplementation",
    "EighImplementation",
    "SvdAlgorithm",
    "cholesky",
    "cholesky_p",
    "cholesky_update",
    "eig",
    "eig_p",
    "hessenberg",
    "hessenberg_p",
    "householder_product",
    "householder_product_p",
    "schur",
    "schur_p",
    "tridiagonal",
    "tridiagonal_p",
    "tridiagonal_solve",
    "tridiagonal_solve_p",
    "eigh",
    "eigh_p",
    "qr",
    "qr_p",
    "svd",
    "svd_p",
    "lu",
    "lu_p",
    "lu_pivots_to_permutation",
    "lu_pivots_to_permutation_p",
    "ormqr",
    "symmetric_product",
    "symmetrize",
    "triangular_solve",
    "triangular_solve_p",
]
